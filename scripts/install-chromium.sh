#!/usr/bin/env bash
# Installs Debian's `chromium` for the console's browser tests, when /usr/bin/chromium is
# missing. Idempotent and quiet: prints nothing when the browser is already there, and only
# apt's errors otherwise. Playwright's own browser download is never used (the project's
# machines reach Debian's archive and npm only).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# debconf complains on stderr that apt-utils is missing: noise, not an error.
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2> >(grep -v "^debconf:" >&2)
if [ ! -x /usr/bin/chromium ]; then
  echo "install-chromium: apt-get installed chromium but /usr/bin/chromium is missing: install Debian's chromium package by hand" >&2
  exit 1
fi
