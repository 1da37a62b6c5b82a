// aclnn-cpu-bench: running cases, in this process or, for another product, in a child process.
#include "runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "format.hpp"
#include "process.hpp"

namespace bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The copy measured next to each byte row: 3 passes of 64 MiB (well past the last-level cache),
// ~10 ms at 50 GB/s before and after each case's runs.
constexpr size_t kProbeBytes = size_t{64} << 20, kProbeBytesQuick = size_t{32} << 20;
constexpr int kProbeReps = 3;

std::string write_config(const fs::path &dir, const std::string &product, int threads) {
    const fs::path p = dir / ("aclinit-" + product + ".yaml");
    std::ofstream f(p);
    f << "# written by aclnn-cpu-bench\nproduct: " << product << "\nthreads: " << threads << "\n";
    return p.string();
}

void report_case(const Case &c, const Result &r, size_t index, size_t total) {
    char head[32];
    std::snprintf(head, sizeof head, "[%zu/%zu] ", index, total);
    std::cerr << head << c.id() << "  ";
    if (r.status == "ok")
        std::cerr << "min " << fmt_ms(r.min()) << " ms  median " << fmt_ms(r.median()) << " ms\n";
    else
        std::cerr << "FAIL: " << r.message << "\n";
}

void fail(Result &r, const std::exception &e) {
    r.status = "FAIL";
    r.message = one_line(e.what());
    r.ms.clear();
}

// `warmup` untimed runs, then `reps` timed ones appended to r.ms.
void time_runs(Prepared &p, int warmup, int reps, Result &r) {
    for (int i = 0; i < warmup; ++i) p.run();
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        p.run();
        r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
}

std::unique_ptr<Prepared> prepare(const Case &c, aclrtStream stream) {
    auto p = std::make_unique<Prepared>(stream, c.whole_call);
    c.prepare(*p);
    if (!p->planned()) throw CallError(c.id(), -1, "prepare() did not plan an executor (BENCH_PLAN missing)");
    return p;
}

// The cases of rs: every one prepared first, then in round k reps_k timed runs of each case in turn
// (after its warm-up runs), so that with --rounds each case's samples spread over the whole run.
// (Without, run_in_process passes one case at a time: prepared, timed and freed before the next.)
// probe (roofline on): the copy bandwidth measured just before and after each byte row's timed runs.
void run_rounds(std::vector<Result *> &rs, aclrtStream stream, const Options &o, size_t &counter, size_t total,
                const std::function<void(Result &)> &after, CopyProbe *probe) {
    std::vector<std::unique_ptr<Prepared>> ps(rs.size());
    for (size_t i = 0; i < rs.size(); ++i) {
        rs[i]->ms.clear();
        rs[i]->nearCopyGBps = NAN;
        try {
            ps[i] = prepare(*rs[i]->c, stream);
            rs[i]->workspace = ps[i]->workspace_bytes();
            rs[i]->status = "ok";
        } catch (const std::exception &e) {
            fail(*rs[i], e);
        }
    }
    for (int k = 0; k < o.rounds; ++k) {
        const int reps = o.reps / o.rounds + (k < o.reps % o.rounds ? 1 : 0);
        for (size_t i = 0; i < rs.size(); ++i) {
            if (!ps[i]) continue;
            try {
                const bool near = probe && rs[i]->c->work.metric == Metric::Bytes;
                const double before = near ? probe->gbps(kProbeReps) : 0;
                time_runs(*ps[i], o.warmup, reps, *rs[i]);
                if (near) {
                    const double b = std::max(before, probe->gbps(kProbeReps));
                    rs[i]->nearCopyGBps = std::isfinite(rs[i]->nearCopyGBps) ? std::max(rs[i]->nearCopyGBps, b) : b;
                }
            } catch (const std::exception &e) {
                fail(*rs[i], e);
                ps[i].reset();
            }
        }
    }
    ps.clear();
    for (Result *r : rs) {
        report_case(*r->c, *r, ++counter, total);
        if (after) after(*r);
    }
}

}  // namespace

