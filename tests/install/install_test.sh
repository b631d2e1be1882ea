#!/usr/bin/env bash
# Issue 19's install test (CTest label "install"; docs: README "Install"):
#   install_test.sh BUILD_DIR SOURCE_DIR
# 1. `cmake --install` into a fresh prefix: the FHS layout, esockrun run from there (a
#    relocated prefix), and the uninstall target removes every file it wrote.
# 2. The .debs (cpack): installed with dpkg, then as a user would: a program built with
#    `pkg-config --cflags --libs esock` and one with find_package(esock) run (a DDPMODE
#    connection each, data compared), an unmodified nc pair under the installed esockrun
#    --ddp (16 MB, SHA-256 equal, the server's listener really in DDPMODE), esockrun's
#    --version/--list-providers/unknown provider, `man` for every page, tshark loading the
#    plugin; then every package purged and none of the files they held left.
# Needs root and dpkg (it installs into this machine's /usr and removes it again); exits
# 77 (skip) without them. Refuses to run when esock packages are installed already.
set -u
BUILD=$(realpath "$1") SRC=$(realpath "$2")
PKGS=(libesock0 esock-dpdk esock-rdmacm esock-tools libesock-dev esock-wireshark)
TMP=$(mktemp -d)
PIDS=()
installed=0
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
cleanup() {
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	if [ "$installed" = 1 ]; then dpkg --purge "${PKGS[@]}" >/dev/null 2>&1; fi
	rm -rf "$TMP"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] && command -v dpkg >/dev/null && command -v cpack >/dev/null ||
	{ echo "SKIP: needs root, dpkg and cpack"; exit 77; }
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok" &&
		fail "$p is installed already: purge it first (dpkg --purge ${PKGS[*]})"
done

# ---- 1. cmake --install into a prefix of its own, then uninstall
PREFIX=$TMP/opt/esock
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log"; fail "cmake --install"; }
LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$BUILD/CMakeCache.txt")
for f in bin/esockrun bin/esock-stat "$LIBDIR/libesock.so.0" "$LIBDIR/libesock.so" include/esock/esock.h \
	include/esock/version.h "$LIBDIR/pkgconfig/esock.pc" "$LIBDIR/cmake/esock/esockConfig.cmake" \
	share/man/man7/esock.7 share/man/man1/esockrun.1 share/man/man3/esock_reg_mr.3; do
	[ -e "$PREFIX/$f" ] || fail "cmake --install left out $f"
done
[ -e "$PREFIX/$LIBDIR/esock/libesock_dpdk.so" ] || fail "no dpdk plugin under $LIBDIR/esock"
[ -e "$PREFIX/$LIBDIR/esock/libesock_rdmacm.so" ] || fail "no rdmacm plugin under $LIBDIR/esock"
ls "$PREFIX/$LIBDIR"/wireshark/plugins/*/epan/esock.so >/dev/null 2>&1 ||
	fail "the Wireshark plugin is not under the prefix"
"$PREFIX/bin/esockrun" --version | grep -q "library: $PREFIX/bin/../$LIBDIR/libesock.so.0" ||
	fail "the relocated esockrun does not preload the library beside it: $("$PREFIX/bin/esockrun" --version)"
"$PREFIX/bin/esockrun" --list-providers | grep -q "^dpdk .*$PREFIX/bin/../$LIBDIR/esock/libesock_dpdk.so$" ||
	fail "the relocated esockrun does not find the dpdk plugin: $("$PREFIX/bin/esockrun" --list-providers)"
ok "cmake --install --prefix: $(find "$PREFIX" -type f | wc -l) files in their places"
cmake --build "$BUILD" --target uninstall >"$TMP/uninstall.log" 2>&1 ||
	{ cat "$TMP/uninstall.log"; fail "uninstall target"; }
left=$(find "$PREFIX" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"
ok "uninstall target: nothing left"

# ---- 2. The .deb packages
(cd "$TMP" && cpack --config "$BUILD/CPackConfig.cmake" -B "$TMP/debs" >"$TMP/cpack.log" 2>&1) ||
	{ cat "$TMP/cpack.log"; fail "cpack"; }
debs=("$TMP"/debs/*.deb)
[ ${#debs[@]} = ${#PKGS[@]} ] || fail "cpack made ${#debs[@]} packages, not ${#PKGS[@]}: ${debs[*]}"
for d in "${debs[@]}"; do echo "  $(dpkg-deb -f "$d" Package Version Depends | tr '\n' ' ')"; done
installed=1
dpkg -i "${debs[@]}" >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg -i"; }
for p in "${PKGS[@]}"; do dpkg -L "$p"; done | sort -u >"$TMP/files"
ok "dpkg -i: ${#PKGS[@]} packages, $(wc -l <"$TMP/files") paths"

# A program built with pkg-config, and one with find_package(esock), each run.
cc -O2 -o "$TMP/pc_consumer" "$SRC/tests/install/consumer/consumer.c" \
	$(pkg-config --cflags --libs esock) -pthread || fail "building with pkg-config"
"$TMP/pc_consumer" | grep -q "^consumer ok" || fail "the pkg-config program"
ok "pkg-config --cflags --libs esock: $("$TMP/pc_consumer")"
cmake -S "$SRC/tests/install/consumer" -B "$TMP/cm" >"$TMP/cm.log" 2>&1 &&
	cmake --build "$TMP/cm" >>"$TMP/cm.log" 2>&1 || { cat "$TMP/cm.log"; fail "building with find_package(esock)"; }
"$TMP/cm/consumer" | grep -q "^consumer ok" || fail "the find_package program"
ok "find_package(esock): $("$TMP/cm/consumer")"

# The installed esockrun.
ESOCKRUN=/usr/bin/esockrun
[ -x $ESOCKRUN ] || fail "no $ESOCKRUN"
$ESOCKRUN --version | grep -q "^esockrun (esock) " || fail "esockrun --version"
/usr/bin/esock-stat --version | grep -q "^esock-stat (esock) " || fail "esock-stat --version"
for prov in dpdk rdmacm; do
	$ESOCKRUN --list-providers | grep -q "^$prov .*/esock/libesock_$prov.so$" ||
		fail "esockrun --list-providers: $($ESOCKRUN --list-providers)"
