#!/usr/bin/env bash
# Regenerates the esock captures in dissector/tests/captures/ that dissector tests decode:
#   esock-v2-markers-crc.pcapng  esock to esock, MPA v2, Markers both ways, CRC
#   esock-v2-crc.pcapng          esock to esock, MPA v2, CRC, Sends of 64..65536 octets,
#                                RDMA Writes and Reads
#   esock-v2-p2p-read.pcapng     MPA v2 peer-to-peer with a zero-length Read RTR, no CRC
#   esock-v1-crc.pcapng          MPA v1
# and derives from them
#   esock-midstream-markers.pcapng / esock-midstream-crc.pcapng   the first packets cut
#                                (editcap -r), so no MPA Request/Reply is in the capture
#   esock-corrupt-fpdu.pcap      one FPDU payload octet flipped (corrupt_fpdu.py)
# Traffic goes over 127.0.0.1 between iwarp_pingpong's server and client (kernel sockets).
# Usage: make_captures.sh PATH/TO/iwarp_pingpong [OUTPUT_DIR]   (needs dumpcap; root or
# the capture capability)
set -euo pipefail
bin=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/captures}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port_base=$((30000 + $$ % 20000))

# capture NAME PORT PINGPONG-OPTIONS... -- CLIENT-TRAFFIC-OPTIONS...
capture() {
  local name=$1 port=$2
  shift 2
  local opts=() traffic=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  traffic=("$@")
  local raw="$tmp/$name.pcapng"
  dumpcap -q -i lo -f "tcp port $port or udp port $port" -w "$raw" 2>"$tmp/$name.dumpcap" &
  local cap=$!
  local n=0
  for _ in $(seq 1 200); do  # the capture is live once it has seen our UDP probe
    echo probe >/dev/udp/127.0.0.1/"$port" 2>/dev/null || true
    n=$(capinfos -Tmc "$raw" 2>/dev/null | tail -1 | cut -d, -f2 || true)
    [ "${n:-0}" -gt 0 ] 2>/dev/null && break
    sleep 0.05
  done
  "$bin" server --bind 127.0.0.1 --port "$port" "${opts[@]}" >"$tmp/$name.server" 2>&1 &
  local server=$!
  for _ in $(seq 1 500); do grep -q listening "$tmp/$name.server" && break; sleep 0.01; done
  "$bin" client 127.0.0.1 --port "$port" "${opts[@]}" "${traffic[@]}" >"$tmp/$name.client" 2>&1 ||
    { cat "$tmp/$name.client" "$tmp/$name.server"; kill $cap; return 1; }
  wait $server
  local seen=0
  for _ in $(seq 1 200); do  # everything is written once a later probe shows up
    echo end-of-run >/dev/udp/127.0.0.1/"$port" 2>/dev/null || true
    seen=$(tshark -r "$raw" -Y 'udp contains "end-of-run"' 2>/dev/null | wc -l || true)
    [ "$seen" -gt 0 ] && break
    sleep 0.05
  done
  kill -INT $cap
  wait $cap || true
  # Keep only the TCP connection (the probes are not part of the test input).
  tshark -r "$raw" -Y tcp -w "$out/$name.pcapng" 2>/dev/null
  if [ "$(tshark -r "$out/$name.pcapng" -Y tcp.analysis.lost_segment 2>/dev/null | wc -l)" -ne 0 ]; then
    echo "$name: capture missed segments, run again" >&2
    return 1
  fi
  echo "$name: $(capinfos -Tmc "$out/$name.pcapng" | tail -1 | cut -d, -f2) packets"
}

small=(--iters 4 --sizes 64,1500,4096 --bw-chunk 4k --bw-total 16k --window 1)
capture esock-v2-markers-crc $((port_base + 1)) --mpa-rev 2 --markers -- "${small[@]}"
capture esock-v2-crc $((port_base + 2)) --mpa-rev 2 -- \
  --iters 1 --sizes 64,1500,65536 --bw-chunk 64k --bw-total 64k --window 1
capture esock-v2-p2p-read $((port_base + 3)) --mpa-rev 2 --no-crc --p2p --rtr read -- "${small[@]}"
capture esock-v1-crc $((port_base + 4)) --mpa-rev 1 -- "${small[@]}"

# Mid-stream: drop the handshake, the MPA Request/Reply and the first few FPDUs.
editcap -r "$out/esock-v2-markers-crc.pcapng" "$out/esock-midstream-markers.pcapng" 12-1000000
editcap -r "$out/esock-v2-crc.pcapng" "$out/esock-midstream-crc.pcapng" 12-1000000
python3 "$here/corrupt_fpdu.py" "$out/esock-v2-crc.pcapng" "$out/esock-corrupt-fpdu.pcap"
ls -l "$out"
