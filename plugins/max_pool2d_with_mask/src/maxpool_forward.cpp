// MaxPool2dWithMask kernel (contract in maxpool_forward.hpp). One plane at a time: the input rows
// of an output row's windows are converted to FLOAT once, then each window is scanned in row-major
// order with PyTorch's update rule. Planes are split over slots statically, so results never depend
// on the thread count.
//
// The AVX-512 path takes 16 outputs of a row at once and walks the kernel positions in row-major
// order. The converted rows carry -inf on both sides, so a kernel position in the padding reads -inf,
// which never replaces the running maximum (it is neither greater nor NaN): every lane sees exactly
// its window's elements in the scalar path's order, and both paths give the same bits.
#include "maxpool_forward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "aclnn_cpu/isa.hpp"
#include "maxpool_rows.hpp"

namespace mpool {

struct ForwardPlan : KernelPlanBase {
    int64_t row_stride = 16;  // floats per converted input row: pad_left of -inf, W values, -inf
    int64_t pad_left = 0;     // pW rounded up to 16 (keeps the values 64-byte aligned)
    bool vec_ok = false;      // int32 lane arithmetic is exact (the AVX-512 path may run)
    std::vector<int32_t> col_lo, col_start;  // per ow (zero padded by 16): clipped / unclipped window start
    int64_t slot_bytes = 0;
};

namespace {

int64_t round_up16(int64_t x) { return (x + 15) / 16 * 16; }

#if ACP_X86
// Outputs [ow0, ow0 + 16) of row oh, window rows [h0, h1) converted at rows (values at pad_left).
ACP_AVX512 void row_avx(const ForwardPlan &P, const float *rows, int64_t oh, float *orow, uint8_t *mask_plane,
                              int64_t row_bytes) {
    const Geometry &g = P.g;
    const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh), hs = oh * g.sH - g.pH;
    const __m512i lane_cols = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                 _mm512_set1_epi32(static_cast<int32_t>(g.sW)));
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i neg_inf = _mm512_castps_si512(_mm512_set1_ps(-std::numeric_limits<float>::infinity()));
    for (int64_t ow0 = 0; ow0 < g.Wo; ow0 += 16) {
        const int64_t n = std::min<int64_t>(16, g.Wo - ow0);
        const __mmask16 live = n == 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
        const __m512i lo = _mm512_loadu_si512(P.col_lo.data() + ow0), start = _mm512_loadu_si512(P.col_start.data() + ow0);
        __m512 best = _mm512_castsi512_ps(neg_inf);
        // The running argmax starts at the window's first element (a window of -inf keeps it).
        __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(h0 * g.W)), lo);
        __m512i kpos = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>((h0 - hs) * g.kW)), _mm512_sub_epi32(lo, start));
        for (int64_t ih = h0; ih < h1; ++ih) {
            // element (ih, ow * sW - pW + kw) of lane ow sits at base + (ow - ow0) * sW + kw
            const float *base = rows + (ih - h0) * P.row_stride + P.pad_left - g.pW + ow0 * g.sW;
            const __m512i row_idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(ih * g.W)), start);
            for (int64_t kw = 0; kw < g.kW; ++kw) {
                __m512 v;
                if (g.sW == 1) {
                    v = _mm512_loadu_ps(base + kw);
                } else if (g.sW == 2) {
                    v = _mm512_permutex2var_ps(_mm512_loadu_ps(base + kw), even, _mm512_loadu_ps(base + kw + 16));
                } else {
                    v = _mm512_mask_i32gather_ps(_mm512_castsi512_ps(neg_inf), static_cast<__mmask16>(0xffff), lane_cols,
                                                 base + kw, 4);
                }
                // PyTorch's rule: replace when greater, or when NaN
                const __mmask16 m = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                best = _mm512_mask_mov_ps(best, m, v);
                idx = _mm512_mask_add_epi32(idx, m, row_idx, _mm512_set1_epi32(static_cast<int32_t>(kw)));
                kpos = _mm512_mask_mov_epi32(kpos, m, _mm512_set1_epi32(static_cast<int32_t>((ih - hs) * g.kW + kw)));
            }
        }
        _mm512_storeu_ps(orow + ow0, best);  // orow has 16 floats of slack
        const int64_t j = oh * g.Wo + ow0;
        if (P.layout == MaskLayout::Int32) {
            _mm512_mask_storeu_epi32(mask_plane + j * 4, live, idx);
        } else {  // one bit per output, in the row of its kernel position; 8-byte accesses stay in the row
            for (int64_t k = 0; k < g.kernel_positions(); ++k) {
                const __mmask16 at = _mm512_mask_cmpeq_epi32_mask(live, kpos, _mm512_set1_epi32(static_cast<int32_t>(k)));
                if (!at) continue;
                uint8_t *p = mask_plane + k * row_bytes + (j >> 3);
                uint64_t w;
                std::memcpy(&w, p, 8);
                w |= static_cast<uint64_t>(at) << (j & 7);
                std::memcpy(p, &w, 8);
            }
        }
    }
}
#endif

