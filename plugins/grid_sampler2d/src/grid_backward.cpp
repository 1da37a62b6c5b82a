// GridSampler2DBackward kernel (contract in grid_backward.hpp). Three phases in one node:
//   A  input -> channels-last FLOAT/double copy per image (only for gridGrad, and only when C > 1
//      or the element type differs from the compute type);
//   B  tasks (n, k): taps of 16 output pixels at a time (the next tile's computed and prefetched
//      while the current one runs), then per channel block the tile of gradOutput (transposed on
//      the fly) scatters into the task's accumulator and reads the input for gridGrad; the last
//      block stores gridGrad;
//   C  inputGrad[n] = sum over k of the accumulators in ascending k, back to (C, H, W), rounded once.
// With one task per image (K == 1) the phases run per image and channel block, while the block's
// data is in cache. When C == 1, K == 1 and inputGrad is already in the compute type, B
// accumulates straight into it and C is skipped. The AVX-512 and scalar paths share the layout
// and the partition; they differ only in the order of the additions inside a sample.
#include "grid_backward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "aclnn_cpu/numeric_avx512.hpp"
#include "grid_rows.hpp"
#include "grid_taps.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GSAMP_X86 1
#include <immintrin.h>
#define GSAMP_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#else
#define GSAMP_X86 0
#endif

namespace gsamp {

// Shape-only work split: at least kMinTasks tasks overall when the pixels allow, each of at least
// kMinTaskPixels output pixels. Never depends on the thread count. Every extra task per image costs
// a private accumulator as large as the image's input (zeroing, cache and a reduction), so the
// floor is this project's machines' core count: a single image is split in two. (More cores would
// want a larger floor; the bits change with this constant, never with the thread count.)
constexpr int64_t kMinTasks = 2;
constexpr int64_t kMinTaskPixels = 1024;
constexpr int64_t kTile = 16;        // output pixels whose taps are computed together
constexpr int64_t kChanBlock = 16;   // channels per block of the channels-last layout (one 64-byte line)
constexpr int64_t kRowBlock = 256;   // pixels per block of the phase A / C transposes

// Values per input pixel in a channel block of the channels-last layout: a full block is one
// 64-byte line; a narrow last block (C % 16, or a small C) is padded with zeros to 4 or 8 values
// so that its taps are single 128- or 256-bit operations. One channel stays unpadded (NCHW).
inline int64_t lane_width(int64_t w) { return w <= 1 ? 1 : w <= 4 ? 4 : w <= 8 ? 8 : 16; }
// Values per input pixel over all blocks of an image.
inline int64_t padded_channels(int64_t C) {
    const int64_t last = C - (C - 1) / 16 * 16;
    return C - last + lane_width(last);
}

struct BackwardPlan {
    Geometry g{};
    BackwardElems e{};
    bool want_ig = false, want_gg = false, f64 = false;
    bool need_in = false;     // gridGrad needs input values (not for nearest)
    bool need_go = false;
    int64_t K = 1;
    bool in_direct = false;   // the channels-last input is the input itself
    bool acc_direct = false;  // accumulate straight into inputGrad
    int64_t in_bytes = 0, acc_bytes = 0, acc_offset = 0;
    int64_t gsum_stride = 0, gsum_offset = 0;  // per task: gridGrad partial sums, 2 per pixel
    int64_t Cp = 1;                            // padded_channels(C)
    bool bilinear_vec = false;                 // bilinear_tile_avx applies (zeros / border, H * W < 2^31)
    bool bicubic_vec = false;                  // bicubic_tile_avx applies (likewise)
    uint64_t scratch = 0;
};

namespace {

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }

template <class T>
constexpr Elem elem_of() {
    return sizeof(T) == 8 ? Elem::F64 : Elem::F32;
}

const char *at(const void *p, int64_t elems, Elem e) { return static_cast<const char *>(p) + elems * elem_bytes(e); }
char *at(void *p, int64_t elems, Elem e) { return static_cast<char *>(p) + elems * elem_bytes(e); }

// ---- one pixel, one block of nc channels (in / acc: the block's channel 0 of tap offset 0) ----

// Two views of one sample's taps for the channel loops: a compact list (every tap valid), or one
// sample of a bilinear tile (4 corners, stored corner-major for 16 samples, with a validity mask).
template <class T>
struct CompactView {
    const Taps<T> &tp;
    int count() const { return tp.n; }
    bool valid(int) const { return true; }
    int64_t off(int t) const { return tp.off[t]; }
    T w(int t) const { return tp.w[t]; }
    T cx(int t) const { return tp.cx[t]; }
    T cy(int t) const { return tp.cy[t]; }
};
template <int NT>
struct TileTaps {  // NT taps of 16 samples, tap-major (bilinear: corners nw, ne, sw, se; bicubic: 4 j + i)
    alignas(64) float w[NT][16];
    alignas(64) float cx[NT][16];
    alignas(64) float cy[NT][16];
    alignas(64) int32_t off[NT][16];
    uint16_t mask[16];  // bit t: tap t of sample i is inside the input
};
template <int NT>
struct TileView {
    const TileTaps<NT> &tt;
    int64_t i;
    int count() const { return NT; }
    bool valid(int t) const { return (tt.mask[i] >> t) & 1; }
    int64_t off(int t) const { return tt.off[t][i]; }
    float w(int t) const { return tt.w[t][i]; }
    float cx(int t) const { return tt.cx[t][i]; }
    float cy(int t) const { return tt.cy[t][i]; }
};

template <class T, class V>
void channels_scalar(const V &tp, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx,
                     T *gy) {
    T ax = 0, ay = 0;
    for (int64_t c = 0; c < nc; ++c) {
        const T g = go[c];
        T sx = 0, sy = 0;
        for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
            const int64_t o = tp.off(t) * C + c;
            if (acc) acc[o] += tp.w(t) * g;
            if (in) {
                sx += tp.cx(t) * in[o];
                sy += tp.cy(t) * in[o];
            }
        }
        ax += g * sx;
        ay += g * sy;
    }
    *gx += ax;
    *gy += ay;
}

#if GSAMP_X86
constexpr __mmask16 kAll = 0xffff;
// Lanes [0, n) (none for n <= 0, all for n >= 16).
GSAMP_AVX512 inline __mmask16 tail16(int64_t n) {
    return n >= 16 ? kAll : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1u);
}


