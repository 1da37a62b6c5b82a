// AvgPool2dBackward numerics: the geometry table against the independent reference in every dtype,
// exactness with integer gradients and power-of-two divisors, rounding of what the cube unit sees
// (FLOAT16 / HF32), non-finite values, divisorOverride ranges, nothing outside the tensors touched
// (each against a guard page).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "avgpool2d_cases.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

// ------------------------------------------------------------------------------------------------
// The geometry table x {FLOAT, FLOAT16, BF16} on atlas-a2 (cubeMathType 0 = KEEP_DTYPE), and
// x {FLOAT (cubeMathType 1: FLOAT16 rounding), FLOAT16} on atlas-training.
// ------------------------------------------------------------------------------------------------
struct ProductDtype {
    std::string product;
    aclDataType dt;
    int8_t cube;
};

void PrintTo(const ProductDtype &p, std::ostream *os) {
    *os << p.product << " " << dtName(p.dt) << " cube " << static_cast<int>(p.cube);
}

class BackwardTable : public ::testing::TestWithParam<std::tuple<Case, ProductDtype>> {};

TEST_P(BackwardTable, MatchesReference) {
    const Case &c = std::get<0>(GetParam());
    const ProductDtype &pd = std::get<1>(GetParam());
    ASSERT_NO_FATAL_FAILURE(Runtime::use(pd.product));
    Attrs a = c.attrs;
    a.cubeMathType = pd.cube;
    const auto goDims = pooledDims(c.self, resolve(a));
    const auto go = randomValues(static_cast<size_t>(numel(goDims)), pd.dt, 1000 + c.self.size());
    const RunResult r = runBackward(pd.dt, c.self, a, go);
    const bool limited = pd.product == "atlas-training" || pd.product == "atlas-inference";
    if (limited && (a.divisorOverride > 255 || a.divisorOverride < -255)) {  // products.md range
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(r.message, {"divisorOverride"}));
        return;
    }
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message << " self " << dimsStr(c.self) << " gradOutput " << dimsStr(goDims);
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    const CubeRound rnd = roundingOf(cubeExpect(pd.product, pd.dt, pd.cube));
    std::vector<double> ref, absSum;
    referenceBackward(c.self, a, go, rnd, ref, &absSum);
    EXPECT_TRUE(closeToReference(pd.dt, r.out, ref, absSum)) << "self " << dimsStr(c.self);
    EXPECT_TRUE(r.outCanaryIntact) << "write outside gradInput: " << r.canaryWhere;
    EXPECT_TRUE(r.inputsUnchanged) << "gradOutput or self storage was modified";
}

std::string tableName(const ::testing::TestParamInfo<std::tuple<Case, ProductDtype>> &info) {
    const ProductDtype &pd = std::get<1>(info.param);
    std::string p = pd.product;
    for (auto &ch : p)
        if (ch == '-') ch = '_';
    return std::get<0>(info.param).name + "_" + p + "_" + dtName(pd.dt) + "_cube" + std::to_string(pd.cube);
}

INSTANTIATE_TEST_SUITE_P(A2, BackwardTable,
                         ::testing::Combine(::testing::ValuesIn(backwardCases()),
                                            ::testing::Values(ProductDtype{"atlas-a2", ACL_FLOAT, 0},
                                                              ProductDtype{"atlas-a2", ACL_FLOAT16, 0},
                                                              ProductDtype{"atlas-a2", ACL_BF16, 0})),
                         tableName);

// Same geometry with the FLOAT16 rounding of the cube unit (training has no FP32 cube path) and
// the HF32 rounding of A2 (cubeMathType 3).
INSTANTIATE_TEST_SUITE_P(Rounded, BackwardTable,
                         ::testing::Combine(::testing::ValuesIn(backwardCases()),
                                            ::testing::Values(ProductDtype{"atlas-training", ACL_FLOAT, 1},
                                                              ProductDtype{"atlas-training", ACL_FLOAT16, 0},
                                                              ProductDtype{"atlas-a2", ACL_FLOAT, 3})),
                         tableName);

