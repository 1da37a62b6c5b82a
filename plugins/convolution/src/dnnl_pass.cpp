// oneDNN behind DataPass / WeightPass (see dnnl_pass.hpp for the decomposition and why).
#include "dnnl_pass.hpp"

#include <omp.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <array>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "blocked_store.hpp"

namespace conv {

namespace {

using dnnl::memory;
using Md = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using DnnlDt = dnnl::memory::data_type;

dnnl::engine &cpu() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

// oneDNN's Debian build threads with OpenMP; every call we make runs it on the calling thread only,
// so that its algorithms (and their reduction orders) never depend on a thread count.
struct OneThread {
    int prev;
    OneThread() : prev(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(prev); }
    OneThread(const OneThread &) = delete;
    OneThread &operator=(const OneThread &) = delete;
};

DnnlDt ddt(Dt d) { return d == Dt::BF16 ? DnnlDt::bf16 : DnnlDt::f32; }
size_t dsize(DnnlDt d) { return d == DnnlDt::f32 ? 4 : 2; }

Dims take(const Geometry &g, const std::array<int64_t, 3> &a, int64_t add = 0) {
    Dims d;
    for (int i = 0; i < g.sd; ++i) d.push_back(a[static_cast<size_t>(i)] + add);
    return d;
}

// n images of c channels, spatial extent `used` inside a dense array of extent `full` whose images
// hold c_all >= c channels (a channel slice when c_all > c).
Md plain(const Geometry &g, int64_t n, int64_t c, const std::array<int64_t, 3> &used, const std::array<int64_t, 3> &full,
         DnnlDt t, int64_t c_all = 0) {
    Dims d{n, c}, s(static_cast<size_t>(g.sd) + 2);
    for (int i = 0; i < g.sd; ++i) d.push_back(used[static_cast<size_t>(i)]);
    int64_t step = 1;
    for (int i = g.sd - 1; i >= 0; --i) {
        s[static_cast<size_t>(i) + 2] = step;
        step *= full[static_cast<size_t>(i)];
    }
    s[1] = step;
    s[0] = step * (c_all > 0 ? c_all : c);
    return Md(d, t, s);
}

Dims weight_dims(const Geometry &g) {
    Dims d;
    if (g.G > 1) d = {g.G, g.OC / g.G, g.IC / g.G};
    else d = {g.OC, g.IC};
    for (int i = 0; i < g.sd; ++i) d.push_back(g.k[static_cast<size_t>(i)]);
    return d;
}
Md weights_plain(const Geometry &g, DnnlDt t) {
    const Dims d = weight_dims(g);
    Dims s(d.size());
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 0;) {
        s[i] = step;
        step *= d[i];
    }
    return Md(d, t, s);
}
Md any(const Dims &d, DnnlDt t) { return Md(d, t, memory::format_tag::any); }

// The weights outweigh the activations (small planes, wide layers: ResNet-50's 14x14 and 7x7 3x3
// layers, its 7x7 pointwise one, VGG-19's 14x14): both passes then run by channel blocks.
bool weights_dominate(const Geometry &g) {
    const int64_t act_elems = g.N * (g.IC * g.src_plane() + g.OC * g.dst_plane());
    return g.weight_elems() * kWeightChunks > act_elems;
}

// FLOAT pointwise convolutions (1x1, stride 1, no padding) are plain GEMMs on NCHW: oneDNN's GEMM
// path there is as fast as its blocked kernels, and no activation needs a reorder. (BF16 is faster
// blocked.) Not where the passes run by channel blocks: there each block would copy its channel
// slice to a dense array for the GEMM, and the blocked kernels win (ResNet-50's 2048->512 7x7
// layer: 21 ms CPU blocked, 34 ms plain). Nor on small planes, where the weight GEMM's reduction
// over one image's positions is short: ResNet-50's 1024->256 14x14 layer took 5.2 ms plain, 4.2
// blocked (2 threads; its 56x56 ones 4.9 and 5.8 ms plain, 5.9 and 7.4 blocked). Measured on this
// machine; decided by the shape and dtype only.
constexpr int64_t kPlainMinPlane = 256;  // output positions
bool plain_layout(const Geometry &g, DnnlDt t) {
    if (t != DnnlDt::f32 || g.k_size() != 1 || weights_dominate(g) || g.dst_plane() < kPlainMinPlane) return false;
    for (int i = 0; i < g.sd; ++i)
        if (g.stride[static_cast<size_t>(i)] != 1 || g.pad_l[static_cast<size_t>(i)] != 0 || g.pad_r[static_cast<size_t>(i)] != 0)
            return false;
    return true;
}
// An activation descriptor for primitive creation: plain when plain_layout, else oneDNN's choice.
Md act(const Geometry &g, const Dims &d, DnnlDt t, bool plain) {
    if (!plain) return any(d, t);
    const auto tag = g.sd == 1 ? memory::format_tag::ncw : g.sd == 2 ? memory::format_tag::nchw : memory::format_tag::ncdhw;
    return Md(d, t, tag);
}
Dims src_dims(const Geometry &g, int64_t n) {
    Dims d{n, g.IC};
    for (int i = 0; i < g.sd; ++i) d.push_back(g.src_used[static_cast<size_t>(i)]);
    return d;
}
Dims dst_dims(const Geometry &g, int64_t n) {
    Dims d{n, g.OC};
    for (int i = 0; i < g.sd; ++i) d.push_back(g.dst[static_cast<size_t>(i)]);
    return d;
}

dnnl::primitive_attr user_scratch() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
}

struct Params {
    Dims strides, dil, pl, pr;
    explicit Params(const Geometry &g)
        : strides(take(g, g.stride)), dil(take(g, g.dil, -1)), pl(take(g, g.pad_l)), pr(take(g, g.pad_r)) {}
};

// weights: a fixed weights layout, or null for oneDNN's choice.
dnnl::convolution_forward::primitive_desc forward_pd(const Geometry &g, int64_t n, DnnlDt t, DnnlDt dst_t,
                                                     dnnl::prop_kind prop, const dnnl::primitive_attr &attr,
                                                     const Md *weights = nullptr) {
    const Params p(g);
    const bool pl = plain_layout(g, t);
    const dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), t, pl),
                                            weights ? *weights : any(weight_dims(g), t), act(g, dst_dims(g, n), dst_t, pl), p.strides, p.dil,
                                            p.pl, p.pr);
    return dnnl::convolution_forward::primitive_desc(d, attr, cpu());
}

