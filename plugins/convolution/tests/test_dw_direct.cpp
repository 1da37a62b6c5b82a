// White-box test of the direct NCHW depthwise kernels (depthwise_direct.cpp, compiled into this test):
// which shapes they take, the AVX-512 and scalar spellings give the same bytes, both match the
// independent double reference (conv_reference.hpp) - exactly on integer data, within testing.md's
// tolerance on random data - for every subset of outputs, an unselected output is never written, and
// the scratch is never read before it is written (it starts as NaN bytes). Shapes: channel counts
// 1/5/16/17/33/35, every width 1-130 at strides 1 and 2, MobileNet's planes, odd sizes, planes of one
// pixel, row or column, planes with more vectors than one FLOAT sum takes (kFlush), narrow and wide,
// pitched 7x7-like planes at every height 1-9 and width 4-8. Infinities and NaN next to the padding
// give what the reference gives (skipped taps, never 0 * inf), also at every position of a pitched
// plane. BF16 gradInput rounded by the CPU only where no sum can be subnormal. Same bytes at 1, 2
// and 3 threads. Every tensor flush against a guard page: nothing outside a tensor is touched.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "conv_reference.hpp"
#include "cpu.hpp"
#include "depthwise_direct.hpp"
#include "dw_kernel_util.hpp"
#include "guarded_pages.hpp"

