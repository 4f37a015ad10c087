#!/usr/bin/env bash
# `kria fetch` against hostile and broken servers: every malformed response
# must end in exit 2 with `kria: error: <kind>: <detail>` on stderr — the
# right kind, no crash, no hang (each fetch is bounded by short timeouts
# and by lib.sh's 60 s cap). A few cases also run under valgrind, which
# must report no error and no leak.
. "$(dirname "$0")/lib.sh"

kria_has_fetch || bail "kria fetch is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/ok"]
body = fine\n

[route "/bad-status"]
status-line = HTTP/1.1 abc Broken
body = x

[route "/not-http"]
raw = SMTP ready\r\n\r\n

[route "/garbage"]
garbage = 1

[route "/empty-reply"]
raw =

[route "/bad-chunk"]
bad-chunk = 1
body-size = 5000

[route "/header-overflow"]
header-bytes = 100000
body = x

[route "/header-flood"]
header-count = 20000
body = x

[route "/bad-gzip"]
bad-gzip = 1
body-size = 5000

[route "/bad-gzip-chunked"]
bad-gzip = 1
chunked = 1
body-size = 5000

[route "/cl-lie"]
content-length-lie = 100000
body-size = 1000

[route "/drop"]
drop-after = 500
body-size = 10000

[route "/drop-headers"]
raw = HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Half:

[route "/reset"]
reset-after = 2000
body-size = 100000

[route "/reset-start"]
raw =
reset-after = 0

[route "/reset-headers"]
reset-at = 30
body = x

[route "/drop-status"]
drop-at = 8
body = x

[route "/stall-headers"]
stall = headers
body-size = 1000

[route "/stall-body"]
stall = body
body-size = 10000

[route "/stall-response"]
stall = response

[route "/delay"]
delay-ms = 3000
body = late\n

[route "/trickle"]
body-size = 1000
trickle-ms = 50

[route "/endless"]
body-size = infinite

[route "/bomb"]
body-size = 64M
fill = zero
gzip = force
EOF
kts_start "$T/routes.ini" --log "$T/req.log" || bail "kts did not start"
U=$KTS_URL
TO=(--timeout-connect 2000 --timeout-first-byte 2000 --timeout-idle 2000 --timeout-total 20000)

