// The operator families: each maps a case's named arguments onto its aclnn calls (both phases).
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_max_pool2d_with_indices.h"
#include "aclnnop/aclnn_max_pool2d_with_indices_backward.h"
#include "aclnnop/aclnn_max_pool2d_with_mask.h"
#include "aclnnop/aclnn_max_pool2d_with_mask_backward.h"
#include "aclnnop/aclnn_max_unpool2d.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"
#include "case.hpp"

namespace torch_diff {
namespace {

using Phase1 = std::function<aclnnStatus(uint64_t *, aclOpExecutor **)>;
using Phase2 = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);

// An operator's tensor parameters in signature order, by the case's names ("" for one the case
// never passes): what aclSetInputTensorAddr / aclSetOutputTensorAddr index.
using Names = std::vector<std::string>;

struct Runner {
    const Case &c;
    aclrtStream stream;
    std::string *failed_call;

    // GetWorkspaceSize, then the run on a workspace placed like the tensors, then a synchronize.
    // With the case's repeat mode, the executor runs twice: on the decoys, then on the tensors.
    int call(const char *name, const Phase1 &phase1, Phase2 phase2, const Names &inputs, const Names &outputs) const {
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        int st = phase1(&ws, &exec);
        if (st == 0) {
            // Rounded to 64 bytes: the workspace must be 16-byte aligned, also flush against the guard.
            // A repeated executor's second run gets a workspace of its own, as from a caller's pool.
            const uint64_t bytes = ws ? (ws + 63) / 64 * 64 : 0;
            Buffer first(bytes, c.placement()), second(c.repeat() ? bytes : 0, c.placement());
            const Buffer *workspace = &first;
            auto run = [&] {
                // All-ones bytes are a NaN in every floating dtype: a kernel that reads scratch it
                // did not write spreads them into its results, whatever was there before.
                if (ws) std::memset(workspace->data(), 0xff, static_cast<size_t>(ws));
                int s = phase2(ws ? workspace->data() : nullptr, ws, exec, stream);
                workspace = &second;
                return s ? s : aclrtSynchronizeStream(stream);
            };
            if (!c.repeat()) {
                st = run();
            } else {
                // Each run finds what it must not touch sealed: the tensors while it runs on the
                // decoys, the decoys and the first workspace while it runs on the tensors. An
                // address kept from phase 1 or from the first run faults.
                st = aclSetAclOpExecutorRepeatable(exec);
                if (st == 0) st = point(exec, inputs, outputs, true);
                seal(inputs, outputs, false, true);
                if (st == 0) st = run();
                seal(inputs, outputs, false, false);
                // Back on the tensors even after a failure: the next call plans with them.
                const int back = point(exec, inputs, outputs, false);
                if (st == 0) st = back;
                seal(inputs, outputs, true, true);
                first.seal(true);
                if (st == 0) st = run();
                first.seal(false);
                seal(inputs, outputs, true, false);
                aclDestroyAclOpExecutor(exec);
            }
        }
        if (st != 0) *failed_call = name;
        return st;
    }

    void seal(const Names &inputs, const Names &outputs, bool decoys, bool sealed) const {
        for (const Names *names : {&inputs, &outputs})
            for (const std::string &n : *names) c.seal(n, decoys, sealed);
    }

    // Points the executor's tensors at their decoys or back at their own storage.
    int point(aclOpExecutor *exec, const Names &inputs, const Names &outputs, bool decoy) const {
        int st = 0;
        for (int side = 0; side < 2; ++side) {
            const Names &names = side ? outputs : inputs;
            for (size_t i = 0; i < names.size() && st == 0; ++i) {
                aclTensor *t = c.tensor(names[i]);
                if (!t) continue;  // NULL in phase 1
                void *addr = c.storage(names[i], decoy);
                if (c.repeat() == 1)
                    st = aclSetRawTensorAddr(t, addr);
                else if (!c.idle(names[i]))  // a masked-off output has no address in the executor
                    st = side ? aclSetOutputTensorAddr(exec, i, t, addr) : aclSetInputTensorAddr(exec, i, t, addr);
            }
        }
        return st;
    }
};

int conv(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnConvolutionBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnConvolutionBackwardGetWorkspaceSize(
                c.tensor("go"), c.tensor("in"), c.tensor("w"), c.ints("bias_sizes"), c.ints("stride"),
                c.ints("padding"), c.ints("dilation"), c.num("transposed") != 0, c.ints("output_padding"),
                static_cast<int>(c.num("groups")), c.bools("mask"), static_cast<int8_t>(c.num("cube")),
                c.tensor("gi"), c.tensor("gw"), c.tensor("gb"), ws, ex);
        },
        aclnnConvolutionBackward, {"go", "in", "w"}, {"gi", "gw", "gb"});
}

int avgpool(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnAvgPool2dBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnAvgPool2dBackwardGetWorkspaceSize(
                c.tensor("go"), c.tensor("self"), c.ints("kernel"), c.ints("stride"), c.ints("padding"),
                c.num("ceil") != 0, c.num("count_include_pad") != 0, c.num("divisor"),
                static_cast<int8_t>(c.num("cube")), c.tensor("gi"), ws, ex);
        },
        aclnnAvgPool2dBackward, {"go", "self"}, {"gi"});
}

