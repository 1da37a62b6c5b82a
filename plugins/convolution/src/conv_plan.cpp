// Phase 1 of ConvolutionBackward and Convolution: checks (conv_checks.cpp), then the executor graph.
//
// ConvolutionBackward, each branch only when its outputMask bit is set, the three independent:
//   [convert gradOutput] [convert weight] -> dInput  (oneDNN data pass)    -> [store gradInput]
//   [convert gradOutput] [convert input]  -> dWeight (oneDNN weight pass)  -> [store gradWeight]
//   gradOutput as given                   -> dBias   (own per-channel sum) -> [store gradBias]
// "convert" is the core's node: FLOAT16 -> FLOAT, FLOAT rounded to the product's cube precision
// (cubeMathType), or a strided view made dense; otherwise oneDNN reads the caller's tensor. Results
// are FLOAT; "store" rounds them once to FLOAT16/BF16 or writes a strided view; a dense FLOAT output
// is written in place. The bias gradient is a vector-unit sum on Ascend: it reads the unrounded
// gradOutput. Depthwise: our own kernels (depthwise.hpp), one independent node per gradient. Few
// input channels, 3x3 stride 1 padding 1: our own kernels (small_cin.hpp), likewise a node per gradient.
// Strided pointwise: oneDNN's passes on the sampled positions (strided_pointwise.hpp), the input
// subsampled by a node of its own for dWeight, dInput spread back with zeros as each image is done.
#include "conv_plan.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aclnn_cpu/plugin.hpp"
#include "conv_checks.hpp"
#include "conv_kernels.hpp"
#include "cpu.hpp"
#include "depthwise.hpp"
#include "dnnl_pass.hpp"
#include "pass_cache.hpp"
#include "small_cin.hpp"
#include "strided_pointwise.hpp"

