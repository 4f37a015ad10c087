#!/usr/bin/env bash
# WebSub against a small publisher and hub on loopback (websub_hub.mjs):
# the seed feed's Link headers name the hub and the feed itself (the
# document names another hub: the headers win); kria subscribes (a form POST
# with topic, a callback under websub.callback with its own token, a
# lease and a secret), answers the hub's verification of intent with
# the challenge (a wrong topic gets 404), and renews before the lease the
# hub granted (3 s) ends. A signed push makes the feed due now and pulls
# forward the pushed item dated after its last visit, not the other; a
# push with a wrong signature is acknowledged but ignored; an unknown
# token is 404. Every page's own wait is an hour, so only pushes bring
# them back. A push is a change signal of its own (source websub): the
# visits it brings verify it (crawl.log sig:websub:tp) and the host's
# learned state keeps its reliability. After a restart the subscription
# comes from the state database: it is renewed with the same callback,
# and a push signed with the stored secret still pulls; a hub's denial
# drops the subscription.
# A hub whose pushes announce nothing new (fresh state, probation 2): the
# first push pulls the feed and its item, both found unchanged
# (sig:websub:fp); the next push pulls nothing (ignored).
# A push verified once: the feed revisited every second after the visit
# a push brought does not verify that push again.
# A hub that takes requests but never verifies them (fresh state,
# verify-timeout 1s, verify-attempts 3): asked three times, then given up
# with a warning and a count; its callback is closed, and after a restart
# that reads the feed again it is not asked again. The count of requests
# is kept in the state database: with one request per run, the third run
# gives up at once.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v node >/dev/null || bail "node is needed for the hub"

node "$KRIA_TOP/test/integration/websub_hub.mjs" "$T/hub.port" 3 2>"$T/hub.err" &
_pids+=("$!")
wait_until 10 test -s "$T/hub.port" || bail "the hub did not start: $(cat "$T/hub.err")"
HUB="http://127.0.0.1:$(cat "$T/hub.port")"
TOKEN=websub-test-token-0123456789

# the callback names the status server's address, so its port is chosen
# here, and kept for the restart (the callback must stay the same).
# STATE: the state directory; CONF_MORE: sections appended to the config.
SPORT=
STATE=$T/state
CONF_MORE=
start_kria() {
  local try
  for try in 1 2 3 4 5; do
    [ -n "$SPORT" ] && [ "$try" = 1 ] || SPORT=$(random_port)
    {
      revisit_conf "$T/seeds.txt" "$STATE"
      cat <<EOF
[status]
listen = 127.0.0.1:$SPORT
token = $TOKEN
[websub]
callback = http://127.0.0.1:$SPORT/websub
$CONF_MORE
EOF
      wait_conf default '' 1h
    } >"$T/c.conf"
    rm -f "$STATE/status.addr"
    timeout 60 "$KRIA" crawl -c "$T/c.conf" >"$T/out$1" 2>"$T/err$1" &
    KPID=$!
    _pids+=("$KPID")
    wait_until 20 test -s "$STATE/status.addr" && return 0
    wait "$KPID" 2>/dev/null
  done
  bail "kria did not start: $(tail -3 "$T/err$1")"
}
stop_kria() {
  curl -s -X POST -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$SPORT/stop" >/dev/null
  wait "$KPID"
}

