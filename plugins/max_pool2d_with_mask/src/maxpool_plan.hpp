#pragma once
#include "aclnn_cpu/plugin_abi.h"

namespace mpool {
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept;  // MaxPool2dWithMaskBackward
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept;   // MaxPool2dWithMask
acp_status plan_indices_backward(const acp_plan_ctx *ctx) noexcept;  // MaxPool2dWithIndicesBackward
acp_status plan_indices_forward(const acp_plan_ctx *ctx) noexcept;   // MaxPool2dWithIndices
}  // namespace mpool
