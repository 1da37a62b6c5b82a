// GridSampler2D, the forward companion: the 18 combinations against the reference in every dtype it
// has (FLOAT, FLOAT16, DOUBLE: CANN's forward has no BF16; bicubic not in DOUBLE), and its product
// support (every product; bicubic only on A2/A3).
#include "grid_test_util.hpp"

namespace gst {
namespace {

TEST(GridSampler2DForward, EighteenCombinationsMatchTheReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (bool align : {false, true}) {
                    if (dt == ACL_DOUBLE && interp == 2) continue;  // rejected (ProductSupport)
                    const gref::Problem p{2, 3, 5, 7, 4, 6, interp, padding, align};
                    const Data d = randomData(p, dt, 31 + interp * 5 + padding, 1.4);
                    const Result r = runForward(p, dt, d.input, d.grid);
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << describe(p) << r.message;
                    EXPECT_TRUE(close(dt, r.inputGrad, gref::forward(p, d.input, d.grid))) << describe(p) << dtName(dt);
                    EXPECT_TRUE(r.canary);
                }
}

TEST(GridSampler2DForward, ProductSupport) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    const gref::Problem p{1, 1, 3, 3, 2, 2, 0, 0, false};
    const Data d = randomData(p, ACL_BF16, 1);
    Result r = runForward(p, ACL_BF16, d.input, d.grid);
    EXPECT_EQ(r.phase1, 161002);
    EXPECT_NE(r.message.find("training"), std::string::npos) << r.message;
    // CANN's forward: no BF16 on A2/A3 either (the backward has it).
    for (const char *product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        r = runForward(p, ACL_BF16, d.input, d.grid);
        EXPECT_EQ(r.phase1, 161002) << product;
        EXPECT_NE(r.message.find("input dtype BFLOAT16 is not supported"), std::string::npos) << r.message;
    }
    // Every product runs bilinear and nearest in FLOAT, FLOAT16 and DOUBLE (the inference products
    // too: CANN's AI CPU kernel takes what their AI Core does not).
    const gref::Problem bicubic{1, 2, 3, 4, 2, 3, 2, 0, false};
    for (const char *product : {"atlas-a2", "atlas-a3", "atlas-training", "atlas-inference", "atlas-200i-500-a2"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        const bool a2a3 = std::string(product) == "atlas-a2" || std::string(product) == "atlas-a3";
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})
            for (int interp = 0; interp < 3; ++interp) {
                gref::Problem q = bicubic;
                q.interp = interp;
                const Data f = randomData(q, dt, 7 + interp, 1.2);
                r = runForward(q, dt, f.input, f.grid);
                const bool ok = interp < 2 || (a2a3 && dt != ACL_DOUBLE);
                if (ok) {
                    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << product << " " << dtName(dt) << " " << describe(q) << r.message;
                    EXPECT_TRUE(close(dt, r.inputGrad, gref::forward(q, f.input, f.grid))) << product << dtName(dt) << describe(q);
                    continue;
                }
                EXPECT_EQ(r.phase1, 161002) << product << " " << dtName(dt);
                const std::string want = a2a3 ? "interpolationMode 2 (bicubic) needs input dtype FLOAT or FLOAT16, got DOUBLE"
                                              : "interpolationMode 2 (bicubic) is not supported on ";
                EXPECT_NE(r.message.find(want), std::string::npos) << product << ": " << r.message;
            }
    }
    // As in CANN, DOUBLE bicubic is refused after the empty-tensor return: an empty batch succeeds.
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    gref::Problem none = bicubic;
    none.N = 0;
    r = runForward(none, ACL_DOUBLE, {}, {});
    EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    EXPECT_EQ(r.workspace, 0u);
}

