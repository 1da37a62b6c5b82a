// The backward kernel's plan (see grid_backward.hpp): the shape-only work split, the channels-last
// layout of the scratch arrays (blocks of 16 channels, narrow blocks padded) and where each array
// lives in the workspace. Everything here is fixed by the shape, never by the thread count.
#ifndef GRID_SAMPLER2D_GRID_BW_PLAN_HPP_
#define GRID_SAMPLER2D_GRID_BW_PLAN_HPP_

#include <cstdint>

#include "grid_backward.hpp"
#include "grid_types.hpp"

namespace gsamp {

// Shape-only work split: at least kMinTasks tasks overall when the pixels allow, each of at least
// kMinTaskPixels output pixels. Never depends on the thread count. Every extra task per image costs
// a private accumulator as large as the image's input (zeroing, cache and a reduction), so the
// floor is this project's machines' core count: a single image is split in two. (More cores would
// want a larger floor; the bits change with this constant, never with the thread count.)
constexpr int64_t kMinTasks = 2;
constexpr int64_t kMinTaskPixels = 1024;
constexpr int64_t kTile = 16;        // output pixels whose taps are computed together
constexpr int64_t kChanBlock = 16;   // channels per block of the channels-last layout (one 64-byte line)
constexpr int64_t kRowBlock = 256;   // pixels per block of the phase A / C transposes
// Output pixels per band of the one-task-per-image path (grid_bw_bands.hpp): small enough that a
// smooth grid's band touches a few hundred KB of input and accumulator (the L2 cache), large
// enough that the per-band bookkeeping is noise. An image of up to this many pixels is one band.
constexpr int64_t kBandPixels = 4096;

// Values per input pixel in a channel block of the channels-last layout: a full block is one
// 64-byte line; a narrow last block (C % 16, or a small C) is padded with zeros to 4 or 8 values
// so that its taps are single 128- or 256-bit operations. One channel stays unpadded (NCHW).
inline int64_t lane_width(int64_t w) { return w <= 1 ? 1 : w <= 4 ? 4 : w <= 8 ? 8 : 16; }
// Values per input pixel over all blocks of an image.
inline int64_t padded_channels(int64_t C) {
    const int64_t last = C - (C - 1) / 16 * 16;
    return C - last + lane_width(last);
}

struct BackwardPlan {
    Geometry g{};
    BackwardElems e{};
    bool want_ig = false, want_gg = false, f64 = false;
    bool need_in = false;     // gridGrad needs input values (not for nearest)
    bool need_go = false;
    int64_t K = 1;
    bool in_direct = false;   // the channels-last input is the input itself
    bool acc_direct = false;  // accumulate straight into inputGrad
    int64_t in_bytes = 0, acc_bytes = 0, acc_offset = 0;
    // per task: gridGrad's partial sums, 2 per pixel, carried from channel block to block; with one
    // block (gsum_tile) they never outlive their tile of pixels: 2 per pixel of one tile
    int64_t gsum_stride = 0, gsum_offset = 0;
    bool gsum_tile = false;
    int64_t Cp = 1;                            // padded_channels(C)
    bool bilinear_vec = false;                 // bilinear_tile_avx applies (zeros / border, H * W < 2^31)
    bool bicubic_vec = false;                  // bicubic_tile_avx applies (likewise)
    int64_t band_px = kBandPixels;             // output pixels per band (K == 1; tests vary it)
    int64_t nband = 0;                         // bands per image
    int64_t band_offset = 0, band_stride = 0;  // per image: the bands' RowSpans, suffix hulls, row states
    uint64_t scratch = 0;
};

inline uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }

template <class T>
constexpr Elem elem_of() {
    return sizeof(T) == 8 ? Elem::F64 : Elem::F32;
}

inline const char *at(const void *p, int64_t elems, Elem e) { return static_cast<const char *>(p) + elems * elem_bytes(e); }
inline char *at(void *p, int64_t elems, Elem e) { return static_cast<char *>(p) + elems * elem_bytes(e); }

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_PLAN_HPP_
