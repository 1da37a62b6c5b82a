// The AVX-512 spelling of the direct depthwise gradWeight (depthwise_direct.hpp says what it
// computes; the parts shared with gradInput are in depthwise_direct_avx.hpp): the lane sums and
// their flushes into double, the kernels by plane shape, the channel loops.
#include "depthwise_direct_avx.hpp"

namespace conv::dwd {

namespace {

// gradWeight lane sums in registers; `sum` holds the double sums (9 x 16).
struct VecSums {
    __m512 acc[9];
    double *sum;
    int64_t count = 0;
    bool fresh = true;  // no flush yet: the first one stores (the same value as adding to zeros; the
                        // sign of a zero may differ, which the lanes' sum from +0 does not keep)
    ACP_AVX512 explicit VecSums(double *s) : sum(s) {
        DWD_UNROLL for (int t = 0; t < 9; ++t) acc[t] = _mm512_setzero_ps();
    }
};
// The same sums as two halves (half-width rows, Cols8): lo holds lanes 0-7 (a pitched vector's
// even row), hi lanes 8-15 (its odd row).
struct VecSums8 {
    __m256 lo[9], hi[9];
    double *sum;
    int64_t count = 0;
    bool fresh = true;
    ACP_AVX512 explicit VecSums8(double *s) : sum(s) {
        DWD_UNROLL for (int t = 0; t < 9; ++t) lo[t] = _mm256_setzero_ps(), hi[t] = _mm256_setzero_ps();
    }
};

// One tap's 16 lane sums, as two halves of 8, into its double sums (stored on the first flush).
ACP_AVX512 __attribute__((always_inline)) inline void flush_tap(double *s, __m256 lo8, __m256 hi8, bool fresh) {
    const __m512d lo = _mm512_maskz_cvtps_pd(0xff, lo8), hi = _mm512_maskz_cvtps_pd(0xff, hi8);
    _mm512_storeu_pd(s, fresh ? lo : add_ordered(_mm512_loadu_pd(s), lo));
    _mm512_storeu_pd(s + 8, fresh ? hi : add_ordered(_mm512_loadu_pd(s + 8), hi));
}

ACP_AVX512 inline void flush_avx(VecSums &vs) {
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        const __m512d a = _mm512_castps_pd(vs.acc[t]);
        flush_tap(vs.sum + t * kL, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, a, 0)),
                  _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, a, 1)), vs.fresh);
        vs.acc[t] = _mm512_setzero_ps();
    }
    vs.count = 0;
    vs.fresh = false;
}

ACP_AVX512 inline void flush_avx(VecSums8 &vs) {
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        flush_tap(vs.sum + t * kL, vs.lo[t], vs.hi[t], vs.fresh);
        vs.lo[t] = _mm256_setzero_ps(), vs.hi[t] = _mm256_setzero_ps();
    }
    vs.count = 0;
    vs.fresh = false;
}

// lanes_pairwise in vectors: 16 lanes, 8 + 8, 4 + 4, 2 + 2, 1 + 1.
ACP_AVX512 inline void lanes_pairwise_avx(const double (&sum)[9][kL], double *out) {
    DWD_UNROLL for (int t = 0; t < 9; ++t) {
        const __m512d v8 = add_ordered(_mm512_loadu_pd(sum[t]), _mm512_loadu_pd(sum[t] + 8));
        const __m256d v4 = add_ordered(_mm512_maskz_extractf64x4_pd(0xff, v8, 0), _mm512_maskz_extractf64x4_pd(0xff, v8, 1));
        const __m128d v2 = add_ordered(_mm256_castpd256_pd128(v4), _mm256_extractf128_pd(v4, 1));
        out[t] = add_ordered(_mm_cvtsd_f64(v2), _mm_cvtsd_f64(_mm_unpackhi_pd(v2, v2)));
    }
}

// An input row of the plane from element `first`, zero outside the plane's rows.
template <bool BF16>
ACP_AVX512 __attribute__((always_inline)) inline __m512 plane_row(const Planes &p, int64_t iy, __mmask16 kw) {
    return iy >= 0 && iy < p.H ? load<BF16>(p.x, p.gx + iy * p.W, kw) : _mm512_setzero_ps();
}

