// MaxPool2dWithMaskBackward, the gather path (contract of run_plane_gather in
// maxpool_backward_paths.hpp; the kernel's overview in maxpool_backward.cpp).
//
// At stride 1 in both directions (GoogLeNet's and Inception's 3x3 s1 p1 branch pools) the outputs
// that can reach an input element (ih, iw) are (ih + pH - kh, iw + pW - kw) for every kernel
// position (kh, kw), and for 16 consecutive input columns those are 16 consecutive outputs of one
// output row. So each gradInput block of 16 elements pulls its sum: per kernel position one masked
// compare of 16 mask lanes (int32: the index equals the element's flat index; bits: the position's
// bit of each output is set) and one masked add of the 16 gradOutput values - no scatter, no ring
// of partial sums, each gradInput row written once, whole. The scatter paths cost a dependent
// read-modify-write per output here; with 8 of 9 windows overlapping each element that chain
// bound them (32x192x28x28, 2 threads, Zen 5: 2.8 ms int32 on the small-plane path, 7.6 ms bits on
// the ring path, PyTorch 1.6-1.9; here 2.1-2.2 and 2.4-2.7 ms with FLOAT computed as FLOAT16).
// Int32 planes narrower than a block keep the small-plane path (see run()).
//
// The same bits as the other paths: a sum starts at +0 and takes its contributions in ascending
// output order - kh from kH - 1 down (ascending output rows), then kw from kW - 1 down (ascending
// columns). Int32 lanes whose output lies outside [0, Wo) read the ring's lead and pad, which match
// no element (see Ring); bit-mask lanes there test no bit (gather_rows). Int32 indices
// are checked against their windows row by row, in output order, before the row is used (the
// sums never read memory through an index, so a bad one only has to be reported); several bits
// of one output route to distinct elements and bits into the padding name no element, as on the
// other paths.

#include "maxpool_backward_paths.hpp"

