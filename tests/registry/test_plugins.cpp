// The plugin registry through its public behaviour, with the fixture plugins of
// tests/fixtures/plugins/ (built like third-party plugins into <build>/fixture-plugins/<name>/):
//  - a good third-party operator (FixtureAddOne) works through its generated aclnn entry point;
//  - every broken plugin is skipped with one diagnostic naming its file, its operators are unavailable
//    (561003), and the process and the other operators carry on;
//  - a duplicate AvgPool2dBackward does not replace the real one unless `implementations:` picks it.
// The registry is cached per search-path list: each test appends a unique nonexistent directory to
// ACLNN_CPU_PLUGIN_PATH so that its registry is built afresh (and its diagnostics printed) in this process.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"
#include "aclnnop/aclnn_fixture_abi2.h"
#include "aclnnop/aclnn_fixture_abi_major.h"
#include "aclnnop/aclnn_fixture_add_one.h"
#include "aclnnop/aclnn_fixture_attr_check.h"
#include "aclnnop/aclnn_fixture_init_fails.h"
#include "aclnnop/aclnn_fixture_missing_op.h"
#include "aclnnop/aclnn_fixture_no_entry.h"
#include "aclnnop/aclnn_fixture_present_op.h"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using coretest::EnvGuard;
using coretest::StderrCapture;
using coretest::takeErr;
using coretest::writeTempFile;

const std::string kFixtures = ACLNN_CPU_TEST_FIXTURE_DIR;         // <build>/fixture-plugins
const std::string kInstalled = ACLNN_CPU_TEST_INSTALLED_PLUGIN_DIR;  // <stage>/lib/aclnn-cpu/plugins

std::string fixture(const std::string &name) { return kFixtures + "/" + name; }

aclTensor *dense(const std::vector<int64_t> &dims, void *data, aclFormat format = ACL_FORMAT_ND,
                 aclDataType dt = ACL_FLOAT) {
    std::vector<int64_t> strides(dims.size());
    int64_t s = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) strides[d] = s, s *= dims[d];
    const int64_t storage[1] = {s};
    return aclCreateTensor(dims.data(), dims.size(), dt, strides.data(), 0, format, storage, 1, data);
}

// Runs both phases of a generated (self, out) entry point; returns the first failing status.
template <class Plan, class Run>
aclnnStatus runUnary(Plan plan, Run run, aclTensor *self, aclTensor *out) {
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = plan(self, out, &ws, &exec);
    if (st != ACLNN_SUCCESS) return st;
    std::vector<uint8_t> workspace(ws);
    return run(ws ? workspace.data() : nullptr, ws, exec, nullptr);
}

// The real AvgPool2dBackward: (1,1,4,4) input, 2x2 kernel, stride 2. Returns gradInput; every element
// is gradOutput / 4 = 1, 2, 3, 4 by quadrant. `status` receives the first failing status.
std::vector<float> runAvgPoolBackward(aclnnStatus *status) {
    std::vector<float> go = {4, 8, 12, 16}, self(16, 1.0f), gi(16, -1.0f);
    aclTensor *tGo = dense({1, 1, 2, 2}, go.data(), ACL_FORMAT_NCHW), *tSelf = dense({1, 1, 4, 4}, self.data(), ACL_FORMAT_NCHW),
              *tGi = dense({1, 1, 4, 4}, gi.data(), ACL_FORMAT_NCHW);
    const int64_t k[2] = {2, 2}, p[2] = {0, 0};
    aclIntArray *kernel = aclCreateIntArray(k, 2), *padding = aclCreateIntArray(p, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    aclnnStatus st =
        aclnnAvgPool2dBackwardGetWorkspaceSize(tGo, tSelf, kernel, nullptr, padding, false, true, 0, 0, tGi, &ws, &exec);
    std::vector<uint8_t> workspace(ws);
    if (st == ACLNN_SUCCESS) st = aclnnAvgPool2dBackward(ws ? workspace.data() : nullptr, ws, exec, nullptr);
    *status = st;
    aclDestroyTensor(tGo);
    aclDestroyTensor(tSelf);
    aclDestroyTensor(tGi);
    aclDestroyIntArray(kernel);
    aclDestroyIntArray(padding);
    return gi;
}

const std::vector<float> kRealAvgPool = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};

