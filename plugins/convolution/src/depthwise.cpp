#include "depthwise.hpp"

#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"

namespace conv {

namespace {

// Both plane kernels work on "flat" planes: a plane stored with a row pitch wider than its rows is
// walked as one array, 16 positions per vector whatever the row length, so small planes (7x7,
// 14x14) fill whole vectors. Positions in the pitch padding are computed and discarded (gradInput:
// compress-store of the valid lanes) or masked out (gradWeight). Every tap is a fixed flat offset.
// Two spellings with the same arithmetic per position (the plugin builds with -ffp-contract=off):
// AVX-512 and scalar.
#define DW_AVX512 __attribute__((target("avx512f")))
#define DW_AVX512BW_FN __attribute__((target("avx512f,avx512bw,avx512vl")))

bool has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }
int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }

double combine(const float *lane) {
    double s[8];
    for (int j = 0; j < 8; ++j) s[j] = static_cast<double>(lane[j]) + static_cast<double>(lane[j + 8]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

DW_AVX512 void bf16_row_avx(const uint16_t *h, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, acp::avx512::from_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(h + i))));
    for (; i < n; ++i) dst[i] = acp::bf16_to_float(h[i]);
}

// dst0[m] = src[2m], dst1[m] = src[2m+1] for m < n (src readable up to 2n + 32).
DW_AVX512 void deinterleave2_avx(const float *src, float *dst0, float *dst1, int64_t n) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t m = 0; m < n; m += 16) {
        const auto k = static_cast<__mmask16>(n - m >= 16 ? 0xffffu : (1u << (n - m)) - 1u);
        const __m512 a = _mm512_loadu_ps(src + 2 * m), b = _mm512_loadu_ps(src + 2 * m + 16);
        _mm512_mask_storeu_ps(dst0 + m, k, _mm512_permutex2var_ps(a, even, b));
        _mm512_mask_storeu_ps(dst1 + m, k, _mm512_permutex2var_ps(a, odd, b));
    }
}

// One source row of n elements (FLOAT or BF16, read with masked loads: never past the row) split
// by column parity: element 2m goes to even[m] (m < n_even), element 2m+1 to odd[m] (m < n_odd).
DW_AVX512BW_FN void split_row_avx(const void *src, int64_t offset, Dt dt, int64_t n, float *even, int64_t n_even, float *odd,
                                  int64_t n_odd) {
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    auto mask = [](int64_t left) { return static_cast<__mmask16>(left >= 16 ? 0xffffu : left <= 0 ? 0u : (1u << left) - 1u); };
    for (int64_t m = 0; m < n_even || m < n_odd; m += 16) {
        const int64_t at = 2 * m;
        const __mmask16 k0 = mask(n - at), k1 = mask(n - at - 16);
        __m512 a, b;
        if (dt == Dt::F32) {
            const float *f = static_cast<const float *>(src) + offset + at;
            a = _mm512_maskz_loadu_ps(k0, f);
            b = _mm512_maskz_loadu_ps(k1, f + 16);
        } else {
            const uint16_t *h = static_cast<const uint16_t *>(src) + offset + at;
            a = acp::avx512::from_bf16(_mm256_maskz_loadu_epi16(k0, h));
            b = acp::avx512::from_bf16(_mm256_maskz_loadu_epi16(k1, h + 16));
        }
        _mm512_mask_storeu_ps(even + m, mask(n_even - m), _mm512_permutex2var_ps(a, ev, b));
        _mm512_mask_storeu_ps(odd + m, mask(n_odd - m), _mm512_permutex2var_ps(a, od, b));
    }
}