namespace conv {

namespace {

using acp::cat;
using acp::require;

using acp::dt::kBf16;
using acp::dt::kFloat;
using acp::dt::kFloat16;

int32_t reserve(const acp_plan_ctx *ctx, uint64_t bytes) {
    if (bytes == 0) return -1;
    const int32_t id = ctx->host->add_buffer(ctx->plan, bytes);
    require(id >= 0, acp::kInner, "cannot reserve the workspace");
    return id;
}

// Where a node finds a dense operand: a workspace buffer (converted) or the caller's tensor.
struct Source {
    int32_t arg = -1, buffer = -1, node = -1;
    const void *address(const acp_host_api *h, const acp_run_ctx *run) const {
        return buffer >= 0 ? h->buffer_data(run, buffer) : h->arg_data(run, arg);
    }
};

// The operand as oneDNN reads it: dense, in the engine's dtype (FLOAT, or BF16 for BF16 operands),
// rounded to the cube precision (by default the call's, for FLOAT operands). FLOAT16 operands,
// operands the precision rounds and strided views go through the core's convert node. The forward
// companion names both itself: its operands may differ in dtype (Problem::cube_dt).
Source plan_source(const acp_plan_ctx *ctx, int32_t arg, const acp_tensor_desc &t, int32_t engine = -1, int32_t precision = -1) {
    Source s;
    s.arg = arg;
    if (engine < 0) engine = t.dtype == kBf16 ? kBf16 : kFloat;
    if (precision < 0) precision = t.dtype == kFloat ? ctx->precision : ACP_PREC_NATIVE;
    // (FLOAT16 and BF16 values are exact in HF32 and FLOAT; BF16 ones are not in FLOAT16)
    const bool round = precision != ACP_PREC_NATIVE && (t.dtype == kFloat || (t.dtype == kBf16 && precision == ACP_PREC_FP16));
    if (t.dtype != engine || round || !acp::is_contiguous(t)) {
        s.buffer = reserve(ctx, static_cast<uint64_t>(acp::numel(t)) * (engine == kBf16 ? 2 : 4));
        s.node = ctx->host->add_convert(ctx->plan, arg, s.buffer, engine, round ? precision : ACP_PREC_NATIVE, nullptr, 0);
        require(s.node >= 0, acp::kInner, "cannot plan the conversion of argument ", arg);
    }
    return s;
}

// The dense operands of one plan, each converted at most once and shared by the nodes reading it.
struct Sources {
    const acp_plan_ctx *ctx;
    std::map<int32_t, Source> done;
    Source operator()(int32_t arg, const acp_tensor_desc &t) {
        const auto it = done.find(arg);
        if (it != done.end()) return it->second;
        return done[arg] = plan_source(ctx, arg, t);
    }
};

// Where a node writes its FLOAT result: the caller's dense FLOAT tensor; a buffer the node itself
// rounds into the caller's dense FLOAT16/BF16 tensor (round_to); or a buffer the core's store node
// writes into any other view. Or, for a pass that rounds its result itself (own_dt), the caller's
// dense FLOAT16/BF16 tensor directly.
struct Sink {
    int32_t arg = -1, buffer = -1;
    int32_t round_to = -1;  // dtype of a dense low-precision output the node rounds into
    int64_t count = 0;
    OutDt own_dt = OutDt::F32;  // FLOAT16 / BF16: the pass writes the caller's tensor in it
    float *address(const acp_host_api *h, const acp_run_ctx *run) const {
        return static_cast<float *>(buffer >= 0 ? h->buffer_data(run, buffer) : h->arg_data(run, arg));
    }
    // After the node's compute: the rounding store of a dense FLOAT16/BF16 output.
    void finish(const acp_host_api *h, const acp_run_ctx *run) const {
        if (round_to >= 0) round_store(static_cast<const float *>(h->buffer_data(run, buffer)), h->arg_data(run, arg), round_to, count);
    }
};

// self_round: the node's pass can write a dense FLOAT16 / BF16 result itself (rounds_output()).
Sink plan_sink(const acp_plan_ctx *ctx, int32_t arg, const acp_tensor_desc &t, bool force_buffer = false, bool self_round = false) {
    Sink s;
    s.arg = arg;
    s.count = acp::numel(t);
    if (self_round && !force_buffer && acp::is_contiguous(t) && (t.dtype == kFloat16 || t.dtype == kBf16)) {
        s.own_dt = t.dtype == kBf16 ? OutDt::BF16 : OutDt::F16;
        return s;
    }
    if (force_buffer || t.dtype != kFloat || !acp::is_contiguous(t))
        s.buffer = reserve(ctx, static_cast<uint64_t>(acp::numel(t)) * sizeof(float));
    if (s.buffer >= 0 && (t.dtype == kFloat16 || t.dtype == kBf16) && acp::is_contiguous(t)) s.round_to = t.dtype;
    return s;
}

void plan_store(const acp_plan_ctx *ctx, const Sink &s, int32_t node) {
    if (s.buffer < 0 || s.round_to >= 0) return;
    require(ctx->host->add_store(ctx->plan, s.buffer, kFloat, s.arg, &node, 1) >= 0, acp::kInner,
            "cannot plan the store of the result");
}

std::vector<int32_t> reserve_all(const acp_plan_ctx *ctx, const std::vector<uint64_t> &sizes) {
    std::vector<int32_t> ids;
    for (const uint64_t b : sizes) ids.push_back(reserve(ctx, b));
    return ids;
}

void resolve(const acp_host_api *h, const acp_run_ctx *run, const std::vector<int32_t> &ids, std::vector<void *> &out) {
    out.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) out[i] = ids[i] >= 0 ? h->buffer_data(run, ids[i]) : nullptr;
}

Dt engine_dt(const acp_tensor_desc &t) { return t.dtype == kBf16 ? Dt::BF16 : Dt::F32; }

View view_of(const acp_tensor_desc &t) { return View{t.dtype, acp::dims_of(t), acp::strides_of(t)}; }

// ---- node states (owned by Plan, handed to the executor) ----

struct DataNode {
    const acp_host_api *host = nullptr;
    std::shared_ptr<DataPass> pass;  // lent by pass_cache.hpp for the plan's lifetime
    Source a, w;
    Sink out;
    std::vector<int32_t> bufs;
    std::vector<void *> ptrs;  // resolved per run (runs of one executor are serialized)
    // forward companion only
    Source bias;
    int64_t bias_c = 0, plane = 0, n = 0;
    int32_t round_out = ACP_PREC_NATIVE;  // the kernel's output dtype, when not the output's (Problem::kernel_out_dt)
    uint64_t zero_bytes = 0;  // zero the result first (a transposed output's tail rows)
    bool prepared = false;    // a prepare node put the operand in its blocked buffer
    // strided pointwise (strided_pointwise.hpp): the pass computes the sampled positions into this
    // buffer, and each image is spread into `out` as it is done
    int32_t sampled = -1;
    Geometry strided;
};

// The input at a strided pointwise convolution's sampled positions, for its weight pass.
struct SubsampleNode {
    const acp_host_api *host = nullptr;
    Source x;
    int32_t buffer = -1;
    size_t es = 4;
    Geometry g;
};

// Puts gradOutput in the blocked layout once, for both the gradInput and gradWeight passes.
struct PrepNode {
    const acp_host_api *host = nullptr;
    const DataNode *data = nullptr;
    std::vector<void *> ptrs;
};

struct WeightNode {
    const acp_host_api *host = nullptr;
    std::shared_ptr<WeightPass> pass;  // lent by pass_cache.hpp for the plan's lifetime
    Source src, ddst;
    Sink out;
    std::vector<int32_t> bufs;
    std::vector<void *> ptrs;
    int32_t shared = -1;         // workspace buffer of the prepared blocked operand, or -1
    bool shared_is_ddst = true;  // which operand it is
    // The whole pass, or (a minibatch split run as nodes of its own, see plan_backward) chunks
    // [k0, k1) of it, or the sum of its chunks' partials.
    enum class Part { Whole, Chunks, Sum } part = Part::Whole;
    int64_t k0 = 0, k1 = 0;
};

// One gradient computed by a kernel of our own (depthwise.hpp, small_cin.hpp): gradInput reads
// gradOutput and the weight, gradWeight gradOutput and the input. The gradients are independent
// nodes, each with its own scratch (they run concurrently) and each reading what it needs itself.
struct KernelNode {
    using Compute = std::function<void(const void *dy, const void *other, float *out, void *scratch)>;
    const acp_host_api *host = nullptr;
    Compute compute;
    Source dy, other;
    Sink out;
    int32_t scratch = -1;
};

struct BiasNode {
    const acp_host_api *host = nullptr;
    int32_t go_arg = -1;
    View go;
    Sink out;
};

struct ZeroNode {
    const acp_host_api *host = nullptr;
    int32_t arg = -1;
    View v;
};

struct Plan {
    std::vector<std::unique_ptr<DataNode>> data;
    std::vector<std::unique_ptr<PrepNode>> prep;
    std::vector<std::unique_ptr<WeightNode>> weight;
    std::vector<std::unique_ptr<KernelNode>> own;
    std::vector<std::unique_ptr<BiasNode>> bias;
    std::vector<std::unique_ptr<ZeroNode>> zero;
    std::vector<std::unique_ptr<SubsampleNode>> subsample;
};

acp_status run_data(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<DataNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        resolve(s->host, run, s->bufs, s->ptrs);
        if (s->sampled >= 0) {  // every element of every image is written by expand_image
            void *dst = s->out.own_dt != OutDt::F32 ? s->host->arg_data(run, s->out.arg) : s->out.address(s->host, run);
            const size_t image = static_cast<size_t>(s->strided.IC * s->strided.src_plane()) * out_size(s->out.own_dt);
            const bool stream = image * static_cast<size_t>(s->strided.N) >= kStreamBytes;
            s->pass->run(s->a.address(s->host, run), s->w.address(s->host, run),
                         static_cast<float *>(s->host->buffer_data(run, s->sampled)), OutDt::F32, s->ptrs.data(),
                         [&](int64_t n, const float *r) {
                             expand_image(r, static_cast<uint8_t *>(dst) + static_cast<size_t>(n) * image, s->out.own_dt, s->strided, stream);
                         },
                         s->prepared);
            s->out.finish(s->host, run);
            return acp_status{0};
        }
        float *out = s->out.address(s->host, run);
        if (s->zero_bytes) std::fill(out, out + s->zero_bytes / sizeof(float), 0.0f);
        const auto finish_forward = [&] {  // the bias and the kernel's rounding, then the output's
            if (s->bias.arg >= 0 || s->round_out != ACP_PREC_NATIVE)
                add_bias(out, s->bias.arg >= 0 ? static_cast<const float *>(s->bias.address(s->host, run)) : nullptr, s->n,
                         s->bias_c, s->plane, s->round_out);
            s->out.finish(s->host, run);
            return acp_status{0};
        };
        if (!s->pass) return finish_forward();  // Problem::unreachable's forward: the (zeroed) output plus the bias
        if (s->out.own_dt != OutDt::F32) {  // the pass rounds into the caller's tensor itself
            s->pass->run(s->a.address(s->host, run), s->w.address(s->host, run), s->host->arg_data(run, s->out.arg),
                         s->out.own_dt, s->ptrs.data(), {}, s->prepared);
            return acp_status{0};
        }
        if (s->out.round_to >= 0 && s->bias.arg < 0 && s->round_out == ACP_PREC_NATIVE) {  // round each image as soon as it is done
            auto *dst = static_cast<uint16_t *>(s->host->arg_data(run, s->out.arg));
            const int64_t img = s->pass->image_elems();
            s->pass->run(s->a.address(s->host, run), s->w.address(s->host, run), out, OutDt::F32, s->ptrs.data(),
                         [&](int64_t n, const float *r) { round_store_serial(r, dst + n * img, s->out.round_to, img); },
                         s->prepared);
            return acp_status{0};
        }
        s->pass->run(s->a.address(s->host, run), s->w.address(s->host, run), out, OutDt::F32, s->ptrs.data(), {}, s->prepared);
        return finish_forward();
    });
}

