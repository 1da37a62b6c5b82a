// oneDNN plumbing shared by the two passes (declarations and why: dnnl_common.hpp).
#include "dnnl_common.hpp"

#include "cpu.hpp"

#include <algorithm>
#include <string>

namespace conv {
namespace onednn {

dnnl::engine &cpu() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

Dims take(const Geometry &g, const std::array<int64_t, 3> &a, int64_t add) {
    Dims d;
    for (int i = 0; i < g.sd; ++i) d.push_back(a[static_cast<size_t>(i)] + add);
    return d;
}

// n images of c channels, spatial extent `used` inside a dense array of extent `full` whose images
// hold c_all >= c channels (a channel slice when c_all > c).
Md plain(const Geometry &g, int64_t n, int64_t c, const std::array<int64_t, 3> &used, const std::array<int64_t, 3> &full,
         DnnlDt t, int64_t c_all) {
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
Dims dense_strides(const Dims &d) {
    Dims s(d.size());
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 0;) {
        s[i] = step;
        step *= d[i];
    }
    return s;
}
Md weights_plain(const Geometry &g, DnnlDt t) {
    const Dims d = weight_dims(g);
    return Md(d, t, dense_strides(d));
}
Md any(const Dims &d, DnnlDt t) { return Md(d, t, memory::format_tag::any); }

// Elements of src and dst together (all images).
static int64_t activation_elems(const Geometry &g) { return g.N * (g.IC * g.src_plane() + g.OC * g.dst_plane()); }

// The weights outweigh the activations (small planes, wide layers: ResNet-50's 14x14 and 7x7 3x3
// layers, its 7x7 pointwise one, VGG-19's 14x14): the data pass then runs by channel blocks, and
// so does the weight pass (in BF16 only where weights_outweigh_outright; else in two chunks).
bool weights_dominate(const Geometry &g) { return g.weight_elems() * kWeightChunks > activation_elems(g); }
bool weights_outweigh_outright(const Geometry &g) { return g.weight_elems() > activation_elems(g); }

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
// gradInput of a 2-D convolution with few input channels (ResNet-50's first layer, 7x7 stride 2: 3
// of them; VGG-19's 3x3 one runs our own kernels): oneDNN's blocked kernels pad the result channels
// to a block of 16, its GEMM path on plain NCHW does not. ResNet-50's first layer at N = 8, one
// thread: FLOAT 52-64 -> 34-39 ms, BF16 28 -> 16 ms; the whole call at 2 threads 42-44 -> 18 ms
// FLOAT, 20 -> 12 ms BF16 (session 34, this machine). Decided by the shape only.
constexpr int64_t kPlainDataMaxIC = 4;
bool plain_data_layout(const Geometry &g) { return g.sd == 2 && g.G == 1 && g.IC <= kPlainDataMaxIC && g.k_size() > 1; }
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

namespace {
// Past oneDNN's AMX implementations of pd's primitive to the next one, when it has one.
template <class Pd>
void skip_amx(Pd &pd) {
    while (std::string(pd.impl_info_str()).find("amx") != std::string::npos && pd.next_impl()) {
    }
}
}  // namespace

// weights: a fixed weights layout, or null for oneDNN's choice.
dnnl::convolution_forward::primitive_desc forward_pd(const Geometry &g, int64_t n, DnnlDt t, DnnlDt dst_t,
                                                     dnnl::prop_kind prop, const dnnl::primitive_attr &attr,
                                                     const Md *weights) {
    const Params p(g);
    const bool pl = plain_layout(g, t);
    const dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), t, pl),
                                            weights ? *weights : any(weight_dims(g), t), act(g, dst_dims(g, n), dst_t, pl), p.strides, p.dil,
                                            p.pl, p.pr);
    dnnl::convolution_forward::primitive_desc pd(d, attr, cpu());
    if (g.sd == 3) skip_amx(pd);  // oneDNN 2.6's 3-D AMX kernels: see the note above weights_pd
    // oneDNN 2.6's brgconv takes time that grows with the output row to create (0.3-0.7 s at 10^5
    // columns, wav2vec's first layer; its jit:avx512_core twin: 1 ms, and as fast to run there).
    // Rows that wide take the first jit implementation after it (jit:, jit_bf16:), when there is one.
    if (g.dst[static_cast<size_t>(g.sd - 1)] > kWideRow && std::string(pd.impl_info_str()).rfind("brgconv", 0) == 0) {
        while (pd.next_impl())
            if (std::string(pd.impl_info_str()).rfind("jit", 0) == 0) return pd;  // jit:..., jit_bf16:...
        return dnnl::convolution_forward::primitive_desc(d, attr, cpu());
    }
    return pd;
}

