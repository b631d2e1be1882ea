#!/usr/bin/env bash
# esock-stat against live processes (issue 19; esock-stat(1)):
#   esock_stat_test.sh ESOCKRUN ESOCK_STAT
# A server and a client, each its own process under esockrun --ddp (ksock provider), move
# 3 000 000 octets one way over a DDPMODE connection and then stay up. esock-stat --json
# must show each of them: the connection in state connected with MPA v2 and CRC, the
# client's bytes_tx and the server's bytes_rx equal to what was sent, each kind of stream
# message the client sent counted as received by the server, the addresses crossed, the
# listener. Once the processes exit, their regions are gone.
set -u
ESOCKRUN=$1 STAT=$2
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		rm -f "/dev/shm/esock-stat.$p"  # a killed process leaves its region
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3
N=3000000

# The server: accepts one connection, reads N octets, says so, waits for the file "stop".
cat >"$TMP/server.py" <<PYEOF
import os, socket, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
open("$TMP/port", "w").write(str(l.getsockname()[1]))
c, _ = l.accept()
got = 0
while got < $N:
    b = c.recv(1 << 20)
    if not b: break
    got += len(b)
open("$TMP/server.got", "w").write(str(got))
while not os.path.exists("$TMP/stop"): time.sleep(0.05)
PYEOF
cat >"$TMP/client.py" <<PYEOF
import os, socket, time
c = socket.socket(); c.connect(("127.0.0.1", int(open("$TMP/port").read())))
c.sendall(bytes(range(256)) * ($N // 256) + b"x" * ($N % 256))
open("$TMP/client.sent", "w").write("$N")
while not os.path.exists("$TMP/stop"): time.sleep(0.05)
PYEOF
"$ESOCKRUN" -q --ddp -p ksock -e ESOCK_FALLBACK=fail -e ESOCK_ZCOPY=sync -- $PY "$TMP/server.py" 2>"$TMP/server.err" &
SPID=$!
PIDS+=($SPID)
for _ in $(seq 200); do [ -s "$TMP/port" ] && break; sleep 0.05; done
[ -s "$TMP/port" ] || fail "the server did not start: $(cat "$TMP/server.err")"
"$ESOCKRUN" -q --ddp -p ksock -e ESOCK_FALLBACK=fail -e ESOCK_ZCOPY=sync -- $PY "$TMP/client.py" 2>"$TMP/client.err" &
CPID=$!
PIDS+=($CPID)
for _ in $(seq 400); do [ -s "$TMP/server.got" ] && [ -s "$TMP/client.sent" ] && break; sleep 0.05; done
[ "$(cat "$TMP/server.got" 2>/dev/null)" = $N ] || fail "the transfer: $(cat "$TMP"/*.err)"
sleep 1.5  # an idle process publishes at least once a second

"$STAT" --json >"$TMP/all.json" || fail "esock-stat --json exit $?"
"$STAT" >"$TMP/all.txt" || fail "esock-stat exit $?"
$PY - "$TMP/all.json" $SPID $CPID $N <<'PYEOF' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
spid, cpid, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
procs = {p["pid"]: p for p in doc["processes"]}
def fail(msg):
    print("FAIL:", msg); print(json.dumps(doc, indent=1)[:3000]); sys.exit(1)
for pid in (spid, cpid):
    if pid not in procs: fail(f"pid {pid} not listed")
    if procs[pid]["provider"] != "ksock": fail(f"pid {pid}: provider {procs[pid]['provider']}")
def conn(pid):
    cs = [c for c in procs[pid]["connections"] if c["state"] == "connected"]
    if len(cs) != 1: fail(f"pid {pid}: {len(cs)} connected sockets")
    return cs[0]
s, c = conn(spid), conn(cpid)
for name, x in (("server", s), ("client", c)):
    if x["mode"] != "stream" or x["mpa_revision"] != 2 or x["mpa_crc"] != 1:
        fail(f"{name}: mode/MPA {x}")
if c["bytes_tx"] != n: fail(f"client bytes_tx {c['bytes_tx']} != {n}")
if s["bytes_rx"] != n: fail(f"server bytes_rx {s['bytes_rx']} != {n}")
# Each message the client sent, the server counted (a 3 MB sendall goes by rendezvous:
# into the server's sink by RDMA Write, or pulled after SRCAVAIL; smaller rests as DATA).
for tx, rx in (("data_tx", "data_rx"), ("srcavail_tx", "srcavail_rx"), ("sink_writes", "sinks_written")):
    if c[tx] != s[rx]: fail(f"client {tx} {c[tx]} != server {rx} {s[rx]}")
if c["data_tx"] + c["srcavail_tx"] + c["sink_writes"] == 0: fail("no stream message counted")
# Every octet written went by copy or by reference, once (the default mode: sync).
if c["zcopy_mode"] != 1: fail(f"client zcopy_mode {c['zcopy_mode']}, expected 1 (sync)")
if c["copied_tx"] + c["zcopy_tx"] != n or c["zcopy_tx"] == 0:
    fail(f"client copied_tx {c['copied_tx']} + zcopy_tx {c['zcopy_tx']} != {n} (or none by reference)")
if any(c[k] != 0 or s[k] != 0 for k in ("async_writes", "guard_faults", "cow_copies", "cow_octets", "async_reads", "async_read_octets")):
    fail(f"async counters in sync mode: {c}")
# Every FPDU one end framed, the other took in (the connection is idle now).
if c["fpdus_tx"] != s["fpdus_rx"] or s["fpdus_tx"] != c["fpdus_rx"] or c["fpdus_tx"] == 0:
    fail(f"FPDUs: client {c['fpdus_tx']}/{c['fpdus_rx']}, server {s['fpdus_tx']}/{s['fpdus_rx']}")
if c["terminated"] or s["terminated"]: fail("a Terminate on a good connection")
lis = [x for x in procs[spid]["connections"] if x["state"] == "listening"]
if not lis or not lis[0]["local"].startswith("127.0.0.1 port "): fail(f"the listener: {lis}")
if not any(x["state"] == "listening" for x in procs[spid]["connections"]):
    fail("the server's listener is not listed")
if s["peer"] != c["local"] or c["peer"] != s["local"]:
    fail(f"addresses: server {s['local']} <- {s['peer']}, client {c['local']} -> {c['peer']}")
print(f"ok: esock-stat --json: client bytes_tx {c['bytes_tx']}, server bytes_rx {s['bytes_rx']}, "
      f"DATA {c['data_tx']}, SRCAVAIL {c['srcavail_tx']}, into sinks {c['sink_writes']}, "
      f"MPA v{s['mpa_revision']} CRC")
PYEOF
grep -q "^pid $SPID (python3)" "$TMP/all.txt" || fail "text output: $(cat "$TMP/all.txt")"
"$STAT" -p $CPID | grep -q "octets tx $N rx 0" || fail "esock-stat -p: $("$STAT" -p $CPID)"
echo "ok: esock-stat and esock-stat -p"

touch "$TMP/stop"
timeout 30 tail --pid=$SPID -f /dev/null && timeout 30 tail --pid=$CPID -f /dev/null ||
	fail "the processes did not exit"
wait $SPID $CPID
PIDS=()  # reaped: their numbers may be another process's now
for pid in $SPID $CPID; do
	[ ! -e /dev/shm/esock-stat.$pid ] || fail "pid $pid's region is left after its exit"
done
"$STAT" -p $SPID 2>/dev/null && fail "esock-stat -p of an exited process succeeded"
echo "ok: regions removed at exit"
echo PASS
