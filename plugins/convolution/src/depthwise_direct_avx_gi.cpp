// The AVX-512 spelling of the direct depthwise gradInput (depthwise_direct.hpp says what it
// computes; the parts shared with gradWeight are in depthwise_direct_avx.hpp): flattened, stride-2,
// by-rows, BF16-strip and pitched planes, the checks that pick the BF16 rounding and vdpbf16ps,
// the plane loops.
#include "depthwise_direct_avx.hpp"

namespace conv::dwd {

namespace {

// gradInput's stores: OUT_BF16 0 FLOAT, kOutBf16 BF16 rounded by float_to_bf16's integer spelling,
// kOutCpu the same rounding by the CPU (vcvtneps2bf16; planes whose sums cannot be subnormal, see
// cpu_rounds and task_rounds). kOutDot: kOutCpu's rounding, and the BF16 stride-1 kernels take their
// taps in pairs by vdpbf16ps (tasks whose operands are all 0 or finite and not tiny, task_dots).
constexpr int kOutBf16 = 1, kOutCpu = 2, kOutDot = 3;

template <int OUT_BF16, bool NT = false>
ACP_AVX512 inline void store(void *p, int64_t i, __mmask16 k, __m512 v) {
    if constexpr (NT && OUT_BF16 == 0) {  // streamed (gi_planes_avx: whole aligned vectors; any other one stored plainly)
        if (k == kAll16) _mm512_stream_ps(static_cast<float *>(p) + i, v);
        else _mm512_mask_storeu_ps(static_cast<float *>(p) + i, k, v);
    } else if constexpr (OUT_BF16 == kOutCpu) _mm256_mask_storeu_epi16(static_cast<uint16_t *>(p) + i, k, acp::avx512::to_bf16_no_subnormals(v));
    else if constexpr (OUT_BF16) _mm256_mask_storeu_epi16(static_cast<uint16_t *>(p) + i, k, acp::avx512::to_bf16(v));
    else _mm512_mask_storeu_ps(static_cast<float *>(p) + i, k, v);
}

// Stride 1 gradInput: dx[p] = sum over taps (a, b) of w[a][b] * dy[p + (1 - a) * W + (1 - b)],
// offset (1 - a, 1 - b) being entry 8 - t of the vector's masks. U vectors at a time: each sum is a
// chain of 9 dependent multiply-adds, four chains keep the FMA unit busy. NT: FLOAT stored streamed.
template <bool BF16, int OUT_BF16, int U, bool NT = false>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_vectors(const void *dy, const __m512 wv[9], const int64_t off[9], const MaskTable &m,
                                                                 int64_t v, void *dx, int64_t first) {
    const int64_t p0 = v * kL;
    __m512 acc[U];
    for (int u = 0; u < U; ++u) acc[u] = _mm512_setzero_ps();
    uint32_t full4;  // four vectors' flags at once (the table is padded to whole groups)
    std::memcpy(&full4, m.full + v, 4);
    constexpr uint32_t ours = U >= 4 ? 0xffffffffu : (1u << (8 * U)) - 1u;  // the flags of our U vectors
    if ((full4 & ours) == (0x01010101u & ours)) {
        DWD_UNROLL for (int t = 0; t < 9; ++t)
            for (int u = 0; u < U; ++u) acc[u] = fma_ordered(wv[t], load<BF16>(dy, off[t] + p0 + u * kL, kAll16), acc[u]);
        for (int u = 0; u < U; ++u) store<OUT_BF16, NT>(dx, first + p0 + u * kL, kAll16, acc[u]);
    } else {
        const uint16_t *mk = m.mask + v * 9;
        DWD_UNROLL for (int t = 0; t < 9; ++t)
            for (int u = 0; u < U; ++u) {
                const __mmask16 k = mk[u * 9 + 8 - t];
                acc[u] = fma_ordered(wv[t], load<BF16>(dy, off[t] + p0 + u * kL, k), acc[u], k);
            }
        for (int u = 0; u < U; ++u) store<OUT_BF16, NT>(dx, first + p0 + u * kL, mk[u * 9 + 4], acc[u]);
    }
}

template <bool BF16, int OUT_BF16, bool NT = false>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_avx(const Planes &p, const MaskTable &m, const float w[9], void *dx, int64_t first) {
    __m512 wv[9];
    int64_t off[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        wv[t] = _mm512_set1_ps(w[t]);
        off[t] = p.gy + (1 - t / 3) * p.W + (1 - t % 3);
    }
    constexpr int64_t es = BF16 ? 2 : 4, eo = OUT_BF16 ? 2 : 4;
    const int64_t P = p.H * p.W;
    int64_t v = 0;
    for (; v + kGroup <= m.nv; v += kGroup) {
        prefetch_elems(p.dy, p.gy, v * kL + kFlatAhead + p.W, kGroup * kL, P, es);  // the farthest tap row
        if constexpr (!NT) prefetch_elems(dx, first, v * kL + kFlatAhead, kGroup * kL, P, eo);  // (streamed: not read)
        gi_s1_vectors<BF16, OUT_BF16, kGroup, NT>(p.dy, wv, off, m, v, dx, first);
    }
    switch (m.nv - v) {  // the last vectors, without empty ones
        case 3: gi_s1_vectors<BF16, OUT_BF16, 3, NT>(p.dy, wv, off, m, v, dx, first); break;
        case 2: gi_s1_vectors<BF16, OUT_BF16, 2, NT>(p.dy, wv, off, m, v, dx, first); break;
        case 1: gi_s1_vectors<BF16, OUT_BF16, 1, NT>(p.dy, wv, off, m, v, dx, first); break;
        default: break;
    }
}

// FLOAT stride-1 gradInput into FLOAT of flattened planes with rows wider than a vector (R =
// W % 16): gi_s1_avx's vectors, taps, masks and order, but a group's tap vectors are made from the
// plane's own 16-element vectors by lane shifts (valignd) instead of being loaded at their offsets,
// eight of nine of which crossed a cache line. Tap row a reads gradient elements 16v + e_a + 2 - b,
// e_a = (1 - a)W - 1 = 16 k_a + s_a, s_a fixed by R; four output vectors need the six plane vectors
// from v + k_a. Groups whose plane vectors are whole and inside, which puts their lanes in rows 1 ..
// H - 2 (a tap's lanes then depend on its column only: b = 0 those of mask 5, b = 1 all, b = 2 those
// of mask 3); the others take gi_s1_vectors. Zen 5, one thread, 56x56 planes: 0.91 -> 0.59 us a
// plane in L2, 8x128 planes from memory (streamed) 0.95 -> 0.52-0.58 us a plane.
template <int S, bool MASKED>
ACP_AVX512 __attribute__((always_inline)) inline void wide_tap(const __m512 (&pv)[kGroup + 2], __m512 w, __m512 (&acc)[kGroup],
                                                            const __mmask16 (&k)[kGroup]) {
    DWD_UNROLL for (int u = 0; u < kGroup; ++u) {
        const __m512 x = lanes_from<S>(pv[u], pv[u + 1], pv[u + 2]);
        acc[u] = MASKED ? fma_ordered(w, x, acc[u], k[u]) : fma_ordered(w, x, acc[u]);
    }
}

template <int S>
ACP_AVX512 __attribute__((always_inline)) inline void wide_row(const float *g, const __m512 *w, __m512 (&acc)[kGroup],
                                                            const __mmask16 (&right)[kGroup], const __mmask16 (&left)[kGroup]) {
    __m512 pv[kGroup + 2];
    DWD_UNROLL for (int j = 0; j < kGroup + 2; ++j) pv[j] = _mm512_loadu_ps(g + j * kL);
    wide_tap<S + 2, true>(pv, w[0], acc, right);
    wide_tap<S + 1, false>(pv, w[1], acc, right);
    wide_tap<S, true>(pv, w[2], acc, left);
}

template <int R, bool NT>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_wide_avx(const Planes &p, const MaskTable &m, const float w[9], void *dx,
                                                                  int64_t first) {
    const int64_t W = p.W, P = p.H * p.W;
    constexpr int s0 = (R + 15) % 16, s2 = (31 - R) % 16;  // s_1 = 15
    const int64_t k0 = (W - 1 - s0) / kL, k2 = (-W - 1 - s2) / kL;  // exact divisions; k_1 = -1
    __m512 wv[9];
    int64_t off[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        wv[t] = _mm512_set1_ps(w[t]);
        off[t] = p.gy + (1 - t / 3) * W + (1 - t % 3);
    }
    const float *g = static_cast<const float *>(p.dy) + p.gy;
    // the body: groups whose six plane vectors per tap row are whole and inside the plane (from
    // v + k_2 >= 0 to v + k_0 + 5 < P / 16); such a group's lanes all lie in rows 1 .. H - 2
    const int64_t body0 = -k2, body1 = P / kL - k0 - 2;
    int64_t v = 0;
    for (; v + kGroup <= m.nv; v += kGroup) {
        // the farthest tap row, and (streamed: not read) the results: a group's four lines, one
        // prefetch instruction each while they lie inside the plane
        const int64_t ahead = v * kL + kFlatAhead;
        if (ahead + W + kGroup * kL <= P) {
            DWD_UNROLL for (int u = 0; u < kGroup; ++u) acp::prefetch_line(g + ahead + W + u * kL);
            if constexpr (!NT) DWD_UNROLL for (int u = 0; u < kGroup; ++u) acp::prefetch_line(static_cast<float *>(dx) + first + ahead + u * kL);
        } else {
            prefetch_elems(p.dy, p.gy, ahead + W, kGroup * kL, P, 4);
            if constexpr (!NT) prefetch_elems(dx, first, ahead, kGroup * kL, P, 4);
        }
        if (v < body0 || v + kGroup > body1) {
            gi_s1_vectors<false, 0, kGroup, NT>(p.dy, wv, off, m, v, dx, first);
            continue;
        }
        const uint16_t *mk = m.mask + v * 9;
        __mmask16 right[kGroup], left[kGroup];
        __m512 acc[kGroup];
        DWD_UNROLL for (int u = 0; u < kGroup; ++u) right[u] = mk[u * 9 + 5], left[u] = mk[u * 9 + 3], acc[u] = _mm512_setzero_ps();
        wide_row<s0>(g + (v + k0) * kL, wv, acc, right, left);
        wide_row<15>(g + (v - 1) * kL, wv + 3, acc, right, left);
        wide_row<s2>(g + (v + k2) * kL, wv + 6, acc, right, left);
        DWD_UNROLL for (int u = 0; u < kGroup; ++u) store<0, NT>(dx, first + (v + u) * kL, kAll16, acc[u]);
    }
    switch (m.nv - v) {  // the last vectors, without empty ones
        case 3: gi_s1_vectors<false, 0, 3, NT>(p.dy, wv, off, m, v, dx, first); break;
        case 2: gi_s1_vectors<false, 0, 2, NT>(p.dy, wv, off, m, v, dx, first); break;
        case 1: gi_s1_vectors<false, 0, 1, NT>(p.dy, wv, off, m, v, dx, first); break;
        default: break;
    }
}

// FLOAT planes [q0, q1) into FLOAT by gi_s1_wide_avx, a loop per R and NT.
template <int R, bool NT>
ACP_AVX512 void gi_wide_loop(Planes p, const MaskTable &m, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1) {
    for (int64_t q = q0, c = q0 % C; q < q1; ++q, c = c + 1 == C ? 0 : c + 1) {
        p.gy = q * p.Ho * p.Wo;
        gi_s1_wide_avx<R, NT>(p, m, static_cast<const float *>(w) + c * 9, dx, q * p.H * p.W);
    }
}

ACP_AVX512 void gi_wide_planes(const Planes &p, const MaskTable &m, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1, bool stream) {
    switch (p.W % kL + (stream ? kL : 0)) {
#define DWD_WIDE(r)                                                  \
    case r: return gi_wide_loop<r, false>(p, m, w, dx, C, q0, q1); \
    case r + kL: return gi_wide_loop<r, true>(p, m, w, dx, C, q0, q1);
        DWD_WIDE(0) DWD_WIDE(1) DWD_WIDE(2) DWD_WIDE(3) DWD_WIDE(4) DWD_WIDE(5) DWD_WIDE(6) DWD_WIDE(7)
        DWD_WIDE(8) DWD_WIDE(9) DWD_WIDE(10) DWD_WIDE(11) DWD_WIDE(12) DWD_WIDE(13) DWD_WIDE(14) DWD_WIDE(15)
#undef DWD_WIDE
    }
}

// Even and odd columns (16 each) interleaved into 32 consecutive ones of dx (BF16: rounded once).
template <int OUT_BF16>
ACP_AVX512 __attribute__((always_inline)) inline void store_even_odd(void *dx, int64_t at, __mmask32 k, __m512 e, __m512 o) {
    if constexpr (OUT_BF16 == kOutCpu || OUT_BF16 == kOutDot) {
        const __m512i he = _mm512_maskz_inserti64x4(0xff, _mm512_setzero_si512(), acp::avx512::to_bf16_no_subnormals(e), 0);
        const __m512i ho = _mm512_maskz_inserti64x4(0xff, _mm512_setzero_si512(), acp::avx512::to_bf16_no_subnormals(o), 0);
        const __m512i mix = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3,
                                             34, 2, 33, 1, 32, 0);
        _mm512_mask_storeu_epi16(static_cast<uint16_t *>(dx) + at, k, _mm512_permutex2var_epi16(he, mix, ho));
    } else if constexpr (OUT_BF16) {  // each 32-bit lane: even column's BF16 low, odd column's high
        const __m512i eh = acp::avx512::to_bf16_high(e), oh = acp::avx512::to_bf16_high(o);
        const __m512i both = _mm512_or_si512(_mm512_maskz_srli_epi32(kAll16, eh, 16),
                                             _mm512_and_si512(oh, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
        _mm512_mask_storeu_epi16(static_cast<uint16_t *>(dx) + at, k, both);
    } else {
        const __m512i lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i hi_idx = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
        float *d = static_cast<float *>(dx) + at;
        _mm512_mask_storeu_ps(d, static_cast<__mmask16>(k), _mm512_permutex2var_ps(e, lo_idx, o));
        _mm512_mask_storeu_ps(d + kL, static_cast<__mmask16>(k >> 16), _mm512_permutex2var_ps(e, hi_idx, o));
    }
}

// A gradient row's columns j0 + l (mask k0) and j0 + 1 + l (mask k1). The last step of a row takes
// the second from the first, one lane on (what it needs of the first is inside k0).
template <bool BF16>
ACP_AVX512 __attribute__((always_inline)) inline void load_pair(const Planes &p, int64_t row, int64_t j0, __mmask16 k0, __mmask16 k1,
                                                             __m512 &d0, __m512 &d1) {
    d0 = load<BF16>(p.dy, row + j0, k0);
    if (p.Wo - j0 <= kL) d1 = _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(k1, _mm512_setzero_si512(), _mm512_castps_si512(d0), 1));
    else d1 = load<BF16>(p.dy, row + j0 + 1, k1);
}

// Stride 2 gradInput: even and odd columns of an input row pair's 32 columns (16 gradient columns j)
// from the gradient rows they meet. Input row 2k meets gradient row k (tap row 1), row 2k + 1 rows
// k + 1 (tap row 0) and k (tap row 2); even columns take tap column 1 at j, odd ones tap column 0 at
// j + 1 and 2 at j. Row k is read once for both input rows.
// One tap row t of a gradient row (j: its columns, j1: those at j + 1) into an input row's even
// columns e (tap (t, 1) at j) and odd columns o (tap (t, 0) at j + 1, then (t, 2) at j); wt: the
// row's three weights.
ACP_AVX512 __attribute__((always_inline)) inline void s2_row_taps(const __m512 *wt, __m512 j, __m512 j1, __mmask16 ke,
                                                                __mmask16 ko, __mmask16 ko1, __m512 &e, __m512 &o) {
    e = fma_ordered(wt[1], j, e, ke);
    o = fma_ordered(wt[0], j1, o, ko1);
    o = fma_ordered(wt[2], j, o, ko);
}

// gi_s2_avx for gradient rows of at most a vector (Wo <= 16, one step per row): the masks once per
// plane, and each gradient row loaded once (row k + 1 of input rows 2k + 1 is row k of 2k + 2).
// Same taps in the same order.
template <bool BF16, int OUT_BF16>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s2_one_step_avx(const Planes &p, const float w[9], void *dx, int64_t first) {
    __m512 wv[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) wv[t] = _mm512_set1_ps(w[t]);
    const __m512 zero = _mm512_setzero_ps();
    const int64_t left = p.W;
    const __mmask16 ke = first_lanes((left + 1) / 2), ko = first_lanes(left / 2);
    const __mmask16 ko1 = ko & first_lanes(p.Wo - 1);
    const __mmask32 km = first_lanes32(left);
    __m512 a0, a1;
    load_pair<BF16>(p, p.gy, 0, ke, ko1, a0, a1);
    for (int64_t k = 0; 2 * k < p.H; ++k) {
        const int64_t at = first + 2 * k * p.W;
        __m512 e = zero, o = zero;
        s2_row_taps(wv + 3, a0, a1, ke, ko, ko1, e, o);
        store_even_odd<OUT_BF16>(dx, at, km, e, o);
        if (2 * k + 1 >= p.H) break;
        e = zero, o = zero;
        __m512 b0 = zero, b1 = zero;
        if (k + 1 < p.Ho) {
            load_pair<BF16>(p, p.gy + (k + 1) * p.Wo, 0, ke, ko1, b0, b1);
            s2_row_taps(wv, b0, b1, ke, ko, ko1, e, o);
        }
        s2_row_taps(wv + 6, a0, a1, ke, ko, ko1, e, o);
        store_even_odd<OUT_BF16>(dx, at + p.W, km, e, o);
        a0 = b0, a1 = b1;
    }
}

template <bool BF16, int OUT_BF16>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s2_avx(const Planes &p, const float w[9], void *dx, int64_t first) {
    if (p.Wo <= kL) {
        gi_s2_one_step_avx<BF16, OUT_BF16>(p, w, dx, first);
        return;
    }
    __m512 wv[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) wv[t] = _mm512_set1_ps(w[t]);
    const __m512 zero = _mm512_setzero_ps();
    constexpr int64_t eo = OUT_BF16 ? 2 : 4;
    for (int64_t k = 0; 2 * k < p.H; ++k) {
        prefetch_row(dx, first, 2 * (k + kRowsAhead), p.H, p.W, eo);
        prefetch_row(dx, first, 2 * (k + kRowsAhead) + 1, p.H, p.W, eo);
        const bool odd_row = 2 * k + 1 < p.H, below = k + 1 < p.Ho;
        const int64_t r0 = p.gy + k * p.Wo, r1 = r0 + p.Wo;
        for (int64_t j0 = 0; 2 * j0 < p.W; j0 += kL) {
            const int64_t left = p.W - 2 * j0;  // input columns from 2 * j0 to the row's end
            const __mmask16 ke = first_lanes((left + 1) / 2), ko = first_lanes(left / 2);
            const __mmask16 ko1 = ko & first_lanes(p.Wo - 1 - j0);  // tap column 0 reads j + 1
            const __mmask32 km = first_lanes32(left);
            const int64_t at = first + 2 * k * p.W + 2 * j0;
            __m512 a0, a1;
            load_pair<BF16>(p, r0, j0, ke, ko1, a0, a1);
            __m512 e = zero, o = zero;
            s2_row_taps(wv + 3, a0, a1, ke, ko, ko1, e, o);
            store_even_odd<OUT_BF16>(dx, at, km, e, o);
            if (!odd_row) continue;
            e = zero, o = zero;
            if (below) {
                __m512 b0, b1;
                load_pair<BF16>(p, r1, j0, ke, ko1, b0, b1);
                s2_row_taps(wv, b0, b1, ke, ko, ko1, e, o);
            }
            s2_row_taps(wv + 6, a0, a1, ke, ko, ko1, e, o);
            store_even_odd<OUT_BF16>(dx, at + p.W, km, e, o);
        }
    }
}

// acc + the pairwise products of a and b's BF16 halves, high halves first (vdpbf16ps: per lane two
// fused multiply-adds, the high pair's, then the low pair's; by inline asm: callers need no
// avx512bf16 target).
ACP_AVX512 __attribute__((always_inline)) inline __m512 dot_pairs(__m512 acc, __m512i a, __m512i b) {
    __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}

// The weights of kOutDot's gradInput taps (w: BF16 values as FLOAT): per tap row a, pair 2a holds
// tap columns 0 (high half) and 1 (low), pair 2a + 1 tap column 2 (low) and +0 (high). Against a
// gradient pair (column x + 1 high, x low) and then (x high, x - 1 low), output column x takes its
// taps as gradInput's FLOAT spelling does: (a, 0), (a, 1), then (a, 2), with a +-0 product between.
ACP_AVX512 __attribute__((always_inline)) inline void weight_pairs(const float w[9], __m512i wp[6]) {
    auto bits = [&](int t) {
        uint32_t u;
        std::memcpy(&u, &w[t], 4);
        return u >> 16;
    };
    for (int a = 0; a < 3; ++a) {
        wp[2 * a] = _mm512_set1_epi32(static_cast<int>(bits(3 * a) << 16 | bits(3 * a + 1)));
        wp[2 * a + 1] = _mm512_set1_epi32(static_cast<int>(bits(3 * a + 2)));
    }
}

// The walk of the by-rows gradInput kernels: R output rows at a time, gradient rows y0 - 1 ..
// y0 + R made once by row(oy) (the last two carried into the next step; rows outside the plane
// are never passed to taps), output row u's tap row a from gradient row y0 + u + 1 - a by
// taps(acc, a, row), each finished row by put(y, acc). HC: the rows when known at compile time
// (MobileNet's 14x14: the walk unrolled, no branches), or 0.
template <class Row, int HC, class MakeRow, class Taps, class Put>
ACP_AVX512 __attribute__((always_inline)) inline void gi_rows_walk(int64_t h, MakeRow &&row, Taps &&taps, Put &&put) {
    constexpr int R = 4;
    const int64_t H = HC ? HC : h;
    Row g[R + 2];
    g[R] = Row{}, g[R + 1] = row(0);
    _Pragma("GCC unroll 4") for (int64_t y0 = 0; y0 < H; y0 += R) {
        g[0] = g[R], g[1] = g[R + 1];
        for (int i = 2; i < R + 2; ++i) g[i] = row(y0 - 1 + i);
        __m512 acc[R];
        for (int u = 0; u < R; ++u) acc[u] = _mm512_setzero_ps();
        DWD_UNROLL for (int a = 0; a < 3; ++a)
            for (int u = 0; u < R; ++u) {
                const int64_t oy = y0 + u + 1 - a;  // row oy is g[u + 2 - a]
                if (oy < 0 || oy >= H) continue;
                taps(acc[u], a, g[u + 2 - a]);
            }
        for (int u = 0; u < R && y0 + u < H; ++u) put(y0 + u, acc[u]);
    }
}

// gi_s1_rows_avx by pairs (kOutDot): each gradient row loaded once as BF16 and spread by two
// permutes into its pairs (x + 1, x) and (x, x - 1) per lane x, columns outside the row +0; six
// vdpbf16ps per output row instead of nine multiply-adds. The same bits (see gi_taps_dot).
template <int HC>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_rows_dot(const Planes &p, const float w[9], void *dx, int64_t first) {
    __m512i wp[6];
    weight_pairs(w, wp);
    const __mmask32 kw = first_lanes32(p.W);
    // 16-bit positions 2x (low) and 2x + 1 (high) of lane x: columns x, x + 1; and x - 1, x
    const __m512i at0 = _mm512_set_epi16(16, 15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2,
                                         1, 1, 0);
    const __m512i at1 = _mm512_set_epi16(15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1,
                                         0, 0, 0);
    struct Row {
        __m512i p0, p1;
    };
    gi_rows_walk<Row, HC>(
        p.H,
        [&](int64_t oy) ACP_AVX512 {
            if (oy < 0 || oy >= (HC ? HC : p.H)) return Row{_mm512_setzero_si512(), _mm512_setzero_si512()};
            const __m512i v = _mm512_maskz_loadu_epi16(kw, static_cast<const uint16_t *>(p.dy) + p.gy + oy * p.W);
            return Row{_mm512_permutexvar_epi16(at0, v), _mm512_maskz_permutexvar_epi16(~__mmask32{1}, at1, v)};
        },
        [&](__m512 &acc, int a, const Row &c) ACP_AVX512 {
            acc = dot_pairs(acc, c.p0, wp[2 * a]);
            acc = dot_pairs(acc, c.p1, wp[2 * a + 1]);
        },
        [&](int64_t y, __m512 acc) ACP_AVX512 { store<kOutCpu>(dx, first + y * p.W, static_cast<__mmask16>(kw), acc); });
}

// Stride 1 gradInput of rows of at most a vector (8 < W <= 16), four rows at a time: each gradient
// row loaded once, its columns one lane on either side by a register shift (once per row), tap columns
// masked by column (no mask table). Same taps in the same order as gi_s1_avx. Measured: 14x14
// FLOAT -43 %, BF16 -22 %; 7x7 rows (7 of 16 lanes) no faster than the flattened plane's 4 vectors.
template <bool BF16, int OUT_BF16, int HC = 0>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_rows_avx(const Planes &p, const float w[9], void *dx, int64_t first) {
    if constexpr (OUT_BF16 == kOutDot) {
        gi_s1_rows_dot<HC>(p, w, dx, first);
        return;
    }
    __m512 wv[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) wv[t] = _mm512_set1_ps(w[t]);
    const __mmask16 kw = first_lanes(p.W);
    // tap column b reads gradient column x + 1 - b: b = 0 needs x + 1 < W, b = 2 needs x >= 1
    const __mmask16 kc[3] = {first_lanes(p.W - 1), kw, static_cast<__mmask16>(kw & 0xfffe)};
    // gradient rows y0 - 1 .. y0 + R, each with its columns one lane either way (shifted once; the
    // last two carried into the next step)
    struct Row {
        __m512 right, mid, left;
    };
    gi_rows_walk<Row, HC>(
        p.H,
        [&](int64_t oy) ACP_AVX512 {
            const __m512 c = oy >= 0 && oy < (HC ? HC : p.H) ? load<BF16>(p.dy, p.gy + oy * p.W, kw) : _mm512_setzero_ps();
            return Row{next_column(c), c, prev_column(c)};
        },
        [&](__m512 &acc, int a, const Row &c) ACP_AVX512 {
            acc = fma_ordered(wv[a * 3], c.right, acc, kc[0]);
            acc = fma_ordered(wv[a * 3 + 1], c.mid, acc, kc[1]);
            acc = fma_ordered(wv[a * 3 + 2], c.left, acc, kc[2]);
        },
        [&](int64_t y, __m512 acc) ACP_AVX512 { store<OUT_BF16>(dx, first + y * p.W, kw, acc); });
}

// Walks the strips of one plane: band by band, strip by strip, f(x0, ya, yb, edge).
template <class F>
ACP_AVX512 __attribute__((always_inline)) inline void for_strips(int64_t H, int64_t W, F &&f) {
    for (int64_t ya = 0; ya < H; ya += kStripBand) {
        const int64_t yb = std::min(H, ya + kStripBand);
        for (int64_t x0 = 0; x0 < W; x0 += kStrip) f(x0, ya, yb, x0 == 0 || x0 + kStrip >= W);  // edge: column x0 + 32 outside
    }
}

// Prefetch of row y + kStripAhead of a strip (the lines of its first and last column) into L1;
// n: the strip's columns.
ACP_AVX512 __attribute__((always_inline)) inline void strip_ahead(const uint16_t *col, int64_t y, int64_t H, int64_t W, int64_t n) {
    if (y + kStripAhead >= H) return;
    const uint16_t *at = col + (y + kStripAhead) * W;  // at most 64 bytes: at most two lines
    acp::prefetch_line(at);
    acp::prefetch_line(at + std::min(n, kStrip) - 1);
}

// gradInput: output column x reads gradient column x + 1 - b for tap column b, offset d = 2 - b.
// Same taps in the same order as gi_s1_avx.
template <bool EDGE>
ACP_AVX512 __attribute__((always_inline)) inline void gi_taps(__m512 &e, __m512 &o, const __m512 *wa, const Row4 &r, const StripMasks &m) {
    DWD_UNROLL for (int b = 0; b < 3; ++b) {
        const int d = 2 - b;
        if constexpr (EDGE) {
            if (d == 1) {
                e = fma_ordered(wa[b], r.e(d), e);
                o = fma_ordered(wa[b], r.o(d), o);
            } else {
                e = fma_ordered(wa[b], r.e(d), e, d == 0 ? m.left : m.even2);
                o = d == 0 ? fma_ordered(wa[b], r.o(d), o) : fma_ordered(wa[b], r.o(d), o, m.odd2);
            }
        } else {
            e = fma_ordered(wa[b], r.e(d), e);
            o = fma_ordered(wa[b], r.o(d), o);
        }
    }
}

// A gradient row's strip as raw BF16 pairs at column offsets k = -1 (m1), 0 (z) and +1 (p1): 32-bit
// lane l holds columns x0 + k + 2l (low half) and x0 + k + 1 + 2l (high half); columns outside the
// row are +0.
struct RowPairs {
    __m512i m1, z, p1;
};

template <bool EDGE>
ACP_AVX512 __attribute__((always_inline)) inline void strip_row_pairs(const uint16_t *r, const StripMasks &m, RowPairs &o) {
    if constexpr (EDGE) {
        o.m1 = _mm512_maskz_loadu_epi16(m.load[0], r - 1);
        o.z = _mm512_maskz_loadu_epi16(m.cols, r);
        o.p1 = _mm512_maskz_loadu_epi16(m.load[1], r + 1);
    } else {
        o.m1 = _mm512_loadu_si512(r - 1), o.z = _mm512_loadu_si512(r), o.p1 = _mm512_loadu_si512(r + 1);
    }
}

// gi_taps by pairs: an even column x takes (x + 1, x) from z's lane, then x - 1 from m1's low half
// (its high half, column x, meets a zero weight); an odd one (x + 1, x) from p1, then x - 1 from z.
// wp[0]: the tap row's weights b = 0 (high) and 1 (low); wp[1]: b = 2 (low), +0 (high). The same
// fused multiply-adds in the same order as gi_taps where no operand is tiny or not finite (see
// task_dots): a +0 partner's product is +-0, which leaves a sum as it is (a sum from +0 is never -0),
// and a column outside the row, loaded as +0, adds +-0 in place of a skipped tap. Two-thirds of the
// multiply instructions and no widening: measured (Zen 4, in-process A/B, 1 and 2 threads) gradInput
// -22 to -28 % on 56x56 and 112x112 planes, and by rows and pitched (gi_s1_rows_dot,
// gi_s1_pitched_dot) -28 % on 14x14, -25 % on 7x7; the same bytes.
ACP_AVX512 __attribute__((always_inline)) inline void gi_taps_dot(__m512 &e, __m512 &o, const __m512i *wp, const RowPairs &r) {
    e = dot_pairs(e, r.z, wp[0]);
    o = dot_pairs(o, r.p1, wp[0]);
    e = dot_pairs(e, r.m1, wp[1]);
    o = dot_pairs(o, r.z, wp[1]);
}

// Tap row a of gradient row r into a strip's even and odd columns (DOT: gi_taps_dot, else gi_taps).
template <bool EDGE, bool DOT, class V, class Row>
ACP_AVX512 __attribute__((always_inline)) inline void gi_strip_taps(__m512 &e, __m512 &o, const V *wv, int a, const Row &r, const StripMasks &m) {
    if constexpr (DOT) gi_taps_dot(e, o, wv + 2 * a, r);
    else gi_taps<EDGE>(e, o, wv + 3 * a, r, m);
}

// One strip down rows [ya, yb). kOutDot: gradient rows as pairs (RowPairs), wvm the six weight
// pairs, taps by gi_taps_dot; otherwise widened (Row4), wvm the nine weights, taps by gi_taps.
template <bool EDGE, int OUT_BF16, class V, int NW>
ACP_AVX512 __attribute__((always_inline)) inline void gi_strip(const Planes &p, const V (&wvm)[NW], int64_t x0, int64_t ya, int64_t yb,
                                                           void *dx, int64_t first) {
    constexpr bool kDot = OUT_BF16 == kOutDot;
    using Row = std::conditional_t<kDot, RowPairs, Row4>;
    const int64_t H = p.H;
    const StripMasks m = strip_masks(x0, p.W - x0);
    // The weights as register copies (the empty asm makes each one a value the compiler cannot
    // reload from wvm): folded from memory into the FMAs they cost a load per tap (112x112 13 %).
    V wv[NW];
    DWD_UNROLL for (int t = 0; t < NW; ++t) {
        wv[t] = wvm[t];
        asm("" : "+v"(wv[t]));
    }
    auto taps = [&](__m512 &e, __m512 &o, int a, const Row &r) ACP_AVX512 { gi_strip_taps<EDGE, kDot>(e, o, wv, a, r, m); };
    const uint16_t *col = static_cast<const uint16_t *>(p.dy) + p.gy + x0;
    auto row = [&](int64_t oy) ACP_AVX512 {
        strip_ahead(col, oy, H, p.W, p.W - x0);
        if (oy + kStripAhead - 2 < H)  // and the gradInput row it will finish, for writing
            acp::prefetch_line(static_cast<const char *>(dx) + (first + (oy + kStripAhead - 2) * p.W + x0) * (OUT_BF16 ? 2 : 4));
        Row r{};
        if (oy < H) {
            if constexpr (kDot) strip_row_pairs<EDGE>(col + oy * p.W, m, r);
            else strip_row<EDGE>(col + oy * p.W, m.load, r);
        }
        return r;
    };
    // output row y from gradient rows y + 1 (below), y (at) and y - 1 (above); then row y + 2 into
    // `above`, whose registers the next row no longer needs
    auto step = [&](int64_t y, Row &above, const Row &at, const Row &below) ACP_AVX512 __attribute__((always_inline)) {
        __m512 e = _mm512_setzero_ps(), o = _mm512_setzero_ps();
        if (y + 1 < H) taps(e, o, 0, below);
        taps(e, o, 1, at);
        if (y > 0) taps(e, o, 2, above);
        store_even_odd<OUT_BF16>(dx, first + y * p.W + x0, m.cols, e, o);
        above = row(y + 2);
    };
    // Three rows a turn, the rows changing roles instead of registers: moving twelve vectors a row
    // from register to register took issue slots from the multiply-adds (Intel Xeon with AMX,
    // 56x56 planes in L1, one thread: 0.99 -> 0.92 us a plane; 8x128 planes from memory 1.22 -> 1.08).
    Row r0 = ya > 0 ? row(ya - 1) : Row{}, r1 = row(ya), r2 = row(ya + 1);  // gradient rows y - 1, y, y + 1
    int64_t y = ya;
    for (; y + 3 <= yb; y += 3) {
        step(y, r0, r1, r2);
        step(y + 1, r1, r2, r0);
        step(y + 2, r2, r0, r1);
    }
    if (y < yb) step(y++, r0, r1, r2);
    if (y < yb) step(y, r1, r2, r0);
}

template <int OUT_BF16>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_strips_avx(const Planes &p, const float w[9], void *dx, int64_t first) {
    auto walk = [&](const auto &wv) ACP_AVX512 {
        for_strips(p.H, p.W, [&](int64_t x0, int64_t ya, int64_t yb, bool edge) ACP_AVX512 {
            if (edge) gi_strip<true, OUT_BF16>(p, wv, x0, ya, yb, dx, first);
            else gi_strip<false, OUT_BF16>(p, wv, x0, ya, yb, dx, first);
        });
    };
    if constexpr (OUT_BF16 == kOutDot) {
        __m512i wp[6];
        weight_pairs(w, wp);
        walk(wp);
    } else {
        __m512 wv[9];
        DWD_UNROLL for (int t = 0; t < 9; ++t) wv[t] = _mm512_set1_ps(w[t]);
        walk(wv);
    }
}

// gi_s1_pitched_avx by pairs (kOutDot): the plane's pitched vectors as BF16 pairs (Pitch::pair0,
// pair1; the odd ones by the same lane shift), six vdpbf16ps per output vector instead of nine
// masked multiply-adds and the column shifts: columns and rows outside the plane are +0 and add +-0
// (see gi_taps_dot). The same bits.
template <int H, int WC>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_pitched_dot(const Planes &p, const Pitch &pt, const float w[9], void *dx,
                                                                     int64_t first) {
    constexpr int U = (H + 1) / 2;
    const int64_t W = WC ? WC : p.W, P = H * W;
    const __m512i zero = _mm512_setzero_si512();
    __m512i e0[U + 1], e1[U + 1], o0[U + 1], o1[U + 1];
    PITCH_UNROLL for (int u = 0; u < U; ++u) {
        const int64_t off = 2 * u * W;
        const __m512i v = _mm512_maskz_loadu_epi16(first_lanes(P - off), static_cast<const uint16_t *>(p.dy) + p.gy + off);
        e0[u] = _mm512_maskz_permutexvar_epi16(pt.kp0, pt.pair0, v);
        e1[u] = _mm512_maskz_permutexvar_epi16(pt.kp1, pt.pair1, v);
    }
    e0[U] = zero, e1[U] = zero;
    PITCH_UNROLL for (int u = 0; u <= U; ++u) {
        o0[u] = _mm512_maskz_alignr_epi32(kAll16, e0[u], u > 0 ? e0[u - 1] : zero, 8);
        o1[u] = _mm512_maskz_alignr_epi32(kAll16, e1[u], u > 0 ? e1[u - 1] : zero, 8);
    }
    __m512i wp[6];
    weight_pairs(w, wp);
    __m512 acc[U];
    PITCH_UNROLL for (int u = 0; u < U; ++u) acc[u] = _mm512_setzero_ps();
    DWD_UNROLL for (int a = 0; a < 3; ++a)
        PITCH_UNROLL for (int u = 0; u < U; ++u) {
            if (a != 1 && row_lanes(H, u, 1 - a) == 0) continue;
            acc[u] = dot_pairs(acc[u], a == 0 ? o0[u + 1] : a == 1 ? e0[u] : o0[u], wp[2 * a]);
            acc[u] = dot_pairs(acc[u], a == 0 ? o1[u + 1] : a == 1 ? e1[u] : o1[u], wp[2 * a + 1]);
        }
    PITCH_UNROLL for (int u = 0; u < U; ++u) {
        const int64_t off = 2 * u * W;
        const __m256i c = _mm256_permutexvar_epi16(pt.out16c, acp::avx512::to_bf16_no_subnormals(acc[u]));
        _mm256_mask_storeu_epi16(static_cast<uint16_t *>(dx) + first + off, first_lanes(std::min(2 * W, P - off)), c);
    }
}

// Stride 1 gradInput of a pitched plane of H rows: output vector u's tap rows 0, 1, 2 read the
// gradient's rows y + 1, y, y - 1: odd pair u + 1, even pair u, odd pair u, shifted a lane for
// tap columns 0 and 2. The vectors' sums side by side (independent chains), each one's taps in tap
// order: the same bytes as gi_s1_avx. Masks: tap column b by column, tap rows 0 and 2 also by row
// in the first and last vectors (compile-time constants).
template <bool BF16, int OUT_BF16, int H, int WC>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_pitched_avx(const Planes &p, const Pitch &pt, const float w[9], void *dx,
                                                                     int64_t first) {
    if constexpr (OUT_BF16 == kOutDot) {
        gi_s1_pitched_dot<H, WC>(p, pt, w, dx, first);
        return;
    }
    using Plane = PitchedPlane<BF16, H>;
    constexpr int U = Plane::U;
    const int64_t W = WC ? WC : p.W, P = H * W;  // (WC: the width known when compiled)
    const Plane g(p.dy, p.gy, W, pt);
    const TapCols kc = tap_cols<WC>(pt);  // tap column b reads column x + 1 - b
    __m512 acc[U];
    PITCH_UNROLL for (int u = 0; u < U; ++u) acc[u] = _mm512_setzero_ps();
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        const int a = t / 3, b = t % 3;
        const __m512 wv = _mm512_set1_ps(w[t]);
        PITCH_UNROLL for (int u = 0; u < U; ++u) {
            const unsigned rows = a == 1 ? 0xffffu : row_lanes(H, u, 1 - a);
            if (rows == 0) continue;
            const __m512 r = a == 0 ? g.o[u + 1] : a == 1 ? g.e[u] : g.o[u];
            const __m512 src = b == 0 ? next_column(r) : b == 1 ? r : prev_column(r);
            const __mmask16 k = rows == 0xffffu ? kc.k[b] : static_cast<__mmask16>(kc.k[b] & rows);
            acc[u] = fma_ordered(wv, src, acc[u], k);
        }
    }
    PITCH_UNROLL for (int u = 0; u < U; ++u) {
        const int64_t off = 2 * u * W;
        if constexpr (OUT_BF16 == kOutCpu) {
            const __m256i c = _mm256_permutexvar_epi16(pt.out16c, acp::avx512::to_bf16_no_subnormals(acc[u]));
            _mm256_mask_storeu_epi16(static_cast<uint16_t *>(dx) + first + off, first_lanes(std::min(2 * W, P - off)), c);
        } else if constexpr (OUT_BF16) {
            const __m512i c = _mm512_maskz_permutexvar_epi16(0xffffffffu, pt.out16, acp::avx512::to_bf16_high(acc[u]));
            _mm512_mask_storeu_epi16(static_cast<uint16_t *>(dx) + first + off, first_lanes32(std::min(2 * W, P - off)), c);
        } else {
            _mm512_mask_storeu_ps(static_cast<float *>(dx) + first + off, first_lanes(std::min(2 * W, P - off)),
                                  _mm512_maskz_permutexvar_ps(kAll16, pt.out32, acc[u]));
        }
    }
}

// FLOAT stride-1 gradInput of a pitched plane in half-width rows (Cols8): each tap a masked load of
// the gradient row at the tap's column offset, no lane shifts. Taps outer, the H rows' sums side by
// side (independent chains), each in tap order: the same bytes as gi_s1_pitched_avx. On Zen 4, 7x7
// planes, one thread: 93 us against 164 for 8x1024 planes (the bench's MobileNet layer).
template <int H, int WC>
ACP_AVX512 __attribute__((always_inline)) inline void gi_s1_rows8_avx(const Planes &p, const float w[9], float *dx) {
    const int64_t W = WC ? WC : p.W;
    const Cols8 kc = cols8(W);
    const float *g = static_cast<const float *>(p.dy) + p.gy;
    __m256 acc[H];
    PITCH_UNROLL for (int y = 0; y < H; ++y) acc[y] = _mm256_setzero_ps();
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        const int a = t / 3, b = t % 3;
        const __m256 wv = _mm256_set1_ps(w[t]);
        PITCH_UNROLL for (int y = 0; y < H; ++y) {
            const int oy = y + 1 - a;  // the gradient row of input row y's tap row a
            if (oy < 0 || oy >= H) continue;
            acc[y] = fma_ordered(wv, _mm256_maskz_loadu_ps(kc.k[b], g + oy * W + 1 - b), acc[y], kc.k[b]);
        }
    }
    PITCH_UNROLL for (int y = 0; y < H; ++y) _mm256_mask_storeu_ps(dx + y * W, kc.k[1], acc[y]);
}

