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

#if GSAMP_X86
// Phase A, 16 x 16 blocks: inT[(n*HW + i)*C + c] = input[(n*C + c)*HW + i].
GSAMP_AVX512 inline void transpose_input_avx(const Geometry &g, Elem e, const void *input, float *inT, int64_t n, int64_t hw0,
                                      int64_t len, int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C;
    __m512 r[16];
    for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
        const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
        const __mmask16 mp = tail16(np);
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
            const int64_t nc = std::min<int64_t>(16, C - c0);
            for (int64_t l = 0; l < nc; ++l)
                _mm_prefetch(static_cast<const char *>(input) + ((n * C + c0 + l) * HW + i0 + 64) * elem_bytes(e), _MM_HINT_T0);
            if (lane_width(nc) == 4) {
                __m512 q[4], out[4];
                for (int64_t l = 0; l < 4; ++l) q[l] = load16(input, (n * C + c0 + std::min(l, nc - 1)) * HW + i0, e, l < nc ? mp : 0);
                rows4_to_pixels(q, out);
                float *dst = inT + n * HW * padded_channels(C) + c0 * HW + i0 * 4;
                for (int64_t m = 0; m * 4 < np; ++m) _mm512_mask_storeu_ps(dst + m * 16, tail16(4 * (np - 4 * m)), out[m]);
                continue;
            }
#pragma GCC unroll 16
            for (int64_t l = 0; l < 16; ++l) r[l] = load16(input, (n * C + c0 + std::min(l, nc - 1)) * HW + i0, e, l < nc ? mp : 0);
            transpose16(r);
            const __mmask16 mc = tail16(nc);
            const int64_t ld = lane_width(nc);  // the pad lanes get the zero rows' zeros
            float *dst = inT + n * HW * padded_channels(C) + c0 * HW + i0 * ld;
            (void)mc;
            for (int64_t i = 0; i < np; ++i) _mm512_mask_storeu_ps(dst + i * ld, tail16(ld), r[i]);
        }
    }
}

// Phase C, 16 x 16 blocks: input_grad[(n*C + c)*HW + i] = sum_k acc[((n*K + k)*HW + i)*C + c].
GSAMP_AVX512 inline void reduce_accumulators_avx(const Geometry &g, int64_t K, Elem e, const float *acc, void *input_grad,
                                          int64_t n, int64_t hw0, int64_t len, int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C;
    __m512 r[16];
    for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
        const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
        const __mmask16 mp = tail16(np);
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
            const int64_t nc = std::min<int64_t>(16, C - c0);
            const __mmask16 mc = tail16(nc);
            if (lane_width(nc) == 4) {  // same additions in the same order, a quarter of the shuffles
                const int64_t Cp = padded_channels(C);
                const float *src = acc + n * K * HW * Cp + c0 * HW + i0 * 4;
                _mm_prefetch(reinterpret_cast<const char *>(src + 256), _MM_HINT_T0);
                __m512 a[4], q[4];
                for (int64_t m = 0; m < 4; ++m) {
                    const __mmask16 mm = tail16(4 * std::max<int64_t>(0, np - 4 * m));
                    __m512 v = _mm512_maskz_loadu_ps(mm, src + m * 16);
                    for (int64_t k = 1; k < K; ++k) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mm, src + k * HW * Cp + m * 16));
                    a[m] = v;
                }
                pixels_to_rows4(a, q);
                for (int64_t l = 0; l < nc; ++l) store16(input_grad, (n * C + c0 + l) * HW + i0, e, mp, q[l]);
                continue;
            }
            for (int64_t i = 0; i < 16; ++i) {
                if (i >= np) {
                    r[i] = _mm512_setzero_ps();
                    continue;
                }
                const int64_t ld = lane_width(nc), Cp = padded_channels(C);
                const float *src = acc + n * K * HW * Cp + c0 * HW + (i0 + i) * ld;
                _mm_prefetch(reinterpret_cast<const char *>(src + 32 * ld), _MM_HINT_T0);
                __m512 s = _mm512_maskz_loadu_ps(mc, src);
                for (int64_t k = 1; k < K; ++k) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mc, src + k * HW * Cp));
                r[i] = s;
            }
            transpose16(r);
            for (int64_t l = 0; l < nc; ++l) store16(input_grad, (n * C + c0 + l) * HW + i0, e, mp, r[l]);
        }
    }
}

// The gradOutput tile of run_task: tile[i * ld + c] = go[(n*C + cb + c)*Pn + p0 + i], i < np, c < nc.
GSAMP_AVX512 inline void load_go_tile_avx(const void *go, Elem e, int64_t base, int64_t Pn, int64_t np, int64_t nc, float *tile,
                                   int64_t ld) {
    const __mmask16 mp = tail16(np);
    const char *g8 = static_cast<const char *>(go);
    const int64_t es = elem_bytes(e);
    __m512 r[16];
    if (ld == 4) {  // a narrow block (nc <= 4): records of 4 values, 4 pixels per vector
        for (int64_t l = 0; l < nc; ++l) _mm_prefetch(g8 + (base + l * Pn + 2 * kTile) * es, _MM_HINT_T0);
        __m512 q[4], out[4];
        for (int64_t l = 0; l < 4; ++l) q[l] = load16(go, base + std::min(l, nc - 1) * Pn, e, l < nc ? mp : 0);
        rows4_to_pixels(q, out);
        for (int64_t m = 0; m * 4 < np; ++m) _mm512_storeu_ps(tile + m * 16, out[m]);
        return;
    }
    for (int64_t c0 = 0; c0 < nc; c0 += 16) {
        const int64_t ncc = std::min<int64_t>(16, nc - c0);
        // the next tile's rows: the hardware prefetcher does not follow this many strided streams
        for (int64_t l = 0; l < ncc; ++l) _mm_prefetch(g8 + (base + (c0 + l) * Pn + 2 * kTile) * es, _MM_HINT_T0);
#pragma GCC unroll 16
        for (int64_t l = 0; l < 16; ++l) r[l] = load16(go, base + (c0 + std::min(l, ncc - 1)) * Pn, e, l < ncc ? mp : 0);
        transpose16(r);
        for (int64_t i = 0; i < np; ++i) _mm512_storeu_ps(tile + i * ld + c0, r[i]);
    }
}
#endif  // GSAMP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_LAYOUT_AVX_HPP_
