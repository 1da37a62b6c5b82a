// avgpool2d compute kernels. See avgpool2d_kernels.hpp for the contract and the summation order.
//
// Backward is a gather. Within one column segment of a plane:
//   stage A  for each gradOutput row oh (once, kept in a small ring of rows):
//            P[ow]  = gradOutput[oh][ow] * scale(oh, ow)
//            Q_oh[w] = 0 + sum over the columns ow covering w (ascending) of P[ow]
//   stage B  gradInput[h][w] = 0 + sum over the rows oh covering h (ascending) of Q_oh[w]
// Stage A is the horizontal gather: a 16-wide chunk of Q needs P entries from a window of at most
// 32 (true unless stride 1 with kW > 17), so it is two loads and, per covering term, one vpermt2ps
// and a masked add, with index/mask tables precomputed per chunk in the constructor. Stage B is a
// plain aligned vertical sum of 1 or 2 (ceil(kH/sH)) rows, rounded and stored straight from the
// register. gradInput rows are independent, so work items are (plane, row block) pairs run with a
// static partition: no atomics, no races, the same bits at any thread count.
// Forward: column sums over the window rows (stage 1), then window sums along the row (stage 2:
// the same kind of permutation tables, with three source vectors so that 16 outputs may span 48
// input columns, e.g. k3 s2; vgatherdps when even that does not fit), times the scale.
//
// The scalar path (any CPU, any strides) does every arithmetic step in the same order as the
// AVX-512 path: sums start at +0.0f (so an accumulator is never -0 and a masked-off "+0" is a
// no-op), products are kept out of FMA contraction (opaque()), roundings follow numeric.hpp.
#include "avgpool2d_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AVGPOOL_X86 1
#include <immintrin.h>
// Function-level target: the file is built for the baseline ISA; these functions only run after
// the runtime check in detail::cpu_has_avx512().
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define AVGPOOL_X86 0
#endif

namespace avgpool2d {
namespace {

// Per-task scratch lives on the stack (run() never allocates); these bound it (~53 KB backward).
constexpr int64_t kSegWMax = 512;  // backward: widest gradInput column segment (multiple of 16)
constexpr int64_t kRMax = 2048;    // backward: max gradOutput columns feeding one segment
constexpr int64_t kRing = 8192;    // backward: floats of cached Q rows
constexpr int64_t kRingRows = 64;  // backward: max cached Q rows
constexpr int64_t kSegO = 512;     // forward: output row segment width (multiple of 16)
constexpr int64_t kVMax = 4096;    // forward: max input columns feeding one segment
constexpr int64_t kMinItems = 64;  // split planes into row blocks when there are fewer planes
// Non-temporal stores pay off once gradInput cannot stay in the 32 MB L3 anyway.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

int64_t elem_size(DType dt) { return dt == DType::F32 ? 4 : 2; }
int64_t round_up16(int64_t x) { return (x + 15) / 16 * 16; }

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
// Window and scale tables
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
// A window that is empty along either axis gets scale 0: it contributes nothing, and the forward
// writes 0 * 0 = +0 for it as PyTorch does. No division by zero ever happens.
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
    sc.stride = round_up16(g.Wo) + 16;
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

// One term of stage A for a 16-wide chunk: lane l adds P[off + idx[l]] when bit l of mask is set.
struct alignas(64) Term {
    int32_t idx[16];
    uint16_t mask;  // an __mmask16
};

// Stage A of one 16-column chunk: load P[off .. off + 32), then apply terms [first, first + count).
struct Chunk {
    int32_t off, first, count;
};

struct BwSeg {
    int64_t w0, w1;    // gradInput columns [w0, w1), w0 a multiple of 16
    int64_t rlo, rhi;  // gradOutput columns feeding them; P[j] holds column rlo + j
    int32_t terms = -1;  // stage-A terms of every chunk when they all have the same count, else -1
};

struct BackwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    int64_t planes = 0;
    Axis ah, aw;
    Scales sc;
    std::vector<BwSeg> segs;
    bool direct = false;     // no segmentation fits the scratch: per-element scalar path
    int64_t ring_rows = 1;   // gradOutput rows covering one gradInput row, at most, + 1 (ring size)
    std::vector<int64_t> slot;  // per oh: offset of its Q row in the ring
    bool vec_w = false;      // stage-A permutation tables are valid
    std::vector<Chunk> chunks;  // per 16 gradInput columns
    std::vector<Term> terms;
    int64_t row_blocks = 1;
    bool stream_auto = false;
};

struct FwSeg {
    int64_t ow0, ow1;  // output columns [ow0, ow1), ow0 a multiple of 16
    int64_t vlo, vhi;  // input columns feeding them; V[j] holds column vlo + j
    int64_t tmax;      // widest window in the segment
};

// Forward stage 2 of one 16-output chunk: load V[off .. off + 48) as three vectors A, B, C; each
// term adds, in the lanes of `mask`, (A:B)[idx] or, in the lanes of `mask_hi`, C[idx - 32].
struct alignas(64) FwTerm {
    int32_t idx[16];
    uint16_t mask, mask_hi;
};

struct ForwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    int64_t planes = 0;
    Axis ah, aw;
    Scales sc;
    std::vector<FwSeg> segs;
    bool direct = false;  // some window is wider than kVMax: per-element scalar path
    bool vec_ok = false;  // int32 column tables valid (gather stage 2)
    std::vector<int32_t> wlo32, wid32;  // per ow: window start and width (zero padded by 16)
    bool perm_ok = false;  // permutation tables valid (every chunk's windows fit 48 columns)
    std::vector<Chunk> chunks;  // per 16 outputs
    std::vector<FwTerm> terms;
    int64_t row_blocks = 1;
};

