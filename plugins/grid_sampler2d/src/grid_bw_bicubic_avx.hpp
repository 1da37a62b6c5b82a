// Bicubic with zeros or border padding on AVX-512: the taps of 16 samples at once (tile builder),
// and of one sample (compact builder, used where the samples go one by one). Same arithmetic as
// pixel_taps (Keys' kernel, A = -0.75, by Horner's rule), so the same taps and weights. Also the
// whole tile's channel work for a narrow channel block (C <= 4), row by row of taps.
#ifndef GRID_SAMPLER2D_GRID_BW_BICUBIC_AVX_HPP_
#define GRID_SAMPLER2D_GRID_BW_BICUBIC_AVX_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "grid_bw_channels_avx.hpp"
#include "grid_bw_views.hpp"
#include "grid_coords.hpp"
#include "grid_coords_avx.hpp"
#include "grid_simd.hpp"
#include "grid_taps.hpp"

namespace gsamp {

// The separable form of a bicubic tile for the narrow-block rows path (bicubic_tile4_avx): per
// sample one vector [x weights 0-3, x slopes 0-3, y weights 0-3, y slopes 0-3], and which samples
// have 16 taps inside in four runs of 4 neighbouring pixels (no tap clipped onto another).
struct BicubicRows {
    alignas(64) float sep[16][16];
    uint16_t run4;
};

#if ACP_X86
// Bicubic taps with zeros or border padding, vectorized: the 4 x-taps and 4 y-taps in one 256-bit
// vector (weights and slopes by Horner's rule, padding, bounds, indices), then the 4 x 4 products
// in one 512-bit vector, compressed to the valid taps in row-major order (like pixel_taps).
ACP_AVX512 inline void bicubic_taps_avx(const Geometry &g, float x, float y, Taps<float> &tp, float *mx, float *my) {
    const float ix = unnormalize(x, g.W, g.align, mx), iy = unnormalize(y, g.H, g.align, my);
    const float x0 = std::floor(ix), y0 = std::floor(iy), tx = ix - x0, ty = iy - y0;
    // lanes 0-3: x taps at -1, 0, 1, 2; lanes 4-7: y taps. d = distance to the tap: t+1, t, 1-t, 2-t.
    const __m256 sgn = _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1);
    const __m256 d = _mm256_fmadd_ps(_mm256_setr_ps(tx, tx, tx, tx, ty, ty, ty, ty), sgn, _mm256_setr_ps(1, 0, 1, 2, 1, 0, 1, 2));
    // Keys, A = -0.75: |d| <= 1: 1.25 d^3 - 2.25 d^2 + 1; 1 < |d| < 2: -0.75 d^3 + 3.75 d^2 - 6 d + 3
    const __m256 a3 = _mm256_setr_ps(-0.75f, 1.25f, 1.25f, -0.75f, -0.75f, 1.25f, 1.25f, -0.75f);
    const __m256 a2 = _mm256_setr_ps(3.75f, -2.25f, -2.25f, 3.75f, 3.75f, -2.25f, -2.25f, 3.75f);
    const __m256 a1 = _mm256_setr_ps(-6, 0, 0, -6, -6, 0, 0, -6), a0 = _mm256_setr_ps(3, 1, 1, 3, 3, 1, 1, 3);
    const __m256 w8 = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(a3, d, a2), d, a1), d, a0);
    const __m256 b2 = _mm256_setr_ps(-2.25f, 3.75f, 3.75f, -2.25f, -2.25f, 3.75f, 3.75f, -2.25f);
    const __m256 b1 = _mm256_setr_ps(7.5f, -4.5f, -4.5f, 7.5f, 7.5f, -4.5f, -4.5f, 7.5f);
    const __m256 s8 = _mm256_mul_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(b2, d, b1), d, a1), sgn);  // d(weight)/dt
    // tap coordinates, padded, checked, converted
    __m256 c = _mm256_add_ps(_mm256_setr_ps(x0, x0, x0, x0, y0, y0, y0, y0), _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2));
    const float wm = static_cast<float>(g.W - 1), hm = static_cast<float>(g.H - 1);
    const __m256 hi = _mm256_setr_ps(wm, wm, wm, wm, hm, hm, hm, hm), zero = _mm256_setzero_ps();
    if (g.padding == Padding::Border) {  // clip; NaN stays NaN
        c = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(c, zero, _CMP_LE_OQ), c, zero);
        c = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(c, hi, _CMP_GE_OQ), c, hi);
    }
    const __mmask8 valid = _mm256_cmp_ps_mask(c, zero, _CMP_GE_OQ) & _mm256_cmp_ps_mask(c, hi, _CMP_LE_OQ);
    const int32_t W32 = static_cast<int32_t>(g.W);
    const __m256i idx = _mm256_mullo_epi32(_mm256_maskz_cvttps_epi32(valid, c), _mm256_setr_epi32(1, 1, 1, 1, W32, W32, W32, W32));
    // 16 taps, lane 4 j + i: x tap i, y tap j
    const __m512i xi = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    const __m512i yi = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m512 W16 = _mm512_maskz_broadcast_f32x8(kAll, w8), S16 = _mm512_maskz_broadcast_f32x8(kAll, s8);
    const __m512 xw = _mm512_maskz_permutexvar_ps(kAll, xi, W16), yw = _mm512_maskz_permutexvar_ps(kAll, yi, W16);
    const __m512 xs = _mm512_maskz_permutexvar_ps(kAll, xi, S16), ys = _mm512_maskz_permutexvar_ps(kAll, yi, S16);
    const __m512i I16 = _mm512_maskz_broadcast_i32x8(kAll, idx);
    const __m512i off = _mm512_add_epi32(_mm512_maskz_permutexvar_epi32(kAll, xi, I16), _mm512_maskz_permutexvar_epi32(kAll, yi, I16));
    const uint32_t vx = valid & 0xfu, vy = (valid >> 4) & 0xfu;
    const uint32_t rows = ((vy & 1u) | ((vy & 2u) << 3) | ((vy & 4u) << 6) | ((vy & 8u) << 9)) * 0xfu;
    const auto m = static_cast<__mmask16>((vx * 0x1111u) & rows);
    tp.n = __builtin_popcount(m);
    // compress in registers (a compressing store to memory is slow on some cores)
    _mm512_storeu_ps(tp.w, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xw, yw)));
    _mm512_storeu_ps(tp.cx, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xs, yw)));
    _mm512_storeu_ps(tp.cy, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xw, ys)));
    const __m512i o = _mm512_maskz_compress_epi32(m, off);
    _mm512_storeu_si512(tp.off, _mm512_maskz_cvtepi32_epi64(0xff, _mm512_maskz_extracti64x4_epi64(0xff, o, 0)));
    _mm512_storeu_si512(tp.off + 8, _mm512_maskz_cvtepi32_epi64(0xff, _mm512_maskz_extracti64x4_epi64(0xff, o, 1)));
}

