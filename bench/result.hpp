// aclnn-cpu-bench: one case's outcome, ours and PyTorch's.
#ifndef ACLNN_CPU_BENCH_RESULT_HPP_
#define ACLNN_CPU_BENCH_RESULT_HPP_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench.hpp"
#include "format.hpp"
#include "roofline.hpp"

namespace bench {

struct Result {
    const Case *c = nullptr;
    std::string status = "not run";  // ok | FAIL | not run
    std::string message;
    uint64_t workspace = 0;
    std::vector<double> ms;
    // PyTorch peer
    std::string torchStatus = "n/a";  // ok | error | n/a
    std::string torchMessage;
    std::vector<double> torchMs;
    // --runs N: each run's speedup (PyTorch median / our median within that run), in run order
    std::vector<double> runSpeedups;
    int runs = 0;  // runs added (add_run)
    // byte rows with the roofline on: the best copy bandwidth (CopyProbe) measured just before and
    // just after this case's timed runs (every run and round), GB/s; NAN when not measured
    double nearCopyGBps = NAN;

    double min() const { return min_of(ms); }
    double median() const { return median_of(ms); }
    double torch_median() const { return median_of(torchMs); }
    double rate() const {  // GB/s or GFLOP/s from the min time
        const double t = min();
        return status == "ok" && t > 0 ? c->work.amount / (t * 1e-3) * 1e-9 : NAN;
    }
    // This run's ratio from ms and torchMs.
    double run_speedup() const {
        const double o = median(), t = torch_median();
        return status == "ok" && torchStatus == "ok" && o > 0 ? t / o : NAN;
    }
    // The reported ratio: the median of the runs' ratios after two runs or more (each run's own pair
    // of medians: a slow spell of the machine that slows one run's side of the ratio does not decide
    // it), else the ratio of the medians.
    double speedup() const;
    // Adds one run's outcome (its ms and torchMs only) to these totals: its times appended (min and
    // median then cover every run's repetitions), its ratio to runSpeedups; a failed run fails the case.
    void add_run(const Result &run);
};

// The speedup as the table and the bars list show it: "1.05x", with --runs "1.05x (0.93-1.12)".
std::string speedup_text(const Result &r);

const char *rate_unit(const Case &c);  // "GB/s" or "GFLOP/s"
// The rate as a percentage of the copy bandwidth or FMA peak; NAN without a roofline.
double pct_of_limit(const Result &r, const Roofline &roof);
// Byte rows that give their reads and writes apart: the shortest time the measured streams allow
// for those bytes - max(read / read bandwidth, written / write bandwidth, both / copy bandwidth) -
// as a percentage of the min time. A gather reading six times what it writes is bound by the read
// stream long before the copy figure. NAN otherwise.
double pct_of_traffic(const Result &r, const Roofline &roof);
// The rate of a byte row as a percentage of nearCopyGBps (NAN when not measured or not ok).
double pct_of_near(const Result &r);

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_RESULT_HPP_
