// Helpers shared by the core test suite: environment guards, temporary files, stderr capture and a
// runtime guard that leaves the process uninitialized whatever the previous test did.
//
// Every test of this suite is robust to running alone (ctest runs each test in its own process) and
// to running with the others in one process (the test binary run directly): runtime state is reset
// in SetUp, environment variables are restored, and the plugin registry (cached per search-path list)
// is made fresh where a test needs its diagnostics by giving it a unique path list.
#ifndef ACLNN_CPU_TESTS_COMMON_TEST_UTIL_HPP_
#define ACLNN_CPU_TESTS_COMMON_TEST_UTIL_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace coretest {

namespace fs = std::filesystem;

// Sets (or unsets, with nullopt) an environment variable for the guard's lifetime.
class EnvGuard {
public:
    EnvGuard(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
        if (const char *old = std::getenv(name_.c_str())) old_ = old;
        if (value) ::setenv(name_.c_str(), value->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }
    ~EnvGuard() {
        if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }
    EnvGuard(const EnvGuard &) = delete;
    EnvGuard &operator=(const EnvGuard &) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

// A per-process scratch directory under $TMPDIR/coretests, removed when the process exits.
inline fs::path scratchDir() {
    struct Dir {
        fs::path path;
        Dir() : path(fs::temp_directory_path() / "coretests" / ("run-" + std::to_string(::getpid()))) {
            fs::create_directories(path);
        }
        ~Dir() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    };
    static const Dir dir;
    return dir.path;
}

// Writes `text` to a fresh file in the scratch directory and returns its path.
inline std::string writeTempFile(const std::string &stem, const std::string &text, const std::string &ext = ".yaml") {
    static std::atomic<int> counter{0};
    const fs::path p = scratchDir() / (stem + "-" + std::to_string(counter++) + ext);
    std::ofstream out(p);
    out << text;
    out.close();
    return p.string();
}

// A directory that does not exist and is unique in this process: appending it to a plugin search
// path list makes the list (the registry's cache key) new, so the registry is built afresh and its
// diagnostics are printed again. Nonexistent directories are skipped silently by the scanner.
inline std::string uniqueMissingDir() {
    static std::atomic<int> counter{0};
    return (scratchDir() / ("no-such-plugin-dir-" + std::to_string(counter++))).string();
}

// Captures what the process writes to file descriptor 2 (stderr) between construction and text().
class StderrCapture {
public:
    StderrCapture() {
        std::fflush(stderr);
        file_ = std::tmpfile();
        saved_ = ::dup(2);
        if (file_ && saved_ >= 0) ::dup2(::fileno(file_), 2);
    }
    ~StderrCapture() { restore(); }
    std::string text() {
        restore();
        std::string out;
        if (!file_) return out;
        std::rewind(file_);
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) out.append(buf, n);
        return out;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE *file_ = nullptr;
    int saved_ = -1;
};

inline std::vector<std::string> linesContaining(const std::string &text, const std::string &needle) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.find(needle) != std::string::npos) out.push_back(line);
    return out;
}

// Reads and clears this thread's recent error message ("" when there is none).
inline std::string takeErr() {
    const char *m = aclGetRecentErrMsg();
    return m ? std::string(m) : std::string();
}

// Leaves the runtime uninitialized, the configured log level at its default (3) and the thread's error
// message empty, whatever the previous test in this process did.
inline void resetRuntime() {
    static const std::string defaults = writeTempFile("reset-defaults", "log_level: 3\n");
    EnvGuard quiet("ASCEND_GLOBAL_LOG_LEVEL", "4");  // "aclFinalize: aclInit was not called" is expected here
    EnvGuard product("ACLNN_CPU_PRODUCT", std::nullopt);
    (void)aclFinalize();
    if (aclInit(defaults.c_str()) == ACL_SUCCESS) (void)aclFinalize();
    (void)aclGetRecentErrMsg();
}

// The product ids of products.md with the SoC name each reports.
struct ProductRow {
    const char *id;
    const char *soc;
    const char *name_part;  // a part of the documented product name
};
inline void PrintTo(const ProductRow &r, std::ostream *os) { *os << r.id << " (" << r.soc << ")"; }
inline const std::vector<ProductRow> &products() {
    static const std::vector<ProductRow> rows = {
        {"atlas-training", "Ascend910", "Atlas training series"},
        {"atlas-inference", "Ascend310P", "Atlas inference series"},
        {"atlas-a2", "Ascend910B", "Atlas A2"},
        {"atlas-a3", "Ascend910_93", "Atlas A3"},
        {"atlas-200i-500-a2", "Ascend310B", "Atlas 200I/500 A2"},
    };
    return rows;
}

// Base fixture: a clean runtime and clean variables around every test.
class RuntimeTest : public ::testing::Test {
protected:
    void SetUp() override { resetRuntime(); }
    void TearDown() override { resetRuntime(); }
    EnvGuard product_{"ACLNN_CPU_PRODUCT", std::nullopt};
    EnvGuard plugins_{"ACLNN_CPU_PLUGIN_PATH", std::nullopt};
    EnvGuard level_{"ASCEND_GLOBAL_LOG_LEVEL", std::nullopt};
};

// A RuntimeTest on an initialized runtime (aclInit with the defaults); the device is reset after.
class InitializedRuntimeTest : public RuntimeTest {
protected:
    void SetUp() override {
        RuntimeTest::SetUp();
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    }
    void TearDown() override {
        (void)aclrtResetDevice(0);
        RuntimeTest::TearDown();
    }
};

// ... with a stream of its own, `stream_` (destroyed after the test unless the test did and set it
// to NULL).
class StreamTest : public InitializedRuntimeTest {
protected:
    void SetUp() override {
        InitializedRuntimeTest::SetUp();
        ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    }
    void TearDown() override {
        if (stream_) (void)aclrtDestroyStream(stream_);
        (void)takeErr();
        InitializedRuntimeTest::TearDown();
    }
    aclrtStream stream_ = nullptr;
};

}  // namespace coretest

#endif  // ACLNN_CPU_TESTS_COMMON_TEST_UTIL_HPP_
