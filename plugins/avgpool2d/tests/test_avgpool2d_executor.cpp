// AvgPool2dBackward execution contract: workspace (R9/R10 in testing.md), executors (single use,
// repeatable, address updates), non-contiguous views, empty tensors, determinism across runs and
// thread counts, concurrent callers, and the published client's aclrtMalloc / aclrtMemcpy path.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "avgpool2d_cases.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

// One backward problem with its tensors kept alive (for executor-level tests).
struct Bound {
    aclDataType dt;
    std::vector<int64_t> selfDims, goDims;
    Attrs attrs;
    std::unique_ptr<Tensor> go, self, gi;
    std::unique_ptr<IntArray> k, s, p;

    Bound(aclDataType dt_, std::vector<int64_t> selfDims_, Attrs a) : dt(dt_), selfDims(std::move(selfDims_)), attrs(a) {
        goDims = pooledDims(selfDims, resolve(attrs));
        const aclFormat fmt = formatForRank(selfDims.size());
        go = std::make_unique<Tensor>(dt, goDims, fmt);
        self = std::make_unique<Tensor>(dt, selfDims, fmt);
        gi = std::make_unique<Tensor>(dt, selfDims, fmt);
        k = std::make_unique<IntArray>(attrs.kernel);
        s = std::make_unique<IntArray>(attrs.stride);
        p = std::make_unique<IntArray>(attrs.padding);
        self->setValues(randomValues(static_cast<size_t>(self->count()), dt, 4));
        gi->setValues(std::vector<double>(static_cast<size_t>(gi->count()), 1234.0));
    }
    aclnnStatus phase1(uint64_t *ws, aclOpExecutor **exec) {
        return aclnnAvgPool2dBackwardGetWorkspaceSize(go->get(), self->get(), k->a, s->a, p->a, attrs.ceilMode,
                                                      attrs.countIncludePad, attrs.divisorOverride,
                                                      attrs.cubeMathType, gi->get(), ws, exec);
    }
    std::vector<double> randomGrad(uint64_t seed) const {
        return randomValues(static_cast<size_t>(numel(goDims)), dt, seed);
    }
    std::vector<double> reference(const std::vector<double> &g, std::vector<double> *absSum = nullptr) const {
        std::vector<double> ref;
        referenceBackward(selfDims, attrs, g, CubeRound::None, ref, absSum);
        return ref;
    }
};

aclnnStatus run(void *ws, uint64_t size, aclOpExecutor *exec) {
    const aclnnStatus st = aclnnAvgPool2dBackward(ws, size, exec, Runtime::stream());
    aclrtSynchronizeStream(Runtime::stream());
    return st;
}

struct WsConfig {
    const char *name;
    aclDataType dt;
    int8_t cube;
};
const std::vector<WsConfig> kWsConfigs{{"FLOAT_keep", ACL_FLOAT, 0},    {"FLOAT_hf32", ACL_FLOAT, 3},
                                       {"FLOAT_fp16", ACL_FLOAT, 2},    {"FLOAT16", ACL_FLOAT16, 0},
                                       {"BF16", ACL_BF16, 0}};

// ------------------------------------------------------------------------------------------------
// Workspace
// ------------------------------------------------------------------------------------------------
TEST(BackwardWorkspace, Phase1IsDeterministicAndComputesNothing) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const WsConfig &c : kWsConfigs) {
        SCOPED_TRACE(c.name);
        Attrs a = A({3}, S({1}), {1}, false, false);
        a.cubeMathType = c.cube;
        Bound b(c.dt, {4, 32, 40, 40}, a);
        const auto g = b.randomGrad(1);
        b.go->setValues(g);
        const auto before = b.gi->snapshot();
        uint64_t ws1 = 1, ws2 = 2;
        aclOpExecutor *e1 = nullptr, *e2 = nullptr;
        ASSERT_EQ(b.phase1(&ws1, &e1), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(b.phase1(&ws2, &e2), ACLNN_SUCCESS) << recentErr();
        ASSERT_NE(e1, nullptr);
        ASSERT_NE(e2, nullptr);
        EXPECT_NE(e1, e2);
        EXPECT_EQ(ws1, ws2);
        EXPECT_TRUE(b.gi->sameBytes(before)) << "phase 1 wrote to gradInput";
        Workspace w1, w2;
        ASSERT_EQ(run(w1.ptr(ws1), ws1, e1), ACLNN_SUCCESS) << recentErr();
        const auto bits1 = b.gi->bits();
        b.gi->setValues(std::vector<double>(static_cast<size_t>(b.gi->count()), 0.0));
        ASSERT_EQ(run(w2.ptr(ws2), ws2, e2), ACLNN_SUCCESS) << recentErr();
        EXPECT_EQ(bits1, b.gi->bits());
    }
}