// Keys weight (or its t-slope) of tap i (at -1, 0, 1, 2) for fractions t, 16 samples at once.
ACP_AVX512 inline void keys_vec(__m512 t, int i, __m512 *w, __m512 *s) {
    // distance d = t+1, t, 1-t, 2-t; |d| <= 1: 1.25 d^3 - 2.25 d^2 + 1, else -0.75 d^3 + 3.75 d^2 - 6 d + 3
    static const float base[4] = {1, 0, 1, 2}, sg[4] = {1, 1, -1, -1};
    const bool far = i == 0 || i == 3;
    const __m512 d = _mm512_fmadd_ps(t, _mm512_set1_ps(sg[i]), _mm512_set1_ps(base[i]));
    const __m512 a3 = _mm512_set1_ps(far ? -0.75f : 1.25f), a2 = _mm512_set1_ps(far ? 3.75f : -2.25f);
    const __m512 a1 = _mm512_set1_ps(far ? -6.0f : 0.0f), a0 = _mm512_set1_ps(far ? 3.0f : 1.0f);
    *w = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(a3, d, a2), d, a1), d, a0);
    const __m512 b2 = _mm512_set1_ps(far ? -2.25f : 3.75f), b1 = _mm512_set1_ps(far ? 7.5f : -4.5f);
    *s = _mm512_mul_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(b2, d, b1), d, a1), _mm512_set1_ps(sg[i]));
}

