#!/usr/bin/env bash
# Run every unit test binary and integration script, count TAP results and
# finish with one plain line: "N passed, N failed".
# Usage: test/run.sh BUILD_DIR [FILTER]
# TEST_JOBS (default 2) tests run at once: most integration scripts wait on
# servers and events rather than compute, and run one after the other the
# suite outgrew CI's time. Each test keeps its own temporary directory and
# picks free ports, so they do not meet. The slowest of the last run start
# first (their times are kept in the log directory), so the tail is short.
set -u
B=${1:-build}
FILTER=${2:-${TESTS:-}}
JOBS=${TEST_JOBS:-2}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export KRIA="$top/$B/kria" KTS="$top/$B/kts" KRIA_BUILD="$top/$B" KRIA_TOP="$top"
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logdir="$top/$B/test-logs"
mkdir -p "$logdir"

# run_one NAME TIMEOUT CMD...: runs one test, prints its line (and, when it
# failed, the lines that say why) in one write, and leaves "PASSED FAILED"
# in NAME.result and its duration in NAME.secs.
run_one() {
  local name=$1 limit=$2; shift 2
  local log="$logdir/$name.log" start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  local p f out
  p=$(grep -cE '^ok [0-9]+' "$log")
  # "not ok ... # TODO": a known failure (TAP), not counted
  f=$(grep -E '^not ok [0-9]+' "$log" | grep -cvE '# TODO( |$)')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1 # crashed, timed out or failed outside a test case
    echo "  $name: exit status $rc" >>"$log"
  fi
  if [ "$f" -gt 0 ]; then
    out=$(printf 'FAIL %-28s %3d passed, %d failed (log: %s)\n' "$name" "$p" "$f" "${log#"$top"/}"
      grep -E '^not ok|^# |ERROR|runtime error|Sanitizer' "$log" | head -20 | sed 's/^/     /')
  else
    out=$(printf 'ok   %-28s %3d passed' "$name" "$p")
  fi
  printf '%s\n' "$out"
  echo "$((SECONDS - start))" >"$logdir/$name.secs"
  echo "$p $f" >"$logdir/$name.result"
}

# run_all TIMEOUT NAME=CMD...: at most JOBS at a time, the slowest last
# time first.
run_all() {
  local limit=$1; shift
  local entry name
  for entry in "$@"; do
    name=${entry%%=*}
    printf '%s %s\n' "$(cat "$logdir/$name.secs" 2>/dev/null || echo 0)" "$entry"
  done | sort -k1,1nr -s | {
    while read -r _ entry; do
      name=${entry%%=*}
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
      rm -f "$logdir/$name.result"
      # shellcheck disable=SC2086 # the command is words without spaces
      run_one "$name" "$limit" ${entry#*=} &
    done
    wait # in the pipeline's subshell, which started the jobs
  }
}

names=()
units=()
for t in "$B"/test/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  units+=("$name=$t") names+=("$name")
done

# warcio.js, puppeteer-core and replaywebpage (pinned in
# test/integration/package-lock.json) before the integration tests, so no
# test that only checks for them skips on a first run; a test that needs
# them reports an install failure itself.
if command -v node >/dev/null && [ -z "$FILTER" ] &&
  { [ ! -d test/integration/node_modules/warcio ] ||
    [ ! -d test/integration/node_modules/puppeteer-core ] ||
    [ ! -d test/integration/node_modules/replaywebpage ]; }; then
  (cd test/integration && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
    >"$logdir/npm-ci.log" 2>&1 || echo "npm ci failed (log: ${logdir#"$top"/}/npm-ci.log)"
fi

scripts=()
for t in test/integration/*.sh; do
  [ "$(basename "$t")" = lib.sh ] && continue
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  scripts+=("$name=bash $t") names+=("$name")
done

[ ${#units[@]} -gt 0 ] && run_all 300 "${units[@]}"
[ ${#scripts[@]} -gt 0 ] && run_all 600 "${scripts[@]}"

pass=0 fail=0 failed_names=()
for name in "${names[@]}"; do
  read -r p f <"$logdir/$name.result" 2>/dev/null || { p=0 f=1; }
  pass=$((pass + p)); fail=$((fail + f))
  [ "$f" -gt 0 ] && failed_names+=("$name")
done

echo
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
