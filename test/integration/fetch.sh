#!/usr/bin/env bash
# `kria fetch` happy paths against kts: plain, chunked, gzip, deflate,
# conditionals (304), what the request carries (User-Agent,
# Accept-Encoding, validators), redirects reported not followed, --resolve,
# --headers, IPv6, and HTTPS with a self-signed certificate (default
# verification mode: record the result, do not fail). Digests are checked
# against sha1sum of what curl receives, in base32.
. "$(dirname "$0")/lib.sh"

kria_has_fetch || bail "kria fetch is not built ($KRIA)"

printf 'fixture file\n' >"$T/file.txt"
cat >"$T/routes.ini" <<'EOF'
[route "/plain"]
body-size = 5000
seed = 3

[route "/empty"]

[route "/chunked"]
body-size = 7000
chunked = 1
chunk-size = 1000

[route "/gzip"]
body-size = 40000
gzip = 1

[route "/gzip-chunked"]
body-size = 40000
gzip = 1
chunked = 1

[route "/deflate"]
body-size = 30000
deflate = 1

[route "/rawdeflate"]
body-size = 30000
deflate = raw

[route "/big"]
body-size = 3M
seed = 9

[route "/etag"]
body = validated\n
etag = "v1"
last-modified = Tue, 15 Nov 1994 12:45:26 GMT

[route "/every"]
change-every = 1
etag = auto
body-size = 1000

[route "/missing"]
status = 404
body = no such page\n

[route "/redirect"]
redirect = /plain

[route "/close"]
keep-alive = 0
body = closing\n

[route "/nolen"]
no-length = 1
body = close-delimited\n

[route "/file"]
body-file = file.txt
EOF
kts_start "$T/routes.ini" --log "$T/req.log" || bail "kts did not start"
U=$KTS_URL
C=(curl -s --max-time 20)

# expect_fetch PATH DESC: status 200, bytes and sha1 of the decoded content
# equal to curl's identity body, payload-sha1 equal to the raw payload.
expect_fetch() {
  local path=$1 desc=$2
  "${C[@]}" -o "$T/ident" "$U$path"
  kfetch "$U$path"
  is "$RC" 0 "$desc: exit 0"
  is "$(field status)" 200 "$desc: status"
  is "$(field bytes)" "$(stat -c %s "$T/ident")" "$desc: bytes of the decoded content"
  is "$(field sha1)" "$(sha1_b32 "$T/ident")" "$desc: sha1 of the decoded content"
  like "$(field time-ms)" '^[0-9]+$' "$desc: time-ms"
}

expect_fetch /plain "plain"
is "$(field payload-sha1)" "$(field sha1)" "plain: payload-sha1 = sha1 without coding"
expect_fetch /file "body-file"
expect_fetch /chunked "chunked"
is "$(field payload-sha1)" "$(sha1_b32 "$T/ident")" "chunked: payload-sha1 excludes chunk framing"
expect_fetch /gzip "gzip"
like "$(tail -1 "$T/req.log")" 'Accept-Encoding: [^|]*gzip' "request accepts gzip"
like "$(tail -1 "$T/req.log")" 'Accept-Encoding: [^|]*deflate' "request accepts deflate"
# what kts sent on the wire, still gzip-encoded (curl without --compressed)
"${C[@]}" -H 'Accept-Encoding: gzip' -o "$T/gz" "$U/gzip"
is "$(field payload-sha1)" "$(sha1_b32 "$T/gz")" "gzip: payload-sha1 of the gzip bytes"
is "$(gzip -dc <"$T/gz" | sha1_b32)" "$(field sha1)" "gzip: sha1 equals sha1sum of the gunzipped payload"
expect_fetch /gzip-chunked "gzip + chunked"
expect_fetch /deflate "deflate (zlib)"
expect_fetch /rawdeflate "deflate (raw, no zlib header)"
expect_fetch /big "3 MiB body"
expect_fetch /nolen "close-delimited body"
expect_fetch /close "Connection: close"

kfetch "$U/empty"
is "$RC|$(field status)|$(field bytes)" "0|200|0" "empty body"
is "$(field sha1)" "$(sha1_b32 /dev/null)" "empty body: sha1 of nothing"

kfetch "$U/missing"
is "$RC|$(field status)" "0|404" "404 is a response: exit 0"
is "$(field sha1)" "$(printf 'no such page\n' | sha1_b32)" "404 body digested"

n0=$(wc -l <"$T/req.log")
kfetch "$U/redirect"
is "$RC|$(field status)" "0|302" "redirect reported"
is "$(field location)" "/plain" "redirect: location printed"
is "$(($(wc -l <"$T/req.log") - n0))" 1 "redirect not followed"

like "$(tail -1 "$T/req.log")" 'User-Agent: kria/' "User-Agent names kria"
kfetch --user-agent 'probe/2 (+http://example.test/)' "$U/plain"
like "$(tail -1 "$T/req.log")" 'User-Agent: probe/2 \(\+http://example.test/\)' "--user-agent"

