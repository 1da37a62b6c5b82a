// Independent reference for MaxUnpool2d / MaxUnpool2dBackward, used only by the conformance tests.
//
// Written from shared/spec/ops.md: backward out[n][c][i] = gradOutput[n][c][indices[n][c][i]],
// forward out[n][c][indices[n][c][i]] = self[n][c][i] (zeros elsewhere, the last duplicate wins),
// with H and W flattened. Elements are raw bit patterns (uint64, zero-extended), so every dtype is
// compared bit for bit. The dtype cast of `out` follows the project's conversion semantics (the
// core's store node), re-derived here from their definitions on doubles, not from the library's
// bit tricks: FLOAT16 round to nearest even with subnormals and overflow to inf, NaN quieted with
// its top payload bits; integer -> FLOAT rounded once from the exact value (then FLOAT16 from
// FLOAT); integer narrowing by two's-complement
// truncation; BOOL is value != 0.
#ifndef MAX_UNPOOL2D_TESTS_UNPOOL_REFERENCE_HPP_
#define MAX_UNPOOL2D_TESTS_UNPOOL_REFERENCE_HPP_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "acl/acl.h"

namespace unpoolref {

using Bits = std::vector<uint64_t>;

// ---------------------------------------------------------------------------------------------
// Rounding a double to a binary format (round to nearest even, subnormals kept, overflow to inf).
// ---------------------------------------------------------------------------------------------
struct BinaryFormat {
    int mant, minExp, maxExp;
};
inline constexpr BinaryFormat kF16{10, -14, 15};
inline constexpr BinaryFormat kF32{23, -126, 127};

inline double roundTo(double x, BinaryFormat f) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
    int e = std::ilogb(x);
    if (e < f.minExp) e = f.minExp;
    const int q = e - f.mant;
    const double scaled = std::ldexp(x, -q);
    double fl = std::floor(scaled);
    const double frac = scaled - fl;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
    double r = std::ldexp(fl, q);
    const double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.maxExp);
    if (std::fabs(r) > maxFinite) r = std::copysign(std::numeric_limits<double>::infinity(), x);
    if (r == 0.0) r = std::copysign(0.0, x);
    return r;
}

