// aclnn-cpu-bench: a case's bars (Case::bars) judged on its outcome, and the "bars:" list under the
// table. The table has always held the figures; this says, for each target, whether this run met it.
#ifndef ACLNN_CPU_BENCH_BARS_HPP_
#define ACLNN_CPU_BENCH_BARS_HPP_

#include <ostream>
#include <string>
#include <vector>

#include "result.hpp"
#include "roofline.hpp"

namespace bench {

enum class Verdict { Met, Missed, NotMeasured };

struct BarCheck {
    std::string kind;    // pct_of_limit | speedup | time_ratio (the JSON's names)
    std::string bar;     // "copy >= 60 %", "FMA peak >= 50 %", "PyTorch >= 5x", "time <= 1.5x <id>"
    double target = 0;
    double value = NAN;  // the figure judged; NAN when it was not measured
    std::string shown;   // the figure as the table shows it, or why there is none
    Verdict verdict = Verdict::NotMeasured;
};

// r's bars, in the order pct_of_limit, speedup, time_ratio. %limit is judged against the roofline
// measured at the start (performance.md: "the copy bandwidth ... measured on this machine in this
// run"); %near is shown beside it. `all` is searched for a time_of case (its min time).
std::vector<BarCheck> check_bars(const Result &r, const Roofline &roof, const std::vector<Result> &all);

// One line per bar of every selected case and a count; nothing when no selected case has a bar.
void print_bars(std::ostream &os, const std::vector<Result> &results, const Roofline &roof);

const char *verdict_name(Verdict v);  // "met", "missed", "not measured"

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_BARS_HPP_