// Stride 1 gradWeight by rows (by_rows): a vector per gradient row; the three input rows it meets
// kept in registers (one new row per step), their columns one lane on either side by a shift.
// HC: the plane's rows when known at compile time (MobileNet's 14x14, inlined into its own channel
// loop: every row's taps known, no branches, the lane sums in registers from plane to plane), or 0.
template <bool BF16, int HC = 0>
ACP_AVX512 __attribute__((always_inline)) inline void gw_s1_rows_avx(const Planes &p, VecSums &vs) {
    const int64_t H = HC ? HC : p.H;
    const __mmask16 kw = first_lanes(p.W);
    // tap column b reads input column x - 1 + b: b = 0 needs x >= 1, b = 2 needs x + 1 < W
    const __mmask16 kb[3] = {static_cast<__mmask16>(kw & 0xfffe), kw, first_lanes(p.W - 1)};
    // rows oy - 1 .. oy + 1, each with its columns one lane on either side (shifted once per row)
    struct Row {
        __m512 left, mid, right;
    };
    auto row = [&](int64_t iy) ACP_AVX512 {
        const __m512 c = plane_row<BF16>(p, iy, kw);
        return Row{prev_column(c), c, next_column(c)};
    };
    Row xr[3] = {Row{}, row(0), row(1)};
    _Pragma("GCC unroll 16") for (int64_t oy = 0; oy < H; ++oy) {  // (Ho == H: stride 1, padding 1)
        const __m512 g = load<BF16>(p.dy, p.gy + oy * p.Wo, kw);
        DWD_UNROLL for (int a = 0; a < 3; ++a) {
            const int64_t iy = oy - 1 + a;
            if (iy < 0 || iy >= H) continue;
            vs.acc[a * 3] = fma_ordered(g, xr[a].left, vs.acc[a * 3], kb[0]);
            vs.acc[a * 3 + 1] = fma_ordered(g, xr[a].mid, vs.acc[a * 3 + 1], kb[1]);
            vs.acc[a * 3 + 2] = fma_ordered(g, xr[a].right, vs.acc[a * 3 + 2], kb[2]);
        }
        if (++vs.count == kFlush) flush_avx(vs);
        xr[0] = xr[1], xr[1] = xr[2], xr[2] = row(oy + 2);
    }
}

// Stride 1 gradWeight of a pitched plane of H rows: for gradient vector u (rows 2u, 2u + 1) tap rows
// 0, 1, 2 read the input's rows y - 1, y, y + 1: odd pair u, even pair u, odd pair u + 1, unshifted;
// tap columns 0 and 2 shift the gradient instead (a lane either way, two shifts per vector, not
// four). So tap (a, b) sums the product of gradient position (y, x) in the lane of its input
// column x - 1 + b (the scalar spelling's pitched walk, gw_lane_scalar's lane_by_input).
template <bool BF16, int H, int WC>
ACP_AVX512 __attribute__((always_inline)) inline void gw_s1_pitched_avx(const Planes &p, const Pitch &pt, VecSums &vs) {
    using Plane = PitchedPlane<BF16, H>;
    constexpr int U = Plane::U;
    const int64_t W = WC ? WC : p.W, P = H * W;  // (WC: the width known when compiled)
    const Plane x(p.x, p.gx, W, pt);
    // lane of input column c, tap column b: gradient column c + 1 - b inside
    const TapCols kb = tap_cols<WC>(pt);
    PITCH_UNROLL for (int u = 0; u < U; ++u) {
        const __m512 g1 = pitched_rows<BF16>(p.dy, p.gy, 2 * u, W, P, pt);
        const __m512 g[3] = {next_column(g1), g1, prev_column(g1)};
        DWD_UNROLL for (int t = 0; t < 9; ++t) {
            const int a = t / 3, b = t % 3;
            const unsigned rows = row_lanes(H, u, a - 1);
            if (rows == 0) continue;
            const __m512 r = a == 0 ? x.o[u] : a == 1 ? x.e[u] : x.o[u + 1];
            const __mmask16 k = rows == 0xffffu ? kb.k[b] : static_cast<__mmask16>(kb.k[b] & rows);
            vs.acc[t] = fma_ordered(g[b], r, vs.acc[t], k);
        }
        if (++vs.count == kFlush) flush_avx(vs);
    }
}

// FLOAT stride-1 gradWeight of a pitched plane in half-width rows (Cols8): the input rows loaded
// once, unshifted (lane = input column, as gw_s1_pitched_avx); per gradient row y, tap column b's
// gradient column x + 1 - b by a masked load at that offset. Row y's products go to the lo sums when
// y is even and to hi when odd, and a pair of rows counts as one vector towards kFlush: lane by lane
// the pitched vectors' sums, in their order (the same bytes). On Zen 4, 7x7 planes, one thread: 129
// us against 155 for 8x1024 planes.
template <int H, int WC>
ACP_AVX512 __attribute__((always_inline)) inline void gw_s1_rows8_avx(const Planes &p, VecSums8 &vs) {
    const int64_t W = WC ? WC : p.W;
    const Cols8 kb = cols8(W);
    const float *g = static_cast<const float *>(p.dy) + p.gy, *x = static_cast<const float *>(p.x) + p.gx;
    __m256 xr[H];
    PITCH_UNROLL for (int y = 0; y < H; ++y) xr[y] = _mm256_maskz_loadu_ps(kb.k[1], x + y * W);
    PITCH_UNROLL for (int y = 0; y < H; ++y) {
        __m256 gs[3];
        DWD_UNROLL for (int b = 0; b < 3; ++b) gs[b] = _mm256_maskz_loadu_ps(kb.k[b], g + y * W + 1 - b);
        DWD_UNROLL for (int t = 0; t < 9; ++t) {
            const int a = t / 3, b = t % 3, iy = y + a - 1;
            if (iy < 0 || iy >= H) continue;
            __m256 &acc = y % 2 ? vs.hi[t] : vs.lo[t];
            acc = fma_ordered(gs[b], xr[iy], acc, kb.k[b]);
        }
        if ((y % 2 == 1 || y == H - 1) && ++vs.count == kFlush) flush_avx(vs);
    }
}

