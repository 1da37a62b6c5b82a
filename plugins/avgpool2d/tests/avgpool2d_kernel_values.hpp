// Values for the white-box kernel tests: what the kernels must give the same bits on, in dt's
// encoding.
#ifndef AVGPOOL2D_KERNEL_VALUES_HPP_
#define AVGPOOL2D_KERNEL_VALUES_HPP_

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "avgpool2d_kernels.hpp"

namespace avgpool2d_test {

// n values: ordinary ones (multiples of 1/512 up to about 7.8 in magnitude) and, each with odds
// of 1 in `spread` + 1, signed zeros, quiet NaNs of distinct payloads and either sign (so that
// sums meet two of them), infinities of either sign, a FLOAT subnormal, values in FLOAT16's
// subnormal range and one near its largest.
inline std::vector<uint8_t> values(int64_t n, avgpool2d::DType dt, acltest::Rng &r, int64_t spread) {
    const int64_t es = dt == avgpool2d::DType::F32 ? 4 : 2;
    std::vector<uint8_t> out(static_cast<size_t>(n * es));
    for (int64_t i = 0; i < n; ++i) {
        float v = static_cast<float>(r.integer(-4000, 4000)) / 512.0f;
        switch (r.integer(0, spread)) {
            case 0: v = r.integer(0, 1) ? -0.0f : 0.0f; break;
            case 1: case 2: {  // payload bits that survive the 16-bit encodings too
                const uint32_t u = 0x7fc00000u | static_cast<uint32_t>(r.integer(1, 63)) << 16 |
                                   (r.integer(0, 1) ? 0x80000000u : 0u);
                std::memcpy(&v, &u, 4);
                break;
            }
            case 3: v = (r.integer(0, 1) ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity(); break;
            case 4: v = 1e-40f; break;                                       // FLOAT subnormal
            case 5: v = static_cast<float>(r.integer(1, 9)) * 1e-7f; break;  // FLOAT16 subnormal range
            case 6: v = 3e4f; break;                                         // near FLOAT16's largest
            default: break;
        }
        if (dt == avgpool2d::DType::F32) {
            std::memcpy(&out[static_cast<size_t>(i * 4)], &v, 4);
        } else {
            const uint16_t u = dt == avgpool2d::DType::F16 ? acp::float_to_half(v) : acp::float_to_bf16(v);
            std::memcpy(&out[static_cast<size_t>(i * 2)], &u, 2);
        }
    }
    return out;
}

}  // namespace avgpool2d_test

#endif  // AVGPOOL2D_KERNEL_VALUES_HPP_
