// Max pooling through the mask, the way a CANN training step does it, written like CANN's published
// samples (aclInit, stream, device buffers, two-phase calls, synchronize, copy back):
//   1. aclnnMaxPool2dWithMask: out and the device mask of a 2x2 / stride-2 pooling of a 4x4 plane;
//   2. aclnnMaxPool2dWithMaskBackward: the gradient goes to each window's maximum, read from the mask;
//   3. aclnnMaxUnpool2dBackward: the gradient of an unpooling is gathered at the argmax indices;
//   4. the same call with an index outside the 4x4 plane fails with 361001 in phase 2;
//   5. aclnnMaxPool2dWithIndices, CANN's A2/A3 variant: INT32 indices of the pooled shape, PyTorch's
//      argmax (0, 7, 13, 15 here); other products refuse it with 161002.
// The mask's layout is the product's (int32 argmax on Atlas A2/A3, a bit mask on the training
// series); the client never looks inside it.
// Build: g++ main.cpp -I$PREFIX/include -L$PREFIX/lib -lascendcl -lnnopbase -lopapi
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include <cstring>

#include "aclnnop/aclnn_max_pool2d_with_indices.h"
#include "aclnnop/aclnn_max_pool2d_with_mask.h"
#include "aclnnop/aclnn_max_pool2d_with_mask_backward.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"

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

