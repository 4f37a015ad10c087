/* Feeds and sitemaps (kria/feed.h): RSS 2.0, RSS 1.0, Atom, sitemaps and
 * sitemap indexes item by item, fed whole and one byte at a time (the
 * same items); dates in RFC 822 and W3C forms with zones; hostile input:
 * the billion laughs and other entity declarations, DTD internal subsets,
 * external entities, deep nesting, oversized documents and fields, item
 * caps, malformed XML, non-feeds; reset and reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/feed.h"

typedef struct got {
  int n;
  char url[16][256];
  char id[16][128];
  int64_t updated[16];
  char changefreq[16][32];
  double priority[16];
  int is_sitemap[16];
  int stop_after; /* return 1 at this item (0 never) */
} got_t;

static void copy(char *dst, size_t cap, kr_slice_t s) {
  size_t n = s.n < cap - 1 ? s.n : cap - 1;
  memcpy(dst, s.p ? s.p : "", n);
  dst[n] = '\0';
}

static int on_item(void *ud, const kr_feed_item_t *it) {
  got_t *g = ud;
  if (g->n < 16) {
    copy(g->url[g->n], sizeof g->url[0], it->url);
    copy(g->id[g->n], sizeof g->id[0], it->id);
    copy(g->changefreq[g->n], sizeof g->changefreq[0], it->changefreq);
    g->updated[g->n] = it->updated;
    g->priority[g->n] = it->priority;
    g->is_sitemap[g->n] = it->is_sitemap;
  }
  g->n++;
  return g->stop_after && g->n >= g->stop_after;
}

/* Parse doc whole (bytewise = 0) or one byte per call. */
static int parse(kr_feed_t *f, const char *doc, int bytewise) {
  size_t n = strlen(doc);
  if (!bytewise) {
    int rc = kr_feed_parse(f, doc, n);
    return rc ? rc : kr_feed_finish(f);
  }
  for (size_t i = 0; i < n; i++) {
    int rc = kr_feed_parse(f, doc + i, 1);
    if (rc) return rc;
  }
  return kr_feed_finish(f);
}

static int parse_new(const char *doc, got_t *g, kr_feed_kind_t *kind, int bytewise) {
  memset(g, 0, sizeof *g);
  kr_feed_t *f = kr_feed_new(NULL, on_item, g);
  int rc = parse(f, doc, bytewise);
  if (kind) *kind = kr_feed_kind(f);
  kr_feed_free(f);
  return rc;
}

static const char rss2[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\" "
    "xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n"
    "<channel><title>t</title><link>http://ex.test/</link>\n"
    "<atom:link href=\"http://ex.test/feed\" rel=\"self\"/>\n"
    "<item><title>One &amp; two</title><link> http://ex.test/a?x=1&amp;y=2 </link>"
    "<guid isPermaLink=\"false\">tag:ex.test,2024:1</guid>"
    "<pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>\n"
    "<item><guid>http://ex.test/b</guid><pubDate>Tue, 10 Jun 2003 09:41:01 -0500</pubDate>"
    "<dc:date>2003-06-11T00:00:00Z</dc:date></item>\n"
    "<item><title>no link</title><guid isPermaLink=\"false\">x</guid></item>\n"
    "<item><link><![CDATA[http://ex.test/c]]></link><atom:link href=\"http://other/\"/></item>\n"
    "</channel></rss>\n";

static void rss_items(void **state) {
  (void)state;
  for (int bw = 0; bw < 2; bw++) {
    got_t g;
    kr_feed_kind_t k;
    assert_int_equal(parse_new(rss2, &g, &k, bw), 0);
    assert_int_equal(k, KR_FEED_RSS);
    assert_int_equal(g.n, 4);
    assert_string_equal(g.url[0], "http://ex.test/a?x=1&y=2"); /* trimmed, entity decoded */
    assert_string_equal(g.id[0], "tag:ex.test,2024:1");
    assert_true(g.updated[0] == 1055217600);
    assert_string_equal(g.url[1], "http://ex.test/b"); /* guid is a permalink */
    /* the latest of its dates: dc:date 2003-06-11 beats 09:41 -0500 */
    assert_true(g.updated[1] == 1055289600);
    assert_string_equal(g.url[2], ""); /* guid not a permalink, no link */
    assert_string_equal(g.url[3], "http://ex.test/c");
    assert_true(g.updated[3] == 0);
    assert_true(g.priority[0] < 0);
  }
}

static void rdf_and_atom(void **state) {
  (void)state;
  static const char rdf[] =
      "<?xml version=\"1.0\"?>"
      "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" "
      "xmlns=\"http://purl.org/rss/1.0/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">"
      "<channel rdf:about=\"http://ex.test/\"><title>c</title><link>http://ex.test/</link></channel>"
      "<item rdf:about=\"http://ex.test/r1\"><title>r1</title><dc:date>2004-01-02</dc:date></item>"
      "<item rdf:about=\"http://ex.test/about\"><link>http://ex.test/r2</link></item>"
      "</rdf:RDF>";
  got_t g;
  kr_feed_kind_t k;
  assert_int_equal(parse_new(rdf, &g, &k, 0), 0);
  assert_int_equal(k, KR_FEED_RDF);
  assert_int_equal(g.n, 2);
  assert_string_equal(g.url[0], "http://ex.test/r1");
  assert_true(g.updated[0] == 1073001600);
  assert_string_equal(g.url[1], "http://ex.test/r2");

  static const char atom[] =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
      "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>a</title>"
      "<link href=\"http://ex.test/\"/><updated>2003-12-13T18:30:02Z</updated>"
      "<entry><title>e1</title><link rel=\"edit\" href=\"http://ex.test/edit/1\"/>"
      "<link href=\"http://ex.test/e1\"/><link rel=\"alternate\" href=\"http://ex.test/no\"/>"
      "<id>urn:uuid:1225c695</id><updated>2003-12-13T18:30:02+01:00</updated>"
      "<published>2003-12-13T08:29:29-04:00</published></entry>"
      "<entry><link rel=\"alternate\" type=\"text/html\" href=\"/e2\"/><id>e2</id></entry>"
      "</feed>";
  for (int bw = 0; bw < 2; bw++) {
    assert_int_equal(parse_new(atom, &g, &k, bw), 0);
    assert_int_equal(k, KR_FEED_ATOM);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.url[0], "http://ex.test/e1");
    assert_string_equal(g.id[0], "urn:uuid:1225c695");
    /* updated 18:30:02+01:00 = 17:30:02Z is later than published
     * 08:29:29-04:00 = 12:29:29Z: the latest of the dates counts */
    assert_true(g.updated[0] == 1071336602);
    assert_string_equal(g.url[1], "/e2"); /* as written: the caller resolves */
  }
}

