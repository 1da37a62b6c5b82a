// Huawei's system-test corpus of aclnnMaxUnpool2d (CANN's ATK spec, cann_st/README.md), as data:
// every case is a call Huawei runs on its A2 card, so each must be accepted on atlas-a2 and atlas-a3
// (or answer what the file's `deviations:` record) and give the reference scatter's bits (zeros
// elsewhere, the last duplicate wins), on data drawn as the spec draws it: self over its dtype's
// whole range (every bit pattern), indices uniform in [0, oH * oW).
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <tuple>

#include "atk_spec.hpp"
#include "unpool_test_util.hpp"

namespace upt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(UNPOOL_TESTS_DIR) / "cann_st/max_unpool2d_atk.yaml";

struct AtkCase {
    int id = 0;
    FwCase c;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"], os = n["attrs"]["outputSize"];
    k.c.dt = acltest::atkDtype(t["self"][0]);
    k.c.idxDt = acltest::atkDtype(t["indices"][0]);
    k.c.selfDims = t["self"][1].as<std::vector<int64_t>>();
    // An outputSize element written as a range (two calls) is drawn from it.
    Rng r(static_cast<uint64_t>(k.id));
    const auto element = [&](const YAML::Node &e) { return e.IsSequence() ? r.integer(e[0].as<int64_t>(), e[1].as<int64_t>()) : e.as<int64_t>(); };
    k.c.oH = element(os[0]), k.c.oW = element(os[1]);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) {
    return "case " + std::to_string(k.id) + " " + dtName(k.c.dt) + " self " + dimsStr(k.c.selfDims) + " indices " + dtName(k.c.idxDt) +
           " outputSize [" + std::to_string(k.c.oH) + "," + std::to_string(k.c.oW) + "]";
}

// The calls run whole here: their tensors within 2M elements, and the smallest of each dtype x
// index dtype x rank.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 2'000'000, [](const AtkCase &c) { return 2 * numel(c.c.selfDims) + numel(c.c.outDims()); },
        [](const AtkCase &c) { return std::make_tuple(c.c.dt, c.c.idxDt, c.c.selfDims.size()); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    aclTensor *self = reserved.add(k.c.selfDims, k.c.dt, elemSize(k.c.dt), ACL_FORMAT_ND);
    aclTensor *idx = reserved.add(k.c.selfDims, k.c.idxDt, elemSize(k.c.idxDt), ACL_FORMAT_ND);
    aclTensor *out = reserved.add(k.c.outDims(), k.c.dt, elemSize(k.c.dt), ACL_FORMAT_ND);
    IntArray os(std::vector<int64_t>{k.c.oH, k.c.oW});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnMaxUnpool2dGetWorkspaceSize(self, idx, os.a, out, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// give the reference's bits.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const Bits x = randomBits(static_cast<size_t>(numel(k.c.selfDims)), k.c.dt, static_cast<uint64_t>(k.id) * 2 + 1);
    const auto indices = randomIndices(k.c.planes(), k.c.plane(), k.c.oH * k.c.oW, static_cast<uint64_t>(k.id) * 2 + 2);
    const RunResult got = runForward(k.c, x, indices);
    ASSERT_EQ(got.phase1, ACLNN_SUCCESS) << name(k) << ": " << got.message;
    ASSERT_EQ(got.phase2, ACLNN_SUCCESS) << name(k) << ": " << got.message;
    Bits want;
    ASSERT_FALSE(unpoolref::scatter(x, indices, k.c.planes(), k.c.plane(), k.c.oH * k.c.oW, want));
    EXPECT_TRUE(sameBits(got.out, want)) << name(k);
    EXPECT_TRUE(got.outCanaryIntact) << got.canaryWhere;
    EXPECT_TRUE(got.inputsUnchanged);
}

ACLTEST_ATK_SUITE(AtkForwardCorpus)

}  // namespace
}  // namespace upt
