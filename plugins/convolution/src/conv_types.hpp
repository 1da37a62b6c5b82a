// The convolution plugin's problem description, in the roles of a plain (non-transposed) convolution
//   dst = conv(src, weights)   src (N, IC, S...), weights (OC, IC/G, K...), dst (N, OC, D...)
// ConvolutionBackward maps onto it: non-transposed, src = input and dst = gradOutput; transposed,
// src = gradOutput and dst = input (a transposed convolution is the data gradient of the plain one
// with the same weights), so every gradient is one of the three oneDNN directions on this geometry.
#ifndef CONVOLUTION_SRC_CONV_TYPES_HPP_
#define CONVOLUTION_SRC_CONV_TYPES_HPP_

#include <array>
#include <cstdint>

namespace conv {

struct Geometry {
    int sd = 2;  // spatial dims: 1, 2 or 3
    int64_t N = 0, IC = 0, OC = 0, G = 1;
    std::array<int64_t, 3> src{1, 1, 1}, dst{1, 1, 1}, k{1, 1, 1};
    std::array<int64_t, 3> stride{1, 1, 1}, dil{1, 1, 1}, pad_l{0, 0, 0}, pad_r{0, 0, 0};
    // The part of src a window can reach. Smaller than src only for a transposed convolution whose
    // outputPadding is >= stride (allowed when < dilation): the trailing rows get no contribution.
    std::array<int64_t, 3> src_used{1, 1, 1};

    int64_t src_plane() const { return src[0] * src[1] * src[2]; }
    int64_t dst_plane() const { return dst[0] * dst[1] * dst[2]; }
    int64_t k_size() const { return k[0] * k[1] * k[2]; }
    int64_t weight_elems() const { return OC * (IC / G) * k_size(); }
};

// Element types the engine handles; FLOAT16 is converted to FLOAT before it reaches oneDNN.
enum class Dt { F32, BF16 };

// Results of this many bytes or more are written with streaming stores (they would not stay in the
// 32 MB L3 beside their operands, and a plain store first reads each line it writes).
inline constexpr uint64_t kStreamBytes = uint64_t{4} << 20;

}  // namespace conv

#endif  // CONVOLUTION_SRC_CONV_TYPES_HPP_
