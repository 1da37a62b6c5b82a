// max_unpool2d compute kernels: the backward gather and the forward scatter, on (N, C, H, W) views.
//
// Both kernels move elements without looking at their values (a gather/scatter of 1, 2, 4 or 8
// byte elements), so every dtype is bit-exact by construction. Dtype casts are the core's store
// node's job, with one exception: the gather can widen FLOAT16 to FLOAT on the way (exact,
// numeric.hpp's conversion, the same bits as the store node), which saves a workspace the size of
// out and a second pass over it.
// Index values are data: each one is checked against the plane it addresses before it is used, so
// a bad index never becomes a memory access. A bad index stops the kernel with the first bad
// position in row-major order over indices' (N, C, H, W) shape, the same at any thread count.
#ifndef MAX_UNPOOL2D_KERNELS_HPP_
#define MAX_UNPOOL2D_KERNELS_HPP_

#include <cstdint>

#include "aclnn_cpu/nchw.hpp"

namespace max_unpool2d {

using acp::View4;
struct Shape4 { int64_t N, C, H, W; };
enum class Widen { None, Half };  // the gather's output: the element itself, or FLOAT from FLOAT16

// The first out-of-range index: position is row-major over indices' (N, C, H, W); -1 = none.
struct BadIndex {
    int64_t position = -1;
    int64_t value = 0;
    bool found() const { return position >= 0; }
};

// Backward: dst[n][c][h][w] = src[n][c][q / oW][q % oW] with q = idx[n][c][h][w] in [0, oH*oW),
// widened to FLOAT when `widen` says so (then elem_bytes is 2 and dst is FLOAT).
// idx/dst have shape `in`, src has shape (N, C, oH, oW). Any strides; w stride 1 and dense planes
// take the vectorized path. Planned once (phase 1), run many times, concurrently if need be.
// When out exceeds 8 MB, it is written with non-temporal stores in whole 64-byte lines: the
// gather's own traffic would evict it from the 32 MB L3 anyway, and streaming saves reading each
// line before overwriting it. Smaller outs stay in cache better with plain stores (2 threads, Zen 5,
// ratios of min times against session 25's rule, which streamed whenever indices + out + gradOutput
// exceeded 16 MB and split lines between plain and streaming stores at the rows' edges: 32x64x56x56
// <- 112x112 FLOAT 0.96, int32 indices 0.94, FLOAT16 0.98, FLOAT16 -> FLOAT 0.72; 32x64x28x28 <-
// 56x56 FLOAT, 6.4 MB out, 1.20 streamed and 1.02 not). The bits written never depend on it.
class GatherKernel {
public:
    GatherKernel(Shape4 in, int64_t oH, int64_t oW, int elem_bytes, bool idx64, Widen widen = Widen::None);
    BadIndex run(const void *src, View4 sv, const void *idx, View4 iv, void *dst, View4 dv) const;

private:
    Shape4 in_;
    int64_t oH_, oW_;
    int elem_;
    bool idx64_;
    Widen widen_;
    int64_t row_blocks_;  // work items are (plane, block of rows): enough of them for every thread
};

// Forward: dst (N, C, oH, oW) is zeroed, then dst[n][c][q / oW][q % oW] = src[n][c][h][w] with
// q = idx[n][c][h][w], in row-major (h, w) order, so the last of duplicate indices wins (PyTorch's
// CPU kernel). Each plane is one work item: duplicates never race. Large problems (the same 16 MB
// rule) build each dense plane of up to 64 KB on the stack and stream it out in one pass.
class ScatterKernel {
public:
    ScatterKernel(Shape4 in, int64_t oH, int64_t oW, int elem_bytes, bool idx64);
    BadIndex run(const void *src, View4 sv, const void *idx, View4 iv, void *dst, View4 dv) const;

private:
    Shape4 in_;
    int64_t oH_, oW_;
    int elem_;
    bool idx64_;
};

}  // namespace max_unpool2d

#endif  // MAX_UNPOOL2D_KERNELS_HPP_
