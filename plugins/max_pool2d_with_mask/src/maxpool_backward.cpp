// MaxPool2dWithMaskBackward kernel (contract in maxpool_backward.hpp).
//
// One plane at a time, output row by output row: the gradInput rows the current windows touch live
// in a ring of kH FLOAT rows in the slot's scratch; a row is stored (converted, and for large
// outputs streamed whole 64-byte lines at a time, see LineStream) and cleared as soon as no later
// window reaches it, so every gradInput element is written once and the memory traffic is one read
// of gradOutput and of the mask bytes in use and one write of gradInput. A bit mask's next plane
// is prefetched row by row meanwhile (prefetch_next_bits).
//
// Per output row, the mask is decoded 16 outputs at a time with AVX-512 (int32: the window check by
// unsigned compares and kH - 1 conditional subtractions instead of a division; bits: 48 outputs of
// every kernel position at once, bit-sliced into kernel positions) into ring positions, and the
// additions themselves are one scalar loop in ascending output order. The scalar path decodes one
// output at a time and adds in the same order, so both give the same bits. Windows 2 columns wide
// at column stride 2 (k2 s2) take the tile path instead (see there): vector adds of 32-column tiles
// in the same order, the same bits again. Square k2 s2 p0, k3 s2 p1 and k3 s2 p0 windows (the
// common pools) take the parity path instead (see there): no ring positions, no scatter - gradInput's even
// and odd columns as masked vector adds of the gradOutput values whose mask names them, rows
// finished as soon as no later window reaches them and stored in dt whole; the same bits again.
// Stride-1 windows (Inception's 3x3 s1 p1 branch pools) take the gather path (see there): each
// block of 16 gradInput elements pulls its sum from the outputs that can reach it, a masked compare
// and add per kernel position in ascending output order; the same bits again. Other small planes
// with int32 masks take the small-plane path (see there): the whole plane in the ring, decoded,
// added and stored at once; the same bits again.
//
// This file: the plan, the ring path (scalar and vector decode), the tile path and the run;
// maxpool_backward_parity.cpp, maxpool_backward_gather.cpp and maxpool_backward_small.cpp: the
// parity, gather and small-plane paths; maxpool_backward_paths.hpp: what they share.
#include "maxpool_backward_paths.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>

namespace mpool {

// Non-temporal stores pay off once a FLOAT gradInput cannot stay in the last-level cache anyway.
// 16-bit gradInputs are stored plainly at any size but on the parity paths: on 32x64x112x112
// (Zen 4, 1 and 2 threads) plain stores were 10-35 % faster than streamed ones, streamed ones
// 20-30 % faster for FLOAT. On Zen 5 (2 threads) the k2 parity path, whose time is the memory's,
// streams its rows through the stage 20-30 % faster (plain stores read every line first); the k3
// one, bound by its arithmetic, was 10-30 % slower streamed through the stage, and is 10-14 %
// faster (FLOAT16 841 -> 757 ns a plane, BF16 940 -> 810) where its blocks stream whole lines
// themselves (stream16_rows: rows of W % 16 == 0, so 112 wide); other widths stay plain.
constexpr int64_t kStreamBytes = int64_t{16} << 20;
// The vector int32 decode subtracts W up to kH - 1 times; past this a division is cheaper.
constexpr int64_t kVectorMaxKh = 16;
// Planes (input and output) of at most this many elements take the small-plane path: its FLOAT
// plane, outputs and positions (48 KB at most) stay in L1.
constexpr int64_t kSmallPlane = 4096;

namespace {

uint64_t slot_bytes(const BackwardPlan &P) {
    // ring, gradOutput row, positions; the parity path's ring halves, its stage
    const int64_t floats = P.ring_floats + 2 * P.row_floats + 2 * P.dir_cols;
    return static_cast<uint64_t>((64 + floats * 4 + P.stage_bytes + 63) / 64 * 64);  // + 64: the ring's alignment
}

int64_t round_up16(int64_t x) { return (x + 15) / 16 * 16; }

int32_t load_i32(const uint8_t *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Bits j .. j + 47 of a mask row (bit j at byte j / 8, bit j % 8). The 8-byte read stays inside
// the row: a row has at least 2 * Ho * Wo + 32 bytes and j < Ho * Wo.
uint64_t bits48(const uint8_t *row, int64_t j) {
    uint64_t w;
    std::memcpy(&w, row + (j >> 3), 8);
    return (w >> (j & 7)) & ((uint64_t{1} << 48) - 1);
}

// ---- scalar decode: one output at a time, outputs [ow0, ow1) of row oh ----

// Returns the first output column whose index is out of its window, or -1.
// ring: column 0 of ring row 0; stride: floats between ring rows.
int64_t row_int32_scalar(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring, int64_t stride,
                         int64_t oh, int64_t ow0, int64_t ow1) {
    const Geometry &g = P.g;
    const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh);
    for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t v = load_i32(idx + ow * 4);
        if (v == -1) continue;
        if (v < 0 || v >= g.H * g.W) return ow;
        const int64_t ih = v / g.W, iw = v % g.W;
        if (ih < h0 || ih >= h1 || iw < g.col_lo(ow) || iw >= g.col_hi(ow)) return ow;
        float &r = ring[(ih % P.ring_rows) * stride + iw];
        r = acp::add_ordered(r, grow[ow]);
    }
    return -1;
}

void row_bits_scalar(const BackwardPlan &P, const uint8_t *mask_plane, int64_t row_bytes, const float *grow,
                     float *ring, int64_t stride, int64_t oh, int64_t ow0, int64_t ow1) {
    const Geometry &g = P.g;
    const int64_t hs = oh * g.sH - g.pH;
    for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t j = oh * g.Wo + ow, ws = ow * g.sW - g.pW;
        for (int64_t k = 0; k < g.kernel_positions(); ++k) {
            if (!((mask_plane[k * row_bytes + (j >> 3)] >> (j & 7)) & 1)) continue;
            const int64_t ih = hs + k / g.kW, iw = ws + k % g.kW;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;  // a bit pointing into the padding
            float &r = ring[(ih % P.ring_rows) * stride + iw];
            r = acp::add_ordered(r, grow[ow]);
        }
    }
}
#if ACP_X86
constexpr int32_t kNoCode = 0x7fffffff;  // tile path: an output without a contribution

