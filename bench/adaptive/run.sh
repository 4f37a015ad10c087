#!/usr/bin/env bash
# bench/adaptive/run.sh — revisit policies compared with `kria simulate`
# (issue 4): fixed interval at the same fetch budget, the thesis'
# multiplicative policy and the poisson policy, on a mix where the
# politeness budget binds: 10 hosts x 10,000 URIs, change rates
# log-uniform from hourly to monthly, 2 s politeness, 30 simulated days.
# Reports versions captured, fetches and versions per fetch over the whole
# run and the first 3 days, checks the issue's targets, and measures what
# validators save on unchanged visits in a second run where every host has
# correct validators and no page a volatile section.
#
# The simulator runs the real frontier (SQLite store in a temporary
# directory, /dev/shm when there is one), wait policies, estimators and
# validator trust on a virtual clock; see bench/adaptive/README.md.
# Results: bench/out/adaptive/last/{main,bytes}.json and report.md;
# --record also puts the report into bench/RESULTS.md between the
# adaptive markers.
#
# Usage: bench/adaptive/run.sh [--urls N] [--hosts H] [--days D] [--delay DUR]
#          [--seed S] [--jobs J] [--oracle] [--quick] [--kria PATH] [--record]
#          [--worlds [--seeds N]] [-- more kria simulate options]
#   --quick   2 hosts x 10,000 URIs (same budget per URI), for a first look
#   --oracle  also run the oracle diagnostic (poisson's allocator fed the
#             true change rates): how far estimation is from its bound
#   --worlds  instead: every world (log-uniform, weibull, shifting, cycles,
#             importance, lying: every host's validators lie) over --seeds seeds (10), fixed, multiplicative,
#             poisson and the oracle (the reference), default 10,000 URIs on
#             10 hosts with the politeness delay scaled so that each URI
#             has the budget of the main run (100,000 URIs, 10 hosts, 2 s):
#             delay = 10,000 x 2.15 s / (URIs per host) - 0.15 s unless
#             --delay; report.md gets each world's table (mean ± 95 % CI,
#             paired ratios to the oracle) and the issue's targets. About
#             15 min on 2 free cores at the default size. Not --record:
#             copy the report by hand.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"

ARGS=("$@")
URLS=100000
HOSTS=10
DAYS=30
DELAY=2s
SEED=1
JOBS=$(nproc 2>/dev/null || echo 1)
[ "$JOBS" -gt 3 ] && JOBS=3
ORACLE=0
RECORD=0
WORLDS=0
SEEDS=10
DELAY_SET=0
KRIA_BIN=${KRIA:-$KB_ROOT/build/kria}
EXTRA=()
while [ $# -gt 0 ]; do
	case $1 in
	--urls) URLS=$2; shift 2 ;;
	--hosts) HOSTS=$2; shift 2 ;;
	--days) DAYS=$2; shift 2 ;;
	--delay) DELAY=$2; DELAY_SET=1; shift 2 ;;
	--worlds) WORLDS=1; shift ;;
	--seeds) SEEDS=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	--oracle) ORACLE=1; shift ;;
	--quick) URLS=20000; HOSTS=2; shift ;;
	--kria) KRIA_BIN=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--) shift; EXTRA=("$@"); break ;;
	-h | --help) sed -n '2,35p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $URLS =~ ^[0-9]+$ && $URLS -ge 10 ]] || kb_die "--urls: a number >= 10"
[[ $HOSTS =~ ^[0-9]+$ && $HOSTS -ge 1 && $HOSTS -le $URLS ]] || kb_die "--hosts: 1..urls"
[[ $JOBS =~ ^[0-9]+$ && $JOBS -ge 1 && $JOBS -le 16 ]] || kb_die "--jobs: 1..16"
[ -x "$KRIA_BIN" ] || kb_die "$KRIA_BIN not found: make all first (or --kria PATH)"
command -v python3 >/dev/null || kb_die "python3 is needed for the report"

kb_bound 7200 "${ARGS[@]}"

