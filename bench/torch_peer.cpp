// aclnn-cpu-bench: the C++ side of the PyTorch peer (the Python side is torch_peer.py, embedded).
#include "torch_peer.hpp"

#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "format.hpp"
#include "torch_peer_script.hpp"


namespace bench {

namespace {

namespace fs = std::filesystem;

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

}  // namespace

void TorchPeer::start(const Options &o, const fs::path &tmp) {
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
    const SpawnArgs sa({o.python, script.string(), th}, {{"OMP_NUM_THREADS", th}, {"MKL_NUM_THREADS", th}});

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errFile_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, sa.argv()[0], &fa, nullptr, sa.argv(), sa.envp());
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

void TorchPeer::time_case(Result &r) {
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
    std::cerr << "[PyTorch] " << c.id() << "  ";
    if (r.torchStatus == "ok")
        std::cerr << "min " << fmt_ms(min_of(r.torchMs)) << " ms  median " << fmt_ms(r.torch_median()) << " ms\n";
    else
        std::cerr << "n/a: " << r.torchMessage << "\n";
}

void TorchPeer::stop() {
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

bool TorchPeer::read_line(std::string &line) {
    char *buf = nullptr;
    size_t cap = 0;
    const ssize_t n = from_ ? getline(&buf, &cap, from_) : -1;
    if (n > 0) line.assign(buf, static_cast<size_t>(n));
    std::free(buf);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return n > 0;
}

std::string TorchPeer::end_reason() {
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

}  // namespace bench
