// Helpers of the convolution tests: runtime switching (product, threads), tensors over guarded
// storage (a canary around and between view elements), the two-phase calls of ConvolutionBackward
// and Convolution, value <-> bits per dtype, comparisons against conv_reference.hpp.
#ifndef CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_
#define CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
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
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "conv_reference.hpp"

namespace ct {

class Runtime {
public:
    static void use(const std::string &product, int threads = 2) {
        State &s = state();
        if (s.on && s.product == product && s.threads == threads) return;
        shutdown();
        const auto dir = std::filesystem::temp_directory_path() / ("conv_tests_" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const auto file = dir / (product + "_t" + std::to_string(threads) + ".yaml");
        std::ofstream(file) << "product: " << product << "\nthreads: " << threads << "\n";
        ASSERT_EQ(aclInit(file.string().c_str()), ACL_SUCCESS) << product;
        s = {true, product, threads, nullptr};
        ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&s.stream), ACL_SUCCESS);
    }
    static void shutdown() {
        State &s = state();
        if (!s.on) return;
        if (s.stream) aclrtDestroyStream(s.stream);
        aclrtResetDevice(0);
        EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
        s = State{};
    }
    static aclrtStream stream() { return state().stream; }

private:
    struct State {
        bool on = false;
        std::string product;
        int threads = -1;
        aclrtStream stream = nullptr;
    };
    static State &state() {
        static State s;
        return s;
    }
};
struct RuntimeEnv : ::testing::Environment {
    void TearDown() override {
        Runtime::shutdown();
        std::error_code ec;
        std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("conv_tests_" + std::to_string(::getpid())), ec);
    }
};
inline ::testing::Environment *const kEnv = ::testing::AddGlobalTestEnvironment(new RuntimeEnv);

inline std::string lastError() {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

inline const char *dtName(aclDataType dt) {
    return dt == ACL_FLOAT ? "FLOAT" : dt == ACL_FLOAT16 ? "FLOAT16" : dt == ACL_BF16 ? "BF16" : "OTHER";
}
inline size_t elemSize(aclDataType dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16 ? 2 : dt == ACL_DOUBLE ? 8 : 4; }

// Rounding of an exact (double) value to dt, written independently of the plugin: the compiler's
// conversions for FLOAT and FLOAT16, a bit-level RNE for BF16.
inline uint32_t bitsOf(double v, aclDataType dt) {
    const float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (dt == ACL_FLOAT) return u;
    if (dt == ACL_FLOAT16) {
        const _Float16 h = static_cast<_Float16>(v);
        uint16_t b;
        std::memcpy(&b, &h, 2);
        return b;
    }
    if (std::isnan(f)) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
inline double valueOf(uint32_t b, aclDataType dt) {
    if (dt == ACL_FLOAT) {
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    }
    if (dt == ACL_BF16) return valueOf(b << 16, ACL_FLOAT);
    _Float16 h;
    const auto s = static_cast<uint16_t>(b);
    std::memcpy(&h, &s, 2);
    return static_cast<double>(h);
}
// What the cube unit sees (products.md): HF32 keeps 11 mantissa bits (RNE), FLOAT16 is IEEE half.
inline double roundHf32(double v) {
    const float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    const uint32_t low = u & 0xfffu, keep = u & ~0xfffu;
    uint32_t r = keep;
    if (low > 0x800u || (low == 0x800u && (keep & 0x1000u))) r += 0x1000u;
    float o;
    std::memcpy(&o, &r, 4);
    return o;
}
inline double roundFp16(double v) { return static_cast<double>(static_cast<_Float16>(static_cast<float>(v))); }

class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 7) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    int64_t integer(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }

private:
    uint64_t s_;
};

// Small integers in [-m, m], a share `zero` (in %) of them 0 (testing.md: exact by construction).
inline std::vector<double> ints(int64_t n, int64_t m, uint64_t seed, int zero = 0) {
    Rng r(seed);
    std::vector<double> v(static_cast<size_t>(n));
    for (auto &x : v) x = r.integer(0, 99) < zero ? 0.0 : static_cast<double>(r.integer(-m, m));
    return v;
}
// Uniform [-1, 1) rounded to dt.
inline std::vector<double> uniform(int64_t n, uint64_t seed, aclDataType dt) {
    Rng r(seed);
    std::vector<double> v(static_cast<size_t>(n));
    for (auto &x : v) x = valueOf(bitsOf(r.uniform(), dt), dt);
    return v;
}

// ---- tensors over guarded storage ----
struct Layout {
    std::vector<int> order;      // dims outermost to innermost in memory (empty = row-major)
    std::vector<int64_t> extra;  // padding per dim
    int64_t offset = 0;
    bool plain() const { return order.empty() && extra.empty() && offset == 0; }
};

inline aclFormat formatFor(size_t rank) {
    return rank == 3 ? ACL_FORMAT_NCL : rank == 4 ? ACL_FORMAT_NCHW : rank == 5 ? ACL_FORMAT_NCDHW : ACL_FORMAT_ND;
}

