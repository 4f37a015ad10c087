#!/usr/bin/env bash
# A real crawl of more than 50,000 captures, packed by `kria wacz`, opens
# in ReplayWeb.page (headless Chromium, as replay_browser.sh: replay.mjs
# through replay_lib.bash) with random access: the service worker reads
# the WACZ by byte ranges, through indexes/index.idx, a small part of it.
#
# kts serves a site of $PAGES pages /p/N ("Page /p/N", a #marker naming
# the page, links to three others, all reachable from /p/0), each with its
# own stylesheet /css/p/N.css (.probe's colour and a ::after content naming
# the stylesheet) and image /img/p/N.png (one PNG for all: past the first,
# identical-payload revisits of /img/p/0.png). kria crawls it twice:
# crawl.revisit = false, then --revisit-now (304s: not-modified revisits
# whose payload is in the first pass's WARC), 3 x $PAGES + 2 captures a
# pass. `kria wacz` packs both WARCs; the index is then index.cdx.gz in
# blocks with index.idx. replay.mjs serves it on 127.0.0.1 and opens, each
# by URL and timestamp in a new tab, the captures of the first, middle and
# last page of the index and of their stylesheets and images (both
# passes): a page must show its own marker, its own stylesheet applied
# and its image decoded, a stylesheet its text, an image its PNG. The server sees every
# byte range the service worker asks for: in all they must be under 10 %
# of the WACZ, index.idx must have been read and index.cdx.gz not whole.
# The figures (captures, crawl time, WACZ size, bytes and requests read,
# time to the first capture shown) are TAP diagnostics; bench/RESULTS.md
# has one run's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.bash"

PAGES=8500
replay_prereqs
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v unzip >/dev/null || bail "unzip is not installed"

# ---- the crawl --------------------------------------------------------------------

replay_png "$T/pic.png" || bail "could not write the test PNG"
cat >"$T/routes.ini" <<EOF
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <!DOCTYPE html><html><body><a href="/p/0">start</a></body></html>

[site "/p/"]
pages = $PAGES
links = 3
etag = auto
last-modified = auto
body = <!DOCTYPE html><html><head><title>Page {path}</title><link rel="stylesheet" href="/css{path}.css"></head>
body = <body><p id="marker" class="probe">kria-replay large, page {path}</p><img id="pic" src="/img{path}.png">

[route "/css/*"]
content-type = text/css
etag = auto
last-modified = auto
body = .probe { color: rgb(1, 2, 3)\x3b }\n.probe::after { content: "stylesheet {path}"\x3b }

[route "/img/*"]
content-type = image/png
etag = auto
last-modified = auto
body-file = pic.png
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
replay_crawl "$KTS_URL/"
replay_pass 120 1
ms1=$REPLAY_PASS_MS
replay_pass 120 2 --revisit-now
ms2=$REPLAY_PASS_MS
kts_stop
is "$?" 0 "kts stopped cleanly (the replay below never reaches it)"

W=$T/large.wacz
replay_pack "$W"
captures=$(wc -l <"$T/all.cdxj")
check "at least 50,000 captures ($captures)" test "$captures" -ge 50000
diag "crawl: $captures captures of $PAGES pages (page, stylesheet, image) in 2 passes: $ms1 ms, $ms2 ms (--revisit-now)"
is "$(grep -c '"mime": "warc/revisit"' "$T/all.cdxj")" $((captures / 2 + PAGES - 1)) \
  "revisits: every capture of the second pass, and the first pass's images past the first"

wsize=$(stat -c %s "$W")
is "$(unzip -Z1 "$W" | grep '^indexes/' | sort | tr '\n' ' ')" "indexes/index.cdx.gz indexes/index.idx " \
  "the index is index.cdx.gz in blocks with index.idx"

