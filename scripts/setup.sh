#!/usr/bin/env bash
# Installs what srt needs on Debian/Ubuntu (system packages when run as root), the locked npm
# dependencies, and builds dist/ plus srt-init.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-requests and a JDK are clients the TLS tests run inside the sandbox; awscli and
# python3-boto3 real AWS clients for the SigV4 re-signing tests (CI has no PyPI: Debian's boto3).
packages=(bubblewrap ripgrep curl git python3 python3-pip python3-requests gcc libc6-dev iproute2 procps util-linux less openssh-client openssl ca-certificates openjdk-17-jdk-headless awscli python3-boto3)
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
