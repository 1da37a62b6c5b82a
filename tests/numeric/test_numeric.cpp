// The FLOAT16 / BF16 / HF32 conversions of include/aclnn_cpu/numeric.hpp against independent
// computations: exact values from the bit fields (ldexp in double), "nearest representable value,
// ties to the even encoding" found by search over the representable values, and the compiler's own
// _Float16 conversion (GCC on x86-64 converts with round-to-nearest-even).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <random>
#include <vector>

#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/plugin_abi.h"

namespace {

using acp::bits_of;
using acp::float_of;

// ---------------------------------------------------------------------------------------------
// Independent references
// ---------------------------------------------------------------------------------------------

// The exact value of a binary16 encoding (NaN for NaN encodings).
double half_value(uint16_t h) {
    const int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f) v = m ? std::nan("") : INFINITY;
    else if (e == 0) v = std::ldexp(static_cast<double>(m), -24);
    else v = std::ldexp(static_cast<double>(1024 + m), e - 25);
    return sign ? -v : v;
}

// Values of the non-negative binary16 encodings 0x0000..0x7c00, ascending; 0x7c00 stands for 2^16
// (the next power of two after the largest finite value), which makes overflow follow from RNE itself.
const std::vector<double> &half_ladder() {
    static const std::vector<double> v = [] {
        std::vector<double> out(0x7c01);
        for (uint32_t h = 0; h < 0x7c00; ++h) out[h] = half_value(static_cast<uint16_t>(h));
        out[0x7c00] = 65536.0;
        return out;
    }();
    return v;
}

// Nearest binary16 by search over the ladder, ties to the even encoding. NaN -> any NaN (0x7e00).
uint16_t ref_float_to_half(float f) {
    if (std::isnan(f)) return 0x7e00;
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(f));
    const auto &lad = half_ladder();
    if (a >= 65536.0) return sign | 0x7c00;
    // largest encoding whose value <= a
    const auto it = std::upper_bound(lad.begin(), lad.end(), a);
    const auto lo = static_cast<uint32_t>((it - lad.begin()) - 1);
    if (lad[lo] == a) return static_cast<uint16_t>(sign | lo);
    const uint32_t hi = lo + 1;
    const double dlo = a - lad[lo], dhi = lad[hi] - a;
    uint32_t r;
    if (dlo < dhi) r = lo;
    else if (dhi < dlo) r = hi;
    else r = (lo & 1u) ? hi : lo;
    return static_cast<uint16_t>(sign | r);
}

// Nearest float whose low `drop` bits are zero, ties to even, for finite x; the magnitude just past the
// largest such float is 2^128 (encoded as inf). Used for BF16 (drop 16) and HF32 (drop 12).
uint32_t ref_round_bits(uint32_t x, int drop) {
    const uint32_t sign = x & 0x80000000u, ax = x & 0x7fffffffu;
    const uint32_t mask = (1u << drop) - 1u;
    const uint32_t lo = ax & ~mask, hi = lo + (1u << drop);
    auto value = [](uint32_t bits) {
        return bits >= 0x7f800000u ? std::ldexp(1.0, 128) : static_cast<double>(float_of(bits));
    };
    const double a = value(ax), dlo = a - value(lo), dhi = value(hi) - a;
    uint32_t r;
    if (dlo < dhi) r = lo;
    else if (dhi < dlo) r = hi;
    else r = ((lo >> drop) & 1u) ? hi : lo;
    if (r >= 0x7f800000u) r = 0x7f800000u;
    return sign | r;
}

bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

uint16_t compiler_half(float f) {
    const volatile float vf = f;
    const _Float16 h = static_cast<_Float16>(vf);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}

float compiler_half_to_float(uint16_t b) {
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
}

// ---------------------------------------------------------------------------------------------
// FLOAT16
// ---------------------------------------------------------------------------------------------

TEST(Float16, EveryEncodingDecodesToItsExactValue) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float f = acp::half_to_float(static_cast<uint16_t>(h));
        const double want = half_value(static_cast<uint16_t>(h));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << h;
            ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
        } else {
            ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
            ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "sign of " << std::hex << h;  // -0 stays -0
        }
    }
}

TEST(Float16, DecodingMatchesTheCompiler) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float a = acp::half_to_float(static_cast<uint16_t>(h));
        const float b = compiler_half_to_float(static_cast<uint16_t>(h));
        if (std::isnan(b)) ASSERT_TRUE(std::isnan(a)) << std::hex << h;
        else ASSERT_EQ(bits_of(a), bits_of(b)) << std::hex << h;
    }
}

