// max_unpool2d compute kernels. See max_unpool2d_kernels.hpp for the contract.
//
// The gather is memory-bound (each element: one index read, one element gathered, one written), so
// the fast path only has to keep the memory system busy: dense runs of indices and output, one
// vector range check per 16 indices, scalar element loads, whole-line vector stores (non-temporal
// when the output is large), for elements of every size. Everything else (strided views, run
// tails) takes typed scalar loops with the same range check. Elements are copied as bit patterns,
// or widened from FLOAT16 to FLOAT (Widen::Half) by numeric.hpp's conversion.
//
// Work is split into (plane, row block) items (gather) or planes (scatter), taken by whichever thread
// is free (TBB's auto partitioner): with a static split, a thread that stalled - a preempted virtual
// CPU - left its half waiting (medians of the 32x64x112x112 gathers 5-25 % lower this way).
// A bad index is recorded as an atomic minimum of its row-major position; items that start after
// the minimum found so far are skipped, which never changes the minimum: the reported position is
// the first bad one whatever the thread count or scheduling.
#include "max_unpool2d_kernels.hpp"

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "aclnn_cpu/numeric_avx512.hpp"
#include "aclnn_cpu/prefetch.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

namespace max_unpool2d {
namespace {

constexpr int64_t kMinItems = 64;                      // split planes into row blocks below this many planes
constexpr int64_t kStreamBytes = int64_t{16} << 20;    // prefetch (gather) / stream (scatter) when moving more (L3: 32 MB)
constexpr int64_t kStreamOutBytes = int64_t{8} << 20;  // gather: stream out when it is larger
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
constexpr size_t kStageBytes = size_t{64} << 10;      // scatter: a staged output plane (on the stack)
constexpr int64_t kPrefetchLead = 512;                 // gather: gradOutput prefetched this many indices ahead

template <class T>
inline T load(const char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);  // views need not be aligned to the element size
    return v;
}
template <class T>
inline void store(char *p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// The element a gather writes for source element v: v itself, or v widened to FLOAT.
template <class T, Widen Wd>
using Out = std::conditional_t<Wd == Widen::None, T, float>;
template <class T, Widen Wd>
inline Out<T, Wd> widened(T v) {
    if constexpr (Wd == Widen::Half) return acp::half_to_float(v);
    else return v;
}

// Elements of `elem` bytes from dst to the next 64-byte boundary (0 on one).
inline int64_t line_rest(const char *dst, int64_t elem) {
    const auto mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) % 64);
    return mis == 0 ? 0 : (64 - mis) / elem;
}
// Elements before dst reaches a 64-byte boundary (streaming stores need whole aligned lines).
inline int64_t head_to_line(const char *dst, int64_t elem, int64_t n) { return std::min(n, line_rest(dst, elem)); }

// An index as unsigned: negative values become huge, so one comparison checks both bounds.
template <class I>
inline uint64_t index_at(const char *p) {
    return static_cast<uint64_t>(static_cast<int64_t>(load<I>(p)));
}

using acp::cpu_has_avx512;

// Element (oh, ow) of the view sits at oh * oW + ow: the plane is dense.
bool dense_plane(View4 v, int64_t oH, int64_t oW) { return (oW <= 1 || v.w == 1) && (oH <= 1 || v.h == oW); }

void record_min(std::atomic<int64_t> &first, int64_t pos) {
    int64_t cur = first.load(std::memory_order_relaxed);
    while (pos < cur && !first.compare_exchange_weak(cur, pos, std::memory_order_relaxed)) {
    }
}

// ---------------------------------------------------------------------------------------------
// Dense runs: n indices and n outputs, both contiguous; src a dense plane of `limit` elements.
// Return the offset of the first bad index in the run, or -1 when all were good.
// ---------------------------------------------------------------------------------------------
using RunFn = int64_t (*)(const char *src, const char *idx, char *dst, int64_t n, uint64_t limit, bool stream);

template <class T, class I, Widen Wd>
int64_t gather_run_scalar(const char *src, const char *idx, char *dst, int64_t n, uint64_t limit, bool) {
    using O = Out<T, Wd>;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t q = index_at<I>(idx + i * int64_t{sizeof(I)});
        if (q >= limit) return i;
        store<O>(dst + i * int64_t{sizeof(O)}, widened<T, Wd>(load<T>(src + q * sizeof(T))));
    }
    return -1;
}

