// Tensors that share memory (core/nnopbase/aliasing.cpp): an output over an input gives the bytes
// it gives apart, as on the card, where outputs are copied out last; two outputs that overlap are
// 161002, in phase 1 and again in phase 2 after an address update.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

aclTensor *nchw(const std::vector<int64_t> &dims, void *data, int64_t offset = 0, aclDataType dtype = ACL_FLOAT) {
    std::vector<int64_t> strides(dims.size());
    int64_t s = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) strides[d] = s, s *= dims[d];
    const int64_t storage[1] = {s + offset};
    return aclCreateTensor(dims.data(), dims.size(), dtype, strides.data(), offset, ACL_FORMAT_NCHW, storage, 1, data);
}

std::vector<float> ramp(size_t n, int mod, int shift) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i % static_cast<size_t>(mod)) - shift);
    return v;
}

// AvgPool2dBackward 3x3 / stride 1 / padding 1 over (1, 4, 9, 9): every gradInput element sums nine
// gradOutput elements, so writing gradInput over gradOutput in place would read written values.
struct AvgPool {
    static constexpr int64_t n = 4 * 9 * 9;
    aclIntArray *k, *s, *p;
    AvgPool() {
        const int64_t kk[2] = {3, 3}, ss[2] = {1, 1}, pp[2] = {1, 1};
        k = aclCreateIntArray(kk, 2), s = aclCreateIntArray(ss, 2), p = aclCreateIntArray(pp, 2);
    }
    ~AvgPool() {
        aclDestroyIntArray(k), aclDestroyIntArray(s), aclDestroyIntArray(p);
    }
    aclnnStatus plan(aclTensor *go, aclTensor *self, aclTensor *gi, uint64_t *ws, aclOpExecutor **exec) const {
        return aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, k, s, p, false, true, 0, 0, gi, ws, exec);
    }
    // gradInput for `go` computed in separate buffers.
    std::vector<float> apart(const std::vector<float> &go) const {
        std::vector<float> g = go, self(n, 0.0f), gi(n, -1.0f);
        aclTensor *tg = nchw({1, 4, 9, 9}, g.data()), *ts = nchw({1, 4, 9, 9}, self.data()), *ti = nchw({1, 4, 9, 9}, gi.data());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(plan(tg, ts, ti, &ws, &exec), ACLNN_SUCCESS) << takeErr();
        EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
        aclDestroyTensor(tg), aclDestroyTensor(ts), aclDestroyTensor(ti);
        return gi;
    }
};

class AliasingTest : public coretest::RuntimeTest {
protected:
    void SetUp() override {
        coretest::RuntimeTest::SetUp();
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    }
};

