// testing.md's grid-sampler shapes: a spatial transformer (64x1x28x28, affine grid 28x28), image
// warping (2x3x384x512, a flow field), RAFT's correlation lookup ((N*H*W)x1x46x62 sampled by 9x9
// windows; H*W reduced to 8x12 to keep the test fast), a strided view whose offsets exceed 2^31
// (R5), the gradient exactly at the border pixel (R4), and nothing outside the tensors touched (each
// against a guard page).
#include <sys/mman.h>

#include "grid_test_util.hpp"

namespace gst {
namespace {

// Grid values on a 1/256 lattice keep every coordinate exact in FLOAT, so only accumulation
// rounding separates the kernel from the double reference.
double lattice(double v) { return std::nearbyint(v * 256.0) / 256.0; }

TEST(GridSampler2DShapes, SpatialTransformer) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (int interp : {0, 2}) {
        const gref::Problem p{64, 1, 28, 28, 28, 28, interp, 0, false};
        Data d = randomData(p, ACL_FLOAT, 5);
        Rng rng(9);
        for (int64_t n = 0; n < p.N; ++n) {  // a random small rotation, scale and shift per image
            const double a = static_cast<double>(rng.integer(-30, 30)) / 100.0, s = 0.8 + static_cast<double>(rng.integer(0, 40)) / 100.0;
            const double tx = static_cast<double>(rng.integer(-20, 20)) / 100.0, ty = static_cast<double>(rng.integer(-20, 20)) / 100.0;
            for (int64_t y = 0; y < p.Ho; ++y)
                for (int64_t x = 0; x < p.Wo; ++x) {
                    const double u = (2.0 * x + 1) / p.Wo - 1, v = (2.0 * y + 1) / p.Ho - 1;
                    const int64_t gi = ((n * p.Ho + y) * p.Wo + x) * 2;
                    d.grid[gi] = lattice(s * (std::cos(a) * u - std::sin(a) * v) + tx);
                    d.grid[gi + 1] = lattice(s * (std::sin(a) * u + std::cos(a) * v) + ty);
                }
        }
        const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
        const Result r = runBackward(p, ACL_FLOAT, d);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(close(ACL_FLOAT, r.inputGrad, ref.input)) << describe(p);
        EXPECT_TRUE(close(ACL_FLOAT, r.gridGrad, ref.grid)) << describe(p);
    }
}

TEST(GridSampler2DShapes, ImageWarp) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (int interp : {0, 2}) {
        const gref::Problem p{2, 3, 384, 512, 384, 512, interp, 1, true};
        Data d = randomData(p, ACL_FLOAT, 6);
        for (int64_t n = 0; n < p.N; ++n)  // identity plus a smooth flow of a few pixels
            for (int64_t y = 0; y < p.Ho; ++y)
                for (int64_t x = 0; x < p.Wo; ++x) {
                    const int64_t gi = ((n * p.Ho + y) * p.Wo + x) * 2;
                    const double fx = 6.0 * std::sin(0.02 * y + n), fy = 4.0 * std::cos(0.03 * x - n);
                    d.grid[gi] = lattice(2.0 * (x + fx) / (p.W - 1) - 1.0);
                    d.grid[gi + 1] = lattice(2.0 * (y + fy) / (p.H - 1) - 1.0);
                }
        const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
        const Result r = runBackward(p, ACL_FLOAT, d);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(close(ACL_FLOAT, r.inputGrad, ref.input)) << describe(p);
        EXPECT_TRUE(close(ACL_FLOAT, r.gridGrad, ref.grid)) << describe(p);
    }
}

