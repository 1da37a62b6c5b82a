// Internal to the direct depthwise kernels (depthwise_direct.cpp: planning, scalar spelling, run;
// depthwise_direct_avx*.{hpp,cpp}: AVX-512 spelling): what both spellings share.
#ifndef CONVOLUTION_SRC_DEPTHWISE_DIRECT_COMMON_HPP_
#define CONVOLUTION_SRC_DEPTHWISE_DIRECT_COMMON_HPP_

#include <algorithm>
#include <cstdint>

#include "aclnn_cpu/numeric.hpp"
#include "conv_types.hpp"

namespace conv::dwd {

constexpr int64_t kL = 16;            // lanes per vector
constexpr int64_t kFlush = 64;        // gradWeight: vectors summed in FLOAT per lane before moving into double
constexpr int kGroup = 4;             // stride-1 gradInput: vectors summed side by side (the mask table is padded to them)
constexpr int64_t kMaxChannels = 16;  // gradWeight: channels per task, at most

inline float value(const void *p, Dt dt, int64_t i) {
    return dt == Dt::F32 ? static_cast<const float *>(p)[i] : acp::bf16_to_float(static_cast<const uint16_t *>(p)[i]);
}

// Where the operands of one (image, channel) plane start and how they are shaped.
struct Planes {
    const void *dy, *x;  // plane starts are element offsets: gy, gx
    int64_t gy, gx;
    int64_t H, W, Ho, Wo, s;
    bool dots = false;  // BF16 stride-1 gradInput may take its taps by vdpbf16ps pairs (DwDirect::bf16_dots)
};

// The stride-1 mask table: per vector the 9 neighbour offsets' lanes and whether all are full (nv
// vectors, padded to whole groups of kGroup with empty masks).
struct MaskTable {
    const uint16_t *mask;
    const uint8_t *full;
    int64_t nv, P, W;
};

// A gradWeight task's double lane sums of the channel at hand (a thread's scratch slot).
struct ChannelSums {
    double sum[9][kL];
};

// Stride 1 planes whose rows fill more than half a vector and at most one are walked row by row (a
// vector per row: shifts in registers, no mask table); other stride-1 planes as flattened vectors.
// Measured at 14x14: gradInput -43 % (FLOAT) / -22 % (BF16), gradWeight -38 % / -32 %; at 7x7
// (7 of 16 lanes) rows were no faster.
inline bool by_rows(int64_t W) { return W > kL / 2 && W <= kL; }
// BF16 stride-1 planes with rows wider than a vector are walked in strips of kStrip columns, their
// even and odd columns in two vectors, each band of kStripBand rows strip by strip, each strip down
// the band (a strip's rows kept in registers); gradWeight takes two columns per lane (a strip row
// counts as two vectors towards kFlush). FLOAT keeps the flattened plane (strips measured slower there once the planes
// come from memory).
constexpr int64_t kStrip = 2 * kL;
constexpr int64_t kStripBand = 16;
inline bool strips(int64_t W) { return W > kL; }
static_assert(kFlush % 2 == 0, "a gradWeight strip row counts as two vectors towards kFlush");

// Stride 1 planes of 5 to 7 columns and at most 8 rows (7x7) are walked as pitched vectors: vector
// u holds rows 2u (lanes 0-7) and 2u + 1 (lanes 8-15), column x in lane x of its half; lanes x >= W
// and rows >= H are no position. The whole plane is a few registers: a tap is a lane shift of them
// (no loads), and which lanes it may use depends on the column and, in the first and last vectors,
// the row, known when H is (no mask table).
constexpr int64_t kPitch = 8;
constexpr int64_t kPitchRows = 8;
inline bool pitched(int64_t H, int64_t W) { return W > kPitch / 2 && W < kPitch && H >= 1 && H <= kPitchRows; }

// Per tap: the 16 lanes' double sums added pairwise, halving: lane l plus lane l + 8, then of those
// l plus l + 4, l plus l + 2, and the last two (the order a vector of 8 doubles folds in: 4 adds per
// tap, where adding the lanes one after the other was a chain of 16 and showed per channel).
inline void lanes_pairwise(const double (&sum)[9][kL], double *out) {
    for (int t = 0; t < 9; ++t) {
        double v[kL];
        std::copy(sum[t], sum[t] + kL, v);
        for (int64_t h = kL / 2; h >= 1; h /= 2)
            for (int64_t l = 0; l < h; ++l) v[l] = acp::add_ordered(v[l], v[l + h]);
        out[t] = v[0];
    }
}

// The AVX-512 spelling's entry points (call only with AVX-512F/BW/VL present).
// gradInput of planes [q0, q1) (plane q = image q / C, channel q % C) into dx (BF16 when dx_bf16).
// stream: FLOAT dx, 64-byte aligned, planes of whole vectors: flattened planes are stored streamed.
// halves: FLOAT pitched planes (FLOAT dx) in half-width rows (same bytes; DwDirect::set_half_width).
void gi_planes_avx(bool bf16, bool dx_bf16, bool stream, bool halves, const Planes &p, const MaskTable &m, const void *w, void *dx,
                   int64_t C, int64_t q0, int64_t q1);
// gradWeight of channels [c0, c1) over images [n0, n1): per channel its 9 tap sums into out.
void gw_channels_avx(bool bf16, bool halves, const Planes &p, const MaskTable &m, int64_t C, int64_t c0, int64_t c1, int64_t n0,
                     int64_t n1, ChannelSums *cs, double *out);
// n gradWeight values whose channels' sums come from one image range each: dw[i] = FLOAT(0 + sums[i])
// (add_ordered, then rounded: the image ranges' fold of DwDirect::run, with one range).
void gw_finish_avx(const double *sums, int64_t n, float *dw);

}  // namespace conv::dwd

#endif  // CONVOLUTION_SRC_DEPTHWISE_DIRECT_COMMON_HPP_
