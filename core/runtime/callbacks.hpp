// Host callbacks on streams (aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport): the
// pending callbacks of each subscribed stream, which the runtime's other calls wait for.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace aclcpu {

// Blocks until the callbacks launched on `stream` have run: only the ACL_CALLBACK_BLOCK ones when
// `blocking_only` (what work submitted after them waits for), else all of them (synchronization).
// timeout_ms -1: no limit. False on timeout.
ACL_FUNC_VISIBILITY bool wait_for_callbacks(const void *stream, bool blocking_only, int32_t timeout_ms = -1);
// Every subscribed stream (aclrtSynchronizeDevice).
ACL_FUNC_VISIBILITY void wait_for_all_callbacks();
// A destroyed stream's subscription ends; callbacks still pending on it are dropped.
ACL_FUNC_VISIBILITY void forget_stream_callbacks(const void *stream);

}  // namespace aclcpu
