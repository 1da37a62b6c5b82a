// MaxPool2dWithMaskBackward on the CPU: gradInput from gradOutput and the mask.
//
// Every output j = (oh, ow) of a plane routes gradOutput[j] to the input element(s) its mask names:
//   Int32 layout  the flat index ih * W + iw (-1 = no maximum: skipped; any other value outside
//                 the output's clipped window is reported as BadIndex, never read or written);
//   Bits layout   every set bit of kernel position k = kh * kW + kw routes to
//                 (oh * sH - pH + kh, ow * sW - pW + kw); positions in the padding are skipped.
// Sums are FLOAT, start at +0 and take the contributions of an element in ascending (j, k) order,
// so every path, thread count and run gives the same bits; FLOAT16 / BF16 results are rounded once
// when stored, and with fp16_compute (FLOAT on atlas-training) gradOutput and the result are
// rounded to FLOAT16 (products.md).
#ifndef MAX_POOL2D_WITH_MASK_MAXPOOL_BACKWARD_HPP_
#define MAX_POOL2D_WITH_MASK_MAXPOOL_BACKWARD_HPP_

#include <cstdint>
#include <memory>

#include "maxpool_types.hpp"

namespace mpool {

struct BackwardPlan;

// Where the first out-of-window int32 index sits (flat output order: plane, then j).
struct BadIndex {
    int64_t plane = -1, j = -1;
    int32_t value = 0;
    bool found() const { return plane >= 0; }
};

enum class StoreMode { Auto, Plain, Streaming };  // Auto: streaming when a FLOAT gradInput is > 16 MB

class BackwardKernel {
public:
    // threads: the runtime's thread count. The planes are split into kPartsPerThread parts per
    // thread, each with its own scratch, taken by whichever thread is free: a thread that stalls
    // (a preempted virtual CPU) leaves its remaining parts to the others.
    static constexpr int64_t kPartsPerThread = 8;
    BackwardKernel(const Geometry &g, DType dt, bool fp16_compute, MaskLayout layout, int64_t threads);
    // Workspace the run needs (scratch of every part), in bytes.
    uint64_t scratch_bytes() const;
    // gradOutput / gradInput: element 0 of (N, C, Ho, Wo) / (N, C, H, W) views with any strides;
    // mask: the dense mask bytes (N, C, kH * kW, row bytes); scratch: scratch_bytes() bytes.
    // Writes every gradInput element of the view, nothing else. Returns false (with *bad) on an
    // int32 index outside its window; gradInput is then partly written.
    bool run(const void *gradOutput, View4 go, const uint8_t *mask, void *gradInput, View4 gi, void *scratch,
             BadIndex *bad) const;

    void set_isa(Isa isa) { isa_ = isa; }
    void set_store_mode(StoreMode m) { store_ = m; }
    // The AVX-512 stride-2 tile path (on by default where it applies); off: the per-output path.
    void set_stride2_tiles(bool on) { tiles_ = on; }
    // The AVX-512 parity path for k2 s2 p0, k3 s2 p1 and k3 s2 p0 (on by default where it applies).
    void set_parity(bool on) { parity_ = on; }
    // The AVX-512 small-plane path for int32 masks (on by default where it applies, after parity).
    void set_small_planes(bool on) { small_ = on; }
    // The AVX-512 gather path for stride-1 windows (on by default where it applies).
    void set_gather(bool on) { gather_ = on; }

private:
    std::shared_ptr<const BackwardPlan> plan_;
    Isa isa_ = Isa::Auto;
    StoreMode store_ = StoreMode::Auto;
    bool tiles_ = true;
    bool parity_ = true;
    bool small_ = true;
    bool gather_ = true;
};

}  // namespace mpool

#endif  // MAX_POOL2D_WITH_MASK_MAXPOOL_BACKWARD_HPP_
