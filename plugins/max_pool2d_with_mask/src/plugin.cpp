// The max_pool2d_with_mask plugin's one exported symbol: its descriptor (plugin ABI 1).
#include "aclnn_cpu/plugin_abi.h"
#include "maxpool_plan.hpp"

namespace {
const acp_op kOps[] = {
    {sizeof(acp_op), "MaxPool2dWithMaskBackward", mpool::plan_backward},
    {sizeof(acp_op), "MaxPool2dWithMask", mpool::plan_forward},
    {sizeof(acp_op), "MaxPool2dWithIndicesBackward", mpool::plan_indices_backward},
    {sizeof(acp_op), "MaxPool2dWithIndices", mpool::plan_indices_forward},
};
const acp_plugin kPlugin = {
    sizeof(acp_plugin), ACP_ABI_MAJOR, ACP_ABI_MINOR, "max_pool2d_with_mask", "1.0.0",
    "2-D max pooling with a mask (int32 argmax or bit mask per product) or int32 indices, forward and backward",
    sizeof(kOps) / sizeof(kOps[0]), kOps, nullptr, {}};
}  // namespace

extern "C" ACP_EXPORT const acp_plugin *aclnn_cpu_plugin(void) { return &kPlugin; }
