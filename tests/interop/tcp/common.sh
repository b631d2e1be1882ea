# Helpers shared by the lib/tcp suites (tests/interop/tcp: Linux kernel TCP over net_tap,
# tests/integration/tcp: two esock_tcp processes over net_memif). Sourced, not run.
# Both tools print key=value lines: RESULT ..., SHA256 sent=/recv=, TCB ..., STATS ...

# kv LOG LINE_TAG KEY: the value of KEY on the first line starting with LINE_TAG.
kv() {
	awk -v tag="$2" -v key="$3" '$1 == tag {
		for (i = 2; i <= NF; i++) { split($i, p, "="); if (p[1] == key) { print p[2]; exit } }
	}' "$1" 2>/dev/null
}

# wait_for FILE REGEX TIMEOUT_S [PID]: until FILE has a line matching REGEX; fails early if
# PID (the writer) exits first.
wait_for() {
	local i n=$(($3 * 100))
	for ((i = 0; i < n; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
			grep -qE "$2" "$1" 2>/dev/null
			return
		fi
		sleep 0.01
	done
	return 1
}

# wait_pid PID TIMEOUT_S: the exit status of PID (a child), killing it when time is up.
wait_pid() {
	local i n=$(($2 * 10))
	for ((i = 0; i < n; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "    (pid $1 still running after $2 s: killed)"
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1"
}

# pcap_check PCAP PORT CLEAN: one tshark pass. Fails on malformed frames or expert errors;
# with CLEAN (1 or data) also on any sign of loss on the link: a segment seen after a gap
# (lost_segment) or out of order. Retransmissions are reported but do not fail a clean
# run: a process descheduled past the RTO on this shared machine retransmits spuriously
# without anything being lost, and asserting on that would be asserting on wall-clock
# time. Payload is decoded as plain data (snaplen-cut payload would otherwise trip
# heuristic dissectors). Prints "PCAP frames=... retrans=...".
pcap_check() {
	local pcap="$1" port="$2" clean="$3" row
	if [ ! -s "$pcap" ]; then
		echo "    FAIL: no capture $pcap"
		return 1
	fi
	row=$(tshark -r "$pcap" -d "tcp.port==$port,data" -q -z \
		"io,stat,0,frame,_ws.malformed,_ws.expert.severity>=8388608,tcp.analysis.retransmission,tcp.analysis.fast_retransmission,tcp.analysis.out_of_order,tcp.analysis.lost_segment,tcp.analysis.duplicate_ack,tcp.analysis.zero_window,tcp.analysis.retransmission&&tcp.len>0" \
		2>/dev/null | grep -E '^\| *[0-9.]+ <>' | tail -1)
	if [ -z "$row" ]; then
		echo "    FAIL: tshark could not read $pcap"
		return 1
	fi
	# | interval | frames | bytes | frames | bytes | ... : frame counts are fields 3, 5, 7...
	read -r frames malformed errors retrans fastre ooo lost dupack zerowin dataretrans < <(echo "$row" |
		awk -F'|' '{ for (i = 3; i <= NF; i += 2) { gsub(/ /, "", $i); if ($i != "") printf "%s ", $i } }')
	PCAP_LINE="frames=$frames malformed=$malformed errors=$errors retrans=$retrans data_retrans=$dataretrans fast_retrans=$fastre ooo=$ooo lost_segment=$lost dup_ack=$dupack zero_window=$zerowin"
	echo "    PCAP $(basename "$pcap"): $PCAP_LINE"
	PCAP_RETRANS=$retrans
	if [ "$malformed" != 0 ] || [ "$errors" != 0 ]; then
		echo "    FAIL: malformed frames or expert errors in $pcap"
		return 1
	fi
	if [ "$clean" != 0 ] && { [ "$lost" != 0 ] || [ "$ooo" != 0 ]; }; then
		echo "    FAIL: clean run shows loss in $pcap (lost_segment=$lost out_of_order=$ooo)"
		return 1
	fi
	return 0
}

# same_digest LOG_A KEY_A LOG_B KEY_B WHAT: the two ends agree on a stream's SHA-256.
same_digest() {
	local a b
	a=$(kv "$1" SHA256 "$2")
	b=$(kv "$3" SHA256 "$4")
	if [ -z "$a" ] || [ "$a" != "$b" ]; then
		echo "    FAIL: $5 digest mismatch (${a:-none} vs ${b:-none})"
		return 1
	fi
	return 0
}

# Results table, printed at the end.
RESULTS=()
add_result() { RESULTS+=("$(printf '%-22s %-12s %-10s %-6s %10s %10s  %s' "$@")"); }
print_results() {
	echo
	echo "================ results ================"
	printf '%-22s %-12s %-10s %-6s %10s %10s  %s\n' case direction fault ok "esock MB/s" "peer MB/s" notes
	local r
	for r in "${RESULTS[@]}"; do echo "$r"; done
}