// The forward, then the backward on the forward's mask, or on "bmask" when the case gives one
// (the backward alone, on a mask of the case's own). No "go": the product has no backward.
int maxpool(const Runner &r) {
    const Case &c = r.c;
    int st = r.call(
        "aclnnMaxPool2dWithMask",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxPool2dWithMaskGetWorkspaceSize(c.tensor("self"), c.ints("kernel"), c.ints("stride"),
                                                          c.ints("padding"), c.ints("dilation"), c.num("ceil") != 0,
                                                          c.tensor("out"), c.tensor("mask"), ws, ex);
        },
        aclnnMaxPool2dWithMask, {"self"}, {"out", "mask"});
    if (st != 0 || !c.tensor("go")) return st;
    aclTensor *mask = c.tensor("bmask") ? c.tensor("bmask") : c.tensor("mask");
    return r.call(
        "aclnnMaxPool2dWithMaskBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(
                c.tensor("go"), c.tensor("self"), mask, c.ints("kernel"), c.ints("stride"), c.ints("padding"),
                c.ints("dilation"), c.num("ceil") != 0, c.tensor("gi"), ws, ex);
        },
        aclnnMaxPool2dWithMaskBackward, {"go", "self", c.tensor("bmask") ? "bmask" : "mask"}, {"gi"});
}

// MaxPool2dWithIndices, then its backward on the forward's indices, or on "bind" when the case
// gives indices of its own. No "go": the forward alone (CANN's backward takes FLOAT only).
int maxpool_idx(const Runner &r) {
    const Case &c = r.c;
    int st = r.call(
        "aclnnMaxPool2dWithIndices",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxPool2dWithIndicesGetWorkspaceSize(c.tensor("self"), c.ints("kernel"), c.ints("stride"),
                                                             c.ints("padding"), c.ints("dilation"), c.num("ceil") != 0,
                                                             c.tensor("out"), c.tensor("ind"), ws, ex);
        },
        aclnnMaxPool2dWithIndices, {"self"}, {"out", "ind"});
    if (st != 0 || !c.tensor("go")) return st;
    const char *ind = c.tensor("bind") ? "bind" : "ind";
    return r.call(
        "aclnnMaxPool2dWithIndicesBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
                c.tensor("go"), c.tensor("self"), c.tensor(ind), c.ints("kernel"), c.ints("stride"), c.ints("padding"),
                c.ints("dilation"), c.num("ceil") != 0, c.tensor("gi"), ws, ex);
        },
        aclnnMaxPool2dWithIndicesBackward, {"go", "self", ind}, {"gi"});
}

int unpool(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnMaxUnpool2dBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxUnpool2dBackwardGetWorkspaceSize(c.tensor("go"), c.tensor("self"), c.tensor("indices"),
                                                            c.ints("output_size"), c.tensor("gi"), ws, ex);
        },
        aclnnMaxUnpool2dBackward, {"go", "self", "indices"}, {"gi"});
}

int grid(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnGridSampler2DBackward",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnGridSampler2DBackwardGetWorkspaceSize(
                c.tensor("go"), c.tensor("input"), c.tensor("grid"), c.num("interpolation"), c.num("padding"),
                c.num("align_corners") != 0, c.bools("mask"), c.tensor("input_grad"), c.tensor("grid_grad"), ws,
                ex);
        },
        aclnnGridSampler2DBackward, {"go", "input", "grid"}, {"input_grad", "grid_grad"});
}

// ---- the forward companions ----

int conv_fwd(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnConvolution",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnConvolutionGetWorkspaceSize(c.tensor("in"), c.tensor("w"), c.tensor("bias"), c.ints("stride"),
                                                    c.ints("padding"), c.ints("dilation"), c.num("transposed") != 0,
                                                    c.ints("output_padding"), c.num("groups"), c.tensor("out"),
                                                    static_cast<int8_t>(c.num("cube")), ws, ex);
        },
        aclnnConvolution, {"in", "w", "bias"}, {"out"});
}

int avgpool_fwd(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnAvgPool2d",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnAvgPool2dGetWorkspaceSize(c.tensor("self"), c.ints("kernel"), c.ints("stride"), c.ints("padding"),
                                                  c.num("ceil") != 0, c.num("count_include_pad") != 0, c.num("divisor"),
                                                  static_cast<int8_t>(c.num("cube")), c.tensor("out"), ws, ex);
        },
        aclnnAvgPool2d, {"self"}, {"out"});
}

int unpool_fwd(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnMaxUnpool2d",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnMaxUnpool2dGetWorkspaceSize(c.tensor("self"), c.tensor("indices"), c.ints("output_size"),
                                                    c.tensor("out"), ws, ex);
        },
        aclnnMaxUnpool2d, {"self", "indices"}, {"out"});
}

int grid_fwd(const Runner &r) {
    const Case &c = r.c;
    return r.call(
        "aclnnGridSampler2D",
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnGridSampler2DGetWorkspaceSize(c.tensor("input"), c.tensor("grid"), c.num("interpolation"),
                                                      c.num("padding"), c.num("align_corners") != 0, c.tensor("out"),
                                                      ws, ex);
        },
        aclnnGridSampler2D, {"input", "grid"}, {"out"});
}

}  // namespace

int run_family(const Case &c, aclrtStream stream, std::string *failed_call) {
    static const std::map<std::string, int (*)(const Runner &)> families = {
        {"conv", conv},         {"avgpool", avgpool},         {"maxpool", maxpool}, {"maxpool_idx", maxpool_idx}, {"unpool", unpool},
        {"grid", grid},         {"conv_fwd", conv_fwd},       {"avgpool_fwd", avgpool_fwd},
        {"unpool_fwd", unpool_fwd}, {"grid_fwd", grid_fwd}};
    auto it = families.find(c.op());
    if (it == families.end()) {
        *failed_call = "unknown op " + c.op();
        return -1;
    }
    return it->second(Runner{c, stream, failed_call});
}

}  // namespace torch_diff
