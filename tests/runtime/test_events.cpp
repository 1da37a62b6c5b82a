// Events (acl_rt.h): timing with aclrtEventElapsedTime, the status queries, reset, and CANN's rules
// on which kind of event each call takes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

class EventTest : public coretest::StreamTest {
protected:
    // An event made by aclrtCreateEventWithFlag (ex: ...ExWithFlag); destroyed by the test.
    aclrtEvent flagged(uint32_t flag, bool ex = false) {
        aclrtEvent e = nullptr;
        const aclError rc = ex ? aclrtCreateEventExWithFlag(&e, flag) : aclrtCreateEventWithFlag(&e, flag);
        EXPECT_EQ(rc, ACL_SUCCESS) << takeErr();
        return e;
    }
};

// The sample pattern: record, work, record, synchronize, elapsed time.
TEST_F(EventTest, ElapsedTimeSpansTheWorkBetweenTwoRecords) {
    aclrtEvent start = nullptr, end = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&end), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(start, stream_), ACL_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ASSERT_EQ(aclrtRecordEvent(end, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    float ms = -1.0f;
    ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS) << takeErr();
    EXPECT_GE(ms, 30.0f);
    EXPECT_LT(ms, 30000.0f) << "milliseconds, not nanoseconds";
    float same = -1.0f;
    ASSERT_EQ(aclrtEventElapsedTime(&same, start, start), ACL_SUCCESS);
    EXPECT_EQ(same, 0.0f);
    EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
}

TEST_F(EventTest, RecordingAgainMovesTheTimestamp) {
    aclrtEvent start = flagged(ACL_EVENT_TIME_LINE), end = flagged(ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC);
    ASSERT_EQ(aclrtRecordEvent(start, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(end, nullptr), ACL_SUCCESS) << "the default stream";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(aclrtRecordEvent(start, stream_), ACL_SUCCESS);
    float ms = 0.0f;
    EXPECT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtEventElapsedTime: endEvent was recorded before startEvent"), std::string::npos) << msg;
    EXPECT_EQ(ms, 0.0f) << "nothing written on failure";
    ASSERT_EQ(aclrtEventElapsedTime(&ms, end, start), ACL_SUCCESS);
    EXPECT_GE(ms, 5.0f);
    (void)aclrtDestroyEvent(start);
    (void)aclrtDestroyEvent(end);
}

TEST_F(EventTest, ElapsedTimeErrorsNameTheArgument) {
    aclrtEvent recorded = nullptr, unrecorded = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&recorded), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&unrecorded), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(recorded, stream_), ACL_SUCCESS);
    float ms = 0.0f;
    EXPECT_EQ(aclrtEventElapsedTime(nullptr, recorded, recorded), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("ms must not be NULL"), std::string::npos);
    EXPECT_EQ(aclrtEventElapsedTime(&ms, recorded, unrecorded), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("endEvent has not been recorded"), std::string::npos) << msg;
    EXPECT_EQ(aclrtEventElapsedTime(&ms, nullptr, recorded), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("startEvent must not be NULL"), std::string::npos);
    aclrtEvent untimed = flagged(ACL_EVENT_SYNC);
    ASSERT_EQ(aclrtRecordEvent(untimed, stream_), ACL_SUCCESS);
    EXPECT_EQ(aclrtEventElapsedTime(&ms, untimed, recorded), ACL_ERROR_INVALID_PARAM);
    msg = takeErr();
    EXPECT_NE(msg.find("startEvent was made by aclrtCreateEventWithFlag without ACL_EVENT_TIME_LINE (flag 0x1)"),
              std::string::npos)
        << msg;
    ASSERT_EQ(aclrtDestroyEvent(unrecorded), ACL_SUCCESS);
    EXPECT_EQ(aclrtEventElapsedTime(&ms, recorded, unrecorded), ACL_ERROR_RT_INVALID_HANDLE) << "destroyed";
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtEventElapsedTime: not a live endEvent"), std::string::npos) << msg;
    EXPECT_EQ(ms, 0.0f);
    (void)aclrtDestroyEvent(recorded);
    (void)aclrtDestroyEvent(untimed);
}

