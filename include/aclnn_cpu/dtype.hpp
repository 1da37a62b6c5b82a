// aclnn-cpu: names and sizes of aclDataType / aclFormat values, shared by the core, the CLI,
// the code generator and plugins (header-only, nothing crosses the plugin ABI).
#ifndef ACLNN_CPU_DTYPE_HPP_
#define ACLNN_CPU_DTYPE_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace acp {

// aclDataType values by name, for code that tests a descriptor's dtype (plugins see aclDataType
// only as the int32_t of acp_tensor_desc).
namespace dt {
inline constexpr int32_t kFloat = 0, kFloat16 = 1, kInt8 = 2, kInt32 = 3, kUint8 = 4, kInt16 = 6, kUint16 = 7,
                         kUint32 = 8, kInt64 = 9, kUint64 = 10, kDouble = 11, kBool = 12, kComplex64 = 16,
                         kComplex128 = 17, kBf16 = 27, kComplex32 = 33;
}  // namespace dt

struct NamedValue {
    std::string_view name;
    int32_t value;
};

// Names as CANN documents them (BF16 is spelled BFLOAT16 in messages, BF16 accepted when parsing).
inline constexpr NamedValue kDtypes[] = {
    {"FLOAT", 0},  {"FLOAT16", 1},    {"INT8", 2},       {"INT32", 3},     {"UINT8", 4},  {"INT16", 6},
    {"UINT16", 7}, {"UINT32", 8},     {"INT64", 9},      {"UINT64", 10},   {"DOUBLE", 11}, {"BOOL", 12},
    {"STRING", 13}, {"COMPLEX64", 16}, {"COMPLEX128", 17}, {"BFLOAT16", 27}, {"INT4", 29},  {"UINT1", 30},
    {"COMPLEX32", 33}, {"HIFLOAT8", 34}, {"FLOAT8_E5M2", 35}, {"FLOAT8_E4M3FN", 36}, {"FLOAT8_E8M0", 37},
    {"FLOAT6_E3M2", 38}, {"FLOAT6_E2M3", 39}, {"FLOAT4_E2M1", 40}, {"FLOAT4_E1M2", 41}};

inline constexpr NamedValue kFormats[] = {
    {"NCHW", 0},   {"NHWC", 1},   {"ND", 2},          {"NC1HWC0", 3}, {"FRACTAL_Z", 4},
    {"NC1HWC0_C04", 12}, {"HWCN", 16}, {"NDHWC", 27}, {"FRACTAL_NZ", 29}, {"NCDHW", 30},
    {"NDC1HWC0", 32}, {"FRACTAL_Z_3D", 33}, {"NC", 35}, {"NCL", 47}, {"FRACTAL_NZ_C0_16", 50},
    {"FRACTAL_NZ_C0_32", 51}};

inline std::string_view dtype_name(int32_t v) {
    for (const auto &d : kDtypes)
        if (d.value == v) return d.name;
    return "UNDEFINED";
}
inline std::string_view format_name(int32_t v) {
    for (const auto &f : kFormats)
        if (f.value == v) return f.name;
    return "UNDEFINED";
}
inline std::optional<int32_t> parse_dtype(std::string_view s) {
    if (s == "BF16") return dt::kBf16;
    if (s == "FLOAT32") return dt::kFloat;
    for (const auto &d : kDtypes)
        if (d.name == s) return d.value;
    return std::nullopt;
}
inline std::optional<int32_t> parse_format(std::string_view s) {
    for (const auto &f : kFormats)
        if (f.name == s) return f.value;
    return std::nullopt;
}

// The rank a layout implies (NCL 3, NCHW/NHWC/HWCN 4, NCDHW/NDHWC 5, NC 2); 0 for ND and the rest.
inline int format_rank(int32_t f) {
    switch (f) {
        case 47: return 3;
        case 0: case 1: case 16: return 4;
        case 30: case 27: return 5;
        case 35: return 2;
        default: return 0;
    }
}

// CANN's CanCast (PyTorch's canCast): no complex -> real, no floating -> integral, nothing but BOOL
// -> BOOL. The core enforces a manifest's `castable` rules with it.
inline bool can_cast(int32_t from, int32_t to) {
    auto complex = [](int32_t d) { return d == dt::kComplex64 || d == dt::kComplex128 || d == dt::kComplex32; };
    auto floating = [](int32_t d) { return d == dt::kFloat || d == dt::kFloat16 || d == dt::kDouble || d == dt::kBf16; };
    if (complex(from) && !complex(to)) return false;
    if (floating(from) && !floating(to) && !complex(to)) return false;
    if (to == dt::kBool) return from == dt::kBool;
    return true;
}

// Bytes per element; 0 for types without a byte size (STRING, INT4, UINT1, the 6- and 4-bit floats)
// or unknown values.
inline size_t dtype_size(int32_t v) {
    switch (v) {
        case dt::kInt8: case dt::kUint8: case dt::kBool: return 1;
        case 34: case 35: case 36: case 37: return 1;  // the 8-bit floats (HIFLOAT8, FLOAT8_*)
        case dt::kFloat16: case dt::kInt16: case dt::kUint16: case dt::kBf16: return 2;
        case dt::kFloat: case dt::kInt32: case dt::kUint32: case dt::kComplex32: return 4;
        case dt::kInt64: case dt::kUint64: case dt::kDouble: case dt::kComplex64: return 8;
        case dt::kComplex128: return 16;
        default: return 0;
    }
}

}  // namespace acp

#endif  // ACLNN_CPU_DTYPE_HPP_
