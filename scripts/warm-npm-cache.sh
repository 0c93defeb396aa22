#!/usr/bin/env bash
# The package test installs the packed tarball with `npm install --offline`, which needs the
# full registry documents of the runtime dependencies in the npm cache; `npm ci` caches only
# the abbreviated ones. One install of those dependencies into a scratch directory caches them.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/objstate-npm-warm.XXXXXX")
trap 'rm -rf -- "$dir"' EXIT
node -e 'const p = require("./package.json"); require("node:fs").writeFileSync(process.argv[1], JSON.stringify({ name: "warm", private: true, dependencies: p.dependencies }))' "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --no-package-lock --no-audit --no-fund --loglevel=error >/dev/null)
