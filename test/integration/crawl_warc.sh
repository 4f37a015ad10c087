#!/usr/bin/env bash
# `kria crawl` writing WARC, checked by a third-party reader (warcio.js,
# pinned, `npm ci` as warc_check.sh does) through warccheck.mjs (every
# record parses, digests recompute, records tile the files, every revisit
# names a real original) and counted with warclist.mjs:
#  - a revisit crawl of a kts site (validators → 304s, a server ignoring
#    conditionals → mid-fetch aborts, pages without validators →
#    identical-payload revisits, a changing page, a volatile page whose
#    clock is stripped from the change digest, gzip, chunked, a 5 MB body
#    spilled to a temporary file, a host name with a dns: record):
#    per crawl.log line exactly the record the annotations call for —
#    responses for new and changed visits (and volatile ones with
#    write-volatile = full), server-not-modified revisits for notModified
#    and midFetchAbort, identical-payload revisits for "unchanged" — one
#    request and one metadata record per visit, warcinfo first, no file
#    left .open, file names PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz; crawl.log
#    says it as Heritrix 3 does: duplicate:server-not-modified or
#    duplicate:digest first on exactly the lines of revisit records, a 304
#    or an abort with size 0 and the last capture's digest;
#  - write-volatile = skip: the volatile page's unchanged visits store
#    nothing (crawl.log says warcSkippedVolatile);
#  - a WARC directory that cannot be made: exit 2 naming it;
#  - bodies cut by the server, by the idle timeout and by max-body-bytes
#    are stored with WARC-Truncated disconnect / time / length (the first
#    two jump over the write phase: the post phase's warc-late writes them);
#  - payload and block digests made in one pass (kr_sha1_pair) for bodies
#    whole in memory, of padding-edge sizes and 1.5 MiB, beside chunked,
#    gzip and close-delimited ones: warcio.js recomputes them, crawl.log's
#    digests are the records', its sizes the records' bodies past the
#    HTTP head (chunked and gzip as sent, as Heritrix counts);
#  - crawl.log's duplicate:digest lines are the identical-payload revisits
#    for robots.txt and 404s too, of the same URI or of another;
#  - `kria cdx` over the crawl's files agrees with warcio.js's indexer;
#  - `kria wacz`: unzip -t passes, the expected entries, WARCs stored,
#    datapackage.json sizes and SHA-256 match the entries, the digest file
#    matches datapackage.json, waczcheck.mjs passes it, the index is kria
#    cdx's with recordDigest; refusals (.open files, garbage, usage);
#  - kill -9 mid-crawl: the .open file is repaired at restart, validates,
#    and every URI the store says was visited has a record (a crash
#    repeats fetches, never loses one); with durability batch the store
#    names the open file and its synced offset, and the repair reads
#    only from there;
#  - a full disk (a 1 MiB tmpfs, when this runs as root and may mount):
#    /status and /metrics count the write errors and show the hold;
#    fetching stops with a clear error, resumes once space is freed, the
#    crawl completes with every visited URI recorded.
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is not installed"
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

# warccheck DESC FILE...: warccheck.mjs passes on the files
warccheck() {
  local d=$1; shift
  if (cd "$HERE" && node warccheck.mjs "$@") >"$T/check.out" 2>&1; then ok "$d"; else
    not_ok "$d"; diag "$(grep -v '^ok ' "$T/check.out" | head -20)"
  fi
}
warclist() { (cd "$HERE" && node warclist.mjs "$@"); }

# crawl_conf FILE STATE SEEDS [extra lines...]
crawl_conf() {
  local f=$1 state=$2 seeds=$3; shift 3
  {
    echo "[http]"
    echo "allow-private-addresses = true"
    echo "[crawl]"
    echo "seeds = $seeds"
    echo "state-dir = $state"
    echo "revisit = false"
    echo "[politeness]"
    echo "min-delay = 0"
    echo "max-delay = 0"
    echo "delay-factor = 0"
    echo "[store]"
    echo "commit-interval = 10ms"
    local l
    for l in "$@"; do echo "$l"; done
  } >"$f"
}

# recorded STATE FILE...: URIs the store says were visited (SUCCESS) that
# have no response or revisit record in FILE... (none expected)
unrecorded() {
  local state=$1; shift
  sqlite3 "$state/kria.db" "select url from uris where state = 1 order by url" >"$T/visited"
  warclist "$@" | awk '$1 == "response" || $1 == "revisit" {print $3}' | sort -u >"$T/recorded"
  comm -23 "$T/visited" "$T/recorded"
}