TEST(BackwardWorkspace, TooSmallOrNullWorkspaceFailsCleanly) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    int withWorkspace = 0;
    for (const WsConfig &c : kWsConfigs) {
        SCOPED_TRACE(c.name);
        Attrs a = A({3}, S({2}), {1}, true, false);
        a.cubeMathType = c.cube;
        Bound b(c.dt, {2, 8, 17, 19}, a);
        const auto g = b.randomGrad(2);
        b.go->setValues(g);
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
        Workspace w;
        void *wp = w.ptr(ws);
        if (ws > 0) {
            ++withWorkspace;
            const auto before = b.gi->snapshot();
            const aclnnStatus small = run(wp, ws - 1, exec);
            EXPECT_TRUE(small == ACLNN_ERR_PARAM_INVALID || small == ACLNN_ERR_RUNTIME_ERROR) << small;
            EXPECT_FALSE(recentErr().empty());
            const aclnnStatus none = run(nullptr, ws, exec);
            EXPECT_TRUE(none == ACLNN_ERR_PARAM_INVALID || none == ACLNN_ERR_RUNTIME_ERROR) << none;
            EXPECT_FALSE(recentErr().empty());
            EXPECT_TRUE(b.gi->sameBytes(before)) << "a failed phase 2 wrote to gradInput";
        }
        // A larger workspace is fine, and so is the exact one (after the failures above).
        Workspace big;
        ASSERT_EQ(run(big.ptr(ws + 4096), ws + 4096, exec), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        std::vector<double> absSum;
        const auto ref = b.reference(g, &absSum);
        if (c.cube == 0) {
            EXPECT_TRUE(closeToReference(c.dt, b.gi->values(), ref, absSum));
        }
        EXPECT_TRUE(b.gi->canaryIntact());
        EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    }
    // The cast / rounding intermediates live in the workspace (architecture.md): at least one
    // configuration must ask for one, or the checks above exercised nothing.
    EXPECT_GT(withWorkspace, 0) << "no configuration needed a workspace; the too-small case was not exercised";
}

// ------------------------------------------------------------------------------------------------
// Executors
// ------------------------------------------------------------------------------------------------
TEST(BackwardExecutor, ConsumedExecutorRunAgainFailsWithoutWriting) {  // R9
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const WsConfig &c : kWsConfigs) {
        SCOPED_TRACE(c.name);
        Attrs a = A({2}, S({1}), {0});
        a.cubeMathType = c.cube;
        Bound b(c.dt, {2, 4, 9, 9}, a);
        b.go->setValues(b.randomGrad(3));
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
        Workspace w;
        void *wp = w.ptr(ws);
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        b.gi->fillViewBytes(0x5A);
        const auto before = b.gi->snapshot();
        const aclnnStatus again = run(wp, ws, exec);
        EXPECT_NE(again, ACLNN_SUCCESS);
        EXPECT_EQ(again, ACLNN_ERR_RUNTIME_ERROR);
        EXPECT_FALSE(recentErr().empty());
        EXPECT_TRUE(b.gi->sameBytes(before)) << "a consumed executor wrote to gradInput";
    }
}

