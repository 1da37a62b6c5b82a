// avgpool2d planning tables: the window, divisor-scale and permutation tables both kernels are
// planned into once (phase 1) and read, immutable, by every run (phase 2).
#ifndef AVGPOOL2D_TABLES_HPP_
#define AVGPOOL2D_TABLES_HPP_

#include <cstdint>
#include <vector>

#include "avgpool2d_kernels.hpp"

namespace avgpool2d {

// Per-task scratch lives on the stack (run() never allocates); these bound it (~53 KB backward).
inline constexpr int64_t kSegWMax = 512;  // backward: widest gradInput column segment (multiple of 16)
inline constexpr int64_t kRMax = 2048;    // backward: max gradOutput columns feeding one segment
inline constexpr int64_t kRing = 8192;    // backward: floats of cached Q rows
inline constexpr int64_t kRingRows = 64;  // backward: max cached Q rows
inline constexpr int64_t kSegO = 512;     // forward: output row segment width (multiple of 16)
inline constexpr int64_t kVMax = 4096;    // forward: max input columns feeding one segment
inline constexpr int64_t kMinItems = 64;  // split planes into row blocks when there are fewer planes
// Non-temporal stores pay off once gradInput cannot stay in the 32 MB L3 anyway.
inline constexpr int64_t kStreamBytes = int64_t{16} << 20;

inline int64_t elem_size(DType dt) { return dt == DType::F32 ? 4 : 2; }
inline int64_t round_up16(int64_t x) { return (x + 15) / 16 * 16; }

// Window tables of one spatial axis (PyTorch's avg_pool2d arithmetic).
struct Axis {
    std::vector<int64_t> lo, hi;          // per pooled index: clipped window [lo, hi), lo == hi if empty
    std::vector<int64_t> fac;             // per pooled index: this axis' factor of the divisor
    std::vector<int64_t> cov_lo, cov_hi;  // per input index: pooled indices covering it, [cov_lo, cov_hi)
};


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

// One term of stage A for a 16-wide chunk: lane l adds P[off + idx[l]] when bit l of mask is set.
struct alignas(64) Term {
    int32_t idx[16];
    uint16_t mask;  // an __mmask16
};

// Stage A of one 16-column chunk: load P[off .. off + 32), then apply terms [first, first + count).
struct Chunk {
    int32_t off, first, count;
};

// What both directions share: the geometry, each axis' windows and the divisor scales.
struct Windows {
    Geometry g{};
    DType dt = DType::F32;
    int64_t planes = 0;
    Axis ah, aw;
    Scales sc;
};

struct BwSeg {
    int64_t w0, w1;    // gradInput columns [w0, w1), w0 a multiple of 16
    int64_t rlo, rhi;  // gradOutput columns feeding them; P[j] holds column rlo + j
    int32_t terms = -1;  // stage-A terms of every chunk when they all have the same count, else -1
};

// Column stride 2 with kW 2 or 3 and pW 0 or 1: every gradInput column takes its terms from the
// same one or two gradOutput columns relative to its pair (2 j, 2 j + 1), so stage A needs no
// tables (bw_parity_row in avgpool2d_rows_avx512.cpp). None: the tables.
enum class Parity { None, K2P0, K2P1, K3P0, K3P1 };

struct BackwardPlan : Windows {
    std::vector<BwSeg> segs;
    bool direct = false;     // no segmentation fits the scratch: per-element scalar path
    int64_t ring_rows = 1;   // gradOutput rows covering one gradInput row, at most, + 1 (ring size)
    std::vector<int64_t> slot;  // per oh: offset of its Q row in the ring
    bool vec_w = false;      // stage-A permutation tables are valid
    Parity parity = Parity::None;  // stage A by column parity (one segment of the whole width)
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

struct ForwardPlan : Windows {
    std::vector<FwSeg> segs;
    bool direct = false;  // some window is wider than kVMax: per-element scalar path
    bool vec_ok = false;  // int32 column tables valid (gather stage 2)
    std::vector<int32_t> wlo32, wid32;  // per ow: window start and width (zero padded by 16)
    bool perm_ok = false;  // permutation tables valid (every chunk's windows fit 48 columns)
    std::vector<Chunk> chunks;  // per 16 outputs
    std::vector<FwTerm> terms;
    int64_t row_blocks = 1;
};

// Both plans, filled from validated geometry: windows, scales, segments and vector tables.
void build_backward_plan(BackwardPlan& P, const Geometry& g, DType dt, int32_t precision);
void build_forward_plan(ForwardPlan& P, const Geometry& g, DType dt, int32_t precision);

}  // namespace avgpool2d

#endif  // AVGPOOL2D_TABLES_HPP_
