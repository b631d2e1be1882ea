#!/usr/bin/env bash
# Real, unmodified Debian programs under esock (issue 14; docs/compatibility.md), one program in
# one mode per run, its results checked (SHA-256 of what went through, counts), not just its
# exit code:
#   run_app.sh ESOCKRUN OUT_DIR APP MODE
# MODE: plain (no esock), pass (esockrun: pass-through), ddp (esockrun --ddp -p ksock, with
# ESOCK_FALLBACK=fail so a run that did not really speak iWARP fails), ddp-dpdk (esockrun
# --ddp -p dpdk, server and client each on its own DPDK stack, joined by net_memif), or, for
# APP=plain_peers, ddp-fallback (the default policy against peers without esock, ksock) and
# ddp-dpdk-fallback (the same with esock on its DPDK stack over net_tap into a network
# namespace, the plain peers the kernel's TCP there).
# Prints "RESULT app mode PASS|FAIL seconds detail" and appends it to OUT_DIR/results.tsv.
# Exit 77 (skip) when the program is not installed.
set -u
ESOCKRUN=$(realpath "$1") OUT=$2 APP=$3 MODE=$4
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
TMP=$(mktemp -d)
PIDS=()
# Servers run in process groups of their own (bg), so what they forked goes with them.
cleanup() {
	for p in "${PIDS[@]}"; do { kill -KILL -- "-$p" "$p" && wait "$p"; } 2>/dev/null; done
	rm -rf "$TMP"
	[ -z "${NS:-}" ] || ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
PY=/usr/bin/python3

need() { for p in "$@"; do command -v "$p" >/dev/null || { echo "SKIP: no $p"; exit 77; }; done; }
# The command prefixes for the server (WS) and the client (WC) in this run's mode, and the
# address the client reaches the server at.
HOST=127.0.0.1
case $MODE in
plain) W="" ;;
pass) W="$ESOCKRUN --" ;;
ddp) W="$ESOCKRUN --ddp -p ksock -e ESOCK_FALLBACK=fail --" ;;
ddp-fallback) W="$ESOCKRUN --ddp -p ksock --" ;;
ddp-dpdk-fallback)
	# esock on its own DPDK stack over net_tap (10.87.0.2) inside a private network namespace;
	# the plain peers are the kernel's TCP there, on a macvlan over the TAP (10.87.0.1), as
	# tests/interop/tcp/tcp_kernel_suite.sh says why. ESOCK_DEBUG=1: the server's word that
	# it listens.
	{ [ "$(id -u)" = 0 ] && [ -c /dev/net/tun ]; } || { echo "SKIP: needs root and /dev/net/tun"; exit 77; }
	NS=esock-apps
	ip netns del $NS 2>/dev/null  # a killed earlier run's
	ip netns add $NS || { echo "cannot create netns $NS"; exit 1; }
	ip -n $NS link set lo up
	ip -n $NS tuntap add dev etap0 mode tap multi_queue
	ip netns exec $NS sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip -n $NS link set etap0 txqueuelen 10000 up
	ip -n $NS link add kmv0 link etap0 address 02:87:00:00:00:01 type macvlan mode bridge
	ip -n $NS link set kmv0 up
	ip -n $NS addr add 10.87.0.1/24 dev kmv0
	PLAIN="ip netns exec $NS"
	HOST=10.87.0.2
	KHOST=10.87.0.1
	W="$PLAIN $ESOCKRUN --ddp -p dpdk -e ESOCK_DEBUG=1 -e ESOCK_DPDK_IP=$HOST/24"
	W="$W -e ESOCK_DPDK_VDEV=net_tap0,iface=etap0,mac=02:87:00:00:00:02 --"
	;;
