# Common compile settings for esock's own targets (not applied to dependencies).
set(ESOCK_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                   -Werror)

function(esock_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE ${ESOCK_WARNINGS})
endfunction()

# esock_library(<name> SOURCES ... DEPS ...): a static library under lib/.
function(esock_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  esock_target_defaults(${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/lib ${PROJECT_SOURCE_DIR}/include
                                             ${PROJECT_BINARY_DIR}/include)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_DEPS)
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  endif()
endfunction()

# esock_test(<name> SOURCES ... DEPS ...): a GoogleTest binary registered with CTest.
function(esock_test name)
  if(NOT ESOCK_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  esock_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} esock_hang_watchdog GTest::gtest GTest::gmock
                                        GTest::gtest_main)
  # Each test is one process of a few seconds (under ASan the longest took 6 s); the hang
  # watchdog (tests/support/hang_watchdog.cc) prints the stacks of one still running at
  # 120 s, before this TIMEOUT ends it.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 180
                       ENVIRONMENT "ESOCK_SOURCE_DIR=${PROJECT_SOURCE_DIR};ESOCK_SHARED_DIR=${ESOCK_SHARED_DIR}")
endfunction()

# esock_fuzzer(<name> SOURCES ... DEPS ... CORPUS <dir>): a libFuzzer target (clang only).
# Registered as a CTest test that runs for ESOCK_FUZZ_SECONDS over its seed corpus.
function(esock_fuzzer name)
  if(NOT ESOCK_FUZZ)
    return()
  endif()
  cmake_parse_arguments(ARG "" "CORPUS" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  esock_target_defaults(${name})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  add_test(NAME fuzz.${name}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/run-fuzzer.sh $<TARGET_FILE:${name}>
                   ${ESOCK_FUZZ_SECONDS} ${CMAKE_CURRENT_BINARY_DIR}/${name}.corpus ${ARG_CORPUS})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz)
endfunction()
