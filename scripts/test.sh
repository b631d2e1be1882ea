#!/usr/bin/env bash
# Sets up, builds and runs every esock test:
#   1. the release build (gcc, warnings as errors) and its whole test suite;
#   2. an ASan+UBSan build (clang) of the same tests plus the libFuzzer targets, each
#      fuzzer run for ESOCK_FUZZ_SECONDS over its seed corpus. Interop suites (real siw in
#      QEMU, the kernel's TCP) run once, in the release build: they test the wire, which the
#      sanitizers do not change, and they are the slow part. The Wireshark plugin is a
#      plugin for an uninstrumented tshark, so it is not built with the sanitizers;
#   3. a ThreadSanitizer build (clang) of the tests that run the runtime's threads (the
#      progress thread, application threads blocked in esock, close racing reads) over the
#      kernel-socket provider: tests/tsan/run.sh.
# Suites labelled slow (the whole siw interop matrix; its pairwise form runs here) are left
# out: ctest --test-dir build -L slow runs them.
# Usage: scripts/test.sh            (ESOCK_FUZZ_SECONDS=20 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)

"$root/scripts/install-deps.sh"

echo "== release build (gcc)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build -j "$jobs"

echo "== sanitizer + fuzz build (clang, ASan+UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DESOCK_SANITIZE=ON -DESOCK_FUZZ=ON -DESOCK_BUILD_BENCH=OFF -DESOCK_WITH_DISSECTOR=OFF \
  -DESOCK_FUZZ_SECONDS="${ESOCK_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build-asan -j "$jobs"

echo "== release tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600 -LE slow)

echo "== sanitizer tests and fuzzers"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$jobs" --timeout 900 -LE interop)

echo "== thread sanitizer: the runtime's threads"
tests/tsan/run.sh build-tsan
