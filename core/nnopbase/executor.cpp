#include "executor.hpp"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "../runtime/log.hpp"
#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "aclnn_cpu/plugin.hpp"

namespace aclcpu {

[[noreturn]] void fail(int32_t code, std::string message) { throw CallError{code, std::move(message)}; }

namespace {

thread_local int32_t t_current_node = -1;  // the node whose body runs on this thread

// ---- the host API handed to plugins ----

aclOpExecutor &plan_of(void *plan) { return *static_cast<aclOpExecutor *>(plan); }

acp_status host_reject(void *plan, acp_status code, const char *message) {
    auto &e = plan_of(plan);
    if (e.reject_code == 0) {  // the first reason wins
        e.reject_code = code ? code : ACLNN_ERR_INNER;
        e.reject_message = message ? message : "rejected";
    }
    return e.reject_code;
}

int32_t host_add_buffer(void *plan, uint64_t bytes) {
    auto &e = plan_of(plan);
    const uint64_t offset = (e.workspace_size + 63) / 64 * 64;
    e.buffer_offsets.push_back(offset);
    e.workspace_size = offset + bytes;
    return static_cast<int32_t>(e.buffer_offsets.size() - 1);
}

int32_t host_add_node(void *plan, const char *name, acp_node_fn fn, void *data, const int32_t *deps, uint32_t n) {
    return add_node(plan_of(plan), name, fn, data, deps, n);
}

int32_t host_add_convert(void *plan, int32_t src_arg, int32_t dst_buffer, int32_t dst_dtype, int32_t precision,
                         const int32_t *deps, uint32_t n) {
    return add_convert_node(plan_of(plan), src_arg, dst_buffer, dst_dtype, precision, deps, n);
}

int32_t host_add_store(void *plan, int32_t src_buffer, int32_t src_dtype, int32_t dst_arg, const int32_t *deps,
                       uint32_t n) {
    return add_store_node(plan_of(plan), src_buffer, src_dtype, dst_arg, deps, n);
}

void host_set_plan_state(void *plan, void *state, void (*destroy)(void *)) {
    auto &e = plan_of(plan);
    if (e.destroy_plan_state && e.plan_state) e.destroy_plan_state(e.plan_state);
    e.plan_state = state;
    e.destroy_plan_state = destroy;
}

LogLevel plugin_level(int32_t level) { return static_cast<LogLevel>(level < 0 ? 0 : level > 3 ? 3 : level); }

void host_log(void *plan, int32_t level, const char *message) {
    const auto l = plugin_level(level);
    if (log_enabled(l)) log(l, "aclnn" + plan_of(plan).op_name + ": " + (message ? message : ""));
}

int32_t host_log_enabled(void *, int32_t level) { return log_enabled(plugin_level(level)) ? 1 : 0; }

void *host_arg_data(const acp_run_ctx *run, int32_t arg) {
    if (!run || arg < 0 || static_cast<size_t>(arg) >= run->arg_data.size()) return nullptr;
    return run->arg_data[static_cast<size_t>(arg)];
}

void *host_buffer_data(const acp_run_ctx *run, int32_t buffer) {
    if (!run || buffer < 0 || static_cast<size_t>(buffer) >= run->exec->buffer_offsets.size()) return nullptr;
    return run->workspace + run->exec->buffer_offsets[static_cast<size_t>(buffer)];
}

acp_status host_fail(const acp_run_ctx *run, acp_status code, const char *message) {
    auto *r = const_cast<acp_run_ctx *>(run);
    std::lock_guard<std::mutex> lock(r->failure_mutex);
    // Deterministic report: the failing node with the lowest id wins, whatever the scheduling.
    if (r->failed_node < 0 || t_current_node < r->failed_node) {
        r->failed_node = t_current_node < 0 ? 0 : t_current_node;
        r->failure_code = code ? code : ACLNN_ERR_RUNTIME_ERROR;
        r->failure_message = message ? message : "failed";
    }
    return code;
}

int32_t host_set_node_priority(void *plan, int32_t node, uint32_t priority) {
    auto &e = plan_of(plan);
    if (node < 0 || static_cast<size_t>(node) >= e.nodes.size()) return -1;
    e.nodes[static_cast<size_t>(node)].priority = priority;
    if (log_enabled(LogLevel::Debug))
        log(LogLevel::Debug, "aclnn" + e.op_name + ": node " + std::to_string(node) + " priority " + std::to_string(priority));
    return 0;
}

const acp_host_api kHostApi = {
    sizeof(acp_host_api), ACP_ABI_MINOR, host_reject, host_add_buffer, host_add_node, host_add_convert,
    host_add_store, host_set_plan_state, host_log, host_arg_data, host_buffer_data, host_fail,
    host_set_node_priority,  // ABI 1.1
    host_log_enabled,        // ABI 1.2
};

// ---- executor handles ----
// Callers hold handles, not object addresses: slot index plus a generation that changes when the
// executor dies, so a consumed or destroyed handle never finds a newer executor at a reused address.
// Each caller that resolves a handle shares ownership, so an executor destroyed or consumed on one
// thread lives until a call using it on another thread returns.
struct Slot {
    std::shared_ptr<aclOpExecutor> exec;
    uint32_t generation = 1;
};
std::mutex g_handle_mutex;
std::vector<Slot> &slots() {
    static auto *s = new std::vector<Slot>;
    return *s;
}
std::vector<uint32_t> &free_slots() {
    static auto *f = new std::vector<uint32_t>;
    return *f;
}
bool decode(const aclOpExecutor *handle, uint32_t &slot, uint32_t &generation) {
    const auto v = reinterpret_cast<uintptr_t>(handle);
    const auto index = static_cast<uint32_t>(v & 0xffffffffu);
    generation = static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32);
    if (index == 0) return false;
    slot = index - 1;
    return true;
}

}  // namespace