namespace {

using conv::DwBlocked;
using conv::DwDirect;
using conv::DwShape;
using namespace dwtest;

struct Case {
    const char *name;
    int64_t N, C, H, W, s;
};

const Case kCases[] = {
    {"mobilenet_7x7", 2, 35, 7, 7, 1},
    {"plane_14", 2, 17, 14, 14, 1},
    {"plane_28", 2, 5, 28, 28, 1},
    {"rows3_w56", 2, 16, 3, 56, 1},
    {"rows3_w112", 1, 33, 3, 112, 1},
    {"one_pixel", 2, 1, 1, 1, 1},
    {"one_row", 2, 5, 1, 37, 1},
    {"one_column", 2, 5, 9, 1, 1},
    {"odd_13x9", 3, 17, 13, 9, 1},
    {"wide_130", 1, 5, 4, 130, 1},
    {"flush_inside_plane", 3, 1, 40, 40, 1},
    {"narrow_flush_inside_plane", 3, 2, 80, 13, 1},
    {"s2_7x7", 2, 35, 7, 7, 2},
    {"s2_14", 2, 17, 14, 14, 2},
    {"s2_28", 1, 16, 28, 28, 2},
    {"s2_rows4_w112", 1, 5, 4, 112, 2},
    {"s2_one_pixel", 2, 1, 1, 1, 2},
    {"s2_2x2", 2, 5, 2, 2, 2},
    {"s2_odd_13x9", 3, 17, 13, 9, 2},
    {"s2_wide_130", 1, 33, 3, 130, 2},
    {"s2_w31", 1, 5, 6, 31, 2},
    {"s2_w32", 1, 5, 5, 32, 2},
    {"s2_w33", 1, 5, 5, 33, 2},
    {"s2_flush_inside_plane", 2, 1, 80, 80, 2},
};

DwShape shapeOf(const Case &c) {
    DwShape s;
    s.N = c.N, s.C = c.C, s.H = c.H, s.W = c.W, s.kh = 3, s.kw = 3, s.sh = c.s, s.sw = c.s, s.ph = 1, s.pw = 1;
    s.Ho = (c.H - 1) / c.s + 1, s.Wo = (c.W - 1) / c.s + 1;
    return s;
}

cref::Conv refConv(const Case &c) {
    cref::Conv r;
    r.sd = 2, r.N = c.N, r.Cin = c.C, r.Cout = c.C, r.G = c.C;
    r.in = {c.H, c.W, 1};
    r.k = {3, 3, 1};
    r.s = {c.s, c.s, 1};
    r.pl = {1, 1, 0};
    r.pr = {1, 1, 0};
    return r;
}

// One run with the outputs of `mask` (bit 0 dx, 1 dw) and a scratch of NaN bytes; halves 0 / 1: the
// half-width rows off / on (DwDirect::set_half_width), dots 0 / 1: BF16 pairs by vdpbf16ps off / on
// (DwDirect::set_bf16_dots); -1: as the CPU has them.
Out runDirect(const Case &c, Dt dt, bool dxBf16, const Operand &dy, const Operand &x, const Operand &w, int mask, bool avx, int threads,
              int halves = -1, int dots = -1) {
    const DwShape s = shapeOf(c);
    EXPECT_TRUE(DwDirect::handles(s, dt)) << c.name;
    DwDirect k(s, dt);
    if (halves >= 0) k.set_half_width(halves == 1);
    if (dots >= 0) k.set_bf16_dots(dots == 1);
    return runPass(k, s, dxBf16, dy, x, w, mask, avx, threads, 0xff);
}

struct Data {
    Operand dy, x, w;
};
Data makeData(const Case &c, Dt dt, uint64_t seed, bool integers) {
    const DwShape s = shapeOf(c);
    acltest::Rng rng(seed);
    Data d;
    d.dy = makeOperand(s.N * s.C * s.Ho * s.Wo, dt, rng, integers);
    d.x = makeOperand(s.N * s.C * s.H * s.W, dt, rng, integers);
    d.w = makeOperand(s.C * 9, dt, rng, integers);
    return d;
}

// Both spellings against the reference, the AVX-512 one byte for byte against the scalar one.
void checkCase(const Case &c, Dt dt, const Data &d, bool integers, const std::vector<int> &masks, const std::string &what) {
    const cref::Grads ref = cref::backward(refConv(c), d.dy.value, d.x.value, d.w.value);
    for (const bool dxBf16 : dt == Dt::BF16 ? std::vector<bool>{false, true} : std::vector<bool>{false})
        for (const int mask : masks) {
            const std::string tag = std::string(c.name) + (dt == Dt::F32 ? " FLOAT" : " BF16") + what + (dxBf16 ? " dxBF16" : "") +
                                    " mask " + std::to_string(mask);
            const Out sc = runDirect(c, dt, dxBf16, d.dy, d.x, d.w, mask, false, 2);
            if (mask & 1) {
                EXPECT_TRUE(matches(floats(sc.dx, dxBf16), ref.gradInput, integers, dxBf16, "gradInput")) << tag;
            } else {
                EXPECT_TRUE(allCanary(sc.dx)) << tag;
            }
            if (mask & 2) {
                EXPECT_TRUE(matches(floats(sc.dw, false), ref.gradWeight, integers, false, "gradWeight")) << tag;
            } else {
                EXPECT_TRUE(allCanary(sc.dw)) << tag;
            }
            if (!hasAvx512()) continue;
            for (const int halves : {0, 1})  // both kernels of pitched planes, whatever this CPU takes
                for (const int dots : dt == Dt::BF16 ? std::vector<int>{0, 1} : std::vector<int>{0}) {  // and BF16 with and without pairs
                    const Out av = runDirect(c, dt, dxBf16, d.dy, d.x, d.w, mask, true, 2, halves, dots);
                    EXPECT_EQ(av.dx, sc.dx) << tag << " half-width " << halves << " dots " << dots;
                    EXPECT_EQ(av.dw, sc.dw) << tag << " half-width " << halves << " dots " << dots;
                }
        }
}

TEST(DwDirect, TakesExactlyItsShapes) {
    const Case mobilenet[] = {{"", 8, 32, 112, 112, 1}, {"", 8, 64, 112, 112, 2}, {"", 8, 128, 56, 56, 1},
                              {"", 8, 256, 28, 28, 2},  {"", 8, 512, 14, 14, 1},  {"", 8, 1024, 7, 7, 1}};
    for (const Case &c : mobilenet) EXPECT_TRUE(DwDirect::handles(shapeOf(c), Dt::BF16)) << c.W << " s" << c.s;
    const DwShape base = shapeOf({"", 2, 4, 9, 9, 1});
    auto rejects = [&](DwShape s, const char *why) { EXPECT_FALSE(DwDirect::handles(s, Dt::F32)) << why; };
    DwShape s = base;
    s.dh = s.dw = 2, s.ph = s.pw = 2;
    rejects(s, "dilation 2");
    s = base, s.kh = s.kw = 5, s.ph = s.pw = 2;
    rejects(s, "5x5");
    s = base, s.ph = s.pw = 0, s.Ho = s.Wo = 7;
    rejects(s, "padding 0");
    s = base, s.Ho = 10;
    rejects(s, "bottom padding 2");
    s = base, s.kw = 1, s.pw = 0;
    rejects(s, "3x1");
    s = shapeOf({"", 1, 1, 13, 13, 2}), s.sw = 1, s.Wo = 13;
    rejects(s, "strides 2 and 1");
    s = shapeOf({"", 1, 1, 257, 256, 1});
    rejects(s, "stride-1 plane over 2^16 elements");
    s = shapeOf({"", 1, 1, 13, 13, 3});
    rejects(s, "stride 3");
}

// The half-width rows are the CPU's choice (cpu_splits_avx512: AMD family 19h) until a test sets
// them; checkCase runs the AVX-512 spelling both ways on every CPU.
TEST(DwDirect, HalfWidthRowsWhereTheCpuSplitsVectors) {
    DwDirect k(shapeOf({"", 8, 16, 7, 7, 1}), Dt::F32);
    EXPECT_EQ(k.half_width(), conv::cpu_splits_avx512());
    k.set_half_width(!k.half_width());
    EXPECT_NE(k.half_width(), conv::cpu_splits_avx512());
}

// BF16 pairs by vdpbf16ps are the CPU's choice (cpu_prefers_bf16_dots: AMD's) until a test sets
// them; checkCase runs the BF16 AVX-512 spelling both ways on every CPU.
TEST(DwDirect, Bf16PairsWhereTheCpuPrefersThem) {
    DwDirect k(shapeOf({"", 8, 16, 14, 14, 1}), Dt::BF16);
    EXPECT_EQ(k.bf16_dots(), conv::cpu_prefers_bf16_dots());
    k.set_bf16_dots(!k.bf16_dots());
    EXPECT_NE(k.bf16_dots(), conv::cpu_prefers_bf16_dots());
}

TEST(DwDirect, VectorMatchesScalarAndReference) {
    uint64_t seed = 100;
    for (const Case &c : kCases)
        for (const Dt dt : {Dt::F32, Dt::BF16})
            for (const bool integers : {true, false})
                checkCase(c, dt, makeData(c, dt, seed++, integers), integers, {1, 2, 3}, integers ? " int" : " rand");
}

// Every width from 1 to 130 (row ends at every lane, vectors crossing rows at every offset).
TEST(DwDirect, EveryWidth) {
    uint64_t seed = 500;
    for (int64_t s = 1; s <= 2; ++s)
        for (int64_t W = 1; W <= 130; ++W) {
            const Case c{"width", 1, 1 + W % 3, 1 + W % 5, W, s};
            for (const Dt dt : {Dt::F32, Dt::BF16}) {
                const bool integers = W % 2 == 0;
                checkCase(c, dt, makeData(c, dt, seed++, integers), integers, {3},
                          " W " + std::to_string(W) + " s" + std::to_string(s) + (integers ? " int" : " rand"));
            }
        }
}

// FLOAT rows wider than a vector take the wide kernels (their tap vectors shifted out of the plane's
// own vectors, a kernel per W % 16): every remainder, on planes tall enough that most vectors are in
// the kernels' body and a FLOAT sum moves into double (kFlush) in the body, at its edges and in the
// last rows; the head and tail vectors take the table's masks.
TEST(DwDirect, WideRowsEveryRemainder) {
    uint64_t seed = 700;
    for (int64_t R = 0; R < 16; ++R) {
        const int64_t W = 16 + R + 16 * (R % 3), H = 9 + R;
        const Case c{"wide", 2, 3, H, W, 1};
        const std::string tag = " W " + std::to_string(W) + " H " + std::to_string(H);
        for (const bool integers : {true, false})
            checkCase(c, Dt::F32, makeData(c, Dt::F32, seed++, integers), integers, {1, 2, 3}, tag + (integers ? " int" : " rand"));
        // Non-finite values in the vectors where a row ends and the next begins, in the first and
        // last rows (the vectors the body must leave to the table's row masks).
        Data d = makeData(c, Dt::F32, seed++, false);
        for (int64_t q = 0; q < c.N * c.C; ++q) {
            const int64_t at = q * H * W;
            switch (q % 3) {
                case 0: setElement(d.dy, Dt::F32, at + W - 1, INFINITY); break;        // gradient, end of the first row
                case 1: setElement(d.dy, Dt::F32, at + (H - 1) * W, -INFINITY); break;  // gradient, start of the last row
                default: setElement(d.x, Dt::F32, at + W, NAN); break;                  // input, start of the second row
            }
        }
        checkCase(c, Dt::F32, d, false, {3}, tag + " non-finite");
    }
}

// Infinities and NaN on the plane's border rows and columns, in gradOutput, input and weights: taps
// reaching into the padding are skipped, so the results are what the reference gives (an infinity
// where it has one, never a NaN from 0 * inf).
TEST(DwDirect, NonFiniteNextToPadding) {
    for (const Case &c : {Case{"inf", 2, 5, 7, 7, 1}, Case{"inf", 1, 7, 5, 18, 1}, Case{"inf", 2, 5, 6, 14, 1}, Case{"inf", 2, 7, 14, 14, 1}, Case{"inf", 1, 7, 5, 9, 1},
                          Case{"inf", 1, 7, 3, 16, 1}, Case{"inf", 1, 7, 5, 19, 1}, Case{"inf", 1, 7, 4, 35, 1},
                          Case{"inf", 2, 5, 7, 9, 2},
                          Case{"inf", 1, 7, 6, 34, 2}, Case{"inf", 2, 7, 9, 13, 2}, Case{"inf", 1, 7, 5, 37, 2}})
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            Data d = makeData(c, dt, 900, false);
            const DwShape s = shapeOf(c);
            auto put = [&](Operand &o, int64_t i, double v) { setElement(o, dt, i, v); };
            const double inf = INFINITY;
            for (int64_t ch = 0; ch < s.N * s.C; ++ch) {
                const int64_t gy = ch * s.Ho * s.Wo, gx = ch * s.H * s.W;
                switch (ch % 7) {  // one border position per plane, a different one each time
                    case 0: put(d.dy, gy, inf); break;                                        // gradient corner
                    case 1: put(d.x, gx + s.W - 1, -inf); break;                              // input top right
                    case 2: put(d.dy, gy + (s.Ho - 1) * s.Wo + s.Wo / 2, inf); break;        // gradient bottom row
                    case 3: put(d.x, gx + (s.H / 2) * s.W, NAN); break;                       // input left column
                    case 4: put(d.dy, gy + (s.Ho / 2) * s.Wo + s.Wo - 1, -inf); break;       // gradient right column
                    case 5: put(d.dy, gy + s.Ho * s.Wo - 1, inf); break;                      // gradient bottom right
                    default: put(d.x, gx + s.H * s.W - 1, inf); break;                        // input bottom right
                }
            }
            put(d.w, 0, inf);       // channel 0 tap (0, 0)
            put(d.w, 9 + 8, -inf);  // channel 1 tap (2, 2)
            put(d.w, 18 + 5, inf);  // channel 2 tap (1, 2)
            checkCase(c, dt, d, false, {3}, " non-finite");
        }
}

