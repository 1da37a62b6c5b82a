// Seeded random geometries (testing.md oracle 1 beyond the named corpus): 1-D/2-D/3-D, groups and
// depthwise, strides larger than the kernel, dilation, asymmetric 2-D padding, transposed with
// outputPadding below stride or dilation, every outputMask, non-contiguous 2-D views. Integer fill
// keeps each sum exact, so every selected gradient, and the forward of the same geometry, must
// have the double reference's bits in FLOAT, FLOAT16 and BF16 on atlas-a2. SweepProducts runs such
// draws, backward and forward, on every product with each cubeMathType: rejected in phase 1 with a
// reason, or exact; SweepRandom with random data, within the FLOAT accumulation bound. A failure
// names its case; the seed makes it again.
#include <map>
#include <sstream>

#include "conv_test_util.hpp"

namespace ct {
namespace {

constexpr int kChunks = 12, kPerChunk = 100;
constexpr int64_t kMaxWork = 3000000;  // the reference's triples per geometry (keeps the sweep quick)

struct Drawn {
    cref::Conv c;
    std::optional<std::vector<int64_t>> padding;  // the 4-element 2-D form, when drawn asymmetric
    std::vector<bool> mask;
    aclDataType dt;
    bool views = false;  // 2-D: every tensor a non-contiguous view (useStridedViews)
};

std::string describe(const Drawn &d) {
    const cref::Conv &c = d.c;
    std::ostringstream o;
    const auto dims = [&](const char *n, const std::array<int64_t, 3> &a) {
        o << ' ' << n;
        for (int i = 0; i < c.sd; ++i) o << (i ? "x" : "") << a[static_cast<size_t>(i)];
    };
    o << c.sd << "-D" << (c.transposed ? " transposed" : "") << " N" << c.N << " Cin" << c.Cin << " Cout" << c.Cout << " G" << c.G;
    dims("in", c.in), dims("k", c.k), dims("s", c.s), dims("d", c.d), dims("pl", c.pl), dims("pr", c.pr), dims("op", c.op);
    o << " mask " << d.mask[0] << d.mask[1] << d.mask[2] << ' ' << dtName(d.dt) << (d.views ? " views" : "");
    return o.str();
}

// A network's layer in miniature, where the plugin's own kernels take over (small input channel
// counts, depthwise, pointwise, strided): 2-D, k in {1, 3, 5, 7}, "same" padding, stride 1 or 2,
// planes up to 40 x 40.
template <class Pick>
void layer_like(cref::Conv &c, Pick &pick) {
    c = cref::Conv{};
    c.sd = 2;
    c.N = pick(1, 3);
    const int64_t k = std::array<int64_t, 4>{1, 3, 3, 5}[static_cast<size_t>(pick(0, 3))] + (pick(0, 9) == 0 ? 2 : 0);
    const bool dw = pick(0, 2) == 0;
    c.Cin = dw ? pick(1, 40) : pick(1, 4) == 0 ? pick(16, 40) : pick(1, 4);
    c.G = dw ? c.Cin : 1;
    c.Cout = dw ? c.Cin : pick(1, 40);
    c.in = {pick(1, 40), pick(1, 40), 1};
    c.k = {k, k, 1};
    c.s = {pick(1, 2), pick(1, 2), 1};
    c.s[1] = c.s[0];
    c.pl = c.pr = {k / 2, k / 2, 0};
    c.transposed = pick(0, 7) == 0;
    if (c.transposed) c.op = {c.s[0] - 1, c.s[1] - 1, 0};
}

// One geometry CANN accepts on atlas-a2 (conv_checks.cpp's rules), small enough for the reference.
Drawn draw(uint64_t seed) {
    Rng rng(seed);
    const auto pick = [&rng](int64_t lo, int64_t hi) { return rng.integer(lo, hi); };
    static constexpr aclDataType kDts[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (;;) {
        Drawn d;
        cref::Conv &c = d.c;
        const int64_t r = pick(0, 7);
        c.sd = r < 2 ? 1 : r < 6 ? 2 : 3;
        c.transposed = pick(0, 3) == 0;
        c.N = pick(1, 3);
        const int64_t kind = pick(0, 5);  // 0-2 dense, 3-4 grouped, 5 depthwise
        c.G = kind < 3 ? 1 : kind < 5 ? pick(2, 3) : pick(2, 19);
        const int64_t wide = kind < 3 && pick(0, 3) == 0 ? 40 : 6;  // sometimes past a 16-channel block
        c.Cin = c.G * (kind == 5 ? 1 : pick(1, wide));
        c.Cout = c.G * (kind == 5 ? pick(1, 2) : pick(1, wide));
        for (size_t i = 0; i < static_cast<size_t>(c.sd); ++i) {
            c.k[i] = pick(1, c.sd == 3 ? 3 : 5);
            c.s[i] = std::array<int64_t, 5>{1, 1, 2, 3, 4}[static_cast<size_t>(pick(0, 4))];
            c.d[i] = std::array<int64_t, 4>{1, 1, 2, 3}[static_cast<size_t>(pick(0, 3))];
            c.in[i] = pick(1, c.sd == 3 ? 6 : 13);
            const int64_t reach = c.d[i] * (c.k[i] - 1);  // the dilated kernel less one
            if (c.transposed) {
                // CANN: (k - 1) * d - padding in [0, 255]; outputPadding below stride or dilation
                c.pl[i] = c.pr[i] = pick(0, reach);
                c.op[i] = pick(0, std::max(c.s[i], c.d[i]) - 1);
            } else {
                c.pl[i] = pick(0, std::min<int64_t>(reach, 4));
                c.pr[i] = c.sd == 2 ? pick(0, std::min<int64_t>(reach, 4)) : c.pl[i];
                c.in[i] = std::max(c.in[i], reach + 1 - c.pl[i] - c.pr[i]);  // the window fits the padded input
            }
        }
        if (pick(0, 9) < 3) layer_like(c, pick);
        bool ok = c.work() <= kMaxWork;
        for (int i = 0; i < c.sd; ++i) ok = ok && c.outSize(i) >= 1;
        if (!ok) continue;
        if (c.sd == 2 && c.pl != c.pr) d.padding = std::vector<int64_t>{c.pl[0], c.pr[0], c.pl[1], c.pr[1]};
        const int64_t m = pick(0, 9);
        d.mask = m < 6 ? std::vector<bool>{true, true, true} : std::vector<bool>{m != 6, m != 7, m != 8};
        d.dt = kDts[pick(0, 2)];
        d.views = c.sd == 2 && pick(0, 3) == 0;
        return d;
    }
}

int64_t dataRange(aclDataType dt) { return dt == ACL_FLOAT ? 32 : 4; }

// The draw's backward call with cubeMathType `cube`.
Call callOf(const Drawn &d, int8_t cube) {
    Call k;
    k.c = d.c;
    k.dt = d.dt;
    k.cube = cube;
    k.padding = d.padding;
    k.mask = d.mask;
    if (d.views) useStridedViews(k);
    return k;
}

// The draw's backward call with cubeMathType `cube` on the current product. When phase 1 accepts
// it, phase 2 must succeed and every selected gradient have the reference's bits; the other
// outputs and the inputs stay untouched. Returns the call's result (phase 1's status, message).
Result expectExactBackward(const Drawn &d, uint64_t seed, int8_t cube) {
    const cref::Conv &c = d.c;
    const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, seed + 1, 20);
    const auto in = ints(cref::Conv::count(c.inputDims()), dataRange(d.dt), seed + 2, 20);
    const auto w = ints(cref::Conv::count(c.weightDims()), dataRange(d.dt), seed + 3);
    const Result r = runBackward(callOf(d, cube), go, in, w);
    if (r.phase1 != ACLNN_SUCCESS) return r;
    EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    const cref::Grads ref = cref::backward(c, go, in, w);
    if (d.mask[0]) {
        EXPECT_TRUE(sameBits(d.dt, r.gi, ref.gradInput, "gradInput"));
    }
    if (d.mask[1]) {
        EXPECT_TRUE(sameBits(d.dt, r.gw, ref.gradWeight, "gradWeight"));
    }
    if (d.mask[2]) {
        EXPECT_TRUE(sameBits(d.dt, r.gb, ref.gradBias, "gradBias"));
    }
    EXPECT_TRUE(r.canary);
    EXPECT_TRUE(r.inputsUnchanged);
    EXPECT_TRUE(r.unselectedUntouched);
    return r;
}

// The draw's forward (bias included) with cubeMathType `cube` on the current product: when phase 1
// accepts it, the reference's bits; rounded to FLOAT16 where the cube computes FLOAT16 (fp16Kernel:
// USE_FP16, or FLOAT where the cube has no FP32; the plugin's README), which even a FLOAT output
// carries. Returns the call's result.
ForwardResult expectExactForward(const Drawn &d, uint64_t seed, int8_t cube, bool fp16Kernel) {
    const cref::Conv &c = d.c;
    const auto in = ints(cref::Conv::count(c.inputDims()), dataRange(d.dt), seed + 2, 20);
    const auto w = ints(cref::Conv::count(c.weightDims()), dataRange(d.dt), seed + 3);
    const auto b = ints(c.Cout, 8, seed + 4);
    const ForwardResult f = runForward(c, d.padding, d.dt, in, w, b, {}, cube);
    if (f.phase1 != ACLNN_SUCCESS) return f;
    EXPECT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
    const auto want = cref::forward(c, in, w, &b);
    EXPECT_TRUE(sameBits(d.dt, f.out, fp16Kernel ? mapped(want, roundFp16) : want, "output"));
    EXPECT_TRUE(f.canary);
    return f;
}

struct Sweep : ::testing::TestWithParam<int> {};

TEST_P(Sweep, BackwardAndForwardExact) {
    Runtime::use("atlas-a2");
    for (int i = 0; i < kPerChunk; ++i) {
        const uint64_t seed = 0x5eed0000u + static_cast<uint64_t>(GetParam() * kPerChunk + i);
        const Drawn d = draw(seed);
        SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe(d));
        const Result r = expectExactBackward(d, seed, 0);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        const ForwardResult f = expectExactForward(d, seed, 0, false);
        ASSERT_EQ(f.phase1, ACLNN_SUCCESS) << f.message;
    }
}

// A draw on one of the products that have the operator, with a cubeMathType from 0 to 3; the
// runtime switched to that product.
struct ProductDraw {
    std::string product;
    int8_t cube = 0;
    Drawn d;
    std::string trace(uint64_t seed) const {
        return product + " cubeMathType " + std::to_string(cube) + " seed " + std::to_string(seed) + ": " + describe(d);
    }
};
constexpr const char *kProducts[] = {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3"};
ProductDraw drawOnProduct(uint64_t seed) {
    Rng rng(seed + 5);
    ProductDraw p;
    p.product = kProducts[rng.integer(0, 3)];
    p.cube = static_cast<int8_t>(rng.integer(0, 3));
    Runtime::use(p.product);
    p.d = draw(seed);
    return p;
}

// The same kind of draws, backward and forward, on every product that has the operator, under
// every cubeMathType. A call the product's profile rejects (3-D on training and inference, BF16
// there, cubeMathType combinations products.md lists) fails in phase 1 with 161002 and says why;
// every call it accepts gives the reference's bits (integer data is unchanged by FLOAT16 or HF32
// input rounding).
TEST(SweepProducts, AcceptedCallsExact) {
    std::map<std::string, int> accepted;
    int rejected = 0, forwards = 0;
    for (int i = 0; i < 600; ++i) {
        const uint64_t seed = 0x9a0d0000u + static_cast<uint64_t>(i);
        const ProductDraw p = drawOnProduct(seed);
        SCOPED_TRACE(p.trace(seed));
        const Result r = expectExactBackward(p.d, seed, p.cube);
        if (r.phase1 == ACLNN_SUCCESS) {
            ++accepted[p.product];
        } else {
            ++rejected;
            EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID) << r.message;
            EXPECT_FALSE(r.message.empty());
        }
        const bool noFp32Cube = p.product == "atlas-training" || p.product == "atlas-inference";
        const ForwardResult f = expectExactForward(p.d, seed, p.cube, p.cube == 2 || (p.d.dt == ACL_FLOAT && noFp32Cube));
        if (f.phase1 == ACLNN_SUCCESS) {
            ++forwards;
        } else {
            EXPECT_EQ(f.phase1, ACLNN_ERR_PARAM_INVALID) << f.message;
            EXPECT_FALSE(f.message.empty());
        }
    }
    EXPECT_GE(forwards, 200);
    for (const char *p : kProducts) EXPECT_GE(accepted[p], 25) << p;  // inference accepts about a quarter
    EXPECT_GE(rejected, 50);
}

// The same draws with random data (uniform in [-1, 1), rounded to the dtype) on every product under
// each cubeMathType the product takes: every gradient within one unit of the dtype plus 8 FLOAT
// units of its sum of |terms| (the ATK replays' bound: a FLOAT accumulation of the operands the
// cube sees, nearReference), against the reference of the rounded operands (gradBias: the unrounded
// gradOutput). testing.md's fixed FLOAT bar (1e-5 + 1e-4 |ref|, relative L2 1e-6) is the named
// tolerance tests'; over these geometries FLOAT accumulation itself misses it now and then (6 of
// 4,800 draws: a gradWeight entry summing 2,178 products off by 2.0e-5 where 1.15e-5 was allowed;
// a 9-term sum that cancels to a relative error of 1.1e-6), and stays inside this bound.
TEST(SweepRandom, WithinAccumulationBound) {
    int run = 0;
    for (int i = 0; i < 600; ++i) {
        const uint64_t seed = 0x7a9d0000u + static_cast<uint64_t>(i);
        const ProductDraw p = drawOnProduct(seed);
        const Drawn &d = p.d;
        const cref::Conv &c = d.c;
        const int8_t cube = p.cube;
        SCOPED_TRACE(p.trace(seed));
        const auto go = uniform(cref::Conv::count(c.gradOutputDims()), seed + 1, d.dt);
        const auto in = uniform(cref::Conv::count(c.inputDims()), seed + 2, d.dt);
        const auto w = uniform(cref::Conv::count(c.weightDims()), seed + 3, d.dt);
        const Result r = runBackward(callOf(d, cube), go, in, w);
        if (r.phase1 != ACLNN_SUCCESS) continue;  // SweepProducts checks the rejections
        ++run;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        const auto round = cubeRounding(p.product, d.dt, cube);
        const cref::Grads ref = cref::backward(c, mapped(go, round), mapped(in, round), mapped(w, round));
        const cref::Grads mag = cref::backward(c, absolute(go), absolute(in), absolute(w));
        if (d.mask[0]) {
            EXPECT_TRUE(nearReference(d.dt, r.gi, ref.gradInput, mag.gradInput, "gradInput"));
        }
        if (d.mask[1]) {
            EXPECT_TRUE(nearReference(d.dt, r.gw, ref.gradWeight, mag.gradWeight, "gradWeight"));
        }
        if (d.mask[2]) {
            EXPECT_TRUE(nearReference(d.dt, r.gb, biasSums(c, go), biasSums(c, absolute(go)), "gradBias"));
        }
    }
    EXPECT_GE(run, 250);
}

// The draws cover what the sweep claims: each spatial rank, transposed, grouped and depthwise,
// asymmetric padding, dilation, a stride past the kernel, every dtype and a partial mask.
TEST(SweepDraws, CoverEveryFeature) {
    int ranks[4] = {}, wide = 0, views = 0, transposed = 0, grouped = 0, depthwise = 0, asym = 0, dilated = 0, skipping = 0, partial = 0;
    std::map<aclDataType, int> dts;
    for (int i = 0; i < kChunks * kPerChunk; ++i) {
        const Drawn d = draw(0x5eed0000u + static_cast<uint64_t>(i));
        const cref::Conv &c = d.c;
        ++ranks[c.sd];
        views += d.views;
        wide += c.G == 1 && (c.Cin > 16 || c.Cout > 16);
        transposed += c.transposed;
        grouped += c.G > 1 && c.Cin != c.G;
        depthwise += c.G > 1 && c.Cin == c.G;
        asym += d.padding.has_value();
        ++dts[d.dt];
        partial += !(d.mask[0] && d.mask[1] && d.mask[2]);
        for (int s = 0; s < c.sd; ++s) {
            dilated += c.d[static_cast<size_t>(s)] > 1;
            skipping += c.s[static_cast<size_t>(s)] > c.k[static_cast<size_t>(s)];
        }
    }
    for (int sd = 1; sd <= 3; ++sd) EXPECT_GE(ranks[sd], 20) << sd << "-D";
    EXPECT_GE(wide, 30);
    EXPECT_GE(views, 50);
    EXPECT_GE(transposed, 30);
    EXPECT_GE(grouped, 30);
    EXPECT_GE(depthwise, 20);
    EXPECT_GE(asym, 20);
    EXPECT_GE(dilated, 50);
    EXPECT_GE(skipping, 30);
    EXPECT_GE(partial, 40);
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) EXPECT_GE(dts[dt], 50) << dtName(dt);
}

INSTANTIATE_TEST_SUITE_P(Seeded, Sweep, ::testing::Range(0, kChunks));

}  // namespace
}  // namespace ct