// BF16 gradInput sums that cannot be subnormal: when the plane's gradient values and the channel's
// weights are each 0, not finite, or at least 2^-56 in magnitude (biased exponent >= 71). Such a
// finite value is a multiple of its ulp, >= 2^-63, so each product is a multiple of 2^-126 and so
// is every FLOAT sum of them (rounding keeps multiples of a power of two at or below its ulp):
// 0 or normal. The CPU's vcvtneps2bf16 then rounds exactly as float_to_bf16 (it reads subnormals
// as zero, and there are none).
//
// None of v[0, n) is tiny: each is 0, not finite, or at least 2^-56 in magnitude. (|v| - 1 as an
// unsigned 16-bit value is below the bound exactly for the tiny ones - 0 wraps to the top - so the
// span's minimum of it decides: one min per 32 values.)
ACP_AVX512 bool bf16_none_tiny(const uint16_t *v, int64_t n) {
    const __m512i mag = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1), lim = _mm512_set1_epi16((71 << 7) - 1);
    __m512i low = _mm512_set1_epi16(-1);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) low = _mm512_min_epu16(low, _mm512_sub_epi16(_mm512_and_si512(_mm512_loadu_si512(v + i), mag), one));
    if (i < n)  // the tail's missing lanes load as 0, which is never tiny
        low = _mm512_min_epu16(low, _mm512_sub_epi16(_mm512_and_si512(_mm512_maskz_loadu_epi16(first_lanes32(n - i), v + i), mag), one));
    return _mm512_cmplt_epu16_mask(low, lim) == 0;
}

