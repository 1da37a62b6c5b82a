// aclOpExecutor: a planned call. Phase 1 snapshots the arguments, lets the plugin add workspace
// buffers and kernel nodes, and wires the nodes into a TBB flow graph; phase 2 binds the workspace
// and current tensor addresses and fires the graph inside the runtime's task arena.
#pragma once

#include <tbb/flow_graph.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "../runtime/context.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "aclnn_cpu/plugin_abi.h"
#include "objects.hpp"
#include "registry/registry.hpp"

namespace aclcpu {

// A check failed: status plus the one-line reason (without the operator prefix).
struct CallError {
    int32_t code;
    std::string message;
};
[[noreturn]] void fail(int32_t code, std::string message);

// The stable storage behind one acp_arg.
struct ArgSnapshot {
    acp_tensor_desc desc{};
    std::vector<int64_t> dims, strides, storage_dims;  // tensors; int arrays use dims
    std::vector<uint8_t> bools;
    std::vector<float> floats;
};

struct NodeSpec {
    std::string name;
    acp_node_fn fn = nullptr;
    void *data = nullptr;
    std::vector<int32_t> deps;
    uint32_t priority = 0;  // set_node_priority's hint (build_graph passes it on to the deps)
};

// Node data of the core's own nodes (conversion and store), owned by the executor.
struct CoreNodeData {
    virtual ~CoreNodeData() = default;
};

}  // namespace aclcpu

struct aclOpExecutor {
    std::string op_name;
    std::shared_ptr<const aclcpu::RuntimeState> state;
    std::shared_ptr<const aclcpu::LoadedPlugin> plugin;  // keeps the library loaded while we live
    const aclcpu::OpManifest *manifest = nullptr;

    std::vector<std::unique_ptr<aclcpu::ArgSnapshot>> snapshots;
    std::vector<acp_arg> args;
    std::vector<aclTensor *> tensors;  // per argument: the caller's tensor (addresses are read at run time)
    std::vector<int> inputs, outputs;  // argument indices of input / output tensors, signature order
    int32_t precision = ACP_PREC_NATIVE;

    std::vector<uint64_t> buffer_offsets;
    uint64_t workspace_size = 0;
    std::vector<aclcpu::NodeSpec> nodes;
    std::vector<std::unique_ptr<aclcpu::CoreNodeData>> core_node_data;
    void *plan_state = nullptr;
    void (*destroy_plan_state)(void *) = nullptr;

    int32_t reject_code = 0;  // what the plugin's plan() rejected with
    std::string reject_message;

    std::atomic<bool> repeatable{false};
    std::unique_ptr<tbb::flow::graph> graph;
    std::unique_ptr<tbb::flow::broadcast_node<tbb::flow::continue_msg>> start;
    std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> graph_nodes;
    std::mutex run_mutex;  // one run at a time per executor
    std::vector<uint8_t *> run_arg_data;  // phase 2's acp_run_ctx::arg_data, sized with args (no allocation in phase 2)
    struct acp_run_ctx *current_run = nullptr;
    uint64_t timed_runs = 0;  // numbers the timeline's runs of this executor

    ~aclOpExecutor();
};

// One phase-2 run: the bound workspace and addresses, and the first failure.
struct acp_run_ctx {
    aclOpExecutor *exec = nullptr;
    uint8_t *workspace = nullptr;
    std::span<uint8_t *> arg_data;  // element 0 of each tensor argument's view (the executor's run_arg_data)
    std::mutex failure_mutex;
    int32_t failed_node = -1;
    int32_t failure_code = 0;
    std::string failure_message;
    // The timeline (RuntimeState::timeline): per node, nanoseconds from the run's start to its begin and
    // end (-1: did not run) and the arena thread that ran its body; each node writes its own entry.
    struct NodeTime {
        int64_t begin = -1, end = -1;
        int thread = -1;
    };
    std::vector<NodeTime> times;  // empty without the timeline
    std::chrono::steady_clock::time_point started;
};

namespace aclcpu {

// Phase 1 pieces, used by dispatch.
std::unique_ptr<aclOpExecutor> snapshot_call(const std::shared_ptr<const RuntimeState> &state, const OpEntry &entry,
                                             const aclnnCpuCallArg *args);
void plan_with_plugin(aclOpExecutor &exec, const OpEntry &entry);
void build_graph(aclOpExecutor &exec);

// Phase 2.
// Address of element 0 of tensor argument `arg`'s view, as the caller's tensor has it now (NULL for
// none).
uint8_t *element0(const aclOpExecutor &exec, size_t arg);
int32_t run_executor(aclOpExecutor &exec, void *workspace, uint64_t workspace_size);

// Tensors sharing memory (aliasing.cpp), given each argument's element-0 address. Two outputs that
// overlap are 161002; an input an output overlaps is copied to the host heap and `data` redirected
// to the copy, which lives as long as the returned InputCopies.
using InputCopies = std::vector<std::unique_ptr<uint8_t[]>>;
void check_outputs_apart(const aclOpExecutor &exec, std::span<uint8_t *const> data);
InputCopies copy_inputs_outputs_overlap(const aclOpExecutor &exec, std::span<uint8_t *> data);

// Executor handles: what callers hold is a handle (slot + generation), never the object's address,
// so a consumed or destroyed executor is an error, not a crash or someone else's executor.
// A caller keeps the shared_ptr it gets for the length of its call.
aclOpExecutor *register_executor(std::unique_ptr<aclOpExecutor> exec);    // returns the handle
std::shared_ptr<aclOpExecutor> resolve_executor(const aclOpExecutor *handle);  // the live object or nullptr
// For phase 2: a single-use executor is taken out of the handle table in the same step (a second
// run, even a concurrent one, finds it consumed); a repeatable one stays.
std::shared_ptr<aclOpExecutor> claim_for_run(const aclOpExecutor *handle);
void destroy_executor(const aclOpExecutor *handle);

// Core node builders (convert.cpp).
int32_t add_convert_node(aclOpExecutor &exec, int32_t src_arg, int32_t dst_buffer, int32_t dst_dtype, int32_t precision,
                         const int32_t *deps, uint32_t n_deps);
int32_t add_store_node(aclOpExecutor &exec, int32_t src_buffer, int32_t src_dtype, int32_t dst_arg,
                       const int32_t *deps, uint32_t n_deps);
int32_t add_node(aclOpExecutor &exec, const char *name, acp_node_fn fn, void *data, const int32_t *deps, uint32_t n_deps);

// The manifest's generic rules (checks.cpp). Returns the cube precision for the plugin.
// The entry point's argument kinds must be the manifest's (a header from another manifest): 561000.
void check_call_kinds(const OpManifest &op, const aclnnCpuCallArg *args);
void check_nulls(const OpManifest &op, const aclnnCpuCallArg *args);
// False for a `required_if` argument whose mask element is not set: it is then absent for every check
// and for plan(), and never written.
bool selected(const OpManifest &op, const Param &p, const aclnnCpuCallArg *args);
// True when a `noop_if_null` argument is NULL: the call succeeds with nothing to do.
bool is_noop_call(const OpManifest &op, const aclnnCpuCallArg *args);
int32_t enforce_manifest(const OpManifest &op, const RuntimeState &state, const std::vector<acp_arg> &args);

}  // namespace aclcpu