// One sample's taps over one channel block of nc <= 16 channels (go: the sample's gradients; in /
// acc: the block's channels-last arrays, ld = lane_width(nc) values per input pixel). inputGrad is
// scattered into acc; for gridGrad the per-lane products g * sum_t c_t v_t are stored to px / py
// (ld lanes) and reduced later, 16 samples at once. A full block uses plain loads and stores: a
// masked store does not forward to the next sample's load of a shared tap.
template <bool kFull, class V>
GSAMP_AVX512 void channels_avx16(const V &tp, const float *go, int64_t nc, const float *in, float *acc, float *px,
                                 float *py) {
    const __mmask16 m = tail16(nc);
    const __m512 g = kFull ? _mm512_loadu_ps(go) : _mm512_maskz_loadu_ps(m, go);
    __m512 sx = _mm512_setzero_ps(), sy = _mm512_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 16;
        if (acc) {
            float *p = acc + o;
            if (kFull) _mm512_storeu_ps(p, _mm512_fmadd_ps(_mm512_set1_ps(tp.w(t)), g, _mm512_loadu_ps(p)));
            else _mm512_mask_storeu_ps(p, m, _mm512_fmadd_ps(_mm512_set1_ps(tp.w(t)), g, _mm512_maskz_loadu_ps(m, p)));
        }
        if (in) {
            const __m512 v = kFull ? _mm512_loadu_ps(in + o) : _mm512_maskz_loadu_ps(m, in + o);
            sx = _mm512_fmadd_ps(_mm512_set1_ps(tp.cx(t)), v, sx);
            sy = _mm512_fmadd_ps(_mm512_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm512_store_ps(px, _mm512_mul_ps(g, sx));
        _mm512_store_ps(py, _mm512_mul_ps(g, sy));
    }
}
// Narrow blocks, zero-padded to 4 (SSE) or 8 (AVX) values per pixel: no masks needed.
template <class V>
GSAMP_AVX512 void channels_avx4(const V &tp, const float *go, const float *in, float *acc, float *px, float *py) {
    const __m128 g = _mm_loadu_ps(go);
    __m128 sx = _mm_setzero_ps(), sy = _mm_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 4;
        if (acc) _mm_storeu_ps(acc + o, _mm_fmadd_ps(_mm_set1_ps(tp.w(t)), g, _mm_loadu_ps(acc + o)));
        if (in) {
            const __m128 v = _mm_loadu_ps(in + o);
            sx = _mm_fmadd_ps(_mm_set1_ps(tp.cx(t)), v, sx);
            sy = _mm_fmadd_ps(_mm_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm_store_ps(px, _mm_mul_ps(g, sx));
        _mm_store_ps(py, _mm_mul_ps(g, sy));
    }
}
template <class V>
GSAMP_AVX512 void channels_avx8(const V &tp, const float *go, const float *in, float *acc, float *px, float *py) {
    const __m256 g = _mm256_loadu_ps(go);
    __m256 sx = _mm256_setzero_ps(), sy = _mm256_setzero_ps();
    for (int t = 0; t < tp.count(); ++t) {
        if (!tp.valid(t)) continue;
        const int64_t o = tp.off(t) * 8;
        if (acc) _mm256_storeu_ps(acc + o, _mm256_fmadd_ps(_mm256_set1_ps(tp.w(t)), g, _mm256_loadu_ps(acc + o)));
        if (in) {
            const __m256 v = _mm256_loadu_ps(in + o);
            sx = _mm256_fmadd_ps(_mm256_set1_ps(tp.cx(t)), v, sx);
            sy = _mm256_fmadd_ps(_mm256_set1_ps(tp.cy(t)), v, sy);
        }
    }
    if (in) {
        _mm256_store_ps(px, _mm256_mul_ps(g, sx));
        _mm256_store_ps(py, _mm256_mul_ps(g, sy));
    }
}

// In-register transpose of a 16 x 16 FLOAT block: r[i] lane j <-> r[j] lane i.
GSAMP_AVX512 inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {  // 32-bit pairs
        t[2 * i] = _mm512_maskz_unpacklo_ps(kAll, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {  // 4 x 4 blocks inside each 128-bit lane
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, b, d));
    }
    for (int i = 0; i < 2; ++i)  // 128-bit lanes
        for (int j = 0; j < 4; ++j) {
            t[8 * i + j] = _mm512_maskz_shuffle_f32x4(kAll, r[8 * i + j], r[8 * i + j + 4], 0x88);
            t[8 * i + j + 4] = _mm512_maskz_shuffle_f32x4(kAll, r[8 * i + j], r[8 * i + j + 4], 0xdd);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_maskz_shuffle_f32x4(kAll, t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_maskz_shuffle_f32x4(kAll, t[j], t[j + 8], 0xdd);
    }
}

// Up to 16 elements [idx, idx + 16) of a dense FLOAT / FLOAT16 / BF16 array as FLOAT (lanes outside m: 0).
GSAMP_AVX512 inline __m512 load16(const void *base, int64_t idx, Elem e, __mmask16 m) {
    if (e == Elem::F32) return _mm512_maskz_loadu_ps(m, static_cast<const float *>(base) + idx);
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(base) + idx);
    return e == Elem::F16 ? acp::avx512::from_half(h) : acp::avx512::from_bf16(h);
}
GSAMP_AVX512 inline void store16(void *base, int64_t idx, Elem e, __mmask16 m, __m512 v) {
    if (e == Elem::F32) return _mm512_mask_storeu_ps(static_cast<float *>(base) + idx, m, v);
    const __m256i h = e == Elem::F16 ? acp::avx512::to_half(v) : acp::avx512::to_bf16(v);
    _mm256_mask_storeu_epi16(static_cast<uint16_t *>(base) + idx, m, h);
}

// 4 channel rows of 16 pixels <-> 16 pixel records of 4 channels (4 vectors of 4 pixels): the
// narrow-block (lane width 4) form of transpose16, a quarter of the shuffles.
GSAMP_AVX512 inline void rows4_to_pixels(const __m512 r[4], __m512 out[4]) {
    const __m512 t0 = _mm512_maskz_unpacklo_ps(kAll, r[0], r[1]), t1 = _mm512_maskz_unpackhi_ps(kAll, r[0], r[1]);
    const __m512 t2 = _mm512_maskz_unpacklo_ps(kAll, r[2], r[3]), t3 = _mm512_maskz_unpackhi_ps(kAll, r[2], r[3]);
    const __m512 u0 = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    const __m512 u1 = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    const __m512 u2 = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    const __m512 u3 = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    // u_k, 128-bit lane L: pixel 4 L + k
    const __m512 v0 = _mm512_maskz_shuffle_f32x4(kAll, u0, u1, 0x44), v1 = _mm512_maskz_shuffle_f32x4(kAll, u2, u3, 0x44);
    const __m512 v2 = _mm512_maskz_shuffle_f32x4(kAll, u0, u1, 0xee), v3 = _mm512_maskz_shuffle_f32x4(kAll, u2, u3, 0xee);
    out[0] = _mm512_maskz_shuffle_f32x4(kAll, v0, v1, 0x88);
    out[1] = _mm512_maskz_shuffle_f32x4(kAll, v0, v1, 0xdd);
    out[2] = _mm512_maskz_shuffle_f32x4(kAll, v2, v3, 0x88);
    out[3] = _mm512_maskz_shuffle_f32x4(kAll, v2, v3, 0xdd);
}
GSAMP_AVX512 inline void pixels_to_rows4(const __m512 a[4], __m512 r[4]) {
    const __m512 s01 = _mm512_maskz_shuffle_f32x4(kAll, a[0], a[1], 0x44), s23 = _mm512_maskz_shuffle_f32x4(kAll, a[2], a[3], 0x44);
    const __m512 s01b = _mm512_maskz_shuffle_f32x4(kAll, a[0], a[1], 0xee), s23b = _mm512_maskz_shuffle_f32x4(kAll, a[2], a[3], 0xee);
    const __m512 u0 = _mm512_maskz_shuffle_f32x4(kAll, s01, s23, 0x88), u1 = _mm512_maskz_shuffle_f32x4(kAll, s01, s23, 0xdd);
    const __m512 u2 = _mm512_maskz_shuffle_f32x4(kAll, s01b, s23b, 0x88), u3 = _mm512_maskz_shuffle_f32x4(kAll, s01b, s23b, 0xdd);
    const __m512 t0 = _mm512_maskz_unpacklo_ps(kAll, u0, u1), t1 = _mm512_maskz_unpackhi_ps(kAll, u0, u1);
    const __m512 t2 = _mm512_maskz_unpacklo_ps(kAll, u2, u3), t3 = _mm512_maskz_unpackhi_ps(kAll, u2, u3);
    r[0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    r[1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    r[2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    r[3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(t1), _mm512_castps_pd(t3)));
}

// gridGrad's per-sample sums of one channel block (sum[0]: x, sum[1]: y; lane i = sample i) stored
// to gs (x, y interleaved; first block) or added to it; out (the last channel block, or null): also
// store gridGrad = (mx, my) * the totals, interleaved.
GSAMP_AVX512 inline void finish_grid_sums(const __m512 sum[2], int64_t np, float *gs, bool first, const float *mx,
                                          const float *my, float *out) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const __m512 xy0 = _mm512_maskz_permutex2var_ps(kAll, sum[0], lo, sum[1]);
    const __m512 xy1 = _mm512_maskz_permutex2var_ps(kAll, sum[0], hi, sum[1]);
    const __mmask16 m0 = tail16(2 * np), m1 = tail16(2 * np - 16);
    const __m512 t0 = first ? xy0 : _mm512_add_ps(_mm512_maskz_loadu_ps(m0, gs), xy0);
    const __m512 t1 = first ? xy1 : _mm512_add_ps(_mm512_maskz_loadu_ps(m1, gs + 16), xy1);
    if (out) {  // gridGrad: (mx, my) interleaved the same way, times the totals
        const __mmask16 mp = tail16(np);
        const __m512 vmx = _mm512_maskz_loadu_ps(mp, mx), vmy = _mm512_maskz_loadu_ps(mp, my);
        const __m512 m01 = _mm512_maskz_permutex2var_ps(kAll, vmx, lo, vmy), m23 = _mm512_maskz_permutex2var_ps(kAll, vmx, hi, vmy);
        _mm512_mask_storeu_ps(out, m0, _mm512_mul_ps(m01, t0));
        _mm512_mask_storeu_ps(out + 16, m1, _mm512_mul_ps(m23, t1));
        return;
    }
    _mm512_mask_storeu_ps(gs, m0, t0);
    _mm512_mask_storeu_ps(gs + 16, m1, t1);
}

// A bilinear tile over a narrow block (ld = 4): inputGrad one 128-bit corner at a time (with a
// smooth grid the next sample's corners are shifted by one pixel, 16 bytes, and a load that half
// overlaps an earlier 256-bit store cannot be forwarded from it). For gridGrad each sample stores
// only its corners' lane products g * v (one 256-bit load and multiply per row of two corners,
// zeros for a corner outside); one 16 x 16 transpose then gives, for all 16 samples at once, the
// per-corner dot products d_t, and gridGrad's sums are sum_t c_t * d_t with the corner weights
// zeroed outside (a NaN grid gives none). A fixed order throughout, set by the shape.
GSAMP_AVX512 void bilinear_tile4_avx(const TileTaps<4> &tt, int64_t np, const float *tile, const float *in, float *acc,
                                     float *gs, bool first, const float *mx, const float *my, float *out) {
    alignas(64) float q[16 * 16];  // sample i: corners nw, ne, sw, se x 4 lanes
    for (int64_t i = 0; i < np; ++i) {
        const __m128 g4 = _mm_loadu_ps(tile + 4 * i);
        const unsigned m = tt.mask[i];
        if (acc)
            for (int t = 0; t < 4; ++t)
                if ((m >> t) & 1u) {
                    float *p = acc + int64_t{tt.off[t][i]} * 4;
                    _mm_storeu_ps(p, _mm_fmadd_ps(_mm_set1_ps(tt.w[t][i]), g4, _mm_loadu_ps(p)));
                }
        if (!in) continue;
        for (int r = 0; r < 4; r += 2) {
            const unsigned bits = (m >> r) & 3u;
            float *qr = q + 16 * i + 4 * r;
            if (bits == 3u) {
                const __m256 v = _mm256_loadu_ps(in + int64_t{tt.off[r][i]} * 4);
                _mm256_store_ps(qr, _mm256_mul_ps(v, _mm256_set_m128(g4, g4)));
                continue;
            }
            for (int k = 0; k < 2; ++k)
                _mm_store_ps(qr + 4 * k, ((bits >> k) & 1u) ? _mm_mul_ps(_mm_loadu_ps(in + int64_t{tt.off[r + k][i]} * 4), g4)
                                                            : _mm_setzero_ps());
        }
    }
    if (!gs || !in) return;
    __m512 rr[16];
    for (int64_t i = 0; i < 16; ++i) rr[i] = i < np ? _mm512_load_ps(q + 16 * i) : _mm512_setzero_ps();
    transpose16(rr);  // rr[4 t + c]: lane c of corner t, sample i in lane i
    const __m512i mv = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(tt.mask)));
    __m512 sum[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int t = 0; t < 4; ++t) {
        const __m512 d = _mm512_add_ps(_mm512_add_ps(rr[4 * t], rr[4 * t + 1]), _mm512_add_ps(rr[4 * t + 2], rr[4 * t + 3]));
        const __mmask16 k = _mm512_test_epi32_mask(mv, _mm512_set1_epi32(1 << t));
        sum[0] = _mm512_fmadd_ps(_mm512_maskz_load_ps(k, tt.cx[t]), d, sum[0]);
        sum[1] = _mm512_fmadd_ps(_mm512_maskz_load_ps(k, tt.cy[t]), d, sum[1]);
    }
    finish_grid_sums(sum, np, gs, first, mx, my, out);
}

