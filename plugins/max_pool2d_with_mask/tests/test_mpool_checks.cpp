// Argument checks of MaxPool2dWithMaskBackward and MaxPool2dWithMask, one row per rule of ops.md in
// CANN's order (hicann/ops-nn op_api): NULLs (kernelSize, self, gradOutput first) and the backward's
// kernelSize-length quirk -> 161001; product, dtypes, formats, ranks, attributes, shapes, the mask
// shape -> 161002; rows with two faults show which check comes first. Plus the product x dtype
// matrix and empty tensors.
#include <functional>

#include "mpool_test_util.hpp"

namespace mpt {
namespace {

// A valid backward call (self 2x3x6x6, k3 s2 p1 -> 3x3; mask 2x3x9x64) that rows then break.
struct Call {
    std::string product = "atlas-a2";
    aclDataType goDt = ACL_FLOAT, selfDt = ACL_FLOAT, giDt = ACL_FLOAT, maskDt = ACL_INT8;
    aclFormat goFmt = ACL_FORMAT_NCHW, selfFmt = ACL_FORMAT_NCHW, giFmt = ACL_FORMAT_NCHW, maskFmt = ACL_FORMAT_NCHW;
    std::vector<int64_t> goDims{2, 3, 3, 3}, selfDims{2, 3, 6, 6}, giDims{2, 3, 6, 6}, maskDims{2, 3, 9, 64};
    std::optional<std::vector<int64_t>> kernel = std::vector<int64_t>{3}, stride = std::vector<int64_t>{2},
                                        padding = std::vector<int64_t>{1}, dilation = std::vector<int64_t>{1};
    bool ceil = false;
    bool nullGo = false, nullSelf = false, nullMask = false, nullGi = false, giStrideZero = false;
    void dt(aclDataType d) { goDt = selfDt = giDt = d; }
};

struct Outcome {
    aclnnStatus status;
    std::string message;
    uint64_t workspace;
};

Outcome phase1(const Call &c) {
    Runtime::use(c.product);
    Tensor go(c.goDt, c.goDims, c.goFmt), self(c.selfDt, c.selfDims, c.selfFmt), mask(c.maskDt, c.maskDims, c.maskFmt);
    Tensor gi(c.giDt, c.giDims, c.giFmt);
    aclTensor *giT = gi.get();
    std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor *)> zero(nullptr, aclDestroyTensor);
    if (c.giStrideZero) {  // gradInput with stride 0 on its C dim overlaps itself
        const int64_t strides[4] = {36, 0, 6, 1}, storage[1] = {72};
        zero.reset(aclCreateTensor(c.giDims.data(), 4, c.giDt, strides, 0, c.giFmt, storage, 1, gi.data()));
        giT = zero.get();
    }
    IntArray k(c.kernel), s(c.stride), p(c.padding), d(c.dilation);
    uint64_t ws = 99;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(
        c.nullGo ? nullptr : go.get(), c.nullSelf ? nullptr : self.get(), c.nullMask ? nullptr : mask.get(), k.a, s.a, p.a,
        d.a, c.ceil, c.nullGi ? nullptr : giT, &ws, &exec);
    Outcome o{st, st ? lastError() : "", ws};
    if (st == ACLNN_SUCCESS && exec) aclDestroyAclOpExecutor(exec);  // not repeatable: destroy is allowed
    return o;
}

struct Row {
    const char *name;
    std::function<void(Call &)> edit;
    aclnnStatus code;
    const char *says;  // a part of the message
};

const std::vector<Row> &backwardRows() {
    static const std::vector<Row> rows = {
        // NULLs: kernelSize, self, gradOutput first (CANN), then signature order
        {"null gradOutput", [](Call &c) { c.nullGo = true; }, 161001, "gradOutput"},
        {"null self", [](Call &c) { c.nullSelf = true; }, 161001, "self"},
        {"null indices", [](Call &c) { c.nullMask = true; }, 161001, "indices"},
        {"null kernelSize", [](Call &c) { c.kernel.reset(); }, 161001, "kernelSize"},
        {"null stride", [](Call &c) { c.stride.reset(); }, 161001, "stride"},
        {"null padding", [](Call &c) { c.padding.reset(); }, 161001, "padding"},
        {"null dilation", [](Call &c) { c.dilation.reset(); }, 161001, "dilation"},
        {"null gradInput", [](Call &c) { c.nullGi = true; }, 161001, "gradInput"},
        {"null self before null gradOutput", [](Call &c) { c.nullGo = c.nullSelf = true; }, 161001, "self"},
        {"null kernelSize before null self", [](Call &c) { c.nullSelf = true, c.kernel.reset(); }, 161001, "kernelSize"},
        {"null gradOutput before null indices", [](Call &c) { c.nullGo = c.nullMask = true; }, 161001, "gradOutput"},
        // the quirk: kernelSize length is a NULL-pointer error
        {"kernelSize length 0", [](Call &c) { c.kernel = std::vector<int64_t>{}; }, 161001, "kernelSize must have 1 or 2"},
        {"kernelSize length 3", [](Call &c) { c.kernel = std::vector<int64_t>{3, 3, 3}; }, 161001, "kernelSize must have 1 or 2"},
        // product support and dtypes per product
        {"inference", [](Call &c) { c.product = "atlas-inference"; }, 161002, "Atlas inference series"},
        {"200I/500 A2", [](Call &c) { c.product = "atlas-200i-500-a2"; }, 161002, "Atlas 200I/500 A2"},
        {"BF16 on training", [](Call &c) { c.product = "atlas-training", c.dt(ACL_BF16); }, 161002, "Atlas training series"},
        {"DOUBLE", [](Call &c) { c.dt(ACL_DOUBLE); }, 161002, "DOUBLE"},
        {"indices INT32", [](Call &c) { c.maskDt = ACL_INT32; }, 161002, "indices dtype INT32"},
        {"gradOutput FLOAT16 vs self FLOAT", [](Call &c) { c.goDt = ACL_FLOAT16; }, 161002, "gradOutput dtype"},
        {"gradInput BF16 vs self FLOAT", [](Call &c) { c.giDt = ACL_BF16; }, 161002, "gradInput dtype"},
        // formats and ranks
        {"NHWC", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = ACL_FORMAT_NHWC; }, 161002, "format NHWC"},
        {"private mask format", [](Call &c) { c.maskFmt = ACL_FORMAT_NC1HWC0; }, 161002, "indices format"},
        // a format is a tag here, not a rank (CANN rejects only private formats): NCHW on (C, H, W)
        {"NCHW tag on rank 3", [](Call &c) { c.goDims = {3, 3, 3}, c.selfDims = c.giDims = {3, 6, 6}, c.maskDims = {3, 9, 64}; }, ACLNN_SUCCESS, ""},
        {"NCL tag on rank 4", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = c.maskFmt = ACL_FORMAT_NCL; }, ACLNN_SUCCESS, ""},
        {"self ND vs gradOutput NCHW", [](Call &c) { c.selfFmt = ACL_FORMAT_ND; }, 161002, "must equal self format"},
        {"rank 5", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = c.maskFmt = ACL_FORMAT_ND, c.goDims = {1, 2, 3, 3, 3}, c.selfDims = c.giDims = {1, 2, 3, 6, 6}, c.maskDims = {1, 2, 3, 9, 64}; }, 161002, "rank"},
        {"rank 2", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = c.maskFmt = ACL_FORMAT_ND, c.goDims = {3, 3}, c.selfDims = c.giDims = {6, 6}, c.maskDims = {9, 64}; }, 161002, "rank"},
        {"gradInput overlaps itself", [](Call &c) { c.giStrideZero = true; }, 161002, "overlap"},
        // attributes
        {"stride length 3", [](Call &c) { c.stride = std::vector<int64_t>{2, 2, 2}; }, 161002, "stride"},
        {"padding length 0", [](Call &c) { c.padding = std::vector<int64_t>{}; }, 161002, "padding"},
        {"dilation length 3", [](Call &c) { c.dilation = std::vector<int64_t>{1, 1, 1}; }, 161002, "dilation"},
        {"dilation 2", [](Call &c) { c.dilation = std::vector<int64_t>{2}; }, 161002, "dilation"},
        {"dilation (1, 2)", [](Call &c) { c.dilation = std::vector<int64_t>{1, 2}; }, 161002, "dilation"},
        {"kernel 0", [](Call &c) { c.kernel = std::vector<int64_t>{0}; }, 161002, "kernelSize values must be > 0"},
        {"kernel -1", [](Call &c) { c.kernel = std::vector<int64_t>{3, -1}; }, 161002, "kernelSize values must be > 0"},
        {"stride 0", [](Call &c) { c.stride = std::vector<int64_t>{0}; }, 161002, "stride values must be > 0"},
        // beyond int32: the pooled size's arithmetic would overflow (found by the argument fuzzer)
        {"stride 2^62", [](Call &c) { c.stride = std::vector<int64_t>{2, int64_t{1} << 62}; }, 161002, "stride values must be at most 2147483647"},
        {"kernel 2^31", [](Call &c) { c.kernel = std::vector<int64_t>{int64_t{1} << 31}; }, 161002, "kernelSize values must be at most 2147483647"},
        {"padding -1", [](Call &c) { c.padding = std::vector<int64_t>{-1}; }, 161002, "padding values must be >= 0"},
        {"padding > kernel / 2", [](Call &c) { c.padding = std::vector<int64_t>{2}; }, 161002, "at most half"},
        // shapes
        {"gradInput shape", [](Call &c) { c.giDims = {2, 3, 6, 7}; }, 161002, "gradInput shape"},
        {"C = 0", [](Call &c) { c.selfDims = c.giDims = {2, 0, 6, 6}, c.goDims = {2, 0, 3, 3}, c.maskDims = {2, 0, 9, 64}; }, 161002, "non-empty in C, H and W"},
        {"H = 0", [](Call &c) { c.selfDims = c.giDims = {2, 3, 0, 6}; }, 161002, "non-empty in C, H and W"},
        {"input smaller than the kernel", [](Call &c) { c.kernel = std::vector<int64_t>{4}, c.padding = std::vector<int64_t>{0}, c.selfDims = c.giDims = {2, 3, 3, 3}; }, 161002, "too small"},
        {"gradOutput shape", [](Call &c) { c.goDims = {2, 3, 3, 4}; }, 161002, "gradOutput shape"},
        {"gradOutput rank 3", [](Call &c) { c.goDims = {3, 3, 3}, c.goFmt = ACL_FORMAT_NCL; }, 161002, "format"},
        {"ceil mode pools 6 to 4", [](Call &c) { c.ceil = true; }, 161002, "gradOutput shape"},
        {"mask last dim", [](Call &c) { c.maskDims = {2, 3, 9, 32}; }, 161002, "mask shape"},
        {"mask kernel dim", [](Call &c) { c.maskDims = {2, 3, 4, 64}; }, 161002, "mask shape"},
        {"mask without N", [](Call &c) { c.maskDims = {3, 9, 64}, c.maskFmt = ACL_FORMAT_ND; }, 161002, "mask shape"},
        // the first failing category wins
        {"dtype before shape", [](Call &c) { c.dt(ACL_DOUBLE), c.goDims = {2, 3, 4, 4}; }, 161002, "DOUBLE"},
        {"format before attribute", [](Call &c) { c.maskFmt = ACL_FORMAT_FRACTAL_Z, c.padding = std::vector<int64_t>{5}; }, 161002, "indices format"},
        {"kernel value before shapes", [](Call &c) { c.kernel = std::vector<int64_t>{0}, c.goDims = {1, 1, 1, 1}; }, 161002, "kernelSize values"},
        {"kernelSize length before NULL stride", [](Call &c) { c.kernel = std::vector<int64_t>{1, 2, 3}, c.stride.reset(); }, 161001, ""},
        // CANN's length quirk precedes the dtype check (the manifest's early check).
        {"kernelSize length with a bad dtype", [](Call &c) { c.kernel = std::vector<int64_t>{}, c.dt(ACL_DOUBLE); }, 161001, "kernelSize must have 1 or 2 elements, got 0"},
    };
    return rows;
}