// Dense BF16 images (N, C, spatial...; a channel slice of wider images too) into nC[spatial]16c:
// our own block_acts (blocked_store.hpp) instead of oneDNN's reorder, ~2x faster on BF16. (FLOAT:
// oneDNN's is as fast.) Its shape, when `from` -> `to` is that.
struct OwnBlock {
    int64_t N = 0, C = 0, plane = 0, src_image = 0, dst_image = 0;
};
std::optional<OwnBlock> own_block(const Md &from, const Md &to) {
    const Dims d = from.dims();
    if (from.data_type() != DnnlDt::bf16 || to.data_type() != DnnlDt::bf16 || d.size() < 3 || d.size() > 5 || to.dims() != d)
        return std::nullopt;
    const auto tag = d.size() == 3 ? memory::format_tag::nCw16c : d.size() == 4 ? memory::format_tag::nChw16c : memory::format_tag::nCdhw16c;
    const dnnl_memory_desc_t &m = from.data;
    if (to != Md(d, DnnlDt::bf16, tag) || m.format_kind != dnnl_blocked || m.format_desc.blocking.inner_nblks != 0 || m.offset0 != 0)
        return std::nullopt;
    const dnnl_dims_t &st = m.format_desc.blocking.strides;
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 1;) {  // channels and spatial dims dense, channel by channel
        if (m.padded_dims[i] != d[i] || (d[i] > 1 && st[i] != step)) return std::nullopt;
        if (i > 1) step *= d[i];
    }
    OwnBlock b;
    b.N = d[0], b.C = d[1], b.plane = step, b.src_image = st[0];
    b.dst_image = static_cast<int64_t>(to.get_size() / 2) / std::max<int64_t>(1, d[0]);
    return b;
}

// Dense weights (O, I, K...; a slice of input channels of wider ones too) into the tiles of the
// data passes (FLOAT ABcd16a16b, BF16 ABcd8a16b2a / BAcd8a16b2a): our own block_weights, 2-5x
// faster than oneDNN's reorder. Its shape, when `from` -> `to` is that.
struct OwnWeights {
    int64_t O = 0, I = 0, K = 1, o_stride = 0;
    WeightTiles tiles = WeightTiles::F32_16a16b;
    bool a_outer = true;
};
std::optional<OwnWeights> own_weights_in(const Md &from, const Md &to) {
    using T = memory::format_tag;
    const Dims d = from.dims();
    const dnnl_memory_desc_t &m = from.data;
    if (d.size() < 3 || d.size() > 5 || to.dims() != d || from.data_type() != to.data_type() || m.format_kind != dnnl_blocked ||
        m.format_desc.blocking.inner_nblks != 0 || m.offset0 != 0)
        return std::nullopt;
    const size_t r = d.size() - 3;  // rank 3, 4, 5
    OwnWeights w;
    if (from.data_type() == DnnlDt::f32 && to == Md(d, DnnlDt::f32, std::array{T::ABc16a16b, T::ABcd16a16b, T::ABcde16a16b}[r])) {
        w.tiles = WeightTiles::F32_16a16b;
    } else if (from.data_type() == DnnlDt::bf16 && to == Md(d, DnnlDt::bf16, std::array{T::ABc8a16b2a, T::ABcd8a16b2a, T::ABcde8a16b2a}[r])) {
        w.tiles = WeightTiles::BF16_8a16b2a;
    } else if (from.data_type() == DnnlDt::bf16 && to == Md(d, DnnlDt::bf16, std::array{T::BAc8a16b2a, T::BAcd8a16b2a, T::BAcde8a16b2a}[r])) {
        w.tiles = WeightTiles::BF16_8a16b2a;
        w.a_outer = false;
    } else {
        return std::nullopt;
    }
    const dnnl_dims_t &st = m.format_desc.blocking.strides;
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 1;) {  // inputs and kernel positions dense
        if (m.padded_dims[i] != d[i] || (d[i] > 1 && st[i] != step)) return std::nullopt;
        step *= d[i];
        if (i == 2) w.K = step;
    }
    if (m.padded_dims[0] != d[0]) return std::nullopt;
    w.O = d[0], w.I = d[1], w.o_stride = st[0];
    return w;
}

// A reorder between two layouts of the same tensor; none when they are the same. (prim is set
// whenever the layouts differ, also when our own block_acts / block_weights does the work.)
struct Reorder {
    std::optional<dnnl::reorder> prim;
    std::optional<OwnBlock> own;
    std::optional<OwnWeights> own_w;
    size_t scratch = 0;
    Reorder() = default;
    Reorder(const Md &from, const Md &to) {
        if (from == to) return;
        const dnnl::reorder::primitive_desc pd(cpu(), from, cpu(), to, user_scratch());
        scratch = pd.scratchpad_desc().get_size();
        prim.emplace(pd);
        own = own_block(from, to);
        own_w = own_weights_in(from, to);
    }
    void run(dnnl::stream &st, const memory &from, const memory &to, void *scratch_ptr, const Md &scratch_md) const {
        if (!prim) return;
        if (own) {
            st.wait();
            block_acts(from.get_data_handle(), own->N, own->C, own->plane, own->src_image, to.get_data_handle(), own->dst_image, 2);
            return;
        }
        if (own_w) {
            st.wait();
            block_weights(from.get_data_handle(), own_w->O, own_w->I, own_w->K, own_w->o_stride, own_w->tiles, own_w->a_outer,
                          to.get_data_handle());
            return;
        }
        std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        if (scratch) args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratch_md, cpu(), scratch_ptr));
        prim->execute(st, args);
    }
};

memory mem(const Md &md, const void *p) { return memory(md, cpu(), const_cast<void *>(p)); }
Md bytes_md(size_t n) { return Md({static_cast<int64_t>(std::max<size_t>(n, 1))}, DnnlDt::u8, memory::format_tag::x); }

// Layouts our own stores (blocked_store.hpp) read: a FLOAT result in nC[spatial]16c over the whole
// spatial extent, and FLOAT ungrouped weights in 16x16 tiles (o_inner: ABcd16b16a). Whatever else
// oneDNN picks goes through its reorder.
bool own_acts(const Geometry &g, const Md &blk, bool full_extent) {
    const auto tag = g.sd == 1 ? memory::format_tag::nCw16c : g.sd == 2 ? memory::format_tag::nChw16c : memory::format_tag::nCdhw16c;
    return full_extent && blk.data_type() == DnnlDt::f32 && blk == Md(blk.dims(), DnnlDt::f32, tag);
}
// 1: ABcd16b16a (input-major tiles), 0: ABcd16a16b, -1: neither
int own_weights(const Geometry &g, const Md &blk) {
    using T = memory::format_tag;
    if (g.G != 1 || blk.data_type() != DnnlDt::f32) return -1;
    const T o_inner = g.sd == 1 ? T::ABc16b16a : g.sd == 2 ? T::ABcd16b16a : T::ABcde16b16a;
    const T i_inner = g.sd == 1 ? T::ABc16a16b : g.sd == 2 ? T::ABcd16a16b : T::ABcde16a16b;
    if (blk == Md(blk.dims(), DnnlDt::f32, o_inner)) return 1;
    if (blk == Md(blk.dims(), DnnlDt::f32, i_inner)) return 0;
    return -1;
}

}  // namespace

