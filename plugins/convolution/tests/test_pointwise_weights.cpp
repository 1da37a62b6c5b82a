// ConvolutionBackward's pointwise BF16 gradWeight by one matmul (src/dnnl_pointwise_weights.cpp:
// 1x1, stride 1, no padding, no groups, planes up to 4096 positions, where oneDNN runs its matmul
// on AMX tiles): the plan names the matmul exactly on CPUs with AMX and the convolution kernels
// elsewhere; every gradient exact with integer fill (one image: no regrouped copies; 1, 2 and 4
// row blocks; 1-D, 3-D, a strided 1x1 sampled down to a pointwise one, transposed; FLOAT never by
// matmul); random data within the BF16 tolerance and the same bytes at 1, 2 and 3 threads.
#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

cref::Conv conv1d(int64_t N, int64_t Cin, int64_t Cout, int64_t W) {
    cref::Conv c;
    c.sd = 1, c.N = N, c.Cin = Cin, c.Cout = Cout;
    c.in = {W, 1, 1};
    return c;
}
cref::Conv conv3d(int64_t N, int64_t Cin, int64_t Cout, int64_t D, int64_t H, int64_t W) {
    cref::Conv c;
    c.sd = 3, c.N = N, c.Cin = Cin, c.Cout = Cout;
    c.in = {D, H, W};
    return c;
}
cref::Conv transposed(cref::Conv c) {
    c.transposed = true;
    return c;
}

struct Shape {
    const char *name;
    cref::Conv c;
};
std::vector<Shape> shapes() {
    return {{"N3 40->128 7x7 (4 row blocks)", conv2d(3, 40, 128, 7, 7, 1, 1)},
            {"N1 24->64 5x9 (no copies, 2 row blocks)", conv2d(1, 24, 64, 5, 9, 1, 1)},
            {"N2 16->20 3x3 (1 block)", conv2d(2, 16, 20, 3, 3, 1, 1)},
            {"1-D N4 32->64 w50", conv1d(4, 32, 64, 50)},
            {"3-D N2 16->32 3x4x5", conv3d(2, 16, 32, 3, 4, 5)},
            {"N2 32->64 9x9 stride 2 (sampled)", conv2d(2, 32, 64, 9, 9, 1, 1, 2, 2)},
            {"transposed N2 64->32 6x6", transposed(conv2d(2, 64, 32, 6, 6, 1, 1))},
            {"N2 8->16 80x60 (4800 positions: the convolution)", conv2d(2, 8, 16, 80, 60, 1, 1)}};
}

TEST(PointwiseWeights, ExactAndByMatmulWhereTheCpuHasAmx) {
    Runtime::use("atlas-a2");
    uint64_t seed = 500;
    for (const Shape &s : shapes())
        for (aclDataType dt : {ACL_BF16, ACL_FLOAT}) {
            const auto go = ints(cref::Conv::count(s.c.gradOutputDims()), 8, seed++, 20);
            const auto in = ints(cref::Conv::count(s.c.inputDims()), 4, seed++, 20);
            const auto w = ints(cref::Conv::count(s.c.weightDims()), 4, seed++);
            Call k;
            k.c = s.c;
            k.dt = dt;
            const PlannedGraph g = planGraph(k, go, in, w);
            ASSERT_EQ(g.impl.count("gradWeight"), 1u) << s.name;
            const bool matmul = g.impl.at("gradWeight").rfind("matmul", 0) == 0;
            const bool small = cref::Conv::count(s.c.gradOutputDims()) / s.c.Cout / s.c.N <= 4096 &&
                               cref::Conv::count(s.c.inputDims()) / s.c.Cin / s.c.N <= 4096;
            EXPECT_EQ(matmul, dt == ACL_BF16 && small && cpuHasAmxBf16()) << s.name << " " << dtName(dt) << ": " << g.impl.at("gradWeight");
            const Result r = runBackward(k, go, in, w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            const cref::Grads ref = cref::backward(s.c, go, in, w);
            EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << s.name << " " << dtName(dt);
            EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << s.name << " " << dtName(dt);
            EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias")) << s.name << " " << dtName(dt);
            EXPECT_TRUE(r.canary) << s.name;
            EXPECT_TRUE(r.inputsUnchanged) << s.name;
        }
}

// testing.md's BF16 tolerance on random data, and the same bytes at 1, 2 and 3 threads.
TEST(PointwiseWeights, RandomDataWithinToleranceAtAnyThreadCount) {
    for (const Shape &s : shapes()) {
        const auto go = uniform(cref::Conv::count(s.c.gradOutputDims()), 31, ACL_BF16);
        const auto in = uniform(cref::Conv::count(s.c.inputDims()), 32, ACL_BF16);
        const auto w = uniform(cref::Conv::count(s.c.weightDims()), 33, ACL_BF16);
        const cref::Grads ref = cref::backward(s.c, go, in, w);
        std::optional<Result> first;
        for (int threads : {1, 2, 3}) {
            Runtime::use("atlas-a2", threads);
            Call k;
            k.c = s.c;
            k.dt = ACL_BF16;
            const Result r = runBackward(k, go, in, w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            if (first) {
                EXPECT_EQ(r.gw, first->gw) << s.name << " threads " << threads;
                EXPECT_EQ(r.gi, first->gi) << s.name << " threads " << threads;
                continue;
            }
            first = r;
            EXPECT_TRUE(close(ACL_BF16, r.gw, ref.gradWeight, 1e-3, 8e-3, 1e-2, "gradWeight")) << s.name;
            EXPECT_TRUE(close(ACL_BF16, r.gi, ref.gradInput, 1e-3, 8e-3, 1e-2, "gradInput")) << s.name;
        }
    }
}

}  // namespace
}  // namespace ct
