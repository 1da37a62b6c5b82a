#include "small_cin.hpp"

#include <immintrin.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <utility>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"
#include "cpu.hpp"

namespace conv {

namespace {

#define SC_INLINE ACP_AVX512 __attribute__((always_inline)) inline
#define SC_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kL = 16;      // columns per vector
constexpr int64_t kMaxBand = 2;  // gradInput: the most rows per band (set_prefetch)
constexpr int64_t kStageBytes = 256 << 10;  // gradWeight: the most a band's staged X rows take (they stay in L2)
constexpr int64_t kTasks = 32;  // at least this many tasks (images x parts): balance over 2-3 threads
constexpr int kCoBlock = 3;     // gradWeight: output channels per register tile (3 x 9 accumulators)
constexpr __mmask16 kAll = 0xffff;

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Vectors a gradInput chunk holds in registers: 3 x C x V accumulators + V operands + C weights <= 31.
constexpr int vmax(int64_t c) { return c == 1 ? 7 : c == 2 ? 4 : 2; }

SC_INLINE __mmask16 lanes_below(int64_t n) {
    return n >= kL ? kAll : n <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << n) - 1u);
}

// One row of W values (FLOAT or BF16) as 16-lane FLOAT vectors; lanes masked off read as zero.
template <bool Bf16>
SC_INLINE __m512 load_masked(const void *row, int64_t c, __mmask16 m) {
    if constexpr (Bf16)
        return acp::avx512::from_bf16(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(row) + c));
    else
        return _mm512_maskz_loadu_ps(m, static_cast<const float *>(row) + c);
}
template <bool Bf16>
SC_INLINE __m512 load_full(const void *row, int64_t c) {
    if constexpr (Bf16)
        return acp::avx512::from_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(static_cast<const uint16_t *>(row) + c)));
    else
        return _mm512_loadu_ps(static_cast<const float *>(row) + c);
}

// A staged row: column j of the plane at dst + kL + j, zeros in the kL columns before it and from
// column W on, so that a tap column's vector (columns c0 - 1 .. c0 + 16) is one load.
template <bool Bf16>
ACP_AVX512 void stage_row(const void *src, int64_t W, int64_t Wp, float *dst) {
    const __m512 zero = _mm512_setzero_ps();
    _mm512_storeu_ps(dst, zero);
    for (int64_t c = 0; c < Wp - kL; c += kL)
        _mm512_storeu_ps(dst + kL + c, c < W ? load_masked<Bf16>(src, c, lanes_below(W - c)) : zero);
}

// ---------------------------------------------------------------- gradWeight
// acc[i][kh*3 + kw] += dY(co0 + i, row)[c0 + lane] * X(ci, row + kh - 1)[c0 + lane + kw - 1] for the
// tap rows KH0 <= kh < KH1 (the others fall outside the plane). Edge: the vector holds columns
// outside the plane (a shifted column before 0 or at or past W, or lanes past the row's end),
// which are masked off (dY lanes past the row's end not even loaded); the others use every lane.
// X rows are staged (stage_row), dY rows are the caller's.
template <bool Bf16, int A, int KH0, int KH1, bool Edge>
SC_INLINE void gw_step(__m512 (&acc)[A][9], const void *const (&dyr)[A], const float *const (&xr)[3], int64_t c0, int64_t W) {
    __mmask16 m[3] = {kAll, kAll, kAll}, out = kAll;
    if constexpr (Edge) {
        out = lanes_below(W - c0);
        m[0] = static_cast<__mmask16>(out & (c0 == 0 ? 0xfffe : 0xffff));  // column c0 + lane - 1 >= 0
        m[1] = out;
        m[2] = static_cast<__mmask16>(out & lanes_below(W - c0 - 1));  // column c0 + lane + 1 < W
    }
    __m512 d[A];
    // dY straight from the caller's rows; an edge vector reads none of the lanes past the row's end
    SC_UNROLL for (int i = 0; i < A; ++i) d[i] = Edge ? load_masked<Bf16>(dyr[i], c0, out) : load_full<Bf16>(dyr[i], c0);
    SC_UNROLL for (int kh = KH0; kh < KH1; ++kh) {
        SC_UNROLL for (int kw = 0; kw < 3; ++kw) {
            // column c0 + lane + kw - 1; in a register (GCC would fold the load into each of the A
            // multiply-adds, and the loads, not the multiply-adds, would set the pace)
            __m512 xv = _mm512_loadu_ps(xr[kh] + c0 + kw - 1);
            asm("" : "+v"(xv));
            SC_UNROLL for (int i = 0; i < A; ++i) {
                __m512 &a = acc[i][kh * 3 + kw];
                a = Edge ? _mm512_mask3_fmadd_ps(d[i], xv, a, m[kw]) : _mm512_fmadd_ps(d[i], xv, a);
            }
        }
    }
}

