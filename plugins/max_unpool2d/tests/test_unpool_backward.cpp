// MaxUnpool2dBackward results, bit for bit against the independent reference: every value dtype x
// indices dtype, every castable out dtype (and the rest rejected), duplicate indices, non-contiguous
// views, empty tensors, outputs large enough for the streaming-store path, and nothing outside the
// tensors touched (each against a guard page).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

struct ShapeCase {
    const char *name;
    std::vector<int64_t> self;
    int64_t oH, oW;
};
void PrintTo(const ShapeCase &c, std::ostream *os) { *os << c.name; }
// Tails everywhere (widths that are no multiple of 16 or 8), a rank-3 case, the k2s2 geometry.
const std::vector<ShapeCase> kShapes{
    {"n2c3h5w7_o9x13", {2, 3, 5, 7}, 9, 13},
    {"c17h33w34_o34x66_rank3", {17, 33, 34}, 34, 66},
    {"n1c2h56w56_o112x112", {1, 2, 56, 56}, 112, 112},
    {"n3c1h1w1_o1x1", {3, 1, 1, 1}, 1, 1},
};

class DtypeIndexShape : public ::testing::TestWithParam<std::tuple<aclDataType, aclDataType, ShapeCase>> {};

TEST_P(DtypeIndexShape, BitExactAgainstReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto [dt, idxDt, shape] = GetParam();
    BackwardCase c;
    c.dt = c.outDt = dt;
    c.idxDt = idxDt;
    c.selfDims = shape.self;
    c.oH = shape.oH;
    c.oW = shape.oW;
    RunResult r;
    ASSERT_NO_FATAL_FAILURE(expectBackwardExact(c, 11, &r));
    EXPECT_EQ(r.workspace, 0u) << "same dtype: the kernel writes out directly";
}

INSTANTIATE_TEST_SUITE_P(All, DtypeIndexShape,
                         ::testing::Combine(::testing::ValuesIn(backwardDtypes()), ::testing::Values(ACL_INT32, ACL_INT64),
                                            ::testing::ValuesIn(kShapes)),
                         [](const auto &info) {
                             return std::string(dtName(std::get<0>(info.param))) + "_idx" +
                                    dtName(std::get<1>(info.param)) + "_" + std::get<2>(info.param).name;
                         });

// ------------------------------------------------------------------------------------------------
// out dtype: any dtype gradOutput casts to (CANN's CanCast), converted as the core converts.
// ------------------------------------------------------------------------------------------------
// Values that probe the conversions: FLOAT16 ties and overflow, subnormals, NaN payloads, -0,
// integer wrap-around and values beyond FLOAT's 24-bit mantissa.
Bits probeValues(aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT: {
            const float f[] = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 65504.0f, 65519.0f, 65520.0f, -1e30f, 0x1p-25f,
                               0x1.8p-25f, 0x1p-24f, 3.0f * 0x1p-26f, -0.0f, 0x1p-149f, 6.1e-5f, -2.5f};
            Bits b;
            for (float x : f) {
                uint32_t u;
                std::memcpy(&u, &x, 4);
                b.push_back(u);
            }
            b.push_back(0x7fc00000u);  // quiet NaN
            b.push_back(0xffa5a5a5u);  // negative signalling NaN with a payload
            b.push_back(0x7f800000u);  // inf
            return b;
        }
        case ACL_FLOAT16: return {0x0001, 0x03ff, 0x7bff, 0xfc00, 0x7e01, 0xfd55, 0x8000, 0x3c00, 0xc000};
        case ACL_INT64: return {static_cast<uint64_t>(-1), (uint64_t{1} << 53) + 1, (uint64_t{1} << 24) + 1, 65520, 65519,
                                (uint64_t{1} << 60) + (uint64_t{1} << 36) + 1, static_cast<uint64_t>(-((int64_t{1} << 54) + (int64_t{1} << 30) + 1)),
                                0x80000000ull, static_cast<uint64_t>(INT64_MIN), 0x7fffffffffffffffull, 255, 256, 32768};
        case ACL_INT32: return {0xffffffffu, (1u << 24) + 1, 65520, 65504, 0x80000000u, 0x7fffffffu, 255, 256, 0xffff8000u};
        case ACL_INT16: return {0xffff, 0x8000, 0x7fff, 255, 256, 0xff80};
        case ACL_INT8: return {0xff, 0x80, 0x7f, 0x01};
        case ACL_UINT8: return {0xff, 0x80, 0x7f, 0x00};
        default: return {0, 1};
    }
}

