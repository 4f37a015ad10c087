#!/usr/bin/env bash
# `kria cdx` on third-party collections: the sample WARC and ARC files of
# webrecorder's warcio and cdxj-indexer (test/data/warcio/,
# test/data/cdxj-indexer/, see their SOURCE.md), against what those
# projects' own tests expect of them:
#  - cdxj-indexer's expected CDXJ (its test_indexer.py, copied into
#    test/data/cdxj-indexer/expected/) byte for byte: WARC, gzip, ARC;
#    its bad.arc expectation (CDX11) field by field; post-test-more.warc
#    field by field without the key (the expectation is of
#    `cdxj-indexer --post-append`, which kria does not do);
#  - warcio's `warcio index` expectation (test_cli.py, copied into
#    test/data/warcio/expected/) for offsets, lengths, URLs and types of
#    four files, WARC and ARC, plain and gzip;
#  - warcio's tolerances: a space in a target URI (%20), wget's <URI>,
#    a Content-Length too small (a warning, the record indexed), an ARC
#    record cut short by the end of the file;
#  - digests cdxj-indexer computes for records without
#    WARC-Payload-Digest, recomputed here with python's hashlib;
#  - one bad file among good ones: a clear error naming it and the
#    offset, the other files' lines and the damaged file's lines before
#    the damage kept, exit 2; `kria wacz` stays strict;
#  - warcio.js's own indexer as a second opinion (cdxcompare.mjs, which
#    lists the deliberate differences).
# Deliberate differences from cdxj-indexer, checked below: kria sorts
# (cdxj-indexer only with --sort); a record after a damaged one is not
# indexed and the run goes on with the next file (cdxj-indexer stops the
# run); a gzip file that is not one member per record is an error with no
# lines (cdxj-indexer indexes its first record with a length that points
# into the compressed stream, then stops); a file is WARC or ARC by its
# first record (warcio takes every record as either, so a stray line
# that splits into five fields becomes an ARC record); a record without
# Content-Length is an error (warcio reads it to the end of the file or
# gzip member); a block followed at once by the next record's "WARC/" is
# read on (warcio skips that line and fails on the next).
# TAP; run by test/run.sh (KRIA, KRIA_TOP set).
. "$(dirname "$0")/lib.sh"

D=$KRIA_TOP/test/data
CI=$D/cdxj-indexer
WI=$D/warcio
command -v python3 >/dev/null || bail "python3 is needed"

# ---- cdxj-indexer's expectations, byte for byte ----------------------------------

for f in example.warc.gz cc.warc.gz example.arc post-test.warc.gz; do
  "$KRIA" cdx "$CI/$f" >"$T/$f.cdxj" 2>"$T/$f.err"
  is "$?" 0 "kria cdx $f: exit 0"
  if cmp -s "$T/$f.cdxj" "$CI/expected/$f.cdxj"; then ok "kria cdx $f: cdxj-indexer's expected index, byte for byte"
  else not_ok "kria cdx $f: cdxj-indexer's expected index, byte for byte"
    diag "$(diff "$CI/expected/$f.cdxj" "$T/$f.cdxj")"; fi
  is "$(cat "$T/$f.err")" "" "... nothing on stderr"
done

# The same lines when all are indexed at once, sorted together.
"$KRIA" cdx "$CI/example.warc.gz" "$CI/cc.warc.gz" "$CI/example.arc" "$CI/post-test.warc.gz" >"$T/all.cdxj"
is "$(cat "$T/all.cdxj")" "$(cd "$CI/expected" && cat example.warc.gz.cdxj cc.warc.gz.cdxj example.arc.cdxj \
  post-test.warc.gz.cdxj | LC_ALL=C sort)" "four files at once: their lines, sorted bytewise"
# A file named twice gives its lines once: cdxj-indexer's sorted output
# drops a line equal to the one before.
"$KRIA" cdx "$CI/cc.warc.gz" "$CI/example.arc" "$CI/cc.warc.gz" >"$T/twice.cdxj"
is "$(cat "$T/twice.cdxj")" "$(cd "$CI/expected" && cat cc.warc.gz.cdxj example.arc.cdxj | LC_ALL=C sort)" \
  "a file named twice: its lines once, as cdxj-indexer writes them"

