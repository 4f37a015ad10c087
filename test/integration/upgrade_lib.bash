# upgrade_lib.bash — what the tests of a changed default (upgrade_*.sh)
# share, sourced after lib.sh: one kts host (pages changing on every
# request, pages that never change, images, all with honest validators
# and Last-Modified), a crawl configuration whose evaluators set no
# policy key, the first run's snapshot and the checks every resumed run
# must pass. Not named *.sh: test/run.sh runs those.

# upgrade_site: kts started on the site, $T/crawl.conf written; sets CL
# (crawl.log) and DB (the state database).
upgrade_site() {
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
  # max-wait 3 s: every URI is due again within run 2, whatever its wait
  {
    revisit_conf "$T/seeds.txt" "$T/state" 50ms
    wait_conf text '^text/' 1s default-wait=1s max-wait=3s
    wait_conf image '^image/' 1s default-wait=1s max-wait=3s
  } >"$T/crawl.conf"
  CL="$T/state/logs/crawl.log"
  DB="$T/state/kria.db"
}

# page_fetches FROM: the URLs crawl.log has a wait for from line FROM on
page_fetches() { tail -n +"$1" "$CL" | awk '$12 ~ /wt:/ { print $4 }' | sort -u; }

# upgrade_first_run WHAT RC: run 1 (already made, exit status RC) stopped
# at max-time and fetched every page; its crawl.log length (old_lines),
# pages, URIs and visit counts kept for the resumed run.
upgrade_first_run() {
  is "$2" 0 "$1: the crawl stops at max-time, exit 0"
  old_lines=$(wc -l <"$CL")
  page_fetches 1 >"$T/old.pages"
  is "$(wc -l <"$T/old.pages")" 11 "$1: the root, 4 + 4 pages and 2 images fetched"
  sqlite3 "$DB" "SELECT url FROM uris ORDER BY url" >"$T/old.uris"
  sqlite3 "$DB" "SELECT url, visits FROM uris WHERE visits > 0 ORDER BY url" >"$T/old.visits"
  diag "$1: $(wc -l <"$T/old.uris") URIs, $(wc -l <"$T/old.visits") visited, $old_lines crawl.log lines"
}

# upgrade_resumed RC: run 2 on the same state directory (exit status RC,
# stderr in $T/new.err) lost nothing: exit 0, no warning or error, every
# URI of run 1 still there, no visit count down, every page revisited;
# sets new_log (run 2's crawl.log lines with a wait) and firsts (each
# page's first of them).
upgrade_resumed() {
  is "$1" 0 "new default: the crawl resumes and stops at max-time, exit 0"
  unlike "$(cat "$T/new.err")" "kria: (warning|error|crit|alert|emerg)|runtime error|Sanitizer" \
    "new default: nothing logged as a warning or an error"
  sqlite3 "$DB" "SELECT url FROM uris ORDER BY url" >"$T/new.uris"
  is "$(comm -23 "$T/old.uris" "$T/new.uris" | wc -l)" 0 "new default: every URI of run 1 is still in the state database"
  # visits only grow: no URI of run 1 lost its count (joined on the URL)
  local lost
  lost=$(sqlite3 "$DB" "SELECT url, visits FROM uris WHERE visits > 0 ORDER BY url" |
    awk -F'|' 'NR == FNR { old[$1] = $2; next } { now[$1] = $2 }
      END { for (u in old) if (!(u in now) || now[u] + 0 < old[u] + 0) n++; print n + 0 }' "$T/old.visits" -)
  is "$lost" 0 "new default: no visited URI lost its visits"
  page_fetches $((old_lines + 1)) >"$T/new.pages"
  is "$(comm -23 "$T/old.pages" "$T/new.pages" | tr '\n' ' ')" "" "new default: every page of run 1 is revisited"
  new_log=$(tail -n +$((old_lines + 1)) "$CL" | awk '$12 ~ /wt:/')
  is "$(grep -c 'wait:[a-z]*/poisson/' <<<"$new_log")" "$(grep -c 'wt:' <<<"$new_log")" \
    "new default: every wait is poisson's"
  firsts=$(awk '!seen[$4]++' <<<"$new_log")
}

# upgrade_bad_firsts [EXTRA]: pages whose first wait in run 2 does not
# continue its visit count from run 1 (or whose line matches the awk
# regex EXTRA too)
upgrade_bad_firsts() {
  awk -F'|' -v extra="${1:-}" 'NR == FNR { old[$1] = $2; next }
    { if (!match($12, /,[0-9]+vis,/)) { n++; next }
      v = substr($12, RSTART + 1, RLENGTH - 5) + 0
      if (!($4 in old) || v <= old[$4] + 0 || (extra != "" && $12 ~ extra)) n++ }
    END { print n + 0 }' "$T/old.visits" FS=' ' - <<<"$firsts"
}
