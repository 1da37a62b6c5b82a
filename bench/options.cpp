// aclnn-cpu-bench: command-line options and which cases they select.
#include "options.hpp"

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "format.hpp"

namespace bench {

namespace {

constexpr const char *kDefaultPython = "/usr/bin/python3";

int parse_int(const std::string &opt, const std::string &v, int lo, int hi = 1000000) {
    char *end = nullptr;
    errno = 0;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
        usage_error(opt + " expects an integer " +
                    (hi == 1000000 ? ">= " + std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi)) +
                    ", got '" + v + "'");
    return static_cast<int>(x);
}

}  // namespace

void usage(std::ostream &os) {
    os << "usage: aclnn-cpu-bench [options]\n"
          "\n"
          "Benchmarks the aclnn operators on this CPU against the machine's measured limits and,\n"
          "when " << kDefaultPython << " can import torch, against PyTorch in the same run.\n"
          "\n"
          "options:\n"
          "  --filter SUBSTR   run only cases whose id contains SUBSTR (case-insensitive; repeatable,\n"
          "                    a case runs if it matches any). id = op/shape[/variant]/dtype/product\n"
          "  --reps N          timed repetitions per case (default 10, 5 with --quick; >= 5 recommended)\n"
          "  --warmup N        untimed runs before timing (default 1; with --rounds, before each round)\n"
          "  --rounds N        split each case's repetitions into N rounds, one round of every case\n"
          "                    after the other (default 1): the minimum then comes from the quietest\n"
          "                    moment of the whole run, not of one case's few milliseconds (noisy\n"
          "                    machines, virtual CPUs). Every selected case stays allocated meanwhile\n"
          "  --runs N          repeat the whole measurement N times, all of our cases then PyTorch's\n"
          "                    each time (default 1); speedup = the median of the runs' ratios, with\n"
          "                    their range; min/med ms over every run's repetitions\n"
          "  --threads N       library threads (aclInit config, 1 to 1024), PyTorch threads and roofline threads\n"
          "                    (default 2)\n"
          "  --quick           small smoke-test cases only (CI); shorter roofline\n"
          "  --no-torch        skip the PyTorch peer\n"
          "  --no-roofline     skip measuring copy bandwidth and FMA peak (no % column)\n"
          "  --python PATH     interpreter for the PyTorch peer (default $ACLNN_CPU_BENCH_PYTHON or\n"
          "                    " << kDefaultPython << ")\n"
          "  --json FILE       write all results as JSON\n"
          "  --csv FILE        write one CSV row per case\n"
          "  --list            list the selected cases and exit\n"
          "  -h, --help        this text\n"
          "\n"
          "Exit status: 0 when every operator call succeeded (slow results never fail the run),\n"
          "1 when an operator call failed, 2 on a usage error.\n";
}

[[noreturn]] void usage_error(const std::string &msg) {
    std::cerr << "aclnn-cpu-bench: " << msg << "\n(try --help)\n";
    std::exit(2);
}

Options parse_options(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(std::cout);
            std::exit(0);
        } else if (a == "--filter") {
            o.filters.push_back(value());
        } else if (a == "--reps") {
            o.reps = parse_int(a, value(), 1);
            o.repsGiven = true;
        } else if (a == "--rounds") {
            o.rounds = parse_int(a, value(), 1);
        } else if (a == "--runs") {
            o.runs = parse_int(a, value(), 1);
        } else if (a == "--warmup") {
            o.warmup = parse_int(a, value(), 0);
        } else if (a == "--threads") {
            o.threads = parse_int(a, value(), 1, 1024);  // aclInit's limit (core/runtime/context.cpp)
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--no-torch") {
            o.noTorch = true;
        } else if (a == "--no-roofline") {
            o.noRoofline = true;
        } else if (a == "--python") {
            o.python = value();
        } else if (a == "--json") {
            o.json = value();
        } else if (a == "--csv") {
            o.csv = value();
        } else if (a == "--list") {
            o.list = true;
        } else if (a == "--child-product") {
            o.childProduct = value();
        } else if (a == "--child-out") {
            o.childOut = value();
        } else if (a == "--child-progress") {  // <cases done before>/<total>
            const std::vector<std::string> p = split(value(), '/');
            if (p.size() == 2) {
                o.childFirst = std::strtoull(p[0].c_str(), nullptr, 10);
                o.childTotal = std::strtoull(p[1].c_str(), nullptr, 10);
            }
        } else {
            usage_error("unknown option '" + a + "'");
        }
    }
    if (o.quick && !o.repsGiven) o.reps = 5;
    if (o.rounds > o.reps) usage_error("--rounds " + std::to_string(o.rounds) + " needs at least as many --reps (given " +
                                       std::to_string(o.reps) + ")");
    if (o.python.empty()) {
        const char *env = std::getenv("ACLNN_CPU_BENCH_PYTHON");
        o.python = env && *env ? env : kDefaultPython;
    }
    if (!o.childProduct.empty() && o.childOut.empty()) usage_error("--child-product needs --child-out");
    return o;
}

bool selected(const Case &c, const Options &o) {
    if (o.quick && !c.quick) return false;
    if (!o.quick && c.quick) return false;
    if (!o.childProduct.empty() && c.product != o.childProduct) return false;
    if (o.filters.empty()) return true;
    const std::string id = lower(c.id());
    for (const std::string &f : o.filters)
        if (id.find(lower(f)) != std::string::npos) return true;
    return false;
}

}  // namespace bench
