// Helpers of the convolution tests: runtime switching (product, threads), tensors over guarded
// storage (a canary around and between view elements), the two-phase calls of ConvolutionBackward
// and Convolution, value <-> bits per dtype, comparisons against conv_reference.hpp.
#ifndef CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_
#define CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "acltest.hpp"
#include "guarded_tensor.hpp"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "conv_reference.hpp"

namespace ct {

using acltest::Runtime;
inline std::string lastError() { return acltest::recentErr(); }

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

using acltest::Rng;

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
    for (auto &x : v) x = valueOf(bitsOf(r.uniform(-1.0, 1.0), dt), dt);
    return v;
}

// What the cube unit sees of an operand value under cubeMathType `cube` on `product` (products.md):
// FLOAT rounded to HF32 (atlas-a2 / atlas-a3 modes 1 and 3) or FLOAT16 (their mode 2; modes 1 and 2
// on the training and inference series); FLOAT16 and BF16 values pass unchanged.
inline std::function<double(double)> cubeRounding(const std::string &product, aclDataType dt, int cube) {
    const bool a2 = product == "atlas-a2" || product == "atlas-a3";
    if (dt == ACL_FLOAT && a2 && (cube == 1 || cube == 3)) return roundHf32;
    if (dt == ACL_FLOAT && (cube == 2 || (!a2 && cube == 1))) return roundFp16;
    return [](double v) { return v; };
}

inline std::vector<double> mapped(std::vector<double> v, const std::function<double(double)> &f) {
    for (auto &x : v) x = f(x);
    return v;
}

inline std::vector<double> absolute(std::vector<double> v) {
    for (auto &x : v) x = std::fabs(x);
    return v;
}

// The bias gradient's exact sums: gradOutput summed per output channel.
inline std::vector<double> biasSums(const cref::Conv &c, const std::vector<double> &go) {
    std::vector<double> b(static_cast<size_t>(c.Cout), 0.0);
    const size_t plane = go.size() / static_cast<size_t>(c.N * c.Cout);
    for (size_t e = 0; e < go.size(); ++e) b[(e / plane) % static_cast<size_t>(c.Cout)] += go[e];
    return b;
}

// ---- tensors over guarded storage ----
using acltest::Layout;
using acltest::Placement;
using acltest::placed;
using acltest::placementName;

inline aclFormat formatFor(size_t rank) {
    return rank == 3 ? ACL_FORMAT_NCL : rank == 4 ? ACL_FORMAT_NCHW : rank == 5 ? ACL_FORMAT_NCDHW : ACL_FORMAT_ND;
}

// A guarded tensor (tests/support) in the format its rank names, elements read and written as values.
class Tensor : public acltest::GuardedTensor {
public:
    Tensor(aclDataType dt, std::vector<int64_t> dims, const Layout &l = {}, std::optional<aclFormat> fmt = {})
        : GuardedTensor(dt, dims, fmt ? *fmt : formatFor(dims.size()), l) {}

    int64_t at(int64_t linear) const { return storageIndex(linear); }
    void setValues(const std::vector<double> &v) {
        for (int64_t i = 0; i < count(); ++i) {
            const uint32_t b = bitsOf(v[static_cast<size_t>(i)], dtype());
            std::memcpy(element(i), &b, elementBytes());
        }
    }
    std::vector<uint32_t> bits() const {
        std::vector<uint32_t> b(static_cast<size_t>(count()), 0);
        for (int64_t i = 0; i < count(); ++i) std::memcpy(&b[static_cast<size_t>(i)], element(i), elementBytes());
        return b;
    }
    std::vector<double> values() const {
        std::vector<double> v;
        for (uint32_t b : bits()) v.push_back(valueOf(b, dtype()));
        return v;
    }
    void rebind(void *p) { aclSetRawTensorAddr(get(), p); }
};

using acltest::IntArray;
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

using acltest::Workspace;

// ---- one ConvolutionBackward call ----
struct Call {
    cref::Conv c;
    aclDataType dt = ACL_FLOAT;
    std::vector<bool> mask{true, true, true};
    int8_t cube = 0;
    std::optional<std::vector<int64_t>> padding;  // default: c.pl per spatial dim (symmetric)
    std::optional<std::vector<int64_t>> biasSizes;
    std::optional<std::vector<int64_t>> outputPadding;  // default: c.op per spatial dim
    Layout go, in, w, gi, gw, gb;  // views
    bool nullUnselected = true;    // pass NULL for outputs whose mask bit is false
    int wsFill = 0;                // byte the workspace holds before phase 2 (0xff: FLOAT NaNs, unwritten reads show)
    aclrtStream stream = nullptr;  // nullptr: Runtime::stream()
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
        op(k.outputPadding ? *k.outputPadding : c.spatial(c.op)), bias(k.biasSizes ? k.biasSizes : std::optional<std::vector<int64_t>>(std::vector<int64_t>{c.Cout}));
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
    void *wsp = ws.ptr(r.workspace);
    if (wsp) std::memset(wsp, k.wsFill, static_cast<size_t>(r.workspace));
    aclrtStream stream = k.stream ? k.stream : Runtime::stream();
    r.phase2 = aclnnConvolutionBackward(wsp, r.workspace, exec, stream);
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(stream);
    r.gi = gi.bits();
    r.gw = gw.bits();
    r.gb = gb.bits();
    r.canary = gi.canaryIntact() && gw.canaryIntact() && gb.canaryIntact();
    r.inputsUnchanged = tgo.snapshot() == s1 && tin.snapshot() == s2 && tw.snapshot() == s3;
    r.unselectedUntouched = (k.mask[0] || gi.snapshot() == u0) && (k.mask[1] || gw.snapshot() == u1) &&
                            (k.mask[2] || gb.snapshot() == u2);
    return r;
}

