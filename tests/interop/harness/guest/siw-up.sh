#!/bin/bash
# Runs INSIDE a guest (chrooted into the host's /). Loads the RDMA core and
# siw from the unpacked Debian kernel tree, creates siw0 on eth0 and waits
# until its port is ACTIVE.
#   siw-up.sh [stock]                stock siw (no module parameters exist)
#   siw-up.sh tunable [k=v ...]      harness-built variant, e.g. tunable fix_accept_race=1
#   siw-up.sh --reload ...           first delete siw0 and unload siw (stop rdma apps first)
set -eu
KDIR="$ESIW_HARNESS/build/kernel"
MP="modprobe -d $KDIR"

if [ "${1:-}" = --reload ]; then
    shift
    rdma link delete siw0 2>/dev/null || true
    if grep -q '^siw ' /proc/modules; then rmmod siw; fi
fi
variant=${1:-stock}; shift || true
for m in ib_core ib_uverbs iw_cm rdma_cm rdma_ucm crc32c_generic libcrc32c; do $MP "$m"; done
if ! grep -q '^siw ' /proc/modules; then
    case "$variant" in
        stock) $MP siw;;
        tunable) insmod "$ESIW_HARNESS/build/siw-tunable/siw.ko" "$@";;
        *) echo "siw-up: unknown variant '$variant' (stock|tunable)" >&2; exit 2;;
    esac
fi
rdma link show siw0/1 >/dev/null 2>&1 || rdma link add siw0 type siw netdev eth0
for _ in $(seq 50); do
    rdma link show siw0/1 | grep -q 'state ACTIVE' && break
    sleep 0.2
done
echo "== rdma link"; rdma link show siw0/1
echo "== siw variant: $variant $*"
if [ -d /sys/module/siw/parameters ]; then
    for p in /sys/module/siw/parameters/*; do echo "$(basename "$p")=$(cat "$p")"; done
fi
rdma link show siw0/1 | grep -q 'state ACTIVE' || { echo "siw-up: siw0 not ACTIVE" >&2; exit 3; }
