// DataPass: forward and data-gradient convolutions on oneDNN (see dnnl_pass.hpp for the
// decomposition and why; the shared plumbing in dnnl_common.hpp).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <type_traits>

#include "cpu.hpp"
#include "dnnl_common.hpp"
#include "dnnl_pass.hpp"
#include "mirrored.hpp"

namespace conv {

using namespace onednn;

namespace {

// Images per data-pass call: each call streams all the weights through the cache, so on small
// planes (7x7: 3x3 512x512 weights for 49 positions) one image per call is dominated by that.
// Several images per call there (measured: -20 % CPU time on ResNet-50's 7x7 3x3 layer, neutral on
// 14x14 and larger). Decided by the shape only.
inline constexpr int64_t kMinCallPositions = 196;
int64_t data_images_per_call(const Geometry &g) {
    const int64_t plane = std::max<int64_t>(1, std::max(g.src_plane(), g.dst_plane()));
    return (kMinCallPositions + plane - 1) / plane;
}

// A task's memory objects (DnnlState::memories), by role.
enum DataRole : size_t { kAUser, kABlk, kCUser, kCBlk, kWUser, kWBlk, kScratch };

// execute() arguments of a data pass: operand a and result c are src/dst of a forward pass and
// diff_dst/diff_src of a data-gradient pass; the scratchpad (the slot's) only when oneDNN wants one.
ExecArgs data_args(const DnnlState &s, const memory &a, const memory &weights, const memory &c, SlotMemories &m,
                   void *scratch) {
    const bool fwd = s.kind == DataPass::Kind::Forward;
    ExecArgs args;
    args.add(DNNL_ARG_WEIGHTS, weights).add(fwd ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, a).add(fwd ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, c);
    if (s.scratch_md.get_size() > 1) args.add(DNNL_ARG_SCRATCHPAD, m.at(kScratch, s.scratch_md, scratch));
    return args;
}

// Result-channel blocks of a data pass, or 0 for the split by images. Where the weights outweigh
// the activations (the 14x14 and 7x7 layers), each block is one call over the whole minibatch with
// its slice of the weights: every weight is streamed once (not once per image or chunk), and the
// weights' reorder is spread over the blocks instead of preceding them.
int64_t data_channel_blocks(const Geometry &g, DataPass::Kind kind, DnnlDt t) {
    if (g.G != 1 || !weights_dominate(g)) return 0;
    return channel_blocks(g, kind == DataPass::Kind::Forward ? g.OC : g.IC, t);
}

// Whether our own store writes v's result (its layout one that unblock_acts reads, over the whole
// spatial extent when full) instead of oneDNN's reorder c_out.
void own_store(DnnlState::DataVariant &v, bool full) {
    const auto layout = own_acts(v.c_blk, full);
    v.c_own = v.c_out.prim && layout;
    if (layout) v.c_layout = *layout;
}

// Takes a data pass's primitive descriptor into variant v: its operand layouts (a: src or
// diff_dst, c: dst or diff_src), its primitive and, for the first variant, the weights layout every
// variant reads. Returns the scratchpad bytes it needs.
template <class Pd>
size_t adopt(DnnlState &s, DnnlState::DataVariant &v, const Pd &pd, bool first) {
    if constexpr (std::is_same_v<Pd, dnnl::convolution_forward::primitive_desc>) {
        v.a_blk = pd.src_desc();
        v.c_blk = pd.dst_desc();
        v.conv.emplace(dnnl::convolution_forward(pd));
    } else {
        v.a_blk = pd.diff_dst_desc();
        v.c_blk = pd.diff_src_desc();
        v.conv.emplace(dnnl::convolution_backward_data(pd));
    }
    if (first) {
        s.w_blk = pd.weights_desc();
        s.impl = pd.impl_info_str();
    }
    return pd.scratchpad_desc().get_size();
}

// Sets up the pass by result-channel blocks when the shape calls for it and the blocked operand is
// image after image (so that it is blocked image by image, in parallel, without scratch).
bool init_data_by_channel(DnnlState &s, std::vector<uint64_t> &buffers, int64_t threads) {
    const Geometry &g = s.g;
    const bool fwd = s.kind == DataPass::Kind::Forward;
    const int64_t blocks = data_channel_blocks(g, s.kind, s.t);
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
        v.c_user = plain(g, g.N, cb, g.dst, g.dst, DnnlDt::f32, g.OC);
        scratch = adopt(s, v, pd, true);
    } else {
        const auto hint = forward_pd(gb, g.N, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, act(gb, src_dims(gb, g.N), DnnlDt::f32, pl),
                                                      any(weight_dims(gb), s.t), act(gb, dst_dims(gb, g.N), s.t, pl), p.strides,
                                                      p.dil, p.pl, p.pr);
        const auto pd = data_pd(gb, d, attr, hint);
        v.a_user = plain(g, g.N, g.OC, g.dst, g.dst, s.t);
        v.c_user = plain(g, g.N, cb, g.src_used, g.src, DnnlDt::f32, g.IC);
        scratch = adopt(s, v, pd, true);
    }
    v.a_in = Reorder(v.a_user, v.a_blk);
    v.c_out = Reorder(v.c_blk, v.c_user);
    own_store(v, fwd || g.src_used == g.src);
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
    s.w_user = Md(weight_dims(gb), s.t, dense_strides(weight_dims(g)));
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
    // [0] none, [1] the blocked operand (all images), then per slot (a block's task): blocked
    // weights, blocked result, scratchpad
    s.set_slots(acp::SlotPool::slots(blocks, threads));
    buffers.push_back(0);
    buffers.push_back(v.a_in.prim ? v.a_blk.get_size() : 0);
    for (int64_t j = 0; j < s.slots.size(); ++j) {
        buffers.push_back(s.w_in.prim ? s.w_blk.get_size() : 0);
        buffers.push_back(v.c_out.prim ? v.c_blk.get_size() : 0);
        buffers.push_back(scratch);
    }
    s.dvars.push_back(std::move(v));
    return true;
}

}  // namespace

