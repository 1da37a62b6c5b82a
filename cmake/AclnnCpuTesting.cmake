# aclnn_cpu_add_test(<name> SOURCES <src...> [LIBRARIES <libs...>])
# A GoogleTest executable linked like a client (ascendcl, nnopbase, opapi), registered with CTest.
find_package(GTest REQUIRED)
include(GoogleTest)

function(aclnn_cpu_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  add_dependencies(${name} aclnn_cpu_headers aclnn_cpu_plugins)
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main opapi nnopbase ascendcl Threads::Threads ${T_LIBRARIES})
  target_include_directories(${name} PRIVATE ${ACLNN_CPU_STAGE_DIR}/include ${PROJECT_SOURCE_DIR}/include
    ${PROJECT_SOURCE_DIR}/tests/support)  # acltest.hpp: what every plugin's tests share
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ACLNN_CPU_STAGE_DIR}/tests)
  gtest_discover_tests(${name} TEST_PREFIX "${name}." DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "ACLNN_CPU_PRODUCT=;ACLNN_CPU_PLUGIN_PATH=;ASCEND_GLOBAL_LOG_LEVEL=")
endfunction()