// oneDNN 2.6.3's AMX BF16 convolutions (CPUs with AMX, e.g. Xeon Sapphire Rapids), measured against
// a double reference on random geometries (integer data, session 62):
// - gradWeight (jit:avx512_core_amx_bf16) computes wrong sums, and on some problems writes outside
//   its buffers, for 3-D problems (stride 1 and 2 included), for 1-D/2-D ones with a spatial
//   extent of src no larger than its stride (a 1-column row at stride 2), and for 2-D ones with a
//   row dilation above 1 and more than 32 input channels. 0 wrong in about 30,000 1-D/2-D
//   problems without dilation and with every extent above its stride (1-100 channels, 1 and 2
//   threads, plain and blocked layouts).
// - gradWeight never returns from primitive creation on some 3x3 stride-1 problems with rows of
//   738 columns or more (16 channels, 4 rows: 736 columns create at once, 738 still spin after
//   100 s; 1x1, 5x5 and stride 2 create at any width): rows wider than kAmxWeightsRow.
// - The 3-D forward (brgconv) crashed on 1 and was wrong on 1 of 1,439 random problems, and a
//   transposed 3-D gradInput was wrong in 3 of 8 runs of the same call: no 3-D problem takes an
//   AMX implementation. 1-D/2-D forward and data gradient: 0 wrong in about 5,900 problems
//   (dilation, 1-70 channels, asymmetric padding included).
// Those problems take the next implementation (jit_bf16:avx512_core_bf16 and the like). The bounds
// are measured, not documented.
namespace {
bool amx_weights_trusted(const Geometry &g) {
    if (g.sd == 3) return false;
    for (size_t i = 0; i < static_cast<size_t>(g.sd); ++i)
        if (g.src_used[i] <= g.stride[i] || g.dil[i] != 1) return false;
    const auto w = static_cast<size_t>(g.sd - 1);
    return std::max(g.src[w], g.dst[w]) <= kAmxWeightsRow;
}
}  // namespace
dnnl::convolution_backward_weights::primitive_desc weights_pd(const Geometry &g, const dnnl::convolution_backward_weights::desc &d,
                                                              const dnnl::primitive_attr &attr,
                                                              const dnnl::convolution_forward::primitive_desc &hint) {
    dnnl::convolution_backward_weights::primitive_desc pd(d, attr, cpu(), hint);
    if (!amx_weights_trusted(g)) skip_amx(pd);
    return pd;
}
dnnl::convolution_backward_data::primitive_desc data_pd(const Geometry &g, const dnnl::convolution_backward_data::desc &d,
                                                        const dnnl::primitive_attr &attr,
                                                        const dnnl::convolution_forward::primitive_desc &hint) {
    dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu(), hint);
    if (g.sd == 3) skip_amx(pd);
    return pd;
}

