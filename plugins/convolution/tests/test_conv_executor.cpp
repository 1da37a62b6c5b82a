// ConvolutionBackward beyond the corpus: outputMask combinations, non-contiguous views, determinism
// across thread counts, random-data tolerances per dtype, cubeMathType rounding per product, the
// empty-tensor path, and the executor contract (workspace, consumed and repeatable executors).
#include <cstring>
#include <memory>
#include <thread>

#include "aclnn_cpu/isa.hpp"
#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

cref::Conv medium() { return conv2d(4, 12, 16, 14, 13, 3, 3, 1, 2, 1, 1, 2); }

struct Data {
    std::vector<double> go, in, w;
};
Data intData(const cref::Conv &c, uint64_t seed, int64_t range = 4) {
    return {ints(cref::Conv::count(c.gradOutputDims()), 8, seed), ints(cref::Conv::count(c.inputDims()), range, seed + 1),
            ints(cref::Conv::count(c.weightDims()), range, seed + 2)};
}
Data uniformData(const cref::Conv &c, uint64_t seed, aclDataType dt) {
    return {uniform(cref::Conv::count(c.gradOutputDims()), seed, dt), uniform(cref::Conv::count(c.inputDims()), seed + 1, dt),
            uniform(cref::Conv::count(c.weightDims()), seed + 2, dt)};
}

// The backward of c in dt on atlas-a2 with that many threads.
Result runOnThreads(int threads, const cref::Conv &c, aclDataType dt, const Data &d) {
    Runtime::use("atlas-a2", threads);
    Call k;
    k.c = c;
    k.dt = dt;
    return runBackward(k, d.go, d.in, d.w);
}

TEST(Masks, EveryCombination) {
    Runtime::use("atlas-a2");
    // dense (oneDNN), and depthwise (our kernels: a node per selected gradient)
    for (const cref::Conv &c : {medium(), conv2d(3, 19, 19, 9, 13, 3, 3, 2, 1, 1, 1, 19)}) {
        const Data d = intData(c, 3);
        const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
        Call k;
        k.c = c;
        expectEveryMask(k, d.go, d.in, d.w, ref);
    }
}

// Transposed strides, padded rows and offsets on every tensor give the contiguous bits.
TEST(Views, NonContiguous) {
    Runtime::use("atlas-a2");
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
        for (int variant : {0, 1, 2}) {
            const bool transposed = variant == 1;
            cref::Conv c = variant == 2 ? conv2d(4, 12, 12, 14, 13, 3, 3, 1, 2, 1, 1, 12) : medium();
            c.transposed = transposed;
            if (transposed) c.op = {0, 1, 0};
            const Data d = intData(c, 5);
            const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
            Call k;
            k.c = c;
            k.dt = dt;
            useStridedViews(k);
            const Result r = runBackward(k, d.go, d.in, d.w);
            ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << dtName(dt) << transposed;
            EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << dtName(dt) << transposed;
            EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias")) << dtName(dt) << transposed;
            EXPECT_TRUE(r.canary);
            EXPECT_TRUE(r.inputsUnchanged);
        }
}

// Random data: the same bytes at 1, 2 and 3 threads and run to run.
TEST(Determinism, ThreadCounts) {
    for (const cref::Conv &c : {conv2d(9, 16, 24, 17, 15, 3, 3, 1, 1, 1, 1), conv2d(5, 24, 24, 19, 18, 3, 3, 2, 2, 1, 1, 24),
                                conv2d(5, 40, 40, 14, 14, 3, 3, 1, 1, 1, 1, 40), conv2d(7, 32, 48, 7, 7, 3, 3, 1, 1, 1, 1),
                                conv2d(6, 32, 64, 9, 9, 3, 3, 1, 1, 1, 1), conv2d(3, 64, 64, 5, 5, 3, 3, 1, 1, 1, 1),
                                conv2d(8, 16, 16, 12, 12, 3, 3, 1, 1, 1, 1)})  // (weight pass: four chunks of two images)
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        const Data d = uniformData(c, 9, dt);
        std::optional<Result> first;
        for (int threads : {1, 2, 3, 2}) {
            const Result r = runOnThreads(threads, c, dt, d);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            if (!first) {
                first = r;
                continue;
            }
            EXPECT_EQ(r.gi, first->gi) << dtName(dt) << " threads " << threads;
            EXPECT_EQ(r.gw, first->gw) << dtName(dt) << " threads " << threads;
            EXPECT_EQ(r.gb, first->gb) << dtName(dt) << " threads " << threads;
        }
    }
}

