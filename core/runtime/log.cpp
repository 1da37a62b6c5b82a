#include "log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace aclcpu {
namespace {

thread_local std::string t_recent;  // unread error of this thread
thread_local std::string t_handed;  // the string last returned by aclGetRecentErrMsg (stays valid until the next call)
thread_local bool t_has_recent = false;

std::atomic<int> g_config_level{static_cast<int>(LogLevel::Error)};

int effective_level() {
    if (const char *env = std::getenv("ASCEND_GLOBAL_LOG_LEVEL")) {
        char *end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end != env && v >= 0 && v <= 4) return static_cast<int>(v);
    }
    return g_config_level.load(std::memory_order_relaxed);
}

const char *level_name(LogLevel l) {
    switch (l) {
        case LogLevel::Debug: return "DEBUG";
        case LogLevel::Info: return "INFO";
        case LogLevel::Warning: return "WARNING";
        default: return "ERROR";
    }
}

}  // namespace

int set_error(int code, const std::string &message) {
    // One line, whatever the message quotes (a config value may hold a newline).
    t_recent = message;
    for (char &c : t_recent)
        if (c == '\n' || c == '\r') c = ' ';
    t_has_recent = true;
    // A rejected argument (161xxx) is the caller's error and already reaches it as a status and
    // message: log it as a warning. aclrtProcessReport's timeout and "no subscription" are what a
    // polling loop sees most of the time: info, as CANN logs them. Other failures are errors.
    const bool caller_error = code / 1000 == 161;
    const bool polling = code == ACL_ERROR_RT_REPORT_TIMEOUT || code == ACL_ERROR_RT_THREAD_SUBSCRIBE;
    log(caller_error ? LogLevel::Warning : polling ? LogLevel::Info : LogLevel::Error,
        t_recent + " (status " + std::to_string(code) + ")");
    return code;
}

void clear_error() {
    t_recent.clear();
    t_has_recent = false;
}

bool log_enabled(LogLevel level) {
    return level != LogLevel::None && static_cast<int>(level) >= effective_level();
}

namespace {
std::mutex g_stderr;  // one writer at a time: lines of concurrent callers never interleave
}  // namespace

void log(LogLevel level, const std::string &message) {
    if (!log_enabled(level)) return;
    std::lock_guard<std::mutex> lock(g_stderr);
    std::fprintf(stderr, "[aclnn-cpu %s] %s\n", level_name(level), message.c_str());
}

void log_timeline(const std::vector<std::string> &lines) {
    std::lock_guard<std::mutex> lock(g_stderr);
    for (const auto &l : lines) std::fprintf(stderr, "[aclnn-cpu TIMELINE] %s\n", l.c_str());
}

void set_config_log_level(int level) {
    if (level >= 0 && level <= 4) g_config_level.store(level, std::memory_order_relaxed);
}

}  // namespace aclcpu

extern "C" ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void) {
    using namespace aclcpu;
    if (!t_has_recent) return nullptr;
    t_handed.swap(t_recent);
    clear_error();
    return t_handed.c_str();
}