// The channel work of a tile's np samples in one call (sample i's gradients at tile + i * tile_ld,
// its taps in the tile's corner arrays or in taps[i]), then gridGrad's per-sample sums of the
// lane products for all 16 samples at once (a transpose and 15 vector additions, in a fixed
// order), stored to gs (x, y interleaved; first block) or added to it. gs null: no gridGrad.
// out (the last channel block, or null): also store gridGrad = (mx, my) * the totals, interleaved.
template <class ViewOf>
GSAMP_AVX512 void tile_channels_avx(ViewOf view_of, int64_t np, const float *tile, int64_t tile_ld, int64_t nc,
                                    int64_t ld, const float *in, float *acc, float *gs, bool first, const float *mx,
                                    const float *my, float *out) {
    if constexpr (std::is_same_v<decltype(view_of(0)), TileView<4>>) {
        if (ld == 4) return bilinear_tile4_avx(view_of(0).tt, np, tile, in, acc, gs, first, mx, my, out);
    }
    alignas(64) float px[16 * 16], py[16 * 16];  // ld = 4: 16 x 4 values; else 16 rows of 16 (zero padded)
    const int64_t row = ld == 4 ? 4 : 16;
    for (int64_t i = 0; i < np; ++i) {
        const float *g = tile + i * tile_ld;
        float *qx = px + i * row, *qy = py + i * row;
        const auto v = view_of(i);
        if (ld == 4) {
            channels_avx4(v, g, in, acc, qx, qy);
        } else if (ld == 8) {
            channels_avx8(v, g, in, acc, qx, qy);
            _mm256_store_ps(qx + 8, _mm256_setzero_ps());
            _mm256_store_ps(qy + 8, _mm256_setzero_ps());
        } else if (nc == 16) {
            channels_avx16<true>(v, g, nc, in, acc, qx, qy);
        } else {
            channels_avx16<false>(v, g, nc, in, acc, qx, qy);
        }
    }
    if (!gs || !in) return;
    __m512 sum[2];
    for (int a = 0; a < 2; ++a) {
        const float *q = a == 0 ? px : py;
        if (ld == 4) {
            __m512 v[4], r[4];
            for (int64_t m = 0; m < 4; ++m) v[m] = _mm512_maskz_load_ps(tail16(4 * std::max<int64_t>(0, np - 4 * m)), q + 16 * m);
            pixels_to_rows4(v, r);
            sum[a] = _mm512_add_ps(_mm512_add_ps(r[0], r[1]), _mm512_add_ps(r[2], r[3]));
        } else {
            __m512 r[16];
            for (int64_t i = 0; i < 16; ++i) r[i] = i < np ? _mm512_load_ps(q + 16 * i) : _mm512_setzero_ps();
            transpose16(r);
            for (int w = 8; w >= 1; w /= 2)
                for (int i = 0; i < w; ++i) r[i] = _mm512_add_ps(r[i], r[i + w]);
            sum[a] = r[0];
        }
    }
    finish_grid_sums(sum, np, gs, first, mx, my, out);
}

// Phase A, 16 x 16 blocks: inT[(n*HW + i)*C + c] = input[(n*C + c)*HW + i].
GSAMP_AVX512 void transpose_input_avx(const Geometry &g, Elem e, const void *input, float *inT, int64_t n, int64_t hw0,
                                      int64_t len, int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C;
    __m512 r[16];
    for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
        const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
        const __mmask16 mp = tail16(np);
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
            const int64_t nc = std::min<int64_t>(16, C - c0);
            for (int64_t l = 0; l < nc; ++l)
                _mm_prefetch(static_cast<const char *>(input) + ((n * C + c0 + l) * HW + i0 + 64) * elem_bytes(e), _MM_HINT_T0);
            if (lane_width(nc) == 4) {
                __m512 q[4], out[4];
                for (int64_t l = 0; l < 4; ++l) q[l] = load16(input, (n * C + c0 + std::min(l, nc - 1)) * HW + i0, e, l < nc ? mp : 0);
                rows4_to_pixels(q, out);
                float *dst = inT + n * HW * padded_channels(C) + c0 * HW + i0 * 4;
                for (int64_t m = 0; m * 4 < np; ++m) _mm512_mask_storeu_ps(dst + m * 16, tail16(4 * (np - 4 * m)), out[m]);
                continue;
            }
#pragma GCC unroll 16
            for (int64_t l = 0; l < 16; ++l) r[l] = load16(input, (n * C + c0 + std::min(l, nc - 1)) * HW + i0, e, l < nc ? mp : 0);
            transpose16(r);
            const __mmask16 mc = tail16(nc);
            const int64_t ld = lane_width(nc);  // the pad lanes get the zero rows' zeros
            float *dst = inT + n * HW * padded_channels(C) + c0 * HW + i0 * ld;
            (void)mc;
            for (int64_t i = 0; i < np; ++i) _mm512_mask_storeu_ps(dst + i * ld, tail16(ld), r[i]);
        }
    }
}

