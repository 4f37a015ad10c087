#!/usr/bin/env bash
# Self-test of kts, the test server: every route feature checked with curl
# (and bash's /dev/tcp for raw requests) against what test/server/README.md
# documents, so the kria tests built on kts can trust it.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || bail "curl not installed"
C=(curl -s --max-time 10)

# ---- routes file checks -------------------------------------------------
cat >"$T/bad1.ini" <<'EOF'
[route "/"]
body = x
colour = blue
EOF
out=$("$KTS" -c "$T/bad1.ini" --check 2>&1); rc=$?
is "$rc" 2 "unknown key: exit 2"
like "$out" "bad1.ini:3: unknown key colour" "unknown key: file:line named"
printf '[route "/"]\nbody = %s\n' "$(head -c 300 /dev/zero | tr '\0' a)" >"$T/bad2.ini"
out=$("$KTS" -c "$T/bad2.ini" --check 2>&1); rc=$?
is "$rc" 2 "overlong line rejected (inih would split it)"
like "$out" "bad2.ini:2: line longer" "overlong line: line number"
printf '[nonsense]\nbody = x\n' >"$T/bad3.ini"
out=$("$KTS" -c "$T/bad3.ini" --check 2>&1)
like "$out" "bad3.ini:1: unknown section" "unknown section rejected"
printf '[route "/"]\nstatus = 42\n' >"$T/bad4.ini"
out=$("$KTS" -c "$T/bad4.ini" --check 2>&1)
like "$out" "bad4.ini:2: status must be" "bad status value rejected"
printf '[route "/"]\nbody-file = does-not-exist\n' >"$T/bad5.ini"
out=$("$KTS" -c "$T/bad5.ini" --check 2>&1)
like "$out" "cannot read body-file" "missing body-file rejected"

# ---- the main routes file -----------------------------------------------
printf 'file body\n' >"$T/file.txt"
cat >"$T/routes.ini" <<'EOF'
# comments are fine
[route "/"]
body = hello\n

[route "/hdr"]
status = 201
header = X-Test: one
header = X-Other: two
content-type = text/plain
body = line1
body = line2

[route "/file"]
body-file = file.txt

[route "/tok"]
body = v={version} n={count} p={path} port={port}
change-every = 1

[route "/pre*"]
body = short prefix

[route "/prefix/long*"]
body = long prefix

[route "/prefix/long/exact"]
body = exact

[route "/vhost"]
body = generic

[route "/vhost"]
host = b.test
body = host b

[route "/gen"]
body-size = 3000
seed = 1

[route "/gen2"]
body-size = 3000
seed = 2

[route "/links"]
links = 7

[site]
pages = 20
links = 3
body-size = 600

[site "/blog/"]
pages = 5
links = 2

[route "/chunk"]
body-size = 5000
chunked = 1
chunk-size = 1000

[route "/gz"]
body-size = 20000
gzip = 1

[route "/gzforce"]
body-size = 2000
gzip = force

[route "/defl"]
body-size = 20000
deflate = 1

[route "/rawdefl"]
body-size = 20000
deflate = raw

[route "/gzchunk"]
body-size = 50000
gzip = 1
chunked = 1

[route "/zeros"]
body-size = 1M
fill = zero
gzip = force

[route "/etag"]
body = etagged
etag = "abc"
last-modified = Tue, 15 Nov 1994 12:45:26 GMT

[route "/liar"]
body = always 200
etag = "abc"
last-modified = Tue, 15 Nov 1994 12:45:26 GMT
ignore-conditionals = 1

[route "/every2"]
change-every = 2
etag = auto
last-modified = auto
body-size = 500

[route "/timed"]
change-every-ms = 1000
etag = auto
last-modified = auto

[route "/clock"]
volatile = 1
body-size = 2000
etag = auto

[route "/delay"]
delay-ms = 300
body = late

[route "/stall-headers"]
stall = headers
body = never

