// aclnnInit / aclnnFinalize (aclnn/aclnn_base.h): the aclnn-only initialization CANN offers beside
// aclInit. Both may be used; neither fails because of the other.
#include <filesystem>
#include <string>

#include "../runtime/context.hpp"
#include "../runtime/log.hpp"
#include "aclnn/aclnn_base.h"

extern "C" {

// configPath names CANN's JSON debug configuration (op_debug_config.enable_debug_kernel, a device
// memory checker): nothing here reads it, and as in CANN a missing file is not an error. The product
// comes from aclInit's YAML file or the environment (products.md); aclnnInit starts the runtime from
// the environment unless aclInit already did, so a bad ACLNN_CPU_PRODUCT is reported here, first.
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath) {
    if (configPath && *configPath) {
        std::error_code ec;
        aclcpu::log(aclcpu::LogLevel::Info, std::string("aclnnInit: ") + configPath +
                                                (std::filesystem::is_regular_file(configPath, ec) ? " is CANN's debug configuration; not used on the CPU"
                                                                                                  : " does not exist; ignored, as in CANN"));
    }
    const auto state = aclcpu::runtime_state();
    if (!state->startup_error.empty())
        return aclcpu::set_error(ACLNN_ERR_INNER, "aclnnInit: the runtime could not start: " + state->startup_error);
    return ACLNN_SUCCESS;
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void) {
    aclcpu::release_default_state();
    return ACLNN_SUCCESS;
}

}  // extern "C"
