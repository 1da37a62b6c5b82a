// GridSampler2DBackward results: the 18 combinations (3 modes x 3 paddings x alignCorners) against
// the independent double reference and against finite differences of the forward companion, every
// dtype of every product, outputMask, non-contiguous views, empty tensors, and determinism across
// thread counts.
#include "grid_test_util.hpp"

namespace gst {
namespace {

struct Combo {
    int interp, padding;
    bool align;
};
std::vector<Combo> allCombos() {
    std::vector<Combo> v;
    for (int m = 0; m < 3; ++m)
        for (int p = 0; p < 3; ++p)
            for (bool a : {false, true}) v.push_back({m, p, a});
    return v;
}
gref::Problem sweepProblem(const Combo &c) { return {2, 3, 5, 5, 4, 6, c.interp, c.padding, c.align}; }

// PyTorch's test sweep (N2 C3 5x5), grid partly outside [-1, 1], in FLOAT and DOUBLE.
TEST(GridSampler2DBackward, EighteenCombinationsMatchTheReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE})
        for (const Combo &c : allCombos()) {
            const gref::Problem p = sweepProblem(c);
            const Data d = randomData(p, dt, 11 + c.interp * 7 + c.padding * 3 + c.align, 1.4);
            const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
            const Result r = runBackward(p, dt, d);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << describe(p) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
            EXPECT_TRUE(close(dt, r.inputGrad, ref.input)) << describe(p) << " inputGrad " << dtName(dt);
            EXPECT_TRUE(close(dt, r.gridGrad, ref.grid)) << describe(p) << " gridGrad " << dtName(dt);
            EXPECT_TRUE(r.canary && r.inputsUnchanged) << describe(p);
        }
}

// Larger planes with many channels (the channel-vector path, channel tails, several channel blocks).
TEST(GridSampler2DBackward, ManyChannelsMatchTheReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (int64_t C : {8, 17, 70})
        for (const Combo &c : allCombos()) {
            if (c.align) continue;
            const gref::Problem p{2, C, 7, 9, 5, 11, c.interp, c.padding, c.align};
            const Data d = randomData(p, ACL_FLOAT, 100 + C + c.interp * 3 + c.padding, 1.2);
            const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
            const Result r = runBackward(p, ACL_FLOAT, d);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
            EXPECT_TRUE(close(ACL_FLOAT, r.inputGrad, ref.input)) << describe(p);
            EXPECT_TRUE(close(ACL_FLOAT, r.gridGrad, ref.grid)) << describe(p);
        }
}

// Gradients against central differences of loss = sum(gradOutput * forward(input, grid)), in DOUBLE
// through the forward companion (testing.md: eps 1e-6, atol 1e-5, rtol 1e-3); bicubic, which CANN's
// forward has not in DOUBLE, through the reference forward.
TEST(GridSampler2DBackward, EighteenCombinationsMatchFiniteDifferences) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const Combo &c : allCombos()) {
        const gref::Problem p{1, 2, 4, 5, 3, 3, c.interp, c.padding, c.align};
        Rng rng(500 + c.interp * 6 + c.padding * 2 + c.align);
        auto uni = [&](double lo, double hi) { return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * 0x1p-53; };
        Data d;
        for (int64_t i = 0; i < p.outputCount(); ++i) d.gradOutput.push_back(uni(-1, 1));
        for (int64_t i = 0; i < p.inputCount(); ++i) d.input.push_back(uni(-1, 1));
        for (int64_t i = 0; i < p.gridCount(); ++i) d.grid.push_back(uni(-1.3, 1.3));
        const Result r = runBackward(p, ACL_DOUBLE, d);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
        auto loss = [&](const std::vector<double> &in, const std::vector<double> &grid) {
            std::vector<double> out;
            if (p.interp == 2) {
                out = gref::forward(p, in, grid);
            } else {
                const Result f = runForward(p, ACL_DOUBLE, in, grid);
                EXPECT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
                out = f.inputGrad;
            }
            double s = 0;
            for (size_t i = 0; i < out.size(); ++i) s += out[i] * d.gradOutput[i];
            return s;
        };
        const double eps = 1e-6;
        auto check = [&](std::vector<double> &x, const std::vector<double> &grad, bool isGrid, const char *what) {
            for (size_t i = 0; i < x.size(); ++i) {
                const double keep = x[i];
                x[i] = keep + eps;
                const double up = isGrid ? loss(d.input, x) : loss(x, d.grid);
                x[i] = keep - eps;
                const double down = isGrid ? loss(d.input, x) : loss(x, d.grid);
                x[i] = keep;
                const double fd = (up - down) / (2 * eps);
                EXPECT_NEAR(grad[i], fd, 1e-5 + 1e-3 * std::fabs(fd)) << describe(p) << " " << what << "[" << i << "]";
            }
        };
        std::vector<double> in = d.input, grid = d.grid;
        check(in, r.inputGrad, false, "inputGrad");
        check(grid, r.gridGrad, true, "gridGrad");
    }
}

