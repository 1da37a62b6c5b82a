// GridSampler2DBackward kernel (contract in grid_backward.hpp). Three phases in one node:
//   A  input -> channels-last FLOAT/double copy per image (only for gridGrad, and only when C > 1
//      or the element type differs from the compute type);
//   B  tasks (n, k): taps of 16 output pixels at a time, then for every channel block the tile of
//      gradOutput (transposed on the fly) scatters into the task's accumulator and gathers the
//      input for gridGrad; gridGrad is stored per tile;
//   C  inputGrad[n] = sum over k of the accumulators in ascending k, back to (C, H, W), rounded once.
// When C == 1, K == 1 and inputGrad is already in the compute type, B accumulates straight into it
// and C is skipped.
#include "grid_backward.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "grid_rows.hpp"
#include "grid_taps.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GSAMP_X86 1
#include <immintrin.h>
#define GSAMP_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define GSAMP_X86 0
#endif

namespace gsamp {

// Shape-only work split: at least kMinTasks tasks overall when the pixels allow, each of at least
// kMinTaskPixels output pixels. Never depends on the thread count.
constexpr int64_t kMinTasks = 16;
constexpr int64_t kMinTaskPixels = 1024;
constexpr int64_t kTile = 16;        // output pixels whose taps are computed together
constexpr int64_t kChanBlock = 64;   // channels of one transposed gradOutput tile
constexpr int64_t kRowBlock = 256;   // pixels per block of the phase A / C transposes
constexpr int64_t kVectorMinC = 8;   // channel vectors pay off from this many channels

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

template <class T>
void channels_scalar(const Tap<T> *taps, int nt, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx,
                     T *gy) {
    T ax = 0, ay = 0;
    for (int64_t c = 0; c < nc; ++c) {
        const T g = go[c];
        T sx = 0, sy = 0;
        for (int t = 0; t < nt; ++t) {
            const int64_t o = taps[t].off * C + c;
            if (acc) acc[o] += taps[t].w * g;
            if (in) {
                sx += taps[t].cx * in[o];
                sy += taps[t].cy * in[o];
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
GSAMP_AVX512 inline __mmask16 tail16(int64_t n) { return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1u); }

// Sum of the 16 lanes in a fixed pairwise order (the intrinsic _mm512_reduce_add_ps trips GCC 12's
// -Wmaybe-uninitialized).
GSAMP_AVX512 inline float lane_sum(__m512 v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) t[i] += t[i + w];
    return t[0];
}

GSAMP_AVX512 void channels_avx(const Tap<float> *taps, int nt, const float *go, int64_t nc, const float *in,
                               float *acc, int64_t C, float *gx, float *gy) {
    __m512 ax = _mm512_setzero_ps(), ay = _mm512_setzero_ps();
    for (int64_t c = 0; c < nc; c += 16) {
        const __mmask16 m = tail16(nc - c);
        const __m512 g = _mm512_maskz_loadu_ps(m, go + c);
        __m512 sx = _mm512_setzero_ps(), sy = _mm512_setzero_ps();
        for (int t = 0; t < nt; ++t) {
            const int64_t o = taps[t].off * C + c;
            if (acc) {
                float *p = acc + o;
                _mm512_mask_storeu_ps(p, m, _mm512_fmadd_ps(_mm512_set1_ps(taps[t].w), g, _mm512_maskz_loadu_ps(m, p)));
            }
            if (in) {
                const __m512 v = _mm512_maskz_loadu_ps(m, in + o);
                sx = _mm512_fmadd_ps(_mm512_set1_ps(taps[t].cx), v, sx);
                sy = _mm512_fmadd_ps(_mm512_set1_ps(taps[t].cy), v, sy);
            }
        }
        ax = _mm512_fmadd_ps(g, sx, ax);
        ay = _mm512_fmadd_ps(g, sy, ay);
    }
    if (in) {
        *gx += lane_sum(ax);
        *gy += lane_sum(ay);
    }
}
#endif

template <class T>
void channels(const Tap<T> *taps, int nt, const T *go, int64_t nc, const T *in, T *acc, int64_t C, T *gx, T *gy,
              bool avx) {
#if GSAMP_X86
    if constexpr (sizeof(T) == 4) {
        if (avx && C >= kVectorMinC) return channels_avx(taps, nt, go, nc, in, acc, C, gx, gy);
    }
#endif
    (void)avx;
    channels_scalar(taps, nt, go, nc, in, acc, C, gx, gy);
}

// ---- phase A: input (C, H*W) -> (H*W, C) in T ----
template <class T>
void transpose_input(const BackwardPlan &P, const void *input, T *inT, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), nb = (HW + kRowBlock - 1) / kRowBlock;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * nb), [&](const tbb::blocked_range<int64_t> &r) {
        alignas(64) T row[kRowBlock];
        for (int64_t b = r.begin(); b < r.end(); ++b) {
            const int64_t n = b / nb, hw0 = (b % nb) * kRowBlock, len = std::min(kRowBlock, HW - hw0);
            T *dst = inT + (n * HW + hw0) * g.C;
            for (int64_t c = 0; c < g.C; ++c) {
                load_row(at(input, (n * g.C + c) * HW + hw0, P.e.input), P.e.input, len, row, avx);
                for (int64_t i = 0; i < len; ++i) dst[i * g.C + c] = row[i];
            }
        }
    });
}

