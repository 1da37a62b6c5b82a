// aclnn-cpu-bench: child processes and the run's temporary directory.
#ifndef ACLNN_CPU_BENCH_PROCESS_HPP_
#define ACLNN_CPU_BENCH_PROCESS_HPP_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace bench {

// The argv and envp arrays of posix_spawn: the caller's environment with `overrides` replacing
// (or adding) entries. Pins its strings, so it is neither copied nor moved.
class SpawnArgs {
public:
    SpawnArgs(const std::vector<std::string> &args, const std::map<std::string, std::string> &overrides);
    SpawnArgs(const SpawnArgs &) = delete;
    SpawnArgs &operator=(const SpawnArgs &) = delete;
    char *const *argv() const { return argv_.data(); }
    char *const *envp() const { return envp_.data(); }

private:
    std::vector<std::string> args_, env_;
    std::vector<char *> argv_, envp_;
};

// Spawns argv (argv[0] = executable path) with optional stdout/stderr redirection to files and extra
// environment entries; waits. Returns the exit status, or 128 + signal, or -1 if it could not start.
int spawn_wait(const std::vector<std::string> &args, const std::string &outFile, const std::string &errFile,
               const std::map<std::string, std::string> &extraEnv, std::string &why);

// This binary's path, for starting it again as a child.
std::string self_exe();

// A fresh directory under $TMPDIR (exits with status 1 if it cannot be made), removed with its contents.
struct TempDir {
    std::filesystem::path path;
    TempDir();
    ~TempDir();
};

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_PROCESS_HPP_
