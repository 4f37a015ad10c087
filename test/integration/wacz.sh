#!/usr/bin/env bash
# `kria wacz` as py-wacz and browsertrix-crawler write WACZ, on WARC files
# synthesised by waczgen.mjs (request + response records, HTML pages
# plain, gzip-coded, chunked and both, images, style sheets), every
# package validated by waczcheck.mjs (py-wacz's validate checks and how
# wabac.js reads the index; Node only, no npm package):
#  - a small index (under 50,000 bytes) is one indexes/index.cdx; from
#    50,000 bytes on it is index.cdx.gz in gzip blocks of 256 lines with
#    index.idx (the !meta header, then key, offset, length, digest and
#    filename per block, tiling index.cdx.gz); --gz-index-min 0 and
#    --gz-index-lines 4 force many blocks; both forms hold the same lines;
#  - the lines are kria cdx's with "recordDigest" added, the SHA-256 of
#    the record's stored bytes;
#  - pages.jsonl: titles of plain, gzip, chunked and chunked gzip pages,
#    character references decoded; a page without <title> has no title;
#  - datapackage.json: resource names in lower case (frictionless), paths
#    as they are; mainPageURL / mainPageDate of the first page by
#    default, --url (with py-wacz's "/" for an empty path), --ts, --date;
#    an uncaptured --url is an error, --ts without --url a usage error;
#  - 50,000 captures: the block index is used, 196 blocks, all valid;
#  - a negative control: one byte changed in a stored WARC fails the check.
# TAP; run by test/run.sh (KRIA, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] || bail "kria is not built ($KRIA)"
if ! command -v node >/dev/null; then
  skip "node not installed (make deps installs nodejs)" "WACZ checks"
  done_testing
fi
command -v unzip >/dev/null || bail "unzip is not installed"

# wcheck DESC WACZ: waczcheck.mjs passes; its summary in $SUM
wcheck() {
  if SUM=$(node "$HERE/waczcheck.mjs" "$2" 2>&1); then ok "$1"; else
    not_ok "$1"; diag "$(head -20 <<<"$SUM")"
  fi
  SUM=$(tail -1 <<<"$SUM")
}
# sumf FIELD: a field of the last summary
sumf() { node -e 'const s=JSON.parse(process.argv[1]); console.log(s[process.argv[2]])' "$SUM" "$1"; }
# page URL WACZ: URL's line in pages.jsonl
page() { unzip -p "$2" pages/pages.jsonl | grep -F "\"url\": \"$1\""; }
dpf() { unzip -p "$2" datapackage.json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];console.log(v===undefined?"(none)":v)})' "$1"; }

node "$HERE/waczgen.mjs" "$T/g" 40 2 >"$T/gen.json" || bail "waczgen.mjs failed"
G=("$T/g/gen-0.warc.gz" "$T/g/gen-1.warc.gz")

# ---- a small index: index.cdx ----------------------------------------------------
"$KRIA" wacz "$T/s.wacz" "${G[@]}" 2>"$T/s.err"
is "$?" 0 "kria wacz exits 0"
wcheck "a small package passes the checks" "$T/s.wacz"
is "$(sumf index)/$(sumf lines)" "cdx/40" "under 50,000 bytes of index: one index.cdx with the 40 captures"
unzip -p "$T/s.wacz" indexes/index.cdx >"$T/s.cdx"
"$KRIA" cdx "${G[@]}" >"$T/k.cdx"
is "$(sed 's/, "recordDigest": "sha256:[0-9a-f]*"}$/}/' "$T/s.cdx")" "$(cat "$T/k.cdx")" \
  "the lines are kria cdx's with recordDigest last"
is "$(grep -c '"recordDigest": "sha256:[0-9a-f]\{64\}"}$' "$T/s.cdx")" 40 "every line has a recordDigest"

# ---- titles ------------------------------------------------------------------------
like "$(page http://gen.test/p/0 "$T/s.wacz")" '"title": "Caf\\u00e9 0 & caf\\u00e9"}$' \
  "a title with character references, UTF-8 and white space"
like "$(page http://gen.test/p/1 "$T/s.wacz")" '"title": "Page 1"' "a gzip-coded page's title"
like "$(page http://gen.test/p/2 "$T/s.wacz")" '"title": "Page 2"' "a chunked page's title"
like "$(page http://gen.test/p/7 "$T/s.wacz")" '"title": "Page 7"' "a chunked gzip-coded page's title"
unlike "$(page http://gen.test/p/3 "$T/s.wacz")" 'title' "a page without <title> has no title field"
is "$(sumf titles)/$(sumf pages)" "9/10" "nine titled pages of ten"

# ---- the main page -----------------------------------------------------------------
is "$(dpf mainPageURL "$T/s.wacz") $(dpf mainPageDate "$T/s.wacz")" \
  "http://gen.test/p/0 2024-01-01T00:00:00Z" "by default the first page is the main page, with its date"
"$KRIA" wacz --url http://gen.test/p/5 "$T/u.wacz" "${G[@]}" 2>/dev/null
is "$(dpf mainPageURL "$T/u.wacz") $(dpf mainPageDate "$T/u.wacz")" "http://gen.test/p/5 (none)" \
  "--url sets mainPageURL alone (as py-wacz)"
