#include "depthwise_blocked.hpp"

#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "aclnn_cpu/transpose_avx512.hpp"

namespace conv {

namespace {

constexpr int64_t kL = 16;  // channels per block: one vector lane each
constexpr int64_t kBatchInnerBlocks = 16;  // whole-plane shapes with this many blocks: a task per block

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
int64_t pos_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

// ---- NCHW <-> channels-last for 16 channels ----
// A "flat range" is `count` consecutive positions of a plane (rows follow each other), starting at
// element `first` of channel c0's plane; channel c0 + ch is `plane` elements further. Channels at
// or past nc read as zero and are never written.

// all-ones masks: GCC 12 warns falsely about the plain forms (built on _mm512_undefined_*)
constexpr __mmask16 kAll16 = 0xffff;
constexpr __mmask8 kAll8 = 0xff;

#define DWB_UNROLL _Pragma("GCC unroll 16")
using acp::avx512::transpose16;  // r[i] lane j -> o[j] lane i
// the scalar spelling's acp::fma_ordered and acp::add_ordered: the same NaN where NaNs meet
using acp::avx512::add_ordered;
using acp::avx512::fma_ordered;

// 16x16 transpose of 16-bit words: r[i] word j -> o[j] word i. BF16 is moved as 16-bit words
// (256-bit shuffles, half the cost of 512-bit ones here) and widened or rounded per pixel.
ACP_AVX512 __attribute__((always_inline)) inline void transpose16_epi16(const __m256i r[16], __m256i o[16]) {
    __m256i t[16], u[16];
    DWB_UNROLL for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    DWB_UNROLL for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm256_unpacklo_epi32(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm256_unpackhi_epi32(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm256_unpacklo_epi32(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm256_unpackhi_epi32(t[4 * g + 1], t[4 * g + 3]);
    }
    DWB_UNROLL for (int k = 0; k < 4; ++k) {
        t[4 * k + 0] = _mm256_unpacklo_epi64(u[k], u[4 + k]);
        t[4 * k + 1] = _mm256_unpackhi_epi64(u[k], u[4 + k]);
        t[4 * k + 2] = _mm256_unpacklo_epi64(u[8 + k], u[12 + k]);
        t[4 * k + 3] = _mm256_unpackhi_epi64(u[8 + k], u[12 + k]);
    }
    // t[4k + m], 128-bit half h: words 0-7 (m < 2) or 8-15 (m >= 2) of column 2k + (m & 1) + 8h
    DWB_UNROLL for (int k = 0; k < 4; ++k) {
        o[2 * k] = _mm256_permute2x128_si256(t[4 * k], t[4 * k + 2], 0x20);
        o[2 * k + 1] = _mm256_permute2x128_si256(t[4 * k + 1], t[4 * k + 3], 0x20);
        o[2 * k + 8] = _mm256_permute2x128_si256(t[4 * k], t[4 * k + 2], 0x31);
        o[2 * k + 9] = _mm256_permute2x128_si256(t[4 * k + 1], t[4 * k + 3], 0x31);
    }
}

// Touches `bytes` bytes from p into L2: the next task's block while this one computes (the 16 planes
// of a block are one contiguous span; the hardware prefetchers miss 16 short streams). Not into L1:
// the task's own scratch would evict it there (measured: 14x14 FLOAT 1.8 ms with T0, 1.2 ms with T1).
void prefetch_span(const void *p, int64_t bytes) { acp::prefetch_lines<true>(p, bytes); }

// The same for `count` elements of each of nc planes from element `first` of the first.
void prefetch_rows(const void *src, int64_t es, int64_t first, int64_t plane, int nc, int64_t count) {
    for (int ch = 0; ch < nc; ++ch) prefetch_span(static_cast<const uint8_t *>(src) + (first + ch * plane) * es, count * es);
}

// Channels at or past nc load with an empty mask: no access, zeros.
// A tail of at most kGatherMax pixels is gathered (one 16-channel gather per pixel) rather than
// transposed as a whole 16x16 block (7x7 planes end on one pixel, 14x14 on four). BF16 gathers the
// 32-bit word ending at the element (its upper half is the FLOAT's bits), so the element before
// must exist. Channel offsets as 32-bit indices: planes up to 2^26 elements.
constexpr int64_t kGatherMax = 4;
template <bool BF16>
ACP_AVX512 void to_blocked_avx_t(const void *src, int64_t plane, int64_t first, int nc, int64_t count, float *dst) {
    for (int64_t p = 0; p < count; p += kL) {
        const int64_t m = std::min<int64_t>(kL, count - p);
        const auto k = static_cast<__mmask16>(m == kL ? 0xffffu : (1u << m) - 1u);
        if (m <= kGatherMax && plane <= (int64_t{1} << 26) && (!BF16 || first + p >= 1)) {
            const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                   _mm512_set1_epi32(static_cast<int>(plane)));
            const auto cm = static_cast<__mmask16>(nc >= 16 ? 0xffffu : (1u << nc) - 1u);
            for (int64_t j = 0; j < m; ++j) {
                __m512 o;
                if constexpr (BF16) {
                    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), cm, idx,
                                                                  static_cast<const uint16_t *>(src) + first + p + j - 1, 2);
                    o = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
                } else {
                    o = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), cm, idx, static_cast<const float *>(src) + first + p + j, 4);
                }
                _mm512_storeu_ps(dst + (p + j) * kL, o);
            }
            continue;
        }
        __m512 o[16];
        if constexpr (BF16) {
            __m256i r[16], h[16];
            if (m == kL && nc == 16) {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch)
                    r[ch] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(static_cast<const uint16_t *>(src) + first + ch * plane + p));
            } else {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch)
                    r[ch] = _mm256_maskz_loadu_epi16(ch < nc ? k : 0, static_cast<const uint16_t *>(src) + first + ch * plane + p);
            }
            transpose16_epi16(r, h);
            DWB_UNROLL for (int j = 0; j < 16; ++j) o[j] = acp::avx512::from_bf16(h[j]);
        } else {
            __m512 r[16];
            if (m == kL && nc == 16) {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch) r[ch] = _mm512_loadu_ps(static_cast<const float *>(src) + first + ch * plane + p);
            } else {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch)
                    r[ch] = _mm512_maskz_loadu_ps(ch < nc ? k : 0, static_cast<const float *>(src) + first + ch * plane + p);
            }
            transpose16(r, o);
        }
        if (m == kL) {
            DWB_UNROLL for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + (p + j) * kL, o[j]);
        } else {
            for (int64_t j = 0; j < m; ++j) _mm512_storeu_ps(dst + (p + j) * kL, o[j]);
        }
    }
}
void to_blocked_avx(const void *src, Dt dt, int64_t plane, int64_t first, int nc, int64_t count, float *dst) {
    if (dt == Dt::F32) to_blocked_avx_t<false>(src, plane, first, nc, count, dst);
    else to_blocked_avx_t<true>(src, plane, first, nc, count, dst);
}
void to_blocked_scalar(const void *src, Dt dt, int64_t plane, int64_t first, int nc, int64_t count, float *dst) {
    for (int64_t p = 0; p < count; ++p)
        for (int ch = 0; ch < 16; ++ch) {
            float v = 0.0f;
            if (ch < nc) {
                const int64_t at = first + ch * plane + p;
                v = dt == Dt::F32 ? static_cast<const float *>(src)[at] : acp::bf16_to_float(static_cast<const uint16_t *>(src)[at]);
            }
            dst[p * kL + ch] = v;
        }
}

