// AvgPool2dBackward per product: the dtype x product matrix, the cubeMathType x product x dtype
// matrix of products.md, and atlas-200i-500-a2 rejecting the operator.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "avgpool2d_cases.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {
namespace {

using acltest::ident;

// products.md "Dtypes per product" for AvgPool2dBackward (written independently of the manifest).
bool dtypeSupported(const std::string &product, aclDataType dt) {
    if (product == "atlas-200i-500-a2") return false;
    if (dt == ACL_FLOAT || dt == ACL_FLOAT16) return true;
    if (dt == ACL_BF16) return product == "atlas-a2" || product == "atlas-a3";
    return false;
}

const std::vector<aclDataType> kAllDtypes{ACL_FLOAT, ACL_FLOAT16, ACL_BF16,  ACL_DOUBLE, ACL_INT32,
                                          ACL_INT8,  ACL_INT64,   ACL_UINT8, ACL_INT16,  ACL_BOOL};

class DtypeMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType>> {};

TEST_P(DtypeMatrix, SupportedPassUnsupportedRejectedNamingProduct) {
    const std::string product = std::get<0>(GetParam());
    const aclDataType dt = std::get<1>(GetParam());
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    const std::vector<int64_t> self{2, 3, 7, 7};
    Attrs a = A({3}, S({2}), {1}, true, false);
    a.cubeMathType = neutralCube(product, dt);
    const auto goDims = pooledDims(self, resolve(a));
    if (dtypeSupported(product, dt)) {
        const auto go = randomValues(static_cast<size_t>(numel(goDims)), dt, 17);
        const RunResult r = runBackward(dt, self, a, go);
        ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
        std::vector<double> ref, absSum;
        referenceBackward(self, a, go, roundingOf(cubeExpect(product, dt, a.cubeMathType)), ref, &absSum);
        EXPECT_TRUE(closeToReference(dt, r.out, ref, absSum));
        EXPECT_TRUE(r.outCanaryIntact) << r.canaryWhere;
        return;
    }
    // Unsupported: all three tensors carry dt.
    const aclFormat fmt = ACL_FORMAT_NCHW;
    Tensor go(dt, goDims, fmt), s(dt, self, fmt), gi(dt, self, fmt);
    ASSERT_NE(go.get(), nullptr);
    ASSERT_NE(s.get(), nullptr);
    ASSERT_NE(gi.get(), nullptr);
    IntArray k(a.kernel), st(a.stride), pd(a.padding);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st1 = aclnnAvgPool2dBackwardGetWorkspaceSize(go.get(), s.get(), k.a, st.a, pd.a, a.ceilMode,
                                                                   a.countIncludePad, a.divisorOverride,
                                                                   a.cubeMathType, gi.get(), &ws, &exec);
    EXPECT_EQ(st1, ACLNN_ERR_PARAM_INVALID);
    const std::string msg = recentErr();
    EXPECT_TRUE(messageContains(msg, {"aclnnAvgPool2dBackward"}));
    EXPECT_TRUE(messageContains(msg, {productNameSubstr(product)}));
    if (product != "atlas-200i-500-a2") {
        EXPECT_TRUE(messageContains(msg, {"gradOutput"}));
    }
    EXPECT_TRUE(gi.canaryIntact());
}

INSTANTIATE_TEST_SUITE_P(Products, DtypeMatrix,
                         ::testing::Combine(::testing::ValuesIn(allProducts()), ::testing::ValuesIn(kAllDtypes)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, aclDataType>> &info) {
                             return ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param));
                         });

// The operator is not available on atlas-200i-500-a2, whatever the arguments (valid, 3-D, empty).
TEST(ProductSupport, Atlas200iRejectsOperator) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-200i-500-a2"));
    for (const std::vector<int64_t> &self :
         {std::vector<int64_t>{2, 3, 6, 6}, std::vector<int64_t>{3, 6, 6}, std::vector<int64_t>{0, 3, 6, 6}}) {
        for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
            SCOPED_TRACE(dimsStr(self) + " " + dtName(dt));
            const Attrs a = A({2}, std::nullopt, {0});
            const auto goDims = pooledDims(self, resolve(a));
            const RunResult r = runBackward(dt, self, a, std::vector<double>(static_cast<size_t>(numel(goDims)), 1.0));
            EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
            EXPECT_TRUE(messageContains(r.message, {"Atlas 200I/500 A2"}));
            EXPECT_TRUE(messageContains(r.message, {"aclnnAvgPool2dBackward"}));
        }
    }
}

