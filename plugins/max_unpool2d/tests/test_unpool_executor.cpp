// MaxUnpool2dBackward execution contract: workspace (exact, too small, NULL), executors (single use
// R9, repeatable with new addresses R10), determinism across runs and 1 / 2 / 3 threads, and
// concurrent callers.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

// One backward problem with its tensors kept alive (for executor-level tests).
struct Bound {
    BackwardCase c;
    std::unique_ptr<Tensor> go, self, idx, out;
    std::unique_ptr<IntArray> os;
    Bits goBits;
    std::vector<int64_t> ix;

    explicit Bound(const BackwardCase &c_, uint64_t seed = 1) : c(c_) {
        go = std::make_unique<Tensor>(c.dt, c.goDims());
        self = std::make_unique<Tensor>(c.dt, c.selfDims);
        idx = std::make_unique<Tensor>(c.idxDt, c.selfDims);
        out = std::make_unique<Tensor>(c.outDt, c.selfDims, ACL_FORMAT_ND, c.outL);
        os = std::make_unique<IntArray>(std::vector<int64_t>{c.oH, c.oW});
        goBits = randomBits(static_cast<size_t>(go->count()), c.dt, seed);
        ix = randomIndices(c.planes(), c.plane(), c.oH * c.oW, seed + 1);
        go->setBits(goBits);
        idx->setInts(ix);
        self->fillViewBytes(0);
        out->fillViewBytes(0x5A);
    }
    aclnnStatus phase1(uint64_t *ws, aclOpExecutor **exec) const {
        return aclnnMaxUnpool2dBackwardGetWorkspaceSize(go->get(), self->get(), idx->get(), os->a, out->get(), ws, exec);
    }
    Bits reference() const {
        Bits want;
        EXPECT_FALSE(referenceBackward(c, goBits, ix, want));
        return want;
    }
};

aclnnStatus run(void *ws, uint64_t size, aclOpExecutor *exec) {
    const aclnnStatus st = aclnnMaxUnpool2dBackward(ws, size, exec, Runtime::stream());
    aclrtSynchronizeStream(Runtime::stream());
    return st;
}

BackwardCase config(aclDataType dt, aclDataType outDt, std::vector<int64_t> self = {2, 5, 9, 11}, int64_t oH = 18,
                    int64_t oW = 22) {
    BackwardCase c;
    c.dt = dt;
    c.outDt = outDt;
    c.selfDims = std::move(self);
    c.oH = oH;
    c.oW = oW;
    return c;
}

// ------------------------------------------------------------------------------------------------
// Workspace
// ------------------------------------------------------------------------------------------------
TEST(Workspace, Phase1IsDeterministicAndComputesNothing) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const auto &[dt, outDt] : {std::pair{ACL_FLOAT, ACL_FLOAT}, std::pair{ACL_FLOAT, ACL_FLOAT16},
                                    std::pair{ACL_INT16, ACL_INT64}}) {
        SCOPED_TRACE(std::string(dtName(dt)) + " -> " + dtName(outDt));
        Bound b(config(dt, outDt));
        const auto before = b.out->snapshot();
        uint64_t ws1 = 1, ws2 = 2;
        aclOpExecutor *e1 = nullptr, *e2 = nullptr;
        ASSERT_EQ(b.phase1(&ws1, &e1), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(b.phase1(&ws2, &e2), ACLNN_SUCCESS) << recentErr();
        EXPECT_EQ(ws1, ws2);
        EXPECT_EQ(ws1, dt == outDt ? 0u : static_cast<uint64_t>(numel(b.c.selfDims)) * elemSize(dt));
        EXPECT_TRUE(b.out->sameBytes(before)) << "phase 1 wrote to out";
        Workspace w1, w2;
        ASSERT_EQ(run(w1.ptr(ws1), ws1, e1), ACLNN_SUCCESS) << recentErr();
        const Bits first = b.out->bits();
        EXPECT_TRUE(sameBits(first, b.reference()));
        b.out->fillViewBytes(0);
        ASSERT_EQ(run(w2.ptr(ws2), ws2, e2), ACLNN_SUCCESS) << recentErr();
        EXPECT_EQ(first, b.out->bits());
    }
}

TEST(Workspace, TooSmallOrNullWorkspaceFailsCleanly) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Bound b(config(ACL_INT32, ACL_FLOAT16));  // a cast: the gather's result lives in the workspace
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
    ASSERT_GT(ws, 0u);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    Workspace w;
    void *wp = w.ptr(ws);
    const auto before = b.out->snapshot();
    const aclnnStatus small = run(wp, ws - 1, exec);
    EXPECT_TRUE(small == ACLNN_ERR_PARAM_INVALID || small == ACLNN_ERR_RUNTIME_ERROR) << small;
    EXPECT_FALSE(recentErr().empty());
    const aclnnStatus none = run(nullptr, ws, exec);
    EXPECT_TRUE(none == ACLNN_ERR_PARAM_INVALID || none == ACLNN_ERR_RUNTIME_ERROR) << none;
    EXPECT_FALSE(recentErr().empty());
    EXPECT_TRUE(b.out->sameBytes(before)) << "a failed phase 2 wrote to out";
    Workspace big;
    ASSERT_EQ(run(big.ptr(ws + 4096), ws + 4096, exec), ACLNN_SUCCESS) << recentErr();
    ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
    EXPECT_TRUE(sameBits(b.out->bits(), b.reference()));
    EXPECT_TRUE(b.out->canaryIntact());
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