# Field by field (python json): every field but the key and the
# post-append extras (method, requestBody).
fields_match() { # DESC KRIA_CDXJ EXPECTED_CDXJ
  local out
  out=$(python3 - "$2" "$3" <<'PY'
import json, sys
def load(p):
    rows = []
    for line in open(p, encoding="utf-8"):
        key, ts, js = line.rstrip("\n").split(" ", 2)
        j = json.loads(js)
        j.pop("method", None)
        j.pop("requestBody", None)
        rows.append(json.dumps([ts, j], sort_keys=True))
    return sorted(rows)
a, b = load(sys.argv[1]), load(sys.argv[2])
print("same" if a == b else "kria:     %s\nexpected: %s" % ("\n          ".join(a), "\n          ".join(b)))
PY
  )
  if [ "$out" = same ]; then ok "$1"; else not_ok "$1"; diag "$out"; fi
}
"$KRIA" cdx "$CI/post-test-more.warc" >"$T/ptm.cdxj"
fields_match "post-test-more.warc: cdxj-indexer's lines field by field (POST keys aside)" \
  "$T/ptm.cdxj" "$CI/expected/post-test-more.warc.post-append.cdxj"

# bad.arc: lengths of -1 and "abc", an 18-digit date, blank lines between
# records. cdxj-indexer's test gives it as CDX11: kria's lines in that form.
"$KRIA" cdx "$CI/bad.arc" >"$T/bad.cdxj" 2>"$T/bad.err"
is "$?" 0 "bad.arc: exit 0"
got=$(python3 - "$T/bad.cdxj" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    key, ts, js = line.rstrip("\n").split(" ", 2)
    j = json.loads(js)
    g = lambda k: j.get(k, "-")
    print(" ".join([key, ts, g("url"), g("mime"), g("status"), g("digest").split(":")[-1], "-", "-",
                    g("length"), g("offset"), g("filename")]))
PY
)
is "$got" "$(tail -n +2 "$CI/expected/bad.arc.cdx11" | LC_ALL=C sort)" "bad.arc: cdxj-indexer's CDX11 lines"

# ---- warcio's `warcio index` expectation --------------------------------------------

# test_index: length, offset, type, target URI and HTTP Content-Type of
# every record of example.warc.gz, example.warc, example.arc.gz and
# example.arc, in that order; kria indexes the responses and revisits.
res=$(python3 - "$KRIA" "$WI" <<'PY'
import json, subprocess, sys
kria, wi = sys.argv[1], sys.argv[2]
files = ["example.warc.gz", "example.warc", "example.arc.gz", "example.arc"]
groups, cur = [], None
for line in open(wi + "/expected/index-example.jsonl"):
    r = json.loads(line)
    if r["offset"] == "0":
        cur = []
        groups.append(cur)
    cur.append(r)
assert len(groups) == len(files), len(groups)
bad = []
n = 0
for f, recs in zip(files, groups):
    out = subprocess.run([kria, "cdx", wi + "/" + f], capture_output=True, text=True).stdout
    ours = {}
    for line in out.splitlines():
        j = json.loads(line.split(" ", 2)[2])
        ours[j["offset"]] = j
    want = [r for r in recs if r["warc-type"] in ("response", "revisit")]
    if len(want) != len(ours):
        bad.append("%s: %d lines, warcio indexes %d" % (f, len(ours), len(want)))
    for r in want:
        n += 1
        o = ours.get(r["offset"])
        if not o:
            bad.append("%s: no line at offset %s" % (f, r["offset"]))
            continue
        if o["length"] != r["length"] or o["url"] != r["warc-target-uri"]:
            bad.append("%s @%s: %s" % (f, r["offset"], o))
        mime = "warc/revisit" if r["warc-type"] == "revisit" else r.get("http:content-type")
        if o.get("mime") != mime:
            bad.append("%s @%s: mime %s, want %s" % (f, r["offset"], o.get("mime"), mime))
print("\n".join(bad) if bad else "ok %d" % n)
PY
)
is "$res" "ok 6" "warcio's index of example.warc(.gz)/.arc(.gz): offsets, lengths, URLs, mimes agree"