#if ACP_X86
constexpr __mmask16 kAll16 = 0xffff;



// Good lanes among 16 indices (bit k = index k), checked as the indices' own width: INT64 values
// against limit, INT32 values (as unsigned) against min(limit, 2^31) - 1, so negatives fail too.
template <class I>
ACP_AVX512 __mmask16 check16(const char *idx, __m512i lim64, __m512i lim32m1) {
    if constexpr (sizeof(I) == 8) {
        const __mmask8 a = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(idx), lim64);
        const __mmask8 b = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(idx + 64), lim64);
        return static_cast<__mmask16>(a | (static_cast<unsigned>(b) << 8));
    } else {
        return _mm512_cmple_epu32_mask(_mm512_loadu_si512(idx), lim32m1);
    }
}

// Steps of whole 64-byte output lines and whole groups of 16 indices (16 for 4- and 8-byte
// outputs, 32 for 2-byte, 64 for 1-byte): the indices range-checked 16 at a time with vector
// compares, the elements fetched with scalar loads (AVX-512 hardware gathers measured 1.5-2x slower
// than scalar loads on this Zen 5 machine), widened 16 at a time when asked, and written as whole
// 64-byte vectors, non-temporal when streaming.
template <class T, class I, Widen Wd>
ACP_AVX512 int64_t gather_run_avx(const char *src, const char *idx, char *dst, int64_t n, uint64_t limit, bool stream) {
    using O = Out<T, Wd>;
    constexpr int64_t kLine = 64 / int64_t{sizeof(O)};          // output elements per 64-byte store
    constexpr int64_t kStep = kLine > 16 ? kLine : int64_t{16};  // indices per step
    int64_t i = 0;
    if (stream) {
        i = head_to_line(dst, sizeof(O), n);
        const int64_t r = gather_run_scalar<T, I, Wd>(src, idx, dst, i, limit, false);
        if (r >= 0) return r;
    }
    const __m512i lim64 = _mm512_set1_epi64(static_cast<int64_t>(std::min<uint64_t>(limit, uint64_t{1} << 62)));
    const __m512i lim32m1 = _mm512_set1_epi32(static_cast<int32_t>(std::min<uint64_t>(limit, uint64_t{1} << 31) - 1));
    alignas(64) T line[kStep];
    for (; i + kStep <= n; i += kStep) {
        const char *ip = idx + i * int64_t{sizeof(I)};
        for (int64_t c = 0; c < kStep; c += 16) {
            const __mmask16 ok = check16<I>(ip + c * int64_t{sizeof(I)}, lim64, lim32m1);
            if (ok != kAll16) return i + c + __builtin_ctz(static_cast<unsigned>(static_cast<__mmask16>(~ok)));
        }
        for (int64_t l = 0; l < kStep; l += kLine) {
            for (int64_t k = l; k < l + kLine; ++k) line[k] = load<T>(src + index_at<I>(ip + k * int64_t{sizeof(I)}) * sizeof(T));
            __m512i v;
            if constexpr (Wd == Widen::None) {
                v = _mm512_load_si512(line + l);
            } else {
                const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i *>(line + l));
                v = _mm512_castps_si512(acp::avx512::from_half(h));
            }
            char *d = dst + (i + l) * int64_t{sizeof(O)};
            if (stream)
                _mm512_stream_si512(reinterpret_cast<__m512i *>(d), v);
            else
                _mm512_storeu_si512(d, v);
        }
    }
    const int64_t r = gather_run_scalar<T, I, Wd>(src, idx + i * int64_t{sizeof(I)}, dst + i * int64_t{sizeof(O)}, n - i, limit, false);
    return r < 0 ? -1 : i + r;
}

ACP_AVX512 void store_fence() { _mm_sfence(); }

