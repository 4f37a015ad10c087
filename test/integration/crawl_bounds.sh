#!/usr/bin/env bash
# Bounds of an endless crawl (crawl.revisit = true), kria against kts:
#  - a site that grows without end (a calendar trap: every page links to
#    two new ones) stays within limits.max-uris-per-host: the host holds
#    exactly the cap in URIs, the links past it are refused and counted,
#    and kria report hosts (offline, text and JSON) shows the count;
#  - a page answering 410 is retired after crawl.retire-after visits:
#    kept with its visits, state "retired" in kria report uri and counted
#    in kria status; with crawl.retired-wait = 0 it is never requested
#    again, while a healthy page beside it goes on being revisited.
# The crawl runs until the state database shows both (bounded polling),
# then gets SIGTERM.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || { skip "sqlite3 not installed" "bounds"; done_testing; }

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[route "/"]
body = <a href="/cal/0">calendar</a> <a href="/dead">dead</a> <a href="/ok">ok</a>

[route "/cal/*"]
links = 2
link-prefix = {path}/

[route "/dead"]
status = 410
body = gone for good

[route "/ok"]
body = <p>fine</p>
EOF
kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds.txt"
cat >"$T/c.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
revisit = true
retire-after = 2
retired-wait = 0
log-level = info
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[limits]
max-uris-per-host = 20
max-time = 60s
[store]
commit-interval = 10ms
[wait "all"]
initial-wait = 1s
min-wait = 1s
max-wait = 2s
default-wait = 1s
EOF
DB="$T/state/kria.db"
q() { sqlite3 -readonly "$DB" "$1" 2>/dev/null; }

"$KRIA" crawl -c "$T/c.conf" >"$T/crawl.out" 2>"$T/crawl.err" &
kpid=$!
_pids+=("$kpid")
# until /dead is retired, links were refused and /ok revisited (bounded: 60 s)
for _ in $(seq 1200); do
  [ "$(q "select state from uris where url like '%/dead'")" = 5 ] &&
    [ "$(q "select refused > 0 from hosts where name like '127.0.0.1:%'")" = 1 ] &&
    [ "$(q "select visits >= 2 from uris where url like '%/ok'")" = 1 ] && break
  kill -0 "$kpid" 2>/dev/null || break
  sleep 0.05
done
kill -TERM "$kpid" 2>/dev/null
timeout 10 tail -s 0.05 --pid="$kpid" -f /dev/null
wait "$kpid"
is "$?" 0 "the crawl exits 0 on SIGTERM"
kts_stop

# ---- the cap ----------------------------------------------------------------------
is "$(q 'select count(*) from uris')" 20 "the growing site holds exactly max-uris-per-host URIs"
refused=$(q "select refused from hosts")
check "links past the cap were refused and counted ($refused)" test "${refused:-0}" -gt 0
# 20 = robots.txt, /, /dead, /ok and 16 calendar pages
cal=$(grep -o 'GET /cal/[^ ]*' "$T/kts.log" | sort -u | wc -l)
is "$cal" 16 "no calendar page beyond the cap was requested"
"$KRIA" report hosts -s "$T/state" >"$T/hosts.txt" 2>&1
like "$(head -1 "$T/hosts.txt")" "retired +refused" "kria report hosts has retired and refused columns"
like "$(sed -n 2p "$T/hosts.txt")" " 1 +$refused\$" "kria report hosts shows 1 retired and $refused refused"
"$KRIA" report hosts -s "$T/state" --json >"$T/hosts.json" 2>&1
like "$(cat "$T/hosts.json")" "\"retired\":1,\"refused\":$refused," "report hosts --json counts them too"

# ---- the page that answers 410 ---------------------------------------------------------
"$KRIA" report uri "$KTS_URL/dead" -s "$T/state" >"$T/dead.txt" 2>&1
like "$(cat "$T/dead.txt")" "state +retired" "kria report uri shows the 410 page retired"
like "$(cat "$T/dead.txt")" "next visit +never" "retired-wait = 0: never visited again"
like "$(cat "$T/dead.txt")" "visits +2," "kept with its 2 visits"
is "$(grep -c 'GET /dead ' "$T/kts.log")" 2 "the 410 page was requested exactly retire-after times"
ok_n=$(grep -c 'GET /ok ' "$T/kts.log")
check "the healthy page beside it was revisited ($ok_n requests)" test "$ok_n" -ge 2
"$KRIA" status -s "$T/state" >"$T/status.txt" 2>&1
like "$(cat "$T/status.txt")" ", 1 retired" "kria status counts the retired URI"
like "$(cat "$T/crawl.err")" "URI retired \(gone\): .*/dead" "the retirement is logged"

done_testing
