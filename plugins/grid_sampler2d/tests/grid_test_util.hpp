// Helpers of the grid_sampler2d tests on top of tests/support (runtime, Rng, guarded tensors):
// the value encodings of FLOAT / FLOAT16 / BF16 / DOUBLE, exact test data, the two-phase calls of
// GridSampler2DBackward / GridSampler2D, and the tolerance of testing.md against grid_reference.hpp.
#ifndef GRID_SAMPLER2D_TESTS_GRID_TEST_UTIL_HPP_
#define GRID_SAMPLER2D_TESTS_GRID_TEST_UTIL_HPP_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "acltest.hpp"
#include "grid_reference.hpp"
#include "guarded_tensor.hpp"

namespace gst {

using acltest::Layout;
using acltest::Placement;
using acltest::placed;
using acltest::placementName;
using acltest::numel;
using acltest::Rng;
using acltest::Runtime;
using acltest::Workspace;
using acltest::elemSize;
inline std::string lastError() { return acltest::recentErr(); }

inline const char *dtName(aclDataType dt) {
    switch (dt) {
        case ACL_FLOAT: return "FLOAT";
        case ACL_FLOAT16: return "FLOAT16";
        case ACL_BF16: return "BF16";
        case ACL_DOUBLE: return "DOUBLE";
        default: return "OTHER";
    }
}

// ---- values <-> bits. Writing needs values exact in the dtype (the tests generate such values);
// reading is exact. Rounding a double to a dtype (for references) is round to nearest even. ----
inline double roundTo(double v, aclDataType dt) {
    if (dt == ACL_DOUBLE || std::isnan(v) || std::isinf(v)) return v;
    if (dt == ACL_FLOAT) return static_cast<float>(v);
    const int mant = dt == ACL_BF16 ? 8 : 11;  // significant bits
    const double a = std::fabs(v);
    if (a == 0.0) return v;
    if (dt == ACL_FLOAT16 && a >= 65520.0) return std::copysign(INFINITY, v);
    int e = std::ilogb(a);
    if (dt == ACL_FLOAT16 && e < -14) e = -14;  // subnormal spacing
    if (dt == ACL_BF16 && e < -126) e = -126;
    const double q = std::ldexp(1.0, e - (mant - 1));
    return std::copysign(std::nearbyint(a / q) * q, v);  // nearbyint: ties to even
}

using acltest::bitsOf;
using acltest::valueOf;

// Multiples of 1/64 in [-lim, lim]: exact in every dtype (BF16 keeps 8 significant bits) as long
// as lim <= 4.
inline std::vector<double> values(size_t n, uint64_t seed, double lim = 4.0) {
    Rng r(seed);
    const auto k = static_cast<int64_t>(lim * 64);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(r.integer(-k, k)) / 64.0;
    return v;
}
// Grid values: multiples of 1/256 in [-lim, lim] (exact in FLOAT16; BF16 needs lim < 0.5 for
// 1/256 steps, so BF16 grids use multiples of 1/64).
inline std::vector<double> gridValues(size_t n, uint64_t seed, double lim, aclDataType dt) {
    Rng r(seed);
    const double step = dt == ACL_BF16 ? 64.0 : 256.0;
    const auto k = static_cast<int64_t>(lim * step);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(r.integer(-k, k)) / step;
    return v;
}

// A guarded tensor whose elements are read and written as values of its dtype.
class Tensor : public acltest::GuardedTensor {
public:
    Tensor(aclDataType dt, std::vector<int64_t> dims, aclFormat fmt = ACL_FORMAT_ND, const Layout &l = {})
        : GuardedTensor(dt, std::move(dims), fmt, l) {}
    void setValues(const std::vector<double> &v) {
        for (int64_t i = 0; i < count(); ++i) {
            const uint64_t b = bitsOf(v[static_cast<size_t>(i)], dtype());
            std::memcpy(element(i), &b, elementBytes());  // little endian: the low bytes
        }
    }
    std::vector<uint64_t> bits() const {
        std::vector<uint64_t> b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], element(i), elementBytes());
        return b;
    }
    std::vector<double> values() const {
        const auto b = bits();
        std::vector<double> v(b.size());
        for (size_t i = 0; i < b.size(); ++i) v[i] = valueOf(b[i], dtype());
        return v;
    }
};

inline std::vector<int64_t> inDims(const gref::Problem &p) { return {p.N, p.C, p.H, p.W}; }
inline std::vector<int64_t> outDims(const gref::Problem &p) { return {p.N, p.C, p.Ho, p.Wo}; }
inline std::vector<int64_t> gridDims(const gref::Problem &p) { return {p.N, p.Ho, p.Wo, 2}; }

struct Data {
    std::vector<double> gradOutput, input, grid;
};

// Random data exact in dt: gradOutput and input in [-4, 4], grid in [-lim, lim].
inline Data randomData(const gref::Problem &p, aclDataType dt, uint64_t seed, double lim = 1.1) {
    return {values(static_cast<size_t>(p.outputCount()), seed * 3 + 1),
            values(static_cast<size_t>(p.inputCount()), seed * 3 + 2),
            gridValues(static_cast<size_t>(p.gridCount()), seed * 3 + 3, lim, dt)};
}

struct Views {
    Layout gradOutput, input, grid, inputGrad, gridGrad;
};

struct Result {
    aclnnStatus phase1 = -1, phase2 = -1;
    uint64_t workspace = 0;
    std::string message;
    std::vector<double> inputGrad, gridGrad;
    std::vector<uint64_t> inputGradBits, gridGradBits;
    bool canary = false, inputsUnchanged = false;
};