class PluginTest : public coretest::RuntimeTest {
protected:
    // aclInit with ACLNN_CPU_PLUGIN_PATH = `paths` (plus a unique entry: a fresh registry).
    void initWithEnvPath(const std::string &paths, const char *config = nullptr) {
        EnvGuard env("ACLNN_CPU_PLUGIN_PATH", paths + ":" + coretest::uniqueMissingDir());
        ASSERT_EQ(aclInit(config), ACL_SUCCESS) << takeErr();
    }
    // aclInit with a config file listing `plugin_paths` (plus a unique entry) and extra YAML.
    void initWithConfig(const std::vector<std::string> &paths, const std::string &extra = "") {
        std::string yaml = "plugin_paths:\n";
        for (const auto &p : paths) yaml += "  - " + p + "\n";
        yaml += "  - " + coretest::uniqueMissingDir() + "\n" + extra;
        const std::string cfg = writeTempFile("plugins", yaml);
        ASSERT_EQ(aclInit(cfg.c_str()), ACL_SUCCESS) << takeErr();
    }
    // With `dir` alone on the plugin path, FixtureAddOne is not provided, and stderr has exactly one
    // diagnostic naming `dir` (returned in `line`).
    void expectAddOneSkipped(const fs::path &dir, std::string *line) {
        ASSERT_NO_FATAL_FAILURE(initWithEnvPath(dir.string()));
        std::vector<float> f(4);
        aclTensor *t = dense({4}, f.data());
        StderrCapture cap;
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
        (void)takeErr();
        const std::string err = cap.text();
        aclDestroyTensor(t);
        const auto lines = coretest::linesContaining(err, dir.string() + "/");
        ASSERT_EQ(lines.size(), 1u) << err;
        *line = lines[0];
    }
    void expectRealAvgPool() {
        aclnnStatus st = -1;
        const auto gi = runAvgPoolBackward(&st);
        ASSERT_EQ(st, ACLNN_SUCCESS) << takeErr();
        EXPECT_EQ(gi, kRealAvgPool) << "AvgPool2dBackward is not the real implementation";
    }
};

// ---- (a) a good third-party operator ----

void expectAddOneWorks() {
    std::vector<float> in = {1.5f, -2.0f, 0.0f, 100.0f, -0.25f, 7.0f}, out(6, 0.0f);
    aclTensor *tin = dense({2, 3}, in.data()), *tout = dense({2, 3}, out.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnFixtureAddOneGetWorkspaceSize(tin, tout, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    EXPECT_GE(ws, 6u * sizeof(float)) << "the fixture reserves one FLOAT buffer";
    std::vector<uint8_t> workspace(ws);
    ASSERT_EQ(aclnnFixtureAddOne(workspace.data(), ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(out, (std::vector<float>{2.5f, -1.0f, 1.0f, 101.0f, 0.75f, 8.0f}));
    aclDestroyTensor(tin);
    aclDestroyTensor(tout);
}

TEST_F(PluginTest, GoodThirdPartyOperatorViaEnvironmentPath) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectAddOneWorks());
    const std::string err = cap.text();
    EXPECT_TRUE(coretest::linesContaining(err, fixture("fixture_add_one")).empty())
        << "a good plugin loads silently at the default log level: " << err;
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
}

TEST_F(PluginTest, GoodThirdPartyOperatorViaConfigPluginPaths) {
    ASSERT_NO_FATAL_FAILURE(initWithConfig({fixture("fixture_add_one")}));
    ASSERT_NO_FATAL_FAILURE(expectAddOneWorks());
}

TEST_F(PluginTest, GoodThirdPartyOperatorFoundByScanningAParentDirectory) {
    // The path names the directory of plugin directories: every fixture is found (broken ones skipped).
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(kFixtures));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectAddOneWorks());
    (void)cap.text();
}

