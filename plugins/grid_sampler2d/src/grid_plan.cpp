// Phase 1 of GridSampler2DBackward and GridSampler2D: the checks the manifest cannot state (shape
// relations, in the order of hicann/ops-cv's aclnn_grid_sampler2d[_backward].cpp: grid's last dim,
// batch, channels, output size, non-empty input plane, output shapes), then the executor:
//   [convert non-contiguous inputs to dense FLOAT / double] -> kernel -> [store to non-contiguous outputs]
// Contiguous tensors are read and written in place in their own dtype (FLOAT16 / BF16 converted
// inside the kernel, rounded once on store). The core already checked NULLs, product support,
// dtypes, formats, ranks, the mode ranges and outputMask's length.
#include <memory>
#include <string>
#include <vector>

#include "aclnn_cpu/plugin.hpp"
#include "grid_backward.hpp"
#include "grid_forward.hpp"
#include "grid_plan.hpp"

namespace gsamp {
namespace {

using acp::cat;
using acp::kInvalid;
using acp::require;
using acp::shape_str;

using acp::dt::kBf16;
using acp::dt::kDouble;
using acp::dt::kFloat;
using acp::dt::kFloat16;

Elem elem_of(int32_t dtype) {
    switch (dtype) {
        case kFloat16: return Elem::F16;
        case kBf16: return Elem::BF16;
        case kDouble: return Elem::F64;
        default: return Elem::F32;
    }
}

// The sampling problem: grid (N, Ho, Wo, 2) samples input (N, C, H, W) into (N, C, Ho, Wo).
// `out` is gradOutput (backward) or out (forward), `out_name` its parameter name.
Geometry make_geometry(const acp::Args &a, const acp_tensor_desc &in, const acp_tensor_desc &grid,
                       const acp_tensor_desc &out, const char *out_name, uint32_t modes) {
    require(grid.dims[3] == 2, kInvalid, "grid last dimension must be 2 (x, y), got shape ", shape_str(grid));
    require(grid.dims[0] == in.dims[0], kInvalid,
            "grid batch ", grid.dims[0], " must equal input batch ", in.dims[0], " (grid ", shape_str(grid),
            ", input ", shape_str(in), ")");
    require(out.dims[0] == in.dims[0] && out.dims[1] == in.dims[1], kInvalid,
            out_name, " shape ", shape_str(out), " must have input's batch and channels [", in.dims[0], ",",
            in.dims[1], "] in its first two dimensions");
    require(out.dims[2] == grid.dims[1] && out.dims[3] == grid.dims[2], kInvalid,
            out_name, " spatial size [", out.dims[2], ",", out.dims[3], "] must equal grid's [", grid.dims[1], ",",
            grid.dims[2], "]");
    require(in.dims[2] != 0 && in.dims[3] != 0, kInvalid,
            "input H and W must not be 0, got shape ", shape_str(in));
    Geometry g{};
    g.N = in.dims[0];
    g.C = in.dims[1];
    g.H = in.dims[2];
    g.W = in.dims[3];
    g.Ho = grid.dims[1];
    g.Wo = grid.dims[2];
    g.interp = static_cast<Interp>(a.integer(modes));
    g.padding = static_cast<Padding>(a.integer(modes + 1));
    g.align = a.boolean(modes + 2);
    return g;
}

bool empty(const Geometry &g) { return g.N == 0 || g.C == 0 || g.Ho == 0 || g.Wo == 0; }

int32_t add_buffer(const acp_plan_ctx *ctx, uint64_t bytes) {
    if (bytes == 0) return -1;
    const int32_t id = ctx->host->add_buffer(ctx->plan, bytes);
    require(id >= 0, acp::kInner, "cannot reserve the workspace");
    return id;
}

// Where the kernel finds one tensor argument: in place (contiguous) or in a dense workspace buffer
// of the compute dtype (filled by a core convert node, or stored by a core store node).
struct Operand {
    int32_t arg = -1;
    int32_t buffer = -1;
    Elem elem = Elem::F32;
    const void *in(const acp_host_api *h, const acp_run_ctx *run) const {
        return buffer >= 0 ? h->buffer_data(run, buffer) : h->arg_data(run, arg);
    }
    void *out(const acp_host_api *h, const acp_run_ctx *run) const {
        return buffer >= 0 ? h->buffer_data(run, buffer) : h->arg_data(run, arg);
    }
};

int32_t compute_dtype(bool f64) { return f64 ? kDouble : kFloat; }

// An input the kernel reads: in place when contiguous (and, if `exact`, already of the compute
// dtype), else converted into a dense buffer. Appends the convert node to deps.
Operand input_operand(const acp_plan_ctx *ctx, const acp::Args &a, uint32_t arg, bool f64, bool exact,
                      std::vector<int32_t> &deps) {
    const acp_tensor_desc &t = *a.tensor(arg);
    Operand o;
    o.arg = static_cast<int32_t>(arg);
    const bool native = !exact || t.dtype == compute_dtype(f64);
    if (acp::is_contiguous(t) && native) {
        o.elem = elem_of(t.dtype);
        return o;
    }
    o.buffer = add_buffer(ctx, static_cast<uint64_t>(acp::numel(t)) * (f64 ? 8 : 4));
    o.elem = f64 ? Elem::F64 : Elem::F32;
    const int32_t id = ctx->host->add_convert(ctx->plan, o.arg, o.buffer, compute_dtype(f64), ACP_PREC_NATIVE, nullptr, 0);
    require(id >= 0, acp::kInner, "cannot plan the conversion of ", a.at(arg).name);
    deps.push_back(id);
    return o;
}

// An output the kernel writes: in place when contiguous, else a dense buffer of the compute dtype
// that a store node writes into the view afterwards.
Operand output_operand(const acp_plan_ctx *ctx, const acp::Args &a, uint32_t arg, bool f64) {
    const acp_tensor_desc &t = *a.tensor(arg);
    Operand o;
    o.arg = static_cast<int32_t>(arg);
    if (acp::is_contiguous(t)) {
        o.elem = elem_of(t.dtype);
        return o;
    }
    o.buffer = add_buffer(ctx, static_cast<uint64_t>(acp::numel(t)) * (f64 ? 8 : 4));
    o.elem = f64 ? Elem::F64 : Elem::F32;
    return o;
}

void add_store(const acp_plan_ctx *ctx, const Operand &o, bool f64, int32_t after) {
    if (o.buffer < 0) return;
    const int32_t id = ctx->host->add_store(ctx->plan, o.buffer, compute_dtype(f64), o.arg, &after, 1);
    require(id >= 0, acp::kInner, "cannot plan the store of an output");
}

template <class Node>
int32_t add_kernel_node(const acp_plan_ctx *ctx, const char *name, acp_node_fn fn, std::unique_ptr<Node> node,
                        const std::vector<int32_t> &deps) {
    const int32_t id = ctx->host->add_node(ctx->plan, name, fn, node.get(), deps.data(), static_cast<uint32_t>(deps.size()));
    require(id >= 0, acp::kInner, "cannot add the kernel node");
    ctx->host->set_plan_state(ctx->plan, node.release(), [](void *p) { delete static_cast<Node *>(p); });
    return id;
}

// ---- backward ----

struct BackwardNode {
    const acp_host_api *host;
    BackwardKernel kernel;
    Operand go, in, grid, ig, gg;
    int32_t scratch = -1;
};

acp_status run_backward(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<BackwardNode *>(data);
    return acp::guard_run(run, s->host, [&]() -> acp_status {
        const acp_host_api *h = s->host;
        BackwardOperands ops{};
        ops.grad_output = s->go.in(h, run);
        ops.input = s->in.arg >= 0 ? s->in.in(h, run) : nullptr;
        ops.grid = s->grid.in(h, run);
        ops.input_grad = s->ig.arg >= 0 ? s->ig.out(h, run) : nullptr;
        ops.grid_grad = s->gg.arg >= 0 ? s->gg.out(h, run) : nullptr;
        ops.scratch = s->scratch >= 0 ? h->buffer_data(run, s->scratch) : nullptr;
        s->kernel.run(ops);
        return 0;
    });
}

// ---- forward ----

struct ForwardNode {
    const acp_host_api *host;
    Geometry g;
    bool f64;
    Operand in, grid, out;
};

acp_status run_forward_node(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<ForwardNode *>(data);
    return acp::guard_run(run, s->host, [&]() -> acp_status {
        const acp_host_api *h = s->host;
        run_forward(s->g, s->grid.elem, s->out.elem, s->f64, ForwardOperands{s->in.in(h, run), s->grid.in(h, run), s->out.out(h, run)});
        return 0;
    });
}

}  // namespace

// GridSampler2DBackward(gradOutput 0, input 1, grid 2, interpolationMode 3, paddingMode 4,
//                       alignCorners 5, outputMask 6, inputGrad 7, gridGrad 8)
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        // The core answered a NULL outputMask (noop_if_null) and NULL tensors; both outputs are
        // checked, {false, false} computes nothing after the checks, an unselected output is never
        // written (Huawei).
        const std::vector<bool> mask = a.bools(6);
        const bool want_ig = mask.size() == 2 && mask[0];
        const bool want_gg = mask.size() == 2 && mask[1];
        const acp_tensor_desc &go = *a.tensor(0), &in = *a.tensor(1), &grid = *a.tensor(2);
        const Geometry g = make_geometry(a, in, grid, go, "gradOutput", 3);
        require(acp::dims_of(*a.tensor(7)) == acp::dims_of(in), kInvalid,
                "inputGrad shape ", shape_str(*a.tensor(7)), " must equal input shape ", shape_str(in));
        require(acp::dims_of(*a.tensor(8)) == acp::dims_of(grid), kInvalid,
                "gridGrad shape ", shape_str(*a.tensor(8)), " must equal grid shape ", shape_str(grid));
        if ((!want_ig && !want_gg) || empty(g)) return 0;  // nothing to compute, workspace 0

