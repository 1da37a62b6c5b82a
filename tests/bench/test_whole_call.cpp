// The bench's whole-call cases (bench::Case::whole_call): each timed run plans again - phase 1 on a
// new, single-use executor, then phase 2 - with the arguments BENCH_PLAN copied, so the rows tagged
// "call" measure what a call costs a program that plans at every step.
#include <gtest/gtest.h>

#include <string>

#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "acltest.hpp"
#include "bench.hpp"

namespace {

TEST(WholeCall, TagsTheCase) {
    bench::Case plain;
    plain.op = "AvgPool2dBackward";
    plain.shape = "mb1ic2ih8";
    const bench::Case c = bench::whole_call(plain);
    EXPECT_TRUE(c.whole_call);
    EXPECT_FALSE(plain.whole_call);
    EXPECT_EQ(c.id(), "AvgPool2dBackward/mb1ic2ih8/call/float32/atlas-a2");
    bench::Case net = plain;
    net.variant = "resnet50";
    EXPECT_EQ(bench::whole_call(net).variant, "resnet50_call");
}

// Every run calls phase 1 once more; a failing phase 1 is the run's CallError, naming the call.
TEST(WholeCall, EveryRunPlansAgain) {
    ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use("atlas-a2"));
    bench::Prepared p(acltest::Runtime::stream(), /*whole_calls=*/true);
    aclTensor *go = p.tensor({1, 2, 4, 4}, ACL_FLOAT), *self = p.tensor({1, 2, 8, 8}, ACL_FLOAT);
    aclTensor *gi = p.tensor({1, 2, 8, 8}, ACL_FLOAT, bench::Fill::Zero);
    aclIntArray *k = p.ints({2, 2}), *s = p.ints({2, 2}), *pad = p.ints({0, 0});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, k, s, pad, false, true, 0, 0, gi, &ws, &exec);
    int plans = 0;
    aclnnStatus next = ACLNN_SUCCESS;
    p.plan("aclnnAvgPool2dBackward", st, exec, ws, &aclnnAvgPool2dBackward, [&](uint64_t *w, aclOpExecutor **e) {
        ++plans;
        if (next != ACLNN_SUCCESS) return next;
        return aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, k, s, pad, false, true, 0, 0, gi, w, e);
    });
    ASSERT_TRUE(p.planned());
    for (int i = 0; i < 3; ++i) ASSERT_NO_THROW(p.run()) << "run " << i;  // single-use executors: a new one each run
    EXPECT_EQ(plans, 3);
    next = 161002;
    try {
        p.run();
        ADD_FAILURE() << "a failed phase 1 did not fail the run";
    } catch (const bench::CallError &e) {
        EXPECT_EQ(e.status(), 161002);
        EXPECT_NE(std::string(e.what()).find("aclnnAvgPool2dBackwardGetWorkspaceSize"), std::string::npos) << e.what();
    }
    EXPECT_EQ(plans, 4);
}

// The corpus's whole-call cases, as the runner prepares them: each runs twice.
TEST(WholeCall, CorpusCasesRun) {
    ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use("atlas-a2"));
    int n = 0;
    for (const bench::Case &c : bench::all_cases()) {
        if (!c.whole_call || c.product != "atlas-a2") continue;
        bench::Prepared p(acltest::Runtime::stream(), true);
        c.prepare(p);
        EXPECT_NO_THROW(p.run()) << c.id();
        EXPECT_NO_THROW(p.run()) << c.id();
        ++n;
    }
    EXPECT_GE(n, 5) << "a whole-call case per operator";
}

}  // namespace
