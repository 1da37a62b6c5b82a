// Types shared by the grid_sampler2d plan and kernels: the validated geometry, the modes and the
// element types the kernels read and write.
#ifndef GRID_SAMPLER2D_GRID_TYPES_HPP_
#define GRID_SAMPLER2D_GRID_TYPES_HPP_

#include <cstdint>

namespace gsamp {

enum class Interp { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding { Zeros = 0, Border = 1, Reflection = 2 };

// Element types of dense rows the kernels read and write. Compute is FLOAT for F32 / F16 / BF16
// (rounded once when stored) and double for F64.
enum class Elem { F32, F16, BF16, F64 };

inline int64_t elem_bytes(Elem e) { return e == Elem::F64 ? 8 : e == Elem::F32 ? 4 : 2; }

struct Geometry {
    int64_t N, C, H, W;  // input / inputGrad
    int64_t Ho, Wo;      // gradOutput / grid
    Interp interp;
    Padding padding;
    bool align;
    int64_t out_pixels() const { return Ho * Wo; }
    int64_t in_pixels() const { return H * W; }
};

// Code path, for tests: Auto = AVX-512 (FLOAT compute) when the CPU has F, BW, VL and DQ.
enum class Isa { Auto, Scalar, Avx512 };

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_TYPES_HPP_
