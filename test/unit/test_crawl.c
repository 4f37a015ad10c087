/* The crawl's own parts, on a crawl that never dispatches: the chain
 * table (phases, order, what WARC off leaves out), the pool of fetch
 * objects (the shared part zeroed, the processors' contexts kept and
 * reset, nothing of one fetch seen by the next) and the links a fetch
 * keeps (resolution, scope, caps); and processors alone, on a fetch
 * object of the pool and the chain's hooks called by hand: the extractors
 * (headers, streamed HTML with <base>, the dropped-link note) and the
 * outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crawl.h"
#include "helpers.h"
#include "internal.h"
#include "log.h"

typedef struct fx {
  char dir[64];
  kr_config_t *cfg;
  kr_crawl_t *c;
} fx_t;

/* A crawl of one seed host, never run. warc: "true" or "false". */
static fx_t *crawl_up(const char *warc, const char *extra) {
  fx_t *x = calloc(1, sizeof *x);
  assert_non_null(x);
  assert_int_equal(th_tmpdir(x->dir, sizeof x->dir, "test-crawl"), 0);
  kr_log_level = KR_LOG_ERROR;
  char spath[128];
  snprintf(spath, sizeof spath, "%s/seeds", x->dir);
  FILE *sf = fopen(spath, "w");
  assert_non_null(sf);
  fputs("http://a.example/\n", sf);
  fclose(sf);
  char conf[2048];
  snprintf(conf, sizeof conf,
           "[crawl]\nstate-dir = %s/state\nseeds = %s\nlog-level = error\n"
           "progress-interval = 0\n[warc]\nenabled = %s\n%s",
           x->dir, spath, warc, extra ? extra : "");
  x->cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(x->cfg, "crawl.conf", conf, strlen(conf)), 0);
  assert_int_equal(kr_config_finish(x->cfg), 0);
  kr_crawl_opts_t o = {.no_signals = 1};
  char err[512] = "";
  if (kr_crawl_new(x->cfg, &o, &x->c, err, sizeof err)) fail_msg("kr_crawl_new: %s", err);
  x->c->paused = 1; /* nothing is ever dispatched */
  return x;
}

static void crawl_down(fx_t *x) {
  kr_crawl_free(x->c);
  kr_config_free(x->cfg);
  th_rmtree(x->dir);
  free(x);
}

/* The chain's processors as "phase:name ..." */
static void chain_string(const kr_crawl_t *c, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < c->chain.n && n < cap; i++) {
    const kr_processor_t *p = c->chain.procs[i];
    n += (size_t)snprintf(out + n, cap - n, "%s%s:%s", i ? " " : "",
                          kr_chain_phase_name(p->phase), p->name);
  }
}

static void chain_table(void **state) {
  (void)state;
  char got[2048];
  fx_t *x = crawl_up("true", NULL);
  chain_string(x->c, got, sizeof got);
  assert_string_equal(got,
                      "prefetch:scope prefetch:robots fetch:validators fetch:http "
                      "fetch:midfetch digest:digest change:change extract:extract-headers "
                      "extract:extract-html extract:extract-css extract:extract-feed "
                      "write:warc-dns write:warc post:digest-end post:warc-late "
                      "post:robots-update post:robots-sitemaps post:outcome post:revisit "
                      "post:extract-end post:finish post:feed-hints");
  /* filters come from the crawl: the extractors by content type */
  for (size_t i = 0; i < x->c->chain.n; i++) {
    const kr_processor_t *p = x->c->chain.procs[i];
    if (!strcmp(p->name, "extract-html")) assert_ptr_equal(p->ctype_re, x->c->re_html);
    if (!strcmp(p->name, "extract-css")) assert_ptr_equal(p->ctype_re, x->c->re_css);
    if (!strcmp(p->name, "extract-feed")) assert_ptr_equal(p->ctype_re, x->c->re_feed);
    if (!strncmp(p->name, "warc", 4)) assert_ptr_equal(p->data, x->c->warc);
  }
  crawl_down(x);
  /* WARC off: its processors (and the digest's post step for it) are out */
  x = crawl_up("false", NULL);
  chain_string(x->c, got, sizeof got);
  assert_null(strstr(got, "warc"));
  assert_null(strstr(got, "digest-end"));
  assert_non_null(strstr(got, "post:outcome post:revisit post:extract-end post:finish"));
  crawl_down(x);
}

