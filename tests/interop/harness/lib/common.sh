# shellcheck shell=bash disable=SC2034
# Shared settings of the esock siw interop harness; sourced by every script.
# Paths are relative to the harness directory, never to this machine.
#
# Network model: everything lives in a network namespace the harness creates
# itself ($SIWH_NETNS, default esock-siw): bridge $SIWH_BR with the "host"
# address 10.77.0.1/24, one TAP per guest (esiwtap<INDEX>), guest INDEX at
# 10.77.0.(INDEX+2). QEMU is started inside that namespace, so lab traffic can
# never reach the machine's real interfaces; host-side programs (the probes,
# tshark, later esock itself) run there with `siw.sh host CMD...`.

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$HARNESS_DIR/build"
KDIR="$BUILD_DIR/kernel"          # dpkg -x of Debian's linux-image (vmlinuz + modules)
RUN_DIR="$BUILD_DIR/run"          # per-guest state: pid, console, 9p mailbox
INITRD="$BUILD_DIR/initramfs.cpio.gz"
TUNABLE_KO="$BUILD_DIR/siw-tunable/siw.ko"

NETNS="${SIWH_NETNS:-esock-siw}"
BR="${SIWH_BR:-siwbr0}"
NET_PREFIX="10.77.0"              # fixed by the brief; do not widen
HOST_IP="$NET_PREFIX.1"
TAP_PREFIX="esiwtap"

GUEST_MEM="${SIWH_MEM:-1024}"     # MiB; 2-core box shared with other builds
GUEST_CPUS=1
BOOT_TIMEOUT="${SIWH_BOOT_TIMEOUT:-180}"

die() { echo "siw-harness: error: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# run a command in the harness network namespace
in_ns() { ip netns exec "$NETNS" "$@"; }

kernel_version() {
    local d
    d=$(ls -1 "$KDIR/lib/modules" 2>/dev/null | head -n1)
    [ -n "$d" ] || die "no Debian kernel unpacked in $KDIR: run tests/interop/harness/build.sh"
    echo "$d"
}
kernel_image() { echo "$KDIR/boot/vmlinuz-$(kernel_version)"; }

guest_ip() { echo "$NET_PREFIX.$(($1 + 2))"; }
guest_tap() { echo "$TAP_PREFIX$1"; }
guest_mac() { printf '52:54:00:77:00:%02x' "$1"; }

# pid of guest $1's qemu if it runs and really is ours (checks the cmdline,
# so a stale pid file reused by an unrelated process is never acted on)
guest_pid() {
    local pf="$RUN_DIR/$1/qemu.pid" pid
    [ -f "$pf" ] || return 0
    pid=$(cat "$pf" 2>/dev/null)
    [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 0
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "process=esock-siw-$1 " && echo "$pid"
    return 0
}

# names of guests with a run dir (running or not)
known_guests() {
    local d
    for d in "$RUN_DIR"/*/; do [ -d "$d" ] && basename "$d"; done
    return 0
}
