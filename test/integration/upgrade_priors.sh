#!/usr/bin/env bash
# adaptive.informed-priors became the default: a state directory crawled
# with them off carries on with them on. kria crawls one kts host (pages
# changing on every request, pages that never change, images, all with
# honest validators and Last-Modified) with evaluators that set no policy
# key (poisson):
#   1  with -o adaptive.informed-priors=false, what a crawl was before the
#      change: every wait crawl.log gives is poisson's; the crawl stops at
#      limits.max-time (exit 0) and the host's learned state holds no
#      informed priors' pool;
#   2  the same configuration without the -o (the new default), on the
#      same state directory: exit 0, nothing logged as a warning or an
#      error, the host's learned state of run 1 loaded (none refused);
#      every URI of run 1 is still in the state database, no visited one
#      lost its visit count, each page run 1 fetched is fetched again and
#      its first wait in run 2 continues its visit count; the stored
#      learned state now holds a pool that those revisits fed (the
#      Last-Modified checks of their templates: URIs past their first
#      observations add no rate samples, new URIs would).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upgrade_lib.bash"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"
command -v node >/dev/null || bail "node is needed"

upgrade_site
# pool: "members templates" of the informed priors' pool in the host's
# stored learned state ("- -": no pool stored)
pool() { host_fields stored "$T/state" h.learned?.prior_members h.learned?.prior_templates; }

# ---- 1: informed priors off, as before ------------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=5s \
  -o adaptive.informed-priors=false >"$T/old.out" 2>"$T/old.err"
rc=$?
upgrade_first_run "priors off" "$rc"
old_log=$(awk '$12 ~ /wt:/' "$CL")
is "$(grep -c 'wait:[a-z]*/poisson/' <<<"$old_log")" "$(grep -c 'wt:' <<<"$old_log")" \
  "priors off: every wait is poisson's"
p1=$(pool)
is "$p1" "- -" "priors off: the learned state holds no pool"

# ---- 2: the new default, same state directory ------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=6s >"$T/new.out" 2>"$T/new.err"
upgrade_resumed "$?"
like "$(cat "$T/new.err")" "learned state: 1 hosts loaded \\(0 refused\\)" \
  "new default: run 1's learned state loaded"
# each page's first line in run 2: its visit count goes on from run 1
is "$(upgrade_bad_firsts)" 0 "new default: each page's first wait continues its visit count"
p2=$(pool)
like "$p2" '^[0-9.]+ [1-9][0-9]*$' "new default: the stored learned state holds a pool with templates ($p2)"
diag "new default, first waits: $(awk '{ sub(/.*wait:/, "", $12); print $12 }' <<<"$firsts" | sort | uniq -c | tr '\n' ';')"

kts_stop
done_testing
