// MaxPool2dWithMaskBackward results: bit-exact against the independent reference in every dtype of
// every supporting product (int32 masks on atlas-a2/a3, bit masks on atlas-training), FLOAT as
// FLOAT16 on atlas-training, non-contiguous views, NaN / inf gradients, bad mask data (R2: 361001,
// no out-of-bounds access), bits into the padding (skipped), determinism across thread counts, and
// nothing outside the tensors touched (each against a guard page).
#include <climits>

#include "mpool_test_util.hpp"

namespace mpt {
namespace {

struct Shape {
    const char *name;
    Problem pr;
};

// Overlapping, ceil-mode, rectangular, rank-3, gapped (stride > kernel), deep and wide geometries.
std::vector<Shape> shapes() {
    const auto mk = [](const mref::Pool &p, bool rank3 = false) { return problemOf(p, rank3); };
    return {
        {"k3s2p1", mk({2, 3, 9, 9, 3, 3, 2, 2, 1, 1, false})},
        {"k3x2s2x1p1x0_ceil", mk({1, 2, 10, 7, 3, 2, 2, 1, 1, 0, true})},
        {"rank3_k2s2_ceil", mk({1, 3, 8, 11, 2, 2, 2, 2, 0, 0, true}, true)},
        {"k4s3p2_ceil", mk({2, 2, 12, 12, 4, 4, 3, 3, 2, 2, true})},
        {"k5s1p2", mk({1, 1, 5, 6, 5, 5, 1, 1, 2, 2, false})},
        {"k2s3_gaps", mk({1, 2, 11, 10, 2, 2, 3, 3, 0, 0, false})},
        {"k1s2", mk({1, 2, 8, 8, 1, 1, 2, 2, 0, 0, false})},
        {"k1s2_bits_on_a2", mk({1, 2, 20, 20, 1, 1, 2, 2, 0, 0, false})},  // Ho*Wo = 100: the bit mask everywhere
        {"wide_k3s2p1", mk({1, 1, 3, 101, 3, 3, 2, 2, 1, 1, false})},
        {"wide_k2s2_ceil", mk({1, 2, 7, 67, 2, 2, 2, 2, 0, 0, true})},  // several 32-column blocks, odd W
        {"k17x3s1x2p0x1", mk({1, 2, 20, 9, 17, 3, 1, 2, 0, 1, false})},
    };
}

struct Matrix {
    std::string product;
    aclDataType dt;
};
std::vector<Matrix> matrix() {
    return {{"atlas-a2", ACL_FLOAT},       {"atlas-a2", ACL_FLOAT16}, {"atlas-a2", ACL_BF16},
            {"atlas-a3", ACL_FLOAT},       {"atlas-a3", ACL_FLOAT16}, {"atlas-a3", ACL_BF16},
            {"atlas-training", ACL_FLOAT}, {"atlas-training", ACL_FLOAT16}};
}

// The reference result of a random valid mask in the product's layout, and the mask bytes.
struct Expect {
    std::vector<uint8_t> mask;
    std::vector<double> gi;
};
Expect expect(const std::string &product, aclDataType dt, const mref::Pool &p, const std::vector<double> &go,
              uint64_t seed) {
    const RandomMask m = randomMask(p, seed, true);
    const bool fp16 = product == "atlas-training" && dt == ACL_FLOAT;
    if (isInt32Layout(product, p))
        return {mref::maskInt32(p, m.idx), mref::backward(p, go, mref::routesInt32(p, m.idx), refDt(dt), fp16)};
    return {mref::maskBits(p, m.bits), mref::backward(p, go, mref::routesBits(p, m.bits), refDt(dt), fp16)};
}

TEST(MaxPool2dWithMaskBackward, BitExactInEveryDtypeOfEveryProduct) {
    for (const Matrix &m : matrix()) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(m.product));
        uint64_t seed = 1;
        for (const Shape &s : shapes()) {
            SCOPED_TRACE(m.product + " " + dtName(m.dt) + " " + s.name);
            const mref::Pool &p = s.pr.pool;
            const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), ++seed);
            const Expect e = expect(m.product, m.dt, p, go, seed);
            const Result r = runBackward(s.pr, m.dt, go, e.mask);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(m.dt, r.outBits, e.gi));
            EXPECT_TRUE(r.canary);
            EXPECT_TRUE(r.inputsUnchanged);
        }
    }
}

