/* A C (not C++) client of the public headers: they must compile as C and link with C linkage
 * (api.md: every public function has C linkage). Runs a 2x2 / stride 2 AvgPool2dBackward of a
 * (1, 1, 4, 4) input, timed by two events as CANN's samples time operators, with gradOutput written
 * through FLOAT16 conversions; returns 0 on success or the line number of the first failing step. */
#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"

int c_client_avgpool2d_backward(float grad_input[16]) {
    float go[4] = {4.0f, 8.0f, 12.0f, 16.0f};
    float self[16];
    const int64_t go_dims[4] = {1, 1, 2, 2}, go_strides[4] = {4, 4, 2, 1}, go_storage[1] = {4};
    const int64_t in_dims[4] = {1, 1, 4, 4}, in_strides[4] = {16, 16, 4, 1}, in_storage[1] = {16};
    const int64_t k[2] = {2, 2}, p[2] = {0, 0};
    uint64_t ws = 0;
    aclOpExecutor *exec = NULL;
    aclrtStream stream = NULL;
    aclrtEvent start = NULL, end = NULL;
    float ms = -1.0f;
    int i, rc = 0;
    for (i = 0; i < 16; ++i) self[i] = 1.0f;
    for (i = 0; i < 4; ++i) go[i] = aclFloat16ToFloat(aclFloatToFloat16(go[i]));  /* exact in FLOAT16 */
    if (aclrtSetDevice(0) != ACL_SUCCESS) return __LINE__;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return __LINE__;
    if (aclrtCreateEvent(&start) != ACL_SUCCESS || aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE) != ACL_SUCCESS)
        return __LINE__;
    {
        aclTensor *tGo = aclCreateTensor(go_dims, 4, ACL_FLOAT, go_strides, 0, ACL_FORMAT_NCHW, go_storage, 1, go);
        aclTensor *tSelf = aclCreateTensor(in_dims, 4, ACL_FLOAT, in_strides, 0, ACL_FORMAT_NCHW, in_storage, 1, self);
        aclTensor *tGi = aclCreateTensor(in_dims, 4, ACL_FLOAT, in_strides, 0, ACL_FORMAT_NCHW, in_storage, 1, grad_input);
        aclIntArray *kernel = aclCreateIntArray(k, 2);
        aclIntArray *padding = aclCreateIntArray(p, 2);
        if (!tGo || !tSelf || !tGi || !kernel || !padding) rc = __LINE__;
        if (!rc && aclnnAvgPool2dBackwardGetWorkspaceSize(tGo, tSelf, kernel, NULL, padding, false, true, 0, 0, tGi, &ws,
                                                          &exec) != ACLNN_SUCCESS)
            rc = __LINE__;
        if (!rc && ws != 0) rc = __LINE__;
        if (!rc && aclrtRecordEvent(start, stream) != ACL_SUCCESS) rc = __LINE__;
        if (!rc && aclnnAvgPool2dBackward(NULL, 0, exec, stream) != ACLNN_SUCCESS) rc = __LINE__;
        if (!rc && aclrtRecordEvent(end, stream) != ACL_SUCCESS) rc = __LINE__;
        if (!rc && aclrtSynchronizeStream(stream) != ACL_SUCCESS) rc = __LINE__;
        if (!rc && (aclrtEventElapsedTime(&ms, start, end) != ACL_SUCCESS || ms < 0.0f)) rc = __LINE__;
        aclDestroyTensor(tGo);
        aclDestroyTensor(tSelf);
        aclDestroyTensor(tGi);
        aclDestroyIntArray(kernel);
        aclDestroyIntArray(padding);
    }
    aclrtDestroyEvent(start);
    aclrtDestroyEvent(end);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    return rc;
}
