// avgpool2d row stages, AVX-512 spelling (see avgpool2d_rows.hpp): w stride 1, the same order and
// roundings as the scalar stages. The file is built for the baseline ISA; its functions carry a
// function-level target and only run after the runtime check in detail::cpu_has_avx512().
#include "avgpool2d_rows.hpp"

#if ACP_X86
#include <immintrin.h>

#include <algorithm>

#include "aclnn_cpu/numeric_avx512.hpp"


namespace avgpool2d {
namespace {

// All-lanes mask. The maskz_ forms of unmasked intrinsics below dodge a GCC 12 false
// -Wmaybe-uninitialized on _mm512_undefined_*().
constexpr __mmask16 kAll = 0xffff;

ACP_AVX512 inline __mmask16 tail_mask(int64_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// 16 elements -> FLOAT. FLOAT16 via vcvtph2ps (exact); BF16 is the upper half of a FLOAT.
// (A signalling FLOAT16 NaN comes out quieted here and not in acp::half_to_float, but every loaded
// value is multiplied or added before it is stored, which quiets it in both paths.)
template <DType DT>
ACP_AVX512 inline __m512 vload(const char* p, __mmask16 m) {
    if constexpr (DT == DType::F32) {
        return _mm512_maskz_loadu_ps(m, p);
    } else if constexpr (DT == DType::F16) {
        return _mm512_maskz_cvtph_ps(kAll, _mm256_maskz_loadu_epi16(m, p));
    } else {
        const __m512i u = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(m, p));
        return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, u, 16));
    }
}

ACP_AVX512 inline __m512 vopaque(__m512 x) {
    asm("" : "+v"(x));
    return x;
}

// FLOAT16 and BF16 stores round with acp::avx512 (numeric_avx512.hpp), numeric.hpp's bits.
ACP_AVX512 inline __m256i vround_f16(__m512 v) { return acp::avx512::to_half(v); }
ACP_AVX512 inline __m256i vround_bf16(__m512 v) { return acp::avx512::to_bf16(v); }

// The same with vcvtneps2bf16 (AVX512_BF16; only called when the CPU has it, hence the asm: the
// file is not built for it). The instruction rounds to nearest even and quiets NaNs exactly as
// acp::float_to_bf16 but flushes FLOAT subnormal inputs to zero: vectors holding one take the
// integer formula (vfpclassps finds them; they are rare).
ACP_AVX512 inline __m256i vround_bf16_hw(__m512 v) {
    __m256i r;
    asm("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
    const __mmask16 sub = _mm512_fpclass_ps_mask(v, 0x20);  // 0x20: subnormal
    if (__builtin_expect(sub != 0, 0)) r = vround_bf16(v);
    return r;
}

// FLOAT -> 16 lanes of DT's 16-bit encoding; HW: use vround_bf16_hw for BF16.
template <DType DT, bool HW>
ACP_AVX512 inline __m256i vround(__m512 v) {
    if constexpr (DT == DType::F16) return vround_f16(v);
    else if constexpr (HW) return vround_bf16_hw(v);
    else return vround_bf16(v);
}

// Store 16 FLOATs as DT to p; `left` elements remain in the run (masked tail store below 16).
template <DType DT, bool HW = false>
ACP_AVX512 inline void vstore(void* p, __m512 v, int64_t left) {
    if constexpr (DT == DType::F32) {
        if (left >= 16)
            _mm512_storeu_ps(p, v);
        else
            _mm512_mask_storeu_ps(p, tail_mask(left), v);
    } else {
        const __m256i r = vround<DT, HW>(v);
        if (left >= 16)
            _mm256_storeu_si256(static_cast<__m256i*>(p), r);
        else
            _mm256_mask_storeu_epi16(p, tail_mask(left), r);
    }
}

// Store a run of n elements of DT whose FLOAT values come 16 at a time from f(j) (j = 0, 16, ...).
// With `stream`, whole 64-byte lines that are 64-byte aligned are written with non-temporal stores
// (no read-for-ownership of lines that are wholly overwritten; for 16-bit types two chunks make one
// line, after at most one plain chunk to reach alignment); everything else (run ends, misaligned
// runs) uses plain stores. A line is streamed only when it lies wholly inside this run, so lines
// shared with a neighbouring row or work item are never streamed.
template <DType DT, bool HW, class F>
ACP_AVX512 inline void store_row(char* dst, int64_t n, bool stream, F f) {
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    int64_t j = 0;
    if (stream) {
        uintptr_t a = reinterpret_cast<uintptr_t>(dst) & 63u;
        if (DT != DType::F32 && a == 32 && n >= 16) {
            vstore<DT, HW>(dst, f(0), n);
            j = 16;
            a = 0;
        }
        if (a == 0) {
            if constexpr (DT == DType::F32) {
                for (; j + 16 <= n; j += 16) _mm512_stream_ps(reinterpret_cast<float*>(dst + j * es), f(j));
            } else {
                for (; j + 32 <= n; j += 32) {
                    const __m256i r0 = vround<DT, HW>(f(j));
                    const __m256i r1 = vround<DT, HW>(f(j + 16));
                    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j * es),
                                        _mm512_maskz_inserti64x4(0xff, _mm512_castsi256_si512(r0), r1, 1));
                }
            }
        }
    }
    for (; j < n; j += 16) vstore<DT, HW>(dst + j * es, f(j), n - j);
}