class OutCast : public ::testing::TestWithParam<std::tuple<aclDataType, aclDataType>> {};

TEST_P(OutCast, CastableDtypesConvertOthersRejected) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto [dt, outDt] = GetParam();
    BackwardCase c;
    c.dt = dt;
    c.outDt = outDt;
    c.selfDims = {2, 3, 8, 8};
    c.oH = c.oW = 8;  // indices are per-plane permutations: every gradOutput element reaches out
    Bits go = randomBits(static_cast<size_t>(numel(c.goDims())), dt, 21);
    const Bits probes = probeValues(dt);
    std::copy(probes.begin(), probes.end(), go.begin());
    const auto idx = uniqueIndices(c.planes(), c.plane(), c.oH * c.oW, 22);
    const RunResult r = runBackward(c, go, idx);
    if (!unpoolref::canCast(dt, outDt)) {
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(r.message, {"aclnnMaxUnpool2dBackward", "out dtype", dtName(outDt)}));
        EXPECT_TRUE(r.outCanaryIntact);
        return;
    }
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    if (dt == ACL_FLOAT16 && outDt == ACL_FLOAT) {  // the gather widens on the way: no workspace
        EXPECT_EQ(r.workspace, 0u);
    } else if (dt != outDt) {  // the cast goes through a dense workspace of gradOutput's dtype
        EXPECT_EQ(r.workspace, static_cast<uint64_t>(numel(c.selfDims)) * elemSize(dt));
    }
    Bits want;
    ASSERT_FALSE(referenceBackward(c, go, idx, want));
    EXPECT_TRUE(sameBits(r.out, want));
    EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    EXPECT_TRUE(r.inputsUnchanged);
}

INSTANTIATE_TEST_SUITE_P(All, OutCast,
                         ::testing::Combine(::testing::ValuesIn(backwardDtypes()), ::testing::ValuesIn(backwardDtypes())),
                         [](const auto &info) {
                             return std::string(dtName(std::get<0>(info.param))) + "_to_" + dtName(std::get<1>(info.param));
                         });

// The reference's conversions are not vacuous: spot values worked out by hand.
TEST(OutCastReference, HandWorkedValues) {
    using unpoolref::castBits;
    EXPECT_EQ(castBits(0x3f801000u, ACL_FLOAT, ACL_FLOAT16), 0x3c00u);  // 1 + 2^-11: tie to even
    EXPECT_EQ(castBits(0x3f803000u, ACL_FLOAT, ACL_FLOAT16), 0x3c02u);  // 1 + 3*2^-11: tie to even (up)
    EXPECT_EQ(castBits(0x477ff000u, ACL_FLOAT, ACL_FLOAT16), 0x7c00u);  // 65520 -> inf
    EXPECT_EQ(castBits(0x33000000u, ACL_FLOAT, ACL_FLOAT16), 0x0000u);  // 2^-25: tie to zero
    EXPECT_EQ(castBits(0x7fc00000u, ACL_FLOAT, ACL_FLOAT16), 0x7e00u);
    EXPECT_EQ(castBits(0x7e01u, ACL_FLOAT16, ACL_FLOAT), 0x7fc02000u);
    EXPECT_EQ(castBits((uint64_t{1} << 24) + 1, ACL_INT64, ACL_FLOAT), 0x4b800000u);  // 2^24 + 1 -> 2^24
    // 2^60 + 2^36 + 1: just above the tie between 2^60 and 2^60 + 2^37, so up; through double
    // (2^60 + 2^36, the tie) it would round to even, down to 2^60
    EXPECT_EQ(castBits((uint64_t{1} << 60) + (uint64_t{1} << 36) + 1, ACL_INT64, ACL_FLOAT), 0x5d800001u);
    EXPECT_EQ(castBits(static_cast<uint64_t>(INT64_MIN), ACL_INT64, ACL_FLOAT), 0xdf000000u);  // -2^63
    EXPECT_EQ(castBits(65520, ACL_INT32, ACL_FLOAT16), 0x7c00u);
    EXPECT_EQ(castBits(0xffffffffu, ACL_INT32, ACL_INT16), 0xffffu);   // -1 stays -1
    EXPECT_EQ(castBits(256, ACL_INT32, ACL_UINT8), 0u);                // wraps
    EXPECT_EQ(castBits(0xff, ACL_INT8, ACL_INT64), ~uint64_t{0});      // sign-extended
    EXPECT_EQ(castBits(0xff, ACL_UINT8, ACL_INT16), 0xffu);            // zero-extended
    EXPECT_EQ(castBits(1, ACL_BOOL, ACL_FLOAT16), 0x3c00u);
}