acp_status run_subsample(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<SubsampleNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        subsample(s->x.address(s->host, run), s->host->buffer_data(run, s->buffer), s->es, s->g);
        return acp_status{0};
    });
}

acp_status run_prep(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<PrepNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        resolve(s->host, run, s->data->bufs, s->ptrs);
        s->data->pass->prepare(s->data->a.address(s->host, run), s->ptrs.data());
        return acp_status{0};
    });
}

acp_status run_weight(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<WeightNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        resolve(s->host, run, s->bufs, s->ptrs);
        const void *shared = s->shared >= 0 ? s->host->buffer_data(run, s->shared) : nullptr;
        const void *pre_src = s->shared_is_ddst ? nullptr : shared, *pre_ddst = s->shared_is_ddst ? shared : nullptr;
        if (s->part == WeightNode::Part::Chunks) {
            s->pass->run_chunks(s->src.address(s->host, run), s->ddst.address(s->host, run), s->ptrs.data(), pre_src, pre_ddst, s->k0, s->k1);
            return acp_status{0};
        }
        const bool own = s->out.own_dt != OutDt::F32;  // the pass rounds into the caller's tensor itself
        void *out = own ? s->host->arg_data(run, s->out.arg) : static_cast<void *>(s->out.address(s->host, run));
        if (s->part == WeightNode::Part::Sum) s->pass->sum_chunks(out, s->out.own_dt, s->ptrs.data());
        else s->pass->run(s->src.address(s->host, run), s->ddst.address(s->host, run), out, s->out.own_dt, s->ptrs.data(), pre_src, pre_ddst);
        s->out.finish(s->host, run);
        return acp_status{0};
    });
}

