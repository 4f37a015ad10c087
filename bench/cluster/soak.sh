#!/usr/bin/env bash
# Soak of a crawl shared by three kria instances through Redis: SIGKILL of
# a random member (restarted at once) every STEP new fetches, and of
# redis-server too at every fourth kill (restarted from its append-only
# file), KILLS kills in all; then the crawl runs to its end. Checks: every
# page fetched (no link lost) and every host fetched by one member only
# (none crawled by two). HOSTS hosts (names of one kts in kria's hosts
# file) of PAGES pages each, every page linking to pages of other hosts,
# a politeness delay so the crawl lasts.
#   bench/cluster/soak.sh [--hosts 60] [--pages 40] [--kills 20] [--step 50]
# Needs make deps and a build (KRIA, default build/kria). Servers are
# stopped by PID; every wait is a bounded poll of crawl.log.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/bench/lib/common.sh"
. "$top/bench/lib/redis.sh"
KRIA=${KRIA:-$top/build/kria}
KTS=${KTS:-$top/build/kts}
HOSTS=60 PAGES=40 KILLS=20 STEP=50
while [ $# -gt 0 ]; do
  case $1 in
  --hosts) HOSTS=$2; shift 2 ;;
  --pages) PAGES=$2; shift 2 ;;
  --kills) KILLS=$2; shift 2 ;;
  --step) STEP=$2; shift 2 ;;
  *) echo "usage: $0 [--hosts N] [--pages N] [--kills N] [--step N]" >&2; exit 2 ;;
  esac
done
out=$top/bench/out/cluster-soak
rm -rf "$out" && mkdir -p "$out"
declare -A KPID
RPID=
cleanup() {
  local p
  for p in "${KPID[@]}" $RPID ${KTSPID:-}; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# page i of a host links to page i+1 of the next host and of the one
# after, and to its own page i+1: every page reachable, most links cross
{
  echo '[route "/robots.txt"]'
  echo 'body = User-agent: *'
  for i in $(seq 0 $((PAGES - 1))); do
    echo "[route \"/p$i\"]"
    j=$(((i + 1) % PAGES))
    echo "body = <a href=\"/p$j\">next</a>"
    for k in 1 7 23; do echo "body = <a href=\"http://h{next}.test:{port}/p$j\">x</a>" | sed "s/{next}/@$k/"; done
  done
} >"$out/routes.tmpl"
# kts has no host token: the cross-host links name fixed hosts per page
awk -v H="$HOSTS" '{ while (match($0, /@[0-9]+/)) { k = substr($0, RSTART + 1, RLENGTH - 1);
  n = (NR * 7 + k) % H + 1; $0 = substr($0, 1, RSTART - 1) n substr($0, RSTART + RLENGTH) } print }' \
  "$out/routes.tmpl" >"$out/routes.ini"
"$KTS" -c "$out/routes.ini" >"$out/kts.out" 2>"$out/kts.err" &
KTSPID=$!
kb_wait_for 10 grep -q '^listening' "$out/kts.out" || { echo "kts did not start"; exit 1; }
port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$out/kts.out")
{ printf '127.0.0.1'; for i in $(seq 1 "$HOSTS"); do printf ' h%d.test' "$i"; done; echo; } >"$out/hosts"
for i in $(seq 1 "$HOSTS"); do echo "http://h$i.test:$port/p0"; done >"$out/seeds"

redis_start() { # at the same port after a kill
  kb_redis_start "$out" ${rport:-} || return 1
  rport=$KB_REDIS_PORT RPID=$KB_REDIS_PID
}
redis_start || { echo "redis did not start"; exit 1; }

for n in 1 2 3; do
  cat >"$out/n$n.conf" <<EOC
[http]
allow-private-addresses = true
[crawl]
seeds = $out/seeds
state-dir = $out/n$n
revisit = false
progress-interval = 0
[politeness]
min-delay = 250ms
max-delay = 250ms
delay-factor = 0
[dns]
hosts-file = $out/hosts
[scope]
max-link-hops = 1000
[store]
commit-interval = 20ms
[limits]
max-time = 30m
[cluster]
redis = 127.0.0.1:$rport
node = n$n
nodes = n1, n2, n3
EOC
done
start() { "$KRIA" crawl -c "$out/n$1.conf" >>"$out/n$1.out" 2>>"$out/n$1.err" & KPID[$1]=$!; }
fetched() { cat "$out"/n?/logs/crawl.log 2>/dev/null | awk '{print $4}'; }
nfetched() { fetched | wc -l; }
total=$((HOSTS * (PAGES + 1)))
for n in 1 2 3; do start "$n"; done

all() { [ "$(fetched | sort -u | wc -l)" -ge "$total" ]; }
redis_kills=0 kills=0
for kill in $(seq 1 "$KILLS"); do
  target=$(($(nfetched) + STEP))
  more() { [ "$(nfetched)" -ge "$target" ] || all; }
  kb_wait_for 120 more || { echo "kill $kill: stuck at $(nfetched) fetches"; break; }
  all && { echo "the crawl ended before kill $kill"; break; }
  kills=$kill
  n=$((RANDOM % 3 + 1))
  kill -KILL "${KPID[$n]}"
  wait "${KPID[$n]}" 2>/dev/null
  what="n$n"
  if [ $((kill % 4)) = 0 ]; then
    kill -KILL "$RPID"
    wait "$RPID" 2>/dev/null
    redis_start || { echo "redis did not restart"; exit 1; }
    redis_kills=$((redis_kills + 1))
    what="$what and redis-server"
  fi
  start "$n"
  echo "kill $kill: $what at $(nfetched) fetches"
done
kb_wait_for 600 all
for n in 1 2 3; do kill -TERM "${KPID[$n]}"; done
for n in 1 2 3; do wait "${KPID[$n]}"; done
KPID=()
uniq_pages=$(fetched | sort -u | wc -l)
double=$(for n in 1 2 3; do
  awk '{print $4}' "$out/n$n/logs/crawl.log" | sed -E 's|^https?://([^:/]+).*|\1|' | sort -u | sed "s/\$/ n$n/"
done | awk '{print $1}' | sort | uniq -d | wc -l)
echo "soak: $kills member kills, $redis_kills Redis kills; $uniq_pages of $total pages fetched" \
  "($(nfetched) fetches: repeats are fetches a kill cut before their commit);" \
  "$double hosts fetched by two members"
[ "$uniq_pages" -eq "$total" ] && [ "$double" -eq 0 ]