// A tail of at most kScatterMax pixels is stored channel by channel rather than transposed.
constexpr int64_t kScatterMax = 2;
template <bool BF16>
ACP_AVX512 void from_blocked_avx_t(const float *src, int64_t count, void *dst, int64_t plane, int64_t first, int nc) {
    for (int64_t p = 0; p < count; p += kL) {
        const int64_t m = std::min<int64_t>(kL, count - p);
        const auto k = static_cast<__mmask16>(m == kL ? 0xffffu : (1u << m) - 1u);
        if (m <= kScatterMax) {
            for (int64_t j = 0; j < m; ++j) {
                const int64_t at = first + p + j;
                if constexpr (BF16) {
                    alignas(32) uint16_t h[16];
                    _mm256_store_si256(reinterpret_cast<__m256i *>(h), acp::avx512::to_bf16(_mm512_loadu_ps(src + (p + j) * kL)));
                    for (int ch = 0; ch < nc; ++ch) static_cast<uint16_t *>(dst)[at + ch * plane] = h[ch];
                } else {
                    for (int ch = 0; ch < nc; ++ch) static_cast<float *>(dst)[at + ch * plane] = src[(p + j) * kL + ch];
                }
            }
            continue;
        }
        if constexpr (BF16) {  // rounded per pixel, then moved as 16-bit words
            __m256i r[16], o[16];
            DWB_UNROLL for (int j = 0; j < 16; ++j) r[j] = acp::avx512::to_bf16(_mm512_maskz_loadu_ps(j < m ? kAll16 : 0, src + (p + j) * kL));
            transpose16_epi16(r, o);
            auto *d = static_cast<uint16_t *>(dst) + first + p;
            if (m == kL && nc == 16) {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch) _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + ch * plane), o[ch]);
            } else {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch) _mm256_mask_storeu_epi16(d + ch * plane, ch < nc ? k : 0, o[ch]);
            }
        } else {
            __m512 r[16], o[16];
            DWB_UNROLL for (int j = 0; j < 16; ++j) r[j] = _mm512_maskz_loadu_ps(j < m ? kAll16 : 0, src + (p + j) * kL);
            transpose16(r, o);
            float *d = static_cast<float *>(dst) + first + p;
            if (m == kL && nc == 16) {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch) _mm512_storeu_ps(d + ch * plane, o[ch]);
            } else {
                DWB_UNROLL for (int ch = 0; ch < 16; ++ch) _mm512_mask_storeu_ps(d + ch * plane, ch < nc ? k : 0, o[ch]);
            }
        }
    }
}
void from_blocked_avx(const float *src, int64_t count, void *dst, bool bf16, int64_t plane, int64_t first, int nc) {
    if (bf16) from_blocked_avx_t<true>(src, count, dst, plane, first, nc);
    else from_blocked_avx_t<false>(src, count, dst, plane, first, nc);
}
void from_blocked_scalar(const float *src, int64_t count, void *dst, bool bf16, int64_t plane, int64_t first, int nc) {
    for (int ch = 0; ch < nc; ++ch)
        for (int64_t p = 0; p < count; ++p) {
            const int64_t at = first + ch * plane + p;
            const float v = src[p * kL + ch];
            if (bf16) static_cast<uint16_t *>(dst)[at] = acp::float_to_bf16(v);
            else static_cast<float *>(dst)[at] = v;
        }
}