TEST_F(PluginTest, GoodThirdPartyOperatorOnAStridedView) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    // self is the transpose of a 3x2 storage: self[i][j] = storage[j][i].
    std::vector<float> storage = {1, 2, 3, 4, 5, 6}, out(6, 0.0f);
    const int64_t dims[2] = {2, 3}, strides[2] = {1, 2}, st[1] = {6};
    aclTensor *tin = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, st, 1, storage.data());
    aclTensor *tout = dense({2, 3}, out.data());
    ASSERT_EQ(runUnary(aclnnFixtureAddOneGetWorkspaceSize, aclnnFixtureAddOne, tin, tout), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 3, 5, 7}));
    aclDestroyTensor(tin);
    aclDestroyTensor(tout);
}

TEST_F(PluginTest, GoodThirdPartyOperatorOnEveryProductItDeclares) {
    for (const auto &p : coretest::products()) {
        ASSERT_NO_FATAL_FAILURE(initWithConfig({fixture("fixture_add_one")}, std::string("product: ") + p.id + "\n"));
        ASSERT_NO_FATAL_FAILURE(expectAddOneWorks()) << p.id;
        ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    }
}

TEST_F(PluginTest, CoreEnforcesTheThirdPartyManifest) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    std::vector<float> f(4);
    std::vector<uint16_t> h(4);
    aclTensor *ok = dense({4}, f.data()), *half = dense({4}, h.data(), ACL_FORMAT_ND, ACL_FLOAT16),
              *nhwc = dense({1, 1, 2, 2}, f.data(), ACL_FORMAT_NHWC), *out4 = dense({1, 1, 2, 2}, f.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;

    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(nullptr, ok, &ws, &exec), ACLNN_ERR_PARAM_NULLPTR);
    std::string msg = takeErr();
    EXPECT_EQ(msg.rfind("aclnnFixtureAddOne", 0), 0u) << msg;
    EXPECT_NE(msg.find("self"), std::string::npos) << msg;

    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(half, half, &ws, &exec), ACLNN_ERR_PARAM_INVALID) << "FLOAT16 undeclared";
    msg = takeErr();
    EXPECT_NE(msg.find("FLOAT16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Atlas A2"), std::string::npos) << "names the product: " << msg;

    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(nhwc, out4, &ws, &exec), ACLNN_ERR_PARAM_INVALID) << "NHWC undeclared";
    EXPECT_NE(takeErr().find("NHWC"), std::string::npos);

    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(ok, out4, &ws, &exec), ACLNN_ERR_PARAM_INVALID) << "plugin's own check";
    EXPECT_NE(takeErr().find("out"), std::string::npos);
    for (aclTensor *t : {ok, half, nhwc, out4}) aclDestroyTensor(t);
}