// products.md: FLOAT on atlas-training is computed as FLOAT16 - gradOutput and the sum are rounded
// to FLOAT16. On atlas-a2 the same call keeps FLOAT.
TEST(MaxPool2dWithMaskBackward, TrainingComputesFloatAsFloat16) {
    Problem pr;
    pr.pool = {1, 1, 2, 2, 2, 2, 1, 1, 1, 1, false};  // 3x3 outputs over a 2x2 input: heavy overlap
    const std::vector<double> go = {1024.0, 1.0, 0.5, 1.0 + std::ldexp(1.0, -12), 0.5, 0.25, 1e-8, 70000.0, -2.0};
    // Every output's maximum at the first element of its clipped window: input (0, 0) collects
    // outputs 0, 1, 3 and 4; (1, 0) collects outputs 6 and 7.
    std::vector<int64_t> idx;
    std::vector<mref::Bit> bits;
    for (int64_t j = 0; j < 9; ++j) {
        const int64_t oh = j / 3, ow = j % 3, ih = std::max<int64_t>(oh - 1, 0), iw = std::max<int64_t>(ow - 1, 0);
        idx.push_back(ih * 2 + iw);
        bits.push_back({0, j, (ih - (oh - 1)) * 2 + (iw - (ow - 1))});
    }
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    Result r = runBackward(pr, ACL_FLOAT, go, mref::maskBits(pr.pool, bits));
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    const auto want16 = mref::backward(pr.pool, go, mref::routesBits(pr.pool, bits), mref::Dt::F32, true);
    EXPECT_TRUE(sameBits(ACL_FLOAT, r.outBits, want16));
    EXPECT_EQ(valueOf(r.outBits[0], ACL_FLOAT), 1026.0);        // 1024 + 1 + 1 + 0.5 -> FLOAT16, tie to even
    EXPECT_TRUE(std::isinf(valueOf(r.outBits[2], ACL_FLOAT)));  // 70000 is beyond FLOAT16

    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    r = runBackward(pr, ACL_FLOAT, go, mref::maskInt32(pr.pool, idx));
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(valueOf(r.outBits[0], ACL_FLOAT), 1026.5 + std::ldexp(1.0, -12));
    EXPECT_FALSE(sameBits(ACL_FLOAT, r.outBits, want16));
}

TEST(MaxPool2dWithMaskBackward, NonContiguousViewsGiveTheSameBits) {
    // k3 s2 p1 ceil mode, and k3 s1 p1 over 20 columns (the gather path, its rows stored through
    // the strided gradInput one at a time)
    for (const mref::Pool &pool : {mref::Pool{2, 3, 9, 10, 3, 3, 2, 2, 1, 1, true}, mref::Pool{2, 3, 9, 20, 3, 3, 1, 1, 1, 1, false}})
    for (const std::string product : {"atlas-a2", "atlas-training"}) {
        Problem pr;
        pr.pool = pool;
        const mref::Pool &p = pr.pool;
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
            SCOPED_TRACE(product + " " + dtName(dt) + " s" + std::to_string(p.sH));
            const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 77);
            const Expect e = expect(product, dt, p, go, 78);
            Views v;
            v.a = {{0, 1, 3, 2}, {}, 5};           // gradOutput: H and W transposed, offset
            v.b = {{1, 0, 2, 3}, {}, 0};           // self: N and C swapped (never read)
            v.c = {{}, {0, 1, 3, 5}, 7};           // gradInput: padded rows and columns, offset
            v.mask = {{}, {0, 0, 0, 16}, 3};       // mask: padded rows: copied into the workspace
            const Result r = runBackward(pr, dt, go, e.mask, v);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(dt, r.outBits, e.gi));
            EXPECT_TRUE(r.canary) << "a write outside the gradInput view";
            EXPECT_TRUE(r.inputsUnchanged);
            EXPECT_GT(r.workspace, 0u);
        }
    }
}

TEST(MaxPool2dWithMaskBackward, NanAndInfGradientsPropagate) {
    Problem pr;
    pr.pool = {1, 2, 7, 7, 3, 3, 2, 2, 1, 1, false};
    const mref::Pool &p = pr.pool;
    auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 5);
    go[0] = std::numeric_limits<double>::quiet_NaN();
    go[3] = INFINITY;
    go[4] = -INFINITY;
    go[9] = INFINITY;
    for (const std::string product : {"atlas-a3", "atlas-training"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
            const Expect e = expect(product, dt, p, go, 6);
            const Result r = runBackward(pr, dt, go, e.mask);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(dt, r.outBits, e.gi)) << product << " " << dtName(dt);
        }
    }
}

