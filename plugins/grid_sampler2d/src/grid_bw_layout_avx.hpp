// AVX-512 layout conversions of the backward kernel: input rows to the channels-last scratch
// (phase A), the tasks' accumulators summed and back to (C, H, W) rows (phase C), and a tile of
// gradOutput to one record per sample. 16 x 16 transposes; narrow blocks use the 4 x 16 form.
#ifndef GRID_SAMPLER2D_GRID_BW_LAYOUT_AVX_HPP_
#define GRID_SAMPLER2D_GRID_BW_LAYOUT_AVX_HPP_

#include <algorithm>
#include <cstdint>

#include "grid_bw_plan.hpp"
#include "grid_simd.hpp"
#include "grid_types.hpp"

namespace gsamp {

#if ACP_X86
// Every function below is a template on the element type of the NCHW side (FLOAT, FLOAT16, BF16),
// dispatched once per call, so that the per-16-pixel loops carry no branch on it.

// Narrow blocks (2 to 4 channels, records of 4 values): nc planes HW apart, element index idx0 =
// the first plane's pixel 0 of the range, len pixels, dst 4 floats per pixel (zero pad lanes).
template <Elem E>
ACP_AVX512 void transpose_narrow_t(const void *src, int64_t idx0, int64_t HW, int64_t nc, int64_t len, float *dst) {
    const char *s8 = static_cast<const char *>(src);
    constexpr int64_t es = E == Elem::F32 ? 4 : 2;
    for (int64_t i = 0; i < len; i += 16) {
        const int64_t np = std::min<int64_t>(16, len - i);
        const __mmask16 mp = tail16(np);
        __m512 q[4], out[4];
        for (int64_t l = 0; l < 4; ++l) {
            _mm_prefetch(s8 + (idx0 + std::min(l, nc - 1) * HW + i + 64) * es, _MM_HINT_T0);
            q[l] = load16_t<E>(src, idx0 + std::min(l, nc - 1) * HW + i, l < nc ? mp : 0);
        }
        rows4_to_pixels(q, out);
        float *d = dst + 4 * i;
        if (np == 16) {
            for (int m = 0; m < 4; ++m) _mm512_storeu_ps(d + 16 * m, out[m]);
        } else {
            for (int64_t m = 0; m * 4 < np; ++m) _mm512_mask_storeu_ps(d + 16 * m, tail16(4 * (np - 4 * m)), out[m]);
        }
    }
}

// Phase A, 16 x 16 blocks: inT[(n*HW + i)*C + c] = input[(n*C + c)*HW + i].
template <Elem E>
ACP_AVX512 void transpose_input_t(const Geometry &g, const void *input, float *inT, int64_t n, int64_t hw0, int64_t len,
                                    int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C;
    constexpr int64_t es = E == Elem::F32 ? 4 : 2;
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
        const int64_t nc = std::min<int64_t>(16, C - c0);
        if (lane_width(nc) == 4) {
            transpose_narrow_t<E>(input, (n * C + c0) * HW + hw0, HW, nc, len, inT + n * HW * padded_channels(C) + c0 * HW + hw0 * 4);
            continue;
        }
        __m512 r[16];
        const int64_t ld = lane_width(nc);  // the pad lanes get the zero rows' zeros
        float *dst = inT + n * HW * padded_channels(C) + c0 * HW;
        for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
            const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
            const __mmask16 mp = tail16(np);
            for (int64_t l = 0; l < nc; ++l)
                _mm_prefetch(static_cast<const char *>(input) + ((n * C + c0 + l) * HW + i0 + 64) * es, _MM_HINT_T0);
#pragma GCC unroll 16
            for (int64_t l = 0; l < 16; ++l) r[l] = load16_t<E>(input, (n * C + c0 + std::min(l, nc - 1)) * HW + i0, l < nc ? mp : 0);
            transpose16(r);
            for (int64_t i = 0; i < np; ++i) _mm512_mask_storeu_ps(dst + (i0 + i) * ld, tail16(ld), r[i]);
        }
    }
}
ACP_AVX512 inline void transpose_input_avx(const Geometry &g, Elem e, const void *input, float *inT, int64_t n, int64_t hw0,
                                             int64_t len, int64_t c_lo, int64_t c_hi) {
    if (e == Elem::F16) transpose_input_t<Elem::F16>(g, input, inT, n, hw0, len, c_lo, c_hi);
    else if (e == Elem::BF16) transpose_input_t<Elem::BF16>(g, input, inT, n, hw0, len, c_lo, c_hi);
    else transpose_input_t<Elem::F32>(g, input, inT, n, hw0, len, c_lo, c_hi);
}

// Phase C for a narrow block: dst planes (HW apart, element index idx0 = the first plane's pixel 0
// of the range) = sum over k of the K accumulators' records (src, kstride apart), ascending k.
template <Elem E>
ACP_AVX512 void reduce_narrow_t(const float *src, int64_t kstride, int64_t K, int64_t len, int64_t nc, void *dst, int64_t idx0,
                                  int64_t HW) {
    for (int64_t i = 0; i < len; i += 16) {
        const int64_t np = std::min<int64_t>(16, len - i);
        const __mmask16 mp = tail16(np);
        const float *s = src + 4 * i;
        _mm_prefetch(reinterpret_cast<const char *>(s + 256), _MM_HINT_T0);
        __m512 a[4], q[4];
        for (int64_t m = 0; m < 4; ++m) {
            const __mmask16 mm = tail16(4 * (np - 4 * m));
            __m512 v = _mm512_maskz_loadu_ps(mm, s + m * 16);
            for (int64_t k = 1; k < K; ++k) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mm, s + k * kstride + m * 16));
            a[m] = v;
        }
        pixels_to_rows4(a, q);
        for (int64_t l = 0; l < nc; ++l) store16_t<E>(dst, idx0 + l * HW + i, mp, q[l]);
    }
}

