// Shared support for the operator plugins' conformance tests (plugins/<op>/tests/): the product ids
// and names, the runtime a test runs under (aclInit with a YAML naming the product and the thread
// count), reproducible random numbers, error messages and shape strings. One copy for every plugin;
// an operator's own helpers (its reference, tensors, runners) stay in its tests directory.
#ifndef ACLNN_CPU_TESTS_SUPPORT_ACLTEST_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_ACLTEST_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace acltest {

// ---- products (products.md) ----
struct ProductInfo {
    const char *id, *nameSubstr, *soc;  // nameSubstr: a part of the documented name errors must contain
};
inline const std::vector<ProductInfo> &productTable() {
    static const std::vector<ProductInfo> v{{"atlas-training", "Atlas training series", "Ascend910"},
                                            {"atlas-inference", "Atlas inference series", "Ascend310P"},
                                            {"atlas-a2", "Atlas A2", "Ascend910B"},
                                            {"atlas-a3", "Atlas A3", "Ascend910_93"},
                                            {"atlas-200i-500-a2", "Atlas 200I/500 A2", "Ascend310B"}};
    return v;
}
inline const std::vector<std::string> &allProducts() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> ids;
        for (const auto &p : productTable()) ids.push_back(p.id);
        return ids;
    }();
    return v;
}
inline const ProductInfo *productInfo(const std::string &id) {
    for (const auto &p : productTable())
        if (id == p.id) return &p;
    return nullptr;
}
inline std::string productNameSubstr(const std::string &id) { return productInfo(id) ? productInfo(id)->nameSubstr : "?"; }
inline std::string socName(const std::string &id) { return productInfo(id) ? productInfo(id)->soc : "?"; }
// A product id (or any label) as a test-name fragment.
inline std::string ident(std::string s) {
    for (auto &ch : s)
        if (ch == '-' || ch == '/') ch = '_';
    return s;
}

// ---- the runtime: aclInit with a YAML naming the product and the thread count ----
// Switching product or thread count is aclFinalize + aclInit; call use() inside ASSERT_NO_FATAL_FAILURE.
class Runtime {
public:
    static void use(const std::string &product, int threads = 2) {
        State &s = state();
        if (s.on && s.product == product && s.threads == threads) return;
        shutdown();
        const std::string path = writeConfig(product, threads);
        ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << "aclInit(" << path << ") for product " << product;
        s.on = true;
        s.product = product;
        s.threads = threads;
        ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&s.stream), ACL_SUCCESS);
        const char *soc = aclrtGetSocName();
        ASSERT_NE(soc, nullptr);
        ASSERT_EQ(std::string(soc), socName(product)) << "the product profile did not take effect";
    }
    // An aclInit config naming the product and the thread count; returns its path.
    static std::string writeConfig(const std::string &product, int threads) {
        std::filesystem::create_directories(tempDir());
        const auto file = tempDir() / (product + "_t" + std::to_string(threads) + ".yaml");
        std::ofstream(file) << "product: " << product << "\nthreads: " << threads << "\n";
        return file.string();
    }
    static void shutdown() {
        State &s = state();
        if (!s.on) return;
        if (s.stream) aclrtDestroyStream(s.stream);
        aclrtResetDevice(0);
        EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
        s = State{};
    }
    static aclrtStream stream() { return state().stream; }
    static const std::string &product() { return state().product; }
    static std::filesystem::path tempDir() {
        return std::filesystem::temp_directory_path() / ("aclnn_cpu_tests_" + std::to_string(::getpid()));
    }

private:
    struct State {
        bool on = false;
        std::string product;
        int threads = -1;
        aclrtStream stream = nullptr;
    };
    static State &state() {
        static State s;
        return s;
    }
};

// Finalizes the runtime and removes the temporary configs when the test binary ends.
struct RuntimeEnvironment : ::testing::Environment {
    void TearDown() override {
        Runtime::shutdown();
        std::error_code ec;
        std::filesystem::remove_all(Runtime::tempDir(), ec);
    }
};
inline ::testing::Environment *const kRuntimeEnvironment = ::testing::AddGlobalTestEnvironment(new RuntimeEnvironment);

// aclGetRecentErrMsg() as a string (it clears the message, as in CANN).
inline std::string recentErr() {
    const char *m = aclGetRecentErrMsg();
    return m ? std::string(m) : std::string();
}
inline ::testing::AssertionResult messageContains(const std::string &msg, const std::vector<std::string> &all) {
    for (const auto &w : all)
        if (msg.find(w) == std::string::npos)
            return ::testing::AssertionFailure() << "message lacks '" << w << "': " << msg;
    return ::testing::AssertionSuccess();
}

// ---- reproducible random numbers (splitmix64), independent of the standard library ----
// The seed is mixed into the starting state: with seed * gamma + 1 alone, Rng(s + 1) was Rng(s)
// one step on, so operands drawn with seeds s + 1 and s + 2 were the same numbers shifted by one
// element (a convolution's gradWeight then summed a correlation).
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(mix(seed * 0x9E3779B97F4A7C15ull + 1)) {}
    uint64_t next() { return mix(s_ += 0x9E3779B97F4A7C15ull); }
    double uniform(double lo, double hi) { return lo + (hi - lo) * std::ldexp(static_cast<double>(next() >> 11), -53); }
    int64_t integer(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }

private:
    static uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t s_;
};

// ---- element encodings ----
// The bits of a value already exactly representable in dt (FLOAT16 built field by field, so the
// tests do not share the library's conversion code), and back. DOUBLE uses all 64 bits.
inline uint64_t bitsOf(double v, aclDataType dt) {
    if (dt == ACL_DOUBLE) {
        uint64_t u;
        std::memcpy(&u, &v, 8);
        return u;
    }
    const float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (dt == ACL_FLOAT) return u;
    if (dt == ACL_BF16) return std::isnan(v) ? 0x7fc0u : u >> 16;
    const uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
    if (std::isnan(v)) return sign | 0x7e00u;
    if (std::isinf(v)) return sign | 0x7c00u;
    const double a = std::fabs(v);
    if (a == 0.0) return sign;
    const int e = std::ilogb(a);
    if (e < -14) return sign | static_cast<uint32_t>(std::ldexp(a, 24));
    return sign | static_cast<uint32_t>((e + 15) << 10) | (static_cast<uint32_t>(std::ldexp(a, 10 - e)) & 0x3ffu);
}
inline double valueOf(uint64_t b, aclDataType dt) {
    if (dt == ACL_DOUBLE) {
        double d;
        std::memcpy(&d, &b, 8);
        return d;
    }
    if (dt == ACL_FLOAT) {
        const auto u = static_cast<uint32_t>(b);
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    if (dt == ACL_BF16) return valueOf(b << 16, ACL_FLOAT);
    const double s = (b & 0x8000u) ? -1.0 : 1.0;
    const int e = static_cast<int>((b >> 10) & 0x1f);
    const double m = static_cast<double>(b & 0x3ffu);
    if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
    return e == 0 ? s * std::ldexp(m, -24) : s * std::ldexp(1024.0 + m, e - 25);
}

// ---- shapes ----
inline int64_t numel(const std::vector<int64_t> &d) {
    return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<int64_t>());
}
inline std::string dimsStr(const std::vector<int64_t> &d) {
    std::ostringstream o;
    o << "[";
    for (size_t i = 0; i < d.size(); ++i) o << (i ? "," : "") << d[i];
    o << "]";
    return o.str();
}

}  // namespace acltest

#endif  // ACLNN_CPU_TESTS_SUPPORT_ACLTEST_HPP_