// products.md: FLOAT, FLOAT16, DOUBLE, BF16 on A2/A3; FLOAT, FLOAT16, DOUBLE on training; the
// operator is unsupported on inference and 200I/500 A2. FLOAT16 / BF16 computed in FLOAT, rounded once.
TEST(GridSampler2DBackward, DtypeMatrixPerProduct) {
    const std::vector<std::string> products{"atlas-a2", "atlas-a3", "atlas-training", "atlas-inference", "atlas-200i-500-a2"};
    for (const auto &product : products) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
            const bool a2 = product == "atlas-a2" || product == "atlas-a3";
            const bool ok = a2 || (product == "atlas-training" && dt != ACL_BF16);
            for (int interp = 0; interp < 3; ++interp) {
                const gref::Problem p{2, 19, 6, 7, 5, 4, interp, 2 - interp, interp == 1};
                const Data d = randomData(p, dt, 40 + interp, 1.2);
                const Result r = runBackward(p, dt, d);
                if (!ok) {
                    EXPECT_EQ(r.phase1, 161002) << product << " " << dtName(dt);
                    const bool namesProduct = r.message.find(product == "atlas-training" ? "training" : product == "atlas-inference" ? "inference" : "200I/500") != std::string::npos;
                    EXPECT_TRUE(namesProduct) << r.message;
                    break;
                }
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << product << " " << dtName(dt) << " " << r.message;
                const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
                EXPECT_TRUE(close(dt, r.inputGrad, ref.input)) << product << " " << dtName(dt) << " " << describe(p);
                EXPECT_TRUE(close(dt, r.gridGrad, ref.grid)) << product << " " << dtName(dt) << " " << describe(p);
                EXPECT_TRUE(r.canary);
            }
        }
    }
}

// outputMask selects the outputs: an unselected output keeps its bytes (the 1234 prefill).
TEST(GridSampler2DBackward, OutputMaskSelectsOutputs) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const gref::Problem p{2, 3, 5, 6, 4, 4, 0, 1, false};
    const Data d = randomData(p, ACL_FLOAT, 7);
    const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
    const std::vector<double> untouchedIg(static_cast<size_t>(p.inputCount()), 1234.0),
        untouchedGg(static_cast<size_t>(p.gridCount()), 1234.0);

    Result r = runBackward(p, ACL_FLOAT, d, Mask{false, true, false});
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_TRUE(close(ACL_FLOAT, r.inputGrad, ref.input));
    EXPECT_EQ(r.gridGrad, untouchedGg);

    r = runBackward(p, ACL_FLOAT, d, Mask{false, false, true});
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.inputGrad, untouchedIg);
    EXPECT_TRUE(close(ACL_FLOAT, r.gridGrad, ref.grid));

    for (Mask m : {Mask{false, false, false}, Mask{true, true, true}}) {  // {false, false} and NULL
        r = runBackward(p, ACL_FLOAT, d, m);
        EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.workspace, 0u);
        EXPECT_EQ(r.inputGrad, untouchedIg);
        EXPECT_EQ(r.gridGrad, untouchedGg);
    }
}

