#!/usr/bin/env bash
# The status server, control, reload and `kria status` against a live
# crawl of a kts site (3,000 pages, one host, 20 ms politeness, so the
# crawl is busy throughout):
#  - `status.listen = 127.0.0.1:0`: the bound address is logged and
#    written to <state-dir>/status.addr;
#  - GET /status, /hosts, /frontier, /uri?url= parse as JSON (python3 or
#    node) with the expected fields; /metrics is Prometheus text format
#    (HELP and TYPE before each family, sample lines well-formed), the
#    loop-lag probe sees the loop stalled by SIGSTOP (and the progress
#    line its p99); / is
#    the console with its Content-Security-Policy; 404, 405;
#  - POST /pause without or with a wrong token: 401; with it: paused, and
#    kts sees no request while two progress lines say "paused"; /resume:
#    requests again;
#  - hostile clients: a 9 KiB header gets 431, a slowloris client 408 and
#    is cut after 5 s, 20 idle connections over the cap of 16 get 503,
#    and the crawl goes on meanwhile;
#  - /status "warc" and the kria_warc_* metrics (records, bytes, files,
#    revisits, write errors, the current file);
#  - SIGHUP: a new seed on another host gets fetched; a [host] override
#    changes that host queue's politeness; a scope exclusion refuses
#    queued URIs when they are issued; a bad file and a changed
#    start-up-only key are refused with the errors logged, the crawl
#    running on; [warc] prefix/compress/level close the current file and
#    apply from the next (logged key by key), write-metadata from the next
#    record, a prefix with "../" is refused; both files check out;
#  - kria status / report online; POST /stop: exit 0; kria status -s DIR
#    and report hosts|uri offline afterwards; a non-loopback address
#    without a token and a port in use are refused at start.
. "$(dirname "$0")/lib.sh"

"$KRIA" status --help >/dev/null 2>&1 || bail "kria status is not built ($KRIA)"
command -v curl >/dev/null || bail "curl is needed"

# jget EXPR: EXPR (d['a']['b'] style) of the JSON on stdin, printed as
# JSON; jlen EXPR: its length. python3 if it works, else node.
if python3 -c 'import json' 2>/dev/null; then
  jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }
  jlen() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(eval(sys.argv[1])))' "$1"; }
  jvalid() { python3 -c 'import json,sys; json.load(sys.stdin)'; }
elif command -v node >/dev/null; then
  export jsrun='let s="";process.stdin.on("data",x=>s+=x).on("end",()=>{const d=JSON.parse(s);'
  jget() { node -e "${jsrun}console.log(JSON.stringify(eval(process.argv[1])))})" "$1"; }
  jlen() { node -e "${jsrun}console.log(eval(process.argv[1]).length)})" "$1"; }
  jvalid() { node -e "${jsrun}})"; }
else
  bail "neither python3 nor node to parse JSON"
fi
export -f jget jlen jvalid


cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <html><body><a href="/p/0">start</a> <a href="/p/1">more</a></body></html>

[route "/unlinked"]
body = <p>only a seed points here</p>

[site]
pages = 3000
links = 3
body-size = 1K
etag = auto
EOF

kts_start "$T/routes.ini" --log "$T/kts1.log" || bail "kts did not start"
P1=$KTS_PORT
U1=$KTS_URL
KTS1_PID=$KTS_PID
kts_start "$T/routes.ini" --log "$T/kts2.log" || bail "second kts did not start"
P2=$KTS_PORT

TOKEN=status-test-token-0123456789
STATE=$T/state
echo "$U1/" >"$T/seeds.txt"
write_conf() { # extra lines appended
  {
    echo "[http]"
    echo "allow-private-addresses = true"
    echo "[crawl]"
    echo "seeds = $T/seeds.txt"
    echo "state-dir = $STATE"
    echo "revisit = true"
    echo "progress-interval = 1s"
    echo "[politeness]"
    echo "min-delay = 20ms"
    echo "max-delay = 20ms"
    echo "delay-factor = 0"
    echo "[store]"
    echo "commit-interval = 10ms"
    echo "[status]"
    echo "listen = 127.0.0.1:0"
    echo "token = $TOKEN"
    local l
    for l in "$@"; do echo "$l"; done
  } >"$T/crawl.conf"
}
write_conf