// Narrow planes: the input's tap vectors from a sliding window.
template <bool BF16>
ACP_AVX512 void gw_s1_narrow_avx(const Planes &p, const MaskTable &m, VecSums &vs) {
    __m512i idx[9];
    int64_t sh[9];
    shift_indices(p.W, sh, idx);
    Window win{_mm512_setzero_ps(), _mm512_setzero_ps(), load<BF16>(p.x, p.gx, first_lanes(m.P))};
    slide<BF16>(win, p.x, p.gx, -1, m.nv, m.P);
    for (int64_t v = 0; v < m.nv; ++v) {
        const uint16_t *mk = m.mask + v * 9;
        const __m512 g = load<BF16>(p.dy, p.gy + v * kL, mk[4]);
        DWD_UNROLL for (int t = 0; t < 9; ++t) {
            const __mmask16 k = mk[t];
            vs.acc[t] = fma_ordered(g, shifted(win, sh[t], idx[t]), vs.acc[t], k);
        }
        if (++vs.count == kFlush) flush_avx(vs);
        slide<BF16>(win, p.x, p.gx, v, m.nv, m.P);
    }
}

// Stride 1 gradWeight of one plane: tap t pairs dy[p] with x[p + (a - 1) * W + (b - 1)], entry t
// of the vector's masks.
template <bool BF16>
ACP_AVX512 void gw_s1_avx(const Planes &p, const MaskTable &m, VecSums &vs) {
    int64_t off[9];
    DWD_UNROLL for (int t = 0; t < 9; ++t) off[t] = p.gx + (t / 3 - 1) * p.W + (t % 3 - 1);
    constexpr int64_t es = BF16 ? 2 : 4;
    const int64_t P = p.H * p.W;
    for (int64_t v = 0; v < m.nv; ++v) {
        const int64_t p0 = v * kL;
        prefetch_elems(p.dy, p.gy, p0 + kFlatAhead, kL, P, es);
        prefetch_elems(p.x, p.gx, p0 + kFlatAhead + p.W, kL, P, es);  // the farthest tap row
        if (m.full[v]) {
            const __m512 g = load<BF16>(p.dy, p.gy + p0, kAll16);
            DWD_UNROLL for (int t = 0; t < 9; ++t) vs.acc[t] = fma_ordered(g, load<BF16>(p.x, off[t] + p0, kAll16), vs.acc[t]);
        } else {
            const uint16_t *mk = m.mask + v * 9;
            const __m512 g = load<BF16>(p.dy, p.gy + p0, mk[4]);
            DWD_UNROLL for (int t = 0; t < 9; ++t) {
                const __mmask16 k = mk[t];
                vs.acc[t] = fma_ordered(g, load<BF16>(p.x, off[t] + p0, k), vs.acc[t], k);
            }
        }
        if (++vs.count == kFlush) flush_avx(vs);
    }
}

// Plane vector k (elements 16k .. 16k + 15 of the plane at x, P elements): the part inside, zero
// outside the plane.
ACP_AVX512 __attribute__((always_inline)) inline __m512 plane_vector(const float *x, int64_t k, int64_t nv, int64_t P) {
    return k >= 0 && k < nv ? _mm512_maskz_loadu_ps(first_lanes(P - k * kL), x + k * kL) : _mm512_setzero_ps();
}

