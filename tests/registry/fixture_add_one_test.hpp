// The fixture plugin fixture_add_one (tests/fixtures/plugins/) alone on the plugin path, for the
// core_plugin_test suites that call its operators. ACLNN_CPU_TEST_FIXTURE_DIR: tests/CMakeLists.txt.
#ifndef ACLNN_CPU_TESTS_REGISTRY_FIXTURE_ADD_ONE_TEST_HPP_
#define ACLNN_CPU_TESTS_REGISTRY_FIXTURE_ADD_ONE_TEST_HPP_

#include <memory>
#include <string>

#include "test_util.hpp"

namespace coretest {

class FixtureAddOneTest : public RuntimeTest {
protected:
    void SetUp() override {
        RuntimeTest::SetUp();
        env_ = std::make_unique<EnvGuard>("ACLNN_CPU_PLUGIN_PATH",
                                          std::string(ACLNN_CPU_TEST_FIXTURE_DIR) + "/fixture_add_one:" + uniqueMissingDir());
    }
    std::unique_ptr<EnvGuard> env_;
};

}  // namespace coretest

#endif  // ACLNN_CPU_TESTS_REGISTRY_FIXTURE_ADD_ONE_TEST_HPP_
