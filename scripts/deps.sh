#!/usr/bin/env bash
# Install every Debian package kria's build, tests and benchmarks need.
# Idempotent and quiet when everything is present already.
set -euo pipefail

PKGS=(
  # build
  build-essential pkg-config
  libuv1-dev libc-ares-dev node-llhttp libssl-dev libsqlite3-dev libpcre2-dev
  zlib1g-dev libinih-dev libidn2-dev libpsl-dev libexpat1-dev libdeflate-dev libisal-dev
  # tests
  libcmocka-dev libjson-c-dev openssl nginx-light valgrind curl unzip
  # benchmarks
  wget wget2 httrack dnsmasq-base util-linux time linux-perf iproute2 sqlite3
  python3-matplotlib  # bench/chart.py
  # fuzzing (make fuzz: libFuzzer, ASan and UBSan runtimes)
  clang libclang-rt-14-dev
)

# Optional: wanted by one test each, which skips when the package is
# absent; installed best effort (a failure here fails nothing).
#   chromium  test/integration/console.sh (headless screenshot of the console)
#   systemd   test/integration/service.sh (systemd-analyze verify of
#             config/kria.service; installs without booting systemd:
#             systemd-sysv, which would make it PID 1, is not pulled in)
OPTIONAL=(chromium systemd)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${PKGS[@]}"; do
  installed "$p" || missing+=("$p")
done
optional=()
if [ "${KRIA_SKIP_OPTIONAL:-0}" != 1 ]; then
  for p in "${OPTIONAL[@]}"; do installed "$p" || optional+=("$p"); done
fi
# WARC tests run warcio.js (npm). Only when no node at all: a node from
# elsewhere (e.g. NodeSource's nodejs, which bundles npm) must not be
# replaced by Debian's nodejs + npm.
command -v node >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]} ${optional[*]}"
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
[ ${#missing[@]} -eq 0 ] || $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ ${#optional[@]} -gt 0 ] &&
  ! $SUDO apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null; then
  echo "deps: optional ${optional[*]} not installed (the tests that need it skip;" \
    "KRIA_SKIP_OPTIONAL=1 stops trying)"
fi
echo "deps: done"
