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
    const ForwardResult r = runForward(c, n.padding, dt, in, w, b);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_TRUE(sameBits(dt, r.out, cref::forward(c, in, w, &b), "output"));
    EXPECT_TRUE(r.canary);
}

// The forward's non-transposed 1-D padding may be [left, right] (CANN's ConstructPad), exact in
// every dtype.
TEST(ForwardOnly, OneDimPaddingLeftRight) {
    Runtime::use("atlas-a2");
    cref::Conv c;
    c.sd = 1, c.N = 2, c.Cin = 3, c.Cout = 4, c.in = {10, 1, 1}, c.k = {3, 1, 1}, c.pl = {1, 0, 0}, c.pr = {2, 0, 0};
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        const auto in = ints(cref::Conv::count(c.inputDims()), dataRange(dt), 5, 20);
        const auto w = ints(cref::Conv::count(c.weightDims()), dataRange(dt), 7);
        const auto b = ints(c.Cout, 8, 9);
        const ForwardResult r = runForward(c, std::vector<int64_t>{1, 2}, dt, in, w, b);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(dt, r.out, cref::forward(c, in, w, &b), "output")) << dtName(dt);
        EXPECT_EQ(c.gradOutputDims().back(), 11);
    }
}

// A transposed gradOutput up to stride - 1 larger than outputPadding makes it, per spatial dim, is
// CANN's implicit outputPadding (its check takes it, its kernels read every row): the gradients are
// those of the transposed convolution with that larger outputPadding, exactly. Larger still is 161002.
TEST(TransposedSlack, LargerGradOutputIsAnImplicitOutputPadding) {
    Runtime::use("atlas-a2");
    struct Slack {
        const char *name;
        int sd;
        std::array<int64_t, 3> in, k, s, pl, opGiven, opActual;
    };
    const std::vector<Slack> cases{
        {"2d_s2_op0_plus1", 2, {5, 4, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, {0, 0, 0}, {1, 0, 0}},
        {"2d_s2_op1_plus1", 2, {5, 4, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, {1, 0, 0}, {2, 1, 0}},  // op_eff == stride
        {"1d_s3_op0_plus2", 1, {6, 1, 1}, {2, 1, 1}, {3, 1, 1}, {0, 0, 0}, {0, 0, 0}, {2, 0, 0}},
        {"3d_s2_plus1", 3, {3, 3, 2}, {2, 3, 1}, {2, 2, 2}, {0, 1, 0}, {0, 0, 0}, {1, 1, 1}},
    };
    for (const Slack &t : cases) {
        SCOPED_TRACE(t.name);
        cref::Conv c;
        c.sd = t.sd, c.N = 2, c.Cin = 3, c.Cout = 4, c.transposed = true;
        c.in = t.in, c.k = t.k, c.s = t.s, c.pl = c.pr = t.pl, c.op = t.opActual;
        Call k;
        k.c = c;
        k.outputPadding = c.spatial(t.opGiven);
        const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 41, 20);
        const auto in = ints(cref::Conv::count(c.inputDims()), 32, 43, 20);
        const auto w = ints(cref::Conv::count(c.weightDims()), 32, 47);
        const Result r = runBackward(k, go, in, w);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        const cref::Grads ref = cref::backward(c, go, in, w);
        EXPECT_TRUE(sameBits(ACL_FLOAT, r.gi, ref.gradInput, "gradInput"));
        EXPECT_TRUE(sameBits(ACL_FLOAT, r.gw, ref.gradWeight, "gradWeight"));
        EXPECT_TRUE(sameBits(ACL_FLOAT, r.gb, ref.gradBias, "gradBias"));
        // one row more than stride - 1 past what outputPadding makes: refused
        cref::Conv over = c;
        over.op[0] = t.opGiven[0] + t.s[0];
        Call o = k;
        o.c = over;
        const auto go2 = ints(cref::Conv::count(over.gradOutputDims()), 8, 41, 20);
        const Result bad = runBackward(o, go2, in, w);
        EXPECT_EQ(bad.phase1, ACLNN_ERR_PARAM_INVALID);
        EXPECT_NE(bad.message.find("up to stride - 1 larger"), std::string::npos) << bad.message;
    }
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

namespace ct {
namespace {

// Output rows wider than kWideRow (4096) skip oneDNN's brgconv, whose creation time grows with the
// row (0.7 s at wav2vec's first layer): still exact, in every dtype.
TEST(ForwardOnly, WideRowsExactWithoutBrgconv) {
    Runtime::use("atlas-a2");
    cref::Conv c;
    c.sd = 1, c.N = 1, c.Cin = 2, c.Cout = 16, c.in = {20003, 1, 1}, c.k = {10, 1, 1}, c.s = {2, 1, 1};
    ASSERT_GT(c.gradOutputDims().back(), 4096);
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        const auto in = ints(cref::Conv::count(c.inputDims()), dataRange(dt), 51, 20);
        const auto w = ints(cref::Conv::count(c.weightDims()), dataRange(dt), 52);
        const auto b = ints(c.Cout, 8, 53);
        ForwardResult r;
        const std::string log = withDebugLog([&] { r = runForward(c, std::nullopt, dt, in, w, b); });
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(dt, r.out, cref::forward(c, in, w, &b), "output")) << dtName(dt);
        const size_t at = log.find("output: oneDNN ");
        ASSERT_NE(at, std::string::npos) << log;
        EXPECT_NE(log.substr(at + 15, 7), "brgconv") << dtName(dt) << ": " << log.substr(at, 60);
    }
}

}  // namespace
}  // namespace ct

namespace ct {
namespace {

// 3x3 stride-1 rows wider than kAmxWeightsRow (512) skip oneDNN 2.6's AMX BF16 gradWeight, whose
// creation never returns on such rows (Xeons with AMX; 738 columns and up, 16 channels, 4 rows):
// the call completes, exact, and the plan names another implementation. On CPUs without AMX the
// same call runs whatever oneDNN picks there.
TEST(Backward, WideRowsBf16WeightsWithoutAmx) {
    Runtime::use("atlas-a2");
    const cref::Conv c = conv2d(1, 16, 16, 4, 800, 3, 3, 1, 1, 1, 1);
    const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 61, 20);
    const auto in = ints(cref::Conv::count(c.inputDims()), 4, 62, 20);
    const auto w = ints(cref::Conv::count(c.weightDims()), 4, 63);
    Call k;
    k.c = c;
    k.dt = ACL_BF16;
    const PlannedGraph g = planGraph(k, go, in, w);
    ASSERT_EQ(g.impl.count("gradWeight"), 1u);
    EXPECT_EQ(g.impl.at("gradWeight").find("amx"), std::string::npos) << g.impl.at("gradWeight");
    const Result r = runBackward(k, go, in, w);
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    const cref::Grads ref = cref::backward(c, go, in, w);
    EXPECT_TRUE(sameBits(ACL_BF16, r.gi, ref.gradInput, "gradInput"));
    EXPECT_TRUE(sameBits(ACL_BF16, r.gw, ref.gradWeight, "gradWeight"));
    EXPECT_TRUE(sameBits(ACL_BF16, r.gb, ref.gradBias, "gradBias"));
}

}  // namespace
}  // namespace ct