namespace {

std::vector<BwSeg> make_bw_segs(const Axis& aw, int64_t W, int64_t segw) {
    std::vector<BwSeg> segs;
    for (int64_t w0 = 0; w0 < W; w0 += segw) {
        BwSeg s{};
        s.w0 = w0;
        s.w1 = std::min(w0 + segw, W);
        s.rlo = aw.cov_lo[w0];  // cov_lo / cov_hi are non-decreasing in w
        s.rhi = std::max(s.rlo, aw.cov_hi[s.w1 - 1]);
        segs.push_back(s);
    }
    return segs;
}

// Widest segmentation whose P row and Q ring fit the stack scratch; none: direct path.
void plan_segments(BackwardPlan& P) {
    const Geometry& g = P.g;
    int64_t rows = 1;
    for (int64_t h = 0; h < g.H; ++h) rows = std::max(rows, P.ah.cov_hi[h] - P.ah.cov_lo[h]);
    ++rows;  // + 1: stage A may run one gradOutput row ahead (pairs of rows)
    P.ring_rows = rows;
    for (int64_t segw = kSegWMax; segw >= 16 && rows <= kRingRows; segw /= 2) {
        std::vector<BwSeg> segs = make_bw_segs(P.aw, g.W, segw);
        int64_t span = 0;
        for (const BwSeg& s : segs) span = std::max(span, s.rhi - s.rlo);
        const int64_t qstride = round_up16(std::min(segw, g.W));
        if (span <= kRMax && rows * qstride <= kRing) {
            P.segs = std::move(segs);
            P.slot.resize(static_cast<size_t>(g.Ho));
            for (int64_t oh = 0; oh < g.Ho; ++oh) P.slot[oh] = (oh % rows) * qstride;
            return;
        }
    }
    P.direct = true;
    P.segs = make_bw_segs(P.aw, g.W, kSegWMax);
}

// Forward segments: 16-aligned runs of outputs whose windows span at most kVMax input columns
// (the widest runs that fit); none fits: the direct path.
void plan_fw_segments(ForwardPlan& P) {
    const Axis& aw = P.aw;
    const int64_t Wo = P.g.Wo;
    auto make = [&](int64_t sego) {
        std::vector<FwSeg> segs;
        for (int64_t ow0 = 0; ow0 < Wo; ow0 += sego) {
            FwSeg s{};
            s.ow0 = ow0;
            s.ow1 = std::min(ow0 + sego, Wo);
            s.vlo = aw.lo[ow0];  // lo / hi are non-decreasing
            s.vhi = std::max(s.vlo, aw.hi[s.ow1 - 1]);
            for (int64_t ow = ow0; ow < s.ow1; ++ow) s.tmax = std::max(s.tmax, aw.hi[ow] - aw.lo[ow]);
            segs.push_back(s);
        }
        return segs;
    };
    for (int64_t sego = kSegO; sego >= 16; sego /= 2) {
        std::vector<FwSeg> segs = make(sego);
        bool fits = true;
        for (const FwSeg& s : segs) fits = fits && s.vhi - s.vlo <= kVMax;
        if (fits) {
            P.segs = std::move(segs);
            return;
        }
    }
    P.direct = true;
    P.segs = make(kSegO);
}

// Forward stage-2 tables (like the backward's stage-A tables, with a third source vector).
void build_fw_tables(ForwardPlan& P) {
    const Axis& aw = P.aw;
    if (P.direct || P.g.W >= (int64_t{1} << 30)) return;  // perm_ok stays false
    P.chunks.resize(static_cast<size_t>((P.g.Wo + 15) / 16));
    for (const FwSeg& s : P.segs) {
        for (int64_t m = s.ow0 / 16; m < (s.ow1 + 15) / 16; ++m) {
            const int64_t oa = 16 * m, ob = std::min(oa + 16, s.ow1);
            const int64_t off = aw.lo[oa] - s.vlo;
            int64_t T = 0;
            for (int64_t ow = oa; ow < ob; ++ow) T = std::max(T, aw.hi[ow] - aw.lo[ow]);
            const int32_t first = static_cast<int32_t>(P.terms.size());
            for (int64_t t = 0; t < T; ++t) {
                FwTerm tm{};
                for (int64_t ow = oa; ow < ob; ++ow) {
                    if (t >= aw.hi[ow] - aw.lo[ow]) continue;
                    const int64_t idx = aw.lo[ow] + t - s.vlo - off;
                    if (idx >= 48) return;  // does not fit three vectors: perm_ok stays false
                    tm.idx[ow - oa] = static_cast<int32_t>(idx);
                    tm.mask = static_cast<uint16_t>(tm.mask | (1u << (ow - oa)));
                    if (idx >= 32) tm.mask_hi = static_cast<uint16_t>(tm.mask_hi | (1u << (ow - oa)));
                }
                P.terms.push_back(tm);
            }
            P.chunks[m] = Chunk{static_cast<int32_t>(off), first, static_cast<int32_t>(T)};
        }
    }
    P.perm_ok = true;
}

bool same_term(const Term& a, const Term& b) {
    return a.mask == b.mask && std::equal(std::begin(a.idx), std::end(a.idx), std::begin(b.idx));
}

// Stage-A tables. The 32 P entries a chunk loads start at a multiple of 16 when its terms fit
// there (then the loads match the 64-byte stores that wrote P and are forwarded from the store
// buffer), else at the chunk's first term.
void build_stage_a_tables(BackwardPlan& P) {
    const Axis& aw = P.aw;
    if (P.g.Wo >= (int64_t{1} << 30)) return;  // vec_w stays false
    const int64_t nchunks = (P.g.W + 15) / 16;
    P.chunks.resize(static_cast<size_t>(nchunks));
    std::vector<std::pair<int32_t, int32_t>> patterns;  // distinct term sequences (first, count)
    std::vector<Term> cand;
    for (BwSeg& s : P.segs) {
        s.terms = -2;  // none seen yet
        for (int64_t m = s.w0 / 16; m < (s.w1 + 15) / 16; ++m) {
            const int64_t wa = 16 * m, wb = std::min(wa + 16, s.w1);
            const int64_t base = aw.cov_lo[wa] - s.rlo;  // cov_lo is non-decreasing: chunk minimum
            int64_t T = 0, reach = 0;                     // terms; last P index used, + 1
            for (int64_t w = wa; w < wb; ++w) {
                T = std::max(T, aw.cov_hi[w] - aw.cov_lo[w]);
                if (aw.cov_hi[w] > aw.cov_lo[w]) reach = std::max(reach, aw.cov_hi[w] - s.rlo);
            }
            if (reach - base > 32) return;  // does not fit two vectors: vec_w stays false
            const int64_t off = reach - (base & ~int64_t{15}) <= 32 ? (base & ~int64_t{15}) : base;
            cand.assign(static_cast<size_t>(T), Term{});
            for (int64_t t = 0; t < T; ++t) {
                for (int64_t w = wa; w < wb; ++w) {
                    const int64_t ow = aw.cov_lo[w] + t;
                    if (ow >= aw.cov_hi[w]) continue;
                    cand[t].idx[w - wa] = static_cast<int32_t>(ow - s.rlo - off);
                    cand[t].mask = static_cast<uint16_t>(cand[t].mask | (1u << (w - wa)));
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
            P.chunks[m] = Chunk{static_cast<int32_t>(off), first, static_cast<int32_t>(T)};
            s.terms = s.terms == -2 || s.terms == T ? static_cast<int32_t>(T) : -1;
        }
    }
    P.vec_w = true;
}

// ---------------------------------------------------------------------------------------------
// Row stages: scalar implementations (any strides; they define the order)
// ---------------------------------------------------------------------------------------------

// P[j] = gradOutput[rlo + j] * scale[rlo + j], j < n, for one gradOutput row.
void bw_products_scalar(float* P, const char* go_row, int64_t go_w, const float* srow, int64_t n, DType dt) {
    const int64_t es = elem_size(dt);
    for (int64_t j = 0; j < n; ++j) P[j] = opaque(load_elem(go_row + j * go_w * es, dt) * srow[j]);
}

// Stage A: Q[w - w0] = 0 + sum of P over the columns covering w.
void bw_stage_a_scalar(const BackwardPlan& B, const BwSeg& s, const float* P, float* Q) {
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t ow = B.aw.cov_lo[w]; ow < B.aw.cov_hi[w]; ++ow) acc = acc + P[ow - s.rlo];
        Q[w - s.w0] = acc;
    }
}

// Stage B: out[j] = 0 + rows[0][j] + rows[1][j] + ..., stored as dt with a stride of `ds` bytes.
void bw_stage_b_scalar(const float* const* rows, int64_t count, int64_t n, char* out, int64_t ds, DType dt) {
    for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t i = 0; i < count; ++i) acc = acc + rows[i][j];
        store_elem(out + j * ds, acc, dt);
    }
}