// Whether plane p's BF16 gradInput may be rounded by the CPU (kOutCpu).
template <bool BF16, int OUT_BF16>
ACP_AVX512 __attribute__((always_inline)) inline bool cpu_rounds(const Planes &p, const void *w, int64_t c) {
    if constexpr (!BF16 || OUT_BF16 != kOutBf16) return false;
    else
        return acp::avx512::kCpuConvertsBf16 && bf16_none_tiny(static_cast<const uint16_t *>(w) + c * 9, 9) &&
               bf16_none_tiny(static_cast<const uint16_t *>(p.dy) + p.gy, p.Ho * p.Wo);
}

// check(v, n) of the BF16 gradients of planes [q0, q1) (one span) and of their channels' weights.
ACP_AVX512 bool task_spans(const Planes &p, const void *w, int64_t C, int64_t q0, int64_t q1, bool (*check)(const uint16_t *, int64_t)) {
    const auto *wb = static_cast<const uint16_t *>(w);
    const int64_t k = q1 - q0, c0 = q0 % C, P = p.Ho * p.Wo;
    const bool weights = k >= C        ? check(wb, C * 9)
                         : c0 + k <= C ? check(wb + c0 * 9, k * 9)
                                       : check(wb + c0 * 9, (C - c0) * 9) && check(wb, (c0 + k - C) * 9);
    return weights && check(static_cast<const uint16_t *>(p.dy) + q0 * P, k * P);
}