acp_status run_kernel(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<KernelNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        const acp_host_api *h = s->host;
        s->compute(s->dy.address(h, run), s->other.address(h, run), s->out.address(h, run), h->buffer_data(run, s->scratch));
        s->out.finish(h, run);
        return acp_status{0};
    });
}

acp_status run_bias(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<BiasNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        bias_grad(s->host->arg_data(run, s->go_arg), s->go, s->out.address(s->host, run));
        s->out.finish(s->host, run);
        return acp_status{0};
    });
}

acp_status run_zero(void *p, const acp_run_ctx *run) {
    auto *s = static_cast<ZeroNode *>(p);
    return acp::guard_run(run, s->host, [&] {
        zero_view(s->host->arg_data(run, s->arg), s->v);
        return acp_status{0};
    });
}

int32_t add_node(const acp_plan_ctx *ctx, const char *name, acp_node_fn fn, void *data, std::vector<int32_t> deps) {
    std::vector<int32_t> d;
    for (const int32_t x : deps)
        if (x >= 0) d.push_back(x);
    const int32_t id = ctx->host->add_node(ctx->plan, name, fn, data, d.data(), static_cast<uint32_t>(d.size()));
    require(id >= 0, acp::kInner, "cannot add the node ", name);
    // the graph's shape at debug level ("node 3 conv_x after 0 1"): tests check which nodes are independent
    if (acp::log_enabled(ctx, ACP_LOG_DEBUG)) {
        std::string after;
        for (const int32_t x : d) after += cat(" ", x);
        acp::log(ctx, ACP_LOG_DEBUG, "node ", id, " ", name, " after", after.empty() ? " none" : after);
    }
    return id;
}