// R2: an int32 index outside its output's window is data corruption: 361001 from phase 2 naming
// the position, never an access outside the tensors. -1 means "no maximum" and is skipped.
TEST(MaxPool2dWithMaskBackward, BadInt32IndicesFailCleanly) {
    Problem pr;
    pr.pool = {2, 2, 6, 6, 3, 3, 2, 2, 1, 1, false};  // Ho = Wo = 3
    const mref::Pool &p = pr.pool;
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * 9), 9);
    const RandomMask good = randomMask(p, 10, false);
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const int64_t pos = 2 * 9 + 4;  // plane 2 (n 1, c 0), output (1, 1): window rows [1,4) cols [1,4)
    const int64_t bad_values[] = {p.H * p.W, p.H * p.W - 1, 0, 6, 4 * 6 + 1, INT_MAX, INT_MIN, -2, int64_t{1} << 31};
    for (const int64_t v : bad_values) {
        SCOPED_TRACE(v);
        auto idx = good.idx;
        idx[pos] = v;
        const Result r = runBackward(pr, ACL_FLOAT, go, mref::maskInt32(p, idx));
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, 361001);
        EXPECT_NE(r.message.find("n=1, c=0, h=1, w=1"), std::string::npos) << r.message;
        EXPECT_TRUE(r.canary);
        EXPECT_TRUE(r.inputsUnchanged);
    }
    // The first bad position wins, whatever the thread count.
    for (int threads : {1, 3}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
        auto idx = good.idx;
        idx[30] = 999;
        idx[pos] = 999;
        const Result r = runBackward(pr, ACL_FLOAT, go, mref::maskInt32(p, idx));
        EXPECT_EQ(r.phase2, 361001);
        EXPECT_NE(r.message.find("n=1, c=0, h=1, w=1"), std::string::npos) << r.message;
    }
    // -1 everywhere: no maximum anywhere, gradInput all +0.
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const Result r = runBackward(pr, ACL_FLOAT, go, mref::maskInt32(p, std::vector<int64_t>(good.idx.size(), -1)));
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.outBits, std::vector<uint32_t>(r.outBits.size(), 0u));
}

// R2 at stride 1 (the gather path): the small indices 0 and 1 lie outside a middle output's
// window as much as any other; they once passed its vector test, and that output's gradient was lost.
TEST(MaxPool2dWithMaskBackward, SmallBadIndicesFailAtStrideOne) {
    Problem pr;
    pr.pool = {1, 2, 20, 20, 3, 3, 1, 1, 1, 1, false};  // Ho = Wo = 20
    const mref::Pool &p = pr.pool;
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * 400), 9);
    const RandomMask good = randomMask(p, 11, false);
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const int64_t pos = 400 + 10 * 20 + 10;  // plane 1 (n 0, c 1), output (10, 10): window rows and cols [9, 12)
    for (const int64_t v : {0, 1, 2, 9 * 20 + 8}) {
        SCOPED_TRACE(v);
        auto idx = good.idx;
        idx[pos] = v;
        const Result r = runBackward(pr, ACL_FLOAT, go, mref::maskInt32(p, idx));
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, 361001);
        EXPECT_NE(r.message.find("n=0, c=1, h=10, w=10"), std::string::npos) << r.message;
        EXPECT_TRUE(r.inputsUnchanged);
    }
}

// Bit masks are not validated (every bit names a kernel position): bits of positions in the padding
// are skipped (R1: no gradient, no write outside), several bits of one output each route the
// gradient, and bits past Ho*Wo in a row are not outputs.
TEST(MaxPool2dWithMaskBackward, BitsIntoPaddingAreSkipped) {
    Problem pr;
    pr.pool = {1, 2, 5, 5, 3, 3, 2, 2, 1, 1, false};  // Ho = Wo = 3; the corner windows reach the padding
    const mref::Pool &p = pr.pool;
    const auto go = exactValues(static_cast<size_t>(p.C * 9), 11);
    std::vector<mref::Bit> bits;
    for (int64_t pl = 0; pl < p.C; ++pl)
        for (int64_t j = 0; j < 9; ++j)
            for (int64_t k = 0; k < 9; ++k)
                if ((j + k + pl) % 3 == 0) bits.push_back({pl, j, k});  // several bits per output, some in the padding
    auto mask = mref::maskBits(p, bits);
    mask[static_cast<size_t>(4 * p.maskRow() + 2)] = 0xff;  // bits 16..23 of a row: beyond Ho*Wo = 9
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
        const Result r = runBackward(pr, dt, go, mask);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(dt, r.outBits, mref::backward(p, go, mref::routesBits(p, bits), refDt(dt), dt == ACL_FLOAT)));
        EXPECT_TRUE(r.canary);
    }
}