template <typename T>
static int CreateAclTensor(const std::vector<T> &hostData, const std::vector<int64_t> &shape, void **deviceAddr,
                           aclDataType dataType, aclTensor **tensor, aclFormat format = ACL_FORMAT_NCHW) {
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

template <typename T>
static std::vector<T> CopyBack(void *deviceAddr, size_t n) {
    std::vector<T> host(n);
    aclrtMemcpy(host.data(), n * sizeof(T), deviceAddr, n * sizeof(T), ACL_MEMCPY_DEVICE_TO_HOST);
    return host;
}

// Runs phase 2 with a workspace of the size phase 1 asked for.
static aclnnStatus RunPhase2(aclnnStatus (*run)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t size,
                             aclOpExecutor *executor, aclrtStream stream) {
    void *workspace = nullptr;
    if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return -1;
    aclnnStatus ret = run(workspace, size, executor, stream);
    if (ret == ACL_SUCCESS) ret = aclrtSynchronizeStream(stream);
    if (workspace) aclrtFree(workspace);
    return ret;
}

int main() {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return 1);
    aclrtStream stream;
    CHECK_RET(aclrtSetDevice(0) == ACL_SUCCESS && aclrtCreateStream(&stream) == ACL_SUCCESS, return 1);
    LOG_PRINT("SoC: %s\n", aclrtGetSocName());

    // A 4x4 plane whose window maxima sit at different corners of the 2x2 windows.
    const std::vector<int64_t> selfShape = {1, 1, 4, 4}, outShape = {1, 1, 2, 2};
    const std::vector<int64_t> maskShape = {1, 1, 4, (2 * 2 + 15) / 16 * 32 + 32};  // (N, C, kH*kW, maskW)
    const std::vector<float> selfHost = {9, 1, 2, 3,   //
                                         0, 0, 0, 8,   //
                                         4, 0, 0, 0,   //
                                         5, 6, 0, 7};
    const std::vector<float> expectOut = {9, 8, 6, 7};
    const std::vector<float> gradOutHost = {1, 2, 3, 4};
    const std::vector<float> expectGradIn = {1, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4};
    void *selfAddr = nullptr, *outAddr = nullptr, *maskAddr = nullptr, *gradOutAddr = nullptr, *gradInAddr = nullptr;
    aclTensor *self = nullptr, *out = nullptr, *mask = nullptr, *gradOut = nullptr, *gradIn = nullptr;
    CreateAclTensor(selfHost, selfShape, &selfAddr, ACL_FLOAT, &self);
    CreateAclTensor(std::vector<float>(4, 0), outShape, &outAddr, ACL_FLOAT, &out);
    CreateAclTensor(std::vector<int8_t>(GetShapeSize(maskShape), 0), maskShape, &maskAddr, ACL_INT8, &mask);
    CreateAclTensor(gradOutHost, outShape, &gradOutAddr, ACL_FLOAT, &gradOut);
    CreateAclTensor(std::vector<float>(16, -1), selfShape, &gradInAddr, ACL_FLOAT, &gradIn);
    const int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
    aclIntArray *kernel = aclCreateIntArray(two, 2), *stride = aclCreateIntArray(two, 2);
    aclIntArray *padding = aclCreateIntArray(zero, 2), *dilation = aclCreateIntArray(one, 2);
    int failures = 0;

    // 1. forward: out and the mask
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    ret = aclnnMaxPool2dWithMaskGetWorkspaceSize(self, kernel, stride, padding, dilation, false, out, mask,
                                                 &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxPool2dWithMaskGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg()); return 1);
    ret = RunPhase2(aclnnMaxPool2dWithMask, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxPool2dWithMask failed. ERROR: %d\n", ret); return 1);
    const auto outHost = CopyBack<float>(outAddr, 4);
    LOG_PRINT("max pool out:        %g %g %g %g\n", outHost[0], outHost[1], outHost[2], outHost[3]);
    failures += outHost != expectOut;

    // 2. backward through the mask
    ret = aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(gradOut, self, mask, kernel, stride, padding, dilation, false,
                                                         gradIn, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg()); return 1);
    ret = RunPhase2(aclnnMaxPool2dWithMaskBackward, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxPool2dWithMaskBackward failed. ERROR: %d\n", ret); return 1);
    const auto gradInHost = CopyBack<float>(gradInAddr, 16);
    LOG_PRINT("mask backward grad:");
    for (float v : gradInHost) LOG_PRINT(" %g", v);
    LOG_PRINT("\n");
    failures += gradInHost != expectGradIn;

    // 3. unpool backward: out[i] = gradOutput[indices[i]] (flat in the 4x4 plane, PyTorch's convention)
    const std::vector<float> upGradHost = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    void *upGradAddr = nullptr, *idxAddr = nullptr, *badIdxAddr = nullptr, *upOutAddr = nullptr;
    aclTensor *upGrad = nullptr, *idx = nullptr, *badIdx = nullptr, *upOut = nullptr;
    CreateAclTensor(upGradHost, selfShape, &upGradAddr, ACL_FLOAT, &upGrad);
    CreateAclTensor(std::vector<int64_t>{0, 7, 13, 15}, outShape, &idxAddr, ACL_INT64, &idx);
    CreateAclTensor(std::vector<int64_t>{0, 7, 16, 15}, outShape, &badIdxAddr, ACL_INT64, &badIdx);
    CreateAclTensor(std::vector<float>(4, -1), outShape, &upOutAddr, ACL_FLOAT, &upOut);
    const int64_t size4[2] = {4, 4};
    aclIntArray *outputSize = aclCreateIntArray(size4, 2);
    ret = aclnnMaxUnpool2dBackwardGetWorkspaceSize(upGrad, out, idx, outputSize, upOut, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxUnpool2dBackwardGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg()); return 1);
    ret = RunPhase2(aclnnMaxUnpool2dBackward, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxUnpool2dBackward failed. ERROR: %d\n", ret); return 1);
    const auto upOutHost = CopyBack<float>(upOutAddr, 4);
    LOG_PRINT("unpool backward:     %g %g %g %g\n", upOutHost[0], upOutHost[1], upOutHost[2], upOutHost[3]);
    failures += upOutHost != std::vector<float>{0, 7, 13, 15};

    // 4. an index outside the plane is a data error of phase 2, never a read out of bounds
    ret = aclnnMaxUnpool2dBackwardGetWorkspaceSize(upGrad, out, badIdx, outputSize, upOut, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("phase 1 with a bad index failed. ERROR: %d\n", ret); return 1);
    ret = RunPhase2(aclnnMaxUnpool2dBackward, workspaceSize, executor, stream);
    LOG_PRINT("index 16 of a 4x4 plane: status %d, %s\n", ret, aclGetRecentErrMsg());
    failures += ret != 361001;

    // 5. the int32-index variant, where the product has it
    void *i32Addr = nullptr;
    aclTensor *i32 = nullptr;
    CreateAclTensor(std::vector<int32_t>(4, -9), outShape, &i32Addr, ACL_INT32, &i32);
    const bool a2a3 = std::strcmp(aclrtGetSocName(), "Ascend910B") == 0 || std::strcmp(aclrtGetSocName(), "Ascend910_93") == 0;
    ret = aclnnMaxPool2dWithIndicesGetWorkspaceSize(self, kernel, stride, padding, dilation, false, out, i32,
                                                    &workspaceSize, &executor);
    if (a2a3) {
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMaxPool2dWithIndicesGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg()); return 1);
        ret = RunPhase2(aclnnMaxPool2dWithIndices, workspaceSize, executor, stream);
        const auto i32Host = CopyBack<int32_t>(i32Addr, 4);
        LOG_PRINT("int32 indices:       %d %d %d %d\n", i32Host[0], i32Host[1], i32Host[2], i32Host[3]);
        failures += ret != ACL_SUCCESS || i32Host != std::vector<int32_t>{0, 7, 13, 15};
    } else {
        LOG_PRINT("aclnnMaxPool2dWithIndices: status %d, %s\n", ret, aclGetRecentErrMsg());
        failures += ret != 161002;
    }

    for (aclTensor *t : {self, out, mask, gradOut, gradIn, upGrad, idx, badIdx, upOut, i32}) aclDestroyTensor(t);
    for (aclIntArray *a : {kernel, stride, padding, dilation, outputSize}) aclDestroyIntArray(a);
    for (void *p : {selfAddr, outAddr, maskAddr, gradOutAddr, gradInAddr, upGradAddr, idxAddr, badIdxAddr, upOutAddr, i32Addr})
        aclrtFree(p);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    LOG_PRINT("%s\n", failures == 0 ? "max pooling sample: results as documented" : "max pooling sample: WRONG RESULTS");
    return failures == 0 ? 0 : 1;
}
