// Shared pieces of the depthwise kernels' white-box tests (test_dw_kernels.cpp, test_dw_direct.cpp):
// operands in the pass dtype with their exact values, results read back as doubles, the canary
// check of unselected outputs, and testing.md's comparison against the double reference.
#ifndef CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_
#define CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "conv_types.hpp"

namespace dwtest {

using conv::Dt;

// Operands in the pass dtype: the raw bytes and their exact values.
struct Operand {
    std::vector<uint8_t> bytes;
    std::vector<double> value;
};
inline Operand makeOperand(int64_t n, Dt dt, acltest::Rng &rng, bool integers) {
    Operand o;
    o.bytes.resize(static_cast<size_t>(n) * (dt == Dt::F32 ? 4 : 2));
    o.value.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const float f = integers ? static_cast<float>(rng.integer(-4, 4)) : static_cast<float>(rng.uniform(-1.0, 1.0));
        if (dt == Dt::F32) {
            std::memcpy(o.bytes.data() + i * 4, &f, 4);
            o.value[static_cast<size_t>(i)] = f;
        } else {
            const uint16_t h = acp::float_to_bf16(f);
            std::memcpy(o.bytes.data() + i * 2, &h, 2);
            o.value[static_cast<size_t>(i)] = acp::bf16_to_float(h);
        }
    }
    return o;
}

inline constexpr uint8_t kCanary = 0xA5;

inline std::vector<double> floats(const std::vector<uint8_t> &b, bool bf16) {
    std::vector<double> v(b.size() / (bf16 ? 2 : 4));
    for (size_t i = 0; i < v.size(); ++i) {
        if (bf16) {
            uint16_t h;
            std::memcpy(&h, b.data() + 2 * i, 2);
            v[i] = acp::bf16_to_float(h);
        } else {
            float f;
            std::memcpy(&f, b.data() + 4 * i, 4);
            v[i] = f;
        }
    }
    return v;
}

inline bool allCanary(const std::vector<uint8_t> &b) {
    for (const uint8_t x : b)
        if (x != kCanary) return false;
    return true;
}

// Exact: the reference rounded once to the output dtype. Otherwise testing.md's tolerances: FLOAT
// 1e-5 + 1e-4|ref|, BF16 results 8e-3 relative (plus 8e-3 absolute for cancellations). A non-finite
// reference value wants the same infinity, or a NaN.
inline ::testing::AssertionResult matches(const std::vector<double> &got, const std::vector<double> &ref, bool exact, bool bf16,
                                   const std::string &what) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << ref.size();
    for (size_t i = 0; i < got.size(); ++i) {
        double want = ref[i];
        if (exact) want = bf16 ? acp::bf16_to_float(acp::float_to_bf16(static_cast<float>(want))) : static_cast<float>(want);
        if (!std::isfinite(want)) {  // an infinity or NaN of the reference: the same class
            if (std::isnan(want) ? std::isnan(got[i]) : got[i] == want) continue;
            return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", expected " << want;
        }
        const double tol = exact ? 0.0 : bf16 ? 8e-3 + 8e-3 * std::fabs(want) : 1e-5 + 1e-4 * std::fabs(want);
        if (!(std::fabs(got[i] - want) <= tol))
            return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", expected " << want;
    }
    return ::testing::AssertionSuccess();
}

inline bool hasAvx512() { return __builtin_cpu_supports("avx512f"); }

}  // namespace dwtest

#endif  // CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_