class Tensor {
public:
    static constexpr size_t kGuard = 256;
    static constexpr uint8_t kCanary = 0xA5;

    Tensor(aclDataType dt, std::vector<int64_t> dims, const Layout &l = {}, std::optional<aclFormat> fmt = {})
        : dt_(dt), dims_(std::move(dims)), es_(elemSize(dt)) {
        const size_t r = dims_.size();
        strides_.assign(r, 0);
        std::vector<int> order = l.order;
        if (order.empty()) {
            order.resize(r);
            std::iota(order.begin(), order.end(), 0);
        }
        int64_t step = 1;
        for (size_t k = r; k-- > 0;) {
            strides_[static_cast<size_t>(order[k])] = step;
            step *= std::max<int64_t>(dims_[static_cast<size_t>(order[k])] + (l.extra.empty() ? 0 : l.extra[static_cast<size_t>(order[k])]), 1);
        }
        offset_ = l.offset;
        int64_t last = offset_;
        bool empty = false;
        for (size_t d = 0; d < r; ++d) {
            if (dims_[d] == 0) empty = true;
            else last += (dims_[d] - 1) * strides_[d];
        }
        const int64_t elems = empty ? 0 : last + 1;
        std::vector<int64_t> storage = l.plain() ? dims_ : std::vector<int64_t>{elems};
        raw_.assign(2 * kGuard + static_cast<size_t>(elems) * es_ + 64, kCanary);
        const auto base = reinterpret_cast<uintptr_t>(raw_.data()) + kGuard;
        data_ = raw_.data() + kGuard + (64 - base % 64) % 64;
        t_ = aclCreateTensor(dims_.data(), r, dt_, strides_.data(), offset_, fmt ? *fmt : formatFor(r), storage.data(),
                             storage.size(), data_);
    }
    ~Tensor() {
        if (t_) aclDestroyTensor(t_);
    }
    Tensor(const Tensor &) = delete;
    Tensor &operator=(const Tensor &) = delete;

    aclTensor *get() const { return t_; }
    void *data() const { return data_; }
    int64_t count() const { return cref::Conv::count(dims_); }
    int64_t at(int64_t linear) const {
        int64_t idx = offset_;
        for (size_t d = dims_.size(); d-- > 0;) {
            idx += (linear % dims_[d]) * strides_[d];
            linear /= dims_[d];
        }
        return idx;
    }
    void setValues(const std::vector<double> &v) {
        for (int64_t i = 0; i < count(); ++i) {
            const uint32_t b = bitsOf(v[static_cast<size_t>(i)], dt_);
            std::memcpy(data_ + at(i) * static_cast<int64_t>(es_), &b, es_);
        }
    }
    std::vector<uint32_t> bits() const {
        std::vector<uint32_t> b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], data_ + at(i) * static_cast<int64_t>(es_), es_);
        return b;
    }
    std::vector<double> values() const {
        std::vector<double> v;
        for (uint32_t b : bits()) v.push_back(valueOf(b, dt_));
        return v;
    }
    bool canaryIntact() const {
        std::vector<char> in(raw_.size(), 0);
        const int64_t base = data_ - raw_.data();
        for (int64_t i = 0; i < count(); ++i)
            for (size_t k = 0; k < es_; ++k) in[static_cast<size_t>(base + at(i) * static_cast<int64_t>(es_)) + k] = 1;
        for (size_t k = 0; k < raw_.size(); ++k)
            if (!in[k] && raw_[k] != kCanary) return false;
        return true;
    }
    std::vector<uint8_t> snapshot() const { return raw_; }
    void rebind(void *p) { aclSetRawTensorAddr(t_, p); }

private:
    aclDataType dt_;
    std::vector<int64_t> dims_;
    size_t es_;
    std::vector<int64_t> strides_;
    int64_t offset_ = 0;
    std::vector<uint8_t> raw_;
    uint8_t *data_ = nullptr;
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
struct BoolArray {
    aclBoolArray *a = nullptr;
    explicit BoolArray(const std::optional<std::vector<bool>> &v) {
        if (!v) return;
        bool b[8] = {};
        for (size_t i = 0; i < v->size() && i < 8; ++i) b[i] = (*v)[i];
        a = aclCreateBoolArray(b, v->size());
    }
    ~BoolArray() {
        if (a) aclDestroyBoolArray(a);
    }
    BoolArray(const BoolArray &) = delete;
    BoolArray &operator=(const BoolArray &) = delete;
};

struct Workspace {
    std::vector<uint8_t> buf;
    void *ptr(uint64_t n) {
        if (n == 0) return nullptr;
        buf.assign(static_cast<size_t>(n) + 64, 0);
        const auto p = reinterpret_cast<uintptr_t>(buf.data());
        return buf.data() + (64 - p % 64) % 64;
    }
};

// ---- one ConvolutionBackward call ----
struct Call {
    cref::Conv c;
    aclDataType dt = ACL_FLOAT;
    std::vector<bool> mask{true, true, true};
    int8_t cube = 0;
    std::optional<std::vector<int64_t>> padding;  // default: c.pl per spatial dim (symmetric)
    std::optional<std::vector<int64_t>> biasSizes;
    Layout go, in, w, gi, gw, gb;  // views
    bool nullUnselected = true;    // pass NULL for outputs whose mask bit is false
};

