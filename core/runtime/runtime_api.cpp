// The runtime subset of acl/acl_rt.h on the CPU: one device, its contexts, host memory, synchronous streams.
// Work submitted to a stream completes before the submitting call returns, so synchronizing a
// stream only has to validate its handle and wait for host callbacks still pending (callbacks.cpp).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_set>

#include "acl/acl.h"
#include "aclnn_cpu/dtype.hpp"
#include "callbacks.hpp"
#include "context.hpp"
#include "log.hpp"

namespace {

constexpr int32_t kDeviceCount = 1;
thread_local int32_t t_device = -1;

// Live handles, so that a stale or foreign handle is an error rather than a crash.
struct HandleSet {
    std::mutex m;
    std::unordered_set<const void *> live;
    void *create(size_t tag_bytes) {
        void *h = std::malloc(tag_bytes);
        std::lock_guard<std::mutex> lock(m);
        live.insert(h);
        return h;
    }
    bool contains(const void *h) {
        std::lock_guard<std::mutex> lock(m);
        return live.count(h) != 0;
    }
    bool destroy(void *h) {
        std::lock_guard<std::mutex> lock(m);
        if (!live.erase(h)) return false;
        std::free(h);
        return true;
    }
};
HandleSet &streams() {
    static auto *s = new HandleSet;
    return *s;
}
HandleSet &events() {
    static auto *s = new HandleSet;
    return *s;
}
HandleSet &contexts() {
    static auto *s = new HandleSet;
    return *s;
}
// The device's default context (aclrtSetDevice's): one per process, never destroyed by the user.
char g_default_context;
// The thread's current context made by aclrtCreateContext / aclrtSetCurrentContext; NULL: the
// default one once a device is set.
thread_local void *t_context = nullptr;

aclError bad(const char *fn, const std::string &what) {
    return aclcpu::set_error(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + what);
}

// MemAvailable of /proc/meminfo (what can be allocated without swapping), or the free pages
// where that file is unreadable.
size_t available_memory() {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);)
        if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;  // "... kB"
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

aclError dead_stream(const char *fn) {
    return aclcpu::set_error(ACL_ERROR_RT_STREAM_NOT_FOUND, std::string(fn) + ": not a live stream");
}

// Work submitted to a stream: the stream must be live, and the work takes its turn after the
// stream's blocking host callbacks (callbacks.cpp).
aclError submit_to(const char *fn, aclrtStream stream) {
    if (stream && !streams().contains(stream)) return dead_stream(fn);
    aclcpu::wait_for_callbacks(stream, /*blocking_only=*/true);
    return ACL_SUCCESS;
}

