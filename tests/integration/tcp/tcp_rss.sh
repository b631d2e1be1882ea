#!/usr/bin/env bash
# Flows spread over both queues of a two-queue net_memif link, one lib/tcp stack per queue
# in its own thread, in each of two processes (issue 18, "Every core"; tcp_rss.cc). Passes
# when both exit 0 (every connection's octets checked by the server, every verdict by the
# client, no flow on a queue its hash does not name) and each queue carried connections
# and frames in both processes.
#   tcp_rss.sh TCP_RSS OUT_DIR [CONNS] [BYTES]
set -u
PROG=$1 OUT=$2 CONNS=${3:-64} BYTES=${4:-1048576}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || [ -w /var/run/dpdk ] || [ -n "${XDG_RUNTIME_DIR:-}" ] ||
	skip "no writable DPDK runtime directory"
mkdir -p "$OUT"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT
vdev() { echo "net_memif0,role=$1,socket=$TMP/memif.sock,socket-abstract=no"; }
timeout 150 "$PROG" server --vdev "$(vdev server)" --ip 10.93.0.1 --port 7700 \
	--conns "$CONNS" --bytes "$BYTES" --queues 2 --core 0 >"$OUT/server.log" 2>&1 &
SPID=$!
sleep 0.5
timeout 150 "$PROG" client --vdev "$(vdev client)" --ip 10.93.0.2 --peer 10.93.0.1 --port 7700 \
	--conns "$CONNS" --bytes "$BYTES" --queues 2 --core 1 >"$OUT/client.log" 2>&1
CRC=$?
wait "$SPID"
SRC=$?
SPID=""
echo "--- client (exit $CRC)"; cat "$OUT/client.log"
echo "--- server (exit $SRC)"; cat "$OUT/server.log"
FAILED=0
[ $CRC = 0 ] && [ $SRC = 0 ] || { echo "FAIL: exit status client $CRC server $SRC"; FAILED=1; }
for role in client server; do
	for q in 0 1; do
		line=$(grep "^$role queue $q:" "$OUT/$role.log")
		conns=$(echo "$line" | sed -n 's/.* conns \([0-9]*\) .*/\1/p')
		frames=$(echo "$line" | sed -n 's/.* rx_frames \([0-9]*\).*/\1/p')
		[ "${conns:-0}" -gt 0 ] && [ "${frames:-0}" -gt 0 ] ||
			{ echo "FAIL: $role queue $q carried no connection (${line:-no line})"; FAILED=1; }
	done
done
exit $FAILED
