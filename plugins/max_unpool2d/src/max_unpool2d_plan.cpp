// Phase 1 of MaxUnpool2dBackward and MaxUnpool2d: the operator's own checks in the order of
// Huawei's aclnn code (the manifest's generic rules already ran), then the executor graph.
// "out castable from gradOutput" is the manifest's `castable` rule: the core checks it with the
// dtypes, where Huawei's CheckDtypeValid does.
//
// Backward graph: gather -> out directly when out has gradOutput's dtype, or when out is FLOAT and
// gradOutput FLOAT16 (the gather widens on the way: exact, numeric.hpp's conversion, the store
// node's bits; FLOAT16 -> FLOAT 32x64x112x112 -> 56x56, 2 threads: 2.88 -> 2.3 ms).
// Otherwise gather into a dense workspace buffer of gradOutput's dtype and let the core's store
// node cast it into out's view. The store node is the project's one dtype conversion (float ->
// half RNE, int -> float rounded once, integer narrowing by truncation), so the cast cannot drift
// from the other operators'; it costs a workspace the size of out in gradOutput's dtype.
// Forward graph: one scatter node (out always has self's dtype).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/plugin.hpp"
#include "max_unpool2d_kernels.hpp"
#include "max_unpool2d_plan.hpp"

namespace max_unpool2d {
namespace {

using acp::cat;
using acp::kInvalid;
using acp::require;
using acp::view4;
using acp::dt::kFloat;
using acp::dt::kFloat16;
using acp::dt::kInt64;

Shape4 shape4(const acp_tensor_desc &t) {
    if (t.rank == 3) return {1, t.dims[0], t.dims[1], t.dims[2]};
    return {t.dims[0], t.dims[1], t.dims[2], t.dims[3]};
}

// "[n][c][h][w]" (rank 4) or "[c][h][w]" (rank 3) of a row-major position over (N, C, H, W).
std::string position_str(int64_t pos, Shape4 s, uint32_t rank) {
    const int64_t w = pos % s.W, h = pos / s.W % s.H, c = pos / (s.W * s.H) % s.C, n = pos / (s.W * s.H * s.C);
    std::string out = rank == 4 ? cat("[", n, "]") : std::string();
    return out + cat("[", c, "][", h, "][", w, "]");
}

// One kernel node: the tensors' argument ids (or a workspace buffer for the output) and views.
template <class Kernel>
struct NodeState {
    const acp_host_api *host;
    Kernel kernel;
    int32_t src_arg, idx_arg, dst_arg, dst_buffer;  // dst_buffer >= 0: write there instead of dst_arg
    View4 sv, iv, dv;
    Shape4 shape;  // indices' (N, C, H, W), for naming a bad position
    uint32_t rank;
    int64_t oH, oW;
    const char *src_name;
};

template <class Kernel>
acp_status run_node(void *data, const acp_run_ctx *run) {
    auto *s = static_cast<NodeState<Kernel> *>(data);
    return acp::guard_run(run, s->host, [&]() -> acp_status {
        void *dst = s->dst_buffer >= 0 ? s->host->buffer_data(run, s->dst_buffer) : s->host->arg_data(run, s->dst_arg);
        const BadIndex bad = s->kernel.run(s->host->arg_data(run, s->src_arg), s->sv, s->host->arg_data(run, s->idx_arg),
                                           s->iv, dst, s->dv);
        if (!bad.found()) return 0;
        const std::string msg = cat("indices", position_str(bad.position, s->shape, s->rank), " = ", bad.value,
                                    " is out of range: it must index the ", s->oH, "x", s->oW, " plane of ", s->src_name,
                                    ", i.e. lie in [0, ", s->oH * s->oW, ")");
        return s->host->fail(run, acp::kRuntime, msg.c_str());
    });
}

template <class Kernel>
int32_t add_kernel_node(const acp_plan_ctx *ctx, const char *name, std::unique_ptr<NodeState<Kernel>> state) {
    const int32_t node = ctx->host->add_node(ctx->plan, name, run_node<Kernel>, state.get(), nullptr, 0);
    require(node >= 0, acp::kInner, "cannot add the kernel node");
    ctx->host->set_plan_state(ctx->plan, state.release(), [](void *s) { delete static_cast<NodeState<Kernel> *>(s); });
    return node;
}

}  // namespace

// MaxUnpool2dBackward(gradOutput 0, self 1, indices 2, outputSize 3, out 4)
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &go = *a.tensor(0), &self = *a.tensor(1), &idx = *a.tensor(2), &out = *a.tensor(4);
        // Huawei's CheckShape, in its order.
        require(go.rank == self.rank, kInvalid,
                "Expected dim of self and gradOutput to be equal, instead got self: ", self.rank,
                ", gradOutput: ", go.rank);
        const Shape4 s = shape4(self), g = shape4(go);
        if (self.rank == 3)
            require(s.C == g.C, kInvalid,
                    "Expected (C) of self and gradOutput to be equal, instead got self: (", s.C, "), gradOutput: (",
                    g.C, ")");
        else
            require(s.N == g.N && s.C == g.C, kInvalid,
                    "Expected (N, C) of self and gradOutput to be equal, instead got self: (", s.N, ", ", s.C,
                    "), gradOutput: (", g.N, ", ", g.C, ")");
        require(acp::dims_of(idx) == acp::dims_of(self), kInvalid,
                "indices shape ", acp::shape_str(idx), " must equal self shape ", acp::shape_str(self));
        require(acp::dims_of(out) == acp::dims_of(self), kInvalid,
                "out shape ", acp::shape_str(out), " must equal self shape ", acp::shape_str(self));
        const std::vector<int64_t> os = a.ints(3);
        require(os.size() == 2, kInvalid, "Expected size of outputSize must be 2, but got: ", os.size());
        require(os[0] == g.H && os[1] == g.W, kInvalid,
                "Inconsistent gradOutput size. output height = ", os[0], ", output width = ", os[1],
                ", but got gradOutput: ", g.H, "x", g.W);
        const bool self_empty = acp::numel(self) == 0;
        require(acp::numel(go) != 0 || self_empty, kInvalid,
                "gradOutput is an empty tensor ", acp::shape_str(go), ", so self must be empty too, got ",
                acp::shape_str(self));
        if (self_empty) return 0;  // nothing to compute: workspace 0, no nodes (Huawei's empty path)

