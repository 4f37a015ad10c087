#!/usr/bin/env bash
# Adaptive revisiting end to end: kria crawls a changing kts site for 20 s
# of real time with second-scale waits, and the ground truth of kts
# (/_kts/paths: requests and versions per path) is held against crawl.log
# (the thesis' wt:<wait>,<visits>vis,<versions>ver,ov:<overdue>
# annotations) and the final summary. Page classes (3 pages each):
#   fast    a new version on every request (change-every = 1)
#   timed   a new version every 4 s of the kts clock
#   slow    never changes, honest ETag and Last-Modified
#   ign     never changes, honest validators, ignores conditional requests
#           (so only the mid-fetch check can save its bodies)
#   vol     a clock section that changes on every request, no validators,
#           with an adaptive.digest-strip rule for it
#   volctl  the same without the strip rule
#   img     never-changing images (their evaluator starts at 10 s)
#   liar    on a second host (localhost): changes on every request while
#           its ETag and Last-Modified never move, conditional requests
#           ignored
# Asserted, for the multiplicative policy: fast pages end with shorter
# waits than timed ones, timed shorter than slow, images longer than slow
# pages; vol behaves as unchanged ("stripped", waits growing) while volctl
# changes on every visit; unchanged visits are 304s ("notModified") and
# mid-fetch aborts ("midFetchAbort") once the honest host earned trust;
# the liar host is distrusted ("validatorMiss", the summary) and its
# changes are still captured; the capture ratio over pages that change is
# at least 0.8; the body bytes of unchanged visits of pages with honest
# validators are mostly saved (the figure is printed). The thesis' policy
# is set with -o (wait.NAME.policy = multiplicative); without that key
# the crawl is kria's default, the poisson policy:
# crawl.log names poisson and its estimator for text and images, fast pages still end below
# slow ones and vol below volctl in visits.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow:\n

[route "/"]
body = <html><body>
body = <a href="/fast/0">f</a> <a href="/slow/0">s</a> <a href="/timed/0">t</a>
body = <a href="/vol/0">v</a> <a href="/volctl/0">c</a> <a href="/ign/0">i</a>
body = <img src="/img/0"> <img src="/img/1"> <img src="/img/2">
body = </body></html>

[site "/fast/"]
pages = 3
links = 2
change-every = 1
etag = auto
last-modified = auto
body-size = 4K

[site "/timed/"]
pages = 3
links = 2
change-every-ms = 4000
etag = auto
last-modified = auto
body-size = 4K

[site "/slow/"]
pages = 3
links = 2
etag = auto
last-modified = auto
body-size = 4K

[site "/ign/"]
pages = 3
links = 2
etag = auto
last-modified = auto
ignore-conditionals = 1
body-size = 4K

[site "/vol/"]
pages = 3
links = 2
volatile = 1
body-size = 4K

[site "/volctl/"]
pages = 3
links = 2
volatile = 1
body-size = 4K

[site "/img/"]
pages = 3
content-type = image/png
etag = auto
last-modified = auto
body-size = 4K

[site "/liar/"]
host = localhost
pages = 3
links = 2
change-every = 1
etag = "fixed-forever"
last-modified = Tue, 15 Nov 1994 12:45:26 GMT
ignore-conditionals = 1
body-size = 4K
EOF

conf() { # conf FILE STATE SEEDS
  cat >"$1" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $3
state-dir = $2
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[limits]
max-time = 20s
[store]
commit-interval = 10ms
[adaptive]
digest-strip = <div class="clock">[^<]*</div>
digest-strip-url = /vol/
[wait "text"]
content-type = ^text/
initial-wait = 2s
default-wait = 2s
min-wait = 1s
max-wait = 30s
[wait "image"]
content-type = ^image/
initial-wait = 10s
default-wait = 10s
min-wait = 10s
max-wait = 60s
[wait "default"]
initial-wait = 2s
default-wait = 2s
min-wait = 1s
max-wait = 30s
EOF
}

# ms of a crawl.log duration (45s0ms, 1m2s300ms, 3ms)
to_ms='function ms(s,  t, n, u) { t = 0
  while (match(s, /^[0-9]+(ms|d|h|m|s)/)) {
    n = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
    u = n; sub(/^[0-9]+/, "", u); n = n + 0
    t += u == "ms" ? n : u == "s" ? n * 1000 : u == "m" ? n * 60000 : u == "h" ? n * 3600000 : n * 86400000
  }
  return t }'

