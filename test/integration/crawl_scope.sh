#!/usr/bin/env bash
# The crawl's scope is part of its state (src/crawl/scopestate.h):
#  - restart without seeds: a crawl of three hosts restarted with
#    crawl.seeds empty (and --revisit-now) visits every URI again, none
#    disregarded (they all went -5000 when the scope came from the seeds
#    of the moment);
#  - a start whose seeds file lost two hosts is refused naming them and
#    changes nothing; with --allow-scope-change it proceeds and their URIs
#    go out of scope; a later start with the hosts back revives those URIs
#    (queued, visited again) without --revisit-now;
#  - a start with a junk seeds file on an existing crawl is refused;
#  - reloads of a running crawl: a junk seeds file is refused; crawl.seeds
#    emptied keeps the seeds in force (no URI disregarded after it); a
#    seeds file without a host is refused naming it, accepted once the
#    configuration sets scope.allow-change; the host back in the seeds
#    file revives its URIs;
#  - robots.txt that relaxes: a URI it disallowed (-9998) is fetched once
#    the robots.txt fetched again allows it (kts restarted on the same
#    port with new routes).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is not installed"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow: /private/\n

[route "/"]
body = <a href="/a">a</a> <a href="/b">b</a>

[route "/*"]
body = page
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '127.0.0.1 a.test b.test c.test\n' >"$T/hosts"
A="http://a.test:$KTS_PORT" B="http://b.test:$KTS_PORT" C="http://c.test:$KTS_PORT"

# conf FILE STATE SEEDS [REVISIT]: a crawl's configuration
conf() {
  cat >"$1" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $3
state-dir = $2
revisit = ${4:-false}
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[store]
commit-interval = 10ms
EOF
}
kcrawl() { # kcrawl CONF [ARGS...]: a snapshot crawl, RC and $T/crawl.err
  local c=$1; shift
  timeout 60 "$KRIA" crawl -c "$c" "$@" >"$T/crawl.out" 2>"$T/crawl.err"
  RC=$?
}
sql() { sqlite3 "$T/s/kria.db" "$1"; }
# lines of crawl.log from line $1 on whose status is $2 and URI starts $3
log_from() { tail -n +"$1" "$T/s/logs/crawl.log" | awk -v s="$2" -v u="$3" '$2 == s && index($4, u) == 1' | wc -l; }
log_len() { wc -l <"$T/s/logs/crawl.log"; }
# wait_until SECONDS CMD...: CMD succeeds (polled every 50 ms, bounded)
wait_until() {
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -gt "$end" ] && return 1
    sleep 0.05
  done
}

# ---- restart without seeds ----------------------------------------------------------
printf '%s/\n%s/\n%s/\n' "$A" "$B" "$C" >"$T/seeds.txt"
conf "$T/s.conf" "$T/s" "$T/seeds.txt"
kcrawl "$T/s.conf"
is "$RC" 0 "a first crawl of three hosts exits 0"
is "$(sql 'SELECT count(*) FROM seeds')" 3 "its three seeds are kept in the state database"
n1=$(sql 'SELECT count(*) FROM uris WHERE state = 1')
is "$n1" 12 "it visited 3 x (/, /a, /b, /robots.txt)"

conf "$T/e.conf" "$T/s" ""
from=$(($(log_len) + 1))
kcrawl "$T/e.conf" --revisit-now
is "$RC" 0 "a restart with crawl.seeds empty exits 0"
like "$(cat "$T/crawl.err")" "crawl.seeds is empty: the 3 seeds kept in the state database are in force" \
  "it says it uses the seeds kept"
is "$(log_from "$from" -5000 http)" 0 "no URI disregarded by scope"
is "$(sql 'SELECT count(*) FROM uris WHERE state = 3')" 0 "none disregarded in the store"
for h in "$A" "$B" "$C"; do
  is "$(log_from "$from" 200 "$h/a")" 1 "$h/a visited again"
done

