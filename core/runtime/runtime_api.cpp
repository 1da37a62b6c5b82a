// The runtime subset of acl/acl_rt.h on the CPU: one device, its contexts, host memory, synchronous streams.
// Work submitted to a stream completes before the submitting call returns, so synchronizing a
// stream only has to validate its handle and wait for host callbacks still pending (callbacks.cpp).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "acl/acl.h"
#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "callbacks.hpp"
#include "context.hpp"
#include "log.hpp"
#include "stream_work.hpp"

namespace {

using aclcpu::bad_param;
using aclcpu::stale_handle;
using aclcpu::submit_to;

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
HandleSet &contexts() {
    static auto *s = new HandleSet;
    return *s;
}
// The device's default context (aclrtSetDevice's): one per process, never destroyed by the user.
char g_default_context;
// The thread's current context made by aclrtCreateContext / aclrtSetCurrentContext; NULL: the
// default one once a device is set.
thread_local void *t_context = nullptr;

// The system options set by aclrtCtxSetSysParamOpt, per context (the default one under
// &g_default_context), and by aclrtSetSysParamOpt, under &g_process_options. Unset: no entry.
constexpr int kSysParamOpts = ACL_OPT_STRONG_CONSISTENCY + 1;
char g_process_options;
struct SysParams {
    std::mutex m;
    std::unordered_map<const void *, std::array<std::optional<int64_t>, kSysParamOpts>> by_scope;
};
SysParams &sys_params() {
    static auto *p = new SysParams;
    return *p;
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

aclError dead_stream(const char *fn) { return stale_handle(fn, "stream"); }

// A device id other than the one CPU device's: CANN's ACL_ERROR_RT_INVALID_DEVICEID.
bool bad_device(int32_t deviceId) { return deviceId < 0 || deviceId >= kDeviceCount; }
aclError bad_device_error(const char *fn, int32_t deviceId) {
    return aclcpu::set_error(ACL_ERROR_RT_INVALID_DEVICEID,
                             std::string(fn) + ": deviceId must be 0 (one CPU device), got " + std::to_string(deviceId));
}

// aclrtMemcpy and aclrtMemcpyAsync (fn names the caller in messages).
aclError copy(const char *fn, void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    if (!dst || !src) return bad_param(fn, std::string(!dst ? "dst" : "src") + " must not be NULL");
    if (count > destMax) return bad_param(fn, "count " + std::to_string(count) + " exceeds destMax " + std::to_string(destMax));
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEFAULT)
        return bad_param(fn, "kind must be 0..4 (aclrtMemcpyKind), got " + std::to_string(static_cast<int>(kind)));
    if (count) std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

// aclrtMemcpy2d and aclrtMemcpy2dAsync: CANN's rules (kind HOST_TO_DEVICE or DEVICE_TO_HOST, height
// at most 5 Mi rows), and rows that fit their pitches.
aclError copy_2d(const char *fn, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                 aclrtMemcpyKind kind) {
    constexpr size_t kMaxHeight = size_t{5} << 20;
    if (!dst || !src) return bad_param(fn, std::string(!dst ? "dst" : "src") + " must not be NULL");
    if (width == 0 || height == 0) return bad_param(fn, std::string(width == 0 ? "width" : "height") + " must be > 0, got 0");
    if (kind != ACL_MEMCPY_HOST_TO_DEVICE && kind != ACL_MEMCPY_DEVICE_TO_HOST)
        return bad_param(fn, "kind must be ACL_MEMCPY_HOST_TO_DEVICE (1) or ACL_MEMCPY_DEVICE_TO_HOST (2), got " +
                                 std::to_string(static_cast<int>(kind)));
    if (height > kMaxHeight) return bad_param(fn, "height must be <= 5242880, got " + std::to_string(height));
    if (width > dpitch || width > spitch)
        return bad_param(fn, std::string("width must be <= ") + (width > dpitch ? "dpitch " + std::to_string(dpitch)
                                                                                  : "spitch " + std::to_string(spitch)) +
                                 ", got " + std::to_string(width));
    for (size_t row = 0; row < height; ++row)
        std::memmove(static_cast<char *>(dst) + row * dpitch, static_cast<const char *>(src) + row * spitch, width);
    return ACL_SUCCESS;
}

// aclrtMemset and aclrtMemsetAsync.
aclError fill(const char *fn, void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (!devPtr) return bad_param(fn, "devPtr must not be NULL");
    if (count > maxCount) return bad_param(fn, "count " + std::to_string(count) + " exceeds maxCount " + std::to_string(maxCount));
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
aclError allocate(const char *fn, void **devPtr, size_t size, aclrtMemMallocPolicy requested) {
    if (!devPtr) return bad_param(fn, "devPtr must not be NULL");
    if (size == 0) return bad_param(fn, "size must be > 0, got 0");
    const auto bits = static_cast<uint32_t>(requested);
    if (bits & ACL_MEM_ACCESS_USER_SPACE_READONLY)
        return aclcpu::unsupported(fn, "ACL_MEM_ACCESS_USER_SPACE_READONLY: memory read-only to the host is not "
                                       "supported by the CPU device");
    const uint32_t page = bits & ~static_cast<uint32_t>(ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH);
    if (page > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P)
        return bad_param(fn, "policy must be a page policy 0..7, optionally | ACL_MEM_TYPE_LOW_BAND_WIDTH or "
                             "ACL_MEM_TYPE_HIGH_BAND_WIDTH (aclrtMemMallocPolicy), got " + std::to_string(bits));
    // One device and one kind of memory: a P2P policy is its plain counterpart, 1 GB huge pages are
    // the host's huge pages (HUGE_ONLY), and the memory type bits choose nothing.
    static constexpr aclrtMemMallocPolicy kAs[] = {
        ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEM_MALLOC_HUGE_FIRST,
        ACL_MEM_MALLOC_HUGE_ONLY,  ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_HUGE_ONLY};
    const aclrtMemMallocPolicy policy = kAs[page];
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

// The thread's current context: the one it created or set, else the device's default one once it
// set a device; NULL when it has none.
void *current_context() {
    if (t_context && !contexts().contains(t_context)) t_context = nullptr;  // destroyed on another thread
    if (t_context) return t_context;
    return t_device >= 0 ? &g_default_context : nullptr;
}

aclError no_context(const char *fn) {
    return aclcpu::set_error(ACL_ERROR_RT_CONTEXT_NULL,
                             std::string(fn) + ": no context on this thread (call aclrtSetDevice or aclrtCreateContext)");
}

// The scope of aclrt(Ctx)(Set|Get)SysParamOpt after checking `opt`: the thread's current context
// (ctx), else the process.
aclError sys_param_scope(const char *fn, aclSysParamOpt opt, bool ctx, const void **scope) {
    if (opt < ACL_OPT_DETERMINISTIC || opt > ACL_OPT_STRONG_CONSISTENCY)
        return bad_param(fn, "opt must be ACL_OPT_DETERMINISTIC (0), ACL_OPT_ENABLE_DEBUG_KERNEL (1) or "
                             "ACL_OPT_STRONG_CONSISTENCY (2), got " + std::to_string(static_cast<int>(opt)));
    *scope = ctx ? current_context() : &g_process_options;
    if (!*scope) return no_context(fn);
    return ACL_SUCCESS;
}

aclError set_sys_param(const char *fn, aclSysParamOpt opt, int64_t value, bool ctx) {
    const void *scope = nullptr;
    if (const aclError e = sys_param_scope(fn, opt, ctx, &scope)) return e;
    const int64_t limit = opt == ACL_OPT_DETERMINISTIC ? 4 : 2;  // CANN's deterministic levels 0..3
    if (value < 0 || value >= limit)
        return aclcpu::bad_value(fn, "value must be 0.." + std::to_string(limit - 1) + " for this opt, got " +
                                         std::to_string(value));
    std::lock_guard<std::mutex> lock(sys_params().m);
    sys_params().by_scope[scope][static_cast<size_t>(opt)] = value;
    return ACL_SUCCESS;
}

aclError get_sys_param(const char *fn, aclSysParamOpt opt, int64_t *value, bool ctx) {
    const void *scope = nullptr;
    if (const aclError e = sys_param_scope(fn, opt, ctx, &scope)) return e;
    if (!value) return bad_param(fn, "value must not be NULL");
    std::lock_guard<std::mutex> lock(sys_params().m);
    const auto it = sys_params().by_scope.find(scope);
    if (it == sys_params().by_scope.end() || !it->second[static_cast<size_t>(opt)])
        return aclcpu::set_error(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET,
                                 std::string(fn) + ": option " + std::to_string(static_cast<int>(opt)) + " has not been set" +
                                     (ctx ? " in the current context (aclrtCtxSetSysParamOpt)" : " (aclrtSetSysParamOpt)"));
    *value = *it->second[static_cast<size_t>(opt)];
    return ACL_SUCCESS;
}

// CANN's host FLOAT16 conversions (acl_base.h): IEEE rounding, but saturating where IEEE has
// infinities and NaN.
aclFloat16 saturating_float_to_half(float value) {
    const uint16_t h = acp::float_to_half(value);
    return (h & 0x7c00u) == 0x7c00u ? static_cast<uint16_t>((h & 0x8000u) | 0x7bffu) : h;
}
float saturating_half_to_float(aclFloat16 value) {
    if ((value & 0x7c00u) != 0x7c00u) return acp::half_to_float(value);
    const float magnitude = std::ldexp(1.0f + static_cast<float>(value & 0x3ffu) / 1024.0f, 16);
    return (value & 0x8000u) ? -magnitude : magnitude;
}

}  // namespace

aclError aclcpu::bad_param(const char *fn, const std::string &what) {
    return set_error(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + what);
}

aclError aclcpu::bad_value(const char *fn, const std::string &what) {
    return set_error(ACL_ERROR_RT_PARAM_INVALID, std::string(fn) + ": " + what);
}

aclError aclcpu::unsupported(const char *fn, const std::string &what) {
    return set_error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, std::string(fn) + ": " + what);
}

aclError aclcpu::stale_handle(const char *fn, const char *kind) {
    return set_error(ACL_ERROR_RT_INVALID_HANDLE, std::string(fn) + ": not a live " + kind);
}

aclError aclcpu::submit_to(const char *fn, aclrtStream stream) {
    if (stream && !streams().contains(stream)) return dead_stream(fn);
    wait_for_callbacks(stream, /*blocking_only=*/true);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY bool aclcpu::stream_is_live(const void *stream) { return !stream || streams().contains(stream); }

extern "C" {

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) { return acp::dtype_size(dataType); }

ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value) { return saturating_half_to_float(value); }
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value) { return saturating_float_to_half(value); }

ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (!runMode) return bad_param("aclrtGetRunMode", "runMode must not be NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
    if (bad_device(deviceId)) return bad_device_error("aclrtSetDevice", deviceId);
    t_device = deviceId;
    t_context = nullptr;  // the device's default context
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
    if (bad_device(deviceId)) return bad_device_error("aclrtResetDevice", deviceId);
    t_device = -1;
    t_context = nullptr;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId) {
    if (bad_device(deviceId)) return bad_device_error("aclrtResetDeviceForce", deviceId);
    return aclrtResetDevice(deviceId);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    if (!context) return bad_param("aclrtCreateContext", "context must not be NULL");
    if (bad_device(deviceId)) return bad_device_error("aclrtCreateContext", deviceId);
    *context = contexts().create(16);
    t_device = deviceId;
    t_context = *context;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context) {
    if (context == &g_default_context)
        return bad_param("aclrtDestroyContext", "the device's default context is released by aclrtResetDevice");
    if (!context || !contexts().contains(context)) return bad_param("aclrtDestroyContext", "not a live context");
    {
        std::lock_guard<std::mutex> lock(sys_params().m);
        sys_params().by_scope.erase(context);  // before the handle is freed and its address reused
    }
    if (!contexts().destroy(context)) return bad_param("aclrtDestroyContext", "not a live context");  // (another thread was first)
    if (t_context == context) t_context = nullptr;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context != &g_default_context && (!context || !contexts().contains(context)))
        return bad_param("aclrtSetCurrentContext", "not a live context");
    t_device = 0;
    t_context = context == &g_default_context ? nullptr : context;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context) {
    if (!context) return bad_param("aclrtGetCurrentContext", "context must not be NULL");
    void *current = current_context();
    if (!current) return no_context("aclrtGetCurrentContext");
    *context = current;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    return set_sys_param("aclrtCtxSetSysParamOpt", opt, value, true);
}
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    return get_sys_param("aclrtCtxGetSysParamOpt", opt, value, true);
}
ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    return set_sys_param("aclrtSetSysParamOpt", opt, value, false);
}
ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    return get_sys_param("aclrtGetSysParamOpt", opt, value, false);
}

ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId) {
    if (!deviceId) return bad_param("aclrtGetDevice", "deviceId must not be NULL");
    if (t_device < 0) return aclcpu::set_error(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtGetDevice: no device set on this thread");
    *deviceId = t_device;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count) {
    if (!count) return bad_param("aclrtGetDeviceCount", "count must not be NULL");
    *count = kDeviceCount;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream) {
    if (!stream) return bad_param("aclrtCreateStream", "stream must not be NULL");
    *stream = streams().create(16);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
    constexpr const char *fn = "aclrtCreateStreamWithConfig";
    // The flags change nothing on a synchronous stream; bits outside them are refused as CANN's runtime does.
    constexpr uint32_t kKnownFlags = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT |
                                     ACL_STREAM_HUGE | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
    if (!stream) return bad_param(fn, "stream must not be NULL");
    if (priority > 7) return bad_param(fn, "priority must be 0 (highest) .. 7, got " + std::to_string(priority));
    if (flag & ~kKnownFlags)
        return aclcpu::bad_value(fn, "flag must combine ACL_STREAM_* bits (0x1 .. 0x20), got " + std::to_string(flag));
    *stream = streams().create(16);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream) {
    if (!stream) return bad_param("aclrtDestroyStreamForce", "stream must not be NULL");
    if (!streams().contains(stream)) return dead_stream("aclrtDestroyStreamForce");
    return aclrtDestroyStream(stream);
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream) {
    if (!stream) return bad_param("aclrtDestroyStream", "stream must not be NULL");
    if (!streams().contains(stream)) return dead_stream("aclrtDestroyStream");
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
        return bad_param("aclrtSynchronizeStreamWithTimeout", "timeout must be -1 (none) or >= 0 ms, got " + std::to_string(timeout));
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

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return allocate("aclrtMalloc", devPtr, size, policy);
}

ACL_FUNC_VISIBILITY aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return allocate("aclrtMallocAlign32", devPtr, size, policy);
}

