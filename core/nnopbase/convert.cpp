// The core's conversion nodes: the one place where tensors change dtype or layout on the way into
// or out of a kernel. Convert: any strided view -> dense workspace buffer (with cube rounding).
// Store: dense workspace buffer -> any strided output view. Both are deterministic elementwise maps.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
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
// An integer rounds to FLOAT once, from its exact value (as C++ and PyTorch convert): through
// double, an int64 beyond 2^53 would round twice. The 16-bit types then round from FLOAT.
float to_float(const Value &v) { return v.is_float ? static_cast<float>(v.f) : static_cast<float>(v.i); }

void store(uint8_t *p, int32_t dt, const Value &v, int32_t precision) {
    switch (dt) {
        case ACL_FLOAT: { const float x = acp::round_to_precision(to_float(v), precision); std::memcpy(p, &x, 4); break; }
        case ACL_DOUBLE: { const double x = to_double(v); std::memcpy(p, &x, 8); break; }
        case ACL_FLOAT16: { const uint16_t h = acp::float_to_half(to_float(v)); std::memcpy(p, &h, 2); break; }
        case ACL_BF16: { const uint16_t h = acp::float_to_bf16(acp::round_to_precision(to_float(v), precision)); std::memcpy(p, &h, 2); break; }
        case ACL_BOOL: *p = (v.is_float ? v.f != 0.0 : v.i != 0) ? 1 : 0; break;
        case ACL_INT8: case ACL_UINT8: *p = static_cast<uint8_t>(to_int(v)); break;
        case ACL_INT16: case ACL_UINT16: { const auto x = static_cast<uint16_t>(to_int(v)); std::memcpy(p, &x, 2); break; }
        case ACL_INT32: case ACL_UINT32: { const auto x = static_cast<uint32_t>(to_int(v)); std::memcpy(p, &x, 4); break; }
        case ACL_INT64: case ACL_UINT64: { const int64_t x = to_int(v); std::memcpy(p, &x, 8); break; }
        default: break;
    }
}

// Typed element access for the floating types, so a row converts in a tight loop the compiler can
// vectorize; integer and mixed conversions take the generic Value path above.
template <int32_t DT>
struct FloatType;
template <>
struct FloatType<ACL_FLOAT> {
    using T = float;
    static float get(T v) { return v; }
    static T put(float f) { return f; }
};
template <>
struct FloatType<ACL_FLOAT16> {
    using T = uint16_t;
    static float get(T v) { return acp::half_to_float(v); }
    static T put(float f) { return acp::float_to_half(f); }
};
template <>
struct FloatType<ACL_BF16> {
    using T = uint16_t;
    static float get(T v) { return acp::bf16_to_float(v); }
    static T put(float f) { return acp::float_to_bf16(f); }
};

// Converts n elements; src/dst strides in elements. PREC rounds through FLOAT (the cube's view).
using RowFn = void (*)(const uint8_t *src, int64_t src_stride, uint8_t *dst, int64_t dst_stride, int64_t n);

template <int32_t S, int32_t D, int32_t PREC>
void convert_row(const uint8_t *src, int64_t ss, uint8_t *dst, int64_t ds, int64_t n) {
    const auto *in = reinterpret_cast<const typename FloatType<S>::T *>(src);
    auto *out = reinterpret_cast<typename FloatType<D>::T *>(dst);
    for (int64_t k = 0; k < n; ++k)
        out[k * ds] = FloatType<D>::put(acp::round_to_precision(FloatType<S>::get(in[k * ss]), PREC));
}

template <int32_t S, int32_t D>
RowFn pick_precision(int32_t precision) {
    switch (precision) {
        case ACP_PREC_FP16: return convert_row<S, D, ACP_PREC_FP16>;
        case ACP_PREC_HF32: return convert_row<S, D, ACP_PREC_HF32>;
        case ACP_PREC_BF16: return convert_row<S, D, ACP_PREC_BF16>;
        default: return convert_row<S, D, ACP_PREC_NATIVE>;
    }
}

