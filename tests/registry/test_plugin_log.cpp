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

// ASCEND_GLOBAL_LOG_LEVEL, what plan() is told for debug, info, warning, error, and whether its
// debug line reaches stderr.
struct LevelCase {
    const char *level;
    std::vector<float> enabled;
    bool line;
};
void PrintTo(const LevelCase &c, std::ostream *os) { *os << "ASCEND_GLOBAL_LOG_LEVEL=" << c.level; }

class PluginLog : public coretest::FixtureAddOneTest, public ::testing::WithParamInterface<LevelCase> {
protected:
    // What plan() was told, per level; `stderr_text` gets what the call wrote.
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

TEST_P(PluginLog, PlanIsToldWhatTheCoreWrites) {
    const LevelCase &c = GetParam();
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", c.level);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    std::string err;
    EXPECT_EQ(levels(err), c.enabled);
    const bool line = err.find("aclnnFixtureLogLevels: levels planned on [4]") != std::string::npos;
    EXPECT_EQ(line, c.line) << err;
    if (!c.line) {
        EXPECT_EQ(err, "");
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, PluginLog,
                         ::testing::Values(LevelCase{"0", {1, 1, 1, 1}, true},   // debug: every level
                                           LevelCase{"2", {0, 0, 1, 1}, false},  // warning and error only
                                           LevelCase{"4", {0, 0, 0, 0}, false}), // none
                         [](const ::testing::TestParamInfo<LevelCase> &i) { return std::string("Level") + i.param.level; });

}  // namespace
