// Independent double-precision reference of GridSampler2D and GridSampler2DBackward for the tests,
// written from ops.md (and PyTorch's documented conventions), sharing no code with the kernels:
// plain loops over (n, output pixel, channel), corners named as in ops.md, reflection by folding
// the coordinate into one period.
#ifndef GRID_SAMPLER2D_TESTS_GRID_REFERENCE_HPP_
#define GRID_SAMPLER2D_TESTS_GRID_REFERENCE_HPP_

#include <cmath>
#include <cstdint>
#include <vector>

namespace gref {

struct Problem {
    int64_t N, C, H, W, Ho, Wo;
    int interp;   // 0 bilinear, 1 nearest, 2 bicubic
    int padding;  // 0 zeros, 1 border, 2 reflection
    bool align;
    int64_t inputCount() const { return N * C * H * W; }
    int64_t outputCount() const { return N * C * Ho * Wo; }
    int64_t gridCount() const { return N * Ho * Wo * 2; }
};

// Pixel coordinate of grid value v along an axis of `size` pixels, d = dcoord/dv.
inline double unnormalizeRef(double v, int64_t size, bool align, double &d) {
    if (align) {
        d = 0.5 * static_cast<double>(size - 1);
        return (v + 1.0) * d;
    }
    d = 0.5 * static_cast<double>(size);
    return ((v + 1.0) * static_cast<double>(size) - 1.0) * 0.5;
}

// Border: clamp into [0, size-1]; at or beyond either end the gradient is 0.
inline double clampRef(double c, int64_t size, double &d) {
    const double hi = static_cast<double>(size - 1);
    if (c > 0.0 && c < hi) {
        d = 1.0;
        return c;
    }
    d = 0.0;
    if (std::isnan(c)) {  // NaN stays NaN (out of bounds later)
        d = 1.0;
        return c;
    }
    return c <= 0.0 ? 0.0 : hi;
}

// Reflection about [lo, hi]: fold into one period of length 2 * (hi - lo), mirror the upper half.
inline double foldRef(double c, double lo, double hi, double &d) {
    const double span = hi - lo;
    if (span <= 0.0) {
        d = 0.0;
        return 0.0;
    }
    double t = c - lo, sign = 1.0;
    if (t < 0.0) {
        t = -t;
        sign = -1.0;
    }
    double r = std::fmod(t, 2.0 * span);
    if (r > span) {
        r = 2.0 * span - r;
        sign = -sign;
    }
    d = sign;
    return lo + r;
}

inline double padRef(double c, int64_t size, int padding, bool align, double &d) {
    if (padding == 0) {
        d = 1.0;
        return c;
    }
    if (padding == 1) return clampRef(c, size, d);
    double d1, d2;
    const double lo = align ? 0.0 : -0.5, hi = align ? static_cast<double>(size - 1) : static_cast<double>(size) - 0.5;
    const double r = foldRef(c, lo, hi, d1);
    const double out = clampRef(r, size, d2);
    d = d1 * d2;
    return out;
}

inline bool insideRef(double c, int64_t size) { return c >= 0.0 && c <= static_cast<double>(size - 1); }

// Keys' cubic kernel, A = -0.75, as a function of the distance s, and its derivative.
inline double keys(double s) {
    const double A = -0.75, a = std::fabs(s);
    if (a <= 1.0) return (A + 2.0) * a * a * a - (A + 3.0) * a * a + 1.0;
    if (a < 2.0) return A * a * a * a - 5.0 * A * a * a + 8.0 * A * a - 4.0 * A;
    return 0.0;
}
inline double keysSlope(double s) {  // d keys(s) / ds
    const double A = -0.75, a = std::fabs(s), sg = s < 0.0 ? -1.0 : 1.0;
    if (a <= 1.0) return sg * (3.0 * (A + 2.0) * a * a - 2.0 * (A + 3.0) * a);
    if (a < 2.0) return sg * (3.0 * A * a * a - 10.0 * A * a + 8.0 * A);
    return 0.0;
}

struct Sample {  // one tap of one output pixel
    int64_t y, x;
    double w, dwdx, dwdy;  // weight and its derivatives w.r.t. the source coordinates
};

// The taps of grid point (gx, gy); mx, my = d(source coord)/d(grid value) for the gradient.
inline std::vector<Sample> samplesOf(const Problem &p, double gx, double gy, double &mx, double &my) {
    std::vector<Sample> out;
    if (p.interp == 2) {  // bicubic: raw coordinate, padding per tap
        const double ix = unnormalizeRef(gx, p.W, p.align, mx), iy = unnormalizeRef(gy, p.H, p.align, my);
        const double fx = std::floor(ix), fy = std::floor(iy);
        for (int j = -1; j <= 2; ++j)
            for (int i = -1; i <= 2; ++i) {
                double unused;
                const double tx = padRef(fx + i, p.W, p.padding, p.align, unused);
                const double ty = padRef(fy + j, p.H, p.padding, p.align, unused);
                if (!insideRef(tx, p.W) || !insideRef(ty, p.H)) continue;
                const double sx = ix - (fx + i), sy = iy - (fy + j);
                out.push_back({static_cast<int64_t>(ty), static_cast<int64_t>(tx), keys(sx) * keys(sy),
                               keysSlope(sx) * keys(sy), keys(sx) * keysSlope(sy)});
            }
        return out;
    }
    double d0x, d0y, dpx, dpy;
    const double ix = padRef(unnormalizeRef(gx, p.W, p.align, d0x), p.W, p.padding, p.align, dpx);
    const double iy = padRef(unnormalizeRef(gy, p.H, p.align, d0y), p.H, p.padding, p.align, dpy);
    mx = d0x * dpx;
    my = d0y * dpy;
    if (p.interp == 1) {
        const double rx = std::nearbyint(ix), ry = std::nearbyint(iy);
        if (insideRef(rx, p.W) && insideRef(ry, p.H))
            out.push_back({static_cast<int64_t>(ry), static_cast<int64_t>(rx), 1.0, 0.0, 0.0});
        return out;
    }
    const double xw = std::floor(ix), yn = std::floor(iy), xe = xw + 1.0, ys = yn + 1.0;
    // corners nw, ne, sw, se with ops.md's weights
    const double nw = (xe - ix) * (ys - iy), ne = (ix - xw) * (ys - iy), sw = (xe - ix) * (iy - yn), se = (ix - xw) * (iy - yn);
    const struct {
        double x, y, w, dx, dy;
    } c[4] = {{xw, yn, nw, -(ys - iy), -(xe - ix)},
              {xe, yn, ne, (ys - iy), -(ix - xw)},
              {xw, ys, sw, -(iy - yn), (xe - ix)},
              {xe, ys, se, (iy - yn), (ix - xw)}};
    for (const auto &k : c)
        if (insideRef(k.x, p.W) && insideRef(k.y, p.H))
            out.push_back({static_cast<int64_t>(k.y), static_cast<int64_t>(k.x), k.w, k.dx, k.dy});
    return out;
}

inline std::vector<double> forward(const Problem &p, const std::vector<double> &input, const std::vector<double> &grid) {
    std::vector<double> out(static_cast<size_t>(p.outputCount()), 0.0);
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t oy = 0; oy < p.Ho; ++oy)
            for (int64_t ox = 0; ox < p.Wo; ++ox) {
                const int64_t gi = ((n * p.Ho + oy) * p.Wo + ox) * 2;
                double mx, my;
                const auto taps = samplesOf(p, grid[gi], grid[gi + 1], mx, my);
                for (int64_t c = 0; c < p.C; ++c) {
                    double s = 0.0;
                    for (const auto &t : taps) s += t.w * input[((n * p.C + c) * p.H + t.y) * p.W + t.x];
                    out[((n * p.C + c) * p.Ho + oy) * p.Wo + ox] = s;
                }
            }
    return out;
}