# ---- a revisit crawl -------------------------------------------------------------

cat >"$T/site.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow: /private/\n

[route "/"]
body = <html><body><a href="/p/0">pages</a> <a href="/gz">gz</a> <a href="/ch">ch</a>
body = <a href="/vol">vol</a> <a href="/chg">chg</a> <a href="/ign">ign</a>
body = <a href="/big">big</a> <img src="/img/x.png"></body></html>

[route "/img*"]
content-type = image/png
body = png

[route "/gz"]
gzip = 1
body-size = 8K
etag = auto

[route "/ch"]
chunked = 1
chunk-size = 500
body-size = 6K
etag = auto

[route "/vol"]
volatile = 1
body-size = 3K

[route "/chg"]
change-every = 1
body-size = 2K
etag = auto

[route "/ign"]
ignore-conditionals = 1
etag = auto
last-modified = auto
body-size = 20K

[route "/big"]
body-size = 5M
etag = auto

[site]
pages = 6
links = 2
body-size = 4K
etag = auto
EOF
kts_start "$T/site.ini" --log "$T/kts.log" || bail "kts did not start"
echo "127.0.0.1 site.test" >"$T/hosts"
echo "http://site.test:$KTS_PORT/" >"$T/seeds.txt"
# every page revisited every second: the thesis' policy with an
# unchanged-factor of 1, first waits from initial-wait (poisson, the
# default, would estimate the waits, and some runs revisited too few
# unchanged bodies within the 4 s)
REV=(-o crawl.revisit=true -o limits.max-time=4s -o adaptive.trust-probation=0
  -o adaptive.trust-sample=0 -o adaptive.informed-priors=false)
for w in text image default; do
  REV+=(-o "wait.$w.initial-wait=1s" -o "wait.$w.min-wait=1s" -o "wait.$w.unchanged-factor=1"
    -o "wait.$w.policy=multiplicative")
done
crawl_conf "$T/a.conf" "$T/a" "$T/seeds.txt" "[dns]" "hosts-file = $T/hosts" \
  "[adaptive]" 'digest-strip = <div class="clock">[^<]*</div>' \
  "[warc]" "write-dns = true" "durability = batch"
timeout 60 "$KRIA" crawl -c "$T/a.conf" "${REV[@]}" >"$T/a.out" 2>"$T/a.err"
is "$?" 0 "revisit crawl exits 0 at max-time"
mapfile -t A < <(find "$T/a/warcs" -type f | sort)
# the 5 MB body's records go to a file of their own (its response is
# compressed in slices while the other visits' records go on into the first)
is "${#A[@]}" 2 "two WARC files: the crawl's, and one for the large record"
like "${A[0]##*/}" '^kria-[0-9]{17}-00000-[^-]+\.warc\.gz$' "named PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz"
like "${A[1]##*/}" '^kria-[0-9]{17}-00001-[^-]+\.warc\.gz$' "... the second with the next serial"
is "$(warclist "${A[1]}" | cut -d' ' -f1,3 | sed "s|$KTS_PORT|P|" | tr '\n' ' ')" \
  "warcinfo - response http://site.test:P/big request http://site.test:P/big metadata http://site.test:P/big " \
  "... holding the large response, then its request and metadata records"
warccheck "warcio.js reads every record; digests, tiling and revisit targets check out" "${A[@]}"
warclist "${A[@]}" >"$T/a.list"
CL="$T/a/logs/crawl.log"
is "$(warclist "${A[0]}" | head -1 | cut -d' ' -f1)" warcinfo "the file starts with a warcinfo record"
# what crawl.log says each visit was
U="http://site.test:$KTS_PORT"
visits=$(wc -l <"$CL")
nm=$(grep -cE 'notModified|midFetchAbort' "$CL")
vol_unch=$(grep -E " $U/vol " "$CL" | grep -c unchanged)
ident=$(($(grep -v -E 'notModified|midFetchAbort' "$CL" | grep -c unchanged) - vol_unch))
resp=$((visits - nm - ident))
diag "$visits visits: $nm not modified, $ident identical, $vol_unch volatile, $resp responses"
check "revisits happened: 304s ($nm), mid-fetch aborts, unchanged bodies ($ident)" \
  test "$nm" -ge 10 -a "$ident" -ge 3 -a "$vol_unch" -ge 1
