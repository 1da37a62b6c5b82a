// include/aclnn_cpu/numeric_avx512.hpp against numeric.hpp: every vector conversion gives the
// scalar function's bits, 16 lanes at a time, on every BF16 / FLOAT16 encoding and on FLOAT bit
// patterns of every class (random, ties, subnormals, infinities, NaNs of every payload).
// to_bf16_no_subnormals (the CPU's vcvtneps2bf16) is held to float_to_bf16 on every FLOAT that is
// not subnormal - the promise its callers rely on - and shown to differ on subnormals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

namespace {

using acp::bits_of;
using acp::float_of;

bool cpu_has_avx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// FLOAT bit patterns of every class: random words, values near ties and with every low half, and
// subnormals, infinities, NaNs of both signs.
std::vector<uint32_t> float_patterns() {
    std::vector<uint32_t> v;
    std::mt19937 rng(11);
    for (int i = 0; i < (1 << 20); ++i) v.push_back(static_cast<uint32_t>(rng()));
    for (uint32_t upper = 0; upper <= 0xffff; upper += 7)
        for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x0fffu, 0x1000u}) v.push_back(upper << 16 | low);
    for (uint32_t s : {0u, 0x80000000u})
        for (uint32_t m : {0u, 1u, 0x3ffu, 0x400000u, 0x7fffffu, 0x12345u}) {
            v.push_back(s | m);               // zero, subnormals
            v.push_back(s | 0x7f800000u | m); // inf, NaNs
            v.push_back(s | 0x00800000u | m); // smallest normals
        }
    while (v.size() % 16) v.push_back(0);
    return v;
}

bool subnormal(uint32_t x) { return (x & 0x7f800000u) == 0 && (x & 0x7fffffu) != 0; }

__attribute__((target("avx512f,avx512bw,avx512vl"))) void to_16bit(const std::vector<uint32_t> &x, std::vector<uint16_t> &half,
                                                                   std::vector<uint16_t> &bf, std::vector<uint16_t> &bf_cpu,
                                                                   bool cpu) {
    for (size_t i = 0; i < x.size(); i += 16) {
        const __m512 v = _mm512_loadu_ps(x.data() + i);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(half.data() + i), acp::avx512::to_half(v));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(bf.data() + i), acp::avx512::to_bf16(v));
        if (cpu) _mm256_storeu_si256(reinterpret_cast<__m256i *>(bf_cpu.data() + i), acp::avx512::to_bf16_no_subnormals(v));
    }
}

TEST(NumericAvx512, FloatTo16BitMatchesTheScalarRounding) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    const std::vector<uint32_t> x = float_patterns();
    std::vector<uint16_t> half(x.size()), bf(x.size()), bf_cpu(x.size());
    const bool cpu = acp::avx512::kCpuConvertsBf16;
    to_16bit(x, half, bf, bf_cpu, cpu);
    int64_t subnormals = 0, flushed = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const float f = float_of(x[i]);
        ASSERT_EQ(half[i], acp::float_to_half(f)) << std::hex << x[i];
        ASSERT_EQ(bf[i], acp::float_to_bf16(f)) << std::hex << x[i];
        if (!cpu) continue;
        if (!subnormal(x[i])) {
            ASSERT_EQ(bf_cpu[i], acp::float_to_bf16(f)) << std::hex << x[i];
        } else {
            ++subnormals;
            flushed += bf_cpu[i] != acp::float_to_bf16(f);
        }
    }
    if (cpu) {
        EXPECT_GT(subnormals, 0);
        EXPECT_GT(flushed, 0) << "vcvtneps2bf16 reads subnormals as zero: the reason its callers must rule them out";
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void from_16bit(const std::vector<uint16_t> &h, std::vector<uint32_t> &half,
                                                                     std::vector<uint32_t> &bf) {
    for (size_t i = 0; i < h.size(); i += 16) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(h.data() + i));
        _mm512_storeu_ps(reinterpret_cast<float *>(half.data() + i), acp::avx512::from_half(v));
        _mm512_storeu_ps(reinterpret_cast<float *>(bf.data() + i), acp::avx512::from_bf16(v));
    }
}