struct DnnlState {
    Geometry g;
    DnnlDt t = DnnlDt::f32;
    std::string impl;
    // chunks of the minibatch (both passes): first image and size of each, in order
    std::vector<int64_t> chunk_start, chunk_size;
    // ---- DataPass ----
    DataPass::Kind kind = DataPass::Kind::Forward;
    struct DataVariant {
        int64_t n = 0;
        std::optional<dnnl::primitive> conv;
        Md a_user, a_blk, c_user, c_blk;
        Reorder a_in, c_out;
        bool c_own = false;  // c_blk stored by unblock_acts instead of c_out
    };
    std::vector<DataVariant> dvars;  // by chunk size: [0] the larger
    std::vector<size_t> a_blk_at;    // per chunk: byte offset of its blocked operand in buffer 1
    bool uniform_blk = false;        // the blocked operand is image after image, one layout per image
    Md w_user, w_blk, scratch_md;
    Reorder w_in;
    size_t a_image = 0, c_image = 0;  // bytes / elements per image of the user arrays
    int64_t c_channels = 0, c_plane = 0;  // result channels of one call (all, or one block's) and plane
    const DataVariant &dvar(size_t k) const { return dvars[chunk_size[k] == dvars[0].n ? 0 : 1]; }
    // By result-channel blocks (dvars[0] is the one block's primitive over the whole minibatch):
    // the operand blocked once image by image (a_one_in), each block reorders its slice of the
    // weights (w_in from w_user, at w_step bytes per block) and writes its channels of the result
    // (c_user, at c_step floats per block).
    bool d_by_channel = false;
    int64_t d_blocks = 0;
    Md a_one_user, a_one_blk;
    Reorder a_one_in;
    size_t w_step = 0, c_step = 0;
    // ---- WeightPass ----
    struct Variant {
        int64_t n = 0;
        std::optional<dnnl::convolution_backward_weights> prim;
        Md src_user, src_blk, ddst_user, ddst_blk;
        Reorder src_in, ddst_in;
    };
    std::vector<Variant> variants;  // by chunk size: [0] the larger
    Md dw_blk;
    Reorder dw_out;
    int dw_own = -1;  // own_weights(dw_blk): stored by unblock_weights instead of dw_out
    size_t src_image = 0, ddst_image = 0, dw_elems = 0;
    // By output-channel blocks (variants[0] is the one block's primitive over the whole minibatch):
    // src blocked once (image by image when the layout is image after image), each block reorders
    // its channel slice of diff_dst and writes its rows of diff_W.
    bool by_channel = false;
    int64_t blocks = 0, block_oc = 0;
    Md src_one_user, src_one_blk;  // one image, for the per-image src reorder (src_one_in)
    Reorder src_one_in;
    bool src_per_image = false;
};

namespace {

// `chunks` near-equal chunks of the minibatch, the larger first.
void split(DnnlState &s, int64_t n, int64_t chunks) {
    const int64_t base = n / chunks, rem = n % chunks;
    int64_t start = 0;
    for (int64_t k = 0; k < chunks; ++k) {
        s.chunk_start.push_back(start);
        s.chunk_size.push_back(base + (k < rem ? 1 : 0));
        start += s.chunk_size.back();
    }
}

// Images per data-pass call: each call streams all the weights through the cache, so on small
// planes (7x7: 3x3 512x512 weights for 49 positions) one image per call is dominated by that.
// Several images per call there (measured: -20 % CPU time on ResNet-50's 7x7 3x3 layer, neutral on
// 14x14 and larger). Decided by the shape only.
inline constexpr int64_t kMinCallPositions = 196;
int64_t data_images_per_call(const Geometry &g) {
    const int64_t plane = std::max<int64_t>(1, std::max(g.src_plane(), g.dst_plane()));
    return (kMinCallPositions + plane - 1) / plane;
}

// The widened layout of one image's blocked operand: the same tensor for n images.
Md widen(const Md &one, int64_t n) {
    dnnl_memory_desc_t c = one.data;
    c.dims[0] = n;
    c.padded_dims[0] = n;
    return Md(c);
}

// execute() arguments of a data pass: operand a and result c are src/dst of a forward pass and
// diff_dst/diff_src of a data-gradient pass; the scratchpad only when oneDNN wants one.
std::unordered_map<int, memory> data_args(const DnnlState &s, const memory &a, const memory &weights, const memory &c,
                                          void *scratch) {
    const bool fwd = s.kind == DataPass::Kind::Forward;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_WEIGHTS, weights}, {fwd ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, a}, {fwd ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, c}};
    if (s.scratch_md.get_size() > 1) args.emplace(DNNL_ARG_SCRATCHPAD, mem(s.scratch_md, scratch));
    return args;
}

}  // namespace

