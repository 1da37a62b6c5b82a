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
// in the same order, the same bits again. Square k2 s2 p0 and k3 s2 p1 windows (the common
// pools) take the parity path instead (see there): no ring positions, no scatter - gradInput's even
// and odd columns as masked vector adds of the gradOutput values whose mask names them, rows
// finished as soon as no later window reaches them and stored in dt whole; the same bits again.
// Other small planes with int32 masks take the small-plane path (see there): the whole plane in
// the ring, decoded, added and stored at once; the same bits again.
#include "maxpool_backward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "maxpool_rows.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MPOOL_X86 1
#include <immintrin.h>
#define MPOOL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define MPOOL_X86 0
#endif

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

struct BackwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    bool fp16 = false;
    MaskLayout layout = MaskLayout::Int32;
    int64_t slots = 1;
    // ring path: kH rows of W floats, then 16 dummy floats for skipped lanes
    int64_t ring_rows = 1, ring_stride = 1, ring_floats = 0;
    // The tile path's ring layout: rows tile_stride floats apart (a multiple of 16), column c at
    // tile_lead + c, so that every tile (first column 32 * b - pW) starts on a 64-byte line.
    int64_t tile_stride = 0, tile_lead = 0;
    int64_t row_floats = 0;  // one gradOutput row (+ slack)
    bool vec_ok = false;     // the int32 lane tables below are valid (AVX-512 decode)
    std::vector<int32_t> col_lo, col_wid;  // per ow (zero padded by 16): clipped window start, width
    std::vector<int32_t> col_start;        // per ow: unclipped window start ow * sW - pW
    int32_t k_khW[32] = {}, k_kw[32] = {};  // per kernel position k < 32: kh * W and kw (bit masks)
    // Tile path (sW == 2 and kW == 2, see tile_block): per ow the first kernel column
    // inside the input (col_lo - col_start), and per kernel position k < 32 its code kh * 4 + kw.
    bool tiles_ok = false;
    std::vector<int32_t> col_koff;
    int32_t k_code[32] = {};
    // Parity path (see run_plane_parity): square k2 s2 p0 or k3 s2 p1 windows. dir_cols: floats of
    // each ring half (a multiple of 16 with room for one block past Wo); stage_row / stage_bytes:
    // one / two gradInput rows of dt bytes, each starting on a 64-byte line.
    enum class Parity { None, K2S2, K3S2P1 } parity = Parity::None;
    int64_t dir_cols = 0, stage_bytes = 0, stage_row = 0;
    int64_t slot_bytes = 0;
    // k3, per kernel position k: kh * W + kw in 16 lanes, the int32 blocks' compare operands (made
    // once here: made per row, they were ~10 % of a plane's time)
    alignas(64) int32_t pos_off[9][16] = {};
    // Small-plane path (run_plane_small): int32 masks, planes of at most kSmallPlane elements. Per
    // output j of a plane (zero padded by 16): the flat index of its clipped window's first
    // element, its rows times W, its width.
    bool small_ok = false;
    int64_t pair_stride = 0;  // between two planes' positions (run_planes_small_direct)
    std::vector<int32_t> win_base, win_limit, win_wid;
};

namespace {

// A slot's scratch: its first failure, the ring, one gradOutput row, its ring positions.
struct Slot {
    BadIndex *bad;
    float *ring;
    float *grow;
    int32_t *pos;
    float *ringE, *ringO;  // parity path: the pending odd row, even and odd columns
    uint8_t *stage;        // parity path: finished gradInput rows in dt bytes
    uint8_t *half;         // parity path, streamed 16-bit rows: the next line's first 32 bytes (64-byte aligned)
};

Slot slot_at(const BackwardPlan &P, void *scratch, int64_t s) {
    auto *base = static_cast<char *>(scratch) + s * P.slot_bytes;
    Slot r{};
    r.bad = reinterpret_cast<BadIndex *>(base);
    r.ring = reinterpret_cast<float *>(base + 64 + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64);
    r.grow = r.ring + P.ring_floats;
    r.pos = reinterpret_cast<int32_t *>(r.grow + P.row_floats);
    r.ringE = reinterpret_cast<float *>(r.pos + P.row_floats);
    r.ringO = r.ringE + P.dir_cols;
    r.stage = reinterpret_cast<uint8_t *>(r.ringO + P.dir_cols);
    r.half = r.stage + P.stage_bytes - 64;
    return r;
}

uint64_t slot_bytes(const BackwardPlan &P) {
    // ring, gradOutput row, positions; the parity path's ring halves, its stage
    const int64_t floats = P.ring_floats + 2 * P.row_floats + 2 * P.dir_cols;
    return static_cast<uint64_t>((128 + floats * 4 + P.stage_bytes + 63) / 64 * 64);  // + 64: the ring's alignment
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
        ring[(ih % P.ring_rows) * stride + iw] += grow[ow];
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
            ring[(ih % P.ring_rows) * stride + iw] += grow[ow];
        }
    }
}

// The one accumulation loop of the vector paths: lanes in ascending output order.
inline void add_lanes(float *ring, const int32_t *pos, const float *g, int64_t n) {
#pragma GCC unroll 8
    for (int64_t l = 0; l < n; ++l) ring[pos[l]] += g[l];
}

#if MPOOL_X86
#define MPOOL_AI MPOOL_AVX512 inline __attribute__((always_inline))

constexpr __mmask16 kAll = 0xffff;
constexpr int32_t kNoCode = 0x7fffffff;  // tile path: an output without a contribution

MPOOL_AVX512 inline __attribute__((always_inline)) __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1u);
}

// Ring position of flat offset x = slot * W + column when slot may run one ring past its end.
MPOOL_AVX512 inline __m512i wrap_ring(__m512i x, __m512i ring_size) {
    return _mm512_mask_sub_epi32(x, _mm512_cmpge_epi32_mask(x, ring_size), x, ring_size);
}

// The window test of 16 int32 indices v (lanes m): d = v - start, the window's first element (flat),
// is in the window when d < hh * W as unsigned (every index below the start, and every negative
// one, is beyond that) and d mod W < width - d mod W by hh - 1 conditional subtractions of W instead
// of a division. Returns the lanes in their window; *bad: the lanes neither there nor -1 (skipped).
// HH: hh when 2 or 3 (the subtractions unrolled), 0: hh at run time.
template <int HH>
MPOOL_AI __mmask16 window_test(__m512i v, __mmask16 m, __m512i start, __m512i limit, __m512i width, int64_t hh,
                               __m512i vW, __mmask16 *bad) {
    __m512i d = _mm512_sub_epi32(v, start);
    __mmask16 valid = _mm512_mask_cmplt_epu32_mask(m, d, limit);
#pragma GCC unroll 2
    for (int64_t t = 1; t < (HH ? HH : hh); ++t)
        d = _mm512_mask_sub_epi32(d, _mm512_mask_cmpge_epu32_mask(valid, d, vW), d, vW);
    valid = _mm512_mask_cmplt_epu32_mask(valid, d, width);
    const __mmask16 skip = _mm512_mask_cmpeq_epi32_mask(m, v, _mm512_set1_epi32(-1));
    *bad = static_cast<__mmask16>(m & ~valid & ~skip);
    return valid;
}

