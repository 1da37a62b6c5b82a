// aclnn-cpu-bench: what an operator's benchmark file sees.
//
// Each operator adds one file under bench/ops/ that registers its cases with BENCH_OP; nothing else
// changes (the CMake glob picks the file up, the driver finds the cases through the registry).
//
//   BENCH_OP(MyOpBackward) {
//       bench::Case c;
//       c.op = "MyOpBackward"; c.shape = "mb8ic64ih56"; c.dtype = ACL_FLOAT;
//       c.work = bench::Work::bytes(...);           // or bench::Work::flops(...)
//       c.prepare = [=](bench::Prepared &p) {        // allocate + warm + phase 1, never timed
//           aclTensor *x = p.tensor({8, 64, 56, 56}, ACL_FLOAT);
//           ...
//           BENCH_PLAN(p, aclnnMyOpBackward, x, ..., out);   // GetWorkspaceSize + repeatable
//       };
//       c.torch = "x = randn([8, 64, 56, 56])\nfn = lambda: ...";   // optional PyTorch peer
//       cases.push_back(std::move(c));
//   }
#ifndef ACLNN_CPU_BENCH_BENCH_HPP_
#define ACLNN_CPU_BENCH_BENCH_HPP_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace bench {

// What a case moves or computes, so the driver can report GB/s against the measured copy bandwidth
// or GFLOP/s against the measured FMA peak.
enum class Metric { Bytes, Flops };

struct Work {
    Metric metric = Metric::Bytes;
    double amount = 0;  // bytes (inputs read + outputs written, in their dtype) or floating-point ops
    double read = -1;   // of amount, the bytes read (-1: not given; the traffic limit needs it)

    static Work bytes(double b) { return Work{Metric::Bytes, b, -1}; }
    // Bytes read and written apart: the row also gets its traffic limit (result.hpp).
    static Work bytes(double readBytes, double writtenBytes) { return Work{Metric::Bytes, readBytes + writtenBytes, readBytes}; }
    static Work flops(double f) { return Work{Metric::Flops, f, -1}; }
};

// A failed acl/aclnn call. The case is reported as FAIL and the run exits non-zero.
class CallError : public std::runtime_error {
public:
    CallError(const std::string &call, int64_t status, const std::string &detail);
    int64_t status() const { return status_; }

private:
    int64_t status_;
};

enum class Fill { Random, Zero };

using Phase2Fn = aclnnStatus (*)(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                 aclrtStream stream);
// Phase 1 again with the same arguments (BENCH_PLAN makes it): a whole-call case's timed runs.
using Phase1Fn = std::function<aclnnStatus(uint64_t *workspaceSize, aclOpExecutor **executor)>;

// Everything one case owns: buffers (aclrtMalloc'ed and first-touched), tensors, attribute arrays,
// the repeatable executor and its workspace. Released in reverse order of creation.
class Prepared {
public:
    // whole_calls: run() is phase 1, phase 2 and synchronization (Case::whole_call).
    explicit Prepared(aclrtStream stream, bool whole_calls = false);
    ~Prepared();
    Prepared(const Prepared &) = delete;
    Prepared &operator=(const Prepared &) = delete;

    // A device (= host) buffer, written once so that its pages exist before timing.
    void *alloc(size_t bytes, Fill fill = Fill::Zero, aclDataType dtype = ACL_FLOAT);
    // A contiguous tensor on a fresh buffer; Random = uniform in [-1, 1) rounded to the dtype.
    aclTensor *tensor(const std::vector<int64_t> &shape, aclDataType dtype, Fill fill = Fill::Random,
                      aclFormat format = ACL_FORMAT_NCHW);
    aclIntArray *ints(const std::vector<int64_t> &values);

    // Phase 1 result: throws CallError on a failed status, makes the executor repeatable,
    // allocates and warms the workspace. Use BENCH_PLAN rather than calling this directly.
    void plan(const char *op, aclnnStatus status, aclOpExecutor *executor, uint64_t workspaceSize,
              Phase2Fn phase2, Phase1Fn phase1 = {});

    // One phase-2 call plus stream synchronisation (preceded by phase 1 for whole calls); throws
    // CallError on failure.
    void run();

    uint64_t workspace_bytes() const { return workspaceSize_; }
    void *workspace() const { return workspace_; }  // (the phase-1 size, zeroed; tests refill it)
    bool planned() const { return executor_ != nullptr || phase1_; }
    aclrtStream stream() const { return stream_; }

private:
    aclrtStream stream_;
    std::vector<void *> buffers_;
    std::vector<aclTensor *> tensors_;
    std::vector<aclIntArray *> intArrays_;
    bool wholeCalls_ = false;
    aclOpExecutor *executor_ = nullptr;  // the repeatable executor (none for whole calls)
    Phase1Fn phase1_;                    // whole calls only
    Phase2Fn phase2_ = nullptr;
    std::string op_;
    void *workspace_ = nullptr;
    uint64_t workspaceSize_ = 0;
};

