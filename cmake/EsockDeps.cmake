# Finds esock's dependencies. A missing one stops the configure step with the
# name of the Debian package that provides it (scripts/install-deps.sh installs all).
find_package(PkgConfig QUIET)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

# esock_require_pkg(<prefix> <pkg-config module> <debian package>)
function(esock_require_pkg prefix module debian)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "esock needs ${module} (pkg-config): apt-get install ${debian}"
                        "  (or run scripts/install-deps.sh)")
  endif()
endfunction()

esock_require_pkg(ISAL libisal libisal-dev)
# SipHash for RFC 6528 initial sequence numbers (crypto_shorthash).
esock_require_pkg(SODIUM libsodium libsodium-dev)

if(ESOCK_WITH_DPDK)
  esock_require_pkg(DPDK "libdpdk>=22.11" libdpdk-dev)
endif()
if(ESOCK_WITH_RDMACM)
  esock_require_pkg(RDMACM librdmacm librdmacm-dev)
  esock_require_pkg(IBVERBS libibverbs libibverbs-dev)
endif()

if(ESOCK_WITH_DISSECTOR)
  esock_require_pkg(WIRESHARK wireshark wireshark-dev)
endif()

if(ESOCK_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GoogleTest not found: apt-get install libgtest-dev libgmock-dev")
  endif()
endif()
if(ESOCK_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    message(FATAL_ERROR "Google Benchmark not found: apt-get install libbenchmark-dev")
  endif()
endif()
