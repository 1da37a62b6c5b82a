// aclnn-cpu-bench: copy bandwidth and FP32 FMA peak, measured with the run's thread count.
#include "roofline.hpp"

#include <immintrin.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "acl/acl.h"

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs body(threadIndex) on `threads` threads (the caller is thread 0) and returns the wall time from
// the common start to the moment the last thread finished.
class Team {
public:
    explicit Team(int threads) : n_(std::max(1, threads)), start_(n_), end_(n_) {
        for (int t = 1; t < n_; ++t)
            workers_.emplace_back([this, t] {
                for (;;) {
                    start_.arrive_and_wait();
                    if (quit_) return;
                    body_(t);
                    end_.arrive_and_wait();
                }
            });
    }
    ~Team() {
        quit_ = true;
        start_.arrive_and_wait();
        for (auto &w : workers_) w.join();
    }
    double run(const std::function<void(int)> &body) {
        body_ = body;
        start_.arrive_and_wait();
        const auto t0 = Clock::now();
        body_(0);
        end_.arrive_and_wait();
        return std::chrono::duration<double>(Clock::now() - t0).count();
    }
    int size() const { return n_; }

private:
    int n_;
    std::barrier<> start_, end_;
    std::function<void(int)> body_;
    bool quit_ = false;
    std::vector<std::thread> workers_;
};

#define BENCH_FMA_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) float fma_chains_avx512(long iters) {
    const __m512 m = _mm512_set1_ps(0.99999994f), a = _mm512_set1_ps(1e-7f);
#define BENCH_DECL(i) __m512 c##i = _mm512_set1_ps(1.0f + 0.001f * (i));
    BENCH_FMA_CHAINS(BENCH_DECL)
#undef BENCH_DECL
    for (long it = 0; it < iters; ++it) {
#define BENCH_STEP(i) c##i = _mm512_fmadd_ps(c##i, m, a);
        BENCH_FMA_CHAINS(BENCH_STEP)
#undef BENCH_STEP
    }
    __m512 s = _mm512_setzero_ps();
#define BENCH_SUM(i) s = _mm512_add_ps(s, c##i);
    BENCH_FMA_CHAINS(BENCH_SUM)
#undef BENCH_SUM
    float lanes[16];
    _mm512_storeu_ps(lanes, s);
    float r = 0;
    for (float v : lanes) r += v;
    return r;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(long iters) {
    const __m256 m = _mm256_set1_ps(0.99999994f), a = _mm256_set1_ps(1e-7f);
#define BENCH_DECL(i) __m256 c##i = _mm256_set1_ps(1.0f + 0.001f * (i));
    BENCH_FMA_CHAINS(BENCH_DECL)
#undef BENCH_DECL
    for (long it = 0; it < iters; ++it) {
#define BENCH_STEP(i) c##i = _mm256_fmadd_ps(c##i, m, a);
        BENCH_FMA_CHAINS(BENCH_STEP)
#undef BENCH_STEP
    }
    __m256 s = _mm256_setzero_ps();
#define BENCH_SUM(i) s = _mm256_add_ps(s, c##i);
    BENCH_FMA_CHAINS(BENCH_SUM)
#undef BENCH_SUM
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float r = 0;
    for (float v : lanes) r += v;
    return r;
}

// A copy with non-temporal stores: writes whole lines without reading them first, which is how an
// output-bound kernel writes a large result. glibc's memcpy does not always do this.
__attribute__((target("avx512f"))) void stream_copy_avx512(char *dst, const char *src, size_t len) {
    size_t i = 0;
    for (; i + 256 <= len; i += 256) {
        const __m512i a = _mm512_load_si512(src + i), b = _mm512_load_si512(src + i + 64);
        const __m512i c = _mm512_load_si512(src + i + 128), d = _mm512_load_si512(src + i + 192);
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i), a);
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i + 64), b);
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i + 128), c);
        _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i + 192), d);
    }
    _mm_sfence();
    if (i < len) std::memcpy(dst + i, src + i, len - i);
}

