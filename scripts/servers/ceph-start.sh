#!/usr/bin/env bash
# shellcheck disable=SC2129  # one `>>log` per command reads better here
# Start a throw-away one-node Ceph cluster (1 mon, 1 osd on memstore, 1 radosgw,
# no mgr, no cephx) in DATA_DIR, as a real S3 + STS server for the tests.
#
#   usage: scripts/servers/ceph-start.sh DATA_DIR
#
# stdout: ONLY `export OBJSTATE_TEST_...='...'` lines (so callers can `eval` them).
# stderr: progress and errors. Daemon logs: DATA_DIR/log/.
# Stop it with scripts/servers/ceph-stop.sh DATA_DIR.
#
# Follows shared/servers/ceph.md (the "recipe"); Gx below are its gotchas.
# Every socket is on 127.0.0.1. Nothing is written outside DATA_DIR except
# DATA_DIR.lock (and the Debian packages, installed when missing).
#
# Environment (all optional):
#   CEPH_MON_PORT      mon msgr2 port                 (default 13300)
#   CEPH_RGW_PORT      radosgw S3 port                (default 17480)
#   CEPH_OSD_PORT_MIN  first port the osd may bind    (default 16800)
#   CEPH_OSD_PORT_MAX  last port the osd may bind     (default 16899)
#   CEPH_START_TIMEOUT seconds to wait for each step  (default 60)
#   CEPH_MEMSTORE_BYTES  size of the osd's in-memory store (default 8 GiB)
set -euo pipefail

PROG=ceph-start
log() { printf '[%s] %s\n' "$PROG" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DATA_DIR" >&2; exit 2; }

MON_PORT=${CEPH_MON_PORT:-13300}
RGW_PORT=${CEPH_RGW_PORT:-17480}
OSD_PORT_MIN=${CEPH_OSD_PORT_MIN:-16800}
OSD_PORT_MAX=${CEPH_OSD_PORT_MAX:-16899}
TIMEOUT=${CEPH_START_TIMEOUT:-60}

# Fixed test identities (any values do; these are the ones the tests expect).
ACCESS_KEY=CEPHTESTACCESSKEY001
SECRET_KEY=cephTestSecretKey0123456789abcdefghijklmn
RGW_USER=testuser
ROLE_NAME=s3-test-role
# Static keys for throw-away data only: the STS token key must be 16 chars,
# the KMS "testing" backend key is base64 of 32 bytes.
STS_KEY=abcdefghijklmnop
KMS_KEY_ID=testkey-1
KMS_KEY_B64=$(printf '%s' 'objstate-test-kms-key-32-bytes!!' | base64)

# python3 on PATH may be a pyenv/venv interpreter that cannot see Debian's
# python3-rados module: always use the system one.
PY=/usr/bin/python3

t0=$EPOCHREALTIME
elapsed() { awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

# ---------------------------------------------------------------------------
# 1. Packages (G16: installing them starts no daemon and touches nothing of ours)
# ---------------------------------------------------------------------------
PACKAGES=(ceph-mon ceph-osd radosgw ceph-common python3-rados)
have_packages() {
  local b
  for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool; do
    command -v "$b" >/dev/null 2>&1 || return 1
  done
  [[ -x $PY ]] && "$PY" -c 'import rados' >/dev/null 2>&1
}
if ! have_packages; then
  [[ $(id -u) -eq 0 ]] || die "Ceph packages are missing and we are not root: install ${PACKAGES[*]}"
  command -v apt-get >/dev/null 2>&1 || die "Ceph packages are missing and there is no apt-get (Debian 12 expected)"
  # Serialise concurrent installs (two clusters starting at once); re-check
  # inside the lock in case the other one just installed them.
  (
    flock -w 900 8 || exit 1
    have_packages && exit 0
    log "installing Debian packages: ${PACKAGES[*]} (about 15 s, ~70 MB download)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 &&
      apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >&2
  ) 8>"${TMPDIR:-/tmp}/objstate-ceph-apt.lock" ||
    die "the Debian packages (${PACKAGES[*]}) could not be installed (see apt-get output above)"
  have_packages || die "packages installed but ceph-mon/ceph-osd/radosgw/python3-rados still missing"
fi

# ---------------------------------------------------------------------------
# 2. Data dir and lock
# ---------------------------------------------------------------------------
mkdir -p -- "$1"
D=$(cd -- "$1" && pwd -P)
CONF=$D/ceph.conf
LOGD=$D/log
RUND=$D/run
EXPORTS=$D/exports.sh

# G13: one start/stop at a time per DATA_DIR. fd 9 must be closed for every
# daemon we launch (`9>&-`), or the daemon would hold the lock forever and the
# next start/stop would block.
exec 9>"$D.lock"
flock -w "$TIMEOUT" 9 || die "$D.lock is held by another start/stop for more than ${TIMEOUT}s"

# pid_alive PIDFILE BINARY: the process in PIDFILE is running, is BINARY and
# was started with our ceph.conf (PIDs get reused; G13).
pid_alive() {
  local pid cmd
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmd == *"$2"* && $cmd == *"$CONF"* ]]
}

