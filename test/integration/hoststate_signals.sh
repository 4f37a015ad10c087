#!/usr/bin/env bash
# The informed priors' pool and the change signals' reliability survive a
# restart in the host's learned state (kria/hoststate.h sections 4 and 5).
# One kts host: a sitemap that changes on every request lists four pages
# with a lastmod in 2099 (always news), and the pages change on every
# request, so each visit a claim pulls forward verifies it (a TP);
# adaptive.informed-priors = true feeds every visit to the host's pool.
#   1  the crawl runs until /hosts shows 4 verified lastmod claims;
#      SIGTERM; kria report hosts -s (offline) shows the record: the
#      signals' verified count, precision and recall, the pool's members;
#   2  restart with kts down (nothing can move): /hosts shows exactly
#      those signals, where a fresh start shows none;
#   3  kts back, the crawl goes on: once the stored signals moved past
#      run 1's, the stored pool still has run 1's members (no URI is new:
#      a pool started over would have none);
#   4  the pool's section damaged (its version byte): the host's pool
#      starts fresh with a warning and a count, its signals still load,
#      and the crawl runs;
#   5  the signals' section rewritten in the layout kria wrote before the
#      WebSub source (two sources, 42 bytes): read whole, offline and by
#      the crawl (only run 4's pool is still damaged).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

{
  no_robots_route
  sitemap_route --changing /sitemap.xml \
    "<loc>http://127.0.0.1:{port}/p/"{0,1,2,3}"</loc><lastmod>2099-01-01</lastmod>"
  cat <<'EOF'
[site "/p/"]
pages = 4
links = 0
change-every = 1
body-size = 1K
EOF
} >"$T/routes.ini"
kts_start "$T/routes.ini" || bail "kts did not start"
PORT=$KTS_PORT
printf '%s\n' "$KTS_URL/sitemap.xml" >"$T/seeds.txt"
{
  revisit_conf "$T/seeds.txt" "$T/state"
  cat <<EOF
[status]
listen = 127.0.0.1:0
[adaptive]
informed-priors = true
learned-state-interval = 1s
EOF
  wait_conf sitemap '^application/xml' 1s changed-factor=1
  wait_conf default '' 30s
} >"$T/crawl.conf"

start() { kria_bg "$1" "$T/crawl.conf"; } # start NAME
stop() { kria_term "$1"; }                    # stop NAME: SIGTERM, exit 0
# live: "verified precision recall" of the lastmod signals on /hosts
live() {
  host_fields live "$T/state" h.signals.lastmod.verified h.signals.lastmod.precision \
    h.signals.lastmod.recall
}
# stored: "verified precision recall members" of the record (offline)
stored() {
  host_fields stored "$T/state" h.learned.signals.lastmod.verified \
    h.learned.signals.lastmod.precision h.learned.signals.lastmod.recall h.learned.prior_members
}
# same "a b c" "a b c ...": the first three numbers equal within 1e-5
same() { same_numbers 3 "$1" "$2"; }
# relive NAME WANT WHAT: a run NAME that only starts and stops; a test
# that its live signals are WANT's ("NAME: WHAT (WANT)")
relive() {
  start "$1"
  local l
  l=$(live)
  diag "$1 live: $l"
  check "$1: $3 ($2)" same "$l" "$2"
  stop "$1"
}
# edit_section TAG CODE: run the Python CODE on the host's stored record
# at its section TAG: b (the record, a bytearray: CODE leaves the new
# one there), at (the section's tag byte), p (its payload), n (the
# payload's length); fails when there is no such section.
edit_section() {
  python3 - "$T/state/kria.db" "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(b,) = db.execute("SELECT learned FROM hosts WHERE learned IS NOT NULL").fetchone()
b, i = bytearray(b), 1
while i < len(b):  # sections: tag, varint length, payload
    at, tag, n = i, b[i], b[i + 1] & 0x7f
    i += 2
    if b[i - 1] & 0x80:
        n |= b[i] << 7
        i += 1
    if tag == int(sys.argv[2]):
        p = i
        exec(sys.argv[3])
        break
    i += n
else:
    sys.exit(1)
db.execute("UPDATE hosts SET learned = ? WHERE learned IS NOT NULL", (bytes(b),))
db.commit()
PY
}
verified_at_least() { read -r v _ <<<"$(live)"; [ "$v" != - ] && [ "$v" -ge "$1" ]; }