"$KRIA" crawl -c "$T/crawl.conf" 2>"$T/kria.err" &
KRIA_PID=$!
_pids+=("$KRIA_PID")

if ! wait_until 15 test -s "$STATE/status.addr"; then
  diag "$(tail -5 "$T/kria.err")"
  bail "no status.addr"
fi
ADDR=$(cat "$STATE/status.addr")
like "$ADDR" '^127\.0\.0\.1:[0-9]+$' "status.addr holds the bound address ($ADDR)"
SPORT=${ADDR##*:}
isnt "$SPORT" 0 "an ephemeral port was bound"
check "the address is logged" grep -q "status: listening on http://$ADDR/" "$T/kria.err"

api() { local p=$1; shift; curl -s -m 10 "$@" "http://$ADDR$p"; }
code() { local p=$1; shift; curl -s -o /dev/null -w '%{http_code}' -m 10 "$@" "http://$ADDR$p"; }
st() { api /status | jget "$1"; }
finished_ge() { [ "$(st "d['frontier']['finished']")" -ge "$1" ] 2>/dev/null; }

check "the crawl gets going (20 URIs finished)" wait_until 30 finished_ge 20

# ---- GET pages --------------------------------------------------------------
api /status >"$T/status.json"
check "/status is JSON" jvalid <"$T/status.json"
is "$(jget "d['state']" <"$T/status.json")" '"running"' "/status: running"
is "$(jget "d['crawl_name']" <"$T/status.json")" '"kria"' "/status: crawl name"
is "$(jget "d['status_server']['address']" <"$T/status.json")" "\"$ADDR\"" "/status: its own address"
for k in rates series crawl frontier hosts overdue_issued changes validators store loop reload systemd; do
  [ "$(jget "'$k' in d" <"$T/status.json" 2>/dev/null)" = true ] ||
    [ "$(jget "d.hasOwnProperty('$k')" <"$T/status.json" 2>/dev/null)" = true ] || { not_ok "/status has $k"; continue; }
  ok "/status has $k"
done
check "/status?format=text" bash -c "curl -s -m 10 'http://$ADDR/status?format=text' | grep -q '^frontier '"
check "a census ran (due_now known)" wait_until 20 bash -c "curl -s -m 5 http://$ADDR/status | grep -q '\"census\":{'"

api /metrics >"$T/metrics.txt"
check "/metrics has kria_fetches_total" grep -q '^kria_fetches_total [0-9]' "$T/metrics.txt"
check "/metrics has the idle pool's size" grep -q '^kria_http_connections_idle [0-9]' "$T/metrics.txt"
check "/metrics has host states" grep -q '^kria_hosts{state="ready"} [0-9]' "$T/metrics.txt"
check "/metrics has the overdue histogram" grep -q '^kria_issue_overdue_seconds_bucket{le="+Inf"} [0-9]' "$T/metrics.txt"
check "/metrics has the loop-lag probe's histogram" grep -q '^kria_loop_delay_seconds_count [1-9]' "$T/metrics.txt"
# a stopped process is a stalled loop: the probe must see one more lag over 200 ms
lags_over_200ms() {
  api /metrics | awk '$1 == "kria_loop_delay_seconds_bucket{le=\"0.2\"}" { le = $2 }
    $1 == "kria_loop_delay_seconds_count" { n = $2 } END { print n - le }'
}
slow0=$(lags_over_200ms)
kill -STOP "$KRIA_PID"
sleep 0.4 # the stall being measured, not a synchronisation
kill -CONT "$KRIA_PID"
more_lags_over_200ms() { [ "$(lags_over_200ms)" -gt "$slow0" ] 2>/dev/null; }
check "a 400 ms stop shows as loop lag over 200 ms" wait_until 10 more_lags_over_200ms
check "/status: loop lag p99 and max" bash -c "curl -s -m 10 http://$ADDR/status | grep -q '\"probe_lag_p99_ms\":[0-9].*\"probe_lag_max_ms\":[0-9]'"
metrics_ok() { # every family typed before its samples, every line well-formed
  local line name fam typed=" " bad=0
  while IFS= read -r line; do
    if [[ $line =~ ^#\ HELP\ ([a-zA-Z_:][a-zA-Z0-9_:]*)\ .+$ ]]; then continue; fi
    if [[ $line =~ ^#\ TYPE\ ([a-zA-Z_:][a-zA-Z0-9_:]*)\ (counter|gauge|histogram|summary|untyped)$ ]]; then
      typed+="${BASH_REMATCH[1]} "
      continue
    fi
    if [[ $line =~ ^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\"(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*\})?\ -?[0-9][0-9.eE+-]*$ ]]; then
      name=${BASH_REMATCH[1]}
      fam=$name
      [[ $typed == *" $fam "* ]] || fam=${name%_bucket}
      [[ $typed == *" $fam "* ]] || fam=${name%_sum}
      [[ $typed == *" $fam "* ]] || fam=${name%_count}
      if [[ $typed != *" $fam "* ]]; then diag "untyped sample: $line"; bad=1; fi
      continue
    fi
    diag "malformed line: $line"
    bad=1
  done <"$T/metrics.txt"
  [ "$bad" = 0 ]
}
check "/metrics: Prometheus text format, HELP/TYPE before samples" metrics_ok
check "/metrics: counters end in _total" bash -c "! grep '^# TYPE' '$T/metrics.txt' | grep ' counter$' | grep -v '_total counter$'"
is "$(grep -c '^# HELP' "$T/metrics.txt")" "$(grep -c '^# TYPE' "$T/metrics.txt")" "/metrics: a HELP per TYPE"

# ---- WARC counters -------------------------------------------------------------------
api /status >"$T/status.json"
wst() { jget "d['warc']['$1']" <"$T/status.json"; }
check "/status warc: records written ($(wst records))" test "$(wst records)" -gt 0
check "/status warc: bytes written ($(wst bytes))" test "$(wst bytes)" -gt 1000
is "$(wst files)" 1 "/status warc: one file begun"
is "$(wst write_errors)" 0 "/status warc: no write errors"
cur=$(wst current_file | tr -d '"')
like "$cur" '^kria-[0-9]{17}-[0-9]{5}-.+\.warc\.gz\.open$' "/status warc: the current file ($cur)"
check "... which is in the WARC directory" test -f "$STATE/warcs/$cur"
check "/status warc: revisits and responses add up" bash -c "[ $(wst revisits) = \$(( $(wst revisits_identical) + $(wst revisits_not_modified) + $(wst revisits_midfetch) )) ] && [ $(wst responses) -gt 0 ]"
api /metrics >"$T/metrics.txt"
check "/metrics: kria_warc_records_total" grep -qE '^kria_warc_records_total [1-9][0-9]*$' "$T/metrics.txt"
check "/metrics: kria_warc_bytes_total" grep -qE '^kria_warc_bytes_total [1-9][0-9]*$' "$T/metrics.txt"
check "/metrics: kria_warc_files_total 1" grep -qE '^kria_warc_files_total 1$' "$T/metrics.txt"
check "/metrics: revisits by profile" grep -qE '^kria_warc_revisits_total\{profile="server-not-modified"\} [0-9]+$' "$T/metrics.txt"
check "/metrics: kria_warc_write_errors_total 0" grep -qE '^kria_warc_write_errors_total 0$' "$T/metrics.txt"
check "/metrics: the current file" grep -qE "^kria_warc_current_file\{file=\"kria-[0-9]{17}-[0-9]{5}-[^\"]+\.warc\.gz\.open\"\} 1$" "$T/metrics.txt"
check "/metrics still well-formed with the WARC families" metrics_ok

api "/hosts?limit=5" >"$T/hosts.json"
check "/hosts is JSON" jvalid <"$T/hosts.json"
is "$(jget "d['hosts'][0]['host']" <"$T/hosts.json")" "\"127.0.0.1:$P1\"" "/hosts lists the host queue"
is "$(jget "d['hosts'][0]['min_delay_ms']" <"$T/hosts.json")" 20 "/hosts: its politeness delay (20 ms)"
is "$(code "/hosts?limit=x")" 400 "/hosts?limit=x: 400"
is "$(code "/hosts?sort=nonsense")" 400 "/hosts?sort=nonsense: 400"
api /frontier >"$T/frontier.json"
check "/frontier is JSON" jvalid <"$T/frontier.json"
check "/frontier?format=text" bash -c "curl -s -m 10 'http://$ADDR/frontier?format=text' | grep -q '^frontier: '"

api "/uri?url=$U1/" >"$T/uri.json"
check "/uri is JSON" jvalid <"$T/uri.json"
is "$(jget "d['url']" <"$T/uri.json")" "\"$U1/\"" "/uri: the seed's row"
check "/uri: visited, with a history" bash -c "[ \"\$(jget \"d['visits']\" <'$T/uri.json')\" -ge 1 ] && [ \"\$(jlen \"d['history']\" <'$T/uri.json')\" -ge 1 ]"
is "$(code "/uri?url=$U1/never-linked")" 404 "/uri of an unknown URL: 404"
is "$(code "/uri")" 400 "/uri without url=: 400"
is "$(code "/uri?url=%zz")" 400 "/uri with a bad escape: 400"

curl -s -m 10 -D "$T/console.h" -o "$T/console.html" "http://$ADDR/"
check "/ is the console" grep -q '<title>kria console</title>' "$T/console.html"
check "console has a Content-Security-Policy" grep -qi "^Content-Security-Policy: default-src 'none'" "$T/console.h"
check "console loads nothing from elsewhere" bash -c "! grep -Eqi '(src|href)=\"(https?:)?//' '$T/console.html'"
is "$(code /nope)" 404 "unknown page: 404"
is "$(code /status -X POST -H "Authorization: Bearer $TOKEN")" 405 "POST /status: 405"
is "$(code /pause)" 405 "GET /pause: 405"
is "$(code /status -H 'Host: evil.example')" 421 "a Host that is not loopback: 421"

# ---- pause / resume -----------------------------------------------------------
is "$(code /pause -X POST)" 401 "POST /pause without a token: 401"
is "$(code /pause -X POST -H 'Authorization: Bearer wrong-token-0123456789')" 401 "POST /pause, wrong token: 401"
is "$(st "d['paused']")" false "still running after the refused pauses"
r=$(api /pause -X POST -H "Authorization: Bearer $TOKEN")
is "$(jget "d['paused']" <<<"$r")" true "POST /pause with the token: paused"
check "running fetches drain" wait_until 10 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/status | jget \"d['in_flight']\")\" = 0 ]"
is "$(st "d['state']")" '"paused"' "/status says paused"
n1=$(wc -l <"$T/kts1.log")
p0=$(grep -c 'progress: .*, paused$' "$T/kria.err")
check "the progress line reports loop lag" grep -q 'loop lag p99 [0-9]' "$T/kria.err"
check "two progress lines while paused" wait_until 10 bash -c "[ \$(grep -c 'progress: .*, paused\$' '$T/kria.err') -ge $((p0 + 2)) ]"
n2=$(wc -l <"$T/kts1.log")
is "$n2" "$n1" "no request reached kts while paused"
r=$(api /resume -X POST -H "Authorization: Bearer $TOKEN")
is "$(jget "d['paused']" <<<"$r")" false "POST /resume: running"
check "requests again after resume" wait_until 10 bash -c "[ \$(wc -l <'$T/kts1.log') -gt $n2 ]"

# ---- hostile clients -----------------------------------------------------------
f0=$(st "d['crawl']['fetched']")
big=$(head -c 9000 /dev/zero | tr '\0' a)
is "$(code /status -H "X-Big: $big")" 431 "a 9 KiB header: 431"
t0=$(date +%s%N)
exec {sl}<>"/dev/tcp/127.0.0.1/$SPORT"
printf 'GET /status HTTP/1.1\r\nHost: 127' >&"$sl"
resp=$(timeout 15 cat <&"$sl")
exec {sl}<&-
ms=$((($(date +%s%N) - t0) / 1000000))
like "$resp" '^HTTP/1.1 408' "slowloris: 408"
check "slowloris cut after ~5 s ($ms ms)" test "$ms" -ge 4500 -a "$ms" -lt 9000
# 16 clients hold every place by sending slowly (one byte each: not
# silent, so none gives its place up): the slot kept for the token still
# lets control requests through; other requests get 503.
fds=()
for i in $(seq 1 16); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$SPORT"
  printf G >&"$fd"
  fds+=("$fd")
done
check "all 16 places held" wait_until 10 bash -c "[ \"\$(ss -Htn state established \"( sport = :$SPORT )\" | wc -l)\" -ge 16 ]"
like "$(curl -s -m 5 "http://$ADDR/status")" 'kept for requests with the token' \
  "over max-clients (16), without the token: 503, the last slot is kept"
is "$(code /pause -X POST -H "Authorization: Bearer $TOKEN")" 200 "... and POST /pause with the token gets through"
is "$(api /status -H "Authorization: Bearer $TOKEN" | jget "d['paused']")" true "... and GET /status with the token: paused"
is "$(code /resume -X POST -H "Authorization: Bearer $TOKEN")" 200 "... and POST /resume"
for fd in "${fds[@]}"; do exec {fd}<&-; done
check "served again once they are gone" wait_until 10 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -m 5 http://$ADDR/status)\" = 200 ]"
# 16 silent connections (reopened by an attacker, say) never lock anyone
# out: a silent one gives its place to a newcomer.
fds=()
for i in $(seq 1 16); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$SPORT"
  fds+=("$fd")
done
check "16 silent connections: a newcomer is served" wait_until 10 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -m 5 http://$ADDR/status)\" = 200 ]"
for fd in "${fds[@]}"; do exec {fd}<&-; done
f1=$(st "d['crawl']['fetched']")
check "the crawl went on meanwhile ($f0 -> $f1)" test "$f1" -gt "$f0"
sj=$(api /status)
check "rejections are counted" test "$(jget "d['status_server']['refused']" <<<"$sj")" -ge 1
check "silent connections closed are counted" test "$(jget "d['status_server']['evicted'] + d['status_server']['silent_closed']" <<<"$sj")" -ge 1

# ---- SIGHUP reload ---------------------------------------------------------------
echo "http://127.0.0.1:$P2/unlinked" >>"$T/seeds.txt"
kill -HUP "$KRIA_PID"
# (held back when the SIGHUP comes while the store drains or a commit
# waits for the WARC sync: then it is new only once applied, and so is the
# known seed, which is found known then)
if wait_until 10 grep -qE 'reloaded: 2 seeds \((1 new|0 new, [12] held back)\)' "$T/kria.err"; then
  ok "reload logged: 2 seeds, 1 new or held back"
else # show what was logged instead
  not_ok "reload logged: 2 seeds, 1 new or held back"
  diag "$(grep -aE 'reload|signal|drain|WAL' "$T/kria.err" | tail -8)"
fi
check "the new seed gets fetched" wait_until 20 grep -q 'GET /unlinked ' "$T/kts2.log"
is "$(st "d['reload']['ok']")" 1 "/status counts the reload"

write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s'
kill -HUP "$KRIA_PID"
delay_is() { [ "$(api "/hosts?sort=name&limit=10" | jget "[h['min_delay_ms'] for h in d['hosts'] if h['host']=='127.0.0.1:$P1'][0]" 2>/dev/null ||
  api "/hosts?sort=name&limit=10" | jget "d['hosts'].filter(h=>h.host=='127.0.0.1:$P1')[0].min_delay_ms")" = "$1" ]; }
check "a [host] override applies to its host queue (3 s)" wait_until 10 delay_is 3000

# scope re-checked: queued /p/ URIs are refused when issued from now on
oos0=$(st "d['crawl']['out_of_scope']")
write_conf '[scope]' "exclude = ^http://127\\.0\\.0\\.1:$P1/p/" \
  '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s'
kill -HUP "$KRIA_PID"
oos_grew() { [ "$(st "d['crawl']['out_of_scope']")" -gt "$oos0" ] 2>/dev/null; }
check "scope re-checked after a reload: queued URIs now excluded are refused" wait_until 20 oos_grew
check "... logged out of scope in crawl.log" wait_until 10 grep -q "^.* -5000 .*/p/" "$STATE/logs/crawl.log"

write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s'
kill -HUP "$KRIA_PID"
check "... and the next reload takes the exclusion back" wait_until 10 bash -c "[ \$(grep -c 'reloaded: ' '$T/kria.err') -ge 4 ]"
cp "$T/crawl.conf" "$T/crawl.conf.good"
echo "bogus-key = 1" >>"$T/crawl.conf"
kill -HUP "$KRIA_PID"
check "a bad file is refused, errors logged" wait_until 10 grep -q "'bogus-key' should be section.key" "$T/kria.err"
check "... and the reload counted as refused" wait_until 10 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/status | jget \"d['reload']['failed']\")\" = 1 ]"
is "$(st "d['state']")" '"running"' "the crawl runs on with the old configuration"
write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s'
sed -i 's/^commit-interval = 10ms$/commit-interval = 20ms/' "$T/crawl.conf"
kill -HUP "$KRIA_PID"
check "a changed start-up-only key is refused" wait_until 10 grep -q 'store.commit-interval changed (10ms -> 20ms): it takes a restart' "$T/kria.err"
check "... counted" wait_until 10 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/status | jget \"d['reload']['failed']\")\" = 2 ]"
cp "$T/crawl.conf.good" "$T/crawl.conf"
# a seeds file emptied, or replaced by junk, is refused: it would put the
# crawl's hosts out of scope
cp "$T/seeds.txt" "$T/seeds.good"
: >"$T/seeds.txt"
kill -HUP "$KRIA_PID"
check "an empty seeds file is refused at reload" wait_until 10 grep -aq "reload refused.*seeds.txt: no seed in it (0 lines, 0 bad)" "$T/kria.err"
head -c 20000 /dev/urandom | tr -d '\000' >"$T/seeds.txt"
printf '\nhttp://127.0.0.1:%s/\n' "$P1" >>"$T/seeds.txt"
kill -HUP "$KRIA_PID"
check "a junk seeds file is refused at reload" wait_until 10 grep -aq "reload refused.*seeds.txt: .*not a seeds file" "$T/kria.err"
is "$(st "d['reload']['failed']")" 4 "... both counted as refused"
cp "$T/seeds.good" "$T/seeds.txt"
oos1=$(st "d['crawl']['out_of_scope']")
kill -HUP "$KRIA_PID"
check "... and the good file reloads" wait_until 10 bash -c "[ \$(grep -c 'reloaded: ' '$T/kria.err') -ge 5 ]"
is "$(st "d['crawl']['out_of_scope']")" "$oos1" "nothing went out of scope meanwhile"

# ---- SIGHUP: [warc] ------------------------------------------------------------------
ws() { api /status | jget "d['warc']['$1']"; }
old=$(ws current_file | tr -d '"')
write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s' \
  '[warc]' 'prefix = reloaded' 'compress = none' 'level = 6'
kill -HUP "$KRIA_PID"
check "reload names what changed in [warc]" wait_until 10 grep -q 'reload: \[warc\] prefix kria -> reloaded, compress gzip -> none, level 1 -> 6; the current file is closed' "$T/kria.err"
check "... the old file is closed and renamed (${old%.open})" wait_until 10 test -f "$STATE/warcs/${old%.open}"
check "... a new plain file with the new prefix is begun" wait_until 20 bash -c "ls '$STATE/warcs' | grep -qE '^reloaded-[0-9]{17}-[0-9]{5}-.+\.warc\.open$'"
is "$(ws files)" 2 "/status warc: two files begun"
is "$(ws reloads)" 1 "/status warc: one [warc] reload"
like "$(ws current_file)" '^"reloaded-.*\.warc\.open"$' "/status warc: the current file is the new one"
m0=$(ws metadata); r0=$(ws responses)
write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s' \
  '[warc]' 'prefix = reloaded' 'compress = none' 'level = 6' 'write-metadata = false'
kill -HUP "$KRIA_PID"
check "a record-level key applies from the next record" wait_until 10 grep -q 'reload: \[warc\] write-metadata true -> false; from the next record' "$T/kria.err"
more_records() { [ "$(( $(ws responses) + $(ws revisits) ))" -ge "$((r0 + 3))" ] 2>/dev/null; }
check "visits go on being recorded" wait_until 30 more_records
m1=$(ws metadata)
check "... without metadata records now ($m0 -> $m1, allowing for the reload's own turn)" test "$m1" -le "$((m0 + 1))"
is "$(ws files)" 2 "... and in the same file"
write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s' \
  '[warc]' 'prefix = ../escape'
kill -HUP "$KRIA_PID"
check "a prefix that leaves the directory is refused at reload" wait_until 10 grep -q "reload refused.*prefix" "$T/kria.err"
is "$(ws reloads)" 2 "... and nothing applied"
check "... no file outside the WARC directory" bash -c "! ls '$STATE' | grep -q escape && ! ls '$T' | grep -q escape"
write_conf '[host "127.0.0.1"]' 'politeness.min-delay = 3s' 'politeness.max-delay = 3s' \
  '[warc]' 'prefix = reloaded' 'compress = none' 'level = 6' 'write-metadata = false'
cp "$T/crawl.conf" "$T/crawl.conf.good"

# ---- kria status / report online ---------------------------------------------------
out=$("$KRIA" status --addr "$ADDR" 2>&1)
like "$out" "frontier +[0-9]+ URIs" "kria status --addr"
like "$out" "warc +[0-9]+ records, [0-9]+ bytes, [0-9]+ revisits, 2 files; writing reloaded-" "kria status shows the WARC writer"
out=$("$KRIA" status -c "$T/crawl.conf" --json 2>&1)
is "$(jget "d['state']" <<<"$out")" '"running"' "kria status -c FILE --json (port from status.addr)"
out=$("$KRIA" report hosts --addr "$ADDR" --limit 5 2>&1)
like "$out" "127\.0\.0\.1:$P1" "kria report hosts"
out=$("$KRIA" report uri "$U1/" --addr "$ADDR" 2>&1)
like "$out" "visits +[0-9]+" "kria report uri"
"$KRIA" report uri "$U1/not-known" --addr "$ADDR" >/dev/null 2>&1
is "$?" 1 "kria report uri of an unknown URI: exit 1"
out=$("$KRIA" status -s "$STATE" 2>&1)
like "$out" "frontier +[0-9]+ URIs" "kria status -s DIR while the crawl holds the state"

# ---- refusals at start ---------------------------------------------------------------
cat >"$T/other.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state-other
[status]
listen = $ADDR
EOF
timeout 30 "$KRIA" crawl -c "$T/other.conf" 2>"$T/other.err"
is "$?" 2 "a status port in use: exit 2"
check "... saying why" grep -q "cannot listen" "$T/other.err"
sed -i "s/^listen = .*/listen = 0.0.0.0:0/" "$T/other.conf"
timeout 30 "$KRIA" crawl -c "$T/other.conf" 2>"$T/other.err"
is "$?" 2 "a non-loopback address without a token: exit 2"
check "... saying why" grep -q "status.token must be set" "$T/other.err"

# ---- stop -------------------------------------------------------------------------------
is "$(code /stop -X POST)" 401 "POST /stop without a token: 401"
r=$(api /stop -X POST -H "Authorization: Bearer $TOKEN" -w ' %{http_code}')
like "$r" ' 202$' "POST /stop: 202"
if timeout 15 tail -s 0.05 --pid="$KRIA_PID" -f /dev/null; then
  wait "$KRIA_PID"
  is "$?" 0 "kria exits 0 after /stop"
else
  not_ok "kria exits after /stop"
fi
check "the stop is logged" grep -q 'stop requested through the status server' "$T/kria.err"
check "status.addr is removed at exit" test ! -e "$STATE/status.addr"
mapfile -t W < <(find "$STATE/warcs" -name '*.warc*' | sort)
like "$(printf '%s\n' "${W[@]##*/}")" 'reloaded-.*\.warc$' "the files before and after the [warc] reload are closed"
if command -v node >/dev/null && [ -f "$KRIA_TOP/test/integration/node_modules/warcio/package.json" ]; then
  if (cd "$KRIA_TOP/test/integration" && node warccheck.mjs "${W[@]}") >"$T/wcheck.out" 2>&1; then
    ok "both files check out with warcio.js; every revisit names its original (WARC-Refers-To)"
  else
    not_ok "both files check out with warcio.js"; diag "$(grep -m 10 error "$T/wcheck.out")"
  fi
else
  skip "warcio.js not installed (npm ci in test/integration)" "WARC files check out"
fi

# ---- offline ----------------------------------------------------------------------------
out=$("$KRIA" status -s "$STATE" 2>&1)
is "$?" 0 "kria status -s DIR after the crawl: exit 0"
like "$out" "frontier +[0-9]+ URIs, [0-9]+ queued" "... with the frontier's totals"
out=$("$KRIA" status -s "$STATE" --json)
check "kria status -s DIR --json parses" jvalid <<<"$out"
check "... counts the URIs" test "$(jget "d['uris']" <<<"$out")" -ge 20
out=$("$KRIA" report hosts -s "$STATE" --json)
is "$(jget "d['hosts'][0]['host']" <<<"$out" | tr -d '"' | sed 's/:.*//')" 127.0.0.1 "kria report hosts -s DIR --json"
out=$("$KRIA" report uri "$U1/" -s "$STATE" 2>&1)
like "$out" "history +[0-9]+ visits" "kria report uri -s DIR"
"$KRIA" report uri "$U1/not-known" -s "$STATE" >/dev/null 2>&1
is "$?" 1 "kria report uri -s DIR, unknown URI: exit 1"
"$KRIA" status -s "$T/nowhere" >/dev/null 2>&1
is "$?" 2 "kria status -s of a missing directory: exit 2"
"$KRIA" status --addr 127.0.0.1:1 >/dev/null 2>&1
is "$?" 2 "kria status with no server there: exit 2"
"$KRIA" report bogus >/dev/null 2>&1
is "$?" 64 "kria report bogus: exit 64"

kts_stop "$KTS1_PID"
done_testing
