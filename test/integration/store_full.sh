#!/usr/bin/env bash
# A full disk under the state directory (the SQLite store, its WAL and
# crawl.log), not only under the WARC directory (crawl_warc.sh has that):
# the state directory is a 16 MiB tmpfs this test mounts (root only;
# skipped clearly otherwise, unmounted at exit), the crawl of a kts site
# runs, then a filler file takes every free byte:
#  - one clear error line, /status store.disk_held, no new request to the
#    server while held (checked across two of the guard's once-a-second
#    looks), the store stays consistent (quick_check) with what was
#    committed;
#  - once the filler is gone: "fetches resume", the crawl completes, every
#    page visited exactly once in crawl.log, the reserve file is back
#    while it runs and removed at exit;
#  - all of it twice: WARC off, then WARC on in the same state directory
#    (then every visited URI also has its WARC record, the files check
#    out with warcio.js).
# TAP; run by test/run.sh (KRIA, KTS, KRIA_BUILD set).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] || bail "kria is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is not installed"
command -v curl >/dev/null || bail "curl is needed"

mkdir -p "$T/full"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=16m tmpfs "$T/full" 2>/dev/null; then
  skip "needs root and a tmpfs mount" "full disk under the state directory"
  done_testing
fi
trap 'umount "$T/full" 2>/dev/null; _lib_cleanup' EXIT


cat >"$T/site.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[site]
pages = 300
links = 3
body-size = 4K
seed = 11
EOF
kts_start "$T/site.ini" --log "$T/kts.log" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds.txt"
# Twice: WARC off (the store alone), then WARC on under the same state
# directory (records and commits compete for the freed reserve).
for warc in false true; do
  STATE=$T/full/state-$warc
  if [ "$warc" = true ]; then pfx="WARC on: "; else pfx=""; fi
  cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $STATE