# ---- conditionals ----------------------------------------------------------
kfetch --headers "$U/etag"
is "$(field status)" 200 "etag route: 200 first"
is "$(field ETag)" '"v1"' "--headers prints the ETag"
is "$(field Last-Modified)" "Tue, 15 Nov 1994 12:45:26 GMT" "--headers prints Last-Modified"
kfetch --if-none-match '"v1"' "$U/etag"
is "$RC|$(field status)|$(field bytes)" "0|304|0" "If-None-Match: 304, no body"
like "$(tail -1 "$T/req.log")" 'If-None-Match: "v1"' "If-None-Match sent as given"
kfetch --if-none-match '"v0"' "$U/etag"
is "$(field status)" 200 "stale If-None-Match: 200"
kfetch --if-modified-since 'Tue, 15 Nov 1994 12:45:26 GMT' "$U/etag"
is "$RC|$(field status)" "0|304" "If-Modified-Since: 304"
like "$(tail -1 "$T/req.log")" 'If-Modified-Since: Tue, 15 Nov 1994 12:45:26 GMT' "If-Modified-Since sent"
kfetch --if-modified-since 'Mon, 14 Nov 1994 12:45:26 GMT' "$U/etag"
is "$(field status)" 200 "older If-Modified-Since: 200"
kfetch --headers "$U/every"
e1=$(field ETag)
kfetch --if-none-match "$e1" "$U/every"
is "$(field status)" 200 "changed page: its old ETag gets 200"

# ---- addressing ------------------------------------------------------------
kfetch --resolve "demo.test:$KTS_PORT:127.0.0.1" "http://demo.test:$KTS_PORT/plain"
is "$RC|$(field status)" "0|200" "--resolve host:port:addr"
like "$(tail -1 "$T/req.log")" "Host: demo.test:$KTS_PORT" "--resolve keeps the Host header"
kfetch "http://localhost:$KTS_PORT/plain"
is "$RC|$(field status)" "0|200" "localhost resolves"
kts_stop; is "$?" 0 "kts stopped cleanly"

if kts_start "$T/routes.ini" --host ::1 2>/dev/null; then
  kfetch "http://[::1]:$KTS_PORT/plain"
  is "$RC|$(field status)" "0|200" "IPv6 literal"
  like "$(field peer)" '^\[::1\]:' "IPv6 peer printed"
  kts_stop
else
  skip "no IPv6 loopback" "IPv6 literal"
fi

# ---- HTTPS -----------------------------------------------------------------
make_cert "$T/cert" || bail "openssl cannot make a certificate"
kts_start "$T/routes.ini" --tls "$T/cert/cert.pem" "$T/cert/key.pem" --log "$T/tls.log" ||
  bail "kts --tls did not start"
TU="https://127.0.0.1:$KTS_PORT"
"${C[@]}" -k -o "$T/ident" "$TU/gzip"
kfetch "$TU/gzip"
is "$RC|$(field status)" "0|200" "HTTPS with a self-signed certificate: default verify records"
is "$(field sha1)" "$(sha1_b32 "$T/ident")" "HTTPS gzip body"
like "$(field tls)" '^TLSv1\.[23] ' "tls version and cipher printed"
isnt "$(field tls-verify)" "ok" "self-signed certificate is recorded as not verified"
kfetch --tls-verify require "$TU/plain"
is "$RC" 2 "--tls-verify require refuses the self-signed certificate"
like "$ERR" "(^|"$'\n'")kria: error: tls-verify: " "--tls-verify require: kind tls-verify"
kfetch --tls-verify require --ca-file "$T/cert/cert.pem" "$TU/plain"
is "$RC|$(field status)|$(field tls-verify)" "0|200|ok" "--ca-file makes it verify"
# The system CAs: a hashed directory is read on demand instead of the
# bundle file, and verifies the same; SSL_CERT_FILE still counts.
mkdir -p "$T/cadir" "$T/otherdir"
cp "$T/cert/cert.pem" "$T/cadir/ours.pem"
make_cert "$T/other" && cp "$T/other/cert.pem" "$T/otherdir/other.pem"
if openssl rehash "$T/cadir" 2>/dev/null && openssl rehash "$T/otherdir" 2>/dev/null; then
  sys_fetch() { env -u SSL_CERT_FILE SSL_CERT_DIR="$1" "${@:2}"; }
  RC=0; sys_fetch "$T/cadir" "$KRIA" fetch --allow-private --tls-verify require "$TU/plain" \
    >"$T/sys.out" 2>&1 || RC=$?
  is "$RC|$(grep -c '^status: 200' "$T/sys.out")" "0|1" "a hashed CA directory (SSL_CERT_DIR) verifies"
  RC=0; sys_fetch "$T/otherdir" "$KRIA" fetch --allow-private --tls-verify require "$TU/plain" \
    >"$T/sys.out" 2>&1 || RC=$?
  is "$RC" 2 "a hashed directory without the CA does not"
  RC=0; SSL_CERT_DIR="$T/otherdir" SSL_CERT_FILE="$T/cert/cert.pem" "$KRIA" fetch --allow-private \
    --tls-verify require "$TU/plain" >"$T/sys.out" 2>&1 || RC=$?
  is "$RC" 0 "SSL_CERT_FILE beside a hashed directory is loaded too"
else
  skip "openssl rehash not available" "system CAs from a hashed directory"
fi
"${C[@]}" -k -o "$T/ident" "$TU/big"
kfetch "$TU/big"
is "$(field sha1)" "$(sha1_b32 "$T/ident")" "HTTPS 3 MiB body"
kts_stop; is "$?" 0 "TLS kts stopped cleanly"

if command -v nginx >/dev/null; then
  mkdir -p "$T/www"
  head -c 100000 /dev/urandom >"$T/www/rand.bin"
  if nginx_start "$T/www" --tls; then
    kfetch "$NGINX_URL/rand.bin"
    is "$RC|$(field status)" "0|200" "HTTPS against nginx"
    is "$(field sha1)" "$(sha1_b32 "$T/www/rand.bin")" "HTTPS nginx body sha1"
  else
    not_ok "nginx with TLS starts"
  fi
else
  skip "nginx not installed" "HTTPS against nginx"
fi

done_testing
