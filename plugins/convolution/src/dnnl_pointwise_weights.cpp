// WeightPass by one matmul: the weight gradient of a pointwise BF16 convolution (1x1, stride 1, no
// padding, no groups) where oneDNN runs its matmul on AMX tiles. There
//   diff_W (OC x IC) = diff_dst' (OC x N*P) . src'^T      (P: positions of a plane)
// with diff_dst' and src' the caller's (N, C, P) arrays regrouped as (C, N, P) - one copy of each
// (none at N = 1), after which each of a few tasks runs one single-threaded matmul over a block of
// OC rows of diff_W. Why: oneDNN 2.6's AMX convolution gradWeight runs these layers
// at 110-580 GFLOP/s on one thread, its AMX matmul at 1130-2000 (Xeon, session 58, oneDNN alone
// on untouched buffers: ResNet-50's 2048->512 7x7 layer 7.5 against 0.73 ms, its 1024->256 14x14
// one 3.7 against 0.46; the whole backward in the bench 6.6 -> 1.7 ms and 3.6 -> 1.5). FLOAT
// matmuls are no faster than the FLOAT convolution kernels, and without AMX it was not measured:
// both keep the convolution. The decomposition depends on the shape only (deterministic).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>
#include <string>

#include "dnnl_common.hpp"
#include "dnnl_pass.hpp"

namespace conv {

using namespace onednn;

namespace {

// Planes up to this many positions (measured up to ResNet-50's 56x56 layers, whole backward at 2
// threads: 64->256 4.3 -> 4.1 ms, 256->64 6.9 -> 4.6-5.1; larger planes copy more for the same work).
constexpr int64_t kMatmulMaxPlane = 4096;

bool pointwise(const Geometry &g) {
    if (g.G != 1 || g.k_size() != 1 || g.src != g.dst || g.src_used != g.src) return false;
    for (int i = 0; i < g.sd; ++i) {
        const auto d = static_cast<size_t>(i);
        if (g.stride[d] != 1 || g.pad_l[d] != 0 || g.pad_r[d] != 0) return false;
    }
    return true;
}

// Blocks of OC rows: 4 or 2 of at least 32 channels each, else 1. (Blocks of IC columns would make
// each block's diff_W a strided matrix, which oneDNN 2.6 leaves to its slower gemm:jit.)
int64_t matmul_blocks(int64_t c) {
    for (int64_t b = 4; b >= 2; b /= 2)
        if (c % b == 0 && c / b >= 32) return b;
    return 1;
}

// (N, C, P) into (C, N, P), 2-byte elements; channels in parallel.
void regroup(const void *from, void *to, int64_t N, int64_t C, int64_t P) {
    const auto *f = static_cast<const uint8_t *>(from);
    auto *t = static_cast<uint8_t *>(to);
    const auto row = static_cast<size_t>(P) * 2;
    const int64_t grain = std::max<int64_t>(1, (int64_t{64} << 10) / static_cast<int64_t>(row * static_cast<size_t>(N)));
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, C, grain), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t c = r.begin(); c < r.end(); ++c)
            for (int64_t n = 0; n < N; ++n)
                std::memcpy(t + static_cast<size_t>(c * N + n) * row, f + static_cast<size_t>(n * C + c) * row, row);
    });
}

}  // namespace

bool WeightPass::init_matmul(const Geometry &g, int64_t threads) {
    DnnlState &s = *s_;
    if (s.t != DnnlDt::bf16 || !pointwise(g) || g.dst_plane() > kMatmulMaxPlane) return false;
    const int64_t K = g.N * g.dst_plane();
    s.mm_blocks = matmul_blocks(g.OC);
    const int64_t M = g.OC / s.mm_blocks;
    // diff_dst' rows of K, src' rows of K read as K x IC columns, diff_W rows of IC (FLOAT)
    s.mm_a = Md({M, K}, DnnlDt::bf16, Dims{K, 1});
    s.mm_b = Md({K, g.IC}, DnnlDt::bf16, Dims{1, K});
    s.mm_c = Md({M, g.IC}, DnnlDt::f32, Dims{g.IC, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(s.mm_a, s.mm_b, s.mm_c), user_scratch(), cpu());
    const std::string impl = pd.impl_info_str();
    if (impl.find("amx") == std::string::npos) return false;
    s.by_matmul = true;
    s.impl = "matmul " + impl;
    s.mm.emplace(pd);
    s.scratch_md = bytes_md(pd.scratchpad_desc().get_size());
    s.set_slots(acp::SlotPool::slots(s.mm_blocks, threads));
    // [0] diff_dst', [1] src' (none at N = 1: the caller's arrays are already (C, P)), then a
    // scratchpad per slot
    const uint64_t regrouped = g.N > 1 ? 2 : 0;
    buffers_.push_back(static_cast<uint64_t>(g.OC * K) * regrouped);
    buffers_.push_back(static_cast<uint64_t>(g.IC * K) * regrouped);
    for (int64_t j = 0; j < s.slots.size(); ++j) buffers_.push_back(s.scratch_md.get_size());
    return true;
}

void WeightPass::run_matmul(const void *src, const void *diff_dst, void *out, void *const *bufs) const {
    const DnnlState &s = *s_;
    const Geometry &g = s.g;
    const int64_t P = g.dst_plane(), K = g.N * P;
    const void *a = diff_dst, *b = src;
    if (g.N > 1) {
        regroup(diff_dst, bufs[0], g.N, g.OC, P);
        regroup(src, bufs[1], g.N, g.IC, P);
        a = bufs[0], b = bufs[1];
    }
    each_task(s.mm_blocks, [&](dnnl::stream &st, int64_t k) {
        const acp::SlotPool::Lease slot(s.slots);
        SlotMemories &m = s.memories[slot.index()];
        // block k: OC rows k * M of diff_dst' and of diff_W
        const int64_t M = s.mm_a.dims()[0];
        const auto *ak = static_cast<const uint16_t *>(a) + k * M * K;
        float *ck = static_cast<float *>(out) + k * M * g.IC;
        ExecArgs args;
        args.add(DNNL_ARG_SRC, m.at(0, s.mm_a, ak)).add(DNNL_ARG_WEIGHTS, m.at(1, s.mm_b, b)).add(DNNL_ARG_DST, m.at(2, s.mm_c, ck));
        if (s.scratch_md.get_size() > 1) args.add(DNNL_ARG_SCRATCHPAD, m.at(3, s.scratch_md, bufs[2 + slot.index()]));
        args.execute(*s.mm, st);
        st.wait();
    });
}

}  // namespace conv
