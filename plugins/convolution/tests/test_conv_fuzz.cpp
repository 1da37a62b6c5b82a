// Argument fuzzing of Convolution(Backward) (tests/support/call_fuzzer.hpp): mutated calls get
// 0 / 161001 / 161002 in phase 1 and 0 in phase 2, never a crash, an internal error or a write
// outside the outputs - strides, paddings, dilations and groups at 0, -1, 2^31 and 2^62 included.
// Seeds: 2-D, and on atlas-a2 1-D, 3-D, transposed and depthwise.
#include "call_fuzzer.hpp"

namespace {

using namespace acltest::fuzz;

struct Geometry {
    aclFormat fmt;
    std::vector<int64_t> in, w, out;  // input, weight, output (gradOutput) dims
    std::vector<int64_t> stride, padding, dilation, outputPadding;
    bool transposed;
    int64_t groups;
};

// N2, 3 -> 4 channels (2-D 5x5 k3 s1 p1); the variants as named
Geometry geometryOf(const std::string &variant) {
    if (variant == "1d") return {ACL_FORMAT_NCL, {2, 3, 9}, {4, 3, 3}, {2, 4, 4}, {2}, {0}, {1}, {0}, false, 1};
    if (variant == "3d") return {ACL_FORMAT_NCDHW, {1, 2, 4, 4, 4}, {3, 2, 2, 2, 2}, {1, 3, 3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, false, 1};
    // transposed: weight (Cin, Cout / groups, k, k), output (5 - 1) * 2 - 2 + 3 + 1 = 10
    if (variant == "transposed") return {ACL_FORMAT_NCHW, {2, 3, 5, 5}, {3, 2, 3, 3}, {2, 2, 10, 10}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, 1};
    if (variant == "depthwise") return {ACL_FORMAT_NCHW, {2, 4, 6, 6}, {4, 1, 3, 3}, {2, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, false, 4};
    return {ACL_FORMAT_NCHW, {2, 3, 5, 5}, {4, 3, 3, 3}, {2, 4, 5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1};
}

Call seedOf(const Target &t) {
    const Geometry g = geometryOf(t.variant);
    const int64_t cout = g.out[1];
    const std::string op = t.op;
    const Arg input = tensor("input", ACL_FLOAT, g.in, g.fmt), weight = tensor("weight", ACL_FLOAT, g.w, g.fmt),
              stride = intArray("stride", g.stride), padding = intArray("padding", g.padding), dilation = intArray("dilation", g.dilation),
              transposed = boolean("transposed", g.transposed), outputPadding = intArray("outputPadding", g.outputPadding),
              cube = integer<int8_t>("cubeMathType", 1);
    if (op == "Convolution")
        return {op,
                {input, weight, tensor("bias", ACL_FLOAT, {cout}, ACL_FORMAT_ND), stride, padding, dilation, transposed, outputPadding,
                 integer<int64_t>("groups", g.groups), output("output", ACL_FLOAT, g.out, g.fmt), cube}};
    return {op,
            {tensor("gradOutput", ACL_FLOAT, g.out, g.fmt), input, weight, intArray("biasSizes", {cout}), stride, padding, dilation,
             transposed, outputPadding, integer<int32_t>("groups", static_cast<int32_t>(g.groups)), boolArray("outputMask", {true, true, true}),
             cube, output("gradInput", ACL_FLOAT, g.in, g.fmt), output("gradWeight", ACL_FLOAT, g.w, g.fmt),
             output("gradBias", ACL_FLOAT, {cout}, ACL_FORMAT_ND)}};
}

class ConvFuzz : public ::testing::TestWithParam<Target> {};

TEST_P(ConvFuzz, KeepsItsPromises) { fuzzOn(GetParam(), seedOf(GetParam()), 2000); }

INSTANTIATE_TEST_SUITE_P(Calls, ConvFuzz,
                         ::testing::Values(Target{"ConvolutionBackward", "atlas-a2"}, Target{"ConvolutionBackward", "atlas-training"},
                                           Target{"ConvolutionBackward", "atlas-inference"},
                                           Target{"ConvolutionBackward", "atlas-a2", "1d"}, Target{"ConvolutionBackward", "atlas-a2", "3d"},
                                           Target{"ConvolutionBackward", "atlas-a2", "transposed"},
                                           Target{"ConvolutionBackward", "atlas-a2", "depthwise"}, Target{"Convolution", "atlas-a2"},
                                           Target{"Convolution", "atlas-training"}, Target{"Convolution", "atlas-a2", "3d"},
                                           Target{"Convolution", "atlas-a2", "transposed"}),
                         targetName);

}  // namespace