const acp_host_api *host_api() { return &kHostApi; }

int32_t add_node(aclOpExecutor &exec, const char *name, acp_node_fn fn, void *data, const int32_t *deps, uint32_t n) {
    if (!fn) return -1;
    NodeSpec s;
    s.name = name ? name : "node";
    s.fn = fn;
    s.data = data;
    for (uint32_t i = 0; i < n; ++i) {
        if (!deps || deps[i] < 0 || static_cast<size_t>(deps[i]) >= exec.nodes.size()) return -1;  // only earlier nodes
        s.deps.push_back(deps[i]);
    }
    exec.nodes.push_back(std::move(s));
    return static_cast<int32_t>(exec.nodes.size() - 1);
}

std::unique_ptr<aclOpExecutor> snapshot_call(const std::shared_ptr<const RuntimeState> &state, const OpEntry &entry,
                                             const aclnnCpuCallArg *call) {
    auto exec = std::make_unique<aclOpExecutor>();
    const OpManifest &op = *entry.manifest;
    exec->op_name = op.name;
    exec->state = state;
    exec->plugin = entry.plugin;
    exec->manifest = &op;
    const size_t n = op.params.size();
    exec->args.resize(n);
    exec->run_arg_data.assign(n, nullptr);
    exec->tensors.assign(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
        const Param &p = op.params[i];
        acp_arg &a = exec->args[i];
        a.struct_size = sizeof(acp_arg);
        a.name = p.name.c_str();
        a.kind = call[i].kind;
        a.present = p.is_pointer() ? call[i].ptr != nullptr && selected(op, p, call) : 1;
        a.is_output = p.output;
        switch (p.type) {
            case ParamType::Tensor: {
                a.kind = ACP_ARG_TENSOR;
                if (!a.present) break;
                auto *t = const_cast<aclTensor *>(static_cast<const aclTensor *>(call[i].ptr));
                auto snap = std::make_unique<ArgSnapshot>();
                snap->dims = t->dims;
                snap->strides = t->strides;
                snap->storage_dims = t->storage_dims;
                acp_tensor_desc &d = snap->desc;
                d.struct_size = sizeof(acp_tensor_desc);
                d.dtype = t->dtype;
                d.format = t->format;
                d.rank = static_cast<uint32_t>(t->dims.size());
                d.dims = snap->dims.data();
                d.strides = snap->strides.data();
                d.offset = t->offset;
                d.storage_rank = static_cast<uint32_t>(t->storage_dims.size());
                d.storage_dims = snap->storage_dims.data();
                a.tensor = &snap->desc;
                exec->snapshots.push_back(std::move(snap));
                exec->tensors[i] = t;
                break;
            }
            case ParamType::IntArray: {
                a.kind = ACP_ARG_INT_ARRAY;
                if (!a.present) break;
                const auto *v = static_cast<const aclIntArray *>(call[i].ptr);
                auto snap = std::make_unique<ArgSnapshot>();
                snap->dims = v->values;  // arrays are copied: the caller may free them after phase 1
                a.ints = snap->dims.data();
                a.count = snap->dims.size();
                exec->snapshots.push_back(std::move(snap));
                break;
            }
            case ParamType::BoolArray: {
                a.kind = ACP_ARG_BOOL_ARRAY;
                if (!a.present) break;
                const auto *v = static_cast<const aclBoolArray *>(call[i].ptr);
                auto snap = std::make_unique<ArgSnapshot>();
                snap->bools = v->values;
                a.bools = snap->bools.data();
                a.count = v->values.size();
                exec->snapshots.push_back(std::move(snap));
                break;
            }
            case ParamType::FloatArray: {
                a.kind = ACP_ARG_FLOAT_ARRAY;
                if (!a.present) break;
                const auto *v = static_cast<const aclFloatArray *>(call[i].ptr);
                auto snap = std::make_unique<ArgSnapshot>();
                snap->floats = v->values;
                a.floats = snap->floats.data();
                a.count = v->values.size();
                exec->snapshots.push_back(std::move(snap));
                break;
            }
            case ParamType::Scalar: {
                a.kind = ACP_ARG_SCALAR;
                if (!a.present) break;
                const auto *s = static_cast<const aclScalar *>(call[i].ptr);
                a.f = s->value;
                a.scalar_dtype = s->dtype;
                break;
            }
            case ParamType::Bool: a.kind = ACP_ARG_BOOL; a.i = call[i].i ? 1 : 0; break;
            case ParamType::Float: case ParamType::Double: a.kind = ACP_ARG_FLOAT; a.f = call[i].f; break;
            default: a.kind = ACP_ARG_INT; a.i = call[i].i; break;
        }
        if (p.type == ParamType::Tensor && a.present) (p.output ? exec->outputs : exec->inputs).push_back(static_cast<int>(i));
    }
    return exec;
}

