// Bilinear with zeros or border padding on AVX-512: the taps of 16 samples at once (coordinates,
// weights, corner offsets and masks per lane), and the whole tile's channel work for a narrow
// channel block (C <= 4, e.g. images), where per-sample overheads dominate.
#ifndef GRID_SAMPLER2D_GRID_BW_BILINEAR_AVX_HPP_
#define GRID_SAMPLER2D_GRID_BW_BILINEAR_AVX_HPP_

#include <cstdint>

#include "grid_bw_channels_avx.hpp"
#include "grid_bw_views.hpp"
#include "grid_coords_avx.hpp"
#include "grid_simd.hpp"

namespace gsamp {

#if ACP_X86
// Bilinear taps of a tile of np <= 16 samples with zeros or border padding, 16 samples at once
// (same arithmetic as pixel_taps: unnormalize, clip with PyTorch's border gradient, floor,
// weights nw, ne, sw, se, bounds), then one 16 x 16 transpose turns the corner vectors into one
// record per sample, compressed to its valid corners.
ACP_AVX512 void bilinear_tile_avx(const Geometry &g, const float *gv, int64_t np, TileTaps<4> &tt, float *mx,
                                    float *my) {
    const __mmask16 mp = tail16(np);
    const __m512 lo = load_n(gv, tail16(2 * np)), hi = load_n(gv + 16, tail16(2 * np - 16));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 x = _mm512_maskz_permutex2var_ps(kAll, lo, even, hi);
    const __m512 y = _mm512_maskz_permutex2var_ps(kAll, lo, _mm512_add_epi32(even, _mm512_set1_epi32(1)), hi);
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 dx, dy;
    const __m512 ix = source_vec(g, x, g.W, &dx), iy = source_vec(g, y, g.H, &dy);
    _mm512_storeu_ps(mx, dx);
    _mm512_storeu_ps(my, dy);
    const __m512 x0 = _mm512_maskz_roundscale_ps(kAll, ix, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 y0 = _mm512_maskz_roundscale_ps(kAll, iy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 x1 = _mm512_add_ps(x0, one), y1 = _mm512_add_ps(y0, one);
    const __m512 dx1 = _mm512_sub_ps(ix, x0), dx0 = _mm512_sub_ps(x1, ix), dy1 = _mm512_sub_ps(iy, y0), dy0 = _mm512_sub_ps(y1, iy);
    const __mmask16 vx0 = inside_vec(x0, g.W), vx1 = inside_vec(x1, g.W), vy0 = inside_vec(y0, g.H), vy1 = inside_vec(y1, g.H);
    const __m512i W32 = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i c0 = _mm512_maskz_cvttps_epi32(vx0, x0), c1 = _mm512_maskz_cvttps_epi32(vx1, x1);
    const __m512i r0 = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy0, y0), W32);
    const __m512i r1 = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy1, y1), W32);
    const __m512 nzero = _mm512_setzero_ps();
    _mm512_store_ps(tt.w[0], _mm512_mul_ps(dx0, dy0));
    _mm512_store_ps(tt.w[1], _mm512_mul_ps(dx1, dy0));
    _mm512_store_ps(tt.w[2], _mm512_mul_ps(dx0, dy1));
    _mm512_store_ps(tt.w[3], _mm512_mul_ps(dx1, dy1));
    _mm512_store_ps(tt.cx[0], _mm512_sub_ps(nzero, dy0));
    _mm512_store_ps(tt.cx[1], dy0);
    _mm512_store_ps(tt.cx[2], _mm512_sub_ps(nzero, dy1));
    _mm512_store_ps(tt.cx[3], dy1);
    _mm512_store_ps(tt.cy[0], _mm512_sub_ps(nzero, dx0));
    _mm512_store_ps(tt.cy[1], _mm512_sub_ps(nzero, dx1));
    _mm512_store_ps(tt.cy[2], dx0);
    _mm512_store_ps(tt.cy[3], dx1);
    _mm512_store_si512(tt.off[0], _mm512_add_epi32(r0, c0));
    _mm512_store_si512(tt.off[1], _mm512_add_epi32(r0, c1));
    _mm512_store_si512(tt.off[2], _mm512_add_epi32(r1, c0));
    _mm512_store_si512(tt.off[3], _mm512_add_epi32(r1, c1));
    // corner masks -> one byte per sample: bit t = corner t inside
    const __m512i bit = _mm512_set1_epi32(1);
    __m512i m = _mm512_maskz_mov_epi32(static_cast<__mmask16>(vy0 & vx0), bit);
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy0 & vx1), m, _mm512_set1_epi32(2));
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy1 & vx0), m, _mm512_set1_epi32(4));
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy1 & vx1), m, _mm512_set1_epi32(8));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(tt.mask), _mm512_maskz_cvtepi32_epi16(kAll, m));
    (void)mp;
    (void)np;
}

