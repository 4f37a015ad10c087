#!/usr/bin/env bash
# bench/frontier/run.sh — the frontier and its SQLite store at scale, on disk.
#
# For each size N (default 1M and 10M URIs over 10,000 hosts) in
# bench/out/frontier/nN/: build N URIs as discovered links (every one new:
# new-URI inserts/s), schedule links of which half are already known
# (links/s; SQLite must see only the new half), next+finished cycles with
# every URI due and politeness off (cycles/s), bytes per URI on disk, peak
# RSS; then a cycles run killed with SIGKILL after a few seconds and the
# start-up that follows (open with every host queue rebuilt, first URI
# issued, seen filter complete), also with PRAGMA quick_check. Writes
# bench/out/frontier/last/report.md; with --record, the `## frontier`
# section of bench/RESULTS.md.
#
# Usage: bench/frontier/run.sh [--sizes "1000000 10000000"] [--hosts H]
#            [--seconds S] [--build-limit S] [--record] [--quick]
#            [--bench-args "ARGS"]
#   --bench-args  more frontier_bench options for every mode, e.g.
#                 "--plain-vfs 1" (SQLite's own WAL writes, for a
#                 side-by-side) or "--page-size 1024"
# Environment: KB_FRONTIER_BUILD (build tree, default build-frontier).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
SIZES="1000000 10000000"
HOSTS=10000
CYCLE_S=60
BUILD_LIMIT=420 # seconds of building per size; 10M may not fit (said so)
RECORD=0
BENCH_ARGS=()
BUILD=${KB_FRONTIER_BUILD:-build-frontier}

while [ $# -gt 0 ]; do
	case $1 in
	--sizes) SIZES=$2; shift 2 ;;
	--hosts) HOSTS=$2; shift 2 ;;
	--seconds) CYCLE_S=$2; shift 2 ;;
	--build-limit) BUILD_LIMIT=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--bench-args) read -r -a BENCH_ARGS <<<"$2"; shift 2 ;;
	--quick) SIZES=200000; CYCLE_S=10; shift ;;
	-h | --help) sed -n '2,23p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
for n in $SIZES; do [[ $n =~ ^[0-9]+$ && $n -ge 1000 && $n -le 20000000 ]] || kb_die "--sizes: 1000..20000000"; done
[[ $HOSTS =~ ^[0-9]+$ && $HOSTS -ge 1 && $HOSTS -le 1000000 ]] || kb_die "--hosts: 1..1000000"
[[ $CYCLE_S =~ ^[0-9]+$ && $CYCLE_S -ge 1 && $CYCLE_S -le 600 ]] || kb_die "--seconds: 1..600"

kb_bound 3600 "${ARGS[@]}"

kb_log "building the benchmark ($BUILD)"
make -s -C "$KB_ROOT" BUILD="$BUILD" bench-frontier >/dev/null || kb_die "build failed"
BIN=$KB_ROOT/$BUILD/bench/frontier_bench
OUT=$KB_OUT/frontier
RUN=$OUT/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# run TAG LIMIT ARGS...: one mode, key/value lines into $RUN/$N.TAG.txt
run() {
	local tag=$1 limit=$2; shift 2
	kb_log "n=$N $tag"
	timeout --kill-after=10 "$limit" "$BIN" --dir "$D" --hosts "$HOSTS" "${BENCH_ARGS[@]}" "$@" \
		>"$RUN/$N.$tag.txt" 2>"$RUN/$N.$tag.log" || kb_log "  $tag exited $? (see $RUN/$N.$tag.log)"
}

for N in $SIZES; do
	D=$OUT/n$N
	rm -rf "$D"
	mkdir -p "$D"
	run build $((BUILD_LIMIT + 120)) --mode build --uris "$N" --build-seconds "$BUILD_LIMIT"
	LINKS=$((N < 1000000 ? N : 1000000))
	run dedupe 300 --mode dedupe --links "$LINKS"
	run cycles $((CYCLE_S + 120)) --mode cycles --seconds "$CYCLE_S"
	# links as a crawl sees them: most point to pages already known (nav)
	run dedupe90 300 --mode dedupe --links "$LINKS" --dup-pct 90
	sed -i 's/^dedupe_/dedupe90_/' "$RUN/$N.dedupe90.txt"
	# kill -9 in the middle of a cycles run, then start again
	kb_log "n=$N cycles, killed with SIGKILL after 8 s"
	"$BIN" --dir "$D" --hosts "$HOSTS" "${BENCH_ARGS[@]}" --mode cycles --seconds 300 >"$RUN/$N.killed.txt" 2>&1 &
	pid=$!
	sleep 8
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	run startup 120 --mode startup
	run startup-qc 300 --mode startup-qc
	du -sb "$D" | awk '{ print "dir_bytes", $1 }' >"$RUN/$N.du.txt"
	ls -l "$D" >>"$RUN/$N.du.txt"
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ------------------------------------------------------------------
val() { # val N KEY -> value or "-"
	local v
	v=$(cat "$RUN/$1".*.txt 2>/dev/null | awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }')
	echo "${v:--}"
}
num() { awk -v x="$1" 'BEGIN { if (x == "-") print "-"; else printf "%\047.0f\n", x }'; }

