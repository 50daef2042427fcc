#!/usr/bin/env bash
# The clients the end-to-end tests run inside the sandbox, on Debian/Ubuntu: curl, git, ssh,
# openssl, python3 with requests, a JDK, real AWS clients (awscli, boto3: CI has no PyPI, so
# Debian's) for the SigV4 re-signing tests, and man to render docs/srt.1. npm test runs this
# first. As root it installs what is missing (nothing when all are there); otherwise it names it.
set -euo pipefail

command -v dpkg-query >/dev/null || exit 0 # not Debian/Ubuntu: nothing to check by package name

packages=(curl git python3 python3-pip python3-requests iproute2 procps util-linux less openssh-client openssl ca-certificates openjdk-17-jdk-headless awscli python3-boto3 man-db)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test: installing the clients the tests use: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "test: warning: the tests that use them will fail without ${missing[*]}; install as root: bash scripts/test-deps.sh" >&2
fi
