# Fails unless every library given in LIBS contains prefetch instructions: GCC 12 compiled the mask
# backward's __builtin_prefetch loop away without a word (found in session 21), so the plugins
# prefetch through aclnn_cpu/prefetch.hpp's inline asm, and this checks that it reaches the binary.
# cmake -DOBJDUMP=<objdump> -DLIBS=<lib;lib...> -P check_prefetch.cmake
foreach(lib IN LISTS LIBS)
  execute_process(COMMAND ${OBJDUMP} -d ${lib} OUTPUT_VARIABLE dis RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "objdump -d ${lib} failed (${rc})")
  endif()
  string(REGEX MATCHALL "prefetcht[01]" found "${dis}")
  list(LENGTH found n)
  if(n EQUAL 0)
    message(FATAL_ERROR "${lib}: no prefetch instruction in the binary (expected the kernels' prefetch_lines)")
  endif()
  message(STATUS "${lib}: ${n} prefetch instructions")
endforeach()
