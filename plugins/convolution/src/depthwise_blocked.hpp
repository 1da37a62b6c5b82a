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
//              image order per channel. Small planes with many blocks: one task per block runs the
//              images in order and keeps the sums across them (rows counted over the batch), no
//              partials. Which of the two is fixed by the shape: same bytes at any thread count.
// Positions outside the plane are skipped, never multiplied as zeros (an infinite operand there
// must not make a NaN). Every tap is one fused multiply-add. Two spellings with the same arithmetic
// per element: AVX-512 and scalar (acp::fma_ordered: the same NaN where NaNs meet).
#ifndef CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "aclnn_cpu/slot_pool.hpp"
#include "conv_types.hpp"

namespace conv {

struct DwShape {
    int64_t N = 1, C = 1, H = 1, W = 1, Ho = 1, Wo = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

class DwBlocked {
public:
    DwBlocked() = default;
    DwBlocked(const DwShape &s, Dt dt);

    // Operands dense in the pass dtype: dy (N, C, Ho, Wo), x (N, C, H, W), w (C, 1, kh, kw).
    // Results, each computed only when its pointer is set (never written otherwise): dx (N, C, H, W)
    // FLOAT, or BF16 when dx_bf16 (rounded once); dw FLOAT (C, kh*kw). gradBias is not here: the
    // plan's general per-channel sum of the caller's gradOutput costs less than another transpose.
    struct Io {
        const void *dy = nullptr, *x = nullptr, *w = nullptr;
        void *dx = nullptr;
        bool dx_bf16 = false;
        float *dw = nullptr;
    };
    // scratch: `slots` slots of slot_bytes(), then partial_bytes() (gradWeight partials).
    uint64_t slot_bytes() const { return slot_; }
    uint64_t partial_bytes() const;
    void run(const Io &io, uint8_t *scratch, const acp::SlotPool &slots, bool avx) const;

private:
    DwShape s_;
    Dt dt_ = Dt::F32;
    int64_t CB_ = 1;            // channel blocks of 16
    int64_t in_band_ = 1;       // gradInput: input rows per band
    int64_t gi_rows_max_ = 1;   // gradInput: gradient rows a band reads, at most
    int64_t w_band_ = 1;        // gradWeight: output rows per band
    int64_t x_rows_max_ = 1;    // gradWeight: input rows a band reads, at most
    int64_t flush_rows_ = 1;    // gradWeight: output rows summed in FLOAT before moving into double
    bool whole_plane_ = false;  // one band per plane: the next task's planes are prefetched
    bool batch_inner_ = false;  // whole planes, many blocks: a task per block over the batch
    int64_t parts_ = 1;         // row parts per (image, block) task: large planes with few blocks
    int64_t grain_ = 1;         // tasks per TBB task: tiny planes share a task
    uint64_t slot_ = 0;
    struct GiTapRow {
        int64_t a, oh;
    };
    std::vector<int64_t> gi_q0_;                    // per tap column b: gradient column of phase column 0
    std::vector<int64_t> gi_bs_;                    // tap columns, phase by phase
    std::vector<size_t> gi_b_at_;                   // phase r's: [gi_b_at_[r], gi_b_at_[r + 1])
    std::vector<int64_t> gi_cols_, gi_lo_, gi_hi_;  // per phase: columns, interior [lo, hi)
    std::vector<int64_t> gw_c0_, gw_lo_, gw_hi_;    // per tap column: first input column, columns inside
    std::vector<GiTapRow> gi_rows_;          // per input row: the tap rows meeting it, in order
    std::vector<size_t> gi_row_at_;          // row ih's entries: [gi_row_at_[ih], gi_row_at_[ih + 1])
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_BLOCKED_HPP_
