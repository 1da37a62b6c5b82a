// ConvolutionBackward and its forward touch nothing outside their tensors: every tensor flush
// against an inaccessible page, before it and then after it, so that a read or write one byte
// outside a tensor (a vector load past a row's end, a store's lanes one too many) crashes the test.
// The corner corpus (oneDNN's paths and our layout stores), the depthwise kernels at every width
// 1-40 at strides 1 and 2, and the small-Cin kernels at every width 1-40, in each dtype: the same
// bits as with the tensors in ordinary buffers (whose results test_conv_exact.cpp and friends check
// against the reference).
#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

void expectSameBitsOnGuardPages(const std::string &name, const Call &base, uint64_t seed) {
    const cref::Conv &c = base.c;
    const auto go = ints(cref::Conv::count(c.gradOutputDims()), 4, seed);
    const auto in = ints(cref::Conv::count(c.inputDims()), 4, seed + 1);
    const auto w = ints(cref::Conv::count(c.weightDims()), 4, seed + 2);
    const Result want = runBackward(base, go, in, w);
    ASSERT_EQ(want.phase2, ACLNN_SUCCESS) << name << ": " << want.message;
    for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
        SCOPED_TRACE(name + " " + dtName(base.dt) + placementName(at));
        Call k = base;
        k.go = k.in = k.w = k.gi = k.gw = k.gb = placed({}, at);
        const Result r = runBackward(k, go, in, w);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.gi, want.gi);
        EXPECT_EQ(r.gw, want.gw);
        EXPECT_EQ(r.gb, want.gb);
        EXPECT_TRUE(r.inputsUnchanged);
    }
}

TEST(ConvolutionGuardPages, ForwardTouchesNothingOutsideItsTensors) {
    Runtime::use("atlas-a2");
    uint64_t seed = 7000;
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
        for (const Named &n : corpus()) {
            seed += 3;
            const cref::Conv &c = n.c;
            const auto in = ints(cref::Conv::count(c.inputDims()), 4, seed), w = ints(cref::Conv::count(c.weightDims()), 4, seed + 1),
                       b = ints(c.Cout, 4, seed + 2);
            const ForwardResult want = runForward(c, n.padding, dt, in, w, b);
            ASSERT_EQ(want.phase2, ACLNN_SUCCESS) << n.name << ": " << want.message;
            for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                SCOPED_TRACE(n.name + " " + dtName(dt) + placementName(at));
                const ForwardResult r = runForward(c, n.padding, dt, in, w, b, placed({}, at));
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_EQ(r.out, want.out);
            }
        }
}

TEST(ConvolutionBackwardGuardPages, TouchesNothingOutsideItsTensors) {
    Runtime::use("atlas-a2");
    uint64_t seed = 4000;
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        Call k;
        k.dt = dt;
        for (const Named &n : corpus()) {
            k.c = n.c;
            k.padding = n.padding;
            ASSERT_NO_FATAL_FAILURE(expectSameBitsOnGuardPages(n.name, k, seed += 3));
        }
        k.padding.reset();
        for (int64_t W = 1; W <= 40; ++W) {
            for (const int64_t s : {1, 2}) {
                k.c = conv2d(2, 3, 3, 4, W, 3, 3, s, s, 1, 1, 3);  // depthwise
                ASSERT_NO_FATAL_FAILURE(expectSameBitsOnGuardPages("depthwise W " + std::to_string(W) + " s" + std::to_string(s), k, seed += 3));
            }
            k.c = conv2d(2, 3, 8, 3, W, 3, 3, 1, 1, 1, 1);  // few input channels
            ASSERT_NO_FATAL_FAILURE(expectSameBitsOnGuardPages("small Cin W " + std::to_string(W), k, seed += 3));
        }
    }
}

}  // namespace
}  // namespace ct
