// Helpers of the max_pool2d_with_mask tests: runtime switching (product, threads), tensors over
// guarded storage (a canary around and between view elements), the two-phase calls and bit-level
// comparisons against mpool_reference.hpp.
#ifndef MAX_POOL2D_WITH_MASK_TESTS_MPOOL_TEST_UTIL_HPP_
#define MAX_POOL2D_WITH_MASK_TESTS_MPOOL_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acltest.hpp"
#include "guarded_tensor.hpp"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_max_pool2d_with_indices.h"
#include "aclnnop/aclnn_max_pool2d_with_indices_backward.h"
#include "aclnnop/aclnn_max_pool2d_with_mask.h"
#include "aclnnop/aclnn_max_pool2d_with_mask_backward.h"
#include "mpool_reference.hpp"

namespace mpt {

using acltest::Runtime;
inline std::string lastError() { return acltest::recentErr(); }

// ---- products (products.md) ----
// int32 argmax on atlas-a2/a3 where Ho*Wo int32 values fit the mask (a 1x1 kernel with Ho*Wo > 24 does
// not: it takes the bit mask, as the hardware does), the bit mask elsewhere.
inline bool isInt32Layout(const std::string &product, const mref::Pool &p) {
    return (product == "atlas-a2" || product == "atlas-a3") && p.Ho() * p.Wo() * 4 <= p.K() * p.maskRow();
}
inline std::string productName(const std::string &id) { return acltest::productNameSubstr(id); }
using acltest::allProducts;

inline mref::Dt refDt(aclDataType dt) {
    return dt == ACL_FLOAT16 ? mref::Dt::F16 : dt == ACL_BF16 ? mref::Dt::BF16 : mref::Dt::F32;
}
inline const char *dtName(aclDataType dt) {
    return dt == ACL_FLOAT ? "FLOAT" : dt == ACL_FLOAT16 ? "FLOAT16" : dt == ACL_BF16 ? "BF16" : "OTHER";
}
using acltest::elemSize;

using acltest::bitsOf;
using acltest::valueOf;

using acltest::Rng;

// Multiples of 1/16 in [-16, 16]: exact in BF16 (8 significant bits), so every sum of a few of them
// is exact in FLOAT and double, and only the final rounding remains.
inline std::vector<double> exactValues(size_t n, uint64_t seed) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = static_cast<double>(r.integer(-256, 256)) / 16.0;
    return v;
}

using acltest::numel;

// Values with many ties (a few distinct levels), NaN, +-inf and signed zeros.
inline std::vector<double> trickyValues(size_t n, uint64_t seed) {
    Rng r(seed);
    std::vector<double> v(n);
    for (auto &x : v) {
        switch (r.integer(0, 19)) {
            case 0: x = std::numeric_limits<double>::quiet_NaN(); break;
            case 1: x = -INFINITY; break;
            case 2: x = INFINITY; break;
            case 3: x = -0.0; break;
            case 4: x = 0.0; break;
            default: x = static_cast<double>(r.integer(-4, 4)) / 2.0;
        }
    }
    return v;
}

// ---- tensors over guarded storage ----

// How a view lies in storage: `order` lists dims outermost to innermost in memory (empty =
// row-major), `extra` pads each dim, `offset` is the view offset in elements.
using acltest::Layout;
using acltest::Placement;
using acltest::placed;
using acltest::placementName;

// A guarded tensor whose elements are read and written as bit patterns, values or mask bytes.
class Tensor : public acltest::GuardedTensor {
public:
    using GuardedTensor::GuardedTensor;