# ---- a start that would exile hosts ---------------------------------------------------
printf '%s/\n' "$A" >"$T/seeds.txt"
from=$(($(log_len) + 1))
kcrawl "$T/s.conf" --revisit-now
is "$RC" 2 "a start whose seeds lost two hosts is refused (exit 2)"
like "$(cat "$T/crawl.err")" "2 hosts with URIs in .*kria.db would go out of scope: b.test:$KTS_PORT, c.test:$KTS_PORT" \
  "the refusal names them"
like "$(cat "$T/crawl.err")" "--allow-scope-change" "and says how to let them go"
is "$(log_len)" "$((from - 1))" "nothing was crawled"
is "$(sql 'SELECT count(*) FROM seeds')" 3 "the seeds kept are unchanged"

kcrawl "$T/s.conf" --revisit-now --allow-scope-change
is "$RC" 0 "with --allow-scope-change it proceeds"
like "$(cat "$T/crawl.err")" "scope change allowed: 2 hosts with URIs go out of scope" "and warns"
is "$(log_from "$from" -5000 "$B/")" 3 "b.test's URIs go out of scope (-5000)"
is "$(log_from "$from" 200 "$A/a")" 1 "a.test is crawled"
is "$(sql 'SELECT count(*) FROM seeds')" 1 "one seed in force"

# ---- hosts back in scope: their URIs revive ---------------------------------------------
printf '%s/\n%s/\n%s/\n' "$A" "$B" "$C" >"$T/seeds.txt"
from=$(($(log_len) + 1))
kcrawl "$T/s.conf"
is "$RC" 0 "a start with the two hosts back exits 0"
like "$(cat "$T/crawl.err")" "6 URIs disregarded by an earlier scope are in scope again: queued" \
  "it queues their disregarded URIs again"
is "$(log_from "$from" 200 "$B/a")" 1 "b.test/a is visited again"
is "$(log_from "$from" 200 "$C/b")" 1 "c.test/b is visited again"
is "$(log_from "$from" 200 "$A/")" 0 "a.test, never out of scope, is not"
is "$(sql 'SELECT count(*) FROM uris WHERE state = 3')" 0 "nothing disregarded is left"

# ---- a junk seeds file at start ------------------------------------------------------------
head -c 100000 /dev/urandom | tr -c 'a-z:/.(\n' 'x' >"$T/junk.txt"
printf 'http://(\nhttp://qb\n' >>"$T/junk.txt"
conf "$T/j.conf" "$T/s" "$T/junk.txt"
kcrawl "$T/j.conf"
is "$RC" 2 "a start with a junk seeds file on an existing crawl is refused"
like "$(cat "$T/crawl.err")" "junk.txt: (no seed in it|more bad lines than seeds).*the 3 seeds kept" \
  "saying the seeds kept stay in force"
is "$(sql 'SELECT count(*) FROM seeds')" 3 "the seeds kept are unchanged"

# ---- reloads ---------------------------------------------------------------------------------
# A revisit crawl whose URIs come due every second or two.
conf "$T/r.conf" "$T/s" "$T/seeds.txt" true
printf '[wait "all"]\ncontent-type =\ninitial-wait = 1s\ndefault-wait = 1s\nmin-wait = 1s\nmax-wait = 2s\n' \
  >>"$T/r.conf"
has_lines() { [ "$(log_from "$@")" -ge 1 ]; } # has_lines FROM STATUS PREFIX
from=$(($(log_len) + 1))
"$KRIA" crawl -c "$T/r.conf" --revisit-now -o limits.max-time=60s >/dev/null 2>"$T/r.err" &
KPID=$!
_pids+=("$KPID")
check "reload: the crawl is running" wait_until 15 has_lines "$from" 200 "$C/"
# hup N: send SIGHUP and wait for the N-th reload to be done with
hup() {
  kill -HUP "$KPID"
  wait_until 15 bash -c "[ \$(grep -cE 'reload refused|reloaded:' '$T/r.err') -ge $1 ]"
}
cp "$T/junk.txt" "$T/seeds.txt"
hup 1
like "$(tail -3 "$T/r.err")" "reload refused.*(no seed in it|more bad lines than seeds)" \
  "reload: a junk seeds file is refused"
