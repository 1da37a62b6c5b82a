// The core's cube-precision conversion node (FLOAT -> FLOAT rounded to FLOAT16 or HF32, vectorized)
// gives exactly acp::round_to_precision's bits, which core_numeric_test checks independently.
// Seen through the public API: a 1x1 average pool with stride 1 is an identity, so gradInput is
// the rounded gradOutput (scale 1/1 is exact; the sum starts at +0, so -0 comes back as +0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn_cpu/numeric.hpp"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "test_util.hpp"

namespace {

std::vector<float> inputs() {
    std::vector<float> v = {0.1f, 1.0f / 3.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e-6f, 5.9604645e-8f,
                            2.9802322e-8f, 1e-40f, -1e-45f, std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            1.00048828125f /* an HF32 tie */, 1.00146484375f /* another tie */, 3.4e38f};
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> bits;
    while (v.size() < 4099) {  // not a multiple of 16: the scalar tail runs too
        const float f = acp::float_of(bits(rng));
        if (!std::isnan(f)) v.push_back(f);
    }
    return v;
}

void check_product(const char *product, int32_t precision) {
    const std::string cfg = coretest::writeTempFile(std::string("cube_") + product, std::string("product: ") + product + "\n");
    ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << coretest::takeErr();
    std::vector<float> g = inputs(), out(g.size(), -1.0f), self(g.size(), 0.0f);
    const int64_t dims[4] = {1, 1, 1, static_cast<int64_t>(g.size())}, one[2] = {1, 1}, zero[2] = {0, 0};
    aclTensor *tg = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, dims, 4, g.data());
    aclTensor *ts = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, dims, 4, self.data());
    aclTensor *to = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, dims, 4, out.data());
    aclIntArray *k = aclCreateIntArray(one, 2), *p = aclCreateIntArray(zero, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(tg, ts, k, k, p, false, true, 0, 1, to, &ws, &exec), ACLNN_SUCCESS)
        << coretest::takeErr();
    EXPECT_GE(ws, g.size() * sizeof(float)) << "the rounded copy lives in the workspace";
    std::vector<uint8_t> workspace(ws);
    ASSERT_EQ(aclnnAvgPool2dBackward(workspace.data(), ws, exec, nullptr), ACLNN_SUCCESS) << coretest::takeErr();
    int wrong = 0;
    for (size_t i = 0; i < g.size(); ++i) {
        const float expect = acp::round_to_precision(g[i], precision) + 0.0f;
        if (acp::bits_of(out[i]) != acp::bits_of(expect) && wrong++ < 5)
            ADD_FAILURE() << product << ": input " << g[i] << " (0x" << std::hex << acp::bits_of(g[i]) << ") gave 0x"
                          << acp::bits_of(out[i]) << ", expected 0x" << acp::bits_of(expect) << std::dec;
    }
    EXPECT_EQ(wrong, 0);
    aclDestroyTensor(tg);
    aclDestroyTensor(ts);
    aclDestroyTensor(to);
    aclDestroyIntArray(k);
    aclDestroyIntArray(p);
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(CubeRounding, Hf32OnA2MatchesNumericBitForBit) { check_product("atlas-a2", ACP_PREC_HF32); }
TEST(CubeRounding, Fp16OnTrainingMatchesNumericBitForBit) { check_product("atlas-training", ACP_PREC_FP16); }

}  // namespace
