// Depthwise convolution gradients of our own (groups == input channels == output channels, 2-D or
// 1-D, not transposed): oneDNN's depthwise path spends most of its time reordering NCHW to blocked
// layouts and back, while depthwise work is tiny. Which kernel, by shape only:
//   DwDirect (depthwise_direct.hpp): 3x3, padding 1 (symmetric output size), dilation 1, stride 1
//     or 2 in both dimensions (stride 1: planes up to 2^16 elements) - MobileNet's layers. Taps on
//     the caller's NCHW planes directly, no transposes.
//   DwBlocked (depthwise_blocked.hpp): everything else (1-D, other kernels, dilation, strides,
//     paddings): 16 channels of one image per task, transposed to channels-last and back.
// The plan runs one pass per gradient (independent executor nodes). Scratch, in the executor's
// workspace: one slot per worker thread of the arena (DwDirect: gradWeight only), then the
// gradWeight partials. Measured on MobileNet's six depthwise layers (N = 8, FLOAT and BF16, 2
// threads, best of 75 runs each): the direct kernels are faster than the blocked ones on every one,
// 1.13x (7x7 BF16) to 2.3x (14x14 FLOAT).
#ifndef CONVOLUTION_SRC_DEPTHWISE_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_HPP_

#include <cstdint>

#include "aclnn_cpu/slot_pool.hpp"
#include "conv_types.hpp"
#include "depthwise_blocked.hpp"
#include "depthwise_direct.hpp"

namespace conv {

inline constexpr int64_t kMaxTaps = 64;  // depthwise kernels with more taps go to oneDNN

class DepthwisePass {
public:
    static bool applies(const Geometry &g, bool transposed);
    DepthwisePass(const Geometry &g, Dt dt, int threads);

    // A run's scratch: one set per thread (acp::SlotPool), then (blocked gradWeight) the per-block
    // partials.
    // Runs of concurrent nodes each need their own.
    uint64_t scratch_bytes(bool partials) const {
        const auto sets = static_cast<uint64_t>(slots_.size());
        if (direct_) return partials ? dir_.slot_bytes() * sets + dir_.partial_bytes() : 0;
        return blk_.slot_bytes() * sets + (partials ? blk_.partial_bytes() : 0);
    }
    bool direct() const { return direct_; }

    // dy (N, C, Ho, Wo), x (N, C, H, W), w (C, 1, kh, kw) dense in the pass dtype (x only read for dw,
    // w only for dx). Results, each computed only when its pointer is set: dx (N, C, H, W) dense FLOAT,
    // or BF16 when dx_bf16 (rounded once, numeric.hpp's rounding); dw FLOAT (C, 1, kh, kw).
    void run(const void *dy, const void *x, const void *w, void *dx, bool dx_bf16, float *dw, void *scratch) const;

private:
    bool direct_ = false;
    DwDirect dir_;
    DwBlocked blk_;
    // One set of task scratch per thread, taken per task; the gradInput and gradWeight nodes share
    // it, each set indexing its own node's scratch (at most `threads` tasks run at once in all).
    acp::SlotPool slots_;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_HPP_
