// The manifest's conditional-argument keys, through a fixture operator (FixtureMaskedAddOne):
//  - `required_if: outputMask[i]`: an output the mask does not select may be NULL, is not checked
//    (even a wrong dtype passes) and is never written; a selected one that is NULL is 161001.
//  - `noop_if_null: [outputMask]`: a NULL mask is success with workspace 0 and nothing written.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fixture_masked_add_one.h"
#include "call_fuzzer.hpp"
#include "fixture_add_one_test.hpp"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

aclTensor *dense(int64_t n, void *data, aclDataType dt = ACL_FLOAT) {
    const int64_t dims[1] = {n}, strides[1] = {1};
    return aclCreateTensor(dims, 1, dt, strides, 0, ACL_FORMAT_ND, dims, 1, data);
}

class ConditionalArgs : public coretest::FixtureAddOneTest {
protected:
    void SetUp() override {
        coretest::FixtureAddOneTest::SetUp();
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << takeErr();
        self_ = dense(4, in_.data());
        first_ = dense(4, a_.data());
        second_ = dense(4, b_.data());
    }
    void TearDown() override {
        for (aclTensor *t : {self_, first_, second_}) aclDestroyTensor(t);
        coretest::FixtureAddOneTest::TearDown();
    }
    // Both phases with mask `m` (nullptr: a NULL mask); returns the first failing status.
    aclnnStatus run(const std::vector<bool> *m, aclTensor *first, aclTensor *second, uint64_t *wsOut = nullptr) {
        aclBoolArray *mask = nullptr;
        bool flags[4] = {};
        if (m) {
            for (size_t i = 0; i < m->size(); ++i) flags[i] = (*m)[i];
            mask = aclCreateBoolArray(flags, m->size());
        }
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        aclnnStatus st = aclnnFixtureMaskedAddOneGetWorkspaceSize(self_, mask, first, second, &ws, &exec);
        if (mask) aclDestroyBoolArray(mask);
        if (wsOut) *wsOut = ws;
        if (st != ACLNN_SUCCESS) return st;
        std::vector<uint8_t> workspace(ws);
        return aclnnFixtureMaskedAddOne(ws ? workspace.data() : nullptr, ws, exec, nullptr);
    }
    std::vector<float> in_ = {1, 2, 3, 4}, a_ = std::vector<float>(4, -7.0f), b_ = std::vector<float>(4, -7.0f);
    const std::vector<float> untouched_ = std::vector<float>(4, -7.0f), plusOne_ = {2, 3, 4, 5};
    aclTensor *self_ = nullptr, *first_ = nullptr, *second_ = nullptr;
};

TEST_F(ConditionalArgs, EveryMaskWritesExactlyTheSelectedOutputs) {
    for (int bits = 0; bits < 4; ++bits) {
        a_.assign(4, -7.0f);
        b_.assign(4, -7.0f);
        const std::vector<bool> m = {(bits & 1) != 0, (bits & 2) != 0};
        ASSERT_EQ(run(&m, first_, second_), ACLNN_SUCCESS) << "mask " << bits << ": " << takeErr();
        EXPECT_EQ(a_, m[0] ? plusOne_ : untouched_) << "mask " << bits;
        EXPECT_EQ(b_, m[1] ? plusOne_ : untouched_) << "mask " << bits;
    }
}

TEST_F(ConditionalArgs, UnselectedOutputMayBeNull) {
    const std::vector<bool> m = {true, false};
    ASSERT_EQ(run(&m, first_, nullptr), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(a_, plusOne_);
}

TEST_F(ConditionalArgs, SelectedNullOutputIs161001NamingTheMask) {
    const std::vector<bool> m = {false, true};
    EXPECT_EQ(run(&m, first_, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("second must not be NULL when outputMask[1] is true"), std::string::npos) << msg;
    EXPECT_EQ(a_, untouched_) << "nothing written on a rejected call";
}

TEST_F(ConditionalArgs, UnselectedOutputIsNotChecked) {
    std::vector<uint16_t> half(4, 0x1234);
    aclTensor *wrong = dense(4, half.data(), ACL_FLOAT16);  // FLOAT16 is not declared
    const std::vector<bool> off = {true, false}, on = {true, true};
    EXPECT_EQ(run(&off, first_, wrong), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(half, std::vector<uint16_t>(4, 0x1234));
    EXPECT_EQ(run(&on, first_, wrong), ACLNN_ERR_PARAM_INVALID) << "selected: its dtype is checked";
    EXPECT_NE(takeErr().find("second dtype FLOAT16"), std::string::npos);
    aclDestroyTensor(wrong);
}

TEST_F(ConditionalArgs, NullMaskIsASuccessfulNoOp) {
    uint64_t ws = 123;
    EXPECT_EQ(run(nullptr, nullptr, nullptr, &ws), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(run(nullptr, first_, second_, &ws), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(a_, untouched_);
    EXPECT_EQ(b_, untouched_);
}

TEST_F(ConditionalArgs, MaskLengthIsCheckedAmongTheNullChecks) {
    const std::vector<bool> m = {true};
    EXPECT_EQ(run(&m, first_, second_), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("outputMask must have 2 elements, got 1"), std::string::npos);
}

// The argument fuzzer (tests/support/call_fuzzer.hpp) on a third-party operator: the core's generic
// checks alone (manifest dtypes, formats, required_if, noop_if_null, early_checks) keep every promise.
TEST_F(ConditionalArgs, ArgumentFuzzingKeepsThePromises) {
    using namespace acltest::fuzz;
    const Call seed{"FixtureMaskedAddOne",
                    {tensor("self", ACL_FLOAT, {2, 3}, ACL_FORMAT_ND), boolArray("outputMask", {true, true}),
                     output("first", ACL_FLOAT, {2, 3}, ACL_FORMAT_ND), output("second", ACL_FLOAT, {2, 3}, ACL_FORMAT_ND)}};
    fuzz(seed, 0xadd1, 2000, nullptr);
}

}  // namespace