        const bool f64 = in.dtype == kDouble;
        const bool need_in = want_gg && g.interp != Interp::Nearest;
        std::vector<int32_t> deps;
        Operand o_go = input_operand(ctx, a, 0, f64, false, deps);
        Operand o_in = need_in ? input_operand(ctx, a, 1, f64, false, deps) : Operand{};
        Operand o_grid = input_operand(ctx, a, 2, f64, false, deps);
        Operand o_ig = want_ig ? output_operand(ctx, a, 7, f64) : Operand{};
        Operand o_gg = want_gg ? output_operand(ctx, a, 8, f64) : Operand{};
        const BackwardElems e{o_go.elem, o_in.elem, o_grid.elem, o_ig.elem, o_gg.elem};
        auto node = std::make_unique<BackwardNode>(
            BackwardNode{ctx->host, BackwardKernel(g, e, want_ig, want_gg, f64), o_go, o_in, o_grid, o_ig, o_gg, -1});
        node->scratch = add_buffer(ctx, node->kernel.scratch_bytes());
        const int32_t id = add_kernel_node(ctx, "grid_sampler2d_backward", run_backward, std::move(node), deps);
        add_store(ctx, o_ig, f64, id);
        add_store(ctx, o_gg, f64, id);
        return 0;
    });
}

