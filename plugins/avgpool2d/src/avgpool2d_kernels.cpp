// avgpool2d compute kernels. See avgpool2d_kernels.hpp for the contract and the summation order.
//
// Backward is a gather: a gradInput row h is built in two stages, each vectorized along the row:
//   stage 1  R[ow]  = sum over the gradOutput rows oh whose window covers h of
//                     gradOutput[oh][ow] * scale(oh, ow)
//   stage 2  out[w] = sum over the ow whose window covers w of R[ow]
// For stage 2 a 16-wide output chunk needs R entries from a window of at most 32 (true unless
// stride 1 with kW > 17): two loads and one vpermt2ps + masked add per covering term, with the
// index/mask tables precomputed per chunk in the constructor. Rows are independent, so work items
// are (plane, row block) pairs run with a static partition: no atomics, no races, and the same bits
// at any thread count. Forward is the mirror image: column sums over the window rows (stage 1),
// then window sums along the row with gathers (stage 2), times the scale.
//
// Every arithmetic step is done in the same order by the scalar path and the AVX-512 path:
// sums start at +0.0f (so an accumulator is never -0, and an extra masked-off "+0" is a no-op),
// products are kept out of FMA contraction (opaque()), roundings follow aclnn_cpu/numeric.hpp.
#include "avgpool2d_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "aclnn_cpu/numeric.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AVGPOOL_X86 1
#include <immintrin.h>
// Function-level target: the file is built for the baseline ISA, these functions only run after
// the runtime check in detail::cpu_has_avx512().
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define AVGPOOL_X86 0
#endif