TEST(MaxPool2dWithMaskBackwardChecks, EveryRuleInCannOrder) {
    for (const Row &r : backwardRows()) {
        Call c;
        r.edit(c);
        const Outcome o = phase1(c);
        EXPECT_EQ(o.status, r.code) << r.name << ": " << o.message;
        EXPECT_NE(o.message.find(r.says), std::string::npos) << r.name << ": \"" << o.message << "\"";
        if (r.code) {
            EXPECT_NE(o.message.find("aclnnMaxPool2dWithMaskBackward"), std::string::npos) << r.name;
        }
    }
}

TEST(MaxPool2dWithMaskBackwardChecks, ValidVariantsPass) {
    const std::vector<std::pair<const char *, std::function<void(Call &)>>> ok = {
        {"as is", [](Call &) {}},
        {"stride empty = kernel", [](Call &c) { c.stride = std::vector<int64_t>{}, c.padding = std::vector<int64_t>{0}, c.goDims = {2, 3, 2, 2}, c.maskDims = {2, 3, 9, 64}; }},
        {"rank 3 ND", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = c.maskFmt = ACL_FORMAT_ND, c.goDims = {3, 3, 3}, c.selfDims = c.giDims = {3, 6, 6}, c.maskDims = {3, 9, 64}; }},
        {"rank 3 NCL", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = c.maskFmt = ACL_FORMAT_NCL, c.goDims = {3, 3, 3}, c.selfDims = c.giDims = {3, 6, 6}, c.maskDims = {3, 9, 64}; }},
        {"rank 4 ND", [](Call &c) { c.goFmt = c.selfFmt = c.giFmt = ACL_FORMAT_ND; }},
        {"dilation (1, 1)", [](Call &c) { c.dilation = std::vector<int64_t>{1, 1}; }},
        {"1x1 kernel on training (bit mask)", [](Call &c) { c.product = "atlas-training", c.kernel = std::vector<int64_t>{1}, c.stride = std::vector<int64_t>{1}, c.padding = std::vector<int64_t>{0}, c.goDims = {2, 3, 6, 6}, c.maskDims = {2, 3, 1, 128}; }},
        {"1x1 kernel, Ho*Wo = 36 on atlas-a2: the bit mask", [](Call &c) { c.kernel = std::vector<int64_t>{1}, c.stride = std::vector<int64_t>{1}, c.padding = std::vector<int64_t>{0}, c.goDims = {2, 3, 6, 6}, c.maskDims = {2, 3, 1, 128}; }},
        {"1x1 kernel, Ho*Wo = 24 fits", [](Call &c) { c.kernel = std::vector<int64_t>{1}, c.stride = std::vector<int64_t>{1}, c.padding = std::vector<int64_t>{0}, c.selfDims = c.giDims = c.goDims = {2, 3, 4, 6}, c.maskDims = {2, 3, 1, 96}; }},
    };
    for (const auto &[name, edit] : ok) {
        Call c;
        edit(c);
        const Outcome o = phase1(c);
        EXPECT_EQ(o.status, ACLNN_SUCCESS) << name << ": " << o.message;
    }
}

