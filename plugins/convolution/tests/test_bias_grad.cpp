// White-box test of the bias gradient (conv_kernels.cpp, compiled into this test): its
// per-channel sums have exactly the bits of the order it documents - the element at spatial index
// i of image n into double lane (n % 4, i % 8) in (n, i) order, per lane j (L0j + L1j) + (L2j + L3j),
// then ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)) - on dense NCHW FLOAT and BF16 gradients of image
// counts 1 to 9 (the AVX-512 spelling takes four images side by side: every remainder), plane
// sizes around its 8-element step, up to planes of 1088 (small planes are summed in blocks of 16
// channels, larger ones channel by channel: 3 channels and 37, two whole blocks and a part); and
// the same bits from strided views of the same values (the general path). Same bytes at 1 and 2
// threads.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "conv_kernels.hpp"

namespace {

using acp::dt::kBf16;
using acp::dt::kFloat;

struct Grad {
    std::vector<uint8_t> bytes;
    std::vector<float> value;
};

// Values over many binades, and per channel +2^60 at the first element of image 0 and -2^60 at the
// last element of the last image: what survives their cancellation is the rest as rounded next to
// 2^60, so the order of every add shows in the FLOAT result.
Grad makeGrad(int64_t N, int64_t C, int64_t P, bool bf16, uint64_t seed) {
    acltest::Rng rng(seed);
    Grad g;
    const int64_t n = N * C * P;
    g.bytes.resize(static_cast<size_t>(n) * (bf16 ? 2 : 4));
    for (int64_t i = 0; i < n; ++i) {
        float f = static_cast<float>(rng.uniform(-1.0, 1.0) * std::ldexp(1.0, static_cast<int>(rng.integer(-20, 20))));
        if (i / (C * P) == 0 && i % P == 0) f = 0x1p60f;
        if (N * P > 1 && i / (C * P) == N - 1 && i % P == P - 1) f = -0x1p60f;
        if (bf16) {
            const uint16_t h = acp::float_to_bf16(f);
            std::memcpy(g.bytes.data() + i * 2, &h, 2);
            g.value.push_back(acp::bf16_to_float(h));
        } else {
            std::memcpy(g.bytes.data() + i * 4, &f, 4);
            g.value.push_back(f);
        }
    }
    return g;
}

// About one value in five replaced by a NaN of one of five payloads and signs (BF16 keeps the top
// seven payload bits), so that NaNs meet in most lanes and sums.
void sprinkleNaNs(Grad &g, bool bf16, uint64_t seed) {
    static const uint32_t kNaN[] = {0x7fc10000u, 0xffe20000u, 0x7fa30000u, 0xffc40000u, 0x7f850000u};
    acltest::Rng rng(seed);
    for (size_t i = 0; i < g.value.size(); ++i) {
        if (rng.integer(0, 4) != 0) continue;
        const uint32_t b = kNaN[rng.integer(0, 4)];
        if (bf16) {
            const auto h = static_cast<uint16_t>(b >> 16);
            std::memcpy(g.bytes.data() + i * 2, &h, 2);
        } else {
            std::memcpy(g.bytes.data() + i * 4, &b, 4);
        }
        g.value[i] = acp::float_of(b);
    }
}

// The gradient's values with each row padded to W + 3 elements (a strided view: the general path).
std::vector<uint8_t> paddedRows(const Grad &g, int64_t N, int64_t C, int64_t H, int64_t W, int64_t es) {
    const int64_t Wp = W + 3;
    std::vector<uint8_t> padded(static_cast<size_t>(N * C * H * Wp * es));
    for (int64_t r = 0; r < N * C * H; ++r)
        std::memcpy(padded.data() + r * Wp * es, g.bytes.data() + r * W * es, static_cast<size_t>(W * es));
    return padded;
}

// The documented order, written out.
std::vector<float> documented(const Grad &g, int64_t N, int64_t C, int64_t P) {
    std::vector<float> out;
    for (int64_t c = 0; c < C; ++c) {
        using acp::add_ordered;  // a + b, a's NaN where both are: the earliest NaN in this order wins
        double lane[4][8] = {};
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < P; ++i)
                lane[n % 4][i % 8] = add_ordered(lane[n % 4][i % 8], static_cast<double>(g.value[static_cast<size_t>((n * C + c) * P + i)]));
        double j[8];
        for (int k = 0; k < 8; ++k) j[k] = add_ordered(add_ordered(lane[0][k], lane[1][k]), add_ordered(lane[2][k], lane[3][k]));
        out.push_back(static_cast<float>(add_ordered(add_ordered(add_ordered(j[0], j[1]), add_ordered(j[2], j[3])),
                                                     add_ordered(add_ordered(j[4], j[5]), add_ordered(j[6], j[7])))));
    }
    return out;
}

