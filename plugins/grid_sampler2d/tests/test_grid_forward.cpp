// GridSampler2D, the forward companion: the 18 combinations against the reference in every dtype it
// has (FLOAT, FLOAT16, DOUBLE: CANN's forward has no BF16), and its product support.
#include "grid_test_util.hpp"

namespace gst {
namespace {

TEST(GridSampler2DForward, EighteenCombinationsMatchTheReference) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (bool align : {false, true}) {
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
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-inference"));
    r = runForward(p, ACL_FLOAT, d.input, d.grid);
    EXPECT_EQ(r.phase1, 161002);
    // CANN's forward: no BF16 on A2/A3 either (the backward has it), bicubic only on A2/A3.
    for (const char *product : {"atlas-a2", "atlas-a3"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        r = runForward(p, ACL_BF16, d.input, d.grid);
        EXPECT_EQ(r.phase1, 161002) << product;
        EXPECT_NE(r.message.find("input dtype BFLOAT16 is not supported"), std::string::npos) << r.message;
    }
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-training"));
    const gref::Problem bicubic{1, 1, 3, 3, 2, 2, 2, 0, false};
    const Data f = randomData(bicubic, ACL_FLOAT, 2);
    r = runForward(bicubic, ACL_FLOAT, f.input, f.grid);
    EXPECT_EQ(r.phase1, 161002);
    EXPECT_NE(r.message.find("interpolationMode must be in [0, 1] on Atlas training"), std::string::npos) << r.message;
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    r = runForward(bicubic, ACL_FLOAT, f.input, f.grid);
    EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
}

}  // namespace
}  // namespace gst
