// The public API from C and through dlsym: C linkage, unmangled exported symbols (api.md).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
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

// The names of the functions `text` declares with ACL_FUNC_VISIBILITY: the identifier before the
// declaration's first '('. (A scan, not std::regex: GCC 12 warns inside <regex> under the sanitizers.)
std::vector<std::string> declaredFunctions(const std::string &text) {
    std::vector<std::string> names;
    const std::string mark = "ACL_FUNC_VISIBILITY";
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + mark.size())) {
        const size_t newline = text.rfind('\n', at);
        const size_t first = text.find_first_not_of(" \t", newline == std::string::npos ? 0 : newline + 1);
        if (text[first] == '#') continue;  // a preprocessor line: the macro's definition
        const size_t paren = text.find('(', at), stop = text.find_first_of(";{", at);
        if (paren == std::string::npos || paren > stop) continue;
        size_t end = paren;
        while (end > at && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
        size_t begin = end;
        while (begin > at && (std::isalnum(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '_')) --begin;
        if (end > begin) names.push_back(text.substr(begin, end - begin));
    }
    return names;
}

// Every function a public header declares links: a declared call the libraries lack would compile
// in a user's program and fail only when it links. The headers are read, not listed here.
TEST_F(CLinkageTest, EveryDeclaredFunctionIsExported) {
    namespace fs = std::filesystem;
    std::set<std::string> names;
    std::stringstream dirs(ACLNN_CPU_TEST_HEADER_DIRS);
    for (std::string dir; std::getline(dirs, dir, ':');) {
        ASSERT_TRUE(fs::is_directory(dir)) << dir;
        for (const auto &entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() != ".h") continue;
            std::ifstream in(entry.path());
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (const auto &name : declaredFunctions(text)) names.insert(name);
        }
    }
    EXPECT_GT(names.size(), 100u) << "the headers' declarations were not found";
    for (const char *name : {"aclrtEventElapsedTime", "aclnnConvolutionBackward", "aclnnMaxPool2dWithIndicesBackward",
                             "aclFloatToFloat16", "aclrtQueryEvent"})
        EXPECT_TRUE(names.count(name)) << name << " not found in the headers";
    for (const auto &name : names) {
        EXPECT_EQ(name.rfind("acl", 0), 0u) << name << ": not a name the scan should find";
        EXPECT_NE(dlsym(RTLD_DEFAULT, name.c_str()), nullptr) << name << " is declared but not exported";
    }
}

}  // namespace