template <int32_t S>
RowFn pick_dst(int32_t dst, int32_t precision) {
    switch (dst) {
        case ACL_FLOAT: return pick_precision<S, ACL_FLOAT>(precision);
        case ACL_FLOAT16: return pick_precision<S, ACL_FLOAT16>(precision);
        case ACL_BF16: return pick_precision<S, ACL_BF16>(precision);
        default: return nullptr;
    }
}

// FLOAT16 / BF16 / FLOAT rows 16 lanes at a time, with numeric_avx512.hpp (numeric.hpp's bits):
// FLOAT -> FLOAT rounded to the cube precision (every FLOAT call under ALLOW_FP32_DOWN_PRECISION /
// USE_FP16 / USE_HF32 takes it), and widening / narrowing between FLOAT and FLOAT16 or BF16.
// Strided rows take the scalar row.
template <int32_t S, int32_t D, int32_t PREC>
__attribute__((target("avx512f"))) void convert_row_avx512(const uint8_t *src, int64_t ss, uint8_t *dst, int64_t ds,
                                                           int64_t n) {
    namespace v = acp::avx512;
    if (ss != 1 || ds != 1) return convert_row<S, D, PREC>(src, ss, dst, ds, n);
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512 f;
        if constexpr (S == ACL_FLOAT) f = _mm512_loadu_ps(reinterpret_cast<const float *>(src) + k);
        else {
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src) + k / 16);
            f = S == ACL_FLOAT16 ? v::from_half(h) : v::from_bf16(h);
        }
        if constexpr (PREC == ACP_PREC_FP16) f = v::round_fp16(f);
        if constexpr (PREC == ACP_PREC_HF32) f = v::round_hf32(f);
        if constexpr (PREC == ACP_PREC_BF16) f = v::round_bf16(f);
        if constexpr (D == ACL_FLOAT) _mm512_storeu_ps(reinterpret_cast<float *>(dst) + k, f);
        else _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst) + k / 16, D == ACL_FLOAT16 ? v::to_half(f) : v::to_bf16(f));
    }
    constexpr int64_t se = S == ACL_FLOAT ? 4 : 2, de = D == ACL_FLOAT ? 4 : 2;
    convert_row<S, D, PREC>(src + k * se, 1, dst + k * de, 1, n - k);
}

// A typed row function for FLOAT / FLOAT16 / BF16 pairs, nullptr for anything else.
RowFn pick_row(int32_t src, int32_t dst, int32_t precision) {
    if (__builtin_cpu_supports("avx512f")) {
        if (src == ACL_FLOAT && dst == ACL_FLOAT) {
            switch (precision) {
                case ACP_PREC_FP16: return convert_row_avx512<ACL_FLOAT, ACL_FLOAT, ACP_PREC_FP16>;
                case ACP_PREC_HF32: return convert_row_avx512<ACL_FLOAT, ACL_FLOAT, ACP_PREC_HF32>;
                case ACP_PREC_BF16: return convert_row_avx512<ACL_FLOAT, ACL_FLOAT, ACP_PREC_BF16>;
                default: break;  // a plain copy: the scalar row vectorizes itself
            }
        } else if (precision == ACP_PREC_NATIVE) {
            if (src == ACL_FLOAT16 && dst == ACL_FLOAT) return convert_row_avx512<ACL_FLOAT16, ACL_FLOAT, ACP_PREC_NATIVE>;
            if (src == ACL_BF16 && dst == ACL_FLOAT) return convert_row_avx512<ACL_BF16, ACL_FLOAT, ACP_PREC_NATIVE>;
            if (src == ACL_FLOAT && dst == ACL_FLOAT16) return convert_row_avx512<ACL_FLOAT, ACL_FLOAT16, ACP_PREC_NATIVE>;
            if (src == ACL_FLOAT && dst == ACL_BF16) return convert_row_avx512<ACL_FLOAT, ACL_BF16, ACP_PREC_NATIVE>;
        }
    }
    switch (src) {
        case ACL_FLOAT: return pick_dst<ACL_FLOAT>(dst, precision);
        case ACL_FLOAT16: return pick_dst<ACL_FLOAT16>(dst, precision);
        case ACL_BF16: return pick_dst<ACL_BF16>(dst, precision);
        default: return nullptr;
    }
}