TEST(BackwardExecutor, RepeatableRunsManyTimesAndFollowsAddressUpdates) {  // R10
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
    recentErr();
    for (const WsConfig &c : kWsConfigs) {
        SCOPED_TRACE(c.name);
        Attrs a = A({3}, S({2}), {1}, true, true);
        a.cubeMathType = c.cube;
        const CubeRound rnd = roundingOf(cubeExpect("atlas-a2", c.dt, c.cube));
        Bound b(c.dt, {2, 5, 13, 11}, a);
        auto refOf = [&](const std::vector<double> &g, std::vector<double> &absSum) {
            std::vector<double> ref;
            referenceBackward(b.selfDims, a, g, rnd, ref, &absSum);
            return ref;
        };
        const auto g1 = b.randomGrad(10);
        b.go->setValues(g1);
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
        Workspace w;
        void *wp = w.ptr(ws);
        std::vector<double> abs1;
        const auto ref1 = refOf(g1, abs1);
        std::vector<uint32_t> first;
        for (int i = 0; i < 4; ++i) {
            b.gi->setValues(std::vector<double>(static_cast<size_t>(b.gi->count()), -7.0));
            ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << "run " << i << ": " << recentErr();
            if (i == 0) {
                first = b.gi->bits();
                EXPECT_TRUE(closeToReference(c.dt, b.gi->values(), ref1, abs1));
            } else {
                EXPECT_EQ(first, b.gi->bits()) << "run " << i;
            }
        }
        // New data at the same address.
        const auto g2 = b.randomGrad(11);
        b.go->setValues(g2);
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        std::vector<double> abs2;
        EXPECT_TRUE(closeToReference(c.dt, b.gi->values(), refOf(g2, abs2), abs2)) << "in-place update";
        // aclSetInputTensorAddr: gradOutput (input 0) moves to another buffer.
        const aclFormat fmt = formatForRank(b.selfDims.size());
        Tensor go3(c.dt, b.goDims, fmt);
        const auto g3 = b.randomGrad(12);
        go3.setValues(g3);
        ASSERT_EQ(aclSetInputTensorAddr(exec, 0, b.go->get(), go3.data()), ACLNN_SUCCESS);
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        std::vector<double> abs3;
        EXPECT_TRUE(closeToReference(c.dt, b.gi->values(), refOf(g3, abs3), abs3)) << "aclSetInputTensorAddr";
        // self (input 1) moves too: its data is not read, the result is unchanged.
        Tensor self2(c.dt, b.selfDims, fmt);
        self2.setValues(randomValues(static_cast<size_t>(self2.count()), c.dt, 77));
        ASSERT_EQ(aclSetInputTensorAddr(exec, 1, b.self->get(), self2.data()), ACLNN_SUCCESS);
        // aclSetOutputTensorAddr: gradInput (output 0) moves; the old buffer is left alone.
        Tensor gi2(c.dt, b.selfDims, fmt);
        gi2.setValues(std::vector<double>(static_cast<size_t>(gi2.count()), 55.0));
        b.gi->fillViewBytes(0x3C);
        const auto oldOut = b.gi->snapshot();
        ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, b.gi->get(), gi2.data()), ACLNN_SUCCESS);
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        EXPECT_TRUE(closeToReference(c.dt, gi2.values(), refOf(g3, abs3), abs3)) << "aclSetOutputTensorAddr";
        EXPECT_TRUE(gi2.canaryIntact());
        EXPECT_TRUE(b.gi->sameBytes(oldOut)) << "the previous output buffer was written";
        // aclSetRawTensorAddr on the bound gradOutput tensor.
        Tensor go4(c.dt, b.goDims, fmt);
        const auto g4 = b.randomGrad(13);
        go4.setValues(g4);
        ASSERT_EQ(aclSetRawTensorAddr(b.go->get(), go4.data()), ACLNN_SUCCESS);
        void *raw = nullptr;
        ASSERT_EQ(aclGetRawTensorAddr(b.go->get(), &raw), ACLNN_SUCCESS);
        EXPECT_EQ(raw, go4.data());
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        std::vector<double> abs4;
        EXPECT_TRUE(closeToReference(c.dt, gi2.values(), refOf(g4, abs4), abs4)) << "aclSetRawTensorAddr";
        EXPECT_TRUE(go4.canaryIntact());
        EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    }
}

// ------------------------------------------------------------------------------------------------
// Non-contiguous views: the same bits as contiguous tensors; writes only inside the output view;
// inputs untouched.
// ------------------------------------------------------------------------------------------------
struct ViewCase {
    std::string name;
    std::vector<int64_t> self;
    Layout go, self_, gi;
    bool broadcastN = false;  // gradOutput has stride 0 along N (values equal across N)
};

void PrintTo(const ViewCase &v, std::ostream *os) { *os << v.name; }

class BackwardViews : public ::testing::TestWithParam<std::tuple<ViewCase, aclDataType>> {};

