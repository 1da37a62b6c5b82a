// MaxPool2dWithIndices and MaxPool2dWithIndicesBackward, CANN's index pair (A2/A3): indices is an
// INT32 (forward: or INT64) tensor of the pooled shape holding PyTorch's flat argmax ih * W + iw.
// Bit-exact against the reference in every dtype CANN takes (forward BFLOAT16 / FLOAT16 / FLOAT,
// backward FLOAT), NaN / ties / -inf windows, non-contiguous views and indices at the end of a page
// (nothing of the mask layout's padding is read or written there), -1 skipped and out-of-window
// indices failing with 361001, the round trip, the same bits as the mask pair on the same product,
// the argument checks in CANN's order, and the products that lack the pair.
#include <climits>
#include <limits>

#include "aclnnop/aclnn_max_unpool2d.h"
#include "mpool_test_util.hpp"

namespace mpt {
namespace {

using Case = NamedProblem;
std::vector<Case> cases() {
    auto v = poolShapes();
    v.push_back({"k5s1p2", problemOf({1, 1, 5, 6, 5, 5, 1, 1, 2, 2, false})});
    return v;
}

const aclDataType kForwardDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

struct IndexResult : Result {
    std::vector<int64_t> indices;  // forward: what it wrote
};

IndexResult runIndicesForward(const Problem &pr, aclDataType dt, const std::vector<double> &x, const Views &v = {},
                              aclDataType indexDt = ACL_INT32) {
    IndexResult r;
    Tensor self(dt, pr.selfDims(), pr.format(), v.a), out(dt, pr.outDims(), pr.format(), v.b),
        ti(indexDt, pr.outDims(), pr.format(), v.mask);
    self.setValues(x);
    out.setValues(std::vector<double>(static_cast<size_t>(out.count()), 1234.0));
    ti.setInts(std::vector<int64_t>(static_cast<size_t>(ti.count()), 0x5C5C5C5C5C5C5C5C));
    const auto s1 = self.snapshot();
    IntArray k(pr.kernel()), s(pr.stride()), p(pr.padding()), d(std::vector<int64_t>{1, 1});
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k.a, s.a, p.a, d.a, pr.pool.ceil, out.get(), ti.get(),
                                                         &r.workspace, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnMaxPool2dWithIndices(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.outBits = out.bits();
    r.indices = ti.ints();
    r.canary = out.canaryIntact() && ti.canaryIntact();
    r.inputsUnchanged = self.snapshot() == s1;
    return r;
}

Result runIndicesBackward(const Problem &pr, aclDataType dt, const std::vector<double> &go,
                          const std::vector<int64_t> &indices, const Views &v = {}) {
    Result r;
    Tensor tgo(dt, pr.outDims(), pr.format(), v.a), self(dt, pr.selfDims(), pr.format(), v.b),
        gi(dt, pr.selfDims(), pr.format(), v.c), ti(ACL_INT32, pr.outDims(), pr.format(), v.mask);
    tgo.setValues(go);
    self.setValues(std::vector<double>(static_cast<size_t>(self.count()), 1.0));
    gi.setValues(std::vector<double>(static_cast<size_t>(gi.count()), 1234.0));
    std::vector<uint32_t> ib;
    for (int64_t i : indices) ib.push_back(static_cast<uint32_t>(static_cast<int32_t>(i)));
    ti.setBits(ib);
    const auto s1 = tgo.snapshot(), s2 = self.snapshot(), s3 = ti.snapshot();
    IntArray k(pr.kernel()), s(pr.stride()), p(pr.padding()), d(std::vector<int64_t>{1, 1});
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(tgo.get(), self.get(), ti.get(), k.a, s.a, p.a, d.a,
                                                                 pr.pool.ceil, gi.get(), &r.workspace, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnMaxPool2dWithIndicesBackward(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.outBits = gi.bits();
    r.canary = gi.canaryIntact();
    r.inputsUnchanged = tgo.snapshot() == s1 && self.snapshot() == s2 && ti.snapshot() == s3;
    return r;
}

std::vector<int64_t> asInt64(const std::vector<int64_t> &v) { return v; }

TEST(MaxPool2dWithIndices, BitExactOutAndPyTorchIndicesInEveryDtype) {
    for (const std::string product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        uint64_t seed = 40;
        for (aclDataType dt : kForwardDtypes)
            for (aclDataType it : {ACL_INT32, ACL_INT64})
            for (const Case &c : cases()) {
                SCOPED_TRACE(product + " " + dtName(dt) + " " + (it == ACL_INT64 ? "INT64" : "INT32") + " " + c.name);
                const mref::Pool &p = c.pr.pool;
                const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), ++seed);
                const mref::Forward f = mref::forward(p, x, refDt(dt), false);
                const IndexResult r = runIndicesForward(c.pr, dt, x, {}, it);
                ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_TRUE(sameBits(dt, r.outBits, f.out));
                EXPECT_EQ(r.indices, asInt64(f.argmax));
                EXPECT_TRUE(r.canary);
                EXPECT_TRUE(r.inputsUnchanged);
            }
    }
}

// The indices are the int32 mask layout's values: the mask pair's prefix, byte for byte.
TEST(MaxPool2dWithIndices, SameArgmaxAsTheInt32Mask) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Problem pr;
    pr.pool = {2, 3, 9, 9, 3, 3, 2, 2, 1, 1, false};
    const mref::Pool &p = pr.pool;
    const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 3);
    const IndexResult ri = runIndicesForward(pr, ACL_FLOAT, x);
    const Result rm = runForward(pr, ACL_FLOAT, x);
    ASSERT_EQ(ri.phase2, ACLNN_SUCCESS) << ri.message;
    ASSERT_EQ(rm.phase2, ACLNN_SUCCESS) << rm.message;
    EXPECT_EQ(ri.outBits, rm.outBits);
    ASSERT_EQ(rm.mask.size(), static_cast<size_t>(p.N * p.C * p.K() * p.maskRow()));
    for (size_t j = 0; j < ri.indices.size(); ++j) {
        int32_t v = 0;
        std::memcpy(&v, rm.mask.data() + j * 4, 4);
        ASSERT_EQ(ri.indices[j], v) << j;
    }
}

TEST(MaxPool2dWithIndicesBackward, BitExactWithMinusOneSkipped) {
    for (const std::string product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        uint64_t seed = 90;
        for (aclDataType dt : {ACL_FLOAT})
            for (const Case &c : cases()) {
                SCOPED_TRACE(product + " " + dtName(dt) + " " + c.name);
                const mref::Pool &p = c.pr.pool;
                const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), ++seed);
                const RandomMask m = randomMask(p, seed, /*withMinus1=*/true);
                const Result r = runIndicesBackward(c.pr, dt, go, m.idx);
                ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_TRUE(sameBits(dt, r.outBits, mref::backward(p, go, mref::routesInt32(p, m.idx), refDt(dt), false)));
                EXPECT_TRUE(r.canary);
                EXPECT_TRUE(r.inputsUnchanged);
            }
    }
}