// Phase C, 16 x 16 blocks: input_grad[(n*C + c)*HW + i] = sum_k acc[((n*K + k)*HW + i)*C + c].
template <Elem E>
ACP_AVX512 void reduce_accumulators_t(const Geometry &g, int64_t K, const float *acc, void *input_grad, int64_t n, int64_t hw0,
                                        int64_t len, int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C, Cp = padded_channels(C);
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
        const int64_t nc = std::min<int64_t>(16, C - c0);
        const float *base = acc + n * K * HW * Cp + c0 * HW;
        if (lane_width(nc) == 4) {  // same additions in the same order, a quarter of the shuffles
            reduce_narrow_t<E>(base + hw0 * 4, HW * Cp, K, len, nc, input_grad, (n * C + c0) * HW + hw0, HW);
            continue;
        }
        const __mmask16 mc = tail16(nc);
        const int64_t ld = lane_width(nc);
        __m512 r[16];
        for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
            const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
            const __mmask16 mp = tail16(np);
            for (int64_t i = 0; i < 16; ++i) {
                if (i >= np) {
                    r[i] = _mm512_setzero_ps();
                    continue;
                }
                const float *src = base + (i0 + i) * ld;
                _mm_prefetch(reinterpret_cast<const char *>(src + 32 * ld), _MM_HINT_T0);
                __m512 s = _mm512_maskz_loadu_ps(mc, src);
                for (int64_t k = 1; k < K; ++k) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mc, src + k * HW * Cp));
                r[i] = s;
            }
            transpose16(r);
            for (int64_t l = 0; l < nc; ++l) store16_t<E>(input_grad, (n * C + c0 + l) * HW + i0, mp, r[l]);
        }
    }
}
ACP_AVX512 inline void reduce_accumulators_avx(const Geometry &g, int64_t K, Elem e, const float *acc, void *input_grad,
                                                 int64_t n, int64_t hw0, int64_t len, int64_t c_lo, int64_t c_hi) {
    if (e == Elem::F16) reduce_accumulators_t<Elem::F16>(g, K, acc, input_grad, n, hw0, len, c_lo, c_hi);
    else if (e == Elem::BF16) reduce_accumulators_t<Elem::BF16>(g, K, acc, input_grad, n, hw0, len, c_lo, c_hi);
    else reduce_accumulators_t<Elem::F32>(g, K, acc, input_grad, n, hw0, len, c_lo, c_hi);
}

// The gradOutput tile of run_task: tile[i * ld + c] = go[(n*C + cb + c)*Pn + p0 + i], i < np, c < nc.
template <Elem E>
ACP_AVX512 void load_go_tile_t(const void *go, int64_t base, int64_t Pn, int64_t np, int64_t nc, float *tile, int64_t ld) {
    const __mmask16 mp = tail16(np);
    const char *g8 = static_cast<const char *>(go);
    constexpr int64_t es = E == Elem::F32 ? 4 : 2;
    if (ld == 4) {  // a narrow block (nc <= 4): records of 4 values, 4 pixels per vector
        __m512 q[4], out[4];
        for (int64_t l = 0; l < 4; ++l) {
            const int64_t row = base + std::min(l, nc - 1) * Pn;
            _mm_prefetch(g8 + (row + 2 * kTile) * es, _MM_HINT_T0);
            q[l] = load16_t<E>(go, row, l < nc ? mp : 0);
        }
        rows4_to_pixels(q, out);
        for (int64_t m = 0; m * 4 < np; ++m) _mm512_storeu_ps(tile + m * 16, out[m]);
        return;
    }
    __m512 r[16];
    for (int64_t c0 = 0; c0 < nc; c0 += 16) {
        const int64_t ncc = std::min<int64_t>(16, nc - c0);
        // the next tile's rows: the hardware prefetcher does not follow this many strided streams
        for (int64_t l = 0; l < ncc; ++l) _mm_prefetch(g8 + (base + (c0 + l) * Pn + 2 * kTile) * es, _MM_HINT_T0);
#pragma GCC unroll 16
        for (int64_t l = 0; l < 16; ++l) r[l] = load16_t<E>(go, base + (c0 + std::min(l, ncc - 1)) * Pn, l < ncc ? mp : 0);
        transpose16(r);
        for (int64_t i = 0; i < np; ++i) _mm512_storeu_ps(tile + i * ld + c0, r[i]);
    }
}
ACP_AVX512 inline void load_go_tile_avx(const void *go, Elem e, int64_t base, int64_t Pn, int64_t np, int64_t nc, float *tile,
                                          int64_t ld) {
    if (e == Elem::F16) load_go_tile_t<Elem::F16>(go, base, Pn, np, nc, tile, ld);
    else if (e == Elem::BF16) load_go_tile_t<Elem::BF16>(go, base, Pn, np, nc, tile, ld);
    else load_go_tile_t<Elem::F32>(go, base, Pn, np, nc, tile, ld);
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_LAYOUT_AVX_HPP_