// NaNs of different payloads and signs, infinities and zeros all over the operands: where NaNs meet
// in a sum, the AVX-512 spelling keeps the same one as the scalar spelling (every multiply-add is
// acp::fma_ordered, in the same order per element), byte for byte, in every kernel of both strides.
TEST(DwDirect, NaNPayloadsSameOnBothSpellings) {
    if (!hasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU: only the scalar spelling runs";
    uint64_t seed = 4100;
    int64_t nanResults = 0;
    for (const Case &c : kCases)
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            Data d = makeData(c, dt, seed++, false);
            acltest::Rng rng(seed++);
            sprinkleSpecials(d.dy, dt, rng, 6);
            sprinkleSpecials(d.x, dt, rng, 6);
            sprinkleSpecials(d.w, dt, rng, 4);
            for (const bool dxBf16 : dt == Dt::BF16 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                const std::string tag = std::string(c.name) + (dt == Dt::F32 ? " FLOAT" : " BF16") + (dxBf16 ? " dxBF16" : "");
                const Out sc = runDirect(c, dt, dxBf16, d.dy, d.x, d.w, 3, false, 2);
                for (const double v : floats(sc.dx, dxBf16)) nanResults += std::isnan(v);
                for (const double v : floats(sc.dw, false)) nanResults += std::isnan(v);
                for (const int halves : {0, 1}) {
                    const Out av = runDirect(c, dt, dxBf16, d.dy, d.x, d.w, 3, true, 2, halves);
                    EXPECT_EQ(av.dx, sc.dx) << tag << " half-width " << halves;
                    EXPECT_EQ(av.dw, sc.dw) << tag << " half-width " << halves;
                }
            }
        }
    EXPECT_GT(nanResults, 1000);
}

