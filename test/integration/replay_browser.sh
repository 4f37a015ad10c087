#!/usr/bin/env bash
# kria's captures replayed in a real browser: ReplayWeb.page (npm
# replaywebpage) in headless Chromium (Debian's chromium), driven by
# puppeteer-core, both pinned in package.json + package-lock.json and
# installed here with `npm ci` when missing. Skipped without chromium or
# node.
#
# A kts site is crawled in three passes (crawl.revisit = false, then
# --revisit-now twice; validators trusted from the first revisit), each
# pass starting in a later wall-clock second than the last one ended, as
# WARC-Date has seconds resolution in the index ReplayWeb.page looks
# captures up by. The site gives every kind of capture:
#   /page        HTML with a stylesheet and an image; ETag: 304 revisits
#   /style.css   the stylesheet (sets .probe's colour); ETag: 304 revisits
#   /pic.png     a 37x23 PNG; ETag: 304 revisits
#   /same        no validators, the same bytes each time: identical-payload
#                revisits of the same URL
#   /dup-a /dup-b  one payload at two URLs: a cross-URL identical-payload
#                revisit ([adaptive] dedupe)
#   /mf          ignores conditional requests, answers 200 with the same
#                ETag and Last-Modified: kria aborts the body (mid-fetch)
#   /changing    a new version on every request: each capture its own
#   /            the index, the same bytes each time
# `kria wacz` packs the WARCs; replay.mjs serves ReplayWeb.page and the
# WACZ (with Range) on 127.0.0.1 and opens every capture of `kria cdx`'s
# index by its URL and 14-digit timestamp (robots.txt aside): one TAP line
# per capture, naming its kind, URL and timestamp (replay.mjs says what
# each must show). Then: every kind of capture was there to check.
. "$(dirname "$0")/lib.sh"

HERE=$KRIA_TOP/test/integration

# Known failures, by kind (space-separated; their lines are TAP TODO):
# none. Until 304 revisits had an empty block they were indexed with
# status 304, which wabac.js answers as an empty 304 without reading the
# WARC, and the frame stayed blank: TODO_KINDS="not-modified" then.
TODO_KINDS=""
TODO_WHY="known replay failure"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  skip "chromium not installed (make deps installs it as optional)" "replay in ReplayWeb.page"
  done_testing
fi
if ! command -v node >/dev/null; then
  skip "node not installed (make deps installs nodejs)" "replay in ReplayWeb.page"
  done_testing
fi
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
if [ ! -f "$HERE/node_modules/puppeteer-core/package.json" ] ||
  [ ! -f "$HERE/node_modules/replaywebpage/sw.js" ]; then
  diag "installing puppeteer-core and replaywebpage from package-lock.json (npm ci)"
  if ! (cd "$HERE" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
    not_ok "npm ci installs puppeteer-core and replaywebpage"
    diag "$(tail -20 "$T/npm.log")"
    done_testing
  fi
fi
for p in puppeteer-core replaywebpage; do
  want=$(node -p "require('$HERE/package.json').dependencies['$p']")
  have=$(node -p "require('$HERE/node_modules/$p/package.json').version")
  is "$have" "$want" "$p $want installed (pinned)"
done

# ---- the site ---------------------------------------------------------------------

# a 37x23 RGB PNG, made here (zlib from node)
node -e '
const z = require("zlib"), fs = require("fs");
const crcT = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
const crc = (b) => { let c = 0xffffffff; for (const x of b) c = crcT[(c ^ x) & 255] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
const chunk = (t, d) => { const l = Buffer.alloc(4), c = Buffer.alloc(4), td = Buffer.concat([Buffer.from(t), d]); l.writeUInt32BE(d.length); c.writeUInt32BE(crc(td)); return Buffer.concat([l, td, c]); };
const w = 37, h = 23, ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3, Buffer.from([200, 30, 30]))]);
fs.writeFileSync(process.argv[1], Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
  chunk("IHDR", ihdr), chunk("IDAT", z.deflateSync(Buffer.concat(Array(h).fill(row)))), chunk("IEND", Buffer.alloc(0))]));
' "$T/pic.png" || bail "could not write the test PNG"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <!DOCTYPE html><html><body><p id="marker">kria-replay index</p>
body = <a href="/page">p</a> <a href="/same">s</a> <a href="/dup-a">a</a> <a href="/dup-b">b</a>
body = <a href="/mf">m</a> <a href="/changing">c</a></body></html>

[route "/page"]
etag = auto
last-modified = auto
body = <!DOCTYPE html><html><head><title>page</title><link rel="stylesheet" href="/style.css"></head>
body = <body><p id="marker" class="probe">kria-replay page with style and image</p>
body = <img id="pic" src="/pic.png"></body></html>

[route "/style.css"]
etag = auto
last-modified = auto
content-type = text/css
body = .probe { color: rgb(1, 2, 3)\x3b margin-left: 17px\x3b }

[route "/pic.png"]
etag = auto
last-modified = auto
content-type = image/png
body-file = pic.png

[route "/same"]
body = <!DOCTYPE html><html><body><p id="marker">kria-replay same bytes, no validators</p></body></html>

[route "/dup-a"]
body = <!DOCTYPE html><html><body><p id="marker">kria-replay one payload at two URLs</p></body></html>

[route "/dup-b"]
body = <!DOCTYPE html><html><body><p id="marker">kria-replay one payload at two URLs</p></body></html>

[route "/mf"]
etag = "mf-forever"
last-modified = Tue, 15 Nov 1994 12:45:26 GMT
ignore-conditionals = 1
body = <!DOCTYPE html><html><body><p id="marker">kria-replay mid-fetch, validators never move</p></body></html>

