// aclnn-cpu-torch-diff: runs torch_diff case directories (case.hpp) through the library.
// Usage: aclnn-cpu-torch-diff CASEDIR...   Each gets result.txt as it completes, so after a crash the
// runner knows which case crashed (the first without one) and runs the rest again.
#include <cstdio>
#include <exception>

#include "case.hpp"

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CASEDIR...\n", argv[0]);
        return 2;
    }
    aclrtStream stream = nullptr;
    if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0 || aclrtCreateStream(&stream) != 0) {
        std::fprintf(stderr, "runtime start failed: %s\n", torch_diff::recent_error().c_str());
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; ++i) {
        try {
            torch_diff::Case c(argv[i]);
            std::string call;
            const int status = torch_diff::run_family(c, stream, &call);
            c.finish(status, call, status ? torch_diff::recent_error() : "");
        } catch (const std::exception &e) {
            std::fprintf(stderr, "%s\n", e.what());  // a malformed case: a harness bug, not a finding
            rc = 2;
        }
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return rc;
}
