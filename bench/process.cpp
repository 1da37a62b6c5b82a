// aclnn-cpu-bench: child processes and the run's temporary directory.
#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

extern char **environ;

namespace bench {

namespace fs = std::filesystem;

SpawnArgs::SpawnArgs(const std::vector<std::string> &args, const std::map<std::string, std::string> &overrides)
    : args_(args) {
    for (char **e = environ; e && *e; ++e) {
        const std::string kv = *e;
        if (!overrides.count(kv.substr(0, kv.find('=')))) env_.push_back(kv);
    }
    for (const auto &[k, v] : overrides) env_.push_back(k + "=" + v);
    for (std::string &a : args_) argv_.push_back(a.data());
    argv_.push_back(nullptr);
    for (std::string &kv : env_) envp_.push_back(kv.data());
    envp_.push_back(nullptr);
}

int spawn_wait(const std::vector<std::string> &args, const std::string &outFile, const std::string &errFile,
               const std::map<std::string, std::string> &extraEnv, std::string &why) {
    const SpawnArgs sa(args, extraEnv);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!outFile.empty())
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, outFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!errFile.empty())
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, sa.argv()[0], &fa, nullptr, sa.argv(), sa.envp());
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

TempDir::TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "aclnn-cpu-bench.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
        std::cerr << "aclnn-cpu-bench: mkdtemp failed: " << std::strerror(errno) << "\n";
        std::exit(1);
    }
    path = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

}  // namespace bench