template <bool HW>
ACP_AVX512 void round_avx(const float* src, uint16_t* dst, int64_t n, DType dt) {
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), src + i);
        if (dt == DType::F16)
            vstore<DType::F16>(dst + i, v, n - i);
        else
            vstore<DType::BF16, HW>(dst + i, v, n - i);
    }
}

// P for a gradOutput row with w stride 1. Writes round_up16(n) floats (zeros past n).
template <DType DT>
ACP_AVX512 void bw_products_avx(float* P, const char* go_row, int64_t go_w, const float* srow, int64_t n, DType) {
    (void)go_w;  // == 1
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 p = _mm512_mul_ps(vload<DT>(go_row + j * es, m), _mm512_maskz_loadu_ps(m, srow + j));
        _mm512_store_ps(P + j, vopaque(p));
    }
}

// Stage A, one gradOutput row: whole 16-column chunks of Q (lanes past the segment get 0).
// T > 0: every chunk of the segment has T terms (no per-chunk dispatch); T = 0: per-chunk counts.
// acc += (lo:hi)[idx] in the lanes of each term's mask.
template <int T>
ACP_AVX512 inline void bw_stage_a_loop(const Chunk* ck, const Term* terms, int64_t nchunks, const float* P, float* Q) {
    for (int64_t i = 0; i < nchunks; ++i, ++ck, Q += 16) {
        const __m512 lo = _mm512_loadu_ps(P + ck->off), hi = _mm512_loadu_ps(P + ck->off + 16);
        const Term* t = terms + ck->first;
        __m512 acc = _mm512_setzero_ps();
        const int32_t count = T > 0 ? T : ck->count;
        for (int32_t k = 0; k < count; ++k) {
            const __m512 v = _mm512_permutex2var_ps(lo, _mm512_load_si512(t[k].idx), hi);
            acc = acp::avx512::add_ordered(acc, _load_mask16(const_cast<__mmask16*>(&t[k].mask)), v);
        }
        _mm512_store_ps(Q, acc);
    }
}

