// The bench's bars (bench/bars.cpp): each target a case declares is judged on its outcome - met,
// missed, or not measured with the reason - and listed under the table. White-box: the bench's
// bars.cpp, result.cpp and format.cpp compiled into this test.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "bars.hpp"

namespace {

using bench::Verdict;

bench::Roofline roof() {
    bench::Roofline r;
    r.measured = true;
    r.copyGBps = 50;
    r.fmaGFlops = 400;
    return r;
}

bench::Case byteCase(double bytes, double pctBar) {
    bench::Case c;
    c.op = "Op";
    c.shape = "s";
    c.work = bench::Work::bytes(bytes);
    c.bars.pct_of_limit = pctBar;
    return c;
}

bench::Result ran(const bench::Case &c, double ms, double torchMs = NAN) {
    bench::Result r;
    r.c = &c;
    r.status = "ok";
    r.ms = {ms};
    if (std::isfinite(torchMs)) r.torchStatus = "ok", r.torchMs = {torchMs};
    return r;
}

TEST(Bars, PercentOfTheCopyBandwidthAtTheStart) {
    const bench::Case c = byteCase(300e6, 60);  // 300 MB
    const bench::Result fast = ran(c, 8);       // 37.5 GB/s = 75 % of 50
    const bench::Result slow = ran(c, 12);      // 25 GB/s = 50 %
    auto one = [&](const bench::Result &r) {
        const auto v = bench::check_bars(r, roof(), {r});
        EXPECT_EQ(v.size(), 1u);
        return v.at(0);
    };
    EXPECT_EQ(one(fast).verdict, Verdict::Met);
    EXPECT_NEAR(one(fast).value, 75.0, 1e-9);
    EXPECT_EQ(one(fast).bar, "copy >= 60 %");
    EXPECT_EQ(one(slow).verdict, Verdict::Missed);
    EXPECT_EQ(one(slow).shown, "50.0 %");
    // %near beside it, not instead of it: the bar is the roofline's (performance.md)
    bench::Result nearFast = slow;
    nearFast.nearCopyGBps = 30;  // 83 % of the copy measured next to the row
    EXPECT_EQ(one(nearFast).verdict, Verdict::Missed);
    EXPECT_EQ(one(nearFast).shown, "50.0 % (near 83.3 %)");
    // FLOP rows against the FMA peak
    bench::Case f = c;
    f.work = bench::Work::flops(2.4e9);  // 2.4 GFLOP in 12 ms = 200 GFLOP/s = 50 % of 400
    f.bars.pct_of_limit = 50;
    const auto v = bench::check_bars(ran(f, 12), roof(), {});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].bar, "FMA peak >= 50 %");
    EXPECT_EQ(v[0].verdict, Verdict::Met);
}

TEST(Bars, SpeedupIsTheReportedRatio) {
    bench::Case c = byteCase(1e6, NAN);
    c.bars.speedup = 5;
    EXPECT_EQ(bench::check_bars(ran(c, 2, 12), roof(), {})[0].verdict, Verdict::Met);  // 6x
    const auto missed = bench::check_bars(ran(c, 2, 8), roof(), {});                    // 4x
    ASSERT_EQ(missed.size(), 1u);
    EXPECT_EQ(missed[0].verdict, Verdict::Missed);
    EXPECT_EQ(missed[0].bar, "PyTorch >= 5x");
    EXPECT_EQ(missed[0].shown, "4.00x");
    // over runs: the median of the runs' ratios, with their range
    bench::Result total;
    total.c = &c;
    for (double t : {8.0, 12.0, 11.0}) total.add_run(ran(c, 2, t));  // 4x, 6x, 5.5x
    const auto v = bench::check_bars(total, roof(), {});
    EXPECT_EQ(v[0].verdict, Verdict::Met);
    EXPECT_EQ(v[0].shown, "5.50x (4.00-6.00)");
    c.bars.speedup = 1.5;
    EXPECT_EQ(bench::check_bars(ran(c, 2, 8), roof(), {})[0].bar, "PyTorch >= 1.5x");
}