namespace {

// How many blocks of c channels a pass split by channels takes, or 0: whole blocks of oneDNN's
// vector blocking (16 channels) each; up to 16 for spatial kernels, up to 4 for 1x1 ones (a GEMM
// per block: thinner ones ran slower). dInput and dWeight are two nodes on the same threads, each
// a loop over its blocks: the finer the blocks, the shorter one thread waits at the end for the
// other's last block (16 blocks instead of 4: VGG-19's 14x14 and ResNet-50's 7x7 3x3 layers -7 to
// -9 %; 16 of 16 channels instead of 8 of 32: ResNet-50's 256-channel 14x14 layer -2 % in BF16,
// unchanged in FLOAT; measured on this machine). Decided by the shape only.
int64_t channel_blocks(const Geometry &g, int64_t c) {
    for (int64_t b = g.k_size() > 1 ? 16 : 4; b >= 2; b /= 2)
        if (c % b == 0 && (c / b) % 16 == 0) return b;
    return 0;
}

// Result-channel blocks of a data pass, or 0 for the split by images. Where the weights outweigh
// the activations (the 14x14 and 7x7 layers), each block is one call over the whole minibatch with
// its slice of the weights: every weight is streamed once (not once per image or chunk), and the
// weights' reorder is spread over the blocks instead of preceding them.
int64_t data_channel_blocks(const Geometry &g, DataPass::Kind kind) {
    if (g.G != 1 || !weights_dominate(g)) return 0;
    return channel_blocks(g, kind == DataPass::Kind::Forward ? g.OC : g.IC);
}

// Sets up the pass by result-channel blocks when the shape calls for it and the blocked operand is
// image after image (so that it is blocked image by image, in parallel, without scratch).
bool init_data_by_channel(DnnlState &s, std::vector<uint64_t> &buffers) {
    const Geometry &g = s.g;
    const bool fwd = s.kind == DataPass::Kind::Forward;
    const int64_t blocks = data_channel_blocks(g, s.kind);
    if (blocks == 0) return false;
    const int64_t cb = (fwd ? g.OC : g.IC) / blocks;
    Geometry gb = g;
    (fwd ? gb.OC : gb.IC) = cb;
    const auto attr = user_scratch();
    const Params p(g);
    const bool pl = plain_layout(g, s.t);
    DnnlState::DataVariant v;
    v.n = g.N;
    size_t scratch = 0;
    if (fwd) {
        const auto pd = forward_pd(gb, g.N, s.t, DnnlDt::f32, dnnl::prop_kind::forward_inference, attr);
        v.a_user = plain(g, g.N, g.IC, g.src_used, g.src, s.t);
        v.a_blk = pd.src_desc();
        v.c_user = plain(g, g.N, cb, g.dst, g.dst, DnnlDt::f32, g.OC);
        v.c_blk = pd.dst_desc();
        s.w_blk = pd.weights_desc();
        s.impl = pd.impl_info_str();
        scratch = pd.scratchpad_desc().get_size();
        v.conv.emplace(dnnl::convolution_forward(pd));
    } else {
        const auto hint = forward_pd(gb, g.N, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, act(gb, src_dims(gb, g.N), DnnlDt::f32, pl),
                                                      any(weight_dims(gb), s.t), act(gb, dst_dims(gb, g.N), s.t, pl), p.strides,
                                                      p.dil, p.pl, p.pr);
        const dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu(), hint);
        v.a_user = plain(g, g.N, g.OC, g.dst, g.dst, s.t);
        v.a_blk = pd.diff_dst_desc();
        v.c_user = plain(g, g.N, cb, g.src_used, g.src, DnnlDt::f32, g.IC);
        v.c_blk = pd.diff_src_desc();
        s.w_blk = pd.weights_desc();
        s.impl = pd.impl_info_str();
        scratch = pd.scratchpad_desc().get_size();
        v.conv.emplace(dnnl::convolution_backward_data(pd));
    }
    v.a_in = Reorder(v.a_user, v.a_blk);
    v.c_out = Reorder(v.c_blk, v.c_user);
    v.c_own = v.c_out.prim && own_acts(g, v.c_blk, fwd || g.src_used == g.src);
    s.c_channels = cb;
    // The operand image by image: the N-image layout must be the one-image layout repeated.
    if (v.a_in.prim) {
        s.a_one_user = fwd ? plain(g, 1, g.IC, g.src_used, g.src, s.t) : plain(g, 1, g.OC, g.dst, g.dst, s.t);
        s.a_one_blk = widen(v.a_blk, 1);
        if (widen(s.a_one_blk, g.N) != v.a_blk || s.a_one_blk.get_size() * static_cast<size_t>(g.N) != v.a_blk.get_size())
            return false;
        s.a_one_in = Reorder(s.a_one_user, s.a_one_blk);
        if (s.a_one_in.scratch) return false;
    }
    // This block's slice of the plain (OC, IC, K...) weights: its rows (forward) or columns.
    const Dims full = weight_dims(g);
    Dims strides(full.size());
    int64_t step = 1;
    for (size_t i = full.size(); i-- > 0;) {
        strides[i] = step;
        step *= full[i];
    }
    s.w_user = Md(weight_dims(gb), s.t, strides);
    s.w_in = Reorder(s.w_user, s.w_blk);
    const int64_t k_elems = g.k_size();
    s.w_step = static_cast<size_t>(fwd ? cb * g.IC * k_elems : cb * k_elems) * dsize(s.t);
    s.c_step = static_cast<size_t>(cb * (fwd ? g.dst_plane() : g.src_plane()));
    scratch = std::max({scratch, v.c_out.scratch, s.w_in.scratch});
    s.scratch_md = bytes_md(scratch);
    s.d_by_channel = true;
    s.d_blocks = blocks;
    s.uniform_blk = v.a_in.prim.has_value();
    s.chunk_start = {0};
    s.chunk_size = {g.N};
    s.a_blk_at = {0};
    // [0] none, [1] the blocked operand (all images), then per block: blocked weights, blocked
    // result, scratchpad
    buffers.push_back(0);
    buffers.push_back(v.a_in.prim ? v.a_blk.get_size() : 0);
    for (int64_t b = 0; b < blocks; ++b) {
        buffers.push_back(s.w_in.prim ? s.w_blk.get_size() : 0);
        buffers.push_back(v.c_out.prim ? v.c_blk.get_size() : 0);
        buffers.push_back(scratch);
    }
    s.dvars.push_back(std::move(v));
    return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

DataPass::DataPass(const Geometry &g, Kind kind, Dt in_dt) : s_(std::make_unique<DnnlState>()) {
    OneThread one;
    DnnlState &s = *s_;
    s.g = g;
    s.kind = kind;
    s.t = ddt(in_dt);
    const bool fwd = kind == Kind::Forward;
    s.a_image = static_cast<size_t>(fwd ? g.IC * g.src_plane() : g.OC * g.dst_plane()) * dsize(s.t);
    s.c_image = static_cast<size_t>(fwd ? g.OC * g.dst_plane() : g.IC * g.src_plane());
    s.c_channels = fwd ? g.OC : g.IC;
    s.c_plane = fwd ? g.dst_plane() : g.src_plane();
    if (init_data_by_channel(s, buffers_)) return;
    s.c_channels = fwd ? g.OC : g.IC;
    const int64_t per_call = std::min(g.N, data_images_per_call(g));
    split(s, g.N, (g.N + per_call - 1) / per_call);
    const auto attr = user_scratch();
    size_t scratch = 0;
    for (const int64_t n : {s.chunk_size.front(), s.chunk_size.back()}) {
        if (!s.dvars.empty() && s.dvars.front().n == n) break;
        DnnlState::DataVariant v;
        v.n = n;
        // The second chunk size must read the first one's weights layout: they are reordered once.
        const bool first = s.dvars.empty();
        if (fwd) {
            const auto pd = forward_pd(g, n, s.t, DnnlDt::f32, dnnl::prop_kind::forward_inference, attr,
                                       first ? nullptr : &s.w_blk);
            v.a_user = plain(g, n, g.IC, g.src_used, g.src, s.t);
            v.a_blk = pd.src_desc();
            v.c_user = plain(g, n, g.OC, g.dst, g.dst, DnnlDt::f32);
            v.c_blk = pd.dst_desc();
            if (first) {
                s.w_blk = pd.weights_desc();
                s.impl = pd.impl_info_str();
            }
            scratch = std::max(scratch, pd.scratchpad_desc().get_size());
            v.conv.emplace(dnnl::convolution_forward(pd));
        } else {
            const auto hint = forward_pd(g, n, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
            const Params p(g);
            const bool pl = plain_layout(g, s.t);
            const dnnl::convolution_backward_data::desc d(
                dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), DnnlDt::f32, pl),
                first ? any(weight_dims(g), s.t) : s.w_blk, act(g, dst_dims(g, n), s.t, pl), p.strides, p.dil, p.pl, p.pr);
            const dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu(), hint);
            v.a_user = plain(g, n, g.OC, g.dst, g.dst, s.t);
            v.a_blk = pd.diff_dst_desc();
            v.c_user = plain(g, n, g.IC, g.src_used, g.src, DnnlDt::f32);
            v.c_blk = pd.diff_src_desc();
            if (first) {
                s.w_blk = pd.weights_desc();
                s.impl = pd.impl_info_str();
            }
            scratch = std::max(scratch, pd.scratchpad_desc().get_size());
            v.conv.emplace(dnnl::convolution_backward_data(pd));
        }
        v.a_in = Reorder(v.a_user, v.a_blk);
        v.c_out = Reorder(v.c_blk, v.c_user);
        v.c_own = v.c_out.prim && own_acts(g, v.c_blk, fwd || g.src_used == g.src);
        scratch = std::max({scratch, v.a_in.scratch, v.c_out.scratch});
        s.dvars.push_back(std::move(v));
    }
    s.w_user = weights_plain(g, s.t);
    s.w_in = Reorder(s.w_user, s.w_blk);
    scratch = std::max(scratch, s.w_in.scratch);
    s.scratch_md = bytes_md(scratch);
    // Every variant's blocked operand the widened one-image layout: then buffer 1 holds image after
    // image, and the weight pass may read any chunk of it.
    const DnnlState::DataVariant &v0 = s.dvars.front();
    const size_t img = v0.a_blk.get_size() / static_cast<size_t>(v0.n);
    s.uniform_blk = v0.a_in.prim.has_value();
    for (const DnnlState::DataVariant &v : s.dvars)
        s.uniform_blk = s.uniform_blk && v.a_in.prim && v.a_blk.get_size() == img * static_cast<size_t>(v.n) &&
                        widen(v0.a_blk, v.n) == v.a_blk && widen(v0.a_blk, 1).get_size() == img;
    // [0] blocked weights, [1] the blocked operand of all chunks, then per chunk: blocked result,
    // scratchpad
    uint64_t blk = 0;
    for (size_t k = 0; k < s.chunk_size.size(); ++k) {
        s.a_blk_at.push_back(blk);
        if (s.dvar(k).a_in.prim) blk += s.dvar(k).a_blk.get_size();
    }
    buffers_.push_back(s.w_in.prim ? s.w_blk.get_size() : 0);
    buffers_.push_back(blk);
    for (size_t k = 0; k < s.chunk_size.size(); ++k) {
        buffers_.push_back(s.dvar(k).c_out.prim ? s.dvar(k).c_blk.get_size() : 0);
        buffers_.push_back(scratch);
    }
}

