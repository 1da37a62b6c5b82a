// White-box test of the channel-blocked depthwise kernels (compiled into this test from the plugin's
// sources): the AVX-512 and the scalar spellings give the same bytes, both match the independent
// double reference (conv_reference.hpp) - exactly on integer data, within testing.md's tolerance on
// random data - for every subset of outputs, and an unselected output is never written. Odd shapes:
// planes 1x1, 7x7, 13x9, 1-D, channel counts off 16, strides 1 and 2, padding 0/1/2 and asymmetric,
// dilation, 1x1 / 3x3 / 5x3 / 11x7 kernels, plane sizes off 16, FLOAT and BF16 operands, FLOAT and
// BF16 gradInput (gradBias is the plan's general node, never these kernels'). The same bytes
// at 1, 2 and 3 threads. Without AVX-512 the scalar spelling is still checked against the reference.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "conv_reference.hpp"
#include "depthwise_blocked.hpp"
#include "dw_kernel_util.hpp"

namespace {

using conv::Dt;
using conv::DwBlocked;
using conv::DwShape;
using namespace dwtest;

struct Case {
    const char *name;
    int64_t N, C, H, W, kh, kw, sh, sw, dh, dw, ph_t, ph_b, pw_l, pw_r;
};

const Case kCases[] = {
    {"mobilenet_like_7x7", 2, 35, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"stride2_13x9", 3, 17, 13, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"plane_1x1_pad1", 2, 5, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"plane_1x1_k1", 2, 16, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {"pad0_13x9", 2, 33, 13, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},
    {"pad2_dilated2", 2, 20, 13, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
    {"k5x3_s2x1_asym", 2, 9, 13, 9, 5, 3, 2, 1, 1, 1, 2, 0, 1, 2},
    {"stride2_pad0_even", 1, 48, 14, 14, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0},
    {"stride2_dil2_pad2", 2, 7, 11, 12, 3, 3, 2, 2, 2, 2, 2, 1, 2, 1},
    {"stride3_k5", 1, 18, 15, 16, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2},
    {"oned_like", 3, 21, 1, 37, 1, 5, 1, 2, 1, 1, 0, 0, 2, 2},
    {"wide_rows_banded", 1, 16, 5, 300, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"tall_banded_s2", 1, 19, 70, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    // plane sizes off 16, fewer output rows than input rows, many taps
    {"plane_14x14", 2, 21, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"rows_cut_k5x3", 2, 5, 6, 11, 5, 3, 1, 1, 1, 1, 0, 3, 1, 1},
    {"ih1_kh5_ph4", 3, 4, 1, 9, 5, 3, 1, 1, 1, 1, 4, 4, 1, 1},
    {"k1x5_dil2", 2, 3, 5, 23, 1, 5, 1, 1, 1, 2, 0, 0, 5, 3},
    {"k11x7_taps77", 2, 3, 9, 8, 11, 7, 1, 1, 1, 1, 5, 5, 3, 3},
    // 16 blocks and more on whole planes: a task per block over the batch (gradWeight flushed
    // across image boundaries in the last one: 3 rows per flush, 5 rows per image)
    {"batch_inner_250ch", 2, 250, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"batch_inner_s2_260ch", 3, 260, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"batch_inner_flush_241ch", 3, 241, 5, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
};

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pl, int64_t pr) { return (in + pl + pr - d * (k - 1) - 1) / s + 1; }

cref::Conv refConv(const Case &c) {
    cref::Conv r;
    r.sd = 2, r.N = c.N, r.Cin = c.C, r.Cout = c.C, r.G = c.C;
    r.in = {c.H, c.W, 1};
    r.k = {c.kh, c.kw, 1};
    r.s = {c.sh, c.sw, 1};
    r.d = {c.dh, c.dw, 1};
    r.pl = {c.ph_t, c.pw_l, 0};
    r.pr = {c.ph_b, c.pw_r, 0};
    return r;
}

DwShape shapeOf(const Case &c) {
    DwShape s;
    s.N = c.N, s.C = c.C, s.H = c.H, s.W = c.W, s.kh = c.kh, s.kw = c.kw, s.sh = c.sh, s.sw = c.sw, s.dh = c.dh, s.dw = c.dw;
    s.ph = c.ph_t, s.pw = c.pw_l;
    s.Ho = outSize(c.H, c.kh, c.sh, c.dh, c.ph_t, c.ph_b);
    s.Wo = outSize(c.W, c.kw, c.sw, c.dw, c.pw_l, c.pw_r);
    return s;
}


// One run of the kernels with the outputs of `mask` (bit 0 dx, 1 dw); unselected outputs
// stay canary bytes.
Out runKernels(const Case &c, Dt dt, bool dxBf16, const Operand &dy, const Operand &x, const Operand &w, int mask, bool avx,
               int threads) {
    const DwShape s = shapeOf(c);
    return runPass(DwBlocked(s, dt), s, dxBf16, dy, x, w, mask, avx, threads, 0);
}





TEST(DwBlocked, VectorMatchesScalarAndReference) {
    uint64_t seed = 1;
    for (const Case &c : kCases)
        for (const Dt dt : {Dt::F32, Dt::BF16})
            for (const bool integers : {true, false}) {
                const DwShape s = shapeOf(c);
                acltest::Rng rng(seed++);
                const Operand dy = makeOperand(s.N * s.C * s.Ho * s.Wo, dt, rng, integers);
                const Operand x = makeOperand(s.N * s.C * s.H * s.W, dt, rng, integers);
                const Operand w = makeOperand(s.C * s.kh * s.kw, dt, rng, integers);
                const cref::Grads ref = cref::backward(refConv(c), dy.value, x.value, w.value);
                // BF16 operands give a FLOAT or a BF16 gradInput (rounded in the kernel)
                for (const bool dxBf16 : dt == Dt::BF16 ? std::vector<bool>{false, true} : std::vector<bool>{false})
                    for (int mask = 1; mask < 4; ++mask) {
                        const std::string tag = std::string(c.name) + (dt == Dt::F32 ? " FLOAT" : " BF16") +
                                                (integers ? " int" : " rand") + (dxBf16 ? " dxBF16" : "") + " mask " +
                                                std::to_string(mask);
                        const Out sc = runKernels(c, dt, dxBf16, dy, x, w, mask, false, 2);
                        for (const auto *o : {&sc}) {
                            if (mask & 1) {
                                EXPECT_TRUE(matches(floats(o->dx, dxBf16), ref.gradInput, integers, dxBf16, "gradInput")) << tag;
                            } else {
                                EXPECT_TRUE(allCanary(o->dx)) << tag;
                            }
                            if (mask & 2) {
                                EXPECT_TRUE(matches(floats(o->dw, false), ref.gradWeight, integers, false, "gradWeight")) << tag;
                            } else {
                                EXPECT_TRUE(allCanary(o->dw)) << tag;
                            }
                        }
                        if (!hasAvx512()) continue;
                        const Out av = runKernels(c, dt, dxBf16, dy, x, w, mask, true, 2);
                        EXPECT_EQ(av.dx, sc.dx) << tag;
                        EXPECT_EQ(av.dw, sc.dw) << tag;
                    }
            }
}

// NaNs of different payloads and signs, infinities and zeros all over the operands, in every case's
// geometry: the AVX-512 spelling keeps the same NaN as the scalar one where NaNs meet, byte for byte.
TEST(DwBlocked, NaNPayloadsSameOnBothSpellings) {
    if (!hasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU: only the scalar spelling runs";
    uint64_t seed = 4200;
    int64_t nanResults = 0;
    for (const Case &c : kCases)
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const DwShape s = shapeOf(c);
            acltest::Rng rng(seed++);
            Operand dy = makeOperand(s.N * s.C * s.Ho * s.Wo, dt, rng, false);
            Operand x = makeOperand(s.N * s.C * s.H * s.W, dt, rng, false);
            Operand w = makeOperand(s.C * s.kh * s.kw, dt, rng, false);
            sprinkleSpecials(dy, dt, rng, 6);
            sprinkleSpecials(x, dt, rng, 6);
            sprinkleSpecials(w, dt, rng, 4);
            for (const bool dxBf16 : dt == Dt::BF16 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                const std::string tag = std::string(c.name) + (dt == Dt::F32 ? " FLOAT" : " BF16") + (dxBf16 ? " dxBF16" : "");
                const Out sc = runKernels(c, dt, dxBf16, dy, x, w, 3, false, 2);
                const Out av = runKernels(c, dt, dxBf16, dy, x, w, 3, true, 2);
                for (const double v : floats(sc.dx, dxBf16)) nanResults += std::isnan(v);
                for (const double v : floats(sc.dw, false)) nanResults += std::isnan(v);
                EXPECT_EQ(av.dx, sc.dx) << tag;
                EXPECT_EQ(av.dw, sc.dw) << tag;
            }
        }
    EXPECT_GT(nanResults, 1000);
}

// Taps that reach outside the plane are skipped, never multiplied by a padding zero: with positive
// operands, an infinite weight and an infinite corner gradient give infinities, never NaN (inf * 0).
TEST(DwBlocked, PaddingIsSkippedNotMultiplied) {
    const Case c{"inf", 1, 16, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    const DwShape s = shapeOf(c);
    auto ones = [](int64_t n) {
        Operand o;
        o.bytes.resize(static_cast<size_t>(n) * 4);
        o.value.assign(static_cast<size_t>(n), 1.0);
        const float one = 1.0f;
        for (int64_t i = 0; i < n; ++i) std::memcpy(o.bytes.data() + 4 * i, &one, 4);
        return o;
    };
    Operand dy = ones(s.N * s.C * s.Ho * s.Wo), x = ones(s.N * s.C * s.H * s.W), w = ones(s.C * 9);
    const float inf = INFINITY;
    std::memcpy(w.bytes.data(), &inf, 4);   // channel 0, tap (0, 0)
    std::memcpy(dy.bytes.data(), &inf, 4);  // channel 0, gradient (0, 0)
    for (const bool avx : {false, true}) {
        if (avx && !hasAvx512()) continue;
        const Out o = runKernels(c, Dt::F32, false, dy, x, w, 3, avx, 1);
        const std::vector<double> gi = floats(o.dx, false), gw = floats(o.dw, false);
        int infinite = 0;
        for (int64_t p = 0; p < s.H * s.W; ++p) {
            EXPECT_FALSE(std::isnan(gi[static_cast<size_t>(p)])) << "gradInput " << p << " avx " << avx;
            infinite += std::isinf(gi[static_cast<size_t>(p)]) ? 1 : 0;
        }
        EXPECT_GT(infinite, 0);
        for (int64_t t = 0; t < 9; ++t) EXPECT_FALSE(std::isnan(gw[static_cast<size_t>(t)])) << "gradWeight tap " << t << " avx " << avx;
        EXPECT_TRUE(std::isinf(gw[8]));    // tap (2, 2) pairs gradient (0, 0) with input (1, 1)
        EXPECT_TRUE(std::isfinite(gw[0])); // tap (0, 0) never sees gradient (0, 0)
    }
}

TEST(DwBlocked, SameBytesAtAnyThreadCount) {
    for (const Case &c : {kCases[0], kCases[1], kCases[12], kCases[18], kCases[20]})
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const DwShape s = shapeOf(c);
            acltest::Rng rng(5);
            const Operand dy = makeOperand(s.N * s.C * s.Ho * s.Wo, dt, rng, false);
            const Operand x = makeOperand(s.N * s.C * s.H * s.W, dt, rng, false);
            const Operand w = makeOperand(s.C * s.kh * s.kw, dt, rng, false);
            const bool avx = hasAvx512();
            const Out first = runKernels(c, dt, false, dy, x, w, 3, avx, 1);
            for (int threads : {2, 3}) {
                const Out o = runKernels(c, dt, false, dy, x, w, 3, avx, threads);
                EXPECT_EQ(o.dx, first.dx) << c.name << " threads " << threads;
                EXPECT_EQ(o.dw, first.dw) << c.name << " threads " << threads;
            }
        }
}

}  // namespace
