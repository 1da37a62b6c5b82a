#include "conv_kernels.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "cpu.hpp"

namespace conv {

namespace {

using acp::dt::kBf16;
using acp::dt::kFloat;
using acp::dt::kFloat16;
using acp::avx512::add_ordered;  // (lanes_total and add_row, built for any CPU, take acp::add_ordered)

double load(const uint8_t *p, int32_t dt) {
    if (dt == kFloat) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dt == kFloat16 ? acp::half_to_float(h) : acp::bf16_to_float(h);
}


// The order of a channel's sum, the same for any layout of gradOutput (a view and its dense copy
// give the same bits): the element at spatial index i of image n goes into double lane
// (n % kImageLanes, i % 8), each lane summed in (n, i) order; then per i % 8 lane j,
// (L0j + L1j) + (L2j + L3j), and the eight of those ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)).
// Four image slots are four independent chains of vector adds (one chain runs at the add
// latency); keying lanes by spatial index rather than by memory row keeps views and copies equal.
// Every add is add_ordered (numeric.hpp), so where NaNs meet the vector and scalar paths keep the
// same one: the earliest in this order.
constexpr int64_t kImageLanes = 4;
using ChannelLanes = double[kImageLanes][8];
constexpr int64_t kBiasSmallPlane = 1024;  // planes of at most this many elements: channels in blocks (block_sums_avx)
constexpr int64_t kBiasBlock = 16;         // channels per block
constexpr int64_t kBiasFetchPlane = 64 << 10;  // planes of at least this many bytes: fetched ahead (planes_lanes)

double lanes_total(const ChannelLanes &l) {
    double j[8];
    using acp::add_ordered;
    for (int k = 0; k < 8; ++k) j[k] = add_ordered(add_ordered(l[0][k], l[1][k]), add_ordered(l[2][k], l[3][k]));
    return add_ordered(add_ordered(add_ordered(j[0], j[1]), add_ordered(j[2], j[3])),
                       add_ordered(add_ordered(j[4], j[5]), add_ordered(j[6], j[7])));
}

// lanes_total of four image slots held in vectors (slot k's lane j in lane j of v[k]): the same
// adds in the same order, in registers. (Stored to a ChannelLanes and read back as scalars, the
// 64-byte stores cannot forward to the 8-byte loads: on an Intel Xeon that stall was 40 % of
// MobileNet's 7x7 gradBias.)
ACP_AVX512 double lanes_total_avx(const __m512d v[kImageLanes]) {
    const __m512d j = add_ordered(add_ordered(v[0], v[1]), add_ordered(v[2], v[3]));
    // pairs of neighbours, then pairs of those: (j0 + j1), (j2 + j3), ...; ((j0 + j1) + (j2 + j3)), ...
    const __m512i even = _mm512_set_epi64(6, 4, 2, 0, 6, 4, 2, 0), odd = _mm512_set_epi64(7, 5, 3, 1, 7, 5, 3, 1);
    const __m512d p = add_ordered(_mm512_maskz_permutexvar_pd(0xff, even, j), _mm512_maskz_permutexvar_pd(0xff, odd, j));
    const __m512d q = add_ordered(_mm512_maskz_permutexvar_pd(0xff, even, p), _mm512_maskz_permutexvar_pd(0xff, odd, p));
    return _mm512_cvtsd_f64(add_ordered(_mm512_maskz_permutexvar_pd(0xff, even, q), _mm512_maskz_permutexvar_pd(0xff, odd, q)));
}

// Eight values at a time into the eight double lanes (maskz_ form: GCC 12's false
// -Wmaybe-uninitialized on the plain one): elements 0 .. n / 8 * 8 of a row starting at a
// multiple of 8 of the plane.
ACP_AVX512 void lanes_f32_avx(const float *f, int64_t n, double *lane) {
    __m512d acc = _mm512_loadu_pd(lane);
    for (int64_t i = 0; i < n / 8 * 8; i += 8) acc = add_ordered(acc, _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(f + i)));
    _mm512_storeu_pd(lane, acc);
}
ACP_AVX512 void lanes_bf16_avx(const uint16_t *h, int64_t n, double *lane) {
    __m512d acc = _mm512_loadu_pd(lane);
    for (int64_t i = 0; i < n / 8 * 8; i += 8) {
        const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i))), 16);
        acc = add_ordered(acc, _mm512_maskz_cvtps_pd(0xff, _mm256_castsi256_ps(w)));
    }
    _mm512_storeu_pd(lane, acc);
}

// A row of n elements `step` apart whose first has spatial index i0, into its image's lanes.
void add_row(const uint8_t *p, int64_t n, int64_t step, int64_t i0, int32_t dt, double *lane) {
    const auto es = static_cast<int64_t>(acp::dtype_size(dt));
    int64_t i = 0;
    if (step == 1 && i0 % 8 == 0 && cpu_has_avx512() && (dt == kFloat || dt == kBf16)) {
        i = n / 8 * 8;
        if (dt == kFloat) lanes_f32_avx(reinterpret_cast<const float *>(p), n, lane);
        else lanes_bf16_avx(reinterpret_cast<const uint16_t *>(p), n, lane);
    }
    for (; i < n; ++i) lane[(i0 + i) % 8] = acp::add_ordered(lane[(i0 + i) % 8], load(p + i * step * es, dt));
}

