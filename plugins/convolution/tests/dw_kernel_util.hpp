// Shared pieces of the depthwise kernels' white-box tests (test_dw_kernels.cpp, test_dw_direct.cpp):
// operands in the pass dtype with their exact values, results read back as doubles, the canary
// check of unselected outputs, and testing.md's comparison against the double reference.
#ifndef CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_
#define CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/slot_pool.hpp"
#include "conv_types.hpp"
#include "depthwise_blocked.hpp"

namespace dwtest {

using conv::Dt;

// Operands in the pass dtype: the raw bytes and their exact values.
struct Operand {
    std::vector<uint8_t> bytes;
    std::vector<double> value;
};
// Element i = v stored in dt (BF16: rounded), its value the stored one.
inline void setElement(Operand &o, Dt dt, int64_t i, double v) {
    const auto f = static_cast<float>(v);
    if (dt == Dt::F32) {
        std::memcpy(o.bytes.data() + i * 4, &f, 4);
        o.value[static_cast<size_t>(i)] = f;
    } else {
        const uint16_t h = acp::float_to_bf16(f);
        std::memcpy(o.bytes.data() + i * 2, &h, 2);
        o.value[static_cast<size_t>(i)] = acp::bf16_to_float(h);
    }
}
inline Operand makeOperand(int64_t n, Dt dt, acltest::Rng &rng, bool integers) {
    Operand o;
    o.bytes.resize(static_cast<size_t>(n) * (dt == Dt::F32 ? 4 : 2));
    o.value.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        setElement(o, dt, i, integers ? static_cast<float>(rng.integer(-4, 4)) : static_cast<float>(rng.uniform(-1.0, 1.0)));
    return o;
}

// Roughly one element in `every` replaced by a special value: NaNs of different signs and payloads
// (BF16 keeps the top 7 payload bits), infinities and zeros (inf * 0 makes the default NaN). Where
// two NaNs meet, which one survives is the kernels' operand order (acp::fma_ordered).
inline void sprinkleSpecials(Operand &o, Dt dt, acltest::Rng &rng, int64_t every) {
    static const uint32_t kSpecial[] = {0x7fc10000u, 0xffe20000u, 0x7fa30000u, 0xffc40000u, 0x7f850000u,
                                        0x7f800000u, 0xff800000u, 0u,          0x80000000u};
    const int64_t n = static_cast<int64_t>(o.value.size());
    for (int64_t i = 0; i < n; ++i) {
        if (rng.integer(0, every - 1) != 0) continue;
        const uint32_t b = kSpecial[rng.integer(0, 8)];
        const float f = acp::float_of(b);
        if (dt == Dt::F32) {
            std::memcpy(o.bytes.data() + i * 4, &b, 4);
        } else {
            const auto h = static_cast<uint16_t>(b >> 16);
            std::memcpy(o.bytes.data() + i * 2, &h, 2);
        }
        o.value[static_cast<size_t>(i)] = f;
    }
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

// A run's two results as bytes (unselected: canary bytes).
struct Out {
    std::vector<uint8_t> dx, dw;
};

// One run of a depthwise kernel (conv::DwBlocked or conv::DwDirect) on io's tensors, on `threads`
// threads. scratchFill: the scratch bytes before the run (0xff: NaN floats, so that a read of
// unwritten scratch shows).
template <class Kernel>
void runIo(const Kernel &k, const conv::DwBlocked::Io &io, bool avx, int threads, uint8_t scratchFill) {
    acp::SlotPool slots;
    slots.resize(threads);
    std::vector<uint8_t> scratch(k.slot_bytes() * static_cast<uint64_t>(threads) + k.partial_bytes() + 64, scratchFill);
    auto *aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    // TBB caps workers at the core count: lift the cap so that 3 threads are 3 threads
    const tbb::global_control allow(tbb::global_control::max_allowed_parallelism, 4);
    tbb::task_arena arena(threads);
    arena.execute([&] { k.run(io, aligned, slots, avx); });
}

// One run over shape s with the outputs of `mask` (bit 0 dx, 1 dw); unselected outputs stay canary bytes.
template <class Kernel>
Out runPass(const Kernel &k, const conv::DwShape &s, bool dxBf16, const Operand &dy, const Operand &x, const Operand &w,
            int mask, bool avx, int threads, uint8_t scratchFill) {
    Out o;
    o.dx.assign(static_cast<size_t>(s.N * s.C * s.H * s.W) * (dxBf16 ? 2 : 4), kCanary);
    o.dw.assign(static_cast<size_t>(s.C * s.kh * s.kw) * 4, kCanary);
    conv::DwBlocked::Io io;
    io.dy = dy.bytes.data(), io.x = x.bytes.data(), io.w = w.bytes.data();
    io.dx = mask & 1 ? o.dx.data() : nullptr;
    io.dx_bf16 = dxBf16;
    io.dw = mask & 2 ? reinterpret_cast<float *>(o.dw.data()) : nullptr;
    runIo(k, io, avx, threads, scratchFill);
    return o;
}

inline bool hasAvx512() { return acp::cpu_has_avx512(); }

}  // namespace dwtest

#endif  // CONVOLUTION_TESTS_DW_KERNEL_UTIL_HPP_