        const int elem = static_cast<int>(acp::dtype_size(go.dtype));
        const bool to_float = out.dtype == kFloat && go.dtype == kFloat16;
        const Widen widen = to_float ? Widen::Half : Widen::None;
        auto state = std::make_unique<NodeState<GatherKernel>>(NodeState<GatherKernel>{
            ctx->host, GatherKernel(s, g.H, g.W, elem, idx.dtype == kInt64, widen), 0, 2, 4, -1, view4(go),
            view4(idx), view4(out), s, self.rank, g.H, g.W, "gradOutput"});
        if (out.dtype == go.dtype || to_float) {
            add_kernel_node(ctx, "max_unpool2d_backward", std::move(state));
            return 0;
        }
        // out's dtype differs: gather densely in gradOutput's dtype, then the core casts into out's view.
        const int32_t buffer = ctx->host->add_buffer(ctx->plan, static_cast<uint64_t>(acp::numel(self)) * elem);
        require(buffer >= 0, acp::kInner, "cannot reserve the workspace of the cast");
        state->dst_buffer = buffer;
        state->dv = {s.C * s.H * s.W, s.H * s.W, s.W, 1};
        const int32_t gather = add_kernel_node(ctx, "max_unpool2d_backward", std::move(state));
        const int32_t deps[1] = {gather};
        require(ctx->host->add_store(ctx->plan, buffer, go.dtype, 4, deps, 1) >= 0, acp::kInner,
                "cannot plan the cast of the result to out's dtype");
        return 0;
    });
}

// MaxUnpool2d(self 0, indices 1, outputSize 2, out 3)
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &self = *a.tensor(0), &idx = *a.tensor(1), &out = *a.tensor(3);
        // Huawei's CheckShape, CheckInpuNullTensor, CheckOutputSize, its empty return, then the out shape
        // its page asks for (Huawei's code leaves a wrong one to its reshape, an internal error).
        require(idx.rank == self.rank, kInvalid,
                "Expected dim of self and indices to be equal, instead got self: ", self.rank, ", indices: ",
                idx.rank);
        require(acp::dims_of(idx) == acp::dims_of(self), kInvalid,
                "indices shape ", acp::shape_str(idx), " must equal self shape ", acp::shape_str(self));
        for (uint32_t d = 1; d < self.rank; ++d)
            require(self.dims[d] > 0, kInvalid,
                    "expected self to have non-empty spatial dimensions, but self ", acp::shape_str(self),
                    " has dimension ", d, " empty");
        const std::vector<int64_t> os = a.ints(2);
        require(os.size() == 2, kInvalid, "outputSize length should be 2, but now is ", os.size());
        for (size_t i = 0; i < 2; ++i)
            require(os[i] > 0, kInvalid, "outputSize[", i, "] must be greater than 0, got ", os[i]);
        const Shape4 s = shape4(self);
        require(os[0] <= INT64_MAX / os[1], kInvalid,
                "outputSize ", os[0], " x ", os[1], " has more than 2^63 - 1 elements");
        require(os[0] * os[1] >= s.H * s.W, kInvalid,
                "outputSize ", os[0], " x ", os[1], " must hold at least self's ", s.H, " x ", s.W, " elements");
        // An empty self (N = 0, or C = 0 in rank 3) returns here, out unread and unwritten, as Huawei's
        // code does (its unit test case_0_tensor passes an out of [1, 1, 4, 4] for a self of [0, 1, 2, 2]).
        if (acp::numel(self) == 0) return 0;
        std::vector<int64_t> want = acp::dims_of(self);
        want[self.rank - 2] = os[0];
        want[self.rank - 1] = os[1];
        require(acp::dims_of(out) == want, kInvalid,
                "out shape ", acp::shape_str(out), " must be ", acp::shape_str(want),
                " (self's N, C and outputSize)");

        const int elem = static_cast<int>(acp::dtype_size(self.dtype));
        add_kernel_node(ctx, "max_unpool2d_forward",
                        std::make_unique<NodeState<ScatterKernel>>(NodeState<ScatterKernel>{
                            ctx->host, ScatterKernel(s, os[0], os[1], elem, idx.dtype == kInt64), 0, 1, 3, -1,
                            view4(self), view4(idx), view4(out), s, self.rank, os[0], os[1], "out"}));
        return 0;
    });
}

}  // namespace max_unpool2d