check "some mid-fetch aborts" grep -q midFetchAbort "$CL"
cnt() { grep -cE "$1" "$T/a.list"; }
is "$(cnt '^response [0-9]+ http')" "$resp" "a response record per new or changed visit (volatile ones too, write-volatile = full)"
is "$(cnt '^revisit not-modified ')" "$nm" "a server-not-modified revisit per 304 or mid-fetch abort"
is "$(cnt '^revisit not-modified .* head=none$')" "$(grep -c notModified "$CL")" \
  "... a 304's with an empty block (its head would replay as an empty 304)"
is "$(cnt '^revisit not-modified .* head=200$')" "$(grep -c midFetchAbort "$CL")" \
  "... a mid-fetch abort's with the 200's head as received"
is "$(cnt '^revisit identical .* head=200$')" "$ident" "an identical-payload revisit keeps its 200 head"
is "$(cnt '^revisit identical ')" "$ident" "an identical-payload revisit per unchanged download"
is "$(cnt '^request ')" "$visits" "a request record per visit"
is "$(cnt '^metadata ')" "$visits" "a metadata record per visit"
is "$(cnt "^response 200 $U/chg\$")" "$(grep -c " $U/chg " "$CL")" "the changing page is stored at every visit"
is "$(cnt "^response - dns:site.test\$")" 1 "one dns: record for the host"
is "$(cnt '^revisit ')" "$(grep -cE 'notModified|midFetchAbort|unchanged' "$CL" | awk -v v="$vol_unch" '{print $1 - v}')" \
  "revisits == unchanged visits (volatile ones aside)"
# crawl.log as Heritrix 3 annotates revisits (FetchHistoryProcessor,
# ContentDigestHistoryLoader), first in the column so a reader splitting
# on ',' meets it first; kria's own notModified / midFetchAbort / unchanged
# after it
is "$(grep -c ' duplicate:server-not-modified,' "$CL")" "$(cnt '^revisit not-modified ')" \
  "crawl.log: duplicate:server-not-modified first on the line of each server-not-modified revisit"
is "$(grep -cE ' duplicate:server-not-modified,(notModified|midFetchAbort),' "$CL")" "$nm" \
  "... followed by kria's notModified or midFetchAbort"
is "$(grep -c ' duplicate:digest,' "$CL")" "$(cnt '^revisit identical ')" \
  "crawl.log: duplicate:digest first on the line of each identical-payload revisit"
is "$(grep -E " $U/vol " "$CL" | grep -c 'duplicate:')" 0 "a page unchanged only once stripped is no duplicate"
# a 304 or an abort: size 0 (no body: Heritrix's content length after the
# head; an aborted body is chopped), the digest carried forward from the
# last capture of the URI (the revisit record's WARC-Payload-Digest)
read -r nrev badrev <<<"$(awk '$12 ~ /(^|,)(notModified|midFetchAbort)(,|$)/ {
  n++; if ($3 != "0" || $10 != last[$4]) { bad++; print > "/dev/stderr" } }
  $10 != "-" {last[$4] = $10} END {print n + 0, bad + 0}' "$CL" 2>"$T/badrev")"
is "$nrev $badrev" "$nm 0" "304 and abort lines: size 0, the previous capture's digest"
[ -s "$T/badrev" ] && diag "$(head -3 "$T/badrev")"
is "$(awk '$2 == 304 {print $7}' "$CL" | sort -u)" unknown \
  "a 304 without Content-Type: MIME unknown (Heritrix's type until a response sets one)"
like "$(grep -c "^response 200 $U/big\$" "$T/a.list")" '^1$' "the 5 MB body is stored once (spilled, streamed)"
like "$(cat "$T/a.err")" "WARC: [0-9]+ records" "a summary of what was written"
is "$(find "$T/a/warcs" -name '*.open' | wc -l)" 0 "no file left .open at shutdown"
zcat "${A[0]}" | awk -v u="$U/" '{sub(/\r$/, "")} /^WARC-Type: /{m = $2 == "metadata"} m && $0 == "WARC-Target-URI: " u {p = 1} p {print} p && /^overdueMs/ {exit}' >"$T/meta"
like "$(cat "$T/meta")" 'outlink: http://site.test:[0-9]+/p/0 L' "metadata lists outlinks with hop types"
like "$(cat "$T/meta")" 'contentState: changed' "metadata carries the content state"
like "$(cat "$T/meta")" $'visits: [0-9]+\nversions: [0-9]+\n(.*\n)*overdueMs: [0-9]+' "metadata counts visits, versions and overdue ms in decimal"
is "$(unrecorded "$T/a" "${A[@]}")" "" "every visited URI has a record"

