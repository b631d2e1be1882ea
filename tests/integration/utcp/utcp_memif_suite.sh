#!/usr/bin/env bash
# iWARP over esock's own TCP between two processes over net_memif (issue 4).
#
#   utcp_memif_suite.sh ESOCK_IWARP OUT_DIR
#
# The server (memif role=server, socket file in OUT_DIR, lcore 0, 10.90.0.1) and the client
# (role=client, lcore 1, 10.90.0.2) each run esock_iwarp with the idle back-off on. Every
# case is bandwidth mode with --verify (seeded pattern, every octet checked), Markers and
# CRC on:
#   * Send, RDMA Write and RDMA Read, clean and with 1% loss (and 1% of the ACKs) on the
#     data sender's port (the client for Send/Write, the server for Read's responses);
#   * with loss, the data receiver must place out-of-order segments early (ooo_placed > 0)
#     and its TCP must never buffer an out-of-order octet (peak_ooo_bytes = 0): every
#     segment starts with an FPDU, so every one that arrives ahead of a hole is placeable;
#   * a Write with loss and --placement off on both sides: the receiver's TCP must buffer
#     out-of-order octets (peak_ooo_bytes > 0), the control that shows the counter works;
#   * the three operations in latency (ping-pong) mode, clean;
#   * a clean Write captured on both sides (--pcap) and decoded by tshark's own iWARP
#     dissectors: MPA Request/Reply, FPDUs with Markers and good CRCs, nothing malformed
#     and no expert error. Wireshark 4.0 assumes one FPDU per segment and counts a Marker
#     that falls exactly at the segment's end (where the next FPDU, which the Marker
#     belongs to, begins: RFC 5044 section 5) into this one, so it cannot decode those
#     segments and, with TCP desegmentation on, loses the stream after the first one. The
#     check turns desegmentation (and TCP sequence analysis, which would carry the same
#     mistake forward) off and requires every data segment tshark does not decode to be
#     exactly such a segment.
# Needs no root when /var/run/dpdk is writable; skips (77) otherwise or without tshark.
set -u
IWARP="${1:?esock_iwarp binary}"
OUT="${2:?output directory}"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../interop/tcp/common.sh"

skip() { echo "SKIP: $*"; exit 77; }
command -v tshark >/dev/null || skip "no tshark"
[ -x "$IWARP" ] || { echo "FAIL: $IWARP is not executable"; exit 1; }
[ "$(id -u)" = 0 ] || [ -w /var/run/dpdk ] || [ -n "${XDG_RUNTIME_DIR:-}" ] ||
	skip "no writable DPDK runtime directory"

