#include "depthwise.hpp"

#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "aclnn_cpu/numeric.hpp"

namespace conv {

namespace {

// Row primitives in two spellings with the same arithmetic (a multiply, then an add, per element;
// the dot product keeps 16 lanes, lane i % 16, combined in one fixed order): AVX-512 and scalar.
#define DW_AVX512 __attribute__((target("avx512f")))
constexpr __mmask16 kAll = 0xffff;

DW_AVX512 void axpy_avx(float *acc, const float *u, float a, int64_t n) {
    const __m512 va = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_mul_ps(va, _mm512_loadu_ps(u + i))));
    if (i < n) {
        const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(acc + i, m,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + i), _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, u + i))));
    }
}
void axpy_scalar(float *acc, const float *u, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + a * u[i];
}

double combine(const float *lane) {
    double s[8];
    for (int j = 0; j < 8; ++j) s[j] = static_cast<double>(lane[j]) + static_cast<double>(lane[j + 8]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
DW_AVX512 double dot_avx(const float *x, const float *y, int64_t n) {
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
    alignas(64) float lane[16];
    _mm512_store_ps(lane, acc);
    return combine(lane);
}
double dot_scalar(const float *x, const float *y, int64_t n) {
    float lane[16] = {};
    for (int64_t i = 0; i < n; ++i) lane[i % 16] = lane[i % 16] + x[i] * y[i];
    return combine(lane);
}

bool has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

// n elements of a dense FLOAT or BF16 array, as FLOAT.
void load_row(const void *src, int64_t offset, Dt dt, float *dst, int64_t n) {
    if (dt == Dt::F32) {
        std::memcpy(dst, static_cast<const float *>(src) + offset, static_cast<size_t>(n) * sizeof(float));
        return;
    }
    const auto *h = static_cast<const uint16_t *>(src) + offset;
    for (int64_t i = 0; i < n; ++i) dst[i] = acp::bf16_to_float(h[i]);
}

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }
int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }

// The worker's scratch slot. Every thread of the arena (workers and the joining caller) has its own index.
template <class T>
T *slot(void *scratch, uint64_t slot_bytes, int slots) {
    const int i = tbb::this_task_arena::current_thread_index();
    if (i < 0 || i >= slots) throw std::runtime_error("depthwise: thread index outside the planned scratch slots");
    return reinterpret_cast<T *>(static_cast<uint8_t *>(scratch) + static_cast<uint64_t>(i) * slot_bytes);
}

}  // namespace

bool DepthwisePass::applies(const Geometry &g, bool transposed) {
    return !transposed && g.sd <= 2 && g.G > 1 && g.G == g.IC && g.IC == g.OC;
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
    Uh = H + ph + (kh - 1) * dh;
    Uw = W + pw + (kw - 1) * dw;
    const int64_t Wp = (Wo - 1) * sw + (kw - 1) * dw + 1;
    Mw = (Wp + sw - 1) / sw;
    // gradInput slot: U plane, an accumulator row, the channel's taps
    in_slot_ = round64(static_cast<uint64_t>(Uh * Uw + up16(W) + up16(kh * kw)) * sizeof(float));
    // gradWeight slot: the plane's stride phases, the padded input row, one gradient row
    w_slot_ = round64(static_cast<uint64_t>(sw * H * Mw + up16(Wp + sw) + up16(Wo)) * sizeof(float) +
                      static_cast<uint64_t>(kh * kw) * sizeof(double) + 64);
}

void DepthwisePass::grad_input(const void *dy, const void *w, float *dx, void *scratch) const {
    const bool avx = has_avx512();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        float *U = slot<float>(scratch, in_slot_, slots_);
        float *acc = U + Uh * Uw;
        float *taps = acc + up16(W);
        // Positions outside the upsampled gradient stay zero: every plane writes the same ones.
        std::fill(U, U + Uh * Uw, 0.0f);
        for (int64_t nc = r.begin(); nc < r.end(); ++nc) {
            const int64_t c = nc % C;
            load_row(w, c * kh * kw, dt_, taps, kh * kw);
            for (int64_t oh = 0; oh < Ho; ++oh) {
                const int64_t row = oh * sh + (kh - 1) * dh;
                if (row >= Uh) break;
                float *u = U + row * Uw + (kw - 1) * dw;
                if (sw == 1) {
                    load_row(dy, (nc * Ho + oh) * Wo, dt_, u, std::min(Wo, Uw - (kw - 1) * dw));
                } else {
                    for (int64_t ow = 0; ow < Wo && ow * sw + (kw - 1) * dw < Uw; ++ow) {
                        float v;
                        load_row(dy, (nc * Ho + oh) * Wo + ow, dt_, &v, 1);
                        u[ow * sw] = v;
                    }
                }
            }
            for (int64_t ih = 0; ih < H; ++ih) {
                std::fill(acc, acc + W, 0.0f);
                for (int64_t a = 0; a < kh; ++a) {
                    const float *urow = U + (ih + ph + (kh - 1 - a) * dh) * Uw;
                    for (int64_t b = 0; b < kw; ++b) {
                        const float *u = urow + pw + (kw - 1 - b) * dw;
                        if (avx) axpy_avx(acc, u, taps[a * kw + b], W);
                        else axpy_scalar(acc, u, taps[a * kw + b], W);
                    }
                }
                std::memcpy(dx + (nc * H + ih) * W, acc, static_cast<size_t>(W) * sizeof(float));
            }
        }
    });
}

void DepthwisePass::grad_weight(const void *x, const void *dy, float *dwt, void *scratch) const {
    const bool avx = has_avx512();
    const int64_t Wp = (Wo - 1) * sw + (kw - 1) * dw + 1;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        float *phases = slot<float>(scratch, w_slot_, slots_);
        float *prow = phases + sw * H * Mw;
        float *gy = prow + up16(Wp + sw);
        double *sum = reinterpret_cast<double *>(gy + up16(Wo));
        for (int64_t c = r.begin(); c < r.end(); ++c) {
            std::fill(sum, sum + kh * kw, 0.0);
            for (int64_t n = 0; n < N; ++n) {
                const int64_t plane = n * C + c;
                // the input plane, padded on the left by pw, split into sw phases per row
                for (int64_t ih = 0; ih < H; ++ih) {
                    std::fill(prow, prow + Mw * sw, 0.0f);
                    const int64_t lo = std::min(pw, Mw * sw), cnt = std::max<int64_t>(0, std::min(W, Mw * sw - pw));
                    load_row(x, (plane * H + ih) * W, dt_, prow + lo, cnt);
                    for (int64_t p = 0; p < sw; ++p) {
                        float *ph_row = phases + (p * H + ih) * Mw;
                        for (int64_t m = 0; m < Mw; ++m) ph_row[m] = prow[m * sw + p];
                    }
                }
                for (int64_t oh = 0; oh < Ho; ++oh) {
                    load_row(dy, (plane * Ho + oh) * Wo, dt_, gy, Wo);
                    for (int64_t a = 0; a < kh; ++a) {
                        const int64_t ih = oh * sh - ph + a * dh;
                        if (ih < 0 || ih >= H) continue;
                        for (int64_t b = 0; b < kw; ++b) {
                            const int64_t off = b * dw;
                            const float *xr = phases + ((off % sw) * H + ih) * Mw + off / sw;
                            sum[a * kw + b] += avx ? dot_avx(gy, xr, Wo) : dot_scalar(gy, xr, Wo);
                        }
                    }
                }
            }
            for (int64_t t = 0; t < kh * kw; ++t) dwt[c * kh * kw + t] = static_cast<float>(sum[t]);
        }
    });
}

}  // namespace conv
