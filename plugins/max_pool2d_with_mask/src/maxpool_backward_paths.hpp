// MaxPool2dWithMaskBackward's internals, shared by its paths: the plan, a slot's scratch, the
// vector helpers more than one path uses, and each path's entry point. maxpool_backward.cpp: the
// plan, the ring and tile paths and the run; maxpool_backward_parity.cpp: the parity path (k2 s2
// p0, k3 s2 p1, k3 s2 p0); maxpool_backward_small.cpp: the small-plane path.
#ifndef MAXPOOL_BACKWARD_PATHS_HPP_
#define MAXPOOL_BACKWARD_PATHS_HPP_

#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "aclnn_cpu/slot_pool.hpp"
#include "maxpool_backward.hpp"
#include "maxpool_rows.hpp"

namespace mpool {

// The gather path's deepest window, and the input rows it sums at a time.
constexpr int64_t kMaxGatherKh = 32;
constexpr int kGatherRows = 4;

struct BackwardPlan : KernelPlanBase {
    // ring path: kH rows of W floats, then 16 dummy floats for skipped lanes
    int64_t ring_rows = 1, ring_stride = 1, ring_floats = 0;
    // The tile path's ring layout: rows tile_stride floats apart (a multiple of 16), column c at
    // tile_lead + c, so that every tile (first column 32 * b - pW) starts on a 64-byte line.
    int64_t tile_stride = 0, tile_lead = 0;
    int64_t row_floats = 0;  // one gradOutput row (+ slack)
    bool vec_ok = false;     // the int32 lane tables below are valid (AVX-512 decode)
    std::vector<int32_t> col_lo, col_wid;  // per ow (padded by 16 with 0 / 1): clipped window start, width
    std::vector<int32_t> col_start;        // per ow: unclipped window start ow * sW - pW
    int32_t k_khW[32] = {}, k_kw[32] = {};  // per kernel position k < 32: kh * W and kw (bit masks)
    // Tile path (sW == 2 and kW == 2, see tile_block): per ow the first kernel column
    // inside the input (col_lo - col_start), and per kernel position k < 32 its code kh * 4 + kw.
    bool tiles_ok = false;
    std::vector<int32_t> col_koff;
    int32_t k_code[32] = {};
    // Parity path (see run_plane_parity): square k2 s2 p0, k3 s2 p1 or k3 s2 p0 windows. dir_cols: floats of
    // each ring half (a multiple of 16 with room for one block past Wo); stage_row / stage_bytes:
    // one / two gradInput rows of dt bytes, each starting on a 64-byte line.
    enum class Parity { None, K2S2, K3S2P1, K3S2P0 } parity = Parity::None;
    int64_t dir_cols = 0, stage_bytes = 0, stage_row = 0;
    // Scratch: each part's first failure (a line each, bad_bytes in all), then the sets of task
    // scratch (slot_bytes each) that the parts take while they run - one per thread (sets).
    int64_t slot_bytes = 0, bad_bytes = 0;
    acp::SlotPool sets;
    // k3, per kernel position k: kh * W + kw in 16 lanes, the int32 blocks' compare operands (made
    // once here: made per row, they were ~10 % of a plane's time)
    alignas(64) int32_t pos_off[9][16] = {};
    // Small-plane path (run_plane_small): int32 masks, planes of at most kSmallPlane elements. Per
    // output j of a plane (zero padded by 16): the flat index of its clipped window's first
    // element, its rows times W, its width.
    bool small_ok = false;
    int64_t pair_stride = 0;  // between two planes' positions (run_planes_small_direct)
    std::vector<int32_t> win_base, win_limit, win_wid;
    // Gather path (run_plane_gather): stride 1, kW <= 16, kH <= kMaxGatherKh. gather_row: entries
    // of a row of its ring (lead, Wo entries, pad); gather_sums: floats of kGatherRows input rows'
    // sums.
    bool gather_ok = false;
    int64_t gather_row = 0, gather_sums = 0;
};

// A part's scratch: its first failure, and the set it runs on: the ring, one gradOutput row, its
// ring positions, the parity path's ring halves and stage.
struct Slot {
    BadIndex *bad;
    float *ring;
    float *grow;
    int32_t *pos;
    float *ringE, *ringO;  // parity path: the pending odd row, even and odd columns
    uint8_t *stage;        // parity path: finished gradInput rows in dt bytes
    uint8_t *half;         // parity path, streamed 16-bit rows: the next line's first 32 bytes (64-byte aligned)
};

inline BadIndex *bad_at(const BackwardPlan &P, void *scratch, int64_t part) {
    (void)P;
    return reinterpret_cast<BadIndex *>(static_cast<char *>(scratch) + part * 64);
}
inline Slot slot_at(const BackwardPlan &P, void *scratch, int64_t part, size_t set) {
    auto *base = static_cast<char *>(scratch) + P.bad_bytes + static_cast<int64_t>(set) * P.slot_bytes;
    Slot r{};
    r.bad = bad_at(P, scratch, part);
    r.ring = reinterpret_cast<float *>(base + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64);
    r.grow = r.ring + P.ring_floats;
    r.pos = reinterpret_cast<int32_t *>(r.grow + P.row_floats);
    r.ringE = reinterpret_cast<float *>(r.pos + P.row_floats);
    r.ringO = r.ringE + P.dir_cols;
    r.stage = reinterpret_cast<uint8_t *>(r.ringO + P.dir_cols);
    r.half = r.stage + P.stage_bytes - 64;
    return r;
}

#if ACP_X86
// Sums take their contributions in ascending output order with add_ordered (numeric.hpp; here the
// one-instruction spellings of numeric_avx512.hpp), which keeps the earlier of two NaNs: the
// earliest NaN of an element, on every path.
using acp::avx512::add_ordered;

// The one accumulation loop of the vector paths: lanes in ascending output order.
ACP_AVX512 inline void add_lanes(float *ring, const int32_t *pos, const float *g, int64_t n) {
#pragma GCC unroll 8
    for (int64_t l = 0; l < n; ++l) ring[pos[l]] = add_ordered(ring[pos[l]], g[l]);
}
#endif

// Bit masks: output row oh's bits of the next plane, in each kernel position's row (next_mask ==
// nullptr: no next plane), while this plane computes. The hardware prefetchers leave these short
// runs - nine rows 6304 bytes apart at 112x112, 7 lines each - to demand misses: FLOAT computed as
// FLOAT16, k3, 32x64x112x112, 2 threads (Zen 5): 1.55 -> 1.22 us a plane. Int32 masks and
// gradOutput rows are left to the hardware: prefetching them cost 5 % on 16-bit int32 planes.
// (Until session 21 these prefetches were __builtin_prefetch calls that GCC 12 compiled away.)
inline void prefetch_next_bits(const BackwardPlan &P, const uint8_t *next_mask, int64_t oh) {
    if (!next_mask || P.layout != MaskLayout::Bits) return;
    const Geometry &g = P.g;
    const int64_t row_bytes = mask_row_bytes(g.Ho, g.Wo), b0 = oh * g.Wo / 8, b1 = ((oh + 1) * g.Wo + 7) / 8;
    for (int64_t k = 0; k < g.kernel_positions(); ++k) acp::prefetch_lines(next_mask + k * row_bytes + b0, b1 - b0);
}

// Whether the k3 blocks can stream 16-bit gradInput rows themselves (stream_half_lines), given a
// plane that starts on a 64-byte line: dense rows of W % 16 == 0 columns - 32 bytes per 16, so that

// Whether the k3 parity blocks stream 16-bit gradInput rows themselves (maxpool_backward_parity.cpp).
bool stream16_rows(const Geometry &g, View4 giv);

#if ACP_X86
#define MPOOL_AI ACP_AVX512 inline __attribute__((always_inline))

constexpr __mmask16 kAll = 0xffff;

ACP_AVX512 inline __attribute__((always_inline)) __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1u);
}
ACP_AVX512 inline __attribute__((always_inline)) __mmask16 lanes16(int64_t n) { return n <= 0 ? 0 : tail16(n); }

