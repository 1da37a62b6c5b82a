// Huawei's system-test corpus of aclnnMaxPool2dWithMask (CANN's ATK spec, cann_st/README.md), as data:
// every case is a call Huawei runs on its A2 card, so each must be accepted on atlas-a2 and atlas-a3
// (or answer what the file's `deviations:` record), and give the reference's out and mask bytes
// (mpool_reference.hpp: PyTorch's argmax in the int32 layout, or the bit mask where the int32
// values do not fit) on data drawn as the spec draws it (a normal distribution whose mean and
// deviation come from its ranges, or uniform), rounded to the dtype. The forward only compares and
// copies, so the comparison is bit for bit.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <tuple>

#include "atk_spec.hpp"
#include "mpool_test_util.hpp"

namespace mpt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(MPOOL_TESTS_DIR) / "cann_st/max_pool2d_with_mask_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    Problem pr;
    std::vector<int64_t> self, kernel, stride, padding, dilation;
    acltest::AtkDistribution values;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"], a = n["attrs"];
    k.dt = acltest::atkDtype(t["self"][0]);
    k.self = t["self"][1].as<std::vector<int64_t>>();
    k.values = acltest::AtkDistribution::of(t["self"][2]);
    k.kernel = a["kernelSize"].as<std::vector<int64_t>>();
    k.stride = a["stride"].as<std::vector<int64_t>>();
    k.padding = a["padding"].as<std::vector<int64_t>>();
    k.dilation = a["dilation"].as<std::vector<int64_t>>();
    // ceilMode written ["inf"] or ["-inf"] (16 calls): the spec's Python passes it on as a truthy value.
    const bool ceil = a["ceilMode"].IsSequence() ? true : a["ceilMode"].as<bool>();
    const auto one = [](const std::vector<int64_t> &v, size_t i) { return v.at(v.size() > i ? i : 0); };
    const bool rank3 = k.self.size() == 3;
    const int64_t N = rank3 ? 1 : k.self[0], C = k.self[k.self.size() - 3], H = k.self[k.self.size() - 2], W = k.self.back();
    k.pr = problemOf(mref::Pool{N, C, H, W, one(k.kernel, 0), one(k.kernel, 1), one(k.stride, 0), one(k.stride, 1), one(k.padding, 0),
                                one(k.padding, 1), ceil},
                     rank3);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) { return "case " + std::to_string(k.id) + " " + describe(k.dt, k.pr.pool); }

// The calls run whole here: self within 1M elements, and the smallest of each dtype x rank x ceilMode.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 1'000'000, [](const AtkCase &c) { return c.pr.pool.N * c.pr.pool.C * c.pr.pool.H * c.pr.pool.W; },
        [](const AtkCase &c) { return std::make_tuple(c.dt, c.pr.rank3, c.pr.pool.ceil); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const aclFormat fmt = k.pr.format();
    aclTensor *self = reserved.add(k.self, k.dt, elemSize(k.dt), fmt), *out = reserved.add(k.pr.outDims(), k.dt, elemSize(k.dt), fmt);
    aclTensor *mask = reserved.add(k.pr.maskDims(), ACL_INT8, 1, fmt);
    IntArray ks(k.kernel), s(k.stride), p(k.padding), d(k.dilation);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnMaxPool2dWithMaskGetWorkspaceSize(self, ks.a, s.a, p.a, d.a, k.pr.pool.ceil, out, mask, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected, and the calls small enough
// give the reference's out and mask, bit for bit.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const mref::Pool &p = k.pr.pool;
    const auto x = k.values.draw(p.N * p.C * p.H * p.W, static_cast<uint64_t>(k.id) + 1, [&](double v) { return mref::roundDt(v, refDt(k.dt)); });
    const Result r = runForward(k.pr, k.dt, x);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << name(k) << ": " << r.message;
    const Expected want = expectedForward("atlas-a2", k.dt, p, x);
    EXPECT_TRUE(sameBits(k.dt, r.outBits, want.out)) << name(k) << ": out";
    EXPECT_EQ(r.mask, want.mask) << name(k) << ": mask";
    EXPECT_TRUE(r.canary);
    EXPECT_TRUE(r.inputsUnchanged);
}

ACLTEST_ATK_SUITE(AtkForwardCorpus)

}  // namespace
}  // namespace mpt
