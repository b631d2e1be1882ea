# shellcheck shell=bash
# Network namespace, bridge and TAPs of the harness; sourced by siw.sh.
# Every object created is recorded in $RUN_DIR/net.created, and net_down
# deletes only what is recorded there (never a device it did not create).

NET_REC="$RUN_DIR/net.created"

_rec() { grep -qx "$1" "$NET_REC" 2>/dev/null || echo "$1" >> "$NET_REC"; }

net_up() {   # net_up INDEX...   (serialised: guests may be started in parallel)
    mkdir -p "$RUN_DIR"
    exec 8> "$RUN_DIR/.net.lock"
    flock -w 60 8 || die "cannot lock $RUN_DIR/.net.lock"
    _net_up "$@"
    flock -u 8
    exec 8>&-
}

_net_up() {
    local i t
    if ! ip netns list | awk '{print $1}' | grep -qx "$NETNS"; then
        ip netns add "$NETNS" || die "cannot create network namespace $NETNS"
        _rec "netns:$NETNS"
    fi
    in_ns ip link set lo up
    in_ns sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
        net.ipv4.ip_forward=0
    if ! in_ns ip link show "$BR" >/dev/null 2>&1; then
        in_ns ip link add "$BR" type bridge stp_state 0 forward_delay 0 || die "cannot create bridge $BR in $NETNS"
        _rec "link:$BR"
    fi
    in_ns ip addr replace "$HOST_IP/24" dev "$BR"
    in_ns ip link set "$BR" up
    for i in "$@"; do
        t=$(guest_tap "$i")
        if ! in_ns ip link show "$t" >/dev/null 2>&1; then
            in_ns ip tuntap add dev "$t" mode tap || die "cannot create TAP $t in $NETNS"
            _rec "link:$t"
        fi
        in_ns ip link set "$t" master "$BR"
        in_ns ip link set "$t" up
    done
}

net_down_tap() {   # net_down_tap INDEX: delete that TAP if we created it
    local t; t=$(guest_tap "$1")
    grep -qx "link:$t" "$NET_REC" 2>/dev/null || return 0
    in_ns ip link del "$t" 2>/dev/null || true
    grep -vx "link:$t" "$NET_REC" > "$NET_REC.tmp"; mv "$NET_REC.tmp" "$NET_REC"
}

net_down() {   # delete everything recorded: TAPs, bridge, namespace
    local e
    [ -f "$NET_REC" ] || return 0
    for e in $(grep '^link:' "$NET_REC" | grep -vx "link:$BR"; grep -x "link:$BR" "$NET_REC"); do
        in_ns ip link del "${e#link:}" 2>/dev/null && log "deleted ${e#link:}"
    done
    if grep -qx "netns:$NETNS" "$NET_REC"; then
        ip netns del "$NETNS" 2>/dev/null && log "deleted netns $NETNS"
    fi
    rm -f "$NET_REC"
}
