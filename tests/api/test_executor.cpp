// The two-phase contract and the executor API (api.md), exercised through aclnnAvgPool2dBackward:
// NULL out-pointers, consumed and destroyed executors, repeatable executors with address updates,
// workspace checks, NULL data at run time, and the message left for aclGetRecentErrMsg.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;
using coretest::writeTempFile;

constexpr int64_t N = 1, C = 2, H = 4, W = 4, Ho = 2, Wo = 2;

aclTensor *nchw(const std::vector<int64_t> &dims, void *data, aclDataType dt = ACL_FLOAT) {
    std::vector<int64_t> strides(dims.size());
    int64_t s = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) strides[d] = s, s *= dims[d];
    const int64_t storage[1] = {s};
    return aclCreateTensor(dims.data(), dims.size(), dt, strides.data(), 0, ACL_FORMAT_NCHW, storage, 1, data);
}

// A 2x2 / stride 2 average-pool backward of a (1, 2, 4, 4) input: every gradInput element receives
// gradOutput / 4 from exactly one window. gradOutput holds multiples of 4, so results are exact.
struct Problem {
    std::vector<float> go, self, gi;
    aclTensor *tGo = nullptr, *tSelf = nullptr, *tGi = nullptr;
    aclIntArray *kernel = nullptr, *stride = nullptr, *padding = nullptr;

    explicit Problem(float base = 4.0f, bool null_data = false) {
        go.resize(N * C * Ho * Wo);
        for (size_t i = 0; i < go.size(); ++i) go[i] = base * static_cast<float>(i + 1);
        self.assign(N * C * H * W, 1.0f);
        gi.assign(N * C * H * W, -1.0f);
        tGo = nchw({N, C, Ho, Wo}, null_data ? nullptr : go.data());
        tSelf = nchw({N, C, H, W}, null_data ? nullptr : self.data());
        tGi = nchw({N, C, H, W}, null_data ? nullptr : gi.data());
        const int64_t k[2] = {2, 2}, s[2] = {2, 2}, p[2] = {0, 0};
        kernel = aclCreateIntArray(k, 2);
        stride = aclCreateIntArray(s, 2);
        padding = aclCreateIntArray(p, 2);
    }
    ~Problem() {
        aclDestroyTensor(tGo);
        aclDestroyTensor(tSelf);
        aclDestroyTensor(tGi);
        aclDestroyIntArray(kernel);
        aclDestroyIntArray(stride);
        aclDestroyIntArray(padding);
    }
    aclnnStatus plan(uint64_t *ws, aclOpExecutor **exec, int8_t cube = 0) const {
        return aclnnAvgPool2dBackwardGetWorkspaceSize(tGo, tSelf, kernel, stride, padding, false, true, 0, cube, tGi, ws,
                                                      exec);
    }
    // plan(), then aclSetAclOpExecutorRepeatable: the first failing status, or success.
    aclnnStatus planRepeatable(uint64_t *ws, aclOpExecutor **exec) const {
        const aclnnStatus st = plan(ws, exec);
        return st != ACLNN_SUCCESS ? st : aclSetAclOpExecutorRepeatable(*exec);
    }
    // The expected gradInput for a gradOutput buffer.
    static std::vector<float> expected(const std::vector<float> &g) {
        std::vector<float> out(N * C * H * W);
        for (int64_t c = 0; c < N * C; ++c)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w) out[(c * H + h) * W + w] = g[(c * Ho + h / 2) * Wo + w / 2] / 4.0f;
        return out;
    }
};

class ExecutorTest : public coretest::RuntimeTest {
protected:
    void SetUp() override {
        coretest::RuntimeTest::SetUp();
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
        ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    }
    void TearDown() override {
        if (stream_) aclrtDestroyStream(stream_);
        aclrtResetDevice(0);
        coretest::RuntimeTest::TearDown();
    }
    // Re-initializes the runtime with an aclInit config.
    void useConfig(const std::string &yaml) {
        aclrtDestroyStream(stream_);
        stream_ = nullptr;
        ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
        const std::string cfg = writeTempFile("config", yaml);
        ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << takeErr();
        ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    }
    void useProduct(const std::string &product) { useConfig("product: " + product + "\n"); }
    aclrtStream stream_ = nullptr;
};