ddp-dpdk)
	# Two DPDK stacks joined by net_memif (server 10.99.0.1, client 10.99.0.2), as
	# tests/integration/esock_dpdk does; ESOCK_DEBUG=1 makes the server say when it listens.
	[ "$(id -u)" = 0 ] || [ -w /var/run/dpdk ] || { echo "SKIP: no DPDK runtime directory"; exit 77; }
	HOST=10.99.0.1
	memif="net_memif0,socket=$TMP/memif.sock,socket-abstract=no"
	dp="$ESOCKRUN --ddp -p dpdk -e ESOCK_FALLBACK=fail -e ESOCK_DEBUG=1"
	WS="$dp -e ESOCK_DPDK_VDEV=$memif,role=server -e ESOCK_DPDK_IP=$HOST/24 --"
	WC="$dp -e ESOCK_DPDK_VDEV=$memif,role=client -e ESOCK_DPDK_IP=10.99.0.2/24 --"
	;;
*) echo "bad mode $MODE" >&2; exit 2 ;;
esac
WS=${WS-$W}
WC=${WC-$W}
PLAIN=${PLAIN-}     # the prefix that runs a program without esock where the plain peers live
KHOST=${KHOST-$HOST}  # their address
# Below the kernel's ephemeral range (32768-60999), where a client's port could take it.
port() { echo $((20000 + RANDOM % 12000)); }
# Until the server listens on port $1 (bounded): the kernel's listening socket, or on the
# dpdk stack the server's own word for it (ESOCK_DEBUG, in $TMP/server.err).
wait_listen() {
	for _ in $(seq 1 500); do
		if [ "$MODE" = ddp-dpdk ] || [ -n "${2:-}" ]; then
			grep -q "esock: listening: port $1 " "${2:-$TMP/server.err}" 2>/dev/null && return 0
		else
			$PLAIN ss -ltnH "sport = :$1" | grep -q . && return 0
		fi
		sleep 0.02
	done
	echo "nothing listens on $1"; return 1
}
bg() { setsid "$@" & PIDS+=($!); }
sha() { sha256sum "$1" | cut -c1-64; }
START=$(date +%s.%N)
finish() { # STATUS DETAIL
	local secs
	secs=$(echo "$(date +%s.%N) - $START" | bc)
	printf 'RESULT\t%s\t%s\t%s\t%.2f\t%s\n' "$APP" "$MODE" "$1" "$secs" "$2" | tee -a "$OUT/results.tsv"
	# A ddp run must not have fallen back (ESOCK_FALLBACK=fail makes that a failure anyway).
	[ "$1" = PASS ] && exit 0 || exit 1
}
fail() { echo "$*"; for f in "$TMP"/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; finish FAIL "$*"; }
mb_per_s() { echo "scale=0; $1 / 1000000 / $2" | bc 2>/dev/null; }
timed() { # seconds of "$@"
	local t0 t1
	t0=$(date +%s.%N)
	"$@" || return 1
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc >"$TMP/elapsed"
}

head -c 50000000 /dev/urandom >"$TMP/data.bin"
SUM=$(sha "$TMP/data.bin")

case $APP in
socat_fork)  # fork-per-connection echo server: three clients, each echoes 50 MB
	need socat
	P=$(port)
	bg $WS socat TCP4-LISTEN:$P,reuseaddr,fork EXEC:cat 2>"$TMP/server.err"
	wait_listen "$P" || fail "server did not start"
	total=0
	for i in 1 2 3; do
		timed timeout 60 $WC socat -t 10 TCP4:$HOST:$P - <"$TMP/data.bin" >"$TMP/echo.$i" 2>"$TMP/client.err" ||
			fail "client $i failed"
		[ "$(sha "$TMP/echo.$i")" = "$SUM" ] || fail "client $i: echo differs ($(stat -c %s "$TMP/echo.$i") octets)"
		total=$(echo "$total + $(cat "$TMP/elapsed")" | bc)
	done
	finish PASS "3 x 50 MB echoed intact, $(mb_per_s 300000000 "$total") MB/s each way"
	;;
prefork)  # pre-forking echo server (tests/apps/prefork_echo.py): 3 workers accept, 6 clients
	need socat
	P=$(port)
	bg $WS $PY "$HERE/prefork_echo.py" "$HOST" "$P" 3 2>"$TMP/server.err"
	wait_listen "$P" || fail "server did not start"
	total=0
	for i in 1 2 3 4 5 6; do
		head -c 10000000 "$TMP/data.bin" >"$TMP/part.bin"
		timed timeout 60 $WC socat -t 10 TCP4:$HOST:$P - <"$TMP/part.bin" >"$TMP/echo.$i" 2>"$TMP/client.err" ||
			fail "client $i failed"
		cmp -s "$TMP/echo.$i" "$TMP/part.bin" || fail "client $i: echo differs ($(stat -c %s "$TMP/echo.$i") octets)"
		total=$(echo "$total + $(cat "$TMP/elapsed")" | bc)
	done
	finish PASS "6 x 10 MB echoed intact by 3 pre-forked workers, $(mb_per_s 60000000 "$total") MB/s"
	;;