# http_status PORT: status code of `GET /` on 127.0.0.1:PORT (000 if none).
http_status() {
  curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$1/" 2>/dev/null || true
}

# Idempotent path: a cluster of ours is already running in DATA_DIR.
if [[ -s $EXPORTS ]] && pid_alive "$RUND/mon.a.pid" ceph-mon &&
  pid_alive "$RUND/osd.0.pid" ceph-osd && pid_alive "$RUND/client.rgw.a.pid" radosgw; then
  port=$(sed -n 's/^RGW_PORT=//p' "$D/ports")
  if [[ $(http_status "$port") == 200 ]]; then
    log "cluster already running in $D (radosgw on 127.0.0.1:$port)"
    grep '^export ' "$EXPORTS"
    exit 0
  fi
fi

if [[ -n $(ls -A -- "$D") ]]; then
  die "$D is not empty (a stopped or failed cluster?). Run scripts/servers/ceph-stop.sh $D first, or use an empty dir"
fi

# Refuse to start when a port is taken (by someone else's cluster, say),
# rather than failing later with an obscure bind error. Loopback only.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$MON_PORT" "$RGW_PORT"; do
  port_busy "$p" && die "port 127.0.0.1:$p is already in use (set CEPH_MON_PORT / CEPH_RGW_PORT)"
done

mkdir -p "$LOGD" "$RUND" "$D/mon.a" "$D/osd.0" "$D/rgw.a" "$D/crash"
printf 'MON_PORT=%s\nRGW_PORT=%s\n' "$MON_PORT" "$RGW_PORT" >"$D/ports"
SETUP_LOG=$LOGD/setup.log
: >"$SETUP_LOG"

# ---------------------------------------------------------------------------
# Failure handling: stop whatever we started, show the relevant log, keep
# DATA_DIR (for the logs) and exit non-zero.
# ---------------------------------------------------------------------------
STEP="preparing"
STEP_LOG=$SETUP_LOG
ok=0
FAILED_CMD=''
# set -e: remember which command failed, for the message below.
trap 'FAILED_CMD="$BASH_COMMAND (exit $?)"' ERR
on_exit() {
  local rc=$?
  [[ $ok == 1 ]] && return
  [[ $rc == 0 ]] && rc=1
  case $rc in
    130 | 143) log "INTERRUPTED while $STEP (after $(elapsed)s)" ;;
    *) log "FAILED while $STEP (after $(elapsed)s)${FAILED_CMD:+: $FAILED_CMD}" ;;
  esac
  if [[ -s $STEP_LOG ]]; then
    log "---- last lines of $STEP_LOG ----"
    grep -v '^$' "$STEP_LOG" | tail -n 25 >&2
    log "---- end of $STEP_LOG ----"
  fi
  if [[ -s $SETUP_LOG && $SETUP_LOG != "$STEP_LOG" ]]; then
    log "---- last lines of $SETUP_LOG ----"
    grep -v '^$' "$SETUP_LOG" | tail -n 10 >&2
    log "---- end of $SETUP_LOG ----"
  fi
  log "stopping the daemons started so far; logs are kept in $LOGD"
  # We hold DATA_DIR.lock ourselves: tell the stop script not to wait for it.
  CEPH_STOP_KEEP_DATA=1 CEPH_STOP_LOCK_HELD=1 \
    bash "$(dirname -- "${BASH_SOURCE[0]}")/ceph-stop.sh" "$D" 9>&- >&2 || true
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { STEP=$1; STEP_LOG=${2:-$SETUP_LOG}; log "[$(elapsed)s] $STEP"; }

# wait_for SECONDS DESCRIPTION CMD...: poll CMD every 50 ms.
wait_for() {
  local secs=$1 what=$2 deadline
  shift 2
  deadline=$(awk -v n="$EPOCHREALTIME" -v s="$secs" 'BEGIN { printf "%d", n + s }')
  until "$@"; do
    ((${EPOCHREALTIME%.*} < deadline)) || die "timed out after ${secs}s waiting for $what"
    sleep 0.05
  done
}

