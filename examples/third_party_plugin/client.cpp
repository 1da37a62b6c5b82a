// Calls the third-party operator through its generated aclnn entry point, on a strided view.
#include <cstdio>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_add.h"

int main() {
    if (aclInit(nullptr) != ACL_SUCCESS) return 2;
    float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {10, 20, 30}, out[3] = {0, 0, 0};
    const int64_t dims[1] = {3}, step2[1] = {2}, step1[1] = {1}, six[1] = {6};
    aclTensor *self = aclCreateTensor(dims, 1, ACL_FLOAT, step2, 0, ACL_FORMAT_ND, six, 1, x);  // x[0], x[2], x[4]
    aclTensor *other = aclCreateTensor(dims, 1, ACL_FLOAT, step1, 0, ACL_FORMAT_ND, dims, 1, y);
    aclTensor *o = aclCreateTensor(dims, 1, ACL_FLOAT, step1, 0, ACL_FORMAT_ND, dims, 1, out);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    aclnnStatus st = aclnnScaledAddGetWorkspaceSize(self, other, 0.5f, o, &ws, &exec);
    if (st != 0) {
        std::printf("aclnnScaledAddGetWorkspaceSize failed %d: %s\n", st, aclGetRecentErrMsg());
        return 1;
    }
    void *w = nullptr;
    if (ws) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    st = aclnnScaledAdd(w, ws, exec, nullptr);
    const bool ok = st == 0 && out[0] == 10.5f && out[1] == 21.5f && out[2] == 32.5f;
    std::printf("ScaledAdd -> %g %g %g (workspace %llu B): %s\n", out[0], out[1], out[2],
                static_cast<unsigned long long>(ws), ok ? "PASSED" : "FAILED");
    if (w) aclrtFree(w);
    aclDestroyTensor(self);
    aclDestroyTensor(other);
    aclDestroyTensor(o);
    aclFinalize();
    return ok ? 0 : 1;
}
