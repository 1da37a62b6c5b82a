// aclrtMalloc / aclrtFree as the test executable's code calls them (the bench cases' tensors and
// workspaces): the runtime's own, called inside an alloc_counter::DeviceScope, so that the counter
// keeps the user's buffers apart from the heap the library holds (alloc_counter.hpp). The
// executable's definitions take the calls of its own code; the runtime's are found next in the
// lookup order (RTLD_NEXT).
#include <dlfcn.h>

#include <cstdlib>
#include <cstdio>

#include "acl/acl_rt.h"
#include "alloc_counter.hpp"

namespace {

template <class F>
F next_definition(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        std::fprintf(stderr, "device_buffers.cpp: no %s after the test executable's: %s\n", name, dlerror());
        std::abort();
    }
    return reinterpret_cast<F>(f);
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    static const auto real = next_definition<aclError (*)(void **, size_t, aclrtMemMallocPolicy)>("aclrtMalloc");
    alloc_counter::DeviceScope device(size);
    return real(devPtr, size, policy);
}

aclError aclrtFree(void *devPtr) {
    static const auto real = next_definition<aclError (*)(void *)>("aclrtFree");
    alloc_counter::DeviceScope device(0);
    return real(devPtr);
}

}  // extern "C"