// ------------------------------------------------------------------------------------------------
// The reference itself (guards against a reference bug hiding a library bug).
// ------------------------------------------------------------------------------------------------
TEST(AvgPool2dReference, PooledSizesAndDivisorsFromOpsMd) {
    // floor / ceil output sizes, including the ceil rule that drops a window starting past H + pH.
    EXPECT_EQ(avgref::pooledSize(6, 3, 2, 1, false), 3);
    EXPECT_EQ(avgref::pooledSize(6, 3, 2, 1, true), 4);
    EXPECT_EQ(avgref::pooledSize(3, 2, 2, 1, true), 2);  // would be 3 without the rule
    EXPECT_EQ(avgref::pooledSize(5, 3, 3, 1, true), 2);  // would be 3 without the rule
    EXPECT_EQ(avgref::pooledSize(28, 3, 2, 0, false), 13);
    EXPECT_EQ(avgref::pooledSize(28, 3, 2, 0, true), 14);
    EXPECT_EQ(avgref::pooledSize(112, 3, 2, 1, false), 56);
    EXPECT_EQ(avgref::pooledSize(60, 4, 2, 1, false), 30);
    EXPECT_EQ(avgref::pooledSize(42, 3, 3, 0, false), 14);
    // Window (3) of H = 6, k3 s2 p1 ceil: [5, 8) clipped to H + pH = 7, so pool 2 rows; count pad
    // includes the left/right padding row but never the overhang.
    Pool2d p;
    p.kH = p.kW = 3;
    p.sH = p.sW = 2;
    p.pH = p.pW = 1;
    p.ceilMode = true;
    p.countIncludePad = true;
    auto w = avgref::window(p, 6, 6, 3, 0);
    EXPECT_EQ(w.h0, 5);
    EXPECT_EQ(w.h1, 6);
    EXPECT_EQ(w.w0, 0);
    EXPECT_EQ(w.w1, 2);
    EXPECT_EQ(w.divisor, 2 * 3);
    p.countIncludePad = false;
    EXPECT_EQ(avgref::window(p, 6, 6, 3, 0).divisor, 1 * 2);
    p.divisorOverride = -7;
    EXPECT_EQ(avgref::window(p, 6, 6, 3, 0).divisor, -7);
}

