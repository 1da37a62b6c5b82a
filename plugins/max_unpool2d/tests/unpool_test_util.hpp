// Shared helpers of the MaxUnpool2d / MaxUnpool2dBackward conformance tests: runtime (product /
// thread) switching, tensors of any dtype over guarded storage (canary outside the view, values as
// raw bits), data generators, and calling the two phases of either operator.
#ifndef MAX_UNPOOL2D_TESTS_UNPOOL_TEST_UTIL_HPP_
#define MAX_UNPOOL2D_TESTS_UNPOOL_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acltest.hpp"
#include "guarded_tensor.hpp"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_max_unpool2d.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"
#include "unpool_reference.hpp"

namespace upt {

using unpoolref::Bits;

// ---------------------------------------------------------------------------------------------
// Products and runtime
// ---------------------------------------------------------------------------------------------
using acltest::allProducts;
using acltest::ident;
using acltest::messageContains;
using acltest::productNameSubstr;
using acltest::recentErr;
using acltest::Runtime;

// ---------------------------------------------------------------------------------------------
// Dtypes and data
// ---------------------------------------------------------------------------------------------
inline size_t elemSize(aclDataType dt) { return static_cast<size_t>(unpoolref::bitsOf(dt) / 8); }
inline const char *dtName(aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT: return "FLOAT";
        case ACL_FLOAT16: return "FLOAT16";
        case ACL_BF16: return "BFLOAT16";
        case ACL_DOUBLE: return "DOUBLE";
        case ACL_INT32: return "INT32";
        case ACL_INT8: return "INT8";
        case ACL_INT64: return "INT64";
        case ACL_UINT8: return "UINT8";
        case ACL_INT16: return "INT16";
        case ACL_BOOL: return "BOOL";
        case ACL_UINT16: return "UINT16";
        default: return "OTHER";
    }
}
// The backward's value dtypes (ops.md / products.md) and the forward's (Huawei's code).
inline const std::vector<aclDataType> &backwardDtypes() {
    static const std::vector<aclDataType> v{ACL_FLOAT, ACL_FLOAT16, ACL_INT8,  ACL_UINT8,
                                            ACL_INT16, ACL_INT32,   ACL_INT64, ACL_BOOL};
    return v;
}
inline const std::vector<aclDataType> &forwardDtypes() {
    static const std::vector<aclDataType> v{ACL_FLOAT, ACL_FLOAT16, ACL_INT8,  ACL_UINT8,
                                            ACL_INT16, ACL_INT32,   ACL_INT64, ACL_DOUBLE};
    return v;
}

using acltest::Rng;

// Random element bit patterns of dt: every bit pattern is fair game for a gather (NaN payloads,
// -0, inf, subnormals); BOOL stays 0/1. `finite` keeps floating values finite and non-NaN.
inline Bits randomBits(size_t n, aclDataType dt, uint64_t seed, bool finite = false) {
    Rng r(seed);
    Bits b(n);
    const int w = unpoolref::bitsOf(dt);
    const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
    for (auto &x : b) {
        x = r.next() & mask;
        if (dt == ACL_BOOL) x &= 1;
        if (finite && dt == ACL_FLOAT && ((x >> 23) & 0xffu) == 0xffu) x &= ~(uint64_t{1} << 30);
        if (finite && dt == ACL_FLOAT16 && ((x >> 10) & 0x1fu) == 0x1fu) x &= ~(uint64_t{1} << 14);
        if (finite && dt == ACL_DOUBLE && ((x >> 52) & 0x7ffu) == 0x7ffu) x &= ~(uint64_t{1} << 62);
    }
    return b;
}
// Random indices in [0, oPlane) per plane (duplicates happen).
inline std::vector<int64_t> randomIndices(int64_t planes, int64_t plane, int64_t oPlane, uint64_t seed) {
    Rng r(seed);
    std::vector<int64_t> v(static_cast<size_t>(planes * plane));
    for (auto &x : v) x = r.integer(0, oPlane - 1);
    return v;
}
// A distinct index per element of each plane (a random injection into [0, oPlane), oPlane >= plane).
inline std::vector<int64_t> uniqueIndices(int64_t planes, int64_t plane, int64_t oPlane, uint64_t seed) {
    Rng r(seed);
    std::vector<int64_t> v;
    for (int64_t p = 0; p < planes; ++p) {
        std::vector<int64_t> perm(static_cast<size_t>(oPlane));
        std::iota(perm.begin(), perm.end(), 0);
        for (int64_t i = oPlane - 1; i > 0; --i) std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(r.integer(0, i))]);
        v.insert(v.end(), perm.begin(), perm.begin() + plane);
    }
    return v;
}

using acltest::dimsStr;
using acltest::numel;

// ---------------------------------------------------------------------------------------------
// Tensors over guarded storage
// ---------------------------------------------------------------------------------------------