# entry NAME: "START SIZE" of NAME's stored data in the WACZ (its local
# header's offset from zipinfo, then past the header's name and extra
# field)
entry() {
  local lho size n x
  lho=$(zipinfo -v "$W" "$1" | sed -n 's/^ *offset of local header from start of archive: *\([0-9]*\).*/\1/p')
  size=$(zipinfo -v "$W" "$1" | sed -n 's/^ *compressed size: *\([0-9]*\).*/\1/p')
  read -r n x < <(od -An -tu2 -j $((lho + 26)) -N4 "$W")
  echo "$((lho + 30 + n + x)) $size"
}
read -r cdx_at cdx_size < <(entry indexes/index.cdx.gz)
read -r idx_at idx_size < <(entry indexes/index.idx)
check "index.cdx.gz found in the WACZ ($cdx_size bytes at $cdx_at)" test "${cdx_size:-0}" -gt 0
check "index.idx found in the WACZ ($idx_size bytes at $idx_at)" test "${idx_size:-0}" -gt 0

# ---- the replay -------------------------------------------------------------------

# the first, middle and last page of the index (SURT order), with their
# stylesheets and images
mapfile -t pages < <(grep -oP '"url": "\K[^"]*/p/[0-9]+(?=")' "$T/all.cdxj" | uniq)
is "${#pages[@]}" "$PAGES" "every page captured"
pick=()
for u in "${pages[0]}" "${pages[$((${#pages[@]} / 2))]}" "${pages[-1]}"; do
  p=${u#"$KTS_URL"}
  pick+=("$u" "$KTS_URL/css$p.css" "$KTS_URL/img$p.png")
done
alt=$(printf '%s|' "${pick[@]}" | sed 's/[.]/\\./g; s/|$//')
replay_run 120 replay --wacz "$W" --cdx "$T/all.cdxj" --skip "^(?!($alt)\$)" "${warcs[@]}"
rc=$?
is "$rc" 0 "replay.mjs ran to the end"
[ "$rc" = 0 ] || diag "$(tail -20 "$T/replay.err")"
replay_results "$T/replay.out"
is "$(grep -cP '^RESULT\t' "$T/replay.out")" 18 \
  "three pages, their stylesheets and images checked, each at both passes"
is "$(grep -cP '^RESULT\t[^\t]*\tnot-modified\t' "$T/replay.out")" 9 \
  "... the second pass's not-modified revisits among them"
is "$(grep -cP '^RESULT\t.*\t(http://[^/]*/p/[0-9]+)\t[0-9]+\thtml' "$T/replay.out")" 6 \
  "... the pages held to their marker, their own stylesheet and their image"

# every WACZ range the server served: "STATUS START-END" last on its log
# line
awk -v a="$cdx_at" -v b="$((cdx_at + cdx_size))" -v c="$idx_at" -v d="$((idx_at + idx_size))" '
  function overlap(s, e, lo, hi) { s = s > lo ? s : lo; e = e < hi ? e : hi; return e > s ? e - s : 0 }
  $1 == "GET" && $2 ~ /^\/test\.wacz/ {
    split($NF, r, "-"); s = r[1]; e = r[2] + 1
    n++; partial += $(NF - 1) == 206; bytes += e - s; cdx += overlap(s, e, a, b); idx += overlap(s, e, c, d)
  }
  END { printf "%d %d %d %d %d\n", n, partial, bytes, cdx, idx }' "$T/replay.log" >"$T/reads"
read -r nreq npartial bytes cdx_read idx_read <"$T/reads"
first_ms=$(grep -m1 -oP '^# shown in \K[0-9]+' "$T/replay.out")
diag "WACZ $wsize bytes ($captures captures, index.cdx.gz $cdx_size, index.idx $idx_size bytes)"
diag "read: $bytes bytes in $nreq range requests ($(awk -v b="$bytes" -v w="$wsize" 'BEGIN { printf "%.2f", 100 * b / w }') %)," \
  "index.cdx.gz $cdx_read bytes, index.idx $idx_read; first capture shown in ${first_ms:-?} ms"
check "the service worker read the WACZ ($nreq requests)" test "$nreq" -ge 3
is "$npartial" "$nreq" "... each request a byte range (206)"
check "it read under 10 % of the WACZ ($bytes of $wsize bytes)" test $((bytes * 10)) -lt "$wsize"
is "$idx_read" "$idx_size" "it read index.idx"
check "it read blocks of index.cdx.gz ($cdx_read bytes), not all ($cdx_size): under half" \
  test "$cdx_read" -gt 0 -a $((cdx_read * 2)) -lt "$cdx_size"
done_testing
