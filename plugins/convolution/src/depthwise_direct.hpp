// Direct NCHW depthwise gradients for MobileNet's layers: 3x3 kernels, padding 1 (the output size
// that symmetric padding 1 gives), dilation 1, stride 1 or 2 in both dimensions, FLOAT or BF16
// operands. The taps read the caller's planes where they are, no transposes (the channel-blocked
// kernels spend most of their time transposing 16 planes to channels-last and back).
//   Stride 1: vectors of 16 consecutive positions of the flattened plane (p = y*W + x; a 7x7 plane
//             is 4 vectors, not 7 one-row vectors); tap (a, b) is a fixed element offset, and a
//             per-vector table of masks says which lanes' tap lands inside the plane. Rows of 9 to
//             16 (14x14): a vector per row instead, the rows it meets kept in registers and shifted
//             a lane either way (no mask table). FLOAT gradWeight of the other rows narrower than a
//             vector shifts loaded vectors instead of reloading. Planes of 5 to 7 columns and at
//             most 8 rows (7x7): pitched vectors of two rows each (row pitch 8 lanes, pitched()),
//             the whole plane in registers, each tap a lane shift of them; lanes masked by column
//             and, in the first and last vectors, by row (compile-time masks, no table).
//             Where the CPU splits 512-bit vectors in two (Zen 4), FLOAT planes of at most 8 columns
//             and rows take half-width rows instead: a 256-bit vector per row, each tap a masked load
//             at its column offset (set_half_width; the same sums in the same order).
//             FLOAT rows wider than a vector (28, 56, 112): the same flattened vectors, but each
//             tap's vector is shifted out of the plane's own aligned vectors (valignd; three per
//             tap row kept in registers in gradWeight, six per tap row for four vectors in
//             gradInput) instead of loaded at its offset, which crossed a cache line in 8 of 9
//             taps; vectors wholly in rows 1 .. H - 2 mask their taps by column only (a kernel per
//             W % 16, whose shifts are then immediates).
//             BF16 gradInput of rows wider than a vector: strips of 32 columns walked down bands of
//             16 rows, each gradient row of a strip loaded once (its even and odd columns widened
//             from one load) and kept in registers for the three output rows that read it. BF16
//             gradWeight of such rows: the same strips down the same bands, two columns per lane,
//             each input row widened once and kept for the three gradient rows that read it.
//   Stride 2: vectors of 16 output columns of one row. gradWeight reads 32 input columns and splits
//             them into even and odd columns; gradInput computes even and odd input columns apart
//             (their taps differ), an input row pair at a time, and interleaves them on the store
//             (gradient rows of at most a vector: each loaded once, masks once per plane).
//   gradInput  per input position: the taps whose gradient position is inside, in tap order
//              (rows, then columns), each one fused multiply-add from zero; BF16 rounded once
//              (numeric.hpp's rounding; by the CPU's vcvtneps2bf16 where the plane's sums cannot be
//              subnormal, cpu_rounds in the AVX-512 spelling: the same bits). BF16 stride-1 planes
//              (pitched, by rows, strips) whose gradient and weights are all 0 or finite and not
//              tiny take two taps per vdpbf16ps (the same fused multiply-adds in the same order,
//              task_dots: the same bits again). A large FLOAT gradInput of flattened planes is
//              stored streamed (set_streamed_stores: no read of the lines it writes).
//   gradWeight per channel over a fixed range of images: per tap and lane (a product's lane is
//              its gradient position's in the vectors above - flattened, row, BF16 strip - or,
//              pitched, its input column's), FLOAT sums over the vectors in order, moved into double every
//              kFlush vectors; the lanes added pairwise (lanes_pairwise), the image ranges in
//              order. A task takes a few channels of small planes. Fixed by the shape: same bytes
//              at any thread count.
// Positions outside the plane are skipped (masked multiply-adds), never multiplied as zeros: an
// infinite operand next to the padding must not make a NaN. Two spellings with the same arithmetic
// per element, every multiply-add and sum pinned to one operand order (acp::fma_ordered and
// add_ordered: the same NaN where NaNs meet): AVX-512 (depthwise_direct_avx_gi.cpp, _gw.cpp,
// shared parts in depthwise_direct_avx.hpp) and scalar (depthwise_direct.cpp, with the planning
// and the task split); depthwise_direct_common.hpp holds what they share.
#ifndef CONVOLUTION_SRC_DEPTHWISE_DIRECT_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_DIRECT_HPP_

