// aclnn-cpu-bench: running cases, in this process or, for another product, in a child process.
#ifndef ACLNN_CPU_BENCH_RUNNER_HPP_
#define ACLNN_CPU_BENCH_RUNNER_HPP_

#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "result.hpp"

namespace bench {

// Runs the results' cases (all of one product) in this process. Returns the SoC name reported.
// after(r) is called right after each case (the PyTorch peer times it there).
std::string run_in_process(const std::string &product, std::vector<Result *> &rs, const Options &o,
                           const std::filesystem::path &tmp, size_t &counter, size_t total,
                           const std::function<void(Result &)> &after = {});

// Child protocol, one line per case as soon as it is done (a crash keeps the earlier ones):
// "<id>\t<status>\t<workspace>\t<t1,t2,..|->\t<message>", and "soc\t<name>" at the end.
void write_child_result(std::ostream &f, const Result &r);

// Runs the results' cases (all of one product) in a child process of this binary and reads back its
// results; a case the child did not report is a FAIL. Returns the SoC name the child reported.
std::string run_in_child(const std::string &product, std::vector<Result *> &rs, const Options &o,
                         const std::filesystem::path &tmp, size_t &counter, size_t total);

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_RUNNER_HPP_
