// Phase 1 (plan) of the convolution plugin's operators.
#ifndef CONVOLUTION_SRC_CONV_PLAN_HPP_
#define CONVOLUTION_SRC_CONV_PLAN_HPP_

#include "aclnn_cpu/plugin_abi.h"

namespace conv {
acp_status plan_backward(const acp_plan_ctx *ctx) noexcept;  // ConvolutionBackward
acp_status plan_forward(const acp_plan_ctx *ctx) noexcept;   // Convolution
}  // namespace conv

#endif  // CONVOLUTION_SRC_CONV_PLAN_HPP_
