// White-box test: the scalar spelling of the AvgPool2d kernels (what a CPU without AVX-512 runs)
// and the AVX-512 one write the same bits, forward and backward, for every geometry and value the
// kernels take: table, parity and per-element paths, ceil mode, divisor rules, rounded scales,
// strided views, and values that include NaNs of different payloads (a sum of two NaNs keeps the
// earlier operand's), infinities of both signs, signed zeros and subnormals. (A CPU without
// AVX-512 has only the scalar spelling: the reference tests check it there, and this test skips.)
#include <gtest/gtest.h>

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
using avgpool2d::ForwardKernel;
using avgpool2d::Geometry;
using avgpool2d::Isa;
using avgpool2d::StoreMode;
using avgpool2d::View4;
using acltest::Rng;

struct Case {
    Geometry g;
    DType dt;
    int32_t precision;
    int64_t pad;  // extra elements per result row (a strided view)
    std::string str() const {
        return std::to_string(g.C) + " planes " + std::to_string(g.H) + "x" + std::to_string(g.W) + " k" + std::to_string(g.kH) +
               "x" + std::to_string(g.kW) + " s" + std::to_string(g.sH) + "x" + std::to_string(g.sW) + " p" +
               std::to_string(g.pH) + "x" + std::to_string(g.pW) + (g.ceil_mode ? " ceil" : "") +
               (g.count_include_pad ? " countpad" : "") + " div " + std::to_string(g.divisor_override) + " prec " +
               std::to_string(precision) + " dt " + std::to_string(static_cast<int>(dt)) + " pad " + std::to_string(pad);
    }
};

Case draw(Rng &r, DType dt) {
    Case c{};
    Geometry &g = c.g;
    g.N = 1;
    g.C = r.integer(1, 3);
    g.H = r.integer(1, 12);
    g.W = r.integer(0, 3) == 0 ? 112 : r.integer(1, 40);
    g.kH = r.integer(1, 4);
    g.kW = r.integer(1, 4);
    g.sH = r.integer(1, 3);
    g.sW = r.integer(1, 3);
    g.pH = r.integer(0, g.kH / 2);
    g.pW = r.integer(0, g.kW / 2);
    g.ceil_mode = r.integer(0, 1) == 1;
    g.count_include_pad = r.integer(0, 1) == 1;
    const int64_t divisors[] = {0, 0, 0, 5, -3};
    g.divisor_override = divisors[r.integer(0, 4)];
    g.Ho = acp::pooled_size(g.H, g.kH, g.sH, g.pH, 1, g.ceil_mode);
    g.Wo = acp::pooled_size(g.W, g.kW, g.sW, g.pW, 1, g.ceil_mode);
    c.dt = dt;
    c.precision = static_cast<int32_t>(dt == DType::F32 ? r.integer(0, 2) : 0);  // native, FP16, HF32
    c.pad = r.integer(0, 1) ? 0 : r.integer(1, 9);
    return c;
}

// The result bytes of one run (rows of W + pad elements, the pad left as filled: 0xA5).
std::vector<uint8_t> backward(const Case &c, const std::vector<uint8_t> &go, Isa isa, StoreMode store) {
    const Geometry &g = c.g;
    BackwardKernel k(g, c.dt, c.precision);
    k.set_isa(isa);
    k.set_store_mode(store);
    const int64_t es = c.dt == DType::F32 ? 4 : 2, ld = g.W + c.pad;
    std::vector<uint8_t> buf(static_cast<size_t>(g.C * g.H * ld * es + 128), 0xA5);
    uint8_t *gi = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    k.run(go.data(), View4{0, g.Ho * g.Wo, g.Wo, 1}, gi, View4{0, g.H * ld, ld, 1});
    return std::vector<uint8_t>(gi, gi + g.C * g.H * ld * es);
}

std::vector<uint8_t> forward(const Case &c, const std::vector<uint8_t> &in, Isa isa) {
    const Geometry &g = c.g;
    ForwardKernel k(g, c.dt, c.precision);
    k.set_isa(isa);
    const int64_t es = c.dt == DType::F32 ? 4 : 2, ld = g.Wo + c.pad;
    std::vector<uint8_t> out(static_cast<size_t>(g.C * g.Ho * ld * es), 0xA5);
    k.run(in.data(), View4{0, g.H * g.W, g.W, 1}, out.data(), View4{0, g.Ho * ld, ld, 1});
    return out;
}

// Element by element (es bytes each), so that a failure shows both encodings.
void expect_same(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, int64_t es, const std::string &what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i + static_cast<size_t>(es) <= a.size(); i += static_cast<size_t>(es)) {
        uint32_t x = 0, y = 0;
        std::memcpy(&x, &a[i], static_cast<size_t>(es));
        std::memcpy(&y, &b[i], static_cast<size_t>(es));
        ASSERT_EQ(x, y) << std::hex << "element " << std::dec << i / static_cast<size_t>(es) << " of "
                        << a.size() / static_cast<size_t>(es) << ": " << what;
    }
}

// Random cases in the three dtypes, check(case, values of the kernel's input) each; how many ran.
template <class F>
int each_case(uint64_t seed, bool backward, const F &check) {
    Rng r(seed);
    int checked = 0;
    for (int draw_no = 0; draw_no < 600; ++draw_no) {
        const DType dt = draw_no % 3 == 0 ? DType::F32 : draw_no % 3 == 1 ? DType::F16 : DType::BF16;
        const Case c = draw(r, dt);
        if (c.g.Ho <= 0 || c.g.Wo <= 0) continue;
        const int64_t n = backward ? c.g.C * c.g.Ho * c.g.Wo : c.g.C * c.g.H * c.g.W;
        check(c, avgpool2d_test::values(n, dt, r, 12), r);
        if (::testing::Test::HasFatalFailure()) return checked;
        ++checked;
    }
    return checked;
}

TEST(AvgPool2dKernelIsa, BackwardScalarAndAvx512WriteTheSameBits) {
    if (!avgpool2d::detail::cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: only the scalar spelling exists here";
    const int checked = each_case(37, true, [](const Case &c, const std::vector<uint8_t> &go, Rng &r) {
        const int64_t es = c.dt == DType::F32 ? 4 : 2;
        const StoreMode store = r.integer(0, 1) ? StoreMode::Plain : StoreMode::Streaming;
        const std::vector<uint8_t> scalar = backward(c, go, Isa::Scalar, StoreMode::Plain);
        expect_same(backward(c, go, Isa::Auto, store), scalar, es, "backward, " + c.str());
        if (c.dt == DType::BF16) expect_same(backward(c, go, Isa::Avx512NoBf16, store), scalar, es, "backward no-bf16, " + c.str());
    });
    EXPECT_GT(checked, 400);
}

TEST(AvgPool2dKernelIsa, ForwardScalarAndAvx512WriteTheSameBits) {
    if (!avgpool2d::detail::cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: only the scalar spelling exists here";
    const int checked = each_case(38, false, [](const Case &c, const std::vector<uint8_t> &in, Rng &) {
        const int64_t es = c.dt == DType::F32 ? 4 : 2;
        const std::vector<uint8_t> scalar = forward(c, in, Isa::Scalar);
        expect_same(forward(c, in, Isa::Auto), scalar, es, "forward, " + c.str());
        if (c.dt == DType::BF16) expect_same(forward(c, in, Isa::Avx512NoBf16), scalar, es, "forward no-bf16, " + c.str());
    });
    EXPECT_GT(checked, 400);
}

}  // namespace