TEST_F(ExecutorTest, BaselineRunIsCorrect) {
    Problem p;
    uint64_t ws = 99;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_NE(exec, nullptr);
    EXPECT_EQ(ws, 0u) << "FLOAT with KEEP_DTYPE on atlas-a2 needs no scratch";
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, stream_), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_EQ(p.gi, Problem::expected(p.go));
}

TEST_F(ExecutorTest, PhaseOneDoesNoComputation) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f)) << "phase 1 wrote the output";
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, stream_), ACLNN_SUCCESS) << takeErr();
}

TEST_F(ExecutorTest, NullWorkspaceSizeIs161001) {
    Problem p;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(p.plan(nullptr, &exec), ACLNN_ERR_PARAM_NULLPTR);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("workspaceSize"), std::string::npos) << msg;
    EXPECT_EQ(exec, nullptr);
}

TEST_F(ExecutorTest, NullExecutorOutIs161001) {
    Problem p;
    uint64_t ws = 0;
    EXPECT_EQ(p.plan(&ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("executor"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, PhaseTwoWithNullExecutorIs161001) {
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, 0, nullptr, stream_), ACLNN_ERR_PARAM_NULLPTR);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("executor"), std::string::npos) << msg;
}

// The message of a check names the operator first, then the parameter.
TEST_F(ExecutorTest, NullTensorMessageNamesOperatorAndParameter) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    struct Row {
        const char *param;
        aclnnStatus st;
    };
    const Row rows[] = {
        {"gradOutput", aclnnAvgPool2dBackwardGetWorkspaceSize(nullptr, p.tSelf, p.kernel, p.stride, p.padding, false,
                                                              true, 0, 0, p.tGi, &ws, &exec)},
        {"self", aclnnAvgPool2dBackwardGetWorkspaceSize(p.tGo, nullptr, p.kernel, p.stride, p.padding, false, true, 0,
                                                        0, p.tGi, &ws, &exec)},
        {"kernelSize", aclnnAvgPool2dBackwardGetWorkspaceSize(p.tGo, p.tSelf, nullptr, p.stride, p.padding, false, true,
                                                              0, 0, p.tGi, &ws, &exec)},
        {"padding", aclnnAvgPool2dBackwardGetWorkspaceSize(p.tGo, p.tSelf, p.kernel, p.stride, nullptr, false, true, 0,
                                                           0, p.tGi, &ws, &exec)},
        {"gradInput", aclnnAvgPool2dBackwardGetWorkspaceSize(p.tGo, p.tSelf, p.kernel, p.stride, p.padding, false, true,
                                                             0, 0, nullptr, &ws, &exec)},
    };
    (void)rows;
    // Evaluate again one at a time to read each message.
    auto call = [&](int which) {
        return aclnnAvgPool2dBackwardGetWorkspaceSize(which == 0 ? nullptr : p.tGo, which == 1 ? nullptr : p.tSelf,
                                                      which == 2 ? nullptr : p.kernel, p.stride,
                                                      which == 3 ? nullptr : p.padding, false, true, 0, 0,
                                                      which == 4 ? nullptr : p.tGi, &ws, &exec);
    };
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(rows[i].st, ACLNN_ERR_PARAM_NULLPTR) << rows[i].param;
        EXPECT_EQ(call(i), ACLNN_ERR_PARAM_NULLPTR) << rows[i].param;
        const std::string msg = takeErr();
        EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
        EXPECT_NE(msg.find(rows[i].param), std::string::npos) << msg;
    }
}

TEST_F(ExecutorTest, ConsumedExecutorRerunIs361001) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    std::fill(p.gi.begin(), p.gi.end(), -5.0f);
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_RUNTIME_ERROR);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -5.0f)) << "a consumed executor wrote the output";
    // Neither may it be destroyed or made repeatable after the fact.
    EXPECT_NE(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    EXPECT_NE(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
}

// A stale handle stays stale even when a later phase 1 creates a new executor (whose memory may be the
// consumed one's): running it is an error and must neither run nor consume the new executor.
TEST_F(ExecutorTest, ConsumedExecutorRerunAfterAnotherPlanIs361001) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *first = nullptr, *second = nullptr;
    ASSERT_EQ(p.plan(&ws, &first), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, first, stream_), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(p.plan(&ws, &second), ACLNN_SUCCESS) << takeErr();
    std::fill(p.gi.begin(), p.gi.end(), -5.0f);
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, first, stream_), ACLNN_ERR_RUNTIME_ERROR)
        << "the consumed executor ran (its handle " << static_cast<void *>(first) << " now names the new executor "
        << static_cast<void *>(second) << ")";
    (void)takeErr();
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, second, stream_), ACLNN_SUCCESS)
        << "the new executor was consumed by a call through a stale handle: " << takeErr();
}