// Transposed, padded and offset views give the same bits as contiguous tensors.
TEST(GridSampler2DBackward, NonContiguousViewsGiveTheSameBits) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp) {
            const gref::Problem p{2, 5, 6, 7, 4, 5, interp, 2, false};
            const Data d = randomData(p, dt, 60 + interp);
            const Result plain = runBackward(p, dt, d);
            ASSERT_EQ(plain.phase2, ACLNN_SUCCESS) << plain.message;
            Views v;
            v.gradOutput = Layout{{0, 2, 3, 1}, {}, 3};          // channels last
            v.input = Layout{{}, {0, 1, 2, 3}, 5};               // padded rows and planes
            v.grid = Layout{{3, 0, 1, 2}, {}, 1};                // x and y planes apart
            v.inputGrad = Layout{{1, 0, 3, 2}, {0, 0, 1, 0}, 2}; // transposed planes, padding
            v.gridGrad = Layout{{}, {0, 0, 0, 1}, 4};
            const Result strided = runBackward(p, dt, d, Mask{}, v);
            ASSERT_EQ(strided.phase2, ACLNN_SUCCESS) << strided.message;
            EXPECT_EQ(strided.inputGradBits, plain.inputGradBits) << dtName(dt) << " " << describe(p);
            EXPECT_EQ(strided.gridGradBits, plain.gridGradBits) << dtName(dt) << " " << describe(p);
            EXPECT_TRUE(strided.canary && strided.inputsUnchanged);
        }
}

// Empty tensors (a zero batch, channel or output size): success, workspace 0, nothing written.
TEST(GridSampler2DBackward, EmptyTensorsDoNothing) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (const gref::Problem &p : {gref::Problem{0, 3, 5, 5, 4, 4, 0, 0, false}, gref::Problem{2, 0, 5, 5, 4, 4, 2, 1, true},
                                   gref::Problem{2, 3, 5, 5, 0, 4, 1, 2, false}}) {
        const Data d = randomData(p, ACL_FLOAT, 3);
        const Result r = runBackward(p, ACL_FLOAT, d);
        EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << describe(p) << r.message;
        EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
        EXPECT_EQ(r.workspace, 0u);
        for (double v : r.inputGrad) EXPECT_EQ(v, 1234.0);
        for (double v : r.gridGrad) EXPECT_EQ(v, 1234.0);
    }
}

// Same bytes run to run and at 1, 2 and 3 threads: a small batch (pixel ranges with private
// accumulators), a large batch, bicubic with border taps that coincide.
TEST(GridSampler2DBackward, DeterministicAcrossThreadCounts) {
    const std::vector<gref::Problem> problems{{1, 4, 40, 50, 48, 64, 0, 0, false},
                                              {3, 33, 20, 20, 40, 40, 2, 1, true},
                                              {20, 2, 9, 9, 8, 8, 0, 2, false},
                                              {2, 1, 30, 30, 50, 60, 2, 2, false}};
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16})
        for (const auto &p : problems) {
            const Data d = randomData(p, dt, 77, 1.3);
            std::vector<uint64_t> ig, gg;
            for (int threads : {1, 2, 3, 2}) {
                ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
                const Result r = runBackward(p, dt, d);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                if (ig.empty()) {
                    ig = r.inputGradBits;
                    gg = r.gridGradBits;
                    const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
                    EXPECT_TRUE(close(dt, r.inputGrad, ref.input)) << describe(p);
                    EXPECT_TRUE(close(dt, r.gridGrad, ref.grid)) << describe(p);
                } else {
                    EXPECT_EQ(r.inputGradBits, ig) << describe(p) << " threads " << threads;
                    EXPECT_EQ(r.gridGradBits, gg) << describe(p) << " threads " << threads;
                }
            }
        }
    Runtime::shutdown();
}

}  // namespace
}  // namespace gst
