#!/usr/bin/env bash
# Change signals in a crawl against kts: a sitemap revisited every second
# (it changes on every request) lists two pages with a lastmod in 2099,
# always newer than their last visit. The page on localhost changes on
# every request, so each visit the claim pulls forward confirms it; the
# one on 127.0.0.1 never changes, so each such visit finds it unchanged.
# With adaptive.signal-probation = 2 the second host's claims stop
# pulling its page once two visits proved them false, while the first
# host's keep pulling theirs; the pages' own wait (30 s) would not bring
# either back within the run. crawl.log says sig:lastmod:tp|fp, the
# summary counts the signals, the ignored ones and the verdicts, and
# /hosts shows each host's signals (seen, verified, precision, recall).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

{
  sitemap_route --changing /sitemap.xml \
    "<loc>http://localhost:{port}/honest</loc><lastmod>2099-01-01</lastmod>" \
    "<loc>http://127.0.0.1:{port}/liar</loc><lastmod>2099-01-01</lastmod>"
  cat <<'EOF'
[route "/honest"]
host = localhost
change-every = 1
body = <p>version {version}</p>

[route "/liar"]
body = <p>the same every time</p>
EOF
} >"$T/routes.ini"

kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
# localhost is a seed too: the scope is the seeds' hosts
printf '%s\n' "$KTS_URL/sitemap.xml" "http://localhost:$KTS_PORT/honest" >"$T/seeds.txt"
{
  revisit_conf "$T/seeds.txt" "$T/state"
  cat <<EOF
[limits]
max-time = 6s
[status]
listen = 127.0.0.1:0
[adaptive]
signal-probation = 2
signal-precision = 0.3
EOF
  wait_conf sitemap '^application/xml' 1s changed-factor=1
  wait_conf default '' 30s
} >"$T/c.conf"
timeout 60 "$KRIA" crawl -c "$T/c.conf" >"$T/out" 2>"$T/err" &
KPID=$!
# /hosts while it runs: the liar's host has verified its two false claims
liar_shown() {
  curl -s "http://$(cat "$T/state/status.addr")/hosts" >"$T/hosts.json" 2>/dev/null &&
    python3 - "$T/hosts.json" <<'PY'
import json, sys
h = [x for x in json.load(open(sys.argv[1]))["hosts"] if x["host"].startswith("127.0.0.1")]
s = h[0]["signals"]["lastmod"] if h and h[0].get("signals") else None
sys.exit(0 if s and s["verified"] == 2 and s["seen"] >= 1 and s["precision"] < 0.3 else 1)
PY
}
wait_until 30 test -s "$T/state/status.addr" || bail "no status.addr: $(tail -3 "$T/err")"
check "/hosts: the liar's host, 2 claims verified false, precision < 0.3" wait_until 30 liar_shown
wait "$KPID"
is "$?" 0 "the crawl exits 0"
kts_stop_counting
n() { kts_count "$1"; }
CL="$T/state/logs/crawl.log"
diag "requests: sitemap $(n /sitemap.xml) honest $(n /honest) liar $(n /liar)"

check "the sitemap is revisited every second ($(n /sitemap.xml) >= 4)" test "$(n /sitemap.xml)" -ge 4
check "the changing page is pulled forward at each sitemap visit ($(n /honest) >= $(n /sitemap.xml) - 1)" \
  test "$(n /honest)" -ge "$(($(n /sitemap.xml) - 1))"
is "$(n /liar)" 3 "the page that never changes: its first visit and two pulls, then its host's claims are ignored"
like "$(awk '$4 ~ /\/honest$/' "$CL" | tail -1)" "sig:lastmod:tp" "the changing page's claims verify (sig:lastmod:tp)"
is "$(awk '$4 ~ /\/liar$/' "$CL" | grep -c 'sig:lastmod:fp')" 2 "the other page's two pulled visits say sig:lastmod:fp"
like "$(cat "$T/err")" "[1-9][0-9]* change signals \\([1-9][0-9]* ignored, [1-9][0-9]* confirmed, 2 false, 0 missed\\)" \
  "the summary counts the signals, the ignored ones and the verdicts"
done_testing