// Ring position of flat offset x = slot * W + column when slot may run one ring past its end.
ACP_AVX512 inline __m512i wrap_ring(__m512i x, __m512i ring_size) {
    return _mm512_mask_sub_epi32(x, _mm512_cmpge_epi32_mask(x, ring_size), x, ring_size);
}

// HH: the clipped window's row count when 2 or 3 (the subtractions unrolled), 0: any.
template <int HH>
ACP_AVX512 int64_t row_int32_avx_t(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
                                     int32_t *pos, int64_t oh) {
    const Geometry &g = P.g;
    const int64_t h0 = g.row_lo(oh), hh = HH ? HH : g.row_hi(oh) - h0, Wo = g.Wo, R = P.ring_rows;
    const int32_t *col_lo = P.col_lo.data(), *col_wid = P.col_wid.data();
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i row_base = _mm512_set1_epi32(static_cast<int32_t>(h0 * g.W));
    const __m512i limit = _mm512_set1_epi32(static_cast<int32_t>(hh * g.W));
    // ring position of flat index v: v + ((h0 mod R) - h0) * W, wrapped once
    const __m512i to_ring = _mm512_set1_epi32(static_cast<int32_t>((h0 % R - h0) * g.W));
    const __m512i ring_size = _mm512_set1_epi32(static_cast<int32_t>(R * g.W));
    const __m512i dummy = _mm512_set1_epi32(static_cast<int32_t>(P.ring_floats - 16));
    for (int64_t ow = 0; ow < Wo; ow += 16) {
        const __mmask16 m = tail16(Wo - ow);
        const __m512i v = _mm512_maskz_loadu_epi32(m, idx + ow * 4);
        __mmask16 bad;
        const __mmask16 valid = window_test<HH>(v, m, _mm512_add_epi32(row_base, _mm512_loadu_si512(col_lo + ow)), limit,
                                                _mm512_loadu_si512(col_wid + ow), hh, vW, &bad);
        if (bad) return ow + __builtin_ctz(bad);
        const __m512i p = wrap_ring(_mm512_add_epi32(v, to_ring), ring_size);
        _mm512_storeu_si512(pos + ow, _mm512_mask_blend_epi32(valid, dummy, p));
    }
    add_lanes(ring, pos, grow, Wo);  // after the decode: the position stores have long retired
    return -1;
}

ACP_AVX512 int64_t row_int32_avx(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
                                   int32_t *pos, int64_t oh) {
    switch (P.g.row_hi(oh) - P.g.row_lo(oh)) {
        case 3: return row_int32_avx_t<3>(P, idx, grow, ring, pos, oh);
        case 2: return row_int32_avx_t<2>(P, idx, grow, ring, pos, oh);
        default: return row_int32_avx_t<0>(P, idx, grow, ring, pos, oh);
    }
}