# bad PATH_OR_URL KIND DESC [fetch options]: exit 2, stderr names KIND
bad() {
  local target=$1 kind=$2 desc=$3; shift 3
  [[ $target == /* ]] && target="$U$target"
  kfetch "${TO[@]}" "$@" "$target"
  is "$RC" 2 "$desc: exit 2"
  # a line of its own; log lines may come before it
  like "$ERR" "(^|"$'\n'")kria: error: $kind: " "$desc: kind $kind"
  unlike "$OUT" "status: " "$desc: no result printed"
}

# Sanity: the server and the options work for a good page.
kfetch "${TO[@]}" "$U/ok"
is "$RC|$(field status)" "0|200" "good page with short timeouts"

bad /bad-status protocol "bad status line"
bad /not-http protocol "not HTTP at all"
bad /garbage protocol "random bytes"
bad /bad-chunk protocol "invalid chunk size"
bad /header-overflow header-too-big "one 100 KB header"
bad /header-flood header-too-big "20,000 headers"
bad /header-overflow header-too-big "header limit option" --max-header 4096
bad /bad-gzip content-decoding "invalid gzip"
bad /bad-gzip-chunked content-decoding "invalid gzip, chunked"
bad /cl-lie truncated "Content-Length larger than the body"
bad /drop truncated "connection closed mid-body"
bad /drop-headers truncated "connection closed mid-header"
bad /reset conn-reset "reset mid-body"
bad /reset-start conn-reset "reset before any byte"
bad /reset-headers conn-reset "reset inside the headers"
bad /drop-status "(truncated|protocol)" "closed inside the status line"
bad /empty-reply empty-reply "connection closed without a reply"
bad /stall-headers idle-timeout "stall after the headers" --timeout-idle 300
bad /stall-body idle-timeout "stall mid-body" --timeout-idle 300
bad /stall-response first-byte-timeout "no response at all" --timeout-first-byte 300
bad /delay first-byte-timeout "response later than the first-byte timeout" --timeout-first-byte 300
bad /trickle total-timeout "one byte per 50 ms (slowloris)" --timeout-total 500
bad /endless total-timeout "endless body" --timeout-total 500 --max-body 100000000000
bad /bomb decompression-ratio "gzip bomb (64 MiB of zeros)"
bad /endless body-too-big "body over --max-body with --body-limit-error" --max-body 100000 --body-limit-error

kfetch "${TO[@]}" --max-body 100000 "$U/endless"
is "$RC|$(field status)|$(field truncated)" "0|200|length" "--max-body truncates and marks"
is "$(field bytes)" 100000 "--max-body: exactly the limit kept"

# Nothing listening: take a port kts had, after kts is gone.
kts_start "$T/routes.ini" || bail "second kts did not start"
closed=$KTS_PORT
kts_stop
bad "http://127.0.0.1:$closed/" conn-refused "connection refused"

# NXDOMAIN from our own name server (no internet needed).
if dnsmasq_start --local=/invalid/ --address=/known.test/127.0.0.1; then
  bad "http://no-such-host.invalid/" dns-nxdomain "NXDOMAIN" --dns-server "127.0.0.1:$DNS_PORT"
  kfetch "${TO[@]}" --dns-server "127.0.0.1:$DNS_PORT" "http://known.test:$closed/"
  is "$RC" 2 "name resolved through our DNS, then refused"
  like "$ERR" "conn-refused" "DNS answer used for the connection"
else
  skip "dnsmasq unavailable" "NXDOMAIN"
fi

bad "http://[::1" bad-url "invalid URL" 2>/dev/null
kfetch "ftp://127.0.0.1/x"
isnt "$RC" 0 "unsupported scheme refused"

# TLS failures
make_cert "$T/cert" || bail "openssl cannot make a certificate"
kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode garbage ||
  bail "kts --tls-mode garbage did not start"
bad "https://127.0.0.1:$KTS_PORT/ok" tls "TLS server answers garbage"
kts_stop
kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --tls-mode stall ||
  bail "kts --tls-mode stall did not start"
bad "https://127.0.0.1:$KTS_PORT/ok" connect-timeout "TLS handshake never answered" --timeout-connect 300
kts_stop
kts_start "$T/routes.ini" || bail "kts did not start"
bad "https://127.0.0.1:$KTS_PORT/ok" tls "HTTPS to a plain HTTP server"
kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" || bail "kts --tls did not start"
TLS_PORT=$KTS_PORT
kfetch "${TO[@]}" "http://127.0.0.1:$TLS_PORT/ok"
is "$RC" 2 "plain HTTP to a TLS server fails"
like "$ERR" "(^|"$'\n'")kria: error: (protocol|empty-reply): " "plain HTTP to a TLS server: a typed error"

# The same cases under valgrind: no invalid access, no leak.
if ! command -v valgrind >/dev/null; then
  skip "valgrind not installed" "valgrind runs"
elif grep -qa __asan_init "$KRIA"; then
  skip "kria is built with ASan (SANITIZE=1), which valgrind cannot run" "valgrind runs"
else
  kts_start "$T/routes.ini" || bail "kts did not start"
  U=$KTS_URL
  vg() {
    local desc=$1; shift
    timeout 120 valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
      --error-exitcode=99 -q "$KRIA" fetch --allow-private "${TO[@]}" "$@" >"$T/vg.out" 2>"$T/vg.err"
    local rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then ok "valgrind: $desc (exit $rc)"; else
      not_ok "valgrind: $desc"; diag "exit $rc"; diag "$(head -30 "$T/vg.err")"
    fi
  }
  vg "good page" "$U/ok"
  vg "gzip bomb" "$U/bomb"
  vg "bad chunk" "$U/bad-chunk"
  vg "bad gzip" "$U/bad-gzip"
  vg "reset mid-body" "$U/reset"
  vg "garbage" "$U/garbage"
  vg "header overflow" "$U/header-overflow"
  vg "stall (idle timeout)" --timeout-idle 300 "$U/stall-body"
  vg "connection refused" "http://127.0.0.1:$closed/"
  vg "HTTPS self-signed" "https://127.0.0.1:$TLS_PORT/ok"
  vg "HTTPS garbage to plain server" "https://127.0.0.1:$KTS_PORT/ok"
fi

done_testing
