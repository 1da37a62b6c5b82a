// The object API of aclnn/acl_meta.h: tensor creation (every bad argument returns NULL), getters
// (round trip, arrays handed out with new[], NULL arguments -> 161001), arrays, scalars, lists, and
// the raw tensor address.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_cpu/dtype.hpp"
#include "enum_shims.h"
#include "test_util.hpp"

namespace {

using coretest::takeErr;

class TensorApiTest : public ::testing::Test {
protected:
    void SetUp() override { (void)aclGetRecentErrMsg(); }
};

// Everything the getters say about a tensor, to compare whole descriptions at once.
struct Description {
    std::vector<int64_t> view, strides, storage;
    int64_t offset = -1;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    void *data = nullptr;
    bool operator==(const Description &) const = default;
};

void PrintTo(const Description &d, std::ostream *os) {
    const auto list = [os](const char *name, const std::vector<int64_t> &v) {
        *os << name << " [";
        for (size_t i = 0; i < v.size(); ++i) *os << (i ? "," : "") << v[i];
        *os << "] ";
    };
    list("view", d.view);
    list("strides", d.strides);
    list("storage", d.storage);
    *os << "offset " << d.offset << " dtype " << d.dtype << " format " << d.format << " data " << d.data;
}

Description describe(const aclTensor *t) {
    Description d;
    const auto take = [](aclnnStatus st, int64_t *v, uint64_t n) {
        EXPECT_EQ(st, ACLNN_SUCCESS);
        std::vector<int64_t> out(v, v + n);
        delete[] v;
        return out;
    };
    int64_t *v = nullptr;
    uint64_t n = 0;
    aclnnStatus st = aclGetViewShape(t, &v, &n);
    d.view = take(st, v, n);
    st = aclGetViewStrides(t, &v, &n);
    d.strides = take(st, v, n);
    st = aclGetStorageShape(t, &v, &n);
    d.storage = take(st, v, n);
    EXPECT_EQ(aclGetViewOffset(t, &d.offset), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetDataType(t, &d.dtype), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetFormat(t, &d.format), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetRawTensorAddr(t, &d.data), ACLNN_SUCCESS);
    return d;
}

// ---- aclCreateTensor: bad arguments ----

struct BadTensor {
    const char *what;
    std::vector<int64_t> dims;
    uint64_t dims_num;  // may differ from dims.size() (NULL dims with n > 0)
    bool null_dims;
    int dtype;  // an int: out-of-range aclDataType values go through the C shim
    std::vector<int64_t> strides;
    int64_t offset;
    std::vector<int64_t> storage;
};

void PrintTo(const BadTensor &b, std::ostream *os) { *os << b.what; }

class BadTensorTest : public TensorApiTest, public ::testing::WithParamInterface<BadTensor> {};

TEST_P(BadTensorTest, ReturnsNullWithAMessage) {
    const BadTensor &b = GetParam();
    float storage[64] = {};
    aclTensor *t = shim_aclCreateTensor(b.null_dims ? nullptr : b.dims.data(), b.dims_num, b.dtype,
                                        b.strides.empty() ? nullptr : b.strides.data(),
                                        b.offset, ACL_FORMAT_ND, b.storage.data(), b.storage.size(), storage);
    EXPECT_EQ(t, nullptr) << b.what;
    if (t) aclDestroyTensor(t);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclCreateTensor"), std::string::npos) << b.what << ": message '" << msg << "'";
}

// aclInitTensor runs the same checks; a rejected re-description leaves the tensor as it was.
TEST_P(BadTensorTest, InitTensorRejectsAndLeavesTheTensorAsItWas) {
    const BadTensor &b = GetParam();
    float storage[64] = {}, old_data[6] = {};
    const int64_t dims[2] = {2, 3}, strides[2] = {3, 1}, storage_dims[1] = {6};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_INT32, strides, 0, ACL_FORMAT_NCHW, storage_dims, 1, old_data);
    ASSERT_NE(t, nullptr) << takeErr();
    EXPECT_EQ(shim_aclInitTensor(t, b.null_dims ? nullptr : b.dims.data(), b.dims_num, b.dtype,
                                 b.strides.empty() ? nullptr : b.strides.data(), b.offset, ACL_FORMAT_ND,
                                 b.storage.data(), b.storage.size(), storage),
              ACLNN_ERR_PARAM_INVALID)
        << b.what;
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclInitTensor"), std::string::npos) << b.what << ": message '" << msg << "'";
    EXPECT_EQ(describe(t), (Description{{2, 3}, {3, 1}, {6}, 0, ACL_INT32, ACL_FORMAT_NCHW, old_data}));
    aclDestroyTensor(t);
}