// With codes == nullptr: ring positions into pos, then the additions. With codes: the tile codes of
// the row into codes (nothing added) - or false, before anything, when an output has several bits.
ACP_AVX512 bool row_bits_avx(const BackwardPlan &P, const uint8_t *mask_plane, int64_t row_bytes,
                               const float *grow, float *ring, int32_t *pos, int64_t oh, int32_t *codes = nullptr) {
    const Geometry &g = P.g;
    const int64_t hs = oh * g.sH - g.pH, R = P.ring_rows, K = g.kernel_positions();
    const int64_t slot0 = ((hs % R) + R) % R;
    const int32_t *col_start = P.col_start.data();
    // Lane values: khW = kh * W and kw of the set bit; input row offset hs * W + khW must lie in
    // [0, H * W), column col_start + kw in [0, W).
    const __m512i row_off = _mm512_set1_epi32(static_cast<int32_t>(hs * g.W));
    const __m512i plane = _mm512_set1_epi32(static_cast<int32_t>(g.H * g.W)), vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i ring0 = _mm512_set1_epi32(static_cast<int32_t>(slot0 * g.W));
    const __m512i ring_size = _mm512_set1_epi32(static_cast<int32_t>(R * g.W));
    const __m512i dummy = _mm512_set1_epi32(static_cast<int32_t>(P.ring_floats - 16));
    const __m512i khW_lo = _mm512_loadu_si512(P.k_khW), khW_hi = _mm512_loadu_si512(P.k_khW + 16);
    const __m512i kw_lo = _mm512_loadu_si512(P.k_kw), kw_hi = _mm512_loadu_si512(P.k_kw + 16);
    const __m512i code_lo = _mm512_loadu_si512(P.k_code), code_hi = _mm512_loadu_si512(P.k_code + 16);
    int nb = 0;  // bits of a kernel position
    while ((int64_t{1} << nb) < K) ++nb;
    int64_t added = 0;  // outputs [0, added) of the row are in the ring
    for (int64_t ow0 = 0; ow0 < g.Wo; ow0 += 48) {
        // 48 outputs at once, bit-sliced: slice b holds bit b of the kernel position of each
        // output (exact while every output has at most one bit).
        const int64_t j = oh * g.Wo + ow0, n = std::min<int64_t>(48, g.Wo - ow0);
        const uint64_t live = n == 48 ? (uint64_t{1} << 48) - 1 : (uint64_t{1} << n) - 1;
        uint64_t any = 0, dup = 0, slice[6] = {0, 0, 0, 0, 0, 0};
        for (int64_t k = 0; k < K; ++k) {
            const uint64_t w = bits48(mask_plane + k * row_bytes, j) & live;
            dup |= any & w;
            any |= w;
            for (int b = 0; b < nb; ++b)
                if ((k >> b) & 1) slice[b] |= w;
        }
        if (dup && codes) return false;
        if (dup) {  // an output with several bits (not from our forward): one output at a time
            add_lanes(ring, pos + added, grow + added, ow0 - added);
            added = ow0 + n;
            row_bits_scalar(P, mask_plane, row_bytes, grow, ring, P.ring_stride, oh, ow0, added);
            continue;
        }
        for (int64_t c = 0; c < n; c += 16) {
            const int64_t ow = ow0 + c;
            __m512i k_v = _mm512_setzero_si512();
            for (int b = 0; b < nb; ++b)
                k_v = _mm512_mask_or_epi32(k_v, static_cast<__mmask16>(slice[b] >> c), k_v, _mm512_set1_epi32(1 << b));
            const __m512i khW = _mm512_permutex2var_epi32(khW_lo, k_v, khW_hi);
            const __m512i iw = _mm512_add_epi32(_mm512_loadu_si512(col_start + ow), _mm512_permutex2var_epi32(kw_lo, k_v, kw_hi));
            __mmask16 valid = _mm512_mask_cmplt_epu32_mask(static_cast<__mmask16>(any >> c), _mm512_add_epi32(row_off, khW), plane);
            valid = _mm512_mask_cmplt_epu32_mask(valid, iw, vW);
            if (codes) {
                const __m512i code = _mm512_permutex2var_epi32(code_lo, k_v, code_hi);
                _mm512_storeu_si512(codes + ow, _mm512_mask_blend_epi32(valid, _mm512_set1_epi32(kNoCode), code));
                continue;
            }
            const __m512i p = wrap_ring(_mm512_add_epi32(_mm512_add_epi32(ring0, khW), iw), ring_size);
            _mm512_storeu_si512(pos + ow, _mm512_mask_blend_epi32(valid, dummy, p));
        }
    }
    if (codes) return true;
    add_lanes(ring, pos + added, grow + added, g.Wo - added);
    return true;
}

// ---- tile path: windows two columns wide at column stride 2 (k2 s2), any kH, pW, W, both layouts ----
//
// Such windows never share a column: output l of 16 outputs ow0 .. ow0 + 15 reaches columns
// c0 + 2l and c0 + 2l + 1 (c0 = 2 * ow0 - pW) of its window rows only. An output row is decoded
// into one code per output, kh * 4 + kw of the element it routes to (kNoCode: none); then per 16
// outputs the values and codes are spread over the 32-column tile (output l to lanes 2l, 2l + 1,
// vpermd) and every window row takes, with one masked add per 16 columns, the lanes whose code
// matches (kw 0 on even lanes, kw 1 on odd ones). An element gets its contributions of an output
// row from one output at most, so the sums are the one-at-a-time loop's to the bit; lanes without
// a contribution are left alone (masked, not + 0). Tile columns outside [0, W) are masked out of
// the loads and stores (a matching code always lies inside); window rows outside the input go to a
// spare ring row that no code matches. The ring rows are laid out so that every tile starts on a
// 64-byte line (tile_stride, tile_lead). Measured on Zen 4 (in cache, 1 thread, 64 planes of
// 112x112): ~5 % faster than the per-output path for k2 s2; the same scheme for k3 s2 (two adds
// per element, kw 2 carried into the next tile) was ~20 % slower than the per-output path there
// (one vector compare and masked add per window row and 16 columns: the compares and adds bound
// it), so kW == 3 keeps the per-output path.