# ---- write-volatile = skip -----------------------------------------------------------

crawl_conf "$T/b.conf" "$T/b" "$T/seeds.txt" "[dns]" "hosts-file = $T/hosts" \
  "[adaptive]" 'digest-strip = <div class="clock">[^<]*</div>' \
  "[warc]" "write-volatile = skip" "write-request = false" "write-metadata = false"
timeout 60 "$KRIA" crawl -c "$T/b.conf" "${REV[@]}" -o limits.max-time=2500ms 2>"$T/b.err"
is "$?" 0 "write-volatile = skip crawl exits 0"
mapfile -t B < <(find "$T/b/warcs" -type f | sort)
warccheck "its files check out" "${B[@]}"
warclist "${B[@]}" >"$T/b.list"
bvol=$(grep -E " $U/vol " "$T/b/logs/crawl.log" | grep -c unchanged)
check "the volatile page was revisited unchanged ($bvol)" test "$bvol" -ge 1
is "$(grep -c "^response 200 $U/vol\$" "$T/b.list")" 1 "its unchanged visits store nothing: only the first visit"
is "$(grep -c warcSkippedVolatile "$T/b/logs/crawl.log")" "$bvol" "crawl.log says warcSkippedVolatile for each"
is "$(grep -cE '^(request|metadata) ' "$T/b.list")" 0 "no request or metadata records when turned off"
kts_stop

# ---- a WARC directory that cannot be one ------------------------------------------------

echo "a file" >"$T/notadir"
timeout 60 "$KRIA" crawl -c "$T/b.conf" -o crawl.warc-dir="$T/notadir" 2>"$T/nd.err"
is "$?" 2 "a WARC directory that cannot be made: exit 2"
like "$(cat "$T/nd.err")" "$T/notadir: .*(Not a directory|cannot write WARC files there)" "with a message naming it and why"

# ---- cut bodies: WARC-Truncated --------------------------------------------------------

cat >"$T/cut.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <a href="/cut">cut</a> <a href="/slow">slow</a> <a href="/huge">huge</a>

[route "/cut"]
body-size = 8K
drop-after = 3000

[route "/slow"]
body-size = 8K
stall = body
stall-after = 2000

[route "/huge"]
body-size = 3M
EOF2
kts_start "$T/cut.ini" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds4.txt"
crawl_conf "$T/c.conf" "$T/c" "$T/seeds4.txt" "[http]" "timeout-idle = 300ms" "max-body-bytes = 1MiB"
timeout 60 "$KRIA" crawl -c "$T/c.conf" 2>"$T/c.err"
is "$?" 0 "a crawl meeting cut bodies exits 0"
mapfile -t C < <(find "$T/c/warcs" -type f | sort)
warccheck "records of cut bodies check out (digests over what arrived)" "${C[@]}"
warclist "${C[@]}" >"$T/c.list"
like "$(cat "$T/c.list")" "response 200 $KTS_URL/cut disconnect" "a body cut by the server: WARC-Truncated: disconnect"
like "$(cat "$T/c.list")" "response 200 $KTS_URL/slow time" "a body cut by the idle timeout: WARC-Truncated: time"
like "$(cat "$T/c.list")" "response 200 $KTS_URL/huge length" "a body over max-body-bytes: WARC-Truncated: length"
is "$(unrecorded "$T/c" "${C[@]}")" "" "every visited URI has a record"
kts_stop

# ---- payload and block digests in one pass ------------------------------------------------
# A body whole in memory, not chunked, no content coding: the digest
# processor hashes the payload and the record's block [raw head, body] in
# one kr_sha1_pair and hands the block digest to the writer (also for a
# body of 1 MiB or more, written in slices). warcio.js recomputes both
# from the records, so a wrong digest passed in fails here; beside them,
# chunked, gzip and close-delimited bodies (streamed, or deferred without
# a Content-Length) and bodies of 0, 1, 55, 56 and 64 bytes (SHA-1
# padding edges of the payload lane).

cat >"$T/pair.ini" <<'EOF2'
[route "/robots.txt"]
status = 404

[route "/"]
body = <a href="/e0">0</a> <a href="/e1">1</a> <a href="/e55">55</a> <a href="/e56">56</a>
  <a href="/e64">64</a> <a href="/mid">mid</a> <a href="/large">large</a>
  <a href="/chunk">chunk</a> <a href="/gz">gz</a> <a href="/close">close</a>

