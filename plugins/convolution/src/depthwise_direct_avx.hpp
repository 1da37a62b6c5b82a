// The AVX-512 spelling of the direct depthwise kernels, the parts its gradInput
// (depthwise_direct_avx_gi.cpp) and gradWeight (depthwise_direct_avx_gw.cpp) halves share: lane
// masks, loads and prefetches, the sliding window and column shifts, the BF16 strips' rows, the
// pitched vectors and the half-width rows' masks. depthwise_direct.hpp says what the kernels compute; the scalar spelling in
// depthwise_direct.cpp does the same arithmetic per element. Internal to those two files.
#ifndef CONVOLUTION_SRC_DEPTHWISE_DIRECT_AVX_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_DIRECT_AVX_HPP_

#include <immintrin.h>

#include <cstdint>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "depthwise_direct_common.hpp"

namespace conv::dwd {

namespace {

#define DWD_UNROLL _Pragma("GCC unroll 9")
#define PITCH_UNROLL _Pragma("GCC unroll 8")

constexpr int64_t kNarrow = kL;              // stride 1: rows narrower than a vector take their taps from a sliding window
constexpr __mmask16 kAll16 = 0xffff;
// Every multiply-add and sum of both spellings is fma_ordered / add_ordered (numeric.hpp): where
// NaNs meet, the scalar spelling's payload.
using acp::avx512::add_ordered;
using acp::avx512::fma_ordered;

// The lanes l < n (n clamped to [0, 16]).
inline __mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u); }
inline __mmask32 first_lanes32(int64_t n) { return n >= 32 ? 0xffffffffu : n <= 0 ? 0u : (1u << n) - 1u; }

// Software prefetch into L1. On Zen 5 the hardware prefetchers leave these walks (a few row streams
// at once, the next plane an image away) mostly to demand misses: from memory, one thread, stride-2
// gradWeight read 5 GB/s and the flattened FLOAT gradInput 8 GB/s (2-3x faster with these). Row
// walks fetch the rows they reach kRowsAhead rows on, the flattened kernels kFlatAhead elements on,
// gradInput its output rows too (they are read for ownership before the stores), and a channel's
// walk the head of its next plane (aclnn_cpu/prefetch.hpp).
constexpr int64_t kRowsAhead = 4;
constexpr int64_t kFlatAhead = 512;
constexpr int64_t kHeadBytes = 2048;

// Row r (when inside) of a plane of `rows` rows of `width` elements of es bytes from element `first`.
ACP_AVX512 inline void prefetch_row(const void *base, int64_t first, int64_t r, int64_t rows, int64_t width, int64_t es) {
    if (r >= 0 && r < rows) acp::prefetch_lines(static_cast<const char *>(base) + (first + r * width) * es, width * es);
}
// Elements [i, i + n) of a plane of P elements from element `first` (the part inside).
ACP_AVX512 inline void prefetch_elems(const void *base, int64_t first, int64_t i, int64_t n, int64_t P, int64_t es) {
    if (i < P) acp::prefetch_lines(static_cast<const char *>(base) + (first + i) * es, (std::min(P, i + n) - i) * es);
}

template <bool BF16>
ACP_AVX512 inline __m512 load(const void *p, int64_t i, __mmask16 k) {
    if constexpr (BF16) return acp::avx512::from_bf16(_mm256_maskz_loadu_epi16(k, static_cast<const uint16_t *>(p) + i));
    else return _mm512_maskz_loadu_ps(k, static_cast<const float *>(p) + i);
}

// Narrow planes (W < kNarrow), gradWeight: every tap offset s = dy * W + dx is at most a vector, so
// a tap's input vector is two neighbouring plane vectors shifted by s lanes (one load per vector,
// not nine). A sliding window of three vectors of the plane, each loaded with the plane's lanes
// only. Measured: FLOAT 7x7 and 14x14 -13 %; BF16 (half-width loads) no faster, it keeps its
// loads, and so does gradInput (four vectors' chains side by side measured faster there).
struct Window {
    __m512 prev, cur, next;
};

// Lane l of the result: plane position 16v + l + s (s in (-16, 16)); lanes from outside the plane
// are zero (their taps are masked off anyway).
ACP_AVX512 __attribute__((always_inline)) inline __m512 shifted(const Window &w, int64_t s, const __m512i &idx) {
    if (s == 0) return w.cur;
    if (s > 0) return _mm512_permutex2var_ps(w.cur, idx, w.next);
    return _mm512_permutex2var_ps(w.prev, idx, w.cur);
}

