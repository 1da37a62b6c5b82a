// Phase-1 checks of ConvolutionBackward, table-driven: one row per rule (ops.md, testing.md R8), each
// mutating one thing of a valid call; the status code and a message fragment naming the parameter.
// Plus the order of the categories (NULL first, outputMask length among them) and the products.
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "conv_test_util.hpp"

namespace ct {
namespace {

struct TensorSpec {
    std::vector<int64_t> dims;
    aclDataType dt = ACL_FLOAT;
    std::optional<aclFormat> fmt;
    bool null = false;
    TensorSpec(std::vector<int64_t> d, aclDataType t = ACL_FLOAT, std::optional<aclFormat> f = std::nullopt)
        : dims(std::move(d)), dt(t), fmt(f) {}
};

struct Spec {
    TensorSpec go{{2, 6, 8, 8}}, in{{2, 4, 8, 8}}, w{{6, 4, 3, 3}}, gi{{2, 4, 8, 8}}, gw{{6, 4, 3, 3}}, gb{{6}, ACL_FLOAT, ACL_FORMAT_ND};
    std::optional<std::vector<int64_t>> biasSizes = std::vector<int64_t>{6};
    std::optional<std::vector<int64_t>> stride = std::vector<int64_t>{1, 1}, padding = std::vector<int64_t>{1, 1},
                                        dilation = std::vector<int64_t>{1, 1}, outputPadding = std::vector<int64_t>{0, 0};
    bool transposed = false;
    int groups = 1;
    std::optional<std::vector<bool>> mask = std::vector<bool>{true, true, true};
    int8_t cube = 0;
    bool nullWorkspaceSize = false;
};

// A 3-D convolution of 2 groups (input 4 channels, gradOutput 6), k3 p1 on 4x4x4.
void conv3dGrouped(Spec &s) {
    s.go = TensorSpec{{1, 6, 4, 4, 4}, ACL_FLOAT, ACL_FORMAT_NCDHW};
    s.in = s.gi = TensorSpec{{1, 4, 4, 4, 4}, ACL_FLOAT, ACL_FORMAT_NCDHW};
    s.w = s.gw = TensorSpec{{6, 2, 3, 3, 3}, ACL_FLOAT, ACL_FORMAT_NCDHW};
    s.stride = std::vector<int64_t>{1, 1, 1};
    s.padding = std::vector<int64_t>{1, 1, 1};
    s.dilation = std::vector<int64_t>{1, 1, 1};
    s.outputPadding = std::vector<int64_t>{0, 0, 0};
    s.groups = 2;
}

struct Outcome {
    aclnnStatus status;
    std::string message;
};

Outcome call(const Spec &s) {
    auto make = [](const TensorSpec &t) { return std::make_unique<Tensor>(t.dt, t.dims, Layout{}, t.fmt); };
    auto go = make(s.go), in = make(s.in), w = make(s.w), gi = make(s.gi), gw = make(s.gw), gb = make(s.gb);
    IntArray bias(s.biasSizes), stride(s.stride), pad(s.padding), dil(s.dilation), op(s.outputPadding);
    BoolArray mask(s.mask);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    auto p = [](const TensorSpec &t, const std::unique_ptr<Tensor> &x) { return t.null ? nullptr : x->get(); };
    const aclnnStatus st = aclnnConvolutionBackwardGetWorkspaceSize(
        p(s.go, go), p(s.in, in), p(s.w, w), bias.a, stride.a, pad.a, dil.a, s.transposed, op.a, s.groups, mask.a, s.cube,
        p(s.gi, gi), p(s.gw, gw), p(s.gb, gb), s.nullWorkspaceSize ? nullptr : &ws, &exec);
    Outcome o{st, st == ACLNN_SUCCESS ? "" : lastError()};
    if (st == ACLNN_SUCCESS) {
        Workspace buf;
        o.status = aclnnConvolutionBackward(buf.ptr(ws), ws, exec, Runtime::stream());
        if (o.status != ACLNN_SUCCESS) o.message = lastError();
    }
    return o;
}

struct Row {
    const char *name;
    std::function<void(Spec &)> mutate;
    aclnnStatus code;
    const char *fragment;  // must appear in the message ("" for success)
    const char *product = "atlas-a2";
};

void allDtype(Spec &s, aclDataType dt) {
    for (TensorSpec *t : {&s.go, &s.in, &s.w, &s.gi, &s.gw, &s.gb}) t->dt = dt;
}

// A 3-D problem: input (1, 4, d, 3, 3), weight (6, 4, 1, 1, 1), unit attributes, gradOutput's
// depth `od` (the rows set stride and padding).
void conv3d(Spec &s, int64_t d, int64_t od) {
    s.in.dims = s.gi.dims = {1, 4, d, 3, 3};
    s.go.dims = {1, 6, od, 3, 3};
    s.w.dims = s.gw.dims = {6, 4, 1, 1, 1};
    s.go.fmt = s.in.fmt = s.w.fmt = s.gi.fmt = s.gw.fmt = std::optional<aclFormat>(ACL_FORMAT_NCDHW);
    s.stride = s.dilation = std::vector<int64_t>{1, 1, 1};
    s.padding = s.outputPadding = std::vector<int64_t>{0, 0, 0};
}

const std::vector<Row> &rows() {
    static const std::vector<Row> r = {
        {"valid", [](Spec &) {}, ACLNN_SUCCESS, ""},
        // NULLs (161001), in CANN's order
        {"null_gradOutput", [](Spec &s) { s.go.null = true; }, 161001, "gradOutput"},
        {"null_input", [](Spec &s) { s.in.null = true; }, 161001, "input"},
        {"null_weight", [](Spec &s) { s.w.null = true; }, 161001, "weight"},
        {"null_stride", [](Spec &s) { s.stride.reset(); }, 161001, "stride"},
        {"null_padding", [](Spec &s) { s.padding.reset(); }, 161001, "padding"},
        {"null_dilation", [](Spec &s) { s.dilation.reset(); }, 161001, "dilation"},
        {"null_outputPadding", [](Spec &s) { s.outputPadding.reset(); }, 161001, "outputPadding"},
        {"null_outputMask", [](Spec &s) { s.mask.reset(); }, 161001, "outputMask"},
        {"mask_length_2", [](Spec &s) { s.mask = std::vector<bool>{true, true}; }, 161001, "outputMask"},
        {"mask_length_4", [](Spec &s) { s.mask = std::vector<bool>{true, true, true, false}; }, 161001, "outputMask"},
        {"null_gradInput_selected", [](Spec &s) { s.gi.null = true; }, 161001, "gradInput"},
        {"null_gradWeight_selected", [](Spec &s) { s.gw.null = true; }, 161001, "gradWeight"},
        {"null_gradBias_selected", [](Spec &s) { s.gb.null = true; }, 161001, "gradBias"},
        {"null_gradBias_unselected", [](Spec &s) { s.gb.null = true; s.mask = std::vector<bool>{true, true, false}; }, ACLNN_SUCCESS, ""},
        {"null_biasSizes_nonempty", [](Spec &s) { s.biasSizes.reset(); }, ACLNN_SUCCESS, ""},
        {"null_workspaceSize", [](Spec &s) { s.nullWorkspaceSize = true; }, 161001, "workspaceSize"},
        {"mask_null_before_dtype", [](Spec &s) { s.mask.reset(); s.go.dt = ACL_INT32; }, 161001, "outputMask"},
        // dtypes (161002)
        {"dtype_int32", [](Spec &s) { s.go.dt = ACL_INT32; }, 161002, "gradOutput dtype"},
        {"dtype_double_weight", [](Spec &s) { s.w.dt = ACL_DOUBLE; }, 161002, "weight dtype"},
        {"dtype_mismatch", [](Spec &s) { s.in.dt = ACL_FLOAT16; }, 161002, "input dtype"},
        {"dtype_mismatch_gradBias", [](Spec &s) { s.gb.dt = ACL_BF16; }, 161002, "gradBias dtype"},
        {"dtype_bf16_training", [](Spec &s) { allDtype(s, ACL_BF16); }, 161002, "Atlas training", "atlas-training"},
        {"dtype_bf16_inference", [](Spec &s) { allDtype(s, ACL_BF16); }, 161002, "Atlas inference", "atlas-inference"},
        // formats and ranks
        {"format_nhwc", [](Spec &s) { s.in.fmt = ACL_FORMAT_NHWC; }, 161002, "input format"},
        {"format_nd_rank4", [](Spec &s) { s.go.fmt = ACL_FORMAT_ND; }, 161002, "gradOutput format ND"},
        {"format_nc1hwc0", [](Spec &s) { s.w.fmt = ACL_FORMAT_NC1HWC0; }, 161002, "weight format"},
        {"format_gradBias_nchw", [](Spec &s) { s.gb.fmt = ACL_FORMAT_NCHW; }, 161002, "gradBias format"},
        {"rank2", [](Spec &s) { s.in.dims = {8, 8}; s.in.fmt = ACL_FORMAT_ND; }, 161002, "input must have rank 3, 4, 5 on Atlas A2"},
        {"rank5_training", [](Spec &s) { conv3d(s, 3, 3); s.cube = 1; }, 161002, "must have rank 3, 4 on Atlas training series, got rank 5", "atlas-training"},
        {"rank5_inference", [](Spec &s) { conv3d(s, 3, 3); s.cube = 1; }, 161002, "must have rank 3, 4 on Atlas inference series, got rank 5", "atlas-inference"},
        // attribute values
        {"stride_0", [](Spec &s) { s.stride = std::vector<int64_t>{1, 0}; }, 161002, "stride[1]"},
        // CANN's documented ranges (non-transposed: dilation, padding, kernel H/W <= 255, stride <=
        // 2^31 - 2, 3-D H/W strides <= 63; transposed: dilation), then what oneDNN represents
        {"dilation_256", [](Spec &s) { s.dilation = std::vector<int64_t>{1, 256}; }, 161002, "dilation[1] must be in [1, 255] for a non-transposed 2-D"},
        {"dilation_256_transposed", [](Spec &s) {
             s.transposed = true; s.w.dims = s.gw.dims = {4, 6, 3, 3}; s.go.dims = {2, 6, 8, 8}; s.dilation = std::vector<int64_t>{256, 1};
         }, 161002, "dilation[0] must be in [1, 255] for a transposed 2-D"},
        {"padding_256", [](Spec &s) { s.padding = std::vector<int64_t>{0, 0, 256, 1}; }, 161002, "padding before spatial dim 1 must be in [0, 255]"},
        {"padding_255", [](Spec &s) { s.padding = std::vector<int64_t>{255, 1}; s.go.dims[2] = 8 + 2 * 255 - 2; }, ACLNN_SUCCESS, ""},
        {"stride_2147483647", [](Spec &s) { s.stride = std::vector<int64_t>{2147483647, 1}; }, 161002, "stride[0] must be in [1, 2147483646]"},
        {"kernel_256", [](Spec &s) { s.w.dims[3] = s.gw.dims[3] = 256; }, 161002, "weight spatial dim 1 must be in [0, 255]"},
        {"stride_64_3d", [](Spec &s) { conv3d(s, 3, 3); s.go.dims[3] = 1; s.stride = std::vector<int64_t>{1, 64, 1}; },
         161002, "stride[1] must be in [1, 63] for a non-transposed 3-D"},
        {"engine_3d_depth_padding", [](Spec &s) {
             conv3d(s, 1, 2); s.stride = std::vector<int64_t>{1147483648, 1, 1}; s.padding = std::vector<int64_t>{1000000000, 0, 0};
         }, 161002, "stride plus padding (2147483648) must stay below 2^31"},
        {"engine_3d_depth_padding_fits", [](Spec &s) {
             conv3d(s, 1, 2); s.stride = std::vector<int64_t>{1147483647, 1, 1}; s.padding = std::vector<int64_t>{1000000000, 0, 0};
         }, ACLNN_SUCCESS, ""},
        {"padding_negative", [](Spec &s) { s.padding = std::vector<int64_t>{-1, 1}; }, 161002, "padding[0]"},
        {"dilation_0", [](Spec &s) { s.dilation = std::vector<int64_t>{0, 1}; }, 161002, "dilation[0]"},
        {"groups_0", [](Spec &s) { s.groups = 0; }, 161002, "groups"},
        {"groups_65536", [](Spec &s) { s.groups = 65536; }, 161002, "groups"},
        {"outputPadding_nontransposed", [](Spec &s) { s.outputPadding = std::vector<int64_t>{0, 1}; }, 161002, "outputPadding"},
        {"outputPadding_negative_transposed", [](Spec &s) { s.transposed = true; s.outputPadding = std::vector<int64_t>{-1, 0}; }, 161002, "outputPadding[0]"},
        {"cubeMathType_4", [](Spec &s) { s.cube = 4; }, 161002, "cubeMathType"},
        {"cubeMathType_0_float_training", [](Spec &) {}, 161002,
         "cubeMathType 0 (KEEP_DTYPE) with input dtype FLOAT is not supported on Atlas training series (supported with FLOAT: 1, 2)", "atlas-training"},
        {"cubeMathType_3_float_training", [](Spec &s) { s.cube = 3; }, 161002, "cubeMathType", "atlas-training"},
        {"cubeMathType_3_fp16_training", [](Spec &s) { allDtype(s, ACL_FLOAT16); s.cube = 3; }, 161002, "(supported with FLOAT16: 0, 1, 2)", "atlas-training"},
        {"cubeMathType_1_float_training", [](Spec &s) { s.cube = 1; }, ACLNN_SUCCESS, "", "atlas-training"},
        {"cubeMathType_2_bf16_a2", [](Spec &s) { allDtype(s, ACL_BF16); s.cube = 2; }, 161002, "cubeMathType 2 (USE_FP16) with input dtype BFLOAT16 is not supported on Atlas A2 training series / Atlas 800I A2 inference product / A200I A2 Box (supported with BFLOAT16: 0, 1, 3)"},
        // CANN's 3-D weight gradient refuses USE_FP16 for a grouped FLOAT gradWeight (its last check);
        // groups 1, or gradWeight not asked for, pass
        {"cubeMathType_2_grouped_3d_gradWeight", [](Spec &s) { conv3dGrouped(s); s.cube = 2; }, 161002,
         "cubeMathType 2 (USE_FP16) is not supported for the FLOAT gradWeight of a grouped 3-D convolution (groups 2)"},
        {"valid_cubeMathType_2_grouped_3d_no_gradWeight", [](Spec &s) { conv3dGrouped(s); s.cube = 2; s.mask = std::vector<bool>{true, false, true}; }, ACLNN_SUCCESS, ""},
        {"valid_cubeMathType_1_grouped_3d", [](Spec &s) { conv3dGrouped(s); s.cube = 1; }, ACLNN_SUCCESS, ""},
        // shapes
        {"rank_mismatch", [](Spec &s) { s.go.dims = {2, 6, 64}; s.go.fmt = ACL_FORMAT_NCL; }, 161002, "gradOutput rank"},
        {"gradInput_shape", [](Spec &s) { s.gi.dims = {2, 4, 8, 9}; }, 161002, "gradInput shape"},
        {"gradWeight_shape", [](Spec &s) { s.gw.dims = {6, 4, 3, 2}; }, 161002, "gradWeight shape"},
        {"gradBias_shape", [](Spec &s) { s.gb.dims = {5}; }, 161002, "gradBias shape"},
        {"gradBias_rank2", [](Spec &s) { s.gb.dims = {6, 1}; }, 161002, "gradBias must have rank 1, got rank 2"},  // every product's rule: no product named
        {"stride_length", [](Spec &s) { s.stride = std::vector<int64_t>{1}; }, 161002, "stride must have 2"},
        {"dilation_length", [](Spec &s) { s.dilation = std::vector<int64_t>{1, 1, 1}; }, 161002, "dilation must have 2"},
        {"padding_length_3", [](Spec &s) { s.padding = std::vector<int64_t>{1, 1, 1}; }, 161002, "padding must have 2 or 4"},
        {"padding_length_4_ok", [](Spec &s) { s.padding = std::vector<int64_t>{1, 1, 1, 1}; }, ACLNN_SUCCESS, ""},
        {"outputPadding_length", [](Spec &s) { s.outputPadding = std::vector<int64_t>{0}; }, 161002, "outputPadding must have"},
        {"gradBias_before_channels", [](Spec &s) { s.go.dims[1] = 5; }, 161002, "gradBias shape"},
        {"channels_gradOutput_vs_weight", [](Spec &s) { s.go.dims[1] = 5; s.mask = std::vector<bool>{true, true, false}; }, 161002, "gradOutput channels (dim 1) must equal weight dim 0"},
        {"channels_input_vs_weight", [](Spec &s) { s.in.dims[1] = s.gi.dims[1] = 5; }, 161002, "input channels"},
        {"groups_mismatch", [](Spec &s) { s.groups = 2; }, 161002, "groups"},
        {"cout_not_multiple_of_groups", [](Spec &s) {
             s.groups = 2; s.in.dims[1] = s.gi.dims[1] = 8; s.go.dims[1] = 5; s.w.dims[0] = s.gw.dims[0] = 5;
             s.gb.dims = {5}; s.biasSizes = std::vector<int64_t>{5};
         }, 161002, "multiple of groups"},
        {"gradOutput_spatial", [](Spec &s) { s.go.dims[3] = 7; }, 161002, "gradOutput shape"},
        {"gradOutput_batch", [](Spec &s) { s.go.dims[0] = 3; }, 161002, "batch"},
        {"kernel_larger_than_input", [](Spec &s) { s.padding = std::vector<int64_t>{0, 0}; s.in.dims = s.gi.dims = {2, 4, 2, 8}; s.go.dims = {2, 6, 1, 6}; }, 161002, "dilated kernel"},
        {"transposed_outputPadding_ge_stride_and_dilation", [](Spec &s) {
             s.transposed = true; s.w.dims = s.gw.dims = {4, 6, 3, 3}; s.outputPadding = std::vector<int64_t>{1, 0};
         }, 161002, "outputPadding[0] must be smaller"},
        {"transposed_valid", [](Spec &s) { s.transposed = true; s.w.dims = s.gw.dims = {4, 6, 3, 3}; }, ACLNN_SUCCESS, ""},
        {"transposed_gradOutput_size", [](Spec &s) {
             s.transposed = true; s.w.dims = s.gw.dims = {4, 6, 3, 3}; s.go.dims[2] = 9;
         }, 161002, "transposed convolution"},
        // the empty-tensor path
        {"empty_batch", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; }, ACLNN_SUCCESS, ""},
        {"empty_null_biasSizes", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.biasSizes.reset(); }, 161002, "biasSizes"},
        {"empty_null_biasSizes_unselected", [](Spec &s) {
             s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.biasSizes.reset(); s.mask = std::vector<bool>{true, true, false};
         }, ACLNN_SUCCESS, ""},
        {"empty_biasSizes_value", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.biasSizes = std::vector<int64_t>{5}; }, 161002, "biasSizes[0]"},
        {"empty_biasSizes_length", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.biasSizes = std::vector<int64_t>{6, 1}; }, 161002, "biasSizes must have 1"},
        {"empty_spatial_with_gradInput", [](Spec &s) { s.in.dims[2] = s.gi.dims[2] = 0; }, 161002, "only in N or C"},
        {"empty_groups", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.groups = 4; }, 161002, "groups"},
        {"gradOutput_empty_weight_full", [](Spec &s) { s.go.dims[0] = 0; }, 161002, "gradOutput must not be empty"},
        // the empty path checks ranks and the shapes that stay defined at size 0 (Huawei's returns
        // before its shape checks; a weight of the wrong rank was read past its dims)
        {"empty_weight_rank3", [](Spec &s) {
             s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.w = s.gw = TensorSpec{{6, 4, 3}, ACL_FLOAT, ACL_FORMAT_NCL};
         }, 161002, "weight rank 3 must equal input rank 4"},
        {"empty_gradOutput_rank3", [](Spec &s) {
             s.in.dims[0] = s.gi.dims[0] = 0; s.go = TensorSpec{{0, 6, 8}, ACL_FLOAT, ACL_FORMAT_NCL};
         }, 161002, "gradOutput rank 3 must equal input rank 4"},
        {"empty_gradOutput_batch", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = 0; }, 161002, "gradOutput shape [2,6,8,8] must be [0,6,8,8]"},
        {"empty_gradOutput_channels", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.go.dims[1] = 5; s.mask = std::vector<bool>{true, true, false}; }, 161002, "gradOutput shape [0,5,8,8] must be [0,6,8,8]"},
        {"empty_gradOutput_spatial", [](Spec &s) { s.in.dims[0] = s.gi.dims[0] = s.go.dims[0] = 0; s.go.dims[3] = 3; }, 161002, "gradOutput shape [0,6,8,3] must be [0,6,8,8]"},
        // a transposed call with an empty batch returns before CANN's shape checks: gradOutput is not read
        {"valid_empty_batch_transposed_gradOutput_unchecked", [](Spec &s) {
             s.transposed = true; s.w = s.gw = TensorSpec{{4, 6, 3, 3}};
             s.in.dims[0] = s.gi.dims[0] = 0; s.go.dims = {0, 6, 8, 9};
         }, ACLNN_SUCCESS, ""},
        {"empty_gradInput_shape", [](Spec &s) { s.in.dims[0] = s.go.dims[0] = 0; s.gi.dims = {5, 5, 5, 5}; }, 161002, "gradInput shape [5,5,5,5] must equal"},
        {"empty_weight_with_gradInput", [](Spec &s) {
             s.w.dims[0] = s.gw.dims[0] = s.go.dims[1] = 0; s.biasSizes = std::vector<int64_t>{0}; s.gb.dims = {0};
         }, 161002, "outputMask[0] must be false when weight is empty and input is not"},
        {"empty_weight_without_gradInput", [](Spec &s) {
             s.w.dims[0] = s.gw.dims[0] = s.go.dims[1] = 0; s.biasSizes = std::vector<int64_t>{0}; s.gb.dims = {0};
             s.mask = std::vector<bool>{false, true, true};
         }, ACLNN_SUCCESS, ""},
    };
    return r;
}