void run_plane(const ForwardPlan &P, const char *in, View4 inv, char *out, View4 outv, uint8_t *mask_plane,
               float *rows, float *orow, bool avx) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), row_bytes = mask_row_bytes(g.Ho, g.Wo);
    if (P.layout == MaskLayout::Bits) std::memset(mask_plane, 0, static_cast<size_t>(mask_plane_bytes(g)));
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh), hs = oh * g.sH - g.pH;
        for (int64_t ih = h0; ih < h1; ++ih)
            load_row(in + ih * inv.h * es, inv.w, g.W, P.dt, P.fp16, rows + (ih - h0) * P.row_stride + P.pad_left, avx);
#if ACP_X86
        if (avx && P.vec_ok) {
            row_avx(P, rows, oh, orow, mask_plane, row_bytes);
            store_row(orow, g.Wo, P.dt, P.fp16, out + oh * outv.h * es, outv.w, avx, nullptr);
            continue;
        }
#endif
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            const int64_t w0 = g.col_lo(ow), w1 = g.col_hi(ow);
            float best = -std::numeric_limits<float>::infinity();
            int64_t bh = h0, bw = w0;
            for (int64_t ih = h0; ih < h1; ++ih) {
                const float *r = rows + (ih - h0) * P.row_stride + P.pad_left;
                for (int64_t iw = w0; iw < w1; ++iw) {
                    const float v = r[iw];
                    if (v > best || v != v) {  // PyTorch: greater, or NaN
                        best = v;
                        bh = ih;
                        bw = iw;
                    }
                }
            }
            orow[ow] = best;
            const int64_t j = oh * g.Wo + ow;
            if (P.layout == MaskLayout::Int32) {
                const auto flat = static_cast<int32_t>(bh * g.W + bw);
                std::memcpy(mask_plane + j * 4, &flat, 4);
            } else {
                const int64_t k = (bh - hs) * g.kW + (bw - (ow * g.sW - g.pW));
                mask_plane[k * row_bytes + (j >> 3)] |= static_cast<uint8_t>(1u << (j & 7));
            }
        }
        store_row(orow, g.Wo, P.dt, P.fp16, out + oh * outv.h * es, outv.w, avx, nullptr);
    }
}

}  // namespace

