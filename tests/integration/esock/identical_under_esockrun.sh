#!/usr/bin/env bash
# An unmodified program (built without esock) prints the same transcript plainly and under
# esockrun, and esockrun really preloaded libesock.so (checked through /proc/self/maps).
# Each run's transcript is printed when it fails, so a CI log shows which step broke.
set -uo pipefail
esockrun=$1 prog=$2
plain=$("$prog" 2>&1) || { echo "plain run failed:"; echo "$plain"; exit 1; }
preloaded=$("$esockrun" "$prog" 2>&1) || { echo "run under esockrun failed:"; echo "$preloaded"; exit 1; }
if [ "$plain" != "$preloaded" ]; then
  echo "transcripts differ"; diff <(echo "$plain") <(echo "$preloaded"); exit 1
fi
"$esockrun" cat /proc/self/maps | grep -q 'libesock\.so' || { echo "libesock.so not mapped"; exit 1; }
echo "$plain"
echo "identical under esockrun"