# ---------------------------------------------------------------------------
# 3. ceph.conf (every option is explained in the recipe)
# ---------------------------------------------------------------------------
FSID=$(cat /proc/sys/kernel/random/uuid)
cat >"$CONF" <<EOF
# Generated by scripts/servers/ceph-start.sh; see shared/servers/ceph.md.
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
public network = 127.0.0.1/32
ms bind msgr1 = false
ms bind ipv6 = false
ms bind port min = $OSD_PORT_MIN
ms bind port max = $OSD_PORT_MAX
# No cephx: loopback only, simpler and faster.
auth cluster required = none
auth service required = none
auth client required = none
# G5: REQUIRED with auth none; daemons default to "secure", which needs cephx
# (radosgw would hang 300 s on "failed to fetch mon config").
ms mon client mode = crc secure
run dir = $RUND
admin socket = $RUND/\$cluster-\$name.asok
log file = $LOGD/\$cluster-\$name.log
crash dir = $D/crash
keyring = $D/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
# Don't refuse to run on a fullish CI disk.
mon data avail warn = 1
mon data avail crit = 0
# The default 1 s propose interval makes every pool creation slow (G12).
paxos propose interval = 0.05
paxos min wait = 0.01

[client.admin]
# radosgw-admin and python3-rados run as client.admin (G10); no admin socket,
# so they never collide with the daemons' sockets.
admin socket =

[mon]
mon data = $D/mon.\$id
pid file = $RUND/\$name.pid

[osd]
osd data = $D/osd.\$id
# G15: objects live in OSD RAM and vanish on stop, which is what tests want.
osd objectstore = memstore
# 8 GiB: the suites push states of 600 MiB and more (a full memstore stops the osd
# taking writes, and every request then hangs); RAM is only used as data arrives.
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-8589934592}
pid file = $RUND/\$name.pid

[client.rgw.a]
rgw data = $D/rgw.a
pid file = $RUND/\$name.pid
# G2: without tcp_nodelay every keep-alive GET takes ~44 ms (Nagle + delayed ACK).
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT tcp_nodelay=1
rgw thread pool size = 64
# Free deleted data quickly (memstore = RAM).
rgw gc obj min wait = 60
rgw gc processor period = 60
# G6: accept SSE headers over plain http; SSE-KMS with static test keys.
rgw crypt require ssl = false
rgw crypt s3 kms backend = testing
rgw crypt s3 kms encryption keys = $KMS_KEY_ID=$KMS_KEY_B64
# Without this AssumeRole works but the temporary credentials get 403.
rgw s3 auth use sts = true
# Without it AssumeRole gets 400.
rgw sts key = $STS_KEY
EOF

# ---------------------------------------------------------------------------
# 4. mon
# ---------------------------------------------------------------------------
step "creating the mon (127.0.0.1:$MON_PORT)" "$LOGD/ceph-mon.a.log"
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$D/monmap" >>"$SETUP_LOG" 2>&1
ceph-mon -c "$CONF" -i a --mkfs --monmap "$D/monmap" >>"$SETUP_LOG" 2>&1
# The daemons fork into the background (G13); the parent returns once the
# child is initialised. No stdin/stdout (a caller may be reading our stdout
# through $(...)), and fd 9 closed (G13).
ceph-mon -c "$CONF" -i a </dev/null >>"$SETUP_LOG" 2>&1 9>&-
wait_for "$TIMEOUT" "ceph-mon pid file" pid_alive "$RUND/mon.a.pid" ceph-mon

# ---------------------------------------------------------------------------
# 5. osd (memstore)
# ---------------------------------------------------------------------------
step "creating the osd (memstore)" "$LOGD/ceph-osd.0.log"
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
# python3-rados, not the `ceph` CLI: each CLI call costs ~0.2 s (G12).
"$PY" - "$CONF" "$OSD_UUID" "$TIMEOUT" >>"$SETUP_LOG" 2>&1 <<'PYEOF'
import json, sys, rados
conf, uuid, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = rados.Rados(conffile=conf, name='client.admin')
c.connect(timeout=timeout)
ret, out, err = c.mon_command(json.dumps({'prefix': 'osd new', 'uuid': uuid, 'id': 0}), b'')
if ret != 0:
    sys.exit(f'osd new failed: {ret} {err}')
print('osd new ->', out.decode().strip())
c.shutdown()
PYEOF
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >>"$SETUP_LOG" 2>&1
ceph-osd -c "$CONF" -i 0 </dev/null >>"$SETUP_LOG" 2>&1 9>&-
wait_for "$TIMEOUT" "ceph-osd pid file" pid_alive "$RUND/osd.0.pid" ceph-osd

