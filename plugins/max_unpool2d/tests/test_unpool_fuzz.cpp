// Argument fuzzing of MaxUnpool2d(Backward) (tests/support/call_fuzzer.hpp): mutated calls get
// 0 / 161001 / 161002 in phase 1 and 0 / 361001 in phase 2 - indices random in [-1, size] -,
// never a crash, an internal error or a write outside the output.
#include "call_fuzzer.hpp"

namespace {

using namespace acltest::fuzz;

Call seedOf(const std::string &op) {
    if (op == "MaxUnpool2d")
        return {op,
                {tensor("self", ACL_FLOAT, {2, 3, 3, 3}, ACL_FORMAT_NCHW), tensor("indices", ACL_INT32, {2, 3, 3, 3}, ACL_FORMAT_NCHW, -1, 36),
                 intArray("outputSize", {6, 6}), output("out", ACL_FLOAT, {2, 3, 6, 6}, ACL_FORMAT_NCHW)}};
    return {op,
            {tensor("gradOutput", ACL_FLOAT, {2, 3, 6, 6}, ACL_FORMAT_NCHW), tensor("self", ACL_FLOAT, {2, 3, 3, 3}, ACL_FORMAT_NCHW),
             tensor("indices", ACL_INT64, {2, 3, 3, 3}, ACL_FORMAT_NCHW, -1, 36), intArray("outputSize", {6, 6}),
             output("out", ACL_FLOAT, {2, 3, 3, 3}, ACL_FORMAT_NCHW)}};
}

class UnpoolFuzz : public ::testing::TestWithParam<Target> {};

TEST_P(UnpoolFuzz, KeepsItsPromises) { fuzzOn(GetParam(), seedOf(GetParam().op), 2000); }

INSTANTIATE_TEST_SUITE_P(Calls, UnpoolFuzz,
                         ::testing::Values(Target{"MaxUnpool2dBackward", "atlas-a2"}, Target{"MaxUnpool2dBackward", "atlas-training"},
                                           Target{"MaxUnpool2d", "atlas-a2"}),
                         targetName);

}  // namespace