// ------------------------------------------------------------------------------------------------
// Executors
// ------------------------------------------------------------------------------------------------
TEST(Executor, ConsumedExecutorRunAgainIsAnErrorNotACrash) {  // R9
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Bound b(config(ACL_FLOAT, ACL_FLOAT));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
    ASSERT_EQ(run(nullptr, ws, exec), ACLNN_SUCCESS) << recentErr();
    b.out->fillViewBytes(0x11);
    const auto before = b.out->snapshot();
    EXPECT_NE(run(nullptr, ws, exec), ACLNN_SUCCESS);
    EXPECT_FALSE(recentErr().empty());
    EXPECT_TRUE(b.out->sameBytes(before));
}

TEST(Executor, RepeatableExecutorWithNewAddresses) {  // R10
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType outDt : {ACL_FLOAT, ACL_FLOAT16}) {
        SCOPED_TRACE(dtName(outDt));
        Bound b(config(ACL_FLOAT, outDt), 7);
        Bound other(config(ACL_FLOAT, outDt), 8);  // same shapes, other data and addresses
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
        Workspace w;
        void *wp = w.ptr(ws);
        for (int i = 0; i < 3; ++i) {
            b.out->fillViewBytes(0);
            ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
            EXPECT_TRUE(sameBits(b.out->bits(), b.reference()));
        }
        ASSERT_EQ(aclSetInputTensorAddr(exec, 0, b.go->get(), other.go->data()), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(aclSetInputTensorAddr(exec, 2, b.idx->get(), other.idx->data()), ACLNN_SUCCESS) << recentErr();
        ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, b.out->get(), other.out->data()), ACLNN_SUCCESS) << recentErr();
        const auto mine = b.out->snapshot();
        ASSERT_EQ(run(wp, ws, exec), ACLNN_SUCCESS) << recentErr();
        EXPECT_TRUE(sameBits(other.out->bits(), other.reference()));
        EXPECT_TRUE(b.out->sameBytes(mine)) << "the old out was written after its address was replaced";
        EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    }
}

// ------------------------------------------------------------------------------------------------
// Determinism: identical bytes run to run and at 1, 2 and 3 threads (few planes split into rows,
// many planes, a cast, strided output).
// ------------------------------------------------------------------------------------------------
TEST(Determinism, SameBytesAtAnyThreadCount) {
    std::vector<BackwardCase> cases{config(ACL_FLOAT, ACL_FLOAT, {1, 3, 57, 61}, 114, 122),
                                    config(ACL_FLOAT, ACL_FLOAT16, {4, 40, 14, 14}, 28, 28),
                                    config(ACL_INT8, ACL_INT8, {130, 9, 9}, 18, 18)};
    cases[2].outL.extra = {0, 1, 3};
    std::vector<Bits> first(cases.size());
    for (int threads : {1, 2, 3}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
        for (size_t k = 0; k < cases.size(); ++k) {
            SCOPED_TRACE("case " + std::to_string(k) + " threads " + std::to_string(threads));
            for (int rep = 0; rep < 2; ++rep) {
                Bound b(cases[k], 9);
                uint64_t ws = 0;
                aclOpExecutor *exec = nullptr;
                ASSERT_EQ(b.phase1(&ws, &exec), ACLNN_SUCCESS) << recentErr();
                Workspace w;
                ASSERT_EQ(run(w.ptr(ws), ws, exec), ACLNN_SUCCESS) << recentErr();
                const Bits got = b.out->bits();
                if (first[k].empty()) {
                    first[k] = got;
                    EXPECT_TRUE(sameBits(got, b.reference()));
                }
                EXPECT_EQ(got, first[k]);
            }
        }
    }
}

TEST(Concurrency, TwoCallersOnTheirOwnStreams) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Bound a(config(ACL_FLOAT, ACL_FLOAT, {8, 16, 20, 20}, 40, 40), 11);
    Bound b(config(ACL_FLOAT16, ACL_FLOAT, {8, 16, 20, 20}, 40, 40), 12);
    aclrtStream sa = nullptr, sb = nullptr;
    ASSERT_EQ(aclrtCreateStream(&sa), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&sb), ACL_SUCCESS);
    aclnnStatus rA = -1, rB = -1;
    auto call = [](Bound &x, aclrtStream s, aclnnStatus &st) {
        for (int rep = 0; rep < 3; ++rep) {
            uint64_t ws = 0;
            aclOpExecutor *exec = nullptr;
            st = x.phase1(&ws, &exec);
            if (st != ACLNN_SUCCESS) return;
            Workspace w;
            st = aclnnMaxUnpool2dBackward(w.ptr(ws), ws, exec, s);
            aclrtSynchronizeStream(s);
            if (st != ACLNN_SUCCESS) return;
        }
    };
    std::thread t([&] { call(a, sa, rA); });
    call(b, sb, rB);
    t.join();
    aclrtDestroyStream(sa);
    aclrtDestroyStream(sb);
    EXPECT_EQ(rA, ACLNN_SUCCESS);
    EXPECT_EQ(rB, ACLNN_SUCCESS);
    EXPECT_TRUE(sameBits(a.out->bits(), a.reference()));
    EXPECT_TRUE(sameBits(b.out->bits(), b.reference()));
}

}  // namespace
}  // namespace upt