DataPass::~DataPass() = default;
const char *DataPass::impl() const { return s_->impl.c_str(); }
int64_t DataPass::channel_blocks() const { return s_->d_blocks; }

int64_t DataPass::image_elems() const { return static_cast<int64_t>(s_->c_image); }

bool DataPass::blocks_operand() const { return s_->dvars.front().a_in.prim.has_value(); }

void DataPass::prepare(const void *a, void *const *bufs) const {
    const DnnlState &s = *s_;
    if (s.d_by_channel) {
        block_images(a, bufs);
        return;
    }
    const auto chunks = static_cast<int64_t>(s.chunk_size.size());
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) {
            const auto ku = static_cast<size_t>(k);
            const DnnlState::DataVariant &v = s.dvar(ku);
            const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
            v.a_in.run(st, mem(v.a_user, static_cast<const uint8_t *>(a) + n0 * s.a_image),
                       mem(v.a_blk, static_cast<uint8_t *>(bufs[1]) + s.a_blk_at[ku]), bufs[3 + 2 * k], s.scratch_md);
        }
        st.wait();
    }, tbb::simple_partitioner());
}

bool DataPass::rounds_output() const {
    return std::all_of(s_->dvars.begin(), s_->dvars.end(), [](const DnnlState::DataVariant &v) { return v.c_own; });
}

// The blocked result to the caller's layout: our own transpose (and rounding) when the plan chose
// it, else oneDNN's reorder.
static void store_result(dnnl::stream &st, const DnnlState &s, const DnnlState::DataVariant &v, const memory &c_blk,
                  const memory &c_user, const void *blk, uint8_t *c_at, OutDt out_dt, void *scratch) {
    if (v.c_own) {
        st.wait();
        const auto blk_image = static_cast<int64_t>(v.c_blk.get_size() / sizeof(float)) / v.n;
        unblock_acts(static_cast<const float *>(blk), v.n, s.c_channels, s.c_plane, blk_image, c_at,
                     static_cast<int64_t>(s.c_image), out_dt);
    } else {
        v.c_out.run(st, c_blk, c_user, scratch, s.scratch_md);
    }
}

void DataPass::run(const void *a, const void *w, void *out, OutDt out_dt, void *const *bufs,
                   const std::function<void(int64_t, const float *)> &done, bool prepared) const {
    const DnnlState &s = *s_;
    if (out_dt != OutDt::F32 && !rounds_output()) throw std::logic_error("DataPass: a rounded result from a layout not stored by us");
    if (s.d_by_channel) {
        run_by_channel(a, w, out, out_dt, bufs, done, prepared);
        return;
    }
    auto *out_b = static_cast<uint8_t *>(out);
    const size_t es = out_size(out_dt);
    {
        OneThread one;
        dnnl::stream st(cpu());
        s.w_in.run(st, mem(s.w_user, w), mem(s.w_blk, bufs[0]), bufs[3], s.scratch_md);
        st.wait();
    }
    const memory weights = mem(s.w_in.prim ? s.w_blk : s.w_user, s.w_in.prim ? bufs[0] : w);
    const auto chunks = static_cast<int64_t>(s.chunk_size.size());
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) {
            const auto ku = static_cast<size_t>(k);
            const DnnlState::DataVariant &v = s.dvar(ku);
            const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
            // b[0]: this chunk's blocked operand, b[1]: blocked result, b[2]: scratchpad
            void *const b[3] = {static_cast<uint8_t *>(bufs[1]) + s.a_blk_at[ku], bufs[2 + 2 * k], bufs[3 + 2 * k]};
            const memory a_user = mem(v.a_user, static_cast<const uint8_t *>(a) + n0 * s.a_image);
            uint8_t *const c_at = out_b + n0 * s.c_image * es;
            const memory c_user = mem(v.c_user, c_at);
            const memory a_blk = v.a_in.prim ? mem(v.a_blk, b[0]) : a_user;
            const memory c_blk = v.c_out.prim ? mem(v.c_blk, b[1]) : c_user;
            if (!prepared) v.a_in.run(st, a_user, a_blk, b[2], s.scratch_md);
            v.conv->execute(st, data_args(s, a_blk, weights, c_blk, b[2]));
            store_result(st, s, v, c_blk, c_user, b[1], c_at, out_dt, b[2]);
            if (done && out_dt == OutDt::F32) {
                st.wait();
                for (int64_t i = 0; i < v.n; ++i) {
                    const auto n = static_cast<int64_t>(n0) + i;
                    done(n, static_cast<const float *>(out) + static_cast<size_t>(n) * s.c_image);
                }
            }
        }
        st.wait();
    }, tbb::simple_partitioner());
}

