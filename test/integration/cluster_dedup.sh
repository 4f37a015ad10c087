#!/usr/bin/env bash
# Shared dedup ([cluster] shared-dedup = true) between two kria members
# through a real redis-server on loopback. Six hosts of one kts (a hosts
# file) each serve their own / linking to /same, and /same is one payload
# on every host: h1.test serves it at once, the others after 400 ms, so
# h1's capture is the first anywhere and is published before any other.
#  - every page fetched once across the members, every host by one;
#  - one response record holds /same in all the members' WARC files;
#    every other /same is an identical-payload-digest revisit of it, and
#    the member that does not own h1.test wrote revisits whose
#    WARC-Refers-To, -Target-URI and -Date name that record in the other
#    member's WARC file (read with warcio.js); met again later, the
#    payload is known from the answer remembered, Redis not asked again;
#    a second pass finds those /same unchanged: revisits of X's record
#    again, not archived in full (Y's originals do not hold them);
#  - Redis holds the digest's key, first writer's value, with a TTL
#    (cluster.shared-dedup-ttl); the counters say asked and known;
#  - without shared-dedup (the default) a member asks Redis nothing and
#    writes /same in full once itself;
#  - Redis not answering (a proxy holding its requests): each lookup is given up after
#    cluster.shared-dedup-wait, the crawl goes on, the late replies are
#    dropped once Redis answers again;
#  - Redis down: a member crawls on with its local index alone (its own
#    /same revisits refer to its own record), counted as local only.
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  bail "redis-server / redis-cli not installed (make deps)"
if ! command -v node >/dev/null || [ ! -f "$HERE/node_modules/warcio/package.json" ]; then
  skip "warcio.js not installed (npm ci in test/integration)" "shared dedup"
  done_testing
fi

HOSTS="h1.test h2.test h3.test h4.test h5.test h6.test"
SAME='<!DOCTYPE html><html><body><p id="marker">one payload on every host</p></body></html>'
{
  printf '[route "/robots.txt"]\nbody = User-agent: *\n\n'
  for h in $HOSTS; do
    printf '[route "/"]\nhost = %s\nbody = <a href="/same">index of %s</a>\n\n' "$h" "$h"
    printf '[route "/same"]\nhost = %s\nbody = %s\n' "$h" "$SAME"
    [ "$h" = h1.test ] || printf 'delay-ms = 400\n'
    printf '\n'
  done
} >"$T/routes.ini"
kts_start "$T/routes.ini" || bail "kts did not start"
printf '127.0.0.1 %s\n' "$HOSTS" >"$T/hosts"
for h in $HOSTS; do printf 'http://%s:%s/\n' "$h" "$KTS_PORT"; done >"$T/seeds.txt"
NPAGES=$(($(wc -w <<<"$HOSTS") * 3)) # robots.txt, /, /same
DIGEST=sha1:$(printf '%s' "$SAME" | sha1_b32 -)

# ---- redis-server, members -------------------------------------------------------

. "$(dirname "$0")/cluster_lib.bash" # redis_start, rcli, start, stop, metric