// Stage A of two gradOutput rows at once: the chunk descriptors, indices and masks are loaded once.
template <int T>
ACP_AVX512 inline void bw_stage_a2_loop(const Chunk* ck, const Term* terms, int64_t nchunks, const float* P0,
                                       const float* P1, float* Q0, float* Q1) {
    for (int64_t i = 0; i < nchunks; ++i, ++ck, Q0 += 16, Q1 += 16) {
        const __m512 lo0 = _mm512_loadu_ps(P0 + ck->off), hi0 = _mm512_loadu_ps(P0 + ck->off + 16);
        const __m512 lo1 = _mm512_loadu_ps(P1 + ck->off), hi1 = _mm512_loadu_ps(P1 + ck->off + 16);
        const Term* t = terms + ck->first;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        const int32_t count = T > 0 ? T : ck->count;
        for (int32_t k = 0; k < count; ++k) {
            const __m512i idx = _mm512_load_si512(t[k].idx);
            const __mmask16 m = _load_mask16(const_cast<__mmask16*>(&t[k].mask));
            acc0 = acp::avx512::add_ordered(acc0, m, _mm512_permutex2var_ps(lo0, idx, hi0));
            acc1 = acp::avx512::add_ordered(acc1, m, _mm512_permutex2var_ps(lo1, idx, hi1));
        }
        _mm512_store_ps(Q0, acc0);
        _mm512_store_ps(Q1, acc1);
    }
}

ACP_AVX512 void bw_stage_a_avx(const BackwardPlan& B, const BwSeg& s, const float* P, float* Q) {
    const Chunk* ck = B.chunks.data() + s.w0 / 16;
    const int64_t nchunks = (s.w1 - s.w0 + 15) / 16;
    switch (s.terms) {  // the common uniform counts unrolled
        case 1: return bw_stage_a_loop<1>(ck, B.terms.data(), nchunks, P, Q);
        case 2: return bw_stage_a_loop<2>(ck, B.terms.data(), nchunks, P, Q);
        case 3: return bw_stage_a_loop<3>(ck, B.terms.data(), nchunks, P, Q);
        default: return bw_stage_a_loop<0>(ck, B.terms.data(), nchunks, P, Q);
    }
}

ACP_AVX512 void bw_stage_a2_avx(const BackwardPlan& B, const BwSeg& s, const float* P0, const float* P1, float* Q0,
                               float* Q1) {
    const Chunk* ck = B.chunks.data() + s.w0 / 16;
    const int64_t nchunks = (s.w1 - s.w0 + 15) / 16;
    switch (s.terms) {
        case 1: return bw_stage_a2_loop<1>(ck, B.terms.data(), nchunks, P0, P1, Q0, Q1);
        case 2: return bw_stage_a2_loop<2>(ck, B.terms.data(), nchunks, P0, P1, Q0, Q1);
        case 3: return bw_stage_a2_loop<3>(ck, B.terms.data(), nchunks, P0, P1, Q0, Q1);
        default: return bw_stage_a2_loop<0>(ck, B.terms.data(), nchunks, P0, P1, Q0, Q1);
    }
}

// Stage B into a contiguous run of n elements of DT. Starting from rows[0] instead of
// +0 + rows[0] gives the same bits: a Q entry is never -0 (stage A starts from +0).
// `stream`: see store_row.
template <DType DT, bool HW>
ACP_AVX512 void bw_stage_b_avx(const float* const* rows, int64_t count, int64_t n, char* out, bool stream) {
    store_row<DT, HW>(out, n, stream, [&](int64_t j) ACP_AVX512 {
        __m512 acc = _mm512_load_ps(rows[0] + j);
        for (int64_t i = 1; i < count; ++i) acc = acp::avx512::add_ordered(acc, _mm512_load_ps(rows[i] + j));
        return acc;
    });
}

// P[j0 + l + d] (lanes whose gradOutput column j0 + l + d lies in [0, Wo); +0 elsewhere), as
// bw_products_avx makes it.
// The lanes come from a vector compare of their columns (col: lane l holds j0 + l) with Wo. Made
// in a general register and moved by kmovw, they held up the loads that take them (session 41,
// bench A/B on 32x64x112x112 k3 s2 p1: FLOAT -16 %, FLOAT16 and BF16 -6 to -9 %).
template <DType DT, int D>
ACP_AVX512 inline __m512 parity_products(const char* g_row, const float* srow, int64_t j0, __m512i col, __m512i wo, __mmask16* m) {
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    // (unsigned: columns below 0 wrap past Wo)
    *m = _mm512_cmplt_epu32_mask(D == 0 ? col : _mm512_add_epi32(col, _mm512_set1_epi32(D)), wo);
    return vopaque(_mm512_mul_ps(vload<DT>(g_row + (j0 + D) * es, *m), _mm512_maskz_loadu_ps(*m, srow + j0 + D)));
}