TEST_P(BackwardViews, SameBitsAsContiguous) {
    const ViewCase &v = std::get<0>(GetParam());
    const aclDataType dt = std::get<1>(GetParam());
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const Attrs a = A({3}, S({2}), {1}, true, false);
    const auto goDims = pooledDims(v.self, resolve(a));
    auto g = randomValues(static_cast<size_t>(numel(goDims)), dt, 31);
    if (v.broadcastN) {
        const size_t per = g.size() / static_cast<size_t>(goDims[0]);
        for (size_t i = per; i < g.size(); ++i) g[i] = g[i % per];
    }
    const RunResult contiguous = runBackward(dt, v.self, a, g);
    ASSERT_EQ(contiguous.phase1, ACLNN_SUCCESS) << contiguous.message;
    ASSERT_EQ(contiguous.phase2, ACLNN_SUCCESS) << contiguous.message;
    const RunResult view = runBackward(dt, v.self, a, g, v.go, v.self_, v.gi);
    ASSERT_EQ(view.phase1, ACLNN_SUCCESS) << view.message;
    ASSERT_EQ(view.phase2, ACLNN_SUCCESS) << view.message;
    EXPECT_EQ(view.outBits, contiguous.outBits);
    EXPECT_TRUE(view.outCanaryIntact) << "write outside the gradInput view: " << view.canaryWhere;
    EXPECT_TRUE(view.inputsUnchanged);
    std::vector<double> ref, absSum;
    referenceBackward(v.self, a, g, CubeRound::None, ref, &absSum);
    EXPECT_TRUE(closeToReference(dt, view.out, ref, absSum));
}

const std::vector<ViewCase> &viewCases() {
    static const std::vector<ViewCase> v{
        {"gradOutput_channels_last", {2, 5, 9, 11}, Layout{{0, 2, 3, 1}, {}, 0, {}}, {}, {}},
        {"gradInput_padded_rows_offset", {2, 5, 9, 11}, {}, {}, Layout{{}, {0, 0, 1, 3}, 7, {}}},
        {"gradInput_channels_last_offset", {2, 5, 9, 11}, {}, {}, Layout{{0, 2, 3, 1}, {}, 5, {}}},
        {"self_transposed_hw", {2, 5, 9, 11}, {}, Layout{{0, 1, 3, 2}, {}, 0, {}}, {}},
        {"all_mixed",
         {2, 5, 9, 11},
         Layout{{1, 0, 3, 2}, {0, 1, 0, 2}, 3, {}},
         Layout{{0, 2, 3, 1}, {}, 0, {}},
         Layout{{3, 2, 1, 0}, {1, 0, 2, 0}, 11, {}}},
        {"gradOutput_broadcast_n", {3, 4, 8, 8}, Layout{{}, {}, 0, {0}}, {}, {}, true},
        {"rank3_views", {5, 9, 11}, Layout{{}, {1, 0, 2}, 4, {}}, {}, Layout{{2, 0, 1}, {}, 2, {}}},
    };
    return v;
}

INSTANTIATE_TEST_SUITE_P(Layouts, BackwardViews,
                         ::testing::Combine(::testing::ValuesIn(viewCases()),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16)),
                         [](const ::testing::TestParamInfo<std::tuple<ViewCase, aclDataType>> &info) {
                             return std::get<0>(info.param).name + "_" + dtName(std::get<1>(info.param));
                         });

// ------------------------------------------------------------------------------------------------
// Empty tensors (R7): success, workspace 0, nothing written.
// ------------------------------------------------------------------------------------------------
TEST(BackwardEmpty, SucceedsWithZeroWorkspaceAndNoWrites) {
    struct Row {
        std::string product;
        aclDataType dt;
        int8_t cube;
        std::vector<int64_t> self;
    };
    for (const Row &r : {Row{"atlas-a2", ACL_FLOAT, 0, {0, 3, 6, 6}}, Row{"atlas-a2", ACL_FLOAT16, 0, {2, 0, 6, 6}},
                         Row{"atlas-a2", ACL_BF16, 0, {0, 0, 6, 6}}, Row{"atlas-a2", ACL_FLOAT, 3, {0, 6, 6}},
                         Row{"atlas-a3", ACL_FLOAT, 2, {0, 3, 6, 6}}, Row{"atlas-training", ACL_FLOAT, 1, {0, 3, 6, 6}},
                         Row{"atlas-inference", ACL_FLOAT16, 0, {3, 0, 5, 7}}}) {
        SCOPED_TRACE(r.product + " " + dtName(r.dt) + " " + dimsStr(r.self));
        ASSERT_NO_FATAL_FAILURE(Runtime::use(r.product));
        Attrs a = A({3}, S({2}), {1}, true, false);
        a.cubeMathType = r.cube;
        Bound b(r.dt, r.self, a);
        const auto goSnap = b.go->snapshot(), giSnap = b.gi->snapshot();
        uint64_t ws = 12345;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
        EXPECT_EQ(ws, 0u);
        ASSERT_EQ(run(nullptr, 0, exec), ACLNN_SUCCESS) << recentErr();
        EXPECT_TRUE(b.gi->sameBytes(giSnap)) << "gradInput storage touched";
        EXPECT_TRUE(b.go->sameBytes(goSnap));
    }
}

