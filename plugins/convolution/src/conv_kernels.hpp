// The convolution plugin's own small kernels: the bias gradient (a per-channel sum of gradOutput),
// the bias add of the forward companion, and zero fill of an output view (the empty-tensor path).
// All deterministic: each output element is summed in one fixed order by one task.
#ifndef CONVOLUTION_SRC_CONV_KERNELS_HPP_
#define CONVOLUTION_SRC_CONV_KERNELS_HPP_

#include <cstdint>
#include <vector>

#include "aclnn_cpu/plugin_abi.h"

namespace conv {

// A strided view as the plan saw it: dtype (aclDataType), dims and element strides.
struct View {
    int32_t dtype = 0;
    std::vector<int64_t> dims, strides;
};

// out[c] = sum over n and every spatial position of g[n][c][...], accumulated in double in a fixed
// order of (image, spatial index) - conv_kernels.cpp - whatever the view's strides, and rounded
// once to FLOAT. `g` is the view's element 0; dims (N, C, spatial...).
void bias_grad(const void *g, const View &v, float *out);

// out[n][c][...] += bias[c] on a dense FLOAT (N, C, plane) array (no bias: NULL), each sum then
// rounded to `round` (acp_precision: FLOAT16 or BF16 where the cube's kernel writes that dtype).
void add_bias(float *out, const float *bias, int64_t N, int64_t C, int64_t plane, int32_t round = ACP_PREC_NATIVE);

// Rounds n dense FLOAT values to a dense FLOAT16 or BF16 array (numeric.hpp's rounding, in its
// AVX-512 spelling when available): the store of a contiguous low-precision result.
void round_store(const float *src, void *dst, int32_t dtype, int64_t n);
// The same on the calling thread only.
void round_store_serial(const float *src, void *dst, int32_t dtype, int64_t n);

// Writes zeros to every element of the view (FLOAT16/BF16/FLOAT zero is all-zero bits).
void zero_view(void *p, const View &v);

}  // namespace conv

#endif  // CONVOLUTION_SRC_CONV_KERNELS_HPP_
