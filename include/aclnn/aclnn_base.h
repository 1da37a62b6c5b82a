/* aclnn-cpu: CANN-compatible aclnn/aclnn_base.h: status codes, the tensor API, aclnn initialization. */
#ifndef ACLNN_ACLNN_BASE_H_
#define ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The aclnn-only alternative to aclInit (either, or both, may be called). configPath names CANN's
 * JSON debug configuration, which has no effect on the CPU; NULL is the usual value. Starts the
 * runtime from the environment (ACLNN_CPU_PRODUCT) unless aclInit already configured it. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
/* Releases what aclnnInit started; an aclInit in force stays until aclFinalize. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_ACLNN_BASE_H_ */
