#!/usr/bin/env bash
# adaptive.capacity-plan: 40 pages that change on every request, min-wait
# 1 s, politeness a fixed 50 ms — the thesis' waits ask for ~40 fetches/s
# from a host that serves ~18. With the plan the multiplicative waits are
# raised to the host's floor (crawl.log "wait:text/multiplicative/capacity"
# with "cap:<the thesis' wait>", the summary counts them) and the waits
# end near 40 / 18 s instead of 1 s; the live host list (kria report
# hosts) shows the plan at about 100 % of the capacity and the thesis'
# waits far above it. With capacity-plan = false none is raised. The
# crawl ends itself after 160 fetches (limits). The evaluator sets
# policy = multiplicative (the default is poisson, whose allocator has a
# budget of its own).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[site "/p/"]
pages = 40
links = 3
change-every = 1
body-size = 1K
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '%s/p/0\n' "$KTS_URL" >"$T/seeds.txt"

run() { # run NAME PLAN
  cat >"$T/$1.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/$1
[politeness]
min-delay = 50ms
max-delay = 50ms
delay-factor = 0
[limits]
max-document-download = 160
[store]
commit-interval = 10ms
[adaptive]
capacity-plan = $2
[status]
listen = 127.0.0.1:0
[wait "text"]
content-type = ^text/
initial-wait = 1s
default-wait = 1s
min-wait = 1s
max-wait = 1h
policy = multiplicative
EOF
  timeout 120 "$KRIA" crawl -c "$T/$1.conf" >"$T/$1.out" 2>"$T/$1.err" &
  KPID=$!
  CL="$T/$1/logs/crawl.log"
}
finish() { wait "$KPID"; RC=$?; }
# plan_shown: the live host list shows the plan at its floor, "P% (W%)"
plan_shown() {
  PLAN=$("$KRIA" report hosts --addr "$(cat "$T/on/status.addr")" 2>/dev/null | awk 'NR == 2 {print $(NF-1), $NF}')
  [[ $PLAN =~ ^[0-9]+%\ \([0-9]+%\)$ ]]
}

# plan_far_above: the plan at about the whole capacity, the thesis' waits
# far above it. Both are measured from the realised fetches and move as
# pages are found and waits settle: read until the crawl gets there (the
# first plan shown was 195-220 % wanted on a quiet machine, 149 % once at
# load 10 and 119 % at load 8, from fewer pages known).
plan_far_above() {
  plan_shown || return 1
  planned=${PLAN%%%*}
  wanted=${PLAN#*(}; wanted=${wanted%\%)}
  [ "$planned" -ge 80 ] && [ "$planned" -le 110 ] && [ "$wanted" -ge 125 ]
}

run on true
wait_until 30 test -s "$T/on/status.addr" || bail "no status.addr: $(tail -3 "$T/on.err")"
check "plan: the live host list shows planned and wanted use of the capacity" wait_until 60 plan_shown
diag "plan (wanted), first shown: $PLAN"
far=0; wait_until 60 plan_far_above && far=1
diag "plan (wanted), last read: $PLAN"
is "$far" 1 "plan: planned about the whole capacity ($planned%), the thesis' waits far more ($wanted%)"
finish
is "$RC" 0 "plan: the crawl ends at its limit"
raised=$(grep -c 'wait:text/multiplicative/capacity' "$CL")
diag "raised: $raised of $(grep -c 'wait:text/' "$CL") waits"
check "plan: the host's waits are raised to its floor ($raised)" test "$raised" -gt 10
is "$(grep 'multiplicative/capacity' "$CL" | grep -c 'capacity,cap:[0-9]')" "$raised" \
  "plan: each raised line keeps the thesis' wait (cap:...)"
like "$(cat "$T/on.err")" "waits: [0-9]+ multiplicative \\($raised raised to the host's capacity\\)" \
  "plan: the summary counts them"
# the last raised wait, ms: about 40 pages / ~18 fetches a second
last=$(grep 'multiplicative/capacity' "$CL" | tail -1 | grep -o 'wt:[0-9a-z]*' | head -1)
diag "last raised wait: $last"
# wt:<d>d<h>h<m>m<s>s<ms>ms, parts absent when 0; at least 1.5 s: the
# floor follows the fetches the host realised (2.0-2.2 s here, 1.992 s
# once on a machine at load 10), the point is that it is not 1 s
last_ms=$(printf '%s\n' "${last#wt:}" | awk '{
  n = 0; t = $0
  while (match(t, /^[0-9]+(ms|d|h|m|s)/)) {
    v = substr(t, 1, RLENGTH); t = substr(t, RLENGTH + 1)
    u = v; sub(/^[0-9]+/, "", u); sub(/[a-z]+$/, "", v)
    n += v * (u == "ms" ? 1 : u == "s" ? 1000 : u == "m" ? 60000 : u == "h" ? 3600000 : 86400000)
  }
  print (t == "" ? n : -1)
}')
check "plan: the floor is seconds, not the 1 s min-wait ($last = ${last_ms} ms)" \
  test "${last_ms:--1}" -ge 1500

run off false
finish
is "$RC" 0 "thesis: the crawl ends at its limit"
is "$(grep -c 'multiplicative/capacity' "$CL")" 0 "thesis: no wait raised with capacity-plan = false"
is "$(grep -c 'wait:text/multiplicative' "$CL" | awk '$1 > 60 {print "many"}')" many \
  "thesis: the waits were multiplicative"
kts_stop
done_testing