// aclrtMemcpy and aclrtMemcpyAsync (fn names the caller in messages).
aclError copy(const char *fn, void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    if (!dst || !src) return bad(fn, std::string(!dst ? "dst" : "src") + " must not be NULL");
    if (count > destMax) return bad(fn, "count " + std::to_string(count) + " exceeds destMax " + std::to_string(destMax));
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
        return bad(fn, "kind must be 0..3, got " + std::to_string(static_cast<int>(kind)));
    if (count) std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

// aclrtMemset and aclrtMemsetAsync.
aclError fill(const char *fn, void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (!devPtr) return bad(fn, "devPtr must not be NULL");
    if (count > maxCount) return bad(fn, "count " + std::to_string(count) + " exceeds maxCount " + std::to_string(maxCount));
    if (count) std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

// aclrtMalloc and aclrtMallocAlign32. "Device" memory is host memory, 64-byte aligned (cache line,
// one AVX-512 vector). The policies mean what CANN documents: HUGE_FIRST (the default) and HUGE_ONLY put an allocation of more than
// 1 MB on huge pages, NORMAL_ONLY and small allocations never. Here that is a 2 MB-aligned block
// advised as MADV_HUGEPAGE (transparent huge pages; Debian's default mode honours the advice):
// kernels that walk strided rows of large tensors (mask rows, channel planes) miss the TLB far less
// - 5-17 % on MaxPool2dWithMaskBackward. The advice is best effort: where the host has no huge
// pages, HUGE_ONLY still returns normal pages rather than failing a program that would run.
aclError allocate(const char *fn, void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    if (!devPtr) return bad(fn, "devPtr must not be NULL");
    if (size == 0) return bad(fn, "size must be > 0, got 0");
    if (policy < ACL_MEM_MALLOC_HUGE_FIRST || policy > ACL_MEM_MALLOC_NORMAL_ONLY)
        return bad(fn, "policy must be 0..2, got " + std::to_string(static_cast<int>(policy)));
    constexpr size_t kHugeAbove = size_t{1} << 20, kHugePage = size_t{2} << 20;
    const bool huge = policy != ACL_MEM_MALLOC_NORMAL_ONLY && size > kHugeAbove;
    const size_t align = huge ? kHugePage : 64;
    if (size > SIZE_MAX - align)
        return aclcpu::set_error(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": cannot allocate " + std::to_string(size) + " bytes");
    const size_t rounded = (size + align - 1) / align * align;
    void *p = std::aligned_alloc(align, rounded);
    if (!p) return aclcpu::set_error(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": cannot allocate " + std::to_string(size) + " bytes");
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: the memory is usable either way
#endif
    *devPtr = p;
    return ACL_SUCCESS;
}

}  // namespace

ACL_FUNC_VISIBILITY bool aclcpu::stream_is_live(const void *stream) { return !stream || streams().contains(stream); }

extern "C" {

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) { return acp::dtype_size(dataType); }

ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (!runMode) return bad("aclrtGetRunMode", "runMode must not be NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId < 0 || deviceId >= kDeviceCount)
        return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: deviceId must be 0 (one CPU device), got " +
                                                               std::to_string(deviceId));
    t_device = deviceId;
    t_context = nullptr;  // the device's default context
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId < 0 || deviceId >= kDeviceCount)
        return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtResetDevice: deviceId must be 0, got " +
                                                               std::to_string(deviceId));
    t_device = -1;
    t_context = nullptr;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (!context) return bad("aclrtCreateContext", "context must not be NULL");
    if (deviceId < 0 || deviceId >= kDeviceCount)
        return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtCreateContext: deviceId must be 0 (one CPU device), got " +
                                                               std::to_string(deviceId));
    *context = contexts().create(16);
    t_device = deviceId;
    t_context = *context;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context) {
    if (context == &g_default_context)
        return bad("aclrtDestroyContext", "the device's default context is released by aclrtResetDevice");
    if (!context || !contexts().destroy(context)) return bad("aclrtDestroyContext", "not a live context");
    if (t_context == context) t_context = nullptr;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context != &g_default_context && (!context || !contexts().contains(context)))
        return bad("aclrtSetCurrentContext", "not a live context");
    t_device = 0;
    t_context = context == &g_default_context ? nullptr : context;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context) {
    if (!context) return bad("aclrtGetCurrentContext", "context must not be NULL");
    if (t_context && !contexts().contains(t_context)) t_context = nullptr;  // destroyed on another thread
    if (!t_context && t_device < 0)
        return aclcpu::set_error(ACL_ERROR_RT_CONTEXT_NULL,
                                 "aclrtGetCurrentContext: no context on this thread (call aclrtSetDevice or aclrtCreateContext)");
    *context = t_context ? t_context : &g_default_context;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId) {
    if (!deviceId) return bad("aclrtGetDevice", "deviceId must not be NULL");
    if (t_device < 0) return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtGetDevice: no device set on this thread");
    *deviceId = t_device;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count) {
    if (!count) return bad("aclrtGetDeviceCount", "count must not be NULL");
    *count = kDeviceCount;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream) {
    if (!stream) return bad("aclrtCreateStream", "stream must not be NULL");
    *stream = streams().create(16);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream) {
    if (!stream || !streams().contains(stream)) return dead_stream("aclrtDestroyStream");
    aclcpu::forget_stream_callbacks(stream);
    if (!streams().destroy(stream)) return dead_stream("aclrtDestroyStream");  // (another thread was first)
    return ACL_SUCCESS;
}

