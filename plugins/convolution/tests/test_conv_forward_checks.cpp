// Phase-1 checks of the forward companion aclnnConvolution, as hicann/ops-nn's aclnn_convolution.cpp
// and its operator page have them: one row per rule, the status code and a message fragment; the
// empty tensors CANN accepts (nothing is computed) and the ones it refuses; what each product runs;
// and the attributes that cannot change a result (a stride past an output of size 1, a dilation
// along a 1-wide kernel), computed exactly.
#include <optional>

#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

struct FSpec {
    const char *name;
    std::vector<int64_t> in{2, 4, 8, 8}, w{6, 4, 3, 3};
    std::optional<std::vector<int64_t>> bias = std::vector<int64_t>{6};
    std::vector<int64_t> out{2, 6, 8, 8};
    std::vector<int64_t> stride{1, 1}, padding{1, 1}, dilation{1, 1}, outputPadding{0, 0};
    bool transposed = false;
    int64_t groups = 1;
    aclDataType dt = ACL_FLOAT;
    int8_t cube = 0;
    const char *product = "atlas-a2";
    aclnnStatus code = ACLNN_SUCCESS;
    const char *fragment = "";
    aclFormat biasFormat = ACL_FORMAT_ND;
};

struct FOutcome {
    aclnnStatus status = -1;
    std::string message;
    bool outputUntouched = false;  // every element and the canary as before the call
};

