// MaxUnpool2dBackward argument checks, one row per rule of ops.md (NULL -> 161001; product
// support, dtype lists, equal dtypes, out castable, formats, ranks, shapes, outputSize, empty
// gradOutput -> 161002), rows that must pass, and the check order: a call with two faults reports
// the one CANN checks first.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

struct Problem {
    std::string product = "atlas-a2";
    aclDataType goDt = ACL_FLOAT, selfDt = ACL_FLOAT, idxDt = ACL_INT64, outDt = ACL_FLOAT;
    aclFormat goFmt = ACL_FORMAT_ND, selfFmt = ACL_FORMAT_ND, idxFmt = ACL_FORMAT_ND, outFmt = ACL_FORMAT_ND;
    std::vector<int64_t> goDims{2, 3, 8, 8}, selfDims{2, 3, 4, 4}, idxDims{2, 3, 4, 4}, outDims{2, 3, 4, 4};
    std::optional<std::vector<int64_t>> outputSize = std::vector<int64_t>{8, 8};
    bool nullGo = false, nullSelf = false, nullIdx = false, nullOut = false, nullWs = false, nullExec = false;

    void allDt(aclDataType dt) { goDt = selfDt = outDt = dt; }
    void allFmt(aclFormat f) { goFmt = selfFmt = idxFmt = outFmt = f; }
    void rank3() {
        goDims = {3, 8, 8};
        selfDims = idxDims = outDims = {3, 4, 4};
    }
};

struct Outcome {
    aclnnStatus status = -1, phase2 = -1;
    std::string message;
};

// Phase 1; a successful executor is run with valid (zero) indices, which must succeed too.
void callPhase1(const Problem &p, Outcome &o) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use(p.product));
    Tensor go(p.goDt, p.goDims, p.goFmt), self(p.selfDt, p.selfDims, p.selfFmt), idx(p.idxDt, p.idxDims, p.idxFmt),
        out(p.outDt, p.outDims, p.outFmt);
    ASSERT_NE(go.get(), nullptr) << recentErr();
    ASSERT_NE(self.get(), nullptr) << recentErr();
    ASSERT_NE(idx.get(), nullptr) << recentErr();
    ASSERT_NE(out.get(), nullptr) << recentErr();
    idx.fillViewBytes(0);
    IntArray os(p.outputSize);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    recentErr();  // clear
    o.status = aclnnMaxUnpool2dBackwardGetWorkspaceSize(p.nullGo ? nullptr : go.get(), p.nullSelf ? nullptr : self.get(),
                                                        p.nullIdx ? nullptr : idx.get(), os.a,
                                                        p.nullOut ? nullptr : out.get(), p.nullWs ? nullptr : &ws,
                                                        p.nullExec ? nullptr : &exec);
    o.message = recentErr();
    if (o.status == ACLNN_SUCCESS && exec) {
        Workspace w;
        o.phase2 = aclnnMaxUnpool2dBackward(w.ptr(ws), ws, exec, Runtime::stream());
        aclrtSynchronizeStream(Runtime::stream());
        if (o.phase2 != ACLNN_SUCCESS) o.message = recentErr();
    }
    EXPECT_TRUE(out.canaryIntact());
}

struct Rule {
    std::string name;
    std::function<void(Problem &)> mutate;
    aclnnStatus status;
    std::vector<std::string> mentions;  // the message contains all of these
};
void PrintTo(const Rule &r, std::ostream *os) { *os << r.name; }