// The operand into the blocked buffer 1, image by image in parallel (pass by channel blocks).
void DataPass::block_images(const void *a, void *const *bufs) const {
    const DnnlState &s = *s_;
    if (!s.a_one_in.prim) return;
    const size_t img_blk = s.a_one_blk.get_size();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t n = r.begin(); n < r.end(); ++n) {
            const auto nu = static_cast<size_t>(n);
            s.a_one_in.run(st, mem(s.a_one_user, static_cast<const uint8_t *>(a) + nu * s.a_image),
                           mem(s.a_one_blk, static_cast<uint8_t *>(bufs[1]) + nu * img_blk), nullptr, s.scratch_md);
        }
        st.wait();
    }, tbb::simple_partitioner());
}

void DataPass::run_by_channel(const void *a, const void *w, void *out, OutDt out_dt, void *const *bufs,
                              const std::function<void(int64_t, const float *)> &done, bool prepared) const {
    const DnnlState &s = *s_;
    const DnnlState::DataVariant &v = s.dvars[0];
    if (!prepared) block_images(a, bufs);
    const memory a_mem = v.a_in.prim ? mem(v.a_blk, bufs[1]) : mem(v.a_user, a);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.d_blocks, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) {
            void *const *b = bufs + 2 + 3 * k;  // blocked weights, blocked result, scratchpad
            const auto ku = static_cast<size_t>(k);
            const memory w_user = mem(s.w_user, static_cast<const uint8_t *>(w) + ku * s.w_step);
            const memory weights = s.w_in.prim ? mem(s.w_blk, b[0]) : w_user;
            s.w_in.run(st, w_user, weights, b[2], s.scratch_md);
            uint8_t *const c_at = static_cast<uint8_t *>(out) + ku * s.c_step * out_size(out_dt);
            const memory c_user = mem(v.c_user, c_at);
            const memory c_blk = v.c_out.prim ? mem(v.c_blk, b[1]) : c_user;
            v.conv->execute(st, data_args(s, a_mem, weights, c_blk, b[2]));
            store_result(st, s, v, c_blk, c_user, b[1], c_at, out_dt, b[2]);
        }
        st.wait();
    }, tbb::simple_partitioner());
    if (done && out_dt == OutDt::F32)  // every block has written its channels: each image is complete
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
            for (int64_t n = r.begin(); n < r.end(); ++n) done(n, static_cast<const float *>(out) + static_cast<size_t>(n) * s.c_image);
        }, tbb::simple_partitioner());
}

// ---------------------------------------------------------------------------------------------

namespace {

// Output-channel blocks of the weight pass, or 0 for the split of the minibatch. By channels every
// block is one call over the whole minibatch: no partial gradients, no sum, and each block's rows
// of the weights leave in place. Taken where the weights outweigh the activations (small planes,
// wide layers: ResNet-50's 14x14 and 7x7 3x3 layers, -20 % CPU time on the 7x7 one), where the
// batch split's full-size partials, their sum and their reorder are most of the traffic; on large
// planes each block re-reading all of src costs more (measured on this machine: ResNet-50's 56x56
// pointwise layers lose 10-30 % by channels). Blocks as channel_blocks says.
int64_t weight_channel_blocks(const Geometry &g) {
    if (g.G != 1 || !weights_dominate(g)) return 0;
    return channel_blocks(g, g.OC);
}

}  // namespace

