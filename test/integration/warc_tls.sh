#!/usr/bin/env bash
# What tls-verify = record records lands in the WARC (issue 21): over
# HTTPS (kts --tls, a self-signed certificate) each new TLS connection
# leaves one metadata record (application/warc-fields, WARC-Concurrent-To
# the response or revisit record of its first visit) with the protocol
# version, whether the session was resumed, the verification result and
# error, and the server's certificate (base64 DER, the leaf first), read
# back with warcio.js:
#  - kts closing after every response: a record per visit, the first
#    handshake full, the later ones resuming its session (as a revisit
#    connection resumed);
#    kria fetch --input counts them, and resumes none with --tls-sessions 0;
#  - kts keeping the connection: one record for all the visits on it;
#  - tls-verify = off: none.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
if ! command -v node >/dev/null || [ ! -f "$HERE/node_modules/warcio/package.json" ]; then
  skip "warcio.js not installed (npm ci in test/integration)" "TLS records"
  done_testing
fi
make_cert "$T/cert" || bail "no certificate"
LEAF=$(openssl x509 -in "$T/cert/cert.pem" -outform DER | sha256sum | cut -d' ' -f1)

cat >"$T/site.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <html><body><a href="/a">a</a> <a href="/b">b</a></body></html>

[route "/a"]
body = page a

[route "/b"]
body = page b
EOF2
printf '127.0.0.1 a.test\n' >"$T/hosts"

