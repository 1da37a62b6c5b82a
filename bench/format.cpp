// aclnn-cpu-bench: small text helpers and the number / JSON / CSV formatting of the report.
#include "format.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace bench {

std::string lower(std::string s) {
    for (char &ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

std::string one_line(const std::string &s) {
    std::string r;
    for (char ch : s) r += (ch == '\t' || ch == '\n' || ch == '\r') ? ' ' : ch;
    return r;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : s) {
        if (ch == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    out.push_back(cur);
    return out;
}

std::vector<double> parse_times(const std::string &s) {
    std::vector<double> v;
    if (s.empty() || s == "-") return v;
    for (const std::string &t : split(s, ',')) v.push_back(std::strtod(t.c_str(), nullptr));
    return v;
}

double min_of(const std::vector<double> &v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

double median_of(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(double v, int prec) {
    if (!std::isfinite(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

std::string fmt_ms(double ms) {
    if (!std::isfinite(ms)) return "-";
    return fmt(ms, ms < 1 ? 4 : ms < 10 ? 3 : ms < 100 ? 2 : 1);
}

std::string fmt_bytes(uint64_t b) {
    if (b == 0) return "0";
    const char *units[] = {"B", "K", "M", "G"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        ++u;
    }
    return fmt(v, u == 0 ? 0 : 1) + units[u];
}

std::string threads_str(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

std::string json_str(const std::string &s) {
    std::string r = "\"";
    for (unsigned char ch : s) {
        switch (ch) {
        case '"': r += "\\\""; break;
        case '\\': r += "\\\\"; break;
        case '\n': r += "\\n"; break;
        case '\r': r += "\\r"; break;
        case '\t': r += "\\t"; break;
        default:
            if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                r += buf;
            } else {
                r += static_cast<char>(ch);
            }
        }
    }
    return r + "\"";
}

std::string json_num(double v, int prec) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", prec + 3, v);
    return buf;
}

std::string json_times(const std::vector<double> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += json_num(v[i]);
    }
    return s + "]";
}

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string r = "\"";
    for (char ch : s) r += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return r + "\"";
}

}  // namespace bench
