// See blocked_store.hpp. The vector spelling transposes 16x16 tiles in registers (hardware gathers
// are slow on this Zen 4: 3x oneDNN's time) and stores each destination row's 16 values with one
// (masked) write; tails (channels or positions off 16) are masked lanes, never written.
#include "blocked_store.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "aclnn_cpu/transpose_avx512.hpp"
#include "cpu.hpp"

namespace conv {

namespace {

void put_scalar(void *dst, int64_t i, float v, OutDt t) {
    switch (t) {
        case OutDt::F32: static_cast<float *>(dst)[i] = v; break;
        case OutDt::F16: static_cast<uint16_t *>(dst)[i] = acp::float_to_half(v); break;
        case OutDt::BF16: static_cast<uint16_t *>(dst)[i] = acp::float_to_bf16(v); break;
    }
}

void acts_scalar(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                 OutDt t, int64_t cw) {
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            const float *blk = src + n * src_image + c / cw * cw * plane + c % cw;
            for (int64_t s = 0; s < plane; ++s) put_scalar(dst, n * dst_image + c * plane + s, blk[s * cw], t);
        }
}

void weights_scalar(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst, OutDt t,
                    int64_t ob0, int64_t ob1) {
    const int64_t IB = (I + 15) / 16;
    for (int64_t o = ob0 * 16; o < std::min(O, ob1 * 16); ++o)
        for (int64_t i = 0; i < I; ++i)
            for (int64_t k = 0; k < K; ++k) {
                const int64_t inner = o_inner ? (i % 16) * 16 + o % 16 : (o % 16) * 16 + i % 16;
                const int64_t at = ((o / 16 * IB + i / 16) * K + k) * 256 + inner;
                float v = parts[0][at];
                for (int64_t p = 1; p < n_parts; ++p) v += parts[p][at];
                put_scalar(dst, (o * I + i) * K + k, v, t);
            }
}

void block_scalar(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image, size_t es,
                  int64_t cw) {
    const auto *in = static_cast<const uint8_t *>(src);
    auto *out = static_cast<uint8_t *>(dst);
    const int64_t cpad = (C + cw - 1) / cw * cw;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < cpad; ++c)
            for (int64_t s = 0; s < plane; ++s) {
                uint8_t *o = out + static_cast<size_t>(n * dst_image + c / cw * cw * plane + s * cw + c % cw) * es;
                if (c < C) std::memcpy(o, in + static_cast<size_t>(n * src_image + c * plane + s) * es, es);
                else std::memset(o, 0, es);
            }
}

int64_t tile_at(int64_t o, int64_t i, int64_t k, int64_t OB, int64_t IB, int64_t K, WeightTiles tiles, bool a_outer) {
    const int64_t ob = o / 16, ib = i / 16, oi = o % 16, ii = i % 16;
    const int64_t tile = ((a_outer ? ob * IB + ib : ib * OB + ob) * K + k) * 256;
    return tile + (tiles == WeightTiles::F32_16a16b ? oi * 16 + ii : oi / 2 * 32 + ii * 2 + oi % 2);
}

void block_weights_scalar(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, WeightTiles tiles, bool a_outer,
                          void *dst) {
    const int64_t OB = (O + 15) / 16, IB = (I + 15) / 16;
    const size_t es = tiles == WeightTiles::F32_16a16b ? 4 : 2;
    const auto *in = static_cast<const uint8_t *>(src);
    auto *out = static_cast<uint8_t *>(dst);
    for (int64_t o = 0; o < OB * 16; ++o)
        for (int64_t i = 0; i < IB * 16; ++i)
            for (int64_t k = 0; k < K; ++k) {
                uint8_t *d = out + static_cast<size_t>(tile_at(o, i, k, OB, IB, K, tiles, a_outer)) * es;
                if (o < O && i < I) std::memcpy(d, in + static_cast<size_t>(o * o_stride + i * K + k) * es, es);
                else std::memset(d, 0, es);
            }
}

void mirror_scalar(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst) {
    const int64_t ipad = (I + l.B - 1) / l.B * l.B;
    for (int64_t i = 0; i < ipad; ++i)
        for (int64_t o = 0; o < O; ++o)
            for (int64_t k = 0; k < K; ++k)
                dst[(i / l.B) * l.ob_stride + o * l.ic_stride + l.k_off[k] + i % l.B] = i < I ? src[o * row + i * K + K - 1 - k] : 0.0f;
}