// Elements i .. i + 7 of a row as doubles (lanes at or past m: none loaded, zero).
template <bool BF16>
ACP_AVX512 inline __m512d row_chunk(const uint8_t *row, int64_t i, __mmask8 m = 0xff) {
    __m256 f;
    if constexpr (BF16) {
        f = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t *>(row) + i)), 16));
    } else {
        f = _mm256_maskz_loadu_ps(m, reinterpret_cast<const float *>(row) + i);
    }
    return _mm512_maskz_cvtps_pd(0xff, f);
}

// R images' planes (n elements each, `gap` apart) into the lane vectors of slots 0 .. R - 1; the
// last partial chunk by a masked add into the lanes it reaches. Fetch: each plane's line
// kBiasFetchAhead bytes ahead requested into L1 as its first chunk is added (large planes on CPUs
// that prefer it: an Intel Xeon core streams 13 GB/s from memory on its hardware prefetchers
// alone; VGG-19's first layer, 103 MB of gradOutput, one thread: 5.4 -> 3.4 ms).
constexpr int64_t kBiasFetchAhead = 2048;
template <bool BF16, int R, bool Fetch = false>
ACP_AVX512 inline void planes_lanes(const uint8_t *p, int64_t gap, int64_t n, __m512d *v) {
    constexpr int64_t es = BF16 ? 2 : 4;
    const int64_t body = n / 8 * 8;
    for (int64_t i = 0; i < body; i += 8) {
        if constexpr (Fetch)
            if (i % (64 / es) == 0)
                for (int k = 0; k < R; ++k) acp::prefetch_line(p + (k * gap + i) * es + kBiasFetchAhead);
        for (int k = 0; k < R; ++k) v[k] = add_ordered(v[k], row_chunk<BF16>(p + k * gap * es, i));
    }
    if (body < n) {
        const auto m = static_cast<__mmask8>((1u << (n - body)) - 1);
        for (int k = 0; k < R; ++k) v[k] = add_ordered(v[k], m, row_chunk<BF16>(p + k * gap * es, body, m));
    }
}

// Channels [0, channels) of `count` dense planes of n elements each (`gap` elements from image to
// image, `cgap` from channel to channel) into out, in the documented order. Small planes come in
// blocks of channels, walked image by image in memory order (a channel's planes are an image apart,
// which the hardware prefetchers do not follow: channel by channel, 7x7 planes were latency-bound);
// larger ones one channel per call.
// Fetch: planes_lanes fetches ahead (large planes, cpu_prefers_software_prefetch).
template <bool BF16, bool Fetch>
ACP_AVX512 void block_sums_avx(const uint8_t *p, int64_t channels, int64_t cgap, int64_t count, int64_t gap, int64_t n, float *out) {
    constexpr int64_t es = BF16 ? 2 : 4;
    __m512d v[kBiasBlock][kImageLanes];
    for (int64_t c = 0; c < channels; ++c)
        for (auto &x : v[c]) x = _mm512_setzero_pd();
    int64_t r0 = 0;  // four images at a time (four independent chains), channel after channel: four streams
    for (; r0 + kImageLanes <= count; r0 += kImageLanes)
        for (int64_t c = 0; c < channels; ++c) {
            __m512d x[kImageLanes];  // in registers while the planes are added (v may alias p)
            for (int k = 0; k < kImageLanes; ++k) x[k] = v[c][k];
            planes_lanes<BF16, kImageLanes, Fetch>(p + (r0 * gap + c * cgap) * es, gap, n, x);
            for (int k = 0; k < kImageLanes; ++k) v[c][k] = x[k];
        }
    for (int64_t c = 0; c < channels; ++c) {
        const uint8_t *rest = p + (r0 * gap + c * cgap) * es;
        switch (count - r0) {
            case 3: planes_lanes<BF16, 3, Fetch>(rest, gap, n, v[c]); break;
            case 2: planes_lanes<BF16, 2, Fetch>(rest, gap, n, v[c]); break;
            case 1: planes_lanes<BF16, 1, Fetch>(rest, gap, n, v[c]); break;
            default: break;
        }
    }
    static_assert(kImageLanes == 4, "the switch above covers the remainders of 4");
    for (int64_t c = 0; c < channels; ++c) out[c] = static_cast<float>(lanes_total_avx(v[c]));
}

}  // namespace

