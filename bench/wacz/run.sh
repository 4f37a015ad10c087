#!/usr/bin/env bash
# bench/wacz/run.sh — what `kria wacz` costs for a large crawl, and a large
# WACZ to open in ReplayWeb.page.
#
# Synthesises one WARC file of N captures (test/integration/waczgen.mjs:
# a request and a response record per capture, a quarter of them HTML
# pages with titles, plain / gzip / chunked; reused while N and the
# generator are the same),
# runs `kria wacz` on it R times under bench/lib/measure (wall, CPU, peak
# RSS), checks the package once with test/integration/waczcheck.mjs
# (py-wacz's validate checks, the index.idx / index.cdx.gz blocks, every
# recordDigest) and reports the median. The last package stays at OUT
# (default bench/out/wacz/captures-N.wacz), whose path is the last line
# on standard output, for a replay test to open:
#
#   wacz=$(bench/wacz/run.sh --captures 50000 --reps 1 | tail -1)
#
# The WACZ's first page is http://gen.test/p/0 ("Page 0" ... titled pages
# http://gen.test/p/K for K < N/4; /p/3 has no title).
#
# Usage: bench/wacz/run.sh [--captures N] [--reps R] [--out OUT.wacz]
#        [--kria PATH] [--record]
# --record puts the report into bench/RESULTS.md between the wacz markers.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
CAPTURES=50000
REPS=3
OUTW=
KRIA_BIN=${KRIA:-$KB_ROOT/build/kria}
RECORD=0
while [ $# -gt 0 ]; do
	case $1 in
	--captures) CAPTURES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--out) OUTW=$2; shift 2 ;;
	--kria) KRIA_BIN=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	-h | --help) sed -n '2,22p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $CAPTURES =~ ^[0-9]+$ && $CAPTURES -ge 1 && $CAPTURES -le 2000000 ]] || kb_die "--captures: 1..2000000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 20 ]] || kb_die "--reps: 1..20"
[ -x "$KRIA_BIN" ] || kb_die "$KRIA_BIN is not built (make)"
command -v node >/dev/null || kb_die "node not installed (make deps)"

kb_bound 1800 "${ARGS[@]}"
kb_build_tools
OUT=$KB_OUT/wacz
mkdir -p "$OUT"
[ -n "$OUTW" ] || OUTW=$OUT/captures-$CAPTURES.wacz
WARCS=$OUT/warc-$CAPTURES
if [ ! -s "$WARCS/gen-0.warc.gz" ] || [ "$KB_ROOT/test/integration/waczgen.mjs" -nt "$WARCS/gen-0.warc.gz" ]; then
	kb_log "synthesising $CAPTURES captures in $WARCS"
	rm -rf "$WARCS"
	node "$KB_ROOT/test/integration/waczgen.mjs" "$WARCS" "$CAPTURES" >/dev/null || kb_die "waczgen.mjs failed"
fi
warc_bytes=$(stat -c %s "$WARCS/gen-0.warc.gz")

for r in $(seq 1 "$REPS"); do
	kb_log "kria wacz, run $r of $REPS"
	rm -f "$OUTW"
	kb_measure "$OUT/m.$r" 600 "$KRIA_BIN" wacz "$OUTW" "$WARCS/gen-0.warc.gz" 2>"$OUT/wacz.err" ||
		kb_die "kria wacz failed: $(tail -3 "$OUT/wacz.err")"
done
sum=$(node "$KB_ROOT/test/integration/waczcheck.mjs" "$OUTW") || kb_die "waczcheck.mjs: $(head -5 <<<"$sum")"
sum=$(tail -1 <<<"$sum")
field() { node -e 'console.log(JSON.parse(process.argv[1])[process.argv[2]])' "$sum" "$1"; }
med() { for r in $(seq 1 "$REPS"); do awk -v c="$1" '{ print $c }' "$OUT/m.$r"; done | kb_stats; }
read -r wall wmin wmax <<<"$(med 1)"
read -r user _ _ <<<"$(med 2)"
read -r sys _ _ <<<"$(med 3)"
read -r rss _ _ <<<"$(med 4)"

REP=$OUT/report.md
{
	echo "Command: \`bench/wacz/run.sh --captures $CAPTURES --reps $REPS\`"
	echo "(\`kria wacz OUT.wacz gen-0.warc.gz\`, one synthetic WARC of $CAPTURES captures,"
	echo "$((warc_bytes / 1048576)) MiB; medians of $REPS runs)"
	echo
	kb_machine_md
	echo
	echo "| captures | index | blocks | pages (titled) | wall s (min-max) | user s | sys s | peak RSS MiB | WACZ MiB |"
	echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
	printf '| %d | %s | %s | %s (%s) | %.2f (%.2f-%.2f) | %.2f | %.2f | %.1f | %.1f |\n' "$CAPTURES" \
		"$(field index)" "$(field blocks)" "$(field pages)" "$(field titles)" "$wall" "$wmin" "$wmax" \
		"$user" "$sys" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
		"$(awk -v b="$(stat -c %s "$OUTW")" 'BEGIN { print b / 1048576 }')"
	echo
	echo "waczcheck.mjs passed: $(field lines) index lines, every recordDigest and block digest verified."
} >"$REP"
cat "$REP" >&2
[ "$RECORD" = 1 ] && kb_record wacz "$REP"
echo "$OUTW"
