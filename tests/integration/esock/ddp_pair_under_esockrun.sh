#!/usr/bin/env bash
# A separate DDPMODE client and server, built without esock, each run under esockrun: both
# must exit 0 with their data verified. The program alone (no esockrun) must fail at its
# setsockopt(SOL_ESOCK), which shows the DDPMODE path really came from the preload.
set -uo pipefail
esockrun=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if "$prog" server > /dev/null 2>&1; then echo "ran without esockrun?"; exit 1; fi
mkfifo "$dir/fifo"
"$esockrun" "$prog" server > "$dir/fifo" 2> "$dir/server.err" &
spid=$!
exec 3< "$dir/fifo"
if ! read -r word port <&3 || [ "$word" != port ]; then
  echo "server did not start"; cat "$dir/server.err"; kill "$spid" 2> /dev/null; exit 1
fi
timeout 120 "$esockrun" "$prog" client "$port"
crc=$?
src=0
cat <&3 || true
wait "$spid" || src=$?
cat "$dir/server.err"
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || { echo "client $crc, server $src"; exit 1; }
echo "DDPMODE pair under esockrun: ok"