TEST(NumericAvx512, Every16BitEncodingWidensAsTheScalarFunctions) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    std::vector<uint16_t> h(65536);
    for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
    std::vector<uint32_t> half(h.size()), bf(h.size());
    from_16bit(h, half, bf);
    for (uint32_t i = 0; i < 65536; ++i) {
        ASSERT_EQ(half[i], bits_of(acp::half_to_float(static_cast<uint16_t>(i)))) << std::hex << i;
        ASSERT_EQ(bf[i], bits_of(acp::bf16_to_float(static_cast<uint16_t>(i)))) << std::hex << i;
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void hf32(const std::vector<uint32_t> &x, std::vector<uint32_t> &out) {
    for (size_t i = 0; i < x.size(); i += 16)
        _mm512_storeu_ps(reinterpret_cast<float *>(out.data() + i), acp::avx512::round_hf32(_mm512_loadu_ps(x.data() + i)));
}

TEST(NumericAvx512, Hf32RoundingMatchesTheScalarOne) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    const std::vector<uint32_t> x = float_patterns();
    std::vector<uint32_t> out(x.size());
    hf32(x, out);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], bits_of(acp::round_to_hf32(float_of(x[i])))) << std::hex << x[i];
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void add_vectors(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b,
                                                                   std::vector<uint32_t> &sum, std::vector<uint32_t> &masked,
                                                                   std::vector<uint32_t> &lane) {
    for (size_t i = 0; i < a.size(); i += 16) {
        const __m512 x = _mm512_loadu_ps(a.data() + i), y = _mm512_loadu_ps(b.data() + i);
        _mm512_storeu_ps(reinterpret_cast<float *>(sum.data() + i), acp::avx512::add_ordered(x, y));
        const auto m = static_cast<__mmask16>(0xa5c3u ^ static_cast<unsigned>(i));
        _mm512_storeu_ps(reinterpret_cast<float *>(masked.data() + i), acp::avx512::add_ordered(x, m, y));
    }
    for (size_t i = 0; i < a.size(); ++i)
        lane[i] = bits_of(acp::avx512::add_ordered(float_of(a[i]), float_of(b[i])));
}

// The vector and one-lane spellings of add_ordered give the scalar function's bits (NaN pairs of
// different payloads included); the masked one leaves a in the lanes outside its mask.
TEST(NumericAvx512, AddOrderedMatchesTheScalarOne) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    const std::vector<uint32_t> a = float_patterns();
    std::vector<uint32_t> b(a.size());
    std::mt19937 rng(12);
    for (size_t i = 0; i < a.size(); ++i) b[i] = a[(i * 7919 + rng() % 13) % a.size()] ^ (rng() % 4 == 0 ? 0x00012300u : 0u);
    std::vector<uint32_t> sum(a.size()), masked(a.size()), lane(a.size());
    add_vectors(a, b, sum, masked, lane);
    int nan_pairs = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const uint32_t want = bits_of(acp::add_ordered(float_of(a[i]), float_of(b[i])));
        nan_pairs += float_of(a[i]) != float_of(a[i]) && float_of(b[i]) != float_of(b[i]) && a[i] != b[i];
        ASSERT_EQ(sum[i], want) << std::hex << a[i] << " + " << b[i];
        ASSERT_EQ(lane[i], want) << std::hex << a[i] << " + " << b[i];
        const bool in = ((0xa5c3u ^ static_cast<unsigned>(i / 16 * 16)) >> (i % 16)) & 1u;
        ASSERT_EQ(masked[i], in ? want : a[i]) << std::hex << a[i] << " + " << b[i];
    }
    EXPECT_GT(nan_pairs, 10);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void fma_vectors(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b,
                                                                    const std::vector<uint32_t> &c, std::vector<uint32_t> &full,
                                                                    std::vector<uint32_t> &masked, std::vector<uint32_t> &half) {
    for (size_t i = 0; i < a.size(); i += 16) {
        const __m512 x = _mm512_loadu_ps(a.data() + i), y = _mm512_loadu_ps(b.data() + i), z = _mm512_loadu_ps(c.data() + i);
        _mm512_storeu_ps(reinterpret_cast<float *>(full.data() + i), acp::avx512::fma_ordered(x, y, z));
        const auto m = static_cast<__mmask16>(0xa5c3u ^ static_cast<unsigned>(i));
        _mm512_storeu_ps(reinterpret_cast<float *>(masked.data() + i), acp::avx512::fma_ordered(x, y, z, m));
        for (size_t h = 0; h < 16; h += 8) {
            const auto m8 = static_cast<__mmask8>(m >> h);
            const __m256 r = acp::avx512::fma_ordered(_mm256_loadu_ps(reinterpret_cast<const float *>(a.data() + i + h)),
                                                      _mm256_loadu_ps(reinterpret_cast<const float *>(b.data() + i + h)),
                                                      _mm256_loadu_ps(reinterpret_cast<const float *>(c.data() + i + h)), m8);
            _mm256_storeu_ps(reinterpret_cast<float *>(half.data() + i + h), r);
        }
    }
}

