// ConvolutionBackward on the small-input-channel 3x3 kernels (src/small_cin.hpp: Cin <= 4, BF16
// Cin <= 3; stride 1, padding 1, no dilation, no groups), through the public API against
// conv_reference.hpp:
// bit-exact integer fill for every dtype on odd shapes (widths 1, 15, 16, 17, 33, 48, 100, 130, 3000;
// H = 1; Cout not a multiple of 3 or 16; Cin 1-4; several row bands per task), random-data
// tolerances, every outputMask, strided views, the same bytes at 1/2/3 threads, cubeMathType rounding, and
// infinities next to the padding (taps outside the plane are skipped, not multiplied by zero).
#include <limits>

#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

cref::Conv shape(int64_t N, int64_t Cin, int64_t Cout, int64_t H, int64_t W) { return conv2d(N, Cin, Cout, H, W, 3, 3, 1, 1, 1, 1); }

std::string str(const cref::Conv &c) {
    return "N" + std::to_string(c.N) + " Cin" + std::to_string(c.Cin) + " Cout" + std::to_string(c.Cout) + " " +
           std::to_string(c.in[0]) + "x" + std::to_string(c.in[1]);
}

// Odd shapes: row tails, planes of one row / one column / one vector, Cout tails of the 3-channel
// tiles, chunks of 5+4 vectors (130 wide), H = 70 at N = 8 (18-row parts), and rows so wide
// (3000) that gradWeight's staged X takes several bands in each 6-row part (kStageBytes).
std::vector<cref::Conv> shapes() {
    return {shape(2, 3, 7, 5, 17), shape(1, 1, 3, 1, 1),   shape(3, 2, 16, 1, 33),  shape(2, 4, 19, 6, 16),
            shape(1, 3, 64, 9, 48), shape(2, 4, 5, 4, 100), shape(1, 3, 2, 3, 130), shape(2, 1, 1, 7, 15),
            shape(8, 3, 8, 70, 20), shape(8, 4, 2, 24, 3000), shape(2, 5, 6, 5, 17) /* 5 input channels: oneDNN, the boundary */};
}

TEST(SmallCin, ExactIntegerFill) {
    Runtime::use("atlas-a2");
    size_t i = 0;
    for (const cref::Conv &c : shapes()) {
        ++i;
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            const int64_t range = dt == ACL_FLOAT ? 32 : 4;
            const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 101 + i, 20);
            const auto in = ints(cref::Conv::count(c.inputDims()), range, 202 + i, 20);
            const auto w = ints(cref::Conv::count(c.weightDims()), range, 303 + i);
            Call k;
            k.c = c;
            k.dt = dt;
            const Result r = runBackward(k, go, in, w);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            const cref::Grads ref = cref::backward(c, go, in, w);
            EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(r.canary) << str(c);
            EXPECT_TRUE(r.inputsUnchanged) << str(c);
        }
    }
}

// testing.md tolerances: FLOAT 1e-5 + 1e-4|ref| and relative L2 1e-6; FLOAT16 1e-3; BF16 rtol 8e-3.
TEST(SmallCin, RandomDataTolerance) {
    Runtime::use("atlas-a2");
    for (const cref::Conv &c : {shape(2, 3, 64, 20, 37), shape(1, 4, 24, 12, 70)})
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            const auto go = uniform(cref::Conv::count(c.gradOutputDims()), 5, dt);
            const auto in = uniform(cref::Conv::count(c.inputDims()), 6, dt);
            const auto w = uniform(cref::Conv::count(c.weightDims()), 7, dt);
            Call k;
            k.c = c;
            k.dt = dt;
            const Result r = runBackward(k, go, in, w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            const cref::Grads ref = cref::backward(c, go, in, w);
            const double atol = dt == ACL_FLOAT ? 1e-5 : 1e-3, rtol = dt == ACL_FLOAT ? 1e-4 : dt == ACL_FLOAT16 ? 1e-3 : 8e-3;
            const double l2 = dt == ACL_FLOAT ? 1e-6 : 1e-2;
            EXPECT_TRUE(close(dt, r.gi, ref.gradInput, atol, rtol, l2, "gradInput")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(close(dt, r.gw, ref.gradWeight, atol, rtol, l2, "gradWeight")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(close(dt, r.gb, ref.gradBias, atol, rtol, l2, "gradBias")) << str(c) << " " << dtName(dt);
        }
}

TEST(SmallCin, EveryMask) {
    Runtime::use("atlas-a2");
    const cref::Conv c = shape(2, 3, 10, 6, 21);
    const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 1), in = ints(cref::Conv::count(c.inputDims()), 8, 2);
    const auto w = ints(cref::Conv::count(c.weightDims()), 8, 3);
    const cref::Grads ref = cref::backward(c, go, in, w);
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        Call k;
        k.c = c;
        k.dt = dt;
        expectEveryMask(k, go, in, w, ref);
    }
}

