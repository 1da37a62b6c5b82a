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
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_max_unpool2d.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"
#include "unpool_reference.hpp"

namespace upt {

using unpoolref::Bits;

// ---------------------------------------------------------------------------------------------
// Products and runtime
// ---------------------------------------------------------------------------------------------
inline const std::vector<std::string> &allProducts() {
    static const std::vector<std::string> v{"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3",
                                            "atlas-200i-500-a2"};
    return v;
}
// A substring of the product's documented name (products.md), which support errors must contain.
inline std::string productNameSubstr(const std::string &id) {
    if (id == "atlas-training") return "Atlas training series";
    if (id == "atlas-inference") return "Atlas inference series";
    if (id == "atlas-a2") return "Atlas A2";
    if (id == "atlas-a3") return "Atlas A3";
    if (id == "atlas-200i-500-a2") return "Atlas 200I/500 A2";
    return "?";
}
inline std::string ident(std::string s) {
    for (auto &ch : s)
        if (ch == '-' || ch == '/') ch = '_';
    return s;
}

// aclInit with a YAML file naming the product and the thread count; switching = aclFinalize + aclInit.
class Runtime {
public:
    static void use(const std::string &product, int threads = 2) {  // inside ASSERT_NO_FATAL_FAILURE
        State &s = state();
        if (s.initialized && s.product == product && s.threads == threads) return;
        shutdown();
        namespace fs = std::filesystem;
        const fs::path dir = tempDir();
        fs::create_directories(dir);
        const fs::path file = dir / (product + "_t" + std::to_string(threads) + ".yaml");
        std::ofstream(file) << "product: " << product << "\nthreads: " << threads << "\n";
        ASSERT_EQ(aclInit(file.string().c_str()), ACL_SUCCESS) << "aclInit for product " << product;
        s.initialized = true;
        s.product = product;
        s.threads = threads;
        ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&s.stream), ACL_SUCCESS);
    }
    static void shutdown() {
        State &s = state();
        if (!s.initialized) return;
        if (s.stream) aclrtDestroyStream(s.stream);
        s.stream = nullptr;
        aclrtResetDevice(0);
        EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
        s.initialized = false;
        s.product.clear();
        s.threads = -1;
    }
    static aclrtStream stream() { return state().stream; }
    static std::filesystem::path tempDir() {
        return std::filesystem::temp_directory_path() / ("aclnn_max_unpool2d_tests_" + std::to_string(::getpid()));
    }

private:
    struct State {
        bool initialized = false;
        std::string product;
        int threads = -1;
        aclrtStream stream = nullptr;
    };
    static State &state() {
        static State s;
        return s;
    }
};

class RuntimeEnvironment : public ::testing::Environment {
public:
    void TearDown() override {
        Runtime::shutdown();
        std::error_code ec;
        std::filesystem::remove_all(Runtime::tempDir(), ec);
    }
};
inline ::testing::Environment *const kRuntimeEnvironment = ::testing::AddGlobalTestEnvironment(new RuntimeEnvironment);

inline std::string recentErr() {
    const char *m = aclGetRecentErrMsg();
    return m ? std::string(m) : std::string();
}
inline ::testing::AssertionResult messageContains(const std::string &msg, const std::vector<std::string> &all) {
    for (const auto &s : all)
        if (msg.find(s) == std::string::npos)
            return ::testing::AssertionFailure() << "message \"" << msg << "\" does not contain \"" << s << "\"";
    return ::testing::AssertionSuccess();
}

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

class Rng {  // splitmix64: reproducible, independent of the standard library's distributions
public:
    explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    int64_t integer(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }

private:
    uint64_t s_;
};

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

inline int64_t numel(const std::vector<int64_t> &d) {
    return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<int64_t>());
}
inline std::string dimsStr(const std::vector<int64_t> &d) {
    std::ostringstream o;
    o << "[";
    for (size_t i = 0; i < d.size(); ++i) o << (i ? "," : "") << d[i];
    o << "]";
    return o.str();
}

// ---------------------------------------------------------------------------------------------
// Tensors over guarded storage
// ---------------------------------------------------------------------------------------------

// How a view lies in its storage: order lists the dims from outermost to innermost in memory
// (empty = row-major), extra adds unused elements per dim (padded rows), offset is the view offset.
struct Layout {
    std::vector<int> order;
    std::vector<int64_t> extra;
    int64_t offset = 0;
    bool contiguous() const { return order.empty() && extra.empty() && offset == 0; }
};

class Tensor {
public:
    static constexpr size_t kGuardBytes = 256;
    static constexpr unsigned char kCanary = 0xA5;

