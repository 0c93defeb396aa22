#!/usr/bin/env bash
# All tests: unit and integration, with the real servers (Ceph RGW for S3 + STS,
# dynalite for the DynamoDB API) started on 127.0.0.1 for the run and stopped after.
# Called by `npm test` after lint and the TypeScript build (which is the typecheck).
# If the servers cannot be installed or started, this fails loudly: the integration
# suites are never skipped.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
# The AWS SDK warns on every client that releases after early 2027 need Node 22; the
# pinned versions run on Node 20, so the warning is noise in test output.
export AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
# No test may ask the machine's instance metadata service (169.254.169.254): the AWS
# credential chain skips it with this set; tests of that step use a loopback server.
export AWS_EC2_METADATA_DISABLED=true
# The console's browser tests drive Debian's chromium (installed here when missing).
bash scripts/install-chromium.sh
# The package test installs offline from the npm cache: fill it with what that install reads.
bash scripts/warm-npm-cache.sh
# Only *.test.js: node --test given a directory named test would also run the helpers in it.
# The slowest files first, so that none of them starts last (scripts/test-files.sh).
mapfile -t files < <(bash scripts/test-files.sh all)
# The spec reporter as before, then one line per failed test at the very end (scripts/test-summary.mjs).
reporters=(--test-reporter=spec --test-reporter-destination=stdout
  --test-reporter=./scripts/test-summary.mjs --test-reporter-destination=stdout)
# Files run side by side (node --test's default on 2 cores is one at a time): most of their
# time is spent waiting on servers and child processes (docs/decisions/140-tests-run-side-by-side.md).
exec bash scripts/with-servers.sh node --test --test-concurrency="${OBJSTATE_TEST_CONCURRENCY:-4}" "${reporters[@]}" "${files[@]}"
