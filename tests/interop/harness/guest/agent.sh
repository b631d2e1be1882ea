#!/bin/bash
# Guest agent: runs chrooted into the host's / (read-only 9p); the guest run
# dir $ESIW_RUN is read-write. Brings siw up (esiw.siw=...), writes
# $ESIW_RUN/ready, then serves a mailbox the host writes into (siw.sh exec):
#   host: mbox/<id>.cmd (bash script)  -> agent renames it to <id>.running and
#   runs it as its own process group: stdout+stderr -> <id>.out, pid -> <id>.pid,
#   exit code -> <id>.rc (written last, atomically). $ESIW_RUN/poweroff stops the agent.
set -u
RUN="$ESIW_RUN"
MB="$RUN/mbox"
mkdir -p "$MB"
ulimit -l unlimited
cd /tmp || exit 1

if [ -n "${ESIW_SIW:-}" ] && [ "$ESIW_SIW" != none ]; then
    # esiw.siw=stock | tunable,k=v,...
    # shellcheck disable=SC2046
    bash "$ESIW_HARNESS/guest/siw-up.sh" $(echo "$ESIW_SIW" | tr ',' ' ') > "$RUN/siw-up.log" 2>&1
    echo $? > "$RUN/siw-up.rc"
fi
{
    echo "uptime=$(cut -d' ' -f1 /proc/uptime)"
    echo "kernel=$(uname -r)"
} > "$RUN/ready.tmp"
mv "$RUN/ready.tmp" "$RUN/ready"

run_one() {
    local id=$1
    setsid bash -c 'echo $$ > "$1.pid"; exec bash "$1.running"' _ "$id" > "$id.out" 2>&1 < /dev/null
    echo $? > "$id.rc.tmp"
    mv "$id.rc.tmp" "$id.rc"
}

# sleep without fork/exec (exec over 9p under TCG is expensive): read -t on a FIFO
mkfifo /tmp/.esiw-tick 2>/dev/null
exec 9<> /tmp/.esiw-tick
while [ ! -e "$RUN/poweroff" ]; do
    for f in "$MB"/*.cmd; do
        [ -e "$f" ] || continue
        id=${f%.cmd}
        mv "$f" "$id.running" || continue
        run_one "$id" &
    done
    read -r -t 0.2 -u 9 _ || true
done
exit 0