FOutcome callForward(const FSpec &s) {
    Runtime::use(s.product);
    Tensor in(s.dt, s.in), w(s.dt, s.w), out(s.dt, s.out);
    std::optional<Tensor> b;
    if (s.bias) b.emplace(s.dt, *s.bias, Layout{}, s.biasFormat);
    const auto before = out.snapshot();
    IntArray stride(s.stride), pad(s.padding), dil(s.dilation), op(s.outputPadding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    FOutcome o;
    o.status = aclnnConvolutionGetWorkspaceSize(in.get(), w.get(), b ? b->get() : nullptr, stride.a, pad.a, dil.a, s.transposed,
                                                op.a, s.groups, out.get(), s.cube, &ws, &exec);
    if (o.status == ACLNN_SUCCESS) {
        Workspace buf;
        o.status = aclnnConvolution(buf.ptr(ws), ws, exec, Runtime::stream());
        aclrtSynchronizeStream(Runtime::stream());
    }
    if (o.status != ACLNN_SUCCESS) o.message = lastError();
    o.outputUntouched = out.snapshot() == before && out.canaryIntact();
    return o;
}

std::vector<FSpec> rows() {
    std::vector<FSpec> v;
    auto add = [&](FSpec s) { v.push_back(std::move(s)); };
    add({.name = "valid"});
    // the bias's layout name is a tag (CANN's FormatChecker takes ND, NCL, NCHW, NCDHW; its unit
    // tests tag the bias like the activations)
    add({.name = "bias_tagged_NCHW", .biasFormat = ACL_FORMAT_NCHW});
    add({.name = "bias_tagged_NCDHW", .biasFormat = ACL_FORMAT_NCDHW});
    add({.name = "bias_tagged_NHWC", .code = 161002, .fragment = "bias format NHWC is not supported (supported: ND, NCL, NCHW, NCDHW)",
         .biasFormat = ACL_FORMAT_NHWC});
    {
        FSpec s{.name = "bias_shape", .bias = std::vector<int64_t>{5}, .code = 161002, .fragment = "bias shape [5] must be [6]"};
        add(s);
    }
    add({.name = "output_shape", .out = {2, 6, 8, 7}, .code = 161002, .fragment = "output shape [2,6,8,7] must be [2,6,8,8]"});
    add({.name = "channels", .in = {2, 5, 8, 8}, .code = 161002, .fragment = "input channels (5) must equal weight dim 1 (4)"});
    add({.name = "groups_divide_weight", .in = {2, 8, 8, 8}, .w = {6, 2, 3, 3}, .groups = 4, .code = 161002,
         .fragment = "weight dim 0 (6) must be a multiple of groups (4)"});
    add({.name = "weight_spatial_zero", .w = {6, 4, 0, 3}, .code = 161002, .fragment = "weight spatial dim 0 must be > 0"});
    add({.name = "kernel_past_padded_input", .in = {2, 4, 2, 8}, .w = {6, 4, 5, 3}, .code = 161002,
         .fragment = "input spatial dim 0 (2) plus padding (1+1) must be >= the dilated kernel"});
    add({.name = "padding_256", .out = {2, 6, 518, 8}, .padding = {256, 1}, .code = 161002,
         .fragment = "padding before spatial dim 0 must be in [0, 255] for a non-transposed 2-D convolution"});
    add({.name = "transposed_channels_overflow", .in = {1, 0, 3, 3}, .w = {0, 4611686018427387904, 1, 1},
         .bias = std::nullopt, .out = {1, 2, 3, 3}, .transposed = true, .groups = 2, .code = 161002,
         .fragment = "weight dim 1 (4611686018427387904) times groups (2) must fit in int64"});
    add({.name = "dim_over_1e6", .in = {1, 1, 1, 1000001}, .w = {1, 1, 1, 1}, .bias = std::nullopt, .out = {1, 1, 1, 1000001},
         .padding = {0, 0}, .code = 161002, .fragment = "input dim 3 must be <= 1000000"});
    // Empty tensors: CANN computes nothing, and wants the output empty then.
    add({.name = "empty_batch", .in = {0, 4, 8, 8}, .out = {0, 6, 8, 8}});
    add({.name = "empty_channels", .in = {2, 0, 8, 8}, .w = {6, 0, 3, 3}, .code = 161002,
         .fragment = "output shape [2,6,8,8] must be empty when input [2,0,8,8] or weight [6,0,3,3] is"});
    add({.name = "empty_channels_and_batch", .in = {0, 0, 8, 8}, .w = {6, 0, 3, 3}, .out = {0, 6, 8, 8}});
    add({.name = "empty_weight_rows", .w = {0, 4, 3, 3}, .bias = std::vector<int64_t>{0}, .out = {2, 0, 8, 8}});
    // (0 + 2 - 3) / 1 + 1 = 0 in C++'s division: an empty input row gives an empty output row
    add({.name = "empty_spatial", .in = {2, 4, 0, 8}, .out = {2, 6, 0, 8}});
    add({.name = "empty_spatial_padded_to_rows", .in = {2, 4, 0, 8}, .w = {6, 4, 1, 3}, .out = {2, 6, 2, 8}, .code = 161002,
         .fragment = "must be empty when input"});
    // transposed
    {
        FSpec t{.name = "transposed_valid", .in = {2, 6, 5, 5}, .w = {6, 4, 3, 3}, .bias = std::vector<int64_t>{4},
                .out = {2, 4, 10, 10}, .stride = {2, 2}, .outputPadding = {1, 1}, .transposed = true};
        add(t);
        // the forward's transposed output is exact (InferShape); only the backward takes stride - 1 more
        FSpec larger = t;
        larger.name = "transposed_output_one_larger";
        larger.outputPadding = {0, 0};
        larger.code = 161002;
        larger.fragment = "output shape [2,4,10,10] must be [2,4,9,9]";
        add(larger);
        t.name = "transposed_channels_zero";
        t.in = {2, 0, 5, 5}, t.w = {0, 4, 3, 3}, t.code = 161002, t.fragment = "input channels must be > 0 when transposed is true";
        add(t);
        t = FSpec{.name = "transposed_weight_rows", .in = {2, 5, 5, 5}, .w = {6, 4, 3, 3}, .bias = std::vector<int64_t>{4},
                  .out = {2, 4, 5, 5}, .transposed = true, .code = 161002,
                  .fragment = "weight dim 0 (6) must equal input channels (5) when transposed is true"};
        add(t);
        // the data-gradient binary's padding (k - 1) * dilation - padding at most 255
        t = FSpec{.name = "transposed_pad_reach_256", .in = {1, 2, 3, 1}, .w = {2, 2, 3, 258}, .bias = std::nullopt,
                  .out = {1, 2, 3, 256}, .transposed = true, .code = 161002,
                  .fragment = "(weight dim 3 - 1) * dilation[1] - padding[1] must be <= 255 for a transposed 2-D"};
        add(t);
        // 3-D: and at least 0
        t = FSpec{.name = "transposed_3d_pad_past_kernel", .in = {1, 2, 3, 3, 3}, .w = {2, 2, 2, 1, 3},
                  .bias = std::nullopt, .out = {1, 2, 4, 1, 3}, .stride = {1, 1, 1}, .padding = {0, 1, 1},
                  .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0}, .transposed = true, .code = 161002,
                  .fragment = "(weight dim 3 - 1) * dilation[1] - padding[1] must be in [0, 255] for a transposed 3-D"};
        add(t);
        // (1 - 1) * 1 - 2 + 1 + 0 + 1 = 0: an empty output, nothing computed
        t = FSpec{.name = "transposed_empty_output", .in = {1, 4, 1}, .w = {4, 2, 2}, .bias = std::vector<int64_t>{2},
                  .out = {1, 2, 0}, .stride = {1}, .padding = {1}, .dilation = {1}, .outputPadding = {0}, .transposed = true};
        add(t);
        // the kernel: up to 511 (CANN's data-gradient tiling; the page says 255), Huawei's system tests run 511
        t = FSpec{.name = "transposed_kernel_511", .in = {1, 2, 1, 2}, .w = {2, 2, 1, 511}, .bias = std::nullopt,
                  .out = {1, 2, 1, 2}, .stride = {1, 1}, .padding = {0, 255}, .dilation = {1, 1}, .outputPadding = {0, 0},
                  .transposed = true};
        add(t);
        t = FSpec{.name = "transposed_kernel_512", .in = {1, 2, 1, 2}, .w = {2, 2, 1, 512}, .bias = std::nullopt,
                  .out = {1, 2, 1, 1}, .stride = {1, 1}, .padding = {0, 256}, .dilation = {1, 1}, .outputPadding = {0, 0},
                  .transposed = true, .code = 161002, .fragment = "weight spatial dim 1 must be in [1, 511] for a transposed 2-D convolution"};
        add(t);
        t = FSpec{.name = "transposed_dilation_256", .in = {1, 2, 3}, .w = {2, 2, 2}, .bias = std::nullopt, .out = {1, 2, 257},
                  .stride = {1}, .padding = {1}, .dilation = {256}, .outputPadding = {0}, .transposed = true, .code = 161002,
                  .fragment = "dilation[0] must be in [1, 255] for a transposed 1-D convolution"};
        add(t);
    }
    // 3-D non-transposed: the page's H and W limits
    add({.name = "conv3d_kernel_512", .in = {1, 1, 2, 2, 600}, .w = {1, 1, 1, 1, 512}, .bias = std::nullopt,
         .out = {1, 1, 2, 2, 89}, .stride = {1, 1, 1}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0},
         .code = 161002, .fragment = "weight spatial dim 2 must be in [1, 511] for a non-transposed 3-D convolution"});
    add({.name = "conv3d_stride_64", .in = {1, 1, 2, 2, 70}, .w = {1, 1, 1, 1, 1}, .bias = std::nullopt, .out = {1, 1, 2, 2, 2},
         .stride = {1, 1, 64}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0}, .code = 161002,
         .fragment = "stride[2] must be in [1, 63] for a non-transposed 3-D convolution"});
    // products
    add({.name = "inference_conv3d_fp16", .in = {1, 2, 3, 4, 5}, .w = {3, 2, 2, 2, 2}, .bias = std::vector<int64_t>{3},
         .out = {1, 3, 2, 3, 4}, .stride = {1, 1, 1}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0},
         .dt = ACL_FLOAT16, .product = "atlas-inference"});
    add({.name = "inference_conv3d_float", .in = {1, 2, 3, 4, 5}, .w = {3, 2, 2, 2, 2}, .bias = std::vector<int64_t>{3},
         .out = {1, 3, 2, 3, 4}, .stride = {1, 1, 1}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0},
         .cube = 1, .product = "atlas-inference", .code = 161002,
         .fragment = "input dtype must be FLOAT16 for a 3-D convolution on atlas-inference, got FLOAT"});
    add({.name = "inference_conv3d_transposed", .in = {1, 2, 3, 4, 5}, .w = {2, 3, 2, 2, 2}, .bias = std::nullopt,
         .out = {1, 3, 4, 5, 6}, .stride = {1, 1, 1}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0},
         .transposed = true, .dt = ACL_FLOAT16, .product = "atlas-inference", .code = 161002,
         .fragment = "transposed must be false for a 3-D convolution on atlas-inference"});
    add({.name = "inference_input_w_4097", .in = {1, 1, 1, 4097}, .w = {1, 1, 1, 1}, .bias = std::nullopt,
         .out = {1, 1, 1, 4097}, .padding = {0, 0}, .dt = ACL_FLOAT16, .product = "atlas-inference", .code = 161002,
         .fragment = "input spatial dim 1 must be <= 4096 on atlas-inference"});
    add({.name = "training_conv3d", .in = {1, 2, 3, 4, 5}, .w = {3, 2, 2, 2, 2}, .bias = std::vector<int64_t>{3},
         .out = {1, 3, 2, 3, 4}, .stride = {1, 1, 1}, .padding = {0, 0, 0}, .dilation = {1, 1, 1}, .outputPadding = {0, 0, 0},
         .dt = ACL_FLOAT16, .product = "atlas-training", .code = 161002, .fragment = "input must have rank 3, 4 on"});
    add({.name = "a200i_conv2d", .dt = ACL_FLOAT16, .product = "atlas-200i-500-a2"});
    // its cube has FP32, HF32 and BF16 (CANN's cube_util.h names DAV_3002 with the A2/A3's DAV_2201)
    add({.name = "a200i_conv2d_float_cube0", .product = "atlas-200i-500-a2"});
    add({.name = "a200i_conv2d_float_cube3", .cube = 3, .product = "atlas-200i-500-a2"});
    add({.name = "a200i_bf16", .dt = ACL_BF16, .product = "atlas-200i-500-a2"});
    add({.name = "a200i_bf16_cube2", .dt = ACL_BF16, .cube = 2, .product = "atlas-200i-500-a2", .code = 161002,
         .fragment = "cubeMathType 2 (USE_FP16) with input and weight (promoted) dtype BFLOAT16"});
    add({.name = "a200i_transposed", .in = {2, 6, 5, 5}, .w = {6, 4, 3, 3}, .bias = std::vector<int64_t>{4},
         .out = {2, 4, 10, 10}, .stride = {2, 2}, .outputPadding = {1, 1}, .transposed = true, .dt = ACL_FLOAT16,
         .product = "atlas-200i-500-a2", .code = 161002, .fragment = "transposed must be false on atlas-200i-500-a2"});
    add({.name = "a200i_conv1d", .in = {2, 4, 8}, .w = {6, 4, 3}, .out = {2, 6, 8}, .stride = {1}, .padding = {1},
         .dilation = {1}, .outputPadding = {0}, .dt = ACL_FLOAT16, .product = "atlas-200i-500-a2", .code = 161002,
         .fragment = "input must have rank 4 on"});
    return v;
}