void plan_with_plugin(aclOpExecutor &exec, const OpEntry &entry) {
    acp_plan_ctx ctx{};
    ctx.struct_size = sizeof ctx;
    ctx.plan = &exec;
    ctx.host = &kHostApi;
    ctx.op_name = exec.op_name.c_str();
    ctx.product_id = exec.state->product.id.c_str();
    ctx.product_name = exec.state->product.name.c_str();
    ctx.precision = exec.precision;
    ctx.threads = exec.state->threads;
    ctx.args = exec.args.data();
    ctx.n_args = static_cast<uint32_t>(exec.args.size());
    const acp_status st = entry.op->plan(&ctx);
    if (st != 0 || exec.reject_code != 0) {
        const int32_t code = exec.reject_code ? exec.reject_code : st;
        fail(code, exec.reject_message.empty() ? "the plugin rejected the call with status " + std::to_string(st)
                                               : exec.reject_message);
    }
    if (log_enabled(LogLevel::Debug))
        log(LogLevel::Debug, "aclnn" + exec.op_name + ": planned by plugin " + entry.plugin->manifest.plugin + " (" +
                                 entry.plugin->library_path + "), " + std::to_string(exec.nodes.size()) + " nodes, workspace " +
                                 std::to_string(exec.workspace_size) + " bytes");
}