// Whether every plane of [q0, q1) may: the planes' gradients (one span) and their channels' weights
// checked once up front, not plane by plane (a 7x7 plane's own check was 17 % of its gradInput).
// When this fails, each plane is checked on its own (cpu_rounds): the same choice per plane.
template <bool BF16, int OUT_BF16>
ACP_AVX512 bool task_rounds(const Planes &p, const void *w, int64_t C, int64_t q0, int64_t q1) {
    if constexpr (!BF16 || OUT_BF16 != kOutBf16) return false;
    else return acp::avx512::kCpuConvertsBf16 && task_spans(p, w, C, q0, q1, bf16_none_tiny);
}

// Whether v[0, n) is all 0 or finite and at least 2^-56 in magnitude (none tiny, none infinite or NaN).
ACP_AVX512 bool bf16_dot_range(const uint16_t *v, int64_t n) {
    const __m512i mag = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1);
    __m512i low = _mm512_set1_epi16(-1), high = _mm512_setzero_si512();
    int64_t i = 0;
    auto add = [&](__m512i x) ACP_AVX512 {
        const __m512i a = _mm512_and_si512(x, mag);
        low = _mm512_min_epu16(low, _mm512_sub_epi16(a, one));
        high = _mm512_max_epu16(high, a);
    };
    for (; i + 32 <= n; i += 32) add(_mm512_loadu_si512(v + i));
    if (i < n) add(_mm512_maskz_loadu_epi16(first_lanes32(n - i), v + i));
    return _mm512_cmplt_epu16_mask(low, _mm512_set1_epi16((71 << 7) - 1)) == 0 &&
           _mm512_cmpge_epu16_mask(high, _mm512_set1_epi16(0x7f80)) == 0;
}

