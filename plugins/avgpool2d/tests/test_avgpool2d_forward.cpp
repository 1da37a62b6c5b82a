// AvgPool2d (the forward companion): a smaller geometry table against the independent reference,
// exactness, views, empty tensors, its argument checks, and the adjoint identity that ties it to
// the backward operator: <avgpool(x), g> == <x, avgpool_backward(g)>.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "avgpool2d_cases.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

std::vector<Case> forwardCases() {
    static const std::set<std::string> names{"k2s2_basic",
                                             "k3s1p1_countpad",
                                             "k3s1p1_nocountpad",
                                             "ceil_start_in_pad_countpad",
                                             "ceil_start_in_pad_nocountpad",
                                             "ceil_rule_R1_ih3k2s2p1",
                                             "divisor_positive",
                                             "divisor_negative",
                                             "ncl_rank3",
                                             "stride_null_is_kernel",
                                             "stride_len0_is_kernel",
                                             "tails_ic17ih60kh4kw3sh2ph1",
                                             "large_stride_ih20iw42kh4kw3sh1sw3",
                                             "global_ic2048ih7kh7",
                                             "H1",
                                             "W1_nocountpad",
                                             "asym_ceil"};
    std::vector<Case> out;
    for (const Case &c : backwardCases())
        if (names.count(c.name)) out.push_back(c);
    return out;
}

struct ProductDtype {
    std::string product;
    aclDataType dt;
    int8_t cube;
};

void PrintTo(const ProductDtype &p, std::ostream *os) {
    *os << p.product << " " << dtName(p.dt) << " cube " << static_cast<int>(p.cube);
}

class ForwardTable : public ::testing::TestWithParam<std::tuple<Case, ProductDtype>> {};

TEST_P(ForwardTable, MatchesReference) {
    const Case &c = std::get<0>(GetParam());
    const ProductDtype &pd = std::get<1>(GetParam());
    ASSERT_NO_FATAL_FAILURE(Runtime::use(pd.product));
    Attrs a = c.attrs;
    a.cubeMathType = pd.cube;
    const auto x = randomValues(static_cast<size_t>(numel(c.self)), pd.dt, 2000 + c.self.size());
    const RunResult r = runForward(pd.dt, c.self, a, x);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    std::vector<double> ref, absSum;
    const CubeExpect e = cubeExpectForward(pd.product, pd.dt, pd.cube, a2VectorRoute(c.self, a));
    referenceForward(c.self, a, x, roundingOf(e), ref, &absSum);
    EXPECT_TRUE(closeToReference(pd.dt, r.out, ref, absSum));
    EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    EXPECT_TRUE(r.inputsUnchanged);
}

INSTANTIATE_TEST_SUITE_P(
    Products, ForwardTable,
    ::testing::Combine(::testing::ValuesIn(forwardCases()),
                       ::testing::Values(ProductDtype{"atlas-a2", ACL_FLOAT, 0}, ProductDtype{"atlas-a2", ACL_FLOAT16, 0},
                                         ProductDtype{"atlas-a2", ACL_BF16, 0}, ProductDtype{"atlas-a2", ACL_FLOAT, 2},
                                         ProductDtype{"atlas-training", ACL_FLOAT, 1},
                                         ProductDtype{"atlas-inference", ACL_FLOAT16, 0})),
    [](const ::testing::TestParamInfo<std::tuple<Case, ProductDtype>> &info) {
        std::string p = std::get<1>(info.param).product;
        for (auto &ch : p)
            if (ch == '-') ch = '_';
        return std::get<0>(info.param).name + "_" + p + "_" + dtName(std::get<1>(info.param).dt) + "_cube" +
               std::to_string(std::get<1>(info.param).cube);
    });

