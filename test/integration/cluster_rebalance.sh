#!/usr/bin/env bash
# Membership changes of a cluster (`kria cluster rebalance`) with a real
# redis-server on loopback and kts serving eight hosts (names in kria's
# hosts file), each page linking within its host, crawled with revisits
# (a 1 s wait) by three members:
#  - a start naming a member the cluster does not have is refused;
#  - running members stop by themselves once a move begins (the epoch in
#    Redis passed theirs); the rebalance waits for their state
#    directories;
#  - adding n4: the hosts it wins leave their old owner's database and
#    arrive in n4's with their rows unchanged (visits, next visit times,
#    first seen, history) and their learned host state; every other host
#    stays where it was; no URI lost or doubled; all four agree on epoch 1;
#  - a copy of a state directory from before the move is refused at the
#    start (the cluster moved on without it); a second rebalance with the
#    same list is a no-op;
#  - four members crawl on (kria status --cluster lists the four): the moved hosts are revisited by n4 (visits go
#    on from their moved count, first seen kept: not refetched from
#    scratch), and in the crawl logs no host is fetched by two members
#    between two moves (crawls run only there);
#  - removing n2 (epoch 2, the members stopped first), with n2's rebalance
#    and redis-server SIGKILLed once n2 sent its hosts: the move survives
#    in Redis's append-only file, n2's crawl refuses to start half-moved,
#    every step runs again; n2's hosts go to the others, it keeps none,
#    and it is refused at its start;
#    the three crawl on, n2's former hosts continuing from their state;
#  - n4 gone for good is given up (--forget) as n5 joins with an empty
#    state directory: the move completes without n4, whose hosts start
#    afresh at their new owners; n4's own rebalance and crawl are refused.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  bail "redis-server / redis-cli not installed (make deps)"
command -v sqlite3 >/dev/null || bail "sqlite3 not installed"

HOSTS="h1.test h2.test h3.test h4.test h5.test h6.test h7.test h8.test"
{ no_robots_route; cat <<'EOF'; } >"$T/routes.ini"
[route "/"]
body = <a href="/a">a</a> <a href="/b">b</a>

[route "/a"]
body = <a href="/c">c</a>

[route "/b"]
body = b

[route "/c"]
body = c
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '127.0.0.1 %s\n' "$HOSTS" >"$T/hosts"
for h in $HOSTS; do printf 'http://%s:%s/\n' "$h" "$KTS_PORT"; done >"$T/seeds.txt"
NURIS=$(($(wc -w <<<"$HOSTS") * 5)) # robots.txt, /, /a, /b, /c

. "$(dirname "$0")/cluster_lib.bash" # redis_start, rcli
redis_start "$T/redis" || bail "redis-server did not start"

D=$T/c
mkdir -p "$D"
conf() { # N: member nN, first members n1, n2, n3
  revisit_conf "$T/seeds.txt" "$D/n$1"
  wait_conf all '' 1s default-wait=1s max-wait=2s
  cat <<EOF
[dns]
hosts-file = $T/hosts
[cluster]
redis = 127.0.0.1:$REDIS_PORT
node = n$1
nodes = n1, n2, n3
prefix = rb
EOF
}
for n in 1 2 3 4; do conf "$n" >"$D/n$n.conf"; done
declare -A KPID
start() { "$KRIA" crawl -c "$D/n$1.conf" >>"$D/n$1.out" 2>>"$D/n$1.err" & KPID[$1]=$!; _pids+=("${KPID[$1]}"); }
ended() { ! kill -0 "${KPID[$1]}" 2>/dev/null; }
stop() { kill -TERM "${KPID[$1]}" 2>/dev/null; wait_until 10 ended "$1" || kill -KILL "${KPID[$1]}"; wait "${KPID[$1]}"; }
db() { sqlite3 -cmd ".timeout 5000" "$D/n$1/kria.db" "$2"; }
# every URI row of members "$@": "URL visits next_at first_seen hex(history) nN"
rows() {
  local n
  for n in "$@"; do
    [ -f "$D/n$n/kria.db" ] &&
      db "$n" "SELECT url, visits, next_at, first_seen, hex(history), 'n$n' FROM uris" | tr '|' ' '
  done | sort
}
hostsof() { db "$1" "SELECT name FROM hosts ORDER BY name" | sed 's/:.*//' | tr '\n' ' '; }
NPAGES=$(($(wc -w <<<"$HOSTS") * 4))
visited_twice() { # every page (robots.txt aside) visited at least twice
  [ "$(rows "$@" | awk '$1 !~ /robots/ && $2 >= 2' | wc -l)" -ge "$NPAGES" ]
}
fetched() { cat "$D"/n?/logs/crawl.log 2>/dev/null | awk '{print $4}'; }
# crawl.log's time of now (its lines sort by it as text)
now_log() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
# the hosts two members fetched since SINCE (a crawl.log time): crawls
# run only between the moves, so within one such period a host must
# have one member only, and the periods follow one another
two_members() {
  local n
  for n in 1 2 3 4 5; do
    awk -v m="n$n" -v t="$1" '$1 >= t { h = $4; sub(/^https?:\/\//, "", h); sub(/[:\/].*/, "", h); print h, m }' \
      "$D/n$n/logs/crawl.log" 2>/dev/null
  done | sort -u | awk '{ c[$1]++ } END { for (h in c) if (c[h] > 1) print h }'
}