template <bool Bf16, int A, int KH0, int KH1>
SC_INLINE void gw_row(__m512 (&acc)[A][9], const void *const (&dyr)[A], const float *const (&xr)[3], int64_t W, int64_t nv) {
    // vector v is clean when columns 16v - 1 .. 16v + 16 are all inside the plane
    const auto edge = [W](int64_t v) { return v == 0 || v * kL + kL + 1 > W; };
    int64_t end = nv;
    while (end > 1 && edge(end - 1)) --end;
    gw_step<Bf16, A, KH0, KH1, true>(acc, dyr, xr, 0, W);
    for (int64_t v = 1; v < end; ++v) gw_step<Bf16, A, KH0, KH1, false>(acc, dyr, xr, v * kL, W);
    for (int64_t v = std::max<int64_t>(end, 1); v < nv; ++v) gw_step<Bf16, A, KH0, KH1, true>(acc, dyr, xr, v * kL, W);
}

// What a task reads: the image's dY as given (both gradients), and its slot of the scratch.
// gradInput: its per-tap-column sums of one row. gradWeight: X of every input channel for the
// current band, staged (row b0 - 1 + s of input channel ci at xs + (ci * ring + s) * Wp).
struct Staged {
    const float *xs;
    const uint8_t *dy;  // the image's gradOutput (es bytes per element)
    int64_t es;
    float *pbuf;  // gradInput row sums: tap column kw, input channel c at pbuf + (kw * C + c) * Wp
    int64_t H, W, Wp, nv, cin;
    int64_t ring;  // gradWeight: staged X rows per input channel
};

// Output channels co0 .. co0 + A - 1 against the 9 taps of input channel ci over rows [oh0, oh1),
// added lane-wise into the task's FLOAT sums acc16[co][ci][tap][16]. dY row oh0 of channel co0 at
// dy0, the next channel dy_plane bytes further.
// next: the next co-block's dY (its rows oh0 .. oh1 - 1 of kCoBlock channels, dy_plane bytes
// apart), fetched into L2 while the tiles of this co-block run, a share per tile and row (each of
// the C tiles takes every C-th row of them), or NULL.
template <bool Bf16, int A>
ACP_AVX512 void gw_tile(const Staged &s, const uint8_t *dy0, int64_t dy_plane, int64_t co0, int64_t ci, int64_t oh0, int64_t oh1,
                        float *acc16, const uint8_t *next) {
    __m512 acc[A][9];
    SC_UNROLL for (int i = 0; i < A; ++i) SC_UNROLL for (int k = 0; k < 9; ++k) acc[i][k] = _mm512_setzero_ps();
    const float *xs = s.xs + ci * s.ring * s.Wp + kL;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
        const void *dyr[A];
        SC_UNROLL for (int i = 0; i < A; ++i) dyr[i] = dy0 + i * dy_plane + (oh - oh0) * s.W * s.es;
        const float *const xr[3] = {xs + (oh - oh0) * s.Wp, xs + (oh + 1 - oh0) * s.Wp, xs + (oh + 2 - oh0) * s.Wp};
        if (next) {
            const int64_t k = (oh - oh0) * s.cin + ci;  // the k-th of the next co-block's channel rows
            if (k < (oh1 - oh0) * kCoBlock) {
                acp::prefetch_lines<true>(next + k % kCoBlock * dy_plane + k / kCoBlock * s.W * s.es, s.W * s.es);
            }
        }
        const bool top = oh == 0, bottom = oh == s.H - 1;
        if (!top && !bottom) gw_row<Bf16, A, 0, 3>(acc, dyr, xr, s.W, s.nv);
        else if (top && bottom) gw_row<Bf16, A, 1, 2>(acc, dyr, xr, s.W, s.nv);
        else if (top) gw_row<Bf16, A, 1, 3>(acc, dyr, xr, s.W, s.nv);
        else gw_row<Bf16, A, 0, 2>(acc, dyr, xr, s.W, s.nv);
    }
    SC_UNROLL for (int i = 0; i < A; ++i) SC_UNROLL for (int k = 0; k < 9; ++k) {
        float *p = acc16 + (((co0 + i) * s.cin + ci) * 9 + k) * kL;
        _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), acc[i][k]));
    }
}

