#!/usr/bin/env bash
# lib/tcp against the Linux kernel's TCP (issue 3, "Must show").
#
#   tcp_kernel_suite.sh ESOCK_TCP OUT_DIR [quick]
#
# Link: a persistent multi-queue TAP `etap0` made inside a private network namespace
# `esock-tcp`; esock_tcp runs in that namespace and opens the TAP with DPDK's net_tap PMD
# (10.88.0.2/24). The kernel's end is a macvlan `kmv0` on top of etap0 with its own fixed
# MAC and 10.88.0.1/24. Why TAP and not veth + net_af_packet: the kernel segments and
# checksums in software for a TAP (no GSO or partial-checksum frames to turn off with
# ethtool), and a TAP queues where an af_packet ring drops when the poller falls behind, so
# a clean run stays clean. Why the macvlan: net_tap copies its own MAC onto the kernel's TAP
# interface when it starts, so an address on etap0 itself would answer ARP with esock's own
# MAC, which esock (rightly) refuses to learn; the macvlan's MAC stays put. esock gets a
# fixed MAC (net_tap's mac= devarg) and the kernel's neighbour cache is flushed per run.
#
# Matrix: kernel->esock, esock->kernel and both at once, 64 MiB each way, checked by
# SHA-256 at both ends; clean / 1% loss / reordering (esock's seeded FaultInjector, both
# directions); FIN (every transfer ends with FIN both ways) and RST (each side aborts);
# connect refused. `ss -tino` inside the namespace mid-transfer must show ts, sack, wscale.
# Every esock run writes a capture (snaplen 128) to OUT_DIR; tshark must find no malformed
# frame or expert error in any of them, and no gap or out-of-order segment in the clean ones.
# Exit 77 (skip) when not root or without /dev/net/tun, tshark, python3 or ss.
set -u
ESOCK="${1:?esock_tcp binary}"
OUT="${2:?output directory}"
MODE="${3:-full}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PEER="$HERE/kernel_peer.py"
source "$HERE/common.sh"

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespace, TAP)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
for t in ip ss tshark python3 taskset; do command -v $t >/dev/null || skip "no $t"; done
[ -x "$ESOCK" ] || { echo "FAIL: $ESOCK is not executable"; exit 1; }

