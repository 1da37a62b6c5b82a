#include "depthwise_direct.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "aclnn_cpu/numeric.hpp"
#include "cpu.hpp"
#include "depthwise_direct_common.hpp"

namespace conv {

using namespace dwd;

namespace {

constexpr int64_t kWeightTasks = 16;    // gradWeight: few channel groups are split into image ranges up to this many tasks
constexpr int64_t kPlaneElems = 2048;   // gradInput: about this many elements per TBB task
constexpr int64_t kMaxPlane = 1 << 16;  // stride 1: larger planes stay blocked (the mask table grows with the plane)
constexpr int64_t kGroupElems = 4096;   // gradWeight: a task walks about this many elements of channels per image

// ---- scalar spelling (acp::fma_ordered, the vector spelling's order per element) ----

// gradInput of one plane: per input position, the taps whose gradient position is whole and
// inside, rows then columns, from zero.
void gi_plane_scalar(const Planes &p, Dt dt, const float w[9], void *dx, bool dx_bf16, int64_t first) {
    for (int64_t iy = 0; iy < p.H; ++iy)
        for (int64_t ix = 0; ix < p.W; ++ix) {
            float acc = 0.0f;
            for (int64_t a = 0; a < 3; ++a) {
                const int64_t ny = iy + 1 - a;
                if (ny < 0 || ny % p.s != 0 || ny / p.s >= p.Ho) continue;
                for (int64_t b = 0; b < 3; ++b) {
                    const int64_t nx = ix + 1 - b;
                    if (nx < 0 || nx % p.s != 0 || nx / p.s >= p.Wo) continue;
                    acc = acp::fma_ordered(w[a * 3 + b], value(p.dy, dt, p.gy + ny / p.s * p.Wo + nx / p.s), acc);
                }
            }
            const int64_t at = first + iy * p.W + ix;
            if (dx_bf16) static_cast<uint16_t *>(dx)[at] = acp::float_to_bf16(acc);
            else static_cast<float *>(dx)[at] = acc;
        }
}

// gradWeight lane sums: per tap and lane a FLOAT sum moved into double every kFlush vectors.
struct LaneSums {
    float acc[9][kL] = {};
    double sum[9][kL] = {};
    int64_t count = 0;
    void flush() {
        for (int t = 0; t < 9; ++t)
            for (int64_t l = 0; l < kL; ++l) {
                sum[t][l] = acp::add_ordered(sum[t][l], static_cast<double>(acc[t][l]));
                acc[t][l] = 0.0f;
            }
        count = 0;
    }
    void vector_done() {
        if (++count == kFlush) flush();
    }
};

// Lane l of a vector holds gradient position (oy, ox): every tap whose input position is inside.
// lane_by_input (pitched planes): tap column b sums into lane l - 1 + b, its input column's.
void gw_lane_scalar(const Planes &p, Dt dt, int64_t oy, int64_t ox, int64_t l, LaneSums &ls, bool lane_by_input = false) {
    const float g = value(p.dy, dt, p.gy + oy * p.Wo + ox);
    for (int64_t a = 0; a < 3; ++a) {
        const int64_t iy = oy * p.s - 1 + a;
        if (iy < 0 || iy >= p.H) continue;
        for (int64_t b = 0; b < 3; ++b) {
            const int64_t ix = ox * p.s - 1 + b;
            if (ix < 0 || ix >= p.W) continue;
            float &acc = ls.acc[a * 3 + b][lane_by_input ? l - 1 + b : l];
            acc = acp::fma_ordered(g, value(p.x, dt, p.gx + iy * p.W + ix), acc);
        }
    }
}

// One plane into the lane sums, vector by vector as the AVX-512 spelling walks it: stride 1 the
// flattened plane (or pitched vectors of two rows, pitched; or by rows, by_rows; BF16 rows wider
// than a vector in bands of kStripBand rows, strip by strip of 32 columns, two columns a lane),
// stride 2 each row's output columns.
void gw_plane_scalar(const Planes &p, Dt dt, LaneSums &ls) {
    if (p.s == 1 && pitched(p.H, p.W)) {  // pitched vectors: two rows each, lane (y % 2) * kPitch + x (+ b - 1)
        for (int64_t y0 = 0; y0 < p.Ho; y0 += 2) {
            for (int64_t l = 0; l < kL; ++l) {
                const int64_t oy = y0 + l / kPitch, ox = l % kPitch;
                if (oy < p.Ho && ox < p.Wo) gw_lane_scalar(p, dt, oy, ox, l, ls, true);
            }
            ls.vector_done();
        }
        return;
    }
    if (p.s == 1 && dt == Dt::BF16 && strips(p.W)) {  // band, strip, row: columns x0 + 2l, then x0 + 2l + 1 in lane l
        for (int64_t y0 = 0; y0 < p.Ho; y0 += kStripBand)
            for (int64_t x0 = 0; x0 < p.Wo; x0 += kStrip)
                for (int64_t oy = y0; oy < std::min(p.Ho, y0 + kStripBand); ++oy) {
                    for (int64_t l = 0; l < kL; ++l)
                        for (int64_t ox = x0 + 2 * l; ox < std::min(x0 + 2 * l + 2, p.Wo); ++ox) gw_lane_scalar(p, dt, oy, ox, l, ls);
                    ls.vector_done();
                    ls.vector_done();
                }
        return;
    }
    if (p.s == 1 && !by_rows(p.W)) {
        const int64_t P = p.Ho * p.Wo;
        for (int64_t p0 = 0; p0 < P; p0 += kL) {
            for (int64_t l = 0; l < kL && p0 + l < P; ++l) gw_lane_scalar(p, dt, (p0 + l) / p.Wo, (p0 + l) % p.Wo, l, ls);
            ls.vector_done();
        }
        return;
    }
    for (int64_t oy = 0; oy < p.Ho; ++oy)
        for (int64_t j0 = 0; j0 < p.Wo; j0 += kL) {
            for (int64_t l = 0; l < kL && j0 + l < p.Wo; ++l) gw_lane_scalar(p, dt, oy, j0 + l, l, ls);
            ls.vector_done();
        }
}

}  // namespace

bool DwDirect::handles(const DwShape &s, Dt) {
    return s.kh == 3 && s.kw == 3 && s.dh == 1 && s.dw == 1 && s.ph == 1 && s.pw == 1 && s.sh == s.sw && (s.sh == 1 || s.sh == 2) &&
           s.Ho == (s.H - 1) / s.sh + 1 && s.Wo == (s.W - 1) / s.sw + 1 && (s.sh == 2 || s.H * s.W <= kMaxPlane);
}

DwDirect::DwDirect(const DwShape &s, Dt dt) : s_(s), dt_(dt) {
    group_ = std::clamp<int64_t>(kGroupElems / (s.H * s.W), 1, kMaxChannels);
    const int64_t groups = (s.C + group_ - 1) / group_;
    parts_ = std::clamp<int64_t>((kWeightTasks + groups - 1) / groups, 1, s.N);
    grain_ = std::max<int64_t>(1, kPlaneElems / (s.H * s.W));
    set_streamed_stores(static_cast<uint64_t>(s.N * s.C * s.H * s.W) * sizeof(float) >= kStreamBytes);
    set_half_width(cpu_splits_avx512());
    set_bf16_dots(cpu_prefers_bf16_dots());
    if (s.sh != 1) return;
    const int64_t P = s.H * s.W;
    nv_ = (P + kL - 1) / kL;
    const int64_t padded = (nv_ + kGroup - 1) / kGroup * kGroup;
    mask_.assign(static_cast<size_t>(padded * 9), 0);
    full_.assign(static_cast<size_t>(padded), 0);
    for (int64_t v = 0; v < nv_; ++v) {
        bool full = true;
        for (int64_t i = 0; i < 9; ++i) {
            const int64_t dy = i / 3 - 1, dx = i % 3 - 1;
            unsigned m = 0;
            for (int64_t l = 0; l < kL; ++l) {
                const int64_t q = v * kL + l, y = q / s.W + dy, x = q % s.W + dx;
                if (q < P && y >= 0 && y < s.H && x >= 0 && x < s.W) m |= 1u << l;
            }
            mask_[static_cast<size_t>(v * 9 + i)] = static_cast<uint16_t>(m);
            full = full && m == 0xffffu;
        }
        full_[static_cast<size_t>(v)] = full ? 1 : 0;
    }
}

uint64_t DwDirect::slot_bytes() const { return sizeof(ChannelSums); }

uint64_t DwDirect::partial_bytes() const {
    return static_cast<uint64_t>(s_.C * parts_ * 9) * sizeof(double);
}

void DwDirect::run(const DwBlocked::Io &io, uint8_t *scratch, const acp::SlotPool &slots, bool avx) const {
    const DwShape s = s_;
    const Dt dt = dt_;
    const bool bf16 = dt == Dt::BF16;
    const MaskTable mt{mask_.data(), full_.data(), nv_, s.H * s.W, s.W};
    const Planes base{io.dy, io.x, 0, 0, s.H, s.W, s.Ho, s.Wo, s.sh, dots_};
    if (io.dx != nullptr) {
        const bool stream = stream_ && !io.dx_bf16 && reinterpret_cast<uintptr_t>(io.dx) % 64 == 0;
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.N * s.C, grain_), [&](const tbb::blocked_range<int64_t> &r) {
            if (!avx) {
                for (int64_t q = r.begin(); q < r.end(); ++q) {
                    float w[9];
                    for (int64_t t = 0; t < 9; ++t) w[t] = value(io.w, dt, q % s.C * 9 + t);
                    Planes p = base;
                    p.gy = q * s.Ho * s.Wo;
                    gi_plane_scalar(p, dt, w, io.dx, io.dx_bf16, q * s.H * s.W);
                }
                return;
            }
            gi_planes_avx(bf16, io.dx_bf16, stream, half_, base, mt, io.w, io.dx, s.C, r.begin(), r.end());
        });
    }
    if (io.dw == nullptr) return;
    // per (channel, image range): 9 tap sums (the lanes added pairwise), after the slots; then per
    // channel and tap the image ranges in order. With one range per channel (every MobileNet layer)
    // the task that sums a channel finishes it, in vectors (gw_finish_avx): a serial pass over C x 9
    // sums after the tasks was 12 % of the 1024-channel 7x7 layer's gradWeight.
    auto *sums = reinterpret_cast<double *>(scratch + slot_bytes() * static_cast<uint64_t>(slots.size()));
    const int64_t parts = parts_, groups = (s.C + group_ - 1) / group_;
    const auto finish = [&](int64_t c, int64_t t) {
        double v = 0.0;
        for (int64_t q = 0; q < parts; ++q) v = acp::add_ordered(v, sums[(c * parts + q) * 9 + t]);
        io.dw[c * 9 + t] = static_cast<float>(v);
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, groups * parts, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t task = r.begin(); task < r.end(); ++task) {
            const int64_t q = task % parts, c0 = task / parts * group_, c1 = std::min(s.C, c0 + group_);
            const int64_t n0 = q * s.N / parts, n1 = (q + 1) * s.N / parts;
            if (avx) {
                const acp::SlotPool::Lease slot(slots);
                auto *cs = reinterpret_cast<ChannelSums *>(scratch + slot.index() * slot_bytes());
                double out[kMaxChannels * 9];
                gw_channels_avx(bf16, half_, base, mt, s.C, c0, c1, n0, n1, cs, out);
                if (parts == 1) {
                    gw_finish_avx(out, (c1 - c0) * 9, io.dw + c0 * 9);
                    continue;
                }
                for (int64_t c = c0; c < c1; ++c)
                    for (int t = 0; t < 9; ++t) sums[(c * parts + q) * 9 + t] = out[(c - c0) * 9 + t];
            } else {
                for (int64_t c = c0; c < c1; ++c) {  // the scalar spelling one channel at a time
                    LaneSums ls;
                    for (int64_t n = n0; n < n1; ++n) {
                        Planes p = base;
                        p.gy = (n * s.C + c) * s.Ho * s.Wo, p.gx = (n * s.C + c) * s.H * s.W;
                        gw_plane_scalar(p, dt, ls);
                    }
                    ls.flush();
                    lanes_pairwise(ls.sum, sums + (c * parts + q) * 9);
                }
            }
            if (parts == 1)
                for (int64_t c = c0; c < c1; ++c)
                    for (int64_t t = 0; t < 9; ++t) finish(c, t);
        }
    });
    if (parts > 1)
        for (int64_t c = 0; c < s.C; ++c)
            for (int64_t t = 0; t < 9; ++t) finish(c, t);
}

}  // namespace conv
