#!/usr/bin/env bash
# The control surface (issue 7) as the binary shows it; status.sh and
# test_status.c cover the server's own checks (401 without or with a wrong
# token, 403 with none configured, 421 for a foreign Host, the
# constant-time comparison's results):
#  - files kria creates get exact modes whatever the umask (run under
#    umask 000 and 077): state directory 0700, kria.db / -wal / -shm and
#    kria.lock 0600, the WARC directory 0755 and WARC files 0644,
#    status.addr and crawl.log 0644;
#  - control: POST /pause needs the bearer token (401 without, 202 with);
#  - the status server refuses a non-loopback address without a token and
#    starts there with one;
#  - a WARC prefix from the config or -o cannot name another directory
#    ("../x", "a/b", "/abs", ".hidden") and a NUL byte in the config file is
#    refused: exit 2 with the reason, no file written outside.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] || bail "kria is not built ($KRIA)"
command -v curl >/dev/null || bail "curl is needed"

mode() { stat -c %a "$1" 2>/dev/null || echo missing; }

cat >"$T/site.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[site]
pages = 2000
links = 3
body-size = 1K
EOF
kts_start "$T/site.ini" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds.txt"
TOKEN=control-surface-token-0123456789
conf() { # FILE STATE [extra lines]
  local f=$1 state=$2; shift 2
  {
    echo "[http]"
    echo "allow-private-addresses = true"
    echo "[crawl]"
    echo "seeds = $T/seeds.txt"
    echo "state-dir = $state"
    echo "revisit = false"
    echo "[politeness]"
    echo "min-delay = 20ms"
    echo "max-delay = 20ms"
    echo "delay-factor = 0"
    echo "[status]"
    echo "listen = 127.0.0.1:0"
    echo "token = $TOKEN"
    local l
    for l in "$@"; do echo "$l"; done
  } >"$f"
}

# ---- modes, whatever the umask; control needs the token ----------------------------
for um in 000 077; do
  S=$T/st$um
  conf "$T/c$um.conf" "$S"
  (umask "$um" && exec "$KRIA" crawl -c "$T/c$um.conf") 2>"$T/k$um.err" &
  pid=$!
  _pids+=("$pid")
  wait_until 15 test -s "$S/status.addr" || { diag "$(tail -3 "$T/k$um.err")"; bail "no status.addr"; }
  ADDR=$(cat "$S/status.addr")
  check "umask $um: a WARC file is begun" wait_until 15 bash -c "ls '$S/warcs' | grep -q '\.warc\.gz\.open$'"
  is "$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST "http://$ADDR/pause")" 401 "umask $um: POST /pause without the token: 401"
  is "$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer x$TOKEN" "http://$ADDR/pause")" 401 "umask $um: ... with a wrong token: 401"
  is "$(mode "$S")" 700 "umask $um: state directory 0700"
  is "$(mode "$S/kria.db")" 600 "umask $um: kria.db 0600"
  is "$(mode "$S/kria.db-wal")" 600 "umask $um: kria.db-wal 0600"
  is "$(mode "$S/kria.db-shm")" 600 "umask $um: kria.db-shm 0600"
  is "$(mode "$S/kria.lock")" 600 "umask $um: kria.lock 0600"
  is "$(mode "$S/status.addr")" 644 "umask $um: status.addr 0644"
  is "$(mode "$S/warcs")" 755 "umask $um: WARC directory 0755"
  w=$(ls "$S/warcs" | grep '\.open$' | head -1)
  is "$(mode "$S/warcs/$w")" 644 "umask $um: WARC file 0644"
  is "$(mode "$S/logs/crawl.log")" 644 "umask $um: crawl.log 0644"
  r=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H "Authorization: Bearer $TOKEN" "http://$ADDR/stop")
  is "$r" 202 "umask $um: POST /stop with the token: 202"
  timeout 30 tail -s 0.05 --pid="$pid" -f /dev/null || kill -KILL "$pid"
  wait "$pid"
  is "$?" 0 "umask $um: kria exits 0 after /stop"
  w=$(ls "$S/warcs" | head -1)
  is "$(mode "$S/warcs/$w")" 644 "umask $um: the closed WARC file 0644"
done

# ---- non-loopback addresses --------------------------------------------------------------
conf "$T/nl.conf" "$T/nl"
sed -i 's/^listen = .*/listen = 0.0.0.0:0/; /^token = /d' "$T/nl.conf"
"$KRIA" crawl -c "$T/nl.conf" >"$T/nl.out" 2>&1
is "$?" 2 "a non-loopback address without a token: exit 2"
like "$(cat "$T/nl.out")" "is not a loopback address, so status.token must be set" "... saying why"
echo "token = $TOKEN" >>"$T/nl.conf"
"$KRIA" crawl -c "$T/nl.conf" 2>"$T/nl2.err" &
pid=$!
_pids+=("$pid")
check "with a token it starts there" wait_until 15 test -s "$T/nl/status.addr"
like "$(cat "$T/nl/status.addr" 2>/dev/null)" '^0\.0\.0\.0:[0-9]+$' "... bound to 0.0.0.0"
kill -TERM "$pid"
wait "$pid"

# ---- WARC prefixes and NUL bytes -------------------------------------------------------------
conf "$T/p.conf" "$T/p"
for bad in "../x" "a/b" "/abs" ".hidden" "x..y"; do
  "$KRIA" crawl -c "$T/p.conf" -o "warc.prefix=$bad" >"$T/p.out" 2>&1
  rc=$?
  is "$rc" 2 "warc.prefix '$bad' is refused (exit 2)"
  like "$(cat "$T/p.out")" "(warc.prefix: bad value|WARC prefix .* must be)" "... with the reason"
done
printf '[warc]\nprefix = ok\0/../../escape\n' >>"$T/p.conf"
"$KRIA" crawl -c "$T/p.conf" >"$T/p.out" 2>&1
is "$?" 2 "a NUL byte in the config file is refused"
like "$(cat "$T/p.out")" "NUL byte in line" "... naming it"
check "nothing was written outside the state directories" bash -c "! find '$T' -name '*escape*' | grep -q . && ! ls '$T/p/warcs' 2>/dev/null | grep -q ."

kts_stop
done_testing
