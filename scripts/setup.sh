#!/usr/bin/env bash
# Installs what srt needs to run, on Debian/Ubuntu: bubblewrap, ripgrep, gcc and the C library
# headers for its helper, and CA certificates (system packages, when run as root); then the
# locked npm dependencies, and builds dist/ plus srt-init. Node 20 or later must be there first.
# The clients the tests run (a JDK, awscli, …) are not installed here: npm test installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

# Before anything is installed: without Node 20 nothing below can work.
if ! command -v node >/dev/null || ! command -v npm >/dev/null ||
  ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "setup: srt needs Node 20 or later and npm (found: $(node --version 2>/dev/null || echo no node)); get them from https://nodejs.org/ (Debian 12 and Ubuntu 24.04 ship Node 18), then run this again" >&2
  exit 1
fi

packages=(bubblewrap ripgrep gcc libc6-dev ca-certificates)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
else
  missing=()
  for bin in bwrap rg gcc; do command -v "$bin" >/dev/null || missing+=("$bin"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: missing ${missing[*]}; install as root: apt-get install ${packages[*]}" >&2
    exit 1
  fi
fi

npm ci --no-audit --no-fund
npm run build
