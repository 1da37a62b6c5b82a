// The bench's --runs N (bench/result.cpp): each run's ratio from its own pair of medians, the reported
// speedup the median of those ratios, min and median over every run's repetitions, a failed run
// failing the case. White-box, like test_traffic_limit.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "result.hpp"

namespace {

bench::Result run(const bench::Case &c, std::vector<double> ours, std::vector<double> torch) {
    bench::Result r;
    r.c = &c;
    r.status = "ok";
    r.torchStatus = "ok";
    r.ms = std::move(ours);
    r.torchMs = std::move(torch);
    return r;
}

TEST(RunSpeedups, OneRunIsTheRatioOfTheMedians) {
    const bench::Case c;
    bench::Result total;
    total.c = &c;
    total.add_run(run(c, {2, 4, 3}, {9, 6, 12}));  // medians 3 and 9
    EXPECT_DOUBLE_EQ(total.speedup(), 3.0);
    EXPECT_EQ(total.runSpeedups, std::vector<double>{3.0});
}

TEST(RunSpeedups, ManyRunsGiveTheMedianOfTheirRatios) {
    const bench::Case c;
    bench::Result total;
    total.c = &c;
    // ratios 2 (a slow spell for PyTorch), 1.5, 0.5 (one for us): their median is 1.5, while the
    // ratio of the pooled medians (torch 4, ours 4) would be 1
    total.add_run(run(c, {1, 1, 1}, {2, 2, 2}));
    total.add_run(run(c, {4, 4, 4}, {6, 6, 6}));
    total.add_run(run(c, {8, 8, 8}, {4, 4, 4}));
    EXPECT_DOUBLE_EQ(total.speedup(), 1.5);
    EXPECT_EQ(total.runSpeedups, (std::vector<double>{2.0, 1.5, 0.5}));
    EXPECT_EQ(total.ms.size(), 9u);  // every run's repetitions
    EXPECT_DOUBLE_EQ(total.min(), 1.0);
    EXPECT_DOUBLE_EQ(total.median(), 4.0);
    EXPECT_DOUBLE_EQ(total.torch_median(), 4.0);
}

TEST(RunSpeedups, AFailedRunFailsTheCase) {
    const bench::Case c;
    bench::Result total;
    total.c = &c;
    total.add_run(run(c, {1}, {2}));
    bench::Result bad = run(c, {}, {});
    bad.status = "FAIL";
    bad.message = "phase 2 returned 361001";
    total.add_run(bad);
    total.add_run(run(c, {1}, {2}));
    EXPECT_EQ(total.status, "FAIL");
    EXPECT_EQ(total.message, "phase 2 returned 361001");
    EXPECT_TRUE(std::isnan(total.speedup()));
}

TEST(RunSpeedups, APeerErrorInOneRunLeavesNoRatio) {
    const bench::Case c;
    bench::Result total;
    total.c = &c;
    total.add_run(run(c, {1}, {2}));
    bench::Result noPeer = run(c, {1}, {});
    noPeer.torchStatus = "error";
    noPeer.torchMessage = "the PyTorch peer stopped";
    total.add_run(noPeer);
    EXPECT_EQ(total.status, "ok");
    EXPECT_EQ(total.torchStatus, "error");
    EXPECT_TRUE(std::isnan(total.speedup()));
}

}  // namespace