TEST(GridSampler2DShapes, RaftLookup) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const gref::Problem p{8 * 12, 1, 46, 62, 9, 9, 0, 0, true};
    Data d = randomData(p, ACL_FLOAT, 7);
    Rng rng(3);
    for (int64_t n = 0; n < p.N; ++n) {  // a 9x9 window of radius 4 around a point of the flow
        const double cx = static_cast<double>(rng.integer(-200, 6300)) / 100.0, cy = static_cast<double>(rng.integer(-200, 4700)) / 100.0;
        for (int64_t y = 0; y < 9; ++y)
            for (int64_t x = 0; x < 9; ++x) {
                const int64_t gi = ((n * 9 + y) * 9 + x) * 2;
                d.grid[gi] = lattice(2.0 * (cx + x - 4) / (p.W - 1) - 1.0);
                d.grid[gi + 1] = lattice(2.0 * (cy + y - 4) / (p.H - 1) - 1.0);
            }
    }
    const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        Data dd = d;
        if (dt == ACL_BF16)
            for (auto &g : dd.grid) g = roundTo(g, dt);
        const auto rr = dt == ACL_FLOAT ? ref : gref::backward(p, dd.gradOutput, dd.input, dd.grid);
        const Result r = runBackward(p, dt, dd);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(close(dt, r.inputGrad, rr.input)) << describe(p) << dtName(dt);
        EXPECT_TRUE(close(dt, r.gridGrad, rr.grid)) << describe(p) << dtName(dt);
    }
}

// R5: gradOutput and inputGrad are views whose element offsets pass 2^31 (a sparse reservation:
// only the pages the views touch are ever backed).
TEST(GridSampler2DShapes, OffsetsBeyond2Pow31) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const gref::Problem p{2, 2, 3, 4, 2, 3, 0, 2, false};
    const int64_t big = (int64_t{1} << 31) + 17;  // elements between the two images
    const size_t bytes = static_cast<size_t>(2 * big + 4096) * 4;
    void *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto *base = static_cast<float *>(mem);
    const Data d = randomData(p, ACL_FLOAT, 8);
    const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
    // gradOutput: image n at offset 7 + n * big; inputGrad: image n at offset big - 100 + n * big... both
    // in the same reservation, disjoint.
    const std::vector<int64_t> goDims = outDims(p), inD = inDims(p);
    const int64_t goStr[4] = {big, p.Ho * p.Wo, p.Wo, 1}, igStr[4] = {big, p.H * p.W, p.W, 1};
    const int64_t goOff = 7, igOff = 4096, storage[1] = {2 * big + 4096};
    for (int64_t i = 0; i < p.outputCount(); ++i) {
        const int64_t n = i / (p.C * p.Ho * p.Wo), r = i % (p.C * p.Ho * p.Wo);
        base[goOff + n * big + r] = static_cast<float>(d.gradOutput[static_cast<size_t>(i)]);
    }
    aclTensor *go = aclCreateTensor(goDims.data(), 4, ACL_FLOAT, goStr, goOff, ACL_FORMAT_ND, storage, 1, mem);
    aclTensor *ig = aclCreateTensor(inD.data(), 4, ACL_FLOAT, igStr, igOff, ACL_FORMAT_ND, storage, 1, mem);
    ASSERT_TRUE(go && ig);
    Tensor in(ACL_FLOAT, inD), grid(ACL_FLOAT, gridDims(p)), gg(ACL_FLOAT, gridDims(p));
    in.setValues(d.input);
    grid.setValues(d.grid);
    const bool m[2] = {true, true};
    aclBoolArray *mask = aclCreateBoolArray(m, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnGridSampler2DBackwardGetWorkspaceSize(go, in.get(), grid.get(), 0, 2, false, mask, ig, gg.get(), &ws, &exec),
              ACLNN_SUCCESS)
        << lastError();
    Workspace w;
    ASSERT_EQ(aclnnGridSampler2DBackward(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
    std::vector<double> got(static_cast<size_t>(p.inputCount()));
    for (int64_t i = 0; i < p.inputCount(); ++i) {
        const int64_t n = i / (p.C * p.H * p.W), r = i % (p.C * p.H * p.W);
        got[static_cast<size_t>(i)] = base[igOff + n * big + r];
    }
    EXPECT_TRUE(close(ACL_FLOAT, got, ref.input));
    EXPECT_TRUE(close(ACL_FLOAT, gg.values(), ref.grid));
    aclDestroyBoolArray(mask);
    aclDestroyTensor(go);
    aclDestroyTensor(ig);
    munmap(mem, bytes);
}

// R4: grid values landing exactly on the border pixel (and exactly on reflection folds) get
// PyTorch's gradient: border and reflection count the border as clipped (gradient 0).
TEST(GridSampler2DShapes, GradientAtTheBorderPixel) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (int padding : {1, 2})
        for (bool align : {false, true}) {
            const gref::Problem p{1, 2, 4, 5, 1, 6, 0, padding, align};
            Data d = randomData(p, ACL_FLOAT, 9);
            // x = -1 and 1 (the borders with alignCorners), the border pixel centres without it, beyond
            const double xs[6] = {-1.0, 1.0, -0.8, 0.8, -1.25, 1.25};
            for (int i = 0; i < 6; ++i) {
                d.grid[2 * i] = xs[i];
                d.grid[2 * i + 1] = i % 2 ? 1.0 : -1.0;
            }
            const auto ref = gref::backward(p, d.gradOutput, d.input, d.grid);
            const Result r = runBackward(p, ACL_FLOAT, d);
            ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
            EXPECT_TRUE(close(ACL_FLOAT, r.gridGrad, ref.grid)) << describe(p);
            EXPECT_TRUE(close(ACL_FLOAT, r.inputGrad, ref.input)) << describe(p);
            // y sits on a border in every sample: its gradient is 0 for border and reflection alike
            for (int i = 0; i < 6; ++i) EXPECT_EQ(r.gridGrad[2 * i + 1], 0.0) << describe(p) << " sample " << i;
            if (align) {  // x exactly on the left border
                EXPECT_EQ(r.gridGrad[0], 0.0) << describe(p);
            }
        }
}