struct Checks : ::testing::TestWithParam<size_t> {};

TEST_P(Checks, Row) {
    const Row &row = rows()[GetParam()];
    Runtime::use(row.product);
    Spec s;
    row.mutate(s);
    const Outcome o = call(s);
    EXPECT_EQ(o.status, row.code) << o.message;
    if (std::getenv("CONV_PRINT_MESSAGES")) std::printf("%-48s %d %s\n", row.name, o.status, o.message.c_str());
    if (row.code != ACLNN_SUCCESS) {
        EXPECT_NE(o.message.find(row.fragment), std::string::npos) << o.message;
        EXPECT_EQ(o.message.find('\n'), std::string::npos) << "one line: " << o.message;
    }
}

INSTANTIATE_TEST_SUITE_P(Rules, Checks, ::testing::Range<size_t>(0, rows().size()),
                         [](const ::testing::TestParamInfo<size_t> &i) { return std::string(rows()[i.param].name); });

// Every product: the supported dtypes pass (with the cubeMathType the product needs for FLOAT),
// the others fail with 161002 naming the product; 200I/500 A2 does not support the operator.
TEST(Products, DtypeMatrix) {
    const std::vector<std::string> products{"atlas-a2", "atlas-a3", "atlas-training", "atlas-inference", "atlas-200i-500-a2"};
    for (const auto &p : products) {
        Runtime::use(p);
        const bool full = p == "atlas-a2" || p == "atlas-a3";
        const bool any = p != "atlas-200i-500-a2";
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            Spec s;
            allDtype(s, dt);
            s.cube = full ? 0 : 1;
            const Outcome o = call(s);
            const bool ok = any && (full || dt != ACL_BF16);
            EXPECT_EQ(o.status, ok ? ACLNN_SUCCESS : 161002) << p << " " << dtName(dt) << ": " << o.message;
            if (!ok) {
                EXPECT_NE(o.message.find(p == "atlas-200i-500-a2" ? "not supported on" : "Atlas"), std::string::npos) << o.message;
            }
        }
    }
}

