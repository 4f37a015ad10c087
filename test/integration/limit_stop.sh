#!/usr/bin/env bash
# How a crawl stops, and what it leaves: every fetch that got a response
# before the stop is either logged, archived and committed, or given back
# and counted as given back; the summary's figures are crawl.log's.
#  1. limits.max-document-download is exact: with 8 fetches at once to
#     the host (host-valence) and a limit of 6, exactly 6 responses (a
#     404 robots.txt and a page cut short count like the others): 6
#     crawl.log lines, 6 WARC records, "6 responses", 6 documents (it
#     used to issue what was ready and stop only after the fetches in
#     flight: 12 here, and to count the page cut short as a fetch error).
#  2. Three runs in a row on one state directory, each ended by a limit
#     of 3 (revisits due within 1 s, unchanged): each run adds 3
#     crawl.log lines, 3 WARC records and 3 committed visits and says
#     "3 responses", 3 documents this run. (A reading of crawl.log by its
#     timestamps once took a run's first line for the previous run's
#     last: the summary and the files agree run by run.)
#  3. SIGTERM while a response is arriving (kts stalls the body), then
#     SIGTERM again: the fetch is given back ("1 given back at shutdown"),
#     with no crawl.log line, no WARC record, its row untouched.
#  4. SIGINT in the middle of a crawl of a large site, and the same crawl
#     stopped by max-time: the fetches that run finish; issued = logged +
#     given back + sent back for robots.txt, and responses = the
#     frontier's documents = crawl.log lines = WARC records = committed
#     visits.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"
command -v curl >/dev/null || bail "curl is needed"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[route "/cut"]
body-size = 4K
drop-after = 100

[route "/stall"]
body-size = 4K
stall = body

[route "/v/*"]
body = with validators
etag = auto
last-modified = auto

[route "/d/*"]
body = same bytes, no validators

[site "/p/"]
pages = 40
links = 6

[site "/big/"]
pages = 100000
links = 3
EOF
kts_start "$T/routes.ini" || bail "kts did not start"

