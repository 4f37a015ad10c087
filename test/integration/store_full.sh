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
#    while it runs and removed at exit.
# TAP; run by scripts/run-tests.sh (KRIA, KTS, KRIA_BUILD set).
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

# wait_until SECONDS CMD...: CMD every 50 ms until it succeeds or time runs out
wait_until() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  while ((SECONDS <= end)); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

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
STATE=$T/full/state
echo "$KTS_URL/p/0" >"$T/seeds.txt"
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
enabled = false
[status]
listen = 127.0.0.1:0
EOF
"$KRIA" crawl -c "$T/crawl.conf" 2>"$T/kria.err" &
KPID=$!
_pids+=("$KPID")
wait_until 15 test -s "$STATE/status.addr" || { diag "$(tail -5 "$T/kria.err")"; bail "no status.addr"; }
ADDR=$(cat "$STATE/status.addr")
st() { curl -s -m 5 "http://$ADDR/status" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }
lines() { wc -l <"$STATE/logs/crawl.log" 2>/dev/null || echo 0; }
check "the crawl gets going (30 URIs logged)" wait_until 30 bash -c "[ \$(wc -l <'$STATE/logs/crawl.log') -ge 30 ]"
check "a reserve file is kept in the state directory" test -s "$STATE/kria.reserve"
is "$(st "d['store']['disk_held']")" false "/status: store.disk_held false"

# ---- full ---------------------------------------------------------------------------------
# fill it: nothing more can be written once dd stops (ENOSPC)
dd if=/dev/zero of="$T/full/filler" bs=64k 2>"$T/dd.err"
check "the state disk is full (dd: no space left)" grep -q 'No space left on device' "$T/dd.err"
check "one clear error: no new fetches until space is free" \
  wait_until 10 grep -q 'state directory: only [0-9]* bytes free: no new fetches until [0-9]* bytes are free' "$T/kria.err"
check "the reserve is released for the fetches still running" test ! -e "$STATE/kria.reserve"
is "$(st "d['store']['disk_held']")" true "/status: store.disk_held true"
check "running fetches finish (in_flight 0)" wait_until 10 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/status | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"in_flight\"])')\" = 0 ]"
n1=$(grep -c 'still [0-9]* bytes free' "$T/kria.err")
r1=$(grep -c 'GET ' "$T/kts.log")
check "the guard looks again" wait_until 5 bash -c "[ \$(grep -c 'still [0-9]* bytes free' '$T/kria.err') -ge $((n1 + 2)) ]"
is "$(grep -c 'GET ' "$T/kts.log")" "$r1" "no request to the server while held"
is "$(grep -c 'no new fetches until' "$T/kria.err")" 1 "the error is logged once"
is "$(sqlite3 "$STATE/kria.db" 'pragma quick_check')" ok "the store is consistent while held"
done1=$(sqlite3 "$STATE/kria.db" 'select count(*) from uris where state = 1')
check "what was committed is there ($done1 visited)" test "$done1" -ge 30
is "$(st "d['store']['disk_lows']")" 1 "/status: store.disk_lows 1"

# ---- space returns ----------------------------------------------------------------------------
rm -f "$T/full/filler"
check "says fetches resume once space is back" wait_until 10 grep -q 'bytes free again: fetches resume' "$T/kria.err"
check "the reserve is allocated again" test -s "$STATE/kria.reserve"
timeout 60 tail -s 0.05 --pid="$KPID" -f /dev/null || kill -KILL "$KPID"
wait "$KPID"
is "$?" 0 "the crawl completes"
check "the reserve is removed at exit" test ! -e "$STATE/kria.reserve"
is "$(sqlite3 "$STATE/kria.db" 'select count(*) from uris where state = 1')" 301 "every page (and robots.txt) visited"
is "$(awk '{print $4}' "$STATE/logs/crawl.log" | sort | uniq -d | wc -l)" 0 "no URI logged twice"
sqlite3 "$STATE/kria.db" 'select url from uris where state = 1' | sort >"$T/visited"
awk '{print $4}' "$STATE/logs/crawl.log" | sort -u >"$T/logged"
is "$(comm -23 "$T/visited" "$T/logged" | wc -l)" 0 "every visited URI has its crawl.log line"
is "$(grep -c 'cannot\|stopping the crawl' "$T/kria.err")" 0 "no write failed, the crawl never stopped"
kts_stop
umount "$T/full"
trap _lib_cleanup EXIT

done_testing
