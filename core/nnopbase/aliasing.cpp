// Tensors that share memory. On the card an operator computes its outputs into its own buffers and
// copies them out last, so an output may reuse an input's memory (gradInput over gradOutput). Here
// kernels write outputs while other nodes still read inputs, so phase 2 first copies every input an
// output overlaps and lets the kernels read the copy. Two outputs that overlap each other have no
// defined result (which one lands last would depend on scheduling): 161002.
#include <cstring>
#include <new>
#include <string>

#include "aclnn_cpu/dtype.hpp"
#include "executor.hpp"

namespace aclcpu {
namespace {

// The bytes [lo, hi) a view touches from element 0 at `base` (strides >= 0); empty for no elements.
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

}  // namespace

void check_outputs_apart(const aclOpExecutor &exec, std::span<uint8_t *const> data) {
    for (size_t a = 0; a < exec.outputs.size(); ++a)
        for (size_t b = a + 1; b < exec.outputs.size(); ++b) {
            const auto i = static_cast<size_t>(exec.outputs[a]), j = static_cast<size_t>(exec.outputs[b]);
            if (!exec.args[i].present || !exec.args[j].present) continue;
            const ByteRange ri = byte_range(*exec.args[i].tensor, data[i]), rj = byte_range(*exec.args[j].tensor, data[j]);
            if (ri.meets(rj))
                fail(ACLNN_ERR_PARAM_INVALID, std::string(exec.args[i].name) + " and " + exec.args[j].name +
                                                  " are outputs and must not share memory, got " + range_str(ri) +
                                                  " and " + range_str(rj));
        }
}

InputCopies copy_inputs_outputs_overlap(const aclOpExecutor &exec, std::span<uint8_t *> data) {
    InputCopies copies;
    for (const int in : exec.inputs) {
        const auto i = static_cast<size_t>(in);
        if (!exec.args[i].present) continue;
        const ByteRange r = byte_range(*exec.args[i].tensor, data[i]);
        bool overlapped = false;
        for (const int out : exec.outputs) {
            const auto o = static_cast<size_t>(out);
            overlapped = overlapped || (exec.args[o].present && r.meets(byte_range(*exec.args[o].tensor, data[o])));
        }
        if (!overlapped) continue;
        std::unique_ptr<uint8_t[]> copy(new (std::nothrow) uint8_t[r.hi - r.lo]);
        if (!copy)
            fail(ACLNN_ERR_INNER, std::string(exec.args[i].name) + " shares memory with an output and its copy (" +
                                      std::to_string(r.hi - r.lo) + " bytes) does not fit in host memory");
        std::memcpy(copy.get(), data[i], r.hi - r.lo);
        data[i] = copy.get();  // same strides from the copy's element 0
        copies.push_back(std::move(copy));
    }
    return copies;
}

}  // namespace aclcpu
