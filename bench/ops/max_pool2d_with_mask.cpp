// aclnn-cpu-bench cases: MaxPool2dWithMaskBackward and its forward companion MaxPool2dWithMask, and
// CANN's int32-index pair MaxPool2dWithIndices(Backward) on the same shapes (A2/A3; INT32 indices of
// the pooled shape, read and written through the workspace in the int32 mask layout).
//
// The backward's mask comes from our forward on the case's random self (run in prepare, untimed),
// so it is a real mask of the product's layout. Bytes counted: the backward reads gradOutput and
// the mask bytes it needs (the int32 argmax, 4 * N*C*Ho*Wo, on atlas-a2; every kernel position's
// ceil(Ho*Wo/8) bytes of bits on atlas-training) and writes gradInput; self only gives the shape.
// The forward reads self and writes out and the whole mask. PyTorch peer:
// aten::max_pool2d_with_indices_backward / aten::max_pool2d_with_indices on the same shapes.
#include <string>
#include <vector>

#include "aclnnop/aclnn_max_pool2d_with_indices.h"
#include "aclnnop/aclnn_max_pool2d_with_indices_backward.h"
#include "aclnnop/aclnn_max_pool2d_with_mask.h"
#include "aclnnop/aclnn_max_pool2d_with_mask_backward.h"
#include "bench.hpp"

namespace {

struct Pool {
    int64_t n, c, h, w, k, s, p;
    bool ceil = false;

