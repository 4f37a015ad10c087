#!/usr/bin/env bash
# The address policy ([http] allow-private-addresses, allow-addresses,
# deny-addresses) end to end:
#   - kria fetch refuses loopback, link-local and mapped forms by default
#     with "kria: error: address-refused: ..." and exit 2, --allow-private
#     and --allow-addresses open them, --deny-addresses closes them again;
#   - a crawl whose seed host is allowed by allow-addresses (127.0.0.1)
#     and whose page links to http://127.0.0.2:PORT/ (a second kts),
#     to names the hosts file points at 169.254.169.254 and 127.0.0.3, and
#     redirects to 127.0.0.2: every one of those is logged with -5005 and
#     address-refused (robots.txt and the page), and the second kts never
#     sees a request; a name with a refused and an allowed address is
#     fetched from the allowed one;
#   - the same crawl with 127.0.0.2 in allow-addresses fetches it;
#   - the keys are refused in [host] sections and bad CIDRs are errors
#     with file:line.
. "$(dirname "$0")/lib.sh"

kria_has_fetch || bail "kria fetch is not built ($KRIA)"
[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

# ---- the other server: 127.0.0.2, every request logged ----
cat >"$T/other.ini" <<'EOF'
[route "/*"]
body = <p>other</p>
EOF
kts_start "$T/other.ini" --host 127.0.0.2 --log "$T/other.log" || bail "kts on 127.0.0.2 did not start"
OTHER_PID=$KTS_PID
OTHER_PORT=$KTS_PORT
OTHER_URL=$KTS_URL
like "$OTHER_URL" "^http://127\.0\.0\.2:" "the second server is on 127.0.0.2"

# ---- kria fetch ----
kfetch_strict "$OTHER_URL/x"
is "$RC" 2 "fetch: loopback refused by default (exit 2)"
like "$ERR" "kria: error: address-refused: http://127\.0\.0\.2:$OTHER_PORT/x: 127\.0\.0\.2, a loopback address" \
  "fetch: a typed address-refused error naming the address and its class"
like "$ERR" "allow-private" "fetch: the error says how to permit it"
for u in "http://[::ffff:127.0.0.2]:$OTHER_PORT/" "http://[::1]:$OTHER_PORT/" "http://0.0.0.0:$OTHER_PORT/" \
  "http://169.254.169.254/latest/meta-data/" "http://[64:ff9b::a9fe:a9fe]/" "http://10.0.0.1/" \
  "http://2130706434:$OTHER_PORT/" "http://0x7f.2:$OTHER_PORT/"; do
  kfetch_strict --timeout-connect 2000 "$u"
  if [ "$RC" = 2 ] && [[ $ERR == *"kria: error: address-refused: "* ]]; then ok "fetch: $u refused"; else
    not_ok "fetch: $u refused"; diag "exit $RC: $ERR"
  fi
done
kfetch_strict --resolve "meta.test:80:169.254.169.254" "http://meta.test/latest/"
like "$ERR" "address-refused: http://meta\.test/latest/: meta\.test resolves to 169\.254\.169\.254, a link-local address" \
  "fetch: a --resolve override is checked too"
# The same through real DNS (c-ares asking our dnsmasq): the answer is
# checked, not the name.
if dnsmasq_start --address=/meta.test/169.254.169.254 --address=/lo.test/127.0.0.2 \
  --address=/mapped.test/::ffff:127.0.0.2; then
  kfetch_strict --dns-server "127.0.0.1:$DNS_PORT" "http://meta.test/latest/"
  like "$ERR" "address-refused: http://meta\.test/latest/: meta\.test resolves to 169\.254\.169\.254" \
    "fetch via DNS: a name answering 169.254.169.254 is refused"
  kfetch_strict --dns-server "127.0.0.1:$DNS_PORT" "http://lo.test:$OTHER_PORT/dns"
  like "$ERR" "address-refused: .*lo\.test resolves to 127\.0\.0\.2, a loopback address" \
    "fetch via DNS: a name answering 127.0.0.2 is refused"
  kfetch_strict --dns-server "127.0.0.1:$DNS_PORT" "http://mapped.test:$OTHER_PORT/dns"
  like "$ERR" "address-refused: .*mapped\.test resolves to ::ffff:127\.0\.0\.2, a loopback address" \
    "fetch via DNS: an AAAA answer ::ffff:127.0.0.2 is refused"
else
  skip "dnsmasq did not start" "fetch via DNS: refused answers"
fi
kfetch_strict --allow-private "$OTHER_URL/x"
is "$RC" 0 "fetch --allow-private: fetched"
is "$(field status)" 200 "fetch --allow-private: status 200"
kfetch_strict --allow-addresses 127.0.0.0/30 "$OTHER_URL/y"
is "$RC" 0 "fetch --allow-addresses 127.0.0.0/30: fetched"
kfetch_strict --allow-private --deny-addresses 127.0.0.2 "$OTHER_URL/z"
is "$RC" 2 "fetch --deny-addresses beats --allow-private"
like "$ERR" "address-refused: .*in \[http\] deny-addresses 127\.0\.0\.2/32" "fetch: the deny rule is named"
kfetch_strict --allow-addresses 127.0.0.2/8 "$OTHER_URL/"
is "$RC" 64 "fetch: a CIDR with host bits is a usage error (exit 64)"
like "$ERR" "bits set past the prefix" "fetch: ... saying why"
got=$(grep -c ' GET ' "$T/other.log" 2>/dev/null)
is "$got" 2 "fetch: only the two allowed fetches reached the second server"

# ---- the crawl ----
cat >"$T/routes.ini" <<EOF
[route "/"]
body = <a href="http://127.0.0.2:$OTHER_PORT/secret">a</a>
  <a href="http://meta.test/latest/meta-data/">b</a>
  <a href="http://rebind.test:$OTHER_PORT/rebound">c</a>
  <a href="/redir">d</a>
  <a href="http://mixed.test:{port}/mixed">e</a>
  <a href="/page">f</a>

[route "/redir"]
redirect = http://127.0.0.2:$OTHER_PORT/redirected

[route "/*"]
body = <p>page</p>
EOF
kts_start "$T/routes.ini" --log "$T/main.log" || bail "kts did not start"
MAIN_PORT=$KTS_PORT
printf '169.254.169.254 meta.test\n127.0.0.3 rebind.test\n169.254.169.254 mixed.test\n127.0.0.1 mixed.test\n' >"$T/hosts"
echo "http://127.0.0.1:$MAIN_PORT/" >"$T/seeds.txt"

# wait_for_line FILE ERE: 0 once a line of FILE matches (polled, ≤ 15 s).
wait_for_line() {
  local end=$((SECONDS + 15))
  until grep -Eq -- "$2" "$1" 2>/dev/null; do
    [ "$SECONDS" -gt "$end" ] && return 1
    sleep 0.05
  done
}

conf() { # conf FILE STATE ALLOW
  cat >"$1" <<EOF
[crawl]
seeds = $T/seeds.txt
state-dir = $2
revisit = false
[dns]
hosts-file = $T/hosts
servers = 127.0.0.1:9
timeout = 200ms
tries = 1
[http]
allow-addresses = $3
timeout-connect = 2s
[scope]
include = ^http://
max-link-hops = 2
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
max-retries = 0
[store]
commit-interval = 10ms
EOF
}

conf "$T/a.conf" "$T/a" "127.0.0.1"
timeout 60 "$KRIA" crawl -c "$T/a.conf" >"$T/a.out" 2>"$T/a.err"
is "$?" 0 "crawl: exit 0"
CL="$T/a/logs/crawl.log"
check "crawl: crawl.log written" test -s "$CL"
st() { awk -v u="$1" '$4 == u { print $2 }' "$CL" | tail -1; }
an() { awk -v u="$1" '$4 == u { print $12 }' "$CL" | tail -1; }
is "$(st "http://127.0.0.1:$MAIN_PORT/")" 200 "crawl: the allowed seed is fetched"
is "$(st "http://127.0.0.1:$MAIN_PORT/page")" 200 "crawl: a page of the allowed host is fetched"
for u in "http://127.0.0.2:$OTHER_PORT/secret" "http://meta.test/latest/meta-data/" \
  "http://rebind.test:$OTHER_PORT/rebound" "http://127.0.0.2:$OTHER_PORT/redirected"; do
  is "$(st "$u")" -5005 "crawl: $u logged -5005"
  like "$(an "$u")" "address-refused" "crawl: $u annotated address-refused"
done
is "$(st "http://127.0.0.2:$OTHER_PORT/robots.txt")" -5005 "crawl: the refused host's robots.txt is logged -5005 too"
is "$(st "http://127.0.0.1:$MAIN_PORT/redir")" 302 "crawl: the redirect itself is fetched"
is "$(st "http://mixed.test:$MAIN_PORT/mixed")" 200 "crawl: a name with a refused and an allowed address uses the allowed one"
got=$(grep -c ' GET ' "$T/other.log")
is "$got" 2 "crawl: no request reached the refused server (only the fetch tests' two)"
like "$(grep -c 'GET /mixed ' "$T/main.log")" "^1$" "crawl: the mixed host's page came from 127.0.0.1"
n5005=$(awk '$2 == -5005' "$CL" | wc -l)
like "$(cat "$T/a.err")" "notice: $n5005 fetches and URIs refused by the address policy" \
  "crawl: the summary counts the refusals ($n5005, as crawl.log)"

# ---- allow-list: the same crawl with 127.0.0.2 allowed ----
conf "$T/b.conf" "$T/b" "127.0.0.1, 127.0.0.2"
timeout 60 "$KRIA" crawl -c "$T/b.conf" >"$T/b.out" 2>"$T/b.err"
is "$?" 0 "crawl with 127.0.0.2 allowed: exit 0"
CL="$T/b/logs/crawl.log"
is "$(st "http://127.0.0.2:$OTHER_PORT/secret")" 200 "allow-addresses: the 127.0.0.2 page is fetched"
is "$(st "http://127.0.0.2:$OTHER_PORT/redirected")" 200 "allow-addresses: the redirect target is fetched"
is "$(st "http://meta.test/latest/meta-data/")" -5005 "allow-addresses: 169.254.169.254 still refused"
is "$(st "http://rebind.test:$OTHER_PORT/rebound")" -5005 "allow-addresses: 127.0.0.3 still refused"
check "allow-addresses: the second server saw the requests" grep -q 'GET /secret ' "$T/other.log"

# ---- SIGHUP cannot change the policy of a running crawl ----
conf "$T/h.conf" "$T/h" "127.0.0.1"
sed -i 's/^revisit = false$/revisit = true/' "$T/h.conf"
"$KRIA" crawl -c "$T/h.conf" -o limits.max-time=30s >/dev/null 2>"$T/h.err" &
HPID=$!
check "reload: the crawl is running" wait_for_line "$T/h/logs/crawl.log" " 200 "
sed -i 's/^allow-addresses = 127.0.0.1$/allow-addresses = 127.0.0.0\/8/' "$T/h.conf"
kill -HUP "$HPID"
check "reload: a changed allow-addresses is refused (it takes a restart)" \
  wait_for_line "$T/h.err" "http.allow-addresses changed .*: it takes a restart"
kill -TERM "$HPID"
timeout 20 tail -s 0.05 --pid="$HPID" -f /dev/null || kill -KILL "$HPID"
wait "$HPID" 2>/dev/null
unlike "$(awk '$2 == 200' "$T/h/logs/crawl.log")" "127\.0\.0\.2" "reload: 127.0.0.2 was never fetched"

# ---- configuration errors ----
printf '[crawl]\nseeds = %s\nstate-dir = %s\n[host "example.org"]\nhttp.allow-private-addresses = true\n' \
  "$T/seeds.txt" "$T/c" >"$T/c.conf"
timeout 30 "$KRIA" crawl -c "$T/c.conf" >/dev/null 2>"$T/c.err"
is "$?" 2 "[host] http.allow-private-addresses: the crawl does not start"
like "$(cat "$T/c.err")" "c\.conf:5: http\.allow-private-addresses cannot be overridden per host" \
  "[host] http.allow-private-addresses: error with file:line"
printf '[crawl]\nseeds = %s\nstate-dir = %s\n[http]\ndeny-addresses = 10.0.0.0/8, fe80::1%%lo\n' \
  "$T/seeds.txt" "$T/d" >"$T/d.conf"
timeout 30 "$KRIA" crawl -c "$T/d.conf" >/dev/null 2>"$T/d.err"
is "$?" 2 "a bad CIDR: the crawl does not start"
like "$(cat "$T/d.err")" "d\.conf:5: http\.deny-addresses: bad item 'fe80::1%lo'" "a bad CIDR: error with file:line"
timeout 30 "$KRIA" crawl -c "$T/a.conf" -o http.allow-addresses=127.0.0.1/33 >/dev/null 2>"$T/e.err"
is "$?" 2 "-o http.allow-addresses with a bad prefix: refused"
like "$(cat "$T/e.err")" "prefix longer than 32" "-o: the error says why"

kts_stop "$OTHER_PID" >/dev/null
done_testing