// "gradInput: oneDNN <implementation>[, by <n> channel blocks][, reused]": reused when the pass was
// built by an earlier plan (pass_cache.hpp).
template <class Pass>
void log_impl(const acp_plan_ctx *ctx, const char *what, const Pass &pass, bool reused) {
    if (!acp::log_enabled(ctx, ACP_LOG_DEBUG)) return;
    const int64_t blocks = pass.channel_blocks();
    acp::log(ctx, ACP_LOG_DEBUG, what, ": oneDNN ", pass.impl(), blocks > 0 ? cat(", by ", blocks, " channel blocks") : std::string(),
             reused ? ", reused" : "");
}

void hand_over(const acp_plan_ctx *ctx, std::unique_ptr<Plan> plan) {
    ctx->host->set_plan_state(ctx->plan, plan.release(), [](void *s) { delete static_cast<Plan *>(s); });
}

// Zeros into the selected gradients among `args` (12 gradInput, 13 gradWeight, 14 gradBias): the
// empty-tensor path's gradWeight and gradBias, an unreachable transposed problem's gradInput and gradWeight.
void plan_zeros(const acp_plan_ctx *ctx, const acp::Args &a, const Problem &p, Plan &plan,
                std::initializer_list<int32_t> args) {
    for (const int32_t arg : args) {
        if (!p.mask[arg - 12] || acp::numel(*a.tensor(static_cast<uint32_t>(arg))) == 0) continue;
        auto z = std::make_unique<ZeroNode>(ZeroNode{ctx->host, arg, view_of(*a.tensor(static_cast<uint32_t>(arg)))});
        static constexpr const char *kNames[3] = {"conv_zero_grad_input", "conv_zero_grad_weight", "conv_zero_grad_bias"};
        add_node(ctx, kNames[arg - 12], run_zero, z.get(), {});
        plan.zero.push_back(std::move(z));
    }
}

// The scheduling priority of the gradInput and gradWeight nodes; gradBias keeps the default 0. The
// gradients are the long nodes, the bias one short pass over gradOutput: started first, the
// gradients end sooner, and the bias runs beside their ends instead of slowing their starts
// (VGG-19's first layer at 2 threads: 15.3-16.0 -> 14.0-15.0 ms).
constexpr uint32_t kGradientPriority = 1;

// A gradient of one of our own kernels as an independent node: it waits only for its two operands.
void add_kernel_node(const acp_plan_ctx *ctx, Plan &plan, const char *name, Source dy, Source other, Sink out,
                     uint64_t scratch_bytes, KernelNode::Compute compute) {
    auto n = std::make_unique<KernelNode>();
    n->host = ctx->host;
    n->compute = std::move(compute);
    n->dy = dy;
    n->other = other;
    n->out = out;
    n->scratch = reserve(ctx, scratch_bytes);
    const int32_t id = add_node(ctx, name, run_kernel, n.get(), {dy.node, other.node});
    acp::set_node_priority(ctx, id, kGradientPriority);
    plan_store(ctx, n->out, id);
    plan.own.push_back(std::move(n));
}

}  // namespace