    int64_t at(int64_t linear) const { return storageIndex(linear); }
    void setBits(const std::vector<uint32_t> &b) {
        for (int64_t i = 0; i < count(); ++i) std::memcpy(element(i), &b[static_cast<size_t>(i)], elementBytes());
    }
    std::vector<uint32_t> bits() const {
        std::vector<uint32_t> b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], element(i), elementBytes());
        return b;
    }
    // Integer tensors (INT8 / INT32 / INT64) as signed values, each element's low bytes.
    void setInts(const std::vector<int64_t> &v) {
        for (int64_t i = 0; i < count(); ++i) std::memcpy(element(i), &v[static_cast<size_t>(i)], elementBytes());
    }
    std::vector<int64_t> ints() const {
        std::vector<int64_t> v(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) {
            if (elementBytes() == 8) {
                std::memcpy(&v[static_cast<size_t>(i)], element(i), 8);
            } else if (elementBytes() == 4) {
                int32_t x = 0;
                std::memcpy(&x, element(i), 4);
                v[static_cast<size_t>(i)] = x;
            } else {
                v[static_cast<size_t>(i)] = static_cast<int8_t>(*element(i));
            }
        }
        return v;
    }
    void setValues(const std::vector<double> &v) {
        std::vector<uint32_t> b(v.size());
        for (size_t i = 0; i < v.size(); ++i) b[i] = bitsOf(v[i], dtype());
        setBits(b);
    }
    void setBytes(const std::vector<uint8_t> &m) {  // INT8 tensors: view elements in logical order
        for (int64_t i = 0; i < count(); ++i) *element(i) = m[static_cast<size_t>(i)];
    }
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> m(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); ++i) m[static_cast<size_t>(i)] = *element(i);
        return m;
    }
};

using acltest::IntArray;

using acltest::Workspace;

// ---- problems: a pool geometry with its tensors' dims ----
struct Problem {
    mref::Pool pool{1, 1, 4, 4, 2, 2, 2, 2, 0, 0, false};
    bool rank3 = false;
    std::vector<int64_t> kernel() const { return {pool.kH, pool.kW}; }
    std::vector<int64_t> stride() const { return {pool.sH, pool.sW}; }
    std::vector<int64_t> padding() const { return {pool.pH, pool.pW}; }
    std::vector<int64_t> dims(int64_t h, int64_t w) const {
        return rank3 ? std::vector<int64_t>{pool.C, h, w} : std::vector<int64_t>{pool.N, pool.C, h, w};
    }
    std::vector<int64_t> selfDims() const { return dims(pool.H, pool.W); }
    std::vector<int64_t> outDims() const { return dims(pool.Ho(), pool.Wo()); }
    std::vector<int64_t> maskDims() const { return dims(pool.K(), pool.maskRow()); }
    aclFormat format() const { return rank3 ? ACL_FORMAT_ND : ACL_FORMAT_NCHW; }
};
inline Problem problemOf(const mref::Pool &p, bool rank3 = false) {
    Problem pr;
    pr.pool = p;
    pr.rank3 = rank3;
    return pr;
}

struct NamedProblem {
    std::string name;
    Problem pr;
};
// The geometries the forward and the int32-index tests run: overlapping, ceil-mode, rectangular,
// rank-3, gapped (stride > kernel), wide, and a 1x1 kernel whose int32 argmax does not fit the mask.
inline std::vector<NamedProblem> poolShapes() {
    const auto mk = [](const mref::Pool &p, bool rank3 = false) { return problemOf(p, rank3); };
    return {
        {"k3s2p1", mk({2, 3, 9, 9, 3, 3, 2, 2, 1, 1, false})},
        {"k3x2s2x1p1x0_ceil", mk({1, 2, 10, 7, 3, 2, 2, 1, 1, 0, true})},
        {"rank3_k2s2_ceil", mk({1, 3, 8, 11, 2, 2, 2, 2, 0, 0, true}, true)},
        {"k4s3p2_ceil", mk({2, 2, 12, 12, 4, 4, 3, 3, 2, 2, true})},
        {"k2s3_gaps", mk({1, 2, 11, 10, 2, 2, 3, 3, 0, 0, false})},
        {"wide", mk({1, 1, 3, 101, 3, 3, 2, 2, 1, 1, false})},
        {"k1s2_bits_on_a2", mk({1, 4, 20, 20, 1, 1, 2, 2, 0, 0, false})},  // Ho*Wo = 100: the bit mask everywhere
    };
}