WeightPass::WeightPass(const Geometry &g, Dt in_dt) : s_(std::make_unique<DnnlState>()) {
    OneThread one;
    DnnlState &s = *s_;
    s.g = g;
    s.t = ddt(in_dt);
    s.src_image = static_cast<size_t>(g.IC * g.src_plane()) * dsize(s.t);
    s.ddst_image = static_cast<size_t>(g.OC * g.dst_plane()) * dsize(s.t);
    const auto attr = user_scratch();
    const Params p(g);
    const bool pl = plain_layout(g, s.t);
    size_t scratch = 0;
    s.blocks = weight_channel_blocks(g);
    if (s.blocks > 0) {
        s.by_channel = true;
        s.block_oc = g.OC / s.blocks;
        Geometry gb = g;
        gb.OC = s.block_oc;
        DnnlState::Variant v;
        v.n = g.N;
        const auto hint = forward_pd(gb, g.N, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, act(gb, src_dims(gb, g.N), s.t, pl),
                                                         any(weight_dims(gb), DnnlDt::f32), act(gb, dst_dims(gb, g.N), s.t, pl),
                                                         p.strides, p.dil, p.pl, p.pr);
        const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, cpu(), hint);
        s.dw_blk = pd.diff_weights_desc();
        s.impl = pd.impl_info_str();
        v.src_user = plain(g, g.N, g.IC, g.src_used, g.src, s.t);
        v.src_blk = pd.src_desc();
        // one block's channels of diff_dst, inside the caller's full array (offset per block)
        v.ddst_user = plain(g, g.N, s.block_oc, g.dst, g.dst, s.t, g.OC);
        v.ddst_blk = pd.diff_dst_desc();
        v.src_in = Reorder(v.src_user, v.src_blk);
        v.ddst_in = Reorder(v.ddst_user, v.ddst_blk);
        s.dw_out = Reorder(s.dw_blk, weights_plain(gb, DnnlDt::f32));
        if (s.dw_out.prim) s.dw_own = own_weights(g, s.dw_blk);
        scratch = std::max({pd.scratchpad_desc().get_size(), v.ddst_in.scratch, s.dw_out.scratch});
        // src blocked image by image, in parallel, when the layout is image after image
        if (v.src_in.prim) {
            s.src_one_user = plain(g, 1, g.IC, g.src_used, g.src, s.t);
            s.src_one_blk = widen(v.src_blk, 1);
            s.src_per_image = widen(s.src_one_blk, g.N) == v.src_blk &&
                              s.src_one_blk.get_size() * static_cast<size_t>(g.N) == v.src_blk.get_size();
            if (s.src_per_image) s.src_one_in = Reorder(s.src_one_user, s.src_one_blk);
            if (s.src_one_in.scratch) {  // per-image reorders run side by side: only scratch-free ones
                s.src_per_image = false;
                s.src_one_in = Reorder();
            }
            scratch = std::max({scratch, v.src_in.scratch, s.src_one_in.scratch});
        }
        v.prim.emplace(pd);
        s.variants.push_back(std::move(v));
        s.scratch_md = bytes_md(scratch);
        s.dw_elems = s.dw_blk.get_size() / sizeof(float);
        // [0] blocked src (all images), then per block: blocked diff_dst, blocked diff_W, scratchpad
        buffers_.push_back(s.variants[0].src_in.prim ? s.variants[0].src_blk.get_size() : 0);
        for (int64_t b = 0; b < s.blocks; ++b) {
            buffers_.push_back(s.variants[0].ddst_in.prim ? s.variants[0].ddst_blk.get_size() : 0);
            buffers_.push_back(s.dw_out.prim ? s.dw_blk.get_size() : 0);
            buffers_.push_back(scratch);
        }
        return;
    }
    // Fewer partials when the weights are large next to the activations (their sum costs memory
    // traffic); decided by the shape only, never by the thread count.
    int64_t chunks = std::min(g.N, weights_dominate(g) ? int64_t{2} : kWeightChunks);
    split(s, g.N, chunks);
    for (const int64_t n : {s.chunk_size.front(), s.chunk_size.back()}) {
        if (!s.variants.empty() && s.variants.front().n == n) break;
        DnnlState::Variant v;
        v.n = n;
        const auto hint = forward_pd(g, n, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        // The second chunk size must produce partials in the first one's layout: they are summed.
        const Md dw = s.variants.empty() ? any(weight_dims(g), DnnlDt::f32) : s.dw_blk;
        const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), s.t, pl),
                                                         dw, act(g, dst_dims(g, n), s.t, pl), p.strides, p.dil, p.pl, p.pr);
        const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, cpu(), hint);
        if (s.variants.empty()) {
            s.dw_blk = pd.diff_weights_desc();
            s.impl = pd.impl_info_str();
        }
        v.src_user = plain(g, n, g.IC, g.src_used, g.src, s.t);
        v.src_blk = pd.src_desc();
        v.ddst_user = plain(g, n, g.OC, g.dst, g.dst, s.t);
        v.ddst_blk = pd.diff_dst_desc();
        v.src_in = Reorder(v.src_user, v.src_blk);
        v.ddst_in = Reorder(v.ddst_user, v.ddst_blk);
        scratch = std::max({scratch, pd.scratchpad_desc().get_size(), v.src_in.scratch, v.ddst_in.scratch});
        v.prim.emplace(pd);
        s.variants.push_back(std::move(v));
    }
    s.dw_out = Reorder(s.dw_blk, weights_plain(g, DnnlDt::f32));
    if (s.dw_out.prim) s.dw_own = own_weights(g, s.dw_blk);
    scratch = std::max(scratch, s.dw_out.scratch);
    s.scratch_md = bytes_md(scratch);
    s.dw_elems = s.dw_blk.get_size() / sizeof(float);
    // per chunk: blocked src, blocked diff_dst, partial diff weights (FLOAT, blocked), scratchpad
    for (int64_t k = 0; k < chunks; ++k) {
        const DnnlState::Variant &v = s.variants[s.chunk_size[static_cast<size_t>(k)] == s.variants[0].n ? 0 : 1];
        buffers_.push_back(v.src_in.prim ? v.src_blk.get_size() : 0);
        buffers_.push_back(v.ddst_in.prim ? v.ddst_blk.get_size() : 0);
        buffers_.push_back(s.dw_blk.get_size());
        buffers_.push_back(scratch);
    }
}

WeightPass::~WeightPass() = default;
const char *WeightPass::impl() const { return s_->impl.c_str(); }
bool WeightPass::rounds_output() const { return s_->dw_own >= 0; }
int64_t WeightPass::channel_blocks() const { return s_->blocks; }

bool WeightPass::can_share(const DataPass &d, bool diff_dst) const {
    const DnnlState &ds = *d.s_;
    if (!ds.uniform_blk || ds.t != s_->t) return false;
    const Md one = widen(ds.dvars.front().a_blk, 1);  // the one-image layout, widened to each chunk
    if (s_->by_channel) {  // only src is read whole; diff_dst is read by channel slices
        const DnnlState::Variant &v = s_->variants[0];
        return !diff_dst && v.src_in.prim && widen(one, v.n) == v.src_blk &&
               v.src_blk.get_size() == one.get_size() * static_cast<size_t>(v.n);
    }
    for (const DnnlState::Variant &v : s_->variants) {
        if (!(diff_dst ? v.ddst_in.prim : v.src_in.prim)) return false;
        const Md want = widen(one, v.n);
        if (want != (diff_dst ? v.ddst_blk : v.src_blk) || want.get_size() != one.get_size() * static_cast<size_t>(v.n))
            return false;
    }
    return true;
}

void WeightPass::drop_blocked_buffers(bool diff_dst) {
    if (s_->by_channel) {
        if (!diff_dst) buffers_[0] = 0;
        return;
    }
    for (size_t k = 0; k < buffers_.size(); k += 4) buffers_[k + (diff_dst ? 1 : 0)] = 0;
}

