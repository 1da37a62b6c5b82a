// The one-sample-at-a-time path of the backward kernel: taps of one sample (pixel_taps, or the
// vector bicubic builder) and its scalar channel loop. This is the path of nearest, reflection,
// DOUBLE and machines without AVX-512, and the reference the vector paths are tested against.
#ifndef GRID_SAMPLER2D_GRID_BW_SAMPLE_HPP_
#define GRID_SAMPLER2D_GRID_BW_SAMPLE_HPP_

#include <cstdint>

#include "grid_bw_bicubic_avx.hpp"
#include "grid_bw_views.hpp"
#include "grid_taps.hpp"

namespace gsamp {

// ---- one pixel, one block of nc channels (in / acc: the block's channel 0 of tap offset 0) ----

template <class T, class V>
void channels_scalar(const V &tp, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx,
                     T *gy) {
    T ax = 0, ay = 0;
    for (int64_t c = 0; c < nc; ++c) {
        const T g = go[c];
        T sx = 0, sy = 0;
        for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
            const int64_t o = tp.off(t) * C + c;
            if (acc) acc[o] += tp.w(t) * g;
            if (in) {
                sx += tp.cx(t) * in[o];
                sy += tp.cy(t) * in[o];
            }
        }
        ax += g * sx;
        ay += g * sy;
    }
    *gx += ax;
    *gy += ay;
}

template <class T, class V>
void channels(const V &tp, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx, T *gy,
              bool avx) {
    (void)avx;  // the AVX-512 path runs whole tiles (tile_channels_avx)
    channels_scalar(tp, go, nc, in, acc, C, gx, gy);
}

// The taps of one sample: the vector bicubic builder where it applies, else pixel_taps.
template <class T>
inline void make_taps(const Geometry &g, T x, T y, Taps<T> &tp, T *mx, T *my, bool avx) {
#if ACP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx && g.interp == Interp::Bicubic && g.padding != Padding::Reflection && g.H * g.W < (int64_t{1} << 31))
            return bicubic_taps_avx(g, x, y, tp, mx, my);
    }
#endif
    (void)avx;
    pixel_taps(g, x, y, tp, mx, my);
}

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_SAMPLE_HPP_
