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

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"

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
# max-wait 3 s: every URI is due again within run 2, whatever its policy
{
  revisit_conf "$T/seeds.txt" "$T/state" 50ms
  wait_conf text '^text/' 1s default-wait=1s max-wait=3s
  wait_conf image '^image/' 1s default-wait=1s max-wait=3s
} >"$T/crawl.conf"
CL="$T/state/logs/crawl.log"
DB="$T/state/kria.db"
# page_fetches FROM: the URLs crawl.log has a wait for from line FROM on
page_fetches() { tail -n +"$1" "$CL" | awk '$12 ~ /wt:/ { print $4 }' | sort -u; }

# ---- 1: the old default -------------------------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=5s \
  -o wait.text.policy=multiplicative -o wait.image.policy=multiplicative \
  -o adaptive.informed-priors=false >"$T/old.out" 2>"$T/old.err"
is "$?" 0 "old default: the crawl stops at max-time, exit 0"
old_lines=$(wc -l <"$CL")
page_fetches 1 >"$T/old.pages"
is "$(wc -l <"$T/old.pages")" 11 "old default: the root, 4 + 4 pages and 2 images fetched"
is "$(grep -c 'wait:[a-z]*/poisson' "$CL")" 0 "old default: no poisson wait"
like "$(grep -c 'wait:text/multiplicative' "$CL")" '^[1-9][0-9]*$' "old default: multiplicative waits"
check "old default: the images' too" grep -q 'wait:image/multiplicative' "$CL"
sqlite3 "$DB" "SELECT url FROM uris ORDER BY url" >"$T/old.uris"
sqlite3 "$DB" "SELECT url, visits FROM uris WHERE visits > 0 ORDER BY url" >"$T/old.visits"
diag "old default: $(wc -l <"$T/old.uris") URIs, $(wc -l <"$T/old.visits") visited, $old_lines crawl.log lines"

# ---- 2: the new default, same state directory ------------------------------------

timeout 60 "$KRIA" crawl -c "$T/crawl.conf" -o limits.max-time=6s >"$T/new.out" 2>"$T/new.err"
is "$?" 0 "new default: the crawl resumes and stops at max-time, exit 0"
unlike "$(cat "$T/new.err")" "kria: (warning|error|crit|alert|emerg)|runtime error|Sanitizer" \
  "new default: nothing logged as a warning or an error"
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
is "$(grep -c 'wait:[a-z]*/multiplicative' <<<"$new_log")" 0 "new default: no multiplicative wait"
is "$(grep -c 'wait:[a-z]*/poisson/' <<<"$new_log")" "$(grep -c 'wt:' <<<"$new_log")" \
  "new default: every wait is poisson's"
check "new default: the images' too" grep -q 'wait:image/poisson/' <<<"$new_log"
# each page's first line in run 2: its visit count goes on from run 1, and
# poisson estimated from the stored history, not from the prior
firsts=$(awk '!seen[$4]++' <<<"$new_log")
bad=$(awk -F'|' 'NR == FNR { old[$1] = $2; next }
  { if (!match($12, /,[0-9]+vis,/)) { n++; next }
    v = substr($12, RSTART + 1, RLENGTH - 5) + 0
    if (!($4 in old) || v <= old[$4] + 0 || $12 ~ /poisson\/prior/) n++ }
  END { print n + 0 }' "$T/old.visits" FS=' ' - <<<"$firsts")
is "$bad" 0 "new default: each page's first wait continues its count and reads its history"
diag "new default, first waits: $(awk '{ sub(/.*wait:/, "", $12); print $12 }' <<<"$firsts" | sort | uniq -c | tr '\n' ';')"

kts_stop
done_testing