/* Contexts are kept with a pooled object and reset; the shared part of a
 * fetch never reaches the next one. */
static void fetch_pool(void **state) {
  (void)state;
  fx_t *x = crawl_up("false", NULL);
  kr_crawl_t *c = x->c;
  assert_true(c->chain.ctx_size > 0);
  kr_fetch_t *f = kr__fetch_get(c);
  assert_non_null(f->cf.ctx);
  assert_ptr_equal(f->crawl, c);
  void *ctx = f->cf.ctx;
  unsigned worker = f->worker;
  /* a fetch leaves shared state behind */
  f->is_robots = 1;
  f->has_digest = 1;
  f->ad.content = 1;
  f->nlinks = 0;
  f->decided = 1;
  kr_fetch_annotate(f, "x");
  kr_fetch_annotatef(f, "n:%d", 7);
  assert_int_equal(f->nannot, 2);
  assert_memory_equal(f->annot[1].p, "n:7", 3);
  assert_int_equal(c->in_flight, 1);
  kr__fetch_put(c, f);
  assert_int_equal(c->in_flight, 0);
  kr_fetch_t *g = kr__fetch_get(c);
  assert_ptr_equal(g, f); /* pooled */
  assert_ptr_equal(g->cf.ctx, ctx);
  assert_int_equal(g->worker, worker);
  assert_int_equal(g->is_robots + g->has_digest + g->ad.content + g->decided, 0);
  assert_int_equal(g->nannot, 0);
  assert_ptr_equal(g->cf.chain, &c->chain);
  assert_true(kr__fetch_pool_bytes(c) >= sizeof *g + c->chain.ctx_size);
  kr_fetch_t *h = kr__fetch_get(c); /* a second object: its own contexts */
  assert_ptr_not_equal(h->cf.ctx, g->cf.ctx);
  assert_int_equal(h->worker, worker + 1);
  kr__fetch_put(c, h);
  kr__fetch_put(c, g);
  crawl_down(x);
}

/* A fetch of http://a.example/dir/page with the curi the frontier would
 * give (hops "L"). */
static kr_fetch_t *page_fetch(kr_crawl_t *c, kr_curi_t *u, const char *url) {
  memset(u, 0, sizeof *u);
  u->url = url;
  u->url_len = strlen(url);
  u->hop_path = "L";
  u->hop_len = 1;
  kr_fetch_t *f = kr__fetch_get(c);
  f->curi = u;
  assert_int_equal(kr_url_parse(url, strlen(url), NULL, &f->url), 0);
  f->hc = kr_crawl_hostcfg(c, "a.example", 9);
  return f;
}

