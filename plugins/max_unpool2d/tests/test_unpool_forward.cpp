// The forward companion MaxUnpool2d: bit-exact scatter in every dtype (zeros elsewhere, the last
// duplicate wins), non-contiguous views, bad indices (361001 naming the first one), its checks in
// Huawei's order, empty tensors, and nothing outside the tensors touched (each against a guard page).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

class ForwardDtypes : public ::testing::TestWithParam<std::tuple<aclDataType, aclDataType>> {};

TEST_P(ForwardDtypes, BitExactLastDuplicateWins) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto [dt, idxDt] = GetParam();
    for (const auto &[self, oH, oW] : {std::tuple{std::vector<int64_t>{2, 3, 5, 7}, int64_t{9}, int64_t{13}},
                                       std::tuple{std::vector<int64_t>{4, 6, 6}, int64_t{3}, int64_t{12}},
                                       std::tuple{std::vector<int64_t>{1, 2, 28, 28}, int64_t{56}, int64_t{56}}}) {
        SCOPED_TRACE(dimsStr(self));
        FwCase c;
        c.dt = dt;
        c.idxDt = idxDt;
        c.selfDims = self;
        c.oH = oH;
        c.oW = oW;
        const Bits x = randomBits(static_cast<size_t>(numel(self)), dt, 201);
        const auto ix = randomIndices(c.planes(), c.plane(), oH * oW, 202);  // many duplicates
        const RunResult r = runForward(c, x, ix);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.workspace, 0u);
        Bits want;
        ASSERT_FALSE(unpoolref::scatter(x, ix, c.planes(), c.plane(), oH * oW, want));
        EXPECT_TRUE(sameBits(r.out, want));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
        EXPECT_TRUE(r.inputsUnchanged);
    }
}

INSTANTIATE_TEST_SUITE_P(All, ForwardDtypes,
                         ::testing::Combine(::testing::ValuesIn(forwardDtypes()), ::testing::Values(ACL_INT32, ACL_INT64)),
                         [](const auto &info) {
                             return std::string(dtName(std::get<0>(info.param))) + "_idx" + dtName(std::get<1>(info.param));
                         });

TEST(ForwardViews, StridedTensorsSameBits) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const std::vector<std::tuple<Layout, Layout, Layout>> layouts{
        {{{0, 1, 3, 2}, {}, 3}, {}, {}},
        {{}, {{0, 2, 3, 1}, {}, 0}, {}},
        {{}, {}, {{}, {0, 0, 1, 4}, 5}},
        {{}, {}, {{1, 0, 3, 2}, {}, 0}},
        {{{3, 2, 1, 0}, {}, 0}, {{}, {0, 1, 0, 2}, 1}, {{0, 2, 3, 1}, {}, 2}},
    };
    for (size_t k = 0; k < layouts.size(); ++k) {
        SCOPED_TRACE("layout " + std::to_string(k));
        FwCase c;
        c.dt = ACL_FLOAT16;
        c.selfDims = {2, 3, 5, 6};
        c.oH = 7;
        c.oW = 9;
        std::tie(c.selfL, c.idxL, c.outL) = layouts[k];
        const Bits x = randomBits(static_cast<size_t>(numel(c.selfDims)), c.dt, 211);
        const auto ix = randomIndices(c.planes(), c.plane(), c.oH * c.oW, 212);
        const RunResult r = runForward(c, x, ix);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        Bits want;
        ASSERT_FALSE(unpoolref::scatter(x, ix, c.planes(), c.plane(), c.oH * c.oW, want));
        EXPECT_TRUE(sameBits(r.out, want));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    }
}

