// The two phases as generated entry points call them, and the executor C API. This file is the one
// place that turns failures (CallError, exceptions) into a status code plus the one-line message that
// aclGetRecentErrMsg() returns.
#include <new>

#include "../runtime/log.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "executor.hpp"

namespace aclcpu {
namespace {

// The entry point's name, spelled out only when a failure is reported: a std::string of it in every
// call would be a heap allocation in every phase 2 (performance.md: none there).
struct EntryName {
    const char *prefix;
    const char *op = "";
    const char *suffix = "";
    std::string str() const { return std::string(prefix) + op + suffix; }
};

template <class Body>
aclnnStatus reported(const EntryName &fn, Body &&body) noexcept {
    try {
        return body();
    } catch (const CallError &e) {
        return set_error(e.code, fn.str() + ": " + e.message);
    } catch (const std::bad_alloc &) {
        return set_error(ACLNN_ERR_INNER, fn.str() + ": out of host memory");
    } catch (const std::exception &e) {
        return set_error(ACLNN_ERR_INNER, fn.str() + ": internal error: " + e.what());
    } catch (...) {
        return set_error(ACLNN_ERR_INNER, fn.str() + ": internal error");
    }
}

// The live executor behind a handle, or a failure saying why there is none.
[[noreturn]] void fail_not_live() {
    fail(ACLNN_ERR_RUNTIME_ERROR, "executor was already consumed by a previous run or destroyed "
                                  "(call aclSetAclOpExecutorRepeatable after phase 1 to run it again)");
}
std::shared_ptr<aclOpExecutor> live_executor(aclOpExecutor *handle, int32_t null_code) {
    if (!handle) fail(null_code, "executor must not be NULL");
    auto exec = resolve_executor(handle);
    if (!exec) fail_not_live();
    return exec;
}

// CANN's aclSetInputTensorAddr/aclSetOutputTensorAddr: `index` counts every input (output) tensor of
// the operator's signature, present or not; NULL executor or tensor 561103; an index out of range, or
// a tensor that was NULL (or unselected) in phase 1, 161002.
aclnnStatus set_tensor_addr(const char *fn, aclOpExecutor *handle, size_t index, aclTensor *tensor, void *addr,
                            bool output) {
    return reported({fn}, [&] {
        const auto exec = live_executor(handle, ACLNN_ERR_INNER_NULLPTR);
        if (!tensor) fail(ACLNN_ERR_INNER_NULLPTR, "tensor must not be NULL");
        const char *kind = output ? "output" : "input";
        std::vector<size_t> list;  // argument indices of the signature's input (output) tensors
        for (size_t i = 0; i < exec->manifest->params.size(); ++i) {
            const Param &p = exec->manifest->params[i];
            if (p.type == ParamType::Tensor && p.output == output) list.push_back(i);
        }
        if (index >= list.size())
            fail(ACLNN_ERR_PARAM_INVALID, std::string("index ") + std::to_string(index) + " is out of range: aclnn" +
                                              exec->op_name + " has " + std::to_string(list.size()) + " " + kind + " tensor(s)");
        const size_t arg = list[index];
        aclTensor *bound = exec->tensors[arg];
        if (!bound)
            fail(ACLNN_ERR_PARAM_INVALID, std::string(kind) + " " + std::to_string(index) + " (" + exec->args[arg].name +
                                              ") was NULL or unselected in phase 1, so it has no address to update");
        if (tensor != bound)
            fail(ACLNN_ERR_PARAM_INVALID, std::string("tensor is not ") + kind + " " + std::to_string(index) + " (" +
                                              exec->args[arg].name + ") of this executor");
        // Not while another thread runs this executor: a run reads the addresses under run_mutex.
        std::lock_guard<std::mutex> lock(exec->run_mutex);
        bound->data = addr;
        return ACLNN_SUCCESS;
    });
}

}  // namespace
}  // namespace aclcpu

