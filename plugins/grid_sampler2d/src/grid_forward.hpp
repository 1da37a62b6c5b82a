// GridSampler2D (the forward companion) on the CPU: out[n][c][p] = sum over the sample's taps of
// weight * input, in the compute type (FLOAT, or double for DOUBLE), rounded once when stored.
// Same taps as the backward (grid_taps.hpp). Not a speed target: one task per (n, output row).
#ifndef GRID_SAMPLER2D_GRID_FORWARD_HPP_
#define GRID_SAMPLER2D_GRID_FORWARD_HPP_

#include "grid_types.hpp"

namespace gsamp {

struct ForwardOperands {
    const void *input;  // dense (N, C, H, W) in the compute type
    const void *grid;   // dense (N, Ho, Wo, 2), element type grid_elem
    void *out;          // dense (N, C, Ho, Wo), element type out_elem
};

void run_forward(const Geometry &g, Elem grid_elem, Elem out_elem, bool f64, const ForwardOperands &ops);

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_FORWARD_HPP_
