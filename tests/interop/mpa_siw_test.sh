#!/usr/bin/env bash
# esock's MPA, DDP and RDMAP against Linux soft-iWARP (siw) in a QEMU guest, over the
# kernel-socket transport. Uses the project's harness (tests/interop/harness) and rdma-core's
# rdma_server / rdma_client in the guest, which exchange one Send each way:
#   1. esock initiator -> siw responder (rdma_server), CRC requested, then CRC not requested;
#   2. esock initiator asking for markers -> siw rejects (it has none): a clear error, no hang;
#   3. siw initiator (rdma_client) -> esock responder.
# The run is captured on the lab bridge and tshark's iWARP dissectors must decode it with
# no bad CRC and nothing malformed. The siw responder is the "tunable" build with
# fix_accept_race=1: stock siw 6.1 stalls when an initiator's first FPDU follows its MPA
# Reply at once (tests/interop/harness/README.md); siw as initiator is unaffected.
# Usage: mpa_siw_test.sh PATH/TO/iwarp_connect OUTPUT_DIR     (root; QEMU under TCG)
set -euo pipefail
bin=$(readlink -f "$1")
out=$(mkdir -p "$2" && readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
H=$here/harness/siw.sh
guest=esock-mpa

# Skip (CTest's code 77) only when QEMU guests cannot run here at all.
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/net/tun ]; then
  echo "SKIP: the siw harness needs root and /dev/net/tun (TAP devices) to run QEMU guests"
  exit 77
fi
"$here/harness/install-deps.sh"
"$here/harness/build.sh" >"$out/harness-build.log" 2>&1 || { cat "$out/harness-build.log"; exit 1; }
cleanup() { [ -n "${cap_pid:-}" ] && kill "$cap_pid" 2>/dev/null; "$H" teardown >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$H" teardown >/dev/null 2>&1 || true
"$H" start "$guest" 0 --siw=tunable,fix_accept_race=1 >"$out/guest-start.log" 2>&1 ||
  { cat "$out/guest-start.log"; exit 1; }

cap=$out/esock-siw.pcapng
rm -f "$cap"
"$H" host dumpcap -q -i siwbr0 -f "tcp or icmp" -w "$cap" 2>"$out/dumpcap.err" &
cap_pid=$!
for _ in $(seq 1 100); do  # the capture is live once it has recorded our ping
  "$H" host ping -c1 -W1 10.77.0.2 >/dev/null 2>&1 || true
  n=$(capinfos -Tmc "$cap" 2>/dev/null | tail -1 | cut -d, -f2 || true)
  [ "${n:-0}" -gt 0 ] 2>/dev/null && break
  sleep 0.1
done

fail=0
check() {  # check NAME CONDITION-RESULT
  if [ "$2" = ok ]; then echo "PASS  $1"; else echo "FAIL  $1"; fail=1; fi
}

server_job() {  # starts rdma_server in the guest, waits until it listens, prints the job id
  "$H" exec -d -l 7471 -t 20 "$guest" 'exec timeout 60 rdma_server -s 10.77.0.2 -p 7471' || true
}

for crc in crc nocrc; do
  opts=(--exchange 16 --timeout 20000)
  [ $crc = nocrc ] && opts+=(--no-crc)
  job=$(server_job)
  "$H" host "$bin" connect 10.77.0.2 7471 "${opts[@]}" >"$out/initiator-$crc.log" 2>&1 && r=ok || r=bad
  "$H" wait -t 30 "$guest" "$job" >"$out/rdma_server-$crc.log" 2>&1 || true
  grep -q "end 0" "$out/rdma_server-$crc.log" || r=bad
  check "esock initiator -> siw rdma_server ($crc)" $r
  sed 's/^/      /' "$out/initiator-$crc.log"
done

job=$(server_job)
"$H" host "$bin" connect 10.77.0.2 7471 --markers --timeout 20000 >"$out/initiator-markers.log" 2>&1 && r=bad || r=ok
grep -q "rejected" "$out/initiator-markers.log" || r=bad
"$H" kill "$guest" "$job" >/dev/null 2>&1 || true
check "esock initiator asking for markers -> siw rejects, esock reports it" $r
sed 's/^/      /' "$out/initiator-markers.log"

"$H" host "$bin" accept 10.77.0.1 7471 --exchange 1 --timeout 30000 >"$out/responder.log" 2>&1 &
resp=$!
for _ in $(seq 1 500); do grep -q listening "$out/responder.log" && break; sleep 0.01; done
"$H" exec -t 60 "$guest" 'timeout 30 rdma_client -s 10.77.0.1 -p 7471' >"$out/rdma_client.log" 2>&1 || true
wait "$resp" && r=ok || r=bad
grep -q "end 0" "$out/rdma_client.log" || r=bad
check "siw rdma_client -> esock responder" $r
sed 's/^/      /' "$out/responder.log"

# Stop the capture once it holds the last exchange (a final ping after it shows up).
for _ in $(seq 1 100); do
  "$H" host ping -c1 -W1 10.77.0.2 >/dev/null 2>&1 || true
  tshark -r "$cap" -Y "icmp && frame.number > 2" 2>/dev/null | tail -1 | grep -q ICMP && break
  sleep 0.1
done
kill -INT "$cap_pid"; wait "$cap_pid" 2>/dev/null || true; cap_pid=
ts() { tshark --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -r "$cap" "$@" 2>/dev/null; }
fpdus=$(ts -T fields -e iwarp_mpa.ulpdulength -E occurrence=a | tr ',' '\n' | grep -c . || true)
reqs=$(ts -Y "iwarp_mpa.req || iwarp_mpa.rep" | wc -l)
good=$(ts -O iwarp_mpa | grep -c "(Good CRC32)" || true)
bad=$(ts -O iwarp_mpa | grep -ci "bad crc" || true)
malformed=$(ts -Y _ws.malformed | wc -l)
echo "tshark: $reqs MPA Request/Reply frames, $fpdus FPDUs, good CRC $good, bad CRC $bad, malformed $malformed"
[ "$fpdus" -ge 6 ] && [ "$good" -ge 2 ] && [ "$bad" -eq 0 ] && [ "$malformed" -eq 0 ] && r=ok || r=bad
check "tshark decodes the esock<->siw capture ($cap)" $r
exit $fail
