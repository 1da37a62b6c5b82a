// Phase 1 of GridSampler2DBackward and GridSampler2D (see grid_plan.cpp).
#ifndef GRID_SAMPLER2D_GRID_PLAN_HPP_
#define GRID_SAMPLER2D_GRID_PLAN_HPP_

#include "aclnn_cpu/plugin_abi.h"

namespace gsamp {
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept;
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept;
}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_PLAN_HPP_
