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
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "roofline.hpp"
#include "torch_peer_script.hpp"

extern char **environ;

namespace bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char *kDefaultPython = "/usr/bin/python3";

// ---------------------------------------------------------------------------------------------
// options

struct Options {
    int reps = 10;
    bool repsGiven = false;
    int warmup = 1;
    int threads = 2;
    std::vector<std::string> filters;
    bool quick = false;
    bool noTorch = false;
    bool noRoofline = false;
    bool list = false;
    std::string json;
    std::string csv;
    std::string python;
    // internal: run one product's cases and write raw results for the parent
    std::string childProduct;
    std::string childOut;
    size_t childFirst = 0;  // progress numbering continues the parent's
    size_t childTotal = 0;
};

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
          "  --warmup N        untimed runs before timing (default 1)\n"
          "  --threads N       library threads (aclInit config), PyTorch threads and roofline threads\n"
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

int parse_int(const std::string &opt, const std::string &v, int lo) {
    char *end = nullptr;
    errno = 0;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > 1000000)
        usage_error(opt + " expects an integer >= " + std::to_string(lo) + ", got '" + v + "'");
    return static_cast<int>(x);
}

std::vector<std::string> split(const std::string &s, char sep);

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
        } else if (a == "--warmup") {
            o.warmup = parse_int(a, value(), 0);
        } else if (a == "--threads") {
            o.threads = parse_int(a, value(), 1);
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
    if (o.python.empty()) {
        const char *env = std::getenv("ACLNN_CPU_BENCH_PYTHON");
        o.python = env && *env ? env : kDefaultPython;
    }
    if (!o.childProduct.empty() && o.childOut.empty()) usage_error("--child-product needs --child-out");
    return o;
}

// ---------------------------------------------------------------------------------------------
// small utilities

std::string lower(std::string s) {
    for (char &ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

std::string one_line(const std::string &s) {
    std::string r;
    for (char ch : s) r += (ch == '\t' || ch == '\n' || ch == '\r') ? ' ' : ch;
    return r;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : s) {
        if (ch == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    out.push_back(cur);
    return out;
}

std::vector<double> parse_times(const std::string &s) {
    std::vector<double> v;
    if (s.empty() || s == "-") return v;
    for (const std::string &t : split(s, ',')) v.push_back(std::strtod(t.c_str(), nullptr));
    return v;
}

double min_of(const std::vector<double> &v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

double median_of(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(double v, int prec) {
    if (!std::isfinite(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

std::string fmt_ms(double ms) {
    if (!std::isfinite(ms)) return "-";
    return fmt(ms, ms < 1 ? 4 : ms < 10 ? 3 : ms < 100 ? 2 : 1);
}

std::string fmt_bytes(uint64_t b) {
    if (b == 0) return "0";
    const char *units[] = {"B", "K", "M", "G"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        ++u;
    }
    return fmt(v, u == 0 ? 0 : 1) + units[u];
}

std::string threads_str(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

std::string json_str(const std::string &s) {
    std::string r = "\"";
    for (unsigned char ch : s) {
        switch (ch) {
        case '"': r += "\\\""; break;
        case '\\': r += "\\\\"; break;
        case '\n': r += "\\n"; break;
        case '\r': r += "\\r"; break;
        case '\t': r += "\\t"; break;
        default:
            if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                r += buf;
            } else {
                r += static_cast<char>(ch);
            }
        }
    }
    return r + "\"";
}

std::string json_num(double v, int prec = 6) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", prec + 3, v);
    return buf;
}

std::string json_times(const std::vector<double> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += json_num(v[i]);
    }
    return s + "]";
}

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string r = "\"";
    for (char ch : s) r += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return r + "\"";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const size_t p = line.find(':');
            if (p != std::string::npos) return one_line(line.substr(p + 2));
        }
    return "unknown CPU";
}

// "1.23 0.98 0.50": other work on a shared machine shows here; read it next to the results
std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    if (!(f >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

std::string read_text(const fs::path &p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string last_lines(const std::string &text, size_t n) {
    std::vector<std::string> lines;
    for (const std::string &l : split(text, '\n'))
        if (!l.empty()) lines.push_back(l);
    std::string r;
    for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) r += lines[i] + "\n";
    return r;
}

// Spawns argv (argv[0] = executable path) with optional stdout/stderr redirection to files and extra
// environment entries; waits. Returns the exit status, or 128 + signal, or -1 if it could not start.
int spawn_wait(const std::vector<std::string> &args, const std::string &outFile, const std::string &errFile,
               const std::map<std::string, std::string> &extraEnv, std::string &why) {
    std::vector<char *> argv;
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);

    std::vector<std::string> envStore;
    for (char **e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const std::string key = kv.substr(0, kv.find('='));
        if (!extraEnv.count(key)) envStore.push_back(kv);
    }
    for (const auto &[k, v] : extraEnv) envStore.push_back(k + "=" + v);
    std::vector<char *> envp;
    for (const std::string &kv : envStore) envp.push_back(const_cast<char *>(kv.c_str()));
    envp.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!outFile.empty())
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, outFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!errFile.empty())
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        why = std::string("cannot start ") + args[0] + ": " + std::strerror(rc);
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            why = std::string("waitpid: ") + std::strerror(errno);
            return -1;
        }
    }
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 127) why = "cannot execute " + args[0];
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        why = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
              strsignal(WTERMSIG(status)) + ")";
        return 128 + WTERMSIG(status);
    }
    why = "ended abnormally";
    return -1;
}

