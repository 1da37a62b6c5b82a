// Devices, streams, events and memory of the runtime subset (api.md "Runtime subset").
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "enum_shims.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

using DeviceTest = coretest::InitializedRuntimeTest;

// ---- devices ----

TEST_F(DeviceTest, OneDevice) {
    uint32_t count = 99;
    ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    EXPECT_EQ(count, 1u);
}

TEST_F(DeviceTest, GetDeviceCountNull) {
    EXPECT_NE(aclrtGetDeviceCount(nullptr), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(DeviceTest, SetDeviceZeroThenGet) {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    int32_t dev = -7;
    ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(DeviceTest, BadDeviceIdsFail) {
    for (int32_t id : {1, 2, -1, 1000}) {
        EXPECT_NE(aclrtSetDevice(id), ACL_SUCCESS) << id;
        const std::string msg = takeErr();
        EXPECT_NE(msg.find("aclrtSetDevice"), std::string::npos) << msg;
    }
    EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_NE(aclrtResetDevice(1), ACL_SUCCESS);
}

TEST_F(DeviceTest, FailedSetDeviceKeepsTheCurrentDevice) {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_NE(aclrtSetDevice(1), ACL_SUCCESS);
    int32_t dev = -7;
    ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
}

TEST_F(DeviceTest, GetDeviceNull) {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_NE(aclrtGetDevice(nullptr), ACL_SUCCESS);
}

TEST_F(DeviceTest, SynchronizeDevice) { EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS); }

// ---- streams ----

TEST_F(DeviceTest, StreamLifecycle) {
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(DeviceTest, StreamsAreDistinct) {
    aclrtStream a = nullptr, b = nullptr;
    ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
    EXPECT_NE(a, b);
    EXPECT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS) << "destroying one stream must not affect another";
    EXPECT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

TEST_F(DeviceTest, DefaultNullStreamSynchronizes) { EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS); }

TEST_F(DeviceTest, CreateStreamNull) {
    EXPECT_NE(aclrtCreateStream(nullptr), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(DeviceTest, DestroyStreamTwiceIsAnError) {
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_NE(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_NE(aclrtSynchronizeStream(s), ACL_SUCCESS) << "a destroyed stream is not live";
}

TEST_F(DeviceTest, DestroyNullOrForeignStreamIsAnError) {
    EXPECT_NE(aclrtDestroyStream(nullptr), ACL_SUCCESS);
    int not_a_stream = 0;
    EXPECT_NE(aclrtDestroyStream(&not_a_stream), ACL_SUCCESS);
    EXPECT_NE(aclrtSynchronizeStream(&not_a_stream), ACL_SUCCESS);
}

TEST_F(DeviceTest, StreamFromAnotherThread) {
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    aclError rc = -1;
    std::thread t([&] { rc = aclrtSynchronizeStream(s); });
    t.join();
    EXPECT_EQ(rc, ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// ---- events ----

TEST_F(DeviceTest, EventLifecycle) {
    aclrtStream s = nullptr;
    aclrtEvent e = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    EXPECT_EQ(aclrtStreamWaitEvent(s, e), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(DeviceTest, EventErrors) {
    EXPECT_NE(aclrtCreateEvent(nullptr), ACL_SUCCESS);
    aclrtEvent e = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    EXPECT_NE(aclrtDestroyEvent(e), ACL_SUCCESS) << "destroying an event twice is an error";
    EXPECT_NE(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    EXPECT_NE(aclrtRecordEvent(e, nullptr), ACL_SUCCESS);
    EXPECT_NE(aclrtStreamWaitEvent(nullptr, e), ACL_SUCCESS);
    EXPECT_NE(aclrtDestroyEvent(nullptr), ACL_SUCCESS);
    EXPECT_NE(aclrtSynchronizeEvent(nullptr), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(DeviceTest, RecordOnDeadStreamIsAnError) {
    aclrtStream s = nullptr;
    aclrtEvent e = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtRecordEvent(e, s), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtRecordEvent: not a live stream"), std::string::npos);
    EXPECT_EQ(aclrtStreamWaitEvent(s, e), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtStreamWaitEvent: not a live stream"), std::string::npos);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

// ---- memory ----

TEST_F(DeviceTest, MallocIsWritableAndAligned) {
    for (size_t size : {size_t{1}, size_t{63}, size_t{64}, size_t{4097}, size_t{1} << 20}) {
        void *p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << size;
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(std::max_align_t), 0u) << size;
        std::memset(p, 0xab, size);  // the whole requested size is usable (ASan checks the bounds)
        EXPECT_EQ(static_cast<unsigned char *>(p)[size - 1], 0xab);
        EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
}

TEST_F(DeviceTest, MallocEveryPolicy) {
    for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY}) {
        void *p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, 128, policy), ACL_SUCCESS) << policy;
        EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
}

// The VmFlags of the mapping that holds p ("hg": advised MADV_HUGEPAGE), or "" when not found.
std::string vmFlagsOf(const void *p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<uintptr_t>(p);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
            inside = lo <= at && at < hi;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line + " ";
        }
    }
    return "";
}

// CANN's policies: more than 1 MB with HUGE_FIRST / HUGE_ONLY goes on huge pages - here 2 MB-aligned
// and advised MADV_HUGEPAGE wherever the kernel has transparent huge pages; NORMAL_ONLY never.
TEST_F(DeviceTest, MallocHugePolicies) {
    const size_t big = (size_t{3} << 20) + 5;
    const bool thp = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
    for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY}) {
        void *p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, big, policy), ACL_SUCCESS) << policy;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20), 0u) << policy;
        std::memset(p, 0x5a, big);  // every requested byte is usable (ASan checks the bounds)
        EXPECT_EQ(static_cast<unsigned char *>(p)[big - 1], 0x5a);
        if (thp) {
            EXPECT_NE(vmFlagsOf(p).find(" hg "), std::string::npos) << "policy " << policy << ": " << vmFlagsOf(p);
        }
        EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
    // NORMAL_ONLY and small sizes: the plain 64-byte alignment, and the whole size usable
    for (auto [policy, size] : {std::pair{ACL_MEM_MALLOC_NORMAL_ONLY, big}, std::pair{ACL_MEM_MALLOC_HUGE_FIRST, size_t{1} << 20}}) {
        void *p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, size, policy), ACL_SUCCESS) << policy;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << policy;
        std::memset(p, 0xa5, size);
        EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
}

TEST_F(DeviceTest, MallocErrors) {
    void *p = reinterpret_cast<void *>(0x1);
    EXPECT_NE(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_NE(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_NE(shim_aclrtMalloc(&p, 16, 8), ACL_SUCCESS);
    EXPECT_NE(shim_aclrtMalloc(&p, 16, -1), ACL_SUCCESS);
    // sizes whose rounding to the policy's alignment would wrap: refused, not a tiny block
    for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_NORMAL_ONLY}) {
        EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX - 10, policy), ACL_ERROR_BAD_ALLOC) << policy;
        EXPECT_NE(takeErr().find("cannot allocate"), std::string::npos);
    }
    EXPECT_EQ(p, reinterpret_cast<void *>(0x1)) << "a failed aclrtMalloc must not write *devPtr";
    EXPECT_NE(aclrtFree(nullptr), ACL_SUCCESS);
}

// CANN's aclrtMallocAlign32: aclrtMalloc's blocks, policies and checks under its own name.
TEST_F(DeviceTest, MallocAlign32) {
    for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY}) {
        for (size_t size : {size_t{1}, size_t{33}, (size_t{3} << 20) + 5}) {
            void *p = nullptr;
            ASSERT_EQ(aclrtMallocAlign32(&p, size, policy), ACL_SUCCESS) << policy << " " << size << ": " << takeErr();
            EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 32, 0u);
            std::memset(p, 0x3c, size);  // every requested byte is usable (ASan checks the bounds)
            EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
        }
    }
    void *p = reinterpret_cast<void *>(0x1);
    EXPECT_EQ(aclrtMallocAlign32(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtMallocAlign32: size must be > 0, got 0"), std::string::npos) << msg;
    EXPECT_EQ(aclrtMallocAlign32(&p, SIZE_MAX - 10, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_BAD_ALLOC);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtMallocAlign32: cannot allocate"), std::string::npos) << msg;
    EXPECT_EQ(p, reinterpret_cast<void *>(0x1)) << "a failed aclrtMallocAlign32 must not write *devPtr";
}

// The "device" memory is the host's: total = physical memory, free = MemAvailable, for every kind.
TEST_F(DeviceTest, GetMemInfoReportsHostMemory) {
    const size_t physical = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (int attr = ACL_DDR_MEM; attr <= ACL_HBM_MEM_P2P_HUGE1G; ++attr) {
        size_t free = 0, total = 0;
        ASSERT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(attr), &free, &total), ACL_SUCCESS) << attr << ": " << takeErr();
        EXPECT_EQ(total, physical) << attr;
        EXPECT_GT(free, 0u) << attr;
        EXPECT_LE(free, total) << attr;
    }
    size_t free = 7, total = 7;
    EXPECT_EQ(shim_aclrtGetMemInfo(12, &free, &total), ACL_ERROR_INVALID_PARAM);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtGetMemInfo: attr must be 0..11 (aclrtMemAttr), got 12"), std::string::npos) << msg;
    EXPECT_EQ(shim_aclrtGetMemInfo(-1, &free, &total), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("got -1"), std::string::npos);
    EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtGetMemInfo: free must not be NULL"), std::string::npos) << msg;
    EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free, nullptr), ACL_ERROR_INVALID_PARAM);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtGetMemInfo: total must not be NULL"), std::string::npos) << msg;
    EXPECT_EQ(free, 7u) << "a failed call writes nothing";
    EXPECT_EQ(total, 7u);
}

