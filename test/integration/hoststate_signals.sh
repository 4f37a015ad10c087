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

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[route "/sitemap.xml"]
content-type = application/xml
change-every = 1
body = <?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
body = <!-- version {version} -->
body = <url><loc>http://127.0.0.1:{port}/p/0</loc><lastmod>2099-01-01</lastmod></url>
body = <url><loc>http://127.0.0.1:{port}/p/1</loc><lastmod>2099-01-01</lastmod></url>
body = <url><loc>http://127.0.0.1:{port}/p/2</loc><lastmod>2099-01-01</lastmod></url>
body = <url><loc>http://127.0.0.1:{port}/p/3</loc><lastmod>2099-01-01</lastmod></url></urlset>

[site "/p/"]
pages = 4
links = 0
change-every = 1
body-size = 1K
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
PORT=$KTS_PORT
printf '%s\n' "$KTS_URL/sitemap.xml" >"$T/seeds.txt"
cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[store]
commit-interval = 10ms
[status]
listen = 127.0.0.1:0
[adaptive]
informed-priors = true
learned-state-interval = 1s
[wait "sitemap"]
content-type = ^application/xml
initial-wait = 1s
min-wait = 1s
changed-factor = 1
[wait "default"]
initial-wait = 30s
min-wait = 30s
EOF

start() { # start NAME: kria crawl in the background (its own pid)
  rm -f "$T/state/status.addr"
  "$KRIA" crawl -c "$T/crawl.conf" >"$T/$1.out" 2>"$T/$1.err" &
  KPID=$!
  _pids+=("$KPID")
  wait_until 30 test -s "$T/state/status.addr" || bail "$1: no status.addr: $(tail -3 "$T/$1.err")"
}
stop() { # stop NAME: SIGTERM, exit 0
  kill -TERM "$KPID"
  wait "$KPID"
  is "$?" 0 "$1: SIGTERM, exit 0"
}
# live: "verified precision recall" of the lastmod signals on /hosts
live() {
  curl -s "http://$(cat "$T/state/status.addr")/hosts" | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const h = JSON.parse(s).hosts[0] || {}, g = (h.signals || {}).lastmod || {};
      console.log([g.verified ?? "-", g.precision ?? "-", g.recall ?? "-"].join(" "));
    })'
}
# stored: "verified precision recall members" of the record (offline)
stored() {
  "$KRIA" report hosts -s "$T/state" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const l = (JSON.parse(s).hosts[0] || {}).learned || {}, g = (l.signals || {}).lastmod || {};
      console.log([g.verified ?? "-", g.precision ?? "-", g.recall ?? "-",
                   l.prior_members ?? "-"].join(" "));
    })'
}
# same "a b c" "a b c ...": the first three numbers equal within 1e-5
same() {
  node -e 'const a = process.argv[1].split(" "), b = process.argv[2].split(" ");
    for (let i = 0; i < 3; i++) { const x = +a[i], y = +b[i];
      if (!(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(x)))) process.exit(1); }' "$1" "$2"
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
start run2
L2=$(live)
diag "run 2 live: $L2"
check "run 2: /hosts shows the signals of the record ($S1)" same "$L2" "$S1"
stop run2
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
python3 - "$T/state/kria.db" <<'PY' || bail "could not damage the pool section"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(b,) = db.execute("SELECT learned FROM hosts WHERE learned IS NOT NULL").fetchone()
b, i = bytearray(b), 1
while i < len(b):  # sections: tag, varint length, payload
    tag, n = b[i], b[i + 1] & 0x7f
    i += 2
    if b[i - 1] & 0x80:
        n |= b[i] << 7
        i += 1
    if tag == 4:
        b[i] = 0x7f  # the pool's own version byte
        break
    i += n
else:
    sys.exit(1)
db.execute("UPDATE hosts SET learned = ? WHERE learned IS NOT NULL", (bytes(b),))
db.commit()
PY
like "$("$KRIA" report hosts -s "$T/state" --json 2>&1)" '"damaged_sections":true' \
  "report hosts -s names the damaged section"
start run4
L4=$(live)
diag "run 4 live: $L4"
check "run 4: the signals still load ($S3)" same "$L4" "$S3"
stop run4
like "$(cat "$T/run4.err")" "learned state: the informed priors' pool is unreadable: it starts fresh" \
  "run 4: the damaged pool is logged"
like "$(cat "$T/run4.err")" "learned state: 1 hosts loaded \\(0 refused\\).*, 1 damaged sections dropped" \
  "run 4: the host loaded, the section counted"

# ---- 5: the signals' section in the layout before WEBSUB ---------------------------
S4=$(stored)
python3 - "$T/state/kria.db" <<'PY' || bail "could not rewrite the signals section"
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
    if tag == 5 and n == 62 and b[i + 1] == 3:
        old = bytes([5, 42, b[i], 2]) + bytes(b[i + 2:i + 42])  # lastmod and feed only
        b = b[:at] + old + b[i + n:]
        break
    i += n
else:
    sys.exit(1)
db.execute("UPDATE hosts SET learned = ? WHERE learned IS NOT NULL", (bytes(b),))
db.commit()
PY
S5=$(stored)
check "the record of two sources reads as it was ($S4)" same "$S5" "$S4"
like "$("$KRIA" report hosts -s "$T/state" --json 2>&1)" '"signals":\{"lastmod":\{[^}]*\},"feed":\{[^}]*\},"websub":\{"seen":0,"verified":0' \
  "report hosts -s shows the two sources and a fresh websub one"
start run5
L5=$(live)
diag "run 5 live: $L5"
check "run 5: the crawl loads its signals ($S4)" same "$L5" "$S4"
stop run5
unlike "$(cat "$T/run5.err")" "change signals.* unreadable" "run 5: the signals are not called unreadable"
like "$(cat "$T/run5.err")" "learned state: 1 hosts loaded \\(0 refused\\).*, 1 damaged sections dropped" \
  "run 5: the pool of run 4 alone still counted damaged"
done_testing
