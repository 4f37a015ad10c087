#!/usr/bin/env bash
# `kria crawl` end to end against kts:
#  - a snapshot crawl (crawl.revisit = false) of a generated site with a
#    robots.txt, embeds (img, stylesheet, a CSS url()), a redirect and a
#    link off the host: robots.txt first, disallowed paths never requested
#    (kts's request log) and logged -9998, embeds and the redirect target
#    fetched with hop paths E and LR, the off-host link never requested,
#    every page exactly once, crawl.log in Heritrix's 12 columns, exit 0;
#    a restart on the finished state fetches nothing and exits 0;
#  - politeness: with min-delay 200 ms the requests kts logs (--log-times)
#    are at least 200 ms apart;
#  - revisit mode with 1 s waits, bounded by limits.max-time: every
#    page fetched at least twice, revisits conditional (If-None-Match);
#  - SIGTERM while a fetch hangs: it gets 4 s, then kria exits 0 within 5 s;
#  - bad configuration, bad -o, no seeds, a foreign state database: exit 2
#    with a message naming the problem; no -c: exit 64.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow: /private/\n

[route "/"]
body = <html><head><link rel="stylesheet" href="/style.css"></head><body>
body = <a href="/p/0">pages</a> <a href="/private/a">private</a> <a href="/private/b">b</a>
body = <img src="/img/x.png"> <a href="/redir">moved</a>
body = <a href="http://localhost:{port}/outside">elsewhere</a></body></html>

[route "/style.css"]
content-type = text/css
body = body { background: url(/bg.png) }

[route "/bg.png"]
content-type = image/png
body = png

[route "/img*"]
content-type = image/png
body = png

[route "/redir"]
redirect = /target

[route "/target"]
body = <p>the target</p>

[route "/private/*"]
body = secret

[site]
pages = 30
links = 3
body-size = 4K
etag = auto
EOF

# crawl_conf FILE STATE SEEDS [extra lines...]: a config for one run.
crawl_conf() {
  local f=$1 state=$2 seeds=$3; shift 3
  {
    echo "[http]"
    echo "allow-private-addresses = true"
    echo "[crawl]"
    echo "seeds = $seeds"
    echo "state-dir = $state"
    echo "revisit = false"
    echo "[politeness]"
    echo "min-delay = 0"
    echo "max-delay = 0"
    echo "delay-factor = 0"
    echo "[store]"
    echo "commit-interval = 10ms"
    local l
    for l in "$@"; do echo "$l"; done
  } >"$f"
}

# kcrawl CONF [ARGS...]: run kria crawl (bounded to 60 s); RC, ERR.
kcrawl() {
  local conf=$1; shift
  timeout 60 "$KRIA" crawl -c "$conf" "$@" >"$T/crawl.out" 2>"$T/crawl.err"
  RC=$?
  ERR=$(cat "$T/crawl.err")
}

# ---- snapshot crawl ----------------------------------------------------------

kts_start "$T/routes.ini" --log "$T/kts.log" --log-times || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds.txt"
crawl_conf "$T/snap.conf" "$T/state" "$T/seeds.txt"
kcrawl "$T/snap.conf"
is "$RC" 0 "snapshot crawl exits 0"
like "$ERR" "snapshot crawl complete" "says the snapshot is complete"
CL="$T/state/logs/crawl.log"
check "crawl.log exists" test -s "$CL"

reqs=$(sed 's/^t=[0-9]* //' "$T/kts.log")
first=$(head -1 <<<"$reqs")
like "$first" "GET /robots.txt " "robots.txt is the first request"
unlike "$reqs" "GET /private/" "disallowed paths are never requested"
unlike "$reqs" "Host: localhost" "the off-host link is never requested"
is "$(grep -c 'GET /p/' <<<"$reqs")" 30 "30 site pages requested"
is "$(grep -o 'GET /p/[0-9]* ' <<<"$reqs" | sort | uniq -d | wc -l)" 0 "no page requested twice"
like "$reqs" "GET /img/x.png " "the img embed is fetched"
like "$reqs" "GET /style.css " "the stylesheet is fetched"
like "$reqs" "GET /bg.png " "the CSS url() is fetched"
like "$reqs" "GET /target " "the redirect target is fetched"
is "$(grep -c 'GET /redir ' <<<"$reqs")" 1 "the redirect itself is fetched once"

