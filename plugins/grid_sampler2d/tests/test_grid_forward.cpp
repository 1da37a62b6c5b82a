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
                                              : "interpolationMode must be in [0, 1] on ";
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

}  // namespace
}  // namespace gst