// FLOAT to BF16 with numeric.hpp's rounding (its AVX-512 spelling when avx).
DW_AVX512 void bf16_store_avx(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + i), acp::avx512::to_bf16(_mm512_loadu_ps(src + i)));
    for (; i < n; ++i) dst[i] = acp::float_to_bf16(src[i]);
}
void bf16_store(const float *src, uint16_t *dst, int64_t n, bool avx) {
    if (avx) {
        bf16_store_avx(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = acp::float_to_bf16(src[i]);
}

DW_AVX512 void f32_row_avx(const float *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
    }
}

// n elements of a dense FLOAT or BF16 array, as FLOAT (exact). Rows here are short: no library calls.
void load_row(const void *src, int64_t offset, Dt dt, float *dst, int64_t n) {
    if (n <= 0) return;
    if (dt == Dt::F32) {
        if (has_avx512()) f32_row_avx(static_cast<const float *>(src) + offset, dst, n);
        else std::memcpy(dst, static_cast<const float *>(src) + offset, static_cast<size_t>(n) * sizeof(float));
        return;
    }
    const auto *h = static_cast<const uint16_t *>(src) + offset;
    if (has_avx512()) {
        bf16_row_avx(h, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = acp::bf16_to_float(h[i]);
}

// gradInput of one plane: out[position] = sum over taps t of taps[t] * U[f + off[t]], f the flat
// position (pitch Uw); valid[c] marks the lanes of chunk c inside the rows. The valid lanes are
// stored contiguously: the dense (H, W) plane.
struct InPlane {
    const float *U;
    const int64_t *off;
    const float *taps;
    const uint16_t *valid;
    int64_t chunks, kk;
    float *out;
};
DW_AVX512 void in_plane_avx(const InPlane &p) {
    float *dst = p.out;
    // two chunks per pass: independent accumulation chains
    for (int64_t c = 0; c < p.chunks; c += 2) {
        const bool two = c + 1 < p.chunks;
        const float *u = p.U + c * 16;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int64_t t = 0; t < p.kk; ++t) {
            const __m512 w = _mm512_set1_ps(p.taps[t]);
            acc0 = _mm512_add_ps(acc0, _mm512_mul_ps(w, _mm512_loadu_ps(u + p.off[t])));
            acc1 = _mm512_add_ps(acc1, _mm512_mul_ps(w, _mm512_loadu_ps(u + 16 + p.off[t])));
        }
        // register-form compress, then a prefix-masked store (compress-to-memory is microcoded on AMD)
        const auto m0 = static_cast<__mmask16>(p.valid[c]);
        const int n0 = __builtin_popcount(m0);
        _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n0) - 1u), _mm512_maskz_compress_ps(m0, acc0));
        dst += n0;
        if (two) {
            const auto m1 = static_cast<__mmask16>(p.valid[c + 1]);
            const int n1 = __builtin_popcount(m1);
            _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n1) - 1u), _mm512_maskz_compress_ps(m1, acc1));
            dst += n1;
        }
    }
}
void in_plane_scalar(const InPlane &p) {
    float *dst = p.out;
    for (int64_t c = 0; c < p.chunks; ++c)
        for (int l = 0; l < 16; ++l) {
            if (!(p.valid[c] >> l & 1)) continue;
            const float *u = p.U + c * 16 + l;
            float acc = 0.0f;
            for (int64_t t = 0; t < p.kk; ++t) acc = acc + p.taps[t] * u[p.off[t]];
            *dst++ = acc;
        }
}

// gradWeight of one plane: acc[t] (16 lanes, lane = flat position % 16) += gy[f] * X[t][f + off[t]]
// over the valid flat positions f (pitch Mw) of the gradient plane.
struct WPlane {
    const float *gy;
    const float *const *x;  // per tap: its stride phase plane
    const int64_t *off;
    const uint16_t *valid;
    int64_t chunks, kk;
    float *acc;  // kk x 16, accumulated
};
DW_AVX512 void w_plane_avx(const WPlane &p) {
    for (int64_t t = 0; t < p.kk; ++t) {
        __m512 a = _mm512_loadu_ps(p.acc + t * 16);
        const float *x = p.x[t] + p.off[t];
        for (int64_t c = 0; c < p.chunks; ++c) {
            const auto m = static_cast<__mmask16>(p.valid[c]);
            a = _mm512_mask_add_ps(a, m, a, _mm512_mul_ps(_mm512_loadu_ps(p.gy + c * 16), _mm512_loadu_ps(x + c * 16)));
        }
        _mm512_storeu_ps(p.acc + t * 16, a);
    }
}
void w_plane_scalar(const WPlane &p) {
    for (int64_t t = 0; t < p.kk; ++t) {
        float *a = p.acc + t * 16;
        const float *x = p.x[t] + p.off[t];
        for (int64_t c = 0; c < p.chunks; ++c)
            for (int l = 0; l < 16; ++l)
                if (p.valid[c] >> l & 1) a[l] = a[l] + p.gy[c * 16 + l] * x[c * 16 + l];
    }
}

