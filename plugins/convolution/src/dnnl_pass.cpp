// oneDNN behind DataPass / WeightPass (see dnnl_pass.hpp for the decomposition and why).
#include "dnnl_pass.hpp"

#include <omp.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

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

// n images of c channels, spatial extent `used` inside a dense array of extent `full`.
Md plain(const Geometry &g, int64_t n, int64_t c, const std::array<int64_t, 3> &used, const std::array<int64_t, 3> &full,
         DnnlDt t) {
    Dims d{n, c}, s(static_cast<size_t>(g.sd) + 2);
    for (int i = 0; i < g.sd; ++i) d.push_back(used[static_cast<size_t>(i)]);
    int64_t step = 1;
    for (int i = g.sd - 1; i >= 0; --i) {
        s[static_cast<size_t>(i) + 2] = step;
        step *= full[static_cast<size_t>(i)];
    }
    s[1] = step;
    s[0] = step * c;
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

// FLOAT pointwise convolutions (1x1, stride 1, no padding) are plain GEMMs on NCHW: oneDNN's GEMM
// path there is as fast as its blocked kernels, and no activation needs a reorder. (BF16 is faster
// blocked.) Measured on this machine; decided by the shape and dtype only.
bool plain_layout(const Geometry &g, DnnlDt t) {
    if (t != DnnlDt::f32 || g.k_size() != 1) return false;
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

dnnl::convolution_forward::primitive_desc forward_pd(const Geometry &g, int64_t n, DnnlDt t, DnnlDt dst_t,
                                                     dnnl::prop_kind prop, const dnnl::primitive_attr &attr) {
    const Params p(g);
    const bool pl = plain_layout(g, t);
    const dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, act(g, src_dims(g, n), t, pl),
                                            any(weight_dims(g), t), act(g, dst_dims(g, n), dst_t, pl), p.strides, p.dil,
                                            p.pl, p.pr);
    return dnnl::convolution_forward::primitive_desc(d, attr, cpu());
}

// A reorder between two layouts of the same tensor; none when they are the same.
struct Reorder {
    std::optional<dnnl::reorder> prim;
    size_t scratch = 0;
    Reorder() = default;
    Reorder(const Md &from, const Md &to) {
        if (from == to) return;
        const dnnl::reorder::primitive_desc pd(cpu(), from, cpu(), to, user_scratch());
        scratch = pd.scratchpad_desc().get_size();
        prim.emplace(pd);
    }
    void run(dnnl::stream &st, const memory &from, const memory &to, void *scratch_ptr, const Md &scratch_md) const {
        if (!prim) return;
        std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        if (scratch) args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratch_md, cpu(), scratch_ptr));
        prim->execute(st, args);
    }
};

memory mem(const Md &md, const void *p) { return memory(md, cpu(), const_cast<void *>(p)); }
Md bytes_md(size_t n) { return Md({static_cast<int64_t>(std::max<size_t>(n, 1))}, DnnlDt::u8, memory::format_tag::x); }

}  // namespace

struct DnnlState {
    Geometry g;
    DnnlDt t = DnnlDt::f32;
    std::string impl;
    // ---- DataPass ----
    DataPass::Kind kind = DataPass::Kind::Forward;
    std::optional<dnnl::primitive> conv;
    Md a_user, a_blk, w_user, w_blk, c_user, c_blk, scratch_md;
    Reorder a_in, w_in, c_out;
    size_t a_image = 0, c_image = 0;  // bytes / elements per image of the user arrays
    // ---- WeightPass ----
    struct Variant {
        int64_t n = 0;
        std::optional<dnnl::convolution_backward_weights> prim;
        Md src_user, src_blk, ddst_user, ddst_blk;
        Reorder src_in, ddst_in;
    };
    std::vector<Variant> variants;  // by chunk size: [0] the larger
    std::vector<int64_t> chunk_start, chunk_size;
    Md dw_blk;
    Reorder dw_out;
    size_t src_image = 0, ddst_image = 0, dw_elems = 0;
};

// ---------------------------------------------------------------------------------------------