// GridSampler2D(input 0, grid 1, interpolationMode 2, paddingMode 3, alignCorners 4, out 5)
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &in = *a.tensor(0), &grid = *a.tensor(1), &out = *a.tensor(5);
        const Geometry g = make_geometry(a, in, grid, out, "out", 2);
        if (empty(g)) return 0;
        const bool f64 = in.dtype == kDouble;
        // CANN runs bicubic only on the A2/A3 AI Core (FLOAT, FLOAT16); its AI CPU fallback, which
        // takes DOUBLE, and the other products have no bicubic. Checked after the empty return, as
        // CANN does.
        require(g.interp != Interp::Bicubic || acp::is_a2_or_a3(ctx), kInvalid,
                "interpolationMode 2 (bicubic) is not supported on ", ctx->product_name, " (supported: 0, 1)");
        require(!(f64 && g.interp == Interp::Bicubic), kInvalid,
                "interpolationMode 2 (bicubic) needs input dtype FLOAT or FLOAT16, got DOUBLE");
        std::vector<int32_t> deps;
        Operand o_in = input_operand(ctx, a, 0, f64, true, deps);  // the kernel reads input in the compute type
        Operand o_grid = input_operand(ctx, a, 1, f64, false, deps);
        Operand o_out = output_operand(ctx, a, 5, f64);
        auto node = std::make_unique<ForwardNode>(ForwardNode{ctx->host, g, f64, o_in, o_grid, o_out});
        const int32_t id = add_kernel_node(ctx, "grid_sampler2d_forward", run_forward_node, std::move(node), deps);
        add_store(ctx, o_out, f64, id);
        return 0;
    });
}

}  // namespace gsamp