hub_state() { curl -s "$HUB/_ctl/state" >"$T/state.json"; }
# q EXPR: a figure of the hub's state (JS expression over s)
q() { hub_state && node -e "const s = JSON.parse(require('fs').readFileSync('$T/state.json')); console.log($1)"; }
gets() { q "s.gets['$1'] || 0"; }
# qge EXPR N / qeq EXPR V: for wait_until (EXPR read again at each try)
qge() { [ "$(q "$1")" -ge "$2" ]; }
qeq() { [ "$(q "$1")" = "$2" ]; }
push() { curl -s -X POST "$HUB/_ctl/push?$1"; }
metric() { curl -s "http://127.0.0.1:$SPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# fresh N STATE CONF: run N on the fresh state directory STATE, with the
# sections CONF appended to the config; NREQ: the hub's requests before
fresh() {
  STATE=$2
  CONF_MORE=$3
  NREQ=$(q "s.requests.length")
  start_kria "$1"
}
metric_ge() { [ "$(metric "$1")" -ge "$2" ]; }
# logged URL ANNOTATION: the crawl.log of $STATE has a line of URL (the
# end of its path) with ANNOTATION
logged() { awk -v u="$1" -v a="$2" '$4 ~ u "$" && index($0, a) { f = 1 } END { exit !f }' "$STATE/logs/crawl.log"; }
# websub_stored FIELD: the websub signals' FIELD in the host's learned
# state as the state database holds it (offline)
websub_stored() { host_fields stored "$STATE" "h.learned.signals.websub.$1"; }

printf '%s\n' "$HUB/feed.xml" >"$T/seeds.txt"
start_kria 1

check "kria subscribes and the hub's verification is confirmed" \
  wait_until 20 qge 's.verified.filter(v => v.status === 200 && v.echoed).length' 1
is "$(q 's.requests[0].mode + " " + s.requests[0].topic + " " + s.requests[0].type')" \
  "subscribe $HUB/feed.xml application/x-www-form-urlencoded" "a form POST: mode subscribe, the feed's self as topic"
CALLBACK=$(q 's.requests[0].callback')
like "$CALLBACK" "^http://127\\.0\\.0\\.1:$SPORT/websub/[0-9a-f]{32}\$" "the callback: websub.callback + a random token"
like "$(q 's.requests[0].secret')" "^[0-9a-f]{32}\$" "a random secret"
is "$(q 's.requests[0].lease')" 864000 "the lease asked: websub.lease (10d)"
is "$(q 's.wrongTopic')" 404 "a verification for another topic is 404"
check "the pages are visited once" wait_until 20 qeq "(s.gets['/item1'] || 0) + ',' + (s.gets['/item2'] || 0)" 1,1

check "renewed before the granted 3 s lease ends, with the same callback" \
  wait_until 20 qge "s.requests.filter(r => r.callback === '$CALLBACK').length" 2

is "$(push 'sig=bad&item=1')" 202 "a push with a wrong signature is acknowledged (202)"
is "$(push 'sig=none&item=1')" 202 "so is one without a signature"
is "$(push 'sig=good&token=0123456789abcdef0123456789abcdef')" 404 "an unknown token is 404"
is "$(metric kria_websub_rejected_total)" 2 "both unsigned pushes are counted as rejected"
is "$(push 'sig=good&item=1')" 202 "a signed push is accepted (202)"
check "the push makes the feed due now" wait_until 20 qge "s.gets['/feed.xml'] || 0" 2
check "and pulls forward the item it dates after its last visit" wait_until 20 qeq "s.gets['/item1']" 2
is "$(gets /item2)" 1 "not the one dated before"
check "the pulled item's visit verifies the push (sig:websub:tp)" \
  wait_until 20 logged /item1 sig:websub:tp
check "so does the feed's (it changed with the push)" wait_until 20 logged /feed.xml sig:websub:tp
like "$(curl -s "http://127.0.0.1:$SPORT/hosts")" '"websub":\{"seen":[1-9]' "/hosts shows the host's websub signals"
is "$(metric kria_websub_pushes_total)" 1 "one push accepted"
like "$(metric kria_websub_verified_total)" "^([2-9]|[1-9][0-9]+)$" "verifications counted"
is "$(metric kria_websub_subscriptions_active)" 1 "one subscription active"
like "$(curl -s "http://127.0.0.1:$SPORT/status")" '"websub_active":1' "/status shows it"
is "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$SPORT/pause")" 401 \
  "other POST routes still need the status token"
stop_kria
is "$?" 0 "the crawl stops cleanly"
like "$(websub_stored verified)" "^[2-9]" "the host's learned state keeps the verified pushes"

NREQ=$(q "s.requests.length")
start_kria 2
check "after a restart the stored subscription is renewed with the same callback" \
  wait_until 20 qge "s.requests.filter(r => r.callback === '$CALLBACK').length" "$((NREQ + 1))"
is "$(push 'sig=good&item=2')" 202 "a push signed with the stored secret is accepted"
check "and pulls forward its dated item" wait_until 20 qeq "s.gets['/item2']" 2
is "$(q "s.requests.filter(r => r.callback !== '$CALLBACK').length")" 0 \
  "no second subscription was made"
is "$(curl -s -X POST "$HUB/_ctl/deny")" 200 "the hub's denial is acknowledged"
is "$(metric kria_websub_denied_total)" 1 "and counted"
is "$(metric kria_websub_subscriptions_active)" 0 "the subscription is dropped"
is "$(push 'sig=good&item=1')" 404 "its callback is gone (404)"
stop_kria
is "$?" 0 "the second run stops cleanly"

# ---- pushes of nothing new: verified false, then ignored --------------------------------
fresh 3 "$T/state3" "[adaptive]
signal-probation = 2"
check "run 3: subscribed afresh" wait_until 20 qge 's.verified.filter(v => v.status === 200).length' "$((NREQ + 1))"
check "run 3: the item is visited" wait_until 20 logged /item1 " - "
is "$(push 'sig=good&item=1&change=0')" 202 "run 3: a push of nothing new is accepted"
is "$(metric kria_websub_pulled_total)" 2 "run 3: under probation it pulls the feed and its item"
check "run 3: both visits find nothing changed (sig:websub:fp)" \
  wait_until 20 metric_ge kria_signals_false_total 2
