// Argument fuzzing of MaxPool2dWithMask(Backward) (tests/support/call_fuzzer.hpp): mutated calls
// get 0 / 161001 / 161002 in phase 1 and 0 / 361001 in phase 2 - masks of random bytes, all 0x00
// or all 0xFF (int32 -1: no maximum) -, never a crash, an internal error or a write outside the
// outputs. On atlas-training the mask is the bit mask.
#include "call_fuzzer.hpp"

namespace {

using namespace acltest::fuzz;

// 7x7 planes, k3 s2 p1: 4x4 outputs; the mask (N, C, kH*kW, (ceil(16 / 16) + 1) * 32)
Call seedOf(const std::string &op) {
    const Arg kernel = intArray("kernelSize", {3, 3}), stride = intArray("stride", {2, 2}), padding = intArray("padding", {1, 1}),
              dilation = intArray("dilation", {1, 1}), ceil = boolean("ceilMode", false);
    if (op == "MaxPool2dWithMask")
        return {op,
                {tensor("self", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW), kernel, stride, padding, dilation, ceil,
                 output("out", ACL_FLOAT, {2, 3, 4, 4}, ACL_FORMAT_NCHW), output("indices", ACL_INT8, {2, 3, 9, 64}, ACL_FORMAT_NCHW)}};
    return {op,
            {tensor("gradOutput", ACL_FLOAT, {2, 3, 4, 4}, ACL_FORMAT_NCHW), tensor("self", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW),
             tensor("indices", ACL_INT8, {2, 3, 9, 64}, ACL_FORMAT_NCHW, -128, 127), kernel, stride, padding, dilation, ceil,
             output("gradInput", ACL_FLOAT, {2, 3, 7, 7}, ACL_FORMAT_NCHW)}};
}

class MaskFuzz : public ::testing::TestWithParam<Target> {};

TEST_P(MaskFuzz, KeepsItsPromises) { fuzzOn(GetParam(), seedOf(GetParam().op), 2000); }

INSTANTIATE_TEST_SUITE_P(Calls, MaskFuzz,
                         ::testing::Values(Target{"MaxPool2dWithMaskBackward", "atlas-a2"},
                                           Target{"MaxPool2dWithMaskBackward", "atlas-training"},
                                           Target{"MaxPool2dWithMask", "atlas-a2"}, Target{"MaxPool2dWithMask", "atlas-training"},
                                           Target{"MaxPool2dWithMask", "atlas-inference"}),
                         targetName);

}  // namespace