# last_wt CRAWLLOG PATH-ERE: the wait of the last line of each matching
# URI, in ms, one per line
last_wt() {
  awk -v re="$2" "$to_ms"'
    $4 ~ re { if (match($12, /wt:[0-9a-z]+/)) last[$4] = ms(substr($12, RSTART + 3, RLENGTH - 3)) }
    END { for (u in last) print last[u] }' "$1"
}
mean() { awk '{ s += $1; n++ } END { if (n) printf "%d\n", s / n; else print 0 }'; }

run_crawl() { # run_crawl NAME [kria -o ...]: a 20 s crawl against a fresh kts
  local name=$1; shift
  # the kts clock starts in 2001 (Last-Modified 0 would read as none), on
  # a multiple of 4 s: timed pages start at version START_V
  kts_start "$T/routes.ini" --start-ms "$START_MS" --log "$T/$name.kts.log" || bail "kts did not start"
  printf '%s\n' "$KTS_URL/" "http://localhost:$KTS_PORT/liar/0" >"$T/$name.seeds"
  conf "$T/$name.conf" "$T/$name.state" "$T/$name.seeds"
  timeout 120 "$KRIA" crawl -c "$T/$name.conf" "$@" >"$T/$name.out" 2>"$T/$name.err"
  RC=$?
  curl -s "$KTS_URL/_kts/paths" >"$T/$name.paths"
  kts_stop
  CL="$T/$name.state/logs/crawl.log"
}

START_MS=1000000000000
START_V=$((START_MS / 4000))

# ---- multiplicative ------------------------------------------------------------

run_crawl mult -o wait.text.policy=multiplicative -o wait.image.policy=multiplicative \
  -o wait.default.policy=multiplicative -o adaptive.informed-priors=false
is "$RC" 0 "the crawl ends at max-time with exit 0"
like "$(cat "$T/mult.err")" "limit max-time reached" "stopped by max-time"

fast=$(last_wt "$CL" '/fast/' | mean)
timed=$(last_wt "$CL" '/timed/' | mean)
slow=$(last_wt "$CL" '/slow/' | mean)
img=$(last_wt "$CL" '/img/' | mean)
vol=$(last_wt "$CL" '/vol/' | mean)
volctl=$(last_wt "$CL" '/volctl/' | mean)
diag "final waits (ms, mean of 3 pages): fast $fast timed $timed slow $slow img $img vol $vol volctl $volctl"
is "$(last_wt "$CL" '/(fast|timed|slow|img|vol|volctl)/' | wc -l)" 18 "every page has wt: annotations"
check "fast pages end with shorter waits than timed ones ($fast < $timed)" test "$fast" -lt "$timed"
check "timed pages end with shorter waits than slow ones ($timed < $slow)" test "$timed" -lt "$slow"
check "images end with longer waits than slow pages ($img > $slow)" test "$img" -gt "$slow"
check "fast pages reach min-wait (1 s)" test "$fast" -eq 1000
check "a volatile page with a strip rule waits longer than one without ($vol > $volctl)" \
  test "$vol" -gt "$volctl"
check "the strip rule is applied (stripped)" grep -q "/vol/0 .*stripped" "$CL"
unlike "$(grep '/volctl/' "$CL")" "unchanged|stripped" "volctl pages are never unchanged"
like "$(grep '/vol/1 ' "$CL" | tail -1)" "unchanged,wt:" "vol pages are unchanged once stripped"
like "$(grep '/slow/0 ' "$CL" | tail -1)" \
  "wt:[0-9smh]+,[0-9]+vis,1ver,ov:[0-9smh]+,wait:text/multiplicative" \
  "annotations as in the thesis, then the evaluator and policy"
like "$(grep '/img/0 ' "$CL" | head -1)" "wt:10s0ms,1vis,1ver,ov:[0-9]+ms,wait:image/multiplicative" \
  "images are handled by the image evaluator"
check "validators: unchanged visits answered 304 (notModified)" grep -q "/slow/.*notModified" "$CL"
check "validators: a server ignoring conditionals is stopped mid-fetch (midFetchAbort)" \
  grep -q "/ign/.*midFetchAbort" "$CL"

# visits per class from kts's ground truth
count() { awk -v re="$2" '$1 ~ re { sub("count=", "", $2); s += $2 } END { print s + 0 }' "$1"; }
P="$T/mult.paths"
diag "requests: fast $(count "$P" /fast/) timed $(count "$P" /timed/) slow $(count "$P" /slow/) vol $(count "$P" '^/vol/') volctl $(count "$P" /volctl/) img $(count "$P" /img/) liar $(count "$P" /liar/)"
check "fast pages are visited more often than slow ones" \
  test "$(count "$P" /fast/)" -gt "$(count "$P" /slow/)"
