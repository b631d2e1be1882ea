#!/usr/bin/env bash
# The esock demo on its embedded default: two processes joined by a DPDK net_memif link (no
# NIC, no hugepages), each running esock's own TCP/IP stack under libesock's dpdk provider,
# with iWARP (MPA v2 + CRC32c, DDP, RDMAP) on top. Four steps:
#   1. an unmodified program (Debian's nc) under esockrun --ddp: its TCP sockets become
#      DDPMODE sockets carried over iWARP on the memif link;
#   2. a DDPMODE echo exchange (ddp_echo_server/client) with its negotiated MPA parameters,
#      Markers required, captured on the server side;
#   3. an RDMA Write ping-pong through the extension API (esock_rdma_pingpong, RAWMODE);
#   4. the step-2 capture decoded by tshark with esock's Wireshark plugin.
# Usage: demo-memif.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: demo-memif.sh BUILD_DIR}" && pwd)
ex=$build/examples/sockets
esockrun=$build/tools/esockrun/esockrun
work=$(mktemp -d /tmp/esock-demo.XXXXXX)
chmod 755 "$work"  # tshark reads the capture as an unprivileged user (step 4)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

server_ip=10.77.1.1 client_ip=10.77.1.2
# The dpdk provider's settings for one end of a fresh memif link (one socket per step).
dpdk_env() {  # role socket ip
  echo "-p dpdk -e ESOCK_DPDK_VDEV=net_memif0,role=$1,socket=$2,socket-abstract=no -e ESOCK_DPDK_IP=$3/24"
}
# The memif client can only attach once the server created the link's socket.
wait_for_socket() {
  for _ in $(seq 1 1000); do
    [ -S "$1" ] && return 0
    kill -0 "$2" 2> /dev/null || return 1
    sleep 0.01
  done
  return 1
}
# Starts a server that prints "port N" first; sets $port.
start_server() {  # log cmd...
  local log=$1
  shift
  mkfifo "$log.fifo"
  "$@" > "$log.fifo" 2> "$log.err" &
  pids+=($!)
  exec 3< "$log.fifo"
  read -r word port <&3 || { cat "$log.err"; return 1; }
  [ "$word" = port ] || return 1
  cat <&3 > "$log.out" &
}

echo "== 1. nc (netcat-openbsd, unmodified) under esockrun --ddp, over iWARP on DPDK memif"
head -c 4000000 /dev/urandom > "$work/nc.in"
sock=$work/nc.sock
# shellcheck disable=SC2046 # word splitting of the option list is intended
"$esockrun" --ddp $(dpdk_env server "$sock" $server_ip) nc -N -l 5555 > "$work/nc.out" &
ncpid=$!
pids+=($ncpid)
wait_for_socket "$sock" $ncpid
# The client keeps its connection a moment after the data (its stdin ends later), so that
# esock-stat can show both ends of it.
# shellcheck disable=SC2046
{ cat "$work/nc.in"; sleep 1.5; } |
  "$esockrun" -q --ddp $(dpdk_env client "$sock" $client_ip) nc -N $server_ip 5555 &
ncclient=$!
pids+=($ncclient)
for _ in $(seq 100); do [ "$(stat -c %s "$work/nc.out")" = 4000000 ] && break; sleep 0.05; done
sleep 0.3  # the next snapshot (every 100 ms while busy)
echo "   esock-stat while the connection is up:"
"$build/tools/esock-stat/esock-stat" | sed 's/^/   | /'
wait $ncclient $ncpid
echo "   sent    $(sha256sum < "$work/nc.in" | cut -c1-16)...  4000000 octets"
echo "   received $(sha256sum < "$work/nc.out" | cut -c1-16)...  $(stat -c %s "$work/nc.out") octets"
cmp -s "$work/nc.in" "$work/nc.out" || { echo "   MISMATCH"; exit 1; }
echo "   identical"

