// AVX-512 building blocks of the grid_sampler2d backward kernels: lane masks,
// 16 x 16 and 4 x 16 in-register transposes, and 16-element loads / stores of FLOAT, FLOAT16 and
// BF16 rows (converted with numeric_avx512.hpp, the one vector spelling of numeric.hpp). Kept apart
// so every kernel file shares one spelling of them; ACP_X86 = 0 compiles them out elsewhere.
#ifndef GRID_SAMPLER2D_GRID_SIMD_HPP_
#define GRID_SAMPLER2D_GRID_SIMD_HPP_

#include <cstdint>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/transpose_avx512.hpp"
#include "grid_types.hpp"

namespace gsamp {

#if ACP_X86
constexpr __mmask16 kAll = 0xffff;
// Lanes [0, n) (none for n <= 0, all for n >= 16).
ACP_AVX512 inline __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1u);
}

// Up to 16 floats at p (lanes outside m: 0 / untouched). A masked store does not forward its data
// to a later load, nor a store to a masked load, on every core (a stall until the store retires),
// so full vectors, the usual case of a tile, use the plain instructions.
ACP_AVX512 inline __m512 load_n(const float *p, __mmask16 m) {
    return m == kAll ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
ACP_AVX512 inline void store_n(float *p, __mmask16 m, __m512 v) {
    if (m == kAll) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, m, v);
}

using acp::avx512::transpose16;

// Up to 16 elements [idx, idx + 16) of a dense FLOAT / FLOAT16 / BF16 array as FLOAT (lanes outside m: 0).
// The same with the element type fixed at compile time, for loops that would otherwise branch on it.
template <Elem E>
ACP_AVX512 inline __m512 load16_t(const void *base, int64_t idx, __mmask16 m) {
    if constexpr (E == Elem::F32) {
        return _mm512_maskz_loadu_ps(m, static_cast<const float *>(base) + idx);
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(base) + idx);
        if constexpr (E == Elem::F16) return acp::avx512::from_half(h);
        else return acp::avx512::from_bf16(h);
    }
}
template <Elem E>
ACP_AVX512 inline void store16_t(void *base, int64_t idx, __mmask16 m, __m512 v) {
    if constexpr (E == Elem::F32) {
        _mm512_mask_storeu_ps(static_cast<float *>(base) + idx, m, v);
    } else {
        const __m256i h = E == Elem::F16 ? acp::avx512::to_half(v) : acp::avx512::to_bf16(v);
        _mm256_mask_storeu_epi16(static_cast<uint16_t *>(base) + idx, m, h);
    }
}
ACP_AVX512 inline __m512 load16(const void *base, int64_t idx, Elem e, __mmask16 m) {
    if (e == Elem::F32) return _mm512_maskz_loadu_ps(m, static_cast<const float *>(base) + idx);
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(base) + idx);
    return e == Elem::F16 ? acp::avx512::from_half(h) : acp::avx512::from_bf16(h);
}
ACP_AVX512 inline void store16(void *base, int64_t idx, Elem e, __mmask16 m, __m512 v) {
    if (e == Elem::F32) return _mm512_mask_storeu_ps(static_cast<float *>(base) + idx, m, v);
    const __m256i h = e == Elem::F16 ? acp::avx512::to_half(v) : acp::avx512::to_bf16(v);
    _mm256_mask_storeu_epi16(static_cast<uint16_t *>(base) + idx, m, h);
}

// 4 channel rows of 16 pixels <-> 16 pixel records of 4 channels (4 vectors of 4 pixels): the
// narrow-block (lane width 4) form of transpose16, a quarter of the shuffles.
ACP_AVX512 inline void rows4_to_pixels(const __m512 r[4], __m512 out[4]) {
    const __m512 t0 = _mm512_maskz_unpacklo_ps(kAll, r[0], r[1]), t1 = _mm512_maskz_unpackhi_ps(kAll, r[0], r[1]);
    const __m512 t2 = _mm512_maskz_unpacklo_ps(kAll, r[2], r[3]), t3 = _mm512_maskz_unpackhi_ps(kAll, r[2], r[3]);
    const __m512 u0 = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    const __m512 u1 = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    const __m512 u2 = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    const __m512 u3 = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    // u_k, 128-bit lane L: pixel 4 L + k
    const __m512 v0 = _mm512_maskz_shuffle_f32x4(kAll, u0, u1, 0x44), v1 = _mm512_maskz_shuffle_f32x4(kAll, u2, u3, 0x44);
    const __m512 v2 = _mm512_maskz_shuffle_f32x4(kAll, u0, u1, 0xee), v3 = _mm512_maskz_shuffle_f32x4(kAll, u2, u3, 0xee);
    out[0] = _mm512_maskz_shuffle_f32x4(kAll, v0, v1, 0x88);
    out[1] = _mm512_maskz_shuffle_f32x4(kAll, v0, v1, 0xdd);
    out[2] = _mm512_maskz_shuffle_f32x4(kAll, v2, v3, 0x88);
    out[3] = _mm512_maskz_shuffle_f32x4(kAll, v2, v3, 0xdd);
}
ACP_AVX512 inline void pixels_to_rows4(const __m512 a[4], __m512 r[4]) {
    const __m512 s01 = _mm512_maskz_shuffle_f32x4(kAll, a[0], a[1], 0x44), s23 = _mm512_maskz_shuffle_f32x4(kAll, a[2], a[3], 0x44);
    const __m512 s01b = _mm512_maskz_shuffle_f32x4(kAll, a[0], a[1], 0xee), s23b = _mm512_maskz_shuffle_f32x4(kAll, a[2], a[3], 0xee);
    const __m512 u0 = _mm512_maskz_shuffle_f32x4(kAll, s01, s23, 0x88), u1 = _mm512_maskz_shuffle_f32x4(kAll, s01, s23, 0xdd);
    const __m512 u2 = _mm512_maskz_shuffle_f32x4(kAll, s01b, s23b, 0x88), u3 = _mm512_maskz_shuffle_f32x4(kAll, s01b, s23b, 0xdd);
    const __m512 t0 = _mm512_maskz_unpacklo_ps(kAll, u0, u1), t1 = _mm512_maskz_unpackhi_ps(kAll, u0, u1);
    const __m512 t2 = _mm512_maskz_unpacklo_ps(kAll, u2, u3), t3 = _mm512_maskz_unpackhi_ps(kAll, u2, u3);
    r[0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    r[1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    r[2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    r[3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
}

// Prefetches the lines of the channels-last records (ld floats each) at off[i], i < np, of a and b
// (either may be null): one tight loop per tap row of a tile. Every sample's line is prefetched,
// also when it shares the previous sample's (skipping those measured no faster, and the scattered
// cases this is for rarely share). Invalid taps hold offset 0: a harmless prefetch.
ACP_AVX512 inline void prefetch_tap_lines(const int32_t *off, int64_t np, int64_t ld, float *a, const float *b) {
    for (int64_t i = 0; i < np; ++i) {
        const int64_t r = int64_t{off[i]} * ld;
        if (a) __builtin_prefetch(a + r, 1, 3);
        if (b) __builtin_prefetch(b + r, 0, 3);
    }
}
#endif  // ACP_X86

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_SIMD_HPP_