// The lanes' spread: output l to tile lanes 2l and 2l + 1.
ACP_AVX512 inline __m512i spread_lo() { return _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0); }
ACP_AVX512 inline __m512i spread_hi() {
    return _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
}

// One tile: codes and values of outputs ow0 .. ow0 + 15 into the window rows' ring rows at columns
// c0 .. c0 + 31. rows[r]: window row r's ring row (column 0). KH: kH when 2 or 3 (the row loop
// unrolled), 0: nrows at run time.
template <int KH>
ACP_AVX512 inline __attribute__((always_inline)) void tile_block(__m512i code, __m512 gv, float *const *rows,
                                                                   int64_t nrows, int64_t c0, int64_t W) {
    const __m512i cl = _mm512_maskz_permutexvar_epi32(kAll, spread_lo(), code);
    const __m512i ch = _mm512_maskz_permutexvar_epi32(kAll, spread_hi(), code);
    const __m512 gl = _mm512_maskz_permutexvar_ps(kAll, spread_lo(), gv);
    const __m512 gh = _mm512_maskz_permutexvar_ps(kAll, spread_hi(), gv);
    // tile columns inside the row: [max(0, -c0), min(32, W - c0))
    __mmask16 m_lo = kAll, m_hi = kAll;
    if (c0 < 0 || c0 + 32 > W) {
        const int64_t lo = std::max<int64_t>(0, -c0), hi = std::min<int64_t>(32, W - c0);
        const uint64_t cols = hi > lo ? ((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1) : 0;
        m_lo = static_cast<__mmask16>(cols), m_hi = static_cast<__mmask16>(cols >> 16);
    }
    // wanted codes of window row r: r * 4 on even lanes (kw 0), r * 4 + 1 on odd ones
    __m512i want = _mm512_set_epi32(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
    const int64_t n = KH ? KH : nrows;
#pragma GCC unroll 4
    for (int64_t r = 0; r < n; ++r) {
        float *p = rows[r] + c0;
        __m512 tl = _mm512_maskz_loadu_ps(m_lo, p), th = _mm512_maskz_loadu_ps(m_hi, p + 16);
        tl = add_ordered(tl, _mm512_cmpeq_epi32_mask(cl, want), gl);
        th = add_ordered(th, _mm512_cmpeq_epi32_mask(ch, want), gh);
        _mm512_mask_storeu_ps(p, m_lo, tl);
        _mm512_mask_storeu_ps(p + 16, m_hi, th);
        want = _mm512_add_epi32(want, _mm512_set1_epi32(4));
    }
}

// Bit masks: one output row's additions from its codes (row_bits_avx).
template <int KH>
ACP_AVX512 void tiles_codes(const int32_t *codes, const float *grow, float *const *rows, int64_t kh, int64_t Wo,
                              int64_t W, int64_t pW) {
    for (int64_t ow = 0; ow < Wo; ow += 16)
        tile_block<KH>(_mm512_loadu_si512(codes + ow), _mm512_maskz_loadu_ps(tail16(Wo - ow), grow + ow), rows, kh,
                       2 * ow - pW, W);
}

// Int32 masks: the decode fused with the additions, 16 outputs at a time. Returns the first output
// column whose index is out of its window (earlier outputs of the row may have been added: the
// run fails then), or -1.
template <int KH>
ACP_AVX512 int64_t tiles_int32(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *const *rows,
                                 int64_t oh) {
    const Geometry &g = P.g;
    const int64_t hs = oh * g.sH - g.pH, r0 = g.row_lo(oh) - hs, hh = g.row_hi(oh) - g.row_lo(oh), Wo = g.Wo;
    const int32_t *col_lo = P.col_lo.data(), *col_wid = P.col_wid.data(), *col_koff = P.col_koff.data();
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W)), four = _mm512_set1_epi32(4);
    const __m512i row0 = _mm512_set1_epi32(static_cast<int32_t>((hs + r0) * g.W));
    const __m512i limit = _mm512_set1_epi32(static_cast<int32_t>(hh * g.W));
    const __m512i r0x4 = _mm512_set1_epi32(static_cast<int32_t>(r0 * 4));
    const __m512i minus1 = _mm512_set1_epi32(-1), none = _mm512_set1_epi32(kNoCode);
    for (int64_t ow = 0; ow < Wo; ow += 16) {
        const __mmask16 m = tail16(Wo - ow);
        const __m512i v = _mm512_maskz_loadu_epi32(m, idx + ow * 4);
        // d = v - (first row start + first column inside): row t of the clipped window holds v iff
        // d - t * W < width (unsigned); as unsigned, every index before the window is beyond limit.
        __m512i d = _mm512_sub_epi32(v, _mm512_add_epi32(row0, _mm512_loadu_si512(col_lo + ow)));
        const __mmask16 in = _mm512_mask_cmplt_epu32_mask(m, d, limit);
        __m512i kc = _mm512_add_epi32(_mm512_loadu_si512(col_koff + ow), r0x4);
        for (int64_t t = 1; t < hh; ++t) {
            const __mmask16 ge = _mm512_mask_cmpge_epu32_mask(in, d, vW);
            d = _mm512_mask_sub_epi32(d, ge, d, vW);
            kc = _mm512_mask_add_epi32(kc, ge, kc, four);
        }
        const __mmask16 valid = _mm512_mask_cmplt_epu32_mask(in, d, _mm512_loadu_si512(col_wid + ow));
        const auto bad = static_cast<__mmask16>(m & ~valid & ~_mm512_mask_cmpeq_epi32_mask(m, v, minus1));
        if (bad) return ow + __builtin_ctz(bad);
        tile_block<KH>(_mm512_mask_add_epi32(none, valid, d, kc), _mm512_maskz_loadu_ps(m, grow + ow), rows, g.kH,
                       2 * ow - g.pW, g.W);
    }
    return -1;
}

