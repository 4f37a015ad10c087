#!/usr/bin/env bash
# bench/warc/repair.sh — the start-up repair of a ".open" gzip WARC file
# left by a kill -9: the whole file read (durability none, or no synced
# offset in the store) against only what follows the synced offset
# (durability batch or record: the offset the last commit recorded).
#
# Builds bench/warc/bench_repair.c with kria's WARC sources, writes one
# gzip WARC of SIZE MiB (response records of a sitegen site's pages),
# syncs it, appends TAIL records and a torn one, and times
# kr_warcfile_repair_from both ways, warm (the file in the page cache: a
# kill -9) and cold (its pages dropped: a reboot), median of R.
# The report goes to bench/out/warc-repair/last/report.md.
#
# Usage: bench/warc/repair.sh [--size MIB] [--tail N] [--reps R] [--cpu C]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
SIZE=1024
TAIL=200
REPS=5
CPU=${KB_CLIENT_CPU:-0}
while [ $# -gt 0 ]; do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--tail) TAIL=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--cpu) CPU=$2; shift 2 ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $SIZE =~ ^[0-9]+$ && $SIZE -ge 1 && $SIZE -le 4096 ]] || kb_die "--size: 1..4096 MiB"
[[ $TAIL =~ ^[0-9]+$ && $TAIL -le 100000 ]] || kb_die "--tail: 0..100000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 99 ]] || kb_die "--reps: 1..99"

kb_bound 1800 "${ARGS[@]}"
command -v taskset >/dev/null || kb_die "taskset not found; run make deps"

kb_build_tools
OUT=$KB_OUT/warc-repair
mkdir -p "$OUT" "$KB_BIN"
BIN=$KB_BIN/bench_repair
SRCS=(src/core/warc.c src/archive/warcfile.c src/core/digest.c src/core/buf.c src/core/mem.c src/core/error.c src/base/log.c src/base/clock.c)
rebuild=0
[ -x "$BIN" ] || rebuild=1
for s in "$HERE/bench_repair.c" "${SRCS[@]/#/$KB_ROOT/}" "$KB_ROOT"/include/kria/*.h "$KB_ROOT"/src/archive/warcfile.h; do
	[ "$s" -nt "$BIN" ] && rebuild=1
done
if [ "$rebuild" = 1 ]; then
	kb_log "building bench_repair"
	# shellcheck disable=SC2046
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$KB_ROOT/include" -I"$KB_ROOT/src/base" -I"$KB_ROOT/src/archive" \
		-o "$BIN" "$HERE/bench_repair.c" "${SRCS[@]/#/$KB_ROOT/}" \
		$(pkg-config --cflags --libs zlib libdeflate openssl) || kb_die "cannot build bench_repair"
fi

SITE=$KB_OUT/site-warc-p1000
kb_site "$SITE" -H 1 -p 1000

stamp=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$OUT/run-$stamp
mkdir -p "$RUN/tmp"
kb_on_exit "rm -rf '$RUN/tmp'"
kb_log "measuring (a $SIZE MiB file, $REPS repetitions, CPU $CPU)"
taskset -c "$CPU" "$BIN" -d "$SITE" -w "$RUN/tmp" -s "$SIZE" -t "$TAIL" -r "$REPS" \
	>"$RUN/table.md" 2>"$RUN/log.txt" || { cat "$RUN/log.txt" >&2; kb_die "bench_repair failed"; }

{
	echo "### WARC start-up repair of a $SIZE MiB gzip .open file, $REPS repetitions"
	echo
	kb_machine_md
	echo "- command: \`bench/warc/repair.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- $(grep -v '^bench_repair: *$' "$RUN/log.txt" | grep '^bench_repair' | head -1 | sed 's/^bench_repair: //')"
	echo "- pinned to CPU $CPU; wall time of kr_warcfile_repair_from (read, cut, fdatasync, rename), median of $REPS"
	echo
	cat "$RUN/table.md"
} >"$RUN/report.md"
ln -sfn "$(basename "$RUN")" "$OUT/last"
cat "$RUN/report.md"
