# aclnn_cpu_add_plugin(<name> MANIFEST <manifest.yaml> SOURCES <src...> [LIBRARIES <libs...>]
#                      [OPAPI_LIBRARY <lib>] [FIXTURE <dir>])
#
# Builds an operator plugin: the library named by the manifest's `library:` key, compiled with
# hidden visibility against the plugin SDK, placed with its manifest in <plugins>/<name>/; and the
# public aclnnop/ header(s) and aclnn entry points generated from the manifest.
# In the aclnn-cpu tree the entry points join libopapi. Elsewhere (a third-party plugin built against
# an installed aclnn-cpu) they form OPAPI_LIBRARY (default <name>_opapi), linked with nnopbase, and the
# generated headers land in ${CMAKE_CURRENT_BINARY_DIR}/include.
# FIXTURE <dir> (tests only): build it like a third-party plugin into <dir>/<name>, not installed.
function(aclnn_cpu_add_plugin name)
  cmake_parse_arguments(P "" "MANIFEST;OPAPI_LIBRARY;FIXTURE" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT P_MANIFEST OR NOT P_SOURCES)
    message(FATAL_ERROR "aclnn_cpu_add_plugin(${name}): MANIFEST and SOURCES are required")
  endif()
  get_filename_component(manifest ${P_MANIFEST} ABSOLUTE)
  # The manifest parser allows letters, digits and '_' (optionally quoted); anything else on the
  # line but a comment is an error here too, so the target is the library the core will look for.
  file(STRINGS ${manifest} lib_line REGEX "^library:")
  if(NOT lib_line)
    message(FATAL_ERROR "${manifest}: no 'library: <name>' line")
  endif()
  set(lib_value "[ \t]*[\"']?([A-Za-z0-9_]+)[\"']?[ \t]*(#.*)?$")
  if(NOT lib_line MATCHES "^library:${lib_value}")
    message(FATAL_ERROR "${manifest}: '${lib_line}': library must be letters, digits and '_'")
  endif()
  string(REGEX REPLACE "^library:${lib_value}" "\\1" lib "${lib_line}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${manifest})

  set(in_tree FALSE)
  if(P_FIXTURE)
    set(plugin_dir ${P_FIXTURE}/${name})
    set(include_dir ${CMAKE_CURRENT_BINARY_DIR}/include)
  elseif(DEFINED ACLNN_CPU_STAGE_DIR)  # in-tree
    set(in_tree TRUE)
    set(plugin_dir ${ACLNN_CPU_STAGE_DIR}/lib/aclnn-cpu/plugins/${name})
    set(include_dir ${ACLNN_CPU_STAGE_DIR}/include)
  else()
    set(plugin_dir ${CMAKE_CURRENT_BINARY_DIR}/plugins/${name})
    set(include_dir ${CMAKE_CURRENT_BINARY_DIR}/include)
  endif()

  add_library(${lib} MODULE ${P_SOURCES})
  set_target_properties(${lib} PROPERTIES
    PREFIX "lib" OUTPUT_NAME ${lib} LIBRARY_OUTPUT_DIRECTORY ${plugin_dir}
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${lib} PRIVATE aclnn_cpu::plugin_sdk TBB::tbb ${P_LIBRARIES})
  target_link_options(${lib} PRIVATE -Wl,--no-undefined)
  configure_file(${manifest} ${plugin_dir}/manifest.yaml COPYONLY)

  set(gen ${CMAKE_CURRENT_BINARY_DIR}/${name}_opapi.cpp)
  add_custom_command(OUTPUT ${gen}
    COMMAND $<TARGET_FILE:aclnn_cpu::codegen> --manifest ${manifest} --include-dir ${include_dir} --source ${gen}
    DEPENDS ${manifest} aclnn_cpu::codegen
    COMMENT "Generating aclnn entry points of plugin ${name}")

  add_custom_target(${name}_codegen DEPENDS ${gen})
  # The library target of plugin <name>, for targets that must be built after it (it is never linked).
  set_property(GLOBAL PROPERTY ACLNN_CPU_PLUGIN_LIBRARY_${name} ${lib})
  if(in_tree)
    set_property(GLOBAL APPEND PROPERTY ACLNN_CPU_OPAPI_SOURCES ${gen})
    set_property(GLOBAL APPEND PROPERTY ACLNN_CPU_CODEGEN_TARGETS ${name}_codegen)
    set_property(GLOBAL APPEND PROPERTY ACLNN_CPU_PLUGIN_TARGETS ${lib})
    install(TARGETS ${lib} LIBRARY DESTINATION lib/aclnn-cpu/plugins/${name})
    install(FILES ${manifest} DESTINATION lib/aclnn-cpu/plugins/${name} RENAME manifest.yaml)
  else()
    if(NOT P_OPAPI_LIBRARY)
      set(P_OPAPI_LIBRARY ${name}_opapi)
    endif()
    add_library(${P_OPAPI_LIBRARY} SHARED ${gen})
    add_dependencies(${P_OPAPI_LIBRARY} ${name}_codegen)
    target_link_libraries(${P_OPAPI_LIBRARY} PUBLIC aclnn_cpu::nnopbase)
    target_include_directories(${P_OPAPI_LIBRARY} PUBLIC ${include_dir})
    set_target_properties(${P_OPAPI_LIBRARY} PROPERTIES CXX_VISIBILITY_PRESET hidden)
  endif()
endfunction()

# aclnn_cpu_add_plugin_kernels(<target> SOURCES <src...> [LIBRARIES <libs...>])
#
# A plugin's kernels as a static archive compiled as the plugin is (position independent, hidden
# visibility, against the plugin SDK and oneTBB). Name <target> in the plugin's LIBRARIES and in its
# white-box tests' and the kernels compile once for both (the tests had compiled them again: 12 % of
# the build's compile time).
function(aclnn_cpu_add_plugin_kernels target)
  cmake_parse_arguments(K "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT K_SOURCES)
    message(FATAL_ERROR "aclnn_cpu_add_plugin_kernels(${target}): SOURCES is required")
  endif()
  add_library(${target} STATIC ${K_SOURCES})
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PUBLIC aclnn_cpu::plugin_sdk TBB::tbb ${K_LIBRARIES})
endfunction()
