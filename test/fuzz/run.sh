#!/usr/bin/env bash
# Build and run kria's libFuzzer harnesses (test/fuzz/fuzz_<target>.c).
#
#   test/fuzz/run.sh [--merge] [--build-only] [TARGET...]
#   FUZZ_SECONDS=N   seconds per target (default 30)
#   FUZZ_BUILD=dir   build tree (default build-fuzz)
#   FUZZ_ARGS="..."  extra libFuzzer flags for every target
#
# The library sources (the Makefile's LIB_SRCS) are compiled with clang,
# ASan+UBSan and libFuzzer's coverage instrumentation into $FUZZ_BUILD by
# the Makefile's own rules (so .d dependencies keep rebuilds incremental),
# archived, and each harness is linked with -fsanitize=fuzzer. A library
# file that does not compile (a module under construction) is left out
# with a warning; only harnesses that need it fail to link.
#
# Each target runs for FUZZ_SECONDS with its .dict and a scratch copy of
# test/fuzz/corpus/<target>/, so runs never grow the committed corpus;
# --merge afterwards merges what the run found into the committed corpus
# (libFuzzer -merge=1 keeps only inputs that add coverage). Per target one
# line: runs, exec/s, final cov/ft, corpus size, crashes. A crashing input
# is saved under $FUZZ_BUILD/crashes/; the exit status is non-zero if any
# target crashed (or failed to build). Turn a crash into a regression test
# by minimising it and copying it to test/fuzz/regress/<target>/:
#   $FUZZ_BUILD/fuzz/fuzz_<t> -minimize_crash=1 -runs=10000 CRASH
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

B=${FUZZ_BUILD:-build-fuzz}
SECONDS_PER=${FUZZ_SECONDS:-30}
CC=${FUZZ_CC:-clang}
merge=0 build_only=0 targets=()
for a in "$@"; do
  case $a in
    --merge) merge=1 ;;
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $a" >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for f in test/fuzz/fuzz_*.c; do t=${f#test/fuzz/fuzz_}; targets+=("${t%.c}"); done
fi
for t in "${targets[@]}"; do
  [ -f "test/fuzz/fuzz_$t.c" ] || { echo "fuzz.sh: no harness test/fuzz/fuzz_$t.c" >&2; exit 2; }
done
command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (make deps installs clang)" >&2; exit 2; }

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# ---- build ---------------------------------------------------------------
# Variables from the Makefile, so the source list and flags never drift.
vars=$(printf 'fuzz-vars:\n\t@echo "$(LIB_SRCS)"\n\t@echo "$(CPPFLAGS_ALL)"\n\t@echo "$(LIBS)"\n\t@echo "$(LLHTTP_OBJS)"\n' |
  make -s --no-print-directory -f Makefile -f - BUILD="$B" SANITIZE=0 fuzz-vars) || exit 2
srcs=$(sed -n 1p <<<"$vars")
cppflags=$(sed -n 2p <<<"$vars")
libs=$(sed -n 3p <<<"$vars")
llhttp_objs=$(sed -n 4p <<<"$vars")
[ -n "$srcs" ] || { echo "fuzz.sh: the Makefile's LIB_SRCS is empty" >&2; exit 2; }
objs=()
for s in $srcs; do objs+=("$B/${s%.c}.o"); done

mkdir -p "$B/fuzz" "$B/crashes"
# -Wno-error: the library must be warning-free under gcc; clang's extra
# warnings are not a reason to stop fuzzing. The harnesses keep -Werror.
make -k -s --no-print-directory BUILD="$B" SANITIZE=0 CC="$CC" OPT="-O1" \
  SANFLAGS="$SAN -fsanitize=fuzzer-no-link" CFLAGS="-Wno-error" \
  "${objs[@]}" $llhttp_objs >"$B/fuzz/build.log" 2>&1 ||
  { echo "fuzz.sh: some library objects did not build (see $B/fuzz/build.log):" >&2
    grep -E 'error:' "$B/fuzz/build.log" | head -5 >&2; }
have=()
for o in "${objs[@]}" $llhttp_objs; do [ -f "$o" ] && have+=("$o"); done
lib="$B/libkria-fuzz.a"
rm -f "$lib"
ar rcs "$lib" "${have[@]}" || exit 2

status=0
build_failed=()
for t in "${targets[@]}"; do
  bin="$B/fuzz/fuzz_$t"
  # shellcheck disable=SC2086
  if ! "$CC" -std=c11 -D_GNU_SOURCE -O1 -g $SAN -fsanitize=fuzzer \
      -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Itest/fuzz $cppflags \
      -o "$bin" "test/fuzz/fuzz_$t.c" "$lib" $libs 2>"$B/fuzz/link-$t.log"; then
    echo "fuzz.sh: fuzz_$t did not build:" >&2
    head -20 "$B/fuzz/link-$t.log" >&2
    build_failed+=("$t")
    status=1
  fi
done
[ "$build_only" -eq 1 ] && exit "$status"

# ---- run -----------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf '%-8s %6s %10s %8s %6s %7s %6s %s\n' target secs runs exec/s cov ft corpus crashes
for t in "${targets[@]}"; do
  [[ " ${build_failed[*]-} " == *" $t "* ]] && continue
  bin="$B/fuzz/fuzz_$t"
  work="$B/fuzz/work/$t"
  log="$B/fuzz/$t.log"
  rm -rf "$work" && mkdir -p "$work"
  [ -d "test/fuzz/corpus/$t" ] && cp -R "test/fuzz/corpus/$t/." "$work/"
  dict=()
  [ -f "test/fuzz/$t.dict" ] && dict=("-dict=test/fuzz/$t.dict")
  before=$(ls "$B/crashes" | grep -c "^$t-" || true)
  # shellcheck disable=SC2086
  nice -n 10 "$bin" -max_total_time="$SECONDS_PER" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$B/crashes/$t-" "${dict[@]}" ${FUZZ_ARGS:-} \
    "$work" >"$log" 2>&1
  rc=$?
  after=$(ls "$B/crashes" | grep -c "^$t-" || true)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=$((after - before))
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="exit $rc"
  printf '%-8s %6s %10s %8s %6s %7s %6s %s\n' "$t" "$SECONDS_PER" "${runs:-?}" "${eps:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes"
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -E 'ERROR: |runtime error|invariant|SUMMARY' "$log" | head -5 | sed 's/^/    /'
    ls -t "$B/crashes" | grep "^$t-" | head -3 | sed "s|^|    saved $B/crashes/|"
    echo "    log: $log"
  elif [ "$merge" -eq 1 ]; then
    mkdir -p "test/fuzz/corpus/$t"
    nice -n 10 "$bin" -merge=1 "${dict[@]}" "test/fuzz/corpus/$t" "$work" >"$B/fuzz/$t-merge.log" 2>&1 ||
      { echo "    merge failed: $B/fuzz/$t-merge.log"; status=1; }
  fi
done
exit "$status"