struct Mask {
    bool null = false;
    bool ig = true, gg = true;
};

// Outputs are prefilled with 1234 so that "not written" is visible.
inline Result runBackward(const gref::Problem &p, aclDataType dt, const Data &d, Mask mask = {}, const Views &v = {}) {
    Result r;
    Tensor go(dt, outDims(p), ACL_FORMAT_ND, v.gradOutput), in(dt, inDims(p), ACL_FORMAT_ND, v.input),
        grid(dt, gridDims(p), ACL_FORMAT_ND, v.grid), ig(dt, inDims(p), ACL_FORMAT_ND, v.inputGrad),
        gg(dt, gridDims(p), ACL_FORMAT_ND, v.gridGrad);
    go.setValues(d.gradOutput);
    in.setValues(d.input);
    grid.setValues(d.grid);
    ig.setValues(std::vector<double>(static_cast<size_t>(ig.count()), 1234.0));
    gg.setValues(std::vector<double>(static_cast<size_t>(gg.count()), 1234.0));
    const auto s1 = go.snapshot(), s2 = in.snapshot(), s3 = grid.snapshot();
    const bool m[2] = {mask.ig, mask.gg};
    aclBoolArray *ma = mask.null ? nullptr : aclCreateBoolArray(m, 2);
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnGridSampler2DBackwardGetWorkspaceSize(go.get(), in.get(), grid.get(), p.interp, p.padding, p.align, ma,
                                                          ig.get(), gg.get(), &r.workspace, &exec);
    if (ma) aclDestroyBoolArray(ma);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnGridSampler2DBackward(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.inputGrad = ig.values();
    r.gridGrad = gg.values();
    r.inputGradBits = ig.bits();
    r.gridGradBits = gg.bits();
    r.canary = ig.canaryIntact() && gg.canaryIntact();
    r.inputsUnchanged = go.snapshot() == s1 && in.snapshot() == s2 && grid.snapshot() == s3;
    return r;
}

// Views: input, grid and (in inputGrad's place) out.
inline Result runForward(const gref::Problem &p, aclDataType dt, const std::vector<double> &input,
                         const std::vector<double> &grid, const Views &v = {}, aclFormat fmt = ACL_FORMAT_ND) {
    Result r;
    Tensor in(dt, inDims(p), fmt, v.input), g(dt, gridDims(p), fmt, v.grid), out(dt, outDims(p), fmt, v.inputGrad);
    in.setValues(input);
    g.setValues(grid);
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnGridSampler2DGetWorkspaceSize(in.get(), g.get(), p.interp, p.padding, p.align, out.get(), &r.workspace,
                                                  &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnGridSampler2D(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.inputGrad = out.values();  // the forward's out
    r.inputGradBits = out.bits();
    r.canary = out.canaryIntact();
    return r;
}

// testing.md's GridSampler2D tolerance, against the reference rounded to dt:
//   FLOAT   |got - ref| <= 1e-5 * max|ref| + 1e-5 * |ref|, and relative L2 <= 1e-6
//   FLOAT16 |got - ref| <= 1e-3 * |ref| (+ 1e-5 * max|ref| near zero); BF16 likewise with 8e-3
//   DOUBLE  1e-12 in place of 1e-5.
// NaN in the reference must be NaN in the result.
inline ::testing::AssertionResult close(aclDataType dt, const std::vector<double> &got, const std::vector<double> &ref) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
    double maxRef = 0.0, err2 = 0.0, ref2 = 0.0;
    for (double x : ref)
        if (std::isfinite(x)) maxRef = std::max(maxRef, std::fabs(x));
    const double rel = dt == ACL_FLOAT ? 1e-5 : dt == ACL_FLOAT16 ? 1e-3 : dt == ACL_BF16 ? 8e-3 : 1e-12;
    const double absTol = (dt == ACL_DOUBLE ? 1e-12 : 1e-5) * maxRef;
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double want = roundTo(ref[i], dt);
        bool ok;
        if (std::isnan(want)) ok = std::isnan(got[i]);
        else if (std::isinf(want)) ok = got[i] == want;
        else {
            ok = std::fabs(got[i] - want) <= absTol + rel * std::fabs(want);
            err2 += (got[i] - ref[i]) * (got[i] - ref[i]);
            ref2 += ref[i] * ref[i];
        }
        if (!ok && bad++ < 6) msg << "\n  [" << i << "] got " << got[i] << " want " << want << " (exact " << ref[i] << ")";
    }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << ref.size() << " out of tolerance" << msg.str();
    if ((dt == ACL_FLOAT || dt == ACL_DOUBLE) && ref2 > 0.0) {
        const double l2 = std::sqrt(err2 / ref2);
        if (l2 > (dt == ACL_FLOAT ? 1e-6 : 1e-13))
            return ::testing::AssertionFailure() << "relative L2 error " << l2 << " above the bound";
    }
    return ::testing::AssertionSuccess();
}

inline const char *interpName(int m) { return m == 0 ? "bilinear" : m == 1 ? "nearest" : "bicubic"; }
inline const char *paddingName(int m) { return m == 0 ? "zeros" : m == 1 ? "border" : "reflection"; }
inline std::string describe(const gref::Problem &p) {
    std::ostringstream s;
    s << interpName(p.interp) << "/" << paddingName(p.padding) << "/align" << p.align << " N" << p.N << "C" << p.C << " "
      << p.H << "x" << p.W << "->" << p.Ho << "x" << p.Wo;
    return s.str();
}

}  // namespace gst

#endif  // GRID_SAMPLER2D_TESTS_GRID_TEST_UTIL_HPP_
