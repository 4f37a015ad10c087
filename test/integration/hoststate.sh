#!/usr/bin/env bash
# A host's learned state survives a restart (kria/hoststate.h, hosts.learned).
# kria crawls one kts host with two kinds of pages: /fast/ changes on
# every request (text/html, poisson, so the allocator binds: more pages
# want min-wait than the host's politeness serves) and /slow/ never
# changes with honest validators (text/plain, linked from the root,
# multiplicative with the capacity plan), whose sampled full downloads confirm the validators
# and halve the trust sample (settings that move it in seconds).
#   1  the crawl runs until the live host list shows the allocator
#      solved and binding and the trust sample below its start; SIGTERM;
#      kria report hosts -s (offline) shows the record the clean stop
#      wrote: x, gain, the sample and the run of confirmations;
#   2  restart with kts down (no visit can move anything): the live host
#      list shows exactly that x, gain, sample and run, where a fresh
#      start shows no allocator, the sample at its start and a run of 0;
#   3  kts back on its port, the crawl goes on from there: the record in
#      the state database moves past run 1's (the periodic write, every
#      adaptive.learned-state-interval = 1s), then SIGKILL;
#   4  restart with kts down: the live values are those of the last
#      record written before the kill;
#   5  a record that is not kria's (a bit flipped) is refused with a
#      warning, counted, and the host starts fresh; the crawl runs.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

{ no_robots_route; cat <<'EOF'; } >"$T/routes.ini"
[route "/"]
body = <html><body><a href="/fast/0">f</a>
body = <a href="/slow/0">0</a> <a href="/slow/1">1</a> <a href="/slow/2">2</a> <a href="/slow/3">3</a>
body = <a href="/slow/4">4</a> <a href="/slow/5">5</a> <a href="/slow/6">6</a> <a href="/slow/7">7</a>
body = </body></html>

[site "/fast/"]
pages = 12
links = 3
change-every = 1
etag = auto
body-size = 1K

[site "/slow/"]
pages = 8
content-type = text/plain
etag = auto
last-modified = auto
body-size = 1K
EOF
START=1000000000000
kts_start "$T/routes.ini" --start-ms "$START" || bail "kts did not start"
PORT=$KTS_PORT
printf '%s/\n' "$KTS_URL" >"$T/seeds.txt"
{
  revisit_conf "$T/seeds.txt" "$T/state" 150ms
  cat <<EOF
[adaptive]
trust-sample = 0.5
trust-sample-min = 0.02
trust-sample-halving = 3
trust-probation = 1
learned-state-interval = 1s
[status]
listen = 127.0.0.1:0
EOF
  wait_conf html '^text/html' 1s policy=poisson default-wait=1s max-wait=1h
  wait_conf plain '^text/plain' 1s default-wait=1s max-wait=2s
} >"$T/crawl.conf"

start() { kria_bg "$1" "$T/crawl.conf"; } # start NAME
# live: "x gain sample run state" of the host from the status server's /hosts
live() {
  host_fields live "$T/state" h.capacity.changes_per_visit h.capacity.gain h.validators.sample \
    h.validators.confirm_run h.capacity.allocator
}
# stored: "x gain sample run" of the record in the state database (offline)
stored() {
  host_fields stored "$T/state" h.learned.changes_per_visit h.learned.gain h.learned.trust_sample \
    h.learned.confirm_run
}
# same "a b c d" "a b c d": the four numbers equal within 1e-5 (relative)
same() { same_numbers 4 "$1" "$2"; }
learned_now() { # LIVE: the allocator binds, the sample is below its start
  LIVE=$(live)
  read -r x _ sample run st <<<"$LIVE"
  [ "$st" = binds ] && [ "$run" != - ] && [ "$run" -gt 0 ] &&
    node -e 'process.exit(+process.argv[1] < 0.5 && +process.argv[2] > 0.7 ? 0 : 1)' "$sample" "$x"
}