// Scatters moving more than 16 MB stream out: planes staged on the stack (<= 64 KB, aligned or
// not) and planes too large for the stage.
TEST(ForwardLarge, StreamedPlanesKeepTheBits) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    struct L {
        std::vector<int64_t> self;
        int64_t oH, oW, outOffset;
    };
    for (const L &l : {L{{4, 64, 56, 56}, 112, 112, 0}, L{{4, 64, 56, 56}, 112, 112, 3}, L{{1, 64, 128, 128}, 256, 256, 5}}) {
        SCOPED_TRACE(dimsStr(l.self) + " offset " + std::to_string(l.outOffset));
        FwCase c;
        c.selfDims = l.self;
        c.oH = l.oH;
        c.oW = l.oW;
        c.outL.offset = l.outOffset;
        ASSERT_GT(numel(c.selfDims) * 12 + numel(c.outDims()) * 4, int64_t{16} << 20) << "must be large enough to stream";
        const Bits x = randomBits(static_cast<size_t>(numel(c.selfDims)), c.dt, 231);
        const auto ix = randomIndices(c.planes(), c.plane(), c.oH * c.oW, 232);
        const RunResult r = runForward(c, x, ix);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        Bits want;
        ASSERT_FALSE(unpoolref::scatter(x, ix, c.planes(), c.plane(), c.oH * c.oW, want));
        EXPECT_TRUE(sameBits(r.out, want));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    }
}

