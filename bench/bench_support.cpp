// aclnn-cpu-bench: case registry, per-case resources (Prepared), dtype helpers.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "bench.hpp"

namespace bench {

// ---------------------------------------------------------------------------------------------
// errors

namespace {
std::string describe(const std::string &call, int64_t status, const std::string &detail) {
    std::string s = call + " returned " + std::to_string(status);
    if (!detail.empty()) s += ": " + detail;
    return s;
}

std::string recent_error() {
    const char *m = aclGetRecentErrMsg();
    return m ? std::string(m) : std::string();
}
}  // namespace

CallError::CallError(const std::string &call, int64_t status, const std::string &detail)
    : std::runtime_error(describe(call, status, detail)), status_(status) {}

// ---------------------------------------------------------------------------------------------
// registry

namespace {
std::map<std::string, RegisterFn> &registry() {
    static std::map<std::string, RegisterFn> r;  // ordered by operator name: a stable case order
    return r;
}
}  // namespace

bool register_op(const char *name, RegisterFn fn) {
    registry()[name] = fn;
    return true;
}

CaseList all_cases() {
    CaseList out;
    for (const auto &[name, fn] : registry()) fn(out);
    return out;
}

Case whole_call(Case c) {
    c.whole_call = true;
    c.variant = c.variant.empty() ? "call" : c.variant + "_call";
    return c;
}

std::string Case::id() const {
    std::string s = op + "/" + shape;
    if (!variant.empty()) s += "/" + variant;
    s += "/";
    s += dtype_name(dtype);
    s += "/" + product;
    return s;
}

// ---------------------------------------------------------------------------------------------
// dtypes

size_t dtype_size(aclDataType dtype) {
    switch (dtype) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    case ACL_COMPLEX32: return 4;
    default: return 0;
    }
}

const char *dtype_name(aclDataType dtype) {
    switch (dtype) {
    case ACL_FLOAT: return "float32";
    case ACL_FLOAT16: return "float16";
    case ACL_BF16: return "bfloat16";
    case ACL_DOUBLE: return "float64";
    case ACL_INT8: return "int8";
    case ACL_UINT8: return "uint8";
    case ACL_INT16: return "int16";
    case ACL_INT32: return "int32";
    case ACL_INT64: return "int64";
    case ACL_BOOL: return "bool";
    default: return "unknown";
    }
}

double numel(const std::vector<int64_t> &shape) {
    double n = 1;
    for (int64_t d : shape) n *= static_cast<double>(d);
    return n;
}

int64_t pool_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil, int64_t dilation) {
    const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
    int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil && (out - 1) * stride >= in + pad) --out;
    return out;
}

std::string py_list(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(v[i]);
    }
    return s + "]";
}

