// Huawei's system-test corpus of aclnnGridSampler2D (CANN's ATK spec, cann_st/README.md), as data:
// every case is a call Huawei runs on its A2 card against a double-precision benchmark, so each must
// be accepted on atlas-a2 and atlas-a3 (or answer what the file's `deviations:` record) and match
// the reference (grid_reference.hpp, double) on data drawn as the spec draws it: uniform in its
// range (input and grid in [-100, 100]: most samples land far outside the plane, where padding and
// reflection decide), in the tensor's dtype.
//
// The comparison allows for the rounding of the kernel's coordinate arithmetic (grid_atk_util.hpp):
// far out, a bilinear sample moves by up to twice the plane's largest |input| per pixel of
// coordinate error; a nearest pick is held to the band of the references around the grid values.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <tuple>

#include "grid_atk_util.hpp"

namespace gst {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(GRID_TESTS_DIR) / "cann_st/grid_sampler2d_atk.yaml";

struct AtkCase {
    int id = 0;
    aclDataType dt = ACL_FLOAT;
    gref::Problem p{};
    double lo = 0, hi = 0, gridLo = 0, gridHi = 0;
};

AtkCase parse(const YAML::Node &n) {
    AtkCase k;
    k.id = n["id"].as<int>();
    k.dt = acltest::atkDtype(n["dtype"]);
    const auto in = n["input"].as<std::vector<int64_t>>(), grid = n["grid"].as<std::vector<int64_t>>();
    if (in.size() != 4 || grid.size() != 4 || grid[0] != in[0] || grid[3] != 2)
        throw std::runtime_error("case " + std::to_string(k.id) + ": not an N C H W input with an N Ho Wo 2 grid");
    k.p = gref::Problem{in[0], in[1], in[2], in[3], grid[1], grid[2], n["mode"].as<int>(), n["padding_mode"].as<int>(),
                        n["align_corners"].as<bool>()};
    const auto range = n["range"].as<std::vector<double>>();
    const auto gridRange = n["gridRange"] ? n["gridRange"].as<std::vector<double>>() : range;
    k.lo = range.at(0), k.hi = range.at(1), k.gridLo = gridRange.at(0), k.gridHi = gridRange.at(1);
    return k;
}

const acltest::AtkSpec<AtkCase> &corpus() {
    static const auto spec = acltest::AtkSpec<AtkCase>::load(kCorpus.string(), parse);
    return spec;
}

// Per output, the most a bilinear sample can move by its coordinates' rounding: 8 ulps of (|v| + 1)
// of each grid value, times d(pixel)/d(grid value) = size / 2, times the largest change of the
// plane's values over a pixel (2 max |input|).
std::vector<double> coordinateSlack(const AtkCase &k, const std::vector<double> &input, const std::vector<double> &grid) {
    const gref::Problem &p = k.p;
    std::vector<double> slack(static_cast<size_t>(p.outputCount()));
    const double u = 8 * coordinateUlp(k.dt);
    for (int64_t n = 0; n < p.N; ++n) {
        double maxIn = 0;
        for (int64_t e = n * p.C * p.H * p.W; e < (n + 1) * p.C * p.H * p.W; ++e) maxIn = std::max(maxIn, std::fabs(input[static_cast<size_t>(e)]));
        for (int64_t c = 0; c < p.C; ++c)
            for (int64_t o = 0; o < p.Ho * p.Wo; ++o) {
                const double gx = grid[static_cast<size_t>((n * p.Ho * p.Wo + o) * 2)], gy = grid[static_cast<size_t>((n * p.Ho * p.Wo + o) * 2 + 1)];
                const double px = u * (std::fabs(gx) + 1) * static_cast<double>(p.W) / 2, py = u * (std::fabs(gy) + 1) * static_cast<double>(p.H) / 2;
                slack[static_cast<size_t>((n * p.C + c) * p.Ho * p.Wo + o)] = 2 * maxIn * (px + py);
            }
    }
    return slack;
}

// The calls run whole here: those whose tensors take at most 1M elements, and the smallest of each
// dtype x mode x padding x align_corners (144 of 220); the others (planes of 131073 columns, batches
// of 1842, 4.7G samples) are checked in phase 1.
bool runsWhole(const AtkCase &k) {
    return corpus().runsWhole(
        k, 1'000'000, [](const AtkCase &c) { return c.p.inputCount() + c.p.gridCount() + c.p.outputCount(); },
        [](const AtkCase &c) { return std::make_tuple(c.dt, c.p.interp, c.p.padding, c.p.align); });
}

// Phase 1 alone, every tensor's data an unreadable reservation (a phase 1 that read data would crash).
aclnnStatus phase1Only(const AtkCase &k, std::string &message) {
    acltest::ReservedTensors reserved;
    const auto tensor = [&](const std::vector<int64_t> &shape) { return reserved.add(shape, k.dt, elemSize(k.dt), ACL_FORMAT_ND); };
    aclTensor *in = tensor(inDims(k.p)), *grid = tensor(gridDims(k.p)), *out = tensor(outDims(k.p));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    return acltest::atkPhase1(aclnnGridSampler2DGetWorkspaceSize(in, grid, k.p.interp, k.p.padding, k.p.align, out, &ws, &exec), exec, message);
}

// A case in failure messages.
std::string name(const AtkCase &k) { return "case " + std::to_string(k.id) + " " + describe(k.p); }

// Phase 1's status: success, or the recorded deviation. On atlas-a2, where Huawei runs the spec,
// the calls small enough then run and match the reference. (atlas-a3: AcceptedOnAtlasA3.)
void replay(size_t idx) {
    const AtkCase &k = corpus().cases[idx];
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    if (!runsWhole(k) || corpus().deviation(idx)) return corpus().expectPhase1(idx, phase1Only, name);
    const auto seed = static_cast<uint64_t>(k.id) * 2;
    const auto input = draw(k.p.inputCount(), k.lo, k.hi, seed + 1, k.dt);
    const auto grid = draw(k.p.gridCount(), k.gridLo, k.gridHi, seed + 2, k.dt);
    const Result r = runForward(k.p, k.dt, input, grid);
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << "case " << k.id << " " << describe(k.p) << ": " << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << "case " << k.id << ": " << r.message;
    const auto refs = bandReferences(grid, k.dt, [&](const std::vector<double> &g) { return gref::forward(k.p, input, g); });
    const std::vector<double> slack = k.p.interp == 1 ? std::vector<double>(refs[0].size(), 0.0) : coordinateSlack(k, input, grid);
    EXPECT_TRUE(withinBand(k.dt, r.inputGrad, refs, slack)) << "case " << k.id << " " << describe(k.p) << " " << dtName(k.dt);
    EXPECT_TRUE(r.canary);
}

ACLTEST_ATK_SUITE(AtkCorpus)

// The corpus is the spec's, whole: its ids run 0 .. n - 1 without a gap; and most of it runs whole.
TEST(AtkCorpus, IdsContiguousAndMostRunWhole) {
    const auto &cases = corpus().cases;
    ASSERT_EQ(cases.size(), 220u);
    size_t whole = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(cases[i].id, static_cast<int>(i));
        whole += runsWhole(cases[i]) ? 1 : 0;
    }
    EXPECT_EQ(whole, 144u);
}

}  // namespace
}  // namespace gst
