// Argument checks of GridSampler2DBackward, one row per rule of ops.md in CANN's order: NULLs
// (161001; an output only when its outputMask bit is set), then product, dtypes, formats, ranks,
// the mode ranges and outputMask's length, then the shape relations (161002). Rows with two faults
// show which check comes first. Each message names the parameter.
#include <functional>
#include <memory>

#include "grid_test_util.hpp"

namespace gst {
namespace {

// A valid call (input 2x3x5x6, grid 2x4x7x2, gradOutput 2x3x4x7) that rows then break.
struct Call {
    std::string product = "atlas-a2";
    aclDataType goDt = ACL_FLOAT, inDt = ACL_FLOAT, gridDt = ACL_FLOAT, igDt = ACL_FLOAT, ggDt = ACL_FLOAT;
    aclFormat goFmt = ACL_FORMAT_ND, inFmt = ACL_FORMAT_ND, gridFmt = ACL_FORMAT_ND, igFmt = ACL_FORMAT_ND, ggFmt = ACL_FORMAT_ND;
    std::vector<int64_t> goDims{2, 3, 4, 7}, inDims{2, 3, 5, 6}, gridDims{2, 4, 7, 2}, igDims{2, 3, 5, 6}, ggDims{2, 4, 7, 2};
    int64_t interp = 0, padding = 0;
    std::vector<bool> mask{true, true};
    bool nullGo = false, nullIn = false, nullGrid = false, nullIg = false, nullGg = false, nullMask = false;
    bool nullWs = false, nullExec = false, igStrideZero = false;
};

struct Outcome {
    aclnnStatus status;
    std::string message;
    uint64_t workspace;
};

Outcome phase1(const Call &c) {
    Runtime::use(c.product);
    Tensor go(c.goDt, c.goDims, c.goFmt), in(c.inDt, c.inDims, c.inFmt), grid(c.gridDt, c.gridDims, c.gridFmt);
    Tensor ig(c.igDt, c.igDims, c.igFmt), gg(c.ggDt, c.ggDims, c.ggFmt);
    aclTensor *igT = ig.get();
    std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor *)> zero(nullptr, aclDestroyTensor);
    if (c.igStrideZero) {  // inputGrad with stride 0 on its C dim overlaps itself
        const int64_t strides[4] = {30, 0, 6, 1}, storage[1] = {60};
        zero.reset(aclCreateTensor(c.igDims.data(), 4, c.igDt, strides, 0, c.igFmt, storage, 1, ig.data()));
        igT = zero.get();
    }
    bool m[8];
    for (size_t i = 0; i < c.mask.size(); ++i) m[i] = c.mask[i];
    std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray *)> mask(
        c.nullMask ? nullptr : aclCreateBoolArray(m, c.mask.size()), aclDestroyBoolArray);
    uint64_t ws = 99;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = aclnnGridSampler2DBackwardGetWorkspaceSize(
        c.nullGo ? nullptr : go.get(), c.nullIn ? nullptr : in.get(), c.nullGrid ? nullptr : grid.get(), c.interp, c.padding,
        false, mask.get(), c.nullIg ? nullptr : igT, c.nullGg ? nullptr : gg.get(), c.nullWs ? nullptr : &ws,
        c.nullExec ? nullptr : &exec);
    Outcome o{st, st ? lastError() : "", ws};
    if (st == ACLNN_SUCCESS && exec) aclDestroyAclOpExecutor(exec);
    return o;
}

struct Row {
    const char *name;
    std::function<void(Call &)> edit;
    aclnnStatus code;
    const char *says;  // a part of the message ("" for success)
};