#if ACP_X86

// GCC 12: the maskz_ forms with all lanes set (acp::avx512::kAll), see numeric_avx512.hpp.
constexpr __mmask16 kAll = acp::avx512::kAll;

template <OutDt T>
ACP_AVX512 __attribute__((always_inline)) inline void put16(void *dst, int64_t i, __m512 v, __mmask16 m) {
    if constexpr (T == OutDt::F32) _mm512_mask_storeu_ps(static_cast<float *>(dst) + i, m, v);
    else if constexpr (T == OutDt::F16) _mm256_mask_storeu_epi16(static_cast<uint16_t *>(dst) + i, m, acp::avx512::to_half(v));
    else _mm256_mask_storeu_epi16(static_cast<uint16_t *>(dst) + i, m, acp::avx512::to_bf16(v));
}

ACP_AVX512 inline __mmask16 first(int64_t n) { return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1); }

using acp::avx512::transpose16;

// Positions in chunks of 16: 16 positions x 16 channels of the block (a 1 KiB slab of nC16c; NHWC:
// 16 rows a position apart), transposed to 16 channel rows of 16 positions. Tail positions load as
// zeros and are not stored; NHWC's channels past C are not read.
template <OutDt T>
ACP_AVX512 void acts_avx(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                        int64_t cw) {
    for (int64_t n = 0; n < N; ++n)
        for (int64_t cb = 0; cb * 16 < C; ++cb) {
            const float *blk = src + n * src_image + cb * 16 / cw * cw * plane + cb * 16 % cw;
            const int64_t cn = std::min<int64_t>(16, C - cb * 16);
            const __mmask16 mc = cw == 16 ? kAll : first(cn);
            const int64_t row0 = n * dst_image + cb * 16 * plane;
            for (int64_t s = 0; s < plane; s += 16) {
                const int64_t sn = std::min<int64_t>(16, plane - s);
                __m512 r[16];
                if (sn == 16) {
                    for (int64_t p = 0; p < 16; ++p) r[p] = _mm512_maskz_loadu_ps(mc, blk + (s + p) * cw);
                } else {
                    for (int64_t p = 0; p < 16; ++p) r[p] = p < sn ? _mm512_maskz_loadu_ps(mc, blk + (s + p) * cw) : _mm512_setzero_ps();
                }
                transpose16(r);
                const __mmask16 m = first(sn);
                for (int64_t c = 0; c < cn; ++c) put16<T>(dst, row0 + c * plane + s, r[c], m);
            }
        }
}

// One (output block, input block) at a time, a = one of its 16 rows of tiles (input channel when
// o_inner, else output channel): the K tile rows of a (16 values of the other channel, b, each)
// transposed by chunks of 16 kernel positions give, for each b, the K consecutive values
// dst[(o * I + i) * K + k]: one masked store each.
// 16 values at `at` of the sum of the parts, in part order.
ACP_AVX512 __attribute__((always_inline)) inline __m512 load_sum(const float *const *parts, int64_t n_parts, int64_t at) {
    __m512 v = _mm512_loadu_ps(parts[0] + at);
    for (int64_t p = 1; p < n_parts; ++p) v = _mm512_add_ps(v, _mm512_loadu_ps(parts[p] + at));
    return v;
}

template <OutDt T>
ACP_AVX512 void weights_avx(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, int64_t ob0,
                           int64_t ob1, void *dst) {
    const int64_t IB = (I + 15) / 16;
    for (int64_t ob = ob0; ob < ob1; ++ob)
        for (int64_t ib = 0; ib < IB; ++ib) {
            const int64_t blk = (ob * IB + ib) * K * 256;  // offset of the block in each part
            const int64_t on = std::min<int64_t>(16, O - ob * 16), in = std::min<int64_t>(16, I - ib * 16);
            const int64_t an = o_inner ? in : on, bn = o_inner ? on : in;
            const int64_t a_step = o_inner ? K : I * K, b_step = o_inner ? I * K : K;  // in dst
            const int64_t base = (ob * 16 * I + ib * 16) * K;
            if (K == 1) {  // one tile: rows i transposed to rows o (o_inner), or rows o already
                __m512 r[16];
                for (int64_t j = 0; j < 16; ++j) r[j] = load_sum(parts, n_parts, blk + j * 16);
                if (o_inner) transpose16(r);
                for (int64_t o = 0; o < on; ++o) put16<T>(dst, base + o * I, r[o], first(in));
                continue;
            }
            for (int64_t a = 0; a < an; ++a)
                for (int64_t k0 = 0; k0 < K; k0 += 16) {
                    const int64_t kn = std::min<int64_t>(16, K - k0);
                    __m512 r[16];
                    for (int64_t k = 0; k < 16; ++k) r[k] = k < kn ? load_sum(parts, n_parts, blk + (k0 + k) * 256 + a * 16) : _mm512_setzero_ps();
                    transpose16(r);
                    const __mmask16 m = first(kn);
                    for (int64_t b = 0; b < bn; ++b) put16<T>(dst, base + a * a_step + b * b_step + k0, r[b], m);
                }
        }
}

