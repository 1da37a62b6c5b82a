// Bands of output pixels for the one-task-per-image path (K == 1): which input rows a band's taps
// can touch, from the band's smallest and largest grid y alone (unnormalize and border padding's
// clip are monotone and every tap lies within floor(y) - 1 .. floor(y) + 2 of the clipped y),
// widened by a row of margin each way and clamped to the plane; reflection padding and NaN give
// every row. A superset is all the streaming
// driver (stream_image) needs: it transposes those rows of input and zeroes those rows of the
// accumulator just before the band runs, and finishes a row (phase C) once no later band can touch
// it. With a smooth grid (image warps) both scratch arrays then stay in the core's cache from the
// first touch to the last instead of going to memory and back, which is what bounds a large image
// on two cores. The spans never change what is added, or in which order: the bits do not depend on
// them.
#ifndef GRID_SAMPLER2D_GRID_BW_BANDS_HPP_
#define GRID_SAMPLER2D_GRID_BW_BANDS_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "grid_bw_plan.hpp"
#include "grid_coords.hpp"
#include "grid_rows.hpp"
#include "grid_simd.hpp"

namespace gsamp {

// Rows [lo, hi] of an input plane.
struct RowSpan {
    int32_t lo, hi;
};

// Smallest and largest y of grid samples [p0, p1) of image n (grid: (N, Ho*Wo, 2) of element e),
// false when one of them is NaN.
template <class T>
inline bool grid_y_range_scalar(const void *grid, Elem e, int64_t n, int64_t Pn, int64_t p0, int64_t p1, T *ymin, T *ymax,
                                bool avx) {
    alignas(64) T buf[2 * kRowBlock];
    T lo = INFINITY, hi = -INFINITY;
    for (int64_t q = p0; q < p1; q += kRowBlock) {
        const int64_t m = std::min(kRowBlock, p1 - q);
        load_row(at(grid, (n * Pn + q) * 2, e), e, 2 * m, buf, avx);
        for (int64_t i = 0; i < m; ++i) {
            const T y = buf[2 * i + 1];
            if (std::isnan(y)) return false;
            lo = std::min(lo, y);
            hi = std::max(hi, y);
        }
    }
    *ymin = lo;
    *ymax = hi;
    return true;
}

#if ACP_X86
// The same for FLOAT compute, 16 samples at a time.
ACP_AVX512 inline bool grid_y_range_avx(const void *grid, Elem e, int64_t n, int64_t Pn, int64_t p0, int64_t p1,
                                          float *ymin, float *ymax) {
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    const int64_t base = n * Pn * 2;
    for (int64_t q = p0; q < p1; q += 16) {
        const int64_t m = std::min<int64_t>(16, p1 - q);
        const __m512 a = load16(grid, base + 2 * q, e, tail16(2 * m));
        const __m512 b = load16(grid, base + 2 * q + 16, e, tail16(2 * m - 16));
        const __m512 y = _mm512_maskz_permutex2var_ps(kAll, a, odd, b);
        const __mmask16 v = tail16(m);
        nan = static_cast<__mmask16>(nan | _mm512_mask_cmp_ps_mask(v, y, y, _CMP_UNORD_Q));
        lo = _mm512_mask_min_ps(lo, v, lo, y);
        hi = _mm512_mask_max_ps(hi, v, hi, y);
    }
    alignas(64) float l[16], h[16];  // (GCC 12's _mm512_reduce_* trip -Wuninitialized)
    _mm512_store_ps(l, lo);
    _mm512_store_ps(h, hi);
    *ymin = l[0];
    *ymax = h[0];
    for (int i = 1; i < 16; ++i) {
        *ymin = std::min(*ymin, l[i]);
        *ymax = std::max(*ymax, h[i]);
    }
    return nan == 0;
}
#endif

// Input rows output pixels [p0, p1) (p0 < p1) of image n can touch: a superset, see above.
template <class T>
inline RowSpan band_rows(const BackwardPlan &P, const void *grid, int64_t n, int64_t p0, int64_t p1, bool avx) {
    const Geometry &g = P.g;
    const RowSpan all{0, static_cast<int32_t>(g.H - 1)};
    if (g.padding == Padding::Reflection) return all;
    T ymin, ymax;
    bool ok;
#if ACP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx && P.e.grid != Elem::F64) ok = grid_y_range_avx(grid, P.e.grid, n, g.out_pixels(), p0, p1, &ymin, &ymax);
        else ok = grid_y_range_scalar<T>(grid, P.e.grid, n, g.out_pixels(), p0, p1, &ymin, &ymax, avx);
    } else
#endif
        ok = grid_y_range_scalar<T>(grid, P.e.grid, n, g.out_pixels(), p0, p1, &ymin, &ymax, avx);
    if (!ok) return all;
    T d;
    const T top = static_cast<T>(g.H - 1);
    T ylo = unnormalize(ymin, g.H, g.align, &d), yhi = unnormalize(ymax, g.H, g.align, &d);
    if (std::isnan(ylo) || std::isnan(yhi)) return all;  // (inf * 0: a one-row plane with alignCorners)
    // Border padding clips the coordinate into the plane before its taps are taken, and a tap one
    // row past a clipped coordinate is still read (with weight 0): clip first, as the taps do.
    if (g.padding == Padding::Border) {
        ylo = std::min(std::max(ylo, T(0)), top);
        yhi = std::min(std::max(yhi, T(0)), top);
    }
    // floor(y) - 1 and floor(y) + 2 are the outermost taps; one more row each way of margin.
    const T lo = std::floor(ylo) - 2, hi = std::floor(yhi) + 3;
    // Clamped at both ends: no tap lies outside the plane that is read.
    auto clamp = [&](T r) { return static_cast<int32_t>(std::min(std::max(r, T(0)), top)); };
    return RowSpan{clamp(lo), clamp(hi)};
}

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_BANDS_HPP_