# ---- 1: learn, clean stop -----------------------------------------------------
start run1
check "run 1: /hosts shows 4 verified lastmod claims" wait_until 60 verified_at_least 4
stop run1
S1=$(stored)
diag "run 1 stored (verified precision recall members): $S1"
read -r v1 _ _ m1 <<<"$S1"
check "run 1: the record holds the signals and the pool ($S1)" \
  node -e 'const [v, p, r, m] = process.argv[1].split(" ").map(Number);
    process.exit(v >= 4 && p > 0.5 && m >= 5 ? 0 : 1)' "$S1"
kts_stop

# ---- 2: restart, nothing to visit: the signals are the stored ones ------------
relive run2 "$S1" "/hosts shows the signals of the record"
like "$(cat "$T/run2.err")" "learned state: 1 hosts loaded \\(0 refused\\)" "run 2: the record loaded"

# ---- 3: go on: the pool continues ----------------------------------------------
kts_start "$T/routes.ini" --port "$PORT" || bail "kts did not start again on $PORT"
# run 2's refused connections backed the host and its URIs off: forget
# them, so that run 3 fetches at once
sqlite3 "$T/state/kria.db" "UPDATE hosts SET backoff_level = 0, backoff_until = 0, fail_streak = 0;
  UPDATE uris SET next_at = 0, retries = 0"
start run3
moved() { S3=$(stored); read -r v _ <<<"$S3"; [ "$v" != - ] && [ "$v" -gt "$v1" ]; }
check "run 3: the stored signals move past $v1 verified" wait_until 60 moved
stop run3
S3=$(stored)
diag "run 3 stored: $S3"
read -r _ _ _ m3 <<<"$S3"
is "$m3" "$m1" "run 3: the stored pool has run 1's members (continued, not started over)"
kts_stop

# ---- 4: the pool's section damaged -----------------------------------------------
edit_section 4 'b[p] = 0x7f  # the pool own version byte' || bail "could not damage the pool section"
like "$("$KRIA" report hosts -s "$T/state" --json 2>&1)" '"damaged_sections":true' \
  "report hosts -s names the damaged section"
relive run4 "$S3" "the signals still load"
like "$(cat "$T/run4.err")" "learned state: the informed priors' pool is unreadable: it starts fresh" \
  "run 4: the damaged pool is logged"
like "$(cat "$T/run4.err")" "learned state: 1 hosts loaded \\(0 refused\\).*, 1 damaged sections dropped" \
  "run 4: the host loaded, the section counted"

# ---- 5: the signals' section in the layout before WEBSUB ---------------------------
S4=$(stored)
# today's 62 bytes (3 sources) -> tag, length 42, version, 2, lastmod and feed
edit_section 5 'assert n == 62 and b[p + 1] == 3
b[at:p + n] = bytes([5, 42, b[p], 2]) + b[p + 2:p + 42]' || bail "could not rewrite the signals section"
S5=$(stored)
check "the record of two sources reads as it was ($S4)" same "$S5" "$S4"
like "$("$KRIA" report hosts -s "$T/state" --json 2>&1)" '"signals":\{"lastmod":\{[^}]*\},"feed":\{[^}]*\},"websub":\{"seen":0,"verified":0' \
  "report hosts -s shows the two sources and a fresh websub one"
relive run5 "$S4" "the crawl loads its signals"
unlike "$(cat "$T/run5.err")" "change signals.* unreadable" "run 5: the signals are not called unreadable"
like "$(cat "$T/run5.err")" "learned state: 1 hosts loaded \\(0 refused\\).*, 1 damaged sections dropped" \
  "run 5: the pool of run 4 alone still counted damaged"
done_testing
