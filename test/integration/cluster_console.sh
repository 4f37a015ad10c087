#!/usr/bin/env bash
# The cluster seen from one member's console: a real redis-server on
# loopback, three kria members (n1, n2, n3) crawling a kts site of five
# hosts whose pages link across hosts, then
#  - GET /cluster.json of n1: every member with its heartbeat's figures,
#    the fetches each one's crawl.log counts, every link sent received,
#    every stream empty and acknowledged; the same figures as `kria status
#    --cluster --json` reads (one snapshot type, one JSON writer);
#  - GET /cluster of n2 in Debian's chromium through puppeteer-core: the
#    page's script shows the three members with those fetches, n2 marked
#    as this member, "3 / 3" seen (screenshot in the build tree's
#    test-artifacts/cluster.png for a person to look at);
#  - n3 stopped and its heartbeat gone (deleted: the 10 s TTL would do it
#    later): n1's JSON and page say n3 is expected but missing;
#  - a crawl without [cluster]: its page and JSON say it runs alone;
#  - Redis killed: n1's JSON says so and still holds the last reading.
# Skipped without chromium or node (make deps installs them).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.bash"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  bail "redis-server / redis-cli not installed (make deps)"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ] || ! command -v node >/dev/null; then
  skip "chromium or node not installed (make deps installs them)" "the cluster page"
  done_testing
fi
[ -f "$KRIA_TOP/test/integration/node_modules/puppeteer-core/package.json" ] ||
  bail "puppeteer-core is not installed (test/run.sh installs it with npm ci)"

HOSTS="h1.test www.h1.test h2.test h3.test h4.test"
links() { # PAGE: a link to PAGE on every host
  local h
  for h in $HOSTS; do printf 'body = <a href="http://%s:{port}/%s">x</a>\n' "$h" "$1"; done
}
cat >"$T/routes.ini" <<EOF
[route "/robots.txt"]
body = User-agent: *

[route "/"]
$(links a)

[route "/a"]
body = leaf
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '127.0.0.1 %s\n' "$HOSTS" >"$T/hosts"
for h in $HOSTS; do printf 'http://%s:%s/\n' "$h" "$KTS_PORT"; done >"$T/seeds.txt"
NPAGES=$(($(wc -w <<<"$HOSTS") * 3)) # robots.txt, /, /a

redis_start "$T/redis" || bail "redis-server did not start: $(tail -5 "$T/redis/redis.log")"
D=$T/c
mkdir -p "$D"
for n in 1 2 3; do member_conf "$n" "$T/seeds.txt" "$D" view >"$D/n$n.conf"; done
for n in 1 2 3; do start "$n" "$D"; done
fetches() { cat "$D"/n?/logs/crawl.log 2>/dev/null | wc -l; }
all_fetched() { [ "$(fetches)" -ge "$NPAGES" ]; }
check "three members fetched the $NPAGES pages" wait_until 60 all_fetched
for n in 1 2 3; do wait_until 10 test -s "$D/n$n/status.addr"; done

# ---- /cluster.json ----------------------------------------------------------------

js() { node -e "const v = JSON.parse(require('fs').readFileSync(0)); console.log($1)"; }
view() { curl -s -m 5 "http://$(status_url "$D" "$1")/cluster.json"; }
# settled: the heartbeats count every fetch, every link sent was taken
settled() {
  view 1 >"$T/v.json"
  [ "$(js 'v.seen + " " + v.totals.fetched + " " + (v.totals.sent === v.totals.acked) + " " + v.totals.stream' <"$T/v.json")" = "3 $NPAGES true 0" ]
}
check "n1's /cluster.json: 3 members seen, $NPAGES fetches, every link acknowledged, streams empty" \
  wait_until 20 settled
diag "$(cat "$T/v.json")"
is "$(js 'v.on + " " + v.node + " " + v.prefix + " " + v.redis' <"$T/v.json")" \
  "true n1 view 127.0.0.1:$REDIS_PORT" "... for n1, of cluster view on its Redis"