# ---- warcio's tolerances ---------------------------------------------------------------

out=$("$KRIA" cdx "$WI/example-space-in-target-uri.warc.gz")
like "$out" '^file:/example%20with%20spaces\.png [0-9]{14} \{"url": "file:///example%20with%20spaces\.png", "mime": "image/png", ' \
  "a space in WARC-Target-URI: %20 in the url and the key (warcio's test_corrects_space_in_target_uri)"
out=$("$KRIA" cdx "$WI/example-wget-bad-target-uri.warc.gz")
like "$out" '\{"url": "http://example\.com/", "mime": "text/html", "status": "200", ' \
  "wget's <URI> read without brackets (test_corrects_wget_bug)"
"$KRIA" cdx "$WI/example-trunc.warc" >"$T/trunc.cdxj" 2>"$T/trunc.err"
is "$?" 0 "a Content-Length too small: exit 0 (warcio reads on, with one error)"
like "$(cat "$T/trunc.cdxj")" '^com,example\)/ 20170306040206 \{"url": "http://example\.com/", "mime": "text/html", "status": "200", "digest": "sha1:G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK", "length": "1363", "offset": "1197", ' \
  "... the response indexed as warcio indexes it (warcio.js agrees)"
like "$(cat "$T/trunc.err")" '^kria: warning: .*example-trunc\.warc: record at offset 1197: block not followed by a blank line' \
  "... a warning naming the file and the record's offset"
"$KRIA" cdx "$WI/example-space-in-url.arc" >"$T/space.cdxj" 2>"$T/space.err"
is "$?" 0 "an ARC record cut short by the end of the file: exit 0 (warcio reads it)"
like "$(cat "$T/space.cdxj")" '^com,example\)/index\.cfm\?emailtitle=examples%20from%20the%20live%20web&fuseaction=email&ispopup=false 20140216050221 \{"url": "http://example\.com/index\.cfm\?FuseAction=Email&EmailTitle=Examples%20From%20The%20Live%20Web&IsPopUp=False", "mime": "text/html", "status": "200", "digest": "sha1:[A-Z2-7]{32}", "length": "1722", "offset": "151", ' \
  "... the ARC URL with spaces split off right and escaped"
like "$(cat "$T/space.err")" 'warning: .*example-space-in-url\.arc: record at offset 151: block cut short by the end of the file \(12 bytes missing\)' \
  "... with a warning"

# ---- digests of records without WARC-Payload-Digest -------------------------------------

# cdxj-indexer hashes the payload (the block of a resource or metadata
# record) when the record has none; recomputed here from the files.
res=$(python3 - "$KRIA" "$WI" <<'PY'
import base64, hashlib, json, subprocess, sys, zlib
kria, wi = sys.argv[1], sys.argv[2]
def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        d = zlib.decompressobj(31)
        rec = d.decompress(data[at:])
        start, at = at, len(data) - len(d.unused_data)
        head, _, rest = rec.partition(b"\r\n\r\n")
        h = dict(l.split(b": ", 1) for l in head.split(b"\r\n")[1:])
        yield start, h, rest[:int(h[b"Content-Length"])]
n, bad = 0, []
for f in ["example-wget-bad-target-uri.warc.gz", "example-space-in-target-uri.warc.gz"]:
    out = subprocess.run([kria, "cdx", wi + "/" + f], capture_output=True, text=True).stdout
    ours = {json.loads(l.split(" ", 2)[2])["offset"]: json.loads(l.split(" ", 2)[2]) for l in out.splitlines()}
    for off, h, block in records(wi + "/" + f):
        if h[b"WARC-Type"] not in (b"resource", b"metadata") or b"WARC-Payload-Digest" in h:
            continue
        n += 1
        want = "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode()
        got = ours.get(str(off), {}).get("digest")
        if got != want:
            bad.append("%s @%d: %s, want %s" % (f, off, got, want))
print("\n".join(bad) if bad else "ok %d" % n)
PY
)
is "$res" "ok 4" "records without WARC-Payload-Digest: the SHA-1 of their payload, as cdxj-indexer computes"

