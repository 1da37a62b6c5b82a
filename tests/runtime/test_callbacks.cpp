// Host callbacks on streams (aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport /
// aclrtUnSubscribeReport, aclrtLaunchHostFunc) and the runtime calls that wait for them;
// aclrtGetVersion and the accepted timeouts.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "enum_shims.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

uint64_t self_id() { return static_cast<uint64_t>(pthread_self()); }

// What each callback saw: its index and the thread it ran on.
struct Log {
    std::mutex m;
    std::vector<int> order;
    std::vector<uint64_t> threads;
};
struct Item {
    Log *log;
    int index;
};
void record(void *p) {
    auto *item = static_cast<Item *>(p);
    std::lock_guard<std::mutex> lock(item->log->m);
    item->log->order.push_back(item->index);
    item->log->threads.push_back(self_id());
}

// A thread that runs reports until stopped, as CANN's samples have one.
class ReportThread {
public:
    ReportThread()
        : thread_([this] {
              id_ = self_id();
              ready_ = true;
              while (!stop_) {
                  const aclError e = aclrtProcessReport(20);
                  if (e == ACL_ERROR_RT_THREAD_SUBSCRIBE) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              }
          }) {
        while (!ready_) std::this_thread::yield();
    }
    ~ReportThread() {
        stop_ = true;
        thread_.join();
    }
    uint64_t id() const { return id_; }

private:
    std::atomic<bool> stop_{false}, ready_{false};
    std::atomic<uint64_t> id_{0};
    std::thread thread_;
};

using CallbackTest = coretest::StreamTest;

