// aclnn-cpu-bench: one case's outcome, ours and PyTorch's.
#include "result.hpp"

#include <algorithm>

namespace bench {

const char *rate_unit(const Case &c) { return c.work.metric == Metric::Bytes ? "GB/s" : "GFLOP/s"; }

double pct_of_limit(const Result &r, const Roofline &roof) {
    if (!roof.measured) return NAN;
    const double lim = r.c->work.metric == Metric::Bytes ? roof.copyGBps : roof.fmaGFlops;
    return lim > 0 ? 100.0 * r.rate() / lim : NAN;
}

double pct_of_traffic(const Result &r, const Roofline &roof) {
    const Work &w = r.c->work;
    if (!roof.measured || w.metric != Metric::Bytes || w.read < 0 || roof.readGBps <= 0 || roof.writeGBps <= 0 ||
        roof.copyGBps <= 0)
        return NAN;
    const double t = r.min() * 1e-3;
    if (!(t > 0) || r.status != "ok") return NAN;
    const double written = w.amount - w.read;
    const double limit = std::max({w.read / (roof.readGBps * 1e9), written / (roof.writeGBps * 1e9), w.amount / (roof.copyGBps * 1e9)});
    return 100.0 * limit / t;
}

}  // namespace bench
