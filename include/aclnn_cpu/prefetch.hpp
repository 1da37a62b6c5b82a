// Software prefetch for the plugins' own kernels. On Zen 5 the hardware prefetchers leave row walks
// (a few row streams at once, rows read with a stride, the next plane an image away) mostly to
// demand misses; the kernels fetch what they will reach a little ahead by hand.
#ifndef ACLNN_CPU_PREFETCH_HPP_
#define ACLNN_CPU_PREFETCH_HPP_

#include <cstdint>

namespace acp {

// The cache line of byte `at` into L1: one instruction, for kernels that fetch a line a step (the
// loop of prefetch_lines cost a 56x56 depthwise gradWeight step 1.6 of its 8.6 cycles).
inline void prefetch_line(const void *at) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char *>(at)));
#else
    (void)at;
#endif
}

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

// The cache lines of bytes [at, at + n) into the cache for writing (prefetchw): plain stores then
// find their lines owned instead of waiting for each one's read-for-ownership.
inline void prefetch_lines_w(const void *at, int64_t n) {
#if defined(__x86_64__)
    const auto a = reinterpret_cast<uintptr_t>(at);
    for (uintptr_t l = a & ~uintptr_t{63}; l < a + static_cast<uintptr_t>(n); l += 64)
        asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char *>(l)));
#else
    (void)at, (void)n;
#endif
}

}  // namespace acp

#endif  // ACLNN_CPU_PREFETCH_HPP_