[route "/e0"]
body-size = 0

[route "/e1"]
body-size = 1

[route "/e55"]
body-size = 55

[route "/e56"]
body-size = 56

[route "/e64"]
body-size = 64

[route "/mid"]
body-size = 10K

[route "/large"]
body-size = 1536K

[route "/chunk"]
body-size = 10K
chunked = 1

[route "/gz"]
body-size = 10K
gzip = 1

[route "/close"]
body-size = 10K
no-length = 1
EOF2
kts_start "$T/pair.ini" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds5.txt"
crawl_conf "$T/p.conf" "$T/p" "$T/seeds5.txt" "[warc]" "compress = none"
timeout 60 "$KRIA" crawl -c "$T/p.conf" 2>"$T/p.err"
is "$?" 0 "a crawl of bodies of every kind exits 0"
mapfile -t P < <(find "$T/p/warcs" -type f | sort)
warccheck "payload and block digests recompute over every record" "${P[@]}"
warclist "${P[@]}" >"$T/p.list"
is "$(grep -c "^response 200 $KTS_URL/" "$T/p.list")" 11 "a response record per page"
# crawl.log's digest column is the records' WARC-Payload-Digest
cat "${P[@]}" | tr -d '\r' | awk '/^WARC-Type: /{t = $2} /^WARC-Target-URI: /{u = $2}
  /^WARC-Payload-Digest: / && t == "response" {print u, $2}' | sort >"$T/p.wd"
awk '$4 != "-" {print $4, $10}' "$T/p/logs/crawl.log" | grep ' sha1:' | sort >"$T/p.cd"
is "$(wc -l <"$T/p.cd")" 12 "crawl.log has a payload digest per fetch (robots.txt too)"
is "$(cat "$T/p.cd")" "$(cat "$T/p.wd")" "... each the one of its record"
is "$(grep " $KTS_URL/e0 " "$T/p/logs/crawl.log" | awk '{print $10}')" \
  "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ" "the empty body's digest is SHA-1 of nothing"
# crawl.log's size column is Heritrix's curi.getContentLength(): the bytes
# after the HTTP head as they came (RecordingOutputStream's size minus its
# message-body mark), so chunked framing and gzip bytes count: per
# response record, its block's length past the head
python3 - "${P[@]}" >"$T/p.ws" <<'PY'
import sys
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        end = data.index(b"\r\n\r\n", i)
        head = data[i:end].decode("utf-8", "replace").split("\r\n")
        f = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in head[1:] if ":" in l}
        n = int(f["content-length"])
        block = data[end + 4:end + 4 + n]
        if f.get("warc-type") == "response" and f["warc-target-uri"].startswith("http"):
            print(f["warc-target-uri"], n - block.index(b"\r\n\r\n") - 4)
        i = end + 4 + n + 4
PY
sort -o "$T/p.ws" "$T/p.ws"
awk '$4 ~ /^http/ {print $4, $3}' "$T/p/logs/crawl.log" | sort >"$T/p.cs"
is "$(wc -l <"$T/p.cs")" 12 "a size per fetch"
is "$(cat "$T/p.cs")" "$(cat "$T/p.ws")" "... each its record's body as received (chunked and gzip as sent)"
kts_stop

# ---- crawl.log's duplicates are the WARC files' revisits --------------------------------
# Two host names for one kts serve the same bytes: robots.txt (a 404 with
# a body), a 404 page and a 200 page. A first pass stores a.test's and
# makes b.test's URL-agnostic revisits of them (adaptive.dedupe), a second
# (--revisit-now) makes every one an identical-payload revisit of its own
# URI. crawl.log says duplicate:digest on each of those lines, robots.txt
# and 404s included (Heritrix's FetchHistoryProcessor and
# ContentDigestHistoryLoader look at any status).

cat >"$T/dup.ini" <<'EOF2'
[route "/robots.txt"]
status = 404
body = no robots.txt here

[route "/"]
body = <a href="/gone">gone</a> <a href="/same">same</a>

[route "/gone"]
status = 404
body = not found