DataPass::DataPass(const Geometry &g, Kind kind, Dt in_dt) : s_(std::make_unique<DnnlState>()) {
    OneThread one;
    DnnlState &s = *s_;
    s.g = g;
    s.kind = kind;
    s.t = ddt(in_dt);
    const auto attr = user_scratch();
    size_t scratch = 0;
    if (kind == Kind::Forward) {
        const auto pd = forward_pd(g, 1, s.t, DnnlDt::f32, dnnl::prop_kind::forward_inference, attr);
        s.a_user = plain(g, 1, g.IC, g.src_used, g.src, s.t);
        s.a_blk = pd.src_desc();
        s.w_blk = pd.weights_desc();
        s.c_user = plain(g, 1, g.OC, g.dst, g.dst, DnnlDt::f32);
        s.c_blk = pd.dst_desc();
        scratch = pd.scratchpad_desc().get_size();
        s.impl = pd.impl_info_str();
        s.conv.emplace(dnnl::convolution_forward(pd));
        s.a_image = static_cast<size_t>(g.IC * g.src_plane()) * dsize(s.t);
        s.c_image = static_cast<size_t>(g.OC * g.dst_plane());
    } else {
        const auto hint = forward_pd(g, 1, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        const Params p(g);
        const bool pl = plain_layout(g, s.t);
        const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct,
                                                      act(g, src_dims(g, 1), DnnlDt::f32, pl), any(weight_dims(g), s.t),
                                                      act(g, dst_dims(g, 1), s.t, pl), p.strides, p.dil, p.pl, p.pr);
        const dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu(), hint);
        s.a_user = plain(g, 1, g.OC, g.dst, g.dst, s.t);
        s.a_blk = pd.diff_dst_desc();
        s.w_blk = pd.weights_desc();
        s.c_user = plain(g, 1, g.IC, g.src_used, g.src, DnnlDt::f32);
        s.c_blk = pd.diff_src_desc();
        scratch = pd.scratchpad_desc().get_size();
        s.impl = pd.impl_info_str();
        s.conv.emplace(dnnl::convolution_backward_data(pd));
        s.a_image = static_cast<size_t>(g.OC * g.dst_plane()) * dsize(s.t);
        s.c_image = static_cast<size_t>(g.IC * g.src_plane());
    }
    s.w_user = weights_plain(g, s.t);
    s.a_in = Reorder(s.a_user, s.a_blk);
    s.w_in = Reorder(s.w_user, s.w_blk);
    s.c_out = Reorder(s.c_blk, s.c_user);
    scratch = std::max({scratch, s.a_in.scratch, s.w_in.scratch, s.c_out.scratch});
    s.scratch_md = bytes_md(scratch);
    // [0] blocked weights, [1] the blocked operand of all images, then per image: blocked result,
    // scratchpad
    buffers_.push_back(s.w_in.prim ? s.w_blk.get_size() : 0);
    buffers_.push_back(s.a_in.prim ? s.a_blk.get_size() * static_cast<uint64_t>(g.N) : 0);
    for (int64_t n = 0; n < g.N; ++n) {
        buffers_.push_back(s.c_out.prim ? s.c_blk.get_size() : 0);
        buffers_.push_back(scratch);
    }
}

DataPass::~DataPass() = default;
const char *DataPass::impl() const { return s_->impl.c_str(); }

int64_t DataPass::image_elems() const { return static_cast<int64_t>(s_->c_image); }

bool DataPass::blocks_operand() const { return s_->a_in.prim.has_value(); }

void DataPass::prepare(const void *a, void *const *bufs) const {
    const DnnlState &s = *s_;
    const size_t blk = s.a_blk.get_size();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t n = r.begin(); n < r.end(); ++n)
            s.a_in.run(st, mem(s.a_user, static_cast<const uint8_t *>(a) + static_cast<size_t>(n) * s.a_image),
                       mem(s.a_blk, static_cast<uint8_t *>(bufs[1]) + static_cast<size_t>(n) * blk), bufs[3 + 2 * n],
                       s.scratch_md);
        st.wait();
    });
}