namespace mpool {

#if ACP_X86
namespace {

// A plane's ring: rows of P.gather_row entries, an output row's int32 indices or its gradOutput
// values at entry kLead + ow. Lanes left of column 0 and right of Wo read the lead and the pad: -1
// (no index equals it), so the sums need no lane masks; gradOutput's pad is never added (its
// compare fails). kH + kGatherRows - 1 rows of each (kGatherRows input rows at a time reach that
// many output rows), then one row of -1 for the output rows outside [0, Ho). (Bit masks use the
// gradOutput rows only.)
constexpr int64_t kLead = 16;

struct Ring {
    int32_t *code;  // slots + 1 rows (the last: pad values), int32 masks only
    float *grad;    // slots rows
    int64_t row, slots;
    int32_t *code_row(int64_t slot) const { return code + slot * row; }
    float *grad_row(int64_t slot) const { return grad + slot * row; }
};

// The window test of ready_row for outputs ow .. ow + 15 (indices v, stored to out + ow): pass with
// the sign bit of each lane cleared where that lane fails.
MPOOL_AI __m512i window_pass(const BackwardPlan &P, __m512i v, int64_t ow, __m512i start, __m512i vW, int64_t hh,
                             __m512i pass, int32_t *out) {
    __m512i d = _mm512_sub_epi32(v, _mm512_add_epi32(start, _mm512_loadu_si512(P.col_lo.data() + ow)));
    for (int64_t t = 1; t < hh; ++t) d = _mm512_maskz_min_epu32(kAll, d, _mm512_sub_epi32(d, vW));
    // x | -x for x = v + 1: 0 for -1 only, at least 2^31 as unsigned for every other v (v + 1
    // alone passed the small indices 0 .. width - 2 outside the window too)
    const __m512i x = _mm512_add_epi32(v, _mm512_set1_epi32(1));
    d = _mm512_maskz_min_epu32(kAll, d, _mm512_or_si512(x, _mm512_sub_epi32(_mm512_setzero_si512(), x)));
    d = _mm512_maskz_min_epu32(kAll, d, _mm512_set1_epi32(255));
    _mm512_storeu_si512(out + ow, v);
    return _mm512_and_si512(pass, _mm512_sub_epi32(d, _mm512_loadu_si512(P.col_wid.data() + ow)));
}

// Output row oh into ring slot `slot`: its gradOutput values as FLOAT and, for int32 masks, its
// indices, checked against their clipped windows (window_pass) - returns the first bad output
// column, or -1.
template <bool BITS>
MPOOL_AI int64_t ready_row(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, const Ring &r,
                           int64_t slot, int64_t oh) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt);
    // (lane masks from vector compares: a mask moved in from a general register stalls the loads
    // that wait for it)
    const __m512i vWo = _mm512_set1_epi32(static_cast<int32_t>(g.Wo)), sixteen = _mm512_set1_epi32(16);
    __m512i col = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    float *grad = r.grad_row(slot) + kLead;
    if (P.dt == DType::F32 && gov.w == 1) {  // copied here: a call per row cost 12 % of a 28x28 plane
        const auto *src = reinterpret_cast<const float *>(go + oh * gov.h * es);
        __m512i c = col;
        for (int64_t ow = 0; ow < g.Wo; ow += 16, c = _mm512_add_epi32(c, sixteen)) {
            const __m512 v = _mm512_maskz_loadu_ps(_mm512_cmplt_epi32_mask(c, vWo), src + ow);
            _mm512_storeu_ps(grad + ow, P.fp16 ? acp::avx512::round_fp16(v) : v);  // (load_row's rounding)
        }
    } else {
        load_row(go + oh * gov.h * es, gov.w, g.Wo, P.dt, P.fp16, grad, true);
    }
    if constexpr (BITS) {
        return -1;  // (gather_rows reads the bits from the mask itself)
    } else {
        int32_t *out = r.code_row(slot) + kLead;
        // The window test in vector arithmetic, no compare a block (compares into mask registers
        // go one a cycle here, and the gather's need them; one a block and a branch on it took a
        // quarter of a 28x28 plane): d = v - (the clipped window's first element), then hh - 1
        // times d = min(d, d - W) as unsigned - d mod W when d < hh * W, else at least W - is
        // below the window's width iff v lies in its window; a term that is 0 for -1 ("no
        // maximum") and huge for any other v, taken into the minimum, passes the skipped lanes
        // (and the lanes past Wo, loaded as -1, whose width is 1). min(d, 255) - width is
        // negative iff the lane passes: the row passes iff the AND of these keeps every sign bit.
        const uint8_t *idx = mask_plane + oh * g.Wo * 4;
        const int64_t lo = g.row_lo(oh), hh = g.row_hi(oh) - lo;
        const __m512i start = _mm512_set1_epi32(static_cast<int32_t>(lo * g.W)), minus1 = _mm512_set1_epi32(-1);
        const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
        __m512i pass = minus1;
        int64_t ow = 0;
        for (; ow + 16 <= g.Wo; ow += 16)
            pass = window_pass(P, _mm512_loadu_si512(idx + ow * 4), ow, start, vW, hh, pass, out);
        if (ow < g.Wo) {
            const __mmask16 live = _mm512_cmplt_epi32_mask(_mm512_add_epi32(col, _mm512_set1_epi32(static_cast<int32_t>(ow))), vWo);
            pass = window_pass(P, _mm512_mask_loadu_epi32(minus1, live, idx + ow * 4), ow, start, vW, hh, pass, out);
        }
        if (_mm512_movepi32_mask(pass) == kAll) return -1;
        // a bad index: the first, one output at a time (rare: the run fails)
        for (int64_t c = 0; c < g.Wo; ++c) {
            int32_t v;
            std::memcpy(&v, idx + c * 4, 4);
            const int64_t ih = v / g.W, iw = v % g.W;
            if (v != -1 && !(v >= 0 && ih >= lo && ih < lo + hh && iw >= g.col_lo(c) && iw < g.col_hi(c))) return c;
        }
        return -1;  // (unreachable: the vector test found one)
    }
}

// What gather_rows reads: output rows oh0 + i, i = 0 .. kH + kGatherRows - 2.
struct Inputs {
    const int32_t *const *rows;  // int32: the ring rows of indices
    const float *const *grads;   // the ring rows of gradOutput
    const int64_t *ohs;          // bits: the output row, -1 outside [0, Ho)
    const uint8_t *bits;         // bits: the plane's mask, rows bit_row bytes apart
    int64_t bit_row;
};

