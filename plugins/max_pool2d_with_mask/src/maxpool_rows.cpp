// Row conversions (see maxpool_rows.hpp). The scalar forms define the bits; the AVX-512 forms use
// vcvtph2ps / vcvtps2ph (IEEE, round to nearest even, subnormals kept, NaN quieted keeping its top
// payload bits, exactly acp::float_to_half) and an integer form of acp::float_to_bf16 (the
// AVX512_BF16 instruction would flush subnormals).
#include "maxpool_rows.hpp"

#include <algorithm>
#include <cstring>

#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

namespace mpool {
namespace {

// The pending partial line's bytes out with plain stores (they share the line with bytes not ours).
void flush_pending(LineStream &ls) {
    if (ls.line) std::memcpy(ls.line + ls.lo, ls.buf + ls.lo, static_cast<size_t>(ls.hi - ls.lo));
    ls.line = nullptr;
}

float load_scalar(const char *p, DType dt) {
    if (dt == DType::F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t u;
    std::memcpy(&u, p, 2);
    return dt == DType::F16 ? acp::half_to_float(u) : acp::bf16_to_float(u);
}

void store_scalar(char *p, float v, DType dt) {
    if (dt == DType::F32) {
        std::memcpy(p, &v, 4);
        return;
    }
    const uint16_t u = dt == DType::F16 ? acp::float_to_half(v) : acp::float_to_bf16(v);
    std::memcpy(p, &u, 2);
}

#if ACP_X86
// The maxz_ forms with an all-ones mask dodge GCC 12's false -Wmaybe-uninitialized on the
// _mm512_undefined_*() inside the unmasked intrinsics.
constexpr __mmask16 kAll = 0xffff;

ACP_AVX512 inline __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1u);
}

// FLOAT16 / BF16 rounding with acp::avx512 (numeric_avx512.hpp): numeric.hpp's bits.
ACP_AVX512 inline __m256i half_of(__m512 v) { return acp::avx512::to_half(v); }
ACP_AVX512 inline __m256i bf16_of(__m512 v) { return acp::avx512::to_bf16(v); }

ACP_AVX512 inline __m512 widen_half(__m256i h) { return _mm512_maskz_cvtph_ps(kAll, h); }

ACP_AVX512 void load_row_avx(const char *src, int64_t n, DType dt, bool fp16, float *dst) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i);
        __m512 v;
        if (dt == DType::F32) {
            v = _mm512_maskz_loadu_ps(m, src + i * 4);
            if (fp16) v = widen_half(half_of(v));
        } else if (dt == DType::F16) {
            v = widen_half(_mm256_maskz_loadu_epi16(m, src + i * 2));
        } else {
            const __m512i u = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(m, src + i * 2));
            v = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, u, 16));
        }
        _mm512_mask_storeu_ps(dst + i, m, v);
    }
}

// 16 FLOATs as stored: FLOAT (fp16: rounded through FLOAT16) or the 16-bit pattern in a __m256i.
ACP_AVX512 inline __m512 f32_out(__m512 v, bool fp16) { return fp16 ? widen_half(half_of(v)) : v; }

// 16 source values at `at` (zeros without a source); with `clear` the source lanes become +0.
ACP_AVX512 inline __m512 src_vec(float *src, int64_t at, int64_t n, bool clear) {
    if (!src) return _mm512_setzero_ps();
    const __mmask16 m = tail16(n - at);
    const __m512 v = _mm512_maskz_loadu_ps(m, src + at);
    if (clear) _mm512_mask_storeu_ps(src + at, m, _mm512_setzero_ps());
    return v;
}

ACP_AVX512 inline __m256i narrow(__m512 v, DType dt) { return dt == DType::F16 ? half_of(v) : bf16_of(v); }

// Plain (masked) stores of elements [from, to).
ACP_AVX512 void store_plain(float *src, int64_t from, int64_t to, DType dt, bool fp16, char *dst, bool clear) {
    for (int64_t k = from; k < to; k += 16) {
        const __mmask16 m = tail16(to - k);
        const __m512 v = src_vec(src, k, to, clear);
        if (dt == DType::F32) _mm512_mask_storeu_ps(dst + k * 4, m, f32_out(v, fp16));
        else _mm256_mask_storeu_epi16(dst + k * 2, m, narrow(v, dt));
    }
}