// Same bits as stages A and B (each Q entry recomputed per use), with no scratch at all.
void bw_direct_scalar(const BackwardPlan& B, const BwSeg& s, const char* go, View4 gv, int64_t oh0, int64_t oh1,
                      float* row) {
    const int64_t es = elem_size(B.dt);
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
            float q = 0.0f;
            for (int64_t ow = B.aw.cov_lo[w]; ow < B.aw.cov_hi[w]; ++ow)
                q = q + opaque(load_elem(go + (oh * gv.h + ow * gv.w) * es, B.dt) * B.sc.row(oh)[ow]);
            acc = acc + q;
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

struct BwRowsArgs {  // see bw_rows_avx
    const BackwardPlan* B;
    const BwSeg* s;
    const char* go;  // gradOutput plane
    int64_t go_h;
    char* gi;        // gradInput plane
    int64_t gi_h;
    int64_t h0, h1;
    float* ring;     // Q rows
    float* P;        // products of one gradOutput row
    float* P1;       // and of the next one
    bool stream;     // non-temporal stores for whole aligned lines
};

// ---------------------------------------------------------------------------------------------
// AVX-512 row stages (same order and roundings as the scalar ones above)
// ---------------------------------------------------------------------------------------------
#if AVGPOOL_X86

// All-lanes mask. The maskz_ forms of unmasked intrinsics below dodge a GCC 12 false
// -Wmaybe-uninitialized on _mm512_undefined_*().
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

// FLOAT16 and BF16 stores round with acp::avx512 (numeric_avx512.hpp), numeric.hpp's bits.
AVX512_FN inline __m256i vround_f16(__m512 v) { return acp::avx512::to_half(v); }
AVX512_FN inline __m256i vround_bf16(__m512 v) { return acp::avx512::to_bf16(v); }

// The same with vcvtneps2bf16 (AVX512_BF16; only called when the CPU has it, hence the asm: the
// file is not built for it). The instruction rounds to nearest even and quiets NaNs exactly as
// acp::float_to_bf16 but flushes FLOAT subnormal inputs to zero: vectors holding one take the
// integer formula (vfpclassps finds them; they are rare).
AVX512_FN inline __m256i vround_bf16_hw(__m512 v) {
    __m256i r;
    asm("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
    const __mmask16 sub = _mm512_fpclass_ps_mask(v, 0x20);  // 0x20: subnormal
    if (__builtin_expect(sub != 0, 0)) r = vround_bf16(v);
    return r;
}

// FLOAT -> 16 lanes of DT's 16-bit encoding; HW: use vround_bf16_hw for BF16.
template <DType DT, bool HW>
AVX512_FN inline __m256i vround(__m512 v) {
    if constexpr (DT == DType::F16) return vround_f16(v);
    else if constexpr (HW) return vround_bf16_hw(v);
    else return vround_bf16(v);
}

// Store 16 FLOATs as DT to p; `left` elements remain in the run (masked tail store below 16).
template <DType DT, bool HW = false>
AVX512_FN inline void vstore(void* p, __m512 v, int64_t left) {
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
AVX512_FN inline void store_row(char* dst, int64_t n, bool stream, F f) {
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
AVX512_FN void round_avx(const float* src, uint16_t* dst, int64_t n, DType dt) {
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
AVX512_FN void bw_products_avx(float* P, const char* go_row, int64_t go_w, const float* srow, int64_t n, DType) {
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
AVX512_FN inline void bw_stage_a_loop(const Chunk* ck, const Term* terms, int64_t nchunks, const float* P, float* Q) {
    for (int64_t i = 0; i < nchunks; ++i, ++ck, Q += 16) {
        const __m512 lo = _mm512_loadu_ps(P + ck->off), hi = _mm512_loadu_ps(P + ck->off + 16);
        const Term* t = terms + ck->first;
        __m512 acc = _mm512_setzero_ps();
        const int32_t count = T > 0 ? T : ck->count;
        for (int32_t k = 0; k < count; ++k) {
            const __m512 v = _mm512_permutex2var_ps(lo, _mm512_load_si512(t[k].idx), hi);
            acc = _mm512_mask_add_ps(acc, _load_mask16(const_cast<__mmask16*>(&t[k].mask)), acc, v);
        }
        _mm512_store_ps(Q, acc);
    }
}

// Stage A of two gradOutput rows at once: the chunk descriptors, indices and masks are loaded once.
template <int T>
AVX512_FN inline void bw_stage_a2_loop(const Chunk* ck, const Term* terms, int64_t nchunks, const float* P0,
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
            acc0 = _mm512_mask_add_ps(acc0, m, acc0, _mm512_permutex2var_ps(lo0, idx, hi0));
            acc1 = _mm512_mask_add_ps(acc1, m, acc1, _mm512_permutex2var_ps(lo1, idx, hi1));
        }
        _mm512_store_ps(Q0, acc0);
        _mm512_store_ps(Q1, acc1);
    }
}

AVX512_FN void bw_stage_a_avx(const BackwardPlan& B, const BwSeg& s, const float* P, float* Q) {
    const Chunk* ck = B.chunks.data() + s.w0 / 16;
    const int64_t nchunks = (s.w1 - s.w0 + 15) / 16;
    switch (s.terms) {  // the common uniform counts unrolled
        case 1: return bw_stage_a_loop<1>(ck, B.terms.data(), nchunks, P, Q);
        case 2: return bw_stage_a_loop<2>(ck, B.terms.data(), nchunks, P, Q);
        case 3: return bw_stage_a_loop<3>(ck, B.terms.data(), nchunks, P, Q);
        default: return bw_stage_a_loop<0>(ck, B.terms.data(), nchunks, P, Q);
    }
}

AVX512_FN void bw_stage_a2_avx(const BackwardPlan& B, const BwSeg& s, const float* P0, const float* P1, float* Q0,
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
AVX512_FN void bw_stage_b_avx(const float* const* rows, int64_t count, int64_t n, char* out, bool stream) {
    store_row<DT, HW>(out, n, stream, [&](int64_t j) AVX512_FN {
        __m512 acc = _mm512_load_ps(rows[0] + j);
        for (int64_t i = 1; i < count; ++i) acc = _mm512_add_ps(acc, _mm512_load_ps(rows[i] + j));
        return acc;
    });
}

// One task's rows [h0, h1) of one segment of one plane, for the common case: AVX-512, w stride 1
// on both sides, stage-A tables valid. The same steps in the same order as the generic row loop in
// BackwardKernel::run, fused into one function (no per-row indirect calls).
template <DType DT, bool HW>
AVX512_FN void bw_rows_avx(const BwRowsArgs& a) {
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
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t) AVX512_FN { return zero; });
            continue;
        }
        if (have < oh0) have = oh0;
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
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) AVX512_FN { return _mm512_load_ps(q0 + j); });
        } else if (oh1 - oh0 == 2) {  // the common case (kH <= 2 sH) without the inner loop
            const float* q1 = a.ring + slot[oh0 + 1];
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) AVX512_FN {
                return _mm512_add_ps(_mm512_load_ps(q0 + j), _mm512_load_ps(q1 + j));
            });
        } else {
            store_row<DT, HW>(dst, nw, a.stream, [&](int64_t j) AVX512_FN {
                __m512 acc = _mm512_load_ps(q0 + j);
                for (int64_t oh = oh0 + 1; oh < oh1; ++oh) acc = _mm512_add_ps(acc, _mm512_load_ps(a.ring + slot[oh] + j));
                return acc;
            });
        }
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