# ---- 1: three members crawl with revisits; a start outside the list is refused ----

since=$(now_log)
for n in 1 2 3; do start "$n"; done
check "three members visit each of the $NPAGES pages twice" wait_until 60 visited_twice 1 2 3
is "$(two_members "$since" | tr '\n' ' ')" "" "no host fetched by two members"
"$KRIA" crawl -c "$D/n4.conf" >"$D/n4.refused" 2>&1
check "n4, not yet a member, is refused at its start" test "$?" -ne 0
like "$(cat "$D/n4.refused")" "cluster.node = n4 is not among cluster.nodes" "... saying why"

# ---- 2: adding n4 while the three run ---------------------------------------------

declare -A RB
rebalance() { # N NODES [ARG...]: kria cluster rebalance for nN in the background (RB[N])
  "$KRIA" cluster rebalance -c "$D/n$1.conf" --nodes "$2" --wait 60 "${@:3}" >"$D/rb$1.out" 2>"$D/rb$1.err" &
  RB[$1]=$!
  _pids+=("${RB[$1]}")
}
rb_wait() { # N...: 0 when each rebalance exited 0
  local n rc=0
  for n in "$@"; do wait "${RB[$n]}" || { rc=1; diag "n$n: $(cat "$D/rb$n.err")"; }; done
  return $rc
}
rebalance 1 n1,n2,n3,n4
for n in 2 3; do
  wait_until 10 ended "$n"
  check "n$n stops by itself once the move begins" ended "$n"
done
wait "${KPID[1]}"; wait "${KPID[2]}"; wait "${KPID[3]}"
like "$(cat "$D/n2.err")" "the members change \(epoch 1" "... saying why"
rows 1 2 3 >"$D/before1"
hostsof 1 >"$D/n1.hosts0"
cp -r "$D/n3" "$D/old3"
for n in 2 3 4; do rebalance "$n" n1,n2,n3,n4; done
check "the rebalance of each of the four members ends well" rb_wait 1 2 3 4
rows 1 2 3 4 >"$D/after1"
is "$(awk '{print $1}' "$D/after1" | sort | uniq -d | wc -l)" 0 "no URI in two members' state"
is "$(awk '{print $1, $2, $3, $4, $5}' "$D/after1")" "$(awk '{print $1, $2, $3, $4, $5}' "$D/before1")" \
  "every URI kept with its visits, next visit time, first seen and history ($NURIS URIs)"
moved=$(join -j1 <(awk '{print $1, $6}' "$D/before1") <(awk '{print $1, $6}' "$D/after1") |
  awk '$2 != $3 {print $3}' | sort -u | tr '\n' ' ')
is "$moved" "n4 " "URIs moved only to n4"
nmoved=$(awk '$6 == "n4"' "$D/after1" | wc -l)
check "n4 won some hosts ($nmoved URIs: $(hostsof 4))" test "$nmoved" -gt 0
check "... and their learned host state" test "$(db 4 'SELECT count(*) FROM hosts WHERE learned IS NOT NULL')" -gt 0
is "$(db 4 "SELECT sum(discovered) FROM hosts")" "$nmoved" "... n4's host counts match its rows"
for n in 1 2 3 4; do
  is "$(db "$n" "SELECT value FROM meta WHERE key = 'cluster.epoch'")" 1 "n$n is at epoch 1"