S_IP=10.90.0.1
C_IP=10.90.0.2
PREFIX="esock-utcp-memif-$$"
PIDS=()
mkdir -p "$OUT"
rm -f "$OUT"/*.pcap "$OUT"/*.log "$OUT"/*.sock "$OUT"/*.txt

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$OUT"/*.sock
	rm -rf /var/run/dpdk/"$PREFIX"-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$PREFIX"-*
}
trap teardown EXIT
trap 'exit 1' INT TERM

# r LOG KEY: a key of the RESULT line.
r() { kv "$1" RESULT "$2"; }

# tshark_check PCAP: see the header. Prints one summary line; fails on any violation.
tshark_check() {
	local pcap="$1" ts_opts=(-o tcp.desegment_tcp_streams:FALSE -o tcp.analyze_sequence_numbers:FALSE
		-o tcp.try_heuristic_first:TRUE
		--disable-protocol rpcordma)
	[ -s "$pcap" ] || { echo "    FAIL: no capture $pcap"; return 1; }
	local good bad problems summary
	tshark -r "$pcap" "${ts_opts[@]}" -O iwarp_mpa >"$pcap.txt" 2>/dev/null
	good=$(grep -c "(Good CRC32)" "$pcap.txt")
	bad=$(grep -ci "Bad CRC32" "$pcap.txt")
	problems=$(tshark -r "$pcap" "${ts_opts[@]}" -Y "_ws.malformed || _ws.expert.severity >= error" \
		2>/dev/null | wc -l)
	# Per data segment: decoded as an FPDU (with Markers?), or the Marker-at-the-end case.
	# Wireshark's MPA dissector (4.0) places Markers by comparing raw sequence numbers with
	# the first FPDU's, so once the TCP sequence space wraps past 2^32 (a random ISN within
	# ~8 MB of the top: about 1 run in 250) it expects Markers in the wrong places and decodes
	# nothing more on that half-connection. Those segments are counted apart (seq_wrapped) and
	# the check asks that every segment before the wrap decodes.
	summary=$(tshark -r "$pcap" "${ts_opts[@]}" -T fields -E separator=';' -E occurrence=f \
		-e ip.src -e tcp.seq_raw -e tcp.len -e iwarp_mpa.key.req -e iwarp_mpa.key.rep \
		-e iwarp_mpa.ulpdulength -e iwarp_mpa.marker_fpduptr -Y "tcp.len > 0" 2>/dev/null |
		awk -F';' '
		$4 != "" || $5 != "" { start[$1] = ($2 + $3) % 4294967296; rr++; next }
		!($1 in start) { other++; next }
		{
			pos = ($2 - start[$1] + 4294967296) % 4294967296
			if ($6 != "") { fpdus++; if ($7 != "") marked++ }
			else if ($2 < start[$1] || $2 + $3 > 4294967296) wrapped++
			else if ((pos + $3) % 512 == 0) ws_marker_at_end++
			else other++
		}
		END { printf "req_rep=%d fpdus=%d with_markers=%d ws_marker_at_end=%d seq_wrapped=%d undecoded=%d\n",
			rr, fpdus, marked, ws_marker_at_end, wrapped, other }')
	echo "    TSHARK $(basename "$pcap"): $summary good_crc=$good bad_crc=$bad malformed_or_errors=$problems"
	local fpdus marked other rr
	rr=$(echo "$summary" | sed 's/.*req_rep=\([0-9]*\).*/\1/')
	fpdus=$(echo "$summary" | sed 's/.*fpdus=\([0-9]*\).*/\1/')
	marked=$(echo "$summary" | sed 's/.*with_markers=\([0-9]*\).*/\1/')
	other=$(echo "$summary" | sed 's/.*undecoded=\([0-9]*\).*/\1/')
	local ok=1
	[ "$rr" = 2 ] || { echo "    FAIL: MPA Request/Reply not both decoded"; ok=0; }
	[ "$fpdus" -gt 100 ] || { echo "    FAIL: too few FPDUs decoded"; ok=0; }
	[ "$good" = "$fpdus" ] && [ "$bad" = 0 ] || { echo "    FAIL: not every decoded FPDU has a good CRC"; ok=0; }
	[ "$marked" -gt $((fpdus / 2)) ] || { echo "    FAIL: Markers missing from the FPDUs"; ok=0; }
	[ "$other" = 0 ] || { echo "    FAIL: data segments tshark cannot decode as FPDUs"; ok=0; }
	[ "$problems" = 0 ] || { echo "    FAIL: malformed frames or expert errors"; ok=0; }
	[ $ok = 1 ]
}

