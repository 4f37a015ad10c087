#!/usr/bin/env bash
# The default wait policy changed from the thesis' multiplicative to
# poisson: a state directory crawled
# under the old default carries on under the new one. kria crawls one kts
# host (pages changing on every request, pages that never change with
# honest validators, images) with evaluators that set no policy key:
#   1  with -o wait.NAME.policy=multiplicative, what those evaluators were before
#      the change: every wait crawl.log gives is multiplicative; the crawl
#      stops at limits.max-time (exit 0);
#   2  the same configuration without the -o (the new defaults), on the
#      same state directory: exit 0, nothing logged as a warning or an
#      error; every URI of run 1 is still in the state database, no
#      visited one lost its visit count, and each page run 1 fetched is
#      fetched again;
#      every wait is poisson's, and each page's first wait in run 2
#      continues its visit count and rests on its stored history (the
#      estimator crawl.log names is not the prior).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upgrade_lib.bash"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"

upgrade_site

# ---- 1: the old default -------------------------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=5s \
  -o wait.text.policy=multiplicative -o wait.image.policy=multiplicative \
  -o adaptive.informed-priors=false >"$T/old.out" 2>"$T/old.err"
rc=$?
upgrade_first_run "old default" "$rc"
is "$(grep -c 'wait:[a-z]*/poisson' "$CL")" 0 "old default: no poisson wait"
like "$(grep -c 'wait:text/multiplicative' "$CL")" '^[1-9][0-9]*$' "old default: multiplicative waits"
check "old default: the images' too" grep -q 'wait:image/multiplicative' "$CL"

# ---- 2: the new default, same state directory ------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=6s >"$T/new.out" 2>"$T/new.err"
upgrade_resumed "$?"
is "$(grep -c 'wait:[a-z]*/multiplicative' <<<"$new_log")" 0 "new default: no multiplicative wait"
check "new default: the images' too" grep -q 'wait:image/poisson/' <<<"$new_log"
# each page's first line in run 2: its visit count goes on from run 1, and
# poisson estimated from the stored history, not from the prior
is "$(upgrade_bad_firsts 'poisson/prior')" 0 "new default: each page's first wait continues its count and reads its history"
diag "new default, first waits: $(awk '{ sub(/.*wait:/, "", $12); print $12 }' <<<"$firsts" | sort | uniq -c | tr '\n' ';')"

kts_stop
done_testing