// memcpy with non-temporal stores for the whole 64-byte lines of dst (plain ones at the edges).
ACP_AVX512 void copy_streaming(char *dst, const char *src, int64_t bytes) {
    const int64_t head = std::min(bytes, head_to_line(dst, 1, bytes));
    std::memcpy(dst, src, static_cast<size_t>(head));
    int64_t i = head;
    for (; i + 64 <= bytes; i += 64)
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i), _mm512_loadu_si512(src + i));
    std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
}
#else
void copy_streaming(char *dst, const char *src, int64_t bytes) { std::memcpy(dst, src, static_cast<size_t>(bytes)); }
#endif  // ACP_X86

template <class I, template <class, class, Widen> class Fn>
RunFn pick_run_elem(int elem, Widen widen) {
    if (widen == Widen::Half) return Fn<uint16_t, I, Widen::Half>::run;
    switch (elem) {
        case 1: return Fn<uint8_t, I, Widen::None>::run;
        case 2: return Fn<uint16_t, I, Widen::None>::run;
        case 4: return Fn<uint32_t, I, Widen::None>::run;
        default: return Fn<uint64_t, I, Widen::None>::run;
    }
}
template <class T, class I, Widen Wd>
struct RunScalar {
    static int64_t run(const char *s, const char *i, char *d, int64_t n, uint64_t l, bool st) { return gather_run_scalar<T, I, Wd>(s, i, d, n, l, st); }
};
#if ACP_X86
template <class T, class I, Widen Wd>
struct RunAvx {
    static int64_t run(const char *s, const char *i, char *d, int64_t n, uint64_t l, bool st) { return gather_run_avx<T, I, Wd>(s, i, d, n, l, st); }
};
#endif
template <class I>
RunFn pick_run_for(int elem, Widen widen, bool avx) {
#if ACP_X86
    if (avx) return pick_run_elem<I, RunAvx>(elem, widen);
#else
    (void)avx;
#endif
    return pick_run_elem<I, RunScalar>(elem, widen);
}

// ---------------------------------------------------------------------------------------------
// Any strides: one plane's rows [h0, h1). Returns the first bad position inside the plane or -1.
// ---------------------------------------------------------------------------------------------
struct PlaneArgs {
    const char *src;
    const char *idx;
    char *dst;
    View4 sv, iv, dv;
    int64_t h0, h1, W, oH, oW;
    uint64_t limit;       // oH * oW
    bool stream = false;  // scatter: stage a dense plane on the stack, then stream it out
};

template <class T, class I, Widen Wd>
int64_t gather_plane_strided(const PlaneArgs &a) {
    using O = Out<T, Wd>;
    // Locals, not a.field: the element stores go through char pointers, which may alias `a`.
    const char *const src = a.src, *const idx = a.idx;
    char *const dst = a.dst;
    const View4 sv = a.sv, iv = a.iv, dv = a.dv;
    const int64_t W = a.W, oW = a.oW;
    const uint64_t limit = a.limit;
    const bool src_dense = dense_plane(sv, a.oH, oW);
    for (int64_t h = a.h0; h < a.h1; ++h)
        for (int64_t w = 0; w < W; ++w) {
            const uint64_t q = index_at<I>(idx + (h * iv.h + w * iv.w) * int64_t{sizeof(I)});
            if (q >= limit) return h * W + w;
            const auto qi = static_cast<int64_t>(q);
            const int64_t s = src_dense ? qi : (qi / oW) * sv.h + (qi % oW) * sv.w;  // no division when dense
            store<O>(dst + (h * dv.h + w * dv.w) * int64_t{sizeof(O)}, widened<T, Wd>(load<T>(src + s * int64_t{sizeof(T)})));
        }
    return -1;
}

using PlaneFn = int64_t (*)(const PlaneArgs &);

template <class I, template <class, class> class Fn>
PlaneFn pick_plane_for(int elem) {
    switch (elem) {
        case 1: return Fn<uint8_t, I>::run;
        case 2: return Fn<uint16_t, I>::run;
        case 4: return Fn<uint32_t, I>::run;
        default: return Fn<uint64_t, I>::run;
    }
}
template <class I>
PlaneFn pick_strided_for(int elem, Widen widen) {
    if (widen == Widen::Half) return gather_plane_strided<uint16_t, I, Widen::Half>;
    switch (elem) {
        case 1: return gather_plane_strided<uint8_t, I, Widen::None>;
        case 2: return gather_plane_strided<uint16_t, I, Widen::None>;
        case 4: return gather_plane_strided<uint32_t, I, Widen::None>;
        default: return gather_plane_strided<uint64_t, I, Widen::None>;
    }
}

