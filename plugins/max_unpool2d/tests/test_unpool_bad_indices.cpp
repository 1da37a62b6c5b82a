// Bad unpool indices are data (R2): -1, size, 2^40 and friends make phase 2 fail with 361001 naming
// the first bad position, and are never used to read memory. gradOutput lives between two
// PROT_NONE pages, so a read one element outside it crashes the test (in every build, not only
// under ASan); size-1 is valid and reads the very last element before the guard page.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "guarded_pages.hpp"
#include "unpool_test_util.hpp"

namespace upt {
namespace {

using acltest::GuardedPages;

// FLOAT gradOutput (N, C, oH, oW) on guarded pages; self / indices / out (N, C, H, W) ordinary.
struct GuardedProblem {
    std::vector<int64_t> selfDims{2, 2, 16, 16}, goDims{2, 2, 32, 32};
    aclDataType idxDt = ACL_INT64, outDt = ACL_FLOAT;
    Layout idxL;

    int64_t oPlane() const { return goDims[2] * goDims[3]; }
    int64_t plane() const { return selfDims[2] * selfDims[3]; }
};

struct GuardedResult {
    aclnnStatus phase1 = -1, phase2 = -1;
    std::string message;
    Bits out;
    Bits go;
    bool outCanaryIntact = false, inputsUnchanged = false;
};

GuardedResult runGuarded(const GuardedProblem &p, const std::vector<int64_t> &idx) {
    GuardedResult r;
    const size_t goBytes = static_cast<size_t>(numel(p.goDims)) * 4;
    GuardedPages pages(goBytes);
    EXPECT_EQ(goBytes % pages.page(), 0u) << "gradOutput must fill whole pages for the guards to be adjacent";
    if (!pages.data()) return r;
    r.go = randomBits(static_cast<size_t>(numel(p.goDims)), ACL_FLOAT, 61, true);
    for (size_t i = 0; i < r.go.size(); ++i) {
        const auto u = static_cast<uint32_t>(r.go[i]);
        std::memcpy(static_cast<unsigned char *>(pages.data()) + 4 * i, &u, 4);
    }
    std::vector<int64_t> strides(4, 1);
    for (int d = 2; d >= 0; --d) strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * p.goDims[static_cast<size_t>(d) + 1];
    aclTensor *go = aclCreateTensor(p.goDims.data(), 4, ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, p.goDims.data(), 4,
                                    pages.data());
    Tensor self(ACL_FLOAT, p.selfDims), ind(p.idxDt, p.selfDims, ACL_FORMAT_ND, p.idxL), out(p.outDt, p.selfDims);
    ind.setInts(idx);
    out.fillViewBytes(0x5A);
    const auto iSnap = ind.snapshot();
    IntArray os(std::vector<int64_t>{p.goDims[2], p.goDims[3]});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxUnpool2dBackwardGetWorkspaceSize(go, self.get(), ind.get(), os.a, out.get(), &ws, &exec);
    if (r.phase1 == ACLNN_SUCCESS) {
        Workspace w;
        r.phase2 = aclnnMaxUnpool2dBackward(w.ptr(ws), ws, exec, Runtime::stream());
        aclrtSynchronizeStream(Runtime::stream());
    }
    r.message = recentErr();
    r.out = out.bits();
    r.outCanaryIntact = out.canaryIntact();
    bool goSame = true;
    for (size_t i = 0; i < r.go.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, static_cast<unsigned char *>(pages.data()) + 4 * i, 4);
        goSame = goSame && u == static_cast<uint32_t>(r.go[i]);
    }
    r.inputsUnchanged = goSame && ind.sameBytes(iSnap);
    aclDestroyTensor(go);
    return r;
}

struct BadValue {
    const char *name;
    int64_t value;  // relative to size when `relative`
    bool relative;
    bool int64Only;
};
void PrintTo(const BadValue &b, std::ostream *os) { *os << b.name; }
// R2 plus the values that a careless narrowing or sign handling would turn into valid ones.
const std::vector<BadValue> kValues{
    {"minus1", -1, false, false},          {"size", 0, true, false},
    {"size_minus1_valid", -1, true, false}, {"two_pow_40", int64_t{1} << 40, false, true},
    {"int32_min", INT32_MIN, false, false}, {"int32_max", INT32_MAX, false, false},
    {"int64_min", INT64_MIN, false, true},  {"two_pow_32", int64_t{1} << 32, false, true},
    {"minus_two_pow_32_plus5", -(int64_t{1} << 32) + 5, false, true},
};
// The three code paths: whole vectors, vectors with scalar tails, and strided (transposed) indices.
struct Geometry {
    const char *name;
    std::vector<int64_t> self;
    Layout idxL;
};
void PrintTo(const Geometry &g, std::ostream *os) { *os << g.name; }
const std::vector<Geometry> kGeometries{
    {"vectors", {2, 2, 16, 16}, {}},
    {"tails", {2, 2, 15, 15}, {}},
    {"strided", {2, 2, 16, 15}, {{0, 1, 3, 2}, {}, 0}},
};
// First element, second vector's lane 1, a plane's last element, mid-plane, the very last element.
std::vector<int64_t> positionsFor(const Geometry &g) {
    const int64_t plane = g.self[2] * g.self[3];
    return {0, 17, plane - 1, plane + 40, 4 * plane - 1};
}

using BadCase = std::tuple<aclDataType, BadValue, Geometry, int64_t>;
std::vector<BadCase> badCases() {  // values INT32 cannot hold are tried with INT64 indices only
    std::vector<BadCase> v;
    for (aclDataType dt : {ACL_INT32, ACL_INT64})
        for (const BadValue &b : kValues)
            for (const Geometry &g : kGeometries)
                for (int64_t pos : positionsFor(g))
                    if (dt == ACL_INT64 || !b.int64Only) v.emplace_back(dt, b, g, pos);
    return v;
}

class BadIndex : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadIndex, FailsCleanlyNamingThePositionOrReadsTheLastElement) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto [idxDt, bv, geo, pos] = GetParam();
    GuardedProblem p;
    p.idxDt = idxDt;
    p.selfDims = geo.self;
    p.idxL = geo.idxL;
    const int64_t size = p.oPlane();
    auto idx = randomIndices(4, p.plane(), size, 71);
    const int64_t value = bv.relative ? size + bv.value : bv.value;
    idx[static_cast<size_t>(pos)] = value;
    const GuardedResult r = runGuarded(p, idx);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message << " (bad index values are data: phase 1 never reads them)";
    EXPECT_TRUE(r.outCanaryIntact);
    EXPECT_TRUE(r.inputsUnchanged);
    const bool valid = value >= 0 && value < size;
    if (valid) {
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        const int64_t planeOf = pos / p.plane();
        EXPECT_EQ(r.out[static_cast<size_t>(pos)], r.go[static_cast<size_t>(planeOf * size + value)]);
        return;
    }
    EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
    EXPECT_TRUE(messageContains(r.message, {"aclnnMaxUnpool2dBackward", "indices" + positionStr(pos, p.selfDims),
                                            std::to_string(value), "[0, " + std::to_string(size) + ")"}));
}