// Window rows -> ring rows of output row oh (tile layout; the spare row for rows outside).
ACP_AVX512 void tile_rows(const BackwardPlan &P, float *ring, int64_t oh, float **rows) {
    const Geometry &g = P.g;
    const int64_t hs = oh * g.sH - g.pH, R = P.ring_rows;
    int64_t slot = ((hs % R) + R) % R;
    for (int64_t r = 0; r < g.kH; ++r, slot = slot + 1 == R ? 0 : slot + 1)
        rows[r] = hs + r >= 0 && hs + r < g.H ? ring + slot * P.tile_stride : ring + R * P.tile_stride;
}

ACP_AVX512 int64_t row_int32_tiles(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
                                     int64_t oh) {
    float *rows[kVectorMaxKh];
    tile_rows(P, ring, oh, rows);
    switch (P.g.kH) {
        case 2: return tiles_int32<2>(P, idx, grow, rows, oh);
        case 3: return tiles_int32<3>(P, idx, grow, rows, oh);
        default: return tiles_int32<0>(P, idx, grow, rows, oh);
    }
}

ACP_AVX512 void row_codes_tiles(const BackwardPlan &P, const int32_t *codes, const float *grow, float *ring,
                                  int64_t oh) {
    const Geometry &g = P.g;
    float *rows[kVectorMaxKh];
    tile_rows(P, ring, oh, rows);
    switch (g.kH) {
        case 2: tiles_codes<2>(codes, grow, rows, 2, g.Wo, g.W, g.pW); break;
        case 3: tiles_codes<3>(codes, grow, rows, 3, g.Wo, g.W, g.pW); break;
        default: tiles_codes<0>(codes, grow, rows, g.kH, g.Wo, g.W, g.pW); break;
    }
}
#endif  // ACP_X86


// One plane: returns the first bad output column j (flat in the plane), or -1. next_mask: the next
// plane's mask (nullptr: none; see prefetch_next_bits).
int64_t run_plane(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, char *gi, View4 giv,
                  const Slot &s, bool avx, bool use_tiles, LineStream *stream,
                  const uint8_t *next_mask) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), R = P.ring_rows, row_bytes = mask_row_bytes(g.Ho, g.Wo);
    const bool vec = avx && P.vec_ok;
    const bool tiles = vec && use_tiles && P.tiles_ok;
    // The ring layout of the path: column 0 of ring row 0, floats between rows.
    float *const ring = s.ring + (tiles ? P.tile_lead : 0);
    const int64_t stride = tiles ? P.tile_stride : P.ring_stride;
    // The ring is all +0 between planes: a row is cleared as it is stored, so a row entering the
    // windows finds its slot zeroed. Rows [0, pending) are stored; rows < live_hi have been in the ring.
    int64_t pending = 0, live_hi = 0;
    for (int64_t oh = 0;; ++oh) {
        // Store the rows no later window reaches (never-reached rows are zeros).
        int64_t done = oh < g.Ho ? g.row_lo(oh) : g.H;
        // Streamed 16-bit rows: hold one row back (the ring has a row to spare) when that makes
        // the stored piece end on a 64-byte line, so that its lines go out whole.
        if (stream && P.ring_rows > g.kH && es == 2 && giv.w == 1 && oh < g.Ho && done - 1 > pending &&
            reinterpret_cast<uintptr_t>(gi + done * giv.h * es) % 64 != 0 &&
            reinterpret_cast<uintptr_t>(gi + (done - 1) * giv.h * es) % 64 == 0)
            --done;
        while (pending < done) {
            // Rows adjacent in gradInput (a dense plane) and in the ring (no wrap) go out in one piece.
            const bool live = pending < live_hi;
            int64_t run = 1;
            if (giv.w == 1 && giv.h == g.W)
                while (pending + run < done && (pending + run < live_hi) == live &&
                       (!live || ((pending + run) % R != 0 && stride == g.W)))
                    ++run;
            char *dst = gi + pending * giv.h * es;
            if (live)
                store_row_clear(ring + (pending % R) * stride, run * g.W, P.dt, P.fp16, dst, giv.w, avx, stream);
            else
                store_row(nullptr, run * g.W, P.dt, P.fp16, dst, giv.w, avx, stream);
            pending += run;
        }
        if (oh == g.Ho) return -1;
        live_hi = std::max(live_hi, g.row_hi(oh));
        prefetch_next_bits(P, next_mask, oh);
        // A FLOAT row with w stride 1 is used in place; others are converted into the slot's row.
        const float *grow = s.grow;
        if (P.dt == DType::F32 && !P.fp16 && gov.w == 1)
            grow = reinterpret_cast<const float *>(go + oh * gov.h * es);
        else
            load_row(go + oh * gov.h * es, gov.w, g.Wo, P.dt, P.fp16, s.grow, avx);
        if (P.layout == MaskLayout::Int32) {
            const uint8_t *idx = mask_plane + oh * g.Wo * 4;
            int64_t bad;
#if ACP_X86
            if (tiles) {
                bad = row_int32_tiles(P, idx, grow, ring, oh);
            } else if (vec) {
                bad = row_int32_avx(P, idx, grow, s.ring, s.pos, oh);
            } else
#endif
                bad = row_int32_scalar(P, idx, grow, ring, stride, oh, 0, g.Wo);
            if (bad >= 0) return oh * g.Wo + bad;
        } else {
#if ACP_X86
            if (tiles) {
                if (row_bits_avx(P, mask_plane, row_bytes, grow, ring, s.pos, oh, s.pos))
                    row_codes_tiles(P, s.pos, grow, ring, oh);
                else  // an output with several bits: the whole row one output at a time
                    row_bits_scalar(P, mask_plane, row_bytes, grow, ring, stride, oh, 0, g.Wo);
            } else if (vec) {
                row_bits_avx(P, mask_plane, row_bytes, grow, s.ring, s.pos, oh);
            } else
#endif
                row_bits_scalar(P, mask_plane, row_bytes, grow, ring, stride, oh, 0, g.Wo);
        }
    }
}

}  // namespace

