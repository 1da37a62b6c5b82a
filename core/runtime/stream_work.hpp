// What the runtime's API files share: their argument errors, stale handles, and work submitted to
// a stream (runtime_api.cpp defines them).
#pragma once

#include <string>

#include "acl/acl_base.h"

namespace aclcpu {

// "fn: what" as ACL_ERROR_INVALID_PARAM: an argument the acl layer rejects (NULL, zero size, ...).
aclError bad_param(const char *fn, const std::string &what);
// "fn: what" as ACL_ERROR_RT_PARAM_INVALID: a value CANN's runtime layer rejects (flags, option values).
aclError bad_value(const char *fn, const std::string &what);
// "fn: what" as ACL_ERROR_RT_FEATURE_NOT_SUPPORT: a valid call on an object that does not support it
// (waiting for an event made without ACL_EVENT_SYNC, ...).
aclError unsupported(const char *fn, const std::string &what);
// A stream or event handle that no create call made, or that was destroyed:
// "fn: not a live <kind>" as ACL_ERROR_RT_INVALID_HANDLE.
aclError stale_handle(const char *fn, const char *kind);
// Work submitted to `stream` (NULL: the default stream): the stream must be live, and the work
// takes its turn after the stream's blocking host callbacks (callbacks.cpp).
aclError submit_to(const char *fn, aclrtStream stream);

}  // namespace aclcpu
