#!/usr/bin/env bash
# run-fuzzer.sh <fuzzer> <seconds> <work corpus dir> <seed corpus dir>
# Runs a libFuzzer target for a bounded time: new inputs go to the work dir, the
# checked-in seed corpus is only read. Any crash, leak or sanitizer report fails.
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 seeds=$4
mkdir -p "$work"
exec "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/" "$work" "$seeds"