struct ForwardRules : ::testing::TestWithParam<size_t> {};

TEST_P(ForwardRules, Row) {
    const FSpec s = rows()[GetParam()];
    const FOutcome o = callForward(s);
    EXPECT_EQ(o.status, s.code) << o.message;
    if (s.code != ACLNN_SUCCESS) {
        EXPECT_NE(o.message.find(s.fragment), std::string::npos) << o.message;
        EXPECT_TRUE(o.outputUntouched) << "a rejected call wrote its output";
    }
}

INSTANTIATE_TEST_SUITE_P(Rules, ForwardRules, ::testing::Range<size_t>(0, rows().size()),
                         [](const ::testing::TestParamInfo<size_t> &i) { return std::string(rows()[i.param].name); });

// ND activations are not CANN's forward layout, even at rank 3 (its FormatChecker wants NCL).
TEST(ForwardChecks, NdActivationsRejected) {
    Runtime::use("atlas-a2");
    Tensor in(ACL_FLOAT, {2, 4, 8}, Layout{}, ACL_FORMAT_ND), w(ACL_FLOAT, {6, 4, 3}), out(ACL_FLOAT, {2, 6, 8});
    IntArray one(std::vector<int64_t>{1});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnConvolutionGetWorkspaceSize(in.get(), w.get(), nullptr, one.a, one.a, one.a, false, nullptr, 1, out.get(), 0,
                                               &ws, &exec),
              161002);
    EXPECT_NE(lastError().find("input format ND is not supported (supported: NCL, NCHW, NCDHW)"), std::string::npos)
        << lastError();
}

