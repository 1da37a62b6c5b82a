// What the ATK replays of GridSampler2D and GridSampler2DBackward share (test_grid_atk.cpp,
// test_grid_backward_atk.cpp): data drawn as the spec draws it, and the comparison with the reference
// that allows for the rounding of the kernel's coordinate arithmetic.
//
// The kernel computes a sample's source coordinate in FLOAT (DOUBLE for DOUBLE), as PyTorch does.
// Far out, that coordinate carries an error of a few FLOAT ulps of (|grid| + 1) times half the
// plane's size: enough to move a bilinear weight, or a nearest pick near a half, or the cell whose
// slope a grid gradient takes, by more than testing.md's tolerance. So a result must lie within the
// band of the reference at the grid values and at the four corners of their rounding band (each
// value moved by 8 ulps of |v| + 1 either way), widened by testing.md's tolerance and by `slack`:
// what a kink of the reference inside that band (a tap's cell boundary, a reflection) can add.
#ifndef GRID_SAMPLER2D_TESTS_GRID_ATK_UTIL_HPP_
#define GRID_SAMPLER2D_TESTS_GRID_ATK_UTIL_HPP_

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <sstream>
#include <vector>

#include "atk_spec.hpp"
#include "grid_test_util.hpp"

namespace gst {

// Uniform in [lo, hi], rounded to dt (what the spec's generator hands the card).
inline std::vector<double> draw(int64_t n, double lo, double hi, uint64_t seed, aclDataType dt) {
    return acltest::atkDraw(n, lo, hi, seed, [dt](double v) { return roundTo(v, dt); });
}

// The unit of the coordinate arithmetic's rounding: FLOAT's (FLOAT16 grids are computed in FLOAT) or DOUBLE's.
inline double coordinateUlp(aclDataType dt) { return dt == ACL_DOUBLE ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23); }

// The grid with every x moved by sx and every y by sy rounding bands (8 ulps of |v| + 1).
inline std::vector<double> shifted(std::vector<double> g, int sx, int sy, aclDataType dt) {
    for (size_t i = 0; i < g.size(); ++i) g[i] += (i % 2 == 0 ? sx : sy) * 8 * coordinateUlp(dt) * (std::fabs(g[i]) + 1);
    return g;
}

// The references at the grid values and at the four corners of their rounding band.
template <class Reference>
std::vector<typename std::invoke_result_t<Reference, const std::vector<double> &>> bandReferences(const std::vector<double> &grid,
                                                                                                  aclDataType dt, Reference ref) {
    std::vector<std::invoke_result_t<Reference, const std::vector<double> &>> refs{ref(grid)};
    for (int sx : {-1, 1})
        for (int sy : {-1, 1}) refs.push_back(ref(shifted(grid, sx, sy, dt)));
    return refs;
}

// got within [min, max] of the references, widened by testing.md's tolerance for dt and by `slack`.
inline ::testing::AssertionResult withinBand(aclDataType dt, const std::vector<double> &got, const std::vector<std::vector<double>> &refs,
                                      const std::vector<double> &slack) {
    const double rel = dt == ACL_FLOAT ? 1e-5 : dt == ACL_FLOAT16 ? 1e-3 : dt == ACL_BF16 ? 8e-3 : 1e-12;
    double maxRef = 0;
    for (const auto &r : refs)
        for (double x : r) maxRef = std::max(maxRef, std::fabs(x));
    const double absTol = (dt == ACL_DOUBLE ? 1e-12 : 1e-5) * maxRef;
    size_t bad = 0;
    std::ostringstream msg;
    for (size_t i = 0; i < got.size(); ++i) {
        double lo = refs[0][i], hi = refs[0][i];
        for (const auto &r : refs) lo = std::min(lo, r[i]), hi = std::max(hi, r[i]);
        lo = roundTo(lo, dt), hi = roundTo(hi, dt);
        if (got[i] >= lo - absTol - rel * std::fabs(lo) - slack[i] && got[i] <= hi + absTol + rel * std::fabs(hi) + slack[i]) continue;
        if (bad++ < 5) msg << "\n  [" << i << "] got " << got[i] << ", the references give [" << lo << ", " << hi << "]";
    }
    if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " outside the band" << msg.str();
    return ::testing::AssertionSuccess();
}

}  // namespace gst

#endif  // GRID_SAMPLER2D_TESTS_GRID_ATK_UTIL_HPP_
