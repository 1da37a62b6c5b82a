// White-box test of the kernels (compiled into this test from the plugin's sources): the scalar and
// the AVX-512 paths, plain and streaming stores, give the same bytes on the same data - random
// masks with -1, several bits per output, bits into the padding, NaN gradients, strided views - and
// report the same first bad index. Skipped paths are impossible here: without AVX-512 the test
// still compares the scalar path against itself at other thread partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "maxpool_backward.hpp"
#include "maxpool_forward.hpp"
#include "maxpool_rows.hpp"

namespace {

using namespace mpool;

struct Rand {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        return s;
    }
    int64_t in(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

struct Aligned {  // 64-byte aligned bytes, all `fill`
    std::vector<uint8_t> buf;
    uint8_t *p = nullptr;
    explicit Aligned(size_t n, uint8_t fill = 0) : buf(n + 64, fill) {
        p = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    }
};

// Scratch starts as this (a huge float, a huge index): a workspace is never zeroed for the kernel,
// so a path that read scratch it had not written would change its results or fault.
constexpr uint8_t kPoison = 0x7f;

const Geometry kGeoms[] = {
    {2, 3, 9, 9, 5, 5, 3, 3, 2, 2, 1, 1},       // k3 s2 p1
    {1, 2, 10, 7, 6, 6, 3, 2, 2, 1, 1, 0},      // ceil mode k3x2 s2x1 (partial last window)
    {1, 2, 11, 37, 3, 13, 2, 4, 4, 3, 0, 2},    // gaps between windows, wide
    {1, 1, 5, 40, 5, 40, 5, 5, 1, 1, 2, 2},     // k5 s1 p2: many windows per element
    {1, 2, 20, 9, 4, 5, 17, 3, 1, 2, 0, 1},     // kH 17: scalar int32 decode
    {1, 2, 6, 45, 6, 26, 1, 20, 1, 1, 0, 0},    // kW 20 at stride 1: too wide to gather, the AVX-512 ring path
    {1, 2, 7, 70, 7, 35, 3, 5, 1, 2, 1, 2},     // stride (1, 2), Wo 35: two vectors and a tail
    {2, 1, 12, 61, 4, 20, 4, 4, 3, 3, 1, 0},    // stride 3: the forward gathers its inputs
    // k2 s2 (the backward's tile path): Wo a multiple of 16 with a column no window reaches, pads,
    // odd widths and tails, row overlap (kH 3 at sH 1), kH at run time, a clipped last window
    {1, 2, 10, 33, 5, 16, 2, 2, 2, 2, 0, 0},
    {2, 2, 9, 37, 5, 19, 2, 2, 2, 2, 1, 1},
    {1, 2, 7, 70, 7, 36, 3, 2, 1, 2, 1, 1},
    {1, 1, 12, 20, 6, 10, 5, 2, 2, 2, 2, 0},
    {1, 3, 7, 9, 4, 5, 2, 2, 2, 2, 0, 0},
    {1, 1, 3, 130, 2, 65, 2, 2, 2, 2, 1, 1},
    // k3 s2 p1 with 16-bit rows of 96 bytes: streamed pieces held back a row to end on whole lines
    {2, 3, 9, 48, 5, 24, 3, 3, 2, 2, 1, 1},
    // the parity path (k3 s2 p1, k2 s2 p0): several 32-column blocks, a partial last block, ceil
    // mode's last window reaching past the input (rows and columns), rows of 64-byte multiples
    {2, 2, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1},
    {1, 2, 13, 70, 7, 36, 3, 3, 2, 2, 1, 1},
    {1, 1, 14, 33, 8, 17, 3, 3, 2, 2, 1, 1},
    {2, 2, 8, 112, 4, 56, 2, 2, 2, 2, 0, 0},
    {1, 1, 9, 65, 5, 33, 2, 2, 2, 2, 0, 0},
    {1, 2, 6, 70, 3, 35, 2, 2, 2, 2, 0, 0},
    // k3 s2 p1 16-bit rows the blocks stream themselves (stream16_rows): W % 32 == 0 (every row on
    // a line), W 16 (half a line per row), W 80 (odd rows half a line in, a half block at the end)
    {1, 3, 8, 64, 4, 32, 3, 3, 2, 2, 1, 1},
    {1, 2, 6, 16, 3, 8, 3, 3, 2, 2, 1, 1},
    {1, 2, 10, 80, 5, 40, 3, 3, 2, 2, 1, 1},
    // the parity path's k3 s2 p0 (mirrored: the left neighbour's column 2): odd and even sizes,
    // ceil mode's last window past the input (rows and columns), several blocks and a partial one,
    // 16-bit rows the blocks stream themselves (W 64, H == 2 Ho), 112 columns; 20 planes: more
    // than a part's one (8 parts per thread), so a part's ring goes from one plane to the next
    {2, 10, 9, 9, 4, 4, 3, 3, 2, 2, 0, 0},
    {1, 2, 8, 8, 4, 4, 3, 3, 2, 2, 0, 0},
    {1, 2, 13, 57, 6, 28, 3, 3, 2, 2, 0, 0},
    {1, 2, 28, 28, 14, 14, 3, 3, 2, 2, 0, 0},
    {1, 3, 8, 64, 4, 32, 3, 3, 2, 2, 0, 0},
    {1, 2, 7, 80, 3, 40, 3, 3, 2, 2, 0, 0},
    {1, 1, 5, 112, 2, 55, 3, 3, 2, 2, 0, 0},
    {1, 2, 3, 3, 1, 1, 3, 3, 2, 2, 0, 0},
    // k3 s2 p1 rows ending in a block of at most 8 outputs: 112 columns (8 outputs) and an odd
    // number of output rows, odd H (the last output row has no ring row), odd W (a partial last
    // column pair), a one-output last block
    {1, 3, 14, 112, 7, 56, 3, 3, 2, 2, 1, 1},
    {1, 2, 15, 48, 8, 24, 3, 3, 2, 2, 1, 1},
    {1, 2, 13, 45, 7, 23, 3, 3, 2, 2, 1, 1},
    {2, 1, 10, 34, 5, 17, 3, 3, 2, 2, 1, 1},
    // stride 1: k3 p1 (W == Wo), wider rows (W != Wo), a kernel wider than the input, k2
    {2, 3, 7, 7, 7, 7, 3, 3, 1, 1, 1, 1},
    {1, 2, 9, 40, 7, 38, 3, 3, 1, 1, 0, 0},
    {1, 2, 3, 2, 3, 2, 3, 3, 1, 1, 1, 1},
    {1, 1, 6, 21, 5, 20, 2, 2, 1, 1, 0, 0},
    // stride 1 on the gather path: 28 columns (two blocks, the second partial) and 13 rows (four
    // input rows a step, one left over), three 32-column steps, k7x6 (the loops at run time,
    // uneven pads), kW 16 (lanes 15 columns left of their element), W <= 16 (one block a step)
    {2, 3, 13, 28, 13, 28, 3, 3, 1, 1, 1, 1},
    {1, 2, 10, 70, 10, 70, 3, 3, 1, 1, 1, 1},
    {1, 1, 12, 20, 12, 19, 7, 6, 1, 1, 3, 2},
    {1, 1, 4, 40, 4, 25, 1, 16, 1, 1, 0, 0},
    {1, 2, 5, 9, 3, 7, 3, 3, 1, 1, 0, 0},
};

// The backward's code paths, each of which must give the same bits: 0 scalar; 1 AVX-512 with the
// parity, gather, small-plane and tile paths where they apply (the default); 2 AVX-512 per output;
// 3 AVX-512 with the tile path only; 4 AVX-512 with the small-plane path also where the parity and
// gather paths would apply; 5 AVX-512 with the gather path only.
constexpr int kPaths = 6;
void set_path(BackwardKernel &k, int path) {
    k.set_isa(path == 0 ? Isa::Scalar : Isa::Avx512);
    k.set_stride2_tiles(path == 1 || path == 3);
    k.set_parity(path == 1);
    k.set_small_planes(path == 1 || path == 4);
    k.set_gather(path == 1 || path == 5);
}

void fill_f32_bits(std::vector<uint16_t> &v, DType dt, Rand &r, bool with_nan) {
    for (auto &x : v) {
        const float f = static_cast<float>(r.in(-3000, 3000)) / 128.0f;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        x = dt == DType::F16 ? static_cast<uint16_t>(0x3c00 + r.in(-2000, 2000)) : static_cast<uint16_t>(u >> 16);
        if (with_nan && r.in(0, 40) == 0) x = dt == DType::F16 ? 0x7e01 : 0x7fc1;
    }
}

// gradOutput bytes for dt with w stride go_ws (1: dense, which some paths read in place), a random
// valid-or-not mask, and every path's outputs, gradInput gi_offset bytes past a 64-byte line.
void compare_backward(const Geometry &g, DType dt, bool fp16, MaskLayout layout, bool corrupt, int64_t go_ws,
                      int64_t gi_offset = 0) {
    Rand r{0x9E3779B97F4A7C15ull + static_cast<uint64_t>(g.W * 131 + g.H)};
    const int64_t es = elem_size(dt), outs = g.planes() * g.Ho * g.Wo, ins = g.planes() * g.H * g.W;
    const int64_t gi_ws = 1;  // gradInput dense
    std::vector<uint8_t> go(static_cast<size_t>(outs * go_ws * es));
    if (dt == DType::F32) {
        // NaNs of three payloads and signs, -0.0 and +0.0 among them: the paths add in the same
        // order with the same operands, so even the NaN bits agree.
        const uint32_t specials[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0x80000000u, 0x00000000u, 0x80000000u};
        for (int64_t i = 0; i < outs * go_ws; ++i) {
            float f = static_cast<float>(r.in(-100000, 100000)) * 1e-3f;
            if (r.in(0, 30) == 0) {
                const uint32_t u = specials[r.in(0, 5)];
                std::memcpy(&f, &u, 4);
            }
            std::memcpy(go.data() + i * 4, &f, 4);
        }
    } else {
        std::vector<uint16_t> h(static_cast<size_t>(outs * go_ws));
        fill_f32_bits(h, dt, r, true);
        for (auto &x : h)
            if (r.in(0, 40) == 0) x = 0x8000;  // -0.0
        std::memcpy(go.data(), h.data(), go.size());
    }
    const int64_t mask_bytes = g.planes() * mask_plane_bytes(g), row = mask_row_bytes(g.Ho, g.Wo);
    std::vector<uint8_t> mask(static_cast<size_t>(mask_bytes), 0);
    for (int64_t p = 0; p < g.planes(); ++p)
        for (int64_t j = 0; j < g.Ho * g.Wo; ++j) {
            const int64_t oh = j / g.Wo, ow = j % g.Wo;
            if (layout == MaskLayout::Int32) {
                int32_t v = static_cast<int32_t>(r.in(g.row_lo(oh), g.row_hi(oh) - 1) * g.W + r.in(g.col_lo(ow), g.col_hi(ow) - 1));
                if (r.in(0, 9) == 0) v = -1;
                std::memcpy(mask.data() + (p * g.Ho * g.Wo + j) * 4, &v, 4);
            } else {
                const int64_t bits = r.in(0, 20) == 0 ? 3 : 1;  // some outputs with several bits, some into padding
                for (int64_t b = 0; b < bits; ++b) {
                    const int64_t k = r.in(0, g.kH * g.kW - 1);
                    mask[static_cast<size_t>((p * g.kH * g.kW + k) * row + j / 8)] |= static_cast<uint8_t>(1u << (j % 8));
                }
            }
        }
    int64_t first_bad = outs / 2;
    if (corrupt && layout == MaskLayout::Int32) {  // bad indices: the first in output order is reported
        const int32_t bad = static_cast<int32_t>(g.H * g.W);
        std::memcpy(mask.data() + (outs - 1) * 4, &bad, 4);
        std::memcpy(mask.data() + (outs / 2) * 4, &bad, 4);
        // Output (1, 0) naming the last column of one of its window rows: a valid flat index, and
        // with padding exactly where column -1 of that row would be - outside the window all the same.
        if (g.Ho >= 2 && g.col_hi(0) < g.W && g.Wo < outs / 2) {
            const int32_t alias = static_cast<int32_t>(g.row_lo(1) * g.W + g.W - 1);
            std::memcpy(mask.data() + g.Wo * 4, &alias, 4);
            first_bad = g.Wo;
        }
        // Output (0, 1) naming a column of its window in window row 0, which at top padding lies
        // above the input: a negative index, bad on every path (not -1, the "no maximum").
        if (g.pH > 0 && g.Wo >= 2 && outs / 2 > 1 && g.col_hi(1) > g.col_lo(1)) {
            const int32_t above = static_cast<int32_t>(-g.pH * g.W + g.col_lo(1));
            if (above != -1) {
                std::memcpy(mask.data() + 4, &above, 4);
                first_bad = 1;
            }
        }
    }
    const View4 gov{g.C * g.Ho * g.Wo * go_ws, g.Ho * g.Wo * go_ws, g.Wo * go_ws, go_ws};
    const View4 giv{g.C * g.H * g.W, g.H * g.W, g.W, gi_ws};
    std::vector<std::vector<uint8_t>> results;
    std::vector<BadIndex> bads;
    // every path (set_path) at 1, 2, 3 partitions, plain and streamed stores
    for (int variant = 0; variant < 3 * kPaths; ++variant) {
        const int path = variant % kPaths;
        if (path != 0 && !cpu_has_avx512()) continue;
        const int64_t slots = 1 + variant / kPaths;
        BackwardKernel k(g, dt, fp16, layout, slots);
        set_path(k, path);
        k.set_store_mode((path + slots) % 2 == 1 ? StoreMode::Streaming : StoreMode::Plain);
        Aligned scratch(k.scratch_bytes(), kPoison), gi_buf(static_cast<size_t>(ins * es + gi_offset));
        uint8_t *const gi = gi_buf.p + gi_offset;
        std::memset(gi, 0x5a, static_cast<size_t>(ins * es));  // (an element a path leaves out keeps it)
        BadIndex bad;
        const bool ok = k.run(go.data(), gov, mask.data(), gi, giv, scratch.p, &bad);
        EXPECT_EQ(ok, !(corrupt && layout == MaskLayout::Int32));
        bads.push_back(bad);
        if (ok) results.emplace_back(gi, gi + ins * es);
    }
    ASSERT_FALSE(bads.empty());
    for (size_t i = 1; i < results.size(); ++i) EXPECT_TRUE(results[i] == results[0]) << "variant " << i << " differs";
    for (const BadIndex &b : bads) {
        EXPECT_EQ(b.plane, bads[0].plane);
        EXPECT_EQ(b.j, bads[0].j);
    }
    if (corrupt && layout == MaskLayout::Int32) {
        EXPECT_EQ(bads[0].plane * g.Ho * g.Wo + bads[0].j, first_bad);
    }
}

TEST(MaxPool2dWithMaskKernels, ScalarAndAvx512BackwardAgree) {
    for (const Geometry &g : kGeoms)
        for (MaskLayout layout : {MaskLayout::Int32, MaskLayout::Bits})
            for (int d = 0; d < 4; ++d) {
                const DType dt = d == 1 ? DType::F16 : d == 2 ? DType::BF16 : DType::F32;
                SCOPED_TRACE(::testing::Message() << "W " << g.W << " layout " << static_cast<int>(layout) << " dt " << d);
                for (int64_t go_ws : {1, 2}) {
                    compare_backward(g, dt, d == 3, layout, false, go_ws);
                    compare_backward(g, dt, d == 3, layout, true, go_ws);
                }
            }
}

// The 16-bit k3 rows the blocks stream themselves need a plane on a 64-byte line; gradInput half a
// line or one element off it takes the stage's line stream instead - the same bytes either way.
TEST(MaxPool2dWithMaskKernels, StreamedSixteenBitRowsAtAnyAlignment) {
    const Geometry geoms[] = {{2, 2, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1}, {1, 3, 8, 64, 4, 32, 3, 3, 2, 2, 1, 1},
                              {1, 2, 6, 16, 3, 8, 3, 3, 2, 2, 1, 1}, {1, 2, 10, 80, 5, 40, 3, 3, 2, 2, 1, 1}};
    for (const Geometry &g : geoms)
        for (MaskLayout layout : {MaskLayout::Int32, MaskLayout::Bits})
            for (DType dt : {DType::F16, DType::BF16})
                for (int64_t offset : {32, 2}) {
                    SCOPED_TRACE(::testing::Message() << "W " << g.W << " layout " << static_cast<int>(layout) << " dt "
                                                      << static_cast<int>(dt) << " offset " << offset);
                    compare_backward(g, dt, false, layout, false, 1, offset);
                    compare_backward(g, dt, false, layout, true, 1, offset);
                }
}

TEST(MaxPool2dWithMaskKernels, ScalarAndAvx512ForwardAgree) {
    for (const Geometry &g : kGeoms)
        for (MaskLayout layout : {MaskLayout::Int32, MaskLayout::Bits})
            for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
                Rand r{77 + static_cast<uint64_t>(g.W)};
                const int64_t es = elem_size(dt), ins = g.planes() * g.H * g.W, outs = g.planes() * g.Ho * g.Wo;
                std::vector<uint8_t> x(static_cast<size_t>(ins * es));
                if (dt == DType::F32) {
                    for (int64_t i = 0; i < ins; ++i) {
                        float f = static_cast<float>(r.in(-8, 8));  // many ties: the first must win
                        if (r.in(0, 30) == 0) f = NAN;
                        if (r.in(0, 4) == 0) f = -INFINITY;  // windows of -inf keep their first element
                        std::memcpy(x.data() + i * 4, &f, 4);
                    }
                } else {
                    std::vector<uint16_t> h(static_cast<size_t>(ins));
                    fill_f32_bits(h, dt, r, true);
                    std::memcpy(x.data(), h.data(), x.size());
                }
                const View4 in{g.C * g.H * g.W, g.H * g.W, g.W, 1}, ov{g.C * g.Ho * g.Wo, g.Ho * g.Wo, g.Wo, 1};
                std::vector<std::vector<uint8_t>> outs_all, masks;
                for (int scalar = 0; scalar < 2; ++scalar) {
                    if (!scalar && !cpu_has_avx512()) continue;
                    ForwardKernel k(g, dt, dt == DType::F32, layout, 2);
                    k.set_isa(scalar ? Isa::Scalar : Isa::Avx512);
                    Aligned scratch(k.scratch_bytes(), kPoison), out(static_cast<size_t>(outs * es)),
                        mask(static_cast<size_t>(g.planes() * mask_plane_bytes(g)));
                    k.run(x.data(), in, out.p, ov, mask.p, scratch.p);
                    outs_all.emplace_back(out.p, out.p + outs * es);
                    masks.emplace_back(mask.p, mask.p + g.planes() * mask_plane_bytes(g));
                }
                for (size_t i = 1; i < outs_all.size(); ++i) {
                    EXPECT_TRUE(outs_all[i] == outs_all[0]);
                    EXPECT_TRUE(masks[i] == masks[0]);
                }
            }
}

// Several outputs routing to one element, every gradOutput a NaN of its own payload: the sum keeps
// the earliest output's NaN (ops.md's ascending order, x86's first-source rule), on every path -
// a path whose masked add let the compiler swap its operands would keep a later one. Each output
// takes the element of its window nearest a row = 1 and a column = hub (mod 4), so that
// neighbouring windows of overlapping geometries share it (hub 1: odd columns, 2: even ones too).
// Int32 masks that route each output to the element of its window nearest a row = 1 and a column =
// hub (mod 4): neighbouring windows of overlapping geometries share it (hub 1: odd columns, 2:
// even ones too).
std::vector<int32_t> hub_mask(const Geometry &g, int64_t hub) {
    auto dist = [](int64_t x, int64_t to) { const int64_t r = ((x - to) % 4 + 4) % 4; return std::min(r, 4 - r); };
    std::vector<int32_t> mask(static_cast<size_t>(g.planes() * g.Ho * g.Wo));
    for (int64_t p = 0; p < g.planes(); ++p)
        for (int64_t j = 0; j < g.Ho * g.Wo; ++j) {
            const int64_t oh = j / g.Wo, ow = j % g.Wo;
            int64_t best = -1, bh = 0, bw = 0;
            for (int64_t ih = g.row_lo(oh); ih < g.row_hi(oh); ++ih)
                for (int64_t iw = g.col_lo(ow); iw < g.col_hi(ow); ++iw)
                    if (best < 0 || dist(ih, 1) + dist(iw, hub) < best) best = dist(ih, 1) + dist(iw, hub), bh = ih, bw = iw;
            mask[static_cast<size_t>(p * g.Ho * g.Wo + j)] = static_cast<int32_t>(bh * g.W + bw);
        }
    return mask;
}

TEST(MaxPool2dWithMaskKernels, EarliestNaNWinsOnEveryPath) {
    const Geometry geoms[] = {
        {1, 2, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1},  // k3 s2 p1: the parity path
        {1, 2, 7, 70, 7, 36, 3, 2, 1, 2, 1, 1},    // k3x2 s1x2: the tile path
        {1, 1, 5, 40, 5, 40, 5, 5, 1, 1, 2, 2},    // k5 s1 p2: the gather path (paths 1, 5), per output (2)
        {1, 2, 13, 28, 13, 28, 3, 3, 1, 1, 1, 1},  // k3 s1 p1: the gather path, the small-plane path (4)
    };
    for (const Geometry &g : geoms)
    for (int64_t hub : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "H " << g.H << " W " << g.W << " k " << g.kH << "x" << g.kW << " hub " << hub);
        const int64_t outs = g.planes() * g.Ho * g.Wo, ins = g.planes() * g.H * g.W;
        std::vector<uint32_t> go(static_cast<size_t>(outs)), expect(static_cast<size_t>(ins), 0u);
        const std::vector<int32_t> mask = hub_mask(g, hub);
        int64_t shared = 0;
        for (int64_t p = 0; p < g.planes(); ++p)
            for (int64_t j = 0; j < g.Ho * g.Wo; ++j) {
                const int64_t o = p * g.Ho * g.Wo + j;
                go[static_cast<size_t>(o)] = 0x7fc00000u | static_cast<uint32_t>(o + 1);  // quiet NaN, payload o + 1
                uint32_t &e = expect[static_cast<size_t>(p * g.H * g.W + mask[static_cast<size_t>(o)])];
                if (e == 0) e = go[static_cast<size_t>(o)];  // the earliest NaN stays
                else ++shared;
            }
        ASSERT_GT(shared, g.planes() * g.Ho) << "the geometry must make outputs share elements";
        const View4 gov{g.C * g.Ho * g.Wo, g.Ho * g.Wo, g.Wo, 1}, giv{g.C * g.H * g.W, g.H * g.W, g.W, 1};
        for (int path = 0; path < kPaths; ++path) {  // see set_path
            if (path != 0 && !cpu_has_avx512()) continue;
            for (int64_t slots : {1, 2}) {
                BackwardKernel k(g, DType::F32, false, MaskLayout::Int32, slots);
                set_path(k, path);
                Aligned scratch(k.scratch_bytes(), kPoison), gi(static_cast<size_t>(ins * 4));
                BadIndex bad;
                ASSERT_TRUE(k.run(go.data(), gov, reinterpret_cast<const uint8_t *>(mask.data()), gi.p, giv, scratch.p, &bad));
                std::vector<uint32_t> got(static_cast<size_t>(ins));
                std::memcpy(got.data(), gi.p, static_cast<size_t>(ins * 4));
                int64_t wrong = 0, first = -1;
                for (int64_t i = 0; i < ins; ++i)
                    if (got[static_cast<size_t>(i)] != expect[static_cast<size_t>(i)]) {
                        if (first < 0) first = i;
                        ++wrong;
                    }
                EXPECT_EQ(wrong, 0) << "path " << path << " slots " << slots << ": first at " << first << std::hex
                                    << " got 0x" << (first >= 0 ? got[static_cast<size_t>(first)] : 0u) << " want 0x"
                                    << (first >= 0 ? expect[static_cast<size_t>(first)] : 0u);
            }
        }
    }
}