sed -i "s|^seeds = .*|seeds =|" "$T/r.conf"
hup 2
like "$(tail -2 "$T/r.err")" "reloaded: 3 seeds" "reload: crawl.seeds emptied keeps the 3 seeds in force"
mark=$(($(log_len) + 1))
check "reload: after it c.test/a is visited again" wait_until 15 has_lines "$mark" 200 "$C/a"
check "reload: and b.test/b" wait_until 15 has_lines "$mark" 200 "$B/b"
is "$(log_from "$mark" -5000 http)" 0 "reload: no URI went out of scope"
printf '%s/\n%s/\n' "$A" "$B" >"$T/seeds.txt"
sed -i "s|^seeds =.*|seeds = $T/seeds.txt|" "$T/r.conf"
hup 3
like "$(tail -3 "$T/r.err")" "reload refused.*scope: 1 host with URIs would go out of scope: c.test:$KTS_PORT" \
  "reload: a seeds file without c.test is refused naming it"
is "$(sql 'SELECT count(*) FROM seeds')" 3 "reload: the seeds kept are unchanged"
printf '[scope]\nallow-change = true\n' >>"$T/r.conf"
hup 4
like "$(tail -3 "$T/r.err")" "reloaded: 2 seeds" "reload: accepted with scope.allow-change = true"
seeds_are() { [ "$(sql 'SELECT count(*) FROM seeds')" = "$1" ]; }
check "reload: two seeds in force now (committed)" wait_until 15 seeds_are 2
mark=$(($(log_len) + 1))
check "reload: c.test's URIs then go out of scope" wait_until 15 has_lines "$mark" -5000 "$C/"
printf '%s/\n%s/\n%s/\n' "$A" "$B" "$C" >"$T/seeds.txt"
hup 5
like "$(tail -3 "$T/r.err")" "reloaded: 3 seeds" "reload: c.test back in the seeds file"
check "reload: its disregarded URIs are queued again" \
  wait_until 15 grep -q "reload: [1-9][0-9]* URIs disregarded by the old scope are in scope again" "$T/r.err"
mark=$(($(log_len) + 1))
check "reload: and c.test/b is visited again" wait_until 15 has_lines "$mark" 200 "$C/b"
kill -TERM "$KPID"
timeout 20 tail -s 0.05 --pid="$KPID" -f /dev/null || kill -KILL "$KPID"
wait "$KPID" 2>/dev/null
is "$?" 0 "reload: the crawl stops cleanly on SIGTERM (exit 0)"

# ---- robots.txt that relaxes -----------------------------------------------------------------
printf '%s/\n%s/private/x\n' "$A" "$A" >"$T/seeds2.txt"
conf "$T/p.conf" "$T/p" "$T/seeds2.txt"
kcrawl "$T/p.conf"
is "$RC" 0 "robots: a crawl with a disallowed seed exits 0"
is "$(awk -v u="$A/private/x" '$4 == u {print $2}' "$T/p/logs/crawl.log")" -9998 \
  "robots: /private/x is disallowed (-9998)"
kts_stop || diag "kts exited $?"
sed -i 's|^body = User-agent: \*\\nDisallow: /private/\\n$|body = User-agent: *\\nDisallow: /nothing/\\n|' "$T/routes.ini"
grep -q "Disallow: /nothing/" "$T/routes.ini" || bail "routes.ini was not changed"
kts_start "$T/routes.ini" --port "$KTS_PORT" --log "$T/kts2.log" || bail "kts did not restart on port $KTS_PORT"
sqlite3 "$T/p/kria.db" "UPDATE robots SET expires = 1" # stored rules expired
printf '%s/new\n' "$A" >>"$T/seeds2.txt"               # something due on the host
kcrawl "$T/p.conf"
is "$RC" 0 "robots: the restart exits 0"
like "$(cat "$T/crawl.err")" "robots.txt changed: 1 URIs it disallowed are allowed now" \
  "robots: the change is noticed"
is "$(grep -c 'GET /private/x ' "$T/kts2.log")" 1 "robots: /private/x is fetched once robots.txt allows it"
is "$(awk -v u="$A/private/x" '$4 == u {print $2}' "$T/p/logs/crawl.log" | tail -1)" 200 \
  "robots: and logged 200"

done_testing
