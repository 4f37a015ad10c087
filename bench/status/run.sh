#!/usr/bin/env bash
# bench/status/run.sh — the status server's cost to crawl throughput when
# scraped every second (issue 5: ≤ 1 %). A/B in one run: a crawl of a kts
# site (no politeness delay, 8 fetches at once, WARC off so the crawl is
# as cheap as it gets and the server's share as large as it gets) for
# --seconds each, pinned to CPU 0 (kts and the scraper on CPU 1), in three
# settings per round, rounds interleaved so drifting load spreads evenly:
#   A   no [status] section;
#   B   [status] listen = 127.0.0.1:0 and a scraper fetching /metrics and
#       /status once a second for the whole run;
#   A'  A again: A vs A' is the run-to-run noise.
# Per setting: median pages/s (crawl.log lines / wall time) and CPU-µs per
# page (user+sys from bench/lib/measure), and from B's last scrape the
# server's own loop time (kria_status_busy_seconds_total) per second.
#
# Usage: bench/status/run.sh [--seconds S] [--reps R] [--build DIR] [--record]
# (DIR holds kria and kts; default build). --record puts the report into
# bench/RESULTS.md between the status markers.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
SECS=10
REPS=3
BUILD=build
RECORD=0
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 3 && $SECS -le 600 ]] || kb_die "--seconds: 3..600"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 99 ]] || kb_die "--reps: 1..99"
kb_bound $((REPS * 3 * (SECS + 30) + 120)) "${ARGS[@]}"

KRIA=$KB_ROOT/$BUILD/kria
KTS=$KB_ROOT/$BUILD/kts
[ -x "$KRIA" ] && [ -x "$KTS" ] || kb_die "build $BUILD first (make BUILD=$BUILD)"
command -v curl >/dev/null || kb_die "curl is needed"
kb_build_tools
OUT=$KB_OUT/status
RUN=$OUT/$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RUN"
W=$(mktemp -d "${TMPDIR:-/tmp}/kria-statusbench.XXXXXX")
kb_on_exit "rm -rf '$W'"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

cat >"$W/site.ini" <<EOF
[route "/robots.txt"]
status = 404

