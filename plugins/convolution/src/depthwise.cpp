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

// The plane loops in two spellings with the same arithmetic (per element a multiply, then an add, in
// the same order; dot products keep 16 lanes, element i in lane i % 16, combined in one fixed order):
// AVX-512 and scalar. The plugin builds with -ffp-contract=off, so neither fuses into an FMA.
#define DW_AVX512 __attribute__((target("avx512f")))

bool has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

constexpr int64_t kMaxTaps = 64;  // planes with more kernel taps go to oneDNN

double combine(const float *lane) {
    double s[8];
    for (int j = 0; j < 8; ++j) s[j] = static_cast<double>(lane[j]) + static_cast<double>(lane[j + 8]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// One gradInput plane: dx[ih][iw] = sum over taps (a, b) of taps[a][b] * U[ih + roff(a)][iw + coff(b)].
struct InPlane {
    const float *U;
    int64_t Uw, H, W, kh, kw, rbase, rstep, cbase, cstep;  // row = ih + rbase - a*rstep, col = iw + cbase - b*cstep
    const float *taps;
    float *dx;         // FLOAT result, or
    uint16_t *dx_bf16; // BF16 result, rounded once with numeric.hpp's rounding
};
#undef DW_AVX512
#define DW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
DW_AVX512 void in_plane_avx(const InPlane &p) {
    // two rows at a time: independent accumulation chains
    for (int64_t ih = 0; ih < p.H; ih += 2) {
        const bool two = ih + 1 < p.H;
        for (int64_t iw = 0; iw < p.W; iw += 16) {
            const auto m = static_cast<__mmask16>(p.W - iw >= 16 ? 0xffffu : (1u << (p.W - iw)) - 1u);
            __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
            for (int64_t a = 0; a < p.kh; ++a) {
                const float *urow = p.U + (ih + p.rbase - a * p.rstep) * p.Uw + iw + p.cbase;
                for (int64_t b = 0; b < p.kw; ++b) {
                    const __m512 w = _mm512_set1_ps(p.taps[a * p.kw + b]);
                    acc0 = _mm512_add_ps(acc0, _mm512_mul_ps(w, _mm512_maskz_loadu_ps(m, urow - b * p.cstep)));
                    if (two) acc1 = _mm512_add_ps(acc1, _mm512_mul_ps(w, _mm512_maskz_loadu_ps(m, urow + p.Uw - b * p.cstep)));
                }
            }
            if (p.dx_bf16) {
                _mm256_mask_storeu_epi16(p.dx_bf16 + ih * p.W + iw, m, acp::avx512::to_bf16(acc0));
                if (two) _mm256_mask_storeu_epi16(p.dx_bf16 + (ih + 1) * p.W + iw, m, acp::avx512::to_bf16(acc1));
            } else {
                _mm512_mask_storeu_ps(p.dx + ih * p.W + iw, m, acc0);
                if (two) _mm512_mask_storeu_ps(p.dx + (ih + 1) * p.W + iw, m, acc1);
            }
        }
    }
}
void in_plane_scalar(const InPlane &p) {
    for (int64_t ih = 0; ih < p.H; ++ih)
        for (int64_t iw = 0; iw < p.W; ++iw) {
            float acc = 0.0f;
            for (int64_t a = 0; a < p.kh; ++a) {
                const float *urow = p.U + (ih + p.rbase - a * p.rstep) * p.Uw + iw + p.cbase;
                for (int64_t b = 0; b < p.kw; ++b) acc = acc + p.taps[a * p.kw + b] * urow[-b * p.cstep];
            }
            if (p.dx_bf16) p.dx_bf16[ih * p.W + iw] = acp::float_to_bf16(acc);
            else p.dx[ih * p.W + iw] = acc;
        }
}

// One gradWeight plane: sum[a][b] += sum over (oh, ow) of gy[oh][ow] * X(oh, ow, a, b), the input
// read from stride phases: X = phases[((b*dw) % sw) * H + ih][ow + (b*dw) / sw], ih = oh*sh - ph + a*dh.
struct WPlane {
    const float *gy, *phases;
    int64_t Ho, Wo, H, Mw, kh, kw, sh, sw, dh, dw, ph;
    double *sum;
};
DW_AVX512 void w_plane_avx(const WPlane &p) {
    // one accumulator per tap (at most kMaxTaps), each summing its rows in order
    __m512 acc[kMaxTaps];
    int64_t xoff[kMaxTaps];
    for (int64_t t = 0; t < p.kh * p.kw; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p.kw; ++b) xoff[b] = ((b * p.dw) % p.sw) * p.H * p.Mw + (b * p.dw) / p.sw;
    const auto tail = static_cast<__mmask16>(p.Wo % 16 ? (1u << (p.Wo % 16)) - 1u : 0xffffu);
    for (int64_t oh = 0; oh < p.Ho; ++oh) {
        const float *g = p.gy + oh * p.Wo;
        for (int64_t a = 0; a < p.kh; ++a) {
            const int64_t ih = oh * p.sh - p.ph + a * p.dh;
            if (ih < 0 || ih >= p.H) continue;
            const float *xrow = p.phases + ih * p.Mw;
            __m512 *ac = acc + a * p.kw;
            for (int64_t ow = 0; ow < p.Wo; ow += 16) {
                const __mmask16 m = p.Wo - ow >= 16 ? static_cast<__mmask16>(0xffffu) : tail;
                const __m512 gv = _mm512_maskz_loadu_ps(m, g + ow);
                for (int64_t b = 0; b < p.kw; ++b)
                    ac[b] = _mm512_add_ps(ac[b], _mm512_mul_ps(gv, _mm512_maskz_loadu_ps(m, xrow + xoff[b] + ow)));
            }
        }
    }
    alignas(64) float lane[16];
    for (int64_t t = 0; t < p.kh * p.kw; ++t) {
        _mm512_store_ps(lane, acc[t]);
        p.sum[t] += combine(lane);
    }
}
void w_plane_scalar(const WPlane &p) {
    for (int64_t a = 0; a < p.kh; ++a)
        for (int64_t b = 0; b < p.kw; ++b) {
            const int64_t off = b * p.dw;
            float lane[16] = {};
            for (int64_t oh = 0; oh < p.Ho; ++oh) {
                const int64_t ih = oh * p.sh - p.ph + a * p.dh;
                if (ih < 0 || ih >= p.H) continue;
                const float *xr = p.phases + ((off % p.sw) * p.H + ih) * p.Mw + off / p.sw;
                const float *g = p.gy + oh * p.Wo;
                for (int64_t ow = 0; ow < p.Wo; ++ow) lane[ow % 16] = lane[ow % 16] + g[ow] * xr[ow];
            }
            p.sum[a * p.kw + b] += combine(lane);
        }
}


DW_AVX512 void bf16_row_avx(const uint16_t *h, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, acp::avx512::from_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(h + i))));
    for (; i < n; ++i) dst[i] = acp::bf16_to_float(h[i]);
}