TEST(Float16, ExhaustiveRoundTrip) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const auto in = static_cast<uint16_t>(h);
        const uint16_t out = acp::float_to_half(acp::half_to_float(in));
        if (is_half_nan(in)) {
            ASSERT_TRUE(is_half_nan(out)) << "NaN " << std::hex << h << " became " << out;
            ASSERT_EQ(out & 0x8000, in & 0x8000) << "NaN sign " << std::hex << h;
        } else {
            ASSERT_EQ(out, in) << std::hex << h;
        }
    }
}

struct HalfCase {
    float in;
    uint16_t want;
    const char *what;
};

TEST(Float16, RoundToNearestEvenBoundaries) {
    const float two_m24 = std::ldexp(1.0f, -24), two_m25 = std::ldexp(1.0f, -25), two_m14 = std::ldexp(1.0f, -14);
    const HalfCase cases[] = {
        {0.0f, 0x0000, "zero"},
        {-0.0f, 0x8000, "negative zero keeps its sign"},
        {1.0f, 0x3c00, "one"},
        {-2.0f, 0xc000, "minus two"},
        {65504.0f, 0x7bff, "largest finite"},
        {65519.99f, 0x7bff, "just below the overflow midpoint"},
        {65520.0f, 0x7c00, "overflow midpoint rounds (to even) to inf"},
        {-65520.0f, 0xfc00, "negative overflow"},
        {1e10f, 0x7c00, "far overflow"},
        {INFINITY, 0x7c00, "inf"},
        {-INFINITY, 0xfc00, "-inf"},
        {two_m24, 0x0001, "smallest subnormal 2^-24"},
        {two_m25, 0x0000, "2^-25 is a tie: to even, zero"},
        {-two_m25, 0x8000, "-2^-25 rounds to -0"},
        {std::nextafter(two_m25, 1.0f), 0x0001, "just above 2^-25 rounds up"},
        {3.0f * std::ldexp(1.0f, -26), 0x0001, "3*2^-26 = 0.75 * 2^-24 rounds to 2^-24"},
        {3.0f * two_m25, 0x0002, "1.5 * 2^-24 is a tie: to even, 2*2^-24"},
        {5.0f * two_m25, 0x0002, "2.5 * 2^-24 is a tie: to even, 2*2^-24"},
        {std::ldexp(1.0f, -30), 0x0000, "tiny underflows to zero"},
        {two_m14 - two_m24, 0x03ff, "largest subnormal"},
        {two_m14 - two_m25, 0x0400, "tie between largest subnormal and smallest normal: to even"},
        {two_m14, 0x0400, "smallest normal"},
        {1.0f + std::ldexp(1.0f, -11), 0x3c00, "1 + half ulp: tie to even (down)"},
        {1.0f + 3.0f * std::ldexp(1.0f, -11), 0x3c02, "1 + 1.5 ulp: tie to even (up)"},
        {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3c01, "just above the tie rounds up"},
        {2047.5f, 0x6800, "2047.5 ties to 2048"},
        {2049.0f, 0x6800, "2049 ties to even 2048"},
        {2051.0f, 0x6802, "2051 ties to even 2052"},
    };
    for (const auto &c : cases) {
        EXPECT_EQ(acp::float_to_half(c.in), c.want) << c.what << " (0x" << std::hex << bits_of(c.in) << ")";
        EXPECT_EQ(ref_float_to_half(c.in), c.want) << "reference disagrees: " << c.what;
    }
}

TEST(Float16, NaNStaysNaNAndKeepsItsSign) {
    std::mt19937 rng(7);
    for (int i = 0; i < 100000; ++i) {
        uint32_t m = rng() & 0x7fffffu;
        if (!m) m = 1;
        const uint32_t sign = (i & 1) ? 0x80000000u : 0u;
        const float nan = float_of(sign | 0x7f800000u | m);
        const uint16_t h = acp::float_to_half(nan);
        ASSERT_TRUE(is_half_nan(h)) << std::hex << bits_of(nan) << " -> " << h;
        ASSERT_EQ((h & 0x8000) != 0, sign != 0);
        ASSERT_TRUE(std::isnan(acp::round_to_fp16(nan)));
    }
}

