// A client written the way CANN's published aclnn samples are: aclInit, device, stream, device
// buffers, aclCreateTensor, the two-phase call, synchronize, copy back, release. It builds unedited
// against an Ascend toolkit or against aclnn-cpu:
//   g++ main.cpp -I$PREFIX/include -L$PREFIX/lib -lascendcl -lnnopbase -lopapi
// Argument "bf16" switches the tensors to BFLOAT16 (rejected on the Atlas training series).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...) printf(message, ##__VA_ARGS__)

static int64_t GetShapeSize(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

static int Init(int32_t deviceId, aclrtStream *stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

template <typename T>
static int CreateAclTensor(const std::vector<T> &hostData, const std::vector<int64_t> &shape, void **deviceAddr,
                           aclDataType dataType, aclTensor **tensor, aclFormat format = ACL_FORMAT_ND) {
    auto size = GetShapeSize(shape) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, format, shape.data(),
                              shape.size(), *deviceAddr);
    return 0;
}

// bfloat16 <-> float for the host side of the sample (truncation is exact for these small integers).
static uint16_t ToBf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
}
static float FromBf16(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

int main(int argc, char **argv) {
    const bool bf16 = argc > 1 && std::strcmp(argv[1], "bf16") == 0;
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    LOG_PRINT("SoC: %s, dtype: %s\n", aclrtGetSocName(), bf16 ? "BFLOAT16" : "FLOAT");

    // 2x2 average pooling with stride 2 over a 1x2x4x4 input: every input element receives a quarter
    // of the gradient of the one window covering it.
    std::vector<int64_t> gradOutputShape = {1, 2, 2, 2};
    std::vector<int64_t> selfShape = {1, 2, 4, 4};
    std::vector<int64_t> kernelDims = {2, 2}, strideDims = {2, 2}, paddingDims = {0, 0};
    std::vector<float> gradOutputHost = {4, 8, 12, 16, -4, -8, -12, -16};
    const aclDataType dt = bf16 ? ACL_BF16 : ACL_FLOAT;

    void *gradOutputDev = nullptr, *selfDev = nullptr, *gradInputDev = nullptr;
    aclTensor *gradOutput = nullptr, *self = nullptr, *gradInput = nullptr;
    if (bf16) {
        std::vector<uint16_t> go, zeros(GetShapeSize(selfShape), 0);
        for (float v : gradOutputHost) go.push_back(ToBf16(v));
        ret = CreateAclTensor(go, gradOutputShape, &gradOutputDev, dt, &gradOutput, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        ret = CreateAclTensor(zeros, selfShape, &selfDev, dt, &self, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        ret = CreateAclTensor(zeros, selfShape, &gradInputDev, dt, &gradInput, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
    } else {
        std::vector<float> zeros(GetShapeSize(selfShape), 0.0f);
        ret = CreateAclTensor(gradOutputHost, gradOutputShape, &gradOutputDev, dt, &gradOutput, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        ret = CreateAclTensor(zeros, selfShape, &selfDev, dt, &self, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
        ret = CreateAclTensor(zeros, selfShape, &gradInputDev, dt, &gradInput, ACL_FORMAT_NCHW);
        CHECK_RET(ret == ACL_SUCCESS, return ret);
    }
    aclIntArray *kernelSize = aclCreateIntArray(kernelDims.data(), 2);
    aclIntArray *stride = aclCreateIntArray(strideDims.data(), 2);
    aclIntArray *padding = aclCreateIntArray(paddingDims.data(), 2);

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    ret = aclnnAvgPool2dBackwardGetWorkspaceSize(gradOutput, self, kernelSize, stride, padding, false, true, 0, 0,
                                                 gradInput, &workspaceSize, &executor);
    if (ret != ACL_SUCCESS) {
        const char *msg = aclGetRecentErrMsg();
        LOG_PRINT("aclnnAvgPool2dBackwardGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, msg ? msg : "");
        return ret;
    }
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnAvgPool2dBackward(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnAvgPool2dBackward failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    const int64_t n = GetShapeSize(selfShape);
    std::vector<float> out(n);
    if (bf16) {
        std::vector<uint16_t> raw(n);
        ret = aclrtMemcpy(raw.data(), n * 2, gradInputDev, n * 2, ACL_MEMCPY_DEVICE_TO_HOST);
        for (int64_t i = 0; i < n; ++i) out[i] = FromBf16(raw[i]);
    } else {
        ret = aclrtMemcpy(out.data(), n * 4, gradInputDev, n * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    }
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
    int wrong = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = i / 16, h = (i / 4) % 4, w = i % 4;
        const float expect = gradOutputHost[c * 4 + (h / 2) * 2 + (w / 2)] / 4.0f;
        if (out[i] != expect) ++wrong;
        LOG_PRINT("out result[%ld] is: %f%s\n", static_cast<long>(i), out[i], out[i] == expect ? "" : "  <-- expected a different value");
    }
    LOG_PRINT("%s: %ld values checked, %d wrong\n", wrong ? "FAILED" : "PASSED", static_cast<long>(n), wrong);

    aclDestroyTensor(gradOutput);
    aclDestroyTensor(self);
    aclDestroyTensor(gradInput);
    aclDestroyIntArray(kernelSize);
    aclDestroyIntArray(stride);
    aclDestroyIntArray(padding);
    aclrtFree(gradOutputDev);
    aclrtFree(selfDev);
    aclrtFree(gradInputDev);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return wrong ? 1 : 0;
}
