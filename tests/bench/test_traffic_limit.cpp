// The bench's traffic limit (bench/result.cpp): the shortest time the measured read, write and copy
// bandwidths allow for a row's bytes, over its min time. White-box: the bench's result.cpp and
// format.cpp compiled into this test.
#include <gtest/gtest.h>

#include <cmath>

#include "result.hpp"

namespace {

bench::Roofline roof() {
    bench::Roofline r;
    r.measured = true;
    r.copyGBps = 48;  // read + write together
    r.readGBps = 32;
    r.writeGBps = 24;
    return r;
}

bench::Result result(const bench::Case &c, double ms) {
    bench::Result r;
    r.c = &c;
    r.status = "ok";
    r.ms = {ms * 2, ms, ms * 3};  // the min counts
    return r;
}

TEST(TrafficLimit, TheSlowestStreamSetsTheLimit) {
    bench::Case c;
    // 320 MB read, 40 MB written: the read stream needs 10 ms (the copy figure alone: 7.5 ms)
    c.work = bench::Work::bytes(320e6, 40e6);
    EXPECT_DOUBLE_EQ(c.work.amount, 360e6);
    EXPECT_NEAR(bench::pct_of_traffic(result(c, 20), roof()), 50.0, 1e-9);
    EXPECT_NEAR(bench::pct_of_limit(result(c, 20), roof()), 100.0 * 18.0 / 48.0, 1e-9);  // 18 GB/s of 48
    // writes: 240 MB written at 24 GB/s = 10 ms
    c.work = bench::Work::bytes(16e6, 240e6);
    EXPECT_NEAR(bench::pct_of_traffic(result(c, 12.5), roof()), 80.0, 1e-9);
    // balanced: the copy figure, 480 MB at 48 GB/s = 10 ms (each stream alone allows 7.5 / 10 ms)
    c.work = bench::Work::bytes(240e6, 240e6);
    EXPECT_NEAR(bench::pct_of_traffic(result(c, 10), roof()), 100.0, 1e-9);
}

TEST(TrafficLimit, NoneWithoutTheSplitOrTheMeasurements) {
    bench::Case c;
    c.work = bench::Work::bytes(360e6);  // total only
    EXPECT_TRUE(std::isnan(bench::pct_of_traffic(result(c, 20), roof())));
    c.work = bench::Work::flops(1e9);
    EXPECT_TRUE(std::isnan(bench::pct_of_traffic(result(c, 20), roof())));
    c.work = bench::Work::bytes(320e6, 40e6);
    bench::Roofline none = roof();
    none.measured = false;
    EXPECT_TRUE(std::isnan(bench::pct_of_traffic(result(c, 20), none)));
    none = roof();
    none.readGBps = 0;  // an old roofline without the read figure
    EXPECT_TRUE(std::isnan(bench::pct_of_traffic(result(c, 20), none)));
    bench::Result failed = result(c, 20);
    failed.status = "FAIL";
    EXPECT_TRUE(std::isnan(bench::pct_of_traffic(failed, roof())));
}

}  // namespace

namespace {

// %near: a byte row's rate against the copy measured next to it (the best of the measurements
// around every run); none for FLOP rows, unmeasured rows or failed ones.
TEST(NearCopy, TheRateAgainstTheBestCopyMeasuredAroundTheRuns) {
    bench::Case c;
    c.work = bench::Work::bytes(320e6, 40e6);  // 360 MB
    bench::Result total;
    total.c = &c;
    bench::Result run = result(c, 20);  // 18 GB/s
    run.nearCopyGBps = 30;
    total.add_run(run);
    run.nearCopyGBps = 36;  // a faster moment of the memory in the second run
    total.add_run(run);
    run.nearCopyGBps = NAN;  // a run measured without it changes nothing
    total.add_run(run);
    EXPECT_DOUBLE_EQ(total.nearCopyGBps, 36);
    EXPECT_NEAR(bench::pct_of_near(total), 50.0, 1e-9);
    bench::Result unmeasured = result(c, 20);
    EXPECT_TRUE(std::isnan(bench::pct_of_near(unmeasured)));
    bench::Result failed = result(c, 20);
    failed.nearCopyGBps = 36;
    failed.status = "FAIL";
    EXPECT_TRUE(std::isnan(bench::pct_of_near(failed)));
    c.work = bench::Work::flops(1e9);
    EXPECT_TRUE(std::isnan(bench::pct_of_near(total)));
}

}  // namespace
