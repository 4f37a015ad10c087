#!/usr/bin/env bash
# A crawl shared by three kria instances through Redis ([cluster]) beside
# the same crawl by one instance: HOSTS hosts (names of one kts in kria's
# hosts file), each with / linking to every host's / and to a generated
# site of PAGES pages (same-host links). Reports the fetches, the links,
# Redis's commands (INFO commandstats) per cross-member link and per
# fetch, and CPU per fetch (user+sys of every instance, /usr/bin/time)
# alone, in a cluster of one member (ownership computed, nothing sent)
# and in a cluster of three. No politeness delay: CPU is what is measured.
# With --delay MS every host is fetched at most once per MS (politeness
# binding): the wall time from the start to the last page fetched is
# reported as well, and fetches beyond one per URL (a page twice).
# With --dedup the cluster of three runs a second time with
# cluster.shared-dedup = true ("dedup"): the same pages (the generated
# site's page i is one payload on every host, as is every host's /), so
# most captures are revisits, of another member's record or the member's
# own; its Redis GETs and SETs per fetch and its records are reported
# beside its CPU per fetch.
# A member can be the bottleneck instead of politeness, as in a real
# deployment whose instance cannot keep every host busy: --max-conns N
# caps each instance's fetches in flight (http.max-connections) and
# --server-ms MS makes every response take MS (kts delay-ms, a slow
# site), so one instance fetches at most N / MS pages a millisecond
# whatever the number of hosts. "share" is the biggest member's part of
# the fetches: the domain split's own bound on the cluster's speed-up.
# --no-one leaves out the cluster of one. Redis's side of the cluster
# run: commands of every kind (cmds: XADDs, reads, acknowledgements,
# heartbeats, connections' set-up), and bytes it received and sent (in_B,
# out_B; INFO stats), all counted from the start of the run.
#   bench/cluster/run.sh [--hosts N] [--pages N] [--reps R] [--delay MS] [--dedup]
#                        [--max-conns N] [--server-ms MS] [--no-one]
# Needs make deps (redis-server, GNU time) and a build (KRIA, default
# build/kria). Servers are stopped by PID; every wait is bounded.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/bench/lib/common.sh"
. "$top/bench/lib/redis.sh"
KRIA=${KRIA:-$top/build/kria}
KTS=${KTS:-$top/build/kts}
HOSTS=60 PAGES=20 REPS=3 DELAY=0 DEDUP=0 MAXCONNS=4096 SERVER_MS=0 ONE=1
while [ $# -gt 0 ]; do
  case $1 in
  --hosts) HOSTS=$2; shift 2 ;;
  --pages) PAGES=$2; shift 2 ;;
  --reps) REPS=$2; shift 2 ;;
  --delay) DELAY=$2; shift 2 ;;
  --dedup) DEDUP=1; shift ;;
  --max-conns) MAXCONNS=$2; shift 2 ;;
  --server-ms) SERVER_MS=$2; shift 2 ;;
  --no-one) ONE=0; shift ;;
  *) echo "usage: $0 [--hosts N] [--pages N] [--reps R] [--delay MS] [--dedup] [--max-conns N] [--server-ms MS] [--no-one]" >&2
     exit 2 ;;
  esac
done
out=$top/bench/out/cluster
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

{
  echo '[route "/robots.txt"]'
  echo 'body = User-agent: *'
  echo '[route "/"]'
  echo 'body = <a href="/p/0">site</a>'
  for i in $(seq 1 "$HOSTS"); do echo "body = <a href=\"http://h$i.test:{port}/\">h$i</a>"; done
  [ "$SERVER_MS" -gt 0 ] && echo "delay-ms = $SERVER_MS"
  echo '[site "/p/"]'
  echo "pages = $PAGES"
  echo 'links = 3'
  [ "$SERVER_MS" -gt 0 ] && echo "delay-ms = $SERVER_MS"
} >"$out/routes.ini"
"$KTS" -c "$out/routes.ini" >"$out/kts.out" 2>"$out/kts.err" &
pids+=($!)
kb_wait_for 10 grep -q '^listening' "$out/kts.out" || { echo "kts did not start"; exit 1; }
port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$out/kts.out")
{ printf '127.0.0.1'; for i in $(seq 1 "$HOSTS"); do printf ' h%d.test' "$i"; done; echo; } >"$out/hosts"
for i in $(seq 1 "$HOSTS"); do echo "http://h$i.test:$port/"; done >"$out/seeds"
total=$((HOSTS * (PAGES + 2)))

