// MaxPool2dWithMaskBackward, the small-plane path (contract of run_plane_small and
// run_planes_small_direct in maxpool_backward_paths.hpp; the kernel's overview in maxpool_backward.cpp).
//
// ---- small-plane path: int32 masks, planes of at most kSmallPlane elements ----
//
// A small plane spends most of the row-at-a-time walk on the walk itself: per output row the
// window bounds, a call into the decode, the store of the rows just finished - and a store that
// reads back ring entries the scalar additions have just written waits for them. 32x832x7x7 k3 s1
// p1 took ~80 ns a plane on Zen 5 (2 threads). Here the ring holds the whole plane:
// one decode of all its outputs against the plan's per-output window tables, one addition loop in
// ascending output order, one store of the plane. The same sums in the same order: the same bits.
// Dense FLOAT planes (plainly stored) are summed in gradInput itself (run_planes_small_direct):
// zeroed, then added to - no ring to read back and clear - two planes at a time. Measured on Zen 5, 1 thread, 832 planes
// of 7x7 k3 s1 p1 in L2: the row walk 155 ns a plane, the ring 55, in place 45 (PyTorch 31; the
// additions, one dependent read-modify-write chain wherever neighbours share a maximum, are 70 %).
// Tried and dropped: at stride 1, blocks of 16 elements pulling their sums (per kernel position a
// masked compare of the shifted mask words and a masked add): 50-53 ns, the loads bound it.

#include "maxpool_backward_paths.hpp"

namespace mpool {

#if ACP_X86
namespace {

// The window test of row_int32_avx_t for every output of a plane, each lane with its own window
// from the plan's tables (window_test). Returns the first output whose index is out of its window,
// or -1; with pos, the positions (the plane's flat index; skipped outputs: skip_to) for the additions.
// KH: kH when 2 or 3 (the subtractions unrolled), 0: any.
template <int KH>
MPOOL_AI int64_t check_plane_int32_t(const BackwardPlan &P, const uint8_t *idx, int32_t *pos, int32_t skip_to) {
    const Geometry &g = P.g;
    const int64_t outs = g.Ho * g.Wo;
    const int32_t *base = P.win_base.data(), *limit = P.win_limit.data(), *wid = P.win_wid.data();
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i dummy = _mm512_set1_epi32(skip_to);
    for (int64_t j = 0; j < outs; j += 16) {
        const __mmask16 m = tail16(outs - j);
        const __m512i v = _mm512_maskz_loadu_epi32(m, idx + j * 4);
        __mmask16 bad;
        const __mmask16 valid = window_test<KH>(v, m, _mm512_loadu_si512(base + j), _mm512_loadu_si512(limit + j),
                                                _mm512_loadu_si512(wid + j), g.kH, vW, &bad);
        if (bad) return j + __builtin_ctz(bad);
        if (pos) _mm512_storeu_si512(pos + j, _mm512_mask_blend_epi32(valid, dummy, v));
    }
    return -1;
}

MPOOL_AI int64_t check_plane_int32(const BackwardPlan &P, const uint8_t *idx, int32_t *pos, int32_t skip_to) {
    switch (P.g.kH) {
        case 3: return check_plane_int32_t<3>(P, idx, pos, skip_to);
        case 2: return check_plane_int32_t<2>(P, idx, pos, skip_to);
        default: return check_plane_int32_t<0>(P, idx, pos, skip_to);
    }
}

// The plane's gradOutput as FLOAT: in place when it is a dense FLOAT plane, else converted into dst
// (room for the plane).
const float *grad_plane(const BackwardPlan &P, const char *go, View4 gov, float *dst) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt);
    const bool dense = gov.w == 1 && gov.h == g.Wo;
    if (dense && P.dt == DType::F32 && !P.fp16) return reinterpret_cast<const float *>(go);
    if (dense) load_row(go, 1, g.Ho * g.Wo, P.dt, P.fp16, dst, true);  // (one call: small planes)
    else
        for (int64_t oh = 0; oh < g.Ho; ++oh) load_row(go + oh * gov.h * es, gov.w, g.Wo, P.dt, P.fp16, dst + oh * g.Wo, true);
    return dst;
}

// The FLOAT plane in the ring to gradInput (dt), in one piece when the plane is dense; the ring is
// left all +0.
void store_plane(const BackwardPlan &P, float *plane, char *gi, View4 giv, LineStream *stream) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), pieces = giv.w == 1 && giv.h == g.W ? 1 : g.H, n = pieces == 1 ? g.H * g.W : g.W;
    for (int64_t r = 0; r < pieces; ++r)
        store_row_clear(plane + r * g.W, n, P.dt, P.fp16, gi + r * giv.h * es, giv.w, true, stream);
}
}  // namespace

ACP_AVX512 int64_t run_plane_small(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *idx, char *gi,
                                     View4 giv, const Slot &s, LineStream *stream) {
    const int64_t bad = check_plane_int32(P, idx, s.pos, static_cast<int32_t>(P.ring_floats - 16));
    if (bad >= 0) return bad;
    const float *grad = grad_plane(P, go, gov, s.grow);
    add_lanes(s.ring, s.pos, grad, P.g.Ho * P.g.Wo);
    store_plane(P, s.ring, gi, giv, stream);
    return -1;
}

// Dense FLOAT gradOutput and gradInput planes, plain stores: the sums in gradInput itself, two
// planes a and b at once (b: nullptr go for none) - their chains of additions are independent, so
// the core overlaps them. Returns -1, or the first bad output of plane *which (0: a, 1: b; a is
// then complete).
ACP_AVX512 int64_t run_planes_small_direct(const BackwardPlan &P, const char *go_a, const uint8_t *idx_a, char *gi_a,
                                             const char *go_b, const uint8_t *idx_b, char *gi_b, const Slot &s,
                                             int *which) {
    const int64_t ins = P.g.H * P.g.W, outs = P.g.Ho * P.g.Wo;
    int32_t *pos_a = s.pos, *pos_b = s.pos + P.pair_stride;
    *which = 0;
    if (const int64_t bad = check_plane_int32(P, idx_a, pos_a, -1); bad >= 0) return bad;
    int64_t bad_b = -1;
    if (go_b) bad_b = check_plane_int32(P, idx_b, pos_b, -1);
    const bool two = go_b && bad_b < 0;
    float *out_a = reinterpret_cast<float *>(gi_a), *out_b = reinterpret_cast<float *>(gi_b);
    const auto *grad_a = reinterpret_cast<const float *>(go_a), *grad_b = reinterpret_cast<const float *>(go_b);
    for (int64_t i = 0; i < ins; i += 16) {
        _mm512_mask_storeu_ps(out_a + i, tail16(ins - i), _mm512_setzero_ps());
        if (two) _mm512_mask_storeu_ps(out_b + i, tail16(ins - i), _mm512_setzero_ps());
    }
    if (two) {
#pragma GCC unroll 2
        for (int64_t l = 0; l < outs; ++l) {
            if (const int32_t q = pos_a[l]; q >= 0) out_a[q] = add_ordered(out_a[q], grad_a[l]);
            if (const int32_t q = pos_b[l]; q >= 0) out_b[q] = add_ordered(out_b[q], grad_b[l]);
        }
        return -1;
    }
#pragma GCC unroll 4
    for (int64_t l = 0; l < outs; ++l)
        if (const int32_t q = pos_a[l]; q >= 0) out_a[q] = add_ordered(out_a[q], grad_a[l]);
    *which = 1;
    return bad_b;
}
#endif  // ACP_X86

}  // namespace mpool
