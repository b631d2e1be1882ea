#!/usr/bin/env bash
# The esock demo: an iWARP server and client as two processes over 127.0.0.1, speaking
# MPA v2 (RFC 6581) with markers and CRC32c, DDP and RDMAP over kernel TCP sockets.
# Usage: demo-loopback.sh PATH/TO/iwarp_pingpong [extra options for both sides]
set -euo pipefail
bin=${1:?usage: demo-loopback.sh PATH/TO/iwarp_pingpong [options]}
shift
port=${ESOCK_DEMO_PORT:-17174}
log=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$log"' EXIT

echo "== esock demo: iWARP over kernel TCP on 127.0.0.1:$port (MPA v2, markers, CRC32c)"
"$bin" server --bind 127.0.0.1 --port "$port" --markers "$@" >"$log/server" 2>&1 &
server=$!
# Wait until the server listens (it prints a line once the socket is bound).
for _ in $(seq 1 500); do
  grep -q listening "$log/server" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$log/server"; exit 1; }
  sleep 0.01
done
"$bin" client 127.0.0.1 --port "$port" --markers --iters 2000 --bw-total 512M "$@"
wait "$server"
echo
echo "== server output"
cat "$log/server"
