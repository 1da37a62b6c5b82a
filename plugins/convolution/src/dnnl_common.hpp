// oneDNN plumbing shared by the two passes (dnnl_data_pass.cpp, dnnl_weight_pass.cpp; defined in
// dnnl_common.cpp): descriptors of the caller's dense arrays, the shape rules that choose a
// decomposition, reorders (our own where they are faster), and DnnlState, a pass's oneDNN objects.
// Internal to the convolution plugin.
#ifndef CONVOLUTION_SRC_DNNL_COMMON_HPP_
#define CONVOLUTION_SRC_DNNL_COMMON_HPP_

#include <omp.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <array>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "aclnn_cpu/slot_pool.hpp"
#include "blocked_store.hpp"
#include "dnnl_pass.hpp"

namespace conv {
namespace onednn {

using dnnl::memory;
using Md = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using DnnlDt = dnnl::memory::data_type;

dnnl::engine &cpu();

// oneDNN's Debian build threads with OpenMP; every call we make runs it on the calling thread only,
// so that its algorithms (and their reduction orders) never depend on a thread count.
struct OneThread {
    int prev;
    OneThread() : prev(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(prev); }
    OneThread(const OneThread &) = delete;
    OneThread &operator=(const OneThread &) = delete;
};

// Tasks 0 .. n - 1 over TBB's threads, one task per range: f(stream, k) runs oneDNN on the calling
// thread only (OneThread), on a stream of its own, waited for at the end of the range.
template <class F>
void each_task(int64_t n, const F &f) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1), [&](const tbb::blocked_range<int64_t> &r) {
        OneThread one;
        dnnl::stream st(cpu());
        for (int64_t k = r.begin(); k < r.end(); ++k) f(st, k);
        st.wait();
    }, tbb::simple_partitioner());
}

inline DnnlDt ddt(Dt d) { return d == Dt::BF16 ? DnnlDt::bf16 : DnnlDt::f32; }
inline size_t dsize(DnnlDt d) { return d == DnnlDt::f32 ? 4 : 2; }

Dims take(const Geometry &g, const std::array<int64_t, 3> &a, int64_t add = 0);
// n images of c channels, spatial extent `used` inside a dense array of extent `full` whose images
// hold c_all >= c channels (a channel slice when c_all > c).
Md plain(const Geometry &g, int64_t n, int64_t c, const std::array<int64_t, 3> &used, const std::array<int64_t, 3> &full,
         DnnlDt t, int64_t c_all = 0);
Dims weight_dims(const Geometry &g);
Dims dense_strides(const Dims &d);  // row-major strides of an array of extents d
Md weights_plain(const Geometry &g, DnnlDt t);  // dense (OC, IC/G, K...)
Md any(const Dims &d, DnnlDt t);                // oneDNN's choice of layout

// The weights outweigh the activations: weights x kWeightChunks > activations (the passes then run
// by channel blocks), or weights alone > activations (so does the BF16 weight pass). dnnl_common.cpp.
bool weights_dominate(const Geometry &g);
bool weights_outweigh_outright(const Geometry &g);
// FLOAT pointwise convolutions on plain NCHW layouts (oneDNN's GEMM path); why and where: dnnl_common.cpp.
bool plain_layout(const Geometry &g, DnnlDt t);
// The backward-data pass of a 2-D convolution with few input channels, on plain layouts too (its
// GEMM path; dnnl_common.cpp).
bool plain_data_layout(const Geometry &g);
// An activation descriptor for primitive creation: plain when plain_layout, else oneDNN's choice.
Md act(const Geometry &g, const Dims &d, DnnlDt t, bool plain);
Dims src_dims(const Geometry &g, int64_t n);
Dims dst_dims(const Geometry &g, int64_t n);
dnnl::primitive_attr user_scratch();  // scratchpads in our workspace, never allocated by oneDNN

struct Params {
    Dims strides, dil, pl, pr;
    explicit Params(const Geometry &g)
        : strides(take(g, g.stride)), dil(take(g, g.dil, -1)), pl(take(g, g.pad_l)), pr(take(g, g.pad_r)) {}
};

// Output rows wider than this are not given to oneDNN's brgconv (its creation time grows with them).
inline constexpr int64_t kWideRow = 4096;

// Rows wider than this are not given to oneDNN 2.6's AMX BF16 gradWeight kernel (see weights_pd).
inline constexpr int64_t kAmxWeightsRow = 512;

// The gradWeight and gradInput primitives for d: oneDNN's first choice, except where that choice
// computes wrong values or never finishes creating (weights_pd in dnnl_common.cpp).
dnnl::convolution_backward_weights::primitive_desc weights_pd(const Geometry &g, const dnnl::convolution_backward_weights::desc &d,
                                                              const dnnl::primitive_attr &attr,
                                                              const dnnl::convolution_forward::primitive_desc &hint);