const std::vector<int64_t> k9(9, 1);

INSTANTIATE_TEST_SUITE_P(
    Table, BadTensorTest,
    ::testing::Values(
        BadTensor{"negative_dim", {2, -1}, 2, false, ACL_FLOAT, {1, 1}, 0, {4}},
        BadTensor{"negative_first_dim", {-3, 2}, 2, false, ACL_FLOAT, {2, 1}, 0, {6}},
        BadTensor{"negative_stride", {2, 3}, 2, false, ACL_FLOAT, {3, -1}, 2, {6}},
        BadTensor{"negative_offset", {2, 3}, 2, false, ACL_FLOAT, {3, 1}, -1, {6}},
        BadTensor{"view_exceeds_storage_by_offset", {2, 3}, 2, false, ACL_FLOAT, {3, 1}, 1, {6}},
        BadTensor{"view_exceeds_storage_by_stride", {2, 3}, 2, false, ACL_FLOAT, {4, 1}, 0, {6}},
        BadTensor{"storage_smaller_than_view", {4, 4}, 2, false, ACL_FLOAT, {4, 1}, 0, {3, 5}},
        BadTensor{"negative_storage_dim", {2}, 1, false, ACL_FLOAT, {1}, 0, {-2}},
        BadTensor{"rank_9", k9, 9, false, ACL_FLOAT, k9, 0, {1}},
        BadTensor{"null_dims_with_rank_2", {}, 2, true, ACL_FLOAT, {1, 1}, 0, {1}},
        BadTensor{"dtype_undefined", {2}, 1, false, ACL_DT_UNDEFINED, {1}, 0, {2}},
        BadTensor{"dtype_99", {2}, 1, false, 99, {1}, 0, {2}},
        BadTensor{"dtype_gap_5", {2}, 1, false, 5, {1}, 0, {2}},
        BadTensor{"dtype_negative_7", {2}, 1, false, -7, {1}, 0, {2}},
        // int64 overflow must not let a view escape its storage (testing.md R5: int64 index math throughout)
        BadTensor{"element_count_overflows_int64", {1LL << 32, 1LL << 32}, 2, false, ACL_FLOAT, {1LL << 32, 1}, 0, {16}},
        BadTensor{"view_extent_overflows_int64", {2, 2}, 2, false, ACL_FLOAT, {1LL << 62, 1LL << 62}, 0, {4}},
        BadTensor{"offset_plus_extent_overflows_int64", {2}, 1, false, ACL_FLOAT, {1}, INT64_MAX, {4}},
        // an empty view whose contiguous strides (stride NULL) overflow, though its count is 0
        BadTensor{"contiguous_strides_overflow_int64", {0, 1LL << 40, 1LL << 40, 1LL << 40}, 4, false, ACL_FLOAT, {}, 0, {}},
        // element offsets that fit in int64 but whose bytes do not: phase 2 forms (offset + i) * size
        BadTensor{"empty_view_offset_bytes_overflow_int64", {0, 2}, 2, false, ACL_FLOAT, {2, 1}, INT64_MAX - 1, {4}},
        BadTensor{"storage_bytes_overflow_int64", {2}, 1, false, ACL_FLOAT, {1}, (1LL << 62) - 8, {1LL << 62}}),
    [](const ::testing::TestParamInfo<BadTensor> &i) { return std::string(i.param.what); });

