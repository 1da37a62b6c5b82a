// GridSampler2D kernel (see grid_forward.hpp). Tiles of 16 output pixels of one row, taps from
// pixel_taps, no allocation: the tile's taps live on the stack.
#include "grid_forward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "grid_rows.hpp"
#include "grid_taps.hpp"

namespace gsamp {
namespace {

constexpr int64_t kTile = 16;

template <class T>
void run_typed(const Geometry &g, Elem grid_elem, Elem out_elem, const ForwardOperands &ops) {
    const int64_t HW = g.in_pixels(), Pn = g.out_pixels();
    const T *in = static_cast<const T *>(ops.input);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * g.Ho), [&](const tbb::blocked_range<int64_t> &r) {
        T gridv[2 * kTile], row[kTile], mx, my;
        Taps<T> taps[kTile];
        for (int64_t b = r.begin(); b < r.end(); ++b) {
            const int64_t n = b / g.Ho;
            for (int64_t p0 = (b % g.Ho) * g.Wo, pe = p0 + g.Wo; p0 < pe; p0 += kTile) {
                const int64_t np = std::min(kTile, pe - p0);
                load_row(static_cast<const char *>(ops.grid) + (n * Pn + p0) * 2 * elem_bytes(grid_elem), grid_elem, 2 * np,
                         gridv, false);
                for (int64_t i = 0; i < np; ++i) pixel_taps(g, gridv[2 * i], gridv[2 * i + 1], taps[i], &mx, &my);
                for (int64_t c = 0; c < g.C; ++c) {
                    const T *plane = in + (n * g.C + c) * HW;
                    for (int64_t i = 0; i < np; ++i) {
                        T s = 0;
                        for (int t = 0; t < taps[i].n; ++t) s += taps[i].w[t] * plane[taps[i].off[t]];
                        row[i] = s;
                    }
                    store_row(row, np, out_elem,
                              static_cast<char *>(ops.out) + ((n * g.C + c) * Pn + p0) * elem_bytes(out_elem), false);
                }
            }
        }
    });
}

}  // namespace

void run_forward(const Geometry &g, Elem grid_elem, Elem out_elem, bool f64, const ForwardOperands &ops) {
    if (f64) run_typed<double>(g, grid_elem, out_elem, ops);
    else run_typed<float>(g, grid_elem, out_elem, ops);
}

}  // namespace gsamp
