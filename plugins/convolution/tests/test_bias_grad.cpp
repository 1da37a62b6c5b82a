// White-box test of the bias gradient (conv_kernels.cpp, compiled into this test): on dense NCHW
// FLOAT and BF16 gradients its per-channel sums have exactly the bits of the order it documents -
// per image row of the plane, element i into double lane i % 8 in index order, the lanes combined
// as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)), the images added in order from 0 - on image counts
// 1 to 9 (the AVX-512 spelling takes four images side by side: every remainder) and plane sizes
// around its 8-element step, up to rows of 272. Same bytes at 1 and 2 threads.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cstring>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "conv_kernels.hpp"

namespace {

constexpr int32_t kFloat = 0, kBf16 = 27;  // aclDataType values

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

// The documented order, written out.
std::vector<float> documented(const Grad &g, int64_t N, int64_t C, int64_t P) {
    std::vector<float> out;
    for (int64_t c = 0; c < C; ++c) {
        double acc = 0;
        for (int64_t n = 0; n < N; ++n) {
            double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int64_t i = 0; i < P; ++i) lane[i % 8] += static_cast<double>(g.value[static_cast<size_t>((n * C + c) * P + i)]);
            acc += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        }
        out.push_back(static_cast<float>(acc));
    }
    return out;
}

TEST(BiasGrad, DenseRowsInTheDocumentedOrder) {
    uint64_t seed = 1;
    for (const bool bf16 : {false, true})
        for (const int64_t N : {1, 2, 3, 4, 5, 6, 7, 8, 9})
            for (const int64_t H : {1, 4, 7, 14, 16}) {
                for (const int64_t W : {1, 4, 7, 14, 17}) {
                    const int64_t C = 3, P = H * W;
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
                        for (int64_t c = 0; c < C; ++c) {
                            uint32_t a, b;
                            std::memcpy(&a, &got[static_cast<size_t>(c)], 4);
                            std::memcpy(&b, &want[static_cast<size_t>(c)], 4);
                            EXPECT_EQ(a, b) << (bf16 ? "BF16" : "FLOAT") << " N " << N << " H " << H << " W " << W << " c " << c
                                            << " threads " << threads << ": " << got[static_cast<size_t>(c)] << " vs "
                                            << want[static_cast<size_t>(c)];
                        }
                    }
                }
            }
}

}  // namespace
