#!/bin/bash
# Sourced in the background by a job that `siw.sh exec -d -l PORT` submitted:
#   . mark-listening.sh PORT MARKER &
# Touches MARKER once a TCP socket of the guest listens on PORT (siw's listener is a
# kernel socket, so it shows in /proc/net/tcp like any other), or gives up after 60 s.
# Bash builtins only: every fork+exec reads its binary over 9p under TCG, which costs
# about a second; a mailbox round trip per `ss` poll from the host cost several.
hex=$(printf '%04X' "$1")
listens() {
  local f a s
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    while read -r _ a _ s _; do
      [ "${a##*:}" = "$hex" ] && [ "$s" = 0A ] && return 0  # 0A: TCP_LISTEN
    done <"$f"
  done
  return 1
}
exec 8<>/tmp/.esiw-tick  # the agent's FIFO: read -t on it sleeps without a fork
for ((i = 0; i < 1200; i++)); do
  if listens; then : >"$2"; exit 0; fi
  read -r -t 0.05 -u 8 _
done
exit 1