dnnl::convolution_backward_data::primitive_desc data_pd(const Geometry &g, const dnnl::convolution_backward_data::desc &d,
                                                        const dnnl::primitive_attr &attr,
                                                        const dnnl::convolution_forward::primitive_desc &hint);

// weights: a fixed weights layout, or null for oneDNN's choice.
dnnl::convolution_forward::primitive_desc forward_pd(const Geometry &g, int64_t n, DnnlDt t, DnnlDt dst_t,
                                                     dnnl::prop_kind prop, const dnnl::primitive_attr &attr,
                                                     const Md *weights = nullptr);

// Dense images (N, C, spatial...; a channel slice of wider images too) into BF16 nC[spatial]16c or
// FLOAT / BF16 channels-last (the forward primitives' brgemm kernels read that): our own block_acts
// (blocked_store.hpp) instead of oneDNN's reorder (dnnl_common.cpp says how much faster). Its
// shape, when `from` -> `to` is that.
struct OwnBlock {
    int64_t N = 0, C = 0, plane = 0, src_image = 0, dst_image = 0;
    ActLayout layout = ActLayout::C16;
};

// Dense weights (O, I, K...; a slice of input channels of wider ones too) into the tiles of the
// data passes (FLOAT ABcd16a16b, BF16 ABcd8a16b2a / BAcd8a16b2a): our own block_weights, 2-5x
// faster than oneDNN's reorder. Its shape, when `from` -> `to` is that.
struct OwnWeights {
    int64_t O = 0, I = 0, K = 1, o_stride = 0;
    WeightTiles tiles = WeightTiles::F32_16a16b;
    bool a_outer = true;
};

// A reorder between two layouts of the same tensor; none when they are the same. (prim is set
// whenever the layouts differ, also when our own block_acts / block_weights does the work.)
struct Reorder {
    std::optional<dnnl::reorder> prim;
    std::optional<OwnBlock> own;
    std::optional<OwnWeights> own_w;
    size_t scratch = 0;
    Reorder() = default;
    Reorder(const Md &from, const Md &to);
    void run(dnnl::stream &st, const memory &from, const memory &to, void *scratch_ptr, const Md &scratch_md) const;
};

memory mem(const Md &md, const void *p);
Md bytes_md(size_t n);  // a scratchpad of n bytes

// The memory objects of one task slot (DnnlState::memories), made on first use and re-pointed
// (set_data_handle) after. Making one costs two allocations, and a task made four to six: on a
// 1x4x6x6 3x3 problem that was a sixth of the run. A slot serves one task at a time (SlotPool), a
// pass one executor (pass_cache.hpp), and an executor one run at a time: nothing here is shared.
class SlotMemories {
public:
    static constexpr size_t kRoles = 8;
    // The object of role `role` (each task body numbers its own) re-pointed at p, or made anew when
    // the role held another descriptor. The reference stays valid until the role's next at().
    const memory &at(size_t role, const Md &md, const void *p);

private:
    std::array<std::optional<memory>, kRoles> m_;
};

// One primitive's execute() arguments, passed to the C API as an array: the C++ API's
// unordered_map cost a few allocations a task.
class ExecArgs {
public:
    ExecArgs &add(int arg, const memory &m);
    void execute(const dnnl::primitive &p, dnnl::stream &st) const;

private:
    std::array<dnnl_exec_arg_t, 6> a_{};
    int n_ = 0;
};

// Layouts our own stores (blocked_store.hpp) read: a FLOAT result in nC[spatial]16c over the whole
// spatial extent, and FLOAT ungrouped weights in 16x16 tiles (o_inner: ABcd16b16a). Whatever else
// oneDNN picks goes through its reorder.
std::optional<ActLayout> own_acts(const Md &blk, bool full_extent);
// The FLOAT weights layout of a forward primitive as mirror_weights writes it (blocked_store.hpp),
// when it is one (Acdb16a / 32a / 64a and their 1-D / 3-D forms, at most 16 kernel positions).
std::optional<MirrorLayout> mirror_layout(const Md &w);
// The dense activation layout md is, of those our moves know (blocked_store.hpp's ActLayout).
std::optional<ActLayout> act_layout(const Md &md);
// 1: ABcd16b16a (input-major tiles), 0: ABcd16a16b, -1: neither
int own_weights(const Geometry &g, const Md &blk);

