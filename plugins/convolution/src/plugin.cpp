// The convolution plugin's one exported symbol: its descriptor (plugin ABI 1).
#include "aclnn_cpu/plugin_abi.h"
#include "conv_plan.hpp"

namespace {
const acp_op kOps[] = {
    {sizeof(acp_op), "ConvolutionBackward", conv::plan_backward},
    {sizeof(acp_op), "Convolution", conv::plan_forward},
};
const acp_plugin kPlugin = {
    sizeof(acp_plugin), ACP_ABI_MAJOR, ACP_ABI_MINOR, "convolution", "1.0.0",
    "1-D/2-D/3-D convolution backward and forward (oneDNN primitives, fixed decomposition, deterministic)",
    sizeof(kOps) / sizeof(kOps[0]), kOps, nullptr, {}};
}  // namespace

extern "C" ACP_EXPORT const acp_plugin *aclnn_cpu_plugin(void) { return &kPlugin; }