inline std::vector<int64_t> spatialOf(const cref::Conv &c, const std::array<int64_t, 3> &a) { return c.spatial(a); }

struct Result {
    aclnnStatus phase1 = -1, phase2 = -1;
    uint64_t workspace = 0;
    std::string message;
    std::vector<uint32_t> gi, gw, gb;
    bool canary = true, inputsUnchanged = true, unselectedUntouched = true;
};

inline Result runBackward(const Call &k, const std::vector<double> &go, const std::vector<double> &in,
                          const std::vector<double> &w) {
    Result r;
    const cref::Conv &c = k.c;
    Tensor tgo(k.dt, c.gradOutputDims(), k.go), tin(k.dt, c.inputDims(), k.in), tw(k.dt, c.weightDims(), k.w);
    Tensor gi(k.dt, c.inputDims(), k.gi), gw(k.dt, c.weightDims(), k.gw), gb(k.dt, {c.Cout}, k.gb, ACL_FORMAT_ND);
    tgo.setValues(go);
    tin.setValues(in);
    tw.setValues(w);
    const auto s1 = tgo.snapshot(), s2 = tin.snapshot(), s3 = tw.snapshot();
    const auto u0 = gi.snapshot(), u1 = gw.snapshot(), u2 = gb.snapshot();
    IntArray stride(c.spatial(c.s)), pad(k.padding ? *k.padding : c.spatial(c.pl)), dil(c.spatial(c.d)),
        op(c.spatial(c.op)), bias(k.biasSizes ? k.biasSizes : std::optional<std::vector<int64_t>>(std::vector<int64_t>{c.Cout}));
    BoolArray mask(k.mask);
    aclTensor *outs[3] = {gi.get(), gw.get(), gb.get()};
    for (int i = 0; i < 3; ++i)
        if (k.nullUnselected && !k.mask[static_cast<size_t>(i)]) outs[i] = nullptr;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnConvolutionBackwardGetWorkspaceSize(tgo.get(), tin.get(), tw.get(), bias.a, stride.a, pad.a, dil.a,
                                                        c.transposed, op.a, static_cast<int>(c.G), mask.a, k.cube, outs[0],
                                                        outs[1], outs[2], &r.workspace, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace ws;
    r.phase2 = aclnnConvolutionBackward(ws.ptr(r.workspace), r.workspace, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.gi = gi.bits();
    r.gw = gw.bits();
    r.gb = gb.bits();
    r.canary = gi.canaryIntact() && gw.canaryIntact() && gb.canaryIntact();
    r.inputsUnchanged = tgo.snapshot() == s1 && tin.snapshot() == s2 && tw.snapshot() == s3;
    r.unselectedUntouched = (k.mask[0] || gi.snapshot() == u0) && (k.mask[1] || gw.snapshot() == u1) &&
                            (k.mask[2] || gb.snapshot() == u2);
    return r;
}

// Bits against reference values rounded to dt.
inline ::testing::AssertionResult sameBits(aclDataType dt, const std::vector<uint32_t> &got, const std::vector<double> &ref,
                                           const char *what) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << " size " << got.size() << " vs " << ref.size();
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        if (got[i] == bitsOf(ref[i], dt)) continue;
        if (bad++ < 5)
            msg << "\n  [" << i << "] got " << valueOf(got[i], dt) << " (0x" << std::hex << got[i] << ") want " << std::dec
                << ref[i] << " (0x" << std::hex << bitsOf(ref[i], dt) << std::dec << ")";
    }
    if (bad) return ::testing::AssertionFailure() << what << ": " << bad << " of " << ref.size() << " differ" << msg.str();
    return ::testing::AssertionSuccess();
}

// |got - ref| <= atol + rtol*|ref| elementwise (ref rounded to dt first), and relative L2 <= l2.
inline ::testing::AssertionResult close(aclDataType dt, const std::vector<uint32_t> &got, const std::vector<double> &ref,
                                        double atol, double rtol, double l2, const char *what) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << " size " << got.size() << " vs " << ref.size();
    size_t bad = 0;
    double num = 0, den = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double want = valueOf(bitsOf(ref[i], dt), dt), have = valueOf(got[i], dt);
        num += (have - want) * (have - want);
        den += want * want;
        if (std::fabs(have - want) <= atol + rtol * std::fabs(want)) continue;
        if (bad++ < 5) msg << "\n  [" << i << "] got " << have << " want " << want << " (exact " << ref[i] << ")";
    }
    if (bad) return ::testing::AssertionFailure() << what << ": " << bad << " of " << ref.size() << " outside tolerance" << msg.str();
    if (den > 0 && std::sqrt(num / den) > l2)
        return ::testing::AssertionFailure() << what << ": relative L2 " << std::sqrt(num / den) << " > " << l2;
    return ::testing::AssertionSuccess();
}

}  // namespace ct

#endif  // CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_
