// GridSampler2DBackward kernel (contract in grid_backward.hpp). Three phases in one node:
//   A  input -> channels-last FLOAT/double copy per image (only for gridGrad, and only when C > 1
//      or the element type differs from the compute type);
//   B  tasks (n, k): taps of 16 output pixels at a time (the next tile's computed and prefetched
//      while the current one runs), then per channel block the tile of gradOutput (transposed on
//      the fly) scatters into the task's accumulator and reads the input for gridGrad; the last
//      block stores gridGrad;
//   C  inputGrad[n] = sum over k of the accumulators in ascending k, back to (C, H, W), rounded once.
// With one task per image (K == 1) the phases run per image and channel block, and within a block
// per band of output pixels (stream_image): A and C only for the input rows a band can touch, so
// that with a smooth grid the scratch rows are used while in cache. When C == 1, K == 1 and
// inputGrad is already in the compute type, B accumulates straight into it and C is skipped. The AVX-512 and scalar paths share the layout
// and the partition; they differ only in the order of the additions inside a sample.
//
// This file holds phase B (run_task) and the driver; the rest, one job per file:
//   grid_bw_plan.hpp          work split constants, channels-last layout, the plan struct
//   grid_bw_phases.hpp        phases A and C (scalar / AVX-512 dispatch)
//   grid_bw_bands.hpp         the input rows a band of output pixels can touch (stream_image)
//   grid_bw_layout_avx.hpp    AVX-512 transposes of phases A, C and the gradOutput tile
//   grid_bw_views.hpp         the tap views the channel loops run over
//   grid_bw_sample.hpp        one sample at a time (nearest, reflection, DOUBLE, no AVX-512)
//   grid_bw_channels_avx.hpp  AVX-512 channel work of a tile, any tap view
//   grid_bw_bilinear_avx.hpp  bilinear taps of 16 samples; the narrow-block bilinear tile
//   grid_bw_bicubic_avx.hpp   bicubic taps of 16 samples and of one sample; the narrow-block bicubic tile
//   grid_coords_avx.hpp, grid_simd.hpp  vector coordinate math and AVX-512 building blocks
#include "grid_backward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "grid_bw_bands.hpp"
#include "grid_bw_bicubic_avx.hpp"
#include "grid_bw_bilinear_avx.hpp"
#include "grid_bw_channels_avx.hpp"
#include "grid_bw_layout_avx.hpp"
#include "grid_bw_phases.hpp"
#include "grid_bw_plan.hpp"
#include "grid_bw_sample.hpp"
#include "grid_bw_views.hpp"
#include "grid_rows.hpp"
#include "grid_simd.hpp"