// Phase C, 16 x 16 blocks: input_grad[(n*C + c)*HW + i] = sum_k acc[((n*K + k)*HW + i)*C + c].
GSAMP_AVX512 void reduce_accumulators_avx(const Geometry &g, int64_t K, Elem e, const float *acc, void *input_grad,
                                          int64_t n, int64_t hw0, int64_t len, int64_t c_lo, int64_t c_hi) {
    const int64_t HW = g.in_pixels(), C = g.C;
    __m512 r[16];
    for (int64_t i0 = hw0; i0 < hw0 + len; i0 += 16) {
        const int64_t np = std::min<int64_t>(16, hw0 + len - i0);
        const __mmask16 mp = tail16(np);
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += 16) {
            const int64_t nc = std::min<int64_t>(16, C - c0);
            const __mmask16 mc = tail16(nc);
            if (lane_width(nc) == 4) {  // same additions in the same order, a quarter of the shuffles
                const int64_t Cp = padded_channels(C);
                const float *src = acc + n * K * HW * Cp + c0 * HW + i0 * 4;
                _mm_prefetch(reinterpret_cast<const char *>(src + 256), _MM_HINT_T0);
                __m512 a[4], q[4];
                for (int64_t m = 0; m < 4; ++m) {
                    const __mmask16 mm = tail16(4 * std::max<int64_t>(0, np - 4 * m));
                    __m512 v = _mm512_maskz_loadu_ps(mm, src + m * 16);
                    for (int64_t k = 1; k < K; ++k) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mm, src + k * HW * Cp + m * 16));
                    a[m] = v;
                }
                pixels_to_rows4(a, q);
                for (int64_t l = 0; l < nc; ++l) store16(input_grad, (n * C + c0 + l) * HW + i0, e, mp, q[l]);
                continue;
            }
            for (int64_t i = 0; i < 16; ++i) {
                if (i >= np) {
                    r[i] = _mm512_setzero_ps();
                    continue;
                }
                const int64_t ld = lane_width(nc), Cp = padded_channels(C);
                const float *src = acc + n * K * HW * Cp + c0 * HW + (i0 + i) * ld;
                _mm_prefetch(reinterpret_cast<const char *>(src + 32 * ld), _MM_HINT_T0);
                __m512 s = _mm512_maskz_loadu_ps(mc, src);
                for (int64_t k = 1; k < K; ++k) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mc, src + k * HW * Cp));
                r[i] = s;
            }
            transpose16(r);
            for (int64_t l = 0; l < nc; ++l) store16(input_grad, (n * C + c0 + l) * HW + i0, e, mp, r[l]);
        }
    }
}

// The gradOutput tile of run_task: tile[i * ld + c] = go[(n*C + cb + c)*Pn + p0 + i], i < np, c < nc.
GSAMP_AVX512 void load_go_tile_avx(const void *go, Elem e, int64_t base, int64_t Pn, int64_t np, int64_t nc, float *tile,
                                   int64_t ld) {
    const __mmask16 mp = tail16(np);
    const char *g8 = static_cast<const char *>(go);
    const int64_t es = elem_bytes(e);
    __m512 r[16];
    if (ld == 4) {  // a narrow block (nc <= 4): records of 4 values, 4 pixels per vector
        for (int64_t l = 0; l < nc; ++l) _mm_prefetch(g8 + (base + l * Pn + 2 * kTile) * es, _MM_HINT_T0);
        __m512 q[4], out[4];
        for (int64_t l = 0; l < 4; ++l) q[l] = load16(go, base + std::min(l, nc - 1) * Pn, e, l < nc ? mp : 0);
        rows4_to_pixels(q, out);
        for (int64_t m = 0; m * 4 < np; ++m) _mm512_storeu_ps(tile + m * 16, out[m]);
        return;
    }
    for (int64_t c0 = 0; c0 < nc; c0 += 16) {
        const int64_t ncc = std::min<int64_t>(16, nc - c0);
        // the next tile's rows: the hardware prefetcher does not follow this many strided streams
        for (int64_t l = 0; l < ncc; ++l) _mm_prefetch(g8 + (base + (c0 + l) * Pn + 2 * kTile) * es, _MM_HINT_T0);
#pragma GCC unroll 16
        for (int64_t l = 0; l < 16; ++l) r[l] = load16(go, base + (c0 + std::min(l, ncc - 1)) * Pn, e, l < ncc ? mp : 0);
        transpose16(r);
        for (int64_t i = 0; i < np; ++i) _mm512_storeu_ps(tile + i * ld + c0, r[i]);
    }
}
#endif

template <class T, class V>
void channels(const V &tp, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx, T *gy,
              bool avx) {
    (void)avx;  // the AVX-512 path runs whole tiles (tile_channels_avx)
    channels_scalar(tp, go, nc, in, acc, C, gx, gy);
}