conf() { # N DIR PREFIX SHARED: member nN's configuration, state in DIR/nN
  member_conf "$1" "$T/seeds.txt" "$2" "$3" "n1, n2"
  echo "shared-dedup = $4"
}
fetched() { cat "$1"/n?/logs/crawl.log 2>/dev/null | awk '{print $4}'; }
all_fetched() { [ "$(fetched "$1" | sort -u | wc -l)" -ge "$2" ]; }
refs() { # DIR: warcrefs.mjs over every member's WARC files
  (cd "$HERE" && node warcrefs.mjs "$1"/n?/warcs/*.warc.gz) 2>"$1/refs.err"
}
# field K of the record lines of FILE whose column C is V
col() { awk -F'\t' -v c="$2" -v v="$3" -v k="$4" '$c == v {print $k}' "$1"; }

# ---- 1: two members, shared dedup -----------------------------------------------

redis_start "$T/redis" || bail "redis-server did not start: $(tail -5 "$T/redis/redis.log")"
D=$T/c1
mkdir -p "$D"
for n in 1 2; do conf "$n" "$D" dd1 true >"$D/n$n.conf"; done
for n in 1 2; do start "$n" "$D"; done
if wait_until 60 all_fetched "$D" "$NPAGES"; then ok "two members fetched all $NPAGES pages"
else not_ok "two members fetched all $NPAGES pages (have $(fetched "$D" | sort -u | wc -l))"; fi
is "$(fetched "$D" | sort | uniq -d | tr '\n' ' ')" "" "... none twice"
for n in 1 2; do wait_until 10 test -s "$D/n$n/status.addr"; done
o1=$(awk '{print $4}' "$D/n1/logs/crawl.log" | grep -c '^http://h1\.test:')
if [ "$o1" -gt 0 ]; then X=n1 Y=n2; else X=n2 Y=n1; fi
xn=${X#n} yn=${Y#n}
ny=$(awk '{print $4}' "$D/$Y/logs/crawl.log" | grep -c '/same$')
check "the hosts are spread: $Y (not h1.test's owner $X) fetched /same of $ny hosts" test "$ny" -ge 1
declare -A HITS ASKED LOCAL
for n in 1 2; do
  HITS[$n]=$(metric "$D" "$n" kria_cluster_dedup_hits_total)
  ASKED[$n]=$(metric "$D" "$n" kria_cluster_dedup_lookups_total)
  LOCAL[$n]=$(metric "$D" "$n" kria_cluster_dedup_local_only_total)
done
# the payload met again on one of Y's hosts (a link by hand into Y's
# stream): Y's own index does not hold it (its /same are revisits of X's
# record), the answer Redis gave before does: no lookup
UA="$(awk '{print $4}' "$D/$Y/logs/crawl.log" | grep '/same$' | head -1)?again=1"
rcli XADD "dd1:links:$Y" '*' u "$UA" h L v 0 d 0 s test >/dev/null
again_fetched() { fetched "$D" | grep -qxF "$UA"; }
check "$Y fetches $UA" wait_until 20 again_fetched
is "$(metric "$D" "$yn" kria_cluster_dedup_hits_total)" "$((HITS[$yn] + 1))" \
  "... known to be $X's payload"
is "$(metric "$D" "$yn" kria_cluster_dedup_lookups_total)" "${ASKED[$yn]}" \
  "... from the answer remembered, without asking Redis again"
for n in 1 2; do
  stop "$n"
  is "$?" 0 "n$n stops cleanly"
done

refs "$D" >"$D/refs"
is "$?" 0 "warcio.js reads every member's WARC files"
U1="http://h1.test:$KTS_PORT/same"
awk -F'\t' -v u="/same" '$4 ~ u"$"' "$D/refs" >"$D/same"
is "$(col "$D/same" 2 response 4 | tr '\n' ' ')" "$U1 " "one response record holds /same: h1.test's"
is "$(col "$D/same" 2 response 1)" "$X" "... in the WARC files of $X, h1.test's owner"
ORID=$(col "$D/same" 2 response 3)
ODATE=$(col "$D/same" 2 response 5)
is "$(col "$D/same" 2 response 6)" "$DIGEST" "... with the payload's digest"
is "$(col "$D/same" 2 revisit 4 | wc -l)" 5 "the five other /same captures are revisits"
is "$(col "$D/same" 2 revisit 7 | sort -u)" \
  "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest" "... identical-payload-digest"
is "$(col "$D/same" 2 revisit 6 | sort -u)" "$DIGEST" "... of the same payload digest"
awk -F'\t' -v y="$Y" '$1 == y && $2 == "revisit"' "$D/same" >"$D/far"
is "$(wc -l <"$D/far")" "$ny" "$Y wrote a revisit for each of its $ny /same"
is "$(cut -f8 "$D/far" | sort -u)" "$ORID" "... each WARC-Refers-To the record id of $X's response"
is "$(cut -f9 "$D/far" | sort -u)" "$U1" "... WARC-Refers-To-Target-URI its URI"
is "$(cut -f10 "$D/far" | sort -u)" "$ODATE" "... WARC-Refers-To-Date its WARC-Date"
is "$(awk -F'\t' -v x="$X" '$1 == x && $2 == "revisit"' "$D/same" | cut -f8 | grep -vxF "$ORID")" "" \
  "$X's own /same revisits refer to it too (its local index)"
is "$(awk -F'\t' -v u="$UA" '$4 == u {print $2, $8}' "$D/refs")" "revisit $ORID" \
  "... its revisit refers to $X's record too"
like "$(grep -h '/same ' "$D/$Y/logs/crawl.log")" "duplicate:digest" "$Y's crawl.log says duplicate:digest"
is "${HITS[$yn]}" "$ny" "$Y knew each of its $ny /same as another member's (/metrics)"
check "... having asked Redis (${ASKED[$yn]} lookups: its / pages, /same once or more)" \
  test "${ASKED[$yn]}" -gt "$ny" -a "${ASKED[$yn]}" -le $((2 * ny))
is "${LOCAL[1]}+${LOCAL[2]}" "0+0" "no visit fell back on the local index alone"
is "$(rcli --raw GET "dd1:dd:$DIGEST" | cut -d' ' -f1,3,4,5)" "1 $ORID $X $U1" \
  "Redis holds the payload's original: first writer's record, member and URI"
ttl=$(rcli PTTL "dd1:dd:$DIGEST")
check "... with a TTL, cluster.shared-dedup-ttl (30 d: ${ttl} ms)" \
  test "$ttl" -gt $((29 * 86400000)) -a "$ttl" -le $((30 * 86400000))

# a second pass of Y alone (--revisit-now): its /same are unchanged, and
# their last records were revisits of X's, which Y's originals do not
# hold: Redis is asked again (a new process remembers nothing) and the
# new revisit records refer to X's record too, none archived in full.
# Replay tells captures apart by their second (14-digit timestamps), so
# the pass starts once the clock has left the second of Y's last fetch
# (?again=1 may have come just before the stop).
last_s=$(date -d "$(tail -n 1 "$D/$Y/logs/crawl.log" | awk '{print $1}')" +%s)
later_second() { [ "$(date +%s)" -gt "$last_s" ]; }
check "the clock left the second of $Y's last fetch" wait_until 3 later_second
"$KRIA" crawl -c "$D/$Y.conf" --revisit-now >>"$D/$Y.out" 2>>"$D/$Y.err" &
KPID[$yn]=$!
_pids+=("${KPID[$yn]}")
second_pass() { [ "$(awk '{print $4}' "$D/$Y/logs/crawl.log" | grep -c '/same')" -ge $((2 * (ny + 1))) ]; }
check "$Y's second pass fetches its /same again" wait_until 30 second_pass
stop "$yn"
is "$?" 0 "... and stops cleanly"
refs "$D" >"$D/refs2"
awk -F'\t' -v y="$Y" '$1 == y && $4 ~ /\/same/' "$D/refs2" >"$D/far2"
is "$(cut -f2 "$D/far2" | sort | uniq -c | awk '{print $1, $2}')" "$((2 * (ny + 1))) revisit" \
  "... all $((2 * (ny + 1))) of $Y's /same captures are revisits"
is "$(cut -f8 "$D/far2" | sort -u)" "$ORID" "... of $X's record"

# ---- 2: without shared-dedup ---------------------------------------------------------

# one member alone (its own hosts; the others' wait in Redis): Redis is
# asked nothing for the payload, and the member archives /same in full
# once itself, however many hosts serve it
D=$T/c2
mkdir -p "$D"
conf 1 "$D" dd2 false >"$D/n1.conf"
start 1 "$D"
own1=$(awk '{print $4}' "$T/c1/n1/logs/crawl.log" | grep -v 'again=' | sort -u | wc -l)
if wait_until 60 all_fetched "$D" "$own1"; then ok "shared-dedup off: n1 fetched its $own1 pages"
else not_ok "shared-dedup off: n1 fetched its $own1 pages"; fi
wait_until 10 test -s "$D/n1/status.addr"
is "$(metric "$D" 1 kria_cluster_dedup_lookups_total)" 0 "... asked Redis nothing"
is "$(rcli --scan --pattern 'dd2:dd:*' | wc -l)" 0 "... published nothing"
stop 1 >/dev/null
refs "$D" >"$D/refs"
n1same=$(awk '{print $4}' "$D/n1/logs/crawl.log" | grep -c '/same$')
if [ "$n1same" -gt 0 ]; then
  is "$(awk -F'\t' '$2 == "response" && $4 ~ /\/same$/' "$D/refs" | wc -l)" 1 \
    "... its /same archived in full once, its own index deduplicating the rest"
fi

# ---- 3: Redis not answering -------------------------------------------------------------

# Y reaches Redis through a proxy that holds what it sends (holdproxy.mjs):
# the connection is up, nothing is answered. Every lookup waits
# shared-dedup-wait, then its visit goes on with the local index. Once
# the proxy lets go, the late replies find their visits gone on: they
# are read (a heartbeat sent after them on the same connection reaches
# Redis) and dropped.
D=$T/c3
mkdir -p "$D"
(cd "$HERE" && exec node holdproxy.mjs "$D/proxy.port" "$REDIS_PORT") 2>"$D/proxy.err" &
PROXY_PID=$!
_pids+=("$PROXY_PID")
wait_until 10 test -s "$D/proxy.port" || bail "holdproxy.mjs did not start: $(cat "$D/proxy.err")"
{ REDIS_PORT=$(cat "$D/proxy.port") conf "$yn" "$D" dd3 true; printf 'shared-dedup-wait = 50ms\n'; } >"$D/$Y.conf"
start "$yn" "$D"
if wait_until 60 all_fetched "$D" "$((ny * 3))"; then ok "Redis silent: $Y crawls its $((ny * 3)) pages all the same"
else not_ok "Redis silent: $Y crawls its $((ny * 3)) pages all the same"; fi
wait_until 10 test -s "$D/$Y/status.addr"
asked=$(metric "$D" "$yn" kria_cluster_dedup_lookups_total)
check "... each of its $asked lookups given up after the wait, counted as local only" \
  test "$asked" -ge "$ny" -a "$(metric "$D" "$yn" kria_cluster_dedup_local_only_total)" = "$asked"
is "$(metric "$D" "$yn" kria_cluster_dedup_hits_total)" 0 "... none known"
is "$(rcli --scan --pattern 'dd3:*' | wc -l)" 0 "... nothing reached Redis"
kill -USR2 "$PROXY_PID"
beat_after() { [ "$(rcli HGET "dd3:member:$Y" fetched)" = "$((ny * 3))" ]; }
check "the proxy lets go: the late replies are read (a later heartbeat came)" wait_until 10 beat_after
is "$(metric "$D" "$yn" kria_cluster_dedup_hits_total)" 0 "... and dropped"
stop "$yn"
is "$?" 0 "$Y stops cleanly"
kill -TERM "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null

# ---- 4: Redis down ----------------------------------------------------------------------

kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
D=$T/c4
mkdir -p "$D"
conf "${Y#n}" "$D" dd4 true >"$D/$Y.conf"
start "${Y#n}" "$D"
if wait_until 60 all_fetched "$D" "$((ny * 3))"; then ok "Redis down: $Y crawls its $((ny * 3)) pages all the same"
else not_ok "Redis down: $Y crawls its $((ny * 3)) pages all the same"; fi
like "$(cat "$D/$Y.err")" "Redis 127.0.0.1:$REDIS_PORT unreachable" "... having said Redis is away"
wait_until 10 test -s "$D/$Y/status.addr"
lo=$(metric "$D" "${Y#n}" kria_cluster_dedup_local_only_total)
check "... its /same checked against the local index alone, counted ($lo)" test "$lo" -ge 1
is "$(metric "$D" "${Y#n}" kria_cluster_dedup_lookups_total)" 0 "... no lookup sent"
stop "${Y#n}" >/dev/null
refs "$D" >"$D/refs"
awk -F'\t' '$4 ~ /\/same$/' "$D/refs" >"$D/same"
is "$(col "$D/same" 2 response 4 | wc -l)" 1 "... one /same archived in full"
is "$(col "$D/same" 2 revisit 8 | sort -u)" "$(if [ "$ny" -gt 1 ]; then col "$D/same" 2 response 3; fi)" \
  "... the others revisits of it (the local index)"

# ---- 5: replay across members ------------------------------------------------------

# The two members' WARC files of the first crawl as one collection:
# ReplayWeb.page (headless Chromium, replay.mjs) shows each /same capture
# (Y's second pass included) with the payload of h1.test's response, a
# revisit found by the URI and date it refers to, in the other member's
# file. Last: without Chromium
# the test ends here with a skip.
. "$(dirname "$0")/replay_lib.bash"
replay_prereqs
mapfile -t warcs < <(ls "$T"/c1/n?/warcs/*.warc.gz | sort)
# members on one machine may open a file in the same millisecond: the
# member's name in the file name keeps the collection's names apart
is "$(for w in "${warcs[@]}"; do n=${w%/warcs/*}; n=${n##*/}; [[ $w == *-"$n".warc.gz ]] || echo "$w"; done)" "" \
  "each member's WARC files end in its name (HOST-NODE)"
"$KRIA" cdx "${warcs[@]}" >"$T/all.cdxj" 2>"$T/cdx.err"
is "$?" 0 "kria cdx indexes both members' ${#warcs[@]} WARC files"
"$KRIA" wacz "$T/c1.wacz" "${warcs[@]}" >"$T/wacz.out" 2>"$T/wacz.err"
rc=$?
is "$rc" 0 "kria wacz packs them as one collection"
[ "$rc" = 0 ] || diag "$(tail -5 "$T/wacz.err")"
replay_run 120 replay --wacz "$T/c1.wacz" --cdx "$T/all.cdxj" --skip '(robots\.txt|:[0-9]+/)$' \
  "${warcs[@]}"
rc=$?
is "$rc" 0 "replay.mjs ran to the end"
[ "$rc" = 0 ] || diag "$(tail -20 "$T/replay.err")"
replay_results "$T/replay.out"
is "${REPLAY_KINDS[original]:-0}" 1 "h1.test's /same replays from its response"
is "${REPLAY_KINDS[identical-cross-url]:-0}" $((6 + ny + 1)) \
  "... and the $((6 + ny + 1)) revisits of it, $((2 * ny + 2)) of them from $Y's files"

done_testing
