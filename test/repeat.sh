#!/usr/bin/env bash
# Run the whole suite (test/run.sh) N times in a row, optionally beside a
# load (a parallel build of kria in a scratch build directory, started
# again whenever it finishes), to find tests that depend on timing. One
# line per run: its number, wall seconds, load average and the suite's
# "N passed, N failed" (with the failed names); then a total. Exit 0 only
# when every run passed.
#
#   test/repeat.sh [-n RUNS] [--load] [BUILD_DIR]     (default: 20 runs, build)
#
# The suite's binaries must be built (make all unit, or make check once).
# Each run's logs are kept under BUILD_DIR/repeat/N/ when it failed. The
# load's processes are this script's own children and end with it.
set -u
runs=20 load=0 B=build
while [ $# -gt 0 ]; do
  case $1 in
    -n) runs=${2:-}; shift 2 ;;
    --load) load=1; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "repeat.sh: unknown option $1" >&2; exit 64 ;;
    *) B=$1; shift ;;
  esac
done
case $runs in '' | *[!0-9]* | 0) echo "repeat.sh: -n wants a positive number" >&2; exit 64 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
[ -x "$B/kria" ] || { echo "repeat.sh: $B/kria is not built (make all unit)" >&2; exit 1; }

load_pid=
stop_load() {
  [ -n "$load_pid" ] || return 0
  kill -- -"$load_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf -- "$B-load"
}
trap stop_load EXIT
if [ "$load" = 1 ]; then
  # In its own process group (set -m), so it ends with its make and cc.
  set -m
  (while :; do
    make -s -j2 BUILD="$B-load" OPT=-O2 all >/dev/null 2>&1
    rm -rf -- "$B-load"
  done) &
  load_pid=$!
  set +m
  echo "load: a make -j2 of kria in $B-load, over and over (pid $load_pid)"
fi

failed_runs=0
for i in $(seq 1 "$runs"); do
  t0=$SECONDS
  out=$(test/run.sh "$B" 2>&1)
  rc=$?
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -n 1)
  names=$(grep -E '^failed: ' <<<"$out" | tail -n 1)
  printf 'run %2d/%d  %4d s  load %s  %s %s\n' "$i" "$runs" $((SECONDS - t0)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "${line:-no summary line}" "$names"
  if [ "$rc" -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    mkdir -p "$B/repeat/$i" && cp -r "$B/test-logs/." "$B/repeat/$i/"
  fi
done
echo "$runs runs, $failed_runs failed"
[ "$failed_runs" -eq 0 ]
