// Plugin logging (plugin ABI 1.2): acp::log_enabled tells a plugin's plan() whether the core would
// write a log line at a level, so that plan code formats debug lines only when someone reads them.
// Through a fixture operator (FixtureLogLevels) that writes what plan() was told into its output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fixture_log_levels.h"
#include "fixture_add_one_test.hpp"
#include "test_util.hpp"

namespace {

using coretest::EnvGuard;
using coretest::StderrCapture;
using coretest::takeErr;

class PluginLog : public coretest::FixtureAddOneTest {
protected:
    // What plan() was told for debug, info, warning, error; `stderr_text` gets what the call wrote.
    std::vector<float> levels(std::string &stderr_text) {
        std::vector<float> out(4, -1.0f);
        const int64_t dims[1] = {4}, strides[1] = {1};
        aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, out.data());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        StderrCapture cap;
        EXPECT_EQ(aclnnFixtureLogLevelsGetWorkspaceSize(t, &ws, &exec), ACLNN_SUCCESS) << takeErr();
        if (exec) {
            EXPECT_EQ(aclnnFixtureLogLevels(nullptr, ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
        }
        stderr_text = cap.text();
        aclDestroyTensor(t);
        return out;
    }
};

TEST_F(PluginLog, DebugLevelEnablesEveryLevelAndWritesTheLine) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "0");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    std::string err;
    EXPECT_EQ(levels(err), (std::vector<float>{1, 1, 1, 1}));
    EXPECT_NE(err.find("aclnnFixtureLogLevels: levels planned on [4]"), std::string::npos) << err;
}

TEST_F(PluginLog, WarningLevelDisablesDebugAndInfo) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "2");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    std::string err;
    EXPECT_EQ(levels(err), (std::vector<float>{0, 0, 1, 1}));
    EXPECT_EQ(err.find("levels planned"), std::string::npos) << err;
}

TEST_F(PluginLog, LevelNoneDisablesAll) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "4");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    std::string err;
    EXPECT_EQ(levels(err), (std::vector<float>{0, 0, 0, 0}));
    EXPECT_EQ(err, "");
}

}  // namespace
