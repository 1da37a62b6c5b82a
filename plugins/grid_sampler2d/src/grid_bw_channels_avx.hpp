// AVX-512 channel work of the backward kernel for any tap view: each sample scatters its gradients
// into the channels-last accumulator (one vector per tap and channel block) and keeps the lane
// products gridGrad needs; the 16 samples' sums are then reduced together by a transpose, in a fixed
// order. Bilinear tiles of a narrow block have their own form (grid_bw_bilinear_avx.hpp).
#ifndef GRID_SAMPLER2D_GRID_BW_CHANNELS_AVX_HPP_
#define GRID_SAMPLER2D_GRID_BW_CHANNELS_AVX_HPP_

#include <algorithm>
#include <cstdint>

#include "grid_bw_views.hpp"
#include "grid_simd.hpp"

namespace gsamp {

#if ACP_X86
// One sample's taps over one channel block of nc <= 16 channels (go: the sample's gradients; in /
// acc: the block's channels-last arrays, ld = lane_width(nc) values per input pixel). inputGrad is
// scattered into acc; for gridGrad the per-lane products g * sum_t c_t v_t are stored to px / py
// (ld lanes) and reduced later, 16 samples at once. A full block uses plain loads and stores: a
// masked store does not forward to the next sample's load of a shared tap.
template <bool kFull, class V>
ACP_AVX512 inline void channels_avx16(const V &tp, const float *go, int64_t nc, const float *in, float *acc, float *px,
                                 float *py) {
    const __mmask16 m = tail16(nc);
    const __m512 g = kFull ? _mm512_loadu_ps(go) : _mm512_maskz_loadu_ps(m, go);
    __m512 sx = _mm512_setzero_ps(), sy = _mm512_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 16;
        if (acc) {
            float *p = acc + o;
            if (kFull) _mm512_storeu_ps(p, _mm512_fmadd_ps(_mm512_set1_ps(tp.w(t)), g, _mm512_loadu_ps(p)));
            else _mm512_mask_storeu_ps(p, m, _mm512_fmadd_ps(_mm512_set1_ps(tp.w(t)), g, _mm512_maskz_loadu_ps(m, p)));
        }
        if (in) {
            const __m512 v = kFull ? _mm512_loadu_ps(in + o) : _mm512_maskz_loadu_ps(m, in + o);
            sx = _mm512_fmadd_ps(_mm512_set1_ps(tp.cx(t)), v, sx);
            sy = _mm512_fmadd_ps(_mm512_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm512_store_ps(px, _mm512_mul_ps(g, sx));
        _mm512_store_ps(py, _mm512_mul_ps(g, sy));
    }
}
// Narrow blocks, zero-padded to 4 (SSE) or 8 (AVX) values per pixel: no masks needed.
template <class V>
ACP_AVX512 inline void channels_avx4(const V &tp, const float *go, const float *in, float *acc, float *px, float *py) {
    const __m128 g = _mm_loadu_ps(go);
    __m128 sx = _mm_setzero_ps(), sy = _mm_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 4;
        if (acc) _mm_storeu_ps(acc + o, _mm_fmadd_ps(_mm_set1_ps(tp.w(t)), g, _mm_loadu_ps(acc + o)));
        if (in) {
            const __m128 v = _mm_loadu_ps(in + o);
            sx = _mm_fmadd_ps(_mm_set1_ps(tp.cx(t)), v, sx);
            sy = _mm_fmadd_ps(_mm_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm_store_ps(px, _mm_mul_ps(g, sx));
        _mm_store_ps(py, _mm_mul_ps(g, sy));
    }
}
template <class V>
ACP_AVX512 inline void channels_avx8(const V &tp, const float *go, const float *in, float *acc, float *px, float *py) {
    const __m256 g = _mm256_loadu_ps(go);
    __m256 sx = _mm256_setzero_ps(), sy = _mm256_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 8;
        if (acc) _mm256_storeu_ps(acc + o, _mm256_fmadd_ps(_mm256_set1_ps(tp.w(t)), g, _mm256_loadu_ps(acc + o)));
        if (in) {
            const __m256 v = _mm256_loadu_ps(in + o);
            sx = _mm256_fmadd_ps(_mm256_set1_ps(tp.cx(t)), v, sx);
            sy = _mm256_fmadd_ps(_mm256_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm256_store_ps(px, _mm256_mul_ps(g, sx));
        _mm256_store_ps(py, _mm256_mul_ps(g, sy));
    }
}

// gridGrad's per-sample sums of one channel block (sum[0]: x, sum[1]: y; lane i = sample i) stored
// to gs (x, y interleaved; first block) or added to it; out (the last channel block, or null): also
// store gridGrad = (mx, my) * the totals, interleaved.
ACP_AVX512 inline void finish_grid_sums(const __m512 sum[2], int64_t np, float *gs, bool first, const float *mx,
                                          const float *my, float *out) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const __m512 xy0 = _mm512_maskz_permutex2var_ps(kAll, sum[0], lo, sum[1]);
    const __m512 xy1 = _mm512_maskz_permutex2var_ps(kAll, sum[0], hi, sum[1]);
    const __mmask16 m0 = tail16(2 * np), m1 = tail16(2 * np - 16);
    const __m512 t0 = first ? xy0 : _mm512_add_ps(load_n(gs, m0), xy0);
    const __m512 t1 = first ? xy1 : _mm512_add_ps(load_n(gs + 16, m1), xy1);
    if (out) {  // gridGrad: (mx, my) interleaved the same way, times the totals
        const __mmask16 mp = tail16(np);
        const __m512 vmx = _mm512_maskz_loadu_ps(mp, mx), vmy = _mm512_maskz_loadu_ps(mp, my);
        const __m512 m01 = _mm512_maskz_permutex2var_ps(kAll, vmx, lo, vmy), m23 = _mm512_maskz_permutex2var_ps(kAll, vmx, hi, vmy);
        store_n(out, m0, _mm512_mul_ps(m01, t0));
        store_n(out + 16, m1, _mm512_mul_ps(m23, t1));
        return;
    }
    store_n(gs, m0, t0);
    store_n(gs + 16, m1, t1);
}

// The channel work of a tile's np samples in one call (sample i's gradients at tile + i * tile_ld,
// its taps in the tile's corner arrays or in taps[i]), then gridGrad's per-sample sums of the
// lane products for all 16 samples at once (a transpose and 15 vector additions, in a fixed
// order), stored to gs (x, y interleaved; first block) or added to it. gs null: no gridGrad.
// out (the last channel block, or null): also store gridGrad = (mx, my) * the totals, interleaved.
template <class ViewOf>
ACP_AVX512 void tile_channels_avx(ViewOf view_of, int64_t np, const float *tile, int64_t tile_ld, int64_t nc,
                                    int64_t ld, const float *in, float *acc, float *gs, bool first, const float *mx,
                                    const float *my, float *out) {
    alignas(64) float px[16 * 16], py[16 * 16];  // ld = 4: 16 x 4 values; else 16 rows of 16 (zero padded)
    const int64_t row = ld == 4 ? 4 : 16;
    for (int64_t i = 0; i < np; ++i) {
        const float *g = tile + i * tile_ld;
        float *qx = px + i * row, *qy = py + i * row;
        const auto v = view_of(i);
        if (ld == 4) {
            channels_avx4(v, g, in, acc, qx, qy);
        } else if (ld == 8) {
            channels_avx8(v, g, in, acc, qx, qy);
            _mm256_store_ps(qx + 8, _mm256_setzero_ps());
            _mm256_store_ps(qy + 8, _mm256_setzero_ps());
        } else if (nc == 16) {
            channels_avx16<true>(v, g, nc, in, acc, qx, qy);
        } else {
            channels_avx16<false>(v, g, nc, in, acc, qx, qy);
        }
    }
    if (!gs || !in) return;
    __m512 sum[2];
    for (int a = 0; a < 2; ++a) {
        const float *q = a == 0 ? px : py;
        if (ld == 4) {
            __m512 v[4], r[4];
            for (int64_t m = 0; m < 4; ++m) v[m] = _mm512_maskz_load_ps(tail16(4 * std::max<int64_t>(0, np - 4 * m)), q + 16 * m);
            pixels_to_rows4(v, r);
            sum[a] = _mm512_add_ps(_mm512_add_ps(r[0], r[1]), _mm512_add_ps(r[2], r[3]));
        } else {
            __m512 r[16];
            for (int64_t i = 0; i < 16; ++i) r[i] = i < np ? _mm512_load_ps(q + 16 * i) : _mm512_setzero_ps();
            transpose16(r);
            for (int w = 8; w >= 1; w /= 2)
                for (int i = 0; i < w; ++i) r[i] = _mm512_add_ps(r[i], r[i + w]);
            sum[a] = r[0];
        }
    }
    finish_grid_sums(sum, np, gs, first, mx, my, out);
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_CHANNELS_AVX_HPP_
