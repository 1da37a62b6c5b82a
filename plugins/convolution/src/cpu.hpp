// Which vector spellings this CPU runs, read once: the plugin's AVX-512 kernels need F, BW and VL.
#ifndef CONVOLUTION_SRC_CPU_HPP_
#define CONVOLUTION_SRC_CPU_HPP_

namespace conv {

inline bool has_avx512_bw() {
#if defined(__x86_64__)
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return has;
#else
    return false;
#endif
}

}  // namespace conv

#endif  // CONVOLUTION_SRC_CPU_HPP_