// Doubles from float_patterns (widened: NaN payloads kept in the top bits) and a few doubles of their
// own, NaNs with low payload bits among them.
std::vector<uint64_t> double_patterns() {
    std::vector<uint64_t> v;
    for (const uint32_t f : float_patterns()) {
        const double d = static_cast<double>(float_of(f));
        uint64_t u;
        std::memcpy(&u, &d, 8);
        v.push_back(u);
    }
    for (const uint64_t x : {0x7ff8000000000001ull, 0xfff0000000000123ull, 0x7ff0000000000001ull, 0x8000000000000000ull,
                             0x3ff0000000000000ull, 0x7ff0000000000000ull})
        v.push_back(x);
    while (v.size() % 8) v.push_back(0);
    return v;
}

double double_of(uint64_t u) {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}
uint64_t bits_of_double(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

// Every double spelling of add_ordered on a and b: 8 lanes, 8 masked (lanes in m), 4, 2 and one.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void add_double_vectors(const std::vector<uint64_t> &a, const std::vector<uint64_t> &b,
                                                                           std::vector<uint64_t> (&out)[5]) {
    for (size_t i = 0; i < a.size(); i += 8) {
        const __m512d x = _mm512_loadu_pd(a.data() + i), y = _mm512_loadu_pd(b.data() + i);
        _mm512_storeu_pd(out[0].data() + i, acp::avx512::add_ordered(x, y));
        _mm512_storeu_pd(out[1].data() + i, acp::avx512::add_ordered(x, static_cast<__mmask8>(0xa5u ^ i), y));
        for (size_t h = 0; h < 8; h += 4)
            _mm256_storeu_pd(reinterpret_cast<double *>(out[2].data() + i + h),
                             acp::avx512::add_ordered(_mm256_loadu_pd(reinterpret_cast<const double *>(a.data() + i + h)),
                                                      _mm256_loadu_pd(reinterpret_cast<const double *>(b.data() + i + h))));
        for (size_t h = 0; h < 8; h += 2)
            _mm_storeu_pd(reinterpret_cast<double *>(out[3].data() + i + h),
                          acp::avx512::add_ordered(_mm_loadu_pd(reinterpret_cast<const double *>(a.data() + i + h)),
                                                   _mm_loadu_pd(reinterpret_cast<const double *>(b.data() + i + h))));
    }
    for (size_t i = 0; i < a.size(); ++i) out[4][i] = bits_of_double(acp::avx512::add_ordered(double_of(a[i]), double_of(b[i])));
}