// Forward stage 2 from the permutation tables (perm_ok).
AVX512_FN void fw_stage2_perm_avx(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
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
            acc = _mm512_mask_add_ps(acc, static_cast<__mmask16>(t[i].mask), acc, v);
        }
        const __mmask16 m = tail_mask(s.ow1 - ow);
        _mm512_storeu_ps(out + (ow - s.ow0), _mm512_mul_ps(acc, _mm512_maskz_loadu_ps(m, srow + ow)));
    }
}

AVX512_FN void store_fence() { _mm_sfence(); }

#endif  // AVGPOOL_X86

// ---------------------------------------------------------------------------------------------
// Path selection
// ---------------------------------------------------------------------------------------------
struct Ops {
    bool avx = false;
    // P of a w-stride-1 gradOutput row (the scalar one handles any stride).
    void (*bw_products)(float*, const char*, int64_t, const float*, int64_t, DType) = bw_products_scalar;
    void (*bw_stage_a)(const BackwardPlan&, const BwSeg&, const float*, float*) = bw_stage_a_scalar;
    // Stage B into a w-stride-1 run as dt (null: use bw_stage_b_scalar).
    void (*bw_stage_b)(const float* const*, int64_t, int64_t, char*, bool) = nullptr;
    // The fused row loop of the common case (null: the generic loop).
    void (*bw_rows)(const BwRowsArgs&) = nullptr;
    void (*fw_stage1)(const FwStage1Args&) = fw_stage1_scalar;  // in_w == 1 only if avx
    void (*fw_stage2)(const ForwardPlan&, const FwSeg&, const float*, const float*, float*) = fw_stage2_scalar;
    void (*fw_stage2_perm)(const ForwardPlan&, const FwSeg&, const float*, const float*, float*) = fw_stage2_scalar;
    void (*round)(const float*, uint16_t*, int64_t, DType) = round_scalar;
};