void expectBits(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
    for (size_t c = 0; c < want.size(); ++c) {
        uint32_t a, b;
        std::memcpy(&a, &got[c], 4);
        std::memcpy(&b, &want[c], 4);
        EXPECT_EQ(a, b) << what << " c " << c << ": " << got[c] << " vs " << want[c];
    }
}

TEST(BiasGrad, DenseRowsInTheDocumentedOrder) {
    uint64_t seed = 1;
    for (const bool bf16 : {false, true})
        for (const int64_t N : {1, 2, 3, 4, 5, 6, 7, 8, 9})
            for (const int64_t H : {1, 4, 7, 14, 16, 64})
                for (const int64_t W : {1, 4, 7, 14, 17})
                    for (const int64_t C : {3, 37}) {
                    const int64_t P = H * W;
                    const Grad g = makeGrad(N, C, P, bf16, seed++);
                    conv::View v;
                    v.dtype = bf16 ? kBf16 : kFloat;
                    v.dims = {N, C, H, W};
                    v.strides = {C * P, P, W, 1};
                    const std::vector<float> want = documented(g, N, C, P);
                    for (const int threads : {1, 2}) {
                        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
                        std::vector<float> got(static_cast<size_t>(C), -1.0f);
                        conv::bias_grad(g.bytes.data(), v, got.data());
                        expectBits(got, want,
                                   std::string(bf16 ? "BF16" : "FLOAT") + " N " + std::to_string(N) + " C " + std::to_string(C) + " H " +
                                       std::to_string(H) + " W " + std::to_string(W) + " threads " + std::to_string(threads));
                    }
                }
}

// Planes of 64 KB and more (where a CPU that prefers its own prefetches fetches each plane ahead
// while summing, block_sums_avx's Fetch): the documented bits still, with a tail past the last
// whole chunk and every image-slot remainder. Whether this CPU takes the fetching spelling is
// cpu_prefers_software_prefetch's; the bits are the same either way.
TEST(BiasGrad, LargePlanesInTheDocumentedOrder) {
    uint64_t seed = 200;
    for (const bool bf16 : {false, true})
        for (const int64_t N : {1, 3, 5})
            for (const int64_t P : {int64_t{16384}, int64_t{40003}}) {
                const int64_t C = 2;
                Grad g = makeGrad(N, C, P, bf16, seed++);
                if (P % 8 != 0) sprinkleNaNs(g, bf16, seed++);
                conv::View v;
                v.dtype = bf16 ? kBf16 : kFloat;
                v.dims = {N, C, P};
                v.strides = {C * P, P, 1};
                const std::vector<float> want = documented(g, N, C, P);
                for (const int threads : {1, 2}) {
                    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
                    std::vector<float> got(static_cast<size_t>(C), -1.0f);
                    conv::bias_grad(g.bytes.data(), v, got.data());
                    expectBits(got, want, std::string(bf16 ? "BF16" : "FLOAT") + " N " + std::to_string(N) + " P " + std::to_string(P) +
                                              " threads " + std::to_string(threads));
                }
            }
}

