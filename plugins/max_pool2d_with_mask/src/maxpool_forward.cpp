// MaxPool2dWithMask kernel (contract in maxpool_forward.hpp). One plane at a time: the input rows
// of an output row's windows are converted to FLOAT once, then each window is scanned in row-major
// order with PyTorch's update rule. Planes are split over slots statically, so results never depend
// on the thread count.
#include "maxpool_forward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <cstring>
#include <limits>

#include "maxpool_rows.hpp"

namespace mpool {

struct ForwardPlan {
    Geometry g{};
    DType dt = DType::F32;
    bool fp16 = false;
    MaskLayout layout = MaskLayout::Int32;
    int64_t slots = 1;
    int64_t row_stride = 16;  // floats per converted input row
    int64_t slot_bytes = 0;
};

namespace {

int64_t round_up16(int64_t x) { return (x + 15) / 16 * 16; }

void run_plane(const ForwardPlan &P, const char *in, View4 inv, char *out, View4 outv, uint8_t *mask_plane,
               float *rows, float *orow, bool avx) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), row_bytes = mask_row_bytes(g.Ho, g.Wo);
    if (P.layout == MaskLayout::Bits) std::memset(mask_plane, 0, static_cast<size_t>(mask_plane_bytes(g)));
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const int64_t h0 = g.row_lo(oh), h1 = g.row_hi(oh), hs = oh * g.sH - g.pH;
        for (int64_t ih = h0; ih < h1; ++ih)
            load_row(in + ih * inv.h * es, inv.w, g.W, P.dt, P.fp16, rows + (ih - h0) * P.row_stride, avx);
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
            const int64_t w0 = g.col_lo(ow), w1 = g.col_hi(ow);
            float best = -std::numeric_limits<float>::infinity();
            int64_t bh = h0, bw = w0;
            for (int64_t ih = h0; ih < h1; ++ih) {
                const float *r = rows + (ih - h0) * P.row_stride;
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
    P->row_stride = round_up16(std::max<int64_t>(g.W, 1));
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
    const int64_t total = g.planes() * mask_plane_bytes(g);
    // Int32: plane p's indices are bytes [p * Ho * Wo * 4, ...); the bytes after the last are zeroed.
    const int64_t stride = P.layout == MaskLayout::Int32 ? g.Ho * g.Wo * 4 : mask_plane_bytes(g);
    const int64_t tail = P.layout == MaskLayout::Int32 ? g.planes() * stride : total;

    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t si = range.begin(); si != range.end(); ++si) {
            auto *rows = reinterpret_cast<float *>(static_cast<char *>(scratch) + si * P.slot_bytes);
            float *orow = rows + std::max<int64_t>(g.kH, 1) * P.row_stride;
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