done
$ESOCKRUN -p bogus true 2>"$TMP/bogus" && fail "an unknown provider was accepted"
grep -q "no provider 'bogus'" "$TMP/bogus" || fail "unknown provider message: $(cat "$TMP/bogus")"
ok "esockrun --version, --list-providers, -p bogus refused"

# An unmodified program under the installed esockrun --ddp: nc, 16 MB, SHA-256 compared.
PORT=$((30000 + $$ % 20000))
head -c $((16 << 20)) /dev/urandom >"$TMP/in"
while ss -Htln "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done  # a free port
ESOCK_DEBUG=1 timeout 90 $ESOCKRUN --ddp -e ESOCK_FALLBACK=fail -- nc -4 -l -N -p $PORT >"$TMP/out" 2>"$TMP/nc.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q "esock: listening: port $PORT " "$TMP/nc.err" && break; sleep 0.05; done
grep -q "esock: listening: port $PORT " "$TMP/nc.err" ||
	fail "nc under esockrun --ddp did not listen in DDPMODE: $(cat "$TMP/nc.err")"
timeout 60 $ESOCKRUN --ddp -e ESOCK_FALLBACK=fail -- nc -4 -N 127.0.0.1 $PORT <"$TMP/in" ||
	fail "nc client under esockrun --ddp"
wait "${PIDS[0]}"
[ "$(sha256sum <"$TMP/in")" = "$(sha256sum <"$TMP/out")" ] ||
	fail "nc over DDPMODE: $(stat -c %s "$TMP/out") of 16777216 octets, or they differ"
ok "nc | nc under esockrun --ddp: 16 MB, SHA-256 equal"

# Every man page, through man.
for page in 7:esock 1:esockrun 1:esock-stat 3:esock_reg_mr 3:esock_post_send 3:esock_poll_cq 3:esock_query_mpa \
	3:esock_dereg_mr 3:esock_version 3:esock_post_atomic_fetch_add 3:esock_post_send_imm 3:esock_tripwire_arm; do
	sec=${page%%:*} name=${page#*:}
	man -w "$sec" "$name" >/dev/null 2>&1 || fail "man $sec $name: not found"
	MANPAGER=cat MANWIDTH=80 man "$sec" "$name" 2>/dev/null | grep -qi "$name" || fail "man $sec $name: empty"
done
ok "man esock, esockrun and the esock_* pages"

# The Wireshark plugin, where Wireshark looks.
if command -v tshark >/dev/null; then
	tshark -G plugins 2>/dev/null | grep -q "esock.so" || fail "tshark does not load esock.so"
	ok "tshark -G plugins: esock.so"
fi

# ---- Remove: nothing of esock remains.
dpkg --purge "${PKGS[@]}" >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; fail "dpkg --purge"; }
installed=0
left=""
while read -r f; do
	[ -d "$f" ] && continue  # shared folders (/usr/bin, ...) stay
	[ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done <"$TMP/files"
[ -z "$left" ] || fail "left after purge:$left"
for d in /usr/lib/*/esock /usr/lib/esock /usr/include/esock /usr/lib/*/cmake/esock; do
	[ -e "$d" ] && fail "left after purge: $d"
done
ok "dpkg --purge: nothing of esock left"
echo "PASS"
