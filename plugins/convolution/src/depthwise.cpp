#include "depthwise.hpp"

#include <algorithm>

#include "cpu.hpp"

namespace conv {

namespace {


}  // namespace

bool DepthwisePass::applies(const Geometry &g, bool transposed) {
    return !transposed && g.sd <= 2 && g.G > 1 && g.G == g.IC && g.IC == g.OC && g.k_size() <= kMaxTaps;
}

// 1-D is a 2-D plane of one row. Only the top/left padding matters: the output size fixes the rest.
DepthwisePass::DepthwisePass(const Geometry &g, Dt dt, int threads) {
    slots_.resize(std::max(threads, 1));
    const bool two = g.sd == 2;
    DwShape s;
    s.N = g.N, s.C = g.IC;
    s.H = two ? g.src[0] : 1, s.W = g.src[two ? 1 : 0];
    s.Ho = two ? g.dst[0] : 1, s.Wo = g.dst[two ? 1 : 0];
    s.kh = two ? g.k[0] : 1, s.kw = g.k[two ? 1 : 0];
    s.sh = two ? g.stride[0] : 1, s.sw = g.stride[two ? 1 : 0];
    s.dh = two ? g.dil[0] : 1, s.dw = g.dil[two ? 1 : 0];
    s.ph = two ? g.pad_l[0] : 0, s.pw = g.pad_l[two ? 1 : 0];
    direct_ = DwDirect::handles(s, dt);
    if (direct_) dir_ = DwDirect(s, dt);
    else blk_ = DwBlocked(s, dt);
}

void DepthwisePass::run(const void *dy, const void *x, const void *w, void *dx, bool dx_bf16, float *dw, void *scratch) const {
    DwBlocked::Io io;
    io.dy = dy, io.x = x, io.w = w, io.dx = dx, io.dx_bf16 = dx_bf16, io.dw = dw;
    if (direct_) dir_.run(io, static_cast<uint8_t *>(scratch), slots_, cpu_has_avx512());
    else blk_.run(io, static_cast<uint8_t *>(scratch), slots_, cpu_has_avx512());
}

}  // namespace conv
