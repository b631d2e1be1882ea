#!/bin/bash
# Install (from Debian's archive, with apt-get) every host package the siw
# interop harness needs. Idempotent: prints nothing and does nothing when all
# packages are present. Needs root.
#   tests/interop/harness/install-deps.sh [--check]   --check: only list what is missing (rc 1 if any)
set -euo pipefail

PKGS=(
    qemu-system-x86          # the guest (TCG; KVM is unusable on this kind of machine)
    busybox-static           # the guest initramfs
    rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest   # guests run the host's user space over 9p
    iproute2 kmod procps iputils-ping coreutils   # ip/ss/rdma, modprobe/depmod, pkill, ping, timeout
    cpio gzip xz-utils zstd file bc                # initramfs + module unpacking
    gcc-12 make libelf-dev   # out-of-tree siw.ko against Debian's headers (same compiler Debian used)
    python3                  # host-side MPA probes
    tshark                   # capture + iwarp_mpa decode
    ethtool                  # siw_suite.sh's DPDK veth: offloads off (wire frames for af_packet)
)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" = --check ]; then
    echo "missing Debian packages: ${missing[*]}" >&2
    exit 1
fi
[ "$(id -u)" = 0 ] || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
echo "install-deps: installing ${missing[*]}" >&2
# tshark asks whether non-root users may capture; answer no, non-interactively
echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
export DEBIAN_FRONTEND=noninteractive
if ! apt-get -q -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >/tmp/esock-siw-apt.log 2>&1; then
    # package lists may be absent or stale on a fresh machine
    apt-get -q -o DPkg::Lock::Timeout=600 update >>/tmp/esock-siw-apt.log 2>&1 || true
    apt-get -q -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >>/tmp/esock-siw-apt.log 2>&1 \
        || { tail -20 /tmp/esock-siw-apt.log >&2; echo "install-deps: apt-get install failed (log: /tmp/esock-siw-apt.log)" >&2; exit 1; }
fi
echo "install-deps: done" >&2
