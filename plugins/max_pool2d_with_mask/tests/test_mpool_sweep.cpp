// Seeded random geometries beyond the named shapes: kernels 1-7, strides 1-4 (past the kernel
// too), padding up to half the kernel, ceil mode, rank 3, planes 1x1 to 40x100, on every product and
// dtype of the matrix. Every accepted call must give the reference's bits: the forward's out and
// mask bytes (tricky values: ties, NaN, infinities, signed zeros), the backward's gradInput from a
// random valid mask. A failure names its case; the seed makes it again.

#include "mpool_test_util.hpp"

namespace mpt {
namespace {

constexpr int kChunks = 8, kPerChunk = 60;

struct Drawn {
    Problem pr;
    std::string product;
    aclDataType dt;
};

Drawn draw(uint64_t seed) {
    Rng rng(seed);
    const auto pick = [&rng](int64_t lo, int64_t hi) { return rng.integer(lo, hi); };
    static const std::pair<const char *, aclDataType> kMatrix[] = {
        {"atlas-a2", ACL_FLOAT}, {"atlas-a2", ACL_FLOAT16}, {"atlas-a2", ACL_BF16}, {"atlas-a3", ACL_BF16},
        {"atlas-training", ACL_FLOAT}, {"atlas-training", ACL_FLOAT16}};
    for (;;) {
        mref::Pool p{pick(1, 2), pick(1, 24), pick(1, 40), pick(1, 100), pick(1, 7), pick(1, 7), pick(1, 4), pick(1, 4), 0, 0,
                     pick(0, 2) == 0};
        p.pH = pick(0, p.kH / 2);
        p.pW = pick(0, p.kW / 2);
        if (p.H + 2 * p.pH < p.kH || p.W + 2 * p.pW < p.kW || p.Ho() < 1 || p.Wo() < 1) continue;
        const auto &m = kMatrix[pick(0, 5)];
        const bool rank3 = pick(0, 4) == 0;
        if (rank3) p.N = 1;  // (C, H, W)
        return {problemOf(p, rank3), m.first, m.second};
    }
}

std::string describe(const Drawn &d) { return d.product + " " + mpt::describe(d.dt, d.pr.pool) + (d.pr.rank3 ? " rank3" : ""); }

// The backward's expected gradInput for a random valid mask, and the mask bytes (test_mpool_backward.cpp's rule).
std::pair<std::vector<uint8_t>, std::vector<double>> backwardCase(const Drawn &d, const std::vector<double> &go, uint64_t seed) {
    const mref::Pool &p = d.pr.pool;
    const RandomMask m = randomMask(p, seed, true);
    const bool fp16 = d.product == "atlas-training" && d.dt == ACL_FLOAT;
    if (isInt32Layout(d.product, p))
        return {mref::maskInt32(p, m.idx), mref::backward(p, go, mref::routesInt32(p, m.idx), refDt(d.dt), fp16)};
    return {mref::maskBits(p, m.bits), mref::backward(p, go, mref::routesBits(p, m.bits), refDt(d.dt), fp16)};
}

struct Sweep : ::testing::TestWithParam<int> {};

TEST_P(Sweep, ForwardAndBackwardExact) {
    int accepted = 0;
    for (int i = 0; i < kPerChunk; ++i) {
        const uint64_t seed = 0x9001000u + static_cast<uint64_t>(GetParam() * kPerChunk + i);
        const Drawn d = draw(seed);
        const mref::Pool &p = d.pr.pool;
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe(d));
        ASSERT_NO_FATAL_FAILURE(Runtime::use(d.product));

        const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), seed + 1);
        const Result f = runForward(d.pr, d.dt, x);
        if (f.phase1 != ACLNN_SUCCESS) {
            // a geometry the product refuses: refused with the parameter named, and the backward too
            EXPECT_EQ(f.phase1, ACLNN_ERR_PARAM_INVALID) << f.message;
            EXPECT_FALSE(f.message.empty());
            continue;
        }
        ++accepted;
        ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
        const Expected want = expectedForward(d.product, d.dt, p, x);
        EXPECT_TRUE(sameBits(d.dt, f.outBits, want.out)) << "forward out";
        EXPECT_EQ(f.mask, want.mask) << "forward mask";
        EXPECT_TRUE(f.canary);
        EXPECT_TRUE(f.inputsUnchanged);

        const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), seed + 2);
        const auto [mask, gi] = backwardCase(d, go, seed + 3);
        const Result b = runBackward(d.pr, d.dt, go, mask);
        ASSERT_EQ(b.phase1, ACLNN_SUCCESS) << b.message;
        ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
        EXPECT_TRUE(sameBits(d.dt, b.outBits, gi)) << "backward gradInput";
        EXPECT_TRUE(b.canary);
        EXPECT_TRUE(b.inputsUnchanged);
    }
    EXPECT_GE(accepted, kPerChunk / 2) << "most draws must be calls the products take";
}

INSTANTIATE_TEST_SUITE_P(Seeded, Sweep, ::testing::Range(0, kChunks));

}  // namespace
}  // namespace mpt
