// aclnn-cpu-bench: the benchmark driver.
//
// Runs the registered cases (bench/ops/*.cpp), one executor per case built once as repeatable,
// buffers preallocated and warmed, min and median over --reps repetitions; measures the machine's
// copy bandwidth and FMA peak first; times the same cases in PyTorch (bench/torch_peer.py, embedded)
// when /usr/bin/python3 can import torch; prints a table and writes JSON / CSV.
//
// Cases of a product other than the first one selected run in a child process of this binary
// (--child-product): the product profile is chosen by aclInit, CANN programs call aclInit once per
// process, and a child keeps a crash under one product from ending the whole run.
//
// The parts: options.cpp (command line), runner.cpp (cases, child processes), torch_peer.cpp (the
// PyTorch peer), report.cpp (table, JSON, CSV), roofline.cpp (machine limits); format.cpp, host.cpp,
// process.cpp and result.cpp are what they share.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "host.hpp"
#include "options.hpp"
#include "process.hpp"
#include "report.hpp"
#include "result.hpp"
#include "roofline.hpp"
#include "runner.hpp"
#include "torch_peer.hpp"

namespace bench {
namespace {

int run(int argc, char **argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a dead PyTorch peer must not take the bench down
    const Options o = parse_options(argc, argv);
    const std::string started = utc_now();
    const CaseList all = all_cases();
    std::vector<Result> results;
    {
        std::set<std::string> ids;
        for (const Case &c : all) {
            if (!ids.insert(c.id()).second) std::cerr << "aclnn-cpu-bench: duplicate case id " << c.id() << "\n";
            if (selected(c, o)) {
                Result r;
                r.c = &c;
                results.push_back(r);
            }
        }
    }
    if (o.list) {
        for (const Result &r : results) std::cout << r.c->id() << (r.c->quick ? "  (quick)" : "") << "\n";
        return 0;
    }
    if (results.empty()) {
        if (!o.childProduct.empty()) {  // nothing for this product: an empty result file
            std::ofstream(o.childOut) << "";
            return 0;
        }
        usage_error("no case matches the selection (see --list)");
    }
    TempDir tmp;
    size_t counter = 0;
    if (o.reps < 5 && o.childProduct.empty())
        std::cerr << "note: " << o.reps << " repetitions; the conventions ask for at least 5\n";

    if (!o.childProduct.empty()) {
        std::vector<Result *> rs;
        for (Result &r : results) rs.push_back(&r);
        std::ofstream out(o.childOut);
        counter = o.childFirst;
        const std::string soc =
            run_in_process(o.childProduct, rs, o, tmp.path, counter, o.childTotal ? o.childTotal : results.size(),
                           [&out](Result &r) { write_child_result(out, r); });
        out << "soc\t" << soc << std::endl;
        for (const Result &r : results)
            if (r.status != "ok") return 1;
        return 0;
    }

    const std::string loadStart = load_average();
    std::cout << "aclnn-cpu-bench  " << started << "  " << cpu_model() << " (" << std::thread::hardware_concurrency()
              << " cpus)  threads=" << o.threads << " reps=" << o.reps << " warmup=" << o.warmup << (o.rounds > 1 ? " rounds=" + std::to_string(o.rounds) : std::string())
              << (o.quick ? " quick" : "") << "  load " << loadStart << "\n";
    Roofline roof;
    if (!o.noRoofline) {
        std::cerr << "(measuring copy bandwidth and FMA peak)\n";
        roof = o.quick ? measure_roofline(o.threads, size_t{32} << 20, 3, 0.02)
                       : measure_roofline(o.threads, size_t{256} << 20, 7, 0.1);
        std::cout << roofline_line(roof) << "\n";
    } else {
        std::cout << "roofline: skipped (--no-roofline)\n";
    }
    std::cout.flush();

    // the PyTorch peer: started once torch is needed, after the roofline, before the first case
    TorchPeer peer;
    if (o.noTorch) {
        peer.info.reason = "skipped (--no-torch)";
    } else if (std::none_of(results.begin(), results.end(), [](const Result &r) { return !r.c->torch.empty(); })) {
        peer.info.reason = "no selected case has a PyTorch peer";
    } else {
        peer.start(o, tmp.path);
        if (!peer.info.available) std::cerr << "PyTorch peer n/a: " << peer.info.reason << "\n";
    }
    // products in order of first appearance; the first runs here, the others in child processes
    std::vector<std::string> products;
    for (const Result &r : results)
        if (std::find(products.begin(), products.end(), r.c->product) == products.end())
            products.push_back(r.c->product);
    std::map<std::string, std::string> socs;
    // --runs N: the whole measurement N times, each run's outcome added to the totals. aclInit comes
    // once per process: after the first run every product's cases run in a child process.
    const std::vector<Result> fresh = results;
    std::vector<Result> totals = results;
    for (int run = 0; run < o.runs; ++run) {
        if (o.runs > 1) std::cerr << "(run " << run + 1 << " of " << o.runs << ")\n";
        results = fresh;
        counter = 0;
        for (size_t i = 0; i < products.size(); ++i) {
            std::vector<Result *> rs;
            for (Result &r : results)
                if (r.c->product == products[i]) rs.push_back(&r);
            if (i == 0 && run == 0) {
                socs[products[i]] = run_in_process(products[i], rs, o, tmp.path, counter, results.size());
            } else {
                const std::string soc = run_in_child(products[i], rs, o, tmp.path, counter, results.size());
                if (run == 0 || !soc.empty()) socs[products[i]] = soc;
            }
        }
        // Every one of our cases is timed before PyTorch times any. Alternating them (so that both sides
        // saw the same minute of machine load) slowed our case after each PyTorch case by up to 2x on
        // short cases, even with a 600 ms pause between them: a bias against us, not noise.
        for (Result &r : results) peer.time_case(r);
        for (size_t i = 0; i < results.size(); ++i) totals[i].add_run(results[i]);
    }
    results = std::move(totals);
    peer.stop();
    const TorchInfo torch = peer.info;

    print_table(std::cout, results, roof, torch, o, socs);
    const std::string loadEnd = load_average();
    const double cpus = std::max(1u, std::thread::hardware_concurrency());
    // our own threads add up to --threads to the end figure
    if (std::atof(loadStart.c_str()) > 0.5 * cpus || std::atof(loadEnd.c_str()) > 1.5 * cpus)
        std::cout << "\nnote: load average " << loadStart << " at start, " << loadEnd << " at end on "
                  << cpus << " cpus: other work shared this machine, so every figure above is noisy; rerun when it is idle\n";
    if (!o.json.empty()) write_json(o.json, results, roof, torch, o, socs, started, loadStart);
    if (!o.csv.empty()) write_csv(o.csv, results, roof);

    for (const Result &r : results)
        if (r.status != "ok") return 1;
    return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) { return bench::run(argc, argv); }
