// aclnn-cpu-bench: one case's outcome, ours and PyTorch's.
#include "result.hpp"

#include <algorithm>
#include <cmath>

namespace bench {

void Result::add_run(const Result &run) {
    if (runs == 0) {
        status = run.status, message = run.message, workspace = run.workspace;
        torchStatus = run.torchStatus, torchMessage = run.torchMessage;
    } else {
        if (status == "ok" && run.status != "ok") status = run.status, message = run.message;
        if (torchStatus == "ok" && run.torchStatus != "ok") torchStatus = run.torchStatus, torchMessage = run.torchMessage;
    }
    ms.insert(ms.end(), run.ms.begin(), run.ms.end());
    torchMs.insert(torchMs.end(), run.torchMs.begin(), run.torchMs.end());
    runSpeedups.push_back(run.run_speedup());
    if (std::isfinite(run.nearCopyGBps)) nearCopyGBps = std::isfinite(nearCopyGBps) ? std::max(nearCopyGBps, run.nearCopyGBps) : run.nearCopyGBps;
    ++runs;
}

double Result::speedup() const {
    if (runs < 2) return run_speedup();
    if (status != "ok" || torchStatus != "ok") return NAN;
    for (const double s : runSpeedups)
        if (!std::isfinite(s)) return NAN;
    return median_of(runSpeedups);
}

std::string speedup_text(const Result &r) {
    std::string s = fmt(r.speedup(), 2) + "x";
    if (r.runs > 1 && std::isfinite(r.speedup())) {  // the runs' range
        const auto [lo, hi] = std::minmax_element(r.runSpeedups.begin(), r.runSpeedups.end());
        s += " (" + fmt(*lo, 2) + "-" + fmt(*hi, 2) + ")";
    }
    return s;
}

const char *rate_unit(const Case &c) { return c.work.metric == Metric::Bytes ? "GB/s" : "GFLOP/s"; }

double pct_of_limit(const Result &r, const Roofline &roof) {
    if (!roof.measured) return NAN;
    const double lim = r.c->work.metric == Metric::Bytes ? roof.copyGBps : roof.fmaGFlops;
    return lim > 0 ? 100.0 * r.rate() / lim : NAN;
}

double pct_of_near(const Result &r) {
    if (r.c->work.metric != Metric::Bytes || !(r.nearCopyGBps > 0)) return NAN;
    return 100.0 * r.rate() / r.nearCopyGBps;
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