is "$(js 'v.members.map(m => m.node).join(",") + " missing:" + v.missing.join(",")' <"$T/v.json")" \
  "n1,n2,n3 missing:" "... every member of cluster.nodes, none missing"
for n in 1 2 3; do
  own=$(wc -l <"$D/n$n/logs/crawl.log")
  is "$(js "v.members[$((n - 1))].fetched" <"$T/v.json")" "$own" "... n$n: the $own fetches its crawl.log holds"
done
is "$(js 'v.totals.hosts' <"$T/v.json")" "$(wc -w <<<"$HOSTS")" \
  "... hosts per member adding up to the site's hosts (each kept by its owner only)"
check "... links crossed members ($(js v.totals.sent <"$T/v.json") sent, as many received)" \
  test "$(js 'v.totals.sent > 0 && v.totals.sent === v.totals.received' <"$T/v.json")" = true
is "$(js 'v.members.map(m => m.pending + "/" + m.outbox).join(" ")' <"$T/v.json")" "0/0 0/0 0/0" \
  "... nothing unacknowledged, every outbox empty"
check "... the heartbeats are recent (< 10 s)" \
  test "$(js 'v.members.every(m => m.seen_ms_ago >= 0 && m.seen_ms_ago < 10000)' <"$T/v.json")" = true
cli=$("$KRIA" status --cluster --json -c "$D/n3.conf")
is "$?" 0 "kria status --cluster --json answers"
is "$(js 'v.members.map(m => [m.node, m.fetched, m.hosts, m.sent, m.received].join(":")).join(" ")' <<<"$cli")" \
  "$(js 'v.members.map(m => [m.node, m.fetched, m.hosts, m.sent, m.received].join(":")).join(" ")' <"$T/v.json")" \
  "... with the figures the crawl's own reading shows"

# ---- the page in Chromium ------------------------------------------------------------

ART=$KRIA_BUILD/test-artifacts
mkdir -p "$ART"
rm -f "$ART/cluster.png"
# page LIMIT NAME URL WAIT...: cluster_console.mjs, its lines in $T/NAME.out;
# Chromium left running is stopped by its PID (and that is a failure)
page() {
  local limit=$1 name=$2 rc cpid
  shift 2
  timeout "$limit" node "$KRIA_TOP/test/integration/cluster_console.mjs" --chromium "$CHROMIUM" \
    --log "$T/$name.log" "$@" >"$T/$name.out" 2>"$T/$name.err"
  rc=$?
  cpid=$(cat "$T/$name.log.chromium-pid" 2>/dev/null)
  if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then
    kill -KILL -- "-$cpid" 2>/dev/null || kill -KILL "$cpid" 2>/dev/null
    not_ok "Chromium closed by cluster_console.mjs ($name)"
  fi
  [ "$rc" = 0 ] || diag "$(cat "$T/$name.err")"
  return "$rc"
}
ALL3="document.querySelectorAll('#members tr:not(.missing)').length === 3"
page 60 p1 --shot "$ART/cluster.png" "http://$(status_url "$D" 2)/cluster" "$ALL3"
is "$?" 0 "n2's /cluster loads in Chromium, no script error"
sed -n 1p "$T/p1.out" >"$T/p1.json"
is "$(js 'v.waited' <"$T/p1.json")" true "... its script shows three members seen"
is "$(js 'v.rows.map(r => r.id).join(",")' <"$T/p1.json")" "m-n1,m-n2,m-n3" "... one row each, in cluster.nodes' order"
is "$(js 'v.rows.map(r => r.k.fetched).join(" ")' <"$T/p1.json")" \
  "$(js 'v.members.map(m => m.fetched).join(" ")' <"$T/v.json")" "... with each member's fetches"
is "$(js 'v.rows.map(r => r.k.hosts).join(" ")' <"$T/p1.json")" \
  "$(js 'v.members.map(m => m.hosts).join(" ")' <"$T/v.json")" "... and hosts"
