#!/usr/bin/env bash
# Run every unit test binary and integration script, count TAP results and
# finish with one plain line: "N passed, N failed".
# Usage: test/run.sh BUILD_DIR [FILTER]
set -u
B=${1:-build}
FILTER=${2:-${TESTS:-}}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export KRIA="$top/$B/kria" KTS="$top/$B/kts" KRIA_BUILD="$top/$B" KRIA_TOP="$top"
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logdir="$top/$B/test-logs"
mkdir -p "$logdir"

pass=0 fail=0 failed_names=()

run_one() { # name timeout cmd...
  local name=$1 limit=$2; shift 2
  local log="$logdir/$name.log"
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  local p f
  p=$(grep -cE '^ok [0-9]+' "$log")
  # "not ok ... # TODO": a known failure (TAP), not counted
  f=$(grep -E '^not ok [0-9]+' "$log" | grep -cvE '# TODO( |$)')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1 # crashed, timed out or failed outside a test case
    echo "  $name: exit status $rc" >>"$log"
  fi
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$f" -gt 0 ]; then
    failed_names+=("$name")
    printf 'FAIL %-28s %3d passed, %d failed (log: %s)\n' "$name" "$p" "$f" "${log#"$top"/}"
    grep -E '^not ok|^# |ERROR|runtime error|Sanitizer' "$log" | head -20 | sed 's/^/     /'
  else
    printf 'ok   %-28s %3d passed\n' "$name" "$p"
  fi
}

for t in "$B"/test/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  run_one "$name" 300 "$t"
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

for t in test/integration/*.sh; do
  [ "$(basename "$t")" = lib.sh ] && continue
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  run_one "$name" 600 bash "$t"
done

echo
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
