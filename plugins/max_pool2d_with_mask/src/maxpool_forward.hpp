// MaxPool2dWithMask on the CPU: out (N, C, Ho, Wo) and the mask from self (N, C, H, W).
//
// Window order is row-major over the window clipped to the input; PyTorch 1.13's CPU rule picks
// the element: the running maximum starts at -inf with the window's first element, and an element
// replaces it when it is greater or NaN. So the first of equal maxima wins, NaN beats everything
// (the last NaN of the window wins) and a window of -inf keeps its first element. out is that
// element (rounded to FLOAT16 first for FLOAT on atlas-training, as the device computes there).
// The mask gets every byte written: Int32 = argmax ih * W + iw of each output in output order,
// then zeros (unless set_mask_padding(false)); Bits = one set bit per output (kernel position of
// the argmax), zeros elsewhere.
#ifndef MAX_POOL2D_WITH_MASK_MAXPOOL_FORWARD_HPP_
#define MAX_POOL2D_WITH_MASK_MAXPOOL_FORWARD_HPP_

#include <cstdint>
#include <memory>

#include "maxpool_types.hpp"

namespace mpool {

struct ForwardPlan;

class ForwardKernel {
public:
    ForwardKernel(const Geometry &g, DType dt, bool fp16_compute, MaskLayout layout, int64_t slots);
    uint64_t scratch_bytes() const;
    // self / out: element 0 of views with any strides; mask: the dense mask (N * C * kH * kW rows).
    void run(const void *self, View4 in, void *out, View4 outv, uint8_t *mask, void *scratch) const;

    void set_isa(Isa isa) { isa_ = isa; }
    // Int32 layout: false writes the Ho*Wo values of every plane and nothing after them (CANN's
    // INT32 indices of MaxPool2dWithIndices, which have no mask padding to zero).
    void set_mask_padding(bool write) { mask_padding_ = write; }

private:
    std::shared_ptr<const ForwardPlan> plan_;
    Isa isa_ = Isa::Auto;
    bool mask_padding_ = true;
};

}  // namespace mpool

#endif  // MAX_POOL2D_WITH_MASK_MAXPOOL_FORWARD_HPP_
