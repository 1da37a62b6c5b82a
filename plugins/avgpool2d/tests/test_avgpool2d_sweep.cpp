// Seeded random geometries beyond the table: rank 3 and 4, kernels 1-7 (one or two values), strides
// NULL or 1-4 (past the kernel too), padding up to half the kernel, ceil mode, countIncludePad,
// divisorOverride (0, small, past 255, negative), planes 1x1 to 40x100, on every product and dtype
// with cubeMathType 0-3. Every accepted backward call must match the reference of what the cube
// sees (gradOutput rounded to FLOAT16 or HF32 per products.md) within testing.md's tolerance
// (closeToReference), and a refused one (a cube mode the product refuses, a divisor past the old
// products' range) must be 161002 naming that parameter. A failure names its case; the seed makes
// it again.
#include <gtest/gtest.h>

#include <sstream>

#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

constexpr int kChunks = 8, kPerChunk = 60;

struct Drawn {
    std::vector<int64_t> self;
    Attrs a;
    std::string product;
    aclDataType dt;
};

Drawn draw(uint64_t seed) {
    Rng rng(seed);
    const auto pick = [&rng](int64_t lo, int64_t hi) { return rng.integer(lo, hi); };
    static const std::pair<const char *, aclDataType> kMatrix[] = {
        {"atlas-a2", ACL_FLOAT},       {"atlas-a2", ACL_FLOAT16},       {"atlas-a2", ACL_BF16},       {"atlas-a3", ACL_FLOAT},
        {"atlas-training", ACL_FLOAT}, {"atlas-training", ACL_FLOAT16}, {"atlas-inference", ACL_FLOAT16}};
    for (;;) {
        Drawn d;
        const int64_t H = pick(1, 40), W = pick(1, 100), C = pick(1, 24);
        d.self = pick(0, 4) == 0 ? std::vector<int64_t>{C, H, W} : std::vector<int64_t>{pick(1, 2), C, H, W};
        const int64_t kH = pick(1, 7), kW = pick(0, 2) == 0 ? kH : pick(1, 7);
        d.a.kernel = kH == kW && pick(0, 1) ? std::vector<int64_t>{kH} : std::vector<int64_t>{kH, kW};
        const int64_t s = pick(0, 5);
        if (s == 0) d.a.stride = std::nullopt;
        else if (s == 1) d.a.stride = std::vector<int64_t>{pick(1, 4)};
        else d.a.stride = std::vector<int64_t>{pick(1, 4), pick(1, 4)};
        d.a.padding = {pick(0, kH / 2), pick(0, kW / 2)};
        d.a.ceilMode = pick(0, 2) == 0;
        d.a.countIncludePad = pick(0, 1) == 1;
        const int64_t dv = pick(0, 9);
        d.a.divisorOverride = dv < 6 ? 0 : dv == 6 ? pick(1, 9) : dv == 7 ? -pick(1, 9) : pick(256, 400);
        const Pool2d p = resolve(d.a);
        if (H + 2 * p.pH < p.kH || W + 2 * p.pW < p.kW) continue;
        const auto out = pooledDims(d.self, p);
        if (out[out.size() - 1] < 1 || out[out.size() - 2] < 1) continue;
        const auto &m = kMatrix[pick(0, 6)];
        d.product = m.first;
        d.dt = m.second;
        d.a.cubeMathType = static_cast<int8_t>(pick(0, 3));
        return d;
    }
}

std::string describe(const Drawn &d) {
    std::ostringstream o;
    const Pool2d p = resolve(d.a);
    o << d.product << " " << dtName(d.dt) << " cube " << int{d.a.cubeMathType} << " self " << dimsStr(d.self) << " k" << p.kH << "x"
      << p.kW << (d.a.stride ? " s" : " s(NULL)") << p.sH << "x" << p.sW << " p" << p.pH << "x" << p.pW << (p.ceilMode ? " ceil" : "")
      << (p.countIncludePad ? " includePad" : "") << " divisor " << p.divisorOverride;
    return o.str();
}

struct Sweep : ::testing::TestWithParam<int> {};

TEST_P(Sweep, BackwardMatchesReference) {
    int accepted = 0, rejected = 0;
    for (int i = 0; i < kPerChunk; ++i) {
        const uint64_t seed = 0xa7900000u + static_cast<uint64_t>(GetParam() * kPerChunk + i);
        const Drawn d = draw(seed);
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe(d));
        ASSERT_NO_FATAL_FAILURE(Runtime::use(d.product));
        const auto go = randomValues(static_cast<size_t>(numel(pooledDims(d.self, resolve(d.a)))), d.dt, seed + 1);
        const RunResult r = runBackward(d.dt, d.self, d.a, go);
        const bool old = d.product == "atlas-training" || d.product == "atlas-inference";
        const CubeExpect cube = cubeExpect(d.product, d.dt, d.a.cubeMathType);
        const bool badDivisor = old && (d.a.divisorOverride > 255 || d.a.divisorOverride < -255);  // products.md range
        if (cube == CubeExpect::Reject || badDivisor) {
            EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
            std::vector<std::string> why;  // the message names a parameter at fault
            if (cube == CubeExpect::Reject) why.push_back("cubeMathType");
            if (badDivisor) why.push_back("divisorOverride");
            EXPECT_TRUE(messageContains(r.message, why));
            ++rejected;
            continue;
        }
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        ++accepted;
        std::vector<double> ref, absSum;
        referenceBackward(d.self, d.a, go, roundingOf(cube), ref, &absSum);
        EXPECT_TRUE(closeToReference(d.dt, r.out, ref, absSum));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
        EXPECT_TRUE(r.inputsUnchanged);
    }
    EXPECT_GE(accepted, kPerChunk / 2);
    EXPECT_GE(rejected, 3);  // the cube modes a product refuses are drawn too
}

INSTANTIATE_TEST_SUITE_P(Seeded, Sweep, ::testing::Range(0, kChunks));

}  // namespace
}  // namespace apt
