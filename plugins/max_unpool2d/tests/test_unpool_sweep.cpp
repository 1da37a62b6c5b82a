// Seeded random geometries beyond the named shapes: rank 3 and 4, planes 1x1 to 40x200 (tails of
// every width), gradOutput planes smaller and larger than self's, every value dtype with INT32 and
// INT64 indices (duplicates included). Every call must give the reference's bits and touch nothing
// outside gradInput. A failure names its case; the seed makes it again.
#include <gtest/gtest.h>

#include <sstream>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

constexpr int kChunks = 6, kPerChunk = 80;

BackwardCase draw(uint64_t seed) {
    Rng rng(seed);
    const auto pick = [&rng](int64_t lo, int64_t hi) { return rng.integer(lo, hi); };
    BackwardCase c;
    const int64_t H = pick(1, 40), W = pick(0, 3) == 0 ? pick(1, 200) : pick(1, 40), C = pick(1, 20);
    c.selfDims = pick(0, 3) == 0 ? std::vector<int64_t>{C, H, W} : std::vector<int64_t>{pick(1, 3), C, H, W};
    c.oH = pick(1, 2 * H + 2);
    c.oW = pick(1, 2 * W + 2);
    const auto &dts = backwardDtypes();
    c.dt = c.outDt = dts[static_cast<size_t>(pick(0, static_cast<int64_t>(dts.size()) - 1))];
    c.idxDt = pick(0, 1) ? ACL_INT64 : ACL_INT32;
    return c;
}

std::string describe(const BackwardCase &c) {
    std::ostringstream o;
    o << dtName(c.dt) << " indices " << dtName(c.idxDt) << " self " << dimsStr(c.selfDims) << " out " << c.oH << "x" << c.oW;
    return o.str();
}

struct Sweep : ::testing::TestWithParam<int> {};

TEST_P(Sweep, BitExactAgainstReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (int i = 0; i < kPerChunk; ++i) {
        const uint64_t seed = 0x0b1ec700u + static_cast<uint64_t>(GetParam() * kPerChunk + i);
        const BackwardCase c = draw(seed);
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe(c));
        ASSERT_NO_FATAL_FAILURE(expectBackwardExact(c, seed + 1));
    }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Sweep, ::testing::Range(0, kChunks));

}  // namespace
}  // namespace upt
