// The two phases as generated entry points call them, and the executor C API. This file is the one
// place that turns failures (CallError, exceptions) into a status code plus the one-line message that
// aclGetRecentErrMsg() returns.
#include <new>

#include "../runtime/callbacks.hpp"
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

// Which of the signature's tensors an address setter's index counts.
enum class TensorSide { Input, Output, Any };

// How messages name one of those tensors ("input 0") and count them ("2 input tensor(s)").
const char *side_name(TensorSide side) {
    return side == TensorSide::Input ? "input" : side == TensorSide::Output ? "output" : "tensor";
}
std::string counted(size_t n, TensorSide side) {
    return std::to_string(n) + (side == TensorSide::Any ? " " : std::string(" ") + side_name(side) + " ") + "tensor(s)";
}

// Argument indices of the signature's tensors on `side`, in signature order.
std::vector<size_t> tensor_params(const OpManifest &op, TensorSide side) {
    std::vector<size_t> list;
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        if (p.type == ParamType::Tensor && (side == TensorSide::Any || p.output == (side == TensorSide::Output)))
            list.push_back(i);
    }
    return list;
}

// CANN's aclSetInputTensorAddr/aclSetOutputTensorAddr/aclSetTensorAddr: `index` counts every input
// (output, any) tensor of the operator's signature, present or not; NULL executor or tensor 561103; an
// index out of range, or a tensor that was NULL (or unselected) in phase 1, 161002.
aclnnStatus set_tensor_addr(const char *fn, aclOpExecutor *handle, size_t index, aclTensor *tensor, void *addr,
                            TensorSide side) {
    return reported({fn}, [&] {
        const auto exec = live_executor(handle, ACLNN_ERR_INNER_NULLPTR);
        if (!tensor) fail(ACLNN_ERR_INNER_NULLPTR, "tensor must not be NULL");
        const std::string kind = side_name(side);
        const std::vector<size_t> list = tensor_params(*exec->manifest, side);
        if (index >= list.size())
            fail(ACLNN_ERR_PARAM_INVALID, "index " + std::to_string(index) + " is out of range: aclnn" + exec->op_name +
                                              " has " + counted(list.size(), side));
        const size_t arg = list[index];
        aclTensor *bound = exec->tensors[arg];
        if (!bound)
            fail(ACLNN_ERR_PARAM_INVALID, kind + " " + std::to_string(index) + " (" + exec->args[arg].name +
                                              ") was NULL or unselected in phase 1, so it has no address to update");
        if (tensor != bound)
            fail(ACLNN_ERR_PARAM_INVALID, "tensor is not " + kind + " " + std::to_string(index) + " (" +
                                              exec->args[arg].name + ") of this executor");
        // Not while another thread runs this executor: a run reads the addresses under run_mutex.
        std::lock_guard<std::mutex> lock(exec->run_mutex);
        bound->data = addr;
        return ACLNN_SUCCESS;
    });
}

// CANN's aclSetDynamic{Input,Output,}TensorAddr, for tensor-list parameters: NULL executor or tensors
// 561103; relativeIndex past the list, or irIndex past the signature's tensors, 161002. The plugin ABI
// has no tensor-list parameter, so an irIndex in range names a plain tensor: 161002 saying so.
aclnnStatus set_dynamic_tensor_addr(const char *fn, aclOpExecutor *handle, size_t irIndex, size_t relativeIndex,
                                    const aclTensorList *tensors, TensorSide side) {
    return reported({fn}, [&]() -> aclnnStatus {
        const auto exec = live_executor(handle, ACLNN_ERR_INNER_NULLPTR);
        if (!tensors) fail(ACLNN_ERR_INNER_NULLPTR, "tensors must not be NULL");
        if (relativeIndex >= tensors->tensors.size())
            fail(ACLNN_ERR_PARAM_INVALID, "relativeIndex " + std::to_string(relativeIndex) +
                                              " is out of range: tensors holds " +
                                              std::to_string(tensors->tensors.size()) + " tensor(s)");
        const std::vector<size_t> list = tensor_params(*exec->manifest, side);
        if (irIndex >= list.size())
            fail(ACLNN_ERR_PARAM_INVALID, "irIndex " + std::to_string(irIndex) + " is out of range: aclnn" +
                                              exec->op_name + " has " + counted(list.size(), side));
        const std::string setter = side == TensorSide::Input    ? "aclSetInputTensorAddr"
                                   : side == TensorSide::Output ? "aclSetOutputTensorAddr"
                                                                : "aclSetTensorAddr";
        fail(ACLNN_ERR_PARAM_INVALID, "irIndex " + std::to_string(irIndex) + " (" + exec->args[list[irIndex]].name +
                                          ") is a tensor, not a tensor list: use " + setter);
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
        wait_for_callbacks(stream, /*blocking_only=*/true);  // work after a blocking host callback waits for it
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
    return set_tensor_addr("aclSetInputTensorAddr", executor, index, tensor, addr, TensorSide::Input);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                       aclTensor *tensor, void *addr) {
    return set_tensor_addr("aclSetOutputTensorAddr", executor, index, tensor, addr, TensorSide::Output);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                                 void *addr) {
    return set_tensor_addr("aclSetTensorAddr", executor, index, tensor, addr, TensorSide::Any);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                             const size_t relativeIndex, aclTensorList *tensors,
                                                             void *) {
    return set_dynamic_tensor_addr("aclSetDynamicInputTensorAddr", executor, irIndex, relativeIndex, tensors,
                                   TensorSide::Input);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                              const size_t relativeIndex, aclTensorList *tensors,
                                                              void *) {
    return set_dynamic_tensor_addr("aclSetDynamicOutputTensorAddr", executor, irIndex, relativeIndex, tensors,
                                   TensorSide::Output);
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                        const size_t relativeIndex, aclTensorList *tensors, void *) {
    return set_dynamic_tensor_addr("aclSetDynamicTensorAddr", executor, irIndex, relativeIndex, tensors,
                                   TensorSide::Any);
}

}  // extern "C"
