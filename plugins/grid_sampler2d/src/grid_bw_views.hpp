// The taps of the samples of one tile as the channel loops see them: a compact per-sample list
// (scalar builders: every tap valid) or the tap-major arrays of 16 samples built by the vector
// builders (with a validity mask per sample). The channel loops are templates over the view, so
// both layouts share one loop body.
#ifndef GRID_SAMPLER2D_GRID_BW_VIEWS_HPP_
#define GRID_SAMPLER2D_GRID_BW_VIEWS_HPP_

#include <cstdint>

#include "grid_taps.hpp"

namespace gsamp {

// Two views of one sample's taps for the channel loops: a compact list (every tap valid), or one
// sample of a bilinear tile (4 corners, stored corner-major for 16 samples, with a validity mask).
template <class T>
struct CompactView {
    const Taps<T> &tp;
    int count() const { return tp.n; }
    bool valid(int) const { return true; }
    int64_t off(int t) const { return tp.off[t]; }
    T w(int t) const { return tp.w[t]; }
    T cx(int t) const { return tp.cx[t]; }
    T cy(int t) const { return tp.cy[t]; }
};
template <int NT>
struct TileTaps {  // NT taps of 16 samples, tap-major (bilinear: corners nw, ne, sw, se; bicubic: 4 j + i)
    alignas(64) float w[NT][16];
    alignas(64) float cx[NT][16];
    alignas(64) float cy[NT][16];
    alignas(64) int32_t off[NT][16];
    uint16_t mask[16];  // bit t: tap t of sample i is inside the input
};
template <int NT>
struct TileView {
    const TileTaps<NT> &tt;
    int64_t i;
    int count() const { return NT; }
    bool valid(int t) const { return (tt.mask[i] >> t) & 1; }
    int64_t off(int t) const { return tt.off[t][i]; }
    float w(int t) const { return tt.w[t][i]; }
    float cx(int t) const { return tt.cx[t][i]; }
    float cy(int t) const { return tt.cy[t][i]; }
};

}  // namespace gsamp

#endif  // GRID_SAMPLER2D_GRID_BW_VIEWS_HPP_