// A oneDNN pass reserves one set of task scratch (scratchpad, blocked copies, blocked result) per
// task that can run at once - min(tasks, threads), acp::SlotPool - not one per task: on layers of
// four chunks or four channel blocks per pass, every thread up to three adds the same set of bytes
// to the workspace. (With a set per task the workspace would not depend on the threads at all.)
TEST(Workspace, OneSetOfTaskScratchPerThread) {
    for (const cref::Conv &c : {conv2d(8, 16, 16, 12, 12, 3, 3, 1, 1, 1, 1),  // both passes: four chunks of two images
                                conv2d(2, 64, 64, 7, 7, 3, 3, 1, 1, 1, 1)})   // both passes: four channel blocks
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
            const Data d = intData(c, 7);
            uint64_t ws[4] = {};
            for (int threads : {1, 2, 3}) {
                const Result r = runOnThreads(threads, c, dt, d);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                ws[threads] = r.workspace;
            }
            const std::string at = std::to_string(c.inputDims()[1]) + " channels " + dtName(dt);
            EXPECT_LT(ws[1], ws[2]) << at;
            EXPECT_EQ(ws[3] - ws[2], ws[2] - ws[1]) << at << ": " << ws[1] << ", " << ws[2] << ", " << ws[3] << " bytes";
        }
}

// The graph ConvolutionBackward plans for c in dt on atlas-a2 at 2 threads (integer data).
PlannedGraph planOnA2(const cref::Conv &c, aclDataType dt) {
    Runtime::use("atlas-a2", 2);
    Call k;
    k.c = c;
    k.dt = dt;
    const Data d = intData(c, 5);
    return planGraph(k, d.go, d.in, d.w);
}

// How the oneDNN passes split, by the shape, dtype and CPU (dnnl_common.cpp, dnnl_weight_pass.cpp):
// weights outweighing the activations put both passes in channel blocks; in BF16 the weight pass
// only where they outweigh them outright (else the minibatch in two chunks) - but on CPUs with AMX
// wherever they outweigh them; smaller weights neither.
TEST(Split, ChannelBlocksByWeightShare) {
    struct Case {
        cref::Conv c;
        int64_t gi, gw_float, gw_bf16, gw_bf16_amx;  // expected channel blocks
    };
    const bool amx = cpuHasAmxBf16();
    for (const Case &e : {Case{conv2d(2, 64, 64, 7, 7, 3, 3, 1, 1, 1, 1), 4, 4, 4, 4},     // weights 2.9x the activations
                          Case{conv2d(2, 32, 32, 14, 14, 3, 3, 1, 1, 1, 1), 2, 2, 0, 2},   // 0.37x
                          Case{conv2d(4, 16, 16, 28, 28, 3, 3, 1, 1, 1, 1), 0, 0, 0, 0}})  // 0.02x
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
            const PlannedGraph g = planOnA2(e.c, dt);
            const std::string at = std::to_string(e.c.inputDims()[1]) + " channels " + dtName(dt);
            ASSERT_EQ(g.channel_blocks.count("gradInput"), 1u) << at;
            ASSERT_EQ(g.channel_blocks.count("gradWeight"), 1u) << at;
            EXPECT_EQ(g.channel_blocks.at("gradInput"), e.gi) << at;
            EXPECT_EQ(g.channel_blocks.at("gradWeight"), dt == ACL_BF16 ? (amx ? e.gw_bf16_amx : e.gw_bf16) : e.gw_float) << at;
        }
    // BF16 3x3 layers take at most 4 blocks on CPUs with AMX, up to 16 elsewhere
    const PlannedGraph wide = planOnA2(conv2d(2, 256, 256, 7, 7, 3, 3, 1, 1, 1, 1), ACL_BF16);
    EXPECT_EQ(wide.channel_blocks.at("gradInput"), amx ? 4 : 16);
    EXPECT_EQ(wide.channel_blocks.at("gradWeight"), amx ? 4 : 16);
}

// BF16 on CPUs with AMX, 2 or more threads, both gradients, the weight pass split by the minibatch:
// its chunks run as two nodes of half the chunks each, at a higher priority than gradInput, and
// "conv_grad_weight" sums their partials after both (conv_plan.cpp). Neither half nor the sum waits
// for gradInput, nor gradInput for them. FLOAT, one thread, or no gradInput: one weight node. The
// bytes equal the one-node run's (Determinism.ThreadCounts runs this shape at 1, 2 and 3 threads).
TEST(Split, AmxBf16WeightChunksAsTwoNodesAheadOfGradInput) {
    const cref::Conv c = conv2d(8, 16, 16, 12, 12, 3, 3, 1, 1, 1, 1);  // weight pass: four chunks of two images
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16})
        for (int threads : {1, 2})
            for (const bool with_gi : {true, false}) {
                Runtime::use("atlas-a2", threads);
                Call k;
                k.c = c;
                k.dt = dt;
                k.mask = {with_gi, true, true};
                const Data d = intData(c, 5);
                const PlannedGraph g = planGraph(k, d.go, d.in, d.w);
                const std::string at = std::string(dtName(dt)) + " threads " + std::to_string(threads) + (with_gi ? "" : " no gradInput");
                ASSERT_EQ(g.result.phase2, ACLNN_SUCCESS) << at << ": " << g.result.message;
                std::vector<int> halves;
                for (const auto &[id, n] : g.nodes)
                    if (n.first == "conv_grad_weight_chunks") halves.push_back(id);
                const bool split = dt == ACL_BF16 && cpuHasAmxBf16() && threads >= 2 && with_gi;
                ASSERT_EQ(halves.size(), split ? 2u : 0u) << at;
                const int gw = g.find("conv_grad_weight"), gi = g.find("conv_grad_input");
                ASSERT_GE(gw, 0) << at;
                EXPECT_EQ(gi >= 0, with_gi) << at;
                for (int h : halves) {
                    EXPECT_TRUE(g.reaches(gw, h)) << at << ": the sum waits for each half";
                    EXPECT_FALSE(g.reaches(h, gi)) << at;
                    EXPECT_FALSE(g.reaches(gi, h)) << at;
                    EXPECT_GT(g.priority_of(h), g.priority_of(gi)) << at;
                }
                if (gi >= 0) {
                    EXPECT_FALSE(g.reaches(gw, gi)) << at;
                    EXPECT_FALSE(g.reaches(gi, gw)) << at;
                }
            }
}

