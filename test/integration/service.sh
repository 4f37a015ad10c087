#!/usr/bin/env bash
# kria as a systemd service, without systemd running:
#  - config/kria.service passes `systemd-analyze verify` with no warning
#    (ExecStart pointed at this build's binary), has the directives the
#    service needs (the configuration as a credential, so the dynamic user
#    reads a root-only file; test/integration/install.sh runs it so), and `systemd-analyze security --offline` rates its
#    exposure low; a unit with a bogus key does warn (the check works);
#  - the notification protocol end to end: a test datagram socket plays
#    systemd ($NOTIFY_SOCKET, a path and an @abstract name): READY=1 once
#    the crawl runs, STATUS= lines, WATCHDOG=1 at WATCHDOG_USEC/2 while
#    healthy, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1 on
#    SIGTERM, exit 0. Needs python3 for the receiver (skipped otherwise).
. "$(dirname "$0")/lib.sh"

UNIT=$KRIA_TOP/config/kria.service
check "config/kria.service exists" test -f "$UNIT"
for d in 'Type=notify' 'WatchdogSec=' 'Restart=on-failure' 'StateDirectory=kria' 'DynamicUser=yes' \
  'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' 'NoNewPrivileges=yes' \
  'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'SystemCallFilter=@system-service' \
  'LoadCredential=kria.conf:/etc/kria/kria.conf' 'crawl -c %d/kria.conf' \
  'ExecReload=/bin/kill -HUP $MAINPID' 'UMask=0077'; do
  check "kria.service: $d" grep -qF -- "$d" "$UNIT"
done
# A dynamic user can write only its own directories (WARCs go to the state
# directory's warcs/): a ReadWritePaths= outside them would not help.
if grep -q '^ReadWritePaths=' "$UNIT"; then
  not_ok "kria.service: no ReadWritePaths= (a dynamic user cannot use it)"
else
  ok "kria.service: no ReadWritePaths= (a dynamic user cannot use it)"
fi

if command -v systemd-analyze >/dev/null; then
  sed "s|/usr/local/bin/kria|$KRIA|" "$UNIT" >"$T/kria.service"
  systemd-analyze verify "$T/kria.service" >"$T/verify.out" 2>&1
  is "$?" 0 "systemd-analyze verify: exit 0"
  is "$(cat "$T/verify.out")" "" "systemd-analyze verify: no warning"
  printf '[Service]\nType=notify\nExecStart=/bin/true\nBogusKey=1\n' >"$T/bogus.service"
  systemd-analyze verify "$T/bogus.service" >"$T/bogus.out" 2>&1
  check "verify does warn about a bogus key (the check above can fail)" grep -q BogusKey "$T/bogus.out"
  out=$(systemd-analyze security --offline=yes "$T/kria.service" 2>&1 | grep 'Overall exposure level')
  lvl=$(sed -n 's/.*kria.service: \([0-9.]*\).*/\1/p' <<<"$out")
  if [ -n "$lvl" ]; then
    check "systemd-analyze security: exposure $lvl <= 2.0" awk -v l="$lvl" 'BEGIN { exit !(l <= 2.0) }'
  else
    skip "systemd-analyze security --offline not supported here" "exposure level"
  fi
else
  skip "systemd-analyze not installed" "systemd-analyze verify"
fi

if ! python3 -c 'import socket; socket.AF_UNIX' 2>/dev/null; then
  skip "python3 not available for the notify receiver" "sd_notify end to end"
  done_testing
fi
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <html><body><a href="/p/0">start</a></body></html>

[site]
pages = 200
links = 3
body-size = 1K
EOF
kts_start "$T/routes.ini" || bail "kts did not start"

# receiver NAME LOG: print every datagram's lines to LOG; "bound" first.
cat >"$T/recv.py" <<'EOF'
import socket, sys
name, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind('\0' + name[1:] if name.startswith('@') else name)
with open(log, 'a', buffering=1) as f:
    f.write('bound\n')
    while True:
        d = s.recv(65536).decode('utf-8', 'replace')
        for line in d.split('\n'):
            f.write(line + '\n')
EOF

wait_for() { # SECONDS FILE ERE: the file gets a matching line
  local end=$((SECONDS + $1))
  while ((SECONDS <= end)); do
    grep -qE "$3" "$2" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

run_notified() { # NOTIFY_NAME TAG
  local name=$1 tag=$2 log=$T/notify-$2.log
  : >"$log"
  python3 "$T/recv.py" "$name" "$log" &
  local rpid=$!
  _helpers+=("$rpid")
  wait_for 10 "$log" '^bound$' || { not_ok "$tag: receiver bound"; return; }
  local state=$T/state-$tag
  echo "$KTS_URL/" >"$T/seeds.txt"
  cat >"$T/$tag.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $state
progress-interval = 0
[politeness]
min-delay = 10ms
max-delay = 10ms
delay-factor = 0
EOF
  NOTIFY_SOCKET=$name WATCHDOG_USEC=200000 "$KRIA" crawl -c "$T/$tag.conf" 2>"$T/$tag.err" &
  local kpid=$!
  _pids+=("$kpid")
  check "$tag: READY=1" wait_for 10 "$log" '^READY=1$'
  check "$tag: STATUS= says what it does" wait_for 10 "$log" '^STATUS=crawling: [0-9]+ URIs known'
  check "$tag: WATCHDOG=1 pings (several at 100 ms)" wait_for 10 "$log" '^WATCHDOG=1$'
  local n0
  n0=$(grep -c '^WATCHDOG=1$' "$log")
  check "$tag: ... and they keep coming" bash -c "end=\$((SECONDS + 10)); while [ \$(grep -c '^WATCHDOG=1\$' '$log') -lt $((n0 + 3)) ]; do [ \$SECONDS -gt \$end ] && exit 1; sleep 0.05; done"
  kill -HUP "$kpid"
  check "$tag: RELOADING=1 on SIGHUP" wait_for 10 "$log" '^RELOADING=1$'
  check "$tag: READY=1 again after the reload" bash -c "end=\$((SECONDS + 10)); while [ \$(grep -c '^READY=1\$' '$log') -lt 2 ]; do [ \$SECONDS -gt \$end ] && exit 1; sleep 0.05; done"
  kill -TERM "$kpid"
  check "$tag: STOPPING=1 on SIGTERM" wait_for 10 "$log" '^STOPPING=1$'
  if timeout 10 tail -s 0.05 --pid="$kpid" -f /dev/null; then
    wait "$kpid"
    is "$?" 0 "$tag: exit 0"
  else
    not_ok "$tag: exits within 10 s"
  fi
  kill "$rpid" 2>/dev/null
}

run_notified "$T/notify.sock" path
run_notified "@kria-test-$$-$RANDOM" abstract

# A NOTIFY_SOCKET that is not a socket name is reported, not fatal.
echo "$KTS_URL/" >"$T/seeds.txt"
cat >"$T/bad.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state-bad
revisit = false
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
EOF
NOTIFY_SOCKET=relative/name timeout 60 "$KRIA" crawl -c "$T/bad.conf" 2>"$T/bad.err"
is "$?" 0 "a bad NOTIFY_SOCKET: the crawl still runs and exits 0"
check "... and says so" grep -q 'NOTIFY_SOCKET' "$T/bad.err"
done_testing
