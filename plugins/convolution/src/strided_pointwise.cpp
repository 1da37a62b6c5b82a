#include "strided_pointwise.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "cpu.hpp"

namespace conv {

namespace {

// An extent or stride as (depth, height, width), missing dimensions 1.
struct Ext3 {
    int64_t d = 1, h = 1, w = 1;
};
Ext3 ext3(const Geometry &g, const std::array<int64_t, 3> &a) {
    if (g.sd == 1) return {1, 1, a[0]};
    if (g.sd == 2) return {1, a[0], a[1]};
    return {a[0], a[1], a[2]};
}

#if ACP_X86
ACP_AVX512 __mmask32 first32(int64_t n) {
    return n <= 0 ? 0 : n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << n) - 1);
}
ACP_AVX512 __mmask16 first16(int64_t n) { return static_cast<__mmask16>(first32(std::min<int64_t>(n, 16))); }

// Every second element of a row of w elements: out (w + 1) / 2 elements.
ACP_AVX512 void gather2_avx(const void *src, void *dst, size_t es, int64_t w, int64_t out) {
    for (int64_t j = 0; j < out; j += 16) {
        const int64_t in_left = w - 2 * j, n = std::min<int64_t>(out - j, 16);
        if (es == 2) {
            const __m512i v = _mm512_maskz_loadu_epi16(first32(in_left), static_cast<const uint16_t *>(src) + 2 * j);
            _mm256_mask_storeu_epi16(static_cast<uint16_t *>(dst) + j, first16(n), _mm512_maskz_cvtepi32_epi16(acp::avx512::kAll, v));
        } else {
            const float *s = static_cast<const float *>(src) + 2 * j;
            const __m512 a = _mm512_maskz_loadu_ps(first16(in_left), s);
            const __m512 b = _mm512_maskz_loadu_ps(first16(in_left - 16), s + 16);
            const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
            _mm512_mask_storeu_ps(static_cast<float *>(dst) + j, first16(n), _mm512_maskz_permutex2var_ps(acp::avx512::kAll, a, even, b));
        }
    }
}

// A row of w elements from `in` values at every second position (zeros between and after),
// rounded to t: each value widened to twice its size with a zero above it is the pair.
ACP_AVX512 void spread2_avx(const float *src, void *dst, OutDt t, int64_t w, int64_t in) {
    for (int64_t j = 0; 2 * j < w; j += 16) {
        const __mmask16 live = first16(in - j);
        const __mmask32 m = first32(w - 2 * j);
        if (t == OutDt::F32) {
            float *p = static_cast<float *>(dst) + 2 * j;
            const __m256i lo = _mm256_maskz_loadu_epi32(static_cast<__mmask8>(live), src + j);
            const __m256i hi = _mm256_maskz_loadu_epi32(static_cast<__mmask8>(live >> 8), src + j + 8);
            _mm512_mask_storeu_epi32(p, static_cast<__mmask16>(m), _mm512_maskz_cvtepu32_epi64(0xff, lo));
            _mm512_mask_storeu_epi32(p + 16, static_cast<__mmask16>(m >> 16), _mm512_maskz_cvtepu32_epi64(0xff, hi));
        } else {
            const __m512 v = _mm512_maskz_loadu_ps(live, src + j);
            const __m512i pairs = t == OutDt::BF16 ? _mm512_maskz_srli_epi32(acp::avx512::kAll, acp::avx512::to_bf16_high(v), 16)
                                                   : _mm512_maskz_cvtepu16_epi32(acp::avx512::kAll, acp::avx512::to_half(v));
            _mm512_mask_storeu_epi16(static_cast<uint16_t *>(dst) + 2 * j, m, pairs);
        }
    }
}
#endif

void gather_row(const uint8_t *src, uint8_t *dst, size_t es, int64_t w, int64_t out, int64_t step) {
#if ACP_X86
    if (step == 2 && cpu_has_avx512()) {
        gather2_avx(src, dst, es, w, out);
        return;
    }
#endif
    if (step == 1) {
        std::memcpy(dst, src, static_cast<size_t>(out) * es);
        return;
    }
    for (int64_t j = 0; j < out; ++j) std::memcpy(dst + static_cast<size_t>(j) * es, src + static_cast<size_t>(j * step) * es, es);
}

void put(float v, uint8_t *p, OutDt t) {
    if (t == OutDt::F32) {
        std::memcpy(p, &v, 4);
        return;
    }
    const uint16_t h = t == OutDt::BF16 ? acp::float_to_bf16(v) : acp::float_to_half(v);
    std::memcpy(p, &h, 2);
}

void spread_row(const float *src, uint8_t *dst, OutDt t, int64_t w, int64_t in, int64_t step) {
#if ACP_X86
    if (step == 2 && cpu_has_avx512()) {
        spread2_avx(src, dst, t, w, in);
        return;
    }
#endif
    const size_t es = out_size(t);
    std::memset(dst, 0, static_cast<size_t>(w) * es);
    for (int64_t j = 0; j < in; ++j) put(src[j], dst + static_cast<size_t>(j * step) * es, t);
}

// The sampled rows of plane p: f(offset of the row's first element in src).
template <class F>
void sampled_rows(const Ext3 &in, const Ext3 &out, const Ext3 &st, int64_t p, F f) {
    const int64_t plane = in.d * in.h * in.w;
    for (int64_t d = 0; d < out.d; ++d)
        for (int64_t h = 0; h < out.h; ++h) f(p * plane + (d * st.d * in.h + h * st.h) * in.w);
}