// Phase 1 of aclnn<OP>: calls OP##GetWorkspaceSize(args..., &size, &executor) and hands the result,
// together with OP as the phase-2 function and the same phase 1 again (its arguments copied: for a
// whole-call case they must stay valid until the case is freed), to Prepared::plan.
#define BENCH_PLAN(prepared, OP, ...)                                                                       \
    do {                                                                                                    \
        uint64_t bench_ws_ = 0;                                                                             \
        aclOpExecutor *bench_exec_ = nullptr;                                                               \
        aclnnStatus bench_st_ = OP##GetWorkspaceSize(__VA_ARGS__, &bench_ws_, &bench_exec_);                \
        (prepared).plan(#OP, bench_st_, bench_exec_, bench_ws_, &OP,                                        \
                        [=](uint64_t *bench_ws2_, aclOpExecutor **bench_exec2_) {                           \
                            return OP##GetWorkspaceSize(__VA_ARGS__, bench_ws2_, bench_exec2_);             \
                        });                                                                                 \
    } while (0)

// The targets a case is held to (performance.md's table; the issues' Deliver lists), declared where
// the case is and judged after every run (bars.hpp). A part left unset is no bar.
struct Bars {
    double pct_of_limit = NAN;  // rate >= this percentage of the copy bandwidth or FMA peak (%limit)
    double speedup = NAN;       // PyTorch's median over ours >= this (the speedup column)
    std::string time_of;        // with time_ratio: our min time <= time_ratio x the min time of the
    double time_ratio = NAN;    // case with this id (e.g. FLOAT16 within 1.5x of the FLOAT time)
};

struct Case {
    std::string op;                  // operator name without the aclnn prefix, e.g. "AvgPool2dBackward"
    std::string shape;               // problem descriptor, benchdnn style, e.g. "mb32ic64ih112oh56kh3sh2ph1"
    aclDataType dtype = ACL_FLOAT;   // the case's main dtype (shown in the table, passed to the peer)
    std::string product = "atlas-a2";  // product profile the case runs under (aclInit config)
    std::string variant;             // optional extra tag, e.g. "cube1"
    // Each timed run is a whole call - phase 1, phase 2 on a single-use executor, synchronization -
    // as in a program that plans at every step: what a call costs beyond its kernels. Tag "call".
    bool whole_call = false;
    bool quick = false;              // part of the --quick smoke set (keep these tiny)
    Work work;
    std::function<void(Prepared &)> prepare;  // allocate, warm, BENCH_PLAN; never timed
    // PyTorch peer: Python statements that define `fn`, a no-argument callable doing the same work on
    // preallocated tensors. Available names: torch, dtype (the case's torch dtype), randn(shape),
    // zeros(shape). Empty = no peer for this case.
    std::string torch;
    Bars bars;

    std::string id() const;  // op/shape[/variant]/dtype/product, unique
};

using CaseList = std::vector<Case>;
using RegisterFn = void (*)(CaseList &);

bool register_op(const char *name, RegisterFn fn);
// Cases of every registered operator, operators in name order, each operator's cases in its order.
CaseList all_cases();

// c as a whole-call case (Case::whole_call), tagged "call" after any variant.
Case whole_call(Case c);

// Helpers.
size_t dtype_size(aclDataType dtype);
const char *dtype_name(aclDataType dtype);  // PyTorch spelling: float32, float16, bfloat16, ...
double numel(const std::vector<int64_t> &shape);

// Pooled size along one axis (ops.md, PyTorch pooling_output_shape).
int64_t pool_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil, int64_t dilation = 1);

// Python literal of an int list: {3, 3} -> "[3, 3]".
std::string py_list(const std::vector<int64_t> &v);

}  // namespace bench

#define BENCH_OP_CAT2_(a, b) a##b
#define BENCH_OP_CAT_(a, b) BENCH_OP_CAT2_(a, b)
// Registers a function that appends one operator's cases. Use once per operator file.
#define BENCH_OP(name)                                                                              \
    static void BENCH_OP_CAT_(bench_op_cases_, name)(::bench::CaseList &);                          \
    [[maybe_unused]] static const bool BENCH_OP_CAT_(bench_op_registered_, name) =                  \
        ::bench::register_op(#name, &BENCH_OP_CAT_(bench_op_cases_, name));                         \
    static void BENCH_OP_CAT_(bench_op_cases_, name)([[maybe_unused]] ::bench::CaseList & cases)

#endif  // ACLNN_CPU_BENCH_BENCH_HPP_