void build_graph(aclOpExecutor &exec) {
    if (exec.nodes.empty()) return;
    exec.state->arena->execute([&] {
        using namespace tbb::flow;
        exec.graph = std::make_unique<graph>();
        exec.start = std::make_unique<broadcast_node<continue_msg>>(*exec.graph);
        // A node's priority is the highest of its own and those of the nodes waiting for it (deps
        // are earlier nodes, so one backward sweep): the work a long node needs starts early too.
        std::vector<uint32_t> priority(exec.nodes.size());
        for (size_t i = exec.nodes.size(); i-- > 0;) {
            priority[i] = std::max(priority[i], exec.nodes[i].priority);
            for (int32_t d : exec.nodes[i].deps) {
                uint32_t &p = priority[static_cast<size_t>(d)];
                p = std::max(p, priority[i]);
            }
        }
        for (size_t i = 0; i < exec.nodes.size(); ++i) {
            aclOpExecutor *e = &exec;
            const auto id = static_cast<int32_t>(i);
            exec.graph_nodes.push_back(std::make_unique<continue_node<continue_msg>>(
                *exec.graph, [e, id](const continue_msg &) {
                    acp_run_ctx *run = e->current_run;
                    {
                        std::lock_guard<std::mutex> lock(run->failure_mutex);
                        if (run->failed_node >= 0) return continue_msg();  // a node already failed: skip the rest
                    }
                    const NodeSpec &n = e->nodes[static_cast<size_t>(id)];
                    // Saved, not reset to -1: a body that waits (a kernel's parallel_for) may run another
                    // node's body on this thread meanwhile, and its failures must still name this node.
                    const int32_t outer = t_current_node;
                    t_current_node = id;
                    const auto since = [run] {
                        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - run->started).count();
                    };
                    const int64_t begin = run->times.empty() ? 0 : since();
                    const acp_status st = n.fn(n.data, run);
                    if (!run->times.empty())
                        run->times[static_cast<size_t>(id)] = {begin, since(), tbb::this_task_arena::current_thread_index()};
                    if (st != 0) host_fail(run, st, ("node '" + n.name + "' failed").c_str());
                    t_current_node = outer;
                    return continue_msg();
                },
                node_priority_t(priority[i])));
            const auto &deps = exec.nodes[i].deps;
            if (deps.empty()) make_edge(*exec.start, *exec.graph_nodes.back());
            for (int32_t d : deps) make_edge(*exec.graph_nodes[static_cast<size_t>(d)], *exec.graph_nodes.back());
        }
    });
}

namespace {

std::string ms(int64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) * 1e-6);
    return b;
}

// One line per node in the order they began (then those that did not run), and the run's total:
// what ran when, for how long, on which arena thread.
void report_timeline(aclOpExecutor &exec, const acp_run_ctx &run) {
    const int64_t wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - run.started).count();
    std::vector<size_t> order(exec.nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int64_t x = run.times[a].begin, y = run.times[b].begin;
        return x >= 0 && (y < 0 || x < y);
    });
    const std::string head = "aclnn" + exec.op_name + " run " + std::to_string(++exec.timed_runs) + ": ";
    std::vector<std::string> lines;
    int64_t busy = 0;
    for (size_t i : order) {
        const auto &t = run.times[i];
        if (t.begin < 0) {
            lines.push_back(head + exec.nodes[i].name + " did not run");
            continue;
        }
        busy += t.end - t.begin;
        lines.push_back(head + exec.nodes[i].name + " at " + ms(t.begin) + " took " + ms(t.end - t.begin) + " on thread " +
                        std::to_string(t.thread));
    }
    lines.push_back(head + std::to_string(exec.nodes.size()) + " nodes in " + ms(wall) + " (their times add up to " +
                    ms(busy) + ", " + std::to_string(exec.state->threads) + " threads)");
    log_timeline(lines);
}

}  // namespace

uint8_t *element0(const aclOpExecutor &exec, size_t arg) {
    const aclTensor *t = exec.tensors[arg];
    if (!t || !t->data) return nullptr;
    return static_cast<uint8_t *>(t->data) +
           exec.args[arg].tensor->offset * static_cast<int64_t>(acp::dtype_size(exec.args[arg].tensor->dtype));
}