// ---- gradInput: one input row ----
// Tap i of a column phase (iw = r + sw*j) reads gradient column q0 + j of its row g, times w.
struct GiTap {
    const float *w;  // 16-lane weight of the tap
    const float *g;  // gradient row of the tap
    int64_t q0;
};
// One column phase of a row: its taps, its columns, and the columns [lo, hi) whose taps all land
// inside the gradient row (fixed per phase: they depend on the tap columns only).
struct GiPhase {
    const GiTap *t;
    int n;
    int64_t cols, lo, hi;
};
struct GiRow {
    const GiPhase *ph;  // sw phases
    int64_t Wo, sw;
    float *out;  // W pixel vectors
};

void gi_row_scalar(const GiRow &r) {
    for (int64_t ph = 0; ph < r.sw; ++ph) {
        const GiPhase &p = r.ph[ph];
        for (int64_t j = 0; j < p.cols; ++j) {
            float acc[16] = {};
            for (int i = 0; i < p.n; ++i) {
                const int64_t q = p.t[i].q0 + j;
                if (q < 0 || q >= r.Wo) continue;
                for (int l = 0; l < 16; ++l) acc[l] = acp::fma_ordered(p.t[i].w[l], p.t[i].g[q * kL + l], acc[l]);
            }
            for (int l = 0; l < 16; ++l) r.out[(ph + j * r.sw) * kL + l] = acc[l];
        }
    }
}

// One column j with a tap outside the gradient row: its taps inside, in order (the others skipped).
ACP_AVX512 void gi_edge_avx(const GiPhase &p, int64_t j, int64_t Wo, float *out) {
    __m512 a = _mm512_setzero_ps();
    for (int i = 0; i < p.n; ++i) {
        const int64_t q = p.t[i].q0 + j;
        if (static_cast<uint64_t>(q) < static_cast<uint64_t>(Wo)) a = fma_ordered(_mm512_loadu_ps(p.t[i].w), _mm512_loadu_ps(p.t[i].g + q * kL), a);
    }
    _mm512_storeu_ps(out, a);
}

// Columns [lo, hi) read inside the gradient row for every tap: four at once (independent chains,
// each column summed in tap order), then one at a time; the few edge columns one by one.
ACP_AVX512 void gi_row_avx(const GiRow &r) {
    for (int64_t ph = 0; ph < r.sw; ++ph) {
        const GiPhase &p = r.ph[ph];
        float *out = r.out + ph * kL;
        const int64_t step = r.sw * kL;
        for (int64_t j = 0; j < p.lo; ++j) gi_edge_avx(p, j, r.Wo, out + j * step);
        int64_t j = p.lo;
        for (; j + 4 <= p.hi; j += 4) {
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < p.n; ++i) {
                const __m512 w = _mm512_loadu_ps(p.t[i].w);
                const float *g = p.t[i].g + (p.t[i].q0 + j) * kL;
                a0 = fma_ordered(w, _mm512_loadu_ps(g), a0);
                a1 = fma_ordered(w, _mm512_loadu_ps(g + kL), a1);
                a2 = fma_ordered(w, _mm512_loadu_ps(g + 2 * kL), a2);
                a3 = fma_ordered(w, _mm512_loadu_ps(g + 3 * kL), a3);
            }
            _mm512_storeu_ps(out + j * step, a0);
            _mm512_storeu_ps(out + (j + 1) * step, a1);
            _mm512_storeu_ps(out + (j + 2) * step, a2);
            _mm512_storeu_ps(out + (j + 3) * step, a3);
        }
        for (; j < p.hi; ++j) {
            __m512 a = _mm512_setzero_ps();
            for (int i = 0; i < p.n; ++i) a = fma_ordered(_mm512_loadu_ps(p.t[i].w), _mm512_loadu_ps(p.t[i].g + (p.t[i].q0 + j) * kL), a);
            _mm512_storeu_ps(out + j * step, a);
        }
        for (j = std::max(j, p.hi); j < p.cols; ++j) gi_edge_avx(p, j, r.Wo, out + j * step);
    }
}

