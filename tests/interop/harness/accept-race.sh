#!/bin/bash
# Measure how often siw, as the MPA responder, stalls on an initiator's first
# FPDU sent right after the MPA Reply (the stock 6.1 accept race, README.md).
# The host probe plays esock's part: MPA v2 Request, then at once one Send; a
# stall = no Send back within the timeout. Needs a running guest.
#   tests/interop/harness/accept-race.sh NAME [COUNT=20] [TIMEOUT_S=5]
# e.g.  siw.sh start peer 0; accept-race.sh peer 40
#       siw.sh start fixed 1 --siw=tunable,fix_accept_race=1; accept-race.sh fixed 40
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
SIW="$HARNESS_DIR/siw.sh"
name=${1:?usage: accept-race.sh NAME [COUNT] [TIMEOUT_S]} n=${2:-20} to=${3:-5}
[ -n "$(guest_pid "$name")" ] || die "guest $name is not running"
ip=$(cat "$RUN_DIR/$name/ip") base=7500
# rdma_server serves one connection per run: one server per run, each on its
# own port (a stalled server still listens until its timeout; a new
# connection to it would be rejected, R=1, and spoil the count)
job=$("$SIW" exec -d "$name" "for i in \$(seq $n); do timeout $((to + 5)) rdma_server -s $ip -p \$(($base + i)); done")
trap '"$SIW" kill "$name" "$job" >/dev/null 2>&1 || true' EXIT
ok=0 stall=0 other=0
for k in $(seq "$n"); do
    port=$((base + k))
    for _ in $(seq 100); do
        "$SIW" exec -t 20 "$name" "ss -Hltn 'sport = :$port' | grep -q LISTEN" && break
        sleep 0.2
    done
    rc=0
    out=$("$SIW" host python3 "$HARNESS_DIR/probes/mpa_initiator.py" "$ip" "$port" --ird 128 --ord 128 \
        --timeout "$to" --send 000102030405060708090a0b0c0d0e0f 2>&1) || rc=$?
    if [ "$rc" = 0 ] && echo "$out" | grep -q '^got  FPDU'; then ok=$((ok + 1))
    elif echo "$out" | grep -q 'timed out'; then stall=$((stall + 1)); echo "run $k: stalled (no Send back in ${to}s)"
    else other=$((other + 1)); echo "run $k: rc $rc: $(echo "$out" | tail -1)"; fi
done
echo "siw $(cat "$RUN_DIR/$name/siw") as responder: $ok ok, $stall stalled, $other other failures, of $n"