log=$(cat "$CL")
like "$log" "-9998 +- $KTS_URL/private/a L $KTS_URL/ unknown #[0-9]+ - - - -" \
  "a disallowed URI is logged -9998"
is "$(grep -c -- '-9998 ' "$CL")" 2 "both disallowed URIs are logged -9998"
like "$log" " 200 +[0-9]+ $KTS_URL/robots.txt P $KTS_URL/ text/plain " "robots.txt logged with hop P"
like "$log" " 302 +[0-9]+ $KTS_URL/redir L $KTS_URL/ " "the redirect is logged 302"
like "$log" " 200 +[0-9]+ $KTS_URL/target LR $KTS_URL/redir text/html " \
  "the redirect target has hop path LR and the redirect as via"
like "$log" " 200 +[0-9]+ $KTS_URL/img/x.png E $KTS_URL/ image/png " "the embed has hop path E"
like "$log" " 200 +[0-9]+ $KTS_URL/bg.png EE $KTS_URL/style.css image/png " \
  "the CSS embed has hop path EE"
like "$log" " 200 +4096 $KTS_URL/p/0 L $KTS_URL/ text/html " "a site page with its size"
unlike "$log" "localhost" "the off-host link is not in crawl.log"

col='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z +-?[0-9]+ +(-|[0-9]+) http://[^ ]+ [^ ]+ [^ ]+ [^ ]+ #[0-9]{3,} ([0-9]{17}\+[0-9]+|-) (sha1:[A-Z2-7]{32}|-) [^ ]+ [^ ]+$'
bad=0
while IFS= read -r l; do [[ $l =~ $col ]] || { bad=$((bad + 1)); diag "bad line: $l"; }; done <"$CL"
is "$bad" 0 "every crawl.log line has Heritrix's 12 columns"
uris=$(awk '{print $4}' "$CL" | sort)
is "$(uniq -d <<<"$uris" | wc -l)" 0 "one crawl.log line per URI"
# robots + / + style + bg + img + redir + target + 30 pages + 2 private
is "$(wc -l <"$CL")" 39 "39 URIs logged"
like "$(grep "$KTS_URL/p/0 " "$CL")" "sha1:[A-Z2-7]{32}" "pages have a SHA-1 digest"

n_before=$(wc -l <"$T/kts.log")
kcrawl "$T/snap.conf"
is "$RC" 0 "a restart on a finished snapshot exits 0"
is "$(wc -l <"$T/kts.log")" "$n_before" "and fetches nothing"
kts_stop

# ---- politeness -----------------------------------------------------------------

kts_start "$T/routes.ini" --log "$T/kts2.log" --log-times || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds2.txt"
crawl_conf "$T/polite.conf" "$T/state2" "$T/seeds2.txt" \
  "[scope]" "max-link-hops = 1"
kcrawl "$T/polite.conf" -o politeness.min-delay=200ms -o politeness.max-delay=250ms
is "$RC" 0 "polite crawl exits 0"
n=$(wc -l <"$T/kts2.log")
is "$n" 5 "robots.txt, p/0 and its 3 links requested"
gaps=$(awk '{sub("t=","",$1); if (NR > 1) print $1 - prev; prev = $1}' "$T/kts2.log")
min=$(sort -n <<<"$gaps" | head -1)
diag "request gaps (ms): $(tr '\n' ' ' <<<"$gaps")"
check "every request at least 200 ms after the previous one (min $min)" test "${min:-0}" -ge 199
kts_stop

# ---- revisit mode -----------------------------------------------------------------

kts_start "$T/routes.ini" --log "$T/kts3.log" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds3.txt"
crawl_conf "$T/revisit.conf" "$T/state3" "$T/seeds3.txt" \
  "[scope]" "max-link-hops = 1" "[limits]" "max-time = 3500ms"
# the text evaluator decides now (wait.text.*: the thesis' policy with an
# unchanged-factor of 1, a revisit every second); probation off so the
# validators are trusted from the first revisit
kcrawl "$T/revisit.conf" -o crawl.revisit=true -o wait.text.initial-wait=1s \
  -o wait.text.min-wait=1s -o wait.text.unchanged-factor=1 -o wait.text.policy=multiplicative \
  -o adaptive.informed-priors=false -o adaptive.trust-probation=0