#include <cstdint>
#include <vector>

#include "aclnn_cpu/slot_pool.hpp"
#include "conv_types.hpp"
#include "depthwise_blocked.hpp"

namespace conv {

class DwDirect {
public:
    // The shapes these kernels take; the rest stays with DwBlocked.
    static bool handles(const DwShape &s, Dt dt);
    DwDirect() = default;
    DwDirect(const DwShape &s, Dt dt);

    // gradWeight's scratch: `slots` slots of slot_bytes() (a task's double lane sums), then
    // partial_bytes() (per channel and image range); gradInput needs none.
    uint64_t slot_bytes() const;
    uint64_t partial_bytes() const;
    // The operands and results of DwBlocked::run; gradBias is not here either.
    void run(const DwBlocked::Io &io, uint8_t *scratch, const acp::SlotPool &slots, bool avx) const;
    // Whether a FLOAT gradInput of flattened planes of whole vectors is stored streamed when it is
    // 64-byte aligned: set for those of kStreamBytes or more, or by a test. Measured on MobileNet's
    // 8x128x56x56 FLOAT layer, all three gradients concurrently: -6 % in the bench (median of six
    // alternating runs), -9 % in a kernel harness. A column-strip gradInput kernel (each gradient row
    // loaded once for its three output rows) was 2x faster in L2 but slower from memory: not kept.
    bool streamed_stores() const { return stream_; }
    void set_streamed_stores(bool on) { stream_ = on && s_.sh == 1 && (s_.H * s_.W) % kStreamVector == 0; }

    // Whether FLOAT pitched planes (7x7) run as half-width rows, one 256-bit vector per row, their
    // taps loaded at their column offsets: set where the CPU splits 512-bit vectors
    // (cpu_splits_avx512: the pitched vectors' lane shifts cost as much as the multiply-adds there),
    // or by a test. The same bytes either way. Zen 4, MobileNet's 8x1024x7x7 FLOAT layer, one
    // thread: gradInput 93 us against 164, gradWeight 129 against 155.
    bool half_width() const { return half_; }
    void set_half_width(bool on) { half_ = on; }

    // Whether BF16 stride-1 gradInput takes its taps in pairs by vdpbf16ps where its operands allow
    // (task_dots): set where the CPU prefers it (cpu_prefers_bf16_dots), or by a test. The same
    // bytes either way.
    bool bf16_dots() const { return dots_; }
    void set_bf16_dots(bool on) { dots_ = on; }

private:
    DwShape s_;
    Dt dt_ = Dt::F32;
    int64_t group_ = 1;  // gradWeight: channels per task (small planes share a task)
    int64_t parts_ = 1;  // gradWeight: image ranges per channel group (few groups: more tasks)
    int64_t grain_ = 1;  // gradInput: planes per TBB task (small planes share a task)
    int64_t nv_ = 0;     // stride 1: vectors per flattened plane
    bool stream_ = false;
    bool half_ = false;
    bool dots_ = false;
    static constexpr int64_t kStreamVector = 16;  // FLOAT elements per streamed store
    // stride 1, per vector: for the 9 neighbour offsets (dy, dx) in {-1, 0, 1}^2, (dy + 1) * 3 +
    // dx + 1, the lanes inside the plane whose neighbour is inside too; full_: all nine are 0xffff
    std::vector<uint16_t> mask_;
    std::vector<uint8_t> full_;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DEPTHWISE_DIRECT_HPP_