// Stage A of one gradOutput row on the parity path (BackwardPlan::parity): Q[w] for w in
// [0, round_up16(W)), the same sums in the same order as the tables. With 16 outputs j = j0 + l
// of a block, gradInput column 2 j (E) and 2 j + 1 (O) take, in ascending order of ow:
//   k2 p0: E = 0 + P[j],            O = 0 + P[j]
//   k2 p1: E = 0 + P[j],            O = 0 + P[j + 1]
//   k3 p0: E = (0 + P[j - 1]) + P[j], O = 0 + P[j]
//   k3 p1: E = 0 + P[j],            O = (0 + P[j]) + P[j + 1]
// each term only where its output exists (masked adds on +0), then interleaved into 32 columns.
// Against the tables (products row, then one vpermt2ps and masked add per term): per 112 x 112
// plane, one thread, 64 planes (Zen 5, session 33): FLOAT 1.74 -> 1.67 us, FLOAT16 1.50 -> 1.37,
// BF16 1.72-1.89 -> 1.54; in the bench the 96 x 192 x 57 x 57 k3 s2 FLOAT row 11.1-11.3 -> 9.2-9.9 ms.
// Stage B (the row sums and stores) is now most of a plane's time.
template <DType DT, Parity PAR>
ACP_AVX512 void bw_parity_row(const char* g_row, const float* srow, int64_t Wo, int64_t W, float* Q) {
    const __m512 zero = _mm512_setzero_ps();
    const __m512i lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi_idx = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const int64_t end = round_up16(W);  // Q's extent: stage B reads whole vectors
    const __m512i wo = _mm512_set1_epi32(static_cast<int32_t>(Wo)), step = _mm512_set1_epi32(16);
    __m512i col = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int64_t j0 = 0, col0 = 0; col0 < end; j0 += 16, col0 += 32, col = _mm512_add_epi32(col, step)) {
        __mmask16 m0, mo;
        const __m512 p0 = parity_products<DT, 0>(g_row, srow, j0, col, wo, &m0);
        const __m512 e0 = _mm512_mask_add_ps(zero, m0, zero, p0);  // 0 + P[j]
        __m512 e, o;
        if constexpr (PAR == Parity::K2P0) {
            e = o = e0;
        } else if constexpr (PAR == Parity::K2P1) {
            const __m512 pp = parity_products<DT, 1>(g_row, srow, j0, col, wo, &mo);
            e = e0;
            o = _mm512_mask_add_ps(zero, mo, zero, pp);
        } else if constexpr (PAR == Parity::K3P0) {
            const __m512 pm = parity_products<DT, -1>(g_row, srow, j0, col, wo, &mo);
            e = _mm512_mask_add_ps(zero, mo, zero, pm);
            e = acp::avx512::add_ordered(e, m0, p0);
            o = e0;
        } else {
            const __m512 pp = parity_products<DT, 1>(g_row, srow, j0, col, wo, &mo);
            e = e0;
            o = acp::avx512::add_ordered(e0, mo, pp);
        }
        _mm512_store_ps(Q + col0, _mm512_permutex2var_ps(e, lo_idx, o));
        if (col0 + 16 < end) _mm512_store_ps(Q + col0 + 16, _mm512_permutex2var_ps(e, hi_idx, o));
    }
}

