#!/usr/bin/env bash
# bench/scale/web.sh: a real web server and a real key-value store on top (issue 18).
# Unmodified Debian programs, each pair run the same way for every contender:
#   * nginx serving static files, loaded by wrk (HTTP/1.1 keep-alive: requests/s and the
#     99th percentile latency against file size at 16 connections, and against the number
#     of connections for 1 KiB) and by ab (HTTP/1.0, a connection per request);
#   * redis-server loaded by redis-benchmark (SET and GET, 1 and 16 clients).
# Contenders: the kernel's TCP over loopback; esock DDPMODE on its DPDK stack, server and
# client each on their own stack joined by net_memif, in run-to-completion mode (nginx with
# master_process off: the worker is the process that owns the stack); and nginx in Debian's
# default shape (master + forked worker), whose connections reach the worker through the
# master's relay (docs/sockets.md, "fork"). CPU seconds of both ends are taken beside each
# number (server: its processes' utime+stime over the run; client: GNU time).
# Writes OUT/web.txt (RESULT lines), OUT/web.md and OUT/web_*.png (web_report.py).
#
#   bench/scale/web.sh [OUT_DIR] [--build DIR] [--seconds S] [--contenders "kernel dpdk"]
#
# OUT_DIR defaults to bench/scale/out (gitignored). Nothing here fails on a number.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/out"
BUILD="$REPO/build"
SECS=3
CONTENDERS="kernel dpdk dpdk-fork"
SIZES="1024 16384 262144 1048576"
CONCS="1 4 16 64 256"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD="$2"; shift 2 ;;
	--seconds) SECS="$2"; shift 2 ;;
	--contenders) CONTENDERS="$2"; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "web.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT="$1"; shift ;;
	esac
done
ESOCKRUN="$BUILD/tools/esockrun/esockrun"
[ -x "$ESOCKRUN" ] || { echo "web.sh: no $ESOCKRUN (cmake --build build)" >&2; exit 1; }
for p in nginx wrk ab redis-server redis-benchmark /usr/bin/time; do
	command -v "$p" >/dev/null || { echo "web.sh: no $p (scripts/install-deps.sh)" >&2; exit 1; }
done
PYTHON="${PYTHON:-/usr/bin/python3}"
mkdir -p "$OUT"
rm -f "$OUT"/web.txt "$OUT"/web.md "$OUT"/web_*.png
TMP=$(mktemp -d)
SPID=""
stop_server() {
	[ -n "$SPID" ] || return 0
	kill -TERM -- "-$SPID" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL -- "-$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=""
}
trap 'stop_server; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/www"
for n in $SIZES; do head -c "$n" /dev/urandom >"$TMP/www/f$n.bin"; done
{
	echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpus $(nproc)"
	echo "nginx $(nginx -v 2>&1 | sed 's/.*\///') redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
} >"$OUT/web-meta.txt"

