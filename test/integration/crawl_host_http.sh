#!/usr/bin/env bash
# Per-host [http] settings in a real crawl: two names for one kts (through
# kria's hosts file), [host "a.test"] overriding http.max-body-bytes,
# http.timeout-idle and http.max-header-bytes, b.test keeping the global
# values:
#  - a 8 KiB page is cut at a.test's 2 KiB (crawl.log size 2048, lenTrunc)
#    and whole on b.test;
#  - a body that trickles a byte every 400 ms times out on a.test (idle
#    timeout 150 ms: cut after its first byte, idle-timeout) and arrives
#    whole on b.test (global 5 s);
#  - a 3 KiB response header fails a.test (1 KiB limit) and passes b.test.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[route "/"]
body = <a href="/big">big</a> <a href="/slow">slow</a> <a href="/fat-head">head</a>

[route "/big"]
body-size = 8K

[route "/slow"]
body = abc
trickle-ms = 400

[route "/fat-head"]
header-bytes = 3000
body = ok
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '127.0.0.1 a.test b.test\n' >"$T/hosts"
printf 'http://a.test:%s/\nhttp://b.test:%s/\n' "$KTS_PORT" "$KTS_PORT" >"$T/seeds.txt"
cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
revisit = false
[dns]
hosts-file = $T/hosts
[http]
timeout-idle = 5s
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
max-retries = 0
[store]
commit-interval = 10ms
[host "a.test"]
http.max-body-bytes = 2KiB
http.timeout-idle = 150ms
http.max-header-bytes = 1KiB
EOF
timeout 60 "$KRIA" crawl -c "$T/crawl.conf" >"$T/crawl.out" 2>"$T/crawl.err"
is "$?" 0 "the crawl ends (exit 0)"
CL="$T/state/logs/crawl.log"
line() { awk -v u="http://$1.test:$KTS_PORT$2" '$4 == u' "$CL"; }
col() { line "$1" "$2" | awk -v n="$3" '{print $n}'; }

is "$(col a /big 2)/$(col a /big 3)" "200/2048" "a.test: the page is cut at its max-body-bytes (2 KiB)"
like "$(line a /big)" "lenTrunc" "a.test: the cut page is annotated lenTrunc"
is "$(col b /big 2)/$(col b /big 3)" "200/8192" "b.test: the global max-body-bytes keeps the whole page"
unlike "$(line b /big)" "lenTrunc" "b.test: not truncated"

is "$(col a /slow 3)" 1 "a.test: a body trickling past its idle timeout (150 ms) is cut after a byte"
like "$(line a /slow)" "idle-timeout" "a.test: annotated idle-timeout"
is "$(col b /slow 2)/$(col b /slow 3)" "200/3" "b.test: the global idle timeout (5 s) lets it arrive"
unlike "$(line b /slow)" "idle-timeout" "b.test: no timeout"

isnt "$(col a /fat-head 2)" 200 "a.test: a 3 KiB header is over its max-header-bytes (1 KiB)"
like "$(line a /fat-head)" "header-too-big" "a.test: annotated header-too-big"
is "$(col b /fat-head 2)" 200 "b.test: the global max-header-bytes (64 KiB) takes it"
kts_stop
done_testing