is "$RC" 0 "revisit crawl exits 0 at max-time"
like "$ERR" "limit max-time reached" "says which limit stopped it"
grep -q "GET /p/0 " "$T/kts3.log" || diag "kria: $ERR" "kts: $(head -5 "$T/kts3.log")"
for p in 0 1 2 3; do
  c=$(grep -c "GET /p/$p " "$T/kts3.log")
  check "p/$p fetched at least twice ($c)" test "$c" -ge 2
done
like "$(cat "$T/kts3.log")" "GET /p/0 HTTP/1.1 .*If-None-Match: " "revisits send If-None-Match"
check "revisits are logged 304" grep -q ' 304 ' "$T/state3/logs/crawl.log"
kts_stop

# ---- SIGTERM ------------------------------------------------------------------------

cat >"$T/slow.ini" <<'EOF'
[route "/robots.txt"]
status = 404

[route "/"]
body = <a href="/hang">hang</a>

[route "/hang"]
delay-ms = 60000
body = late
EOF
kts_start "$T/slow.ini" --log "$T/kts4.log" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds4.txt"
crawl_conf "$T/term.conf" "$T/state4" "$T/seeds4.txt"
"$KRIA" crawl -c "$T/term.conf" -o crawl.revisit=true 2>"$T/term.err" &
kpid=$!
_pids+=("$kpid")
# wait (bounded) until /hang was requested: the fetch is in flight
for _ in $(seq 200); do grep -q "GET /hang " "$T/kts4.log" 2>/dev/null && break; sleep 0.05; done
check "the hanging fetch is in flight" grep -q "GET /hang " "$T/kts4.log"
t0=$(date +%s%N)
kill -TERM "$kpid"
timeout 10 tail -s 0.05 --pid="$kpid" -f /dev/null
wait "$kpid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$rc" 0 "SIGTERM: exit 0"
check "SIGTERM: exited within 5 s ($ms ms)" test "$ms" -le 5000
check "SIGTERM: gave the running fetch its 4 s first ($ms ms)" test "$ms" -ge 3900
like "$(cat "$T/term.err")" "signal 15" "SIGTERM is logged"
q=$(sqlite3 "$T/state4/kria.db" "select count(*) from uris where url like '%/hang' and state = 0" 2>&1)
is "$q" 1 "the abandoned URI is still queued in the store"
kts_stop

# ---- robots.txt policies, hostile pages ------------------------------------------

# Four hosts on one kts through a hosts file: robots.txt 404 (allow all),
# 500 (disallow all until fetched again), two redirects to the real file,
# and "Disallow: /" with robots.exempt for images.
cat >"$T/robots.ini" <<'EOF'
[route "/robots.txt"]
host = a.test
status = 404

[route "/robots.txt"]
host = b.test
status = 500
body = oops

[route "/robots.txt"]
host = c.test
redirect = /r1

[route "/r1"]
host = c.test
redirect = /r2

[route "/r2"]
host = c.test
content-type = text/plain
body = User-agent: *\nDisallow: /x\n

[route "/robots.txt"]
host = d.test
content-type = text/plain
body = User-agent: *\nDisallow: /\n

[route "/"]
body = <a href="/x">x</a> <a href="/y">y</a> <img src="/img/a.png">

[route "/x"]
body = x

[route "/y"]
body = y

[route "/img*"]
content-type = image/png
body = png

[route "/many"]
links = 150000
link-prefix = http://elsewhere.test/m/

[route "/deep"]
body-file = deep.html

[route "/binary"]
body-file = binary.html
EOF
# 1,000,000 nested elements, then a link; and 256 KiB of random bytes
# served as text/html.
{ printf '<html><body>'; head -c 5000000 /dev/zero | tr '\0' 'x' | sed 's/xxxxx/<div>/g';
  printf '<a href="/deep-end">end</a></body></html>'; } >"$T/deep.html"
