// The compute engine: oneDNN convolution primitives run over a decomposition fixed by the shape only,
// so that results are bitwise identical at any thread count.
//   DataPass    dst = fwd(src, W) or diff_src = bwd_data(diff_dst, W): where the weights outweigh
//               the activations, by blocks of result channels, each one call over the whole
//               minibatch with its slice of the weights; otherwise one image per task, or a chunk of
//               images per task on small planes (under 196 positions). A unit-stride FLOAT
//               bwd_data runs as the forward of the mirrored convolution (mirrored.hpp).
//   WeightPass  diff_W = bwd_weights(src, diff_dst) - pointwise BF16 layers on CPUs with AMX by one
//               matmul instead (dnnl_pointwise_weights.cpp); elsewhere: where the weights outweigh the activations
//               (in BF16: outright), by blocks of output channels, each one call over the whole
//               minibatch writing its rows of diff_W (no partials); otherwise the minibatch in
//               chunks (two where the weights come near the activations, else kWeightChunks), each
//               writing its own partial diff_W, summed in chunk order.
// Each task runs oneDNN single-threaded (OpenMP pinned to 1 thread on the calling TBB worker), with
// its own scratchpad and blocked-layout buffers in slices of the executor's workspace.
// Operands are dense row-major (N, C, spatial...) arrays; the results are dense FLOAT arrays or,
// where our own store reads oneDNN's blocked result (rounds_output()), dense FLOAT16 / BF16 arrays
// rounded once from the FLOAT result in the same pass (blocked_store.hpp).
#ifndef CONVOLUTION_SRC_DNNL_PASS_HPP_
#define CONVOLUTION_SRC_DNNL_PASS_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "blocked_store.hpp"
#include "conv_types.hpp"

namespace conv {

inline constexpr int64_t kWeightChunks = 4;

struct DnnlState;  // oneDNN objects, kept out of this header

class DataPass {
public:
    enum class Kind { Forward, BackwardData };
    // threads: the executor's; tasks that run side by side share that many sets of buffers at most.
    DataPass(const Geometry &g, Kind kind, Dt in_dt, int64_t threads);
    ~DataPass();
    DataPass(const DataPass &) = delete;
    DataPass &operator=(const DataPass &) = delete;

    // Workspace slices the pass needs (bytes each), reserved by the plan in this order.
    const std::vector<uint64_t> &buffers() const { return buffers_; }
    // a: the chunked operand (src or diff_dst), w: weights (OC, IC/G, K...), out: the result in
    // out_dt (FLOAT16 / BF16 only when rounds_output()). done(n, image), when given for a FLOAT
    // result, runs on each image's result right after it is written (still hot in cache).
    // prepared: prepare() already put the operand in its blocked buffer.
    void run(const void *a, const void *w, void *out, OutDt out_dt, void *const *bufs,
             const std::function<void(int64_t, const float *)> &done = {}, bool prepared = false) const;
    // Whether run() can write the result rounded to FLOAT16 / BF16 itself.
    bool rounds_output() const;
    int64_t image_elems() const;  // FLOAT elements of one image's result

    // The operand in oneDNN's blocked layout, all images one after another in buffer 1 (so that the
    // weight pass can read the same copy): whether there is one, and filling it (parallel).
    bool blocks_operand() const;
    void prepare(const void *a, void *const *bufs) const;
    static constexpr int kBlockedOperandBuffer = 1;
    const char *impl() const;
    int64_t channel_blocks() const;  // result-channel blocks, 0 when split by images
    // BackwardData run as the forward of the mirrored convolution (mirrored.hpp): the operand's
    // blocked layout is then channels-last.
    bool mirrored() const;

private:
    friend class WeightPass;
    void init(const Geometry &g, Kind kind, Dt in_dt, int64_t threads);
    void block_images(const void *a, void *const *bufs) const;
    void run_by_channel(const void *a, const void *w, void *out, OutDt out_dt, void *const *bufs,
                        const std::function<void(int64_t, const float *)> &done, bool prepared) const;
    std::unique_ptr<DnnlState> s_;
    std::vector<uint64_t> buffers_;
};

class WeightPass {
public:
    WeightPass(const Geometry &g, Dt in_dt, int64_t threads);
    ~WeightPass();
    WeightPass(const WeightPass &) = delete;
    WeightPass &operator=(const WeightPass &) = delete;

    const std::vector<uint64_t> &buffers() const { return buffers_; }
    // src, diff_dst dense; out: diff weights (OC, IC/G, K...) in out_dt (FLOAT16 / BF16 only when
    // rounds_output()). pre_src / pre_diff_dst: the operand already in the blocked layout this pass
    // reads (a DataPass's prepared copy), or null.
    void run(const void *src, const void *diff_dst, void *out, OutDt out_dt, void *const *bufs, const void *pre_src = nullptr,
             const void *pre_diff_dst = nullptr) const;
    // Whether run() can write the result rounded to FLOAT16 / BF16 itself.
    bool rounds_output() const;
    // True when the data pass's prepared operand has the blocked layout this pass reads for its
    // src (diff_dst = false) or diff_dst (true), image for image.
    bool can_share(const DataPass &d, bool diff_dst) const;
    // buffers() without this pass's own blocked copy of that operand (it reads the shared one).
    std::vector<uint64_t> buffers_sharing(bool diff_dst) const;
    const char *impl() const;
    int64_t channel_blocks() const;  // output-channel blocks, 0 when split by the minibatch
    // The minibatch split (0 when by channel blocks or by one matmul): run() is run_chunks over
    // every chunk, each writing its own partial, then sum_chunks (the partials in chunk order into
    // out). A plan may run ranges of chunks as nodes of their own, sum_chunks after them all.
    int64_t chunks() const;
    void run_chunks(const void *src, const void *diff_dst, void *const *bufs, const void *pre_src, const void *pre_diff_dst,
                    int64_t k0, int64_t k1) const;
    void sum_chunks(void *out, OutDt out_dt, void *const *bufs) const;

private:
    void run_by_channel(const void *src, const void *diff_dst, void *out, OutDt out_dt, void *const *bufs, const void *pre_src) const;
    // Pointwise BF16 layers by one matmul where oneDNN runs it on AMX (dnnl_pointwise_weights.cpp):
    // init_matmul says whether this pass is one, run_matmul runs it.
    bool init_matmul(const Geometry &g, int64_t threads);
    void run_matmul(const void *src, const void *diff_dst, void *out, void *const *bufs) const;
    std::unique_ptr<DnnlState> s_;
    std::vector<uint64_t> buffers_;
};

}  // namespace conv

#endif  // CONVOLUTION_SRC_DNNL_PASS_HPP_