DataPass::DataPass(const Geometry &g, Kind kind, Dt in_dt, int64_t threads) {
    // gradInput of a unit-stride FLOAT convolution: the mirrored forward (oneDNN's brgemm kernels),
    // when its weights layout is one that mirror_weights writes. (Not BF16: there oneDNN's forward
    // kernels gain 0-4 % on the layers split by images.)
    if (kind == Kind::BackwardData && in_dt == Dt::F32 && cpu_has_avx512() && runs_mirrored(g, false) && !plain_data_layout(g) &&
        g.k_size() <= 16) {
        init(conv::mirrored(g), Kind::Forward, in_dt, threads);
        if (s_->w_in.prim) s_->mirror = mirror_layout(s_->w_blk);
        if (s_->mirror) return;
    }
    init(g, kind, in_dt, threads);
}

void DataPass::init(const Geometry &g, Kind kind, Dt in_dt, int64_t threads) {
    s_ = std::make_unique<DnnlState>();
    buffers_.clear();
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
    if (init_data_by_channel(s, buffers_, threads)) return;
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
            v.c_user = plain(g, n, g.OC, g.dst, g.dst, DnnlDt::f32);
            scratch = std::max(scratch, adopt(s, v, pd, first));
        } else {
            const auto hint = forward_pd(g, n, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
            const Params p(g);
            const bool pl = plain_layout(g, s.t) || plain_data_layout(g);
            const dnnl::convolution_backward_data::desc d(
                dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), DnnlDt::f32, pl),
                first ? any(weight_dims(g), s.t) : s.w_blk, act(g, dst_dims(g, n), s.t, pl), p.strides, p.dil, p.pl, p.pr);
            const auto pd = data_pd(g, d, attr, hint);
            v.a_user = plain(g, n, g.OC, g.dst, g.dst, s.t);
            v.c_user = plain(g, n, g.IC, g.src_used, g.src, DnnlDt::f32);
            scratch = std::max(scratch, adopt(s, v, pd, first));
        }
        v.a_in = Reorder(v.a_user, v.a_blk);
        v.c_out = Reorder(v.c_blk, v.c_user);
        own_store(v, fwd || g.src_used == g.src);
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
    // [0] blocked weights, [1] the blocked operand of all chunks, then per slot (a chunk's task):
    // blocked result, scratchpad
    uint64_t blk = 0;
    for (size_t k = 0; k < s.chunk_size.size(); ++k) {
        s.a_blk_at.push_back(blk);
        if (s.dvar(k).a_in.prim) blk += s.dvar(k).a_blk.get_size();
    }
    size_t c_blk = 0;
    for (const DnnlState::DataVariant &v : s.dvars)
        if (v.c_out.prim) c_blk = std::max(c_blk, v.c_blk.get_size());
    s.set_slots(acp::SlotPool::slots(static_cast<int64_t>(s.chunk_size.size()), threads));
    buffers_.push_back(s.w_in.prim ? s.w_blk.get_size() : 0);
    buffers_.push_back(blk);
    for (int64_t j = 0; j < s.slots.size(); ++j) {
        buffers_.push_back(c_blk);
        buffers_.push_back(scratch);
    }
}