BackwardKernel::BackwardKernel(const Geometry &g, DType dt, bool fp16_compute, MaskLayout layout, int64_t threads) {
    auto P = std::make_shared<BackwardPlan>();
    P->g = g;
    P->dt = dt;
    P->fp16 = fp16_compute && dt == DType::F32;
    P->layout = layout;
    P->slots = std::max<int64_t>(1, std::min(std::max<int64_t>(threads, 1) * kPartsPerThread, g.planes()));
    // 16-bit results keep one ring row more when the stored pieces (sH rows each) would otherwise
    // start mid-ring: run_plane may then hold a finished row back (k3 s2: pieces of rows 2i, 2i + 1
    // in a ring of 4 stay whole; k2 s2 needs no spare row).
    P->ring_rows = std::max<int64_t>(g.kH, 1) + (dt != DType::F32 && g.sH > 0 && g.kH % g.sH != 0 ? 1 : 0);
    P->ring_stride = std::max<int64_t>(g.W, 1);
    P->tile_lead = std::max<int64_t>(g.pW, 0) % 16;
    P->tile_stride = round_up16(g.W + P->tile_lead);
    // both layouts fit, then 16 dummy floats for the skipped lanes of the per-output path
    // (the tile layout has one spare row more, for window rows outside the input)
    P->ring_floats = std::max(round_up16(P->ring_rows * P->ring_stride), (P->ring_rows + 1) * P->tile_stride) + 16;
    P->row_floats = round_up16(g.Wo) + 16;
    // The vector decode works in int32 lanes.
    const int64_t lim = int64_t{1} << 30;
    P->vec_ok = g.H * g.W < lim && P->ring_floats < lim && g.Wo < lim && g.kH * g.W < lim && g.kW < lim &&
                (layout == MaskLayout::Bits ? g.kernel_positions() <= 32 : g.kH <= kVectorMaxKh);
    for (int64_t k = 0; k < std::min<int64_t>(g.kernel_positions(), 32); ++k) {
        P->k_khW[k] = static_cast<int32_t>(k / g.kW * g.W);
        P->k_kw[k] = static_cast<int32_t>(k % g.kW);
        P->k_code[k] = static_cast<int32_t>(k / g.kW * 4 + k % g.kW);
    }
    // The tile path: codes kh * 4 + kw in int32 lanes, at most kVectorMaxKh window rows.
    P->tiles_ok = P->vec_ok && g.sW == 2 && g.kW == 2 && g.kH <= kVectorMaxKh;
    if (P->vec_ok) {
        P->col_lo.assign(static_cast<size_t>(g.Wo + 16), 0);
        P->col_wid.assign(static_cast<size_t>(g.Wo + 16), 1);  // (past Wo: 1, see the gather's window test)
        P->col_start.assign(static_cast<size_t>(g.Wo + 16), 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            P->col_lo[ow] = static_cast<int32_t>(g.col_lo(ow));
            P->col_wid[ow] = static_cast<int32_t>(g.col_hi(ow) - g.col_lo(ow));
            P->col_start[ow] = static_cast<int32_t>(ow * g.sW - g.pW);
        }
        P->col_koff.assign(static_cast<size_t>(g.Wo + 16), 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) P->col_koff[ow] = P->col_lo[ow] - P->col_start[ow];
    }
    if (P->vec_ok && layout == MaskLayout::Int32 && g.H * g.W <= kSmallPlane && g.Ho * g.Wo <= kSmallPlane) {
        P->small_ok = true;
        P->ring_floats = std::max(P->ring_floats, round_up16(g.H * g.W) + 16);
        P->pair_stride = round_up16(g.Ho * g.Wo) + 16;  // a second plane's positions
        P->row_floats = std::max(P->row_floats, 2 * P->pair_stride);
        const auto outs = static_cast<size_t>(round_up16(g.Ho * g.Wo));
        P->win_base.assign(outs, 0);
        P->win_limit.assign(outs, 0);
        P->win_wid.assign(outs, 0);
        for (int64_t oh = 0; oh < g.Ho; ++oh)
            for (int64_t ow = 0; ow < g.Wo; ++ow) {
                const auto j = static_cast<size_t>(oh * g.Wo + ow);
                P->win_base[j] = static_cast<int32_t>(g.row_lo(oh) * g.W + g.col_lo(ow));
                P->win_limit[j] = static_cast<int32_t>((g.row_hi(oh) - g.row_lo(oh)) * g.W);
                P->win_wid[j] = static_cast<int32_t>(g.col_hi(ow) - g.col_lo(ow));
            }
    }
    // The gather path: stride 1, 16-lane blocks reaching at most 15 columns to their left.
    if (P->vec_ok && g.sH == 1 && g.sW == 1 && g.kW <= 16 && g.kH <= kMaxGatherKh) {
        P->gather_ok = true;
        // a row: 16 lead entries, the outputs, a pad for lanes up to 46 entries past Wo (kW <= 16)
        P->gather_row = 16 + round_up16(g.Wo) + 64;
        // span + 1 rows of int32 indices (one of pad values), span gradOutput rows
        const int64_t span = g.kH + kGatherRows - 1;
        P->ring_floats = std::max(P->ring_floats, (2 * span + 1) * P->gather_row + 16);
        // kGatherRows rows of sums, each with room for a last block reaching 31 columns past W
        P->gather_sums = kGatherRows * ((g.W + 31) / 32 * 32 + 32);
        P->row_floats = std::max(P->row_floats, P->gather_sums + 16);
    }
    const bool k2s2 = g.kH == 2 && g.kW == 2 && g.sH == 2 && g.sW == 2 && g.pH == 0 && g.pW == 0;
    const bool k3s2 = g.kH == 3 && g.kW == 3 && g.sH == 2 && g.sW == 2;
    // (k3 s2 p0 rows of fewer than 16 outputs - one partial block each - stay on the small-plane path
    // where it applies: 32x480x28x28 ceil BF16 was 3 % slower on the parity path)
    const bool k3s2p1 = k3s2 && g.pH == 1 && g.pW == 1,
               k3s2p0 = k3s2 && g.pH == 0 && g.pW == 0 && !(P->small_ok && g.Wo < 16);
    if (P->vec_ok && (k2s2 || k3s2p1 || k3s2p0)) {
        P->parity = k3s2p1 ? BackwardPlan::Parity::K3S2P1 : k3s2p0 ? BackwardPlan::Parity::K3S2P0 : BackwardPlan::Parity::K2S2;
        // blocks of 16 outputs cover the W columns: at most Wo + 16 ring entries
        P->dir_cols = round_up16(g.Wo) + 32;
        P->stage_row = (g.W * elem_size(dt) + 63) / 64 * 64;  // (rows on whole lines: no split stores)
        // (+ 128: stage_stream_begin's line in front, a line of slack; + 64: the streamed rows' half line)
        P->stage_bytes = 2 * P->stage_row + 192;
        for (int64_t k = 0; k < 9; ++k)
            for (int l = 0; l < 16; ++l) P->pos_off[k][l] = static_cast<int32_t>(k / 3 * g.W + k % 3);
    }
    P->slot_bytes = static_cast<int64_t>(slot_bytes(*P));
    P->bad_bytes = P->slots * 64;
    P->sets.resize(acp::SlotPool::slots(P->slots, threads));
    plan_ = std::move(P);
}

