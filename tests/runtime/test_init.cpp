// aclInit / aclFinalize: NULL and YAML configurations, every config error, and product selection
// (config key > ACLNN_CPU_PRODUCT > atlas-a2) as seen through aclrtGetSocName (api.md, products.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_cpu/opapi_abi.h"
#include "context.hpp"  // core/runtime: the runtime state snapshot (threads, plugin paths) for white-box checks
#include "test_util.hpp"

namespace {

using coretest::EnvGuard;
using coretest::takeErr;
using coretest::writeTempFile;

class InitTest : public coretest::RuntimeTest {};

std::string soc() {
    const char *s = aclrtGetSocName();
    return s ? std::string(s) : std::string("<NULL>");
}

TEST_F(InitTest, NullConfigInitializesWithDefaults) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910B") << "the default product is atlas-a2";
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST_F(InitTest, EmptyPathIsLikeNull) {
    ASSERT_EQ(aclInit(""), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910B");
}

TEST_F(InitTest, InitFinalizeCycles) {
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << "cycle " << i << ": " << takeErr();
        ASSERT_EQ(aclFinalize(), ACL_SUCCESS) << "cycle " << i;
    }
}

TEST_F(InitTest, YamlConfigWithEveryRuntimeKey) {
    const std::string extra = coretest::uniqueMissingDir();
    const std::string path = writeTempFile("full", "# runtime configuration\n"
                                                   "product: atlas-training\n"
                                                   "threads: 3\n"
                                                   "log_level: 3\n"
                                                   "plugin_paths: [" + extra + "]\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910");
    const auto state = aclcpu::runtime_state();
    ASSERT_TRUE(state);
    EXPECT_EQ(state->product.id, "atlas-training");
    EXPECT_EQ(state->threads, 3);
    ASSERT_TRUE(state->arena);
    EXPECT_EQ(state->arena->max_concurrency(), 3);
    const auto &pp = state->plugin_paths;
    EXPECT_NE(std::find(pp.begin(), pp.end(), extra), pp.end()) << "plugin_paths entry not searched";
    // The installed plugins are searched first, so a plugin on a configured path never silently
    // replaces a built-in operator (duplicates need `implementations:`).
    ASSERT_FALSE(pp.empty());
    EXPECT_EQ(pp.front(), aclcpu::install_layout().plugin_dir);
}

// set_env.sh puts the installed plugin directory on ACLNN_CPU_PLUGIN_PATH, where it is searched
// anyway: every directory is listed once, at its first place (aclnn-cpu list prints this path).
TEST_F(InitTest, PluginPathListsEachDirectoryOnce) {
    const std::string extra = coretest::uniqueMissingDir();
    const std::string installed = aclcpu::install_layout().plugin_dir;
    const std::string path = writeTempFile("dup", "plugin_paths: [" + extra + ", " + extra + "/]\n");
    EnvGuard env("ACLNN_CPU_PLUGIN_PATH", installed + "/:" + extra + ":" + installed);
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    const auto state = aclcpu::runtime_state();
    ASSERT_TRUE(state);
    EXPECT_EQ(state->plugin_paths, (std::vector<std::string>{installed, extra}));
}

TEST_F(InitTest, EmptyYamlFileIsDefaults) {
    const std::string path = writeTempFile("empty", "# nothing set\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910B");
}

TEST_F(InitTest, ProductMayBeGivenBySocNameInConfig) {
    const std::string path = writeTempFile("soc", "product: Ascend310P\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend310P");
}

TEST_F(InitTest, NonexistentFileIs100003) {
    const std::string path = (coretest::scratchDir() / "does-not-exist.yaml").string();
    EXPECT_EQ(aclInit(path.c_str()), ACL_ERROR_INVALID_FILE);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    // Nothing was initialized: finalize has nothing to undo.
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

TEST_F(InitTest, DirectoryIsNotAConfigFile) {
    EXPECT_EQ(aclInit(coretest::scratchDir().c_str()), ACL_ERROR_INVALID_FILE);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(InitTest, SyntaxErrorIs100006WithFileAndLine) {
    // line 3 holds the error ("illegal map value")
    const std::string path = writeTempFile("syntax", "product: atlas-a2\nthreads: 2\nfoo: bar: baz\n");
    EXPECT_EQ(aclInit(path.c_str()), ACL_ERROR_PARSE_FILE);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

TEST_F(InitTest, UnclosedFlowSequenceReportsFileAndLine) {
    const std::string path = writeTempFile("flow", "product: atlas-a2\nplugin_paths: [a, b\n");
    EXPECT_EQ(aclInit(path.c_str()), ACL_ERROR_PARSE_FILE);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find(path + ":"), std::string::npos) << msg;
}

TEST_F(InitTest, UnknownKeyIsRejectedWithFileLineAndKey) {
    const std::string path = writeTempFile("unknown", "product: atlas-a2\nthreads: 2\nthread_count: 4\n");
    const aclError rc = aclInit(path.c_str());
    EXPECT_NE(rc, ACL_SUCCESS);
    EXPECT_TRUE(rc == ACL_ERROR_PARSE_FILE || rc == ACL_ERROR_INVALID_PARAM) << rc;
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("thread_count"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path + ":3"), std::string::npos) << msg;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

// A scalar key of the wrong type: a parse error on one line naming the file and line, the key, what
// it must be and what it is; nothing initialized.
TEST_F(InitTest, BadValueTypeIsAParseError) {
    struct Bad {
        const char *name, *yaml, *message;
    };
    for (const Bad &b : {Bad{"badvalue", "product: atlas-a2\nthreads: lots\n", "'threads' must be an integer from 0 to 1024, got 'lots'"},
                         Bad{"badtimeline", "threads: 2\ntimeline: maybe\n", "'timeline' must be true or false, got 'maybe'"}}) {
        const std::string path = writeTempFile(b.name, b.yaml);
        EXPECT_EQ(aclInit(path.c_str()), ACL_ERROR_PARSE_FILE) << b.name;
        const std::string msg = takeErr();
        EXPECT_NE(msg.find(path + ":2"), std::string::npos) << msg;
        EXPECT_NE(msg.find(b.message), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
        EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE) << b.name;
    }
}

// Values of the right YAML kind but wrong content, and shapes yaml-cpp would accept quietly: each is
// a parse error on one line naming the key and what it must be; nothing initialized.
TEST_F(InitTest, InvalidConfigValuesAreParseErrors) {
    struct Bad {
        const char *name, *yaml, *message;
    };
    for (const Bad &b : {Bad{"loglevel9", "log_level: 9\n", "log_level must be from 0 (debug) to 4 (none), got 9"},
                         Bad{"loglevelneg", "log_level: -7\n", "log_level must be from 0 (debug) to 4 (none), got -7"},
                         Bad{"implscalar", "implementations: foo\n", "'implementations' must be a mapping of operator to plugin"},
                         Bad{"implseq", "implementations: [a, b]\n", "'implementations' must be a mapping"},
                         Bad{"implvalue", "implementations: {AvgPool2dBackward: [a]}\n", "'implementations' of AvgPool2dBackward must be a plugin name"},
                         Bad{"ppmap", "plugin_paths: [{a: b}]\n", "each entry of 'plugin_paths' must be a string"},
                         Bad{"disnested", "disabled_ops: [[x]]\n", "each entry of 'disabled_ops' must be a string"},
                         Bad{"dupkey", "product: atlas-training\nproduct: atlas-a3\n", "'product' is given twice (first on line 1)"},
                         Bad{"multidoc", "product: atlas-a2\n---\nthreads: 2\n", "must be one YAML document, got 2"}}) {
        const std::string path = writeTempFile(b.name, b.yaml);
        EXPECT_EQ(aclInit(path.c_str()), ACL_ERROR_PARSE_FILE) << b.name;
        const std::string msg = takeErr();
        EXPECT_NE(msg.find(b.message), std::string::npos) << b.name << ": " << msg;
        EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE) << b.name;
    }
    // a value that quotes a newline still makes a one-line message
    const std::string path = writeTempFile("productnl", "product: \"atlas-a2\\nsecond line\"\n");
    EXPECT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("second line"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

TEST_F(InitTest, NegativeThreadsIsRejected) {
    const std::string path = writeTempFile("negthreads", "threads: -2\n");
    EXPECT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    EXPECT_NE(takeErr().find("threads"), std::string::npos);
}

TEST_F(InitTest, ThreadsAbove1024AreRejected) {
    const std::string ok = writeTempFile("threads1024", "threads: 1024\n");
    ASSERT_EQ(aclInit(ok.c_str()), ACL_SUCCESS) << takeErr();
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    const std::string path = writeTempFile("threads1025", "threads: 1025\n");
    EXPECT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("threads must be from 0 (all cores) to 1024, got 1025"), std::string::npos) << msg;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

TEST_F(InitTest, ThreadsFromTheEnvironmentAreChecked) {
    for (const char *bad : {"100000", "-1", "two", "2x"}) {
        EnvGuard env("ACLNN_CPU_THREADS", bad);
        EXPECT_NE(aclInit(nullptr), ACL_SUCCESS) << bad;
        const std::string msg = takeErr();
        EXPECT_NE(msg.find(std::string("ACLNN_CPU_THREADS must be an integer from 0 (all cores) to 1024, got '") + bad + "'"),
                  std::string::npos) << msg;
        EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE) << bad;
    }
    EnvGuard env("ACLNN_CPU_THREADS", "3");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclcpu::runtime_state()->threads, 3);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST_F(InitTest, PluginPathsMustBeAList) {
    const std::string path = writeTempFile("pp", "plugin_paths: /opt/plugins\n");
    EXPECT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("plugin_paths"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path + ":"), std::string::npos) << msg;
}

TEST_F(InitTest, UnknownProductListsKnownIds) {
    const std::string path = writeTempFile("badproduct", "product: atlas-z9\n");
    EXPECT_NE(aclInit(path.c_str()), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("atlas-z9"), std::string::npos) << msg;
    for (const auto &p : coretest::products()) EXPECT_NE(msg.find(p.id), std::string::npos) << p.id << " missing in: " << msg;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE) << "a failed aclInit must not leave the runtime initialized";
    // ... and a later good aclInit works.
    EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
}

TEST_F(InitTest, UnknownProductInEnvironmentIsRejected) {
    EnvGuard env("ACLNN_CPU_PRODUCT", "Ascend999");
    EXPECT_NE(aclInit(nullptr), ACL_SUCCESS);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("Ascend999"), std::string::npos) << msg;
    EXPECT_NE(msg.find("atlas-a2"), std::string::npos) << msg;
    // Without aclInit an operator call starts the runtime from the environment: it names the
    // product, not an empty plugin path.
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    EXPECT_EQ(aclnnCpuPlan("AvgPool2dBackward", nullptr, 0, &ws, &exec), ACLNN_ERR_INNER);
    const std::string why = takeErr();
    EXPECT_NE(why.find("the runtime could not start: unknown product 'Ascend999'"), std::string::npos) << why;
}

