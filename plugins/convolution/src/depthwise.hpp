// Depthwise convolution gradients of our own (groups == input channels == output channels, 2-D or
// 1-D, not transposed): oneDNN's depthwise path spends most of its time reordering NCHW to blocked
// layouts and back, while depthwise work is tiny; these kernels read and write NCHW planes directly.
//   gradInput  per (n, c) plane: gathers from a zero-upsampled, padded copy of the gradient plane
//              (stride and padding become fixed offsets per tap).
//   gradWeight per channel: per tap, products of the gradient plane with the input plane split into
//              stride phases, in 16 lanes, summed over n in order and combined in double.
// Planes are walked flat across their row pitch, so short rows still fill whole vectors.
// Scratch: one slot per worker thread of the arena, in the executor's workspace.
#ifndef CONVOLUTION_SRC_DEPTHWISE_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_HPP_

#include <cstdint>
#include <vector>

#include "conv_types.hpp"
#include "depthwise_blocked.hpp"

namespace conv {

inline constexpr int64_t kMaxTaps = 64;  // depthwise kernels with more taps go to oneDNN

class DepthwisePass {
public:
    static bool applies(const Geometry &g, bool transposed);
    DepthwisePass(const Geometry &g, Dt dt, int threads);

    uint64_t input_scratch_bytes() const { return slot_bytes(in_slot_); }
    uint64_t weight_scratch_bytes() const { return slot_bytes(w_slot_) + (blocked_ ? blk_.weight_partial_bytes() : 0); }
    bool blocked() const { return blocked_; }

    // dy (N, C, Ho, Wo), w (C, 1, kh, kw), dense in the pass dtype; dx (N, C, H, W) dense FLOAT, or
    // BF16 when dx_bf16 (rounded once, numeric.hpp's rounding).
    void grad_input(const void *dy, const void *w, void *dx, bool dx_bf16, void *scratch) const;
    // x (N, C, H, W), dy dense in the pass dtype; dw FLOAT (C, 1, kh, kw).
    void grad_weight(const void *x, const void *dy, float *dw, void *scratch) const;

private:
    bool blocked_applies() const;
    uint64_t slot_bytes(uint64_t per_slot) const { return per_slot * static_cast<uint64_t>(slots_); }
    int64_t N, C, H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, ph, pw;
    int64_t Uh, Uw, U_len_;                 // upsampled gradient plane (gradInput), its flat length
    std::vector<int64_t> in_off_;           // per tap: flat offset into U
    std::vector<uint16_t> in_valid_;        // per 16-position chunk: lanes inside the rows
    int64_t Mh, Mw, P_len_;                 // stride phase planes (gradWeight)
    std::vector<int64_t> w_phase_, w_off_;  // per tap: phase plane, flat offset
    std::vector<uint16_t> w_valid_;
    bool per_channel_ = true;               // lane sums span a channel's planes (small planes)
    bool same_ = false;                     // stride 1, output plane = input plane: direct kernels
    int64_t same_chunks_ = 0;
    std::vector<int64_t> same_in_off_, same_w_off_;
    std::vector<uint16_t> same_in_mask_, same_w_mask_;  // per tap x chunk: lanes inside the plane
    bool blocked_ = false;                  // channel-blocked kernels (depthwise_blocked.hpp)
    DwBlocked blk_;
    Dt dt_;
    int slots_;
    uint64_t in_slot_ = 0, w_slot_ = 0;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_HPP_
