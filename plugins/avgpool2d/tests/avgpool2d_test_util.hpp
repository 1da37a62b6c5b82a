// Shared helpers of the AvgPool2d / AvgPool2dBackward conformance tests: runtime (product / thread)
// switching, tensors over guarded storage (canary outside the view), calling the two phases, and
// comparing against the independent reference (avgpool2d_reference.hpp).
#ifndef AVGPOOL2D_TESTS_AVGPOOL2D_TEST_UTIL_HPP_
#define AVGPOOL2D_TESTS_AVGPOOL2D_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acltest.hpp"
#include "guarded_tensor.hpp"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "avgpool2d_reference.hpp"

namespace apt {

using avgref::CubeRound;
using avgref::Pool2d;

// ---------------------------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------------------------
using acltest::allProducts;
using acltest::productNameSubstr;
using acltest::socName;

// ---------------------------------------------------------------------------------------------
// Runtime: aclInit with a YAML file naming the product and the thread count; switching means
// aclFinalize + aclInit. One stream per initialisation.
// ---------------------------------------------------------------------------------------------
using acltest::recentErr;
using acltest::Runtime;

// ---------------------------------------------------------------------------------------------
// Data types
// ---------------------------------------------------------------------------------------------
using acltest::elemSize;
inline const char *dtName(aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT: return "FLOAT";
        case ACL_FLOAT16: return "FLOAT16";
        case ACL_BF16: return "BF16";
        case ACL_DOUBLE: return "DOUBLE";
        case ACL_INT32: return "INT32";
        case ACL_INT8: return "INT8";
        case ACL_INT64: return "INT64";
        case ACL_UINT8: return "UINT8";
        case ACL_INT16: return "INT16";
        case ACL_BOOL: return "BOOL";
        default: return "OTHER";
    }
}
inline bool isFloatDt(aclDataType dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16; }

// Round a double to what a tensor of dtype dt stores.
inline double roundToDt(double v, aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT16: return avgref::roundToF16(v);
        case ACL_BF16: return avgref::roundToBF16(v);
        case ACL_FLOAT: return avgref::roundToF32(v);
        default: return v;
    }
}
inline avgref::BinaryFormat fmtOf(aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT16: return avgref::kFloat16;
        case ACL_BF16: return avgref::kBFloat16;
        default: return avgref::kFloat32;
    }
}

using acltest::Rng;

// Random values already representable in dt.
inline std::vector<double> randomValues(size_t n, aclDataType dt, uint64_t seed, double lo = -2.0, double hi = 2.0) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = roundToDt(r.uniform(lo, hi), dt);
    return v;
}
inline std::vector<double> randomIntegers(size_t n, uint64_t seed, int64_t lo, int64_t hi) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(r.integer(lo, hi));
    return v;
}

using acltest::dimsStr;
using acltest::numel;

// ---------------------------------------------------------------------------------------------
// Tensors over guarded storage
// ---------------------------------------------------------------------------------------------

// How a view lies in its storage. order lists the dims from the outermost to the innermost in
// memory (empty = row-major); extra adds unused elements per dim (padded rows); offset is the view
// offset in elements; zeroStrideDims get stride 0 (broadcast, inputs only).
using acltest::Layout;
using acltest::Placement;
using acltest::placed;
using acltest::placementName;

// A guarded tensor whose elements are read and written as doubles (FLOAT, FLOAT16, BF16, DOUBLE).
class Tensor : public acltest::GuardedTensor {
public:
    using GuardedTensor::GuardedTensor;

    void setValues(const std::vector<double> &v) {
        for (int64_t i = 0; i < count(); ++i) encode(element(i), v[static_cast<size_t>(i)]);
    }
    std::vector<double> values() const {
        std::vector<double> v(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); ++i) v[static_cast<size_t>(i)] = decode(element(i));
        return v;
    }
    // Raw element bits in logical order (FLOAT: 32 bits; 16-bit types: 16 bits).
    std::vector<uint32_t> bits() const {
        std::vector<uint32_t> b(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); ++i) {
            uint32_t u = 0;
            std::memcpy(&u, element(i), std::min<size_t>(elementBytes(), 4));
            b[static_cast<size_t>(i)] = u;
        }
        return b;
    }

