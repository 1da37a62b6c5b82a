#pragma once
#include "aclnn_cpu/plugin_abi.h"

namespace max_unpool2d {
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept;
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept;
}  // namespace max_unpool2d
