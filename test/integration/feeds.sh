#!/usr/bin/env bash
# Feeds and sitemaps in a crawl against kts:
#  - robots.txt's Sitemap line queues the sitemap; its URLs are crawled and
#    their changefreq lands in the state database (uris.hint, changes/s);
#    a sitemap index's sitemaps are read too;
#  - an RSS feed that changes on every request (its description carries
#    the kts version) is revisited every second; each time it changed its
#    item dated after the previous visit (2099) is fetched again at once,
#    the old one (2000) is not, and of the two undated items only the
#    first (adaptive.feed-pull-max = 1) is pulled forward; the items' own
#    wait (30 s) would not bring any of them back within the run;
#  - an Atom feed's entries are crawled; a malformed feed keeps the items
#    before the break and is annotated feedError; XML that is no feed is
#    left alone;
#  - adaptive.refresh-embeds: a page that changes on every visit has its
#    image (whose own wait is 30 s) fetched again each time;
#  - URL-agnostic duplicates: a payload served under a second URL is
#    annotated duplicate:digest and the digest index holds its first URL.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

{
  cat <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nDisallow:\nSitemap: http://127.0.0.1:{port}/sitemap_index.xml\n

[route "/"]
body = <a href="/feed.xml">rss</a> <a href="/atom.xml">atom</a>
body = <a href="/broken.xml">broken</a> <a href="/other.xml">other</a>
body = <a href="/dup/a">a</a> <a href="/dup/b">b</a>

[route "/changing"]
host = localhost
change-every = 1
body = <p>version {version}</p><img src="/pic.png">

[route "/pic.png"]
host = localhost
content-type = image/png
body = not really a png

[route "/dup/*"]
body = <p>the same payload under two URLs</p>

[route "/sitemap_index.xml"]
content-type = application/xml
body = <?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
body = <sitemap><loc>http://127.0.0.1:{port}/sitemap.xml</loc></sitemap></sitemapindex>

[route "/feed.xml"]
content-type = application/rss+xml
change-every = 1
body = <?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
body = <description>version {version}</description>
body = <item><link>/items/new</link><pubDate>Fri, 01 Jan 2099 00:00:00 GMT</pubDate></item>
body = <item><link>/items/old</link><pubDate>Sat, 01 Jan 2000 00:00:00 GMT</pubDate></item>
body = <item><link>/items/undated1</link></item>
body = <item><link>/items/undated2</link></item>
body = </channel></rss>

[route "/atom.xml"]
content-type = application/atom+xml
body = <?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>a</title>
body = <entry><id>e1</id><link href="/entries/1"/></entry>
body = <entry><id>e2</id><link rel="alternate" href="/entries/2"/></entry></feed>

[route "/broken.xml"]
content-type = text/xml
body = <rss><channel><item><link>/items/before-break</link></item><item><link>x</oops>

[route "/other.xml"]
content-type = application/xml
body = <?xml version="1.0"?><config><link>/items/not-a-feed</link></config>

[route "/items/*"]
body = item {path}

[route "/entries/*"]
body = entry {path}

[route "/s/*"]
body = sitemap page {path}

EOF
  sitemap_route /sitemap.xml "<loc>http://127.0.0.1:{port}/s/hourly</loc><changefreq>hourly</changefreq>" \
    "<loc>http://127.0.0.1:{port}/s/plain</loc>"
} >"$T/routes.ini"

kts_start "$T/routes.ini" --log "$T/kts.log" || bail "kts did not start"
printf '%s\n' "$KTS_URL/" "http://localhost:$KTS_PORT/changing" >"$T/seeds.txt"
{
  revisit_conf "$T/seeds.txt" "$T/state"
  cat <<EOF
[limits]
max-time = 8s
[adaptive]
feed-pull-max = 1
EOF
  wait_conf feed '^application/rss' 1s changed-factor=1
  wait_conf image '^image/' 30s
  wait_conf default '' 30s
  cat <<EOF
# localhost: a page changing on every visit, revisited every second
[host "localhost"]
adaptive.refresh-embeds = true
wait.default.initial-wait = 1s
wait.default.min-wait = 1s
wait.default.changed-factor = 1
EOF
} >"$T/c.conf"
timeout 60 "$KRIA" crawl -c "$T/c.conf" >"$T/out" 2>"$T/err"
is "$?" 0 "the crawl exits 0"
kts_stop_counting
n() { kts_count "$1"; }
CL="$T/state/logs/crawl.log"
diag "requests: feed $(n /feed.xml) new $(n /items/new) old $(n /items/old) undated1 $(n /items/undated1) undated2 $(n /items/undated2)"