// Lane masks of a flat walk: lane l of chunk c is valid when f = 16c + l < rows*pitch and f % pitch < width.
std::vector<uint16_t> lane_masks(int64_t rows, int64_t pitch, int64_t width) {
    std::vector<uint16_t> v(static_cast<size_t>(up16(rows * pitch) / 16), 0);
    for (int64_t f = 0; f < rows * pitch; ++f)
        if (f % pitch < width) v[static_cast<size_t>(f / 16)] |= static_cast<uint16_t>(1u << (f % 16));
    return v;
}

// The worker's scratch slot. Every thread of the arena (workers and the joining caller) has its own index.
template <class T>
T *slot(void *scratch, uint64_t slot_bytes, int slots) {
    const int i = tbb::this_task_arena::current_thread_index();
    if (i < 0 || i >= slots) throw std::runtime_error("depthwise: thread index outside the planned scratch slots");
    return reinterpret_cast<T *>(static_cast<uint8_t *>(scratch) + static_cast<uint64_t>(i) * slot_bytes);
}

// ---- stride 1, output plane = input plane ("same" padding): no copies at all ----
// Both kernels read the caller's planes directly. Tap t is a fixed flat offset; mask[t][c] holds the
// lanes of chunk c whose tap lands inside the plane (the others add nothing, whatever lies there).
#define DW_AVX512BW __attribute__((target("avx512f,avx512bw,avx512vl")))

struct SamePlane {
    const void *src;        // the plane the taps read (gradient for gradInput, input for gradWeight)
    const void *lead;       // gradWeight: the gradient plane multiplying each tap
    const int64_t *off;
    const uint16_t *mask;   // kk x chunks
    const float *taps;      // gradInput
    int64_t chunks, kk, n;  // n = positions in the plane
    bool bf16;              // planes (and the gradInput result) are BF16
    void *out;              // gradInput: the result plane
    float *acc;             // gradWeight: kk x 16 lane accumulators
};

template <bool BF16>
DW_AVX512BW inline __m512 load16(const void *base, int64_t at, __mmask16 m) {
    if constexpr (BF16) return acp::avx512::from_bf16(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(base) + at));
    else return _mm512_maskz_loadu_ps(m, static_cast<const float *>(base) + at);
}