# crawl NAME [CONF LINES...]: one snapshot crawl of https://a.test/ into
# $T/NAME, then its TLS records in $T/NAME.tls (warctls.mjs)
crawl() {
  local name=$1; shift
  echo "https://a.test:$KTS_PORT/" >"$T/$name.seeds"
  { loopback_conf "$T/$name.seeds" "$T/$name"
    printf '[dns]\nhosts-file = %s\n[warc]\ncompress = none\n' "$T/hosts"
    printf '%s\n' "$@"; } >"$T/$name.conf"
  timeout 60 "$KRIA" crawl -c "$T/$name.conf" 2>"$T/$name.err"
  is "$?" 0 "$name: the crawl ends, exit 0"
  unlike "$(cat "$T/$name.err")" "runtime error|Sanitizer|BUG|assert" "$name: no sanitizer report"
  (cd "$HERE" && node warctls.mjs "$T/$name"/warcs/*.warc) >"$T/$name.tls" 2>"$T/$name.tls.err" ||
    not_ok "$name: warctls.mjs reads the files: $(cat "$T/$name.tls.err")"
}
col() { awk -F'\t' -v c="$1" '{ print $c }' "$2"; }

# ---- a connection a visit ---------------------------------------------------------
kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --keepalive-requests 1 \
  --log "$T/kts1.log" || bail "kts --tls did not start"
crawl each
VISITS=$(awk '$2 == 200 || $2 == 404' "$T/each/logs/crawl.log" | wc -l)
CONNS=$(grep -o 'c=[0-9]*' "$T/kts1.log" | sort -u | wc -l)
is "$VISITS" 4 "each: robots.txt, /, /a, /b visited"
is "$CONNS" 4 "each: four connections (kts closes after each response)"
is "$(wc -l <"$T/each.tls")" "$CONNS" "each: one TLS record a connection"
is "$(col 2 "$T/each.tls" | sort -u)" "application/warc-fields" "each: Content-Type application/warc-fields"
is "$(col 3 "$T/each.tls" | sort -u)" "response" "each: WARC-Concurrent-To names the visit's response record"
is "$(awk -F'\t' '$1 != $4' "$T/each.tls" | wc -l)" 0 "each: ... of the same URI"
is "$(col 5 "$T/each.tls" | sort -u)" "TLSv1.3" "each: the protocol version"
is "$(col 7 "$T/each.tls" | sort -u)" "failed" "each: the verification result (self-signed)"
is "$(col 8 "$T/each.tls" | sort -u)" 18 "each: its X509 code"
like "$(col 9 "$T/each.tls" | sort -u)" "self-signed" "each: its error string"
is "$(col 11 "$T/each.tls" | sort -u)" "$LEAF" "each: the server's certificate, DER as served"
is "$(head -1 "$T/each.tls" | cut -f6)" false "each: the first handshake is full"
is "$(tail -n +2 "$T/each.tls" | col 6 /dev/stdin | sort -u)" true \
  "each: the later connections resume its session"
# kria fetch's list mode counts them; --tls-sessions 0 keeps none
for i in 1 2 3 4; do echo "https://localhost:$KTS_PORT/a?$i"; done >"$T/urls"
kfetch --resolve "localhost:$KTS_PORT:127.0.0.1" --input "$T/urls" --connections 1
is "$(field tls-handshakes)/$(field tls-resumed)" 4/3 "fetch: four connections, three resumed"
kfetch --resolve "localhost:$KTS_PORT:127.0.0.1" --input "$T/urls" --connections 1 --tls-sessions 0
is "$(field tls-handshakes)/$(field tls-resumed)" 4/0 "fetch --tls-sessions 0: none resumed"
# four at once: the host's first connection goes alone, the others
# after it, with its session
kfetch --resolve "localhost:$KTS_PORT:127.0.0.1" --input "$T/urls" --connections 4
is "$(field tls-handshakes)/$(field tls-resumed)" 4/3 "fetch --connections 4: the other three resume the first's session"
kts_stop

# ---- one connection -----------------------------------------------------------------
kts_start "$T/site.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --log "$T/kts2.log" ||
  bail "kts --tls did not start"
crawl kept
is "$(grep -o 'c=[0-9]*' "$T/kts2.log" | sort -u | wc -l)" 1 "kept: one connection"
is "$(wc -l <"$T/kept.tls")" 1 "kept: one TLS record for its four visits"
is "$(cut -f4 "$T/kept.tls")" "https://a.test:$KTS_PORT/robots.txt" "kept: with the connection's first visit"
# kria's own reader takes the file with it (the record's block is read
# back by kr_warc_reader in test/unit/test_archive.c)
"$KRIA" cdx "$T/kept"/warcs/*.warc >"$T/kept.cdx" 2>"$T/kept.cdx.err"
is "$?" 0 "kept: kria cdx reads the WARC"
# ... and lists the visits, not the TLS record: as cdxj-indexer, a
# metadata (or resource) record of type application/warc-fields is left
# out, one of another type is listed
is "$(wc -l <"$T/kept.cdx")" 4 "kept: kria cdx lists the four visits"
is "$(grep -c 'warc-fields' "$T/kept.cdx")" 0 "kept: ... and not the application/warc-fields TLS record"
note='a note on this page'
{ cat "$T/kept"/warcs/*.warc
  printf 'WARC/1.1\r\nWARC-Type: metadata\r\nWARC-Record-ID: <urn:uuid:6a0e1bd6-8c0b-4c4e-9a1d-5c7c3e1e2f10>\r\n'
  printf 'WARC-Date: 2026-11-29T12:00:00Z\r\nWARC-Target-URI: https://a.test:%s/a\r\n' "$KTS_PORT"
  printf 'Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n' "${#note}" "$note"
} >"$T/noted.warc"
"$KRIA" cdx "$T/noted.warc" >"$T/noted.cdx" 2>"$T/noted.cdx.err"
is "$?|$(wc -l <"$T/noted.cdx")" "0|5" "kria cdx lists a metadata record of another type"
like "$(grep '"text/plain"' "$T/noted.cdx")" '"mime": "text/plain"' "... with its Content-Type as mime"

crawl off "[http]" "tls-verify = off"
is "$(wc -l <"$T/off.tls")" 0 "off: no TLS record"
kts_stop
done_testing