namespace {

// Dense images (N, C, spatial...; a channel slice of wider images too) into BF16 nC[spatial]16c
// or FLOAT / BF16 channels-last: our own block_acts (blocked_store.hpp) instead of oneDNN's reorder,
// ~2x faster on BF16 nC16c, 2-3.5x on FLOAT channels-last (one thread: 8x64x56x56 0.47 -> 0.14 ms,
// 8x256x14x14 0.12 -> 0.06; the way back, unblock_acts, 0.47 -> 0.14 and 0.33 -> 0.04). (FLOAT
// nC16c: oneDNN's is as fast.) Its shape, when `from` -> `to` is that.
std::optional<OwnBlock> own_block(const Md &from, const Md &to) {
    const Dims d = from.dims();
    if (from.data_type() != to.data_type() || d.size() < 3 || d.size() > 5 || to.dims() != d) return std::nullopt;
    const auto layout = act_layout(to);
    if (!layout || (*layout == ActLayout::C16 && to.data_type() != DnnlDt::bf16)) return std::nullopt;
    const dnnl_memory_desc_t &m = from.data;
    if (m.format_kind != dnnl_blocked || m.format_desc.blocking.inner_nblks != 0 || m.offset0 != 0) return std::nullopt;
    const dnnl_dims_t &st = m.format_desc.blocking.strides;
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 1;) {  // channels and spatial dims dense, channel by channel
        if (m.padded_dims[i] != d[i] || (d[i] > 1 && st[i] != step)) return std::nullopt;
        if (i > 1) step *= d[i];
    }
    OwnBlock b;
    b.N = d[0], b.C = d[1], b.plane = step, b.src_image = st[0];
    b.dst_image = static_cast<int64_t>(to.get_size() / dsize(to.data_type())) / std::max<int64_t>(1, d[0]);
    b.layout = *layout;
    return b;
}

// Dense weights (O, I, K...; a slice of input channels of wider ones too) into the tiles of the
// data passes (FLOAT ABcd16a16b, BF16 ABcd8a16b2a / BAcd8a16b2a): our own block_weights, 2-5x
// faster than oneDNN's reorder. Its shape, when `from` -> `to` is that.
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

}  // namespace

Reorder::Reorder(const Md &from, const Md &to) {
    if (from == to) return;
    const dnnl::reorder::primitive_desc pd(cpu(), from, cpu(), to, user_scratch());
    scratch = pd.scratchpad_desc().get_size();
    prim.emplace(pd);
    own = own_block(from, to);
    own_w = own_weights_in(from, to);
}

void Reorder::run(dnnl::stream &st, const memory &from, const memory &to, void *scratch_ptr, const Md &scratch_md) const {
    if (!prim) return;
    if (own) {
        st.wait();
        block_acts(from.get_data_handle(), own->N, own->C, own->plane, own->src_image, to.get_data_handle(), own->dst_image,
                   dsize(to.get_desc().data_type()), own->layout);
        return;
    }
    if (own_w) {
        st.wait();
        block_weights(from.get_data_handle(), own_w->O, own_w->I, own_w->K, own_w->o_stride, own_w->tiles, own_w->a_outer,
                      to.get_data_handle());
        return;
    }
    ExecArgs args;
    args.add(DNNL_ARG_FROM, from).add(DNNL_ARG_TO, to);
    std::optional<memory> scratch_mem;
    if (scratch) args.add(DNNL_ARG_SCRATCHPAD, scratch_mem.emplace(scratch_md, cpu(), scratch_ptr));
    args.execute(*prim, st);
}

memory mem(const Md &md, const void *p) { return memory(md, cpu(), const_cast<void *>(p)); }

const memory &SlotMemories::at(size_t role, const Md &md, const void *p) {
    std::optional<memory> &m = m_.at(role);
    if (m && m->get_desc() == md) {
        m->set_data_handle(const_cast<void *>(p));
    } else {
        m.emplace(md, cpu(), const_cast<void *>(p));
    }
    return *m;
}

ExecArgs &ExecArgs::add(int arg, const memory &m) {
    a_.at(static_cast<size_t>(n_)) = {arg, m.get()};
    ++n_;
    return *this;
}

void ExecArgs::execute(const dnnl::primitive &p, dnnl::stream &st) const {
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p.get(), st.get(), n_, a_.data()), "could not execute a primitive");
}

Md bytes_md(size_t n) { return Md({static_cast<int64_t>(std::max<size_t>(n, 1))}, DnnlDt::u8, memory::format_tag::x); }