// HH: the clipped window's row count when 2 or 3 (the subtractions unrolled), 0: any.
template <int HH>
MPOOL_AVX512 int64_t row_int32_avx_t(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
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

MPOOL_AVX512 int64_t row_int32_avx(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
                                   int32_t *pos, int64_t oh) {
    switch (P.g.row_hi(oh) - P.g.row_lo(oh)) {
        case 3: return row_int32_avx_t<3>(P, idx, grow, ring, pos, oh);
        case 2: return row_int32_avx_t<2>(P, idx, grow, ring, pos, oh);
        default: return row_int32_avx_t<0>(P, idx, grow, ring, pos, oh);
    }
}


// With codes == nullptr: ring positions into pos, then the additions. With codes: the tile codes of
// the row into codes (nothing added) - or false, before anything, when an output has several bits.
MPOOL_AVX512 bool row_bits_avx(const BackwardPlan &P, const uint8_t *mask_plane, int64_t row_bytes,
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
MPOOL_AVX512 inline __m512i spread_lo() { return _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0); }
MPOOL_AVX512 inline __m512i spread_hi() {
    return _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
}

// acc + g in the lanes of m, with acc as the first source: of two NaNs x86 returns the first
// source's, and the scalar loop's `ring[p] += g` keeps the sum's (the earliest NaN of the
// element). The intrinsic would let the compiler swap the commutative operands, so it is spelled out.
MPOOL_AI __m512 acc_add(__m512 acc, __mmask16 m, __m512 g) {
    __asm__("vaddps %2, %0, %0%{%1%}" : "+v"(acc) : "Yk"(m), "v"(g));
    return acc;
}

// One tile: codes and values of outputs ow0 .. ow0 + 15 into the window rows' ring rows at columns
// c0 .. c0 + 31. rows[r]: window row r's ring row (column 0). KH: kH when 2 or 3 (the row loop
// unrolled), 0: nrows at run time.
template <int KH>
MPOOL_AVX512 inline __attribute__((always_inline)) void tile_block(__m512i code, __m512 gv, float *const *rows,
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
        tl = acc_add(tl, _mm512_cmpeq_epi32_mask(cl, want), gl);
        th = acc_add(th, _mm512_cmpeq_epi32_mask(ch, want), gh);
        _mm512_mask_storeu_ps(p, m_lo, tl);
        _mm512_mask_storeu_ps(p + 16, m_hi, th);
        want = _mm512_add_epi32(want, _mm512_set1_epi32(4));
    }
}

// Bit masks: one output row's additions from its codes (row_bits_avx).
template <int KH>
MPOOL_AVX512 void tiles_codes(const int32_t *codes, const float *grow, float *const *rows, int64_t kh, int64_t Wo,
                              int64_t W, int64_t pW) {
    for (int64_t ow = 0; ow < Wo; ow += 16)
        tile_block<KH>(_mm512_loadu_si512(codes + ow), _mm512_maskz_loadu_ps(tail16(Wo - ow), grow + ow), rows, kh,
                       2 * ow - pW, W);
}