private:
    void encode(unsigned char *p, double v) const {
        switch (dtype()) {
            case ACL_FLOAT: {
                const float f = static_cast<float>(v);
                std::memcpy(p, &f, 4);
                break;
            }
            case ACL_FLOAT16: {
                const uint16_t h = avgref::f16Bits(v);
                std::memcpy(p, &h, 2);
                break;
            }
            case ACL_BF16: {
                const uint16_t h = avgref::bf16Bits(v);
                std::memcpy(p, &h, 2);
                break;
            }
            case ACL_DOUBLE: std::memcpy(p, &v, 8); break;
            default: std::memset(p, 0, elementBytes()); break;
        }
    }
    double decode(const unsigned char *p) const {
        switch (dtype()) {
            case ACL_FLOAT: {
                float f;
                std::memcpy(&f, p, 4);
                return f;
            }
            case ACL_FLOAT16: {
                uint16_t h;
                std::memcpy(&h, p, 2);
                return avgref::f16Value(h);
            }
            case ACL_BF16: {
                uint16_t h;
                std::memcpy(&h, p, 2);
                return avgref::bf16Value(h);
            }
            case ACL_DOUBLE: {
                double d;
                std::memcpy(&d, p, 8);
                return d;
            }
            default: return 0.0;
        }
    }
};

inline aclFormat formatForRank(size_t rank) { return rank == 3 ? ACL_FORMAT_NCL : ACL_FORMAT_NCHW; }

using acltest::IntArray;

// ---------------------------------------------------------------------------------------------
// Attributes as a client passes them, and their resolution (ops.md broadcasting rules).
// ---------------------------------------------------------------------------------------------
struct Attrs {
    std::vector<int64_t> kernel{2};
    std::optional<std::vector<int64_t>> stride;  // nullopt = NULL pointer
    std::vector<int64_t> padding{0};
    bool ceilMode = false;
    bool countIncludePad = true;
    int64_t divisorOverride = 0;
    int8_t cubeMathType = 0;
};

inline Pool2d resolve(const Attrs &a) {
    Pool2d p;
    p.kH = a.kernel[0];
    p.kW = a.kernel.size() > 1 ? a.kernel[1] : a.kernel[0];
    if (!a.stride || a.stride->empty()) {
        p.sH = p.kH;
        p.sW = p.kW;
    } else {
        p.sH = (*a.stride)[0];
        p.sW = a.stride->size() > 1 ? (*a.stride)[1] : (*a.stride)[0];
    }
    p.pH = a.padding[0];
    p.pW = a.padding.size() > 1 ? a.padding[1] : a.padding[0];
    p.ceilMode = a.ceilMode;
    p.countIncludePad = a.countIncludePad;
    p.divisorOverride = a.divisorOverride;
    return p;
}

// Pooled dims of self (rank 3 or 4).
inline std::vector<int64_t> pooledDims(const std::vector<int64_t> &selfDims, const Pool2d &p) {
    std::vector<int64_t> d = selfDims;
    const size_t r = d.size();
    d[r - 2] = avgref::pooledSize(selfDims[r - 2], p.kH, p.sH, p.pH, p.ceilMode);
    d[r - 1] = avgref::pooledSize(selfDims[r - 1], p.kW, p.sW, p.pW, p.ceilMode);
    return d;
}

// N, C, H, W of a rank-3 (C, H, W) or rank-4 dims vector.
struct NCHW {
    int64_t n, c, h, w;
};
inline NCHW nchw(const std::vector<int64_t> &d) {
    if (d.size() == 3) return {1, d[0], d[1], d[2]};
    return {d[0], d[1], d[2], d[3]};
}

// Reference backward for (selfDims, attrs) with the given rounding of what the cube unit sees.
inline void referenceBackward(const std::vector<int64_t> &selfDims, const Attrs &a, const std::vector<double> &go,
                              CubeRound rnd, std::vector<double> &gi, std::vector<double> *absSum = nullptr) {
    const Pool2d p = resolve(a);
    const NCHW s = nchw(selfDims);
    const NCHW o = nchw(pooledDims(selfDims, p));
    avgref::avgPool2dBackward(go, s.n, s.c, s.h, s.w, o.h, o.w, p, rnd, gi, absSum);
}
inline void referenceForward(const std::vector<int64_t> &selfDims, const Attrs &a, const std::vector<double> &x,
                             CubeRound rnd, std::vector<double> &y, std::vector<double> *absSum = nullptr) {
    const Pool2d p = resolve(a);
    const NCHW s = nchw(selfDims);
    const NCHW o = nchw(pooledDims(selfDims, p));
    avgref::avgPool2dForward(x, s.n, s.c, s.h, s.w, o.h, o.w, p, rnd, y, absSum);
}

