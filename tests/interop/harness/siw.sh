#!/bin/bash
# Linux soft-iWARP (siw) peers in QEMU/TCG guests, for esock interop tests.
#
#   siw.sh start NAME INDEX [--siw=stock|tunable[,k=v,...]|none] [--timeout S]
#         boot guest NAME as 10.77.0.(INDEX+2) on TAP esiwtap<INDEX>, bridge with
#         the host side at 10.77.0.1/24, all inside netns esock-siw; waits until
#         siw0 (on eth0) is ACTIVE. Default --siw=stock.
#   siw.sh exec [-t S] NAME 'cmd'    run in the guest, print its output, exit with its rc
#   siw.sh exec -d NAME 'cmd'        detach: print a job id and return
#   siw.sh exec -d -l PORT [-t S] NAME 'cmd'
#                                    detach, and return once the guest listens on TCP
#                                    PORT (rc 1 if it did not within S s or the job ended)
#   siw.sh wait [-t S] NAME ID       wait for a detached job: output + rc (124 on timeout)
#   siw.sh kill NAME ID              SIGTERM the job's process group in the guest
#   siw.sh stop NAME...              power the guests off (SIGTERM to their qemu)
#   siw.sh teardown                  stop every guest of this harness, delete the netns,
#                                    bridge and TAPs it created (and nothing else)
#   siw.sh status                    guests, pids, addresses, network
#   siw.sh host CMD ARGS...          run a host-side program on the lab network
#                                    (ip netns exec esock-siw ...): probes, tshark, esock
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$HARNESS_DIR/lib/net.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
valid_name() { [[ "$1" =~ ^[a-zA-Z0-9_-]{1,32}$ ]] || die "bad guest name '$1' (letters, digits, _ -)"; }
need_running() { [ -n "$(guest_pid "$1")" ] || die "guest $1 is not running (siw.sh status)"; }

cmd_start() {
    local siw=stock timeout=$BOOT_TIMEOUT args=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --siw=*) siw=${1#--siw=};;
            --timeout) timeout=$2; shift;;
            --timeout=*) timeout=${1#--timeout=};;
            -*) die "start: unknown option $1";;
            *) args+=("$1");;
        esac
        shift
    done
    [ ${#args[@]} -eq 2 ] || die "usage: siw.sh start NAME INDEX [--siw=stock|tunable,k=v,...]"
    local name=${args[0]} idx=${args[1]} g
    valid_name "$name"
    [[ "$idx" =~ ^[0-9]+$ ]] && [ "$idx" -le 200 ] || die "INDEX must be 0..200 (guest address 10.77.0.(INDEX+2))"
    case "$siw" in stock|none|tunable|tunable,*) ;; *) die "--siw must be stock, none or tunable[,param=value,...]";; esac
    command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run install-deps.sh"
    [ -f "$INITRD" ] && [ -f "$TUNABLE_KO" ] || die "harness not built ($INITRD, $TUNABLE_KO): run build.sh"
    local kimg; kimg=$(kernel_image)
    [ -n "$(guest_pid "$name")" ] && die "guest $name is already running (pid $(guest_pid "$name")); siw.sh stop $name"
    for g in $(known_guests); do
        [ "$g" != "$name" ] && [ -n "$(guest_pid "$g")" ] && [ "$(cat "$RUN_DIR/$g/index" 2>/dev/null)" = "$idx" ] \
            && die "INDEX $idx is used by running guest $g"
    done

    net_up "$idx"
    local gdir="$RUN_DIR/$name" ip tap
    ip="$(guest_ip "$idx")"; tap=$(guest_tap "$idx")
    rm -rf "$gdir"; mkdir -p "$gdir/mbox"
    echo "$idx" > "$gdir/index"; echo "$ip" > "$gdir/ip"; echo "$siw" > "$gdir/siw"
    local append="console=ttyS0 loglevel=5 panic=-1 esiw.name=$name esiw.ip=$ip/24 esiw.harness=$HARNESS_DIR esiw.run=$gdir esiw.siw=$siw"
    local t0; t0=$(date +%s.%N)
    in_ns qemu-system-x86_64 \
        -name "guest=esock-siw-$name,process=esock-siw-$name" \
        -M pc -accel tcg -cpu max -smp "$GUEST_CPUS" -m "$GUEST_MEM" \
        -nodefaults -no-user-config -display none -vga none -no-reboot \
        -kernel "$kimg" -initrd "$INITRD" -append "$append" \
        -serial "file:$gdir/console.log" -monitor none \
        -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
        -device "virtio-net-pci,netdev=n0,mac=$(guest_mac "$idx")" \
        -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
        -virtfs "local,path=$gdir,mount_tag=esiwrun,security_model=none" \
        -daemonize -pidfile "$gdir/qemu.pid" 2> "$gdir/qemu.stderr" \
        || { cat "$gdir/qemu.stderr" >&2; die "qemu failed to start guest $name"; }
    log "started $name: qemu pid $(cat "$gdir/qemu.pid"), $ip on $tap, siw=$siw"

    local deadline=$(( $(date +%s) + timeout ))
    while [ ! -e "$gdir/ready" ]; do
        if [ -z "$(guest_pid "$name")" ]; then
            tail -20 "$gdir/console.log" >&2
            die "guest $name died while booting (console: $gdir/console.log)"
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            tail -5 "$gdir/console.log" >&2
            die "guest $name not ready after ${timeout}s (still running; console $gdir/console.log; siw.sh stop $name)"
        fi
        sleep 0.2
    done
    local bt; bt=$(echo "$(date +%s.%N) - $t0" | bc)
    printf '%.1f\n' "$bt" > "$gdir/boot.time"
    if [ "$siw" != none ]; then
        local rc; rc=$(cat "$gdir/siw-up.rc" 2>/dev/null || echo '?')
        [ "$rc" = 0 ] || { cat "$gdir/siw-up.log" >&2; die "siw setup failed in guest $name (rc=$rc; log $gdir/siw-up.log)"; }
    fi
    printf '%s ready in %.1fs: %s, %s\n' "$name" "$bt" "$ip" \
        "$(grep -m1 'state' "$gdir/siw-up.log" 2>/dev/null || echo 'no siw')"
}

