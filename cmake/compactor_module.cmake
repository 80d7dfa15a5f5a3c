# The functions cmake/modules.cmake is written in (see its header for the
# arguments). A module is an OBJECT library, compactor_<name>_objects, built
# with the usage requirements of the modules it uses; the libraries
# (compactor, compactor_eval, compactor_test_support) are made of their
# modules' objects by compactor_library().

# Third-party targets that are only headers: needed to build, never by a
# consumer of the installed library.
set(COMPACTOR_HEADER_ONLY_DEPENDS nlohmann_json::nlohmann_json compactor_curl_headers)

function(compactor_module)
  cmake_parse_arguments(M "" "NAME;DIR;LIBRARY" "HEADERS;USES;EXPORTS;DEPENDS;PUBLIC_DEPENDS"
                        ${ARGN})
  if(NOT M_DIR)
    set(M_DIR src/${M_NAME})
  endif()
  if(NOT M_LIBRARY)
    set(M_LIBRARY compactor)
  endif()
  if(M_LIBRARY STREQUAL "compactor_test_support" AND NOT COMPACTOR_BUILD_TEST_SUPPORT)
    return()
  endif()
  set(target compactor_${M_NAME}_objects)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${M_DIR}/*.cc)
  add_library(${target} OBJECT ${sources})
  # Includes are spelled from the source root ("util/utf8.h") or the test
  # root ("support/oracle.h"); scripts/check_layers.py decides which of them
  # a module may use.
  get_filename_component(root ${PROJECT_SOURCE_DIR}/${M_DIR} DIRECTORY)
  target_include_directories(${target}
    PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include ${root}
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  foreach(used IN LISTS M_USES)
    if(NOT TARGET compactor_${used}_objects)
      message(FATAL_ERROR "module ${M_NAME} uses ${used}, which is not declared above it")
    endif()
    target_link_libraries(${target} PUBLIC compactor_${used}_objects)
  endforeach()
  target_link_libraries(${target} PRIVATE ${M_DEPENDS} PUBLIC ${M_PUBLIC_DEPENDS})
  if(BUILD_SHARED_LIBS)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  set_property(GLOBAL APPEND PROPERTY COMPACTOR_${M_LIBRARY}_MODULES ${M_NAME})
  set_property(GLOBAL APPEND PROPERTY COMPACTOR_${M_LIBRARY}_DEPENDS ${M_DEPENDS}
                                                                     ${M_PUBLIC_DEPENDS})
endfunction()

# Programs build their own targets; the table only records their rules.
function(compactor_program)
endfunction()

# Makes library `name` (STATIC, SHARED or empty for BUILD_SHARED_LIBS) of the
# objects of every module declared with LIBRARY name, linked to the
# third-party libraries they need and to `uses` (other libraries).
function(compactor_library name type)
  cmake_parse_arguments(L "" "" "USES" ${ARGN})
  get_property(modules GLOBAL PROPERTY COMPACTOR_${name}_MODULES)
  get_property(depends GLOBAL PROPERTY COMPACTOR_${name}_DEPENDS)
  set(objects)
  foreach(m IN LISTS modules)
    list(APPEND objects $<TARGET_OBJECTS:compactor_${m}_objects>)
  endforeach()
  add_library(${name} ${type} ${objects})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${name} PUBLIC ${L_USES})
  list(REMOVE_DUPLICATES depends)
  # Header-only ones were needed by the objects alone.
  list(REMOVE_ITEM depends ${COMPACTOR_HEADER_ONLY_DEPENDS})
  target_link_libraries(${name} PRIVATE ${depends})
endfunction()