DataPass::~DataPass() = default;
const char *DataPass::impl() const { return s_->impl.c_str(); }
bool DataPass::mirrored() const { return s_->mirror.has_value(); }
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
    each_task(chunks, [&](dnnl::stream &st, int64_t k) {
        const auto ku = static_cast<size_t>(k);
        const DnnlState::DataVariant &v = s.dvar(ku);
        const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
        const acp::SlotPool::Lease slot(s.slots);
        SlotMemories &m = s.memories[slot.index()];
        v.a_in.run(st, m.at(kAUser, v.a_user, static_cast<const uint8_t *>(a) + n0 * s.a_image),
                   m.at(kABlk, v.a_blk, static_cast<uint8_t *>(bufs[1]) + s.a_blk_at[ku]), bufs[3 + 2 * slot.index()], s.scratch_md);
        st.wait();  // (the slot's scratch is free again once the reorder is done)
    });
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
                     static_cast<int64_t>(s.c_image), out_dt, v.c_layout);
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
    if (s.mirror) {  // the caller's weights (O, I, K) of the convolution this one mirrors
        mirror_weights(static_cast<const float *>(w), s.g.IC, s.g.OC, s.g.k_size(), s.g.OC * s.g.k_size(), *s.mirror,
                       static_cast<float *>(bufs[0]));
    } else {
        OneThread one;
        dnnl::stream st(cpu());
        s.w_in.run(st, mem(s.w_user, w), mem(s.w_blk, bufs[0]), bufs[3], s.scratch_md);
        st.wait();
    }
    const memory weights = mem(s.w_in.prim ? s.w_blk : s.w_user, s.w_in.prim ? bufs[0] : w);
    const auto chunks = static_cast<int64_t>(s.chunk_size.size());
    each_task(chunks, [&](dnnl::stream &st, int64_t k) {
        const auto ku = static_cast<size_t>(k);
        const DnnlState::DataVariant &v = s.dvar(ku);
        const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
        // b[0]: this chunk's blocked operand, b[1]: blocked result, b[2]: scratchpad (its slot's)
        const acp::SlotPool::Lease slot(s.slots);
        void *const b[3] = {static_cast<uint8_t *>(bufs[1]) + s.a_blk_at[ku], bufs[2 + 2 * slot.index()],
                            bufs[3 + 2 * slot.index()]};
        SlotMemories &m = s.memories[slot.index()];
        const memory &a_user = m.at(kAUser, v.a_user, static_cast<const uint8_t *>(a) + n0 * s.a_image);
        uint8_t *const c_at = out_b + n0 * s.c_image * es;
        const memory &c_user = m.at(kCUser, v.c_user, c_at);
        const memory &a_blk = v.a_in.prim ? m.at(kABlk, v.a_blk, b[0]) : a_user;
        const memory &c_blk = v.c_out.prim ? m.at(kCBlk, v.c_blk, b[1]) : c_user;
        if (!prepared) v.a_in.run(st, a_user, a_blk, b[2], s.scratch_md);
        data_args(s, a_blk, weights, c_blk, m, b[2]).execute(*v.conv, st);
        store_result(st, s, v, c_blk, c_user, b[1], c_at, out_dt, b[2]);
        st.wait();  // (the slot is free again once its work is done)
        if (done && out_dt == OutDt::F32) {
            for (int64_t i = 0; i < v.n; ++i) {
                const auto n = static_cast<int64_t>(n0) + i;
                done(n, static_cast<const float *>(out) + static_cast<size_t>(n) * s.c_image);
            }
        }
    });
}

