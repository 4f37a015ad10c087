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

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"
command -v node >/dev/null || bail "node is needed"

{ no_robots_route; cat <<'EOF'; } >"$T/routes.ini"
[route "/"]
body = <html><body><a href="/fast/0">f</a> <a href="/slow/0">s</a>
body = <img src="/img/0"> <img src="/img/1"></body></html>

[site "/fast/"]
pages = 4
links = 2
change-every = 1
etag = auto
last-modified = auto
body-size = 1K

[site "/slow/"]
pages = 4
links = 2
etag = auto
last-modified = auto
body-size = 1K

[site "/img/"]
pages = 2
content-type = image/png
etag = auto
last-modified = auto
body-size = 1K
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '%s/\n' "$KTS_URL" >"$T/seeds.txt"
# max-wait 3 s: every URI is due again within run 2, whatever its prior
{
  revisit_conf "$T/seeds.txt" "$T/state" 50ms
  wait_conf text '^text/' 1s default-wait=1s max-wait=3s
  wait_conf image '^image/' 1s default-wait=1s max-wait=3s
} >"$T/crawl.conf"
CL="$T/state/logs/crawl.log"
DB="$T/state/kria.db"
# page_fetches FROM: the URLs crawl.log has a wait for from line FROM on
page_fetches() { tail -n +"$1" "$CL" | awk '$12 ~ /wt:/ { print $4 }' | sort -u; }
# pool: "members templates" of the informed priors' pool in the host's
# stored learned state ("- -": no pool stored)
pool() { host_fields stored "$T/state" h.learned?.prior_members h.learned?.prior_templates; }

# ---- 1: informed priors off, as before ------------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=5s \
  -o adaptive.informed-priors=false >"$T/old.out" 2>"$T/old.err"
is "$?" 0 "priors off: the crawl stops at max-time, exit 0"
old_lines=$(wc -l <"$CL")
page_fetches 1 >"$T/old.pages"
is "$(wc -l <"$T/old.pages")" 11 "priors off: the root, 4 + 4 pages and 2 images fetched"
old_log=$(awk '$12 ~ /wt:/' "$CL")
is "$(grep -c 'wait:[a-z]*/poisson/' <<<"$old_log")" "$(grep -c 'wt:' <<<"$old_log")" \
  "priors off: every wait is poisson's"
p1=$(pool)
is "$p1" "- -" "priors off: the learned state holds no pool"
sqlite3 "$DB" "SELECT url FROM uris ORDER BY url" >"$T/old.uris"
sqlite3 "$DB" "SELECT url, visits FROM uris WHERE visits > 0 ORDER BY url" >"$T/old.visits"
diag "priors off: $(wc -l <"$T/old.uris") URIs, $(wc -l <"$T/old.visits") visited, $old_lines crawl.log lines"

# ---- 2: the new default, same state directory ------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=6s >"$T/new.out" 2>"$T/new.err"
is "$?" 0 "new default: the crawl resumes and stops at max-time, exit 0"
unlike "$(cat "$T/new.err")" "kria: (warning|error|crit|alert|emerg)|runtime error|Sanitizer" \
  "new default: nothing logged as a warning or an error"
like "$(cat "$T/new.err")" "learned state: 1 hosts loaded \\(0 refused\\)" \
  "new default: run 1's learned state loaded"
sqlite3 "$DB" "SELECT url FROM uris ORDER BY url" >"$T/new.uris"
is "$(comm -23 "$T/old.uris" "$T/new.uris" | wc -l)" 0 "new default: every URI of run 1 is still in the state database"
# visits only grow: no URI of run 1 lost its count (joined on the URL)
lost=$(sqlite3 "$DB" "SELECT url, visits FROM uris WHERE visits > 0 ORDER BY url" |
  awk -F'|' 'NR == FNR { old[$1] = $2; next } { now[$1] = $2 }
    END { for (u in old) if (!(u in now) || now[u] + 0 < old[u] + 0) n++; print n + 0 }' "$T/old.visits" -)
is "$lost" 0 "new default: no visited URI lost its visits"
page_fetches $((old_lines + 1)) >"$T/new.pages"
is "$(comm -23 "$T/old.pages" "$T/new.pages" | tr '\n' ' ')" "" "new default: every page of run 1 is revisited"
new_log=$(tail -n +$((old_lines + 1)) "$CL" | awk '$12 ~ /wt:/')
is "$(grep -c 'wait:[a-z]*/poisson/' <<<"$new_log")" "$(grep -c 'wt:' <<<"$new_log")" \
  "new default: every wait is poisson's"
# each page's first line in run 2: its visit count goes on from run 1
firsts=$(awk '!seen[$4]++' <<<"$new_log")
bad=$(awk -F'|' 'NR == FNR { old[$1] = $2; next }
  { if (!match($12, /,[0-9]+vis,/)) { n++; next }
    v = substr($12, RSTART + 1, RLENGTH - 5) + 0
    if (!($4 in old) || v <= old[$4] + 0) n++ }
  END { print n + 0 }' "$T/old.visits" FS=' ' - <<<"$firsts")
is "$bad" 0 "new default: each page's first wait continues its visit count"
p2=$(pool)
like "$p2" '^[0-9.]+ [1-9][0-9]*$' "new default: the stored learned state holds a pool with templates ($p2)"
diag "new default, first waits: $(awk '{ sub(/.*wait:/, "", $12); print $12 }' <<<"$firsts" | sort | uniq -c | tr '\n' ';')"

kts_stop
done_testing