// 1 in the lanes l whose output column first + l lies in [0, Wo), else 0.
MPOOL_AI __m512i column_ones(int64_t first, int64_t Wo) {
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i col = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(first)));
    return _mm512_maskz_mov_epi32(_mm512_cmplt_epu32_mask(col, _mm512_set1_epi32(static_cast<int32_t>(Wo))), _mm512_set1_epi32(1));
}

// Input rows ih .. ih + R - 1, columns [c0, c0 + 16 B), into sums (rows sw floats apart). in's
// rows: those of output rows ih + pH - (kH - 1) + i, i = 0 .. kH + R - 2; input row r
// takes i in [r, r + kH), kernel row kH - 1 - (i - r) - ascending output rows, and in each kernel
// columns from kW - 1 down: ascending outputs. R * B independent chains of ordered adds (a masked
// add waits about 4 cycles for its chain), and an output row's loads serve every input row it
// reaches.
// sums: row r's column c at sums + r * sw + c. DIRECT (FLOAT gradInput, plainly stored): sums are
// gradInput's rows themselves, of which n exist, rounded through FLOAT16 when fp16 (store_row's
// rounding).
template <bool BITS, int KH, int KW, int R, int B, bool DIRECT>
MPOOL_AI void gather_rows(const Geometry &g, const Inputs &in, int64_t ih, int64_t c0, float *sums, int64_t sw, int64_t n,
                          bool fp16) {
    const int64_t kH = KH ? KH : g.kH, kW = KW ? KW : g.kW;
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i flat[R][B];
    __m512 acc[R][B];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int b = 0; b < B; ++b) {
            if constexpr (!BITS) flat[r][b] = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>((ih + r) * g.W + c0 + 16 * b)));
            acc[r][b] = _mm512_setzero_ps();
        }
    if constexpr (BITS) {
        // Each block's 16 bits of kernel position k read straight from the mask: a broadcast 32-bit
        // word tested against 1 << (bit + l) in lane l (0 in the lanes whose output lies outside
        // [0, Wo): ones[kw][b]) - one compare a position and block, and no decode of the bits
        __m512i ones[KW ? KW : 1][B];
        if constexpr (KW != 0)
#pragma GCC unroll 3
            for (int kw = 0; kw < KW; ++kw)
#pragma GCC unroll 2
                for (int b = 0; b < B; ++b) ones[kw][b] = column_ones(c0 + 16 * b + g.pW - kw, g.Wo);
#pragma GCC unroll 8
        for (int64_t i = 0; i < kH + R - 1; ++i) {
            const int64_t oh = in.ohs[i];
            if (oh < 0) continue;
            const float *grad = in.grads[i] + kLead + c0 + g.pW;
#pragma GCC unroll 3
            for (int64_t kw = kW - 1; kw >= 0; --kw) {
#pragma GCC unroll 2
                for (int b = 0; b < B; ++b) {
                    // bit j + l of each position's row: the word at byte max(j, 0) / 8 (j < 0 only in
                    // lanes left of column 0, which test nothing)
                    const int64_t j = oh * g.Wo + c0 + 16 * b + g.pW - kw, at = std::max<int64_t>(j, 0) >> 3;
                    const __m512i one = KW ? ones[KW ? kw : 0][b] : column_ones(c0 + 16 * b + g.pW - kw, g.Wo);
                    const __m512i bit = _mm512_maskz_sllv_epi32(kAll, one, _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(j - 8 * at))));
                    const __m512 gv = _mm512_loadu_ps(grad + 16 * b - kw);
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        if (i < r || i >= r + kH) continue;
                        int32_t w;
                        std::memcpy(&w, in.bits + ((kH - 1 - (i - r)) * kW + kw) * in.bit_row + at, 4);
                        acc[r][b] = add_ordered(acc[r][b], _mm512_test_epi32_mask(_mm512_set1_epi32(w), bit), gv);
                    }
                }
            }
        }
    } else {
#pragma GCC unroll 8
        for (int64_t i = 0; i < kH + R - 1; ++i) {
            const int32_t *row = in.rows[i] + kLead + c0 + g.pW;
            const float *grad = in.grads[i] + kLead + c0 + g.pW;
#pragma GCC unroll 3
            for (int64_t kw = kW - 1; kw >= 0; --kw) {
#pragma GCC unroll 2
                for (int b = 0; b < B; ++b) {
                    const __m512i v = _mm512_loadu_si512(row + 16 * b - kw);
                    const __m512 gv = _mm512_loadu_ps(grad + 16 * b - kw);
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        if (i < r || i >= r + kH) continue;
                        acc[r][b] = add_ordered(acc[r][b], _mm512_cmpeq_epi32_mask(v, flat[r][b]), gv);
                    }
                }
            }
        }
    }
    if (DIRECT && fp16)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
            for (int b = 0; b < B; ++b) acc[r][b] = acp::avx512::round_fp16(acc[r][b]);
    // the lanes at and past W are left alone: rows are W apart in dense sums and gradInput
    __mmask16 cols[B];
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
#pragma GCC unroll 2
    for (int b = 0; b < B; ++b)
        cols[b] = _mm512_cmplt_epi32_mask(_mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(c0 + 16 * b))), vW);
    // (whole blocks by plain stores: a masked store costs several cycles more)
    const bool whole = c0 + 16 * B <= g.W;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        if (!DIRECT || r < n)
