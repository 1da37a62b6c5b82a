// aclnn-cpu: the one in-register 16 x 16 transpose of FLOAT lanes (AVX-512F), for plugin kernels
// that move NCHW planes to and from 16-channel blocks. Call only from functions compiled for
// AVX-512 (target attribute plus a runtime CPU check).
#ifndef ACLNN_CPU_TRANSPOSE_AVX512_HPP_
#define ACLNN_CPU_TRANSPOSE_AVX512_HPP_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace acp::avx512 {

// r[i] lane j -> o[j] lane i. Always inlined and fully unrolled so the 16 rows stay in registers
// (a call or a loop would spill them). The maskz_ forms with all lanes set dodge GCC 12's false
// -Wmaybe-uninitialized on _mm512_undefined_*().
__attribute__((target("avx512f"), always_inline)) inline void transpose16(const __m512 r[16], __m512 o[16]) {
    constexpr __mmask16 all16 = 0xffff;
    constexpr __mmask8 all8 = 0xff;
    __m512 t[16], u[16];
#pragma GCC unroll 16
    for (int i = 0; i < 8; ++i) {  // pairs of rows interleaved within each 128-bit lane
        t[2 * i] = _mm512_maskz_unpacklo_ps(all16, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_ps(all16, r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 16
    for (int g = 0; g < 4; ++g) {  // 4 x 4 blocks within each 128-bit lane
        const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g + 0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, a, c));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, a, c));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, b, d));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, b, d));
    }
    // u[4g + k], 128-bit lane q: rows 4g..4g+3 of column 4q + k; now move the 128-bit lanes
#pragma GCC unroll 16
    for (int k = 0; k < 4; ++k) {
        const __m512 s0 = _mm512_maskz_shuffle_f32x4(all16, u[k], u[4 + k], 0x88);
        const __m512 s1 = _mm512_maskz_shuffle_f32x4(all16, u[k], u[4 + k], 0xdd);
        const __m512 s2 = _mm512_maskz_shuffle_f32x4(all16, u[8 + k], u[12 + k], 0x88);
        const __m512 s3 = _mm512_maskz_shuffle_f32x4(all16, u[8 + k], u[12 + k], 0xdd);
        o[k] = _mm512_maskz_shuffle_f32x4(all16, s0, s2, 0x88);
        o[8 + k] = _mm512_maskz_shuffle_f32x4(all16, s0, s2, 0xdd);
        o[4 + k] = _mm512_maskz_shuffle_f32x4(all16, s1, s3, 0x88);
        o[12 + k] = _mm512_maskz_shuffle_f32x4(all16, s1, s3, 0xdd);
    }
}

// In place: r[i] lane j <-> r[j] lane i.
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
    __m512 o[16];
    transpose16(r, o);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = o[i];
}

}  // namespace acp::avx512

#endif
#endif
