#!/usr/bin/env bash
# A crawl shared by three kria instances through a real redis-server
# ([cluster]): seven hosts (names of one kts in kria's hosts file, one of
# them www. of another, so one site has two hosts), every page linking to
# pages of the other hosts only, so most links cross members.
#  - the [cluster] keys are checked: a start with a missing or unknown
#    node, a member twice, a bad address or name is refused;
#  - every page is fetched exactly once across the three, and every host
#    by exactly one instance (its owner; www.h1 with h1);
#  - links travelled: sent and received counters in /metrics, Redis up;
#  - kria status --cluster shows every member from its heartbeat in Redis;
#  - a duplicate delivery (the same link XADDed again) is acknowledged and
#    absorbed: nothing fetched twice;
#  - SIGKILL of one instance and of redis-server in the middle, then both
#    restarted: no link lost (every page fetched), no host fetched by a
#    second instance, the same owners as in the first crawl; the members
#    log Redis's loss and return;
#  - Redis away from the start: links wait in the outbox, kept across a
#    restart; at cluster.outbox-max dispatch is held (said in the log and
#    /metrics) until Redis took them;
#  - an entry delivered before a crash and never acknowledged is read
#    again at the start, fetched and acknowledged;
#  - without [cluster] kria crawls alone as before (one instance fetches
#    every page; no cluster figures).
# redis-server runs in its own directory under $T, on a loopback port,
# with an append-only file fsynced per write (what keeps a confirmed link
# across a crash of Redis), and is stopped by its PID.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.bash"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  bail "redis-server / redis-cli not installed (make deps)"

HOSTS="h1.test www.h1.test h2.test h3.test h4.test h5.test h6.test"
# every page links to the same page of the other hosts: each page is
# found on other hosts only (the seeds are the hosts' /)
links() { # PAGE: one body line per link (kts lines are short)
  local h
  for h in $HOSTS; do printf 'body = <a href="http://%s:{port}/%s">x</a>\n' "$h" "$1"; done
}
cat >"$T/routes.ini" <<EOF
[route "/robots.txt"]
body = User-agent: *

[route "/"]
$(links a)
delay-ms = 40

[route "/a"]
$(links b)
delay-ms = 40

[route "/b"]
$(links c)
delay-ms = 40

[route "/c"]
body = leaf
delay-ms = 40
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '127.0.0.1 %s\n' "$HOSTS" >"$T/hosts"
for h in $HOSTS; do printf 'http://%s:%s/\n' "$h" "$KTS_PORT"; done >"$T/seeds.txt"
# robots.txt, /, /a, /b, /c of each host
NPAGES=$(($(wc -w <<<"$HOSTS") * 5))

# ---- kria instances ---------------------------------------------------------

# conf N DIR PREFIX: member nN's configuration, state in DIR/nN.
TOKEN=cluster-test-token-0123456789
conf() {
  local n=$1 dir=$2 prefix=$3
  loopback_conf "$T/seeds.txt" "$dir/n$n"
  cat <<EOF
[dns]
hosts-file = $T/hosts
[status]
listen = 127.0.0.1:0
token = $TOKEN
[cluster]
redis = 127.0.0.1:$REDIS_PORT
node = n$n
nodes = n1, n2, n3
prefix = $prefix
EOF
}

# the URLs fetched by all members of DIR, one line per fetch
fetched() { cat "$1"/n?/logs/crawl.log 2>/dev/null | awk '{print $4}'; }
all_fetched() { [ "$(fetched "$1" | sort -u | wc -l)" -ge "$NPAGES" ]; }
fetched_at_least() { [ "$(fetched "$1" | wc -l)" -ge "$2" ]; }
# host -> member: "HOST nN" for every host that member fetched
owners() {
  local n
  for n in 1 2 3; do
    awk '{print $4}' "$1/n$n/logs/crawl.log" 2>/dev/null | sed -E 's|^https?://([^:/]+).*|\1|' |
      sort -u | sed "s/\$/ n$n/"
  done | sort
}

# ---- 0: the [cluster] keys are checked at the start ------------------------------

refused() { # WHAT ERE LINES...: kria crawl refuses the config with a message
  local what=$1 ere=$2; shift 2
  { loopback_conf "$T/seeds.txt" "$T/bad/state"; printf '[cluster]\n'; printf '%s\n' "$@"; } >"$T/bad.conf"
  timeout 20 "$KRIA" crawl -c "$T/bad.conf" >/dev/null 2>"$T/bad.err"
  local rc=$?
  check "$what: refused (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
  like "$(cat "$T/bad.err")" "$ere" "... saying why"
}
mkdir -p "$T/bad"
refused "no node" "cluster.node" "redis = 127.0.0.1:1" "nodes = a, b"
refused "node not a member" "cluster.node = c is not among cluster.nodes" \
  "redis = 127.0.0.1:1" "node = c" "nodes = a, b"
