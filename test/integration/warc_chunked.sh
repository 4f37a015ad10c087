#!/usr/bin/env bash
# Chunked responses in WARC (issue 19, item 3). The WARC-Payload-Digest
# is the SHA-1 of the entity (chunk framing removed, WARC 1.1 section 5.9;
# iipc/warc-specifications#22), but readers that hash the bytes after
# the HTTP head as they are (Python warcio's `warcio check`) disagree on
# a response stored as received. A crawl of chunked responses (small,
# gzip, 5 MiB: spilled and written in slices) and a plain one, with
#  - warc.chunked = keep (the default): records as received, the spec's
#    digest (warccheck.mjs recomputes it), the raw reading differs; the
#    warcinfo record states the rule and the mode;
#  - warc.chunked = dechunk: the body stored without its framing, the
#    head's Transfer-Encoding renamed X-Orig-Transfer-Encoding; the
#    payload digest equals both readings and the keep crawl's digest of
#    the same URI (dedupe and revisits agree across modes); a response
#    that was not chunked is stored as before; warccheck.mjs passes.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
if ! command -v node >/dev/null || [ ! -f "$HERE/node_modules/warcio/package.json" ]; then
  skip "warcio.js not installed (npm ci in test/integration)" "chunked responses"
  done_testing
fi

cat >"$T/site.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <html><body><a href="/ch">ch</a> <a href="/chgz">gz</a> <a href="/chbig">big</a> <a href="/plain">plain</a></body></html>

[route "/ch"]
chunked = 1
chunk-size = 500
body-size = 6K

[route "/chgz"]
chunked = 1
gzip = force
body-size = 20K

[route "/chbig"]
content-type = application/octet-stream
chunked = 1
chunk-size = 65536
body-size = 5M

[route "/plain"]
body-size = 3K
EOF2
kts_start "$T/site.ini" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds"

crawl() { # NAME MODE
  loopback_conf "$T/seeds" "$T/$1" >"$T/$1.conf"
  cat >>"$T/$1.conf" <<EOF2
[warc]
chunked = $2
EOF2
  timeout 120 "$KRIA" crawl -c "$T/$1.conf" 2>"$T/$1.err"
  local rc=$?
  is "$rc" 0 "$2: the crawl ends by itself, exit 0"
  unlike "$(cat "$T/$1.err")" "runtime error|Sanitizer|BUG|assert" "$2: no sanitizer report, no assertion"
  is "$(awk '$2 == 200' "$T/$1/logs/crawl.log" | wc -l)" 5 "$2: every page fetched, 200"
  if (cd "$HERE" && node warccheck.mjs "$T/$1"/warcs/*.warc.gz) >"$T/$1.check" 2>&1; then
    ok "$2: warccheck.mjs: records parse, the spec's payload digests recompute"
  else
    not_ok "$2: warccheck.mjs passes"; diag "$(grep -v '^ok ' "$T/$1.check" | head -20)"
  fi
  (cd "$HERE" && node warcdigests.mjs "$T/$1"/warcs/*.warc.gz) >"$T/$1.dig" 2>"$T/$1.dig.err" ||
    not_ok "$2: warcdigests.mjs reads the files: $(cat "$T/$1.dig.err")"
  zcat "$T/$1"/warcs/*.warc.gz | grep -a '^kria-' | tr -d '\r' >"$T/$1.info"
}
# URI's column N of warcdigests.mjs
col() { awk -F'\t' -v u="$KTS_URL$2" -v n="$3" '$1 == u {print $n}' "$T/$1.dig"; }

# ---- keep -------------------------------------------------------------------------
crawl k keep
for p in /ch /chgz /chbig; do
  is "$(col k $p 4)" chunked "keep $p: stored as received (Transfer-Encoding: chunked)"
  isnt "$(col k $p 3)" "$(col k $p 2)" "keep $p: the raw reading differs from the payload digest"
done
like "$(cat "$T/k.info")" "kria-warc-chunked: keep" "keep: the warcinfo record names the mode"
like "$(cat "$T/k.info")" "kria-payload-digest: SHA-1 of the HTTP entity body: transfer coding \(chunked\) removed.*warc-specifications/issues/22" \
  "... and states the digest rule with its references"

# ---- dechunk ----------------------------------------------------------------------
crawl d dechunk
for p in /ch /chgz /chbig; do
  is "$(col d $p 4)/$(col d $p 5)" "-/chunked" "dechunk $p: Transfer-Encoding renamed X-Orig-Transfer-Encoding"
  is "$(col d $p 3)" "$(col d $p 2)" "dechunk $p: the payload digest is the raw reading too"
  is "$(col d $p 2)" "$(col k $p 2)" "dechunk $p: ... and keep's payload digest"
  dg=$(awk -v u="$KTS_URL$p" '$4 == u {print $10}' "$T/d/logs/crawl.log")
  is "$dg" "$(col d $p 2)" "dechunk $p: crawl.log names the record's digest"
done
is "$(col d /plain 4)/$(col d /plain 5)" "-/-" "dechunk: a response that was not chunked is left alone"
is "$(col d /plain 2)" "$(col k /plain 2)" "... same digest"
like "$(cat "$T/d.info")" "kria-warc-chunked: dechunk" "dechunk: the warcinfo record names the mode"

done_testing
