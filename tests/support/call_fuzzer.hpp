// Argument fuzzing of an operator's two phases: from a valid call (the seed), calls with one to
// three things changed - a tensor NULL or of another dtype, format, shape, rank or layout (permuted,
// padded, offset, broadcast, flush against a guard page), an array NULL, shorter, longer or holding
// 0, -1 or 2^62, a scalar at its type's extremes, a float NaN - and, in every one, what the brief
// promises of bad input:
//   - phase 1 returns 0, 161001 or 161002 (never an internal error, never a crash) and writes no
//     tensor's bytes; on failure a one-line message from aclnn<Op>GetWorkspaceSize and no executor;
//   - phase 2 returns 0 or 361001 (bad index data), leaves every input's bytes as they were and
//     writes nothing outside the outputs' views; a workspace one byte short or NULL fails before
//     any output is touched; a repeatable executor run twice writes the same bytes; a consumed
//     executor run again fails.
// The data are random too (integer tensors in the seed's range, or all bytes 0x00 / 0xFF), so index
// checks meet both good and bad values. Calls go through aclnnCpuPlan / aclnnCpuRun, which every
// generated entry point forwards to; an Int argument stays inside its C type (int8 cubeMathType
// cannot carry 300 through the public function either). Under ASan/UBSan this is where a missing
// overflow or bounds check shows; in Release a guard page or a canary does.
#ifndef ACLNN_CPU_TESTS_SUPPORT_CALL_FUZZER_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_CALL_FUZZER_HPP_

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "aclnn_cpu/plugin_abi.h"
#include "guarded_tensor.hpp"

namespace acltest::fuzz {

enum class Kind { Tensor, IntArray, BoolArray, Int, Bool, Float };

struct Arg {
    std::string name;
    Kind kind = Kind::Tensor;
    bool null = false;  // pass NULL (pointer kinds)
    // Tensor
    aclDataType dt = ACL_FLOAT;
    std::vector<int64_t> dims;
    aclFormat fmt = ACL_FORMAT_ND;
    Layout layout;
    bool output = false;
    int64_t lo = -3, hi = 3;  // integer data: values in [lo, hi]; floating data: in [lo, hi] too
    // IntArray / BoolArray / Int / Bool / Float
    std::vector<int64_t> ints;
    std::vector<bool> bools;
    int64_t i = 0, iMin = 0, iMax = 0;  // Int: value and its C type's range
    double f = 0;
};

// Seed builders: a tensor (integer data in [lo, hi]), an int array, a bool array, an int of a C type.
inline Arg tensor(std::string name, aclDataType dt, std::vector<int64_t> dims, aclFormat fmt, int64_t lo = -3,
                  int64_t hi = 3) {
    Arg a;
    a.name = std::move(name), a.kind = Kind::Tensor, a.dt = dt, a.dims = std::move(dims), a.fmt = fmt, a.lo = lo, a.hi = hi;
    return a;
}
inline Arg output(std::string name, aclDataType dt, std::vector<int64_t> dims, aclFormat fmt) {
    Arg a = tensor(std::move(name), dt, std::move(dims), fmt);
    a.output = true;
    return a;
}
inline Arg intArray(std::string name, std::vector<int64_t> v) {
    Arg a;
    a.name = std::move(name), a.kind = Kind::IntArray, a.ints = std::move(v);
    return a;
}
inline Arg boolArray(std::string name, std::vector<bool> v) {
    Arg a;
    a.name = std::move(name), a.kind = Kind::BoolArray, a.bools = std::move(v);
    return a;
}
template <class CType>
inline Arg integer(std::string name, int64_t v) {
    Arg a;
    a.name = std::move(name), a.kind = Kind::Int, a.i = v;
    a.iMin = std::numeric_limits<CType>::min(), a.iMax = std::numeric_limits<CType>::max();
    return a;
}
inline Arg boolean(std::string name, bool v) {
    Arg a;
    a.name = std::move(name), a.kind = Kind::Bool, a.i = v;
    return a;
}

struct Call {
    std::string op;
    std::vector<Arg> args;
};

inline std::string describe(const Call &c) {
    std::ostringstream o;
    o << "aclnn" << c.op << "(";
    for (size_t k = 0; k < c.args.size(); ++k) {
        const Arg &a = c.args[k];
        o << (k ? ", " : "") << a.name << "=";
        if (a.null) {
            o << "NULL";
            continue;
        }
        switch (a.kind) {
            case Kind::Tensor: {
                o << "dt" << static_cast<int>(a.dt) << dimsStr(a.dims) << "fmt" << static_cast<int>(a.fmt);
                const Layout &l = a.layout;
                if (!l.order.empty()) o << " order" << dimsStr(std::vector<int64_t>(l.order.begin(), l.order.end()));
                if (!l.extra.empty()) o << " extra" << dimsStr(l.extra);
                if (l.offset) o << " offset " << l.offset;
                if (!l.zeroStrideDims.empty())
                    o << " zero-stride" << dimsStr(std::vector<int64_t>(l.zeroStrideDims.begin(), l.zeroStrideDims.end()));
                o << placementName(l.placement);
                break;
            }
            case Kind::IntArray: o << dimsStr(a.ints); break;
            case Kind::BoolArray:
                o << "{";
                for (size_t j = 0; j < a.bools.size(); ++j) o << (j ? "," : "") << (a.bools[j] ? "T" : "F");
                o << "}";
                break;
            case Kind::Int: o << a.i; break;
            case Kind::Bool: o << (a.i ? "true" : "false"); break;
            case Kind::Float: o << a.f; break;
        }
    }
    return o.str() + ")";
}

class Mutator {
public:
    explicit Mutator(uint64_t seed) : rng_(seed) {}
    Rng &rng() { return rng_; }

