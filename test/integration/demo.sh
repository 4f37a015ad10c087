#!/usr/bin/env bash
# `kria demo`: the built-in demo site crawled for 12 s with the built-in
# config/demo.conf. Checked: exit 0; the table has a row for every page
# class; news pages (a new version every 3 s) are visited more often than
# archive pages (never change) and end with shorter waits; some visits
# were unchanged (304s, mid-fetch aborts or equal digests); the clock
# pages' visits count as unchanged (the digest-strip rule); crawl.log
# exists with wt: annotations; the WARC files named exist and the record
# counts printed agree with kria cdx on them; progress lines
# on stderr (not a terminal here). The site's ground truth (--truth): a
# line for every version of every page; the full bodies and 304s it
# counted are exactly the page fetches crawl.log has, and every full body
# crawl.log names has the digest the truth gives one of that page's
# versions. The grown site (--pages 40, 3 s): 40 pages with articles, in
# its truth. Refusals: a non-empty state directory (2), a truth file that
# cannot be written (2), a bad --seconds or --pages, an unknown option
# (64); --help (0); a bad -o is a configuration error (2).
. "$(dirname "$0")/lib.sh"

"$KRIA" demo --help >/dev/null 2>&1 || bail "kria demo is not built ($KRIA)"

secs=${DEMO_TEST_SECONDS:-12}
st="$T/state"
"$KRIA" demo --seconds "$secs" --state-dir "$st" --truth "$T/truth.tsv" >"$T/out" 2>"$T/err"
rc=$?
is "$rc" 0 "kria demo --seconds $secs exits 0"
[ "$rc" -eq 0 ] || diag "$(tail -20 "$T/err")"
out=$(cat "$T/out")

# col CLASS N: column N of CLASS's table row (class pages visits versions
# first last 304s aborts digest misses).
col() { awk -v c="$1" -v n="$2" '$1 == c && NF == 10 && $2 ~ /^[0-9]+$/ { print $n; exit }' "$T/out"; }
# seconds of a "12.3s" wait
secs_of() { local v=${1%s}; printf '%s\n' "${v:--1}"; }

for c in home news section archive clock image liar; do
  like "$(col "$c" 2)" '^[1-9][0-9]*$' "table row for class $c"
done

news=$(col news 3) arch=$(col archive 3)
news_pages=$(col news 2) arch_pages=$(col archive 2)
if [ -n "$news" ] && [ -n "$arch" ] && [ "$news_pages" = "$arch_pages" ] && [ "$news" -gt "$arch" ]; then
  ok "news pages visited more often than archive pages ($news > $arch visits, $news_pages pages each)"
else
  not_ok "news pages visited more often than archive pages"
  diag "news '$news' visits on '$news_pages' pages, archive '$arch' on '$arch_pages'"
fi

# The closing text counts changes as revisits that found changed content;
# versions stored include every first visit, so they outnumber the changes.
chg=$(sed -n 's/^ *\([0-9][0-9]*\) changes found by revisits (\([0-9][0-9]*\) versions stored.*/\1 \2/p' "$T/out")
if [ -n "$chg" ] && [ "${chg% *}" -lt "${chg#* }" ]; then
  ok "closing text: ${chg% *} changes found by revisits, ${chg#* } versions stored"
else
  not_ok "closing text counts changes (revisits) apart from versions stored"; diag "'$chg'"
fi

nw=$(secs_of "$(col news 6)") aw=$(secs_of "$(col archive 6)")
if awk -v a="$nw" -v b="$aw" 'BEGIN { exit !(a > 0 && b > 0 && a < b) }'; then
  ok "news pages end with shorter waits than archive pages (${nw}s < ${aw}s)"
else
  not_ok "news pages end with shorter waits than archive pages"; diag "news '$nw', archive '$aw'"
fi

unchanged=0
for c in home news section archive clock image liar; do
  for n in 7 8 9; do unchanged=$((unchanged + $(col "$c" "$n"))); done
done
if [ "$unchanged" -gt 0 ]; then ok "unchanged visits: $unchanged (304s, aborts, digests)"
else not_ok "at least one 304 or unchanged visit"; fi

clock_found=$(col clock 4)
like "$clock_found" '^2/2$' "clock pages: one version each (the clock section stripped), not one per visit"

log="$st/logs/crawl.log"
check "crawl.log exists" test -s "$log"
like "$(grep -c 'wt:' "$log" 2>/dev/null)" '^[1-9][0-9]*$' "crawl.log has wt: annotations"
like "$out" "crawl\\.log +$st/logs/crawl\\.log" "the output says where crawl.log is"