// FLOAT stride-1 gradWeight of flattened planes with rows wider than a vector (R = W % 16): the
// same vectors, products, masks and order as gw_s1_avx, but each tap's input vector is shifted out
// of the plane's own 16-element vectors (valignd) instead of being loaded at its offset, where 8 of
// the 9 loads crossed a cache line. Tap row a's vectors start at element 16v + e_a (e_a = (a - 1)W
// - 1, b = 0), inside plane vectors v + k_a .. v + k_a + 2 (k_a = floor(e_a / 16)); each row keeps
// those three in registers and loads one new plane vector a step. Zen 5, one thread, 56x56 planes:
// in L1 0.86 -> 0.50 us a plane, 8x128 planes from memory 1.02 -> 0.72-0.80 us (with one
// prefetch_line a step: prefetch_lines' loop took 1.6 of 8.6 cycles a vector).
template <int R>
ACP_AVX512 __attribute__((always_inline)) inline void gw_s1_wide_avx(const Planes &p, const MaskTable &m, VecSums &vs) {
    const int64_t W = p.W, P = p.H * p.W, nv = m.nv;
    // tap row a's first input element relative to the vector: e_a = (a - 1)W - 1 = 16 k_a + s_a,
    // s_a fixed by R: the row above (15 - R) % 16, the row itself 15, the row below (R + 15) % 16
    constexpr int sT = (31 - R) % 16, sM = 15, sB = (R + 15) % 16;
    const int64_t kT = (-W - 1 - sT) / kL, kB = (W - 1 - sB) / kL;  // exact divisions
    const float *x = static_cast<const float *>(p.x) + p.gx, *g = static_cast<const float *>(p.dy) + p.gy;
    __m512 t0 = plane_vector(x, kT, nv, P), t1 = plane_vector(x, kT + 1, nv, P), t2 = plane_vector(x, kT + 2, nv, P);
    __m512 c0 = plane_vector(x, -1, nv, P), c1 = plane_vector(x, 0, nv, P), c2 = plane_vector(x, 1, nv, P);
    __m512 b0 = plane_vector(x, kB, nv, P), b1 = plane_vector(x, kB + 1, nv, P), b2 = plane_vector(x, kB + 2, nv, P);
    // The body [body0, body1): vectors with every lane in rows 1 .. H - 2 (a tap's lanes then depend
    // on its column only: b = 0 those of mask 3, b = 1 all, b = 2 those of mask 5) whose step loads
    // whole plane vectors inside the plane. From row 1 on the loads are inside (-kT - 3 < W / 16);
    // the last whole load comes before the last row (so body1 needs no row bound). The vectors
    // before and after take the table's nine masks and loads clipped to the plane.
    const int64_t body0 = (W + kL - 1) / kL, body1 = P / kL - kB - 3;
    auto step = [&](int64_t v, auto body, auto ahead) ACP_AVX512 __attribute__((always_inline)) {
        const int64_t p0 = v * kL;
        if (decltype(ahead)::value || p0 + kFlatAhead < P) acp::prefetch_line(g + p0 + kFlatAhead);
        if (decltype(ahead)::value || p0 + kFlatAhead + W < P) acp::prefetch_line(x + p0 + kFlatAhead + W);
        const __m512 r[9] = {lanes_from<sT>(t0, t1, t2), lanes_from<sT + 1>(t0, t1, t2), lanes_from<sT + 2>(t0, t1, t2),
                             lanes_from<sM>(c0, c1, c2), lanes_from<sM + 1>(c0, c1, c2), lanes_from<sM + 2>(c0, c1, c2),
                             lanes_from<sB>(b0, b1, b2), lanes_from<sB + 1>(b0, b1, b2), lanes_from<sB + 2>(b0, b1, b2)};
        const uint16_t *mk = m.mask + v * 9;
        if constexpr (decltype(body)::value) {
            const __m512 gv = _mm512_loadu_ps(g + p0);
            const __mmask16 k0 = mk[3], k2 = mk[5];
            DWD_UNROLL for (int a = 0; a < 3; ++a) {
                vs.acc[a * 3] = fma_ordered(gv, r[a * 3], vs.acc[a * 3], k0);
                vs.acc[a * 3 + 1] = fma_ordered(gv, r[a * 3 + 1], vs.acc[a * 3 + 1]);
                vs.acc[a * 3 + 2] = fma_ordered(gv, r[a * 3 + 2], vs.acc[a * 3 + 2], k2);
            }
            t0 = t1, t1 = t2, t2 = _mm512_loadu_ps(x + (v + kT + 3) * kL);
            c0 = c1, c1 = c2, c2 = _mm512_loadu_ps(x + (v + 2) * kL);
            b0 = b1, b1 = b2, b2 = _mm512_loadu_ps(x + (v + kB + 3) * kL);
        } else {
            const __m512 gv = _mm512_maskz_loadu_ps(mk[4], g + p0);
            DWD_UNROLL for (int t = 0; t < 9; ++t) vs.acc[t] = fma_ordered(gv, r[t], vs.acc[t], mk[t]);
            t0 = t1, t1 = t2, t2 = plane_vector(x, v + kT + 3, nv, P);
            c0 = c1, c1 = c2, c2 = plane_vector(x, v + 2, nv, P);
            b0 = b1, b1 = b2, b2 = plane_vector(x, v + kB + 3, nv, P);
        }
        if (++vs.count == kFlush) flush_avx(vs);
    };
    const int64_t e0 = std::clamp<int64_t>(body0, 0, nv), e1 = std::clamp<int64_t>(body1, e0, nv);
    // (the body's first part fetches ahead without asking whether it is still inside the plane)
    const int64_t ea = std::clamp<int64_t>((P - kFlatAhead - W - 1) / kL + 1, e0, e1);
    for (int64_t v = 0; v < e0; ++v) step(v, std::false_type{}, std::false_type{});
    for (int64_t v = e0; v < ea; ++v) step(v, std::true_type{}, std::true_type{});
    for (int64_t v = ea; v < e1; ++v) step(v, std::true_type{}, std::false_type{});
    for (int64_t v = e1; v < nv; ++v) step(v, std::false_type{}, std::false_type{});
}

