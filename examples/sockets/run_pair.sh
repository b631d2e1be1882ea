#!/bin/sh
# run_pair.sh EXPECT server-cmd... -- client-cmd...
# Starts the server (which prints "port N" first), runs the client with the word PORT
# replaced by N, waits for both; passes when both exit 0 and the client's or the server's
# output contains EXPECT. No sleeps: the server's first line is read from a FIFO.
set -u
expect=$1
shift
server=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do server="$server '$1'"; shift; done
[ $# -gt 0 ] || { echo "usage: $0 EXPECT server... -- client..." >&2; exit 2; }
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/fifo"
eval "$server" > "$dir/fifo" 2> "$dir/server.err" &
spid=$!
exec 3< "$dir/fifo"
if ! read -r word port <&3 || [ "$word" != port ]; then
  echo "server did not report its port" >&2
  cat "$dir/server.err" >&2
  kill "$spid" 2> /dev/null
  exit 1
fi
cat <&3 > "$dir/server.out" &
catpid=$!
client=""
for a in "$@"; do
  [ "$a" = PORT ] && a=$port
  client="$client '$a'"
done
eval "timeout 100 $client" > "$dir/client.out" 2> "$dir/client.err"
crc=$?
# The server exits after its one connection (CTest's TIMEOUT bounds a hang).
wait "$spid"
src=$?
wait "$catpid"
echo "--- client (exit $crc)"; cat "$dir/client.out" "$dir/client.err"
echo "--- server (exit $src)"; cat "$dir/server.out" "$dir/server.err"
[ $crc -eq 0 ] && [ $src -eq 0 ] || exit 1
cat "$dir/client.out" "$dir/server.out" | grep -q -- "$expect" || { echo "no '$expect'"; exit 1; }
exit 0