// BF16 stride-1 planes (pitched, by rows, strips) take their gradInput taps two at a time by
// vdpbf16ps when every gradient value and weight is 0 or finite and not tiny: a weight pair's +0
// half, and columns and rows outside the plane loaded as +0, then add +-0 products. Gradients and
// weights full of +0 and -0 next to small integers, at widths of every kernel with every kind of
// edge and heights 1 to 9: the same bytes as the scalar spelling (whose sums from +0 skip those
// taps) and the reference's values.
TEST(DwDirect, Bf16PairedTapsWithSignedZeros) {
    uint64_t seed = 3100;
    for (const int64_t W : {5, 6, 7, 9, 14, 15, 16, 17, 31, 32, 33, 40, 56, 63, 64, 65, 112}) {
        const Case c{"signed_zeros", 2, 3, 1 + W % 9, W, 1};
        Data d = makeData(c, Dt::BF16, seed++, true);
        acltest::Rng rng(seed++);
        auto zeros = [&](Operand &o) {
            for (size_t i = 0; i < o.value.size(); ++i) {
                const int64_t r = rng.integer(0, 3);
                if (r < 2) setElement(o, Dt::BF16, static_cast<int64_t>(i), r == 0 ? 0.0 : -0.0);
            }
        };
        zeros(d.dy);
        zeros(d.w);
        checkCase(c, Dt::BF16, d, true, {1, 3}, " W " + std::to_string(W));
    }
}

