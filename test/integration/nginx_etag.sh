#!/usr/bin/env bash
# `kria fetch` validators against a real nginx (its own instance on an
# ephemeral port): fetch a file, then If-None-Match with nginx's ETag and
# If-Modified-Since with its Last-Modified answer 304; after the file
# changes both answer 200 with the new content. Also gzip from nginx and
# HTTPS with a self-signed certificate.
. "$(dirname "$0")/lib.sh"

kria_has_fetch || bail "kria fetch is not built ($KRIA)"
command -v nginx >/dev/null || { skip "nginx not installed" "nginx validators"; done_testing; }

mkdir -p "$T/www"
head -c 20000 /dev/urandom | base64 >"$T/www/page.txt"
# an mtime in the past, so a rewrite within the same second still moves it
touch -d '2001-02-03 04:05:06 UTC' "$T/www/page.txt"
nginx_start "$T/www" --gzip || bail "nginx did not start"
U="$NGINX_URL/page.txt"

kfetch --headers "$U"
is "$RC|$(field status)" "0|200" "first fetch: 200"
is "$(field sha1)" "$(sha1_b32 "$T/www/page.txt")" "sha1 of the file"
etag=$(field ETag)
lm=$(field Last-Modified)
# nginx weakens its ETag when it gzips (W/"mtime-size")
like "$etag" '^(W/)?"[0-9a-f]+-[0-9a-f]+"$' "nginx sent an ETag"
is "$lm" "Sat, 03 Feb 2001 04:05:06 GMT" "nginx sent the file's Last-Modified"
like "$(field Content-Encoding)" '^gzip$' "nginx gzipped the text file for kria"
isnt "$(field payload-sha1)" "$(field sha1)" "gzip: payload-sha1 differs from the content sha1"

kfetch --if-none-match "$etag" "$U"
is "$RC|$(field status)|$(field bytes)" "0|304|0" "If-None-Match with nginx's ETag: 304"
kfetch --if-modified-since "$lm" "$U"
is "$RC|$(field status)|$(field bytes)" "0|304|0" "If-Modified-Since with nginx's Last-Modified: 304"
kfetch --if-modified-since "Fri, 02 Feb 2001 04:05:06 GMT" "$U"
is "$(field status)" 200 "older If-Modified-Since: 200"
kfetch --if-none-match '"0-0"' "$U"
is "$(field status)" 200 "other ETag: 200"

# change the file: same size, new bytes, new mtime
head -c 20000 /dev/urandom | base64 >"$T/www/page.txt"
touch -d '2002-03-04 05:06:07 UTC' "$T/www/page.txt"
kfetch --headers --if-none-match "$etag" "$U"
is "$RC|$(field status)" "0|200" "changed file: old ETag gets 200"
is "$(field sha1)" "$(sha1_b32 "$T/www/page.txt")" "changed file: new content"
isnt "$(field ETag)" "$etag" "changed file: new ETag"
kfetch --if-modified-since "$lm" "$U"
is "$(field status)" 200 "changed file: old Last-Modified gets 200"
kfetch --abort-on-headers "$U"
is "$RC|$(field status)|$(field aborted)" "0|200|yes" "--abort-on-headers stops after the headers"

kfetch "$NGINX_URL/missing.txt"
is "$RC|$(field status)" "0|404" "nginx 404 is a response"

# HTTPS through nginx with a self-signed certificate
nginx_start "$T/www" --tls || bail "nginx with TLS did not start"
kfetch --headers "$NGINX_URL/page.txt"
is "$RC|$(field status)" "0|200" "HTTPS nginx: 200 (verify records by default)"
etag=$(field ETag)
kfetch --if-none-match "$etag" "$NGINX_URL/page.txt"
is "$(field status)" 304 "HTTPS nginx: If-None-Match 304"

done_testing
