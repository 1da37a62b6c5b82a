// aclnn-cpu-bench: one case's outcome, ours and PyTorch's.
#include "result.hpp"

namespace bench {

const char *rate_unit(const Case &c) { return c.work.metric == Metric::Bytes ? "GB/s" : "GFLOP/s"; }

double pct_of_limit(const Result &r, const Roofline &roof) {
    if (!roof.measured) return NAN;
    const double lim = r.c->work.metric == Metric::Bytes ? roof.copyGBps : roof.fmaGFlops;
    return lim > 0 ? 100.0 * r.rate() / lim : NAN;
}

}  // namespace bench
