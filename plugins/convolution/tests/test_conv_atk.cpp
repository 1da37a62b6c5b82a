// Huawei's system-test corpus of aclnnConvolutionBackward (CANN's ATK spec, cann_st/README.md), as
// data: every case is a call Huawei runs on its A2 card against a golden, so each must be accepted
// on atlas-a2 and atlas-a3 (or answer what the file's `deviations:` record, with their reason), and
// give the numbers products.md defines: data drawn as the spec draws it (uniform in its range, the
// tensor's dtype), the cube operands rounded as cubeMathType says (HF32, FLOAT16 or none), FLOAT
// accumulation, one rounding to the output dtype. The reference is conv_reference.hpp in double on
// the rounded operands; the tolerance is FLOAT accumulation's (a few ulps of the sum of |terms|) plus
// one ulp of the output dtype, far below what a missing or wrong operand rounding changes (2^-12 and
// more of the terms).
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "conv_test_util.hpp"
#include "atk_spec.hpp"

namespace ct {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(ACLNN_CPU_CONV_SOURCE_DIR) / "tests/cann_st/convolution_backward_atk.yaml";

std::vector<int64_t> ints64(const YAML::Node &n) { return n.as<std::vector<int64_t>>(); }

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    int8_t cube = 0;
    std::vector<bool> mask;
    std::vector<int64_t> gradOutput, input, weight, padding, outputPadding, biasSizes;
    cref::Conv c;
    double lo = -0.1, hi = 0.1;
};

// The call as conv_reference.hpp's problem. A transposed gradOutput larger than outputPadding makes
// it (CANN's implicit outputPadding, README) is modelled by the larger outputPadding.
AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    k.dt = acltest::atkDtype(n["dtype"]);
    k.cube = static_cast<int8_t>(n["cubeMathType"].as<int>());
    k.mask = n["outputMask"].as<std::vector<bool>>();
    k.gradOutput = ints64(n["gradOutput"]);
    k.input = ints64(n["input"]);
    k.weight = ints64(n["weight"]);
    k.padding = ints64(n["padding"]);
    k.outputPadding = ints64(n["outputPadding"]);
    k.biasSizes = ints64(n["biasSizes"]);
    const auto range = n["range"].as<std::vector<double>>();
    k.lo = range.at(0), k.hi = range.at(1);
    cref::Conv &c = k.c;
    c.sd = static_cast<int>(k.input.size()) - 2;
    c.transposed = n["transposed"].as<bool>();
    c.N = k.input[0], c.Cin = k.input[1], c.Cout = k.gradOutput[1], c.G = n["groups"].as<int64_t>();
    const auto stride = ints64(n["stride"]), dilation = ints64(n["dilation"]);
    const bool pairs = k.padding.size() == 2 * static_cast<size_t>(c.sd);
    for (int i = 0; i < c.sd; ++i) {
        const auto u = static_cast<size_t>(i);
        c.in[u] = k.input[u + 2], c.k[u] = k.weight[u + 2], c.s[u] = stride.at(u), c.d[u] = dilation.at(u);
        c.pl[u] = pairs ? k.padding[2 * u] : k.padding.at(u);
        c.pr[u] = pairs ? k.padding[2 * u + 1] : k.padding.at(u);
        c.op[u] = k.outputPadding.at(u);
        if (c.transposed) c.op[u] += k.gradOutput[u + 2] - c.outSize(i);
    }
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

// Uniform in [lo, hi], rounded to dt (what the spec's generator hands the card).
std::vector<double> draw(int64_t n, double lo, double hi, uint64_t seed, aclDataType dt) {
    return acltest::atkDraw(n, lo, hi, seed, [dt](double v) { return valueOf(bitsOf(v, dt), dt); });
}

// The calls run whole here: the reference's multiply-adds and the tensors' bytes within reach of a
// unit test. The others (a 4096-channel 1x1, the 3-D transposed network layer) are checked in phase 1.
constexpr int64_t kMaxPairs = 20'000'000;
constexpr int64_t kMaxBytes = 32 << 20;

int64_t bytesOf(const AtkCase &k) {
    const int64_t n = cref::Conv::count(k.gradOutput) + cref::Conv::count(k.input) + cref::Conv::count(k.weight);
    return 2 * n * static_cast<int64_t>(elemSize(k.dt));  // the inputs and the gradients
}
bool runsWhole(const AtkCase &k) { return k.c.work() <= kMaxPairs && bytesOf(k) <= kMaxBytes; }