TEST(ForwardBadIndex, FirstBadPositionIsReportedAtAnyThreadCount) {
    std::string first;
    for (int threads : {1, 2, 3}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
        for (aclDataType idxDt : {ACL_INT32, ACL_INT64}) {
            SCOPED_TRACE(std::string(dtName(idxDt)) + " threads " + std::to_string(threads));
            FwCase c;
            c.idxDt = idxDt;
            c.selfDims = {3, 8, 4, 4};
            c.oH = c.oW = 8;
            auto ix = randomIndices(c.planes(), c.plane(), 64, 221);
            ix[static_cast<size_t>(20 * 16 + 5)] = 64;
            ix[static_cast<size_t>(9 * 16 + 15)] = -1;  // the first
            ix[static_cast<size_t>(16 * 16)] = INT32_MIN;  // a later plane
            const RunResult r = runForward(c, randomBits(static_cast<size_t>(numel(c.selfDims)), c.dt, 222), ix);
            EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
            EXPECT_TRUE(messageContains(r.message, {"aclnnMaxUnpool2d", "indices[1][1][3][3] = -1", "[0, 64)"}));
            EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
            if (first.empty()) first = r.message;
            EXPECT_EQ(r.message, first);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Checks (Huawei's aclnn_max_unpool2d.cpp order; out shape per its page).
// ------------------------------------------------------------------------------------------------
struct FwProblem {
    std::string product = "atlas-a2";
    aclDataType selfDt = ACL_FLOAT, idxDt = ACL_INT64, outDt = ACL_FLOAT;
    aclFormat fmt = ACL_FORMAT_ND;
    std::vector<int64_t> selfDims{2, 3, 4, 4}, idxDims{2, 3, 4, 4}, outDims{2, 3, 8, 8};
    std::optional<std::vector<int64_t>> outputSize = std::vector<int64_t>{8, 8};
    bool nullSelf = false, nullIdx = false, nullOut = false, nullWs = false;
};
struct FwRule {
    std::string name;
    std::function<void(FwProblem &)> mutate;
    aclnnStatus status;
    std::vector<std::string> mentions;
};
void PrintTo(const FwRule &r, std::ostream *os) { *os << r.name; }

const std::vector<FwRule> &fwRules() {
    const aclnnStatus NUL = ACLNN_ERR_PARAM_NULLPTR, INV = ACLNN_ERR_PARAM_INVALID, OK = ACLNN_SUCCESS;
    static const std::vector<FwRule> r{
        {"null_workspaceSize", [](FwProblem &p) { p.nullWs = true; }, NUL, {"workspaceSize"}},
        {"null_self", [](FwProblem &p) { p.nullSelf = true; }, NUL, {"self"}},
        {"null_indices", [](FwProblem &p) { p.nullIdx = true; }, NUL, {"indices"}},
        {"null_outputSize", [](FwProblem &p) { p.outputSize.reset(); }, NUL, {"outputSize"}},
        {"null_out", [](FwProblem &p) { p.nullOut = true; }, NUL, {"out"}},
        {"unsupported_training", [](FwProblem &p) { p.product = "atlas-training"; }, INV, {"Atlas training series"}},
        {"dtype_bool", [](FwProblem &p) { p.selfDt = p.outDt = ACL_BOOL; }, INV, {"self dtype BOOL"}},
        {"dtype_out_differs", [](FwProblem &p) { p.outDt = ACL_FLOAT16; }, INV, {"out dtype FLOAT16", "self"}},
        {"dtype_indices_int16", [](FwProblem &p) { p.idxDt = ACL_INT16; }, INV, {"indices dtype INT16"}},
        {"format_private", [](FwProblem &p) { p.fmt = ACL_FORMAT_NC1HWC0; }, INV, {"format NC1HWC0"}},
        {"rank_self_2", [](FwProblem &p) { p.selfDims = p.idxDims = {4, 4}; p.outDims = {8, 8}; }, INV, {"self", "rank"}},
        {"rank_indices_3", [](FwProblem &p) { p.idxDims = {3, 4, 4}; }, INV, {"Expected dim of self and indices"}},
        {"shape_indices", [](FwProblem &p) { p.idxDims = {2, 3, 4, 5}; }, INV, {"indices shape [2,3,4,5]"}},
        {"empty_spatial_C", [](FwProblem &p) { p.selfDims = p.idxDims = {2, 0, 4, 4}; p.outDims = {2, 0, 8, 8}; }, INV,
         {"non-empty spatial dimensions", "dimension 1"}},
        {"empty_spatial_W", [](FwProblem &p) { p.selfDims = p.idxDims = {2, 3, 4, 0}; }, INV, {"dimension 3"}},
        {"outputSize_length_1", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{8}; }, INV,
         {"outputSize length should be 2"}},
        {"outputSize_zero", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{8, 0}; }, INV, {"outputSize[1]"}},
        {"outputSize_product_overflows", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}; },
         INV, {"has more than 2^63 - 1 elements"}},
        {"outputSize_too_small", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{3, 5}; p.outDims = {2, 3, 3, 5}; },
         INV, {"3 x 5", "4 x 4"}},
        {"out_shape_hw", [](FwProblem &p) { p.outDims = {2, 3, 8, 9}; }, INV, {"out shape [2,3,8,9]", "[2,3,8,8]"}},
        {"out_shape_nc", [](FwProblem &p) { p.outDims = {2, 4, 8, 8}; }, INV, {"out shape"}},
        {"ok_default", [](FwProblem &) {}, OK, {}},
        {"ok_rank3_int32", [](FwProblem &p) { p.selfDims = p.idxDims = {3, 4, 4}; p.outDims = {3, 8, 8}; p.idxDt = ACL_INT32; },
         OK, {}},
        {"ok_equal_size", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{2, 8}; p.outDims = {2, 3, 2, 8}; }, OK, {}},
        {"ok_empty_batch", [](FwProblem &p) { p.selfDims = p.idxDims = {0, 3, 4, 4}; p.outDims = {0, 3, 8, 8}; }, OK, {}},
        // an empty self returns before out's shape is looked at, as Huawei's code (its UT case_0_tensor)
        {"ok_empty_batch_out_unchecked", [](FwProblem &p) { p.selfDims = p.idxDims = {0, 3, 4, 4}; p.outDims = {1, 3, 8, 8}; }, OK, {}},
        {"order_dtype_before_rank", [](FwProblem &p) { p.idxDt = ACL_FLOAT; p.idxDims = {3, 4, 4}; }, INV, {"indices dtype"}},
        {"order_indices_before_outputSize", [](FwProblem &p) { p.idxDims = {2, 3, 4, 5}; p.outputSize = std::vector<int64_t>{8}; },
         INV, {"indices shape"}},
        {"order_empty_before_outputSize", [](FwProblem &p) { p.selfDims = p.idxDims = {2, 3, 0, 4}; p.outputSize = std::vector<int64_t>{8}; },
         INV, {"non-empty spatial"}},
        {"order_outputSize_before_out", [](FwProblem &p) { p.outputSize = std::vector<int64_t>{8, -1}; p.outDims = {2, 3, 8, 9}; }, INV,
         {"outputSize[1]"}},
    };
    return r;
}

