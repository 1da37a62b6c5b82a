// aclnn-cpu-bench: the report: table, roofline line, JSON and CSV.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "bars.hpp"
#include "format.hpp"
#include "host.hpp"

namespace bench {

void print_table(std::ostream &os, const std::vector<Result> &results, const Roofline &roof, const TorchInfo &torch,
                 const Options &o, const std::map<std::string, std::string> &socs) {
    if (!o.noTorch) {
        if (torch.available)
            os << "peer: PyTorch " << torch.version << " (" << o.python << ", " << threads_str(torch.threads)
               << "), every case after all of ours, same repetitions\n";
        else
            os << "peer: PyTorch n/a - " << torch.reason << "\n";
    } else {
        os << "peer: PyTorch skipped (--no-torch)\n";
    }
    os << "products:";
    for (const auto &[p, s] : socs) os << " " << p << (s.empty() ? "" : " (" + s + ")");
    os << "\n\n";

    const std::vector<std::string> head = {"operator", "case",   "dtype",    "product",  "ws",      "min ms",
                                           "med ms",   "rate",   "%limit",   "%near",    "%traffic", "torch ms", "speedup"};
    const std::vector<bool> right = {false, false, false, false, true, true, true, true, true, true, true, true, true};
    std::vector<std::vector<std::string>> rows;
    for (const Result &r : results) {
        const Case &c = *r.c;
        std::string cs = c.shape + (c.variant.empty() ? "" : "/" + c.variant);
        if (r.status != "ok") {
            rows.push_back({c.op, cs, dtype_name(c.dtype), c.product, "-", r.status, "-", "-", "-", "-", "-", "-", "-"});
            continue;
        }
        std::string torchMs = "n/a", speed = "n/a";
        if (r.torchStatus == "ok") {
            torchMs = fmt_ms(r.torch_median());
            speed = speedup_text(r);
        }
        const double pct = pct_of_limit(r, roof), near = pct_of_near(r), traffic = pct_of_traffic(r, roof);
        auto percent = [](double v) { return std::isfinite(v) ? fmt(v, 1) + "%" : std::string("-"); };
        rows.push_back({c.op, cs, dtype_name(c.dtype), c.product, fmt_bytes(r.workspace), fmt_ms(r.min()),
                        fmt_ms(r.median()), fmt(r.rate(), 2) + " " + rate_unit(c), percent(pct), percent(near),
                        percent(traffic), torchMs, speed});
    }
    std::vector<size_t> w(head.size());
    for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
    for (const auto &row : rows)
        for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    auto line = [&](const std::vector<std::string> &cells) {
        std::string s;
        for (size_t i = 0; i < cells.size(); ++i) {
            const std::string pad(w[i] - cells[i].size(), ' ');
            s += (i ? "  " : "") + (right[i] ? pad + cells[i] : cells[i] + (i + 1 < cells.size() ? pad : ""));
        }
        os << s << "\n";
    };
    line(head);
    size_t total = 0;
    for (size_t x : w) total += x + 2;
    os << std::string(total - 2, '-') << "\n";
    for (const auto &row : rows) line(row);
    os << "\nmin/med ms: min and median of " << o.reps << " timed runs (after " << o.warmup << " warm-up"
       << (o.rounds > 1 ? " in each of " + std::to_string(o.rounds) + " rounds over all cases" : std::string())
       << (o.runs > 1 ? "; in each of " + std::to_string(o.runs) + " runs of the whole measurement" : std::string())
       << "), phase 2 + stream sync (rows tagged call: phase 1 + phase 2 + sync, a new executor each run);\n"
          "ws: workspace bytes\n"
          "rate: bytes (inputs read + outputs written) or FLOPs per min time; %limit: of the copy bandwidth\n"
          "(GB/s rows) or FMA peak (GFLOP/s rows) measured above; %near: of the best copy bandwidth measured\n"
          "just before and just after the row's timed runs (the host's memory speed changes while it runs);\n"
          "%traffic: the time the measured read, write and copy bandwidths allow for the row's reads and\n"
          "writes, over the min time; speedup = PyTorch median / our median"
       << (o.runs > 1 ? " in each run, the median of the " + std::to_string(o.runs) + " runs' ratios (their range)"
                      : std::string())
       << "\n";
    bool anyTorchErr = false;
    for (const Result &r : results)
        if (r.status == "ok" && r.torchStatus == "error") {
            if (!anyTorchErr) os << "\nPyTorch n/a:\n";
            anyTorchErr = true;
            os << "  " << r.c->id() << ": " << r.torchMessage << "\n";
        }
    bool anyFail = false;
    for (const Result &r : results)
        if (r.status != "ok") {
            if (!anyFail) os << "\nFAILED:\n";
            anyFail = true;
            os << "  " << r.c->id() << ": " << r.message << "\n";
        }
    print_bars(os, results, roof);
}

std::string roofline_line(const Roofline &roof) {
    std::ostringstream os;
    os << "roofline: copy " << fmt(roof.copyGBps, 1) << " GB/s (best of memcpy " << fmt(roof.memcpyGBps, 1)
       << " and streaming copy " << fmt(roof.streamGBps, 1) << "; " << roof.copyBytes / (1024 * 1024)
       << " MiB read+write, " << threads_str(roof.threads) << ", best of " << roof.copyReps << ", median "
       << fmt(roof.copyGBpsMedian, 1) << "; read " << fmt(roof.readGBps, 1) << ", write " << fmt(roof.writeGBps, 1)
       << ")  |  FP32 FMA ";
    if (roof.fmaIsa == "none")
        os << "n/a (no AVX2/AVX-512)";
    else
        os << fmt(roof.fmaGFlops, 1) << " GFLOP/s (" << roof.fmaIsa << ", 12 chains x " << threads_str(roof.threads) << ", median " << fmt(roof.fmaGFlopsMedian, 1) << ")";
    return os.str();
}

void write_json(const std::string &path, const std::vector<Result> &results, const Roofline &roof,
                const TorchInfo &torch, const Options &o, const std::map<std::string, std::string> &socs,
                const std::string &started, const std::string &loadStart) {
    std::ofstream f(path);
    f << "{\n  \"tool\": \"aclnn-cpu-bench\",\n  \"format\": 1,\n  \"started\": " << json_str(started)
      << ",\n  \"host\": {\"cpu\": " << json_str(cpu_model()) << ", \"cpus\": " << std::thread::hardware_concurrency()
      << ", \"loadavg_at_start\": " << json_str(loadStart) << ", \"loadavg_at_end\": " << json_str(load_average()) << "},\n  \"options\": {\"reps\": " << o.reps << ", \"warmup\": " << o.warmup << ", \"rounds\": " << o.rounds << ", \"threads\": " << o.threads
      << ", \"quick\": " << (o.quick ? "true" : "false") << ", \"filters\": [";
    for (size_t i = 0; i < o.filters.size(); ++i) f << (i ? ", " : "") << json_str(o.filters[i]);
    f << "]},\n  \"roofline\": ";
    if (roof.measured)
        f << "{\"threads\": " << roof.threads << ", \"copy_bytes\": " << roof.copyBytes << ", \"copy_reps\": "
          << roof.copyReps << ", \"copy_gbps\": " << json_num(roof.copyGBps) << ", \"memcpy_gbps\": " << json_num(roof.memcpyGBps)
          << ", \"stream_copy_gbps\": " << json_num(roof.streamGBps) << ", \"copy_gbps_median\": "
          << json_num(roof.copyGBpsMedian) << ", \"read_gbps\": " << json_num(roof.readGBps) << ", \"write_gbps\": "
          << json_num(roof.writeGBps) << ", \"fma_isa\": " << json_str(roof.fmaIsa)
          << ", \"fma_gflops\": " << json_num(roof.fmaGFlops) << ", \"fma_gflops_median\": "
          << json_num(roof.fmaGFlopsMedian) << "}";
    else
        f << "null";
    f << ",\n  \"torch\": {\"enabled\": " << (o.noTorch ? "false" : "true") << ", \"available\": "
      << (torch.available ? "true" : "false") << ", \"python\": " << json_str(o.python)
      << ", \"version\": " << (torch.available ? json_str(torch.version) : "null")
      << ", \"threads\": " << torch.threads << ", \"reason\": " << (torch.available ? "null" : json_str(torch.reason))
      << "},\n  \"products\": {";
    bool first = true;
    for (const auto &[p, s] : socs) {
        f << (first ? "" : ", ") << json_str(p) << ": " << json_str(s);
        first = false;
    }
    f << "},\n  \"cases\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
        const Result &r = results[i];
        const Case &c = *r.c;
        f << "    {\"id\": " << json_str(c.id()) << ", \"op\": " << json_str(c.op) << ", \"shape\": "
          << json_str(c.shape) << ", \"variant\": " << json_str(c.variant) << ", \"dtype\": "
          << json_str(dtype_name(c.dtype)) << ", \"product\": " << json_str(c.product) << ", \"status\": "
          << json_str(r.status) << ", \"message\": " << json_str(r.message)
          << ", \"workspace_bytes\": " << r.workspace << ", \"metric\": "
          << json_str(c.work.metric == Metric::Bytes ? "bytes" : "flops") << ", \"work\": " << json_num(c.work.amount)
          << ", \"work_read\": " << (c.work.read >= 0 ? json_num(c.work.read) : std::string("null")) << ", \"reps\": " << r.ms.size() << ", \"min_ms\": " << json_num(r.min())
          << ", \"median_ms\": " << json_num(r.median()) << ", \"times_ms\": " << json_times(r.ms)
          << ", \"rate\": " << json_num(r.rate()) << ", \"rate_unit\": " << json_str(rate_unit(c))
          << ", \"pct_of_limit\": " << json_num(pct_of_limit(r, roof))
          << ", \"near_copy_gbps\": " << json_num(r.nearCopyGBps) << ", \"pct_of_near_copy\": " << json_num(pct_of_near(r))
          << ", \"pct_of_traffic\": " << json_num(pct_of_traffic(r, roof)) << ", \"torch\": ";
        if (r.torchStatus == "ok")
            f << "{\"status\": \"ok\", \"min_ms\": " << json_num(min_of(r.torchMs)) << ", \"median_ms\": "
              << json_num(r.torch_median()) << ", \"times_ms\": " << json_times(r.torchMs) << "}";
        else
            f << "{\"status\": " << json_str(r.torchStatus) << ", \"message\": " << json_str(r.torchMessage) << "}";
        f << ", \"speedup\": " << json_num(r.speedup()) << ", \"speedup_runs\": " << json_times(r.runSpeedups)
          << ", \"bars\": [";
        const std::vector<BarCheck> bars = check_bars(r, roof, results);
        for (size_t j = 0; j < bars.size(); ++j)
            f << (j ? ", " : "") << "{\"kind\": " << json_str(bars[j].kind) << ", \"bar\": " << json_str(bars[j].bar)
              << ", \"target\": " << json_num(bars[j].target) << ", \"value\": " << json_num(bars[j].value)
              << ", \"verdict\": " << json_str(verdict_name(bars[j].verdict)) << "}";
        f << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    if (!f) std::cerr << "aclnn-cpu-bench: could not write " << path << "\n";
}

void write_csv(const std::string &path, const std::vector<Result> &results, const Roofline &roof) {
    std::ofstream f(path);
    f << "id,op,shape,variant,dtype,product,status,workspace_bytes,reps,min_ms,median_ms,metric,work,rate,rate_unit,"
         "pct_of_limit,near_copy_gbps,pct_of_near_copy,pct_of_traffic,torch_status,torch_min_ms,torch_median_ms,speedup,message\n";
    auto num = [](double v) { return std::isfinite(v) ? json_num(v) : std::string(); };
    for (const Result &r : results) {
        const Case &c = *r.c;
        f << csv_field(c.id()) << "," << csv_field(c.op) << "," << csv_field(c.shape) << "," << csv_field(c.variant)
          << "," << dtype_name(c.dtype) << "," << csv_field(c.product) << "," << r.status << "," << r.workspace << ","
          << r.ms.size() << "," << num(r.min()) << "," << num(r.median()) << ","
          << (c.work.metric == Metric::Bytes ? "bytes" : "flops") << "," << num(c.work.amount) << ","
          << num(r.rate()) << "," << rate_unit(c) << "," << num(pct_of_limit(r, roof)) << "," << num(r.nearCopyGBps) << ","
          << num(pct_of_near(r)) << "," << num(pct_of_traffic(r, roof)) << "," << r.torchStatus << ","
          << num(min_of(r.torchMs)) << "," << num(r.torch_median()) << "," << num(r.speedup()) << ","
          << csv_field(r.status == "ok" ? r.torchMessage : r.message) << "\n";
    }
    if (!f) std::cerr << "aclnn-cpu-bench: could not write " << path << "\n";
}

}  // namespace bench