// Whether the planes [q0, q1) may take their taps by BF16 pairs (kOutDot): every gradient value and
// weight of them 0 or finite and not tiny (bf16_dot_range), so that no product or sum is subnormal
// (see bf16_none_tiny: vdpbf16ps reads and writes subnormals as zero) and a +0 partner never meets
// an infinity or NaN. The CPU rounds their sums too (kOutCpu's condition holds). Only where the
// pass allows pairs (Planes::dots: cpu_prefers_bf16_dots, AMD's CPUs).
template <bool BF16, int OUT_BF16>
ACP_AVX512 bool task_dots(const Planes &p, const void *w, int64_t C, int64_t q0, int64_t q1) {
    if constexpr (!BF16 || OUT_BF16 != kOutBf16) return false;
    else return p.dots && acp::avx512::kCpuConvertsBf16 && task_spans(p, w, C, q0, q1, bf16_dot_range);
}

// The 9 weights of channel c as FLOAT. BF16 ones are widened into wf and left in memory (the empty
// asm): each tap's broadcast is then a load; from a register it took the shuffle port, which the
// pitched and by-rows kernels keep busy with their lane shifts (Intel Xeon with AMX, one thread:
// MobileNet's 7x7 BF16 gradInput 163 -> 138 us, 14x14 238 -> 205-228 us).
template <bool BF16>
ACP_AVX512 __attribute__((always_inline)) inline void channel_weights(const void *w, int64_t c, float (&wf)[9]) {
    for (int64_t t = 0; t < 9; ++t) wf[t] = value(w, BF16 ? Dt::BF16 : Dt::F32, c * 9 + t);
    if constexpr (BF16) asm("" : : "r"(wf) : "memory");
}

