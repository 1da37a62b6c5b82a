// avgpool2d planning tables (see avgpool2d_tables.hpp): PyTorch's window arithmetic per axis, the
// divisor scales, the segmentation that bounds each task's stack scratch, and the permutation
// tables of the AVX-512 stages.
#include "avgpool2d_tables.hpp"

#include <algorithm>
#include <utility>

#include "aclnn_cpu/numeric.hpp"

namespace avgpool2d {
namespace {

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

Parity parity_of(const BackwardPlan& P) {
    const Geometry& g = P.g;
    if (!P.vec_w || P.segs.size() != 1 || g.sW != 2 || g.pW < 0 || g.pW > 1) return Parity::None;
    if (g.kW == 2) return g.pW == 0 ? Parity::K2P0 : Parity::K2P1;
    if (g.kW == 3) return g.pW == 0 ? Parity::K3P0 : Parity::K3P1;
    return Parity::None;
}

void fill_windows(Windows& P, const Geometry& g, DType dt, int32_t precision) {
    P.g = g;
    P.dt = dt;
    P.planes = g.N * g.C;
    P.ah = make_axis(g.H, g.Ho, g.kH, g.sH, g.pH, g.count_include_pad);
    P.aw = make_axis(g.W, g.Wo, g.kW, g.sW, g.pW, g.count_include_pad);
    P.sc = make_scales(g, P.ah, P.aw, precision);
}

}  // namespace

void build_backward_plan(BackwardPlan& P, const Geometry& g, DType dt, int32_t precision) {
    fill_windows(P, g, dt, precision);
    if (g.W > 0) {
        plan_segments(P);
        if (!P.direct) build_stage_a_tables(P);
        P.parity = parity_of(P);
    }
    P.row_blocks = row_blocks_for(P.planes, g.H);
    P.stream_auto = P.planes * g.H * g.W * elem_size(dt) > kStreamBytes;
}

void build_forward_plan(ForwardPlan& P, const Geometry& g, DType dt, int32_t precision) {
    fill_windows(P, g, dt, precision);
    const Axis& aw = P.aw;
    plan_fw_segments(P);
    build_fw_tables(P);
    P.vec_ok = g.W < (int64_t{1} << 30);
    if (P.vec_ok) {
        P.wlo32.assign(static_cast<size_t>(g.Wo + 16), 0);
        P.wid32.assign(static_cast<size_t>(g.Wo + 16), 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            P.wlo32[ow] = static_cast<int32_t>(aw.lo[ow]);
            P.wid32[ow] = static_cast<int32_t>(aw.hi[ow] - aw.lo[ow]);
        }
    }
    P.row_blocks = row_blocks_for(P.planes, g.Ho);
}

}  // namespace avgpool2d