// Strided views on every tensor (the core's convert and store nodes around the kernels).
TEST(SmallCin, NonContiguousViews) {
    Runtime::use("atlas-a2");
    const cref::Conv c = shape(2, 3, 6, 7, 18);
    const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 61), in = ints(cref::Conv::count(c.inputDims()), 4, 62);
    const auto w = ints(cref::Conv::count(c.weightDims()), 4, 63);
    const cref::Grads ref = cref::backward(c, go, in, w);
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        Call k;
        k.c = c;
        k.dt = dt;
        useStridedViews(k);
        const Result r = runBackward(k, go, in, w);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << dtName(dt);
        EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << dtName(dt);
        EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias")) << dtName(dt);
        EXPECT_TRUE(r.canary);
        EXPECT_TRUE(r.inputsUnchanged);
    }
}

// Random data (inexact sums): the same bytes at 1, 2 and 3 threads and run to run.
TEST(SmallCin, SameBytesAtAnyThreadCount) {
    for (const cref::Conv &c : {shape(3, 3, 20, 30, 33), shape(1, 2, 17, 40, 50)})
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
            const auto go = uniform(cref::Conv::count(c.gradOutputDims()), 15, dt);
            const auto in = uniform(cref::Conv::count(c.inputDims()), 16, dt);
            const auto w = uniform(cref::Conv::count(c.weightDims()), 17, dt);
            std::optional<Result> first;
            for (int threads : {1, 2, 3, 2}) {
                ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
                Call k;
                k.c = c;
                k.dt = dt;
                const Result r = runBackward(k, go, in, w);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                if (!first) {
                    first = r;
                    continue;
                }
                EXPECT_EQ(r.gi, first->gi) << str(c) << " " << dtName(dt) << " threads " << threads;
                EXPECT_EQ(r.gw, first->gw) << str(c) << " " << dtName(dt) << " threads " << threads;
                EXPECT_EQ(r.gb, first->gb) << str(c) << " " << dtName(dt) << " threads " << threads;
            }
        }
}

// cubeMathType: the kernels see gradOutput, input and weight rounded to the cube precision.
TEST(SmallCin, CubeMathRounding) {
    const cref::Conv c = shape(2, 3, 8, 9, 19);
    const auto go = uniform(cref::Conv::count(c.gradOutputDims()), 31, ACL_FLOAT);
    const auto in = uniform(cref::Conv::count(c.inputDims()), 32, ACL_FLOAT);
    const auto w = uniform(cref::Conv::count(c.weightDims()), 33, ACL_FLOAT);
    auto rounded = [](std::vector<double> v, double (*f)(double)) {
        for (auto &x : v) x = f(x);
        return v;
    };
    const cref::Grads exact = cref::backward(c, go, in, w);
    struct Mode {
        const char *product;
        int8_t cube;
        double (*round)(double);
    };
    for (const Mode &m : {Mode{"atlas-a2", 1, roundHf32}, Mode{"atlas-a2", 2, roundFp16}}) {
        Runtime::use(m.product);
        const cref::Grads ref = cref::backward(c, rounded(go, m.round), rounded(in, m.round), rounded(w, m.round));
        Call k;
        k.c = c;
        k.cube = m.cube;
        const Result r = runBackward(k, go, in, w);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(close(ACL_FLOAT, r.gi, ref.gradInput, 1e-5, 1e-4, 1e-6, "gradInput")) << int(m.cube);
        EXPECT_TRUE(close(ACL_FLOAT, r.gw, ref.gradWeight, 1e-5, 1e-4, 1e-6, "gradWeight")) << int(m.cube);
        EXPECT_TRUE(close(ACL_FLOAT, r.gb, exact.gradBias, 1e-5, 1e-4, 1e-6, "gradBias")) << int(m.cube);
        EXPECT_FALSE(close(ACL_FLOAT, r.gw, exact.gradWeight, 1e-5, 1e-4, 1e-6, "gradWeight")) << int(m.cube);
    }
}

// Infinities where a tap meets the padding: the reference skips those taps, so results there stay
// finite; a kernel multiplying the padding's zeros (or the row's tail lanes) would make NaNs.
// gradOutput and input are nonzero integers, so every inf product is a signed infinity.
TEST(SmallCin, InfinityNextToPadding) {
    Runtime::use("atlas-a2");
    const double inf = std::numeric_limits<double>::infinity();
    for (const cref::Conv &c : {shape(2, 3, 5, 4, 17), shape(1, 2, 4, 3, 35), shape(1, 1, 2, 1, 1)})
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
            auto nonzero = [](std::vector<double> v) {
                for (auto &x : v)
                    if (x == 0) x = 1;
                return v;
            };
            auto go = nonzero(ints(cref::Conv::count(c.gradOutputDims()), 4, 51));
            auto in = nonzero(ints(cref::Conv::count(c.inputDims()), 4, 52));
            auto w = ints(cref::Conv::count(c.weightDims()), 4, 53);
            const int64_t H = c.in[0], W = c.in[1], plane = H * W;
            // gradWeight: infinite gradOutput at the corners of image 0, channel 1 (or 0)
            const int64_t co = c.Cout > 1 ? 1 : 0;
            go[static_cast<size_t>(co * plane)] = inf;
            go[static_cast<size_t>(co * plane + plane - 1)] = -inf;
            // ... and an infinite input in the last column (a row's tail lanes meet it)
            in[static_cast<size_t>(W - 1)] = inf;
            // gradInput: infinite weights at opposite corner taps (output channels 0 and 1): the first
            // meets the padding past the last column and row, the second before the first ones
            w[0] = inf;
            w[static_cast<size_t>(c.Cin * 9 + 8)] = -inf;
            Call k;
            k.c = c;
            k.dt = dt;
            k.mask = {true, true, false};
            const Result r = runBackward(k, go, in, w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            const cref::Grads ref = cref::backward(c, go, in, w);
            size_t finite = 0;
            for (double v : ref.gradWeight) finite += std::isfinite(v) ? 1 : 0;
            EXPECT_GT(finite, 0u);
            EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << str(c) << " " << dtName(dt);
            EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << str(c) << " " << dtName(dt);
        }
}