// Every tensor flush against an inaccessible page, before it and then after it: a read or write one
// byte outside a tensor (a gather past the input's end, a channel vector one lane too wide, a grid
// row read too far) crashes the test. Every interpolation, padding mode and alignment, channel
// counts 1-33 and output widths 1-33 around the vector lengths, grids partly outside [-1, 1], in
// each dtype, forward and backward: the same bits as with ordinary buffers (whose results the
// other tests check against the reference).
TEST(GridSampler2DGuardPages, TouchesNothingOutsideItsTensors) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    uint64_t seed = 5000;
    for (const aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (const int64_t C : {1, 2, 3, 4, 5, 16, 17, 19, 33})
                    for (const int64_t Wo : {1, 8, 9, 16, 17, 33}) {
                        const gref::Problem p{2, C, 3, 5 + Wo % 4, 2, Wo, interp, padding, (Wo + C) % 2 == 0};
                        const Data d = randomData(p, dt, ++seed, 1.3);
                        const bool fwd = dt != ACL_BF16 && !(dt == ACL_DOUBLE && interp == 2);  // (CANN's forward: no BF16, no DOUBLE bicubic)
                        const Result b0 = runBackward(p, dt, d), f0 = fwd ? runForward(p, dt, d.input, d.grid) : Result{};
                        ASSERT_EQ(b0.phase2, ACLNN_SUCCESS) << b0.message;
                        if (fwd) {
                            ASSERT_EQ(f0.phase2, ACLNN_SUCCESS) << f0.message;
                        }
                        for (const Placement at : {Placement::PageStart, Placement::PageEnd}) {
                            SCOPED_TRACE(std::string(dtName(dt)) + " interp " + std::to_string(interp) + " padding " +
                                         std::to_string(padding) + " C " + std::to_string(C) + " Wo " + std::to_string(Wo) +
                                         placementName(at));
                            const Layout l = placed({}, at);
                            const Views v{l, l, l, l, l};
                            const Result b = runBackward(p, dt, d, {}, v);
                            ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
                            EXPECT_EQ(b.inputGradBits, b0.inputGradBits);
                            EXPECT_EQ(b.gridGradBits, b0.gridGradBits);
                            if (fwd) {
                                const Result f = runForward(p, dt, d.input, d.grid, v);
                                ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
                                EXPECT_EQ(f.inputGradBits, f0.inputGradBits);
                            }
                            EXPECT_TRUE(b.inputsUnchanged);
                        }
                    }
}

}  // namespace
}  // namespace gst
