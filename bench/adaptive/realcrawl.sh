#!/usr/bin/env bash
# bench/adaptive/realcrawl.sh — revisit policies measured on a real crawl
# (issue 20's fourth target): `kria demo --pages N` serves the grown demo
# site on loopback (news, sections, articles changing at random with known
# mean rates, archive pages, images and clock pages that never change, a
# host whose validators lie) and crawls it for 4 minutes of real time with
# the politeness budget binding, once per policy: fixed interval (at the
# interval that spends the adaptive runs' fetch count), multiplicative,
# poisson. The site writes its ground truth (every version each page had
# and its SHA-1); a version counts as captured when the crawl's WARC files
# hold a body with its digest. Report: fetches, versions, captured, capture
# ratio, versions per fetch, the share of fetches on never-changing pages
# and each policy against fixed at equal fetches. See bench/adaptive/README.md.
#
# Usage: bench/adaptive/realcrawl.sh [--pages N] [--seconds S] [--seed S]
#          [--delay MS] [--max-wait DUR] [--policies LIST] [--reps R]
#          [--fixed-interval MS] [--kria PATH [--kria PATH2]] [--record]
#          [-- more kria demo options, e.g. -o adaptive.trust-sample=0.2]
#   --kria twice   A/B: both binaries run every policy (interleaved), each
#                  against its own fixed run; ratios side by side
#   --reps R       every run R times (the real-time noise: min–max shown)
#   --record       the report into bench/RESULTS.md between the realcrawl
#                  markers
# Each run takes --seconds (default 240) plus a few seconds; runs go one at
# a time (the machine's load is part of what a real crawl sees).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
PAGES=300
SECONDS_RUN=240
SEED=1
DELAY=100
MAXWAIT=
POLICIES=fixed,multiplicative,poisson
REPS=1
FIXED_MS=
KRIAS=()
RECORD=0
EXTRA=()
while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--delay) DELAY=$2; shift 2 ;;
	--max-wait) MAXWAIT=$2; shift 2 ;;
	--policies) POLICIES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--fixed-interval) FIXED_MS=$2; shift 2 ;;
	--kria) KRIAS+=("$2"); shift 2 ;;
	--record) RECORD=1; shift ;;
	--) shift; EXTRA=("$@"); break ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[ ${#KRIAS[@]} -gt 0 ] || KRIAS=("${KRIA:-$KB_ROOT/build/kria}")
[ ${#KRIAS[@]} -le 2 ] || kb_die "--kria: at most two binaries (an A/B)"
[[ $PAGES =~ ^[0-9]+$ && $PAGES -ge 20 && $PAGES -le 1000 ]] || kb_die "--pages: 20..1000"
[[ $SECONDS_RUN =~ ^[0-9]+$ && $SECONDS_RUN -ge 10 && $SECONDS_RUN -le 3600 ]] || kb_die "--seconds: 10..3600"
[[ $DELAY =~ ^[0-9]+$ && $DELAY -ge 10 ]] || kb_die "--delay: milliseconds, >= 10"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 10 ]] || kb_die "--reps: 1..10"
[ -z "$FIXED_MS" ] || [[ $FIXED_MS =~ ^[0-9]+$ && $FIXED_MS -ge 1000 ]] || kb_die "--fixed-interval: ms >= 1000"
[ -n "$MAXWAIT" ] || MAXWAIT=${SECONDS_RUN}s
for k in "${KRIAS[@]}"; do
	[ -x "$k" ] || kb_die "$k not found: make all first (or --kria PATH)"
	"$k" demo --help 2>/dev/null | grep -q -- --pages || kb_die "$k: kria demo has no --pages"
done
command -v python3 >/dev/null || kb_die "python3 is needed for the measures"
IFS=, read -r -a POLS <<<"$POLICIES"
ADAPTIVE=()
WANT_FIXED=0
for p in "${POLS[@]}"; do
	case $p in
	fixed) WANT_FIXED=1 ;;
	multiplicative | poisson) ADAPTIVE+=("$p") ;;
	*) kb_die "--policies: fixed, multiplicative, poisson" ;;
	esac
