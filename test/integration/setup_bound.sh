#!/usr/bin/env bash
# The bound on connections set up at once per server address (issue 21:
# [http] setups-per-address, kria fetch --setups-per-address), with many
# hosts on one address (kts --tls, every host resolved to 127.0.0.1):
#  - kria fetch --input starting 24 hosts at once, bound 2: every page
#    fetched, 22 fetches waited, and kts never had more than 3 connections
#    open before their first request byte (2, plus one whose request may
#    be in flight as the next connect lands); with no bound the same
#    burst has them all open at once (what the bound prevents);
#  - a waiting fetch's connect timeout starts when its connect does: kts
#    never ending the handshake (--tls-mode stall), bound 1, two hosts:
#    each connects in turn and times out on its own (counted from the
#    queue, the second would expire with the first, unconnected);
#  - a crawl of 20 hosts on one address, setups-per-address = 2: every
#    host reached, no connect timeout, the bound held at kts, the summary
#    counts the fetches that waited;
#  - a queue at one address holds up no other host: three hosts on a
#    kts that never ends a handshake, setups-per-address = 1 and
#    max-connections = 3 (one connecting, two waiting: without the bound
#    all three connecting, max-connections reached), and one more host on
#    another address (kts on another port) is fetched all the same; a
#    stop then gives the waiting fetches back (no crawl.log line, no
#    failed visit).
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v curl >/dev/null || bail "curl is needed"
make_cert "$T/cert" || bail "no certificate"

cat >"$T/site.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <html><body>one page</body></html>
EOF2
stat_of() { curl -sk "https://127.0.0.1:$KTS_PORT/_kts/stats" | awk -v k="$1" '$1 == k { print $2 }'; }

# ---- kria fetch: a burst of 24 hosts -------------------------------------------
burst() { # NAME BOUND: 24 hosts at once; kts's fresh-max in FRESH
  kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" || bail "kts --tls did not start"
  local args=() i
  : >"$T/$1.urls"
  for i in $(seq 1 24); do
    echo "https://h$i.test:$KTS_PORT/" >>"$T/$1.urls"
    args+=(--resolve "h$i.test:$KTS_PORT:127.0.0.1")
  done
  kfetch "${args[@]}" --tls-verify off --tls-sessions 0 --input "$T/$1.urls" --connections 24 \
    --setups-per-address "$2"
  is "$RC" 0 "$1: kria fetch exits 0"
  is "$(field pages)" 24 "$1: every host's page fetched"
  FRESH=$(stat_of fresh-max)
  WAITED=$(field setups-waited)
  kts_stop
}
burst bounded 2
is "$WAITED" 22 "bounded: 22 of the 24 fetches waited for a setup slot"
check "bounded: at most 3 connections open before their request at kts ($FRESH)" \
  test "${FRESH:-99}" -le 3
burst unbounded 0
is "$WAITED" 0 "unbounded: none waited"
check "unbounded: the burst opens most connections at once ($FRESH)" test "${FRESH:-0}" -ge 12

# ---- the connect timeout starts with the connect ---------------------------------
kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode stall ||
  bail "kts --tls-mode stall did not start"
: >"$T/stall.urls"
args=()
for i in 1 2; do
  echo "https://s$i.test:$KTS_PORT/" >>"$T/stall.urls"
  args+=(--resolve "s$i.test:$KTS_PORT:127.0.0.1")
done
# (a second: a loaded machine may not run the loop for a while, and
# the timer then fires before the connect is seen)
kfetch "${args[@]}" --input "$T/stall.urls" --connections 2 --setups-per-address 1 \
  --timeout-connect 1000 --timeout-total 60000
is "$(field error-connect-timeout)" 2 "stall: two connect timeouts"
is "$(field conns-opened)" 2 "stall: each connected first, one after the other"
is "$(field setups-waited)" 1 "stall: the second waited"
kts_stop

# ---- a crawl of 20 hosts on one address -------------------------------------------
kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --log "$T/crawl.kts.log" ||
  bail "kts --tls did not start"
: >"$T/hosts"
: >"$T/seeds"
for i in $(seq 1 20); do
  echo "127.0.0.1 c$i.test" >>"$T/hosts"
  echo "https://c$i.test:$KTS_PORT/" >>"$T/seeds"
done
{ loopback_conf "$T/seeds" "$T/state"
  printf '[dns]\nhosts-file = %s\n[warc]\nenabled = false\n' "$T/hosts"
  printf '[http]\nsetups-per-address = 2\ntls-verify = off\n'; } >"$T/crawl.conf"
timeout 60 "$KRIA" crawl -c "$T/crawl.conf" 2>"$T/crawl.err"
is "$?" 0 "crawl: ends, exit 0"
unlike "$(cat "$T/crawl.err")" "runtime error|Sanitizer|BUG|assert" "crawl: no sanitizer report"
LOG=$T/state/logs/crawl.log
is "$(awk '$2 == 200 && $4 ~ /\/$/' "$LOG" | wc -l)" 20 "crawl: every host's page fetched"
is "$(awk '$2 == 404' "$LOG" | wc -l)" 20 "crawl: every host's robots.txt answered"
is "$(awk '$2 < 0' "$LOG" | wc -l)" 0 "crawl: no failed fetch (no connect timeout)"
FRESH=$(stat_of fresh-max)
check "crawl: at most 3 connections open before their request at kts ($FRESH)" \
  test "${FRESH:-99}" -le 3
like "$(cat "$T/crawl.err")" "[0-9]+ fetches waited for a connection slot" \
  "crawl: the summary counts the fetches that waited"
kts_stop

# ---- a queue at one address holds up no other host ------------------------------
kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode stall ||
  bail "kts --tls-mode stall did not start"
STALL_PORT=$KTS_PORT STALL_PID=$KTS_PID
kts_start "$T/site.ini" --log "$T/other.kts.log" || bail "kts did not start"
: >"$T/hosts2"
: >"$T/seeds2"
for i in 1 2 3; do
  echo "127.0.0.1 q$i.test" >>"$T/hosts2"
  echo "https://q$i.test:$STALL_PORT/" >>"$T/seeds2"
done
echo "127.0.0.1 other.test" >>"$T/hosts2"
echo "http://other.test:$KTS_PORT/" >>"$T/seeds2"
{ loopback_conf "$T/seeds2" "$T/state2"
  printf '[dns]\nhosts-file = %s\n[warc]\nenabled = false\n' "$T/hosts2"
  printf '[http]\nsetups-per-address = 1\nmax-connections = 3\ntimeout-connect = 5m\n'; } >"$T/queue.conf"
"$KRIA" crawl -c "$T/queue.conf" >"$T/queue.out" 2>"$T/queue.err" &
QPID=$!
_pids+=("$QPID")
check "queue: the host on the other address is fetched while the queue waits" \
  wait_until 30 grep -q 'GET / HTTP' "$T/other.kts.log"
kill -TERM "$QPID"
timeout 30 tail -s 0.05 --pid="$QPID" -f /dev/null
wait "$QPID"
is "$?" 0 "queue: SIGTERM, exit 0"
LOG2=$T/state2/logs/crawl.log
is "$(grep -c 'other.test' "$LOG2")" 2 "queue: other.test's robots.txt and page in crawl.log"
is "$(grep -c 'q[0-9].test' "$LOG2")" 0 "queue: the waiting fetches given back, none logged as failed"
unlike "$(cat "$T/queue.err")" "runtime error|Sanitizer|BUG|assert" "queue: no sanitizer report"
kts_stop
kts_stop "$STALL_PID"
done_testing
