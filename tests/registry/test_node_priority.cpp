// The scheduling hint of plugin ABI 1.1 (acp_host_api::set_node_priority), through a fixture
// operator (FixtureNodeOrder) run on one thread: among the nodes ready at once, higher priorities
// start first, a node waiting for another lends it its priority, and the hint names an existing node.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_fixture_node_order.h"
#include "fixture_add_one_test.hpp"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

class NodePriority : public coretest::FixtureAddOneTest {
protected:
    // The start order FixtureNodeOrder's nodes record, by slot (low, high, middle, feeds_top, top).
    std::vector<float> run() {
        std::vector<float> out(5, 0.0f);
        const int64_t dims[1] = {5}, strides[1] = {1};
        aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, out.data());
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        EXPECT_EQ(aclnnFixtureNodeOrderGetWorkspaceSize(t, &ws, &exec), ACLNN_SUCCESS) << takeErr();
        if (exec) {
            EXPECT_EQ(aclnnFixtureNodeOrder(nullptr, ws, exec, nullptr), ACLNN_SUCCESS) << takeErr();
        }
        aclDestroyTensor(t);
        return out;
    }
};

TEST_F(NodePriority, OneThreadStartsTheHighestFirst) {
    const std::string config = coretest::writeTempFile("priority_t1", "product: atlas-a2\nthreads: 1\n");
    ASSERT_EQ(aclInit(config.c_str()), ACL_SUCCESS) << takeErr();
    // feeds_top (0, but top = 3 waits for it), top, high (2), middle (1), low (0)
    const std::vector<float> want = {5, 3, 4, 1, 2};
    EXPECT_EQ(run(), want);
    EXPECT_EQ(run(), want) << "a second run of a new executor";
}

TEST_F(NodePriority, EveryNodeRunsOnMoreThreads) {
    const std::string config = coretest::writeTempFile("priority_t3", "product: atlas-a2\nthreads: 3\n");
    ASSERT_EQ(aclInit(config.c_str()), ACL_SUCCESS) << takeErr();
    std::vector<float> got = run();
    EXPECT_GT(got[4], got[3]) << "top started before the node it waits for";
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5}));
}

}  // namespace