// A bad int32 index in a row's last, partial block of 16 outputs (112 columns: outputs 48 to 55,
// whose kernel columns all lie inside the input, checked without the column tests): the index of
// an element just left of the output's window, in the same row - a valid flat index, outside the
// window. Every path reports the first such output in output order, at 1 and 2 partitions: in the
// last block of output row 1, of row 2, and of row 2 together with one earlier in row 2, in a full
// block (a path that takes rows' last blocks out of order must still report that one).
TEST(MaxPool2dWithMaskKernels, BadIndexInLastPartialBlockIsFound) {
    const Geometry geoms[] = {
        {2, 2, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1},  // k3 s2 p1
        {2, 3, 9, 48, 5, 24, 3, 3, 2, 2, 1, 1},    // k3 s2 p1, 24 outputs: 16 and 8
        {2, 2, 8, 112, 4, 56, 2, 2, 2, 2, 0, 0},   // k2 s2
        {2, 2, 9, 70, 9, 70, 3, 3, 1, 1, 1, 1},    // k3 s1 p1: the gather path, 70 outputs: 64 and 6
    };
    struct Spot {
        int64_t oh, ow;
    };
    const std::vector<std::vector<Spot>> cases = {{{1, -1}}, {{2, -1}}, {{2, -1}, {2, 5}}};
    for (const Geometry &g : geoms)
        for (const auto &spots : cases)
            for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
                SCOPED_TRACE(::testing::Message() << "W " << g.W << " k" << g.kH << " dt " << static_cast<int>(dt)
                                                  << " spots " << spots.size() << " row " << spots[0].oh);
                const int64_t es = elem_size(dt), outs = g.planes() * g.Ho * g.Wo, ins = g.planes() * g.H * g.W;
                std::vector<uint8_t> go(static_cast<size_t>(outs * es), 0x3c);
                std::vector<int32_t> mask(static_cast<size_t>(outs));
                for (int64_t p = 0; p < g.planes(); ++p)
                    for (int64_t j = 0; j < g.Ho * g.Wo; ++j) {
                        const int64_t oh = j / g.Wo, ow = j % g.Wo;
                        mask[static_cast<size_t>(p * g.Ho * g.Wo + j)] = static_cast<int32_t>(g.row_lo(oh) * g.W + g.col_hi(ow) - 1);
                    }
                // each spot names the column left of its window (ow -1: the row's last output)
                const int64_t plane = 1;
                int64_t first = outs;
                for (const Spot &sp : spots) {
                    const int64_t ow = sp.ow < 0 ? g.Wo - 1 : sp.ow, j = sp.oh * g.Wo + ow;
                    ASSERT_GE(g.col_lo(ow), 1);
                    mask[static_cast<size_t>(plane * g.Ho * g.Wo + j)] = static_cast<int32_t>(g.row_lo(sp.oh) * g.W + g.col_lo(ow) - 1);
                    first = std::min(first, j);
                }
                const View4 gov{g.C * g.Ho * g.Wo, g.Ho * g.Wo, g.Wo, 1}, giv{g.C * g.H * g.W, g.H * g.W, g.W, 1};
                for (int path = 0; path < kPaths; ++path) {  // see set_path
                    if (path != 0 && !cpu_has_avx512()) continue;
                    for (int64_t slots : {1, 2}) {
                        BackwardKernel k(g, dt, false, MaskLayout::Int32, slots);
                        set_path(k, path);
                        Aligned scratch(k.scratch_bytes(), kPoison), gi(static_cast<size_t>(ins * es));
                        BadIndex bad;
                        EXPECT_FALSE(k.run(go.data(), gov, reinterpret_cast<const uint8_t *>(mask.data()), gi.p, giv, scratch.p, &bad))
                            << "path " << path << " slots " << slots;
                        EXPECT_EQ(bad.plane, plane) << "path " << path << " slots " << slots;
                        EXPECT_EQ(bad.j, first) << "path " << path << " slots " << slots;
                    }
                }
            }
}

