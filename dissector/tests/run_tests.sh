#!/usr/bin/env bash
# Runs tshark with the esock plugin from the build tree over the captures in captures/
# (made by make_captures.sh, craft_violations.py and tests/interop/mpa_siw_test.sh) and the
# shared siw reference captures, and checks decoded fields against expected values.
# Usage: run_tests.sh PLUGIN_DIR TESTS_DIR [SHARED_CAPTURES_DIR]
#   PLUGIN_DIR holds <major.minor>/epan/esock.so (the build tree's dissector/plugins).
# Wireshark ignores personal plugins and WIRESHARK_PLUGIN_DIR when run by root (it counts
# uid 0 as "special privileges"), so as root tshark runs as nobody here.
set -uo pipefail
plugdir=$(readlink -f "$1")
here=$(readlink -f "$2")
shared=${3:-}
command -v tshark >/dev/null || { echo "SKIP: tshark missing"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy everyone can read, whatever the checkout's permissions.
mkdir -p "$work/home" "$work/caps"
cp -r "$plugdir" "$work/plugins"
cp "$here"/captures/* "$work/caps/"
[ -n "$shared" ] && [ -d "$shared" ] && cp "$shared"/*.pcapng "$work/caps/" 2>/dev/null
chmod -R a+rX "$work"
python3 "$here/craft_violations.py" "$work/caps/violations.pcap" >/dev/null
python3 "$here/craft_violations.py" "$work/caps/estp.pcap" estp >/dev/null
python3 "$here/craft_violations.py" "$work/caps/short-tail.pcap" short-tail >/dev/null
python3 "$here/craft_violations.py" "$work/caps/tls-port.pcap" short-tail 27017 >/dev/null
for m in rfc7306 rfc7306-errors rfc7306-midstream; do
  python3 "$here/craft_violations.py" "$work/caps/$m.pcap" $m >/dev/null
done
chmod a+r "$work"/caps/*.pcap

ts() {
  local env=(env HOME="$work/home" WIRESHARK_PLUGIN_DIR="$work/plugins")
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "${env[@]}" tshark "$@" 2>/dev/null
  else
    "${env[@]}" tshark "$@" 2>/dev/null
  fi
}
# Every occurrence of the fields, one per line: f CAPTURE FILTER FIELD...
f() {
  local cap=$work/caps/$1 filter=$2
  shift 2
  local args=()
  for x in "$@"; do args+=(-e "$x"); done
  ts --disable-protocol rpcordma -r "$cap" -Y "$filter" -T fields -E occurrence=a \
    -E aggregator=';' "${args[@]}" | tr ';\t' '\n\n' | grep -v '^$'
}
# The same over two passes (fields that point forward, like "response in").
f2() {
  local cap=$work/caps/$1 filter=$2
  shift 2
  local args=()
  for x in "$@"; do args+=(-e "$x"); done
  ts -2 --disable-protocol rpcordma -r "$cap" -Y "$filter" -T fields -E occurrence=a \
    -E aggregator=';' "${args[@]}" | tr ';\t' '\n\n' | grep -v '^$'
}
# One line per frame: "frame<TAB>value,value": rows CAPTURE FILTER FIELD
rows() {
  ts --disable-protocol rpcordma -r "$work/caps/$1" -Y "$2" -T fields -E occurrence=a \
    -E aggregator=',' -e frame.number -e "$3"
}
count() { f "$1" "$2" frame.number | wc -l; }          # frames matching a filter
occ() { f "$1" "${3:-$2}" "$2" | wc -l; }              # occurrences of a field
fail=0
check() {  # check NAME ACTUAL EXPECTED
  if [ "$2" = "$3" ]; then echo "PASS  $1 ($2)"; else echo "FAIL  $1: got '$2', expected '$3'"; fail=1; fi
}
checkge() {  # check NAME ACTUAL MIN
  if [ "$2" -ge "$3" ] 2>/dev/null; then echo "PASS  $1 ($2 >= $3)"; else echo "FAIL  $1: got '$2', expected >= $3"; fail=1; fi
}
# No esock warning or error: check_clean NAME CAPTURE
check_clean() {
  check "$1: no esock_mpa warnings or errors" \
    "$(count "$2" '_ws.expert.severity >= warning && esock_mpa')" 0
  check "$1: nothing malformed" "$(count "$2" _ws.malformed)" 0
}
# Every FPDU's CRC verified good: check_crc NAME CAPTURE
check_crc() {
  local n good
  n=$(occ "$2" esock_mpa.fpdu)
  good=$(f "$2" esock_mpa.fpdu esock_mpa.crc.status | grep -c '^1$')
  checkge "$1: FPDUs decoded" "$n" 1
  check "$1: every FPDU has a good CRC32c" "$good" "$n"
}

check "plugin loads" "$(ts -G plugins | grep -c '^esock.so')" 1

# --- siw to siw (shared reference captures) -----------------------------------------------
if [ -f "$work/caps/siw-v2-p2p.pcapng" ]; then
  c=siw-v2-p2p.pcapng
  check "siw p2p: Request IRD/ORD/P2P/W/R" \
    "$(f $c 'esock_mpa.frame == 1 && tcp.stream == 0' esock_mpa.v2.ird esock_mpa.v2.ord esock_mpa.v2.p2p esock_mpa.v2.rtr_write esock_mpa.v2.rtr_read | tr '\n' ' ')" \
    "1 1 1 1 1 "
  check "siw p2p: Reply picks the Write RTR" \
    "$(f $c 'esock_mpa.frame == 2 && tcp.stream == 0' esock_mpa.v2.rtr_write esock_mpa.v2.rtr_read esock_mpa.negotiated.rtr | tr '\n' '|')" \
    "1|0|zero-length RDMA Write|"
  check "siw p2p: the RTR is a zero-length Write to STag 1 TO 0" \
    "$(f $c 'esock_mpa.analysis.rtr && tcp.stream == 0' esock_mpa.analysis.placement.stag esock_mpa.analysis.placement.to esock_mpa.analysis.placement.length | tr '\n' ' ')" \
    "0x00000001 0x0000000000000000 0 "
  reqs=$(count $c 'iwarp_rdma.opcode == 1')
  checkge "siw p2p: Read Requests" "$reqs" 1
  check "siw p2p: every Read Request answered, with a response time" \
    "$(occ $c esock_mpa.analysis.read.time)" "$reqs"
  check_clean "siw p2p" $c
fi
if [ -f "$work/caps/siw-v2-crc.pcapng" ]; then
  c=siw-v2-crc.pcapng
  check_crc "siw crc" $c
  check "siw crc: same FPDU count as Wireshark's iwarp_mpa" "$(occ $c esock_mpa.fpdu)" \
    "$(ts --disable-protocol esock_mpa --disable-protocol rpcordma -r "$work/caps/$c" -T fields -E occurrence=a -e iwarp_mpa.ulpdulength | tr ',' '\n' | grep -c .)"
  check_clean "siw crc" $c
fi

# --- esock to esock ----------------------------------------------------------------------
c=esock-v2-markers-crc.pcapng
check "markers: Request and Reply ask for Markers and CRC, rev 2" \
  "$(f $c esock_mpa.frame esock_mpa.flags.m esock_mpa.flags.c esock_mpa.rev | tr '\n' ' ')" \
  "1 1 2 1 1 2 "
check "markers: negotiated both ways" \
  "$(f $c esock_mpa.negotiated esock_mpa.negotiated.markers_i2r esock_mpa.negotiated.markers_r2i | tr '\n' ' ')" "1 1 "
check_crc "markers" $c
checkge "markers: Markers decoded" "$(occ $c esock_mpa.marker)" 50
check "markers: every FPDU reaches iwarp_ddp_rdmap" "$(occ $c iwarp_rdma.opcode esock_mpa)" "$(occ $c esock_mpa.fpdu)"
check "markers: Send messages of 64, 1500 and 4096 octets" \
  "$(f $c esock_mpa.analysis.msg.length esock_mpa.analysis.msg.length | sort -un | tr '\n' ' ')" \
  "1 24 28 64 1500 4096 "
checkge "markers: FPDUs Wireshark's iwarp_mpa cannot strip but we do" "$(occ $c esock_mpa.fpdu)" \
  "$(ts --disable-protocol esock_mpa --disable-protocol rpcordma -r "$work/caps/$c" -T fields -E occurrence=a -e iwarp_mpa.ulpdulength | tr ',' '\n' | grep -c .)"
check_clean "markers" $c

c=esock-v2-crc.pcapng
check_crc "crc" $c
check "crc: 64 KiB Send reassembled from its DDP segments" \
  "$(f $c 'esock_mpa.analysis.msg.length == 65536' esock_mpa.analysis.msg.length esock_mpa.analysis.msg.segments | sort -u | tr '\n' ' ')" \
  "3 65536 "
check "crc: same FPDU count as Wireshark's iwarp_mpa" "$(occ $c esock_mpa.fpdu)" \
  "$(ts --disable-protocol esock_mpa --disable-protocol rpcordma -r "$work/caps/$c" -T fields -E occurrence=a -e iwarp_mpa.ulpdulength | tr ',' '\n' | grep -c .)"
reqs=$(count $c 'iwarp_rdma.opcode == 1')
checkge "crc: RDMA Read Requests" "$reqs" 1
check "crc: each Read Request paired with its last Read Response (2 passes)" \
  "$(f2 $c esock_mpa.analysis.read.done_in esock_mpa.analysis.read.done_in | wc -l)" "$reqs"
check "crc: Read response times" "$(occ $c esock_mpa.analysis.read.time)" "$reqs"
check_clean "crc" $c

c=esock-v2-p2p-read.pcapng
check "p2p read: negotiated RTR" "$(f $c esock_mpa.negotiated.rtr esock_mpa.negotiated.rtr)" "zero-length RDMA Read"
check "p2p read: the RTR is a zero-length Read Request" \
  "$(f $c esock_mpa.analysis.rtr iwarp_rdma.opcode esock_mpa.analysis.read.size | tr '\n' ' ')" "0x01 0 "
check "p2p read: no CRC, nothing verified" "$(f $c esock_mpa.fpdu esock_mpa.crc.status | sort -u)" 2
check_clean "p2p read" $c

c=esock-v1-crc.pcapng
check "v1: revision 1, no RFC 6581 block" "$(f $c esock_mpa.frame esock_mpa.rev | sort -u)$(occ $c esock_mpa.v2)" "10"
check_crc "v1" $c
check_clean "v1" $c

# --- capture cut mid-stream (editcap -r 12-): no MPA frames ------------------------------
for kind in markers crc; do
  c=esock-midstream-$kind.pcapng
  full=$([ $kind = markers ] && echo esock-v2-markers-crc.pcapng || echo esock-v2-crc.pcapng)
  check "midstream $kind: no MPA frame in the capture" "$(occ $c esock_mpa.frame)" 0
  checkge "midstream $kind: synchronised" "$(count $c 'esock_mpa.resync_frame')" 1
  check_crc "midstream $kind" $c
  # Each decoded frame carries the same ULPDUs as the same frame of the full capture, except
  # where the capture starts inside an FPDU (then only the FPDUs after it).
  rows $c esock_mpa.fpdu esock_mpa.ulpdu_length | sort >"$work/mid.rows"
  rows $full 'esock_mpa.fpdu && frame.number >= 12' esock_mpa.ulpdu_length |
    awk -F'\t' '{print $1 - 11 "\t" $2}' | sort >"$work/full.rows"
  total=$(wc -l <"$work/full.rows")
  same=$(comm -12 "$work/mid.rows" "$work/full.rows" | wc -l)
  check "midstream $kind: no frame decoded differently from the full capture" \
    "$(comm -23 "$work/mid.rows" "$work/full.rows" | wc -l)" 0
  checkge "midstream $kind: frames with FPDUs found again (of $total)" "$same" $((total - 2))
  [ $kind = markers ] && checkge "midstream markers: Markers decoded" "$(occ $c esock_mpa.marker)" 50
done

# --- a corrupted FPDU --------------------------------------------------------------------
c=esock-corrupt-fpdu.pcap
bad=$(cat "$here/captures/esock-corrupt-fpdu.pcap.frame")
check "corrupt: exactly one bad CRC, in frame $bad" \
  "$(f $c 'esock_mpa.crc.status == 0' frame.number | tr '\n' ' ')" "$bad "
check "corrupt: expert error on it" "$(f $c 'esock_mpa.crc.bad' frame.number)" "$bad"
check "corrupt: all other FPDUs good" "$(f $c esock_mpa.fpdu esock_mpa.crc.status | grep -c '^1$')" \
  "$(( $(occ $c esock_mpa.fpdu) - 1 ))"

# --- esock to siw (captured by tests/interop/mpa_siw_test.sh) ----------------------------
c=esock-siw.pcapng
check "esock-siw: connections (Requests, Replies, one Reject)" \
  "$(f $c esock_mpa.frame esock_mpa.frame | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' ')" "4x1 3x2 1x3 "
check "esock-siw: markers request rejected" "$(f $c 'esock_mpa.frame == 3' esock_mpa.flags.r)" 1
check "esock-siw: CRC good where negotiated, unverified where not" \
  "$(f $c esock_mpa.fpdu esock_mpa.crc.status | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' ')" "4x1 2x2 "
check "esock-siw: IRD/ORD of siw's Request (rdma_client) and our Reply" \
  "$(f $c 'esock_mpa.frame && tcp.stream == 3' esock_mpa.v2.ird esock_mpa.v2.ord | tr '\n' ' ')" "128 128 16 16 "
check "esock-siw: no warnings but the Reject" "$(count $c '_ws.expert.severity >= warning && esock_mpa && !esock_mpa.rejected')" 0

# --- synthetic violations (craft_violations.py) ------------------------------------------
c=violations.pcap
check "violations: MSN out of order flagged on frame 7, expecting 2" \
  "$(f $c esock_mpa.analysis.msn_order frame.number esock_mpa.analysis.msn_expected | tr '\n' ' ')" "7 2 "
check "violations: 2-segment Send reassembled by MSN/MO" \
  "$(f $c 'frame.number == 9' esock_mpa.analysis.msg.length esock_mpa.analysis.msg.segments esock_mpa.analysis.msg.first_frame | tr '\n' ' ')" "150 2 8 "
check "violations: Read Response 11 pairs with Request 10, 500 us" \
  "$(f $c 'frame.number == 11' esock_mpa.analysis.read.request_in esock_mpa.analysis.read.time | tr '\n' ' ')" "10 0.000500000 "
check "violations: Read Request 10 knows its response" \
  "$(f2 $c 'frame.number == 10' esock_mpa.analysis.read.response_in)" 11
check "violations: placement outside the advertised region in frame 13" \
  "$(f $c esock_mpa.analysis.outside_region frame.number esock_mpa.analysis.placement.region_frame | tr '\n' ' ')" "13 12 "
check "violations: Terminate cause decoded" \
  "$(f $c esock_mpa.analysis.terminate esock_mpa.analysis.terminate.layer esock_mpa.analysis.terminate.type esock_mpa.analysis.terminate.code esock_mpa.analysis.terminate.cause | tr '\n' '|')" \
  "1|2|0x03|DDP Untagged Buffer Error: invalid MSN, MSN range|"
check "violations: two-pass (tshark -2) gives the same analysis" \
  "$(ts -2 --disable-protocol rpcordma -r "$work/caps/$c" -Y esock_mpa.analysis.read.time -T fields -e frame.number | tr '\n' ' ')" "11 13 "

# --- ESTP, esock's stream protocol (synthetic, docs/stream-protocol.md) ------------------
c=estp.pcap
check "estp: Hello in both MPA frames" \
  "$(f $c esock_stream.hello esock_stream.hello.recv_buffers esock_stream.hello.recv_buffer_size | tr '\n' ' ')" "4 4096 4 4096 "
check "estp: message types in order" \
  "$(f $c esock_stream.type esock_stream.type | tr '\n' ' ')" "0x01 0x05 0x06 0x03 0x02 0x08 0x01 "
check "estp: credits, lengths, ids" \
  "$(f $c 'esock_stream.type == 5' esock_stream.credits esock_stream.length esock_stream.stag esock_stream.to esock_stream.id | tr '\n' ' ')" \
  "1 64 0x00002000 0x0000000000010000 1 "
check "estp: Writes checked against the SINKAVAIL region (frame 7)" \
  "$(f $c esock_mpa.analysis.placement.region_frame esock_mpa.analysis.placement.region_frame | tr '\n' ' ')" "7 7 "
check "estp: Write outside the sink flagged on frame 10" \
  "$(f $c esock_mpa.analysis.outside_region frame.number)" 10
check "estp: inconsistent length flagged on frame 14" "$(f $c esock_stream.bad_length frame.number)" 14

# --- a segment that ends 6 octets into the next FPDU (synthetic, craft_violations.py) ----
c=short-tail.pcap
check "short-tail: all three FPDUs decoded with good CRCs, MSN 1 2 3" \
  "$(f $c esock_mpa.fpdu esock_mpa.crc.status iwarp_ddp.msn | tr '\n' ' ')" "1 1 1 1 2 3 "
check "short-tail: nothing malformed or in error" "$(count $c '_ws.malformed || _ws.expert.severity >= error')" 0

# --- RFC 7306 Atomics and Immediate Data (synthetic, craft_violations.py) -----------------
c=rfc7306.pcap
check "rfc7306: RDMAP opcodes in order" "$(f $c esock_mpa.fpdu iwarp_rdma.opcode | tr '\n' ' ')" \
  "0x0a 0x0b 0x0a 0x0b 0x08 0x09 0x0a 0x07 "
check_crc "rfc7306" $c
check "rfc7306: Atomic Requests on QN 1 (MSN 1-3), Responses on QN 3 (MSN 1 2)" \
  "$(f $c 'iwarp_rdma.opcode == 0x0a || iwarp_rdma.opcode == 0x0b' esock_mpa.analysis.qn esock_mpa.analysis.msn | tr '\n' ' ')" \
  "1 1 3 1 1 2 3 2 1 3 "
check "rfc7306: Immediate Data values, SE only on opcode 9" \
  "$(f $c esock_mpa.rfc7306.immediate_data esock_mpa.rfc7306.immediate_data esock_mpa.rfc7306.solicited esock_mpa.analysis.qn | tr '\n' ' ')" \
  "0x1122334455667788 0 0 0x8877665544332211 1 0 "
check "rfc7306: Info column names Immediate Data (iwarp_ddp_rdmap says Unknown)" \
  "$(f $c 'iwarp_rdma.opcode == 8 || iwarp_rdma.opcode == 9' _ws.col.Info | grep -c 'Immediate Data')" 2
check "rfc7306: Atomic Requests: operation, request id, STag, TO" \
  "$(f $c esock_mpa.rfc7306.atomic.op esock_mpa.rfc7306.atomic.op esock_mpa.rfc7306.atomic.request_id esock_mpa.rfc7306.atomic.stag esock_mpa.rfc7306.atomic.to | tr '\n' ' ')" \
  "0 0x00000011 0x00004000 0x0000000000001000 2 0x00000012 0x00004000 0x0000000000001008 0 0x00000013 0x00004000 0x0000000000001004 "
check "rfc7306: CmpSwap data, masks, compare" \
  "$(f $c 'esock_mpa.rfc7306.atomic.op == "CmpSwap"' esock_mpa.rfc7306.atomic.data esock_mpa.rfc7306.atomic.mask esock_mpa.rfc7306.atomic.compare_data esock_mpa.rfc7306.atomic.compare_mask | tr '\n' ' ')" \
  "0x000000000000aaaa 0xffffffffffffffff 0x0000000000005555 0xffffffffffffffff "
check "rfc7306: Atomic Responses: request id and original value, labelled as such" \
  "$(f $c esock_mpa.rfc7306.response.request_id esock_mpa.rfc7306.response.request_id esock_mpa.rfc7306.response.value | tr '\n' ' ')$(ts -r "$work/caps/$c" -Y 'frame.number == 7' -O esock_mpa | grep -c 'Original Remote Data Value: 0x0123456789abcdef')" \
  "0x00000011 0x0123456789abcdef 0x00000012 0x0000000000005555 1"
check "rfc7306: Responses 7 and 9 pair with Requests 6 and 8, 250 and 100 us" \
  "$(f $c esock_mpa.analysis.atomic.request_in frame.number esock_mpa.analysis.atomic.request_in esock_mpa.analysis.atomic.time | tr '\n' ' ')" \
  "7 6 0.000250000 9 8 0.000100000 "
check "rfc7306: Requests know their responses, the misaligned one its Terminate (2 passes)" \
  "$(f2 $c 'iwarp_rdma.opcode == 0x0a' esock_mpa.analysis.atomic.response_in esock_mpa.analysis.atomic.terminate_in | tr '\n' ' ')" "7 9 13 "
check "rfc7306: misaligned target (TO 0x1004) flagged on frame 12 only" \
  "$(f $c esock_mpa.rfc7306.misaligned frame.number)" 12
check "rfc7306: Terminate 0x0207 decoded and linked to the Atomic Request it refused" \
  "$(f $c esock_mpa.analysis.terminate frame.number esock_mpa.analysis.terminate.layer esock_mpa.analysis.terminate.type esock_mpa.analysis.terminate.code esock_mpa.analysis.terminate.cause esock_mpa.analysis.terminate.atomic_in | tr '\n' '|')" \
  "13|0|2|0x07|RDMAP Remote Operation Error: catastrophic error, localized to RDMAP Stream|12|"
check "rfc7306: no esock warning but the misaligned request and the Terminate" \
  "$(count $c '_ws.expert.severity >= warning && esock_mpa && !esock_mpa.rfc7306.misaligned && !esock_mpa.analysis.terminate')" 0
check "rfc7306: nothing malformed" "$(count $c _ws.malformed)" 0

c=rfc7306-errors.pcap
check "rfc7306 errors: reserved Atomic Operation 5 on frame 6" "$(f $c esock_mpa.rfc7306.bad_atomic_op frame.number esock_mpa.rfc7306.atomic.op | tr '\n' ' ')" "6 5 "
check "rfc7306 errors: Response 7 answers Request 6 with the wrong request id" \
  "$(f $c esock_mpa.analysis.atomic.id_mismatch frame.number esock_mpa.analysis.atomic.request_in | tr '\n' ' ')" "7 6 "
check "rfc7306 errors: Response 8 has no outstanding request" \
  "$(f $c esock_mpa.analysis.atomic.unsolicited frame.number)" 8
check "rfc7306 errors: wrong lengths (Immediate Data 4, Atomic Request 56, Atomic Response 4 octets)" \
  "$(f $c esock_mpa.rfc7306.bad_length frame.number | tr '\n' ' ')" "9 10 11 "
check "rfc7306 errors: the short Response still pairs with Request 10" \
  "$(f $c 'frame.number == 11' esock_mpa.rfc7306.response.request_id esock_mpa.analysis.atomic.request_in | tr '\n' ' ')" "0x00000024 10 "
check "rfc7306 errors: Immediate Data with SE on QN 2 (frame 12)" "$(f $c esock_mpa.rfc7306.bad_qn frame.number)" 12
# iwarp_ddp_rdmap reads an 8-octet value the short Response lacks; esock_mpa reads only what is there.
check "rfc7306 errors: malformed only where iwarp_ddp_rdmap reads past the short Response" \
  "$(f $c _ws.malformed frame.number)" 11

c=rfc7306-midstream.pcap
check "rfc7306 midstream: no MPA frame in the capture" "$(occ $c esock_mpa.frame)" 0
check "rfc7306 midstream: found again on the first FPDU each way (Atomic Request 1, Response 2)" \
  "$(f $c esock_mpa.resync frame.number | tr '\n' ' ')" "1 2 "
check "rfc7306 midstream: all 8 FPDUs decoded" "$(occ $c esock_mpa.fpdu)" 8
check_crc "rfc7306 midstream" $c
check "rfc7306 midstream: Responses pair with their Requests" \
  "$(f $c esock_mpa.analysis.atomic.request_in esock_mpa.analysis.atomic.request_in | tr '\n' ' ')" "1 3 "
check "rfc7306 midstream: misaligned target flagged" "$(f $c esock_mpa.rfc7306.misaligned frame.number)" 7
check "rfc7306 midstream: nothing malformed" "$(count $c _ws.malformed)" 0

# --- RFC 7306 as esock sends it (make_rfc7306_capture.sh: examples/sockets/atomic_counter
# over the dpdk provider, 200 FetchAdds, 20 CmpSwap lock rounds, Write with Immediate Data
# with SE, a misaligned FetchAdd refused by a Terminate) -----------------------------------
c=esock-rfc7306.pcap
if [ -f "$work/caps/$c" ]; then
  check "esock 7306: Atomic Requests" "$(count $c 'iwarp_rdma.opcode == 0x0a')" 261
  check "esock 7306: Atomic Responses" "$(count $c 'iwarp_rdma.opcode == 0x0b')" 260
  check "esock 7306: FetchAdd / CmpSwap requests" \
    "$(f $c esock_mpa.rfc7306.atomic.op esock_mpa.rfc7306.atomic.op | sort | uniq -c | tr -s ' ' | tr '\n' '|')" \
    " 221 0| 40 2|"
  check "esock 7306: every response paired with its request" \
    "$(f $c esock_mpa.analysis.atomic.request_in frame.number | wc -l)" 260
  check "esock 7306: every answered request knows its response (two passes)" \
    "$(f2 $c esock_mpa.analysis.atomic.response_in frame.number | wc -l)" 260
  check "esock 7306: Immediate Data with SE carries the total (20200)" \
    "$(f $c esock_mpa.rfc7306.immediate_data esock_mpa.rfc7306.immediate_data esock_mpa.rfc7306.solicited | tr '\n' ' ')" \
    "0x0000000000004ee8 1 "
  check "esock 7306: one misaligned target warned" "$(count $c esock_mpa.rfc7306.misaligned)" 1
  check "esock 7306: its Terminate is RDMAP Remote Operation 0x07, tied to the request" \
    "$(f $c esock_mpa.analysis.terminate.code esock_mpa.analysis.terminate.layer esock_mpa.analysis.terminate.type esock_mpa.analysis.terminate.code | tr '\n' ' ')" \
    "0 2 0x07 "
  checkge "esock 7306: the Terminate names the request" \
    "$(f $c esock_mpa.analysis.terminate.atomic_in esock_mpa.analysis.terminate.atomic_in)" 1
  check_crc "esock 7306" $c
  check "esock 7306: nothing malformed" "$(count $c _ws.malformed)" 0
  check "esock 7306: both Hellos offer RDMAP_EXT (and RAW)" \
    "$(f $c esock_stream.hello esock_stream.hello.rdmap_ext esock_stream.hello.raw | tr '\n' ' ')" \
    "1 1 1 1 "
else
  echo "FAIL  esock 7306: no $c"
  fail=1
fi

# --- the same connection on port 27017, which Wireshark gives to tls ----------------------
# Wireshark tries a port's dissector before any heuristic; esock_mpa claims the conversation
# at the MPA Request, so it keeps the connection without tcp.try_heuristic_first.
c=tls-port.pcap
check "tls-port: Wireshark's own dissection gives the FPDU segments to tls (precondition)" \
  "$(ts --disable-protocol esock_mpa -r "$work/caps/$c" -Y tls -T fields -e frame.number | tr '\n' ' ')" "6 7 8 "
check "tls-port: all three FPDUs decoded with good CRCs, MSN 1 2 3" \
  "$(f $c esock_mpa.fpdu esock_mpa.crc.status iwarp_ddp.msn | tr '\n' ' ')" "1 1 1 1 2 3 "

exit $fail