http_curl)  # python3 http.server and curl: SHA-256 of a 50 MB file
	need curl
	P=$(port)
	bg $WS $PY -m http.server "$P" --bind $HOST --directory "$TMP" 2>"$TMP/server.err"
	wait_listen "$P" || fail "server did not start"
	timed timeout 60 $WC curl -sS -o "$TMP/got.bin" "http://$HOST:$P/data.bin" 2>"$TMP/client.err" ||
		fail "curl failed"
	[ "$(sha "$TMP/got.bin")" = "$SUM" ] || fail "download differs"
	finish PASS "50 MB, SHA-256 equal, $(mb_per_s 50000000 "$(cat "$TMP/elapsed")") MB/s"
	;;
nginx | lighttpd)  # static files: curl (SHA-256 of each, keep-alive, HTTP/1.0, a range), ab, wrk
	need curl ab wrk "$APP"
	P=$(port)
	www=$TMP/www
	mkdir -p "$www"
	: >"$www/empty.bin"
	for n in 1024 100003 1048583; do head -c "$n" "$TMP/data.bin" >"$www/f$n.bin"; done
	ln "$TMP/data.bin" "$www/f50m.bin"
	files="empty.bin f1024.bin f100003.bin f1048583.bin f50m.bin"
	if [ "$APP" = nginx ]; then
		# Debian's default shape: a master process and a forked worker (over dpdk its
		# connections reach the worker through the master, docs/sockets.md "fork"), sendfile.
		cat >"$TMP/nginx.conf" <<-EOF
			daemon off; user root; worker_processes 1; pid $TMP/nginx.pid;
			error_log $TMP/nginx-error.log info;
			events { worker_connections 1024; }
			http {
			  access_log $TMP/access.log; sendfile on; tcp_nopush on;
			  client_body_temp_path $TMP/t1; proxy_temp_path $TMP/t2; fastcgi_temp_path $TMP/t3;
			  uwsgi_temp_path $TMP/t4; scgi_temp_path $TMP/t5;
			  server { listen $HOST:$P; root $www; }
			}
		EOF
		bg $WS nginx -e "$TMP/nginx-error.log" -c "$TMP/nginx.conf" 2>"$TMP/server.err"
	else
		# One process, its own event loop (lighttpd's default), sendfile.
		cat >"$TMP/lighttpd.conf" <<-EOF
			server.document-root = "$www"
			server.bind = "$HOST"
			server.port = $P
			server.modules = ("mod_accesslog")
			accesslog.filename = "$TMP/access.log"
			server.max-keep-alive-requests = 100000
		EOF
		bg $WS lighttpd -D -f "$TMP/lighttpd.conf" 2>"$TMP/server.err"
	fi
	wait_listen "$P" || fail "$APP did not start"
	url=http://$HOST:$P
	# Each file on a connection of its own, then all of them on one keep-alive connection.
	for f in $files; do
		timeout 60 $WC curl -sS -f -o "$TMP/got.bin" "$url/$f" 2>"$TMP/client.err" || fail "curl $f failed"
		[ "$(sha "$TMP/got.bin")" = "$(sha "$www/$f")" ] || fail "$f differs ($(stat -c %s "$TMP/got.bin") octets)"
	done
	args=()
	for f in $files; do args+=(-o "$TMP/ka.$f" "$url/$f"); done
	conns=$(timeout 60 $WC curl -sS -f -w '%{num_connects} ' "${args[@]}" 2>"$TMP/client.err") ||
		fail "curl keep-alive failed"
	for f in $files; do
		[ "$(sha "$TMP/ka.$f")" = "$(sha "$www/$f")" ] || fail "keep-alive: $f differs"
	done
	[ "$(echo $conns | tr ' ' '+' | bc)" = 1 ] || fail "5 files took connections '$conns', not 1"
	timeout 60 $WC curl -sS -f -0 -o "$TMP/got.bin" "$url/f1048583.bin" 2>"$TMP/client.err" ||
		fail "curl HTTP/1.0 failed"
	[ "$(sha "$TMP/got.bin")" = "$(sha "$www/f1048583.bin")" ] || fail "HTTP/1.0 download differs"
	timeout 60 $WC curl -sS -f -r 1000-200999 -o "$TMP/got.bin" "$url/f50m.bin" 2>"$TMP/client.err" ||
		fail "curl range failed"
	tail -c +1001 "$www/f50m.bin" | head -c 200000 | cmp -s - "$TMP/got.bin" || fail "range differs"
	# ab: HTTP/1.0, a connection per request; the server's access log must count them too.
	before=$(grep -c ' "GET /f1024.bin HTTP/1.0" 200 ' "$TMP/access.log" 2>/dev/null)
	timed timeout 60 $WC ab -q -n 2000 -c 8 "$url/f1024.bin" >"$TMP/ab.out" 2>"$TMP/client.err" || fail "ab failed"
	grep -q "^Complete requests: *2000$" "$TMP/ab.out" && grep -q "^Failed requests: *0$" "$TMP/ab.out" &&
		! grep -q "Non-2xx" "$TMP/ab.out" || fail "ab: $(grep -E 'requests|Non-2xx' "$TMP/ab.out" | tr -s ' ' | tr '\n' ' ')"
	ab_rps=$(awk '/^Requests per second/ { printf "%d", $4 }' "$TMP/ab.out")
	for _ in $(seq 1 50); do  # nginx writes its log line after the response
		served=$(( $(grep -c ' "GET /f1024.bin HTTP/1.0" 200 ' "$TMP/access.log") - ${before:-0} ))
		[ "$served" -ge 2000 ] && break
		sleep 0.1
	done
	[ "$served" = 2000 ] || fail "the server logged $served of ab's 2000 requests"
	# wrk: keep-alive, 16 connections, 2 s of 100 KB responses, none failed or cut short.
	timeout 60 $WC wrk -t1 -c16 -d2s "$url/f100003.bin" >"$TMP/wrk.out" 2>"$TMP/client.err" || fail "wrk failed"
	reqs=$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")
	! grep -qE "Socket errors|Non-2xx" "$TMP/wrk.out" && [ "${reqs:-0}" -gt 100 ] ||
		fail "wrk: $(grep -E 'requests in|errors|Non-2xx' "$TMP/wrk.out" | tr -s ' ' | tr '\n' ' ')"
	wrk_rps=$(awk '/^Requests\/sec/ { printf "%d", $2 }' "$TMP/wrk.out")
	finish PASS "5 files (0 B-50 MB) SHA-256 equal each alone, on 1 keep-alive connection, HTTP/1.0, a range; ab 2000 x 1 KB (HTTP/1.0) all 200 and logged: $ab_rps/s; wrk -c16 100 KB keep-alive: $wrk_rps/s"
	;;