// Read only: the whole buffer summed into four vectors (a kernel that reads far more than it
// writes is bound by this rate, not by a copy's).
__attribute__((target("avx512f"))) uint64_t stream_read_avx512(const char *src, size_t len) {
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 256 <= len; i += 256) {
        a = _mm512_add_epi64(a, _mm512_load_si512(src + i));
        b = _mm512_add_epi64(b, _mm512_load_si512(src + i + 64));
        c = _mm512_add_epi64(c, _mm512_load_si512(src + i + 128));
        d = _mm512_add_epi64(d, _mm512_load_si512(src + i + 192));
    }
    alignas(64) uint64_t lanes[8];  // (not _mm512_reduce_add_epi64: GCC 12 warns in its header)
    _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
    uint64_t s = 0;
    for (uint64_t v : lanes) s += v;
    for (; i < len; ++i) s += static_cast<unsigned char>(src[i]);
    return s;
}
uint64_t read_plain(const char *src, size_t len) {
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t v;
        std::memcpy(&v, src + i, 8);
        s += v;
    }
    return s;
}
// Write only, non-temporal (whole lines, no read for ownership).
__attribute__((target("avx512f"))) void stream_write_avx512(char *dst, size_t len) {
    const __m512i z = _mm512_set1_epi8(1);
    size_t i = 0;
    for (; i + 64 <= len; i += 64) _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i), z);
    _mm_sfence();
    if (i < len) std::memset(dst + i, 1, len - i);
}

volatile float g_sink;
volatile uint64_t g_sink_read;

}  // namespace

