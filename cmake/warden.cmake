# Helpers that keep the layer layout of src/ and tests/ in one place.

# GCC 12 reports false -Warray-bounds/-Wstringop-overflow on std::string at -O2 (GCC bug 105329).
set(WARDEN_WARNINGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Wno-array-bounds -Wno-stringop-overflow)

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

# warden_layer(NAME PURE|IO DEPS ...): a static library from src/NAME/**.cpp.
# Pure layers must not use sockets, threads or clocks; IO layers get a precompiled Boost header.
function(warden_layer name kind)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp)
  set(target warden_${name})
  if(srcs)
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    target_compile_options(${target} PRIVATE ${WARDEN_WARNINGS})
    target_compile_definitions(${target} PUBLIC BOOST_ASIO_NO_DEPRECATED)
    target_include_directories(${target} PUBLIC ${XXHASH_INCLUDE_DIR})
    if(kind STREQUAL "IO")
      target_precompile_headers(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/net/pch.hpp)
    endif()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${CMAKE_SOURCE_DIR}/src ${XXHASH_INCLUDE_DIR})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  set(WARDEN_LAYERS ${WARDEN_LAYERS} ${name} PARENT_SCOPE)
  set(WARDEN_LAYER_KIND_${name} ${kind} PARENT_SCOPE)
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
    # A layer's tests may also use lower layers as tools (e.g. the engine tokenizer to measure a workload).
    target_link_libraries(${target} PRIVATE warden_${name} ${WARDEN_TEST_DEPS_${name}} GTest::gtest_main GTest::gmock)
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    target_compile_options(${target} PRIVATE ${WARDEN_WARNINGS})
    set(label unit)
    if(WARDEN_LAYER_KIND_${name} STREQUAL "IO")
      set(label integration)
      add_dependencies(${target} lm-warden)
      target_compile_definitions(${target} PRIVATE WARDEN_BINARY="$<TARGET_FILE:lm-warden>"
                                                   WARDEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
      target_precompile_headers(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/net/pch.hpp)
    else()
      target_compile_definitions(${target} PRIVATE WARDEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    endif()
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                         PROPERTIES LABELS ${label} TIMEOUT 300)
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
