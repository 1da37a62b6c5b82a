// aclnn-cpu-bench: command-line options and which cases they select.
#ifndef ACLNN_CPU_BENCH_OPTIONS_HPP_
#define ACLNN_CPU_BENCH_OPTIONS_HPP_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "bench.hpp"

namespace bench {

struct Options {
    int reps = 10;
    bool repsGiven = false;
    int warmup = 1;
    int rounds = 1;  // the timed repetitions split into rounds over all selected cases
    int runs = 1;    // the whole measurement (ours, then PyTorch's) repeated; speedup = median of the runs' ratios
    int threads = 2;
    std::vector<std::string> filters;
    bool quick = false;
    bool noTorch = false;
    bool noRoofline = false;
    bool list = false;
    std::string json;
    std::string csv;
    std::string python;
    // internal: run one product's cases and write raw results for the parent
    std::string childProduct;
    std::string childOut;
    size_t childFirst = 0;  // progress numbering continues the parent's
    size_t childTotal = 0;
};

void usage(std::ostream &os);  // the --help text
// Prints msg and the --help hint to stderr and exits with status 2.
[[noreturn]] void usage_error(const std::string &msg);
// Exits with status 0 after --help and with status 2 on a usage error.
Options parse_options(int argc, char **argv);
// Whether o selects case c (--quick set, the child's product, --filter).
bool selected(const Case &c, const Options &o);

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_OPTIONS_HPP_