check "volctl pages are visited more often than stripped vol pages" \
  test "$(count "$P" /volctl/)" -gt "$(count "$P" '^/vol/')"

# the liar host loses trust; its changes are still captured
like "$(cat "$T/mult.err")" "localhost:$KTS_PORT: validators: reliability [0-9.]+, usefulness [0-9.]+ .*, distrusted" \
  "the lying host is distrusted (final summary)"
check "the miss is annotated (validatorMiss)" grep -q "/liar/.*validatorMiss" "$CL"
like "$(cat "$T/mult.err")" "127.0.0.1:$KTS_PORT: validators: reliability 1.000" \
  "the honest host keeps reliability 1"
unlike "$(grep '/liar/' "$CL")" "notModified|midFetchAbort" "no liar visit is skipped on validators"
check "host_validators view in the state database" \
  test "$(sqlite3 "$T/mult.state/kria.db" "SELECT count(*) FROM host_validators WHERE distrust_until > 0")" = 1

# capture ratio: versions captured (the last Nver of each URI) over the
# versions kts served it (its last version + 1 - the first; fast and liar
# pages start at 0, timed ones at START_V)
captured=$(awk '$4 ~ /\/(fast|timed|liar)\// { if (match($12, /[0-9]+ver/)) v[$4] = substr($12, RSTART, RLENGTH - 3) }
  END { for (u in v) s += v[u]; print s + 0 }' "$CL")
existed=$(awk -v sv="$START_V" '$1 ~ /^\/(fast|timed|liar)\// { sub("version=", "", $3)
  s += $3 + 1 - ($1 ~ /timed/ ? sv : 0) } END { print s + 0 }' "$P")
ratio=$(awk -v a="$captured" -v b="$existed" 'BEGIN { printf "%.3f", b ? a / b : 0 }')
diag "capture ratio of changing pages: $captured of $existed versions ($ratio)"
check "capture ratio at least 0.8 ($ratio)" awk -v r="$ratio" 'BEGIN { exit !(r >= 0.8) }'

# bytes: unchanged visits of pages with honest validators (slow, ign, img)
read -r nun got <<<"$(awk '$4 ~ /\/(slow|ign|img)\// && $12 ~ /(unchanged|notModified|midFetchAbort)/ {
  n++; if ($3 != "-") b += $3 } END { print n + 0, b + 0 }' "$CL")"
saved=$(awk -v n="$nun" -v b="$got" 'BEGIN { printf "%.3f", n ? 1 - b / (n * 4096) : 0 }')
diag "unchanged visits with honest validators: $nun, body bytes received $got of $((nun * 4096)) (saved $saved)"
check "validators save most body bytes of unchanged visits ($saved >= 0.6)" \
  awk -v r="$saved" 'BEGIN { exit !(r >= 0.6) }'
like "$(cat "$T/mult.err")" "revisits: [0-9]+ changed, [0-9]+ unchanged \\([0-9]+ not modified, [0-9]+ aborted mid-fetch" \
  "the summary counts revisits by how they were found unchanged"
diag "$(grep 'revisits:' "$T/mult.err")"

# ---- poisson: the default ---------------------------------------------------------

run_crawl poisson # no policy key, no adaptive.informed-priors
is "$RC" 0 "poisson: the crawl ends with exit 0"
is "$(grep -c 'wait:[a-z]*/multiplicative' "$CL")" 0 "poisson: no wait decided by the thesis' policy"
like "$(grep '/img/0 ' "$CL" | tail -1)" "wait:image/poisson" "poisson: the default for images too"
fast=$(last_wt "$CL" '/fast/' | mean)
slow=$(last_wt "$CL" '/slow/' | mean)
diag "poisson final waits (ms): fast $fast slow $slow vol $(last_wt "$CL" '/vol/' | mean) volctl $(last_wt "$CL" '/volctl/' | mean)"
check "poisson: fast pages end with shorter waits than slow ones ($fast < $slow)" test "$fast" -lt "$slow"
P="$T/poisson.paths"
check "poisson: volctl pages visited more often than stripped vol pages" \
  test "$(count "$P" /volctl/)" -gt "$(count "$P" '^/vol/')"
like "$(grep '/slow/0 ' "$CL" | tail -1)" "wait:text/poisson/(regular|ml|last-modified|prior|posterior)" \
  "poisson: the estimator is named"
done_testing