// CANN checks an empty call as any other, then computes nothing (aclnn_grid_sampler2d.cpp: its
// empty return follows CheckParams; its unit test case_24 refuses an empty input plane). What it
// refuses after that return - bicubic off A2/A3, DOUBLE bicubic - an empty call does not meet.
TEST(GridSampler2DForward, EmptyCallsAreCheckedThenComputeNothing) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    auto call = [](const std::vector<int64_t> &in, const std::vector<int64_t> &grid, const std::vector<int64_t> &out,
                   aclDataType dt, int64_t interp, bool nullOut = false) {
        Tensor ti(dt, in, ACL_FORMAT_ND), tg(dt, grid, ACL_FORMAT_ND), to(dt, out, ACL_FORMAT_ND);
        const auto before = to.snapshot();
        uint64_t ws = 1;
        aclOpExecutor *exec = nullptr;
        aclnnStatus st = aclnnGridSampler2DGetWorkspaceSize(ti.get(), tg.get(), interp, 0, false, nullOut ? nullptr : to.get(), &ws, &exec);
        if (st == ACLNN_SUCCESS) {
            EXPECT_EQ(ws, 0u);
            Workspace w;
            st = aclnnGridSampler2D(w.ptr(ws), ws, exec, Runtime::stream());
        }
        EXPECT_TRUE(to.snapshot() == before && to.canaryIntact()) << "an empty call wrote its output";
        return st;
    };
    // empty batch, channels, or grid plane (which empties out): success, nothing written - bicubic on
    // atlas-training too, refused only after the empty return
    EXPECT_EQ(call({0, 2, 3, 4}, {0, 2, 3, 2}, {0, 2, 2, 3}, ACL_FLOAT, 2), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(call({1, 0, 3, 4}, {1, 2, 3, 2}, {1, 0, 2, 3}, ACL_FLOAT, 0), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(call({1, 2, 3, 4}, {1, 0, 3, 2}, {1, 2, 0, 3}, ACL_FLOAT16, 1), ACLNN_SUCCESS) << lastError();
    // an empty input plane is refused, with an empty batch too (CANN's case_24)
    EXPECT_EQ(call({1, 1, 0, 8}, {1, 3, 3, 2}, {1, 1, 3, 3}, ACL_FLOAT, 0), 161002);
    EXPECT_NE(lastError().find("H and W must not be 0"), std::string::npos) << lastError();
    EXPECT_EQ(call({0, 1, 5, 0}, {0, 3, 3, 2}, {0, 1, 3, 3}, ACL_FLOAT, 0), 161002);
    // an empty call is checked like any other: dtype, mode, output shape, NULL
    EXPECT_EQ(call({1, 2, 3, 4}, {1, 0, 3, 2}, {1, 2, 0, 3}, ACL_BF16, 0), 161002);
    EXPECT_EQ(call({0, 2, 3, 4}, {0, 2, 3, 2}, {0, 2, 2, 3}, ACL_FLOAT, 7), 161002);
    EXPECT_NE(lastError().find("interpolationMode"), std::string::npos) << lastError();
    EXPECT_EQ(call({0, 2, 3, 4}, {0, 2, 3, 2}, {0, 2, 5, 5}, ACL_FLOAT, 0), 161002);
    EXPECT_EQ(call({0, 2, 3, 4}, {0, 2, 3, 2}, {0, 2, 2, 3}, ACL_FLOAT, 0, /*nullOut=*/true), 161001);
    // not empty: bicubic refused on atlas-training after the checks
    EXPECT_EQ(call({1, 2, 3, 4}, {1, 2, 3, 2}, {1, 2, 2, 3}, ACL_FLOAT, 2), 161002);
    EXPECT_NE(lastError().find("interpolationMode 2 (bicubic) is not supported on "), std::string::npos) << lastError();
}

// CANN's forward checks no format: NHWC or NCL tags are read as N, C, H, W like ND and NCHW.
TEST(GridSampler2DForward, AnyFormatTagReadsAsNchw) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const gref::Problem p{2, 3, 4, 5, 3, 2, 0, 0, false};
    const Data d = randomData(p, ACL_FLOAT, 3, 1.1);
    const Result nd = runForward(p, ACL_FLOAT, d.input, d.grid);
    ASSERT_EQ(nd.phase2, ACLNN_SUCCESS) << nd.message;
    for (aclFormat f : {ACL_FORMAT_NHWC, ACL_FORMAT_NCL, ACL_FORMAT_NCDHW}) {
        const Result r = runForward(p, ACL_FLOAT, d.input, d.grid, {}, f);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << f << ": " << r.message;
        EXPECT_EQ(r.inputGradBits, nd.inputGradBits) << f;
    }
}

}  // namespace
}  // namespace gst