// ---- guard-page sweeps (TouchesNothingOutsideItsTensors) ----
// The common pools at every width 1-70: the parity path's blocks of 16 outputs with every tail.
inline std::vector<NamedProblem> widthSweep() {
    std::vector<NamedProblem> v;
    for (int64_t W = 1; W <= 70; ++W) {
        v.push_back({"k3s2p1 W " + std::to_string(W), Problem{{1, 2, 5, W, 3, 3, 2, 2, 1, 1, false}}});
        if (W >= 2) v.push_back({"k2s2 W " + std::to_string(W), Problem{{1, 2, 4, W, 2, 2, 2, 2, 0, 0, false}}});
    }
    return v;
}
// Both mask layouts with every dtype of each, FLOAT computed as FLOAT16 included.
struct ProductDtype {
    std::string product;
    aclDataType dt;
};
inline std::vector<ProductDtype> guardMatrix() {
    return {{"atlas-a2", ACL_FLOAT}, {"atlas-a2", ACL_FLOAT16}, {"atlas-a2", ACL_BF16}, {"atlas-training", ACL_FLOAT},
            {"atlas-training", ACL_FLOAT16}};
}

struct Result {
    aclnnStatus phase1 = -1, phase2 = -1;
    uint64_t workspace = 0;
    std::string message;
    std::vector<uint32_t> outBits;  // gradInput (backward) / out (forward)
    std::vector<uint8_t> mask;      // forward only: the mask bytes in view order
    bool canary = false;            // outputs written only inside their views
    bool inputsUnchanged = false;
};

struct Views {
    Layout a, b, c, mask;  // backward: gradOutput, self, gradInput; forward: self, out, (unused)
};