// Elements [0, n) converted to dt bytes in out (n * es bytes).
ACP_AVX512 void convert_row(float *src, int64_t n, DType dt, bool fp16, uint8_t *out, bool clear) {
    store_plain(src, 0, n, dt, fp16, reinterpret_cast<char *>(out), clear);
}

ACP_AVX512 void line_out(char *line, const uint8_t *p) {
    _mm512_stream_si512(reinterpret_cast<__m512i *>(line), _mm512_loadu_si512(p));
}

ACP_AVX512 void stream_put(LineStream &ls, const uint8_t *p, int64_t n, char *dst) {
    if (ls.line && dst != ls.next) flush_pending(ls);  // not a continuation: the pending line ends here
    while (n > 0) {
        if (!ls.line) {
            if (reinterpret_cast<uintptr_t>(dst) % 64 == 0) {  // whole lines straight from the source
                for (; n >= 64; n -= 64, p += 64, dst += 64) line_out(dst, p);
                if (n == 0) break;
            }
            ls.line = dst - reinterpret_cast<uintptr_t>(dst) % 64;
            ls.lo = ls.hi = dst - ls.line;
        }
        const int64_t take = std::min<int64_t>(n, 64 - ls.hi);
        std::memcpy(ls.buf + ls.hi, p, static_cast<size_t>(take));
        ls.hi += take, p += take, dst += take, n -= take;
        if (ls.hi == 64) {
            if (ls.lo == 0) line_out(ls.line, ls.buf);
            else std::memcpy(ls.line + ls.lo, ls.buf + ls.lo, static_cast<size_t>(64 - ls.lo));
            ls.line = nullptr;
        }
    }
    ls.next = dst;
}

// One whole 64-byte line of dst from the 64 / es elements at src (nullptr: zeros), streamed.
ACP_AVX512 inline void line_direct(float *src, DType dt, bool fp16, char *line, bool clear) {
    const __m512 a = src_vec(src, 0, 16, clear);
    if (dt == DType::F32) {
        _mm512_stream_ps(reinterpret_cast<float *>(line), f32_out(a, fp16));
        return;
    }
    const __m512 b = src_vec(src, 16, 32, clear);
    _mm256_stream_si256(reinterpret_cast<__m256i *>(line), narrow(a, dt));  // both halves of the line
    _mm256_stream_si256(reinterpret_cast<__m256i *>(line + 32), narrow(b, dt));
}

ACP_AVX512 void store_row_avx(float *src, int64_t n, DType dt, bool fp16, char *dst, LineStream *ls, bool clear) {
    if (!ls) {
        store_plain(src, 0, n, dt, fp16, dst, clear);
        return;
    }
    const int64_t es = elem_size(dt), per_line = 64 / es;
    alignas(64) uint8_t bytes[1024];
    int64_t i = 0;
    while (i < n) {
        char *d = dst + i * es;
        const auto mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(d) % 64);
        if (mis == 0 && n - i >= per_line && (!ls->line || ls->next != d)) {
            // Whole lines straight from the row, without the staging copy (a pending line of
            // another run is completed first, as stream_put would).
            stream_put(*ls, bytes, 0, d);
            for (; n - i >= per_line; i += per_line) line_direct(src ? src + i : nullptr, dt, fp16, dst + i * es, clear);
            ls->next = dst + i * es;
            continue;
        }
        // Up to the next line boundary (or 256 elements, or the end) through the line stream.
        const int64_t k = std::min<int64_t>({n - i, mis ? (64 - mis) / es : 256, 256});
        convert_row(src ? src + i : nullptr, std::max<int64_t>(k, 1), dt, fp16, bytes, clear);
        stream_put(*ls, bytes, std::max<int64_t>(k, 1) * es, d);
        i += std::max<int64_t>(k, 1);
    }
}
#endif  // ACP_X86

}  // namespace

bool use_avx512(Isa isa) { return isa != Isa::Scalar && cpu_has_avx512(); }

