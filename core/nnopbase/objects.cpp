// Creation, destruction and queries of tensors, arrays and scalars (acl_meta.h).
#include "objects.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "../runtime/log.hpp"
#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"

namespace {

constexpr uint64_t kMaxRank = 8;

template <class T>
T *creation_failed(const char *fn, const std::string &why, int code = ACLNN_ERR_PARAM_INVALID) {
    aclcpu::set_error(code, std::string(fn) + ": " + why);
    return nullptr;
}

// A new T filled by fill(T&) of `size` elements; out of host memory is NULL with a message, never
// an exception through the C API.
template <class T, class Fill>
T *create_filled(const char *fn, uint64_t size, Fill fill) {
    auto *a = new (std::nothrow) T;
    if (!a) return creation_failed<T>(fn, "out of host memory", ACLNN_ERR_INNER);
    try {
        fill(*a);
    } catch (const std::exception &) {  // bad_alloc, or length_error beyond max_size()
        delete a;
        return creation_failed<T>(fn, "out of host memory for " + std::to_string(size) + " elements", ACLNN_ERR_INNER);
    }
    return a;
}

aclnnStatus null_arg(const char *fn, const char *what) {
    return aclcpu::set_error(ACLNN_ERR_PARAM_NULLPTR, std::string(fn) + ": " + what + " must not be NULL");
}

// Copies a vector into a new[] array, the way CANN hands shapes out (the caller delete[]s it).
aclnnStatus hand_out(const std::vector<int64_t> &v, int64_t **out, uint64_t *n) {
    *n = v.size();
    *out = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
    if (!*out) return aclcpu::set_error(ACLNN_ERR_INNER, "out of host memory");
    if (!v.empty()) std::memcpy(*out, v.data(), v.size() * sizeof(int64_t));
    return ACLNN_SUCCESS;
}

// Fills `t` from aclCreateTensor's arguments after checking them all. On a bad argument: false, the
// error set with `fn`'s name, and `t` partly written (callers fill a fresh tensor, never a live one).
bool describe_tensor(const char *fn, aclTensor &t, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                     const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                     uint64_t storageDimsNum, void *tensorData) {
    const auto bad = [fn](const std::string &why) {
        aclcpu::set_error(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": " + why);
        return false;
    };
    if (viewDimsNum > kMaxRank) return bad("viewDimsNum must be <= 8, got " + std::to_string(viewDimsNum));
    if (viewDimsNum && !viewDims) return bad("viewDims must not be NULL");
    if (storageDimsNum > kMaxRank) return bad("storageDimsNum must be <= 8, got " + std::to_string(storageDimsNum));
    if (storageDimsNum && !storageDims) return bad("storageDims must not be NULL");
    if (acp::dtype_size(dataType) == 0)
        return bad("dataType " + std::to_string(static_cast<int>(dataType)) + " has no element size");
    if (format != ACL_FORMAT_UNDEFINED && acp::format_name(format) == "UNDEFINED")
        return bad("unknown format " + std::to_string(static_cast<int>(format)));
    if (offset < 0) return bad("offset must be >= 0, got " + std::to_string(offset));
    t.dims.assign(viewDims, viewDims + viewDimsNum);
    t.dtype = dataType;
    t.format = format;
    t.offset = offset;
    t.data = tensorData;
    for (uint64_t d = 0; d < viewDimsNum; ++d)
        if (t.dims[d] < 0) return bad("viewDims[" + std::to_string(d) + "] must be >= 0, got " + std::to_string(viewDims[d]));
    // NULL strides mean a contiguous view; NULL storage means storage exactly the view.
    if (stride) {
        t.strides.assign(stride, stride + viewDimsNum);
    } else {
        t.strides.assign(viewDimsNum, 1);
        for (int64_t d = static_cast<int64_t>(viewDimsNum) - 2; d >= 0; --d)
            // (an empty view's other dims may be huge: its strides can overflow where its count cannot)
            if (__builtin_mul_overflow(t.strides[d + 1], std::max<int64_t>(t.dims[d + 1], 1), &t.strides[d]))
                return bad("the contiguous strides of viewDims overflow int64 (stride is NULL)");
    }
    for (uint64_t d = 0; d < viewDimsNum; ++d)
        if (t.strides[d] < 0) return bad("stride[" + std::to_string(d) + "] must be >= 0, got " + std::to_string(stride[d]));
    if (storageDims) t.storage_dims.assign(storageDims, storageDims + storageDimsNum);
    else t.storage_dims = t.dims;
    int64_t storage = 1;
    for (int64_t d : t.storage_dims)
        if (d < 0 || __builtin_mul_overflow(storage, d, &storage))
            return bad("storageDims must be >= 0 with a product below 2^63");
    // Every address a kernel forms, (offset + index) * element size, must fit in int64.
    const auto elem = static_cast<int64_t>(acp::dtype_size(dataType));
    int64_t bytes = 0;
    if (__builtin_mul_overflow(storage, elem, &bytes) || __builtin_mul_overflow(offset, elem, &bytes))
        return bad("storage of " + std::to_string(storage) + " elements and offset " + std::to_string(offset) +
                   " must stay below 2^63 bytes (" + std::to_string(elem) + " bytes an element)");
    int64_t count = 1;
    for (int64_t d : t.dims)
        if (__builtin_mul_overflow(count, d, &count)) return bad("viewDims have more than 2^63 elements");
    // Every element of a non-empty view must lie inside the storage, so kernels never leave it.
    if (count > 0) {
        int64_t last = offset, step = 0;
        bool overflow = false;
        for (uint64_t d = 0; d < viewDimsNum && !overflow; ++d)
            overflow = __builtin_mul_overflow(t.dims[d] - 1, t.strides[d], &step) || __builtin_add_overflow(last, step, &last);
        if (overflow) return bad("the view's last element offset overflows int64");
        if (last >= storage)
            return bad("the view reaches element " + std::to_string(last) + " but the storage holds " +
                       std::to_string(storage) + " elements");
    }
    return true;
}

}  // namespace

