#!/usr/bin/env bash
# Start an in-memory dynalite (DynamoDB work-alike from node_modules) on
# 127.0.0.1 in the background, for the tests.
#
#   usage: scripts/servers/dynalite-start.sh DATA_DIR
#
# stdout: ONLY the `export OBJSTATE_TEST_DYNAMODB_ENDPOINT='...'` line.
# stderr: progress and errors. Log: DATA_DIR/dynalite.log, PID: DATA_DIR/dynalite.pid.
# Stop it with scripts/servers/dynalite-stop.sh DATA_DIR.
#
# Environment: DYNALITE_PORT (default 17481), DYNALITE_START_TIMEOUT (default 20 s).
set -euo pipefail

PROG=dynalite-start
log() { printf '[%s] %s\n' "$PROG" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DATA_DIR" >&2; exit 2; }
PORT=${DYNALITE_PORT:-17481}
TIMEOUT=${DYNALITE_START_TIMEOUT:-20}
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
SERVER=$HERE/dynalite-server.mjs
t0=$EPOCHREALTIME
elapsed() { awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

command -v node >/dev/null 2>&1 || die "node is not on PATH"
# Resolve dynalite the way the server script will (from the repo's node_modules).
(cd "$HERE" && node -e 'require.resolve("dynalite")' >/dev/null 2>&1) ||
  die "dynalite is not installed: run npm ci (it is a devDependency)"

mkdir -p -- "$1"
D=$(cd -- "$1" && pwd -P)
PIDFILE=$D/dynalite.pid
LOG=$D/dynalite.log
ENDPOINT="http://127.0.0.1:$PORT"

# is_ours PID: PID is a node running our dynalite-server.mjs (PIDs get reused).
is_ours() {
  local cmd
  cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ $cmd == *node* && $cmd == *"$SERVER"* ]]
}
# answers: any HTTP response from the port (dynalite answers GET / with 400).
answers() {
  local code
  code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$ENDPOINT/" 2>/dev/null) || true
  [[ $code != 000 && -n $code ]]
}

# Idempotent: already running from this DATA_DIR.
if [[ -s $PIDFILE ]] && is_ours "$(<"$PIDFILE")"; then
  port=$(sed -n 's/^PORT=//p' "$D/dynalite.port" 2>/dev/null || true)
  if [[ -n $port ]]; then
    log "dynalite already running (pid $(<"$PIDFILE")) on 127.0.0.1:$port"
    echo "export OBJSTATE_TEST_DYNAMODB_ENDPOINT='http://127.0.0.1:$port'"
    exit 0
  fi
fi

# Refuse a taken port rather than talk to someone else's server. Loopback only.
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  die "port 127.0.0.1:$PORT is already in use (set DYNALITE_PORT)"
fi

# setsid: detach from the caller's process group so a Ctrl-C meant for a later
# command doesn't hit it (a non-interactive shell's background child is not a
# group leader, so setsid execs in place and $! is node's own PID).
# stdin/stdout closed: a caller reading our stdout through $(...) must not hang.
setsid node "$SERVER" "$PORT" </dev/null >"$LOG" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"
echo "PORT=$PORT" >"$D/dynalite.port"

deadline=$(( ${EPOCHREALTIME%.*} + TIMEOUT ))
until answers; do
  if ! is_ours "$pid"; then
    log "---- $LOG ----"; cat "$LOG" >&2
    rm -f -- "$PIDFILE"
    die "dynalite exited during startup"
  fi
  if (( ${EPOCHREALTIME%.*} >= deadline )); then
    kill -TERM "$pid" 2>/dev/null || true
    log "---- $LOG ----"; cat "$LOG" >&2
    rm -f -- "$PIDFILE"
    die "dynalite did not answer on $ENDPOINT within ${TIMEOUT}s"
  fi
  sleep 0.05
done
log "ready in $(elapsed)s: dynalite on $ENDPOINT (pid $pid)"
echo "export OBJSTATE_TEST_DYNAMODB_ENDPOINT='$ENDPOINT'"
