// The plugin's one switch for its AVX-512 code: MPOOL_X86 (x86-64 with GCC or Clang: the AVX-512
// paths are compiled, and chosen at run time after the CPU check) and MPOOL_AVX512, the function
// target those paths are built for - the files themselves are built for the baseline ISA.
#ifndef MAX_POOL2D_WITH_MASK_MAXPOOL_ISA_HPP_
#define MAX_POOL2D_WITH_MASK_MAXPOOL_ISA_HPP_

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MPOOL_X86 1
#include <immintrin.h>
#define MPOOL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define MPOOL_X86 0
#endif

#endif  // MAX_POOL2D_WITH_MASK_MAXPOOL_ISA_HPP_
