#include "conv_kernels.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

namespace conv {

namespace {

constexpr int32_t kFloat = 0, kFloat16 = 1, kBf16 = 27;

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

#define CK_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
bool has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return has;
}
// The contiguous FLOAT / BF16 rows of row_sum, 16 at a time: elements i..i+7 then i+8..i+15 go to
// lanes 0..7 in that order, as in the scalar loop.
// Eight values at a time into the eight double lanes (maskz_ form: GCC 12's false
// -Wmaybe-uninitialized on the plain one).
CK_AVX512 void lanes_f32_avx(const float *f, int64_t n, double *lane) {
    __m512d acc = _mm512_loadu_pd(lane);
    for (int64_t i = 0; i < n / 16 * 16; i += 8) acc = _mm512_add_pd(acc, _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(f + i)));
    _mm512_storeu_pd(lane, acc);
}
CK_AVX512 void lanes_bf16_avx(const uint16_t *h, int64_t n, double *lane) {
    __m512d acc = _mm512_loadu_pd(lane);
    for (int64_t i = 0; i < n / 16 * 16; i += 8) {
        const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i))), 16);
        acc = _mm512_add_pd(acc, _mm512_maskz_cvtps_pd(0xff, _mm256_castsi256_ps(w)));
    }
    _mm512_storeu_pd(lane, acc);
}

// Sum of n elements `step` apart. Eight partial sums (element i goes to lane i % 8) combined in a
// fixed order: vectorizable, and the same bits on every run.
double row_sum(const uint8_t *p, int64_t n, int64_t step, int32_t dt) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const auto es = static_cast<int64_t>(acp::dtype_size(dt));
    int64_t i = 0;
    if (step == 1 && has_avx512() && (dt == kFloat || dt == kBf16)) {
        i = n / 16 * 16;
        if (dt == kFloat) lanes_f32_avx(reinterpret_cast<const float *>(p), n, lane);
        else lanes_bf16_avx(reinterpret_cast<const uint16_t *>(p), n, lane);
    } else if (dt == kFloat && step == 1) {
        const auto *f = reinterpret_cast<const float *>(p);
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; ++j) lane[j] += f[i + j];
    }
    for (; i < n; ++i) lane[i % 8] += load(p + i * step * es, dt);
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Channel c's rows (count rows of n contiguous FLOAT / BF16 elements, `gap` elements apart) summed
// exactly as row_sum sums each, then added in row order: the same bits, without a call and a
// dispatch per row (small planes have many short rows: 7x7 depthwise layers spent ~15 % here).
// Up to kRowsAtOnce rows side by side: a row's vector sum is one chain of dependent adds (3 cycles
// per 8 elements), and a long row's chain is longer than the CPU looks ahead, so one row at a time
// ran at the add latency (FLOAT 56x56 planes: -41 %, BF16 -10 %: its widening is the limit there;
// 7x7 and 14x14 planes: -5 to -8 %).
constexpr int64_t kRowsAtOnce = 4;

// Elements i .. i + 7 of a row as doubles (lanes at or past m: none loaded, zero).
template <bool BF16>
CK_AVX512 inline __m512d row_chunk(const uint8_t *row, int64_t i, __mmask8 m = 0xff) {
    __m256 f;
    if constexpr (BF16) {
        f = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t *>(row) + i)), 16));
    } else {
        f = _mm256_maskz_loadu_ps(m, reinterpret_cast<const float *>(row) + i);
    }
    return _mm512_maskz_cvtps_pd(0xff, f);
}