// Every int32 value at one output, on every path: a run succeeds iff the value is -1 ("no
// maximum") or an element of the output's clipped window, and otherwise reports that output. The
// values scanned: every flat index of the plane and a few beyond it on both sides, so the small
// indices 0 .. width - 2 too (the gather path's vector test once let those through at stride 1).
// Outputs: the first (its window clipped at the top left), one inside, the last.
TEST(MaxPool2dWithMaskKernels, EveryInt32ValueIsCheckedAgainstItsWindow) {
    const Geometry geoms[] = {
        {1, 2, 20, 20, 20, 20, 3, 3, 1, 1, 1, 1},  // k3 s1 p1: the gather path
        {1, 2, 2, 18, 2, 18, 1, 5, 1, 1, 0, 2},    // k1x5 s1 p0x2: the gather path, one-row windows
        {1, 2, 9, 70, 9, 70, 3, 3, 1, 1, 1, 1},    // the gather path, 70 outputs: 64 and 6
        {1, 2, 7, 7, 7, 7, 3, 3, 1, 1, 1, 1},      // the small-plane path
        {1, 2, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1},  // k3 s2 p1: the parity path
        {1, 2, 8, 70, 4, 35, 2, 2, 2, 2, 0, 0},    // k2 s2: the parity and tile paths
        {1, 2, 6, 45, 6, 26, 1, 20, 1, 1, 0, 0},   // kW 20 at stride 1: the ring path
    };
    for (const Geometry &g : geoms) {
        const int64_t outs = g.planes() * g.Ho * g.Wo, ins = g.planes() * g.H * g.W, HW = g.H * g.W;
        const std::vector<float> go(static_cast<size_t>(outs), 1.0f);
        std::vector<int32_t> mask(static_cast<size_t>(outs));
        for (int64_t p = 0; p < g.planes(); ++p)
            for (int64_t j = 0; j < g.Ho * g.Wo; ++j)
                mask[static_cast<size_t>(p * g.Ho * g.Wo + j)] = static_cast<int32_t>(g.row_lo(j / g.Wo) * g.W + g.col_lo(j % g.Wo));
        std::vector<int64_t> values;
        for (int64_t v = -3; v < HW + 3; ++v) values.push_back(v);
        for (int64_t v : {int64_t{INT32_MIN}, int64_t{INT32_MAX}, -g.W, HW + g.W}) values.push_back(v);
        const View4 gov{g.C * g.Ho * g.Wo, g.Ho * g.Wo, g.Wo, 1}, giv{g.C * g.H * g.W, g.H * g.W, g.W, 1};
        for (int path = 0; path < kPaths; ++path) {  // see set_path
            if (path != 0 && !cpu_has_avx512()) continue;
            BackwardKernel k(g, DType::F32, false, MaskLayout::Int32, 1);
            set_path(k, path);
            Aligned scratch(k.scratch_bytes(), kPoison), gi(static_cast<size_t>(ins * 4));
            const int64_t plane = 1;
            for (const int64_t j : {int64_t{0}, (g.Ho / 2) * g.Wo + g.Wo / 2, g.Ho * g.Wo - 1}) {
                const int64_t oh = j / g.Wo, ow = j % g.Wo;
                const size_t at = static_cast<size_t>(plane * g.Ho * g.Wo + j);
                const int32_t keep = mask[at];
                int64_t wrong = 0;
                for (const int64_t v : values) {
                    const int64_t ih = v >= 0 ? v / g.W : -1, iw = v >= 0 ? v % g.W : -1;
                    const bool inside = v >= 0 && v < HW && ih >= g.row_lo(oh) && ih < g.row_hi(oh) && iw >= g.col_lo(ow) &&
                                        iw < g.col_hi(ow);
                    mask[at] = static_cast<int32_t>(v);
                    BadIndex bad;
                    const bool ok = k.run(go.data(), gov, reinterpret_cast<const uint8_t *>(mask.data()), gi.p, giv, scratch.p, &bad);
                    const bool good = ok == (v == -1 || inside) && (ok || (bad.plane == plane && bad.j == j));
                    if (!good && wrong++ < 3)
                        ADD_FAILURE() << "W " << g.W << " k" << g.kH << "x" << g.kW << " s" << g.sW << " path " << path
                                      << " output " << j << " value " << v << ": run " << (ok ? "passed" : "failed")
                                      << " (reported plane " << bad.plane << " output " << bad.j << ")";
                }
                mask[at] = keep;
            }
        }
    }
}