int64_t aclTensor::numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

extern "C" {

ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                               const int64_t *stride, int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData) {
    auto *t = new (std::nothrow) aclTensor;
    if (!t) return creation_failed<aclTensor>("aclCreateTensor", "out of host memory", ACLNN_ERR_INNER);
    if (describe_tensor("aclCreateTensor", *t, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims,
                        storageDimsNum, tensorData))
        return t;
    delete t;
    return nullptr;
}

// A bad argument leaves the tensor as it was: a tensor half re-described would pass for a good one.
ACL_FUNC_VISIBILITY aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum,
                                              aclDataType dataType, const int64_t *stride, int64_t offset,
                                              aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                                              void *tensorDataAddr) {
    if (!tensor) return null_arg("aclInitTensor", "tensor");
    aclTensor fresh;
    if (!describe_tensor("aclInitTensor", fresh, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims,
                         storageDimsNum, tensorDataAddr))
        return ACLNN_ERR_PARAM_INVALID;
    *tensor = std::move(fresh);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    if (!value) return creation_failed<aclScalar>("aclCreateScalar", "value must not be NULL");
    double v = 0;
    switch (dataType) {
        case ACL_FLOAT: v = *static_cast<const float *>(value); break;
        case ACL_DOUBLE: v = *static_cast<const double *>(value); break;
        case ACL_FLOAT16: v = acp::half_to_float(*static_cast<const uint16_t *>(value)); break;
        case ACL_BF16: v = acp::bf16_to_float(*static_cast<const uint16_t *>(value)); break;
        case ACL_INT8: v = *static_cast<const int8_t *>(value); break;
        case ACL_UINT8: v = *static_cast<const uint8_t *>(value); break;
        case ACL_INT16: v = *static_cast<const int16_t *>(value); break;
        case ACL_INT32: v = *static_cast<const int32_t *>(value); break;
        case ACL_INT64: v = static_cast<double>(*static_cast<const int64_t *>(value)); break;
        case ACL_BOOL: v = *static_cast<const bool *>(value) ? 1 : 0; break;
        default:
            return creation_failed<aclScalar>("aclCreateScalar", "unsupported dataType " + std::to_string(static_cast<int>(dataType)) +
                                                                     " (" + std::string(acp::dtype_name(dataType)) + ")");
    }
    return new (std::nothrow) aclScalar{dataType, v};
}

ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    if (size && !value) return creation_failed<aclIntArray>("aclCreateIntArray", "value must not be NULL");
    return create_filled<aclIntArray>("aclCreateIntArray", size, [&](aclIntArray &a) { a.values.assign(value, value + size); });
}