// The core's view checks, for every operator: an output whose elements share addresses (any
// strides, not only 0) would make results depend on scheduling; an interleaved view whose
// elements stay apart is accepted; a broadcast input of more elements than 2^62 bytes hold is
// refused before a plan could size a copy of it.
TEST_F(PluginTest, CoreRejectsOverlappingOutputsAndHugeViews) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    std::vector<float> in = {1, 2, 3, 4, 5, 6}, store(8, 0.0f);
    aclTensor *self = dense({2, 3}, in.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    {  // rows 2 elements apart, 3 long: element (0, 2) is element (1, 0)
        const int64_t dims[2] = {2, 3}, strides[2] = {2, 1}, st[1] = {5};
        aclTensor *out = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, st, 1, store.data());
        EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(self, out, &ws, &exec), ACLNN_ERR_PARAM_INVALID);
        const std::string msg = takeErr();
        EXPECT_NE(msg.find("out is an output and must not overlap itself, got shape [2,3] with strides [2,1]"), std::string::npos) << msg;
        aclDestroyTensor(out);
    }
    {  // (2, 3) with strides (3, 2): offsets 0 2 4 and 3 5 7, interleaved, no two elements meet
        const int64_t dims[2] = {2, 3}, strides[2] = {3, 2}, st[1] = {8};
        aclTensor *out = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, st, 1, store.data());
        ASSERT_EQ(runUnary(aclnnFixtureAddOneGetWorkspaceSize, aclnnFixtureAddOne, self, out), ACLNN_SUCCESS) << takeErr();
        EXPECT_EQ(store, (std::vector<float>{2, 0, 3, 5, 4, 6, 0, 7}));
        aclDestroyTensor(out);
    }
    {  // 2^61 FLOAT elements of one stored value
        float one = 1.0f;
        const int64_t dims[2] = {int64_t{1} << 31, int64_t{1} << 30}, strides[2] = {0, 0}, st[1] = {1};
        aclTensor *huge = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, st, 1, &one);
        ASSERT_NE(huge, nullptr);
        EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(huge, self, &ws, &exec), ACLNN_ERR_PARAM_INVALID);
        const std::string msg = takeErr();
        EXPECT_NE(msg.find("self shape [2147483648,1073741824] has more elements than 2^62 bytes hold"), std::string::npos) << msg;
        aclDestroyTensor(huge);
    }
    aclDestroyTensor(self);
}

TEST_F(PluginTest, FixturesAreNotInTheInstalledPluginDirectory) {
    EXPECT_FALSE(fs::exists(kInstalled + "/fixture_add_one"));
    EXPECT_FALSE(fs::exists(kInstalled + "/fixture_duplicate"));
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR)
        << "without a plugin path the fixture is not loaded";
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("FixtureAddOne"), std::string::npos) << msg;
    aclDestroyTensor(t);
}

TEST_F(PluginTest, PathMayNameAManifestFile) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one") + "/manifest.yaml"));
    ASSERT_NO_FATAL_FAILURE(expectAddOneWorks());
}

// ---- plugins broken in ways made up at run time: a manifest with an error, a missing library ----

TEST_F(PluginTest, ManifestErrorIsReportedWithFileAndLineAndSkipped) {
    const fs::path dir = coretest::scratchDir() / ("bad-manifest-" + std::to_string(::getpid()));
    fs::create_directories(dir / "broken");
    const std::string manifest = (dir / "broken" / "manifest.yaml").string();
    {
        std::ofstream out(manifest);
        out << "plugin: broken\nlibrary: aclnn_broken\nabi: 1\noperators:\n  - name: Broken\n    header: b.h\n"
               "    params:\n      - {name: self, type: tensr}\n    products: {atlas-a2: {}}\n";  // line 8: bad type
    }
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(dir.string()));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
    const std::string err = cap.text();
    const auto lines = coretest::linesContaining(err, manifest);
    ASSERT_EQ(lines.size(), 1u) << err;
    EXPECT_NE(lines[0].find(manifest + ":8:"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("tensr"), std::string::npos) << lines[0];
}

TEST_F(PluginTest, MissingLibraryIsReportedAndSkipped) {
    const fs::path dir = coretest::scratchDir() / ("no-library-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(fixture("fixture_add_one") + "/manifest.yaml", dir / "manifest.yaml",
                  fs::copy_options::overwrite_existing);  // a good manifest, but no library beside it
    std::string line;
    ASSERT_NO_FATAL_FAILURE(expectAddOneSkipped(dir, &line));
    EXPECT_NE(line.find("libaclnn_fixture_add_one.so"), std::string::npos) << line;
}