FAILED=0
PORT=7600
RESULTS=()
# run_case NAME OP MODE FAULT "SERVER ARGS" "CLIENT ARGS" CHECKS...
# CHECKS: placed (the data receiver: ooo_placed > 0 and peak_ooo_bytes = 0), buffered (the
# data receiver: peak_ooo_bytes > 0), pcap (both captures pass tshark_check).
run_case() {
	local name="$1" op="$2" mode="$3" fault="$4" sargs="$5" cargs="$6"
	shift 6
	local checks=" $* " ok=1
	PORT=$((PORT + 1))
	local sock="$OUT/$name.sock" slog="$OUT/$name.server.log" clog="$OUT/$name.client.log"
	local vdev="socket=$sock,socket-abstract=no,bsize=2048,rsize=13"
	local work=(--op "$op" --mode "$mode" --verify --markers on --crc on --timeout 60)
	echo "--- $name ($op $mode, $fault)"
	# shellcheck disable=SC2086
	"$IWARP" --vdev "net_memif0,role=server,$vdev" --ip "$S_IP/24" --core 0 \
		--file-prefix "$PREFIX-$name-s" --listen $PORT --timeout 60 $sargs >"$slog" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	local i
	for ((i = 0; i < 1000; i++)); do [ -S "$sock" ] && break; sleep 0.01; done
	# shellcheck disable=SC2086
	"$IWARP" --vdev "net_memif0,role=client,$vdev" --ip "$C_IP/24" --core 1 \
		--file-prefix "$PREFIX-$name-c" --connect $S_IP:$PORT "${work[@]}" $cargs >"$clog" 2>&1 &
	local cpid=$!
	PIDS+=("$cpid")
	wait_pid "$cpid" 90
	local crc=$?
	wait_pid "$spid" 30
	local src=$?
	local who
	for who in server client; do
		grep -E '^RESULT|FAILED|rror' "$OUT/$name.$who.log" | sed "s/^/    $who: /"
	done
	[ "$src" = 0 ] || { echo "    FAIL: server exit $src"; ok=0; }
	[ "$crc" = 0 ] || { echo "    FAIL: client exit $crc"; ok=0; }
	local l
	for l in "$slog" "$clog"; do
		[ "$(r "$l" verify)" = ok ] || { echo "    FAIL: verify=$(r "$l" verify) in $(basename "$l")"; ok=0; }
		[ "$(r "$l" error)" = none ] || { echo "    FAIL: error=$(r "$l" error) in $(basename "$l")"; ok=0; }
	done
	# The data receiver: the server for Send/Write, the client for Read (its responses).
	local rx="$slog" tx="$clog"
	[ "$op" = read ] && rx="$clog" tx="$slog"
	local placed peak
	placed=$(r "$rx" ooo_placed)
	peak=$(r "$rx" peak_ooo_bytes)
	if [[ "$checks" == *" placed "* ]]; then
		[ "${placed:-0}" -gt 0 ] || { echo "    FAIL: receiver placed nothing early (ooo_placed=$placed)"; ok=0; }
		[ "$peak" = 0 ] || { echo "    FAIL: receiver's TCP buffered out-of-order octets (peak_ooo_bytes=$peak)"; ok=0; }
	fi
	if [[ "$checks" == *" buffered "* ]]; then
		[ "${peak:-0}" -gt 0 ] || { echo "    FAIL: placement off, yet TCP buffered nothing (peak_ooo_bytes=$peak)"; ok=0; }
	fi
	if [[ "$checks" == *" pcap "* ]]; then
		tshark_check "$OUT/$name.server.pcap" || ok=0
		tshark_check "$OUT/$name.client.pcap" || ok=0
	fi
	local lat="-"
	[ "$mode" = lat ] && lat="$(r "$clog" rtt_p50_us)/$(r "$clog" rtt_p99_us)"
	RESULTS+=("$(printf '%-20s %-6s %-4s %-15s %-5s %8s %9s %9s %8s %8s %18s %13s' "$name" "$op" "$mode" "$fault" \
		"$([ $ok = 1 ] && echo PASS || echo FAIL)" "$(r "$rx" MBps)" "${placed:-?}" "${peak:-?}" \
		"$(r "$tx" retransmits)" "$(r "$rx" hole_fills)" \
		"$(r "$rx" hole_fill_p50_us)/$(r "$rx" hole_fill_p99_us)" "$lat")")
	[ $ok = 1 ] || FAILED=$((FAILED + 1))
	rm -f "$sock"
}

LOSS="--loss 1 --seed 41"
BW="--size 64k --bytes 48m"
run_case send_clean send bw clean "" "--size 16k --bytes 32m"
run_case write_clean write bw clean "" "$BW"
run_case read_clean read bw clean "" "$BW"
run_case send_loss1 send bw loss1% "" "--size 16k --bytes 32m $LOSS" placed
run_case write_loss1 write bw loss1% "" "$BW $LOSS" placed
run_case read_loss1 read bw loss1% "$LOSS" "$BW" placed
run_case write_loss1_noplace write bw loss1%,noplace "--placement off" "$BW $LOSS --placement off" buffered
run_case send_lat send lat clean "" "--size 64 --iters 2000"
run_case write_lat write lat clean "" "--size 4k --iters 2000"
run_case read_lat read lat clean "" "--size 4k --iters 2000"
run_case write_pcap write bw clean "--pcap $OUT/write_pcap.server.pcap" \
	"--size 64k --bytes 8m --pcap $OUT/write_pcap.client.pcap" pcap

echo
echo "================ results ================"
printf '%-20s %-6s %-4s %-15s %-5s %8s %9s %9s %8s %8s %18s %13s\n' case op mode fault ok \
	"rx MB/s" ooo_placed peak_ooo rexmit holes "fill p50/p99 us" "rtt p50/p99"
for r in "${RESULTS[@]}"; do echo "$r"; done
echo "(rx: the data receiver's counters; rexmit: the data sender's; rtt in us, full round trip)"
echo "captures and logs: $OUT"
[ "$FAILED" = 0 ] && echo "ALL PASSED" || echo "$FAILED case(s) FAILED"
[ "$FAILED" = 0 ]
