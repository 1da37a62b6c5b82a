// MaxPool2dWithMask (the forward that writes the mask): out bits and every mask byte against the
// reference in every dtype of every product (int32 argmax on atlas-a2/a3, bits on atlas-training
// and atlas-inference), NaN / ties / -inf windows, FLOAT as FLOAT16 on atlas-training,
// non-contiguous views (the mask then goes through the workspace), the round trip forward ->
// backward on each product, determinism across thread counts, and nothing outside the tensors
// touched (each against a guard page).
#include "mpool_test_util.hpp"

namespace mpt {
namespace {

using Case = NamedProblem;
std::vector<Case> cases() { return poolShapes(); }

struct Matrix {
    std::string product;
    aclDataType dt;
};
std::vector<Matrix> matrix() {
    return {{"atlas-a2", ACL_FLOAT},       {"atlas-a2", ACL_FLOAT16},       {"atlas-a2", ACL_BF16},
            {"atlas-a3", ACL_FLOAT},       {"atlas-a3", ACL_BF16},          {"atlas-training", ACL_FLOAT},
            {"atlas-training", ACL_FLOAT16}, {"atlas-inference", ACL_FLOAT}};
}

TEST(MaxPool2dWithMask, OutAndEveryMaskByteMatchTheReference) {
    for (const Matrix &m : matrix()) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(m.product));
        uint64_t seed = 100;
        for (const Case &c : cases()) {
            SCOPED_TRACE(m.product + " " + dtName(m.dt) + " " + c.name);
            const mref::Pool &p = c.pr.pool;
            const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), ++seed);
            const Expected e = expectedForward(m.product, m.dt, p, x);
            const Result r = runForward(c.pr, m.dt, x);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(m.dt, r.outBits, e.out));
            EXPECT_EQ(r.mask, e.mask);
            EXPECT_TRUE(r.canary);
            EXPECT_TRUE(r.inputsUnchanged);
        }
    }
}

// PyTorch's rule, spelled out on one 1x4 window each: first of equal maxima, the last NaN, -inf.
TEST(MaxPool2dWithMask, NanTiesAndInfinitiesFollowPyTorch) {
    Problem pr;
    pr.pool = {1, 1, 1, 16, 1, 4, 1, 4, 0, 0, false};  // four windows of 4
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> x = {2, 1, 2, 0,  1, nan, 3, nan,  -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                   -0.0, 0.0, -1, -0.0};
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const Result r = runForward(pr, ACL_FLOAT, x);
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    int32_t idx[4];
    std::memcpy(idx, r.mask.data(), sizeof idx);
    EXPECT_EQ(idx[0], 0);   // 2 at 0 and 2: the first wins
    EXPECT_EQ(idx[1], 7);   // NaN at 5 and 7: the last NaN wins
    EXPECT_EQ(idx[2], 8);   // all -inf: the window's first element
    EXPECT_EQ(idx[3], 12);  // -0 == +0: the first wins
    EXPECT_EQ(r.outBits[0], bitsOf(2.0, ACL_FLOAT));
    EXPECT_TRUE(std::isnan(valueOf(r.outBits[1], ACL_FLOAT)));
    EXPECT_EQ(r.outBits[2], bitsOf(-INFINITY, ACL_FLOAT));
    EXPECT_EQ(r.outBits[3], 0x80000000u);  // -0.0
    for (size_t b = 16; b < r.mask.size(); ++b) ASSERT_EQ(r.mask[b], 0) << "mask byte " << b << " after the indices";
}

// atlas-training rounds FLOAT to FLOAT16 first: values distinct in FLOAT tie in FLOAT16 (the first
// wins) and out holds the FLOAT16 value.
TEST(MaxPool2dWithMask, TrainingComputesFloatAsFloat16) {
    Problem pr;
    pr.pool = {1, 1, 1, 4, 1, 4, 1, 4, 0, 0, false};
    const std::vector<double> x = {1.0, 1.0 + std::ldexp(1.0, -12), 1.0 + std::ldexp(1.0, -11), 0.5};
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    Result r = runForward(pr, ACL_FLOAT, x);
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.outBits[0], bitsOf(1.0, ACL_FLOAT));
    EXPECT_EQ(r.mask[0], 1);  // kernel position 0 of output 0
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    r = runForward(pr, ACL_FLOAT, x);
    EXPECT_EQ(r.outBits[0], bitsOf(1.0 + std::ldexp(1.0, -11), ACL_FLOAT));
    EXPECT_EQ(r.mask[0], 2);  // int32 argmax 2
}

TEST(MaxPool2dWithMask, NonContiguousViewsGiveTheSameBytes) {
    Problem pr;
    pr.pool = {2, 3, 9, 10, 3, 3, 2, 2, 1, 1, true};
    const mref::Pool &p = pr.pool;
    const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 7);
    for (const std::string product : {"atlas-a3", "atlas-training"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        const Expected e = expectedForward(product, ACL_FLOAT16, p, x);
        Views v;
        v.a = {{0, 1, 3, 2}, {}, 3};      // self transposed
        v.b = {{}, {0, 2, 1, 4}, 5};      // out padded
        v.mask = {{}, {0, 0, 1, 8}, 2};   // mask padded: written through the workspace
        const Result r = runForward(pr, ACL_FLOAT16, x, v);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(ACL_FLOAT16, r.outBits, e.out)) << product;
        EXPECT_EQ(r.mask, e.mask) << product;
        EXPECT_TRUE(r.canary) << product;
    }
}