TEST_F(ExecutorTest, FailedRunConsumesTheExecutor) {
    Problem p(4.0f, /*null_data=*/true);  // phase 2 fails: no data
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_NE(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS);
    (void)takeErr();
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_RUNTIME_ERROR);
}

TEST_F(ExecutorTest, DestroyedSingleUseExecutorCannotRun) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_RUNTIME_ERROR);
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f));
}

TEST_F(ExecutorTest, RepeatableRunsThreeTimes) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    const auto want = Problem::expected(p.go);
    for (int run = 0; run < 3; ++run) {
        std::fill(p.gi.begin(), p.gi.end(), -1.0f);
        ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << "run " << run << ": " << takeErr();
        EXPECT_EQ(p.gi, want) << "run " << run;
    }
    // Data changed in place between runs is read at run time.
    for (auto &g : p.go) g *= 2.0f;
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
}

TEST_F(ExecutorTest, RepeatableWithNewAddresses) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));

    // New gradOutput through aclSetInputTensorAddr (input 0 = gradOutput).
    std::vector<float> go2(p.go.size());
    for (size_t i = 0; i < go2.size(); ++i) go2[i] = -8.0f * static_cast<float>(i + 3);
    ASSERT_EQ(aclSetInputTensorAddr(exec, 0, p.tGo, go2.data()), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(go2));

    // New gradInput through aclSetOutputTensorAddr (output 0 = gradInput); the old buffer is left alone.
    std::vector<float> gi2(p.gi.size(), 7.0f);
    const std::vector<float> old_gi = p.gi;
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, p.tGi, gi2.data()), ACLNN_SUCCESS) << takeErr();
    std::fill(p.gi.begin(), p.gi.end(), 123.0f);
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi2, Problem::expected(go2));
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), 123.0f)) << "the previous output buffer was written";
    (void)old_gi;

    // aclSetRawTensorAddr on the bound tensor retargets it as well.
    std::vector<float> go3(p.go.size());
    for (size_t i = 0; i < go3.size(); ++i) go3[i] = 12.0f * static_cast<float>(i % 3);
    ASSERT_EQ(aclSetRawTensorAddr(p.tGo, go3.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi2, Problem::expected(go3));

    // Input 1 is self; retargeting it is accepted.
    std::vector<float> self2(p.self.size(), 0.0f);
    EXPECT_EQ(aclSetInputTensorAddr(exec, 1, p.tSelf, self2.data()), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
}

TEST_F(ExecutorTest, AddressUpdatesRejectBadIndexAndWrongTensor) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<float> other(p.go.size(), 0.0f);

    EXPECT_EQ(aclSetInputTensorAddr(exec, 2, p.tGo, other.data()), ACLNN_ERR_PARAM_INVALID) << "2 inputs: index 2";
    EXPECT_FALSE(takeErr().empty());
    EXPECT_EQ(aclSetInputTensorAddr(exec, 1000, p.tGo, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclSetOutputTensorAddr(exec, 1, p.tGi, other.data()), ACLNN_ERR_PARAM_INVALID) << "1 output: index 1";
    EXPECT_EQ(aclSetInputTensorAddr(exec, 0, p.tSelf, other.data()), ACLNN_ERR_PARAM_INVALID)
        << "self is input 1, not input 0";
    EXPECT_EQ(aclSetOutputTensorAddr(exec, 0, p.tGo, other.data()), ACLNN_ERR_PARAM_INVALID)
        << "gradOutput is not the output";
    // A foreign tensor (same shape, never bound).
    aclTensor *foreign = nchw({N, C, Ho, Wo}, other.data());
    EXPECT_EQ(aclSetInputTensorAddr(exec, 0, foreign, other.data()), ACLNN_ERR_PARAM_INVALID);
    aclDestroyTensor(foreign);
    (void)takeErr();

    // None of the rejected updates took effect.
    void *addr = nullptr;
    ASSERT_EQ(aclGetRawTensorAddr(p.tGo, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(p.go.data()));
    ASSERT_EQ(aclGetRawTensorAddr(p.tGi, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(p.gi.data()));
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));

    // CANN's page: a NULL executor or tensor is 561103.
    EXPECT_EQ(aclSetInputTensorAddr(nullptr, 0, p.tGo, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_EQ(aclSetOutputTensorAddr(nullptr, 0, p.tGi, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_EQ(aclSetInputTensorAddr(exec, 0, nullptr, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_EQ(aclSetOutputTensorAddr(exec, 0, nullptr, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_NE(takeErr().find("tensor must not be NULL"), std::string::npos);
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_NE(aclSetInputTensorAddr(exec, 0, p.tGo, other.data()), ACLNN_SUCCESS) << "destroyed executor";
}

// aclSetTensorAddr counts all the signature's tensors: gradOutput 0, self 1, gradInput 2.
TEST_F(ExecutorTest, SetTensorAddrCountsEveryTensorInSignatureOrder) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<float> go2(p.go.size()), gi2(p.gi.size(), 5.0f);
    for (size_t i = 0; i < go2.size(); ++i) go2[i] = 4.0f * static_cast<float>(i + 7);
    ASSERT_EQ(aclSetTensorAddr(exec, 0, p.tGo, go2.data()), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetTensorAddr(exec, 2, p.tGi, gi2.data()), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi2, Problem::expected(go2));
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f)) << "the old gradInput was written";

    std::vector<float> other(p.gi.size(), 0.0f);
    EXPECT_EQ(aclSetTensorAddr(exec, 3, p.tGi, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("index 3 is out of range: aclnnAvgPool2dBackward has 3 tensor(s)"), std::string::npos);
    EXPECT_EQ(aclSetTensorAddr(exec, 1, p.tGo, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("tensor is not tensor 1 (self)"), std::string::npos);
    EXPECT_EQ(aclSetTensorAddr(nullptr, 0, p.tGo, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_EQ(aclSetTensorAddr(exec, 0, nullptr, other.data()), ACLNN_ERR_INNER_NULLPTR);
    (void)takeErr();
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
}

// The tensor-list setters: CANN's codes for NULLs and ranges, and for an index that names a plain
// tensor a message pointing at the setter that applies. No address changes.
TEST_F(ExecutorTest, DynamicTensorAddrSettersSayNoTensorListIsThere) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<float> other(p.gi.size(), 0.0f);
    const int64_t dims[1] = {2};
    const aclTensor *items[1] = {aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, other.data())};
    aclTensorList *list = aclCreateTensorList(items, 1);
    ASSERT_NE(list, nullptr) << takeErr();

    EXPECT_EQ(aclSetDynamicInputTensorAddr(exec, 0, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("aclSetDynamicInputTensorAddr: irIndex 0 (gradOutput) is a tensor, not a tensor list: "
                             "use aclSetInputTensorAddr"),
              std::string::npos);
    EXPECT_EQ(aclSetDynamicInputTensorAddr(exec, 2, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("irIndex 2 is out of range: aclnnAvgPool2dBackward has 2 input tensor(s)"), std::string::npos);
    EXPECT_EQ(aclSetDynamicInputTensorAddr(exec, 0, 1, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("relativeIndex 1 is out of range: tensors holds 1 tensor(s)"), std::string::npos);
    EXPECT_EQ(aclSetDynamicOutputTensorAddr(exec, 0, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("irIndex 0 (gradInput) is a tensor, not a tensor list: use aclSetOutputTensorAddr"),
              std::string::npos);
    EXPECT_EQ(aclSetDynamicOutputTensorAddr(exec, 1, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclSetDynamicTensorAddr(exec, 2, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("irIndex 2 (gradInput) is a tensor, not a tensor list: use aclSetTensorAddr"),
              std::string::npos);
    EXPECT_EQ(aclSetDynamicTensorAddr(exec, 3, 0, list, other.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("has 3 tensor(s)"), std::string::npos);
    // CANN's page: a NULL executor or list is 561103.
    EXPECT_EQ(aclSetDynamicInputTensorAddr(nullptr, 0, 0, list, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_EQ(aclSetDynamicOutputTensorAddr(exec, 0, 0, nullptr, other.data()), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_NE(takeErr().find("tensors must not be NULL"), std::string::npos);
    EXPECT_EQ(aclSetDynamicTensorAddr(nullptr, 0, 0, nullptr, other.data()), ACLNN_ERR_INNER_NULLPTR);
    (void)takeErr();

    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
}

// aclInitTensor on a bound tensor: the executor keeps the view it planned on and takes the new address.
TEST_F(ExecutorTest, InitTensorOnABoundTensorRetargetsItsAddress) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<float> go2(p.go.size());
    for (size_t i = 0; i < go2.size(); ++i) go2[i] = -4.0f * static_cast<float>(i + 2);
    const int64_t dims[4] = {N, C, Ho, Wo};
    ASSERT_EQ(aclInitTensor(p.tGo, dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, nullptr, 0, go2.data()), ACLNN_SUCCESS)
        << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(go2));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
}

// An operator submitted after a blocking host callback on its stream runs after the callback: it
// sees the gradOutput the callback wrote (CANN's ACL_CALLBACK_BLOCK).
TEST_F(ExecutorTest, RunAfterABlockingCallbackSeesWhatItWrote) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> reporter_id{0};
    std::thread reporter([&] {
        reporter_id = static_cast<uint64_t>(pthread_self());
        while (!stop) (void)aclrtProcessReport(10);
    });
    while (!reporter_id) std::this_thread::yield();
    ASSERT_EQ(aclrtSubscribeReport(reporter_id, stream_), ACL_SUCCESS) << takeErr();
    const auto double_late = [](void *data) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (float &g : *static_cast<std::vector<float> *>(data)) g *= 2.0f;
    };
    ASSERT_EQ(aclrtLaunchCallback(double_late, &p.go, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.go[0], 8.0f) << "the callback ran before the operator";
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclrtUnSubscribeReport(reporter_id, stream_), ACL_SUCCESS) << takeErr();
    stop = true;
    reporter.join();
    (void)takeErr();
}

TEST_F(ExecutorTest, DestroyTwiceIsAnErrorNotACrash) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    EXPECT_NE(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_RUNTIME_ERROR) << "destroyed executor";
}

TEST_F(ExecutorTest, DestroyNullExecutorIsAnError) {
    EXPECT_NE(aclDestroyAclOpExecutor(nullptr), ACLNN_SUCCESS);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(ExecutorTest, SetRepeatableNullIs561103) {
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(ExecutorTest, RunWithNullDataIs161001NotACrash) {
    for (int which = 0; which < 3; ++which) {
        Problem p;
        aclTensor *t = which == 0 ? p.tGo : which == 1 ? p.tSelf : p.tGi;
        const char *name = which == 0 ? "gradOutput" : which == 1 ? "self" : "gradInput";
        ASSERT_EQ(aclSetRawTensorAddr(t, nullptr), ACLNN_SUCCESS);
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << "phase 1 does not touch data: " << takeErr();
        EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_PARAM_NULLPTR) << name;
        const std::string msg = takeErr();
        EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
        EXPECT_NE(msg.find(name), std::string::npos) << msg;
    }
}

TEST_F(ExecutorTest, NullDataOnRepeatableExecutorAfterRetarget) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, p.tGi, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("gradInput"), std::string::npos);
    // Still usable once the address is valid again.
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, p.tGi, p.gi.data()), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

TEST_F(ExecutorTest, EmptyTensorsNeedNoWorkspaceNorData) {
    aclTensor *go = nchw({0, C, Ho, Wo}, nullptr), *self = nchw({0, C, H, W}, nullptr), *gi = nchw({0, C, H, W}, nullptr);
    ASSERT_TRUE(go && self && gi);
    const int64_t k[2] = {2, 2}, p0[2] = {0, 0};
    aclIntArray *kernel = aclCreateIntArray(k, 2), *padding = aclCreateIntArray(p0, 2);
    uint64_t ws = 77;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, kernel, nullptr, padding, false, true, 0, 0, gi, &ws, &exec),
              ACLNN_SUCCESS)
        << takeErr();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, stream_), ACLNN_SUCCESS) << takeErr();
    aclDestroyTensor(go);
    aclDestroyTensor(self);
    aclDestroyTensor(gi);
    aclDestroyIntArray(kernel);
    aclDestroyIntArray(padding);
}

TEST_F(ExecutorTest, ExecutorOutlivesTheCallersArrays) {
    // Attribute arrays may be destroyed after phase 1.
    auto p = std::make_unique<Problem>();
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p->plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    aclDestroyIntArray(p->kernel);
    aclDestroyIntArray(p->stride);
    aclDestroyIntArray(p->padding);
    p->kernel = p->stride = p->padding = nullptr;
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p->gi, Problem::expected(p->go));
}

TEST_F(ExecutorTest, ExecutorOutlivesFinalize) {
    // A planned executor keeps its configuration snapshot; it may run after re-initialization.
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-a3"));
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
}

// ---- workspace: atlas-training with cubeMathType 1 rounds FLOAT to FLOAT16 in a scratch buffer ----

TEST_F(ExecutorTest, WorkspaceSizeIsDeterministicAndNonZero) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws1 = 0, ws2 = 0;
    aclOpExecutor *e1 = nullptr, *e2 = nullptr;
    ASSERT_EQ(p.plan(&ws1, &e1, 1), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(p.plan(&ws2, &e2, 1), ACLNN_SUCCESS) << takeErr();
    EXPECT_GT(ws1, 0u);
    EXPECT_EQ(ws1, ws2);
    std::vector<uint8_t> w(ws1);
    ASSERT_EQ(aclnnAvgPool2dBackward(w.data(), ws1, e1, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go)) << "values are exact in FLOAT16";
    void *dev = nullptr;
    ASSERT_EQ(aclrtMalloc(&dev, ws2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::fill(p.gi.begin(), p.gi.end(), 0.0f);
    ASSERT_EQ(aclnnAvgPool2dBackward(dev, ws2, e2, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    aclrtFree(dev);
}

TEST_F(ExecutorTest, LargerWorkspaceIsFine) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec, 1), ACLNN_SUCCESS) << takeErr();
    std::vector<uint8_t> w(ws + 4096);
    ASSERT_EQ(aclnnAvgPool2dBackward(w.data(), w.size(), exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
}

TEST_F(ExecutorTest, SmallerWorkspaceIs161002) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec, 1), ACLNN_SUCCESS) << takeErr();
    ASSERT_GT(ws, 0u);
    std::vector<uint8_t> w(ws);
    EXPECT_EQ(aclnnAvgPool2dBackward(w.data(), ws - 1, exec, stream_), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("workspace"), std::string::npos) << msg;
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f)) << "nothing is computed";
}

// A workspace off malloc's alignment would make the plan's FLOAT / double buffers misaligned.
TEST_F(ExecutorTest, MisalignedWorkspaceIs161002) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec, 1), ACLNN_SUCCESS) << takeErr();
    ASSERT_GT(ws, 0u);
    std::vector<uint8_t> w(ws + 64);
    uint8_t *base = w.data() + (64 - reinterpret_cast<uintptr_t>(w.data()) % 64) % 64;
    EXPECT_EQ(aclnnAvgPool2dBackward(base + 1, ws, exec, stream_), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("workspace must be aligned to 16 bytes"), std::string::npos) << msg;
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f)) << "nothing is computed";
}