// CANN's A2/A3 backward takes FLOAT only (and INT32 indices): the 16-bit dtypes are refused in
// phase 1, naming the dtype.
TEST(MaxPool2dWithIndicesBackward, SixteenBitDtypesAreRefused) {
    for (const std::string product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        Problem pr;
        pr.pool = {1, 2, 6, 6, 2, 2, 2, 2, 0, 0, false};
        for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
            SCOPED_TRACE(product + " " + dtName(dt));
            const Result r = runIndicesBackward(pr, dt, exactValues(18, 5), std::vector<int64_t>(18, 0));
            EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
            EXPECT_NE(r.message.find(dt == ACL_BF16 ? "BFLOAT16" : "FLOAT16"), std::string::npos) << r.message;
        }
    }
}

// Indices against a guard page (their storage ends where the page ends): the kernels read and
// write contiguous indices in place, and never the mask layout's padding after them. Planes over
// 4096 elements as well, so that every backward path runs (parity rows, k2 s2 tiles, the stride-1
// gather), not only the small-plane one.
TEST(MaxPool2dWithIndices, IndicesAtTheEndOfAPageAndNonContiguousViews) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    auto shapes = cases();
    for (const int64_t W : {65, 70, 81})
        for (const auto &[name, pool] : {std::pair{"k3s2p1", mref::Pool{1, 2, 66, W, 3, 3, 2, 2, 1, 1, false}},
                                         std::pair{"k2s2", mref::Pool{2, 1, 64, W, 2, 2, 2, 2, 0, 0, W % 2 == 1}},
                                         std::pair{"k3s1p1", mref::Pool{1, 2, 65, W, 3, 3, 1, 1, 1, 1, false}}})
            shapes.push_back({std::string(name) + " W " + std::to_string(W), problemOf(pool)});
    for (const Case &c : shapes) {
        SCOPED_TRACE(c.name);
        const mref::Pool &p = c.pr.pool;
        const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 7);
        const mref::Forward f = mref::forward(p, x, mref::Dt::F32, false);
        std::vector<Views> views = {Views{{}, {}, {}, placed(Layout{}, Placement::PageEnd)},
                                    Views{{}, {}, {}, placed(Layout{}, Placement::PageStart)}};
        if (!c.pr.rank3)  // padded rows and columns, offsets; indices with H and W transposed
            views.push_back(Views{{{}, {0, 0, 1, 3}, 2}, {{}, {}, 5}, {}, {{0, 1, 3, 2}, {0, 0, 2, 1}, 3}});
        for (const Views &v : views) {
            const IndexResult r = runIndicesForward(c.pr, ACL_FLOAT, x, v);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(ACL_FLOAT, r.outBits, f.out));
            EXPECT_EQ(r.indices, asInt64(f.argmax));
            EXPECT_TRUE(r.canary) << "a write outside out or indices";
            // INT64 indices: the same values, stored from the int32 copy into the view.
            const IndexResult r64 = runIndicesForward(c.pr, ACL_FLOAT, x, v, ACL_INT64);
            ASSERT_EQ(r64.phase2, ACLNN_SUCCESS) << r64.message;
            EXPECT_EQ(r64.indices, asInt64(f.argmax));
            EXPECT_GT(r64.workspace, 0u) << "the int32 copy";
            EXPECT_TRUE(r64.canary) << "a write outside out or INT64 indices";

            const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 8);
            Views bv = v;
            bv.c = v.a;  // gradInput like self
            const Result b = runIndicesBackward(c.pr, ACL_FLOAT, go, f.argmax, bv);
            ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
            EXPECT_TRUE(sameBits(ACL_FLOAT, b.outBits, mref::backward(p, go, mref::routesInt32(p, f.argmax), mref::Dt::F32, false)));
            EXPECT_TRUE(b.canary);
            EXPECT_TRUE(b.inputsUnchanged);
        }
    }
}

