// Dense rows of any kernel element type (FLOAT, FLOAT16, BF16, DOUBLE) to and from the compute
// type T (float or double), with the ONE rounding of aclnn_cpu/numeric.hpp (round to nearest
// even, once, on store). The AVX-512 forms give the same bits as the scalar ones.
#ifndef GRID_SAMPLER2D_GRID_ROWS_HPP_
#define GRID_SAMPLER2D_GRID_ROWS_HPP_

#include <cstdint>

#include "aclnn_cpu/isa.hpp"
#include "grid_types.hpp"

namespace gsamp {

using acp::cpu_has_avx512;
bool use_avx512(Isa isa);

// dst[i] = src element i, i < n (src dense, element type e).
void load_row(const void *src, Elem e, int64_t n, float *dst, bool avx);
void load_row(const void *src, Elem e, int64_t n, double *dst, bool avx);
// dst element i = src[i] rounded to e, i < n (dst dense).
void store_row(const float *src, int64_t n, Elem e, void *dst, bool avx);
void store_row(const double *src, int64_t n, Elem e, void *dst, bool avx);

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_ROWS_HPP_