[route "/stall-body"]
stall = body
stall-after = 10
body-size = 1000

[route "/stall-response"]
stall = response

[route "/trickle"]
body = 0123456789
trickle-ms = 30

[route "/trickle-head"]
body = x
trickle-ms = 2
trickle-bytes = 4
trickle-headers = 1

[route "/drop"]
drop-after = 100
body-size = 1000

[route "/reset"]
reset-after = 100
body-size = 100000

[route "/garbage"]
garbage = 1

[route "/badchunk"]
bad-chunk = 1
body-size = 3000

[route "/bighdr"]
header-bytes = 5000
body = x

[route "/manyhdr"]
header-count = 50
body = x

[route "/lie"]
content-length-lie = 1000
body = only this

[route "/badgz"]
bad-gzip = 1
body-size = 2000

[route "/redir"]
redirect = http://127.0.0.1:{port}/

[route "/moved"]
status = 301
redirect = /

[route "/close"]
keep-alive = 0
body = bye

[route "/raw"]
raw = HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi

[route "/badstatus"]
status-line = HTTP/1.1 abc Broken
body = x

[route "/endless"]
body-size = infinite

[route "/giga"]
body-size = 1G

[route "/nolen"]
no-length = 1
body = until close

[route "/q?x=1"]
body = with query

[site "/chain/"]
pages = 101
redirect = /chain/{next}

[route "/loop"]
redirect = {path}

[route "/cal/*"]
links = 2
link-prefix = {path}/

[route "/resetat"]
reset-at = 10
body = a body that is long enough

[route "/dropat"]
drop-at = 20
body = a body that is long enough

[route "/nulhdr"]
header = X-Bin: a\x00b\xff
body = x
EOF
out=$("$KTS" -c "$T/routes.ini" --check 2>&1)
like "$out" "^ok [0-9]+ routes" "--check accepts the routes file"

kts_start "$T/routes.ini" --log "$T/req.log" || bail "kts did not start"
like "$KTS_PORT" '^[0-9]+$' "listening line gives the port"
U=$KTS_URL

# ---- basics ---------------------------------------------------------------
is "$("${C[@]}" "$U/")" "hello" "inline body"
hdrs=$("${C[@]}" -D - -o "$T/b" "$U/hdr")
like "$hdrs" "^HTTP/1.1 201 Created" "status = 201"
like "$hdrs" $'X-Test: one\r' "header repeated (1)"
like "$hdrs" $'X-Other: two\r' "header repeated (2)"
like "$hdrs" $'Content-Type: text/plain\r' "content-type replaces the default"
is "$(cat "$T/b")" $'line1\nline2' "repeated body key joins lines"
is "$("${C[@]}" "$U/file")" "file body" "body-file relative to the routes file"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$U/nope")" 404 "unknown route: 404"
is "$("${C[@]}" "$U/tok?z")" "v=0000000000 n=0000000001 p=/tok port=$KTS_PORT" "body tokens"
is "$("${C[@]}" "$U/tok")" "v=0000000001 n=0000000002 p=/tok port=$KTS_PORT" "tokens follow the version"
is "$("${C[@]}" "$U/prefix/x")" "short prefix" "prefix route"
is "$("${C[@]}" "$U/prefix/long/y")" "long prefix" "longest prefix wins"
is "$("${C[@]}" "$U/prefix/long/exact")" "exact" "exact beats prefix"
is "$("${C[@]}" "$U/vhost")" "generic" "route without host"
is "$("${C[@]}" -H 'Host: b.test:80' "$U/vhost")" "host b" "host-specific route"
is "$("${C[@]}" "$U/q?x=1")" "with query" "route naming a query"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$U/q?x=2")" 404 "other query: 404"