// R2: an index outside its output's window is 361001 from phase 2, never an access outside the
// tensors; gradInput is not left half-written without the error saying so.
TEST(MaxPool2dWithIndicesBackward, OutOfWindowIndicesFailCleanly) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a3"));
    Problem pr;
    pr.pool = {2, 2, 6, 6, 3, 3, 2, 2, 1, 1, false};
    const mref::Pool &p = pr.pool;
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * 9), 9);
    const RandomMask good = randomMask(p, 10, false);
    for (const int64_t v : {p.H * p.W, int64_t{0}, int64_t{INT_MAX}, int64_t{INT_MIN}, int64_t{-2}}) {
        SCOPED_TRACE(v);
        auto idx = good.idx;
        idx[2 * 9 + 4] = v;  // plane 2, output (1, 1): window rows [1,4) cols [1,4)
        const Result r = runIndicesBackward(pr, ACL_FLOAT, go, idx, Views{{}, {}, {}, placed(Layout{}, Placement::PageEnd)});
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
        EXPECT_NE(r.message.find("holds " + std::to_string(v) + " for output [n=1, c=0, h=1, w=1]"), std::string::npos)
            << r.message;
        EXPECT_TRUE(r.canary);
    }
}

TEST(MaxPool2dWithIndices, RoundTripRoutesEachGradientToItsMaximum) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Problem pr;
    pr.pool = {1, 2, 7, 8, 3, 3, 2, 2, 1, 1, true};
    const mref::Pool &p = pr.pool;
    const auto x = exactValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 11);
    const IndexResult f = runIndicesForward(pr, ACL_FLOAT, x);
    ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 12);
    const Result b = runIndicesBackward(pr, ACL_FLOAT, go, f.indices);
    ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
    EXPECT_TRUE(sameBits(ACL_FLOAT, b.outBits, mref::backward(p, go, mref::routesInt32(p, f.indices), mref::Dt::F32, false)));
}

