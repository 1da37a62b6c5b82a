// aclnn-cpu-bench cases: GridSampler2DBackward (both outputs) and its forward companion.
//
// Bytes counted: gradOutput, input and grid read, inputGrad and gridGrad written. The grid is
// uniform in [-1, 1) on both sides (random sampling: the scatter touches the whole input plane),
// except for the image-warp cases, whose grid is a warp: the identity plus a smooth flow of a few
// pixels (the same field on both sides).
// PyTorch peer: aten::grid_sampler_2d_backward with output_mask [True, True] on contiguous
// tensors; PyTorch 1.13 has no FLOAT16 / BF16 grid sampler backward on the CPU (n/a).
#include <string>
#include <utility>
#include <vector>

#include <cmath>
#include <cstring>

#include "aclnn_cpu/numeric.hpp"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "bench.hpp"

namespace {

struct Problem {
    int64_t n, c, h, w, ho, wo;
    int64_t interp = 0, padding = 0;
    bool align = false;
    std::string tag;  // a name for the shape family
    bool warp = false;  // grid = identity + smooth flow, else uniform random

    std::vector<int64_t> in() const { return {n, c, h, w}; }
    std::vector<int64_t> out() const { return {n, c, ho, wo}; }
    std::vector<int64_t> grid() const { return {n, ho, wo, 2}; }
    std::string desc() const {
        static const char *modes[] = {"bilinear", "nearest", "bicubic"}, *pads[] = {"zeros", "border", "reflection"};
        std::string s = "mb" + std::to_string(n) + "ic" + std::to_string(c) + "ih" + std::to_string(h);
        if (w != h) s += "iw" + std::to_string(w);
        s += "oh" + std::to_string(ho);
        if (wo != ho) s += "ow" + std::to_string(wo);
        s += std::string("_") + modes[interp] + "_" + pads[padding];
        if (align) s += "_align";
        if (!tag.empty()) s += "_" + tag;
        return s;
    }
    std::string attrs() const {
        return std::to_string(interp) + ", " + std::to_string(padding) + ", " + (align ? "True" : "False");
    }
};

// The warp field: pixel (x, y) of image n samples (x + 6 sin(0.02 y + n), y + 4 cos(0.03 x - n)),
// in alignCorners coordinates (the cases use alignCorners = true).
double warp_value(const Problem &p, int64_t n, int64_t y, int64_t x, int axis) {
    const double fx = 6.0 * std::sin(0.02 * static_cast<double>(y) + static_cast<double>(n));
    const double fy = 4.0 * std::cos(0.03 * static_cast<double>(x) - static_cast<double>(n));
    return axis == 0 ? 2.0 * (static_cast<double>(x) + fx) / static_cast<double>(p.w - 1) - 1.0
                     : 2.0 * (static_cast<double>(y) + fy) / static_cast<double>(p.h - 1) - 1.0;
}
const char *kTorchWarp =
    "ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float64), torch.arange(W, dtype=torch.float64), indexing='ij')\n"
    "nn = torch.arange(N, dtype=torch.float64).view(N, 1, 1)\n"
    "g = torch.stack([2 * (xs + 6 * torch.sin(0.02 * ys + nn)) / (W - 1) - 1,\n"
    "                 2 * (ys + 4 * torch.cos(0.03 * xs - nn)) / (H - 1) - 1], -1).to(dtype)\n";

void fill_warp(const Problem &p, aclTensor *grid, aclDataType dt) {
    void *data = nullptr;
    if (aclGetRawTensorAddr(grid, &data) != ACLNN_SUCCESS || !data) throw bench::CallError("aclGetRawTensorAddr", -1, "");
    auto *bytes = static_cast<char *>(data);
    int64_t i = 0;
    for (int64_t n = 0; n < p.n; ++n)
        for (int64_t y = 0; y < p.ho; ++y)
            for (int64_t x = 0; x < p.wo; ++x)
                for (int axis = 0; axis < 2; ++axis, ++i) {
                    const double v = warp_value(p, n, y, x, axis);
                    const auto f = static_cast<float>(v);
                    if (dt == ACL_DOUBLE) std::memcpy(bytes + i * 8, &v, 8);
                    else if (dt == ACL_FLOAT) std::memcpy(bytes + i * 4, &f, 4);
                    else {
                        const uint16_t h = dt == ACL_FLOAT16 ? acp::float_to_half(f) : acp::float_to_bf16(f);
                        std::memcpy(bytes + i * 2, &h, 2);
                    }
                }
}

std::string torch_grid(const Problem &p) {
    if (p.warp)
        return "N, H, W = " + std::to_string(p.n) + ", " + std::to_string(p.h) + ", " + std::to_string(p.w) + "\n" + kTorchWarp;
    return "g = torch.rand(" + bench::py_list(p.grid()) + ", dtype=dtype) * 2 - 1\n";
}

bench::Case backward_case(const Problem &p, aclDataType dt, bool quick, const std::string &product = "atlas-a2") {
    bench::Case c;
    c.op = "GridSampler2DBackward";
    c.shape = p.desc();
    c.dtype = dt;
    c.product = product;
    c.quick = quick;
    const double es = static_cast<double>(bench::dtype_size(dt));
    c.work = bench::Work::bytes((bench::numel(p.in()) + bench::numel(p.out()) + bench::numel(p.grid())) * es,
                                (bench::numel(p.in()) + bench::numel(p.grid())) * es);
    c.prepare = [p, dt](bench::Prepared &pr) {
        aclTensor *gradOutput = pr.tensor(p.out(), dt, bench::Fill::Random, ACL_FORMAT_ND);
        aclTensor *input = pr.tensor(p.in(), dt, bench::Fill::Random, ACL_FORMAT_ND);
        aclTensor *grid = pr.tensor(p.grid(), dt, bench::Fill::Random, ACL_FORMAT_ND);
        if (p.warp) fill_warp(p, grid, dt);
        aclTensor *inputGrad = pr.tensor(p.in(), dt, bench::Fill::Zero, ACL_FORMAT_ND);
        aclTensor *gridGrad = pr.tensor(p.grid(), dt, bench::Fill::Zero, ACL_FORMAT_ND);
        // Prepared has no bool-array helper: one process-lifetime mask for every case (a whole-call
        // case plans again with it at every run).
        static const bool both[2] = {true, true};
        static aclBoolArray *const mask = aclCreateBoolArray(both, 2);
        BENCH_PLAN(pr, aclnnGridSampler2DBackward, gradOutput, input, grid, p.interp, p.padding, p.align, mask, inputGrad,
                   gridGrad);
    };
    if (dt == ACL_FLOAT || dt == ACL_DOUBLE)
        c.torch = "go = randn(" + bench::py_list(p.out()) + ")\n" + "x = randn(" + bench::py_list(p.in()) + ")\n" +
                  torch_grid(p) +
                  "fn = lambda: torch.ops.aten.grid_sampler_2d_backward(go, x, g, " + p.attrs() + ", [True, True])\n";
    return c;
}

bench::Case forward_case(const Problem &p, aclDataType dt, bool quick) {
    bench::Case c;
    c.op = "GridSampler2D";
    c.shape = p.desc();
    c.dtype = dt;
    c.quick = quick;
    const double es = static_cast<double>(bench::dtype_size(dt));
    c.work = bench::Work::bytes((bench::numel(p.in()) + bench::numel(p.grid())) * es, bench::numel(p.out()) * es);
    c.prepare = [p, dt](bench::Prepared &pr) {
        aclTensor *input = pr.tensor(p.in(), dt, bench::Fill::Random, ACL_FORMAT_ND);
        aclTensor *grid = pr.tensor(p.grid(), dt, bench::Fill::Random, ACL_FORMAT_ND);
        aclTensor *out = pr.tensor(p.out(), dt, bench::Fill::Zero, ACL_FORMAT_ND);
        BENCH_PLAN(pr, aclnnGridSampler2D, input, grid, p.interp, p.padding, p.align, out);
    };
    if (dt == ACL_FLOAT)
        c.torch = "x = randn(" + bench::py_list(p.in()) + ")\n" + "g = torch.rand(" + bench::py_list(p.grid()) +
                  ", dtype=dtype) * 2 - 1\n" + "fn = lambda: torch.ops.aten.grid_sampler_2d(x, g, " + p.attrs() + ")\n";
    return c;
}

}  // namespace

