#!/usr/bin/env bash
# Seeds, scope and reload across a cluster: three members (n1, n2, n3)
# with a real redis-server on loopback, scope.mode = host (the default:
# a member's scope is the hosts of its own seeds), a kts site whose
# hosts' / links to their own /a. Owners (rendezvous over n1, n2, n3):
# h2, h3 -> n1; h1, h7 -> n2; h5, h6 -> n3.
#  - all three start with the same seed, h2's /: only its owner n1
#    fetches it;
#  - n1 alone is given more seeds (its seeds file rewritten, SIGHUP): the
#    seed of its own new host (h3) is crawled by n1 in its new scope; the
#    seeds of hosts n2 and n3 own reach them and only them (n1 never
#    fetches them, nor did it before the fix: a reload added every seed
#    to the local frontier), and n1's reload does not change the other
#    members' scope: n2 and n3 record the seeds they were sent as out of
#    their scope (crawl.log -5000, /uri "disregarded"), fetching nothing;
#  - n2 and n3 then reload the same seeds themselves: the seeds come back
#    in their scope and are crawled by their owners, / and /a;
#  - in the end every page once, every host by its owner only.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.bash"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  bail "redis-server / redis-cli not installed (make deps)"

HOSTS="h1.test h2.test h3.test h5.test h6.test h7.test"
cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
body = User-agent: *

[route "/"]
body = <a href="/a">a</a>

[route "/a"]
body = leaf
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
printf '127.0.0.1 %s\n' "$HOSTS" >"$T/hosts"
seed() { printf 'http://%s:%s/\n' "$1" "$KTS_PORT"; }

redis_start "$T/redis" || bail "redis-server did not start: $(tail -5 "$T/redis/redis.log")"
D=$T/c
mkdir -p "$D"
for n in 1 2 3; do
  seed h2.test >"$D/seeds$n.txt"
  member_conf "$n" "$D/seeds$n.txt" "$D" scope >"$D/n$n.conf"
done
for n in 1 2 3; do start "$n" "$D"; done
# fetched N [STATUS-ERE]: the URLs member nN fetched (crawl.log lines of a
# positive status, or of STATUS-ERE), host/path only
fetched() {
  awk -v s="${2:-^[1-9]}" '$2 ~ s {print $4}' "$D/n$1/logs/crawl.log" 2>/dev/null |
    sed -E "s|^http://||; s|:$KTS_PORT||" | sort
}
has() { fetched "$1" | grep -qx "$2"; }
# out N PAGE: nN recorded PAGE as out of its scope
out() { fetched "$1" '^-5000$' | grep -qx "$2"; }
check "n1 fetched h2's / and /a" wait_until 30 has 1 h2.test/a
for n in 1 2 3; do wait_until 10 test -s "$D/n$n/status.addr"; done
is "$(fetched 2)$(fetched 3)" "" "... n2 and n3 fetched nothing (they own no seed)"

# ---- n1 alone gets more seeds ---------------------------------------------------------

for h in h2 h3 h1 h7 h5 h6; do seed "$h.test"; done >"$D/seeds1.txt"
reloads() { curl -s -m 5 "http://$(status_url "$D" "$1")/metrics" | awk '$1 == "kria_reloads_total" {print $2}'; }
kill -HUP "${KPID[1]}"
check "n1 applied the reload" wait_until 10 test "$(reloads 1)" = 1
check "n1 crawls its own new seed's host: h3's / and /a" wait_until 30 has 1 h3.test/a
for p in "2 h1.test/" "2 h7.test/" "3 h5.test/" "3 h6.test/"; do
  check "n${p% *} was sent the seed ${p#* }, out of its scope (not reloaded): recorded as such" \
    wait_until 30 out $p
done
# uri N PAGE: the state of PAGE in nN's frontier
uri() {
  curl -s -m 5 "http://$(status_url "$D" "$1")/uri?url=$(seed "$2" | tr -d '\n')" |
    node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => { try { console.log(JSON.parse(s).state) } catch { console.log("none") } })'
}
is "$(uri 2 h1.test) $(uri 2 h7.test) $(uri 3 h5.test) $(uri 3 h6.test)" \
  "disregarded disregarded disregarded disregarded" "... kept as disregarded in its frontier"
is "$(fetched 2)$(fetched 3)" "" "n2 and n3 fetched nothing: n1's reload did not change their scope"
is "$(fetched 1 '.' | grep -Ev '^h[23]\.test/' | tr '\n' ' ')" "" \
  "n1 fetched nothing of the hosts it gave away (h1, h7, h5, h6)"
is "$(reloads 2) $(reloads 3)" "0 0" "n2 and n3 did not reload"

# ---- n2 and n3 reload the same seeds ------------------------------------------------------

for n in 2 3; do
  cp "$D/seeds1.txt" "$D/seeds$n.txt"
  kill -HUP "${KPID[$n]}"
done
check "n2 applied its reload" wait_until 10 test "$(reloads 2)" = 1
check "n3 applied its reload" wait_until 10 test "$(reloads 3)" = 1
for p in "2 h1.test/" "2 h1.test/a" "2 h7.test/a" "3 h5.test/a" "3 h6.test/a"; do
  check "n${p% *}, in its new scope, fetched ${p#* }" wait_until 30 has $p
done

all=$(for n in 1 2 3; do fetched "$n" | sed "s/\$/ n$n/"; done)
is "$(awk '{print $1}' <<<"$all" | sort | uniq -d | tr '\n' ' ')" "" "no page fetched twice across the members"
is "$(awk '{print $1}' <<<"$all" | wc -l)" 18 "... 18 fetches: robots.txt, / and /a of six hosts"
is "$(sed -E 's|/[^ ]* | |' <<<"$all" | sort -u | tr '\n' ' ')" \
  "h1.test n2 h2.test n1 h3.test n1 h5.test n3 h6.test n3 h7.test n2 " "every host by its owner only"
for n in 1 2 3; do
  stop "$n"
  is "$?" 0 "n$n exits 0"
done
done_testing
