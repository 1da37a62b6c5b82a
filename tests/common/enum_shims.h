/* See enum_shims.c. */
#ifndef ACLNN_CPU_TESTS_COMMON_ENUM_SHIMS_H_
#define ACLNN_CPU_TESTS_COMMON_ENUM_SHIMS_H_

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

aclError shim_aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind);
aclError shim_aclrtMalloc(void **devPtr, size_t size, int policy);
aclError shim_aclrtGetMemInfo(int attr, size_t *free, size_t *total);
aclTensor *shim_aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType, const int64_t *stride,
                                int64_t offset, int format, const int64_t *storageDims, uint64_t storageDimsNum,
                                void *tensorData);
aclnnStatus shim_aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum, int dataType,
                              const int64_t *stride, int64_t offset, int format, const int64_t *storageDims,
                              uint64_t storageDimsNum, void *tensorData);
aclError shim_aclrtLaunchCallback(aclrtCallback fn, void *userData, int blockType, aclrtStream stream);
aclScalar *shim_aclCreateScalar(void *value, int dataType);
aclError shim_aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            int kind);
aclError shim_aclrtCtxSetSysParamOpt(int opt, int64_t value);
aclError shim_aclrtCtxGetSysParamOpt(int opt, int64_t *value);

#ifdef __cplusplus
}
#endif
#endif
