#!/usr/bin/env bash
# WARC files validated by a third-party reader: webrecorder's warcio.js
# (version pinned in test/integration/package.json + package-lock.json,
# installed here with `npm ci` when missing) through warccheck.mjs, which
# adds what warcio.js does not check itself (block and payload digests,
# records tiling the file, revisits pointing at a real original).
#
#  - kria's files: every record type, plain / zlib / libdeflate / igzip / rotated,
#    written by the warc unit test (KRIA_WARC_SAMPLES=DIR);
#  - `kria cdx` on them: sorted bytewise, and field by field what
#    warcio.js's own CDX indexer says;
#  - negative controls: the checker and `kria cdx` must catch a flipped
#    block byte, a wrong payload digest, a revisit pointing nowhere, a
#    too-small Content-Length and a cut gzip member;
#  - a reference writer: Debian's `wget --warc-file` crawling a kts site;
#    its files pass the same checks, except that wget hashes chunked
#    bodies with their chunk framing (a known divergence from the
#    standard's entity payload), which is shown and then allowed;
#  - `kria cdx` usage, missing and garbage files.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
CHECK=$HERE/warccheck.mjs

if ! command -v node >/dev/null; then
  skip "node not installed (make deps installs nodejs)" "warcio.js checks"
  done_testing