    // One to three changes of the seed, each to one argument; a quarter of the calls first move
    // every tensor of the first tensor's dtype to another floating dtype together (one tensor's
    // dtype alone is nearly always a mismatch, so the other dtypes' kernels would go untried).
    Call mutate(const Call &seed) {
        Call c = seed;
        if (rng_.integer(0, 3) == 0) {
            const aclDataType from = c.args.front().dt, to = pick(std::vector<aclDataType>{ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_FLOAT});
            for (Arg &a : c.args)
                if (a.kind == Kind::Tensor && a.dt == from) a.dt = to;
        }
        const int n = static_cast<int>(rng_.integer(1, 3));
        for (int k = 0; k < n; ++k) change(c.args[static_cast<size_t>(rng_.integer(0, static_cast<int64_t>(c.args.size()) - 1))]);
        return c;
    }

private:
    template <class T>
    const T &pick(const std::vector<T> &v) { return v[static_cast<size_t>(rng_.integer(0, static_cast<int64_t>(v.size()) - 1))]; }

    int64_t oddValue(int64_t v) {
        static const std::vector<int64_t> odd = {0, -1, 1, 2, 3, int64_t{1} << 31, int64_t{1} << 62,
                                                 std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
        int64_t near = v;
        if (__builtin_add_overflow(v, rng_.integer(-2, 2), &near)) near = v;
        return rng_.integer(0, 2) == 0 ? near : pick(odd);
    }

    void change(Arg &a) {
        const bool pointer = a.kind == Kind::Tensor || a.kind == Kind::IntArray || a.kind == Kind::BoolArray;
        if (pointer && rng_.integer(0, 9) == 0) {
            a.null = !a.null;
            return;
        }
        switch (a.kind) {
            case Kind::Tensor: changeTensor(a); break;
            case Kind::IntArray:
                if (rng_.integer(0, 2) == 0) a.ints.resize(static_cast<size_t>(rng_.integer(0, 5)), 1);
                else if (!a.ints.empty()) {
                    int64_t &v = a.ints[static_cast<size_t>(rng_.integer(0, static_cast<int64_t>(a.ints.size()) - 1))];
                    v = oddValue(v);
                }
                break;
            case Kind::BoolArray:
                if (rng_.integer(0, 2) == 0) a.bools.resize(static_cast<size_t>(rng_.integer(0, 4)), true);
                else if (!a.bools.empty()) {
                    const auto j = static_cast<size_t>(rng_.integer(0, static_cast<int64_t>(a.bools.size()) - 1));
                    a.bools[j] = !a.bools[j];
                }
                break;
            case Kind::Int: {
                const int64_t v = rng_.integer(0, 2) == 0 ? pick(std::vector<int64_t>{a.iMin, a.iMax, -1, 0}) : oddValue(a.i);
                a.i = std::min(std::max(v, a.iMin), a.iMax);
                break;
            }
            case Kind::Bool: a.i = !a.i; break;
            case Kind::Float:
                a.f = pick(std::vector<double>{std::nan(""), INFINITY, -INFINITY, -1.0, 0.0, 1e300});
                break;
        }
    }

    void changeTensor(Arg &a) {
        static const std::vector<aclDataType> dtypes = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16,  ACL_DOUBLE, ACL_INT8,
                                                        ACL_UINT8, ACL_INT16,   ACL_INT32, ACL_INT64,  ACL_BOOL,
                                                        ACL_UINT32, ACL_COMPLEX64, ACL_DT_UNDEFINED};
        static const std::vector<aclFormat> formats = {ACL_FORMAT_ND,      ACL_FORMAT_NCHW,  ACL_FORMAT_NHWC,
                                                       ACL_FORMAT_NCL,     ACL_FORMAT_NCDHW, ACL_FORMAT_HWCN,
                                                       ACL_FORMAT_NC1HWC0, ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_UNDEFINED};
        const auto rank = static_cast<int64_t>(a.dims.size());
        switch (rng_.integer(0, 6)) {
            case 0: a.dt = pick(dtypes); break;
            case 1: a.fmt = pick(formats); break;
            case 2:  // one dim
                if (rank) {
                    int64_t &d = a.dims[static_cast<size_t>(rng_.integer(0, rank - 1))];
                    d = std::max<int64_t>(0, pick(std::vector<int64_t>{0, 1, d - 1, d + 1, 2 * d, 3}));
                }
                break;
            case 3:  // rank: a dim dropped or added
                if (rank && rng_.integer(0, 1)) a.dims.erase(a.dims.begin() + rng_.integer(0, rank - 1));
                else a.dims.insert(a.dims.begin() + rng_.integer(0, rank), rng_.integer(1, 2));
                a.layout = Layout{};
                break;
            case 4:  // empty, with a huge dim beside the 0 (no storage: the sizes' arithmetic is what is tried)
                if (rank >= 2) {
                    const int64_t z = rng_.integer(0, rank - 1);
                    a.dims[static_cast<size_t>(z)] = 0;
                    a.dims[static_cast<size_t>((z + 1) % rank)] = int64_t{1} << rng_.integer(31, 40);
                    a.layout = Layout{};
                }
                break;
            default: {  // layout
                Layout l;
                if (rank && rng_.integer(0, 1)) {
                    l.order.resize(static_cast<size_t>(rank));
                    for (int k = 0; k < rank; ++k) l.order[static_cast<size_t>(k)] = k;
                    for (int k = static_cast<int>(rank) - 1; k > 0; --k)
                        std::swap(l.order[static_cast<size_t>(k)], l.order[static_cast<size_t>(rng_.integer(0, k))]);
                }
                if (rank && rng_.integer(0, 2) == 0) {
                    l.extra.assign(static_cast<size_t>(rank), 0);
                    l.extra[static_cast<size_t>(rng_.integer(0, rank - 1))] = rng_.integer(1, 3);
                }
                if (rng_.integer(0, 2) == 0) l.offset = rng_.integer(1, 5);
                if (rank && rng_.integer(0, 3) == 0) l.zeroStrideDims = {static_cast<int>(rng_.integer(0, rank - 1))};
                l.placement = pick(std::vector<Placement>{Placement::Canaries, Placement::PageStart, Placement::PageEnd});
                a.layout = l;
                break;
            }
        }
    }

