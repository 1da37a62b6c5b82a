// Tensors that share memory. On the card an operator computes its outputs into its own buffers and
// copies them out last, so an output may reuse an input's memory (gradInput over gradOutput). Here
// kernels write outputs while other nodes still read inputs, so phase 2 first copies every input an
// output overlaps and lets the kernels read the copy. Two outputs that overlap each other have no
// defined result (which one lands last would depend on scheduling): 161002. Overlap means a shared
// byte, not a shared span: views interleaved in one buffer are apart.
#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "aclnn_cpu/dtype.hpp"
#include "executor.hpp"

namespace aclcpu {
namespace {

// The bytes [lo, hi) a view spans from element 0 at `base` (strides >= 0); empty for no elements.
struct ByteRange {
    uintptr_t lo = 0, hi = 0;
    bool empty() const { return lo == hi; }
    bool meets(const ByteRange &o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

ByteRange byte_range(const acp_tensor_desc &d, const uint8_t *base) {
    if (!base) return {};
    __int128 last = 0;  // offset of the farthest element
    for (uint32_t k = 0; k < d.rank; ++k) {
        if (d.dims[k] == 0) return {};
        last += static_cast<__int128>(d.dims[k] - 1) * d.strides[k];
    }
    const auto lo = reinterpret_cast<uintptr_t>(base);
    const __int128 hi = lo + (last + 1) * static_cast<__int128>(acp::dtype_size(d.dtype));
    return {lo, hi > static_cast<__int128>(UINTPTR_MAX) ? UINTPTR_MAX : static_cast<uintptr_t>(hi)};
}

std::string range_str(const ByteRange &r) { return std::to_string(r.hi - r.lo) + " bytes at " + std::to_string(r.lo); }

// Beyond this many runs a view counts as touching its whole span (the answer stays safe: a copy
// or a refusal too many, never a missed overlap).
constexpr size_t kMaxRuns = size_t{1} << 20;

// The bytes a view touches, as sorted, disjoint runs: its spans only meet another's where the views'
// elements are interleaved (every other channel, images a large stride apart), which is no sharing.
// nullopt beyond kMaxRuns.
std::optional<std::vector<ByteRange>> touched_runs(const acp_tensor_desc &d, const uint8_t *base) {
    const int64_t size = static_cast<int64_t>(acp::dtype_size(d.dtype));
    struct Dim { int64_t n, stride; };  // stride in bytes
    std::vector<Dim> dims;
    for (uint32_t k = 0; k < d.rank; ++k) {
        if (d.dims[k] == 0) return std::vector<ByteRange>{};
        if (d.dims[k] > 1 && d.strides[k] > 0) dims.push_back({d.dims[k], d.strides[k] * size});  // a 0 stride adds no byte
    }
    std::sort(dims.begin(), dims.end(), [](const Dim &a, const Dim &b) { return a.stride > b.stride; });
    size_t kept = 0;  // a dim whose step is the whole of the next one's merges with it
    for (const Dim &dim : dims)
        if (kept > 0 && dims[kept - 1].stride == dim.n * dim.stride) dims[kept - 1] = {dims[kept - 1].n * dim.n, dim.stride};
        else dims[kept++] = dim;
    dims.resize(kept);
    int64_t run = size;  // the innermost dims that are contiguous form one run
    while (!dims.empty() && dims.back().stride == run) run *= dims.back().n, dims.pop_back();
    size_t count = 1;
    for (const Dim &dim : dims) {
        if (static_cast<size_t>(dim.n) > kMaxRuns / count) return std::nullopt;
        count *= static_cast<size_t>(dim.n);
    }
    std::vector<ByteRange> runs;
    runs.reserve(count);
    std::vector<int64_t> idx(dims.size(), 0);
    const auto lo0 = reinterpret_cast<uintptr_t>(base);
    for (size_t r = 0; r < count; ++r) {
        int64_t off = 0;
        for (size_t k = 0; k < dims.size(); ++k) off += idx[k] * dims[k].stride;
        runs.push_back({lo0 + static_cast<uintptr_t>(off), lo0 + static_cast<uintptr_t>(off + run)});
        for (size_t k = dims.size(); k-- > 0;) {  // odometer, innermost first
            if (++idx[k] < dims[k].n) break;
            idx[k] = 0;
        }
    }
    const auto by_start = [](const ByteRange &a, const ByteRange &b) { return a.lo < b.lo; };
    if (!std::is_sorted(runs.begin(), runs.end(), by_start)) std::sort(runs.begin(), runs.end(), by_start);  // rows in order: the usual case
    size_t w = 0;  // merge runs that touch or overlap (a view may overlap itself)
    for (const ByteRange &r : runs)
        if (w > 0 && r.lo <= runs[w - 1].hi) runs[w - 1].hi = std::max(runs[w - 1].hi, r.hi);
        else runs[w++] = r;
    runs.resize(w);
    return runs;
}

// Whether two views share a byte: their spans first, then (where the spans meet) the bytes they touch.
bool share_bytes(const acp_tensor_desc &a, const uint8_t *pa, const acp_tensor_desc &b, const uint8_t *pb) {
    if (!byte_range(a, pa).meets(byte_range(b, pb))) return false;
    const auto ra = touched_runs(a, pa), rb = touched_runs(b, pb);
    if (!ra || !rb) return true;
    for (size_t i = 0, j = 0; i < ra->size() && j < rb->size();) {
        if ((*ra)[i].hi <= (*rb)[j].lo) ++i;
        else if ((*rb)[j].hi <= (*ra)[i].lo) ++j;
        else return true;
    }
    return false;
}

}  // namespace

void check_outputs_apart(const aclOpExecutor &exec, std::span<uint8_t *const> data) {
    for (size_t a = 0; a < exec.outputs.size(); ++a)
        for (size_t b = a + 1; b < exec.outputs.size(); ++b) {
            const auto i = static_cast<size_t>(exec.outputs[a]), j = static_cast<size_t>(exec.outputs[b]);
            if (!exec.args[i].present || !exec.args[j].present) continue;
            if (share_bytes(*exec.args[i].tensor, data[i], *exec.args[j].tensor, data[j])) {
                const ByteRange ri = byte_range(*exec.args[i].tensor, data[i]), rj = byte_range(*exec.args[j].tensor, data[j]);
                fail(ACLNN_ERR_PARAM_INVALID, std::string(exec.args[i].name) + " and " + exec.args[j].name +
                                                  " are outputs and must not share memory, got " + range_str(ri) +
                                                  " and " + range_str(rj));
            }
        }
}

InputCopies copy_inputs_outputs_overlap(const aclOpExecutor &exec, std::span<uint8_t *> data) {
    InputCopies copies;
    for (const int in : exec.inputs) {
        const auto i = static_cast<size_t>(in);
        if (!exec.args[i].present) continue;
        const acp_tensor_desc &d = *exec.args[i].tensor;
        bool overlapped = false;
        for (const int out : exec.outputs) {
            const auto o = static_cast<size_t>(out);
            overlapped = overlapped || (exec.args[o].present && share_bytes(d, data[i], *exec.args[o].tensor, data[o]));
        }
        if (!overlapped) continue;
        // The copy has the view's span, so the kernels keep its strides; only the bytes the view
        // touches are copied (the span's other pages may be unmapped, and stay untouched here).
        const ByteRange span = byte_range(d, data[i]);
        std::unique_ptr<uint8_t[]> copy(new (std::nothrow) uint8_t[span.hi - span.lo]);
        if (!copy)
            fail(ACLNN_ERR_INNER, std::string(exec.args[i].name) + " shares memory with an output and its copy (" +
                                      std::to_string(span.hi - span.lo) + " bytes) does not fit in host memory");
        for (const ByteRange &r : touched_runs(d, data[i]).value_or(std::vector<ByteRange>{span}))
            std::memcpy(copy.get() + (r.lo - span.lo), reinterpret_cast<const uint8_t *>(r.lo), r.hi - r.lo);
        data[i] = copy.get();  // same strides from the copy's element 0
        copies.push_back(std::move(copy));
    }
    return copies;
}

}  // namespace aclcpu
