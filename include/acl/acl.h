/* aclnn-cpu: CANN-compatible acl/acl.h. */
#ifndef ACL_ACL_H_
#define ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* configPath: a YAML file (product, plugin_paths, threads, log_level) or NULL for defaults. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/* The version of this library (aclnn-cpu), in CANN's A.B.C form. */
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

#ifdef __cplusplus
}
#endif
#endif /* ACL_ACL_H_ */
