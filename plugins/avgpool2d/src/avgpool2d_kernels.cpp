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
// register. At column stride 2 with kW 2 or 3 and pW 0 or 1 (ResNet's and GoogLeNet's pools) stage A
// needs no tables: each column pair takes the same one or two products (BackwardPlan::parity,
// bw_parity_row), the same sums in the same order. gradInput rows are independent, so work items are (plane, row block) pairs run with a
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

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "avgpool2d_rows.hpp"
#include "avgpool2d_tables.hpp"

namespace avgpool2d {
namespace {

// ---------------------------------------------------------------------------------------------
// Path selection
// ---------------------------------------------------------------------------------------------
bool want_avx(Isa isa) { return isa != Isa::Scalar && detail::cpu_has_avx512(); }

bool cpu_has_avx512bf16() {
#if ACP_X86
    static const bool has = __builtin_cpu_supports("avx512bf16");
    return has;
#else
    return false;
#endif
}

Ops select_ops(Isa isa, DType dt) {
    Ops o;
    if (want_avx(isa)) use_avx512_rows(o, dt, dt == DType::BF16 && isa != Isa::Avx512NoBf16 && cpu_has_avx512bf16());
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
void detail::round_floats(const float* src, uint16_t* dst, int64_t n, DType dt, Isa isa) {
    select_ops(isa, dt).round(src, dst, n, dt);
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------
BackwardKernel::BackwardKernel(const Geometry& g, DType dt, int32_t precision) {
    auto P = std::make_shared<BackwardPlan>();
    build_backward_plan(*P, g, dt, precision);
    plan_ = std::move(P);
}

bool BackwardKernel::uses_avx512() const { return want_avx(isa_); }

bool BackwardKernel::uses_parity_path() const {
    const BackwardPlan& B = *plan_;
    return parity_ && B.parity != Parity::None && want_avx(isa_) && B.vec_w && !B.direct;
}

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
    const Parity parity = parity_ ? B.parity : Parity::None;

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
                    fused(BwRowsArgs{&B, &s, goP, go.h, giP, gi.h, h0, h1, scr.ring, scr.P, scr.P1, stream, parity});
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
        if (stream) store_fence();  // order the non-temporal stores before the task completes
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, items), body, tbb::static_partitioner());
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------
ForwardKernel::ForwardKernel(const Geometry& g, DType dt, int32_t precision) {
    auto P = std::make_shared<ForwardPlan>();
    build_forward_plan(*P, g, dt, precision);
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
