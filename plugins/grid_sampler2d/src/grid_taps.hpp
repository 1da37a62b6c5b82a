// The taps of one grid sample: which input pixels it reads, with which weight, and the weight's
// derivatives along x and y (for gridGrad). Shared by the forward and backward kernels.
//   bilinear  up to 4 taps around the padded source coordinate;
//   nearest   1 tap at the padded coordinate rounded half to even (no gridGrad: PyTorch's 0);
//   bicubic   up to 16 taps at floor(coordinate) - 1 .. + 2, the padding applied to each tap.
// A tap whose padded coordinate is NaN, infinite or outside [0, size-1] is dropped before any
// integer conversion, so no grid value, however large or non-finite, can index memory.
#ifndef GRID_SAMPLER2D_GRID_TAPS_HPP_
#define GRID_SAMPLER2D_GRID_TAPS_HPP_

#include <cmath>
#include <cstdint>

#include "grid_coords.hpp"

namespace gsamp {

constexpr int kMaxTaps = 16;

// One sample's taps, structure of arrays (vector code loads and compresses them lane-wise).
template <class T>
struct Taps {
    int n;                   // taps in use
    int64_t off[kMaxTaps];   // y * W + x
    T w[kMaxTaps];           // weight
    T cx[kMaxTaps], cy[kMaxTaps];  // d(weight)/d(source x), d(weight)/d(source y)
    void add(int64_t o, T wt, T dx, T dy) {
        off[n] = o;
        w[n] = wt;
        cx[n] = dx;
        cy[n] = dy;
        ++n;
    }
};

// Taps of the sample at grid value (x, y); *mx / *my = d(source coordinate)/d(grid value).
// Returns the number of taps (also in taps.n).
template <class T>
inline int pixel_taps(const Geometry &g, T x, T y, Taps<T> &taps, T *mx, T *my) {
    taps.n = 0;
    if (g.interp == Interp::Bicubic) {
        const T ix = unnormalize(x, g.W, g.align, mx), iy = unnormalize(y, g.H, g.align, my);
        const T x0 = std::floor(ix), y0 = std::floor(iy);
        T xw[4], xs[4], yw[4], ys[4];
        cubic_weights(ix - x0, xw);
        cubic_weight_slopes(ix - x0, xs);
        cubic_weights(iy - y0, yw);
        cubic_weight_slopes(iy - y0, ys);
        T xp[4], unused;
        for (int i = 0; i < 4; ++i) xp[i] = pad_coordinate(x0 - 1 + static_cast<T>(i), g.W, g.padding, g.align, &unused);
        for (int j = 0; j < 4; ++j) {
            const T yp = pad_coordinate(y0 - 1 + static_cast<T>(j), g.H, g.padding, g.align, &unused);
            if (!in_range(yp, g.H)) continue;
            const int64_t row = static_cast<int64_t>(yp) * g.W;
            for (int i = 0; i < 4; ++i) {
                if (!in_range(xp[i], g.W)) continue;
                taps.add(row + static_cast<int64_t>(xp[i]), xw[i] * yw[j], xs[i] * yw[j], xw[i] * ys[j]);
            }
        }
        return taps.n;
    }
    const T ix = source_index(x, g.W, g.padding, g.align, mx), iy = source_index(y, g.H, g.padding, g.align, my);
    if (g.interp == Interp::Nearest) {
        const T xn = std::nearbyint(ix), yn = std::nearbyint(iy);  // default rounding: half to even
        if (in_range(xn, g.W) && in_range(yn, g.H))
            taps.add(static_cast<int64_t>(yn) * g.W + static_cast<int64_t>(xn), 1, 0, 0);
        return taps.n;
    }
    const T x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1, y1 = y0 + 1;
    const T dx1 = ix - x0, dx0 = x1 - ix, dy1 = iy - y0, dy0 = y1 - iy;
    const bool vx0 = in_range(x0, g.W), vx1 = in_range(x1, g.W), vy0 = in_range(y0, g.H), vy1 = in_range(y1, g.H);
    // Integers only for coordinates checked above.
    const int64_t r0 = vy0 ? static_cast<int64_t>(y0) * g.W : 0, r1 = vy1 ? static_cast<int64_t>(y1) * g.W : 0;
    const int64_t c0 = vx0 ? static_cast<int64_t>(x0) : 0, c1 = vx1 ? static_cast<int64_t>(x1) : 0;
    if (vy0 && vx0) taps.add(r0 + c0, dx0 * dy0, -dy0, -dx0);
    if (vy0 && vx1) taps.add(r0 + c1, dx1 * dy0, dy0, -dx1);
    if (vy1 && vx0) taps.add(r1 + c0, dx0 * dy1, -dy1, dx0);
    if (vy1 && vx1) taps.add(r1 + c1, dx1 * dy1, dy1, dx1);
    return taps.n;
}

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_TAPS_HPP_