// gradInput of a 2-D convolution with at most 4 input channels (outside the small-Cin kernels' 3x3
// stride-1 shapes) runs oneDNN's GEMM path on plain layouts (dnnl_common.cpp, plain_data_layout):
// its blocked kernels would pad the channels to 16. ResNet-50's first layer (7x7 stride 2) in
// miniature, at 3 and 4 input channels; 5 input channels keep the blocked kernels. Bits: the
// integer-fill and tolerance suites cover these shapes' results.
TEST(Split, FewInputChannelsTakeTheGemmPathForGradInput) {
    for (int64_t cin : {3, 4, 5})
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            Runtime::use("atlas-a2", 2);
            Call k;
            k.c = conv2d(2, cin, 8, 20, 20, 7, 7, 2, 2, 3, 3);
            k.dt = dt;
            const Data d = intData(k.c, 5);
            const PlannedGraph g = planGraph(k, d.go, d.in, d.w);
            const std::string at = std::to_string(cin) + " channels " + dtName(dt);
            ASSERT_EQ(g.impl.count("gradInput"), 1u) << at;
            EXPECT_EQ(g.impl.at("gradInput").find("gemm") != std::string::npos, cin <= 4) << at << ": " << g.impl.at("gradInput");
        }
}

// Random data against the double reference: FLOAT 1e-5 + 1e-4|ref| and relative L2 1e-6;
// FLOAT16 rtol = atol = 1e-3; BF16 rtol 8e-3 (testing.md).
TEST(Tolerance, RandomData) {
    Runtime::use("atlas-a2");
    for (int variant : {0, 1, 2, 3})
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            const bool transposed = variant == 1;
            // 2: depthwise, strided; 3: depthwise, stride 1 same size, planes large enough to sum per plane
            cref::Conv c = variant == 2   ? conv2d(3, 16, 16, 40, 37, 3, 3, 2, 1, 1, 1, 16)
                           : variant == 3 ? conv2d(3, 8, 8, 160, 150, 3, 3, 1, 1, 1, 1, 8)
                                          : conv2d(3, 16, 20, 12, 11, 3, 3, 2, 1, 1, 1, 4);
            c.transposed = transposed;
            if (transposed) c.op = {1, 0, 0};
            const Data d = uniformData(c, 21, dt);
            const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
            Call k;
            k.c = c;
            k.dt = dt;
            const Result r = runBackward(k, d.go, d.in, d.w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            const double atol = dt == ACL_FLOAT ? 1e-5 : 1e-3, rtol = dt == ACL_FLOAT ? 1e-4 : dt == ACL_FLOAT16 ? 1e-3 : 8e-3;
            const double l2 = dt == ACL_FLOAT ? 1e-6 : 1e-2;
            EXPECT_TRUE(close(dt, r.gi, ref.gradInput, atol, rtol, l2, "gradInput")) << dtName(dt) << transposed;
            EXPECT_TRUE(close(dt, r.gw, ref.gradWeight, atol, rtol, l2, "gradWeight")) << dtName(dt) << transposed;
            EXPECT_TRUE(close(dt, r.gb, ref.gradBias, atol, rtol, l2, "gradBias")) << dtName(dt) << transposed;
        }
}