// Around every binary16 value: the midpoints to both neighbours (ties), one float ulp on either side
// of each midpoint, and the value itself.
TEST(Float16, EveryMidpointAgainstTheReference) {
    const auto &lad = half_ladder();
    auto check = [](float f) {
        ASSERT_EQ(acp::float_to_half(f), ref_float_to_half(f)) << std::hexfloat << f;
        ASSERT_EQ(acp::float_to_half(-f), ref_float_to_half(-f)) << std::hexfloat << -f;
    };
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        const float v = static_cast<float>(lad[h]);
        const float mid = static_cast<float>((lad[h] + lad[h + 1]) / 2);  // exact in float
        ASSERT_EQ(static_cast<double>(mid), (lad[h] + lad[h + 1]) / 2);
        check(v);
        check(mid);
        check(std::nextafter(mid, 0.0f));
        check(std::nextafter(mid, INFINITY));
    }
}

TEST(Float16, MillionsOfRandomFloatsMatchTheCompiler) {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> exp_in_range(-30, 17);
    uint64_t checked = 0;
    for (int i = 0; i < 2'000'000; ++i) {
        // half of the draws: any bit pattern; half: a magnitude near the binary16 range
        float f;
        if (i & 1) {
            f = float_of(static_cast<uint32_t>(rng()));
        } else {
            const uint32_t mant = rng() & 0x7fffffu;
            const int e = exp_in_range(rng) + 127;
            f = float_of((rng() & 0x80000000u) | (static_cast<uint32_t>(e) << 23) | mant);
        }
        const uint16_t got = acp::float_to_half(f), want = compiler_half(f);
        if (std::isnan(f)) {
            ASSERT_TRUE(is_half_nan(got));
            continue;
        }
        ASSERT_EQ(got, want) << std::hexfloat << f << " (0x" << std::hex << bits_of(f) << ")";
        ++checked;
    }
    EXPECT_GT(checked, 1'900'000u);
}

TEST(Float16, RandomFloatsMatchTheReference) {
    std::mt19937 rng(99);
    for (int i = 0; i < 300'000; ++i) {
        const uint32_t mant = rng() & 0x7fffffu;
        const int e = static_cast<int>(rng() % 48) - 30 + 127;
        const float f = float_of((rng() & 0x80000000u) | (static_cast<uint32_t>(e) << 23) | mant);
        ASSERT_EQ(acp::float_to_half(f), ref_float_to_half(f)) << std::hexfloat << f;
    }
}

// ---------------------------------------------------------------------------------------------
// BF16
// ---------------------------------------------------------------------------------------------

TEST(BFloat16, RoundToNearestEvenAgainstTheReference) {
    std::mt19937 rng(3);
    const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t upper = 0; upper <= 0xffff; ++upper) {
        if ((upper & 0x7f80u) == 0x7f80u) continue;  // inf / NaN: below
        for (int k = 0; k < 8; ++k) {
            const uint32_t low = k < 6 ? lows[k] : (rng() & 0xffffu);
            const uint32_t x = (upper << 16) | low;
            const uint16_t got = acp::float_to_bf16(float_of(x));
            const uint32_t want = ref_round_bits(x, 16);
            ASSERT_EQ(static_cast<uint32_t>(got) << 16, want) << std::hex << x;
        }
    }
}

