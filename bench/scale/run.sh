#!/usr/bin/env bash
# bench/scale: many connections on one stack. One unmodified epoll program
# (tests/integration/esock/conn_scale.c: N connections, each verified with an echo, held,
# closed) run for each connection count on kernel TCP over loopback, under
# `esockrun --ddp -p ksock` (loopback) and under `esockrun --ddp -p dpdk` (two processes
# joined by net_memif): set-up rate (connect + accept + MPA for esock), memory while the
# connections are held (both processes' RSS and the kernel's slab growth; report.py takes
# the cost per connection as the slope between connection counts, which leaves out what a
# process costs with none, DPDK's pools among it), the server's heap per connection, and
# whether the server's heap comes back after the close.
# Writes OUT/results.txt (RESULT lines), OUT/tables.md, OUT/memory.png, OUT/setup.png.
#
#   bench/scale/run.sh [OUT_DIR] [--build DIR] [--counts "100 300 1000"] [--quick]
#
# OUT_DIR defaults to bench/scale/out (gitignored). Nothing here fails on a number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
COUNTS="100 300 1000 2000 4000"
CONTENDERS="kernel ksock dpdk"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--counts) COUNTS="$2"; shift 2 ;;
	--contenders) CONTENDERS="$2"; shift 2 ;;
	--quick) COUNTS="100 1000"; shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
PROG="$BUILD/tests/integration/esock/conn_scale"
ESOCKRUN="$BUILD/tools/esockrun/esockrun"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -x "$PYTHON" ] || PYTHON=python3
for f in "$PROG" "$ESOCKRUN"; do
	[ -x "$f" ] || { echo "run.sh: no $f (cmake --build build)" >&2; exit 1; }
done
mkdir -p "$OUT"
rm -f "$OUT"/*.png "$OUT"/tables.md "$OUT"/results.txt "$OUT"/*.log
{
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpus $(nproc)"
	echo "nofile $(ulimit -Hn)"
} >"$OUT/meta.txt"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT
S_IP=10.95.0.1
C_IP=10.95.0.2

slab_kb() { awk '/^Slab:/ {print $2}' /proc/meminfo; }
# field LINE KEY: the value of KEY=V in LINE.
field() { sed -n "s/.*[ ]$2=\([0-9.]*\).*/\1/p" <<<"$1" | head -1; }

# one CONTENDER N: a server and a client process; one RESULT line.
one() {
	local who=$1 n=$2 addr=127.0.0.1 swrap=() cwrap=()
	local sock="$TMP/memif.$who.$n.sock" fifo="$TMP/fifo.$who.$n"
	local slog="$OUT/$who.$n.server.log" clog="$OUT/$who.$n.client.log"
	case $who in
	ksock) swrap=("$ESOCKRUN" --ddp -p ksock); cwrap=("$ESOCKRUN" --ddp -p ksock) ;;
	dpdk)
		addr=$S_IP
		swrap=("$ESOCKRUN" --ddp -p dpdk -e "ESOCK_DPDK_VDEV=net_memif0,role=server,socket=$sock,socket-abstract=no"
			-e "ESOCK_DPDK_IP=$S_IP/24")
		cwrap=("$ESOCKRUN" --ddp -p dpdk -e "ESOCK_DPDK_VDEV=net_memif0,role=client,socket=$sock,socket-abstract=no"
			-e "ESOCK_DPDK_IP=$C_IP/24")
		;;
	esac
	sync
	local base
	base=$(slab_kb)
	mkfifo "$fifo"
	timeout 200 "${swrap[@]}" "$PROG" server -n "$n" >"$fifo" 2>"$slog.err" &
	SPID=$!
	exec 3<"$fifo"
	local first port word
	if ! read -r first <&3 || ! read -r word port <&3 || [ "$word" != port ]; then
		echo "run.sh: $who $n: the server did not start" >&2
		kill "$SPID" 2>/dev/null
		exec 3<&-
		rm -f "$fifo"
		return
	fi
	echo "$first" >"$slog"
	cat <&3 >>"$slog" &
	local catpid=$!
	# The client holds its connections 3 s: the machine's memory is read meanwhile.
	timeout 200 "${cwrap[@]}" "$PROG" client -n "$n" -w 3 "$addr" "$port" >"$clog" 2>&1 &
	local cpid=$! held=""
	for _ in $(seq 1 1800); do
		grep -q "^client: mem held" "$clog" && { held=$(slab_kb); break; }
		kill -0 $cpid 2>/dev/null || break
		sleep 0.1
	done
	wait $cpid
	local crc=$?
	wait "$SPID"
	local src=$?
	SPID=""
	wait $catpid
	exec 3<&-
	rm -f "$fifo"
	local conn acc srv_start srv_held srv_end echo_s settled
	conn=$(grep "^client: connected" "$clog")
	acc=$(grep "^server: accepted" "$slog")
	srv_start=$(grep "^server: mem start" "$slog")
	srv_held=$(grep "^server: mem held" "$slog")
	srv_end=$(grep "^server: mem end" "$slog")
	echo_s=$(sed -n 's/^client: .* echoes checked, 0 wrong, in \([0-9.]*\) s/\1/p' "$clog")
	settled=$(sed -n 's/^server: settled \([0-9.]*\) s.*/\1/p' "$slog")
	local setup_rate accept_rate
	setup_rate=$(sed -n 's/.*(\([0-9]*\)\/s)/\1/p' <<<"$conn")
	accept_rate=$(sed -n 's/.*(\([0-9]*\)\/s)/\1/p' <<<"$acc")
	local slab="" heap_per="" rss_per="" heap_left="" srss="" crss
	[ -n "$held" ] && slab=$((held - base))
	crss=$(sed -n 's/^client: mem held rss_kb=\([0-9]*\).*/\1/p' "$clog")
	[ -n "$srv_held" ] && srss=$(field "$srv_held" rss_kb)
	if [ -n "$srv_held" ] && [ -n "$srv_start" ]; then
		heap_per=$((($(field "$srv_held" heap_kb) - $(field "$srv_start" heap_kb)) * 1024 / n))
		rss_per=$((($(field "$srv_held" rss_kb) - $(field "$srv_start" rss_kb)) * 1024 / n))
	fi
	[ -n "$srv_end" ] && heap_left=$(($(field "$srv_end" heap_kb) - $(field "$srv_start" heap_kb)))
	echo "RESULT contender=$who n=$n ok=$([ $crc = 0 ] && [ $src = 0 ] && echo 1 || echo 0)" \
		"setup_rate=${setup_rate:-} accept_rate=${accept_rate:-} echo_s=${echo_s:-}" \
		"server_rss_kb=$srss client_rss_kb=${crss:-} slab_kb=$slab" \
		"server_heap_bytes_per_conn=$heap_per" \
		"server_rss_bytes_per_conn=$rss_per server_heap_left_kb=$heap_left settled_s=${settled:-}" |
		tee -a "$OUT/results.txt"
}

for n in $COUNTS; do
	for who in $CONTENDERS; do one "$who" "$n"; done
done
"$PYTHON" "$HERE/report.py" "$OUT"