using GwFn = void (*)(const Staged &, const uint8_t *, int64_t, int64_t, int64_t, int64_t, int64_t, float *, const uint8_t *);
template <bool Bf16>
constexpr std::array<GwFn, kCoBlock> gw_fns = {&gw_tile<Bf16, 1>, &gw_tile<Bf16, 2>, &gw_tile<Bf16, 3>};

// ---------------------------------------------------------------- gradInput
struct GiRow {
    const Staged *s;
    const float *wt;  // weights as wt[co][kh * 3 + kw][ci]
    float *dx;        // gradInput of the image, channel 0
    int64_t K, h;
    float *pb;        // row h's sums P (3 x C rows of Wp floats: tap column kw, input channel c at (kw * C + c) * Wp)
    int kh0, kh1;  // tap rows whose dY row h + 1 - kh is inside the plane
    // The next band's dY rows, fetched into the cache while this band computes: channel co's run at pf + co * pf_plane, bytes [pf_lo, pf_hi) of it
    // in this call.
    const uint8_t *pf = nullptr;
    int64_t pf_plane = 0, pf_lo = 0, pf_hi = 0;
    bool pf_l1 = false;  // into L1 (rows of one-row bands), else into L2
};

// Row h, vectors v0 .. v0 + V - 1, all C input channels, per tap column kw in aligned columns:
// P[kw][c][column] = sum over co, kh (in that order) of W[co][c][kh][kw] * dY[co][h + 1 - kh][column],
// into g.pb. gi_combine then shifts them into place (shifted loads once per row, not per channel).
// Inner: a row whose three tap rows are all inside the plane (every row but the first and the
// last), the tap rows unrolled. Whole: the V vectors lie inside the row (plain loads; a masked load
// takes a vector ALU uop beside the multiply-adds on an Intel Xeon: VGG-19's first layer, one
// thread, gradInput 11.6-11.9 -> 10.5-10.8 ms). With its operands in L1 the loop runs at 90 % of
// the FMA peak (a stand-alone copy, session 34): what it loses in the pass is fetching dY, not
// arithmetic.
template <bool Bf16, int C, int V, bool Inner, bool Whole>
ACP_AVX512 void gi_chunk(const GiRow &g, int64_t v0) {
    const Staged &s = *g.s;
    __m512 acc[3][C][V];
    SC_UNROLL for (int kw = 0; kw < 3; ++kw) SC_UNROLL for (int c = 0; c < C; ++c) SC_UNROLL for (int v = 0; v < V; ++v)
        acc[kw][c][v] = _mm512_setzero_ps();
    // dY rows as given, the lanes past the row's end masked off (they only reach P's columns >= W,
    // which gi_combine never reads); tap row kh reads row h + 1 - kh, at `rowh + (1 - kh) * row_bytes`
    const int64_t row_bytes = s.W * s.es, plane = s.H * row_bytes;
    const uint8_t *rowh = s.dy + g.h * row_bytes + v0 * kL * s.es;
    __mmask16 mk[V];
    SC_UNROLL for (int v = 0; v < V; ++v) mk[v] = lanes_below(s.W - (v0 + v) * kL);
    const float *wc = g.wt;
    const uint8_t *pf = g.pf;
    const int kh0 = Inner ? 0 : g.kh0, kh1 = Inner ? 3 : g.kh1;
    for (int64_t co = 0; co < g.K; ++co, rowh += plane, wc += 9 * C, pf += g.pf_plane) {
        if (g.pf_hi > g.pf_lo) {
            if (g.pf_l1) acp::prefetch_lines(pf + g.pf_lo, g.pf_hi - g.pf_lo);
            else acp::prefetch_lines<true>(pf + g.pf_lo, g.pf_hi - g.pf_lo);
        }
        SC_UNROLL for (int kh = 0; kh < 3; ++kh) {
            if (!Inner && (kh < kh0 || kh >= kh1)) continue;
            __m512 d[V];
            const uint8_t *row = rowh + (1 - kh) * row_bytes;
            SC_UNROLL for (int v = 0; v < V; ++v) d[v] = Whole ? load_full<Bf16>(row, v * kL) : load_masked<Bf16>(row, v * kL, mk[v]);
            SC_UNROLL for (int kw = 0; kw < 3; ++kw) {
                __m512 wb[C];
                SC_UNROLL for (int c = 0; c < C; ++c) wb[c] = _mm512_set1_ps(wc[(kh * 3 + kw) * C + c]);
                SC_UNROLL for (int c = 0; c < C; ++c) SC_UNROLL for (int v = 0; v < V; ++v)
                    acc[kw][c][v] = _mm512_fmadd_ps(wb[c], d[v], acc[kw][c][v]);
            }
        }
    }
    SC_UNROLL for (int kw = 0; kw < 3; ++kw) SC_UNROLL for (int c = 0; c < C; ++c) SC_UNROLL for (int v = 0; v < V; ++v)
        _mm512_storeu_ps(g.pb + (kw * C + c) * s.Wp + kL + (v0 + v) * kL, acc[kw][c][v]);
}