// products.md: backward on A3 / A2 (FLOAT, FLOAT16, BF16) and training (FLOAT, FLOAT16) only.
TEST(MaxPool2dWithMaskBackwardChecks, ProductDtypeMatrix) {
    for (const std::string &product : allProducts()) {
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            const bool full = product == "atlas-a2" || product == "atlas-a3";
            const bool ok = full || (product == "atlas-training" && dt != ACL_BF16);
            Call c;
            c.product = product;
            c.dt(dt);
            const Outcome o = phase1(c);
            EXPECT_EQ(o.status, ok ? ACLNN_SUCCESS : 161002) << product << " " << dtName(dt) << ": " << o.message;
            if (!ok) {
                EXPECT_NE(o.message.find(productName(product)), std::string::npos) << o.message;
            }
        }
    }
}

// Empty batch: success, workspace 0, nothing written (PyTorch and CANN allow only N = 0).
TEST(MaxPool2dWithMaskBackwardChecks, EmptyBatchDoesNothing) {
    for (const std::string product : {"atlas-a2", "atlas-training"}) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
        Tensor go(ACL_FLOAT, {0, 3, 3, 3}, ACL_FORMAT_NCHW), self(ACL_FLOAT, {0, 3, 6, 6}, ACL_FORMAT_NCHW),
            gi(ACL_FLOAT, {0, 3, 6, 6}, ACL_FORMAT_NCHW), mask(ACL_INT8, {0, 3, 9, 64}, ACL_FORMAT_NCHW);
        const auto before = gi.snapshot();
        IntArray k(std::vector<int64_t>{3}), s(std::vector<int64_t>{2}), p(std::vector<int64_t>{1}), d(std::vector<int64_t>{1});
        uint64_t ws = 7;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(go.get(), self.get(), mask.get(), k.a, s.a, p.a, d.a,
                                                                 false, gi.get(), &ws, &exec),
                  ACLNN_SUCCESS)
            << lastError();
        EXPECT_EQ(ws, 0u);
        EXPECT_EQ(aclnnMaxPool2dWithMaskBackward(nullptr, 0, exec, Runtime::stream()), ACLNN_SUCCESS) << lastError();
        EXPECT_EQ(gi.snapshot(), before);
    }
}