// Int32 masks: the decode fused with the additions, 16 outputs at a time. Returns the first output
// column whose index is out of its window (earlier outputs of the row may have been added: the
// run fails then), or -1.
template <int KH>
MPOOL_AVX512 int64_t tiles_int32(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *const *rows,
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
MPOOL_AVX512 void tile_rows(const BackwardPlan &P, float *ring, int64_t oh, float **rows) {
    const Geometry &g = P.g;
    const int64_t hs = oh * g.sH - g.pH, R = P.ring_rows;
    int64_t slot = ((hs % R) + R) % R;
    for (int64_t r = 0; r < g.kH; ++r, slot = slot + 1 == R ? 0 : slot + 1)
        rows[r] = hs + r >= 0 && hs + r < g.H ? ring + slot * P.tile_stride : ring + R * P.tile_stride;
}

MPOOL_AVX512 int64_t row_int32_tiles(const BackwardPlan &P, const uint8_t *idx, const float *grow, float *ring,
                                     int64_t oh) {
    float *rows[kVectorMaxKh];
    tile_rows(P, ring, oh, rows);
    switch (P.g.kH) {
        case 2: return tiles_int32<2>(P, idx, grow, rows, oh);
        case 3: return tiles_int32<3>(P, idx, grow, rows, oh);
        default: return tiles_int32<0>(P, idx, grow, rows, oh);
    }
}

MPOOL_AVX512 void row_codes_tiles(const BackwardPlan &P, const int32_t *codes, const float *grow, float *ring,
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
#endif  // MPOOL_X86

// ---- parity path: square k2 s2 p0 and k3 s2 p1 windows, AVX-512, dense gradInput rows ----
//
// At column stride 2 the gradInput columns split by parity: with 16 outputs l = 0 .. 15 of a block
// (ow = ow0 + l), the even column 2 * ow gets kernel column kw 0 (k2) or 1 (k3) of output ow only,
// the odd column 2 * ow + 1 gets kw 1 (k2), or kw 2 of ow and kw 0 of ow + 1 (k3). So a block's 32
// columns of one window row are two 16-lane vectors, each lane one or two masked adds of the
// gradOutput value (or of its neighbour's) where that output's kernel position matches - no
// scatter, no permute until the two halves are interleaved as they are stored. The rows split the
// same way: k2 window rows 2 oh and 2 oh + 1 and the k3 centre row 2 oh get contributions of output
// row oh only and are finished at once; k3's last window row 2 oh + 1 waits in a FLOAT ring row (its
// even and odd halves) for the first window row of output row oh + 1. Finished rows are converted
// into a stage of dt bytes and stored from there whole (streamed when large).
//
// The same bits as the other paths: every sum starts at +0 (a masked add on zeros: lanes without a
// contribution stay +0, a lane with one gets 0 + g) and takes its contributions in ascending output
// order (ring row first, then output ow before ow + 1). Several bits of one output (bit masks not
// from our forward) route to distinct elements, so they need nothing special; bits into the padding
// land in rows that are skipped or lanes that are never stored (the kw 0 of ow 0 at p1 is in no lane).
//
// Measured (Zen 4, 1 thread, 64 planes of 112x112 in L2/L3, k3 s2 p1, plain stores), per plane:
// FLOAT 2.3 us, FLOAT16 2.3, BF16 2.3, FLOAT16 bit mask 2.2, FLOAT computed as FLOAT16 with the bit
// mask 3.0. Tried and dropped (no gain or slower): each block's neighbour values shifted out of the
// next block's (valignd, one conversion less but a loop-carried value), k2's kernel-position
// offsets from the plan's table (k3's come from there: -8 to -16 %), the bit-mask prefetch one plane further ahead (then
// compiled away, see prefetch_next_bits: not retried),
// one check of the bad lanes per row instead of per block (+4 %), vcvtne2ps2bf16 for the BF16 rows
// rounded in integers (a guard per vector costs what it saves; the Out::Bf16Cpu rows, guarded once
// per plane, use it), rows stored one output row late (store forwarding was not the cost of 16-bit rows
// streamed through the stage: the stage's copy and its partial lines were - the blocks now stream
// whole lines themselves, see stream_half_lines). Zen 5 (session 18, one thread, 8 planes in L2): BF16 and
// FLOAT16 1.43 us, FLOAT 1.54, FLOAT computed as FLOAT16 with the bit mask 2.1; bit-mask words read
// by kmovw straight from memory when a row starts on a byte: -3 %, not kept.
// BF16 k3 (session 20): the check that a plane's sums stay normal moved from a scan of gradOutput
// before the plane into the blocks (one minimum per block, min_magnitude_less1): full size, 2
// threads, 895 -> 809 ns a plane; classifying each sum with vfpclassps instead was 8 % slower in L2.

#if MPOOL_X86
MPOOL_AVX512 inline __attribute__((always_inline)) __mmask16 lanes16(int64_t n) { return n <= 0 ? 0 : tail16(n); }

// The kernel-position masks of a block of 16 outputs ow0 + l, made where they are used (AVX-512 has
// 8 mask registers): m(k, kw) for position k = kh * KW + kw of output ow0 + l, m1(kh) for position
// (kh, 0) of the neighbour ow0 + l + 1 (k3 only).
//
// Int32 masks: an index routes to position (kh, kw) iff it equals that position's flat index
// (hs + kh) * W + 2 * ow - pW + kw, the position inside the input: d = index - (flat index of
// (0, 0)) == kh * W + kw, one compare per position, no division. Any index that is neither -1 nor
// one of its window's positions inside the input is bad (the neighbour's are checked in its own
// lane): checked on its own, not from the compares of the additions, as d - lo - kh * W < n for some
// window row kh inside the input, with lo / n the first kernel column inside the input and their
// count - three subtractions and unsigned minima, two compares.
struct Int32Block {
    __m512i d, d1;
    const __m512i *off;  // kh * W + kw per position k
    __m512i v;  // the indices
    __mmask16 live, live1, col_in[3], bad;
    MPOOL_AI __mmask16 bad_lanes() const { return bad ? _mm512_mask_cmpneq_epi32_mask(bad, v, _mm512_set1_epi32(-1)) : 0; }
    MPOOL_AI __mmask16 m(int k, int kw) const { return _mm512_mask_cmpeq_epi32_mask(col_in[kw], d, off[k]); }
    MPOOL_AI __mmask16 m1(int kh) { return _mm512_mask_cmpeq_epi32_mask(live1, d1, off[kh * 3 + 2]); }
};

// FULL: outputs ow0 .. ow0 + 16 exist and every kernel column of the block lies inside the input;
// FIRST (with FULL): the same but for the k3 block at column 0, whose lane 0 has its kernel column 0
// in the left padding (column -1) - the one lane the edge code would otherwise be run for.
// COLS (without FULL): the last block of a row, fewer than 16 outputs, all of whose kernel columns
// lie inside the input (112 columns: outputs 48 to 55) - the column checks left out there too.
// a, b, c: window rows 0, 1, 2 lie inside the input.
template <bool K3, bool FULL, bool FIRST = false, bool COLS = FULL>
MPOOL_AI Int32Block int32_block(const Geometry &g, const uint8_t *idx, int64_t hs, int64_t ow0, const __m512i *off,
                                bool a, bool bb, bool c) {
    constexpr int KW = K3 ? 3 : 2;
    Int32Block b;
    b.off = off;
    b.live = FULL ? kAll : lanes16(g.Wo - ow0);
    b.live1 = FULL ? kAll : lanes16(g.Wo - ow0 - 1);
    const __m512i lane2 = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i col = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(2 * ow0 - g.pW)), lane2);
    const __m512i base = _mm512_add_epi32(col, _mm512_set1_epi32(static_cast<int32_t>(hs * g.W)));
    const __m512i v = _mm512_maskz_loadu_epi32(b.live, idx + ow0 * 4);
    b.d = _mm512_sub_epi32(v, base);
    if (K3) b.d1 = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(b.live1, idx + (ow0 + 1) * 4), base);
    // kernel columns inside the input (unsigned: negative ones fail too); only the edge blocks have others
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    for (int kw = 0; kw < KW; ++kw)
        b.col_in[kw] = COLS ? b.live : _mm512_mask_cmplt_epu32_mask(b.live, _mm512_add_epi32(col, _mm512_set1_epi32(kw)), vW);
    if (FIRST) b.col_in[0] = static_cast<__mmask16>(0xfffe);
    // the check: kernel columns [lo, lo + n) inside the input (FULL: all KW)
    __m512i lo = _mm512_setzero_si512(), n = _mm512_set1_epi32(KW);
    if (!COLS || FIRST) {
        lo = _mm512_maskz_max_epi32(kAll, lo, _mm512_sub_epi32(lo, col));
        const __m512i hi = _mm512_maskz_min_epi32(kAll, n, _mm512_sub_epi32(vW, col));
        n = _mm512_maskz_max_epi32(kAll, _mm512_sub_epi32(hi, lo), _mm512_setzero_si512());
    }
    const __m512i u = _mm512_sub_epi32(b.d, lo);
    __m512i t = a ? u : _mm512_set1_epi32(-1);
    if (bb) t = _mm512_maskz_min_epu32(kAll, t, _mm512_sub_epi32(u, vW));
    if (K3 && c) t = _mm512_maskz_min_epu32(kAll, t, _mm512_sub_epi32(u, _mm512_add_epi32(vW, vW)));
    // -1 ("no maximum") fails the test too; it is taken out of the rare failing lanes only (bad_lanes)
    b.bad = _mm512_mask_cmpge_epu32_mask(b.live, t, n);
    b.v = v;
    return b;
}

// Bit masks: bit j of kernel position k's row is output j's bit (j = oh * Wo + ow0 + l < Ho * Wo,
// so the 8-byte read stays inside the row, see bits48). k2's four words are read up front; k3's
// nine are read where they are used (kept in an array, they went through the stack in every
// block: +0.4 to +0.7 us per 112x112 plane).
template <bool K3>
struct BitsBlock {
    const uint8_t *at;  // byte j / 8 of kernel position 0's row
    int64_t row_bytes;
    unsigned shift;     // j % 8
    uint64_t live, live1;
    uint64_t w[K3 ? 1 : 4];  // k2: the words
    MPOOL_AI uint64_t read(int k) const {
        uint64_t v;
        std::memcpy(&v, at + k * row_bytes, 8);
        return v >> shift;
    }
    MPOOL_AI uint64_t word(int k) const {
        if constexpr (K3) return read(k);
        return w[k];
    }
    MPOOL_AI __mmask16 m(int k, int) const { return static_cast<__mmask16>(word(k) & live); }
    MPOOL_AI __mmask16 m1(int kh) const { return static_cast<__mmask16>((word(kh * 3) >> 1) & live1); }
};

template <bool K3, bool FULL>
MPOOL_AI BitsBlock<K3> bits_block(const uint8_t *mask_plane, int64_t row_bytes, int64_t j, int64_t left) {
    BitsBlock<K3> b;
    b.at = mask_plane + (j >> 3);
    b.row_bytes = row_bytes;
    b.shift = static_cast<unsigned>(j & 7);
    b.live = FULL ? kAll : lanes16(left);
    b.live1 = FULL ? kAll : lanes16(left - 1);
    if constexpr (!K3)
        for (int k = 0; k < 4; ++k) b.w[k] = b.read(k);
    return b;
}

// How put32 writes a finished row. Rows: plain (masked) stores into a row, gradInput's own or the
// stage's. Stream: gradInput's own rows, streamed - FLOAT rows of whole aligned 64-byte lines, or
// 16-bit rows as stream16_rows describes. Bf16Cpu: BF16 rounded by the CPU's vcvtne2ps2bf16, which
// reads subnormals as zero - the blocks note values that could make a subnormal sum, and such a
// plane is done again (see run_plane_parity_dt); Bf16CpuStream: that, streamed.
enum class Out { Rows, Stream, Bf16Cpu, Bf16CpuStream };
constexpr bool streams(Out o) { return o == Out::Stream || o == Out::Bf16CpuStream; }
constexpr bool cpu_bf16(Out o) { return o == Out::Bf16Cpu || o == Out::Bf16CpuStream; }

