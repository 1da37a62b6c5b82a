// The two-phase contract on GridSampler2DBackward: phase 1 is deterministic and the workspace
// exact, a smaller or NULL workspace fails cleanly, a consumed executor fails cleanly (R9), a
// repeatable executor runs again after its tensors move (R10).
#include "grid_test_util.hpp"

namespace gst {
namespace {

struct Bound {
    gref::Problem p;
    Tensor go, in, grid, ig, gg;
    aclBoolArray *mask;
    Bound(const gref::Problem &q, aclDataType dt)
        : p(q), go(dt, outDims(q)), in(dt, inDims(q)), grid(dt, gridDims(q)), ig(dt, inDims(q)), gg(dt, gridDims(q)) {
        const bool m[2] = {true, true};
        mask = aclCreateBoolArray(m, 2);
    }
    ~Bound() { aclDestroyBoolArray(mask); }
    void fill(const Data &d) {
        go.setValues(d.gradOutput);
        in.setValues(d.input);
        grid.setValues(d.grid);
    }
    aclnnStatus plan(uint64_t *ws, aclOpExecutor **exec) {
        return aclnnGridSampler2DBackwardGetWorkspaceSize(go.get(), in.get(), grid.get(), p.interp, p.padding, p.align, mask,
                                                          ig.get(), gg.get(), ws, exec);
    }
};

TEST(GridSampler2DExecutor, WorkspaceIsExactAndChecked) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const gref::Problem p{1, 16, 20, 20, 40, 40, 0, 0, false};  // N = 1: private accumulators in the workspace
    Bound b(p, ACL_FLOAT);
    b.fill(randomData(p, ACL_FLOAT, 1));
    uint64_t ws1 = 0, ws2 = 0;
    aclOpExecutor *e1 = nullptr, *e2 = nullptr;
    ASSERT_EQ(b.plan(&ws1, &e1), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(b.plan(&ws2, &e2), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(ws1, ws2);
    EXPECT_GT(ws1, 0u);
    Workspace w;
    EXPECT_NE(aclnnGridSampler2DBackward(w.ptr(ws1), ws1 - 1, e1, Runtime::stream()), ACLNN_SUCCESS);
    EXPECT_NE(aclnnGridSampler2DBackward(nullptr, ws2, e2, Runtime::stream()), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnGridSampler2DBackward(w.ptr(ws1), ws1, e1, Runtime::stream()), 361001);  // consumed
}

TEST(GridSampler2DExecutor, RepeatableExecutorFollowsNewAddresses) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    const gref::Problem p{2, 5, 6, 7, 5, 5, 2, 2, true};
    Bound a(p, ACL_FLOAT16), b(p, ACL_FLOAT16);
    const Data da = randomData(p, ACL_FLOAT16, 2), db = randomData(p, ACL_FLOAT16, 3);
    a.fill(da);
    b.fill(db);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(a.plan(&ws, &exec), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    Workspace w;
    void *wp = w.ptr(ws);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(aclnnGridSampler2DBackward(wp, ws, exec, Runtime::stream()), ACLNN_SUCCESS);
    const auto ra = gref::backward(p, da.gradOutput, da.input, da.grid);
    EXPECT_TRUE(close(ACL_FLOAT16, a.ig.values(), ra.input));
    EXPECT_TRUE(close(ACL_FLOAT16, a.gg.values(), ra.grid));
    // inputs gradOutput (0), input (1), grid (2); outputs inputGrad (0), gridGrad (1)
    ASSERT_EQ(aclSetInputTensorAddr(exec, 0, a.go.get(), b.go.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetInputTensorAddr(exec, 1, a.in.get(), b.in.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetInputTensorAddr(exec, 2, a.grid.get(), b.grid.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, a.ig.get(), b.ig.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 1, a.gg.get(), b.gg.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnGridSampler2DBackward(wp, ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    const auto rb = gref::backward(p, db.gradOutput, db.input, db.grid);
    EXPECT_TRUE(close(ACL_FLOAT16, b.ig.values(), rb.input));
    EXPECT_TRUE(close(ACL_FLOAT16, b.gg.values(), rb.grid));
    EXPECT_TRUE(b.ig.canaryIntact() && b.gg.canaryIntact());
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace gst
