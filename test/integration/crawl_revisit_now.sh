#!/usr/bin/env bash
# `kria crawl --revisit-now`: a second pass over a finished snapshot crawl
# (crawl.revisit = false) of a site served by nginx (its own ETag and
# Last-Modified handling; requests counted from its access log):
#  - without the option a restart on the finished state requests nothing;
#  - with it every URI the state knows is requested again exactly once:
#    unchanged pages conditionally (If-None-Match) and answered 304 (no
#    body bytes), logged 304 in crawl.log; a missing page is asked again
#    (404); a page changed since is fetched (200) and the link it gained is
#    followed; robots.txt is fetched again; exit 0 once the pass is done
#    (validators trusted from the start: [adaptive] trust-sample and
#    trust-probation 0, so no revisit is a sampled full download);
#  - run again with the option on the same state: the pass repeats (the
#    new page included), still one request per URI;
#  - an unknown option is a usage error (exit 64).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"
command -v nginx >/dev/null || { skip "nginx not installed" "revisit-now"; done_testing; }

W="$T/www"
mkdir -p "$W/p"
printf 'User-agent: *\nDisallow: /private/\n' >"$W/robots.txt"
{
  echo '<html><body>'
  for i in 0 1 2 3 4 5 6 7 8 9; do echo "<a href=\"/p/$i.html\">page $i</a>"; done
  echo '<a href="/missing.html">gone</a> <a href="/private/x.html">private</a></body></html>'
} >"$W/index.html"
for i in 0 1 2 3 4 5 6 7 8 9; do
  echo "<html><body><p>page $i</p><a href=\"/p/$(((i + 1) % 10)).html\">next</a></body></html>" >"$W/p/$i.html"
done
# mtimes in the past: a rewrite within the same second still changes them
touch -d '2001-02-03 04:05:06 UTC' "$W/index.html" "$W/robots.txt" "$W"/p/*.html
nginx_start "$W" || bail "nginx did not start"
ACC="$NGINX_PREFIX/logs/access.log"

echo "$NGINX_URL/" >"$T/seeds.txt"
loopback_conf "$T/seeds.txt" "$T/state" >"$T/c.conf"
cat >>"$T/c.conf" <<EOF
# validators used from the first revisit on, no sampled full downloads
[adaptive]
trust-sample = 0
trust-probation = 0
EOF

# kcrawl ARGS...: kria crawl -c c.conf ARGS (bounded to 60 s); RC, ERR.
kcrawl() {
  timeout 60 "$KRIA" crawl -c "$T/c.conf" "$@" >"$T/crawl.out" 2>"$T/crawl.err"
  RC=$?
  ERR=$(cat "$T/crawl.err")
}
# requests LINE0: "STATUS PATH" of each access log line after line LINE0,
# sorted (nginx writes its log line when the response is done, before
# kria can finish: every request of a run is there once kria exited).
requests() { tail -n +"$(($1 + 1))" "$ACC" | awk '{ print $9, $7 }' | sort; }
CL="$T/state/logs/crawl.log"

kcrawl
is "$RC" 0 "first pass exits 0"
first=$(requests 0)
is "$(wc -l <<<"$first")" 13 "first pass: robots.txt, /, 10 pages and the missing one requested"
is "$(grep -c '^200 ' <<<"$first")" 12 "first pass: 12 answered 200"
check "first pass: /missing.html 404" grep -qx '404 /missing.html' <<<"$first"
n0=$(wc -l <"$ACC")
c0=$(wc -l <"$CL")

kcrawl
is "$RC" 0 "restart without --revisit-now exits 0"
is "$(wc -l <"$ACC")" "$n0" "restart without --revisit-now requests nothing"

kcrawl --revisit-now
is "$RC" 0 "--revisit-now pass exits 0"
second=$(requests "$n0")
is "$(awk '{ print $2 }' <<<"$second" | sort | tr '\n' ' ')" "$(awk '{ print $2 }' <<<"$first" | sort | tr '\n' ' ')" \
  "--revisit-now: every known URI requested again, each once"
is "$(grep -c '^304 ' <<<"$second")" 11 "--revisit-now: / and the 10 pages answered 304"
check "--revisit-now: robots.txt fetched again" grep -qE '^(200|304) /robots.txt$' <<<"$second"
check "--revisit-now: the missing page asked again (404)" grep -qx '404 /missing.html' <<<"$second"
unlike "$second" "private" "--revisit-now: the disallowed page is still not requested"
# nginx's body bytes sent ($body_bytes_sent, field 10) of the 304s: none
is "$(tail -n +"$((n0 + 1))" "$ACC" | awk '$9 == 304 { s += $10 } END { print s + 0 }')" 0 \
  "--revisit-now: the 304s carry no body"
new_cl=$(tail -n +"$((c0 + 1))" "$CL")
is "$(awk '$2 == 304' <<<"$new_cl" | wc -l)" 11 "--revisit-now: crawl.log has 11 new 304 lines"

# a changed page: a new body, mtime and a link to a new page
n1=$(wc -l <"$ACC")
c1=$(wc -l <"$CL")
echo '<html><body><p>page 3, changed</p><a href="/p/new.html">new</a></body></html>' >"$W/p/3.html"
touch -d '2002-03-04 05:06:07 UTC' "$W/p/3.html"
echo '<html><body><p>new</p></body></html>' >"$W/p/new.html"
kcrawl --revisit-now
is "$RC" 0 "second --revisit-now pass exits 0"
third=$(requests "$n1")
is "$(wc -l <<<"$third")" 14 "second --revisit-now pass: the 13 known URIs and the new page, each once"
check "the changed page is fetched (200)" grep -qx '200 /p/3.html' <<<"$third"
check "the link it gained is followed" grep -qx '200 /p/new.html' <<<"$third"
is "$(grep -c '^304 ' <<<"$third")" 10 "the 10 unchanged pages answered 304"
like "$(tail -n +"$((c1 + 1))" "$CL")" " 200 +[0-9]+ $NGINX_URL/p/3.html " "crawl.log: the changed page logged 200"

kcrawl --revisit-now --bogus
is "$RC" 64 "an unknown option is a usage error"
like "$("$KRIA" crawl --help)" "--revisit-now" "--help describes --revisit-now"

done_testing