using namespace aclcpu;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnCpuPlan(const char *opName, const aclnnCpuCallArg *args, uint32_t nArgs,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    return reported({"aclnn", opName ? opName : "?", "GetWorkspaceSize"}, [&]() -> aclnnStatus {
        if (!opName || (nArgs && !args)) fail(ACLNN_ERR_INNER_NULLPTR, "bad call from a generated entry point");
        auto state = runtime_state();
        if (!state->startup_error.empty()) fail(ACLNN_ERR_INNER, "the runtime could not start: " + state->startup_error);
        const auto registry = registry_for(state->plugin_paths, state->implementations);
        const OpEntry *entry = registry->find(opName);
        if (!entry)
            fail(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, std::string("no loaded plugin provides operator ") + opName +
                                                         " (check the plugin path and `aclnn-cpu list`)");
        if (nArgs != entry->manifest->params.size())
            fail(ACLNN_ERR_INNER, "entry point passes " + std::to_string(nArgs) + " arguments but the manifest declares " +
                                      std::to_string(entry->manifest->params.size()));
        check_call_kinds(*entry->manifest, args);
        if (!workspaceSize) fail(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize must not be NULL");
        if (!executor) fail(ACLNN_ERR_PARAM_NULLPTR, "executor must not be NULL");
        if (is_noop_call(*entry->manifest, args)) {  // e.g. a NULL outputMask: success, nothing to do
            *workspaceSize = 0;
            *executor = register_executor(snapshot_call(state, *entry, args));
            return ACLNN_SUCCESS;
        }
        check_nulls(*entry->manifest, args);
        auto exec = snapshot_call(state, *entry, args);
        exec->precision = enforce_manifest(*entry->manifest, *state, exec->args);
        std::vector<uint8_t *> data(exec->args.size());  // phase 2 checks again: addresses may change
        for (size_t i = 0; i < data.size(); ++i) data[i] = element0(*exec, i);
        check_outputs_apart(*exec, data);
        plan_with_plugin(*exec, *entry);
        build_graph(*exec);
        *workspaceSize = exec->workspace_size;
        *executor = register_executor(std::move(exec));
        return ACLNN_SUCCESS;
    });
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnCpuRun(const char *opName, void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream) {
    return reported({"aclnn", opName ? opName : "?"}, [&]() -> aclnnStatus {
        const auto planned = live_executor(executor, ACLNN_ERR_PARAM_NULLPTR);
        // (Work runs synchronously on submission; the stream is only validated. The executor is not
        // consumed: nothing ran.)
        if (!stream_is_live(stream))
            fail(ACLNN_ERR_PARAM_INVALID, "stream is not a live stream (destroyed, or not made by aclrtCreateStream)");
        if (opName && planned->op_name != opName)  // (not consumed: the call was misdirected)
            fail(ACLNN_ERR_PARAM_INVALID, "executor was planned by aclnn" + planned->op_name + "GetWorkspaceSize");
        // A single-use executor is consumed by this call whatever its outcome.
        const auto exec = claim_for_run(executor);
        if (!exec) fail_not_live();
        return run_executor(*exec, workspace, workspaceSize);
    });
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    return reported({"aclSetAclOpExecutorRepeatable"}, [&] {
        live_executor(executor, ACLNN_ERR_INNER_NULLPTR)->repeatable = true;
        return ACLNN_SUCCESS;
    });
}

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    return reported({"aclDestroyAclOpExecutor"}, [&] {
        live_executor(executor, ACLNN_ERR_INNER_NULLPTR);
        destroy_executor(executor);
        return ACLNN_SUCCESS;
    });
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                                      void *addr) {
    return set_tensor_addr("aclSetInputTensorAddr", executor, index, tensor, addr, false);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                       aclTensor *tensor, void *addr) {
    return set_tensor_addr("aclSetOutputTensorAddr", executor, index, tensor, addr, true);
}

}  // extern "C"
