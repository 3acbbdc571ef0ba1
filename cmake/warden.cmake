# Helpers that keep the layer layout of src/ and tests/ in one place.

# GCC 12 reports false -Warray-bounds/-Wstringop-overflow on std::string at -O2 (GCC bug 105329), and a false
# -Wmismatched-new-delete on Asio's coroutine frames, whose class operator new is paired with a sized
# operator delete (GCC bug 109224); ASan's alloc-dealloc-mismatch check still covers real mismatches.
set(WARDEN_WARNINGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Wno-array-bounds -Wno-stringop-overflow
                    -Wno-mismatched-new-delete)

# hiredis's pkg-config flags define _FILE_OFFSET_BITS=64 for the targets that link it; GCC refuses a
# precompiled header built without that macro, so every target defines it (a no-op on 64-bit Linux).
add_compile_definitions(_FILE_OFFSET_BITS=64)

# Debug info is line tables only (-g1) unless WARDEN_FULL_DEBUG_INFO: enough for backtraces, gdb's `bt` and
# the sanitizers' reports with file and line, at about two thirds of -g's compile time on the Asio/Beast units
# and a third of its object size. The release package strips the binary anyway (scripts/make-deb.sh).
if(NOT WARDEN_FULL_DEBUG_INFO)
  add_compile_options($<$<CONFIG:RelWithDebInfo,Debug>:-g1>)
endif()

if(WARDEN_FUZZ)
  # The libraries get libFuzzer's coverage hooks; only the fuzz targets link its main (fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  list(APPEND WARDEN_WARNINGS -Wno-unknown-warning-option)
endif()

if(WARDEN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

set(WARDEN_LAYERS "")

# Precompiled headers, each built once by the first target of its group and reused by the others (one .gch
# instead of one per target): "io", Asio, Beast, Boost.JSON and spdlog for the I/O libraries; "io_tests", the
# same and GoogleTest for their tests; "tests", GoogleTest and the standard containers for the pure layers'
# tests (no Boost or fmt: their macros differ between those targets, and GCC refuses a header built with others).
set(WARDEN_PCH_io ${CMAKE_SOURCE_DIR}/src/net/pch.hpp)
set(WARDEN_PCH_io_tests ${CMAKE_SOURCE_DIR}/src/net/pch.hpp <gtest/gtest.h>)
set(WARDEN_PCH_tests <gtest/gtest.h> <algorithm> <map> <optional> <set> <string> <string_view> <vector>)
function(warden_precompiled_header target group)
  get_property(owner GLOBAL PROPERTY WARDEN_PCH_OWNER_${group})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${WARDEN_PCH_${group}})
    set_property(GLOBAL PROPERTY WARDEN_PCH_OWNER_${group} ${target})
  endif()
endfunction()

# warden_layer(NAME PURE|IO DEPS ...): a static library from src/NAME/**.cpp.
# Pure layers must not use sockets, threads or clocks; IO layers get a precompiled Boost header.
# Each layer's include root holds only its own folder (build/layer-include/NAME/NAME -> src/NAME), and a
# layer sees the roots of the layers it links: an include of a layer it does not reach fails to compile.
function(warden_layer name kind)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp)
  set(target warden_${name})
  set(root ${CMAKE_BINARY_DIR}/layer-include/${name})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${name} ${root}/${name} SYMBOLIC)
  if(srcs)
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC ${root})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    target_compile_options(${target} PRIVATE ${WARDEN_WARNINGS})
    target_compile_definitions(${target} PUBLIC BOOST_ASIO_NO_DEPRECATED)
    target_include_directories(${target} PUBLIC ${XXHASH_INCLUDE_DIR})
    if(kind STREQUAL "IO")
      warden_precompiled_header(${target} io)
    endif()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${root} ${XXHASH_INCLUDE_DIR})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  set(WARDEN_LAYERS ${WARDEN_LAYERS} ${name} PARENT_SCOPE)
  set(WARDEN_LAYER_KIND_${name} ${kind} PARENT_SCOPE)
  set(WARDEN_LAYER_DEPS_${name} ${ARG_DEPS} PARENT_SCOPE)
endfunction()

# warden_rooms(LAYER "ROOM DEP..." ...): the folders of src/LAYER/ ("rooms"), lowest first, each with the
# rooms it includes; "." is the layer's top level. Written to layers.txt as "room LAYER ROOM DEP..." lines,
# in order, for scripts/check-layering.py: a room includes only rooms it names, and names only rooms
# declared before it (no arrow runs back up).
function(warden_rooms layer)
  set(lines "${WARDEN_ROOM_LINES}")
  foreach(room ${ARGN})
    string(APPEND lines "room ${layer} ${room}\n")
  endforeach()
  set(WARDEN_ROOM_LINES "${lines}" PARENT_SCOPE)
endfunction()

