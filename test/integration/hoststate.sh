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

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

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
cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
[politeness]
min-delay = 150ms
max-delay = 150ms
delay-factor = 0
[store]
commit-interval = 10ms
[adaptive]
trust-sample = 0.5
trust-sample-min = 0.02
trust-sample-halving = 3
trust-probation = 1
learned-state-interval = 1s
[status]
listen = 127.0.0.1:0
[wait "html"]
content-type = ^text/html
policy = poisson
initial-wait = 1s
default-wait = 1s
min-wait = 1s
max-wait = 1h
[wait "plain"]
content-type = ^text/plain
initial-wait = 1s
default-wait = 1s
min-wait = 1s
max-wait = 2s
EOF

start() { # start NAME: kria crawl in the background (its own pid: kill -9 reaches it)
  rm -f "$T/state/status.addr"
  "$KRIA" crawl -c "$T/crawl.conf" >"$T/$1.out" 2>"$T/$1.err" &
  KPID=$!
  _pids+=("$KPID")
  wait_until 30 test -s "$T/state/status.addr" || bail "$1: no status.addr: $(tail -3 "$T/$1.err")"
}
# live: "x gain sample run state" of the host from the status server's /hosts
live() {
  "$KRIA" report hosts --addr "$(cat "$T/state/status.addr")" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const h = JSON.parse(s).hosts[0] || {}, c = h.capacity || {}, v = h.validators || {};
      console.log([c.changes_per_visit ?? "-", c.gain ?? "-", v.sample ?? "-",
                   v.confirm_run ?? "-", c.allocator ?? "-"].join(" "));
    })'
}
# stored: "x gain sample run" of the record in the state database (offline)
stored() {
  "$KRIA" report hosts -s "$T/state" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const l = (JSON.parse(s).hosts[0] || {}).learned || {};
      console.log([l.changes_per_visit ?? "-", l.gain ?? "-", l.trust_sample ?? "-",
                   l.confirm_run ?? "-"].join(" "));
    })'
}
# same "a b c d" "a b c d": the four numbers equal within 1e-5 (relative)
same() {
  node -e 'const a = process.argv[1].split(" "), b = process.argv[2].split(" ");
    for (let i = 0; i < 4; i++) { const x = +a[i], y = +b[i];
      if (!(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(x)))) process.exit(1); }' "$1" "$2"
}
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
kill -TERM "$KPID"
wait "$KPID"
is "$?" 0 "run 1: SIGTERM, exit 0"
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
kill -TERM "$KPID"
wait "$KPID"
is "$?" 0 "run 2: SIGTERM, exit 0"
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
kill -TERM "$KPID"
wait "$KPID"

# ---- 5: a damaged record --------------------------------------------------------------
sqlite3 "$T/state/kria.db" "UPDATE hosts SET learned = x'02' || substr(learned, 2) WHERE learned IS NOT NULL"
start run5
L5=$(live)
diag "run 5 live: $L5"
read -r x5 _ sample5 run5 _ <<<"$L5"
is "$run5 $x5 $sample5" "0 - 0.5" "run 5: a damaged record: the host starts fresh (run 0, no allocator, sample at its start)"
kill -TERM "$KPID"
wait "$KPID"
is "$?" 0 "run 5: the crawl ran and stopped cleanly"
like "$(cat "$T/run5.err")" "learned state unreadable \\([0-9]+ bytes\\): the host starts fresh" \
  "run 5: the refusal is logged"
like "$(cat "$T/run5.err")" "learned state: 0 hosts loaded \\(1 refused\\)" "run 5: and counted"
done_testing