// gi_planes for pitched planes of H rows (ALL_CPU: every plane's gradInput rounded by the CPU).
// The channel steps with the plane (a division per 7x7 plane showed: 8 % of FLOAT's time on Zen 4).
template <bool BF16, int OUT_BF16, int H, int WC, int ALL>
ACP_AVX512 void gi_pitched_loop(Planes p, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1) {
    Pitch made;
    const Pitch &pt = pitch_of<WC>(p.W, made);
    for (int64_t q = q0, c = q0 % C; q < q1; ++q, c = c + 1 == C ? 0 : c + 1) {
        float wf[9];
        channel_weights<BF16>(w, c, wf);
        p.gy = q * p.Ho * p.Wo;
        if constexpr (ALL != 0) gi_s1_pitched_avx<BF16, ALL, H, WC>(p, pt, wf, dx, q * p.H * p.W);
        else if (cpu_rounds<BF16, OUT_BF16>(p, w, c)) gi_s1_pitched_avx<BF16, kOutCpu, H, WC>(p, pt, wf, dx, q * p.H * p.W);
        else gi_s1_pitched_avx<BF16, OUT_BF16, H, WC>(p, pt, wf, dx, q * p.H * p.W);
    }
}

// gi_planes for FLOAT pitched planes into FLOAT in half-width rows.
template <int H, int WC>
ACP_AVX512 void gi_rows8_loop(Planes p, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1) {
    for (int64_t q = q0, c = q0 % C; q < q1; ++q, c = c + 1 == C ? 0 : c + 1) {
        p.gy = q * p.Ho * p.Wo;
        gi_s1_rows8_avx<H, WC>(p, static_cast<const float *>(w) + c * 9, static_cast<float *>(dx) + q * p.H * p.W);
    }
}