// Every tensor flush against an inaccessible page, on one side and then the other: a read or write
// one element outside a tensor (a vector load past a row's end, a store's mask one lane too wide)
// crashes the test. Every width 1-70 (pitched planes, flattened planes, one and two strips with
// every tail) at both strides, both dtypes, both spellings (the AVX-512 one with the half-width rows
// off and on); the bytes are those of an ordinary run.
TEST(DwDirect, TouchesNothingOutsideItsTensors) {
    for (int64_t st = 1; st <= 2; ++st)
        for (int64_t W = 1; W <= 70; ++W)
            for (const Dt dt : {Dt::F32, Dt::BF16}) {
                const Case c{"guarded", 1, 2, 5, W, st};
                const DwShape s = shapeOf(c);
                const Data d = makeData(c, dt, 3000 + static_cast<uint64_t>(W), false);
                for (const bool dxBf16 : dt == Dt::BF16 ? std::vector<bool>{false, true} : std::vector<bool>{false})
                    for (const bool avx : hasAvx512() ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                        const std::string tag = "W " + std::to_string(W) + " s" + std::to_string(st) + (dt == Dt::F32 ? " FLOAT" : " BF16") +
                                                (dxBf16 ? " dxBF16" : "") + (avx ? " avx512" : " scalar");
                        const Out want = runDirect(c, dt, dxBf16, d.dy, d.x, d.w, 3, avx, 1);
                        for (const int at : {0, 1, 2, 3}) {  // (the start, the end) x (half-width rows off, on)
                            const bool atEnd = at % 2 == 1;
                            const size_t dxBytes = want.dx.size(), dwBytes = want.dw.size();
                            const acltest::GuardedPages gdy(d.dy.bytes.size()), gx(d.x.bytes.size()), gw(d.w.bytes.size()), gdx(dxBytes),
                                gdw(dwBytes);
                            conv::DwBlocked::Io io;
                            io.dy = gdy.place(d.dy.bytes.data(), d.dy.bytes.size(), atEnd);
                            io.x = gx.place(d.x.bytes.data(), d.x.bytes.size(), atEnd);
                            io.w = gw.place(d.w.bytes.data(), d.w.bytes.size(), atEnd);
                            io.dx = atEnd ? gdx.end_flush(dxBytes) : gdx.data();
                            io.dx_bf16 = dxBf16;
                            io.dw = static_cast<float *>(atEnd ? gdw.end_flush(dwBytes) : gdw.data());
                            ASSERT_TRUE(io.dy && io.x && io.w && io.dx && io.dw) << "mmap failed";
                            DwDirect k(s, dt);
                            k.set_half_width(at >= 2);
                            runIo(k, io, avx, 1, 0xff);
                            const auto *dx = static_cast<const uint8_t *>(io.dx);
                            const auto *dw = reinterpret_cast<const uint8_t *>(io.dw);
                            const std::string where = std::string(atEnd ? " at the end" : " at the start") + (at >= 2 ? " half-width" : "");
                            EXPECT_EQ(std::vector<uint8_t>(dx, dx + dxBytes), want.dx) << tag << where;
                            EXPECT_EQ(std::vector<uint8_t>(dw, dw + dwBytes), want.dw) << tag << where;
                        }
                    }
            }
}