#if GSAMP_X86
// Bicubic taps with zeros or border padding, vectorized: the 4 x-taps and 4 y-taps in one 256-bit
// vector (weights and slopes by Horner's rule, padding, bounds, indices), then the 4 x 4 products
// in one 512-bit vector, compressed to the valid taps in row-major order (like pixel_taps).
GSAMP_AVX512 void bicubic_taps_avx(const Geometry &g, float x, float y, Taps<float> &tp, float *mx, float *my) {
    const float ix = unnormalize(x, g.W, g.align, mx), iy = unnormalize(y, g.H, g.align, my);
    const float x0 = std::floor(ix), y0 = std::floor(iy), tx = ix - x0, ty = iy - y0;
    // lanes 0-3: x taps at -1, 0, 1, 2; lanes 4-7: y taps. d = distance to the tap: t+1, t, 1-t, 2-t.
    const __m256 sgn = _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1);
    const __m256 d = _mm256_fmadd_ps(_mm256_setr_ps(tx, tx, tx, tx, ty, ty, ty, ty), sgn, _mm256_setr_ps(1, 0, 1, 2, 1, 0, 1, 2));
    // Keys, A = -0.75: |d| <= 1: 1.25 d^3 - 2.25 d^2 + 1; 1 < |d| < 2: -0.75 d^3 + 3.75 d^2 - 6 d + 3
    const __m256 a3 = _mm256_setr_ps(-0.75f, 1.25f, 1.25f, -0.75f, -0.75f, 1.25f, 1.25f, -0.75f);
    const __m256 a2 = _mm256_setr_ps(3.75f, -2.25f, -2.25f, 3.75f, 3.75f, -2.25f, -2.25f, 3.75f);
    const __m256 a1 = _mm256_setr_ps(-6, 0, 0, -6, -6, 0, 0, -6), a0 = _mm256_setr_ps(3, 1, 1, 3, 3, 1, 1, 3);
    const __m256 w8 = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(a3, d, a2), d, a1), d, a0);
    const __m256 b2 = _mm256_setr_ps(-2.25f, 3.75f, 3.75f, -2.25f, -2.25f, 3.75f, 3.75f, -2.25f);
    const __m256 b1 = _mm256_setr_ps(7.5f, -4.5f, -4.5f, 7.5f, 7.5f, -4.5f, -4.5f, 7.5f);
    const __m256 s8 = _mm256_mul_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(b2, d, b1), d, a1), sgn);  // d(weight)/dt
    // tap coordinates, padded, checked, converted
    __m256 c = _mm256_add_ps(_mm256_setr_ps(x0, x0, x0, x0, y0, y0, y0, y0), _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2));
    const float wm = static_cast<float>(g.W - 1), hm = static_cast<float>(g.H - 1);
    const __m256 hi = _mm256_setr_ps(wm, wm, wm, wm, hm, hm, hm, hm), zero = _mm256_setzero_ps();
    if (g.padding == Padding::Border) {  // clip; NaN stays NaN
        c = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(c, zero, _CMP_LE_OQ), c, zero);
        c = _mm256_mask_blend_ps(_mm256_cmp_ps_mask(c, hi, _CMP_GE_OQ), c, hi);
    }
    const __mmask8 valid = _mm256_cmp_ps_mask(c, zero, _CMP_GE_OQ) & _mm256_cmp_ps_mask(c, hi, _CMP_LE_OQ);
    const int32_t W32 = static_cast<int32_t>(g.W);
    const __m256i idx = _mm256_mullo_epi32(_mm256_maskz_cvttps_epi32(valid, c), _mm256_setr_epi32(1, 1, 1, 1, W32, W32, W32, W32));
    // 16 taps, lane 4 j + i: x tap i, y tap j
    const __m512i xi = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    const __m512i yi = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m512 W16 = _mm512_maskz_broadcast_f32x8(kAll, w8), S16 = _mm512_maskz_broadcast_f32x8(kAll, s8);
    const __m512 xw = _mm512_maskz_permutexvar_ps(kAll, xi, W16), yw = _mm512_maskz_permutexvar_ps(kAll, yi, W16);
    const __m512 xs = _mm512_maskz_permutexvar_ps(kAll, xi, S16), ys = _mm512_maskz_permutexvar_ps(kAll, yi, S16);
    const __m512i I16 = _mm512_maskz_broadcast_i32x8(kAll, idx);
    const __m512i off = _mm512_add_epi32(_mm512_maskz_permutexvar_epi32(kAll, xi, I16), _mm512_maskz_permutexvar_epi32(kAll, yi, I16));
    const uint32_t vx = valid & 0xfu, vy = (valid >> 4) & 0xfu;
    const uint32_t rows = ((vy & 1u) | ((vy & 2u) << 3) | ((vy & 4u) << 6) | ((vy & 8u) << 9)) * 0xfu;
    const auto m = static_cast<__mmask16>((vx * 0x1111u) & rows);
    tp.n = __builtin_popcount(m);
    // compress in registers (a compressing store to memory is slow on some cores)
    _mm512_storeu_ps(tp.w, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xw, yw)));
    _mm512_storeu_ps(tp.cx, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xs, yw)));
    _mm512_storeu_ps(tp.cy, _mm512_maskz_compress_ps(m, _mm512_mul_ps(xw, ys)));
    const __m512i o = _mm512_maskz_compress_epi32(m, off);
    _mm512_storeu_si512(tp.off, _mm512_maskz_cvtepi32_epi64(0xff, _mm512_maskz_extracti64x4_epi64(0xff, o, 0)));
    _mm512_storeu_si512(tp.off + 8, _mm512_maskz_cvtepi32_epi64(0xff, _mm512_maskz_extracti64x4_epi64(0xff, o, 1)));
}

// Grid values -> source coordinates (unnormalize, then border clipping with PyTorch's gradient),
// 16 at a time, as source_index does one at a time; *d = the derivative.
GSAMP_AVX512 inline __m512 unnormalize_vec(bool align, __m512 v, int64_t size, __m512 *d) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    if (align) {
        *d = _mm512_set1_ps(static_cast<float>(size - 1) / 2);
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_add_ps(v, one), half), _mm512_set1_ps(static_cast<float>(size - 1)));
    }
    *d = _mm512_set1_ps(static_cast<float>(size) / 2);
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(v, one), _mm512_set1_ps(static_cast<float>(size))), one), half);
}
GSAMP_AVX512 inline __m512 source_vec(const Geometry &g, __m512 v, int64_t size, __m512 *d) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 c = unnormalize_vec(g.align, v, size, d);
    if (g.padding == Padding::Border) {
        const __m512 top = _mm512_set1_ps(static_cast<float>(size - 1));
        const __mmask16 below = _mm512_cmp_ps_mask(c, zero, _CMP_LE_OQ);
        c = _mm512_mask_blend_ps(below, c, zero);
        const __mmask16 above = _mm512_cmp_ps_mask(c, top, _CMP_GE_OQ);
        c = _mm512_mask_blend_ps(above, c, top);
        *d = _mm512_mask_blend_ps(static_cast<__mmask16>(below | above), *d, zero);
    }
    return c;
}
// Lanes holding an index of [0, size) (NaN fails).
GSAMP_AVX512 inline __mmask16 inside_vec(__m512 c, int64_t size) {
    return static_cast<__mmask16>(_mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_GE_OQ) &
                                  _mm512_cmp_ps_mask(c, _mm512_set1_ps(static_cast<float>(size - 1)), _CMP_LE_OQ));
}

// Bilinear taps of a tile of np <= 16 samples with zeros or border padding, 16 samples at once
// (same arithmetic as pixel_taps: unnormalize, clip with PyTorch's border gradient, floor,
// weights nw, ne, sw, se, bounds), then one 16 x 16 transpose turns the corner vectors into one
// record per sample, compressed to its valid corners.
GSAMP_AVX512 void bilinear_tile_avx(const Geometry &g, const float *gv, int64_t np, TileTaps<4> &tt, float *mx,
                                    float *my) {
    const __mmask16 mp = tail16(np);
    const __m512 lo = _mm512_maskz_loadu_ps(tail16(2 * np), gv), hi = _mm512_maskz_loadu_ps(tail16(2 * np - 16), gv + 16);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 x = _mm512_maskz_permutex2var_ps(kAll, lo, even, hi);
    const __m512 y = _mm512_maskz_permutex2var_ps(kAll, lo, _mm512_add_epi32(even, _mm512_set1_epi32(1)), hi);
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 dx, dy;
    const __m512 ix = source_vec(g, x, g.W, &dx), iy = source_vec(g, y, g.H, &dy);
    _mm512_storeu_ps(mx, dx);
    _mm512_storeu_ps(my, dy);
    const __m512 x0 = _mm512_maskz_roundscale_ps(kAll, ix, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 y0 = _mm512_maskz_roundscale_ps(kAll, iy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 x1 = _mm512_add_ps(x0, one), y1 = _mm512_add_ps(y0, one);
    const __m512 dx1 = _mm512_sub_ps(ix, x0), dx0 = _mm512_sub_ps(x1, ix), dy1 = _mm512_sub_ps(iy, y0), dy0 = _mm512_sub_ps(y1, iy);
    const __mmask16 vx0 = inside_vec(x0, g.W), vx1 = inside_vec(x1, g.W), vy0 = inside_vec(y0, g.H), vy1 = inside_vec(y1, g.H);
    const __m512i W32 = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    const __m512i c0 = _mm512_maskz_cvttps_epi32(vx0, x0), c1 = _mm512_maskz_cvttps_epi32(vx1, x1);
    const __m512i r0 = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy0, y0), W32);
    const __m512i r1 = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy1, y1), W32);
    const __m512 nzero = _mm512_setzero_ps();
    _mm512_store_ps(tt.w[0], _mm512_mul_ps(dx0, dy0));
    _mm512_store_ps(tt.w[1], _mm512_mul_ps(dx1, dy0));
    _mm512_store_ps(tt.w[2], _mm512_mul_ps(dx0, dy1));
    _mm512_store_ps(tt.w[3], _mm512_mul_ps(dx1, dy1));
    _mm512_store_ps(tt.cx[0], _mm512_sub_ps(nzero, dy0));
    _mm512_store_ps(tt.cx[1], dy0);
    _mm512_store_ps(tt.cx[2], _mm512_sub_ps(nzero, dy1));
    _mm512_store_ps(tt.cx[3], dy1);
    _mm512_store_ps(tt.cy[0], _mm512_sub_ps(nzero, dx0));
    _mm512_store_ps(tt.cy[1], _mm512_sub_ps(nzero, dx1));
    _mm512_store_ps(tt.cy[2], dx0);
    _mm512_store_ps(tt.cy[3], dx1);
    _mm512_store_si512(tt.off[0], _mm512_add_epi32(r0, c0));
    _mm512_store_si512(tt.off[1], _mm512_add_epi32(r0, c1));
    _mm512_store_si512(tt.off[2], _mm512_add_epi32(r1, c0));
    _mm512_store_si512(tt.off[3], _mm512_add_epi32(r1, c1));
    // corner masks -> one byte per sample: bit t = corner t inside
    const __m512i bit = _mm512_set1_epi32(1);
    __m512i m = _mm512_maskz_mov_epi32(static_cast<__mmask16>(vy0 & vx0), bit);
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy0 & vx1), m, _mm512_set1_epi32(2));
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy1 & vx0), m, _mm512_set1_epi32(4));
    m = _mm512_mask_or_epi32(m, static_cast<__mmask16>(vy1 & vx1), m, _mm512_set1_epi32(8));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(tt.mask), _mm512_maskz_cvtepi32_epi16(kAll, m));
    (void)mp;
    (void)np;
}
#endif

