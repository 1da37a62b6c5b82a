// Argument fuzzing of GridSampler2D(Backward) (tests/support/call_fuzzer.hpp): mutated calls get
// 0 / 161001 / 161002 in phase 1 and 0 in phase 2, never a crash, an internal error or a write
// outside the outputs. Grid values lie in [-1.5, 1.5]: inside, on the border and outside.
#include "call_fuzzer.hpp"

namespace {

using namespace acltest::fuzz;

Call seedOf(const std::string &op) {
    const Arg grid = tensor("grid", ACL_FLOAT, {2, 4, 5, 2}, ACL_FORMAT_ND), interpolation = integer<int64_t>("interpolationMode", 0),
              padding = integer<int64_t>("paddingMode", 0), align = boolean("alignCorners", false);
    if (op == "GridSampler2D")
        return {op,
                {tensor("input", ACL_FLOAT, {2, 3, 6, 7}, ACL_FORMAT_NCHW), grid, interpolation, padding, align,
                 output("out", ACL_FLOAT, {2, 3, 4, 5}, ACL_FORMAT_NCHW)}};
    return {op,
            {tensor("gradOutput", ACL_FLOAT, {2, 3, 4, 5}, ACL_FORMAT_NCHW), tensor("input", ACL_FLOAT, {2, 3, 6, 7}, ACL_FORMAT_NCHW), grid,
             interpolation, padding, align, boolArray("outputMask", {true, true}),
             output("inputGrad", ACL_FLOAT, {2, 3, 6, 7}, ACL_FORMAT_NCHW), output("gridGrad", ACL_FLOAT, {2, 4, 5, 2}, ACL_FORMAT_ND)}};
}

class GridFuzz : public ::testing::TestWithParam<Target> {};

TEST_P(GridFuzz, KeepsItsPromises) { fuzzOn(GetParam(), seedOf(GetParam().op), 2000); }

INSTANTIATE_TEST_SUITE_P(Calls, GridFuzz,
                         ::testing::Values(Target{"GridSampler2DBackward", "atlas-a2"}, Target{"GridSampler2DBackward", "atlas-training"},
                                           Target{"GridSampler2D", "atlas-a2"}),
                         targetName);

}  // namespace