void bias_grad(const void *g, const View &v, float *out) {
    const size_t r = v.dims.size();
    // (N, C, D, H, W) with missing spatial dims of extent 1
    int64_t d[5] = {v.dims[0], v.dims[1], 1, 1, 1}, s[5] = {v.strides[0], v.strides[1], 0, 0, 0};
    for (size_t i = 2; i < r; ++i) {
        d[5 - r + i] = v.dims[i];
        s[5 - r + i] = v.strides[i];
    }
    // Contiguous inner dims read as one longer row (same values, same spatial indices, fewer calls).
    while (d[3] > 1 && s[3] == d[4] * s[4] && s[4] == 1) {
        d[4] *= d[3];
        d[3] = d[2], s[3] = s[2];
        d[2] = 1, s[2] = 0;
    }
    const auto es = static_cast<int64_t>(acp::dtype_size(v.dtype));
    const auto *base = static_cast<const uint8_t *>(g);
    // one row per image (contiguous planes): vector loops over blocks of channels (block_sums_avx)
    const bool planes_avx = d[2] == 1 && d[3] == 1 && s[4] == 1 && cpu_has_avx512() && (v.dtype == kFloat || v.dtype == kBf16);
    if (planes_avx) {
        const int64_t block = d[4] <= kBiasSmallPlane ? kBiasBlock : 1;
        const bool fetch = d[4] * es >= kBiasFetchPlane && cpu_prefers_software_prefetch();
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, (d[1] + block - 1) / block, 1), [&](const tbb::blocked_range<int64_t> &rb) {
            for (int64_t b = rb.begin(); b < rb.end(); ++b) {
                const int64_t c0 = b * block, k = std::min(block, d[1] - c0);
                const auto sums = v.dtype == kBf16 ? (fetch ? &block_sums_avx<true, true> : &block_sums_avx<true, false>)
                                                   : (fetch ? &block_sums_avx<false, true> : &block_sums_avx<false, false>);
                sums(base + c0 * s[1] * es, k, s[1], d[0], s[0], d[4], out + c0);
            }
        });
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, d[1], 1), [&](const tbb::blocked_range<int64_t> &rc) {
        for (int64_t c = rc.begin(); c < rc.end(); ++c) {
            ChannelLanes lane = {};
            for (int64_t n = 0; n < d[0]; ++n)
                for (int64_t z = 0; z < d[2]; ++z)
                    for (int64_t y = 0; y < d[3]; ++y)
                        add_row(base + (n * s[0] + c * s[1] + z * s[2] + y * s[3]) * es, d[4], s[4], (z * d[3] + y) * d[4], v.dtype,
                                lane[n % kImageLanes]);
            out[c] = static_cast<float>(lanes_total(lane));
        }
    });
}

void add_bias(float *out, const float *bias, int64_t N, int64_t C, int64_t plane, int32_t round) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t nc = r.begin(); nc < r.end(); ++nc) {
            float *o = out + nc * plane;
            if (bias) {
                const float b = bias[nc % C];
                for (int64_t i = 0; i < plane; ++i) o[i] += b;
            }
            if (round != ACP_PREC_NATIVE)
                for (int64_t i = 0; i < plane; ++i) o[i] = acp::round_to_precision(o[i], round);
        }
    });
}

namespace {
ACP_AVX512 void round_block_avx(const float *src, uint16_t *dst, bool half, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(src + i);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + i), half ? acp::avx512::to_half(v) : acp::avx512::to_bf16(v));
    }
    for (; i < n; ++i) dst[i] = half ? acp::float_to_half(src[i]) : acp::float_to_bf16(src[i]);
}
}  // namespace

void round_store_serial(const float *src, void *dst, int32_t dtype, int64_t n) {
    auto *out = static_cast<uint16_t *>(dst);
    const bool half = dtype == kFloat16;
    if (cpu_has_avx512()) {
        round_block_avx(src, out, half, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = half ? acp::float_to_half(src[i]) : acp::float_to_bf16(src[i]);
}

void round_store(const float *src, void *dst, int32_t dtype, int64_t n) {
    auto *out = static_cast<uint16_t *>(dst);
    const bool half = dtype == kFloat16;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 16), [&](const tbb::blocked_range<int64_t> &r) {
        if (cpu_has_avx512()) {
            round_block_avx(src + r.begin(), out + r.begin(), half, r.end() - r.begin());
            return;
        }
        for (int64_t i = r.begin(); i < r.end(); ++i) out[i] = half ? acp::float_to_half(src[i]) : acp::float_to_bf16(src[i]);
    });
}

void zero_view(void *p, const View &v) {
    const size_t r = v.dims.size();
    for (const int64_t x : v.dims)
        if (x == 0) return;
    const auto es = static_cast<int64_t>(acp::dtype_size(v.dtype));
    std::vector<int64_t> idx(r, 0);
    auto *base = static_cast<uint8_t *>(p);
    for (;;) {
        int64_t off = 0;
        for (size_t i = 0; i < r; ++i) off += idx[i] * v.strides[i];
        std::memset(base + off * es, 0, static_cast<size_t>(es));
        size_t i = r;
        while (i > 0) {
            --i;
            if (++idx[i] < v.dims[i]) break;
            idx[i] = 0;
            if (i == 0) return;
        }
        if (r == 0) return;
    }
}

}  // namespace conv
