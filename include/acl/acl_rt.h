/* aclnn-cpu: the runtime subset of CANN's acl/acl_rt.h. "Device" memory is host memory. */
#ifndef ACL_ACL_RT_H_
#define ACL_ACL_RT_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event flags (aclrtCreateEventWithFlag, aclrtCreateEventExWithFlag). */
#define ACL_EVENT_SYNC 0x00000001u                    /* usable by aclrtStreamWaitEvent, aclrtResetEvent */
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002u
#define ACL_EVENT_TIME_LINE 0x00000008u               /* records a timestamp (aclrtEventElapsedTime) */
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010u
#define ACL_EVENT_EXTERNAL 0x00000020u                /* alone; waitable and resettable like ACL_EVENT_SYNC */
#define ACL_EVENT_IPC 0x00000040u                     /* waitable and resettable like ACL_EVENT_SYNC */

/* Stream flags (aclrtCreateStreamWithConfig). */
#define ACL_STREAM_FAST_LAUNCH 0x00000001u
#define ACL_STREAM_FAST_SYNC 0x00000002u
#define ACL_STREAM_PERSISTENT 0x00000004u
#define ACL_STREAM_HUGE 0x00000008u
#define ACL_STREAM_CPU_SCHEDULE 0x00000010u
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020u

typedef enum aclrtEventStatus {
    ACL_EVENT_STATUS_COMPLETE = 0,
    ACL_EVENT_STATUS_NOT_READY = 1,
    ACL_EVENT_STATUS_RESERVED = 2
} aclrtEventStatus;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

typedef enum aclrtEventWaitStatus {
    ACL_EVENT_WAIT_STATUS_COMPLETE = 0,
    ACL_EVENT_WAIT_STATUS_NOT_READY = 1,
    ACL_EVENT_WAIT_STATUS_RESERVED = 0xffff
} aclrtEventWaitStatus;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4, /* the direction follows from the addresses */
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* A page policy (0..7), optionally ORed with one memory type bit. The _P2P policies allocate as
 * their plain counterparts (one device: there is no peer); the HUGE1G ones as HUGE_ONLY (the host's
 * 2 MB transparent huge pages); the memory type bits change nothing (one kind of memory, as CANN
 * says of hardware without a choice). ACL_MEM_ACCESS_USER_SPACE_READONLY is not supported here. */
typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum aclrtRunMode { ACL_DEVICE = 0, ACL_HOST = 1 } aclrtRunMode;

/* Memory kinds aclrtGetMemInfo reports on (CANN's values). Here every kind is the host's memory. */
typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11
} aclrtMemAttr;

typedef enum aclrtCallbackBlockType { ACL_CALLBACK_NO_BLOCK = 0, ACL_CALLBACK_BLOCK = 1 } aclrtCallbackBlockType;
typedef void (*aclrtCallback)(void *userData);
typedef void (*aclrtHostFunc)(void *args);

/* Where the program runs: always ACL_HOST here (as with an Ascend card in a host). */
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/* As aclrtResetDevice: nothing here counts how often the device was set. */
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
ACL_FUNC_VISIBILITY const char *aclrtGetSocName(void);

/* Contexts: aclrtSetDevice makes the device's default context current on the thread;
 * aclrtCreateContext makes a new one and makes it current. */
ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);
/* System options, of the thread's current context (Ctx) or of the process: ACL_OPT_DETERMINISTIC
 * takes 0..3, the others 0 or 1 (else ACL_ERROR_RT_PARAM_INVALID); reading an option never set is
 * ACL_ERROR_RT_SYSPARAMOPT_NOT_SET. The operators here are deterministic whatever the option says:
 * it is kept so that a program reads back what it set. */
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value);

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
/* priority 0 (highest) .. 7; flag: ACL_STREAM_* bits (others: ACL_ERROR_RT_PARAM_INVALID), which
 * change nothing on a synchronous stream. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/* As aclrtDestroyStream, which already drops the host callbacks still pending on the stream. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
/* timeout in ms, -1: no limit. Work is done on submission, so a live stream returns at once. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);

/* Events. Recording one is work on the stream (after its blocking host callbacks), done at once:
 * a recorded event is complete, and its timestamp is the host's steady clock at that moment.
 * CANN's rules on which kind of event each call accepts are enforced, as its runtime does:
 *   aclrtCreateEvent             - timestamped, waitable, resettable.
 *   aclrtCreateEventWithFlag     - what flag says: ACL_EVENT_SYNC to wait, reset or query the wait
 *                                  status, ACL_EVENT_TIME_LINE for aclrtEventElapsedTime. A flag of 0
 *                                  or unknown bits: ACL_ERROR_RT_PARAM_INVALID; a call the event does
 *                                  not take: ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 *   aclrtCreateEventExWithFlag   - as WithFlag, but never resettable nor queried by aclrtQueryEvent or
 *                                  aclrtQueryEventWaitStatus; reads COMPLETE before its first record. */
ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
/* Back to not recorded. */
ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_DEPRECATED_MESSAGE("aclrtQueryEvent is deprecated, use aclrtQueryEventStatus instead")
ACL_FUNC_VISIBILITY aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status);
/* Milliseconds from startEvent's record to endEvent's. Both must be recorded
 * (ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID), endEvent not before startEvent
 * (ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL). */
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
/* As aclrtMalloc (whose blocks are 64-byte aligned, so 32-byte aligned too). */
ACL_FUNC_VISIBILITY aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
/* As aclrtMalloc: host memory needs no cache maintenance, so aclrtMemFlush / aclrtMemInvalidate
 * only check their arguments. */
ACL_FUNC_VISIBILITY aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtMemFlush(void *devPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtMemInvalidate(void *devPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
/* The host's physical memory: total, and what the kernel reports available (MemAvailable). */
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
/* height rows of width bytes, rows dpitch / spitch bytes apart. As in CANN: kind HOST_TO_DEVICE or
 * DEVICE_TO_HOST only, height at most 5242880; here also width <= dpitch and width <= spitch. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t height, aclrtMemcpyKind kind);
/* The stream forms: the copy or fill is done before they return (streams are synchronous). */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                                size_t height, aclrtMemcpyKind kind, aclrtStream stream);

/* Host callbacks on a stream. threadId is the pthread_t of the thread that will call
   aclrtProcessReport; it runs the stream's callbacks in launch order. Work submitted to the stream
   after an ACL_CALLBACK_BLOCK callback waits for it, and synchronizing the stream or the device waits
   for all of them. aclrtUnSubscribeReport runs any callback still pending on the calling thread. */
ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                                 aclrtStream stream);
/* timeout: -1 (no limit) or > 0 ms. */
ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout);
/* A host function in stream order, with no subscription: it runs (on the calling thread) once the
   stream's blocking callbacks have, and the call returns after it. */
ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);

/* Kernels here never wait on device events, so these timeouts are accepted and have nothing to bound. */
ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t timeout);

#ifdef __cplusplus
}
#endif
#endif /* ACL_ACL_RT_H_ */