// Forward, one whole plane: zero dst, then scatter in row-major order (the last duplicate wins).
// When streaming, a dense plane that fits kStageBytes is built on the stack (in L1/L2) and written
// out once with non-temporal stores: no read-for-ownership of out, no second pass over memory.
template <class T, class I>
int64_t scatter_plane(const PlaneArgs &a) {
    // Locals, not a.field: the element stores go through char pointers, which may alias `a`.
    const char *const src = a.src, *const idx = a.idx;
    const View4 sv = a.sv, iv = a.iv, dv = a.dv;
    const int64_t W = a.W, oH = a.oH, oW = a.oW;
    const uint64_t limit = a.limit;
    const bool dense = dense_plane(dv, oH, oW);
    alignas(64) char stage[kStageBytes];
    const bool staged = a.stream && dense && limit * sizeof(T) <= kStageBytes;
    char *const out = staged ? stage : a.dst;
    if (dense) {
        std::memset(out, 0, limit * sizeof(T));
    } else {
        for (int64_t oh = 0; oh < oH; ++oh)
            for (int64_t ow = 0; ow < oW; ++ow) store<T>(out + (oh * dv.h + ow * dv.w) * int64_t{sizeof(T)}, T{0});
    }
    for (int64_t h = a.h0; h < a.h1; ++h)
        for (int64_t w = 0; w < W; ++w) {
            const uint64_t q = index_at<I>(idx + (h * iv.h + w * iv.w) * int64_t{sizeof(I)});
            if (q >= limit) return h * W + w;
            const auto qi = static_cast<int64_t>(q);
            const int64_t d = dense ? qi : (qi / oW) * dv.h + (qi % oW) * dv.w;  // no division when dense
            store<T>(out + d * int64_t{sizeof(T)}, load<T>(src + (h * sv.h + w * sv.w) * int64_t{sizeof(T)}));
        }
    if (staged) copy_streaming(a.dst, stage, static_cast<int64_t>(limit * sizeof(T)));
    return -1;
}
template <class T, class I>
struct Scatter {
    static int64_t run(const PlaneArgs &a) { return scatter_plane<T, I>(a); }
};