"$KRIA" wacz --url http://gen.test/p/5 --ts 20240101000020 "$T/u.wacz" "${G[@]}" 2>/dev/null
is "$(dpf mainPageDate "$T/u.wacz")" "2024-01-01T00:00:20Z" "--ts gives mainPageDate"
"$KRIA" wacz --url http://gen.test/p/5 --date 2024-02-03 "$T/u.wacz" "${G[@]}" 2>/dev/null
is "$(dpf mainPageDate "$T/u.wacz")" "2024-02-03" "--date sets mainPageDate as given"
wcheck "... and the package passes the checks" "$T/u.wacz"
"$KRIA" wacz --url http://gen.test/p/5 --ts 20240101000021 "$T/n.wacz" "${G[@]}" 2>"$T/n.err"
is "$?" 2 "--url with a --ts it was not captured at: error"
like "$(cat "$T/n.err")" "no such capture" "... saying so"
"$KRIA" wacz --url http://gen.test "$T/n.wacz" "${G[@]}" 2>"$T/n.err"
like "$(cat "$T/n.err")" "http://gen.test/:" "--url without a path gets '/' (py-wacz)"
"$KRIA" wacz --ts 20240101000020 "$T/n.wacz" "${G[@]}" 2>/dev/null
is "$?" 64 "--ts without --url: usage error"
"$KRIA" wacz --gz-index-lines 0 "$T/n.wacz" "${G[@]}" 2>/dev/null
is "$?" 64 "--gz-index-lines 0: usage error"
check "no package left by the failures" test ! -e "$T/n.wacz"

# ---- resource names ------------------------------------------------------------------
cp "${G[1]}" "$T/GEN-Up.warc.gz"
"$KRIA" wacz "$T/c.wacz" "${G[0]}" "$T/GEN-Up.warc.gz" 2>/dev/null
wcheck "a WARC named in capitals: the package passes the checks" "$T/c.wacz"
like "$(unzip -p "$T/c.wacz" datapackage.json)" '"name": "gen-up.warc.gz", "path": "archive/GEN-Up.warc.gz"' \
  "... its resource name in lower case (frictionless), its path as it is"

# ---- the block index -----------------------------------------------------------------
"$KRIA" wacz --gz-index-min 0 --gz-index-lines 4 "$T/b.wacz" "${G[@]}" 2>/dev/null
is "$?" 0 "kria wacz --gz-index-min 0 --gz-index-lines 4 exits 0"
wcheck "the block index passes the checks" "$T/b.wacz"
is "$(sumf index)/$(sumf blocks)/$(sumf lines)" "idx/10/40" "forced: index.cdx.gz + index.idx, 10 blocks of 4"
is "$(unzip -p "$T/b.wacz" indexes/index.cdx.gz | gzip -dc)" "$(cat "$T/s.cdx")" \
  "the blocks hold index.cdx's lines"
is "$(zipinfo "$T/b.wacz" indexes/index.cdx.gz | awk '{print $6}')" stor "index.cdx.gz is stored"
like "$(unzip -p "$T/b.wacz" indexes/index.idx | head -2)" \
  '^!meta 0 \{"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"\}.test,gen\)/css/10.css 20240101000010 \{"offset": 0, "length": [0-9]+, "digest": "sha256:[0-9a-f]{64}", "filename": "index.cdx.gz"\}$' \
  "index.idx: the !meta line, then key, offset, length, digest, filename"

node "$HERE/waczgen.mjs" "$T/m" 200 >/dev/null || bail "waczgen.mjs failed"
"$KRIA" wacz "$T/m.wacz" "$T/m/gen-0.warc.gz" 2>/dev/null
wcheck "200 captures: the package passes the checks" "$T/m.wacz"
is "$(sumf index)/$(sumf blocks)" "idx/1" "over 50,000 bytes of index: index.cdx.gz in one block of 256 lines"

# ---- 50,000 captures ---------------------------------------------------------------------
node "$HERE/waczgen.mjs" "$T/big" 50000 >/dev/null || bail "waczgen.mjs failed"
"$KRIA" wacz "$T/big.wacz" "$T/big/gen-0.warc.gz" 2>"$T/big.err"
is "$?" 0 "kria wacz of 50,000 captures exits 0"
wcheck "50,000 captures: the package passes the checks" "$T/big.wacz"
is "$(sumf index)/$(sumf blocks)/$(sumf lines)/$(sumf pages)/$(sumf titles)" "idx/196/50000/12500/12499" \
  "index.cdx.gz in 196 blocks of 256 lines, 12,500 pages, all titled but one"
rm -rf "$T/big" "$T/big.wacz"

# ---- a negative control ------------------------------------------------------------------
cp "$T/s.wacz" "$T/bad.wacz"
# the first entry is the first WARC, stored: change a byte in its middle
nl=$(printf '%s' "archive/gen-0.warc.gz" | wc -c)
off=$((30 + nl + 2000))
printf '\001' | dd of="$T/bad.wacz" bs=1 seek="$off" conv=notrunc status=none
if node "$HERE/waczcheck.mjs" "$T/bad.wacz" >"$T/bad.out" 2>&1; then
  not_ok "a changed byte in a WARC fails the check"
else
  like "$(cat "$T/bad.out")" "archive/gen-0.warc.gz: hash does not match" "a changed byte in a WARC fails the check"
fi

done_testing