// 16 channels x 16 positions at a time, BF16 widened to 32-bit lanes for the transpose (bits kept);
// channels past C load as zeros (the padding of the last block), tail positions are not stored.
template <size_t ES>
ACP_AVX512 void block_avx(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                         int64_t cw) {
    using E = std::conditional_t<ES == 4, float, uint16_t>;
    const auto *in = static_cast<const E *>(src);
    auto *out = static_cast<E *>(dst);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t cb = 0; cb * 16 < C; ++cb) {
            const int64_t cn = std::min<int64_t>(16, C - cb * 16);
            const __mmask16 mc = cw == 16 ? kAll : first(cn);  // nC16c: the padding channels too (zeros)
            const E *rows = in + n * src_image + cb * 16 * plane;
            E *blk = out + n * dst_image + cb * 16 / cw * cw * plane + cb * 16 % cw;
            for (int64_t s = 0; s < plane; s += 16) {
                const int64_t sn = std::min<int64_t>(16, plane - s);
                const __mmask16 m = first(sn);
                __m512 r[16];
                for (int64_t c = 0; c < 16; ++c) {
                    if (c >= cn) r[c] = _mm512_setzero_ps();
                    else if constexpr (ES == 4) r[c] = _mm512_maskz_loadu_ps(m, rows + c * plane + s);
                    else r[c] = _mm512_castsi512_ps(_mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(m, rows + c * plane + s)));
                }
                transpose16(r);
                for (int64_t p = 0; p < sn; ++p) {
                    if constexpr (ES == 4) _mm512_mask_storeu_ps(blk + (s + p) * cw, mc, r[p]);
                    else _mm256_mask_storeu_epi16(blk + (s + p) * cw, mc, _mm512_maskz_cvtepi32_epi16(kAll, _mm512_castps_si512(r[p])));
                }
            }
        }
}

// Tiles ahead that block_weights_avx prefetches. Weights are read in runs of 16 * K values a row
// apart, which the hardware prefetchers leave to demand misses: 512x512x9 BF16 from memory, 1 thread,
// 1.07 -> 0.44 ms whole and 1.87 -> 0.52-0.85 ms in the 16 slices of a pass by channel blocks.
constexpr int64_t kWeightTilesAhead = 1;

