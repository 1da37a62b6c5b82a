// Phase 1 of MaxPool2dWithMask(Backward) and MaxPool2dWithIndices(Backward): the checks the
// manifest cannot state, in CANN's order (hicann/ops-nn aclnn_max_pool2d_with_indices[_backward].cpp),
// then the executor:
//   backward  [copy a non-contiguous mask or INT32 indices view into the workspace] -> kernel
//   forward   kernel -> [store the workspace copy into a non-contiguous mask or indices view, or
//             into INT64 indices]
// The WithIndices pair runs the int32 mask layout: its indices are that layout's values without
// the padding, which the kernels read and write in place (the forward then writes no padding).
// The core already checked NULLs, product support, dtypes, formats, ranks and the attribute
// lengths the manifest declares.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aclnn_cpu/plugin.hpp"
#include "aclnn_cpu/pooling.hpp"
#include "maxpool_backward.hpp"
#include "maxpool_forward.hpp"
#include "maxpool_plan.hpp"

namespace mpool {
namespace {

using acp::cat;
using acp::kInvalid;
using acp::require;
using acp::shape_str;

using acp::view4;
using acp::dt::kInt32;
using acp::dt::kInt8;

// What `indices` is: the mask of ops.md (INT8, layout per product) or CANN's INT32 indices of the
// pooled shape (the int32 layout's values).
enum class IndexKind { Mask, Int32Indices };

// ops.md: int32 argmax on atlas-a2/a3; the bit mask elsewhere (atlas-training; atlas-inference has
// only the forward, whose device path there is the bit-mask one). A 1x1 kernel whose Ho*Wo int32
// values do not fit the mask's one row (Ho*Wo > 24) takes the bit mask on atlas-a2/a3 too, as the
// hardware does for 1x1 kernels (e.g. torchvision's LastLevelMaxPool, k1 s2).
MaskLayout layout_of(const acp_plan_ctx *ctx, const Geometry &g) {
    if (!acp::is_a2_or_a3(ctx)) return MaskLayout::Bits;
    return g.Ho * g.Wo * 4 <= mask_plane_bytes(g) ? MaskLayout::Int32 : MaskLayout::Bits;
}
// products.md: on atlas-training FLOAT is computed as FLOAT16 (Huawei's op_api casts FLOAT to
// FLOAT16 there for the forward and the backward alike).
bool fp16_compute(const acp_plan_ctx *ctx, const acp_tensor_desc &t) {
    return t.dtype == acp::dt::kFloat && ctx->product_id && std::string(ctx->product_id) == "atlas-training";
}

void require_same_format(const acp_tensor_desc &a, const char *an, const acp_tensor_desc &b, const char *bn) {
    require(a.format == b.format, kInvalid,
            bn, " format ", acp::format_name(b.format), " must equal ", an, " format ", acp::format_name(a.format));
}

// Attributes, the input plane and the pooled size, in CANN's CheckShape order after the caller's
// own first checks.
struct Problem {
    Geometry g{};
    std::vector<int64_t> pooled;  // self's dims with H, W replaced by Ho, Wo
    std::vector<int64_t> mask;    // the mask's dims
    bool empty = false;
};

Problem make_problem(const acp::Args &a, uint32_t kernel, uint32_t stride, uint32_t padding, uint32_t dilation) {
    const auto at = acp::parse_pool2d(a.ints(kernel), a.ints(stride), a.ints(padding), a.ints(dilation));
    require(at.dH == 1 && at.dW == 1, kInvalid,
            "dilation must be 1, got ", shape_str(a.ints(dilation)));
    return Problem{{0, 0, 0, 0, 0, 0, at.kH, at.kW, at.sH, at.sW, at.pH, at.pW}, {}, {}, false};
}

// The plane checks: C, H, W non-zero (only the batch may be empty), a pooled size of at least 1.
void size_problem(Problem &p, const acp_tensor_desc &self, bool ceil_mode, const char *what) {
    const uint32_t r = self.rank;
    Geometry &g = p.g;
    g.N = r == 4 ? self.dims[0] : 1;
    g.C = self.dims[r - 3];
    g.H = self.dims[r - 2];
    g.W = self.dims[r - 1];
    require(g.C != 0 && g.H != 0 && g.W != 0, kInvalid,
            what, " must be non-empty in C, H and W (only the batch may be 0), got ", shape_str(self));
    g.Ho = acp::pooled_size(g.H, g.kH, g.sH, g.pH, 1, ceil_mode);
    g.Wo = acp::pooled_size(g.W, g.kW, g.sW, g.pW, 1, ceil_mode);
    require(g.Ho > 0 && g.Wo > 0, kInvalid,
            what, " spatial size [", g.H, ",", g.W, "] is too small for kernelSize [", g.kH, ",", g.kW,
            "] with padding [", g.pH, ",", g.pW, "]: the pooled size would be [", g.Ho, ",", g.Wo, "]");
    p.pooled = acp::dims_of(self);
    p.pooled[r - 2] = g.Ho;
    p.pooled[r - 1] = g.Wo;
    p.mask = r == 4 ? std::vector<int64_t>{g.N, g.C, g.kH * g.kW, mask_row_bytes(g.Ho, g.Wo)}
                    : std::vector<int64_t>{g.C, g.kH * g.kW, mask_row_bytes(g.Ho, g.Wo)};
    p.empty = g.N == 0;
}

void check_mask(const Problem &p, const acp_tensor_desc &mask, MaskLayout layout) {
    const Geometry &g = p.g;
    require(acp::dims_of(mask) == p.mask, kInvalid,
            "indices shape ", shape_str(mask), " must be the mask shape ", shape_str(p.mask),
            " ([N,] C, kH*kW, (ceil(Ho*Wo/16)+1)*32 with Ho, Wo = ", g.Ho, ", ", g.Wo, ")");
    if (layout != MaskLayout::Int32) return;  // (layout_of chose Int32 only where the values fit)
    require(g.H * g.W <= INT32_MAX, kInvalid,
            "self plane H*W = ", g.H * g.W, " does not fit the int32 argmax of this product");
}

void check_int32_indices(const Problem &p, const acp_tensor_desc &indices) {
    require(acp::dims_of(indices) == p.pooled, kInvalid,
            "indices shape ", shape_str(indices), " must equal the pooled shape of self ", shape_str(p.pooled));
    require(p.g.H * p.g.W <= INT32_MAX, kInvalid,
            "self plane H*W = ", p.g.H * p.g.W, " does not fit an INT32 index");
}

// The layout of `indices` and its checks. INT32 indices are the int32 layout's values alone
// (planes of Ho*Wo): the kernels read and write them in place, or through a dense copy of that
// size in the workspace for a non-contiguous view.
MaskLayout check_indices(const acp_plan_ctx *ctx, const Problem &p, const acp_tensor_desc &indices, IndexKind kind) {
    if (kind == IndexKind::Int32Indices) {
        check_int32_indices(p, indices);
        return MaskLayout::Int32;
    }
    const MaskLayout layout = layout_of(ctx, p.g);
    check_mask(p, indices, layout);
    return layout;
}
// Workspace bytes of a dense copy of `indices` in the kernel's layout (int8 mask bytes, int32 indices).
uint64_t dense_bytes(const acp_tensor_desc &indices, IndexKind kind) {
    return static_cast<uint64_t>(acp::numel(indices)) * (kind == IndexKind::Int32Indices ? 4 : 1);
}

// ---- executor nodes ----

struct BackwardNode {
    const acp_host_api *host;
    BackwardKernel kernel;
    Geometry g;
    View4 go, gi;
    int32_t mask_buffer;  // -1: read the indices argument directly
    int32_t scratch;      // workspace buffer id, -1 when the kernel needs none
    const char *indices_name;  // how messages name the indices
};

acp_status run_backward(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<BackwardNode *>(data);
    return acp::guard_run(run, s->host, [&]() -> acp_status {
        const acp_host_api *h = s->host;
        const auto *mask = static_cast<const uint8_t *>(s->mask_buffer >= 0 ? h->buffer_data(run, s->mask_buffer)
                                                                              : h->arg_data(run, 2));
        BadIndex bad;
        if (s->kernel.run(h->arg_data(run, 0), s->go, mask, h->arg_data(run, 8), s->gi,
                          s->scratch >= 0 ? h->buffer_data(run, s->scratch) : nullptr, &bad))
            return 0;
        const Geometry &g = s->g;
        const int64_t oh = bad.j / g.Wo, ow = bad.j % g.Wo;
        return h->fail(run, acp::kRuntime,
                       cat(s->indices_name, " holds ", bad.value, " for output [n=", bad.plane / g.C,
                           ", c=", bad.plane % g.C, ", h=", oh, ", w=", ow, "] (int32 element ", bad.plane * g.Ho * g.Wo + bad.j,
                           "), outside that output's window rows [", g.row_lo(oh), ",", g.row_hi(oh), ") x columns [",
                           g.col_lo(ow), ",", g.col_hi(ow), ") of a ", g.H, "x", g.W,
                           " plane; only -1 (no maximum) or an index inside the window is valid")
                           .c_str());
    });
}

struct ForwardNode {
    const acp_host_api *host;
    ForwardKernel kernel;
    View4 in, out;
    int32_t mask_buffer;  // -1: write the indices argument directly
    int32_t scratch;
};

acp_status run_forward(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<ForwardNode *>(data);
    return acp::guard_run(run, s->host, [&]() -> acp_status {
        const acp_host_api *h = s->host;
        auto *mask = static_cast<uint8_t *>(s->mask_buffer >= 0 ? h->buffer_data(run, s->mask_buffer)
                                                                : h->arg_data(run, 7));
        s->kernel.run(h->arg_data(run, 0), s->in, h->arg_data(run, 6), s->out, mask,
                      s->scratch >= 0 ? h->buffer_data(run, s->scratch) : nullptr);
        return 0;
    });
}

int32_t add_buffer(const acp_plan_ctx *ctx, uint64_t bytes) {
    if (bytes == 0) return -1;
    const int32_t id = ctx->host->add_buffer(ctx->plan, bytes);
    require(id >= 0, acp::kInner, "cannot reserve the workspace");
    return id;
}

template <class Node>
void hand_over(const acp_plan_ctx *ctx, std::unique_ptr<Node> node) {
    ctx->host->set_plan_state(ctx->plan, node.release(), [](void *p) { delete static_cast<Node *>(p); });
}

}  // namespace

namespace {

// MaxPool2dWith{Mask,Indices}Backward(gradOutput 0, self 1, indices 2, kernelSize 3, stride 4,
//                                    padding 5, dilation 6, ceilMode 7, gradInput 8)
acp_status plan_backward_of(const acp_plan_ctx *ctx, IndexKind kind) {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        // kernelSize's length is the manifest's: an early check (161001, CANN's quirk) in the mask
        // pair, an attribute rule (161002) in the WithIndices pair.
        const acp_tensor_desc &go = *a.tensor(0), &self = *a.tensor(1), &indices = *a.tensor(2), &gi = *a.tensor(8);
        require_same_format(self, "self", go, "gradOutput");
        require_same_format(self, "self", gi, "gradInput");
        Problem p = make_problem(a, 3, 4, 5, 6);
        require(acp::dims_of(gi) == acp::dims_of(self), kInvalid,
                "gradInput shape ", shape_str(gi), " must equal self shape ", shape_str(self));
        size_problem(p, self, a.boolean(7), "self");
        require(acp::dims_of(go) == p.pooled, kInvalid,
                "gradOutput shape ", shape_str(go), " must equal the pooled shape of self ", shape_str(p.pooled));
        const MaskLayout layout = check_indices(ctx, p, indices, kind);
        if (p.empty) return 0;  // N == 0: nothing to compute, workspace 0

        auto node = std::make_unique<BackwardNode>(BackwardNode{
            ctx->host, BackwardKernel(p.g, acp::float_dtype(self), fp16_compute(ctx, self), layout, std::max(ctx->threads, 1)), p.g,
            view4(go), view4(gi), -1, -1, kind == IndexKind::Mask ? "indices (int32 argmax layout)" : "indices"});
        int32_t deps[1] = {-1};
        if (!acp::is_contiguous(indices)) {  // the kernel reads the dense bytes of the view
            node->mask_buffer = add_buffer(ctx, dense_bytes(indices, kind));
            deps[0] = ctx->host->add_convert(ctx->plan, 2, node->mask_buffer, kind == IndexKind::Mask ? kInt8 : kInt32,
                                             ACP_PREC_NATIVE, nullptr, 0);
            require(deps[0] >= 0, acp::kInner, "cannot plan the copy of the indices");
        }
        node->scratch = add_buffer(ctx, node->kernel.scratch_bytes());
        const int32_t id = ctx->host->add_node(ctx->plan, "max_pool2d_with_mask_backward", run_backward, node.get(),
                                               deps, deps[0] >= 0 ? 1 : 0);
        require(id >= 0, acp::kInner, "cannot add the kernel node");
        hand_over(ctx, std::move(node));
        return 0;
    });
}