TEST(AvgPool2dReference, RoundingHelpers) {
    using avgref::f16Bits;
    EXPECT_EQ(f16Bits(1.0), 0x3c00);
    EXPECT_EQ(f16Bits(65504.0), 0x7bff);
    EXPECT_EQ(f16Bits(65519.99), 0x7bff);
    EXPECT_EQ(f16Bits(65520.0), 0x7c00);  // tie at the top rounds to inf
    EXPECT_EQ(f16Bits(-1e6), 0xfc00);
    EXPECT_EQ(f16Bits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
    EXPECT_EQ(f16Bits(std::ldexp(1.0, -25)), 0x0000);  // tie to even -> 0
    EXPECT_EQ(f16Bits(std::ldexp(3.0, -25)), 0x0002);  // 1.5 quanta -> 2
    EXPECT_EQ(f16Bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);        // tie -> even
    EXPECT_EQ(f16Bits(1.0 + std::ldexp(3.0, -11)), 0x3c02);        // tie -> even (up)
    EXPECT_EQ(f16Bits(std::numeric_limits<double>::quiet_NaN()) & 0x7c00, 0x7c00);
    EXPECT_EQ(avgref::f16Value(0x0001), std::ldexp(1.0, -24));
    EXPECT_EQ(avgref::f16Value(0xc000), -2.0);
    EXPECT_EQ(avgref::bf16Bits(1.0), 0x3f80);
    EXPECT_EQ(avgref::bf16Bits(1.0 + std::ldexp(1.0, -8)), 0x3f80);  // tie -> even
    EXPECT_EQ(avgref::bf16Bits(1.0 + std::ldexp(3.0, -8)), 0x3f82);
    EXPECT_EQ(avgref::bf16Bits(3.4e38), 0x7f80);                      // overflow -> inf
    EXPECT_EQ(avgref::bf16Value(0x4049), 3.140625);
    EXPECT_EQ(avgref::roundToHF32(1.0 + std::ldexp(1.0, -12)), 1.0);
    EXPECT_EQ(avgref::roundToHF32(1.0 + std::ldexp(3.0, -12)), 1.0 + std::ldexp(1.0, -10));
    EXPECT_EQ(avgref::roundToHF32(1.0 + std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -11));  // representable
    EXPECT_EQ(avgref::roundToF32(1.0 + std::ldexp(1.0, -24)), 1.0);
    EXPECT_TRUE(std::isinf(avgref::roundToHF32(3.4028235677973366e38)));  // FLT_MAX rounds up in HF32
}

// ------------------------------------------------------------------------------------------------
// Exact by construction (testing.md oracle 1): integer gradOutput in [-8, 8] (no zero, so no -0)
// with power-of-two divisors gives the reference bit for bit in every dtype and cube mode.
// ------------------------------------------------------------------------------------------------
struct ExactConfig {
    std::string product;
    aclDataType dt;
    int8_t cube;
};
void PrintTo(const ExactConfig &p, std::ostream *os) {
    *os << p.product << " " << dtName(p.dt) << " cube " << static_cast<int>(p.cube);
}

class BackwardExact : public ::testing::TestWithParam<ExactConfig> {};

TEST_P(BackwardExact, IntegerGradientsPowerOfTwoDivisorsBitExact) {
    const ExactConfig &ec = GetParam();
    ASSERT_NO_FATAL_FAILURE(Runtime::use(ec.product));
    const std::vector<Case> cases{
        {"k2s2_div4", {2, 3, 8, 8}, A({2}, S({2}), {0})},
        {"k2s1p1_div4_overlap", {2, 3, 9, 9}, A({2}, S({1}), {1}, false, true)},
        {"k4x2s2x1p2x1_div8", {2, 3, 10, 12}, A({4, 2}, S({2, 1}), {2, 1}, false, true)},
        {"k3s2p1_override8", {2, 3, 7, 7}, A({3}, S({2}), {1}, true, false, 8)},
        {"k3s1p1_override_neg2", {1, 4, 9, 8}, A({3}, S({1}), {1}, false, false, -2)},
        {"k2s1_override1", {1, 4, 9, 8}, A({2}, S({1}), {0}, false, true, 1)},
        {"global_k8_div64", {1, 16, 8, 8}, A({8}, std::nullopt, {0})},
        {"rank3_k2s2", {4, 8, 8}, A({2}, std::nullopt, {0})},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        Attrs a = c.attrs;
        a.cubeMathType = ec.cube;
        const auto goDims = pooledDims(c.self, resolve(a));
        auto go = randomIntegers(static_cast<size_t>(numel(goDims)), 7 + c.self[1], -8, 7);
        for (auto &g : go)
            if (g >= 0) g += 1;  // [-8, -1] u [1, 8]
        const RunResult r = runBackward(ec.dt, c.self, a, go);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> ref;
        referenceBackward(c.self, a, go, roundingOf(cubeExpect(ec.product, ec.dt, ec.cube)), ref);
        EXPECT_TRUE(bitExact(ec.dt, r.outBits, ref));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    }
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, BackwardExact,
    ::testing::Values(ExactConfig{"atlas-a2", ACL_FLOAT, 0}, ExactConfig{"atlas-a2", ACL_FLOAT16, 0},
                      ExactConfig{"atlas-a2", ACL_BF16, 0}, ExactConfig{"atlas-a2", ACL_FLOAT, 1},
                      ExactConfig{"atlas-a2", ACL_FLOAT, 2}, ExactConfig{"atlas-a2", ACL_FLOAT, 3},
                      ExactConfig{"atlas-a2", ACL_FLOAT16, 2}, ExactConfig{"atlas-a2", ACL_BF16, 1},
                      ExactConfig{"atlas-a2", ACL_BF16, 3}, ExactConfig{"atlas-a3", ACL_BF16, 0},
                      ExactConfig{"atlas-training", ACL_FLOAT, 1}, ExactConfig{"atlas-training", ACL_FLOAT, 2},
                      ExactConfig{"atlas-training", ACL_FLOAT16, 0}, ExactConfig{"atlas-inference", ACL_FLOAT16, 1},
                      ExactConfig{"atlas-inference", ACL_FLOAT, 2}),
    [](const ::testing::TestParamInfo<ExactConfig> &info) {
        std::string p = info.param.product;
        for (auto &ch : p)
            if (ch == '-') ch = '_';
        return p + "_" + dtName(info.param.dt) + "_cube" + std::to_string(info.param.cube);
    });

// ------------------------------------------------------------------------------------------------
// What the cube unit sees, element by element: kernel 1 (divisor 1), so gradInput = round(g).
// ------------------------------------------------------------------------------------------------
std::vector<double> f32(std::vector<double> v) {
    for (auto &x : v) x = avgref::roundToF32(x);
    return v;
}

TEST(BackwardCubeRounding, Fp16OnTrainingOverflowsAndKeepsSubnormals) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    const std::vector<double> g = f32({70000.0, -70000.0, 65519.0, 65520.0, 1e-6, -3e-8, 2.9e-8, 1e-9,
                                       1.0 + std::ldexp(1.0, -11), 1.0 + std::ldexp(3.0, -11),
                                       0.1, -0.3333333, 1234.567, 6.1e-5, 5.9e-5, -2.0});
    const std::vector<int64_t> self{1, 1, 4, 4};
    for (int8_t cube : {1, 2}) {
        SCOPED_TRACE(static_cast<int>(cube));
        Attrs a = A({1}, S({1}), {0});
        a.cubeMathType = cube;
        const RunResult r = runBackward(ACL_FLOAT, self, a, g);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> want(g.size());
        for (size_t i = 0; i < g.size(); ++i) want[i] = avgref::roundToF16(g[i]);
        EXPECT_TRUE(bitExact(ACL_FLOAT, r.outBits, want));
        EXPECT_TRUE(std::isinf(r.out[0]) && r.out[0] > 0);
        EXPECT_TRUE(std::isinf(r.out[1]) && r.out[1] < 0);
        EXPECT_EQ(r.out[2], 65504.0);
        EXPECT_TRUE(std::isinf(r.out[3]));
        EXPECT_EQ(r.out[8], 1.0);  // tie to even
    }
}