std::string run_in_process(const std::string &product, std::vector<Result *> &rs, const Options &o,
                           const fs::path &tmp, size_t &counter, size_t total,
                           const std::function<void(Result &)> &after) {
    const std::string cfg = write_config(tmp, product, o.threads);
    auto fail_all = [&](const std::string &msg) {
        for (Result *r : rs) {
            r->status = "FAIL";
            r->message = msg;
            std::cerr << "[" << ++counter << "/" << total << "] " << r->c->id() << "  FAIL: " << msg << "\n";
        }
    };
    const aclError ie = aclInit(cfg.c_str());
    if (ie != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        fail_all("aclInit(product " + product + ") returned " + std::to_string(ie) + (m ? std::string(": ") + m : ""));
        return "";
    }
    aclrtStream stream = nullptr;
    aclError se = aclrtSetDevice(0);
    if (se == ACL_SUCCESS) se = aclrtCreateStream(&stream);
    if (se != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        fail_all("aclrtSetDevice/aclrtCreateStream returned " + std::to_string(se) + (m ? std::string(": ") + m : ""));
        aclFinalize();
        return "";
    }
    const char *socp = aclrtGetSocName();
    const std::string soc = socp ? socp : "";
    std::unique_ptr<CopyProbe> probe;
    if (!o.noRoofline) probe = std::make_unique<CopyProbe>(o.threads, o.quick ? kProbeBytesQuick : kProbeBytes);
    if (o.rounds > 1) {
        run_rounds(rs, stream, o, counter, total, after, probe.get());
    } else {
        for (Result *r : rs) {
            std::vector<Result *> one{r};
            run_rounds(one, stream, o, counter, total, after, probe.get());
        }
    }
    probe.reset();
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return soc;
}

void write_child_result(std::ostream &f, const Result &r) {
    std::string times;
    for (size_t i = 0; i < r.ms.size(); ++i) {
        if (i) times += ',';
        times += fmt(r.ms[i], 6);
    }
    f << r.c->id() << "\t" << r.status << "\t" << r.workspace << "\t" << (times.empty() ? "-" : times) << "\t"
      << (std::isfinite(r.nearCopyGBps) ? fmt(r.nearCopyGBps, 6) : "-") << "\t" << one_line(r.message) << std::endl;
}

std::string run_in_child(const std::string &product, std::vector<Result *> &rs, const Options &o, const fs::path &tmp,
                         size_t &counter, size_t total) {
    const std::string out = (tmp / ("child-" + product + ".tsv")).string();
    std::vector<std::string> args = {self_exe(),  "--child-product", product, "--child-out", out,
                                     "--reps",    std::to_string(o.reps),     "--warmup",    std::to_string(o.warmup),
                                     "--threads", std::to_string(o.threads),   "--rounds",    std::to_string(o.rounds),
                                     "--child-progress", std::to_string(counter) + "/" + std::to_string(total)};
    if (o.quick) args.push_back("--quick");
    if (o.noRoofline) args.push_back("--no-roofline");
    for (const std::string &f : o.filters) {
        args.push_back("--filter");
        args.push_back(f);
    }
    std::cerr << "(running the " << product << " cases in a child process, one aclInit per product)\n";
    std::string why;
    const int rc = spawn_wait(args, "", "", {}, why);
    std::map<std::string, std::vector<std::string>> rows;
    std::string soc;
    {
        std::ifstream f(out);
        std::string line;
        while (std::getline(f, line)) {
            std::vector<std::string> cols = split(line, '\t');
            if (cols.size() >= 2 && cols[0] == "soc")
                soc = cols[1];
            else if (cols.size() >= 6)
                rows[cols[0]] = cols;
        }
    }
    for (Result *r : rs) {
        auto it = rows.find(r->c->id());
        ++counter;
        if (it == rows.end()) {
            r->status = "FAIL";
            r->message = "child process for product " + product + " gave no result (exit " + std::to_string(rc) +
                         (why.empty() ? "" : ", " + why) + ")";
            std::cerr << "[" << counter << "/" << total << "] " << r->c->id() << "  FAIL: " << r->message << "\n";
            continue;
        }
        const auto &cols = it->second;
        r->status = cols[1];
        r->workspace = std::strtoull(cols[2].c_str(), nullptr, 10);
        r->ms = parse_times(cols[3]);
        r->nearCopyGBps = cols[4] == "-" ? NAN : std::strtod(cols[4].c_str(), nullptr);
        r->message = cols[5];
    }
    return soc;
}

}  // namespace bench
