#!/usr/bin/env bash
# Two esock stacks in two processes over net_memif (issue 3, "Must show").
#
#   tcp_memif_suite.sh ESOCK_TCP OUT_DIR [quick]
#
# The server process (memif role=server, socket file in OUT_DIR, lcore 0, 10.89.0.1) and the
# client process (role=client, lcore 1, 10.89.0.2) each run esock_tcp with the idle
# back-off on. Matrix: client->server, server->client and both at once, 64 MiB each way,
# SHA-256 compared across the processes; an echo round trip; clean / 1% loss / 2%
# reordering (the seeded FaultInjector of the sending side, both directions of its port);
# FIN (every transfer) and RST (each side aborts). Each process writes a capture (snaplen
# 128): no malformed frame or expert error anywhere, no sign of loss (gap or out-of-order segment) in clean runs
# (memif's "link up" is not "ready", so a SYN or ARP may need a second try; see
# MACHINE-NOTES.md). memif rings: bsize 2048 >= MTU + 14 + 4 (a larger frame arrives
# corrupted in DPDK 22.11) and rsize 13 (8192 slots): the ring must hold a whole 4 MiB
# receive window (~2900 segments) plus the ACKs of the other direction, because DpdkDevice drops what the PMD refuses twice (FINDINGS.md in
# tests/interop/tcp), so the default 1024 slots turn a clean link lossy whenever the
# receiving process falls behind. Needs no root when /var/run/dpdk is writable; skips (77) otherwise.
set -u
ESOCK="${1:?esock_tcp binary}"
OUT="${2:?output directory}"
MODE="${3:-full}"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../interop/tcp/common.sh"

skip() { echo "SKIP: $*"; exit 77; }
command -v tshark >/dev/null || skip "no tshark"
[ -x "$ESOCK" ] || { echo "FAIL: $ESOCK is not executable"; exit 1; }
[ "$(id -u)" = 0 ] || [ -w /var/run/dpdk ] || [ -n "${XDG_RUNTIME_DIR:-}" ] ||
	skip "no writable DPDK runtime directory"

