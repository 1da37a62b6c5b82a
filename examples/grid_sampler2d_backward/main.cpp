// A client written the way CANN's published aclnn samples are, for aclnnGridSampler2DBackward:
// aclInit, device, stream, device buffers, aclCreateTensor, the two-phase call, synchronize, copy
// back, release. It builds unedited against an Ascend toolkit or against aclnn-cpu:
//   g++ main.cpp -I$PREFIX/include -L$PREFIX/lib -lascendcl -lnnopbase -lopapi
// A 2x2 input sampled bilinearly (alignCorners) at two grid points; the results are checked
// against values computed by hand (and by PyTorch's grid_sampler_2d_backward):
//   default   zeros padding: the centre (0, 0) and the corner (-1, -1)
//   "border"  border padding: (0.5, -0.25) and (1.5, 0), whose x is clipped to the border pixel,
//             so its x gradient is 0 (PyTorch's convention)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"

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
                           aclDataType dataType, aclTensor **tensor) {
    auto size = GetShapeSize(shape) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), *deviceAddr);
    return 0;
}

static int CheckValues(const char *name, const std::vector<float> &got, const std::vector<float> &expect) {
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const bool ok = std::fabs(got[i] - expect[i]) <= 1e-6f;
        if (!ok) ++wrong;
        LOG_PRINT("%s[%zu] is: %f%s\n", name, i, got[i], ok ? "" : "  <-- expected a different value");
    }
    return wrong;
}

int main(int argc, char **argv) {
    const bool border = argc > 1 && std::strcmp(argv[1], "border") == 0;
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    LOG_PRINT("SoC: %s, bilinear, %s padding, alignCorners\n", aclrtGetSocName(), border ? "border" : "zeros");

    std::vector<int64_t> inputShape = {1, 1, 2, 2}, gridShape = {1, 1, 2, 2}, gradOutputShape = {1, 1, 1, 2};
    std::vector<float> inputHost = {1, 2, 3, 4};
    std::vector<float> gridHost = border ? std::vector<float>{0.5f, -0.25f, 1.5f, 0.0f} : std::vector<float>{0, 0, -1, -1};
    std::vector<float> gradOutputHost = {1, 2};
    std::vector<float> zeros(4, 0.0f);
    const std::vector<float> expectInputGrad =
        border ? std::vector<float>{0.15625f, 1.46875f, 0.09375f, 1.28125f} : std::vector<float>{2.25f, 0.25f, 0.25f, 0.25f};
    const std::vector<float> expectGridGrad = border ? std::vector<float>{0.5f, 1.0f, 0.0f, 2.0f} : std::vector<float>{0.5f, 1.0f, 1.0f, 2.0f};

    void *gradOutputDev = nullptr, *inputDev = nullptr, *gridDev = nullptr, *inputGradDev = nullptr, *gridGradDev = nullptr;
    aclTensor *gradOutput = nullptr, *input = nullptr, *grid = nullptr, *inputGrad = nullptr, *gridGrad = nullptr;
    ret = CreateAclTensor(gradOutputHost, gradOutputShape, &gradOutputDev, ACL_FLOAT, &gradOutput);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(inputHost, inputShape, &inputDev, ACL_FLOAT, &input);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(gridHost, gridShape, &gridDev, ACL_FLOAT, &grid);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(zeros, inputShape, &inputGradDev, ACL_FLOAT, &inputGrad);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(zeros, gridShape, &gridGradDev, ACL_FLOAT, &gridGrad);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    bool maskValues[2] = {true, true};
    aclBoolArray *outputMask = aclCreateBoolArray(maskValues, 2);
    const int64_t interpolationMode = 0, paddingMode = border ? 1 : 0;
    const bool alignCorners = true;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    ret = aclnnGridSampler2DBackwardGetWorkspaceSize(gradOutput, input, grid, interpolationMode, paddingMode, alignCorners,
                                                     outputMask, inputGrad, gridGrad, &workspaceSize, &executor);
    if (ret != ACL_SUCCESS) {
        const char *msg = aclGetRecentErrMsg();
        LOG_PRINT("aclnnGridSampler2DBackwardGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, msg ? msg : "");
        return ret;
    }
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnGridSampler2DBackward(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGridSampler2DBackward failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    std::vector<float> inputGradHost(4), gridGradHost(4);
    ret = aclrtMemcpy(inputGradHost.data(), 16, inputGradDev, 16, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy inputGrad from device to host failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(gridGradHost.data(), 16, gridGradDev, 16, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy gridGrad from device to host failed. ERROR: %d\n", ret); return ret);
    const int wrong = CheckValues("inputGrad", inputGradHost, expectInputGrad) + CheckValues("gridGrad", gridGradHost, expectGridGrad);
    LOG_PRINT("%s: 8 values checked, %d wrong\n", wrong ? "FAILED" : "PASSED", wrong);

    aclDestroyTensor(gradOutput);
    aclDestroyTensor(input);
    aclDestroyTensor(grid);
    aclDestroyTensor(inputGrad);
    aclDestroyTensor(gridGrad);
    aclDestroyBoolArray(outputMask);
    aclrtFree(gradOutputDev);
    aclrtFree(inputDev);
    aclrtFree(gridDev);
    aclrtFree(inputGradDev);
    aclrtFree(gridGradDev);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return wrong ? 1 : 0;
}