TEST(BFloat16, Boundaries) {
    EXPECT_EQ(acp::float_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(acp::float_to_bf16(float_of(0x3f808000u)), 0x3f80) << "tie, even stays";
    EXPECT_EQ(acp::float_to_bf16(float_of(0x3f818000u)), 0x3f82) << "tie, odd rounds up";
    EXPECT_EQ(acp::float_to_bf16(float_of(0x3f808001u)), 0x3f81) << "above the tie";
    EXPECT_EQ(acp::float_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(acp::float_to_bf16(INFINITY), 0x7f80);
    EXPECT_EQ(acp::float_to_bf16(-INFINITY), 0xff80);
    EXPECT_EQ(acp::float_to_bf16(float_of(0x7f7fffffu)), 0x7f80) << "FLT_MAX rounds to inf";
    EXPECT_EQ(acp::float_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
}

TEST(BFloat16, DenormalsAreKeptNotFlushed) {
    EXPECT_EQ(acp::float_to_bf16(float_of(0x00010000u)), 0x0001);
    EXPECT_EQ(acp::float_to_bf16(float_of(0x00012345u)), 0x0001);
    EXPECT_EQ(acp::float_to_bf16(float_of(0x00018000u)), 0x0002) << "denormal tie to even";
    EXPECT_EQ(acp::float_to_bf16(float_of(0x80010000u)), 0x8001);
    EXPECT_EQ(acp::float_to_bf16(float_of(0x007fffffu)), 0x0080) << "largest denormal rounds to the smallest normal";
    EXPECT_EQ(bits_of(acp::bf16_to_float(0x0001)), 0x00010000u) << "a bf16 denormal decodes to a float denormal";
    EXPECT_EQ(bits_of(acp::round_to_bf16(float_of(0x00030000u))), 0x00030000u);
}

TEST(BFloat16, NaNIsQuietedAndKeepsSign) {
    for (uint32_t m : {0x000001u, 0x000100u, 0x010000u, 0x3fffffu, 0x400000u, 0x7fffffu}) {
        for (uint32_t sign : {0u, 0x80000000u}) {
            const uint32_t x = sign | 0x7f800000u | m;
            const uint16_t b = acp::float_to_bf16(float_of(x));
            EXPECT_EQ(b & 0x7f80, 0x7f80) << std::hex << x;
            EXPECT_NE(b & 0x7f, 0) << "NaN must stay NaN, not become inf: " << std::hex << x;
            EXPECT_NE(b & 0x40, 0) << "quiet bit: " << std::hex << x;
            EXPECT_EQ(b & 0x8000, sign >> 16);
        }
    }
}

TEST(BFloat16, EveryEncodingRoundTrips) {
    for (uint32_t b = 0; b <= 0xffff; ++b) {
        const float f = acp::bf16_to_float(static_cast<uint16_t>(b));
        EXPECT_EQ(bits_of(f), b << 16);
        const uint16_t back = acp::float_to_bf16(f);
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) ASSERT_TRUE((back & 0x7f80) == 0x7f80 && (back & 0x7f)) << std::hex << b;
        else ASSERT_EQ(back, b) << std::hex << b;
    }
}

// ---------------------------------------------------------------------------------------------
// HF32: FLOAT sign and exponent, 11 stored mantissa bits, round to nearest even
// ---------------------------------------------------------------------------------------------

TEST(HF32, RoundToNearestEvenAgainstTheReference) {
    std::mt19937 rng(11);
    const uint32_t lows[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff};
    for (uint32_t upper = 0; upper < (1u << 20); ++upper) {
        if (((upper << 12) & 0x7f800000u) == 0x7f800000u) continue;  // inf / NaN: below
        for (int k = 0; k < 7; ++k) {
            const uint32_t low = k < 6 ? lows[k] : (rng() & 0xfffu);
            const uint32_t x = (upper << 12) | low;
            const uint32_t got = bits_of(acp::round_to_hf32(float_of(x)));
            ASSERT_EQ(got, ref_round_bits(x, 12)) << std::hex << x;
        }
    }
}

TEST(HF32, KeepsElevenMantissaBits) {
    for (float f : {1.0f, 3.1415926f, -1e-20f, 123456.78f, 1e30f}) {
        const uint32_t r = bits_of(acp::round_to_hf32(f));
        EXPECT_EQ(r & 0xfffu, 0u) << f;
        EXPECT_LE(std::fabs(acp::round_to_hf32(f) - f), std::fabs(f) * std::ldexp(1.0f, -12)) << f;
    }
    EXPECT_EQ(bits_of(acp::round_to_hf32(float_of(0x3f800800u))), 0x3f800000u) << "tie, even stays";
    EXPECT_EQ(bits_of(acp::round_to_hf32(float_of(0x3f801800u))), 0x3f802000u) << "tie, odd rounds up";
    EXPECT_EQ(bits_of(acp::round_to_hf32(float_of(0x3f800801u))), 0x3f801000u) << "above the tie";
    EXPECT_EQ(bits_of(acp::round_to_hf32(float_of(0x3f8007ffu))), 0x3f800000u) << "below the tie";
    EXPECT_EQ(bits_of(acp::round_to_hf32(-0.0f)), 0x80000000u);
}

TEST(HF32, InfAndNaNAreLeftAlone) {
    for (uint32_t x : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffc00fffu, 0x7fbfffffu, 0x7f800fffu}) {
        EXPECT_EQ(bits_of(acp::round_to_hf32(float_of(x))), x) << std::hex << x;
    }
}

// ---------------------------------------------------------------------------------------------
// round_to_precision dispatch
// ---------------------------------------------------------------------------------------------

TEST(Precision, DispatchesToTheRightRounding) {
    std::mt19937 rng(5);
    for (int i = 0; i < 100000; ++i) {
        const float f = float_of((rng() & 0x80ffffffu) | (static_cast<uint32_t>(100 + rng() % 56) << 23));
        EXPECT_EQ(bits_of(acp::round_to_precision(f, ACP_PREC_NATIVE)), bits_of(f));
        EXPECT_EQ(bits_of(acp::round_to_precision(f, ACP_PREC_FP16)), bits_of(acp::half_to_float(acp::float_to_half(f))));
        EXPECT_EQ(bits_of(acp::round_to_precision(f, ACP_PREC_HF32)), ref_round_bits(bits_of(f), 12));
        EXPECT_EQ(bits_of(acp::round_to_precision(f, ACP_PREC_BF16)), ref_round_bits(bits_of(f), 16));
        if (::testing::Test::HasFailure()) break;
    }
}

TEST(Precision, RoundToFp16OverflowsAndKeepsSubnormals) {
    EXPECT_TRUE(std::isinf(acp::round_to_fp16(70000.0f)));
    EXPECT_EQ(acp::round_to_fp16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
    EXPECT_EQ(acp::round_to_fp16(std::ldexp(1.0f, -20) * 3.0f), std::ldexp(1.0f, -20) * 3.0f);
}

// add_ordered: a + b, keeping a's NaN where both are NaN (x86's first-source rule, on every
// compiler and CPU); otherwise the IEEE sum, and b's NaN when only b is one.
TEST(AddOrdered, KeepsTheFirstOfTwoNaNsAndIsTheSumOtherwise) {
    const float nan_a = acp::float_of(0x7fc12340u), nan_b = acp::float_of(0xffc00560u);
    const float snan_a = acp::float_of(0x7f812340u);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(nan_a, nan_b)), 0x7fc12340u);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(nan_b, nan_a)), 0xffc00560u);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(snan_a, nan_b)), 0x7fc12340u);  // quieted
    EXPECT_EQ(acp::bits_of(acp::add_ordered(1.5f, nan_b)), 0xffc00560u);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(nan_a, 2.0f)), 0x7fc12340u);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(std::isnan(acp::add_ordered(inf, -inf)));
    EXPECT_EQ(acp::add_ordered(inf, 1.0f), inf);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(-0.0f, 0.0f)), 0u);
    EXPECT_EQ(acp::bits_of(acp::add_ordered(-0.0f, -0.0f)), 0x80000000u);
    EXPECT_EQ(acp::add_ordered(0.1f, 0.2f), 0.1f + 0.2f);
}