std::string self_exe() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : p.string();
}

// ---------------------------------------------------------------------------------------------
// results

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

const char *rate_unit(const Case &c) { return c.work.metric == Metric::Bytes ? "GB/s" : "GFLOP/s"; }

double pct_of_limit(const Result &r, const Roofline &roof) {
    if (!roof.measured) return NAN;
    const double lim = r.c->work.metric == Metric::Bytes ? roof.copyGBps : roof.fmaGFlops;
    return lim > 0 ? 100.0 * r.rate() / lim : NAN;
}

// ---------------------------------------------------------------------------------------------
// running cases in this process

std::string write_config(const fs::path &dir, const std::string &product, int threads) {
    const fs::path p = dir / ("aclinit-" + product + ".yaml");
    std::ofstream f(p);
    f << "# written by aclnn-cpu-bench\nproduct: " << product << "\nthreads: " << threads << "\n";
    return p.string();
}

void run_case(const Case &c, aclrtStream stream, const Options &o, Result &r, size_t index, size_t total) {
    r.ms.clear();
    try {
        Prepared p(stream);
        c.prepare(p);
        if (!p.planned()) throw CallError(c.id(), -1, "prepare() did not plan an executor (BENCH_PLAN missing)");
        for (int i = 0; i < o.warmup; ++i) p.run();
        for (int i = 0; i < o.reps; ++i) {
            const auto t0 = Clock::now();
            p.run();
            r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        r.workspace = p.workspace_bytes();
        r.status = "ok";
    } catch (const std::exception &e) {
        r.status = "FAIL";
        r.message = one_line(e.what());
        r.ms.clear();
    }
    char head[32];
    std::snprintf(head, sizeof head, "[%zu/%zu] ", index, total);
    std::cerr << head << c.id() << "  ";
    if (r.status == "ok")
        std::cerr << "min " << fmt_ms(r.min()) << " ms  median " << fmt_ms(r.median()) << " ms\n";
    else
        std::cerr << "FAIL: " << r.message << "\n";
}

// Runs the results' cases (all of one product) in this process. Returns the SoC name reported.
std::string run_in_process(const std::string &product, std::vector<Result *> &rs, const Options &o,
                           const fs::path &tmp, size_t &counter, size_t total,
                           const std::function<void(Result &)> &after = {}) {
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
    for (Result *r : rs) {
        run_case(*r->c, stream, o, *r, ++counter, total);
        if (after) after(*r);
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return soc;
}

// Child protocol, one line per case as soon as it is done (a crash keeps the earlier ones):
// "<id>\t<status>\t<workspace>\t<t1,t2,..|->\t<message>", and "soc\t<name>" at the end.
void write_child_result(std::ostream &f, const Result &r) {
    std::string times;
    for (size_t i = 0; i < r.ms.size(); ++i) {
        if (i) times += ',';
        times += fmt(r.ms[i], 6);
    }
    f << r.c->id() << "\t" << r.status << "\t" << r.workspace << "\t" << (times.empty() ? "-" : times) << "\t"
      << one_line(r.message) << std::endl;
}

std::string run_in_child(const std::string &product, std::vector<Result *> &rs, const Options &o, const fs::path &tmp,
                         size_t &counter, size_t total) {
    const std::string out = (tmp / ("child-" + product + ".tsv")).string();
    std::vector<std::string> args = {self_exe(),  "--child-product", product, "--child-out", out,
                                     "--reps",    std::to_string(o.reps),     "--warmup",    std::to_string(o.warmup),
                                     "--threads", std::to_string(o.threads),
                                     "--child-progress", std::to_string(counter) + "/" + std::to_string(total)};
    if (o.quick) args.push_back("--quick");
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
            else if (cols.size() >= 5)
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
        r->message = cols[4];
    }
    return soc;
}

// ---------------------------------------------------------------------------------------------
// PyTorch peer

struct TorchInfo {
    bool available = false;
    std::string version;
    int threads = 0;
    std::string reason;  // when unavailable
};

// The PyTorch peer: one python process for the whole run, asked to time each case right after ours
// (one JSON line in, one line out), so that both sides see the same machine load.
class TorchPeer {
public:
    ~TorchPeer() { stop(); }

    // Starts the interpreter and waits until torch is imported (so the import never overlaps our timing).
    void start(const Options &o, const fs::path &tmp) {
        o_ = &o;
        const fs::path script = tmp / "torch_peer.py";
        errFile_ = tmp / "torch_stderr.txt";
        {
            std::ofstream f(script);
            f << kTorchPeerScript;
        }
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
            info.reason = std::string("pipe: ") + std::strerror(errno);
            return;
        }
        const std::string th = std::to_string(o.threads);
        std::vector<std::string> args = {o.python, script.string(), th};
        std::vector<char *> argv;
        for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        std::vector<std::string> envStore;
        for (char **e = environ; e && *e; ++e) {
            const std::string kv = *e;
            if (kv.rfind("OMP_NUM_THREADS=", 0) != 0 && kv.rfind("MKL_NUM_THREADS=", 0) != 0) envStore.push_back(kv);
        }
        envStore.push_back("OMP_NUM_THREADS=" + th);
        envStore.push_back("MKL_NUM_THREADS=" + th);
        std::vector<char *> envp;
        for (const std::string &kv : envStore) envp.push_back(const_cast<char *>(kv.c_str()));
        envp.push_back(nullptr);

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errFile_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        if (rc != 0) {
            close(in[1]);
            close(out[0]);
            pid_ = -1;
            info.reason = "cannot start " + o.python + ": " + std::strerror(rc);
            return;
        }
        to_ = fdopen(in[1], "w");
        from_ = fdopen(out[0], "r");
        std::cerr << "(starting the PyTorch peer: " << o.python << ")\n";
        std::string line;
        if (!read_line(line)) {
            info.reason = o.python + " could not run the peer" + end_reason();
            stop();
            return;
        }
        const std::vector<std::string> cols = split(line, '\t');
        if (cols.size() >= 3 && cols[0] == "torch") {
            info.available = true;
            info.version = cols[1];
            info.threads = std::atoi(cols[2].c_str());
        } else {
            info.reason = cols.size() >= 2 && cols[0] == "unavailable" ? cols[1] : "unexpected reply '" + line + "'";
            stop();
        }
    }

    bool alive() const { return info.available && pid_ > 0; }

    // Times r's case in PyTorch (same dtype, repetitions, warm-up and threads); fills r.torch*.
    void time_case(Result &r) {
        if (r.status != "ok" || r.c->torch.empty()) return;
        if (info.available && !alive()) {
            r.torchStatus = "error";
            r.torchMessage = "the PyTorch peer had stopped earlier in the run";
            return;
        }
        if (!alive()) return;
        const Case &c = *r.c;
        const std::string req = "{\"id\": " + json_str(c.id()) + ", \"dtype\": " + json_str(dtype_name(c.dtype)) +
                                ", \"reps\": " + std::to_string(o_->reps) +
                                ", \"warmup\": " + std::to_string(std::max(1, o_->warmup)) +
                                ", \"code\": " + json_str(c.torch) + "}\n";
        std::string line;
        if (std::fputs(req.c_str(), to_) < 0 || std::fflush(to_) != 0 || !read_line(line)) {
            r.torchStatus = "error";
            r.torchMessage = "the PyTorch peer stopped" + end_reason();
            stop();
            return;
        }
        const std::vector<std::string> cols = split(line, '\t');
        if (cols.size() < 3 || cols[0] != c.id()) {
            r.torchStatus = "error";
            r.torchMessage = "unexpected reply from the peer: " + one_line(line);
            return;
        }
        r.torchStatus = cols[1] == "ok" ? "ok" : "error";
        r.torchMs = parse_times(cols[2]);
        r.torchMessage = cols.size() > 3 ? cols[3] : "";
        std::cerr << "        PyTorch: ";
        if (r.torchStatus == "ok")
            std::cerr << "min " << fmt_ms(min_of(r.torchMs)) << " ms  median " << fmt_ms(r.torch_median()) << " ms\n";
        else
            std::cerr << "n/a: " << r.torchMessage << "\n";
    }

    void stop() {
        if (to_) std::fclose(to_);
        to_ = nullptr;
        if (pid_ > 0) {
            int st = 0;
            while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
            }
            status_ = st;
            exited_ = true;
        }
        pid_ = -1;
        if (from_) std::fclose(from_);
        from_ = nullptr;
    }

    TorchInfo info;

