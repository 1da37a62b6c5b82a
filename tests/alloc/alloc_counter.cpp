#include "alloc_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>

namespace alloc_counter {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_calls{0}, g_bytes{0}, g_largest{0}, g_device{0};
std::atomic<int64_t> g_held{0}, g_peak{0};
// Nonzero while the thread is inside a device allocation or free (DeviceScope).
thread_local int t_device = 0;
// ACLNN_CPU_TRAP_ALLOC=N: armed allocations of N bytes or more raise SIGTRAP (0: none).
const uint64_t g_trap_bytes = [] {
    const char *v = std::getenv("ACLNN_CPU_TRAP_ALLOC");
    return v ? std::strtoull(v, nullptr, 10) : 0;
}();

void raise_max(std::atomic<uint64_t> &m, uint64_t v) {
    uint64_t l = m.load(std::memory_order_relaxed);
    while (v > l && !m.compare_exchange_weak(l, v, std::memory_order_relaxed)) {
    }
}

// A block of `held` bytes came (+) or went (-): the heap held and its highest.
void hold(int64_t held) {
    if (!g_armed.load(std::memory_order_relaxed) || t_device) return;
    const int64_t now = g_held.fetch_add(held, std::memory_order_relaxed) + held;
    int64_t p = g_peak.load(std::memory_order_relaxed);
    while (now > p && !g_peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
}

// An allocation of n bytes was asked for.
void note(size_t n) {
    if (!g_armed.load(std::memory_order_relaxed)) return;
    g_calls.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(n, std::memory_order_relaxed);
    raise_max(g_largest, n);
    if (g_trap_bytes > 0 && n >= g_trap_bytes) std::raise(SIGTRAP);
}

}  // namespace

void arm() {
    g_calls = 0, g_bytes = 0, g_largest = 0, g_device = 0, g_held = 0, g_peak = 0;
    g_armed = true;
}

Counts disarm() {
    g_armed = false;
    return {g_calls.load(), g_bytes.load(), g_largest.load(), g_peak.load(), g_device.load()};
}

DeviceScope::DeviceScope(size_t bytes) {
    ++t_device;
    if (g_armed.load(std::memory_order_relaxed)) g_device.fetch_add(bytes, std::memory_order_relaxed);
}
DeviceScope::~DeviceScope() { --t_device; }

}  // namespace alloc_counter

#if defined(__SANITIZE_ADDRESS__)
// The sanitizer runtime's hook (libasan exports it; GCC 12 ships no header declaring it).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
                                                         void (*on_free)(const volatile void *));
extern "C" size_t __sanitizer_get_allocated_size(const volatile void *p);

namespace {
void on_malloc(const volatile void *, size_t n) {
    alloc_counter::note(n);
    alloc_counter::hold(static_cast<int64_t>(n));
}
void on_free(const volatile void *p) { alloc_counter::hold(-static_cast<int64_t>(__sanitizer_get_allocated_size(p))); }
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
void __libc_free(void *);
}

namespace {
// A block the allocator handed out (or nullptr): its usable bytes are now held.
void *took(void *p) {
    if (p) alloc_counter::hold(static_cast<int64_t>(malloc_usable_size(p)));
    return p;
}
}  // namespace

extern "C" {
void *malloc(size_t n) {
    alloc_counter::note(n);
    return took(__libc_malloc(n));
}
void *calloc(size_t k, size_t n) {
    alloc_counter::note(k * n);
    return took(__libc_calloc(k, n));
}
void *realloc(void *p, size_t n) {
    alloc_counter::note(n);
    const size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || n == 0) alloc_counter::hold(-static_cast<int64_t>(old));  // realloc(p, 0) frees p
    return took(q);
}
void *memalign(size_t a, size_t n) {
    alloc_counter::note(n);
    return took(__libc_memalign(a, n));
}
void *aligned_alloc(size_t a, size_t n) {
    alloc_counter::note(n);
    return took(__libc_memalign(a, n));
}
int posix_memalign(void **out, size_t a, size_t n) {
    if (a < sizeof(void *) || (a & (a - 1)) != 0) return EINVAL;
    alloc_counter::note(n);
    void *p = took(__libc_memalign(a, n));
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) {
    alloc_counter::note(n);
    return took(__libc_valloc(n));
}
void *pvalloc(size_t n) {
    alloc_counter::note(n);
    return took(__libc_pvalloc(n));
}
void free(void *p) {
    if (p) alloc_counter::hold(-static_cast<int64_t>(malloc_usable_size(p)));
    __libc_free(p);
}
}  // extern "C"
#endif
