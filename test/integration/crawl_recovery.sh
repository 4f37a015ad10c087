#!/usr/bin/env bash
# Recovery: `kill -9` a snapshot crawl of a generated site at 20+ random
# moments, restarting it on the same state directory each time, then let
# it finish; the URIs it visited (state SUCCESS in the store), and those it
# disregarded (robots), must be exactly those of an uninterrupted run: no
# URI lost, none invented. The kill moments are drawn from the crawl's own
# progress (kill once crawl.log has K lines, K random ahead of the current
# count), waiting on the file with a bounded poll, never a sleep. Every
# URI visited also has a crawl.log line (lines are written before the
# commit that records the visit). KRIA_RECOVERY_SEED fixes the draw.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v sqlite3 >/dev/null || bail "sqlite3 is not installed"

seed=${KRIA_RECOVERY_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$seed
diag "random seed $seed (KRIA_RECOVERY_SEED=$seed to repeat)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow: /p/7$\nDisallow: /p/42$\n

[site]
pages = 300
links = 4
body-size = 3K
delay-ms = 3

[route "/img*"]
content-type = image/png
body = png
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
echo "$KTS_URL/p/0" >"$T/seeds.txt"

conf() { # conf FILE STATE
  cat >"$1" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $2
revisit = false
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[store]
commit-interval = 5ms
EOF
}

visited() { sqlite3 "$1/kria.db" "select url from uris where state = 1 order by url"; }
disregarded() { sqlite3 "$1/kria.db" "select url from uris where state = 3 order by url"; }

# ---- the reference: one uninterrupted run ----------------------------------------

conf "$T/ref.conf" "$T/ref"
timeout 120 "$KRIA" crawl -c "$T/ref.conf" 2>"$T/ref.err"
is "$?" 0 "uninterrupted run exits 0"
ref_visited=$(visited "$T/ref")
ref_disregarded=$(disregarded "$T/ref")
n_ref=$(grep -c . <<<"$ref_visited")
diag "reference: $n_ref URIs visited, $(grep -c . <<<"$ref_disregarded") disregarded"
check "the reference visited the whole site (>= 250 URIs)" test "$n_ref" -ge 250

# ---- killed again and again -----------------------------------------------------------

conf "$T/kill.conf" "$T/kill"
CL="$T/kill/logs/crawl.log"
kills=0 runs=0 finished=0 at=
while [ "$runs" -lt 200 ]; do
  runs=$((runs + 1))
  have=0 done_uris=0
  [ -f "$CL" ] && have=$(wc -l <"$CL") && done_uris=$(awk '{print $4}' "$CL" | sort -u | wc -l)
  # spread the kills left over what is left of the crawl
  span=$(((n_ref - done_uris) / (22 - kills)))
  [ "$span" -ge 2 ] || span=2
  target=$((have + RANDOM % span))
  "$KRIA" crawl -c "$T/kill.conf" 2>>"$T/kill.err" &
  pid=$!
  _pids+=("$pid")
  # bounded: 4000 polls of at most ~5 ms
  for _ in $(seq 4000); do
    kill -0 "$pid" 2>/dev/null || break
    n=0
    [ -f "$CL" ] && n=$(wc -l <"$CL")
    [ "$n" -ge "$target" ] && break
    sleep 0.005
  done
  if [ "$kills" -lt 20 ]; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    if [ "$rc" -eq 137 ]; then
      kills=$((kills + 1))
      at+=" $(wc -l <"$CL" 2>/dev/null || echo 0)"
      continue
    fi
    # it ended by itself first
    [ "$rc" -eq 0 ] || { diag "run $runs exited $rc: $(tail -3 "$T/kill.err")"; break; }
    finished=1
    break
  fi
  # 20 kills done (or the run ended by itself): let it finish
  timeout 120 tail -s 0.05 --pid="$pid" -f /dev/null
  wait "$pid"
  rc=$?
  if [ "$rc" -eq 0 ] && [ "$kills" -ge 20 ]; then
    finished=1
    break
  fi
  [ "$rc" -eq 0 ] || { diag "run $runs exited $rc: $(tail -3 "$T/kill.err")"; break; }
done
diag "$kills kills over $runs runs; crawl.log lines at each kill:$at"
check "killed at least 20 times" test "$kills" -ge 20
is "$finished" 1 "the last run finished the crawl with exit 0"
unlike "$(cat "$T/kill.err")" "error:|runtime error|Sanitizer" "no errors on restart"

got_visited=$(visited "$T/kill")
got_disregarded=$(disregarded "$T/kill")
is "$(grep -c . <<<"$got_visited")" "$n_ref" "as many URIs visited as the uninterrupted run"
lost=$(comm -23 <(echo "$ref_visited") <(echo "$got_visited"))
extra=$(comm -13 <(echo "$ref_visited") <(echo "$got_visited"))
is "$lost" "" "no URI lost"
is "$extra" "" "no URI invented"
is "$got_disregarded" "$ref_disregarded" "the same URIs disregarded by robots.txt"
q=$(sqlite3 "$T/kill/kria.db" "select count(*) from uris where next_at < 9223372036854775807")
is "$q" 0 "nothing left queued"

logged=$(awk '$2 >= 100 {print $4}' "$CL" | sort -u)
nolog=$(comm -23 <(echo "$ref_visited") <(echo "$logged"))
is "$nolog" "" "every visited URI has a crawl.log line"
dups=$(awk '$2 >= 100 {print $4}' "$CL" | sort | uniq -d | wc -l)
diag "URIs fetched more than once across the kills: $dups (a crash may repeat a fetch)"
check "repeated fetches stay few (<= 2 per kill)" test "$dups" -le $((kills * 2 * 4))

kts_stop
done_testing
