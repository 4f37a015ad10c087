#!/usr/bin/env bash
# Install every Debian package kria's build, tests and benchmarks need.
# Idempotent and quiet when everything is present already.
set -euo pipefail

PKGS=(
  # build
  build-essential pkg-config
  libuv1-dev libc-ares-dev node-llhttp libssl-dev libsqlite3-dev libpcre2-dev
  zlib1g-dev libinih-dev libidn2-dev libpsl-dev libexpat1-dev libdeflate-dev
  # tests
  libcmocka-dev libjson-c-dev openssl nginx-light valgrind curl
  # benchmarks
  wget wget2 dnsmasq-base util-linux time
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# WARC tests run warcio.js (npm). Only when no node at all: a node from
# elsewhere (e.g. NodeSource's nodejs, which bundles npm) must not be
# replaced by Debian's nodejs + npm.
command -v node >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx's package would start a system service on port 80; tests run their
# own nginx on ephemeral ports, so keep package scripts from starting it.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