done
is "$(rcli HGET rb:members nodes)/$(rcli HGET rb:members state)" "n1,n2,n3,n4/stable" "Redis: the members, the move over"
is "$(rcli --raw KEYS 'rb:move:1:to:*' | grep -c .)" 0 "... its streams removed"
sed -i "s|$D/n3|$D/old3|" "$D/n3.conf"
"$KRIA" crawl -c "$D/n3.conf" >"$D/old3.err" 2>&1
check "a state directory from before the move is refused at its start" test "$?" -ne 0
like "$(cat "$D/old3.err")" "the members changed \(epoch 1: n1,n2,n3,n4\)" "... saying why"
sed -i "s|$D/old3|$D/n3|" "$D/n3.conf"
"$KRIA" cluster rebalance -c "$D/n1.conf" --nodes n4,n3,n2,n1 >"$D/rb.same" 2>&1
is "$?" 0 "a rebalance to the same members is a no-op"
like "$(cat "$D/rb.same")" "nothing to move" "... saying so"

# ---- 3: four members crawl on -------------------------------------------------------

mark=$(date +%s%3N)
since=$(now_log)
for n in 1 2 3 4; do start "$n"; done
# "URL visits-before visits-now" of the URIs moved to n4
n4_visits() {
  join -j1 <(awk '$6 == "n4" {print $1, $2}' "$D/after1") <(db 4 "SELECT url, visits FROM uris" | tr '|' ' ' | sort)
}
npmoved=$(awk '$6 == "n4" && $1 !~ /robots/' "$D/after1" | wc -l)
n4_revisited() { [ "$(n4_visits | awk '$1 !~ /robots/ && $3 > $2' | wc -l)" -ge "$npmoved" ]; }
check "n4 revisits the $npmoved pages it won, visits going on from their moved count" wait_until 30 n4_revisited
is "$(n4_visits | awk '$1 ~ /robots/ && $3 != $2' | wc -l)" 0 "... their robots.txt moved along, not fetched again"
like "$("$KRIA" status --cluster -c "$D/n1.conf")" "cluster rb on Redis [0-9.:]+: 4 members" \
  "kria status --cluster lists the cluster's four members (n1's config names three)"
like "$(cat "$D/n4.err")" "cluster: cluster.nodes \(n1,n2,n3\) is not the cluster's list" \
  "n4's config still names the first members: it says so and crawls with the cluster's"
is "$(join -j1 <(awk '$6 == "n4" {print $1, $4}' "$D/after1") \
       <(db 4 "SELECT url, first_seen FROM uris" | tr '|' ' ' | sort) | awk '$2 != $3' | wc -l)" 0 \
  "... their first-seen times kept (not found afresh)"
is "$(two_members "$since" | tr '\n' ' ')" "" "no host fetched by two members since the move"

# ---- 4: removing n2 ---------------------------------------------------------------

for n in 1 2 3 4; do stop "$n" >/dev/null; done
rows 1 2 3 4 >"$D/mid"
# n2's rebalance is killed once it has sent its hosts, and Redis with it;
# Redis restarts from its append-only file, and every step runs again
rebalance 2 n1,n3,n4
exported() { [ "$(rcli SISMEMBER rb:move:2:exported n2)" = 1 ]; }
check "n2 sends its hosts (waiting for the others)" wait_until 20 exported
kill -KILL "${RB[2]}" "$REDIS_PID"
wait "${RB[2]}" "$REDIS_PID" 2>/dev/null
redis_start "$T/redis" || bail "redis-server did not restart"
is "$(rcli HGET rb:members state)" moving "after SIGKILL of the rebalance and of Redis, the move is still recorded"
check "... and what n2 sent is kept ($(($(rcli XLEN rb:move:2:to:n1) + $(rcli XLEN rb:move:2:to:n3) + $(rcli XLEN rb:move:2:to:n4))) rows)" \
  test "$(($(rcli XLEN rb:move:2:to:n1) + $(rcli XLEN rb:move:2:to:n3) + $(rcli XLEN rb:move:2:to:n4)))" -gt 0