kb_redis_start "$out" || { echo "redis did not start: $(tail -2 "$out/redis.log")"; exit 1; }
rport=$KB_REDIS_PORT
pids+=("$KB_REDIS_PID")

conf() { # DIR [NODE [NODES [SHARED-DEDUP]]]
  cat <<EOC
[http]
allow-private-addresses = true
max-connections = $MAXCONNS
[crawl]
seeds = $out/seeds
state-dir = $1
revisit = false
progress-interval = 0
[politeness]
min-delay = ${DELAY}ms
max-delay = ${DELAY}ms
delay-factor = 0
[dns]
hosts-file = $out/hosts
[status]
listen = 127.0.0.1:0
[limits]
max-time = 5m
EOC
  [ -n "${2:-}" ] && printf '[cluster]\nredis = 127.0.0.1:%s\nnode = %s\nnodes = %s\nprefix = %s\nshared-dedup = %s\n' \
    "$rport" "$2" "${3:-n1, n2, n3}" "$(basename "$(dirname "$1")")" "${4:-false}"
}
# WARC records of a type (responses, identical-payload revisits), summed
# over the crawls' summaries
records() { # TYPE ERRFILES...
  grep -h ' WARC: ' "${@:2}" | sed -n "s/.* \([0-9][0-9]*\) $1.*/\1/p" | awk '{s += $1} END {print s + 0}'
}
fetched() { cat "$@" 2>/dev/null | wc -l; }
metric() { curl -s "http://$(cat "$1/status.addr")/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
now() { date +%s.%N; }
wall() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }
twice() { cat "$@" 2>/dev/null | awk '{print $4}' | sort | uniq -d | wc -l; }
cpu_per() { # FETCHES TIMEFILES...: CPU-µs per fetch, user+sys summed
  local f=$1; shift
  awk -v f="$f" '{s += $1 + $2} END {printf "%.1f", s * 1e6 / f}' "$@"
}

three() { # NAME REP SHARED-DEDUP: a cluster of three members, a row
  local name=$1 rep=$2 dd=$3
  d=$out/$name$rep
  mkdir -p "$d"
  redis-cli -p "$rport" CONFIG RESETSTAT >/dev/null
  t0=$(now)
  for n in n1 n2 n3; do
    conf "$d/$n" "$n" "n1, n2, n3" "$dd" >"$d/$n.conf"
    /usr/bin/time -f '%U %S' -o "$d/$n.time" "$KRIA" crawl -c "$d/$n.conf" >/dev/null 2>"$d/$n.err" &
    eval "pid_$n=$!"
  done
  all() { [ "$(fetched "$d"/n?/logs/crawl.log)" -ge "$total" ]; }
  outbox_empty() {
    local n
    for n in n1 n2 n3; do [ "$(metric "$d/$n" kria_cluster_outbox_links)" = 0 ] || return 1; done
  }
  kb_wait_for 300 all || echo "cluster rep $rep: not all fetched"
  t1=$(now)
  kb_wait_for 30 outbox_empty
  sent=0 recv=0
  local known=0 alone=0
  for n in n1 n2 n3; do
    sent=$((sent + $(metric "$d/$n" kria_cluster_links_sent_total)))
    known=$((known + $(metric "$d/$n" kria_cluster_dedup_hits_total)))
    alone=$((alone + $(metric "$d/$n" kria_cluster_dedup_local_only_total)))
  done
  # cross-member links found: links whose owner is another member, before the dedup cache
  stats=$(redis-cli -p "$rport" INFO commandstats)
  calls() { sed -n "s/^cmdstat_$1:calls=\([0-9]*\).*/\1/p" <<<"$stats"; }
  cmds=$(sed -n 's/^cmdstat_[^:]*:calls=\([0-9]*\).*/\1/p' <<<"$stats" | awk '{s += $1} END {print s}')
  net=$(redis-cli -p "$rport" INFO stats | tr -d '\r')
  net_in=$(sed -n 's/^total_net_input_bytes://p' <<<"$net")
  net_out=$(sed -n 's/^total_net_output_bytes://p' <<<"$net")
  # a member does not end by itself (links may come): SIGTERM to kria,
  # the child of /usr/bin/time
  for n in n1 n2 n3; do eval "kill -TERM \$(ps --ppid \$pid_$n -o pid=)"; done
  for n in n1 n2 n3; do eval "wait \$pid_$n"; done
  f=$(fetched "$d"/n?/logs/crawl.log)
  # every / links to every host's /: the cross-member links found are
  # those of the hosts another member owns, on each / fetched
  owners=$(for n in n1 n2 n3; do awk '{print $4}' "$d/$n/logs/crawl.log" | sed -E 's|^https?://([^:/]+).*|\1|' | sort -u | sed "s/^/$n /"; done)
  xm=0
  for n in n1 n2 n3; do
    mine=$(grep -c "^$n " <<<"$owners")
    xm=$((xm + mine * (HOSTS - mine)))
  done
  share=$(for n in n1 n2 n3; do fetched "$d/$n/logs/crawl.log"; done |
    awk -v f="$f" '$1 > m {m = $1} END {printf "%.3f", m / f}')
  printf '%-8s %4s %8s %10s %8s %6s %9s %9s %6s %6s %6s %6s %6s %6s %8s %8s\n' "$name" "$rep" "$f" \
    "$(cpu_per "$f" "$d"/n?.time)" "$(wall "$t0" "$t1")" "$(twice "$d"/n?/logs/crawl.log)" "$xm" "$sent" "$(calls xadd)" \
    "$(calls xreadgroup)" "$(calls xack)" "$(calls xdel)" "$share" "$cmds" "$net_in" "$net_out"
  [ "$dd" = true ] || return 0
  per() { awk -v a="$1" -v f="$f" 'BEGIN {printf "%.3f", (a + 0) / f}'; }
  printf '  %s rep %s: %s responses, %s identical-payload revisits; GET %s (%s/fetch): %s known, %s local only; SET %s (%s/fetch)\n' \
    "$name" "$rep" "$(records responses "$d"/n?.err)" "$(records identical-payload "$d"/n?.err)" \
    "$(calls get)" "$(per "$(calls get)")" "$known" "$alone" "$(calls set)" "$(per "$(calls set)")"
}