// Keys weight (or its t-slope) of tap i (at -1, 0, 1, 2) for fractions t, 16 samples at once.
GSAMP_AVX512 inline void keys_vec(__m512 t, int i, __m512 *w, __m512 *s) {
    // distance d = t+1, t, 1-t, 2-t; |d| <= 1: 1.25 d^3 - 2.25 d^2 + 1, else -0.75 d^3 + 3.75 d^2 - 6 d + 3
    static const float base[4] = {1, 0, 1, 2}, sg[4] = {1, 1, -1, -1};
    const bool far = i == 0 || i == 3;
    const __m512 d = _mm512_fmadd_ps(t, _mm512_set1_ps(sg[i]), _mm512_set1_ps(base[i]));
    const __m512 a3 = _mm512_set1_ps(far ? -0.75f : 1.25f), a2 = _mm512_set1_ps(far ? 3.75f : -2.25f);
    const __m512 a1 = _mm512_set1_ps(far ? -6.0f : 0.0f), a0 = _mm512_set1_ps(far ? 3.0f : 1.0f);
    *w = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(a3, d, a2), d, a1), d, a0);
    const __m512 b2 = _mm512_set1_ps(far ? -2.25f : 3.75f), b1 = _mm512_set1_ps(far ? 7.5f : -4.5f);
    *s = _mm512_mul_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(b2, d, b1), d, a1), _mm512_set1_ps(sg[i]));
}

// Bicubic taps of a tile of np <= 16 samples with zeros or border padding, 16 samples at once: the
// 4 x and 4 y weights, slopes, padded coordinates and bounds per sample lane, then the 16 taps
// (4 j + i) as products, stored tap-major with one validity mask per sample.
GSAMP_AVX512 void bicubic_tile_avx(const Geometry &g, const float *gv, int64_t np, TileTaps<16> &tt, float *mx,
                                   float *my) {
    const __m512 lo = _mm512_maskz_loadu_ps(tail16(2 * np), gv), hi = _mm512_maskz_loadu_ps(tail16(2 * np - 16), gv + 16);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 x = _mm512_maskz_permutex2var_ps(kAll, lo, even, hi);
    const __m512 y = _mm512_maskz_permutex2var_ps(kAll, lo, _mm512_add_epi32(even, _mm512_set1_epi32(1)), hi);
    __m512 dx, dy;
    const __m512 ix = unnormalize_vec(g.align, x, g.W, &dx), iy = unnormalize_vec(g.align, y, g.H, &dy);
    _mm512_storeu_ps(mx, dx);
    _mm512_storeu_ps(my, dy);
    const __m512 x0 = _mm512_maskz_roundscale_ps(kAll, ix, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 y0 = _mm512_maskz_roundscale_ps(kAll, iy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 tx = _mm512_sub_ps(ix, x0), ty = _mm512_sub_ps(iy, y0);
    __m512 xw[4], xs[4], yw[4], ys[4];
    __m512i col[4], row[4];
    __mmask16 vx[4], vy[4];
    const __m512 zero = _mm512_setzero_ps();
    const __m512 wm = _mm512_set1_ps(static_cast<float>(g.W - 1)), hm = _mm512_set1_ps(static_cast<float>(g.H - 1));
    for (int i = 0; i < 4; ++i) {
        keys_vec(tx, i, &xw[i], &xs[i]);
        keys_vec(ty, i, &yw[i], &ys[i]);
        __m512 cx = _mm512_add_ps(x0, _mm512_set1_ps(static_cast<float>(i - 1)));
        __m512 cy = _mm512_add_ps(y0, _mm512_set1_ps(static_cast<float>(i - 1)));
        if (g.padding == Padding::Border) {  // clip each tap; NaN stays NaN
            cx = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cx, zero, _CMP_LE_OQ), cx, zero);
            cx = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cx, wm, _CMP_GE_OQ), cx, wm);
            cy = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cy, zero, _CMP_LE_OQ), cy, zero);
            cy = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(cy, hm, _CMP_GE_OQ), cy, hm);
        }
        vx[i] = inside_vec(cx, g.W);
        vy[i] = inside_vec(cy, g.H);
        col[i] = _mm512_maskz_cvttps_epi32(vx[i], cx);
        row[i] = _mm512_mullo_epi32(_mm512_maskz_cvttps_epi32(vy[i], cy), _mm512_set1_epi32(static_cast<int32_t>(g.W)));
    }
    __m512i mask = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
            const int t = 4 * j + i;
            _mm512_store_ps(tt.w[t], _mm512_mul_ps(xw[i], yw[j]));
            _mm512_store_ps(tt.cx[t], _mm512_mul_ps(xs[i], yw[j]));
            _mm512_store_ps(tt.cy[t], _mm512_mul_ps(xw[i], ys[j]));
            _mm512_store_si512(tt.off[t], _mm512_add_epi32(row[j], col[i]));
            mask = _mm512_mask_or_epi32(mask, static_cast<__mmask16>(vx[i] & vy[j]), mask, _mm512_set1_epi32(1 << t));
        }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(tt.mask), _mm512_maskz_cvtepi32_epi16(kAll, mask));
}

// The taps of one sample: the vector bicubic builder where it applies, else pixel_taps.
template <class T>
inline void make_taps(const Geometry &g, T x, T y, Taps<T> &tp, T *mx, T *my, bool avx) {
#if GSAMP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx && g.interp == Interp::Bicubic && g.padding != Padding::Reflection && g.H * g.W < (int64_t{1} << 31))
            return bicubic_taps_avx(g, x, y, tp, mx, my);
    }
#endif
    (void)avx;
    pixel_taps(g, x, y, tp, mx, my);
}

// ---- phase A: input (C, H*W) -> (H*W, C) in T, pixels [hw0, hw0 + len) of image n ----
template <class T>
void transpose_input_block(const BackwardPlan &P, const void *input, T *inT, int64_t n, int64_t hw0, int64_t len,
                           int64_t c_lo, int64_t c_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels();
#if GSAMP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx) return transpose_input_avx(g, P.e.input, input, inT, n, hw0, len, c_lo, c_hi);
    }
#endif
    alignas(64) T row[kRowBlock];
    const int64_t c_pad = c_hi == g.C ? c_lo + (P.Cp - g.C) + (c_hi - c_lo) : c_hi;  // the last block's zero lanes
    for (int64_t c = c_lo; c < c_pad; ++c) {
        const int64_t c0 = c / kChanBlock * kChanBlock, ld = lane_width(std::min(kChanBlock, g.C - c0));
        T *dst = inT + n * HW * P.Cp + c0 * HW + hw0 * ld + (c - c0);
        if (c < g.C) load_row(at(input, (n * g.C + c) * HW + hw0, P.e.input), P.e.input, len, row, avx);
        for (int64_t i = 0; i < len; ++i) dst[i * ld] = c < g.C ? row[i] : T(0);
    }
}