// BF16 stride-1 gradWeight of rows wider than a vector (strips()): bands of kStripBand gradient rows,
// each band strip by strip (32 columns), each strip down the band's rows; lane l takes the strip's
// columns x0 + 2l, then x0 + 2l + 1 (the scalar spelling's walk). A strip's three input rows stay in
// registers, widened once (Row4), so that a gradient row costs one load of its own and one new input
// row: row after row across the strips, every input row was loaded and widened three times. On an
// Intel Xeon with AMX those loads, which mostly cross a cache line, set the pace: 56x56 planes, one
// thread, in L1: 1.17 -> 0.70 us a plane. Every lane is summed, so the edge strips mask each tap to
// the lanes whose column and neighbour column are inside; rows outside the plane are skipped.
template <bool EDGE>
ACP_AVX512 __attribute__((always_inline)) inline void gw_strip_band(const Planes &p, int64_t y0, int64_t y1, int64_t x0, bool fetch,
                                                                VecSums &vs) {
    const auto *g = static_cast<const uint16_t *>(p.dy) + p.gy, *x = static_cast<const uint16_t *>(p.x) + p.gx;
    const int64_t H = p.H, W = p.W, n = W - x0;
    const StripMasks sm = strip_masks(x0, n);
    // tap column b: even lanes (column x0 + 2l, input x0 + 2l - 1 + b), odd lanes (x0 + 2l + 1, input x0 + 2l + b)
    const __mmask16 ev[3] = {static_cast<__mmask16>(first_lanes((n + 1) / 2) & sm.left), first_lanes((n + 1) / 2), first_lanes(n / 2)};
    const __mmask16 od[3] = {first_lanes(n / 2), first_lanes(n / 2), first_lanes((n - 1) / 2)};
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    auto taps = [&](int a, __m512 ge, __m512 go, const Row4 &r) ACP_AVX512 __attribute__((always_inline)) {
        DWD_UNROLL for (int b = 0; b < 3; ++b) {
            __m512 &acc = vs.acc[a * 3 + b];
            if constexpr (EDGE) {
                acc = fma_ordered(ge, r.e(b), acc, ev[b]);
                acc = fma_ordered(go, r.o(b), acc, od[b]);
            } else {
                acc = fma_ordered(ge, r.e(b), acc);
                acc = fma_ordered(go, r.o(b), acc);
            }
        }
    };
    // gradient row oy with input rows oy - 1 (above), oy (at) and oy + 1 (below, loaded here)
    auto step = [&](int64_t oy, const Row4 &above, const Row4 &at, Row4 &below) ACP_AVX512 __attribute__((always_inline)) {
        if (fetch) {  // the first strip of a band fetches whole rows for the bands to come
            prefetch_row(p.x, p.gx, oy + 1 + kStripAhead, H, W, 2);
            prefetch_row(p.dy, p.gy, oy + kStripAhead, H, W, 2);
        }
        const __m512i gv = EDGE ? _mm512_maskz_loadu_epi16(sm.cols, g + oy * W + x0) : _mm512_loadu_si512(g + oy * W + x0);
        const __m512 ge = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, gv, 16)), go = _mm512_castsi512_ps(_mm512_and_si512(gv, high));
        if (oy > 0) taps(0, ge, go, above);
        taps(1, ge, go, at);
        if (oy + 1 < H) {
            strip_row<EDGE>(x + (oy + 1) * W + x0, sm.load, below);
            taps(2, ge, go, below);
        }
        vs.count += 2;  // two products per lane: kFlush counts them as two vectors
        if (vs.count == kFlush) flush_avx(vs);
    };
    Row4 r0{}, r1{}, r2{};
    if (y0 > 0) strip_row<EDGE>(x + (y0 - 1) * W + x0, sm.load, r0);
    strip_row<EDGE>(x + y0 * W + x0, sm.load, r1);
    int64_t oy = y0;
    for (; oy + 3 <= y1; oy += 3) {  // three steps a turn: the rows change roles, not registers
        step(oy, r0, r1, r2);
        step(oy + 1, r1, r2, r0);
        step(oy + 2, r2, r0, r1);
    }
    if (oy < y1) step(oy++, r0, r1, r2);
    if (oy < y1) step(oy, r1, r2, r0);
}

