#!/usr/bin/env bash
# What `kria cluster rebalance` costs: three members' state databases,
# each with HOSTS hosts of URIS URIs (rows as a revisiting crawl leaves
# them: a 256-byte visit history, validators, a learned host record),
# written straight into the schema kria created, each host on a member
# at random (so about 3/4 of them move, not the 1/4 of a crawl whose
# hosts sit with their owners: the rate per moved row is the figure);
# then the step from
# n1,n2,n3 to n1,n2,n3,n4, the four runs at once. Reports the rows moved,
# the wall time of the step (from the first run's start to the last's
# end), rows per second, Redis's peak memory above its start per moved
# row, each run's CPU and memory, and the state databases' sizes before
# and after. Each host is a site of its own (www.siteN.org).
#   bench/cluster/rebalance.sh [--hosts N] [--uris N]
# Needs make deps (redis-server, sqlite3) and a build (KRIA, default
# build/kria). Redis runs with appendfsync always, as the README asks.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/bench/lib/common.sh"
. "$top/bench/lib/redis.sh"
KRIA=${KRIA:-$top/build/kria}
HOSTS=300 URIS=300
while [ $# -gt 0 ]; do
  case $1 in
  --hosts) HOSTS=$2; shift 2 ;;
  --uris) URIS=$2; shift 2 ;;
  *) echo "usage: $0 [--hosts N] [--uris N]" >&2; exit 2 ;;
  esac
done
out=$top/bench/out/rebalance
rm -rf "$out" && mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
kb_redis_start "$out" || { echo "redis did not start" >&2; exit 1; }
port=$KB_REDIS_PORT
pids+=("$KB_REDIS_PID")
rcli() { redis-cli -p "$port" "$@"; }
mem() { rcli INFO memory | awk -F: '$1 == "used_memory_peak" {print $2+0}'; }

conf() { # N
  cat <<EOF
[crawl]
state-dir = $out/n$1
[cluster]
redis = 127.0.0.1:$port
node = n$1
nodes = n1, n2, n3
prefix = bench
EOF
}
for n in 1 2 3 4; do conf "$n" >"$out/n$n.conf"; done
# the schema, as kria makes it (a rebalance to the same members opens the
# state directory and finds nothing to move)
for n in 1 2 3; do "$KRIA" cluster rebalance -c "$out/n$n.conf" --nodes n1,n2,n3 >/dev/null || exit 1; done
for n in 1 2 3; do
  sqlite3 "$out/n$n/kria.db" <<EOF
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i + 1 < $HOSTS)
INSERT INTO hosts(name, discovered, queued, finished, succeeded, learned)
  SELECT 'www.site' || ($n * 1000000 + i) || '.org', $URIS, $URIS, $URIS * 5, $URIS * 5,
         randomblob(120) FROM h;
WITH RECURSIVE u(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM u WHERE j + 1 < $URIS)
INSERT INTO uris(fp, host_id, directive, next_at, state, url, via, hop_path, first_seen,
                 last_visit, wait_ms, visits, versions, status, content_type, digest, etag,
                 last_modified, history)
  SELECT abs(random()), hosts.id, 0, 1800000000000 + u.j, 1,
         'http://' || hosts.name || '/page/' || u.j, 0, 'LL', 1700000000000, 1790000000000,
         86400000, 5, 2, 200, 'text/html', randomblob(20), '"' || hex(randomblob(8)) || '"',
         1780000000000, randomblob(256)
  FROM hosts, u;
COMMIT;
EOF
done
before=$(for n in 1 2 3; do sqlite3 "$out/n$n/kria.db" 'SELECT count(*) FROM uris'; done | paste -sd+ | bc)
size0=$(du -cb "$out"/n?/kria.db* | tail -1 | cut -f1)
mem0=$(mem)
t0=$(date +%s%N)
for n in 1 2 3 4; do
  /usr/bin/time -f "n$n: %e s wall, %U s user, %S s sys, %M KiB max RSS" -o "$out/time$n" \
    "$KRIA" cluster rebalance -c "$out/n$n.conf" --nodes n1,n2,n3,n4 >"$out/rb$n.out" 2>"$out/rb$n.err" &
  rb[$n]=$!
done
rc=0
for n in 1 2 3 4; do wait "${rb[$n]}" || { rc=1; cat "$out/rb$n.err" >&2; }; done
t1=$(date +%s%N)
[ "$rc" = 0 ] || exit 1
after=$(for n in 1 2 3 4; do sqlite3 "$out/n$n/kria.db" 'SELECT count(*) FROM uris'; done | paste -sd+ | bc)
moved=$(cat "$out"/rb?.out | sed -nE 's/.*: sent [0-9]+ hosts \(([0-9]+) rows\).*/\1/p' | paste -sd+ | bc)
size1=$(du -cb "$out"/n?/kria.db* | tail -1 | cut -f1)
ms=$(((t1 - t0) / 1000000))
echo "rows $before before, $after after; moved: $moved URI rows ($(sqlite3 "$out/n4/kria.db" 'SELECT count(*) FROM uris') to n4)"
echo "step: $ms ms wall, $((moved * 1000 / (ms ? ms : 1))) rows/s"
echo "redis peak above start: $(( ($(mem) - mem0) / (moved ? moved : 1) )) bytes per moved row"
echo "state databases: $size0 bytes before, $size1 after (with WAL)"
cat "$out"/rb?.out "$out"/time?
