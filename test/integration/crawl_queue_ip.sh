#!/usr/bin/env bash
# politeness.queue-assignment = ip: virtual hosts on one address share one
# host queue and one politeness clock. Two names (a.test, b.test) on
# 127.0.0.1 and one (c.test) on 127.0.0.2, through kria's hosts file, two
# kts (--log-times), politeness a fixed 300 ms:
#  - by ip: after the first robots.txt fetches (made before the addresses
#    are known, in the names' own queues) every request to 127.0.0.1 is at
#    least ~300 ms after the one before, a.test's and b.test's together;
#    the state has queues 127.0.0.1 (both names' URIs) and 127.0.0.2;
#  - by host (the default), the same crawl has a.test and b.test requests
#    closer than that: two queues, two clocks.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
status = 404
body = none

[site]
pages = 6
links = 2
body-size = 1K
EOF
kts_start "$T/routes.ini" --log "$T/kts1.log" --log-times || bail "kts did not start"
P1=$KTS_PORT
K1=$KTS_PID
kts_start "$T/routes.ini" --host 127.0.0.2 --log "$T/kts2.log" --log-times ||
  bail "kts did not start on 127.0.0.2"
P2=$KTS_PORT
K2=$KTS_PID
printf '127.0.0.1 a.test b.test\n127.0.0.2 c.test\n' >"$T/hosts"
printf 'http://a.test:%s/p/0\nhttp://b.test:%s/p/0\nhttp://c.test:%s/p/0\n' \
  "$P1" "$P1" "$P2" >"$T/seeds.txt"

# run NAME ASSIGNMENT: a snapshot crawl into $T/NAME
run() {
  cat >"$T/$1.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $T/$1
revisit = false
[dns]
hosts-file = $T/hosts
[politeness]
min-delay = 300ms
max-delay = 300ms
delay-factor = 0
queue-assignment = $2
[store]
commit-interval = 10ms
EOF
  : >"$T/kts1.log"
  : >"$T/kts2.log"
  timeout 60 "$KRIA" crawl -c "$T/$1.conf" >"$T/$1.out" 2>"$T/$1.err"
  RC=$?
}
# gaps LOG SKIP: ms between consecutive requests, after the first SKIP
gaps() {
  sed -n 's/^t=\([0-9]*\) .*/\1/p' "$1" | sort -n |
    awk -v s="$2" 'NR > s + 1 {print $1 - prev} {prev = $1}'
}

run ip ip
is "$RC" 0 "by ip: the snapshot crawl exits 0"
is "$(grep -c 'GET /p/' "$T/kts1.log")" 12 "by ip: 127.0.0.1 served both names' 6 pages"
is "$(grep -c 'GET /p/' "$T/kts2.log")" 6 "by ip: 127.0.0.2 served c.test's 6 pages"
# robots.txt of a and b (their own queues) and the first page that
# follows at once: three requests before the shared clock holds
close=$(gaps "$T/kts1.log" 3 | awk '$1 < 250' | wc -l)
is "$close" 0 "by ip: then every request to 127.0.0.1 waits the politeness delay after the last"
diag "gaps (ms): $(gaps "$T/kts1.log" 0 | tr '\n' ' ')"
hosts=$("$KRIA" report hosts -s "$T/ip" --json 2>&1)
succeeded() { grep -o "\"host\":\"$1\"[^}]*" <<<"$hosts" | grep -o '"succeeded":[0-9]*' | grep -o '[0-9]*$'; }
is "$(succeeded 127.0.0.1)" 12 "by ip: a.test's and b.test's 12 pages came from the queue of 127.0.0.1"
is "$(succeeded 127.0.0.2)" 6 "by ip: c.test's 6 from the queue of 127.0.0.2"
is "$(succeeded a.test)/$(succeeded b.test)" 1/1 "by ip: only robots.txt from the names' own queues"

run host host
is "$RC" 0 "by host: the snapshot crawl exits 0"
close=$(gaps "$T/kts1.log" 3 | awk '$1 < 250' | wc -l)
isnt "$close" 0 "by host: a.test and b.test requests come closer than the delay (two clocks)"
diag "gaps (ms): $(gaps "$T/kts1.log" 0 | tr '\n' ' ')"
kts_stop "$K2"
kts_stop "$K1"
done_testing
