// The rest of CANN's runtime calls a ported program may make: 2-D copies, cached memory, P2P
// policies, configured and forced streams, forced device reset, context options, FLOAT16
// conversions, and CANN's status codes by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn_cpu/numeric.hpp"
#include "enum_shims.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

using CannCallsTest = coretest::InitializedRuntimeTest;

// ---- 2-D copies ----

TEST_F(CannCallsTest, Memcpy2dCopiesRowsBetweenPitches) {
    constexpr size_t kRows = 5, kWidth = 7, kSpitch = 11, kDpitch = 9;
    std::vector<uint8_t> src(kRows * kSpitch), dst(kRows * kDpitch, 0xee);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + 3);
    ASSERT_EQ(aclrtMemcpy2d(dst.data(), kDpitch, src.data(), kSpitch, kWidth, kRows, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_SUCCESS)
        << takeErr();
    for (size_t r = 0; r < kRows; ++r)
        for (size_t c = 0; c < kDpitch; ++c)
            EXPECT_EQ(dst[r * kDpitch + c], c < kWidth ? src[r * kSpitch + c] : 0xee) << r << "," << c;

    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    std::vector<uint8_t> back(kRows * kSpitch, 0);
    ASSERT_EQ(aclrtMemcpy2dAsync(back.data(), kSpitch, dst.data(), kDpitch, kWidth, kRows, ACL_MEMCPY_DEVICE_TO_HOST,
                                 stream),
              ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    for (size_t r = 0; r < kRows; ++r)
        for (size_t c = 0; c < kWidth; ++c) EXPECT_EQ(back[r * kSpitch + c], src[r * kSpitch + c]);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(CannCallsTest, Memcpy2dRulesAndNothingWrittenOnFailure) {
    std::vector<uint8_t> src(64, 1), dst(64, 0);
    const std::vector<uint8_t> before = dst;
    // CANN allows the 2-D copies HOST_TO_DEVICE and DEVICE_TO_HOST only.
    for (int kind : {0, 3, 4, 9}) {
        EXPECT_EQ(shim_aclrtMemcpy2d(dst.data(), 8, src.data(), 8, 8, 4, kind), ACL_ERROR_INVALID_PARAM) << kind;
        const std::string msg = takeErr();
        EXPECT_NE(msg.find("aclrtMemcpy2d: kind must be ACL_MEMCPY_HOST_TO_DEVICE (1) or ACL_MEMCPY_DEVICE_TO_HOST (2), "
                           "got " + std::to_string(kind)),
                  std::string::npos)
            << msg;
    }
    EXPECT_EQ(aclrtMemcpy2d(dst.data(), 4, src.data(), 8, 5, 2, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("width must be <= dpitch 4, got 5"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy2d(dst.data(), 8, src.data(), 4, 5, 2, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("width must be <= spitch 4, got 5"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy2d(dst.data(), 1, src.data(), 1, 1, 5242881, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("height must be <= 5242880, got 5242881"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy2d(nullptr, 8, src.data(), 8, 8, 1, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("dst must not be NULL"), std::string::npos);
    aclrtStream dead = nullptr;
    ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy2dAsync(dst.data(), 8, src.data(), 8, 8, 4, ACL_MEMCPY_HOST_TO_DEVICE, dead),
              ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtMemcpy2dAsync: not a live stream"), std::string::npos);
    // CANN requires a positive width and height.
    EXPECT_EQ(aclrtMemcpy2d(dst.data(), 8, src.data(), 8, 0, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMemcpy2d: width must be > 0, got 0"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy2dAsync(dst.data(), 8, src.data(), 8, 8, 0, ACL_MEMCPY_HOST_TO_DEVICE, nullptr),
              ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMemcpy2dAsync: height must be > 0, got 0"), std::string::npos);
    EXPECT_EQ(dst, before);
}

TEST_F(CannCallsTest, MemcpyDefaultKindLetsTheAddressesDecide) {
    std::vector<uint8_t> src(32), dst(32, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i + 1);
    ASSERT_EQ(aclrtMemcpy(dst.data(), dst.size(), src.data(), src.size(), ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    EXPECT_EQ(dst, src);
    EXPECT_EQ(shim_aclrtMemcpy(dst.data(), dst.size(), src.data(), src.size(), 5), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("kind must be 0..4 (aclrtMemcpyKind), got 5"), std::string::npos);
}

// ---- memory kinds ----

TEST_F(CannCallsTest, CachedMemoryAndP2pPolicies) {
    void *p = nullptr;
    ASSERT_EQ(aclrtMallocCached(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::memset(p, 0x5a, 4096);
    EXPECT_EQ(aclrtMemFlush(p, 4096), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemInvalidate(p, 4096), ACL_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char *>(p)[4095], 0x5a) << "flush and invalidate keep the data";
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemFlush(nullptr, 16), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMemFlush: devPtr must not be NULL"), std::string::npos);
    EXPECT_EQ(aclrtMemInvalidate(nullptr, 16), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();
    // CANN requires a positive size.
    EXPECT_EQ(aclrtMemFlush(&p, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMemFlush: size must be > 0, got 0"), std::string::npos);
    EXPECT_EQ(aclrtMemInvalidate(&p, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMemInvalidate: size must be > 0, got 0"), std::string::npos);
    EXPECT_EQ(aclrtMallocCached(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtMallocCached: devPtr must not be NULL"), std::string::npos);
    for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P, ACL_MEM_MALLOC_NORMAL_ONLY_P2P}) {
        void *q = nullptr;
        ASSERT_EQ(aclrtMalloc(&q, 3u << 20, policy), ACL_SUCCESS) << policy;
        std::memset(q, 1, 3u << 20);
        // Huge-page policies align a large block to 2 MB, as their plain counterparts do.
        if (policy != ACL_MEM_MALLOC_NORMAL_ONLY_P2P) {
            EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % (2u << 20), 0u) << policy;
        }
        EXPECT_EQ(aclrtFree(q), ACL_SUCCESS);
    }
    // 1 GB huge pages are the host's huge pages; a memory type bit chooses nothing.
    for (int policy : std::initializer_list<int>{ACL_MEM_MALLOC_HUGE1G_ONLY, ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
                       ACL_MEM_MALLOC_HUGE_ONLY | ACL_MEM_TYPE_HIGH_BAND_WIDTH, ACL_MEM_TYPE_LOW_BAND_WIDTH}) {
        void *q = nullptr;
        ASSERT_EQ(shim_aclrtMalloc(&q, 3u << 20, policy), ACL_SUCCESS) << policy << ": " << takeErr();
        std::memset(q, 1, 3u << 20);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % (2u << 20), 0u) << policy << ": huge pages, as HUGE_ONLY";
        EXPECT_EQ(aclrtFree(q), ACL_SUCCESS);
    }
    p = nullptr;
    EXPECT_EQ(shim_aclrtMalloc(&p, 16, 8), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("policy must be a page policy 0..7, optionally | ACL_MEM_TYPE_LOW_BAND_WIDTH or "
                             "ACL_MEM_TYPE_HIGH_BAND_WIDTH (aclrtMemMallocPolicy), got 8"),
              std::string::npos);
    EXPECT_EQ(shim_aclrtMalloc(&p, 16, ACL_MEM_ACCESS_USER_SPACE_READONLY), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    EXPECT_NE(takeErr().find("ACL_MEM_ACCESS_USER_SPACE_READONLY"), std::string::npos);
    EXPECT_EQ(p, nullptr) << "a refused allocation writes nothing";
}

// ---- streams and devices ----

TEST_F(CannCallsTest, ConfiguredStreamsAreStreams) {
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC), ACL_SUCCESS);
    std::vector<uint8_t> a(8, 3), b(8, 0);
    EXPECT_EQ(aclrtMemcpyAsync(b.data(), 8, a.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    EXPECT_EQ(b, a);
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStreamForce(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStreamForce(s), ACL_ERROR_RT_INVALID_HANDLE) << "twice";
    EXPECT_NE(takeErr().find("aclrtDestroyStreamForce: not a live stream"), std::string::npos);
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 7, 0), ACL_SUCCESS) << "the lowest priority";
    EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    aclrtStream none = nullptr;
    EXPECT_EQ(aclrtCreateStreamWithConfig(&none, 8, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("priority must be 0 (highest) .. 7, got 8"), std::string::npos);
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(aclrtCreateStreamWithConfig(nullptr, 0, 0), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();
    // Every documented flag is taken; other bits are the runtime's ACL_ERROR_RT_PARAM_INVALID.
    ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE | ACL_STREAM_CPU_SCHEDULE |
                                                      ACL_STREAM_DEVICE_USE_ONLY),
              ACL_SUCCESS)
        << takeErr();
    EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtCreateStreamWithConfig(&none, 0, 0x40), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("flag must combine ACL_STREAM_* bits (0x1 .. 0x20), got 64"), std::string::npos);
    EXPECT_EQ(none, nullptr);
    // A NULL stream is an argument error (the acl layer's), not a stale handle.
    EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtDestroyStream: stream must not be NULL"), std::string::npos);
    EXPECT_EQ(aclrtDestroyStreamForce(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtDestroyStreamForce: stream must not be NULL"), std::string::npos);
}

TEST_F(CannCallsTest, ResetDeviceForce) {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtResetDeviceForce(0), ACL_SUCCESS);
    int32_t dev = 0;
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_INVALID_DEVICEID) << "no device set any more";
    (void)takeErr();
    EXPECT_EQ(aclrtResetDeviceForce(3), ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_NE(takeErr().find("aclrtResetDeviceForce: deviceId must be 0 (one CPU device), got 3"), std::string::npos);
}

// ---- context options ----

TEST_F(CannCallsTest, SysParamOptionsBelongToTheCurrentContext) {
    int64_t v = -1;
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_CONTEXT_NULL) << "no context yet";
    EXPECT_NE(takeErr().find("aclrtCtxGetSysParamOpt: no context on this thread"), std::string::npos);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);
    EXPECT_NE(takeErr().find("aclrtCtxGetSysParamOpt: option 0 has not been set in the current context"),
              std::string::npos);
    EXPECT_EQ(v, -1) << "an unset option writes nothing";
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
    EXPECT_EQ(v, 1);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET)
        << "options are separate";
    (void)takeErr();

    aclrtContext mine = nullptr;
    ASSERT_EQ(aclrtCreateContext(&mine, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET)
        << "a new context has its own options";
    (void)takeErr();
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, 1), ACL_SUCCESS) << takeErr();
    int64_t other = -1;
    std::thread([&] {  // another thread on the same context sees its options
        (void)aclrtSetCurrentContext(mine);
        (void)aclrtCtxGetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, &other);
    }).join();
    EXPECT_EQ(other, 1);
    ASSERT_EQ(aclrtDestroyContext(mine), ACL_SUCCESS);
    ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS) << "back on the default context";
    EXPECT_EQ(v, 1);

    // Values: the runtime's ACL_ERROR_RT_PARAM_INVALID (deterministic levels 0..3, others 0 or 1).
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 3), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 4), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("aclrtCtxSetSysParamOpt: value must be 0..3 for this opt, got 4"), std::string::npos);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, 2), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("value must be 0..1 for this opt, got 2"), std::string::npos);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, -1), ACL_ERROR_RT_PARAM_INVALID);
    (void)takeErr();
    // Options: the acl layer's ACL_ERROR_INVALID_PARAM.
    EXPECT_EQ(shim_aclrtCtxSetSysParamOpt(3, 1), ACL_ERROR_INVALID_PARAM);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("opt must be ACL_OPT_DETERMINISTIC (0), ACL_OPT_ENABLE_DEBUG_KERNEL (1) or "
                       "ACL_OPT_STRONG_CONSISTENCY (2), got 3"),
              std::string::npos)
        << msg;
    EXPECT_EQ(shim_aclrtCtxGetSysParamOpt(-1, &v), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();
    ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
    EXPECT_EQ(v, 3) << "rejected calls change nothing";
}

// The process's options: no context needed, apart from every context's.
TEST_F(CannCallsTest, ProcessSysParamOptionsStandApart) {
    int64_t v = -1;
    EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);
    EXPECT_NE(takeErr().find("aclrtGetSysParamOpt: option 1 has not been set (aclrtSetSysParamOpt)"), std::string::npos);
    ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, 1), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &v), ACL_SUCCESS);
    EXPECT_EQ(v, 1);
    EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 9), ACL_ERROR_RT_PARAM_INVALID);
    (void)takeErr();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET)
        << "the context's options are its own";
    (void)takeErr();
}