refused "a member twice" "twice" "redis = 127.0.0.1:1" "node = a" "nodes = a, b, a"
refused "a bad address" "cluster.redis" "redis = localhost" "node = a" "nodes = a"
refused "a bad name" "member name" "redis = 127.0.0.1:1" "node = a b" "nodes = a"

# ---- 1: three members, every page once ---------------------------------------

redis_start "$T/redis1" || bail "redis-server did not start: $(tail -5 "$T/redis1/redis.log")"
D=$T/c1
mkdir -p "$D"
for n in 1 2 3; do conf "$n" "$D" crawl1 >"$D/n$n.conf"; done
for n in 1 2 3; do start "$n" "$D"; done
if wait_until 60 all_fetched "$D"; then ok "three members fetched all $NPAGES pages"
else not_ok "three members fetched all $NPAGES pages (have $(fetched "$D" | sort -u | wc -l))"; fi
for n in 1 2 3; do wait_until 10 test -s "$D/n$n/status.addr"; done
is "$(fetched "$D" | sort | uniq -d | tr '\n' ' ')" "" "no page fetched twice across the members"
is "$(fetched "$D" | wc -l)" "$NPAGES" "... $NPAGES fetches in all"
owners "$D" >"$D/owners"
is "$(awk '{print $1}' "$D/owners" | uniq -d | tr '\n' ' ')" "" \
  "every host fetched by one member only ($(awk '{print $1"="$2}' "$D/owners" | tr '\n' ' '))"
is "$(awk '{print $1}' "$D/owners" | wc -l)" "$(wc -w <<<"$HOSTS")" "... every host fetched"
is "$(awk '$1 == "h1.test" {print $2}' "$D/owners")" \
  "$(awk '$1 == "www.h1.test" {print $2}' "$D/owners")" "www.h1.test has h1.test's owner (one site)"
check "the hosts are spread: at least two members fetched" test "$(awk '{print $2}' "$D/owners" | sort -u | wc -l)" -ge 2
for n in 1 2 3; do
  is "$(metric "$D" "$n" kria_cluster_redis_up)" 1 "n$n: /metrics says Redis is up"
done
# settled: every outbox empty, every stream entry acknowledged and deleted
# (a page's crawl.log line comes before its links are committed and sent)
settled() {
  local n
  for n in 1 2 3; do
    [ "$(metric "$D" "$n" kria_cluster_outbox_links)" = 0 ] || return 1
    [ "$(rcli XLEN "${PREFIX}:links:n$n")" = 0 ] || return 1
  done
}
PREFIX=crawl1
check "every outbox empty, every stream entry acknowledged and deleted" wait_until 10 settled
sum() { # DIR METRIC
  local n t=0
  for n in 1 2 3; do t=$((t + $(metric "$1" "$n" "$2"))); done
  echo "$t"
}
sent=$(sum "$D" kria_cluster_links_sent_total)
recv=$(sum "$D" kria_cluster_links_received_total)
check "links crossed members through Redis ($sent sent)" test "$sent" -gt 0
is "$recv" "$sent" "... each received once"
is "$(sum "$D" kria_cluster_links_acked_total)" "$recv" "... and acknowledged"

# kria status --cluster: the members' heartbeats and their streams
cs=$("$KRIA" status --cluster -c "$D/n1.conf")
is "$?" 0 "kria status --cluster answers"
like "$cs" "cluster crawl1 on Redis 127.0.0.1:$REDIS_PORT: 3 members, 3 seen" "... every member seen"
like "$cs" $'\nn2 +[0-9.]+ s ago' "... with when each was last seen"
beats_fetched() { # the fetches the heartbeats report, summed
  "$KRIA" status --cluster --json -c "$D/n1.conf" |
    node -e 'let s = 0; for (const m of JSON.parse(require("fs").readFileSync(0)).members) s += m.fetched; console.log(s)'
}
beats_done() { [ "$(beats_fetched)" = "$NPAGES" ]; }
check "... their heartbeats add up to the $NPAGES fetches (--json)" wait_until 10 beats_done

