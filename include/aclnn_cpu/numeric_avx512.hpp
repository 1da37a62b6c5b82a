// aclnn-cpu: numeric.hpp's conversions 16 lanes at a time (AVX-512F), producing the same bits as the
// scalar functions. The one vector spelling for the core's conversion nodes and plugin kernels.
// Call only from functions compiled for AVX-512 (target attribute plus a runtime CPU check).
#ifndef ACLNN_CPU_NUMERIC_AVX512_HPP_
#define ACLNN_CPU_NUMERIC_AVX512_HPP_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ACP_AVX512_FN __attribute__((target("avx512f"))) inline

namespace acp::avx512 {

// The maskz_ forms with all lanes set dodge GCC 12's false -Wmaybe-uninitialized on _mm512_undefined_*().
constexpr __mmask16 kAll = 0xffff;

// float_to_half: vcvtps2ph rounding to nearest even is the IEEE conversion (subnormals kept,
// overflow to inf, NaN quieted keeping its top payload bits).
ACP_AVX512_FN __m256i to_half(__m512 v) { return _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// float_to_bf16 in integer form (vcvtneps2bf16 would flush subnormals): add 0x7fff plus the lsb of
// the result; a NaN gets its quiet bit instead.
// to_bf16_high: the same rounding left in 32-bit lanes (the BF16 bits in each lane's high half,
// the low half not meaningful), for callers that gather the high halves with one permute.
ACP_AVX512_FN __m512i to_bf16_high(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, x, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
}
ACP_AVX512_FN __m256i to_bf16(__m512 v) {
    return _mm512_maskz_cvtepi32_epi16(kAll, _mm512_maskz_srli_epi32(kAll, to_bf16_high(v), 16));
}

// add_ordered (numeric.hpp) in one instruction with its operands pinned: vaddss / vaddps return
// their first source's NaN, and the intrinsics would let the compiler swap the operands. One lane
// (for the scalar loops of vector code, where numeric.hpp's NaN test costs a tenth of a scatter
// loop's time), 16 lanes, and 16 lanes added where m is set, a kept elsewhere.
ACP_AVX512_FN float add_ordered(float a, float b) {
    float r;
    __asm__("vaddss %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}
ACP_AVX512_FN __m512 add_ordered(__m512 a, __m512 b) {
    __m512 r;
    __asm__("vaddps %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}
ACP_AVX512_FN __m512 add_ordered(__m512 a, __mmask16 m, __m512 b) {
    __asm__("vaddps %2, %0, %0%{%1%}" : "+v"(a) : "Yk"(m), "v"(b));
    return a;
}
// The same in double: one lane, 8 (and 8 added where m is set, a kept elsewhere), 4 and 2 lanes
// (double sums folded by halves).
ACP_AVX512_FN double add_ordered(double a, double b) {
    double r;
    __asm__("vaddsd %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}
ACP_AVX512_FN __m512d add_ordered(__m512d a, __m512d b) {
    __m512d r;
    __asm__("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}
ACP_AVX512_FN __m512d add_ordered(__m512d a, __mmask8 m, __m512d b) {
    __asm__("vaddpd %2, %0, %0%{%1%}" : "+v"(a) : "Yk"(m), "v"(b));
    return a;
}
__attribute__((target("avx512f,avx512vl"))) inline __m256d add_ordered(__m256d a, __m256d b) {
    __m256d r;
    __asm__("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}
__attribute__((target("avx512f,avx512vl"))) inline __m128d add_ordered(__m128d a, __m128d b) {
    __m128d r;
    __asm__("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "vm"(b));
    return r;
}

// fma_ordered (numeric.hpp): a * b + c in one vfmadd231 with the factors pinned (the intrinsics
// would let the compiler swap them, and with them which NaN survives). The masked forms are
// _mm512/_mm256_mask3_fmadd_ps's: c kept in the lanes outside m.
ACP_AVX512_FN __m512 fma_ordered(__m512 a, __m512 b, __m512 c) {
    __asm__("vfmadd231ps %2, %1, %0" : "+v"(c) : "v"(a), "vm"(b));
    return c;
}
ACP_AVX512_FN __m512 fma_ordered(__m512 a, __m512 b, __m512 c, __mmask16 m) {
    __asm__("vfmadd231ps %3, %2, %0%{%1%}" : "+v"(c) : "Yk"(m), "v"(a), "vm"(b));
    return c;
}
__attribute__((target("avx512f,avx512vl"))) inline __m256 fma_ordered(__m256 a, __m256 b, __m256 c, __mmask8 m) {
    __asm__("vfmadd231ps %3, %2, %0%{%1%}" : "+v"(c) : "Yk"(m), "v"(a), "vm"(b));
    return c;
}

// Whether this CPU has AVX512_BF16's vcvtneps2bf16, read once when the library is loaded.
inline const bool kCpuConvertsBf16 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
}();

// float_to_bf16 by the CPU (kCpuConvertsBf16 only), for vectors the caller knows hold no subnormal:
// vcvtneps2bf16 rounds to nearest even and quiets NaNs exactly as float_to_bf16 does, but reads a
// subnormal as zero. (Inline asm: callers need no avx512bf16 target.)
ACP_AVX512_FN __m256i to_bf16_no_subnormals(__m512 v) {
    __m256i r;
    __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
    return r;
}

// to_bf16_no_subnormals of lo and hi at once: lo's 16 results in the low half, hi's in the high half.
ACP_AVX512_FN __m512i to_bf16_pair_no_subnormals(__m512 lo, __m512 hi) {
    __m512i r;
    __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi), "v"(lo));
    return r;
}

// bf16_to_float: exact.
ACP_AVX512_FN __m512 from_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
}

// half_to_float: vcvtph2ps is exact but quiets signalling NaNs; half_to_float keeps every NaN's
// bits, so NaN lanes are rebuilt from the half's sign and payload.
ACP_AVX512_FN __m512 from_half(__m256i h) {
    const __m512 f = _mm512_maskz_cvtph_ps(kAll, h);
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(kAll, h);
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(wide, _mm512_set1_epi32(0x7fff)), _mm512_set1_epi32(0x7c00));
    const __m512i sign = _mm512_maskz_slli_epi32(kAll, _mm512_and_si512(wide, _mm512_set1_epi32(0x8000)), 16);
    const __m512i payload = _mm512_maskz_slli_epi32(kAll, _mm512_and_si512(wide, _mm512_set1_epi32(0x3ff)), 13);
    const __m512i bits = _mm512_or_si512(_mm512_or_si512(sign, payload), _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
}

// round_to_hf32: keep 11 mantissa bits, nearest even; inf and NaN unchanged.
ACP_AVX512_FN __m512 round_hf32(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, x, 12), _mm512_set1_epi32(1));
    const __m512i r = _mm512_and_si512(_mm512_set1_epi32(~0xfff), _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7ff), odd)));
    const __mmask16 special =
        _mm512_cmpge_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, special, x));
}

// round_to_fp16 and round_to_bf16: there and back.
ACP_AVX512_FN __m512 round_fp16(__m512 v) { return _mm512_maskz_cvtph_ps(kAll, to_half(v)); }
ACP_AVX512_FN __m512 round_bf16(__m512 v) { return from_bf16(to_bf16(v)); }

}  // namespace acp::avx512

#undef ACP_AVX512_FN
#endif  // x86
#endif  // ACLNN_CPU_NUMERIC_AVX512_HPP_