ACL_FUNC_VISIBILITY aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return allocate("aclrtMallocCached", devPtr, size, policy);
}

ACL_FUNC_VISIBILITY aclError aclrtMemFlush(void *devPtr, size_t size) {
    if (!devPtr) return bad_param("aclrtMemFlush", "devPtr must not be NULL");
    if (size == 0) return bad_param("aclrtMemFlush", "size must be > 0, got 0");  // host memory is coherent: nothing to write back
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMemInvalidate(void *devPtr, size_t size) {
    if (!devPtr) return bad_param("aclrtMemInvalidate", "devPtr must not be NULL");
    if (size == 0) return bad_param("aclrtMemInvalidate", "size must be > 0, got 0");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
    if (!devPtr) return bad_param("aclrtFree", "devPtr must not be NULL");
    std::free(devPtr);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    if (attr < ACL_DDR_MEM || attr > ACL_HBM_MEM_P2P_HUGE1G)
        return bad_param("aclrtGetMemInfo", "attr must be 0..11 (aclrtMemAttr), got " + std::to_string(static_cast<int>(attr)));
    if (!free || !total) return bad_param("aclrtGetMemInfo", std::string(!free ? "free" : "total") + " must not be NULL");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return aclcpu::set_error(ACL_ERROR_INTERNAL_ERROR, "aclrtGetMemInfo: the host's memory size is unknown");
    *total = static_cast<size_t>(pages) * static_cast<size_t>(page);
    *free = std::min(available_memory(), *total);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size) {
    if (!hostPtr) return bad_param("aclrtMallocHost", "hostPtr must not be NULL");
    if (size == 0) return bad_param("aclrtMallocHost", "size must be > 0, got 0");
    return aclrtMalloc(hostPtr, size, ACL_MEM_MALLOC_NORMAL_ONLY);
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr) {
    if (!hostPtr) return bad_param("aclrtFreeHost", "hostPtr must not be NULL");
    return aclrtFree(hostPtr);
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind) {
    return copy("aclrtMemcpy", dst, destMax, src, count, kind);
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    return fill("aclrtMemset", devPtr, maxCount, value, count);
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t height, aclrtMemcpyKind kind) {
    return copy_2d("aclrtMemcpy2d", dst, dpitch, src, spitch, width, height, kind);
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

ACL_FUNC_VISIBILITY aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                                size_t height, aclrtMemcpyKind kind, aclrtStream stream) {
    if (const aclError e = submit_to("aclrtMemcpy2dAsync", stream)) return e;
    return copy_2d("aclrtMemcpy2dAsync", dst, dpitch, src, spitch, width, height, kind);
}

ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t) { return ACL_SUCCESS; }
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t) { return ACL_SUCCESS; }

ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (!majorVersion || !minorVersion || !patchVersion)
        return bad_param("aclrtGetVersion", "majorVersion, minorVersion and patchVersion must not be NULL");
    *majorVersion = ACLNN_CPU_VERSION_MAJOR;
    *minorVersion = ACLNN_CPU_VERSION_MINOR;
    *patchVersion = ACLNN_CPU_VERSION_PATCH;
    return ACL_SUCCESS;
}

}  // extern "C"
