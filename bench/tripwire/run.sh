#!/usr/bin/env bash
# bench/tripwire: notification latency of a single-writer ring over RDMA Write
# (examples/sockets/tripwire_ring.c), the consumer told that the producer's Write landed by
# a tripwire (waited for in epoll), against the same ring told by a Send after the Write,
# and against busy-polling the ring's tail word: all three in the same run, interleaved
# round by round, on the dpdk provider over net_memif and on the ksock provider over
# loopback. Writes OUT/results.txt (one RESULT line per pair of processes), OUT/tables.md
# and OUT/latency.png, OUT/throughput.png (report.py).
#
#   bench/tripwire/run.sh [OUT_DIR] [--build DIR] [--quick] [--provider dpdk|ksock]
#
# OUT_DIR defaults to bench/tripwire/out (gitignored). Nothing here fails on a number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
ROUNDS=3
N=20000
PROVIDERS="dpdk ksock"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--quick) ROUNDS=1; N=3000; shift ;;
	--provider) PROVIDERS="$2"; shift 2 ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
RING="${TRIPWIRE_RING:-$BUILD/examples/sockets/esock_tripwire_ring}"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON=python3
[ -x "$RING" ] || { echo "run.sh: no $RING (cmake --build build --target esock_tripwire_ring)" >&2; exit 1; }
mkdir -p "$OUT"
rm -f "$OUT"/*.png "$OUT"/tables.md "$OUT"/results.txt "$OUT"/*.log
{
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "rounds $ROUNDS messages $N"
	echo "cpus $(nproc)"
} >"$OUT/meta.txt"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
S_IP=10.96.0.1
C_IP=10.96.0.2

# pair PROVIDER MODE WINDOW SIZE: one consumer and one producer; a RESULT line from both
# processes' own "ok:" lines (each verified every message).
pair() {
	local prov=$1 mode=$2 win=$3 size=$4 senv=() cenv=() host=127.0.0.1
	local tag="$prov.$mode.w$win.s$size"
	if [ "$prov" = dpdk ]; then
		local sock="$TMP/memif.$RANDOM.sock"
		senv=(ESOCK_PROVIDER=dpdk "ESOCK_DPDK_VDEV=net_memif0,role=server,socket=$sock,socket-abstract=no"
			"ESOCK_DPDK_IP=$S_IP/24")
		cenv=(ESOCK_PROVIDER=dpdk "ESOCK_DPDK_VDEV=net_memif0,role=client,socket=$sock,socket-abstract=no"
			"ESOCK_DPDK_IP=$C_IP/24")
		host=$S_IP
	else
		senv=(ESOCK_PROVIDER=ksock)
		cenv=(ESOCK_PROVIDER=ksock)
	fi
	# A busy-polling pair starves its own stack of CPU on two cores (README): fewer messages.
	local n=$N
	[ "$mode" = poll ] && n=$((N / 20))
	local fifo="$TMP/fifo" args=(-s "$size" -n "$n" -w "$win" -m "$mode")
	rm -f "$fifo"
	mkfifo "$fifo"
	timeout 120 env "${senv[@]}" stdbuf -oL "$RING" -p 0 "${args[@]}" >"$fifo" 2>"$OUT/$tag.consumer.log" &
	local spid=$! word port
	exec 3<"$fifo"
	if ! read -r word port <&3 || [ "$word" != port ]; then
		echo "run.sh: $tag: the consumer did not start (see $OUT/$tag.consumer.log)" >&2
		kill "$spid" 2>/dev/null
		wait "$spid"
		exec 3<&-
		return
	fi
	cat <&3 >>"$OUT/$tag.consumer.log" &
	local catpid=$!
	timeout 120 env "${cenv[@]}" "$RING" "$host" "$port" "${args[@]}" >"$OUT/$tag.producer.log" 2>&1
	wait "$spid"
	wait "$catpid"
	exec 3<&-
	local c p
	c=$(grep "^ok:" "$OUT/$tag.consumer.log" | tail -1)
	p=$(grep "^ok:" "$OUT/$tag.producer.log" | tail -1)
	if [ -z "$c" ] || [ -z "$p" ]; then
		echo "run.sh: $tag failed (see $OUT/$tag.*.log)" >&2
		return
	fi
	# ok: N messages of S octets verified, MODE, one-way p50 X us p99 Y us, R messages/s, C us CPU per message
	local ow50 ow99 ccpu rate pcpu rtt50="" rtt99=""
	ow50=$(sed -E 's/.*p50 ([0-9.]+) us.*/\1/' <<<"$c")
	ow99=$(sed -E 's/.*p99 ([0-9.]+) us.*/\1/' <<<"$c")
	ccpu=$(sed -E 's/.* ([0-9.]+) us CPU per message.*/\1/' <<<"$c")
	rate=$(sed -E 's/.* ([0-9.]+) messages\/s.*/\1/' <<<"$p")
	pcpu=$(sed -E 's/.* ([0-9.]+) us CPU per message.*/\1/' <<<"$p")
	if [ "$win" = 1 ]; then
		rtt50=$(sed -E 's/.*p50 ([0-9.]+) us.*/\1/' <<<"$p")
		rtt99=$(sed -E 's/.*p99 ([0-9.]+) us.*/\1/' <<<"$p")
	fi
	echo "RESULT provider=$prov mode=$mode window=$win size=$size oneway_p50=$ow50" \
		"oneway_p99=$ow99 rtt_p50=${rtt50:-n/a} rtt_p99=${rtt99:-n/a} rate=$rate" \
		"cpu_producer=$pcpu cpu_consumer=$ccpu" | tee -a "$OUT/results.txt"
}

for prov in $PROVIDERS; do
	for round in $(seq 1 "$ROUNDS"); do
		for size in 64 4096; do
			for win in 1 32; do
				for mode in tripwire send poll; do
					pair "$prov" "$mode" "$win" "$size"
				done
			done
		done
		echo "run.sh: $prov round $round done" >&2
	done
done
"$PYTHON" "$HERE/report.py" "$OUT"