echo
echo "== 2. DDPMODE echo (ddp_echo_server / ddp_echo_client), Markers required, CRC32c"
sock=$work/echo.sock
# shellcheck disable=SC2046
start_server "$work/echo" "$esockrun" $(dpdk_env server "$sock" $server_ip) \
  -e ESOCK_MPA_MARKERS=require -e ESOCK_DPDK_PCAP="$work/echo.pcap" \
  "$ex/ddp_echo_server" -p 7000 -n 1
wait_for_socket "$sock" "${pids[-1]}"
# shellcheck disable=SC2046
"$esockrun" $(dpdk_env client "$sock" $client_ip) -e ESOCK_MPA_MARKERS=require \
  "$ex/ddp_echo_client" $server_ip "$port" -n 12 -l 1000000 | sed 's/^/   /'
wait "${pids[-1]}"

echo
echo "== 3. RDMA Write ping-pong through the extension API (esock_reg_mr, esock_post_write)"
sock=$work/rdma.sock
# shellcheck disable=SC2046
start_server "$work/rdma" "$esockrun" $(dpdk_env server "$sock" $server_ip) \
  "$ex/esock_rdma_pingpong" -p 7001 -l 4096 -n 2000
wait_for_socket "$sock" "${pids[-1]}"
# shellcheck disable=SC2046
"$esockrun" $(dpdk_env client "$sock" $client_ip) \
  "$ex/esock_rdma_pingpong" $server_ip "$port" -l 4096 -n 2000 2>&1 | sed 's/^/   /'
wait "${pids[-1]}"

echo
echo "== 4. the step-2 capture ($(stat -c %s "$work/echo.pcap") octets) decoded by tshark"
plugins=$build/dissector/plugins
ts=(tshark)
if [ -d "$plugins" ] && command -v setpriv > /dev/null; then
  # Wireshark ignores WIRESHARK_PLUGIN_DIR for root: read as nobody with the build's plugin.
  chmod 644 "$work/echo.pcap"
  ts=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp
    WIRESHARK_PLUGIN_DIR="$plugins" tshark)
fi
cap() {  # heuristics first: a dissector registered for either port would see the MPA Request first
  "${ts[@]}" -r "$work/echo.pcap" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE \
    "$@" 2> /dev/null
}
if cap -G plugins 2> /dev/null | grep -q esock || "${ts[@]}" -G plugins 2> /dev/null | grep -q esock; then
  cap -Y 'esock_mpa.frame || esock_stream' | head -n 10 | sed 's/^/   /' || true  # head ends tshark early
  echo "   ..."
  fpdus=$(cap -Y esock_mpa.fpdu -T fields -e esock_mpa.crc.status | tr ',' '\n' | grep -c . || true)
  good=$(cap -Y esock_mpa.fpdu -T fields -e esock_mpa.crc.status | tr ',' '\n' | grep -c '^1$' || true)
  markers=$(cap -Y esock_mpa.marker -T fields -e esock_mpa.marker.fpduptr | tr ',' '\n' | grep -c . || true)
  malformed=$(cap -Y _ws.malformed | wc -l)
  echo "   FPDUs: $fpdus, CRC32c good: $good, Markers: $markers, malformed frames: $malformed"
  [ "$fpdus" -gt 0 ] && [ "$good" -eq "$fpdus" ] && [ "$markers" -gt 0 ] && [ "$malformed" -eq 0 ] ||
    { echo "   the capture does not decode cleanly"; exit 1; }
  echo "   ESTP messages by type (docs/stream-protocol.md):"
  cap -Y esock_stream.type -T fields -e esock_stream.type | tr ',' '\n' | sort | uniq -c |
    awk 'BEGIN { split("DATA CREDIT SRCAVAIL RDMADONE SINKAVAIL WRITEDONE SINKCANCEL FIN", n) }
         { t = $2; sub(/^0x/, "", t); printf "     %-10s %s\n", n[t + 0], $1 }'
else
  echo "   (esock's Wireshark plugin is not built; Wireshark's own iWARP dissectors:)"
  cap -Y iwarp_mpa | head -n 10 | sed 's/^/   /' || true
fi
echo
echo "esock demo: ok"
