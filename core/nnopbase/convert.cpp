// The core's conversion nodes: the one place where tensors change dtype or layout on the way into
// or out of a kernel. Convert: any strided view -> dense workspace buffer (with cube rounding).
// Store: dense workspace buffer -> any strided output view. Both are deterministic elementwise maps.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "executor.hpp"

namespace aclcpu {
namespace {

bool is_float_type(int32_t dt) { return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16 || dt == ACL_DOUBLE; }

// One element, widened: floating types to double, integer types to int64 (exact for both).
struct Value {
    double f = 0;
    int64_t i = 0;
    bool is_float = false;
};

Value load(const uint8_t *p, int32_t dt) {
    Value v;
    v.is_float = is_float_type(dt);
    switch (dt) {
        case ACL_FLOAT: { float x; std::memcpy(&x, p, 4); v.f = x; break; }
        case ACL_DOUBLE: { std::memcpy(&v.f, p, 8); break; }
        case ACL_FLOAT16: { uint16_t h; std::memcpy(&h, p, 2); v.f = acp::half_to_float(h); break; }
        case ACL_BF16: { uint16_t h; std::memcpy(&h, p, 2); v.f = acp::bf16_to_float(h); break; }
        case ACL_INT8: v.i = *reinterpret_cast<const int8_t *>(p); break;
        case ACL_UINT8: v.i = *p; break;
        case ACL_BOOL: v.i = *p ? 1 : 0; break;
        case ACL_INT16: { int16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
        case ACL_UINT16: { uint16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
        case ACL_INT32: { int32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
        case ACL_UINT32: { uint32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
        case ACL_INT64: case ACL_UINT64: std::memcpy(&v.i, p, 8); break;
        default: break;
    }
    return v;
}

// Float to integer follows C++/PyTorch truncation; NaN and out-of-range values become 0 (defined, not UB).
int64_t to_int(const Value &v) {
    if (!v.is_float) return v.i;
    if (!std::isfinite(v.f) || v.f >= 9.2e18 || v.f <= -9.2e18) return 0;
    return static_cast<int64_t>(v.f);
}
double to_double(const Value &v) { return v.is_float ? v.f : static_cast<double>(v.i); }

void store(uint8_t *p, int32_t dt, const Value &v, int32_t precision) {
    switch (dt) {
        case ACL_FLOAT: { const float x = acp::round_to_precision(static_cast<float>(to_double(v)), precision); std::memcpy(p, &x, 4); break; }
        case ACL_DOUBLE: { const double x = to_double(v); std::memcpy(p, &x, 8); break; }
        case ACL_FLOAT16: { const uint16_t h = acp::float_to_half(static_cast<float>(to_double(v))); std::memcpy(p, &h, 2); break; }
        case ACL_BF16: { const uint16_t h = acp::float_to_bf16(acp::round_to_precision(static_cast<float>(to_double(v)), precision)); std::memcpy(p, &h, 2); break; }
        case ACL_BOOL: *p = (v.is_float ? v.f != 0.0 : v.i != 0) ? 1 : 0; break;
        case ACL_INT8: case ACL_UINT8: *p = static_cast<uint8_t>(to_int(v)); break;
        case ACL_INT16: case ACL_UINT16: { const auto x = static_cast<uint16_t>(to_int(v)); std::memcpy(p, &x, 2); break; }
        case ACL_INT32: case ACL_UINT32: { const auto x = static_cast<uint32_t>(to_int(v)); std::memcpy(p, &x, 4); break; }
        case ACL_INT64: case ACL_UINT64: { const int64_t x = to_int(v); std::memcpy(p, &x, 8); break; }
        default: break;
    }
}

struct CopyNode : CoreNodeData {
    bool to_buffer = true;  // convert (view -> buffer) or store (buffer -> view)
    int32_t arg = -1, buffer = -1;
    int32_t buffer_dtype = ACL_FLOAT, precision = ACP_PREC_NATIVE;
    acp_tensor_desc view{};  // the argument's view, as planned
};

acp_status run_copy(void *data, const acp_run_ctx *run) {
    const auto &n = *static_cast<const CopyNode *>(data);
    const acp_host_api *host = host_api();
    auto *view_base = static_cast<uint8_t *>(host->arg_data(run, n.arg));
    auto *buf = static_cast<uint8_t *>(host->buffer_data(run, n.buffer));
    const int rank = static_cast<int>(n.view.rank);
    const int64_t inner = rank ? n.view.dims[rank - 1] : 1;
    int64_t rows = 1;
    for (int d = 0; d + 1 < rank; ++d) rows *= n.view.dims[d];
    if (rows * inner == 0) return 0;
    const auto view_es = static_cast<int64_t>(acp::dtype_size(n.view.dtype));
    const auto buf_es = static_cast<int64_t>(acp::dtype_size(n.buffer_dtype));
    const int64_t inner_stride = rank ? n.view.strides[rank - 1] : 0;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, 64), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t row = r.begin(); row < r.end(); ++row) {
            int64_t off = 0, rem = row;  // element offset of this row inside the view
            for (int d = rank - 2; d >= 0; --d) {
                off += (rem % n.view.dims[d]) * n.view.strides[d];
                rem /= n.view.dims[d];
            }
            uint8_t *b = buf + row * inner * buf_es;
            for (int64_t k = 0; k < inner; ++k) {
                uint8_t *v = view_base + (off + k * inner_stride) * view_es;
                if (n.to_buffer) store(b + k * buf_es, n.buffer_dtype, load(v, n.view.dtype), n.precision);
                else store(v, n.view.dtype, load(b + k * buf_es, n.buffer_dtype), ACP_PREC_NATIVE);
            }
        }
    });
    return 0;
}

int32_t add_copy(aclOpExecutor &exec, std::unique_ptr<CopyNode> node, const char *name, const int32_t *deps, uint32_t n) {
    if (node->arg < 0 || static_cast<size_t>(node->arg) >= exec.args.size() || !exec.args[node->arg].tensor) return -1;
    if (node->buffer < 0 || static_cast<size_t>(node->buffer) >= exec.buffer_offsets.size()) return -1;
    if (acp::dtype_size(node->buffer_dtype) == 0) return -1;
    node->view = *exec.args[static_cast<size_t>(node->arg)].tensor;
    void *data = node.get();
    exec.core_node_data.push_back(std::move(node));
    return add_node(exec, name, run_copy, data, deps, n);
}

}  // namespace

int32_t add_convert_node(aclOpExecutor &exec, int32_t src_arg, int32_t dst_buffer, int32_t dst_dtype, int32_t precision,
                         const int32_t *deps, uint32_t n_deps) {
    auto node = std::make_unique<CopyNode>();
    node->to_buffer = true;
    node->arg = src_arg;
    node->buffer = dst_buffer;
    node->buffer_dtype = dst_dtype;
    node->precision = precision;
    return add_copy(exec, std::move(node), "convert", deps, n_deps);
}

int32_t add_store_node(aclOpExecutor &exec, int32_t src_buffer, int32_t src_dtype, int32_t dst_arg, const int32_t *deps,
                       uint32_t n_deps) {
    auto node = std::make_unique<CopyNode>();
    node->to_buffer = false;
    node->arg = dst_arg;
    node->buffer = src_buffer;
    node->buffer_dtype = src_dtype;
    return add_copy(exec, std::move(node), "store", deps, n_deps);
}

}  // namespace aclcpu
