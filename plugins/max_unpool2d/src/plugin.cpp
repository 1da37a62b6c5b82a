// The max_unpool2d plugin's one exported symbol: its descriptor (plugin ABI 1).
#include "aclnn_cpu/plugin_abi.h"
#include "max_unpool2d_plan.hpp"

namespace {
const acp_op kOps[] = {
    {sizeof(acp_op), "MaxUnpool2dBackward", max_unpool2d::plan_backward},
    {sizeof(acp_op), "MaxUnpool2d", max_unpool2d::plan_forward},
};
const acp_plugin kPlugin = {
    sizeof(acp_plugin), ACP_ABI_MAJOR, ACP_ABI_MINOR, "max_unpool2d", "1.0.0",
    "2-D max unpooling, forward (scatter) and backward (gather), index-checked, deterministic",
    sizeof(kOps) / sizeof(kOps[0]), kOps, nullptr, {}};
}  // namespace

extern "C" ACP_EXPORT const acp_plugin *aclnn_cpu_plugin(void) { return &kPlugin; }