float round_value(float v, DType dt, bool fp16_compute) {
    switch (dt) {
        case DType::F16: return acp::half_to_float(acp::float_to_half(v));
        case DType::BF16: return acp::bf16_to_float(acp::float_to_bf16(v));
        default: return fp16_compute ? acp::round_to_fp16(v) : v;
    }
}

void load_row(const char *src, int64_t stride, int64_t n, DType dt, bool fp16_compute, float *dst, bool avx) {
#if ACP_X86
    if (avx && stride == 1) {
        load_row_avx(src, n, dt, fp16_compute, dst);
        return;
    }
#else
    (void)avx;
#endif
    const int64_t es = elem_size(dt);
    for (int64_t i = 0; i < n; ++i) {
        const float v = load_scalar(src + i * stride * es, dt);
        dst[i] = dt == DType::F32 && fp16_compute ? acp::round_to_fp16(v) : v;
    }
}

namespace {
void store_any(float *src, int64_t n, DType dt, bool fp16_compute, char *dst, int64_t stride, bool avx,
               LineStream *ls, bool clear) {
#if ACP_X86
    if (avx && stride == 1) {
        store_row_avx(src, n, dt, fp16_compute, dst, ls, clear);
        return;
    }
#else
    (void)avx;
    (void)ls;
#endif
    const int64_t es = elem_size(dt);
    for (int64_t i = 0; i < n; ++i) {
        const float v = src ? src[i] : 0.0f;
        store_scalar(dst + i * stride * es, dt == DType::F32 && fp16_compute ? acp::round_to_fp16(v) : v, dt);
        if (src && clear) src[i] = 0.0f;
    }
}
}  // namespace

void store_row(const float *src, int64_t n, DType dt, bool fp16_compute, char *dst, int64_t stride, bool avx,
               LineStream *ls) {
    store_any(const_cast<float *>(src), n, dt, fp16_compute, dst, stride, avx, ls, false);  // never written
}

void store_row_clear(float *src, int64_t n, DType dt, bool fp16_compute, char *dst, int64_t stride, bool avx,
                     LineStream *ls) {
    store_any(src, n, dt, fp16_compute, dst, stride, avx, ls, true);
}

void store_bytes(const uint8_t *src, int64_t n, char *dst, LineStream *ls) {
#if ACP_X86
    if (ls) {
        stream_put(*ls, src, n, dst);
        return;
    }
#endif
    std::memcpy(dst, src, static_cast<size_t>(n));
}

#if ACP_X86
ACP_AVX512 uint8_t *stage_stream_begin(LineStream &ls, uint8_t *stage, char *dst) {
    if (ls.line && ls.next == dst) {  // a continuation: the pending line in front of the new bytes
        _mm512_store_si512(stage, _mm512_load_si512(ls.buf));
        return stage + ls.hi;
    }
    flush_pending(ls);
    ls.line = dst - reinterpret_cast<uintptr_t>(dst) % 64;
    ls.lo = ls.hi = dst - ls.line;
    return stage + ls.lo;
}

ACP_AVX512 void stage_stream_end(LineStream &ls, uint8_t *stage, int64_t n) {
    const int64_t total = ls.hi + n;
    char *const line = ls.line;
    ls.next = line + total;
    if (total < 64) {  // still one partial line
        _mm512_store_si512(ls.buf, _mm512_load_si512(stage));
        ls.hi = total;
        return;
    }
    int64_t i = 0;
    if (ls.lo > 0) {  // the first line is shared with bytes that are not ours: plain stores of ours
        _mm512_mask_storeu_epi8(line, ~__mmask64{0} << ls.lo, _mm512_load_si512(stage));
        i = 64;
    }
    for (; i + 64 <= total; i += 64) line_out(line + i, stage + i);
    if (i == total) {
        ls.line = nullptr;
        return;
    }
    _mm512_store_si512(ls.buf, _mm512_load_si512(stage + i));
    ls.line = line + i;
    ls.lo = 0;
    ls.hi = total - i;
}
#endif

void stream_finish(LineStream &ls) {
    flush_pending(ls);
    ls.next = nullptr;
#if ACP_X86
    if (cpu_has_avx512()) _mm_sfence();
#endif
}

}  // namespace mpool
