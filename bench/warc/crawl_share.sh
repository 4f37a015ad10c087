#!/usr/bin/env bash
# bench/warc/crawl_share.sh — the WARC writer's share of a whole crawl's
# CPU: a snapshot crawl of a kts site (N pages of 10 KiB, 4 links each,
# no politeness delay, 8 fetches at once) with warc.enabled = false and
# with the writer in several settings; kria's user+sys CPU time (from
# bench/lib/measure) per run, median of R runs each, runs interleaved so
# drifting load spreads over all settings. kts runs on another CPU.
#
# Usage: bench/warc/crawl_share.sh [--pages N] [--reps R] [--build DIR]
# (DIR holds kria and kts; default build). Prints a markdown table.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
PAGES=5000
REPS=5
BUILD=build
while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	-h | --help) sed -n '2,11p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $PAGES =~ ^[0-9]+$ && $PAGES -ge 100 && $PAGES -le 100000 ]] || kb_die "--pages: 100..100000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 99 ]] || kb_die "--reps: 1..99"
kb_bound 1800 "${ARGS[@]}"

KRIA=$KB_ROOT/$BUILD/kria
KTS=$KB_ROOT/$BUILD/kts
[ -x "$KRIA" ] && [ -x "$KTS" ] || kb_die "build $BUILD first (make BUILD=$BUILD)"
kb_build_tools
W=$(mktemp -d "${TMPDIR:-/tmp}/kria-crawlshare.XXXXXX")
kb_on_exit "rm -rf '$W'"

cat >"$W/site.ini" <<EOF
[route "/robots.txt"]
status = 404

[site]
pages = $PAGES
links = 4
body-size = 10K
etag = auto
EOF
mkfifo "$W/kts.fifo"
taskset -c 1 "$KTS" -c "$W/site.ini" >"$W/kts.fifo" 2>"$W/kts.err" &
KTS_PID=$!
kb_on_exit "kill $KTS_PID 2>/dev/null || true"
read -r -t 10 line <"$W/kts.fifo" || kb_die "kts did not start"
PORT=${line##*:}
echo "http://127.0.0.1:$PORT/p/0" >"$W/seeds.txt"
cat >"$W/c.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $W/seeds.txt
state-dir = $W/st
revisit = false
log-level = warn
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
host-valence = 8
EOF

NAMES=("off" "gzip 1 (default)" "gzip 6" "none (plain .warc)" "gzip 1, no request/metadata" "gzip 1, durability none")
OPTS=("-o warc.enabled=false" "" "-o warc.level=6" "-o warc.compress=none"
	"-o warc.write-request=false -o warc.write-metadata=false" "-o warc.durability=none")
for r in $(seq "$REPS"); do
	for i in "${!NAMES[@]}"; do
		rm -rf "$W/st"
		# shellcheck disable=SC2086
		kb_measure "$W/m" 300 taskset -c 0 "$KRIA" crawl -c "$W/c.conf" ${OPTS[$i]} 2>>"$W/kria.err" ||
			kb_die "crawl failed: $(tail -3 "$W/kria.err")"
		read -r wall user sys rss rc <"$W/m"
		n=$(wc -l <"$W/st/logs/crawl.log")
		echo "$i $(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.3f", u + s}') $wall $n" >>"$W/runs"
	done
	kb_log "round $r of $REPS done"
done
off=$(awk '$1 == 0 {print $2}' "$W/runs" | kb_stats | cut -d' ' -f1)
echo "| WARC | CPU s (median of $REPS) | µs/page | WARC µs/page | WARC share |"
echo "|---|---:|---:|---:|---:|"
for i in "${!NAMES[@]}"; do
	med=$(awk -v i="$i" '$1 == i {print $2}' "$W/runs" | kb_stats | cut -d' ' -f1)
	n=$(awk -v i="$i" '$1 == i {print $4; exit}' "$W/runs")
	awk -v name="${NAMES[$i]}" -v c="$med" -v o="$off" -v n="$n" 'BEGIN {
		printf "| %s | %.2f | %.0f | %.0f | %.0f %% |\n", name, c, c / n * 1e6,
			(c - o) / n * 1e6, (c > 0 ? (c - o) / c * 100 : 0) }'
done
