// aclnn-cpu: the one implementation of FLOAT16 / BF16 / HF32 conversion and rounding.
// Header-only so that the core's conversion nodes and plugin kernels round identically.
// All conversions are round-to-nearest-even; FLOAT16 keeps subnormals and overflows to inf;
// NaN stays NaN (quieted). Vectorized kernels must reproduce these bits exactly.
#ifndef ACLNN_CPU_NUMERIC_HPP_
#define ACLNN_CPU_NUMERIC_HPP_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "aclnn_cpu/plugin_abi.h"

namespace acp {

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// a + b keeping a's NaN (quieted) where both are NaN: x86's first-source rule, pinned down. A sum
// taken in a defined order (acc = add_ordered(acc, x)) then ends with its earliest NaN's payload on
// every path; a plain `+` lets the compiler swap the operands, and with them the payload. The
// vector spellings (numeric_avx512.hpp) follow the same rule.
inline float add_ordered(float a, float b) {
    const float s = a + b;
    return a != a ? a + a : s;  // (only b's NaN, or inf - inf's, can reach s when a is not NaN)
}
inline double add_ordered(double a, double b) {
    const double s = a + b;
    return a != a ? a + a : s;
}

// a * b + c rounded once, keeping the first NaN of a, b, c in that order (quieted) where one is
// NaN: x86's FMA rule (multiplicand, multiplier, addend), pinned down. The intrinsics and std::fma
// leave the compiler and the C library free to swap the factors (glibc's fmaf keeps b's NaN first),
// so a kernel spelled twice would end with different payloads where two NaNs meet. The vector
// spellings (numeric_avx512.hpp) follow the same rule. inf * 0 alone: the default NaN.
inline float fma_ordered(float a, float b, float c) {
    const float r = std::fma(a, b, c);
    if (r == r) return r;
    if (a != a) return a + a;
    if (b != b) return b + b;
    return c != c ? c + c : r;
}

inline uint16_t float_to_half(float f) {
    const uint32_t x = bits_of(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)  // inf or NaN (NaN keeps its top payload bits, quieted)
        return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u) {                                               // below 2^-14: subnormal or zero
        if (ax < 0x33000000u) return static_cast<uint16_t>(sign);         // <= 2^-25 rounds to zero
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return static_cast<uint16_t>(sign | r);
    }
    const uint32_t r = ax - 0x38000000u;  // rebias exponent 127 -> 15
    uint32_t h = r >> 13;
    const uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    int32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f) return float_of(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return float_of(sign);
        e = 1;
        while (!(m & 0x400u)) {
            m <<= 1;
            --e;
        }
        m &= 0x3ffu;
    }
    return float_of(sign | (static_cast<uint32_t>(e + 112) << 23) | (m << 13));
}

inline uint16_t float_to_bf16(float f) {
    const uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

// HF32: FLOAT's sign and exponent, 11 stored mantissa bits; round to nearest even (trans mode 0).
inline float round_to_hf32(float f) {
    const uint32_t x = bits_of(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f;  // inf / NaN unchanged
    const uint32_t r = (x + 0x7ffu + ((x >> 12) & 1u)) & ~0xfffu;
    return float_of(r);
}
inline float round_to_fp16(float f) { return half_to_float(float_to_half(f)); }
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

// Round a FLOAT value to what the cube unit sees under `precision` (acp_precision).
inline float round_to_precision(float f, int32_t precision) {
    switch (precision) {
        case ACP_PREC_FP16: return round_to_fp16(f);
        case ACP_PREC_HF32: return round_to_hf32(f);
        case ACP_PREC_BF16: return round_to_bf16(f);
        default: return f;
    }
}

}  // namespace acp

#endif  // ACLNN_CPU_NUMERIC_HPP_
