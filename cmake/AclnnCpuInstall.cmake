# The installed tree (README's first command installs into <repo>/install): relocatable, with a
# CMake package (find_package(aclnn_cpu CONFIG)), a pkg-config file and set_env.sh.
include(CMakePackageConfigHelpers)

install(TARGETS ascendcl nnopbase opapi aclnn_cpu_plugin_sdk aclnn-cpu-codegen
  EXPORT aclnn_cpuTargets
  LIBRARY DESTINATION lib
  RUNTIME DESTINATION bin
  INCLUDES DESTINATION include include/aclnnop)  # (CANN's samples build with both)
install(DIRECTORY include/acl include/aclnn include/aclnn_cpu DESTINATION include)
install(DIRECTORY ${ACLNN_CPU_STAGE_DIR}/include/aclnnop DESTINATION include)
install(DIRECTORY configs/products DESTINATION share/aclnn-cpu)
install(FILES configs/runtime.example.yaml DESTINATION share/aclnn-cpu)

set(cmake_dir lib/cmake/aclnn_cpu)
install(EXPORT aclnn_cpuTargets NAMESPACE aclnn_cpu:: DESTINATION ${cmake_dir})
configure_package_config_file(cmake/aclnn_cpuConfig.cmake.in ${CMAKE_BINARY_DIR}/aclnn_cpuConfig.cmake
  INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/aclnn_cpuConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/aclnn_cpuConfig.cmake ${CMAKE_BINARY_DIR}/aclnn_cpuConfigVersion.cmake
  cmake/AclnnCpuPlugin.cmake DESTINATION ${cmake_dir})

configure_file(cmake/aclnn-cpu.pc.in ${CMAKE_BINARY_DIR}/aclnn-cpu.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/aclnn-cpu.pc DESTINATION lib/pkgconfig)
install(PROGRAMS tools/set_env.sh DESTINATION .)

# CANN's toolkit layout, so that builds written for a CANN install work against this tree unedited
# (README, "Builds written for a CANN install"): the libraries under lib64/ as well as lib/, the
# runtime also as libacl_rt.so and the operators also as libopapi_<domain>.so, the names newer CANN
# releases link. Relative symlinks keep the tree relocatable; a symlinked library keeps its soname,
# so a program linked with -lopapi_nn loads libopapi.so.
install(CODE [[
  set(root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
  file(CREATE_LINK lib "${root}/lib64" SYMBOLIC)
  file(CREATE_LINK libascendcl.so "${root}/lib/libacl_rt.so" SYMBOLIC)
  foreach(domain IN ITEMS nn math cv transformer)
    file(CREATE_LINK libopapi.so "${root}/lib/libopapi_${domain}.so" SYMBOLIC)
  endforeach()
]])