head -c 262144 /dev/urandom >"$T/binary.html"
kts_start "$T/robots.ini" --log "$T/kts5.log" || bail "kts did not start"
printf '127.0.0.1 a.test b.test c.test d.test\n' >"$T/hosts"
: >"$T/seeds5.txt"
for h in a b c d; do
  for p in / /x /y /img/a.png; do echo "http://$h.test:$KTS_PORT$p" >>"$T/seeds5.txt"; done
done
for p in /many /deep /binary; do echo "http://a.test:$KTS_PORT$p" >>"$T/seeds5.txt"; done
crawl_conf "$T/robots.conf" "$T/state5" "$T/seeds5.txt" \
  "[dns]" "hosts-file = $T/hosts" "[host \"d.test\"]" 'robots.exempt = ^/img/'
kcrawl "$T/robots.conf" -o politeness.max-retries=0
is "$RC" 0 "robots policies: the crawl ends (exit 0)"
CL5="$T/state5/logs/crawl.log"
req() { grep -c "GET $2 HTTP/1.1 | Host: $1.test:" "$T/kts5.log"; }
status_of() { awk -v u="http://$1.test:$KTS_PORT$2" '$4 == u {print $2}' "$CL5" | tail -1; }
is "$(req a /x)$(req a /y)" 11 "robots.txt 404: everything allowed"
is "$(req b /x)$(req b /y)$(req b /)" 000 "robots.txt 500: nothing fetched"
is "$(status_of b /x)" -61 "robots.txt 500: URIs logged -61 (robots unavailable)"
like "$(grep "b.test:$KTS_PORT/x " "$CL5")" "robots:unavailable" "and annotated robots:unavailable"
is "$(req c /r1)$(req c /r2)" 11 "robots.txt redirects followed"
is "$(req c /x)$(req c /y)" 01 "the redirected robots.txt is obeyed"
is "$(status_of c /x)" -9998 "its disallowed URI logged -9998"
is "$(req d /img/a.png)$(req d /x)" 10 "robots.exempt lets images through Disallow: /"
like "$(grep "d.test:$KTS_PORT/img/a.png " "$CL5")" "robots:exempt" "the exempt fetch is annotated"
like "$(grep "a.test:$KTS_PORT/many " "$CL5")" " 200 .*links-capped" \
  "a page with 150,000 links: fetched, extraction capped"
unlike "$(cat "$T/kts5.log")" "elsewhere" "its out-of-scope links are never requested"
like "$(grep "a.test:$KTS_PORT/deep " "$CL5")" " 200 +$(stat -c %s "$T/deep.html") " "a page nested 1,000,000 deep is fetched whole"
is "$(req a /deep-end)" 1 "and the link after the nesting is followed"
like "$(grep "a.test:$KTS_PORT/binary " "$CL5")" " 200 +262144 " "random bytes as text/html: fetched, no harm"
kts_stop

# ---- bad input --------------------------------------------------------------------------

printf '[crawl]\nrevisit = maybe\nbogus = 1\n' >"$T/bad.conf"
kcrawl "$T/bad.conf"
is "$RC" 2 "bad config: exit 2"
like "$ERR" "bad.conf:2:" "bad config: file:line of the bad value"
like "$ERR" "bad.conf:3:" "bad config: file:line of the unknown key"
crawl_conf "$T/ok.conf" "$T/state5" "$T/seeds.txt"
kcrawl "$T/ok.conf" -o politeness.min-delay=fast -o nosuch.key=1
is "$RC" 2 "bad -o: exit 2"
like "$ERR" "-o: politeness.min-delay" "bad -o: names the key"
like "$ERR" "nosuch" "every bad -o is reported"
crawl_conf "$T/noseeds.conf" "$T/state6" ""
kcrawl "$T/noseeds.conf"
is "$RC" 2 "no seeds and an empty state: exit 2"
like "$ERR" "nothing to crawl" "no seeds: says so"
mkdir -p "$T/state7" && head -c 8192 /dev/urandom >"$T/state7/kria.db"
crawl_conf "$T/foreign.conf" "$T/state7" "$T/seeds.txt"
kcrawl "$T/foreign.conf"
is "$RC" 2 "a foreign state database: exit 2"
like "$ERR" "kria.db" "a foreign state database: names the file"
timeout 10 "$KRIA" crawl >/dev/null 2>&1
is "$?" 64 "no -c: usage error 64"

done_testing
