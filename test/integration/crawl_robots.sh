#!/usr/bin/env bash
# robots.txt across restarts and when it never comes back:
#  - persisted: a snapshot crawl fetches /robots.txt once; a restart with
#    new seeds on the same host (within robots.expiry) fetches none and
#    still obeys it (a new disallowed seed is -9998, an allowed one is
#    fetched); once the stored rules have expired (the state database's
#    robots row aged with sqlite3) the next restart fetches it again;
#  - a robots.txt answering 503 forever: with max-retries 2 and
#    retry-delay 1 s it is fetched 3 times, then it and the URIs waiting
#    for it fail (-61, robots:gave-up) and the snapshot crawl exits 0; a
#    host next to it with a good robots.txt is crawled as usual;
#  - the same with Retry-After: 1 and retry-delay 1h: the retries come
#    after the server's Retry-After, not the hour, so the crawl still ends
#    (exit 2: its only seed could not be fetched, robots.txt unavailable).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow: /private/\n

[route "/robots.txt"]
host = down.test
status = 503
body = busy

[route "/robots.txt"]
host = later.test
status = 503
header = Retry-After: 1
body = busy

[route "/"]
body = <a href="/a">a</a>

[route "/*"]
body = page
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '127.0.0.1 ok.test down.test later.test\n' >"$T/hosts"
U="http://ok.test:$KTS_PORT"
D="http://down.test:$KTS_PORT"

# conf FILE STATE SEEDS: a snapshot crawl's configuration
conf() {
  cat >"$1" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $3
state-dir = $2
revisit = false
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
retry-delay = 1s
max-retries = 2
[store]
commit-interval = 10ms
EOF
}
kcrawl() {
  timeout 60 "$KRIA" crawl -c "$1" >"$T/crawl.out" 2>"$T/crawl.err"
  RC=$?
}
robots_gets() { grep -c "GET /robots.txt HTTP/1.1 | Host: $1" "$T/kts.log"; }
status_of() { awk -v u="$2" '$4 == u {print $2}' "$1" | tail -1; }

# ---- persisted across restarts ------------------------------------------------
echo "$U/" >"$T/seeds.txt"
conf "$T/p.conf" "$T/p" "$T/seeds.txt"
kcrawl "$T/p.conf"
is "$RC" 0 "first snapshot crawl exits 0"
is "$(robots_gets ok.test)" 1 "it fetched robots.txt once"

printf '%s/\n%s/b\n%s/private/x\n' "$U" "$U" "$U" >"$T/seeds.txt"
kcrawl "$T/p.conf"
is "$RC" 0 "a restart with new seeds exits 0"
is "$(robots_gets ok.test)" 1 "the restart (within robots.expiry) fetches no robots.txt"
is "$(grep -c 'GET /b ' "$T/kts.log")" 1 "the new allowed seed is fetched"
is "$(grep -c 'GET /private/' "$T/kts.log")" 0 "the new disallowed seed is not"
is "$(status_of "$T/p/logs/crawl.log" "$U/private/x")" -9998 \
  "and is logged -9998 by the stored rules"

if command -v sqlite3 >/dev/null; then
  sqlite3 "$T/p/kria.db" "UPDATE robots SET expires = 1" || diag "sqlite3 failed"
  printf '%s/c\n' "$U" >>"$T/seeds.txt"
  kcrawl "$T/p.conf"
  is "$RC" 0 "a restart after the stored rules expired exits 0"
  is "$(robots_gets ok.test)" 2 "and fetches robots.txt again"
  order=$(grep -n -E 'GET /robots.txt |GET /c ' "$T/kts.log" | tail -2 | sed 's/^[0-9]*:c=[0-9]* r=[0-9]* GET \([^ ]*\) .*/\1/' | tr '\n' ' ')
  is "$order" "/robots.txt /c " "before the new seed"
else
  skip "no sqlite3" "expired rules are fetched again"
fi

# ---- a robots.txt that answers 503 forever --------------------------------------
printf '%s/\n%s/x\n%s/y\n' "$D" "$D" "$D" >"$T/seeds2.txt"
echo "$U/other" >>"$T/seeds2.txt"
conf "$T/s.conf" "$T/s" "$T/seeds2.txt"
: >"$T/kts.log"
kcrawl "$T/s.conf"
is "$RC" 0 "a snapshot crawl with a robots.txt answering 503 forever ends (exit 0)"
is "$(robots_gets down.test)" 3 "robots.txt fetched max-retries + 1 = 3 times"
is "$(grep -c "Host: down.test" "$T/kts.log")" 3 "nothing else asked of that host"
CL="$T/s/logs/crawl.log"
is "$(status_of "$CL" "$D/x")" -61 "a URI behind it fails with -61"
like "$(grep "$D/x " "$CL" | tail -1)" "robots:gave-up" "annotated robots:gave-up"
is "$(status_of "$CL" "$D/robots.txt")" 503 "robots.txt logged with its 503"
is "$(grep -c " $D/robots.txt " "$CL")" 3 "one crawl.log line per robots.txt try"
is "$(status_of "$CL" "$U/other")" 200 "the other host is crawled"

L="http://later.test:$KTS_PORT"
printf '%s/\n' "$L" >"$T/seeds3.txt"
conf "$T/l.conf" "$T/l" "$T/seeds3.txt"
sed -i 's/^retry-delay = 1s$/retry-delay = 1h/' "$T/l.conf"
: >"$T/kts.log"
kcrawl "$T/l.conf"
is "$RC" 2 "robots.txt 503 with Retry-After: 1 and retry-delay 1h: the crawl still ends (exit 2: no seed fetched)"
like "$(cat "$T/crawl.err")" "no seed could be fetched \(1 seed: 1 robots\.txt unavailable\)" "... says why"
is "$(robots_gets later.test)" 3 "robots.txt tried 3 times, each after its Retry-After"
is "$(status_of "$T/l/logs/crawl.log" "$L/")" -61 "then its URI fails with -61"
kts_stop
done_testing