// Out::Bf16Cpu*: low = the unsigned lane minimum of low and |g| - 1 of gradOutput values g (as
// FLOAT bits; +-0 wraps to the largest value). The plane's sums stay normal - and the CPU's rounding
// rounds them as float_to_bf16 does - if every g is 0, not finite, or at least 2^-100 in magnitude
// (sums_stay_normal): then each g is a multiple of 2^-107 (its ulp), and so is every FLOAT partial
// sum - exact below 2^-83, rounded to a multiple of its own ulp (>= 2^-106) above - hence 0 or at
// least 2^-107, far above FLOAT's subnormals (< 2^-126). (Checked on the values, one minimum per
// block, rather than classifying each sum: that cost 8 % in L2.)
MPOOL_AI __m512i min_magnitude_less1(__m512i low, __m512 g) {
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(g), _mm512_set1_epi32(0x7fffffff));
    return _mm512_maskz_min_epu32(kAll, low, _mm512_sub_epi32(mag, _mm512_set1_epi32(1)));  // (GCC 12: maskz)
}
MPOOL_AI bool sums_stay_normal(__m512i low) {
    return _mm512_cmplt_epu32_mask(low, _mm512_set1_epi32((27 << 23) - 1)) == 0;  // biased exponent < 27: below 2^-100
}

// Streamed 16-bit rows (k3 s2 p1, see stream16_rows): 32 finished columns col0 .. col0 + 31 of a row
// (v, the row's last 16 when fewer are left) out as whole lines. A row starting on a line (every
// row when W % 32 == 0, the even rows else) streams each block as its line and keeps a last half
// block in `half`; a row starting half a line in (the odd rows when W % 32 == 16) streams the line
// ending in the block's first half - `half` (the previous block's second half, or for the row's
// first block the previous row's last half block) then those 16 columns - and keeps its second half.
MPOOL_AI void stream_half_lines(__m512i v, uint8_t *row, int64_t col0, int64_t W, uint8_t *half) {
    // (`half` holds the pending 32 bytes in its low half; GCC 12: maskz forms, nothing left undefined)
    uint8_t *p = row + col0 * 2;
    if (reinterpret_cast<uintptr_t>(p) % 64 == 0) {
        if (W - col0 >= 32) _mm512_stream_si512(reinterpret_cast<__m512i *>(p), v);
        else _mm512_store_si512(half, v);
        return;
    }
    const __m512i h = _mm512_load_si512(half);
    _mm512_stream_si512(reinterpret_cast<__m512i *>(p - 32), _mm512_maskz_shuffle_i64x2(__mmask8{0xff}, h, v, _MM_SHUFFLE(1, 0, 1, 0)));
    if (W - col0 > 16) _mm512_store_si512(half, _mm512_maskz_shuffle_i64x2(__mmask8{0xff}, v, v, _MM_SHUFFLE(3, 2, 3, 2)));
}

// 32 gradInput columns col0 .. col0 + 31 from their even and odd halves, rounded as stored, into a
// row (columns >= W are not written), as O says. EXACT_E / EXACT_O: every lane of that half is +0 or
// 0 + g of one gradOutput value g already in the stored format (one contribution), so its rounding
// is the identity and is left out (BF16 keeps the high halves - 0 + g turned a signalling NaN
// quiet, as the rounding would; FLOAT computed as FLOAT16 is stored as it is).
template <DType DT, bool FP16, Out O, bool EXACT_E, bool EXACT_O, bool FULL>
MPOOL_AI void put32(__m512 e, __m512 o, uint8_t *row, int64_t col0, int64_t W, uint8_t *half) {
    const int64_t left = FULL ? 32 : W - col0;
    if constexpr (DT != DType::F32) {
        __m512i v;
        if constexpr (DT == DType::BF16 && cpu_bf16(O)) {
            // both halves in one conversion (e's low, o's high), then interleaved by one single-source permute
            const __m512i mix = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                                 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            v = _mm512_permutexvar_epi16(mix, acp::avx512::to_bf16_pair_no_subnormals(e, o));
        } else if constexpr (DT == DType::BF16) {
            const __m512i he = EXACT_E ? _mm512_castps_si512(e) : acp::avx512::to_bf16_high(e);
            const __m512i ho = EXACT_O ? _mm512_castps_si512(o) : acp::avx512::to_bf16_high(o);
            const __m512i high = _mm512_set_epi16(63, 31, 61, 29, 59, 27, 57, 25, 55, 23, 53, 21, 51, 19, 49, 17, 47, 15,
                                                  45, 13, 43, 11, 41, 9, 39, 7, 37, 5, 35, 3, 33, 1);
            v = _mm512_permutex2var_epi16(he, high, ho);
        } else {
            // (the mix reads the low halves only: the cast's upper halves are never read)
            const __m512i he = _mm512_castsi256_si512(acp::avx512::to_half(e));
            const __m512i ho = _mm512_castsi256_si512(acp::avx512::to_half(o));
            const __m512i mix = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38,
                                                 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
            v = _mm512_permutex2var_epi16(he, mix, ho);
        }
        if constexpr (streams(O)) {
            stream_half_lines(v, row, col0, W, half);
        } else {
            const __mmask32 m32 = left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << left) - 1);
            _mm512_mask_storeu_epi16(reinterpret_cast<uint16_t *>(row) + col0, m32, v);
        }
    } else {
        if (FP16 && !EXACT_E) e = acp::avx512::round_fp16(e);
        if (FP16 && !EXACT_O) o = acp::avx512::round_fp16(o);
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
        float *p = reinterpret_cast<float *>(row) + col0;
        (void)half;
        if constexpr (streams(O)) {  // gradInput's own row, whole aligned lines: a vector is all in or all out
            _mm512_stream_ps(p, _mm512_permutex2var_ps(e, lo, o));
            if (left > 16) _mm512_stream_ps(p + 16, _mm512_permutex2var_ps(e, hi, o));
        } else {
            _mm512_mask_storeu_ps(p, lanes16(left), _mm512_permutex2var_ps(e, lo, o));
            _mm512_mask_storeu_ps(p + 16, lanes16(left - 16), _mm512_permutex2var_ps(e, hi, o));
        }
    }
}

// gradOutput elements at .. at + 15 of a dense row in dt (lanes outside m: +0) as FLOAT, as load_row
// makes them (FLOAT computed as FLOAT16: rounded on the way).
template <DType DT, bool FP16>
MPOOL_AI __m512 load_g(const void *row, int64_t at, __mmask16 m) {
    if constexpr (DT == DType::F32) {
        const __m512 v = _mm512_maskz_loadu_ps(m, static_cast<const float *>(row) + at);
        return FP16 ? acp::avx512::round_fp16(v) : v;
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(row) + at);
        if constexpr (DT == DType::F16) return _mm512_maskz_cvtph_ps(kAll, h);
        return acp::avx512::from_bf16(h);
    }
}

