// Huawei's system-test corpus of aclnnGridSampler2DBackward (CANN's ATK spec, cann_st/README.md), as
// data: every case is a call Huawei runs on its A2 card against PyTorch's grid_sampler_2d_backward,
// so each must be accepted on atlas-a2 and atlas-a3 (or answer what the file's `deviations:` record)
// and match the reference (grid_reference.hpp, double) on data drawn as the spec draws it (uniform in
// [-5, 5], grid included: most samples land outside the plane), in the tensor's dtype.
//
// The comparison allows for the rounding of the kernel's coordinate arithmetic (grid_atk_util.hpp).
// Within the band of the references, a kink can add (bilinear; nearest has none inside a cell):
// - to inputGrad, per element, the sum over the samples that tap it of |gradOutput| times their
//   coordinates' error in pixels (a weight's slope is at most 1);
// - to gridGrad, per sample, the sum over channels of |gradOutput| times twice the plane's largest
//   |input| times that error, times d(pixel)/d(grid value).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <tuple>

#include "grid_atk_util.hpp"

namespace gst {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(GRID_TESTS_DIR) / "cann_st/grid_sampler2d_backward_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    gref::Problem p{};
    Mask mask;
    double lo = 0, hi = 0;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    k.dt = acltest::atkDtype(n["dtype"]);
    const auto go = n["gradOutput"].as<std::vector<int64_t>>(), in = n["input"].as<std::vector<int64_t>>(),
               grid = n["grid"].as<std::vector<int64_t>>();
    k.p = gref::Problem{in[0], in[1], in[2], in[3], grid[1], grid[2], n["interpolationMode"].as<int>(), n["paddingMode"].as<int>(),
                        n["alignCorners"].as<bool>()};
    if (go != outDims(k.p) || grid != gridDims(k.p))
        throw std::runtime_error("case " + std::to_string(k.id) + ": gradOutput or grid does not fit input and grid");
    const auto mask = n["outputMask"].as<std::vector<bool>>();
    k.mask.ig = mask.at(0), k.mask.gg = mask.at(1);
    const auto range = n["range"].as<std::vector<double>>();
    k.lo = range.at(0), k.hi = range.at(1);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

// The calls run whole here: those whose tensors take at most 2M elements, and the smallest of each
// dtype x mode x padding x alignCorners the spec has (22 of 205); the others are checked in phase 1.
// (The whole spec took 49 s a run: its tensors hold 750M elements.)
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 2'000'000, [](const AtkCase &c) { return 2 * (c.p.inputCount() + c.p.gridCount()) + c.p.outputCount(); },
        [](const AtkCase &c) { return std::make_tuple(c.dt, c.p.interp, c.p.padding, c.p.align); });
}

aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const auto tensor = [&](const std::vector<int64_t> &shape) { return reserved.add(shape, k.dt, elemSize(k.dt), ACL_FORMAT_ND); };
    aclTensor *go = tensor(outDims(k.p)), *in = tensor(inDims(k.p)), *grid = tensor(gridDims(k.p));
    aclTensor *ig = tensor(inDims(k.p)), *gg = tensor(gridDims(k.p));
    const bool m[2] = {k.mask.ig, k.mask.gg};
    aclBoolArray *mask = aclCreateBoolArray(m, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st =
        aclnnGridSampler2DBackwardGetWorkspaceSize(go, in, grid, k.p.interp, k.p.padding, k.p.align, mask, ig, gg, &ws, &exec);
    aclDestroyBoolArray(mask);
    return acltest::atkPhase1(st, exec, message);
}