// Out of host memory is NULL with a message, never an exception through the C API: a size beyond
// what a vector can hold fails before any value is read.
TEST_F(TensorApiTest, ArrayCreationOutOfMemoryIsNullWithAMessage) {
    const bool b[1] = {true};
    EXPECT_EQ(aclCreateBoolArray(b, UINT64_MAX), nullptr);  // (beyond max_size(): no allocation is tried)
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("aclCreateBoolArray: out of host memory for 18446744073709551615 elements"), std::string::npos) << msg;
}

// Each failure is one line, whatever it quotes.
TEST_F(TensorApiTest, ScalarOfAnUnknownDtypeNamesTheValueGiven) {
    float v = 1.0f;
    EXPECT_EQ(aclCreateScalar(&v, static_cast<aclDataType>(99)), nullptr);
    const std::string msg = takeErr();
    EXPECT_NE(msg.find("unsupported dataType 99"), std::string::npos) << msg;
}

TEST_F(TensorApiTest, StorageRankAbove8IsRejected) {
    const int64_t dims[1] = {1}, strides[1] = {1};
    const std::vector<int64_t> storage(9, 1);
    float data[1] = {};
    EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage.data(), 9, data), nullptr);
    EXPECT_FALSE(takeErr().empty());
}

// ---- aclCreateTensor: valid corner cases ----

TEST_F(TensorApiTest, ViewExactlyFillingStorageIsValid) {
    const int64_t dims[2] = {2, 3}, strides[2] = {3, 1}, storage[1] = {7};
    float data[7] = {};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, storage, 1, data);  // last = 6
    ASSERT_NE(t, nullptr) << takeErr();
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST_F(TensorApiTest, Rank8IsValid) {
    const std::vector<int64_t> dims(8, 2);
    std::vector<int64_t> strides(8);
    int64_t s = 1;
    for (int d = 7; d >= 0; --d) strides[d] = s, s *= 2;
    const int64_t storage[1] = {256};
    std::vector<float> data(256);
    aclTensor *t = aclCreateTensor(dims.data(), 8, ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, storage, 1, data.data());
    ASSERT_NE(t, nullptr) << takeErr();
    aclDestroyTensor(t);
}

TEST_F(TensorApiTest, BroadcastAndTransposedViewsAreValid) {
    const int64_t dims[2] = {4, 3}, bcast[2] = {0, 1}, storage[1] = {3};
    float data[12] = {};
    aclTensor *b = aclCreateTensor(dims, 2, ACL_FLOAT, bcast, 0, ACL_FORMAT_ND, storage, 1, data);
    ASSERT_NE(b, nullptr) << "stride 0 (broadcast) views are valid: " << takeErr();
    aclDestroyTensor(b);
    const int64_t tr[2] = {1, 4}, storage12[2] = {3, 4};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, tr, 0, ACL_FORMAT_ND, storage12, 2, data);
    ASSERT_NE(t, nullptr) << "transposed view: " << takeErr();
    aclDestroyTensor(t);
}

TEST_F(TensorApiTest, EmptyAndScalarTensorsAreValid) {
    const int64_t dims[3] = {2, 0, 3}, strides[3] = {3, 3, 1}, storage[1] = {0};
    aclTensor *e = aclCreateTensor(dims, 3, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
    ASSERT_NE(e, nullptr) << "an empty tensor needs no storage: " << takeErr();
    aclDestroyTensor(e);
    float x = 3.0f;
    const int64_t one[1] = {1};
    aclTensor *s = aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, one, 1, &x);
    ASSERT_NE(s, nullptr) << "a rank-0 tensor: " << takeErr();
    uint64_t n = 99;
    int64_t *d = nullptr;
    ASSERT_EQ(aclGetViewShape(s, &d, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 0u);
    delete[] d;
    aclDestroyTensor(s);
}

TEST_F(TensorApiTest, NullDataIsAllowedAtCreation) {
    const int64_t dims[2] = {2, 2}, strides[2] = {2, 1}, storage[1] = {4};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
    ASSERT_NE(t, nullptr) << takeErr();
    void *addr = reinterpret_cast<void *>(1);
    ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, nullptr);
    aclDestroyTensor(t);
}