// cubeMathType: FLOAT inputs rounded to HF32 (A2 modes 1, 3) or FLOAT16 (A2 mode 2; training
// modes 1, 2) before the math, accumulation in FLOAT; the bias gradient is not a cube operation.
TEST(CubeMath, InputRounding) {
    struct Mode {
        const char *product;
        int8_t cube;
        double (*round)(double);
    };
    const Mode modes[] = {{"atlas-a2", 1, roundHf32}, {"atlas-a2", 3, roundHf32}, {"atlas-a2", 2, roundFp16},
                          {"atlas-training", 1, roundFp16}, {"atlas-training", 2, roundFp16}, {"atlas-inference", 1, roundFp16}};
    // dense, and depthwise (gradBias sums the unrounded gradOutput in both)
    for (const cref::Conv &c : {conv2d(2, 8, 8, 9, 9, 3, 3, 1, 1, 1, 1), conv2d(2, 8, 8, 9, 9, 3, 3, 1, 1, 1, 1, 8)}) {
        const Data d = uniformData(c, 31, ACL_FLOAT);
        auto rounded = [](std::vector<double> v, double (*f)(double)) {
            for (auto &x : v) x = f(x);
            return v;
        };
        const cref::Grads exact = cref::backward(c, d.go, d.in, d.w);
        for (const Mode &m : modes) {
            Runtime::use(m.product);
            const cref::Grads ref = cref::backward(c, rounded(d.go, m.round), rounded(d.in, m.round), rounded(d.w, m.round));
            Call k;
            k.c = c;
            k.cube = m.cube;
            const Result r = runBackward(k, d.go, d.in, d.w);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << m.product << " " << r.message;
            // testing.md's FLOAT tolerance (FLOAT accumulation of ~160 cancelling terms)
            EXPECT_TRUE(close(ACL_FLOAT, r.gi, ref.gradInput, 1e-5, 1e-4, 1e-6, "gradInput")) << m.product << int(m.cube);
            EXPECT_TRUE(close(ACL_FLOAT, r.gw, ref.gradWeight, 1e-5, 1e-4, 1e-6, "gradWeight")) << m.product << int(m.cube);
            EXPECT_TRUE(close(ACL_FLOAT, r.gb, exact.gradBias, 1e-5, 1e-4, 1e-6, "gradBias")) << m.product << int(m.cube);
            // and the rounding is visible: the unrounded reference is off by more than that tolerance
            EXPECT_FALSE(close(ACL_FLOAT, r.gw, exact.gradWeight, 1e-5, 1e-4, 1e-6, "gradWeight")) << m.product << int(m.cube);
        }
    }
}

// Huawei's empty path: gradWeight and gradBias zeroed where selected, gradInput untouched.
TEST(Empty, ZeroesWeightAndBiasOnly) {
    Runtime::use("atlas-a2");
    cref::Conv c = conv2d(0, 4, 6, 5, 5, 3, 3, 1, 1, 1, 1);
    Tensor go(ACL_FLOAT, c.gradOutputDims()), in(ACL_FLOAT, c.inputDims()), w(ACL_FLOAT, c.weightDims());
    Tensor gi(ACL_FLOAT, c.inputDims()), gw(ACL_FLOAT, c.weightDims()), gb(ACL_FLOAT, {6}, {}, ACL_FORMAT_ND);
    gw.setValues(std::vector<double>(static_cast<size_t>(gw.count()), 7.0));
    gb.setValues(std::vector<double>(6, 7.0));
    IntArray stride(std::vector<int64_t>{1, 1}), pad(std::vector<int64_t>{1, 1}), dil(std::vector<int64_t>{1, 1}),
        op(std::vector<int64_t>{0, 0}), bias(std::vector<int64_t>{6});
    BoolArray mask(std::vector<bool>{true, true, true});
    uint64_t ws = 1;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnConvolutionBackwardGetWorkspaceSize(go.get(), in.get(), w.get(), bias.a, stride.a, pad.a, dil.a, false, op.a,
                                                       1, mask.a, 0, gi.get(), gw.get(), gb.get(), &ws, &exec),
              ACLNN_SUCCESS)
        << lastError();
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnConvolutionBackward(nullptr, 0, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(gw.values(), std::vector<double>(static_cast<size_t>(gw.count()), 0.0));
    EXPECT_EQ(gb.values(), std::vector<double>(6, 0.0));
    EXPECT_TRUE(gw.canaryIntact() && gb.canaryIntact() && gi.canaryIntact());
}

struct Prepared {
    cref::Conv c = medium();
    Data d = intData(c, 41);
    Tensor go{ACL_FLOAT, c.gradOutputDims()}, in{ACL_FLOAT, c.inputDims()}, w{ACL_FLOAT, c.weightDims()};
    Tensor gi{ACL_FLOAT, c.inputDims()}, gw{ACL_FLOAT, c.weightDims()}, gb{ACL_FLOAT, {c.Cout}, {}, ACL_FORMAT_ND};
    IntArray stride{c.spatial(c.s)}, pad{c.spatial(c.pl)}, dil{c.spatial(c.d)}, op{c.spatial(c.op)},
        bias{std::vector<int64_t>{c.Cout}};
    BoolArray mask{std::vector<bool>{true, true, true}};
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    Prepared() {
        go.setValues(d.go);
        in.setValues(d.in);
        w.setValues(d.w);
    }
    aclnnStatus plan() {
        return aclnnConvolutionBackwardGetWorkspaceSize(go.get(), in.get(), w.get(), bias.a, stride.a, pad.a, dil.a, false, op.a,
                                                        static_cast<int>(c.G), mask.a, 0, gi.get(), gw.get(), gb.get(), &ws,
                                                        &exec);
    }
};

