// Events of acl/acl_rt.h on synchronous streams. Recording an event is work on its stream, done at
// once: from then on the event is complete, and its timestamp (the steady clock when the stream
// reached it) times the work submitted between two records. Each kind of event takes only the
// calls CANN's runtime allows it, with the runtime's status codes: a flag it rejects is
// ACL_ERROR_RT_PARAM_INVALID, a call the event's kind does not support ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acl/acl.h"
#include "log.hpp"
#include "stream_work.hpp"

namespace {

using aclcpu::bad_param;

// Which call made the event: it decides what else may use the event.
enum class Maker { CreateEvent, WithFlag, ExWithFlag };

struct Event {
    Maker maker;
    uint32_t flags;
    bool recorded = false;
    int64_t stamp_ns = 0;
};

constexpr uint32_t kKnownFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                                 ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC;
// The flags that give an event a wait task in CANN's runtime: such events can be waited for and reset.
constexpr uint32_t kWaitable = ACL_EVENT_SYNC | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC;

const char *maker_name(Maker m) {
    switch (m) {
        case Maker::CreateEvent: return "aclrtCreateEvent";
        case Maker::WithFlag: return "aclrtCreateEventWithFlag";
        case Maker::ExWithFlag: return "aclrtCreateEventExWithFlag";
    }
    return "?";
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The live events; a handle is its Event's address.
class EventTable {
public:
    aclrtEvent create(Maker maker, uint32_t flags) {
        auto e = std::make_unique<Event>(Event{maker, flags});
        aclrtEvent handle = e.get();
        std::lock_guard<std::mutex> lock(m_);
        live_.emplace(handle, std::move(e));
        return handle;
    }
    bool destroy(aclrtEvent h) {
        std::lock_guard<std::mutex> lock(m_);
        return live_.erase(h) != 0;
    }
    // A copy of the event's state, or false when `h` is not live.
    bool read(aclrtEvent h, Event *out) {
        std::lock_guard<std::mutex> lock(m_);
        const auto it = live_.find(h);
        if (it == live_.end()) return false;
        *out = *it->second;
        return true;
    }
    // Sets the record state (and the timestamp when recorded); false when `h` is not live.
    bool mark(aclrtEvent h, bool recorded) {
        const int64_t stamp = now_ns();
        std::lock_guard<std::mutex> lock(m_);
        const auto it = live_.find(h);
        if (it == live_.end()) return false;
        it->second->recorded = recorded;
        if (recorded) it->second->stamp_ns = stamp;
        return true;
    }

private:
    std::mutex m_;
    std::unordered_map<aclrtEvent, std::unique_ptr<Event>> live_;
};

EventTable &events() {
    static auto *t = new EventTable;  // never destroyed: handles may be released during static destruction
    return *t;
}

// Looks `event` up for `fn`; `what` names the argument in messages.
aclError lookup(const char *fn, aclrtEvent event, Event *out, const char *what = "event") {
    if (!event) return bad_param(fn, std::string(what) + " must not be NULL");
    if (!events().read(event, out)) return aclcpu::stale_handle(fn, what);
    return ACL_SUCCESS;
}

std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

// CANN's rule on which events a call takes: the event needs a wait task (ACL_EVENT_SYNC; an
// aclrtCreateEvent event has it) and, when `ex_allowed` is false, must not come from
// aclrtCreateEventExWithFlag.
aclError needs_sync(const char *fn, const Event &e, bool ex_allowed) {
    if (!ex_allowed && e.maker == Maker::ExWithFlag)
        return aclcpu::unsupported(fn, "the event was made by aclrtCreateEventExWithFlag, which this call does not take");
    if (!(e.flags & kWaitable))
        return aclcpu::unsupported(fn, std::string("the event was made by ") + maker_name(e.maker) +
                                           " without ACL_EVENT_SYNC (flag " + hex(e.flags) + "), which this call needs");
    return ACL_SUCCESS;
}

aclError create_with_flag(const char *fn, aclrtEvent *event, uint32_t flag, Maker maker) {
    if (!event) return bad_param(fn, "event must not be NULL");
    if (flag == 0 || (flag & ~kKnownFlags))
        return aclcpu::bad_value(fn, "flag must combine ACL_EVENT_SYNC (0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), "
                                     "ACL_EVENT_TIME_LINE (0x8), ACL_EVENT_DEVICE_USE_ONLY (0x10), ACL_EVENT_EXTERNAL "
                                     "(0x20) or ACL_EVENT_IPC (0x40), got " + hex(flag));
    if ((flag & ACL_EVENT_EXTERNAL) && flag != ACL_EVENT_EXTERNAL)
        return aclcpu::bad_value(fn, "ACL_EVENT_EXTERNAL (0x20) takes no other flag, got " + hex(flag));
    *event = events().create(maker, flag);
    return ACL_SUCCESS;
}

// The timestamp of a recorded, timestamped event for aclrtEventElapsedTime.
aclError stamp_of(aclrtEvent event, const char *what, int64_t *stamp) {
    constexpr const char *fn = "aclrtEventElapsedTime";
    Event e{};
    if (const aclError err = lookup(fn, event, &e, what)) return err;
    if (!(e.flags & ACL_EVENT_TIME_LINE))
        return bad_param(fn, std::string(what) + " was made by " + maker_name(e.maker) +
                                 " without ACL_EVENT_TIME_LINE (flag " + hex(e.flags) + "), so it has no timestamp");
    if (!e.recorded)
        return aclcpu::set_error(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                                 std::string(fn) + ": " + what + " has not been recorded (aclrtRecordEvent)");
    *stamp = e.stamp_ns;
    return ACL_SUCCESS;
}

}  // namespace

extern "C" {

// What aclrtCreateEvent makes can be waited for, reset and timed (CANN: "used to compute the
// elapsed time between two events and synchronize streams"; its runtime flag includes a wait task).
ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event) {
    if (!event) return bad_param("aclrtCreateEvent", "event must not be NULL");
    *event = events().create(Maker::CreateEvent, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_with_flag("aclrtCreateEventWithFlag", event, flag, Maker::WithFlag);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_with_flag("aclrtCreateEventExWithFlag", event, flag, Maker::ExWithFlag);
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event) {
    if (!event) return bad_param("aclrtDestroyEvent", "event must not be NULL");
    if (!events().destroy(event)) return aclcpu::stale_handle("aclrtDestroyEvent", "event");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    constexpr const char *fn = "aclrtRecordEvent";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (const aclError err = aclcpu::submit_to(fn, stream)) return err;
    if (!events().mark(event, true)) return aclcpu::stale_handle(fn, "event");  // destroyed meanwhile
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    constexpr const char *fn = "aclrtResetEvent";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (const aclError err = needs_sync(fn, e, /*ex_allowed=*/false)) return err;
    if (const aclError err = aclcpu::submit_to(fn, stream)) return err;
    if (!events().mark(event, false)) return aclcpu::stale_handle(fn, "event");
    return ACL_SUCCESS;
}

// Everything recorded has completed, so waiting only has to take its turn on the stream.
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    constexpr const char *fn = "aclrtStreamWaitEvent";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (const aclError err = needs_sync(fn, e, /*ex_allowed=*/true)) return err;
    return aclcpu::submit_to(fn, stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event) {
    Event e{};
    return lookup("aclrtSynchronizeEvent", event, &e);
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
    constexpr const char *fn = "aclrtQueryEvent";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (e.maker == Maker::ExWithFlag)
        return aclcpu::unsupported(fn, "the event was made by aclrtCreateEventExWithFlag, which this call does not "
                                       "take; use aclrtQueryEventStatus");
    if (!status) return bad_param(fn, "status must not be NULL");
    *status = e.recorded ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

// CANN: NOT_READY while an event has not been recorded, except that an aclrtCreateEventExWithFlag
// event holds no task before its first record and so reads COMPLETE.
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    constexpr const char *fn = "aclrtQueryEventStatus";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (!status) return bad_param(fn, "status must not be NULL");
    const bool complete = e.recorded || e.maker == Maker::ExWithFlag;
    *status = complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status) {
    constexpr const char *fn = "aclrtQueryEventWaitStatus";
    Event e{};
    if (const aclError err = lookup(fn, event, &e)) return err;
    if (const aclError err = needs_sync(fn, e, /*ex_allowed=*/false)) return err;
    if (!status) return bad_param(fn, "status must not be NULL");
    *status = e.recorded ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    constexpr const char *fn = "aclrtEventElapsedTime";
    if (!ms) return bad_param(fn, "ms must not be NULL");
    int64_t start = 0, end = 0;
    if (const aclError err = stamp_of(startEvent, "startEvent", &start)) return err;
    if (const aclError err = stamp_of(endEvent, "endEvent", &end)) return err;
    if (end < start)
        return aclcpu::set_error(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
                                 std::string(fn) + ": endEvent was recorded before startEvent (" +
                                     std::to_string(start - end) + " ns earlier)");
    *ms = static_cast<float>(static_cast<double>(end - start) / 1e6);
    return ACL_SUCCESS;
}

}  // extern "C"
