// The two-phase contract on MaxPool2dWithMaskBackward / MaxPool2dWithMask: the workspace is exact
// and phase 1 deterministic, a smaller workspace fails cleanly, a consumed executor fails cleanly,
// a repeatable executor runs again after its tensors move, and a bad mask in a repeated run is
// reported each time.
#include "mpool_test_util.hpp"

namespace mpt {
namespace {

struct Bound {
    Problem pr;
    Tensor go, self, gi, mask;
    IntArray k, s, p, d;
    Bound(const Problem &q, aclDataType dt)
        : pr(q), go(dt, q.outDims(), q.format()), self(dt, q.selfDims(), q.format()), gi(dt, q.selfDims(), q.format()),
          mask(ACL_INT8, q.maskDims(), q.format(), Layout{{}, {0, 0, 0, 8}, 0}),  // padded rows: a workspace copy
          k(q.kernel()), s(q.stride()), p(q.padding()), d(std::vector<int64_t>{1}) {}
    aclnnStatus plan(uint64_t *ws, aclOpExecutor **exec) {
        return aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(go.get(), self.get(), mask.get(), k.a, s.a, p.a, d.a,
                                                              pr.pool.ceil, gi.get(), ws, exec);
    }
};

Problem problem() {
    Problem pr;
    pr.pool = {2, 3, 9, 9, 3, 3, 2, 2, 1, 1, false};
    return pr;
}

TEST(MaxPool2dWithMaskExecutor, WorkspaceIsExactAndChecked) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const Problem pr = problem();
    const mref::Pool &p = pr.pool;
    Bound b(pr, ACL_FLOAT);
    const RandomMask m = randomMask(p, 3, false);
    b.mask.setBytes(mref::maskInt32(p, m.idx));
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 4);
    b.go.setValues(go);
    uint64_t ws1 = 0, ws2 = 0;
    aclOpExecutor *e1 = nullptr, *e2 = nullptr;
    ASSERT_EQ(b.plan(&ws1, &e1), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(b.plan(&ws2, &e2), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(ws1, ws2);
    EXPECT_GE(ws1, static_cast<uint64_t>(p.maskBytes()));  // the mask copy lives in the workspace
    Workspace w;
    EXPECT_NE(aclnnMaxPool2dWithMaskBackward(w.ptr(ws1), ws1 - 1, e1, Runtime::stream()), ACLNN_SUCCESS);
    EXPECT_NE(aclnnMaxPool2dWithMaskBackward(nullptr, ws2, e2, Runtime::stream()), ACLNN_SUCCESS);
    // consumed executors
    EXPECT_EQ(aclnnMaxPool2dWithMaskBackward(w.ptr(ws1), ws1, e1, Runtime::stream()), 361001);
}

TEST(MaxPool2dWithMaskExecutor, RepeatableExecutorFollowsNewAddresses) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    const Problem pr = problem();
    const mref::Pool &p = pr.pool;
    Bound a(pr, ACL_FLOAT16), b(pr, ACL_FLOAT16);
    const RandomMask ma = randomMask(p, 5, false), mb = randomMask(p, 6, false);
    const auto ga = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 7);
    const auto gb = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 8);
    a.go.setValues(ga), a.mask.setBytes(mref::maskBits(p, ma.bits));
    b.go.setValues(gb), b.mask.setBytes(mref::maskBits(p, mb.bits));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(a.plan(&ws, &exec), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    Workspace w;
    void *wp = w.ptr(ws);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(aclnnMaxPool2dWithMaskBackward(wp, ws, exec, Runtime::stream()), ACLNN_SUCCESS);
    EXPECT_TRUE(sameBits(ACL_FLOAT16, a.gi.bits(), mref::backward(p, ga, mref::routesBits(p, ma.bits), mref::Dt::F16, false)));
    // inputs gradOutput (0), self (1), indices (2); output gradInput (0)
    ASSERT_EQ(aclSetInputTensorAddr(exec, 0, a.go.get(), b.go.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetInputTensorAddr(exec, 2, a.mask.get(), b.mask.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, a.gi.get(), b.gi.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnMaxPool2dWithMaskBackward(wp, ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    EXPECT_TRUE(sameBits(ACL_FLOAT16, b.gi.bits(), mref::backward(p, gb, mref::routesBits(p, mb.bits), mref::Dt::F16, false)));
    EXPECT_TRUE(b.gi.canaryIntact());
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

TEST(MaxPool2dWithMaskExecutor, BadMaskIsReportedOnEveryRun) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a3"));
    const Problem pr = problem();
    const mref::Pool &p = pr.pool;
    Bound b(pr, ACL_BF16);
    RandomMask m = randomMask(p, 9, false);
    m.idx[5] = 80;  // outside output 5's window
    b.mask.setBytes(mref::maskInt32(p, m.idx));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(b.plan(&ws, &exec), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    Workspace w;
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(aclnnMaxPool2dWithMaskBackward(w.ptr(ws), ws, exec, Runtime::stream()), 361001);
        EXPECT_NE(lastError().find("holds 80"), std::string::npos);
    }
    EXPECT_TRUE(b.gi.canaryIntact());
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace mpt