static void fetch_links(void **state) {
  (void)state;
  fx_t *x = crawl_up("false", NULL);
  kr_crawl_t *c = x->c;
  c->xopts.max_links = 3;
  kr_curi_t u;
  kr_fetch_t *f = page_fetch(c, &u, "http://a.example/dir/page");
  size_t idx = 99;
  assert_int_equal(kr_fetch_add_link(f, NULL, kr_slice_cstr("next"), 'L', &idx, NULL), 1);
  assert_int_equal(idx, 0);
  assert_string_equal(f->links[0].url, "http://a.example/dir/next");
  assert_string_equal(f->links[0].hop_path, "LL");
  /* against another base (an HTML <base>) */
  kr_url_t *base = NULL;
  assert_int_equal(kr_url_parse("http://a.example/other/", 23, NULL, &base), 0);
  assert_int_equal(kr_fetch_add_link(f, base, kr_slice_cstr("x.css"), 'E', NULL, NULL), 1);
  assert_string_equal(f->links[1].url, "http://a.example/other/x.css");
  assert_string_equal(f->links[1].hop_path, "LE");
  kr_url_free(base);
  /* not followable, out of scope: rejected, counted */
  uint64_t rejected = c->st.links_rejected;
  assert_int_equal(kr_fetch_add_link(f, NULL, kr_slice_cstr("mailto:a@b"), 'L', NULL, NULL), 0);
  assert_int_equal(kr_fetch_add_link(f, NULL, kr_slice_cstr("http://elsewhere.example/"), 'L',
                                     NULL, NULL),
                   0);
  assert_int_equal(c->st.links_rejected, rejected + 2);
  /* the cap: the third goes in, the fourth is dropped */
  assert_int_equal(kr_fetch_add_link(f, NULL, kr_slice_cstr("/3"), 'L', NULL, NULL), 1);
  assert_int_equal(kr_fetch_add_link(f, NULL, kr_slice_cstr("/4"), 'L', NULL, NULL), KR_ETOOBIG);
  assert_int_equal(f->nlinks, 3);
  assert_int_equal(f->links_dropped, 1);
  assert_true(c->links_bytes > 0 && c->links_bytes == f->links_bytes);
  /* wants links: a 2xx page body only */
  kr_http_resp_t r;
  memset(&r, 0, sizeof r);
  assert_false(kr_fetch_wants_links(f));
  f->resp = &r;
  r.status = 200;
  assert_true(kr_fetch_wants_links(f));
  f->ad.content_set = 1; /* a 304 or an abort: no body */
  assert_false(kr_fetch_wants_links(f));
  f->ad.content_set = 0;
  r.status = 404;
  assert_false(kr_fetch_wants_links(f));
  f->resp = NULL;
  kr__fetch_put(c, f); /* the budget of all fetches gets its bytes back */
  assert_int_equal(c->links_bytes, 0);
  crawl_down(x);
}

/* ---- processors alone --------------------------------------------------------------- */

static kr_processor_t *proc(kr_crawl_t *c, const char *name) {
  for (size_t i = 0; i < c->chain.n; i++)
    if (!strcmp(c->chain.procs[i]->name, name)) return c->chain.procs[i];
  fail_msg("no processor %s", name);
  return NULL;
}

static int has_link(const kr_fetch_t *f, const char *url, const char *hops) {
  for (size_t i = 0; i < f->nlinks; i++)
    if (!strcmp(f->links[i].url, url) && !strcmp(f->links[i].hop_path, hops)) return 1;
  return 0;
}

/* extract-headers: Location and Content-Location as R hops, any status. */
static void proc_extract_headers(void **state) {
  (void)state;
  fx_t *x = crawl_up("false", NULL);
  kr_processor_t *p = proc(x->c, "extract-headers");
  kr_curi_t u;
  kr_fetch_t *f = page_fetch(x->c, &u, "http://a.example/dir/page");
  kr_http_resp_t r;
  memset(&r, 0, sizeof r);
  kr_http_header_t h[1] = {{kr_slice_cstr("Content-Location"), kr_slice_cstr(" /cl ")}};
  r.status = 301;
  r.location = kr_slice_cstr("/moved");
  r.headers = h;
  r.nheaders = 1;
  f->resp = &r;
  assert_int_equal(p->run(&f->cf, p), KR_PROC_NEXT);
  assert_int_equal(f->nlinks, 2);
  assert_true(has_link(f, "http://a.example/moved", "LR"));
  assert_true(has_link(f, "http://a.example/cl", "LR"));
  kr__fetch_put(x->c, f);
  crawl_down(x);
}

/* extract-html streamed: links in chunks, a <base> changing the base of
 * the links after it; a fetch that
 * failed mid-body skips extract-html, and extract-end still counts a
 * capped extractor. */