// Per output channel o and chunk of 16 kernel positions: its 16 input rows (K consecutive values
// each) transposed give, for each k, the tile row of o (16 inputs). BF16 rows are widened to 32-bit
// lanes; a pair of output channels (even, odd) is then one row of 16 (even | odd << 16) words.
template <WeightTiles T>
ACP_AVX512 void block_weights_avx(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, bool a_outer, void *dst) {
    const int64_t OB = (O + 15) / 16, IB = (I + 15) / 16;
    for (int64_t ob = 0; ob < OB; ++ob)
        for (int64_t ib = 0; ib < IB; ++ib) {
            const int64_t on = std::min<int64_t>(16, O - ob * 16), in = std::min<int64_t>(16, I - ib * 16);
            const int64_t tile0 = (a_outer ? ob * IB + ib : ib * OB + ob) * K * 256;
            if (K == 1) {  // the 16 inputs of output o are contiguous: the tile row as it is
                const __mmask16 m = first(in);
                __m512 even = _mm512_setzero_ps();
                for (int64_t o = 0; o < 16; ++o) {
                    const int64_t row = (ob * 16 + o) * o_stride + ib * 16;
                    __m512 r = _mm512_setzero_ps();
                    if (o < on) {
                        if constexpr (T == WeightTiles::F32_16a16b) r = _mm512_maskz_loadu_ps(m, static_cast<const float *>(src) + row);
                        else r = _mm512_castsi512_ps(_mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(src) + row)));
                    }
                    if constexpr (T == WeightTiles::F32_16a16b) {
                        _mm512_storeu_ps(static_cast<float *>(dst) + tile0 + o * 16, r);
                    } else if (o % 2 == 0) {
                        even = r;
                    } else {
                        const __m512i w = _mm512_or_si512(_mm512_castps_si512(even), _mm512_maskz_slli_epi32(kAll, _mm512_castps_si512(r), 16));
                        _mm512_storeu_si512(static_cast<uint16_t *>(dst) + tile0 + o / 2 * 32, w);
                    }
                }
                continue;
            }
            {  // the rows of the tile kWeightTilesAhead on (16 runs of 16 * K values, a row stride apart;
                // K == 1: the hardware prefetchers do, in cache the prefetches cost 2x)
                const int64_t q = ob * IB + ib + kWeightTilesAhead, nib = q % IB, nob = q / IB;
                const int64_t es = T == WeightTiles::F32_16a16b ? 4 : 2;
                if (nob < OB)
                    for (int64_t o = 0; o < std::min<int64_t>(16, O - nob * 16); ++o)
                        acp::prefetch_lines(static_cast<const char *>(src) + ((nob * 16 + o) * o_stride + nib * 16 * K) * es,
                                       std::min<int64_t>(16, I - nib * 16) * K * es);
            }
            for (int64_t k0 = 0; k0 < K; k0 += 16) {
                const int64_t kn = std::min<int64_t>(16, K - k0);
                const __mmask16 m = first(kn);
                __m512 even[16];
                for (int64_t o = 0; o < 16; ++o) {
                    __m512 r[16];
                    const int64_t row = (ob * 16 + o) * o_stride + ib * 16 * K + k0;
                    for (int64_t i = 0; i < 16; ++i) {
                        if (o >= on || i >= in) r[i] = _mm512_setzero_ps();
                        else if constexpr (T == WeightTiles::F32_16a16b) r[i] = _mm512_maskz_loadu_ps(m, static_cast<const float *>(src) + row + i * K);
                        else
                            r[i] = _mm512_castsi512_ps(_mm512_maskz_cvtepu16_epi32(
                                kAll, _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(src) + row + i * K)));
                    }
                    transpose16(r);
                    if constexpr (T == WeightTiles::F32_16a16b) {
                        for (int64_t k = 0; k < kn; ++k) _mm512_storeu_ps(static_cast<float *>(dst) + tile0 + (k0 + k) * 256 + o * 16, r[k]);
                    } else if (o % 2 == 0) {
                        for (int64_t k = 0; k < kn; ++k) even[k] = r[k];
                    } else {
                        for (int64_t k = 0; k < kn; ++k) {
                            const __m512i w = _mm512_or_si512(_mm512_castps_si512(even[k]), _mm512_maskz_slli_epi32(kAll, _mm512_castps_si512(r[k]), 16));
                            _mm512_storeu_si512(static_cast<uint16_t *>(dst) + tile0 + (k0 + k) * 256 + o / 2 * 32, w);
                        }
                    }
                }
            }
        }
}

// For each block of 16 i and each o: the 16 source rows (o, i .. i + 15) are K consecutive values
// each, one 16 * K run; transposed, tap k's 16 values are one store at k_off[K - 1 - k].
ACP_AVX512 void mirror_avx(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst) {
    const __mmask16 mk = first(K);
    const int64_t ipad = (I + l.B - 1) / l.B * l.B;
    for (int64_t i0 = 0; i0 < ipad; i0 += 16) {
        float *blk = dst + (i0 / l.B) * l.ob_stride + i0 % l.B;
        const int64_t in = std::clamp<int64_t>(I - i0, 0, 16);
        for (int64_t o = 0; o < O; ++o) {
            __m512 r[16];
            const float *rows = src + o * row + i0 * K;
            for (int64_t j = 0; j < 16; ++j) r[j] = j < in ? _mm512_maskz_loadu_ps(mk, rows + j * K) : _mm512_setzero_ps();
            transpose16(r);
            for (int64_t k = 0; k < K; ++k) _mm512_storeu_ps(blk + o * l.ic_stride + l.k_off[K - 1 - k], r[k]);
        }
    }
}

