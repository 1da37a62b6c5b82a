// Depthwise convolution gradients of our own (groups == input channels == output channels, 2-D or
// 1-D, not transposed): oneDNN's depthwise path spends most of its time reordering NCHW to blocked
// layouts and back, while depthwise work is tiny. The channel-blocked kernels (depthwise_blocked.hpp)
// read and write the caller's NCHW tensors directly, 16 channels of one image per task. The plan
// runs one pass per gradient (independent executor nodes), each transposing what it reads.
// Scratch: one slot per worker thread of the arena, then the gradWeight / gradBias partials, in the
// executor's workspace.
#ifndef CONVOLUTION_SRC_DEPTHWISE_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_HPP_

#include <cstdint>

#include "conv_types.hpp"
#include "depthwise_blocked.hpp"

namespace conv {

inline constexpr int64_t kMaxTaps = 64;  // depthwise kernels with more taps go to oneDNN

class DepthwisePass {
public:
    static bool applies(const Geometry &g, bool transposed);
    DepthwisePass(const Geometry &g, Dt dt, int threads);

    // A run's scratch: one slot per thread, then (blocked gradWeight) the per-block partials.
    // Runs of concurrent nodes each need their own.
    uint64_t scratch_bytes(bool partials) const {
        return blk_.slot_bytes() * static_cast<uint64_t>(slots_) + (partials ? blk_.partial_bytes() : 0);
    }

    // dy (N, C, Ho, Wo), x (N, C, H, W), w (C, 1, kh, kw) dense in the pass dtype (x only read for dw,
    // w only for dx). Results, each computed only when its pointer is set: dx (N, C, H, W) dense FLOAT,
    // or BF16 when dx_bf16 (rounded once, numeric.hpp's rounding); dw FLOAT (C, 1, kh, kw).
    void run(const void *dy, const void *x, const void *w, void *dx, bool dx_bf16, float *dw, void *scratch) const;

private:
    DwBlocked blk_;
    int slots_;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_HPP_