# a duplicate delivery: the member that fetched h2.test's / gets it again
own=$(awk '$1 == "h2.test" {print $2}' "$D/owners")
n=${own#n}
dup0=$(metric "$D" "$n" kria_cluster_links_duplicate_total)
rcli XADD "crawl1:links:$own" '*' u "http://h2.test:$KTS_PORT/" h L v 0 d 0 s test >/dev/null
dup_counted() { [ "$(metric "$D" "$n" kria_cluster_links_duplicate_total)" -gt "$dup0" ]; }
check "a duplicate delivery is counted as known" wait_until 10 dup_counted
check "... acknowledged and deleted" wait_until 10 settled
# Every member now has an empty frontier and waits for links from the
# others: each way of asking the crawl to stop ends it all the same.
code=$(curl -s -o "$D/stop.json" -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $TOKEN" "http://$(status_url "$D" 1)/stop")
is "$code" 202 "n1, waiting for links: POST /stop is accepted"
p=${KPID[1]}
timeout 10 tail -s 0.05 --pid="$p" -f /dev/null
check "... and n1 ends by itself" test "$?" = 0
wait "$p"
is "$?" 0 "... with exit 0"
like "$(cat "$D/n1.err")" "stop requested through the status server" "... saying who asked"
like "$(cat "$D/n1.err")" "frontier: [0-9]+ URIs, 0 queued" "... its summary written"
stop 2 INT
is "$?" 0 "n2 stops cleanly on SIGINT"
stop 3
is "$?" 0 "n3 stops cleanly on SIGTERM"
is "$(fetched "$D" | wc -l)" "$NPAGES" "the duplicate was not fetched again"
like "$(cat "$D/n1.err")" "cluster: Redis 127.0.0.1:$REDIS_PORT connected" "the members log the connection"
like "$(cat "$D/n1.err")" "cluster: [0-9]+ links sent" "the summary has a cluster line"

# ---- 2: SIGKILL of a member and of redis-server in the middle --------------------

D=$T/c2
mkdir -p "$D"
for n in 1 2 3; do conf "$n" "$D" crawl2 >"$D/n$n.conf"; done
for n in 1 2 3; do start "$n" "$D"; done
# the member that owns h2.test (as in the first crawl) is killed
victim=${own#n}
check "the crawl is under way (some fetches)" wait_until 30 fetched_at_least "$D" 6
survivor=$((victim % 3 + 1))
# a member that never reached Redis logs it "unreachable", not "lost"
connected() { grep -q "cluster: Redis 127.0.0.1:$REDIS_PORT connected" "$D/n$survivor.err"; }
check "n$survivor is connected to Redis before the kill" wait_until 10 connected
kill -KILL "${KPID[$victim]}" "$REDIS_PID"
wait "${KPID[$victim]}" "$REDIS_PID" 2>/dev/null
partial=$(fetched "$D" | sort -u | wc -l)
diag "killed n$victim and redis-server after $partial of $NPAGES pages"
lost() { grep -q "cluster: Redis 127.0.0.1:$REDIS_PORT lost" "$D/n$survivor.err"; }
check "n$survivor logs the loss of Redis" wait_until 10 lost
redis_start "$T/redis1" || bail "redis-server did not restart"
back() { grep -q "cluster: Redis 127.0.0.1:$REDIS_PORT back" "$D/n$survivor.err"; }
check "n$survivor logs its return" wait_until 20 back
start "$victim" "$D"
if wait_until 60 all_fetched "$D"; then ok "no link lost: all $NPAGES pages fetched after the restarts"
else
  not_ok "no link lost: all $NPAGES pages fetched after the restarts"
  diag "missing: $(comm -23 <(fetched "$T/c1" | sort -u) <(fetched "$D" | sort -u) | tr '\n' ' ')"
fi
owners "$D" >"$D/owners"
is "$(awk '{print $1}' "$D/owners" | uniq -d | tr '\n' ' ')" "" "no host fetched by a second member"
is "$(cat "$D/owners")" "$(cat "$T/c1/owners")" "the same owners as the first crawl"
for n in 1 2 3; do stop "$n" >/dev/null; done

# ---- 3: Redis away from the start, the outbox at its bound ------------------------

# n1 alone, outbox-max = 2: the seeds of the others' hosts wait in the
# outbox, which is full, so n1 fetches nothing; it stops and starts again
# with them still there; once Redis comes, they are sent, and n1 fetches
# its own hosts.
kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
D=$T/c3
mkdir -p "$D"
{ conf 1 "$D" crawl3; printf 'outbox-max = 2\n'; } >"$D/n1.conf"
start 1 "$D"
nforeign=$(awk '$2 != "n1"' "$T/c1/owners" | wc -l)
nown=$(awk '$2 == "n1"' "$T/c1/owners" | wc -l)
full() { grep -qE "cluster: the outbox holds [0-9]+ links \(cluster.outbox-max\)" "$D/n1.err"; }
check "Redis unreachable: the seeds of other members' hosts fill the outbox" wait_until 10 full
like "$(cat "$D/n1.err")" "cluster: Redis 127.0.0.1:$REDIS_PORT unreachable" "... after a log line"
wait_until 10 test -s "$D/n1/status.addr"
is "$(metric "$D" 1 kria_cluster_held)" 1 "... dispatch is held (/metrics)"
is "$(metric "$D" 1 kria_cluster_redis_up)" 0 "... Redis is down (/metrics)"
is "$(metric "$D" 1 kria_cluster_outbox_full_total)" 1 "... counted once"
is "$(metric "$D" 1 kria_cluster_outbox_links)" "$nforeign" "... all $nforeign of them wait (/metrics)"
"$KRIA" status --cluster -c "$D/n1.conf" >"$D/cs.out" 2>"$D/cs.err"
is "$?" 2 "kria status --cluster without Redis: exit 2"
like "$(cat "$D/cs.err")" "cannot reach Redis 127.0.0.1:$REDIS_PORT" "... saying so"
stop 1
is "$?" 0 "n1 stops while Redis is away"
check "... having fetched nothing" test ! -s "$D/n1/logs/crawl.log"
is "$(sqlite3 "$D/n1/kria.db" 'SELECT count(*) FROM outbox')" "$nforeign" "the outbox is kept in the state database"
redis_start "$T/redis3" || bail "redis-server did not start"
start 1 "$D"
again() { grep -qE "cluster: the outbox is down to [0-9]+ links: fetching again" "$D/n1.err"; }
check "with Redis there, the outbox is sent and n1 fetches again" wait_until 20 again
own_done() { [ "$(fetched "$D" | sort -u | wc -l)" -ge $((nown * 5)) ]; }
check "... its own $nown hosts" wait_until 30 own_done
xlens() { echo $(($(rcli XLEN crawl3:links:n2) + $(rcli XLEN crawl3:links:n3))); }
check "the other members' streams hold the links sent ($(xlens) entries, a link may come twice)" \
  test "$(xlens)" -ge "$nforeign"
is "$(sqlite3 "$D/n1/kria.db" 'SELECT count(*) FROM outbox')" 0 "... the outbox rows are gone"
stop 1 >/dev/null

# ---- 4: entries delivered before a crash, never acknowledged --------------------

# As if n1 had read an entry and died before committing it: the entry is
# delivered to consumer n1 by hand (XREADGROUP), then n1 starts; it reads
# its pending entries first, fetches the link (nothing else links to it)
# and acknowledges it.
D=$T/c4
mkdir -p "$D"
conf 1 "$D" crawl4 >"$D/n1.conf"
mine=$(awk '$2 == "n1" {print $1; exit}' "$T/c1/owners")
purl="http://$mine:$KTS_PORT/c?pending=1"
rcli XGROUP CREATE crawl4:links:n1 crawl4 0 MKSTREAM >/dev/null
rcli XADD crawl4:links:n1 '*' u "$purl" h L v 0 d 0 s test >/dev/null
rcli XREADGROUP GROUP crawl4 n1 COUNT 10 STREAMS crawl4:links:n1 '>' >/dev/null
is "$(rcli XPENDING crawl4:links:n1 crawl4 | head -1)" 1 "an entry delivered to n1, not acknowledged"
start 1 "$D"
pending_fetched() { fetched "$D" | grep -qxF "$purl"; }
check "n1 reads it again at its start and fetches $purl" wait_until 20 pending_fetched
acked() { [ "$(rcli XPENDING crawl4:links:n1 crawl4 | head -1)" = 0 ]; }
check "... and acknowledges it" wait_until 10 acked
stop 1
is "$?" 0 "n1 stops cleanly"
kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null

# ---- 5: without [cluster] -------------------------------------------------------

D=$T/alone
mkdir -p "$D"
{ loopback_conf "$T/seeds.txt" "$D/n1"; printf '[dns]\nhosts-file = %s\n' "$T/hosts"; } >"$D/n1.conf"
timeout 60 "$KRIA" crawl -c "$D/n1.conf" >"$D/n1.out" 2>"$D/n1.err"
is "$?" 0 "without [cluster]: a snapshot crawl ends by itself (exit 0)"
is "$(fetched "$D" | wc -l)" "$NPAGES" "... one instance fetched all $NPAGES pages"
unlike "$(cat "$D/n1.err")" "cluster" "... and says nothing of a cluster"

done_testing