ACP_AVX512 __attribute__((always_inline)) inline void gw_s1_strips_avx(const Planes &p, VecSums &vs) {
    for (int64_t y0 = 0; y0 < p.H; y0 += kStripBand) {
        const int64_t y1 = std::min(p.H, y0 + kStripBand);
        for (int64_t x0 = 0; x0 < p.W; x0 += kStrip) {
            if (x0 == 0 || x0 + kStrip >= p.W) gw_strip_band<true>(p, y0, y1, x0, x0 == 0, vs);
            else gw_strip_band<false>(p, y0, y1, x0, false, vs);
        }
    }
}

// Input columns 2 * j0 .. 2 * j0 + 31 of one row (the rest of the row only, zeros past it) as the
// even and the odd columns.
template <bool BF16>
ACP_AVX512 inline void even_odd(const void *x, int64_t at, int64_t left, __m512 &ev, __m512 &od) {
    if constexpr (BF16) {  // a BF16 pair in a 32-bit lane: the even column low, the odd one high
        const __m512i v = _mm512_maskz_loadu_epi16(first_lanes32(left), static_cast<const uint16_t *>(x) + at);
        ev = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, v, 16));
        od = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    } else {
        const float *f = static_cast<const float *>(x) + at;
        const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(left), f), hi = _mm512_maskz_loadu_ps(first_lanes(left - kL), f + kL);
        ev = _mm512_permutex2var_ps(lo, _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), hi);
        od = _mm512_permutex2var_ps(lo, _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1), hi);
    }
}

// Rows of one step (Wo <= 16): input row 2oy + 1 (tap row 2 of gradient row oy) is row 2(oy + 1) - 1
// (tap row 0 of the next): split once, kept for the next row. Each tap's sums in the same order.
template <bool BF16>
ACP_AVX512 void gw_s2_one_step_avx(const Planes &p, VecSums &vs) {
    const __mmask16 k1 = first_lanes(p.Wo), k0 = static_cast<__mmask16>(k1 & 0xfffe), k2 = first_lanes(p.W / 2);
    const __m512i zero = _mm512_setzero_si512();
    __m512 ev, od, om;  // input row 2oy - 1: even columns, odd columns, odd columns one lane on
    for (int64_t oy = 0; oy < p.Ho; ++oy) {
        const __m512 g = load<BF16>(p.dy, p.gy + oy * p.Wo, k1);
        if (oy > 0) {  // row 2oy - 1, split as the previous row's tap row 2
            vs.acc[0] = fma_ordered(g, om, vs.acc[0], k0);
            vs.acc[1] = fma_ordered(g, ev, vs.acc[1], k1);
            vs.acc[2] = fma_ordered(g, od, vs.acc[2], k2);
        }
        DWD_UNROLL for (int a = 1; a < 3; ++a) {
            const int64_t iy = 2 * oy - 1 + a;
            if (iy >= p.H) continue;
            even_odd<BF16>(p.x, p.gx + iy * p.W, p.W, ev, od);
            om = _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(od), zero, 15));
            vs.acc[a * 3] = fma_ordered(g, om, vs.acc[a * 3], k0);
            vs.acc[a * 3 + 1] = fma_ordered(g, ev, vs.acc[a * 3 + 1], k1);
            vs.acc[a * 3 + 2] = fma_ordered(g, od, vs.acc[a * 3 + 2], k2);
        }
        if (++vs.count == kFlush) flush_avx(vs);
    }
}