done
[ "$WANT_FIXED" = 0 ] || [ ${#ADAPTIVE[@]} -gt 0 ] || [ -n "$FIXED_MS" ] ||
	kb_die "fixed alone needs --fixed-interval (its interval comes from the adaptive runs)"

nruns=$(( (${#ADAPTIVE[@]} + WANT_FIXED) * REPS * ${#KRIAS[@]} ))
kb_bound $(( nruns * (SECONDS_RUN + 120) + 300 )) "${ARGS[@]}"

OUT=$KB_OUT/adaptive
RUN=$OUT/realcrawl-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"

# The liar host (Host: localhost, a tenth of the pages, as
# kr_demo_layout_grown in src/cli/demo_site.c makes it) is a queue of its
# own: its politeness delay is scaled so that both hosts give each page
# the same share of a fetch slot, and one fixed interval is the same
# round-robin on both.
LIAR=$(( (PAGES * 100 + 500) / 1000 ))
[ "$LIAR" -ge 1 ] || LIAR=1
LIAR_DELAY=$(( DELAY * (PAGES - LIAR) / LIAR ))

# A config: config/demo.conf without its evaluators, the bench's
# politeness, then the policy's evaluators. $1 policy, $2 fixed interval ms.
make_conf() {
	local pol=$1 ms=${2:-}
	sed '/^\[wait /,$d' "$KB_ROOT/config/demo.conf"
	cat <<EOF

# ---- bench/adaptive/realcrawl.sh: policy $pol ----
# (politeness on 127.0.0.1 and adaptive.capacity-plan are set with -o)
[host "localhost"]
politeness.min-delay = ${LIAR_DELAY}ms
politeness.max-delay = ${LIAR_DELAY}ms
EOF
	if [ "$pol" = fixed ]; then
		cat <<EOF

[wait "fixed"]
content-type =
initial-wait = ${ms}ms
default-wait = ${ms}ms
min-wait = ${ms}ms
max-wait = ${ms}ms
changed-factor = 1
unchanged-factor = 1
policy = multiplicative
EOF
		return
	fi
	local name ct init
	for name in image text default; do
		case $name in
		image) ct='^image/' init=4s ;;
		text) ct='^text/' init=2s ;;
		default) ct='' init=2s ;;
		esac
		cat <<EOF

[wait "$name"]
content-type = $ct
initial-wait = $init
default-wait = $init
min-wait = 1s
max-wait = $MAXWAIT
changed-factor = 1.5
unchanged-factor = 1.5
policy = $pol
EOF
	done
}

CUR_PID=
kb_on_exit 'if [ -n "$CUR_PID" ]; then kill "$CUR_PID" 2>/dev/null; wait "$CUR_PID" 2>/dev/null; fi'

# run_one LABEL BIN POLICY REP [INTERVAL_MS]: one crawl into $RUN/LABEL-POLICY-REP.
run_one() {
	local label=$1 bin=$2 pol=$3 rep=$4 ms=${5:-} d
	d=$RUN/$label-$pol-$rep
	mkdir -p "$d"
	make_conf "$pol" "$ms" >"$d/kria.conf"
	{
		echo "policy=$pol"
		echo "label=$label"
		echo "kria=$bin"
		echo "seconds=$SECONDS_RUN"
		echo "min_wait_ms=1000"
		echo "interval_ms=$ms"
	} >"$d/meta"
	kb_log "$label $pol (run $rep)${ms:+, every ${ms} ms}: $SECONDS_RUN s"
	local o=(-o politeness.delay-factor=1 -o "politeness.min-delay=${DELAY}ms"
		-o "politeness.max-delay=${DELAY}ms")
	[ "$pol" != fixed ] || o+=(-o adaptive.capacity-plan=false)
	"$bin" demo --pages "$PAGES" --seconds "$SECONDS_RUN" --seed "$SEED" --config "$d/kria.conf" \
		--state-dir "$d/state" --truth "$d/truth.tsv" "${o[@]}" "${EXTRA[@]}" \
		>"$d/demo.out" 2>"$d/demo.err" &
	CUR_PID=$!
	local rc=0
	wait "$CUR_PID" || rc=$?
	CUR_PID=
	[ "$rc" = 0 ] || kb_die "kria demo failed ($rc): $(tail -3 "$d/demo.err")"
	python3 "$HERE/realcrawl.py" score "$d" >&2
}

labels=() revs=()
for i in "${!KRIAS[@]}"; do
	# the commit of the tree a binary was built in (read now: the tree may
	# move while the runs go on)
	revs+=("$(git -C "$(dirname "${KRIAS[$i]}")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)")
	if [ ${#KRIAS[@]} = 1 ]; then labels+=("kria"); else labels+=("$(printf '%s' AB | cut -c$((i + 1)))"); fi
done
# Adaptive policies first, the binaries interleaved, so that both see the
# machine alike; then fixed at the interval that spends their fetches.
for rep in $(seq 1 "$REPS"); do
	for pol in "${ADAPTIVE[@]}"; do
		for i in "${!KRIAS[@]}"; do run_one "${labels[$i]}" "${KRIAS[$i]}" "$pol" "$rep"; done
	done
done
if [ "$WANT_FIXED" = 1 ]; then
	declare -A IV
	for i in "${!KRIAS[@]}"; do
		if [ -n "$FIXED_MS" ]; then
			IV[$i]=$FIXED_MS
		else
			# poisson's fetch count when it ran (the issue's comparison), else
			# the adaptive runs' mean
			shopt -s nullglob
			cal=("$RUN/${labels[$i]}"-poisson-*)
			[ ${#cal[@]} -gt 0 ] || cal=("$RUN/${labels[$i]}"-*-*)
			shopt -u nullglob
			IV[$i]=$(python3 "$HERE/realcrawl.py" interval "${cal[@]}")
		fi
	done
	for rep in $(seq 1 "$REPS"); do
		for i in "${!KRIAS[@]}"; do run_one "${labels[$i]}" "${KRIAS[$i]}" fixed "$rep" "${IV[$i]}"; done
	done
fi

{
	echo "#### Recorded run: the grown demo site, $PAGES pages, $SECONDS_RUN s per run"
	echo
	kb_machine_md
	echo "- command: \`bench/adaptive/realcrawl.sh ${ARGS[*]}\`"
	echo "- each run: \`kria demo --pages $PAGES --seconds $SECONDS_RUN --seed $SEED --config CONF --truth FILE ${EXTRA[*]}\`"
	echo "  (CONF: config/demo.conf's keys, politeness ${DELAY} ms per fetch on 127.0.0.1 and ${LIAR_DELAY} ms on localhost, the policy's evaluators: min-wait 1 s, max-wait $MAXWAIT, initial 2 s / images 4 s, factors 1.5; fixed: one evaluator, initial = min = max = the interval, factors 1, adaptive.capacity-plan false)"
	for i in "${!KRIAS[@]}"; do
		echo "- ${labels[$i]}: \`${KRIAS[$i]}\` (${revs[$i]})"
	done
	echo
	python3 "$HERE/realcrawl.py" report "$RUN"/*-*-*/
} >"$RUN/report.md"
ln -sfn "$(basename "$RUN")" "$OUT/realcrawl-last"
cat "$RUN/report.md"
[ "$RECORD" = 0 ] || kb_record realcrawl "$RUN/report.md"