nc)  # netcat one way: SHA-256 of 50 MB
	need nc
	P=$(port)
	bg $WS nc -4 -l -N -p "$P" >"$TMP/got.bin" 2>"$TMP/server.err"
	SP=$!
	wait_listen "$P" || fail "nc -l did not start"
	timed timeout 60 $WC nc -4 -N $HOST "$P" <"$TMP/data.bin" 2>"$TMP/client.err" || fail "nc failed"
	timeout 20 tail --pid="$SP" -f /dev/null
	[ "$(sha "$TMP/got.bin")" = "$SUM" ] || fail "received data differs ($(stat -c %s "$TMP/got.bin") octets)"
	finish PASS "50 MB, SHA-256 equal, $(mb_per_s 50000000 "$(cat "$TMP/elapsed")") MB/s"
	;;
redis)  # redis-server and redis-benchmark, protected mode on and off, -c 1 and -c 8
	need redis-server redis-benchmark redis-cli
	detail=""
	# Protected mode lets only loopback clients in: over dpdk the client is 10.99.0.2.
	prots="yes no"
	[ "$MODE" != ddp-dpdk ] || prots=no
	for prot in $prots; do
		P=$(port)
		bg $WS redis-server --port "$P" --save "" --appendonly no --protected-mode "$prot" \
			>"$TMP/server.err" 2>&1
		wait_listen "$P" || fail "redis-server did not start"
		for c in 1 8; do
			out=$(timeout 60 $WC redis-benchmark -h $HOST -p "$P" -c "$c" -n 5000 -t set,get -q -r 1000 2>"$TMP/client.err" | tr '\r' '\n' | grep -E "^(SET|GET):.*requests per second" | tr '\n' ' ')
			echo "$out" | grep -q "SET: .*GET: " || fail "redis-benchmark -c $c (protected-mode $prot): '$out'"
			detail="$detail protected-$prot/c$c:$(echo "$out" | grep -oE 'GET: [0-9]+' | cut -d' ' -f2)/s"
		done
		# The data is there: a value written and read back through the same mode.
		$WC redis-cli -h $HOST -p "$P" set esock-check "v$P" >/dev/null 2>&1
		[ "$($WC redis-cli -h $HOST -p "$P" get esock-check 2>/dev/null)" = "v$P" ] || fail "redis GET after SET"
		keys=$($WC redis-cli -h $HOST -p "$P" dbsize 2>/dev/null)
		[ "${keys:-0}" -gt 1 ] || fail "redis has $keys keys after the benchmark"
		$WC redis-cli -h $HOST -p "$P" shutdown nosave >/dev/null 2>&1
		for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
		wait 2>/dev/null
		PIDS=()
	done
	finish PASS "SET+GET 5000 each, GETs:$detail"
	;;
