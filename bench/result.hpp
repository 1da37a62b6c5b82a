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

    double min() const { return min_of(ms); }
    double median() const { return median_of(ms); }
    double torch_median() const { return median_of(torchMs); }
    double rate() const {  // GB/s or GFLOP/s from the min time
        const double t = min();
        return status == "ok" && t > 0 ? c->work.amount / (t * 1e-3) * 1e-9 : NAN;
    }
    double speedup() const {
        const double o = median(), t = torch_median();
        return status == "ok" && torchStatus == "ok" && o > 0 ? t / o : NAN;
    }
};

const char *rate_unit(const Case &c);  // "GB/s" or "GFLOP/s"
// The rate as a percentage of the copy bandwidth or FMA peak; NAN without a roofline.
double pct_of_limit(const Result &r, const Roofline &roof);
// Byte rows that give their reads and writes apart: the shortest time the measured streams allow
// for those bytes - max(read / read bandwidth, written / write bandwidth, both / copy bandwidth) -
// as a percentage of the min time. A gather reading six times what it writes is bound by the read
// stream long before the copy figure. NAN otherwise.
double pct_of_traffic(const Result &r, const Roofline &roof);

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_RESULT_HPP_