# ---- generated bodies ------------------------------------------------------
"${C[@]}" -o "$T/g1" "$U/gen"; "${C[@]}" -o "$T/g1b" "$U/gen"; "${C[@]}" -o "$T/g2" "$U/gen2"
is "$(stat -c %s "$T/g1")" 3000 "body-size is exact"
is "$(sha1_b32 "$T/g1")" "$(sha1_b32 "$T/g1b")" "generated body is deterministic"
isnt "$(sha1_b32 "$T/g1")" "$(sha1_b32 "$T/g2")" "seed changes the body"
like "$(head -c 100 "$T/g1")" "^<!DOCTYPE html>" "generated body is HTML"
is "$("${C[@]}" "$U/links" | grep -c 'href="/p/')" 7 "links = 7"
"${C[@]}" -o "$T/p0" "$U/p/0"
like "$(cat "$T/p0")" 'href="/p/1".*href="/p/2".*href="/p/3"' "site page 0 links to 1..3"
is "$(stat -c %s "$T/p0")" 600 "site pages honour body-size"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$U/p/20")" 404 "page beyond the site: 404"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$U/p/01")" 404 "non-canonical page number: 404"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$U/p/x")" 404 "non-numeric page: 404"
# every page reachable from /p/0 (breadth-first, bounded by the site size)
declare -A seen=([0]=1); queue=(0); n=0
while [ ${#queue[@]} -gt 0 ] && [ $n -lt 100 ]; do
  cur=${queue[0]}; queue=("${queue[@]:1}"); n=$((n + 1))
  for l in $("${C[@]}" "$U/p/$cur" | grep -o 'href="/p/[0-9]*"' | grep -o '[0-9]*'); do
    [ -n "${seen[$l]:-}" ] || { seen[$l]=1; queue+=("$l"); }
  done
done
is "${#seen[@]}" 20 "all 20 site pages reachable from /p/0"
like "$("${C[@]}" "$U/blog/4")" 'href="/blog/' "named site links under its prefix"

# ---- framing and coding ---------------------------------------------------
raw=$("${C[@]}" --raw -D "$T/h" "$U/chunk")
like "$(cat "$T/h")" $'Transfer-Encoding: chunked\r' "chunked: header"
like "$raw" $'^3e8\r\n' "chunked: 1000-byte chunks"
is "$("${C[@]}" "$U/chunk" | wc -c)" 5000 "chunked: decoded length"
"${C[@]}" -D "$T/h" -o "$T/gz" -H 'Accept-Encoding: gzip' "$U/gz"
like "$(cat "$T/h")" $'Content-Encoding: gzip\r' "gzip when accepted"
like "$(cat "$T/h")" $'Vary: Accept-Encoding\r' "Vary with coding"
"${C[@]}" -D "$T/h" -o "$T/id" "$U/gz"
unlike "$(cat "$T/h")" "Content-Encoding" "identity when not accepted"
is "$(gzip -dc <"$T/gz" | sha1_b32)" "$(sha1_b32 "$T/id")" "gzip decodes to the identity body"
is "$(grep -i '^content-length' "$T/h" | tr -dc 0-9)" 20000 "identity Content-Length"
"${C[@]}" -D "$T/h" -o /dev/null -H 'Accept-Encoding: gzip;q=0' "$U/gz"
unlike "$(cat "$T/h")" "Content-Encoding" "q=0 refuses gzip"
"${C[@]}" -D "$T/h" -o /dev/null "$U/gzforce"
like "$(cat "$T/h")" $'Content-Encoding: gzip\r' "gzip = force without Accept-Encoding"
"${C[@]}" -D "$T/h" -o /dev/null -H 'Accept-Encoding: deflate' "$U/defl"
like "$(cat "$T/h")" $'Content-Encoding: deflate\r' "deflate when accepted"
is "$("${C[@]}" --compressed "$U/defl" | sha1_b32)" "$("${C[@]}" "$U/defl" | sha1_b32)" "deflate decodes (curl)"
is "$("${C[@]}" --compressed "$U/rawdefl" | sha1_b32)" "$("${C[@]}" "$U/rawdefl" | sha1_b32)" "raw deflate decodes (curl)"
"${C[@]}" -D "$T/h" -o "$T/gzc" -H 'Accept-Encoding: gzip' "$U/gzchunk"
like "$(cat "$T/h")" $'Transfer-Encoding: chunked' "gzip + chunked"
is "$(gzip -dc <"$T/gzc" | wc -c)" 50000 "gzip + chunked decodes"
"${C[@]}" -D "$T/h" -o "$T/z" "$U/zeros"
is "$(gzip -dc <"$T/z" | wc -c)" 1048576 "fill = zero, 1 MiB"
check "fill = zero compresses over 100:1" test "$(stat -c %s "$T/z")" -lt 10486

# ---- validators -----------------------------------------------------------
code() { rm -f "$T/cb"; "${C[@]}" -o "$T/cb" -w '%{http_code}' "$@"; }
is "$(code -H 'If-None-Match: "abc"' "$U/etag")" 304 "If-None-Match match: 304"
check "304 has no body" test ! -s "$T/cb"
is "$(code -H 'If-None-Match: "xyz"' "$U/etag")" 200 "If-None-Match mismatch: 200"
is "$(code -H 'If-None-Match: W/"abc"' "$U/etag")" 304 "weak comparison"
is "$(code -H 'If-None-Match: "x", "abc"' "$U/etag")" 304 "If-None-Match list"
is "$(code -H 'If-None-Match: *' "$U/etag")" 304 "If-None-Match *"
is "$(code -H 'If-Modified-Since: Tue, 15 Nov 1994 12:45:26 GMT' "$U/etag")" 304 "If-Modified-Since equal: 304"
is "$(code -H 'If-Modified-Since: Tue, 15 Nov 1994 12:45:25 GMT' "$U/etag")" 200 "If-Modified-Since older: 200"
is "$(code -H 'If-Modified-Since: Tuesday, 15-Nov-94 12:45:26 GMT' "$U/etag")" 304 "RFC 850 date"
is "$(code -H 'If-None-Match: "xyz"' -H 'If-Modified-Since: Tue, 15 Nov 1994 12:45:26 GMT' "$U/etag")" 200 \
  "If-None-Match wins over If-Modified-Since"
is "$(code -H 'If-Modified-Since: garbage' "$U/etag")" 200 "bad date ignored"
is "$(code -H 'If-None-Match: "abc"' "$U/liar")" 200 "ignore-conditionals: 200 anyway"
etag_of() { "${C[@]}" -D - -o "$T/eb" "$1" | tr -d '\r' | sed -n 's/^ETag: //p'; }
e1=$(etag_of "$U/every2"); v1=$(grep -o 'version [0-9]\{10\}' "$T/eb")
e2=$(etag_of "$U/every2"); v2=$(grep -o 'version [0-9]\{10\}' "$T/eb")
e3=$(etag_of "$U/every2"); v3=$(grep -o 'version [0-9]\{10\}' "$T/eb")
is "$e1|$v1" "$e2|$v2" "change-every = 2: requests 1 and 2 see one version"
isnt "$e2" "$e3" "change-every = 2: request 3 sees a new ETag"
is "$v3" "version 0000000001" "change-every = 2: version counter in the body"
is "$(code -H "If-None-Match: $e3" "$U/every2")" 304 "auto ETag answers 304 while current"
is "$(code -H "If-None-Match: $e3" "$U/every2")" 200 "auto ETag stale after the change"
lm=$("${C[@]}" -D - -o /dev/null "$U/every2" | tr -d '\r' | sed -n 's/^Last-Modified: //p')
like "$lm" "GMT$" "last-modified = auto sent"
"${C[@]}" -o "$T/c1" "$U/clock"; "${C[@]}" -o "$T/c2" "$U/clock"
isnt "$(sha1_b32 "$T/c1")" "$(sha1_b32 "$T/c2")" "volatile: body changes every request"
is "$(grep -v 'class="clock"' "$T/c1" | sha1_b32)" "$(grep -v 'class="clock"' "$T/c2" | sha1_b32)" \
  "volatile: only the clock section changes"
is "$(stat -c %s "$T/c1")" "$(stat -c %s "$T/c2")" "volatile: size constant"

# ---- misbehaviour ---------------------------------------------------------
t=$("${C[@]}" -o /dev/null -w '%{time_starttransfer}' "$U/delay")
check "delay-ms = 300 delays the first byte" awk -v t="$t" 'BEGIN { exit !(t >= 0.29) }'
out=$(curl -s --max-time 1 -D - "$U/stall-headers"); rc=$?
is "$rc" 28 "stall = headers: client times out"
like "$out" "^HTTP/1.1 200" "stall = headers: head was sent"
curl -s --max-time 1 -o "$T/sb" "$U/stall-body"; rc=$?
is "$rc" 28 "stall = body: client times out"
is "$(stat -c %s "$T/sb")" 10 "stall-after = 10 body bytes"
out=$(curl -s --max-time 1 -D - "$U/stall-response"); rc=$?
is "$rc|$out" "28|" "stall = response: nothing at all"
t=$("${C[@]}" -o "$T/tr" -w '%{time_total}' "$U/trickle")
is "$(cat "$T/tr")" "0123456789" "trickle: body intact"
check "trickle-ms = 30: ten bytes take >= 0.27 s" awk -v t="$t" 'BEGIN { exit !(t >= 0.27) }'
t=$("${C[@]}" -o "$T/tr" -w '%{time_total}' "$U/trickle-head")
is "$(cat "$T/tr")" "x" "trickle-headers: response intact"
check "trickle-headers: the head (~120 bytes, 4 per 2 ms) takes >= 0.05 s" \
  awk -v t="$t" 'BEGIN { exit !(t >= 0.05) }'
"${C[@]}" -o "$T/d" "$U/drop"; rc=$?
is "$rc" 18 "drop-after: curl sees a partial file"
is "$(stat -c %s "$T/d")" 100 "drop-after = 100 bytes"
"${C[@]}" -o "$T/r" "$U/reset"; rc=$?
is "$rc" 56 "reset-after: connection reset"
"${C[@]}" -o /dev/null "$U/garbage"; rc=$?
isnt "$rc" 0 "garbage: curl fails"
"${C[@]}" -o /dev/null "$U/badchunk"; rc=$?
is "$rc" 56 "bad-chunk: curl rejects the chunk size"
"${C[@]}" --raw -o "$T/bc" "$U/badchunk"
like "$(tail -c 6 "$T/bc" | od -c | head -1)" "z   z" "bad-chunk: invalid size line after a good chunk"
hdrs=$("${C[@]}" -D - -o /dev/null "$U/bighdr")
is "$(printf %s "$hdrs" | grep '^X-Kts-Filler' | tr -d '\r' | wc -c)" 5015 "header-bytes = 5000"
is "$("${C[@]}" -D - -o /dev/null "$U/manyhdr" | grep -c '^X-Kts-H')" 50 "header-count = 50"
"${C[@]}" -o "$T/l" "$U/lie"; rc=$?
is "$rc|$(cat "$T/l")" "18|only this" "content-length-lie: partial file"
"${C[@]}" --compressed -o /dev/null "$U/badgz"; rc=$?
is "$rc" 61 "bad-gzip: curl cannot decode"
hdrs=$("${C[@]}" -D - -o /dev/null "$U/redir")
like "$hdrs" "^HTTP/1.1 302" "redirect: 302 by default"
like "$hdrs" "Location: http://127.0.0.1:$KTS_PORT/" "redirect: {port} expanded"
like "$("${C[@]}" -D - -o /dev/null "$U/moved")" "^HTTP/1.1 301.*Location: /" "redirect with status = 301"
is "$("${C[@]}" "$U/raw")" "hi" "raw response"
"${C[@]}" -o /dev/null "$U/badstatus"; rc=$?
isnt "$rc" 0 "status-line: bad status line rejected by curl"
is "$(curl -s --max-time 10 "$U/endless" | head -c 3000000 | wc -c)" 3000000 "endless body keeps coming"
like "$("${C[@]}" -I "$U/giga")" $'Content-Length: 1073741824\r' "1 GiB body announced (HEAD)"
is "$("${C[@]}" "$U/nolen")" "until close" "no-length: body ends at close"
is "$("${C[@]}" -L --max-redirs 200 -o /dev/null -w '%{http_code} %{num_redirects}' "$U/chain/0")" "404 101" \
  "redirect chain: /chain/0 .. /chain/100, then 404"
"${C[@]}" -L --max-redirs 5 -o /dev/null "$U/loop"; rc=$?
is "$rc" 47 "redirect loop: {path}"
like "$("${C[@]}" "$U/cal/a/1")" 'href="/cal/a/1/0".*href="/cal/a/1/1"' "calendar trap: links below the path"
"${C[@]}" -o /dev/null "$U/resetat"; rc=$?
is "$rc" 56 "reset-at: reset inside the status line"
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'GET /dropat HTTP/1.1\r\nHost: x\r\n\r\n' >&"$s"
is "$(timeout 10 cat <&"$s" | wc -c)" 20 "drop-at = 20: 20 bytes, then close"; exec {s}<&-
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'GET /nulhdr HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&"$s"
timeout 10 cat <&"$s" >"$T/nul"; exec {s}<&-
is "$(grep -a '^X-Bin' "$T/nul" | od -An -c | tr -s ' ')" " X - B i n : a \\0 b 377 \\r \\n" \
  "header with NUL and 0xff bytes"

# ---- connections ------------------------------------------------------------
before=$(wc -l <"$T/req.log")
"${C[@]}" -o /dev/null -o /dev/null "$U/" "$U/file"
new=$(tail -n +$((before + 1)) "$T/req.log")
is "$(printf '%s\n' "$new" | cut -d' ' -f1 | sort -u | wc -l)" 1 "keep-alive: two requests, one connection"
like "$new" "r=2 GET /file" "keep-alive: second request numbered r=2"
before=$(wc -l <"$T/req.log")
hdrs=$("${C[@]}" -D - -o /dev/null -o /dev/null "$U/close" "$U/")
like "$hdrs" $'Connection: close\r' "keep-alive = 0: Connection: close"
new=$(tail -n +$((before + 1)) "$T/req.log")
is "$(printf '%s\n' "$new" | cut -d' ' -f1 | sort -u | wc -l)" 2 "keep-alive = 0: next request on a new connection"

# pipelining: two requests in one write, answered in order
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'GET /file HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&"$s"
resp=$(timeout 10 cat <&"$s"); exec {s}<&-
like "$resp" "file body.*HTTP/1.1 200 OK.*hello" "pipelined requests answered in order"
# HTTP/1.0 gets no chunked framing
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'GET /chunk HTTP/1.0\r\n\r\n' >&"$s"
timeout 10 cat <&"$s" | tr -d '\r' >"$T/h10"; exec {s}<&-
unlike "$(cat "$T/h10")" "Transfer-Encoding" "HTTP/1.0: no chunked"
is "$(sed '1,/^$/d' "$T/h10" | wc -c)" 5000 "HTTP/1.0: close-delimited body"
# bad requests
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'NOT HTTP AT ALL\r\n\r\n' >&"$s"
resp=$(timeout 10 cat <&"$s"); exec {s}<&-
like "$resp" "^HTTP/1.1 400" "garbage request: 400 then close"
big=$(head -c 70000 /dev/zero | tr '\0' a)
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
printf 'GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n' "$big" >&"$s"
resp=$(timeout 10 cat <&"$s"); exec {s}<&-
like "$resp" "^HTTP/1.1 431" "oversized request header: 431"

# hostile clients: random bytes, then a truncated request, on 30 connections
for i in $(seq 30); do
  exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
  if [ $((i % 2)) = 0 ]; then head -c 3000 /dev/urandom >&"$s"; else printf 'GET /gen HTTP/1.1\r\nHost: x\r\nX-' >&"$s"; fi
  exec {s}<&-
done
is "$("${C[@]}" "$U/")" "hello" "server unharmed by hostile clients"

# the request log
"${C[@]}" -o /dev/null -A 'probe/1.0' -H 'If-None-Match: "abc"' \
  -H 'If-Modified-Since: Tue, 15 Nov 1994 12:45:26 GMT' -H 'Accept-Encoding: gzip' "$U/etag"
last=$(tail -1 "$T/req.log")
like "$last" '^c=[0-9]+ r=1 GET /etag HTTP/1.1' "log: connection, request number, method, target"
like "$last" 'User-Agent: probe/1.0' "log: User-Agent"
like "$last" 'If-None-Match: "abc"' "log: If-None-Match"
like "$last" 'If-Modified-Since: Tue, 15 Nov 1994' "log: If-Modified-Since"
like "$last" 'Accept-Encoding: gzip' "log: Accept-Encoding"

# concurrency: 200 requests over 40 parallel clients
seq 200 | xargs -P 40 -I{} curl -s --max-time 20 -o /dev/null -w '%{http_code}\n' "$U/gen" >"$T/par"
is "$(grep -c '^200$' "$T/par")" 200 "200 concurrent requests answered"
# 300 connections open at once (curl --parallel), 1000 requests
for i in $(seq 1000); do printf 'url = "%s/p/%d"\noutput = /dev/null\n' "$U" $((i % 20)); done >"$T/many.cfg"
n0=$(wc -l <"$T/req.log")
curl -s --max-time 60 --parallel --parallel-immediate --parallel-max 300 -K "$T/many.cfg" \
  -w '%{http_code}\n' >"$T/many.out" 2>/dev/null
is "$(grep -c '^200$' "$T/many.out")" 1000 "1000 requests over up to 300 parallel connections"
is "$(($(wc -l <"$T/req.log") - n0))" 1000 "each logged once"
check "parallel requests used many connections" \
  test "$(tail -n 1000 "$T/req.log" | cut -d' ' -f1 | sort -u | wc -l)" -gt 50

# ---- clock control ----------------------------------------------------------
# a client stalled on an open connection: its head arrives on a fifo.
# Opened read-write: curl may open the -D file, close it and open it
# again, and a read-only end would see end-of-file in between (1 run in 4).
mkfifo "$T/stall.fifo"
curl -s --max-time 30 -D "$T/stall.fifo" -o /dev/null "$U/stall-headers" &
_helpers+=("$!")
exec {sf}<>"$T/stall.fifo"
read -r -t 10 -u "$sf" line
like "$line" "^HTTP/1.1 200" "stalled client has its head"
kts_stop; is "$?" 0 "SIGTERM: kts exits 0 with a connection open"
exec {sf}<&-

kts_start "$T/routes.ini" --frozen --start-ms 0 --keepalive-timeout-ms 200 --keepalive-requests 2 \
  --log "$T/req2.log" || bail "kts (frozen) did not start"
U=$KTS_URL
"${C[@]}" -o /dev/null -o /dev/null -o /dev/null "$U/" "$U/" "$U/"
is "$(cut -d' ' -f1,2 "$T/req2.log" | tr '\n' ' ')" "c=1 r=1 c=1 r=2 c=2 r=1 " \
  "--keepalive-requests 2: third request on a new connection"
is "$("${C[@]}" "$U/_kts/time")" 0 "frozen clock starts at --start-ms"
t1=$(etag_of "$U/timed"); b1=$(grep -o 'version [0-9]\{10\}' "$T/eb")
is "$b1" "version 0000000000" "change-every-ms: version 0 at time 0"
"${C[@]}" -o /dev/null "$U/_kts/advance?ms=999"
is "$(etag_of "$U/timed")" "$t1" "change-every-ms: same version before the period ends"
is "$("${C[@]}" "$U/_kts/advance?ms=1")" 1000 "advance moves the clock"
t2=$(etag_of "$U/timed"); b2=$(grep -o 'version [0-9]\{10\}' "$T/eb")
isnt "$t2" "$t1" "change-every-ms: new ETag after 1000 ms"
is "$b2" "version 0000000001" "change-every-ms: version 1"
lm=$("${C[@]}" -D - -o /dev/null "$U/timed" | tr -d '\r' | sed -n 's/^Last-Modified: //p')
is "$lm" "Thu, 01 Jan 1970 00:00:01 GMT" "change-every-ms: Last-Modified follows the version"
is "$(code -H "If-Modified-Since: $lm" "$U/timed")" 304 "If-Modified-Since on a timed route"
is "$("${C[@]}" "$U/_kts/set?ms=5000")" 5000 "set moves the clock"
like "$("${C[@]}" "$U/_kts/stats")" "requests [0-9]+" "stats"
"${C[@]}" -o /dev/null "$U/timed"
like "$("${C[@]}" "$U/_kts/paths")" "/timed count=[0-9]+ version=5" "paths: ground truth per path"
# keep-alive idle timeout: the server closes an idle connection itself
exec {s}<>"/dev/tcp/127.0.0.1/$KTS_PORT"
timeout 10 cat <&"$s" >/dev/null; rc=$?; exec {s}<&-
is "$rc" 0 "idle keep-alive connection closed by the server"
kts_stop; is "$?" 0 "second server stops cleanly"

# ---- TLS ------------------------------------------------------------------------
if make_cert "$T/cert"; then
  kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" || bail "kts --tls did not start"
  TU="https://127.0.0.1:$KTS_PORT"
  is "$(curl -s -k --max-time 10 "$TU/")" "hello" "HTTPS"
  is "$(curl -s --cacert "$T/cert/cert.pem" --max-time 10 "$TU/")" "hello" "HTTPS verifies with the test cert"
  like "$(curl -s -k -v --max-time 10 -o /dev/null "$TU/" 2>&1)" "ALPN: server accepted http/1.1" "ALPN http/1.1"
  is "$(curl -s -k --max-time 10 "$TU/gen" | wc -c)" 3000 "HTTPS body"
  is "$(curl -s -k --max-time 20 "$TU/giga" | head -c 5000000 | wc -c)" 5000000 "HTTPS large body streams"
  curl -s -k --max-time 10 -o /dev/null "$TU/reset"; rc=$?
  is "$rc" 56 "HTTPS reset-after"
  kts_stop; is "$?" 0 "TLS server stops cleanly"
  kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode garbage || bail "no start"
  curl -s -k --max-time 5 -o /dev/null "https://127.0.0.1:$KTS_PORT/"; rc=$?
  is "$rc" 35 "--tls-mode garbage: handshake fails"
  kts_stop
  kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode stall || bail "no start"
  curl -s -k --max-time 1 -o /dev/null "https://127.0.0.1:$KTS_PORT/"; rc=$?
  is "$rc" 28 "--tls-mode stall: handshake times out"
  kts_stop
else
  skip "openssl cannot make a certificate" "TLS"
fi

# ---- IPv6 -----------------------------------------------------------------------
if kts_start "$T/routes.ini" --host ::1 2>/dev/null; then
  is "$KTS_ADDR" "[::1]:$KTS_PORT" "IPv6 listening line"
  is "$(curl -s -g --max-time 10 "http://[::1]:$KTS_PORT/")" "hello" "IPv6 request"
  kts_stop
else
  skip "no IPv6 loopback" "IPv6"
fi

done_testing