const std::vector<Rule> &rules() {
    const aclnnStatus NUL = ACLNN_ERR_PARAM_NULLPTR, INV = ACLNN_ERR_PARAM_INVALID, OK = ACLNN_SUCCESS;
    static const std::vector<Rule> r{
        // ---- NULL pointers (161001): workspaceSize/executor first, then signature order ----
        {"null_workspaceSize", [](Problem &p) { p.nullWs = true; }, NUL, {"workspaceSize"}},
        {"null_executor", [](Problem &p) { p.nullExec = true; }, NUL, {"executor"}},
        {"null_gradOutput", [](Problem &p) { p.nullGo = true; }, NUL, {"gradOutput"}},
        {"null_self", [](Problem &p) { p.nullSelf = true; }, NUL, {"self"}},
        {"null_indices", [](Problem &p) { p.nullIdx = true; }, NUL, {"indices"}},
        {"null_outputSize", [](Problem &p) { p.outputSize.reset(); }, NUL, {"outputSize"}},
        {"null_out", [](Problem &p) { p.nullOut = true; }, NUL, {"out"}},
        // ---- operator support per product ----
        {"unsupported_inference", [](Problem &p) { p.product = "atlas-inference"; }, INV, {"Atlas inference series"}},
        {"unsupported_200i", [](Problem &p) { p.product = "atlas-200i-500-a2"; }, INV, {"Atlas 200I/500 A2"}},
        // ---- dtype lists (per product) ----
        {"dtype_all_double", [](Problem &p) { p.allDt(ACL_DOUBLE); }, INV, {"gradOutput", "DOUBLE", "Atlas A2"}},
        {"dtype_all_bf16_a3", [](Problem &p) { p.product = "atlas-a3"; p.allDt(ACL_BF16); }, INV, {"gradOutput", "Atlas A3"}},
        {"dtype_self_uint16", [](Problem &p) { p.selfDt = ACL_UINT16; }, INV, {"self", "UINT16"}},
        {"dtype_indices_float", [](Problem &p) { p.idxDt = ACL_FLOAT; }, INV, {"indices", "FLOAT"}},
        {"dtype_indices_int16", [](Problem &p) { p.idxDt = ACL_INT16; }, INV, {"indices", "INT16"}},
        {"dtype_indices_uint8_training", [](Problem &p) { p.product = "atlas-training"; p.idxDt = ACL_UINT8; }, INV,
         {"indices", "Atlas training series"}},
        {"dtype_out_double", [](Problem &p) { p.outDt = ACL_DOUBLE; }, INV, {"out dtype DOUBLE"}},
        {"dtype_out_bf16", [](Problem &p) { p.outDt = ACL_BF16; }, INV, {"out dtype BFLOAT16"}},
        // ---- gradOutput and self share a dtype ----
        {"mismatch_self_int32", [](Problem &p) { p.selfDt = ACL_INT32; }, INV, {"self dtype INT32", "gradOutput"}},
        {"mismatch_self_f16", [](Problem &p) { p.goDt = p.outDt = ACL_FLOAT16; }, INV, {"self", "gradOutput"}},
        // ---- out: a dtype gradOutput casts to ----
        {"cast_float_to_int32", [](Problem &p) { p.outDt = ACL_INT32; }, INV, {"out dtype INT32", "gradOutput dtype FLOAT"}},
        {"cast_float_to_uint8", [](Problem &p) { p.outDt = ACL_UINT8; }, INV, {"out dtype UINT8"}},
        {"cast_f16_to_bool", [](Problem &p) { p.goDt = p.selfDt = ACL_FLOAT16; p.outDt = ACL_BOOL; }, INV, {"out dtype BOOL"}},
        {"cast_int8_to_bool", [](Problem &p) { p.goDt = p.selfDt = ACL_INT8; p.outDt = ACL_BOOL; }, INV, {"out dtype BOOL"}},
        {"cast_ok_float_to_f16", [](Problem &p) { p.outDt = ACL_FLOAT16; }, OK, {}},
        {"cast_ok_int64_to_f16", [](Problem &p) { p.goDt = p.selfDt = ACL_INT64; p.outDt = ACL_FLOAT16; }, OK, {}},
        {"cast_ok_bool_to_int8", [](Problem &p) { p.goDt = p.selfDt = ACL_BOOL; p.outDt = ACL_INT8; }, OK, {}},
        {"cast_ok_uint8_to_int64", [](Problem &p) { p.goDt = p.selfDt = ACL_UINT8; p.outDt = ACL_INT64; }, OK, {}},
        // ---- formats: ND (public layouts are treated as ND), private layouts rejected ----
        {"format_gradOutput_NC1HWC0", [](Problem &p) { p.goFmt = ACL_FORMAT_NC1HWC0; }, INV, {"gradOutput format NC1HWC0"}},
        {"format_self_FRACTAL_Z", [](Problem &p) { p.selfFmt = ACL_FORMAT_FRACTAL_Z; }, INV, {"self format FRACTAL_Z"}},
        {"format_indices_FRACTAL_NZ", [](Problem &p) { p.idxFmt = ACL_FORMAT_FRACTAL_NZ; }, INV, {"indices format"}},
        {"format_out_NDC1HWC0", [](Problem &p) { p.outFmt = ACL_FORMAT_NDC1HWC0; }, INV, {"out format"}},
        // a format is a tag here, not a rank (format_fixes_rank: false in the manifest)
        {"format_ok_NCHW_on_rank3", [](Problem &p) { p.rank3(); p.allFmt(ACL_FORMAT_NCHW); }, OK, {}},
        {"format_ok_NCL_on_rank4", [](Problem &p) { p.outFmt = ACL_FORMAT_NCL; }, OK, {}},
        {"format_ok_all_NCHW", [](Problem &p) { p.allFmt(ACL_FORMAT_NCHW); }, OK, {}},
        {"format_ok_rank3_NCL", [](Problem &p) { p.rank3(); p.allFmt(ACL_FORMAT_NCL); }, OK, {}},
        {"format_ok_mixed", [](Problem &p) { p.goFmt = ACL_FORMAT_NCHW; p.idxFmt = ACL_FORMAT_NHWC; }, OK, {}},
        // ---- ranks ----
        {"rank_self_2", [](Problem &p) { p.selfDims = p.idxDims = p.outDims = {4, 4}; }, INV, {"self", "rank"}},
        {"rank_all_5", [](Problem &p) { p.goDims = {1, 2, 3, 8, 8}; p.selfDims = p.idxDims = p.outDims = {1, 2, 3, 4, 4}; },
         INV, {"gradOutput", "rank"}},
        {"rank_gradOutput_3_self_4", [](Problem &p) { p.goDims = {3, 8, 8}; }, INV,
         {"Expected dim of self and gradOutput to be equal"}},
        // ---- shapes ----
        {"shape_N_mismatch", [](Problem &p) { p.goDims = {3, 3, 8, 8}; }, INV, {"(N, C)", "self: (2, 3)", "gradOutput: (3, 3)"}},
        {"shape_C_mismatch", [](Problem &p) { p.goDims = {2, 4, 8, 8}; }, INV, {"(N, C)"}},
        {"shape_C_mismatch_rank3", [](Problem &p) { p.rank3(); p.goDims = {2, 8, 8}; }, INV, {"(C)", "self: (3)"}},
        {"shape_indices", [](Problem &p) { p.idxDims = {2, 3, 4, 5}; }, INV, {"indices shape [2,3,4,5]"}},
        {"shape_out", [](Problem &p) { p.outDims = {2, 3, 5, 4}; }, INV, {"out shape [2,3,5,4]"}},
        {"outputSize_length_1", [](Problem &p) { p.outputSize = std::vector<int64_t>{8}; }, INV, {"outputSize", "2", "1"}},
        {"outputSize_length_3", [](Problem &p) { p.outputSize = std::vector<int64_t>{8, 8, 1}; }, INV, {"outputSize"}},
        {"outputSize_length_0", [](Problem &p) { p.outputSize = std::vector<int64_t>{}; }, INV, {"outputSize"}},
        {"outputSize_mismatch", [](Problem &p) { p.outputSize = std::vector<int64_t>{8, 9}; }, INV,
         {"Inconsistent gradOutput size", "8x8"}},
        {"outputSize_negative", [](Problem &p) { p.outputSize = std::vector<int64_t>{-8, 8}; }, INV, {"Inconsistent"}},
        {"empty_gradOutput_nonempty_self", [](Problem &p) { p.goDims = {2, 3, 0, 8}; p.outputSize = std::vector<int64_t>{0, 8}; },
         INV, {"gradOutput", "empty"}},
        // ---- passes ----
        {"ok_default", [](Problem &) {}, OK, {}},
        {"ok_int32_indices", [](Problem &p) { p.idxDt = ACL_INT32; }, OK, {}},
        {"ok_training", [](Problem &p) { p.product = "atlas-training"; }, OK, {}},
        {"ok_a3_bool", [](Problem &p) { p.product = "atlas-a3"; p.allDt(ACL_BOOL); }, OK, {}},
        {"ok_rank3", [](Problem &p) { p.rank3(); }, OK, {}},
        {"ok_self_larger_than_gradOutput", [](Problem &p) { p.goDims = {2, 3, 2, 2}; p.outputSize = std::vector<int64_t>{2, 2}; },
         OK, {}},

        // ---- order: a call with two faults reports the category CANN checks first ----
        {"order_null_before_dtype", [](Problem &p) { p.nullOut = true; p.goDt = ACL_DOUBLE; }, NUL, {"out"}},
        {"order_null_before_product", [](Problem &p) { p.nullIdx = true; p.product = "atlas-inference"; }, NUL, {"indices"}},
        {"order_product_before_dtype", [](Problem &p) { p.product = "atlas-200i-500-a2"; p.idxDt = ACL_FLOAT; }, INV,
         {"not supported on Atlas 200I/500 A2"}},
        {"order_dtype_before_shape", [](Problem &p) { p.idxDt = ACL_FLOAT; p.outDims = {1, 1, 1, 1}; }, INV, {"indices dtype"}},
        {"order_cast_before_shape", [](Problem &p) { p.outDt = ACL_INT32; p.goDims = {3, 3, 8, 8}; }, INV, {"out dtype INT32"}},
        {"order_cast_before_outputSize", [](Problem &p) { p.outDt = ACL_INT8; p.outputSize = std::vector<int64_t>{1}; }, INV,
         {"out dtype INT8"}},
        {"order_dim_before_indices", [](Problem &p) { p.goDims = {3, 8, 8}; p.idxDims = {2, 3, 4, 5}; }, INV,
         {"Expected dim of self and gradOutput"}},
        {"order_NC_before_indices", [](Problem &p) { p.goDims = {2, 4, 8, 8}; p.idxDims = {2, 3, 4, 5}; }, INV, {"(N, C)"}},
        {"order_indices_before_out", [](Problem &p) { p.idxDims = {2, 3, 4, 5}; p.outDims = {2, 3, 5, 4}; }, INV,
         {"indices shape"}},
        {"order_out_before_outputSize", [](Problem &p) { p.outDims = {2, 3, 5, 4}; p.outputSize = std::vector<int64_t>{8}; },
         INV, {"out shape"}},
        {"order_outputSize_length_before_value", [](Problem &p) { p.outputSize = std::vector<int64_t>{9, 9, 9}; }, INV,
         {"size of outputSize must be 2"}},
        {"order_outputSize_before_empty", [](Problem &p) { p.goDims = {2, 3, 0, 8}; }, INV, {"Inconsistent gradOutput size"}},
    };
    return r;
}

class Checks : public ::testing::TestWithParam<Rule> {};

TEST_P(Checks, StatusAndMessage) {
    const Rule &rule = GetParam();
    Problem p;
    rule.mutate(p);
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(callPhase1(p, o));
    EXPECT_EQ(o.status, rule.status) << o.message;
    if (rule.status == ACLNN_SUCCESS) {
        EXPECT_EQ(o.phase2, ACLNN_SUCCESS) << o.message;
        return;
    }
    EXPECT_TRUE(messageContains(o.message, {"aclnnMaxUnpool2dBackward"}));
    EXPECT_TRUE(messageContains(o.message, rule.mentions));
}

INSTANTIATE_TEST_SUITE_P(Rules, Checks, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule> &info) { return info.param.name; });

}  // namespace
}  // namespace upt