TEST(Bars, WithoutTheFigureABarIsNotMeasuredAndSaysWhy) {
    bench::Case c = byteCase(300e6, 60);
    c.bars.speedup = 1;
    bench::Result noPeer = ran(c, 8);
    noPeer.torchStatus = "error";
    noPeer.torchMessage = "\"max_pool2d\" not implemented for 'Half'";
    bench::Roofline none = roof();
    none.measured = false;
    auto v = bench::check_bars(noPeer, none, {});
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].verdict, Verdict::NotMeasured);
    EXPECT_EQ(v[0].shown, "no roofline (--no-roofline)");
    EXPECT_EQ(v[1].verdict, Verdict::NotMeasured);
    EXPECT_EQ(v[1].shown, "no PyTorch time: \"max_pool2d\" not implemented for 'Half'");
    bench::Result failed = ran(c, 8, 20);
    failed.status = "FAIL";
    v = bench::check_bars(failed, roof(), {});
    for (const auto &k : v) {
        EXPECT_EQ(k.verdict, Verdict::NotMeasured);
        EXPECT_EQ(k.shown, "the case failed");
    }
}

TEST(Bars, TimeAgainstAnotherCase) {
    bench::Case f = byteCase(1e6, NAN), h = byteCase(1e6, NAN);
    f.dtype = ACL_FLOAT;
    h.dtype = ACL_FLOAT16;
    h.bars.time_of = f.id();
    h.bars.time_ratio = 1.5;
    const std::vector<bench::Result> within = {ran(f, 2), ran(h, 2.9)};
    auto v = bench::check_bars(within[1], roof(), within);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].verdict, Verdict::Met);
    EXPECT_NEAR(v[0].value, 1.45, 1e-12);
    EXPECT_EQ(v[0].bar, "time <= 1.5x float32's");  // only the dtype differs
    EXPECT_EQ(v[0].shown, "1.45x (2.900 / 2.000 ms)");
    const std::vector<bench::Result> beyond = {ran(f, 2), ran(h, 3.2)};
    EXPECT_EQ(bench::check_bars(beyond[1], roof(), beyond)[0].verdict, Verdict::Missed);
    // the reference filtered out (then named by its id), or failed
    v = bench::check_bars(within[1], roof(), {within[1]});
    EXPECT_EQ(v[0].verdict, Verdict::NotMeasured);
    EXPECT_EQ(v[0].bar, "time <= 1.5x " + f.id());
    EXPECT_EQ(v[0].shown, "that case was not run (--filter)");
    std::vector<bench::Result> refFailed = within;
    refFailed[0].status = "FAIL";
    EXPECT_EQ(bench::check_bars(refFailed[1], roof(), refFailed)[0].shown, "that case failed");
}

TEST(Bars, ListedUnderTheTableWithACount) {
    bench::Case held = byteCase(300e6, 60), free = byteCase(300e6, NAN);
    held.bars.speedup = 5;
    free.shape = "other";
    const std::vector<bench::Result> results = {ran(held, 8, 20), ran(free, 8, 20)};  // 75 %, 2.5x
    std::ostringstream os;
    bench::print_bars(os, results, roof());
    const std::string s = os.str();
    EXPECT_NE(s.find("2 checked, 1 met, 1 missed, 0 not measured"), std::string::npos) << s;
    EXPECT_NE(s.find("met     " + held.id() + "  copy >= 60 %   75.0 %"), std::string::npos) << s;
    EXPECT_NE(s.find("missed  " + held.id() + "  PyTorch >= 5x  2.50x"), std::string::npos) << s;
    EXPECT_EQ(s.find(free.id()), std::string::npos) << s;  // no bar, no line
    std::ostringstream none;
    bench::print_bars(none, {ran(free, 8)}, roof());
    EXPECT_EQ(none.str(), "");
}

}  // namespace