template <bool BF16, int OUT_BF16, int H, int WC>
ACP_AVX512 void gi_pitched_planes(Planes p, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1, bool halves) {
    if constexpr (!BF16 && OUT_BF16 == 0)
        if (halves) return gi_rows8_loop<H, WC>(p, w, dx, C, q0, q1);
    if (BF16 && task_dots<BF16, OUT_BF16>(p, w, C, q0, q1)) gi_pitched_loop<BF16, OUT_BF16, H, WC, kOutDot>(p, w, dx, C, q0, q1);
    else if (task_rounds<BF16, OUT_BF16>(p, w, C, q0, q1)) gi_pitched_loop<BF16, OUT_BF16, H, WC, kOutCpu>(p, w, dx, C, q0, q1);
    else gi_pitched_loop<BF16, OUT_BF16, H, WC, 0>(p, w, dx, C, q0, q1);
}

// The kernel a plane's shape takes; a loop per kernel (a loop that could take any of them measured
// 6-13 % slower on 14x14 planes than one with fewer kernels in it).
enum class GiKernel { S2, Strips, Rows, Rows14, Flat, FlatStreamed };

template <bool BF16, int OUT, GiKernel K>
ACP_AVX512 __attribute__((always_inline)) inline void gi_plane(const Planes &p, const MaskTable &m, const float wf[9], void *dx, int64_t first) {
    if constexpr (K == GiKernel::S2) gi_s2_avx<BF16, OUT>(p, wf, dx, first);
    else if constexpr (K == GiKernel::Strips) gi_s1_strips_avx<OUT>(p, wf, dx, first);
    else if constexpr (K == GiKernel::Rows) gi_s1_rows_avx<BF16, OUT>(p, wf, dx, first);
    else if constexpr (K == GiKernel::Rows14) gi_s1_rows_avx<BF16, OUT, 14>(p, wf, dx, first);
    else if constexpr (K == GiKernel::FlatStreamed) gi_s1_avx<BF16, OUT, true>(p, m, wf, dx, first);
    else gi_s1_avx<BF16, OUT>(p, m, wf, dx, first);
}

