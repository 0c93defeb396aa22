#!/usr/bin/env bash
# Print the built test files a run takes, one a line (paths under dist/test/).
#   usage: bash scripts/test-files.sh all|node24
# all:    every *.test.js, the slowest first: files run side by side (scripts/test.sh), and a
#         long file that starts last would end the run alone.
# node24: what a second Node version can break, for .ci/run's Node 24 run: start-up, the CLI
#         entry and its signals, the package and its bundle, workers, crypto (encryption,
#         password hashing, tokens), streams (the stores, the server's bodies, the scanners)
#         and node:http (the server). The behaviour suites that only drive the same code
#         through another store (the Ceph copies of the CLI suites) run once, on Node 20.
# docs/decisions/140-tests-run-side-by-side.md says why.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
mode=${1:-all}

# Longest first (as measured with four files at a time on 2 cores); a file missing from the build is skipped.
SLOW=(
  integration/cli/ceph-history
  integration/cli/ceph
  integration/bench/smoke
  integration/backend/ceph
  integration/package/install
  integration/cli/large-state
  unit/cli/embedded
  integration/credentials/aws-chain
  unit/server/diff-limits
  integration/remote-state/fetch-outputs
  integration/backend/ceph-encryption
  integration/terraform/shared-bucket
  unit/backend/embedded
  unit/cli/history
  integration/faults/lost-replies
  integration/faults/locked-cycles
  integration/lock/released
  integration/cli/ceph-only
)

NODE24=(
  unit/package/ unit/cli/signals unit/cli/interrupt unit/cli/terminal unit/cli/embedded
  unit/cli/output unit/cli/errors unit/cli/input-files unit/cli/secret-file
  unit/encryption/ unit/backend/encryption unit/server/encryption unit/remote-state/
  unit/store/ unit/io/ unit/json/ unit/lock/file unit/faults/paused-writer
  unit/server/ unit/credentials/ unit/state/
  integration/store/driver-conformance integration/server/streaming
)

all=$(find dist/test -name '*.test.js' | sort)
case $mode in
  all)
    for s in "${SLOW[@]}"; do grep -x "dist/test/$s.test.js" <<<"$all" || true; done
    grep -vxF -f <(printf 'dist/test/%s.test.js\n' "${SLOW[@]}") <<<"$all" || true
    ;;
  node24)
    for p in "${NODE24[@]}"; do
      if [[ $p == */ ]]; then grep "^dist/test/$p" <<<"$all" || true; else grep -x "dist/test/$p.test.js" <<<"$all" || true; fi
    done | awk '!seen[$0]++'
    ;;
  *)
    echo "usage: $0 all|node24" >&2
    exit 2
    ;;
esac