// The product profile is what the SoC name says, and switching it inside one process works.
TEST(ProductSupport, SocNamesAndRepeatInit) {
    for (const std::string &p : allProducts()) {
        ASSERT_NO_FATAL_FAILURE(Runtime::use(p));
        EXPECT_EQ(std::string(aclrtGetSocName()), socName(p));
        // A second aclInit without aclFinalize is refused and does not change the product.
        const std::string other = Runtime::writeConfig(p == "atlas-a2" ? "atlas-training" : "atlas-a2", 2);
        EXPECT_EQ(aclInit(other.c_str()), ACL_ERROR_REPEAT_INITIALIZE);
        EXPECT_EQ(std::string(aclrtGetSocName()), socName(p));
    }
}

// ------------------------------------------------------------------------------------------------
// cubeMathType x product x dtype (products.md table).
// ------------------------------------------------------------------------------------------------
class CubeMatrix : public ::testing::TestWithParam<std::tuple<std::string, aclDataType, int>> {};

TEST_P(CubeMatrix, AcceptedMatchRoundedReferenceRejectedAre161002) {
    const std::string product = std::get<0>(GetParam());
    const aclDataType dt = std::get<1>(GetParam());
    const int cube = std::get<2>(GetParam());
    ASSERT_NO_FATAL_FAILURE(Runtime::use(product));
    const std::vector<int64_t> self{2, 3, 7, 9};
    Attrs a = A({3}, S({2}), {1}, false, false);  // divisors 4, 6, 9: 1/6 and 1/9 are not representable
    a.cubeMathType = static_cast<int8_t>(cube);
    const auto goDims = pooledDims(self, resolve(a));
    const auto go = randomValues(static_cast<size_t>(numel(goDims)), dt, 23);
    const RunResult r = runBackward(dt, self, a, go);
    const bool dtOk = dtypeSupported(product, dt);
    const CubeExpect e = cubeExpect(product, dt, cube);
    if (!dtOk || e == CubeExpect::Reject) {
        EXPECT_EQ(r.phase1, ACLNN_ERR_PARAM_INVALID);
        if (dtOk) {
            EXPECT_TRUE(messageContains(r.message, {"cubeMathType"}));
        } else {
            EXPECT_TRUE(messageContains(r.message, {productNameSubstr(product)}));
        }
        return;
    }
    ASSERT_EQ(r.phase1, ACLNN_SUCCESS) << r.message;
    ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << r.message;
    std::vector<double> ref, absSum;
    referenceBackward(self, a, go, roundingOf(e), ref, &absSum);
    EXPECT_TRUE(closeToReference(dt, r.out, ref, absSum));
    if (dt == ACL_FLOAT && e != CubeExpect::Keep) {
        // The data discriminates: the unrounded reference would not pass.
        std::vector<double> plain, plainAbs;
        referenceBackward(self, a, go, CubeRound::None, plain, &plainAbs);
        EXPECT_FALSE(closeToReference(dt, plain, ref, absSum, 0));
        EXPECT_FALSE(closeToReference(dt, r.out, plain, plainAbs, 0)) << "result is not rounded";
    }
}

INSTANTIATE_TEST_SUITE_P(Products, CubeMatrix,
                         ::testing::Combine(::testing::Values("atlas-training", "atlas-inference", "atlas-a2",
                                                              "atlas-a3"),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16),
                                            ::testing::Values(-128, -1, 0, 1, 2, 3, 4, 127)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, aclDataType, int>> &info) {
                             const int c = std::get<2>(info.param);
                             return ident(std::get<0>(info.param)) + "_" + dtName(std::get<1>(info.param)) + "_cube" +
                                    (c < 0 ? "m" + std::to_string(-c) : std::to_string(c));
                         });

}  // namespace
}  // namespace apt