TEST_F(ExecutorTest, NullWorkspaceWithNonZeroSizeIs161002) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec, 1), ACLNN_SUCCESS) << takeErr();
    ASSERT_GT(ws, 0u);
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("workspace"), std::string::npos);
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f));
}

TEST_F(ExecutorTest, RepeatableExecutorSurvivesAWorkspaceError) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-training"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec, 1), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    std::vector<uint8_t> w(ws);
    EXPECT_EQ(aclnnAvgPool2dBackward(w.data(), 0, exec, stream_), ACLNN_ERR_PARAM_INVALID);
    (void)takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(w.data(), ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

TEST_F(ExecutorTest, PlanningFailureReturnsNoExecutor) {
    Problem p;
    aclTensor *wrong = nchw({N, C, 3, 3}, p.go.data());  // not the pooled shape of self
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(wrong, p.tSelf, p.kernel, p.stride, p.padding, false, true, 0, 0,
                                                     p.tGi, &ws, &exec),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(exec, nullptr);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("gradOutput"), std::string::npos) << msg;
    aclDestroyTensor(wrong);
}

TEST_F(ExecutorTest, RunningThroughAnotherOperatorsEntryPointIsAnError) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_NE(aclnnAvgPool2d(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << "a backward executor run as the forward op";
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2d", 0), 0u) << msg;
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f));
    // The mistaken call did not run the plan; the right entry point still can.
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
}