# crawl NAME STATE SEEDS [ARGS...]: kria crawl in the foreground; RC and
# $T/NAME.err
crawl() {
  local name=$1 st=$2 seeds=$3; shift 3
  { revisit_conf "$seeds" "$st"; printf '%s\n' "${EXTRA_CONF[@]}"; } >"$T/$name.conf"
  timeout 60 "$KRIA" crawl -c "$T/$name.conf" -o limits.max-time=30s "$@" 2>"$T/$name.err"
  RC=$?
}
# num WORDS FILE: the number before WORDS in the summary's crawl line in FILE
num() { grep -E '^kria: notice: crawl: ' "$2" | grep -oE "[0-9]+ $1" | cut -d' ' -f1; }
# docs FILE: the frontier's documents of the run in the summary in FILE
docs() { grep -oE '[0-9]+ documents this run' "$1" | cut -d' ' -f1; }
# lines STATE: crawl.log lines; status_lines STATE: those with an HTTP status
lines() { wc -l <"$1/logs/crawl.log"; }
status_lines() { awk '$2 > 0' "$1/logs/crawl.log" | wc -l; }
# records STATE: the WARC response and revisit records
records() {
  local n=0 w
  for w in "$1"/warcs/*.warc.gz; do
    [ -e "$w" ] || continue
    n=$((n + $(zcat "$w" | grep -acE '^WARC-Type: (response|revisit)')))
  done
  echo "$n"
}
# visits STATE: the committed visits of every URI
visits() { sqlite3 "$1/kria.db" 'select coalesce(sum(visits), 0) from uris'; }

# ---- 1. the limit is exact with fetches in flight -----------------------------------

printf '%s\n' "$KTS_URL/cut" "$KTS_URL/p/0" >"$T/s1"
EXTRA_CONF=('[politeness]' 'host-valence = 8' '[crawl]' 'revisit = false')
crawl one "$T/st1" "$T/s1" -o limits.max-document-download=6
is "$RC" 0 "exact: exit 0"
like "$(cat "$T/one.err")" "limit max-document-download reached: stopping" "exact: the limit stopped it"
is "$(lines "$T/st1")" 6 "exact: 6 crawl.log lines"
is "$(status_lines "$T/st1")" 6 "exact: each with an HTTP status"
is "$(num responses "$T/one.err") $(docs "$T/one.err")" "6 6" "exact: the summary says 6 responses, 6 documents"
is "$(num "fetch errors" "$T/one.err")" 0 "exact: and no fetch error"
like "$(awk '$4 ~ /\/cut$/' "$T/st1/logs/crawl.log")" "^[^ ]+ +200 " "exact: the page cut short is a response, logged as 200"
is "$(records "$T/st1")" 6 "exact: 6 WARC records"
is "$(visits "$T/st1")" 6 "exact: 6 visits committed"

# ---- 2. three runs, each stopped by the limit ---------------------------------------

printf '%s\n' "$KTS_URL/v/a" "$KTS_URL/v/b" "$KTS_URL/d/c" >"$T/s2"
EXTRA_CONF=('[wait "text"]' 'content-type = ^text/' 'initial-wait = 1s' 'min-wait = 1s')
prev_l=0 prev_r=0 prev_v=0
for run in 1 2 3; do
  crawl "run$run" "$T/st2" "$T/s2" -o limits.max-document-download=3
  l=$(lines "$T/st2") r=$(records "$T/st2") v=$(visits "$T/st2")
  is "$RC $(num responses "$T/run$run.err") $(docs "$T/run$run.err")" "0 3 3" \
    "run $run: exit 0, 3 responses, 3 documents"
  is "$((l - prev_l)) $((r - prev_r)) $((v - prev_v))" "3 3 3" \
    "run $run: 3 crawl.log lines, 3 WARC records, 3 visits committed"
  prev_l=$l prev_r=$r prev_v=$v
done
like "$(grep revisits: "$T/run3.err")" "revisits: 0 changed, 3 unchanged" \
  "run 3: its 3 visits were revisits of unchanged pages"

# ---- 3. SIGTERM twice while a response arrives --------------------------------------

printf '%s\n' "$KTS_URL/stall" >"$T/s3"
EXTRA_CONF=()
{ revisit_conf "$T/s3" "$T/st3"; } >"$T/three.conf"
stalled() { curl -s "$KTS_URL/_kts/paths" | grep -q '^/stall count=1'; }
"$KRIA" crawl -c "$T/three.conf" 2>"$T/three.err" &
KPID=$!
_pids+=("$KPID")
wait_until 30 stalled || bail "the crawl never asked for /stall"
kill -TERM "$KPID"
wait_until 10 grep -q "finishing running fetches" "$T/three.err" || bail "no reaction to SIGTERM"
kill -TERM "$KPID"
wait "$KPID"
is "$?" 0 "SIGTERM twice: exit 0"
like "$(cat "$T/three.err")" "signal 15 again: abandoning running fetches" "SIGTERM twice: the fetch was abandoned"
is "$(num "given back at shutdown" "$T/three.err")" 1 "SIGTERM twice: 1 given back at shutdown"
is "$(awk '$4 ~ /\/stall$/' "$T/st3/logs/crawl.log" | wc -l)" 0 "SIGTERM twice: no crawl.log line for it"
is "$(records "$T/st3")" "$(status_lines "$T/st3")" "SIGTERM twice: WARC records only of the logged responses"
is "$(sqlite3 "$T/st3/kria.db" "select visits from uris where url like '%/stall'")" 0 \
  "SIGTERM twice: its row untouched (no visit)"
is "$(num responses "$T/three.err")" "$(status_lines "$T/st3")" "SIGTERM twice: responses = crawl.log lines with a status"

# ---- 4. SIGINT in the middle of a crawl, and max-time -------------------------------

# agree NAME STATE: what a stopped crawl of a site of 200s left agrees
agree() {
  local issued given sent n
  issued=$(num "URIs issued" "$T/$1.err") given=$(num "given back at shutdown" "$T/$1.err")
  sent=$(num "sent back for robots.txt" "$T/$1.err")
  is "$issued" "$(($(lines "$2") + given + sent))" \
    "$1: issued ($issued) = logged + given back ($given) + sent back for robots.txt ($sent)"
  n=$(status_lines "$2")
  is "$(num responses "$T/$1.err") $(docs "$T/$1.err") $(records "$2") $(visits "$2")" \
    "$n $n $n $n" "$1: responses = documents = WARC records = visits committed = crawl.log lines ($n)"
}

printf '%s\n' "$KTS_URL/big/0" >"$T/s4"
{ revisit_conf "$T/s4" "$T/st4"; printf '[politeness]\nhost-valence = 4\n'; } >"$T/sigint.conf"
"$KRIA" crawl -c "$T/sigint.conf" 2>"$T/sigint.err" &
KPID=$!
_pids+=("$KPID")
busy() { [ -s "$T/st4/logs/crawl.log" ] && [ "$(lines "$T/st4")" -ge 20 ]; }
wait_until 30 busy || bail "the crawl did not get going"
kill -INT "$KPID"
wait "$KPID"
is "$?" 0 "SIGINT: exit 0"
like "$(cat "$T/sigint.err")" "signal 2: finishing running fetches" "SIGINT: running fetches finish"
agree sigint "$T/st4"

EXTRA_CONF=('[politeness]' 'host-valence = 4')
crawl maxtime "$T/st5" "$T/s4" -o limits.max-time=1s
is "$RC" 0 "max-time: exit 0"
like "$(cat "$T/maxtime.err")" "limit max-time reached: stopping" "max-time: the limit stopped it"
agree maxtime "$T/st5"
kts_stop
done_testing