// The operand into the blocked buffer 1, image by image in parallel (pass by channel blocks).
void DataPass::block_images(const void *a, void *const *bufs) const {
    const DnnlState &s = *s_;
    if (!s.a_one_in.prim) return;
    const size_t img_blk = s.a_one_blk.get_size();
    each_task(s.g.N, [&](dnnl::stream &st, int64_t n) {
        const auto nu = static_cast<size_t>(n);
        s.a_one_in.run(st, mem(s.a_one_user, static_cast<const uint8_t *>(a) + nu * s.a_image),
                       mem(s.a_one_blk, static_cast<uint8_t *>(bufs[1]) + nu * img_blk), nullptr, s.scratch_md);
    });
}

void DataPass::run_by_channel(const void *a, const void *w, void *out, OutDt out_dt, void *const *bufs,
                              const std::function<void(int64_t, const float *)> &done, bool prepared) const {
    const DnnlState &s = *s_;
    const DnnlState::DataVariant &v = s.dvars[0];
    if (!prepared) block_images(a, bufs);
    const memory a_mem = v.a_in.prim ? mem(v.a_blk, bufs[1]) : mem(v.a_user, a);
    each_task(s.d_blocks, [&](dnnl::stream &st, int64_t k) {
        const acp::SlotPool::Lease slot(s.slots);
        SlotMemories &m = s.memories[slot.index()];
        void *const *b = bufs + 2 + 3 * slot.index();  // blocked weights, blocked result, scratchpad
        const auto ku = static_cast<size_t>(k);
        const memory &w_user = m.at(kWUser, s.w_user, static_cast<const uint8_t *>(w) + ku * s.w_step);
        const memory &weights = s.w_in.prim ? m.at(kWBlk, s.w_blk, b[0]) : w_user;
        if (s.mirror) {  // this block's input channels (columns) of the caller's weights (O, I, K)
            const int64_t K = s.g.k_size();
            mirror_weights(static_cast<const float *>(w) + ku * s.c_channels * K, s.g.IC, s.c_channels, K, s.g.OC * K, *s.mirror,
                           static_cast<float *>(b[0]));
        } else {
            s.w_in.run(st, w_user, weights, b[2], s.scratch_md);
        }
        uint8_t *const c_at = static_cast<uint8_t *>(out) + ku * s.c_step * out_size(out_dt);
        const memory &c_user = m.at(kCUser, v.c_user, c_at);
        const memory &c_blk = v.c_out.prim ? m.at(kCBlk, v.c_blk, b[1]) : c_user;
        data_args(s, a_mem, weights, c_blk, m, b[2]).execute(*v.conv, st);
        store_result(st, s, v, c_blk, c_user, b[1], c_at, out_dt, b[2]);
        st.wait();
    });
    if (done && out_dt == OutDt::F32)  // every block has written its channels: each image is complete
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
            for (int64_t n = r.begin(); n < r.end(); ++n) done(n, static_cast<const float *>(out) + static_cast<size_t>(n) * s.c_image);
        }, tbb::simple_partitioner());
}

}  // namespace conv
