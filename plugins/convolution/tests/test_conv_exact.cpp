// Bit-exact conformance (testing.md oracle 1): integer fill keeps every partial sum exact in FLOAT,
// so gradInput, gradWeight and gradBias must equal the double reference rounded to the dtype, for
// every corpus case and dtype; and the forward companion likewise.
#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

struct Exact : ::testing::TestWithParam<std::tuple<size_t, aclDataType>> {};

// FLOAT: data in [-32, 32], gradOutput [-8, 8]; FLOAT16/BF16: [-4, 4] (exact in 8 significant bits).
int64_t dataRange(aclDataType dt) { return dt == ACL_FLOAT ? 32 : 4; }

TEST_P(Exact, BackwardAllGradients) {
    const auto [idx, dt] = GetParam();
    const Named n = corpus()[idx];
    Runtime::use("atlas-a2");
    Call k;
    k.c = n.c;
    k.dt = dt;
    k.padding = n.padding;
    const auto go = ints(cref::Conv::count(n.c.gradOutputDims()), 8, 11 + idx, 20);
    const auto in = ints(cref::Conv::count(n.c.inputDims()), dataRange(dt), 23 + idx, 20);
    const auto w = ints(cref::Conv::count(n.c.weightDims()), dataRange(dt), 37 + idx);
    const Result r = runBackward(k, go, in, w);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    const cref::Grads ref = cref::backward(n.c, go, in, w);
    EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput"));
    EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight"));
    EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias"));
    EXPECT_TRUE(r.canary);
    EXPECT_TRUE(r.inputsUnchanged);
}

TEST_P(Exact, Forward) {
    const auto [idx, dt] = GetParam();
    const Named n = corpus()[idx];
    Runtime::use("atlas-a2");
    const cref::Conv &c = n.c;
    const auto in = ints(cref::Conv::count(c.inputDims()), dataRange(dt), 5 + idx, 20);
    const auto w = ints(cref::Conv::count(c.weightDims()), dataRange(dt), 7 + idx);
    const auto b = ints(c.Cout, 8, 9 + idx);
    Tensor tin(dt, c.inputDims()), tw(dt, c.weightDims()), tb(dt, {c.Cout}, {}, ACL_FORMAT_ND), out(dt, c.gradOutputDims());
    tin.setValues(in);
    tw.setValues(w);
    tb.setValues(b);
    IntArray stride(c.spatial(c.s)), pad(n.padding ? *n.padding : c.spatial(c.pl)), dil(c.spatial(c.d)), op(c.spatial(c.op));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnConvolutionGetWorkspaceSize(tin.get(), tw.get(), tb.get(), stride.a, pad.a, dil.a, c.transposed, op.a, c.G,
                                               out.get(), 0, &ws, &exec),
              ACLNN_SUCCESS)
        << lastError();
    Workspace w2;
    ASSERT_EQ(aclnnConvolution(w2.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    EXPECT_TRUE(sameBits(dt, out.bits(), cref::forward(c, in, w, &b), "output"));
    EXPECT_TRUE(out.canaryIntact());
}

std::string name(const ::testing::TestParamInfo<std::tuple<size_t, aclDataType>> &i) {
    return corpus()[std::get<0>(i.param)].name + "_" + dtName(std::get<1>(i.param));
}

INSTANTIATE_TEST_SUITE_P(Corpus, Exact,
                         ::testing::Combine(::testing::Range<size_t>(0, corpus().size()),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16)),
                         name);

}  // namespace
}  // namespace ct