// Integer inputs with power-of-two divisors: bit exact in every dtype.
TEST(ForwardExact, IntegerInputsPowerOfTwoDivisors) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<Case> cases{{"k2s2", {2, 3, 8, 8}, A({2}, S({2}), {0})},
                                  {"k2s1p1", {2, 3, 9, 9}, A({2}, S({1}), {1}, false, true)},
                                  {"k4s2p2_override_m8", {1, 3, 10, 10}, A({4}, S({2}), {2}, true, false, -8)},
                                  {"global_k8", {1, 16, 8, 8}, A({8}, std::nullopt, {0})}};
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        for (const Case &c : cases) {
            SCOPED_TRACE(c.name + " " + dtName(dt));
            const auto x = randomIntegers(static_cast<size_t>(numel(c.self)), 5, -8, 8);
            const RunResult r = runForward(dt, c.self, c.attrs, x);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            std::vector<double> ref;
            referenceForward(c.self, c.attrs, x, CubeRound::None, ref);
            EXPECT_TRUE(bitExact(dt, r.outBits, ref));
        }
    }
}

TEST(ForwardViews, SameBitsAsContiguous) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<int64_t> self{2, 5, 9, 11};
    const Attrs a = A({3}, S({2}), {1}, true, false);
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        SCOPED_TRACE(dtName(dt));
        const auto x = randomValues(static_cast<size_t>(numel(self)), dt, 8);
        const RunResult c = runForward(dt, self, a, x);
        ASSERT_EQ(c.phase2, ACLNN_SUCCESS) << c.message;
        const RunResult v = runForward(dt, self, a, x, Layout{{0, 2, 3, 1}, {}, 3, {}}, Layout{{}, {0, 1, 0, 2}, 9, {}});
        ASSERT_EQ(v.phase1, ACLNN_SUCCESS) << v.message;
        ASSERT_EQ(v.phase2, ACLNN_SUCCESS) << v.message;
        EXPECT_EQ(v.outBits, c.outBits);
        EXPECT_TRUE(v.outCanaryIntact) << v.canaryWhere;
        EXPECT_TRUE(v.inputsUnchanged);
    }
}

