#!/usr/bin/env bash
# long-run.sh [seconds per target] [build dir]
# The long fuzz run (issue 20): every libFuzzer target of the sanitizer build for a fixed
# time each (600 s unless told), one after the other, each from its checked-in seed corpus
# and a fresh work corpus, with the same sanitizer options as CI. Prints a Markdown table
# (target, runs, executions per second, coverage, features, corpus, slowest input, result)
# for tests/fuzz/README.md; a crash, leak, timeout or sanitizer report marks the row FAILED
# and its artifact stays in the work directory. Not part of CI (it takes about 13 x the
# time given); CI runs each target for ESOCK_FUZZ_SECONDS (20 s) instead.
#
#   scripts/test.sh (or the build-asan configure line in it), then
#   tests/fuzz/long-run.sh 600 build-asan
set -uo pipefail
seconds=${1:-600}
build=${2:-build-asan}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${ESOCK_FUZZ_WORK:-$(mktemp -d /tmp/esock-fuzz-long.XXXXXX)}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

mapfile -t targets < <(find "$build/tests/fuzz" -type f -name 'fuzz_*' -perm -u+x | sort)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "no fuzz targets under $build/tests/fuzz: configure with -DESOCK_FUZZ=ON (scripts/test.sh)" >&2
  exit 2
fi

echo "Long fuzz run: ${#targets[@]} targets, ${seconds} s each, $(nproc) cores, $(date -u +%F), commit $(git -C "$root" rev-parse --short HEAD)"
echo
echo "| target | runs | exec/s | coverage (edges) | features | corpus (inputs) | slowest input (s) | result |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
failed=0
for bin in "${targets[@]}"; do
  name=$(basename "$bin")
  seeds=$(find "$root/tests/fuzz" -type d -path "*/corpus/$name" | head -1)
  dir="$work/$name"
  mkdir -p "$dir/corpus"
  "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$dir/" "$dir/corpus" ${seeds:+"$seeds"} >"$dir/log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  slow=$(sed -n 's/^stat::slowest_unit_time_sec: *//p' "$dir/log")
  last=$(grep -E '^#[0-9]+' "$dir/log" | grep -E 'cov: ' | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc: $(ls "$dir" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | head -1))"
    failed=1
  fi
  echo "| $name | ${runs:-?} | ${eps:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | ${slow:-?} | $result |"
done
echo
echo "Logs and corpora: $work"
exit "$failed"