// The same values in strided layouts - rows padded to W + 3 elements, channels last - take the
// general path and give the dense bits: the order is by spatial index, not by memory.
TEST(BiasGrad, StridedViewsGiveTheDenseBits) {
    uint64_t seed = 100;
    for (const bool bf16 : {false, true})
        for (const int64_t N : {1, 3, 5, 8})
            for (const int64_t H : {1, 7, 14})
                for (const int64_t W : {1, 7, 17}) {
                    const int64_t C = 3, P = H * W, es = bf16 ? 2 : 4;
                    const Grad g = makeGrad(N, C, P, bf16, seed++);
                    const std::vector<float> want = documented(g, N, C, P);
                    const int64_t Wp = W + 3;
                    const std::vector<uint8_t> padded = paddedRows(g, N, C, H, W, es);
                    std::vector<uint8_t> last(g.bytes.size());
                    for (int64_t n = 0; n < N; ++n)
                        for (int64_t c = 0; c < C; ++c)
                            for (int64_t y = 0; y < H; ++y)
                                for (int64_t x = 0; x < W; ++x) {
                                    const uint8_t *e = g.bytes.data() + (((n * C + c) * H + y) * W + x) * es;
                                    std::memcpy(last.data() + (((n * H + y) * W + x) * C + c) * es, e, static_cast<size_t>(es));
                                }
                    conv::View v;
                    v.dtype = bf16 ? kBf16 : kFloat;
                    v.dims = {N, C, H, W};
                    const std::string what = std::string(bf16 ? "BF16" : "FLOAT") + " N " + std::to_string(N) + " H " +
                                             std::to_string(H) + " W " + std::to_string(W);
                    std::vector<float> got(static_cast<size_t>(C), -1.0f);
                    v.strides = {C * H * Wp, H * Wp, Wp, 1};
                    conv::bias_grad(padded.data(), v, got.data());
                    expectBits(got, want, what + " rows padded");
                    v.strides = {H * W * C, 1, W * C, C};
                    conv::bias_grad(last.data(), v, got.data());
                    expectBits(got, want, what + " channels last");
                }
}

// NaNs of several payloads and signs among the values: where NaNs meet, the earliest in the
// documented order survives, on the vector paths (dense planes: blocks of channels, and channel by
// channel past 1024 elements) and on the general one (rows padded) alike.
TEST(BiasGrad, NaNPayloadsInTheDocumentedOrder) {
    uint64_t seed = 300;
    int64_t nans = 0;
    for (const bool bf16 : {false, true})
        for (const int64_t N : {1, 3, 4, 5, 9})
            for (const auto &hw : {std::pair<int64_t, int64_t>{1, 7}, {7, 7}, {4, 17}, {34, 34}})
                for (const int64_t C : {3, 37}) {
                    const int64_t H = hw.first, W = hw.second, P = H * W, es = bf16 ? 2 : 4;
                    Grad g = makeGrad(N, C, P, bf16, seed++);
                    sprinkleNaNs(g, bf16, seed++);
                    const std::vector<float> want = documented(g, N, C, P);
                    for (const float w : want) nans += w != w;
                    const std::string what = std::string(bf16 ? "BF16" : "FLOAT") + " N " + std::to_string(N) + " C " +
                                             std::to_string(C) + " H " + std::to_string(H) + " W " + std::to_string(W);
                    conv::View v;
                    v.dtype = bf16 ? kBf16 : kFloat;
                    v.dims = {N, C, H, W};
                    v.strides = {C * P, P, W, 1};
                    std::vector<float> got(static_cast<size_t>(C), -1.0f);
                    conv::bias_grad(g.bytes.data(), v, got.data());
                    expectBits(got, want, what + " dense");
                    const std::vector<uint8_t> padded = paddedRows(g, N, C, H, W, es);
                    v.strides = {C * H * (W + 3), H * (W + 3), W + 3, 1};
                    conv::bias_grad(padded.data(), v, got.data());
                    expectBits(got, want, what + " rows padded");
                }
    EXPECT_GT(nans, 500);
}

}  // namespace
