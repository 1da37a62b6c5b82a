// Host callbacks on streams, as CANN runs them: a thread subscribes to a stream
// (aclrtSubscribeReport), callbacks launched on the stream (aclrtLaunchCallback) queue up, and the
// subscribed thread runs them in launch order from aclrtProcessReport. Work here runs when it is
// submitted, so the queue is the only thing on a stream that can be pending: work submitted after
// an ACL_CALLBACK_BLOCK callback, and every synchronization, waits for the callbacks before it.
#include "callbacks.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "context.hpp"
#include "log.hpp"
#include "stream_work.hpp"

namespace {

struct Pending {
    aclrtCallback fn;
    void *user_data;
    bool blocking;
};

struct Subscription {
    uint64_t thread = 0;          // the thread that runs the stream's callbacks
    std::deque<Pending> queue;    // launched, not yet started
    int running = 0;              // started, not yet returned (0 or 1: one thread runs them)
    int blocking_unfinished = 0;  // ACL_CALLBACK_BLOCK ones, queued or running
};

struct Callbacks {
    std::mutex m;
    std::condition_variable changed;  // a callback launched or finished, or a subscription ended
    std::map<const void *, Subscription> streams;
    // streams.size(), readable without the lock: with no subscription (the usual program) the
    // waits of every operator run and copy cost one load, not the lock.
    std::atomic<size_t> subscribed{0};
};

Callbacks &callbacks() {
    static auto *c = new Callbacks;  // never destroyed: callbacks may run during static destruction
    return *c;
}

uint64_t this_thread_id() { return static_cast<uint64_t>(pthread_self()); }

aclError fail(aclError code, const char *fn, const std::string &what) {
    return aclcpu::set_error(code, std::string(fn) + ": " + what);
}

bool idle(const Subscription &s, bool blocking_only) {
    return blocking_only ? s.blocking_unfinished == 0 : s.queue.empty() && s.running == 0;
}

// Runs the front callback of `s` with the lock released; `lock` is held again on return.
void run_front(std::unique_lock<std::mutex> &lock, const void *stream) {
    auto &c = callbacks();
    Subscription &s = c.streams.at(stream);
    const Pending p = s.queue.front();
    s.queue.pop_front();
    ++s.running;
    lock.unlock();
    p.fn(p.user_data);
    lock.lock();
    // The stream may have been destroyed while its callback ran.
    if (auto it = c.streams.find(stream); it != c.streams.end()) {
        --it->second.running;
        if (p.blocking) --it->second.blocking_unfinished;
    }
    c.changed.notify_all();
}

}  // namespace

namespace aclcpu {

// The subscribed thread itself never waits for its own callbacks (nobody else would run them): it
// runs them here, in order, as CANN's device would have run them before the waiting work.
ACL_FUNC_VISIBILITY bool wait_for_callbacks(const void *stream, bool blocking_only, int32_t timeout_ms) {
    auto &c = callbacks();
    if (c.subscribed.load(std::memory_order_acquire) == 0) return true;
    const uint64_t self = this_thread_id();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    std::unique_lock<std::mutex> lock(c.m);
    while (true) {
        auto it = c.streams.find(stream);
        if (it == c.streams.end() || idle(it->second, blocking_only)) return true;
        if (it->second.thread == self && !it->second.queue.empty()) {
            run_front(lock, stream);
        } else if (timeout_ms < 0) {
            c.changed.wait(lock);
        } else if (c.changed.wait_until(lock, deadline) == std::cv_status::timeout) {
            it = c.streams.find(stream);
            return it == c.streams.end() || idle(it->second, blocking_only);
        }
    }
}

ACL_FUNC_VISIBILITY void wait_for_all_callbacks() {
    std::vector<const void *> subscribed;
    {
        auto &c = callbacks();
        std::lock_guard<std::mutex> lock(c.m);
        for (const auto &entry : c.streams) subscribed.push_back(entry.first);
    }
    for (const void *stream : subscribed) wait_for_callbacks(stream, false);
}

ACL_FUNC_VISIBILITY void forget_stream_callbacks(const void *stream) {
    auto &c = callbacks();
    std::lock_guard<std::mutex> lock(c.m);
    if (c.streams.erase(stream)) {
        c.subscribed.store(c.streams.size(), std::memory_order_release);
        c.changed.notify_all();
    }
}

}  // namespace aclcpu

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
    if (!aclcpu::stream_is_live(stream)) return aclcpu::stale_handle("aclrtSubscribeReport", "stream");
    auto &c = callbacks();
    std::lock_guard<std::mutex> lock(c.m);
    auto [it, added] = c.streams.try_emplace(stream);
    if (!added)
        return fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, "aclrtSubscribeReport",
                    "the stream is already subscribed by thread " + std::to_string(it->second.thread));
    it->second.thread = threadId;
    c.subscribed.store(c.streams.size(), std::memory_order_release);
    return ACL_SUCCESS;
}

