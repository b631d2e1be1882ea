#!/usr/bin/env bash
# Regenerates dissector/tests/captures/esock-rfc7306.pcap: esock's own RFC 7306 traffic,
# captured by the dpdk provider's pcap writer (ESOCK_DPDK_PCAP) on the server's end of a
# net_memif link: examples/sockets/atomic_counter (200 FetchAdds, 20 lock rounds of CmpSwap,
# an RDMA Write with Immediate Data with Solicited Event, then a misaligned FetchAdd the
# server refuses with a Terminate 0x0207), as esock sends and receives it.
# Usage: make_rfc7306_capture.sh PATH/TO/esock_atomic_counter [OUTPUT_DIR]   (no root needed)
set -euo pipefail
bin=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/captures}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vdev() { echo "net_memif0,role=$1,socket=$tmp/memif.sock,socket-abstract=no"; }
mkfifo "$tmp/fifo"
ESOCK_PROVIDER=dpdk ESOCK_DPDK_VDEV="$(vdev server)" ESOCK_DPDK_IP=10.95.0.1/24 \
	ESOCK_DPDK_PCAP="$tmp/server.pcap" timeout 60 "$bin" -p 0 -x >"$tmp/fifo" &
spid=$!
exec 3<"$tmp/fifo"
read -r _ port <&3
ESOCK_PROVIDER=dpdk ESOCK_DPDK_VDEV="$(vdev client)" ESOCK_DPDK_IP=10.95.0.2/24 \
	timeout 60 "$bin" 10.95.0.1 "$port" -n 200 -m 20 -x
cat <&3
wait "$spid"
cp "$tmp/server.pcap" "$out/esock-rfc7306.pcap"
echo "wrote $out/esock-rfc7306.pcap"