namespace {

uint16_t float_to_half(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (absx < 0x38800000u) {                                                 // subnormal half or zero
        const float a = std::bit_cast<float>(absx);
        const uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // a / 2^-24
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t r = absx + 0xc8000fffu + ((absx >> 13) & 1u);  // rebias (-112 << 23) and round to even
    return static_cast<uint16_t>(sign | (r >> 13));
}

uint16_t float_to_bf16(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// Deterministic uniform [-1, 1) values written in the buffer's dtype (first touch included).
void fill_random(void *data, size_t bytes, aclDataType dtype, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    auto next = [&s]() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return static_cast<float>(static_cast<double>(s >> 40) * (2.0 / 16777216.0) - 1.0);
    };
    switch (dtype) {
    case ACL_FLOAT: {
        float *p = static_cast<float *>(data);
        for (size_t i = 0, n = bytes / 4; i < n; ++i) p[i] = next();
        return;
    }
    case ACL_FLOAT16: {
        uint16_t *p = static_cast<uint16_t *>(data);
        for (size_t i = 0, n = bytes / 2; i < n; ++i) p[i] = float_to_half(next());
        return;
    }
    case ACL_BF16: {
        uint16_t *p = static_cast<uint16_t *>(data);
        for (size_t i = 0, n = bytes / 2; i < n; ++i) p[i] = float_to_bf16(next());
        return;
    }
    case ACL_DOUBLE: {
        double *p = static_cast<double *>(data);
        for (size_t i = 0, n = bytes / 8; i < n; ++i) p[i] = next();
        return;
    }
    default:
        std::memset(data, 0, bytes);  // integer data: callers fill their own meaningful values
        return;
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Prepared

Prepared::Prepared(aclrtStream stream, bool whole_calls) : stream_(stream), wholeCalls_(whole_calls) {}

Prepared::~Prepared() {
    if (executor_) aclDestroyAclOpExecutor(executor_);
    for (auto it = intArrays_.rbegin(); it != intArrays_.rend(); ++it) aclDestroyIntArray(*it);
    for (auto it = tensors_.rbegin(); it != tensors_.rend(); ++it) aclDestroyTensor(*it);
    if (workspace_) aclrtFree(workspace_);
    for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) aclrtFree(*it);
}

void *Prepared::alloc(size_t bytes, Fill fill, aclDataType dtype) {
    void *p = nullptr;
    const aclError err = aclrtMalloc(&p, bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST);
    if (err != ACL_SUCCESS || !p)
        throw CallError("aclrtMalloc(" + std::to_string(bytes) + " bytes)", err, recent_error());
    buffers_.push_back(p);
    if (fill == Fill::Random)
        fill_random(p, bytes, dtype, buffers_.size());
    else
        std::memset(p, 0, bytes);
    return p;
}

aclTensor *Prepared::tensor(const std::vector<int64_t> &shape, aclDataType dtype, Fill fill, aclFormat format) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    const size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
    void *data = alloc(bytes, fill, dtype);
    aclTensor *t = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, format, shape.data(),
                                   shape.size(), data);
    if (!t) throw CallError("aclCreateTensor", -1, recent_error());
    tensors_.push_back(t);
    return t;
}

aclIntArray *Prepared::ints(const std::vector<int64_t> &values) {
    aclIntArray *a = aclCreateIntArray(values.data(), values.size());
    if (!a) throw CallError("aclCreateIntArray", -1, recent_error());
    intArrays_.push_back(a);
    return a;
}

void Prepared::plan(const char *op, aclnnStatus status, aclOpExecutor *executor, uint64_t workspaceSize,
                    Phase2Fn phase2, Phase1Fn phase1) {
    const std::string name(op);
    if (status != ACLNN_SUCCESS) throw CallError(name + "GetWorkspaceSize", status, recent_error());
    if (!executor) throw CallError(name + "GetWorkspaceSize", -1, "success but no executor");
    if (planned()) throw CallError(name + "GetWorkspaceSize", -1, "a case may plan only one executor");
    if (wholeCalls_) {  // every run plans again: this first executor only sizes the workspace
        aclDestroyAclOpExecutor(executor);
        if (!phase1) throw CallError(name + "GetWorkspaceSize", -1, "a whole-call case needs phase 1 again (BENCH_PLAN)");
        phase1_ = std::move(phase1);
    } else {
        const aclnnStatus rs = aclSetAclOpExecutorRepeatable(executor);
        if (rs != ACLNN_SUCCESS) throw CallError("aclSetAclOpExecutorRepeatable", rs, recent_error());
        executor_ = executor;
    }
    phase2_ = phase2;
    op_ = name;
    workspaceSize_ = workspaceSize;
    if (workspaceSize > 0) {
        const aclError err = aclrtMalloc(&workspace_, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        if (err != ACL_SUCCESS || !workspace_)
            throw CallError("aclrtMalloc(workspace " + std::to_string(workspaceSize) + " bytes)", err,
                            recent_error());
        std::memset(workspace_, 0, workspaceSize);
    }
}

void Prepared::run() {
    if (!planned()) throw CallError("prepare", -1, "the case did not plan an executor (missing BENCH_PLAN)");
    aclOpExecutor *executor = executor_;
    if (wholeCalls_) {  // a single-use executor, consumed by its phase 2
        uint64_t ws = 0;
        const aclnnStatus ps = phase1_(&ws, &executor);
        if (ps != ACLNN_SUCCESS) throw CallError(op_ + "GetWorkspaceSize", ps, recent_error());
        if (ws > workspaceSize_)
            throw CallError(op_ + "GetWorkspaceSize", -1, "asked for " + std::to_string(ws) + " workspace bytes, first " +
                                                              std::to_string(workspaceSize_));
    }
    const aclnnStatus st = phase2_(workspace_, workspaceSize_, executor, stream_);
    if (st != ACLNN_SUCCESS) throw CallError(op_, st, recent_error());
    const aclError se = aclrtSynchronizeStream(stream_);
    if (se != ACL_SUCCESS) throw CallError("aclrtSynchronizeStream", se, recent_error());
}

}  // namespace bench
