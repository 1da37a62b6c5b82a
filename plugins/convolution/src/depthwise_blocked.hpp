// Channel-blocked depthwise gradients: 16 channels of one image per task, in channels-last scratch.
// The NCHW planes are walked in small planes and with stride 2 without wasted lanes: a band of
// rows of 16 channel planes is transposed (FLOAT, or BF16 widened on the fly) into one 16-channel
// vector per pixel, the taps run one vector per pixel (stride and padding are only address steps),
// and gradInput is transposed back (rounded to BF16 there when the result is BF16).
//   gradInput  input row ih: sum over taps (a, b) whose gradient position
//              ((ih + ph - a*dh) / sh, (iw + pw - b*dw) / sw) is whole and inside the plane, in
//              tap order; stride 2 is phase-wise (only the taps of a column's phase are visited).
//   gradWeight per (image, 16 channels): per tap, FLOAT sums over the output positions in row-major
//              order, moved into double every few rows; the images' double partials are added in
//              image order per channel. Same bytes at any thread count.
// Positions outside the plane are skipped, never multiplied as zeros (an infinite operand there
// must not make a NaN). Two spellings with the same arithmetic per element: AVX-512 and scalar.
#ifndef CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_

#include <cstdint>

#include "conv_types.hpp"

namespace conv {

struct DwShape {
    int64_t N = 1, C = 1, H = 1, W = 1, Ho = 1, Wo = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

class DwBlocked {
public:
    DwBlocked() = default;
    DwBlocked(const DwShape &s, Dt dt);

    // Scratch per worker slot, and the shared gradWeight partials (one buffer, after the slots).
    uint64_t input_slot_bytes() const { return in_slot_; }
    uint64_t weight_slot_bytes() const { return w_slot_; }
    uint64_t weight_partial_bytes() const;

    // dy (N, C, Ho, Wo), w (C, 1, kh, kw) dense in the pass dtype; dx (N, C, H, W) dense FLOAT, or BF16
    // when dx_bf16. scratch: `slots` slots of input_slot_bytes().
    void grad_input(const void *dy, const void *w, void *dx, bool dx_bf16, uint8_t *scratch, int slots, bool avx) const;
    // x (N, C, H, W), dy dense in the pass dtype; dw FLOAT (C, kh*kw). scratch: `slots` slots of
    // weight_slot_bytes() followed by weight_partial_bytes().
    void grad_weight(const void *x, const void *dy, float *dw, uint8_t *scratch, int slots, bool avx) const;

private:
    DwShape s_;
    Dt dt_ = Dt::F32;
    int64_t CB_ = 1;           // channel blocks of 16
    int64_t in_band_ = 1;      // gradInput: input rows per band
    int64_t w_band_ = 1;       // gradWeight: output rows per band
    int64_t flush_rows_ = 1;   // gradWeight: output rows summed in FLOAT before moving into double
    int64_t grain_ = 1;        // (image, block) tasks per TBB task: tiny planes share a task
    uint64_t in_slot_ = 0, w_slot_ = 0;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_