struct CopyNode : CoreNodeData {
    bool to_buffer = true;  // convert (view -> buffer) or store (buffer -> view)
    int32_t arg = -1, buffer = -1;
    int32_t buffer_dtype = ACL_FLOAT, precision = ACP_PREC_NATIVE;
    acp_tensor_desc view{};  // the argument's view, as planned
    // The view's dims with size-1 dims dropped and dims merged where the view is contiguous across
    // them: the same row-major element order (which is the buffer's), in as few and long rows as
    // the layout allows (a 1x1 weight is one row, not Cout*Cin rows of one element).
    std::vector<int64_t> dims, strides;
    RowFn row = nullptr;  // typed fast path, when the dtypes allow one
};

// Fills node.dims / node.strides from node.view (see CopyNode).
void coalesce(CopyNode &node) {
    node.dims.clear();
    node.strides.clear();
    for (uint32_t d = 0; d < node.view.rank; ++d) {
        const int64_t size = node.view.dims[d], stride = node.view.strides[d];
        if (size == 1) continue;
        if (!node.dims.empty() && node.strides.back() == stride * size) {
            node.dims.back() *= size;
            node.strides.back() = stride;
        } else {
            node.dims.push_back(size);
            node.strides.push_back(stride);
        }
    }
    if (node.dims.empty()) {  // a single element (or rank 0)
        node.dims.push_back(1);
        node.strides.push_back(1);
    }
}

constexpr int64_t kChunk = 16384;  // elements per task: long rows are split so that they run in parallel

acp_status run_copy(void *data, const acp_run_ctx *run) {
    const auto &n = *static_cast<const CopyNode *>(data);
    const acp_host_api *host = host_api();
    auto *view_base = static_cast<uint8_t *>(host->arg_data(run, n.arg));
    auto *buf = static_cast<uint8_t *>(host->buffer_data(run, n.buffer));
    const int rank = static_cast<int>(n.dims.size());
    const int64_t inner = n.dims[rank - 1], inner_stride = n.strides[rank - 1];
    int64_t rows = 1;
    for (int d = 0; d + 1 < rank; ++d) rows *= n.dims[d];
    for (uint32_t d = 0; d < n.view.rank; ++d)
        if (n.view.dims[d] == 0) return 0;
    const auto view_es = static_cast<int64_t>(acp::dtype_size(n.view.dtype));
    const auto buf_es = static_cast<int64_t>(acp::dtype_size(n.buffer_dtype));
    // Work items: (row, piece of at most kChunk elements of it); several short rows per task.
    const int64_t pieces = (inner + kChunk - 1) / kChunk, piece_len = (inner + pieces - 1) / pieces;
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(piece_len, 1));
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows * pieces, grain), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t item = r.begin(); item < r.end(); ++item) {
            const int64_t row = item / pieces, k0 = item % pieces * piece_len, len = std::min(piece_len, inner - k0);
            int64_t off = k0 * inner_stride, rem = row;  // element offset of the piece inside the view
            for (int d = rank - 2; d >= 0; --d) {
                off += (rem % n.dims[d]) * n.strides[d];
                rem /= n.dims[d];
            }
            uint8_t *b = buf + (row * inner + k0) * buf_es;
            uint8_t *v = view_base + off * view_es;
            if (n.row) {
                if (n.to_buffer) n.row(v, inner_stride, b, 1, len);
                else n.row(b, 1, v, inner_stride, len);
                continue;
            }
            for (int64_t k = 0; k < len; ++k) {
                uint8_t *e = v + k * inner_stride * view_es;
                if (n.to_buffer) store(b + k * buf_es, n.buffer_dtype, load(e, n.view.dtype), n.precision);
                else store(e, n.view.dtype, load(b + k * buf_es, n.buffer_dtype), ACP_PREC_NATIVE);
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
    coalesce(*node);
    node->row = node->to_buffer ? pick_row(node->view.dtype, node->buffer_dtype, node->precision)
                                : pick_row(node->buffer_dtype, node->view.dtype, ACP_PREC_NATIVE);
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