# --- mailbox jobs (see guest/agent.sh)
submit() {   # submit NAME CMD -> job id
    local mb="$RUN_DIR/$1/mbox" id
    id="$(date +%s%N)-$$-$RANDOM"
    printf '%s\n' "$2" > "$mb/$id.tmp"
    mv "$mb/$id.tmp" "$mb/$id.cmd"
    echo "$id"
}
wait_job() {   # wait_job NAME ID TIMEOUT
    local mb="$RUN_DIR/$1/mbox" id=$2 deadline=$(( $(date +%s) + $3 ))
    [ -e "$mb/$id.cmd" ] || [ -e "$mb/$id.running" ] || die "no job $id in guest $1"
    while [ ! -e "$mb/$id.rc" ]; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            cat "$mb/$id.out" 2>/dev/null || true
            echo "siw.sh: job $id in $1 still running after ${3}s" >&2
            return 124
        fi
        [ -n "$(guest_pid "$1")" ] || { echo "siw.sh: guest $1 died" >&2; return 125; }
        sleep 0.1
    done
    cat "$mb/$id.out"
    return "$(cat "$mb/$id.rc")"
}

cmd_exec() {
    local t=300 detach=0 port= o
    OPTIND=1
    while getopts "t:dl:" o; do
        case "$o" in t) t=$OPTARG;; d) detach=1;; l) port=$OPTARG;;
            *) die "usage: siw.sh exec [-t S] [-d [-l PORT]] NAME 'cmd'";; esac
    done
    shift $((OPTIND - 1))
    [ $# -ge 2 ] || die "usage: siw.sh exec [-t S] [-d [-l PORT]] NAME 'cmd'"
    [ -z "$port" ] || { [ "$detach" = 1 ] && [[ "$port" =~ ^[0-9]+$ ]]; } ||
        die "exec -l PORT: a port number, with -d"
    local name=$1; shift
    need_running "$name"
    local cmd="$*"
    # The job watches for its own listener (a job script's $0 is MBOX/ID.running).
    [ -n "$port" ] && cmd=". \"\$ESIW_HARNESS/guest/mark-listening.sh\" $port \"\${0%.running}.listening\" >/dev/null 2>&1 &
$cmd"
    local id; id=$(submit "$name" "$cmd")
    if [ "$detach" = 1 ]; then
        echo "$id"
        [ -n "$port" ] || return 0
        wait_listening "$name" "$id" "$t"
        return
    fi
    wait_job "$name" "$id" "$t"
}
wait_listening() {   # wait_listening NAME ID TIMEOUT
    local mb="$RUN_DIR/$1/mbox" deadline=$(( $(date +%s) + $3 ))
    until [ -e "$mb/$2.listening" ]; do
        [ -e "$mb/$2.rc" ] && { echo "siw.sh: job $2 in $1 ended before it listened" >&2; return 1; }
        [ "$(date +%s)" -lt "$deadline" ] || { echo "siw.sh: job $2 in $1 not listening after ${3}s" >&2; return 1; }
        sleep 0.05
    done
}

