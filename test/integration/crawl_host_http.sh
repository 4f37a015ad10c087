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
#  - a 3 KiB response header fails a.test (1 KiB limit) and passes b.test;
#  - a second pass (--revisit-now) sends If-None-Match to b.test but not
#    to a.test (http.conditional-requests = false);
#  - over HTTPS (kts --tls, a self-signed certificate) with a global
#    tls-verify = require, a.test's own tls-verify = record fetches it and
#    b.test's handshake fails (-2, tls-verify) before any request.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[route "/"]
body = <a href="/big">big</a> <a href="/slow">slow</a> <a href="/fat-head">head</a>
body = <a href="/v">validators</a>

[route "/v"]
etag = "v1"
body = same

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
timeout-idle = 5s
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
revisit = false
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
max-retries = 0
[store]
commit-interval = 10ms
[adaptive]
trust-probation = 0
trust-sample = 0
[host "a.test"]
http.max-body-bytes = 2KiB
http.timeout-idle = 150ms
http.max-header-bytes = 1KiB
http.conditional-requests = false
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

# ---- conditional requests: a second pass --------------------------------------
: >"$T/kts.log"
timeout 60 "$KRIA" crawl -c "$T/crawl.conf" --revisit-now >"$T/crawl2.out" 2>"$T/crawl2.err"
is "$?" 0 "a second pass (--revisit-now) ends (exit 0)"
va=$(grep -a "GET /v HTTP/1.1 | Host: a.test:" "$T/kts.log")
vb=$(grep -a "GET /v HTTP/1.1 | Host: b.test:" "$T/kts.log")
like "$vb" 'If-None-Match: "v1"' "b.test: the revisit is conditional (global conditional-requests)"
check "a.test: /v revisited" test -n "$va"
unlike "$va" "If-None-Match" "a.test: not conditional (its conditional-requests = false)"
kts_stop

# ---- tls-verify per host ----------------------------------------------------------
make_cert "$T/cert" || bail "no certificate"
kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --log "$T/tls.log" ||
  bail "kts --tls did not start"
printf 'https://a.test:%s/v\nhttps://b.test:%s/v\n' "$KTS_PORT" "$KTS_PORT" >"$T/seeds-tls.txt"
cat >"$T/tls.conf" <<EOF
[http]
allow-private-addresses = true
tls-verify = require
[crawl]
seeds = $T/seeds-tls.txt
state-dir = $T/state-tls
revisit = false
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
max-retries = 0
[store]
commit-interval = 10ms
[host "a.test"]
http.tls-verify = record
EOF
timeout 60 "$KRIA" crawl -c "$T/tls.conf" >"$T/crawl3.out" 2>"$T/crawl3.err"
is "$?" 0 "the HTTPS crawl ends (exit 0)"
CL="$T/state-tls/logs/crawl.log"
tline() { awk -v u="https://$1.test:$KTS_PORT$2" '$4 == u' "$CL"; }
is "$(tline a /v | awk '{print $2}')" 200 "a.test: fetched (its tls-verify = record)"
is "$(tline b /robots.txt | awk '{print $2}')" -2 "b.test: the handshake fails (global tls-verify = require)"
like "$(tline b /robots.txt)" "tls-verify" "b.test: annotated tls-verify"
isnt "$(tline b /v | awk '{print $2}')" 200 "b.test: its page is not fetched"
unlike "$(cat "$T/tls.log")" "Host: b.test" "b.test: no request reached the server"
kts_stop
done_testing