// CANN's forward: only the batch may be empty (an empty C, H or W is 161002, unlike the backward).
TEST(ForwardEmpty, OnlyTheBatch) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const std::vector<int64_t> &self : {std::vector<int64_t>{0, 3, 6, 6}, std::vector<int64_t>{2, 0, 6, 6},
                                             std::vector<int64_t>{2, 3, 0, 6}, std::vector<int64_t>{0, 6, 6}}) {
        SCOPED_TRACE(dimsStr(self));
        const RunResult r = runForward(ACL_FLOAT, self, A({3}, S({2}), {1}), {});
        if (self.size() == 4 && self[0] == 0) {
            EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            EXPECT_EQ(r.workspace, 0u);
            EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(r.outCanaryIntact);
        } else {
            EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
            EXPECT_NE(r.message.find("self may be empty only in N"), std::string::npos) << r.message;
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Forward argument checks (a few rows; the backward suite has the full table).
// ------------------------------------------------------------------------------------------------
struct FwdProblem {
    std::string product = "atlas-a2";
    aclDataType dt = ACL_FLOAT;
    aclDataType outDt = ACL_FLOAT;
    std::vector<int64_t> selfDims{2, 3, 6, 6}, outDims{2, 3, 3, 3};
    std::optional<std::vector<int64_t>> kernel = std::vector<int64_t>{3};
    std::optional<std::vector<int64_t>> stride = std::vector<int64_t>{2};
    std::optional<std::vector<int64_t>> padding = std::vector<int64_t>{1};
    int64_t divisorOverride = 0;
    int8_t cube = 0;
    bool nullSelf = false, nullOut = false;
};

TEST(ForwardChecks, OneRowPerRule) {
    struct Row {
        std::string name;
        std::function<void(FwdProblem &)> mutate;
        aclnnStatus status;
        std::vector<std::string> anyOf;
    };
    const std::vector<Row> rows{
        {"valid", [](FwdProblem &) {}, ACLNN_SUCCESS, {}},
        {"valid_strides_empty", [](FwdProblem &p) { p.stride = std::vector<int64_t>{}; p.outDims = {2, 3, 2, 2}; }, ACLNN_SUCCESS, {}},
        {"null_strides", [](FwdProblem &p) { p.stride.reset(); }, ACLNN_ERR_PARAM_NULLPTR, {"strides"}},
        {"valid_channels_65536", [](FwdProblem &p) { p.selfDims = {1, 65536, 2, 2}; p.outDims = {1, 65536, 1, 1}; }, ACLNN_SUCCESS, {}},
        {"null_self", [](FwdProblem &p) { p.nullSelf = true; }, ACLNN_ERR_PARAM_NULLPTR, {"self"}},
        {"null_kernelSize", [](FwdProblem &p) { p.kernel.reset(); }, ACLNN_ERR_PARAM_NULLPTR, {"kernelSize"}},
        {"null_paddings", [](FwdProblem &p) { p.padding.reset(); }, ACLNN_ERR_PARAM_NULLPTR, {"padding"}},
        {"null_out", [](FwdProblem &p) { p.nullOut = true; }, ACLNN_ERR_PARAM_NULLPTR, {"out"}},
        {"op_unsupported_200i", [](FwdProblem &p) { p.product = "atlas-200i-500-a2"; }, ACLNN_ERR_PARAM_INVALID,
         {"Atlas 200I/500 A2"}},
        {"bf16_training",
         [](FwdProblem &p) {
             p.product = "atlas-training";
             p.dt = p.outDt = ACL_BF16;
         },
         ACLNN_ERR_PARAM_INVALID, {"Atlas training series"}},
        {"dtype_int32", [](FwdProblem &p) { p.dt = p.outDt = ACL_INT32; }, ACLNN_ERR_PARAM_INVALID, {"self"}},
        {"dtype_mismatch", [](FwdProblem &p) { p.outDt = ACL_FLOAT16; }, ACLNN_ERR_PARAM_INVALID, {"out", "self"}},
        {"kernel_zero", [](FwdProblem &p) { p.kernel = std::vector<int64_t>{0}; }, ACLNN_ERR_PARAM_INVALID,
         {"kernel"}},
        {"padding_gt_half", [](FwdProblem &p) { p.padding = std::vector<int64_t>{2}; }, ACLNN_ERR_PARAM_INVALID,
         {"padding"}},
        {"out_shape", [](FwdProblem &p) { p.outDims[3] += 1; }, ACLNN_ERR_PARAM_INVALID, {"out"}},
        {"cube_4", [](FwdProblem &p) { p.cube = 4; }, ACLNN_ERR_PARAM_INVALID, {"cubeMathType"}},
        {"cube_0_float_training",
         [](FwdProblem &p) {
             p.product = "atlas-training";
             p.cube = 0;
         },
         ACLNN_ERR_PARAM_INVALID, {"cubeMathType"}},
        // CANN's A2/A3 forward, on its cube kernel: 1 and 3 refuse FLOAT (the backward takes both).
        {"cube_1_float_a2", [](FwdProblem &p) { p.cube = 1; }, ACLNN_ERR_PARAM_INVALID, {"cubeMathType 1"}},
        {"valid_cube_3_float16_a3",
         [](FwdProblem &p) {
             p.product = "atlas-a3";
             p.dt = p.outDt = ACL_FLOAT16;
             p.cube = 3;
         },
         ACLNN_SUCCESS, {}},
        {"valid_cube_1_float16_a2", [](FwdProblem &p) { p.dt = p.outDt = ACL_FLOAT16; p.cube = 1; }, ACLNN_SUCCESS, {}},
        // No divisorOverride range in CANN's forward on the training / inference series (the
        // backward's [-255, 255] is its own).
        {"valid_divisor_256_inference",
         [](FwdProblem &p) {
             p.product = "atlas-inference";
             p.dt = p.outDt = ACL_FLOAT16;
             p.divisorOverride = 256;
         },
         ACLNN_SUCCESS, {}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        FwdProblem p;
        row.mutate(p);
        ASSERT_NO_FATAL_FAILURE(Runtime::use(p.product));
        Tensor self(p.dt, p.selfDims, ACL_FORMAT_NCHW), out(p.outDt, p.outDims, ACL_FORMAT_NCHW);
        ASSERT_TRUE(self.get() && out.get());
        IntArray k(p.kernel), s(p.stride), pd(p.padding);
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        recentErr();
        const aclnnStatus st = aclnnAvgPool2dGetWorkspaceSize(p.nullSelf ? nullptr : self.get(), k.a, s.a, pd.a, false,
                                                              true, p.divisorOverride, p.cube,
                                                              p.nullOut ? nullptr : out.get(), &ws, &exec);
        const std::string msg = recentErr();
        EXPECT_EQ(st, row.status) << msg;
        if (st == ACLNN_SUCCESS) {
            Workspace w;
            EXPECT_EQ(aclnnAvgPool2d(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS);
            aclrtSynchronizeStream(Runtime::stream());
            continue;
        }
        EXPECT_TRUE(msg.rfind("aclnnAvgPool2d", 0) == 0 && msg.rfind("aclnnAvgPool2dBackward", 0) != 0)
            << "message should name aclnnAvgPool2d: \"" << msg << "\"";
        EXPECT_TRUE(messageContains(msg, row.anyOf));
    }
}

// ------------------------------------------------------------------------------------------------
// cubeMathType x product x dtype of the forward: CANN's aclnnAvgPool2d rules (cubeExpectForward),
// which on A2/A3 refuse on the cube kernel what the backward takes (FLOAT with 1 and 3). The shape
// here takes the cube kernel there (a square-ish plane, k3, no ceil mode).
// ------------------------------------------------------------------------------------------------
class ForwardCubeMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType, int>> {};

TEST_P(ForwardCubeMatrix, AcceptedMatchRoundedReferenceRejectedAre161002) {
    const auto &[product, dt, cube] = GetParam();
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    const std::vector<int64_t> self{2, 3, 7, 9};
    Attrs a = A({3}, S({2}), {1}, false, false);  // divisors 4, 6, 9: 1/6 and 1/9 are not representable
    a.cubeMathType = static_cast<int8_t>(cube);
    const auto x = randomValues(static_cast<size_t>(numel(self)), dt, 29);
    const RunResult r = runForward(dt, self, a, x);
    const bool dtOk = dt != ACL_BF16 || (product != "atlas-training" && product != "atlas-inference");
    const CubeExpect e = cubeExpectForward(product, dt, cube);
    if (!dtOk || e == CubeExpect::Reject) {
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(r.message, {dtOk ? "cubeMathType" : productNameSubstr(product)})) << r.message;
        return;
    }
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    std::vector<double> ref, absSum;
    referenceForward(self, a, x, roundingOf(e), ref, &absSum);
    EXPECT_TRUE(closeToReference(dt, r.out, ref, absSum));
}

INSTANTIATE_TEST_SUITE_P(Products, ForwardCubeMatrix,
                         ::testing::Combine(::testing::Values("atlas-training", "atlas-a2", "atlas-a3"),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16),
                                            ::testing::Values(-1, 0, 1, 2, 3, 4)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, aclDataType, int>> &info) {
                             const int c = std::get<2>(info.param);
                             return acltest::ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param)) +
                                    "_cube" + (c < 0 ? "m" + std::to_string(-c) : std::to_string(c));
                         });