// A bilinear tile over a narrow block (ld = 4): inputGrad one 128-bit corner at a time (with a
// smooth grid the next sample's corners are shifted by one pixel, 16 bytes, and a load that half
// overlaps an earlier 256-bit store cannot be forwarded from it). For gridGrad each sample stores
// only its corners' lane products g * v (one 256-bit load and multiply per row of two corners,
// zeros for a corner outside); one 16 x 16 transpose then gives, for all 16 samples at once, the
// per-corner dot products d_t, and gridGrad's sums are sum_t c_t * d_t with the corner weights
// zeroed outside (a NaN grid gives none). A fixed order throughout, set by the shape.
ACP_AVX512 inline void bilinear_tile4_avx(const TileTaps<4> &tt, int64_t np, const float *tile, const float *in, float *acc,
                                     float *gs, bool first, const float *mx, const float *my, float *out) {
    alignas(64) float q[16 * 16];  // sample i: corners nw, ne, sw, se x 4 lanes
    for (int64_t i = 0; i < np; ++i) {
        const __m128 g4 = _mm_loadu_ps(tile + 4 * i);
        const __m256 g8 = _mm256_set_m128(g4, g4);
        const unsigned m = tt.mask[i];
        // Row r of corners (t = r, r + 1): both inside is the common case, and then the east corner
        // is the next record of the west one, so one offset serves the four accesses of the row.
        for (int r = 0; r < 4; r += 2) {
            const unsigned bits = (m >> r) & 3u;
            float *qr = q + 16 * i + 4 * r;
            if (bits == 3u) {
                const int64_t o = int64_t{tt.off[r][i]} * 4;
                if (acc) {
                    _mm_storeu_ps(acc + o, _mm_fmadd_ps(_mm_set1_ps(tt.w[r][i]), g4, _mm_loadu_ps(acc + o)));
                    _mm_storeu_ps(acc + o + 4, _mm_fmadd_ps(_mm_set1_ps(tt.w[r + 1][i]), g4, _mm_loadu_ps(acc + o + 4)));
                }
                if (in) _mm256_store_ps(qr, _mm256_mul_ps(_mm256_loadu_ps(in + o), g8));
                continue;
            }
            for (int k = 0; k < 2; ++k) {
                const bool inside = (bits >> k) & 1u;
                const int64_t o = int64_t{tt.off[r + k][i]} * 4;
                if (acc && inside) _mm_storeu_ps(acc + o, _mm_fmadd_ps(_mm_set1_ps(tt.w[r + k][i]), g4, _mm_loadu_ps(acc + o)));
                if (in) _mm_store_ps(qr + 4 * k, inside ? _mm_mul_ps(_mm_loadu_ps(in + o), g4) : _mm_setzero_ps());
            }
        }
    }
    if (!gs || !in) return;
    __m512 rr[16];
    for (int64_t i = 0; i < 16; ++i) rr[i] = i < np ? _mm512_load_ps(q + 16 * i) : _mm512_setzero_ps();
    transpose16(rr);  // rr[4 t + c]: lane c of corner t, sample i in lane i
    const __m512i mv = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(tt.mask)));
    __m512 sum[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int t = 0; t < 4; ++t) {
        const __m512 d = _mm512_add_ps(_mm512_add_ps(rr[4 * t], rr[4 * t + 1]), _mm512_add_ps(rr[4 * t + 2], rr[4 * t + 3]));
        const __mmask16 k = _mm512_test_epi32_mask(mv, _mm512_set1_epi32(1 << t));
        sum[0] = _mm512_fmadd_ps(_mm512_maskz_load_ps(k, tt.cx[t]), d, sum[0]);
        sum[1] = _mm512_fmadd_ps(_mm512_maskz_load_ps(k, tt.cy[t]), d, sum[1]);
    }
    finish_grid_sums(sum, np, gs, first, mx, my, out);
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_BILINEAR_AVX_HPP_
