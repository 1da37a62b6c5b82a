// aclnn-cpu-bench cases: AvgPool2dBackward and its forward companion AvgPool2d.
//
// Bytes counted: AvgPool2dBackward reads gradOutput and writes gradInput (`self` only gives the shape,
// its data is never read); AvgPool2d reads self and writes out. PyTorch peer:
// aten::avg_pool2d_backward.grad_input / aten::avg_pool2d.out on contiguous tensors of the same dtype.
#include <string>
#include <vector>

#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "bench.hpp"

namespace {

struct Pool {
    int64_t n, c, h, w;
    int64_t kh, kw, sh, sw, ph, pw;
    bool ceil = false;
    bool countIncludePad = true;
    int64_t divisorOverride = 0;

    int64_t oh() const { return bench::pool_out(h, kh, sh, ph, ceil); }
    int64_t ow() const { return bench::pool_out(w, kw, sw, pw, ceil); }
    std::vector<int64_t> in() const { return {n, c, h, w}; }
    std::vector<int64_t> out() const { return {n, c, oh(), ow()}; }

    // benchdnn-style descriptor; w-values equal to their h-values are omitted
    std::string desc() const {
        std::string s = "mb" + std::to_string(n) + "ic" + std::to_string(c) + "ih" + std::to_string(h);
        if (w != h) s += "iw" + std::to_string(w);
        s += "oh" + std::to_string(oh());
        if (ow() != oh() || w != h) s += "ow" + std::to_string(ow());
        s += "kh" + std::to_string(kh);
        if (kw != kh) s += "kw" + std::to_string(kw);
        s += "sh" + std::to_string(sh);
        if (sw != sh) s += "sw" + std::to_string(sw);
        if (ph != 0 || pw != 0) {
            s += "ph" + std::to_string(ph);
            if (pw != ph) s += "pw" + std::to_string(pw);
        }
        if (ceil) s += "_ceil";
        if (!countIncludePad) s += "_excludepad";
        if (divisorOverride != 0) s += "_div" + std::to_string(divisorOverride);
        return s;
    }

    std::string torch_attrs() const {
        return bench::py_list({kh, kw}) + ", " + bench::py_list({sh, sw}) + ", " + bench::py_list({ph, pw}) + ", " +
               (ceil ? "True" : "False") + ", " + (countIncludePad ? "True" : "False") + ", " +
               (divisorOverride ? std::to_string(divisorOverride) : std::string("None"));
    }
};

bench::Case backward_case(const Pool &p, aclDataType dt, bool quick, const std::string &product = "atlas-a2",
                          int8_t cubeMathType = 0) {
    bench::Case c;
    c.op = "AvgPool2dBackward";
    c.shape = p.desc();
    c.dtype = dt;
    c.product = product;
    if (cubeMathType != 0) c.variant = "cube" + std::to_string(cubeMathType);
    c.quick = quick;
    c.work = bench::Work::bytes(bench::numel(p.out()) * static_cast<double>(bench::dtype_size(dt)),
                                bench::numel(p.in()) * static_cast<double>(bench::dtype_size(dt)));
    c.prepare = [p, dt, cubeMathType](bench::Prepared &pr) {
        aclTensor *gradOutput = pr.tensor(p.out(), dt);
        aclTensor *self = pr.tensor(p.in(), dt);
        aclTensor *gradInput = pr.tensor(p.in(), dt, bench::Fill::Zero);
        aclIntArray *kernel = pr.ints({p.kh, p.kw});
        aclIntArray *stride = pr.ints({p.sh, p.sw});
        aclIntArray *padding = pr.ints({p.ph, p.pw});
        BENCH_PLAN(pr, aclnnAvgPool2dBackward, gradOutput, self, kernel, stride, padding, p.ceil, p.countIncludePad,
                   p.divisorOverride, cubeMathType, gradInput);
    };
    c.torch = "go = randn(" + bench::py_list(p.out()) + ")\n" + "x = randn(" + bench::py_list(p.in()) + ")\n" +
              "gi = zeros(" + bench::py_list(p.in()) + ")\n" +
              "fn = lambda: torch.ops.aten.avg_pool2d_backward.grad_input(go, x, " + p.torch_attrs() +
              ", grad_input=gi)\n";
    return c;
}

bench::Case forward_case(const Pool &p, aclDataType dt, bool quick) {
    bench::Case c;
    c.op = "AvgPool2d";
    c.shape = p.desc();
    c.dtype = dt;
    c.quick = quick;
    c.work = bench::Work::bytes(bench::numel(p.in()) * static_cast<double>(bench::dtype_size(dt)),
                                bench::numel(p.out()) * static_cast<double>(bench::dtype_size(dt)));
    c.prepare = [p, dt](bench::Prepared &pr) {
        aclTensor *self = pr.tensor(p.in(), dt);
        aclTensor *out = pr.tensor(p.out(), dt, bench::Fill::Zero);
        aclIntArray *kernel = pr.ints({p.kh, p.kw});
        aclIntArray *strides = pr.ints({p.sh, p.sw});
        aclIntArray *paddings = pr.ints({p.ph, p.pw});
        BENCH_PLAN(pr, aclnnAvgPool2d, self, kernel, strides, paddings, p.ceil, p.countIncludePad, p.divisorOverride,
                   int8_t{0}, out);
    };
    c.torch = "x = randn(" + bench::py_list(p.in()) + ")\n" + "out = zeros(" + bench::py_list(p.out()) + ")\n" +
              "fn = lambda: torch.ops.aten.avg_pool2d.out(x, " + p.torch_attrs() + ", out=out)\n";
    return c;
}

}  // namespace

