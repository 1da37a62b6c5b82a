// aclnn-cpu-bench: a case's bars judged on its outcome (bars.hpp).
#include "bars.hpp"

#include <algorithm>
#include <cmath>

#include "format.hpp"

namespace bench {
namespace {

Verdict judge(double value, double target, bool at_least) {
    if (!std::isfinite(value)) return Verdict::NotMeasured;
    return (at_least ? value >= target : value <= target) ? Verdict::Met : Verdict::Missed;
}

}  // namespace

const char *verdict_name(Verdict v) {
    switch (v) {
        case Verdict::Met: return "met";
        case Verdict::Missed: return "missed";
        default: return "not measured";
    }
}

std::vector<BarCheck> check_bars(const Result &r, const Roofline &roof, const std::vector<Result> &all) {
    const Bars &b = r.c->bars;
    const bool ok = r.status == "ok";
    std::vector<BarCheck> out;
    if (std::isfinite(b.pct_of_limit)) {
        BarCheck k;
        k.kind = "pct_of_limit";
        k.target = b.pct_of_limit;
        k.bar = std::string(r.c->work.metric == Metric::Bytes ? "copy" : "FMA peak") + " >= " + fmt(b.pct_of_limit, 0) + " %";
        k.value = ok ? pct_of_limit(r, roof) : NAN;
        const double near = pct_of_near(r);
        k.shown = !ok                        ? "the case failed"
                  : !std::isfinite(k.value) ? "no roofline (--no-roofline)"
                                            : fmt(k.value, 1) + " %" + (std::isfinite(near) ? " (near " + fmt(near, 1) + " %)" : "");
        k.verdict = judge(k.value, k.target, true);
        out.push_back(k);
    }
    if (std::isfinite(b.speedup)) {
        BarCheck k;
        k.kind = "speedup";
        k.target = b.speedup;
        k.bar = "PyTorch >= " + fmt(b.speedup, b.speedup == std::floor(b.speedup) ? 0 : 1) + "x";
        k.value = ok && r.torchStatus == "ok" ? r.speedup() : NAN;
        k.shown = !ok                          ? "the case failed"
                  : r.torchStatus != "ok"     ? "no PyTorch time" + (r.torchMessage.empty() ? std::string() : ": " + one_line(r.torchMessage))
                  : !std::isfinite(k.value)   ? "no ratio (a run without one)"
                                              : speedup_text(r);
        k.verdict = judge(k.value, k.target, true);
        out.push_back(k);
    }
    if (std::isfinite(b.time_ratio) && !b.time_of.empty()) {
        BarCheck k;
        k.kind = "time_ratio";
        k.target = b.time_ratio;
        const auto ref = std::find_if(all.begin(), all.end(), [&](const Result &o) { return o.c->id() == b.time_of; });
        // the other case by its dtype when only the dtype differs (the usual: FLOAT16 against FLOAT)
        const Case *rc = ref != all.end() ? ref->c : nullptr;
        const bool sibling = rc && rc->op == r.c->op && rc->shape == r.c->shape && rc->variant == r.c->variant &&
                             rc->product == r.c->product;
        k.bar = "time <= " + fmt(b.time_ratio, 1) + "x " + (sibling ? std::string(dtype_name(rc->dtype)) + "'s" : b.time_of);
        const bool refOk = ref != all.end() && ref->status == "ok" && ref->min() > 0;
        k.value = ok && refOk ? r.min() / ref->min() : NAN;
        k.shown = !ok                      ? "the case failed"
                  : ref == all.end()      ? "that case was not run (--filter)"
                  : !refOk                ? "that case failed"
                                          : fmt(k.value, 2) + "x (" + fmt_ms(r.min()) + " / " + fmt_ms(ref->min()) + " ms)";
        k.verdict = judge(k.value, k.target, false);
        out.push_back(k);
    }
    return out;
}

void print_bars(std::ostream &os, const std::vector<Result> &results, const Roofline &roof) {
    struct Line {
        std::string verdict, id, bar, shown;
    };
    std::vector<Line> lines;
    int met = 0, missed = 0, unmeasured = 0;
    for (const Result &r : results)
        for (const BarCheck &k : check_bars(r, roof, results)) {
            lines.push_back({verdict_name(k.verdict), r.c->id(), k.bar, k.shown});
            (k.verdict == Verdict::Met ? met : k.verdict == Verdict::Missed ? missed : unmeasured) += 1;
        }
    if (lines.empty()) return;
    os << "\nbars (performance.md's targets, declared with the cases in bench/ops/): " << lines.size()
       << " checked, " << met << " met, " << missed << " missed, " << unmeasured << " not measured\n";
    size_t wv = 0, wi = 0, wb = 0;
    for (const Line &l : lines) wv = std::max(wv, l.verdict.size()), wi = std::max(wi, l.id.size()), wb = std::max(wb, l.bar.size());
    for (const Line &l : lines)
        os << "  " << l.verdict << std::string(wv - l.verdict.size() + 2, ' ') << l.id << std::string(wi - l.id.size() + 2, ' ')
           << l.bar << std::string(wb - l.bar.size() + 2, ' ') << l.shown << "\n";
}

}  // namespace bench