ForwardKernel::ForwardKernel(const Geometry &g, DType dt, bool fp16_compute, MaskLayout layout, int64_t slots) {
    auto P = std::make_shared<ForwardPlan>();
    P->g = g;
    P->dt = dt;
    P->fp16 = fp16_compute && dt == DType::F32;
    P->layout = layout;
    P->slots = std::max<int64_t>(1, std::min(slots, std::max<int64_t>(g.planes(), 1)));
    // The vector path reads up to column (round_up16(Wo) + 1) * sW + kW of a row (sW = 2 loads two
    // vectors), counted from the window start of output 0. Where that reaches far past the row (a
    // stride much wider than the row: the scratch would grow with the stride, not the data) the
    // scalar path runs instead, which reads only the row.
    P->pad_left = round_up16(g.pW);
    const int64_t row = round_up16(P->pad_left + std::max<int64_t>(g.W, 1) + 16);
    const int64_t sW = std::min<int64_t>(std::max<int64_t>(g.sW, 1), int64_t{1} << 40);  // (no overflow below)
    const int64_t reach = P->pad_left - g.pW + (round_up16(g.Wo) + 1) * sW + g.kW + 16;
    const int64_t lim = int64_t{1} << 30;
    P->vec_ok = g.H * g.W < lim && g.kernel_positions() < lim && g.Wo < lim && reach <= 4 * row + 1024;
    P->row_stride = P->vec_ok ? round_up16(std::max(row, reach)) : row;
    if (P->vec_ok) {
        P->col_lo.assign(static_cast<size_t>(round_up16(g.Wo)), 0);
        P->col_start.assign(static_cast<size_t>(round_up16(g.Wo)), 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            P->col_lo[ow] = static_cast<int32_t>(g.col_lo(ow));
            P->col_start[ow] = static_cast<int32_t>(ow * g.sW - g.pW);
        }
    }
    P->slot_bytes = (std::max<int64_t>(g.kH, 1) * P->row_stride + round_up16(g.Wo) + 16) * 4;
    plan_ = std::move(P);
}

uint64_t ForwardKernel::scratch_bytes() const { return static_cast<uint64_t>(plan_->slots * plan_->slot_bytes); }

void ForwardKernel::run(const void *self, View4 in, void *out, View4 outv, uint8_t *mask, void *scratch) const {
    const ForwardPlan &P = *plan_;
    const Geometry &g = P.g;
    if (g.planes() <= 0 || g.Ho <= 0 || g.Wo <= 0) return;
    const bool avx = use_avx512(isa_);
    const int64_t es = elem_size(P.dt);
    // Int32: plane p's indices are bytes [p * Ho * Wo * 4, ...); the bytes after the last are zeroed
    // up to the mask's size, where there is a mask.
    const int64_t stride = P.layout == MaskLayout::Int32 ? g.Ho * g.Wo * 4 : mask_plane_bytes(g);
    const int64_t tail = P.layout == MaskLayout::Int32 ? g.planes() * stride : g.planes() * mask_plane_bytes(g);
    const int64_t total = mask_padding_ ? std::max(tail, g.planes() * mask_plane_bytes(g)) : tail;

    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t si = range.begin(); si != range.end(); ++si) {
            auto *rows = reinterpret_cast<float *>(static_cast<char *>(scratch) + si * P.slot_bytes);
            float *orow = rows + std::max<int64_t>(g.kH, 1) * P.row_stride;
            // -inf around the values of every row; load_row fills [pad_left, pad_left + W) only
            std::fill(rows, orow, -std::numeric_limits<float>::infinity());
            const int64_t p0 = si * g.planes() / P.slots, p1 = (si + 1) * g.planes() / P.slots;
            for (int64_t p = p0; p < p1; ++p) {
                const int64_t n = p / g.C, c = p % g.C;
                run_plane(P, static_cast<const char *>(self) + (n * in.n + c * in.c) * es, in,
                          static_cast<char *>(out) + (n * outv.n + c * outv.c) * es, outv, mask + p * stride, rows,
                          orow, avx);
            }
            const int64_t t0 = tail + si * (total - tail) / P.slots, t1 = tail + (si + 1) * (total - tail) / P.slots;
            if (t1 > t0) std::memset(mask + t0, 0, static_cast<size_t>(t1 - t0));
        }
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, P.slots, 1), body, tbb::static_partitioner());
}

}  // namespace mpool
