// AvgPool2dBackward argument checks: one row per rule (NULL -> 161001; product support, dtype per
// product, equal dtypes, formats, ranks, attribute lengths, divisorOverride range, cubeMathType,
// kernel / stride / padding values, shapes, channel limit -> 161002), the check order (a call with
// two faults reports the earlier category), and the error-message contract.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "avgpool2d_cases.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

struct Problem {
    std::string product = "atlas-a2";
    aclDataType goDt = ACL_FLOAT, selfDt = ACL_FLOAT, giDt = ACL_FLOAT;
    aclFormat goFmt = ACL_FORMAT_NCHW, selfFmt = ACL_FORMAT_NCHW, giFmt = ACL_FORMAT_NCHW;
    // self 6x6, kernel 3, stride 2, padding 1 -> pooled 3x3.
    std::vector<int64_t> goDims{2, 3, 3, 3}, selfDims{2, 3, 6, 6}, giDims{2, 3, 6, 6};
    std::optional<std::vector<int64_t>> kernel = std::vector<int64_t>{3};
    std::optional<std::vector<int64_t>> stride = std::vector<int64_t>{2};
    std::optional<std::vector<int64_t>> padding = std::vector<int64_t>{1};
    bool ceilMode = false, countIncludePad = true;
    int64_t divisorOverride = 0;
    int8_t cube = 0;
    bool nullGo = false, nullSelf = false, nullGi = false, nullWs = false, nullExec = false;

    void allDt(aclDataType dt) { goDt = selfDt = giDt = dt; }
    void allFmt(aclFormat f) { goFmt = selfFmt = giFmt = f; }
};

struct Outcome {
    aclnnStatus status = -1;
    std::string message;
};

// Phase 1 on the problem; a successful executor is run (and so released).
void callPhase1(const Problem &p, Outcome &out) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use(p.product));
    Tensor go(p.goDt, p.goDims, p.goFmt), self(p.selfDt, p.selfDims, p.selfFmt), gi(p.giDt, p.giDims, p.giFmt);
    ASSERT_NE(go.get(), nullptr) << "aclCreateTensor(gradOutput " << dimsStr(p.goDims) << ") failed: " << recentErr();
    ASSERT_NE(self.get(), nullptr) << "aclCreateTensor(self " << dimsStr(p.selfDims) << ") failed: " << recentErr();
    ASSERT_NE(gi.get(), nullptr) << "aclCreateTensor(gradInput " << dimsStr(p.giDims) << ") failed: " << recentErr();
    IntArray k(p.kernel), s(p.stride), pd(p.padding);
    if (p.kernel) {
        ASSERT_NE(k.a, nullptr);
    }
    if (p.stride) {
        ASSERT_NE(s.a, nullptr);
    }
    if (p.padding) {
        ASSERT_NE(pd.a, nullptr);
    }
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    recentErr();  // clear
    out.status = aclnnAvgPool2dBackwardGetWorkspaceSize(
        p.nullGo ? nullptr : go.get(), p.nullSelf ? nullptr : self.get(), k.a, s.a, pd.a, p.ceilMode,
        p.countIncludePad, p.divisorOverride, p.cube, p.nullGi ? nullptr : gi.get(), p.nullWs ? nullptr : &ws,
        p.nullExec ? nullptr : &exec);
    out.message = recentErr();
    if (out.status == ACLNN_SUCCESS && exec) {
        Workspace w;
        EXPECT_EQ(aclnnAvgPool2dBackward(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS);
        aclrtSynchronizeStream(Runtime::stream());
    }
}

struct Rule {
    std::string name;
    std::function<void(Problem &)> mutate;
    aclnnStatus status;
    std::vector<std::string> anyOf;  // the message names one of these (the parameter)
    bool namesProduct = false;       // support error: the message names the product
};