// gradInput row h: dX[c][w] = (P[1][c][w] + P[0][c][w + 1]) + P[2][c][w - 1]; the columns past
// either end of the row (w + 1 = W, w - 1 = -1) are skipped, not read.
ACP_AVX512 void gi_combine(const GiRow &g, int64_t C) {
    const Staged &s = *g.s;
    for (int64_t c = 0; c < C; ++c) {
        const float *p0 = g.pb + c * s.Wp + kL, *p1 = g.pb + (C + c) * s.Wp + kL, *p2 = g.pb + (2 * C + c) * s.Wp + kL;
        float *o = g.dx + (c * s.H + g.h) * s.W;
        for (int64_t col = 0; col < s.W; col += kL) {
            const __mmask16 m = lanes_below(s.W - col);
            const __mmask16 right = lanes_below(s.W - col - 1), left = col == 0 ? __mmask16{0xfffe} : kAll;
            __m512 r = _mm512_loadu_ps(p1 + col);
            r = _mm512_mask_add_ps(r, right, r, _mm512_maskz_loadu_ps(right, p0 + col + 1));
            r = _mm512_mask_add_ps(r, left, r, _mm512_maskz_loadu_ps(left, p2 + col - 1));
            _mm512_mask_storeu_ps(o + col, m, r);
        }
    }
}

using GiFn = void (*)(const GiRow &, int64_t);
template <bool Bf16, int C, bool Inner, bool Whole, int... V>
constexpr std::array<GiFn, sizeof...(V)> gi_fns_of(std::integer_sequence<int, V...>) {
    return {&gi_chunk<Bf16, C, V + 1, Inner, Whole>...};
}
template <bool Bf16, int C, bool Inner, bool Whole>
constexpr auto gi_fns = gi_fns_of<Bf16, C, Inner, Whole>(std::make_integer_sequence<int, vmax(C)>{});

template <bool Bf16, bool Inner, bool Whole>
GiFn gi_fn_of(int64_t C, size_t v) {
    switch (C) {
        case 1: return gi_fns<Bf16, 1, Inner, Whole>[v];
        case 2: return gi_fns<Bf16, 2, Inner, Whole>[v];
        case 3: return gi_fns<Bf16, 3, Inner, Whole>[v];
        default: return gi_fns<Bf16, 4, Inner, Whole>[v];
    }
}
template <bool Bf16>
GiFn gi_fn_of(int64_t C, size_t v, bool inner, bool whole) {
    if (inner) return whole ? gi_fn_of<Bf16, true, true>(C, v) : gi_fn_of<Bf16, true, false>(C, v);
    return whole ? gi_fn_of<Bf16, false, true>(C, v) : gi_fn_of<Bf16, false, false>(C, v);
}
// inner: all three tap rows inside the plane; whole: the V vectors inside the row
GiFn gi_fn(bool bf16, int64_t C, int64_t V, bool inner, bool whole) {
    const auto v = static_cast<size_t>(V - 1);
    return bf16 ? gi_fn_of<true>(C, v, inner, whole) : gi_fn_of<false>(C, v, inner, whole);
}