namespace {

// Two copy buffers from aclrtMalloc (like the operators' tensors, so that both run on the same
// pages, huge ones), split between the team's threads in 64-byte-aligned slices, each first
// touched by the thread that will work on it. Shared by the roofline and the probe.
struct SplitBuffers {
    Team &team;
    size_t bytes;
    char *src = nullptr, *dst = nullptr;
    SplitBuffers(Team &t, size_t b) : team(t), bytes((b + 4095) / 4096 * 4096) {
        void *s = nullptr, *d = nullptr;
        if (aclrtMalloc(&s, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) src = static_cast<char *>(s);
        if (aclrtMalloc(&d, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) dst = static_cast<char *>(d);
        if (ok())
            run([&](int t, size_t off, size_t len) {
                std::memset(src + off, t + 1, len);
                std::memset(dst + off, 0, len);
            });
    }
    ~SplitBuffers() {
        if (src) (void)aclrtFree(src);
        if (dst) (void)aclrtFree(dst);
    }
    SplitBuffers(const SplitBuffers &) = delete;
    SplitBuffers &operator=(const SplitBuffers &) = delete;
    bool ok() const { return src && dst; }
    // body(thread, offset, length) on every thread's slice at once; the wall time
    double run(const std::function<void(int, size_t, size_t)> &body) {
        const size_t per = (bytes / static_cast<size_t>(team.size()) + 63) / 64 * 64;
        return team.run([&](int t) {
            const size_t off = std::min(bytes, per * static_cast<size_t>(t));
            body(t, off, std::min(bytes - off, per));
        });
    }
};

bool has_stream_copy() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

}  // namespace

struct CopyProbe::Impl {
    Team team;
    SplitBuffers buf;
    bool stream = has_stream_copy();
    Impl(int threads, size_t bytes) : team(threads), buf(team, bytes) {}
    double pass() {  // one timed copy (the roofline's faster kind)
        return buf.run([&](int, size_t off, size_t len) {
            if (stream) stream_copy_avx512(buf.dst + off, buf.src + off, len);
            else std::memcpy(buf.dst + off, buf.src + off, len);
        });
    }
};

CopyProbe::CopyProbe(int threads, size_t bytes) : impl_(std::make_unique<Impl>(threads, bytes)) {}
CopyProbe::~CopyProbe() = default;

double CopyProbe::gbps(int reps) {
    if (!impl_->buf.ok()) return 0;
    impl_->pass();  // untimed, as the roofline's passes
    double best = 0;
    for (int i = 0; i < std::max(1, reps); ++i) best = std::max(best, 2.0 * static_cast<double>(impl_->buf.bytes) / impl_->pass() * 1e-9);
    return best;
}

Roofline measure_roofline(int threads, size_t copyBytes, int reps, double fmaSecondsPerRep) {
    Roofline r;
    Team team(threads);
    r.threads = team.size();
    r.copyReps = std::max(1, reps);
    const int n = team.size();

    // ---- copy bandwidth: two warm buffers, each thread copies its slice (SplitBuffers)
    SplitBuffers buf(team, copyBytes);
    copyBytes = r.copyBytes = buf.bytes;
    char *src = buf.src, *dst = buf.dst;
    if (buf.ok()) {
        const bool has_stream = has_stream_copy();
        // Best of `reps` timed passes of `pass` over each thread's slice (after one untimed one);
        // `bytes` of them per pass (a copy counts read + write).
        auto measure_pass = [&](const std::function<void(size_t off, size_t len)> &pass, double bytes, std::vector<double> &gbps) {
            auto body = [&](int, size_t off, size_t len) { pass(off, len); };
            buf.run(body);
            for (int i = 0; i < r.copyReps; ++i) gbps.push_back(bytes / buf.run(body) * 1e-9);
        };
        auto measure = [&](void (*copy)(char *, const char *, size_t), std::vector<double> &gbps) {
            measure_pass([&](size_t off, size_t len) { copy(dst + off, src + off, len); }, 2.0 * static_cast<double>(copyBytes), gbps);
        };
        std::vector<double> plain, streamed, reads, writes;
        measure([](char *d, const char *s, size_t n) { std::memcpy(d, s, n); }, plain);
        if (has_stream) measure(stream_copy_avx512, streamed);
        measure_pass(
            [&](size_t off, size_t len) { g_sink_read = has_stream ? stream_read_avx512(src + off, len) : read_plain(src + off, len); },
            static_cast<double>(copyBytes), reads);
        measure_pass(
            [&](size_t off, size_t len) {
                if (has_stream) stream_write_avx512(dst + off, len);
                else std::memset(dst + off, 1, len);
            },
            static_cast<double>(copyBytes), writes);
        g_sink = static_cast<float>(dst[copyBytes / 2]);
        r.memcpyGBps = *std::max_element(plain.begin(), plain.end());
        r.streamGBps = streamed.empty() ? 0 : *std::max_element(streamed.begin(), streamed.end());
        r.readGBps = *std::max_element(reads.begin(), reads.end());
        r.writeGBps = *std::max_element(writes.begin(), writes.end());
        const auto &best = r.streamGBps > r.memcpyGBps ? streamed : plain;
        r.copyGBps = std::max(r.memcpyGBps, r.streamGBps);
        r.copyGBpsMedian = median_of(best);
    }

    // ---- FMA peak
    __builtin_cpu_init();
    float (*kernel)(long) = nullptr;
    double lanes = 0;
    if (__builtin_cpu_supports("avx512f")) {
        kernel = fma_chains_avx512;
        lanes = 16;
        r.fmaIsa = "avx512f";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        kernel = fma_chains_avx2;
        lanes = 8;
        r.fmaIsa = "avx2+fma";
    } else {
        r.fmaIsa = "none";
    }
    if (kernel) {
        // calibrate the iteration count on one thread so that a repetition lasts fmaSecondsPerRep
        long iters = 1 << 16;
        for (;;) {
            const auto t0 = Clock::now();
            g_sink = kernel(iters);
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            if (s > 0.01 || iters > (1L << 34)) {
                iters = std::max(1L << 16, static_cast<long>(static_cast<double>(iters) * fmaSecondsPerRep / s));
                break;
            }
            iters *= 4;
        }
        std::vector<float> sinks(static_cast<size_t>(n));
        std::vector<double> gflops;
        for (int i = 0; i < r.copyReps; ++i) {
            const double s = team.run([&](int t) { sinks[static_cast<size_t>(t)] = kernel(iters); });
            gflops.push_back(12.0 * lanes * 2.0 * static_cast<double>(iters) * n / s * 1e-9);
        }
        for (float v : sinks) g_sink = v;
        r.fmaGFlops = *std::max_element(gflops.begin(), gflops.end());
        r.fmaGFlopsMedian = median_of(gflops);
    }
    r.measured = true;
    return r;
}

}  // namespace bench