// cubeMathType x dtype per product (products.md table).
TEST(Products, CubeMathMatrix) {
    struct Expect {
        const char *product;
        aclDataType dt;
        int8_t cube;
        bool ok;
    };
    const Expect rows[] = {
        {"atlas-a2", ACL_FLOAT, 0, true},       {"atlas-a2", ACL_FLOAT, 1, true},       {"atlas-a2", ACL_FLOAT, 2, true},
        {"atlas-a2", ACL_FLOAT, 3, true},       {"atlas-a2", ACL_FLOAT16, 0, true},     {"atlas-a2", ACL_FLOAT16, 2, true},
        {"atlas-a2", ACL_BF16, 0, true},        {"atlas-a2", ACL_BF16, 1, true},        {"atlas-a2", ACL_BF16, 2, false},
        {"atlas-a2", ACL_BF16, 3, true},        {"atlas-a2", ACL_FLOAT, -1, false},     {"atlas-a3", ACL_BF16, 2, false},
        {"atlas-training", ACL_FLOAT, 0, false}, {"atlas-training", ACL_FLOAT, 1, true}, {"atlas-training", ACL_FLOAT, 2, true},
        {"atlas-training", ACL_FLOAT, 3, false}, {"atlas-training", ACL_FLOAT16, 0, true}, {"atlas-training", ACL_FLOAT16, 3, false},
        {"atlas-inference", ACL_FLOAT, 0, false}, {"atlas-inference", ACL_FLOAT, 2, true}, {"atlas-inference", ACL_FLOAT16, 1, true},
    };
    for (const Expect &e : rows) {
        Runtime::use(e.product);
        Spec s;
        allDtype(s, e.dt);
        s.cube = e.cube;
        const Outcome o = call(s);
        EXPECT_EQ(o.status, e.ok ? ACLNN_SUCCESS : 161002)
            << e.product << " " << dtName(e.dt) << " cube " << int(e.cube) << ": " << o.message;
        if (!e.ok) {
            EXPECT_NE(o.message.find("cubeMathType"), std::string::npos) << o.message;
        }
    }
}

}  // namespace
}  // namespace ct