class ForwardChecks : public ::testing::TestWithParam<FwRule> {};

TEST_P(ForwardChecks, StatusAndMessage) {
    const FwRule &rule = GetParam();
    FwProblem p;
    rule.mutate(p);
    ASSERT_NO_FATAL_FAILURE(Runtime::use(p.product));
    Tensor self(p.selfDt, p.selfDims, p.fmt), idx(p.idxDt, p.idxDims, p.fmt), out(p.outDt, p.outDims, p.fmt);
    ASSERT_NE(self.get(), nullptr);
    ASSERT_NE(idx.get(), nullptr);
    ASSERT_NE(out.get(), nullptr);
    idx.fillViewBytes(0);
    IntArray os(p.outputSize);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    recentErr();
    const aclnnStatus st = aclnnMaxUnpool2dGetWorkspaceSize(p.nullSelf ? nullptr : self.get(), p.nullIdx ? nullptr : idx.get(),
                                                            os.a, p.nullOut ? nullptr : out.get(), p.nullWs ? nullptr : &ws,
                                                            &exec);
    const std::string msg = recentErr();
    EXPECT_EQ(st, rule.status) << msg;
    const auto outBefore = out.snapshot();
    if (st == ACLNN_SUCCESS) {
        if (numel(p.selfDims) == 0) {
            EXPECT_EQ(ws, 0u);
        }
        Workspace w;
        EXPECT_EQ(aclnnMaxUnpool2d(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << recentErr();
        if (numel(p.selfDims) == 0) {
            EXPECT_TRUE(out.snapshot() == outBefore) << "an empty self wrote out";
        }
    } else {
        EXPECT_TRUE(messageContains(msg, {"aclnnMaxUnpool2d"}));
        EXPECT_TRUE(messageContains(msg, rule.mentions));
    }
    EXPECT_TRUE(out.canaryIntact());
}

INSTANTIATE_TEST_SUITE_P(Rules, ForwardChecks, ::testing::ValuesIn(fwRules()),
                         [](const ::testing::TestParamInfo<FwRule> &info) { return info.param.name; });

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor crashes the test. Widths 1-40 (unpooled to twice that), value dtypes of 1
// to 8 bytes, both index dtypes, against the reference.
TEST(ForwardGuardPages, TouchesNothingOutsideItsTensors) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    uint64_t seed = 800;
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT16, ACL_INT64})
        for (const aclDataType idxDt : {ACL_INT32, ACL_INT64})
            for (int64_t W = 1; W <= 40; ++W) {
                FwCase c;
                c.dt = dt;
                c.idxDt = idxDt;
                c.selfDims = {1, 3, 3, W};
                c.oH = 6, c.oW = 2 * W;
                const Bits x = randomBits(static_cast<size_t>(numel(c.selfDims)), dt, ++seed);
                const auto ix = randomIndices(c.planes(), c.plane(), c.oH * c.oW, ++seed);
                Bits want;
                ASSERT_FALSE(unpoolref::scatter(x, ix, c.planes(), c.plane(), c.oH * c.oW, want));
                for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                    SCOPED_TRACE(std::string(dtName(dt)) + " indices " + dtName(idxDt) + " W " + std::to_string(W) +
                                 placementName(at));
                    c.selfL = c.idxL = c.outL = placed({}, at);
                    const RunResult r = runForward(c, x, ix);
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                    EXPECT_TRUE(sameBits(r.out, want));
                    EXPECT_TRUE(r.inputsUnchanged);
                }
            }
}

}  // namespace
}  // namespace upt