"$KRIA" crawl -c "$D/n2.conf" >"$D/n2.moving" 2>&1
check "n2's crawl refuses to start with its part unfinished" test "$?" -ne 0
like "$(cat "$D/n2.moving")" "move to epoch 2 is unfinished" "... saying so"
for n in 1 2 3 4; do rebalance "$n" n1,n3,n4; done
check "the rebalance removing n2 ends well on all four (n2's run again)" rb_wait 1 2 3 4
rows 1 2 3 4 >"$D/after2"
is "$(db 2 'SELECT count(*) FROM uris')/$(db 2 'SELECT count(*) FROM hosts')" "0/0" "n2 keeps no host"
is "$(awk '{print $1}' "$D/after2" | tr '\n' ' ')" "$(awk '{print $1}' "$D/mid" | tr '\n' ' ')" \
  "no URI lost or doubled"
is "$(awk '{print $1, $2, $4, $5}' "$D/after2")" "$(awk '{print $1, $2, $4, $5}' "$D/mid")" \
  "... each with its visits, first seen and history"
gone=$(awk '$6 == "n2" {print $1}' "$D/mid" | wc -l)
check "n2's $gone URIs went to the others" test "$gone" -gt 0
"$KRIA" crawl -c "$D/n2.conf" >"$D/n2.refused" 2>&1
check "n2, removed, is refused at its start" test "$?" -ne 0
since=$(now_log)
for n in 1 3 4; do start "$n"; done
n2_revisited() {
  [ "$(join -j1 <(awk '$6 == "n2" && $1 !~ /robots/ {print $1, $2}' "$D/mid") <(rows 1 3 4 | awk '{print $1, $2}') |
        awk '$3 > $2' | wc -l)" -ge "$(awk '$6 == "n2" && $1 !~ /robots/' "$D/mid" | wc -l)" ]
}
check "n2's former hosts are revisited by their new owners, from their state" wait_until 30 n2_revisited
is "$(two_members "$since" | tr '\n' ' ')" "" "no host fetched by two members since the move"
for n in 1 3 4; do stop "$n" >/dev/null; done
is "$(rcli HGET rb:members epoch)" 2 "Redis: epoch 2"

# ---- 5: n4 gone for good (--forget), n5 added with an empty state ----------------------

conf 5 >"$D/n5.conf"
lost=$(db 4 "SELECT count(*) FROM uris")
mark5=$(date +%s%3N)
rebalance 1 n1,n3,n5
rebalance 3 n1,n3,n5 --forget n4
rebalance 5 n1,n3,n5
check "the rebalance giving up n4 and adding n5 (an empty state) ends well on all three" rb_wait 1 3 5
like "$(cat "$D/rb3.err")" "n4 forgotten: its hosts start afresh" "... saying what giving up n4 costs"
"$KRIA" cluster rebalance -c "$D/n4.conf" --nodes n1,n3,n5 >"$D/rb4.out" 2>"$D/rb4.err"
check "n4's own rebalance is refused afterwards" test "$?" -ne 0
like "$(cat "$D/rb4.err")" "n4 was forgotten in the move to epoch 3" "... saying why"
"$KRIA" crawl -c "$D/n4.conf" >"$D/n4.refused" 2>&1
check "... and its crawl" test "$?" -ne 0
since=$(now_log)
for n in 1 3 5; do start "$n"; done
afresh() { # every URL n4 had is known again, found anew, and fetched
  [ "$(join -j1 <(db 4 "SELECT url FROM uris" | sort) <(rows 1 3 5 | awk -v t="$mark5" '$4 >= t && $2 >= 1 {print $1}') |
        wc -l)" -ge "$lost" ]
}
check "n4's $lost URIs start afresh at their new owners (found anew, fetched)" wait_until 30 afresh
is "$(two_members "$since" | tr '\n' ' ')" "" "no host fetched by two members since the move"
for n in 1 3 5; do stop "$n" >/dev/null; done
diag "moved to n4: $nmoved URIs; from n2: $gone URIs; crawl.log lines: $(fetched | wc -l); since the first move: $(( $(date +%s%3N) - mark )) ms"

kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
done_testing