// MaxPool2dWith{Mask,Indices}(self 0, kernelSize 1, stride 2, padding 3, dilation 4, ceilMode 5,
//                            out 6, indices 7)
acp_status plan_forward_of(const acp_plan_ctx *ctx, IndexKind kind) {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &self = *a.tensor(0), &out = *a.tensor(6), &indices = *a.tensor(7);
        require_same_format(self, "self", out, "out");
        Problem p = make_problem(a, 1, 2, 3, 4);
        size_problem(p, self, a.boolean(5), "self");
        require(acp::dims_of(out) == p.pooled, kInvalid,
                "out shape ", shape_str(out), " must equal the pooled shape of self ", shape_str(p.pooled));
        const MaskLayout layout = check_indices(ctx, p, indices, kind);
        if (p.empty) return 0;

        auto node = std::make_unique<ForwardNode>(ForwardNode{
            ctx->host, ForwardKernel(p.g, acp::float_dtype(self), fp16_compute(ctx, self), layout, std::max(ctx->threads, 1)), view4(self),
            view4(out), -1, -1});
        node->kernel.set_mask_padding(kind == IndexKind::Mask);
        // The kernel writes the int32 layout in place; a view, or INT64 indices (CANN casts its
        // kernel's int32 result likewise), take a dense int32 copy that the store converts.
        const bool direct = acp::is_contiguous(indices) && (kind == IndexKind::Mask || indices.dtype == kInt32);
        if (!direct) node->mask_buffer = add_buffer(ctx, dense_bytes(indices, kind));
        node->scratch = add_buffer(ctx, node->kernel.scratch_bytes());
        const int32_t id =
            ctx->host->add_node(ctx->plan, "max_pool2d_with_mask_forward", run_forward, node.get(), nullptr, 0);
        require(id >= 0, acp::kInner, "cannot add the kernel node");
        if (node->mask_buffer >= 0) {
            const int32_t st = ctx->host->add_store(ctx->plan, node->mask_buffer, kind == IndexKind::Mask ? kInt8 : kInt32,
                                                    7, &id, 1);
            require(st >= 0, acp::kInner, "cannot plan the store of the indices");
        }
        hand_over(ctx, std::move(node));
        return 0;
    });
}

}  // namespace

acp_status plan_backward(const acp_plan_ctx *ctx) noexcept { return plan_backward_of(ctx, IndexKind::Mask); }
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept { return plan_forward_of(ctx, IndexKind::Mask); }
acp_status plan_indices_backward(const acp_plan_ctx *ctx) noexcept {
    return plan_backward_of(ctx, IndexKind::Int32Indices);
}
acp_status plan_indices_forward(const acp_plan_ctx *ctx) noexcept { return plan_forward_of(ctx, IndexKind::Int32Indices); }

}  // namespace mpool