int32_t run_executor(aclOpExecutor &exec, void *workspace, uint64_t workspace_size) {
    if (workspace_size < exec.workspace_size)
        fail(ACLNN_ERR_PARAM_INVALID, "workspaceSize " + std::to_string(workspace_size) + " is smaller than the " +
                                          std::to_string(exec.workspace_size) + " bytes phase 1 asked for");
    if (exec.workspace_size > 0 && !workspace)
        fail(ACLNN_ERR_PARAM_INVALID, "workspace is NULL but phase 1 asked for " + std::to_string(exec.workspace_size) + " bytes");
    // The plan's buffers sit at 64-byte offsets from the workspace and hold FLOAT, double and int64
    // elements: a base off malloc's alignment (aclrtMalloc gives 64) would make their reads misaligned.
    constexpr uintptr_t kAlign = alignof(std::max_align_t);
    if (exec.workspace_size > 0 && reinterpret_cast<uintptr_t>(workspace) % kAlign != 0)
        fail(ACLNN_ERR_PARAM_INVALID, "workspace must be aligned to " + std::to_string(kAlign) + " bytes (as aclrtMalloc and malloc give), got an address " +
                                          std::to_string(reinterpret_cast<uintptr_t>(workspace) % kAlign) + " bytes past a boundary");
    std::lock_guard<std::mutex> lock(exec.run_mutex);
    acp_run_ctx run;
    run.exec = &exec;
    run.workspace = static_cast<uint8_t *>(workspace);
    run.arg_data = exec.run_arg_data;
    for (size_t i = 0; i < exec.args.size(); ++i) {
        run.arg_data[i] = element0(exec, i);
        if (!run.arg_data[i] && exec.tensors[i] && acp::numel(*exec.args[i].tensor) > 0)
            fail(ACLNN_ERR_PARAM_NULLPTR, std::string(exec.args[i].name) + " has no data address (NULL) at run time");
    }
    check_outputs_apart(exec, run.arg_data);
    if (exec.nodes.empty()) return ACLNN_SUCCESS;
    const InputCopies copies = copy_inputs_outputs_overlap(exec, run.arg_data);
    exec.current_run = &run;
    if (exec.state->timeline) run.times.resize(exec.nodes.size());
    run.started = std::chrono::steady_clock::now();
    exec.state->arena->execute([&] {
        exec.start->try_put(tbb::flow::continue_msg());
        exec.graph->wait_for_all();
    });
    exec.current_run = nullptr;
    if (exec.state->timeline) report_timeline(exec, run);
    if (run.failed_node >= 0) fail(run.failure_code, run.failure_message);
    return ACLNN_SUCCESS;
}

aclOpExecutor *register_executor(std::unique_ptr<aclOpExecutor> exec) {
    std::lock_guard<std::mutex> lock(g_handle_mutex);
    uint32_t slot;
    if (!free_slots().empty()) {
        slot = free_slots().back();
        free_slots().pop_back();
    } else {
        slot = static_cast<uint32_t>(slots().size());
        slots().push_back({});
    }
    slots()[slot].exec = std::move(exec);
    const uint64_t handle = (static_cast<uint64_t>(slots()[slot].generation) << 32) | (slot + 1u);
    return reinterpret_cast<aclOpExecutor *>(static_cast<uintptr_t>(handle));
}

namespace {
// The slot a live handle names (the caller holds g_handle_mutex), or nullptr.
Slot *live_slot(const aclOpExecutor *handle) {
    uint32_t slot, generation;
    if (!decode(handle, slot, generation) || slot >= slots().size() || slots()[slot].generation != generation) return nullptr;
    return &slots()[slot];
}
std::shared_ptr<aclOpExecutor> retire(Slot &s) {
    const auto slot = static_cast<uint32_t>(&s - slots().data());
    auto exec = std::move(s.exec);
    s = {nullptr, s.generation + 1 == 0 ? 1u : s.generation + 1};
    free_slots().push_back(slot);
    return exec;
}
}  // namespace

std::shared_ptr<aclOpExecutor> resolve_executor(const aclOpExecutor *handle) {
    std::lock_guard<std::mutex> lock(g_handle_mutex);
    Slot *s = live_slot(handle);
    return s ? s->exec : nullptr;
}

std::shared_ptr<aclOpExecutor> claim_for_run(const aclOpExecutor *handle) {
    std::lock_guard<std::mutex> lock(g_handle_mutex);
    Slot *s = live_slot(handle);
    if (!s) return nullptr;
    return s->exec->repeatable ? s->exec : retire(*s);
}

void destroy_executor(const aclOpExecutor *handle) {
    std::shared_ptr<aclOpExecutor> exec;  // released after the lock: its destructor waits for its graph
    std::lock_guard<std::mutex> lock(g_handle_mutex);
    if (Slot *s = live_slot(handle)) exec = retire(*s);
}

}  // namespace aclcpu

aclOpExecutor::~aclOpExecutor() {
    if (graph) graph->wait_for_all();
    graph_nodes.clear();
    start.reset();
    graph.reset();
    if (destroy_plan_state && plan_state) destroy_plan_state(plan_state);
}
