#!/usr/bin/env bash
# The counters agree on every surface (src/crawl/counters.h). A short
# revisiting crawl of a kts site whose pages change on every visit
# (/chg/), never change and answer conditional requests with 304 (/val/),
# never change and ignore conditional requests, so the headers' validators
# abort the download (/ign/), or never change and carry no validators, so
# only the digest tells (/dig/). Once every kind of revisit happened the crawl is paused and,
# nothing in flight, /status, /metrics, the text status and a progress
# line are read; then it is stopped and the end-of-run summary is read.
# Every shared figure (changes, versions, bytes saved by validators, the
# unchanged visits by kind, responses, URIs issued) must be the same
# number on every surface, and the summary's counter lines must be the
# text status's, word for word.
. "$(dirname "$0")/lib.sh"

"$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v curl >/dev/null || bail "curl is needed"
command -v python3 >/dev/null || bail "python3 is needed"
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow:\n

[route "/"]
body = <html><body><a href="/chg/0">c</a> <a href="/val/0">v</a> <a href="/dig/0">d</a> <a href="/ign/0">i</a></body></html>

[site "/chg/"]
pages = 3
links = 2
change-every = 1
etag = auto
last-modified = auto
body-size = 2K

[site "/val/"]
pages = 3
links = 2
etag = auto
last-modified = auto
body-size = 2K

[site "/ign/"]
pages = 3
links = 2
etag = auto
last-modified = auto
ignore-conditionals = 1
body-size = 2K

[site "/dig/"]
pages = 3
links = 2
body-size = 2K
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"

TOKEN=counters-test-token-0123456789
STATE=$T/state
echo "$KTS_URL/" >"$T/seeds.txt"
cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $STATE
revisit = true
progress-interval = 1s
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[limits]
max-time = 90s
[store]
commit-interval = 10ms
[adaptive]
trust-probation = 0
trust-sample = 0
[status]
listen = 127.0.0.1:0
token = $TOKEN
[wait "default"]
initial-wait = 1s
default-wait = 1s
min-wait = 1s
max-wait = 2s
EOF

"$KRIA" crawl -c "$T/crawl.conf" 2>"$T/kria.err" &
KRIA_PID=$!
_pids+=("$KRIA_PID")
wait_until 15 test -s "$STATE/status.addr" || { diag "$(tail -5 "$T/kria.err")"; bail "no status.addr"; }
ADDR=$(cat "$STATE/status.addr")
api() { local p=$1; shift; curl -s -m 10 "$@" "http://$ADDR$p"; }
st() { api /status | jget "$1"; }

# every kind of visit, twice over
kinds_seen() {
  local j
  j=$(api /status) || return 1
  [ "$(jget "min(d['crawl']['changes_found'], d['crawl']['not_modified'], d['crawl']['midfetch_aborts'], d['crawl']['unchanged_full'])" <<<"$j")" -ge 2 ] 2>/dev/null
}
check "revisits found changes, 304s, aborts and unchanged digests" wait_until 60 kinds_seen

r=$(api /pause -X POST -H "Authorization: Bearer $TOKEN")
is "$(jget "d['paused']" <<<"$r")" true "paused"
idle() { [ "$(st "d['in_flight']")" = 0 ]; }
check "nothing in flight" wait_until 15 idle
np=$(grep -c 'progress: ' "$T/kria.err")
more_progress() { [ "$(grep -c 'progress: ' "$T/kria.err")" -gt "$np" ]; }
check "a progress line after the pause" wait_until 10 more_progress

api /status >"$T/status.json"
api /metrics >"$T/metrics.txt"
api '/status?format=text' >"$T/status.txt"
api / >"$T/console.html"
prog=$(grep 'progress: ' "$T/kria.err" | tail -1)

r=$(api /stop -X POST -H "Authorization: Bearer $TOKEN" -w ' %{http_code}')
like "$r" ' 202$' "POST /stop: 202"
if timeout 15 tail -s 0.05 --pid="$KRIA_PID" -f /dev/null; then
  wait "$KRIA_PID"
  is "$?" 0 "kria exits 0"
