// gradInput of a unit-stride convolution as a forward convolution ("mirrored"): gradOutput
// convolved with the weights flipped in space and with their channel roles swapped
// (W'[i][o][k] = W[o][i][K - 1 - k], blocked_store.hpp's mirror_weights), each side padded by
// (kernel - 1) * dilation - pad. Why: oneDNN 2.6 runs forward convolutions on its brgemm kernels
// (channels-last) and backward-data ones on its older direct kernels; on ResNet-50's and VGG-19's
// 3x3 layers the forward is 3-20 % faster at one thread (bench/HISTORY.md, session 40). The data
// pass decides (DataPass::mirrored(); the plan logs it at debug level).
#ifndef CONVOLUTION_SRC_MIRRORED_HPP_
#define CONVOLUTION_SRC_MIRRORED_HPP_

#include "conv_types.hpp"

namespace conv {

// Ungrouped, not transposed, every stride 1, a kernel of more than one position (1x1 layers keep
// their own paths), the whole input reached, and no pad beyond (kernel - 1) * dilation (the
// mirrored pads are never negative).
inline bool runs_mirrored(const Geometry &g, bool transposed) {
    if (transposed || g.G != 1 || g.k_size() == 1 || g.src_used != g.src) return false;
    for (int d = 0; d < 3; ++d) {
        const int64_t reach = (g.k[d] - 1) * g.dil[d];
        if (g.stride[d] != 1 || g.pad_l[d] > reach || g.pad_r[d] > reach) return false;
    }
    return true;
}

// The forward convolution whose result is gradInput: src = gradOutput, dst = gradInput.
inline Geometry mirrored(const Geometry &g) {
    Geometry m = g;
    m.IC = g.OC;
    m.OC = g.IC;
    m.src = g.dst;
    m.src_used = g.dst;
    m.dst = g.src;
    for (int d = 0; d < 3; ++d) {
        const int64_t reach = (g.k[d] - 1) * g.dil[d];
        m.pad_l[d] = reach - g.pad_l[d];
        m.pad_r[d] = reach - g.pad_r[d];
    }
    return m;
}

}  // namespace conv

#endif  // CONVOLUTION_SRC_MIRRORED_HPP_