// Each product's own forward mask fed to its backward routes every gradient to its window's maximum.
TEST(MaxPool2dWithMask, RoundTripThroughTheBackwardOnEveryProduct) {
    Problem pr;
    pr.pool = {2, 2, 11, 13, 3, 3, 2, 2, 1, 1, true};
    const mref::Pool &p = pr.pool;
    const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 31);
    const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 32);
    for (const std::string product : {"atlas-a2", "atlas-a3", "atlas-training"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        const aclDataType dt = product == "atlas-training" ? ACL_FLOAT16 : ACL_BF16;
        const Result f = runForward(pr, dt, x);
        ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
        const Result b = runBackward(pr, dt, go, f.mask);
        ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
        const mref::Forward ref = mref::forward(p, x, refDt(dt), false);
        EXPECT_TRUE(sameBits(dt, b.outBits, mref::backward(p, go, mref::routesInt32(p, ref.argmax), refDt(dt), false)))
            << product;
    }
}

TEST(MaxPool2dWithMask, SameBytesAtOneTwoAndThreeThreads) {
    Problem pr;
    pr.pool = {3, 5, 31, 29, 3, 3, 2, 2, 1, 1, false};
    const mref::Pool &p = pr.pool;
    const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 41);
    for (const std::string product : {"atlas-a2", "atlas-training"}) {
        Result first;
        for (int threads : {1, 2, 3}) {
            ASSERT_NO_FATAL_FAILURE(Runtime::use(product, threads));
            const Result r = runForward(pr, ACL_FLOAT, x);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            if (threads == 1) first = r;
            EXPECT_EQ(r.outBits, first.outBits) << product << " " << threads;
            EXPECT_EQ(r.mask, first.mask) << product << " " << threads;
        }
    }
}

// A stride far wider than the row: the scratch is sized by the row, not by the stride (the forward
// asked for 272 GiB at stride 2^31 - 1), and both directions give the reference's results.
TEST(MaxPool2dWithMask, WideStrideNeedsNoMoreScratchThanTheRow) {
    for (const int64_t sW : {int64_t{64}, int64_t{1} << 20, int64_t{2147483647}}) {
        Problem pr;
        pr.pool = {1, 2, 4, 200, 2, 3, 1, sW, 0, 1, false};
        const mref::Pool &p = pr.pool;
        const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), 77);
        for (const std::string product : {"atlas-a2", "atlas-training"}) {
            SCOPED_TRACE(product + " sW " + std::to_string(sW));
            ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
            const Result r = runForward(pr, ACL_FLOAT, x);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_LT(r.workspace, uint64_t{1} << 20);
            const Expected e = expectedForward(product, ACL_FLOAT, p, x);
            EXPECT_TRUE(sameBits(ACL_FLOAT, r.outBits, e.out));
            EXPECT_EQ(r.mask, e.mask);
            // and the backward of that mask
            const bool fp16 = product == "atlas-training";
            const auto go = exactValues(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), 78);
            const Result b = runBackward(pr, ACL_FLOAT, go, r.mask);
            ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
            EXPECT_LT(b.workspace, uint64_t{1} << 20);
            const mref::Forward ref = mref::forward(p, x, mref::Dt::F32, fp16);
            EXPECT_TRUE(sameBits(ACL_FLOAT, b.outBits, mref::backward(p, go, mref::routesInt32(p, ref.argmax), mref::Dt::F32, fp16)));
        }
    }
}

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor crashes the test. The common pools at every width 1-70, both mask layouts,
// and the other geometries; out and mask as the reference's.
TEST(MaxPool2dWithMask, TouchesNothingOutsideItsTensors) {
    std::vector<NamedProblem> all = widthSweep();
    for (const Case &c : cases()) all.push_back({c.name, c.pr});
    for (const ProductDtype &m : guardMatrix()) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(m.product));
        uint64_t seed = 700;
        for (const NamedProblem &np : all) {
            const mref::Pool &p = np.pr.pool;
            const auto x = trickyValues(static_cast<size_t>(p.N * p.C * p.H * p.W), ++seed);
            const Expected e = expectedForward(m.product, m.dt, p, x);
            for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                SCOPED_TRACE(m.product + " " + dtName(m.dt) + " " + np.name + placementName(at));
                const Layout l = placed({}, at);
                const Result r = runForward(np.pr, m.dt, x, Views{l, l, l, l});
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_TRUE(sameBits(m.dt, r.outBits, e.out));
                EXPECT_EQ(r.mask, e.mask);
                EXPECT_TRUE(r.inputsUnchanged);
            }
        }
    }
}

}  // namespace
}  // namespace mpt
