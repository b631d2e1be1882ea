#!/bin/bash
# Build everything the siw harness needs under tests/interop/harness/build/:
# Debian's kernel (apt-get download, unpacked, never installed), siw.ko in a
# stock and a tunable variant, the guest initramfs. Idempotent: a second run
# only checks stamps and takes a few seconds.
#   tests/interop/harness/build.sh [--force-siw]
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
"$HARNESS_DIR/install-deps.sh" --check 2>/dev/null || "$HARNESS_DIR/install-deps.sh" \
    || die "host packages missing and could not be installed: run install-deps.sh as root"
mkdir -p "$BUILD_DIR"
"$HARNESS_DIR/lib/fetch-kernel.sh"
"$HARNESS_DIR/lib/build-siw.sh" ${1:+--force}
"$HARNESS_DIR/lib/mkinitramfs.sh"
echo "siw harness built: kernel $(cat "$BUILD_DIR/kernel.pkg"), $(basename "$INITRD"), siw stock + tunable"