check "the feed is revisited every second ($(n /feed.xml) >= 4)" test "$(n /feed.xml)" -ge 4
check "the item dated after the previous visit is fetched again each time ($(n /items/new) >= 3)" \
  test "$(n /items/new)" -ge 3
is "$(n /items/old)" 1 "the old item is not pulled forward"
check "the first undated item is pulled forward ($(n /items/undated1) >= 3)" \
  test "$(n /items/undated1)" -ge 3
is "$(n /items/undated2)" 1 "the second undated item is not (feed-pull-max = 1)"
like "$(awk '$4 ~ /feed.xml$/' "$CL" | tail -1)" "feed:rss,wt:1s0ms,[0-9]+vis,[0-9]+ver" \
  "the feed's lines say feed:rss and its wait"
like "$(cat "$T/err")" "[1-9][0-9]* feeds \\([0-9]+ items, [1-9][0-9]* pulled forward, 1 errors\\), [1-9][0-9]* sitemaps from robots.txt" \
  "the summary counts feeds, items pulled forward, errors and robots sitemaps"

is "$(n /sitemap_index.xml)" 1 "robots.txt's Sitemap is fetched"
is "$(n /sitemap.xml)" 1 "the sitemap of the index is fetched"
is "$(n /s/hourly)$(n /s/plain)" 11 "the sitemap's URLs are fetched"
like "$(awk '$4 ~ /sitemap_index.xml$/' "$CL")" " PL .*feed:sitemapindex" "the index came from robots.txt (hop PL)"
hint=$(sqlite3 "$T/state/kria.db" "SELECT round(hint * 3600, 3) FROM uris WHERE url LIKE '%/s/hourly'")
is "$hint" "1.0" "changefreq hourly is kept as one change an hour"
is "$(sqlite3 "$T/state/kria.db" "SELECT hint IS NULL FROM uris WHERE url LIKE '%/s/plain'")" 1 \
  "no changefreq, no hint"

is "$(n /entries/1)$(n /entries/2)" 11 "the Atom entries are fetched"
is "$(n /items/before-break)" 1 "a broken feed keeps the items before the break"
like "$(awk '$4 ~ /broken.xml$/' "$CL")" "feedError" "and is annotated feedError"
is "$(n /items/not-a-feed)" 0 "XML that is no feed gives no links"
unlike "$(awk '$4 ~ /other.xml$/' "$CL")" "feed" "and no feed annotation"

check "the image of a changing page is fetched with each change ($(n /pic.png) >= 4)" \
  test "$(n /pic.png)" -ge 4
like "$(awk '$4 ~ /pic.png$/' "$CL" | head -1)" " E .*wt:30s0ms,1vis" \
  "the image's own wait is 30 s (and grows: it never changes)"
like "$(cat "$T/err")" "[1-9][0-9]* embeds refreshed" "the summary counts refreshed embeds"
dups=$(awk '$4 ~ /\/dup\//' "$CL" | grep -c "duplicate:digest")
is "$dups" 1 "one of the two identical payloads is a duplicate of the other"
# with WARC files the originals are the index: both name the first URL's record
first=$(sqlite3 "$T/state/kria.db" "SELECT DISTINCT o.url FROM uris u JOIN uris o
  ON o.fp = CASE u.orig_fp WHEN 0 THEN u.fp ELSE u.orig_fp END WHERE u.url LIKE '%/dup/%'")
like "$(awk '$4 ~ /\/dup\// && !/duplicate/ {print $4}' "$CL")" "^$first$" "the index holds the first URL"
is "$(sqlite3 "$T/state/kria.db" "SELECT count(*) FROM digests")" 0 \
  "with WARC files on, no separate digest index"
done_testing