TEST_F(PluginTest, ManifestThatDisagreesWithTheGeneratedHeaderIs561000NotAWrongRead) {
    // FixtureAddOne's header passes (tensor self, tensor out); this manifest says self is an int_array.
    const fs::path dir = coretest::scratchDir() / ("kind-mismatch-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(fixture("fixture_add_one") + "/libaclnn_fixture_add_one.so", dir / "libaclnn_fixture_add_one.so",
                  fs::copy_options::overwrite_existing);
    {
        std::ofstream out(dir / "manifest.yaml");
        out << "plugin: fixture_add_one\nlibrary: aclnn_fixture_add_one\nabi: 1\noperators:\n"
               "  - name: FixtureAddOne\n    header: aclnn_fixture_add_one.h\n    params:\n"
               "      - {name: self, type: int_array}\n      - {name: out, type: tensor, output: true}\n"
               "    products: {atlas-a2: {dtypes: {out: [FLOAT]}}}\n"
               "  - name: FixtureMaskedAddOne\n    header: m.h\n    params: [{name: out, type: tensor, output: true}]\n"
               "    products: {atlas-a2: {}}\n"
               "  - name: FixtureNodeOrder\n    header: n.h\n    params: [{name: out, type: tensor, output: true}]\n"
               "    products: {atlas-a2: {}}\n"
               "  - name: FixtureAttrCheck\n    header: c.h\n    params: [{name: out, type: tensor, output: true}]\n"
               "    products: {atlas-a2: {}}\n"
               "  - name: FixtureGate\n    header: g.h\n    params: [{name: out, type: tensor, output: true}]\n"
               "    products: {atlas-a2: {}}\n"
               "  - name: FixtureLogLevels\n    header: l.h\n    params: [{name: out, type: tensor, output: true}]\n"
               "    products: {atlas-a2: {}}\n";
    }
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(dir.string()));
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnFixtureAddOneGetWorkspaceSize(t, t, &ws, &exec), ACLNN_ERR_INNER);
    EXPECT_EQ(exec, nullptr);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("the entry point passes argument 0 (self) as kind 1 but the manifest declares int_array (kind 2)"),
              std::string::npos)
        << msg;
    aclDestroyTensor(t);
}

// Attribute rules hold for floating parameters too: float, double and float_array values compare
// as doubles, NaN is in no range and equals no value.
TEST_F(PluginTest, FloatAttributeRulesAreEnforced) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    struct Row {
        float alpha;
        double beta;
        std::vector<float> gammas;
        aclnnStatus status;
        const char *says;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Row rows[] = {
        {0.5f, 2.0, {0.25f, -1.0f}, ACLNN_SUCCESS, ""},
        {5.0f, 0.0, {}, ACLNN_ERR_PARAM_INVALID, "alpha must be in [0, 1], got 5"},
        {nan, 0.0, {}, ACLNN_ERR_PARAM_INVALID, "alpha must be in [0, 1], got nan"},
        {1.0f, 1.5, {}, ACLNN_ERR_PARAM_INVALID, "beta must be one of 0, 2, got 1.5"},
        {0.0f, 0.0, {0.5f, -2.0f}, ACLNN_ERR_PARAM_INVALID, "gammas[1] must be in [-1, 1], got -2"},
    };
    for (const Row &r : rows) {
        aclFloatArray *g = aclCreateFloatArray(r.gammas.data(), r.gammas.size());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnFixtureAttrCheckGetWorkspaceSize(t, r.alpha, r.beta, g, t, &ws, &exec), r.status) << r.says;
        const std::string msg = takeErr();
        if (r.status == ACLNN_SUCCESS) {
            EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
        } else {
            EXPECT_NE(msg.find(r.says), std::string::npos) << msg;
        }
        aclDestroyFloatArray(g);
    }
    aclDestroyTensor(t);
}

// ---- (b) .. (g) broken plugins ----

using PlanFn = aclnnStatus (*)(const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **);

struct Broken {
    const char *name;         // fixture directory
    const char *library;      // its library name (lib<library>.so)
    std::vector<PlanFn> ops;  // entry points of the operators it declares
    const char *reason;       // a word the diagnostic must contain
};
void PrintTo(const Broken &b, std::ostream *os) { *os << b.name; }

class BrokenPluginTest : public PluginTest, public ::testing::WithParamInterface<Broken> {};