inline Result runBackward(const Problem &pr, aclDataType dt, const std::vector<double> &go,
                          const std::vector<uint8_t> &mask, const Views &v = {}) {
    Result r;
    Tensor tgo(dt, pr.outDims(), pr.format(), v.a), self(dt, pr.selfDims(), pr.format(), v.b),
        gi(dt, pr.selfDims(), pr.format(), v.c), tm(ACL_INT8, pr.maskDims(), pr.format(), v.mask);
    tgo.setValues(go);
    self.setValues(std::vector<double>(static_cast<size_t>(self.count()), 1.0));
    gi.setValues(std::vector<double>(static_cast<size_t>(gi.count()), 1234.0));
    tm.setBytes(mask);
    const auto s1 = tgo.snapshot(), s2 = self.snapshot(), s3 = tm.snapshot();
    IntArray k(pr.kernel()), s(pr.stride()), p(pr.padding()), d(std::vector<int64_t>{1, 1});
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(tgo.get(), self.get(), tm.get(), k.a, s.a, p.a, d.a,
                                                              pr.pool.ceil, gi.get(), &r.workspace, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnMaxPool2dWithMaskBackward(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.outBits = gi.bits();
    r.canary = gi.canaryIntact();
    r.inputsUnchanged = tgo.snapshot() == s1 && self.snapshot() == s2 && tm.snapshot() == s3;
    return r;
}

inline Result runForward(const Problem &pr, aclDataType dt, const std::vector<double> &x, const Views &v = {}) {
    Result r;
    Tensor self(dt, pr.selfDims(), pr.format(), v.a), out(dt, pr.outDims(), pr.format(), v.b),
        tm(ACL_INT8, pr.maskDims(), pr.format(), v.mask);
    self.setValues(x);
    out.setValues(std::vector<double>(static_cast<size_t>(out.count()), 1234.0));
    tm.setBytes(std::vector<uint8_t>(static_cast<size_t>(tm.count()), 0x5C));
    const auto s1 = self.snapshot();
    IntArray k(pr.kernel()), s(pr.stride()), p(pr.padding()), d(std::vector<int64_t>{1});
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnMaxPool2dWithMaskGetWorkspaceSize(self.get(), k.a, s.a, p.a, d.a, pr.pool.ceil, out.get(), tm.get(),
                                                      &r.workspace, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnMaxPool2dWithMask(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.outBits = out.bits();
    r.mask = tm.bytes();
    r.canary = out.canaryIntact() && tm.canaryIntact();
    r.inputsUnchanged = self.snapshot() == s1;
    return r;
}

// A pool call in failure messages.
inline std::string describe(aclDataType dt, const mref::Pool &p) {
    return std::string(dtName(dt)) + " N" + std::to_string(p.N) + "C" + std::to_string(p.C) + " " + std::to_string(p.H) + "x" +
           std::to_string(p.W) + " k" + std::to_string(p.kH) + "x" + std::to_string(p.kW) + " s" + std::to_string(p.sH) + "x" +
           std::to_string(p.sW) + " p" + std::to_string(p.pH) + "x" + std::to_string(p.pW) + (p.ceil ? " ceil" : "");
}

// Bits of the result against the reference values rounded to dt (NaN matches any NaN).
inline ::testing::AssertionResult sameBits(aclDataType dt, const std::vector<uint32_t> &got,
                                           const std::vector<double> &ref) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        const bool ok = std::isnan(ref[i]) ? std::isnan(valueOf(got[i], dt)) : got[i] == bitsOf(ref[i], dt);
        if (!ok && bad++ < 5)
            msg << "\n  [" << i << "] got 0x" << std::hex << got[i] << " want 0x" << bitsOf(ref[i], dt) << std::dec
                << " (" << ref[i] << ")";
    }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << ref.size() << " differ" << msg.str();
    return ::testing::AssertionSuccess();
}

// The forward's out and mask bytes on a product: the int32 argmax layout or the bit mask
// (isInt32Layout), FLOAT computed as FLOAT16 on atlas-training.
struct Expected {
    std::vector<double> out;
    std::vector<uint8_t> mask;
};
inline Expected expectedForward(const std::string &product, aclDataType dt, const mref::Pool &p, const std::vector<double> &x) {
    const bool fp16 = product == "atlas-training" && dt == ACL_FLOAT;
    const mref::Forward f = mref::forward(p, x, refDt(dt), fp16);
    if (isInt32Layout(product, p)) return {f.out, mref::maskInt32(p, f.argmax)};
    std::vector<mref::Bit> bits;
    for (size_t i = 0; i < f.k.size(); ++i)
        bits.push_back({static_cast<int64_t>(i) / (p.Ho() * p.Wo()), static_cast<int64_t>(i) % (p.Ho() * p.Wo()), f.k[i]});
    return {f.out, mref::maskBits(p, bits)};
}

// A random valid mask: each output's maximum at a random element of its clipped window (int32) or a
// random kernel position whose element is inside the input (bits). For int32 some outputs get -1.
struct RandomMask {
    std::vector<int64_t> idx;        // int32 layout
    std::vector<mref::Bit> bits;     // bit layout
};
inline RandomMask randomMask(const mref::Pool &p, uint64_t seed, bool withMinus1) {
    RandomMask m;
    Rng r(seed);
    const int64_t Ho = p.Ho(), Wo = p.Wo();
    for (int64_t pl = 0; pl < p.N * p.C; ++pl)
        for (int64_t j = 0; j < Ho * Wo; ++j) {
            const int64_t hs = (j / Wo) * p.sH - p.pH, ws = (j % Wo) * p.sW - p.pW;
            const int64_t h0 = std::max<int64_t>(hs, 0), h1 = std::min(hs + p.kH, p.H);
            const int64_t w0 = std::max<int64_t>(ws, 0), w1 = std::min(ws + p.kW, p.W);
            const int64_t ih = r.integer(h0, h1 - 1), iw = r.integer(w0, w1 - 1);
            m.idx.push_back(withMinus1 && r.integer(0, 9) == 0 ? -1 : ih * p.W + iw);
            m.bits.push_back({pl, j, (ih - hs) * p.kW + (iw - ws)});
        }
    return m;
}

}  // namespace mpt

#endif  // MAX_POOL2D_WITH_MASK_TESTS_MPOOL_TEST_UTIL_HPP_
