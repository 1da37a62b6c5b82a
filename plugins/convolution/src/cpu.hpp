// Which vector spellings this CPU runs: the plugin's AVX-512 kernels are ACP_AVX512 functions
// (aclnn_cpu/isa.hpp), run after acp::cpu_has_avx512() said yes.
#ifndef CONVOLUTION_SRC_CPU_HPP_
#define CONVOLUTION_SRC_CPU_HPP_

#include "aclnn_cpu/isa.hpp"

#if ACP_X86
#include <cpuid.h>
#endif

namespace conv {

using acp::cpu_has_avx512;

// Whether this CPU's vendor is AMD ("AuthenticAMD"). Read once.
inline bool cpu_is_amd() {
#if ACP_X86
    static const bool amd = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        return __get_cpuid(0, &a, &b, &c, &d) != 0 && b == 0x68747541u && c == 0x444d4163u && d == 0x69746e65u;
    }();
    return amd;
#else
    return false;
#endif
}

// Whether this CPU runs a 512-bit vector as two 256-bit halves (AMD family 19h, Zen 3 and 4; only
// Zen 4 has AVX-512): there a 512-bit shuffle costs as much as two multiply-adds, and kernels whose
// 512-bit form shuffles for every multiply-add take a 256-bit form that loads instead. Read once.
inline bool cpu_splits_avx512() {
#if ACP_X86
    static const bool splits = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!cpu_is_amd() || __get_cpuid(1, &a, &b, &c, &d) == 0) return false;
        const unsigned family = ((a >> 8) & 0xfu) + ((a >> 20) & 0xffu);
        return family == 0x19u;
    }();
    return splits;
#else
    return false;
#endif
}

// Whether kernels that stream large tensors from memory should fetch ahead themselves: on an Intel
// Xeon one core streams 13-14 GB/s on its hardware prefetchers alone and about twice that when it
// asks a few KB ahead (VGG-19's first layer, one thread: the small-Cin gradients 30 % and 13 %
// faster so, gradBias 37 %). On AMD Zen the same prefetches measured 10-25 % slower than the
// hardware's own (session 34).
inline bool cpu_prefers_software_prefetch() { return !cpu_is_amd(); }

// Whether this CPU's vdpbf16ps (two BF16 products per lane) beats two FLOAT multiply-adds: AMD's
// (Zen 4 and 5). On an Intel Xeon with AMX (Sapphire Rapids family) one 512-bit vdpbf16ps issues
// every 2 cycles against two vfmadd231ps a cycle (measured, 24 independent chains), so there the
// depthwise BF16 gradInput runs its FLOAT multiply-adds on the widened values: 7-20 % less time.
inline bool cpu_prefers_bf16_dots() { return cpu_is_amd(); }

// Whether this CPU has AMX tiles for BF16 (Xeon Sapphire Rapids and later), where oneDNN runs its
// BF16 convolutions and matmuls on them. Read once.
inline bool cpu_has_amx_bf16() {
#if ACP_X86
    static const bool amx = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("amx-bf16") != 0;
    }();
    return amx;
#else
    return false;
#endif
}

}  // namespace conv

#endif  // CONVOLUTION_SRC_CPU_HPP_