// The value of the bad index at a row-major position of (N, C, H, W).
int64_t index_value(const void *idx, View4 iv, Shape4 s, bool idx64, int64_t pos) {
    const int64_t w = pos % s.W, h = pos / s.W % s.H, c = pos / (s.W * s.H) % s.C, n = pos / (s.W * s.H * s.C);
    const char *p = static_cast<const char *>(idx) + (n * iv.n + c * iv.c + h * iv.h + w * iv.w) * (idx64 ? 8 : 4);
    return idx64 ? load<int64_t>(p) : load<int32_t>(p);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Backward: gather
// ---------------------------------------------------------------------------------------------
GatherKernel::GatherKernel(Shape4 in, int64_t oH, int64_t oW, int elem_bytes, bool idx64, Widen widen)
    : in_(in), oH_(oH), oW_(oW), elem_(elem_bytes), idx64_(idx64), widen_(widen) {
    const int64_t planes = in.N * in.C;
    row_blocks_ = 1;
    if (planes > 0 && in.H > 0) row_blocks_ = std::max<int64_t>(1, std::min((kMinItems + planes - 1) / planes, in.H));
}

BadIndex GatherKernel::run(const void *src, View4 sv, const void *idx, View4 iv, void *dst, View4 dv) const {
    const Shape4 s = in_;
    const int64_t planes = s.N * s.C, plane = s.H * s.W;
    if (planes <= 0 || plane <= 0) return {};
    const auto limit = static_cast<uint64_t>(oH_ * oW_);
    if (limit == 0) return {0, index_value(idx, iv, s, idx64_, 0)};  // no index can be valid (plan() rejects this)
    const int64_t es = elem_, is = idx64_ ? 8 : 4, ds = widen_ == Widen::None ? es : 4;  // src, index, dst bytes
    const bool avx = cpu_has_avx512();
    // The fast path wants q -> offset q in src, and contiguous rows of indices and dst.
    const bool fast = dense_plane(sv, oH_, oW_) && (s.W == 1 || (iv.w == 1 && dv.w == 1));
    const bool merged = fast && (s.H == 1 || (iv.h == s.W && dv.h == s.W));  // one run per item
    const int64_t moved = planes * plane * (ds + is) + planes * oH_ * oW_ * es;  // indices, out, gradOutput
    // Streaming stores are the vector loops' (whole aligned lines of whole elements).
    const bool stream = fast && avx && reinterpret_cast<uintptr_t>(dst) % ds == 0 && planes * plane * ds > kStreamOutBytes;
    const RunFn run_fn = idx64_ ? pick_run_for<int64_t>(elem_, widen_, avx) : pick_run_for<int32_t>(elem_, widen_, avx);
    const PlaneFn strided = idx64_ ? pick_strided_for<int64_t>(elem_, widen_) : pick_strided_for<int32_t>(elem_, widen_);
    const int64_t rb = row_blocks_;
    std::atomic<int64_t> first_bad{kNone};
    // Unpooling indices come from a max pool: input row h gathers from gradOutput rows near
    // h * oH / H, in three or so interleaved row streams, which the hardware prefetchers leave to
    // demand misses. Large gathers fetch those rows by hand `ahead` input rows (kPrefetchLead
    // indices) early - the next plane's first rows at the end of a plane. Indices that point
    // elsewhere only make these prefetches useless, never wrong. 32x64x56x56 <- 112x112 FLOAT,
    // 2 threads (Zen 5): int32 indices 3.0 -> 2.0 ms (min), int64 3.9 -> 2.2-2.7 ms. Only where
    // gradOutput's elements are at least as wide as the indices: with narrower ones (FLOAT16, or
    // int64 indices) the index stream is most of what is read, and in session 34's A/B runs
    // (alternated, 2 threads) the prefetch was 20-30 % slower for FLOAT16 with int64 indices and
    // for the 28x28 FLOAT row, and within the noise for the 112x112 FLOAT rows with int64 indices.
    const int64_t ahead = es >= is && fast && oH_ >= s.H && moved > kStreamBytes ? (kPrefetchLead + s.W - 1) / s.W : 0;
    auto prefetch_rows = [&](int64_t p, int64_t h) {
        if (h >= s.H) h -= s.H, ++p;  // the next plane's
        if (h >= s.H || p >= planes) return;
        const int64_t n = p / s.C, c = p % s.C, r0 = h * oH_ / s.H, r1 = (h + 1) * oH_ / s.H;
        acp::prefetch_lines(static_cast<const char *>(src) + (n * sv.n + c * sv.c + r0 * oW_) * es, (r1 - r0) * oW_ * es);
    };

    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t item = range.begin(); item != range.end(); ++item) {
            const int64_t p = item / rb, b = item % rb;
            const int64_t h0 = b * s.H / rb, h1 = (b + 1) * s.H / rb;
            const int64_t start = p * plane + h0 * s.W;
            if (h0 == h1 || first_bad.load(std::memory_order_relaxed) < start) continue;
            const int64_t n = p / s.C, c = p % s.C;
            const char *sp = static_cast<const char *>(src) + (n * sv.n + c * sv.c) * es;
            const char *ip = static_cast<const char *>(idx) + (n * iv.n + c * iv.c) * is;
            char *dp = static_cast<char *>(dst) + (n * dv.n + c * dv.c) * ds;
            if (!fast) {
                const int64_t r = strided(PlaneArgs{sp, ip, dp, sv, iv, dv, h0, h1, s.W, oH_, oW_, limit});
                if (r >= 0) record_min(first_bad, p * plane + r);
            } else if (merged && !ahead) {
                const int64_t r = run_fn(sp, ip + h0 * iv.h * is, dp + h0 * dv.h * ds, (h1 - h0) * s.W, limit, stream);
                if (r >= 0) record_min(first_bad, start + r);
            } else {
                // Row by row, or merged rows in runs of about kPrefetchLead elements (a row's run
                // leaves its tail to the scalar loop: 24 of a 56-element FLOAT16 row on the
                // 32-element step; 32x64x56x56 <- 112x112 FLOAT16 prefetched, 2 threads: 2.7-3.4 ->
                // 2.4-2.8 ms), each ending on a 64-byte line of dst: a line written partly by
                // plain stores (a run's edges) and partly by streaming ones costs both (FLOAT16
                // 56-column rows, 112 bytes: 2.0 -> 2.4 ms).
                const int64_t rows_per_run = merged ? std::max<int64_t>(1, kPrefetchLead / s.W) : 1;
                int64_t at = h0 * s.W;  // merged: the next element of the plane to gather
                for (int64_t h = h0, h_end; h < h1; h = h_end) {
                    h_end = std::min(h1, h + rows_per_run);
                    if (ahead)
                        for (int64_t r = h; r < h_end; ++r) prefetch_rows(p, r + ahead);
                    int64_t from = h * s.W, n = s.W;
                    const char *ir = ip + h * iv.h * is;
                    char *dr = dp + h * dv.h * ds;
                    if (merged) {
                        int64_t end = h_end * s.W;
                        if (h_end < h1) end += line_rest(dp + end * ds, ds);
                        from = at, n = std::min(end, h1 * s.W) - at;
                        ir = ip + at * is, dr = dp + at * ds;
                        at += n;
                        if (n <= 0) continue;
                    }
                    const int64_t r = run_fn(sp, ir, dr, n, limit, stream);
                    if (r >= 0) {
                        record_min(first_bad, p * plane + from + r);
                        break;
                    }
                }
            }
        }
#if ACP_X86
        if (stream) store_fence();  // order the non-temporal stores before the task completes
#endif
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, planes * rb), body, tbb::auto_partitioner());

    const int64_t pos = first_bad.load();
    if (pos == kNone) return {};
    return {pos, index_value(idx, iv, s, idx64_, pos)};
}

