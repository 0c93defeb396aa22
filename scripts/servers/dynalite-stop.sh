#!/usr/bin/env bash
# Stop the dynalite that scripts/servers/dynalite-start.sh started in DATA_DIR.
#
#   usage: scripts/servers/dynalite-stop.sh DATA_DIR
#
# Signals only the PID in DATA_DIR/dynalite.pid, and only after /proc/PID/cmdline
# shows it is our dynalite-server.mjs (PIDs get reused). Never pkill/killall.
# Removes the pid/log/port files; removes DATA_DIR too if that leaves it empty.
set -euo pipefail

PROG=dynalite-stop
log() { printf '[%s] %s\n' "$PROG" "$*" >&2; }

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DATA_DIR" >&2; exit 2; }
[[ -d $1 ]] || { log "$1 does not exist: nothing to stop"; exit 0; }
D=$(cd -- "$1" && pwd -P)
PIDFILE=$D/dynalite.pid
SERVER=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/dynalite-server.mjs

is_ours() {
  local cmd
  cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ $cmd == *node* && $cmd == *"$SERVER"* ]]
}
# wait_gone PID TRIES: poll every 20 ms (a zombie has an empty cmdline: gone).
wait_gone() {
  local i
  for ((i = 0; i < $2; i++)); do
    is_ours "$1" || return 0
    sleep 0.02
  done
  ! is_ours "$1"
}

if [[ -s $PIDFILE ]]; then
  pid=$(<"$PIDFILE")
  if [[ $pid =~ ^[0-9]+$ ]] && is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$pid" 150; then
      log "dynalite (pid $pid) still running 3 s after SIGTERM: sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 250 || { log "ERROR: dynalite (pid $pid) survived SIGKILL"; exit 1; }
    fi
    log "stopped dynalite (pid $pid)"
  else
    log "dynalite (pid ${pid:-?}) is not running"
  fi
fi
rm -f -- "$PIDFILE" "$D/dynalite.log" "$D/dynalite.port"
rmdir -- "$D" 2>/dev/null || true