TEST_F(InitTest, DoubleInitIs100002) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
    EXPECT_FALSE(takeErr().empty());
    // The first initialization is still in force.
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
}

TEST_F(InitTest, DoubleInitKeepsTheFirstProduct) {
    const std::string training = writeTempFile("p", "product: atlas-training\n");
    const std::string a3 = writeTempFile("p", "product: atlas-a3\n");
    ASSERT_EQ(aclInit(training.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclInit(a3.c_str()), ACL_ERROR_REPEAT_INITIALIZE);
    EXPECT_EQ(soc(), "Ascend910");
}

TEST_F(InitTest, FinalizeWithoutInitIs100001) {
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
    EXPECT_FALSE(takeErr().empty());
}

// ---- aclnnInit / aclnnFinalize: CANN's aclnn-only initialization, beside aclInit ----

TEST_F(InitTest, AclnnInitStartsFromTheEnvironment) {
    EnvGuard env("ACLNN_CPU_PRODUCT", "atlas-training");
    ASSERT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910");
    EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS) << "a second aclnnInit succeeds, as in CANN";
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE) << "aclnnInit is not aclInit";
    (void)takeErr();
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
}

TEST_F(InitTest, AclnnInitIgnoresCannsJsonConfig) {
    const std::string json = writeTempFile("acl-json", "{\"op_debug_config\": {\"enable_debug_kernel\": \"on\"}}\n");
    EXPECT_EQ(aclnnInit(json.c_str()), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(aclnnInit("/nonexistent/acl.json"), ACLNN_SUCCESS) << "a missing file is ignored, as in CANN";
    EXPECT_EQ(aclnnInit(""), ACLNN_SUCCESS);
    EXPECT_EQ(soc(), "Ascend910B");
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
}

// Both initializations may be called, in either order, without a failure; aclInit's product holds.
TEST_F(InitTest, AclnnInitAndAclInitTogether) {
    const std::string a3 = writeTempFile("p", "product: atlas-a3\n");
    ASSERT_EQ(aclInit(a3.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910_93");
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
    EXPECT_EQ(soc(), "Ascend910_93") << "aclnnFinalize leaves aclInit's configuration to aclFinalize";
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);

    ASSERT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclInit(a3.c_str()), ACL_SUCCESS) << "aclInit after aclnnInit: " << takeErr();
    EXPECT_EQ(soc(), "Ascend910_93");
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

// A bad ACLNN_CPU_PRODUCT is reported by aclnnInit itself; after aclnnFinalize the environment is read again.
TEST_F(InitTest, AclnnInitReportsABadEnvironmentAndFinalizeRereadsIt) {
    {
        EnvGuard env("ACLNN_CPU_PRODUCT", "Ascend999");
        EXPECT_EQ(aclnnInit(nullptr), ACLNN_ERR_INNER);
        const std::string msg = takeErr();
        EXPECT_NE(msg.find("aclnnInit: the runtime could not start: unknown product 'Ascend999'"), std::string::npos) << msg;
        EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
    }
    EnvGuard env("ACLNN_CPU_PRODUCT", "atlas-inference");
    ASSERT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend310P");
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
}

// ---- product selection: config key > ACLNN_CPU_PRODUCT (id or SoC name) > atlas-a2 ----

class SocNameTest : public coretest::RuntimeTest, public ::testing::WithParamInterface<coretest::ProductRow> {};

TEST_P(SocNameTest, ConfigProductKey) {
    const auto &p = GetParam();
    const std::string path = writeTempFile("product", std::string("product: ") + p.id + "\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), p.soc);
}

TEST_P(SocNameTest, EnvironmentId) {
    const auto &p = GetParam();
    EnvGuard env("ACLNN_CPU_PRODUCT", p.id);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), p.soc);
}

TEST_P(SocNameTest, EnvironmentSocName) {
    const auto &p = GetParam();
    EnvGuard env("ACLNN_CPU_PRODUCT", p.soc);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), p.soc);
}