TEST(BackwardCubeRounding, Hf32OnA2RoundsToElevenBitsNearestEven) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<double> g = f32({1.0 + std::ldexp(1.0, -12), 1.0 + std::ldexp(3.0, -12),
                                       1.0 + std::ldexp(1.0, -11), 1.0 + std::ldexp(5.0, -13),
                                       -(1.0 + std::ldexp(3.0, -12)), 3.14159265, 1e-30, 123456.789, 1e30,
                                       -2.5e-3, 0.1, 0.2, 7.0, -1.0 / 3.0, 100000.0, 1.0 + std::ldexp(1.0, -20)});
    const std::vector<int64_t> self{1, 1, 4, 4};
    for (int8_t cube : {1, 3}) {
        SCOPED_TRACE(static_cast<int>(cube));
        Attrs a = A({1}, S({1}), {0});
        a.cubeMathType = cube;
        const RunResult r = runBackward(ACL_FLOAT, self, a, g);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> want(g.size());
        for (size_t i = 0; i < g.size(); ++i) want[i] = avgref::roundToHF32(g[i]);
        EXPECT_TRUE(bitExact(ACL_FLOAT, r.outBits, want));
        EXPECT_EQ(r.out[0], 1.0);
        EXPECT_EQ(r.out[1], 1.0 + std::ldexp(1.0, -10));
        EXPECT_EQ(r.out[14], 100000.0);  // HF32 keeps FLOAT's exponent range (no FLOAT16 overflow)
    }
    // cubeMathType 2 on A2 is FLOAT16 for FLOAT input.
    Attrs a = A({1}, S({1}), {0});
    a.cubeMathType = 2;
    const RunResult r = runBackward(ACL_FLOAT, self, a, g);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    std::vector<double> want(g.size());
    for (size_t i = 0; i < g.size(); ++i) want[i] = avgref::roundToF16(g[i]);
    EXPECT_TRUE(bitExact(ACL_FLOAT, r.outBits, want));
}

