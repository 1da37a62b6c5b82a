// The public API from C and through dlsym: C linkage, unmangled exported symbols (api.md).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "test_util.hpp"

extern "C" int c_client_avgpool2d_backward(float grad_input[16]);

namespace {

class CLinkageTest : public coretest::RuntimeTest {};

TEST_F(CLinkageTest, CClientRunsTheTwoPhases) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    std::vector<float> gi(16, -1.0f);
    const int failed_line = c_client_avgpool2d_backward(gi.data());
    ASSERT_EQ(failed_line, 0) << "c_client.c failed at line " << failed_line << ": " << coretest::takeErr();
    EXPECT_EQ(gi, (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST_F(CLinkageTest, PublicSymbolsAreUnmangled) {
    for (const char *name :
         {"aclInit", "aclFinalize", "aclrtSetDevice", "aclrtCreateStream", "aclrtMalloc", "aclrtMemcpy",
          "aclrtGetSocName", "aclGetRecentErrMsg", "aclCreateTensor", "aclDestroyTensor", "aclGetViewShape",
          "aclCreateIntArray", "aclSetAclOpExecutorRepeatable", "aclDestroyAclOpExecutor", "aclSetInputTensorAddr",
          "aclSetOutputTensorAddr", "aclSetRawTensorAddr", "aclGetRawTensorAddr", "aclnnAvgPool2dBackwardGetWorkspaceSize",
          "aclnnAvgPool2dBackward", "aclnnAvgPool2dGetWorkspaceSize", "aclnnAvgPool2d", "aclnnInit", "aclnnFinalize", "aclrtMallocAlign32", "aclrtGetMemInfo",
          "aclInitTensor", "aclGetScalarListSize", "aclSetTensorAddr", "aclSetDynamicInputTensorAddr",
          "aclSetDynamicOutputTensorAddr", "aclSetDynamicTensorAddr", "aclrtSubscribeReport", "aclrtUnSubscribeReport",
          "aclrtLaunchCallback", "aclrtProcessReport", "aclrtLaunchHostFunc", "aclrtGetVersion", "aclrtSetOpWaitTimeout",
          "aclrtSetOpExecuteTimeOut"})
        EXPECT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name << " is not exported with C linkage";
}

// Every function a public header declares links: a declared call the libraries lack would compile
// in a user's program and fail only when it links. The headers are read, not listed here.
TEST_F(CLinkageTest, EveryDeclaredFunctionIsExported) {
    namespace fs = std::filesystem;
    const std::regex decl(R"(ACL_FUNC_VISIBILITY[^;{]*?\b(acl\w+)\s*\()");
    std::set<std::string> names;
    std::stringstream dirs(ACLNN_CPU_TEST_HEADER_DIRS);
    for (std::string dir; std::getline(dirs, dir, ':');) {
        ASSERT_TRUE(fs::is_directory(dir)) << dir;
        for (const auto &entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() != ".h") continue;
            std::ifstream in(entry.path());
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it) names.insert((*it)[1]);
        }
    }
    EXPECT_GT(names.size(), 100u) << "the headers' declarations were not found";
    EXPECT_TRUE(names.count("aclrtEventElapsedTime") && names.count("aclnnConvolutionBackward"));
    for (const auto &name : names) EXPECT_NE(dlsym(RTLD_DEFAULT, name.c_str()), nullptr) << name << " is declared but not exported";
}

}  // namespace
