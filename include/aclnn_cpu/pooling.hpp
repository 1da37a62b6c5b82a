// aclnn-cpu plugin SDK: the common pooling rules of ops.md (attribute broadcasting, value checks,
// PyTorch's pooling_output_shape), shared by the pooling plugins. Header-only.
#ifndef ACLNN_CPU_POOLING_HPP_
#define ACLNN_CPU_POOLING_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn_cpu/plugin.hpp"

namespace acp {

struct Pool2dAttrs {
    int64_t kH = 0, kW = 0, sH = 0, sW = 0, pH = 0, pW = 0, dH = 1, dW = 1;
};

// Broadcasts one attribute: length 1 means both axes; `fallback` is used when the list is empty.
inline void pool_pair(const std::vector<int64_t> &v, const char *name, const int64_t *fallback, int64_t &h, int64_t &w) {
    if (v.empty() && fallback) {
        h = fallback[0];
        w = fallback[1];
    } else if (v.size() == 1) {
        h = w = v[0];
    } else if (v.size() == 2) {
        h = v[0];
        w = v[1];
    } else {
        reject(kInvalid, cat(name, " must have ", fallback ? "0, 1 or 2" : "1 or 2", " elements, got ", v.size()));
    }
}

// Attribute values beyond int32 (the device's attribute type) are rejected, so that every size
// computed from them (pooled sizes, kH * kW) fits int64.
inline void require_int32(int64_t h, int64_t w, const char *name, const std::vector<int64_t> &given) {
    constexpr int64_t kMax = 2147483647;
    require(h <= kMax && w <= kMax, kInvalid, name, " values must be at most ", kMax, ", got ", shape_str(given));
}

// kernel > 0, stride > 0 (empty stride = kernel), padding >= 0 and <= kernel / 2, dilation > 0; all
// at most 2^31 - 1.
inline Pool2dAttrs parse_pool2d(const std::vector<int64_t> &kernel, const std::vector<int64_t> &stride,
                                const std::vector<int64_t> &padding, const std::vector<int64_t> &dilation,
                                const char *kernel_name = "kernelSize", const char *stride_name = "stride",
                                const char *padding_name = "padding", const char *dilation_name = "dilation") {
    Pool2dAttrs a;
    pool_pair(kernel, kernel_name, nullptr, a.kH, a.kW);
    require(a.kH > 0 && a.kW > 0, kInvalid, kernel_name, " values must be > 0, got ", shape_str(kernel));
    require_int32(a.kH, a.kW, kernel_name, kernel);
    const int64_t k[2] = {a.kH, a.kW};
    pool_pair(stride, stride_name, k, a.sH, a.sW);
    require(a.sH > 0 && a.sW > 0, kInvalid, stride_name, " values must be > 0, got ", shape_str(stride));
    require_int32(a.sH, a.sW, stride_name, stride);
    pool_pair(padding, padding_name, nullptr, a.pH, a.pW);
    require(a.pH >= 0 && a.pW >= 0, kInvalid, padding_name, " values must be >= 0, got ", shape_str(padding));
    require(a.pH <= a.kH / 2 && a.pW <= a.kW / 2, kInvalid,
            padding_name, " must be at most half of ", kernel_name, " (", a.kH / 2, ", ", a.kW / 2, "), got ",
            shape_str(padding));
    if (!dilation.empty()) {
        const int64_t one[2] = {1, 1};
        pool_pair(dilation, dilation_name, one, a.dH, a.dW);
        require(a.dH > 0 && a.dW > 0, kInvalid, dilation_name, " values must be > 0, got ", shape_str(dilation));
        require_int32(a.dH, a.dW, dilation_name, dilation);
    }
    return a;
}

inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// PyTorch's pooling_output_shape: with ceilMode the last window must start inside the input or the
// left padding.
inline int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= in + pad) --out;
    return out;
}

}  // namespace acp

#endif  // ACLNN_CPU_POOLING_HPP_