[route "/same"]
body = the same bytes on every host
EOF2
kts_start "$T/dup.ini" || bail "kts did not start"
echo "127.0.0.1 a.test b.test" >"$T/dup.hosts"
printf 'http://%s.test:%s/\n' a "$KTS_PORT" b "$KTS_PORT" >"$T/dup.seeds"
crawl_conf "$T/d.conf" "$T/d" "$T/dup.seeds" "[dns]" "hosts-file = $T/dup.hosts"
timeout 60 "$KRIA" crawl -c "$T/d.conf" 2>"$T/d.err"
is "$?" 0 "a crawl of two names for the same bytes exits 0"
timeout 60 "$KRIA" crawl -c "$T/d.conf" --revisit-now 2>"$T/d2.err"
is "$?" 0 "... and a second pass over it"
mapfile -t D < <(find "$T/d/warcs" -type f | sort)
warclist "${D[@]}" >"$T/d.list"
DCL="$T/d/logs/crawl.log"
is "$(wc -l <"$DCL")" 16 "8 URIs logged twice"
is "$(grep -c ' duplicate:digest' "$DCL")" "$(grep -c '^revisit identical ' "$T/d.list")" \
  "duplicate:digest on as many lines as there are identical-payload revisits"
is "$(grep -c ' duplicate:digest' "$DCL")" 12 "... b.test's four in the first pass, all eight in the second"
like "$(grep "b.test:$KTS_PORT/robots.txt " "$DCL" | head -1)" " 404 .* - duplicate:digest\$" \
  "b.test's robots.txt, a 404 with a.test's bytes: duplicate:digest"
like "$(grep "a.test:$KTS_PORT/gone " "$DCL" | tail -1)" " 404 .* - duplicate:digest,unchanged," \
  "a 404 page fetched again with the same bytes: duplicate:digest"
kts_stop

# ---- kria cdx ---------------------------------------------------------------------------

"$KRIA" cdx "${A[@]}" "${B[@]}" >"$T/idx.cdxj"
is "$?" 0 "kria cdx over the crawl's files exits 0"
if (cd "$HERE" && node warccheck.mjs --cdx "$T/idx.cdxj" "${A[@]}" "${B[@]}") >"$T/cdx.out" 2>&1; then
  ok "kria cdx agrees with warcio.js's indexer ($(grep -o '[0-9]* lines agree' "$T/cdx.out"))"
else
  not_ok "kria cdx agrees with warcio.js's indexer"; diag "$(grep -v '^ok ' "$T/cdx.out" | head)"
fi

# ---- kria wacz --------------------------------------------------------------------------

W="$T/out.wacz"
"$KRIA" wacz --title "kria test" "$W" "${A[@]}" "${B[@]}" 2>"$T/wacz.err"
is "$?" 0 "kria wacz exits 0"
if unzip -t "$W" >"$T/unzip.out" 2>&1; then ok "unzip -t accepts the package"; else
  not_ok "unzip -t accepts the package"; diag "$(tail -5 "$T/unzip.out")"
fi
names=$(unzip -Z1 "$W" | sort)
# the index is index.cdx, or from 50,000 bytes on index.cdx.gz + index.idx
IX=(indexes/index.cdx)
unzip -Z1 "$W" | grep -q '^indexes/index.idx$' && IX=(indexes/index.cdx.gz indexes/index.idx)
want=$( { for f in "${A[@]}" "${B[@]}"; do echo "archive/${f##*/}"; done
  printf '%s\n' "${IX[@]}" pages/pages.jsonl datapackage.json datapackage-digest.json; } | sort)
is "$names" "$want" "entries: the WARCs, index, pages, datapackage and its digest"
if out=$(node "$HERE/waczcheck.mjs" "$W" 2>&1); then ok "waczcheck.mjs passes the package ($(tail -1 <<<"$out"))"; else
  not_ok "waczcheck.mjs passes the package"; diag "$(head -20 <<<"$out")"
fi
is "$(zipinfo "$W" 'archive/*' | awk '{print $6}' | sort -u)" stor "WARCs are stored, not deflated"
mkdir -p "$T/x" && (cd "$T/x" && unzip -q "$W")
bad=0 n=0
while IFS=$'\t' read -r path hash bytes; do
  n=$((n + 1))
  got=$(sha256sum "$T/x/$path" | cut -d' ' -f1)
  [ "sha256:$got" = "$hash" ] || { bad=$((bad + 1)); diag "$path: hash $hash, file sha256:$got"; }
  [ "$(stat -c %s "$T/x/$path")" = "$bytes" ] || { bad=$((bad + 1)); diag "$path: bytes $bytes"; }
