#!/usr/bin/env bash
# Sets up, builds and runs the esock demonstration on its embedded default: two processes
# joined by a DPDK net_memif link (no NIC), each with esock's own TCP/IP stack under
# libesock's dpdk provider (examples/demo-memif.sh says what the four steps show).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/install-deps.sh"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=(esock esock_dpdk esockrun ddp_echo_server ddp_echo_client esock_rdma_pingpong)
# The Wireshark plugin decodes the capture (step 4); without it tshark's own dissectors do.
if cmake --build build --target help | grep -q '^esock_wireshark:'; then targets+=(esock_wireshark); fi
cmake --build build -j "$(nproc)" --target "${targets[@]}" >/dev/null
exec "$root/examples/demo-memif.sh" "$root/build"