template <bool BF16>
DW_AVX512BW inline void same_in_store(void *out, int64_t n, int64_t c, __m512 acc) {
    const auto keep = static_cast<__mmask16>(n - c * 16 >= 16 ? 0xffffu : (1u << (n - c * 16)) - 1u);
    if constexpr (BF16) _mm256_mask_storeu_epi16(static_cast<uint16_t *>(out) + c * 16, keep, acp::avx512::to_bf16(acc));
    else _mm512_mask_storeu_ps(static_cast<float *>(out) + c * 16, keep, acc);
}
template <bool BF16>
DW_AVX512BW void same_in_avx_t(const SamePlane &p) {
    const int64_t chunks = p.chunks, kk = p.kk, n = p.n;
    const uint16_t *mask = p.mask;
    const int64_t *off = p.off;
    const float *taps = p.taps;
    const void *src = p.src;
    // two chunks per pass: independent accumulation chains
    for (int64_t c = 0; c < chunks; c += 2) {
        const bool two = c + 1 < chunks;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int64_t t = 0; t < kk; ++t) {
            const __m512 w = _mm512_set1_ps(taps[t]);
            const auto m0 = static_cast<__mmask16>(mask[t * chunks + c]);
            acc0 = _mm512_mask_add_ps(acc0, m0, acc0, _mm512_mul_ps(w, load16<BF16>(src, c * 16 + off[t], m0)));
            if (two) {
                const auto m1 = static_cast<__mmask16>(mask[t * chunks + c + 1]);
                acc1 = _mm512_mask_add_ps(acc1, m1, acc1, _mm512_mul_ps(w, load16<BF16>(src, c * 16 + 16 + off[t], m1)));
            }
        }
        same_in_store<BF16>(p.out, n, c, acc0);
        if (two) same_in_store<BF16>(p.out, n, c + 1, acc1);
    }
}
void same_in_avx(const SamePlane &p) {
    if (p.bf16) same_in_avx_t<true>(p);
    else same_in_avx_t<false>(p);
}
float load1(const void *base, int64_t at, bool bf16) {
    return bf16 ? acp::bf16_to_float(static_cast<const uint16_t *>(base)[at]) : static_cast<const float *>(base)[at];
}
void same_in_scalar(const SamePlane &p) {
    for (int64_t f = 0; f < p.n; ++f) {
        float acc = 0.0f;
        for (int64_t t = 0; t < p.kk; ++t)
            if (p.mask[t * p.chunks + f / 16] >> (f % 16) & 1) acc = acc + p.taps[t] * load1(p.src, f + p.off[t], p.bf16);
        if (p.bf16) static_cast<uint16_t *>(p.out)[f] = acp::float_to_bf16(acc);
        else static_cast<float *>(p.out)[f] = acc;
    }
}

template <bool BF16>
DW_AVX512BW void same_w_avx_t(const SamePlane &p) {
    const int64_t chunks = p.chunks, kk = p.kk, n = p.n;
    const void *lead = p.lead, *src = p.src;
    // two taps per pass, each summing the whole plane in one register (lane order as the scalar spelling)
    for (int64_t t = 0; t < kk; t += 2) {
        const bool two = t + 1 < kk;
        __m512 a0 = _mm512_loadu_ps(p.acc + t * 16), a1 = two ? _mm512_loadu_ps(p.acc + t * 16 + 16) : _mm512_setzero_ps();
        const uint16_t *mask0 = p.mask + t * chunks, *mask1 = mask0 + chunks;
        const int64_t off0 = p.off[t], off1 = two ? p.off[t + 1] : 0;
        for (int64_t c = 0; c < chunks; ++c) {
            const auto keep = static_cast<__mmask16>(n - c * 16 >= 16 ? 0xffffu : (1u << (n - c * 16)) - 1u);
            const __m512 g = load16<BF16>(lead, c * 16, keep);
            const auto m0 = static_cast<__mmask16>(mask0[c]);
            a0 = _mm512_mask_add_ps(a0, m0, a0, _mm512_mul_ps(g, load16<BF16>(src, c * 16 + off0, m0)));
            if (two) {
                const auto m1 = static_cast<__mmask16>(mask1[c]);
                a1 = _mm512_mask_add_ps(a1, m1, a1, _mm512_mul_ps(g, load16<BF16>(src, c * 16 + off1, m1)));
            }
        }
        _mm512_storeu_ps(p.acc + t * 16, a0);
        if (two) _mm512_storeu_ps(p.acc + t * 16 + 16, a1);
    }
}
void same_w_avx(const SamePlane &p) {
    if (p.bf16) same_w_avx_t<true>(p);
    else same_w_avx_t<false>(p);
}
void same_w_scalar(const SamePlane &p) {
    for (int64_t t = 0; t < p.kk; ++t)
        for (int64_t f = 0; f < p.n; ++f)
            if (p.mask[t * p.chunks + f / 16] >> (f % 16) & 1) {
                float &a = p.acc[t * 16 + f % 16];
                a = a + load1(p.lead, f, p.bf16) * load1(p.src, f + p.off[t], p.bf16);
            }
}

}  // namespace

