// Types shared by the max_pool2d_with_mask plan and kernels: the validated pooling geometry, the
// element types, the two mask layouts of ops.md and the mask's size.
#ifndef MAX_POOL2D_WITH_MASK_MAXPOOL_TYPES_HPP_
#define MAX_POOL2D_WITH_MASK_MAXPOOL_TYPES_HPP_

#include <algorithm>
#include <cstdint>

#include "aclnn_cpu/nchw.hpp"

namespace mpool {

struct Geometry {          // validated by the plan: sizes > 0, dilation 1, padding <= kernel / 2
    int64_t N, C, H, W;    // self / gradInput
    int64_t Ho, Wo;        // pooled size (gradOutput / out)
    int64_t kH, kW, sH, sW, pH, pW;
    int64_t planes() const { return N * C; }
    int64_t kernel_positions() const { return kH * kW; }
    // Window of output row oh / column ow, clipped to the input: [lo, hi).
    int64_t row_lo(int64_t oh) const { return std::max<int64_t>(oh * sH - pH, 0); }
    int64_t row_hi(int64_t oh) const { return std::min(oh * sH - pH + kH, H); }
    int64_t col_lo(int64_t ow) const { return std::max<int64_t>(ow * sW - pW, 0); }
    int64_t col_hi(int64_t ow) const { return std::min(ow * sW - pW + kW, W); }
};

using acp::DType;
using acp::View4;

// ops.md: atlas-a2/a3 keep the int32 argmax `ih * W + iw` of every output, flat in output order
// at the start of the mask buffer; atlas-training (and atlas-inference) keep one bit per output
// and kernel position.
enum class MaskLayout { Int32, Bits };

// Code path, for tests and tuning: Auto = AVX-512 when the CPU has F, BW, VL and DQ, else scalar.
// Both paths produce the same bits.
enum class Isa { Auto, Scalar, Avx512 };

// What the forward and backward kernels' plans start with: the geometry, the element type (fp16:
// FLOAT computed as FLOAT16), the mask layout, and the scratch slots the planes are split over.
struct KernelPlanBase {
    Geometry g{};
    DType dt = DType::F32;
    bool fp16 = false;
    MaskLayout layout = MaskLayout::Int32;
    int64_t slots = 1;
};

// Bytes of one mask row (one (n, c, kernel position)): (ceil(Ho * Wo / 16) + 1) * 32.
inline int64_t mask_row_bytes(int64_t Ho, int64_t Wo) { return ((Ho * Wo + 15) / 16 + 1) * 32; }
inline int64_t mask_plane_bytes(const Geometry &g) { return g.kernel_positions() * mask_row_bytes(g.Ho, g.Wo); }

}  // namespace mpool

#endif  // MAX_POOL2D_WITH_MASK_MAXPOOL_TYPES_HPP_
