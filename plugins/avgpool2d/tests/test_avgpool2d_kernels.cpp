// White-box test of the AvgPool2dBackward kernel's parity path (stage A by column parity, column
// stride 2 with kW 2 or 3 and pW 0 or 1): it must write the same bits as the table path it
// replaces, for every geometry it takes (ceil mode, divisor rules, rounded scales, odd widths, rows
// no window covers, row blocks that split a plane or one a plane, padded rows, streamed stores) and
// every value (signed zeros, NaNs, inf, subnormals). The table path is the one the reference tests
// have always checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aclnn_cpu/pooling.hpp"
#include "acltest.hpp"
#include "avgpool2d_kernel_values.hpp"
#include "avgpool2d_kernels.hpp"

namespace {

using avgpool2d::BackwardKernel;
using avgpool2d::DType;
using avgpool2d::Geometry;
using avgpool2d::StoreMode;
using avgpool2d::View4;

using acltest::Rng;

struct Problem {
    int64_t planes, H, W, kH, sH, pH, kW, pW;
    bool ceil, countPad;
    int64_t divisor;
    int32_t precision;
    DType dt;
    int64_t rowPad;  // gradInput row stride W + rowPad
    StoreMode store;

    std::string str() const {
        return "planes " + std::to_string(planes) + " " + std::to_string(H) + "x" + std::to_string(W) + " k" +
               std::to_string(kH) + "x" + std::to_string(kW) + " sH " + std::to_string(sH) + " p" + std::to_string(pH) +
               "x" + std::to_string(pW) + (ceil ? " ceil" : "") + (countPad ? " countpad" : "") + " div " +
               std::to_string(divisor) + " prec " + std::to_string(precision) + " dt " + std::to_string(static_cast<int>(dt)) +
               " rowPad " + std::to_string(rowPad) + " store " + std::to_string(static_cast<int>(store));
    }
};

// gradInput bytes written by one kernel, parity path on or off; the area around each row's W
// elements (the padding of a padded row, a canary line at the end) must stay untouched.
std::vector<uint8_t> run(const Problem &p, const std::vector<uint8_t> &go, bool parity, bool *usedParity) {
    const int64_t Ho = acp::pooled_size(p.H, p.kH, p.sH, p.pH, 1, p.ceil);
    const int64_t Wo = acp::pooled_size(p.W, p.kW, 2, p.pW, 1, p.ceil);
    const Geometry g{1, p.planes, p.H, p.W, Ho, Wo, p.kH, p.kW, p.sH, 2, p.pH, p.pW, p.ceil, p.countPad, p.divisor};
    BackwardKernel k(g, p.dt, p.precision);
    k.set_parity_path(parity);
    k.set_store_mode(p.store);
    *usedParity = k.uses_parity_path();
    const int64_t es = p.dt == DType::F32 ? 4 : 2, ld = p.W + p.rowPad;
    // 64-byte aligned storage, so that streamed lines exist
    std::vector<uint8_t> buf(static_cast<size_t>(p.planes * p.H * ld * es + 64 + 64), 0xA5);
    uint8_t *gi = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    k.run(go.data(), View4{0, Ho * Wo, Wo, 1}, gi, View4{0, p.H * ld, ld, 1});
    return std::vector<uint8_t>(gi, gi + p.planes * p.H * ld * es + 32);
}

bool fits(const Problem &p) {
    return 2 * p.pH <= p.kH && 2 * p.pW <= p.kW && acp::pooled_size(p.H, p.kH, p.sH, p.pH, 1, p.ceil) > 0 &&
           acp::pooled_size(p.W, p.kW, 2, p.pW, 1, p.ceil) > 0;
}

TEST(AvgPool2dKernelParity, SameBitsAsTheTablePath) {
    BackwardKernel probe(Geometry{1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 0, 0, false, true, 0}, DType::F32, 0);
    if (!probe.uses_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: the parity path does not exist here";
    Rng r(33);
    const int64_t widths[] = {1, 2, 3, 5, 16, 17, 31, 32, 33, 47, 57, 64, 100, 112};
    const DType dts[] = {DType::F32, DType::F16, DType::BF16};
    int checked = 0;
    for (int draw = 0; draw < 3; ++draw)
    for (int64_t kW : {2, 3})
        for (int64_t pW : {0, 1})
            for (int64_t W : widths)
                for (DType dt : dts) {
                    Problem p{};
                    p.planes = draw == 2 ? 70 : r.integer(1, 3);  // 70: one row block a plane
                    p.H = r.integer(1, 14);
                    p.W = W;
                    p.kH = r.integer(1, 3);
                    p.sH = r.integer(1, 3);
                    p.pH = r.integer(0, p.kH / 2);
                    p.kW = kW;
                    p.pW = pW;
                    p.ceil = r.integer(0, 1) == 1;
                    p.countPad = r.integer(0, 1) == 1;
                    const int64_t divisors[] = {0, 0, 5, -3};
                    p.divisor = divisors[r.integer(0, 3)];
                    p.precision = static_cast<int32_t>(dt == DType::F32 ? r.integer(0, 2) : 0);  // native, FP16, HF32
                    p.dt = dt;
                    p.rowPad = r.integer(0, 1) ? 0 : r.integer(1, 20);
                    p.store = r.integer(0, 1) ? StoreMode::Plain : StoreMode::Streaming;
                    if (!fits(p)) continue;
                    const int64_t Ho = acp::pooled_size(p.H, p.kH, p.sH, p.pH, 1, p.ceil);
                    const int64_t Wo = acp::pooled_size(p.W, p.kW, 2, p.pW, 1, p.ceil);
                    const std::vector<uint8_t> go = avgpool2d_test::values(p.planes * Ho * Wo, dt, r, 40);
                    bool onUsed = false, offUsed = true;
                    const std::vector<uint8_t> on = run(p, go, true, &onUsed), off = run(p, go, false, &offUsed);
                    ASSERT_TRUE(onUsed) << p.str();  // else this compares the table path with itself
                    ASSERT_FALSE(offUsed) << p.str();
                    ASSERT_EQ(on.size(), off.size());
                    for (size_t i = 0; i < on.size(); ++i)
                        ASSERT_EQ(on[i], off[i]) << "byte " << i << " of " << on.size() << ": " << p.str();
                    ++checked;
                }
    EXPECT_GT(checked, 400);
}

// The parity path is taken only where its column rule holds; elsewhere the tables serve.
TEST(AvgPool2dKernelParity, OnlyForColumnStride2WithKernel2Or3) {
    BackwardKernel probe(Geometry{1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 0, 0, false, true, 0}, DType::F32, 0);
    if (!probe.uses_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    auto takes = [](int64_t kW, int64_t sW, int64_t pW) {
        const int64_t Wo = acp::pooled_size(20, kW, sW, pW, 1, false);
        return BackwardKernel(Geometry{1, 2, 10, 20, 5, Wo, 2, kW, 2, sW, 0, pW, false, true, 0}, DType::F32, 0)
            .uses_parity_path();
    };
    EXPECT_TRUE(takes(3, 2, 1));
    EXPECT_TRUE(takes(3, 2, 0));
    EXPECT_TRUE(takes(2, 2, 0));
    EXPECT_TRUE(takes(2, 2, 1));
    EXPECT_FALSE(takes(3, 1, 1));
    EXPECT_FALSE(takes(4, 2, 1));
    EXPECT_FALSE(takes(3, 3, 1));
    EXPECT_FALSE(takes(1, 2, 0));
}

}  // namespace
