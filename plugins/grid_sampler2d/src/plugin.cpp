// The grid_sampler2d plugin's one exported symbol: its descriptor (plugin ABI 1).
#include "aclnn_cpu/plugin_abi.h"
#include "grid_plan.hpp"

namespace {
const acp_op kOps[] = {
    {sizeof(acp_op), "GridSampler2DBackward", gsamp::plan_backward},
    {sizeof(acp_op), "GridSampler2D", gsamp::plan_forward},
};
const acp_plugin kPlugin = {
    sizeof(acp_plugin), ACP_ABI_MAJOR, ACP_ABI_MINOR, "grid_sampler2d", "1.0.0",
    "2-D grid sampling (bilinear, nearest, bicubic; zeros, border, reflection padding), forward and backward",
    sizeof(kOps) / sizeof(kOps[0]), kOps, nullptr, {}};
}  // namespace

extern "C" ACP_EXPORT const acp_plugin *aclnn_cpu_plugin(void) { return &kPlugin; }