// The permute indices of the 9 offsets (dy, dx) in MaskTable's order.
ACP_AVX512 __attribute__((always_inline)) inline void shift_indices(int64_t W, int64_t sh[9], __m512i idx[9]) {
    const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int i = 0; i < 9; ++i) {
        sh[i] = (i / 3 - 1) * W + (i % 3 - 1);
        idx[i] = _mm512_add_epi32(lanes, _mm512_set1_epi32(static_cast<int>(sh[i] >= 0 ? sh[i] : kL + sh[i])));
    }
}

template <bool BF16>
ACP_AVX512 __attribute__((always_inline)) inline void slide(Window &w, const void *src, int64_t first, int64_t v, int64_t nv, int64_t P) {
    w.prev = w.cur;
    w.cur = w.next;
    w.next = v + 2 < nv ? load<BF16>(src, first + (v + 2) * kL, first_lanes(P - (v + 2) * kL)) : _mm512_setzero_ps();
}


// Lane l <- lane l + 1 (column x + 1) and lane l <- lane l - 1 (column x - 1); what comes in from
// outside is never used (the column masks leave those lanes out).
ACP_AVX512 __attribute__((always_inline)) inline __m512 next_column(__m512 v) {
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_setzero_si512(), _mm512_castps_si512(v), 1));
}
ACP_AVX512 __attribute__((always_inline)) inline __m512 prev_column(__m512 v) {
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(v), _mm512_setzero_si512(), 15));
}
// Lanes S .. S + 15 of the 48 lanes a : b : c (S in [0, 32)): the wide kernels' tap vectors from
// three consecutive vectors of the plane (valignd).
template <int S>
ACP_AVX512 __attribute__((always_inline)) inline __m512 lanes_from(__m512 a, __m512 b, __m512 c) {
    static_assert(S >= 0 && S < 32, "a shift within two vectors");
    if constexpr (S == 0) return a;
    else if constexpr (S < 16) return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(b), _mm512_castps_si512(a), S));
    else if constexpr (S == 16) return b;
    else return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(c), _mm512_castps_si512(b), S - 16));
}

// BF16 stride-1 planes wider than a vector (strips(), depthwise_direct_common.hpp) in strips of 32
// columns walked down a band of rows: each row of a strip is loaded once (two loads give its three
// column offsets, Row4) and kept in registers for the three rows that use it (the flattened plane loaded and widened every
// tap anew, mostly across cache lines, with a mask per load). One 32-element load holds a strip's
// even and odd columns: an even column's value in a 32-bit lane's low half, the odd one's in its
// high half, widened by a shift or an AND (no cross-lane widening). Masks only in a row's first and
// last strips (EDGE). The next band's rows are prefetched kStripAhead rows ahead: the strips walk
// across the rows, which the hardware prefetchers do not follow.
constexpr int64_t kStripAhead = 24;

// A gradient row's columns x0 + d - 1 + j of a strip as even / odd 32-bit lanes, offsets d = 0, 1, 2:
// e(d) lane l = column x0 + d - 1 + 2l, o(d) lane l = column x0 + d + 2l. Of the six, four differ
// (o(0) = e(1), e(2) = o(1)): two loads, at offsets 0 and 2, give all of them. Four registers a row
// instead of six leave room for the weights, which otherwise came from memory in every FMA.
struct Row4 {
    __m512 v[4];  // e(0), e(1) = o(0), e(2) = o(1), o(2)
    ACP_AVX512 __attribute__((always_inline)) __m512 e(int d) const { return v[d]; }
    ACP_AVX512 __attribute__((always_inline)) __m512 o(int d) const { return v[d + 1]; }
};

template <bool EDGE>
ACP_AVX512 __attribute__((always_inline)) inline void strip_row(const uint16_t *r, const __mmask32 kl[2], Row4 &o) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    DWD_UNROLL for (int h = 0; h < 2; ++h) {
        const __m512i v = EDGE ? _mm512_maskz_loadu_epi16(kl[h], r + 2 * h - 1) : _mm512_loadu_si512(r + 2 * h - 1);
        o.v[2 * h] = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, v, 16));
        o.v[2 * h + 1] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
    }
}

// The masks of a strip from column x0 (n columns left in the row): the loads' (the 32 columns
// x0 + d - 1 + j inside the row, offsets d = 0 and 2), and the taps' whose neighbour column may lie
// outside while the lane's own column is inside: e(0)'s lane 0 in a row's first strip (column -1),
// and the lanes next to column W for offset 2. Lanes of columns outside the row take any taps:
// they are never stored.
struct StripMasks {
    __mmask32 load[2];
    __mmask16 left;         // e(0)
    __mmask16 even2, odd2;  // e(2), o(2)
    __mmask32 cols;         // the strip's own columns
};

