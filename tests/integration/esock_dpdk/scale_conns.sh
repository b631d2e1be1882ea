#!/usr/bin/env bash
# Many connections on one dpdk stack (issue 18): conn_scale (tests/integration/esock, a plain
# epoll program built without esock) as server and client, each under
# `esockrun --ddp -p dpdk`, joined by net_memif. The client opens N connections (256
# connects in flight), sends on each a message naming it and checks the echo octet for
# octet, closes them all, ROUNDS times (churn). Passes when
#   * both exit 0 (every echo matched; the server saw every connection come and go);
#   * the server's heap per held connection stays under HEAP_PER_CONN_MAX octets (ESTP's
#     buffers and the engine's queues are committed only as they are used);
#   * each held connection takes one descriptor in each process, its number, as a kernel
#     TCP socket does (the number is its readiness socket; esock keeps no other);
#   * the server's heap after the last close is back within SLACK_KB of where it started
#     (its "end" line: after the stack's own closes, at most 20 s).
# The count is bounded by RLIMIT_NOFILE (20000 hard on this machine): 10,000 fit.
#   scale_conns.sh CONN_SCALE ESOCKRUN OUT_DIR [N] [ROUNDS]
set -u
PROG=$1 ESOCKRUN=$2 OUT=$3 N=${4:-2000} ROUNDS=${5:-2}
HEAP_PER_CONN_MAX=$((64 * 1024))
SLACK_KB=2048
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || [ -w /var/run/dpdk ] || [ -n "${XDG_RUNTIME_DIR:-}" ] ||
	skip "no writable DPDK runtime directory"
mkdir -p "$OUT"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT
vdev() { echo "net_memif0,role=$1,socket=$TMP/memif.sock,socket-abstract=no"; }
mkfifo "$TMP/fifo"
timeout 150 "$ESOCKRUN" --ddp -p dpdk -e "ESOCK_DPDK_VDEV=$(vdev server)" -e ESOCK_DPDK_IP=10.94.0.1/24 \
	"$PROG" server -n "$N" -r "$ROUNDS" >"$TMP/fifo" 2>"$OUT/server.err" &
SPID=$!
exec 3<"$TMP/fifo"
read -r start <&3 && read -r word port <&3 && [ "$word" = port ] || {
	echo "FAIL: the server did not start"; cat "$OUT/server.err"; exit 1; }
echo "$start" >"$OUT/server.log"
cat <&3 >>"$OUT/server.log" &
CAT=$!
timeout 150 "$ESOCKRUN" --ddp -p dpdk -e "ESOCK_DPDK_VDEV=$(vdev client)" -e ESOCK_DPDK_IP=10.94.0.2/24 \
	"$PROG" client -n "$N" -r "$ROUNDS" 10.94.0.1 "$port" >"$OUT/client.log" 2>&1
CRC=$?
wait "$SPID"
SRC=$?
SPID=""
wait $CAT
echo "--- client (exit $CRC)"; cat "$OUT/client.log"
echo "--- server (exit $SRC)"; cat "$OUT/server.log"; tail -5 "$OUT/server.err"
FAILED=0
[ $CRC = 0 ] && [ $SRC = 0 ] || { echo "FAIL: exit status client $CRC server $SRC"; FAILED=1; }
[ "$(grep -c ", 0 wrong," "$OUT/client.log")" = "$ROUNDS" ] ||
	{ echo "FAIL: not every round's $N echoes were checked"; FAILED=1; }
kb() { sed -n "s/^server: mem $1 .* heap_kb=\([0-9]*\).*/\1/p" "$OUT/server.log"; }
fds() { sed -n "s/^$1: mem $2 .* fds=\([0-9]*\).*/\1/p" "$OUT/$1.log" | head -1; }
for role in server client; do
	f0=$(fds $role start) f1=$(fds $role held)
	if [ -z "$f0" ] || [ -z "$f1" ]; then
		echo "FAIL: the $role's descriptor counts are missing"; FAILED=1
	else
		echo "$role descriptors: $f0 at the start, $f1 with $N connections"
		# (slack: the client's "start" comes before the stack it starts opens its own)
		[ $((f1 - f0)) -le $((N + N / 50 + 64)) ] ||
			{ echo "FAIL: $role: $((f1 - f0)) descriptors for $N connections"; FAILED=1; }
	fi
done
h0=$(kb start) h1=$(kb held) h2=$(kb end)
if [ -z "$h0" ] || [ -z "$h1" ] || [ -z "$h2" ]; then
	echo "FAIL: the server's memory lines are missing"; FAILED=1
else
	per=$(((h1 - h0) * 1024 / N))
	echo "server heap: $per octets per held connection, $((h2 - h0)) KiB left after the close"
	[ "$per" -le $HEAP_PER_CONN_MAX ] ||
		{ echo "FAIL: $per octets of heap per connection (at most $HEAP_PER_CONN_MAX)"; FAILED=1; }
	[ $((h2 - h0)) -le $SLACK_KB ] ||
		{ echo "FAIL: the heap did not come back ($((h2 - h0)) KiB over its start)"; FAILED=1; }
fi
exit $FAILED
