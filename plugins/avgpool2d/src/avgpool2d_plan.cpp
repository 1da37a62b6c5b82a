// Phase 1 of AvgPool2dBackward and AvgPool2d: the operator's own checks (the manifest's generic
// rules already ran), then the executor graph: [round gradOutput to the cube precision] -> kernel.
#include <algorithm>
#include <memory>

#include "aclnn_cpu/plugin.hpp"
#include "aclnn_cpu/pooling.hpp"
#include "avgpool2d_kernels.hpp"
#include "avgpool2d_plan.hpp"

namespace avgpool2d {
namespace {

using acp::cat;
using acp::kInvalid;
using acp::require;
using acp::view4;

constexpr int64_t kMaxChannels = 65535;  // the backward's limit (ops.md); the forward has none


// Everything both directions share: attributes, the input plane, the pooled shape.
struct Problem {
    Geometry g{};
    std::vector<int64_t> pooled_dims;  // self's dims with H, W replaced by Ho, Wo
    bool empty = false;
};

// `empty_pool_ok` (the backward): a window that fits nowhere pools to an empty gradOutput, which is
// the empty-tensor success as any other (ops.md; CANN computes no pooled size there); the forward
// refuses it, as CANN's does. The channel limit holds only where there is something to compute.
Problem make_problem(const acp::Args &a, const acp_tensor_desc &self, uint32_t kernel, uint32_t stride,
                     uint32_t padding, uint32_t ceil, uint32_t include_pad, uint32_t divisor, const char *stride_name,
                     const char *padding_name, int64_t max_channels, bool empty_pool_ok) {
    Problem p;
    const auto at = acp::parse_pool2d(a.ints(kernel), a.ints(stride), a.ints(padding), {}, "kernelSize", stride_name,
                                      padding_name);
    const uint32_t r = self.rank;
    const int64_t N = r == 4 ? self.dims[0] : 1, C = self.dims[r - 3], H = self.dims[r - 2], W = self.dims[r - 1];
    const bool ceil_mode = a.boolean(ceil);
    int64_t Ho = acp::pooled_size(H, at.kH, at.sH, at.pH, 1, ceil_mode);
    int64_t Wo = acp::pooled_size(W, at.kW, at.sW, at.pW, 1, ceil_mode);
    p.empty = N * C * H * W == 0 || (empty_pool_ok && (Ho <= 0 || Wo <= 0));
    require(p.empty || C <= max_channels, kInvalid, "self channel count must be <= ", max_channels, ", got ", C);
    if (p.empty) {  // an empty input pools to an empty output (clamped), nothing to compute
        Ho = std::max<int64_t>(Ho, 0);
        Wo = std::max<int64_t>(Wo, 0);
    }
    require(p.empty || (Ho > 0 && Wo > 0), kInvalid,
            "self spatial size [", H, ",", W, "] is too small for kernelSize [", at.kH, ",", at.kW, "] with ",
            padding_name, " [", at.pH, ",", at.pW, "]: the pooled size would be [", Ho, ",", Wo, "]");
    p.g = {N, C, H, W, Ho, Wo, at.kH, at.kW, at.sH, at.sW, at.pH, at.pW, ceil_mode, a.boolean(include_pad), a.integer(divisor)};
    p.pooled_dims = acp::dims_of(self);
    p.pooled_dims[r - 2] = Ho;
    p.pooled_dims[r - 1] = Wo;
    return p;
}

// The node's view of a tensor: an argument, or the workspace buffer holding its rounded copy.
struct Operand {
    int32_t arg = -1;
    int32_t buffer = -1;
    View4 view{};
    const void *address(const acp_host_api *host, const acp_run_ctx *run) const {
        return buffer >= 0 ? host->buffer_data(run, buffer) : host->arg_data(run, arg);
    }
};

// Rounds a FLOAT input to the cube precision into the workspace (products.md cubeMathType rules).
Operand plan_input(const acp_plan_ctx *ctx, int32_t arg, const acp_tensor_desc &t, int32_t precision, int32_t *node) {
    Operand o;
    o.arg = arg;
    o.view = view4(t);
    *node = -1;
    if (precision == ACP_PREC_NATIVE || t.dtype != acp::dt::kFloat) return o;
    o.buffer = ctx->host->add_buffer(ctx->plan, static_cast<uint64_t>(acp::numel(t)) * sizeof(float));
    *node = ctx->host->add_convert(ctx->plan, arg, o.buffer, 0, precision, nullptr, 0);
    require(o.buffer >= 0 && *node >= 0, acp::kInner, "cannot plan the cube-precision rounding of the input");
    const int64_t H = t.dims[t.rank - 2], W = t.dims[t.rank - 1], C = t.dims[t.rank - 3];
    o.view = {C * H * W, H * W, W, 1};
    return o;
}

template <class Kernel>
struct NodeState {
    const acp_host_api *host;
    Kernel kernel;
    Operand in;
    int32_t out_arg;
    View4 out_view;
};

template <class Kernel>
acp_status run_node(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<NodeState<Kernel> *>(data);
    return acp::guard_run(run, s->host, [&] {
        s->kernel.run(s->in.address(s->host, run), s->in.view, s->host->arg_data(run, s->out_arg), s->out_view);
        return acp_status{0};
    });
}

template <class Kernel>
acp_status plan_kernel(const acp_plan_ctx *ctx, const char *name, const Problem &p, const acp_tensor_desc &in,
                       int32_t in_arg, const acp_tensor_desc &out, int32_t out_arg, int32_t precision) {
    if (p.empty) return 0;  // nothing to compute: workspace 0, no nodes (Huawei's empty-tensor path)
    int32_t round_node = -1;
    const Operand src = plan_input(ctx, in_arg, in, precision, &round_node);
    auto state = std::make_unique<NodeState<Kernel>>(
        NodeState<Kernel>{ctx->host, Kernel(p.g, acp::float_dtype(in), precision), src, out_arg, view4(out)});
    const int32_t deps[1] = {round_node};
    const int32_t node = ctx->host->add_node(ctx->plan, name, run_node<Kernel>, state.get(), deps, round_node >= 0 ? 1 : 0);
    require(node >= 0, acp::kInner, "cannot add the kernel node");
    ctx->host->set_plan_state(ctx->plan, state.release(), [](void *s) { delete static_cast<NodeState<Kernel> *>(s); });
    return 0;
}

// Which kernel CANN's A2/A3 forward runs (aclnn_avgpool2d.cpp): the cube one (and the global
// mean) for square-ish planes with a small kernel and no ceil mode, else the 3-D vector one.
bool a2_vector_route(const Geometry &g) {
    if (g.H == g.kH && g.W == g.kW && g.pH == 0 && g.pW == 0) return false;  // global pooling
    const bool long_strip = g.W / g.H >= 2 || g.H / g.W >= 2;
    const bool kernel_ok = (g.kH * g.kW <= 255 || (g.kH <= 20 && g.kW <= 20)) && g.kH <= 255 && g.kW <= 255;
    const bool divisor_ok = g.divisor_override >= -255 && g.divisor_override <= 255;
    return long_strip || !kernel_ok || !divisor_ok || g.ceil_mode || g.C >= 65536;
}

// The forward's precision. On A2/A3 only the cube and global routes convert a FLOAT input by
// cubeMathType, after the empty return: 2 rounds to FLOAT16, 1 and 3 are refused there ("cannot
// support hf32"); the vector route computes in the input dtype whatever the mode. Elsewhere the
// product's cube table (ctx->precision) holds for every route.
int32_t forward_precision(const acp_plan_ctx *ctx, const acp::Args &a, const acp_tensor_desc &self, const Geometry &g) {
    if (!acp::is_a2_or_a3(ctx)) return ctx->precision;
    if (a2_vector_route(g)) return ACP_PREC_NATIVE;
    const int64_t cube = a.integer(7);
    require(self.dtype != acp::dt::kFloat || (cube != 1 && cube != 3), kInvalid, "cubeMathType ", cube,
            " with self dtype FLOAT is not supported on ", ctx->product_name,
            " for this pooling (the cube kernel: kernelSize, strides, ceilMode and the plane's shape select it); "
            "supported: 0, 2");
    return ctx->precision;
}

}  // namespace

// AvgPool2dBackward(gradOutput 0, self 1, kernelSize 2, stride 3, padding 4, ceilMode 5,
//                   countIncludePad 6, divisorOverride 7, cubeMathType 8, gradInput 9)
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &go = *a.tensor(0), &self = *a.tensor(1), &gi = *a.tensor(9);
        const Problem p = make_problem(a, self, 2, 3, 4, 5, 6, 7, "stride", "padding", kMaxChannels, true);  // attributes first, as CANN
        require(go.rank == self.rank, kInvalid, "gradOutput rank ", go.rank, " must equal self rank ", self.rank);
        require(acp::dims_of(gi) == acp::dims_of(self), kInvalid,
                "gradInput shape ", acp::shape_str(gi), " must equal self shape ", acp::shape_str(self));
        require(acp::dims_of(go) == p.pooled_dims, kInvalid,
                "gradOutput shape ", acp::shape_str(go), " must equal the pooled shape of self ",
                acp::shape_str(p.pooled_dims));
        // The training and inference series' cube takes divisorOverride in [-255, 255] (products.md);
        // CANN checks it when it builds the graph, after its empty-tensor return.
        const std::string product = ctx->product_id ? ctx->product_id : "";
        const int64_t divisor = a.integer(7);
        if (!p.empty && (product == "atlas-training" || product == "atlas-inference"))
            require(divisor >= -255 && divisor <= 255, kInvalid, "divisorOverride must be in [-255, 255] on ", ctx->product_name,
                    ", got ", divisor);
        return plan_kernel<BackwardKernel>(ctx, "avgpool2d_backward", p, go, 0, gi, 9, ctx->precision);
    });
}

// AvgPool2d(self 0, kernelSize 1, strides 2, paddings 3, ceilMode 4, countIncludePad 5,
//           divisorOverride 6, cubeMathType 7, out 8)
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &self = *a.tensor(0), &out = *a.tensor(8);
        // CANN's forward (CheckShape): only the batch may be empty.
        for (uint32_t d = self.rank - 3; d < self.rank; ++d)
            require(self.dims[d] != 0, kInvalid, "self may be empty only in N, got ", acp::shape_str(self));
        const Problem p = make_problem(a, self, 1, 2, 3, 4, 5, 6, "strides", "paddings", INT64_MAX, false);
        require(acp::dims_of(out) == p.pooled_dims, kInvalid,
                "out shape ", acp::shape_str(out), " must equal the pooled shape of self ", acp::shape_str(p.pooled_dims));
        // (an empty call returns before CANN picks a kernel: no kernel's cube rule applies)
        const int32_t precision = p.empty ? ACP_PREC_NATIVE : forward_precision(ctx, a, self, p.g);
        return plan_kernel<ForwardKernel>(ctx, "avgpool2d_forward", p, self, 0, out, 8, precision);
    });
}

}  // namespace avgpool2d