// On A2/A3 the kernel CANN runs, chosen by shape and attributes, decides what cubeMathType does to a
// FLOAT input: the vector kernel (a plane twice as wide as high, ceil mode, a kernel over 20 with
// more than 255 taps) computes in FLOAT under every mode; the cube kernel refuses 1 and 3 - after
// the empty return, so an empty batch is still a success.
TEST(ForwardCubeRoute, A2VectorKernelKeepsFloatCubeKernelRefuses1And3) {
    struct Shape {
        const char *name;
        std::vector<int64_t> self;
        Attrs a;
        bool vector;
    };
    const std::vector<Shape> shapes{
        {"square_k3", {1, 2, 7, 9}, A({3}, S({2}), {1}, false, false), false},
        {"global", {1, 2, 5, 6}, A({5, 6}, S({1}), {0}, false, true), false},
        {"long_strip", {1, 2, 4, 9}, A({3}, S({2}), {1}, false, false), true},
        {"ceil_mode", {1, 2, 7, 9}, A({3}, S({2}), {1}, true, false), true},
        {"big_kernel", {1, 1, 24, 24}, A({21, 13}, S({1}), {0}, false, true), true},
    };
    for (const std::string product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        for (const Shape &sh : shapes)
            for (int cube = 0; cube <= 3; ++cube) {
                SCOPED_TRACE(product + " " + sh.name + " cube " + std::to_string(cube));
                Attrs a = sh.a;
                a.cubeMathType = static_cast<int8_t>(cube);
                const auto x = randomValues(static_cast<size_t>(numel(sh.self)), ACL_FLOAT, 31);
                const RunResult r = runForward(ACL_FLOAT, sh.self, a, x);
                const CubeExpect e = cubeExpectForward(product, ACL_FLOAT, cube, sh.vector);
                if (e == CubeExpect::Reject) {
                    EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
                    EXPECT_TRUE(messageContains(r.message, {"cubeMathType " + std::to_string(cube), "FLOAT", "supported: 0, 2"}))
                        << r.message;
                    std::vector<int64_t> empty = sh.self;
                    empty[0] = 0;
                    EXPECT_EQ(runForward(ACL_FLOAT, empty, a, {}).phase1, ACLNN_SUCCESS) << "the empty return comes first";
                    continue;
                }
                ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                std::vector<double> ref, absSum;
                referenceForward(sh.self, a, x, roundingOf(e), ref, &absSum);
                EXPECT_TRUE(closeToReference(ACL_FLOAT, r.out, ref, absSum));
                if (sh.vector) {
                    EXPECT_EQ(e, CubeExpect::Keep);
                }
            }
    }
}