acp_status plan_backward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const Problem p = check_backward(a);
        auto plan = std::make_unique<Plan>();
        if (p.empty) {
            plan_zeros(ctx, a, p, *plan, {13, 14});
            hand_over(ctx, std::move(plan));
            return 0;
        }
        const acp_tensor_desc &go = *a.tensor(0), &in = *a.tensor(1), &w = *a.tensor(2);
        const Dt dt = engine_dt(in);
        Sources src{ctx, {}};
        if (p.unreachable) {
            ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "no gradOutput row is reached: gradInput and gradWeight are zero");
            plan_zeros(ctx, a, p, *plan, {12, 13});
        } else if (DepthwisePass::applies(p.g, p.transposed) && (p.mask[0] || p.mask[1])) {
            // One independent node per selected gradient, each transposing the blocks of gradOutput
            // (and input) it reads itself: no node waits for another. gradBias is the general node
            // below (a plain sum of the caller's NCHW gradOutput costs less than another transpose).
            auto pass = std::make_shared<const DepthwisePass>(p.g, dt, ctx->threads);
            ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "gradients: depthwise kernels, a node per gradient");
            const Source dy = src(0, go);
            if (p.mask[0]) {
                const acp_tensor_desc &o = *a.tensor(12);
                const bool bf16 = o.dtype == kBf16 && acp::is_contiguous(o);  // rounded by the kernel itself
                add_kernel_node(ctx, *plan, "conv_dw_grad_input", dy, src(2, w), bf16 ? Sink{12, -1, -1, 0} : plan_sink(ctx, 12, o),
                                pass->scratch_bytes(false), [pass, bf16](const void *g, const void *wt, float *out, void *scr) {
                                    pass->run(g, nullptr, wt, out, bf16, nullptr, scr);
                                });
            }
            if (p.mask[1])
                add_kernel_node(ctx, *plan, "conv_dw_grad_weight", dy, src(1, in), plan_sink(ctx, 13, *a.tensor(13)),
                                pass->scratch_bytes(true), [pass](const void *g, const void *x, float *out, void *scr) {
                                    pass->run(g, x, nullptr, nullptr, false, out, scr);
                                });
        } else if (SmallCinPass::applies(p.g, p.transposed, dt) && (p.mask[0] || p.mask[1])) {
            // ---- small-Cin 3x3 stride 1 pad 1 (VGG's first layer): our kernels, a node per gradient
            auto pass = std::make_shared<const SmallCinPass>(p.g, dt, ctx->threads);
            ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "gradients: small-Cin 3x3 kernels, a node per gradient");
            const Source dy = src(0, go);
            if (p.mask[0])
                add_kernel_node(ctx, *plan, "conv_small_cin_grad_input", dy, src(2, w), plan_sink(ctx, 12, *a.tensor(12)),
                                pass->scratch_bytes(false), [pass](const void *g, const void *wt, float *out, void *scr) {
                                    pass->run_input(g, wt, out, scr);
                                });
            if (p.mask[1])
                add_kernel_node(ctx, *plan, "conv_small_cin_grad_weight", dy, src(1, in), plan_sink(ctx, 13, *a.tensor(13)),
                                pass->scratch_bytes(true), [pass](const void *g, const void *x, float *out, void *scr) {
                                    pass->run_weight(g, x, out, scr);
                                });
        } else {
            // dInput: bwd_data (plain) or forward (transposed) of gradOutput with weight;
            // dWeight: bwd_weights with src/diff_dst = input/gradOutput (swapped when transposed).
            // When both run and read gradOutput in the same blocked layout, one prepare node makes
            // that copy for both.
            // A strided pointwise convolution runs as the unit-stride one over its sampled positions.
            std::unique_ptr<DataNode> dn;
            std::unique_ptr<WeightNode> wn;
            const bool sampled = is_strided_pointwise(p.g, p.transposed);
            const Geometry g = sampled ? sampled_geometry(p.g) : p.g;
            if (sampled) ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "strided pointwise: the unit-stride convolution of the sampled positions");
            if (p.mask[0]) {
                dn = std::make_unique<DataNode>();
                dn->host = ctx->host;
                bool reused = false;
                dn->pass = lend_data_pass(g, p.transposed ? DataPass::Kind::Forward : DataPass::Kind::BackwardData, dt,
                                          ctx->threads, &reused);
                log_impl(ctx, "gradInput", *dn->pass, reused);
                if (dn->pass->mirrored())
                    ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "gradInput: the forward of the mirrored convolution (flipped, swapped weights)");
                dn->a = src(0, go);
                dn->w = src(2, w);
                // sampled: the expansion rounds into a dense FLOAT16 / BF16 gradInput itself
                dn->out = plan_sink(ctx, 12, *a.tensor(12), false, sampled || dn->pass->rounds_output());
                dn->bufs = reserve_all(ctx, dn->pass->buffers());
                if (sampled) {
                    dn->sampled = reserve(ctx, static_cast<uint64_t>(g.N * g.IC * g.src_plane()) * sizeof(float));
                    dn->strided = p.g;
                }
            }
            if (p.mask[1]) {
                wn = std::make_unique<WeightNode>();
                wn->host = ctx->host;
                bool reused = false;
                wn->pass = lend_weight_pass(g, dt, ctx->threads, &reused);
                log_impl(ctx, "gradWeight", *wn->pass, reused);
                wn->shared_is_ddst = !p.transposed;  // gradOutput's role in the weight pass
                if (dn && dn->pass->blocks_operand() && wn->pass->can_share(*dn->pass, wn->shared_is_ddst)) {
                    wn->shared = dn->bufs[DataPass::kBlockedOperandBuffer];
                    dn->prepared = true;
                    ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "gradOutput blocked once for gradInput and gradWeight");
                }
                Source x = src(1, in);
                const Source y = src(0, go);
                if (sampled) {
                    auto sn = std::make_unique<SubsampleNode>();
                    sn->host = ctx->host;
                    sn->x = x;
                    sn->es = dt == Dt::BF16 ? 2 : 4;
                    sn->g = p.g;
                    sn->buffer = reserve(ctx, static_cast<uint64_t>(g.N * g.IC * g.src_plane()) * sn->es);
                    x = Source{-1, sn->buffer, add_node(ctx, "conv_subsample_input", run_subsample, sn.get(), {x.node})};
                    plan->subsample.push_back(std::move(sn));
                }
                wn->src = p.transposed ? y : x;
                wn->ddst = p.transposed ? x : y;
                wn->out = plan_sink(ctx, 13, *a.tensor(13), false, wn->pass->rounds_output());
                wn->bufs = reserve_all(ctx, wn->shared >= 0 ? wn->pass->buffers_sharing(wn->shared_is_ddst) : wn->pass->buffers());
            }
            int32_t prep = -1;
            if (dn && dn->prepared) {
                auto pn = std::make_unique<PrepNode>(PrepNode{ctx->host, dn.get(), {}});
                prep = add_node(ctx, "conv_block_grad_output", run_prep, pn.get(), {dn->a.node});
                plan->prep.push_back(std::move(pn));
            }
            if (dn) {
                const int32_t id = add_node(ctx, "conv_grad_input", run_data, dn.get(), {dn->a.node, dn->w.node, prep});
                acp::set_node_priority(ctx, id, kGradientPriority);
                plan_store(ctx, dn->out, id);
                plan->data.push_back(std::move(dn));
            }
            if (wn) {
                const std::vector<int32_t> deps = {wn->src.node, wn->ddst.node, prep};
                int32_t id = -1;
                const int64_t chunks = wn->pass->chunks();
                if (p.mask[0] && chunks >= 2 && ctx->threads >= 2 && dt == Dt::BF16 && cpu_has_amx_bf16()) {
                    // BF16 on AMX: gradWeight's minibatch halves as two nodes ahead of gradInput
                    // (a higher priority), then the sum of their partials. The threads take the
                    // halves first and then share gradInput's images; one node each left a
                    // thread idle at the end (gradWeight's last chunk after gradInput: VGG-19's
                    // 256ih28 layer about 4 ms). The same chunks and sum: the same bits. An Intel
                    // Xeon, 2 threads, medians of three alternations: VGG-19 256ih28 18.4-19.7 ->
                    // 17.0-17.3 ms, 128ih56 19.0-23.4 -> 17.0-17.3, 64ih112 29.9-36.8 -> 28.9-29.5;
                    // FLOAT, whose kernels take finer tasks, lost up to 10 % so (ResNet-50's 2048ih7
                    // pointwise layer) and keeps one node.
                    std::vector<int32_t> halves;
                    for (const auto &[k0, k1] : {std::pair{int64_t{0}, chunks / 2}, std::pair{chunks / 2, chunks}}) {
                        auto h = std::make_unique<WeightNode>(*wn);
                        h->part = WeightNode::Part::Chunks, h->k0 = k0, h->k1 = k1;
                        halves.push_back(add_node(ctx, "conv_grad_weight_chunks", run_weight, h.get(), deps));
                        acp::set_node_priority(ctx, halves.back(), kGradientPriority + 1);
                        plan->weight.push_back(std::move(h));
                    }
                    wn->part = WeightNode::Part::Sum;
                    id = add_node(ctx, "conv_grad_weight", run_weight, wn.get(), halves);
                } else {
                    id = add_node(ctx, "conv_grad_weight", run_weight, wn.get(), deps);
                }
                acp::set_node_priority(ctx, id, kGradientPriority);
                plan_store(ctx, wn->out, id);
                plan->weight.push_back(std::move(wn));
            }
        }
        if (p.mask[2]) {  // dBias: per-channel sum of the caller's gradOutput
            auto n = std::make_unique<BiasNode>(BiasNode{ctx->host, 0, view_of(go), plan_sink(ctx, 14, *a.tensor(14))});
            const int32_t id = add_node(ctx, "conv_grad_bias", run_bias, n.get(), {});
            plan_store(ctx, n->out, id);
            plan->bias.push_back(std::move(n));
        }
        hand_over(ctx, std::move(plan));
        return 0;
    });
}