void WeightPass::run(const void *src, const void *diff_dst, void *out, OutDt out_dt, void *const *bufs, const void *pre_src,
                     const void *pre_diff_dst) const {
    const DnnlState &s = *s_;
    if (out_dt != OutDt::F32 && !rounds_output()) throw std::logic_error("WeightPass: a rounded result from a layout not stored by us");
    if (s.by_channel) {
        run_by_channel(src, diff_dst, out, out_dt, bufs, pre_src);
        return;
    }
    const auto chunks = static_cast<int64_t>(s.chunk_size.size());
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) {
            const auto ku = static_cast<size_t>(k);
            const DnnlState::Variant &v = s.variants[s.chunk_size[ku] == s.variants[0].n ? 0 : 1];
            void *const *b = bufs + 4 * k;
            const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
            const memory src_user = mem(v.src_user, static_cast<const uint8_t *>(src) + n0 * s.src_image);
            const memory ddst_user = mem(v.ddst_user, static_cast<const uint8_t *>(diff_dst) + n0 * s.ddst_image);
            // a prepared operand: this chunk's images of the shared blocked copy
            const size_t src_img = v.src_blk.get_size() / static_cast<size_t>(v.n);
            const size_t ddst_img = v.ddst_blk.get_size() / static_cast<size_t>(v.n);
            const memory src_blk = pre_src ? mem(v.src_blk, static_cast<const uint8_t *>(pre_src) + n0 * src_img)
                                   : v.src_in.prim ? mem(v.src_blk, b[0]) : src_user;
            const memory ddst_blk = pre_diff_dst ? mem(v.ddst_blk, static_cast<const uint8_t *>(pre_diff_dst) + n0 * ddst_img)
                                    : v.ddst_in.prim ? mem(v.ddst_blk, b[1]) : ddst_user;
            if (!pre_src) v.src_in.run(st, src_user, src_blk, b[3], s.scratch_md);
            if (!pre_diff_dst) v.ddst_in.run(st, ddst_user, ddst_blk, b[3], s.scratch_md);
            std::unordered_map<int, memory> args{
                {DNNL_ARG_SRC, src_blk}, {DNNL_ARG_DIFF_DST, ddst_blk}, {DNNL_ARG_DIFF_WEIGHTS, mem(s.dw_blk, b[2])}};
            if (s.scratch_md.get_size() > 1) args.emplace(DNNL_ARG_SCRATCHPAD, mem(s.scratch_md, b[3]));
            v.prim->execute(st, args);
        }
        st.wait();
    }, tbb::simple_partitioner());
    if (s.dw_own >= 0) {  // partials summed in chunk order by our store, by output-channel blocks of 16
        std::vector<const float *> parts;
        for (int64_t k = 0; k < chunks; ++k) parts.push_back(static_cast<const float *>(bufs[4 * k + 2]));
        const int64_t ob = (s.g.OC + 15) / 16;
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, ob, 1), [&](const tbb::blocked_range<int64_t> &r) {
            unblock_weights(parts.data(), chunks, s.g.OC, s.g.IC, s.g.k_size(), s.dw_own == 1, out, out_dt, r.begin(), r.end());
        });
        return;
    }
    // Partials summed in chunk order, element by element: the same bits whatever ran where.
    auto *sum = static_cast<float *>(bufs[2]);
    if (chunks > 1) {
        tbb::parallel_for(tbb::blocked_range<size_t>(0, s.dw_elems, 16384), [&](const tbb::blocked_range<size_t> &r) {
            for (int64_t k = 1; k < chunks; ++k) {
                const auto *p = static_cast<const float *>(bufs[4 * k + 2]);
                for (size_t e = r.begin(); e < r.end(); ++e) sum[e] += p[e];
            }
        });
    }
    OneThread one;
    dnnl::stream st(cpu());
    const Md plain_dw = weights_plain(s.g, DnnlDt::f32);
    if (s.dw_out.prim) s.dw_out.run(st, mem(s.dw_blk, sum), mem(plain_dw, out), bufs[3], s.scratch_md);
    else std::copy(sum, sum + s.g.weight_elems(), static_cast<float *>(out));
    st.wait();
}

void WeightPass::run_by_channel(const void *src, const void *diff_dst, void *out, OutDt out_dt, void *const *bufs,
                                const void *pre_src) const {
    const DnnlState &s = *s_;
    const DnnlState::Variant &v = s.variants[0];
    const auto *src_b = static_cast<const uint8_t *>(src);
    // src in the blocked layout, once for all blocks (images spread over the blocks' tasks)
    const void *src_blk_ptr = pre_src ? pre_src : v.src_in.prim ? bufs[0] : src;
    if (!pre_src && v.src_in.prim) {
        if (s.src_per_image) {
            const size_t img_blk = s.src_one_blk.get_size();
            tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
                OneThread one;
                dnnl::stream st(cpu());
                for (int64_t n = r.begin(); n < r.end(); ++n) {
                    s.src_one_in.run(st, mem(s.src_one_user, src_b + static_cast<size_t>(n) * s.src_image),
                                     mem(s.src_one_blk, static_cast<uint8_t *>(bufs[0]) + static_cast<size_t>(n) * img_blk), nullptr,
                                     s.scratch_md);
                }
                st.wait();
            }, tbb::simple_partitioner());
        } else {
            OneThread one;
            dnnl::stream st(cpu());
            v.src_in.run(st, mem(v.src_user, src), mem(v.src_blk, bufs[0]), bufs[3], s.scratch_md);
            st.wait();
        }
    }
    const memory src_mem = mem(v.src_in.prim ? v.src_blk : v.src_user, src_blk_ptr);
    const size_t ddst_off = static_cast<size_t>(s.block_oc * s.g.dst_plane()) * dsize(s.t);
    const size_t dw_rows = static_cast<size_t>(s.block_oc) * static_cast<size_t>(s.g.weight_elems() / s.g.OC);
    Geometry gb = s.g;
    gb.OC = s.block_oc;
    const Md plain_dw = weights_plain(gb, DnnlDt::f32);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.blocks, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) {
            void *const *b = bufs + 1 + 3 * k;  // blocked diff_dst, blocked diff_W, scratchpad
            const auto ku = static_cast<size_t>(k);
            const memory ddst_user = mem(v.ddst_user, static_cast<const uint8_t *>(diff_dst) + ku * ddst_off);
            const memory ddst_blk = v.ddst_in.prim ? mem(v.ddst_blk, b[0]) : ddst_user;
            v.ddst_in.run(st, ddst_user, ddst_blk, b[2], s.scratch_md);
            void *const rows = static_cast<uint8_t *>(out) + ku * dw_rows * out_size(out_dt);
            const memory dw = s.dw_out.prim ? mem(s.dw_blk, b[1]) : mem(plain_dw, rows);
            std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_DIFF_DST, ddst_blk}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
            if (s.scratch_md.get_size() > 1) args.emplace(DNNL_ARG_SCRATCHPAD, mem(s.scratch_md, b[2]));
            v.prim->execute(st, args);
            if (s.dw_own >= 0) {
                st.wait();
                const auto *part = static_cast<const float *>(b[1]);
                unblock_weights(&part, 1, s.block_oc, s.g.IC, s.g.k_size(), s.dw_own == 1, rows, out_dt, 0,
                                (s.block_oc + 15) / 16);
            } else {
                s.dw_out.run(st, dw, mem(plain_dw, rows), b[2], s.scratch_md);
            }
        }
        st.wait();
    }, tbb::simple_partitioner());
}

}  // namespace conv
