#!/usr/bin/env bash
# `kria crawl`: the links of an HTML page streamed in pieces of a few
# bytes (kts trickle) and in one piece. proc_extract.c defers each
# streamed link until the next one (its link-cache slot prefetched in
# between): every link must still be resolved against the base in force
# where it stands (the document's URL before a <base href>, the base
# after it), including the last link of a fed piece and the one the
# extractor gives at the end of the document. Checked by what kts is
# asked for: each resolved URL, none resolved against the wrong base.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

page='body = <html><head><title>t</title></head><body><a href="r1">1</a> <a href="/abs1">a</a>
body = <img src="i1.png"><base href="/other/"><a href="r2">2</a><a href="r3">3</a>
body = <p><a href=r4>4</a></p><a href="last">'
cat >"$T/routes.ini" <<EOF
[route "/d/slow.html"]
trickle-bytes = 7
trickle-ms = 1
$page

[route "/e/fast.html"]
$page

[route "/*"]
body = x
EOF

kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '%s\n' "$KTS_URL/d/slow.html" "$KTS_URL/e/fast.html" >"$T/seeds.txt"
printf '[http]\nallow-private-addresses = true\n[crawl]\nseeds = %s\nstate-dir = %s\nrevisit = false\n[politeness]\nmin-delay = 0\nmax-delay = 0\ndelay-factor = 0\n[store]\ncommit-interval = 10ms\n' \
  "$T/seeds.txt" "$T/state" >"$T/c.conf"
timeout 60 "$KRIA" crawl -c "$T/c.conf" >"$T/crawl.out" 2>"$T/crawl.err"
is "$?" 0 "the crawl ends (exit 0)"
kts_stop
req() { grep -c "GET $1 HTTP/1.1 " "$T/kts.log"; }
for d in d e; do
  what=$([ $d = d ] && echo "trickled in 7-byte pieces" || echo "in one piece")
  is "$(req /$d/r1)$(req /$d/i1.png)" 11 "$what: the links before <base href> resolve against the page"
  is "$(req /$d/r2)$(req /$d/r3)$(req /$d/r4)$(req /$d/last)" 0000 "$what: none after it against the page"
done
is "$(req /abs1)" 1 "the path-absolute link before the base: fetched once"
is "$(req /other/r2)$(req /other/r3)$(req /other/r4)" 111 "the links after <base href> resolve against it (once for both pages)"
is "$(req /other/last)" 1 "the last link of the document, at the end of the last piece, too"
is "$(req /other/r1)$(req /other/i1.png)$(req /other/abs1)" 000 "no link before the base resolved against it"

done_testing
