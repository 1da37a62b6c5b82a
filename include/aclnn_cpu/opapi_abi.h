/* aclnn-cpu: what generated aclnn entry points call. Each aclnnXxxGetWorkspaceSize packs its
 * arguments in manifest signature order and forwards them to the core; aclnnXxx forwards the run. */
#ifndef ACLNN_CPU_OPAPI_ABI_H_
#define ACLNN_CPU_OPAPI_ABI_H_

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclnnCpuCallArg {
    int32_t kind;    /* acp_arg_kind */
    const void *ptr; /* aclTensor / aclIntArray / aclBoolArray / aclFloatArray / aclScalar, may be NULL */
    int64_t i;       /* INT and BOOL values */
    double f;        /* FLOAT values */
} aclnnCpuCallArg;

ACL_FUNC_VISIBILITY aclnnStatus aclnnCpuPlan(const char *opName, const aclnnCpuCallArg *args, uint32_t nArgs,
                                             uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnCpuRun(const char *opName, void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif /* ACLNN_CPU_OPAPI_ABI_H_ */