// Encode a double already representable in FLOAT16 (or inf) as its bits; NaN handled by callers.
inline uint16_t f16BitsOf(double x) {
    const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    if (std::isinf(x)) return static_cast<uint16_t>(sign | 0x7c00u);
    const double a = std::fabs(x);
    if (a == 0.0) return sign;
    const int e = std::ilogb(a);
    if (e < -14) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));
    const auto m = static_cast<uint16_t>(std::ldexp(a, -e) * 1024.0 - 1024.0);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>((e + 15) << 10) | m);
}
inline double f16Value(uint16_t h) {
    const double s = (h & 0x8000u) ? -1.0 : 1.0;
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return m ? std::numeric_limits<double>::quiet_NaN() : s * std::numeric_limits<double>::infinity();
    if (e == 0) return s * std::ldexp(static_cast<double>(m), -24);
    return s * std::ldexp(1024.0 + m, e - 25);
}
inline double f32Value(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return static_cast<double>(f);
}
inline uint32_t f32BitsOf(double x) {  // x representable in FLOAT (or inf)
    const float f = static_cast<float>(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// ---------------------------------------------------------------------------------------------
// Dtypes
// ---------------------------------------------------------------------------------------------
inline bool isFloating(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_DOUBLE || dt == ACL_BF16; }
inline int bitsOf(aclDataType dt) {
    switch (dt) {
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 8;
        case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16: return 16;
        case ACL_FLOAT: case ACL_INT32: return 32;
        default: return 64;
    }
}

// CANN's (and PyTorch's) canCast: floating never to integral, only BOOL to BOOL.
inline bool canCast(aclDataType from, aclDataType to) {
    if (to == ACL_BOOL) return from == ACL_BOOL;
    return !(isFloating(from) && !isFloating(to));
}

// The signed integer value of an integral dtype's bits (BOOL: 0 or 1).
inline int64_t intValue(uint64_t bits, aclDataType dt) {
    switch (dt) {
        case ACL_BOOL: return bits != 0 ? 1 : 0;
        case ACL_UINT8: return static_cast<int64_t>(bits & 0xffu);
        case ACL_INT8: return static_cast<int8_t>(bits & 0xffu);
        case ACL_INT16: return static_cast<int16_t>(bits & 0xffffu);
        case ACL_INT32: return static_cast<int32_t>(bits & 0xffffffffu);
        default: return static_cast<int64_t>(bits);
    }
}

// An integer rounded to FLOAT (24 significant bits, to nearest even) from its exact value, in
// integers: a double holds only 53 bits, and rounding through it would round twice.
inline double intToFloat(int64_t v) {
    uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    int shift = 0;
    while ((mag >> shift) >= (uint64_t{1} << 24)) ++shift;
    if (shift > 0) {
        const uint64_t rem = mag & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
        uint64_t q = mag >> shift;
        if (rem > half || (rem == half && (q & 1) != 0)) ++q;
        mag = q << shift;  // (q may reach 2^24: still exact)
    }
    const double r = static_cast<double>(mag);  // at most 25 significant bits: exact
    return v < 0 ? -r : r;
}

// Cast one element's bits from `from` to `to` (canCast(from, to) must hold).
inline uint64_t castBits(uint64_t bits, aclDataType from, aclDataType to) {
    if (from == to) return bits;
    if (!canCast(from, to)) throw std::invalid_argument("not castable");
    if (to == ACL_BOOL) return bits != 0 ? 1 : 0;
    if (!isFloating(to)) {  // integral from integral/BOOL: truncate to the target width
        const auto v = static_cast<uint64_t>(intValue(bits, from));
        const int w = bitsOf(to);
        return w == 64 ? v : (v & ((uint64_t{1} << w) - 1));
    }
    // Floating target. NaN (only a FLOAT source can carry one to FLOAT16): quiet, keep the top payload.
    if (from == ACL_FLOAT && to == ACL_FLOAT16) {
        const auto u = static_cast<uint32_t>(bits);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            return ((u >> 16) & 0x8000u) | 0x7c00u | 0x200u | ((u >> 13) & 0x3ffu);
    }
    if (from == ACL_FLOAT16 && to == ACL_FLOAT) {  // widening keeps a NaN's sign and payload exactly
        const auto h = static_cast<uint32_t>(bits & 0xffffu);
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) return ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13);
    }
    double x;
    if (from == ACL_FLOAT) x = f32Value(static_cast<uint32_t>(bits));
    else if (from == ACL_FLOAT16) x = f16Value(static_cast<uint16_t>(bits));
    else x = intToFloat(intValue(bits, from));
    if (to == ACL_FLOAT) return f32BitsOf(x);
    return f16BitsOf(roundTo(x, kF16));
}

// ---------------------------------------------------------------------------------------------
// The operators, on row-major (N, C, ...) data with H*W / oH*oW planes.
// ---------------------------------------------------------------------------------------------
struct BadIndex {
    int64_t position;  // row-major over indices
    int64_t value;
};

// Backward: returns out's bits in gradOutput's dtype, or the first bad index.
inline std::optional<BadIndex> gather(const Bits &gradOut, const std::vector<int64_t> &indices, int64_t planes,
                                      int64_t plane, int64_t oPlane, Bits &out) {
    out.assign(static_cast<size_t>(planes * plane), 0);
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = 0; i < plane; ++i) {
            const int64_t q = indices[static_cast<size_t>(p * plane + i)];
            if (q < 0 || q >= oPlane) return BadIndex{p * plane + i, q};
            out[static_cast<size_t>(p * plane + i)] = gradOut[static_cast<size_t>(p * oPlane + q)];
        }
    return std::nullopt;
}

// Forward: out (planes x oPlane) zero, then scattered in order.
inline std::optional<BadIndex> scatter(const Bits &self, const std::vector<int64_t> &indices, int64_t planes,
                                       int64_t plane, int64_t oPlane, Bits &out) {
    out.assign(static_cast<size_t>(planes * oPlane), 0);
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = 0; i < plane; ++i) {
            const int64_t q = indices[static_cast<size_t>(p * plane + i)];
            if (q < 0 || q >= oPlane) return BadIndex{p * plane + i, q};
            out[static_cast<size_t>(p * oPlane + q)] = self[static_cast<size_t>(p * plane + i)];
        }
    return std::nullopt;
}

}  // namespace unpoolref

#endif  // MAX_UNPOOL2D_TESTS_UNPOOL_REFERENCE_HPP_
