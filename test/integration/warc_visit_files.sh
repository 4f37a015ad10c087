#!/usr/bin/env bash
# Rotation never splits a visit (issue 19, item 7): every record of a
# visit (response or revisit, request, metadata) lands in ONE WARC file,
# so WARC-Concurrent-To always points within the file. A crawl with
# warc.max-size at its 1 MiB minimum and plain .warc files (sizes are the
# bodies' own) of
#  - pages of 300 KiB in the crawl's file: the response that passes the
#    size used to rotate the file before the visit's request record;
#  - a 2 MiB body (in memory) and a 5 MiB body (spilled to a temporary
#    file), both written in slices into the file of large records: their
#    request and metadata records used to go to yet another file (three
#    files for one fetch).
# Also (issue 19, item 3): a metadata record names the page the URI was
# found on ("via:", as Heritrix writes it), a seed's names none.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
if ! command -v node >/dev/null || [ ! -f "$HERE/node_modules/warcio/package.json" ]; then
  skip "warcio.js not installed (npm ci in test/integration)" "records per file"
  done_testing
fi

cat >"$T/site.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <html><body><a href="/p/0">pages</a> <a href="/mid">mid</a> <a href="/big">big</a></body></html>

[route "/mid"]
content-type = application/octet-stream
body-size = 2M

[route "/big"]
content-type = application/octet-stream
body-size = 5M

[site]
pages = 8
links = 2
body-size = 300K
EOF2
kts_start "$T/site.ini" || bail "kts did not start"

echo "$KTS_URL/" >"$T/seeds"
loopback_conf "$T/seeds" "$T/s" >"$T/c.conf"
cat >>"$T/c.conf" <<EOF2
[warc]
compress = none
max-size = 1MiB
EOF2
timeout 120 "$KRIA" crawl -c "$T/c.conf" 2>"$T/c.err"
RC=$?
is "$RC" 0 "the crawl ends by itself, exit 0"
[ "$RC" -eq 0 ] || { diag "$(tail -5 "$T/c.err")"; done_testing; }
unlike "$(cat "$T/c.err")" "runtime error|Sanitizer|BUG|assert" "no sanitizer report, no assertion"
is "$(awk '$2 == 200' "$T/s/logs/crawl.log" | wc -l)" 11 "every page fetched: 200"

(cd "$HERE" && node warcrecs.mjs "$T"/s/warcs/*.warc) >"$T/recs" 2>"$T/recs.err" ||
  not_ok "warcrecs.mjs reads the files: $(cat "$T/recs.err")"
diag "$(ls "$T"/s/warcs | wc -l) files, $(wc -l <"$T/recs") records; sizes: $(stat -c %s "$T"/s/warcs/* | tr '\n' ' ')"
check "the files rotated (more than two)" test "$(ls "$T"/s/warcs | wc -l)" -gt 2
# FILE TYPE ID CONCURRENT URI VIA: every WARC-Concurrent-To names a record
# of the same file
split=$(awk -F'\t' 'NR == FNR {f[$3] = $1; next}
  $4 != "-" && f[$4] != $1 {print $2, $5, "in", $1, "points to", ($4 in f ? f[$4] : "nothing")}' \
  "$T/recs" "$T/recs")
is "$split" "" "every WARC-Concurrent-To points within its own file"
# every visit: one file holds its response, request and metadata
is "$(awk -F'\t' '$2 == "response" || $2 == "request" || $2 == "metadata" {print $5}' "$T/recs" |
  sort | uniq -c | awk '$1 != 3' | head -5)" "" "three records per visit"
is "$(awk -F'\t' '$2 == "response" || $2 == "request" || $2 == "metadata" {print $1, $5}' "$T/recs" |
  sort -u | awk '{print $2}' | sort | uniq -d | head -5)" "" "... each visit's in one file"
is "$(awk -F'\t' '$2 == "response" && $5 ~ /\/(mid|big)$/' "$T/recs" | wc -l)" 2 \
  "both large bodies have their response"
if (cd "$HERE" && node warccheck.mjs "$T"/s/warcs/*.warc) >"$T/check.out" 2>&1; then
  ok "warccheck.mjs: every file validates"
else
  not_ok "warccheck.mjs: every file validates"; diag "$(grep -v '^ok ' "$T/check.out" | head -20)"
fi

# ---- via ----
via() { awk -F'\t' -v u="$1" '$2 == "metadata" && $5 == u {print $6}' "$T/recs"; }
is "$(via "$KTS_URL/")" "-" "the seed's metadata record has no via"
is "$(via "$KTS_URL/big")" "$KTS_URL/" "a link's names the page it was found on"
is "$(via "$KTS_URL/p/0")" "$KTS_URL/" "... another"
p1=$(via "$KTS_URL/p/1")
like "$p1" "^$KTS_URL/p/[0-9]+$" "... a page found on a page: $p1"

done_testing