// How a view lies in its storage: order lists the dims from outermost to innermost in memory
// (empty = row-major), extra adds unused elements per dim (padded rows), offset is the view offset.
using acltest::Layout;
using acltest::Placement;
using acltest::placed;
using acltest::placementName;

// A guarded tensor whose elements are read and written as bit patterns, indices or doubles.
class Tensor : public acltest::GuardedTensor {
public:
    Tensor(aclDataType dt, std::vector<int64_t> dims, aclFormat fmt = ACL_FORMAT_ND, const Layout &layout = {})
        : GuardedTensor(dt, std::move(dims), fmt, layout) {}

    void setBits(const Bits &v) {
        for (int64_t i = 0; i < count(); ++i) std::memcpy(element(i), &v[static_cast<size_t>(i)], elementBytes());  // little endian
    }
    void setInts(const std::vector<int64_t> &v) {  // indices (INT32 / INT64)
        for (int64_t i = 0; i < count(); ++i) {
            const int64_t x = v[static_cast<size_t>(i)];
            if (elementBytes() == 4) {
                const auto y = static_cast<int32_t>(x);
                std::memcpy(element(i), &y, 4);
            } else {
                std::memcpy(element(i), &x, 8);
            }
        }
    }
    void setDoubles(const std::vector<double> &v) {  // FLOAT / DOUBLE only
        for (int64_t i = 0; i < count(); ++i) {
            if (dtype() == ACL_FLOAT) {
                const auto f = static_cast<float>(v[static_cast<size_t>(i)]);
                std::memcpy(element(i), &f, 4);
            } else {
                std::memcpy(element(i), &v[static_cast<size_t>(i)], 8);
            }
        }
    }
    Bits bits() const {
        Bits b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], element(i), elementBytes());
        return b;
    }
    std::vector<double> doubles() const {  // FLOAT / DOUBLE only
        std::vector<double> v(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); ++i) {
            if (dtype() == ACL_FLOAT) {
                float f;
                std::memcpy(&f, element(i), 4);
                v[static_cast<size_t>(i)] = f;
            } else {
                std::memcpy(&v[static_cast<size_t>(i)], element(i), 8);
            }
        }
        return v;
    }
};

using acltest::IntArray;

using acltest::Workspace;

// ---------------------------------------------------------------------------------------------
// One backward problem and its call
// ---------------------------------------------------------------------------------------------
// self / indices / out have selfDims (rank 3 or 4), gradOutput has them with H, W = oH, oW.
struct BackwardCase {
    aclDataType dt = ACL_FLOAT, idxDt = ACL_INT64, outDt = ACL_FLOAT;
    std::vector<int64_t> selfDims{2, 3, 4, 5};
    int64_t oH = 8, oW = 10;
    Layout goL, idxL, outL;
    std::vector<int64_t> goDimsOverride;  // non-empty: use these gradOutput dims instead

    std::vector<int64_t> goDims() const {
        if (!goDimsOverride.empty()) return goDimsOverride;
        std::vector<int64_t> d = selfDims;
        d[d.size() - 2] = oH;
        d[d.size() - 1] = oW;
        return d;
    }
    int64_t planes() const { return numel(selfDims) / (selfDims[selfDims.size() - 2] * selfDims.back()); }
    int64_t plane() const { return selfDims[selfDims.size() - 2] * selfDims.back(); }
};

struct RunResult {
    aclnnStatus phase1 = -1, phase2 = -1;
    uint64_t workspace = 0;
    std::string message;
    Bits out;
    bool outCanaryIntact = false;
    std::string canaryWhere;
    bool inputsUnchanged = false;
};

// Full backward call: gradOutput bits and indices in logical order; out prefilled with 0x5A bytes.
inline RunResult runBackward(const BackwardCase &c, const Bits &go, const std::vector<int64_t> &idx) {
    RunResult r;
    Tensor g(c.dt, c.goDims(), ACL_FORMAT_ND, c.goL), self(c.dt, c.selfDims), ind(c.idxDt, c.selfDims, ACL_FORMAT_ND, c.idxL),
        out(c.outDt, c.selfDims, ACL_FORMAT_ND, c.outL);
    if (!g.get() || !self.get() || !ind.get() || !out.get()) {
        r.message = "aclCreateTensor failed: " + recentErr();
        return r;
    }
    g.setBits(go);
    ind.setInts(idx);
    self.setBits(randomBits(static_cast<size_t>(self.count()), c.dt, 5));
    out.fillViewBytes(0x5A);
    const auto gSnap = g.snapshot(), iSnap = ind.snapshot(), sSnap = self.snapshot();
    IntArray os(std::vector<int64_t>{c.oH, c.oW});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxUnpool2dBackwardGetWorkspaceSize(g.get(), self.get(), ind.get(), os.a, out.get(), &ws, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = recentErr();
    } else {
        r.workspace = ws;
        Workspace w;
        r.phase2 = aclnnMaxUnpool2dBackward(w.ptr(ws), ws, exec, Runtime::stream());
        if (r.phase2 != ACLNN_SUCCESS) r.message = recentErr();
        aclrtSynchronizeStream(Runtime::stream());
    }
    r.out = out.bits();
    r.outCanaryIntact = out.canaryIntact(&r.canaryWhere);
    r.inputsUnchanged = g.sameBytes(gSnap) && ind.sameBytes(iSnap) && self.sameBytes(sSnap);
    return r;
}

