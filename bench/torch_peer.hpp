// aclnn-cpu-bench: the C++ side of the PyTorch peer (the Python side is torch_peer.py, embedded).
#ifndef ACLNN_CPU_BENCH_TORCH_PEER_HPP_
#define ACLNN_CPU_BENCH_TORCH_PEER_HPP_

#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "options.hpp"
#include "result.hpp"

namespace bench {

struct TorchInfo {
    bool available = false;
    std::string version;
    int threads = 0;
    std::string reason;  // when unavailable
};

// The PyTorch peer: one python process for the whole run, asked to time each case (one JSON line
// in, one line out) once all of ours are timed - see bench/main.cpp.
class TorchPeer {
public:
    ~TorchPeer() { stop(); }

    // Starts the interpreter and waits until torch is imported (so the import never overlaps our timing).
    void start(const Options &o, const std::filesystem::path &tmp);

    bool alive() const { return info.available && pid_ > 0; }

    // Times r's case in PyTorch (same dtype, repetitions, warm-up and threads); fills r.torch*.
    void time_case(Result &r);

    void stop();

    TorchInfo info;

private:
    bool read_line(std::string &line);

    // " (exit 1; <last stderr lines>)" once the process is gone
    std::string end_reason();

    const Options *o_ = nullptr;
    std::filesystem::path errFile_;
    pid_t pid_ = -1;
    FILE *to_ = nullptr;
    FILE *from_ = nullptr;
    int status_ = 0;
    bool exited_ = false;
};

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_TORCH_PEER_HPP_
