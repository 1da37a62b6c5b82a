// Our own stores of oneDNN's 16-channel-blocked FLOAT results into the caller's dense layout,
// and of dense operands into the blocked layout,
// rounding once to FLOAT16 / BF16 in the same pass (numeric.hpp's rounding; numeric_avx512.hpp's
// spelling of it). Why: oneDNN 2.6's reorder of the weights' 16x16 tiles to oihw runs at ~5 GB/s
// (4 ms of ResNet-50's 7x7 3x3 layer), and a low-precision gradInput otherwise costs a FLOAT
// reorder plus a separate rounding pass. Pure data movement plus one rounding per element: the same
// bytes whatever thread runs which part.
#ifndef CONVOLUTION_SRC_BLOCKED_STORE_HPP_
#define CONVOLUTION_SRC_BLOCKED_STORE_HPP_

#include <cstddef>
#include <cstdint>

namespace conv {

// Element type of the dense destination: FLOAT, or FLOAT rounded to FLOAT16 / BF16.
enum class OutDt { F32, F16, BF16 };
inline size_t out_size(OutDt t) { return t == OutDt::F32 ? 4 : 2; }

// oneDNN's two channel-inner layouts of activations: nC[spatial]16c (nChw16c, the channels padded
// to a multiple of 16) and channels-last (NHWC, unpadded): element (n, c, s) of an image at
//   (c / cw) * cw * plane + s * cw + c % cw   with cw = 16 (C16) or C (Nhwc).
enum class ActLayout { C16, Nhwc };

// Activations in that layout (element (n, c, s) of N images at src[n * src_image + ...]) into the
// dense dst[n * dst_image + c * plane + s] (elements of t), for c < C, s < plane.
void unblock_acts(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                  OutDt t, ActLayout l = ActLayout::C16);

// Weights (O, I, K spatial positions) in oneDNN's 16x16 tiles (ABcd16b16a when o_inner, else
// ABcd16a16b): element (o, i, k) at
//   src[((o / 16 * IB + i / 16) * K + k) * 256 + (o_inner ? (i % 16) * 16 + o % 16 : (o % 16) * 16 + i % 16)]
// with IB = ceil(I / 16), into the dense dst[(o * I + i) * K + k] for the output channels of
// 16-blocks [ob0, ob1). src is the sum of n_parts partial results of that layout, added element by
// element in part order ((p0 + p1) + p2 ...: the weight pass's partial gradients), summed on the way.
void unblock_weights(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst, OutDt t,
                     int64_t ob0, int64_t ob1);

// The other way, for the operands: N dense images of C channels (element (n, c, s) at
// src[n * src_image + c * plane + s], FLOAT or BF16: es = 4 or 2 bytes) into the layout l of the
// same type at dst[n * dst_image + ...], nC16c's padding channels (C..ceil(C/16)*16) zero as
// oneDNN's reorder leaves them. Bit copies. Why: oneDNN 2.6's reorders of BF16 activations to
// nC16c and of any to NHWC run at ~5-20 GB/s.
void block_acts(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image, size_t es,
                ActLayout l = ActLayout::C16);

// The weights into the blocked layouts oneDNN's data passes read, a bit copy with zero padding:
// element (o, i, k) of src[o * o_stride + i * K + k] (o < O, i < I: a slice of wider weights when
// o_stride > I * K) at tile ((A outer ? ob * IB + ib : ib * OB + ob) * K + k) * 256 of dst, within the
// tile at (o % 16) * 16 + i % 16 (FLOAT, ABcd16a16b) or ((o % 16) / 2) * 32 + (i % 16) * 2 + o % 2
// (BF16, ABcd8a16b2a / BAcd8a16b2a). Why: oneDNN 2.6's reorders to these run at ~5 GB/s.
enum class WeightTiles { F32_16a16b, BF16_8a16b2a };
void block_weights(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, WeightTiles tiles, bool a_outer, void *dst);

// The weights of the mirrored convolution (mirrored.hpp) in the layout of oneDNN's FLOAT forward
// brgemm kernels: from weights (O, I, K <= 16 kernel positions) with element (o, i, k) at
// src[o * row + i * K + k] (row = I * K when dense; wider: a slice of input channels),
// W'[i][o][k] = W[o][i][K - 1 - k] at dst[(i / B) * ob_stride + o * ic_stride + k_off[k] + i % B]
// for i < ceil(I / B) * B (zero past I), o < O. B a multiple of 16. A bit copy.
struct MirrorLayout {
    int64_t B = 16, ob_stride = 0, ic_stride = 0;
    int64_t k_off[16] = {};
};
void mirror_weights(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst);

namespace detail {  // the same with the spelling chosen (tests): vec needs AVX-512 (cpu.hpp)
void block_acts(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image, size_t es,
                bool vec, ActLayout l = ActLayout::C16);
void unblock_acts(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                  OutDt t, bool vec, ActLayout l = ActLayout::C16);
void unblock_weights(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst, OutDt t,
                     int64_t ob0, int64_t ob1, bool vec);
void block_weights(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, WeightTiles tiles, bool a_outer, void *dst,
                   bool vec);
void mirror_weights(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst, bool vec);
}  // namespace detail

}  // namespace conv

#endif  // CONVOLUTION_SRC_BLOCKED_STORE_HPP_