struct Grads {
    std::vector<double> input, grid;
};

inline Grads backward(const Problem &p, const std::vector<double> &gradOutput, const std::vector<double> &input,
                      const std::vector<double> &grid) {
    Grads g{std::vector<double>(static_cast<size_t>(p.inputCount()), 0.0),
            std::vector<double>(static_cast<size_t>(p.gridCount()), 0.0)};
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t oy = 0; oy < p.Ho; ++oy)
            for (int64_t ox = 0; ox < p.Wo; ++ox) {
                const int64_t gi = ((n * p.Ho + oy) * p.Wo + ox) * 2;
                double mx, my;
                const auto taps = samplesOf(p, grid[gi], grid[gi + 1], mx, my);
                double sx = 0.0, sy = 0.0;
                for (int64_t c = 0; c < p.C; ++c) {
                    const double go = gradOutput[((n * p.C + c) * p.Ho + oy) * p.Wo + ox];
                    for (const auto &t : taps) {
                        const int64_t ii = ((n * p.C + c) * p.H + t.y) * p.W + t.x;
                        g.input[ii] += t.w * go;
                        sx += t.dwdx * input[ii] * go;
                        sy += t.dwdy * input[ii] * go;
                    }
                }
                if (p.interp != 1) {
                    g.grid[gi] = mx * sx;
                    g.grid[gi + 1] = my * sy;
                }
            }
    return g;
}

}  // namespace gref

#endif  // GRID_SAMPLER2D_TESTS_GRID_REFERENCE_HPP_