S_IP=10.96.0.1
# The prefixes for the server (WS) and the client (WC) of contender $1, and the address.
wrappers() {
	local memif="net_memif0,socket=$TMP/memif.sock,socket-abstract=no"
	case $1 in
	kernel) WS=(); WC=(); HOST=127.0.0.1 ;;
	dpdk | dpdk-fork)
		HOST=$S_IP
		WS=("$ESOCKRUN" --ddp -p dpdk -e ESOCK_FALLBACK=fail -e ESOCK_DEBUG=1
			-e "ESOCK_DPDK_VDEV=$memif,role=server" -e "ESOCK_DPDK_IP=$S_IP/24" --)
		WC=("$ESOCKRUN" --ddp -p dpdk -e ESOCK_FALLBACK=fail
			-e "ESOCK_DPDK_VDEV=$memif,role=client" -e "ESOCK_DPDK_IP=10.96.0.2/24" --)
		;;
	esac
}
# CPU seconds (user + system) of the server's process group so far.
server_cpu() {
	local t=0 p
	for p in $(pgrep -g "$SPID"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "scale=2; $t / $(getconf CLK_TCK)" | bc
}
# Waits until the server listens on port $1: the kernel's socket, or esock's word for it.
wait_listen() {
	for _ in $(seq 1 500); do
		if [ "$WHO" = kernel ]; then
			ss -ltnH "sport = :$1" | grep -q . && return 0
		else
			grep -q "esock: listening: port $1 " "$TMP/server.err" 2>/dev/null && return 0
		fi
		sleep 0.02
	done
	echo "web.sh: $WHO: nothing listens on $1" >&2
	return 1
}
start_nginx() {
	local master=off
	[ "$WHO" = dpdk-fork ] && master=on
	cat >"$TMP/nginx.conf" <<-EOF
		daemon off; master_process $master; user root; worker_processes 1; pid $TMP/nginx.pid;
		error_log $TMP/nginx-error.log;
		events { worker_connections 4096; }
		http {
		  access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
		  client_body_temp_path $TMP/t1; proxy_temp_path $TMP/t2; fastcgi_temp_path $TMP/t3;
		  uwsgi_temp_path $TMP/t4; scgi_temp_path $TMP/t5;
		  server { listen $HOST:$PORT; root $TMP/www; }
		}
	EOF
	: >"$TMP/server.err"
	setsid "${WS[@]}" nginx -e "$TMP/nginx-error.log" -c "$TMP/nginx.conf" 2>"$TMP/server.err" &
	SPID=$!
	wait_listen "$PORT"
}
# client TOOL ARGS...: runs the load generator; its output in $TMP/client.out, its CPU
# seconds in CCPU, the server's over the run in SCPU.
client() {
	local s0
	s0=$(server_cpu)
	/usr/bin/time -f "%U %S" -o "$TMP/time" timeout 120 "${WC[@]}" "$@" >"$TMP/client.out" 2>"$TMP/client.err"
	SCPU=$(echo "$(server_cpu) - $s0" | bc)
	CCPU=$(awk '{ print $1 + $2 }' "$TMP/time" 2>/dev/null)
}
# wrk's 99th percentile in microseconds.
wrk_p99_us() {
	awk '$1 == "99%" { v = $2; u = 1;
		if (v ~ /us$/) u = 1; else if (v ~ /ms$/) u = 1000; else if (v ~ /s$/) u = 1000000;
		sub(/[a-z]+$/, "", v); printf "%.0f", v * u }' "$TMP/client.out"
}
result() { echo "RESULT contender=$WHO $*" | tee -a "$OUT/web.txt"; }
wrk_one() { # KIND SIZE CONNS
	local t=1
	[ "$3" -ge 16 ] && t=2
	client wrk -t"$t" -c"$3" -d"${SECS}s" --latency "http://$HOST:$PORT/f$2.bin"
	local rps errs=0
	rps=$(awk '/^Requests\/sec/ { printf "%d", $2 }' "$TMP/client.out")
	grep -qE "Socket errors|Non-2xx" "$TMP/client.out" && errs=1
	result "test=wrk-$1 size=$2 conns=$3 rps=${rps:-} p99_us=$(wrk_p99_us) errors=$errs" \
		"server_cpu_s=$SCPU client_cpu_s=${CCPU:-}"
}

for WHO in $CONTENDERS; do
	wrappers "$WHO"
	PORT=$((20000 + RANDOM % 10000))
	if ! start_nginx; then stop_server; continue; fi
	for n in $SIZES; do wrk_one size "$n" 16; done
	for c in $CONCS; do wrk_one conns 1024 "$c"; done
	client ab -q -n 3000 -c 16 "http://$HOST:$PORT/f1024.bin"
	result "test=ab size=1024 conns=16" \
		"rps=$(awk '/^Requests per second/ { printf "%d", $4 }' "$TMP/client.out")" \
		"p99_us=$(awk '$1 == "99%" { print $2 * 1000 }' "$TMP/client.out")" \
		"errors=$(awk '/^Failed requests/ { print $3 }' "$TMP/client.out")" \
		"server_cpu_s=$SCPU client_cpu_s=${CCPU:-}"
	stop_server
	[ "$WHO" = dpdk-fork ] && continue  # redis does not fork to serve
	PORT=$((20000 + RANDOM % 10000))
	: >"$TMP/server.err"
	setsid "${WS[@]}" redis-server --bind "$HOST" --port "$PORT" --save "" --appendonly no \
		--protected-mode no >"$TMP/server.err" 2>&1 &
	SPID=$!
	if wait_listen "$PORT"; then
		for c in 1 16; do
			client redis-benchmark -h "$HOST" -p "$PORT" -c "$c" -n 50000 -r 10000 -t set,get --csv
			for op in SET GET; do
				# --csv: "test","rps","avg_latency_ms","min_latency_ms","p50","p95","p99","max"
				line=$(grep "^\"$op\"" "$TMP/client.out" | tr -d '"')
				result "test=redis-$op conns=$c rps=$(cut -d, -f2 <<<"$line" | cut -d. -f1)" \
					"p99_us=$(awk -F, '{ printf "%.0f", $7 * 1000 }' <<<"$line")" \
					"server_cpu_s=$SCPU client_cpu_s=${CCPU:-}"
			done
		done
	fi
	stop_server
done
"$PYTHON" "$HERE/web_report.py" "$OUT"