// ---- phase B: one task, output pixels [pb, pe) of image n ----
// Channel blocks outermost: block b's channels-last input and accumulator (H*W x 16 values) stay in
// the core's L2 cache while every pixel of the task visits them, however random the grid; the taps
// are recomputed per block (cheaper than the cache misses). gsum (2 per pixel) carries gridGrad's
// partial sums from block to block, in ascending block order.
template <class T>
void run_task(const BackwardPlan &P, const BackwardOperands &ops, const T *inT, T *acc, T *gsum, int64_t n, int64_t pb,
              int64_t pe, int64_t b_lo, int64_t b_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t C = g.C, HW = g.in_pixels(), Pn = g.out_pixels();
    alignas(64) T gridv[2 * kTile], ggv[2 * kTile], row[kTile];
    alignas(64) T tile[kTile * kChanBlock];
    // Two tiles of taps: the next tile's are computed, and their cache lines prefetched, before the
    // current tile runs, so the scattered accesses overlap instead of stalling one by one.
    Taps<T> taps[2][kTile];
    TileTaps<4> tiles[2];      // the vector paths' taps: bilinear
    TileTaps<16> tiles16[2];   // bicubic
    const bool tiled = std::is_same_v<T, float> && P.bilinear_vec && avx;
    const bool tiled16 = std::is_same_v<T, float> && P.bicubic_vec && avx;
    T mx[2][kTile], my[2][kTile];
    const bool zero_gg = !P.need_in;  // nearest: PyTorch's grid gradient is 0
    const int64_t nblk = P.need_go ? (C + kChanBlock - 1) / kChanBlock : 1;
    for (int64_t b = b_lo; b < std::min(b_hi, nblk); ++b) {
        const int64_t c0 = b * kChanBlock, w = std::min(kChanBlock, C - c0), ld = lane_width(w);
        const T *in_b = P.need_in ? inT + c0 * HW : nullptr;
        T *acc_b = P.want_ig ? acc + c0 * HW : nullptr;
        const bool last = b + 1 == nblk;
        auto prepare = [&](int64_t p0, int slot) {
            const int64_t np = std::min(kTile, pe - p0);
            const T *gv = gridv;
            if (P.e.grid == elem_of<T>()) gv = static_cast<const T *>(ops.grid) + (n * Pn + p0) * 2;  // in place
            else load_row(at(ops.grid, (n * Pn + p0) * 2, P.e.grid), P.e.grid, 2 * np, gridv, avx);
#if GSAMP_X86
            if constexpr (sizeof(T) == 4) {
                if (tiled) {
                    bilinear_tile_avx(g, gv, np, tiles[slot], mx[slot], my[slot]);
                    for (int64_t i = 0; i < np; ++i)  // the two rows' lines (invalid corners hold 0: harmless)
                        for (int t = 0; t < 4; t += 2) {
                            const int64_t o = int64_t{tiles[slot].off[t][i]} * ld;
                            if (acc_b) __builtin_prefetch(acc_b + o, 1, 3);
                            if (in_b) __builtin_prefetch(in_b + o, 0, 3);
                        }
                    return;
                }
                if (tiled16) {
                    bicubic_tile_avx(g, gv, np, tiles16[slot], mx[slot], my[slot]);
                    for (int64_t i = 0; i < np; ++i)  // the four rows' first and last taps
                        for (int t = 0; t < 16; t += 3) {
                            const int64_t o = int64_t{tiles16[slot].off[t][i]} * ld;
                            if (acc_b) __builtin_prefetch(acc_b + o, 1, 3);
                            if (in_b) __builtin_prefetch(in_b + o, 0, 3);
                        }
                    return;
                }
            }
#endif
            for (int64_t i = 0; i < np; ++i) {
                Taps<T> &tp = taps[slot][i];
                make_taps(g, gv[2 * i], gv[2 * i + 1], tp, &mx[slot][i], &my[slot][i], avx);
                for (int t = 0; t < tp.n; ++t) {
                    const int64_t o = tp.off[t] * ld;
                    if (acc_b) __builtin_prefetch(acc_b + o, 1, 3);
                    if (in_b) __builtin_prefetch(in_b + o, 0, 3);
                }
            }
        };
        prepare(pb, 0);
        for (int64_t p0 = pb, slot = 0; p0 < pe; p0 += kTile, slot ^= 1) {
            const int64_t np = std::min(kTile, pe - p0);
            if (p0 + kTile < pe) prepare(p0 + kTile, static_cast<int>(slot ^ 1));
            T *gs = gsum + 2 * (p0 - pb);
            bool gg_done = false;  // gridGrad already in its output (or in ggv)
            if (P.need_go) {
                bool done = false, done_channels = false;
                int64_t tile_ld = kChanBlock;
#if GSAMP_X86
                if constexpr (sizeof(T) == 4) {
                    if (avx) {
                        tile_ld = ld == 4 ? 4 : kChanBlock;
                        load_go_tile_avx(ops.grad_output, P.e.grad_output, (n * C + c0) * Pn + p0, Pn, np, w, tile, tile_ld);
                        done = true;
                    }
                }
#endif
                for (int64_t c = 0; c < w && !done; ++c) {
                    load_row(at(ops.grad_output, ((n * C + c0 + c) * Pn + p0), P.e.grad_output), P.e.grad_output, np, row,
                             avx);
                    for (int64_t i = 0; i < np; ++i) tile[i * kChanBlock + c] = row[i];
                }
#if GSAMP_X86
                if constexpr (sizeof(T) == 4) {
                    if (avx && ld > 1) {
                        float *gsp = P.need_in ? gs : nullptr;
                        float *out = nullptr;  // the last block writes gridGrad itself
                        if (P.need_in && P.want_gg && last) {
                            out = P.e.grid_grad == Elem::F32 ? static_cast<float *>(ops.grid_grad) + (n * Pn + p0) * 2
                                                             : reinterpret_cast<float *>(ggv);
                            gg_done = true;
                        }
                        const float *fmx = reinterpret_cast<const float *>(mx[slot]), *fmy = reinterpret_cast<const float *>(my[slot]);
                        if (tiled)
                            tile_channels_avx([&](int64_t i) { return TileView<4>{tiles[slot], i}; }, np, tile, tile_ld, w, ld,
                                              in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else if (tiled16)
                            tile_channels_avx([&](int64_t i) { return TileView<16>{tiles16[slot], i}; }, np, tile, tile_ld, w,
                                              ld, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        else
                            tile_channels_avx([&](int64_t i) { return CompactView<float>{taps[slot][i]}; }, np, tile, tile_ld,
                                              w, ld, in_b, acc_b, gsp, b == 0, fmx, fmy, out);
                        done_channels = true;
                    }
                }
#endif
                for (int64_t i = 0; i < np && !done_channels; ++i) {
                    T sx = 0, sy = 0;
                    if (tiled) channels(TileView<4>{tiles[slot], i}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    else if (tiled16) channels(TileView<16>{tiles16[slot], i}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    else channels(CompactView<T>{taps[slot][i]}, tile + i * tile_ld, w, in_b, acc_b, ld, &sx, &sy, avx);
                    if (P.need_in) {
                        gs[2 * i] = b == 0 ? sx : gs[2 * i] + sx;
                        gs[2 * i + 1] = b == 0 ? sy : gs[2 * i + 1] + sy;
                    }
                }
            }
            if (P.want_gg && last) {
                const bool direct = P.e.grid_grad == elem_of<T>();
                T *out = direct ? static_cast<T *>(ops.grid_grad) + (n * Pn + p0) * 2 : ggv;
                for (int64_t i = 0; i < np && !gg_done; ++i) {
                    out[2 * i] = zero_gg ? T(0) : mx[slot][i] * gs[2 * i];
                    out[2 * i + 1] = zero_gg ? T(0) : my[slot][i] * gs[2 * i + 1];
                }
                if (!direct) store_row(ggv, 2 * np, P.e.grid_grad, at(ops.grid_grad, (n * Pn + p0) * 2, P.e.grid_grad), avx);
            }
        }
    }
}

// ---- phase C: inputGrad[n] = sum_k acc[n][k], (H*W, C) -> (C, H*W), rounded once; pixels
// [hw0, hw0 + len) of image n. Both paths add in ascending k: the same bits. ----
template <class T>
void reduce_block(const BackwardPlan &P, const T *acc, void *input_grad, int64_t n, int64_t hw0, int64_t len, int64_t c_lo,
                  int64_t c_hi, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), K = P.K, C = g.C;
#if GSAMP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx) return reduce_accumulators_avx(g, K, P.e.input_grad, acc, input_grad, n, hw0, len, c_lo, c_hi);
    }
#endif
    alignas(64) T row[kRowBlock];
    for (int64_t c = c_lo; c < c_hi; ++c) {
        const int64_t c0 = c / kChanBlock * kChanBlock, ld = lane_width(std::min(kChanBlock, C - c0));
        const T *src = acc + n * K * HW * P.Cp + c0 * HW + hw0 * ld + (c - c0);
        for (int64_t i = 0; i < len; ++i) {
            T s = src[i * ld];
            for (int64_t k = 1; k < K; ++k) s += src[k * HW * P.Cp + i * ld];
            row[i] = s;
        }
        store_row(row, len, P.e.input_grad, at(input_grad, (n * C + c) * HW + hw0, P.e.input_grad), avx);
    }
}

// Blocks of kRowBlock input pixels of image n, or of every image in parallel.
template <class F>
void for_image_blocks(const Geometry &g, int64_t n, F &&f) {
    const int64_t HW = g.in_pixels();
    for (int64_t hw0 = 0; hw0 < HW; hw0 += kRowBlock) f(n, hw0, std::min(kRowBlock, HW - hw0));
}
template <class F>
void for_all_blocks(const Geometry &g, F &&f) {
    const int64_t HW = g.in_pixels(), nb = (HW + kRowBlock - 1) / kRowBlock;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * nb), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t b = r.begin(); b < r.end(); ++b) {
            const int64_t hw0 = (b % nb) * kRowBlock;
            f(b / nb, hw0, std::min(kRowBlock, HW - hw0));
        }
    });
}