# ---------------------------------------------------------------------------
# 6. Wait for the osd to be up, then pre-create the 7 rgw pools in ONE
#    python3-rados process (G12: radosgw creating them itself took ~8.6 s).
# ---------------------------------------------------------------------------
step "waiting for the osd and creating the rgw pools" "$LOGD/ceph-osd.0.log"
"$PY" - "$CONF" "$TIMEOUT" >>"$SETUP_LOG" 2>&1 <<'PYEOF'
import json, sys, time, rados
conf, timeout = sys.argv[1], int(sys.argv[2])
t0 = time.time()
c = rados.Rados(conffile=conf, name='client.admin')
c.connect(timeout=timeout)

def mon(cmd):
    ret, out, err = c.mon_command(json.dumps(cmd), b'')
    if ret != 0:
        sys.exit(f'{cmd} failed: {ret} {err}')
    return out

deadline = time.time() + timeout
while json.loads(mon({'prefix': 'osd stat', 'format': 'json'})).get('num_up_osds', 0) < 1:
    if time.time() > deadline:
        sys.exit('osd.0 did not come up')
    time.sleep(0.05)
print(f'osd up after {time.time() - t0:.2f}s')

pools = ['.rgw.root'] + ['default.rgw.' + p for p in
         ('log', 'control', 'meta', 'buckets.index', 'buckets.data', 'buckets.non-ec')]
for p in pools:
    if not c.pool_exists(p):
        c.create_pool(p)
    mon({'prefix': 'osd pool application enable', 'pool': p, 'app': 'rgw'})
print(f'pools ready after {time.time() - t0:.2f}s:', ', '.join(pools))
c.shutdown()
PYEOF

# ---------------------------------------------------------------------------
# 7. radosgw
# ---------------------------------------------------------------------------
step "starting radosgw (127.0.0.1:$RGW_PORT)" "$LOGD/ceph-client.rgw.a.log"
radosgw -c "$CONF" -n client.rgw.a </dev/null >>"$SETUP_LOG" 2>&1 9>&-
wait_for "$TIMEOUT" "radosgw pid file" pid_alive "$RUND/client.rgw.a.pid" radosgw
rgw_up() { [[ $(http_status "$RGW_PORT") == 200 ]] || { pid_alive "$RUND/client.rgw.a.pid" radosgw || die "radosgw exited"; false; }; }
wait_for "$TIMEOUT" "GET http://127.0.0.1:$RGW_PORT/ to return 200" rgw_up

# ---------------------------------------------------------------------------
# 8. User, caps and STS role. radosgw-admin runs as client.admin (G10).
# ---------------------------------------------------------------------------
step "creating user $RGW_USER and role $ROLE_NAME" "$SETUP_LOG"
rgwadmin() { radosgw-admin -c "$CONF" "$@" >>"$SETUP_LOG" 2>&1 9>&-; }
rgwadmin user create --uid="$RGW_USER" --display-name="objstate test user" \
  --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY"
# roles=* lets the user call the IAM API (CreateRole, PutRolePolicy...); G9.
rgwadmin caps add --uid="$RGW_USER" --caps='roles=*'
# G9: principal ARNs have an empty account.
rgwadmin role create --role-name="$ROLE_NAME" --assume-role-policy-doc='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/'"$RGW_USER"'"]},"Action":["sts:AssumeRole"]}]}'
rgwadmin role-policy put --role-name="$ROLE_NAME" --policy-name=allow-s3 \
  --policy-doc='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":"arn:aws:s3:::*"}]}'

step "checking the gateway" "$LOGD/ceph-client.rgw.a.log"
[[ $(http_status "$RGW_PORT") == 200 ]] || die "GET http://127.0.0.1:$RGW_PORT/ no longer returns 200"

cat >"$EXPORTS" <<EOF
export OBJSTATE_TEST_S3_ENDPOINT='http://127.0.0.1:$RGW_PORT'
export OBJSTATE_TEST_ACCESS_KEY='$ACCESS_KEY'
export OBJSTATE_TEST_SECRET_KEY='$SECRET_KEY'
export OBJSTATE_TEST_ROLE_ARN='arn:aws:iam:::role/$ROLE_NAME'
EOF
ok=1
log "ready in $(elapsed)s: S3/STS on http://127.0.0.1:$RGW_PORT (pids: mon $(<"$RUND/mon.a.pid"), osd $(<"$RUND/osd.0.pid"), rgw $(<"$RUND/client.rgw.a.pid"))"
cat "$EXPORTS"