// The additions of one block (M: Int32Block or BitsBlock) into the stage rows and the ring.
template <DType DT, bool FP16, Out O, bool K3, bool ALL, bool FULL, class M>
MPOOL_AI void parity_block(M &m, const void *grow, const Slot &s, uint8_t *rowA, uint8_t *rowB, int64_t ow0,
                           int64_t Wo, int64_t W, bool a, bool b, bool c, __m512i &tiny) {
    const int64_t col0 = 2 * ow0;
    const __m512 zero = _mm512_setzero_ps();
    // (FLOAT computed as FLOAT16: the row arrives rounded, see run_plane_parity_t)
    const __m512 gv = load_g<DT, false>(grow, ow0, FULL ? kAll : lanes16(Wo - ow0));
    // 0 + g once: a lane's first contribution is then a zero-masked move of it (same bits as a
    // zero-masked add on zeros, without a zeroed register per vector)
    const __m512 g0 = _mm512_add_ps(zero, gv);
    if constexpr (cpu_bf16(O)) tiny = min_magnitude_less1(tiny, gv);
    if constexpr (K3) {
        const __m512 g1 = load_g<DT, false>(grow, ow0 + 1, FULL ? kAll : lanes16(Wo - ow0 - 1));
        if (ALL || a) {  // window row 0 = the ring's row: kw 1 to even, kw 2 then the neighbour's kw 0 to odd
            __m512 e = _mm512_loadu_ps(s.ringE + ow0), o = _mm512_loadu_ps(s.ringO + ow0);
            e = acc_add(e, m.m(1, 1), gv);
            o = acc_add(o, m.m(2, 2), gv);
            o = acc_add(o, m.m1(0), g1);
            put32<DT, FP16, O, false, false, FULL>(e, o, rowA, col0, W, s.half);
        }
        if (ALL || b) {  // the centre row: even columns from one output only
            const __m512 e = _mm512_maskz_mov_ps(m.m(4, 1), g0);
            __m512 o = _mm512_maskz_mov_ps(m.m(5, 2), g0);
            o = acc_add(o, m.m1(1), g1);
            put32<DT, FP16, O, true, false, FULL>(e, o, rowB, col0, W, s.half);
        }
        if (ALL || c) {
            __m512 o = _mm512_maskz_mov_ps(m.m(8, 2), g0);
            _mm512_storeu_ps(s.ringE + ow0, _mm512_maskz_mov_ps(m.m(7, 1), g0));
            _mm512_storeu_ps(s.ringO + ow0, acc_add(o, m.m1(2), g1));
        }
    } else {  // disjoint windows: one contribution at most per element
        if (ALL || a)
            put32<DT, FP16, O, true, true, FULL>(_mm512_maskz_mov_ps(m.m(0, 0), g0), _mm512_maskz_mov_ps(m.m(1, 1), g0),
                                        rowA, col0, W, s.half);
        if (ALL || b)
            put32<DT, FP16, O, true, true, FULL>(_mm512_maskz_mov_ps(m.m(2, 0), g0), _mm512_maskz_mov_ps(m.m(3, 1), g0),
                                        rowB, col0, W, s.half);
    }
}

// Block ow0 of output row oh: its masks, its additions; the first bad int32 lane's column, or -1.
template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool ALL, bool FULL, bool FIRST = false, bool COLS = FULL>
MPOOL_AI int64_t parity_block_at(const Geometry &g, uint8_t *rowA, uint8_t *rowB, const void *grow, const uint8_t *mask_plane,
                                 int64_t row_bytes, const Slot &s, int64_t oh, int64_t ow0, const __m512i *off, bool a,
                                 bool b, bool c, __m512i &tiny) {
    const int64_t Wo = g.Wo;
    if constexpr (BITS) {
        BitsBlock<K3> m = bits_block<K3, FULL>(mask_plane, row_bytes, oh * Wo + ow0, Wo - ow0);
        parity_block<DT, FP16, O, K3, ALL, FULL>(m, grow, s, rowA, rowB, ow0, Wo, g.W, a, b, c, tiny);
    } else {
        Int32Block m = int32_block<K3, FULL, FIRST, COLS>(g, mask_plane + oh * Wo * 4, oh * g.sH - g.pH, ow0, off, ALL || a,
                                                    ALL || b, ALL || c);
        parity_block<DT, FP16, O, K3, ALL, FULL>(m, grow, s, rowA, rowB, ow0, Wo, g.W, a, b, c, tiny);
        if (const __mmask16 bad = m.bad_lanes()) return ow0 + __builtin_ctz(bad);
    }
    return -1;
}

// One output row's window rows: finished rows into rowA (window row 0) and rowB (the next) - the
// gradInput rows themselves or the stage - and k3's last window row into the ring. a / b / c: which of them lie inside the input (ALL: all of
// them, the tests compiled away). Returns the first output column with a bad int32 index, or -1.
// Inlined into the plane's row loop: as a call per row it cost 5 % (Zen 5, 112x112 16-bit planes).
template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool ALL>
MPOOL_AI int64_t parity_row(const BackwardPlan &P, const void *grow, const uint8_t *mask_plane, int64_t row_bytes,
                                const Slot &slot, int64_t oh, bool a, bool b, bool c, uint8_t *rowA, uint8_t *rowB,
                                __m512i &tiny) {
    // Local copies: the blocks' vector stores may alias anything reached through a pointer, so
    // the plan's sizes and the slot's pointers would be reloaded (and their broadcasts redone) in
    // every block; copies whose address never escapes stay in registers.
    const Geometry g = P.g;
    const Slot s = slot;
    const int64_t Wo = g.Wo;
    constexpr int KW = K3 ? 3 : 2;
    // k2's four compare operands stay in registers; k3's nine come from the plan's table
    __m512i off2[4];
    if constexpr (!K3)
        for (int k = 0; k < 4; ++k) off2[k] = _mm512_set1_epi32(static_cast<int32_t>(k / 2 * g.W + k % 2));
    const __m512i *off = K3 ? reinterpret_cast<const __m512i *>(P.pos_off) : off2;
    // full blocks: the interior ones (first kernel column >= 0, outputs up to ow0 + 16 exist, the
    // last column < W); the others with tail masks - but k3's block 0 (kernel column 0 of output 0
    // at column -1) as a full one whose lane 0 has no column 0 (FIRST): at 112 columns half the
    // blocks would be edge blocks otherwise; and a last block of fewer outputs whose kernel columns
    // are all inside (COLS) without the column checks
    for (int64_t ow0 = 0; 2 * ow0 < g.W; ow0 += 16) {
        const bool inner = ow0 + 17 <= Wo && 2 * (ow0 + 16) <= g.W && 2 * (ow0 + 15) - g.pW + KW - 1 < g.W;
        const bool full = inner && 2 * ow0 - g.pW >= 0;
        const bool first = K3 && inner && ow0 == 0 && g.pW == 1;
        const bool cols = !BITS && !inner && 2 * ow0 - g.pW >= 0 && ow0 < Wo &&
                          2 * (std::min(ow0 + 16, Wo) - 1) - g.pW + KW - 1 < g.W;
        const int64_t bad =
            full    ? parity_block_at<DT, FP16, O, K3, BITS, ALL, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny)
            : first ? parity_block_at<DT, FP16, O, K3, BITS, ALL, true, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny)
            : cols  ? parity_block_at<DT, FP16, O, K3, BITS, ALL, false, false, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny)
                    : parity_block_at<DT, FP16, O, K3, BITS, ALL, false>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny);
        if (bad >= 0) return bad;
    }
    return -1;
}

