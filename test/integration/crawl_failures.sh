#!/usr/bin/env bash
# Failure belongs to the URI unless the host fails; recovery is prompt.
# A revisit crawl (pages that change on every visit, so their waits stay
# at the 1 s min-wait; max-wait 1 h; politeness 100 ms, max-backoff 2 s,
# max-retries 1, retry-delay 1 s) of a kts site:
#  - busy: /busy answers 503 for ever beside 4 healthy pages. The healthy
#    pages keep their schedule (each fetched again and again) while /busy
#    backs off alone, at most max-backoff apart and never in a burst
#    (it used to snooze the whole host with /busy first again each time:
#    the healthy pages were never fetched after the first 503);
#  - outage: kts goes away until every page has failed past its retry
#    budget (crawl.log -2 lines with no retries left), then comes back on
#    the same port: every page is fetched again within max-backoff + its
#    wait + margin (a failed URI used to wait the longest max-wait, 28
#    days). The measured delays are printed.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[route "/"]
body = <a href="/p/0">0</a> <a href="/busy">busy</a>

[route "/busy"]
status = 503
body = busy

[site "/p/"]
pages = 4
links = 4
body-size = 1K
change-every = 1
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" --log-times || bail "kts did not start"
PORT=$KTS_PORT
printf '%s/\n' "$KTS_URL" >"$T/seeds.txt"
cat >"$T/kria.conf" <<EOF
[http]
allow-private-addresses = true
timeout-connect = 2s
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
[politeness]
min-delay = 100ms
max-delay = 100ms
delay-factor = 0
max-backoff = 2s
max-retries = 1
retry-delay = 1s
[store]
commit-interval = 10ms
[wait "all"]
initial-wait = 1s
default-wait = 1s
min-wait = 1s
max-wait = 1h
EOF
"$KRIA" crawl -c "$T/kria.conf" >"$T/kria.out" 2>"$T/kria.err" &
KPID=$!
_pids+=("$KPID")

# hits PATH: requests kts logged for PATH so far
hits() { grep -c " GET $1 " "$T/kts.log"; }
every_page_at_least() { # N
  local p
  for p in /p/0 /p/1 /p/2 /p/3; do [ "$(hits "$p")" -ge "$1" ] || return 1; done
}
busy_seen() { every_page_at_least 4 && [ "$(hits /busy)" -ge 3 ]; }
check "busy: every healthy page is fetched 4 times while /busy answers 503" \
  wait_until 60 busy_seen
busy=$(hits /busy)
diag "busy: /busy fetched $busy times meanwhile; pages: $(for p in 0 1 2 3; do printf '%s ' "$(hits /p/$p)"; done)"
check "busy: /busy was asked again, backing off alone ($busy)" test "$busy" -ge 3
# ms between consecutive /busy requests: never a burst, at most max-backoff + slack
gaps=$(sed -n 's/^t=\([0-9]*\) .* GET \/busy .*/\1/p' "$T/kts.log" | awk 'NR > 1 {print $1 - p} {p = $1}')
diag "busy: gaps between /busy requests (ms): $(tr '\n' ' ' <<<"$gaps")"
check "busy: /busy is not asked again within 900 ms (its own back-off)" \
  test -z "$(awk '$1 < 900' <<<"$gaps")"
check "busy: nor left longer than max-backoff + 3 s" test -z "$(awk '$1 > 5000' <<<"$gaps")"
is "$(grep -c 'backing off' "$T/kria.err")" 0 "busy: the host itself never backs off"

# ---- the outage ----
kts_stop
failed_past_budget() { # every page has a -2 (connect) line after its retries
  local p
  for p in 0 1 2 3; do
    awk -v u="$KTS_URL/p/$p" '$4 == u && $2 ~ /^-/ {n++} END {exit !(n >= 2)}' \
      "$T/state/logs/crawl.log" || return 1
  done
}
check "outage: every page fails past its retry budget (max-retries 1)" wait_until 60 failed_past_budget
diag "outage: $(awk '$2 ~ /^-/' "$T/state/logs/crawl.log" | wc -l) failure lines, statuses $(awk '$2 ~ /^-/ {print $2}' "$T/state/logs/crawl.log" | sort | uniq -c | tr -s ' \n' ' ')"
: >"$T/kts2.log"
kts_start "$T/routes.ini" --port "$PORT" --log "$T/kts2.log" --log-times || bail "kts did not come back on port $PORT"
t_up=$(date +%s%3N)
back_all() {
  local p
  for p in /p/0 /p/1 /p/2 /p/3; do grep -q " GET $p " "$T/kts2.log" || return 1; done
}
check "recovery: every page is fetched again after the outage" wait_until 30 back_all
t_all=$(date +%s%3N)
diag "recovery: every page fetched again $((t_all - t_up)) ms after the server came back (bound: max-backoff 2 s + wait 1 s + 2 s)"
check "recovery: within max-backoff + wait + 2 s" test $((t_all - t_up)) -le 5000
kill -TERM "$KPID"
wait "$KPID"
is "$?" 0 "the crawl stops cleanly"
states=$(sqlite3 "$T/state/kria.db" "SELECT count(*) FROM uris WHERE next_at >= 9000000000000000000 OR state = 3" 2>/dev/null)
is "$states" 0 "no URI disregarded or scheduled never"
kts_stop
done_testing