// Depthwise kernels (direct: 3x3 pad 1 stride 1 and 2; channel-blocked: dilated) never read their
// scratch before writing it: a workspace of NaN bytes gives the exact integer results, every mask.
TEST(Depthwise, NanFilledWorkspace) {
    Runtime::use("atlas-a2");
    for (const cref::Conv &c : {conv2d(2, 35, 35, 7, 7, 3, 3, 1, 1, 1, 1, 35), conv2d(2, 17, 17, 9, 37, 3, 3, 1, 1, 1, 1, 17),
                                conv2d(2, 17, 17, 10, 35, 3, 3, 2, 2, 1, 1, 17), conv2d(2, 5, 5, 9, 21, 3, 3, 1, 1, 2, 2, 5)})
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16, ACL_FLOAT16}) {
            const Data d = intData(c, 61);
            const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
            for (int m = 1; m < 8; ++m) {
                Call k;
                k.c = c;
                k.dt = dt;
                k.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
                k.wsFill = 0xff;
                const Result r = runBackward(k, d.go, d.in, d.w);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                const std::string at = std::string(dtName(dt)) + " mask " + std::to_string(m) + " W " + std::to_string(c.in[1]);
                if (k.mask[0]) {
                    EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << at;
                }
                if (k.mask[1]) {
                    EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << at;
                }
                if (k.mask[2]) {
                    EXPECT_TRUE(sameBits(dt, r.gb, ref.gradBias, "gradBias")) << at;
                }
            }
        }
}

// Strided pointwise (unit stride over the sampled positions): every gradInput element written - the
// samples and the zeros between them - whatever the workspace held, every mask, in a gradInput large
// enough to be streamed (images not starting on a cache line) and in a small one, and into views.
TEST(StridedPointwise, EveryElementWrittenStreamedOrNot) {
    Runtime::use("atlas-a2");
    for (const bool large : {true, false}) {
        const cref::Conv c = large ? conv2d(2, 66, 8, 127, 127, 1, 1, 2, 2) : conv2d(2, 5, 7, 9, 11, 1, 1, 2, 3);
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16, ACL_FLOAT16}) {
            const Data d = intData(c, 67);
            const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
            Call k;
            k.c = c;
            k.dt = dt;
            k.wsFill = 0xff;
            if (large) {  // the streamed expansion does not depend on the mask: all three gradients
                const Result r = runBackward(k, d.go, d.in, d.w);
                ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                EXPECT_TRUE(sameBits(dt, r.gi, ref.gradInput, "gradInput")) << dtName(dt);
                EXPECT_TRUE(sameBits(dt, r.gw, ref.gradWeight, "gradWeight")) << dtName(dt);
                EXPECT_TRUE(r.canary) << dtName(dt);
                continue;
            }
            expectEveryMask(k, d.go, d.in, d.w, ref);
            useStridedViews(k);
            expectEveryMask(k, d.go, d.in, d.w, ref);
        }
    }
}