static void sitemaps(void **state) {
  (void)state;
  static const char sm[] =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"
      "<url><loc>http://ex.test/</loc><lastmod>2005-01-01</lastmod>"
      "<changefreq>monthly</changefreq><priority>0.8</priority></url>\n"
      "<url><loc>http://ex.test/catalog?item=12&amp;desc=vacation_hawaii</loc>"
      "<changefreq>weekly</changefreq></url>\n"
      "<url><loc>http://ex.test/c</loc><lastmod>2004-12-23T18:00:15+00:00</lastmod>"
      "<priority>7</priority></url>\n"
      "</urlset>";
  got_t g;
  kr_feed_kind_t k;
  for (int bw = 0; bw < 2; bw++) {
    assert_int_equal(parse_new(sm, &g, &k, bw), 0);
    assert_int_equal(k, KR_FEED_SITEMAP);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.url[0], "http://ex.test/");
    assert_true(g.updated[0] == 1104537600);
    assert_string_equal(g.changefreq[0], "monthly");
    assert_true(g.priority[0] > 0.79 && g.priority[0] < 0.81);
    assert_string_equal(g.url[1], "http://ex.test/catalog?item=12&desc=vacation_hawaii");
    assert_string_equal(g.changefreq[1], "weekly");
    assert_true(g.updated[1] == 0);
    assert_true(g.updated[2] == 1103824815);
    assert_true(g.priority[2] < 0); /* out of range */
    assert_int_equal(g.is_sitemap[0], 0);
  }
  static const char idx[] =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
      "<sitemap><loc>http://ex.test/sitemap1.xml.gz</loc>"
      "<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>"
      "<sitemap><loc>http://ex.test/sitemap2.xml</loc></sitemap>"
      "</sitemapindex>";
  assert_int_equal(parse_new(idx, &g, &k, 0), 0);
  assert_int_equal(k, KR_FEED_SITEMAP_INDEX);
  assert_int_equal(g.n, 2);
  assert_int_equal(g.is_sitemap[0], 1);
  assert_string_equal(g.url[1], "http://ex.test/sitemap2.xml");
  assert_true(g.updated[0] == 1096654997);
}

