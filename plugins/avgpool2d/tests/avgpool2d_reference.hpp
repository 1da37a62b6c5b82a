// Independent reference for AvgPool2d / AvgPool2dBackward, used only by the conformance tests.
//
// Written from shared/spec/ops.md ("Common pooling rules", "AvgPool2dBackward"), i.e. PyTorch's
// pooling_output_shape and avg_pool2d(_backward)_out_frame arithmetic, accumulating in double.
// It deliberately shares no code with the library: the rounding helpers below (FLOAT16, BF16, HF32,
// FLOAT) are written from the IEEE-754 definition (round to nearest, ties to even, subnormals kept,
// overflow to infinity, NaN stays NaN) on doubles, not from bit tricks on floats.
#ifndef AVGPOOL2D_TESTS_AVGPOOL2D_REFERENCE_HPP_
#define AVGPOOL2D_TESTS_AVGPOOL2D_REFERENCE_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace avgref {

// ---------------------------------------------------------------------------------------------
// Rounding to binary floating-point formats.
// ---------------------------------------------------------------------------------------------

// A binary format with `mant` stored mantissa bits, normal exponents [minExp, maxExp].
struct BinaryFormat {
    int mant;
    int minExp;
    int maxExp;
};
inline constexpr BinaryFormat kFloat16{10, -14, 15};
inline constexpr BinaryFormat kBFloat16{7, -126, 127};
inline constexpr BinaryFormat kFloat32{23, -126, 127};
inline constexpr BinaryFormat kHFloat32{11, -126, 127};  // FLOAT's exponent, 11 stored mantissa bits

inline double maxFinite(BinaryFormat f) { return std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.maxExp); }

// Round a double to the nearest value of format f (ties to even), keeping subnormals of f,
// overflowing to +-inf; NaN and inf pass through. The result is returned as a double (exact).
inline double roundTo(double x, BinaryFormat f) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
    int e = std::ilogb(x);                 // 2^e <= |x| < 2^(e+1)
    if (e < f.minExp) e = f.minExp;        // subnormal range: fixed quantum 2^(minExp - mant)
    const int q = e - f.mant;              // quantum exponent
    const double scaled = std::ldexp(x, -q);  // exact: power-of-two scaling inside double's range
    // Round half to even, independent of the current floating-point rounding mode.
    double fl = std::floor(scaled);
    const double frac = scaled - fl;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
    double r = std::ldexp(fl, q);
    if (std::fabs(r) > maxFinite(f)) r = std::copysign(std::numeric_limits<double>::infinity(), x);
    if (r == 0.0) r = std::copysign(0.0, x);
    return r;
}
inline double roundToF16(double x) { return roundTo(x, kFloat16); }
inline double roundToBF16(double x) { return roundTo(x, kBFloat16); }
inline double roundToF32(double x) { return roundTo(x, kFloat32); }
inline double roundToHF32(double x) { return roundTo(x, kHFloat32); }

// Distance to the next representable magnitude of the value v (assumed already in format f).
inline double ulpOf(double v, BinaryFormat f) {
    if (std::isnan(v) || std::isinf(v)) return std::numeric_limits<double>::infinity();
    int e = (v == 0.0) ? f.minExp : std::ilogb(v);
    if (e < f.minExp) e = f.minExp;
    return std::ldexp(1.0, e - f.mant);
}

// Encode a value of FLOAT16 (already rounded to it) as IEEE binary16 bits.
inline uint16_t f16Bits(double x) {
    x = roundToF16(x);
    const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7e00u);
    if (std::isinf(x)) return static_cast<uint16_t>(sign | 0x7c00u);
    const double a = std::fabs(x);
    if (a == 0.0) return sign;
    const int e = std::ilogb(a);
    if (e < -14) {  // subnormal: a = m * 2^-24
        const auto m = static_cast<uint16_t>(std::ldexp(a, 24));
        return static_cast<uint16_t>(sign | m);
    }
    const auto m = static_cast<uint16_t>(std::ldexp(a, -e) * 1024.0 - 1024.0);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>((e + 15) << 10) | m);
}
inline double f16Value(uint16_t h) {
    const double s = (h & 0x8000u) ? -1.0 : 1.0;
    const int e = (h >> 10) & 0x1f;
    const int m = h & 0x3ff;
    if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : s * std::numeric_limits<double>::infinity();
    if (e == 0) return s * std::ldexp(static_cast<double>(m), -24);
    return s * std::ldexp(1024.0 + m, e - 25);
}

// BF16 bits: the top half of the FLOAT bits of the (exactly representable) rounded value.
inline uint16_t bf16Bits(double x) {
    x = roundToBF16(x);
    if (std::isnan(x)) return static_cast<uint16_t>(std::signbit(x) ? 0xffc0u : 0x7fc0u);
    const float f = static_cast<float>(x);  // exact
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return static_cast<uint16_t>(u >> 16);
}
inline double bf16Value(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return static_cast<double>(f);
}

// ---------------------------------------------------------------------------------------------
// Pooling geometry and arithmetic.
// ---------------------------------------------------------------------------------------------

struct Pool2d {
    int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0;
    bool ceilMode = false;
    bool countIncludePad = true;
    int64_t divisorOverride = 0;
};