TEST_F(TensorApiTest, EveryDocumentedDtypeWithASizeIsAccepted) {
    const aclDataType types[] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT8,  ACL_INT32,  ACL_UINT8, ACL_INT16,
                                 ACL_UINT16, ACL_UINT32, ACL_INT64, ACL_UINT64, ACL_DOUBLE, ACL_BOOL,
                                 ACL_COMPLEX64, ACL_COMPLEX128, ACL_BF16, ACL_COMPLEX32};
    const int64_t dims[1] = {4}, strides[1] = {1}, storage[1] = {4};
    alignas(16) uint8_t data[64] = {};
    for (aclDataType dt : types) {
        aclTensor *t = aclCreateTensor(dims, 1, dt, strides, 0, ACL_FORMAT_ND, storage, 1, data);
        ASSERT_NE(t, nullptr) << "dtype " << dt << ": " << takeErr();
        aclDataType got = ACL_DT_UNDEFINED;
        ASSERT_EQ(aclGetDataType(t, &got), ACLNN_SUCCESS);
        EXPECT_EQ(got, dt);
        aclDestroyTensor(t);
    }
}

TEST_F(TensorApiTest, EveryDocumentedFormatRoundTrips) {
    const aclFormat formats[] = {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC,       ACL_FORMAT_ND,    ACL_FORMAT_NC1HWC0,
                                 ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_NC1HWC0_C04, ACL_FORMAT_HWCN, ACL_FORMAT_NDHWC,
                                 ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NCDHW, ACL_FORMAT_NDC1HWC0, ACL_FRACTAL_Z_3D,
                                 ACL_FORMAT_NC,   ACL_FORMAT_NCL};
    const int64_t dims[1] = {4}, strides[1] = {1}, storage[1] = {4};
    float data[4] = {};
    for (aclFormat f : formats) {
        aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, f, storage, 1, data);
        ASSERT_NE(t, nullptr) << "format " << f << ": " << takeErr();
        aclFormat got = ACL_FORMAT_UNDEFINED;
        ASSERT_EQ(aclGetFormat(t, &got), ACLNN_SUCCESS);
        EXPECT_EQ(got, f);
        aclDestroyTensor(t);
    }
}

// ---- getters ----

