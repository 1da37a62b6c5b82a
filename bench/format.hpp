// aclnn-cpu-bench: small text helpers and the number / JSON / CSV formatting of the report.
#ifndef ACLNN_CPU_BENCH_FORMAT_HPP_
#define ACLNN_CPU_BENCH_FORMAT_HPP_

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

std::string lower(std::string s);
std::string one_line(const std::string &s);  // tabs and line breaks become spaces
std::vector<std::string> split(const std::string &s, char sep);

// "t1,t2,..." (or "-" for none) as written by the child and the PyTorch peer
std::vector<double> parse_times(const std::string &s);
double min_of(const std::vector<double> &v);  // NAN when empty
double median_of(std::vector<double> v);     // NAN when empty

// Table cells; a non-finite value prints as "-".
std::string fmt(double v, int prec);
std::string fmt_ms(double ms);
std::string fmt_bytes(uint64_t b);  // 0, 512B, 24.5M, ...
std::string threads_str(int n);     // "1 thread", "2 threads"

std::string json_str(const std::string &s);          // quoted and escaped
std::string json_num(double v, int prec = 6);        // null when not finite
std::string json_times(const std::vector<double> &v);
std::string csv_field(const std::string &s);         // quoted when needed

}  // namespace bench

#endif  // ACLNN_CPU_BENCH_FORMAT_HPP_