[route "/changing"]
etag = auto
last-modified = auto
change-every = 1
body = <!DOCTYPE html><html><body><p id="marker">kria-replay changing, version {version}</p></body></html>
EOF
kts_start "$T/routes.ini" || bail "kts did not start"

echo "$KTS_URL/" >"$T/seeds.txt"
loopback_conf "$T/seeds.txt" "$T/state" >"$T/c.conf"
cat >>"$T/c.conf" <<EOF
# validators used from the first revisit on: conditional GETs (304s) and
# mid-fetch aborts, no sampled full downloads
[adaptive]
trust-sample = 0
trust-probation = 0
dedupe = true
EOF

# pass N ARGS...: one crawl pass, begun in a later second than the last
# one ended (a bounded wait on the clock: at most one second)
last_sec=0
later_second() { [ "$(date +%s)" -gt "$last_sec" ]; }
pass() {
  local n=$1; shift
  wait_until 3 later_second || bail "the clock did not move on"
  timeout 60 "$KRIA" crawl -c "$T/c.conf" "$@" >"$T/crawl$n.out" 2>"$T/crawl$n.err"
  is "$?" 0 "crawl pass $n exits 0"
  last_sec=$(date +%s)
}
pass 1
pass 2 --revisit-now
pass 3 --revisit-now
kts_stop
is "$?" 0 "kts stopped cleanly (the replay below never reaches it)"

mapfile -t warcs < <(find "$T/state/warcs" -name '*.warc.gz' | sort)
"$KRIA" cdx "${warcs[@]}" >"$T/all.cdxj" 2>"$T/cdx.err"
is "$?" 0 "kria cdx indexes the crawl's ${#warcs[@]} WARC files"
"$KRIA" wacz "$T/test.wacz" "${warcs[@]}" >"$T/wacz.out" 2>"$T/wacz.err"
is "$?" 0 "kria wacz packs them"
is "$(cut -d' ' -f1,2 "$T/all.cdxj" | sort | uniq -d)" "" "no URL captured twice in one second"

# ---- the replay ---------------------------------------------------------------------

timeout 180 node "$HERE/replay.mjs" --chromium "$CHROMIUM" --wacz "$T/test.wacz" --cdx "$T/all.cdxj" \
  --log "$T/http.log" --skip 'robots\.txt$' "${warcs[@]}" >"$T/replay.out" 2>"$T/replay.err"
rc=$?
# Chromium is closed by replay.mjs; should it have been cut short, stop it
# (and its process group: puppeteer starts it detached) by its PID
cpid=$(cat "$T/http.log.chromium-pid" 2>/dev/null)
if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then
  kill -KILL -- "-$cpid" 2>/dev/null || kill -KILL "$cpid" 2>/dev/null
  not_ok "Chromium closed by replay.mjs"
fi
is "$rc" 0 "replay.mjs ran to the end"
[ "$rc" = 0 ] || diag "$(tail -20 "$T/replay.err")"
grep '^#' "$T/replay.out" | sed 's/^# //' | while IFS= read -r l; do diag "$l"; done

declare -A kinds=()
while IFS=$'\t' read -r tag res kind url ts detail; do
  [ "$tag" = RESULT ] || continue
  kinds[$kind]=$((${kinds[$kind]:-0} + 1))
  [ -n "$TODO_KINDS" ] && [[ " $TODO_KINDS " == *" $kind "* ]] && TAP_TODO=$TODO_WHY
  if [ "$res" = ok ]; then ok "$kind $url $ts: $detail"; else not_ok "$kind $url $ts: $detail"; fi
  TAP_TODO=
done < <(grep -P '^RESULT\t' "$T/replay.out")

# ---- the check can fail ----------------------------------------------------------

# A WACZ of the first pass only, checked against the whole index for the
# changing page: its later captures are missing, ReplayWeb.page shows
# another one (the first version), which replay.mjs must refuse.
"$KRIA" wacz "$T/first.wacz" "${warcs[0]}" >"$T/wacz1.out" 2>"$T/wacz1.err"
is "$?" 0 "kria wacz packs the first pass alone"
timeout 120 node "$HERE/replay.mjs" --chromium "$CHROMIUM" --wacz "$T/first.wacz" --cdx "$T/all.cdxj" \
  --log "$T/http1.log" --skip '^(?!.*/changing$)' "${warcs[@]}" >"$T/replay1.out" 2>"$T/replay1.err"
rc=$?
cpid=$(cat "$T/http1.log.chromium-pid" 2>/dev/null)
[ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null && { kill -KILL -- "-$cpid" 2>/dev/null || kill -KILL "$cpid" 2>/dev/null; }
is "$rc" 0 "replay.mjs ran to the end on the first pass's WACZ"
is "$(grep -cP '^RESULT\tok\toriginal\t.*/changing\t' "$T/replay1.out")" 1 \
  "... the changing page's first capture replays"
is "$(grep -cP '^RESULT\tfail\tchanged\t.*/changing\t' "$T/replay1.out")" 2 \
  "... its two later captures, missing from the WACZ, are refused"
diag "$(grep -P '^RESULT\tfail' "$T/replay1.out" | head -1 | cut -f6 | cut -c1-300)"

# every kind of capture the test is about was made and checked
for k in original changed not-modified midfetch identical-same-url identical-cross-url; do
  check "captures of kind $k checked (${kinds[$k]:-0})" test "${kinds[$k]:-0}" -ge 1
done
is "${kinds[changed]:-0}" 2 "the changing page: two new versions after the first"
done_testing