// The k3 ring row, finished after the last output row, into row.
template <DType DT, bool FP16, Out O>
MPOOL_AVX512 void parity_ring_out(const BackwardPlan &P, const Slot &s, uint8_t *row) {
    for (int64_t ow0 = 0, col0 = 0; col0 < P.g.W; ow0 += 16, col0 += 32)
        put32<DT, FP16, O, false, false, false>(_mm512_loadu_ps(s.ringE + ow0), _mm512_loadu_ps(s.ringO + ow0), row, col0, P.g.W, s.half);
}

template <DType DT, bool FP16, Out O, bool K3, bool BITS>
MPOOL_AI int64_t parity_row_any(const BackwardPlan &P, const void *grow, const uint8_t *mask_plane,
                                    int64_t row_bytes, const Slot &s, int64_t oh, bool a, bool b, bool c, uint8_t *rowA,
                                    uint8_t *rowB, __m512i &tiny) {
    if (a && b && (c || !K3)) return parity_row<DT, FP16, O, K3, BITS, true>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
    return parity_row<DT, FP16, O, K3, BITS, false>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
}

#endif  // MPOOL_X86

// Bit masks: output row oh's bits of the next plane, in each kernel position's row (next_mask ==
// nullptr: no next plane), while this plane computes. The hardware prefetchers leave these short
// runs - nine rows 6304 bytes apart at 112x112, 7 lines each - to demand misses: FLOAT computed as
// FLOAT16, k3, 32x64x112x112, 2 threads (Zen 5): 1.55 -> 1.22 us a plane. Int32 masks and
// gradOutput rows are left to the hardware: prefetching them cost 5 % on 16-bit int32 planes.
// (Until session 21 these prefetches were __builtin_prefetch calls that GCC 12 compiled away.)
inline void prefetch_next_bits(const BackwardPlan &P, const uint8_t *next_mask, int64_t oh) {
    if (!next_mask || P.layout != MaskLayout::Bits) return;
    const Geometry &g = P.g;
    const int64_t row_bytes = mask_row_bytes(g.Ho, g.Wo), b0 = oh * g.Wo / 8, b1 = ((oh + 1) * g.Wo + 7) / 8;
    for (int64_t k = 0; k < g.kernel_positions(); ++k) acp::prefetch_lines(next_mask + k * row_bytes + b0, b1 - b0);
}

// Whether the k3 blocks can stream 16-bit gradInput rows themselves (stream_half_lines), given a
// plane that starts on a 64-byte line: dense rows of W % 16 == 0 columns - 32 bytes per 16, so that
// every row starts on a line or, odd rows when W % 32 == 16, half a line in - and each row written
// whole, once, in address order: window rows 2 oh - 1 (odd) and 2 oh, then the ring's last row
// (even H, Ho = H / 2). A half line is carried from the end of each even row into the next row.
bool stream16_rows(const Geometry &g, View4 giv) {
    return giv.w == 1 && giv.h == g.W && g.W % 16 == 0 && g.H % 2 == 0 && g.Ho * 2 == g.H;
}

#if MPOOL_X86
// One plane on the parity path (AVX-512, gradInput rows dense): the contract of run_plane. The
// dtype, the window and the mask layout are template arguments here, so that the row loop calls
// its row kernel without a dispatch per row.
template <DType DT, bool FP16, Out O, bool K3, bool BITS>
MPOOL_AVX512 int64_t run_plane_parity_t(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                        char *gi, View4 giv, const Slot &s, LineStream *stream,
                                        const uint8_t *next_mask, bool *subnormal) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), row_bytes = mask_row_bytes(g.Ho, g.Wo), rb = g.W * es;
    constexpr bool k3 = K3;
    __m512i tiny = _mm512_set1_epi32(-1);  // Out::Bf16Cpu*: see min_magnitude_less1 (a local: kept in a register)
    int64_t stored = 0;  // gradInput rows [0, stored) are out
    // The blocks write gradInput's rows themselves with plain stores, and with streamed ones when
    // the rows are whole aligned 64-byte lines (FLOAT); otherwise the rows are finished in the
    // stage and leave it as whole lines through the line stream.
    const bool direct = !stream || streams(O);
    // Dense rows through the line stream: both finished rows of an output row are written into the
    // stage behind the pending partial line and leave it as whole streamed lines at once.
    const bool staged = !direct && giv.h == g.W;
    auto target = [&](int64_t row, uint8_t *stage) {
        return direct ? reinterpret_cast<uint8_t *>(gi + row * giv.h * es) : stage;
    };
    // row `row` (in `from`: the stage, or the row itself), after zeros for the rows before that no
    // window reached
    auto put = [&](int64_t row, const uint8_t *from) {
        for (; stored < row; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
        char *dst = gi + row * giv.h * es;
        if (from != reinterpret_cast<const uint8_t *>(dst)) store_bytes(from, rb, dst, stream);
        stored = row + 1;
    };
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
        prefetch_next_bits(P, next_mask, oh);
        // the gradOutput row in its dtype, converted in the blocks (a strided row gathered first)
        const char *grow = go + oh * gov.h * es;
        if (gov.w != 1) {
            for (int64_t i = 0; i < g.Wo; ++i)
                std::memcpy(reinterpret_cast<char *>(s.grow) + i * es, grow + i * gov.w * es, static_cast<size_t>(es));
            grow = reinterpret_cast<const char *>(s.grow);
        }
        if constexpr (FP16) {  // FLOAT computed as FLOAT16: the row rounded once, not in each block's two loads
            for (int64_t i = 0; i < g.Wo; i += 16) {
                const __m512 v = _mm512_maskz_loadu_ps(lanes16(g.Wo - i), reinterpret_cast<const float *>(grow) + i);
                _mm512_storeu_ps(s.grow + i, acp::avx512::round_fp16(v));
            }
            grow = reinterpret_cast<const char *>(s.grow);
        }
        // window rows hs, hs + 1 (finished here), k3: hs + 2 (into the ring)
        const int64_t hs = oh * g.sH - g.pH;
        const bool a = hs >= 0 && hs < g.H, b = hs + 1 >= 0 && hs + 1 < g.H, c = k3 && hs + 2 < g.H;
        if (staged && (a || b)) {
            const int64_t first = a ? hs : hs + 1;
            for (; stored < first; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
            uint8_t *rowA = stage_stream_begin(*stream, s.stage, gi + first * giv.h * es);
            uint8_t *rowB = a ? rowA + rb : rowA;
            const int64_t bad = parity_row_any<DT, FP16, O, K3, BITS>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
            if (bad >= 0) return oh * g.Wo + bad;
            stage_stream_end(*stream, s.stage, (a + b) * rb);
            stored = first + a + b;
            continue;
        }
        uint8_t *rowA = a ? target(hs, s.stage) : s.stage;
        uint8_t *rowB = b ? target(hs + 1, s.stage + P.stage_row) : s.stage + P.stage_row;
        const int64_t bad = parity_row_any<DT, FP16, O, K3, BITS>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
        if (bad >= 0) return oh * g.Wo + bad;
        if (a) put(hs, rowA);
        if (b) put(hs + 1, rowB);
    }
    const int64_t last = (g.Ho - 1) * g.sH - g.pH + 2;  // k3: the ring's row after the last output row
    if (k3 && last >= 0 && last < g.H) {
        uint8_t *row = target(last, s.stage);
        parity_ring_out<DT, FP16, O>(P, s, row);
        put(last, row);
    }
    for (; stored < g.H; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
    if constexpr (cpu_bf16(O)) *subnormal = !sums_stay_normal(tiny);
    return -1;
}

template <DType DT, bool FP16, Out O>
MPOOL_AVX512 int64_t run_plane_parity_k(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                        char *gi, View4 giv, const Slot &s, LineStream *stream,
                                        const uint8_t *next_mask, bool k3, bool bits, bool *subnormal) {
    if (k3 && bits) return run_plane_parity_t<DT, FP16, O, true, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (k3) return run_plane_parity_t<DT, FP16, O, true, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (bits) return run_plane_parity_t<DT, FP16, O, false, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    return run_plane_parity_t<DT, FP16, O, false, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
}

template <DType DT, bool FP16>
MPOOL_AVX512 int64_t run_plane_parity_dt(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                         char *gi, View4 giv, const Slot &s, LineStream *stream,
                                         const uint8_t *next_mask) {
    const bool k3 = P.parity == BackwardPlan::Parity::K3S2P1, bits = P.layout == MaskLayout::Bits;
    bool subnormal = false;
    if constexpr (DT == DType::F32) {
        // streamed FLOAT rows that are whole aligned lines: the blocks stream them out themselves
        const bool nt = stream && P.g.W % 16 == 0 && (giv.h * 4) % 64 == 0 && reinterpret_cast<uintptr_t>(gi) % 64 == 0;
        if (nt) return run_plane_parity_k<DT, FP16, Out::Stream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
    }
    // streamed 16-bit k3 rows: the blocks stream them out themselves (stream16_rows)
    const bool nt16 = DT != DType::F32 && stream && k3 && stream16_rows(P.g, giv) && reinterpret_cast<uintptr_t>(gi) % 64 == 0;
    if constexpr (DT == DType::BF16) {
        // k3's BF16 sums rounded by the CPU, which reads subnormals as zero: the blocks note values
        // that could make a subnormal sum (min_magnitude_less1), and such a plane is done again,
        // rounded in integers. Only where gradInput's own rows are written - not through the line
        // stream, which cannot take a plane back. (k2's sums are single values: no rounding.)
        if (k3 && acp::avx512::kCpuConvertsBf16 && (!stream || nt16)) {
            const int64_t bad = nt16 ? run_plane_parity_k<DT, FP16, Out::Bf16CpuStream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal)
                                     : run_plane_parity_k<DT, FP16, Out::Bf16Cpu>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
            if (bad >= 0 || !subnormal) return bad;
        }
    }
    if constexpr (DT != DType::F32)
        if (nt16) return run_plane_parity_k<DT, FP16, Out::Stream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
    return run_plane_parity_k<DT, FP16, Out::Rows>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
}

