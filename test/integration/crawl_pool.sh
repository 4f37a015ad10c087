#!/usr/bin/env bash
# The idle connection pool in a real crawl ([http] idle-connections): four
# names for one kts (kria's hosts file), each with a robots.txt and four
# pages, fetched 50 ms apart per host, the four hosts at once. kts logs
# the connection each request came on.
#  - idle-connections = 8: one connection per host for all its fetches;
#    crawl.log's #NNN names the fetch slot: several at once, reused,
#    below max-connections;
#  - idle-connections = 1: the pool keeps only the last connection put
#    back, so the other hosts' fetches evict each host's connection before
#    its next fetch (what a pool smaller than the hosts in rotation did at
#    scale: every fetch a new handshake);
#  - idle-connections = 0: no reuse, a connection per request;
#  - the descriptor limit: the soft limit is raised to the hard one and
#    idle-connections lowered, with a notice, to what is left after
#    max-connections and 256 kept for files; max-connections over the
#    limit is warned about.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
body = User-agent: *

[route "/"]
body = <a href="/p1">1</a> <a href="/p2">2</a> <a href="/p3">3</a>

[route "/p1"]
body = one

[route "/p2"]
body = two

[route "/p3"]
body = three
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '127.0.0.1 a.test b.test c.test d.test\n' >"$T/hosts"
for h in a b c d; do printf 'http://%s.test:%s/\n' "$h" "$KTS_PORT"; done >"$T/seeds.txt"

# crawl N: a fresh crawl with idle-connections = N
crawl() {
  : >"$T/kts.log"
  rm -rf "$T/state"
  cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
idle-connections = $1
# (small: the pool must fit any descriptor limit the test runs under)
max-connections = 16
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
revisit = false
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 50ms
max-delay = 50ms
delay-factor = 0
[store]
commit-interval = 10ms
EOF
  timeout 60 "$KRIA" crawl -c "$T/crawl.conf" >"$T/crawl.out" 2>"$T/crawl.err"
}
requests() { grep -ac ' GET ' "$T/kts.log"; }
conns() { grep -a ' GET ' "$T/kts.log" | awk '{print $1}' | sort -u | wc -l; }

crawl 8
is "$?" 0 "idle-connections = 8: the crawl ends (exit 0)"
is "$(requests)" 20 "20 requests (robots.txt and four pages on each of four hosts)"
is "$(conns)" 4 "one connection per host: every fetch after the first reused it"
# crawl.log's "#NNN" (Heritrix's ToeThread number) is the fetch slot that
# ran the fetch: the four robots.txt fetches start in one dispatch, so
# they run on four slots; a slot is reused, never one per fetch, and
# never more than max-connections
slots=$(awk '{print $8}' "$T/state/logs/crawl.log" | sort -u)
check "four hosts at once ran on several fetch slots ($(echo $slots))" test "$(wc -l <<<"$slots")" -ge 4
check "... slots are reused: fewer than the 20 fetches" test "$(wc -l <<<"$slots")" -lt 20
check "... all below max-connections (16)" awk '$8 !~ /^#0[01][0-9]$/ || substr($8, 2) + 0 >= 16 {exit 1}' \
  "$T/state/logs/crawl.log"

crawl 1
is "$?" 0 "idle-connections = 1: the crawl ends (exit 0)"
is "$(requests)" 20 "the same 20 requests"
n=$(conns)
check "the pool of one was evicted by the other hosts: more than 8 connections ($n)" test "$n" -gt 8

crawl 0
is "$?" 0 "idle-connections = 0: the crawl ends (exit 0)"
is "$(conns)" "$(requests)" "no pool: a connection per request"

# ---- the descriptor limit ------------------------------------------------------------
crawl_limited() { # SOFT HARD MAX-CONNECTIONS IDLE
  rm -rf "$T/state"
  sed -e "s/^idle-connections = .*/idle-connections = $4/" -e "s/^max-connections = .*/max-connections = $3/" \
    "$T/crawl.conf" >"$T/limited.conf"
  (ulimit -Sn "$1" && ulimit -Hn "$2" &&
    exec timeout 60 "$KRIA" crawl -c "$T/limited.conf") >"$T/limited.out" 2>"$T/limited.err"
}
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 600 ]; then
  for i in 1 2 3 4 5 6; do skip "the hard descriptor limit ($hard) is under 600" "descriptor limit check $i"; done
else
  crawl_limited 300 600 100 1000
  is "$?" 0 "under a descriptor limit of 300 (hard 600): the crawl ends (exit 0)"
  like "$(cat "$T/limited.err")" \
    "http.idle-connections lowered from 1000 to 244: the descriptor limit is 600 .http.max-connections = 100, 256 kept for files." \
    "the soft limit is raised to the hard one, and the pool lowered to what is left"
  crawl_limited 300 600 100 200
  unlike "$(cat "$T/limited.err")" "lowered" "a pool that fits is left as it is"
  crawl_limited 600 600 500 10
  is "$?" 0 "max-connections over the limit: the crawl still ends (exit 0)"
  like "$(cat "$T/limited.err")" \
    "http.max-connections = 500 needs more than the descriptor limit of 600 allows" \
    "and says why fetches past it would fail"
  like "$(cat "$T/limited.err")" "lowered from 10 to 0" "with no room left for idle connections"
fi
kts_stop
done_testing