    Rng rng_;
};

// What one call did; the test reports the first failure of a run with its call.
struct Outcome {
    aclnnStatus phase1 = -1, phase2 = -1;
    std::string failure;  // empty: every promise kept
};

// Whether a call is too large to run: a tensor needing more than 2^22 elements of storage, or an
// empty one whose strides (over 2^50) would overflow where the test lays it out.
inline bool tooLarge(const Call &c) {
    for (const Arg &a : c.args) {
        if (a.kind != Kind::Tensor || a.null) continue;
        int64_t n = 1;
        bool empty = false;
        for (size_t d = 0; d < a.dims.size(); ++d) {
            if (a.dims[d] == 0) empty = true;
            const int64_t extra = a.layout.extra.empty() ? 0 : a.layout.extra[d];
            const int64_t span = std::max<int64_t>(a.dims[d] + extra, 1), cap = int64_t{1} << 50;
            n = n > cap / span ? cap : n * span;
        }
        if (n >= (int64_t{1} << 50) || (!empty && n + a.layout.offset > (int64_t{1} << 22))) return true;
    }
    return false;
}

// The first tensor (an input, or any with inputsOnly false) whose bytes differ from `before`; "".
inline std::string changedTensor(const Call &c, const std::vector<std::unique_ptr<GuardedTensor>> &tensors,
                                 const std::vector<std::vector<unsigned char>> &before, bool inputsOnly) {
    for (size_t k = 0; k < c.args.size(); ++k) {
        if (!tensors[k] || (inputsOnly && c.args[k].output)) continue;
        if (!tensors[k]->sameBytes(before[k])) return c.args[k].name;
    }
    return "";
}

// What is wrong with a failure's message: empty, several lines, or not naming fn; "" if nothing.
inline std::string messageProblem(const std::string &m, const std::string &fn) {
    if (m.empty()) return "no error message";
    if (m.find('\n') != std::string::npos && m.find('\n') + 1 != m.size()) return "a message of several lines: " + m;
    if (m.find(fn) == std::string::npos) return "the message does not name " + fn + ": " + m;
    return "";
}

// Phase 2 of a planned call, used as a client might: mostly as planned; sometimes with a workspace
// one byte short (flush against a guard page) or NULL, which must fail (161002 / 361001) before
// touching an output; sometimes repeatable and run twice, which must give the same bytes; sometimes
// run again once consumed, which must fail. Returns what broke, or "".
inline std::string runPhase2(const Call &c, aclOpExecutor *exec, uint64_t ws,
                             const std::vector<std::unique_ptr<GuardedTensor>> &tensors,
                             const std::vector<std::vector<unsigned char>> &before, Rng &rng, aclrtStream stream,
                             aclnnStatus *status) {
    auto outputs = [&] {
        std::vector<std::vector<unsigned char>> o;
        for (size_t k = 0; k < c.args.size(); ++k)
            if (tensors[k] && c.args[k].output) o.push_back(tensors[k]->snapshot());
        return o;
    };
    auto fine = [](aclnnStatus st) { return st == ACLNN_SUCCESS || st == ACLNN_ERR_RUNTIME_ERROR; };
    auto failed = [](aclnnStatus st) { return st == ACLNN_ERR_PARAM_INVALID || st == ACLNN_ERR_RUNTIME_ERROR; };
    const std::string fn = "aclnn" + c.op;
    const int mode = static_cast<int>(rng.integer(0, 9));  // 0-5 as planned, 6 short, 7 NULL, 8 twice, 9 again
    Workspace w;
    if ((mode == 6 || mode == 7) && ws > 0) {
        GuardedPages pages(static_cast<size_t>(ws));
        void *shortWs = mode == 6 ? pages.end_flush(static_cast<size_t>(ws - 1)) : nullptr;
        const aclnnStatus st = aclnnCpuRun(c.op.c_str(), shortWs, mode == 6 ? ws - 1 : ws, exec, stream);
        const std::string msg = recentErr();
        if (!failed(st)) return std::string(mode == 6 ? "a workspace one byte short" : "a NULL workspace") + " gave " + std::to_string(st);
        if (std::string m = messageProblem(msg, fn); !m.empty()) return "workspace failure: " + m;
        if (std::string k = changedTensor(c, tensors, before, false); !k.empty()) return "a failed workspace check changed the bytes of " + k;
        *status = st;
        return "";  // (the call consumed the executor, as any phase-2 call does)
    }
    if (mode == 8 && aclSetAclOpExecutorRepeatable(exec) != ACLNN_SUCCESS) return "aclSetAclOpExecutorRepeatable failed";
    *status = aclnnCpuRun(c.op.c_str(), w.ptr(ws), ws, exec, stream);
    aclrtSynchronizeStream(stream);
    const std::string msg = recentErr();
    if (!fine(*status)) return "phase 2 returned " + std::to_string(*status) + ": " + msg;
    if (std::string k = changedTensor(c, tensors, before, true); !k.empty()) return "phase 2 changed the bytes of " + k;
    if (*status != ACLNN_SUCCESS)
        if (std::string m = messageProblem(msg, fn); !m.empty()) return "phase 2: " + m;
    for (size_t k = 0; k < c.args.size(); ++k) {
        std::string where;
        if (tensors[k] && c.args[k].output && !tensors[k]->canaryIntact(&where))
            return "phase 2 wrote outside " + c.args[k].name + "'s view, at " + where;
    }
    if (mode == 8) {
        const auto first = outputs();
        const aclnnStatus again = aclnnCpuRun(c.op.c_str(), w.ptr(ws), ws, exec, stream);
        aclrtSynchronizeStream(stream);
        (void)recentErr();
        aclDestroyAclOpExecutor(exec);
        if (again != *status) return "a repeatable executor's second run returned " + std::to_string(again) + " after " + std::to_string(*status);
        if (again == ACLNN_SUCCESS && outputs() != first) return "a repeatable executor's second run wrote other bytes";
    } else if (mode == 9) {
        const aclnnStatus again = aclnnCpuRun(c.op.c_str(), w.ptr(ws), ws, exec, stream);
        const std::string m = recentErr();
        if (again == ACLNN_SUCCESS) return "a consumed executor ran again";
        if (m.find("consumed") == std::string::npos) return "running a consumed executor did not say so: " + m;
    }
    return "";
}

inline Outcome runCall(const Call &c, Rng &rng, aclrtStream stream) {
    Outcome out;
    std::vector<std::unique_ptr<GuardedTensor>> tensors(c.args.size());
    std::vector<std::unique_ptr<IntArray>> ints(c.args.size());
    std::vector<aclBoolArray *> bools(c.args.size(), nullptr);
    std::vector<aclnnCpuCallArg> packed(c.args.size());
    for (size_t k = 0; k < c.args.size(); ++k) {
        const Arg &a = c.args[k];
        aclnnCpuCallArg &p = packed[k];
        p = aclnnCpuCallArg{};
        switch (a.kind) {
            case Kind::Tensor: {
                p.kind = ACP_ARG_TENSOR;
                if (a.null) break;
                tensors[k] = std::make_unique<GuardedTensor>(a.dt, a.dims, a.fmt, a.layout);
                GuardedTensor &t = *tensors[k];
                // 0: bytes 0x00, 1: bytes 0xFF, 2: values in [lo, hi], else in (lo, hi) - a seed gives its
                // index tensors a range one beyond the valid one at each end, so these are all good
                const int fill = static_cast<int>(rng.integer(0, 5));
                const bool trim = fill >= 3 && a.hi - a.lo >= 2;
                const bool floating = a.dt == ACL_FLOAT || a.dt == ACL_FLOAT16 || a.dt == ACL_BF16 || a.dt == ACL_DOUBLE;
                for (int64_t e = 0; e < t.count(); ++e) {
                    uint64_t bits = fill == 0 ? 0 : ~uint64_t{0};
                    if (fill >= 2) {
                        const int64_t v = rng.integer(a.lo + trim, a.hi - trim);
                        bits = floating ? bitsOf(static_cast<double>(v) * 0.5, a.dt) : static_cast<uint64_t>(v);
                    }
                    std::memcpy(t.element(e), &bits, std::min<size_t>(t.elementBytes(), 8));
                }
                p.ptr = t.get();
                break;
            }
            case Kind::IntArray:
                p.kind = ACP_ARG_INT_ARRAY;
                if (!a.null) ints[k] = std::make_unique<IntArray>(a.ints), p.ptr = ints[k]->a;
                break;
            case Kind::BoolArray: {
                p.kind = ACP_ARG_BOOL_ARRAY;
                if (a.null) break;
                bool raw[8] = {};
                for (size_t j = 0; j < a.bools.size() && j < 8; ++j) raw[j] = a.bools[j];
                bools[k] = aclCreateBoolArray(raw, std::min<size_t>(a.bools.size(), 8));
                p.ptr = bools[k];
                break;
            }
            case Kind::Int: p.kind = ACP_ARG_INT, p.i = a.i; break;
            case Kind::Bool: p.kind = ACP_ARG_BOOL, p.i = a.i; break;
            case Kind::Float: p.kind = ACP_ARG_FLOAT, p.f = a.f; break;
        }
    }
    std::vector<std::vector<unsigned char>> before(c.args.size());
    for (size_t k = 0; k < c.args.size(); ++k)
        if (tensors[k]) before[k] = tensors[k]->snapshot();

    uint64_t ws = ~uint64_t{0};
    aclOpExecutor *exec = nullptr;
    out.phase1 = aclnnCpuPlan(c.op.c_str(), packed.data(), static_cast<uint32_t>(packed.size()), &ws, &exec);
    const std::string msg1 = recentErr();
    const std::string fn1 = "aclnn" + c.op + "GetWorkspaceSize";
    if (out.phase1 != ACLNN_SUCCESS && out.phase1 != ACLNN_ERR_PARAM_NULLPTR && out.phase1 != ACLNN_ERR_PARAM_INVALID)
        out.failure = "phase 1 returned " + std::to_string(out.phase1) + ": " + msg1;
    else if (std::string k = changedTensor(c, tensors, before, false); !k.empty())
        out.failure = "phase 1 changed the bytes of " + k;
    else if (out.phase1 != ACLNN_SUCCESS && exec)
        out.failure = "phase 1 failed but returned an executor";
    else if (out.phase1 != ACLNN_SUCCESS)
        out.failure = messageProblem(msg1, fn1);
    else if (ws > (uint64_t{1} << 32))
        out.failure = "phase 1 asked for a workspace of " + std::to_string(ws) + " bytes";

    if (out.failure.empty() && out.phase1 == ACLNN_SUCCESS && exec) {
        out.failure = runPhase2(c, exec, ws, tensors, before, rng, stream, &out.phase2);
    } else if (out.failure.empty() && out.phase1 == ACLNN_SUCCESS) {
        out.phase2 = ACLNN_SUCCESS;  // no executor: nothing to do (e.g. no output selected)
    } else if (exec) {
        aclDestroyAclOpExecutor(exec);
    }
    for (aclBoolArray *b : bools)
        if (b) aclDestroyBoolArray(b);
    return out;
}

// A crash names the call that made it: the fuzz loop keeps the current call's text here, and a
// SIGSEGV / SIGBUS handler writes it before the signal goes on to whoever handled it before.
struct CrashNote {
    static std::string &text() {
        static std::string t;
        return t;
    }
    static struct sigaction &previous(int sig) {
        static struct sigaction segv{}, bus{};
        return sig == SIGBUS ? bus : segv;
    }
    // The fault is synchronous: with the previous action back in place, returning re-runs the
    // faulting access, which then meets that action (the default's core, or ASan's report).
    static void handler(int sig, siginfo_t *, void *) {
        const std::string &t = text();
        if (::write(2, t.data(), t.size()) < 0) {}
        ::sigaction(sig, &previous(sig), nullptr);
    }
    CrashNote() {
        struct sigaction sa{};
        sa.sa_sigaction = handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGSEGV, &sa, &previous(SIGSEGV));
        ::sigaction(SIGBUS, &sa, &previous(SIGBUS));
    }
    ~CrashNote() {
        ::sigaction(SIGSEGV, &previous(SIGSEGV), nullptr);
        ::sigaction(SIGBUS, &previous(SIGBUS), nullptr);
    }
};

