// Per product (products.md, written independently of the manifest): MaxUnpool2dBackward runs on
// A3, A2 and training with FLOAT, FLOAT16, INT8, UINT8, INT16, INT32, INT64, BOOL and INT32/INT64
// indices; not on inference nor 200I/500 A2 (161002 naming the product). The forward companion
// MaxUnpool2d follows Huawei's page: A2 and A3 only, DOUBLE instead of BOOL.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "unpool_test_util.hpp"

namespace upt {
namespace {

bool backwardOnProduct(const std::string &p) { return p == "atlas-a2" || p == "atlas-a3" || p == "atlas-training"; }
bool forwardOnProduct(const std::string &p) { return p == "atlas-a2" || p == "atlas-a3"; }
bool contains(const std::vector<aclDataType> &v, aclDataType dt) { return std::find(v.begin(), v.end(), dt) != v.end(); }

const std::vector<aclDataType> kAllDtypes{ACL_FLOAT, ACL_FLOAT16, ACL_BF16,  ACL_DOUBLE, ACL_INT32, ACL_INT8,
                                          ACL_INT64, ACL_UINT8,   ACL_INT16, ACL_BOOL,   ACL_UINT16};

class BackwardMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType>> {};

TEST_P(BackwardMatrix, SupportedBitExactUnsupportedRejectedNamingProduct) {
    const auto [product, dt] = GetParam();
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    BackwardCase c;
    c.dt = c.outDt = dt;
    c.selfDims = {2, 3, 5, 6};
    c.oH = 10;
    c.oW = 12;
    const Bits go = randomBits(static_cast<size_t>(numel(c.goDims())), dt, 101);
    const auto idx = randomIndices(c.planes(), c.plane(), c.oH * c.oW, 102);
    const RunResult r = runBackward(c, go, idx);
    if (backwardOnProduct(product) && contains(backwardDtypes(), dt)) {
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        Bits want;
        ASSERT_FALSE(referenceBackward(c, go, idx, want));
        EXPECT_TRUE(sameBits(r.out, want));
        EXPECT_TRUE(r.outCanaryIntact);
        return;
    }
    EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(messageContains(r.message, {"aclnnMaxUnpool2dBackward", productNameSubstr(product)}));
    if (backwardOnProduct(product)) {
        EXPECT_TRUE(messageContains(r.message, {"gradOutput dtype", dtName(dt)}));
    }
    EXPECT_TRUE(r.outCanaryIntact);
}

INSTANTIATE_TEST_SUITE_P(Products, BackwardMatrix,
                         ::testing::Combine(::testing::ValuesIn(allProducts()), ::testing::ValuesIn(kAllDtypes)),
                         [](const auto &info) {
                             return ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param));
                         });

class IndicesMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType>> {};

TEST_P(IndicesMatrix, OnlyInt32AndInt64) {
    const auto [product, idxDt] = GetParam();
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    BackwardCase c;
    c.idxDt = idxDt;
    const RunResult r = runBackward(c, randomBits(static_cast<size_t>(numel(c.goDims())), c.dt, 103),
                                    std::vector<int64_t>(static_cast<size_t>(numel(c.selfDims)), 1));
    if (idxDt == ACL_INT32 || idxDt == ACL_INT64) {
        EXPECT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        EXPECT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    } else {
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
        EXPECT_TRUE(messageContains(r.message, {"indices dtype", productNameSubstr(product)}));
    }
}

INSTANTIATE_TEST_SUITE_P(Products, IndicesMatrix,
                         ::testing::Combine(::testing::Values("atlas-training", "atlas-a2", "atlas-a3"),
                                            ::testing::Values(ACL_INT32, ACL_INT64, ACL_INT8, ACL_INT16, ACL_UINT8, ACL_FLOAT,
                                                              ACL_BOOL)),
                         [](const auto &info) {
                             return ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param));
                         });

class ForwardMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType>> {};

TEST_P(ForwardMatrix, SupportedRunsUnsupportedRejectedNamingProduct) {
    const auto [product, dt] = GetParam();
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    const std::vector<int64_t> selfDims{2, 3, 2, 3}, outDims{2, 3, 4, 6};
    Tensor self(dt, selfDims), idx(ACL_INT64, selfDims), out(dt, outDims);
    const Bits x = randomBits(36, dt, 104);
    self.setBits(x);
    const auto ix = uniqueIndices(6, 6, 24, 105);
    idx.setInts(ix);
    out.fillViewBytes(0x5A);
    IntArray os(std::vector<int64_t>{4, 6});
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st = aclnnMaxUnpool2dGetWorkspaceSize(self.get(), idx.get(), os.a, out.get(), &ws, &exec);
    if (forwardOnProduct(product) && contains(forwardDtypes(), dt)) {
        ASSERT_EQ(st, ACLNN_SUCCESS) << recentErr();
        Workspace w;
        ASSERT_EQ(aclnnMaxUnpool2d(w.ptr(ws), ws, exec, Runtime::stream()), ACLNN_SUCCESS) << recentErr();
        Bits want;
        ASSERT_FALSE(unpoolref::scatter(x, ix, 6, 6, 24, want));
        EXPECT_TRUE(sameBits(out.bits(), want));
        return;
    }
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(messageContains(recentErr(), {"aclnnMaxUnpool2d", productNameSubstr(product)}));
    EXPECT_TRUE(out.canaryIntact());
}

INSTANTIATE_TEST_SUITE_P(Products, ForwardMatrix,
                         ::testing::Combine(::testing::ValuesIn(allProducts()), ::testing::ValuesIn(kAllDtypes)),
                         [](const auto &info) {
                             return ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace upt
