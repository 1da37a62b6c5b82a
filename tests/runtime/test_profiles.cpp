// Product profiles: the installed ones are complete and consistent; a profile's enabled_ops /
// disabled_ops switch operators off with a 161002 that names the product. This binary reads its
// profiles from tests/fixtures/products (ACLNN_CPU_PRODUCTS_DIR, set before anything loads).
#include <gtest/gtest.h>
#include <unistd.h>
#include <filesystem>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "context.hpp"
#include "profile.hpp"
#include "test_util.hpp"

namespace {

const bool kFixtureProducts = (::setenv("ACLNN_CPU_PRODUCTS_DIR", ACLNN_CPU_TEST_PROFILE_FIXTURES, 1), true);

std::string source_profiles() { return std::string(ACLNN_CPU_TEST_PROFILE_FIXTURES) + "/../../../configs/products"; }

TEST(InstalledProfiles, TheFiveProductsWithTheirSocNames) {
    const auto all = aclcpu::load_profiles(source_profiles());
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"atlas-training", "Ascend910"}, {"atlas-inference", "Ascend310P"}, {"atlas-a2", "Ascend910B"},
        {"atlas-a3", "Ascend910_93"}, {"atlas-200i-500-a2", "Ascend310B"}};
    ASSERT_EQ(all.size(), expected.size());
    for (const auto &[id, soc] : expected) {
        const auto *p = aclcpu::find_profile(all, id);
        ASSERT_NE(p, nullptr) << id;
        EXPECT_EQ(p->soc, soc);
        EXPECT_EQ(aclcpu::find_profile(all, soc), p) << "a SoC name selects its profile";
        for (int mode = 0; mode <= 3; ++mode)
            for (int32_t dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
                EXPECT_TRUE(p->cube_math.count(mode) && p->cube_math.at(mode).count(dt))
                    << id << " has no cubeMathType " << mode << " rule for dtype " << dt;
    }
}

TEST(InstalledProfiles, CubeMathTableOfProductsMd) {
    const auto all = aclcpu::load_profiles(source_profiles());
    using A = aclcpu::CubeAction;
    const auto *training = aclcpu::find_profile(all, "atlas-training");
    const auto *a2 = aclcpu::find_profile(all, "atlas-a2");
    ASSERT_TRUE(training && a2);
    EXPECT_EQ(training->cube_math.at(0).at(ACL_FLOAT), A::Reject);
    EXPECT_EQ(training->cube_math.at(1).at(ACL_FLOAT), A::Fp16);
    EXPECT_EQ(training->cube_math.at(3).at(ACL_FLOAT), A::Reject);
    EXPECT_EQ(a2->cube_math.at(0).at(ACL_FLOAT), A::Keep);
    EXPECT_EQ(a2->cube_math.at(1).at(ACL_FLOAT), A::Hf32);
    EXPECT_EQ(a2->cube_math.at(2).at(ACL_FLOAT), A::Fp16);
    EXPECT_EQ(a2->cube_math.at(2).at(ACL_BF16), A::Reject);
    EXPECT_EQ(a2->cube_math.at(3).at(ACL_BF16), A::Keep);
}

TEST(ProfileFile, ErrorsNameFileAndLine) {
    const std::string path = coretest::writeTempFile("bad_profile.yaml", "id: x\nname: y\nsoc: z\ncolour: blue\n");
    try {
        aclcpu::load_profile(path);
        FAIL() << "unknown key accepted";
    } catch (const std::exception &e) {
        EXPECT_NE(std::string(e.what()).find(path + ":4"), std::string::npos) << e.what();
    }
    const std::string bad_action = coretest::writeTempFile("bad_action.yaml", "id: x\nname: y\nsoc: z\ncube_math:\n  0: {FLOAT: round}\n");
    EXPECT_THROW(aclcpu::load_profile(bad_action), std::runtime_error);
    const std::string no_soc = coretest::writeTempFile("no_soc.yaml", "id: x\nname: y\n");
    EXPECT_THROW(aclcpu::load_profile(no_soc), std::runtime_error);
}