ACP_AVX512 void acts_vec(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                        OutDt t, int64_t cw) {
    switch (t) {
        case OutDt::F32: return acts_avx<OutDt::F32>(src, N, C, plane, src_image, dst, dst_image, cw);
        case OutDt::F16: return acts_avx<OutDt::F16>(src, N, C, plane, src_image, dst, dst_image, cw);
        case OutDt::BF16: return acts_avx<OutDt::BF16>(src, N, C, plane, src_image, dst, dst_image, cw);
    }
}

ACP_AVX512 void weights_vec(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst,
                           OutDt t, int64_t ob0, int64_t ob1) {
    switch (t) {
        case OutDt::F32: return weights_avx<OutDt::F32>(parts, n_parts, O, I, K, o_inner, ob0, ob1, dst);
        case OutDt::F16: return weights_avx<OutDt::F16>(parts, n_parts, O, I, K, o_inner, ob0, ob1, dst);
        case OutDt::BF16: return weights_avx<OutDt::BF16>(parts, n_parts, O, I, K, o_inner, ob0, ob1, dst);
    }
}
#endif

}  // namespace

namespace detail {

void unblock_acts(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                  OutDt t, bool vec, ActLayout l) {
    const int64_t cw = l == ActLayout::C16 ? 16 : C;
#if ACP_X86
    if (vec) return acts_vec(src, N, C, plane, src_image, dst, dst_image, t, cw);
#endif
    acts_scalar(src, N, C, plane, src_image, dst, dst_image, t, cw);
}

void block_acts(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image, size_t es,
                bool vec, ActLayout l) {
    const int64_t cw = l == ActLayout::C16 ? 16 : C;
#if ACP_X86
    if (vec)
        return es == 4 ? block_avx<4>(src, N, C, plane, src_image, dst, dst_image, cw)
                       : block_avx<2>(src, N, C, plane, src_image, dst, dst_image, cw);
#endif
    block_scalar(src, N, C, plane, src_image, dst, dst_image, es, cw);
}

void block_weights(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, WeightTiles tiles, bool a_outer, void *dst,
                   bool vec) {
#if ACP_X86
    if (vec) {
        if (tiles == WeightTiles::F32_16a16b) return block_weights_avx<WeightTiles::F32_16a16b>(src, O, I, K, o_stride, a_outer, dst);
        return block_weights_avx<WeightTiles::BF16_8a16b2a>(src, O, I, K, o_stride, a_outer, dst);
    }
#endif
    block_weights_scalar(src, O, I, K, o_stride, tiles, a_outer, dst);
}

void unblock_weights(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst, OutDt t,
                     int64_t ob0, int64_t ob1, bool vec) {
#if ACP_X86
    if (vec) return weights_vec(parts, n_parts, O, I, K, o_inner, dst, t, ob0, ob1);
#endif
    weights_scalar(parts, n_parts, O, I, K, o_inner, dst, t, ob0, ob1);
}

void mirror_weights(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst, bool vec) {
#if ACP_X86
    if (vec) return mirror_avx(src, O, I, K, row, l, dst);
#endif
    mirror_scalar(src, O, I, K, row, l, dst);
}

}  // namespace detail

void mirror_weights(const float *src, int64_t O, int64_t I, int64_t K, int64_t row, const MirrorLayout &l, float *dst) {
    detail::mirror_weights(src, O, I, K, row, l, dst, cpu_has_avx512());
}

void unblock_acts(const float *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image,
                  OutDt t, ActLayout l) {
    detail::unblock_acts(src, N, C, plane, src_image, dst, dst_image, t, cpu_has_avx512(), l);
}

void block_acts(const void *src, int64_t N, int64_t C, int64_t plane, int64_t src_image, void *dst, int64_t dst_image, size_t es,
                ActLayout l) {
    detail::block_acts(src, N, C, plane, src_image, dst, dst_image, es, cpu_has_avx512(), l);
}

void block_weights(const void *src, int64_t O, int64_t I, int64_t K, int64_t o_stride, WeightTiles tiles, bool a_outer, void *dst) {
    detail::block_weights(src, O, I, K, o_stride, tiles, a_outer, dst, cpu_has_avx512());
}

void unblock_weights(const float *const *parts, int64_t n_parts, int64_t O, int64_t I, int64_t K, bool o_inner, void *dst, OutDt t,
                     int64_t ob0, int64_t ob1) {
    detail::unblock_weights(parts, n_parts, O, I, K, o_inner, dst, t, ob0, ob1, cpu_has_avx512());
}

}  // namespace conv