// Callbacks still pending run here, on the caller's thread, so none is lost and nobody waits forever.
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
    auto &c = callbacks();
    std::unique_lock<std::mutex> lock(c.m);
    auto it = c.streams.find(stream);
    if (it == c.streams.end())
        return fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, "aclrtUnSubscribeReport", "the stream is not subscribed");
    if (it->second.thread != threadId)
        return fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, "aclrtUnSubscribeReport",
                    "the stream is subscribed by thread " + std::to_string(it->second.thread) + ", not by thread " +
                        std::to_string(threadId));
    while (true) {
        it = c.streams.find(stream);
        if (it == c.streams.end()) break;
        if (!it->second.queue.empty()) {
            run_front(lock, stream);
        } else if (it->second.running) {
            c.changed.wait(lock);  // the subscribed thread is still inside one
        } else {
            c.streams.erase(it);
            c.subscribed.store(c.streams.size(), std::memory_order_release);
            break;
        }
    }
    c.changed.notify_all();
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                                 aclrtStream stream) {
    if (!fn) return fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchCallback", "fn must not be NULL");
    if (blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchCallback",
                    "blockType must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK (1), got " +
                        std::to_string(static_cast<int>(blockType)));
    if (!aclcpu::stream_is_live(stream)) return aclcpu::stale_handle("aclrtLaunchCallback", "stream");
    auto &c = callbacks();
    std::lock_guard<std::mutex> lock(c.m);
    auto it = c.streams.find(stream);
    if (it == c.streams.end())
        return fail(ACL_ERROR_RT_STREAM_NO_CB_REG, "aclrtLaunchCallback",
                    "no thread subscribed to the stream (call aclrtSubscribeReport first)");
    const bool blocking = blockType == ACL_CALLBACK_BLOCK;
    it->second.queue.push_back({fn, userData, blocking});
    if (blocking) ++it->second.blocking_unfinished;
    c.changed.notify_all();
    return ACL_SUCCESS;
}

// CANN runs the function on a thread of its own when the stream reaches it, and holds the stream's
// later work until it returns. Here the stream has reached it once its blocking callbacks have run,
// and the function runs then, on the caller's thread, before the call returns.
ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
    if (!fn) return fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostFunc", "fn must not be NULL");
    if (!aclcpu::stream_is_live(stream)) return aclcpu::stale_handle("aclrtLaunchHostFunc", "stream");
    aclcpu::wait_for_callbacks(stream, true);
    fn(args);
    return ACL_SUCCESS;
}

// Runs the oldest pending callback of the streams this thread subscribed to, waiting up to
// `timeout` ms (-1: no limit) for one to be launched.
ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout) {
    if (timeout < -1 || timeout == 0)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtProcessReport",
                    "timeout must be -1 (no limit) or > 0 ms, got " + std::to_string(timeout));
    const uint64_t self = this_thread_id();
    auto &c = callbacks();
    std::unique_lock<std::mutex> lock(c.m);
    const void *ready = nullptr;  // (NULL is the default stream: `found` says whether there is one)
    bool found = false, subscribed = false;
    const auto find_ready = [&] {
        subscribed = false;
        for (const auto &[stream, s] : c.streams) {
            if (s.thread != self) continue;
            subscribed = true;
            if (!s.queue.empty()) {
                ready = stream;
                found = true;
                return true;
            }
        }
        return !subscribed;  // stop waiting once nothing is subscribed to this thread
    };
    if (!find_ready()) {
        if (timeout < 0) c.changed.wait(lock, find_ready);
        else c.changed.wait_for(lock, std::chrono::milliseconds(timeout), find_ready);
    }
    if (!found) {
        if (!subscribed)
            return fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, "aclrtProcessReport",
                        "this thread is subscribed to no stream (aclrtSubscribeReport)");
        return fail(ACL_ERROR_RT_REPORT_TIMEOUT, "aclrtProcessReport",
                    "no callback was launched within " + std::to_string(timeout) + " ms");
    }
    run_front(lock, ready);
    return ACL_SUCCESS;
}

}  // extern "C"