namespace avgpool2d {
namespace {

constexpr int64_t kSegW = 512;   // backward: gradInput row segment width (multiple of 16)
constexpr int64_t kRMax = 2048;  // backward: max gradOutput columns feeding one segment
constexpr int64_t kSegO = 512;   // forward: output row segment width (multiple of 16)
constexpr int64_t kVMax = 4096;  // forward: max input columns feeding one segment
constexpr int64_t kMinItems = 64;                      // split planes into row blocks below this
constexpr int64_t kStreamBytes = int64_t{16} << 20;    // NT stores when gradInput exceeds this

int64_t elem_size(DType dt) { return dt == DType::F32 ? 4 : 2; }

// The product must be rounded on its own before it is added (no FMA contraction, whatever
// -ffp-contract the build uses), or the scalar and vector paths could differ in the last bit.
inline float opaque(float x) {
#if AVGPOOL_X86
    asm("" : "+x"(x));
    return x;
#else
    volatile float v = x;
    return v;
#endif
}

inline float load_elem(const char* p, DType dt) {
    if (dt == DType::F32) {
        float f;
        std::memcpy(&f, p, sizeof f);
        return f;
    }
    uint16_t u;
    std::memcpy(&u, p, sizeof u);
    return dt == DType::F16 ? acp::half_to_float(u) : acp::bf16_to_float(u);
}

inline void store_elem(char* p, float v, DType dt) {
    if (dt == DType::F32) {
        std::memcpy(p, &v, sizeof v);
        return;
    }
    const uint16_t u = dt == DType::F16 ? acp::float_to_half(v) : acp::float_to_bf16(v);
    std::memcpy(p, &u, sizeof u);
}

// ---------------------------------------------------------------------------------------------
// Plans
// ---------------------------------------------------------------------------------------------

// Window tables of one spatial axis (PyTorch's avg_pool2d arithmetic).
struct Axis {
    std::vector<int64_t> lo, hi;          // per pooled index: clipped window [lo, hi), lo == hi if empty
    std::vector<int64_t> fac;             // per pooled index: this axis' factor of the divisor
    std::vector<int64_t> cov_lo, cov_hi;  // per input index: pooled indices covering it, [cov_lo, cov_hi)
};

Axis make_axis(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
    Axis a;
    a.lo.resize(static_cast<size_t>(out));
    a.hi.resize(static_cast<size_t>(out));
    a.fac.resize(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
        const int64_t start = o * s - p;
        const int64_t end = std::min(start + k, in + p);  // overhang past in + p never counts
        const int64_t lo = std::max<int64_t>(start, 0);
        const int64_t hi = std::max(lo, std::min(end, in));
        a.lo[o] = lo;
        a.hi[o] = hi;
        a.fac[o] = include_pad ? end - start : hi - lo;
    }
    // lo and hi are non-decreasing in o, so the windows covering i form one contiguous range:
    // {o : hi[o] > i} is a suffix, {o : lo[o] <= i} a prefix. Empty windows never cover anything.
    a.cov_lo.resize(static_cast<size_t>(in));
    a.cov_hi.resize(static_cast<size_t>(in));
    int64_t first = 0, last = 0;
    for (int64_t i = 0; i < in; ++i) {
        while (first < out && a.hi[first] <= i) ++first;
        while (last < out && a.lo[last] <= i) ++last;
        a.cov_lo[i] = first;
        a.cov_hi[i] = std::max(first, last);
    }
    return a;
}

// scale(oh, ow) = 1.0f / divisor. The divisor is separable except for its rounding, so we keep one
// row of per-ow scales for each distinct vertical factor (a handful: interior and edge windows).
// A window that is empty along either axis gets scale 0: it contributes nothing and the forward
// writes 0 * 0 = +0 for it, as PyTorch does (no division by zero ever).
struct Scales {
    std::vector<int32_t> cls;  // per oh: which row
    std::vector<float> rows;   // rows of `stride` floats (zero padded past Wo for vector loads)
    int64_t stride = 0;
    const float* row(int64_t oh) const { return rows.data() + cls[oh] * stride; }
};

float scale_of(int64_t divisor, int32_t precision) {
    if (divisor == 0) return 0.0f;
    const float s = 1.0f / static_cast<float>(divisor);
    return precision != ACP_PREC_NATIVE ? acp::round_to_precision(s, precision) : s;
}

Scales make_scales(const Geometry& g, const Axis& ah, const Axis& aw, int32_t precision) {
    Scales sc;
    sc.stride = (g.Wo + 15) / 16 * 16 + 16;
    sc.cls.resize(static_cast<size_t>(g.Ho));
    std::vector<int64_t> keys;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const bool h_empty = ah.lo[oh] == ah.hi[oh];
        const int64_t key = h_empty ? -1 : (g.divisor_override != 0 ? 0 : ah.fac[oh]);
        auto it = std::find(keys.begin(), keys.end(), key);
        if (it == keys.end()) {
            keys.push_back(key);
            sc.rows.resize(keys.size() * static_cast<size_t>(sc.stride), 0.0f);
            float* r = sc.rows.data() + (keys.size() - 1) * static_cast<size_t>(sc.stride);
            for (int64_t ow = 0; ow < g.Wo; ++ow) {
                if (h_empty || aw.lo[ow] == aw.hi[ow]) continue;  // stays 0
                const int64_t d = g.divisor_override != 0 ? g.divisor_override : ah.fac[oh] * aw.fac[ow];
                r[ow] = scale_of(d, precision);
            }
            it = keys.end() - 1;
        }
        sc.cls[oh] = static_cast<int32_t>(it - keys.begin());
    }
    if (sc.rows.empty()) sc.rows.assign(static_cast<size_t>(sc.stride), 0.0f);
    return sc;
}

int64_t row_blocks_for(int64_t planes, int64_t rows) {
    if (planes <= 0 || rows <= 0) return 1;
    const int64_t want = (kMinItems + planes - 1) / planes;
    return std::max<int64_t>(1, std::min(want, rows));
}

}  // namespace

// One term of stage 2 for a 16-wide chunk: lane l adds R[base + idx[l]] when bit l of mask is set.
struct alignas(64) Term {
    int32_t idx[16];
    uint32_t mask;
};

struct BwSeg {
    int64_t w0, w1;    // gradInput columns [w0, w1)
    int64_t rlo, rhi;  // gradOutput columns feeding them
};

struct BackwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    int64_t planes = 0;
    Axis ah, aw;
    Scales sc;
    std::vector<BwSeg> segs;
    bool direct = false;  // some segment needs > kRMax columns of R: per-element scalar path
    bool vec_w = false;   // stage-2 permutation tables are valid (every chunk fits 32 R entries)
    std::vector<int64_t> chunk_base;  // per 16-column chunk: first R column it reads
    std::vector<int32_t> chunk_first, chunk_count;  // its terms in `terms`
    std::vector<Term> terms;
    int64_t row_blocks = 1;
    bool stream_auto = false;
};

struct FwSeg {
    int64_t ow0, ow1;  // output columns [ow0, ow1)
    int64_t vlo, vhi;  // input columns feeding them
    int64_t tmax;      // widest window in the segment
};

