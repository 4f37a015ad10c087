#!/usr/bin/env bash
# Issue 7 (CI): valgrind finds no invalid access and no leak in `kria fetch`
# (a page over keep-alive with gzip, a 304, an address the policy refuses,
# a list of URLs) and in a short crawl of a kts site that writes WARC,
# follows links and a redirect and meets a refused host. Skipped with a
# clear reason when valgrind is absent or kria is an ASan build (ASan and
# valgrind cannot run together; ASan's own leak check covers that build).
. "$(dirname "$0")/lib.sh"

if ! command -v valgrind >/dev/null; then
  skip "valgrind not installed (make deps installs it)" "valgrind: kria fetch and a short crawl"
  done_testing
fi
if grep -qa __asan_init "$KRIA"; then
  skip "kria is an ASan build (SANITIZE=1), which valgrind cannot run" "valgrind: kria fetch and a short crawl"
  done_testing
fi
kria_has_fetch || bail "kria fetch is not built ($KRIA)"

VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 -q)

# vg DESC WANT_RC LOG CMD...: run CMD under valgrind (bounded), ok when it
# exits WANT_RC and valgrind reported nothing.
vg() {
  local desc=$1 want=$2 log=$3; shift 3
  timeout 300 "${VG[@]}" --log-file="$log" "$@" >"$log.out" 2>"$log.err"
  local rc=$?
  if [ "$rc" -eq "$want" ] && ! [ -s "$log" ]; then ok "valgrind: $desc (exit $rc, no report)"; else
    not_ok "valgrind: $desc"
    diag "exit $rc, wanted $want"
    diag "$(head -40 "$log" "$log.err" 2>/dev/null)"
  fi
}

cat >"$T/routes.ini" <<'EOF'
[route "/"]
body = <html><a href="/p/0">p</a> <a href="/a">a</a> <a href="/redir">r</a>
  <a href="http://127.0.0.2:9/refused">x</a> <link rel=stylesheet href="/s.css"></html>

[route "/s.css"]
content-type = text/css
body = body { background: url(/bg.png) }

[route "/redir"]
redirect = /a

[route "/gz"]
body = hello hello hello hello hello hello hello
gzip = 1

[site]
pages = 12
links = 3
body-size = 2K
etag = auto
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
U=$KTS_URL

vg "fetch: a gzip page" 0 "$T/vg1" "$KRIA" fetch --allow-private --headers "$U/gz"
grep -q "^status: 200" "$T/vg1.out" && ok "fetch under valgrind: status 200" ||
  { not_ok "fetch under valgrind: status 200"; diag "$(cat "$T/vg1.out" "$T/vg1.err")"; }
vg "fetch: a conditional request" 0 "$T/vg2" "$KRIA" fetch --allow-private --if-none-match '"x"' "$U/p/1"
vg "fetch: an address the policy refuses" 2 "$T/vg3" "$KRIA" fetch "$U/p/1"
like "$(cat "$T/vg3.err")" "kria: error: address-refused: " "fetch under valgrind: address-refused"
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do echo "$U/p/$i"; done >"$T/list.txt"
vg "fetch: a list over keep-alive" 0 "$T/vg4" "$KRIA" fetch --allow-private --input "$T/list.txt" --connections 4

echo "$U/" >"$T/seeds.txt"
cat >"$T/c.conf" <<EOF
[http]
allow-addresses = 127.0.0.1
[crawl]
seeds = $T/seeds.txt
state-dir = $T/state
revisit = false
progress-interval = 0
[scope]
include = ^http://127\.0\.0\.2
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
max-retries = 0
[limits]
max-time = 60s
[store]
commit-interval = 20ms
EOF
vg "a short crawl with WARC" 0 "$T/vg5" "$KRIA" crawl -c "$T/c.conf"
CL="$T/state/logs/crawl.log"
n=$(awk '$2 == 200' "$CL" 2>/dev/null | wc -l)
if [ "$n" -ge 10 ]; then ok "crawl under valgrind: $n pages fetched"; else
  not_ok "crawl under valgrind: pages fetched"; diag "$n lines with 200"; diag "$(tail -5 "$T/vg5.err")"
fi
check "crawl under valgrind: the refused host is logged -5005" \
  grep -q '^[^ ]* -5005 .*http://127\.0\.0\.2:9/refused' "$CL"
check "crawl under valgrind: a WARC file was written" test -n "$(find "$T/state" -name '*.warc.gz' -size +0 | head -1)"

done_testing
