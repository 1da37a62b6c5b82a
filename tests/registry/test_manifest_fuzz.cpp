// Manifest fuzzing: a third party's manifest may be anything. Each in-tree manifest, mutated 300
// times (lines deleted, doubled, swapped or cut short; a token replaced by a YAML
// metacharacter, a huge or negative number, a misspelt name, a token from elsewhere in the file; a
// truncated file), must either parse or fail with a ManifestError of one line naming the file and a
// line - never another exception, never a crash (the sanitized build checks the memory accesses).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "manifest.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using aclcpu::ManifestError;
using aclcpu::parse_manifest;

std::vector<std::string> linesOf(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

std::string joined(const std::vector<std::string> &lines) {
    std::string s;
    for (const auto &l : lines) s += l + "\n";
    return s;
}

// The places in a line where a token starts and ends (runs of letters, digits, '_', '-', '.').
std::vector<std::pair<size_t, size_t>> tokens(const std::string &l) {
    std::vector<std::pair<size_t, size_t>> t;
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; };
    for (size_t i = 0; i < l.size();) {
        if (!word(l[i])) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < l.size() && word(l[j])) ++j;
        t.emplace_back(i, j);
        i = j;
    }
    return t;
}

std::string mutate(const std::string &text, acltest::Rng &rng) {
    std::vector<std::string> lines = linesOf(text);
    if (lines.empty()) return "- " + text;  // (an earlier cut left nothing)
    const auto n = static_cast<int64_t>(lines.size());
    auto line = [&] { return static_cast<size_t>(rng.integer(0, n - 1)); };
    static const std::vector<std::string> odd = {"", "-1", "0", "99999999999999999999", "[", "]", "{", "}", ":", "- ", "&a",
                                                 "*a", "!!binary", "~", "null", "'", "\"", "\t", "\xc3\xa9", "FLAOT",
                                                 "NDD", "int65", "tensor", "true", "[1, 2, 3, 4, 5, 6, 7, 8, 9]", "{a: b}"};
    switch (rng.integer(0, 5)) {
        case 0: lines.erase(lines.begin() + static_cast<int64_t>(line())); break;
        case 1: {
            const size_t k = line();
            lines.insert(lines.begin() + static_cast<int64_t>(k), lines[k]);
            break;
        }
        case 2: std::swap(lines[line()], lines[line()]); break;
        case 3: {  // a line cut short
            std::string &l = lines[line()];
            l.resize(static_cast<size_t>(rng.integer(0, static_cast<int64_t>(l.size()))));
            break;
        }
        case 4: {  // a token replaced: by an odd one, or by a token from another line
            std::string &l = lines[line()];
            const auto t = tokens(l);
            if (t.empty()) break;
            const auto [b, e] = t[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(t.size()) - 1))];
            std::string by = odd[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(odd.size()) - 1))];
            if (rng.integer(0, 1)) {
                const std::string &other = lines[line()];
                const auto u = tokens(other);
                if (!u.empty()) {
                    const auto [ob, oe] = u[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(u.size()) - 1))];
                    by = other.substr(ob, oe - ob);
                }
            }
            l.replace(b, e - b, by);
            break;
        }
        default: {  // the file cut short anywhere
            std::string s = joined(lines);
            return s.substr(0, static_cast<size_t>(rng.integer(0, static_cast<int64_t>(s.size()))));
        }
    }
    return joined(lines);
}

// "<path>:<n>:" with n >= 1 somewhere in msg.
bool namesALine(const std::string &msg, const std::string &path) {
    for (size_t at = msg.find(path + ":"); at != std::string::npos; at = msg.find(path + ":", at + 1)) {
        size_t i = at + path.size() + 1, digits = 0;
        while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i, ++digits;
        if (digits && i < msg.size() && msg[i] == ':' && msg.compare(at + path.size() + 1, 1, "0") != 0) return true;
    }
    return false;
}

TEST(ManifestFuzz, EveryMutationParsesOrFailsWithFileAndLine) {
    std::vector<fs::path> manifests;
    for (const auto &e : fs::directory_iterator(ACLNN_CPU_TEST_PLUGIN_SOURCE_DIR))
        if (fs::exists(e.path() / "manifest.yaml")) manifests.push_back(e.path() / "manifest.yaml");
    ASSERT_GE(manifests.size(), 5u);
    // ACLNN_CPU_FUZZ_CALLS / ACLNN_CPU_FUZZ_SEED: a longer or another search, as for the call fuzzer
    int calls = 300;
    uint64_t seed = 0x3a11f357;
    if (const char *e = std::getenv("ACLNN_CPU_FUZZ_CALLS")) calls = std::atoi(e);
    if (const char *e = std::getenv("ACLNN_CPU_FUZZ_SEED")) seed ^= std::strtoull(e, nullptr, 0) * 0x9E3779B97F4A7C15ull;
    acltest::Rng rng(seed);
    int parsed = 0, rejected = 0;
    for (const fs::path &m : manifests) {
        std::ifstream in(m);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        ASSERT_NO_THROW((void)parse_manifest(m.string())) << m;
        for (int k = 0; k < calls; ++k) {
            const std::string mutated = mutate(mutate(text, rng), rng);
            const std::string path = coretest::writeTempFile("fuzz-manifest", mutated);
            try {
                (void)parse_manifest(path);
                ++parsed;
            } catch (const ManifestError &e) {
                const std::string msg = e.what();
                ++rejected;
                ASSERT_TRUE(namesALine(msg, path)) << m << " mutation " << k << ": no '<file>:<line>:' in: " << msg << "\n" << mutated;
                ASSERT_EQ(msg.find('\n'), std::string::npos) << m << " mutation " << k << ": not one line: " << msg;
            } catch (const std::exception &e) {
                FAIL() << m << " mutation " << k << ": threw something other than ManifestError: " << e.what() << "\n" << mutated;
            }
        }
    }
    // Most mutations must be caught; some (a swapped line, a duplicated comment) are harmless.
    EXPECT_GT(rejected, parsed) << rejected << " rejected, " << parsed << " parsed";
    std::printf("manifest fuzz: %d rejected, %d parsed\n", rejected, parsed);
}

}  // namespace