revisit = false
log-level = info
[politeness]
min-delay = 20ms
max-delay = 20ms
delay-factor = 0
[store]
commit-interval = 10ms
[warc]
enabled = $warc
retry-interval = 200ms
[status]
listen = 127.0.0.1:0
EOF
  "$KRIA" crawl -c "$T/crawl.conf" 2>"$T/kria$warc.err" &
  KPID=$!
  _pids+=("$KPID")
  wait_until 15 test -s "$STATE/status.addr" || { diag "$(tail -5 "$T/kria$warc.err")"; bail "no status.addr"; }
  ADDR=$(cat "$STATE/status.addr")
  st() { curl -s -m 5 "http://$ADDR/status" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }
  lines() { wc -l <"$STATE/logs/crawl.log" 2>/dev/null || echo 0; }
  check "${pfx}the crawl gets going (30 URIs logged)" wait_until 30 bash -c "[ \$(wc -l <'$STATE/logs/crawl.log') -ge 30 ]"
  check "${pfx}a reserve file is kept in the state directory" test -s "$STATE/kria.reserve"
  is "$(st "d['store']['disk_held']")" false "${pfx}/status: store.disk_held false"

  # ---- full ---------------------------------------------------------------------------------
  # fill it to 128 KiB short of full: under the guard's low mark (1/32 of
  # the disk, 512 KiB here) but never at ENOSPC, so no COMMIT that began
  # before the guard's next look can hit a full disk (that race, a
  # disk filled to the last byte between the look and the COMMIT, stops
  # the crawl with the commit error: a known limit, not what this tests)
  avail=$(df --output=avail -B1 "$T/full" | tail -n 1)
  dd if=/dev/zero of="$T/full/filler" bs=64k count=$(((avail - 131072) / 65536)) 2>"$T/dd.err"
  check "${pfx}the state disk is filled to 128 KiB short of full (dd: no error)" test ! -s "$T/dd.err" -o -z "$(grep -v 'records\|bytes\|copied' "$T/dd.err")"
  check "${pfx}one clear error: no new fetches until space is free" \
    wait_until 10 grep -q 'state directory: only [0-9]* bytes free: no new fetches until [0-9]* bytes are free' "$T/kria$warc.err"
  check "${pfx}the reserve is released for the fetches still running" test ! -e "$STATE/kria.reserve"
  is "$(st "d['store']['disk_held']")" true "${pfx}/status: store.disk_held true"
  is "$(st "d['state']")" '"held"' "${pfx}/status: state held (not running)"
  check "${pfx}kria status says so" bash -c "curl -s -m 5 'http://$ADDR/status?format=text' | grep -q '^state disk  HELD'"
  check "${pfx}running fetches finish (in_flight 0)" wait_until 10 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/status | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"in_flight\"])')\" = 0 ]"
  n1=$(grep -c 'still [0-9]* bytes free' "$T/kria$warc.err")
  r1=$(grep -c 'GET ' "$T/kts.log")
  check "${pfx}the guard looks again" wait_until 5 bash -c "[ \$(grep -c 'still [0-9]* bytes free' '$T/kria$warc.err') -ge $((n1 + 2)) ]"
  is "$(grep -c 'GET ' "$T/kts.log")" "$r1" "${pfx}no request to the server while held"
  is "$(grep -c 'state directory: only' "$T/kria$warc.err")" 1 "${pfx}the error is logged once"
  is "$(sqlite3 "$STATE/kria.db" 'pragma quick_check')" ok "${pfx}the store is consistent while held"
  done1=$(sqlite3 "$STATE/kria.db" 'select count(*) from uris where state = 1')
  check "${pfx}what was committed is there ($done1 visited)" test "$done1" -ge 30
  is "$(st "d['store']['disk_lows']")" 1 "${pfx}/status: store.disk_lows 1"

  # ---- space returns ----------------------------------------------------------------------------
  rm -f "$T/full/filler"
  check "${pfx}says fetches resume once space is back" wait_until 10 grep -q 'bytes free again: fetches resume' "$T/kria$warc.err"
  check "${pfx}the reserve is allocated again" test -s "$STATE/kria.reserve"
  st_now=$(st "d['state']" 2>/dev/null)
  check "${pfx}/status: state no longer held ($st_now)" test "$st_now" != '"held"'
  timeout 60 tail -s 0.05 --pid="$KPID" -f /dev/null || kill -KILL "$KPID"
  wait "$KPID"
  is "$?" 0 "${pfx}the crawl completes"
  check "${pfx}the reserve is removed at exit" test ! -e "$STATE/kria.reserve"
  is "$(sqlite3 "$STATE/kria.db" 'select count(*) from uris where state = 1')" 301 "${pfx}every page (and robots.txt) visited"
  is "$(awk '{print $4}' "$STATE/logs/crawl.log" | sort | uniq -d | wc -l)" 0 "${pfx}no URI logged twice"
  sqlite3 "$STATE/kria.db" 'select url from uris where state = 1' | sort >"$T/visited"
  awk '{print $4}' "$STATE/logs/crawl.log" | sort -u >"$T/logged"
  is "$(comm -23 "$T/visited" "$T/logged" | wc -l)" 0 "${pfx}every visited URI has its crawl.log line"
  is "$(grep -c 'stopping the crawl\|while committing' "$T/kria$warc.err")" 0 "${pfx}no commit failed, the crawl never stopped"
  if [ "$warc" = true ]; then
    mapfile -t W < <(find "$STATE/warcs" -type f | sort)
    like "$(printf '%s\n' "${W[@]##*/}")" '\.warc\.gz$' "${pfx}WARC files closed"
    if command -v node >/dev/null && [ -f "$KRIA_TOP/test/integration/node_modules/warcio/package.json" ]; then
      (cd "$KRIA_TOP/test/integration" && node warclist.mjs "${W[@]}") |
        awk '$1 == "response" || $1 == "revisit" {print $3}' | sort -u >"$T/recorded"
      is "$(comm -23 "$T/visited" "$T/recorded" | wc -l)" 0 "${pfx}every visited URI has its WARC record"
      if (cd "$KRIA_TOP/test/integration" && node warccheck.mjs "${W[@]}") >"$T/wcheck.out" 2>&1; then
        ok "${pfx}the WARC files check out with warcio.js"
      else
        not_ok "${pfx}the WARC files check out with warcio.js"; diag "$(grep -m 5 error "$T/wcheck.out")"
      fi
    else
      skip "warcio.js not installed (npm ci in test/integration)" "WARC records checked"
    fi
  fi
  rm -rf "$STATE"
done
kts_stop
umount "$T/full"
trap _lib_cleanup EXIT

done_testing
