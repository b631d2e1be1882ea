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
refused "provider not built" "no provider 'rdmacm'" -p rdmacm
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
echo "ok: a misspelt variable warned about once"

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
echo "ok: the library refuses DDPMODE (EINVAL) under a bad configuration"
echo PASS