bool want_avx(Isa isa) { return isa != Isa::Scalar && detail::cpu_has_avx512(); }

bool cpu_has_avx512bf16() {
#if AVGPOOL_X86
    static const bool has = __builtin_cpu_supports("avx512bf16");
    return has;
#else
    return false;
#endif
}

#if AVGPOOL_X86
template <DType DT, bool HW>
void set_dtype_ops(Ops& o) {
    o.bw_products = bw_products_avx<DT>;
    o.bw_stage_b = bw_stage_b_avx<DT, HW>;
    o.bw_rows = bw_rows_avx<DT, HW>;
    o.fw_stage1 = fw_stage1_avx<DT>;
    o.round = round_avx<HW>;
}
#endif

Ops select_ops(Isa isa, DType dt) {
    Ops o;
#if AVGPOOL_X86
    if (want_avx(isa)) {
        o.avx = true;
        const bool hw = isa != Isa::Avx512NoBf16 && cpu_has_avx512bf16();
        switch (dt) {
            case DType::F32: set_dtype_ops<DType::F32, false>(o); break;
            case DType::F16: set_dtype_ops<DType::F16, false>(o); break;
            case DType::BF16: hw ? set_dtype_ops<DType::BF16, true>(o) : set_dtype_ops<DType::BF16, false>(o); break;
        }
        o.bw_stage_a = bw_stage_a_avx;
        o.fw_stage2 = fw_stage2_avx;
        o.fw_stage2_perm = fw_stage2_perm_avx;
    }
#else
    (void)isa;
    (void)dt;
#endif
    return o;
}