// ------------------------------------------------------------------------------------------------
// Duplicate indices: a gather reads the same gradOutput element many times, which is fine.
// ------------------------------------------------------------------------------------------------
TEST(Duplicates, EveryElementReadsTheSameSource) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType idxDt : {ACL_INT32, ACL_INT64}) {
        BackwardCase c;
        c.idxDt = idxDt;
        c.selfDims = {2, 4, 9, 21};
        c.oH = 6;
        c.oW = 7;
        const Bits go = randomBits(static_cast<size_t>(numel(c.goDims())), c.dt, 31, true);
        std::vector<int64_t> idx(static_cast<size_t>(numel(c.selfDims)));
        for (int64_t p = 0; p < c.planes(); ++p)
            for (int64_t i = 0; i < c.plane(); ++i) idx[static_cast<size_t>(p * c.plane() + i)] = (p * 5 + i / 2) % 3;
        const RunResult r = runBackward(c, go, idx);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        for (int64_t p = 0; p < c.planes(); ++p)
            for (int64_t i = 0; i < c.plane(); ++i) {
                const auto k = static_cast<size_t>(p * c.plane() + i);
                ASSERT_EQ(r.out[k], go[static_cast<size_t>(p * c.oH * c.oW + idx[k])]) << "element " << k;
            }
    }
}

// ------------------------------------------------------------------------------------------------
// Non-contiguous views give the same bits as contiguous ones.
// ------------------------------------------------------------------------------------------------
struct ViewCase {
    const char *name;
    Layout go, idx, out;
};
void PrintTo(const ViewCase &v, std::ostream *os) { *os << v.name; }
const std::vector<ViewCase> kViews{
    {"go_transposed_hw", {{0, 1, 3, 2}, {}, 0}, {}, {}},
    {"go_padded_rows_offset", {{}, {0, 1, 0, 5}, 13}, {}, {}},
    {"idx_transposed_hw", {}, {{0, 1, 3, 2}, {}, 0}, {}},
    {"idx_channels_last", {}, {{0, 2, 3, 1}, {}, 3}, {}},
    {"out_padded_rows", {}, {}, {{}, {0, 0, 0, 3}, 0}},
    {"out_transposed_offset", {}, {}, {{1, 0, 3, 2}, {}, 5}},
    {"idx_and_out_padded_rows", {}, {{}, {0, 0, 2, 7}, 1}, {{}, {1, 0, 0, 9}, 2}},
    {"all_strided", {{3, 2, 1, 0}, {}, 1}, {{0, 2, 3, 1}, {}, 0}, {{2, 3, 0, 1}, {}, 7}},
};

class Views : public ::testing::TestWithParam<std::tuple<ViewCase, aclDataType, aclDataType>> {};

TEST_P(Views, SameBitsAsTheReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto [v, dt, outDt] = GetParam();
    BackwardCase c;
    c.dt = dt;
    c.outDt = outDt;
    c.idxDt = dt == ACL_FLOAT16 ? ACL_INT32 : ACL_INT64;
    c.selfDims = {2, 3, 7, 37};
    c.oH = 13;
    c.oW = 70;
    c.goL = v.go;
    c.idxL = v.idx;
    c.outL = v.out;
    expectBackwardExact(c, 41);
}