TEST_F(DeviceTest, MallocHost) {
    void *p = nullptr;
    ASSERT_EQ(aclrtMallocHost(&p, 100), ACL_SUCCESS);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, 100);
    EXPECT_EQ(aclrtFreeHost(p), ACL_SUCCESS);
    (void)takeErr();
    EXPECT_NE(aclrtMallocHost(nullptr, 100), ACL_SUCCESS);
    EXPECT_NE(takeErr().find("aclrtMallocHost: hostPtr must not be NULL"), std::string::npos) << "names the function and parameter";
    EXPECT_NE(aclrtFreeHost(nullptr), ACL_SUCCESS);
    EXPECT_NE(takeErr().find("aclrtFreeHost: hostPtr must not be NULL"), std::string::npos);
}

TEST_F(DeviceTest, MemcpyEveryKind) {
    std::vector<uint8_t> src(256), dst(256);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    for (auto kind : {ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                      ACL_MEMCPY_DEVICE_TO_DEVICE}) {
        std::fill(dst.begin(), dst.end(), 0);
        ASSERT_EQ(aclrtMemcpy(dst.data(), dst.size(), src.data(), src.size(), kind), ACL_SUCCESS) << kind;
        EXPECT_EQ(dst, src) << kind;
    }
}

TEST_F(DeviceTest, MemcpyThroughDeviceMemory) {
    const std::vector<float> host = {1.5f, -2.0f, 3.25f, 1e30f};
    void *dev = nullptr;
    const size_t bytes = host.size() * sizeof(float);
    ASSERT_EQ(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    std::vector<float> back(host.size());
    ASSERT_EQ(aclrtMemcpy(back.data(), bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back, host);
    EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST_F(DeviceTest, MemcpyPartialAndZeroCount) {
    std::vector<uint8_t> src(16, 5), dst(16, 9);
    ASSERT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 4, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(dst[3], 5);
    EXPECT_EQ(dst[4], 9) << "only count bytes are copied";
    EXPECT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
}

TEST_F(DeviceTest, MemcpyErrorsLeaveDestinationUntouched) {
    std::vector<uint8_t> src(16, 5), dst(16, 9);
    const std::vector<uint8_t> before = dst;
    EXPECT_NE(aclrtMemcpy(nullptr, 16, src.data(), 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_NE(aclrtMemcpy(dst.data(), 16, nullptr, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_NE(aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_NE(aclrtMemcpy(dst.data(), 8, src.data(), 9, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS) << "count > destMax";
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtMemcpy"), std::string::npos) << msg;
    EXPECT_NE(shim_aclrtMemcpy(dst.data(), 16, src.data(), 16, 9), ACL_SUCCESS)
        << "unknown copy kind";
    EXPECT_EQ(dst, before);
}

TEST_F(DeviceTest, MemsetAndErrors) {
    std::vector<uint8_t> buf(32, 0);
    ASSERT_EQ(aclrtMemset(buf.data(), buf.size(), 0x5a, 16), ACL_SUCCESS);
    EXPECT_EQ(buf[0], 0x5a);
    EXPECT_EQ(buf[15], 0x5a);
    EXPECT_EQ(buf[16], 0) << "only count bytes are set";
    EXPECT_NE(aclrtMemset(nullptr, 16, 0, 16), ACL_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_NE(aclrtMemset(buf.data(), 8, 0x11, 9), ACL_SUCCESS) << "count > maxCount";
    EXPECT_EQ(buf[0], 0x5a) << "a failed memset writes nothing";
    EXPECT_EQ(aclrtMemset(buf.data(), 8, 0x11, 0), ACL_SUCCESS);
    EXPECT_EQ(buf[0], 0x5a);
}

// ---- the stream forms of copy and fill, timeouts, run mode ----

TEST_F(DeviceTest, MemcpyAndMemsetAsyncOnAStream) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    std::vector<uint8_t> src(64), dst(64, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size(), src.data(), 48, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + 48, dst.begin()));
    EXPECT_EQ(dst[48], 0) << "only count bytes are copied";
    ASSERT_EQ(aclrtMemsetAsync(dst.data(), dst.size(), 0xa5, 8, nullptr), ACL_SUCCESS) << "the default stream";
    EXPECT_EQ(dst[7], 0xa5);
    EXPECT_EQ(dst[8], src[8]);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(DeviceTest, AsyncErrorsNameTheCallAndWriteNothing) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    std::vector<uint8_t> src(16, 5), dst(16, 9);
    const std::vector<uint8_t> before = dst;
    EXPECT_EQ(aclrtMemcpyAsync(dst.data(), 8, src.data(), 9, ACL_MEMCPY_HOST_TO_HOST, stream), ACL_ERROR_INVALID_PARAM);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtMemcpyAsync: count 9 exceeds destMax 8"), std::string::npos) << msg;
    EXPECT_EQ(aclrtMemsetAsync(nullptr, 8, 0, 8, stream), ACL_ERROR_INVALID_PARAM);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtMemsetAsync: devPtr must not be NULL"), std::string::npos) << msg;
    ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpyAsync(dst.data(), 16, src.data(), 16, ACL_MEMCPY_HOST_TO_HOST, stream), ACL_ERROR_RT_INVALID_HANDLE)
        << "a destroyed stream";
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtMemcpyAsync: not a live stream"), std::string::npos) << msg;
    EXPECT_EQ(aclrtMemsetAsync(dst.data(), 16, 0, 16, stream), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(dst, before);
}

TEST_F(DeviceTest, SynchronizeStreamWithTimeout) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, -1), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, 100), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(nullptr, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, -2), ACL_ERROR_INVALID_PARAM);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("timeout must be -1 (none) or >= 0 ms, got -2"), std::string::npos) << msg;
    ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream, -1), ACL_ERROR_RT_INVALID_HANDLE);
}

TEST_F(DeviceTest, RunModeIsHost) {
    aclrtRunMode mode = ACL_DEVICE;
    ASSERT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
    EXPECT_EQ(mode, ACL_HOST);
    EXPECT_EQ(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_FALSE(takeErr().empty());
}

// ---- contexts ----

TEST_F(DeviceTest, SetDeviceMakesTheDefaultContextCurrent) {
    aclrtContext ctx = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&ctx), ACL_ERROR_RT_CONTEXT_NULL) << "no device set yet";
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtGetCurrentContext: no context on this thread"), std::string::npos) << msg;
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtGetCurrentContext(&ctx), ACL_SUCCESS);
    ASSERT_NE(ctx, nullptr);
    aclrtContext again = nullptr;
    ASSERT_EQ(aclrtGetCurrentContext(&again), ACL_SUCCESS);
    EXPECT_EQ(again, ctx);
    EXPECT_EQ(aclrtDestroyContext(ctx), ACL_ERROR_INVALID_PARAM) << "the default context is the device's";
    EXPECT_NE(takeErr().find("aclrtResetDevice"), std::string::npos);
    ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetCurrentContext(&ctx), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(DeviceTest, CreatedContextsAreCurrentUntilDestroyed) {
    aclrtContext a = nullptr, b = nullptr, cur = nullptr;
    ASSERT_EQ(aclrtCreateContext(&a, 0), ACL_SUCCESS);
    int32_t dev = -1;
    ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS) << "creating a context sets its device";
    EXPECT_EQ(dev, 0);
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_EQ(cur, a);
    ASSERT_EQ(aclrtCreateContext(&b, 0), ACL_SUCCESS);
    EXPECT_NE(a, b);
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_EQ(cur, b);
    ASSERT_EQ(aclrtSetCurrentContext(a), ACL_SUCCESS);
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_EQ(cur, a);
    // Another thread has no context until it sets one; a's is its own from then on.
    aclError other = ACL_SUCCESS, otherSet = -1;
    aclrtContext otherCur = nullptr;
    std::thread([&] {
        aclrtContext c = nullptr;
        other = aclrtGetCurrentContext(&c);
        otherSet = aclrtSetCurrentContext(b);
        (void)aclrtGetCurrentContext(&otherCur);
    }).join();
    EXPECT_EQ(other, ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(otherSet, ACL_SUCCESS);
    EXPECT_EQ(otherCur, b);
    (void)takeErr();
    // Destroying the current context leaves the thread on the device's default one.
    ASSERT_EQ(aclrtDestroyContext(a), ACL_SUCCESS);
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_NE(cur, a);
    EXPECT_NE(cur, b);
    EXPECT_EQ(aclrtSetCurrentContext(a), ACL_ERROR_INVALID_PARAM) << "destroyed";
    EXPECT_NE(takeErr().find("aclrtSetCurrentContext: not a live context"), std::string::npos);
    EXPECT_EQ(aclrtDestroyContext(a), ACL_ERROR_INVALID_PARAM) << "twice";
    EXPECT_EQ(aclrtDestroyContext(b), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();
}

TEST_F(DeviceTest, CreateContextErrors) {
    aclrtContext ctx = nullptr;
    EXPECT_EQ(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtCreateContext: context must not be NULL"), std::string::npos);
    EXPECT_EQ(aclrtCreateContext(&ctx, 1), ACL_ERROR_RT_INVALID_DEVICEID);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("deviceId must be 0 (one CPU device), got 1"), std::string::npos) << msg;
    EXPECT_EQ(ctx, nullptr) << "nothing written on failure";
    EXPECT_EQ(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();
}

}  // namespace