struct ForwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    int64_t planes = 0;
    Axis ah, aw;
    Scales sc;
    std::vector<FwSeg> segs;
    bool direct = false;  // some window is wider than kVMax: per-element scalar path
    bool vec_ok = false;  // int32 column tables valid
    std::vector<int32_t> wlo32, wid32;  // per ow: window start and width (zero padded by 16)
    int64_t row_blocks = 1;
};

namespace {

bool same_term(const Term& a, const Term& b) {
    return a.mask == b.mask && std::equal(std::begin(a.idx), std::end(a.idx), std::begin(b.idx));
}

void build_stage2_tables(BackwardPlan& P) {
    const int64_t W = P.g.W;
    const Axis& aw = P.aw;
    if (P.g.Wo >= (int64_t{1} << 30)) return;  // vec_w stays false
    const int64_t nchunks = (W + 15) / 16;
    P.chunk_base.resize(static_cast<size_t>(nchunks));
    P.chunk_first.resize(static_cast<size_t>(nchunks));
    P.chunk_count.resize(static_cast<size_t>(nchunks));
    // Distinct term sequences (the interior of a row repeats with period lcm(16, sW) / 16).
    std::vector<std::pair<int32_t, int32_t>> patterns;
    std::vector<Term> cand;
    for (int64_t m = 0; m < nchunks; ++m) {
        const int64_t wa = 16 * m, wb = std::min(wa + 16, W);
        const int64_t base = aw.cov_lo[wa];  // cov_lo is non-decreasing: the chunk's minimum
        int64_t T = 0;
        for (int64_t w = wa; w < wb; ++w) T = std::max(T, aw.cov_hi[w] - aw.cov_lo[w]);
        cand.assign(static_cast<size_t>(T), Term{});
        for (int64_t t = 0; t < T; ++t) {
            Term& tm = cand[t];
            for (int64_t w = wa; w < wb; ++w) {
                const int64_t ow = aw.cov_lo[w] + t;
                if (ow >= aw.cov_hi[w]) continue;
                const int64_t idx = ow - base;
                if (idx >= 32) return;  // does not fit two vectors: vec_w stays false
                tm.idx[w - wa] = static_cast<int32_t>(idx);
                tm.mask |= 1u << (w - wa);
            }
        }
        int32_t first = -1;
        for (const auto& [f, c] : patterns) {
            if (c == T && std::equal(cand.begin(), cand.end(), P.terms.begin() + f, same_term)) {
                first = f;
                break;
            }
        }
        if (first < 0) {
            first = static_cast<int32_t>(P.terms.size());
            P.terms.insert(P.terms.end(), cand.begin(), cand.end());
            if (patterns.size() < 256) patterns.emplace_back(first, static_cast<int32_t>(T));
        }
        P.chunk_base[m] = base;
        P.chunk_first[m] = first;
        P.chunk_count[m] = static_cast<int32_t>(T);
    }
    P.vec_w = true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Row stages: scalar reference implementations (any strides, the canonical order)
// ---------------------------------------------------------------------------------------------
namespace {

struct BwStage1Args {
    float* R;             // out: R[j] for gradOutput column rlo + j, j < n
    const char* go;       // gradOutput plane
    int64_t go_h, go_w;   // element strides
    int64_t oh0, oh1;     // gradOutput rows covering the gradInput row
    int64_t rlo, n;
    const Scales* sc;
    DType dt;
};

void bw_stage1_scalar(const BwStage1Args& a) {
    const int64_t es = elem_size(a.dt);
    for (int64_t j = 0; j < a.n; ++j) a.R[j] = 0.0f;
    for (int64_t oh = a.oh0; oh < a.oh1; ++oh) {
        const char* g = a.go + (oh * a.go_h + a.rlo * a.go_w) * es;
        const float* s = a.sc->row(oh) + a.rlo;
        for (int64_t j = 0; j < a.n; ++j) a.R[j] = a.R[j] + opaque(load_elem(g + j * a.go_w * es, a.dt) * s[j]);
    }
}

void bw_stage2_scalar(const BackwardPlan& P, const BwSeg& s, const float* R, float* row) {
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t ow = P.aw.cov_lo[w]; ow < P.aw.cov_hi[w]; ++ow) acc = acc + R[ow - s.rlo];
        row[w - s.w0] = acc;
    }
}

// Same bits as stage 1 + stage 2 (R[ow] is recomputed per use), without the R buffer.
void bw_direct_scalar(const BackwardPlan& P, const BwSeg& s, const BwStage1Args& a, float* row) {
    const int64_t es = elem_size(a.dt);
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t ow = P.aw.cov_lo[w]; ow < P.aw.cov_hi[w]; ++ow) {
            float r = 0.0f;
            for (int64_t oh = a.oh0; oh < a.oh1; ++oh)
                r = r + opaque(load_elem(a.go + (oh * a.go_h + ow * a.go_w) * es, a.dt) * a.sc->row(oh)[ow]);
            acc = acc + r;
        }
        row[w - s.w0] = acc;
    }
}

