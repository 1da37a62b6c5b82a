// The plugin: shape checks in plan(), one kernel node. Views are handled by the core's
// conversion nodes so the kernel sees dense FLOAT buffers.
#include <memory>

#include "aclnn_cpu/plugin.hpp"

namespace {

struct State {
    const acp_host_api *host;
    int32_t self_buf, other_buf, out_buf;
    int64_t n;
    float alpha;
};

acp_status run(void *data, const acp_run_ctx *run) {
    const auto *s = static_cast<const State *>(data);
    const auto *a = static_cast<const float *>(s->host->buffer_data(run, s->self_buf));
    const auto *b = static_cast<const float *>(s->host->buffer_data(run, s->other_buf));
    auto *o = static_cast<float *>(s->host->buffer_data(run, s->out_buf));
    for (int64_t i = 0; i < s->n; ++i) o[i] = s->alpha * a[i] + b[i];
    return 0;
}

acp_status plan(const acp_plan_ctx *ctx) noexcept {
    return acp::guard(ctx, [&]() -> acp_status {
        const acp::Args a{ctx};
        const acp_tensor_desc &self = *a.tensor(0), &other = *a.tensor(1), &out = *a.tensor(3);
        acp::require(acp::dims_of(self) == acp::dims_of(other) && acp::dims_of(self) == acp::dims_of(out), acp::kInvalid,
                     "self ", acp::shape_str(self), ", other ", acp::shape_str(other), " and out ",
                     acp::shape_str(out), " must have the same shape");
        const int64_t n = acp::numel(self);
        if (n == 0) return 0;
        const acp_host_api *h = ctx->host;
        auto s = std::make_unique<State>(State{h, h->add_buffer(ctx->plan, n * 4), h->add_buffer(ctx->plan, n * 4),
                                               h->add_buffer(ctx->plan, n * 4), n, static_cast<float>(a.real(2))});
        const int32_t in[2] = {h->add_convert(ctx->plan, 0, s->self_buf, 0, ACP_PREC_NATIVE, nullptr, 0),
                               h->add_convert(ctx->plan, 1, s->other_buf, 0, ACP_PREC_NATIVE, nullptr, 0)};
        const int32_t k = h->add_node(ctx->plan, "scaled_add", run, s.get(), in, 2);
        h->add_store(ctx->plan, s->out_buf, 0, 3, &k, 1);
        h->set_plan_state(ctx->plan, s.release(), [](void *p) { delete static_cast<State *>(p); });
        return 0;
    });
}

const acp_op kOps[] = {{sizeof(acp_op), "ScaledAdd", plan}};
const acp_plugin kPlugin = {sizeof(acp_plugin), ACP_ABI_MAJOR, ACP_ABI_MINOR, "scaled_add", "0.1.0",
                            "Example third-party operator", 1, kOps, nullptr, {}};

}  // namespace

extern "C" ACP_EXPORT const acp_plugin *aclnn_cpu_plugin(void) { return &kPlugin; }
