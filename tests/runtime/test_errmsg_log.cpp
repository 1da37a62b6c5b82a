// aclGetRecentErrMsg (thread-local, cleared by reading) and stderr logging levels
// (ASCEND_GLOBAL_LOG_LEVEL: 0 debug .. 3 error = default, 4 none; it wins over the config's log_level).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "acl/acl.h"
#include "test_util.hpp"

namespace {

using coretest::EnvGuard;
using coretest::StderrCapture;
using coretest::takeErr;
using coretest::writeTempFile;

class ErrMsgTest : public coretest::RuntimeTest {};

TEST_F(ErrMsgTest, NoErrorMeansNull) { EXPECT_EQ(aclGetRecentErrMsg(), nullptr); }

TEST_F(ErrMsgTest, ReadingClearsTheMessage) {
    ASSERT_NE(aclrtSetDevice(1), ACL_SUCCESS);
    const char *first = aclGetRecentErrMsg();
    ASSERT_NE(first, nullptr);
    EXPECT_NE(std::string(first).find("aclrtSetDevice"), std::string::npos) << first;
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr) << "a second read returns NULL";
}

TEST_F(ErrMsgTest, MostRecentErrorWins) {
    ASSERT_NE(aclrtSetDevice(1), ACL_SUCCESS);
    ASSERT_NE(aclrtFree(nullptr), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclrtFree"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("aclrtSetDevice"), std::string::npos) << "one line: the most recent error only: " << msg;
}

TEST_F(ErrMsgTest, MessageIsOneLine) {
    ASSERT_NE(aclrtSetDevice(5), ACL_SUCCESS);
    const std::string msg = takeErr();
    ASSERT_FALSE(msg.empty());
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST_F(ErrMsgTest, MessageIsThreadLocal) {
    ASSERT_NE(aclrtSetDevice(1), ACL_SUCCESS);  // an error on this thread (A)
    const char *seen_on_b = reinterpret_cast<const char *>(1);
    std::string b_own;
    std::thread b([&] {
        seen_on_b = aclGetRecentErrMsg();  // B has no error of its own
        ASSERT_NE(aclrtFree(nullptr), ACL_SUCCESS);
        b_own = takeErr();
    });
    b.join();
    EXPECT_EQ(seen_on_b, nullptr) << "thread B saw thread A's error";
    EXPECT_NE(b_own.find("aclrtFree"), std::string::npos) << b_own;
    // A's message is still there, untouched by B's error and B's read.
    const std::string a = takeErr();
    EXPECT_NE(a.find("aclrtSetDevice"), std::string::npos) << a;
}

TEST_F(ErrMsgTest, ReturnedPointerStaysValidUntilNextRead) {
    ASSERT_NE(aclrtSetDevice(1), ACL_SUCCESS);
    const char *m = aclGetRecentErrMsg();
    ASSERT_NE(m, nullptr);
    const std::string copy = m;
    ASSERT_NE(aclrtFree(nullptr), ACL_SUCCESS);  // a new error does not invalidate the string handed out
    EXPECT_EQ(std::string(m), copy);
}

// ---- logging ----

class LogTest : public coretest::RuntimeTest {
protected:
    // Provokes one error and returns what reached stderr.
    static std::string errorOutput() {
        StderrCapture cap;
        (void)aclrtSetDevice(7);
        std::string text = cap.text();
        (void)aclGetRecentErrMsg();
        return text;
    }
};

TEST_F(LogTest, DefaultLevelShowsErrors) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    const std::string out = errorOutput();
    EXPECT_NE(out.find("aclrtSetDevice"), std::string::npos) << "stderr: " << out;
}

TEST_F(LogTest, Level0ShowsErrors) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "0");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    const std::string out = errorOutput();
    EXPECT_NE(out.find("aclrtSetDevice"), std::string::npos) << "stderr: " << out;
}

TEST_F(LogTest, Level0ShowsInfoOnInit) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "0");
    StderrCapture cap;
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    const std::string out = cap.text();
    EXPECT_FALSE(out.empty()) << "debug level logs something on aclInit";
}

TEST_F(LogTest, Level3InitIsQuiet) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "3");
    StderrCapture cap;
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_EQ(cap.text(), "") << "nothing but errors at level 3";
}

TEST_F(LogTest, Level4SilencesErrors) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "4");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    const std::string out = errorOutput();
    EXPECT_EQ(out, "");
}

TEST_F(LogTest, Level4StillRecordsTheMessage) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "4");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    StderrCapture cap;
    ASSERT_NE(aclrtSetDevice(3), ACL_SUCCESS);
    EXPECT_EQ(cap.text(), "");
    EXPECT_NE(takeErr().find("aclrtSetDevice"), std::string::npos);
}

TEST_F(LogTest, ConfigLogLevel4Silences) {
    const std::string path = writeTempFile("quiet", "log_level: 4\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS);
    EXPECT_EQ(errorOutput(), "");
}

TEST_F(LogTest, EnvironmentBeatsConfigLogLevel) {
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "3");
    const std::string path = writeTempFile("quiet", "log_level: 4\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS);
    EXPECT_NE(errorOutput().find("aclrtSetDevice"), std::string::npos);
}

// A configuration's log level belongs to that initialization: after aclFinalize, aclInit(NULL)
// is back to the default (errors shown).
TEST_F(LogTest, ConfigLogLevelEndsWithFinalize) {
    const std::string path = writeTempFile("quiet", "log_level: 4\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS);
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_NE(errorOutput().find("aclrtSetDevice"), std::string::npos)
        << "log_level: 4 of a finalized configuration still silences errors";
}

// A configuration that aclInit rejects changes nothing, its log level included.
TEST_F(LogTest, RejectedConfigDoesNotChangeTheLogLevel) {
    const std::string path = writeTempFile("quiet-bad", "log_level: 4\nproduct: atlas-z9\n");
    ASSERT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    (void)aclGetRecentErrMsg();
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_NE(errorOutput().find("aclrtSetDevice"), std::string::npos)
        << "log_level: 4 of a rejected configuration silences errors";
}

TEST_F(LogTest, NothingOnStdoutOnError) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    std::fflush(stdout);
    std::FILE *tmp = std::tmpfile();
    ASSERT_NE(tmp, nullptr);
    const int saved = ::dup(1);
    ::dup2(::fileno(tmp), 1);
    (void)aclrtSetDevice(9);
    (void)aclrtFree(nullptr);
    std::fflush(stdout);
    ::dup2(saved, 1);
    ::close(saved);
    struct stat st {};
    ASSERT_EQ(::fstat(::fileno(tmp), &st), 0);
    EXPECT_EQ(st.st_size, 0) << "errors must not print to stdout";
    std::fclose(tmp);
    (void)aclGetRecentErrMsg();
}

}  // namespace