// One Convolution (forward) call with bias (an empty b: a NULL bias), every tensor placed as l; the
// output bits.
struct ForwardResult {
    aclnnStatus phase1 = -1, phase2 = -1;
    std::string message;
    std::vector<uint32_t> out;
    bool canary = false;
};
inline ForwardResult runForward(const cref::Conv &c, const std::optional<std::vector<int64_t>> &padding, aclDataType dt,
                                const std::vector<double> &in, const std::vector<double> &w, const std::vector<double> &b,
                                const Layout &l = {}, int8_t cube = 0) {
    ForwardResult r;
    Tensor tin(dt, c.inputDims(), l), tw(dt, c.weightDims(), l), tb(dt, {c.Cout}, l, ACL_FORMAT_ND), out(dt, c.gradOutputDims(), l);
    tin.setValues(in);
    tw.setValues(w);
    if (!b.empty()) tb.setValues(b);
    IntArray stride(c.spatial(c.s)), pad(padding ? *padding : c.spatial(c.pl)), dil(c.spatial(c.d)), op(c.spatial(c.op));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    r.phase1 = aclnnConvolutionGetWorkspaceSize(tin.get(), tw.get(), b.empty() ? nullptr : tb.get(), stride.a, pad.a, dil.a, c.transposed, op.a, c.G,
                                                out.get(), cube, &ws, &exec);
    if (r.phase1 != ACLNN_SUCCESS) {
        r.message = lastError();
        return r;
    }
    Workspace w2;
    r.phase2 = aclnnConvolution(w2.ptr(ws), ws, exec, Runtime::stream());
    if (r.phase2 != ACLNN_SUCCESS) r.message = lastError();
    aclrtSynchronizeStream(Runtime::stream());
    r.out = out.bits();
    r.canary = out.canaryIntact();
    return r;
}

// The executor graph the plugin planned for one call, read from its debug log ("node <id> <name>
// after <ids>|none", one line per node the plugin adds; the core's convert nodes are not listed),
// and how its oneDNN passes split ("gradInput: oneDNN <impl>[, by <n> channel blocks]").
struct PlannedGraph {
    std::map<int, std::pair<std::string, std::vector<int>>> nodes;  // id -> name, dependencies
    std::map<std::string, int64_t> channel_blocks;                  // pass -> blocks, 0: by images
    std::map<std::string, std::string> impl;                        // pass -> oneDNN's implementation name
    std::map<std::string, bool> reused;                             // pass -> built by an earlier plan (pass_cache.hpp)
    Result result;                                                  // the call's
    std::map<int, unsigned> priority;                               // id -> set_node_priority's hint (0 when unset)
    unsigned priority_of(int id) const {
        const auto it = priority.find(id);
        return it == priority.end() ? 0u : it->second;
    }
    int find(const std::string &name) const {
        int found = -1;
        for (const auto &[id, n] : nodes)
            if (n.first == name) found = found < 0 ? id : -2;  // -2: more than one
        return found;
    }
    // whether node `from` waits for node `to`, directly or through others
    bool reaches(int from, int to) const {
        if (from == to) return true;
        const auto it = nodes.find(from);
        if (it == nodes.end()) return false;
        for (int d : it->second.second)
            if (reaches(d, to)) return true;
        return false;
    }
};

// Whether this CPU has AMX tiles for BF16, where the plugin takes its AMX routes (its README).
inline bool cpuHasAmxBf16() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("amx-bf16") != 0;
}

// Runs f with the library's debug log on and captured (stderr); returns the log.
template <class F>
std::string withDebugLog(F &&f) {
    const char *old = std::getenv("ASCEND_GLOBAL_LOG_LEVEL");
    const std::string saved = old ? old : "";
    setenv("ASCEND_GLOBAL_LOG_LEVEL", "0", 1);
    ::testing::internal::CaptureStderr();
    f();
    const std::string log = ::testing::internal::GetCapturedStderr();
    if (old) setenv("ASCEND_GLOBAL_LOG_LEVEL", saved.c_str(), 1);
    else unsetenv("ASCEND_GLOBAL_LOG_LEVEL");
    return log;
}