TEST_P(BrokenPluginTest, IsSkippedWithOneDiagnosticNamingItsFile) {
    const Broken &b = GetParam();
    const std::string dir = fixture(b.name);
    ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << dir;
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(dir));
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    StderrCapture cap;
    for (PlanFn plan : b.ops) {
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(plan(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR) << "operator of a skipped plugin";
        EXPECT_EQ(exec, nullptr);
        (void)takeErr();
    }
    const std::string err = cap.text();
    aclDestroyTensor(t);

    const auto lines = coretest::linesContaining(err, dir + "/");
    ASSERT_EQ(lines.size(), 1u) << "expected one diagnostic naming " << dir << "; stderr:\n" << err;
    const std::string &line = lines[0];
    const bool names_file = line.find(dir + "/manifest.yaml") != std::string::npos ||
                            line.find(dir + "/lib" + b.library + ".so") != std::string::npos;
    EXPECT_TRUE(names_file) << "the diagnostic names neither the manifest nor the library: " << line;
    EXPECT_NE(line.find(b.reason), std::string::npos) << "the diagnostic does not say why: " << line;

    // The process survives and every other operator still works.
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
}

TEST_P(BrokenPluginTest, IsSkippedWhenGivenThroughTheConfig) {
    const Broken &b = GetParam();
    ASSERT_NO_FATAL_FAILURE(initWithConfig({fixture(b.name)}));
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    StderrCapture cap;
    for (PlanFn plan : b.ops) {
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(plan(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
        (void)takeErr();
    }
    EXPECT_NE(cap.text().find(fixture(b.name) + "/"), std::string::npos);
    aclDestroyTensor(t);
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
}

TEST_P(BrokenPluginTest, DiagnosticIsSilentAtLogLevel4) {
    const Broken &b = GetParam();
    EnvGuard lvl("ASCEND_GLOBAL_LOG_LEVEL", "4");
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture(b.name)));
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    StderrCapture cap;
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(b.ops[0](t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
    EXPECT_EQ(cap.text(), "");
    (void)takeErr();
    aclDestroyTensor(t);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BrokenPluginTest,
    ::testing::Values(
        Broken{"fixture_abi_major", "aclnn_fixture_abi_major", {aclnnFixtureAbiMajorGetWorkspaceSize}, "99"},
        Broken{"fixture_no_entry", "aclnn_fixture_no_entry", {aclnnFixtureNoEntryGetWorkspaceSize}, "aclnn_cpu_plugin"},
        Broken{"fixture_init_fails", "aclnn_fixture_init_fails", {aclnnFixtureInitFailsGetWorkspaceSize},
               "refuses to start"},
        Broken{"fixture_missing_op", "aclnn_fixture_missing_op",
               {aclnnFixtureMissingOpGetWorkspaceSize, aclnnFixturePresentOpGetWorkspaceSize}, "FixtureMissingOp"},
        Broken{"fixture_abi2", "aclnn_fixture_abi2", {aclnnFixtureAbi2GetWorkspaceSize}, "ABI"}),
    [](const ::testing::TestParamInfo<Broken> &i) { return std::string(i.param.name); });

// A plugin rejected after loading stays loaded (its init may have started threads), and its init
// runs once per process however many registries the configurations build.
TEST_F(PluginTest, RejectedPluginStaysLoadedAndItsInitRunsOnce) {
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    for (int round = 0; round < 3; ++round) {  // each round a new plugin path, so a new registry
        ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_init_fails")));
        StderrCapture cap;
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnFixtureInitFailsGetWorkspaceSize(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
        (void)takeErr();
        EXPECT_NE(cap.text().find("refuses to start"), std::string::npos) << "the diagnostic repeats: " << cap.text();
        ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    }
    aclDestroyTensor(t);
    const std::string lib = fixture("fixture_init_fails") + "/libaclnn_fixture_init_fails.so";
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr) << "the rejected library was unloaded";
    auto calls = reinterpret_cast<int (*)()>(dlsym(h, "fixture_init_fails_init_calls"));
    ASSERT_NE(calls, nullptr);
    EXPECT_EQ(calls(), 1);
    dlclose(h);  // drops only the reference taken here
}

// A library the dynamic loader refuses: the diagnostic gives the loader's reason (not errno's).
TEST_F(PluginTest, UnloadableLibraryDiagnosticGivesTheLoadersReason) {
    const fs::path dir = coretest::scratchDir() / "plugin-not-elf";
    fs::create_directories(dir);
    fs::copy_file(fixture("fixture_add_one") + "/manifest.yaml", dir / "manifest.yaml", fs::copy_options::overwrite_existing);
    {
        std::ofstream junk(dir / "libaclnn_fixture_add_one.so");
        junk << std::string(200, 'x');
    }
    std::string line;
    ASSERT_NO_FATAL_FAILURE(expectAddOneSkipped(dir, &line));
    EXPECT_NE(line.find("cannot load the plugin library"), std::string::npos) << line;
    EXPECT_NE(line.find("ELF"), std::string::npos) << "the loader's reason: " << line;
}

TEST_F(PluginTest, AllFixturesTogether) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(kFixtures));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectAddOneWorks());
    std::vector<float> f(4);
    aclTensor *t = dense({4}, f.data());
    for (PlanFn plan : {aclnnFixtureAbiMajorGetWorkspaceSize, aclnnFixtureNoEntryGetWorkspaceSize,
                        aclnnFixtureInitFailsGetWorkspaceSize, aclnnFixtureMissingOpGetWorkspaceSize,
                        aclnnFixturePresentOpGetWorkspaceSize, aclnnFixtureAbi2GetWorkspaceSize}) {
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(plan(t, t, &ws, &exec), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
        (void)takeErr();
    }
    aclDestroyTensor(t);
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
    const std::string err = cap.text();
    for (const char *name : {"fixture_abi_major", "fixture_no_entry", "fixture_init_fails", "fixture_missing_op",
                             "fixture_abi2", "fixture_duplicate"})
        EXPECT_EQ(coretest::linesContaining(err, fixture(name) + "/").size(), 1u) << name << "; stderr:\n" << err;
    EXPECT_TRUE(coretest::linesContaining(err, fixture("fixture_add_one") + "/").empty()) << err;
}