const std::vector<Rule> &rules() {
    const aclnnStatus NUL = ACLNN_ERR_PARAM_NULLPTR, INV = ACLNN_ERR_PARAM_INVALID;
    const std::vector<std::string> channelNames{"self", "gradOutput", "channel", "C "};
    static const std::vector<Rule> r{
        // ---- NULL pointers (161001) ----
        {"null_workspaceSize", [](Problem &p) { p.nullWs = true; }, NUL, {"workspaceSize"}},
        {"null_executor", [](Problem &p) { p.nullExec = true; }, NUL, {"executor"}},
        {"null_gradOutput", [](Problem &p) { p.nullGo = true; }, NUL, {"gradOutput"}},
        {"null_self", [](Problem &p) { p.nullSelf = true; }, NUL, {"self"}},
        {"null_kernelSize", [](Problem &p) { p.kernel.reset(); }, NUL, {"kernelSize"}},
        {"null_padding", [](Problem &p) { p.padding.reset(); }, NUL, {"padding"}},
        {"null_gradInput", [](Problem &p) { p.nullGi = true; }, NUL, {"gradInput"}},
        // ---- operator support per product ----
        {"op_unsupported_200i", [](Problem &p) { p.product = "atlas-200i-500-a2"; }, INV, {}, true},
        // ---- dtype per product ----
        {"dtype_all_int32_a2", [](Problem &p) { p.allDt(ACL_INT32); }, INV, {"gradOutput"}, true},
        {"dtype_gradOutput_int64_a2", [](Problem &p) { p.goDt = ACL_INT64; }, INV, {"gradOutput"}, true},
        {"dtype_self_double_a2", [](Problem &p) { p.selfDt = ACL_DOUBLE; }, INV, {"self"}, true},
        {"dtype_gradInput_int8_a2", [](Problem &p) { p.giDt = ACL_INT8; }, INV, {"gradInput"}, true},
        {"dtype_all_double_a3",
         [](Problem &p) {
             p.product = "atlas-a3";
             p.allDt(ACL_DOUBLE);
         },
         INV, {"gradOutput"}, true},
        {"dtype_all_bf16_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_BF16);
         },
         INV, {"gradOutput"}, true},
        {"dtype_gradInput_bf16_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_FLOAT16);
             p.giDt = ACL_BF16;
         },
         INV, {"gradInput"}, true},
        {"dtype_self_bf16_inference",
         [](Problem &p) {
             p.product = "atlas-inference";
             p.allDt(ACL_FLOAT16);
             p.selfDt = ACL_BF16;
         },
         INV, {"self"}, true},
        // ---- all three dtypes equal ----
        {"mismatch_gradInput_f16", [](Problem &p) { p.giDt = ACL_FLOAT16; }, INV, {"gradInput"}},
        {"mismatch_gradOutput_f16", [](Problem &p) { p.goDt = ACL_FLOAT16; }, INV, {"gradOutput", "self"}},
        {"mismatch_self_bf16",
         [](Problem &p) {
             p.allDt(ACL_FLOAT16);
             p.selfDt = ACL_BF16;
         },
         INV, {"self"}},
        // ---- formats ----
        {"format_gradOutput_ND", [](Problem &p) { p.goFmt = ACL_FORMAT_ND; }, INV, {"gradOutput"}},
        {"format_self_NHWC", [](Problem &p) { p.selfFmt = ACL_FORMAT_NHWC; }, INV, {"self"}},
        {"format_gradInput_NC1HWC0", [](Problem &p) { p.giFmt = ACL_FORMAT_NC1HWC0; }, INV, {"gradInput"}},
        {"format_gradOutput_FRACTAL_NZ", [](Problem &p) { p.goFmt = ACL_FORMAT_FRACTAL_NZ; }, INV, {"gradOutput"}},
        // Which of the three a multi-tensor fault names is not specified: any of them.
        // ops.md: NCHW for 4-D tensors, NCL for 3-D (Huawei's code: 4-D gradOutput/gradInput must be NCHW).
        {"format_gradOutput_NCL_rank4", [](Problem &p) { p.goFmt = ACL_FORMAT_NCL; }, INV, {"gradOutput"}},
        {"format_gradInput_NCL_rank4", [](Problem &p) { p.giFmt = ACL_FORMAT_NCL; }, INV, {"gradInput"}},
        {"format_all_ND", [](Problem &p) { p.allFmt(ACL_FORMAT_ND); }, INV, {"gradOutput", "self", "gradInput"}},
        // ---- ranks ----
        {"rank_gradOutput_2", [](Problem &p) { p.goDims = {3, 3}; }, INV, {"gradOutput"}},
        {"rank_self_5", [](Problem &p) { p.selfDims = {2, 3, 6, 6, 1}; }, INV, {"self"}},
        {"rank_gradInput_5", [](Problem &p) { p.giDims = {2, 3, 6, 6, 1}; }, INV, {"gradInput"}},
        {"rank_all_2",
         [](Problem &p) {
             p.goDims = {3, 3};
             p.selfDims = p.giDims = {6, 6};
         },
         INV, {"gradOutput", "self", "gradInput"}},
        // ---- attribute lengths ----
        {"kernelSize_len0", [](Problem &p) { p.kernel = std::vector<int64_t>{}; }, INV, {"kernelSize"}},
        {"kernelSize_len3", [](Problem &p) { p.kernel = std::vector<int64_t>{3, 3, 3}; }, INV, {"kernelSize"}},
        {"stride_len3", [](Problem &p) { p.stride = std::vector<int64_t>{2, 2, 2}; }, INV, {"stride"}},
        {"padding_len0", [](Problem &p) { p.padding = std::vector<int64_t>{}; }, INV, {"padding"}},
        {"padding_len3", [](Problem &p) { p.padding = std::vector<int64_t>{1, 1, 1}; }, INV, {"padding"}},
        // ---- divisorOverride range on training / inference ----
        {"divisor_256_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_FLOAT16);
             p.divisorOverride = 256;
         },
         INV, {"divisorOverride"}, true},
        {"divisor_m256_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_FLOAT16);
             p.divisorOverride = -256;
         },
         INV, {"divisorOverride"}, true},
        {"divisor_1000_inference",
         [](Problem &p) {
             p.product = "atlas-inference";
             p.allDt(ACL_FLOAT16);
             p.divisorOverride = 1000;
         },
         INV, {"divisorOverride"}, true},
        {"divisor_2pow40_training",  // must not be truncated to a small integer
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_FLOAT16);
             p.divisorOverride = (int64_t{1} << 40) + 1;
         },
         INV, {"divisorOverride"}, true},
        {"divisor_int64min_inference",
         [](Problem &p) {
             p.product = "atlas-inference";
             p.allDt(ACL_FLOAT16);
             p.divisorOverride = std::numeric_limits<int64_t>::min();
         },
         INV, {"divisorOverride"}, true},

        // ---- cubeMathType ----
        {"cube_4_a2", [](Problem &p) { p.cube = 4; }, INV, {"cubeMathType"}},
        {"cube_m1_a2", [](Problem &p) { p.cube = -1; }, INV, {"cubeMathType"}},
        {"cube_127_a2", [](Problem &p) { p.cube = 127; }, INV, {"cubeMathType"}},
        {"cube_m128_a3",
         [](Problem &p) {
             p.product = "atlas-a3";
             p.cube = -128;
         },
         INV, {"cubeMathType"}},
        {"cube_0_float_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.cube = 0;
         },
         INV, {"cubeMathType"}, true},
        {"cube_3_float_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.cube = 3;
         },
         INV, {"cubeMathType"}, true},
        {"cube_3_float16_training",
         [](Problem &p) {
             p.product = "atlas-training";
             p.allDt(ACL_FLOAT16);
             p.cube = 3;
         },
         INV, {"cubeMathType"}, true},
        {"cube_0_float_inference",
         [](Problem &p) {
             p.product = "atlas-inference";
             p.cube = 0;
         },
         INV, {"cubeMathType"}, true},
        {"cube_3_float16_inference",
         [](Problem &p) {
             p.product = "atlas-inference";
             p.allDt(ACL_FLOAT16);
             p.cube = 3;
         },
         INV, {"cubeMathType"}, true},
        {"cube_2_bf16_a2",
         [](Problem &p) {
             p.allDt(ACL_BF16);
             p.cube = 2;
         },
         INV, {"cubeMathType"}, true},
        {"cube_2_bf16_a3",
         [](Problem &p) {
             p.product = "atlas-a3";
             p.allDt(ACL_BF16);
             p.cube = 2;
         },
         INV, {"cubeMathType"}, true},
        // ---- kernel / stride / padding values ----
        {"kernel_zero", [](Problem &p) { p.kernel = std::vector<int64_t>{0}; }, INV, {"kernelSize"}},
        {"kernel_negative_len1", [](Problem &p) { p.kernel = std::vector<int64_t>{-3}; }, INV, {"kernelSize"}},
        {"kernel_w_negative", [](Problem &p) { p.kernel = std::vector<int64_t>{3, -1}; }, INV, {"kernelSize"}},
        {"kernel_w_zero", [](Problem &p) { p.kernel = std::vector<int64_t>{3, 0}; }, INV, {"kernelSize"}},
        {"stride_zero", [](Problem &p) { p.stride = std::vector<int64_t>{0}; }, INV, {"stride"}},
        {"stride_h_zero", [](Problem &p) { p.stride = std::vector<int64_t>{0, 2}; }, INV, {"stride"}},
        {"stride_w_negative", [](Problem &p) { p.stride = std::vector<int64_t>{2, -2}; }, INV, {"stride"}},
        // beyond int32: the pooled size's arithmetic would overflow (found by the argument fuzzer)
        {"stride_w_2pow62", [](Problem &p) { p.stride = std::vector<int64_t>{2, int64_t{1} << 62}; }, INV, {"stride", "at most 2147483647"}},
        {"kernel_2pow31", [](Problem &p) { p.kernel = std::vector<int64_t>{int64_t{1} << 31}; }, INV, {"kernelSize", "at most 2147483647"}},
        {"padding_negative", [](Problem &p) { p.padding = std::vector<int64_t>{-1}; }, INV, {"padding"}},
        {"padding_w_negative", [](Problem &p) { p.padding = std::vector<int64_t>{1, -1}; }, INV, {"padding"}},
        {"padding_gt_half_kernel", [](Problem &p) { p.padding = std::vector<int64_t>{2}; }, INV, {"padding"}},
        {"padding_w_gt_half_kernel_w",
         [](Problem &p) {
             p.kernel = std::vector<int64_t>{3, 2};
             p.padding = std::vector<int64_t>{1, 2};
         },
         INV, {"padding"}},
        // ---- shapes ----
        {"gradInput_w_plus1", [](Problem &p) { p.giDims[3] += 1; }, INV, {"gradInput"}},
        {"gradInput_n_plus1", [](Problem &p) { p.giDims[0] += 1; }, INV, {"gradInput"}},
        {"gradInput_rank3", [](Problem &p) { p.giDims = {3, 6, 6}; }, INV, {"gradInput"}},
        {"gradOutput_h_plus1", [](Problem &p) { p.goDims[2] += 1; }, INV, {"gradOutput"}},
        {"gradOutput_w_minus1", [](Problem &p) { p.goDims[3] -= 1; }, INV, {"gradOutput"}},
        {"gradOutput_c_plus1", [](Problem &p) { p.goDims[1] += 1; }, INV, {"gradOutput"}},
        {"gradOutput_n_plus1", [](Problem &p) { p.goDims[0] += 1; }, INV, {"gradOutput"}},
        {"gradOutput_rank3_self_rank4", [](Problem &p) { p.goDims = {3, 3, 3}; }, INV, {"gradOutput", "self"}},
        {"gradOutput_ceil_size_in_floor_mode",  // 7x7 k2 s2: floor 3, ceil 4
         [](Problem &p) {
             p.selfDims = p.giDims = {2, 3, 7, 7};
             p.kernel = std::vector<int64_t>{2};
             p.stride = std::vector<int64_t>{2};
             p.padding = std::vector<int64_t>{0};
             p.goDims = {2, 3, 4, 4};
         },
         INV, {"gradOutput"}},
        {"gradOutput_floor_size_in_ceil_mode",
         [](Problem &p) {
             p.selfDims = p.giDims = {2, 3, 7, 7};
             p.kernel = std::vector<int64_t>{2};
             p.stride = std::vector<int64_t>{2};
             p.padding = std::vector<int64_t>{0};
             p.ceilMode = true;
             p.goDims = {2, 3, 3, 3};
         },
         INV, {"gradOutput"}},
        {"gradOutput_keeps_window_in_right_pad_R1",  // ih3 k2 s2 p1 ceil: 2, not 3
         [](Problem &p) {
             p.selfDims = p.giDims = {1, 2, 3, 3};
             p.kernel = std::vector<int64_t>{2};
             p.stride = std::vector<int64_t>{2};
             p.padding = std::vector<int64_t>{1};
             p.ceilMode = true;
             p.goDims = {1, 2, 3, 3};
         },
         INV, {"gradOutput"}},
        {"self_too_small_for_kernel",  // 2x2 with kernel 3, no padding: pooled size 0
         [](Problem &p) {
             p.selfDims = p.giDims = {2, 3, 2, 2};
             p.kernel = std::vector<int64_t>{3};
             p.stride = std::vector<int64_t>{1};
             p.padding = std::vector<int64_t>{0};
             p.goDims = {2, 3, 1, 1};
         },
         INV, {"self", "gradOutput", "kernelSize"}},
        {"channels_65536",
         [](Problem &p) {
             p.selfDims = p.giDims = p.goDims = {1, 65536, 1, 1};
             p.kernel = std::vector<int64_t>{1};
             p.stride = std::vector<int64_t>{1};
             p.padding = std::vector<int64_t>{0};
         },
         INV, channelNames},
        {"channels_65536_rank3",
         [](Problem &p) {
             p.selfDims = p.giDims = p.goDims = {65536, 1, 1};
             p.allFmt(ACL_FORMAT_NCL);
             p.kernel = std::vector<int64_t>{1};
             p.stride = std::vector<int64_t>{1};
             p.padding = std::vector<int64_t>{0};
         },
         INV, channelNames},
    };
    return r;
}