// Convert a row of FLOATs to dt into a contiguous run (w stride 1).
void put_row(const float* row, int64_t n, void* dst, DType dt, const Ops& ops) {
    if (dt == DType::F32)
        std::memcpy(dst, row, static_cast<size_t>(n) * 4);
    else
        ops.round(row, static_cast<uint16_t*>(dst), n, dt);
}

struct BwScratch {  // per-task backward scratch (on the stack, ~53 KB)
    alignas(64) float ring[kRing];     // Q rows
    alignas(64) float P[kRMax + 64];   // products of one gradOutput row (+ slack for 32-wide loads)
    alignas(64) float P1[kRMax + 64];  // and of the next one
    alignas(64) float row[kSegWMax + 16];
};

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
    select_ops(isa, dt).round(src, dst, n, dt);
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
    if (g.W > 0) {
        plan_segments(*P);
        if (!P->direct) build_stage_a_tables(*P);
    }
    P->row_blocks = row_blocks_for(P->planes, g.H);
    P->stream_auto = P->planes * g.H * g.W * elem_size(dt) > kStreamBytes;
    plan_ = std::move(P);
}

bool BackwardKernel::uses_avx512() const { return want_avx(isa_); }

void BackwardKernel::run(const void* gradOutput, View4 go, void* gradInput, View4 gi) const {
    const BackwardPlan& B = *plan_;
    const Geometry& g = B.g;
    if (B.planes <= 0 || g.H <= 0 || g.W <= 0) return;
    const Ops ops = select_ops(isa_, B.dt);
    const bool stream = ops.avx && gi.w == 1 &&
                        (store_ == StoreMode::Streaming || (store_ == StoreMode::Auto && B.stream_auto));
    const auto products = go.w == 1 ? ops.bw_products : bw_products_scalar;
    const auto stage_a = B.vec_w ? ops.bw_stage_a : bw_stage_a_scalar;
    const auto stage_b = gi.w == 1 ? ops.bw_stage_b : nullptr;
    const auto fused = B.vec_w && !B.direct && go.w == 1 && gi.w == 1 ? ops.bw_rows : nullptr;
    const int64_t es = elem_size(B.dt);
    const int64_t items = B.planes * B.row_blocks;

    auto body = [&](const tbb::blocked_range<int64_t>& range) {
        BwScratch scr;
        // Entries past a segment's span are loaded (whole vectors) but never used; keep them defined.
        std::fill(std::begin(scr.P), std::end(scr.P), 0.0f);
        std::fill(std::begin(scr.P1), std::end(scr.P1), 0.0f);
        const float* rows[kRingRows];
        for (int64_t item = range.begin(); item != range.end(); ++item) {
            const int64_t p = item / B.row_blocks, b = item % B.row_blocks;
            const int64_t h0 = b * g.H / B.row_blocks, h1 = (b + 1) * g.H / B.row_blocks;
            const int64_t n = p / g.C, c = p % g.C;
            const char* goP = static_cast<const char*>(gradOutput) + (n * go.n + c * go.c) * es;
            char* giP = static_cast<char*>(gradInput) + (n * gi.n + c * gi.c) * es;
            for (const BwSeg& s : B.segs) {
                if (fused) {
                    fused(BwRowsArgs{&B, &s, goP, go.h, giP, gi.h, h0, h1, scr.ring, scr.P, scr.P1, stream});
                    continue;
                }
                const int64_t nw = s.w1 - s.w0, span = s.rhi - s.rlo;
                int64_t have = -1;  // Q rows [.., have) of this segment are in the ring
                for (int64_t h = h0; h < h1; ++h) {
                    const int64_t oh0 = B.ah.cov_lo[h], oh1 = B.ah.cov_hi[h];
                    char* dst = giP + (h * gi.h + s.w0 * gi.w) * es;
                    if (oh0 == oh1 || B.direct) {  // no window covers the row / per-element path
                        if (oh0 == oh1)
                            std::fill(scr.row, scr.row + nw, 0.0f);
                        else
                            bw_direct_scalar(B, s, goP, go, oh0, oh1, scr.row);
                        if (gi.w == 1)
                            put_row(scr.row, nw, dst, B.dt, ops);
                        else
                            for (int64_t i = 0; i < nw; ++i) store_elem(dst + i * gi.w * es, scr.row[i], B.dt);
                        continue;
                    }
                    // Stage A for the gradOutput rows not yet in the ring.
                    if (have < oh0) have = oh0;
                    for (; have < oh1; ++have) {
                        products(scr.P, goP + (have * go.h + s.rlo * go.w) * es, go.w, B.sc.row(have) + s.rlo,
                                 span, B.dt);
                        stage_a(B, s, scr.P, scr.ring + B.slot[have]);
                    }
                    // Stage B, rounded and stored.
                    for (int64_t oh = oh0; oh < oh1; ++oh) rows[oh - oh0] = scr.ring + B.slot[oh];
                    if (stage_b)
                        stage_b(rows, oh1 - oh0, nw, dst, stream);
                    else
                        bw_stage_b_scalar(rows, oh1 - oh0, nw, dst, gi.w * es, B.dt);
                }
            }
        }
#if AVGPOOL_X86
        if (stream) store_fence();  // order the non-temporal stores before the task completes
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
    plan_fw_segments(*P);
    build_fw_tables(*P);
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
    const Ops ops = select_ops(isa_, P.dt);
    const auto stage1 = in.w == 1 ? ops.fw_stage1 : fw_stage1_scalar;
    const auto stage2 = P.perm_ok ? ops.fw_stage2_perm : P.vec_ok ? ops.fw_stage2 : fw_stage2_scalar;
    const int64_t es = elem_size(P.dt);
    const int64_t items = P.planes * P.row_blocks;

    auto body = [&](const tbb::blocked_range<int64_t>& range) {
        alignas(64) float V[kVMax + 64];  // + slack for the 48-wide loads of stage 2
        std::fill(std::begin(V), std::end(V), 0.0f);  // entries past a segment are loaded, never used
        alignas(64) float row[kSegO + 16];
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
                    char* dst = outP + (oh * outv.h + s.ow0 * outv.w) * es;
                    if (outv.w == 1)
                        put_row(row, no, dst, P.dt, ops);
                    else
                        for (int64_t i = 0; i < no; ++i) store_elem(dst + i * outv.w * es, row[i], P.dt);
                }
            }
        }
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, items), body, tbb::static_partitioner());
}

}  // namespace avgpool2d
