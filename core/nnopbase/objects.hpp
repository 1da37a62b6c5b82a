// The objects behind acl_meta.h's opaque handles. A tensor is a view (shape, strides, offset in
// elements) onto storage that starts at `data`; the core guarantees at creation that every element
// of the view lies inside the declared storage shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "aclnn/acl_meta.h"

struct aclTensor {
    std::vector<int64_t> dims;
    std::vector<int64_t> strides;
    std::vector<int64_t> storage_dims;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_ND;
    void *data = nullptr;

    int64_t numel() const;
};

struct aclIntArray {
    std::vector<int64_t> values;
};
struct aclFloatArray {
    std::vector<float> values;
};
struct aclBoolArray {
    std::vector<uint8_t> values;  // 0 / 1, contiguous bytes for the plugin ABI
};
struct aclScalar {
    aclDataType dtype = ACL_DT_UNDEFINED;
    double value = 0.0;
};
// A list owns its items, as in CANN: aclDestroyTensorList (aclDestroyScalarList) destroys them, and the
// caller must not destroy them again. An item listed twice is destroyed once.
template <class Item>
void destroy_distinct(std::vector<const Item *> &items) {
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    for (const Item *item : items) delete item;
}
struct aclTensorList {
    std::vector<const aclTensor *> tensors;
    aclTensorList() = default;
    aclTensorList(const aclTensorList &) = delete;
    aclTensorList &operator=(const aclTensorList &) = delete;
    ~aclTensorList() { destroy_distinct(tensors); }
};
struct aclScalarList {
    std::vector<const aclScalar *> scalars;
    aclScalarList() = default;
    aclScalarList(const aclScalarList &) = delete;
    aclScalarList &operator=(const aclScalarList &) = delete;
    ~aclScalarList() { destroy_distinct(scalars); }
};