struct FwStage1Args {
    float* V;            // out: V[j] for input column vlo + j, j < n
    const char* in;      // self plane
    int64_t in_h, in_w;  // element strides
    int64_t h0, h1;      // window rows
    int64_t vlo, n;
    DType dt;
};

void fw_stage1_scalar(const FwStage1Args& a) {
    const int64_t es = elem_size(a.dt);
    for (int64_t j = 0; j < a.n; ++j) a.V[j] = 0.0f;
    for (int64_t h = a.h0; h < a.h1; ++h) {
        const char* x = a.in + (h * a.in_h + a.vlo * a.in_w) * es;
        for (int64_t j = 0; j < a.n; ++j) a.V[j] = a.V[j] + load_elem(x + j * a.in_w * es, a.dt);
    }
}

void fw_stage2_scalar(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
    for (int64_t ow = s.ow0; ow < s.ow1; ++ow) {
        float acc = 0.0f;
        for (int64_t w = P.aw.lo[ow]; w < P.aw.hi[ow]; ++w) acc = acc + V[w - s.vlo];
        out[ow - s.ow0] = acc * srow[ow];
    }
}

void fw_direct_scalar(const ForwardPlan& P, const FwSeg& s, const FwStage1Args& a, const float* srow, float* out) {
    const int64_t es = elem_size(a.dt);
    for (int64_t ow = s.ow0; ow < s.ow1; ++ow) {
        float acc = 0.0f;
        for (int64_t w = P.aw.lo[ow]; w < P.aw.hi[ow]; ++w) {
            float v = 0.0f;
            for (int64_t h = a.h0; h < a.h1; ++h) v = v + load_elem(a.in + (h * a.in_h + w * a.in_w) * es, a.dt);
            acc = acc + v;
        }
        out[ow - s.ow0] = acc * srow[ow];
    }
}

void round_scalar(const float* src, uint16_t* dst, int64_t n, DType dt) {
    if (dt == DType::F16)
        for (int64_t i = 0; i < n; ++i) dst[i] = acp::float_to_half(src[i]);
    else
        for (int64_t i = 0; i < n; ++i) dst[i] = acp::float_to_bf16(src[i]);
}

// Destination of a run of bytes written in order. Plain: memcpy. Streaming (AVX-512 only): every
// 64-byte line wholly inside the run is written with one non-temporal store (no read-for-ownership
// of the destination line); partial lines at the ends of the run use plain stores, so a line shared
// with a neighbouring work item is never streamed.
struct Sink {
    char* pos = nullptr;
    unsigned cstart = 0;  // first byte of `carry` that belongs to the run
    alignas(64) unsigned char carry[64];
};

// ---------------------------------------------------------------------------------------------
// AVX-512 row stages (same order and roundings as the scalar ones above)
// ---------------------------------------------------------------------------------------------
#if AVGPOOL_X86

// All-lanes mask. The maskz_ forms of unmasked intrinsics below dodge a GCC 12 false
// -Wmaybe-uninitialized on _mm512_undefined_*(); they compile to the same instructions.
constexpr __mmask16 kAll = 0xffff;

AVX512_FN inline __mmask16 tail_mask(int64_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// 16 elements -> FLOAT. FLOAT16 via vcvtph2ps (exact); BF16 is the upper half of a FLOAT.
// (A signalling FLOAT16 NaN comes out quieted here and not in acp::half_to_float, but every loaded
// value is multiplied or added before it is stored, which quiets it in both paths.)
template <DType DT>
AVX512_FN inline __m512 vload(const char* p, __mmask16 m) {
    if constexpr (DT == DType::F32) {
        return _mm512_maskz_loadu_ps(m, p);
    } else if constexpr (DT == DType::F16) {
        return _mm512_maskz_cvtph_ps(kAll, _mm256_maskz_loadu_epi16(m, p));
    } else {
        const __m512i u = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(m, p));
        return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, u, 16));
    }
}

AVX512_FN inline __m512 vopaque(__m512 x) {
    asm("" : "+v"(x));
    return x;
}