private:
    bool read_line(std::string &line) {
        char *buf = nullptr;
        size_t cap = 0;
        const ssize_t n = from_ ? getline(&buf, &cap, from_) : -1;
        if (n > 0) line.assign(buf, static_cast<size_t>(n));
        std::free(buf);
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
        return n > 0;
    }

    // " (exit 1; <last stderr lines>)" once the process is gone
    std::string end_reason() {
        if (pid_ > 0) {
            if (to_) std::fclose(to_);
            to_ = nullptr;
            int st = 0;
            while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
            }
            status_ = st;
            exited_ = true;
            pid_ = -1;
        }
        std::string s;
        if (exited_) {
            if (WIFEXITED(status_))
                s = " (exit " + std::to_string(WEXITSTATUS(status_));
            else if (WIFSIGNALED(status_))
                s = std::string(" (killed by signal ") + strsignal(WTERMSIG(status_));
            else
                s = " (ended";
            const std::string tail = last_lines(read_text(errFile_), 2);
            if (!tail.empty()) s += "; " + one_line(tail);
            s += ")";
        }
        return s;
    }

    const Options *o_ = nullptr;
    fs::path errFile_;
    pid_t pid_ = -1;
    FILE *to_ = nullptr;
    FILE *from_ = nullptr;
    int status_ = 0;
    bool exited_ = false;
};

