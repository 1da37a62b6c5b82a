// The objects behind acl_meta.h's opaque handles. A tensor is a view (shape, strides, offset in
// elements) onto storage that starts at `data`; the core guarantees at creation that every element
// of the view lies inside the declared storage shape.
#pragma once

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
struct aclTensorList {
    std::vector<const aclTensor *> tensors;
};
struct aclScalarList {
    std::vector<const aclScalar *> scalars;
};