acp_status plan_forward(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const Problem p = check_forward(a);
        if (p.empty) return 0;
        const acp_tensor_desc &in = *a.tensor(0), &w = *a.tensor(1), &out = *a.tensor(9);
        auto plan = std::make_unique<Plan>();
        auto n = std::make_unique<DataNode>();
        n->host = ctx->host;
        if (p.unreachable) {  // no pass: the output is the bias alone (or zero)
            ctx->host->log(ctx->plan, ACP_LOG_DEBUG, "no output row is reached: the output is the bias");
        } else {
            // plain: dst = fwd(input); transposed: output = bwd_data(input) of the mirrored convolution
            bool reused = false;
            // the engine computes BF16 or FLOAT (FLOAT16 as FLOAT, its operands rounded to FLOAT16)
            const int32_t engine = p.cube_dt == kBf16 ? kBf16 : kFloat;
            const int32_t precision = p.cube_dt == kFloat16 ? ACP_PREC_FP16 : ctx->precision;
            n->pass = lend_data_pass(p.g, p.transposed ? DataPass::Kind::BackwardData : DataPass::Kind::Forward,
                                     engine == kBf16 ? Dt::BF16 : Dt::F32, ctx->threads, &reused);
            log_impl(ctx, "output", *n->pass, reused);
            n->a = plan_source(ctx, 0, in, engine, precision);
            n->w = plan_source(ctx, 1, w, engine, precision);
        }
        if (p.kernel_out_dt != out.dtype && p.kernel_out_dt != kFloat)
            n->round_out = p.kernel_out_dt == kBf16 ? ACP_PREC_BF16 : ACP_PREC_FP16;
        n->out = plan_sink(ctx, 9, out, /*force_buffer=*/true);
        if (p.transposed && p.g.src_used != p.g.src) n->zero_bytes = static_cast<uint64_t>(acp::numel(out)) * sizeof(float);
        n->n = out.dims[0];
        n->bias_c = out.dims[1];
        n->plane = acp::numel(out) / (out.dims[0] * out.dims[1]);
        std::vector<int32_t> deps{n->a.node, n->w.node};
        if (a.present(2)) {  // the bias, as FLOAT: rounded to FLOAT16 first where CANN casts it so (Problem::bias_fp16)
            const acp_tensor_desc &b = *a.tensor(2);
            n->bias.arg = 2;
            n->bias.buffer = reserve(ctx, static_cast<uint64_t>(acp::numel(b)) * sizeof(float));
            n->bias.node = ctx->host->add_convert(ctx->plan, 2, n->bias.buffer, kFloat, p.bias_fp16 ? ACP_PREC_FP16 : ACP_PREC_NATIVE,
                                                  nullptr, 0);
            require(n->bias.node >= 0, acp::kInner, "cannot plan the conversion of the bias");
            deps.push_back(n->bias.node);
        }
        if (n->pass) n->bufs = reserve_all(ctx, n->pass->buffers());
        const int32_t id = add_node(ctx, "conv_forward", run_data, n.get(), deps);
        plan_store(ctx, n->out, id);
        plan->data.push_back(std::move(n));
        hand_over(ctx, std::move(plan));
        return 0;
    });
}

}  // namespace conv