TEST_P(SocNameTest, ConfigKeyBeatsEnvironment) {
    const auto &p = GetParam();
    // The environment names a different product; the config key wins.
    EnvGuard env("ACLNN_CPU_PRODUCT", std::string(p.id) == "atlas-a3" ? "atlas-training" : "atlas-a3");
    const std::string path = writeTempFile("product", std::string("product: ") + p.id + "\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), p.soc);
}

TEST_P(SocNameTest, EnvironmentBeatsDefaultWithConfigWithoutProduct) {
    const auto &p = GetParam();
    EnvGuard env("ACLNN_CPU_PRODUCT", p.id);
    const std::string path = writeTempFile("noproduct", "threads: 1\n");
    ASSERT_EQ(aclInit(path.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), p.soc);
}

INSTANTIATE_TEST_SUITE_P(AllProducts, SocNameTest, ::testing::ValuesIn(coretest::products()),
                         [](const ::testing::TestParamInfo<coretest::ProductRow> &info) {
                             std::string n = info.param.id;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

TEST_F(InitTest, EmptyEnvironmentMeansDefault) {
    EnvGuard env("ACLNN_CPU_PRODUCT", "");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910B");
}

TEST_F(InitTest, SocNameWithoutInitUsesDefaultProduct) {
    // CANN programs may ask before aclInit; the default selection applies.
    EXPECT_EQ(soc(), "Ascend910B");
}

TEST_F(InitTest, ProductChangesAcrossFinalize) {
    const std::string a = writeTempFile("p", "product: atlas-inference\n");
    const std::string b = writeTempFile("p", "product: atlas-a3\n");
    ASSERT_EQ(aclInit(a.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend310P");
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    ASSERT_EQ(aclInit(b.c_str()), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910_93");
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    EXPECT_EQ(soc(), "Ascend910B") << "aclInit(NULL) after a configured init returns to the default product";
}

}  // namespace