# ---- --worlds: every world over seeds, against the oracle ----------------------------
if [ "$WORLDS" = 1 ]; then
	[ "$RECORD" = 0 ] || kb_die "--worlds does not --record: copy its report by hand"
	[[ $SEEDS =~ ^[0-9]+$ && $SEEDS -ge 2 && $SEEDS -le 100 ]] || kb_die "--seeds: 2..100"
	if [ "$URLS" = 100000 ] && [ "$HOSTS" = 10 ]; then URLS=10000; fi
	if [ "$DELAY_SET" = 0 ]; then
		# each URI the main run's budget: one fetch per 10,000 x (2 s + 150 ms) per host
		DELAY=$(( 10000 * 2150 * HOSTS / URLS - 150 ))ms
	fi
	OUT=$KB_OUT/adaptive
	RUN=$OUT/worlds-$(date -u +%Y%m%dT%H%M%SZ)
	mkdir -p "$RUN"
	STATE=/dev/shm
	[ -d "$STATE" ] && [ -w "$STATE" ] || STATE=${TMPDIR:-/tmp}
	# name and options of each world (see bench/adaptive/README.md)
	WORLD_NAMES=(log-uniform weibull shifting cycles importance lying)
	WORLD_OPTS=("--mix 1h..30d"
		"--mix weibull:0.8:5d"
		"--shift share=0.3,at=10d,redraw"
		"--cycles daily:0.8@14,weekly:0.5@wed"
		"--importance pareto:1.5"
		"--mix 1h..30d --validators lying=1")
	COMMON=(simulate --urls "$URLS" --hosts "$HOSTS" --days "$DAYS" --delay "$DELAY" --seed "$SEED"
		--seeds "$SEEDS" --policy oracle,fixed,multiplicative,poisson --ref oracle
		--jobs "$JOBS" --state-dir "$STATE" --json)
	reps=()
	t0=$(date +%s)
	for k in "${!WORLD_NAMES[@]}"; do
		name=${WORLD_NAMES[$k]}
		# shellcheck disable=SC2206
		opts=(${WORLD_OPTS[$k]})
		kb_log "world $name: kria ${COMMON[*]} ${opts[*]} ${EXTRA[*]}"
		/usr/bin/time -v -o "$RUN/$name.time" "$KRIA_BIN" "${COMMON[@]}" "${opts[@]}" "${EXTRA[@]}" \
			>"$RUN/$name.json" 2>"$RUN/$name.err" ||
			kb_die "kria simulate failed ($name): $(tail -3 "$RUN/$name.err")"
		reps+=("$name=$RUN/$name.json")
	done
	t1=$(date +%s)
	{
		echo "### Worlds beyond log-uniform, $URLS URIs on $HOSTS hosts, $DAYS simulated days, $SEEDS seeds"
		echo
		kb_machine_md
		echo "- command: \`bench/adaptive/run.sh ${ARGS[*]}\`"
		echo "- each world: \`kria ${COMMON[*]} WORLD-OPTIONS ${EXTRA[*]}\`"
		for k in "${!WORLD_NAMES[@]}"; do
			echo "  - ${WORLD_NAMES[$k]}: \`${WORLD_OPTS[$k]}\`"
		done
		echo "- kria: $(git -C "$KB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo "- wall time of the suite: $((t1 - t0)) s"
		echo
		python3 "$HERE/report_worlds.py" "${reps[@]}"
	} >"$RUN/report.md"
	ln -sfn "$(basename "$RUN")" "$OUT/last-worlds"
	cat "$RUN/report.md"
	exit 0
fi

OUT=$KB_OUT/adaptive
RUN=$OUT/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"
STATE=/dev/shm
[ -d "$STATE" ] && [ -w "$STATE" ] || STATE=${TMPDIR:-/tmp}

POLICIES=fixed,multiplicative,poisson
[ "$ORACLE" = 1 ] && POLICIES=$POLICIES,oracle
MAIN=(simulate --urls "$URLS" --hosts "$HOSTS" --days "$DAYS" --delay "$DELAY" --seed "$SEED"
	--policy "$POLICIES" --jobs "$JOBS" --state-dir "$STATE" --json "${EXTRA[@]}")
# every host honest, nothing volatile: what validators can save
BYTES=(simulate --urls "$((URLS / 5))" --hosts "$HOSTS" --days "$DAYS" --delay "$DELAY" --seed "$SEED"
	--validators correct=1 --volatile 0 --policy multiplicative,poisson --jobs "$JOBS"
	--state-dir "$STATE" --json "${EXTRA[@]}")

kb_log "main run: kria ${MAIN[*]}"
/usr/bin/time -v -o "$RUN/main.time" "$KRIA_BIN" "${MAIN[@]}" >"$RUN/main.json" 2>"$RUN/main.err" ||
	kb_die "kria simulate failed: $(tail -3 "$RUN/main.err")"
kb_log "bytes run: kria ${BYTES[*]}"
/usr/bin/time -v -o "$RUN/bytes.time" "$KRIA_BIN" "${BYTES[@]}" >"$RUN/bytes.json" 2>"$RUN/bytes.err" ||
	kb_die "kria simulate failed: $(tail -3 "$RUN/bytes.err")"

{
	echo "### Revisit policies, $URLS URIs on $HOSTS hosts, $DAYS simulated days"
	echo
	kb_machine_md
	echo "- command: \`bench/adaptive/run.sh ${ARGS[*]}\`"
	echo "- main run: \`kria ${MAIN[*]}\`"
	echo "- bytes run: \`kria ${BYTES[*]}\`"
	echo "- kria: $(git -C "$KB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo
	python3 "$HERE/report.py" "$RUN/main.json" "$RUN/bytes.json" "$RUN/main.time" "$RUN/bytes.time"
} >"$RUN/report.md"
ln -sfn "$(basename "$RUN")" "$OUT/last"
cat "$RUN/report.md"

if [ "$RECORD" = 1 ]; then
	res=$KB_ROOT/bench/RESULTS.md
	grep -q '<!-- adaptive:begin' "$res" || kb_die "no adaptive markers in $res"
	tmp=$(mktemp)
	awk -v rep="$RUN/report.md" '
		/<!-- adaptive:begin/ { print; while ((getline l < rep) > 0) print l; skip = 1; next }
		/<!-- adaptive:end/ { skip = 0 }
		!skip { print }' "$res" >"$tmp"
	cat "$tmp" >"$res"
	rm -f "$tmp"
	kb_log "recorded in bench/RESULTS.md"
fi
