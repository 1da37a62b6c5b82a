// A client written the way CANN's published aclnn samples are (test_aclnn_conv_backward_2d/3d):
// aclInit, device, stream, device buffers, aclCreateTensor, the two-phase call, synchronize, copy
// back, release. It builds unedited against an Ascend toolkit or against aclnn-cpu:
//   g++ main.cpp -I$PREFIX/include -L$PREFIX/lib -lascendcl -lnnopbase -lopapi
// Argument "3d" runs a 3-D convolution (NCDHW) instead of 2-D (NCHW); the Atlas training and
// inference series reject 3-D with 161002. The result is checked against a direct loop.
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution_backward.h"

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

static int CreateAclTensor(const std::vector<float> &hostData, const std::vector<int64_t> &shape, void **deviceAddr,
                           aclTensor **tensor, aclFormat format) {
    auto size = GetShapeSize(shape) * sizeof(float);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, format, shape.data(), shape.size(),
                              *deviceAddr);
    return 0;
}

int main(int argc, char **argv) {
    const bool conv3d = argc > 1 && std::strcmp(argv[1], "3d") == 0;
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = Init(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
    LOG_PRINT("SoC: %s, %s convolution backward\n", aclrtGetSocName(), conv3d ? "3-D" : "2-D");

    // N=2, Cin=3, Cout=4, 5x5 (x3 in depth for 3-D), 3x3 kernel, stride 2, padding 1.
    const int64_t N = 2, Cin = 3, Cout = 4, S = 5, K = 3, O = 3, D = conv3d ? 3 : 1, KD = conv3d ? 3 : 1, OD = conv3d ? 2 : 1;
    std::vector<int64_t> inputShape = {N, Cin, S, S}, weightShape = {Cout, Cin, K, K}, gradOutputShape = {N, Cout, O, O};
    std::vector<int64_t> strideData = {2, 2}, paddingData = {1, 1}, dilationData = {1, 1}, outputPaddingData = {0, 0};
    if (conv3d) {
        inputShape.insert(inputShape.begin() + 2, D);
        weightShape.insert(weightShape.begin() + 2, KD);
        gradOutputShape.insert(gradOutputShape.begin() + 2, OD);
        strideData.push_back(2), paddingData.push_back(1), dilationData.push_back(1), outputPaddingData.push_back(0);
    }
    const aclFormat format = conv3d ? ACL_FORMAT_NCDHW : ACL_FORMAT_NCHW;
    std::vector<float> inputHost(GetShapeSize(inputShape)), weightHost(GetShapeSize(weightShape)),
        gradOutputHost(GetShapeSize(gradOutputShape));
    for (size_t i = 0; i < inputHost.size(); ++i) inputHost[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    for (size_t i = 0; i < weightHost.size(); ++i) weightHost[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    for (size_t i = 0; i < gradOutputHost.size(); ++i) gradOutputHost[i] = static_cast<float>(static_cast<int>(i % 3) - 1);

    void *inputDev = nullptr, *weightDev = nullptr, *gradOutputDev = nullptr, *gradInputDev = nullptr,
         *gradWeightDev = nullptr, *gradBiasDev = nullptr;
    aclTensor *input = nullptr, *weight = nullptr, *gradOutput = nullptr, *gradInput = nullptr, *gradWeight = nullptr,
              *gradBias = nullptr;
    ret = CreateAclTensor(inputHost, inputShape, &inputDev, &input, format);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(weightHost, weightShape, &weightDev, &weight, format);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(gradOutputHost, gradOutputShape, &gradOutputDev, &gradOutput, format);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(std::vector<float>(inputHost.size(), 0), inputShape, &gradInputDev, &gradInput, format);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(std::vector<float>(weightHost.size(), 0), weightShape, &gradWeightDev, &gradWeight, format);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(std::vector<float>(Cout, 0), {Cout}, &gradBiasDev, &gradBias, ACL_FORMAT_ND);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    int64_t biasData[] = {Cout};
    aclIntArray *biasSizes = aclCreateIntArray(biasData, 1);
    aclIntArray *stride = aclCreateIntArray(strideData.data(), strideData.size());
    aclIntArray *padding = aclCreateIntArray(paddingData.data(), paddingData.size());
    aclIntArray *dilation = aclCreateIntArray(dilationData.data(), dilationData.size());
    aclIntArray *outputPadding = aclCreateIntArray(outputPaddingData.data(), outputPaddingData.size());
    bool outputMaskData[3] = {true, true, true};
    aclBoolArray *outputMask = aclCreateBoolArray(outputMaskData, 3);

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    // cubeMathType 1 (ALLOW_FP32_DOWN_PRECISION): accepted for FLOAT by every product; these small
    // integers are exact in HF32 and FLOAT16, so the result is exact everywhere.
    ret = aclnnConvolutionBackwardGetWorkspaceSize(gradOutput, input, weight, biasSizes, stride, padding, dilation, false,
                                                   outputPadding, 1, outputMask, 1, gradInput, gradWeight, gradBias,
                                                   &workspaceSize, &executor);
    if (ret != ACL_SUCCESS) {
        const char *msg = aclGetRecentErrMsg();
        LOG_PRINT("aclnnConvolutionBackwardGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, msg ? msg : "");
        return ret;
    }
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnConvolutionBackward(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnConvolutionBackward failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    std::vector<float> gi(inputHost.size()), gw(weightHost.size()), gb(Cout);
    aclrtMemcpy(gi.data(), gi.size() * 4, gradInputDev, gi.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(gw.data(), gw.size() * 4, gradWeightDev, gw.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(gb.data(), gb.size() * 4, gradBiasDev, gb.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);

    // The direct loop: every (output, kernel tap) pair that lands inside the input.
    std::vector<float> egi(gi.size(), 0), egw(gw.size(), 0), egb(Cout, 0);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < Cout; ++co)
            for (int64_t od = 0; od < OD; ++od)
                for (int64_t oh = 0; oh < O; ++oh)
                    for (int64_t ow = 0; ow < O; ++ow) {
                        const float g = gradOutputHost[(((n * Cout + co) * OD + od) * O + oh) * O + ow];
                        egb[co] += g;
                        for (int64_t ci = 0; ci < Cin; ++ci)
                            for (int64_t kd = 0; kd < KD; ++kd)
                                for (int64_t kh = 0; kh < K; ++kh)
                                    for (int64_t kw = 0; kw < K; ++kw) {
                                        const int64_t id = conv3d ? od * 2 - 1 + kd : 0, ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                                        if (id < 0 || id >= D || ih < 0 || ih >= S || iw < 0 || iw >= S) continue;
                                        const int64_t x = (((n * Cin + ci) * D + id) * S + ih) * S + iw;
                                        const int64_t w = (((co * Cin + ci) * KD + kd) * K + kh) * K + kw;
                                        egi[x] += g * weightHost[w];
                                        egw[w] += g * inputHost[x];
                                    }
                    }
    int wrong = 0;
    for (size_t i = 0; i < gi.size(); ++i) wrong += gi[i] != egi[i];
    for (size_t i = 0; i < gw.size(); ++i) wrong += gw[i] != egw[i];
    for (size_t i = 0; i < gb.size(); ++i) wrong += gb[i] != egb[i];
    for (int64_t co = 0; co < Cout; ++co) LOG_PRINT("gradBias[%ld] is: %f\n", static_cast<long>(co), gb[co]);
    LOG_PRINT("gradWeight[0..3] is: %f %f %f %f\n", gw[0], gw[1], gw[2], gw[3]);
    LOG_PRINT("%s: %zu values checked, %d wrong\n", wrong ? "FAILED" : "PASSED", gi.size() + gw.size() + gb.size(), wrong);

    for (aclTensor *t : {input, weight, gradOutput, gradInput, gradWeight, gradBias}) aclDestroyTensor(t);
    for (aclIntArray *a : {biasSizes, stride, padding, dilation, outputPadding}) aclDestroyIntArray(a);
    aclDestroyBoolArray(outputMask);
    for (void *p : {inputDev, weightDev, gradOutputDev, gradInputDev, gradWeightDev, gradBiasDev}) aclrtFree(p);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return wrong ? 1 : 0;
}