static void proc_extract_html(void **state) {
  (void)state;
  fx_t *x = crawl_up("false", NULL);
  kr_processor_t *html = proc(x->c, "extract-html"), *end = proc(x->c, "extract-end");
  kr_curi_t u;
  kr_fetch_t *f = page_fetch(x->c, &u, "http://a.example/dir/page");
  kr_chain_fetch_init(&x->c->chain, &f->cf, u.url, u.url_len, kr_slice_cstr("a.example"));
  kr_http_resp_t r;
  memset(&r, 0, sizeof r);
  r.status = 200;
  r.content_type = kr_slice_cstr("text/html");
  f->resp = &r;
  assert_int_equal(html->on_headers(&f->cf, html), KR_STREAM_BIT(KR_STREAM_CONTENT));
  const char *chunks[] = {"<a href=one>1</a><a hr", "ef=\"two\">2</a><base href=\"/b/\">",
                          "<img src=three.png><a href=four>4"};
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(html->on_body(&f->cf, html, KR_STREAM_CONTENT, chunks[i], strlen(chunks[i])),
                     0);
  assert_int_equal(html->run(&f->cf, html), KR_PROC_NEXT);
  assert_true(has_link(f, "http://a.example/dir/one", "LL"));
  assert_true(has_link(f, "http://a.example/dir/two", "LL"));
  assert_true(has_link(f, "http://a.example/b/three.png", "LE"));
  assert_true(has_link(f, "http://a.example/b/four", "LL"));
  assert_int_equal(f->nlinks, 4);
  html->cleanup(&f->cf, html);
  kr__fetch_put(x->c, f);

  crawl_down(x);

  /* capped, and the walk left before extract-html ran (a fresh crawl: the
   * extractor takes the cap when it is made) */
  x = crawl_up("false", NULL);
  x->c->xopts.max_links = 1;
  html = proc(x->c, "extract-html");
  end = proc(x->c, "extract-end");
  f = page_fetch(x->c, &u, "http://a.example/dir/page");
  kr_chain_fetch_t *cf = &f->cf;
  kr_chain_fetch_init(&x->c->chain, cf, u.url, u.url_len, kr_slice_cstr("a.example"));
  f->resp = &r;
  assert_true(html->on_headers(cf, html) != 0);
  const char *many = "<a href=1>1</a><a href=2>2</a><a href=3>3</a>";
  (void)html->on_body(cf, html, KR_STREAM_CONTENT, many, strlen(many));
  uint64_t dropped = f->links_dropped;
  assert_int_equal(end->run(cf, end), KR_PROC_NEXT);
  assert_int_equal(f->links_dropped, dropped + 1); /* the extractor's cap, noted */
  html->cleanup(cf, html);
  assert_int_equal(end->run(cf, end), KR_PROC_NEXT); /* cleaned up: nothing more */
  assert_int_equal(f->links_dropped, dropped + 1);
  kr__fetch_put(x->c, f);
  crawl_down(x);
}

/* outcome: a response of any status is a visit, 503 backs the URI off
 * (with Retry-After), no response is a retry, a malformed one a failure. */
static void proc_outcome(void **state) {
  (void)state;
  fx_t *x = crawl_up("false", NULL);
  kr_processor_t *p = proc(x->c, "outcome");
  kr_curi_t u;
  kr_http_resp_t r;
  static const struct {
    int status, err;
    kr_outcome_kind_t kind;
    int log_status;
  } cases[] = {
      {200, 0, KR_OUTCOME_SUCCESS, 200},
      {404, 0, KR_OUTCOME_SUCCESS, 404},
      {503, 0, KR_OUTCOME_BACKOFF, 503},
      {0, KR_ECONNREFUSED, KR_OUTCOME_RETRY, -2},
      {0, KR_EPROTO, KR_OUTCOME_FAILED, -3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kr_fetch_t *f = page_fetch(x->c, &u, "http://a.example/dir/page");
    memset(&r, 0, sizeof r);
    kr_http_header_t h[1] = {{kr_slice_cstr("Retry-After"), kr_slice_cstr("120")}};
    r.status = cases[i].status;
    r.headers = h;
    r.nheaders = 1;
    f->resp = cases[i].status ? &r : NULL;
    f->http_err = cases[i].err;
    assert_int_equal(p->run(&f->cf, p), KR_PROC_NEXT);
    assert_int_equal(f->outcome.kind, cases[i].kind);
    if (cases[i].status) assert_int_equal(f->log_status, cases[i].log_status);
    else assert_true(f->log_status < 0);
    if (cases[i].status == 503) assert_int_equal(f->outcome.retry_after_ms, 120000);
    kr__fetch_put(x->c, f);
  }
  crawl_down(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chain_table),
      cmocka_unit_test(fetch_pool),
      cmocka_unit_test(fetch_links),
      cmocka_unit_test(proc_extract_headers),
      cmocka_unit_test(proc_extract_html),
      cmocka_unit_test(proc_outcome),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