TEST_F(TensorApiTest, GettersRoundTrip) {
    const int64_t dims[3] = {2, 3, 4};
    const int64_t strides[3] = {1, 2, 6};  // a transposed view
    const int64_t storage[2] = {5, 6};     // 30 elements; last element 5 + 1 + 4 + 18 = 28
    uint16_t data[30] = {};
    aclTensor *t = aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 5, ACL_FORMAT_NCL, storage, 2, data);
    ASSERT_NE(t, nullptr) << takeErr();

    int64_t *v = nullptr;
    uint64_t n = 0;
    ASSERT_EQ(aclGetViewShape(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>({2, 3, 4}));
    delete[] v;  // handed out with new[]

    ASSERT_EQ(aclGetStorageShape(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>({5, 6}));
    delete[] v;

    ASSERT_EQ(aclGetViewStrides(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>({1, 2, 6}));
    delete[] v;

    int64_t offset = -1;
    ASSERT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
    EXPECT_EQ(offset, 5);
    aclFormat f = ACL_FORMAT_UNDEFINED;
    ASSERT_EQ(aclGetFormat(t, &f), ACLNN_SUCCESS);
    EXPECT_EQ(f, ACL_FORMAT_NCL);
    aclDataType dt = ACL_DT_UNDEFINED;
    ASSERT_EQ(aclGetDataType(t, &dt), ACLNN_SUCCESS);
    EXPECT_EQ(dt, ACL_FLOAT16);
    void *addr = nullptr;
    ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(data));
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST_F(TensorApiTest, GettersReturnIndependentCopies) {
    const int64_t dims[2] = {2, 3}, strides[2] = {3, 1}, storage[1] = {6};
    float data[6] = {};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data);
    ASSERT_NE(t, nullptr);
    int64_t *a = nullptr, *b = nullptr;
    uint64_t n = 0;
    ASSERT_EQ(aclGetViewShape(t, &a, &n), ACLNN_SUCCESS);
    a[0] = 77;  // the caller owns the array
    ASSERT_EQ(aclGetViewShape(t, &b, &n), ACLNN_SUCCESS);
    EXPECT_NE(a, b);
    EXPECT_EQ(b[0], 2);
    delete[] a;
    delete[] b;
    aclDestroyTensor(t);
}

TEST_F(TensorApiTest, CreationCopiesTheCallersArrays) {
    int64_t dims[2] = {2, 3}, strides[2] = {3, 1}, storage[1] = {6};
    float data[6] = {};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data);
    ASSERT_NE(t, nullptr);
    dims[0] = 100;
    strides[0] = 100;
    storage[0] = 100;
    int64_t *v = nullptr;
    uint64_t n = 0;
    ASSERT_EQ(aclGetViewShape(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(v[0], 2);
    delete[] v;
    ASSERT_EQ(aclGetViewStrides(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(v[0], 3);
    delete[] v;
    ASSERT_EQ(aclGetStorageShape(t, &v, &n), ACLNN_SUCCESS);
    EXPECT_EQ(v[0], 6);
    delete[] v;
    aclDestroyTensor(t);
}

TEST_F(TensorApiTest, InitTensorRedescribesATensor) {
    float a[6] = {};
    int16_t b[40] = {};
    const int64_t dims[2] = {2, 3};
    aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, a);
    ASSERT_NE(t, nullptr) << takeErr();
    // A transposed 4x5 view at offset 3 into 40 FLOAT16 elements.
    const int64_t dims2[2] = {4, 5}, strides2[2] = {1, 7}, storage2[2] = {5, 8};
    ASSERT_EQ(aclInitTensor(t, dims2, 2, ACL_FLOAT16, strides2, 3, ACL_FORMAT_NCHW, storage2, 2, b), ACLNN_SUCCESS)
        << takeErr();
    EXPECT_EQ(describe(t), (Description{{4, 5}, {1, 7}, {5, 8}, 3, ACL_FLOAT16, ACL_FORMAT_NCHW, b}));
    // NULL strides and storage: contiguous, storage exactly the view (as at creation).
    const int64_t dims3[3] = {2, 3, 4};
    ASSERT_EQ(aclInitTensor(t, dims3, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, a), ACLNN_SUCCESS) << takeErr();
    EXPECT_EQ(describe(t), (Description{{2, 3, 4}, {12, 4, 1}, {2, 3, 4}, 0, ACL_FLOAT, ACL_FORMAT_ND, a}));
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
    EXPECT_EQ(aclInitTensor(nullptr, dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, a), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("aclInitTensor: tensor must not be NULL"), std::string::npos);
}

// Every getter, each NULL argument in turn: 161001 and a message naming the function.
TEST_F(TensorApiTest, EveryGetterWithNullIs161001) {
    const int64_t dims[1] = {2}, strides[1] = {1}, storage[1] = {2};
    float data[2] = {};
    aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data);
    ASSERT_NE(t, nullptr);
    int64_t *arr = nullptr;
    uint64_t n = 0;
    int64_t off = 0;
    aclFormat f;
    aclDataType dt;
    void *addr = nullptr;
    const aclIntArray *ia = aclCreateIntArray(dims, 1);
    const float fv[1] = {1.0f};
    const aclFloatArray *fa = aclCreateFloatArray(fv, 1);
    const bool bv[1] = {true};
    const aclBoolArray *ba = aclCreateBoolArray(bv, 1);
    const aclTensor *tl_items[1] = {aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data)};
    const aclTensorList *tl = aclCreateTensorList(tl_items, 1);
    ASSERT_TRUE(ia && fa && ba && tl);

    struct Row {
        const char *fn;
        aclnnStatus st;
    };
    const Row rows[] = {
        {"aclGetViewShape", aclGetViewShape(nullptr, &arr, &n)},
        {"aclGetViewShape", aclGetViewShape(t, nullptr, &n)},
        {"aclGetViewShape", aclGetViewShape(t, &arr, nullptr)},
        {"aclGetStorageShape", aclGetStorageShape(nullptr, &arr, &n)},
        {"aclGetStorageShape", aclGetStorageShape(t, nullptr, &n)},
        {"aclGetStorageShape", aclGetStorageShape(t, &arr, nullptr)},
        {"aclGetViewStrides", aclGetViewStrides(nullptr, &arr, &n)},
        {"aclGetViewStrides", aclGetViewStrides(t, nullptr, &n)},
        {"aclGetViewStrides", aclGetViewStrides(t, &arr, nullptr)},
        {"aclGetViewOffset", aclGetViewOffset(nullptr, &off)},
        {"aclGetViewOffset", aclGetViewOffset(t, nullptr)},
        {"aclGetFormat", aclGetFormat(nullptr, &f)},
        {"aclGetFormat", aclGetFormat(t, nullptr)},
        {"aclGetDataType", aclGetDataType(nullptr, &dt)},
        {"aclGetDataType", aclGetDataType(t, nullptr)},
        {"aclGetIntArraySize", aclGetIntArraySize(nullptr, &n)},
        {"aclGetIntArraySize", aclGetIntArraySize(ia, nullptr)},
        {"aclGetFloatArraySize", aclGetFloatArraySize(nullptr, &n)},
        {"aclGetFloatArraySize", aclGetFloatArraySize(fa, nullptr)},
        {"aclGetBoolArraySize", aclGetBoolArraySize(nullptr, &n)},
        {"aclGetBoolArraySize", aclGetBoolArraySize(ba, nullptr)},
        {"aclGetTensorListSize", aclGetTensorListSize(nullptr, &n)},
        {"aclGetTensorListSize", aclGetTensorListSize(tl, nullptr)},
        {"aclGetRawTensorAddr", aclGetRawTensorAddr(nullptr, &addr)},
        {"aclGetRawTensorAddr", aclGetRawTensorAddr(t, nullptr)},
        {"aclSetRawTensorAddr", aclSetRawTensorAddr(nullptr, data)},
    };
    // Each row evaluated its call above, in order; only the last message survives, so check codes here
    // and messages with one call at a time below.
    for (const Row &r : rows) EXPECT_EQ(r.st, ACLNN_ERR_PARAM_NULLPTR) << r.fn;
    (void)aclGetRecentErrMsg();
    EXPECT_EQ(aclGetViewShape(nullptr, &arr, &n), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("aclGetViewShape"), std::string::npos);
    EXPECT_EQ(aclGetDataType(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("aclGetDataType"), std::string::npos);

    aclDestroyTensorList(tl);  // and its tensor
    aclDestroyBoolArray(ba);
    aclDestroyFloatArray(fa);
    aclDestroyIntArray(ia);
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST_F(TensorApiTest, DestroyNullIs161001) {
    EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyFloatArray(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyTensorList(nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclDestroyScalarList(nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

// ---- raw address ----

TEST_F(TensorApiTest, RawTensorAddrRoundTrip) {
    const int64_t dims[1] = {4}, strides[1] = {1}, storage[1] = {4};
    float a[4] = {}, b[4] = {};
    aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, a);
    ASSERT_NE(t, nullptr);
    void *addr = nullptr;
    ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(a));
    ASSERT_EQ(aclSetRawTensorAddr(t, b), ACLNN_SUCCESS);
    ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(b));
    // The address is the storage start: the view offset is not folded into it.
    const int64_t off_dims[1] = {2}, off_storage[1] = {4};
    aclTensor *o = aclCreateTensor(off_dims, 1, ACL_FLOAT, strides, 2, ACL_FORMAT_ND, off_storage, 1, a);
    ASSERT_NE(o, nullptr);
    ASSERT_EQ(aclGetRawTensorAddr(o, &addr), ACLNN_SUCCESS);
    EXPECT_EQ(addr, static_cast<void *>(a));
    aclDestroyTensor(o);
    aclDestroyTensor(t);
}

// ---- arrays, scalars, lists ----

TEST_F(TensorApiTest, IntArray) {
    const int64_t v[3] = {7, -2, 1LL << 40};
    aclIntArray *a = aclCreateIntArray(v, 3);
    ASSERT_NE(a, nullptr);
    uint64_t n = 0;
    ASSERT_EQ(aclGetIntArraySize(a, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
    aclIntArray *e = aclCreateIntArray(v, 0);
    ASSERT_NE(e, nullptr) << "an empty array is valid";
    ASSERT_EQ(aclGetIntArraySize(e, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 0u);
    aclDestroyIntArray(e);
    EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
    EXPECT_FALSE(takeErr().empty());
}

TEST_F(TensorApiTest, FloatArray) {
    const float v[4] = {1.0f, -0.5f, 3e38f, 0.0f};
    aclFloatArray *a = aclCreateFloatArray(v, 4);
    ASSERT_NE(a, nullptr);
    uint64_t n = 0;
    ASSERT_EQ(aclGetFloatArraySize(a, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(aclDestroyFloatArray(a), ACLNN_SUCCESS);
    EXPECT_EQ(aclCreateFloatArray(nullptr, 1), nullptr);
}

TEST_F(TensorApiTest, BoolArray) {
    const bool v[5] = {true, false, true, true, false};
    aclBoolArray *a = aclCreateBoolArray(v, 5);
    ASSERT_NE(a, nullptr);
    uint64_t n = 0;
    ASSERT_EQ(aclGetBoolArraySize(a, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 5u);
    EXPECT_EQ(aclDestroyBoolArray(a), ACLNN_SUCCESS);
    EXPECT_EQ(aclCreateBoolArray(nullptr, 3), nullptr);
}

TEST_F(TensorApiTest, Scalars) {
    float f = 1.5f;
    double d = -2.25;
    int32_t i32 = -7;
    int64_t i64 = 1LL << 40;
    int8_t i8 = -3;
    uint8_t u8 = 200;
    bool b = true;
    uint16_t h = 0x3c00;  // 1.0 in FLOAT16
    struct Row {
        void *v;
        aclDataType dt;
    };
    for (const Row &r : {Row{&f, ACL_FLOAT}, Row{&d, ACL_DOUBLE}, Row{&i32, ACL_INT32}, Row{&i64, ACL_INT64},
                         Row{&i8, ACL_INT8}, Row{&u8, ACL_UINT8}, Row{&b, ACL_BOOL}, Row{&h, ACL_FLOAT16},
                         Row{&h, ACL_BF16}}) {
        aclScalar *s = aclCreateScalar(r.v, r.dt);
        ASSERT_NE(s, nullptr) << "dtype " << r.dt << ": " << takeErr();
        EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
    }
    EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
    EXPECT_FALSE(takeErr().empty());
    EXPECT_EQ(shim_aclCreateScalar(&f, 99), nullptr) << "unknown dtype";
}

// CANN's lists own their items: aclDestroyTensorList / aclDestroyScalarList destroy them, and the
// caller does not destroy them again (LeakSanitizer fails this test if the items were left behind).
TEST_F(TensorApiTest, TensorListOwnsItsTensors) {
    const int64_t dims[1] = {2}, strides[1] = {1}, storage[1] = {2};
    float a[2] = {}, b[2] = {};
    aclTensor *ta = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, a);
    aclTensor *tb = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, b);
    ASSERT_TRUE(ta && tb);
    const aclTensor *items[3] = {ta, tb, ta};  // one tensor listed twice is destroyed once
    aclTensorList *l = aclCreateTensorList(items, 3);
    ASSERT_NE(l, nullptr);
    uint64_t n = 0;
    ASSERT_EQ(aclGetTensorListSize(l, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
    EXPECT_EQ(aclCreateTensorList(nullptr, 2), nullptr);
    aclTensorList *empty = aclCreateTensorList(nullptr, 0);
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(aclDestroyTensorList(empty), ACLNN_SUCCESS);
}

TEST_F(TensorApiTest, ScalarListOwnsItsScalars) {
    float x = 1.0f, y = 2.0f;
    aclScalar *a = aclCreateScalar(&x, ACL_FLOAT), *b = aclCreateScalar(&y, ACL_FLOAT);
    ASSERT_TRUE(a && b);
    const aclScalar *items[2] = {a, b};
    aclScalarList *l = aclCreateScalarList(items, 2);
    ASSERT_NE(l, nullptr);
    uint64_t n = 0;
    ASSERT_EQ(aclGetScalarListSize(l, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(aclGetScalarListSize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(takeErr().find("aclGetScalarListSize"), std::string::npos);
    EXPECT_EQ(aclGetScalarListSize(l, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    (void)takeErr();
    EXPECT_EQ(aclDestroyScalarList(l), ACLNN_SUCCESS);
    EXPECT_EQ(aclCreateScalarList(nullptr, 1), nullptr);
    (void)takeErr();
}

TEST(DataTypeSize, DocumentedSizes) {
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
    EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
    EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
    EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
    EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
    EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
    EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX64), 8u);
    EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX128), 16u);
    EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
}

// Plugins see aclDataType as acp_tensor_desc's int32_t and test it by the SDK's names
// (aclnn_cpu/dtype.hpp): each name must be the public enum's value, and the name table must agree.
TEST(DataTypeNames, SdkConstantsAreThePublicEnumValues) {
    namespace dt = acp::dt;
    const std::pair<int32_t, aclDataType> same[] = {
        {dt::kFloat, ACL_FLOAT},   {dt::kFloat16, ACL_FLOAT16},     {dt::kInt8, ACL_INT8},
        {dt::kInt32, ACL_INT32},   {dt::kUint8, ACL_UINT8},         {dt::kInt16, ACL_INT16},
        {dt::kUint16, ACL_UINT16}, {dt::kUint32, ACL_UINT32},       {dt::kInt64, ACL_INT64},
        {dt::kUint64, ACL_UINT64}, {dt::kDouble, ACL_DOUBLE},       {dt::kBool, ACL_BOOL},
        {dt::kComplex64, ACL_COMPLEX64}, {dt::kComplex128, ACL_COMPLEX128}, {dt::kBf16, ACL_BF16},
        {dt::kComplex32, ACL_COMPLEX32}};
    for (const auto &[name, value] : same) {
        EXPECT_EQ(name, static_cast<int32_t>(value)) << acp::dtype_name(value);
        EXPECT_NE(acp::dtype_name(name), "UNDEFINED") << name;
        EXPECT_EQ(acp::parse_dtype(acp::dtype_name(name)), name) << name;
    }
}

}  // namespace