    int64_t oh() const { return bench::pool_out(h, k, s, p, ceil); }
    int64_t ow() const { return bench::pool_out(w, k, s, p, ceil); }
    int64_t mask_row() const { return ((oh() * ow() + 15) / 16 + 1) * 32; }
    std::vector<int64_t> in() const { return {n, c, h, w}; }
    std::vector<int64_t> out() const { return {n, c, oh(), ow()}; }
    std::vector<int64_t> mask() const { return {n, c, k * k, mask_row()}; }
    std::string desc() const {
        std::string d = "mb" + std::to_string(n) + "ic" + std::to_string(c) + "ih" + std::to_string(h) + "oh" +
                        std::to_string(oh()) + "kh" + std::to_string(k) + "sh" + std::to_string(s);
        if (p) d += "ph" + std::to_string(p);
        return ceil ? d + "_ceil" : d;
    }
    std::string torch_attrs() const {
        return bench::py_list({k, k}) + ", " + bench::py_list({s, s}) + ", " + bench::py_list({p, p}) + ", [1, 1], " +
               (ceil ? "True" : "False");
    }
    // Mask bytes the backward reads: int32 argmax (atlas-a2/a3) or the bits of every kernel position.
    double mask_read(const std::string &product) const {
        const double outs = bench::numel(out());
        if (product == "atlas-a2" || product == "atlas-a3") return 4.0 * outs;
        return static_cast<double>(n * c * k * k) * static_cast<double>((oh() * ow() + 7) / 8);
    }
};

// What `indices` is: the mask (MaxPool2dWithMask*) or CANN's INT32 indices (MaxPool2dWithIndices*).
enum class Index { Mask, Int32 };

std::vector<int64_t> index_dims(const Pool &p, Index ix) { return ix == Index::Mask ? p.mask() : p.out(); }
aclDataType index_dtype(Index ix) { return ix == Index::Mask ? ACL_INT8 : ACL_INT32; }

// self, the forward's out and indices, on fresh buffers; the forward runs once so the indices are real.
struct Forwarded {
    aclTensor *self, *out, *indices;
};
Forwarded forward_into(bench::Prepared &pr, const Pool &p, aclDataType dt, Index ix) {
    Forwarded f{pr.tensor(p.in(), dt), pr.tensor(p.out(), dt, bench::Fill::Zero),
                pr.tensor(index_dims(p, ix), index_dtype(ix), bench::Fill::Zero)};
    aclIntArray *k = pr.ints({p.k, p.k}), *s = pr.ints({p.s, p.s}), *pad = pr.ints({p.p, p.p}), *d = pr.ints({1, 1});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const bool mask = ix == Index::Mask;
    aclnnStatus st = mask ? aclnnMaxPool2dWithMaskGetWorkspaceSize(f.self, k, s, pad, d, p.ceil, f.out, f.indices, &ws, &exec)
                          : aclnnMaxPool2dWithIndicesGetWorkspaceSize(f.self, k, s, pad, d, p.ceil, f.out, f.indices, &ws, &exec);
    if (st != ACLNN_SUCCESS) throw bench::CallError("the forward's GetWorkspaceSize", st, "indices for the backward");
    void *wsp = ws ? pr.alloc(ws) : nullptr;
    st = mask ? aclnnMaxPool2dWithMask(wsp, ws, exec, pr.stream()) : aclnnMaxPool2dWithIndices(wsp, ws, exec, pr.stream());
    if (st != ACLNN_SUCCESS) throw bench::CallError("the forward", st, "indices for the backward");
    aclrtSynchronizeStream(pr.stream());
    return f;
}

bench::Case backward_case(const Pool &p, aclDataType dt, bool quick, const std::string &product = "atlas-a2",
                          Index ix = Index::Mask) {
    bench::Case c;
    c.op = ix == Index::Mask ? "MaxPool2dWithMaskBackward" : "MaxPool2dWithIndicesBackward";
    c.shape = p.desc();
    c.dtype = dt;
    c.product = product;
    c.quick = quick;
    c.work = bench::Work::bytes(bench::numel(p.out()) * static_cast<double>(bench::dtype_size(dt)) + p.mask_read(product),
                                bench::numel(p.in()) * static_cast<double>(bench::dtype_size(dt)));
    c.prepare = [p, dt, ix](bench::Prepared &pr) {
        const Forwarded f = forward_into(pr, p, dt, ix);
        aclTensor *gradOutput = pr.tensor(p.out(), dt);
        aclTensor *gradInput = pr.tensor(p.in(), dt, bench::Fill::Zero);
        aclIntArray *k = pr.ints({p.k, p.k}), *s = pr.ints({p.s, p.s}), *pad = pr.ints({p.p, p.p}), *d = pr.ints({1, 1});
        if (ix == Index::Mask)
            BENCH_PLAN(pr, aclnnMaxPool2dWithMaskBackward, gradOutput, f.self, f.indices, k, s, pad, d, p.ceil, gradInput);
        else
            BENCH_PLAN(pr, aclnnMaxPool2dWithIndicesBackward, gradOutput, f.self, f.indices, k, s, pad, d, p.ceil, gradInput);
    };
    c.torch = "x = randn(" + bench::py_list(p.in()) + ")\n" +
              "_, idx = torch.ops.aten.max_pool2d_with_indices(x, " + p.torch_attrs() + ")\n" +
              "go = randn(" + bench::py_list(p.out()) + ")\n" +
              "fn = lambda: torch.ops.aten.max_pool2d_with_indices_backward(go, x, " + p.torch_attrs() + ", idx)\n";
    return c;
}

bench::Case forward_case(const Pool &p, aclDataType dt, bool quick, const std::string &product = "atlas-a2",
                         Index ix = Index::Mask) {
    bench::Case c;
    c.op = ix == Index::Mask ? "MaxPool2dWithMask" : "MaxPool2dWithIndices";
    c.shape = p.desc();
    c.dtype = dt;
    c.product = product;
    c.quick = quick;
    const double index_bytes = ix == Index::Mask ? bench::numel(p.mask()) : 4.0 * bench::numel(p.out());
    c.work = bench::Work::bytes(bench::numel(p.in()) * static_cast<double>(bench::dtype_size(dt)),
                                bench::numel(p.out()) * static_cast<double>(bench::dtype_size(dt)) + index_bytes);
    c.prepare = [p, dt, ix](bench::Prepared &pr) {
        aclTensor *self = pr.tensor(p.in(), dt);
        aclTensor *out = pr.tensor(p.out(), dt, bench::Fill::Zero);
        aclTensor *indices = pr.tensor(index_dims(p, ix), index_dtype(ix), bench::Fill::Zero);
        aclIntArray *k = pr.ints({p.k, p.k}), *s = pr.ints({p.s, p.s}), *pad = pr.ints({p.p, p.p}), *d = pr.ints({1, 1});
        if (ix == Index::Mask)
            BENCH_PLAN(pr, aclnnMaxPool2dWithMask, self, k, s, pad, d, p.ceil, out, indices);
        else
            BENCH_PLAN(pr, aclnnMaxPool2dWithIndices, self, k, s, pad, d, p.ceil, out, indices);
    };
    c.torch = "x = randn(" + bench::py_list(p.in()) + ")\n" +
              "fn = lambda: torch.ops.aten.max_pool2d_with_indices(x, " + p.torch_attrs() + ")\n";
    return c;
}

}  // namespace

