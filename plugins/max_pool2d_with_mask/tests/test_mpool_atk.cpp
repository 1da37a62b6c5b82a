// Huawei's system-test corpus of aclnnMaxPool2dWithMaskBackward (CANN's ATK spec, cann_st/README.md),
// as data: every case is a call Huawei runs on its A2 card against PyTorch's
// max_pool2d_with_indices_backward, its mask made from PyTorch's int32 argmax in the int32 layout
// (the spec's executor). So each must be accepted on atlas-a2 and atlas-a3 (or answer what the
// file's `deviations:` record) and give the reference's bits: our forward makes the mask from self
// (its values and argmax checked too), our backward consumes it. Data are drawn as the spec draws
// them (uniform in its range) on a grid of 1/16, which every dtype holds exactly: ties are frequent
// (the first maximum wins) and every sum is exact, so the comparison is bit for bit.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <tuple>

#include "atk_spec.hpp"
#include "mpool_test_util.hpp"

namespace mpt {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(MPOOL_TESTS_DIR) / "cann_st/max_pool2d_with_mask_backward_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    Problem pr;
    std::vector<int64_t> gradOutput, self, kernel, stride, padding, dilation;
    double lo = 0, hi = 0;
};

// kernelSize, stride and padding as CANN reads them: one element for both dims, an empty stride
// for the kernel's.
std::pair<int64_t, int64_t> pairOf(const std::vector<int64_t> &v, const std::vector<int64_t> &ifEmpty) {
    const auto &u = v.empty() ? ifEmpty : v;
    return {u.at(0), u.size() > 1 ? u[1] : u[0]};
}

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    const YAML::Node t = n["tensors"], a = n["attrs"];
    k.dt = acltest::atkDtype(t["self"][0]);
    k.self = t["self"][1].as<std::vector<int64_t>>();
    k.gradOutput = t["gradOutput"][1].as<std::vector<int64_t>>();
    const auto range = t["self"][2].as<std::vector<double>>();
    k.lo = range.at(0), k.hi = range.at(1);
    k.kernel = a["kernelSize"].as<std::vector<int64_t>>();
    k.stride = a["stride"].as<std::vector<int64_t>>();
    k.padding = a["padding"].as<std::vector<int64_t>>();
    k.dilation = a["dilation"].as<std::vector<int64_t>>();
    const auto [kH, kW] = pairOf(k.kernel, {});
    const auto [sH, sW] = pairOf(k.stride, k.kernel);
    const auto [pH, pW] = pairOf(k.padding, {});
    const bool rank3 = k.self.size() == 3;
    const int64_t N = rank3 ? 1 : k.self[0], C = k.self[k.self.size() - 3], H = k.self[k.self.size() - 2], W = k.self.back();
    k.pr = problemOf(mref::Pool{N, C, H, W, kH, kW, sH, sW, pH, pW, a["ceilMode"].as<bool>()}, rank3);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

std::string name(const AtkCase &k) { return "case " + std::to_string(k.id) + " " + describe(k.dt, k.pr.pool); }

// Uniform in [lo, hi] on a grid of 1/16 (exact in FLOAT, FLOAT16 and BF16 within |v| < 16).
std::vector<double> draw(size_t n, double lo, double hi, uint64_t seed) {
    return acltest::atkDraw(static_cast<int64_t>(n), lo, hi, seed, [](double v) { return std::nearbyint(v * 16) / 16; });
}

// The calls run whole here: self within 1M elements, and the smallest of each dtype x ceilMode.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 1'000'000, [](const AtkCase &c) { return c.pr.pool.N * c.pr.pool.C * c.pr.pool.H * c.pr.pool.W; },
        [](const AtkCase &c) { return std::make_tuple(c.dt, c.pr.pool.ceil); });
}

// Phase 1 of the backward alone (its mask in the layout's shape), every tensor's data an unreadable
// reservation.
aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const aclFormat fmt = k.pr.format();
    aclTensor *go = reserved.add(k.gradOutput, k.dt, elemSize(k.dt), fmt), *self = reserved.add(k.self, k.dt, elemSize(k.dt), fmt);
    aclTensor *mask = reserved.add(k.pr.maskDims(), ACL_INT8, 1, fmt), *gi = reserved.add(k.self, k.dt, elemSize(k.dt), fmt);
    IntArray ks(k.kernel), s(k.stride), p(k.padding), d(k.dilation);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(go, self, mask, ks.a, s.a, p.a, d.a, k.pr.pool.ceil, gi, &ws, &exec), exec, message);
}

// On atlas-a2, where Huawei runs the spec: phase 1 answers as expected; the calls small enough run
// the forward and then the backward on its mask, and give the reference's bits.
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    ASSERT_EQ(k.pr.outDims(), k.gradOutput) << name(k) << ": the pool's output is not the spec's gradOutput";
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);

    const mref::Pool &p = k.pr.pool;
    const auto x = draw(static_cast<size_t>(p.N * p.C * p.H * p.W), k.lo, k.hi, static_cast<uint64_t>(k.id) * 2 + 1);
    const auto go = draw(static_cast<size_t>(p.N * p.C * p.Ho() * p.Wo()), k.lo, k.hi, static_cast<uint64_t>(k.id) * 2 + 2);
    const Result f = runForward(k.pr, k.dt, x);
    ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << name(k) << ": forward: " << f.message;
    const mref::Forward ref = mref::forward(p, x, refDt(k.dt), false);
    EXPECT_TRUE(sameBits(k.dt, f.outBits, ref.out)) << name(k) << ": forward out";
    const Result b = runBackward(k.pr, k.dt, go, f.mask);
    ASSERT_EQ(b.phase1, ACLNN_SUCCESS) << name(k) << ": " << b.message;
    ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << name(k) << ": " << b.message;
    EXPECT_TRUE(sameBits(k.dt, b.outBits, mref::backward(p, go, mref::routesInt32(p, ref.argmax), refDt(k.dt), false)))
        << name(k) << ": gradInput";
    EXPECT_TRUE(b.canary);
    EXPECT_TRUE(b.inputsUnchanged);
}

ACLTEST_ATK_SUITE(AtkCorpus)

}  // namespace
}  // namespace mpt