printf '%s hosts x %s pages (+ / and robots.txt): %s fetches a crawl\n' "$HOSTS" "$PAGES" "$total"
printf 'max-connections %s per instance, politeness %s ms, every response %s ms\n' "$MAXCONNS" "$DELAY" "$SERVER_MS"
printf '%-8s %4s %8s %10s %8s %6s %9s %9s %6s %6s %6s %6s %6s %6s %8s %8s\n' run rep fetches cpu_us/f wall_s \
  twice xmember sent xadd xread xack xdel share cmds in_B out_B
for rep in $(seq 1 "$REPS"); do
  # alone
  d=$out/alone$rep
  mkdir -p "$d"
  conf "$d/s" >"$d/c.conf"
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$d/time" timeout 300 "$KRIA" crawl -c "$d/c.conf" >/dev/null 2>"$d/err"
  t1=$(now)
  f=$(fetched "$d/s/logs/crawl.log")
  printf '%-8s %4s %8s %10s %8s %6s\n' alone "$rep" "$f" "$(cpu_per "$f" "$d/time")" \
    "$(wall "$t0" "$t1")" "$(twice "$d/s/logs/crawl.log")"
  # a cluster of one: every link its own (ownership computed, Redis
  # connected, nothing sent); it waits for links at the end: SIGTERM
  if [ "$ONE" = 1 ]; then
  d=$out/one$rep
  mkdir -p "$d"
  conf "$d/n1" n1 n1 >"$d/n1.conf"
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$d/time" "$KRIA" crawl -c "$d/n1.conf" >/dev/null 2>"$d/err" &
  tp=$!
  one_done() { [ "$(fetched "$d/n1/logs/crawl.log")" -ge "$total" ]; }
  kb_wait_for 300 one_done || echo "one rep $rep: not all fetched"
  t1=$(now)
  kill -TERM "$(ps --ppid "$tp" -o pid=)"
  wait "$tp"
  f=$(fetched "$d/n1/logs/crawl.log")
  printf '%-8s %4s %8s %10s %8s %6s\n' one "$rep" "$f" "$(cpu_per "$f" "$d/time")" \
    "$(wall "$t0" "$t1")" "$(twice "$d/n1/logs/crawl.log")"
  fi
  # cluster of three (and again with shared dedup)
  three cluster "$rep" false
  [ "$DEDUP" = 1 ] && three dedup "$rep" true
done
