# Source this file (like CANN's set_env.sh) to use this aclnn-cpu tree:
#   source install/set_env.sh
_aclnn_cpu_home="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export ACLNN_CPU_HOME="${_aclnn_cpu_home}"
# CANN's set_env.sh names the toolkit with these two; builds and scripts written for CANN read them.
export ASCEND_TOOLKIT_HOME="${_aclnn_cpu_home}"
export ASCEND_HOME_PATH="${_aclnn_cpu_home}"
export LD_LIBRARY_PATH="${_aclnn_cpu_home}/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export ACLNN_CPU_PLUGIN_PATH="${_aclnn_cpu_home}/lib/aclnn-cpu/plugins${ACLNN_CPU_PLUGIN_PATH:+:${ACLNN_CPU_PLUGIN_PATH}}"
export PATH="${_aclnn_cpu_home}/bin${PATH:+:${PATH}}"
export CMAKE_PREFIX_PATH="${_aclnn_cpu_home}${CMAKE_PREFIX_PATH:+:${CMAKE_PREFIX_PATH}}"
export PKG_CONFIG_PATH="${_aclnn_cpu_home}/lib/pkgconfig${PKG_CONFIG_PATH:+:${PKG_CONFIG_PATH}}"
unset _aclnn_cpu_home