TEST_F(CallbackTest, RunOnTheSubscribedThreadInLaunchOrderAndSynchronizeWaitsForThem) {
    ReportThread reporter;
    ASSERT_EQ(aclrtSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
    Log log;
    std::vector<Item> items;
    for (int i = 0; i < 6; ++i) items.push_back({&log, i});
    for (int i = 0; i < 6; ++i)
        ASSERT_EQ(aclrtLaunchCallback(record, &items[static_cast<size_t>(i)], i % 2 ? ACL_CALLBACK_BLOCK : ACL_CALLBACK_NO_BLOCK,
                                      stream_),
                  ACL_SUCCESS)
            << takeErr();
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS) << takeErr();
    {
        std::lock_guard<std::mutex> lock(log.m);
        EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
        EXPECT_EQ(log.threads, std::vector<uint64_t>(6, reporter.id()));
    }
    EXPECT_EQ(aclrtUnSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
}

TEST_F(CallbackTest, DefaultStreamAndSynchronizeDevice) {
    ReportThread reporter;
    ASSERT_EQ(aclrtSubscribeReport(reporter.id(), nullptr), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << "one thread, two streams: " << takeErr();
    Log log;
    Item a{&log, 1}, b{&log, 2};
    ASSERT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_NO_BLOCK, nullptr), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtLaunchCallback(record, &b, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    {
        std::lock_guard<std::mutex> lock(log.m);
        EXPECT_EQ(log.order.size(), 2u);
    }
    EXPECT_EQ(aclrtUnSubscribeReport(reporter.id(), nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclrtUnSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
}

// Work submitted after a blocking callback comes after it: here an async copy reads what the
// callback wrote.
TEST_F(CallbackTest, WorkAfterABlockingCallbackWaitsForIt) {
    ReportThread reporter;
    ASSERT_EQ(aclrtSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
    struct Slow {
        int value = 0;
    } slow;
    const auto write_late = [](void *p) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        static_cast<Slow *>(p)->value = 42;
    };
    ASSERT_EQ(aclrtLaunchCallback(write_late, &slow, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS) << takeErr();
    int copied = 0;
    ASSERT_EQ(aclrtMemcpyAsync(&copied, sizeof copied, &slow.value, sizeof copied, ACL_MEMCPY_HOST_TO_HOST, stream_),
              ACL_SUCCESS);
    EXPECT_EQ(copied, 42);
    EXPECT_EQ(aclrtUnSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
}

// The subscribed thread never waits for its own callbacks: synchronizing runs them, in order, on it.
TEST_F(CallbackTest, TheSubscribedThreadRunsItsOwnCallbacksWhenItSynchronizes) {
    ASSERT_EQ(aclrtSubscribeReport(self_id(), stream_), ACL_SUCCESS) << takeErr();
    Log log;
    Item a{&log, 7}, b{&log, 8};
    ASSERT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtLaunchCallback(record, &b, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    EXPECT_EQ(log.order, (std::vector<int>{7, 8}));
    EXPECT_EQ(log.threads, std::vector<uint64_t>(2, self_id()));
    EXPECT_EQ(aclrtProcessReport(5), ACL_ERROR_RT_REPORT_TIMEOUT) << "nothing left to run";
    EXPECT_NE(takeErr().find("no callback was launched within 5 ms"), std::string::npos);
    EXPECT_EQ(aclrtUnSubscribeReport(self_id(), stream_), ACL_SUCCESS);
}

TEST_F(CallbackTest, ProcessReportRunsOneCallbackACall) {
    ASSERT_EQ(aclrtSubscribeReport(self_id(), stream_), ACL_SUCCESS) << takeErr();
    Log log;
    Item a{&log, 1}, b{&log, 2};
    ASSERT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtLaunchCallback(record, &b, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtProcessReport(-1), ACL_SUCCESS);
    EXPECT_EQ(log.order, (std::vector<int>{1}));
    ASSERT_EQ(aclrtProcessReport(100), ACL_SUCCESS);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
    EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_REPORT_TIMEOUT);
    EXPECT_EQ(aclrtUnSubscribeReport(self_id(), stream_), ACL_SUCCESS);
    (void)takeErr();
}

// With nobody processing reports, a bounded synchronization times out (CANN's 507046), and
// unsubscribing runs what was pending on the caller, so no callback is lost.
TEST_F(CallbackTest, SynchronizeTimesOutAndUnsubscribeRunsWhatIsPending) {
    std::thread other;
    std::atomic<uint64_t> other_id{0};
    std::atomic<bool> release{false};
    other = std::thread([&] {
        other_id = self_id();
        while (!release) std::this_thread::yield();
    });
    while (!other_id) std::this_thread::yield();
    ASSERT_EQ(aclrtSubscribeReport(other_id, stream_), ACL_SUCCESS) << takeErr();
    Log log;
    Item a{&log, 3};
    ASSERT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_NO_BLOCK, stream_), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    EXPECT_NE(takeErr().find("aclrtSynchronizeStreamWithTimeout: callbacks on the stream still pending after 20 ms"),
              std::string::npos);
    EXPECT_TRUE(log.order.empty());
    EXPECT_EQ(aclrtUnSubscribeReport(self_id(), stream_), ACL_ERROR_RT_THREAD_SUBSCRIBE) << "not the subscriber";
    EXPECT_NE(takeErr().find("not by thread"), std::string::npos);
    EXPECT_EQ(aclrtUnSubscribeReport(other_id, stream_), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(log.order, (std::vector<int>{3}));
    EXPECT_EQ(log.threads, std::vector<uint64_t>{self_id()});
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(stream_, 20), ACL_SUCCESS);
    release = true;
    other.join();
}

TEST_F(CallbackTest, ErrorsCarryCannsCodes) {
    Log log;
    Item a{&log, 0};
    EXPECT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_BLOCK, stream_), ACL_ERROR_RT_STREAM_NO_CB_REG);
    EXPECT_NE(takeErr().find("aclrtLaunchCallback: no thread subscribed to the stream"), std::string::npos);
    EXPECT_EQ(aclrtProcessReport(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    EXPECT_NE(takeErr().find("aclrtProcessReport: this thread is subscribed to no stream"), std::string::npos);
    EXPECT_EQ(aclrtProcessReport(0), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("timeout must be -1 (no limit) or > 0 ms, got 0"), std::string::npos);
    EXPECT_EQ(aclrtProcessReport(-2), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtUnSubscribeReport(self_id(), stream_), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    EXPECT_NE(takeErr().find("the stream is not subscribed"), std::string::npos);

    ASSERT_EQ(aclrtSubscribeReport(self_id(), stream_), ACL_SUCCESS);
    EXPECT_EQ(aclrtSubscribeReport(self_id(), stream_), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    EXPECT_NE(takeErr().find("already subscribed by thread"), std::string::npos);
    EXPECT_EQ(aclrtLaunchCallback(nullptr, &a, ACL_CALLBACK_BLOCK, stream_), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("fn must not be NULL"), std::string::npos);
    EXPECT_EQ(shim_aclrtLaunchCallback(record, &a, 7, stream_), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("blockType must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK (1), got 7"),
              std::string::npos);
    EXPECT_TRUE(log.order.empty()) << "a rejected launch queued nothing";
    EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_REPORT_TIMEOUT);
    (void)takeErr();

    // A destroyed stream's subscription ends with it.
    ASSERT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
    EXPECT_EQ(aclrtSubscribeReport(self_id(), stream_), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(takeErr().find("aclrtSubscribeReport: not a live stream"), std::string::npos);
    EXPECT_EQ(aclrtLaunchCallback(record, &a, ACL_CALLBACK_BLOCK, stream_), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtLaunchHostFunc(stream_, record, &a), ACL_ERROR_RT_INVALID_HANDLE);
    stream_ = nullptr;
    EXPECT_EQ(aclrtProcessReport(1), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    (void)takeErr();
}

// A host function runs in stream order: after the blocking callbacks launched before it.
TEST_F(CallbackTest, HostFunctionRunsAfterTheBlockingCallbacksBeforeIt) {
    ReportThread reporter;
    ASSERT_EQ(aclrtSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
    Log log;
    Item a{&log, 1}, b{&log, 2};
    const auto record_late = [](void *p) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        record(p);
    };
    ASSERT_EQ(aclrtLaunchCallback(record_late, &a, ACL_CALLBACK_BLOCK, stream_), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclrtLaunchHostFunc(stream_, record, &b), ACL_SUCCESS) << takeErr();
    {
        std::lock_guard<std::mutex> lock(log.m);
        EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
    }
    EXPECT_EQ(aclrtUnSubscribeReport(reporter.id(), stream_), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclrtLaunchHostFunc(nullptr, record, &b), ACL_SUCCESS) << "the default stream, no subscription";
    EXPECT_EQ(aclrtLaunchHostFunc(stream_, nullptr, &b), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtLaunchHostFunc: fn must not be NULL"), std::string::npos);
    std::lock_guard<std::mutex> lock(log.m);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2, 2}));
}

TEST_F(CallbackTest, VersionIsThisLibrarysAndTimeoutsAreAccepted) {
    int32_t major = -1, minor = -1, patch = -1;
    ASSERT_EQ(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
    EXPECT_EQ(major, ACLNN_CPU_VERSION_MAJOR);
    EXPECT_EQ(minor, ACLNN_CPU_VERSION_MINOR);
    EXPECT_EQ(patch, ACLNN_CPU_VERSION_PATCH);
    EXPECT_EQ(aclrtGetVersion(nullptr, &minor, &patch), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(takeErr().find("aclrtGetVersion"), std::string::npos);
    EXPECT_EQ(aclrtSetOpWaitTimeout(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtSetOpWaitTimeout(1000), ACL_SUCCESS);
    EXPECT_EQ(aclrtSetOpExecuteTimeOut(30), ACL_SUCCESS);
}

}  // namespace