// Streamed gradInput stores (FLOAT flattened planes of whole vectors into a 64-byte aligned dx): the
// same bytes as plain stores, nothing outside dx touched (flush against either guard page); a dx
// that is not aligned is stored plainly. On by size for MobileNet's 8x128x56x56 layer, never where
// the planes are not whole vectors or the stride is 2.
TEST(DwDirect, StreamedGradInputSameBytes) {
    EXPECT_TRUE(DwDirect(shapeOf({"mobilenet_56", 8, 128, 56, 56, 1}), Dt::F32).streamed_stores());
    EXPECT_FALSE(DwDirect(shapeOf(kCases[2]), Dt::F32).streamed_stores());
    for (const Case &c : {kCases[3], kCases[14], Case{"s2_32x32", 1, 3, 32, 32, 2}}) {
        DwDirect k(shapeOf(c), Dt::F32);
        k.set_streamed_stores(true);
        EXPECT_FALSE(k.streamed_stores()) << c.name;
    }
    if (!hasAvx512()) return;  // (the scalar spelling has no streamed stores; the checks above hold there too)
    const Case cases[] = {kCases[2], kCases[10], {"flat_32x48", 2, 3, 32, 48, 1}, {"flat_16x4", 2, 3, 16, 4, 1}};
    for (const Case &c : cases)
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const DwShape s = shapeOf(c);
            const Data d = makeData(c, dt, 4100, false);
            const Out want = runDirect(c, dt, false, d.dy, d.x, d.w, 3, true, 2);
            const size_t dxBytes = want.dx.size();
            ASSERT_EQ(dxBytes % 64, 0u) << c.name;
            DwDirect k(s, dt);
            k.set_streamed_stores(true);
            ASSERT_TRUE(k.streamed_stores()) << c.name;
            const std::string tag = std::string(c.name) + (dt == Dt::F32 ? " FLOAT" : " BF16");
            for (const int where : {0, 1, 2}) {  // flush against the front guard page, the back one, 4 bytes past a line
                const acltest::GuardedPages gdx(dxBytes + 64);
                std::vector<uint8_t> dw(want.dw.size());
                conv::DwBlocked::Io io;
                io.dy = d.dy.bytes.data(), io.x = d.x.bytes.data(), io.w = d.w.bytes.data();
                io.dx = where == 0 ? gdx.data() : where == 1 ? gdx.end_flush(dxBytes) : static_cast<uint8_t *>(gdx.data()) + 4;
                io.dw = reinterpret_cast<float *>(dw.data());
                ASSERT_NE(io.dx, nullptr) << "mmap failed";
                runIo(k, io, true, 2, 0xff);
                const auto *dx = static_cast<const uint8_t *>(io.dx);
                EXPECT_EQ(std::vector<uint8_t>(dx, dx + dxBytes), want.dx) << tag << " at " << where;
                EXPECT_EQ(dw, want.dw) << tag << " at " << where;
            }
        }
}

