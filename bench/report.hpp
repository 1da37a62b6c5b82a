// aclnn-cpu-bench: the report: table, roofline line, JSON and CSV.
#ifndef ACLNN_CPU_BENCH_REPORT_HPP_
#define ACLNN_CPU_BENCH_REPORT_HPP_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "result.hpp"
#include "roofline.hpp"
#include "torch_peer.hpp"

namespace bench {

// socs: product -> SoC name reported by aclrtGetSocName (empty when its aclInit failed).

// The "peer:" and "products:" lines, the table, its legend, then PyTorch n/a reasons and failures.
void print_table(std::ostream &os, const std::vector<Result> &results, const Roofline &roof, const TorchInfo &torch,
                 const Options &o, const std::map<std::string, std::string> &socs);
std::string roofline_line(const Roofline &roof);  // "roofline: copy ... | FP32 FMA ..."
// Everything, including every repetition's time; complains on stderr if the file cannot be written.
void write_json(const std::string &path, const std::vector<Result> &results, const Roofline &roof,
                const TorchInfo &torch, const Options &o, const std::map<std::string, std::string> &socs,
                const std::string &started, const std::string &loadStart);
// One row per case; complains on stderr if the file cannot be written.
void write_csv(const std::string &path, const std::vector<Result> &results, const Roofline &roof);

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_REPORT_HPP_
