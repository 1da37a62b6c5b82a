// The runtime subset of acl/acl_rt.h on the CPU: one device, host memory, synchronous streams.
// Work submitted to a stream completes before the submitting call returns, so synchronizing a
// stream or an event only has to validate its handle.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "acl/acl.h"
#include "aclnn_cpu/dtype.hpp"
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

aclError bad(const char *fn, const std::string &what) {
    return aclcpu::set_error(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + what);
}

}  // namespace

ACL_FUNC_VISIBILITY bool aclcpu::stream_is_live(const void *stream) { return !stream || streams().contains(stream); }

extern "C" {

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) { return acp::dtype_size(dataType); }

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId < 0 || deviceId >= kDeviceCount)
        return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: deviceId must be 0 (one CPU device), got " +
                                                               std::to_string(deviceId));
    t_device = deviceId;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId < 0 || deviceId >= kDeviceCount)
        return aclcpu::set_error(ACL_ERROR_INVALID_DEVICE, "aclrtResetDevice: deviceId must be 0, got " +
                                                               std::to_string(deviceId));
    t_device = -1;
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
    if (!stream || !streams().destroy(stream))
        return aclcpu::set_error(ACL_ERROR_RT_STREAM_NOT_FOUND, "aclrtDestroyStream: not a live stream");
    return ACL_SUCCESS;
}

// Work runs synchronously on submission, so a live stream (or the default NULL stream) is idle here.
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (stream && !streams().contains(stream))
        return aclcpu::set_error(ACL_ERROR_RT_STREAM_NOT_FOUND, "aclrtSynchronizeStream: not a live stream");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event) {
    if (!event) return bad("aclrtCreateEvent", "event must not be NULL");
    *event = events().create(16);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event) {
    if (!event || !events().destroy(event)) return bad("aclrtDestroyEvent", "not a live event");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    if (!event || !events().contains(event)) return bad("aclrtRecordEvent", "not a live event");
    return aclrtSynchronizeStream(stream);
}

ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    if (!event || !events().contains(event)) return bad("aclrtStreamWaitEvent", "not a live event");
    return aclrtSynchronizeStream(stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event) {
    if (!event || !events().contains(event)) return bad("aclrtSynchronizeEvent", "not a live event");
    return ACL_SUCCESS;
}

// "Device" memory is host memory, 64-byte aligned (cache line, one AVX-512 vector). The policies
// mean what CANN documents: HUGE_FIRST (the default) and HUGE_ONLY put an allocation of more than
// 1 MB on huge pages, NORMAL_ONLY and small allocations never. Here that is a 2 MB-aligned block
// advised as MADV_HUGEPAGE (transparent huge pages; Debian's default mode honours the advice):
// kernels that walk strided rows of large tensors (mask rows, channel planes) miss the TLB far less
// - 5-17 % on MaxPool2dWithMaskBackward. The advice is best effort: where the host has no huge
// pages, HUGE_ONLY still returns normal pages rather than failing a program that would run.
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    if (!devPtr) return bad("aclrtMalloc", "devPtr must not be NULL");
    if (size == 0) return bad("aclrtMalloc", "size must be > 0, got 0");
    if (policy < ACL_MEM_MALLOC_HUGE_FIRST || policy > ACL_MEM_MALLOC_NORMAL_ONLY)
        return bad("aclrtMalloc", "policy must be 0..2, got " + std::to_string(static_cast<int>(policy)));
    constexpr size_t kHugeAbove = size_t{1} << 20, kHugePage = size_t{2} << 20;
    const bool huge = policy != ACL_MEM_MALLOC_NORMAL_ONLY && size > kHugeAbove;
    const size_t align = huge ? kHugePage : 64;
    if (size > SIZE_MAX - align)
        return aclcpu::set_error(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: cannot allocate " + std::to_string(size) + " bytes");
    const size_t rounded = (size + align - 1) / align * align;
    void *p = std::aligned_alloc(align, rounded);
    if (!p) return aclcpu::set_error(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: cannot allocate " + std::to_string(size) + " bytes");
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: the memory is usable either way
#endif
    *devPtr = p;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
    if (!devPtr) return bad("aclrtFree", "devPtr must not be NULL");
    std::free(devPtr);
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
    if (!dst || !src) return bad("aclrtMemcpy", std::string(!dst ? "dst" : "src") + " must not be NULL");
    if (count > destMax)
        return bad("aclrtMemcpy", "count " + std::to_string(count) + " exceeds destMax " + std::to_string(destMax));
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
        return bad("aclrtMemcpy", "kind must be 0..3, got " + std::to_string(static_cast<int>(kind)));
    if (count) std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (!devPtr) return bad("aclrtMemset", "devPtr must not be NULL");
    if (count > maxCount)
        return bad("aclrtMemset", "count " + std::to_string(count) + " exceeds maxCount " + std::to_string(maxCount));
    if (count) std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

}  // extern "C"