inline StripMasks strip_masks(int64_t x0, int64_t n) {
    StripMasks m;
    m.load[0] = x0 == 0 ? first_lanes32(n + 1) & ~__mmask32{1} : first_lanes32(n + 1);
    m.load[1] = first_lanes32(n - 1);
    m.left = x0 == 0 ? __mmask16{0xfffe} : kAll16;
    m.even2 = first_lanes(n / 2), m.odd2 = first_lanes((n - 1) / 2);
    m.cols = first_lanes32(n);
    return m;
}

// Pitched vectors (pitched(W), depthwise_direct_common.hpp): the permutes between two dense rows
// and a pitched vector, and the lanes a tap may use by column.
struct Pitch {
    __m512i in32, in16;    // pitched lane <- dense element of the two rows (BF16: into the odd 16-bit
                           // lanes, the even ones zeroed: the BF16 bits above 16 zero bits are the float)
    __m512i out32, out16;  // dense element j < 2W of the two rows <- pitched lane (BF16: its high half)
    __m256i out16c;        // dense element j < 2W <- pitched lane, 16-bit lanes (BF16 rounded by the CPU)
    __mmask16 kw;          // lanes x < W
    __mmask32 kw16;        // kw's lanes' high 16-bit halves
    __mmask16 kl, kr;      // lanes 1 <= x < W (column x - 1 inside), x + 1 < W (column x + 1 inside)
    // kOutDot: pitched lane x <- BF16 pair (column x low, x + 1 high), and (x - 1 low, x high), from
    // the two rows' dense elements; columns outside the row zero (kp0, kp1)
    __m512i pair0, pair1;
    __mmask32 kp0, kp1;
};

// The pitched lanes x (of both halves) with lo <= x and x + ahead < W: kw (0, 0), kl (1, 0), kr (0, 1).
constexpr __mmask16 pitch_cols(int64_t W, int64_t lo, int64_t ahead) {
    unsigned m = 0;
    for (int64_t l = 0; l < kL; ++l) {
        const int64_t x = l % kPitch;
        if (x >= lo && x + ahead < W) m |= 1u << l;
    }
    return static_cast<__mmask16>(m);
}

// Tap column b's lanes {kr, kw, kl} (column x + 1 - b inside): constants when the width is known
// at compile time (WC), so that the kernels' masks are immediates - read from the Pitch, the nine
// tap masks did not fit the mask registers and were remade from memory in every plane.
struct TapCols {
    __mmask16 k[3];
};
template <int WC>
ACP_AVX512 __attribute__((always_inline)) inline TapCols tap_cols(const Pitch &pt) {
    if constexpr (WC != 0) return {{pitch_cols(WC, 0, 1), pitch_cols(WC, 0, 0), pitch_cols(WC, 1, 0)}};
    return {{pt.kr, pt.kw, pt.kl}};
}

ACP_AVX512 inline Pitch make_pitch(int64_t W) {
    alignas(64) int32_t i32[kL] = {}, o32[kL] = {};
    alignas(64) int16_t i16[2 * kL] = {}, o16[2 * kL] = {}, o16c[kL] = {}, p0[2 * kL] = {}, p1[2 * kL] = {};
    Pitch pt{};
    unsigned kw16 = 0, kp0 = 0, kp1 = 0;
    for (int64_t l = 0; l < kL; ++l) {
        const int64_t x = l % kPitch, dense = l / kPitch * W + x;
        if (x >= W) continue;
        i32[l] = static_cast<int32_t>(dense);
        i16[2 * l + 1] = static_cast<int16_t>(dense);
        o32[dense] = static_cast<int32_t>(l);
        o16[dense] = static_cast<int16_t>(2 * l + 1);
        o16c[dense] = static_cast<int16_t>(l);
        kw16 |= 1u << (2 * l + 1);
        p0[2 * l] = static_cast<int16_t>(dense), p0[2 * l + 1] = static_cast<int16_t>(dense + 1);
        p1[2 * l] = static_cast<int16_t>(dense - 1), p1[2 * l + 1] = static_cast<int16_t>(dense);
        kp0 |= 1u << (2 * l) | (x + 1 < W ? 1u << (2 * l + 1) : 0u);
        kp1 |= (x >= 1 ? 1u << (2 * l) : 0u) | 1u << (2 * l + 1);
    }
    pt.pair0 = _mm512_load_si512(p0), pt.pair1 = _mm512_load_si512(p1);
    pt.kp0 = kp0, pt.kp1 = kp1;
    pt.in32 = _mm512_load_si512(i32), pt.out32 = _mm512_load_si512(o32);
    pt.in16 = _mm512_load_si512(i16), pt.out16 = _mm512_load_si512(o16);
    pt.out16c = _mm256_load_si256(reinterpret_cast<const __m256i *>(o16c));
    pt.kw = pitch_cols(W, 0, 0), pt.kl = pitch_cols(W, 1, 0), pt.kr = pitch_cols(W, 0, 1);
    pt.kw16 = kw16;
    return pt;
}