TEST(BackwardEmpty, ArgumentChecksStillApply) {
    // NULL kernelSize on an empty problem.
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    {
        Bound b(ACL_FLOAT, {0, 3, 6, 6}, A({3}, S({2}), {1}));
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(b.go->get(), b.self->get(), nullptr, b.s->a, b.p->a, false,
                                                         true, 0, 0, b.gi->get(), &ws, &exec),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_TRUE(messageContains(recentErr(), {"kernelSize"}));
        // kernel 0 on an empty problem.
        IntArray k0(std::vector<int64_t>{0});
        EXPECT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(b.go->get(), b.self->get(), k0.a, b.s->a, b.p->a, false,
                                                         true, 0, 0, b.gi->get(), &ws, &exec),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(recentErr(), {"kernelSize"}));
        // gradInput shape != self shape.
        Tensor gi2(ACL_FLOAT, {0, 3, 6, 7}, ACL_FORMAT_NCHW);
        EXPECT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(b.go->get(), b.self->get(), b.k->a, b.s->a, b.p->a, false,
                                                         true, 0, 0, gi2.get(), &ws, &exec),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(recentErr(), {"gradInput"}));
    }
    // BF16 on training, empty.
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    {
        Bound b(ACL_BF16, {0, 3, 6, 6}, A({3}, S({2}), {1}));
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(b.phase1(&ws, &exec), ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(recentErr(), {"Atlas training series"}));
    }
}

// ------------------------------------------------------------------------------------------------
// Determinism: identical bytes run to run and with 1, 2 and 3 threads.
// ------------------------------------------------------------------------------------------------
TEST(BackwardDeterminism, IdenticalBytesAcrossRunsAndThreadCounts) {
    const std::vector<int64_t> self{4, 32, 40, 40};
    const std::vector<Attrs> attrs{A({3}, S({1}), {1}, false, false), A({3}, S({2}), {1}, true, true, -3),
                                   A({4, 3}, S({2, 1}), {2, 1}, true, false)};
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        for (size_t ai = 0; ai < attrs.size(); ++ai) {
            SCOPED_TRACE(std::string(dtName(dt)) + " attrs #" + std::to_string(ai));
            const Attrs &a = attrs[ai];
            const auto goDims = pooledDims(self, resolve(a));
            const auto g = randomValues(static_cast<size_t>(numel(goDims)), dt, 41 + ai);
            std::vector<uint32_t> base;
            for (int threads : {1, 2, 3}) {
                ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
                for (int rep = 0; rep < 2; ++rep) {
                    const RunResult r = runBackward(dt, self, a, g);
                    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                    if (base.empty()) {
                        base = r.outBits;
                        std::vector<double> ref, absSum;
                        referenceBackward(self, a, g, CubeRound::None, ref, &absSum);
                        EXPECT_TRUE(closeToReference(dt, r.out, ref, absSum));
                    } else {
                        EXPECT_EQ(r.outBits, base) << "threads " << threads << " run " << rep;
                    }
                }
            }
        }
    }
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", 2));
}