// The 16 lanes of each FLOAT sum widened to double and added in one fixed order.
ACP_AVX512 void widen_sums(const float *acc16, int64_t n, double *out) {
    for (int64_t j = 0; j < n; ++j) {
        // maskz forms with all lanes: GCC 12's false -Wmaybe-uninitialized on the plain ones
        const __m512d v = _mm512_castps_pd(_mm512_loadu_ps(acc16 + j * kL));
        const __m512d lo = _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, v, 0)));
        const __m512d hi = _mm512_maskz_cvtps_pd(0xff, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, v, 1)));
        alignas(64) double l[8];
        _mm512_store_pd(l, _mm512_add_pd(lo, hi));
        out[j] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
}

}  // namespace

bool SmallCinPass::applies(const Geometry &g, bool transposed, Dt dt) {
    if (transposed || g.sd != 2 || g.G != 1 || g.IC > (dt == Dt::BF16 ? kSmallCinMaxBf16 : kSmallCinMax) || !cpu_has_avx512())
        return false;
    for (int d = 0; d < 2; ++d)
        if (g.k[d] != 3 || g.stride[d] != 1 || g.dil[d] != 1 || g.pad_l[d] != 1 || g.pad_r[d] != 1 || g.src[d] != g.dst[d] ||
            g.src_used[d] != g.src[d])
            return false;
    return true;
}

SmallCinPass::SmallCinPass(const Geometry &g, Dt dt, int threads)
    : N_(g.N), C_(g.IC), K_(g.OC), H_(g.src[0]), W_(g.src[1]), dt_(dt) {
    slots_.resize(std::max(threads, 1));
    set_prefetch(cpu_prefers_software_prefetch());
    nv_ = ceil_div(W_, kL);
    Wp_ = kL + nv_ * kL + 2 * kL;  // room for the shifted copies' last vector
    parts_ = std::clamp<int64_t>(ceil_div(kTasks, N_), 1, H_);
    rows_ = ceil_div(H_, parts_);
    parts_ = ceil_div(H_, rows_);
    // gradWeight: the whole part in one band unless its staged X would outgrow kStageBytes
    wband_ = std::clamp<int64_t>(static_cast<int64_t>(kStageBytes / sizeof(float)) / (C_ * Wp_) - 2, 1, rows_);
}

// Scratch of gradInput: the widened weights, then per thread slot the per-tap-column row sums.
// Scratch of gradWeight: per thread slot the staged X band and the FLOAT sums, then the tasks'
// double partials. Each node has its own (they run concurrently).
uint64_t SmallCinPass::wt_bytes() const { return round64(static_cast<uint64_t>(K_ * 9 * C_) * sizeof(float)); }
uint64_t SmallCinPass::slot_bytes(bool weight) const {
    const int64_t floats = weight ? C_ * (wband_ + 2) * Wp_ + K_ * C_ * 9 * kL : kMaxBand * 3 * C_ * Wp_;  // (set_prefetch may change the band after planning)
    return round64(static_cast<uint64_t>(floats) * sizeof(float));
}
uint64_t SmallCinPass::scratch_bytes(bool weight) const {
    const uint64_t slots = slot_bytes(weight) * static_cast<uint64_t>(slots_.size());
    return weight ? slots + static_cast<uint64_t>(N_ * parts_ * K_ * C_ * 9) * sizeof(double) : wt_bytes() + slots;
}

