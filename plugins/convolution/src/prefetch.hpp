// Software prefetch for the plugin's own kernels. On Zen 5 the hardware prefetchers leave row walks
// (a few row streams at once, rows read with a stride, the next plane an image away) mostly to
// demand misses; the kernels fetch what they will reach a little ahead by hand.
#ifndef CONVOLUTION_SRC_PREFETCH_HPP_
#define CONVOLUTION_SRC_PREFETCH_HPP_

#include <cstdint>

namespace conv {

// The cache lines of bytes [at, at + n), into L1 or (L2) into L2. By inline asm: GCC 12 dropped
// some _mm_prefetch / __builtin_prefetch loops.
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

}  // namespace conv

#endif  // CONVOLUTION_SRC_PREFETCH_HPP_