fi
if [ ! -f "$HERE/node_modules/warcio/package.json" ]; then
  diag "installing warcio.js from package-lock.json (npm ci)"
  if ! (cd "$HERE" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
    not_ok "npm ci installs warcio.js"
    diag "$(tail -20 "$T/npm.log")"
    done_testing
  fi
fi
want=$(node -p "require('$HERE/package.json').dependencies.warcio")
have=$(node -p "require('$HERE/node_modules/warcio/package.json').version")
is "$have" "$want" "warcio.js $want installed (pinned)"

# check_ok DESC ARGS...: warccheck.mjs passes
check_ok() {
  local d=$1; shift
  if (cd "$HERE" && node "$CHECK" "$@") >"$T/check.out" 2>&1; then ok "$d"; else
    not_ok "$d"; diag "$(grep -v '^ok ' "$T/check.out" | head -20)"
  fi
}
# check_fails DESC ERE ARGS...: warccheck.mjs fails with an error matching ERE
check_fails() {
  local d=$1 ere=$2; shift 2
  if (cd "$HERE" && node "$CHECK" "$@") >"$T/check.out" 2>&1; then
    not_ok "$d"; diag "passed, should have failed"
  elif grep -qE "^error: .*($ere)" "$T/check.out"; then ok "$d"; else
    not_ok "$d"; diag "$(head -20 "$T/check.out")"; diag "no error matching: $ere"
  fi
}

# ---- kria's files -----------------------------------------------------------

UNIT=$KRIA_BUILD/test/test_warc
[ -x "$UNIT" ] || bail "unit test binary not built: $UNIT"
OURS=$T/ours
if KRIA_WARC_SAMPLES=$OURS "$UNIT" >"$T/unit.log" 2>&1; then
  ok "the warc unit test wrote its sample files"
else
  not_ok "the warc unit test wrote its sample files"; diag "$(tail -20 "$T/unit.log")"
fi
mapfile -t files < <(find "$OURS" -name '*.warc*' | sort)
like "${#files[@]}" '^([6-9]|[1-9][0-9])$' "six or more sample files (plain, zlib, libdeflate, igzip, rotated)"
names=$(printf '%s\n' "${files[@]##*/}")
like "$names" 'kria-plain-[0-9]{17}-00000-unit\.test\.warc' "an uncompressed sample"
like "$names" 'kria-igzip-[0-9]{17}-00000-unit\.test\.warc\.gz' "an igzip sample"
like "$names" 'kria-rotated-[0-9]{17}-00001-unit\.test\.warc\.gz' "a rotated second file"
unlike "$names" '\.open' "no file left .open"

check_ok "warcio.js reads every record of kria's files; digests, tiling and revisits check out" \
  "${files[@]}"
n=$(cd "$HERE" && node "$CHECK" "${files[@]}" | tail -1)
like "$n" '^[0-9]+ files, ([5-9][0-9]|[1-9][0-9]{2,}) records, 0 errors$' "all the sample records were read ($n)"

"$KRIA" cdx "${files[@]}" >"$T/ours.cdxj" 2>"$T/cdx.err"
is "$?" 0 "kria cdx indexes kria's files"
check "kria cdx output is in LC_ALL=C sort order" env LC_ALL=C sort -c "$T/ours.cdxj"
check_ok "kria cdx agrees with warcio.js's CDX indexer line by line" --cdx "$T/ours.cdxj" "${files[@]}"
like "$(head -1 "$T/ours.cdxj")" '^[^ ]+ [0-9]{14} \{"url": "[^"]+", "mime": "[^"]+", ' "CDXJ line format"
like "$(cat "$T/ours.cdxj")" '"mime": "warc/revisit", "digest": "sha1:' "a server-not-modified revisit (no block) indexed without a status, as cdxj-indexer does"
unlike "$(cat "$T/ours.cdxj")" '"status": "304"' "no 304 in the index: replay would serve it"
like "$(cat "$T/ours.cdxj")" 'test,libdeflate:8080\)/p/1 20251122042000 \{"url": "http://libdeflate\.test:8080/p/1", "mime": "text/html", "status": "200", "digest": "sha1:[A-Z2-7]{32}", "length": "[0-9]+", "offset": "[0-9]+", "filename": "kria-libdeflate-[^"]+\.warc\.gz"\}' \
  "a response line in full"
unlike "$(cat "$T/ours.cdxj")" '"mime": "application/warc-fields"' "warcinfo/metadata (warc-fields) not indexed"

# ---- negative controls: the checks can fail ------------------------------------

plain=$(printf '%s\n' "${files[@]}" | grep 'kria-plain' | head -1)
gzfile=$(printf '%s\n' "${files[@]}" | grep 'kria-libdeflate' | head -1)
# flip one byte of the first page body (same length, offsets unchanged)
python3 - "$plain" "$T/flip.warc" <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
i = d.index(b'tern ', d.index(b'WARC-Type: response'))
d[i] ^= 0x20
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a flipped block byte is caught" "WARC-Block-Digest" "$T/flip.warc"
python3 - "$plain" "$T/pd.warc" <<'EOF'
import sys, re
d = open(sys.argv[1], 'rb').read()
i = d.index(b'WARC-Payload-Digest: sha1:', d.index(b'WARC-Type: response')) + 26
d = d[:i] + (b'A' if d[i:i+1] != b'A' else b'B') + d[i+1:]
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a wrong payload digest is caught" "WARC-Payload-Digest sha1:" "$T/pd.warc"
python3 - "$plain" "$T/rv.warc" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
i = d.index(b'WARC-Refers-To-Date: ') + 21 + 22   # the millisecond digit
d = d[:i] + (b'9' if d[i:i+1] != b'9' else b'8') + d[i+1:]
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a revisit pointing at no response is caught" "no such response record" "$T/rv.warc"
python3 - "$plain" "$T/rt.warc" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
assert b'WARC-Refers-To: ' in d
d = d.replace(b'WARC-Refers-To: ', b'X-Kria-Ignored: ')   # same length
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a revisit without WARC-Refers-To is caught" "revisit without WARC-Refers-To" "$T/rt.warc"
python3 - "$plain" "$T/rtw.warc" <<'EOF'
import sys, re
d = open(sys.argv[1], 'rb').read()
info = re.search(rb'WARC-Warcinfo-ID: (<urn:uuid:[^>]+>)', d).group(1)
i = d.index(b'WARC-Refers-To: ') + 16
j = d.index(b'\r\n', i)
assert j - i == len(info)
d = d[:i] + info + d[j:]   # the warcinfo record: a record, not the response
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a revisit whose WARC-Refers-To names another record is caught" "no such response record" "$T/rtw.warc"
python3 - "$plain" "$T/cl.warc" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
i = d.index(b'Content-Length: ', d.index(b'WARC-Type: request')) + 16
j = d.index(b'\r\n', i)
n = int(d[i:j]) - 5
d = d[:i] + str(n).encode().rjust(j - i, b'0') + d[j:]
open(sys.argv[2], 'wb').write(d)
EOF
check_fails "a Content-Length too small is caught (warcio.js warning)" "Content-Length|console\.warn|block of" "$T/cl.warc"
size=$(stat -c %s "$gzfile")
head -c $((size - 9)) "$gzfile" >"$T/cut.warc.gz"
check_fails "a cut gzip member is caught" "records end at|warcio\.js|no records|Block-Digest|Payload-Digest" "$T/cut.warc.gz"
"$KRIA" cdx "$T/cut.warc.gz" >"$T/cut.cdxj" 2>"$T/cut.err"
is "$?" 2 "kria cdx refuses a cut gzip member (exit 2)"
like "$(cat "$T/cut.err")" 'kria: error: bad-warc: .*cut\.warc\.gz: gzip member at offset [0-9]+ is truncated' \
  "... naming the file and the member's offset"
# The records before the cut member are indexed all the same (as
# cdxj-indexer prints them before it stops), the cut one is not.
"$KRIA" cdx "$gzfile" >"$T/whole.cdxj" 2>/dev/null
cut_at=$(sed -n 's/.*gzip member at offset \([0-9]*\) is truncated.*/\1/p' "$T/cut.err")
like "$(wc -l <"$T/cut.cdxj")" '^[1-9][0-9]*$' "... printing the lines of the records before it"
nofile() { sed 's/, "filename": "[^"]*"//' "$1"; }
is "$(comm -23 <(nofile "$T/cut.cdxj") <(nofile "$T/whole.cdxj"))" "" \
  "... the same lines as for the whole file"
unlike "$(cat "$T/cut.cdxj")" "\"offset\": \"$cut_at\"" "... and none for the cut record"

# ---- a reference writer: wget --warc-file against kts ---------------------------

if ! command -v wget >/dev/null; then
  skip "wget not installed" "wget reference WARC"
else
  cat >"$T/routes.ini" <<'EOF'
[route "/"]
body = <html><body><a href="/p/0">p0</a> <a href="/chunked">c</a>
body = <a href="/gone">g</a> <a href="/moved">m</a> <a href="/gz">z</a></body></html>

[route "/chunked"]
chunked = 1
chunk-size = 700
body-size = 5K

[route "/gz"]
gzip = force
body-size = 8K

[route "/gone"]
status = 404
body = not here\n

[route "/moved"]
redirect = /p/1

[site]
pages = 12
links = 3
body-size = 10K
etag = auto
EOF
  if kts_start "$T/routes.ini"; then
    mkdir -p "$T/wget"
    (cd "$T/wget" && timeout 60 wget -q -r -l 3 -e robots=on --warc-file="$T/wget/ref" \
      -P "$T/wget/files" "$KTS_URL/") >"$T/wget.log" 2>&1
    rc=$?
    # 8: the 404 is a "server error response" to wget
    like "$rc" '^(0|8)$' "wget --warc-file crawled the kts site (exit $rc)"
    ref=$T/wget/ref.warc.gz
    check "wget wrote $ref" test -s "$ref"
    check_fails "strict: wget hashes the chunked response with its chunk framing" \
      "/chunked.*covers the transfer-encoded body" "$ref"
    nerr=$(grep -c '^error:' "$T/check.out")
    is "$nerr" 1 "... and that is its only divergence"
    check_ok "warcio.js reads wget's WARC; digests (chunked framing allowed), tiling check out" \
      --allow-chunked-digest "$ref"
    "$KRIA" cdx "$ref" >"$T/ref.cdxj" 2>"$T/ref.err"
    is "$?" 0 "kria cdx indexes wget's WARC"
    check_ok "kria cdx agrees with warcio.js on wget's WARC" --allow-chunked-digest \
      --cdx "$T/ref.cdxj" "$ref"
    like "$(cat "$T/ref.cdxj")" '"url": "http://127\.0\.0\.1:[0-9]+/gone", "mime": "text/html", "status": "404"' \
      "wget's <bracketed> target URIs indexed without brackets"
    kts_stop
    is "$?" 0 "kts stopped cleanly"
  else
    not_ok "kts started"
  fi
fi

# ---- kria cdx: usage and bad files ----------------------------------------------

"$KRIA" cdx >/dev/null 2>"$T/u.err"
is "$?" 64 "kria cdx without files: usage (64)"
"$KRIA" cdx --bogus x >/dev/null 2>"$T/u.err"
is "$?" 64 "kria cdx with an unknown option: usage (64)"
"$KRIA" cdx --help >"$T/h.out"
is "$?" 0 "kria cdx --help exits 0"
like "$(cat "$T/h.out")" 'usage: kria cdx FILE' "... and prints usage"
"$KRIA" cdx "$T/no-such.warc.gz" >/dev/null 2>"$T/m.err"
is "$?" 2 "kria cdx on a missing file: 2"
like "$(cat "$T/m.err")" 'kria: error: io: .*no-such\.warc\.gz' "... naming it"
head -c 5000 /dev/urandom >"$T/garbage.warc"
"$KRIA" cdx "$T/garbage.warc" >/dev/null 2>"$T/g.err"
is "$?" 2 "kria cdx on garbage: 2"
like "$(cat "$T/g.err")" 'kria: error: bad-warc: ' "... bad-warc"
: >"$T/empty.warc"
out=$("$KRIA" cdx "$T/empty.warc")
is "$?:$out" "0:" "kria cdx on an empty file: nothing, exit 0"

done_testing