INSTANTIATE_TEST_SUITE_P(All, Views,
                         ::testing::Combine(::testing::ValuesIn(kViews),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_INT64, ACL_INT8),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16)),
                         [](const auto &info) {
                             return std::string(std::get<0>(info.param).name) + "_" + dtName(std::get<1>(info.param)) +
                                    "_to_" + dtName(std::get<2>(info.param));
                         });

// ------------------------------------------------------------------------------------------------
// Empty tensors (R7): empty self succeeds with workspace 0 and writes nothing; an empty gradOutput
// with a non-empty self is 161002 (Huawei's code).
// ------------------------------------------------------------------------------------------------
TEST(Empty, EmptySelfSucceedsWithoutWork) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    struct E {
        std::vector<int64_t> self;
        int64_t oH, oW;
        aclDataType outDt;
    };
    for (const E &e : {E{{0, 3, 4, 4}, 8, 8, ACL_FLOAT}, E{{2, 0, 4, 4}, 8, 8, ACL_FLOAT16}, E{{2, 3, 0, 4}, 8, 8, ACL_FLOAT},
                       E{{2, 3, 4, 0}, 0, 0, ACL_FLOAT}, E{{0, 4, 4}, 2, 2, ACL_FLOAT16}, E{{3, 4, 0}, 5, 5, ACL_FLOAT}}) {
        SCOPED_TRACE(dimsStr(e.self));
        BackwardCase c;
        c.selfDims = e.self;
        c.oH = e.oH;
        c.oW = e.oW;
        c.outDt = e.outDt;
        const RunResult r = runBackward(c, randomBits(static_cast<size_t>(numel(c.goDims())), c.dt, 1), {});
        EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.workspace, 0u);
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    }
}

TEST(Empty, EmptyGradOutputWithNonEmptySelfIsInvalid) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    BackwardCase c;
    c.selfDims = {2, 3, 4, 4};
    c.oH = 0;
    c.oW = 8;
    const RunResult r = runBackward(c, {}, std::vector<int64_t>(96, 0));
    EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(messageContains(r.message, {"gradOutput", "empty"}));
    EXPECT_TRUE(r.outCanaryIntact);
}

// ------------------------------------------------------------------------------------------------
// Gathers with an out of more than 8 MB store it with non-temporal stores in whole lines:
// aligned and misaligned out, 1-, 2-, 4- and 8-byte elements, FLOAT16 widened to FLOAT (random bit
// patterns: NaN payloads, infinities and subnormals among them), both index widths.
// ------------------------------------------------------------------------------------------------
TEST(Large, StreamingStoresKeepTheBits) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    struct L {
        aclDataType dt, idxDt;
        std::vector<int64_t> self;
        int64_t oH, oW, outOffset;
        aclDataType outDt = ACL_DT_UNDEFINED;  // undefined: gradOutput's
    };
    for (const L &l : {L{ACL_FLOAT, ACL_INT64, {1, 128, 128, 130}, 128, 130, 0},
                       L{ACL_FLOAT, ACL_INT32, {1, 128, 128, 130}, 130, 260, 3},
                       L{ACL_INT64, ACL_INT32, {1, 64, 128, 130}, 130, 130, 1},
                       L{ACL_FLOAT16, ACL_INT64, {1, 256, 128, 130}, 128, 130, 0},
                       L{ACL_FLOAT16, ACL_INT32, {1, 256, 128, 130}, 130, 260, 5},
                       L{ACL_INT8, ACL_INT32, {1, 512, 128, 130}, 128, 132, 7},
                       L{ACL_FLOAT16, ACL_INT64, {1, 128, 128, 130}, 128, 130, 0, ACL_FLOAT},
                       L{ACL_FLOAT16, ACL_INT32, {1, 128, 128, 130}, 256, 130, 3, ACL_FLOAT}}) {
        const aclDataType outDt = l.outDt == ACL_DT_UNDEFINED ? l.dt : l.outDt;
        SCOPED_TRACE(std::string(dtName(l.dt)) + " to " + dtName(outDt) + " indices " + dtName(l.idxDt) + " offset " +
                     std::to_string(l.outOffset));
        BackwardCase c;
        c.dt = l.dt;
        c.outDt = outDt;
        c.idxDt = l.idxDt;
        c.selfDims = l.self;
        c.oH = l.oH;
        c.oW = l.oW;
        c.outL.offset = l.outOffset;
        ASSERT_GT(numel(c.selfDims) * static_cast<int64_t>(elemSize(outDt)), int64_t{8} << 20)
            << "the case must be large enough to stream";
        RunResult r;
        ASSERT_NO_FATAL_FAILURE(expectBackwardExact(c, 51, &r));
        EXPECT_EQ(r.workspace, 0u);
    }
}