template <class T>
void run_typed(const BackwardPlan &P, const BackwardOperands &ops, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), Pn = g.out_pixels(), K = P.K, C = g.C;
    const bool transpose = P.need_in && !P.in_direct, reduce = P.want_ig && !P.acc_direct;
    const T *inT = P.in_direct ? static_cast<const T *>(ops.input) : reinterpret_cast<const T *>(ops.scratch);
    T *inT_buf = reinterpret_cast<T *>(ops.scratch);
    T *acc = P.acc_direct ? static_cast<T *>(ops.input_grad)
                          : reinterpret_cast<T *>(static_cast<char *>(ops.scratch) + P.acc_offset);
    T *gsum0 = reinterpret_cast<T *>(static_cast<char *>(ops.scratch) + P.gsum_offset);
    // Task t = (n, k), channel blocks [b_lo, b_hi) (channels [c_lo, c_hi)).
    auto task = [&](int64_t t, int64_t b_lo, int64_t b_hi) {
        const int64_t n = t / K, k = t % K, c_lo = b_lo * kChanBlock, c_hi = std::min(C, b_hi * kChanBlock);
        T *acc_t = nullptr;
        if (P.want_ig) {
            acc_t = acc + t * HW * P.Cp;
            const int64_t c_end = c_hi == C ? P.Cp : c_hi;  // with the last block's pad lanes
            std::memset(acc_t + c_lo * HW, 0, static_cast<size_t>(HW * (c_end - c_lo)) * sizeof(T));
        }
        run_task<T>(P, ops, P.need_in ? inT + n * HW * P.Cp : nullptr, acc_t, gsum0 + t * P.gsum_stride, n, k * Pn / K,
                    (k + 1) * Pn / K, b_lo, b_hi, avx);
    };
    const int64_t nblk = (C + kChanBlock - 1) / kChanBlock;
    if (K == 1) {
        // One task per image, one channel block at a time: the block's transposed input and
        // accumulator (2 x H*W x 16 values) stay in cache from the transpose to the reduction.
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N, 1), [&](const tbb::blocked_range<int64_t> &r) {
            for (int64_t n = r.begin(); n < r.end(); ++n)
                for (int64_t b = 0; b < nblk; ++b) {
                    const int64_t c_lo = b * kChanBlock, c_hi = std::min(C, c_lo + kChanBlock);
                    if (transpose)
                        for_image_blocks(g, n, [&](int64_t nn, int64_t hw0, int64_t len) {
                            transpose_input_block<T>(P, ops.input, inT_buf, nn, hw0, len, c_lo, c_hi, avx);
                        });
                    task(n, b, b + 1);
                    if (reduce)
                        for_image_blocks(g, n, [&](int64_t nn, int64_t hw0, int64_t len) {
                            reduce_block<T>(P, acc, ops.input_grad, nn, hw0, len, c_lo, c_hi, avx);
                        });
                }
        });
        return;
    }
    if (transpose)
        for_all_blocks(g, [&](int64_t n, int64_t hw0, int64_t len) {
            transpose_input_block<T>(P, ops.input, inT_buf, n, hw0, len, 0, C, avx);
        });
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * K, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t t = r.begin(); t < r.end(); ++t) task(t, 0, nblk);
    });
    if (reduce)
        for_all_blocks(g, [&](int64_t n, int64_t hw0, int64_t len) {
            reduce_block<T>(P, acc, ops.input_grad, n, hw0, len, 0, C, avx);
        });
}

}  // namespace

int64_t BackwardKernel::tasks_per_image(const Geometry &g) {
    if (g.N >= kMinTasks) return 1;
    const int64_t want = (kMinTasks + g.N - 1) / std::max<int64_t>(g.N, 1);
    const int64_t cap = std::max<int64_t>(1, g.out_pixels() / kMinTaskPixels);
    return std::max<int64_t>(1, std::min(want, cap));
}

BackwardKernel::BackwardKernel(const Geometry &g, BackwardElems e, bool want_ig, bool want_gg, bool f64) {
    auto P = std::make_shared<BackwardPlan>();
    P->g = g;
    P->e = e;
    P->want_ig = want_ig;
    P->want_gg = want_gg;
    P->f64 = f64;
    P->need_in = want_gg && g.interp != Interp::Nearest;
    P->need_go = want_ig || P->need_in;
    P->K = tasks_per_image(g);
    const Elem te = f64 ? Elem::F64 : Elem::F32;
    const int64_t ts = f64 ? 8 : 4;
    P->in_direct = g.C == 1 && e.input == te;
    P->acc_direct = g.C == 1 && P->K == 1 && e.input_grad == te;
    P->Cp = padded_channels(g.C);
    P->bilinear_vec = !f64 && g.interp == Interp::Bilinear && g.padding != Padding::Reflection &&
                      g.in_pixels() < (int64_t{1} << 31);
    P->bicubic_vec = !f64 && g.interp == Interp::Bicubic && g.padding != Padding::Reflection &&
                     g.in_pixels() < (int64_t{1} << 31);
    P->in_bytes = P->need_in && !P->in_direct ? g.N * g.in_pixels() * P->Cp * ts : 0;
    P->acc_offset = static_cast<int64_t>(round64(static_cast<uint64_t>(P->in_bytes)) + (P->in_bytes ? 2048 + 64 : 0));
    P->acc_bytes = want_ig && !P->acc_direct ? g.N * P->K * g.in_pixels() * P->Cp * ts : 0;
    P->gsum_offset = static_cast<int64_t>(round64(static_cast<uint64_t>(P->acc_offset + P->acc_bytes)));
    P->gsum_stride = P->need_in ? 2 * ((g.out_pixels() + P->K - 1) / P->K) : 0;
    const int64_t gsum_bytes = g.N * P->K * P->gsum_stride * ts;
    P->scratch = gsum_bytes ? static_cast<uint64_t>(P->gsum_offset + gsum_bytes)
                 : P->acc_bytes ? static_cast<uint64_t>(P->acc_offset + P->acc_bytes)
                                : static_cast<uint64_t>(P->in_bytes);
    plan_ = std::move(P);
}

uint64_t BackwardKernel::scratch_bytes() const { return plan_->scratch; }

void BackwardKernel::run(const BackwardOperands &ops) const {
    const BackwardPlan &P = *plan_;
    const bool avx = use_avx512(isa_);
    if (P.f64) run_typed<double>(P, ops, avx);
    else run_typed<float>(P, ops, avx);
}

}  // namespace gsamp