// CANN's host conversions (acl_base.h): IEEE round-to-nearest-even for every finite value, and
// saturation where IEEE has infinities and NaN.
TEST_F(CannCallsTest, Float16ConversionsRoundTripEveryFiniteValueAndSaturate) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const auto bits = static_cast<aclFloat16>(h);
        const float f = aclFloat16ToFloat(bits);
        ASSERT_TRUE(std::isfinite(f)) << std::hex << h;
        if ((h & 0x7c00) == 0x7c00) {  // an infinity or NaN code: a finite number of exponent 16
            const float expect = std::ldexp(1.0f + static_cast<float>(h & 0x3ff) / 1024.0f, 16);
            EXPECT_EQ(f, (h & 0x8000) ? -expect : expect) << std::hex << h;
            EXPECT_EQ(aclFloatToFloat16(f), (h & 0x8000) ? 0xfbff : 0x7bff) << std::hex << h << ": beyond 65504";
            continue;
        }
        ASSERT_EQ(aclFloatToFloat16(f), bits) << std::hex << h;
    }
    EXPECT_EQ(aclFloat16ToFloat(0x3c00), 1.0f);
    EXPECT_EQ(aclFloat16ToFloat(0xc000), -2.0f);
    EXPECT_EQ(aclFloat16ToFloat(0x0001), std::ldexp(1.0f, -24)) << "the smallest subnormal";
    EXPECT_EQ(aclFloat16ToFloat(0x7c00), 65536.0f);
    EXPECT_EQ(aclFloat16ToFloat(0xfc00), -65536.0f);
    EXPECT_EQ(aclFloat16ToFloat(0x7e00), 98304.0f);
    EXPECT_EQ(aclFloatToFloat16(65504.0f), 0x7bff);
    EXPECT_EQ(aclFloatToFloat16(65520.0f), 0x7bff) << "past the largest value: saturated, not infinity";
    EXPECT_EQ(aclFloatToFloat16(1e6f), 0x7bff);
    EXPECT_EQ(aclFloatToFloat16(std::numeric_limits<float>::infinity()), 0x7bff);
    EXPECT_EQ(aclFloatToFloat16(-std::numeric_limits<float>::infinity()), 0xfbff);
    EXPECT_EQ(aclFloatToFloat16(std::numeric_limits<float>::quiet_NaN()), 0x7bff);
    EXPECT_EQ(aclFloatToFloat16(-std::numeric_limits<float>::quiet_NaN()), 0xfbff) << "NaN by its sign bit";
    EXPECT_EQ(aclFloatToFloat16(1.0f + std::ldexp(1.0f, -11)), 0x3c00) << "a tie rounds to even";
    EXPECT_EQ(aclFloatToFloat16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02) << "a tie rounds to even";
    EXPECT_EQ(aclFloatToFloat16(-0.0f), 0x8000);
    EXPECT_EQ(aclFloatToFloat16(std::ldexp(1.0f, -25)), 0x0000) << "half the smallest subnormal: a tie, to even";
    EXPECT_EQ(aclFloatToFloat16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
    // Finite values in range: the operators' own conversion, one mechanism.
    for (float f : {0.1f, -3.14159f, 1e-6f, 6e4f, 5.9604645e-8f, 2.9802322e-8f})
        EXPECT_EQ(aclFloatToFloat16(f), acp::float_to_half(f)) << f;
}

// ---- names ----

TEST_F(CannCallsTest, StatusCodesHaveCannValues) {
    EXPECT_EQ(ACL_ERROR_INVALID_DEVICE, 200002);
    EXPECT_EQ(ACL_ERROR_RT_INVALID_DEVICEID, 107001);
    EXPECT_EQ(ACL_ERROR_RT_INVALID_HANDLE, 107017);
    EXPECT_EQ(ACL_ERROR_RT_STREAM_NOT_FOUND, ACL_ERROR_RT_INVALID_HANDLE) << "the earlier name still compiles";
    EXPECT_EQ(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, 107006);
    EXPECT_EQ(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, 107007);
    EXPECT_EQ(ACL_ERROR_FEATURE_UNSUPPORTED, 200006);
    EXPECT_EQ(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 207000);
    EXPECT_EQ(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 507046);
    EXPECT_EQ(aclDataTypeSize(ACL_HIFLOAT8), 1u);
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1u);
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT4_E2M1), 0u) << "no whole-byte size";
}

}  // namespace