else
  not_ok "kria exits after /stop"
fi

js() { jget "$1" <"$T/status.json"; }
met() { awk -v n="$1" '$1 == n { print $2 }' "$T/metrics.txt"; }
# the number before WORDS in a line ("revisits: 5 changed" -> 5)
num_before() { grep -oE "[0-9]+ $2" <<<"$1" | head -1 | cut -d' ' -f1; }
sum_rev=$(grep -oE 'revisits: .*' "$T/kria.err" | tail -1)
sum_crawl=$(grep -oE 'crawl: [0-9]+ URIs issued.*' "$T/kria.err" | tail -1)
txt_rev=$(grep -oE 'revisits: .*' "$T/status.txt")
txt_crawl=$(grep -oE 'crawl: [0-9]+ URIs issued.*' "$T/status.txt")
diag "$sum_rev"
diag "$prog"

# figure: JSON crawl key, other JSON paths, metric, words in the summary
agree() { # DESC JSONKEY METRIC WORDS [JSONPATH...]
  local desc=$1 key=$2 metric=$3 words=$4; shift 4
  local want got bad=0 where line
  want=$(js "d['crawl']['$key']")
  [[ $want =~ ^[0-9]+$ ]] || { not_ok "$desc: /status crawl.$key is a number ($want)"; return; }
  got=$(met "$metric"); [ "$got" = "$want" ] || { bad=1; diag "$metric: $got"; }
  for where in "$@"; do
    got=$(js "$where"); [ "$got" = "$want" ] || { bad=1; diag "$where: $got"; }
  done
  for line in "$sum_rev" "$sum_crawl" "$txt_rev" "$txt_crawl"; do
    got=$(num_before "$line" "$words")
    [ -z "$got" ] || [ "$got" = "$want" ] || { bad=1; diag "'$words' in '$line': $got"; }
  done
  got=$(num_before "$sum_rev $sum_crawl" "$words")
  [ -n "$got" ] || { bad=1; diag "'$words' not in the summary"; }
  if [ "$bad" = 0 ]; then ok "$desc: $want everywhere"; else not_ok "$desc: crawl.$key = $want, not everywhere"; fi
}
agree "changes" changes_found kria_changes_total changed "d['changes']['total']" "d['adaptive']['changed']"
agree "versions stored" changed kria_versions_total "versions stored" "d['adaptive']['versions']"
agree "bytes saved by validators" aborted_bytes_saved kria_validator_bytes_saved_total \
  "saved by validators" "d['adaptive']['bytes_saved']"
agree "unchanged visits" unchanged kria_unchanged_total unchanged "d['adaptive']['unchanged']"
agree "304s" not_modified kria_not_modified_total "not modified" "d['adaptive']['not_modified']"
agree "aborted at the headers" midfetch_aborts kria_midfetch_aborts_total "aborted mid-fetch" \
  "d['adaptive']['aborted']"
agree "unchanged by digest" unchanged_full kria_unchanged_by_digest_total "by digest"
agree "responses" fetched kria_fetches_total responses
agree "URIs issued" issued kria_uris_issued_total "URIs issued"

is "$(grep -oE 'changes [0-9]+' <<<"$prog" | cut -d' ' -f2)" \
  "$(js "d['crawl']['changes_found']")" "the progress line's changes"
is "$(grep -oE 'versions [0-9]+' <<<"$prog" | cut -d' ' -f2)" \
  "$(js "d['crawl']['changed']")" "the progress line's versions"
is "$txt_rev" "$sum_rev" "the text status and the summary: the same revisits line"
is "$txt_crawl" "$sum_crawl" "the text status and the summary: the same crawl line"
check "the console shows /status changes.total" grep -q 's.changes.total' "$T/console.html"
kts_stop
done_testing
