#!/usr/bin/env bash
# Programs nobody here wrote, from Debian's packages, run unchanged under esockrun (both
# ends preloaded, pass-through): python3 http.server + curl and wget, nc both ways, iperf3,
# redis-server + redis-benchmark. Each checks its own output; a missing tool is skipped
# (scripts/install-deps.sh installs them all).
set -uo pipefail
esockrun=$(realpath "$1")
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
failures=0
have() { command -v "$1" >/dev/null 2>&1 || { echo "SKIP $1: not installed"; return 1; }; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits until something listens on the port, without connecting (nc -l and iperf3 -s -1
# would take the probe for their one client).
wait_port() { for _ in $(seq 400); do [ -n "$(ss -Hltn "sport = :$1")" ] && return 0; sleep 0.05; done; return 1; }
result() { if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2"; failures=$((failures + 1)); fi; }

# HTTP: a 1 MiB file served and fetched, compared byte for byte.
if have python3 && have curl; then
  mkdir "$work/www" && head -c 1048576 /dev/urandom > "$work/www/blob"
  p=$(port)
  (cd "$work/www" && exec "$esockrun" python3 -m http.server --bind 127.0.0.1 "$p") >"$work/http.log" 2>&1 &
  pids+=($!)
  wait_port "$p"
  "$esockrun" curl -sf -o "$work/blob.curl" "http://127.0.0.1:$p/blob" && cmp -s "$work/www/blob" "$work/blob.curl"
  result $? "curl fetches 1 MiB from python3 http.server"
  if have wget; then
    "$esockrun" wget -q -O "$work/blob.wget" "http://127.0.0.1:$p/blob" && cmp -s "$work/www/blob" "$work/blob.wget"
    result $? "wget fetches 1 MiB from python3 http.server"
  fi
fi

# nc: a listener writes what it receives to a file; the client sends 256 KiB and closes.
if have nc; then
  head -c 262144 /dev/urandom > "$work/nc.in"
  p=$(port)
  "$esockrun" nc -l 127.0.0.1 "$p" > "$work/nc.out" &
  ncpid=$!
  wait_port "$p" || true
  "$esockrun" nc -N 127.0.0.1 "$p" < "$work/nc.in"
  wait "$ncpid"
  cmp -s "$work/nc.in" "$work/nc.out"
  result $? "nc client to nc -l, 256 KiB verified"
fi

# iperf3: one second each way.
if have iperf3; then
  p=$(port)
  "$esockrun" iperf3 -s -1 -B 127.0.0.1 -p "$p" >"$work/iperf-s.log" 2>&1 &
  pids+=($!)
  wait_port "$p" || true
  "$esockrun" iperf3 -c 127.0.0.1 -p "$p" -t 1 >"$work/iperf-c.log" 2>&1 && grep -q "receiver" "$work/iperf-c.log"
  result $? "iperf3 -c against iperf3 -s, 1 s"
fi

# redis: redis-benchmark against redis-server, a short run with a few commands.
if have redis-server && have redis-benchmark; then
  p=$(port)
  "$esockrun" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
  pids+=($!)
  wait_port "$p" || true
  "$esockrun" redis-benchmark -p "$p" -n 2000 -c 4 -q -t set,get,incr >"$work/rb.log" 2>&1 &&
    [ "$(grep -c 'requests per second' "$work/rb.log")" = 3 ]
  result $? "redis-benchmark set/get/incr against redis-server"
  if have redis-cli; then
    "$esockrun" redis-cli -p "$p" set esock works >/dev/null && [ "$("$esockrun" redis-cli -p "$p" get esock)" = works ]
    result $? "redis-cli set/get"
  fi
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; for f in "$work"/*.log; do echo "== $f"; cat "$f"; done; exit 1; }
echo "all real programs pass through"
