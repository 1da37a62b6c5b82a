/* C shims for calls with enum values outside the enumerators (a C client may pass any int; in C++ an
 * out-of-range enum value is undefined behaviour, which UBSan rightly flags in the test itself). */
#include "enum_shims.h"

aclError shim_aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    return aclrtMemcpy(dst, destMax, src, count, (aclrtMemcpyKind)kind);
}

aclError shim_aclrtMalloc(void **devPtr, size_t size, int policy) {
    return aclrtMalloc(devPtr, size, (aclrtMemMallocPolicy)policy);
}

aclError shim_aclrtGetMemInfo(int attr, size_t *free, size_t *total) {
    return aclrtGetMemInfo((aclrtMemAttr)attr, free, total);
}

aclTensor *shim_aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType, const int64_t *stride,
                                int64_t offset, int format, const int64_t *storageDims, uint64_t storageDimsNum,
                                void *tensorData) {
    return aclCreateTensor(viewDims, viewDimsNum, (aclDataType)dataType, stride, offset, (aclFormat)format, storageDims,
                           storageDimsNum, tensorData);
}

aclnnStatus shim_aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum, int dataType,
                              const int64_t *stride, int64_t offset, int format, const int64_t *storageDims,
                              uint64_t storageDimsNum, void *tensorData) {
    return aclInitTensor(tensor, viewDims, viewDimsNum, (aclDataType)dataType, stride, offset, (aclFormat)format,
                         storageDims, storageDimsNum, tensorData);
}

aclError shim_aclrtLaunchCallback(aclrtCallback fn, void *userData, int blockType, aclrtStream stream) {
    return aclrtLaunchCallback(fn, userData, (aclrtCallbackBlockType)blockType, stream);
}

aclScalar *shim_aclCreateScalar(void *value, int dataType) { return aclCreateScalar(value, (aclDataType)dataType); }

aclError shim_aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            int kind) {
    return aclrtMemcpy2d(dst, dpitch, src, spitch, width, height, (aclrtMemcpyKind)kind);
}

aclError shim_aclrtCtxSetSysParamOpt(int opt, int64_t value) { return aclrtCtxSetSysParamOpt((aclSysParamOpt)opt, value); }

aclError shim_aclrtCtxGetSysParamOpt(int opt, int64_t *value) { return aclrtCtxGetSysParamOpt((aclSysParamOpt)opt, value); }