# Writes the declared layer graph (the warden_* edges of each layer and of its tests) to
# ${CMAKE_BINARY_DIR}/layers.txt for scripts/check-layering.py, which checks src/ and tests/ against it.
function(warden_write_layer_graph)
  set(text "# Generated by cmake/warden.cmake from the warden_layer() declarations: layer NAME KIND DEPS...\n")
  foreach(name ${WARDEN_LAYERS})
    set(line "layer ${name} ${WARDEN_LAYER_KIND_${name}}")
    foreach(dep ${WARDEN_LAYER_DEPS_${name}})
      if(dep MATCHES "^warden_(.+)$")
        string(APPEND line " ${CMAKE_MATCH_1}")
      endif()
    endforeach()
    string(APPEND text "${line}\n")
    if(WARDEN_TEST_DEPS_${name})
      string(REPLACE "warden_" "" tdeps "${WARDEN_TEST_DEPS_${name}}")
      string(REPLACE ";" " " tdeps "${tdeps}")
      string(APPEND text "test_deps ${name} ${tdeps}\n")
    endif()
  endforeach()
  string(APPEND text "${WARDEN_ROOM_LINES}")
  file(WRITE ${CMAKE_BINARY_DIR}/layers.txt "${text}")
endfunction()

# One GoogleTest binary per layer from tests/NAME/*_test.cpp, labelled unit (pure) or integration (IO).
# Node tests (tests/js/*.test.mjs) run with node's own runner against the built binary.
function(warden_layer_tests)
  include(GoogleTest)
  foreach(name ${WARDEN_LAYERS})
    file(GLOB_RECURSE tsrcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/${name}/*.cpp)
    if(NOT tsrcs)
      continue()
    endif()
    set(target warden_${name}_tests)
    add_executable(${target} ${tsrcs})
    # A layer's tests may also use a layer it does not reach as a tool: set WARDEN_TEST_DEPS_<name> before
    # warden_layer_tests() (none does today; the layering test checks what is named there is used).
    target_link_libraries(${target} PRIVATE warden_${name} ${WARDEN_TEST_DEPS_${name}} GTest::gtest_main GTest::gmock)
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    # Test code at -O1 where the build optimizes: the libraries it calls keep the build's level, the test
    # units (GoogleTest macros, Asio coroutines) compile in about four fifths of the time.
    target_compile_options(${target} PRIVATE ${WARDEN_WARNINGS} $<$<CONFIG:RelWithDebInfo,Release>:-O1>)
    set(label unit)
    if(WARDEN_LAYER_KIND_${name} STREQUAL "IO")
      set(label integration)
      add_dependencies(${target} lm-warden)
      target_compile_definitions(${target} PRIVATE WARDEN_BINARY="$<TARGET_FILE:lm-warden>"
                                                   WARDEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
      warden_precompiled_header(${target} io_tests)
    else()
      target_compile_definitions(${target} PRIVATE WARDEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
      warden_precompiled_header(${target} tests)
    endif()
    if(WARDEN_UNIT_SUITES_${name})
      # The suites of an I/O layer's binary that run over plain objects (no process, no socket) are unit
      # tests: WARDEN_UNIT_SUITES_<name> names them.
      list(TRANSFORM WARDEN_UNIT_SUITES_${name} APPEND ".*" OUTPUT_VARIABLE suites)
      string(JOIN ":" unit_filter ${suites})
      gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60 TEST_FILTER "${unit_filter}"
                           PROPERTIES LABELS unit TIMEOUT 300)
      gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60 TEST_FILTER "-${unit_filter}"
                           PROPERTIES LABELS ${label} TIMEOUT 300)
    else()
      gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                           PROPERTIES LABELS ${label} TIMEOUT 300)
    endif()
  endforeach()

  if(NOT WARDEN_PURE_ONLY)
    file(GLOB jstests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/js/*.test.mjs)
    foreach(js ${jstests})
      get_filename_component(jsname ${js} NAME_WE)
      add_test(NAME js_${jsname} COMMAND node --test ${js} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
      set_tests_properties(js_${jsname} PROPERTIES LABELS "integration;js" TIMEOUT 600
                           ENVIRONMENT "WARDEN_BINARY=$<TARGET_FILE:lm-warden>")
    endforeach()
  endif()
endfunction()

# Google Benchmark programs from bench/*_bench.cpp; built by default, run by `make bench`.
function(warden_microbenchmarks)
  file(GLOB bsrcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*_bench.cpp)
  foreach(b ${bsrcs})
    get_filename_component(bname ${b} NAME_WE)
    add_executable(${bname} ${b})
    target_link_libraries(${bname} PRIVATE warden_app benchmark::benchmark)
    target_compile_definitions(${bname} PRIVATE WARDEN_BINARY="$<TARGET_FILE:lm-warden>"
                                                WARDEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    set_target_properties(${bname} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
  endforeach()
endfunction()