BENCH_OP(GridSampler2DBackward) {
    // performance.md's shape (bars: >= 3x PyTorch for bilinear and bicubic FLOAT; FLOAT16 / BF16
    // within 1.5x of the FLOAT time)
    for (int64_t interp : {0, 2, 1}) {
        Problem p{8, 32, 64, 64, 64, 64, interp, 0, false, ""};
        bench::Case f = backward_case(p, ACL_FLOAT, false);
        if (interp != 1) f.bars.speedup = 3;  // bilinear and bicubic
        const std::string floatId = f.id();
        cases.push_back(std::move(f));
        if (interp != 1)
            for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
                bench::Case c = backward_case(p, dt, false);
                c.bars.time_of = floatId;
                c.bars.time_ratio = 1.5;
                cases.push_back(std::move(c));
            }
    }
    // testing.md's shapes: image warp (border, align corners), spatial transformer, RAFT lookup
    for (int64_t interp : {0, 2}) {
        Problem warp{2, 3, 384, 512, 384, 512, interp, 1, true, "warp", true};
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) cases.push_back(backward_case(warp, dt, false));
    }
    cases.push_back(backward_case(Problem{64, 1, 28, 28, 28, 28, 0, 0, false, "stn"}, ACL_FLOAT, false));
    cases.push_back(backward_case(Problem{46 * 62, 1, 46, 62, 9, 9, 0, 0, true, "raft"}, ACL_FLOAT, false));
    cases.push_back(backward_case(Problem{8, 32, 64, 64, 64, 64, 0, 2, false, ""}, ACL_DOUBLE, false));
    // the warp shape with a random grid too (scattered taps over the whole 384 x 512 plane)
    for (int64_t interp : {0, 2})
        cases.push_back(backward_case(Problem{2, 3, 384, 512, 384, 512, interp, 1, true, "random"}, ACL_FLOAT, false));

    // whole calls (phase 1 + phase 2 each run): a tiny bilinear sample, and one image of 32 channels
    cases.push_back(bench::whole_call(backward_case(Problem{1, 2, 8, 8, 8, 8, 0, 0, false, ""}, ACL_FLOAT, false)));
    cases.push_back(bench::whole_call(backward_case(Problem{1, 32, 64, 64, 64, 64, 0, 0, false, ""}, ACL_FLOAT, false)));

    // --quick smoke set: tiny problems, every mode and dtype, the training product
    for (int64_t interp : {0, 1, 2})
        cases.push_back(backward_case(Problem{2, 3, 9, 10, 7, 8, interp, interp, interp == 1, ""}, ACL_FLOAT, true));
    for (aclDataType dt : {ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})
        cases.push_back(backward_case(Problem{2, 17, 9, 10, 7, 8, 2, 2, false, ""}, dt, true));
    cases.push_back(backward_case(Problem{1, 16, 32, 32, 40, 40, 0, 1, false, ""}, ACL_FLOAT16, true, "atlas-training"));
}

BENCH_OP(GridSampler2D) {
    for (int64_t interp : {0, 2}) cases.push_back(forward_case(Problem{8, 32, 64, 64, 64, 64, interp, 0, false, ""}, ACL_FLOAT, false));
    cases.push_back(forward_case(Problem{2, 3, 9, 10, 7, 8, 0, 0, false, ""}, ACL_FLOAT, true));
}