// Runs `calls` mutations of the seed (which must pass both phases); counts what each phase returned,
// and fails on the first broken promise with the call that broke it.
inline void fuzz(const Call &seed, uint64_t rngSeed, int calls, aclrtStream stream) {
    Rng data(rngSeed ^ 0x5eedull);
    const Outcome base = runCall(seed, data, stream);
    ASSERT_EQ(base.phase1, ACLNN_SUCCESS) << "the seed must be a valid call: " << describe(seed) << " " << base.failure;
    ASSERT_TRUE(base.failure.empty()) << describe(seed) << ": " << base.failure;
    Mutator m(rngSeed);
    const CrashNote note;
    int ran = 0, passed1 = 0, passed2 = 0;
    for (int k = 0; ran < calls && k < 20 * calls; ++k) {
        const Call c = m.mutate(seed);
        if (tooLarge(c)) continue;
        ++ran;
        CrashNote::text() = "\nfuzz: crashed in call " + std::to_string(k) + ": " + describe(c) + "\n";
        const Outcome o = runCall(c, data, stream);
        ASSERT_TRUE(o.failure.empty()) << "call " << k << ": " << describe(c) << "\n  " << o.failure;
        passed1 += o.phase1 == ACLNN_SUCCESS;
        passed2 += o.phase2 == ACLNN_SUCCESS;
    }
    EXPECT_EQ(ran, calls);
    // Most mutations are rejected; some must still reach phase 2, or the fuzzing misses the kernels.
    EXPECT_GT(passed1, 0) << "no mutated call of " << seed.op << " passed phase 1";
    std::printf("fuzz %s: %d calls, %d passed phase 1, %d passed phase 2\n", seed.op.c_str(), ran, passed1, passed2);
}