// Pitched planes (5 to 7 columns, at most 8 rows: whole planes in registers, masks by column and
// edge row) and their neighbours either side (4 and 8 columns, 9 rows): every height 1-9 at widths
// 4-8, with images enough that the FLOAT lane sums move into double inside a channel (kFlush).
TEST(DwDirect, PitchedPlanesEveryHeight) {
    uint64_t seed = 1500;
    for (int64_t W = 4; W <= 8; ++W)
        for (int64_t H = 1; H <= 9; ++H) {
            const Case c{"pitched", 37, 3, H, W, 1};
            for (const Dt dt : {Dt::F32, Dt::BF16})
                for (const bool integers : {true, false})
                    checkCase(c, dt, makeData(c, dt, seed++, integers), integers, {1, 2, 3},
                              " H " + std::to_string(H) + " W " + std::to_string(W) + (integers ? " int" : " rand"));
        }
}

// Pitched planes with one non-finite operand per plane at every position in turn, the other
// planes of the channel finite: a tap reaching it from the padding side stays skipped (no NaN from
// 0 * inf), the channel's other taps keep their bits (same as the scalar spelling, the reference
// where it is finite).
TEST(DwDirect, PitchedPlanesNonFiniteEverywhere) {
    for (const int64_t H : {7, 6, 8})
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const Case c{"pitched_inf", 3, H * 7, H, 7, 1};
            Data d = makeData(c, dt, 1700 + static_cast<uint64_t>(H), false);
            const DwShape s = shapeOf(c);
            auto put = [&](Operand &o, int64_t i, double v) { setElement(o, dt, i, v); };
            const int64_t P = H * 7;
            for (int64_t ch = 0; ch < s.C; ++ch) {  // image 0: gradient position ch; image 1: input position ch; image 2 finite
                put(d.dy, ch * P + ch, ch % 2 ? -INFINITY : INFINITY);
                put(d.x, (s.C + ch) * P + ch, ch % 3 ? INFINITY : NAN);
            }
            for (int64_t t = 0; t < 9; ++t) put(d.w, t * 10, t % 2 ? INFINITY : -INFINITY);  // channel t: tap t
            const cref::Grads ref = cref::backward(refConv(c), d.dy.value, d.x.value, d.w.value);
            // the taps of a channel that no non-finite operand reaches stay finite: some must
            size_t finite = 0;
            for (const double v : ref.gradWeight) finite += std::isfinite(v) ? 1 : 0;
            EXPECT_GT(finite, 0u);
            checkCase(c, dt, d, false, {3}, " pitched non-finite H " + std::to_string(H));
        }
}

