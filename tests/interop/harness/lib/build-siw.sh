#!/bin/bash
# Build siw.ko out of tree against the unpacked Debian headers with gcc-12
# (the compiler Debian used, so vermagic and modversions match):
#   stock    unmodified source -> build/kernel/lib/modules/<v>/updates/siw.ko
#            ("the real siw"; loaded with modprobe -d build/kernel)
#   tunable  the same source with siw's compile-time constants turned into
#            read-only module parameters (same defaults), plus the harness
#            parameter fix_accept_race (default N) -> build/siw-tunable/siw.ko
# Skips the build when the outputs are newer than the sources and this script.
set -euo pipefail
. "$(dirname "$0")/common.sh"

v=$(kernel_version)
hdir="$BUILD_DIR/kheaders/usr/src/linux-headers-$v"
[ -f "$hdir/Makefile" ] || die "kernel headers missing ($hdir): run build.sh"
[ -f "$BUILD_DIR/siw-src/siw_main.c" ] || die "siw source missing ($BUILD_DIR/siw-src): run build.sh"
command -v gcc-12 >/dev/null || die "gcc-12 missing: run install-deps.sh"
command -v make >/dev/null || die "make missing: run install-deps.sh"

stock_ko="$KDIR/lib/modules/$v/updates/siw.ko"
if [ "${1:-}" != --force ] && [ -f "$stock_ko" ] && [ -f "$TUNABLE_KO" ] \
   && [ -z "$(find "$BUILD_DIR/siw-src" "$0" "$HARNESS_DIR/lib/patch-siw-tunable.py" -newer "$TUNABLE_KO" 2>/dev/null)" ]; then
    exit 0
fi

build_one() {   # $1 = stock | tunable
    local fl=$1 out="$BUILD_DIR/siw-build/$1"
    rm -rf "$out"; mkdir -p "$out"
    cp "$BUILD_DIR"/siw-src/* "$out"/
    if [ "$fl" = tunable ]; then
        python3 "$HARNESS_DIR/lib/patch-siw-tunable.py" "$out" || die "tunable patch failed for this siw source"
    fi
    log "building siw ($fl) for $v"
    make -s -C "$hdir" M="$out" CC=gcc-12 CONFIG_RDMA_SIW=m modules 2>&1 \
        | grep -v 'Skipping BTF generation' >&2 || true
    [ -f "$out/siw.ko" ] || die "siw ($fl) build failed (see the compiler output above)"
    strip --strip-debug "$out/siw.ko"
}

build_one stock
build_one tunable
mkdir -p "$(dirname "$stock_ko")" "$(dirname "$TUNABLE_KO")"
cp "$BUILD_DIR/siw-build/stock/siw.ko" "$stock_ko"
cp "$BUILD_DIR/siw-build/tunable/siw.ko" "$TUNABLE_KO"
depmod -b "$KDIR" "$v"
modinfo -F vermagic "$stock_ko" | sed 's/^/siw vermagic: /' >&2
modinfo -F parm "$TUNABLE_KO" | cut -d: -f1 | tr '\n' ' ' | sed 's/^/tunable siw parameters: /' >&2; echo >&2