is "$(js 'v.rows.map(r => r.k.stream + "/" + r.k.pending + "/" + r.k.outbox).join(" ")' <"$T/p1.json")" \
  "0/0/0 0/0/0 0/0/0" "... streams, unacknowledged entries and outboxes (empty)"
like "$(js 'v.rows[1].cells[0] + "|" + v.rows[0].cells[1]' <"$T/p1.json")" '^n2 \(this\)\|[0-9< ]+(s|min).* ago$' \
  "... n2 marked as this member, heartbeat ages shown"
is "$(js 'v.tiles["members seen"] + " " + v.tiles["fetched"]' <"$T/p1.json")" "3 / 3 $NPAGES" \
  "... tiles: 3 / 3 members seen, $NPAGES fetches"
is "$(js 'v.note' <"$T/p1.json")" "every member of cluster.nodes is seen" "... nobody missing"
check "a screenshot for a person to look at" test -s "$ART/cluster.png"

# ---- a member missing; a crawl alone -------------------------------------------------

stop 3
is "$?" 0 "n3 stopped"
rcli DEL view:member:n3 >/dev/null # as its TTL would, 10 s later
n3_missing() { [ "$(view 1 | js 'v.missing.join(",") + " " + v.seen')" = "n3 2" ]; }
check "n1's /cluster.json: n3 expected but missing, 2 seen" wait_until 10 n3_missing

S=$T/solo
revisit_conf "$T/seeds.txt" "$S" >"$T/solo.conf"
printf '[dns]\nhosts-file = %s\n[status]\nlisten = 127.0.0.1:0\n' "$T/hosts" >>"$T/solo.conf"
"$KRIA" crawl -c "$T/solo.conf" >"$T/solo.out" 2>"$T/solo.err" &
SOLO=$!
_pids+=("$SOLO")
wait_until 10 test -s "$S/status.addr" || bail "the crawl alone has no status address: $(tail -3 "$T/solo.err")"
is "$(curl -s -m 5 "http://$(cat "$S/status.addr")/cluster.json")" '{"on":false}' \
  "a crawl without [cluster]: /cluster.json says so"

page 60 p2 "http://$(status_url "$D" 1)/cluster" "!!document.querySelector('#m-n3.missing')" \
  "http://$(cat "$S/status.addr")/cluster" "/No \[cluster\]/.test(document.getElementById('note').textContent)"
is "$?" 0 "n1's and the lone crawl's pages load, no script error"
sed -n 1p "$T/p2.out" >"$T/p2a.json"
sed -n 2p "$T/p2.out" >"$T/p2b.json"
is "$(js 'v.waited + " " + v.rows.map(r => r.id + ":" + (r.cls || "seen")).join(" ")' <"$T/p2a.json")" \
  "true m-n1:seen m-n2:seen m-n3:missing" "n1's page: n3's row marked missing"
is "$(js 'v.tiles["members seen"] + " | " + v.note' <"$T/p2a.json")" \
  "2 / 3 | expected but missing (no heartbeat in 10 s): n3" "... 2 / 3 seen, n3 named as missing"
is "$(js 'v.waited + " " + v.rows.length + " " + v.name' <"$T/p2b.json")" "true 0 this crawl runs alone" \
  "the lone crawl's page says it runs alone, no members"

# Redis gone: the last reading is still shown, said to be old
kill -KILL "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
redis_down() { [ "$(view 1 | js 'v.redis_up + " " + v.seen')" = "false 2" ]; }
check "Redis killed: n1's /cluster.json says Redis is down, with the last reading (2 seen)" \
  wait_until 10 redis_down

kill -TERM "$SOLO"
timeout 10 tail -s 0.05 --pid="$SOLO" -f /dev/null
wait "$SOLO"
is "$?" 0 "the crawl alone exits 0"
for n in 1 2; do
  stop "$n"
  is "$?" 0 "n$n exits 0"
done
done_testing
