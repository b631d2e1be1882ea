#!/usr/bin/env bash
# An unmodified program (built without esock) prints the same transcript plainly and under
# esockrun, and esockrun really preloaded libesock.so (checked through /proc/self/maps).
set -euo pipefail
esockrun=$1 prog=$2
plain=$("$prog")
preloaded=$("$esockrun" "$prog")
if [ "$plain" != "$preloaded" ]; then
  echo "transcripts differ"; diff <(echo "$plain") <(echo "$preloaded") || true; exit 1
fi
"$esockrun" cat /proc/self/maps | grep -q 'libesock\.so' || { echo "libesock.so not mapped"; exit 1; }
echo "$plain"
echo "identical under esockrun"