// Bicubic taps of a tile of np <= 16 samples with zeros or border padding, 16 samples at once: the
// 4 x and 4 y weights, slopes, padded coordinates and bounds per sample lane, then the 16 taps
// (4 j + i) as products, stored tap-major with one validity mask per sample; rows (if not null):
// the separable form as well.
ACP_AVX512 inline void bicubic_tile_avx(const Geometry &g, const float *gv, int64_t np, TileTaps<16> &tt, float *mx,
                                          float *my, BicubicRows *rows = nullptr) {
    const __m512 lo = load_n(gv, tail16(2 * np)), hi = load_n(gv + 16, tail16(2 * np - 16));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 x = _mm512_maskz_permutex2var_ps(kAll, lo, even, hi);
    const __m512 y = _mm512_maskz_permutex2var_ps(kAll, lo, _mm512_add_epi32(even, _mm512_set1_epi32(1)), hi);
    __m512 dx, dy;
    const __m512 ix = unnormalize_vec(g.align, x, g.W, &dx), iy = unnormalize_vec(g.align, y, g.H, &dy);
    _mm512_storeu_ps(mx, dx);
    _mm512_storeu_ps(my, dy);
    const __m512 x0 = _mm512_maskz_roundscale_ps(kAll, ix, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 y0 = _mm512_maskz_roundscale_ps(kAll, iy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 tx = _mm512_sub_ps(ix, x0), ty = _mm512_sub_ps(iy, y0);
    __m512 xw[4], xs[4], yw[4], ys[4];
    __m512i col[4], row[4];
    __mmask16 vx[4], vy[4];
    const __m512 zero = _mm512_setzero_ps();
    const __m512 wm = _mm512_set1_ps(static_cast<float>(g.W - 1)), hm = _mm512_set1_ps(static_cast<float>(g.H - 1));
    for (int i = 0; i < 4; ++i) {
        keys_vec(tx, i, &xw[i], &xs[i]);
        keys_vec(ty, i, &yw[i], &ys[i]);
        __m512 cx = _mm512_add_ps(x0, _mm512_set1_ps(static_cast<float>(i - 1)));
        __m512 cy = _mm512_add_ps(y0, _mm512_set1_ps(static_cast<float>(i - 1)));
        if (g.padding == Padding::Border) {  // clip each tap; NaN stays NaN
            cx = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cx, zero, _CMP_LE_OQ), cx, zero);
            cx = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cx, wm, _CMP_GE_OQ), cx, wm);
            cy = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cy, zero, _CMP_LE_OQ), cy, zero);
            cy = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cy, hm, _CMP_GE_OQ), cy, hm);
        }
        vx[i] = inside_vec(cx, g.W);
        vy[i] = inside_vec(cy, g.H);
        col[i] = _mm512_maskz_cvttps_epi32(vx[i], cx);
        row[i] = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy[i], cy), _mm512_set1_epi32(static_cast<int32_t>(g.W)));
    }
    __m512i mask = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
            const int t = 4 * j + i;
            _mm512_store_ps(tt.w[t], _mm512_mul_ps(xw[i], yw[j]));
            _mm512_store_ps(tt.cx[t], _mm512_mul_ps(xs[i], yw[j]));
            _mm512_store_ps(tt.cy[t], _mm512_mul_ps(xw[i], ys[j]));
            _mm512_store_si512(tt.off[t], _mm512_add_epi32(row[j], col[i]));
            mask = _mm512_mask_or_epi32(mask, static_cast<__mmask16>(vx[i] & vy[j]), mask, _mm512_set1_epi32(1 << t));
        }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(tt.mask), _mm512_maskz_cvtepi32_epi16(kAll, mask));
    if (!rows) return;
    __m512 r[16];
    for (int i = 0; i < 4; ++i) {
        r[i] = xw[i];
        r[4 + i] = xs[i];
        r[8 + i] = yw[i];
        r[12 + i] = ys[i];
    }
    transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_store_ps(rows->sep[i], r[i]);
    __mmask16 all = kAll;
    for (int i = 0; i < 4; ++i) all = static_cast<__mmask16>(all & vx[i] & vy[i]);
    const __mmask16 run = _mm512_cmpeq_epi32_mask(_mm512_sub_epi32(col[3], col[0]), _mm512_set1_epi32(3));
    rows->run4 = static_cast<uint16_t>(all & run);
}

