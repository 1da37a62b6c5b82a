// Phases A and C of the backward kernel (see grid_backward.cpp), dispatching between the AVX-512
// and scalar forms, and the loops over blocks of input pixels they run in.
#ifndef GRID_SAMPLER2D_GRID_BW_PHASES_HPP_
#define GRID_SAMPLER2D_GRID_BW_PHASES_HPP_

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>

#include "grid_bw_layout_avx.hpp"
#include "grid_bw_plan.hpp"
#include "grid_rows.hpp"

namespace gsamp {

// ---- phase A: input (C, H*W) -> (H*W, C) in T, pixels [hw0, hw0 + len) of image n ----
template <class T>
void transpose_input_block(const BackwardPlan &P, const void *input, T *inT, int64_t n, int64_t hw0, int64_t len,
                           int64_t c_lo, int64_t c_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels();
#if ACP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx) return transpose_input_avx(g, P.e.input, input, inT, n, hw0, len, c_lo, c_hi);
    }
#endif
    alignas(64) T row[kRowBlock];
    const int64_t c_pad = c_hi == g.C ? c_lo + (P.Cp - g.C) + (c_hi - c_lo) : c_hi;  // the last block's zero lanes
    for (int64_t c = c_lo; c < c_pad; ++c) {
        const int64_t c0 = c / kChanBlock * kChanBlock, ld = lane_width(std::min(kChanBlock, g.C - c0));
        T *dst = inT + n * HW * P.Cp + c0 * HW + hw0 * ld + (c - c0);
        if (c < g.C) load_row(at(input, (n * g.C + c) * HW + hw0, P.e.input), P.e.input, len, row, avx);
        for (int64_t i = 0; i < len; ++i) dst[i * ld] = c < g.C ? row[i] : T(0);
    }
}

// ---- phase C: inputGrad[n] = sum_k acc[n][k], (H*W, C) -> (C, H*W), rounded once; pixels
// [hw0, hw0 + len) of image n. Both paths add in ascending k: the same bits. ----
template <class T>
void reduce_block(const BackwardPlan &P, const T *acc, void *input_grad, int64_t n, int64_t hw0, int64_t len, int64_t c_lo,
                  int64_t c_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), K = P.K, C = g.C;
#if ACP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx) return reduce_accumulators_avx(g, K, P.e.input_grad, acc, input_grad, n, hw0, len, c_lo, c_hi);
    }
#endif
    alignas(64) T row[kRowBlock];
    for (int64_t c = c_lo; c < c_hi; ++c) {
        const int64_t c0 = c / kChanBlock * kChanBlock, ld = lane_width(std::min(kChanBlock, C - c0));
        const T *src = acc + n * K * HW * P.Cp + c0 * HW + hw0 * ld + (c - c0);
        for (int64_t i = 0; i < len; ++i) {
            T s = src[i * ld];
            for (int64_t k = 1; k < K; ++k) s += src[k * HW * P.Cp + i * ld];
            row[i] = s;
        }
        store_row(row, len, P.e.input_grad, at(input_grad, (n * C + c) * HW + hw0, P.e.input_grad), avx);
    }
}

// Blocks of kRowBlock input pixels of every image, in parallel (the K > 1 path).
template <class F>
void for_all_blocks(const Geometry &g, F &&f) {
    const int64_t HW = g.in_pixels(), nb = (HW + kRowBlock - 1) / kRowBlock;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * nb), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t b = r.begin(); b < r.end(); ++b) {
            const int64_t hw0 = (b % nb) * kRowBlock;
            f(b / nb, hw0, std::min(kRowBlock, HW - hw0));
        }
    });
}

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_PHASES_HPP_