iperf3)  # default server (listens on ::), client -t 2, then -R, then -P 4; bytes counted by both
	need iperf3
	detail=""
	for opt in "" "-R" "-P 4"; do
		P=$(port)
		# Over dpdk the server binds the stack's address (its default, ::, is IPv6: kernel).
		bind=()
		[ "$MODE" != ddp-dpdk ] || bind=(-B "$HOST")
		bg $WS iperf3 -s -1 -p "$P" "${bind[@]}" >"$TMP/server.err" 2>&1
		wait_listen "$P" || fail "iperf3 -s did not start"
		# shellcheck disable=SC2086
		timeout 60 $WC iperf3 -c $HOST -p "$P" -t 2 $opt -J >"$TMP/c.json" 2>"$TMP/client.err" ||
			fail "iperf3 $opt failed: $(grep -o '"error".*' "$TMP/c.json")"
		read -r sent recv gbps < <($PY -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(e["sum_sent"]["bytes"], e["sum_received"]["bytes"], round(e["sum_received"]["bits_per_second"]/1e9,1))' "$TMP/c.json")
		[ "${recv:-0}" -gt 0 ] && [ "$recv" -le "$sent" ] || fail "iperf3 $opt: sent $sent received $recv"
		detail="$detail ${opt:-default}:${gbps}Gbit/s"
		wait 2>/dev/null
		PIDS=()
	done
	finish PASS "$detail"
	;;
asyncio)  # a python asyncio echo server and 8 concurrent clients, 1 MiB each
	P=$(port)
	bg $WS $PY "$HERE/asyncio_echo.py" server "$P" $HOST 2>"$TMP/server.err"
	wait_listen "$P" || fail "server did not start"
	out=$(timeout 60 $WC $PY "$HERE/asyncio_echo.py" client "$P" 8 $HOST 2>"$TMP/client.err") || fail "client: $out"
	finish PASS "$out"
	;;