// PyTorch's pool / unpool pair on the device: MaxPool2dWithIndices' indices feed MaxUnpool2d as
// they are, which puts every pooled value back at its maximum and zeros elsewhere.
TEST(MaxPool2dWithIndices, IndicesFeedMaxUnpool2d) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Problem pr;
    pr.pool = {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, false};  // non-overlapping windows: every maximum is distinct
    const mref::Pool &p = pr.pool;
    const auto x = exactValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 31);
    Tensor self(ACL_FLOAT, pr.selfDims(), pr.format()), out(ACL_FLOAT, pr.outDims(), pr.format()),
        ind(ACL_INT32, pr.outDims(), pr.format()), back(ACL_FLOAT, pr.selfDims(), pr.format());
    self.setValues(x);
    back.setValues(std::vector<double>(static_cast<size_t>(back.count()), 1234.0));
    IntArray k(pr.kernel()), s(pr.stride()), pd(pr.padding()), d(std::vector<int64_t>{1, 1}),
        size(std::vector<int64_t>{p.H, p.W});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k.a, s.a, pd.a, d.a, false, out.get(), ind.get(), &ws,
                                                        &exec),
              ACLNN_SUCCESS)
        << lastError();
    Workspace w1;
    ASSERT_EQ(aclnnMaxPool2dWithIndices(w1.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(aclnnMaxUnpool2dGetWorkspaceSize(out.get(), ind.get(), size.a, back.get(), &ws, &exec), ACLNN_SUCCESS)
        << lastError();
    Workspace w2;
    ASSERT_EQ(aclnnMaxUnpool2d(w2.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    aclrtSynchronizeStream(Runtime::stream());
    const mref::Forward f = mref::forward(p, x, mref::Dt::F32, false);
    std::vector<double> want(x.size(), 0.0);
    for (size_t j = 0; j < f.argmax.size(); ++j) {
        const size_t plane = j / static_cast<size_t>(p.Ho() * p.Wo());
        want[plane * static_cast<size_t>(p.H * p.W) + static_cast<size_t>(f.argmax[j])] = f.out[j];
    }
    EXPECT_TRUE(sameBits(ACL_FLOAT, back.bits(), want));
}

TEST(MaxPool2dWithIndices, ChecksNameTheArgument) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Problem pr;
    pr.pool = {1, 2, 6, 6, 2, 2, 2, 2, 0, 0, false};
    const auto x = exactValues(72, 1);
    // The mask's INT8 is not the pair's dtype.
    IndexResult r = runIndicesForward(pr, ACL_FLOAT, x, {}, ACL_INT8);
    EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(r.message.find("indices"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("INT8"), std::string::npos) << r.message;
    // Shape: the pooled shape, not the mask's.
    {
        Tensor self(ACL_FLOAT, pr.selfDims(), pr.format()), out(ACL_FLOAT, pr.outDims(), pr.format()),
            ti(ACL_INT32, pr.maskDims(), pr.format());
        IntArray k(pr.kernel()), s(pr.stride()), p(pr.padding()), d(std::vector<int64_t>{1, 1});
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k.a, s.a, p.a, d.a, false, out.get(), ti.get(), &ws,
                                                            &exec),
                  ACLNN_ERR_PARAM_INVALID);
        const std::string msg = lastError();
        EXPECT_NE(msg.find("indices shape [1,2,4,64] must equal the pooled shape of self [1,2,3,3]"), std::string::npos)
            << msg;
        // dilation 2 and kernelSize of length 3: 161002 in both (the mask pair's 161001 quirk is its
        // own entry's)
        IntArray d2(std::vector<int64_t>{2, 2}), k3(std::vector<int64_t>{2, 2, 2});
        Tensor pooled(ACL_INT32, pr.outDims(), pr.format());
        EXPECT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k.a, s.a, p.a, d2.a, false, out.get(), pooled.get(),
                                                            &ws, &exec),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_NE(lastError().find("dilation"), std::string::npos);
        EXPECT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k3.a, s.a, p.a, d.a, false, out.get(), pooled.get(),
                                                            &ws, &exec),
                  ACLNN_ERR_PARAM_INVALID);
        Tensor go(ACL_FLOAT, pr.outDims(), pr.format()), gi(ACL_FLOAT, pr.selfDims(), pr.format());
        EXPECT_EQ(aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(go.get(), self.get(), pooled.get(), k3.a, s.a, p.a, d.a,
                                                                    false, gi.get(), &ws, &exec),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_NE(lastError().find("kernelSize"), std::string::npos);
        // CANN's order: every NULL check (signature order) before the attribute lengths.
        EXPECT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(self.get(), k3.a, nullptr, p.a, d.a, false, out.get(),
                                                            pooled.get(), &ws, &exec),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_NE(lastError().find("stride"), std::string::npos);
        EXPECT_EQ(aclnnMaxPool2dWithIndicesGetWorkspaceSize(nullptr, nullptr, s.a, p.a, d.a, false, out.get(), pooled.get(),
                                                            &ws, &exec),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_NE(lastError().find("self"), std::string::npos) << "self comes first";
        EXPECT_EQ(aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(go.get(), self.get(), pooled.get(), k3.a, s.a, p.a, d.a,
                                                                    false, nullptr, &ws, &exec),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_NE(lastError().find("gradInput"), std::string::npos);
        EXPECT_EQ(aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(nullptr, self.get(), pooled.get(), nullptr, s.a, p.a,
                                                                    d.a, false, gi.get(), &ws, &exec),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_NE(lastError().find("gradOutput"), std::string::npos) << "gradOutput comes first";
    }
}

// CANN: Atlas A2 and A3 only. Elsewhere the call is refused, naming the product, and the mask pair
// is what a program uses.
TEST(MaxPool2dWithIndices, OnlyA2AndA3HaveThePair) {
    Problem pr;
    pr.pool = {1, 1, 4, 4, 2, 2, 2, 2, 0, 0, false};
    const auto x = exactValues(16, 2);
    for (const std::string product : {"atlas-training", "atlas-inference", "atlas-200i-500-a2"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        const IndexResult r = runIndicesForward(pr, ACL_FLOAT16, x);
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID) << product;
        EXPECT_NE(r.message.find(productName(product)), std::string::npos) << r.message;
        const Result b = runIndicesBackward(pr, ACL_FLOAT, exactValues(4, 3), {0, 2, 8, 10});
        EXPECT_EQ(b.phase1, ACLNN_ERR_PARAM_INVALID) << product;
        EXPECT_NE(b.message.find(productName(product)), std::string::npos) << b.message;
    }
}

TEST(MaxPool2dWithIndices, EmptyBatchNeedsNoWorkspace) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Problem pr;
    pr.pool = {0, 2, 6, 6, 2, 2, 2, 2, 0, 0, false};
    const IndexResult r = runIndicesForward(pr, ACL_FLOAT, {});
    EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.workspace, 0u);
    const Result b = runIndicesBackward(pr, ACL_FLOAT, {}, {});
    EXPECT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
    EXPECT_EQ(b.workspace, 0u);
}

// The same bits at 1 and 3 threads.
TEST(MaxPool2dWithIndices, DeterministicAcrossThreadCounts) {
    Problem pr;
    pr.pool = {4, 8, 30, 30, 3, 3, 2, 2, 1, 1, false};
    const mref::Pool &p = pr.pool;
    const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 21);
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 22);
    std::vector<IndexResult> fw;
    std::vector<Result> bw;
    for (int threads : {1, 3}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
        fw.push_back(runIndicesForward(pr, ACL_FLOAT16, x));
        ASSERT_EQ(fw.back().phase2, ACLNN_SUCCESS) << fw.back().message;
        bw.push_back(runIndicesBackward(pr, ACL_FLOAT, go, fw.front().indices));
        ASSERT_EQ(bw.back().phase2, ACLNN_SUCCESS) << bw.back().message;
    }
    EXPECT_EQ(fw[0].outBits, fw[1].outBits);
    EXPECT_EQ(fw[0].indices, fw[1].indices);
    EXPECT_EQ(bw[0].outBits, bw[1].outBits);
}

}  // namespace
}  // namespace mpt