#pragma GCC unroll 2
            for (int b = 0; b < B; ++b) {
                if (whole || b + 1 < B) _mm512_storeu_ps(sums + r * sw + c0 + 16 * b, acc[r][b]);
                else _mm512_mask_storeu_ps(sums + r * sw + c0 + 16 * b, cols[b], acc[r][b]);
            }
}

// One plane. KH / KW: the window when 3 (the loops unrolled), 0: at run time; B: blocks of 16
// columns a step (1 when W <= 16).
template <bool BITS, int KH, int KW, int B>
ACP_AVX512 int64_t gather_plane(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, char *gi,
                                  View4 giv, const Slot &s, LineStream *stream, const uint8_t *next_mask) {
    constexpr int R = kGatherRows;
    // (a local copy: the vector stores may alias anything reached through a pointer)
    const Geometry g = P.g;
    const int64_t kH = KH ? KH : g.kH, es = elem_size(P.dt), span = kH + R - 1;
    const Ring r{reinterpret_cast<int32_t *>(s.ring), s.ring + (span + 1) * P.gather_row, P.gather_row, span};
    // the int32 rows' leads and pads (the rows' entries are rewritten below, never these)
    if constexpr (!BITS) {
        const __m512i pad = _mm512_set1_epi32(-1);
        for (int64_t slot = 0; slot <= span; ++slot) {
            int32_t *row = r.code_row(slot);
            if (slot == span)
                for (int64_t e = 0; e < P.gather_row; e += 16) _mm512_storeu_si512(row + e, pad);
            _mm512_storeu_si512(row, pad);
            for (int64_t e = kLead + (g.Wo + 15) / 16 * 16; e < P.gather_row; e += 16) _mm512_storeu_si512(row + e, pad);
        }
    }
    // gradOutput and int32 rows are fetched about 2 KB ahead of their use, past the plane's end
    // into whatever follows (the next plane, when dense), and gradInput's lines ahead of their
    // plain stores (prefetchw): the hardware prefetchers leave these walks to demand misses, which
    // took two thirds of a 28x28 plane's time from memory
    const int64_t go_row = gov.h * es, idx_row = g.Wo * 4, gi_row = giv.h * es;
    const int64_t ahead = std::max<int64_t>(4, 2048 / std::max<int64_t>(1, std::min(go_row, idx_row)));
    const int64_t ahead_w = std::max<int64_t>(R, 2048 / std::max<int64_t>(1, gi_row));
    // the sums of R input rows: dense gradInput rows go out as one piece
    const bool dense = giv.w == 1 && giv.h == g.W;
    // FLOAT sums stored plainly go straight into gradInput's rows (FLOAT computed as FLOAT16 too)
    const bool direct = P.dt == DType::F32 && giv.w == 1 && !stream;
    const int64_t sw = dense ? g.W : P.gather_sums / R;
    int64_t ready = 0;  // output rows [0, ready) are in the ring (and checked)
    const int32_t *rows[kMaxGatherKh + R];
    const float *grads[kMaxGatherKh + R];
    int64_t ohs[kMaxGatherKh + R];
    const Inputs in{rows, grads, ohs, mask_plane, mask_row_bytes(g.Ho, g.Wo)};
    for (int64_t ih = 0; ih < g.H; ih += R) {
        for (const int64_t last = std::min(ih + R - 1 + g.pH, g.Ho - 1); ready <= last; ++ready) {
            prefetch_next_bits(P, next_mask, ready);
            acp::prefetch_lines(go + (ready + ahead) * go_row, gov.w == 1 ? g.Wo * es : go_row);
            if constexpr (!BITS) acp::prefetch_lines(mask_plane + (ready + ahead) * idx_row, idx_row);
            if (const int64_t bad = ready_row<BITS>(P, go, gov, mask_plane, r, ready % r.slots, ready); bad >= 0)
                return ready * g.Wo + bad;
        }
        const int64_t oh0 = ih + g.pH - (kH - 1);
        for (int64_t i = 0, oh = oh0, slot = ((oh0 % r.slots) + r.slots) % r.slots; i < span;
             ++i, ++oh, slot = slot + 1 == r.slots ? 0 : slot + 1) {
            const bool inside = oh >= 0 && oh < g.Ho;
            rows[i] = r.code_row(inside ? slot : span);
            grads[i] = r.grad_row(inside ? slot : 0);  // (outside: never added)
            ohs[i] = inside ? oh : -1;
        }
        const int64_t n = std::min<int64_t>(R, g.H - ih);
        if (!stream) acp::prefetch_lines_w(gi + (ih + ahead_w) * gi_row, R * gi_row);
        // 32 columns a step, the last 16 or fewer alone
        if (direct) {
            auto *out = reinterpret_cast<float *>(gi + ih * gi_row);
            int64_t c0 = 0;
            for (; c0 + 16 < g.W; c0 += 16 * B) gather_rows<BITS, KH, KW, R, B, true>(g, in, ih, c0, out, giv.h, n, P.fp16);
            if (c0 < g.W) gather_rows<BITS, KH, KW, R, 1, true>(g, in, ih, c0, out, giv.h, n, P.fp16);
            continue;
        }
        int64_t c0 = 0;
        for (; c0 + 16 < g.W; c0 += 16 * B) gather_rows<BITS, KH, KW, R, B, false>(g, in, ih, c0, s.grow, sw, n, false);
        if (c0 < g.W) gather_rows<BITS, KH, KW, R, 1, false>(g, in, ih, c0, s.grow, sw, n, false);
        if (dense) store_row(s.grow, n * g.W, P.dt, P.fp16, gi + ih * gi_row, 1, true, stream);
        else
            for (int64_t t = 0; t < n; ++t) store_row(s.grow + t * sw, g.W, P.dt, P.fp16, gi + (ih + t) * gi_row, giv.w, true, stream);
    }
    return -1;
}

template <bool BITS, int KH, int KW>
ACP_AVX512 int64_t gather_plane_b(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, char *gi,
                                    View4 giv, const Slot &s, LineStream *stream, const uint8_t *next_mask) {
    if (P.g.W <= 16) return gather_plane<BITS, KH, KW, 1>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    return gather_plane<BITS, KH, KW, 2>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
}

}  // namespace

ACP_AVX512 int64_t run_plane_gather(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, char *gi,
                                      View4 giv, const Slot &s, LineStream *stream, const uint8_t *next_mask) {
    const bool k3 = P.g.kH == 3 && P.g.kW == 3;
    if (P.layout == MaskLayout::Bits)
        return k3 ? gather_plane_b<true, 3, 3>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask)
                  : gather_plane_b<true, 0, 0>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    return k3 ? gather_plane_b<false, 3, 3>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask)
              : gather_plane_b<false, 0, 0>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
}
#endif  // ACP_X86

}  // namespace mpool