// CANN: NOT_READY until recorded, except an ExWithFlag event, which holds no task before its first
// record; every recorded event is complete at once here.
TEST_F(EventTest, StatusFollowsRecordAndReset) {
    aclrtEvent plain = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&plain), ACL_SUCCESS);
    aclrtEvent sync = flagged(ACL_EVENT_SYNC), ex = flagged(ACL_EVENT_SYNC, /*ex=*/true);
    auto status = [](aclrtEvent e) {
        aclrtEventRecordedStatus s = ACL_EVENT_RECORDED_STATUS_COMPLETE;
        EXPECT_EQ(aclrtQueryEventStatus(e, &s), ACL_SUCCESS) << takeErr();
        return s;
    };
    EXPECT_EQ(status(plain), ACL_EVENT_RECORDED_STATUS_NOT_READY);
    EXPECT_EQ(status(sync), ACL_EVENT_RECORDED_STATUS_NOT_READY);
    EXPECT_EQ(status(ex), ACL_EVENT_RECORDED_STATUS_COMPLETE);
    aclrtEventWaitStatus wait = ACL_EVENT_WAIT_STATUS_COMPLETE;
    ASSERT_EQ(aclrtQueryEventWaitStatus(sync, &wait), ACL_SUCCESS);
    EXPECT_EQ(wait, ACL_EVENT_WAIT_STATUS_NOT_READY);
    for (aclrtEvent e : {plain, sync, ex}) ASSERT_EQ(aclrtRecordEvent(e, stream_), ACL_SUCCESS);
    for (aclrtEvent e : {plain, sync, ex}) EXPECT_EQ(status(e), ACL_EVENT_RECORDED_STATUS_COMPLETE);
    ASSERT_EQ(aclrtQueryEventWaitStatus(sync, &wait), ACL_SUCCESS);
    EXPECT_EQ(wait, ACL_EVENT_WAIT_STATUS_COMPLETE);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    aclrtEventStatus old = ACL_EVENT_STATUS_RESERVED;
    ASSERT_EQ(aclrtQueryEvent(plain, &old), ACL_SUCCESS);
    EXPECT_EQ(old, ACL_EVENT_STATUS_COMPLETE);
    ASSERT_EQ(aclrtResetEvent(sync, stream_), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(status(sync), ACL_EVENT_RECORDED_STATUS_NOT_READY);
    ASSERT_EQ(aclrtQueryEvent(sync, &old), ACL_SUCCESS);
    EXPECT_EQ(old, ACL_EVENT_STATUS_NOT_READY);
#pragma GCC diagnostic pop
    for (aclrtEvent e : {plain, sync, ex}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

// Each rule CANN documents for an event kind, broken: an error naming the rule, and no effect.
TEST_F(EventTest, EachEventKindTakesOnlyItsCalls) {
    aclrtEvent plain = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&plain), ACL_SUCCESS);
    aclrtEvent timed = flagged(ACL_EVENT_TIME_LINE), ex = flagged(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE, true);
    aclrtEvent ex_nosync = flagged(ACL_EVENT_TIME_LINE, true);
    ASSERT_EQ(aclrtRecordEvent(plain, stream_), ACL_SUCCESS);

    // CANN's runtime makes aclrtCreateEvent events with a wait task: they reset (its 5.x-8.0 pages
    // show create -> record -> reset).
    EXPECT_EQ(aclrtResetEvent(plain, stream_), ACL_SUCCESS) << takeErr();
    aclrtEventRecordedStatus s = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    ASSERT_EQ(aclrtQueryEventStatus(plain, &s), ACL_SUCCESS);
    EXPECT_EQ(s, ACL_EVENT_RECORDED_STATUS_NOT_READY) << "reset: back to not recorded";
    ASSERT_EQ(aclrtRecordEvent(plain, stream_), ACL_SUCCESS);

    // A call the event's kind does not take: the runtime's "feature not supported", a rejected call
    // changing nothing.
    EXPECT_EQ(aclrtResetEvent(timed, stream_), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    std::string msg;
    msg = takeErr();
    EXPECT_NE(msg.find("made by aclrtCreateEventWithFlag without ACL_EVENT_SYNC (flag 0x8)"), std::string::npos) << msg;
    EXPECT_EQ(aclrtStreamWaitEvent(stream_, timed), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtStreamWaitEvent: the event was made by aclrtCreateEventWithFlag without ACL_EVENT_SYNC"),
              std::string::npos)
        << msg;
    aclrtEventWaitStatus w = ACL_EVENT_WAIT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEventWaitStatus(timed, &w), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    EXPECT_EQ(w, ACL_EVENT_WAIT_STATUS_RESERVED);
    (void)takeErr();

    EXPECT_EQ(aclrtResetEvent(ex, stream_), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    msg = takeErr();
    EXPECT_NE(msg.find("aclrtResetEvent: the event was made by aclrtCreateEventExWithFlag"), std::string::npos) << msg;
    EXPECT_EQ(aclrtQueryEventWaitStatus(ex, &w), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    (void)takeErr();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    aclrtEventStatus old = ACL_EVENT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEvent(ex, &old), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    msg = takeErr();
    EXPECT_NE(msg.find("use aclrtQueryEventStatus"), std::string::npos) << msg;
    EXPECT_EQ(old, ACL_EVENT_STATUS_RESERVED);
#pragma GCC diagnostic pop
    EXPECT_EQ(aclrtStreamWaitEvent(stream_, ex), ACL_SUCCESS) << "ExWithFlag with ACL_EVENT_SYNC may be waited for";
    EXPECT_EQ(aclrtStreamWaitEvent(stream_, ex_nosync), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    (void)takeErr();
    EXPECT_EQ(aclrtStreamWaitEvent(stream_, plain), ACL_SUCCESS);
    for (aclrtEvent e : {plain, timed, ex, ex_nosync}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(EventTest, FlagsAreChecked) {
    aclrtEvent e = nullptr;
    // Flags CANN's runtime rejects are its ACL_ERROR_RT_PARAM_INVALID: unknown bits, none at all,
    // ACL_EVENT_EXTERNAL with another flag.
    EXPECT_EQ(aclrtCreateEventWithFlag(&e, 0x4), ACL_ERROR_RT_PARAM_INVALID);
    std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtCreateEventWithFlag: flag must combine ACL_EVENT_SYNC (0x1), "
                       "ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), ACL_EVENT_TIME_LINE (0x8), "),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("got 0x4"), std::string::npos) << msg;
    EXPECT_EQ(e, nullptr);
    EXPECT_EQ(aclrtCreateEventExWithFlag(&e, 0x100 | ACL_EVENT_SYNC), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("got 0x101"), std::string::npos);
    EXPECT_EQ(aclrtCreateEventWithFlag(&e, 0), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("got 0x0"), std::string::npos);
    EXPECT_EQ(aclrtCreateEventExWithFlag(&e, 0), ACL_ERROR_RT_PARAM_INVALID);
    (void)takeErr();
    EXPECT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(takeErr().find("ACL_EVENT_EXTERNAL (0x20) takes no other flag, got 0x21"), std::string::npos);
    EXPECT_EQ(e, nullptr);
    // EXTERNAL and IPC events have a wait task, as SYNC ones: waitable and resettable.
    for (uint32_t flag : {ACL_EVENT_EXTERNAL, ACL_EVENT_IPC | ACL_EVENT_TIME_LINE, ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_SYNC}) {
        ASSERT_EQ(aclrtCreateEventWithFlag(&e, flag), ACL_SUCCESS) << flag << ": " << takeErr();
        ASSERT_EQ(aclrtRecordEvent(e, nullptr), ACL_SUCCESS);
        EXPECT_EQ(aclrtStreamWaitEvent(nullptr, e), ACL_SUCCESS) << flag << ": " << takeErr();
        EXPECT_EQ(aclrtResetEvent(e, nullptr), ACL_SUCCESS) << flag << ": " << takeErr();
        EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    }
    ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_DEVICE_USE_ONLY), ACL_SUCCESS);
    EXPECT_EQ(aclrtStreamWaitEvent(nullptr, e), ACL_ERROR_RT_FEATURE_NOT_SUPPORT) << "no wait task without SYNC";
    (void)takeErr();
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    EXPECT_EQ(aclrtCreateEventWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("event must not be NULL"), std::string::npos);
    ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE),
              ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(EventTest, StaleHandlesAndDeadStreams) {
    aclrtEvent e = flagged(ACL_EVENT_SYNC);
    ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    aclrtEventRecordedStatus s = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    EXPECT_EQ(aclrtQueryEventStatus(e, &s), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtQueryEventStatus: not a live event"), std::string::npos);
    EXPECT_EQ(aclrtResetEvent(e, stream_), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_ERROR_RT_INVALID_HANDLE) << "twice";
    EXPECT_EQ(aclrtDestroyEvent(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtQueryEventStatus(nullptr, &s), ACL_ERROR_INVALID_PARAM);
    (void)takeErr();

    aclrtEvent live = flagged(ACL_EVENT_SYNC);
    ASSERT_EQ(aclrtRecordEvent(live, stream_), ACL_SUCCESS);
    EXPECT_EQ(aclrtQueryEventStatus(live, nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("status must not be NULL"), std::string::npos);
    aclrtStream dead = nullptr;
    ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
    EXPECT_EQ(aclrtResetEvent(live, dead), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtResetEvent: not a live stream"), std::string::npos);
    ASSERT_EQ(aclrtQueryEventStatus(live, &s), ACL_SUCCESS);
    EXPECT_EQ(s, ACL_EVENT_RECORDED_STATUS_COMPLETE) << "a reset on a dead stream does nothing";
    EXPECT_EQ(aclrtDestroyEvent(live), ACL_SUCCESS);
}

// A record waits for the stream's blocking host callbacks, so its timestamp comes after them.
TEST_F(EventTest, RecordComesAfterBlockingCallbacks) {
    aclrtEvent start = nullptr, end = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&end), ACL_SUCCESS);
    std::atomic<bool> stop{false};
    uint64_t tid = 0;
    std::thread reporter([&] {  // runs the stream's callbacks, as CANN's samples have a thread do
        while (!stop.load())
            if (aclrtProcessReport(10) == ACL_ERROR_RT_THREAD_SUBSCRIBE) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    tid = static_cast<uint64_t>(reporter.native_handle());
    ASSERT_EQ(aclrtSubscribeReport(tid, stream_), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtRecordEvent(start, stream_), ACL_SUCCESS);
    auto slow = [](void *) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
    ASSERT_EQ(aclrtLaunchCallback(slow, nullptr, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(end, stream_), ACL_SUCCESS);
    float ms = 0.0f;
    ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS);
    EXPECT_GE(ms, 20.0f);
    ASSERT_EQ(aclrtUnSubscribeReport(tid, stream_), ACL_SUCCESS);
    stop = true;
    reporter.join();
    (void)takeErr();
    (void)aclrtDestroyEvent(start);
    (void)aclrtDestroyEvent(end);
}

}  // namespace