MPOOL_AVX512 int64_t run_plane_parity(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                      char *gi, View4 giv, const Slot &s, LineStream *stream,
                                      const uint8_t *next_mask) {
    if (P.dt == DType::F16) return run_plane_parity_dt<DType::F16, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    if (P.dt == DType::BF16) return run_plane_parity_dt<DType::BF16, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    if (P.fp16) return run_plane_parity_dt<DType::F32, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    return run_plane_parity_dt<DType::F32, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
}
#endif

#if MPOOL_X86
// ---- small-plane path: int32 masks, planes of at most kSmallPlane elements ----
//
// A small plane spends most of the row-at-a-time walk on the walk itself: per output row the
// window bounds, a call into the decode, the store of the rows just finished - and a store that
// reads back ring entries the scalar additions have just written waits for them. 32x832x7x7 k3 s1
// p1 took ~80 ns a plane on Zen 5 (2 threads). Here the ring holds the whole plane:
// one decode of all its outputs against the plan's per-output window tables, one addition loop in
// ascending output order, one store of the plane. The same sums in the same order: the same bits.
// Dense FLOAT planes (plainly stored) are summed in gradInput itself (run_planes_small_direct):
// zeroed, then added to - no ring to read back and clear - two planes at a time. Measured on Zen 5, 1 thread, 832 planes
// of 7x7 k3 s1 p1 in L2: the row walk 155 ns a plane, the ring 55, in place 45 (PyTorch 31; the
// additions, one dependent read-modify-write chain wherever neighbours share a maximum, are 70 %).
// Tried and dropped: at stride 1, blocks of 16 elements pulling their sums (per kernel position a
// masked compare of the shifted mask words and a masked add): 50-53 ns, the loads bound it.

// The window test of row_int32_avx_t for every output of a plane, each lane with its own window
// from the plan's tables (window_test). Returns the first output whose index is out of its window,
// or -1; with pos, the positions (the plane's flat index; skipped outputs: skip_to) for the additions.
// KH: kH when 2 or 3 (the subtractions unrolled), 0: any.
template <int KH>
MPOOL_AI int64_t check_plane_int32_t(const BackwardPlan &P, const uint8_t *idx, int32_t *pos, int32_t skip_to) {
    const Geometry &g = P.g;
    const int64_t outs = g.Ho * g.Wo;
    const int32_t *base = P.win_base.data(), *limit = P.win_limit.data(), *wid = P.win_wid.data();
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i dummy = _mm512_set1_epi32(skip_to);
    for (int64_t j = 0; j < outs; j += 16) {
        const __mmask16 m = tail16(outs - j);
        const __m512i v = _mm512_maskz_loadu_epi32(m, idx + j * 4);
        __mmask16 bad;
        const __mmask16 valid = window_test<KH>(v, m, _mm512_loadu_si512(base + j), _mm512_loadu_si512(limit + j),
                                                _mm512_loadu_si512(wid + j), g.kH, vW, &bad);
        if (bad) return j + __builtin_ctz(bad);
        if (pos) _mm512_storeu_si512(pos + j, _mm512_mask_blend_epi32(valid, dummy, v));
    }
    return -1;
}

MPOOL_AI int64_t check_plane_int32(const BackwardPlan &P, const uint8_t *idx, int32_t *pos, int32_t skip_to) {
    switch (P.g.kH) {
        case 3: return check_plane_int32_t<3>(P, idx, pos, skip_to);
        case 2: return check_plane_int32_t<2>(P, idx, pos, skip_to);
        default: return check_plane_int32_t<0>(P, idx, pos, skip_to);
    }
}

// The plane's gradOutput as FLOAT: in place when it is a dense FLOAT plane, else converted into dst
// (room for the plane).
const float *grad_plane(const BackwardPlan &P, const char *go, View4 gov, float *dst) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt);
    const bool dense = gov.w == 1 && gov.h == g.Wo;
    if (dense && P.dt == DType::F32 && !P.fp16) return reinterpret_cast<const float *>(go);
    if (dense) load_row(go, 1, g.Ho * g.Wo, P.dt, P.fp16, dst, true);  // (one call: small planes)
    else
        for (int64_t oh = 0; oh < g.Ho; ++oh) load_row(go + oh * gov.h * es, gov.w, g.Wo, P.dt, P.fp16, dst + oh * g.Wo, true);
    return dst;
}