// ---- gradWeight: one output row ----
// Tap i multiplies gradient column ow with input column c0 + ow*sw of its row x, into acc; its
// columns ow in [lo, hi) read inside the input row (fixed per tap column).
struct GwTap {
    const float *x;
    float *acc;  // 16-lane FLOAT accumulator of the tap
    int64_t c0, lo, hi;
};
struct GwRow {
    const GwTap *t;
    int n;
    const float *g;  // Wo pixel vectors
    int64_t W, Wo, sw;
};

void gw_row_scalar(const GwRow &r) {
    for (int i = 0; i < r.n; ++i)
        for (int64_t ow = 0; ow < r.Wo; ++ow) {
            const int64_t col = r.t[i].c0 + ow * r.sw;
            if (col < 0 || col >= r.W) continue;
            for (int l = 0; l < 16; ++l) r.t[i].acc[l] = acp::fma_ordered(r.g[ow * kL + l], r.t[i].x[col * kL + l], r.t[i].acc[l]);
        }
}

// G taps at once (G accumulation chains), each summed over ow in order.
template <int G>
ACP_AVX512 void gw_group_avx(const GwRow &r, const GwTap *t) {
    __m512 a[G];
    const float *x[G];
    int64_t lo = 0, hi = r.Wo, lo_k[G], hi_k[G];
    DWB_UNROLL for (int k = 0; k < G; ++k) {
        a[k] = _mm512_loadu_ps(t[k].acc);
        x[k] = t[k].x + t[k].c0 * kL;
        lo_k[k] = t[k].lo, hi_k[k] = t[k].hi;
        lo = std::max(lo, t[k].lo);
        hi = std::min(hi, t[k].hi);
    }
    hi = std::max(hi, lo);
    const int64_t step = r.sw * kL;
    for (int64_t ow = 0; ow < lo; ++ow) {  // columns with a tap outside the input row
        const __m512 g = _mm512_loadu_ps(r.g + ow * kL);
        DWB_UNROLL for (int k = 0; k < G; ++k)
            if (ow >= lo_k[k] && ow < hi_k[k]) a[k] = fma_ordered(g, _mm512_loadu_ps(x[k] + ow * step), a[k]);
    }
    for (int64_t ow = lo; ow < hi; ++ow) {
        const __m512 g = _mm512_loadu_ps(r.g + ow * kL);
        DWB_UNROLL for (int k = 0; k < G; ++k) a[k] = fma_ordered(g, _mm512_loadu_ps(x[k] + ow * step), a[k]);
    }
    for (int64_t ow = hi; ow < r.Wo; ++ow) {
        const __m512 g = _mm512_loadu_ps(r.g + ow * kL);
        DWB_UNROLL for (int k = 0; k < G; ++k)
            if (ow >= lo_k[k] && ow < hi_k[k]) a[k] = fma_ordered(g, _mm512_loadu_ps(x[k] + ow * step), a[k]);
    }
    DWB_UNROLL for (int k = 0; k < G; ++k) _mm512_storeu_ps(t[k].acc, a[k]);
}
// Groups of up to nine taps (a 3x3 row triple in one pass over the gradient row).
ACP_AVX512 void gw_row_avx(const GwRow &r) {
    int i = 0;
    for (; i + 9 <= r.n; i += 9) gw_group_avx<9>(r, r.t + i);
    switch (r.n - i) {
        case 8: gw_group_avx<8>(r, r.t + i); break;
        case 7: gw_group_avx<7>(r, r.t + i); break;
        case 6: gw_group_avx<6>(r, r.t + i); break;
        case 5: gw_group_avx<5>(r, r.t + i); break;
        case 4: gw_group_avx<4>(r, r.t + i); break;
        case 3: gw_group_avx<3>(r, r.t + i); break;
        case 2: gw_group_avx<2>(r, r.t + i); break;
        case 1: gw_group_avx<1>(r, r.t + i); break;
        default: break;
    }
}