// Every malformed profile names the file, the line and what was expected (no bare "bad conversion").
TEST(ProfileFile, MalformedValuesNameFileLineAndExpectation) {
    struct Bad {
        const char *name, *yaml;
        int line;
        const char *says;
    };
    const Bad rows[] = {
        {"dupkey", "id: x\nname: y\nsoc: z\nsoc: w\n", 4, "'soc' is given twice (first on line 3)"},
        {"dupnested", "id: x\nname: y\nsoc: z\ncube_math:\n  0: {FLOAT: keep, FLOAT: fp16}\n", 5, "'FLOAT' is given twice"},
        {"idlist", "id: [x]\nname: y\nsoc: z\n", 1, "id must be a profile id, got a list or mapping"},
        {"cmkey", "id: x\nname: y\nsoc: z\ncube_math:\n  zero: {FLOAT: keep}\n", 5, "cubeMathType values (integers), got 'zero'"},
        {"cmseq", "id: x\nname: y\nsoc: z\ncube_math:\n  0: [keep]\n", 5, "cube_math 0 must map dtypes to actions"},
        {"implseq", "id: x\nname: y\nsoc: z\nimplementations: [a]\n", 4, "implementations must map operators to plugins"},
        {"opsnested", "id: x\nname: y\nsoc: z\ndisabled_ops: [[a]]\n", 4, "expected an operator name, got a list or mapping"},
    };
    for (const Bad &b : rows) {
        const std::string path = coretest::writeTempFile(b.name, b.yaml);
        try {
            aclcpu::load_profile(path);
            ADD_FAILURE() << b.name << ": accepted";
        } catch (const std::runtime_error &e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(path + ":" + std::to_string(b.line) + ": "), std::string::npos) << b.name << ": " << msg;
            EXPECT_NE(msg.find(b.says), std::string::npos) << b.name << ": " << msg;
        }
    }
}

TEST(ProfileFile, TwoProfilesWithOneIdAreAnError) {
    const auto dir = coretest::scratchDir() / ("dup-profiles-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const char *f : {"a.yaml", "b.yaml"}) std::ofstream(dir / f) << "id: atlas-a2\nname: n\nsoc: s\n";
    try {
        aclcpu::load_profiles(dir.string());
        ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("b.yaml: profile id 'atlas-a2' is already declared by "), std::string::npos) << e.what();
    }
}

TEST(ProfileFile, EnabledAndDisabledOps) {
    aclcpu::Profile p;
    EXPECT_TRUE(p.op_enabled("AvgPool2d"));
    p.disabled_ops = {"AvgPool2d"};
    EXPECT_FALSE(p.op_enabled("AvgPool2d"));
    EXPECT_TRUE(p.op_enabled("AvgPool2dBackward"));
    p.disabled_ops = {"*"};
    EXPECT_FALSE(p.op_enabled("AvgPool2dBackward"));
    p.disabled_ops.clear();
    p.enabled_ops = {"AvgPool2d"};
    EXPECT_TRUE(p.op_enabled("AvgPool2d"));
    EXPECT_FALSE(p.op_enabled("AvgPool2dBackward"));
}

// One small AvgPool2d / AvgPool2dBackward call on FLOAT tensors; returns the phase-1 status.
aclnnStatus plan(bool backward, int8_t cube) {
    static float in[16] = {}, out[4] = {};
    const int64_t di[4] = {1, 1, 4, 4}, dout[4] = {1, 1, 2, 2}, k[2] = {2, 2}, p[2] = {0, 0};
    aclTensor *x = aclCreateTensor(di, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, di, 4, in);
    aclTensor *g = aclCreateTensor(dout, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, dout, 4, out);
    aclTensor *gi = aclCreateTensor(di, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, di, 4, in);
    aclIntArray *kernel = aclCreateIntArray(k, 2), *stride = aclCreateIntArray(k, 2), *pad = aclCreateIntArray(p, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = backward
        ? aclnnAvgPool2dBackwardGetWorkspaceSize(g, x, kernel, nullptr, pad, false, true, 0, cube, gi, &ws, &exec)
        : aclnnAvgPool2dGetWorkspaceSize(x, kernel, stride, pad, false, true, 0, cube, g, &ws, &exec);
    if (st == 0) aclDestroyAclOpExecutor(exec);
    aclDestroyTensor(x);
    aclDestroyTensor(g);
    aclDestroyTensor(gi);
    aclDestroyIntArray(kernel);
    aclDestroyIntArray(stride);
    aclDestroyIntArray(pad);
    return st;
}

std::string recent() {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

TEST(ProfileDisablesOps, DisabledOpsNamesTheProduct) {
    ASSERT_TRUE(kFixtureProducts);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_STREQ(aclrtGetSocName(), "Ascend910B");
    EXPECT_EQ(plan(true, 0), ACLNN_SUCCESS) << recent();
    EXPECT_EQ(plan(false, 0), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = recent();
    EXPECT_NE(msg.find("aclnnAvgPool2d is disabled on Atlas A2 fixture"), std::string::npos) << msg;
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(ProfileDisablesOps, EnabledOpsListsTheOnlyOperators) {
    const std::string cfg = coretest::writeTempFile("training.yaml", "product: atlas-training\n");
    ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << recent();
    EXPECT_STREQ(aclrtGetSocName(), "Ascend910");
    EXPECT_EQ(plan(false, 1), ACLNN_SUCCESS) << recent();
    EXPECT_EQ(plan(true, 1), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(recent().find("is disabled on Atlas training fixture"), std::string::npos);
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

}  // namespace