// Work runs synchronously on submission: only host callbacks (callbacks.cpp) can still be pending.
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (stream && !streams().contains(stream)) return dead_stream("aclrtSynchronizeStream");
    aclcpu::wait_for_callbacks(stream, false);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    if (timeout < -1)
        return bad("aclrtSynchronizeStreamWithTimeout", "timeout must be -1 (none) or >= 0 ms, got " + std::to_string(timeout));
    if (stream && !streams().contains(stream)) return dead_stream("aclrtSynchronizeStreamWithTimeout");
    if (!aclcpu::wait_for_callbacks(stream, false, timeout))
        return aclcpu::set_error(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "aclrtSynchronizeStreamWithTimeout: callbacks on the "
                                 "stream still pending after " + std::to_string(timeout) + " ms");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void) {
    aclcpu::wait_for_all_callbacks();
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event) {
    if (!event) return bad("aclrtCreateEvent", "event must not be NULL");
    *event = events().create(16);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event) {
    if (!event || !events().destroy(event)) return bad("aclrtDestroyEvent", "not a live event");
    return ACL_SUCCESS;
}

// Recording and waiting are work on the stream: they come after its blocking callbacks.
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    if (!event || !events().contains(event)) return bad("aclrtRecordEvent", "not a live event");
    return submit_to("aclrtRecordEvent", stream);
}

ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    if (!event || !events().contains(event)) return bad("aclrtStreamWaitEvent", "not a live event");
    return submit_to("aclrtStreamWaitEvent", stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event) {
    if (!event || !events().contains(event)) return bad("aclrtSynchronizeEvent", "not a live event");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return allocate("aclrtMalloc", devPtr, size, policy);
}

ACL_FUNC_VISIBILITY aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return allocate("aclrtMallocAlign32", devPtr, size, policy);
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
    if (!devPtr) return bad("aclrtFree", "devPtr must not be NULL");
    std::free(devPtr);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    if (attr < ACL_DDR_MEM || attr > ACL_HBM_MEM_P2P_HUGE1G)
        return bad("aclrtGetMemInfo", "attr must be 0..11 (aclrtMemAttr), got " + std::to_string(static_cast<int>(attr)));
    if (!free || !total) return bad("aclrtGetMemInfo", std::string(!free ? "free" : "total") + " must not be NULL");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return aclcpu::set_error(ACL_ERROR_INTERNAL_ERROR, "aclrtGetMemInfo: the host's memory size is unknown");
    *total = static_cast<size_t>(pages) * static_cast<size_t>(page);
    *free = std::min(available_memory(), *total);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size) {
    if (!hostPtr) return bad("aclrtMallocHost", "hostPtr must not be NULL");
    if (size == 0) return bad("aclrtMallocHost", "size must be > 0, got 0");
    return aclrtMalloc(hostPtr, size, ACL_MEM_MALLOC_NORMAL_ONLY);
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr) {
    if (!hostPtr) return bad("aclrtFreeHost", "hostPtr must not be NULL");
    return aclrtFree(hostPtr);
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind) {
    return copy("aclrtMemcpy", dst, destMax, src, count, kind);
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    return fill("aclrtMemset", devPtr, maxCount, value, count);
}

// A dead stream fails before anything is written.
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream) {
    if (const aclError e = submit_to("aclrtMemcpyAsync", stream)) return e;
    return copy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
}

ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream) {
    if (const aclError e = submit_to("aclrtMemsetAsync", stream)) return e;
    return fill("aclrtMemsetAsync", devPtr, maxCount, value, count);
}

ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t) { return ACL_SUCCESS; }
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t) { return ACL_SUCCESS; }

ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (!majorVersion || !minorVersion || !patchVersion)
        return bad("aclrtGetVersion", "majorVersion, minorVersion and patchVersion must not be NULL");
    *majorVersion = ACLNN_CPU_VERSION_MAJOR;
    *minorVersion = ACLNN_CPU_VERSION_MINOR;
    *patchVersion = ACLNN_CPU_VERSION_PATCH;
    return ACL_SUCCESS;
}

}  // extern "C"