// Measured (single thread, MobileNet layers): the channel-blocked kernels win with stride 2 and on
// larger BF16 planes; the plane kernels on small stride-1 planes.
bool DepthwisePass::blocked_applies() const {
    return sh > 1 || sw > 1 || (dt_ == Dt::BF16 && H * W > 1024);
}

bool DepthwisePass::applies(const Geometry &g, bool transposed) {
    return !transposed && g.sd <= 2 && g.G > 1 && g.G == g.IC && g.IC == g.OC && g.k_size() <= kMaxTaps;
}

DepthwisePass::DepthwisePass(const Geometry &g, Dt dt, int threads) : dt_(dt), slots_(std::max(threads, 1) + 1) {
    N = g.N, C = g.IC;
    const bool two = g.sd == 2;
    H = two ? g.src[0] : 1, W = g.src[two ? 1 : 0];
    Ho = two ? g.dst[0] : 1, Wo = g.dst[two ? 1 : 0];
    kh = two ? g.k[0] : 1, kw = g.k[two ? 1 : 0];
    sh = two ? g.stride[0] : 1, sw = g.stride[two ? 1 : 0];
    dh = two ? g.dil[0] : 1, dw = g.dil[two ? 1 : 0];
    ph = two ? g.pad_l[0] : 0, pw = g.pad_l[two ? 1 : 0];
    const int64_t kk = kh * kw;
    // gradInput: the zero-upsampled, padded gradient U (pitch Uw); input position f reads
    // U[f + in_off_[a*kw + b]].
    Uh = H + ph + (kh - 1) * dh;
    Uw = W + pw + (kw - 1) * dw;
    for (int64_t a = 0; a < kh; ++a)
        for (int64_t b = 0; b < kw; ++b) in_off_.push_back((ph + (kh - 1 - a) * dh) * Uw + pw + (kw - 1 - b) * dw);
    in_valid_ = lane_masks(H, Uw, W);
    U_len_ = std::max(Uh * Uw, up16(H * Uw) + *std::max_element(in_off_.begin(), in_off_.end())) + 16;
    // gradWeight: the input plane padded by (ph, pw), split into sh x sw stride phases of pitch Mw;
    // gradient position f (pitch Mw) meets tap (a, b) at phase ((a*dh)%sh, (b*dw)%sw), offset
    // ((a*dh)/sh)*Mw + (b*dw)/sw.
    const int64_t Hp = (Ho - 1) * sh + (kh - 1) * dh + 1, Wp = (Wo - 1) * sw + (kw - 1) * dw + 1;
    Mh = (Hp + sh - 1) / sh;
    Mw = (Wp + sw - 1) / sw;
    for (int64_t a = 0; a < kh; ++a)
        for (int64_t b = 0; b < kw; ++b) {
            w_phase_.push_back(((a * dh) % sh) * sw + (b * dw) % sw);
            w_off_.push_back(((a * dh) / sh) * Mw + (b * dw) / sw);
        }
    w_valid_ = lane_masks(Ho, Mw, Wo);
    P_len_ = std::max(Mh * Mw, up16(Ho * Mw) + *std::max_element(w_off_.begin(), w_off_.end())) + 16;
    // Stride 1 and an output plane the size of the input plane: the direct kernels.
    same_ = sh == 1 && sw == 1 && Ho == H && Wo == W;
    if (same_) {
        const int64_t chunks = up16(H * W) / 16;
        same_chunks_ = chunks;
        same_in_mask_.assign(static_cast<size_t>(kk * chunks), 0);
        same_w_mask_.assign(static_cast<size_t>(kk * chunks), 0);
        for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
                const int64_t t = a * kw + b;
                // gradInput reads gradient (ih + ph - a*dh, iw + pw - b*dw); gradWeight reads input
                // (oh - ph + a*dh, ow - pw + b*dw)
                same_in_off_.push_back((ph - a * dh) * W + (pw - b * dw));
                same_w_off_.push_back((a * dh - ph) * W + (b * dw - pw));
                for (int64_t f = 0; f < H * W; ++f) {
                    const int64_t r = f / W, col = f % W;
                    const auto bit = static_cast<uint16_t>(1u << (f % 16));
                    const int64_t ri = r + ph - a * dh, ci = col + pw - b * dw;
                    if (ri >= 0 && ri < H && ci >= 0 && ci < W) same_in_mask_[static_cast<size_t>(t * chunks + f / 16)] |= bit;
                    const int64_t rw = r - ph + a * dh, cw = col - pw + b * dw;
                    if (rw >= 0 && rw < H && cw >= 0 && cw < W) same_w_mask_[static_cast<size_t>(t * chunks + f / 16)] |= bit;
                }
            }
    }
    if (blocked_applies()) {
        blocked_ = true;
        blk_ = DwBlocked(DwShape{N, C, H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, ph, pw}, dt);
        in_slot_ = blk_.input_slot_bytes();
        w_slot_ = blk_.weight_slot_bytes();
        return;
    }
    // Lanes hold few terms on small planes: sum a channel's planes in the lanes, else each plane.
    per_channel_ = N * Ho * Mw <= 65536;
    // slots: gradInput U, taps, a dense FLOAT plane (for BF16 results);
    //        (and a gradient row for strided spreading);
    //        gradWeight sums (double), lane accumulators, phases, padded row, re-pitched gradient
    in_slot_ = round64(static_cast<uint64_t>(up16(U_len_) + up16(kk) + up16(H * W) + up16(Wo)) * sizeof(float));
    w_slot_ = round64(static_cast<uint64_t>(up16(kk)) * sizeof(double) +
                      static_cast<uint64_t>(kk * 16 + sh * sw * up16(P_len_) + up16(Mw * sw + 48) + up16(Ho * Mw + 16)) *
                          sizeof(float));
}