ACP_AVX512 void flush_avx(float *acc, double *sum, int64_t kk) {
    for (int64_t t = 0; t < kk; ++t) {
        const __m512 a = _mm512_loadu_ps(acc + t * kL);
        const __m512d lo = _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(kAll8, _mm512_castps_pd(a), 0)));
        const __m512d hi = _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(kAll8, _mm512_castps_pd(a), 1)));
        _mm512_storeu_pd(sum + t * kL, add_ordered(_mm512_loadu_pd(sum + t * kL), lo));
        _mm512_storeu_pd(sum + t * kL + 8, add_ordered(_mm512_loadu_pd(sum + t * kL + 8), hi));
        _mm512_storeu_ps(acc + t * kL, _mm512_setzero_ps());
    }
}
void flush_scalar(float *acc, double *sum, int64_t kk) {
    for (int64_t i = 0; i < kk * kL; ++i) {
        sum[i] = acp::add_ordered(sum[i], static_cast<double>(acc[i]));
        acc[i] = 0.0f;
    }
}

// The 16 channels' taps as 16-lane vectors: wv[t][ch] = w[(c0 + ch) * kk + t], zero past nc.
void load_taps(const void *w, Dt dt, int64_t c0, int nc, int64_t kk, float *wv) {
    for (int64_t t = 0; t < kk; ++t)
        for (int ch = 0; ch < 16; ++ch) {
            float v = 0.0f;
            if (ch < nc) {
                const int64_t at = (c0 + ch) * kk + t;
                v = dt == Dt::F32 ? static_cast<const float *>(w)[at] : acp::bf16_to_float(static_cast<const uint16_t *>(w)[at]);
            }
            wv[t * kL + ch] = v;
        }
}

}  // namespace

DwBlocked::DwBlocked(const DwShape &s, Dt dt) : s_(s), dt_(dt) {
    CB_ = (s.C + kL - 1) / kL;
    const int64_t kk = s.kh * s.kw;
    // bands of about 1024 pixel vectors (64 KiB) per array: the working set stays in L2
    in_band_ = std::clamp<int64_t>(1024 / s.W, 1, s.H);
    gi_rows_max_ = std::min(s.Ho, (in_band_ - 1 + (s.kh - 1) * s.dh) / s.sh + 2);
    w_band_ = std::clamp<int64_t>(1024 / std::max(s.Wo, s.W * s.sh), 1, s.Ho);
    x_rows_max_ = std::min(s.H, (w_band_ - 1) * s.sh + (s.kh - 1) * s.dh + 1);
    flush_rows_ = std::max<int64_t>(1, 128 / s.Wo);
    grain_ = std::max<int64_t>(1, 4096 / (s.H * s.W));
    // One band covers the plane: the gradient block is transposed once for every gradient.
    whole_plane_ = in_band_ >= s.H && w_band_ >= s.Ho;
    // Large planes with few (image, block) tasks: each block's bands in row parts, so that a thread
    // held up elsewhere delays little (about 64 tasks; fixed by the shape, so the sums keep their order).
    const int64_t gi_bands = (s.H + in_band_ - 1) / in_band_, w_bands = (s.Ho + w_band_ - 1) / w_band_;
    if (!whole_plane_) parts_ = std::clamp<int64_t>((64 + s.N * CB_ - 1) / (s.N * CB_), 1, std::min(gi_bands, w_bands));
    // Small planes with many blocks: a task is one block over the whole batch, its gradWeight sums
    // kept across the images (flushed by rows counted over the batch) and written once, no partials.
    // Fixed by the shape, so the sums keep their order at any thread count.
    batch_inner_ = whole_plane_ && CB_ >= kBatchInnerBlocks;
    // slot: doubles first (aligned), then FLOAT arrays of 16-lane vectors
    const uint64_t doubles = static_cast<uint64_t>(kk) * kL;
    const uint64_t floats = static_cast<uint64_t>((kk + kk) * kL) +
                            static_cast<uint64_t>(gi_rows_max_ * s.Wo + in_band_ * s.W + w_band_ * s.Wo + x_rows_max_ * s.W) * kL;
    slot_ = round64(doubles * sizeof(double) + floats * sizeof(float));
    // gradInput tap tables. Input row ih meets tap row a when oh = (ih + ph - a*dh) / sh is whole and
    // inside; columns iw = r + sw*j of phase r = (b*dw - pw) mod sw meet tap column b at gradient
    // column (r + pw - b*dw) / sw + j (whole by the choice of r).
    for (int64_t b = 0; b < s.kw; ++b) {
        const int64_t r = pos_mod(b * s.dw - s.pw, s.sw);
        gi_q0_.push_back((r + s.pw - b * s.dw) / s.sw);
    }
    // per phase r: its tap columns in order, its columns, and the columns j whose taps all read inside
    gi_b_at_.push_back(0);
    for (int64_t r = 0; r < s.sw; ++r) {
        const int64_t cols = r < s.W ? (s.W - r + s.sw - 1) / s.sw : 0;
        int64_t lo = 0, hi = cols;
        for (int64_t b = 0; b < s.kw; ++b) {
            if (pos_mod(b * s.dw - s.pw, s.sw) != r) continue;
            gi_bs_.push_back(b);
            const int64_t q0 = gi_q0_[static_cast<size_t>(b)];
            lo = std::max(lo, -q0);
            hi = std::min(hi, s.Wo - q0);
        }
        gi_b_at_.push_back(gi_bs_.size());
        lo = std::min(lo, cols);
        gi_cols_.push_back(cols);
        gi_lo_.push_back(lo);
        gi_hi_.push_back(std::clamp(hi, lo, cols));
    }
    // gradWeight: tap column b reads input column c0 + ow*sw, inside the row for ow in [lo, hi)
    for (int64_t b = 0; b < s.kw; ++b) {
        const int64_t c0 = b * s.dw - s.pw;
        gw_c0_.push_back(c0);
        gw_lo_.push_back(std::clamp<int64_t>(ceil_div(-c0, s.sw), 0, s.Wo));
        gw_hi_.push_back(std::clamp<int64_t>(floor_div(s.W - 1 - c0, s.sw) + 1, 0, s.Wo));
    }
    gi_row_at_.push_back(0);
    for (int64_t ih = 0; ih < s.H; ++ih) {
        for (int64_t a = 0; a < s.kh; ++a) {
            const int64_t num = ih + s.ph - a * s.dh;
            if (num < 0 || num % s.sh != 0 || num / s.sh >= s.Ho) continue;
            gi_rows_.push_back(GiTapRow{a, num / s.sh});
        }
        gi_row_at_.push_back(gi_rows_.size());
    }
}