// The scale 1/divisor is rounded as well: divisor 3 gives round(g) * round(1/3), not g / 3.
TEST(BackwardCubeRounding, ScaleIsRoundedToo) {
    struct Mode {
        std::string product;
        int8_t cube;
        CubeRound rnd;
    };
    for (const Mode &m : {Mode{"atlas-training", 1, CubeRound::F16}, Mode{"atlas-a2", 3, CubeRound::HF32},
                          Mode{"atlas-a2", 2, CubeRound::F16}}) {
        SCOPED_TRACE(m.product + " cube " + std::to_string(m.cube));
        ASSERT_NO_FATAL_FAILURE(Runtime::use(m.product));
        const std::vector<int64_t> self{1, 2, 6, 6};
        Attrs a = A({1}, S({1}), {0}, false, true, 3);
        a.cubeMathType = m.cube;
        std::vector<double> g(72, 1.0);  // exact in every format
        const RunResult r = runBackward(ACL_FLOAT, self, a, g);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        const double want = avgref::cubeRound(1.0 / 3.0, m.rnd);
        ASSERT_NE(avgref::roundToF32(want), avgref::roundToF32(1.0 / 3.0));  // the data discriminates
        for (double o : r.out) ASSERT_EQ(o, avgref::roundToF32(want));
    }
}

// ------------------------------------------------------------------------------------------------
// Non-finite values propagate as in IEEE arithmetic; FLOAT16 results overflow to inf.
// ------------------------------------------------------------------------------------------------
TEST(BackwardNonFinite, InfNanPropagate) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        SCOPED_TRACE(dtName(dt));
        const std::vector<int64_t> self{1, 2, 7, 7};
        const Attrs a = A({3}, S({2}), {1}, false, true);
        const auto goDims = pooledDims(self, resolve(a));
        auto go = randomValues(static_cast<size_t>(numel(goDims)), dt, 5);
        go[0] = inf;   // alone at the corner, overlapping with go[1]
        go[5] = -inf;  // overlaps go[6] = +inf: their shared column gets NaN
        go[6] = inf;
        go[20] = nan;
        const RunResult r = runBackward(dt, self, a, go);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> ref, absSum;
        referenceBackward(self, a, go, CubeRound::None, ref, &absSum);
        size_t nNan = 0, nInf = 0;
        for (double v : ref) {
            nNan += std::isnan(v);
            nInf += std::isinf(v);
        }
        ASSERT_GT(nNan, 0u);
        ASSERT_GT(nInf, 0u);
        EXPECT_TRUE(closeToReference(dt, r.out, ref, absSum));
    }
}

TEST(BackwardNonFinite, Float16ResultOverflowsToInf) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<int64_t> self{1, 1, 5, 5};
    const Attrs a = A({2}, S({1}), {0}, false, true, 1);  // each inner input sums 4 gradients
    std::vector<double> go(16, 60000.0);
    go[0] = -60000.0;
    const RunResult r = runBackward(ACL_FLOAT16, self, a, go);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    std::vector<double> ref;
    referenceBackward(self, a, go, CubeRound::None, ref);
    EXPECT_TRUE(bitExact(ACL_FLOAT16, r.outBits, ref));
    EXPECT_TRUE(std::isinf(r.out[12]));  // (2, 2): 4 x 60000
    EXPECT_EQ(r.out[1], 0.0);           // (0, 1): -60000 + 60000
}

