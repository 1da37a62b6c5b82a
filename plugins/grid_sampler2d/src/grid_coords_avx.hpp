// grid_coords.hpp's unnormalize / border clip / bounds check, 16 grid values per vector, with the
// same arithmetic (and so the same bits) as the scalar functions. No integer conversion here.
#ifndef GRID_SAMPLER2D_GRID_COORDS_AVX_HPP_
#define GRID_SAMPLER2D_GRID_COORDS_AVX_HPP_

#include <cstdint>

#include "grid_simd.hpp"
#include "grid_types.hpp"

namespace gsamp {

#if ACP_X86
// Grid values -> source coordinates (unnormalize, then border clipping with PyTorch's gradient),
// 16 at a time, as source_index does one at a time; *d = the derivative.
ACP_AVX512 inline __m512 unnormalize_vec(bool align, __m512 v, int64_t size, __m512 *d) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    __m512 c;
    if (align) {
        *d = _mm512_set1_ps(static_cast<float>(size - 1) / 2);
        c = _mm512_mul_ps(_mm512_mul_ps(_mm512_add_ps(v, one), half), _mm512_set1_ps(static_cast<float>(size - 1)));
    } else {
        *d = _mm512_set1_ps(static_cast<float>(size) / 2);
        c = _mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(v, one), _mm512_set1_ps(static_cast<float>(size))), one), half);
    }
    return _mm512_add_ps(c, _mm512_mul_ps(c, _mm512_setzero_ps()));  // infinite_as_nan
}
ACP_AVX512 inline __m512 source_vec(const Geometry &g, __m512 v, int64_t size, __m512 *d) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 c = unnormalize_vec(g.align, v, size, d);
    if (g.padding == Padding::Border) {
        const __m512 top = _mm512_set1_ps(static_cast<float>(size - 1));
        const __mmask16 below = _mm512_cmp_ps_mask(c, zero, _CMP_LE_OQ);
        c = _mm512_mask_blend_ps(below, c, zero);
        const __mmask16 above = _mm512_cmp_ps_mask(c, top, _CMP_GE_OQ);
        c = _mm512_mask_blend_ps(above, c, top);
        *d = _mm512_mask_blend_ps(static_cast<__mmask16>(below | above), *d, zero);
    }
    return c;
}
// Lanes holding an index of [0, size) (NaN fails).
ACP_AVX512 inline __mmask16 inside_vec(__m512 c, int64_t size) {
    return static_cast<__mmask16>(_mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_GE_OQ) &
                                  _mm512_cmp_ps_mask(c, _mm512_set1_ps(static_cast<float>(size - 1)), _CMP_LE_OQ));
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_COORDS_AVX_HPP_