REPORT=$RUN/report.md
{
	echo "### Frontier benchmark"
	echo
	kb_machine_md
	echo "- load average at start / end: $LOAD_START / $LOAD_END (the machine is shared: wall-clock rates move with it; CPU-µs per operation much less)"
	echo "- command: \`bench/frontier/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	[ ${#BENCH_ARGS[@]} -gt 0 ] && echo "- frontier_bench options: \`${BENCH_ARGS[*]}\`"
	echo "- $HOSTS hosts; links come in pages of 30, 24 on the page's host and 6 on random hosts; politeness off; SQLite $(sqlite3 --version | cut -d' ' -f1), page size 4096, WAL drains past 256 MiB, page cache 64 MiB, WAL writes gathered per transaction (src/store/store_vfs.c) unless the options say \`--plain-vfs 1\`"
	echo
	printf '| measure | target |'
	for N in $SIZES; do printf ' %s URIs |' "$(num "$N")"; done
	echo
	printf '|---|---|'
	for N in $SIZES; do printf -- '---:|'; done
	echo
	row() { # label target key [fmt]
		printf '| %s | %s |' "$1" "$2"
		for N in $SIZES; do printf ' %s |' "$(val "$N" "$3")"; done
		echo
	}
	row "URIs built (of the target)" "" build_added
	row "new-URI inserts/s" "≥ 50,000" build_inserts_per_s
	row "  CPU-µs per insert (both threads; the target's one-core budget)" "≤ 20" build_cpu_us_per_insert
	row "links/s, ~50% duplicates" "≥ 200,000" dedupe_links_per_s
	row "  CPU-µs per link (budget)" "≤ 5" dedupe_cpu_us_per_link
	row "  duplicates that reached SQLite" "none" dedupe_sqlite_saw_duplicates
	row "links/s, 90% duplicates (as in a crawl: nav links)" "≥ 200,000" dedupe90_links_per_s
	row "  CPU-µs per link (budget)" "≤ 5" dedupe90_cpu_us_per_link
	row "  duplicates that reached SQLite" "none" dedupe90_sqlite_saw_duplicates
	row "next+finished cycles/s" "≥ 30,000 (1M), ≥ 20,000 (10M)" cycles_per_s
	row "  wall time waiting for WAL drains, s (cycles)" "" cycles_drain_wait_seconds
	row "  CPU-µs per cycle (both threads; budget)" "≤ 33 / 50" cycles_cpu_us_per_cycle
	row "bytes per URI on disk (database, after cycles)" "≤ 250" cycles_bytes_per_uri
	row "bytes per URI on disk (database, fresh rows)" "≤ 250" build_bytes_per_uri
	row "peak RSS MiB: build" "≤ 256" build_peak_rss_mib
	row "peak RSS MiB: dedupe" "≤ 256" dedupe_peak_rss_mib
	row "peak RSS MiB: cycles" "≤ 256" cycles_peak_rss_mib
	row "start-up after kill -9: open, s" "≤ 2 (1M)" startup_open_seconds
	row "  first URI issued, s" "" startup_first_uri_seconds
	row "  seen filter complete, s (loads while crawling)" "" startup_seen_complete_seconds
	row "  background quick_check done, s" "" startup_background_check_seconds
	row "  open with a blocking quick_check instead, s" "" startup_qc_open_seconds
	row "slowest COMMIT, ms (cycles)" "" cycles_commit_ms_max
	row "WAL drains (broken) / longest, ms (cycles)" "" cycles_drains
	row "  longest drain, ms" "" cycles_drain_ms_max
	row "largest WAL, MiB (cycles)" "" cycles_wal_mib_max
	echo
	echo "Raw key/value files: \`${RUN#"$KB_ROOT"/}/\`."
} >"$REPORT"
ln -sfn "$RUN" "$OUT/last"
cat "$REPORT"

if [ "$RECORD" = 1 ]; then
	RESULTS=$KB_ROOT/bench/RESULTS.md
	# Re-read right before editing: another script owns other sections.
	python3 - "$RESULTS" "$REPORT" <<'EOF'
import sys
path, rep = sys.argv[1], sys.argv[2]
text = open(path).read()
body = open(rep).read().rstrip("\n")
begin, end = "<!-- frontier:begin (written by bench/frontier/run.sh --record) -->", "<!-- frontier:end -->"
block = begin + "\n" + body + "\n" + end
if begin in text and end in text:
    a = text.index(begin)
    b = text.index(end) + len(end)
    text = text[:a] + block + text[b:]
else:
    if "## frontier" not in text:
        text = text.rstrip("\n") + "\n\n## frontier\n\n"
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(path, "w").write(text)
EOF
	kb_log "recorded in bench/RESULTS.md"
fi