// ---- support on the product (products.md): unsupported or disabled => 161002 naming the product ----

TEST_F(ExecutorTest, UnsupportedProductIs161002NamingTheProduct) {
    ASSERT_NO_FATAL_FAILURE(useProduct("atlas-200i-500-a2"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(p.plan(&ws, &exec), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("Atlas 200I/500 A2"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, ConfigDisabledOpIs161002NamingTheProduct) {
    aclrtDestroyStream(stream_);
    stream_ = nullptr;
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    const std::string cfg = writeTempFile("disabled", "disabled_ops: [AvgPool2dBackward]\n");
    ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << takeErr();
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(p.plan(&ws, &exec), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnAvgPool2dBackward", 0), 0u) << msg;
    EXPECT_NE(msg.find("Atlas A2"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, ConfigEnabledOpsListDisablesTheRest) {
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    const std::string cfg = writeTempFile("enabled", "enabled_ops: [AvgPool2d]\n");
    ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << takeErr();
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(p.plan(&ws, &exec), ACLNN_ERR_PARAM_INVALID);
    EXPECT_FALSE(takeErr().empty());
}

// ---- thread safety (architecture.md property 4) ----

TEST_F(ExecutorTest, ConcurrentPlansAndRunsOnManyThreads) {
    constexpr int kThreads = 4, kIters = 25;
    std::vector<int> bad(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([t, &bad] {
            for (int i = 0; i < kIters; ++i) {
                Problem p(4.0f * static_cast<float>(t + 1));
                uint64_t ws = 0;
                aclOpExecutor *exec = nullptr;
                if (p.plan(&ws, &exec) != ACLNN_SUCCESS || aclnnAvgPool2dBackward(nullptr, ws, exec, nullptr) != ACLNN_SUCCESS ||
                    p.gi != Problem::expected(p.go))
                    ++bad[t];
            }
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST_F(ExecutorTest, OneRepeatableExecutorRunFromTwoThreads) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    int failures = 0;
    std::thread a([&] {
        for (int i = 0; i < 50; ++i)
            if (aclnnAvgPool2dBackward(nullptr, ws, exec, nullptr) != ACLNN_SUCCESS) ++failures;
    });
    int failures_b = 0;
    for (int i = 0; i < 50; ++i)
        if (aclnnAvgPool2dBackward(nullptr, ws, exec, nullptr) != ACLNN_SUCCESS) ++failures_b;
    a.join();
    EXPECT_EQ(failures + failures_b, 0);
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

TEST_F(ExecutorTest, RunOnADeadStreamIs161002AndTheExecutorSurvives) {
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    aclrtStream dead = nullptr;
    ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
    EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, dead), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(takeErr().find("stream is not a live stream"), std::string::npos);
    EXPECT_EQ(p.gi, std::vector<float>(p.gi.size(), -1.0f)) << "nothing ran";
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << "not consumed: " << takeErr();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
}

// Two threads racing to run one single-use executor: one runs it, the other finds it consumed, and
// the executor lives until the run that holds it returns (it used to be freed under that run).
TEST_F(ExecutorTest, SingleUseExecutorRunFromTwoThreadsRunsOnce) {
    for (int round = 0; round < 50; ++round) {
        Problem p;
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
        aclnnStatus sa = -1, sb = -1;
        std::thread a([&] { sa = aclnnAvgPool2dBackward(nullptr, ws, exec, nullptr); });
        sb = aclnnAvgPool2dBackward(nullptr, ws, exec, nullptr);
        a.join();
        (void)takeErr();
        EXPECT_EQ((sa == ACLNN_SUCCESS) + (sb == ACLNN_SUCCESS), 1) << "round " << round << ": " << sa << ", " << sb;
        EXPECT_EQ((sa == ACLNN_ERR_RUNTIME_ERROR) + (sb == ACLNN_ERR_RUNTIME_ERROR), 1) << "round " << round;
        EXPECT_EQ(p.gi, Problem::expected(p.go));
    }
}

// ---- the timeline (config `timeline`, env ACLNN_CPU_TIMELINE): each run's nodes, when, how long ----

struct TimelineRun {
    struct Node {
        std::string name;
        double at = -1, took = -1;
        int thread = -1;
    };
    std::vector<Node> nodes;
    int declared = -1;  // from the run's last line: "<n> nodes in <w> ms ..."
    double wall = -1;
};

// The runs' lines of aclnnAvgPool2dBackward in `text`, by run number.
std::map<int, TimelineRun> parseTimeline(const std::string &text) {
    std::map<int, TimelineRun> runs;
    const std::string head = "[aclnn-cpu TIMELINE] aclnnAvgPool2dBackward run ";
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(head, 0) != 0) continue;
        std::istringstream l(line.substr(head.size()));
        int run = 0;
        char colon = 0;
        std::string first, word;
        l >> run >> colon >> first;
        TimelineRun &r = runs[run];
        if (line.find(" nodes in ") != std::string::npos) {
            r.declared = std::stoi(first);
            l >> word >> word >> r.wall;  // "nodes" "in" <wall>
            continue;
        }
        TimelineRun::Node n;
        n.name = first;
        std::string at, ms1, took, ms2, on, thread;
        l >> at >> n.at >> ms1 >> took >> n.took >> ms2 >> on >> thread >> n.thread;
        r.nodes.push_back(n);
    }
    return runs;
}

TEST_F(ExecutorTest, TimelineListsEveryNodeOfEveryRun) {
    ASSERT_NO_FATAL_FAILURE(useConfig("timeline: true\nthreads: 2\n"));
    Problem p;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(p.planRepeatable(&ws, &exec), ACLNN_SUCCESS) << takeErr();
    coretest::StderrCapture err;
    for (int i = 0; i < 2; ++i) ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
    const std::string text = err.text();
    EXPECT_EQ(p.gi, Problem::expected(p.go));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    const auto runs = parseTimeline(text);
    ASSERT_EQ(runs.size(), 2u) << text;
    for (const auto &[number, r] : runs) {
        EXPECT_TRUE(number == 1 || number == 2) << text;
        ASSERT_GE(r.declared, 1) << text;
        EXPECT_EQ(static_cast<int>(r.nodes.size()), r.declared) << text;
        for (const auto &n : r.nodes) {
            EXPECT_FALSE(n.name.empty()) << text;
            EXPECT_GE(n.at, 0.0) << text;
            EXPECT_GE(n.took, 0.0) << text;
            EXPECT_LE(n.at + n.took, r.wall + 0.0015) << text;  // (each figure rounded to 0.001 ms)
            EXPECT_TRUE(n.thread == 0 || n.thread == 1) << text;
        }
    }
}

TEST_F(ExecutorTest, TimelineIsOffUnlessAskedAndTheConfigWinsOverTheEnvironment) {
    auto linesOfOneRun = [&] {
        Problem p;
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(p.plan(&ws, &exec), ACLNN_SUCCESS) << takeErr();
        coretest::StderrCapture err;
        EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, ws, exec, stream_), ACLNN_SUCCESS) << takeErr();
        EXPECT_EQ(p.gi, Problem::expected(p.go));
        return coretest::linesContaining(err.text(), "[aclnn-cpu TIMELINE]").size();
    };
    {
        coretest::EnvGuard env("ACLNN_CPU_TIMELINE", std::nullopt);
        ASSERT_NO_FATAL_FAILURE(useConfig("threads: 2\n"));
        EXPECT_EQ(linesOfOneRun(), 0u) << "no timeline by default";
    }
    {
        coretest::EnvGuard env("ACLNN_CPU_TIMELINE", "1");
        ASSERT_NO_FATAL_FAILURE(useConfig("threads: 2\n"));
        EXPECT_GE(linesOfOneRun(), 2u) << "ACLNN_CPU_TIMELINE=1: a node line and the run's line";
        ASSERT_NO_FATAL_FAILURE(useConfig("timeline: false\n"));
        EXPECT_EQ(linesOfOneRun(), 0u) << "the config's timeline: false wins over the environment";
    }
    {
        coretest::EnvGuard env("ACLNN_CPU_TIMELINE", "0");
        ASSERT_NO_FATAL_FAILURE(useConfig("threads: 2\n"));
        EXPECT_EQ(linesOfOneRun(), 0u) << "ACLNN_CPU_TIMELINE=0";
    }
}

}  // namespace
