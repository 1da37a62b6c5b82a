// aclnn-cpu plugin SDK: what the NCHW plugins (pooling, unpooling) say about a tensor descriptor -
// its element strides as an (N, C, H, W) view, and the floating type their kernels compute in.
// Header-only.
#ifndef ACLNN_CPU_NCHW_HPP_
#define ACLNN_CPU_NCHW_HPP_

#include <cstdint>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/plugin_abi.h"

namespace acp {

// Element strides of an (N, C, H, W) view; a rank-3 (C, H, W) tensor is one image (n stride 0).
struct View4 {
    int64_t n, c, h, w;
};

inline View4 view4(const acp_tensor_desc &t) {
    if (t.rank == 3) return {0, t.strides[0], t.strides[1], t.strides[2]};
    return {t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
}

// The floating dtypes the kernels take: FLOAT, FLOAT16 (IEEE binary16) and BF16, the 16-bit ones
// stored as uint16_t.
enum class DType { F32, F16, BF16 };

// A descriptor's dtype, one of FLOAT, FLOAT16, BFLOAT16 (the manifest has admitted no other).
inline DType float_dtype(const acp_tensor_desc &t) {
    switch (t.dtype) {
        case dt::kFloat16: return DType::F16;
        case dt::kBf16: return DType::BF16;
        default: return DType::F32;
    }
}

}  // namespace acp

#endif  // ACLNN_CPU_NCHW_HPP_