// R1: with ceilMode, a last window that would start in the right padding is dropped (ops.md), so
// no window lies wholly in the padding: 5x5, k2 s2 p1 pools to 3x3, not 4x4.
TEST(MaxPool2dWithMaskBackward, CeilModeNeverMakesAWindowWhollyInPadding) {
    Problem pr;
    pr.pool = {1, 2, 5, 5, 2, 2, 2, 2, 1, 1, true};
    const mref::Pool &p = pr.pool;
    ASSERT_EQ(p.Ho(), 3);
    const auto go = exactValues(static_cast<size_t>(p.C * 9), 51);
    for (const std::string product : {"atlas-a2", "atlas-training"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        const Expect e = expect(product, ACL_FLOAT16, p, go, 52);
        const Result r = runBackward(pr, ACL_FLOAT16, go, e.mask);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(ACL_FLOAT16, r.outBits, e.gi));
        EXPECT_TRUE(r.canary);
        // a 4x4 gradOutput (a window starting at row 5 = H) is rejected in phase 1
        Tensor go4(ACL_FLOAT16, {1, 2, 4, 4}, ACL_FORMAT_NCHW), self(ACL_FLOAT16, {1, 2, 5, 5}, ACL_FORMAT_NCHW),
            gi(ACL_FLOAT16, {1, 2, 5, 5}, ACL_FORMAT_NCHW), mask(ACL_INT8, {1, 2, 4, 64}, ACL_FORMAT_NCHW);
        IntArray k(pr.kernel()), s(pr.stride()), pd(pr.padding()), d(std::vector<int64_t>{1});
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(go4.get(), self.get(), mask.get(), k.a, s.a, pd.a, d.a,
                                                                 true, gi.get(), &ws, &exec),
                  161002);
        EXPECT_NE(lastError().find("[1,2,3,3]"), std::string::npos);
    }
}

TEST(MaxPool2dWithMaskBackward, SameBytesAtOneTwoAndThreeThreads) {
    Problem pr;
    pr.pool = {3, 7, 33, 47, 3, 3, 2, 2, 1, 1, true};
    const mref::Pool &p = pr.pool;
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 21);
    for (const std::string product : {"atlas-a2", "atlas-training"}) {
        const Expect e = expect(product, ACL_BF16, p, go, 22);
        const aclDataType dt = product == "atlas-a2" ? ACL_BF16 : ACL_FLOAT16;
        std::vector<uint32_t> first;
        for (int threads : {1, 2, 3}) {
            ASSERT_NO_FATAL_FAILURE(Runtime::use(product, threads));
            const Result a = runBackward(pr, dt, go, e.mask), b = runBackward(pr, dt, go, e.mask);
            ASSERT_EQ(a.phase2, ACLNN_SUCCESS) << a.message;
            EXPECT_EQ(a.outBits, b.outBits) << "two runs differ at " << threads << " threads";
            if (first.empty()) first = a.outBits;
            EXPECT_EQ(a.outBits, first) << product << ": " << threads << " threads differ from 1";
        }
    }
}

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor (a vector load past a row's end, a mask word read too far, a store's lanes
// one too many) crashes the test. The common pools at every width 1-70 (the parity path's blocks of
// 16 outputs with every tail, both mask layouts) and the other geometries; the bits are the
// reference's.
TEST(MaxPool2dWithMaskBackward, TouchesNothingOutsideItsTensors) {
    std::vector<NamedProblem> all = widthSweep();
    for (const Shape &s : shapes()) all.push_back({s.name, s.pr});
    for (const ProductDtype &m : guardMatrix()) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(m.product));
        uint64_t seed = 900;
        for (const NamedProblem &np : all) {
            const mref::Pool &p = np.pr.pool;
            const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), ++seed);
            const Expect e = expect(m.product, m.dt, p, go, seed);
            for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                SCOPED_TRACE(m.product + " " + dtName(m.dt) + " " + np.name + placementName(at));
                const Layout l = placed({}, at);
                const Result r = runBackward(np.pr, m.dt, go, e.mask, Views{l, l, l, l});
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_TRUE(sameBits(m.dt, r.outBits, e.gi));
                EXPECT_TRUE(r.inputsUnchanged);
            }
        }
    }
}

}  // namespace
}  // namespace mpt
