// Huawei's system-test corpus of aclnnAvgPool2dBackward (CANN's ATK spec, cann_st/README.md), as
// data: every case is a call Huawei runs on its A2 card against a high-precision benchmark, so each
// must be accepted on atlas-a2 and atlas-a3 (or answer what the file's `deviations:` record) and give
// products.md's numbers: the reference (avgpool2d_reference.hpp, double) with the cube unit's
// rounding under the case's cubeMathType, within testing.md's tolerance. Data are drawn as the spec
// draws them: a normal distribution whose mean and deviation are drawn from the spec's ranges
// (`nd`), or uniform in a range; then rounded to the dtype.
#include <cmath>
#include <filesystem>
#include <tuple>

#include "avgpool2d_atk.hpp"

namespace apt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(AVGPOOL_TESTS_DIR) / "cann_st/avgpool2d_backward_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    std::vector<int64_t> gradOutput, self;
    Attrs a;
    acltest::AtkDistribution goDraw;  // self's values do not enter the backward
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"], at = n["attrs"];
    k.dt = acltest::atkDtype(t["self"][0]);
    k.self = t["self"][1].as<std::vector<int64_t>>();
    k.gradOutput = t["gradOutput"][1].as<std::vector<int64_t>>();
    k.goDraw = acltest::AtkDistribution::of(t["gradOutput"][2]);
    k.a = atkAttrs(at, k.id);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) { return atkName(k.id, k.dt, k.self, k.a); }

// The calls run whole here: self within 1M elements, and the smallest of each dtype x cubeMathType.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 1'000'000, [](const AtkCase &c) { return numel(c.self); }, [](const AtkCase &c) { return std::make_tuple(c.dt, c.a.cubeMathType); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const aclFormat fmt = formatForRank(k.self.size());
    aclTensor *go = reserved.add(k.gradOutput, k.dt, elemSize(k.dt), fmt), *self = reserved.add(k.self, k.dt, elemSize(k.dt), fmt);
    aclTensor *gi = reserved.add(k.self, k.dt, elemSize(k.dt), fmt);
    IntArray ks(k.a.kernel), s(k.a.stride), p(k.a.padding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnAvgPool2dBackwardGetWorkspaceSize(go, self, ks.a, s.a, p.a, k.a.ceilMode, k.a.countIncludePad,
                                                                  k.a.divisorOverride, k.a.cubeMathType, gi, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// give products.md's numbers.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    ASSERT_EQ(pooledDims(k.self, resolve(k.a)), k.gradOutput) << name(k) << ": the pool's output is not the spec's gradOutput";
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const auto go = k.goDraw.draw(numel(k.gradOutput), static_cast<uint64_t>(k.id) + 1, [&](double v) { return roundToDt(v, k.dt); });
    const RunResult r = runBackward(k.dt, k.self, k.a, go);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    std::vector<double> ref, absSum;
    referenceBackward(k.self, k.a, go, roundingOf(cubeExpect("atlas-a2", k.dt, k.a.cubeMathType)), ref, &absSum);
    EXPECT_TRUE(closeToReference(k.dt, r.out, ref, absSum)) << name(k);
    EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
    EXPECT_TRUE(r.inputsUnchanged);
}

ACLTEST_ATK_SUITE(AtkCorpus)

}  // namespace
}  // namespace apt
