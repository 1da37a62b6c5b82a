// Forward and backward agree with each other (testing.md oracle 4), with unique indices on tiny
// shapes, every value computed by the library:
//  - adjoint identity <MaxUnpool2d(x), g> == <x, MaxUnpool2dBackward(g)>, exactly, on small integers;
//  - finite differences: d/dx_i of f(x) = <g, MaxUnpool2d(x)>, with the forward in DOUBLE (central
//    differences, eps 1e-6) against the backward's gradient (FLOAT), atol 1e-5, rtol 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

struct Tiny {
    std::vector<int64_t> self;
    int64_t oH, oW;
    std::vector<int64_t> outDims() const {
        std::vector<int64_t> d = self;
        d[d.size() - 2] = oH;
        d[d.size() - 1] = oW;
        return d;
    }
    int64_t plane() const { return self[self.size() - 2] * self.back(); }
    int64_t planes() const { return numel(self) / plane(); }
};
const std::vector<Tiny> kTiny{{{2, 2, 3, 3}, 6, 6}, {{3, 2, 5}, 4, 5}, {{1, 1, 4, 4}, 4, 4}};

// y = MaxUnpool2d(x) in dt (FLOAT or DOUBLE), through the library.
std::vector<double> forward(const Tiny &t, aclDataType dt, const std::vector<double> &x, const std::vector<int64_t> &ix) {
    Tensor self(dt, t.self), idx(ACL_INT64, t.self), out(dt, t.outDims());
    self.setDoubles(x);
    idx.setInts(ix);
    IntArray os(std::vector<int64_t>{t.oH, t.oW});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnMaxUnpool2dGetWorkspaceSize(self.get(), idx.get(), os.a, out.get(), &ws, &exec), ACLNN_SUCCESS) << recentErr();
    Workspace w;
    EXPECT_EQ(aclnnMaxUnpool2d(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << recentErr();
    aclrtSynchronizeStream(Runtime::stream());
    return out.doubles();
}

// gx = MaxUnpool2dBackward(g) in FLOAT, through the library.
std::vector<double> backward(const Tiny &t, const std::vector<double> &g, const std::vector<int64_t> &ix) {
    Tensor go(ACL_FLOAT, t.outDims()), self(ACL_FLOAT, t.self), idx(ACL_INT64, t.self), out(ACL_FLOAT, t.self);
    go.setDoubles(g);
    idx.setInts(ix);
    self.fillViewBytes(0);
    IntArray os(std::vector<int64_t>{t.oH, t.oW});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnMaxUnpool2dBackwardGetWorkspaceSize(go.get(), self.get(), idx.get(), os.a, out.get(), &ws, &exec),
              ACLNN_SUCCESS)
        << recentErr();
    Workspace w;
    EXPECT_EQ(aclnnMaxUnpool2dBackward(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << recentErr();
    aclrtSynchronizeStream(Runtime::stream());
    return out.doubles();
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

std::vector<double> smallInts(size_t n, uint64_t seed) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(r.integer(-8, 8));
    return v;
}
std::vector<double> uniformFloats(size_t n, uint64_t seed) {  // in [-1, 1], representable in FLOAT
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(static_cast<float>(std::ldexp(static_cast<double>(r.next() >> 11), -52) - 1.0));
    return v;
}

TEST(Adjoint, InnerProductsAgreeExactly) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const Tiny &t : kTiny) {
        SCOPED_TRACE(dimsStr(t.self));
        const auto ix = uniqueIndices(t.planes(), t.plane(), t.oH * t.oW, 301);
        const auto x = smallInts(static_cast<size_t>(numel(t.self)), 302);
        const auto g = smallInts(static_cast<size_t>(numel(t.outDims())), 303);
        const auto y = forward(t, ACL_FLOAT, x, ix);
        const auto gx = backward(t, g, ix);
        const double lhs = dot(y, g), rhs = dot(x, gx);
        EXPECT_EQ(lhs, rhs);
        EXPECT_NE(rhs, 0.0) << "degenerate data: the identity would hold trivially";
    }
}

TEST(Adjoint, FiniteDifferencesMatchTheBackward) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    constexpr double kEps = 1e-6, kAtol = 1e-5, kRtol = 1e-3;
    for (const Tiny &t : kTiny) {
        SCOPED_TRACE(dimsStr(t.self));
        const auto ix = uniqueIndices(t.planes(), t.plane(), t.oH * t.oW, 311);
        const auto x = uniformFloats(static_cast<size_t>(numel(t.self)), 312);
        const auto g = uniformFloats(static_cast<size_t>(numel(t.outDims())), 313);
        const auto gx = backward(t, g, ix);
        size_t checked = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            auto xp = x, xm = x;
            xp[i] += kEps;
            xm[i] -= kEps;
            const double numeric = (dot(g, forward(t, ACL_DOUBLE, xp, ix)) - dot(g, forward(t, ACL_DOUBLE, xm, ix))) / (2 * kEps);
            EXPECT_NEAR(gx[i], numeric, kAtol + kRtol * std::fabs(numeric)) << "element " << i;
            checked += std::fabs(numeric) > 1e-3;
        }
        EXPECT_GT(checked, x.size() / 2) << "most derivatives must be non-trivial";
    }
}

}  // namespace
}  // namespace upt