// ---------------------------------------------------------------------------------------------
// Running the operators
// ---------------------------------------------------------------------------------------------
struct RunResult {
    aclnnStatus phase1 = -1;
    aclnnStatus phase2 = -1;
    uint64_t workspace = 0;
    std::string message;  // aclGetRecentErrMsg() after a failing phase
    std::vector<double> out;
    std::vector<uint32_t> outBits;
    bool outCanaryIntact = false;
    std::string canaryWhere;
    bool inputsUnchanged = false;
};

using acltest::Workspace;

// Full backward call with the given views. gradOutput values in logical order (already in dt).
inline RunResult runBackward(aclDataType dt, const std::vector<int64_t> &selfDims, const Attrs &a,
                             const std::vector<double> &goVals, const Layout &goL = {}, const Layout &selfL = {},
                             const Layout &giL = {}, aclrtStream stream = nullptr) {
    if (!stream) stream = Runtime::stream();
    RunResult r;
    const Pool2d p = resolve(a);
    const auto goDims = pooledDims(selfDims, p);
    const aclFormat fmt = formatForRank(selfDims.size());
    Tensor go(dt, goDims, fmt, goL), self(dt, selfDims, fmt, selfL), gi(dt, selfDims, fmt, giL);
    if (!go.get() || !self.get() || !gi.get()) {
        r.message = "aclCreateTensor failed: " + recentErr();
        return r;
    }
    go.setValues(goVals);
    self.setValues(randomValues(static_cast<size_t>(self.count()), dt, 99));
    gi.setValues(std::vector<double>(static_cast<size_t>(gi.count()), 1234.0));
    const auto goSnap = go.snapshot(), selfSnap = self.snapshot();
    IntArray k(a.kernel), s(a.stride), pd(a.padding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnAvgPool2dBackwardGetWorkspaceSize(go.get(), self.get(), k.a, s.a, pd.a, a.ceilMode,
                                                      a.countIncludePad, a.divisorOverride, a.cubeMathType,
                                                      gi.get(), &ws, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = recentErr();
        return r;
    }
    r.workspace = ws;
    Workspace w;
    r.phase2 = aclnnAvgPool2dBackward(w.ptr(ws), ws, exec, stream);
    if (r.phase2 != ACLNN_SUCCESS) r.message = recentErr();
    aclrtSynchronizeStream(stream);
    r.out = gi.values();
    r.outBits = gi.bits();
    r.outCanaryIntact = gi.canaryIntact(&r.canaryWhere);
    r.inputsUnchanged = go.sameBytes(goSnap) && self.sameBytes(selfSnap);
    return r;
}

inline RunResult runForward(aclDataType dt, const std::vector<int64_t> &selfDims, const Attrs &a,
                            const std::vector<double> &xVals, const Layout &xL = {}, const Layout &outL = {}) {
    RunResult r;
    const Pool2d p = resolve(a);
    const auto outDims = pooledDims(selfDims, p);
    const aclFormat fmt = formatForRank(selfDims.size());
    Tensor x(dt, selfDims, fmt, xL), out(dt, outDims, fmt, outL);
    if (!x.get() || !out.get()) {
        r.message = "aclCreateTensor failed: " + recentErr();
        return r;
    }
    x.setValues(xVals);
    out.setValues(std::vector<double>(static_cast<size_t>(out.count()), 1234.0));
    const auto xSnap = x.snapshot();
    // The forward's strides may not be NULL (CANN): "stride = kernel" is the empty array there.
    IntArray k(a.kernel), s(a.stride ? a.stride : std::vector<int64_t>{}), pd(a.padding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnAvgPool2dGetWorkspaceSize(x.get(), k.a, s.a, pd.a, a.ceilMode, a.countIncludePad,
                                              a.divisorOverride, a.cubeMathType, out.get(), &ws, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = recentErr();
        return r;
    }
    r.workspace = ws;
    Workspace w;
    r.phase2 = aclnnAvgPool2d(w.ptr(ws), ws, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = recentErr();
    aclrtSynchronizeStream(Runtime::stream());
    r.out = out.values();
    r.outBits = out.bits();
    r.outCanaryIntact = out.canaryIntact(&r.canaryWhere);
    r.inputsUnchanged = x.sameBytes(xSnap);
    return r;
}

// ---------------------------------------------------------------------------------------------
// Comparison (testing.md tolerances)
// ---------------------------------------------------------------------------------------------

// FLOAT: |d| <= 1.2e-6 * |ref|; where the contributions cancel (absSum > |ref|), a floor of
// 2 * FLT_EPSILON * absSum covers the FLOAT accumulation. FLOAT16 / BF16: <= 1 ULP of the reference
// rounded to the dtype, with the same cancellation floor. NaN must be NaN, inf must be the same inf.
inline ::testing::AssertionResult closeToReference(aclDataType dt, const std::vector<double> &out,
                                                   const std::vector<double> &ref, const std::vector<double> &absSum,
                                                   size_t maxReport = 5) {
    if (out.size() != ref.size())
        return ::testing::AssertionFailure() << "size " << out.size() << " != reference " << ref.size();
    size_t bad = 0;
    std::ostringstream msg;
    double worst = 0.0;
    for (size_t i = 0; i < out.size(); ++i) {
        const double r = ref[i];
        const double o = out[i];
        const double as = absSum.empty() ? std::fabs(r) : absSum[i];
        bool ok;
        double tol = 0.0, target = r;
        if (std::isnan(r)) {
            ok = std::isnan(o);
        } else if (dt == ACL_FLOAT) {
            target = avgref::roundToF32(r);
            if (std::isinf(target)) {
                ok = (o == target);
            } else {
                tol = 1.2e-6 * std::fabs(r);
                if (as > std::fabs(r) * (1.0 + 1e-12)) tol += 2.0 * FLT_EPSILON * as;
                ok = std::fabs(o - r) <= tol;
            }
        } else {
            target = roundToDt(r, dt);
            if (std::isinf(target)) {
                ok = (o == target);
            } else {
                tol = avgref::ulpOf(target, fmtOf(dt));
                if (as > std::fabs(r) * (1.0 + 1e-12)) tol += 2.0 * FLT_EPSILON * as;
                ok = std::fabs(o - target) <= tol;
            }
        }
        if (!ok) {
            if (bad < maxReport)
                msg << "\n  [" << i << "] got " << o << " ref " << r << " (rounded " << target << ", tol " << tol
                    << ")";
            ++bad;
        }
        if (!std::isnan(r) && !std::isinf(r)) worst = std::max(worst, std::fabs(o - r));
    }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << out.size() << " elements differ" << msg.str();
    return ::testing::AssertionSuccess();
}

// Bit-exact comparison against the reference rounded to dt.
inline ::testing::AssertionResult bitExact(aclDataType dt, const std::vector<uint32_t> &outBits,
                                           const std::vector<double> &ref, size_t maxReport = 5) {
    if (outBits.size() != ref.size())
        return ::testing::AssertionFailure() << "size " << outBits.size() << " != reference " << ref.size();
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        uint32_t want;
        if (dt == ACL_FLOAT) {
            const float f = static_cast<float>(ref[i]);
            std::memcpy(&want, &f, 4);
        } else if (dt == ACL_FLOAT16) {
            want = avgref::f16Bits(ref[i]);
        } else {
            want = avgref::bf16Bits(ref[i]);
        }
        if (want != outBits[i]) {
            if (bad < maxReport)
                msg << "\n  [" << i << "] got 0x" << std::hex << outBits[i] << " want 0x" << want << std::dec
                    << " (ref " << ref[i] << ")";
            ++bad;
        }
    }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << ref.size() << " elements differ" << msg.str();
    return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult messageContains(const std::string &msg, const std::vector<std::string> &anyOf) {
    if (anyOf.empty()) return ::testing::AssertionSuccess();
    for (const auto &s : anyOf)
        if (msg.find(s) != std::string::npos) return ::testing::AssertionSuccess();
    std::ostringstream o;
    o << "message \"" << msg << "\" contains none of:";
    for (const auto &s : anyOf) o << " \"" << s << "\"";
    return ::testing::AssertionFailure() << o.str();
}

// ---------------------------------------------------------------------------------------------
// cubeMathType table of products.md (written independently of the product YAML files)
// ---------------------------------------------------------------------------------------------
enum class CubeExpect { Reject, Keep, F16, HF32 };
inline CubeExpect cubeExpect(const std::string &product, aclDataType dt, int cube) {
    const bool old = product == "atlas-training" || product == "atlas-inference";
    if (cube < 0 || cube > 3) return CubeExpect::Reject;
    if (old) {
        if (dt == ACL_BF16) return CubeExpect::Reject;  // (not a supported dtype there at all)
        switch (cube) {
            case 0: return dt == ACL_FLOAT ? CubeExpect::Reject : CubeExpect::Keep;
            case 1: return dt == ACL_FLOAT ? CubeExpect::F16 : CubeExpect::Keep;
            case 2: return dt == ACL_FLOAT ? CubeExpect::F16 : CubeExpect::Keep;
            default: return CubeExpect::Reject;
        }
    }
    switch (cube) {
        case 0: return CubeExpect::Keep;
        case 1: return dt == ACL_FLOAT ? CubeExpect::HF32 : CubeExpect::Keep;
        case 2:
            if (dt == ACL_BF16) return CubeExpect::Reject;
            return dt == ACL_FLOAT ? CubeExpect::F16 : CubeExpect::Keep;
        default: return dt == ACL_FLOAT ? CubeExpect::HF32 : CubeExpect::Keep;
    }
}
// Whether CANN's A2/A3 forward runs its 3-D vector kernel for this call (else its cube kernel or
// the global mean): a plane at least twice as wide as high (or high as wide), ceil mode, a kernel
// of more than 255 taps with a side over 20, a divisor outside [-255, 255], 65536+ channels.
inline bool a2VectorRoute(const std::vector<int64_t> &self, const Attrs &a) {
    const Pool2d p = resolve(a);
    const size_t r = self.size();
    const int64_t C = self[r - 3], H = self[r - 2], W = self[r - 1];
    if (H == p.kH && W == p.kW && p.pH == 0 && p.pW == 0) return false;
    const bool smallKernel = p.kH * p.kW <= 255 || (p.kH <= 20 && p.kW <= 20);
    return W / H >= 2 || H / W >= 2 || !smallKernel || p.kH > 255 || p.kW > 255 || p.divisorOverride < -255 ||
           p.divisorOverride > 255 || p.ceilMode || C >= 65536;
}
// The forward's own rules (CANN's aclnn_avgpool2d.cpp and its unit tests): on A2/A3 the cube
// kernel refuses FLOAT with 1 (ALLOW_FP32_DOWN_PRECISION) and 3 (USE_HF32) and rounds it to FLOAT16
// with 2; the vector kernel (vectorRoute: long strips, big kernels, ceil mode) computes in the input
// dtype whatever the mode. Elsewhere as the backward.
inline CubeExpect cubeExpectForward(const std::string &product, aclDataType dt, int cube, bool vectorRoute = false) {
    const bool old = product == "atlas-training" || product == "atlas-inference";
    const CubeExpect e = cubeExpect(product, dt, cube);
    if (old || e == CubeExpect::Reject) return e;
    if (vectorRoute) return CubeExpect::Keep;
    if (dt == ACL_FLOAT && (cube == 1 || cube == 3)) return CubeExpect::Reject;
    return e;
}
inline CubeRound roundingOf(CubeExpect e) {
    switch (e) {
        case CubeExpect::F16: return CubeRound::F16;
        case CubeExpect::HF32: return CubeRound::HF32;
        default: return CubeRound::None;
    }
}
// A cubeMathType every product accepts for dt (used where the cube mode is not the subject).
inline int8_t neutralCube(const std::string &product, aclDataType dt) {
    if ((product == "atlas-training" || product == "atlas-inference") && dt == ACL_FLOAT) return 1;
    return 0;
}

}  // namespace apt

#endif  // AVGPOOL2D_TESTS_AVGPOOL2D_TEST_UTIL_HPP_
