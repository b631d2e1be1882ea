#!/usr/bin/env bash
# bench/azsdp: the AZ-SDP paper's experiments (README.md) in one run: bench_azsdp's RESULT
# lines (OUT/results.txt), then report.py's markdown tables (stdout and OUT/tables.md) and
# one PNG per experiment (OUT/latency.png, bandwidth.png, overlap.png, touch.png,
# hotspot.png, streams.png).
#
#   bench/azsdp/run.sh [OUT_DIR] [--build DIR] [--quick] [--provider dpdk|ksock] [--exp LIST]
#
# OUT_DIR defaults to bench/azsdp/out (gitignored). BENCH_AZSDP overrides the binary;
# PYTHON the interpreter (default /usr/bin/python3, which sees Debian's python3-matplotlib).
# Nothing here fails on a number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
ARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--quick) ARGS+=(--quick); shift ;;
	--provider | --exp) ARGS+=("$1" "$2"); shift 2 ;;
	-h | --help) sed -n '2,11p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
BIN="${BENCH_AZSDP:-$BUILD/bench/azsdp/bench_azsdp}"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON=python3
[ -x "$BIN" ] || { echo "run.sh: no $BIN (cmake --build build --target bench_azsdp)" >&2; exit 1; }
mkdir -p "$OUT"
rm -f "$OUT"/*.png "$OUT"/tables.md
{
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "args ${ARGS[*]:-}"
	echo "cpus $(nproc)"
} >"$OUT/meta.txt"
# A 2-core machine: anything else busy skews every line; bound the whole run.
timeout -k 10 3600 "$BIN" "${ARGS[@]}" >"$OUT/results.txt" 2>"$OUT/bench.log"
rc=$?
[ $rc = 0 ] || echo "run.sh: bench_azsdp exited $rc (see $OUT/bench.log); the tables show what it measured" >&2
"$PYTHON" "$HERE/report.py" "$OUT"