// ------------------------------------------------------------------------------------------------
// divisorOverride: unlimited on A2/A3, [-255, 255] on training / inference (boundaries pass).
// ------------------------------------------------------------------------------------------------
TEST(BackwardDivisorOverride, RangeBoundariesAccepted) {
    struct Row {
        std::string product;
        aclDataType dt;
        int64_t div;
    };
    for (const Row &row : {Row{"atlas-training", ACL_FLOAT16, 255}, Row{"atlas-training", ACL_FLOAT16, -255},
                           Row{"atlas-inference", ACL_FLOAT16, 255}, Row{"atlas-inference", ACL_FLOAT, -1},
                           Row{"atlas-a2", ACL_FLOAT, 256}, Row{"atlas-a2", ACL_FLOAT, -1000},
                           Row{"atlas-a3", ACL_BF16, 1 << 20}, Row{"atlas-a2", ACL_FLOAT, int64_t{1} << 40}}) {
        SCOPED_TRACE(row.product + " " + dtName(row.dt) + " div " + std::to_string(row.div));
        ASSERT_NO_FATAL_FAILURE(Runtime::use(row.product));
        const std::vector<int64_t> self{2, 3, 6, 6};
        Attrs a = A({3}, S({2}), {1}, true, false, row.div);
        a.cubeMathType = neutralCube(row.product, row.dt);
        const auto goDims = pooledDims(self, resolve(a));
        const auto go = randomValues(static_cast<size_t>(numel(goDims)), row.dt, 3, -100.0, 100.0);
        const RunResult r = runBackward(row.dt, self, a, go);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> ref, absSum;
        referenceBackward(self, a, go, roundingOf(cubeExpect(row.product, row.dt, a.cubeMathType)), ref, &absSum);
        EXPECT_TRUE(closeToReference(row.dt, r.out, ref, absSum));
    }
}

// C = 65535 is the largest channel count accepted.
TEST(BackwardChannels, C65535Accepted) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const std::vector<int64_t> &self : {std::vector<int64_t>{1, 65535, 2, 2}, std::vector<int64_t>{65535, 2, 2}}) {
        const Attrs a = A({2}, std::nullopt, {0});
        const auto go = randomIntegers(65535, 11, -8, 8);
        const RunResult r = runBackward(ACL_FLOAT, self, a, go);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> ref;
        referenceBackward(self, a, go, CubeRound::None, ref);
        EXPECT_TRUE(bitExact(ACL_FLOAT, r.outBits, ref));
    }
}

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor (a row load past its end, a store's lanes one too many) crashes the test.
// Common pools at every width 1-70 in each dtype, forward and backward: the same bits as with the
// tensors in ordinary buffers (whose results the other tests check against the reference).
TEST(AvgPool2dGuardPages, TouchesNothingOutsideItsTensors) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<Attrs> pools = {A({3}, S({2}), {1}, false, true), A({2}, S({2}), {0}), A({3}, S({1}), {1}, false, false),
                                      A({3}, S({2}), {1}, true, false)};
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
        for (size_t k = 0; k < pools.size(); ++k)
            for (int64_t W = 1; W <= 70; ++W) {
                const Attrs &a = pools[k];
                const std::vector<int64_t> self = {1, 2, 5, W};
                if (W < a.kernel[0] - 2 * a.padding[0]) continue;  // no output column
                const auto goDims = pooledDims(self, resolve(a));
                const auto go = randomValues(static_cast<size_t>(numel(goDims)), dt, 40 + static_cast<uint64_t>(W));
                const auto x = randomValues(static_cast<size_t>(numel(self)), dt, 90 + static_cast<uint64_t>(W));
                const RunResult b0 = runBackward(dt, self, a, go), f0 = runForward(dt, self, a, x);
                ASSERT_EQ(b0.phase2, ACLNN_SUCCESS) << b0.message;
                ASSERT_EQ(f0.phase2, ACLNN_SUCCESS) << f0.message;
                for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                    SCOPED_TRACE(std::string(dtName(dt)) + " pool " + std::to_string(k) + " W " + std::to_string(W) +
                                 placementName(at));
                    const Layout l = placed({}, at);
                    const RunResult b = runBackward(dt, self, a, go, l, l, l), f = runForward(dt, self, a, x, l, l);
                    ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
                    ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
                    EXPECT_EQ(b.outBits, b0.outBits);
                    EXPECT_EQ(f.outBits, f0.outBits);
                    EXPECT_TRUE(b.inputsUnchanged && f.inputsUnchanged);
                }
            }
}

}  // namespace
}  // namespace apt
