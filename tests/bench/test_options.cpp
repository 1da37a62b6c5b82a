// The bench's option parsing: values inside their ranges pass, others are usage errors (exit 2) that
// name the option and the range. --threads stops at aclInit's limit, 1024.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "options.hpp"

namespace {

bench::Options parse(std::vector<std::string> args) {
    args.insert(args.begin(), "aclnn-cpu-bench");
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    return bench::parse_options(static_cast<int>(argv.size()), argv.data());
}

TEST(BenchOptions, ThreadsUpToTheRuntimeLimit) {
    EXPECT_EQ(parse({"--threads", "1"}).threads, 1);
    EXPECT_EQ(parse({"--threads", "1024"}).threads, 1024);
    EXPECT_EXIT(parse({"--threads", "1025"}), ::testing::ExitedWithCode(2), "--threads expects an integer from 1 to 1024, got '1025'");
    EXPECT_EXIT(parse({"--threads", "0"}), ::testing::ExitedWithCode(2), "--threads expects an integer from 1 to 1024, got '0'");
}

TEST(BenchOptions, CountsMustBePositiveIntegers) {
    EXPECT_EQ(parse({"--reps", "7", "--runs", "3"}).reps, 7);
    EXPECT_EXIT(parse({"--reps", "0"}), ::testing::ExitedWithCode(2), "--reps expects an integer >= 1, got '0'");
    EXPECT_EXIT(parse({"--runs", "2x"}), ::testing::ExitedWithCode(2), "--runs expects an integer >= 1, got '2x'");
    EXPECT_EXIT(parse({"--warmup", "-1"}), ::testing::ExitedWithCode(2), "--warmup expects an integer >= 0, got '-1'");
}

}  // namespace