// A large gather stops at its first bad index in row-major order at any thread count, two planes'
// worth of rows before the end, and writes no out byte the user could take for a result (status
// 361001, the position named). FLOAT (int32 indices) prefetches gradOutput's rows ahead and gathers
// runs of several rows; FLOAT16 (narrower than its indices) gathers a whole item in one run.
TEST(Large, FirstBadIndexOfAStreamedGather) {
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {  // FLOAT16 widened to a FLOAT out
        BackwardCase c;
        c.dt = dt, c.outDt = ACL_FLOAT;
        c.selfDims = {1, 128, 128, 130};
        c.oH = 130, c.oW = 260;
        c.idxDt = ACL_INT32;
        const int64_t plane = 128 * 130;
        auto idx = randomIndices(c.planes(), c.plane(), c.oH * c.oW, 53);
        idx[static_cast<size_t>(62 * plane + 127 * 130 + 5)] = -1;  // the first one: plane 62, last row
        idx[static_cast<size_t>(63 * plane + 2)] = c.oH * c.oW;     // a later plane
        for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(dtName(dt)) + " threads " + std::to_string(threads));
            ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
            const RunResult r = runBackward(c, randomBits(static_cast<size_t>(numel(c.goDims())), dt, 54), idx);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
            EXPECT_TRUE(messageContains(r.message, {"indices[0][62][127][5] = -1"})) << r.message;
            EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
        }
    }
}

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor (a gather vector one lane too wide, an index read past the end) crashes the
// test. Widths 1-40 (unpooled to twice that), value dtypes of 1 to 8 bytes, both index dtypes, and
// out dtypes the core casts into.
TEST(GuardPages, TouchesNothingOutsideItsTensors) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    uint64_t seed = 600;
    struct Dts {
        aclDataType dt, outDt;  // outDt != dt: the core's cast writes out
    };
    const Dts all[] = {{ACL_FLOAT, ACL_FLOAT}, {ACL_FLOAT16, ACL_FLOAT16}, {ACL_INT8, ACL_INT8}, {ACL_INT16, ACL_INT16},
                       {ACL_INT64, ACL_INT64}, {ACL_FLOAT16, ACL_FLOAT},   {ACL_INT32, ACL_FLOAT16}};
    for (const Dts d : all)
        for (const aclDataType idxDt : {ACL_INT32, ACL_INT64})
            for (int64_t W = 1; W <= 40; ++W) {
                const aclDataType dt = d.dt;
                BackwardCase c;
                c.dt = dt, c.outDt = d.outDt;
                c.idxDt = idxDt;
                c.selfDims = {1, 3, 3, W};
                c.oH = 6, c.oW = 2 * W;
                const Bits go = randomBits(static_cast<size_t>(numel(c.goDims())), dt, ++seed);
                const auto idx = randomIndices(c.planes(), c.plane(), c.oH * c.oW, ++seed);
                Bits want;
                ASSERT_FALSE(referenceBackward(c, go, idx, want));
                for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                    SCOPED_TRACE(std::string(dtName(dt)) + " to " + dtName(d.outDt) + " indices " + dtName(idxDt) + " W " +
                                 std::to_string(W) + placementName(at));
                    c.goL = c.idxL = c.outL = placed({}, at);
                    const RunResult r = runBackward(c, go, idx);
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                    EXPECT_TRUE(sameBits(r.out, want));
                    EXPECT_TRUE(r.inputsUnchanged);
                }
            }
}

}  // namespace
}  // namespace upt