// The widened layout of one image's blocked operand: the same tensor for n images.
Md widen(const Md &one, int64_t n);
// Blocks of c channels for a pass split by channels, or 0 (how many and why: dnnl_common.cpp).
int64_t channel_blocks(const Geometry &g, int64_t c, DnnlDt t);

}  // namespace onednn

struct DnnlState {
    Geometry g;
    // The passes' sets of per-task buffers (acp::SlotPool): min(tasks, threads) of them, not one per
    // task. (One per task had reserved, on ResNet-50's BF16 1x1 layers, 8 oneDNN scratchpads and
    // blocked results where 2 are ever in use: 26 MB of a 68 MB workspace never touched.)
    acp::SlotPool slots;
    mutable std::vector<onednn::SlotMemories> memories;  // one set per slot
    void set_slots(int64_t n) {
        slots.resize(n);
        memories.assign(static_cast<size_t>(slots.size()), {});
    }
    // DataPass, BackwardData run as the mirrored forward (mirrored.hpp): g is the mirrored geometry,
    // the caller's weights are mirrored straight into w_blk
    std::optional<MirrorLayout> mirror;
    onednn::DnnlDt t = onednn::DnnlDt::f32;
    std::string impl;
    // chunks of the minibatch (both passes): first image and size of each, in order
    std::vector<int64_t> chunk_start, chunk_size;
    // ---- DataPass ----
    DataPass::Kind kind = DataPass::Kind::Forward;
    struct DataVariant {
        int64_t n = 0;
        std::optional<dnnl::primitive> conv;
        onednn::Md a_user, a_blk, c_user, c_blk;
        onednn::Reorder a_in, c_out;
        bool c_own = false;  // c_blk stored by unblock_acts instead of c_out
        ActLayout c_layout = ActLayout::C16;  // (c_own) c_blk's layout
    };
    std::vector<DataVariant> dvars;  // by chunk size: [0] the larger
    std::vector<size_t> a_blk_at;    // per chunk: byte offset of its blocked operand in buffer 1
    bool uniform_blk = false;        // the blocked operand is image after image, one layout per image
    onednn::Md w_user, w_blk, scratch_md;
    onednn::Reorder w_in;
    size_t a_image = 0, c_image = 0;  // bytes / elements per image of the user arrays
    int64_t c_channels = 0, c_plane = 0;  // result channels of one call (all, or one block's) and plane
    const DataVariant &dvar(size_t k) const { return dvars[chunk_size[k] == dvars[0].n ? 0 : 1]; }
    // By result-channel blocks (dvars[0] is the one block's primitive over the whole minibatch):
    // the operand blocked once image by image (a_one_in), each block reorders its slice of the
    // weights (w_in from w_user, at w_step bytes per block) and writes its channels of the result
    // (c_user, at c_step floats per block).
    bool d_by_channel = false;
    int64_t d_blocks = 0;
    onednn::Md a_one_user, a_one_blk;
    onednn::Reorder a_one_in;
    size_t w_step = 0, c_step = 0;
    // ---- WeightPass ----
    struct Variant {
        int64_t n = 0;
        std::optional<dnnl::convolution_backward_weights> prim;
        onednn::Md src_user, src_blk, ddst_user, ddst_blk;
        onednn::Reorder src_in, ddst_in;
    };
    std::vector<Variant> variants;  // by chunk size: [0] the larger
    onednn::Md dw_blk;
    onednn::Reorder dw_out;
    int dw_own = -1;  // own_weights(dw_blk): stored by unblock_weights instead of dw_out
    size_t src_image = 0, ddst_image = 0, dw_elems = 0;
    // By output-channel blocks (variants[0] is the one block's primitive over the whole minibatch):
    // src blocked once (image by image when the layout is image after image), each block reorders
    // its channel slice of diff_dst and writes its rows of diff_W.
    bool by_channel = false;
    int64_t blocks = 0, block_oc = 0;
    onednn::Md src_one_user, src_one_blk;  // one image, for the per-image src reorder (src_one_in)
    onednn::Reorder src_one_in;
    bool src_per_image = false;
    // By one matmul (dnnl_pointwise_weights.cpp): diff_W = diff_dst' . src'^T in mm_blocks tasks,
    // each over a block of OC rows; mm_a / mm_b / mm_c one block's operands.
    bool by_matmul = false;
    int64_t mm_blocks = 1;
    std::optional<dnnl::matmul> mm;
    onednn::Md mm_a, mm_b, mm_c;
};

namespace onednn {
// `chunks` near-equal chunks of the minibatch, the larger first.
void split(DnnlState &s, int64_t n, int64_t chunks);
}  // namespace onednn

}  // namespace conv

#endif  // CONVOLUTION_SRC_DNNL_COMMON_HPP_
