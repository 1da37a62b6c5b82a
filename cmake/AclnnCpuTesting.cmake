# aclnn_cpu_add_test(<name> SOURCES <src...> [LIBRARIES <libs...>])
# A GoogleTest executable linked like a client (ascendcl, nnopbase, opapi), registered with CTest:
# each test on its own, or (ACLNN_CPU_SANITIZE) the executable as one test.
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
  # The tests' own code (references, fills, comparisons) at -O1, the library under test as built:
  # a test file compiles in 2/3 of the time -O3 takes and the suite runs about as long. Test files are
  # most of a clean build, and CI builds twice.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  if(ACLNN_CPU_SANITIZE AND NOT ACLNN_CPU_SANITIZE STREQUAL "thread")
    # The test executables' own code under AddressSanitizer only; the library under test (core,
    # plugins, their kernel archives, the fixture plugins) keeps UndefinedBehaviorSanitizer too.
    # UBSan's checks were a third of a test file's compile time (test_conv_executor.cpp 15.3 -> 10.5
    # s), test files were 60 % of the sanitized build's CPU time (1236 of 2088 s), and CI builds it
    # on every run.
    target_compile_options(${name} PRIVATE -fno-sanitize=undefined)
  endif()
  set(env "ACLNN_CPU_PRODUCT=;ACLNN_CPU_PLUGIN_PATH=;ASCEND_GLOBAL_LOG_LEVEL=")
  if(ACLNN_CPU_SANITIZE)
    # Sanitized: one process per executable, all its tests in it. An instrumented test process
    # spends 0.2-0.3 s starting, loading the plugins and checking for leaks at exit, so a process
    # per test made the sanitized suite 400 s of CI's time against ~80 s; the Release suite keeps a
    # process per test.
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  else()
    gtest_discover_tests(${name} TEST_PREFIX "${name}." DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
      PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()