INSTANTIATE_TEST_SUITE_P(R2, BadIndex, ::testing::ValuesIn(badCases()),
                         [](const auto &info) {
                             return std::string(dtName(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name +
                                    "_" + std::get<2>(info.param).name + "_at" + std::to_string(std::get<3>(info.param));
                         });

// Several bad indices: the first in row-major order is reported, whatever the thread count.
TEST(BadIndexOrder, FirstBadPositionAtAnyThreadCount) {
    const std::vector<int64_t> self{4, 16, 20, 20};
    const int64_t plane = 400, size = 40 * 40;
    auto idx = randomIndices(64, plane, size, 81);
    idx[static_cast<size_t>(50 * plane + 3)] = -1;  // late plane
    idx[static_cast<size_t>(3 * plane + 399)] = size;  // the first one
    idx[static_cast<size_t>(3 * plane + 398 + 2 * plane)] = int64_t{1} << 40;
    idx[static_cast<size_t>(63 * plane)] = -7;
    std::string first;
    for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
        for (aclDataType outDt : {ACL_FLOAT, ACL_FLOAT16}) {  // direct and through the cast's workspace
            BackwardCase c;
            c.selfDims = self;
            c.oH = c.oW = 40;
            c.outDt = outDt;
            const RunResult r = runBackward(c, randomBits(static_cast<size_t>(numel(c.goDims())), ACL_FLOAT, 82), idx);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
            EXPECT_TRUE(messageContains(r.message, {"indices[0][3][19][19] = 1600"}));
            EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
            if (first.empty()) first = r.message;
            EXPECT_EQ(r.message, first) << "the report must not depend on scheduling";
        }
    }
}

// The vector loops take 16 (4- and 8-byte out), 32 (2-byte) or 64 (1-byte) indices a step and
// check them 16 at a time: a bad index in any lane of any group of a step is the one named.
TEST(BadIndexSteps, EveryGroupOfAStepNamesItsPosition) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    struct D {
        aclDataType dt, outDt;
    };
    for (const D d : {D{ACL_FLOAT16, ACL_FLOAT16}, D{ACL_FLOAT16, ACL_FLOAT}, D{ACL_INT8, ACL_INT8}, D{ACL_INT64, ACL_INT64}})
        for (const aclDataType idxDt : {ACL_INT32, ACL_INT64})
            for (const int64_t pos : {0, 15, 16, 17, 31, 32, 47, 48, 63, 64 + 33, 255, 256 + 63}) {
                SCOPED_TRACE(std::string(dtName(d.dt)) + " to " + dtName(d.outDt) + " indices " + dtName(idxDt) +
                             " position " + std::to_string(pos));
                BackwardCase c;
                c.dt = d.dt, c.outDt = d.outDt, c.idxDt = idxDt;
                c.selfDims = {1, 64, 16, 16};  // 64 dense planes of 256: one run a plane, whole steps of every width
                c.oH = c.oW = 32;
                auto idx = randomIndices(64, 256, 1024, 95);
                idx[static_cast<size_t>(pos)] = pos % 2 ? -1 : 1024;
                const RunResult r = runBackward(c, randomBits(64 * 1024, d.dt, 96), idx);
                ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
                EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
                const std::string at = "indices[0][" + std::to_string(pos / 256) + "][" + std::to_string(pos % 256 / 16) +
                                       "][" + std::to_string(pos % 16) + "] = " + (pos % 2 ? "-1" : "1024");
                EXPECT_TRUE(messageContains(r.message, {at})) << r.message;
                EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
            }
}