S_IP=10.89.0.1
C_IP=10.89.0.2
PREFIX="esock-tcp-memif-$$"
SIZE=64m
PIDS=()
mkdir -p "$OUT"
rm -f "$OUT"/*.pcap "$OUT"/*.log "$OUT"/*.sock

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$OUT"/*.sock
	rm -rf /var/run/dpdk/"$PREFIX"-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$PREFIX"-*
}
trap teardown EXIT
trap 'exit 1' INT TERM

FAILED=0
PORT=7500
# run_case NAME DIRECTION FAULT "SERVER ARGS" "CLIENT ARGS" CHECKS...
# CHECKS: digests (client sent = server received and the reverse), echo (the client got
# back what it sent), clean (no gap or out-of-order segment in either capture)
run_case() {
	local name="$1" dir="$2" fault="$3" sargs="$4" cargs="$5"
	shift 5
	local checks=" $* " ok=1
	PORT=$((PORT + 1))
	local sock="$OUT/$name.sock" slog="$OUT/$name.server.log" clog="$OUT/$name.client.log"
	local common=(--pcap-snaplen 128 --timeout 100 --link-timeout 20)
	# The memif server must exit first: DPDK 22.11's memif server crashes (SIGSEGV) when
	# its client disconnects while it polls (MACHINE-NOTES.md), which a reset case hit under
	# load. The client lingers longer, so the server is gone before the client lets go.
	local slinger=(--linger 0.3) clinger=(--linger 1.5)
	local vdev="socket=$sock,socket-abstract=no,bsize=2048,rsize=13"
	echo "--- $name ($dir, $fault)"
	# shellcheck disable=SC2086
	"$ESOCK" --vdev "net_memif0,role=server,$vdev" --ip "$S_IP/24" --core 0 \
		--file-prefix "$PREFIX-$name-s" --pcap "$OUT/$name.server.pcap" "${common[@]}" "${slinger[@]}" \
		$sargs listen $PORT >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	local i
	for ((i = 0; i < 1000; i++)); do [ -S "$sock" ] && break; sleep 0.01; done
	# shellcheck disable=SC2086
	"$ESOCK" --vdev "net_memif0,role=client,$vdev" --ip "$C_IP/24" --core 1 \
		--file-prefix "$PREFIX-$name-c" --pcap "$OUT/$name.client.pcap" "${common[@]}" "${clinger[@]}" \
		$cargs connect $S_IP $PORT >"$clog" 2>&1 &
	local cpid=$!
	PIDS+=("$cpid")
	wait_pid "$cpid" 120
	local crc=$?
	wait_pid "$spid" 30
	local src=$?
	local who log
	for who in server client; do
		log="$OUT/$name.$who.log"
		sed -n '/^esock_tcp: conn\|^RESULT\|^TCB\|^STATS\|^FAULTS\|FAILED\|rror/p' "$log" |
			sed "s/^/    $who: /"
	done
	[ "$src" = 0 ] || { echo "    FAIL: server exit $src"; ok=0; }
	[ "$crc" = 0 ] || { echo "    FAIL: client exit $crc"; ok=0; }
	if [[ "$checks" == *" digests "* ]]; then
		same_digest "$clog" sent "$slog" recv "client->server" || ok=0
		same_digest "$slog" sent "$clog" recv "server->client" || ok=0
	fi
	if [[ "$checks" == *" echo "* ]]; then
		same_digest "$clog" sent "$clog" recv "echoed" || ok=0
		same_digest "$clog" sent "$slog" recv "client->server" || ok=0
	fi
	local clean=0
	[[ "$checks" == *" clean "* ]] && clean=data
	pcap_check "$OUT/$name.server.pcap" $PORT $clean || ok=0
	pcap_check "$OUT/$name.client.pcap" $PORT $clean || ok=0
	local rex=$(($(kv "$slog" STATS retransmits || echo 0) + $(kv "$clog" STATS retransmits || echo 0)))
	local note="$rex rexmit (both), fr $(kv "$slog" STATS fast_recoveries)/$(kv "$clog" STATS fast_recoveries), ooo $(kv "$slog" STATS ooo_segments)/$(kv "$clog" STATS ooo_segments); end=$(kv "$slog" RESULT end)/$(kv "$clog" RESULT end)"
	local smb cmb
	smb=$(awk -v a="$(kv "$slog" RESULT tx_MBps)" -v b="$(kv "$slog" RESULT rx_MBps)" 'BEGIN{print (a > b ? a : b)}')
	cmb=$(awk -v a="$(kv "$clog" RESULT tx_MBps)" -v b="$(kv "$clog" RESULT rx_MBps)" 'BEGIN{print (a > b ? a : b)}')
	add_result "$name" "$dir" "$fault" "$([ $ok = 1 ] && echo PASS || echo FAIL)" "$smb" "$cmb" "$note"
	[ $ok = 1 ] || FAILED=$((FAILED + 1))
	rm -f "$sock"
}

LOSS="--loss 0.01 --seed 21"
REORDER="--reorder 0.02 --seed 22"
run_case c2s_clean client-\>server clean "--recv" "--send $SIZE" digests clean
run_case s2c_clean server-\>client clean "--send $SIZE" "--recv" digests clean
run_case bidi_clean both clean "--send $SIZE --recv" "--send $SIZE --recv" digests clean
run_case echo_clean echo clean "--echo" "--send 16m --recv" echo clean
if [ "$MODE" != quick ]; then
	run_case c2s_loss1 client-\>server loss1% "--recv" "--send $SIZE $LOSS" digests
	run_case s2c_loss1 server-\>client loss1% "--send $SIZE $LOSS" "--recv" digests
	run_case bidi_loss1 both loss1% "--send $SIZE --recv $LOSS" "--send $SIZE --recv" digests
	run_case c2s_reorder client-\>server reorder2% "--recv" "--send $SIZE $REORDER" digests
	run_case s2c_reorder server-\>client reorder2% "--send $SIZE $REORDER" "--recv" digests
fi
run_case c2s_rst_by_client client-\>server rst "--recv --expect-reset" "--send $SIZE --abort-after 8m"
run_case s2c_rst_by_client server-\>client rst "--send $SIZE --expect-reset" "--recv --abort-after 8m"

print_results | sed 's/esock MB\/s/server MB\/s/; s/ peer MB\/s/client MB\/s/'
echo "captures and logs: $OUT"
[ "$FAILED" = 0 ] && echo "ALL PASSED" || echo "$FAILED case(s) FAILED"
[ "$FAILED" = 0 ]