void DataPass::run(const void *a, const void *w, float *out, void *const *bufs,
                   const std::function<void(int64_t, const float *)> &done, bool prepared) const {
    const DnnlState &s = *s_;
    {
        OneThread one;
        dnnl::stream st(cpu());
        s.w_in.run(st, mem(s.w_user, w), mem(s.w_blk, bufs[0]), bufs[3], s.scratch_md);
        st.wait();
    }
    const memory weights = mem(s.w_in.prim ? s.w_blk : s.w_user, s.w_in.prim ? bufs[0] : w);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, s.g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t n = r.begin(); n < r.end(); ++n) {
            // b[0]: this image's blocked operand, b[1]: blocked result, b[2]: scratchpad
            void *const b[3] = {static_cast<uint8_t *>(bufs[1]) + static_cast<size_t>(n) * s.a_blk.get_size(), bufs[2 + 2 * n],
                                bufs[3 + 2 * n]};
            const memory a_user = mem(s.a_user, static_cast<const uint8_t *>(a) + static_cast<size_t>(n) * s.a_image);
            const memory c_user = mem(s.c_user, out + static_cast<size_t>(n) * s.c_image);
            const memory a_blk = s.a_in.prim ? mem(s.a_blk, b[0]) : a_user;
            const memory c_blk = s.c_out.prim ? mem(s.c_blk, b[1]) : c_user;
            if (!prepared) s.a_in.run(st, a_user, a_blk, b[2], s.scratch_md);
            std::unordered_map<int, memory> args{{DNNL_ARG_WEIGHTS, weights}};
            if (s.kind == Kind::Forward) {
                args.emplace(DNNL_ARG_SRC, a_blk);
                args.emplace(DNNL_ARG_DST, c_blk);
            } else {
                args.emplace(DNNL_ARG_DIFF_DST, a_blk);
                args.emplace(DNNL_ARG_DIFF_SRC, c_blk);
            }
            if (s.scratch_md.get_size() > 1) args.emplace(DNNL_ARG_SCRATCHPAD, mem(s.scratch_md, b[2]));
            s.conv->execute(st, args);
            s.c_out.run(st, c_blk, c_user, b[2], s.scratch_md);
            if (done) {
                st.wait();
                done(n, out + static_cast<size_t>(n) * s.c_image);
            }
        }
        st.wait();
    });
}

// ---------------------------------------------------------------------------------------------

WeightPass::WeightPass(const Geometry &g, Dt in_dt) : s_(std::make_unique<DnnlState>()) {
    OneThread one;
    DnnlState &s = *s_;
    s.g = g;
    s.t = ddt(in_dt);
    // Fewer partials when the weights are large next to the activations (their sum costs memory
    // traffic); decided by the shape only, never by the thread count.
    const int64_t act_elems = g.N * (g.IC * g.src_plane() + g.OC * g.dst_plane());
    const int64_t chunks = std::min(g.N, g.weight_elems() * kWeightChunks <= act_elems ? kWeightChunks : int64_t{2});
    const int64_t base = g.N / chunks, rem = g.N % chunks;
    int64_t start = 0;
    for (int64_t k = 0; k < chunks; ++k) {
        s.chunk_start.push_back(start);
        s.chunk_size.push_back(base + (k < rem ? 1 : 0));
        start += s.chunk_size.back();
    }
    const auto attr = user_scratch();
    const Params p(g);
    size_t scratch = 0;
    for (const int64_t n : {base + (rem ? 1 : 0), base}) {
        if (!s.variants.empty() && s.variants.front().n == n) break;
        DnnlState::Variant v;
        v.n = n;
        const auto hint = forward_pd(g, n, s.t, s.t, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
        // The second chunk size must produce partials in the first one's layout: they are summed.
        const Md dw = s.variants.empty() ? any(weight_dims(g), DnnlDt::f32) : s.dw_blk;
        const bool pl = plain_layout(g, s.t);
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
    scratch = std::max(scratch, s.dw_out.scratch);
    s.scratch_md = bytes_md(scratch);
    s.src_image = static_cast<size_t>(g.IC * g.src_plane()) * dsize(s.t);
    s.ddst_image = static_cast<size_t>(g.OC * g.dst_plane()) * dsize(s.t);
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

bool WeightPass::can_share(const DataPass &d, bool diff_dst) const {
    const DnnlState &ds = *d.s_;
    if (!ds.a_in.prim || ds.t != s_->t) return false;
    for (const DnnlState::Variant &v : s_->variants) {
        if (!(diff_dst ? v.ddst_in.prim : v.src_in.prim)) return false;
        dnnl_memory_desc_t c = ds.a_blk.data;  // the one-image layout, widened to the chunk
        c.dims[0] = v.n;
        c.padded_dims[0] = v.n;
        const Md want(c);
        if (want != (diff_dst ? v.ddst_blk : v.src_blk) || want.get_size() != ds.a_blk.get_size() * static_cast<size_t>(v.n))
            return false;
    }
    return true;
}

void WeightPass::drop_blocked_buffers(bool diff_dst) {
    for (size_t k = 0; k < buffers_.size(); k += 4) buffers_[k + (diff_dst ? 1 : 0)] = 0;
}

void WeightPass::run(const void *src, const void *diff_dst, float *out, void *const *bufs, const void *pre_src,
                     const void *pre_diff_dst) const {
    const DnnlState &s = *s_;
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
    });
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
    else std::copy(sum, sum + s.g.weight_elems(), out);
    st.wait();
}

}  // namespace conv
