// aclnn-cpu-bench: the machine limits measured in this run (performance.md, "roofline" line).
#ifndef ACLNN_CPU_BENCH_ROOFLINE_HPP_
#define ACLNN_CPU_BENCH_ROOFLINE_HPP_

#include <cstddef>
#include <memory>
#include <string>

namespace bench {

struct Roofline {
    bool measured = false;
    int threads = 0;
    // A copy of `copyBytes` split between the threads, buffers warm; bytes counted read + write.
    // The limit is the faster of glibc's memcpy and a non-temporal-store copy (AVX-512).
    size_t copyBytes = 0;
    int copyReps = 0;
    double copyGBps = 0;        // best repetition of the faster copy: the limit rows are measured against
    double copyGBpsMedian = 0;
    double memcpyGBps = 0;      // best repetition of each copy
    double streamGBps = 0;      // 0 without AVX-512
    // The same buffers read only (summed) and written only (non-temporal with AVX-512, else
    // memset), best repetition: the traffic limit of a row that reads and writes unequal amounts.
    double readGBps = 0;
    double writeGBps = 0;
    // 12 independent FMA chains per thread (512-bit with AVX-512, else 256-bit AVX2).
    std::string fmaIsa;         // "avx512f", "avx2+fma" or "none"
    double fmaGFlops = 0;       // best repetition, all threads
    double fmaGFlopsMedian = 0;
};

Roofline measure_roofline(int threads, size_t copyBytes, int reps, double fmaSecondsPerRep);

// The copy bandwidth now: the roofline's faster copy (non-temporal with AVX-512, else memcpy) of
// `bytes` split between the threads, best of `reps` passes, GB/s read + write. Measured next to
// each byte row (the %near column): this host's memory speed changes twofold from second to
// second, so a limit measured once, minutes earlier, says little about a row timed now.
class CopyProbe {
public:
    CopyProbe(int threads, size_t bytes);
    ~CopyProbe();
    CopyProbe(const CopyProbe &) = delete;
    CopyProbe &operator=(const CopyProbe &) = delete;
    double gbps(int reps);  // 0 when the buffers could not be allocated

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_ROOFLINE_HPP_