// acp::float_to_half: vcvtps2ph with round-to-nearest-even is the IEEE conversion (subnormals
// kept, overflow to inf, NaN quieted with its top payload bits), the same bits.
AVX512_FN inline __m256i vround_f16(__m512 v) {
    return _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// acp::float_to_bf16 in integer form (vcvtneps2bf16 would flush subnormals).
AVX512_FN inline __m256i vround_bf16(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i hi = _mm512_maskz_srli_epi32(kAll, x, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    const __m512i r = _mm512_maskz_srli_epi32(kAll, _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i q = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
    return _mm512_maskz_cvtepi32_epi16(kAll, _mm512_mask_mov_epi32(r, nan, q));
}

AVX512_FN void round_avx(const float* src, uint16_t* dst, int64_t n, DType dt) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(m, src + i);
        const __m256i r = dt == DType::F16 ? vround_f16(v) : vround_bf16(v);
        _mm256_mask_storeu_epi16(dst + i, m, r);
    }
}

template <DType DT>
AVX512_FN void bw_stage1_avx(const BwStage1Args& a) {  // requires go_w == 1
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    for (int64_t j = 0; j < a.n; j += 16) {
        const __mmask16 m = tail_mask(a.n - j);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t oh = a.oh0; oh < a.oh1; ++oh) {
            const __m512 g = vload<DT>(a.go + (oh * a.go_h + a.rlo + j) * es, m);
            const __m512 s = _mm512_maskz_loadu_ps(m, a.sc->row(oh) + a.rlo + j);
            acc = _mm512_add_ps(acc, vopaque(_mm512_mul_ps(g, s)));
        }
        _mm512_storeu_ps(a.R + j, acc);
    }
}

AVX512_FN void bw_stage2_avx(const BackwardPlan& P, const BwSeg& s, const float* R, float* row) {
    const int64_t m0 = s.w0 / 16, m1 = (s.w1 + 15) / 16;
    for (int64_t m = m0; m < m1; ++m) {
        const float* src = R + (P.chunk_base[m] - s.rlo);
        const __m512 lo = _mm512_loadu_ps(src);
        const __m512 hi = _mm512_loadu_ps(src + 16);
        const Term* t = P.terms.data() + P.chunk_first[m];
        __m512 acc = _mm512_setzero_ps();
        for (int32_t i = 0; i < P.chunk_count[m]; ++i) {
            const __m512 v = _mm512_permutex2var_ps(lo, _mm512_load_si512(t[i].idx), hi);
            acc = _mm512_mask_add_ps(acc, static_cast<__mmask16>(t[i].mask), acc, v);
        }
        _mm512_storeu_ps(row + (16 * m - s.w0), acc);
    }
}

template <DType DT>
AVX512_FN void fw_stage1_avx(const FwStage1Args& a) {  // requires in_w == 1
    constexpr int64_t es = DT == DType::F32 ? 4 : 2;
    for (int64_t j = 0; j < a.n; j += 16) {
        const __mmask16 m = tail_mask(a.n - j);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t h = a.h0; h < a.h1; ++h) acc = _mm512_add_ps(acc, vload<DT>(a.in + (h * a.in_h + a.vlo + j) * es, m));
        _mm512_storeu_ps(a.V + j, acc);
    }
}

AVX512_FN void fw_stage2_avx(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
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
            acc = _mm512_mask_add_ps(acc, mt, acc, v);
        }
        _mm512_storeu_ps(out + (ow - s.ow0), _mm512_mul_ps(acc, _mm512_maskz_loadu_ps(m, srow + ow)));
    }
}

AVX512_FN void sink_push_nt(Sink& k, const void* src_v, size_t n) {
    const char* src = static_cast<const char*>(src_v);
    while (n > 0) {
        const unsigned off = static_cast<unsigned>(reinterpret_cast<uintptr_t>(k.pos) & 63u);
        if (off == 0 && n >= 64) {  // whole lines straight from the source
            const size_t lines = n / 64;
            for (size_t i = 0; i < lines; ++i)
                _mm512_stream_si512(reinterpret_cast<__m512i*>(k.pos + 64 * i),
                                    _mm512_loadu_si512(src + 64 * i));
            k.pos += 64 * lines;
            src += 64 * lines;
            n -= 64 * lines;
            k.cstart = 0;
            continue;
        }
        if (off == 0) k.cstart = 0;
        const size_t take = std::min<size_t>(n, 64 - off);
        std::memcpy(k.carry + off, src, take);
        k.pos += take;
        src += take;
        n -= take;
        if ((reinterpret_cast<uintptr_t>(k.pos) & 63u) == 0) {  // the carried line is complete
            char* line = k.pos - 64;
            if (k.cstart == 0)
                _mm512_stream_si512(reinterpret_cast<__m512i*>(line), _mm512_load_si512(k.carry));
            else
                std::memcpy(line + k.cstart, k.carry + k.cstart, 64 - k.cstart);
            k.cstart = 0;
        }
    }
}

