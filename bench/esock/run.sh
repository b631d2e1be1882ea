#!/usr/bin/env bash
# bench/esock: issue 13's comparison in one run (README.md): an unmodified TCP program's
# ping-pong latency and streaming bandwidth on kernel loopback, under DDPMODE over the ksock
# and the dpdk providers, next to the raw layers under DDPMODE: the utcp endpoint (lib/tcp +
# lib/esock/utcp, esock_iwarp) and the memif link itself (bench_memif_link). Markdown tables
# (stdout and OUT/tables.md) and PNG plots (OUT/latency.png, OUT/bandwidth.png), and the
# per-octet ceiling of DDPMODE's passes without any protocol (bench_esock_passes:
# OUT/passes.md, OUT/ceiling.png).
#
#   bench/esock/run.sh [OUT_DIR] [--build DIR] [--quick]
#
# OUT_DIR defaults to bench/esock/out (gitignored). Binaries can be overridden with
# BENCH_DDPMODE, BENCH_PASSES, ESOCK_IWARP and MEMIF_LINK; PYTHON picks the interpreter (default
# /usr/bin/python3, which sees Debian's python3-matplotlib). The raw layers run as DDPMODE
# does by default over memif: MTU 16000 (memif_frames.h), MPA CRC32c, no Markers. A
# contender that fails leaves "n/a" cells and its log in OUT/logs; nothing here fails on a
# number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
QUICK=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--quick) QUICK=1; shift ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
DDPMODE="${BENCH_DDPMODE:-$BUILD/bench/esock/bench_esock_ddpmode}"
IWARP="${ESOCK_IWARP:-$BUILD/examples/utcp/esock_iwarp}"
LINK="${MEMIF_LINK:-$BUILD/bench/utcp/bench_memif_link}"
PASSES="${BENCH_PASSES:-$BUILD/bench/esock/bench_esock_passes}"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON=python3

mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
RESULTS="$OUT/results.txt"
: >"$RESULTS"
rm -f "$OUT"/logs/*.log "$OUT"/*.png "$OUT"/*.md

MTU=16000
FRAME=$((MTU + 14))
MEMIF_ARGS="bsize=16384,rsize=11"
PREFIX="esock-bench-esock-$$"
PORT=$((20000 + $$ % 20000))
PIDS=()
say() { echo "$*" >&2; }
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$OUT"/*.sock
	rm -rf /var/run/dpdk/"$PREFIX"-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$PREFIX"-*
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# bounded COMMAND...: runs it with a deadline (a stuck contender costs minutes, not the run).
bounded() { timeout -k 5 "$LIMIT" "$@"; }

# pair TAG SERVER_ARGS CLIENT_ARGS (both after the binary): a two-process DPDK contender,
# server on core 1 and client on core 0 over one memif link; both logs' RESULT lines go to
# results.txt tagged with TAG.
pair() {
	local tag="$1" bin="$2" sargs="$3" cargs="$4"
	PORT=$((PORT + 1))
	local sock="$OUT/$tag.sock" slog="$OUT/logs/$tag.server.log" clog="$OUT/logs/$tag.client.log"
	if [ ! -x "$bin" ]; then
		echo "tag=$tag error=no_binary" >>"$RESULTS"
		return
	fi
	# shellcheck disable=SC2086
	bounded "$bin" ${sargs//@SOCK@/$sock} >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	local i
	for ((i = 0; i < 400; i++)); do [ -S "$sock" ] && break; sleep 0.025; done
	# shellcheck disable=SC2086
	bounded "$bin" ${cargs//@SOCK@/$sock} >"$clog" 2>&1
	wait "$spid"
	grep -h '^RESULT ' "$clog" "$slog" | sed "s/^RESULT /tag=$tag /" >>"$RESULTS"
	rm -f "$sock"
	rm -rf /var/run/dpdk/"$PREFIX"-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$PREFIX"-*
}

# iwarp TAG ARGS: esock_iwarp server and client, as DDPMODE runs over memif.
iwarp() {
	local vdev="socket=@SOCK@,socket-abstract=no,$MEMIF_ARGS"
	local common="--mtu $MTU --markers off --crc on --timeout 30"
	pair "$1" "$IWARP" \
		"--vdev net_memif0,role=server,$vdev --ip 10.91.0.1/24 --core 1 --file-prefix $PREFIX-$PORT-s --listen $PORT $common $2" \
		"--vdev net_memif0,role=client,$vdev --ip 10.91.0.2/24 --core 0 --file-prefix $PREFIX-$PORT-c --connect 10.91.0.1:$PORT $common $2"
}

# link TAG MODE_ARGS: bench_memif_link server and client (the raw link, busy polling).
link() {
	local common="--socket @SOCK@ --timeout 10"
	pair "$1" "$LINK" "--role server $common --core 1 --prefix $PREFIX-$PORT-s $2" \
		"--role client $common --core 0 --prefix $PREFIX-$PORT-c $2"
}

{
	echo "date=$(date -u '+%Y-%m-%d_%H:%M_UTC') kernel=$(uname -r) cores=$(nproc)" \
		"commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"quick=$QUICK mtu=$MTU"
} >"$OUT/meta.txt"
START=$(date +%s)
Q=""
[ $QUICK = 1 ] && Q="--quick"

# 1. The unmodified program: kernel loopback and DDPMODE, one run per provider (each table's
# ratios are within its run; the dpdk run's kernel column is the plots' kernel line).
LIMIT=1800
for provider in dpdk ksock; do
	say "== bench_esock_ddpmode --provider $provider $Q"
	bounded "$DDPMODE" --provider "$provider" $Q >"$OUT/ddpmode-$provider.md" \
		2>"$OUT/logs/ddpmode-$provider.log" || say "  exit $? (logs/ddpmode-$provider.log)"
done

# 2. The raw utcp endpoint: a Send each way (ping-pong) and Writes one way (bandwidth), at
# the sizes of the DDPMODE table.
LIMIT=90
say "== raw utcp endpoint (esock_iwarp, MTU $MTU)"
for ((size = 64; size <= 4194304; size *= 4)); do
	if [ $size -le 65536 ]; then
		n=$([ $QUICK = 1 ] && echo 300 || echo 2000)
		iwarp "utcp-lat-$size" "--op send --mode lat --size $size --iters $n"
	fi
	bytes=$([ $QUICK = 1 ] && echo $((64 << 20)) || echo $((1 << 30)))
	[ $size -le 1024 ] && bytes=$((bytes / 16))
	iwarp "utcp-bw-$size" "--op write --mode bw --size $size --bytes $bytes"
done

# 3. The raw memif link: one frame echoed (the sizes whose DDPMODE message fits one frame
# with Ethernet, IPv4 and TCP headers) and a one-way blast of full frames.
say "== raw memif link (bench_memif_link)"
for size in 64 256 1024 4096; do
	link "link-lat-$size" "lat --size $((size + 54)) --iters 2000"
done
link "link-bw-$FRAME" "bw --size $FRAME --seconds 2"

# 4. The ceiling: DDPMODE's per-octet passes on two threads with no protocol, next to the
# kernel's stream, at the stream sizes the targets name.
LIMIT=120
say "== per-octet ceiling (bench_esock_passes)"
bounded "$PASSES" --mtu $MTU --seconds $([ $QUICK = 1 ] && echo 0.5 || echo 2) \
	--sizes 65536,1048576 >"$OUT/passes.md" 2>"$OUT/logs/passes.log" ||
	say "  exit $? (logs/passes.log)"

say "== report ($(($(date +%s) - START)) s)"
"$PYTHON" "$HERE/report.py" "$OUT" | tee "$OUT/tables.md"