// A stride past an output of size 1 and a dilation along a 1-wide kernel cannot change the result:
// any value CANN takes gives the reference's bits (the engine runs them as stride avail + 1 and
// dilation 1).
TEST(ForwardChecks, IdleStrideAndDilationExact) {
    Runtime::use("atlas-a2");
    cref::Conv c = conv2d(2, 3, 4, 7, 9, 3, 1, 2147483647, 2, 1, 0);
    c.d = {1, 1000000000, 1};
    ASSERT_EQ(c.gradOutputDims(), (std::vector<int64_t>{2, 4, 1, 5}));
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
        const auto in = ints(cref::Conv::count(c.inputDims()), 8, 3, 20);
        const auto w = ints(cref::Conv::count(c.weightDims()), 8, 4);
        const auto b = ints(c.Cout, 8, 5);
        const ForwardResult r = runForward(c, std::nullopt, dt, in, w, b);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        EXPECT_TRUE(sameBits(dt, r.out, cref::forward(c, in, w, &b), "output")) << dtName(dt);
    }
}

// The inference products' 3-D convolution (FLOAT16) computes what the reference does, exactly.
TEST(ForwardChecks, InferenceConv3dFloat16Exact) {
    Runtime::use("atlas-inference");
    const Named n = corpus()[2];
    ASSERT_EQ(n.c.sd, 3);
    const auto in = ints(cref::Conv::count(n.c.inputDims()), 4, 5, 20);
    const auto w = ints(cref::Conv::count(n.c.weightDims()), 4, 7);
    const auto b = ints(n.c.Cout, 8, 9);
    const ForwardResult r = runForward(n.c, n.padding, ACL_FLOAT16, in, w, b);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    EXPECT_TRUE(sameBits(ACL_FLOAT16, r.out, cref::forward(n.c, in, w, &b), "output"));
    EXPECT_TRUE(r.canary);
}