inline PlannedGraph planGraph(const Call &k, const std::vector<double> &go, const std::vector<double> &in,
                              const std::vector<double> &w) {
    Result r;
    const std::string log = withDebugLog([&] { r = runBackward(k, go, in, w); });
    EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    PlannedGraph g;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
        for (const char *pass : {"gradInput", "gradWeight"}) {
            const size_t p = line.find(std::string(": ") + pass + ": oneDNN ");
            if (p == std::string::npos) continue;
            const size_t by = line.find(", by ", p), re = line.find(", reused", p);
            g.channel_blocks[pass] = by == std::string::npos ? 0 : std::stoll(line.substr(by + 5));
            g.reused[pass] = re != std::string::npos;
            const size_t name = p + std::string(": ").size() + std::string(pass).size() + std::string(": oneDNN ").size();
            const size_t end = std::min(by, re);
            g.impl[pass] = line.substr(name, end == std::string::npos ? std::string::npos : end - name);
        }
        const size_t at = line.find(": node ");
        if (at == std::string::npos) continue;
        std::istringstream f(line.substr(at + 7));
        int id = -1;
        std::string name, after, dep;
        f >> id >> name >> after;
        if (name == "priority") {  // "node 3 priority 1"
            g.priority[id] = static_cast<unsigned>(std::stoul(after));
            continue;
        }
        if (after != "after") continue;
        std::vector<int> deps;
        while (f >> dep)
            if (dep != "none") deps.push_back(std::stoi(dep));
        g.nodes[id] = {name, deps};
    }
    g.result = std::move(r);
    return g;
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

// One unit in the last place of dt at v.
inline double ulpOf(double v, aclDataType dt) {
    const uint32_t b = bitsOf(v, dt);
    return std::fabs(valueOf(b + 1, dt) - valueOf(b, dt));
}

// Random-data comparison (the ATK replays): |got - ref| <= one ulp of dt at ref + 8 FLOAT ulps of the sum of |terms| (FLOAT accumulation).
inline ::testing::AssertionResult nearReference(aclDataType dt, const std::vector<uint32_t> &got, const std::vector<double> &ref,
                                const std::vector<double> &magnitude, const char *what) {
    if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << " size " << got.size() << " vs " << ref.size();
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double have = valueOf(got[i], dt);
        const double tol = (dt == ACL_FLOAT ? 0.0 : ulpOf(ref[i], dt)) + 8 * std::ldexp(magnitude[i], -24);
        if (std::fabs(have - ref[i]) <= tol) continue;
        if (bad++ < 5) msg << "\n  [" << i << "] got " << have << " want " << ref[i] << " (tolerance " << tol << ")";
    }
    if (bad) return ::testing::AssertionFailure() << what << ": " << bad << " of " << ref.size() << " outside tolerance" << msg.str();
    return ::testing::AssertionSuccess();
}

// Every tensor of a 4-D call as a non-contiguous view: permuted strides, padded rows and element
// offsets (the core's convert and store nodes around the kernels).
inline void useStridedViews(Call &k) {
    k.go = {{0, 2, 3, 1}, {}, 0};
    k.in = {{}, {0, 1, 2, 3}, 5};
    k.w = {{1, 0, 2, 3}, {}, 3};
    k.gi = {{0, 3, 1, 2}, {1, 0, 0, 2}, 7};
    k.gw = {{}, {0, 0, 1, 1}, 0};
    k.gb = {{}, {0}, 9};
}

// Every outputMask, with unselected outputs passed as NULL and as tensors: each selected gradient has
// the reference bits, unselected ones are never written, nothing is written outside. `base` gives
// the problem and dtype; its mask and nullUnselected are overwritten.
inline void expectEveryMask(Call base, const std::vector<double> &go, const std::vector<double> &in, const std::vector<double> &w,
                            const cref::Grads &ref) {
    for (int m = 0; m < 8; ++m)
        for (bool nullUnselected : {true, false}) {
            Call k = base;
            k.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
            k.nullUnselected = nullUnselected;
            const Result r = runBackward(k, go, in, w);
            const std::string at = std::string(dtName(k.dt)) + " mask " + std::to_string(m) + (nullUnselected ? " (NULL)" : "");
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << at << " " << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << at << " " << r.message;
            if (k.mask[0]) {
                EXPECT_TRUE(sameBits(k.dt, r.gi, ref.gradInput, "gradInput")) << at;
            }
            if (k.mask[1]) {
                EXPECT_TRUE(sameBits(k.dt, r.gw, ref.gradWeight, "gradWeight")) << at;
            }
            if (k.mask[2]) {
                EXPECT_TRUE(sameBits(k.dt, r.gb, ref.gradBias, "gradBias")) << at;
            }
            EXPECT_TRUE(r.unselectedUntouched) << at;
            EXPECT_TRUE(r.canary) << at;
            if (m == 0) {
                EXPECT_EQ(r.workspace, 0u) << at;
            }
        }
}

}  // namespace ct

#endif  // CONVOLUTION_TESTS_CONV_TEST_UTIL_HPP_