// BF16 k3 sums on the parity path are rounded by the CPU's vcvtne2ps2bf16 (which reads subnormals
// as zero); a plane with a subnormal sum must be done again with the integer rounding. Plane 0:
// ordinary values; plane 1: values near FLOAT's smallest normal that cancel into subnormal sums
// where windows share elements (the CPU rounding would flush them); plane 2: one value of 2^-101
// among ordinary ones (the sums stay normal); plane 3: subnormal sums only in each row's last block.
// Every path gives the scalar path's bytes.
TEST(MaxPool2dWithMaskKernels, Bf16SubnormalSumsKeepTheirBits) {
    const Geometry g{1, 4, 12, 112, 6, 56, 3, 3, 2, 2, 1, 1};
    const int64_t outs = g.planes() * g.Ho * g.Wo, ins = g.planes() * g.H * g.W, plane = g.Ho * g.Wo;
    const std::vector<int32_t> mask = hub_mask(g, 1);
    std::vector<uint16_t> go(static_cast<size_t>(outs));
    Rand r{2024};
    auto tiny = [&](int64_t j) {  // +-(1 + m / 128) * 2^-126 (exponent 1) and BF16 subnormals
        const auto t = static_cast<uint16_t>((r.in(0, 1) ? 0x0080 : 0x0000) + r.in(1, 127));
        return static_cast<uint16_t>(t | (j % 2 ? 0x8000 : 0));
    };
    for (int64_t j = 0; j < plane; ++j) {
        go[static_cast<size_t>(j)] = static_cast<uint16_t>(0x3f80 + r.in(-500, 500));  // about 1
        go[static_cast<size_t>(plane + j)] = tiny(j);  // neighbours cancel below 2^-126
        go[static_cast<size_t>(2 * plane + j)] = static_cast<uint16_t>(0x3f80 + r.in(-500, 500));
        // plane 3: zeros, and tiny values in each row's last 8 outputs only: its last block (and the ring's last row)
        go[static_cast<size_t>(3 * plane + j)] = j % g.Wo >= g.Wo - 8 ? tiny(j) : uint16_t{0};
    }
    go[static_cast<size_t>(2 * plane + plane / 2)] = 0x0d00;  // 2^-101: small, but normal
    // the same values with padded gradOutput rows
    const int64_t ph = g.Wo + 8;
    std::vector<uint16_t> padded(static_cast<size_t>(g.planes() * g.Ho * ph), 0x3f80);
    for (int64_t p = 0; p < g.planes(); ++p)
        for (int64_t oh = 0; oh < g.Ho; ++oh)
            for (int64_t ow = 0; ow < g.Wo; ++ow)
                padded[static_cast<size_t>((p * g.Ho + oh) * ph + ow)] = go[static_cast<size_t>(p * plane + oh * g.Wo + ow)];
    const View4 giv{g.C * g.H * g.W, g.H * g.W, g.W, 1};
    std::vector<std::vector<uint16_t>> results;
    for (int path = 0; path < 4; ++path) {  // scalar, parity, parity with padded rows, parity streamed
        if (path != 0 && !cpu_has_avx512()) continue;
        BackwardKernel k(g, DType::BF16, false, MaskLayout::Int32, 1);
        k.set_isa(path == 0 ? Isa::Scalar : Isa::Avx512);
        k.set_parity(path != 0);
        if (path == 3) k.set_store_mode(StoreMode::Streaming);
        const View4 gov = path == 2 ? View4{g.C * g.Ho * ph, g.Ho * ph, ph, 1} : View4{g.C * plane, plane, g.Wo, 1};
        Aligned scratch(k.scratch_bytes(), kPoison), gi(static_cast<size_t>(ins * 2));
        BadIndex bad;
        ASSERT_TRUE(k.run(path == 2 ? padded.data() : go.data(), gov, reinterpret_cast<const uint8_t *>(mask.data()), gi.p,
                          giv, scratch.p, &bad));
        results.emplace_back(reinterpret_cast<uint16_t *>(gi.p), reinterpret_cast<uint16_t *>(gi.p) + ins);
    }
    // the cases must be there: nonzero BF16 subnormal results in plane 1, and in plane 3
    for (int64_t p : {1, 3}) {
        int64_t subnormal = 0;
        for (int64_t i = p * g.H * g.W; i < (p + 1) * g.H * g.W; ++i) {
            const uint16_t b = results[0][static_cast<size_t>(i)];
            subnormal += (b & 0x7f80) == 0 && (b & 0x7f) != 0;
        }
        EXPECT_GT(subnormal, p == 1 ? 20 : 3) << "plane " << p;
    }
    for (size_t i = 1; i < results.size(); ++i) EXPECT_TRUE(results[i] == results[0]) << "path " << i << " differs";
}

}  // namespace