[site]
pages = 1000000
links = 4
body-size = 4K
EOF
mkfifo "$W/kts.fifo"
taskset -c 1 "$KTS" -c "$W/site.ini" >"$W/kts.fifo" 2>"$W/kts.err" &
KTS_PID=$!
kb_on_exit "kill $KTS_PID 2>/dev/null || true"
read -r -t 10 line <"$W/kts.fifo" || kb_die "kts did not start"
PORT=${line##*:}
echo "http://127.0.0.1:$PORT/p/0" >"$W/seeds.txt"
conf() { # FILE [extra lines]
	local f=$1; shift
	{
		echo "[http]"
		echo "allow-private-addresses = true"
		echo "[crawl]"
		echo "seeds = $W/seeds.txt"
		echo "state-dir = $W/st"
		echo "revisit = false"
		echo "log-level = warn"
		echo "[limits]"
		echo "max-time = ${SECS}s"
		echo "[politeness]"
		echo "min-delay = 0"
		echo "max-delay = 0"
		echo "delay-factor = 0"
		echo "host-valence = 8"
		echo "[warc]"
		echo "enabled = false"
		local l
		for l in "$@"; do echo "$l"; done
	} >"$f"
}
conf "$W/a.conf"
conf "$W/b.conf" "[status]" "listen = 127.0.0.1:0"

# scrape DIR: /metrics and /status once a second until kria removes
# status.addr (it does at exit); the last answers stay in DIR.
scrape() {
	local d=$1 addr="" i
	for ((i = 0; i < 200; i++)); do
		[ -s "$W/st/status.addr" ] && addr=$(cat "$W/st/status.addr") && break
		sleep 0.05
	done
	[ -n "$addr" ] || return 0
	while [ -e "$W/st/status.addr" ]; do
		curl -s -m 2 "http://$addr/metrics" >"$d/metrics.new" && mv "$d/metrics.new" "$d/metrics"
		curl -s -m 2 "http://$addr/status" >"$d/status.new" && mv "$d/status.new" "$d/status.json"
		echo x >>"$d/scrapes"
		sleep 1
	done
}

NAMES=("A: no status server" "B: status server, scraped every second" "A': no status server (again)")
: >"$RUN/runs.tsv"
for r in $(seq "$REPS"); do
	for i in 0 1 2; do
		rm -rf "$W/st" "$W/scr"
		mkdir -p "$W/scr"
		cfg=$W/a.conf
		spid=
		if [ "$i" = 1 ]; then
			cfg=$W/b.conf
			taskset -c 1 bash -c "$(declare -f scrape); W='$W'; scrape '$W/scr'" &
			spid=$!
		fi
		kb_measure "$W/m" $((SECS + 60)) taskset -c 0 "$KRIA" crawl -c "$cfg" 2>>"$W/kria.err" ||
			kb_die "crawl failed: $(tail -3 "$W/kria.err")"
		[ -n "$spid" ] && wait "$spid"
		read -r wall user sys rss rc <"$W/m"
		n=$(wc -l <"$W/st/logs/crawl.log")
		busy=0 scrapes=0
		if [ "$i" = 1 ]; then
			busy=$(awk '$1 == "kria_status_busy_seconds_total" {print $2}' "$W/scr/metrics" 2>/dev/null || echo 0)
			scrapes=$(wc -l <"$W/scr/scrapes" 2>/dev/null || echo 0)
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$r" "$wall" "$user" "$sys" "$n" "${busy:-0}" "$scrapes" >>"$RUN/runs.tsv"
	done
	kb_log "round $r of $REPS done"
done

med() { # SETTING COLUMN-EXPR
	awk -F'\t' -v i="$1" "\$1 == i {print $2}" "$RUN/runs.tsv" | kb_stats | cut -d' ' -f1
}
pps_a=$(med 0 '$6 / $3'); pps_b=$(med 1 '$6 / $3'); pps_a2=$(med 2 '$6 / $3')
cpu_a=$(med 0 '($4 + $5) / $6 * 1e6'); cpu_b=$(med 1 '($4 + $5) / $6 * 1e6'); cpu_a2=$(med 2 '($4 + $5) / $6 * 1e6')
busy_ps=$(med 1 '$7 / $3 * 1e6')
scr=$(med 1 '$8')
pct() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%+.2f %%", (x - y) / y * 100 }'; }
{
	echo "### Status server cost, ${SECS} s crawls, $REPS rounds of A / B / A'"
	echo
	kb_machine_md | grep -v '^- load average'
	echo "- load average at start: $LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- command: \`bench/status/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- kria on CPU 0; kts (1,000,000-page site, 4 KiB pages) and the scraper on CPU 1; WARC off, 8 fetches at once"
	echo
	echo "| setting | pages/s (median) | CPU µs/page (median) |"
	echo "|---|---:|---:|"
	printf '| %s | %.0f | %.1f |\n' "${NAMES[0]}" "$pps_a" "$cpu_a"
	printf '| %s | %.0f | %.1f |\n' "${NAMES[1]}" "$pps_b" "$cpu_b"
	printf '| %s | %.0f | %.1f |\n' "${NAMES[2]}" "$pps_a2" "$cpu_a2"
	echo
	A=$(awk -v x="$pps_a" -v y="$pps_a2" 'BEGIN { print (x + y) / 2 }')
	C=$(awk -v x="$cpu_a" -v y="$cpu_a2" 'BEGIN { print (x + y) / 2 }')
	echo "B against the mean of A and A': pages/s $(pct "$pps_b" "$A"), CPU µs/page $(pct "$cpu_b" "$C");"
	echo "A' against A (the noise): pages/s $(pct "$pps_a2" "$pps_a"), CPU µs/page $(pct "$cpu_a2" "$cpu_a")."
	echo "The server's own loop time while scraped (kria_status_busy_seconds_total at the last"
	printf 'scrape, ~%s scrapes of /metrics + /status per run): %.0f µs per second of crawl = %.3f %% of the loop.\n' \
		"$scr" "$busy_ps" "$(awk -v b="$busy_ps" 'BEGIN { print b / 1e4 }')"
	echo
	echo "Raw runs: \`${RUN#"$KB_ROOT"/}/runs.tsv\` (setting, round, wall s, user s, sys s, pages, busy s, scrapes)."
} >"$RUN/report.md"
ln -sfn "$(basename "$RUN")" "$OUT/last"
cat "$RUN/report.md"

[ "$RECORD" = 1 ] && kb_record status "$RUN/report.md"
exit 0