void DepthwisePass::grad_input(const void *dy, const void *w, void *dx, bool dx_bf16, void *scratch) const {
    const bool avx = has_avx512();
    if (blocked_) {
        blk_.grad_input(dy, w, dx, dx_bf16, static_cast<uint8_t *>(scratch), slots_, avx);
        return;
    }
    const int64_t kk = kh * kw;
    if (same_ && (dt_ == Dt::F32) != dx_bf16) {  // direct: FLOAT in, FLOAT out or BF16 in, BF16 out
        const bool bf = dt_ == Dt::BF16;
        const size_t es = bf ? 2 : 4;
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
            float taps[kMaxTaps];
            for (int64_t nc = r.begin(); nc < r.end(); ++nc) {
                load_row(w, (nc % C) * kk, dt_, taps, kk);
                const SamePlane sp{static_cast<const uint8_t *>(dy) + static_cast<size_t>(nc * H * W) * es, nullptr,
                                   same_in_off_.data(), same_in_mask_.data(), taps, same_chunks_, kk, H * W, bf,
                                   static_cast<uint8_t *>(dx) + static_cast<size_t>(nc * H * W) * es, nullptr};
                if (avx) same_in_avx(sp);
                else same_in_scalar(sp);
            }
        });
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        float *U = slot<float>(scratch, in_slot_, slots_);
        float *taps = U + up16(U_len_);
        float *plane = taps + up16(kk);
        float *row_tmp = plane + up16(H * W);
        // Positions outside the upsampled gradient stay zero: every plane writes the same ones.
        std::fill(U, U + U_len_, 0.0f);
        for (int64_t nc = r.begin(); nc < r.end(); ++nc) {
            load_row(w, (nc % C) * kk, dt_, taps, kk);
            for (int64_t oh = 0; oh < Ho; ++oh) {
                const int64_t row = oh * sh + (kh - 1) * dh;
                if (row >= Uh) break;
                float *u = U + row * Uw + (kw - 1) * dw;
                if (sw == 1) {
                    load_row(dy, (nc * Ho + oh) * Wo, dt_, u, std::min(Wo, Uw - (kw - 1) * dw));
                } else {  // every sw-th column: one row into the scratch, then spread
                    const int64_t cnt = std::min(Wo, (Uw - (kw - 1) * dw + sw - 1) / sw);
                    load_row(dy, (nc * Ho + oh) * Wo, dt_, row_tmp, cnt);
                    for (int64_t ow = 0; ow < cnt; ++ow) u[ow * sw] = row_tmp[ow];
                }
            }
            float *out = dx_bf16 ? plane : static_cast<float *>(dx) + nc * H * W;
            const InPlane ip{U, in_off_.data(), taps, in_valid_.data(), static_cast<int64_t>(in_valid_.size()), kk, out};
            if (avx) in_plane_avx(ip);
            else in_plane_scalar(ip);
            if (dx_bf16) bf16_store(plane, static_cast<uint16_t *>(dx) + nc * H * W, H * W, avx);
        }
    });
}

