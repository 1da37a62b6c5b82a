// Independent reference for MaxPool2dWithMask / MaxPool2dWithMaskBackward, used only by the tests.
// Written from shared/spec/ops.md and PyTorch 1.13's CPU max_pool2d kernels, in double, sharing no
// code with the plugin: the FLOAT16 / BF16 roundings are written from the IEEE definition on doubles.
#ifndef MAX_POOL2D_WITH_MASK_TESTS_MPOOL_REFERENCE_HPP_
#define MAX_POOL2D_WITH_MASK_TESTS_MPOOL_REFERENCE_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace mref {

// Round to a binary format with `mant` stored mantissa bits and minimum normal exponent minExp
// (ties to even, subnormals kept, overflow to inf beyond maxExp, NaN / inf unchanged).
inline double roundTo(double x, int mant, int minExp, int maxExp) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
    const int e = std::max(std::ilogb(x), minExp);
    const double scaled = std::ldexp(x, mant - e);
    double fl = std::floor(scaled);
    const double frac = scaled - fl;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
    double r = std::ldexp(fl, e - mant);
    const double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -mant), maxExp);
    if (std::fabs(r) > maxFinite) r = std::copysign(std::numeric_limits<double>::infinity(), x);
    return r == 0.0 ? std::copysign(0.0, x) : r;
}
inline double toF16(double x) { return roundTo(x, 10, -14, 15); }
inline double toBF16(double x) { return roundTo(x, 7, -126, 127); }
inline double toF32(double x) { return roundTo(x, 23, -126, 127); }

enum class Dt { F32, F16, BF16 };
inline double roundDt(double x, Dt dt) { return dt == Dt::F16 ? toF16(x) : dt == Dt::BF16 ? toBF16(x) : toF32(x); }

struct Pool {
    int64_t N, C, H, W, kH, kW, sH, sW, pH, pW;
    bool ceil;
    static int64_t out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil) {
        const int64_t num = in + 2 * p - (k - 1) - 1 + (ceil ? s - 1 : 0);
        int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
        if (ceil && (o - 1) * s >= in + p) --o;
        return o;
    }
    int64_t Ho() const { return out(H, kH, sH, pH, ceil); }
    int64_t Wo() const { return out(W, kW, sW, pW, ceil); }
    int64_t K() const { return kH * kW; }
    int64_t maskRow() const { return ((Ho() * Wo() + 15) / 16 + 1) * 32; }
    int64_t maskBytes() const { return N * C * K() * maskRow(); }
};

// Forward: per output, the window element PyTorch's CPU kernel picks (start at -inf with the first
// element of the clipped window; take an element that is greater or NaN). fp16: FLOAT computed as
// FLOAT16 (atlas-training). argmax = ih * W + iw within the plane; k = kernel position.
struct Forward {
    std::vector<double> out;
    std::vector<int64_t> argmax, k;
};
inline Forward forward(const Pool &p, const std::vector<double> &x, Dt dt, bool fp16) {
    Forward f;
    const int64_t Ho = p.Ho(), Wo = p.Wo();
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t oh = 0; oh < Ho; ++oh)
            for (int64_t ow = 0; ow < Wo; ++ow) {
                const int64_t hs = oh * p.sH - p.pH, ws = ow * p.sW - p.pW;
                const int64_t h0 = std::max<int64_t>(hs, 0), h1 = std::min(hs + p.kH, p.H);
                const int64_t w0 = std::max<int64_t>(ws, 0), w1 = std::min(ws + p.kW, p.W);
                double best = -std::numeric_limits<double>::infinity();
                int64_t bh = h0, bw = w0;
                for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w) {
                        double v = x[static_cast<size_t>((pl * p.H + h) * p.W + w)];
                        if (fp16) v = toF16(v);
                        if (v > best || std::isnan(v)) best = v, bh = h, bw = w;
                    }
                f.out.push_back(roundDt(best, dt));
                f.argmax.push_back(bh * p.W + bw);
                f.k.push_back((bh - hs) * p.kW + (bw - ws));
            }
    return f;
}

// Backward from a list of (plane, output j, flat input index) routes: double sums, rounded once to
// the dtype (fp16: gradOutput and the result through FLOAT16).
struct Route {
    int64_t plane, j, flat;
};
inline std::vector<double> backward(const Pool &p, const std::vector<double> &go, const std::vector<Route> &routes,
                                    Dt dt, bool fp16) {
    std::vector<double> gi(static_cast<size_t>(p.N * p.C * p.H * p.W), 0.0);
    const int64_t HoWo = p.Ho() * p.Wo();
    for (const Route &r : routes) {
        double g = go[static_cast<size_t>(r.plane * HoWo + r.j)];
        if (fp16) g = toF16(g);
        gi[static_cast<size_t>(r.plane * p.H * p.W + r.flat)] += g;
    }
    for (double &v : gi) v = fp16 ? toF16(v) : roundDt(v, dt);
    return gi;
}

// Routes of an int32 mask (index -1 skipped; the caller passes valid indices only).
inline std::vector<Route> routesInt32(const Pool &p, const std::vector<int64_t> &idx) {
    std::vector<Route> r;
    const int64_t HoWo = p.Ho() * p.Wo();
    for (size_t i = 0; i < idx.size(); ++i)
        if (idx[i] != -1) r.push_back({static_cast<int64_t>(i) / HoWo, static_cast<int64_t>(i) % HoWo, idx[i]});
    return r;
}

// Routes of a bit mask given as (plane, j, k) triples: padding positions skipped (ops.md).
struct Bit {
    int64_t plane, j, k;
};
inline std::vector<Route> routesBits(const Pool &p, const std::vector<Bit> &bits) {
    std::vector<Route> r;
    const int64_t Wo = p.Wo();
    for (const Bit &b : bits) {
        const int64_t oh = b.j / Wo, ow = b.j % Wo;
        const int64_t ih = oh * p.sH - p.pH + b.k / p.kW, iw = ow * p.sW - p.pW + b.k % p.kW;
        if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
        r.push_back({b.plane, b.j, ih * p.W + iw});
    }
    return r;
}

// Mask bytes in the two layouts of ops.md.
inline std::vector<uint8_t> maskInt32(const Pool &p, const std::vector<int64_t> &idx) {
    std::vector<uint8_t> m(static_cast<size_t>(p.maskBytes()), 0);
    for (size_t i = 0; i < idx.size(); ++i) {
        const auto v = static_cast<int32_t>(idx[i]);
        std::memcpy(m.data() + 4 * i, &v, 4);
    }
    return m;
}
inline std::vector<uint8_t> maskBits(const Pool &p, const std::vector<Bit> &bits) {
    std::vector<uint8_t> m(static_cast<size_t>(p.maskBytes()), 0);
    for (const Bit &b : bits) {
        const int64_t row = (b.plane * p.K() + b.k) * p.maskRow();
        m[static_cast<size_t>(row + b.j / 8)] |= static_cast<uint8_t>(1u << (b.j % 8));
    }
    return m;
}

}  // namespace mref

#endif  // MAX_POOL2D_WITH_MASK_TESTS_MPOOL_REFERENCE_HPP_