BENCH_OP(AvgPool2d) {
    // performance.md's large shape (ResNet-50 stem pool geometry with avg pooling)
    const Pool big{32, 64, 112, 112, 3, 3, 2, 2, 1, 1};
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) cases.push_back(forward_case(big, dt, false));
    cases.push_back(forward_case(Pool{2, 17, 60, 60, 4, 3, 2, 2, 1, 1}, ACL_FLOAT, true));
}

BENCH_OP(AvgPool2dBackward) {
    const aclDataType all[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

    // performance.md's large shape: 32x64x112x112 k3 s2 p1 (bars: >= 60 % of copy, >= 5x PyTorch)
    const Pool big{32, 64, 112, 112, 3, 3, 2, 2, 1, 1};
    auto held = [](bench::Case c) {
        c.bars.pct_of_limit = 60;
        if (c.dtype != ACL_FLOAT16) c.bars.speedup = 5;  // fp32 and bf16 (PyTorch has no fp16 kernel)
        return c;
    };
    for (aclDataType dt : all) cases.push_back(held(backward_case(big, dt, false)));
    cases.push_back(held(backward_case(big, ACL_FLOAT, false, "atlas-training", 1)));  // FLOAT needs cube 1 there

    // testing.md pooling corpus (mb 32 where the corpus names no minibatch)
    const Pool corpus[] = {
        {32, 2048, 7, 7, 7, 7, 1, 1, 0, 0},               // global avg ic2048ih7kh7 (ResNet-50 head)
        {96, 192, 57, 57, 3, 3, 2, 2, 0, 0},              // GoogleNet mb96ic192ih57oh28kh3sh2
        {32, 480, 28, 28, 3, 3, 2, 2, 0, 0, true},        // GoogleNet ic480ih28oh14kh3sh2 (ceil mode)
        {32, 832, 7, 7, 3, 3, 1, 1, 1, 1},                // GoogleNet ic832ih7oh7kh3sh1ph1
        {32, 17, 60, 60, 4, 3, 2, 2, 1, 1},               // tail ic17ih60kh4kw3sh2ph1
        {32, 64, 20, 42, 4, 3, 1, 3, 0, 0},               // large stride ih20iw42kh4kw3sh1sw3
    };
    for (const Pool &p : corpus)
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) cases.push_back(backward_case(p, dt, false));

    // whole calls (phase 1 + phase 2 each run): the 2x2 pooling of the sample client, and ResNet-50's
    // stem geometry at one image
    cases.push_back(bench::whole_call(backward_case(Pool{1, 2, 8, 8, 2, 2, 2, 2, 0, 0}, ACL_FLOAT, false)));
    cases.push_back(bench::whole_call(backward_case(Pool{1, 64, 112, 112, 3, 3, 2, 2, 1, 1}, ACL_FLOAT, false)));

    // --quick smoke set: tiny problems, every dtype, ceil mode, exclude-pad, and the product switch
    const Pool tail{2, 17, 60, 60, 4, 3, 2, 2, 1, 1};
    for (aclDataType dt : all) cases.push_back(backward_case(tail, dt, true));
    cases.push_back(backward_case(Pool{2, 2048, 7, 7, 7, 7, 1, 1, 0, 0}, ACL_FLOAT, true));
    cases.push_back(backward_case(Pool{1, 48, 28, 28, 3, 3, 2, 2, 1, 1, true, false}, ACL_BF16, true));
    cases.push_back(backward_case(tail, ACL_FLOAT, true, "atlas-training", 1));
}
