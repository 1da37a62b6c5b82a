// 3x3 convolution gradients for few input channels (VGG-19's first layer: 3 of them), stride 1,
// padding 1, no dilation, no groups, not transposed. oneDNN blocks channels by 16 and has nothing
// to block here (17 % of the FMA peak on that layer); these kernels read the caller's NCHW tensors
// and vectorise along the rows (16 columns per vector), FLOAT arithmetic with explicit FMAs.
// The two gradients are independent runs (the plan's nodes run concurrently), each with its own
// scratch. A task is one (image, part of its rows). Both read dY as given (BF16 widened as loaded;
// lanes past a row's end masked off, never loaded):
//   gradInput[ci][h][w] = sum over co, kh, kw of W[co][ci][kh][kw] * dY[co][h+1-kh][w+1-kw]
//     per tap column kw, P[kw][ci][w'] = sum over co, kh (in that order) of W * dY[co][h+1-kh][w']
//     in aligned columns (3 x Cin x a few vectors in registers), then dX = (P[1][w] + P[0][w+1]) +
//     P[2][w-1] per row: no load shifted by a column (it would cross a cache line) in the hot
//     loop. In bands of 1 or 2 rows (set_prefetch), chunk by chunk (a dY line serves the band's
//     rows from L1); each band prefetches the next band's rows of every channel (they are a plane
//     apart, which the hardware prefetchers do not follow), the last band of a task the first of
//     the next task.
//     The task writes its own rows.
//   gradWeight[co][ci][kh][kw] = sum over n, oh, ow of dY[n][co][oh][ow] * X[n][ci][oh+kh-1][ow+kw-1]
//     A GEMM with M = Cout, N = Cin*9, K = N*H*W: 3 output channels x the 9 taps of one input
//     channel in 27 vector accumulators (X staged once per band, each tap's vector loaded once into
//     a register), a co-block of 3 output channels at a time over the whole part: its dY rows are
//     one run per channel, which the hardware prefetchers follow (and, set_prefetch, the tiles
//     fetch the next co-block's rows into L2 meanwhile); the FLOAT lane sums are added into
//     the task's sums, per task widened into a double partial, and the partials added in task order.
// Tasks depend on the shape only: same bytes at any thread count. Taps outside the plane never
// enter a sum (rows skipped, columns masked off): a padding zero times an infinite operand must
// not make a NaN. BF16 operands are widened exactly; results are FLOAT (the caller
// rounds them once). AVX-512 only: without it the plan keeps oneDNN.
// VGG-19's first layer (8 x 3 x 224^2 -> 64, FLOAT, 2 threads, session 34): gradWeight 15.5-17 ->
// 10-11 ms, gradInput 14-20 -> 9 ms, the whole call 15.3-21.7 -> 11.3-11.8 ms (57 % of the FMA peak).
#ifndef CONVOLUTION_SRC_SMALL_CIN_HPP_
#define CONVOLUTION_SRC_SMALL_CIN_HPP_

#include <cstdint>

#include "aclnn_cpu/slot_pool.hpp"
#include "conv_types.hpp"

namespace conv {

// Input channels up to which these kernels beat oneDNN (CPU time per call, one thread, N = 8,
// 224x224 x 64 output channels): FLOAT (and FLOAT16, computed in FLOAT) 3.0-4.4x at Cin 1-4;
// BF16, where oneDNN multiplies pairs with vdpbf16ps, 2.5x at Cin 1, 1.7x at 2, 1.25x at 3, 1.0x at 4.
inline constexpr int64_t kSmallCinMax = 4, kSmallCinMaxBf16 = 3;

class SmallCinPass {
public:
    static bool applies(const Geometry &g, bool transposed, Dt dt);
    SmallCinPass(const Geometry &g, Dt dt, int threads);

    // Scratch of one gradient's run (each node has its own; they run concurrently): gradInput the
    // widened weights and one slot per thread of the arena (row sums); gradWeight one slot per
    // thread (X band, FLOAT sums) and the tasks' double partials.
    uint64_t scratch_bytes(bool weight) const;

    // dy (N, Cout, H, W), x (N, Cin, H, W), w (Cout, Cin, 3, 3): dense, in the pass dtype. Results
    // dense FLOAT: dx (N, Cin, H, W), dw (Cout, Cin, 3, 3).
    void run_input(const void *dy, const void *w, float *dx, void *scratch) const;
    void run_weight(const void *dy, const void *x, float *dw, void *scratch) const;

    // How the kernels meet memory (the same bytes either way): set where the CPU prefers its own
    // prefetches (cpu_prefers_software_prefetch), or by a test. On: gradInput in bands of one row,
    // the next band fetched into L1, and gradWeight fetches the next co-block into L2 while the
    // current one's tiles run. Off (AMD Zen): bands of 2 rows, the next fetched into L2, and
    // gradWeight leaves dY to the hardware prefetchers. VGG-19's first layer on an Intel Xeon, one
    // thread, FLOAT: gradInput 16.6-17.2 -> 11.7-12.1 ms, gradWeight 16.2-16.4 -> 14.0-14.5 ms.
    bool prefetch() const { return prefetch_; }
    void set_prefetch(bool on) {
        prefetch_ = on;
        band_ = on ? 1 : 2;
    }

private:
    int64_t N_ = 0, C_ = 0, K_ = 0, H_ = 0, W_ = 0;  // images, input / output channels, plane
    int64_t nv_ = 0, Wp_ = 0;                        // vectors per row, staged row length (floats)
    int64_t parts_ = 1, rows_ = 1;                   // tasks: N * parts_, each rows_ rows of an image
    int64_t wband_ = 1;                              // gradWeight: rows per band (X staged per band)
    int64_t band_ = 2;                               // gradInput: output rows per band (set_prefetch)
    bool prefetch_ = false;
    Dt dt_ = Dt::F32;
    acp::SlotPool slots_;  // one set of task scratch per thread, taken per task (both nodes')
    uint64_t wt_bytes() const;
    uint64_t slot_bytes(bool weight) const;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_SMALL_CIN_HPP_
