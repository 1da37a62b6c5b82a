// WeightPass: weight-gradient convolutions on oneDNN (see dnnl_pass.hpp for the decomposition and
// why; the shared plumbing in dnnl_common.hpp).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>

#include "cpu.hpp"
#include "dnnl_common.hpp"
#include "dnnl_pass.hpp"

namespace conv {

using namespace onednn;

namespace {

// Output-channel blocks of the weight pass, or 0 for the split of the minibatch. By channels every
// block is one call over the whole minibatch: no partial gradients, no sum, and each block's rows
// of the weights leave in place. Taken where the weights outweigh the activations (small planes,
// wide layers: ResNet-50's 14x14 and 7x7 3x3 layers, -20 % CPU time on the 7x7 one), where the
// batch split's full-size partials, their sum and their reorder are most of the traffic; on large
// planes each block re-reading all of src costs more (measured on this machine: ResNet-50's 56x56
// pointwise layers lose 10-30 % by channels). In BF16 only where they outweigh them outright:
// oneDNN's BF16 kernel is slower on 16 output channels a call, and ResNet-50's 256-channel 14x14
// 3x3 layer (weights 0.73x the activations) took 4.5-7.5 % less for the whole backward with the
// minibatch in two chunks (alternating runs, 2 threads; FLOAT within the noise either way, so it
// keeps the blocks). On CPUs with AMX BF16 takes the blocks too: there the two chunks' partials,
// sum and reorders outlast 4 blocks (a Xeon, that 256-channel layer 3.2-3.5 -> 3.0-3.2 ms). Blocks as
// channel_blocks says; decided by the shape, dtype and CPU.
int64_t weight_channel_blocks(const Geometry &g, DnnlDt t) {
    if (g.G != 1 || !weights_dominate(g)) return 0;
    if (t == DnnlDt::bf16 && !weights_outweigh_outright(g) && !cpu_has_amx_bf16()) return 0;
    return channel_blocks(g, g.OC, t);
}

}  // namespace

WeightPass::WeightPass(const Geometry &g, Dt in_dt, int64_t threads) : s_(std::make_unique<DnnlState>()) {
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
    if (init_matmul(g, threads)) return;
    s.blocks = weight_channel_blocks(g, s.t);
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
        const auto pd = weights_pd(g, d, attr, hint);
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
        // [0] blocked src (all images), then per slot (a block's task): blocked diff_dst, blocked
        // diff_W, scratchpad
        s.set_slots(acp::SlotPool::slots(s.blocks, threads));
        buffers_.push_back(s.variants[0].src_in.prim ? s.variants[0].src_blk.get_size() : 0);
        for (int64_t j = 0; j < s.slots.size(); ++j) {
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
    if (chunks > kWeightChunks) throw std::logic_error("WeightPass: more chunks than run() sums");
    for (const int64_t n : {s.chunk_size.front(), s.chunk_size.back()}) {
        if (!s.variants.empty() && s.variants.front().n == n) break;
        DnnlState::Variant v;
        v.n = n;
        const auto hint = forward_pd(g, n, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        // The second chunk size must produce partials in the first one's layout: they are summed.
        const Md dw = s.variants.empty() ? any(weight_dims(g), DnnlDt::f32) : s.dw_blk;
        const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), s.t, pl),
                                                         dw, act(g, dst_dims(g, n), s.t, pl), p.strides, p.dil, p.pl, p.pr);
        const auto pd = weights_pd(g, d, attr, hint);
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
    // per chunk: partial diff weights (FLOAT, blocked; summed after every chunk), then per slot (a
    // chunk's task): blocked src, blocked diff_dst, scratchpad (split_buffer)
    size_t src_blk = 0, ddst_blk = 0;
    for (const DnnlState::Variant &v : s.variants) {
        if (v.src_in.prim) src_blk = std::max(src_blk, v.src_blk.get_size());
        if (v.ddst_in.prim) ddst_blk = std::max(ddst_blk, v.ddst_blk.get_size());
    }
    s.set_slots(acp::SlotPool::slots(chunks, threads));
    for (int64_t k = 0; k < chunks; ++k) buffers_.push_back(s.dw_blk.get_size());
    for (int64_t j = 0; j < s.slots.size(); ++j) {
        buffers_.push_back(src_blk);
        buffers_.push_back(ddst_blk);
        buffers_.push_back(scratch);
    }
}

namespace {
// The split by the minibatch: where in the pass's buffers chunk k's partial diff weights (Partial)
// and slot j's blocked src, blocked diff_dst and scratchpad lie.
enum class Split { Partial, Src, Ddst, Scratch };
size_t split_buffer(const DnnlState &s, Split what, size_t i) {
    const size_t chunks = s.chunk_size.size();
    return what == Split::Partial ? i : chunks + 3 * i + static_cast<size_t>(what) - 1;
}

// A task's memory objects (DnnlState::memories), by role.
enum WeightRole : size_t { kSrcUser, kSrcBlk, kDdstUser, kDdstBlk, kDw, kDwUser, kScratch };

// execute() arguments of a weight pass; the scratchpad (the slot's) only when oneDNN wants one.
ExecArgs weight_args(const DnnlState &s, const memory &src, const memory &ddst, const memory &dw, SlotMemories &m, void *scratch) {
    ExecArgs args;
    args.add(DNNL_ARG_SRC, src).add(DNNL_ARG_DIFF_DST, ddst).add(DNNL_ARG_DIFF_WEIGHTS, dw);
    if (s.scratch_md.get_size() > 1) args.add(DNNL_ARG_SCRATCHPAD, m.at(kScratch, s.scratch_md, scratch));
    return args;
}

}  // namespace

WeightPass::~WeightPass() = default;
const char *WeightPass::impl() const { return s_->impl.c_str(); }
bool WeightPass::rounds_output() const { return s_->dw_own >= 0; }
int64_t WeightPass::channel_blocks() const { return s_->blocks; }

bool WeightPass::can_share(const DataPass &d, bool diff_dst) const {
    const DnnlState &ds = *d.s_;
    if (s_->by_matmul || !ds.uniform_blk || ds.t != s_->t) return false;
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

std::vector<uint64_t> WeightPass::buffers_sharing(bool diff_dst) const {
    std::vector<uint64_t> b = buffers_;
    if (s_->by_channel) {
        if (!diff_dst) b[0] = 0;
        return b;
    }
    for (size_t j = 0; j < static_cast<size_t>(s_->slots.size()); ++j) b[split_buffer(*s_, diff_dst ? Split::Ddst : Split::Src, j)] = 0;
    return b;
}

void WeightPass::run(const void *src, const void *diff_dst, void *out, OutDt out_dt, void *const *bufs, const void *pre_src,
                     const void *pre_diff_dst) const {
    const DnnlState &s = *s_;
    if (out_dt != OutDt::F32 && !rounds_output()) throw std::logic_error("WeightPass: a rounded result from a layout not stored by us");
    if (s.by_matmul) {
        run_matmul(src, diff_dst, out, bufs);
        return;
    }
    if (s.by_channel) {
        run_by_channel(src, diff_dst, out, out_dt, bufs, pre_src);
        return;
    }
    run_chunks(src, diff_dst, bufs, pre_src, pre_diff_dst, 0, chunks());
    sum_chunks(out, out_dt, bufs);
}

int64_t WeightPass::chunks() const { return s_->by_matmul || s_->by_channel ? 0 : static_cast<int64_t>(s_->chunk_size.size()); }

void WeightPass::run_chunks(const void *src, const void *diff_dst, void *const *bufs, const void *pre_src, const void *pre_diff_dst,
                            int64_t k0, int64_t k1) const {
    const DnnlState &s = *s_;
    each_task(k1 - k0, [&](dnnl::stream &st, int64_t t) {
        const int64_t k = k0 + t;
        const auto ku = static_cast<size_t>(k);
        const DnnlState::Variant &v = s.variants[s.chunk_size[ku] == s.variants[0].n ? 0 : 1];
        const acp::SlotPool::Lease slot(s.slots);
        const size_t j = slot.index();
        // b: this slot's blocked src and diff_dst, this chunk's partial, this slot's scratchpad
        void *const b[4] = {bufs[split_buffer(s, Split::Src, j)], bufs[split_buffer(s, Split::Ddst, j)],
                            bufs[split_buffer(s, Split::Partial, ku)], bufs[split_buffer(s, Split::Scratch, j)]};
        const auto n0 = static_cast<size_t>(s.chunk_start[ku]);
        SlotMemories &m = s.memories[j];
        const memory &src_user = m.at(kSrcUser, v.src_user, static_cast<const uint8_t *>(src) + n0 * s.src_image);
        const memory &ddst_user = m.at(kDdstUser, v.ddst_user, static_cast<const uint8_t *>(diff_dst) + n0 * s.ddst_image);
        // a prepared operand: this chunk's images of the shared blocked copy
        const size_t src_img = v.src_blk.get_size() / static_cast<size_t>(v.n);
        const size_t ddst_img = v.ddst_blk.get_size() / static_cast<size_t>(v.n);
        const memory &src_blk = pre_src ? m.at(kSrcBlk, v.src_blk, static_cast<const uint8_t *>(pre_src) + n0 * src_img)
                                : v.src_in.prim ? m.at(kSrcBlk, v.src_blk, b[0]) : src_user;
        const memory &ddst_blk = pre_diff_dst ? m.at(kDdstBlk, v.ddst_blk, static_cast<const uint8_t *>(pre_diff_dst) + n0 * ddst_img)
                                 : v.ddst_in.prim ? m.at(kDdstBlk, v.ddst_blk, b[1]) : ddst_user;
        if (!pre_src) v.src_in.run(st, src_user, src_blk, b[3], s.scratch_md);
        if (!pre_diff_dst) v.ddst_in.run(st, ddst_user, ddst_blk, b[3], s.scratch_md);
        weight_args(s, src_blk, ddst_blk, m.at(kDw, s.dw_blk, b[2]), m, b[3]).execute(*v.prim, st);
        st.wait();  // (the slot is free again once its work is done)
    });
}

void WeightPass::sum_chunks(void *out, OutDt out_dt, void *const *bufs) const {
    const DnnlState &s = *s_;
    if (out_dt != OutDt::F32 && !rounds_output()) throw std::logic_error("WeightPass: a rounded result from a layout not stored by us");
    const int64_t chunks = this->chunks();
    if (s.dw_own >= 0) {  // partials summed in chunk order by our store, by output-channel blocks of 16
        const float *parts[kWeightChunks];  // (chunks <= kWeightChunks: the constructor checks)
        for (int64_t k = 0; k < chunks; ++k) parts[k] = static_cast<const float *>(bufs[split_buffer(s, Split::Partial, static_cast<size_t>(k))]);
        const int64_t ob = (s.g.OC + 15) / 16;
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, ob, 1), [&](const tbb::blocked_range<int64_t> &r) {
            unblock_weights(parts, chunks, s.g.OC, s.g.IC, s.g.k_size(), s.dw_own == 1, out, out_dt, r.begin(), r.end());
        });
        return;
    }
    // Partials summed in chunk order, element by element: the same bits whatever ran where.
    auto *sum = static_cast<float *>(bufs[split_buffer(s, Split::Partial, 0)]);
    if (chunks > 1) {
        tbb::parallel_for(tbb::blocked_range<size_t>(0, s.dw_elems, 16384), [&](const tbb::blocked_range<size_t> &r) {
            for (int64_t k = 1; k < chunks; ++k) {
                const auto *p = static_cast<const float *>(bufs[split_buffer(s, Split::Partial, static_cast<size_t>(k))]);
                for (size_t e = r.begin(); e < r.end(); ++e) sum[e] += p[e];
            }
        });
    }
    OneThread one;
    dnnl::stream st(cpu());
    const Md plain_dw = weights_plain(s.g, DnnlDt::f32);
    if (s.dw_out.prim) s.dw_out.run(st, mem(s.dw_blk, sum), mem(plain_dw, out), bufs[split_buffer(s, Split::Scratch, 0)], s.scratch_md);
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
            each_task(s.g.N, [&](dnnl::stream &st, int64_t n) {
                s.src_one_in.run(st, mem(s.src_one_user, src_b + static_cast<size_t>(n) * s.src_image),
                                 mem(s.src_one_blk, static_cast<uint8_t *>(bufs[0]) + static_cast<size_t>(n) * img_blk), nullptr,
                                 s.scratch_md);
            });
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
    each_task(s.blocks, [&](dnnl::stream &st, int64_t k) {
        const acp::SlotPool::Lease slot(s.slots);
        SlotMemories &m = s.memories[slot.index()];
        void *const *b = bufs + 1 + 3 * slot.index();  // blocked diff_dst, blocked diff_W, scratchpad
        const auto ku = static_cast<size_t>(k);
        const memory &ddst_user = m.at(kDdstUser, v.ddst_user, static_cast<const uint8_t *>(diff_dst) + ku * ddst_off);
        const memory &ddst_blk = v.ddst_in.prim ? m.at(kDdstBlk, v.ddst_blk, b[0]) : ddst_user;
        v.ddst_in.run(st, ddst_user, ddst_blk, b[2], s.scratch_md);
        void *const rows = static_cast<uint8_t *>(out) + ku * dw_rows * out_size(out_dt);
        const memory &dw = s.dw_out.prim ? m.at(kDw, s.dw_blk, b[1]) : m.at(kDwUser, plain_dw, rows);
        weight_args(s, src_mem, ddst_blk, dw, m, b[2]).execute(*v.prim, st);
        if (s.dw_own >= 0) {
            st.wait();
            const auto *part = static_cast<const float *>(b[1]);
            unblock_weights(&part, 1, s.block_oc, s.g.IC, s.g.k_size(), s.dw_own == 1, rows, out_dt, 0,
                            (s.block_oc + 15) / 16);
        } else {
            s.dw_out.run(st, dw, m.at(kDwUser, plain_dw, rows), b[2], s.scratch_md);
        }
        st.wait();
    });
}

}  // namespace conv
