#!/usr/bin/env bash
# esockrun's own checks and the configuration's validation (issue 19; esockrun(1), esock(7)):
#   esockrun_checks.sh ESOCKRUN LIBESOCK VERSION
# --version and --list-providers; an unknown provider, a bad configuration file and a
# missing one refused before the program runs (exit 2, the program never started, the
# problem named with FILE:LINE); a misspelt variable warned about once (not again by the
# library) while the program runs; and, without esockrun, the library itself refusing a
# DDPMODE connect (EINVAL) under a bad configuration, saying why.
set -u
ESOCKRUN=$1 LIB=$2 VERSION=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ESOCKRUN" --version | grep -qx "esockrun (esock) $VERSION" || fail "--version: $("$ESOCKRUN" --version)"
"$ESOCKRUN" --list-providers >"$TMP/list" || fail "--list-providers exit $?"
grep -q "^ksock  *built in$" "$TMP/list" || fail "--list-providers: no ksock: $(cat "$TMP/list")"

# Refused before the program runs: exit 2, the marker file never made, the reason printed.
refused() {  # refused WHAT EXPECTED_MESSAGE esockrun-args...
	local what=$1 msg=$2
	shift 2
	rm -f "$TMP/ran"
	"$ESOCKRUN" "$@" -- touch "$TMP/ran" 2>"$TMP/err"
	local rc=$?
	[ $rc = 2 ] || fail "$what: exit $rc, not 2"
	[ ! -e "$TMP/ran" ] || fail "$what: the program ran"
	grep -qF "$msg" "$TMP/err" || fail "$what: no '$msg' in: $(cat "$TMP/err")"
	echo "ok: $what refused: $(head -1 "$TMP/err")"
}
refused "unknown provider" "no provider 'bogus'" -p bogus
# The rdmacm provider on a machine without an RDMA device (this one, and CI's): esockrun
# accepts it (the plugin loads), and a DDPMODE connect fails with ENODEV and a line that
# says what to set up. (With a device, tests/interop/rdmacm runs it.)
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	"$ESOCKRUN" -p rdmacm --ddp -- /usr/bin/python3 -c '
import errno, socket, sys
s = socket.socket()
try:
    s.connect(("10.1.2.3", 9))
except OSError as e:
    sys.exit(0 if e.errno == errno.ENODEV else 3)
sys.exit(4)' 2>"$TMP/err" || fail "rdmacm without a device: not ENODEV ($?): $(cat "$TMP/err")"
	grep -q "the rdmacm provider needs an RDMA device: no RDMA device on this machine" "$TMP/err" ||
		fail "rdmacm without a device: no clear message: $(cat "$TMP/err")"
	echo "ok: rdmacm without a device: $(grep -m1 rdmacm "$TMP/err" | cut -c1-100)"
fi
printf 'provider = ksock\nmpa_crc = sometimes\n' >"$TMP/bad.conf"
refused "bad value" "$TMP/bad.conf:2: mpa_crc: must be one of refuse, allow, require, not 'sometimes'" -c "$TMP/bad.conf"
printf '# ok\nprovder = dpdk\n' >"$TMP/typo.conf"
refused "unknown key" "$TMP/typo.conf:2: unknown setting 'provder' (did you mean 'provider'?)" -c "$TMP/typo.conf"
refused "missing file" "ESOCK_CONFIG: cannot read $TMP/none.conf: No such file or directory" -c "$TMP/none.conf"
refused "bad variable" "ESOCK_RECV_BUFFERS: must be 4..1024, not 9999" -e ESOCK_RECV_BUFFERS=9999

# A misspelt variable: a warning, once, and the program runs. The program opens a DDPMODE
# socket so that libesock reads its configuration too (and must not warn again).
ESOCK_SPIN_UZ=5 "$ESOCKRUN" --ddp -- /usr/bin/python3 -c 'import socket; socket.socket()' 2>"$TMP/err" ||
	fail "a misspelt variable stopped the program: $(cat "$TMP/err")"
[ "$(grep -c "ESOCK_SPIN_UZ is not an esock setting (did you mean ESOCK_SPIN_US?)" "$TMP/err")" = 1 ] ||
	fail "misspelt variable: expected one warning: $(cat "$TMP/err")"
# A child that changes its ESOCK_* variables reads another configuration: its own
# misspelling is reported by the library, esockrun's check does not cover it.
"$ESOCKRUN" --ddp -q -- sh -c 'ESOCK_LOGG=info exec /usr/bin/python3 -c "import socket; socket.socket()"' \
	2>"$TMP/err" || fail "a child with its own variables: $(cat "$TMP/err")"
grep -q "ESOCK_LOGG is not an esock setting" "$TMP/err" ||
	fail "a child's own misspelling went unreported: $(cat "$TMP/err")"
echo "ok: a misspelt variable warned about once, and a child's own one too"

# Profiles: a profile fills what nothing else sets; -e and the file win.
"$ESOCKRUN" -P latency -v -- true 2>"$TMP/err" || fail "--profile latency"
grep -qx "esockrun: ESOCK_SPIN_US=1000" "$TMP/err" || fail "profile latency: $(cat "$TMP/err")"
"$ESOCKRUN" -P latency -e ESOCK_SPIN_US=7 -v -- true 2>"$TMP/err" || fail "--profile latency -e"
grep -qx "esockrun: ESOCK_SPIN_US=7" "$TMP/err" || fail "-e under a profile: $(cat "$TMP/err")"
printf 'recv_buffers = 8\n' >"$TMP/r8.conf"
"$ESOCKRUN" -P throughput -c "$TMP/r8.conf" -v -- true 2>"$TMP/err" || fail "--profile throughput with a file"
grep -q "ESOCK_CONFIG=" "$TMP/err" || fail "-v did not list the variables: $(cat "$TMP/err")"
grep -q "ESOCK_RECV_BUFFERS" "$TMP/err" && fail "the profile overrode the file: $(cat "$TMP/err")"
refused "unknown profile" "no profile 'fast'" -P fast
echo "ok: profiles fill only what nothing else sets"