namespace gsamp {
namespace {

// ---- phase B: one task, output pixels [pb, pe) of image n ----
// Channel blocks outermost: block b's channels-last input and accumulator (H*W x 16 values) stay in
// the core's L2 cache while every pixel of the task visits them, however random the grid; the taps
// are recomputed per block (cheaper than the cache misses). gsum (2 per pixel) carries gridGrad's
// partial sums from block to block, in ascending block order.
template <class T>
void run_task(const BackwardPlan &P, const BackwardOperands &ops, const T *inT, T *acc, T *gsum, int64_t n, int64_t pb,
              int64_t pe, int64_t b_lo, int64_t b_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t C = g.C, HW = g.in_pixels(), Pn = g.out_pixels();
    alignas(64) T gridv[2 * kTile], ggv[2 * kTile], row[kTile];
    alignas(64) T tile[kTile * kChanBlock];
    // Two tiles of taps: the next tile's are computed, and their cache lines prefetched, before the
    // current tile runs, so the scattered accesses overlap instead of stalling one by one.
    Taps<T> taps[2][kTile];
    TileTaps<4> tiles[2];      // the vector paths' taps: bilinear
    TileTaps<16> tiles16[2];   // bicubic
    BicubicRows rows16[2];     // bicubic, narrow blocks
    const bool tiled = std::is_same_v<T, float> && P.bilinear_vec && avx;
    const bool tiled16 = std::is_same_v<T, float> && P.bicubic_vec && avx;
    T mx[2][kTile], my[2][kTile];
    const bool zero_gg = !P.need_in;  // nearest: PyTorch's grid gradient is 0
    const int64_t nblk = P.need_go ? (C + kChanBlock - 1) / kChanBlock : 1;
    for (int64_t b = b_lo; b < std::min(b_hi, nblk); ++b) {
        const int64_t c0 = b * kChanBlock, w = std::min(kChanBlock, C - c0), ld = lane_width(w);
        const T *in_b = P.need_in ? inT + c0 * HW : nullptr;
        T *acc_b = P.want_ig ? acc + c0 * HW : nullptr;
        const bool last = b + 1 == nblk;
        auto prepare = [&](int64_t p0, int slot) {
            const int64_t np = std::min(kTile, pe - p0);
            const T *gv = gridv;
            if (P.e.grid == elem_of<T>()) gv = static_cast<const T *>(ops.grid) + (n * Pn + p0) * 2;  // in place
            else load_row(at(ops.grid, (n * Pn + p0) * 2, P.e.grid), P.e.grid, 2 * np, gridv, avx);
#if ACP_X86
            if constexpr (sizeof(T) == 4) {
                if (tiled) {
                    bilinear_tile_avx(g, gv, np, tiles[slot], mx[slot], my[slot]);
                    for (int t = 0; t < 4; t += 2) prefetch_tap_lines(tiles[slot].off[t], np, ld, acc_b, in_b);  // two rows
                    return;
                }
                if (tiled16) {
                    bicubic_tile_avx(g, gv, np, tiles16[slot], mx[slot], my[slot], ld == 4 ? &rows16[slot] : nullptr);
                    for (int t = 0; t < 16; t += 3) prefetch_tap_lines(tiles16[slot].off[t], np, ld, acc_b, in_b);
                    return;
                }
            }
#endif
            for (int64_t i = 0; i < np; ++i) {
                Taps<T> &tp = taps[slot][i];
                make_taps(g, gv[2 * i], gv[2 * i + 1], tp, &mx[slot][i], &my[slot][i], avx);
                for (int t = 0; t < tp.n; ++t) {
                    const int64_t o = tp.off[t] * ld;
                    if (acc_b) __builtin_prefetch(acc_b + o, 1, 3);
                    if (in_b) __builtin_prefetch(in_b + o, 0, 3);
                }
            }
        };
        prepare(pb, 0);
        for (int64_t p0 = pb, slot = 0; p0 < pe; p0 += kTile, slot ^= 1) {
            const int64_t np = std::min(kTile, pe - p0);
            if (p0 + kTile < pe) prepare(p0 + kTile, static_cast<int>(slot ^ 1));
            T *gs = P.gsum_tile ? gsum : gsum + 2 * (p0 - pb);
            bool gg_done = false;  // gridGrad already in its output (or in ggv)
            if (P.need_go) {
                bool done = false, done_channels = false;
                int64_t tile_ld = kChanBlock;
#if ACP_X86
                if constexpr (sizeof(T) == 4) {
                    if (avx) {
                        tile_ld = ld == 4 ? 4 : kChanBlock;
                        load_go_tile_avx(ops.grad_output, P.e.grad_output, (n * C + c0) * Pn + p0, Pn, np, w, tile, tile_ld);
                        done = true;
                    }
                }
#endif
                for (int64_t c = 0; c < w && !done; ++c) {
                    load_row(at(ops.grad_output, ((n * C + c0 + c) * Pn + p0), P.e.grad_output), P.e.grad_output, np, row,
                             avx);
                    for (int64_t i = 0; i < np; ++i) tile[i * kChanBlock + c] = row[i];
                }
#if ACP_X86
                if constexpr (sizeof(T) == 4) {
                    if (avx && ld > 1) {
                        float *gsp = P.need_in ? gs : nullptr;
                        float *out = nullptr;  // the last block writes gridGrad itself
                        if (P.need_in && P.want_gg && last) {
                            out = P.e.grid_grad == Elem::F32 ? static_cast<float *>(ops.grid_grad) + (n * Pn + p0) * 2
                                                             : reinterpret_cast<float *>(ggv);
                            gg_done = true;
                        }
                        const float *fmx = reinterpret_cast<const float *>(mx[slot]), *fmy = reinterpret_cast<const float *>(my[slot]);
                        if (tiled && ld == 4)
                            bilinear_tile4_avx(tiles[slot], np, tile, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else if (tiled)
                            tile_channels_avx([&](int64_t i) { return TileView<4>{tiles[slot], i}; }, np, tile, tile_ld, w, ld,
                                              in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else if (tiled16 && ld == 4)
                            bicubic_tile4_avx(tiles16[slot], rows16[slot], np, tile, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else if (tiled16)
                            tile_channels_avx([&](int64_t i) { return TileView<16>{tiles16[slot], i}; }, np, tile, tile_ld, w,
                                              ld, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else
                            tile_channels_avx([&](int64_t i) { return CompactView<float>{taps[slot][i]}; }, np, tile, tile_ld,
                                              w, ld, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        done_channels = true;
                    }
                }
#endif
                for (int64_t i = 0; i < np && !done_channels; ++i) {
                    T sx = 0, sy = 0;
                    if (tiled) channels(TileView<4>{tiles[slot], i}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    else if (tiled16) channels(TileView<16>{tiles16[slot], i}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    else channels(CompactView<T>{taps[slot][i]}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    if (P.need_in) {
                        gs[2 * i] = b == 0 ? sx : gs[2 * i] + sx;
                        gs[2 * i + 1] = b == 0 ? sy : gs[2 * i + 1] + sy;
                    }
                }
            }
            if (P.want_gg && last) {
                const bool direct = P.e.grid_grad == elem_of<T>();
                T *out = direct ? static_cast<T *>(ops.grid_grad) + (n * Pn + p0) * 2 : ggv;
                for (int64_t i = 0; i < np && !gg_done; ++i) {
                    out[2 * i] = zero_gg ? T(0) : mx[slot][i] * gs[2 * i];
                    out[2 * i + 1] = zero_gg ? T(0) : my[slot][i] * gs[2 * i + 1];
                }
                if (!direct) store_row(ggv, 2 * np, P.e.grid_grad, at(ops.grid_grad, (n * Pn + p0) * 2, P.e.grid_grad), avx);
            }
        }
    }
}

// One task per image (K == 1): one channel block at a time, its output pixels in bands
// (grid_bw_bands.hpp). Before a band, the input rows it can touch are transposed (phase A) and
// zeroed in the accumulator unless done already; after it, the rows no later band can touch are
// reduced (phase C); rows no band touches are zeroed then. Phase B runs the pixels in ascending
// order as one task would, and phases A and C are per element: the bits are those of whole-image
// passes, whatever the bands.
template <class T>
void stream_image(const BackwardPlan &P, const BackwardOperands &ops, const T *inT, T *inT_buf, T *acc, T *gsum0, int64_t n,
                  bool avx) {
    const Geometry &g = P.g;
    const int64_t C = g.C, H = g.H, W = g.W, HW = g.in_pixels(), Pn = g.out_pixels(), nb = P.nband;
    const bool transpose = P.need_in && !P.in_direct, reduce = P.want_ig && !P.acc_direct;
    char *area = static_cast<char *>(ops.scratch) + P.band_offset + n * P.band_stride;
    RowSpan *span = reinterpret_cast<RowSpan *>(area);             // nb bands
    RowSpan *after = span + nb;                                    // after[j]: hull of bands j .. nb-1
    uint8_t *state = reinterpret_cast<uint8_t *>(after + nb + 1);  // per row: kIn | kZero | kDone
    constexpr uint8_t kIn = 1, kZero = 2, kDone = 4;
    for (int64_t j = 0; j < nb; ++j)
        span[j] = band_rows<T>(P, ops.grid, n, j * P.band_px, std::min(Pn, (j + 1) * P.band_px), avx);
    after[nb] = RowSpan{static_cast<int32_t>(H), -1};
    for (int64_t j = nb - 1; j >= 0; --j)
        after[j] = RowSpan{std::min(span[j].lo, after[j + 1].lo), std::max(span[j].hi, after[j + 1].hi)};
    // Runs [r0, r1) of rows in [lo, hi] whose state lacks `bit` and that satisfy `where`: f(r0, r1), then the bit is set.
    auto runs = [&](int64_t lo, int64_t hi, uint8_t bit, auto &&where, auto &&f) {
        for (int64_t r = lo; r <= hi;) {
            if ((state[r] & bit) || !where(r)) {
                ++r;
                continue;
            }
            int64_t e = r + 1;
            while (e <= hi && !(state[e] & bit) && where(e)) ++e;
            f(r, e);
            for (int64_t q = r; q < e; ++q) state[q] = static_cast<uint8_t>(state[q] | bit);
            r = e;
        }
    };
    auto any = [](int64_t) { return true; };
    auto pieces = [&](int64_t r0, int64_t r1, auto &&f) {  // rows [r0, r1) in kRowBlock-pixel pieces
        for (int64_t hw0 = r0 * W; hw0 < r1 * W; hw0 += kRowBlock) f(hw0, std::min(kRowBlock, r1 * W - hw0));
    };
    const int64_t nblk = P.need_go ? (C + kChanBlock - 1) / kChanBlock : 1;
    for (int64_t b = 0; b < nblk; ++b) {
        const int64_t c_lo = b * kChanBlock, c_hi = std::min(C, c_lo + kChanBlock), ld = lane_width(c_hi - c_lo);
        T *acc_n = P.want_ig ? acc + n * HW * P.Cp : nullptr;
        std::memset(state, 0, static_cast<size_t>(H));
        auto zero_rows = [&](int64_t r0, int64_t r1) {
            std::memset(acc_n + c_lo * HW + r0 * W * ld, 0, static_cast<size_t>((r1 - r0) * W * ld) * sizeof(T));
        };
        for (int64_t j = 0; j < nb; ++j) {
            const int64_t p0 = j * P.band_px, p1 = std::min(Pn, p0 + P.band_px);
            if (transpose)
                runs(span[j].lo, span[j].hi, kIn, any, [&](int64_t r0, int64_t r1) {
                    pieces(r0, r1, [&](int64_t hw0, int64_t len) {
                        transpose_input_block<T>(P, ops.input, inT_buf, n, hw0, len, c_lo, c_hi, avx);
                    });
                });
            if (acc_n) runs(span[j].lo, span[j].hi, kZero, any, zero_rows);
            run_task<T>(P, ops, P.need_in ? inT + n * HW * P.Cp : nullptr, acc_n, gsum0 + n * P.gsum_stride + (P.gsum_tile ? 0 : 2 * p0), n, p0, p1,
                        b, b + 1, avx);
            if (!acc_n) continue;
            const RowSpan later = after[j + 1];
            auto free_row = [&](int64_t r) { return r < later.lo || r > later.hi; };
            runs(0, H - 1, kDone, free_row, [&](int64_t r0, int64_t r1) {
                runs(r0, r1 - 1, kZero, any, zero_rows);  // rows no band touched
                if (reduce)
                    pieces(r0, r1, [&](int64_t hw0, int64_t len) {
                        reduce_block<T>(P, acc, ops.input_grad, n, hw0, len, c_lo, c_hi, avx);
                    });
            });
        }
    }
}

template <class T>
void run_typed(const BackwardPlan &P, const BackwardOperands &ops, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), Pn = g.out_pixels(), K = P.K, C = g.C;
    const bool transpose = P.need_in && !P.in_direct, reduce = P.want_ig && !P.acc_direct;
    const T *inT = P.in_direct ? static_cast<const T *>(ops.input) : reinterpret_cast<const T *>(ops.scratch);
    T *inT_buf = reinterpret_cast<T *>(ops.scratch);
    T *acc = P.acc_direct ? static_cast<T *>(ops.input_grad)
                          : reinterpret_cast<T *>(static_cast<char *>(ops.scratch) + P.acc_offset);
    T *gsum0 = reinterpret_cast<T *>(static_cast<char *>(ops.scratch) + P.gsum_offset);
    // Task t = (n, k), channel blocks [b_lo, b_hi) (channels [c_lo, c_hi)).
    auto task = [&](int64_t t, int64_t b_lo, int64_t b_hi) {
        const int64_t n = t / K, k = t % K, c_lo = b_lo * kChanBlock, c_hi = std::min(C, b_hi * kChanBlock);
        T *acc_t = nullptr;
        if (P.want_ig) {
            acc_t = acc + t * HW * P.Cp;
            const int64_t c_end = c_hi == C ? P.Cp : c_hi;  // with the last block's pad lanes
            std::memset(acc_t + c_lo * HW, 0, static_cast<size_t>(HW * (c_end - c_lo)) * sizeof(T));
        }
        run_task<T>(P, ops, P.need_in ? inT + n * HW * P.Cp : nullptr, acc_t, gsum0 + t * P.gsum_stride, n, k * Pn / K,
                    (k + 1) * Pn / K, b_lo, b_hi, avx);
    };
    const int64_t nblk = (C + kChanBlock - 1) / kChanBlock;
    if (K == 1) {
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
            for (int64_t n = r.begin(); n < r.end(); ++n) stream_image<T>(P, ops, inT, inT_buf, acc, gsum0, n, avx);
        });
        return;
    }
    if (transpose)
        for_all_blocks(g, [&](int64_t n, int64_t hw0, int64_t len) {
            transpose_input_block<T>(P, ops.input, inT_buf, n, hw0, len, 0, C, avx);
        });
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * K, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t t = r.begin(); t < r.end(); ++t) task(t, 0, nblk);
    });
    if (reduce)
        for_all_blocks(g, [&](int64_t n, int64_t hw0, int64_t len) {
            reduce_block<T>(P, acc, ops.input_grad, n, hw0, len, 0, C, avx);
        });
}

}  // namespace

int64_t BackwardKernel::tasks_per_image(const Geometry &g) {
    if (g.N >= kMinTasks) return 1;
    const int64_t want = (kMinTasks + g.N - 1) / std::max<int64_t>(g.N, 1);
    const int64_t cap = std::max<int64_t>(1, g.out_pixels() / kMinTaskPixels);
    return std::max<int64_t>(1, std::min(want, cap));
}

BackwardKernel::BackwardKernel(const Geometry &g, BackwardElems e, bool want_ig, bool want_gg, bool f64) {
    auto P = std::make_shared<BackwardPlan>();
    P->g = g;
    P->e = e;
    P->want_ig = want_ig;
    P->want_gg = want_gg;
    P->f64 = f64;
    P->need_in = want_gg && g.interp != Interp::Nearest;
    P->need_go = want_ig || P->need_in;
    P->K = tasks_per_image(g);
    const Elem te = f64 ? Elem::F64 : Elem::F32;
    const int64_t ts = f64 ? 8 : 4;
    P->in_direct = g.C == 1 && e.input == te;
    P->acc_direct = g.C == 1 && P->K == 1 && e.input_grad == te;
    P->Cp = padded_channels(g.C);
    P->bilinear_vec = !f64 && g.interp == Interp::Bilinear && g.padding != Padding::Reflection &&
                      g.in_pixels() < (int64_t{1} << 31);
    P->bicubic_vec = !f64 && g.interp == Interp::Bicubic && g.padding != Padding::Reflection &&
                     g.in_pixels() < (int64_t{1} << 31);
    P->in_bytes = P->need_in && !P->in_direct ? g.N * g.in_pixels() * P->Cp * ts : 0;
    P->acc_offset = static_cast<int64_t>(round64(static_cast<uint64_t>(P->in_bytes)) + (P->in_bytes ? 2048 + 64 : 0));
    P->acc_bytes = want_ig && !P->acc_direct ? g.N * P->K * g.in_pixels() * P->Cp * ts : 0;
    P->gsum_offset = static_cast<int64_t>(round64(static_cast<uint64_t>(P->acc_offset + P->acc_bytes)));
    P->gsum_tile = (g.C + kChanBlock - 1) / kChanBlock <= 1;
    P->gsum_stride = !P->need_in ? 0 : P->gsum_tile ? 2 * kTile : 2 * ((g.out_pixels() + P->K - 1) / P->K);
    const int64_t gsum_bytes = g.N * P->K * P->gsum_stride * ts;
    P->scratch = gsum_bytes ? static_cast<uint64_t>(P->gsum_offset + gsum_bytes)
                 : P->acc_bytes ? static_cast<uint64_t>(P->acc_offset + P->acc_bytes)
                                : static_cast<uint64_t>(P->in_bytes);
    P->band_px = kBandPixels;
    plan_ = with_bands(std::move(P));
}

// The band bookkeeping of stream_image (K == 1), per image: nband spans, nband + 1 suffix hulls and
// one state byte per input row, after the other scratch arrays (scratch: their end).
std::shared_ptr<const BackwardPlan> BackwardKernel::with_bands(std::shared_ptr<BackwardPlan> P) {
    const Geometry &g = P->g;
    P->nband = P->K == 1 ? (g.out_pixels() + P->band_px - 1) / P->band_px : 0;
    const int64_t bytes = (2 * P->nband + 1) * static_cast<int64_t>(sizeof(RowSpan)) + g.H;
    P->band_stride = P->nband ? static_cast<int64_t>(round64(static_cast<uint64_t>(bytes))) : 0;
    P->band_offset = static_cast<int64_t>(round64(P->scratch));
    P->scratch = static_cast<uint64_t>(P->band_offset + P->band_stride * g.N);
    return P;
}

void BackwardKernel::set_band_pixels(int64_t px) {
    auto P = std::make_shared<BackwardPlan>(*plan_);
    P->scratch = static_cast<uint64_t>(P->band_offset);  // without the old band area
    P->band_px = std::max<int64_t>(1, px);
    plan_ = with_bands(std::move(P));
}

uint64_t BackwardKernel::scratch_bytes() const { return plan_->scratch; }

void BackwardKernel::run(const BackwardOperands &ops) const {
    const BackwardPlan &P = *plan_;
    const bool avx = use_avx512(isa_);
    if (P.f64) run_typed<double>(P, ops, avx);
    else run_typed<float>(P, ops, avx);
}

}  // namespace gsamp
