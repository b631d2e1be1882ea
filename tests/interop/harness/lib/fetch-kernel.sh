#!/bin/bash
# Download (apt-get download; nothing is installed) Debian's kernel image and
# the matching headers, kbuild and source packages, and unpack them:
#   build/kernel/    linux-image-<abi> (vmlinuz + modules; siw.ko is added later)
#   build/kheaders/  linux-headers-<abi> + -common + linux-kbuild
#   build/siw-src/   drivers/infiniband/sw/siw of linux-source-<x.y>
# Debian builds its kernels with CONFIG_RDMA_SIW unset, hence the source.
#   lib/fetch-kernel.sh [linux-image-PKG]   default: what linux-image-amd64 depends on
set -euo pipefail
. "$(dirname "$0")/common.sh"

img="${1:-}"
if [ -z "$img" ]; then
    img=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
    [ -n "$img" ] || die "apt-cache cannot resolve linux-image-amd64: run 'apt-get update' first"
fi
abi=${img#linux-image-}; abi=${abi%-unsigned}          # e.g. 6.1.0-56-amd64
ver=$(apt-cache show "$img" 2>/dev/null | awk '/^Version:/{print $2; exit}')
[ -n "$ver" ] || die "Debian package $img is unknown to apt (apt-get update?)"
hdr="linux-headers-$abi"
common=$(apt-cache depends "$hdr" | awk '/Depends: linux-headers-.*-common/{print $2; exit}')
kbuild=$(apt-cache depends "$hdr" | awk '/Depends: linux-kbuild-/{print $2; exit}')
[ -n "$common" ] && [ -n "$kbuild" ] || die "cannot resolve the dependencies of $hdr"
series=$(echo "$abi" | grep -oE '^[0-9]+\.[0-9]+')
src="linux-source-$series"

stamp="$img=$ver"
if [ "$(cat "$BUILD_DIR/kernel.pkg" 2>/dev/null)" = "$stamp" ] \
   && [ -d "$KDIR/lib/modules" ] && [ -f "$BUILD_DIR/siw-src/siw_main.c" ]; then
    exit 0
fi

DEBS="$BUILD_DIR/debs"
mkdir -p "$DEBS"
cd "$DEBS"
for p in "$img" "$hdr" "$common" "$kbuild" "$src"; do
    if ls ./"${p}_${ver//:/%3a}"_*.deb >/dev/null 2>&1; then continue; fi
    rm -f ./"${p}"_*.deb
    log "apt-get download $p=$ver"
    # apt warns that _apt cannot write here (downloads as root): harmless
    apt-get -q download "$p=$ver" 2>&1 | grep -v 'unsandboxed' >&2 || true
    ls ./"${p}"_*.deb >/dev/null 2>&1 || die "apt-get download $p=$ver failed"
done

log "unpacking $img, headers, kbuild"
rm -rf "$KDIR" "$BUILD_DIR/kheaders" "$BUILD_DIR/siw-src"
mkdir -p "$KDIR" "$BUILD_DIR/kheaders" "$BUILD_DIR/siw-src"
dpkg -x ./"${img}"_*.deb "$KDIR"
for n in "$hdr" "$common" "$kbuild"; do dpkg -x ./"${n}"_*.deb "$BUILD_DIR/kheaders"; done
# the arch headers' Makefile includes the -common tree by absolute path
hdir="$BUILD_DIR/kheaders/usr/src/$hdr"
sed -i "s|^include .*/$common/Makefile|include $BUILD_DIR/kheaders/usr/src/$common/Makefile|" "$hdir/Makefile"
log "extracting drivers/infiniband/sw/siw from $src"
dpkg-deb --fsys-tarfile ./"${src}"_*.deb \
  | tar -xO "./usr/src/$src.tar.xz" \
  | tar -xJ -C "$BUILD_DIR/siw-src" --strip-components=5 "$src/drivers/infiniband/sw/siw"
[ -f "$BUILD_DIR/siw-src/siw_main.c" ] || die "siw sources not found in $src"
grep -q '^# CONFIG_RDMA_SIW is not set' "$KDIR/boot/config-$abi" && log "(as expected, $abi has CONFIG_RDMA_SIW unset)"
depmod -b "$KDIR" "$abi"
echo "$stamp" > "$BUILD_DIR/kernel.pkg"
log "kernel $abi ready"