# A plain TCP server without esock (its port in $TMP/plain.port), for a connection esock
# must refuse under ESOCK_FALLBACK=fail.
/usr/bin/python3 -c '
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(8)
open(sys.argv[1], "w").write(str(l.getsockname()[1]))
while True:
    c, _ = l.accept(); c.settimeout(2)
    try: c.recv(100)
    except OSError: pass
    c.close()
' "$TMP/plain.port" &
PLAIN=$!
trap 'kill $PLAIN 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -s "$TMP/plain.port" ] && break; sleep 0.05; done
# A DDPMODE listener and a connection to it on loopback (ksock), then a connection to the
# plain server that must fail, under esockrun --ddp with ESOCK_LOG and the rules given;
# what esock said on stderr goes to $TMP/log.
pair() {
	"$ESOCKRUN" -q --ddp -p ksock -e ESOCK_FALLBACK=fail "$@" -- /usr/bin/python3 -c '
import socket, sys, threading
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
t = threading.Thread(target=lambda: l.accept()[0].recv(1)); t.start()
c = socket.socket(); c.connect(("127.0.0.1", l.getsockname()[1])); c.send(b"x"); t.join()
f = socket.socket()
try:
    f.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    pass
' "$(cat "$TMP/plain.port")" 2>"$TMP/log"
}
pair -e ESOCK_LOG=info || fail "the pair under ESOCK_LOG=info: $(cat "$TMP/log")"
for line in "esock: listening: port [0-9]* (ksock)" "esock: connected to 127.0.0.1 port [0-9]* (ksock provider)" \
	"esock: accepted 127.0.0.1 port [0-9]* (ksock provider)" "esock: closing the connection to 127.0.0.1 port [0-9]*" "esock: connect to 127.0.0.1 port $(cat "$TMP/plain.port"): "; do
	grep -q "^$line" "$TMP/log" || fail "ESOCK_LOG=info: no '$line' in: $(cat "$TMP/log")"
done
pair || fail "the pair at the default level"
grep -q "connected to\|listening" "$TMP/log" && fail "info lines at the default level: $(cat "$TMP/log")"
grep -q "^esock: connect to 127.0.0.1 port $(cat "$TMP/plain.port"): " "$TMP/log" ||
	fail "the default level hides a failure: $(cat "$TMP/log")"
pair -e ESOCK_LOG=error || fail "the pair at ESOCK_LOG=error"
[ ! -s "$TMP/log" ] || fail "ESOCK_LOG=error printed: $(cat "$TMP/log")"
echo "ok: ESOCK_LOG error / warn (default) / info"

# Rules: only port 1 goes DDPMODE, so the pair's listener and connection stay plain TCP.
pair -e ESOCK_LOG=info -e ESOCK_DDPMODE_PORTS=1 || fail "the pair under a ports rule"
grep -q "listening\|connected to\|accepted\|connect to" "$TMP/log" && fail "a ports rule let through: $(cat "$TMP/log")"
pair -e ESOCK_LOG=info -e ESOCK_DDPMODE_PROGRAMS=nginx || fail "the pair under a programs rule"
grep -q "listening\|connected to" "$TMP/log" && fail "a programs rule let through: $(cat "$TMP/log")"
pair -e ESOCK_LOG=info -e ESOCK_DDPMODE_PROGRAMS=python3 -e ESOCK_DDPMODE_PEERS=127.0.0.0/8 ||
	fail "the pair under matching rules"
grep -q "^esock: connected to" "$TMP/log" || fail "matching rules kept DDPMODE out: $(cat "$TMP/log")"
echo "ok: rules (ports, programs, peers)"

# Without esockrun: the library refuses DDPMODE under a bad configuration, and says why.
out=$(ESOCK_CONFIG="$TMP/bad.conf" LD_PRELOAD="$LIB" /usr/bin/python3 -c '
import errno, socket
s = socket.socket()
s.setsockopt(0x6573, 1, 1)  # SOL_ESOCK, ESOCK_DDPMODE
try:
    s.connect(("127.0.0.1", 9))
    print("connected")
except OSError as e:
    print(errno.errorcode[e.errno])
' 2>"$TMP/err")
[ "$out" = EINVAL ] || fail "DDPMODE connect under a bad configuration: $out"
grep -qF "$TMP/bad.conf:2: mpa_crc" "$TMP/err" && grep -q "configuration has errors" "$TMP/err" ||
	fail "the library did not say why: $(cat "$TMP/err")"
# ... while a socket ESOCK_DDPMODE_ALL armed goes on as plain TCP: the program still works.
out=$(ESOCK_CONFIG="$TMP/bad.conf" ESOCK_DDPMODE_ALL=1 LD_PRELOAD="$LIB" /usr/bin/python3 -c '
import socket, sys
s = socket.socket()
s.connect(("127.0.0.1", int(sys.argv[1])))
print("connected")
' "$(cat "$TMP/plain.port")" 2>"$TMP/err")
[ "$out" = connected ] || fail "an armed socket under a bad configuration: $out $(cat "$TMP/err")"
echo "ok: the library refuses DDPMODE (EINVAL) under a bad configuration; armed sockets go plain"
echo PASS