// issue 4: dInput, dWeight and dBias are independent nodes of the executor's graph (they run
// concurrently): neither gradient waits for the other, and only the selected ones are planned. The
// small-Cin path, and the depthwise and oneDNN paths next to it. The gradients (long) carry a higher
// scheduling priority than the bias (a short pass): they start first.
TEST(SmallCin, GraphNodePerGradient) {
    Runtime::use("atlas-a2");
    struct Path {
        cref::Conv c;
        const char *gi, *gw;
    };
    for (const Path &p : {Path{shape(2, 3, 8, 9, 19), "conv_small_cin_grad_input", "conv_small_cin_grad_weight"},
                          Path{conv2d(2, 8, 8, 9, 9, 3, 3, 1, 1, 1, 1, 8), "conv_dw_grad_input", "conv_dw_grad_weight"},
                          Path{conv2d(2, 16, 16, 9, 9, 3, 3, 1, 1, 1, 1), "conv_grad_input", "conv_grad_weight"}}) {
        const cref::Conv &c = p.c;
        const auto go = ints(cref::Conv::count(c.gradOutputDims()), 4, 71), in = ints(cref::Conv::count(c.inputDims()), 4, 72);
        const auto w = ints(cref::Conv::count(c.weightDims()), 4, 73);
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
            for (int m = 1; m < 8; ++m) {
                Call k;
                k.c = c;
                k.dt = dt;
                k.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
                const PlannedGraph g = planGraph(k, go, in, w);
                const int gi = g.find(p.gi), gw = g.find(p.gw), gb = g.find("conv_grad_bias");
                const std::string at = std::string(p.gi) + " " + dtName(dt) + " mask " + std::to_string(m);
                EXPECT_EQ(gi >= 0, k.mask[0]) << at;
                EXPECT_EQ(gw >= 0, k.mask[1]) << at;
                EXPECT_EQ(gb >= 0, k.mask[2]) << at;
                for (int grad : {gi, gw})
                    if (grad >= 0 && gb >= 0) {
                        EXPECT_GT(g.priority_of(grad), g.priority_of(gb)) << at;
                    }
                const int ids[3] = {gi, gw, gb};
                for (int a : ids)
                    for (int b : ids)
                        if (a >= 0 && b >= 0 && a != b) {
                            EXPECT_FALSE(g.reaches(a, b)) << at << ": node " << a << " waits for " << b;
                        }
            }
    }
}

// Every kernel reads only scratch it wrote: the workspace starts as NaNs (0xff bytes), so a read of
// an unwritten staged row, row sum or partial (e.g. gradInput's combine step without its left-edge
// mask) turns a result into NaN. Shapes with one and several vectors per row, tails, several bands.
TEST(SmallCin, NanFilledWorkspace) {
    Runtime::use("atlas-a2");
    for (const cref::Conv &c : {shape(2, 3, 7, 5, 17), shape(1, 1, 3, 1, 1), shape(1, 3, 2, 3, 130), shape(8, 3, 8, 70, 20),
                                shape(2, 4, 5, 4, 100)})
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16, ACL_FLOAT16}) {
            const auto go = ints(cref::Conv::count(c.gradOutputDims()), 8, 81), in = ints(cref::Conv::count(c.inputDims()), 4, 82);
            const auto w = ints(cref::Conv::count(c.weightDims()), 4, 83);
            for (int m = 1; m < 4; ++m) {
                Call k;
                k.c = c;
                k.dt = dt;
                k.mask = {(m & 1) != 0, (m & 2) != 0, false};
                k.wsFill = 0xff;
                const Result r = runBackward(k, go, in, w);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                const cref::Grads ref = cref::backward(c, go, in, w);
                if (k.mask[0]) {
                    EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << str(c) << " " << dtName(dt) << " mask " << m;
                }
                if (k.mask[1]) {
                    EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << str(c) << " " << dtName(dt) << " mask " << m;
                }
            }
        }
}

}  // namespace
}  // namespace ct
