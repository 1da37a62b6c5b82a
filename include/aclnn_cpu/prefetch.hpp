// Software prefetch for the plugins' own kernels. On Zen 5 the hardware prefetchers leave row walks
// (a few row streams at once, rows read with a stride, the next plane an image away) mostly to
// demand misses; the kernels fetch what they will reach a little ahead by hand.
#ifndef ACLNN_CPU_PREFETCH_HPP_
#define ACLNN_CPU_PREFETCH_HPP_

#include <cstdint>

namespace acp {

// The cache lines of bytes [at, at + n), into L1 or (L2) into L2. By inline asm: GCC 12 dropped
// some _mm_prefetch / __builtin_prefetch loops (all of the mask backward's, found in session 21).
template <bool L2 = false>
inline void prefetch_lines(const void *at, int64_t n) {
#if defined(__x86_64__)
    const auto a = reinterpret_cast<uintptr_t>(at);
    for (uintptr_t l = a & ~uintptr_t{63}; l < a + static_cast<uintptr_t>(n); l += 64) {
        if constexpr (L2) asm volatile("prefetcht1 %0" : : "m"(*reinterpret_cast<const char *>(l)));
        else asm volatile("prefetcht0 %0" : : "m"(*reinterpret_cast<const char *>(l)));
    }
#else
    (void)at, (void)n;
#endif
}

}  // namespace acp

#endif  // ACLNN_CPU_PREFETCH_HPP_
