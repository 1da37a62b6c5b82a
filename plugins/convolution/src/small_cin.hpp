// 3x3 convolution gradients for few input channels (VGG-19's first layer: 3 of them), stride 1,
// padding 1, no dilation, no groups, not transposed. oneDNN blocks channels by 16 and has nothing
// to block here (17 % of the FMA peak on that layer); these kernels read the caller's NCHW tensors
// and vectorise along the rows (16 columns per vector), FLOAT arithmetic with explicit FMAs.
//   gradWeight[co][ci][kh][kw] = sum over n, oh, ow of dY[n][co][oh][ow] * X[n][ci][oh+kh-1][ow+kw-1]
//     A GEMM with M = Cout, N = Cin*9, K = N*H*W. A task is one (image, part of its rows); in it, 3
//     output channels x the 9 taps of one input channel sit in 27 vector accumulators over a band of
//     rows (FLOAT sums, lane-wise), then move into the task's double partial; the tasks' partials
//     are added in task order. Tasks depend on the shape only: same bytes at any thread count.
//   gradInput[ci][h][w] = sum over co, kh, kw of W[co][ci][kh][kw] * dY[co][h+1-kh][w+1-kw]
//     A task is one (image, part of its rows) and writes its own rows: Cin x up to 8 vectors of one
//     row accumulate in registers over co, kh, kw in that order. The dY rows are staged (copied, or
//     widened from BF16) into a zero-padded ring of 3 rows, so the shifted loads stay in bounds.
// Taps outside the plane are skipped (rows) or masked off (columns), never multiplied by a padding
// zero: an infinite operand must not make a NaN there. BF16 operands are widened exactly; results
// are FLOAT (the caller rounds them once). AVX-512 only: without it the plan keeps oneDNN.
#ifndef CONVOLUTION_SRC_SMALL_CIN_HPP_
#define CONVOLUTION_SRC_SMALL_CIN_HPP_

#include <cstdint>

#include "conv_types.hpp"

namespace conv {

inline constexpr int64_t kSmallCinMax = 4;  // more input channels: oneDNN's blocked kernels win

class SmallCinPass {
public:
    static bool applies(const Geometry &g, bool transposed);
    SmallCinPass(const Geometry &g, Dt dt, int threads);

    // Scratch of one run of grad_weight (weight = true) or grad_input: one slot per thread of the
    // arena, then (grad_weight) the tasks' double partials, (grad_input) the widened weights.
    uint64_t scratch_bytes(bool weight) const;

    // dy (N, Cout, H, W), x (N, Cin, H, W), w (Cout, Cin, 3, 3): dense, in the pass dtype.
    // Results dense FLOAT: dx (N, Cin, H, W), dw (Cout, Cin, 3, 3).
    void grad_input(const void *dy, const void *w, float *dx, void *scratch) const;
    void grad_weight(const void *dy, const void *x, float *dw, void *scratch) const;

private:
    int64_t N_ = 0, C_ = 0, K_ = 0, H_ = 0, W_ = 0;  // images, input / output channels, plane
    int64_t nv_ = 0, Wp_ = 0;                        // vectors per row, staged row length (floats)
    int64_t parts_ = 1, rows_ = 1;                   // tasks: N * parts_, each rows_ rows of an image
    Dt dt_ = Dt::F32;
    int slots_ = 1;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_SMALL_CIN_HPP_
