/* Unit tests for the HTML and CSS link extractors (include/kria/extract.h).
 *
 * Links are collected as lines "K context url" and compared as text. The
 * split tests feed the same document whole, split at every byte offset and
 * one byte at a time, and require identical output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/buf.h"
#include "kria/error.h"
#include "kria/extract.h"

/* ---- helpers ---- */

typedef struct collect {
  kr_buf_t out;
  int fail_at; /* return -fail_code from the fail_at-th call (1-based), 0 never */
  int fail_code;
  int calls;
  size_t max_url; /* longest URL seen */
} collect_t;

static void collect_init(collect_t *c) {
  memset(c, 0, sizeof *c);
  kr_buf_init(&c->out, (size_t)1 << 30);
}

static int on_link(void *ud, const kr_extract_link_t *l) {
  collect_t *c = ud;
  c->calls++;
  if (l->url.n > c->max_url) c->max_url = l->url.n;
  assert_true(l->context != NULL);
  assert_true(l->kind == KR_EXTRACT_NAV || l->kind == KR_EXTRACT_EMBED ||
              l->kind == KR_EXTRACT_BASE);
  assert_int_equal(kr_buf_printf(&c->out, "%c %s ", (char)l->kind, l->context), 0);
  assert_int_equal(kr_buf_append(&c->out, l->url.p, l->url.n), 0);
  assert_int_equal(kr_buf_append(&c->out, "\n", 1), 0);
  if (c->fail_at && c->calls == c->fail_at) return -c->fail_code;
  return 0;
}

/* chunk: 0 = whole, else the size of every chunk. split: if nonzero, two
 * feeds split at that offset (chunk ignored). */
static char *html_run(const char *doc, size_t n, const kr_extract_opts_t *o,
                      size_t chunk, size_t split, kr_extract_stats_t *st) {
  collect_t c;
  collect_init(&c);
  kr_html_extractor_t *x = kr_extract_html_new(o, on_link, &c);
  if (split) {
    assert_int_equal(kr_extract_html_feed(x, doc, split), 0);
    assert_int_equal(kr_extract_html_feed(x, doc + split, n - split), 0);
  } else if (chunk == 0) {
    assert_int_equal(kr_extract_html_feed(x, doc, n), 0);
  } else {
    for (size_t i = 0; i < n; i += chunk)
      assert_int_equal(kr_extract_html_feed(x, doc + i, n - i < chunk ? n - i : chunk), 0);
  }
  assert_int_equal(kr_extract_html_finish(x), 0);
  if (st) *st = *kr_extract_html_stats(x);
  kr_extract_html_free(x);
  char *s = strdup(c.out.data ? c.out.data : "");
  kr_buf_free(&c.out);
  return s;
}

static char *html(const char *doc) {
  return html_run(doc, strlen(doc), NULL, 0, 0, NULL);
}

static char *html_opts(const char *doc, unsigned flags) {
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.flags = flags;
  return html_run(doc, strlen(doc), &o, 0, 0, NULL);
}

static char *css_run(const char *doc, size_t n, size_t chunk, kr_extract_stats_t *st) {
  collect_t c;
  collect_init(&c);
  kr_css_extractor_t *x = kr_extract_css_new(NULL, on_link, &c);
  if (chunk == 0) chunk = n ? n : 1;
  for (size_t i = 0; i < n; i += chunk)
    assert_int_equal(kr_extract_css_feed(x, doc + i, n - i < chunk ? n - i : chunk), 0);
  assert_int_equal(kr_extract_css_finish(x), 0);
  if (st) *st = *kr_extract_css_stats(x);
  kr_extract_css_free(x);
  char *s = strdup(c.out.data ? c.out.data : "");
  kr_buf_free(&c.out);
  return s;
}

static char *css(const char *doc) { return css_run(doc, strlen(doc), 0, NULL); }

#define EXPECT(got_expr, want)                                                 \
  do {                                                                         \
    char *got_ = (got_expr);                                                   \
    if (strcmp(got_, (want)) != 0)                                             \
      print_error("--- got:\n%s--- want:\n%s---\n", got_, (want));             \
    assert_string_equal(got_, (want));                                         \
    free(got_);                                                                \
  } while (0)

/* Whole feed, every two-piece split, one byte at a time and a few chunk
 * sizes all give the same links. */
static void assert_split_invariant(const char *doc, size_t n, const kr_extract_opts_t *o) {
  char *whole = html_run(doc, n, o, 0, 0, NULL);
  for (size_t k = 1; k < n; k++) {
    char *s = html_run(doc, n, o, 0, k, NULL);
    if (strcmp(s, whole) != 0) print_error("differs when split at %zu\n", k);
    assert_string_equal(s, whole);
    free(s);
  }
  static const size_t chunks[] = {1, 2, 3, 7, 64, 4096};
  for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
    char *s = html_run(doc, n, o, chunks[k], 0, NULL);
    if (strcmp(s, whole) != 0) print_error("differs with chunks of %zu\n", chunks[k]);
    assert_string_equal(s, whole);
    free(s);
  }
  free(whole);
}

static void assert_css_split_invariant(const char *doc) {
  size_t n = strlen(doc);
  char *whole = css_run(doc, n, 0, NULL);
  for (size_t k = 1; k <= n; k++) {
    char *s = css_run(doc, n, k, NULL); /* chunks of k: every split point */
    assert_string_equal(s, whole);
    free(s);
  }
  free(whole);
}

static char *read_fixture(const char *name, size_t *len) {
  const char *top = getenv("KRIA_TOP");
  char path[4096];
  snprintf(path, sizeof path, "%s/test/unit/fixtures/extract/%s", top ? top : ".", name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  kr_buf_t b;
  kr_buf_init(&b, (size_t)1 << 24);
  char tmp[4096];
  size_t r;
  while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) assert_int_equal(kr_buf_append(&b, tmp, r), 0);
  fclose(f);
  *len = b.len;
  return b.data;
}

/* ---- HTML: what is extracted ---- */

static void html_navigation_links(void **state) {
  (void)state;
  EXPECT(html("<a href=a.html>x</a><AREA HREF='area.html'><a>no href</a>"
              "<link rel=alternate href=feed.xml><link href=canon rel=canonical>"
              "<link href=x.css rel=stylesheet><link rel='next' href=p2>"),
         "L a/@href a.html\n"
         "L area/@href area.html\n"
         "L link/@href feed.xml\n"
         "L link/@href canon\n"
         "E link/@href x.css\n"
         "L link/@href p2\n");
}