std::optional<MirrorLayout> mirror_layout(const Md &w) {
    const Dims d = w.dims();
    const dnnl_memory_desc_t &m = w.data;
    if (w.data_type() != DnnlDt::f32 || d.size() < 3 || d.size() > 5 || m.format_kind != dnnl_blocked || m.offset0 != 0)
        return std::nullopt;
    const auto &b = m.format_desc.blocking;
    const int64_t B = b.inner_nblks == 1 && b.inner_idxs[0] == 0 ? b.inner_blks[0] : 0;
    if (B == 0 || B % 16 != 0 || b.strides[1] != B || m.padded_dims[0] != (d[0] + B - 1) / B * B || m.padded_dims[1] != d[1])
        return std::nullopt;
    MirrorLayout l;
    l.B = B;
    l.ob_stride = b.strides[0];
    l.ic_stride = b.strides[1];
    int64_t K = 1;
    for (size_t i = 2; i < d.size(); ++i) K *= d[i];
    if (K > 16) return std::nullopt;
    for (int64_t k = 0; k < K; ++k) {  // flat kernel position k, row-major over the spatial dims
        int64_t rest = k, off = 0;
        for (size_t i = d.size(); i-- > 2;) {
            off += (rest % d[i]) * b.strides[i];
            rest /= d[i];
        }
        l.k_off[k] = off;
    }
    return l;
}

std::optional<ActLayout> act_layout(const Md &md) {
    const Dims d = md.dims();
    if (d.size() < 3 || d.size() > 5) return std::nullopt;
    using T = memory::format_tag;
    const size_t r = d.size() - 3;
    if (md == Md(d, md.data_type(), std::array{T::nCw16c, T::nChw16c, T::nCdhw16c}[r])) return ActLayout::C16;
    if (md == Md(d, md.data_type(), std::array{T::nwc, T::nhwc, T::ndhwc}[r])) return ActLayout::Nhwc;
    return std::nullopt;
}

// Layouts our own stores (blocked_store.hpp) read: a FLOAT result in nC[spatial]16c or channels-last
// over the whole spatial extent, and FLOAT ungrouped weights in 16x16 tiles (o_inner: ABcd16b16a).
// Whatever else oneDNN picks goes through its reorder.
std::optional<ActLayout> own_acts(const Md &blk, bool full_extent) {
    if (!full_extent || blk.data_type() != DnnlDt::f32) return std::nullopt;
    return act_layout(blk);
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

// The widened layout of one image's blocked operand: the same tensor for n images.
Md widen(const Md &one, int64_t n) {
    dnnl_memory_desc_t c = one.data;
    c.dims[0] = n;
    c.padded_dims[0] = n;
    return Md(c);
}

// How many blocks of c channels a pass split by channels takes, or 0: whole blocks of oneDNN's
// vector blocking (16 channels) each; up to 16 for spatial kernels, up to 4 for 1x1 ones (a GEMM
// per block: thinner ones ran slower). dInput and dWeight are two nodes on the same threads, each
// a loop over its blocks: the finer the blocks, the shorter one thread waits at the end for the
// other's last block (16 blocks instead of 4: VGG-19's 14x14 and ResNet-50's 7x7 3x3 layers -7 to
// -9 %; 16 of 16 channels instead of 8 of 32: ResNet-50's 256-channel 14x14 layer -2 % in BF16,
// unchanged in FLOAT; measured on this machine). Decided by the shape only - but for BF16 on CPUs
// with AMX (cpu_has_amx_bf16), whose tile kernels lose most on thin blocks: at most 4 there (a Xeon,
// one thread, VGG-19's 512-channel 14x14 layer: dInput 16 blocks 5.5 ms, 4 blocks 3.3, dWeight
// 14.3 and 11.8; ResNet-50's 256-channel one 2.1 / 1.0 and 5.2 / 3.0).
int64_t channel_blocks(const Geometry &g, int64_t c, DnnlDt t) {
    const int64_t most = g.k_size() > 1 && !(t == DnnlDt::bf16 && cpu_has_amx_bf16()) ? 16 : 4;
    for (int64_t b = most; b >= 2; b /= 2)
        if (c % b == 0 && (c / b) % 16 == 0) return b;
    return 0;
}

void split(DnnlState &s, int64_t n, int64_t chunks) {
    const int64_t base = n / chunks, rem = n % chunks;
    int64_t start = 0;
    for (int64_t k = 0; k < chunks; ++k) {
        s.chunk_start.push_back(start);
        s.chunk_size.push_back(base + (k < rem ? 1 : 0));
        start += s.chunk_size.back();
    }
}

}  // namespace onednn
}  // namespace conv