// One operator on one product: the parameter of a plugin's fuzz tests.
struct Target {
    const char *op;
    const char *product;
    const char *variant = "";  // which of the plugin's seeds, when it has several for the op
};
inline void PrintTo(const Target &t, std::ostream *os) {
    *os << t.op << " on " << t.product << (*t.variant ? " (" : "") << t.variant << (*t.variant ? ")" : "");
}
inline std::string targetName(const ::testing::TestParamInfo<Target> &i) {
    return ident(std::string(i.param.op) + "_" + i.param.product + (*i.param.variant ? "_" : "") + i.param.variant);
}

// `calls` mutations of the seed on the target's product; the random sequence follows from the target.
// For a longer search: ACLNN_CPU_FUZZ_CALLS sets the number of calls, ACLNN_CPU_FUZZ_SEED starts
// another sequence (a failure prints its call; the same variables reproduce it).
inline void fuzzOn(const Target &t, const Call &seed, int calls) {
    ASSERT_EQ(seed.op, t.op);
    ASSERT_NO_FATAL_FAILURE(Runtime::use(t.product));
    uint64_t h = 1469598103934665603ull;  // FNV-1a of op and product
    for (const char *s : {t.op, "/", t.product, "/", t.variant})
        for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
    if (const char *e = std::getenv("ACLNN_CPU_FUZZ_CALLS")) calls = std::atoi(e);
    if (const char *e = std::getenv("ACLNN_CPU_FUZZ_SEED")) h ^= std::strtoull(e, nullptr, 0) * 0x9E3779B97F4A7C15ull;
    fuzz(seed, h, calls, Runtime::stream());
}

}  // namespace acltest::fuzz

#endif  // ACLNN_CPU_TESTS_SUPPORT_CALL_FUZZER_HPP_
