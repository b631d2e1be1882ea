#!/usr/bin/env bash
# Sets up, builds and runs the esock demonstration: an iWARP server and client
# (MPA v2 with markers and CRC32c, DDP, RDMAP) as two processes over 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/install-deps.sh"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target iwarp_pingpong >/dev/null
exec "$root/examples/demo-loopback.sh" "$root/build/examples/iwarp_pingpong"