// The window test of 16 int32 indices v (lanes m): d = v - start, the window's first element (flat),
// is in the window when d < hh * W as unsigned (every index below the start, and every negative
// one, is beyond that) and d mod W < width - d mod W by hh - 1 conditional subtractions of W instead
// of a division. Returns the lanes in their window; *bad: the lanes neither there nor -1 (skipped).
// HH: hh when 2 or 3 (the subtractions unrolled), 0: hh at run time.
template <int HH>
MPOOL_AI __mmask16 window_test(__m512i v, __mmask16 m, __m512i start, __m512i limit, __m512i width, int64_t hh,
                               __m512i vW, __mmask16 *bad) {
    __m512i d = _mm512_sub_epi32(v, start);
    __mmask16 valid = _mm512_mask_cmplt_epu32_mask(m, d, limit);
#pragma GCC unroll 2
    for (int64_t t = 1; t < (HH ? HH : hh); ++t)
        d = _mm512_mask_sub_epi32(d, _mm512_mask_cmpge_epu32_mask(valid, d, vW), d, vW);
    valid = _mm512_mask_cmplt_epu32_mask(valid, d, width);
    const __mmask16 skip = _mm512_mask_cmpeq_epi32_mask(m, v, _mm512_set1_epi32(-1));
    *bad = static_cast<__mmask16>(m & ~valid & ~skip);
    return valid;
}

// ---- the paths' entry points: one plane (two for run_planes_small_direct), the first bad output
// column j (flat in the plane) or -1; next_mask: the next plane's mask (nullptr: none) ----

// maxpool_backward_parity.cpp: square k2 s2 p0, k3 s2 p1 and k3 s2 p0 windows, gradInput rows dense.
ACP_AVX512 int64_t run_plane_parity(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                      char *gi, View4 giv, const Slot &s, LineStream *stream,
                                      const uint8_t *next_mask);
// maxpool_backward_gather.cpp: stride 1 (BackwardPlan::gather_ok), both layouts.
ACP_AVX512 int64_t run_plane_gather(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane, char *gi,
                                      View4 giv, const Slot &s, LineStream *stream, const uint8_t *next_mask);
// maxpool_backward_small.cpp: int32 masks, small planes (BackwardPlan::small_ok).
ACP_AVX512 int64_t run_plane_small(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *idx, char *gi,
                                     View4 giv, const Slot &s, LineStream *stream);
ACP_AVX512 int64_t run_planes_small_direct(const BackwardPlan &P, const char *go_a, const uint8_t *idx_a, char *gi_a,
                                             const char *go_b, const uint8_t *idx_b, char *gi_b, const Slot &s,
                                             int *which);
#endif  // ACP_X86

}  // namespace mpool

#endif  // MAXPOOL_BACKWARD_PATHS_HPP_