// ---- (d) the duplicate operator ----

TEST_F(PluginTest, DuplicateDoesNotReplaceTheRealOperator) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_duplicate")));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
    const std::string err = cap.text();
    const auto lines = coretest::linesContaining(err, "AvgPool2dBackward");
    ASSERT_EQ(lines.size(), 1u) << "one diagnostic for the duplicate; stderr:\n" << err;
    EXPECT_NE(lines[0].find(fixture("fixture_duplicate") + "/manifest.yaml"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find(kInstalled + "/avgpool2d/manifest.yaml"), std::string::npos)
        << "the message names both files: " << lines[0];
}

TEST_F(PluginTest, DuplicateGivenThroughTheConfigDoesNotReplaceTheRealOperator) {
    ASSERT_NO_FATAL_FAILURE(initWithConfig({fixture("fixture_duplicate")}));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
    (void)cap.text();
}

TEST_F(PluginTest, ImplementationsSelectsTheDuplicate) {
    ASSERT_NO_FATAL_FAILURE(
        initWithConfig({fixture("fixture_duplicate")}, "implementations: {AvgPool2dBackward: fixture_duplicate}\n"));
    StderrCapture cap;
    aclnnStatus st = -1;
    const auto gi = runAvgPoolBackward(&st);
    const std::string err = cap.text();
    ASSERT_EQ(st, ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi, std::vector<float>(16, 42.0f)) << "the configured implementation did not run";
    for (const auto &line : coretest::linesContaining(err, "ERROR"))
        EXPECT_EQ(line.find("AvgPool2dBackward"), std::string::npos) << "a chosen duplicate is not an error: " << line;
}

