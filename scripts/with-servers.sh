#!/usr/bin/env bash
# Run a command with the real test servers up: a one-node Ceph (S3 + STS) and
# an in-memory dynalite (DynamoDB), both on 127.0.0.1 only.
#
#   usage: scripts/with-servers.sh CMD [ARGS...]
#   e.g.   bash scripts/with-servers.sh node scripts/servers/smoke.mjs
#
# CMD runs with OBJSTATE_TEST_S3_ENDPOINT, OBJSTATE_TEST_ACCESS_KEY,
# OBJSTATE_TEST_SECRET_KEY, OBJSTATE_TEST_ROLE_ARN and
# OBJSTATE_TEST_DYNAMODB_ENDPOINT in its environment; the script exits with
# CMD's status. The servers live in a fresh temp dir and are ALWAYS stopped
# and removed on exit (also on Ctrl-C / SIGTERM). If a server cannot start,
# CMD is not run and the exit status is non-zero.
#
# If all five variables are already set (servers a developer started by hand
# with scripts/servers/*-start.sh), CMD just runs against them.
# CMD's TMPDIR is a fresh directory removed on exit too, so that what tests and
# benches leave in the OS temp directory does not pile up run after run.
# Ports: CEPH_MON_PORT, CEPH_RGW_PORT, CEPH_OSD_PORT_MIN/MAX, DYNALITE_PORT.
set -euo pipefail

log() { printf '[with-servers] %s\n' "$*" >&2; }
[[ $# -ge 1 ]] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }

# Sticky and world-writable, as /tmp is: some tests run a child as an unprivileged user.
CMD_TMP=$(mktemp -d "${TMPDIR:-/tmp}/objstate-run.XXXXXX")
chmod 1777 "$CMD_TMP"

VARS=(OBJSTATE_TEST_S3_ENDPOINT OBJSTATE_TEST_ACCESS_KEY OBJSTATE_TEST_SECRET_KEY
  OBJSTATE_TEST_ROLE_ARN OBJSTATE_TEST_DYNAMODB_ENDPOINT)
all_set=1
for v in "${VARS[@]}"; do [[ -n ${!v:-} ]] || all_set=0; done
if [[ $all_set == 1 ]]; then
  log "using the servers already set in the environment ($OBJSTATE_TEST_S3_ENDPOINT, $OBJSTATE_TEST_DYNAMODB_ENDPOINT)"
  rc=0
  TMPDIR=$CMD_TMP "$@" || rc=$?
  rm -rf -- "$CMD_TMP"
  exit "$rc"
fi

S=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/servers
TMP=$(mktemp -d "${TMPDIR:-/tmp}/objstate-servers.XXXXXX")
ceph_job='' dyn_job='' cmd_pid=''

# shellcheck disable=SC2317  # (reached through the traps below)
cleanup() {
  local rc=$? t0=$EPOCHREALTIME
  trap - EXIT INT TERM
  # Interrupted while CMD runs: let it finish its own cleanup before the
  # servers go away.
  if [[ -n $cmd_pid ]]; then
    kill -TERM "$cmd_pid" 2>/dev/null || true
    wait "$cmd_pid" 2>/dev/null || true
  fi
  # A start still running (we were interrupted): end it first. These are our
  # own children, signalled by PID; their own failure paths stop what they
  # started.
  for j in $ceph_job $dyn_job; do
    kill -TERM "$j" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  bash "$S/ceph-stop.sh" "$TMP/ceph" &
  bash "$S/dynalite-stop.sh" "$TMP/dynalite" &
  wait || true
  rm -rf -- "$TMP" "$CMD_TMP"
  log "servers stopped in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Start both at once: Ceph takes ~1.8 s, dynalite ~0.5 s.
t0=$EPOCHREALTIME
bash "$S/ceph-start.sh" "$TMP/ceph" >"$TMP/ceph.env" &
ceph_job=$!
bash "$S/dynalite-start.sh" "$TMP/dynalite" >"$TMP/dynalite.env" &
dyn_job=$!
ceph_rc=0 dyn_rc=0
wait "$ceph_job" || ceph_rc=$?
wait "$dyn_job" || dyn_rc=$?
ceph_job='' dyn_job=''
if [[ $ceph_rc != 0 || $dyn_rc != 0 ]]; then
  [[ $ceph_rc == 0 ]] || log "ERROR: Ceph did not start (exit $ceph_rc); see the messages above"
  [[ $dyn_rc == 0 ]] || log "ERROR: dynalite did not start (exit $dyn_rc); see the messages above"
  log "not running: $*"
  exit 1
fi

# The start scripts print only `export NAME='value'` lines.
eval "$(cat "$TMP/ceph.env" "$TMP/dynalite.env")"
for v in "${VARS[@]}"; do
  [[ -n ${!v:-} ]] || { log "ERROR: the start scripts did not set $v"; exit 1; }
done
log "servers ready in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')s (S3 $OBJSTATE_TEST_S3_ENDPOINT, DynamoDB $OBJSTATE_TEST_DYNAMODB_ENDPOINT)"

# CMD runs as a background job that we `wait` for, so a SIGTERM sent to this
# script is handled at once (bash runs traps only between commands) and is
# passed on to CMD. `<&0`: keep our stdin (a background job gets /dev/null),
# unless there is none (fd 0 closed).
if { true <&0; } 2>/dev/null; then
  TMPDIR=$CMD_TMP "$@" <&0 &
else
  TMPDIR=$CMD_TMP "$@" </dev/null &
fi
cmd_pid=$!
rc=0
wait "$cmd_pid" || rc=$?
cmd_pid=''
exit "$rc"
