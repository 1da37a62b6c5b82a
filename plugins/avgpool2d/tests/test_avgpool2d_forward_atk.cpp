// Huawei's system-test corpus of aclnnAvgPool2d (CANN's ATK spec, cann_st/README.md), as data: every
// case is a call Huawei runs on its A2 card against a high-precision benchmark, so each must be
// accepted on atlas-a2 and atlas-a3 (or answer what the file's `deviations:` record) and match the
// reference (avgpool2d_reference.hpp, double; cubeMathType is 0 in every call: no cube rounding)
// within testing.md's tolerance, on data drawn as the spec draws it (a normal distribution, or inf,
// -inf or nan everywhere), rounded to the dtype. The calls are boundary cases: 1x1 kernels with
// strides up to 4096.
#include <filesystem>
#include <tuple>

#include "avgpool2d_atk.hpp"

namespace apt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(AVGPOOL_TESTS_DIR) / "cann_st/avgpool2d_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    std::vector<int64_t> self;
    Attrs a;
    acltest::AtkDistribution values;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"];
    k.dt = acltest::atkDtype(t["input"][0]);
    k.self = t["input"][1].as<std::vector<int64_t>>();
    k.values = acltest::AtkDistribution::of(t["input"][2]);
    k.a = atkAttrs(n["attrs"], k.id);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) { return atkName(k.id, k.dt, k.self, k.a); }

// The calls run whole here: self within 1M elements, and the smallest of each dtype x ceilMode.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 1'000'000, [](const AtkCase &c) { return numel(c.self); }, [](const AtkCase &c) { return std::make_tuple(c.dt, c.a.ceilMode); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const aclFormat fmt = formatForRank(k.self.size());
    aclTensor *self = reserved.add(k.self, k.dt, elemSize(k.dt), fmt);
    aclTensor *out = reserved.add(pooledDims(k.self, resolve(k.a)), k.dt, elemSize(k.dt), fmt);
    IntArray ks(k.a.kernel), s(k.a.stride), p(k.a.padding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnAvgPool2dGetWorkspaceSize(self, ks.a, s.a, p.a, k.a.ceilMode, k.a.countIncludePad, k.a.divisorOverride,
                                                          k.a.cubeMathType, out, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// match the reference.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const auto x = k.values.draw(numel(k.self), static_cast<uint64_t>(k.id) + 1, [&](double v) { return roundToDt(v, k.dt); });
    const RunResult r = runForward(k.dt, k.self, k.a, x);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    std::vector<double> ref, absSum;
    referenceForward(k.self, k.a, x, CubeRound::None, ref, &absSum);
    EXPECT_TRUE(closeToReference(k.dt, r.out, ref, absSum)) << name(k);
    EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
}

ACLTEST_ATK_SUITE(AtkForwardCorpus)

}  // namespace
}  // namespace apt