// The planes [q0, q1) one by one (ALL_CPU: all of them rounded by the CPU, task_rounds).
template <bool BF16, int OUT_BF16, GiKernel K, int ALL>
ACP_AVX512 void gi_plane_loop(Planes p, const MaskTable &m, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1) {
    for (int64_t q = q0, c = q0 % C; q < q1; ++q, c = c + 1 == C ? 0 : c + 1) {
        float wf[9];
        channel_weights<BF16>(w, c, wf);
        p.gy = q * p.Ho * p.Wo;
        if constexpr (ALL != 0) gi_plane<BF16, ALL, K>(p, m, wf, dx, q * p.H * p.W);
        else if (cpu_rounds<BF16, OUT_BF16>(p, w, c)) gi_plane<BF16, kOutCpu, K>(p, m, wf, dx, q * p.H * p.W);
        else gi_plane<BF16, OUT_BF16, K>(p, m, wf, dx, q * p.H * p.W);
    }
}

template <bool BF16, int OUT_BF16, GiKernel K>
ACP_AVX512 void gi_kernel_planes(const Planes &p, const MaskTable &m, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1) {
    if constexpr (K == GiKernel::Strips || K == GiKernel::Rows || K == GiKernel::Rows14)
        if (BF16 && task_dots<BF16, OUT_BF16>(p, w, C, q0, q1)) return gi_plane_loop<BF16, OUT_BF16, K, kOutDot>(p, m, w, dx, C, q0, q1);
    if (task_rounds<BF16, OUT_BF16>(p, w, C, q0, q1)) gi_plane_loop<BF16, OUT_BF16, K, kOutCpu>(p, m, w, dx, C, q0, q1);
    else gi_plane_loop<BF16, OUT_BF16, K, 0>(p, m, w, dx, C, q0, q1);
}

// gradInput of planes [q0, q1) (plane q = image q / C, channel q % C), a loop of its own: the
// per-plane work of a 7x7 plane is small enough that a call per plane would show. stream: FLOAT
// flattened planes stored streamed (see gi_planes_avx).
template <bool BF16, int OUT_BF16, bool S2>
ACP_AVX512 void gi_planes(Planes p, const MaskTable &m, const void *w, void *dx, int64_t C, int64_t q0, int64_t q1, bool stream,
                          bool halves) {
    if (!S2 && p.H == 7 && p.W == 7) {  // MobileNet's 7x7: every offset and mask a constant
        gi_pitched_planes<BF16, OUT_BF16, 7, 7>(p, w, dx, C, q0, q1, halves);
        return;
    }
    if (!S2 && pitched(p.H, p.W)) {
        switch (p.H) {
            case 1: gi_pitched_planes<BF16, OUT_BF16, 1, 0>(p, w, dx, C, q0, q1, halves); return;
            case 2: gi_pitched_planes<BF16, OUT_BF16, 2, 0>(p, w, dx, C, q0, q1, halves); return;
            case 3: gi_pitched_planes<BF16, OUT_BF16, 3, 0>(p, w, dx, C, q0, q1, halves); return;
            case 4: gi_pitched_planes<BF16, OUT_BF16, 4, 0>(p, w, dx, C, q0, q1, halves); return;
            case 5: gi_pitched_planes<BF16, OUT_BF16, 5, 0>(p, w, dx, C, q0, q1, halves); return;
            case 6: gi_pitched_planes<BF16, OUT_BF16, 6, 0>(p, w, dx, C, q0, q1, halves); return;
            case 7: gi_pitched_planes<BF16, OUT_BF16, 7, 0>(p, w, dx, C, q0, q1, halves); return;
            default: gi_pitched_planes<BF16, OUT_BF16, 8, 0>(p, w, dx, C, q0, q1, halves); return;
        }
    }
    if constexpr (S2) gi_kernel_planes<BF16, OUT_BF16, GiKernel::S2>(p, m, w, dx, C, q0, q1);
    else if (BF16 && strips(p.W)) gi_kernel_planes<BF16, OUT_BF16, GiKernel::Strips>(p, m, w, dx, C, q0, q1);
    else if (p.H == 14 && p.W == 14) gi_kernel_planes<BF16, OUT_BF16, GiKernel::Rows14>(p, m, w, dx, C, q0, q1);  // MobileNet's
    else if (by_rows(p.W)) gi_kernel_planes<BF16, OUT_BF16, GiKernel::Rows>(p, m, w, dx, C, q0, q1);
    else if (!BF16 && OUT_BF16 == 0 && p.W > kL) gi_wide_planes(p, m, w, dx, C, q0, q1, stream);
    else if (stream) gi_kernel_planes<BF16, OUT_BF16, GiKernel::FlatStreamed>(p, m, w, dx, C, q0, q1);
    else gi_kernel_planes<BF16, OUT_BF16, GiKernel::Flat>(p, m, w, dx, C, q0, q1);
}

}  // namespace

void gi_planes_avx(bool bf16, bool dx_bf16, bool stream, bool halves, const Planes &p, const MaskTable &m, const void *w, void *dx,
                   int64_t C, int64_t q0, int64_t q1) {
    switch ((bf16 ? 1 : 0) + (dx_bf16 ? 2 : 0) + (p.s == 2 ? 4 : 0)) {
        case 0: gi_planes<false, 0, false>(p, m, w, dx, C, q0, q1, stream, halves); break;
        case 1: gi_planes<true, 0, false>(p, m, w, dx, C, q0, q1, stream, halves); break;
        case 2: gi_planes<false, 1, false>(p, m, w, dx, C, q0, q1, false, halves); break;
        case 3: gi_planes<true, 1, false>(p, m, w, dx, C, q0, q1, false, halves); break;
        case 4: gi_planes<false, 0, true>(p, m, w, dx, C, q0, q1, false, halves); break;
        case 5: gi_planes<true, 0, true>(p, m, w, dx, C, q0, q1, false, halves); break;
        case 6: gi_planes<false, 1, true>(p, m, w, dx, C, q0, q1, false, halves); break;
        default: gi_planes<true, 1, true>(p, m, w, dx, C, q0, q1, false, halves); break;
    }
    if (stream) _mm_sfence();  // the streamed stores ordered before the task ends (and its results are read)
}

}  // namespace conv::dwd