    Tensor(aclDataType dt, std::vector<int64_t> dims, aclFormat fmt = ACL_FORMAT_ND, const Layout &layout = {})
        : dt_(dt), dims_(std::move(dims)), esize_(elemSize(dt)) {
        const size_t r = dims_.size();
        strides_.assign(r, 0);
        std::vector<int> order = layout.order;
        if (order.empty()) {
            order.resize(r);
            std::iota(order.begin(), order.end(), 0);
        }
        int64_t step = 1;
        for (size_t k = r; k-- > 0;) {
            const int d = order[k];
            strides_[static_cast<size_t>(d)] = step;
            step *= std::max<int64_t>(dims_[static_cast<size_t>(d)] + (layout.extra.empty() ? 0 : layout.extra[static_cast<size_t>(d)]), 1);
        }
        offset_ = layout.offset;
        int64_t maxIdx = offset_;
        bool empty = false;
        for (size_t d = 0; d < r; ++d) {
            if (dims_[d] == 0) empty = true;
            else maxIdx += (dims_[d] - 1) * strides_[d];
        }
        const int64_t storageElems = empty ? 0 : maxIdx + 1;
        storageDims_ = layout.contiguous() ? dims_ : std::vector<int64_t>{storageElems};
        raw_.assign(2 * kGuardBytes + static_cast<size_t>(storageElems) * esize_ + 64, kCanary);
        const auto base = reinterpret_cast<uintptr_t>(raw_.data()) + kGuardBytes;
        data_ = raw_.data() + kGuardBytes + (64 - base % 64) % 64;  // 64-byte aligned data
        t_ = aclCreateTensor(dims_.data(), dims_.size(), dt_, strides_.data(), offset_, fmt, storageDims_.data(),
                             storageDims_.size(), data_);
    }
    ~Tensor() {
        if (t_) aclDestroyTensor(t_);
    }
    Tensor(const Tensor &) = delete;
    Tensor &operator=(const Tensor &) = delete;

    aclTensor *get() const { return t_; }
    void *data() const { return data_; }
    const std::vector<int64_t> &dims() const { return dims_; }
    int64_t count() const { return numel(dims_); }

    int64_t storageIndex(int64_t linear) const {  // of the linear-th view element, row-major
        int64_t idx = offset_;
        for (size_t d = dims_.size(); d-- > 0;) {
            idx += (linear % dims_[d]) * strides_[d];
            linear /= dims_[d];
        }
        return idx;
    }
    void setBits(const Bits &v) {
        for (int64_t i = 0; i < count(); ++i) std::memcpy(at(i), &v[static_cast<size_t>(i)], esize_);  // little endian
    }
    void setInts(const std::vector<int64_t> &v) {  // indices (INT32 / INT64)
        for (int64_t i = 0; i < count(); ++i) {
            const int64_t x = v[static_cast<size_t>(i)];
            if (esize_ == 4) {
                const auto y = static_cast<int32_t>(x);
                std::memcpy(at(i), &y, 4);
            } else {
                std::memcpy(at(i), &x, 8);
            }
        }
    }
    void setDoubles(const std::vector<double> &v) {  // FLOAT / DOUBLE only
        for (int64_t i = 0; i < count(); ++i) {
            if (dt_ == ACL_FLOAT) {
                const auto f = static_cast<float>(v[static_cast<size_t>(i)]);
                std::memcpy(at(i), &f, 4);
            } else {
                std::memcpy(at(i), &v[static_cast<size_t>(i)], 8);
            }
        }
    }
    Bits bits() const {
        Bits b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], at(i), esize_);
        return b;
    }
    std::vector<double> doubles() const {  // FLOAT / DOUBLE only
        std::vector<double> v(static_cast<size_t>(count()));
        for (int64_t i = 0; i < count(); ++i) {
            if (dt_ == ACL_FLOAT) {
                float f;
                std::memcpy(&f, at(i), 4);
                v[static_cast<size_t>(i)] = f;
            } else {
                std::memcpy(&v[static_cast<size_t>(i)], at(i), 8);
            }
        }
        return v;
    }
    void fillViewBytes(unsigned char byte) {
        for (int64_t i = 0; i < count(); ++i) std::memset(at(i), byte, esize_);
    }
    // Every byte outside the view (guards, gaps, padded rows) still holds the canary.
    bool canaryIntact(std::string *where = nullptr) const {
        std::vector<char> inView(raw_.size(), 0);
        const int64_t base = data_ - raw_.data();
        for (int64_t i = 0; i < count(); ++i)
            for (size_t k = 0; k < esize_; ++k)
                inView[static_cast<size_t>(base + storageIndex(i) * static_cast<int64_t>(esize_)) + k] = 1;
        for (size_t k = 0; k < raw_.size(); ++k)
            if (!inView[k] && raw_[k] != kCanary) {
                if (where) *where = "byte " + std::to_string(static_cast<int64_t>(k) - base) + " relative to data";
                return false;
            }
        return true;
    }
    std::vector<unsigned char> snapshot() const { return raw_; }
    bool sameBytes(const std::vector<unsigned char> &s) const { return s == raw_; }

private:
    unsigned char *at(int64_t i) const { return data_ + storageIndex(i) * static_cast<int64_t>(esize_); }

    aclDataType dt_;
    std::vector<int64_t> dims_;
    size_t esize_;
    std::vector<int64_t> strides_, storageDims_;
    int64_t offset_ = 0;
    std::vector<unsigned char> raw_;
    unsigned char *data_ = nullptr;
    aclTensor *t_ = nullptr;
};

struct IntArray {
    aclIntArray *a = nullptr;
    explicit IntArray(const std::optional<std::vector<int64_t>> &v) {
        static const int64_t dummy = 0;
        if (v) a = aclCreateIntArray(v->empty() ? &dummy : v->data(), v->size());
    }
    ~IntArray() {
        if (a) aclDestroyIntArray(a);
    }
    IntArray(const IntArray &) = delete;
    IntArray &operator=(const IntArray &) = delete;
};

struct Workspace {
    std::vector<unsigned char> buf;
    void *ptr(uint64_t size) {
        if (size == 0) return nullptr;
        buf.assign(static_cast<size_t>(size) + 64, 0);
        const auto p = reinterpret_cast<uintptr_t>(buf.data());
        return buf.data() + (64 - p % 64) % 64;
    }
};

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