// n elements of a dense FLOAT or BF16 array, as FLOAT (exact).
void load_row(const void *src, int64_t offset, Dt dt, float *dst, int64_t n) {
    if (dt == Dt::F32) {
        std::memcpy(dst, static_cast<const float *>(src) + offset, static_cast<size_t>(n) * sizeof(float));
        return;
    }
    const auto *h = static_cast<const uint16_t *>(src) + offset;
    if (has_avx512()) {
        bf16_row_avx(h, dst, n);
        return;
    }
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
    Uh = H + ph + (kh - 1) * dh;
    Uw = W + pw + (kw - 1) * dw;
    const int64_t Wp = (Wo - 1) * sw + (kw - 1) * dw + 1;
    Mw = (Wp + sw - 1) / sw;
    // gradInput slot: U plane, the channel's taps
    in_slot_ = round64(static_cast<uint64_t>(Uh * Uw + up16(kh * kw)) * sizeof(float));
    // gradWeight slot: the plane's stride phases, the padded input row, one gradient row
    w_slot_ = round64(static_cast<uint64_t>(up16(kh * kw)) * sizeof(double) +
                      static_cast<uint64_t>(sw * H * Mw + up16(Wp + sw) + up16(Ho * Wo)) * sizeof(float));
}

void DepthwisePass::grad_input(const void *dy, const void *w, void *dx, bool dx_bf16, void *scratch) const {
    const bool avx = has_avx512();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N * C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        float *U = slot<float>(scratch, in_slot_, slots_);
        float *taps = U + Uh * Uw;
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
            const InPlane ip{U, Uw, H, W, kh, kw, ph + (kh - 1) * dh, dh, pw + (kw - 1) * dw, dw, taps,
                             dx_bf16 ? nullptr : static_cast<float *>(dx) + nc * H * W,
                             dx_bf16 ? static_cast<uint16_t *>(dx) + nc * H * W : nullptr};
            if (avx) in_plane_avx(ip);
            else in_plane_scalar(ip);
        }
    });
}

