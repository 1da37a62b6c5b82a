// GridSampler2DBackward on the CPU: inputGrad and gridGrad from gradOutput, input and grid.
//
// Work is split by the shape only: each image n is cut into K fixed ranges of output pixels
// (K > 1 only when N is small, see tasks_per_image()), and each (n, k) task accumulates its
// inputGrad contributions into its own accumulator in the workspace, in ascending pixel order;
// the K accumulators of an image are then summed in ascending k. No atomics, and the bits never
// depend on the thread count or on which thread runs a task.
//
// Inside a task the layout is channels-last in blocks of 16 channels (narrow blocks padded to 4 or
// 8 values): the input (for gridGrad) is transposed once per image and the accumulator has the
// same layout, so a tap touches one line per block (vectorized over channels); gradOutput is
// transposed in tiles of 16 samples on the fly. The taps of 16 samples are computed together
// (AVX-512, for bilinear and bicubic with zeros / border padding; scalar otherwise). gridGrad
// sums run over channel blocks in ascending order, so every reduction order is fixed by the shape.
#ifndef GRID_SAMPLER2D_GRID_BACKWARD_HPP_
#define GRID_SAMPLER2D_GRID_BACKWARD_HPP_

#include <cstdint>
#include <memory>

#include "grid_types.hpp"

namespace gsamp {

// Run-time addresses; every array is dense row-major in its element type.
struct BackwardOperands {
    const void *grad_output;  // (N, C, Ho, Wo)
    const void *input;        // (N, C, H, W); may be nullptr when gridGrad is not computed
    const void *grid;         // (N, Ho, Wo, 2)
    void *input_grad;         // (N, C, H, W) or nullptr (not requested)
    void *grid_grad;          // (N, Ho, Wo, 2) or nullptr (not requested)
    void *scratch;            // scratch_bytes()
};

struct BackwardElems {
    Elem grad_output, input, grid, input_grad, grid_grad;
};

struct BackwardPlan;

class BackwardKernel {
public:
    // f64: compute in double (DOUBLE tensors), else in FLOAT.
    BackwardKernel(const Geometry &g, BackwardElems e, bool want_input_grad, bool want_grid_grad, bool f64);
    uint64_t scratch_bytes() const;
    void run(const BackwardOperands &ops) const;
    void set_isa(Isa isa) { isa_ = isa; }
    // Output pixels per band of the one-task-per-image path (tests: the bits never depend on it).
    // Changes scratch_bytes().
    void set_band_pixels(int64_t px);
    // Number of pixel ranges per image (shape only).
    static int64_t tasks_per_image(const Geometry &g);

private:
    static std::shared_ptr<const BackwardPlan> with_bands(std::shared_ptr<BackwardPlan> P);
    std::shared_ptr<const BackwardPlan> plan_;
    Isa isa_ = Isa::Auto;
};

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BACKWARD_HPP_
