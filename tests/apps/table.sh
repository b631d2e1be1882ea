#!/usr/bin/env bash
# The results of the last apps run (RESULT lines in results.tsv) as a Markdown table, one row
# per program and mode, for docs/compatibility.md:  tests/apps/table.sh build/tests/apps/results.tsv
set -eu
printf '| program | mode | result | seconds | checked, and throughput (same run) |\n|---|---|---|---:|---|\n'
awk -F'\t' '$1 == "RESULT" { last[$2 "\t" $3] = $0; order[$2 "\t" $3] = NR }
  END { for (k in last) print order[k] "\t" last[k] }' "$1" | sort -n | cut -f2- |
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6 }'