BENCH_OP(MaxPool2dWithMaskBackward) {
    // performance.md's large shapes: 32x64x112x112, k3 s2 p1 and k2 s2 (bars: >= 60 % of copy, >= 5x PyTorch)
    const Pool big3{32, 64, 112, 112, 3, 2, 1}, big2{32, 64, 112, 112, 2, 2, 0};
    auto held = [](bench::Case c) {
        c.bars.pct_of_limit = 60;
        if (c.dtype != ACL_FLOAT16) c.bars.speedup = 5;  // fp32 and bf16 (PyTorch has no fp16 kernel)
        return c;
    };
    for (const Pool &p : {big3, big2}) {
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) cases.push_back(held(backward_case(p, dt, false)));
        cases.push_back(held(backward_case(p, ACL_FLOAT, false, "atlas-training")));  // bit mask, FLOAT as FLOAT16
    }
    // testing.md pooling corpus
    cases.push_back(backward_case(Pool{50, 64, 112, 112, 3, 2, 1}, ACL_FLOAT, false));   // ResNet-50 mb50
    cases.push_back(backward_case(Pool{96, 192, 57, 57, 3, 2, 0}, ACL_FLOAT, false));    // GoogleNet
    cases.push_back(backward_case(Pool{32, 480, 28, 28, 3, 2, 0, true}, ACL_BF16, false));
    cases.push_back(backward_case(Pool{32, 832, 7, 7, 3, 1, 1}, ACL_FLOAT, false));
    // GoogLeNet's inception pool branch (k3 s1 p1): int32 masks take the small-plane path, bit masks
    // (atlas-training) the ring path with its vector decode
    const Pool branch{32, 192, 28, 28, 3, 1, 1};
    cases.push_back(backward_case(branch, ACL_FLOAT, false));
    cases.push_back(backward_case(branch, ACL_FLOAT, false, "atlas-training"));
    // whole calls (phase 1 + phase 2 each run): a tiny plane, and ResNet-50's stem pool at one image
    cases.push_back(bench::whole_call(backward_case(Pool{1, 2, 8, 8, 2, 2, 0}, ACL_FLOAT, false)));
    cases.push_back(bench::whole_call(backward_case(Pool{1, 64, 112, 112, 3, 2, 1}, ACL_FLOAT, false)));
    // --quick smoke set
    const Pool small{2, 17, 30, 30, 3, 2, 1, true};
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) cases.push_back(backward_case(small, dt, true));
    cases.push_back(backward_case(small, ACL_FLOAT16, true, "atlas-training"));
}

BENCH_OP(MaxPool2dWithMask) {
    const Pool big3{32, 64, 112, 112, 3, 2, 1};
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) cases.push_back(forward_case(big3, dt, false));
    cases.push_back(forward_case(Pool{2, 17, 30, 30, 3, 2, 1, true}, ACL_FLOAT, true));
}

// No bar of performance.md: the rows set the INT32 indices, read and written in place, beside the
// mask pair's rows above, and give the ratio to the same PyTorch calls. CANN's A2/A3 backward takes
// FLOAT alone.
BENCH_OP(MaxPool2dWithIndicesBackward) {
    for (const Pool &p : {Pool{32, 64, 112, 112, 3, 2, 1}, Pool{32, 64, 112, 112, 2, 2, 0}})
        cases.push_back(backward_case(p, ACL_FLOAT, false, "atlas-a2", Index::Int32));
    cases.push_back(backward_case(Pool{2, 17, 30, 30, 3, 2, 1, true}, ACL_FLOAT, true, "atlas-a2", Index::Int32));
}

BENCH_OP(MaxPool2dWithIndices) {
    cases.push_back(forward_case(Pool{32, 64, 112, 112, 3, 2, 1}, ACL_FLOAT, false, "atlas-a2", Index::Int32));
    cases.push_back(forward_case(Pool{2, 17, 30, 30, 3, 2, 1, true}, ACL_FLOAT, true, "atlas-a2", Index::Int32));
}