// ---- forward ----

struct FwdCall {
    std::string product = "atlas-a2";
    aclDataType selfDt = ACL_FLOAT, outDt = ACL_FLOAT, maskDt = ACL_INT8;
    aclFormat selfFmt = ACL_FORMAT_NCHW, outFmt = ACL_FORMAT_NCHW, maskFmt = ACL_FORMAT_NCHW;
    std::vector<int64_t> selfDims{2, 3, 6, 6}, outDims{2, 3, 3, 3}, maskDims{2, 3, 9, 64};
    std::optional<std::vector<int64_t>> kernel = std::vector<int64_t>{3}, stride = std::vector<int64_t>{2},
                                        padding = std::vector<int64_t>{1}, dilation = std::vector<int64_t>{1};
    bool nullSelf = false, nullOut = false, nullMask = false;
};

Outcome fwdPhase1(const FwdCall &c) {
    Runtime::use(c.product);
    Tensor self(c.selfDt, c.selfDims, c.selfFmt), out(c.outDt, c.outDims, c.outFmt), mask(c.maskDt, c.maskDims, c.maskFmt);
    IntArray k(c.kernel), s(c.stride), p(c.padding), d(c.dilation);
    uint64_t ws = 99;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = aclnnMaxPool2dWithMaskGetWorkspaceSize(c.nullSelf ? nullptr : self.get(), k.a, s.a, p.a, d.a,
                                                                  false, c.nullOut ? nullptr : out.get(),
                                                                  c.nullMask ? nullptr : mask.get(), &ws, &exec);
    Outcome o{st, st ? lastError() : "", ws};
    if (st == ACLNN_SUCCESS && exec) aclDestroyAclOpExecutor(exec);
    return o;
}