TEST(Executor, WorkspaceDeterministicAndTooSmall) {
    Runtime::use("atlas-a2");
    Prepared a, b;
    ASSERT_EQ(a.plan(), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(b.plan(), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(a.ws, b.ws);
    ASSERT_GT(a.ws, 0u);
    Workspace w;
    EXPECT_NE(aclnnConvolutionBackward(w.ptr(a.ws - 1), a.ws - 1, a.exec, Runtime::stream()), ACLNN_SUCCESS);
    EXPECT_NE(aclnnConvolutionBackward(nullptr, a.ws, b.exec, Runtime::stream()), ACLNN_SUCCESS);
    // a failed run consumes the executor, like a successful one
    EXPECT_NE(aclnnConvolutionBackward(w.ptr(a.ws), a.ws, a.exec, Runtime::stream()), ACLNN_SUCCESS);
}

TEST(Executor, ConsumedRunFailsCleanly) {
    Runtime::use("atlas-a2");
    Prepared p;
    ASSERT_EQ(p.plan(), ACLNN_SUCCESS) << lastError();
    Workspace w;
    void *ws = w.ptr(p.ws);
    ASSERT_EQ(aclnnConvolutionBackward(ws, p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    EXPECT_NE(aclnnConvolutionBackward(ws, p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS);
}

// One repeatable executor, run again after the tensors moved to new addresses, and on two
// workspaces in turn, the one not in use filled with NaNs (a task's memory objects are re-pointed
// at every run, never left on the addresses of the last).
TEST(Executor, RepeatableWithNewAddresses) {
    Runtime::use("atlas-a2");
    Prepared p;
    ASSERT_EQ(p.plan(), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(p.exec), ACLNN_SUCCESS);
    Workspace w;
    void *ws = w.ptr(p.ws);
    const cref::Grads ref = cref::backward(p.c, p.d.go, p.d.in, p.d.w);
    ASSERT_EQ(aclnnConvolutionBackward(ws, p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    EXPECT_TRUE(sameBits(ACL_FLOAT, p.gw.bits(), ref.gradWeight, "gradWeight"));
    // second data set at new addresses
    const Data d2 = intData(p.c, 77);
    Tensor go2(ACL_FLOAT, p.c.gradOutputDims()), in2(ACL_FLOAT, p.c.inputDims()), w2(ACL_FLOAT, p.c.weightDims());
    Tensor gi2(ACL_FLOAT, p.c.inputDims()), gw2(ACL_FLOAT, p.c.weightDims()), gb2(ACL_FLOAT, {p.c.Cout}, {}, ACL_FORMAT_ND);
    go2.setValues(d2.go);
    in2.setValues(d2.in);
    w2.setValues(d2.w);
    ASSERT_EQ(aclSetInputTensorAddr(p.exec, 0, p.go.get(), go2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetInputTensorAddr(p.exec, 1, p.in.get(), in2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetInputTensorAddr(p.exec, 2, p.w.get(), w2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(p.exec, 0, p.gi.get(), gi2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(p.exec, 1, p.gw.get(), gw2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetOutputTensorAddr(p.exec, 2, p.gb.get(), gb2.data()), ACLNN_SUCCESS);
    Workspace other;
    void *const ws2 = other.ptr(p.ws);
    for (int run = 0; run < 4; ++run) {
        void *const use = run % 2 ? ws2 : ws;
        std::memset(run % 2 ? ws : ws2, 0xff, static_cast<size_t>(p.ws));
        ASSERT_EQ(aclnnConvolutionBackward(use, p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
        const cref::Grads ref2 = cref::backward(p.c, d2.go, d2.in, d2.w);
        EXPECT_TRUE(sameBits(ACL_FLOAT, gi2.bits(), ref2.gradInput, "gradInput"));
        EXPECT_TRUE(sameBits(ACL_FLOAT, gw2.bits(), ref2.gradWeight, "gradWeight"));
        EXPECT_TRUE(sameBits(ACL_FLOAT, gb2.bits(), ref2.gradBias, "gradBias"));
    }
    EXPECT_EQ(aclDestroyAclOpExecutor(p.exec), ACLNN_SUCCESS);
}

// CANN numbers aclSetOutputTensorAddr's index over every output of the signature: with gradWeight
// NULL, gradBias is still output 2, and output 1 has no address to update (161002).
TEST(Executor, AddressIndexCountsAbsentOutputs) {
    Runtime::use("atlas-a2");
    Prepared p;
    BoolArray mask{std::vector<bool>{true, false, true}};
    ASSERT_EQ(aclnnConvolutionBackwardGetWorkspaceSize(p.go.get(), p.in.get(), p.w.get(), p.bias.a, p.stride.a, p.pad.a,
                                                       p.dil.a, false, p.op.a, static_cast<int>(p.c.G), mask.a, 0,
                                                       p.gi.get(), nullptr, p.gb.get(), &p.ws, &p.exec),
              ACLNN_SUCCESS)
        << lastError();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(p.exec), ACLNN_SUCCESS);
    Tensor gb2(ACL_FLOAT, {p.c.Cout}, {}, ACL_FORMAT_ND), gw2(ACL_FLOAT, p.c.weightDims());
    EXPECT_EQ(aclSetOutputTensorAddr(p.exec, 1, gw2.get(), gw2.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(lastError().find("output 1 (gradWeight) was NULL or unselected in phase 1"), std::string::npos);
    ASSERT_EQ(aclSetOutputTensorAddr(p.exec, 2, p.gb.get(), gb2.data()), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(aclSetOutputTensorAddr(p.exec, 3, p.gb.get(), gb2.data()), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(lastError().find("has 3 output tensor(s)"), std::string::npos);
    Workspace w;
    ASSERT_EQ(aclnnConvolutionBackward(w.ptr(p.ws), p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    const cref::Grads ref = cref::backward(p.c, p.d.go, p.d.in, p.d.w);
    EXPECT_TRUE(sameBits(ACL_FLOAT, gb2.bits(), ref.gradBias, "gradBias at its new address"));
    EXPECT_EQ(aclDestroyAclOpExecutor(p.exec), ACLNN_SUCCESS);
}

// gradInput of a unit-stride FLOAT convolution runs as the forward of the mirrored convolution
// (mirrored.hpp) on AVX-512 CPUs - oneDNN's brgemm forward kernels - split by images or by channel
// blocks, and nothing else does: not stride 2, not BF16.
// (The exact and random-data tests check its results, the determinism test its bytes.)
TEST(Split, MirroredGradInputWhereItPays) {
    struct Case {
        cref::Conv c;
        bool mirrored_float;
    };
    cref::Conv dilated = conv2d(2, 8, 12, 10, 9, 3, 3, 1, 1, 2, 2);  // dilation 2, padding 2
    dilated.d = {2, 2, 1};
    for (const Case &e : {Case{conv2d(4, 16, 24, 28, 28, 3, 3, 1, 1, 1, 1), true}, Case{dilated, true},
                          Case{conv2d(4, 16, 16, 28, 28, 3, 3, 2, 2, 1, 1), false},  // stride 2
                          Case{conv2d(2, 64, 64, 7, 7, 3, 3, 1, 1, 1, 1), true}})     // by channel blocks
        for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
            const PlannedGraph g = planOnA2(e.c, dt);
            ASSERT_EQ(g.impl.count("gradInput"), 1u);
            const bool want = e.mirrored_float && dt == ACL_FLOAT && acp::cpu_has_avx512();
            EXPECT_EQ(g.impl.at("gradInput").rfind("brgconv", 0) == 0, want)
                << e.c.inputDims()[1] << " channels " << dtName(dt) << ": " << g.impl.at("gradInput");
        }
}

// ---- oneDNN passes kept from one plan for the next (pass_cache.hpp) ----

size_t countOf(const std::string &log, const std::string &what) {
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
}

// A later plan of the same problem (the first executor gone) reuses both passes, and the bytes are
// the reference's and the first plan's, over a workspace of NaNs. The shapes are in no other test,
// so the first plan builds its passes.
TEST(PassCache, ALaterPlanReusesThePassesWithTheSameBytes) {
    Runtime::use("atlas-a2", 2);
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        Call k;
        k.c = conv2d(3, 20, 24, 11, 10, 3, 3, 1, 1, 1, 1);
        k.dt = dt;
        k.wsFill = 0xff;
        const Data d = intData(k.c, 17);
        const cref::Grads ref = cref::backward(k.c, d.go, d.in, d.w);
        const PlannedGraph first = planGraph(k, d.go, d.in, d.w), second = planGraph(k, d.go, d.in, d.w);
        for (const char *pass : {"gradInput", "gradWeight"}) {
            ASSERT_EQ(first.reused.count(pass), 1u) << pass;
            ASSERT_EQ(second.reused.count(pass), 1u) << pass;
            EXPECT_FALSE(first.reused.at(pass)) << dtName(dt) << " " << pass << ": a new problem builds its pass";
            EXPECT_TRUE(second.reused.at(pass)) << dtName(dt) << " " << pass;
            EXPECT_EQ(first.impl.at(pass), second.impl.at(pass)) << pass;
        }
        EXPECT_TRUE(sameBits(dt, second.result.gi, ref.gradInput, "gradInput")) << dtName(dt);
        EXPECT_TRUE(sameBits(dt, second.result.gw, ref.gradWeight, "gradWeight")) << dtName(dt);
        EXPECT_EQ(second.result.gi, first.result.gi) << dtName(dt);
        EXPECT_EQ(second.result.gw, first.result.gw) << dtName(dt);
        EXPECT_EQ(second.result.gb, first.result.gb) << dtName(dt);
        EXPECT_EQ(second.result.workspace, first.result.workspace) << dtName(dt);
    }
}

// A weight pass reads the blocked gradOutput its data pass made when both run, and blocks its own
// copy when it runs alone. Reused across the two plans in either order, it reserves what this plan
// needs: gradWeight is the reference's each time, over a workspace of NaNs.
TEST(PassCache, AWeightPassReusedWithAndWithoutTheSharedOperand) {
    Runtime::use("atlas-a2", 2);
    struct Case {
        cref::Conv c;
        aclDataType dt;
    };
    for (const Case &e : {Case{conv2d(4, 16, 16, 26, 26, 3, 3, 2, 2, 1, 1), ACL_FLOAT}, Case{conv2d(4, 24, 32, 13, 12, 3, 3, 1, 1, 1, 1), ACL_BF16}}) {
        Call k;
        k.c = e.c;
        k.dt = e.dt;
        k.wsFill = 0xff;
        const Data d = intData(k.c, 19);
        const cref::Grads ref = cref::backward(k.c, d.go, d.in, d.w);
        bool shared_seen = false;
        for (const std::vector<bool> &mask : {std::vector<bool>{true, true, false}, {false, true, false}, {true, true, true},
                                              {false, true, true}, {true, true, false}}) {
            k.mask = mask;
            const PlannedGraph g = planGraph(k, d.go, d.in, d.w);
            const std::string at = std::string(dtName(e.dt)) + " mask " + (mask[0] ? "1" : "0") + (mask[1] ? "1" : "0") + (mask[2] ? "1" : "0");
            ASSERT_EQ(g.result.phase2, ACLNN_SUCCESS) << at << " " << g.result.message;
            EXPECT_TRUE(sameBits(e.dt, g.result.gw, ref.gradWeight, "gradWeight")) << at;
            if (mask[0]) {
                EXPECT_TRUE(sameBits(e.dt, g.result.gi, ref.gradInput, "gradInput")) << at;
            }
            EXPECT_EQ(g.find("conv_block_grad_output") >= 0, mask[0]) << at << ": gradOutput blocked once for both passes";
            shared_seen = shared_seen || g.find("conv_block_grad_output") >= 0;
            EXPECT_TRUE(g.result.canary) << at;
        }
        EXPECT_TRUE(shared_seen) << dtName(e.dt) << ": the shape no longer shares the blocked gradOutput: pick one that does";
    }
}

// Two plans of one problem alive together each get a pass of their own (the second builds one);
// both run, in the other order, to the reference's bytes. Once both are gone, a third plan reuses one.
TEST(PassCache, PlansAliveTogetherGetPassesOfTheirOwn) {
    Runtime::use("atlas-a2", 2);
    const cref::Conv c = conv2d(2, 18, 20, 9, 8, 3, 3, 1, 1, 1, 1);
    const Data d = intData(c, 23);
    const cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
    struct Planned {
        Tensor go, in, w, gi, gw;
        aclOpExecutor *exec = nullptr;
        uint64_t ws = 0;
        explicit Planned(const cref::Conv &c)
            : go(ACL_FLOAT, c.gradOutputDims()), in(ACL_FLOAT, c.inputDims()), w(ACL_FLOAT, c.weightDims()),
              gi(ACL_FLOAT, c.inputDims()), gw(ACL_FLOAT, c.weightDims()) {}
    };
    IntArray stride(c.spatial(c.s)), pad(c.spatial(c.pl)), dil(c.spatial(c.d)), op(c.spatial(c.op)), bias(std::vector<int64_t>{c.Cout});
    BoolArray mask(std::vector<bool>{true, true, false});
    std::vector<std::unique_ptr<Planned>> ps;
    std::string log;
    for (int i = 0; i < 2; ++i) {
        ps.push_back(std::make_unique<Planned>(c));
        Planned &p = *ps.back();
        p.go.setValues(d.go);
        p.in.setValues(d.in);
        p.w.setValues(d.w);
        log += withDebugLog([&] {
            ASSERT_EQ(aclnnConvolutionBackwardGetWorkspaceSize(p.go.get(), p.in.get(), p.w.get(), bias.a, stride.a, pad.a, dil.a,
                                                               false, op.a, 1, mask.a, 0, p.gi.get(), p.gw.get(), nullptr,
                                                               &p.ws, &p.exec),
                      ACLNN_SUCCESS)
                << lastError();
        });
    }
    EXPECT_EQ(countOf(log, ": gradInput: oneDNN "), 2u) << log;
    EXPECT_EQ(countOf(log, ", reused"), 0u) << "a plan reused a pass another live plan holds:\n" << log;
    for (int i = 1; i >= 0; --i) {
        Planned &p = *ps[static_cast<size_t>(i)];
        Workspace ws;
        void *wsp = ws.ptr(p.ws);
        if (wsp) std::memset(wsp, 0xff, static_cast<size_t>(p.ws));
        ASSERT_EQ(aclnnConvolutionBackward(wsp, p.ws, p.exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
        ASSERT_EQ(aclrtSynchronizeStream(Runtime::stream()), ACL_SUCCESS);
        EXPECT_TRUE(sameBits(ACL_FLOAT, p.gi.bits(), ref.gradInput, "gradInput")) << "plan " << i;
        EXPECT_TRUE(sameBits(ACL_FLOAT, p.gw.bits(), ref.gradWeight, "gradWeight")) << "plan " << i;
    }
    Call k;
    k.c = c;
    k.mask = {true, true, false};
    const PlannedGraph third = planGraph(k, d.go, d.in, d.w);
    EXPECT_TRUE(third.reused.at("gradInput"));
    EXPECT_TRUE(third.reused.at("gradWeight"));
}

// Callers on their own threads and streams, planning and running the same problems at once: the
// passes are lent and given back between them (pass_cache.cpp) and each task slot re-points its
// oneDNN memory objects (SlotMemories). Every call gives the reference's bytes.
TEST(PassCache, ConcurrentCallersOnTheirOwnStreams) {
    Runtime::use("atlas-a2", 2);
    struct Case {
        cref::Conv c;
        aclDataType dt;
        Data d;
        cref::Grads ref;
    };
    std::vector<Case> cases;
    for (const auto &[c, dt] : {std::pair{conv2d(2, 16, 24, 12, 12, 3, 3, 1, 1, 1, 1), ACL_FLOAT},
                                std::pair{conv2d(2, 16, 24, 12, 12, 3, 3, 1, 1, 1, 1), ACL_BF16},
                                std::pair{conv2d(2, 16, 16, 14, 13, 3, 3, 2, 2, 1, 1), ACL_FLOAT}}) {
        Data d = intData(c, 29);
        cref::Grads ref = cref::backward(c, d.go, d.in, d.w);
        cases.push_back(Case{c, dt, std::move(d), std::move(ref)});
    }
    constexpr int kCallers = 4, kCalls = 12;
    std::vector<aclrtStream> streams(kCallers, nullptr);
    for (aclrtStream &s : streams) ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    std::vector<std::vector<std::string>> failures(kCallers);
    std::vector<std::thread> callers;
    for (int t = 0; t < kCallers; ++t)
        callers.emplace_back([&, t] {
            for (int i = 0; i < kCalls; ++i) {
                const Case &e = cases[static_cast<size_t>(t + i) % cases.size()];
                Call k;
                k.c = e.c;
                k.dt = e.dt;
                k.wsFill = 0xff;
                k.stream = streams[static_cast<size_t>(t)];
                const Result r = runBackward(k, e.d.go, e.d.in, e.d.w);
                const std::string at = "caller " + std::to_string(t) + " call " + std::to_string(i) + " " + dtName(e.dt);
                if (r.phase1 != ACLNN_SUCCESS || r.phase2 != ACLNN_SUCCESS)
                    failures[static_cast<size_t>(t)].push_back(at + ": " + r.message);
                else if (!sameBits(e.dt, r.gi, e.ref.gradInput, "gradInput") ||
                         !sameBits(e.dt, r.gw, e.ref.gradWeight, "gradWeight") ||
                         !sameBits(e.dt, r.gb, e.ref.gradBias, "gradBias") || !r.canary)
                    failures[static_cast<size_t>(t)].push_back(at + ": not the reference's bytes");
            }
        });
    for (std::thread &th : callers) th.join();
    for (aclrtStream s : streams) EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    for (const auto &f : failures)
        for (const std::string &line : f) ADD_FAILURE() << line;
}

}  // namespace
}  // namespace ct