// fma_ordered: a * b + c rounded once; where NaNs meet, a's first, then b's, then c's (x86's FMA
// rule, whatever the compiler and C library do with std::fma's factors); inf * 0 the default NaN.
TEST(FmaOrdered, KeepsTheFirstNaNOfItsOperandsInOrderAndIsTheFusedResultOtherwise) {
    const float nan_a = acp::float_of(0x7fc12340u), nan_b = acp::float_of(0xffc00560u), nan_c = acp::float_of(0x7fc00007u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(nan_a, nan_b, nan_c)), 0x7fc12340u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(nan_b, nan_a, nan_c)), 0xffc00560u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(1.0f, nan_b, nan_c)), 0xffc00560u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(1.0f, 2.0f, nan_c)), 0x7fc00007u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(acp::float_of(0x7f812340u), nan_b, 1.0f)), 0x7fc12340u);  // quieted
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(inf, 0.0f, 1.0f)), 0xffc00000u);
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(inf, 0.0f, nan_c)), 0x7fc00007u);
    EXPECT_TRUE(std::isnan(acp::fma_ordered(inf, 1.0f, -inf)));
    // rounded once: (1 + 2^-12)^2 - 1 keeps the 2^-24 a separate multiply would round away
    const float e = 1.0f + std::ldexp(1.0f, -12);
    EXPECT_EQ(acp::fma_ordered(e, e, -1.0f), std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
    EXPECT_EQ(acp::bits_of(acp::fma_ordered(-0.0f, 1.0f, -0.0f)), 0x80000000u);
}

}  // namespace