// ---- the forward companion MaxUnpool2d: self / indices, out with H, W = oH, oW ----
struct FwCase {
    aclDataType dt = ACL_FLOAT, idxDt = ACL_INT64;
    std::vector<int64_t> selfDims{2, 3, 4, 5};
    int64_t oH = 8, oW = 10;
    Layout selfL, idxL, outL;

    std::vector<int64_t> outDims() const {
        std::vector<int64_t> d = selfDims;
        d[d.size() - 2] = oH;
        d[d.size() - 1] = oW;
        return d;
    }
    int64_t plane() const { return selfDims[selfDims.size() - 2] * selfDims.back(); }
    int64_t planes() const { return numel(selfDims) / plane(); }
};

inline RunResult runForward(const FwCase &c, const Bits &x, const std::vector<int64_t> &ix) {
    RunResult r;
    Tensor self(c.dt, c.selfDims, ACL_FORMAT_ND, c.selfL), idx(c.idxDt, c.selfDims, ACL_FORMAT_ND, c.idxL),
        out(c.dt, c.outDims(), ACL_FORMAT_ND, c.outL);
    self.setBits(x);
    idx.setInts(ix);
    out.fillViewBytes(0x5A);  // the scatter must zero what it does not write
    const auto sSnap = self.snapshot(), iSnap = idx.snapshot();
    IntArray os(std::vector<int64_t>{c.oH, c.oW});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxUnpool2dGetWorkspaceSize(self.get(), idx.get(), os.a, out.get(), &ws, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = recentErr();
    } else {
        r.workspace = ws;
        Workspace w;
        r.phase2 = aclnnMaxUnpool2d(w.ptr(ws), ws, exec, Runtime::stream());
        if (r.phase2 != ACLNN_SUCCESS) r.message = recentErr();
        aclrtSynchronizeStream(Runtime::stream());
    }
    r.out = out.bits();
    r.outCanaryIntact = out.canaryIntact(&r.canaryWhere);
    r.inputsUnchanged = self.sameBytes(sSnap) && idx.sameBytes(iSnap);
    return r;
}

// The reference result of a backward case: out's bits in out's dtype (or the first bad index).
inline std::optional<unpoolref::BadIndex> referenceBackward(const BackwardCase &c, const Bits &go,
                                                            const std::vector<int64_t> &idx, Bits &out) {
    Bits gathered;
    const auto bad = unpoolref::gather(go, idx, c.planes(), c.plane(), c.oH * c.oW, gathered);
    if (bad) return bad;
    out.resize(gathered.size());
    for (size_t i = 0; i < gathered.size(); ++i) out[i] = unpoolref::castBits(gathered[i], c.dt, c.outDt);
    return std::nullopt;
}

inline ::testing::AssertionResult sameBits(const Bits &got, const Bits &want, size_t maxReport = 5) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i]) {
            if (bad++ < maxReport) msg << "\n  [" << i << "] got 0x" << std::hex << got[i] << " want 0x" << want[i] << std::dec;
        }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ" << msg.str();
    return ::testing::AssertionSuccess();
}

// A backward call on every bit pattern of gradOutput (seed) and in-plane indices (seed + 1) that
// must succeed with the reference's bits, out's canary intact and the inputs unchanged. The run is
// left in *run for the caller's own checks. Call through ASSERT_NO_FATAL_FAILURE.
inline void expectBackwardExact(const BackwardCase &c, uint64_t seed, RunResult *run = nullptr) {
    const Bits go = randomBits(static_cast<size_t>(numel(c.goDims())), c.dt, seed);
    const auto idx = randomIndices(c.planes(), c.plane(), c.oH * c.oW, seed + 1);
    const RunResult r = runBackward(c, go, idx);
    if (run) *run = r;
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    Bits want;
    ASSERT_FALSE(referenceBackward(c, go, idx, want));
    EXPECT_TRUE(sameBits(r.out, want));
    EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    EXPECT_TRUE(r.inputsUnchanged);
}

// "[n][c][h][w]" (rank 4) or "[c][h][w]" (rank 3) of a row-major position.
inline std::string positionStr(int64_t pos, const std::vector<int64_t> &dims) {
    std::vector<int64_t> ix(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
        ix[d] = pos % dims[d];
        pos /= dims[d];
    }
    std::string s;
    for (int64_t v : ix) s += "[" + std::to_string(v) + "]";
    return s;
}

}  // namespace upt

#endif  // MAX_UNPOOL2D_TESTS_UNPOOL_TEST_UTIL_HPP_