// Phase 1 alone, every tensor's data an unreadable reservation (a phase 1 that read data would crash).
aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const auto tensor = [&](const std::vector<int64_t> &shape, aclFormat fmt) { return reserved.add(shape, k.dt, elemSize(k.dt), fmt); };
    const aclFormat fmt = formatFor(k.input.size());
    aclTensor *go = tensor(k.gradOutput, fmt), *in = tensor(k.input, fmt), *w = tensor(k.weight, fmt);
    aclTensor *gi = k.mask[0] ? tensor(k.input, fmt) : nullptr, *gw = k.mask[1] ? tensor(k.weight, fmt) : nullptr;
    aclTensor *gb = k.mask[2] ? tensor({k.c.Cout}, ACL_FORMAT_ND) : nullptr;
    std::vector<int64_t> stride, dilation;
    for (int i = 0; i < k.c.sd; ++i) stride.push_back(k.c.s[static_cast<size_t>(i)]), dilation.push_back(k.c.d[static_cast<size_t>(i)]);
    IntArray s(stride), p(k.padding), d(dilation), op(k.outputPadding), bias(k.biasSizes);
    BoolArray mask(k.mask);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnConvolutionBackwardGetWorkspaceSize(go, in, w, bias.a, s.a, p.a, d.a, k.c.transposed, op.a,
                                                                    static_cast<int>(k.c.G), mask.a, k.cube, gi, gw, gb, &ws, &exec), exec, message);
}

// A case in failure messages.
std::string name(const AtkCase &k) { return "case " + std::to_string(k.id); }

// Phase 1's status: success, or the recorded deviation. On atlas-a2, where Huawei runs the spec,
// the calls small enough then run and give products.md's numbers. (atlas-a3: AcceptedOnAtlasA3.)
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    ASSERT_EQ(k.c.gradOutputDims(), k.gradOutput) << "the reference's problem does not give the case's gradOutput";
    ASSERT_EQ(k.c.weightDims(), k.weight);
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);

    Call call;
    call.c = k.c;
    call.dt = k.dt;
    call.mask = k.mask;
    call.cube = k.cube;
    call.padding = k.padding;
    call.outputPadding = k.outputPadding;
    call.biasSizes = k.biasSizes;
    const auto seed = static_cast<uint64_t>(k.id) * 3;
    const auto go = draw(cref::Conv::count(k.gradOutput), k.lo, k.hi, seed + 1, k.dt);
    const auto in = draw(cref::Conv::count(k.input), k.lo, k.hi, seed + 2, k.dt);
    const auto w = draw(cref::Conv::count(k.weight), k.lo, k.hi, seed + 3, k.dt);
    const Result r = runBackward(call, go, in, w);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << "case " << k.id << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << "case " << k.id << ": " << r.message;
    if (k.mask[0] || k.mask[1]) {
        const auto round = cubeRounding("atlas-a2", k.dt, k.cube);
        const cref::Grads ref = cref::backward(k.c, mapped(go, round), mapped(in, round), mapped(w, round));
        const cref::Grads mag = cref::backward(k.c, absolute(go), absolute(in), absolute(w));
        if (k.mask[0]) {
            EXPECT_TRUE(nearReference(k.dt, r.gi, ref.gradInput, mag.gradInput, "gradInput")) << "case " << k.id;
        }
        if (k.mask[1]) {
            EXPECT_TRUE(nearReference(k.dt, r.gw, ref.gradWeight, mag.gradWeight, "gradWeight")) << "case " << k.id;
        }
    }
    // gradBias: the vector unit's sum of the unrounded gradOutput (cubeMathType rounds the cube's operands only).
    if (k.mask[2]) {
        EXPECT_TRUE(nearReference(k.dt, r.gb, biasSums(k.c, go), biasSums(k.c, absolute(go)), "gradBias")) << "case " << k.id;
    }
    EXPECT_TRUE(r.unselectedUntouched);
    EXPECT_TRUE(r.canary);
    EXPECT_TRUE(r.inputsUnchanged);
}

// The corpus is the spec's, whole: its ids run 0 .. n - 1 without a gap; and most of it runs whole.
TEST(AtkCorpus, IdsContiguousAndMostRunWhole) {
    const auto &cases = corpus().cases;
    ASSERT_EQ(cases.size(), 215u);
    size_t whole = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(cases[i].id, static_cast<int>(i));
        whole += runsWhole(cases[i]) ? 1 : 0;
    }
    EXPECT_EQ(whole, 212u);  // all but ids 209, 211 and 212
}

ACLTEST_ATK_SUITE(AtkCorpus)

}  // namespace
}  // namespace ct