// ---------------------------------------------------------------------------------------------
// output

void print_table(std::ostream &os, const std::vector<Result> &results, const Roofline &roof, const TorchInfo &torch,
                 const Options &o, const std::map<std::string, std::string> &socs) {
    if (!o.noTorch) {
        if (torch.available)
            os << "peer: PyTorch " << torch.version << " (" << o.python << ", " << threads_str(torch.threads)
               << "), each case right after ours, same repetitions\n";
        else
            os << "peer: PyTorch n/a - " << torch.reason << "\n";
    } else {
        os << "peer: PyTorch skipped (--no-torch)\n";
    }
    os << "products:";
    for (const auto &[p, s] : socs) os << " " << p << (s.empty() ? "" : " (" + s + ")");
    os << "\n\n";

    const std::vector<std::string> head = {"operator", "case",   "dtype",  "product",  "ws",      "min ms",
                                           "med ms",   "rate",   "%limit", "torch ms", "speedup"};
    const std::vector<bool> right = {false, false, false, false, true, true, true, true, true, true, true};
    std::vector<std::vector<std::string>> rows;
    for (const Result &r : results) {
        const Case &c = *r.c;
        std::string cs = c.shape + (c.variant.empty() ? "" : "/" + c.variant);
        if (r.status != "ok") {
            rows.push_back({c.op, cs, dtype_name(c.dtype), c.product, "-", r.status, "-", "-", "-", "-", "-"});
            continue;
        }
        std::string torchMs = "n/a", speed = "n/a";
        if (r.torchStatus == "ok") {
            torchMs = fmt_ms(r.torch_median());
            speed = fmt(r.speedup(), 2) + "x";
        }
        const double pct = pct_of_limit(r, roof);
        rows.push_back({c.op, cs, dtype_name(c.dtype), c.product, fmt_bytes(r.workspace), fmt_ms(r.min()),
                        fmt_ms(r.median()), fmt(r.rate(), 2) + " " + rate_unit(c),
                        std::isfinite(pct) ? fmt(pct, 1) + "%" : "-", torchMs, speed});
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
    os << "\nmin/med ms: min and median of " << o.reps << " timed runs (after " << o.warmup
       << " warm-up), phase 2 + stream sync; ws: workspace bytes\n"
          "rate: bytes (inputs read + outputs written) or FLOPs per min time; %limit: of the copy bandwidth\n"
          "(GB/s rows) or FMA peak (GFLOP/s rows) measured above; speedup = PyTorch median / our median\n";
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
}

std::string roofline_line(const Roofline &roof) {
    std::ostringstream os;
    os << "roofline: copy " << fmt(roof.copyGBps, 1) << " GB/s (best of memcpy " << fmt(roof.memcpyGBps, 1)
       << " and streaming copy " << fmt(roof.streamGBps, 1) << "; " << roof.copyBytes / (1024 * 1024)
       << " MiB read+write, " << threads_str(roof.threads) << ", best of " << roof.copyReps << ", median "
       << fmt(roof.copyGBpsMedian, 1) << ")  |  FP32 FMA ";
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
      << ", \"loadavg_at_start\": " << json_str(loadStart) << ", \"loadavg_at_end\": " << json_str(load_average()) << "},\n  \"options\": {\"reps\": " << o.reps << ", \"warmup\": " << o.warmup << ", \"threads\": " << o.threads
      << ", \"quick\": " << (o.quick ? "true" : "false") << ", \"filters\": [";
    for (size_t i = 0; i < o.filters.size(); ++i) f << (i ? ", " : "") << json_str(o.filters[i]);
    f << "]},\n  \"roofline\": ";
    if (roof.measured)
        f << "{\"threads\": " << roof.threads << ", \"copy_bytes\": " << roof.copyBytes << ", \"copy_reps\": "
          << roof.copyReps << ", \"copy_gbps\": " << json_num(roof.copyGBps) << ", \"memcpy_gbps\": " << json_num(roof.memcpyGBps)
          << ", \"stream_copy_gbps\": " << json_num(roof.streamGBps) << ", \"copy_gbps_median\": "
          << json_num(roof.copyGBpsMedian) << ", \"fma_isa\": " << json_str(roof.fmaIsa)
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
          << ", \"reps\": " << r.ms.size() << ", \"min_ms\": " << json_num(r.min())
          << ", \"median_ms\": " << json_num(r.median()) << ", \"times_ms\": " << json_times(r.ms)
          << ", \"rate\": " << json_num(r.rate()) << ", \"rate_unit\": " << json_str(rate_unit(c))
          << ", \"pct_of_limit\": " << json_num(pct_of_limit(r, roof)) << ", \"torch\": ";
        if (r.torchStatus == "ok")
            f << "{\"status\": \"ok\", \"min_ms\": " << json_num(min_of(r.torchMs)) << ", \"median_ms\": "
              << json_num(r.torch_median()) << ", \"times_ms\": " << json_times(r.torchMs) << "}";
        else
            f << "{\"status\": " << json_str(r.torchStatus) << ", \"message\": " << json_str(r.torchMessage) << "}";
        f << ", \"speedup\": " << json_num(r.speedup()) << "}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    if (!f) std::cerr << "aclnn-cpu-bench: could not write " << path << "\n";
}

void write_csv(const std::string &path, const std::vector<Result> &results, const Roofline &roof) {
    std::ofstream f(path);
    f << "id,op,shape,variant,dtype,product,status,workspace_bytes,reps,min_ms,median_ms,metric,work,rate,rate_unit,"
         "pct_of_limit,torch_status,torch_min_ms,torch_median_ms,speedup,message\n";
    auto num = [](double v) { return std::isfinite(v) ? json_num(v) : std::string(); };
    for (const Result &r : results) {
        const Case &c = *r.c;
        f << csv_field(c.id()) << "," << csv_field(c.op) << "," << csv_field(c.shape) << "," << csv_field(c.variant)
          << "," << dtype_name(c.dtype) << "," << csv_field(c.product) << "," << r.status << "," << r.workspace << ","
          << r.ms.size() << "," << num(r.min()) << "," << num(r.median()) << ","
          << (c.work.metric == Metric::Bytes ? "bytes" : "flops") << "," << num(c.work.amount) << ","
          << num(r.rate()) << "," << rate_unit(c) << "," << num(pct_of_limit(r, roof)) << "," << r.torchStatus << ","
          << num(min_of(r.torchMs)) << "," << num(r.torch_median()) << "," << num(r.speedup()) << ","
          << csv_field(r.status == "ok" ? r.torchMessage : r.message) << "\n";
    }
    if (!f) std::cerr << "aclnn-cpu-bench: could not write " << path << "\n";
}

// ---------------------------------------------------------------------------------------------

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "aclnn-cpu-bench.XXXXXX").string();
        if (!mkdtemp(tmpl.data())) {
            std::cerr << "aclnn-cpu-bench: mkdtemp failed: " << std::strerror(errno) << "\n";
            std::exit(1);
        }
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

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
              << " cpus)  threads=" << o.threads << " reps=" << o.reps << " warmup=" << o.warmup
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
    auto compare = [&peer](Result &r) { peer.time_case(r); };

    // products in order of first appearance; the first runs here, the others in child processes
    std::vector<std::string> products;
    for (const Result &r : results)
        if (std::find(products.begin(), products.end(), r.c->product) == products.end())
            products.push_back(r.c->product);
    std::map<std::string, std::string> socs;
    for (size_t i = 0; i < products.size(); ++i) {
        std::vector<Result *> rs;
        for (Result &r : results)
            if (r.c->product == products[i]) rs.push_back(&r);
        if (i == 0) {
            socs[products[i]] = run_in_process(products[i], rs, o, tmp.path, counter, results.size(), compare);
        } else {
            socs[products[i]] = run_in_child(products[i], rs, o, tmp.path, counter, results.size());
            for (Result *r : rs) compare(*r);
        }
    }
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