# ---- 1: learn, clean stop ------------------------------------------------------
start run1
check "run 1: the allocator binds and the trust sample fell below 0.5" wait_until 60 learned_now
diag "run 1 live (x gain sample run state): $LIVE"
kria_term "run 1"
S1=$(stored)
diag "run 1 stored (x gain sample run): $S1"
read -r x1 _ sample1 run1 <<<"$S1"
check "run 1: the record keeps x > ln 2, a sample below its start and the run ($S1)" \
  node -e 'const [x, g, s, r] = process.argv[1].split(" ").map(Number);
    process.exit(x > 0.7 && g >= 0.5 && g <= 1.25 && s < 0.5 && r > 0 ? 0 : 1)' "$S1"
like "$(cat "$T/run1.err")" "learned state: [0-9]+ hosts loaded \\(0 refused\\), [1-9][0-9]* saved" \
  "run 1: the summary counts the records written"
"$KRIA" report hosts -s "$T/state" >"$T/hosts.txt" 2>&1
like "$(head -1 "$T/hosts.txt")" " x +gain +sample +run " "report hosts (offline) has the learned columns"
like "$(sed -n 2p "$T/hosts.txt")" " [0-9.]+ +[0-9.]+ +[0-9.]+% +$run1 " "report hosts shows the stored run ($run1)"
kts_stop

# ---- 2: restart, nothing to visit: the state is the stored one ---------------
start run2
L2=$(live)
diag "run 2 live: $L2"
check "run 2: x, gain, sample and run continue from the record ($S1)" same "$L2" "$S1"
"$KRIA" report hosts --addr "$(cat "$T/state/status.addr")" >"$T/live.txt" 2>&1
like "$(head -1 "$T/live.txt")" " x +gain +sample +plan" "report hosts (live) has x, gain and sample"
like "$(sed -n 2p "$T/live.txt")" " [0-9.]+ +[0-9.]+ +[0-9.]+% " "report hosts (live) shows them"
kria_term "run 2"
like "$(cat "$T/run2.err")" "learned state: 1 hosts loaded" "run 2: one host's state loaded"

# ---- 3: go on learning, kill -9 after a periodic write --------------------------
kts_start "$T/routes.ini" --start-ms "$START" --port "$PORT" || bail "kts did not start again on $PORT"
# run 2's refused connections backed the host off: forget them, so that
# run 3 fetches at once
sqlite3 "$T/state/kria.db" "UPDATE hosts SET backoff_level = 0, backoff_until = 0, fail_streak = 0"
start run3
moved() { S3=$(stored); read -r _ _ _ r <<<"$S3"; [ "$r" != - ] && [ "$r" -gt "$run1" ]; }
check "run 3: the stored run moves past $run1 while the crawl runs" wait_until 60 moved
kill -KILL "$KPID"
{ wait "$KPID"; } 2>/dev/null
S3=$(stored)
diag "run 3 stored at the kill: $S3"
kts_stop

# ---- 4: restart after the kill ----------------------------------------------------
start run4
L4=$(live)
diag "run 4 live: $L4"
check "run 4: after kill -9 the state is the last record written ($S3)" same "$L4" "$S3"
kria_term "run 4"

# ---- 5: a damaged record --------------------------------------------------------------
sqlite3 "$T/state/kria.db" "UPDATE hosts SET learned = x'02' || substr(learned, 2) WHERE learned IS NOT NULL"
start run5
L5=$(live)
diag "run 5 live: $L5"
read -r x5 _ sample5 run5 _ <<<"$L5"
is "$run5 $x5 $sample5" "0 - 0.5" "run 5: a damaged record: the host starts fresh (run 0, no allocator, sample at its start)"
kria_term "run 5"
like "$(cat "$T/run5.err")" "learned state unreadable \\([0-9]+ bytes\\): the host starts fresh" \
  "run 5: the refusal is logged"
like "$(cat "$T/run5.err")" "learned state: 0 hosts loaded \\(1 refused\\)" "run 5: and counted"
done_testing
