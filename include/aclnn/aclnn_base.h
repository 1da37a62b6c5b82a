/* aclnn-cpu: CANN-compatible aclnn/aclnn_base.h: status codes and the tensor API. */
#ifndef ACLNN_ACLNN_BASE_H_
#define ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#endif /* ACLNN_ACLNN_BASE_H_ */