AVX512_FN void store_fence() { _mm_sfence(); }

#endif  // AVGPOOL_X86

void sink_begin(Sink& k, char* dst) {
    k.pos = dst;
    k.cstart = static_cast<unsigned>(reinterpret_cast<uintptr_t>(dst) & 63u);
}

void sink_end(Sink& k) {  // plain-store the partial last line
    const unsigned off = static_cast<unsigned>(reinterpret_cast<uintptr_t>(k.pos) & 63u);
    if (off > k.cstart) std::memcpy(k.pos - off + k.cstart, k.carry + k.cstart, off - k.cstart);
    k.cstart = off;
}

// ---------------------------------------------------------------------------------------------
// Path selection
// ---------------------------------------------------------------------------------------------
struct Ops {
    bool avx = false;
    void (*bw_stage1)(const BwStage1Args&) = bw_stage1_scalar;              // go_w == 1 only if avx
    void (*bw_stage2)(const BackwardPlan&, const BwSeg&, const float*, float*) = bw_stage2_scalar;
    void (*fw_stage1)(const FwStage1Args&) = fw_stage1_scalar;              // in_w == 1 only if avx
    void (*fw_stage2)(const ForwardPlan&, const FwSeg&, const float*, const float*, float*) = fw_stage2_scalar;
    void (*round)(const float*, uint16_t*, int64_t, DType) = round_scalar;
};

bool want_avx(Isa isa) { return isa != Isa::Scalar && detail::cpu_has_avx512(); }

Ops select_ops(bool avx, DType dt) {
    Ops o;
#if AVGPOOL_X86
    if (avx) {
        o.avx = true;
        o.bw_stage1 = dt == DType::F32 ? bw_stage1_avx<DType::F32>
                      : dt == DType::F16 ? bw_stage1_avx<DType::F16> : bw_stage1_avx<DType::BF16>;
        o.bw_stage2 = bw_stage2_avx;
        o.fw_stage1 = dt == DType::F32 ? fw_stage1_avx<DType::F32>
                      : dt == DType::F16 ? fw_stage1_avx<DType::F16> : fw_stage1_avx<DType::BF16>;
        o.fw_stage2 = fw_stage2_avx;
        o.round = round_avx;
    }
#else
    (void)avx;
    (void)dt;
#endif
    return o;
}