// The double spellings of add_ordered give the scalar function's bits; the masked one leaves a
// outside its mask.
TEST(NumericAvx512, AddOrderedDoubleMatchesTheScalarOne) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    const std::vector<uint64_t> a = double_patterns();
    std::vector<uint64_t> b(a.size());
    std::mt19937 rng(14);
    for (size_t i = 0; i < a.size(); ++i) b[i] = a[(i * 7919 + rng() % 13) % a.size()] ^ (rng() % 4 == 0 ? 0x0001230000000000ull : 0u);
    std::vector<uint64_t> out[5];
    for (auto &o : out) o.resize(a.size());
    add_double_vectors(a, b, out);
    int nan_pairs = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double x = double_of(a[i]), y = double_of(b[i]);
        const uint64_t want = bits_of_double(acp::add_ordered(x, y));
        nan_pairs += x != x && y != y && a[i] != b[i];
        const bool in = ((0xa5u ^ static_cast<unsigned>(i / 8 * 8)) >> (i % 8)) & 1u;
        for (const int k : {0, 2, 3, 4}) ASSERT_EQ(out[k][i], want) << "form " << k << " " << std::hex << a[i] << " + " << b[i];
        ASSERT_EQ(out[1][i], in ? want : a[i]) << std::hex << a[i] << " + " << b[i];
    }
    EXPECT_GT(nan_pairs, 10);
}

// The 512- and 256-bit spellings of fma_ordered give the scalar function's bits (NaNs of different
// payloads meeting in all three operands included); the masked ones leave c outside their mask.
TEST(NumericAvx512, FmaOrderedMatchesTheScalarOne) {
    if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL) on this CPU: the vector spellings cannot run";
    std::vector<uint32_t> a = float_patterns();
    std::vector<uint32_t> b(a.size()), c(a.size());
    std::mt19937 rng(13);
    for (size_t i = 0; i < a.size(); ++i) {
        b[i] = a[(i * 7919 + rng() % 13) % a.size()] ^ (rng() % 4 == 0 ? 0x00012300u : 0u);
        c[i] = a[(i * 104729 + rng() % 17) % a.size()] ^ (rng() % 4 == 0 ? 0x00004500u : 0u);
    }
    // and every triple of specials: NaNs of different payloads and signs, a signalling one, infinities, zeros, one
    const uint32_t special[] = {0x7fc12340u, 0xffc00560u, 0x7f800011u, 0x7f800000u, 0xff800000u, 0u, 0x80000000u, 0x3f800000u};
    for (const uint32_t x : special)
        for (const uint32_t y : special)
            for (const uint32_t z : special) a.push_back(x), b.push_back(y), c.push_back(z ^ 0x100u * (z >> 31));
    while (a.size() % 16) a.push_back(0), b.push_back(0), c.push_back(0);
    std::vector<uint32_t> full(a.size()), masked(a.size()), half(a.size());
    fma_vectors(a, b, c, full, masked, half);
    int nan_triples = 0;
    const auto nan = [](uint32_t x) { return float_of(x) != float_of(x); };
    for (size_t i = 0; i < a.size(); ++i) {
        const uint32_t want = bits_of(acp::fma_ordered(float_of(a[i]), float_of(b[i]), float_of(c[i])));
        nan_triples += nan(a[i]) && nan(b[i]) && nan(c[i]) && a[i] != b[i] && b[i] != c[i];
        ASSERT_EQ(full[i], want) << std::hex << a[i] << " * " << b[i] << " + " << c[i];
        const bool in = ((0xa5c3u ^ static_cast<unsigned>(i / 16 * 16)) >> (i % 16)) & 1u;
        ASSERT_EQ(masked[i], in ? want : c[i]) << std::hex << a[i] << " * " << b[i] << " + " << c[i];
        ASSERT_EQ(half[i], in ? want : c[i]) << std::hex << a[i] << " * " << b[i] << " + " << c[i];
    }
    EXPECT_GT(nan_triples, 10);
}

}  // namespace