// CANN's forward reads outputPadding only when transposed: NULL or any value is fine otherwise (the
// output is the one of outputPadding 0); a transposed call without it is 161001.
TEST(ForwardChecks, OutputPaddingOnlyWhenTransposed) {
    Runtime::use("atlas-a2");
    auto call = [](bool transposed, const std::optional<std::vector<int64_t>> &outputPadding, std::vector<uint32_t> *bits) {
        Tensor in(ACL_FLOAT, {1, 4, 6, 6}), w(ACL_FLOAT, {4, 4, 3, 3}), out(ACL_FLOAT, {1, 4, 6, 6});
        std::vector<double> x(144), k(144);
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(static_cast<int>(i % 7) - 3), k[i] = static_cast<double>(static_cast<int>(i % 5) - 2);
        in.setValues(x);
        w.setValues(k);
        IntArray one(std::vector<int64_t>{1, 1});
        std::optional<IntArray> op;
        if (outputPadding) op.emplace(*outputPadding);
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        aclnnStatus st = aclnnConvolutionGetWorkspaceSize(in.get(), w.get(), nullptr, one.a, one.a, one.a, transposed,
                                                          op ? op->a : nullptr, 1, out.get(), 0, &ws, &exec);
        if (st == ACLNN_SUCCESS) {
            Workspace buf;
            st = aclnnConvolution(buf.ptr(ws), ws, exec, Runtime::stream());
        }
        if (bits) *bits = out.bits();
        return st;
    };
    std::vector<uint32_t> zero, none, ones;
    ASSERT_EQ(call(false, std::vector<int64_t>{0, 0}, &zero), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(call(false, std::nullopt, &none), ACLNN_SUCCESS) << lastError();
    ASSERT_EQ(call(false, std::vector<int64_t>{1, 1, 1}, &ones), ACLNN_SUCCESS) << lastError();
    EXPECT_EQ(none, zero);
    EXPECT_EQ(ones, zero);
    EXPECT_EQ(call(true, std::nullopt, nullptr), 161001);
    EXPECT_NE(lastError().find("outputPadding must not be NULL when transposed is true"), std::string::npos);
    // CANN checks it with the other NULLs, first: before a dtype the product refuses
    Runtime::use("atlas-training");
    Tensor in(ACL_BF16, {1, 4, 6, 6}), w(ACL_BF16, {4, 4, 3, 3}), out(ACL_BF16, {1, 4, 6, 6});
    IntArray one(std::vector<int64_t>{1, 1});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnConvolutionGetWorkspaceSize(in.get(), w.get(), nullptr, one.a, one.a, one.a, true, nullptr, 1, out.get(), 0,
                                               &ws, &exec),
              161001);
}

// The NULL input: 161001 before anything else.
TEST(ForwardChecks, NullInput) {
    Runtime::use("atlas-a2");
    Tensor w(ACL_FLOAT, {6, 4, 3, 3}), out(ACL_FLOAT, {2, 6, 8, 8});
    IntArray one(std::vector<int64_t>{1, 1});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnConvolutionGetWorkspaceSize(nullptr, w.get(), nullptr, one.a, one.a, one.a, false, nullptr, 1, out.get(), 0,
                                               &ws, &exec),
              161001);
    EXPECT_NE(lastError().find("input"), std::string::npos) << lastError();
}

}  // namespace
}  // namespace ct