void SmallCinPass::run_input(const void *dy, const void *w, float *dx, void *scratch) const {
    const bool bf16 = dt_ == Dt::BF16;
    const int64_t es = bf16 ? 2 : 4, tasks = N_ * parts_;
    auto *base = static_cast<uint8_t *>(scratch);
    auto *wt = reinterpret_cast<float *>(base);
    auto *slots = base + wt_bytes();
    // weights as wt[co][kh * 3 + kw][ci]: the C broadcasts of one tap are adjacent
    for (int64_t co = 0; co < K_; ++co)
        for (int64_t ci = 0; ci < C_; ++ci)
            for (int64_t k = 0; k < 9; ++k) {
                const int64_t src = (co * C_ + ci) * 9 + k;
                float v;
                if (bf16) {
                    const uint32_t b = static_cast<uint32_t>(static_cast<const uint16_t *>(w)[src]) << 16;
                    __builtin_memcpy(&v, &b, 4);
                } else {
                    v = static_cast<const float *>(w)[src];
                }
                wt[(co * 9 + k) * C_ + ci] = v;
            }
    // the vectors of a row in near-equal chunks of at most vmax(C)
    const int64_t chunks = ceil_div(nv_, vmax(C_));
    // One task: its rows of one image; after its last band it prefetches the first band of `after`
    // (the task this thread usually runs next, or -1).
    const auto run_task = [&](int64_t task, int64_t after, float *pbuf) {
        const int64_t n = task / parts_, r0 = task % parts_ * rows_, r1 = std::min(H_, r0 + rows_);
        const auto *dyn = static_cast<const uint8_t *>(dy) + n * K_ * H_ * W_ * es;
        const Staged st{nullptr, dyn, es, pbuf, H_, W_, Wp_, nv_, C_, 0};
        int64_t next = std::max<int64_t>(r0 - 1, 0);  // first dY row no band has read yet
        for (int64_t b0 = r0; b0 < r1; b0 += band_) {
            const int64_t b1 = std::min(r1, b0 + band_), hi = std::min(b1, H_ - 1);
            next = hi + 1;  // this band reads rows up to hi
            GiRow g{&st, wt, dx + n * C_ * H_ * W_, K_, 0, pbuf, 0, 3};
            // the rows the next band reads, a share of them per chunk call: this task's next band,
            // or after its last band the first band of `after` (otherwise the prefetch is only
            // wasted): without it every task's first band waits for memory, worst when the other
            // gradient's node streams dY at the same time
            int64_t pf_row = next, pf_rows = 0;
            const uint8_t *pf_img = dyn;
            if (b1 < r1) {
                pf_rows = std::min(std::max<int64_t>(std::min(b1 + band_, r1) + 1 - next, 0), H_ - next);
            } else if (after >= 0) {
                const int64_t s0 = after % parts_ * rows_, s1 = std::min(H_, s0 + rows_);
                pf_img = static_cast<const uint8_t *>(dy) + after / parts_ * K_ * H_ * W_ * es;
                pf_row = std::max<int64_t>(s0 - 1, 0);
                pf_rows = std::min(std::min(s0 + band_, s1) + 1, H_) - pf_row;
            }
            const int64_t pf_bytes = pf_rows * W_ * es;
            const int64_t calls = (b1 - b0) * chunks, share = (ceil_div(pf_bytes, calls) + 63) / 64 * 64;
            g.pf = pf_img + pf_row * W_ * es;
            g.pf_plane = H_ * W_ * es;
            g.pf_l1 = prefetch_;
            // chunk by chunk, the band's rows in turn: a dY line, loaded into L1 for row h, is
            // still there for rows h + 1 and h + 2 (row by row, all chunks of a row came between
            // and each line came from L2 three times)
            const auto at_row = [&](int64_t h) {
                g.h = h;
                g.kh0 = h + 1 >= H_ ? 1 : 0;
                g.kh1 = h == 0 ? 2 : 3;
                g.pb = pbuf + (h - b0) * 3 * C_ * Wp_;
            };
            int64_t v0 = 0, call = 0;
            for (int64_t i = 0; i < chunks; ++i) {
                const int64_t V = nv_ / chunks + (i < nv_ % chunks ? 1 : 0);
                for (int64_t h = b0; h < b1; ++h, ++call) {
                    at_row(h);
                    g.pf_lo = std::min(call * share, pf_bytes);
                    g.pf_hi = std::min(g.pf_lo + share, pf_bytes);
                    gi_fn(bf16, C_, V, g.kh0 == 0 && g.kh1 == 3, (v0 + V) * kL <= W_)(g, v0);
                }
                v0 += V;
            }
            for (int64_t h = b0; h < b1; ++h) {
                at_row(h);
                gi_combine(g, C_);
            }
        }
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, 1), [&](const tbb::blocked_range<int64_t> &range) {
        const acp::SlotPool::Lease slot(slots_);
        auto *pbuf = reinterpret_cast<float *>(slots + slot.index() * slot_bytes(false));
        for (int64_t task = range.begin(); task < range.end(); ++task) run_task(task, task + 1 < tasks ? task + 1 : -1, pbuf);
    });
}