// What the cube unit sees: the gradOutput/self values and the scale 1/divisor are rounded to
// FLOAT16 or HF32 before the math (accumulation stays in higher precision).
enum class CubeRound { None, F16, HF32 };

inline double cubeRound(double v, CubeRound r) {
    switch (r) {
        case CubeRound::F16: return roundToF16(v);
        case CubeRound::HF32: return roundToHF32(v);
        default: return v;
    }
}

inline int64_t floorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// PyTorch pooling_output_shape (dilation 1).
inline int64_t pooledSize(int64_t in, int64_t k, int64_t s, int64_t p, bool ceilMode) {
    int64_t out = floorDiv(in + 2 * p - (k - 1) - 1 + (ceilMode ? s - 1 : 0), s) + 1;
    if (ceilMode && (out - 1) * s >= in + p) --out;
    return out;
}

// One window of output (oh, ow): the clipped input rows/cols and the divisor.
struct Window {
    int64_t h0, h1, w0, w1;  // clipped [h0, h1) x [w0, w1)
    int64_t divisor;
};
inline Window window(const Pool2d &p, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    int64_t hstart = oh * p.sH - p.pH;
    int64_t wstart = ow * p.sW - p.pW;
    int64_t hend = std::min(hstart + p.kH, H + p.pH);
    int64_t wend = std::min(wstart + p.kW, W + p.pW);
    const int64_t poolSize = (hend - hstart) * (wend - wstart);
    hstart = std::max<int64_t>(hstart, 0);
    wstart = std::max<int64_t>(wstart, 0);
    hend = std::min(hend, H);
    wend = std::min(wend, W);
    int64_t divisor;
    if (p.divisorOverride != 0)
        divisor = p.divisorOverride;
    else if (p.countIncludePad)
        divisor = poolSize;
    else
        divisor = (hend - hstart) * (wend - wstart);
    return {hstart, hend, wstart, wend, divisor};
}

// Backward: gradOutput [N, C, OH, OW] (row-major doubles) -> gradInput [N, C, H, W].
// absSum (optional) receives, per input element, the sum of |contribution| (for tolerances).
inline void avgPool2dBackward(const std::vector<double> &gradOut, int64_t N, int64_t C, int64_t H, int64_t W,
                              int64_t OH, int64_t OW, const Pool2d &p, CubeRound rnd,
                              std::vector<double> &gradIn, std::vector<double> *absSum = nullptr) {
    if (static_cast<int64_t>(gradOut.size()) != N * C * OH * OW) throw std::invalid_argument("gradOut size");
    gradIn.assign(static_cast<size_t>(N * C * H * W), 0.0);
    if (absSum) absSum->assign(gradIn.size(), 0.0);
    for (int64_t nc = 0; nc < N * C; ++nc) {
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                const Window win = window(p, H, W, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;  // wholly in padding: no gradient
                const double g = gradOut[static_cast<size_t>((nc * OH + oh) * OW + ow)];
                double term;
                if (rnd == CubeRound::None)
                    term = g / static_cast<double>(win.divisor);
                else
                    term = cubeRound(g, rnd) * cubeRound(1.0 / static_cast<double>(win.divisor), rnd);
                for (int64_t h = win.h0; h < win.h1; ++h)
                    for (int64_t w = win.w0; w < win.w1; ++w) {
                        const auto i = static_cast<size_t>((nc * H + h) * W + w);
                        gradIn[i] += term;
                        if (absSum) (*absSum)[i] += std::fabs(term);
                    }
            }
        }
    }
}

// Forward: self [N, C, H, W] -> out [N, C, OH, OW]; out = sum(window) / divisor.
inline void avgPool2dForward(const std::vector<double> &self, int64_t N, int64_t C, int64_t H, int64_t W,
                             int64_t OH, int64_t OW, const Pool2d &p, CubeRound rnd, std::vector<double> &out,
                             std::vector<double> *absSum = nullptr) {
    if (static_cast<int64_t>(self.size()) != N * C * H * W) throw std::invalid_argument("self size");
    out.assign(static_cast<size_t>(N * C * OH * OW), 0.0);
    if (absSum) absSum->assign(out.size(), 0.0);
    for (int64_t nc = 0; nc < N * C; ++nc) {
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                const Window win = window(p, H, W, oh, ow);
                const auto o = static_cast<size_t>((nc * OH + oh) * OW + ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
                // PyTorch: sum the window, then divide (so an all-cancelling window with a negative
                // divisor gives -0). With cube rounding: sum of rounded inputs times the rounded scale.
                double sum = 0.0, asum = 0.0;
                for (int64_t h = win.h0; h < win.h1; ++h)
                    for (int64_t w = win.w0; w < win.w1; ++w) {
                        const double x = cubeRound(self[static_cast<size_t>((nc * H + h) * W + w)], rnd);
                        sum += x;
                        asum += std::fabs(x);
                    }
                const double d = static_cast<double>(win.divisor);
                if (rnd == CubeRound::None) {
                    out[o] = sum / d;
                    if (absSum) (*absSum)[o] = asum / std::fabs(d);
                } else {
                    const double scale = cubeRound(1.0 / d, rnd);
                    out[o] = sum * scale;
                    if (absSum) (*absSum)[o] = asum * std::fabs(scale);
                }
            }
        }
    }
}

}  // namespace avgref

#endif  // AVGPOOL2D_TESTS_AVGPOOL2D_REFERENCE_HPP_