void DepthwisePass::grad_weight(const void *x, const void *dy, float *dwt, void *scratch) const {
    const bool avx = has_avx512();
    if (blocked_) {
        blk_.grad_weight(x, dy, dwt, static_cast<uint8_t *>(scratch), slots_, avx);
        return;
    }
    const int64_t kk = kh * kw, phases_n = sh * sw, plen = up16(P_len_);
    // column stride 2 with AVX-512: input rows split into the phases directly (the general path
    // pads each row in a copy first: most of its time on small planes)
    const bool split2 = avx && sw == 2;
    if (same_) {
        const bool bf = dt_ == Dt::BF16;
        const size_t es = bf ? 2 : 4;
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, C, 1), [&](const tbb::blocked_range<int64_t> &r) {
            alignas(64) float acc[kMaxTaps * 16];
            double sum[kMaxTaps];
            for (int64_t c = r.begin(); c < r.end(); ++c) {
                std::fill(sum, sum + kk, 0.0);
                std::fill(acc, acc + kk * 16, 0.0f);
                for (int64_t n = 0; n < N; ++n) {
                    const size_t at = static_cast<size_t>((n * C + c) * H * W) * es;
                    const SamePlane sp{static_cast<const uint8_t *>(x) + at, static_cast<const uint8_t *>(dy) + at,
                                       same_w_off_.data(), same_w_mask_.data(), nullptr, same_chunks_, kk, H * W, bf, nullptr, acc};
                    if (avx) same_w_avx(sp);
                    else same_w_scalar(sp);
                    if (!per_channel_) {
                        for (int64_t t = 0; t < kk; ++t) sum[t] += combine(acc + t * 16);
                        std::fill(acc, acc + kk * 16, 0.0f);
                    }
                }
                if (per_channel_)
                    for (int64_t t = 0; t < kk; ++t) sum[t] += combine(acc + t * 16);
                for (int64_t t = 0; t < kk; ++t) dwt[c * kk + t] = static_cast<float>(sum[t]);
            }
        });
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        // slot: the per-tap sums (doubles, first: aligned), lane accumulators, phases, padded row, gradient
        double *sum = slot<double>(scratch, w_slot_, slots_);
        float *acc = reinterpret_cast<float *>(sum + up16(kk));
        float *phases = acc + kk * 16;
        float *prow = phases + phases_n * plen;
        float *gy = prow + up16(Mw * sw + 48);
        const float *tap_x[kMaxTaps];
        for (int64_t t = 0; t < kk; ++t) tap_x[t] = phases + w_phase_[static_cast<size_t>(t)] * plen;
        // pitch padding and slack stay zero; with split2, so do the padding rows and columns (every
        // plane writes the same positions)
        std::fill(phases, phases + phases_n * plen, 0.0f);
        std::fill(gy, gy + up16(Ho * Mw + 16), 0.0f);
        auto flush = [&] {
            for (int64_t t = 0; t < kk; ++t) sum[t] += combine(acc + t * 16);
            std::fill(acc, acc + kk * 16, 0.0f);
        };
        for (int64_t c = r.begin(); c < r.end(); ++c) {
            std::fill(sum, sum + kk, 0.0);
            std::fill(acc, acc + kk * 16, 0.0f);
            for (int64_t n = 0; n < N; ++n) {
                const int64_t pl = n * C + c;
                if (split2) {  // two column phases: each input row straight into them
                    for (int64_t ih = 0; ih < H && ih + ph < Mh * sh; ++ih) {
                        const int64_t ihp = ih + ph;
                        float *row0 = phases + ((ihp % sh) * sw) * plen + (ihp / sh) * Mw;
                        // padded column q = iw + pw lands in phase q % 2 at q / 2
                        const int64_t lim = std::min(W, Mw * sw - pw);  // columns a window can reach
                        float *e = row0 + (pw % 2) * plen + pw / 2, *o = row0 + ((pw + 1) % 2) * plen + (pw + 1) / 2;
                        split_row_avx(x, (pl * H + ih) * W, dt_, lim, e, (lim + 1) / 2, o, lim / 2);
                    }
                    for (int64_t oh = 0; oh < Ho; ++oh) load_row(dy, (pl * Ho + oh) * Wo, dt_, gy + oh * Mw, Wo);
                    const WPlane wp{gy, tap_x, w_off_.data(), w_valid_.data(), static_cast<int64_t>(w_valid_.size()), kk, acc};
                    w_plane_avx(wp);
                    if (!per_channel_) flush();
                    continue;
                }
                // padded rows ihp = ih + ph, split into phases (ihp % sh, column % sw)
                for (int64_t ihp = 0; ihp < Mh * sh; ++ihp) {
                    const int64_t ih = ihp - ph;
                    if (sw == 1) {  // one column phase: the padded row goes straight to its place
                        float *dst = phases + (ihp % sh) * plen + (ihp / sh) * Mw;
                        const int64_t lo = std::min(pw, Mw), cnt = ih >= 0 && ih < H ? std::max<int64_t>(0, std::min(W, Mw - pw)) : 0;
                        std::fill(dst, dst + lo, 0.0f);
                        load_row(x, (pl * H + ih) * W, dt_, dst + lo, cnt);
                        std::fill(dst + lo + cnt, dst + Mw, 0.0f);
                        continue;
                    }
                    std::fill(prow, prow + Mw * sw, 0.0f);
                    if (ih >= 0 && ih < H) {
                        const int64_t lo = std::min(pw, Mw * sw), cnt = std::max<int64_t>(0, std::min(W, Mw * sw - pw));
                        load_row(x, (pl * H + ih) * W, dt_, prow + lo, cnt);
                    }
                    float *row0 = phases + ((ihp % sh) * sw) * plen + (ihp / sh) * Mw;
                    if (sw == 2 && avx) {
                        deinterleave2_avx(prow, row0, row0 + plen, Mw);
                        continue;
                    }
                    for (int64_t pc = 0; pc < sw; ++pc)
                        for (int64_t m = 0; m < Mw; ++m) row0[pc * plen + m] = prow[m * sw + pc];
                }
                for (int64_t oh = 0; oh < Ho; ++oh) load_row(dy, (pl * Ho + oh) * Wo, dt_, gy + oh * Mw, Wo);
                const WPlane wp{gy, tap_x, w_off_.data(), w_valid_.data(), static_cast<int64_t>(w_valid_.size()), kk, acc};
                if (avx) w_plane_avx(wp);
                else w_plane_scalar(wp);
                if (!per_channel_) flush();
            }
            if (per_channel_) flush();
            for (int64_t t = 0; t < kk; ++t) dwt[c * kk + t] = static_cast<float>(sum[t]);
        }
    });
}

}  // namespace conv