void PrintTo(const Rule &r, std::ostream *os) { *os << r.name; }

const Rule &rule(const std::string &name) {
    for (const Rule &r : rules())
        if (r.name == name) return r;
    throw std::runtime_error("no rule " + name);
}

bool startsWith(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }

// The unmodified problem is valid (so every row below fails for its own reason), also with
// stride NULL, stride of length 0, 3-D NCL and on every product that supports the operator.
TEST(BackwardChecks, BaseProblemIsValid) {
    for (const char *product : {"atlas-a2", "atlas-a3", "atlas-training", "atlas-inference"}) {
        Problem p;
        p.product = product;
        p.allDt(ACL_FLOAT16);
        Outcome o;
        ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
        EXPECT_EQ(o.status, ACLNN_SUCCESS) << product << ": " << o.message;
    }
    Problem p;
    p.stride.reset();  // NULL stride = kernel (3): 6 + 2 - 3 = 5 / 3 + 1 = 2
    p.goDims = {2, 3, 2, 2};
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    p.stride = std::vector<int64_t>{};
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    Problem q;
    q.allFmt(ACL_FORMAT_NCL);
    q.goDims = {3, 3, 3};
    q.selfDims = q.giDims = {3, 6, 6};
    ASSERT_NO_FATAL_FAILURE(callPhase1(q, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
}

class BackwardCheckRules : public ::testing::TestWithParam<Rule> {};

// Empty calls succeed before the channel limit, and a window that fits nowhere pools to an empty
// gradOutput, which is such a call (ops.md: empty gradOutput => success; CANN computes no pooled
// size): gradInput is left as it was, as CANN's empty return leaves it.
TEST(BackwardChecks, EmptyBeforeChannelLimitAndPooledSize) {
    Problem p;
    p.selfDims = p.giDims = {0, 65536, 2, 2};
    p.goDims = {0, 65536, 1, 1};
    p.kernel = std::vector<int64_t>{2};
    p.stride = std::vector<int64_t>{2};
    p.padding = std::vector<int64_t>{0};
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    Problem q;
    q.selfDims = q.giDims = {1, 2, 1, 1};
    q.goDims = {1, 2, 0, 0};  // (1 + 2 - 4) / 1 + 1 = 0
    q.kernel = std::vector<int64_t>{4};
    q.stride = std::vector<int64_t>{1};
    q.padding = std::vector<int64_t>{1};
    ASSERT_NO_FATAL_FAILURE(callPhase1(q, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    q.goDims = {1, 2, 1, 1};  // a gradOutput that is not the (empty) pooled shape
    ASSERT_NO_FATAL_FAILURE(callPhase1(q, o));
    EXPECT_EQ(o.status, ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(o.message.find("pooled shape of self [1,2,0,0]"), std::string::npos) << o.message;
}

// CANN checks the training / inference divisorOverride range when it builds the graph: after its
// empty-tensor return, and after the shapes.
TEST(BackwardChecks, DivisorRangeAfterTheEmptyReturn) {
    Problem p;
    p.product = "atlas-training";
    p.allDt(ACL_FLOAT16);
    p.goDims[0] = p.selfDims[0] = p.giDims[0] = 0;
    p.divisorOverride = 1000;
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    p = Problem{};
    p.product = "atlas-training";
    p.allDt(ACL_FLOAT16);
    p.divisorOverride = 1000;
    p.giDims = {2, 3, 6, 7};
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(messageContains(o.message, {"gradInput shape"})) << o.message;
}

TEST_P(BackwardCheckRules, RejectedWithStatusAndMessage) {
    const Rule &r = GetParam();
    Problem p;
    r.mutate(p);
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, r.status) << o.message;
    EXPECT_TRUE(startsWith(o.message, "aclnnAvgPool2dBackward")) << "message: \"" << o.message << "\"";
    EXPECT_TRUE(messageContains(o.message, r.anyOf));
    if (r.namesProduct) {
        EXPECT_TRUE(messageContains(o.message, {productNameSubstr(p.product)}));
    }
    EXPECT_EQ(o.message.find('\n'), std::string::npos) << "one line expected";
}

INSTANTIATE_TEST_SUITE_P(Rules, BackwardCheckRules, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule> &info) { return info.param.name; });

// ------------------------------------------------------------------------------------------------
// Check order: with faults A (earlier category) and B (later), the call reports A.
// ------------------------------------------------------------------------------------------------
struct OrderPair {
    std::string first, second;
};

void PrintTo(const OrderPair &p, std::ostream *os) { *os << p.first << " before " << p.second; }

class BackwardCheckOrder : public ::testing::TestWithParam<OrderPair> {};

TEST_P(BackwardCheckOrder, EarlierCategoryWins) {
    const Rule &a = rule(GetParam().first);
    const Rule &b = rule(GetParam().second);
    Problem pa, pb, pab;
    a.mutate(pa);
    b.mutate(pb);
    b.mutate(pab);
    a.mutate(pab);
    Outcome oa, ob, oab;
    ASSERT_NO_FATAL_FAILURE(callPhase1(pa, oa));
    ASSERT_NO_FATAL_FAILURE(callPhase1(pb, ob));
    ASSERT_NO_FATAL_FAILURE(callPhase1(pab, oab));
    ASSERT_EQ(oa.status, a.status) << oa.message;
    ASSERT_EQ(ob.status, b.status) << ob.message;
    ASSERT_NE(oa.message, ob.message) << "the pair does not discriminate";
    EXPECT_EQ(oab.status, a.status) << oab.message;
    EXPECT_TRUE(messageContains(oab.message, a.anyOf));
    if (a.namesProduct) {
        EXPECT_TRUE(messageContains(oab.message, {productNameSubstr(pab.product)}));
    }
    // Names that B's message uses and A's does not must not appear: B was not reported.
    bool discriminated = false;
    for (const std::string &n : b.anyOf) {
        if (oa.message.find(n) == std::string::npos) {
            discriminated = true;
            EXPECT_EQ(oab.message.find(n), std::string::npos)
                << "reported the later fault: \"" << oab.message << "\" (A alone: \"" << oa.message << "\")";
        }
    }
    if (!discriminated) {
        EXPECT_EQ(oab.message, oa.message);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Pairs, BackwardCheckOrder,
    ::testing::Values(OrderPair{"null_workspaceSize", "null_gradOutput"},
                      OrderPair{"null_executor", "null_gradOutput"}, OrderPair{"null_gradOutput", "null_self"},
                      OrderPair{"null_self", "null_kernelSize"}, OrderPair{"null_kernelSize", "null_padding"},
                      OrderPair{"null_padding", "null_gradInput"}, OrderPair{"null_gradInput", "dtype_all_int32_a2"},
                      OrderPair{"null_self", "op_unsupported_200i"},
                      OrderPair{"null_gradOutput", "kernel_zero"},
                      OrderPair{"op_unsupported_200i", "dtype_all_int32_a2"},
                      OrderPair{"op_unsupported_200i", "kernel_zero"},
                      OrderPair{"dtype_all_bf16_training", "format_gradInput_NC1HWC0"},
                      OrderPair{"dtype_self_double_a2", "mismatch_gradInput_f16"},
                      OrderPair{"dtype_gradInput_int8_a2", "cube_4_a2"},
                      OrderPair{"mismatch_gradInput_f16", "format_self_NHWC"},
                      OrderPair{"mismatch_self_bf16", "rank_gradOutput_2"},
                      OrderPair{"format_gradOutput_ND", "rank_self_5"},
                      OrderPair{"format_self_NHWC", "kernel_zero"},
                      OrderPair{"rank_gradInput_5", "kernelSize_len3"},
                      OrderPair{"rank_self_5", "padding_len0"},
                      OrderPair{"padding_len3", "divisor_256_training"},
                      OrderPair{"stride_len3", "cube_4_a2"},
                      // (the divisor range is checked as CANN builds the graph: after the others)
                      OrderPair{"cube_3_float16_training", "divisor_256_training"},
                      OrderPair{"kernel_zero", "divisor_1000_inference"},
                      OrderPair{"gradInput_w_plus1", "divisor_1000_inference"},
                      OrderPair{"cube_4_a2", "kernel_zero"}, OrderPair{"cube_2_bf16_a2", "padding_negative"},
                      OrderPair{"kernel_zero", "gradInput_w_plus1"}, OrderPair{"stride_zero", "padding_negative"},
                      OrderPair{"kernel_w_zero", "stride_zero"},
                      OrderPair{"padding_gt_half_kernel", "gradOutput_h_plus1"},
                      OrderPair{"gradInput_w_plus1", "gradOutput_h_plus1"}),
    [](const ::testing::TestParamInfo<OrderPair> &info) { return info.param.first + "_before_" + info.param.second; });

// ------------------------------------------------------------------------------------------------
// Error message contract.
// ------------------------------------------------------------------------------------------------
TEST(BackwardErrorMessage, ReadingClearsIt) {
    Problem p;
    p.kernel = std::vector<int64_t>{0};
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    ASSERT_EQ(o.status, ACLNN_ERR_PARAM_INVALID);
    ASSERT_FALSE(o.message.empty());
    EXPECT_EQ(recentErr(), "");  // callPhase1 read it already
}

TEST(BackwardErrorMessage, IsThreadLocal) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    recentErr();
    std::string other;
    aclnnStatus st = 0;
    std::thread t([&] {
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        IntArray k(std::vector<int64_t>{2}), pd(std::vector<int64_t>{0});
        st = aclnnAvgPool2dBackwardGetWorkspaceSize(nullptr, nullptr, k.a, nullptr, pd.a, false, true, 0, 0, nullptr,
                                                    &ws, &exec);
        other = recentErr();
    });
    t.join();
    EXPECT_EQ(st, ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(messageContains(other, {"gradOutput"}));
    EXPECT_EQ(recentErr(), "") << "the other thread's error leaked into this thread";
}

// Phase 2 with a NULL executor fails cleanly.
TEST(BackwardErrorMessage, NullExecutorInPhase2) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    EXPECT_NE(aclnnAvgPool2dBackward(nullptr, 0, nullptr, Runtime::stream()), ACLNN_SUCCESS);
    recentErr();
}

}  // namespace
}  // namespace apt