// ---- phase B: one task, output pixels [pb, pe) of image n ----
template <class T>
void run_task(const BackwardPlan &P, const BackwardOperands &ops, const T *inT, T *acc, int64_t n, int64_t pb,
              int64_t pe, bool avx) {
    const Geometry &g = P.g;
    const int64_t C = g.C, Pn = g.out_pixels();
    alignas(64) T gridv[2 * kTile], ggv[2 * kTile], row[kTile];
    alignas(64) T tile[kTile * kChanBlock];
    Tap<T> taps[kTile][kMaxTaps];
    int nt[kTile];
    T mx[kTile], my[kTile], sx[kTile], sy[kTile];
    for (int64_t p0 = pb; p0 < pe; p0 += kTile) {
        const int64_t np = std::min(kTile, pe - p0);
        load_row(at(ops.grid, (n * Pn + p0) * 2, P.e.grid), P.e.grid, 2 * np, gridv, avx);
        for (int64_t i = 0; i < np; ++i) {
            nt[i] = pixel_taps(g, gridv[2 * i], gridv[2 * i + 1], taps[i], &mx[i], &my[i]);
            sx[i] = sy[i] = 0;
        }
        if (P.need_go) {
            for (int64_t cb = 0; cb < C; cb += kChanBlock) {
                const int64_t nc = std::min(kChanBlock, C - cb);
                for (int64_t c = 0; c < nc; ++c) {
                    load_row(at(ops.grad_output, ((n * C + cb + c) * Pn + p0), P.e.grad_output), P.e.grad_output, np, row,
                             avx);
                    for (int64_t i = 0; i < np; ++i) tile[i * kChanBlock + c] = row[i];
                }
                for (int64_t i = 0; i < np; ++i)
                    channels(taps[i], nt[i], tile + i * kChanBlock, nc, P.need_in ? inT + cb : nullptr,
                             P.want_ig ? acc + cb : nullptr, C, &sx[i], &sy[i], avx);
            }
        }
        if (P.want_gg) {
            const bool zero = g.interp == Interp::Nearest;  // PyTorch: nearest has no grid gradient
            for (int64_t i = 0; i < np; ++i) {
                ggv[2 * i] = zero ? T(0) : mx[i] * sx[i];
                ggv[2 * i + 1] = zero ? T(0) : my[i] * sy[i];
            }
            store_row(ggv, 2 * np, P.e.grid_grad, at(ops.grid_grad, (n * Pn + p0) * 2, P.e.grid_grad), avx);
        }
    }
}

// ---- phase C: inputGrad[n] = sum_k acc[n][k], (H*W, C) -> (C, H*W), rounded once ----
template <class T>
void reduce_accumulators(const BackwardPlan &P, const T *acc, void *input_grad, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), nb = (HW + kRowBlock - 1) / kRowBlock, K = P.K, C = g.C;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * nb), [&](const tbb::blocked_range<int64_t> &r) {
        alignas(64) T row[kRowBlock];
        for (int64_t b = r.begin(); b < r.end(); ++b) {
            const int64_t n = b / nb, hw0 = (b % nb) * kRowBlock, len = std::min(kRowBlock, HW - hw0);
            const T *src = acc + (n * K * HW + hw0) * C;
            for (int64_t c = 0; c < C; ++c) {
                for (int64_t i = 0; i < len; ++i) {
                    T s = src[i * C + c];
                    for (int64_t k = 1; k < K; ++k) s += src[(k * HW + i) * C + c];
                    row[i] = s;
                }
                store_row(row, len, P.e.input_grad, at(input_grad, (n * C + c) * HW + hw0, P.e.input_grad), avx);
            }
        }
    });
}

template <class T>
void run_typed(const BackwardPlan &P, const BackwardOperands &ops, bool avx) {
    const Geometry &g = P.g;
    const int64_t HW = g.in_pixels(), Pn = g.out_pixels(), K = P.K;
    const T *inT = nullptr;
    if (P.need_in) {
        if (P.in_direct) {
            inT = static_cast<const T *>(ops.input);
        } else {
            T *buf = reinterpret_cast<T *>(ops.scratch);
            transpose_input(P, ops.input, buf, avx);
            inT = buf;
        }
    }
    T *acc = nullptr;
    if (P.want_ig)
        acc = P.acc_direct ? static_cast<T *>(ops.input_grad)
                           : reinterpret_cast<T *>(static_cast<char *>(ops.scratch) + P.acc_offset);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, g.N * K, 1), [&](const tbb::blocked_range<int64_t> &r) {
        for (int64_t t = r.begin(); t < r.end(); ++t) {
            const int64_t n = t / K, k = t % K;
            T *acc_t = nullptr;
            if (acc) {
                acc_t = acc + t * HW * g.C;
                std::memset(acc_t, 0, static_cast<size_t>(HW * g.C) * sizeof(T));
            }
            run_task<T>(P, ops, inT ? inT + n * HW * g.C : nullptr, acc_t, n, k * Pn / K, (k + 1) * Pn / K, avx);
        }
    });
    if (P.want_ig && !P.acc_direct) reduce_accumulators<T>(P, acc, ops.input_grad, avx);
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
    P->in_bytes = P->need_in && !P->in_direct ? g.N * g.in_pixels() * g.C * ts : 0;
    P->acc_offset = static_cast<int64_t>(round64(static_cast<uint64_t>(P->in_bytes)));
    P->acc_bytes = want_ig && !P->acc_direct ? g.N * P->K * g.in_pixels() * g.C * ts : 0;
    plan_ = std::move(P);
}

uint64_t BackwardKernel::scratch_bytes() const {
    const BackwardPlan &P = *plan_;
    if (P.acc_bytes == 0) return static_cast<uint64_t>(P.in_bytes);
    return static_cast<uint64_t>(P.acc_offset + P.acc_bytes);
}

void BackwardKernel::run(const BackwardOperands &ops) const {
    const BackwardPlan &P = *plan_;
    const bool avx = use_avx512(isa_);
    if (P.f64) run_typed<double>(P, ops, avx);
    else run_typed<float>(P, ops, avx);
}

}  // namespace gsamp