const std::vector<Row> &rows() {
    static const std::vector<Row> r = {
        {"valid", [](Call &) {}, 0, ""},
        // NULLs
        {"null workspaceSize", [](Call &c) { c.nullWs = true; }, 161001, "workspaceSize"},
        {"null executor", [](Call &c) { c.nullExec = true; }, 161001, "executor"},
        {"null gradOutput", [](Call &c) { c.nullGo = true; }, 161001, "gradOutput"},
        {"null input", [](Call &c) { c.nullIn = true; }, 161001, "input"},
        {"null grid", [](Call &c) { c.nullGrid = true; }, 161001, "grid"},
        {"null inputGrad, mask[0] set", [](Call &c) { c.nullIg = true; }, 161001, "inputGrad"},
        {"null gridGrad, mask[1] set", [](Call &c) { c.nullGg = true; }, 161001, "gridGrad"},
        // every tensor is checked unless the mask is NULL (Huawei's CheckParams; {false, false} returns
        // only after every check, in its newest version)
        {"null inputGrad, mask[0] clear", [](Call &c) { c.nullIg = true, c.mask = {false, true}; }, 161001, "inputGrad"},
        {"null inputGrad, mask false,false", [](Call &c) { c.nullIg = true, c.mask = {false, false}; }, 161001, "inputGrad"},
        {"null gradOutput, mask false,false", [](Call &c) { c.nullGo = true, c.mask = {false, false}; }, 161001, "gradOutput"},
        {"empty inputGrad with stride 0: no element to overlap",
         [](Call &c) {
             c.goDims[0] = c.inDims[0] = c.gridDims[0] = c.igDims[0] = c.ggDims[0] = 0;
             c.igStrideZero = true;
         },
         0, ""},
        {"null gridGrad, mask[1] clear", [](Call &c) { c.nullGg = true, c.mask = {true, false}; }, 161001, "gridGrad"},
        {"null outputMask", [](Call &c) { c.nullMask = true; }, 0, ""},
        {"null outputMask before null gradOutput", [](Call &c) { c.nullMask = c.nullGo = true; }, 0, ""},
        {"null outputMask before bad dtype", [](Call &c) { c.nullMask = true, c.inDt = ACL_INT32; }, 0, ""},
        {"null grid before bad dtype", [](Call &c) { c.nullGrid = true, c.inDt = ACL_INT32; }, 161001, "grid"},
        // product support and dtypes
        {"inference", [](Call &c) { c.product = "atlas-inference"; }, 161002, "Atlas inference series"},
        {"200I/500 A2", [](Call &c) { c.product = "atlas-200i-500-a2"; }, 161002, "200I/500 A2"},
        {"INT32 input", [](Call &c) { c.goDt = c.inDt = c.gridDt = c.igDt = c.ggDt = ACL_INT32; }, 161002, "dtype INT32"},
        {"BF16 on training", [](Call &c) { c.product = "atlas-training"; c.goDt = c.inDt = c.gridDt = c.igDt = c.ggDt = ACL_BF16; }, 161002, "training"},
        {"grid dtype differs", [](Call &c) { c.gridDt = ACL_FLOAT16; }, 161002, "grid dtype FLOAT16 must equal input dtype FLOAT"},
        {"gridGrad dtype differs", [](Call &c) { c.ggDt = ACL_DOUBLE; }, 161002, "gridGrad dtype DOUBLE"},
        {"masked-off output's dtype checked", [](Call &c) { c.ggDt = ACL_DOUBLE, c.mask = {true, false}; }, 161002, "gridGrad dtype DOUBLE"},
        // formats, ranks
        // CANN checks no format: any tag is read as N, C, H, W (its unit test case_18 passes NHWC and HWCN)
        {"NHWC and HWCN tags", [](Call &c) { c.goFmt = ACL_FORMAT_NHWC, c.inFmt = ACL_FORMAT_HWCN; }, 0, ""},
        {"NCL tag on a rank-4 tensor", [](Call &c) { c.inFmt = ACL_FORMAT_NCL; }, 0, ""},
        {"rank 3 grid", [](Call &c) { c.gridDims = {2, 4, 14}; }, 161002, "grid must have rank 4"},
        {"rank 5 input", [](Call &c) { c.inDims = {2, 3, 5, 6, 1}; }, 161002, "input must have rank 4"},
        {"inputGrad overlaps itself", [](Call &c) { c.igStrideZero = true; }, 161002, "inputGrad is an output and must not overlap"},
        // attributes
        {"interpolationMode 3", [](Call &c) { c.interp = 3; }, 161002, "interpolationMode must be in [0, 2], got 3"},
        {"interpolationMode -1", [](Call &c) { c.interp = -1; }, 161002, "interpolationMode"},
        {"paddingMode 3", [](Call &c) { c.padding = 3; }, 161002, "paddingMode must be in [0, 2], got 3"},
        {"outputMask length 1", [](Call &c) { c.mask = {true}; }, 161002, "outputMask must have 2 elements, got 1"},
        {"outputMask length 3", [](Call &c) { c.mask = {true, true, true}; }, 161002, "outputMask"},
        {"bad mode before bad shape", [](Call &c) { c.interp = 7, c.gridDims = {2, 4, 7, 3}; }, 161002, "interpolationMode"},
        // shapes
        {"grid last dim 3", [](Call &c) { c.gridDims = c.ggDims = {2, 4, 7, 3}; }, 161002, "grid last dimension must be 2"},
        {"grid batch", [](Call &c) { c.gridDims = c.ggDims = {3, 4, 7, 2}; }, 161002, "grid batch 3 must equal input batch 2"},
        {"gradOutput batch", [](Call &c) { c.goDims = {1, 3, 4, 7}; }, 161002, "gradOutput shape [1,3,4,7]"},
        {"gradOutput channels", [](Call &c) { c.goDims = {2, 4, 4, 7}; }, 161002, "gradOutput shape [2,4,4,7]"},
        {"gradOutput spatial", [](Call &c) { c.goDims = {2, 3, 7, 4}; }, 161002, "gradOutput spatial size [7,4] must equal grid's [4,7]"},
        {"input H 0", [](Call &c) { c.inDims = c.igDims = {2, 3, 0, 6}; }, 161002, "input H and W must not be 0"},
        {"input W 0", [](Call &c) { c.inDims = c.igDims = {2, 3, 5, 0}; }, 161002, "input H and W must not be 0"},
        {"inputGrad shape", [](Call &c) { c.igDims = {2, 3, 6, 5}; }, 161002, "inputGrad shape [2,3,6,5] must equal input shape [2,3,5,6]"},
        {"gridGrad shape", [](Call &c) { c.ggDims = {2, 7, 4, 2}; }, 161002, "gridGrad shape [2,7,4,2] must equal grid shape [2,4,7,2]"},
        {"masked-off output's shape checked", [](Call &c) { c.ggDims = {1, 1, 1, 1}, c.mask = {true, false}; }, 161002, "gridGrad shape [1,1,1,1]"},
        {"mask false,false", [](Call &c) { c.mask = {false, false}; }, 0, ""},
        {"mask false,false: dtype still checked", [](Call &c) { c.mask = {false, false}, c.inDt = ACL_INT32; }, 161002, "dtype INT32"},
        {"mask false,false: shape still checked", [](Call &c) { c.mask = {false, false}, c.ggDims = {1, 1, 1, 1}; }, 161002, "gridGrad shape [1,1,1,1]"},
        {"mask false,false: mode still checked", [](Call &c) { c.mask = {false, false}, c.interp = 3; }, 161002, "interpolationMode"},
        {"mask false: length still checked", [](Call &c) { c.mask = {false}; }, 161002, "outputMask must have 2 elements, got 1"},
        {"mask false,false,false: length still checked", [](Call &c) { c.mask = {false, false, false}; }, 161002, "outputMask"},
        {"empty batch", [](Call &c) { c.goDims[0] = c.inDims[0] = c.gridDims[0] = c.igDims[0] = c.ggDims[0] = 0; }, 0, ""},
    };
    return r;
}

