#!/usr/bin/env bash
# bench/utcp: issue 4's benchmarks in one run (README.md): ping-pong latency, windowed
# bandwidth and the packet-loss experiment, as markdown tables (stdout and OUT/tables.md)
# and PNG plots in OUT.
#
#   bench/utcp/run.sh [OUT_DIR] [--build DIR] [--quick] [--only lat,bw,loss]
#
# OUT_DIR defaults to bench/utcp/out (gitignored); --build to <repo>/build. Binaries can be
# overridden with ESOCK_IWARP, ESOCK_PERFTEST, KERNEL_PEER and MEMIF_LINK; PYTHON picks the
# interpreter (default /usr/bin/python3, which sees Debian's python3-matplotlib).
# Contenders: esock_iwarp (lib/tcp + lib/esock/utcp) in two processes over net_memif;
# esock_perftest (esock's kernel-socket transport) over 127.0.0.1; Linux TCP over
# 127.0.0.1 (bench_utcp_kernel); the raw memif link under esock_iwarp (bench_memif_link:
# Ethernet frames only, busy polling). Server on core 1, client on core 0; all but the raw
# link use idle back-off or blocking calls. A contender that fails leaves "n/a" cells and
# its log in OUT/logs; the benchmark never fails on a number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
QUICK=0
ONLY="lat,bw,loss"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--only) ONLY="$2"; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
IWARP="${ESOCK_IWARP:-$BUILD/examples/utcp/esock_iwarp}"
PERF="${ESOCK_PERFTEST:-$BUILD/examples/rdma_tools/esock_perftest}"
KPEER="${KERNEL_PEER:-$BUILD/bench/utcp/bench_utcp_kernel}"
LINK="${MEMIF_LINK:-$BUILD/bench/utcp/bench_memif_link}"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON=python3

mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
RESULTS="$OUT/results.txt"
: >"$RESULTS"
rm -f "$OUT"/logs/*.log "$OUT"/*.png "$OUT"/tables.md

SERVER_CORE=1
CLIENT_CORE=0
S_IP=10.90.0.1
C_IP=10.90.0.2
PREFIX="esock-bench-utcp-$$"
PORT=$((20000 + $$ % 20000))
# memif rings as in tests/integration/tcp: bsize >= the largest frame (DPDK 22.11 corrupts
# larger ones), 8192 slots so a whole receive window fits (the device drops what the PMD
# refuses twice).
MEMIF_ARGS="${MEMIF_ARGS:-bsize=2048,rsize=13}"
TIMEOUT=60
PIDS=()
RUN=0
TAGS=""

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$OUT"/*.sock
	rm -rf /var/run/dpdk/"$PREFIX"-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$PREFIX"-*
}
trap cleanup EXIT
trap 'exit 1' INT TERM

want() { [[ ",$ONLY," == *",$1,"* ]]; }
say() { echo "$*" >&2; }

# wait_pid PID SECONDS: the exit status, or 124 after killing it at the deadline.
wait_pid() {
	local pid="$1" limit=$(($2 * 20)) i
	for ((i = 0; i < limit; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid"
}

# record BENCH CONTENDER LOG STATUS [ROLE]: appends the log's RESULT lines to results.txt,
# tagged with the run number and $TAGS (the plan's keys: sz=, inj_loss=); a run without one
# gets an error line so its cells read n/a.
record() {
	local bench="$1" who="$2" log="$3" st="$4" role="${5:-client}" line n=0
	local tags="bench=$bench contender=$who run=$RUN $TAGS"
	while IFS= read -r line; do
		echo "$tags ${line#RESULT }" >>"$RESULTS"
		n=$((n + 1))
	done < <(grep '^RESULT ' "$log")
	[ $n -gt 0 ] || echo "$tags role=$role error=exit_$st" >>"$RESULTS"
}

# finish_pair BENCH CONTENDER TAG SOCK SERVER_PID CLIENT_PID SERVER_LOG CLIENT_LOG: waits for
# a two-process DPDK contender (bounded), records both logs' results and removes the memif
# socket and the EAL runtime directories of this run.
finish_pair() {
	local bench="$1" who="$2" tag="$3" sock="$4" spid="$5" cpid="$6" slog="$7" clog="$8"
	PIDS+=("$cpid")
	wait_pid "$cpid" $((TIMEOUT + 15))
	local cst=$?
	wait_pid "$spid" 15
	local sst=$?
	record "$bench" "$who" "$clog" "$cst"
	record "$bench" "$who" "$slog" "$sst" server
	if [ "$cst" != 0 ] || [ "$sst" != 0 ]; then
		say "  $tag: client exit $cst, server exit $sst (logs/$tag.*)"
	fi
	rm -f "$sock"
	rm -rf "/var/run/dpdk/$PREFIX-$PORT"-* "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$PREFIX-$PORT"-*
}

# iwarp BENCH CONTENDER "ARGS FOR BOTH" "CLIENT-ONLY ARGS"
iwarp() {
	local bench="$1" who="$2" args="$3" cargs="$4"
	PORT=$((PORT + 1))
	RUN=$((RUN + 1))
	local tag="$bench-$who-$PORT"
	local sock="$OUT/$tag.sock" slog="$OUT/logs/$tag.server.log" clog="$OUT/logs/$tag.client.log"
	if [ ! -x "$IWARP" ]; then
		echo "bench=$bench contender=$who run=$RUN $TAGS role=client error=no_esock_iwarp" >>"$RESULTS"
		return
	fi
	local vdev="socket=$sock,socket-abstract=no,$MEMIF_ARGS"
	# shellcheck disable=SC2086
	"$IWARP" --vdev "net_memif0,role=server,$vdev" --ip "$S_IP/24" --core $SERVER_CORE \
		--file-prefix "$PREFIX-$PORT-s" --timeout $TIMEOUT --listen $PORT $args >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	local i
	for ((i = 0; i < 400; i++)); do [ -S "$sock" ] && break; sleep 0.025; done
	# shellcheck disable=SC2086
	"$IWARP" --vdev "net_memif0,role=client,$vdev" --ip "$C_IP/24" --core $CLIENT_CORE \
		--file-prefix "$PREFIX-$PORT-c" --timeout $TIMEOUT --connect $S_IP:$PORT $args $cargs \
		>"$clog" 2>&1 &
	finish_pair "$bench" "$who" "$tag" "$sock" "$spid" $! "$slog" "$clog"
}

# memif_link BENCH CONTENDER "MODE ARGS": the raw memif link, bench_memif_link server and
# client with the same arguments (the tool sizes bsize to the frame). Its own waits are
# bounded (--timeout 10, per wait); the client waits for the server's socket itself.
memif_link() {
	local bench="$1" who="$2" args="$3"
	PORT=$((PORT + 1))
	RUN=$((RUN + 1))
	local tag="$bench-$who-$PORT"
	local sock="$OUT/$tag.sock" slog="$OUT/logs/$tag.server.log" clog="$OUT/logs/$tag.client.log"
	if [ ! -x "$LINK" ]; then
		echo "bench=$bench contender=$who run=$RUN $TAGS role=client error=no_bench_memif_link" >>"$RESULTS"
		return
	fi
	local common=(--socket "$sock" --timeout 10)
	# shellcheck disable=SC2086
	"$LINK" --role server "${common[@]}" --core $SERVER_CORE --prefix "$PREFIX-$PORT-s" $args \
		>"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	# shellcheck disable=SC2086
	"$LINK" --role client "${common[@]}" --core $CLIENT_CORE --prefix "$PREFIX-$PORT-c" $args \
		>"$clog" 2>&1 &
	finish_pair "$bench" "$who" "$tag" "$sock" "$spid" $! "$slog" "$clog"
}

# kernel BENCH MODE SIZE ITERS: Linux TCP over loopback.
kernel() {
	local bench="$1" mode="$2" size="$3" iters="$4"
	PORT=$((PORT + 1))
	RUN=$((RUN + 1))
	local tag="$bench-kernel-$size"
	local slog="$OUT/logs/$tag.server.log" clog="$OUT/logs/$tag.client.log"
	taskset -c $SERVER_CORE "$KPEER" --listen $PORT --timeout $TIMEOUT >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	taskset -c $CLIENT_CORE "$KPEER" --connect 127.0.0.1:$PORT --mode "$mode" --size "$size" \
		--iters "$iters" --warmup $((iters / 10)) --timeout $TIMEOUT >"$clog" 2>&1 &
	local cpid=$!
	PIDS+=("$cpid")
	wait_pid "$cpid" $((TIMEOUT + 5))
	local cst=$?
	wait_pid "$spid" 5
	record "$bench" kernel "$clog" "$cst"
}

# ksock BENCH VERB MODE SIZE ITERS: esock_perftest (kernel-socket transport) over
# loopback. perftest reports half round trips for Send/Write latency (t_typical is the
# median) and MiB/s (2^20) for bandwidth; converted here to full RTT and MB/s (10^6).
ksock() {
	local bench="$1" verb="$2" mode="$3" size="$4" iters="$5"
	PORT=$((PORT + 1))
	RUN=$((RUN + 1))
	local tag="$bench-ksock-$verb-$size"
	local slog="$OUT/logs/$tag.server.log" clog="$OUT/logs/$tag.client.log"
	local common=(-t "$verb" "--$mode" -s "$size" -n "$iters" -p "$PORT" --markers require)
	taskset -c $SERVER_CORE "$PERF" "${common[@]}" --bind 127.0.0.1 >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	taskset -c $CLIENT_CORE "$PERF" "${common[@]}" 127.0.0.1 >"$clog" 2>&1 &
	local cpid=$!
	PIDS+=("$cpid")
	wait_pid "$cpid" $((TIMEOUT + 5))
	local cst=$?
	wait_pid "$spid" 10
	local row tags="bench=$bench contender=ksock run=$RUN $TAGS"
	row="$(awk '/#bytes/ { getline; print; exit }' "$clog")"
	if [ "$cst" = 0 ] && [ -n "$row" ]; then
		# shellcheck disable=SC2086
		set -- $row
		if [ "$mode" = lat ]; then
			awk -v s="$1" -v n="$2" -v p50="$5" -v p99="$8" -v op="$verb" -v t="$tags" 'BEGIN {
				q = op == "read" ? 1 : 2
				printf "%s role=client op=%s mode=lat size=%s iters=%s rtt_p50_us=%.2f rtt_p99_us=%.2f error=none\n", t, op, s, n, p50 * q, p99 * q }' >>"$RESULTS"
		else
			awk -v s="$1" -v n="$2" -v bw="$4" -v op="$verb" -v t="$tags" 'BEGIN {
				printf "%s role=client op=%s mode=bw size=%s iters=%s MBps=%.2f error=none\n", t, op, s, n, bw * 1.048576 }' >>"$RESULTS"
		fi
	else
		echo "$tags role=client op=$verb size=$size error=exit_$cst" >>"$RESULTS"
		say "  $tag: client exit $cst (logs/$tag.*)"
	fi
}

scale() { # scale N: N, or N/4 (at least 50) with --quick
	if [ $QUICK = 1 ]; then echo $(($1 / 4 > 50 ? $1 / 4 : 50)); else echo "$1"; fi
}

START=$(date +%s)
{
	echo "date=$(date -u '+%Y-%m-%d_%H:%M_UTC') kernel=$(uname -r) cores=$(nproc)" \
		"commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"quick=$QUICK memif=$MEMIF_ARGS"
} >"$OUT/meta.txt"

if want lat; then
	say "== 1. ping-pong latency"
	TIMEOUT=30
	for size in 64 256 1024 4096 16384 65536; do
		n=$(scale "$([ $size -le 4096 ] && echo 2000 || echo 1000)")
		say "  size $size, $n iterations"
		TAGS="sz=$size"
		iwarp lat iwarp-send "--op send --mode lat --size $size --iters $n" ""
		iwarp lat iwarp-write "--op write --mode lat --size $size --iters $n" ""
		kernel lat lat "$size" "$n"
		ksock lat send lat "$size" "$n"
		# The raw link: one frame as a TCP segment carrying `size` octets would be (Ethernet
		# 14 + IPv4 20 + TCP 20), only while that fits the 1514-octet frame; n/a above.
		if [ $((size + 54)) -le 1514 ]; then
			memif_link lat memif-link "lat --size $((size + 54)) --iters $n"
		fi
	done
fi

if want bw; then
	say "== 2. bandwidth"
	# A run that hits its timeout still reports the rate of what it completed (marked in the
	# table): 20 s bounds a slow point without losing it.
	TIMEOUT=20
	for size in 64 1024 16384 262144 4194304; do
		# 64 MiB per point, 64 .. 100000 messages
		n=$(((64 << 20) / size))
		[ $n -gt 100000 ] && n=100000
		[ $n -lt 64 ] && n=64
		n=$(scale $n)
		say "  size $size, $n messages"
		TAGS="sz=$size"
		iwarp bw iwarp-write "--op write --mode bw --size $size --iters $n" ""
		iwarp bw iwarp-send "--op send --mode bw --size $size --iters $n" ""
		kernel bw bw "$size" "$n"
		ksock bw write bw "$size" "$n"
	done
	# The raw link has no message size: one run per frame size, a constant column.
	say "  raw memif link, 1514 and 9014 B frames, 2 s each"
	TAGS=""
	memif_link bw memif-link-1514 "bw --size 1514 --seconds 2"
	memif_link bw memif-link-9014 "bw --size 9014 --seconds 2"
fi

if want loss; then
	say "== 3. packet loss (sender-side injector)"
	TIMEOUT=45
	seed=41
	for loss in 0 0.1 1 5; do
		seed=$((seed + 1)) # the same loss pattern for placement on and off
		# fewer octets where retransmission timeouts dominate
		case $loss in 0 | 0.1) mib=32 ;; 1) mib=16 ;; *) mib=8 ;; esac
		[ $QUICK = 1 ] && mib=$((mib / 4))
		for placement in on off; do
			say "  loss $loss%, placement $placement, $mib MiB each"
			TAGS="sz=65536 inj_loss=$loss"
			iwarp loss "iwarp-write-64k-$placement" \
				"--op write --mode bw --size 65536 --bytes $((mib << 20)) --placement $placement" \
				"--loss $loss --seed $seed"
			TAGS="sz=16384 inj_loss=$loss"
			iwarp loss "iwarp-send-16k-$placement" \
				"--op send --mode bw --size 16384 --bytes $((mib << 20)) --placement $placement" \
				"--loss $loss --seed $seed"
		done
	done
fi

say "== done in $(($(date +%s) - START)) s; results in $RESULTS"
"$PYTHON" "$HERE/report.py" "$OUT"
