#!/usr/bin/env bash
# bench/fetch/profile.sh — where does a client spend its CPU on the fetch
# benchmark's setup (same site, same nginx, client pinned to CPU 0)?
#
# Usage: bench/fetch/profile.sh [--pages N] [--kria PATH] [--callgrind]
#            [--tls rsa|ecdsa] CLIENT
#   CLIENT: kria, kria-cN, wget, wget2-t1, wget2 (as in run.sh); with --tls
#   also kria-https, kria-https-cN, wget-https, wget2-https, wget2-t1-https
#
# perf record -e cpu-clock --call-graph dwarf (KB_PERF_CALLGRAPH=fp for
# frame pointers; software clock: these VMs expose no hardware
# counters), then the top of perf report, flat and by caller. With
# --callgrind, or when perf cannot record, valgrind --tool=callgrind on the
# list (use a small --pages: callgrind is ~50x slower). Output in
# bench/out/fetch/profile-<client>/.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
. "$HERE/../lib/nginx.sh"
. "$HERE/../lib/tls.sh"
. "$HERE/setup.sh"

ARGS=("$@")
PAGES=20000
KRIA=${KRIA:-$KB_ROOT/build-bench/kria}
TOOL=perf
while [ $# -gt 1 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--kria) KRIA=$2; shift 2 ;;
	--callgrind) TOOL=callgrind; shift ;;
	--tls) FETCH_TLS=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { sed -n '2,12p' "$0"; exit 2; }
CLIENT=$1
kb_bound "${KB_TOTAL_LIMIT:-1800}" "${ARGS[@]}"

if [ $TOOL = perf ] && ! perf record -q -e cpu-clock -o /dev/null true >/dev/null 2>&1; then
	kb_log "perf cannot record here; using callgrind"
	TOOL=callgrind
fi
OUT=$KB_OUT/fetch/profile-$CLIENT
rm -rf "$OUT"
mkdir -p "$OUT"
fetch_setup "$PAGES" "$OUT"
client_cmd "$CLIENT"

if [ $TOOL = perf ]; then
	kb_log "perf record: ${CMD[*]}"
	kb_measure "$OUT/measure.txt" 600 perf record -q -F 9999 -e cpu-clock --call-graph "${KB_PERF_CALLGRAPH:-dwarf,16384}" -o "$OUT/perf.data" -- \
		taskset -c "${KB_CLIENT_CPU:-0}" "${CMD[@]}" >"$OUT/client.log" 2>&1 ||
		kb_log "warning: client exited non-zero (see $OUT/client.log)"
	kb_nginx_stop
	perf report -i "$OUT/perf.data" --no-children --stdio -g none --sort dso,symbol 2>/dev/null |
		grep -v '^$' >"$OUT/flat.txt" || true
	perf report -i "$OUT/perf.data" --no-children --stdio --sort symbol -g caller,0.5,callee --percent-limit 2 \
		2>/dev/null >"$OUT/callers.txt" || true
	perf report -i "$OUT/perf.data" --no-children --stdio -g none --sort dso 2>/dev/null |
		grep -E '^ +[0-9]' >"$OUT/dso.txt" || true
	echo "== $CLIENT: $(awk -v n="$(wc -l <"$LIST")" '{ printf "%.2f s wall, %.0f CPU-µs/page (under perf)", $1, ($2 + $3) * 1e6 / n }' "$OUT/measure.txt")"
	echo "== self time by object"
	head -12 "$OUT/dso.txt"
	echo "== top symbols (self time); full reports in $OUT/"
	grep -E '^ +[0-9]' "$OUT/flat.txt" | head -40
else
	kb_log "callgrind: ${CMD[*]}"
	kb_measure "$OUT/measure.txt" 1200 valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
		"${CMD[@]}" >"$OUT/client.log" 2>&1 || kb_log "warning: client exited non-zero (see $OUT/client.log)"
	kb_nginx_stop
	callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | head -60 | tee "$OUT/flat.txt"
fi
