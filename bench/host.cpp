// aclnn-cpu-bench: the machine the run is on (time, CPU model, load), for the header and the JSON.
#include "host.hpp"

#include <ctime>
#include <fstream>

#include "format.hpp"

namespace bench {

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const size_t p = line.find(':');
            if (p != std::string::npos) return one_line(line.substr(p + 2));
        }
    return "unknown CPU";
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    if (!(f >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

}  // namespace bench