cmd_wait() {
    local t=300 o
    OPTIND=1
    while getopts "t:" o; do case "$o" in t) t=$OPTARG;; *) die "usage: siw.sh wait [-t S] NAME ID";; esac; done
    shift $((OPTIND - 1))
    [ $# -eq 2 ] || die "usage: siw.sh wait [-t S] NAME ID"
    need_running "$1"
    wait_job "$1" "$2" "$t"
}

cmd_kill() {
    [ $# -eq 2 ] || die "usage: siw.sh kill NAME ID"
    need_running "$1"
    local mb="$RUN_DIR/$1/mbox" pid id
    [ -e "$mb/$2.rc" ] && return 0
    pid=$(cat "$mb/$2.pid" 2>/dev/null) || die "job $2 in $1 has not started (or does not exist)"
    id=$(submit "$1" "kill -TERM -- -$pid 2>/dev/null; true")
    wait_job "$1" "$id" 30 >/dev/null || true
}

cmd_stop() {
    local n pid
    for n in "$@"; do
        valid_name "$n"
        pid=$(guest_pid "$n")
        if [ -n "$pid" ]; then
            kill -TERM "$pid"
            for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
            [ -d "/proc/$pid" ] && kill -KILL "$pid"
            log "stopped $n (pid $pid)"
        fi
        rm -f "$RUN_DIR/$n/qemu.pid"
        if [ -f "$RUN_DIR/$n/index" ] && ! index_in_use "$(cat "$RUN_DIR/$n/index")"; then
            net_down_tap "$(cat "$RUN_DIR/$n/index")"
        fi
    done
}
index_in_use() { local g; for g in $(known_guests); do
    [ -n "$(guest_pid "$g")" ] && [ "$(cat "$RUN_DIR/$g/index" 2>/dev/null)" = "$1" ] && return 0; done; return 1; }

cmd_teardown() {
    local gs; mapfile -t gs < <(known_guests)
    [ ${#gs[@]} -gt 0 ] && cmd_stop "${gs[@]}"
    net_down
}

cmd_status() {
    local g pid any=0
    for g in $(known_guests); do
        pid=$(guest_pid "$g")
        [ -n "$pid" ] || continue
        any=1
        echo "$g: running, qemu pid $pid, $(cat "$RUN_DIR/$g/ip") on $(guest_tap "$(cat "$RUN_DIR/$g/index")"), siw=$(cat "$RUN_DIR/$g/siw"), boot $(cat "$RUN_DIR/$g/boot.time" 2>/dev/null || echo '?')s"
    done
    [ "$any" = 1 ] || echo "no guest running"
    if [ -f "$NET_REC" ]; then
        echo "network (netns $NETNS): $(tr '\n' ' ' < "$NET_REC")"
        in_ns ip -br addr show dev "$BR" 2>/dev/null || echo "  (recorded, but $BR is gone: siw.sh teardown cleans up)"
    else
        echo "network: none created"
    fi
}

cmd_host() {
    [ $# -ge 1 ] || die "usage: siw.sh host CMD ARGS..."
    ip netns list | awk '{print $1}' | grep -qx "$NETNS" || die "netns $NETNS does not exist: start a guest first"
    exec ip netns exec "$NETNS" "$@"
}

sub=${1:-}; shift || true
case "$sub" in
    start) cmd_start "$@";;
    exec) cmd_exec "$@";;
    wait) cmd_wait "$@";;
    kill) cmd_kill "$@";;
    stop) [ $# -ge 1 ] || die "usage: siw.sh stop NAME..."; cmd_stop "$@";;
    teardown) cmd_teardown;;
    status) cmd_status;;
    host) cmd_host "$@";;
    -h|--help|help|"") usage;;
    *) die "unknown subcommand '$sub' (start exec wait kill stop teardown status host)";;
esac