ACL_FUNC_VISIBILITY aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
    if (size && !value) return creation_failed<aclFloatArray>("aclCreateFloatArray", "value must not be NULL");
    return create_filled<aclFloatArray>("aclCreateFloatArray", size, [&](aclFloatArray &a) { a.values.assign(value, value + size); });
}

ACL_FUNC_VISIBILITY aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
    if (size && !value) return creation_failed<aclBoolArray>("aclCreateBoolArray", "value must not be NULL");
    return create_filled<aclBoolArray>("aclCreateBoolArray", size, [&](aclBoolArray &a) {
        a.values.reserve(size);
        for (uint64_t i = 0; i < size; ++i) a.values.push_back(value[i] ? 1 : 0);
    });
}

ACL_FUNC_VISIBILITY aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (size && !value) return creation_failed<aclTensorList>("aclCreateTensorList", "value must not be NULL");
    return create_filled<aclTensorList>("aclCreateTensorList", size, [&](aclTensorList &a) { a.tensors.assign(value, value + size); });
}

ACL_FUNC_VISIBILITY aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    if (size && !value) return creation_failed<aclScalarList>("aclCreateScalarList", "value must not be NULL");
    return create_filled<aclScalarList>("aclCreateScalarList", size, [&](aclScalarList &a) { a.scalars.assign(value, value + size); });
}

#define ACLCPU_DESTROY(Fn, Type)                                              \
    ACL_FUNC_VISIBILITY aclnnStatus Fn(const Type *p) {                       \
        if (!p) return null_arg(#Fn, "the object");                           \
        delete p;                                                             \
        return ACLNN_SUCCESS;                                                 \
    }
ACLCPU_DESTROY(aclDestroyTensor, aclTensor)
ACLCPU_DESTROY(aclDestroyScalar, aclScalar)
ACLCPU_DESTROY(aclDestroyIntArray, aclIntArray)
ACLCPU_DESTROY(aclDestroyFloatArray, aclFloatArray)
ACLCPU_DESTROY(aclDestroyBoolArray, aclBoolArray)
ACLCPU_DESTROY(aclDestroyTensorList, aclTensorList)
ACLCPU_DESTROY(aclDestroyScalarList, aclScalarList)
#undef ACLCPU_DESTROY

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    if (!tensor || !viewDims || !viewDimsNum) return null_arg("aclGetViewShape", "tensor, viewDims and viewDimsNum");
    return hand_out(tensor->dims, viewDims, viewDimsNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                                   uint64_t *storageDimsNum) {
    if (!tensor || !storageDims || !storageDimsNum)
        return null_arg("aclGetStorageShape", "tensor, storageDims and storageDimsNum");
    return hand_out(tensor->storage_dims, storageDims, storageDimsNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                                  uint64_t *stridesNum) {
    if (!tensor || !stridesValue || !stridesNum) return null_arg("aclGetViewStrides", "tensor, stridesValue and stridesNum");
    return hand_out(tensor->strides, stridesValue, stridesNum);
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    if (!tensor || !offset) return null_arg("aclGetViewOffset", "tensor and offset");
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    if (!tensor || !format) return null_arg("aclGetFormat", "tensor and format");
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    if (!tensor || !dataType) return null_arg("aclGetDataType", "tensor and dataType");
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size) {
    if (!array || !size) return null_arg("aclGetIntArraySize", "array and size");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size) {
    if (!array || !size) return null_arg("aclGetFloatArraySize", "array and size");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size) {
    if (!array || !size) return null_arg("aclGetBoolArraySize", "array and size");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetScalarListSize(const aclScalarList *scalarList, uint64_t *size) {
    if (!scalarList || !size) return null_arg("aclGetScalarListSize", "scalarList and size");
    *size = scalarList->scalars.size();
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size) {
    if (!tensorList || !size) return null_arg("aclGetTensorListSize", "tensorList and size");
    *size = tensorList->tensors.size();
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    if (!tensor) return null_arg("aclSetRawTensorAddr", "tensor");
    tensor->data = addr;
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    if (!tensor || !addr) return null_arg("aclGetRawTensorAddr", "tensor and addr");
    *addr = tensor->data;
    return ACLNN_SUCCESS;
}

}  // extern "C"
