// The checks the manifest cannot state, in CANN's order (hicann/ops-nn convolution_backward_checker.cpp
// CheckParams: formats, attribute values, the empty-tensor path, shapes, attribute lengths, channels
// and groups, spatial sizes), and the geometry they establish.
#ifndef CONVOLUTION_SRC_CONV_CHECKS_HPP_
#define CONVOLUTION_SRC_CONV_CHECKS_HPP_

#include "aclnn_cpu/plugin.hpp"
#include "conv_types.hpp"

namespace conv {

struct Problem {
    Geometry g;               // in plain-convolution roles (conv_types.hpp)
    bool transposed = false;
    bool empty = false;       // Huawei's empty-tensor path: zero the selected weight/bias grads only
    // Transposed, and along some dim every gradOutput (output) row lies past the last window:
    // outputPadding and padding alone make that extent. No element of input meets one of gradOutput,
    // so gradInput and gradWeight are zero (the forward's output: the bias alone), as in PyTorch.
    bool unreachable = false;
    bool mask[3] = {false, false, false};
    int64_t bias_size = 0;    // the empty path's gradBias length (biasSizes[0])
    // The forward's dtypes, as CANN's GetConvolutionOpDtype sets them: the cube computes in cube_dt
    // (FLOAT, FLOAT16 or BF16; the operands are cast to it), its kernel writes kernel_out_dt, cast at
    // last to the output's dtype; the bias is added as FLOAT16 when bias_fp16, else as FLOAT.
    int32_t cube_dt = 0, kernel_out_dt = 0;
    bool bias_fp16 = false;
};

// ConvolutionBackward(gradOutput 0, input 1, weight 2, biasSizes 3, stride 4, padding 5, dilation 6,
//                     transposed 7, outputPadding 8, groups 9, outputMask 10, cubeMathType 11,
//                     gradInput 12, gradWeight 13, gradBias 14)
Problem check_backward(const acp::Args &a);

// Convolution(input 0, weight 1, bias 2, stride 3, padding 4, dilation 5, transposed 6,
//             outputPadding 7, groups 8, output 9, cubeMathType 10). empty: N == 0, nothing to do.
Problem check_forward(const acp::Args &a);

}  // namespace conv

#endif  // CONVOLUTION_SRC_CONV_CHECKS_HPP_
