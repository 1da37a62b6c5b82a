#include "alloc_counter.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>

namespace alloc_counter {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_calls{0}, g_bytes{0}, g_largest{0};
// ACLNN_CPU_TRAP_ALLOC=N: armed allocations of N bytes or more raise SIGTRAP (0: none).
const uint64_t g_trap_bytes = [] {
    const char *v = std::getenv("ACLNN_CPU_TRAP_ALLOC");
    return v ? std::strtoull(v, nullptr, 10) : 0;
}();

void note(size_t n) {
    if (!g_armed.load(std::memory_order_relaxed)) return;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(n, std::memory_order_relaxed);
    uint64_t l = g_largest.load(std::memory_order_relaxed);
    while (n > l && !g_largest.compare_exchange_weak(l, n, std::memory_order_relaxed)) {
    }
    if (g_trap_bytes > 0 && n >= g_trap_bytes) std::raise(SIGTRAP);
}

}  // namespace

void arm() {
    g_calls = 0, g_bytes = 0, g_largest = 0;
    g_armed = true;
}

Counts disarm() {
    g_armed = false;
    return {g_calls.load(), g_bytes.load(), g_largest.load()};
}

}  // namespace alloc_counter

#if defined(__SANITIZE_ADDRESS__)
// The sanitizer runtime's hook (libasan exports it; GCC 12 ships no header declaring it).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
                                                         void (*on_free)(const volatile void *));

namespace {
void on_malloc(const volatile void *, size_t n) { alloc_counter::note(n); }
void on_free(const volatile void *) {}
[[maybe_unused]] const int g_hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}  // namespace

#else
// glibc's own entry points, which the definitions below forward to.
extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);

void *malloc(size_t n) {
    alloc_counter::note(n);
    return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
    alloc_counter::note(k * n);
    return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
    alloc_counter::note(n);
    return __libc_realloc(p, n);
}
void *memalign(size_t a, size_t n) {
    alloc_counter::note(n);
    return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n) {
    alloc_counter::note(n);
    return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
    if (a < sizeof(void *) || (a & (a - 1)) != 0) return EINVAL;
    alloc_counter::note(n);
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) {
    alloc_counter::note(n);
    return __libc_valloc(n);
}
void *pvalloc(size_t n) {
    alloc_counter::note(n);
    return __libc_pvalloc(n);
}
}  // extern "C"
#endif