// A plane width's Pitch: made once per process for the width known at compile time (WC; MobileNet's
// 7x7 tasks each made it anew, 3 % of their time), per call otherwise.
template <int WC>
ACP_AVX512 const Pitch &pitch_of(int64_t W, Pitch &made) {
    if constexpr (WC != 0) {
        static const Pitch once = make_pitch(WC);
        return once;
    }
    made = make_pitch(W);
    return made;
}

// Rows r and r + 1 of a plane (from element `at`, P elements) as a pitched vector; rows past the
// plane are zero.
template <bool BF16>
ACP_AVX512 __attribute__((always_inline)) inline __m512 pitched_rows(const void *src, int64_t at, int64_t r, int64_t W, int64_t P,
                                                                  const Pitch &pt) {
    const int64_t off = r * W;
    const __mmask16 k = first_lanes(P - off);
    if constexpr (BF16) {
        const __m512i v = _mm512_maskz_loadu_epi16(k, static_cast<const uint16_t *>(src) + at + off);
        return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(pt.kw16, pt.in16, v));
    } else {
        return _mm512_maskz_permutexvar_ps(pt.kw, pt.in32, _mm512_maskz_loadu_ps(k, static_cast<const float *>(src) + at + off));
    }
}

// Rows 2u - 1 and 2u from the pitched vectors of rows 2u - 2, 2u - 1 (lo) and 2u, 2u + 1 (hi).
ACP_AVX512 __attribute__((always_inline)) inline __m512 odd_pair(__m512 hi, __m512 lo) {
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(hi), _mm512_castps_si512(lo), 8));
}

// The lanes of pitched vector u (rows 2u, 2u + 1) whose row y is inside and whose row y + dy is too.
constexpr unsigned row_lanes(int H, int u, int dy) {
    unsigned m = 0;
    for (int h = 0; h < 2; ++h) {
        const int y = 2 * u + h;
        if (y < H && y + dy >= 0 && y + dy < H) m |= 0xffu << (8 * h);
    }
    return m;
}

// Half-width rows (CPUs that split 512-bit vectors, DwDirect::set_half_width): a plane of at most
// 8 columns as one 256-bit vector per row, column x in lane x. Tap column b's gradient column
// x + 1 - b comes from a load at that offset (no shuffle); its lanes: kr (x + 1 < W), kw (x < W),
// kl (1 <= x < W), as the pitched vectors' tap_cols.
struct Cols8 {
    __mmask8 k[3];
};
ACP_AVX512 __attribute__((always_inline)) inline Cols8 cols8(int64_t W) {
    const auto kw = static_cast<__mmask8>((1u << W) - 1u);
    return {{static_cast<__mmask8>(kw >> 1), kw, static_cast<__mmask8>(kw & 0xfeu)}};
}

// The pitched vectors of a plane of H rows (e: rows 2u, 2u + 1; o: rows 2u - 1, 2u; rows outside zero).
template <bool BF16, int H>
struct PitchedPlane {
    static constexpr int U = (H + 1) / 2;
    __m512 e[U + 1], o[U + 1];
    ACP_AVX512 __attribute__((always_inline)) PitchedPlane(const void *src, int64_t at, int64_t W, const Pitch &pt) {
        const __m512 zero = _mm512_setzero_ps();
        PITCH_UNROLL for (int u = 0; u < U; ++u) e[u] = pitched_rows<BF16>(src, at, 2 * u, W, H * W, pt);
        e[U] = zero;
        o[0] = odd_pair(e[0], zero);
        PITCH_UNROLL for (int u = 1; u <= U; ++u) o[u] = odd_pair(e[u], e[u - 1]);
    }
};

}  // namespace

}  // namespace conv::dwd

#endif  // CONVOLUTION_SRC_DEPTHWISE_DIRECT_AVX_HPP_