warc=$(awk '$1 == "WARC" && $2 == "file" { print $3; exit }' "$T/out")
if [ -n "$warc" ]; then
  check "the WARC file named exists ($warc)" test -s "$warc"
  # The record counts are the indexer's: they match kria cdx on the files.
  resp=$(awk '$2 == "responses" { print $1; exit }' "$T/out")
  rev=$(awk '$2 == "revisits" { print $1; exit }' "$T/out")
  other=$(awk '$2 == "other" && $3 == "records" { print $1; exit }' "$T/out")
  resp=$((${resp:-0} + ${other:-0}))
  shopt -s nullglob
  files=("$st"/warcs/*.warc.gz "$st"/warcs/*.warc)
  "$KRIA" cdx "${files[@]}" >"$T/cdxj" 2>/dev/null
  is "$resp" "$(grep -vc '"mime": "warc/revisit"' "$T/cdxj")" "the record summary counts the responses (and others) kria cdx indexes"
  is "$rev" "$(grep -c '"mime": "warc/revisit"' "$T/cdxj")" "... and the revisits"
  like "$rev" '^[1-9][0-9]*$' "the demo wrote revisit records"
  n304=$(sed -n 's/.*revisits (pointing at a stored response: \([0-9]*\) after a 304.*/\1/p' "$T/out")
  is "$n304" "$(grep '"mime": "warc/revisit"' "$T/cdxj" | grep -vc '"status"')" \
    "... of which those after a 304, the revisits with no HTTP head"
  like "$n304" '^[1-9][0-9]*$' "the demo's site answered some conditional requests with 304"
else
  like "$out" "WARC files +(off|none)" "no WARC file: the output says so"
fi

like "$(cat "$T/err")" 'visits [0-9]+ +changed [0-9]+ +unchanged [0-9]+' "progress lines on stderr"

# The ground truth: the site's own account of what it served.
truth="$T/truth.tsv"
like "$(head -1 "$truth" 2>/dev/null)" '^# kria demo ground truth: seed 1, 21 pages' "--truth writes the site's account"
is "$(grep -v '^#' "$truth" | cut -f1 | sort -u | wc -l)" 21 "... naming every page"
answered=$(awk -F'\t' '!/^#/ { s += $8 + $9 } END { print s + 0 }' "$truth")
logged=$(awk '($2 == 200 || $2 == 304) && $4 !~ /robots\.txt$/ { n++ } END { print n + 0 }' "$log")
is "$answered" "$logged" "... its full bodies and 304s are the crawl's page fetches in crawl.log"
# a full body's digest in crawl.log is one of that page's versions (the
# clock pages differ on every answer: no digest in the truth)
unknown=$(awk -F'\t' 'NR == FNR { if (!/^#/) d[$1 " " $7] = 1; next }
  { split($0, f, " ") }
  f[2] == 200 && f[4] !~ /robots\.txt$|\/clock\// && f[12] !~ /midFetchAbort/ && !((f[4] " " f[10]) in d) { n++ }
  END { print n + 0 }' "$truth" "$log")
is "$unknown" 0 "... and every page body crawl.log has is a version the truth names by digest"
news_versions=$(awk -F'\t' '$2 == "news" && $5 > 0 { n++ } END { print n + 0 }' "$truth")
like "$news_versions" '^[1-9][0-9]*$' "... news pages had versions after the first ($news_versions)"

# The grown site, briefly: its pages and classes, and its truth.
"$KRIA" demo --pages 40 --seconds 3 --state-dir "$T/grown" --truth "$T/grown.tsv" >"$T/gout" 2>"$T/gerr"
is "$?" 0 "kria demo --pages 40 exits 0"
like "$(cat "$T/gout")" $'\n +[0-9]+ article +changes at random' "the grown site lists its articles"
like "$(head -1 "$T/grown.tsv" 2>/dev/null)" '^# kria demo ground truth: seed 1, 40 pages \(grown' "... and its truth names the grown site"
is "$(grep -v '^#' "$T/grown.tsv" | cut -f1 | sort -u | wc -l)" 40 "... with its 40 pages"

# Refusals
mkdir -p "$T/full" && : >"$T/full/x"
"$KRIA" demo --seconds 1 --state-dir "$T/full" >/dev/null 2>"$T/e2"
is "$?" 2 "a non-empty state directory is refused"
like "$(cat "$T/e2")" 'not empty' "... with a clear message"
for bad in 0 -1 x 86401 ''; do
  "$KRIA" demo --seconds "$bad" >/dev/null 2>&1
  is "$?" 64 "--seconds '$bad' is a usage error"
done
"$KRIA" demo --seconds 1 --state-dir "$T/s4" --truth "$T/no/such/dir/truth.tsv" >/dev/null 2>"$T/e4"
is "$?" 2 "a ground truth that cannot be written is an error"
like "$(cat "$T/e4")" 'cannot write the ground truth' "... saying so"
for bad in 19 1001 x ''; do
  "$KRIA" demo --pages "$bad" >/dev/null 2>&1
  is "$?" 64 "--pages '$bad' is a usage error"
done
"$KRIA" demo --bogus >/dev/null 2>&1
is "$?" 64 "an unknown option is a usage error"
"$KRIA" demo --help >/dev/null
is "$?" 0 "--help exits 0"
"$KRIA" demo --seconds 1 --state-dir "$T/s3" -o politeness.min-delay=soon >/dev/null 2>"$T/e3"
is "$?" 2 "a bad -o override is a configuration error"
like "$(cat "$T/e3")" 'min-delay' "... naming the key"

done_testing