// Stride 2 gradWeight of one plane, 16 gradient columns j of a row per step: tap column 0 reads
// input column 2j - 1 (the previous odd column), 1 reads 2j, 2 reads 2j + 1.
template <bool BF16>
ACP_AVX512 void gw_s2_avx(const Planes &p, VecSums &vs) {
    if (p.Wo <= kL) {
        gw_s2_one_step_avx<BF16>(p, vs);
        return;
    }
    constexpr int64_t es = BF16 ? 2 : 4;
    for (int64_t oy = 0; oy < p.Ho; ++oy) {
        prefetch_row(p.x, p.gx, 2 * (oy + kRowsAhead), p.H, p.W, es);
        prefetch_row(p.x, p.gx, 2 * (oy + kRowsAhead) + 1, p.H, p.W, es);
        prefetch_row(p.dy, p.gy, oy + kRowsAhead, p.Ho, p.Wo, es);
        __m512 prev_od[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int64_t j0 = 0; j0 < p.Wo; j0 += kL) {
            const int64_t left = p.W - 2 * j0;
            const __mmask16 k1 = first_lanes(p.Wo - j0);
            const __mmask16 k0 = j0 == 0 ? static_cast<__mmask16>(k1 & 0xfffe) : k1;
            const __mmask16 k2 = first_lanes(left / 2);
            const __m512 g = load<BF16>(p.dy, p.gy + oy * p.Wo + j0, k1);
            DWD_UNROLL for (int a = 0; a < 3; ++a) {
                const int64_t iy = 2 * oy - 1 + a;
                if (iy < 0 || iy >= p.H) continue;
                __m512 ev, od;
                even_odd<BF16>(p.x, p.gx + iy * p.W + 2 * j0, left, ev, od);
                const __m512 om = _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kAll16, _mm512_castps_si512(od), _mm512_castps_si512(prev_od[a]), 15));
                prev_od[a] = od;
                vs.acc[a * 3] = fma_ordered(g, om, vs.acc[a * 3], k0);
                vs.acc[a * 3 + 1] = fma_ordered(g, ev, vs.acc[a * 3 + 1], k1);
                vs.acc[a * 3 + 2] = fma_ordered(g, od, vs.acc[a * 3 + 2], k2);
            }
            if (++vs.count == kFlush) flush_avx(vs);
        }
    }
}

// gradWeight of channels [c0, c1) over images [n0, n1), channel by channel, each channel's images in
// order with its lane sums in registers; plane(p, vs) adds one plane's products. A channel's planes
// are an image apart, which the hardware prefetchers do not follow: the head of the next plane comes
// into L1 while this one computes, and the kernels of large planes fetch their rows ahead. (The whole
// next plane into L2 measured 5-10 % slower on Zen 5; so did fetching all of a small task's planes
// into L2 first, 5-20 % on 7x7 to 56x56 FLOAT and BF16 planes from L3, or the next channel's planes
// of every image into L1.) A channel's vectors are summed in the order the scalar spelling walks
// them: the same flushes, the same bytes.
template <bool BF16, class Sums = VecSums, class PlaneSums>
ACP_AVX512 __attribute__((always_inline)) inline void gw_channel_loop(Planes p, int64_t C, int64_t c0, int64_t c1, int64_t n0, int64_t n1,
                                                                   ChannelSums *cs, double *out, PlaneSums &&plane) {
    const int64_t es = BF16 ? 2 : 4, in_plane = p.H * p.W, out_plane = p.Ho * p.Wo;
    for (int64_t c = c0; c < c1; ++c) {
        Sums vs(&cs->sum[0][0]);
        for (int64_t n = n0; n < n1; ++n) {
            if (n + 1 < n1) {
                acp::prefetch_lines(static_cast<const uint8_t *>(p.dy) + ((n + 1) * C + c) * out_plane * es, std::min(kHeadBytes, out_plane * es));
                acp::prefetch_lines(static_cast<const uint8_t *>(p.x) + ((n + 1) * C + c) * in_plane * es, std::min(kHeadBytes, in_plane * es));
            }
            p.gy = (n * C + c) * out_plane, p.gx = (n * C + c) * in_plane;
            plane(p, vs);
        }
        flush_avx(vs);
        lanes_pairwise_avx(cs->sum, out + (c - c0) * 9);
    }
}

// Pitched planes of H rows (WC: the width when known at compile time): a loop of their own with the
// kernel inlined, the lane sums in registers from plane to plane (through a call per plane they
// went to memory and back: 7x7 BF16 -8 %).
// halves: FLOAT in half-width rows.
template <bool BF16, int H, int WC>
ACP_AVX512 void gw_pitched_channels(const Planes &p, int64_t C, int64_t c0, int64_t c1, int64_t n0, int64_t n1, ChannelSums *cs,
                                 double *out, bool halves) {
    if constexpr (!BF16)
        if (halves)
            return gw_channel_loop<BF16, VecSums8>(p, C, c0, c1, n0, n1, cs, out,
                                                   [&](const Planes &q, VecSums8 &vs) ACP_AVX512 { gw_s1_rows8_avx<H, WC>(q, vs); });
    Pitch made;
    const Pitch &pt = pitch_of<WC>(p.W, made);
    gw_channel_loop<BF16>(p, C, c0, c1, n0, n1, cs, out,
                          [&](const Planes &q, VecSums &vs) ACP_AVX512 { gw_s1_pitched_avx<BF16, H, WC>(q, pt, vs); });
}

// FLOAT flattened planes with rows wider than a vector: gw_s1_wide_avx for the plane's R = W % 16,
// inlined into its own channel loop (the lane sums stay in registers).
template <int R>
ACP_AVX512 void gw_wide_channels_r(const Planes &p, const MaskTable &m, int64_t C, int64_t c0, int64_t c1, int64_t n0, int64_t n1,
                                   ChannelSums *cs, double *out) {
    gw_channel_loop<false>(p, C, c0, c1, n0, n1, cs, out, [&](const Planes &q, VecSums &vs) ACP_AVX512 __attribute__((always_inline)) { gw_s1_wide_avx<R>(q, m, vs); });
}

