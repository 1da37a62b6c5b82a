// aclnn-cpu-bench: the machine the run is on (time, CPU model, load), for the header and the JSON.
#ifndef ACLNN_CPU_BENCH_HOST_HPP_
#define ACLNN_CPU_BENCH_HOST_HPP_

#include <string>

namespace bench {

std::string utc_now();  // 2026-11-21T20:02:05Z
std::string cpu_model();
// "1.23 0.98 0.50": other work on a shared machine shows here; read it next to the results
std::string load_average();

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_HOST_HPP_