// Writes one contiguous span of bytes in order through a stage in L1: the whole 64-byte lines of
// the span with streaming stores when `stream` (a large gradInput is written once and not read back
// here: plain stores would read every line first - ResNet-50's ic512ih28 stride-2 layer, BF16, one
// thread: 11 GB/s plain), its partial first and last lines plainly.
class LineWriter {
public:
    static constexpr size_t kStage = 16384;
    LineWriter(uint8_t *dst, bool stream)
        : line_(dst - reinterpret_cast<uintptr_t>(dst) % 64), skip_(reinterpret_cast<uintptr_t>(dst) % 64), fill_(skip_), stream_(stream) {}
    // Room for the next n <= kStage - 64 bytes.
    uint8_t *next(size_t n) {
        if (fill_ + n > kStage) flush();
        return stage_ + fill_;
    }
    void commit(size_t n) { fill_ += n; }
    void finish() {
        flush();
        if (fill_ > skip_) std::memcpy(line_ + skip_, stage_ + skip_, fill_ - skip_);
#if ACP_X86
        if (stream_) _mm_sfence();  // streaming stores are weakly ordered: visible before the node reports done
#endif
    }

private:
    void flush() {
        const size_t lines = fill_ / 64;
        for (size_t i = 0; i < lines; ++i) {
            if (i == 0 && skip_ > 0) {
                std::memcpy(line_ + skip_, stage_ + skip_, 64 - skip_);
                continue;
            }
            if (stream_) stream_line(line_ + 64 * i, stage_ + 64 * i);
            else std::memcpy(line_ + 64 * i, stage_ + 64 * i, 64);
        }
        if (lines == 0) return;
        std::memcpy(stage_, stage_ + 64 * lines, fill_ % 64);
        line_ += 64 * lines;
        fill_ %= 64;
        skip_ = 0;
    }
    static void stream_line(uint8_t *dst, const uint8_t *src) {
#if ACP_X86
        const auto *s = reinterpret_cast<const __m128i *>(src);
        auto *d = reinterpret_cast<__m128i *>(dst);
        for (int k = 0; k < 4; ++k) _mm_stream_si128(d + k, _mm_load_si128(s + k));
#else
        std::memcpy(dst, src, 64);
#endif
    }
    alignas(64) uint8_t stage_[kStage];
    uint8_t *line_;  // where stage_[0] goes
    size_t skip_;    // leading bytes of the first line that are not the span's
    size_t fill_;    // bytes in the stage, skip_ included
    bool stream_;
};

}  // namespace

bool is_strided_pointwise(const Geometry &g, bool transposed) {
    if (transposed) return false;
    bool strided = false;
    for (int i = 0; i < g.sd; ++i) {
        if (g.k[static_cast<size_t>(i)] != 1 || g.pad_l[static_cast<size_t>(i)] != 0 || g.pad_r[static_cast<size_t>(i)] > 0) return false;
        strided = strided || g.stride[static_cast<size_t>(i)] > 1;
    }
    return strided;
}

Geometry sampled_geometry(const Geometry &g) {
    Geometry s = g;
    s.src = s.src_used = g.dst;
    s.stride = s.dil = {1, 1, 1};
    s.pad_l = s.pad_r = {0, 0, 0};
    return s;
}

void subsample(const void *src, void *dst, size_t es, const Geometry &g) {
    const Ext3 in = ext3(g, g.src), out = ext3(g, g.dst), st = ext3(g, g.stride);
    const auto *in_b = static_cast<const uint8_t *>(src);
    const int64_t planes = g.N * g.IC, row_bytes = in.w * static_cast<int64_t>(es);
    const int64_t out_plane = out.d * out.h * out.w;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, planes, 8), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t p = r.begin(); p < r.end(); ++p) {
            // the hardware prefetchers miss rows read with a stride (Zen 5): the rows of the plane
            // after next by hand
            if (p + 2 < r.end())
                sampled_rows(in, out, st, p + 2, [&](int64_t at) { acp::prefetch_lines(in_b + static_cast<size_t>(at) * es, row_bytes); });
            auto *to = static_cast<uint8_t *>(dst) + static_cast<size_t>(p * out_plane) * es;
            sampled_rows(in, out, st, p, [&](int64_t at) {
                gather_row(in_b + static_cast<size_t>(at) * es, to, es, in.w, out.w, st.w);
                to += static_cast<size_t>(out.w) * es;
            });
        }
    });
}

void expand_image(const float *sampled, void *dst, OutDt t, const Geometry &g, bool stream) {
    const Ext3 in = ext3(g, g.src), out = ext3(g, g.dst), st = ext3(g, g.stride);
    const size_t es = out_size(t), row_bytes = static_cast<size_t>(in.w) * es;
    const bool staged = row_bytes <= LineWriter::kStage / 2;  // else row by row in place
    LineWriter writer(static_cast<uint8_t *>(dst), stream);
    auto *direct = static_cast<uint8_t *>(dst);
    // sd / sh: the sampled plane / row at or before d / h; pd / ph: d / h past it (no division per row)
    for (int64_t c = 0; c < g.IC; ++c)
        for (int64_t d = 0, sd = 0, pd = 0; d < in.d; ++d) {
            for (int64_t h = 0, sh = 0, ph = 0; h < in.h; ++h) {
                uint8_t *row = staged ? writer.next(row_bytes) : direct;
                if (pd != 0 || ph != 0 || sd >= out.d || sh >= out.h)
                    std::memset(row, 0, row_bytes);
                else
                    spread_row(sampled + ((c * out.d + sd) * out.h + sh) * out.w, row, t, in.w, out.w, st.w);
                if (staged) writer.commit(row_bytes);
                direct += row_bytes;
                if (++ph == st.h) ph = 0, ++sh;
            }
            if (++pd == st.d) pd = 0, ++sd;
        }
    if (staged) writer.finish();
}

}  // namespace conv