static void dates(void **state) {
  (void)state;
  static const struct {
    const char *s;
    int64_t t; /* -1: invalid */
  } cases[] = {
      {"Sat, 07 Sep 2002 00:00:01 GMT", 1031356801},
      {"07 Sep 2002 00:00:01 GMT", 1031356801},
      {"Sat, 7 Sep 2002 00:00 UT", 1031356800},
      {"Sat, 07 Sep 02 00:00:01 GMT", 1031356801},
      {"Sat, 07 Sep 2002 00:00:01 +0200", 1031356801 - 7200},
      {"Sat, 07 Sep 2002 00:00:01 EST", 1031356801 + 5 * 3600},
      {"Sat, 07 Sep 2002 00:00:01 pdt", 1031356801 + 7 * 3600},
      {"  Sat, 07 Sep 2002 00:00:01 Z \n", 1031356801},
      {"2002", 1009843200},
      {"2002-09", 1030838400},
      {"2002-09-07", 1031356800},
      {"2002-09-07T00:00:01Z", 1031356801},
      {"2002-09-07T00:00:01.123456Z", 1031356801},
      {"2002-09-07T02:00:01+02:00", 1031356801},
      {"2002-09-06T19:00:01-0500", 1031356801},
      {"2002-09-07T00:00", 1031356800},
      {"2000-02-29", 951782400},
      {"2001-02-29", -1},
      {"Sat, 31 Feb 2002 00:00:01 GMT", -1},
      {"Sat, 07 Foo 2002 00:00:01 GMT", -1},
      {"Sat, 07 Sep 2002 00:00:01 XYZ", -1},
      {"2002-9-7", -1},
      {"2002-09-07T25:00Z", -1},
      {"2002-09-07T00:00:01+25:00", -1},
      {"yesterday", -1},
      {"", -1},
      {"1", -1},
      {"0000-01-01", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t t = 0;
    int rc = kr_feed_date_parse(cases[i].s, strlen(cases[i].s), &t);
    if (cases[i].t < 0) {
      if (rc != KR_EINVAL) fail_msg("'%s' should be invalid, got %lld", cases[i].s, (long long)t);
    } else {
      if (rc != 0 || t != cases[i].t)
        fail_msg("'%s': rc %d t %lld want %lld", cases[i].s, rc, (long long)t,
                 (long long)cases[i].t);
    }
  }
  assert_int_equal(kr_feed_date_parse(NULL, 0, NULL), KR_EINVAL);
}

/* The billion laughs: ten levels of ten references. Refused at the first
 * entity declaration: nothing is expanded, no item delivered. */
static void billion_laughs(void **state) {
  (void)state;
  char doc[4096];
  size_t n = (size_t)snprintf(doc, sizeof doc,
                              "<?xml version=\"1.0\"?>\n<!DOCTYPE rss [\n"
                              " <!ENTITY lol \"lol\">\n");
  for (int i = 1; i <= 9; i++) {
    n += (size_t)snprintf(doc + n, sizeof doc - n, " <!ENTITY lol%d \"", i);
    for (int j = 0; j < 10; j++)
      n += (size_t)snprintf(doc + n, sizeof doc - n, i == 1 ? "&lol;" : "&lol%d;", i - 1);
    n += (size_t)snprintf(doc + n, sizeof doc - n, "\">\n");
  }
  snprintf(doc + n, sizeof doc - n,
           "]>\n<rss><channel><item><link>http://x/&lol9;</link></item></channel></rss>");
  got_t g;
  kr_feed_kind_t k;
  memset(&g, 0, sizeof g);
  kr_feed_t *f = kr_feed_new(NULL, on_item, &g);
  assert_int_equal(parse(f, doc, 0), KR_EXML);
  assert_int_equal(g.n, 0);
  assert_non_null(strstr(kr_feed_error(f), "refused"));
  /* sticky */
  assert_int_equal(kr_feed_parse(f, "<x/>", 4), KR_EXML);
  kr_feed_free(f);
  /* the same one byte at a time */
  assert_int_equal(parse_new(doc, &g, &k, 1), KR_EXML);
  assert_int_equal(g.n, 0);
}

static void hostile(void **state) {
  (void)state;
  got_t g;
  /* an external entity: declared, so refused; never fetched */
  assert_int_equal(parse_new("<!DOCTYPE rss [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
                             "<rss><item><link>&x;</link></item></rss>",
                             &g, NULL, 0),
                   KR_EXML);
  assert_int_equal(g.n, 0);
  /* parameter entities in an internal subset */
  assert_int_equal(parse_new("<!DOCTYPE rss [<!ENTITY % p SYSTEM \"http://x/\"> %p;]><rss/>",
                             &g, NULL, 0),
                   KR_EXML);
  /* any internal subset, even without entities */
  assert_int_equal(parse_new("<!DOCTYPE rss [<!ELEMENT rss ANY>]><rss/>", &g, NULL, 0),
                   KR_EXML);
  /* an external DTD alone is fine (never loaded): RSS 0.91 */
  assert_int_equal(parse_new("<!DOCTYPE rss PUBLIC \"-//Netscape Communications//DTD RSS "
                             "0.91//EN\" \"http://my.netscape.com/publish/formats/rss-0.91.dtd\">"
                             "<rss version=\"0.91\"><channel><item><link>http://ex.test/91</link>"
                             "</item></channel></rss>",
                             &g, NULL, 0),
                   0);
  assert_int_equal(g.n, 1);
  /* an undefined entity is an error, not an expansion */
  assert_int_equal(parse_new("<rss><item><link>&nope;</link></item></rss>", &g, NULL, 0),
                   KR_EXML);
  /* malformed, cut, empty, not a feed */
  assert_int_equal(parse_new("<rss><item><link>x</item></rss>", &g, NULL, 0), KR_EXML);
  assert_int_equal(parse_new("<rss><channel><item><link>http://x/</link></item>", &g, NULL, 0),
                   KR_EXML);
  assert_int_equal(g.n, 1); /* delivered before the cut */
  assert_int_equal(parse_new("", &g, NULL, 0), KR_EXML);
  kr_feed_kind_t k;
  assert_int_equal(parse_new("<html><body><a href=\"/x\">x</a></body></html>", &g, &k, 0),
                   KR_EXML);
  assert_int_equal(k, KR_FEED_UNKNOWN);
  assert_int_equal(parse_new("\xff\xfe\x00garbage", &g, NULL, 0), KR_EXML);

  /* nesting deeper than max_depth */
  kr_feed_opts_t o;
  kr_feed_opts_default(&o);
  o.max_depth = 8;
  char deep[1024] = "<rss>";
  for (int i = 0; i < 20; i++) strcat(deep, "<a>");
  memset(&g, 0, sizeof g);
  kr_feed_t *f = kr_feed_new(&o, on_item, &g);
  assert_int_equal(parse(f, deep, 0), KR_ETOOBIG);
  assert_non_null(strstr(kr_feed_error(f), "deep"));
  /* reset: a good document parses again on the same object */
  kr_feed_reset(f, on_item, &g);
  assert_int_equal(parse(f, rss2, 0), 0);
  assert_int_equal(g.n, 4);
  assert_string_equal(kr_feed_error(f), "");
  kr_feed_free(f);

  /* a document over max_bytes */
  o.max_depth = 64;
  o.max_bytes = 100;
  f = kr_feed_new(&o, on_item, &g);
  assert_int_equal(kr_feed_parse(f, rss2, 60), 0);
  assert_int_equal(kr_feed_parse(f, rss2 + 60, 60), KR_ETOOBIG);
  kr_feed_free(f);

  /* a URL longer than max_text: cut, the URL dropped, counted */
  o.max_bytes = 1 << 20;
  o.max_text = 16;
  memset(&g, 0, sizeof g);
  f = kr_feed_new(&o, on_item, &g);
  assert_int_equal(parse(f,
                         "<urlset><url><loc>http://ex.test/a-very-long-path</loc></url>"
                         "<url><loc>http://e.t/ok</loc></url></urlset>",
                         0),
                   0);
  assert_int_equal(g.n, 2);
  assert_string_equal(g.url[0], "");
  assert_string_equal(g.url[1], "http://e.t/ok");
  assert_int_equal(kr_feed_stats(f)->dropped, 1);
  kr_feed_free(f);

  /* more items than max_items: the rest dropped, not an error */
  o.max_text = 8192;
  o.max_items = 2;
  memset(&g, 0, sizeof g);
  f = kr_feed_new(&o, on_item, &g);
  assert_int_equal(parse(f, rss2, 0), 0);
  assert_int_equal(g.n, 2);
  assert_int_equal(kr_feed_stats(f)->capped, 1);
  assert_int_equal(kr_feed_stats(f)->dropped, 2);
  kr_feed_free(f);

  /* the callback stops the parse */
  memset(&g, 0, sizeof g);
  g.stop_after = 1;
  f = kr_feed_new(NULL, on_item, &g);
  assert_int_equal(parse(f, rss2, 0), KR_ECANCELED);
  assert_int_equal(g.n, 1);
  kr_feed_free(f);
}

/* A big sitemap in random-sized chunks: every item, in order. */
static void chunked_big(void **state) {
  (void)state;
  size_t cap = 2 << 20, n = 0;
  char *doc = malloc(cap);
  assert_non_null(doc);
  n += (size_t)snprintf(doc + n, cap - n, "<?xml version=\"1.0\"?><urlset>");
  for (int i = 0; i < 20000; i++)
    n += (size_t)snprintf(doc + n, cap - n,
                          "<url><loc>http://ex.test/p/%d</loc><lastmod>2020-01-%02d</lastmod></url>\n",
                          i, i % 28 + 1);
  n += (size_t)snprintf(doc + n, cap - n, "</urlset>");
  got_t g;
  memset(&g, 0, sizeof g);
  kr_feed_t *f = kr_feed_new(NULL, on_item, &g);
  unsigned seed = 7;
  for (size_t off = 0; off < n;) {
    seed = seed * 1103515245u + 12345u;
    size_t k = 1 + (seed >> 16) % 3000;
    if (k > n - off) k = n - off;
    assert_int_equal(kr_feed_parse(f, doc + off, k), 0);
    off += k;
  }
  assert_int_equal(kr_feed_finish(f), 0);
  assert_int_equal(g.n, 20000);
  assert_string_equal(g.url[15], "http://ex.test/p/15");
  assert_int_equal(kr_feed_stats(f)->items, 20000);
  assert_true(kr_feed_stats(f)->bytes == n);
  kr_feed_free(f);
  free(doc);
  assert_string_equal(kr_feed_kind_name(KR_FEED_SITEMAP_INDEX), "sitemapindex");
  assert_string_equal(kr_feed_kind_name((kr_feed_kind_t)42), "unknown");
}

static void slice_eq(kr_slice_t s, const char *want) {
  char b[256];
  snprintf(b, sizeof b, "%.*s", (int)s.n, s.p ? s.p : "");
  assert_string_equal(b, want);
}

/* WebSub discovery: the feed-level hub and self links, not the items',
 * the first of each, in Atom and in RSS (atom:link); none in sitemaps;
 * cleared by a reset. */
static void websub_discovery(void **state) {
  (void)state;
  static const char atom[] =
      "<feed xmlns=\"http://www.w3.org/2005/Atom\">"
      "<link rel=\"alternate\" href=\"http://ex.test/\"/>"
      "<link rel=\"hub\" href=\" https://hub.test/ \"/>"
      "<link rel=\"self\" href=\"http://ex.test/feed.xml\"/>"
      "<link rel=\"hub\" href=\"https://second.test/\"/>"
      "<entry><link rel=\"self\" href=\"http://ex.test/e1.xml\"/>"
      "<link href=\"http://ex.test/e1\"/></entry></feed>";
  static const char rss[] =
      "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel>"
      "<link>http://ex.test/</link>"
      "<atom:link rel=\"self hub\" href=\"http://ex.test/rss\"/>"
      "<item><link>http://ex.test/i1</link>"
      "<atom:link rel=\"hub\" href=\"http://item.test/\"/></item></channel></rss>";
  static const char none[] = "<rss version=\"2.0\"><channel><item><link>http://ex.test/i1</link>"
                             "</item></channel></rss>";
  static const char sitemap[] =
      "<urlset xmlns:atom=\"http://www.w3.org/2005/Atom\"><atom:link rel=\"hub\" href=\"http://h/\"/>"
      "<url><loc>http://ex.test/a</loc></url></urlset>";
  got_t g;
  for (int bw = 0; bw < 2; bw++) {
    kr_feed_t *f = kr_feed_new(NULL, on_item, &g);
    memset(&g, 0, sizeof g);
    assert_int_equal(parse(f, atom, bw), 0);
    assert_int_equal(g.n, 1);
    slice_eq(kr_feed_hub(f), "https://hub.test/");
    slice_eq(kr_feed_self(f), "http://ex.test/feed.xml");
    memset(&g, 0, sizeof g);
    kr_feed_reset(f, on_item, &g);
    assert_int_equal(parse(f, rss, bw), 0);
    slice_eq(kr_feed_hub(f), "http://ex.test/rss");
    slice_eq(kr_feed_self(f), "http://ex.test/rss");
    kr_feed_reset(f, on_item, &g);
    assert_int_equal(parse(f, none, bw), 0);
    assert_int_equal(kr_feed_hub(f).n, 0);
    assert_int_equal(kr_feed_self(f).n, 0);
    kr_feed_reset(f, on_item, &g);
    assert_int_equal(parse(f, sitemap, bw), 0);
    assert_int_equal(kr_feed_hub(f).n, 0);
    kr_feed_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rss_items),     cmocka_unit_test(rdf_and_atom),
      cmocka_unit_test(sitemaps),      cmocka_unit_test(dates),
      cmocka_unit_test(billion_laughs), cmocka_unit_test(hostile),
      cmocka_unit_test(chunked_big),   cmocka_unit_test(websub_discovery),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