void SmallCinPass::run_weight(const void *dy, const void *x, float *dw, void *scratch) const {
    const bool bf16 = dt_ == Dt::BF16;
    const int64_t es = bf16 ? 2 : 4, tasks = N_ * parts_, wn = K_ * C_ * 9;
    auto *slots = static_cast<uint8_t *>(scratch);
    auto *partials = reinterpret_cast<double *>(slots + slot_bytes(true) * static_cast<uint64_t>(slots_.size()));
    const auto stage_x = bf16 ? &stage_row<true> : &stage_row<false>;
    const auto gw = [bf16](size_t a) { return bf16 ? gw_fns<true>[a] : gw_fns<false>[a]; };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, 1), [&](const tbb::blocked_range<int64_t> &range) {
        const acp::SlotPool::Lease slot(slots_);
        auto *xs = reinterpret_cast<float *>(slots + slot.index() * slot_bytes(true));
        const int64_t ring = wband_ + 2;
        float *acc16 = xs + C_ * ring * Wp_;
        for (int64_t task = range.begin(); task < range.end(); ++task) {
            const int64_t n = task / parts_, r0 = task % parts_ * rows_, r1 = std::min(H_, r0 + rows_);
            const auto *dyn = static_cast<const uint8_t *>(dy) + n * K_ * H_ * W_ * es;
            const auto *xn = static_cast<const uint8_t *>(x) + n * C_ * H_ * W_ * es;
            const Staged st{xs, dyn, es, nullptr, H_, W_, Wp_, nv_, C_, ring};
            std::fill(acc16, acc16 + wn * kL, 0.0f);
            for (int64_t b0 = r0; b0 < r1; b0 += wband_) {
                const int64_t b1 = std::min(r1, b0 + wband_), hi = std::min(b1, H_ - 1);
                // X rows b0 - 1 .. b1 inside the plane. dY is read as given, a co-block at a time:
                // its rows of the band are one run per channel, long enough for the hardware
                // prefetchers (a software prefetch of the next co-block measured slower), read from
                // memory by the first input channel's tile and from L2 by the others.
                for (int64_t ci = 0; ci < C_; ++ci)
                    for (int64_t r = std::max<int64_t>(b0 - 1, 0); r <= hi; ++r)
                        stage_x(xn + (ci * H_ + r) * W_ * es, W_, Wp_, xs + (ci * ring + r - b0 + 1) * Wp_);
                for (int64_t co0 = 0; co0 < K_; co0 += kCoBlock) {
                    const uint8_t *dy0 = dyn + (co0 * H_ + b0) * W_ * es;
                    const GwFn tile = gw(static_cast<size_t>(std::min<int64_t>(kCoBlock, K_ - co0) - 1));
                    const uint8_t *next = prefetch_ && co0 + 2 * kCoBlock <= K_ ? dy0 + kCoBlock * H_ * W_ * es : nullptr;
                    for (int64_t ci = 0; ci < C_; ++ci) tile(st, dy0, H_ * W_ * es, co0, ci, b0, b1, acc16, next);
                }
            }
            widen_sums(acc16, wn, partials + task * wn);
        }
    });
    // the tasks' partials in task order: the same sums whatever thread ran which task
    for (int64_t j = 0; j < wn; ++j) {
        double sum = 0.0;
        for (int64_t task = 0; task < tasks; ++task) sum += partials[task * wn + j];
        dw[j] = static_cast<float>(sum);
    }
}

}  // namespace conv