// Phase 1 and phase 2 are thread-safe: concurrent callers on their own streams.
TEST(BackwardConcurrency, ConcurrentCallersGetTheirOwnResults) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", 2));
    constexpr int kThreads = 4;
    const std::vector<int64_t> self{2, 16, 24, 24};
    const Attrs a = A({3}, S({2}), {1}, true, false);
    const auto goDims = pooledDims(self, resolve(a));
    std::vector<std::vector<double>> grads(kThreads);
    std::vector<RunResult> results(kThreads);
    for (int t = 0; t < kThreads; ++t) grads[t] = randomValues(static_cast<size_t>(numel(goDims)), ACL_FLOAT, 100 + t);
    std::vector<std::thread> threads;
    std::vector<aclrtStream> streams(kThreads, nullptr);
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(aclrtCreateStream(&streams[t]), ACL_SUCCESS);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 3; ++rep) results[t] = runBackward(ACL_FLOAT, self, a, grads[t], {}, {}, {}, streams[t]);
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        SCOPED_TRACE(t);
        aclrtDestroyStream(streams[t]);
        ASSERT_EQ(results[t].phase1, ACLNN_SUCCESS) << results[t].message;
        ASSERT_EQ(results[t].phase2, ACLNN_SUCCESS) << results[t].message;
        std::vector<double> ref, absSum;
        referenceBackward(self, a, grads[t], CubeRound::None, ref, &absSum);
        EXPECT_TRUE(closeToReference(ACL_FLOAT, results[t].out, ref, absSum));
    }
}

// The published sample's path: aclrtMalloc'd device buffers, aclrtMemcpy in and out.
TEST(BackwardClient, PublishedSampleFlow) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<int64_t> selfShape{1, 16, 4, 4}, goShape{1, 16, 2, 2};
    const std::vector<int64_t> selfStrides{256, 16, 4, 1}, goStrides{64, 4, 2, 1};
    std::vector<float> goHost(64), selfHost(256, 1.0f), giHost(256, -1.0f);
    for (size_t i = 0; i < goHost.size(); ++i) goHost[i] = static_cast<float>(i % 9) - 4.0f;
    void *goDev = nullptr, *selfDev = nullptr, *giDev = nullptr;
    ASSERT_EQ(aclrtMalloc(&goDev, 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&selfDev, 256 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&giDev, 256 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(goDev, 64 * 4, goHost.data(), 64 * 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(selfDev, 256 * 4, selfHost.data(), 256 * 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(giDev, 256 * 4, giHost.data(), 256 * 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    aclTensor *go = aclCreateTensor(goShape.data(), 4, ACL_FLOAT, goStrides.data(), 0, ACL_FORMAT_NCHW, goShape.data(),
                                    4, goDev);
    aclTensor *self = aclCreateTensor(selfShape.data(), 4, ACL_FLOAT, selfStrides.data(), 0, ACL_FORMAT_NCHW,
                                      selfShape.data(), 4, selfDev);
    aclTensor *gi = aclCreateTensor(selfShape.data(), 4, ACL_FLOAT, selfStrides.data(), 0, ACL_FORMAT_NCHW,
                                    selfShape.data(), 4, giDev);
    ASSERT_TRUE(go && self && gi);
    const int64_t kv[2] = {2, 2}, sv[2] = {2, 2}, pv[2] = {0, 0};
    aclIntArray *k = aclCreateIntArray(kv, 2), *s = aclCreateIntArray(sv, 2), *p = aclCreateIntArray(pv, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, k, s, p, false, true, 0, 0, gi, &ws, &exec),
              ACLNN_SUCCESS)
        << recentErr();
    void *wsAddr = nullptr;
    if (ws > 0) {
        ASSERT_EQ(aclrtMalloc(&wsAddr, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    ASSERT_EQ(aclnnAvgPool2dBackward(wsAddr, ws, exec, Runtime::stream()), ACLNN_SUCCESS) << recentErr();
    ASSERT_EQ(aclrtSynchronizeStream(Runtime::stream()), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(giHost.data(), 256 * 4, giDev, 256 * 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int c = 0; c < 16; ++c)
        for (int h = 0; h < 4; ++h)
            for (int w = 0; w < 4; ++w) {
                const float want = goHost[static_cast<size_t>(c * 4 + (h / 2) * 2 + w / 2)] / 4.0f;
                ASSERT_EQ(giHost[static_cast<size_t>(c * 16 + h * 4 + w)], want) << c << "," << h << "," << w;
            }
    aclDestroyTensor(go);
    aclDestroyTensor(self);
    aclDestroyTensor(gi);
    aclDestroyIntArray(k);
    aclDestroyIntArray(s);
    aclDestroyIntArray(p);
    if (wsAddr) aclrtFree(wsAddr);
    aclrtFree(goDev);
    aclrtFree(selfDev);
    aclrtFree(giDev);
}

}  // namespace
}  // namespace apt