uint64_t DwBlocked::partial_bytes() const {
    if (batch_inner_) return 0;
    return round64(static_cast<uint64_t>(s_.N * CB_ * parts_ * s_.kh * s_.kw * kL) * sizeof(double));
}

void DwBlocked::run(const Io &io, uint8_t *scratch, const acp::SlotPool &slots, bool avx) const {
    const DwShape s = s_;
    const int64_t kk = s.kh * s.kw, plane_in = s.H * s.W, plane_out = s.Ho * s.Wo;
    const int64_t es = dt_ == Dt::F32 ? 4 : 2;
    const bool want_dx = io.dx != nullptr, want_dw = io.dw != nullptr;
    // per (image, block): kk tap sums, 16 lanes each
    auto *partials = reinterpret_cast<double *>(scratch + static_cast<uint64_t>(slots.size()) * slot_);
    const int64_t part = kk * kL;
    // gradInput taps of input row ih, phase by phase (in each: tap rows, then tap columns, in order);
    // gbase: gradient row 0 (possibly outside the scratch: only the rows of the band are read).
    auto gi_build = [&](int64_t ih, const float *gbase, const float *wv, GiTap *tp, GiPhase *php) {
        int used = 0;
        for (int64_t r = 0; r < s.sw; ++r) {
            const auto ru = static_cast<size_t>(r);
            GiPhase &p = php[r];
            p = GiPhase{tp + used, 0, gi_cols_[ru], gi_lo_[ru], gi_hi_[ru]};
            for (size_t e = gi_row_at_[static_cast<size_t>(ih)]; e < gi_row_at_[static_cast<size_t>(ih) + 1]; ++e)
                for (size_t k = gi_b_at_[ru]; k < gi_b_at_[ru + 1]; ++k) {
                    const int64_t b = gi_bs_[k];
                    tp[used++] = GiTap{wv + (gi_rows_[e].a * s.kw + b) * kL, gbase + gi_rows_[e].oh * s.Wo * kL,
                                       gi_q0_[static_cast<size_t>(b)]};
                    ++p.n;
                }
        }
    };
    // gradWeight taps of output row oh; xbase holds input rows from x_lo.
    auto gw_build = [&](int64_t oh, const float *xbase, int64_t x_lo, float *acc, GwTap *tp) {
        int n = 0;
        for (int64_t a = 0; a < s.kh; ++a) {
            const int64_t ih = oh * s.sh - s.ph + a * s.dh;
            if (ih < 0 || ih >= s.H) continue;
            for (int64_t b = 0; b < s.kw; ++b) {
                const auto bu = static_cast<size_t>(b);
                tp[n++] = GwTap{xbase + (ih - x_lo) * s.W * kL, acc + (a * s.kw + b) * kL, gw_c0_[bu], gw_lo_[bu], gw_hi_[bu]};
            }
        }
        return n;
    };
    const int64_t gi_bands = (s.H + in_band_ - 1) / in_band_, w_bands = (s.Ho + w_band_ - 1) / w_band_;
    const bool batch_inner = batch_inner_;
    const int64_t tasks = batch_inner ? CB_ : s.N * CB_ * parts_;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, batch_inner ? std::max<int64_t>(1, grain_ / s.N) : grain_), [&](const tbb::blocked_range<int64_t> &range) {
        const acp::SlotPool::Lease slot(slots);
        auto *sum = reinterpret_cast<double *>(scratch + slot.index() * slot_);  // kk vectors
        auto *acc = reinterpret_cast<float *>(sum + kk * kL);                   // kk vectors
        float *wv = acc + kk * kL;                                                // kk tap vectors
        float *gi_gs = wv + kk * kL;
        float *dxs = gi_gs + gi_rows_max_ * s.Wo * kL;
        float *gs = dxs + in_band_ * s.W * kL;
        float *xs = gs + w_band_ * s.Wo * kL;
        // Row tables: with one band per plane every pointer is fixed for the whole range, so all rows
        // are built once; with bands, one row at a time.
        const int64_t gi_rows = whole_plane_ ? s.H : 1, gw_rows = whole_plane_ ? s.Ho : 1;
        std::vector<GiTap> gi_taps(static_cast<size_t>(gi_rows * kk));
        std::vector<GiPhase> gi_ph(static_cast<size_t>(gi_rows * s.sw));
        std::vector<GwTap> gw_taps(static_cast<size_t>(gw_rows * kk));
        std::vector<int> gw_n(static_cast<size_t>(gw_rows));
        if (whole_plane_) {
            for (int64_t ih = 0; want_dx && ih < s.H; ++ih) gi_build(ih, gs, wv, gi_taps.data() + ih * kk, gi_ph.data() + ih * s.sw);
            for (int64_t oh = 0; want_dw && oh < s.Ho; ++oh)
                gw_n[static_cast<size_t>(oh)] = gw_build(oh, xs, 0, acc, gw_taps.data() + oh * kk);
        }
        auto to_blocked = [&](const void *src, int64_t plane, int64_t first, int nc, int64_t count, float *dst) {
            if (avx) to_blocked_avx(src, dt_, plane, first, nc, count, dst);
            else to_blocked_scalar(src, dt_, plane, first, nc, count, dst);
        };
        int64_t last_cb = -1;
        const int64_t nb_end = batch_inner ? range.end() * s.N : range.end();  // whole planes: one part per block
        for (int64_t task = range.begin(); task < range.end(); ++task)
        for (int64_t img = 0; img < (batch_inner ? s.N : 1); ++img) {
            // block-major (taps loaded once per block), then image, then row part
            const int64_t part_i = batch_inner ? 0 : task % parts_, nb = batch_inner ? task * s.N + img : task / parts_;
            const int64_t n = nb % s.N, cb = nb / s.N, c0 = cb * kL;
            const int nc = static_cast<int>(std::min(kL, s.C - c0));
            if (want_dx && cb != last_cb) load_taps(io.w, dt_, c0, nc, kk, wv);
            last_cb = cb;
            if (whole_plane_ && nb + 1 < nb_end) {  // the next (image, block) into L2
                const int64_t n1 = (nb + 1) % s.N, c1 = (nb + 1) / s.N * kL, nc1 = std::min(kL, s.C - c1);
                prefetch_span(static_cast<const uint8_t *>(io.dy) + (n1 * s.C + c1) * plane_out * es, nc1 * plane_out * es);
                if (want_dw) prefetch_span(static_cast<const uint8_t *>(io.x) + (n1 * s.C + c1) * plane_in * es, nc1 * plane_in * es);
            }
            if (whole_plane_) to_blocked(io.dy, plane_out, (n * s.C + c0) * plane_out, nc, plane_out, gs);
            // ---- gradInput, by bands of input rows ----
            for (int64_t band = part_i * gi_bands / parts_; want_dx && band < (part_i + 1) * gi_bands / parts_; ++band) {
                const int64_t i0 = band * in_band_, i1 = std::min(s.H, i0 + in_band_);
                // gradient rows the band reads: oh*sh = ih + ph - a*dh
                const int64_t o_lo = std::max<int64_t>(0, ceil_div(i0 + s.ph - (s.kh - 1) * s.dh, s.sh));
                const int64_t o_hi = std::min(s.Ho - 1, floor_div(i1 - 1 + s.ph, s.sh));
                const float *gbase = gs;  // row 0 of the whole plane
                if (!whole_plane_) {
                    gbase = gi_gs - o_lo * s.Wo * kL;  // row o_lo at gi_gs
                    if (o_hi >= o_lo) to_blocked(io.dy, plane_out, (n * s.C + c0) * plane_out + o_lo * s.Wo, nc, (o_hi - o_lo + 1) * s.Wo, gi_gs);
                }
                for (int64_t ih = i0; ih < i1; ++ih) {
                    const GiPhase *ph = gi_ph.data();
                    if (whole_plane_) ph += ih * s.sw;
                    else gi_build(ih, gbase, wv, gi_taps.data(), gi_ph.data());
                    const GiRow row{ph, s.Wo, s.sw, dxs + (ih - i0) * s.W * kL};
                    if (avx) gi_row_avx(row);
                    else gi_row_scalar(row);
                }
                const int64_t first = (n * s.C + c0) * plane_in + i0 * s.W, count = (i1 - i0) * s.W;
                if (avx) from_blocked_avx(dxs, count, io.dx, io.dx_bf16, plane_in, first, nc);
                else from_blocked_scalar(dxs, count, io.dx, io.dx_bf16, plane_in, first, nc);
            }
            if (!want_dw) continue;
            // ---- gradWeight, by bands of output rows ----
            const bool first_img = !batch_inner || n == 0, last_img = !batch_inner || n + 1 == s.N;
            if (first_img) {
                std::fill(sum, sum + part, 0.0);
                std::fill(acc, acc + part, 0.0f);
            }
            const int64_t w_first = part_i * w_bands / parts_, w_end = (part_i + 1) * w_bands / parts_;
            const int64_t o_end = std::min(s.Ho, w_end * w_band_);  // the part's output rows end here
            for (int64_t band = w_first; band < w_end; ++band) {
                const int64_t o0 = band * w_band_, o1 = std::min(s.Ho, o0 + w_band_);
                const int64_t x_lo = std::max<int64_t>(0, o0 * s.sh - s.ph);
                const int64_t x_hi = std::min(s.H - 1, (o1 - 1) * s.sh - s.ph + (s.kh - 1) * s.dh);
                if (!whole_plane_) {
                    if (o1 < o_end) {  // the next band's rows into L2 while this band computes
                        const int64_t r1 = std::min(s.Ho, o1 + w_band_) - o1;
                        prefetch_rows(io.dy, es, (n * s.C + c0) * plane_out + o1 * s.Wo, plane_out, nc, r1 * s.Wo);
                        const int64_t x1 = std::min(s.H, (std::min(s.Ho, o1 + w_band_) - 1) * s.sh - s.ph + (s.kh - 1) * s.dh + 1);
                        if (want_dw && x1 > x_hi + 1)
                            prefetch_rows(io.x, es, (n * s.C + c0) * plane_in + (x_hi + 1) * s.W, plane_in, nc, (x1 - x_hi - 1) * s.W);
                    }
                    to_blocked(io.dy, plane_out, (n * s.C + c0) * plane_out + o0 * s.Wo, nc, (o1 - o0) * s.Wo, gs);
                }
                if (x_hi >= x_lo)
                    to_blocked(io.x, plane_in, (n * s.C + c0) * plane_in + x_lo * s.W, nc, (x_hi - x_lo + 1) * s.W, xs);
                for (int64_t oh = o0; oh < o1; ++oh) {
                    const float *g = gs + (oh - o0) * s.Wo * kL;
                    GwRow row{gw_taps.data(), 0, g, s.W, s.Wo, s.sw};
                    if (whole_plane_) {
                        row.t += oh * kk;
                        row.n = gw_n[static_cast<size_t>(oh)];
                    } else {
                        row.n = gw_build(oh, xs, x_lo, acc, gw_taps.data());
                    }
                    if (avx) gw_row_avx(row);
                    else gw_row_scalar(row);
                    const int64_t row_no = batch_inner ? n * s.Ho + oh : oh;
                    if ((row_no + 1) % flush_rows_ == 0 || (oh + 1 == o_end && last_img)) {
                        if (avx) flush_avx(acc, sum, kk);
                        else flush_scalar(acc, sum, kk);
                    }
                }
            }
            if (!batch_inner) {
                std::copy(sum, sum + part, partials + ((n * CB_ + cb) * parts_ + part_i) * part);
            } else if (last_img) {
                for (int ch = 0; ch < nc; ++ch)
                    for (int64_t t = 0; t < kk; ++t) io.dw[(c0 + ch) * kk + t] = static_cast<float>(sum[t * kL + ch]);
            }
        }
    });
    if (!want_dw || batch_inner) return;
    // per channel: the partials in image order, each image's row parts in order
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, CB_, 1), [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t cb = range.begin(); cb < range.end(); ++cb) {
            const int nc = static_cast<int>(std::min(kL, s.C - cb * kL));
            for (int64_t t = 0; t < kk; ++t) {
                double v[kL] = {};
                for (int64_t n = 0; n < s.N; ++n)
                    for (int64_t q = 0; q < parts_; ++q) {
                        const double *p = partials + ((n * CB_ + cb) * parts_ + q) * part + t * kL;
                        for (int64_t ch = 0; ch < kL; ++ch) v[ch] += p[ch];
                    }
                for (int ch = 0; ch < nc; ++ch) io.dw[(cb * kL + ch) * kk + t] = static_cast<float>(v[ch]);
            }
        }
    });
}

}  // namespace conv