done < <(node -e 'const d=require(process.argv[1]); if (d.profile!=="data-package"||d.wacz_version!=="1.1.1") process.exit(3); for (const r of d.resources) console.log([r.path,r.hash,r.bytes].join("\t"))' "$T/x/datapackage.json")
is "$n" $((${#A[@]} + ${#B[@]} + ${#IX[@]} + 1)) "datapackage.json lists every file (profile data-package, wacz_version 1.1.1)"
is "$bad" 0 "datapackage.json sizes and SHA-256 match the entries"
dg=$(node -p 'require(process.argv[1]).hash' "$T/x/datapackage-digest.json")
is "$dg" "sha256:$(sha256sum "$T/x/datapackage.json" | cut -d' ' -f1)" "datapackage-digest.json matches datapackage.json"
if [ -f "$T/x/indexes/index.cdx" ]; then cat "$T/x/indexes/index.cdx"; else gzip -dc "$T/x/indexes/index.cdx.gz"; fi >"$T/x.cdxj"
is "$(sed 's/, "recordDigest": "sha256:[0-9a-f]*"}$/}/' "$T/x.cdxj")" "$(cat "$T/idx.cdxj")" "the index is kria cdx's, with recordDigest"
like "$(head -1 "$T/x/pages/pages.jsonl")" '"format": "json-pages-1.0"' "pages.jsonl starts with its header"
like "$(cat "$T/x/pages/pages.jsonl")" "\"url\": \"$U/p/0\", \"ts\": \"[0-9-]+T[0-9:.]+Z\"" "pages.jsonl lists the HTML pages with their first capture"
cp "${A[0]}" "$T/left.warc.gz.open"
"$KRIA" wacz "$T/o2.wacz" "$T/left.warc.gz.open" 2>"$T/w2.err"
is "$?" 2 "a file still .open is refused"
head -c 5000 /dev/urandom >"$T/junk.warc.gz"
"$KRIA" wacz "$T/o3.wacz" "${A[0]}" "$T/junk.warc.gz" 2>"$T/w3.err"
is "$?" 2 "a garbage WARC is an error"
check "and no package is left behind" test ! -e "$T/o3.wacz" -a -z "$(find "$T" -maxdepth 1 -name 'o3.wacz.tmp*')"
"$KRIA" wacz "$T/o4.wacz" 2>/dev/null
is "$?" 64 "no WARC files: usage error"

# ---- kill -9 mid-crawl ----------------------------------------------------------------

cat >"$T/slow.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[site]
pages = 200
links = 3
body-size = 6K
delay-ms = 5
EOF
kts_start "$T/slow.ini" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds2.txt"
crawl_conf "$T/k.conf" "$T/k" "$T/seeds2.txt" "[warc]" "durability = none"
"$KRIA" crawl -c "$T/k.conf" 2>"$T/k1.err" &
kpid=$!
_pids+=("$kpid")
# bounded wait on the crawl's progress: 40 lines in crawl.log
for _ in $(seq 400); do
  [ "$(cat "$T/k/logs/crawl.log" 2>/dev/null | wc -l)" -ge 40 ] && break
  sleep 0.05
done
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
is "$(find "$T/k/warcs" -name '*.warc.gz.open' | wc -l)" 1 "kill -9 leaves the file .open"
timeout 120 "$KRIA" crawl -c "$T/k.conf" 2>"$T/k2.err"
is "$?" 0 "the restarted crawl completes"
like "$(cat "$T/k2.err")" "repaired 1 WARC file" "the .open file is repaired at start-up"
is "$(find "$T/k/warcs" -name '*.open' | wc -l)" 0 "nothing left .open"
mapfile -t K < <(find "$T/k/warcs" -type f | sort)
is "${#K[@]}" 2 "the repaired file and the new one"
warccheck "the repaired file and the new one check out" "${K[@]}"
is "$(unrecorded "$T/k" "${K[@]}")" "" "every URI visited before or after the kill has a record"
is "$(sqlite3 "$T/k/kria.db" 'select count(*) from uris where state = 1')" 201 "the whole site (and robots.txt) was visited"

# durability batch: each commit records how far the file was synced, and
# the repair after a kill -9 reads only what comes after that offset
crawl_conf "$T/kb.conf" "$T/kb" "$T/seeds2.txt" "[warc]" "durability = batch"
"$KRIA" crawl -c "$T/kb.conf" 2>"$T/kb1.err" &
kpid=$!
_pids+=("$kpid")
for _ in $(seq 400); do
  [ "$(cat "$T/kb/logs/crawl.log" 2>/dev/null | wc -l)" -ge 40 ] && break
  sleep 0.05
done
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
open_file=$(find "$T/kb/warcs" -name '*.warc.gz.open' -printf '%f\n')
mark=$(sqlite3 "$T/kb/kria.db" "select value from meta where key = 'warc.synced'")
is "${mark#* }" "$open_file" "the store names the open file with its synced offset"
check "the synced offset is within the file" test "${mark%% *}" -gt 0 -a "${mark%% *}" -le "$(stat -c %s "$T/kb/warcs/$open_file")"
timeout 120 "$KRIA" crawl -c "$T/kb.conf" 2>"$T/kb2.err"
is "$?" 0 "the restarted crawl completes (batch)"
like "$(cat "$T/kb2.err")" "repaired 1 WARC file.s. left open .1 from the synced offset" "the repair starts at the synced offset"
mapfile -t K < <(find "$T/kb/warcs" -type f | sort)
is "${#K[@]}" 2 "the repaired file and the new one (batch)"
warccheck "they check out (batch)" "${K[@]}"
is "$(unrecorded "$T/kb" "${K[@]}")" "" "every URI visited before or after the kill has a record (batch)"
kts_stop

# ---- a full disk --------------------------------------------------------------------------

mkdir -p "$T/full"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
  skip "needs root and tmpfs mounts" "full disk: hold, error, resume"
  done_testing
fi
trap 'umount "$T/full" 2>/dev/null; _lib_cleanup' EXIT
cat >"$T/full.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[site]
pages = 60
links = 3
body-size = 12K
seed = 7
EOF
kts_start "$T/full.ini" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds3.txt"
# leave about 120 KiB: a few dozen records fit, then the disk is full
avail=$(df -B1 --output=avail "$T/full" | tail -1)
dd if=/dev/zero of="$T/full/filler" bs=4096 count=$(((avail - 120 * 1024) / 4096)) 2>/dev/null
crawl_conf "$T/f.conf" "$T/f" "$T/seeds3.txt" "[warc]" "retry-interval = 200ms" "compress = none" \
  "[status]" "listen = 127.0.0.1:0"
"$KRIA" crawl -c "$T/f.conf" -o crawl.warc-dir="$T/full/warcs" 2>"$T/f.err" &
fpid=$!
_pids+=("$fpid")
for _ in $(seq 400); do grep -q "cannot write WARC records" "$T/f.err" && break; sleep 0.05; done
like "$(cat "$T/f.err")" "cannot write WARC records \((enospc|no-space)[^)]*\): no new fetches" \
  "a full disk: one clear error, fetching held"
n_held=$(wc -l <"$T/f/logs/crawl.log")
faddr=$(cat "$T/f/status.addr" 2>/dev/null)
curl -s -m 5 "http://$faddr/status" >"$T/f.status" 2>/dev/null
curl -s -m 5 "http://$faddr/metrics" >"$T/f.metrics" 2>/dev/null
like "$(tr -d '\n' <"$T/f.status")" '"warc":\{[^}]*"write_errors":[1-9][0-9]*,[^}]*"held":true' \
  "/status warc: write errors counted, held"
check "/metrics: kria_warc_write_errors_total >= 1 and kria_warc_held 1" \
  bash -c "grep -qE '^kria_warc_write_errors_total [1-9][0-9]*$' '$T/f.metrics' && grep -qE '^kria_warc_held 1$' '$T/f.metrics'"
rm -f "$T/full/filler"
timeout 60 tail -s 0.05 --pid="$fpid" -f /dev/null || kill -KILL "$fpid"
wait "$fpid"
is "$?" 0 "the crawl resumes and completes once space is freed"
like "$(cat "$T/f.err")" "writing WARC records again" "says so when it resumes"
is "$(grep -c 'cannot write WARC records' "$T/f.err")" 1 "the error is logged once per episode"
check "URIs were visited after the resume ($n_held before)" \
  test "$(wc -l <"$T/f/logs/crawl.log")" -gt "$n_held"
mapfile -t F < <(find "$T/full/warcs" -type f | sort)
warccheck "the WARC files on the once-full disk check out" "${F[@]}"
is "$(sqlite3 "$T/f/kria.db" 'select count(*) from uris where state = 1')" 61 "every page (and robots.txt) visited"
is "$(unrecorded "$T/f" "${F[@]}")" "" "every visited URI has its record: nothing lost to the full disk"
is "$(awk '{print $4}' "$T/f/logs/crawl.log" | sort | uniq -d | wc -l)" 0 "no URI logged twice"
kts_stop
umount "$T/full"
trap _lib_cleanup EXIT

done_testing