TEST_F(PluginTest, ImplementationsSelectsTheDuplicateFromEnvironmentPath) {
    const std::string cfg = writeTempFile("impl", "implementations: {AvgPool2dBackward: fixture_duplicate}\n");
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_duplicate"), cfg.c_str()));
    aclnnStatus st = -1;
    const auto gi = runAvgPoolBackward(&st);
    ASSERT_EQ(st, ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(gi, std::vector<float>(16, 42.0f));
}

TEST_F(PluginTest, ImplementationsNamingTheRealPluginKeepsIt) {
    ASSERT_NO_FATAL_FAILURE(
        initWithConfig({fixture("fixture_duplicate")}, "implementations: {AvgPool2dBackward: avgpool2d}\n"));
    StderrCapture cap;
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
    const std::string err = cap.text();
    for (const auto &line : coretest::linesContaining(err, "ERROR"))
        EXPECT_EQ(line.find("AvgPool2dBackward"), std::string::npos) << "a resolved duplicate is not an error: " << line;
}

TEST_F(PluginTest, ImplementationChoiceEndsWithFinalize) {
    ASSERT_NO_FATAL_FAILURE(
        initWithConfig({fixture("fixture_duplicate")}, "implementations: {AvgPool2dBackward: fixture_duplicate}\n"));
    aclnnStatus st = -1;
    EXPECT_EQ(runAvgPoolBackward(&st), std::vector<float>(16, 42.0f));
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expectRealAvgPool());
}

}  // namespace

// The core's convert / store nodes walk any view: size-1 dims with arbitrary strides, dims merged
// where the view is contiguous across them, broadcast (stride 0) inputs, permuted and padded
// layouts, and rows long enough to be split into pieces. out = self + 1 element by element.
TEST_F(PluginTest, CoreConversionWalksAnyLayout) {
    ASSERT_NO_FATAL_FAILURE(initWithEnvPath(fixture("fixture_add_one")));
    struct Case {
        const char *what;
        std::vector<int64_t> dims, strides;
        int64_t offset;
    };
    const std::vector<Case> cases = {
        {"size-1 dims with odd strides", {3, 1, 4, 1}, {4, 99, 1, 7}, 0},
        {"contiguous 1x1 weight", {64, 32, 1, 1}, {32, 1, 1, 1}, 0},
        {"transposed", {5, 7}, {1, 5}, 0},
        {"padded rows and an offset", {3, 4, 5}, {48, 12, 2}, 3},
        {"broadcast dim", {4, 6}, {0, 1}, 0},
        {"one long row", {1, 40001}, {40001, 1}, 0},
        {"long strided rows", {2, 20000}, {1, 2}, 0},
    };
    for (const Case &c : cases) {
        int64_t n = 1, span = c.offset + 1;
        for (size_t d = 0; d < c.dims.size(); ++d) n *= c.dims[d], span += (c.dims[d] - 1) * c.strides[d];
        std::vector<float> storage(static_cast<size_t>(span)), out(static_cast<size_t>(n), -1.0f);
        for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(i % 1000) * 0.5f;
        const int64_t st[1] = {span};
        aclTensor *tin = aclCreateTensor(c.dims.data(), c.dims.size(), ACL_FLOAT, c.strides.data(), c.offset, ACL_FORMAT_ND,
                                         st, 1, storage.data());
        aclTensor *tout = dense(c.dims, out.data());
        ASSERT_EQ(runUnary(aclnnFixtureAddOneGetWorkspaceSize, aclnnFixtureAddOne, tin, tout), ACLNN_SUCCESS) << c.what << ": " << takeErr();
        int wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
            int64_t off = c.offset, rem = i;
            for (size_t d = c.dims.size(); d-- > 0;) off += (rem % c.dims[d]) * c.strides[d], rem /= c.dims[d];
            if (out[static_cast<size_t>(i)] != storage[static_cast<size_t>(off)] + 1.0f && wrong++ < 3)
                ADD_FAILURE() << c.what << ": element " << i << " is " << out[static_cast<size_t>(i)] << ", expected "
                              << storage[static_cast<size_t>(off)] + 1.0f;
        }
        EXPECT_EQ(wrong, 0) << c.what;
        aclDestroyTensor(tin);
        aclDestroyTensor(tout);
    }
}