TEST(GridSampler2DChecks, EveryRule) {
    for (const Row &row : rows()) {
        Call c;
        row.edit(c);
        const Outcome o = phase1(c);
        EXPECT_EQ(o.status, row.code) << row.name << ": " << o.message;
        if (row.code != 0) {
            EXPECT_NE(o.message.find(row.says), std::string::npos) << row.name << ": " << o.message;
            EXPECT_NE(o.message.find("aclnnGridSampler2DBackward"), std::string::npos) << row.name << ": " << o.message;
            EXPECT_EQ(o.message.find('\n'), std::string::npos) << row.name << ": one line";
        }
    }
}

// Huawei: a NULL outputMask is success with workspace 0 and an executor that does nothing, before
// any other NULL check; {false, false} and empty tensors plan no work either.
TEST(GridSampler2DChecks, NoWorkMeansWorkspaceZero) {
    for (auto edit : std::vector<std::function<void(Call &)>>{
             [](Call &c) { c.nullMask = true; }, [](Call &c) { c.mask = {false, false}; },
             [](Call &c) { c.goDims[0] = c.inDims[0] = c.gridDims[0] = c.igDims[0] = c.ggDims[0] = 0; },
             [](Call &c) { c.goDims[2] = c.gridDims[1] = c.ggDims[1] = 0; }}) {
        Call c;
        edit(c);
        const Outcome o = phase1(c);
        EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
        EXPECT_EQ(o.workspace, 0u);
    }
}

}  // namespace
}  // namespace gst