// ------------------------------------------------------------------------------------------------
// The adjoint identity <avgpool(x), g> == <x, avgpool_backward(g)>, computed in double from the
// library's FLOAT results on tiny shapes (avg pooling is linear, so this is the exact
// finite-difference check: the gradient of <avgpool(x), g> with respect to x).
// ------------------------------------------------------------------------------------------------
TEST(AdjointIdentity, ForwardAndBackwardAreTransposes) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<Case> cases{
        {"k3s2p1_ceil_nocount", {1, 2, 5, 6}, A({3}, S({2}), {1}, true, false)},
        {"k3s2p1_ceil_count", {1, 2, 6, 5}, A({3}, S({2}), {1}, true, true)},
        {"k2s1_override_m3", {2, 1, 4, 4}, A({2}, S({1}), {0}, false, true, -3)},
        {"k4x3s1x3", {1, 1, 7, 9}, A({4, 3}, S({1, 3}), {0})},
        {"rank3_k2s3p1", {2, 5, 7}, A({2}, S({3}), {1}, true, false)},
        {"R1_ih3k2s2p1_ceil", {1, 1, 3, 3}, A({2}, S({2}), {1}, true, true)},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const auto goDims = pooledDims(c.self, resolve(c.attrs));
        const auto x = randomValues(static_cast<size_t>(numel(c.self)), ACL_FLOAT, 61);
        const auto g = randomValues(static_cast<size_t>(numel(goDims)), ACL_FLOAT, 62);
        const RunResult fwd = runForward(ACL_FLOAT, c.self, c.attrs, x);
        const RunResult bwd = runBackward(ACL_FLOAT, c.self, c.attrs, g);
        ASSERT_EQ(fwd.phase2, ACLNN_SUCCESS) << fwd.message;
        ASSERT_EQ(bwd.phase2, ACLNN_SUCCESS) << bwd.message;
        double lhs = 0.0, rhs = 0.0, scale = 0.0;
        for (size_t i = 0; i < g.size(); ++i) {
            lhs += fwd.out[i] * g[i];
            scale += std::fabs(fwd.out[i] * g[i]);
        }
        for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * bwd.out[i];
        EXPECT_NEAR(lhs, rhs, 1e-5 + 1e-5 * scale) << "<avgpool(x), g> = " << lhs << ", <x, bwd(g)> = " << rhs;
        // The same identity holds for the reference to rounding error (checks the reference).
        std::vector<double> rf, rb;
        referenceForward(c.self, c.attrs, x, CubeRound::None, rf);
        referenceBackward(c.self, c.attrs, g, CubeRound::None, rb);
        double l2 = 0.0, r2 = 0.0;
        for (size_t i = 0; i < g.size(); ++i) l2 += rf[i] * g[i];
        for (size_t i = 0; i < x.size(); ++i) r2 += x[i] * rb[i];
        EXPECT_NEAR(l2, r2, 1e-12 * (1.0 + scale));
        EXPECT_NEAR(lhs, l2, 1e-5 + 1e-5 * scale);
    }
}

}  // namespace
}  // namespace apt
