// aclnn-cpu plugin SDK: the one switch for a plugin's AVX-512 code.
//   ACP_X86     1 on x86-64 with GCC or Clang: the AVX-512 spellings are compiled (<immintrin.h>
//               included), 0 elsewhere (only the scalar spellings are).
//   ACP_AVX512  the function target of those spellings: AVX-512 F, BW, VL and DQ with AVX2 and FMA.
//               The files themselves stay built for the baseline ISA; only marked functions use it.
//   acp::cpu_has_avx512()  whether this CPU runs them, read once. Call an ACP_AVX512 function only
//               after it said yes.
#ifndef ACLNN_CPU_ISA_HPP_
#define ACLNN_CPU_ISA_HPP_

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ACP_X86 1
#include <immintrin.h>
#define ACP_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define ACP_X86 0
#endif

namespace acp {

inline bool cpu_has_avx512() {
#if ACP_X86
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512dq");
    return has;
#else
    return false;
#endif
}

}  // namespace acp

#endif  // ACLNN_CPU_ISA_HPP_