// ---------------------------------------------------------------------------------------------
// Forward: scatter
// ---------------------------------------------------------------------------------------------
ScatterKernel::ScatterKernel(Shape4 in, int64_t oH, int64_t oW, int elem_bytes, bool idx64)
    : in_(in), oH_(oH), oW_(oW), elem_(elem_bytes), idx64_(idx64) {}

BadIndex ScatterKernel::run(const void *src, View4 sv, const void *idx, View4 iv, void *dst, View4 dv) const {
    const Shape4 s = in_;
    const int64_t planes = s.N * s.C, plane = s.H * s.W;
    if (planes <= 0 || plane <= 0) return {};
    const auto limit = static_cast<uint64_t>(oH_ * oW_);
    const int64_t es = elem_, is = idx64_ ? 8 : 4;
    const PlaneFn fn = idx64_ ? pick_plane_for<int64_t, Scatter>(elem_) : pick_plane_for<int32_t, Scatter>(elem_);
    const int64_t moved = planes * plane * (es + is) + planes * oH_ * oW_ * es;  // self, indices, out
    const bool stream = cpu_has_avx512() && moved > kStreamBytes;
    std::atomic<int64_t> first_bad{kNone};
    auto body = [&](const tbb::blocked_range<int64_t> &range) {
        for (int64_t p = range.begin(); p != range.end(); ++p) {
            if (first_bad.load(std::memory_order_relaxed) < p * plane) continue;
            const int64_t n = p / s.C, c = p % s.C;
            PlaneArgs a{static_cast<const char *>(src) + (n * sv.n + c * sv.c) * es,
                        static_cast<const char *>(idx) + (n * iv.n + c * iv.c) * is,
                        static_cast<char *>(dst) + (n * dv.n + c * dv.c) * es,
                        sv, iv, dv, 0, s.H, s.W, oH_, oW_, limit};
            a.stream = stream;
            const int64_t r = fn(a);
            if (r >= 0) record_min(first_bad, p * plane + r);
        }
#if ACP_X86
        if (stream) store_fence();
#endif
    };
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, planes), body, tbb::auto_partitioner());
    const int64_t pos = first_bad.load();
    if (pos == kNone) return {};
    return {pos, index_value(idx, iv, s, idx64_, pos)};
}

}  // namespace max_unpool2d