// The strided (generic) path checks indices the same way and names the logical position.
TEST(BadIndexViews, StridedIndicesAndRank3) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    {
        GuardedProblem p;
        p.idxL.order = {0, 1, 3, 2};  // transposed indices view
        auto idx = randomIndices(4, p.plane(), p.oPlane(), 91);
        idx[static_cast<size_t>(256 + 5 * 16 + 9)] = -1;
        const GuardedResult r = runGuarded(p, idx);
        EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
        EXPECT_TRUE(messageContains(r.message, {"indices[0][1][5][9] = -1"}));
        EXPECT_TRUE(r.outCanaryIntact);
    }
    {
        BackwardCase c;
        c.selfDims = {3, 5, 6};
        c.oH = 4;
        c.oW = 9;
        c.idxDt = ACL_INT32;
        auto idx = randomIndices(3, 30, 36, 92);
        idx[static_cast<size_t>(2 * 30 + 7)] = 36;
        const RunResult r = runBackward(c, randomBits(108, ACL_FLOAT, 93), idx);
        EXPECT_EQ(r.phase2, ACLNN_ERR_RUNTIME_ERROR);
        EXPECT_TRUE(messageContains(r.message, {"indices[2][1][1] = 36"}));
    }
}

}  // namespace
}  // namespace upt