NS=esock-tcp
IF=etap0
KIF=kmv0
K_IP=10.88.0.1
E_IP=10.88.0.2
K_MAC=02:88:00:00:00:01
E_MAC=02:88:00:00:00:02
PREFIX="esock-tcp-interop-$$"
SIZE=64m
BYTES=$((64 << 20))
NSX=(ip netns exec "$NS")
PIDS=()
mkdir -p "$OUT"
rm -f "$OUT"/*.pcap "$OUT"/*.log "$OUT"/*.ss

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	rm -rf /var/run/dpdk/"$PREFIX"-*
}
trap teardown EXIT
trap 'exit 1' INT TERM

# A namespace of this name left by a killed earlier run is ours to replace.
ip netns del "$NS" 2>/dev/null
ip netns add "$NS" || { echo "FAIL: cannot create netns $NS"; exit 1; }
ip -n "$NS" link set lo up
ip -n "$NS" tuntap add dev "$IF" mode tap multi_queue || { echo "FAIL: tuntap add"; exit 1; }
"${NSX[@]}" sysctl -qw "net.ipv6.conf.$IF.disable_ipv6=1"
"${NSX[@]}" sysctl -qw "net.ipv6.conf.default.disable_ipv6=1"
ip -n "$NS" link set "$IF" txqueuelen 10000 up
ip -n "$NS" link add "$KIF" link "$IF" address "$K_MAC" type macvlan mode bridge ||
	{ echo "FAIL: macvlan"; exit 1; }
ip -n "$NS" link set "$KIF" up
ip -n "$NS" addr add "$K_IP/24" dev "$KIF"
echo "### netns $NS: kernel $K_IP on $KIF@$IF, esock $E_IP over net_tap; captures in $OUT"
echo "### kernel: $(uname -r), cc $("${NSX[@]}" sysctl -n net.ipv4.tcp_congestion_control)"

FAILED=0
PORT=7400
# run_case NAME DIRECTION FAULT LISTENER(esock|kernel) "ESOCK ARGS" "PEER ARGS" CHECKS...
# LISTENER none: no kernel peer at all. CHECKS: digests (both streams agree end to end), clean (no gap or out-of-order segment in the
# capture), ss (ss -tino mid-transfer shows the options), fail_ok (esock_tcp must exit 1)
run_case() {
	local name="$1" dir="$2" fault="$3" listener="$4" eargs="$5" pargs="$6"
	shift 6
	local checks=" $* " ok=1
	PORT=$((PORT + 1))
	local elog="$OUT/$name.esock.log" klog="$OUT/$name.kernel.log" pcap="$OUT/$name.pcap"
	local ssf="$OUT/$name.ss"
	local e_cmd=("${NSX[@]}" "$ESOCK" --vdev "net_tap0,iface=$IF,mac=$E_MAC" --ip "$E_IP/24" --core 1
		--file-prefix "$PREFIX-$name" --pcap "$pcap" --pcap-snaplen 128 --timeout 100
		--linger 0.3)
	local k_cmd=("${NSX[@]}" taskset -c 0 python3 "$PEER" --timeout 100)
	[[ "$checks" == *" ss "* ]] && k_cmd+=(--ss-file "$ssf")
	echo "--- $name ($dir, $fault)"
	# Every run is a new esock process: forget the last one's neighbour state.
	ip -n "$NS" neigh flush dev "$KIF"
	local epid kpid erc krc
	# shellcheck disable=SC2086
	if [ "$listener" = esock ]; then
		"${e_cmd[@]}" $eargs listen $PORT >"$elog" 2>&1 &
		epid=$!
		PIDS+=("$epid")
		if wait_for "$elog" "listening" 20 "$epid"; then
			"${k_cmd[@]}" connect "$E_IP" $PORT $pargs >"$klog" 2>&1 &
			kpid=$!
		else
			kpid=""
		fi
	else
		kpid=""
		if [ "$listener" = kernel ]; then
			"${k_cmd[@]}" listen $PORT $pargs >"$klog" 2>&1 &
			kpid=$!
			wait_for "$klog" "listening" 20 "$kpid"
		fi
		"${e_cmd[@]}" $eargs connect "$K_IP" $PORT >"$elog" 2>&1 &
		epid=$!
		PIDS+=("$epid")
	fi
	[ -n "$kpid" ] && PIDS+=("$kpid")
	wait_pid "$epid" 120
	erc=$?
	if [ -n "$kpid" ]; then
		wait_pid "$kpid" 20
		krc=$?
	else
		krc=$([ "$listener" = none ] && echo 0 || echo 255)
	fi
	sed -n '/^esock_tcp\|^RESULT\|^TCB\|^STATS\|^FAULTS\|FAILED/p' "$elog" | sed 's/^/    esock: /'
	grep -E '^RESULT|^TCPINFO|kernel_peer: [^cl]' "$klog" 2>/dev/null | sed 's/^/    kernel: /'
	if [[ "$checks" == *" fail_ok "* ]]; then
		[ "$erc" = 1 ] || { echo "    FAIL: esock_tcp exit $erc, expected 1"; ok=0; }
	else
		[ "$erc" = 0 ] || { echo "    FAIL: esock_tcp exit $erc"; ok=0; }
		[ "$krc" = 0 ] || { echo "    FAIL: kernel peer exit $krc"; ok=0; }
	fi
	if [[ "$checks" == *" digests "* ]]; then
		same_digest "$elog" sent "$klog" recv "esock->kernel" || ok=0
		same_digest "$klog" sent "$elog" recv "kernel->esock" || ok=0
	fi
	if [[ "$checks" == *" ss "* ]]; then
		if [ -s "$ssf" ]; then
			sed -n 's/^\s*/    ss: /p' "$ssf" | grep -v "State" | cut -c1-200
			for opt in ' ts ' ' sack ' ' wscale:'; do
				grep -q -- "$opt" "$ssf" || { echo "    FAIL: ss -tino lacks '$opt'"; ok=0; }
			done
		else
			echo "    FAIL: no ss -tino sample"; ok=0
		fi
	fi
	local clean=0 note=""
	[[ "$checks" == *" clean "* ]] && clean=1
	PCAP_LINE=""
	pcap_check "$pcap" $PORT $clean || ok=0
	note="$(kv "$elog" STATS retransmits) rexmit, $(kv "$elog" STATS fast_recoveries) fr, $(kv "$elog" STATS rto_expirations) rto, $(kv "$elog" STATS ooo_segments) ooo; end=$(kv "$elog" RESULT end)"
	local emb kmb
	emb=$(awk -v a="$(kv "$elog" RESULT tx_MBps)" -v b="$(kv "$elog" RESULT rx_MBps)" 'BEGIN{print (a > b ? a : b)}')
	kmb=$(awk -v a="$(kv "$klog" RESULT tx_MBps)" -v b="$(kv "$klog" RESULT rx_MBps)" 'BEGIN{print (a > b ? a : b)}')
	add_result "$name" "$dir" "$fault" "$([ $ok = 1 ] && echo PASS || echo FAIL)" "$emb" "$kmb" "$note"
	[ $ok = 1 ] || FAILED=$((FAILED + 1))
}

LOSS="--loss 0.01 --seed 11"
REORDER="--reorder 0.02 --seed 12"
# name direction fault listener esock-args peer-args checks
run_case k2e_clean kernel-\>esock clean esock "--recv" "--send $SIZE" digests clean ss
run_case e2k_clean esock-\>kernel clean kernel "--send $SIZE" "--recv" digests clean ss
run_case bidi_clean both clean esock "--send $SIZE --recv" "--send $SIZE --recv" digests clean ss
if [ "$MODE" != quick ]; then
	run_case k2e_loss1 kernel-\>esock loss1% esock "--recv $LOSS" "--send $SIZE" digests
	run_case e2k_loss1 esock-\>kernel loss1% kernel "--send $SIZE $LOSS" "--recv" digests
	run_case bidi_loss1 both loss1% kernel "--send $SIZE --recv $LOSS" "--send $SIZE --recv" digests
	run_case k2e_reorder kernel-\>esock reorder2% esock "--recv $REORDER" "--send $SIZE" digests
	run_case e2k_reorder esock-\>kernel reorder2% kernel "--send $SIZE $REORDER" "--recv" digests
fi
# RST paths: esock aborts mid-stream / the kernel aborts mid-stream (SO_LINGER 0).
run_case e2k_rst_by_esock esock-\>kernel rst kernel "--send $SIZE --abort-after 8m" "--recv --expect-reset"
run_case k2e_rst_by_kernel kernel-\>esock rst esock "--expect-reset" "--send $SIZE --abort-after 8m"
# Nobody listens on the port: esock_tcp must say ECONNREFUSED and exit 1.
run_case e2k_refused esock-\>kernel refused none "--send 1m --connect-timeout 10" "" fail_ok
grep -q ECONNREFUSED "$OUT/e2k_refused.esock.log" || {
	echo "    FAIL: no ECONNREFUSED message"
	FAILED=$((FAILED + 1))
}

print_results
echo "captures and logs: $OUT"
[ "$FAILED" = 0 ] && echo "ALL PASSED" || echo "$FAILED case(s) FAILED"
[ "$FAILED" = 0 ]
