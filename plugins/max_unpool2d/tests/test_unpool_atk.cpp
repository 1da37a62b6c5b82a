// Huawei's system-test corpus of aclnnMaxUnpool2dBackward (CANN's ATK spec, cann_st/README.md), as
// data: every case is a call Huawei runs on its A2 card, compared by md5 (bit for bit) against
// PyTorch. So each must be accepted on atlas-a2 and atlas-a3 (or answer what the file's
// `deviations:` record) and give the reference gather's bits, on data drawn as the spec draws it:
// gradOutput over its dtype's whole range (every bit pattern, NaN payloads included: a gather copies
// them), indices uniform in the spec's range.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <tuple>

#include "atk_spec.hpp"
#include "unpool_test_util.hpp"

namespace upt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(UNPOOL_TESTS_DIR) / "cann_st/max_unpool2d_backward_atk.yaml";

struct AtkCase {
    int id = 0;
    BackwardCase c;
    std::vector<int64_t> gradOutput, outputSize;
    int64_t idxLo = 0, idxHi = 0;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"];
    k.c.dt = k.c.outDt = acltest::atkDtype(t["self"][0]);
    k.c.idxDt = acltest::atkDtype(t["indices"][0]);
    k.c.selfDims = t["self"][1].as<std::vector<int64_t>>();
    k.gradOutput = t["gradOutput"][1].as<std::vector<int64_t>>();
    k.outputSize = n["attrs"]["outputSize"].as<std::vector<int64_t>>();
    k.c.oH = k.outputSize.at(0), k.c.oW = k.outputSize.at(1);
    k.c.goDimsOverride = k.gradOutput;
    const auto range = t["indices"][2].as<std::vector<int64_t>>();
    k.idxLo = range.at(0), k.idxHi = range.at(1);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) {
    return "case " + std::to_string(k.id) + " " + dtName(k.c.dt) + " self " + dimsStr(k.c.selfDims) + " gradOutput " + dimsStr(k.gradOutput) +
           " indices " + dtName(k.c.idxDt);
}

// The calls run whole here: their tensors within 2M elements, and the smallest of each dtype x
// index dtype x rank.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 2'000'000, [](const AtkCase &c) { return 3 * numel(c.c.selfDims) + numel(c.gradOutput); },
        [](const AtkCase &c) { return std::make_tuple(c.c.dt, c.c.idxDt, c.c.selfDims.size()); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    aclTensor *go = reserved.add(k.gradOutput, k.c.dt, elemSize(k.c.dt), ACL_FORMAT_ND);
    aclTensor *self = reserved.add(k.c.selfDims, k.c.dt, elemSize(k.c.dt), ACL_FORMAT_ND);
    aclTensor *idx = reserved.add(k.c.selfDims, k.c.idxDt, elemSize(k.c.idxDt), ACL_FORMAT_ND);
    aclTensor *out = reserved.add(k.c.selfDims, k.c.outDt, elemSize(k.c.outDt), ACL_FORMAT_ND);
    IntArray os(k.outputSize);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnMaxUnpool2dBackwardGetWorkspaceSize(go, self, idx, os.a, out, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// give the reference's bits.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const Bits go = randomBits(static_cast<size_t>(numel(k.gradOutput)), k.c.dt, static_cast<uint64_t>(k.id) * 2 + 1);
    Rng r(static_cast<uint64_t>(k.id) * 2 + 2);
    std::vector<int64_t> indices(static_cast<size_t>(numel(k.c.selfDims)));
    for (auto &i : indices) i = r.integer(k.idxLo, k.idxHi);
    const RunResult got = runBackward(k.c, go, indices);
    ASSERT_EQ(got.phase1, ACLNN_SUCCESS) << name(k) << ": " << got.message;
    ASSERT_EQ(got.phase2, ACLNN_SUCCESS) << name(k) << ": " << got.message;
    Bits want;
    ASSERT_FALSE(referenceBackward(k.c, go, indices, want)) << name(k) << ": the spec's index range leaves the plane";
    EXPECT_TRUE(sameBits(got.out, want)) << name(k);
    EXPECT_TRUE(got.outCanaryIntact) << got.canaryWhere;
    EXPECT_TRUE(got.inputsUnchanged);
}

ACLTEST_ATK_SUITE(AtkCorpus)

}  // namespace
}  // namespace upt