TEST(MaxPool2dWithMaskChecks, EveryRuleInCannOrder) {
    struct FRow {
        const char *name;
        std::function<void(FwdCall &)> edit;
        aclnnStatus code;
        const char *says;
    };
    const std::vector<FRow> rows = {
        {"valid", [](FwdCall &) {}, 0, ""},
        {"null self", [](FwdCall &c) { c.nullSelf = true; }, 161001, "self"},
        {"null out", [](FwdCall &c) { c.nullOut = true; }, 161001, "out"},
        {"null indices", [](FwdCall &c) { c.nullMask = true; }, 161001, "indices"},
        {"null stride", [](FwdCall &c) { c.stride.reset(); }, 161001, "stride"},
        {"null dilation", [](FwdCall &c) { c.dilation.reset(); }, 161001, "dilation"},
        {"null kernelSize before null self", [](FwdCall &c) { c.kernel.reset(), c.nullSelf = true; }, 161001, "kernelSize"},
        {"null out before null indices", [](FwdCall &c) { c.nullOut = c.nullMask = true; }, 161001, "out"},
        // the forward's kernelSize length check answers 161002 (CANN)
        {"kernelSize length 3", [](FwdCall &c) { c.kernel = std::vector<int64_t>{3, 3, 3}; }, 161002, "kernelSize"},
        {"200I/500 A2", [](FwdCall &c) { c.product = "atlas-200i-500-a2"; }, 161002, "Atlas 200I/500 A2"},
        {"FLOAT16 on inference", [](FwdCall &c) { c.product = "atlas-inference", c.selfDt = c.outDt = ACL_FLOAT16; }, 161002, "Atlas inference series"},
        {"out dtype differs", [](FwdCall &c) { c.outDt = ACL_FLOAT16; }, 161002, "out dtype"},
        {"indices UINT8", [](FwdCall &c) { c.maskDt = ACL_UINT8; }, 161002, "indices dtype"},
        {"out format differs", [](FwdCall &c) { c.outFmt = ACL_FORMAT_ND; }, 161002, "must equal self format"},
        {"dilation 2", [](FwdCall &c) { c.dilation = std::vector<int64_t>{2, 2}; }, 161002, "dilation"},
        {"padding > kernel / 2", [](FwdCall &c) { c.padding = std::vector<int64_t>{1, 2}; }, 161002, "at most half"},
        {"W = 0", [](FwdCall &c) { c.selfDims = {2, 3, 6, 0}; }, 161002, "non-empty"},
        {"out shape", [](FwdCall &c) { c.outDims = {2, 3, 3, 2}; }, 161002, "out shape"},
        {"mask shape", [](FwdCall &c) { c.maskDims = {2, 3, 9, 63}; }, 161002, "mask shape"},
        {"inference FLOAT", [](FwdCall &c) { c.product = "atlas-inference"; }, 0, ""},
        {"training FLOAT16", [](FwdCall &c) { c.product = "atlas-training", c.selfDt = c.outDt = ACL_FLOAT16; }, 0, ""},
    };
    for (const FRow &r : rows) {
        FwdCall c;
        r.edit(c);
        const Outcome o = fwdPhase1(c);
        EXPECT_EQ(o.status, r.code) << r.name << ": " << o.message;
        EXPECT_NE(o.message.find(r.says), std::string::npos) << r.name << ": \"" << o.message << "\"";
    }
}

TEST(MaxPool2dWithMaskChecks, EmptyBatchDoesNothing) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    Tensor self(ACL_BF16, {0, 3, 6, 6}, ACL_FORMAT_NCHW), out(ACL_BF16, {0, 3, 3, 3}, ACL_FORMAT_NCHW),
        mask(ACL_INT8, {0, 3, 9, 64}, ACL_FORMAT_NCHW);
    IntArray k(std::vector<int64_t>{3}), s(std::vector<int64_t>{2}), p(std::vector<int64_t>{1}), d(std::vector<int64_t>{1});
    uint64_t ws = 7;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnMaxPool2dWithMaskGetWorkspaceSize(self.get(), k.a, s.a, p.a, d.a, false, out.get(), mask.get(), &ws, &exec),
              ACLNN_SUCCESS)
        << lastError();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(aclnnMaxPool2dWithMask(nullptr, 0, exec, Runtime::stream()), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace mpt
