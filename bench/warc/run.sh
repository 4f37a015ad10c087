#!/usr/bin/env bash
# bench/warc/run.sh — what a WARC response record of a ≈10 KB page costs
# to write, per gzip level, with zlib and with libdeflate.
#
# Builds bench/warc/bench_warc.c with kria's WARC sources (no full kria
# build needed), generates a deterministic site of N realistic pages
# (bench/lib/sitegen.c), and runs the bench pinned to one CPU: raw
# compressors on whole records, kr_warc_write end to end (SHA-1, header,
# staging copy, compression), and kr_warcfile_write to a real file. Each
# figure is the median over R repetitions of N records in thread CPU time.
# The report goes to bench/out/warc/last/report.md; --record also puts it
# into bench/RESULTS.md between the warc markers.
#
# Usage: bench/warc/run.sh [--pages N] [--reps R] [--cpu C] [--record]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
PAGES=1000
REPS=5
CPU=${KB_CLIENT_CPU:-0}
RECORD=0
while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--cpu) CPU=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $PAGES =~ ^[0-9]+$ && $PAGES -ge 10 && $PAGES -le 100000 ]] || kb_die "--pages: 10..100000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 99 ]] || kb_die "--reps: 1..99"

kb_bound 900 "${ARGS[@]}"
command -v taskset >/dev/null || kb_die "taskset not found; run make deps"

kb_build_tools
OUT=$KB_OUT/warc
mkdir -p "$OUT" "$KB_BIN"
BIN=$KB_BIN/bench_warc
SRCS=(src/core/warc.c src/archive/warcfile.c src/core/digest.c src/core/buf.c src/core/mem.c src/core/error.c src/base/log.c src/base/clock.c)
rebuild=0
[ -x "$BIN" ] || rebuild=1
for s in "$HERE/bench_warc.c" "${SRCS[@]/#/$KB_ROOT/}" "$KB_ROOT"/include/kria/*.h "$KB_ROOT"/src/archive/warcfile.h; do
	[ "$s" -nt "$BIN" ] && rebuild=1
done
if [ "$rebuild" = 1 ]; then
	kb_log "building bench_warc"
	# shellcheck disable=SC2046
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$KB_ROOT/include" -I"$KB_ROOT/src/base" -I"$KB_ROOT/src/archive" \
		-o "$BIN" "$HERE/bench_warc.c" "${SRCS[@]/#/$KB_ROOT/}" \
		$(pkg-config --cflags --libs zlib libdeflate libisal openssl) || kb_die "cannot build bench_warc"
fi

SITE=$KB_OUT/site-warc-p$PAGES
kb_site "$SITE" -H 1 -p "$PAGES"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$OUT/run-$stamp
mkdir -p "$RUN/tmp"
kb_on_exit "rm -rf '$RUN/tmp'"
kb_log "measuring ($PAGES pages x $REPS repetitions, CPU $CPU)"
taskset -c "$CPU" "$BIN" -d "$SITE" -n "$PAGES" -r "$REPS" -t "$RUN/results.tsv" \
	-w "$RUN/tmp" >"$RUN/table.md" 2>"$RUN/log.txt" || { cat "$RUN/log.txt" >&2; kb_die "bench_warc failed"; }

# Figures the summary quotes.
get() { awk -F'\t' -v w="$1" -v l="$2" '$1 == w && $2 == l { print $3 }' "$RUN/results.tsv"; }
pct() { awk -F'\t' -v w="$1" -v l="$2" '$1 == w && $2 == l { print $5 }' "$RUN/results.tsv"; }
plain=$(get "writer: plain" 0)
ld1=$(get "writer: libdeflate" 1)
ld6=$(get "writer: libdeflate" 6)
z1=$(get "writer: zlib" 1)
z6=$(get "writer: zlib" 6)
pg0=$(get "page: 3 records, plain" 0)
pg1=$(get "page: 3 records, libdeflate" 1)
pg6=$(get "page: 3 records, libdeflate" 6)
pz1=$(get "page: 3 records, zlib" 1)
pz6=$(get "page: 3 records, zlib" 6)
# Share of DESIGN.md's per-page CPU budget: 100 µs without compression
# (10,000 pages/s), 200 µs with gzip WARC (5,000 pages/s).
share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f %%", 100 * a / b }'; }

{
	echo "### WARC writing cost, $PAGES pages, $REPS repetitions"
	echo
	kb_machine_md
	echo "- command: \`bench/warc/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- $(head -1 "$RUN/log.txt" | sed 's/^bench_warc: //')"
	echo "- zlib $(pkg-config --modversion zlib), libdeflate $(pkg-config --modversion libdeflate); pinned to CPU $CPU; thread CPU time, median of $REPS"
	echo
	cat "$RUN/table.md"
	echo
	echo "Per response record of a 10 KB page, end to end (\`kr_warc_write\`):"
	echo "plain $plain µs; libdeflate level 1 $ld1 µs ($(pct "writer: libdeflate" 1) %),"
	echo "level 6 $ld6 µs ($(pct "writer: libdeflate" 6) %); zlib level 1 $z1 µs"
	echo "($(pct "writer: zlib" 1) %), level 6 $z6 µs ($(pct "writer: zlib" 6) %)."
	echo
	echo "Per crawled page (response + request + metadata records, \`page:\` rows), as a"
	echo "share of DESIGN.md's CPU budget per page (100 µs without compression, 200 µs"
	echo "with gzip WARC): plain $pg0 µs ($(share "$pg0" 100)); libdeflate level 1 $pg1 µs"
	echo "($(share "$pg1" 200)), level 6 $pg6 µs ($(share "$pg6" 200)); zlib level 1 $pz1 µs"
	echo "($(share "$pz1" 200)), level 6 $pz6 µs ($(share "$pz6" 200))."
	echo
	echo "Raw runs: \`${RUN#"$KB_ROOT"/}/results.tsv\`."
} >"$RUN/report.md"
ln -sfn "$(basename "$RUN")" "$OUT/last"
cat "$RUN/report.md"

if [ "$RECORD" = 1 ]; then
	res=$KB_ROOT/bench/RESULTS.md
	grep -q '<!-- warc:begin' "$res" || kb_die "no warc markers in $res"
	tmp=$(mktemp)
	awk -v rep="$RUN/report.md" '
		/<!-- warc:begin/ { print; while ((getline l < rep) > 0) print l; skip = 1; next }
		/<!-- warc:end/ { skip = 0 }
		!skip { print }' "$res" >"$tmp"
	cat "$tmp" >"$res"
	rm -f "$tmp"
	kb_log "recorded in bench/RESULTS.md"
fi