TEST_F(AliasingTest, GradInputOverGradOutputGivesTheSeparateResult) {
    AvgPool op;
    const std::vector<float> go = ramp(AvgPool::n, 7, 3);
    const std::vector<float> want = op.apart(go);
    ASSERT_NE(want, go);
    std::vector<float> buf = go, self(AvgPool::n, 0.0f);
    aclTensor *tg = nchw({1, 4, 9, 9}, buf.data()), *ts = nchw({1, 4, 9, 9}, self.data()), *ti = nchw({1, 4, 9, 9}, buf.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(op.plan(tg, ts, ti, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(buf, want);
    aclDestroyTensor(tg), aclDestroyTensor(ts), aclDestroyTensor(ti);
}

TEST_F(AliasingTest, PartialOverlapThroughAnOffsetGivesTheSeparateResult) {
    AvgPool op;
    const std::vector<float> go = ramp(AvgPool::n, 5, 2);
    const std::vector<float> want = op.apart(go);
    // gradInput starts 40 elements into gradOutput's storage: the tail of one is the head of the other.
    std::vector<float> buf(AvgPool::n + 40, 0.0f), self(AvgPool::n, 0.0f);
    std::copy(go.begin(), go.end(), buf.begin());
    aclTensor *tg = nchw({1, 4, 9, 9}, buf.data()), *ts = nchw({1, 4, 9, 9}, self.data());
    aclTensor *ti = nchw({1, 4, 9, 9}, buf.data(), 40);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(op.plan(tg, ts, ti, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(std::vector<float>(buf.begin() + 40, buf.end()), want);
    aclDestroyTensor(tg), aclDestroyTensor(ts), aclDestroyTensor(ti);
}

TEST_F(AliasingTest, RepeatableExecutorRetargetedOntoItsInputStaysCorrect) {
    AvgPool op;
    const std::vector<float> go = ramp(AvgPool::n, 9, 4);
    const std::vector<float> want = op.apart(go);
    std::vector<float> buf = go, self(AvgPool::n, 0.0f), gi(AvgPool::n, 0.0f);
    aclTensor *tg = nchw({1, 4, 9, 9}, buf.data()), *ts = nchw({1, 4, 9, 9}, self.data()), *ti = nchw({1, 4, 9, 9}, gi.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(op.plan(tg, ts, ti, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi, want);
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 0, ti, buf.data()), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(buf, want);
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
    aclDestroyTensor(tg), aclDestroyTensor(ts), aclDestroyTensor(ti);
}

// Two images of (4, 9, 9) FLOAT, `stride` elements apart from element `offset` of `mem` (a view
// whose span holds other tensors' images, or unmapped pages, between its own).
aclTensor *twoImages(void *mem, int64_t offset, int64_t stride) {
    const int64_t dims[4] = {2, 4, 9, 9}, strides[4] = {stride, 81, 9, 1}, storage[1] = {offset + stride + 324};
    return aclCreateTensor(dims, 4, ACL_FLOAT, strides, offset, ACL_FORMAT_NCHW, storage, 1, mem);
}

// AvgPool2dBackward from gradOutput `tg` into gradInput `ti` (two-image views, destroyed here).
void runTwoImages(const AvgPool &op, aclTensor *tg, aclTensor *ti) {
    std::vector<float> self(2 * AvgPool::n, 0.0f);
    aclTensor *ts = nchw({2, 4, 9, 9}, self.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(op.plan(tg, ts, ti, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    if (exec) {
        EXPECT_EQ(aclnnAvgPool2dBackward(nullptr, 0, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    }
    aclDestroyTensor(tg), aclDestroyTensor(ts), aclDestroyTensor(ti);
}

// Pages with the listed ones made inaccessible: a copy of a view's whole span instead of its own
// bytes reads one and crashes the test.
struct Pages {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), count;
    float *base;
    Pages(size_t n, std::initializer_list<size_t> none) : count(n) {
        void *m = mmap(nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        base = m == MAP_FAILED ? nullptr : static_cast<float *>(m);
        for (size_t i : none)
            if (base && mprotect(reinterpret_cast<char *>(base) + i * page, page, PROT_NONE) != 0) base = nullptr;
    }
    ~Pages() {
        if (base) munmap(base, count * page);
    }
    int64_t floats() const { return static_cast<int64_t>(page / sizeof(float)); }  // elements per page
    float *at(size_t p) const { return base + static_cast<int64_t>(p) * floats(); }
};

// AvgPool2dBackward with gradOutput's two images on pages g0 and g0 + step and gradInput's on i0 and
// i0 + step, of `count` pages with those in `none` inaccessible: gradInput gets what it gets apart.
void expectTwoImagesApart(size_t count, std::initializer_list<size_t> none, size_t g0, size_t i0, size_t step) {
    AvgPool op;
    Pages mem(count, none);
    ASSERT_NE(mem.base, nullptr);
    const std::vector<float> go0 = ramp(AvgPool::n, 7, 3), go1 = ramp(AvgPool::n, 5, 2);
    std::copy(go0.begin(), go0.end(), mem.at(g0));
    std::copy(go1.begin(), go1.end(), mem.at(g0 + step));
    const int64_t stride = static_cast<int64_t>(step) * mem.floats();
    ASSERT_NO_FATAL_FAILURE(runTwoImages(op, twoImages(mem.base, static_cast<int64_t>(g0) * mem.floats(), stride),
                                         twoImages(mem.base, static_cast<int64_t>(i0) * mem.floats(), stride)));
    EXPECT_EQ(std::vector<float>(mem.at(i0), mem.at(i0) + AvgPool::n), op.apart(go0));
    EXPECT_EQ(std::vector<float>(mem.at(i0 + step), mem.at(i0 + step) + AvgPool::n), op.apart(go1));
}

// gradOutput's images on pages 0 and 3, gradInput's on pages 1 and 4, page 2 inaccessible: the
// spans of the two views meet, their bytes do not, so nothing is copied (or read from page 2).
TEST_F(AliasingTest, InterleavedInputAndOutputShareNoByteAndNothingIsCopied) { expectTwoImagesApart(5, {2}, 0, 1, 3); }

// In place (gradInput over gradOutput) with page 1 between the images inaccessible: the input is
// copied, but only its own bytes.
TEST_F(AliasingTest, InPlaceViewWithAGapIsCopiedWithoutItsGap) { expectTwoImagesApart(3, {1}, 0, 0, 2); }

// ConvolutionBackward 3x3 / padding 1, depthwise over 8 channels: gradInput has the shape of
// gradOutput and of input, and gradWeight (8, 1, 3, 3) is an output that may be placed over
// gradInput's memory.
struct Conv {
    std::vector<float> go = ramp(2 * 8 * 6 * 6, 5, 2), x = ramp(2 * 8 * 6 * 6, 3, 1), w = ramp(8 * 9, 4, 1);
    aclTensor *tGo = nchw({2, 8, 6, 6}, go.data()), *tX = nchw({2, 8, 6, 6}, x.data()), *tW = nchw({8, 1, 3, 3}, w.data());
    aclIntArray *one, *pad, *zero;
    aclBoolArray *mask;
    Conv() {
        const int64_t o[2] = {1, 1}, z[2] = {0, 0};
        const bool m[3] = {true, true, false};
        one = aclCreateIntArray(o, 2), pad = aclCreateIntArray(o, 2), zero = aclCreateIntArray(z, 2);
        mask = aclCreateBoolArray(m, 3);
    }
    ~Conv() {
        aclDestroyTensor(tGo), aclDestroyTensor(tX), aclDestroyTensor(tW);
        aclDestroyIntArray(one), aclDestroyIntArray(pad), aclDestroyIntArray(zero), aclDestroyBoolArray(mask);
    }
    aclnnStatus plan(aclTensor *gi, aclTensor *gw, uint64_t *ws, aclOpExecutor **exec) const {
        return aclnnConvolutionBackwardGetWorkspaceSize(tGo, tX, tW, nullptr, one, pad, one, false, zero, 8, mask, 0, gi, gw,
                                                        nullptr, ws, exec);
    }
};

TEST_F(AliasingTest, OverlappingOutputsAre161002InPhaseOne) {
    Conv c;
    std::vector<float> buf(2 * 8 * 6 * 6, 0.0f);
    aclTensor *gi = nchw({2, 8, 6, 6}, buf.data()), *gw = nchw({8, 1, 3, 3}, buf.data(), 100);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(c.plan(gi, gw, &ws, &exec), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("gradInput and gradWeight are outputs and must not share memory, got 2304 bytes at "), std::string::npos)
        << msg;
    EXPECT_EQ(buf, std::vector<float>(buf.size(), 0.0f));
    aclDestroyTensor(gi), aclDestroyTensor(gw);
}

// gradInput on the even floats of a buffer and gradWeight on the odd ones: the spans meet, no byte is
// shared, and both get what they get apart.
TEST_F(AliasingTest, OutputsInterleavedInOneBufferAreApart) {
    std::vector<float> gib(2 * 8 * 6 * 6, 0.0f), gwb(8 * 9, 0.0f);
    {
        Conv c;
        aclTensor *gi = nchw({2, 8, 6, 6}, gib.data()), *gw = nchw({8, 1, 3, 3}, gwb.data());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(c.plan(gi, gw, &ws, &exec), ACLNN_SUCCESS) << takeErr();
        std::vector<double> workspace(ws / 8 + 1);
        ASSERT_EQ(aclnnConvolutionBackward(workspace.data(), ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
        aclDestroyTensor(gi), aclDestroyTensor(gw);
    }
    Conv c;
    std::vector<float> buf(2 * gib.size(), -7.0f);
    const int64_t giDims[4] = {2, 8, 6, 6}, giStr[4] = {576, 72, 12, 2}, gwDims[4] = {8, 1, 3, 3}, gwStr[4] = {18, 18, 6, 2};
    const int64_t storage[1] = {static_cast<int64_t>(buf.size())};
    aclTensor *gi = aclCreateTensor(giDims, 4, ACL_FLOAT, giStr, 0, ACL_FORMAT_NCHW, storage, 1, buf.data());
    aclTensor *gw = aclCreateTensor(gwDims, 4, ACL_FLOAT, gwStr, 1, ACL_FORMAT_NCHW, storage, 1, buf.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(c.plan(gi, gw, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<double> workspace(ws / 8 + 1);
    ASSERT_EQ(aclnnConvolutionBackward(workspace.data(), ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    for (size_t i = 0; i < gib.size(); ++i) ASSERT_EQ(buf[2 * i], gib[i]) << "gradInput element " << i;
    for (size_t i = 0; i < gwb.size(); ++i) ASSERT_EQ(buf[2 * i + 1], gwb[i]) << "gradWeight element " << i;
    for (size_t i = 2 * gwb.size() + 1; i < buf.size(); i += 2) ASSERT_EQ(buf[i], -7.0f) << "untouched float " << i;
    aclDestroyTensor(gi), aclDestroyTensor(gw);
}

TEST_F(AliasingTest, OutputsMovedOntoEachOtherAre161002InPhaseTwoAndNothingIsWritten) {
    Conv c;
    std::vector<float> gib(2 * 8 * 6 * 6, 0.0f), gwb(8 * 9, 0.0f);
    aclTensor *gi = nchw({2, 8, 6, 6}, gib.data()), *gw = nchw({8, 1, 3, 3}, gwb.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(c.plan(gi, gw, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS) << takeErr();
    std::vector<double> workspace(ws / 8 + 1);  // operator new's alignment is the 16 bytes phase 2 asks for
    void *wsp = workspace.data();
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 1, gw, gib.data() + 8), ACLNN_SUCCESS) << takeErr();
    std::fill(gib.begin(), gib.end(), 5.0f);
    EXPECT_EQ(aclnnConvolutionBackward(wsp, ws, exec, nullptr), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("gradInput and gradWeight are outputs and must not share memory"), std::string::npos) << msg;
    EXPECT_EQ(gib, std::vector<float>(gib.size(), 5.0f));
    // Apart again, the executor runs.
    ASSERT_EQ(aclSetOutputTensorAddr(exec, 1, gw, gwb.data()), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclnnConvolutionBackward(wsp, ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_NE(gib, std::vector<float>(gib.size(), 5.0f));
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS) << takeErr();
    aclDestroyTensor(gi), aclDestroyTensor(gw);
}

TEST_F(AliasingTest, ConvolutionGradInputOverItsInputGivesTheSeparateResult) {
    std::vector<float> gib(2 * 8 * 6 * 6), gwb(8 * 9);
    std::vector<float> want_gi, want_gw;
    for (const bool over_input : {false, true}) {
        Conv fresh;
        // In place: gradInput over `input`, which dWeight reads while dInput writes.
        float *gi_data = over_input ? fresh.go.data() : gib.data();
        aclTensor *gi = nchw({2, 8, 6, 6}, gi_data), *gw = nchw({8, 1, 3, 3}, gwb.data());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(fresh.plan(gi, gw, &ws, &exec), ACLNN_SUCCESS) << takeErr();
        std::vector<double> workspace(ws / 8 + 1);
        void *wsp = workspace.data();
        ASSERT_EQ(aclnnConvolutionBackward(wsp, ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
        if (!over_input) {
            want_gi = gib, want_gw = gwb;
        } else {
            EXPECT_EQ(fresh.go, want_gi);
            EXPECT_EQ(gwb, want_gw);
        }
        aclDestroyTensor(gi), aclDestroyTensor(gw);
    }
}

// MaxUnpool2dBackward gathers out[i] = gradOutput[indices[i]]; with out over gradOutput's head and
// out[i] reading gradOutput[i - 1], a kernel writing out in place would pass one value along.
TEST_F(AliasingTest, UnpoolOutOverGradOutputGivesTheSeparateResult) {
    std::vector<float> buf = ramp(16 * 16, 11, 5), self(64, 0.0f), want(64);
    std::vector<int32_t> idx(64);
    for (int i = 0; i < 64; ++i) idx[i] = (i + 63) % 64, want[i] = buf[idx[i]];
    const int64_t size[2] = {16, 16};
    aclIntArray *outputSize = aclCreateIntArray(size, 2);
    aclTensor *go = nchw({1, 1, 16, 16}, buf.data()), *ts = nchw({1, 1, 8, 8}, self.data());
    aclTensor *ti = nchw({1, 1, 8, 8}, idx.data(), 0, ACL_INT32), *out = nchw({1, 1, 8, 8}, buf.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnMaxUnpool2dBackwardGetWorkspaceSize(go, ts, ti, outputSize, out, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    std::vector<double> workspace(ws / 8 + 1);
    ASSERT_EQ(aclnnMaxUnpool2dBackward(workspace.data(), ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(std::vector<float>(buf.begin(), buf.begin() + 64), want);
    aclDestroyTensor(go), aclDestroyTensor(ts), aclDestroyTensor(ti), aclDestroyTensor(out);
    aclDestroyIntArray(outputSize);
}

}  // namespace