static void html_link_rel_embeds(void **state) {
  (void)state;
  EXPECT(html("<link rel=StyleSheet href=a.css><link rel='shortcut icon' href=f.ico>"
              "<link rel=apple-touch-icon-precomposed href=t.png>"
              "<link rel=mask-icon href=m.svg><link rel=preload as=font href=f.woff2>"
              "<link rel=modulepreload href=m.js><link rel=manifest href=app.webmanifest>"
              "<link rel='alternate stylesheet' href=alt.css><link rel=prefetch href=next.html>"
              "<link rel=stylesheetx href=not.css>"),
         "E link/@href a.css\n"
         "E link/@href f.ico\n"
         "E link/@href t.png\n"
         "E link/@href m.svg\n"
         "E link/@href f.woff2\n"
         "E link/@href m.js\n"
         "E link/@href app.webmanifest\n"
         "E link/@href alt.css\n"
         "L link/@href next.html\n"
         "L link/@href not.css\n");
}

static void html_embeds(void **state) {
  (void)state;
  EXPECT(html("<img src=i.png><image src=old.png><script src=s.js></script>"
              "<iframe src=f.html></iframe><frameset><frame src=fr.html></frameset>"
              "<embed src=e.swf><video src=v.mp4 poster=p.jpg><source src=v.webm>"
              "<track src=t.vtt></video><audio src=a.ogg></audio>"
              "<input type=IMAGE src=go.png><input src=no.png><input type=text src=no2.png>"
              "<object data=o.swf></object><body background=b.gif>"
              "<table background=t.gif><tr background=r.gif><td background=d.gif>"
              "<th background=h.gif><div background=no.gif>"),
         "E img/@src i.png\n"
         "E img/@src old.png\n"
         "E script/@src s.js\n"
         "E iframe/@src f.html\n"
         "E frame/@src fr.html\n"
         "E embed/@src e.swf\n"
         "E video/@src v.mp4\n"
         "E video/@poster p.jpg\n"
         "E source/@src v.webm\n"
         "E track/@src t.vtt\n"
         "E audio/@src a.ogg\n"
         "E input/@src go.png\n"
         "E object/@data o.swf\n"
         "E body/@background b.gif\n"
         "E table/@background t.gif\n"
         "E tr/@background r.gif\n"
         "E td/@background d.gif\n"
         "E th/@background h.gif\n");
}

static void html_forms_only_when_asked(void **state) {
  (void)state;
  const char *doc = "<form action=/search><button formaction=/adv></button>"
                    "<input type=submit formaction=/in></form>";
  EXPECT(html(doc), "");
  EXPECT(html_opts(doc, KR_EXTRACT_FORMS),
         "L form/@action /search\n"
         "L button/@formaction /adv\n"
         "L input/@formaction /in\n");
}

static void html_base_first_wins(void **state) {
  (void)state;
  EXPECT(html("<a href=x><base target=_top><base href='http://b/'><base href='http://c/'>"
              "<a href=y>"),
         "L a/@href x\n"
         "B base/@href http://b/\n"
         "L a/@href y\n");
  /* an empty href is still the first base (it means the document URL) */
  EXPECT(html("<base href><base href=http://c/>"), "B base/@href \n");
  EXPECT(html("<base href=''><base href=http://c/>"), "B base/@href \n");
}

static void html_srcset(void **state) {
  (void)state;
  EXPECT(html("<img srcset='a.jpg 1x, b.jpg 2x'>"),
         "E img/@srcset a.jpg\nE img/@srcset b.jpg\n");
  /* a comma inside a URL stays; trailing commas end the candidate */
  EXPECT(html("<img srcset='a,b.jpg 1x,c.jpg'>"), "E img/@srcset a,b.jpg\nE img/@srcset c.jpg\n");
  EXPECT(html("<img srcset='a.jpg,b.jpg'>"), "E img/@srcset a.jpg,b.jpg\n");
  EXPECT(html("<img srcset='a.jpg, b.jpg,, ,c.jpg'>"),
         "E img/@srcset a.jpg\nE img/@srcset b.jpg\nE img/@srcset c.jpg\n");
  EXPECT(html("<img srcset=' \n ,, a.jpg  100w  ,b.jpg 200w'>"),
         "E img/@srcset a.jpg\nE img/@srcset b.jpg\n");
  /* commas inside descriptor parentheses do not split */
  EXPECT(html("<img srcset='a.jpg (x, y), b.jpg'>"), "E img/@srcset a.jpg\nE img/@srcset b.jpg\n");
  EXPECT(html("<img srcset='data:image/gif;base64,AA== 1w, real.jpg 2w'>"),
         "E img/@srcset data:image/gif;base64,AA==\nE img/@srcset real.jpg\n");
  EXPECT(html("<img srcset=''><img srcset=', , '><img srcset>"), "");
  EXPECT(html("<picture><source srcset='s1.webp 1x,s2.webp 2x'><img src=f.jpg></picture>"),
         "E source/@srcset s1.webp\nE source/@srcset s2.webp\nE img/@src f.jpg\n");
}