// Write one row segment of FLOAT results to a destination run (w stride `dw` elements).
// `buf16` is scratch for the rounded 16-bit values.
void emit(const float* row, int64_t n, char* dst, int64_t dw, DType dt, const Ops& ops, Sink* sink,
          uint16_t* buf16) {
    if (dw != 1) {
        const int64_t es = elem_size(dt);
        for (int64_t i = 0; i < n; ++i) store_elem(dst + i * dw * es, row[i], dt);
        return;
    }
    const void* bytes = row;
    size_t nbytes = static_cast<size_t>(n) * 4;
    if (dt != DType::F32) {
        ops.round(row, buf16, n, dt);
        bytes = buf16;
        nbytes = static_cast<size_t>(n) * 2;
    }
#if AVGPOOL_X86
    if (sink) {
        sink_push_nt(*sink, bytes, nbytes);
        return;
    }
#else
    (void)sink;
#endif
    std::memcpy(dst, bytes, nbytes);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// detail
// ---------------------------------------------------------------------------------------------
bool detail::cpu_has_avx512() {
#if AVGPOOL_X86
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    return has;
#else
    return false;
#endif
}

void detail::round_floats(const float* src, uint16_t* dst, int64_t n, DType dt, Isa isa) {
    select_ops(want_avx(isa), dt).round(src, dst, n, dt);
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------
BackwardKernel::BackwardKernel(const Geometry& g, DType dt, int32_t precision) {
    auto P = std::make_shared<BackwardPlan>();
    P->g = g;
    P->dt = dt;
    P->planes = g.N * g.C;
    P->ah = make_axis(g.H, g.Ho, g.kH, g.sH, g.pH, g.count_include_pad);
    P->aw = make_axis(g.W, g.Wo, g.kW, g.sW, g.pW, g.count_include_pad);
    P->sc = make_scales(g, P->ah, P->aw, precision);
    for (int64_t w0 = 0; w0 < g.W; w0 += kSegW) {
        BwSeg s{};
        s.w0 = w0;
        s.w1 = std::min(w0 + kSegW, g.W);
        s.rlo = P->aw.cov_lo[w0];  // cov_lo / cov_hi are non-decreasing in w
        s.rhi = std::max(s.rlo, P->aw.cov_hi[s.w1 - 1]);
        if (s.rhi - s.rlo > kRMax) P->direct = true;
        P->segs.push_back(s);
    }
    if (!P->direct) build_stage2_tables(*P);
    P->row_blocks = row_blocks_for(P->planes, g.H);
    P->stream_auto = P->planes * g.H * g.W * elem_size(dt) > kStreamBytes;
    plan_ = std::move(P);
}

bool BackwardKernel::uses_avx512() const { return want_avx(isa_); }

void BackwardKernel::run(const void* gradOutput, View4 go, void* gradInput, View4 gi) const {
    const BackwardPlan& P = *plan_;
    const Geometry& g = P.g;
    if (P.planes <= 0 || g.H <= 0 || g.W <= 0) return;
    const Ops ops = select_ops(want_avx(isa_), P.dt);
    const bool stream = ops.avx && gi.w == 1 &&
                        (store_ == StoreMode::Streaming || (store_ == StoreMode::Auto && P.stream_auto));
    const bool flat = gi.w == 1 && gi.h == g.W;  // a row block is one contiguous run of bytes
    const auto stage1 = go.w == 1 ? ops.bw_stage1 : bw_stage1_scalar;
    const auto stage2 = P.vec_w ? ops.bw_stage2 : bw_stage2_scalar;
    const int64_t es = elem_size(P.dt);
    const int64_t items = P.planes * P.row_blocks;

    auto body = [&](const tbb::blocked_range<int64_t>& range) {
        alignas(64) float R[kRMax + 64];
        alignas(64) float row[kSegW + 16];
        alignas(64) uint16_t row16[kSegW + 32];
        Sink sink;
        Sink* sk = stream ? &sink : nullptr;
        std::fill(std::begin(R), std::end(R), 0.0f);  // lanes past a segment's R are loaded, never used
        for (int64_t item = range.begin(); item != range.end(); ++item) {
            const int64_t p = item / P.row_blocks, b = item % P.row_blocks;
            const int64_t h0 = b * g.H / P.row_blocks, h1 = (b + 1) * g.H / P.row_blocks;
            const int64_t n = p / g.C, c = p % g.C;
            const char* goP = static_cast<const char*>(gradOutput) + (n * go.n + c * go.c) * es;
            char* giP = static_cast<char*>(gradInput) + (n * gi.n + c * gi.c) * es;
            if (sk && flat) sink_begin(sink, giP + h0 * g.W * es);
            for (int64_t h = h0; h < h1; ++h) {
                if (sk && !flat) sink_begin(sink, giP + h * gi.h * es);
                BwStage1Args a{R, goP, go.h, go.w, P.ah.cov_lo[h], P.ah.cov_hi[h], 0, 0, &P.sc, P.dt};
                for (const BwSeg& s : P.segs) {
                    const int64_t nw = s.w1 - s.w0;
                    if (a.oh0 == a.oh1) {
                        std::fill(row, row + nw, 0.0f);  // no window covers this row
                    } else if (P.direct) {
                        bw_direct_scalar(P, s, a, row);
                    } else {
                        a.rlo = s.rlo;
                        a.n = s.rhi - s.rlo;
                        stage1(a);
                        stage2(P, s, R, row);
                    }
                    emit(row, nw, giP + (h * gi.h + s.w0 * gi.w) * es, gi.w, P.dt, ops, sk, row16);
                }
                if (sk && !flat) sink_end(sink);
            }
            if (sk && flat) sink_end(sink);
        }
#if AVGPOOL_X86
        if (sk) store_fence();  // order the non-temporal stores before the task completes
#endif
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, items), body, tbb::static_partitioner());
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------
ForwardKernel::ForwardKernel(const Geometry& g, DType dt, int32_t precision) {
    auto P = std::make_shared<ForwardPlan>();
    P->g = g;
    P->dt = dt;
    P->planes = g.N * g.C;
    P->ah = make_axis(g.H, g.Ho, g.kH, g.sH, g.pH, g.count_include_pad);
    P->aw = make_axis(g.W, g.Wo, g.kW, g.sW, g.pW, g.count_include_pad);
    P->sc = make_scales(g, P->ah, P->aw, precision);
    const Axis& aw = P->aw;
    for (int64_t ow = 0; ow < g.Wo; ++ow)
        if (aw.hi[ow] - aw.lo[ow] > kVMax) P->direct = true;
    // Segments: consecutive outputs whose windows together span at most kVMax input columns.
    for (int64_t ow0 = 0; ow0 < g.Wo;) {
        FwSeg s{};
        s.ow0 = ow0;
        s.vlo = aw.lo[ow0];  // lo / hi are non-decreasing
        int64_t ow1 = ow0 + 1;
        while (ow1 < g.Wo && ow1 - ow0 < kSegO && (P->direct || aw.hi[ow1] - s.vlo <= kVMax)) ++ow1;
        s.ow1 = ow1;
        s.vhi = std::max(s.vlo, aw.hi[ow1 - 1]);
        for (int64_t ow = ow0; ow < ow1; ++ow) s.tmax = std::max(s.tmax, aw.hi[ow] - aw.lo[ow]);
        P->segs.push_back(s);
        ow0 = ow1;
    }
    P->vec_ok = g.W < (int64_t{1} << 30);
    if (P->vec_ok) {
        P->wlo32.assign(static_cast<size_t>(g.Wo + 16), 0);
        P->wid32.assign(static_cast<size_t>(g.Wo + 16), 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            P->wlo32[ow] = static_cast<int32_t>(aw.lo[ow]);
            P->wid32[ow] = static_cast<int32_t>(aw.hi[ow] - aw.lo[ow]);
        }
    }
    P->row_blocks = row_blocks_for(P->planes, g.Ho);
    plan_ = std::move(P);
}

bool ForwardKernel::uses_avx512() const { return want_avx(isa_); }

void ForwardKernel::run(const void* self, View4 in, void* out, View4 outv) const {
    const ForwardPlan& P = *plan_;
    const Geometry& g = P.g;
    if (P.planes <= 0 || g.Ho <= 0 || g.Wo <= 0) return;
    const Ops ops = select_ops(want_avx(isa_), P.dt);
    const auto stage1 = in.w == 1 ? ops.fw_stage1 : fw_stage1_scalar;
    const auto stage2 = P.vec_ok ? ops.fw_stage2 : fw_stage2_scalar;
    const int64_t es = elem_size(P.dt);
    const int64_t items = P.planes * P.row_blocks;

    auto body = [&](const tbb::blocked_range<int64_t>& range) {
        alignas(64) float V[kVMax + 32];
        alignas(64) float row[kSegO + 16];
        alignas(64) uint16_t row16[kSegO + 32];
        for (int64_t item = range.begin(); item != range.end(); ++item) {
            const int64_t p = item / P.row_blocks, b = item % P.row_blocks;
            const int64_t oh0 = b * g.Ho / P.row_blocks, oh1 = (b + 1) * g.Ho / P.row_blocks;
            const int64_t n = p / g.C, c = p % g.C;
            const char* inP = static_cast<const char*>(self) + (n * in.n + c * in.c) * es;
            char* outP = static_cast<char*>(out) + (n * outv.n + c * outv.c) * es;
            for (int64_t oh = oh0; oh < oh1; ++oh) {
                const float* srow = P.sc.row(oh);
                FwStage1Args a{V, inP, in.h, in.w, P.ah.lo[oh], P.ah.hi[oh], 0, 0, P.dt};
                for (const FwSeg& s : P.segs) {
                    const int64_t no = s.ow1 - s.ow0;
                    if (a.h0 == a.h1) {
                        std::fill(row, row + no, 0.0f);  // window rows wholly in the padding
                    } else if (P.direct) {
                        fw_direct_scalar(P, s, a, srow, row);
                    } else {
                        a.vlo = s.vlo;
                        a.n = s.vhi - s.vlo;
                        stage1(a);
                        stage2(P, s, V, srow, row);
                    }
                    emit(row, no, outP + (oh * outv.h + s.ow0 * outv.w) * es, outv.w, P.dt, ops, nullptr, row16);
                }
            }
        }
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, items), body, tbb::static_partitioner());
}

}  // namespace avgpool2d