ACP_AVX512 void gw_wide_channels(const Planes &p, const MaskTable &m, int64_t C, int64_t c0, int64_t c1, int64_t n0, int64_t n1,
                                 ChannelSums *cs, double *out) {
    switch (p.W % kL) {
#define DWD_WIDE(r) \
    case r: return gw_wide_channels_r<r>(p, m, C, c0, c1, n0, n1, cs, out);
        DWD_WIDE(0) DWD_WIDE(1) DWD_WIDE(2) DWD_WIDE(3) DWD_WIDE(4) DWD_WIDE(5) DWD_WIDE(6) DWD_WIDE(7)
        DWD_WIDE(8) DWD_WIDE(9) DWD_WIDE(10) DWD_WIDE(11) DWD_WIDE(12) DWD_WIDE(13) DWD_WIDE(14) DWD_WIDE(15)
#undef DWD_WIDE
    }
}

template <bool BF16>
ACP_AVX512 void gw_channels(const Planes &p, const MaskTable &m, int64_t C, int64_t c0, int64_t c1, int64_t n0, int64_t n1,
                         ChannelSums *cs, double *out, bool halves) {
    if (p.s == 1 && p.H == 14 && p.W == 14) {  // MobileNet's 14x14 by rows, inlined (gw_s1_rows_avx's HC)
        gw_channel_loop<BF16>(p, C, c0, c1, n0, n1, cs, out, [&](const Planes &q, VecSums &vs) ACP_AVX512 { gw_s1_rows_avx<BF16, 14>(q, vs); });
        return;
    }
    if (p.s == 1 && pitched(p.H, p.W)) {
        switch (p.H) {
            case 1: gw_pitched_channels<BF16, 1, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 2: gw_pitched_channels<BF16, 2, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 3: gw_pitched_channels<BF16, 3, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 4: gw_pitched_channels<BF16, 4, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 5: gw_pitched_channels<BF16, 5, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 6: gw_pitched_channels<BF16, 6, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
            case 7:  // MobileNet's 7x7: offsets and masks constant
                if (p.W == 7) gw_pitched_channels<BF16, 7, 7>(p, C, c0, c1, n0, n1, cs, out, halves);
                else gw_pitched_channels<BF16, 7, 0>(p, C, c0, c1, n0, n1, cs, out, halves);
                return;
            default: gw_pitched_channels<BF16, 8, 0>(p, C, c0, c1, n0, n1, cs, out, halves); return;
        }
    }
    if constexpr (!BF16)
        if (p.s == 1 && p.W > kL) {
            gw_wide_channels(p, m, C, c0, c1, n0, n1, cs, out);
            return;
        }
    if constexpr (BF16)
        if (p.s == 1 && strips(p.W)) {  // a loop of its own: the strip's rows and sums all in registers
            gw_channel_loop<BF16>(p, C, c0, c1, n0, n1, cs, out, [&](const Planes &q, VecSums &vs) ACP_AVX512 { gw_s1_strips_avx(q, vs); });
            return;
        }
    gw_channel_loop<BF16>(p, C, c0, c1, n0, n1, cs, out, [&](const Planes &q, VecSums &vs) ACP_AVX512 {
        if (q.s == 1 && by_rows(q.W)) gw_s1_rows_avx<BF16>(q, vs);
        else if (q.s == 1 && q.W < kNarrow && !BF16) gw_s1_narrow_avx<BF16>(q, m, vs);
        else if (q.s == 1) gw_s1_avx<BF16>(q, m, vs);
        else gw_s2_avx<BF16>(q, vs);
    });
}

}  // namespace

ACP_AVX512 void gw_finish_avx(const double *sums, int64_t n, float *dw) {
    const __m512d zero = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 8) {
        const auto k = static_cast<__mmask8>(n - i >= 8 ? 0xffu : (1u << (n - i)) - 1u);
        _mm256_mask_storeu_ps(dw + i, k, _mm512_maskz_cvtpd_ps(k, add_ordered(zero, _mm512_maskz_loadu_pd(k, sums + i))));
    }
}

void gw_channels_avx(bool bf16, bool halves, const Planes &p, const MaskTable &m, int64_t C, int64_t c0, int64_t c1, int64_t n0,
                     int64_t n1, ChannelSums *cs, double *out) {
    if (bf16) gw_channels<true>(p, m, C, c0, c1, n0, n1, cs, out, halves);
    else gw_channels<false>(p, m, C, c0, c1, n0, n1, cs, out, halves);
}

}  // namespace conv::dwd