// A bicubic tile over a narrow block (ld = 4). A sample of rows.run4 takes its taps row by row: the
// four taps of a row are four neighbouring records, 64 bytes, so inputGrad is one 512-bit update per
// row (the tap weights x_i * y_j built from the separable vector, the same products as tt.w: the
// same bits as tap by tap), and gridGrad's lane sums one 512-bit load and two FMAs per row. Other
// samples go tap by tap (channels_avx4). The lane products are then reduced as in tile_channels_avx.
ACP_AVX512 inline void bicubic_tile4_avx(const TileTaps<16> &tt, const BicubicRows &rows, int64_t np, const float *tile,
                                           const float *in, float *acc, float *gs, bool first, const float *mx, const float *my,
                                           float *out) {
    alignas(64) float px[16 * 4] = {}, py[16 * 4] = {};  // (zeros: GCC 12 cannot see the masked loads below)
    const __m512i i4 = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    const __m512i ix = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i is = _mm512_add_epi32(ix, _mm512_set1_epi32(4));
    for (int64_t i = 0; i < np; ++i) {
        const float *g = tile + 4 * i;
        if (!((rows.run4 >> i) & 1u)) {
            channels_avx4(TileView<16>{tt, i}, g, in, acc, px + 4 * i, py + 4 * i);
            continue;
        }
        const __m512 g16 = _mm512_maskz_permutexvar_ps(kAll, i4, _mm512_maskz_loadu_ps(0xf, g));  // g in each 128-bit lane
        const __m512 sep = _mm512_load_ps(rows.sep[i]);
        const __m512 xw = _mm512_maskz_permutexvar_ps(kAll, ix, sep), xs = _mm512_maskz_permutexvar_ps(kAll, is, sep);
        __m512 sx = _mm512_setzero_ps(), sy = _mm512_setzero_ps();
        for (int j = 0; j < 4; ++j) {
            const __m512 yw = _mm512_maskz_permutexvar_ps(kAll, _mm512_set1_epi32(8 + j), sep);
            const int64_t o = int64_t{tt.off[4 * j][i]} * 4;
            if (acc) _mm512_storeu_ps(acc + o, _mm512_fmadd_ps(_mm512_mul_ps(xw, yw), g16, _mm512_loadu_ps(acc + o)));
            if (in) {
                const __m512 ys = _mm512_maskz_permutexvar_ps(kAll, _mm512_set1_epi32(12 + j), sep);
                const __m512 v = _mm512_loadu_ps(in + o);
                sx = _mm512_fmadd_ps(_mm512_mul_ps(xs, yw), v, sx);
                sy = _mm512_fmadd_ps(_mm512_mul_ps(xw, ys), v, sy);
            }
        }
        if (!in) continue;
        // the four pixels' lanes of each channel summed, (p0 + p2) + (p1 + p3) in every 128-bit lane, times g
        __m512 fx = _mm512_add_ps(sx, _mm512_maskz_shuffle_f32x4(kAll, sx, sx, 0x4e));
        __m512 fy = _mm512_add_ps(sy, _mm512_maskz_shuffle_f32x4(kAll, sy, sy, 0x4e));
        fx = _mm512_mul_ps(g16, _mm512_add_ps(fx, _mm512_maskz_shuffle_f32x4(kAll, fx, fx, 0xb1)));
        fy = _mm512_mul_ps(g16, _mm512_add_ps(fy, _mm512_maskz_shuffle_f32x4(kAll, fy, fy, 0xb1)));
        _mm512_mask_storeu_ps(px + 4 * i, 0xf, fx);
        _mm512_mask_storeu_ps(py + 4 * i, 0xf, fy);
    }
    if (!gs || !in) return;
    __m512 sum[2];
    for (int a = 0; a < 2; ++a) {
        const float *q = a == 0 ? px : py;
        __m512 v[4], r[4];
        for (int64_t m = 0; m < 4; ++m) v[m] = _mm512_maskz_load_ps(tail16(4 * std::max<int64_t>(0, np - 4 * m)), q + 16 * m);
        pixels_to_rows4(v, r);
        sum[a] = _mm512_add_ps(_mm512_add_ps(r[0], r[1]), _mm512_add_ps(r[2], r[3]));
    }
    finish_grid_sums(sum, np, gs, first, mx, my, out);
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_BICUBIC_AVX_HPP_