// The kinks' allowance of each gradient (the file's header); zero for nearest.
gref::Grads kinkSlack(const AtkCase &k, const Data &d) {
    const gref::Problem &p = k.p;
    gref::Grads s{std::vector<double>(static_cast<size_t>(p.inputCount()), 0.0), std::vector<double>(static_cast<size_t>(p.gridCount()), 0.0)};
    if (p.interp == 1) return s;
    const double u = 8 * coordinateUlp(k.dt);
    for (int64_t n = 0; n < p.N; ++n) {
        double maxIn = 0;
        for (int64_t e = n * p.C * p.H * p.W; e < (n + 1) * p.C * p.H * p.W; ++e) maxIn = std::max(maxIn, std::fabs(d.input[static_cast<size_t>(e)]));
        for (int64_t o = 0; o < p.Ho * p.Wo; ++o) {
            const auto gi = static_cast<size_t>((n * p.Ho * p.Wo + o) * 2);
            const double gx = d.grid[gi], gy = d.grid[gi + 1];
            const double dx = static_cast<double>(p.W) / 2, dy = static_cast<double>(p.H) / 2;
            const double err = u * (std::fabs(gx) + 1) * dx + u * (std::fabs(gy) + 1) * dy;  // pixels
            double mx, my, sumGo = 0;
            const auto taps = gref::samplesOf(p, gx, gy, mx, my);
            for (int64_t c = 0; c < p.C; ++c) {
                const double g = std::fabs(d.gradOutput[static_cast<size_t>((n * p.C + c) * p.Ho * p.Wo + o)]);
                sumGo += g;
                for (const auto &t : taps) s.input[static_cast<size_t>(((n * p.C + c) * p.H + t.y) * p.W + t.x)] += g * err;
            }
            s.grid[gi] = sumGo * 2 * maxIn * err * dx;
            s.grid[gi + 1] = sumGo * 2 * maxIn * err * dy;
        }
    }
    return s;
}

// A case in failure messages.
std::string name(const AtkCase &k) { return "case " + std::to_string(k.id) + " " + describe(k.p); }

// Phase 1's status: success, or the recorded deviation. On atlas-a2, where Huawei runs the spec,
// the calls small enough then run and match the reference. (atlas-a3: AcceptedOnAtlasA3.)
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const auto seed = static_cast<uint64_t>(k.id) * 3;
    Data d{draw(k.p.outputCount(), k.lo, k.hi, seed + 1, k.dt), draw(k.p.inputCount(), k.lo, k.hi, seed + 2, k.dt),
           draw(k.p.gridCount(), k.lo, k.hi, seed + 3, k.dt)};
    const Result r = runBackward(k.p, k.dt, d, k.mask);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << "case " << k.id << " " << describe(k.p) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << "case " << k.id << ": " << r.message;
    // The reference for the first and the last image (each image's gradients depend on its own data
    // only): the kernel runs the whole batch, the double reference a tenth of it or less.
    const std::string what = "case " + std::to_string(k.id) + " " + describe(k.p) + " " + dtName(k.dt);
    for (const int64_t n : {int64_t{0}, k.p.N - 1}) {
        gref::Problem one = k.p;
        one.N = 1;
        const auto slice = [&](const std::vector<double> &v, int64_t per) {
            return std::vector<double>(v.begin() + n * per, v.begin() + (n + 1) * per);
        };
        const Data d1{slice(d.gradOutput, one.outputCount()), slice(d.input, one.inputCount()), slice(d.grid, one.gridCount())};
        const auto refs = bandReferences(d1.grid, k.dt, [&](const std::vector<double> &g) { return gref::backward(one, d1.gradOutput, d1.input, g); });
        const gref::Grads slack = kinkSlack({k.id, k.dt, one, k.mask, k.lo, k.hi}, d1);
        std::vector<std::vector<double>> inputRefs, gridRefs;
        for (const auto &g : refs) inputRefs.push_back(g.input), gridRefs.push_back(g.grid);
        if (k.mask.ig) {
            EXPECT_TRUE(withinBand(k.dt, slice(r.inputGrad, one.inputCount()), inputRefs, slack.input)) << what << " inputGrad, image " << n;
        }
        if (k.mask.gg) {
            EXPECT_TRUE(withinBand(k.dt, slice(r.gridGrad, one.gridCount()), gridRefs, slack.grid)) << what << " gridGrad, image " << n;
        }
    }
    EXPECT_TRUE(r.canary);
    EXPECT_TRUE(r.inputsUnchanged);
}

// The spec as transcribed: 205 calls (its ids 0-205 but 4), 22 of them run whole.
TEST(AtkBackwardCorpus, WholeAndMostInPhase1) {
    const auto &cases = corpus().cases;
    ASSERT_EQ(cases.size(), 205u);
    EXPECT_EQ(cases.front().id, 0);
    EXPECT_EQ(cases.back().id, 205);
    EXPECT_EQ(std::count_if(cases.begin(), cases.end(), [](const AtkCase &c) { return c.id == 4; }), 0);
    EXPECT_EQ(std::count_if(cases.begin(), cases.end(), runsWhole), 22);
}

ACLTEST_ATK_SUITE(AtkBackwardCorpus)

}  // namespace
}  // namespace gst