// R rows' lane sums: element i into lane i % 8 in index order, the last partial chunk by a masked
// add into the lanes it reaches (was a scalar loop per element).
template <bool BF16, int R>
CK_AVX512 inline void rows_lanes(const uint8_t *p, int64_t gap, int64_t n, double (*lane)[8]) {
    constexpr int64_t es = BF16 ? 2 : 4;
    const int64_t body = n / 8 * 8;
    __m512d v[R];
    for (int k = 0; k < R; ++k) v[k] = _mm512_setzero_pd();
    for (int64_t i = 0; i < body; i += 8)
        for (int k = 0; k < R; ++k) v[k] = _mm512_add_pd(v[k], row_chunk<BF16>(p + k * gap * es, i));
    if (body < n) {
        const auto m = static_cast<__mmask8>((1u << (n - body)) - 1);
        for (int k = 0; k < R; ++k) v[k] = _mm512_mask_add_pd(v[k], m, v[k], row_chunk<BF16>(p + k * gap * es, body, m));
    }
    for (int k = 0; k < R; ++k) _mm512_storeu_pd(lane[k], v[k]);
}

template <bool BF16>
CK_AVX512 double rows_sum_avx(const uint8_t *p, int64_t count, int64_t gap, int64_t n) {
    const int64_t es = BF16 ? 2 : 4;
    double acc = 0;
    auto add_row = [&](const double *l) { acc += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); };
    for (int64_t r0 = 0; r0 < count; r0 += kRowsAtOnce) {
        const int64_t rows = std::min(kRowsAtOnce, count - r0);
        const uint8_t *first = p + r0 * gap * es;
        double lane[kRowsAtOnce][8];
        switch (rows) {
            case 4: rows_lanes<BF16, 4>(first, gap, n, lane); break;
            case 3: rows_lanes<BF16, 3>(first, gap, n, lane); break;
            case 2: rows_lanes<BF16, 2>(first, gap, n, lane); break;
            default: rows_lanes<BF16, 1>(first, gap, n, lane); break;
        }
        for (int64_t k = 0; k < rows; ++k) add_row(lane[k]);
    }
    return acc;
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
    // Contiguous inner dims read as one longer row (same values, fewer calls).
    while (d[3] > 1 && s[3] == d[4] * s[4] && s[4] == 1) {
        d[4] *= d[3];
        d[3] = d[2], s[3] = s[2];
        d[2] = 1, s[2] = 0;
    }
    const auto es = static_cast<int64_t>(acp::dtype_size(v.dtype));
    const auto *base = static_cast<const uint8_t *>(g);
    // one row per image (contiguous planes): the whole channel in one vector loop
    const bool rows_avx = d[2] == 1 && d[3] == 1 && s[4] == 1 && has_avx512() && (v.dtype == kFloat || v.dtype == kBf16);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, d[1], 1), [&](const tbb::blocked_range<int64_t> &rc) {
        for (int64_t c = rc.begin(); c < rc.end(); ++c) {
            if (rows_avx) {
                const uint8_t *p = base + c * s[1] * es;
                const double acc = v.dtype == kBf16 ? rows_sum_avx<true>(p, d[0], s[0], d[4]) : rows_sum_avx<false>(p, d[0], s[0], d[4]);
                out[c] = static_cast<float>(acc);
                continue;
            }
            double acc = 0;
            for (int64_t n = 0; n < d[0]; ++n)
                for (int64_t z = 0; z < d[2]; ++z)
                    for (int64_t y = 0; y < d[3]; ++y)
                        acc += row_sum(base + (n * s[0] + c * s[1] + z * s[2] + y * s[3]) * es, d[4], s[4], v.dtype);
            out[c] = static_cast<float>(acc);
        }
    });
}

void add_bias(float *out, const float *bias, int64_t N, int64_t C, int64_t plane) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t nc = r.begin(); nc < r.end(); ++nc) {
            float *o = out + nc * plane;
            const float b = bias[nc % C];
            for (int64_t i = 0; i < plane; ++i) o[i] += b;
        }
    });
}

namespace {
CK_AVX512 void round_block_avx(const float *src, uint16_t *dst, bool half, int64_t n) {
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
    if (has_avx512()) {
        round_block_avx(src, out, half, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = half ? acp::float_to_half(src[i]) : acp::float_to_bf16(src[i]);
}

void round_store(const float *src, void *dst, int32_t dtype, int64_t n) {
    auto *out = static_cast<uint16_t *>(dst);
    const bool half = dtype == kFloat16;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 16), [&](const tbb::blocked_range<int64_t> &r) {
        if (has_avx512()) {
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
