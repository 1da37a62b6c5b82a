// The public API from C and through dlsym: C linkage, unmangled exported symbols (api.md).
#include <dlfcn.h>
#include <gtest/gtest.h>

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

}  // namespace