openssl)  # TLS 1.3: s_server -WWW serves the 50 MB file, s_client fetches it
	need openssl
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
		-days 1 -subj /CN=esock-test >/dev/null 2>&1 || fail "no certificate"
	P=$(port)
	(cd "$TMP" && exec $WS openssl s_server -WWW -tls1_3 -accept "$HOST:$P" -cert cert.pem -key key.pem \
		>/dev/null 2>"$TMP/server.err") &
	PIDS+=($!)
	wait_listen "$P" || fail "s_server did not start"
	req() { printf 'GET /data.bin HTTP/1.0\r\n\r\n' | $WC openssl s_client -quiet -tls1_3 -connect "$HOST:$P"; }
	timed timeout 60 bash -c "$(declare -f req); WC='$WC' HOST=$HOST P=$P req" >"$TMP/got.raw" 2>"$TMP/client.err" ||
		fail "s_client failed"
	$PY -c 'import sys; d=open(sys.argv[1],"rb").read(); i=d.index(b"\r\n\r\n"); open(sys.argv[2],"wb").write(d[i+4:])' \
		"$TMP/got.raw" "$TMP/got.bin" || fail "no HTTP answer"
	[ "$(sha "$TMP/got.bin")" = "$SUM" ] || fail "decrypted data differs ($(stat -c %s "$TMP/got.bin") octets)"
	finish PASS "TLS 1.3, 50 MB, SHA-256 equal, $(mb_per_s 50000000 "$(cat "$TMP/elapsed")") MB/s"
	;;