// One task's rows [h0, h1) of one segment of one plane, for the common case: AVX-512, w stride 1
// on both sides, stage-A tables valid. The same steps in the same order as the generic row loop in
// BackwardKernel::run, fused into one function (no per-row indirect calls). PAR: stage A by column
// parity (one row at a time, no products row), or None: the tables.
template <DType DT, bool HW, Parity PAR>
ACP_AVX512 void bw_rows_t(const BwRowsArgs& a) {
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    const BackwardPlan& B = *a.B;
    const BwSeg& s = *a.s;
    const int64_t nw = s.w1 - s.w0, span = s.rhi - s.rlo;
    const int64_t* cov_lo = B.ah.cov_lo.data();
    const int64_t* cov_hi = B.ah.cov_hi.data();
    const int64_t* slot = B.slot.data();
    const int64_t last = cov_hi[a.h1 - 1];  // gradOutput rows [.., last) may be needed
    int64_t have = -1;  // Q rows [.., have) of this segment are in the ring
    for (int64_t h = a.h0; h < a.h1; ++h) {
        const int64_t oh0 = cov_lo[h], oh1 = cov_hi[h];
        char* dst = a.gi + (h * a.gi_h + s.w0) * es;
        if (oh0 == oh1) {  // no window covers the row
            const __m512 zero = _mm512_setzero_ps();
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t) ACP_AVX512 { return zero; });
            continue;
        }
        if (have < oh0) have = oh0;
        if constexpr (PAR != Parity::None) {
            for (; have < oh1; ++have)
                bw_parity_row<DT, PAR>(a.go + have * a.go_h * es, B.sc.row(have), B.g.Wo, B.g.W, a.ring + slot[have]);
        }
        while (have < oh1) {  // stage A, two rows at a time when the next one will be needed too
            const char* g0 = a.go + (have * a.go_h + s.rlo) * es;
            bw_products_avx<DT>(a.P, g0, 1, B.sc.row(have) + s.rlo, span, DT);
            if (have + 1 < last) {
                bw_products_avx<DT>(a.P1, g0 + a.go_h * es, 1, B.sc.row(have + 1) + s.rlo, span, DT);
                bw_stage_a2_avx(B, s, a.P, a.P1, a.ring + slot[have], a.ring + slot[have + 1]);
                have += 2;
            } else {
                bw_stage_a_avx(B, s, a.P, a.ring + slot[have]);
                ++have;
            }
        }
        const float* q0 = a.ring + slot[oh0];  // stage B (see bw_stage_b_avx)
        if (oh1 - oh0 == 1) {
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) ACP_AVX512 { return _mm512_load_ps(q0 + j); });
        } else if (oh1 - oh0 == 2) {  // the common case (kH <= 2 sH) without the inner loop
            const float* q1 = a.ring + slot[oh0 + 1];
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) ACP_AVX512 {
                return acp::avx512::add_ordered(_mm512_load_ps(q0 + j), _mm512_load_ps(q1 + j));
            });
        } else {
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) ACP_AVX512 {
                __m512 acc = _mm512_load_ps(q0 + j);
                for (int64_t oh = oh0 + 1; oh < oh1; ++oh) acc = acp::avx512::add_ordered(acc, _mm512_load_ps(a.ring + slot[oh] + j));
                return acc;
            });
        }
    }
}

template <DType DT, bool HW>
ACP_AVX512 void bw_rows_avx(const BwRowsArgs& a) {
    switch (a.parity) {
        case Parity::K2P0: return bw_rows_t<DT, HW, Parity::K2P0>(a);
        case Parity::K2P1: return bw_rows_t<DT, HW, Parity::K2P1>(a);
        case Parity::K3P0: return bw_rows_t<DT, HW, Parity::K3P0>(a);
        case Parity::K3P1: return bw_rows_t<DT, HW, Parity::K3P1>(a);
        default: return bw_rows_t<DT, HW, Parity::None>(a);
    }
}

template <DType DT>
ACP_AVX512 void fw_stage1_avx(const FwStage1Args& a) {  // requires in_w == 1
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    for (int64_t j = 0; j < a.n; j += 16) {
        const __mmask16 m = tail_mask(a.n - j);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t h = a.h0; h < a.h1; ++h) acc = acp::avx512::add_ordered(acc, vload<DT>(a.in + (h * a.in_h + a.vlo + j) * es, m));
        _mm512_storeu_ps(a.V + j, acc);
    }
}

