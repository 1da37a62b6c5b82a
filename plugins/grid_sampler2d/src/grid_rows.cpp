// Row conversions (see grid_rows.hpp). The scalar forms define the bits; the AVX-512 forms use
// numeric_avx512.hpp, the one vector spelling of numeric.hpp.
#include "grid_rows.hpp"

#include <cstring>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

namespace gsamp {

bool use_avx512(Isa isa) { return isa != Isa::Scalar && cpu_has_avx512(); }

namespace {

template <class T>
T load_one(const void *p, Elem e, int64_t i) {
    switch (e) {
        case Elem::F32: {
            float f;
            std::memcpy(&f, static_cast<const char *>(p) + i * 4, 4);
            return static_cast<T>(f);
        }
        case Elem::F64: {
            double d;
            std::memcpy(&d, static_cast<const char *>(p) + i * 8, 8);
            return static_cast<T>(d);
        }
        default: {
            uint16_t u;
            std::memcpy(&u, static_cast<const char *>(p) + i * 2, 2);
            return static_cast<T>(e == Elem::F16 ? acp::half_to_float(u) : acp::bf16_to_float(u));
        }
    }
}

template <class T>
void store_one(void *p, Elem e, int64_t i, T v) {
    switch (e) {
        case Elem::F32: {
            const auto f = static_cast<float>(v);
            std::memcpy(static_cast<char *>(p) + i * 4, &f, 4);
            break;
        }
        case Elem::F64: {
            const auto d = static_cast<double>(v);
            std::memcpy(static_cast<char *>(p) + i * 8, &d, 8);
            break;
        }
        default: {
            // 16-bit results come from FLOAT compute only: one rounding, FLOAT -> 16 bits.
            const auto f = static_cast<float>(v);
            const uint16_t u = e == Elem::F16 ? acp::float_to_half(f) : acp::float_to_bf16(f);
            std::memcpy(static_cast<char *>(p) + i * 2, &u, 2);
        }
    }
}

template <class T>
void load_scalar(const void *src, Elem e, int64_t n, T *dst) {
    if (e == Elem::F32 && sizeof(T) == 4) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 4);
        return;
    }
    if (e == Elem::F64 && sizeof(T) == 8) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 8);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = load_one<T>(src, e, i);
}

template <class T>
void store_scalar(const T *src, int64_t n, Elem e, void *dst) {
    if (e == Elem::F32 && sizeof(T) == 4) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 4);
        return;
    }
    if (e == Elem::F64 && sizeof(T) == 8) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 8);
        return;
    }
    for (int64_t i = 0; i < n; ++i) store_one<T>(dst, e, i, src[i]);
}

#if ACP_X86
constexpr __mmask16 kAll = 0xffff;
// Lanes [0, n) (none for n <= 0, all for n >= 16).
ACP_AVX512 inline __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1u);
}

ACP_AVX512 void load_half_avx(const void *src, Elem e, int64_t n, float *dst) {
    const auto *s = static_cast<const uint16_t *>(src);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i);
        const __m256i h = _mm256_maskz_loadu_epi16(m, s + i);
        const __m512 f = e == Elem::F16 ? acp::avx512::from_half(h) : acp::avx512::from_bf16(h);
        if (m == kAll) _mm512_storeu_ps(dst + i, f);  // plain: a masked store would not forward to the reader
        else _mm512_mask_storeu_ps(dst + i, m, f);
    }
}

ACP_AVX512 void store_half_avx(const float *src, int64_t n, Elem e, void *dst) {
    auto *d = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i);
        const __m512 f = m == kAll ? _mm512_loadu_ps(src + i) : _mm512_maskz_loadu_ps(m, src + i);  // (likewise)
        const __m256i h = e == Elem::F16 ? acp::avx512::to_half(f) : acp::avx512::to_bf16(f);
        _mm256_mask_storeu_epi16(d + i, m, h);
    }
}
#endif

}  // namespace

void load_row(const void *src, Elem e, int64_t n, float *dst, bool avx) {
#if ACP_X86
    if (avx && (e == Elem::F16 || e == Elem::BF16)) return load_half_avx(src, e, n, dst);
#endif
    (void)avx;
    load_scalar(src, e, n, dst);
}
void load_row(const void *src, Elem e, int64_t n, double *dst, bool) { load_scalar(src, e, n, dst); }

void store_row(const float *src, int64_t n, Elem e, void *dst, bool avx) {
#if ACP_X86
    if (avx && (e == Elem::F16 || e == Elem::BF16)) return store_half_avx(src, n, e, dst);
#endif
    (void)avx;
    store_scalar(src, n, e, dst);
}
void store_row(const double *src, int64_t n, Elem e, void *dst, bool) { store_scalar(src, n, e, dst); }

}  // namespace gsamp