void DepthwisePass::grad_weight(const void *x, const void *dy, float *dwt, void *scratch) const {
    const bool avx = has_avx512();
    const int64_t Wp = (Wo - 1) * sw + (kw - 1) * dw + 1;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, C, 1), [&](const tbb::blocked_range<int64_t> &r) {
        // slot: the per-tap sums (doubles, first: aligned), the phases, the padded row, a gradient plane
        double *sum = slot<double>(scratch, w_slot_, slots_);
        float *phases = reinterpret_cast<float *>(sum + up16(kh * kw));
        float *prow = phases + sw * H * Mw;
        float *gy = prow + up16(Wp + sw);
        for (int64_t c = r.begin(); c < r.end(); ++c) {
            std::fill(sum, sum + kh * kw, 0.0);
            for (int64_t n = 0; n < N; ++n) {
                const int64_t plane = n * C + c;
                // the input plane, padded on the left by pw, split into sw phases per row
                for (int64_t ih = 0; ih < H; ++ih) {
                    if (sw == 1) {  // one phase: the padded row itself
                        float *row = phases + ih * Mw;
                        const int64_t lo = std::min(pw, Mw), cnt = std::max<int64_t>(0, std::min(W, Mw - pw));
                        std::fill(row, row + lo, 0.0f);
                        load_row(x, (plane * H + ih) * W, dt_, row + lo, cnt);
                        std::fill(row + lo + cnt, row + Mw, 0.0f);
                        continue;
                    }
                    std::fill(prow, prow + Mw * sw, 0.0f);
                    const int64_t lo = std::min(pw, Mw * sw), cnt = std::max<int64_t>(0, std::min(W, Mw * sw - pw));
                    load_row(x, (plane * H + ih) * W, dt_, prow + lo, cnt);
                    for (int64_t p = 0; p < sw; ++p) {
                        float *ph_row = phases + (p * H + ih) * Mw;
                        for (int64_t m = 0; m < Mw; ++m) ph_row[m] = prow[m * sw + p];
                    }
                }
                const float *g = gy;
                if (dt_ == Dt::F32) g = static_cast<const float *>(dy) + plane * Ho * Wo;
                else load_row(dy, plane * Ho * Wo, dt_, gy, Ho * Wo);
                const WPlane wp{g, phases, Ho, Wo, H, Mw, kh, kw, sh, sw, dh, dw, ph, sum};
                if (avx) w_plane_avx(wp);
                else w_plane_scalar(wp);
            }
            for (int64_t t = 0; t < kh * kw; ++t) dwt[c * kh * kw + t] = static_cast<float>(sum[t]);
        }
    });
}

}  // namespace conv
