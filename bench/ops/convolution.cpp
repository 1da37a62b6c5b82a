// aclnn-cpu-bench cases: ConvolutionBackward (all three gradients) over testing.md's public layers at
// N=8 -- ResNet-50, VGG-19 (3x3 pad 1), MobileNet depthwise (3x3 pad 1) -- in FLOAT and BF16.
//
// Work counted (performance.md): 2*N*Cout*Ho*Wo*(Cin/groups)*kH*kW per gradient, for gradInput and
// gradWeight (gradBias is not counted). PyTorch peer: aten::convolution_backward with output_mask
// [True, True, True] on contiguous tensors of the same dtype.
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_convolution_backward.h"
#include "bench.hpp"

namespace {

struct Layer {
    int64_t ic, ih, oc, k, s = 1, p = 0, g = 1;
    int64_t n = 8;

    int64_t oh() const { return (ih + 2 * p - k) / s + 1; }
    std::vector<int64_t> in() const { return {n, ic, ih, ih}; }
    std::vector<int64_t> out() const { return {n, oc, oh(), oh()}; }
    std::vector<int64_t> weight() const { return {oc, ic / g, k, k}; }

    // benchdnn-style descriptor
    std::string desc() const {
        std::string d = "mb" + std::to_string(n);
        if (g != 1) d += "g" + std::to_string(g);
        d += "ic" + std::to_string(ic) + "ih" + std::to_string(ih) + "oc" + std::to_string(oc) + "oh" + std::to_string(oh()) +
             "kh" + std::to_string(k);
        if (s != 1) d += "sh" + std::to_string(s);
        if (p != 0) d += "ph" + std::to_string(p);
        return d;
    }
    double flops() const {
        return 2.0 * 2.0 * static_cast<double>(n * oc * oh() * oh() * (ic / g) * k * k);
    }
};

bench::Case backward_case(const Layer &l, aclDataType dt, const std::string &net, bool quick = false) {
    bench::Case c;
    c.op = "ConvolutionBackward";
    c.shape = l.desc();
    c.dtype = dt;
    c.variant = net;
    c.quick = quick;
    c.work = bench::Work::flops(l.flops());
    c.prepare = [l, dt](bench::Prepared &pr) {
        aclTensor *go = pr.tensor(l.out(), dt);
        aclTensor *in = pr.tensor(l.in(), dt);
        aclTensor *w = pr.tensor(l.weight(), dt);
        aclTensor *gi = pr.tensor(l.in(), dt, bench::Fill::Zero);
        aclTensor *gw = pr.tensor(l.weight(), dt, bench::Fill::Zero);
        aclTensor *gb = pr.tensor({l.oc}, dt, bench::Fill::Zero, ACL_FORMAT_ND);
        aclIntArray *bias = pr.ints({l.oc});
        aclIntArray *stride = pr.ints({l.s, l.s});
        aclIntArray *padding = pr.ints({l.p, l.p});
        aclIntArray *dilation = pr.ints({1, 1});
        aclIntArray *outPad = pr.ints({0, 0});
        // Prepared has no bool-array helper: one shared, process-lifetime mask for every case.
        static const bool maskv[3] = {true, true, true};
        static aclBoolArray *const mask = aclCreateBoolArray(maskv, 3);
        BENCH_PLAN(pr, aclnnConvolutionBackward, go, in, w, bias, stride, padding, dilation, false, outPad,
                   static_cast<int>(l.g), mask, int8_t{0}, gi, gw, gb);
    };
    const auto list = [](const std::vector<int64_t> &v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        return s + "]";
    };
    c.torch = "go = randn(" + list(l.out()) + ")\nx = randn(" + list(l.in()) + ")\nw = randn(" + list(l.weight()) +
              ")\nfn = lambda: torch.ops.aten.convolution_backward(go, x, w, [" + std::to_string(l.oc) + "], [" +
              std::to_string(l.s) + ", " + std::to_string(l.s) + "], [" + std::to_string(l.p) + ", " + std::to_string(l.p) +
              "], [1, 1], False, [0, 0], " + std::to_string(l.g) + ", [True, True, True])\n";
    return c;
}

}  // namespace

BENCH_OP(ConvolutionBackward) {
    // testing.md corpora, N = 8
    const Layer resnet50[] = {
        {3, 224, 64, 7, 2, 3},   {64, 56, 64, 3, 1, 1},    {64, 56, 256, 1},        {256, 56, 64, 1},
        {256, 56, 128, 1, 2, 0}, {128, 28, 128, 3, 1, 1},  {512, 28, 256, 1, 2, 0}, {256, 14, 256, 3, 1, 1},
        {1024, 14, 256, 1},      {512, 7, 512, 3, 1, 1},   {2048, 7, 512, 1},
    };
    const Layer vgg19[] = {
        {3, 224, 64, 3, 1, 1}, {64, 112, 128, 3, 1, 1}, {128, 56, 256, 3, 1, 1}, {256, 28, 512, 3, 1, 1}, {512, 14, 512, 3, 1, 1},
    };
    const Layer mobilenet_dw[] = {
        {32, 112, 32, 3, 1, 1, 32},     {64, 112, 64, 3, 2, 1, 64},     {128, 56, 128, 3, 1, 1, 128},
        {256, 28, 256, 3, 2, 1, 256},   {512, 14, 512, 3, 1, 1, 512},   {1024, 7, 1024, 3, 1, 1, 1024},
    };
    // bars: >= 1x PyTorch on every ResNet-50 / VGG layer, FLOAT 3x3 (dense) >= 50 % of the FMA peak,
    // >= 3x PyTorch on depthwise
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        auto dense = [dt](const Layer &l, const char *net) {
            bench::Case c = backward_case(l, dt, net);
            c.bars.speedup = 1;
            if (dt == ACL_FLOAT && l.k == 3) c.bars.pct_of_limit = 50;
            return c;
        };
        for (const Layer &l : resnet50) cases.push_back(dense(l, "resnet50"));
        for (const Layer &l : vgg19) cases.push_back(dense(l, "vgg19"));
        for (const Layer &l : mobilenet_dw) {
            bench::Case c = backward_case(l, dt, "mobilenet_dw");
            c.bars.speedup = 3;
            cases.push_back(std::move(c));
        }
    }
    // whole calls (phase 1 + phase 2 each run), one image: a 4-channel 6x6 problem, ResNet-50's last 3x3
    // layer and MobileNet's last depthwise one
    Layer call_tiny{4, 6, 4, 3}, call_res{512, 7, 512, 3, 1, 1}, call_dw{1024, 7, 1024, 3, 1, 1, 1024};
    call_tiny.n = call_res.n = call_dw.n = 1;
    cases.push_back(bench::whole_call(backward_case(call_tiny, ACL_FLOAT, "")));
    cases.push_back(bench::whole_call(backward_case(call_res, ACL_FLOAT, "resnet50")));
    cases.push_back(bench::whole_call(backward_case(call_dw, ACL_FLOAT, "mobilenet_dw")));

    // --quick smoke set: tiny problems, every dtype, a depthwise one
    Layer tiny{16, 14, 24, 3, 1, 1};
    tiny.n = 2;
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) cases.push_back(backward_case(tiny, dt, "smoke", true));
    cases.push_back(bench::whole_call(backward_case(tiny, ACL_FLOAT, "smoke", true)));
    Layer dw{32, 14, 32, 3, 2, 1, 32};
    dw.n = 2;
    cases.push_back(backward_case(dw, ACL_FLOAT, "smoke", true));
}
