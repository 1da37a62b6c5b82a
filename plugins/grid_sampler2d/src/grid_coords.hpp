// Grid coordinate arithmetic of GridSampler2D and its backward (ops.md), written from PyTorch's
// conventions (GridSampler.h): unnormalize, clip (borders count as clipped: gradient 0 at exactly
// 0 and size-1), reflect (the gradient's sign flips per reflection), bicubic coefficients with
// A = -0.75, nearest = round half to even. Every function is NaN- and overflow-safe: nothing here
// converts to an integer; callers convert only coordinates they have checked to lie in [0, size-1].
#ifndef GRID_SAMPLER2D_GRID_COORDS_HPP_
#define GRID_SAMPLER2D_GRID_COORDS_HPP_

#include <cmath>
#include <cstdint>

#include "grid_types.hpp"

namespace gsamp {

// An infinite coordinate (a grid value of +-inf, or one like 3.4e38 that overflows) made NaN, so
// that the sample counts as out of bounds with every padding mode (ops.md); border clipping would
// move it onto the border, and bicubic's fraction inf - inf spread NaN over the border taps.
// c + c * 0: the same two operations (and NaN bits) as the vector spelling.
template <class T>
inline T infinite_as_nan(T c) {
    return c + c * static_cast<T>(0);
}

// Grid value in [-1, 1] -> pixel coordinate; *d = d(coordinate)/d(grid value).
template <class T>
inline T unnormalize(T x, int64_t size, bool align, T *d) {
    if (align) {
        *d = static_cast<T>(size - 1) / 2;
        return infinite_as_nan((x + 1) / 2 * static_cast<T>(size - 1));
    }
    *d = static_cast<T>(size) / 2;
    return infinite_as_nan(((x + 1) * static_cast<T>(size) - 1) / 2);
}

// Clip to [0, size-1]. At or beyond a border the gradient is 0 (PyTorch's convention, R4); NaN
// passes through unchanged with gradient 1 and is rejected later by the bounds checks.
template <class T>
inline T clip(T x, int64_t size, T *d) {
    if (x <= 0) {
        *d = 0;
        return 0;
    }
    const T hi = static_cast<T>(size - 1);
    if (x >= hi) {
        *d = 0;
        return hi;
    }
    *d = 1;
    return x;
}

// Reflect x about [twice_lo / 2, twice_hi / 2] until it lies inside; *d = +1 or -1 per the number
// of reflections. The parity is taken in floating point, so huge |x| never overflows an integer;
// an infinite x gives NaN.
template <class T>
inline T reflect(T x, T twice_lo, T twice_hi, T *d) {
    if (twice_lo == twice_hi) {
        *d = 0;
        return 0;
    }
    const T lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    x -= lo;
    T sign = 1;
    if (x < 0) {
        sign = -1;
        x = -x;
    }
    const T extra = std::fmod(x, span);
    const T flips = std::floor(x / span);
    if (std::fmod(flips, static_cast<T>(2)) == 0) {
        *d = sign;
        return extra + lo;
    }
    *d = -sign;
    return span - extra + lo;
}

// The padding mode applied to a pixel coordinate (bicubic applies it to every tap).
template <class T>
inline T pad_coordinate(T c, int64_t size, Padding p, bool align, T *d) {
    if (p == Padding::Border) return clip(c, size, d);
    if (p == Padding::Reflection) {
        T d1, d2;
        c = align ? reflect(c, static_cast<T>(0), static_cast<T>(2 * (size - 1)), &d1)
                  : reflect(c, static_cast<T>(-1), static_cast<T>(2 * size - 1), &d1);
        c = clip(c, size, &d2);
        *d = d1 * d2;
        return c;
    }
    *d = 1;
    return c;
}

// Grid value -> padded source coordinate (bilinear, nearest); *d = its derivative.
template <class T>
inline T source_index(T x, int64_t size, Padding p, bool align, T *d) {
    T d0, d1;
    const T c = pad_coordinate(unnormalize(x, size, align, &d0), size, p, align, &d1);
    *d = d0 * d1;
    return c;
}

// True when c is an index of [0, size): finite and in range (NaN fails).
template <class T>
inline bool in_range(T c, int64_t size) {
    return c >= 0 && c <= static_cast<T>(size - 1);
}

// Keys cubic convolution with A = -0.75: weights of the taps at -1, 0, 1, 2 for fraction t, and
// their derivatives d/dt.
template <class T>
inline void cubic_weights(T t, T w[4]) {
    constexpr T A = static_cast<T>(-0.75);
    auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };          // |x| <= 1
    auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };     // 1 < |x| < 2
    w[0] = far(t + 1);
    w[1] = near(t);
    w[2] = near(1 - t);
    w[3] = far(2 - t);
}
template <class T>
inline void cubic_weight_slopes(T t, T s[4]) {
    constexpr T A = static_cast<T>(-0.75);
    auto near = [&](T x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };  // d/dx of the |x| <= 1 piece
    auto far = [&](T x) { return (3 * A * x - 10 * A) * x + 8 * A; };      // d/dx of the 1 < |x| < 2 piece
    s[0] = far(t + 1);
    s[1] = near(t);
    s[2] = -near(1 - t);
    s[3] = -far(2 - t);
}

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_COORDS_HPP_