uint64_t BackwardKernel::scratch_bytes() const {
    return static_cast<uint64_t>(plan_->bad_bytes + plan_->sets.size() * plan_->slot_bytes);
}

bool BackwardKernel::run(const void *gradOutput, View4 go, const uint8_t *mask, void *gradInput, View4 gi,
                         void *scratch, BadIndex *bad) const {
    const BackwardPlan &P = *plan_;
    const Geometry &g = P.g;
    if (g.planes() <= 0 || g.H <= 0 || g.W <= 0) return true;
    const bool avx = use_avx512(isa_);
    const int64_t es = elem_size(P.dt);
    const bool parity = avx && parity_ && P.parity != BackwardPlan::Parity::None && gi.w == 1;
    // (16-bit k3 rows: streamed only where the blocks stream them themselves, see kStreamBytes)
    const bool k3_16 = parity && P.parity != BackwardPlan::Parity::K2S2 && es == 2 && stream16_rows(g, gi);
    // (int32 planes narrower than a block stay on the small-plane path: 7x7, 45 ns a plane against
    // the gather's 126 - its ring and pads are set up per plane)
    const bool gather = avx && gather_ && P.gather_ok && !parity && !(small_ && P.small_ok && g.W < 16);
    // (the gather path stores plainly, its lines fetched for writing ahead: streamed 28-column
    // FLOAT rows went through the line stream's partial lines 25 % slower)
    const bool stream = avx && gi.w == 1 &&
                        (store_ == StoreMode::Streaming ||
                         (store_ == StoreMode::Auto && !gather &&
                          (es == 4 || (parity && P.parity == BackwardPlan::Parity::K2S2) || k3_16) &&
                          g.planes() * g.H * g.W * es > kStreamBytes));
    const int64_t mask_plane = P.layout == MaskLayout::Int32 ? g.Ho * g.Wo * 4 : mask_plane_bytes(g);
    const bool small = avx && small_ && P.small_ok && !parity && !gather;
    const bool small_direct = small && P.dt == DType::F32 && !P.fp16 && !stream && go.w == 1 && go.h == g.Wo &&
                              gi.w == 1 && gi.h == g.W;

    // Part si takes planes [si * planes / slots, (si + 1) * planes / slots) on whichever thread is
    // free, with its own failure record and a set of scratch taken while it runs (one set per
    // thread, acp::SlotPool; a part resets what it reads of its set): a plane's bits never depend
    // on which part, set or thread computes it.
    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t si = range.begin(); si != range.end(); ++si) {
            const acp::SlotPool::Lease set(P.sets);
            const Slot s = slot_at(P, scratch, si, set.index());
            LineStream ls;
            *s.bad = BadIndex{};
            std::memset(s.ring, 0, static_cast<size_t>(P.ring_floats) * 4);
            const int64_t p0 = si * g.planes() / P.slots, p1 = (si + 1) * g.planes() / P.slots;
            // (n, c) of plane p and of the next one, stepped rather than divided: small planes are
            // ~50 ns each
            int64_t n = p0 / g.C, c = p0 % g.C;
            for (int64_t p = p0; p < p1; ++p) {
                const int64_t nn = c + 1 == g.C ? n + 1 : n, nc = c + 1 == g.C ? 0 : c + 1;
                const char *goP = static_cast<const char *>(gradOutput) + (n * go.n + c * go.c) * es;
                char *giP = static_cast<char *>(gradInput) + (n * gi.n + c * gi.c) * es;
                const bool more = p + 1 < p1;
                const char *next_go = more ? static_cast<const char *>(gradOutput) + (nn * go.n + nc * go.c) * es : nullptr;
                const uint8_t *next_mask = more ? mask + (p + 1) * mask_plane : nullptr;
                const uint8_t *maskP = mask + p * mask_plane;
                n = nn, c = nc;
                LineStream *lsp = stream ? &ls : nullptr;
#if ACP_X86
                if (small_direct) {  // planes p and p + 1 at once
                    char *next_gi = more ? static_cast<char *>(gradInput) + (nn * gi.n + nc * gi.c) * es : nullptr;
                    int which = 0;
                    const int64_t j = run_planes_small_direct(P, goP, maskP, giP, next_go, next_mask, next_gi, s, &which);
                    if (j >= 0) {
                        int32_t v = 0;
                        std::memcpy(&v, mask + (p + which) * mask_plane + j * 4, 4);
                        *s.bad = BadIndex{p + which, j, v};
                        break;
                    }
                    if (more) {
                        ++p;
                        if (++c == g.C) c = 0, ++n;
                    }
                    continue;
                }
                const int64_t j = parity ? run_plane_parity(P, goP, go, maskP, giP, gi, s, lsp, next_mask)
                                  : gather ? run_plane_gather(P, goP, go, maskP, giP, gi, s, lsp, next_mask)
                                  : small  ? run_plane_small(P, goP, go, maskP, giP, gi, s, lsp)
                                          : run_plane(P, goP, go, maskP, giP, gi, s, avx, tiles_, lsp, next_mask);
#else
                (void)parity, (void)gather, (void)small, (void)small_direct;
                const int64_t j = run_plane(P, goP, go, maskP, giP, gi, s, avx, tiles_, lsp, next_mask);
#endif
                if (j >= 0) {  // this slot's first bad index; later planes do not matter
                    int32_t v = 0;
                    std::memcpy(&v, mask + p * mask_plane + j * 4, 4);
                    *s.bad = BadIndex{p, j, v};
                    break;
                }
            }
            if (stream) stream_finish(ls);
        }
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, P.slots, 1), body, tbb::simple_partitioner());

    for (int64_t si = 0; si < P.slots; ++si) {  // parts cover ascending plane ranges: the first found is first
        const BadIndex &b = *bad_at(P, scratch, si);
        if (b.found()) {
            *bad = b;
            return false;
        }
    }
    return true;
}

}  // namespace mpool