ACP_AVX512 void fw_stage2_avx(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
    const __m512i vlo = _mm512_set1_epi32(static_cast<int32_t>(s.vlo));
    for (int64_t ow = s.ow0; ow < s.ow1; ow += 16) {
        const __mmask16 m = tail_mask(s.ow1 - ow);
        const __m512i idx = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, P.wlo32.data() + ow), vlo);
        const __m512i wid = _mm512_maskz_loadu_epi32(m, P.wid32.data() + ow);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t t = 0; t < s.tmax; ++t) {
            const __m512i tv = _mm512_set1_epi32(static_cast<int32_t>(t));
            const __mmask16 mt = _mm512_cmpgt_epi32_mask(wid, tv);
            const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mt, _mm512_add_epi32(idx, tv), V, 4);
            acc = acp::avx512::add_ordered(acc, mt, v);
        }
        _mm512_storeu_ps(out + (ow - s.ow0), _mm512_mul_ps(acc, _mm512_maskz_loadu_ps(m, srow + ow)));
    }
}

// Forward stage 2 from the permutation tables (perm_ok).
ACP_AVX512 void fw_stage2_perm_avx(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
    const Chunk* ck = P.chunks.data() + s.ow0 / 16;
    const FwTerm* terms = P.terms.data();
    for (int64_t ow = s.ow0; ow < s.ow1; ow += 16, ++ck) {
        const __m512 a = _mm512_loadu_ps(V + ck->off);
        const __m512 b = _mm512_loadu_ps(V + ck->off + 16);
        const __m512 c = _mm512_loadu_ps(V + ck->off + 32);
        const FwTerm* t = terms + ck->first;
        __m512 acc = _mm512_setzero_ps();
        for (int32_t i = 0; i < ck->count; ++i) {
            const __m512i idx = _mm512_load_si512(t[i].idx);
            __m512 v = _mm512_permutex2var_ps(a, idx, b);
            if (t[i].mask_hi) v = _mm512_mask_permutexvar_ps(v, static_cast<__mmask16>(t[i].mask_hi), idx, c);
            acc = acp::avx512::add_ordered(acc, static_cast<__mmask16>(t[i].mask), v);
        }
        const __mmask16 m = tail_mask(s.ow1 - ow);
        _mm512_storeu_ps(out + (ow - s.ow0), _mm512_mul_ps(acc, _mm512_maskz_loadu_ps(m, srow + ow)));
    }
}


template <DType DT, bool HW>
void set_dtype_ops(Ops& o) {
    o.bw_products = bw_products_avx<DT>;
    o.bw_stage_b = bw_stage_b_avx<DT, HW>;
    o.bw_rows = bw_rows_avx<DT, HW>;
    o.fw_stage1 = fw_stage1_avx<DT>;
    o.round = round_avx<HW>;
}

}  // namespace

void use_avx512_rows(Ops& o, DType dt, bool hw_bf16) {
    o.avx = true;
    switch (dt) {
        case DType::F32: set_dtype_ops<DType::F32, false>(o); break;
        case DType::F16: set_dtype_ops<DType::F16, false>(o); break;
        case DType::BF16: hw_bf16 ? set_dtype_ops<DType::BF16, true>(o) : set_dtype_ops<DType::BF16, false>(o); break;
    }
    o.bw_stage_a = bw_stage_a_avx;
    o.fw_stage2 = fw_stage2_avx;
    o.fw_stage2_perm = fw_stage2_perm_avx;
}

void store_fence() { _mm_sfence(); }

}  // namespace avgpool2d

#else  // not x86: never called (detail::cpu_has_avx512() is false)

namespace avgpool2d {
void use_avx512_rows(Ops&, DType, bool) {}
void store_fence() {}
}  // namespace avgpool2d

#endif
