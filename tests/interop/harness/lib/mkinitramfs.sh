#!/bin/bash
# Build build/initramfs.cpio.gz: static busybox + guest/init + only the
# modules needed to reach the host root over 9p (virtio-pci, virtio-net, 9p).
# The RDMA modules are loaded later from build/kernel by guest/siw-up.sh.
# Skips the work when the image is newer than its inputs.
set -euo pipefail
. "$(dirname "$0")/common.sh"

v=$(kernel_version)
BB=/bin/busybox
[ -x "$BB" ] && file -L "$BB" | grep -q 'statically linked' \
    || die "a static /bin/busybox is needed: run install-deps.sh (package busybox-static)"
command -v cpio >/dev/null || die "cpio missing: run install-deps.sh"
if [ -f "$INITRD" ] && [ -z "$(find "$HARNESS_DIR/guest/init" "$0" "$KDIR/lib/modules/$v/modules.dep" -newer "$INITRD")" ]; then
    exit 0
fi

ROOT="$BUILD_DIR/initramfs-root"
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,sbin,dev,proc,sys,tmp,newroot,etc,lib/modules}
cp "$BB" "$ROOT/bin/busybox"
install -m 755 "$HARNESS_DIR/guest/init" "$ROOT/init"

: > "$ROOT/lib/modules/load.order"
for m in virtio_pci virtio_net 9pnet_virtio 9p; do
    modprobe -d "$KDIR" -S "$v" --show-depends "$m"
done | awk '$1=="insmod"{print $2}' | awk '!seen[$0]++' | while read -r ko; do
    base=$(basename "$ko")
    case "$base" in
        *.ko.xz)  xz -dc "$ko" > "$ROOT/lib/modules/${base%.xz}"; base=${base%.xz};;
        *.ko.zst) zstd -dqc "$ko" > "$ROOT/lib/modules/${base%.zst}"; base=${base%.zst};;
        *)        cp "$ko" "$ROOT/lib/modules/$base";;
    esac
    echo "$base" >> "$ROOT/lib/modules/load.order"
done
[ -s "$ROOT/lib/modules/load.order" ] || die "no virtio/9p modules found in $KDIR"
# init needs a console before it mounts devtmpfs
mknod -m 600 "$ROOT/dev/console" c 5 1
mknod -m 666 "$ROOT/dev/null" c 1 3
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$INITRD.tmp"
mv "$INITRD.tmp" "$INITRD"
log "initramfs: $(du -h "$INITRD" | cut -f1), modules $(tr '\n' ' ' < "$ROOT/lib/modules/load.order")"
