// Strided pointwise convolutions (every kernel extent 1, no padding, some stride > 1: ResNet's
// downsampling 1x1 layers) run as the unit-stride convolution over the sampled positions only:
//   gradWeight = bwd_weights(sampled input, gradOutput)   - the input subsampled once (subsample)
//   gradInput  = bwd_data(gradOutput) at the sampled positions, zeros elsewhere (expand_image)
// The sums are the same ones (each output position reads exactly one input position), so the
// results are those of the strided convolution. oneDNN's strided 1x1 kernels gather and scatter the
// same positions inside every call; measured here (2 threads, aclnn-cpu-bench --filter kh1sh2),
// ResNet-50's ic512ih28 stride-2 layer took 2.26 ms in BF16 and 3.70 in FLOAT, this form 1.58 and 2.64.
#ifndef CONVOLUTION_SRC_STRIDED_POINTWISE_HPP_
#define CONVOLUTION_SRC_STRIDED_POINTWISE_HPP_

#include <cstddef>
#include <cstdint>

#include "blocked_store.hpp"
#include "conv_types.hpp"

namespace conv {

// A plain (non-transposed) convolution that samples its input: kernel 1, padding 0, a stride > 1.
bool is_strided_pointwise(const Geometry &g, bool transposed);

// The unit-stride convolution over the sampled positions: src = dst extent, stride 1.
Geometry sampled_geometry(const Geometry &g);

// dst (N, IC, dst extent) = src (N, IC, src extent) at the sampled positions; es: 2 or 4 bytes.
// Parallel over planes.
void subsample(const void *src, void *dst, size_t es, const Geometry &g);

// One image of gradInput (IC, src extent) in t: the FLOAT result of the sampled convolution
// (IC, dst extent) at the sampled positions, rounded once to t, and zeros everywhere else.
// stream: with streaming stores (a gradInput of kStreamBytes or more).
void expand_image(const float *sampled, void *dst, OutDt t, const Geometry &g, bool stream);

}  // namespace conv

#endif  // CONVOLUTION_SRC_STRIDED_POINTWISE_HPP_
