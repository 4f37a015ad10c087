#!/usr/bin/env bash
# bench/warc/sync_lag.sh — where the WARC fdatasync of durability batch
# runs, and what it costs the event loop. A snapshot crawl of a kts site
# (N pages of 10 KiB, 3 links each, robots.txt 404) with gzip WARC and
# durability batch (the defaults), kria pinned to CPU 0 and kts to CPU 1,
# kria under strace (-f --seccomp-bpf -T -e trace=fdatasync: only that
# call is stopped on): fdatasync calls and their seconds on the loop
# thread (the process's first thread) and on other threads, the longest
# on the loop thread; wall time; the worst 2-second window's loop lag p99
# and max (kria's progress lines, ms). One crawl per build given, in order,
# repeated R times (interleaved).
#
# Usage: bench/warc/sync_lag.sh [--pages N] [--reps R] KRIA [KRIA...]
#   e.g. bench/warc/sync_lag.sh --pages 20000 build-before/kria build/kria
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
PAGES=20000
REPS=1
while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) kb_die "unknown option $1 (try --help)" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || kb_die "which kria builds? (try --help)"
[[ $PAGES =~ ^[0-9]+$ && $PAGES -ge 100 && $PAGES -le 200000 ]] || kb_die "--pages: 100..200000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 9 ]] || kb_die "--reps: 1..9"
KTS=${KTS:-$KB_ROOT/build/kts}
[ -x "$KTS" ] || kb_die "no kts at $KTS (make all)"
command -v strace >/dev/null || kb_die "strace not found"
kb_bound 1800 "${ARGS[@]}"

OUT=$KB_OUT/warc-sync
RUN=$OUT/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"
cat >"$RUN/site.ini" <<EOT
[route "/robots.txt"]
status = 404

[site]
pages = $PAGES
links = 3
body-size = 10K
EOT
fifo=$RUN/kts.fifo
mkfifo "$fifo"
taskset -c 1 "$KTS" -c "$RUN/site.ini" >"$fifo" 2>"$RUN/kts.err" &
KTS_PID=$!
kb_on_exit "kill $KTS_PID 2>/dev/null; wait $KTS_PID 2>/dev/null"
read -r -t 10 line <"$fifo" || kb_die "kts did not start"
rm -f "$fifo"
URL="http://${line#listening }"
echo "$URL/p/0" >"$RUN/seeds.txt"

printf 'build\trep\twall_s\tloop_syncs\tloop_sync_s\tloop_sync_max_ms\tother_syncs\tother_sync_s\tlag_p99\tlag_max\n' >"$RUN/results.tsv"
for rep in $(seq "$REPS"); do
	i=0
	for k in "$@"; do
		i=$((i + 1))
		d=$RUN/r$rep-b$i
		mkdir -p "$d"
		cat >"$d/kria.conf" <<EOT
[http]
allow-private-addresses = true
[crawl]
seeds = $RUN/seeds.txt
state-dir = $d/state
revisit = false
progress-interval = 2s
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
EOT
		kb_log "crawl $rep/$REPS: $k ($PAGES pages)"
		t0=$(date +%s.%N)
		taskset -c 0 strace -f --seccomp-bpf -T -e trace=fdatasync -o "$d/strace.txt" \
			"$k" crawl -c "$d/kria.conf" 2>"$d/kria.err" || kb_die "kria failed: $(tail -2 "$d/kria.err")"
		t1=$(date +%s.%N)
		# the worst 2-second window's loop lag p99 and max (progress lines)
		lag=$(grep -o 'loop lag p99 [^;]*' "$d/kria.err" | awk '
			function ms(v) { if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v + 0 }
			{ if (ms($4) > p) p = ms($4); if (ms($6) > m) m = ms($6) }
			END { printf "%d %d", p, m }' || true)
		awk -v b="$k" -v r="$rep" -v w="$(echo "$t1 - $t0" | bc)" -v lag="$lag" '
			/fdatasync\(/ {
				if (!main) main = $1
				t = $NF; gsub(/[<>]/, "", t)
				if ($1 == main) { n1++; s1 += t; if (t > m1) m1 = t } else { n2++; s2 += t }
			}
			END {
				split(lag, a, " ")
				printf "%s\t%s\t%.2f\t%d\t%.3f\t%.1f\t%d\t%.3f\t%s\t%s\n", b, r, w, n1, s1, m1 * 1000, n2, s2, a[1], a[2]
			}' "$d/strace.txt" >>"$RUN/results.tsv"
	done
done
ln -sfn "$(basename "$RUN")" "$OUT/last"
{
	echo "### Where the WARC fdatasync runs (durability batch), $PAGES pages, $REPS repetition(s)"
	echo
	kb_machine_md
	echo "- command: \`bench/warc/sync_lag.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- kts (CPU 1) site: $PAGES pages of 10 KiB, 3 links each; kria snapshot crawl on CPU 0, politeness off, gzip WARC, durability batch, under strace -f --seccomp-bpf -e trace=fdatasync"
	echo
	echo "| build | rep | wall s | fdatasync on the loop thread | their s | longest ms | fdatasync on other threads | their s | worst 2 s window: loop lag p99 ms | max ms |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	tail -n +2 "$RUN/results.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
} >"$RUN/report.md"
cat "$RUN/report.md"
