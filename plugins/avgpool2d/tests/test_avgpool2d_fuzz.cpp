// Argument fuzzing of AvgPool2d(Backward) (tests/support/call_fuzzer.hpp): mutated calls get
// 0 / 161001 / 161002 in phase 1 and 0 in phase 2, never a crash, an internal error or a write
// outside the output.
#include "call_fuzzer.hpp"

namespace {

using namespace acltest::fuzz;

// 7x7 planes, k3 s2 p1: 4x4 outputs
Call seedOf(const std::string &op) {
    const Arg kernel = intArray("kernelSize", {3, 3}), padding = intArray("padding", {1, 1}), ceil = boolean("ceilMode", false),
              include = boolean("countIncludePad", true), divisor = integer<int64_t>("divisorOverride", 0),
              cube = integer<int8_t>("cubeMathType", op == "AvgPool2d" ? 2 : 1);  // (A2's forward refuses FLOAT with 1)
    if (op == "AvgPool2d")
        return {op,
                {tensor("self", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW), kernel, intArray("strides", {2, 2}), padding, ceil, include,
                 divisor, cube, output("out", ACL_FLOAT, {2, 3, 4, 4}, ACL_FORMAT_NCHW)}};
    return {op,
            {tensor("gradOutput", ACL_FLOAT, {2, 3, 4, 4}, ACL_FORMAT_NCHW), tensor("self", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW),
             kernel, intArray("stride", {2, 2}), padding, ceil, include, divisor, cube,
             output("gradInput", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW)}};
}

class AvgPoolFuzz : public ::testing::TestWithParam<Target> {};

TEST_P(AvgPoolFuzz, KeepsItsPromises) { fuzzOn(GetParam(), seedOf(GetParam().op), 2000); }

INSTANTIATE_TEST_SUITE_P(Calls, AvgPoolFuzz,
                         ::testing::Values(Target{"AvgPool2dBackward", "atlas-a2"}, Target{"AvgPool2dBackward", "atlas-training"},
                                           Target{"AvgPool2dBackward", "atlas-inference"}, Target{"AvgPool2d", "atlas-a2"},
                                           Target{"AvgPool2d", "atlas-inference"}),
                         targetName);

}  // namespace