// BF16 gradInput is rounded by the CPU's vcvtneps2bf16 (which reads subnormals as zero) only in
// planes whose sums cannot be subnormal (gradient and weights 0 or >= 2^-56): planes of tiny values
// (both operands, or the gradient alone next to weights of a normal size) whose sums are subnormal
// keep them (the integer rounding, same bytes as the scalar spelling), and values at the bound
// (exponent 2^-56, any mantissa and sign) take the CPU's rounding with the same bytes. Both kinds
// of plane side by side in one tensor (a task then checks its planes one by one, not all at once),
// at stride 1 (pitched, flattened, by rows, strips) and stride 2.
TEST(DwDirect, Bf16RoundingOfTinySums) {
    if (!hasAvx512()) GTEST_SKIP() << "no AVX-512: one spelling only";
    auto put = [](Operand &o, int64_t i, double v) { setElement(o, Dt::BF16, i, v); };
    uint64_t seed = 2100;
    for (const Case &c : {Case{"tiny_7x7", 2, 9, 7, 7, 1}, Case{"tiny_9x9", 2, 9, 9, 9, 1}, Case{"tiny_14", 2, 9, 14, 14, 1},
                          Case{"tiny_w40", 2, 9, 5, 40, 1}, Case{"tiny_s2_28", 2, 9, 28, 28, 2}})
        for (const char *mode : {"tiny", "tiny gradient", "bound"}) {
            const bool bound = std::string(mode) == "bound", gradientOnly = std::string(mode) == "tiny gradient";
            const DwShape s = shapeOf(c);
            Data d = makeData(c, Dt::BF16, seed++, false);
            acltest::Rng rng(seed++);
            const int64_t Po = s.Ho * s.Wo;
            // odd channels keep their values; even ones: tiny (sums ~2^-130: both operands tiny, or
            // the gradient alone, its weights of a normal size) or at the bound
            auto scaled = [&](double v, double tinyScale) {
                if (!bound) return v * tinyScale;
                const double m = 1.0 + static_cast<double>(static_cast<int>(rng.uniform(0.0, 128.0))) / 128.0;
                return (v < 0 ? -m : m) * std::ldexp(1.0, -56);
            };
            for (int64_t q = 0; q < s.N * s.C; ++q) {
                if (q % s.C % 2 != 0) continue;
                for (int64_t i = 0; i < Po; ++i)
                    put(d.dy, q * Po + i, scaled(d.dy.value[static_cast<size_t>(q * Po + i)], std::ldexp(1.0, gradientOnly ? -100 : -75)));
            }
            for (int64_t ch = 0; ch < s.C; ch += 2)
                for (int64_t t = 0; t < 9; ++t)
                    put(d.w, ch * 9 + t, scaled(d.w.value[static_cast<size_t>(ch * 9 + t)], std::ldexp(1.0, gradientOnly ? -30 : -55)));
            const Out sc = runDirect(c, Dt::BF16, true, d.dy, d.x, d.w, 1, false, 2);
            const Out av = runDirect(c, Dt::BF16, true, d.dy, d.x, d.w, 1, true, 2);
            EXPECT_EQ(av.dx, sc.dx) << c.name << " " << mode;
            // the tiny planes do have subnormal results (what the CPU's rounding would have lost)
            size_t subnormal = 0;
            for (size_t i = 0; i + 1 < sc.dx.size(); i += 2) {
                const uint16_t h = static_cast<uint16_t>(sc.dx[i] | sc.dx[i + 1] << 8);
                subnormal += (h & 0x7f80) == 0 && (h & 0x7f) != 0 ? 1 : 0;
            }
            if (!bound) {
                EXPECT_GT(subnormal, 0u) << c.name << " " << mode;
            } else {
                EXPECT_EQ(subnormal, 0u) << c.name << " " << mode;
            }
        }
}

TEST(DwDirect, SameBytesAtAnyThreadCount) {
    for (const Case &c : {kCases[0], kCases[1], kCases[2], kCases[10], kCases[11], kCases[13], kCases[14], kCases[23], Case{"pitched_flush", 37, 9, 7, 7, 1}})
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const Data d = makeData(c, dt, 7, false);
            const bool avx = hasAvx512();
            const Out first = runDirect(c, dt, false, d.dy, d.x, d.w, 3, avx, 1);
            for (int threads : {2, 3}) {
                const Out o = runDirect(c, dt, false, d.dy, d.x, d.w, 3, avx, threads);
                EXPECT_EQ(o.dx, first.dx) << c.name << " threads " << threads;
                EXPECT_EQ(o.dw, first.dw) << c.name << " threads " << threads;
            }
        }
}

}  // namespace