static void html_meta_refresh(void **state) {
  (void)state;
  static const struct {
    const char *content, *url; /* url NULL: none */
  } cases[] = {
      {"0; url='x.html'", "x.html"},
      {"0; URL=x.html", "x.html"},
      {"5;url=x.html", "x.html"},
      {"0,url=\"x.html\" trailing", "x.html"},
      {"0; url = 'x y.html' z", "x y.html"},
      {"0; url='unterminated", "unterminated"},
      {"0; x.html", "x.html"},
      {"0 x.html", "x.html"},
      {".5; url=x.html", "x.html"},
      {"1.5.2; url=x.html", "x.html"},
      {"0;urlx.html", "urlx.html"},
      {"0; ur=x.html", "ur=x.html"},
      {"0; 'q.html'", "q.html"},
      {"  3  ;  url=  x.html  ", "x.html"},
      {"3", NULL},
      {"3;", NULL},
      {"url=x.html", NULL},
      {"x; url=x.html", NULL},
      {"0x; url=x.html", NULL},
      {"0; url=", NULL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char doc[256], want[256];
    snprintf(doc, sizeof doc, "<meta http-equiv=Refresh content=\"%s\">", cases[k].content);
    if (strchr(cases[k].content, '"'))
      snprintf(doc, sizeof doc, "<meta http-equiv=Refresh content='%s'>", cases[k].content);
    if (cases[k].url) snprintf(want, sizeof want, "L meta/@content %s\n", cases[k].url);
    else want[0] = 0;
    char *got = html(doc);
    if (strcmp(got, want) != 0) print_error("content=%s\n", cases[k].content);
    assert_string_equal(got, want);
    free(got);
  }
  /* http-equiv after content, padded; without it nothing */
  EXPECT(html("<meta content='0;url=a' http-equiv=' REFRESH '>"), "L meta/@content a\n");
  EXPECT(html("<meta content='0;url=a'><meta name=refresh content='0;url=b'>"), "");
}

static void html_entities_in_values(void **state) {
  (void)state;
  EXPECT(html("<a href='a?b=1&amp;c=2&quot;&lt;&gt;&apos;'>"), "L a/@href a?b=1&c=2\"<>'\n");
  EXPECT(html("<a href=\"/&#47;&#x2F;&#X2f;&#x2f\">"), "L a/@href /////\n");
  EXPECT(html("<a href='x&nbsp;y'>"), "L a/@href x\xc2\xa0y\n");
  /* legacy names decode without ';' unless '=' or an alphanumeric follows */
  EXPECT(html("<a href='?a=1&copy=2&amp=3&ampx&amp'>"), "L a/@href ?a=1&copy=2&amp=3&ampx&\n");
  EXPECT(html("<a href='&copy2'>"), "L a/@href &copy2\n");
  EXPECT(html("<a href='&copy-'>"), "L a/@href \xc2\xa9-\n");
  /* names that need ';' */
  EXPECT(html("<a href='&sol;&colon;&quest;&equals;&num;&percnt;&sol'>"), "L a/@href /:?=#%&sol\n");
  EXPECT(html("<a href='&unknown;&&#;&#x;&#xZ;& x'>"), "L a/@href &unknown;&&#;&#x;&#xZ;& x\n");
  /* numeric edge cases: NUL, C1 remap, surrogates, out of range */
  EXPECT(html("<a href='&#0;|&#128;|&#x9F;|&#xD800;|&#x110000;|&#99999999999;|&#x41'>"),
         "L a/@href \xef\xbf\xbd|\xe2\x82\xac|\xc5\xb8|\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd|A\n");
  EXPECT(html("<a href='&#x1F426;'>"), "L a/@href \xf0\x9f\x90\xa6\n");
  /* unquoted values: '&' and references too */
  EXPECT(html("<a href=a&amp;b&lt>"), "L a/@href a&b<\n");
  /* a 33-letter name is no entity */
  EXPECT(html("<a href='&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;'>"),
         "L a/@href &aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;\n");
  /* obfuscated scheme is decoded, then filtered when asked */
  EXPECT(html("<a href='javascript&colon;alert(1)'>"), "L a/@href javascript:alert(1)\n");
  EXPECT(html_opts("<a href='javascript&colon;alert(1)'><a href=ok>", KR_EXTRACT_HTTP_ONLY),
         "L a/@href ok\n");
}

static void html_attribute_syntax(void **state) {
  (void)state;
  /* trimming, case, missing values, odd names, duplicates (first wins) */
  EXPECT(html("<A HREF=\" \t\n/x \r\n\">"), "L a/@href /x\n");
  EXPECT(html("<a\nhref\n=\n'y'\n>"), "L a/@href y\n");
  EXPECT(html("<a href=1 href=2><img SRC=a src=b><a class=x href='3' HREF=4>"),
         "L a/@href 1\nE img/@src a\nL a/@href 3\n");
  EXPECT(html("<a href>"), "");
  EXPECT(html("<img src=><a href=''><base href>"), "B base/@href \n"); /* nothing stored */
  EXPECT(html("<a =href=x href=y>"), "L a/@href y\n");
  EXPECT(html("<a data-href=x xhref=y href-x=z>"), "");
  EXPECT(html("<a title='>' href=ok>"), "L a/@href ok\n");
  EXPECT(html("<a title=\"'\" href='\"q\"'>"), "L a/@href \"q\"\n");
  EXPECT(html("<a/href=s1><a href=s2/><a href='s3'/><img/src=s4>"),
         "L a/@href s1\nL a/@href s2/\nL a/@href s3\nE img/@src s4\n");
  EXPECT(html("<a href='x'title=t>"), "L a/@href x\n");
  EXPECT(html("<a href=a<b>"), "L a/@href a<b\n");
  /* end tags carry no links; "< a" and "<3" are text */
  EXPECT(html("</a href=x>< a href=y><3 <a href=z>"), "L a/@href z\n");
  /* long unknown tag and attribute names */
  EXPECT(html("<averyveryverylongtagname href=x><a averyveryverylongattributename=1 href=k>"),
         "L a/@href k\n");
}

static void html_comments_hide_links(void **state) {
  (void)state;
  EXPECT(html("<!-- <a href=c1> --><a href=v1>"), "L a/@href v1\n");
  EXPECT(html("<!--><a href=v2>"), "L a/@href v2\n");
  EXPECT(html("<!---><a href=v3>"), "L a/@href v3\n");
  EXPECT(html("<!-- x --!><a href=v4>"), "L a/@href v4\n");
  EXPECT(html("<!-- -- - > --- <a href=c2> ---><a href=v5>"), "L a/@href v5\n");
  EXPECT(html("<!-- <!-- <a href=c3> --><a href=v6>"), "L a/@href v6\n");
  EXPECT(html("<!----!-><a href=c4>--><a href=v7>"), "L a/@href v7\n");
  /* bogus comments and DOCTYPE end at the first '>' */
  EXPECT(html("<? php <a href=c5> ?><a href=v8>"), "L a/@href v8\n");
  EXPECT(html("<!x <a href=c6><a href=v9>"), "L a/@href v9\n");
  EXPECT(html("<!><a href=v10></ 1 <a href=c7><a href=v11>"), "L a/@href v10\nL a/@href v11\n");
  EXPECT(html("<!DOCTYPE html PUBLIC \"-//W3C//DTD\"><a href=v12><!doctype><a href=v13>"),
         "L a/@href v12\nL a/@href v13\n");
  /* CDATA is a bogus comment in HTML content ... */
  EXPECT(html("<![CDATA[ x > <a href=v14> ]]>"), "L a/@href v14\n");
  /* ... but a CDATA section inside svg */
  EXPECT(html("<svg><![CDATA[ x > <a href=c8> ]] ]]]><a href=v15></svg>"),
         "L svg:a/@href v15\n");
}

static void html_raw_text_elements(void **state) {
  (void)state;
  EXPECT(html("<script src=s.js>document.write('<a href=\"c1\">')</script><a href=v1>"),
         "E script/@src s.js\nL a/@href v1\n");
  EXPECT(html("<script>x</scripty><a href=c2></SCRIPT\t><a href=v2>"), "L a/@href v2\n");
  EXPECT(html("<script>x</script/ ><a href=v3>"), "L a/@href v3\n");
  /* script escapes: an inner <script> makes the first </script> not end it */
  EXPECT(html("<script><!-- <script> </script> <a href=c3> --></script><a href=v4>"),
         "L a/@href v4\n");
  EXPECT(html("<script><!-- </script><a href=v5>"), "L a/@href v5\n");
  EXPECT(html("<script><!--><a href=c4></script><a href=v6>"), "L a/@href v6\n");
  EXPECT(html("<script><!-- <scripts> </script><a href=v7>"), "L a/@href v7\n");
  EXPECT(html("<script><!-- <script> --> </script><a href=v8>"), "L a/@href v8\n");
  EXPECT(html("<script><!-- <script> </scrip> <a href=c5> </script> --></script><a href=v9>"),
         "L a/@href v9\n");
  /* <script/> is not self-closing in HTML */
  EXPECT(html("<script src=a.js /><a href=c6></script><a href=v10>"),
         "E script/@src a.js\nL a/@href v10\n");
  EXPECT(html("<textarea><a href=c7></textarea><a href=v11>"), "L a/@href v11\n");
  EXPECT(html("<title><a href=c8></title ><a href=v12>"), "L a/@href v12\n");
  EXPECT(html("<xmp><a href=c9></xmp><a href=v13>"), "L a/@href v13\n");
  EXPECT(html("<noembed><a href=c10></noembed><noframes><a href=c11></noframes><a href=v14>"),
         "L a/@href v14\n");
  EXPECT(html("<iframe src=f><a href=c12></iframe><a href=v15>"),
         "E iframe/@src f\nL a/@href v15\n");
  EXPECT(html("<style><a href=c13></style><a href=v16>"), "L a/@href v16\n");
  EXPECT(html("<plaintext><a href=c14></plaintext><a href=c15>"), "");
  /* noscript content is parsed (scripting disabled view: fallbacks) */
  EXPECT(html("<noscript><img src=pixel.gif></noscript>"), "E img/@src pixel.gif\n");
}

static void html_style_css(void **state) {
  (void)state;
  EXPECT(html("<style>@import 'a.css'; body{background:url(b.png)} /* url(c.png) */</style>"
              "<style media=print>p{background:URL( \"d.png\" )}</style>"),
         "E style/@import a.css\nE style/url() b.png\nE style/url() d.png\n");
  /* </style> split-proof and "</styl" is CSS text */
  EXPECT(html("<style>x{background:url(e.png)}</styl</stylex>p{b:url(f.png)}</STYLE><a href=v>"),
         "E style/url() e.png\nE style/url() f.png\nL a/@href v\n");
  /* the held-back bytes of a "</" that is no end tag are CSS text */
  EXPECT(html("<style>a{b:url(x</sty)} c{d:url('</')}</style>"),
         "E style/url() x</sty\nE style/url() </\n");
  /* EOF inside <style> ends the stylesheet: its last URL counts */
  EXPECT(html("<style>x{background:url(g.png"), "E style/url() g.png\n");
  EXPECT(html("<div style=\"background:url('h.png')\"><p style=background:url(i.png)>"
              "<p style='background:url(&quot;j.png&quot;) url(&#107;.png)'>"),
         "E @style/url() h.png\nE @style/url() i.png\nE @style/url() j.png\n"
         "E @style/url() k.png\n");
  /* a style attribute's URLs come when the attribute ends, before the tag's */
  EXPECT(html("<img src=a.png style=background:url(b.png)>"),
         "E @style/url() b.png\nE img/@src a.png\n");
  /* duplicate style attribute: first wins */
  EXPECT(html("<p style=x:url(1) style=x:url(2)>"), "E @style/url() 1\n");
  /* style attribute cut by EOF: URLs complete before it count, the
   * unfinished one is dropped */
  EXPECT(html("<p style='x:url(1) y:url(2"), "E @style/url() 1\n");
}

static void html_foreign_content(void **state) {
  (void)state;
  EXPECT(html("<svg><a xlink:href=s1><image href=s2 xlink:href=s3/><use xlink:href=#i>"
              "<feImage href=f.png></svg><a href=h>"),
         "L svg:a/@href s1\nE svg:image/@href s2\nE svg:image/@href #i\n"
         "E svg:image/@href f.png\nL a/@href h\n");
  /* style and script inside svg are not raw text */
  EXPECT(html("<svg><style><a href=s4></style><script><a href=s5></script></svg>"),
         "L svg:a/@href s4\nL svg:a/@href s5\n");
  /* breakout tags end foreign content */
  EXPECT(html("<svg><p><style><a href=c></style><a href=h>"), "L a/@href h\n");
  /* nested svg / math, and <svg/> opens nothing */
  EXPECT(html("<svg><svg></svg><a href=s6></svg><a href=h2><svg/><style><a href=c2></style>"
              "<math><a href=m></math>"),
         "L svg:a/@href s6\nL a/@href h2\nL svg:a/@href m\n");
}

static void html_http_only_filter(void **state) {
  (void)state;
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.flags = KR_EXTRACT_HTTP_ONLY;
  const char *doc = "<a href='javascript:x()'><a href=' JavaScript:x'><a href='java\nscript:x'>"
                    "<a href=mailto:a@b><img src='data:image/png;base64,AA'><a href=ftp://h/>"
                    "<a href=tel:123><a href=localhost:8080/x>"
                    "<a href=HTTPS://ok/1><a href=http:ok2><a href=//ok/3><a href=/ok4>"
                    "<a href=ok5.html><a href='ok6?x=a:b'><a href='#ok7'><a href='1a:b'>";
  kr_extract_stats_t st;
  EXPECT(html_run(doc, strlen(doc), &o, 0, 0, &st),
         "L a/@href HTTPS://ok/1\nL a/@href http:ok2\nL a/@href //ok/3\nL a/@href /ok4\n"
         "L a/@href ok5.html\nL a/@href ok6?x=a:b\nL a/@href #ok7\nL a/@href 1a:b\n");
  assert_int_equal(st.filtered, 8);
  /* without the flag everything is given */
  kr_extract_stats_t st2;
  char *all = html_run(doc, strlen(doc), NULL, 0, 0, &st2);
  free(all);
  assert_int_equal(st2.links, 16);
  assert_int_equal(st2.filtered, 0);
}

static void html_value_cap(void **state) {
  (void)state;
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.max_value = 32;
  char doc[256];
  /* exactly 32 bytes pass, 33 are skipped; entities count decoded */
  snprintf(doc, sizeof doc, "<a href='%032d'><a href='%033d'><a href='%028d&amp;&amp;&amp;&amp;'>"
           "<a href=ok>", 1, 2, 3);
  kr_extract_stats_t st;
  EXPECT(html_run(doc, strlen(doc), &o, 0, 0, &st),
         "L a/@href 00000000000000000000000000000001\n"
         "L a/@href 0000000000000000000000000003&&&&\n"
         "L a/@href ok\n");
  assert_int_equal(st.too_long, 1);
  assert_split_invariant(doc, strlen(doc), &o);
  /* a skipped base still takes the base slot */
  snprintf(doc, sizeof doc, "<base href='%040d'><base href=second><a href=x>", 0);
  EXPECT(html_run(doc, strlen(doc), &o, 0, 0, NULL), "L a/@href x\n");
}

static void html_callback_error_stops(void **state) {
  (void)state;
  collect_t c;
  collect_init(&c);
  c.fail_at = 2;
  c.fail_code = 77;
  kr_html_extractor_t *x = kr_extract_html_new(NULL, on_link, &c);
  const char *doc = "<a href=1><a href=2><a href=3>";
  assert_int_equal(kr_extract_html_feed(x, doc, strlen(doc)), -77);
  assert_int_equal(kr_extract_html_feed(x, "<a href=4>", 10), -77);
  assert_int_equal(kr_extract_html_finish(x), -77);
  assert_int_equal(c.calls, 2);
  /* reset makes it usable again */
  kr_buf_reset(&c.out);
  c.fail_at = 0;
  kr_extract_html_reset(x, on_link, &c);
  assert_int_equal(kr_extract_html_feed(x, "<a href=5>", 10), 0);
  assert_int_equal(kr_extract_html_finish(x), 0);
  assert_string_equal(c.out.data, "L a/@href 5\n");
  kr_extract_html_free(x);
  kr_buf_free(&c.out);
}

static void html_reset_clears_document_state(void **state) {
  (void)state;
  collect_t c;
  collect_init(&c);
  kr_html_extractor_t *x = kr_extract_html_new(NULL, on_link, &c);
  /* first document ends inside a script, a base was seen, svg open */
  const char *d1 = "<base href=b1><svg><script><a href=no>";
  assert_int_equal(kr_extract_html_feed(x, d1, strlen(d1)), 0);
  assert_int_equal(kr_extract_html_finish(x), 0);
  kr_buf_reset(&c.out);
  kr_extract_html_reset(x, on_link, &c);
  const char *d2 = "<base href=b2><style>a{b:url(u)}</style><a href=yes>";
  assert_int_equal(kr_extract_html_feed(x, d2, strlen(d2)), 0);
  assert_int_equal(kr_extract_html_finish(x), 0);
  assert_string_equal(c.out.data, "B base/@href b2\nE style/url() u\nL a/@href yes\n");
  assert_int_equal(kr_extract_html_stats(x)->links, 3);
  kr_extract_html_free(x);
  kr_buf_free(&c.out);
}

/* ---- split invariance ---- */

static void html_split_everywhere_fixture(void **state) {
  (void)state;
  size_t n;
  char *doc = read_fixture("page.html", &n);
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.flags = KR_EXTRACT_FORMS;
  assert_split_invariant(doc, n, &o);
  free(doc);
}

static void html_split_everywhere_torture(void **state) {
  (void)state;
  static const char doc[] =
      "<!DOCTYPE html><!-- c <a href=no> --!><!--><!---><a href=a1>"
      "<A\tHREF = \"&amp;x&#x2F;&#47&copy=&notit;&lt\" TITLE='>'>"
      "<img srcset=' s1.jpg 1x , s2,x.jpg (a,b) 2x,s3.jpg,,'>"
      "<meta content=\" 0 ; URL = 'r.html' x\" http-equiv=refresh>"
      "<script><!--<script>--></script><a href=dd></script>"
      "<script>a</scrip</script ><style>@import url( i.css );"
      "x{y:url(a\\29 b.png) url('q\\'\\\n.png')}/* url(no) */</sty</style>"
      "<svg><![CDATA[<a href=no>]]><a xlink:href=svga></svg>"
      "<p style=\"b:url(&quot;st.png&quot;)\"><? <a href=no> ?>"
      "<base href=base1><link rel='Icon' href=i.ico><textarea></textareaa><a href=no>"
      "</textarea><a href='\0nul'>";
  assert_split_invariant(doc, sizeof doc - 1, NULL);
  /* and that document's links are the expected ones */
  EXPECT(html_run(doc, sizeof doc - 1, NULL, 0, 0, NULL),
         "L a/@href a1\n"
         "L a/@href &x//&copy=&notit;<\n"
         "E img/@srcset s1.jpg\n"
         "E img/@srcset s2,x.jpg\n"
         "E img/@srcset s3.jpg\n"
         "L meta/@content r.html\n"
         "L a/@href dd\n"
         "E style/@import i.css\n"
         "E style/url() a)b.png\n"
         "E style/url() q'.png\n"
         "L svg:a/@href svga\n"
         "E @style/url() st.png\n"
         "B base/@href base1\n"
         "E link/@href i.ico\n"
         "L a/@href \xef\xbf\xbdnul\n");
}

/* ---- the realistic page ---- */

static void html_fixture_page(void **state) {
  (void)state;
  size_t n;
  char *doc = read_fixture("page.html", &n);
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.flags = KR_EXTRACT_FORMS;
  kr_extract_stats_t st;
  char *got = html_run(doc, n, &o, 0, 0, &st);
  size_t wn;
  char *want = read_fixture("page.expected", &wn);
  if (strcmp(got, want) != 0) print_error("--- got:\n%s", got);
  assert_string_equal(got, want);
  assert_int_equal(st.too_long, 0);
  assert_int_equal(st.capped, 0);
  free(got);
  free(want);
  free(doc);
}

/* ---- hostile input ---- */

static void html_eof_in_the_middle(void **state) {
  (void)state;
  /* WHATWG: EOF in a tag drops the tag */
  static const char *const cut[] = {
      "<a href=x", "<a href='x", "<a href=\"x\"", "<a href=x ", "<a href", "<a href=",
      "<a href=x /", "<a href='&amp", "<a href='&#12", "<a", "<", "</a", "<!--<a href=x>",
      "<!-- <a href=x> --", "<script><a href=x>", "<!DOCTYPE <a href=x>", "<svg><![CDATA[<a href=x>",
      "<a href='x&#x", "<textarea><a href=x></textarea", "<script><!--<script></script><a href=x>",
  };
  for (size_t k = 0; k < sizeof cut / sizeof cut[0]; k++) {
    char *s = html(cut[k]);
    if (*s) print_error("doc %s\n", cut[k]);
    assert_string_equal(s, "");
    free(s);
  }
}

static void html_huge_attribute(void **state) {
  (void)state;
  size_t big = (size_t)1 << 20;
  size_t n = big + 256 + 50000 * 4;
  char *doc = malloc(n);
  size_t k = (size_t)sprintf(doc, "<a href=ok1><a href=\"");
  memset(doc + k, 'x', big);
  k += big;
  k += (size_t)sprintf(doc + k, "\"><img title='t' src='ok2'>");
  kr_extract_stats_t st;
  EXPECT(html_run(doc, k, NULL, 0, 0, &st), "L a/@href ok1\nE img/@src ok2\n");
  assert_int_equal(st.too_long, 1);
  EXPECT(html_run(doc, k, NULL, 1000, 0, NULL), "L a/@href ok1\nE img/@src ok2\n");
  /* a huge uninteresting attribute and a huge style attribute with a URL
   * at the end: the style's URLs are capped one by one, not as a whole */
  k = (size_t)sprintf(doc, "<div data-x='");
  memset(doc + k, 'y', big);
  k += big;
  k += (size_t)sprintf(doc + k, "' style='");
  for (size_t j = 0; j < 50000; j++) k += (size_t)sprintf(doc + k, "a:b;");
  k += (size_t)sprintf(doc + k, "c:url(end.png)'>");
  EXPECT(html_run(doc, k, NULL, 0, 0, NULL), "E @style/url() end.png\n");
  free(doc);
}

static void html_link_cap(void **state) {
  (void)state;
  size_t links = 100001;
  char *doc = malloc(links * 16 + 64);
  size_t k = 0;
  for (size_t j = 0; j < links; j++) k += (size_t)sprintf(doc + k, "<a href=/%zu>", j);
  collect_t c;
  collect_init(&c);
  kr_html_extractor_t *x = kr_extract_html_new(NULL, on_link, &c);
  assert_int_equal(kr_extract_html_feed(x, doc, k), 0);
  assert_int_equal(kr_extract_html_feed(x, "<a href=more>", 13), 0);
  assert_int_equal(kr_extract_html_finish(x), 0);
  const kr_extract_stats_t *st = kr_extract_html_stats(x);
  assert_int_equal(st->links, KR_EXTRACT_MAX_LINKS_DEFAULT);
  assert_int_equal(st->capped, 1);
  assert_int_equal(c.calls, KR_EXTRACT_MAX_LINKS_DEFAULT);
  kr_extract_html_free(x);
  kr_buf_free(&c.out);

  /* exactly at the cap is not capped; a small configured cap holds too */
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.max_links = 3;
  kr_extract_stats_t s2;
  EXPECT(html_run("<a href=1><a href=2><a href=3>", 30, &o, 0, 0, &s2),
         "L a/@href 1\nL a/@href 2\nL a/@href 3\n");
  assert_int_equal(s2.capped, 0);
  EXPECT(html_run("<a href=1><style>a{b:url(2)}x{y:url(3) url(4)}</style><a href=5>", 63, &o,
                  1, 0, &s2),
         "L a/@href 1\nE style/url() 2\nE style/url() 3\n");
  assert_int_equal(s2.capped, 1);
  free(doc);
}

static void html_binary_garbage(void **state) {
  (void)state;
  /* NULs, invalid UTF-8 and random bytes: no crash, bounded output, and the
   * same result however fed */
  size_t n = (size_t)1 << 20;
  char *doc = malloc(n);
  uint64_t r = 0x9e3779b97f4a7c15ull;
  for (size_t k = 0; k < n; k++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    /* bias towards markup bytes so many states are reached */
    static const char markup[] = "<>/='\"&#;!-[]?aAsStTyYlLeEhHrRfFcCpPiImMgGxX \n\0\xff\xc3";
    doc[k] = (r & 3) ? markup[(r >> 8) % (sizeof markup - 1)] : (char)(r >> 16);
  }
  kr_extract_stats_t st;
  char *a = html_run(doc, n, NULL, 0, 0, &st);
  char *b = html_run(doc, n, NULL, 4093, 0, NULL);
  assert_string_equal(a, b);
  assert_true(st.tags > 1000);
  free(a);
  free(b);
  /* smaller slice of it split everywhere */
  assert_split_invariant(doc, 3000, NULL);
  free(doc);
  /* NUL in a tag or attribute name is U+FFFD: another name */
  static const char nuls[] = "<a\0 href=x><a h\0ref=y><a href=\xff\xfe\xc3><a href=x\0y>";
  EXPECT(html_run(nuls, sizeof nuls - 1, NULL, 0, 0, NULL),
         "L a/@href \xff\xfe\xc3\nL a/@href x\xef\xbf\xbdy\n");
}

static void html_deep_nesting(void **state) {
  (void)state;
  size_t depth = 10000;
  kr_buf_t b;
  kr_buf_init(&b, (size_t)1 << 24);
  for (size_t k = 0; k < depth; k++) assert_int_equal(kr_buf_append_str(&b, "<div><svg>"), 0);
  assert_int_equal(kr_buf_append_str(&b, "<a href=deep>"), 0);
  for (size_t k = 0; k < depth; k++) assert_int_equal(kr_buf_append_str(&b, "</svg></div>"), 0);
  assert_int_equal(kr_buf_append_str(&b, "<a href=after>"), 0);
  kr_extract_stats_t st;
  EXPECT(html_run(b.data, b.len, NULL, 0, 0, &st), "L svg:a/@href deep\nL a/@href after\n");
  assert_int_equal(st.tags, depth * 4 + 2);
  kr_buf_free(&b);
}

/* ---- CSS ---- */

static void css_urls_and_imports(void **state) {
  (void)state;
  EXPECT(css("@import \"a.css\";\n@import 'b.css' screen;\n@import url(c.css);\n"
             "@IMPORT URL( \"d.css\" ) print;\n@importx 'no1';\n@media x { @import 'e.css'; }\n"
             "body { background: url(f.png) no-repeat, Url( 'g.png' ), url(\"h.png\"); }\n"
             "p { content: 'url(no2)'; x: myurl(no3); y: -url(no4); z: url-x(no5) }\n"
             "@font-face { src: url(font.woff2) format('woff2'), url(f.woff) }\n"),
         "E css/@import a.css\nE css/@import b.css\nE css/@import c.css\n"
         "E css/@import d.css\nE css/@import e.css\nE css/url() f.png\n"
         "E css/url() g.png\nE css/url() h.png\nE css/url() font.woff2\nE css/url() f.woff\n");
}

static void css_comments_and_strings(void **state) {
  (void)state;
  EXPECT(css("/* url(no1) @import 'no2'; */ a{b:url(y1)} /* ** / url(no3) **/ /**/"
             "c{d:\"url(no4)\" '\\'url(no5)' url(y2)}"),
         "E css/url() y1\nE css/url() y2\n");
  /* @import then a comment then the string */
  EXPECT(css("@import /* x */ 'i.css';"), "E css/@import i.css\n");
  /* @import followed by something else: the later string is no import */
  EXPECT(css("@import ; 'no.css'"), "");
  /* a bad string (raw newline) is dropped; the scanner recovers */
  EXPECT(css("@import 'bad\n.css; a{b:url(ok)}"), "E css/url() ok\n");
  /* (a quote after the bad string opens a new string, as in browsers) */
  EXPECT(css("@import 'bad\n.css'; a{b:url(no)}"), "");
  /* line continuation in a string */
  EXPECT(css("@import 'li\\\nne.css'; @import \"cr\\\r\nlf.css\";"),
         "E css/@import line.css\nE css/@import crlf.css\n");
  /* a url inside a comment inside a url is part of the url */
  EXPECT(css("a{b:url(x/*y*/z)}"), "E css/url() x/*y*/z\n");
}

static void css_escapes(void **state) {
  (void)state;
  EXPECT(css("a{b:url(a\\)b.png) c:url(\\61 b.png) d:url(\\000061x) e:url(\\0) f:url('\\\"q\\'')}"),
         "E css/url() a)b.png\nE css/url() ab.png\nE css/url() ax\n"
         "E css/url() \xef\xbf\xbd\nE css/url() \"q'\n");
  EXPECT(css("a{b:url(\\1F426 .png) c:url(\\D800) d:url(\\110000)}"),
         "E css/url() \xf0\x9f\x90\xa6.png\nE css/url() \xef\xbf\xbd\nE css/url() \xef\xbf\xbd\n");
  /* hex escape then CRLF is one whitespace */
  EXPECT(css("a{b:url(\\41\r\nb)}"), "E css/url() Ab\n");
  /* an escaped identifier char before url( makes it another function */
  EXPECT(css("a{b:\\41 url(no) c:\\41url(no2) d: url(yes)}"), "E css/url() yes\n");
  /* '#' and '@' tokens swallow a following url( as a name */
  EXPECT(css("#url(no) @url(no2) a{b:url(yes)}"), "E css/url() yes\n");
}

static void css_bad_urls(void **state) {
  (void)state;
  EXPECT(css("a{b:url(a b) c:url(a\"b) d:url(a'b) e:url(a(b) f:url(a\x01) g:url(a\\\nb)"
             " h:url(ok)}"),
         "E css/url() ok\n");
  /* bad url recovery stops at ')' but not at an escaped one */
  EXPECT(css("a{b:url(x y\\) url(no)) c:url(ok2)}"), "E css/url() ok2\n");
  /* whitespace before ')' is fine; empty urls are not links */
  EXPECT(css("a{b:url(  sp.png \t\n) c:url() d:url( ) e:url('')}"), "E css/url() sp.png\n");
  /* NUL is U+FFFD */
  EXPECT(css_run("a{b:url(x\0y)}", 13, 0, NULL), "E css/url() x\xef\xbf\xbdy\n");
}

static void css_eof(void **state) {
  (void)state;
  /* EOF completes url and string tokens */
  EXPECT(css("a{b:url(end.png"), "E css/url() end.png\n");
  EXPECT(css("a{b:url(end.png  "), "E css/url() end.png\n");
  EXPECT(css("@import 'end.css"), "E css/@import end.css\n");
  EXPECT(css("a{b:url(\"end2.png"), "E css/url() end2.png\n");
  EXPECT(css("a{b:url(e\\"), "E css/url() e\xef\xbf\xbd\n");
  EXPECT(css("a{b:url(e\\41"), "E css/url() eA\n");
  EXPECT(css("a{b:url(e f"), "");
  EXPECT(css("/* url(x)"), "");
  EXPECT(css("a{b:url("), "");
}

static void css_split_everywhere(void **state) {
  (void)state;
  assert_css_split_invariant(
      "@import 'a.css';@import url( b.css ) x;/* url(no) */a{b:url(c\\29 d)"
      " e:url(\"f\\\ng\") h:url(i j) k:url(\\1F426\r\nl) m:myurl(n) o:URL(p) q:'url(no)'}"
      "@import\t\"r.css\"; #url(no) s:url(t");
  size_t n;
  char *doc = read_fixture("style.css", &n);
  char *whole = css_run(doc, n, 0, NULL);
  for (size_t k = 1; k <= 64; k++) {
    char *s = css_run(doc, n, k, NULL);
    assert_string_equal(s, whole);
    free(s);
  }
  size_t wn;
  char *want = read_fixture("style.expected", &wn);
  if (strcmp(whole, want) != 0) print_error("--- got:\n%s", whole);
  assert_string_equal(whole, want);
  free(want);
  free(whole);
  free(doc);
}

static void css_hostile(void **state) {
  (void)state;
  /* a 1 MB url is skipped, the next one is not */
  size_t big = (size_t)1 << 20;
  char *doc = malloc(big + 64);
  size_t k = (size_t)sprintf(doc, "a{b:url(");
  memset(doc + k, 'x', big);
  k += big;
  k += (size_t)sprintf(doc + k, ") c:url(ok)}");
  kr_extract_stats_t st;
  EXPECT(css_run(doc, k, 0, &st), "E css/url() ok\n");
  assert_int_equal(st.too_long, 1);
  /* same for a quoted one and an import */
  k = (size_t)sprintf(doc, "@import '");
  memset(doc + k, 'x', big);
  k += big;
  k += (size_t)sprintf(doc + k, "'; a{c:url(ok)}");
  EXPECT(css_run(doc, k, 7, &st), "E css/url() ok\n");
  /* random bytes */
  uint64_t r = 88172645463325252ull;
  for (size_t j = 0; j < big; j++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    static const char bytes[] = "url(uRL)@import/*\\'\" \n\r\f0aF;{}#\0\xff";
    doc[j] = (r & 1) ? bytes[(r >> 8) % (sizeof bytes - 1)] : (char)(r >> 24);
  }
  char *a = css_run(doc, big, 0, NULL);
  char *b = css_run(doc, big, 1021, NULL);
  assert_string_equal(a, b);
  free(a);
  free(b);
  free(doc);
}

static void css_link_cap_and_error(void **state) {
  (void)state;
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  o.max_links = 2;
  collect_t c;
  collect_init(&c);
  kr_css_extractor_t *x = kr_extract_css_new(&o, on_link, &c);
  const char *doc = "a{b:url(1) c:url(2) d:url(3)}";
  assert_int_equal(kr_extract_css_feed(x, doc, strlen(doc)), 0);
  assert_int_equal(kr_extract_css_finish(x), 0);
  assert_int_equal(kr_extract_css_stats(x)->links, 2);
  assert_int_equal(kr_extract_css_stats(x)->capped, 1);
  kr_buf_reset(&c.out);
  c.calls = 0;
  c.fail_at = 1;
  c.fail_code = 9;
  kr_extract_css_reset(x, on_link, &c);
  assert_int_equal(kr_extract_css_feed(x, doc, strlen(doc)), -9);
  assert_int_equal(kr_extract_css_feed(x, doc, strlen(doc)), -9);
  assert_int_equal(kr_extract_css_finish(x), -9);
  assert_int_equal(c.calls, 1);
  kr_extract_css_free(x);
  kr_buf_free(&c.out);
}

/* ---- throughput (reported, not asserted) ---- */

/* CPU time, not wall time: the figure should not depend on other load. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_only(void *ud, const kr_extract_link_t *l) {
  (void)l;
  (*(uint64_t *)ud)++;
  return 0;
}

static void throughput_report(void **state) {
  (void)state;
  size_t n;
  char *page = read_fixture("page.html", &n);
  /* ~10 MB of the fixture page fed in 16 KiB chunks, document by document */
  size_t reps = (10u << 20) / n;
  kr_extract_opts_t o;
  kr_extract_opts_default(&o);
  uint64_t links = 0;
  kr_html_extractor_t *x = kr_extract_html_new(&o, count_only, &links);
  double best = 1e9;
  for (int round = 0; round < 3; round++) {
    double t0 = now_s();
    for (size_t r = 0; r < reps; r++) {
      kr_extract_html_reset(x, count_only, &links);
      for (size_t i = 0; i < n; i += 16384)
        kr_extract_html_feed(x, page + i, n - i < 16384 ? n - i : 16384);
      kr_extract_html_finish(x);
    }
    double dt = now_s() - t0;
    if (dt < best) best = dt;
  }
  kr_extract_html_free(x);
  double mb = (double)(reps * n) / 1e6;
  printf("# extract: fixture page %zu bytes x %zu: %.0f MB/s, %.1f CPU-us/page, %.1f M links/s\n",
         n, reps, mb / best, best / (double)reps * 1e6,
         (double)links / 3 / best / 1e6);
  /* text-heavy page: 10 KB of prose with a few links */
  kr_buf_t b;
  kr_buf_init(&b, (size_t)1 << 26);
  while (b.len < (10u << 20)) {
    kr_buf_append_str(&b, "<p class=\"body-text\">The Arctic tern flies from pole to pole every "
                          "year, seeing two summers and more daylight than any other creature "
                          "on Earth; <a href=\"/birds/tern\">read more</a> about its "
                          "migration, which can exceed 70,000 km.</p>\n");
  }
  x = kr_extract_html_new(&o, count_only, &links);
  best = 1e9;
  for (int round = 0; round < 3; round++) {
    double t0 = now_s();
    kr_extract_html_reset(x, count_only, &links);
    for (size_t i = 0; i < b.len; i += 16384)
      kr_extract_html_feed(x, b.data + i, b.len - i < 16384 ? b.len - i : 16384);
    kr_extract_html_finish(x);
    double dt = now_s() - t0;
    if (dt < best) best = dt;
  }
  printf("# extract: prose: %.0f MB/s of CPU time\n", (double)b.len / 1e6 / best);
  kr_extract_html_free(x);
  kr_buf_free(&b);
  free(page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(html_navigation_links),
      cmocka_unit_test(html_link_rel_embeds),
      cmocka_unit_test(html_embeds),
      cmocka_unit_test(html_forms_only_when_asked),
      cmocka_unit_test(html_base_first_wins),
      cmocka_unit_test(html_srcset),
      cmocka_unit_test(html_meta_refresh),
      cmocka_unit_test(html_entities_in_values),
      cmocka_unit_test(html_attribute_syntax),
      cmocka_unit_test(html_comments_hide_links),
      cmocka_unit_test(html_raw_text_elements),
      cmocka_unit_test(html_style_css),
      cmocka_unit_test(html_foreign_content),
      cmocka_unit_test(html_http_only_filter),
      cmocka_unit_test(html_value_cap),
      cmocka_unit_test(html_callback_error_stops),
      cmocka_unit_test(html_reset_clears_document_state),
      cmocka_unit_test(html_split_everywhere_fixture),
      cmocka_unit_test(html_split_everywhere_torture),
      cmocka_unit_test(html_fixture_page),
      cmocka_unit_test(html_eof_in_the_middle),
      cmocka_unit_test(html_huge_attribute),
      cmocka_unit_test(html_link_cap),
      cmocka_unit_test(html_binary_garbage),
      cmocka_unit_test(html_deep_nesting),
      cmocka_unit_test(css_urls_and_imports),
      cmocka_unit_test(css_comments_and_strings),
      cmocka_unit_test(css_escapes),
      cmocka_unit_test(css_bad_urls),
      cmocka_unit_test(css_eof),
      cmocka_unit_test(css_split_everywhere),
      cmocka_unit_test(css_hostile),
      cmocka_unit_test(css_link_cap_and_error),
      cmocka_unit_test(throughput_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
