// What other threads may do to an executor while one of its runs is in flight, through a fixture
// operator whose node waits at a gate the test opens (FixtureGate, tests/fixtures/plugins/fixture_add_one).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fixture_gate.h"
#include "fixture_add_one_test.hpp"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

// The gate's controls, exported by the fixture library the registry loaded.
struct Gate {
    void *lib = nullptr;
    void (*close)() = nullptr;
    void (*open)() = nullptr;
    int (*entered)() = nullptr;
    Gate() {
        const std::string path = std::string(ACLNN_CPU_TEST_FIXTURE_DIR) + "/fixture_add_one/libaclnn_fixture_add_one.so";
        lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (!lib) return;
        close = reinterpret_cast<void (*)()>(dlsym(lib, "fixture_gate_close"));
        open = reinterpret_cast<void (*)()>(dlsym(lib, "fixture_gate_open"));
        entered = reinterpret_cast<int (*)()>(dlsym(lib, "fixture_gate_entered"));
    }
    ~Gate() {
        if (open) open();
        if (lib) dlclose(lib);  // drops only this reference
    }
    bool ok() const { return close && open && entered; }
};

class RunInFlight : public coretest::FixtureAddOneTest {};

aclTensor *vec4(std::vector<float> &v) {
    const int64_t dims[1] = {4}, strides[1] = {1};
    return aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, v.data());
}

// aclSetInputTensorAddr on a repeatable executor that another thread is running waits for that run
// to end (a run reads the addresses when it starts): the run in flight uses the old address, the
// next one the new.
TEST_F(RunInFlight, AddressUpdateWaitsForTheRun) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
    std::vector<float> a(4, 1.0f), b(4, 10.0f), out(4, 0.0f);
    aclTensor *self = vec4(a), *o = vec4(out);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    ASSERT_EQ(aclnnFixtureGateGetWorkspaceSize(self, o, &ws, &exec), ACLNN_SUCCESS) << takeErr();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(exec), ACLNN_SUCCESS);
    std::vector<uint8_t> workspace(ws + 64);
    void *w = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
    Gate gate;
    ASSERT_TRUE(gate.ok()) << "the fixture library does not export its gate";

    gate.close();
    aclnnStatus run = -1;
    std::thread runner([&] { run = aclnnFixtureGate(w, ws, exec, nullptr); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (gate.entered() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    ASSERT_EQ(gate.entered(), 1) << "the run never reached its node";

    std::atomic<bool> updated{false};
    aclnnStatus set = -1;
    std::thread updater([&] {
        set = aclSetInputTensorAddr(exec, 0, self, b.data());
        updated = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(updated.load()) << "the address changed under a run in flight";
    gate.open();
    runner.join();
    updater.join();
    EXPECT_EQ(run, ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(set, ACLNN_SUCCESS);
    EXPECT_EQ(out, std::vector<float>(4, 2.0f)) << "the run in flight read the old address";
    ASSERT_EQ(aclnnFixtureGate(w, ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(out, std::vector<float>(4, 11.0f)) << "the next run reads the new one";
    EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);
    aclDestroyTensor(self);
    aclDestroyTensor(o);
}

}  // namespace
