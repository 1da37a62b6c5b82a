// Huawei's system-test corpus of aclnnConvolution (CANN's ATK spec, cann_st/README.md), as data: every
// case is a call Huawei runs on its A2 card against PyTorch, so each must be accepted on atlas-a2 and
// atlas-a3 (or answer what the file's `deviations:` record) and give the reference's numbers
// (conv_reference.hpp in double; cubeMathType is 0 in every call, so the operands are not rounded):
// FLOAT accumulation, one rounding to the output dtype, on data drawn as the spec draws it. The
// calls: 1-D, 2-D and 3-D, transposed 3-D with groups, dilations up to 124, paddings up to 255 and
// outputPaddings up to 64, and network layers; a bias given as [] is no bias.
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "atk_spec.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(ACLNN_CPU_CONV_SOURCE_DIR) / "tests/cann_st/convolution_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    cref::Conv c;
    std::vector<int64_t> input, weight, padding;
    bool bias = false;
    acltest::AtkDistribution inDraw, wDraw, bDraw;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"], a = n["attrs"];
    k.dt = acltest::atkDtype(t["input"][0]);
    k.input = t["input"][1].as<std::vector<int64_t>>();
    k.weight = t["weight"][1].as<std::vector<int64_t>>();
    k.bias = !t["bias"][1].as<std::vector<int64_t>>().empty();
    k.inDraw = acltest::AtkDistribution::of(t["input"][2]);
    k.wDraw = acltest::AtkDistribution::of(t["weight"][2]);
    k.bDraw = acltest::AtkDistribution::of(t["bias"][2]);
    k.padding = a["padding"].as<std::vector<int64_t>>();
    const auto stride = a["stride"].as<std::vector<int64_t>>(), dilation = a["dilation"].as<std::vector<int64_t>>(),
               outputPadding = a["outputPadding"].as<std::vector<int64_t>>();
    cref::Conv &c = k.c;
    c.sd = static_cast<int>(k.input.size()) - 2;
    c.transposed = a["transposed"].as<bool>();
    c.G = a["groups"].as<int64_t>();
    c.N = k.input[0], c.Cin = k.input[1], c.Cout = c.transposed ? k.weight[1] * c.G : k.weight[0];
    const bool pairs = k.padding.size() == 2 * static_cast<size_t>(c.sd);
    for (size_t u = 0; u < static_cast<size_t>(c.sd); ++u) {
        c.in[u] = k.input[u + 2], c.k[u] = k.weight[u + 2], c.s[u] = stride.at(u), c.d[u] = dilation.at(u), c.op[u] = outputPadding.at(u);
        c.pl[u] = pairs ? k.padding[2 * u] : k.padding.at(u);
        c.pr[u] = pairs ? k.padding[2 * u + 1] : k.padding.at(u);
    }
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) {
    return "case " + std::to_string(k.id) + " " + dtName(k.dt) + " input " + acltest::dimsStr(k.input) + " weight " +
           acltest::dimsStr(k.weight) + (k.c.transposed ? " transposed" : "") + " groups " + std::to_string(k.c.G) + (k.bias ? "" : " no bias");
}

// The calls run whole here: the reference's work within 2e7 triples and the tensors within 32 MB.
// The others (network layers of up to 177M elements) are checked in phase 1.
bool runsWhole(const AtkCase &k) {
    const int64_t elements = cref::Conv::count(k.c.inputDims()) + cref::Conv::count(k.c.weightDims()) + cref::Conv::count(k.c.gradOutputDims());
    return k.c.work() <= 20'000'000 && elements * static_cast<int64_t>(elemSize(k.dt)) <= (32 << 20);
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const aclFormat fmt = formatFor(k.input.size());
    aclTensor *in = reserved.add(k.input, k.dt, elemSize(k.dt), fmt), *w = reserved.add(k.weight, k.dt, elemSize(k.dt), fmt);
    aclTensor *b = k.bias ? reserved.add({k.c.Cout}, k.dt, elemSize(k.dt), ACL_FORMAT_ND) : nullptr;
    aclTensor *out = reserved.add(k.c.gradOutputDims(), k.dt, elemSize(k.dt), fmt);
    IntArray s(k.c.spatial(k.c.s)), p(k.padding), d(k.c.spatial(k.c.d)), op(k.c.spatial(k.c.op));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnConvolutionGetWorkspaceSize(in, w, b, s.a, p.a, d.a, k.c.transposed, op.a, k.c.G, out, 0, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// give the reference's numbers.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    ASSERT_EQ(k.c.weightDims(), k.weight) << name(k);
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const auto round = [&](double v) { return valueOf(bitsOf(v, k.dt), k.dt); };
    const auto seed = static_cast<uint64_t>(k.id) * 3;
    const auto in = k.inDraw.draw(cref::Conv::count(k.input), seed + 1, round);
    const auto w = k.wDraw.draw(cref::Conv::count(k.weight), seed + 2, round);
    const auto b = k.bias ? k.bDraw.draw(k.c.Cout, seed + 3, round) : std::vector<double>{};
    const ForwardResult r = runForward(k.c, k.padding, k.dt, in, w, b);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    const auto absB = absolute(b);
    const auto ref = cref::forward(k.c, in, w, k.bias ? &b : nullptr);
    const auto mag = cref::forward(k.c, absolute(in), absolute(w), k.bias ? &absB : nullptr);
    EXPECT_TRUE(nearReference(k.dt, r.out, ref, mag, "output")) << name(k);
    EXPECT_TRUE(r.canary);
}

ACLTEST_ATK_SUITE(AtkForwardCorpus)

}  // namespace
}  // namespace ct
