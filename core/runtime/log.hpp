// The runtime's one mechanism for error reporting: the thread-local recent-error message that
// aclGetRecentErrMsg() returns, and leveled stderr logging (ASCEND_GLOBAL_LOG_LEVEL).
#pragma once

#include <string>
#include <vector>

#include "acl/acl_base.h"

namespace aclcpu {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3, None = 4 };

// Records `message` as this thread's most recent error (replacing any unread one) and logs it
// (warning level for rejected arguments, 161xxx; error level otherwise). Returns `code` so callers can write `return set_error(code, msg);`.
ACL_FUNC_VISIBILITY int set_error(int code, const std::string &message);
// Forgets this thread's unread error message.
ACL_FUNC_VISIBILITY void clear_error();

ACL_FUNC_VISIBILITY bool log_enabled(LogLevel level);
ACL_FUNC_VISIBILITY void log(LogLevel level, const std::string &message);
// Timeline lines (RuntimeState::timeline): to stderr at any log level, one block at a time.
ACL_FUNC_VISIBILITY void log_timeline(const std::vector<std::string> &lines);
// Level from the config file; ASCEND_GLOBAL_LOG_LEVEL, when set, wins.
ACL_FUNC_VISIBILITY void set_config_log_level(int level);

}  // namespace aclcpu