check "run 3: the item's line says sig:websub:fp" logged /item1 sig:websub:fp
is "$(push 'sig=good&item=1&change=0')" 202 "run 3: the next push is accepted"
is "$(metric kria_websub_pulled_total)" 2 "run 3: but pulls nothing: the host's pushes proved false"
is "$(metric kria_signals_ignored_total)" 2 "run 3: both its claims are counted ignored"
stop_kria
is "$?" 0 "run 3 stops cleanly"

# ---- a push is verified once: by the visit it brings, not again by the next ----------------
fresh 3b "$T/state3b" "$(wait_conf feed '^application/atom' 1s changed-factor=1)"
check "run 3b: subscribed afresh" wait_until 20 qge 's.verified.filter(v => v.status === 200).length' "$((NREQ + 1))"
is "$(push 'sig=good&item=1')" 202 "run 3b: a push (the feed changes with it)"
check "run 3b: the feed's next visit verifies it" wait_until 20 logged /feed.xml sig:websub:tp
feed_lines() { awk '$4 ~ /\/feed\.xml$/' "$STATE/logs/crawl.log"; }
FL=$(feed_lines | wc -l)
feed_visited_twice_more() { [ "$(feed_lines | wc -l)" -ge "$((FL + 2))" ]; }
check "run 3b: the feed is visited twice more (its wait is 1 s)" wait_until 20 feed_visited_twice_more
is "$(feed_lines | grep -c 'sig:websub')" 1 \
  "run 3b: only the visit the push brought says sig:websub"
stop_kria
is "$?" 0 "run 3b stops cleanly"

# ---- a hub that never verifies: asked again, then given up --------------------------------
is "$(curl -s -X POST "$HUB/_ctl/silent?on=1")" true "the hub stops verifying"
fresh 4 "$T/state4" "[websub]
verify-timeout = 1s
verify-attempts = 3"
check "run 4: asked three times" wait_until 30 qeq "s.requests.length" "$((NREQ + 3))"
check "run 4: then given up (counted)" wait_until 30 metric_ge kria_websub_given_up_total 1
like "$(cat "$T/err4")" "websub: hub $HUB/hub never verified the subscription after 3 requests: given up" \
  "run 4: the warning names the hub and the requests"
TOK4=$(q "s.requests[s.requests.length - 1].callback.replace(/.*\\//, '')")
is "$(push "sig=good&item=1&token=$TOK4")" 404 "run 4: its callback is closed"
is "$(sqlite3 "$STATE/kria.db" "SELECT count(*), max(token = '') FROM websub")" "1|1" \
  "run 4: one row kept, without its token"
stop_kria
is "$?" 0 "run 4 stops cleanly"
is "$(q "s.requests.length")" "$((NREQ + 3))" "run 4: three requests in all"
# the feed due again at once: its discovery meets the row given up
sqlite3 "$STATE/kria.db" "UPDATE uris SET next_at = 0"
FEEDS=$(grep -c 'feed.xml' "$STATE/logs/crawl.log")
feed_read_again() { [ "$(grep -c 'feed.xml' "$STATE/logs/crawl.log")" -gt "$FEEDS" ]; }
start_kria 5
check "run 5: the feed is read again" wait_until 20 feed_read_again
stop_kria
is "$?" 0 "run 5 stops cleanly"
is "$(q "s.requests.length")" "$((NREQ + 3))" "run 5: the hub given up is not asked again"
is "$(sqlite3 "$STATE/kria.db" "SELECT count(*) FROM websub")" 1 "run 5: still one row"

# ---- the requests made count across restarts ---------------------------------------------------
# a retry an hour away: each run makes one request; the third start finds
# the two attempts used up and gives up without asking
fresh 6 "$T/state6" "[websub]
verify-timeout = 1h
verify-attempts = 2"
check "run 6: the first request" wait_until 20 qeq "s.requests.length" "$((NREQ + 1))"
stop_kria
is "$(sqlite3 "$STATE/kria.db" "SELECT expires FROM websub")" 1 "run 6: the row counts one request"
start_kria 6b
check "run 6b: a restart asks again" wait_until 20 qeq "s.requests.length" "$((NREQ + 2))"
stop_kria
start_kria 6c
check "run 6c: the next start gives up" wait_until 20 metric_ge kria_websub_given_up_total 1
stop_kria
is "$?" 0 "run 6c stops cleanly"
is "$(q "s.requests.length")" "$((NREQ + 2))" "run 6c: without a third request"
done_testing
