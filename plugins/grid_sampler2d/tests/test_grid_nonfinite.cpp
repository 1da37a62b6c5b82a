// R3: NaN, +-inf and +-3.4e38 grid coordinates in all 18 combinations, in every dtype: success,
// no write outside the outputs, the same bytes at 1 and 3 threads, and the finite samples'
// gradients unchanged. A sample whose coordinate is not finite (NaN, +-inf, and 3.4e38 once
// unnormalized in FLOAT arithmetic) counts as out of bounds with every padding mode (ops.md), so
// inputGrad equals the reference computed without it; so does any huge sample with zeros padding
// (FLOAT16's 65504 and DOUBLE's 3.4e38 stay finite, and border or reflection padding moves them
// inside). With zeros padding the bad samples' gridGrad is 0 (PyTorch's value).
#include "grid_test_util.hpp"

namespace gst {
namespace {

TEST(GridSampler2DNonFinite, NoCrashNoStrayWritesAndFiniteSamplesUnchanged) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const double bad[] = {nan, inf, -inf, 3.4e38, -3.4e38};
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (bool align : {false, true}) {
                    const gref::Problem p{2, 3, 5, 6, 4, 5, interp, padding, align};
                    Data d = randomData(p, dt, 21 + interp + padding, 1.1);
                    // every bad value in x, in y and in both, at spread-out samples
                    std::vector<int64_t> badPixels;
                    for (size_t k = 0; k < 5; ++k)
                        for (int which = 0; which < 3; ++which) {
                            const int64_t px = static_cast<int64_t>(k * 3 + static_cast<size_t>(which)) * 2 + 1;
                            double v = bad[k];
                            if (dt == ACL_FLOAT16 && std::isfinite(v)) v = std::copysign(65504.0, v);  // FLOAT16's largest
                            if (which != 1) d.grid[static_cast<size_t>(px * 2)] = v;
                            if (which != 0) d.grid[static_cast<size_t>(px * 2 + 1)] = v;
                            badPixels.push_back(px);
                        }
                    std::vector<uint64_t> ig, gg;
                    for (int threads : {1, 3}) {
                        ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2", threads));
                        const Result r = runBackward(p, dt, d);
                        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << describe(p) << r.message;
                        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
                        EXPECT_TRUE(r.canary && r.inputsUnchanged) << describe(p);
                        if (ig.empty()) {
                            ig = r.inputGradBits;
                            gg = r.gridGradBits;
                        } else {
                            EXPECT_EQ(r.inputGradBits, ig) << describe(p) << dtName(dt);
                            EXPECT_EQ(r.gridGradBits, gg) << describe(p) << dtName(dt);
                        }
                        // the finite samples: the reference on a grid where the bad samples are moved
                        // far outside and carry no gradient
                        Data clean = d;
                        for (int64_t px : badPixels) {
                            clean.grid[static_cast<size_t>(px * 2)] = clean.grid[static_cast<size_t>(px * 2 + 1)] = 0.0;
                            const int64_t n = px / (p.Ho * p.Wo), j = px % (p.Ho * p.Wo);
                            for (int64_t c = 0; c < p.C; ++c) clean.gradOutput[static_cast<size_t>((n * p.C + c) * p.Ho * p.Wo + j)] = 0.0;
                        }
                        const auto ref = gref::backward(p, clean.gradOutput, clean.input, clean.grid);
                        std::vector<double> gotGg = r.gridGrad, refGg = ref.grid;
                        for (int64_t px : badPixels) {
                            if (padding == 0 && interp != 2) {  // wholly out of bounds: PyTorch's 0
                                EXPECT_EQ(gotGg[static_cast<size_t>(px * 2)], 0.0) << describe(p) << dtName(dt) << " px " << px;
                                EXPECT_EQ(gotGg[static_cast<size_t>(px * 2 + 1)], 0.0) << describe(p) << dtName(dt) << " px " << px;
                            }
                            gotGg[static_cast<size_t>(px * 2)] = gotGg[static_cast<size_t>(px * 2 + 1)] = 0.0;
                            refGg[static_cast<size_t>(px * 2)] = refGg[static_cast<size_t>(px * 2 + 1)] = 0.0;
                        }
                        EXPECT_TRUE(close(dt, gotGg, refGg)) << describe(p) << dtName(dt);
                        if (padding == 0 || dt == ACL_FLOAT || dt == ACL_BF16) {
                            EXPECT_TRUE(close(dt, r.inputGrad, ref.input)) << describe(p) << dtName(dt);
                        }
                    }
                }
    Runtime::shutdown();
}

// The forward companion on the same grids: success, and every sample with a coordinate that is
// not finite is out of bounds, 0, with every padding mode (border padding once moved +-inf onto
// the border; bicubic made NaN there). DOUBLE keeps 3.4e38 finite, so its grid has inf there.
TEST(GridSampler2DNonFinite, ForwardNeverIndexesOutside) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (bool align : {false, true}) {
                    if (dt == ACL_DOUBLE && interp == 2) continue;  // CANN's forward has no DOUBLE bicubic
                    const gref::Problem p{1, 2, 4, 4, 1, 5, interp, padding, align};
                    const std::vector<double> input = values(static_cast<size_t>(p.inputCount()), 4);
                    const double huge = dt == ACL_DOUBLE ? inf : 3.4e38;
                    const std::vector<double> grid{nan, 0.0, inf, inf, -inf, 0.5, huge, -huge, 0.25, nan};
                    const Result r = runForward(p, dt, input, grid);
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
                    EXPECT_TRUE(r.canary);
                    for (double v : r.inputGrad) EXPECT_EQ(v, 0.0) << describe(p) << dtName(dt);
                }
}

}  // namespace
}  // namespace gst