plain_peers)  # esock against peers without esock, no byte misdelivered
	case $MODE in ddp-fallback | ddp-dpdk-fallback) ;; *)
		echo "SKIP: plain_peers runs in modes ddp-fallback and ddp-dpdk-fallback"; exit 77 ;;
	esac
	need socat
	printf 'the application line\n' >"$TMP/msg"
	MSUM=$(sha "$TMP/msg")
	detail=""
	# esock client -> plain server (talkative: a banner first; silent: waits for a line). Two
	# clients: socat (a blocking connect) and python asyncio (a non-blocking one whose socket
	# is in an epoll set while esock finds out, then falls back).
	for client in socat asyncio; do
		for kind in talkative silent; do
			P=$(port)
			rec="$TMP/$client.$kind"
			mkdir -p "$rec"
			$PLAIN $PY "$HERE/plain_recorder.py" "$P" "$rec" "$kind" "$KHOST" 2>"$TMP/recorder.err" &
			RP=$!
			PIDS+=("$RP")
			wait_listen "$P" || fail "recorder did not start"
			if [ "$client" = socat ]; then
				out=$(timeout 20 $W socat -t 2 - TCP4:"$KHOST":"$P" <"$TMP/msg" 2>"$TMP/client.err")
			else
				out=$(timeout 20 $W $PY "$HERE/asyncio_echo.py" line "$P" "$KHOST" <"$TMP/msg" 2>"$TMP/client.err")
			fi
			touch "$rec/stop"
			wait "$RP" 2>/dev/null
			who="$client to a $kind server"
			grep -q "does not speak esock" "$TMP/client.err" || fail "$who: no fallback line"
			echo "$out" | grep -q "ok $MSUM" || fail "$who: the application's line did not arrive alone: '$out'"
			[ "$kind" = silent ] || echo "$out" | grep -q "^banner$" || fail "$who: banner lost"
			last=$(find "$rec" -name 'conn.*' | sort -V | tail -1)
			[ "$(sha "$last")" = "$MSUM" ] || fail "$who: the plain connection got more than the line"
			detail="$detail $client->${kind}:ok($(find "$rec" -name 'conn.*' | wc -l) conns)"
		done
	done
	# plain client -> esock server (an echo): talkative sends at once, silent waits 1 s first.
	for kind in talkative silent; do
		P=$(port)
		bg $W socat TCP4-LISTEN:"$P",reuseaddr PIPE 2>"$TMP/server.$kind.err"
		SP=$!
		if [ -n "$PLAIN" ]; then
			wait_listen "$P" "$TMP/server.$kind.err" || fail "esock server did not start"
		else
			wait_listen "$P" || fail "esock server did not start"
		fi
		if [ "$kind" = silent ]; then
			out=$( (sleep 1; cat "$TMP/msg") | timeout 20 $PLAIN socat -t 2 - TCP4:"$HOST":"$P")
		else
			out=$(timeout 20 $PLAIN socat -t 2 - TCP4:"$HOST":"$P" <"$TMP/msg")
		fi
		[ "$out" = "the application line" ] || fail "plain $kind client: echo '$out'"
		grep -q "does not speak esock" "$TMP/server.$kind.err" || fail "plain $kind client: no fallback line"
		detail="$detail ${kind}->esock:ok"
		# One esock process on the TAP at a time: two would share its queues, the kernel
		# spreading each flow's frames to either (the next one's connection then stalls).
		timeout 20 tail --pid="$SP" -f /dev/null
	done
	# Plain clients of a pre-forking server (its workers accept on the listener they
	# inherited: on dpdk through the parent, which hands them the plain relay's end).
	P=$(port)
	bg $W $PY "$HERE/prefork_echo.py" 0.0.0.0 "$P" 2 2>"$TMP/prefork.err"
	PP=$!
	if [ -n "$PLAIN" ]; then
		wait_listen "$P" "$TMP/prefork.err" || fail "pre-forking server did not start"
	else
		wait_listen "$P" || fail "pre-forking server did not start"
	fi
	head -c 5000000 "$TMP/data.bin" >"$TMP/part.bin"
	for i in 1 2 3; do
		timeout 30 $PLAIN socat -t 10 TCP4:"$HOST":"$P" - <"$TMP/part.bin" >"$TMP/pecho.$i" ||
			fail "plain client $i of the pre-forking server failed"
		cmp -s "$TMP/pecho.$i" "$TMP/part.bin" ||
			fail "plain client $i of the pre-forking server: echo differs ($(stat -c %s "$TMP/pecho.$i") octets)"
	done
	detail="$detail prefork:3x5MB"
	kill -TERM "$PP"  # (it kills its workers) and leaves the TAP to the next esock process
	timeout 20 tail --pid="$PP" -f /dev/null
	# Bulk, both ways: 50 MB through netcat (the plain connection carries it whole; on dpdk
	# the stack's relay moves it, and nc quits on the first EINTR its poll sees).
	need nc
	P=$(port)
	bg $W nc -4 -l -N -p "$P" >"$TMP/got.in" 2>"$TMP/nc_server.err"
	SP=$!
	if [ -n "$PLAIN" ]; then
		wait_listen "$P" "$TMP/nc_server.err" || fail "esock nc -l did not start"
	else
		wait_listen "$P" || fail "esock nc -l did not start"
	fi
	timed timeout 60 $PLAIN nc -4 -N "$HOST" "$P" <"$TMP/data.bin" || fail "plain nc failed"
	timeout 20 tail --pid="$SP" -f /dev/null
	[ "$(sha "$TMP/got.in")" = "$SUM" ] || fail "plain nc -> esock nc -l: data differs ($(stat -c %s "$TMP/got.in") octets)"
	detail="$detail nc->esock:50MB,$(mb_per_s 50000000 "$(cat "$TMP/elapsed")")MB/s"
	# The other way the plain server must take a second connection (the probe carried the
	# MPA Request, docs/sockets.md): a one-shot `nc -l` would have served the probe alone.
	P=$(port)
	mkdir -p "$TMP/bulk"
	bg $PLAIN socat -u TCP4-LISTEN:"$P",bind="$KHOST",reuseaddr,fork \
		SYSTEM:"cat > \$(mktemp -p $TMP/bulk conn.XXXXXX)" 2>"$TMP/socat_plain.err"
	wait_listen "$P" || fail "plain socat did not start"
	timed timeout 60 $W nc -4 -N "$KHOST" "$P" <"$TMP/data.bin" 2>"$TMP/nc_client.err" || fail "esock nc failed"
	got=""
	for _ in $(seq 1 100); do
		for f in "$TMP"/bulk/conn.*; do [ "$(stat -c %s "$f" 2>/dev/null)" = 50000000 ] && got=$f; done
		[ -n "$got" ] && break
		sleep 0.1
	done
	[ -n "$got" ] && [ "$(sha "$got")" = "$SUM" ] ||
		fail "esock nc -> plain socat: data differs ($(stat -c %s "$TMP"/bulk/conn.* | tr '\n' ' ')octets)"
	detail="$detail esock->socat:50MB,$(mb_per_s 50000000 "$(cat "$TMP/elapsed")")MB/s"
	finish PASS "$detail"
	;;
*)
	echo "unknown app $APP"
	exit 2
	;;
esac
