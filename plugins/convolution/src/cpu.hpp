// Which vector spellings this CPU runs: the plugin's AVX-512 kernels are ACP_AVX512 functions
// (aclnn_cpu/isa.hpp), run after acp::cpu_has_avx512() said yes.
#ifndef CONVOLUTION_SRC_CPU_HPP_
#define CONVOLUTION_SRC_CPU_HPP_

#include "aclnn_cpu/isa.hpp"

namespace conv {

using acp::cpu_has_avx512;

}  // namespace conv

#endif  // CONVOLUTION_SRC_CPU_HPP_