// The FLOAT plane in the ring to gradInput (dt), in one piece when the plane is dense; the ring is
// left all +0.
void store_plane(const BackwardPlan &P, float *plane, char *gi, View4 giv, LineStream *stream) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), pieces = giv.w == 1 && giv.h == g.W ? 1 : g.H, n = pieces == 1 ? g.H * g.W : g.W;
    for (int64_t r = 0; r < pieces; ++r)
        store_row_clear(plane + r * g.W, n, P.dt, P.fp16, gi + r * giv.h * es, giv.w, true, stream);
}

MPOOL_AVX512 int64_t run_plane_small(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *idx, char *gi,
                                     View4 giv, const Slot &s, LineStream *stream) {
    const int64_t bad = check_plane_int32(P, idx, s.pos, static_cast<int32_t>(P.ring_floats - 16));
    if (bad >= 0) return bad;
    const float *grad = grad_plane(P, go, gov, s.grow);
    add_lanes(s.ring, s.pos, grad, P.g.Ho * P.g.Wo);
    store_plane(P, s.ring, gi, giv, stream);
    return -1;
}

// Dense FLOAT gradOutput and gradInput planes, plain stores: the sums in gradInput itself, two
// planes a and b at once (b: nullptr go for none) - their chains of additions are independent, so
// the core overlaps them. Returns -1, or the first bad output of plane *which (0: a, 1: b; a is
// then complete).
MPOOL_AVX512 int64_t run_planes_small_direct(const BackwardPlan &P, const char *go_a, const uint8_t *idx_a, char *gi_a,
                                             const char *go_b, const uint8_t *idx_b, char *gi_b, const Slot &s,
                                             int *which) {
    const int64_t ins = P.g.H * P.g.W, outs = P.g.Ho * P.g.Wo;
    int32_t *pos_a = s.pos, *pos_b = s.pos + P.pair_stride;
    *which = 0;
    if (const int64_t bad = check_plane_int32(P, idx_a, pos_a, -1); bad >= 0) return bad;
    int64_t bad_b = -1;
    if (go_b) bad_b = check_plane_int32(P, idx_b, pos_b, -1);
    const bool two = go_b && bad_b < 0;
    float *out_a = reinterpret_cast<float *>(gi_a), *out_b = reinterpret_cast<float *>(gi_b);
    const auto *grad_a = reinterpret_cast<const float *>(go_a), *grad_b = reinterpret_cast<const float *>(go_b);
    for (int64_t i = 0; i < ins; i += 16) {
        _mm512_mask_storeu_ps(out_a + i, tail16(ins - i), _mm512_setzero_ps());
        if (two) _mm512_mask_storeu_ps(out_b + i, tail16(ins - i), _mm512_setzero_ps());
    }
    if (two) {
#pragma GCC unroll 2
        for (int64_t l = 0; l < outs; ++l) {
            if (const int32_t q = pos_a[l]; q >= 0) out_a[q] += grad_a[l];
            if (const int32_t q = pos_b[l]; q >= 0) out_b[q] += grad_b[l];
        }
        return -1;
    }
#pragma GCC unroll 4
    for (int64_t l = 0; l < outs; ++l)
        if (const int32_t q = pos_a[l]; q >= 0) out_a[q] += grad_a[l];
    *which = 1;
    return bad_b;
}

#endif

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
#if MPOOL_X86
            if (tiles) {
                bad = row_int32_tiles(P, idx, grow, ring, oh);
            } else if (vec) {
                bad = row_int32_avx(P, idx, grow, s.ring, s.pos, oh);
            } else
#endif
                bad = row_int32_scalar(P, idx, grow, ring, stride, oh, 0, g.Wo);
            if (bad >= 0) return oh * g.Wo + bad;
        } else {
#if MPOOL_X86
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
        P->col_wid.assign(static_cast<size_t>(g.Wo + 16), 0);
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
    const bool k2s2 = g.kH == 2 && g.kW == 2 && g.sH == 2 && g.sW == 2 && g.pH == 0 && g.pW == 0;
    const bool k3s2p1 = g.kH == 3 && g.kW == 3 && g.sH == 2 && g.sW == 2 && g.pH == 1 && g.pW == 1;
    if (P->vec_ok && (k2s2 || k3s2p1)) {
        P->parity = k3s2p1 ? BackwardPlan::Parity::K3S2P1 : BackwardPlan::Parity::K2S2;
        // blocks of 16 outputs cover the W columns: at most Wo + 16 ring entries
        P->dir_cols = round_up16(g.Wo) + 32;
        P->stage_row = (g.W * elem_size(dt) + 63) / 64 * 64;  // (rows on whole lines: no split stores)
        // (+ 128: stage_stream_begin's line in front, a line of slack; + 64: the streamed rows' half line)
        P->stage_bytes = 2 * P->stage_row + 192;
        for (int64_t k = 0; k < 9; ++k)
            for (int l = 0; l < 16; ++l) P->pos_off[k][l] = static_cast<int32_t>(k / 3 * g.W + k % 3);
    }
    P->slot_bytes = static_cast<int64_t>(slot_bytes(*P));
    plan_ = std::move(P);
}

uint64_t BackwardKernel::scratch_bytes() const { return static_cast<uint64_t>(plan_->slots * plan_->slot_bytes); }

bool BackwardKernel::run(const void *gradOutput, View4 go, const uint8_t *mask, void *gradInput, View4 gi,
                         void *scratch, BadIndex *bad) const {
    const BackwardPlan &P = *plan_;
    const Geometry &g = P.g;
    if (g.planes() <= 0 || g.H <= 0 || g.W <= 0) return true;
    const bool avx = use_avx512(isa_);
    const int64_t es = elem_size(P.dt);
    const bool parity = avx && parity_ && P.parity != BackwardPlan::Parity::None && gi.w == 1;
    // (16-bit k3 rows: streamed only where the blocks stream them themselves, see kStreamBytes)
    const bool k3_16 = parity && P.parity == BackwardPlan::Parity::K3S2P1 && es == 2 && stream16_rows(g, gi);
    const bool stream = avx && gi.w == 1 &&
                        (store_ == StoreMode::Streaming ||
                         (store_ == StoreMode::Auto && (es == 4 || (parity && P.parity == BackwardPlan::Parity::K2S2) || k3_16) &&
                         g.planes() * g.H * g.W * es > kStreamBytes));
    const int64_t mask_plane = P.layout == MaskLayout::Int32 ? g.Ho * g.Wo * 4 : mask_plane_bytes(g);
    const bool small = avx && small_ && P.small_ok && !parity;
    const bool small_direct = small && P.dt == DType::F32 && !P.fp16 && !stream && go.w == 1 && go.h == g.Wo &&
                              gi.w == 1 && gi.h == g.W;

    // Part (slot) s takes planes [s * planes / slots, (s + 1) * planes / slots) with its own
    // scratch, on whichever thread is free: a plane's bits never depend on which part or thread
    // computes it.
    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t si = range.begin(); si != range.end(); ++si) {
            const Slot s = slot_at(P, scratch, si);
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
#if MPOOL_X86
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
                                  : small  ? run_plane_small(P, goP, go, maskP, giP, gi, s, lsp)
                                          : run_plane(P, goP, go, maskP, giP, gi, s, avx, tiles_, lsp, next_mask);
#else
                (void)parity, (void)small, (void)small_direct;
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
        const BadIndex &b = *slot_at(P, scratch, si).bad;
        if (b.found()) {
            *bad = b;
            return false;
        }
    }
    return true;
}

}  // namespace mpool