# ---- one bad file among good ones ---------------------------------------------------------

"$KRIA" cdx "$WI/example-bad-non-chunked.warc.gz" "$CI/example.arc" >"$T/mixed.cdxj" 2>"$T/mixed.err"
is "$?" 2 "a gzip file that is not one member per record among good files: exit 2"
like "$(cat "$T/mixed.err")" 'kria: error: bad-warc: .*example-bad-non-chunked\.warc\.gz: record at offset 0 shares its gzip member' \
  "... an error naming the file and the offset"
like "$(cat "$T/mixed.err")" 'kria: 1 of 2 files not indexed to their end' "... and a summary"
is "$(cat "$T/mixed.cdxj")" "$(cat "$CI/expected/example.arc.cdxj")" "... the good file's lines all the same"

"$KRIA" cdx "$T/no-such.arc" "$CI/example.arc" >"$T/missing.cdxj" 2>"$T/missing.err"
is "$?" 2 "a missing file among good files: exit 2"
like "$(cat "$T/missing.err")" 'kria: error: io: .*no-such\.arc: No such file' "... naming it"
is "$(cat "$T/missing.cdxj")" "$(cat "$CI/expected/example.arc.cdxj")" "... the good file's lines all the same"

# A damaged plain WARC: garbage where its revisit record starts. The
# response before it stays indexed, the revisit is lost, the next file is read.
python3 - "$WI/example.warc" "$T/damaged.warc" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d[:3370] + b"\x00\x01garbage\r\n" + d[3370:])
PY
"$KRIA" cdx "$T/damaged.warc" "$CI/cc.warc.gz" >"$T/dam.cdxj" 2>"$T/dam.err"
is "$?" 2 "a damaged WARC among good files: exit 2"
like "$(cat "$T/dam.err")" 'kria: error: bad-warc: .*damaged\.warc: no WARC record at offset 3370' \
  "... the error names the file and the offset of the damage"
is "$(cut -d' ' -f1-2 "$T/dam.cdxj" | tr '\n' ' ')" "com,example)/ 20170306040206 org,commoncrawl)/ 20170722005011 " \
  "... the record before the damage and the other file indexed"
like "$(grep commoncrawl "$T/dam.cdxj")" "$(sed 's/[][()?.^$*+{}|\\]/\\&/g' "$CI/expected/cc.warc.gz.cdxj")" \
  "... the other file's line as expected"

# kria wacz reads strictly: a package from a damaged or an ARC file fails.
"$KRIA" wacz "$T/a.wacz" "$WI/example-trunc.warc" >/dev/null 2>"$T/wacz.err"
is "$?" 2 "kria wacz refuses a WARC with a wrong Content-Length (strict)"
"$KRIA" wacz "$T/b.wacz" "$CI/example.arc" >/dev/null 2>"$T/wacz2.err"
is "$?" 2 "kria wacz refuses an ARC file"
[ ! -e "$T/a.wacz" ] && [ ! -e "$T/b.wacz" ]
is "$?" 0 "... and writes no package"

# ---- warcio.js as a second opinion (WARC files; it does not read ARC) ------------------------

if ! command -v node >/dev/null || [ ! -f "$KRIA_TOP/test/integration/node_modules/warcio/package.json" ]; then
  skip "node or warcio.js not installed (make deps; warc_check.sh installs it)" "warcio.js comparison"
else
  for d in cdxj-indexer warcio; do
    mapfile -t fs < <(ls "$D/$d"/*.warc "$D/$d"/*.warc.gz | grep -v non-chunked)
    "$KRIA" cdx "${fs[@]}" >"$T/$d.cdxj" 2>/dev/null
    out=$(cd "$KRIA_TOP/test/integration" && node cdxcompare.mjs "$T/$d.cdxj" "${fs[@]}")
    like "$out" '^ok [0-9]+ lines agree$' "$d's WARC files: warcio.js's indexer agrees field by field (${#fs[@]} files)"
    [ "${out#ok}" = "$out" ] && diag "$out"
  done
fi

done_testing
