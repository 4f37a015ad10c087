/* The adaptive processors one by one, on the virtual clock: crawl.log's
 * durations in Heritrix's form, then each processor driven with a
 * fabricated visit and response and its decisions checked.
 *
 * The fixture: a real crawl (kr_crawl_new: store, frontier, config views,
 * the registered processors) over a state directory whose store already
 * holds one URI per host, so no seed is added and nothing is dispatched
 * (the crawl is paused and its loop never runs: no network). Its clock is
 * switched to virtual time. A visit is a kr_curi_t the test owns (its
 * stored visits, versions, digest, validators, history) on one of the
 * crawl's host queues, a kr_fetch_t set up as the crawl sets one up, and a
 * kr_http_resp_t with the headers the test adds; the processors are the
 * crawl's own (c->procs by name), called in the chain's order: before the
 * request, midfetch and digest at the headers, the body, digest, change,
 * extract-feed, revisit and feed-hints.
 *
 * Covered: change (first visit, unchanged and changed digests, unknown,
 * 304, abort, skipped extraction and dropped links, URL-agnostic
 * duplicates), midfetch (trust modes before the request, 304, every
 * Table 1 scheme over ETag x Last-Modified same/changed/missing in use
 * and sample mode, the conditional-request prediction), trust recorded by
 * change (a validator miss distrusts the host; sampling decays with
 * confirmations), digest (one SHA-1 without coding, payload vs decoded
 * change digest with one, digest-strip per host, the size limit, nothing
 * for a 304), revisit (multiplicative per state with overdue, poisson
 * with its prior, estimate and host allocator, the catch-all, the
 * wt: annotations, embeds refreshed, feed items pulled) and extract-feed
 * (RSS and sitemap items, dates, errors, XML that is no feed) with
 * feed-hints writing the sitemap changefreq. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crawl.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/seeds.h"
#include "log.h"
#include "store.h"
#include "helpers.h"

static void durations(void **state) {
  (void)state;
  static const struct {
    int64_t ms;
    const char *want;
  } cases[] = {
      {45000, "45s0ms"},       /* the thesis' example */
      {3, "3ms"},              /* ov:3ms */
      {0, "0ms"},
      {999, "999ms"},
      {1000, "1s0ms"},
      {1500, "1s500ms"},
      {60000, "1m0ms"},
      {61001, "1m1s1ms"},
      {3600000, "1h0ms"},
      {86400000 + 3600000 + 60000 + 1000 + 1, "1d1h1m1s1ms"},
      {28LL * 86400000, "28d0ms"},
      {-2500, "-2s500ms"},
      {INT64_MAX, "106751991167d7h12m55s807ms"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[64];
    size_t n = kr_crawllog_duration(out, sizeof out, cases[i].ms);
    assert_string_equal(out, cases[i].want);
    assert_int_equal(n, strlen(cases[i].want));
  }
  /* cut to the buffer, NUL-terminated */
  char small[5];
  size_t n = kr_crawllog_duration(small, sizeof small, 86400000 + 1);
  assert_true(n < sizeof small);
  assert_int_equal(strlen(small), n);
  assert_memory_equal(small, "1d1m", 4);
  (void)kr_crawllog_duration(small, sizeof small, INT64_MIN); /* no overflow */
}

/* ---- the fixture ------------------------------------------------------------------ */

enum { H_PLAIN, H_STRIP, H_POISSON, H_N };
static const char *const host_names[H_N] = {"a.example", "strip.example", "poisson.example"};

#define MAX_HDR 8
#define SEC 1000ull
#define DAY (86400 * SEC)

typedef struct fx {
  char dir[64];
  kr_config_t *cfg;
  kr_crawl_t *c;
  kr_hostq_t *hosts[H_N];
  kr_processor_t *validators, *midfetch, *digest, *change, *revisit, *feed, *hints;
  unsigned digest_mask;       /* stream levels the digest subscribed to */
  /* the visit */
  int hi;
  char url[256];
  kr_curi_t u;
  uint8_t digest_v[KR_SHA1_LEN];
  char etag[64];
  uint8_t hist[KR_VHIST_BYTES];
  kr_fetch_t f;
  int f_ready;
  kr_hostcfg_t hc; /* a copy of the host's settings a test may change */
  kr_http_resp_t r;
  kr_http_header_t hdr[MAX_HDR];
  char hval[MAX_HDR][128];
  int feed_on;     /* extract-feed subscribed at the headers */
} fx_t;

static const char conf_fmt[] =
    "[crawl]\n"
    "state-dir = %s/state\n"
    "log-level = error\n"
    "progress-interval = 0\n"
    "[warc]\n"
    "enabled = false\n"
    "[adaptive]\n"
    "hint-depth-halving = 0\n"
    "informed-priors = false\n" /* the tests of the priors turn them on */
    "[host \"strip.example\"]\n"
    "adaptive.digest-strip = <i>[^<]*</i>\n"
    "adaptive.digest-strip-max-size = 1KiB\n"
    "[host \"poisson.example\"]\n"
    "wait.text.policy = poisson\n"
    "adaptive.feed-pull-max = 1\n";

static uint64_t now_ms(fx_t *x) { return kr_crawl_now(x->c); }
static void advance(fx_t *x, uint64_t ms) { kr_timers_advance(&x->c->timers, ms); }

static kr_processor_t *proc(kr_crawl_t *c, const char *name) {
  for (size_t i = 0; i < c->nprocs; i++)
    if (!strcmp(c->procs[i].name, name)) return &c->procs[i];
  fail_msg("no processor %s", name);
  return NULL;
}

static int fx_setup(void **state) {
  fx_t *x = calloc(1, sizeof *x);
  assert_int_equal(th_tmpdir(x->dir, sizeof x->dir, "test-adapt"), 0);
  char sdir[128];
  snprintf(sdir, sizeof sdir, "%s/state", x->dir);
  kr_log_level = KR_LOG_ERROR;

  /* A store that already has one URI per host: kr_crawl_new adds no seed
   * and so dispatches nothing. */
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_clock_t clk;
  kr_clock_init_real(&clk);
  kr_timers_t timers;
  assert_int_equal(kr_timers_init(&timers, &loop, &clk), 0);
  kr_frontier_opts_t fo;
  kr_frontier_opts_default(&fo);
  kr_frontier_t *fr;
  char err[512] = "";
  assert_int_equal(kr_frontier_open(sdir, &fo, &timers, &fr, err, sizeof err), 0);
  for (int h = 0; h < H_N; h++) {
    char u[128];
    int n = snprintf(u, sizeof u, "http://%s/", host_names[h]);
    kr_link_t l = {.url = u, .url_len = (size_t)n, .hop_path = ""};
    assert_true(kr_frontier_add(fr, &l, kr_clock_now_ms(&clk)) >= 0);
  }
  kr_frontier_close(fr);
  kr_timers_close(&timers, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);

  char conf[2048];
  snprintf(conf, sizeof conf, conf_fmt, x->dir);
  x->cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(x->cfg, "adapt.conf", conf, strlen(conf)), 0);
  /* The built-in evaluators with the thesis' policy (the default is
   * poisson): the host sections above still override it, as
   * poisson.example does for text. */
  static const char *const thesis[] = {"wait.text.policy=multiplicative",
                                       "wait.image.policy=multiplicative",
                                       "wait.default.policy=multiplicative"};
  for (size_t i = 0; i < sizeof thesis / sizeof *thesis; i++)
    assert_int_equal(kr_config_set(x->cfg, thesis[i]), 0);
  assert_int_equal(kr_config_finish(x->cfg), 0);
  kr_crawl_opts_t o = {.no_signals = 1};
  int rc = kr_crawl_new(x->cfg, &o, &x->c, err, sizeof err);
  if (rc) fail_msg("kr_crawl_new: %s", err);
  x->c->paused = 1; /* nothing is ever dispatched */
  /* the hosts are the seeds' for the scope (links stay on them) */
  char spath[128];
  snprintf(spath, sizeof spath, "%s/seeds", x->dir);
  FILE *sf = fopen(spath, "w");
  assert_non_null(sf);
  for (int h = 0; h < H_N; h++) fprintf(sf, "http://%s/\n", host_names[h]);
  fclose(sf);
  kr_seeds_t seeds;
  kr_seeds_init(&seeds);
  kr_seeds_opts_t so;
  kr_seeds_opts_init(&so);
  so.canon = x->c->canon;
  assert_int_equal(kr_seeds_load(&seeds, spath, &so), 0);
  assert_int_equal(kr_scope_add_seeds(x->c->scope, &seeds), 0);
  kr_seeds_free(&seeds);
  /* virtual time from here, a whole second past the real now */
  kr_clock_init_virtual(&x->c->clock, (kr_clock_now_ms(&x->c->clock) / 1000 + 2) * 1000);
  advance(x, 0); /* the loaded hosts' timers: ready */
  for (int i = 0; i < H_N; i++) {
    kr_curi_t *cu = NULL;
    assert_int_equal(kr_frontier_next(x->c->frontier, now_ms(x), &cu), 1);
    const char *name = kr_frontier_host_name(cu->host);
    for (int h = 0; h < H_N; h++)
      if (!strncmp(name, host_names[h], strlen(host_names[h]))) x->hosts[h] = cu->host;
    kr_frontier_defer(x->c->frontier, cu, now_ms(x));
  }
  for (int h = 0; h < H_N; h++) assert_non_null(x->hosts[h]);
  x->validators = proc(x->c, "validators");
  x->midfetch = proc(x->c, "midfetch");
  x->digest = proc(x->c, "digest");
  x->change = proc(x->c, "change");
  x->revisit = proc(x->c, "revisit");
  x->feed = proc(x->c, "extract-feed");
  x->hints = proc(x->c, "feed-hints");
  *state = x;
  return 0;
}

/* Free what a visit's fetch object holds (as the crawl's pool does). */
static void fetch_clear(fx_t *x) {
  kr_fetch_t *f = &x->f;
  if (!x->f_ready) return;
  x->c->links_bytes -= f->links_bytes;
  kr_url_free(f->url);
  kr_chain_fetch_teardown(&f->cf);
  free(f->fmeta);
  free(f->links);
  kr_arena_free(&f->arena);
  memset(f, 0, sizeof *f);
  x->f_ready = 0;
}

static int fx_teardown(void **state) {
  fx_t *x = *state;
  fetch_clear(x);
  kr_crawl_free(x->c);
  kr_config_free(x->cfg);
  th_rmtree(x->dir);
  free(x);
  return 0;
}

/* A new visit of http://HOST/path: a URI never visited (the test then
 * sets what earlier visits left in x->u) and a 200 response without
 * headers. */
static kr_fetch_t *visit(fx_t *x, int hi, const char *path) {
  fetch_clear(x);
  x->hi = hi;
  int n = snprintf(x->url, sizeof x->url, "http://%s%s", host_names[hi], path);
  memset(&x->u, 0, sizeof x->u);
  x->u.fp = kr_fp(x->url, (size_t)n);
  x->u.url = x->url;
  x->u.url_len = (size_t)n;
  x->u.host = x->hosts[hi];
  x->u.hop_path = "";
  x->u.next_at = x->u.issued_at = now_ms(x);
  kr_fetch_t *f = &x->f;
  f->crawl = x->c;
  kr_arena_init(&f->arena, 4096, 1 << 20);
  kr_chain_fetch_setup(&x->c->chain, &f->cf); /* the processors' contexts */
  x->f_ready = 1;
  f->curi = &x->u;
  assert_int_equal(kr_url_parse(x->url, (size_t)n, NULL, &f->url), 0);
  x->hc = *kr_crawl_hostcfg(x->c, host_names[hi], strlen(host_names[hi]));
  f->hc = &x->hc;
  f->cf.url = x->url;
  f->cf.url_len = (size_t)n;
  f->cf.host = kr_slice_cstr(host_names[hi]);
  f->issued_ms = f->fetch_start_ms = now_ms(x);
  f->fetch_duration_ms = 100;
  memset(&x->r, 0, sizeof x->r);
  x->r.status = 200;
  x->r.content_length = -1;
  x->r.headers = x->hdr;
  f->resp = &x->r;
  f->ad.vt_mode = -1;
  f->ad.content = KR_CONTENT_UNKNOWN;
  x->feed_on = 0;
  return f;
}

/* What an earlier visit left: visits, versions, the change digest of
 * `body`, validators (etag NULL / lm 0: none), its time and wait. */
static void stored(fx_t *x, uint32_t visits, const char *body, const char *etag, int64_t lm_s,
                   uint64_t ago_ms, uint64_t wait_ms) {
  x->u.visits = visits;
  x->u.versions = visits;
  if (body) {
    kr_sha1(body, strlen(body), x->digest_v);
    x->u.digest = x->digest_v;
    x->u.digest_len = KR_SHA1_LEN;
  }
  if (etag) {
    snprintf(x->etag, sizeof x->etag, "%s", etag);
    x->u.etag = x->etag;
    x->u.etag_len = strlen(x->etag);
  }
  x->u.last_modified = lm_s;
  x->u.last_visit = now_ms(x) - ago_ms;
  x->u.wait_ms = wait_ms;
  x->u.next_at = x->u.last_visit + wait_ms;
  x->u.overdue_ms = now_ms(x) > x->u.next_at ? now_ms(x) - x->u.next_at : 0;
  x->u.content_type = "text/html";
  x->u.content_type_len = 9;
}

static void header(fx_t *x, const char *name, const char *value) {
  kr_http_resp_t *r = &x->r;
  assert_true(r->nheaders < MAX_HDR);
  size_t i = r->nheaders++;
  snprintf(x->hval[i], sizeof x->hval[i], "%s", value);
  x->hdr[i].name = kr_slice_cstr(name);
  x->hdr[i].value = kr_slice_cstr(x->hval[i]);
  kr_slice_t v = x->hdr[i].value;
  if (!strcmp(name, "ETag")) r->etag = v;
  if (!strcmp(name, "Last-Modified")) r->last_modified = v;
  if (!strcmp(name, "Content-Type")) r->content_type = v;
  if (!strcmp(name, "Content-Encoding")) r->content_encoding = v;
  if (!strcmp(name, "Content-Length")) r->content_length = strtoll(value, NULL, 10);
}

static void http_date(char out[KR_HTTP_DATE_SIZE], int64_t s) { kr_validators_date_format(s, out); }

/* The headers arrived: the fetch phase's stream processors, in the
 * chain's order, and extract-feed (its content-type filter applied). */
static void at_headers(fx_t *x) {
  kr_fetch_t *f = &x->f;
  f->cf.content_type = x->r.content_type;
  assert_int_equal(x->midfetch->on_headers(&f->cf, x->midfetch), 0);
  x->digest_mask = (unsigned)x->digest->on_headers(&f->cf, x->digest);
  if (x->r.content_type.n &&
      kr_config_regex_match(NULL, x->c->re_feed, x->r.content_type.p, x->r.content_type.n) == 1)
    x->feed_on = x->feed->on_headers(&f->cf, x->feed);
}

/* The validators processor, before the request: 1 when it lets the
 * stored validators go out. */
static int before_request(fx_t *x) {
  assert_int_equal(x->validators->run(&x->f.cf, x->validators), KR_PROC_NEXT);
  return x->f.ad.conditional;
}

/* The body: payload bytes (as received) and content (decoded). A 304 or
 * an abort has none. */
static void body_in(fx_t *x, const char *payload, size_t pn, const char *content, size_t cn) {
  kr_fetch_t *f = &x->f;
  static const kr_stream_level_t levels[] = {KR_STREAM_PAYLOAD, KR_STREAM_CONTENT};
  x->r.payload_bytes += pn;
  x->r.content_bytes += cn;
  for (size_t i = 0; i < 2; i++) {
    unsigned bit = KR_STREAM_BIT(levels[i]);
    const char *p = levels[i] == KR_STREAM_PAYLOAD ? payload : content;
    size_t n = levels[i] == KR_STREAM_PAYLOAD ? pn : cn;
    if ((x->digest_mask & bit) && x->digest->on_body(&f->cf, x->digest, levels[i], p, n))
      x->digest_mask &= ~bit;
  }
  if (x->feed_on) (void)x->feed->on_body(&f->cf, x->feed, KR_STREAM_CONTENT, content, cn);
}

/* digest and change (and extract-feed); returns change's KR_PROC_*. */
static int after_body(fx_t *x) {
  kr_fetch_t *f = &x->f;
  assert_int_equal(x->digest->run(&f->cf, x->digest), KR_PROC_NEXT);
  int rc = x->change->run(&f->cf, x->change);
  if (x->feed_on && rc == KR_PROC_NEXT) assert_int_equal(x->feed->run(&f->cf, x->feed), KR_PROC_NEXT);
  if (x->feed_on) x->feed->cleanup(&f->cf, x->feed);
  x->digest->cleanup(&f->cf, x->digest);
  return rc;
}

/* A whole visit with an identity-coded body; returns change's KR_PROC_*. */
static int fetch_body(fx_t *x, const char *body) {
  before_request(x);
  at_headers(x);
  if (x->r.status != 304 && !x->f.ad.midfetch_abort) body_in(x, body, strlen(body), body, strlen(body));
  return after_body(x);
}

/* The revisit processor on a successful visit: the wait decided. */
static uint64_t decide(fx_t *x) {
  kr_fetch_t *f = &x->f;
  f->disp = KR_DISP_FINISH;
  f->outcome.kind = KR_OUTCOME_SUCCESS;
  assert_int_equal(x->revisit->run(&f->cf, x->revisit), KR_PROC_NEXT);
  return f->outcome.wait_ms;
}

static int has_annot(const fx_t *x, const char *a) {
  for (size_t i = 0; i < x->f.nannot; i++)
    if (x->f.annot[i].n == strlen(a) && !memcmp(x->f.annot[i].p, a, x->f.annot[i].n)) return 1;
  return 0;
}

/* a is the first annotation: crawl.log's Heritrix revisit one */
static int first_annot(const fx_t *x, const char *a) {
  return x->f.nannot && x->f.annot[0].n == strlen(a) && !memcmp(x->f.annot[0].p, a, strlen(a));
}

static int has_annot_prefix(const fx_t *x, const char *a) {
  for (size_t i = 0; i < x->f.nannot; i++)
    if (x->f.annot[i].n >= strlen(a) && !memcmp(x->f.annot[i].p, a, strlen(a))) return 1;
  return 0;
}

static void set_vtrust(fx_t *x, int hi, const kr_vtrust_t *vt) {
  kr_frontier_host_set_vtrust(x->c->frontier, x->hosts[hi], vt);
}

/* A host whose validators are trusted (probation done, never missed). */
static void trusted(fx_t *x, int hi) {
  kr_vtrust_t vt;
  kr_vtrust_init(&vt);
  vt.verified = vt.predicted_unchanged = vt.checks = 10;
  set_vtrust(x, hi, &vt);
}

/* ---- change ------------------------------------------------------------------------- */

static void change_states(void **state) {
  fx_t *x = *state;
  kr_crawl_stats_t s0 = x->c->st;
  /* first visit: a new version */
  visit(x, H_PLAIN, "/c");
  assert_int_equal(fetch_body(x, "<p>one</p>"), KR_PROC_NEXT);
  assert_int_equal(x->f.ad.content, KR_CONTENT_CHANGED);
  assert_int_equal(x->f.ad.visits, 1);
  assert_int_equal(x->f.ad.versions, 1);
  assert_int_equal(x->c->st.changed, s0.changed + 1);
  /* the same content: unchanged, extraction skipped, its links dropped */
  visit(x, H_PLAIN, "/c");
  stored(x, 1, "<p>one</p>", NULL, 0, 60 * SEC, 20 * SEC);
  x->f.nlinks = 3;
  x->f.links_bytes = 30;
  x->c->links_bytes += 30;
  size_t lb = x->c->links_bytes;
  assert_int_equal(fetch_body(x, "<p>one</p>"), KR_PROC_SKIP_TO_WRITE);
  assert_int_equal(x->f.ad.content, KR_CONTENT_UNCHANGED);
  assert_int_equal(x->f.ad.visits, 2);
  assert_int_equal(x->f.ad.versions, 1);
  assert_true(has_annot(x, "unchanged"));
  /* the payload is the stored one (no coding, nothing stripped: the
   * change digest is the payload's): Heritrix's "duplicate:digest" first */
  assert_true(first_annot(x, "duplicate:digest"));
  assert_int_equal(x->f.nlinks, 0);
  assert_int_equal(x->c->links_bytes, lb - 30);
  assert_int_equal(x->c->st.unchanged_full, s0.unchanged_full + 1);
  assert_int_equal(x->c->st.unchanged_body_bytes, s0.unchanged_body_bytes + 10);
  /* different content: changed, one more version */
  visit(x, H_PLAIN, "/c");
  stored(x, 2, "<p>one</p>", NULL, 0, 60 * SEC, 20 * SEC);
  assert_int_equal(fetch_body(x, "<p>two</p>"), KR_PROC_NEXT);
  assert_int_equal(x->f.ad.content, KR_CONTENT_CHANGED);
  assert_int_equal(x->f.ad.versions, 3);
  assert_false(has_annot(x, "unchanged"));
  assert_false(has_annot_prefix(x, "duplicate:"));
  /* the body broke off: no digest to compare, unknown */
  visit(x, H_PLAIN, "/c");
  stored(x, 3, "<p>two</p>", NULL, 0, 60 * SEC, 20 * SEC);
  before_request(x);
  at_headers(x);
  body_in(x, "<p>tw", 5, "<p>tw", 5);
  x->f.http_err = KR_EIDLE_TIMEOUT;
  assert_int_equal(after_body(x), KR_PROC_NEXT);
  assert_int_equal(x->f.ad.content, KR_CONTENT_UNKNOWN);
  assert_int_equal(x->f.ad.versions, 3);
  assert_int_equal(x->c->st.unknown, s0.unknown + 1);
  /* robots.txt and decided fetches are not this processor's */
  visit(x, H_PLAIN, "/robots.txt");
  x->f.is_robots = 1;
  assert_int_equal(fetch_body(x, "User-agent: *\n"), KR_PROC_NEXT);
  assert_int_equal(x->f.ad.visits, 0);
}

/* URL-agnostic duplicates: the second URI with a payload already indexed
 * is an identical-payload revisit of the first. */
static void change_duplicates(void **state) {
  fx_t *x = *state;
  uint64_t d0 = x->c->st.duplicates;
  visit(x, H_PLAIN, "/dup1");
  uint64_t first_at = x->f.fetch_start_ms;
  fetch_body(x, "the same bytes");
  assert_null(x->f.ad.dup_url);
  assert_false(has_annot(x, "duplicate:digest"));
  kr_store_t *st = kr_frontier_store(x->c->frontier);
  kr_store_digest_t ref;
  assert_int_equal(kr_store_digest_get(st, x->f.ad.payload_digest, KR_SHA1_LEN, &ref), 1);
  assert_true(ref.fp == x->u.fp);
  advance(x, 5 * SEC);
  visit(x, H_PLAIN, "/dup2");
  kr_fetch_annotate(&x->f, "bad-validator");
  fetch_body(x, "the same bytes");
  assert_true(first_annot(x, "duplicate:digest"));
  assert_true(has_annot(x, "bad-validator"));
  assert_int_equal(x->c->st.duplicates, d0 + 1);
  assert_non_null(x->f.ad.dup_url);
  assert_true(x->f.ad.dup_date == first_at);
  /* the same URI again is no duplicate of itself */
  visit(x, H_PLAIN, "/dup1");
  fetch_body(x, "the same bytes");
  assert_false(has_annot(x, "duplicate:digest"));
}

/* ---- midfetch --------------------------------------------------------------------- */

/* Before the request: no history or no validators: not this check's;
 * probation and sample download in full; use sends conditional headers. */
static void midfetch_modes(void **state) {
  fx_t *x = *state;
  kr_vtrust_t vt;
  kr_vtrust_init(&vt);
  set_vtrust(x, H_PLAIN, &vt);
  visit(x, H_PLAIN, "/m");
  assert_int_equal(before_request(x), 0); /* first visit */
  assert_int_equal(x->f.ad.vt_mode, -1);
  visit(x, H_PLAIN, "/m");
  stored(x, 1, "x", NULL, 0, 60 * SEC, 20 * SEC);
  assert_int_equal(before_request(x), 0); /* nothing to compare */
  assert_int_equal(x->f.ad.vt_mode, -1);
  visit(x, H_PLAIN, "/m");
  stored(x, 1, "x", "\"v1\"", 0, 60 * SEC, 20 * SEC);
  assert_int_equal(before_request(x), 0);
  assert_int_equal(x->f.ad.vt_mode, KR_VTRUST_PROBATION);
  trusted(x, H_PLAIN);
  /* a URI/visit outside the 5 % sample uses the validators, one inside
   * downloads in full */
  int use = 0, sample = 0;
  for (uint32_t v = 1; v < 400; v++) {
    visit(x, H_PLAIN, "/m");
    stored(x, v, "x", "\"v1\"", 0, 60 * SEC, 20 * SEC);
    int cond = before_request(x);
    assert_int_equal(cond, x->f.ad.vt_mode == KR_VTRUST_USE);
    use += x->f.ad.vt_mode == KR_VTRUST_USE;
    sample += x->f.ad.vt_mode == KR_VTRUST_SAMPLE;
    assert_int_equal(x->f.ad.vt_mode == KR_VTRUST_SAMPLE,
                     kr_vtrust_is_sample(0.05, x->u.fp, v));
  }
  assert_true(use > 300 && sample > 5 && use + sample == 399);
  /* distrusted: full downloads until the period ends */
  vt.verified = 10;
  vt.distrust_until = (int64_t)now_ms(x) + 1000;
  set_vtrust(x, H_PLAIN, &vt);
  visit(x, H_PLAIN, "/m");
  stored(x, 3, "x", "\"v1\"", 0, 60 * SEC, 20 * SEC);
  assert_int_equal(before_request(x), 0);
  assert_int_equal(x->f.ad.vt_mode, KR_VTRUST_DISTRUSTED);
  /* robots.txt never */
  visit(x, H_PLAIN, "/robots.txt");
  stored(x, 3, "x", "\"v1\"", 0, 60 * SEC, 20 * SEC);
  x->f.is_robots = 1;
  assert_int_equal(before_request(x), 0);
  assert_int_equal(x->f.ad.vt_mode, -1);
}

/* A 304 answers a conditional request: unchanged without a body. */
static void midfetch_304(void **state) {
  fx_t *x = *state;
  trusted(x, H_PLAIN);
  kr_crawl_stats_t s0 = x->c->st;
  for (uint32_t v = 1;; v++) { /* a visit outside the sample */
    visit(x, H_PLAIN, "/nm");
    stored(x, v, "body", "\"e\"", 0, 60 * SEC, 20 * SEC);
    if (before_request(x)) break;
  }
  x->r.status = 304;
  at_headers(x);
  assert_true(has_annot(x, "notModified"));
  assert_true(x->f.ad.content_set && x->f.ad.val_checked && !x->f.ad.val_change);
  assert_int_equal(after_body(x), KR_PROC_SKIP_TO_WRITE);
  /* Heritrix's annotation first, kria's after it; without WARC files
   * there is no stored original to carry a digest forward from */
  assert_true(first_annot(x, "duplicate:server-not-modified"));
  assert_true(x->f.nannot >= 2 && kr_slice_eq(x->f.annot[1], kr_slice_cstr("notModified")));
  assert_false(x->f.ad.has_prior_digest);
  assert_false(x->f.has_digest); /* nothing digested */
  assert_false(x->f.ad.has_payload_digest);
  assert_int_equal(x->f.ad.content, KR_CONTENT_UNCHANGED);
  assert_int_equal(x->c->st.not_modified, s0.not_modified + 1);
  assert_int_equal(x->c->st.unchanged_full, s0.unchanged_full);
  /* the trust counts a skipped download */
  assert_int_equal(kr_frontier_host_vtrust(x->hosts[H_PLAIN])->skipped, 1);
}

/* Every Table 1 scheme over stored/current ETag and Last-Modified each
 * same, changed or missing: the abort in use mode, the prediction kept
 * in sample mode (no abort), with conditional requests off (the
 * prediction is the scheme's alone). */
static void midfetch_schemes(void **state) {
  fx_t *x = *state;
  enum { SAME, CHANGED, MISSING };
  /* download (1) or abort (0) per scheme 1..4, [etag][lm] */
  static const int want[4][3][3] = {
      /* 1 timestamp: download unless LM same */
      {{0, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      /* 2 etag: download unless ETag same */
      {{0, 0, 0}, {1, 1, 1}, {1, 1, 1}},
      /* 3 both: download only when both predict change */
      {{0, 0, 0}, {0, 1, 1}, {0, 1, 1}},
      /* 4 either: download unless both same */
      {{0, 1, 1}, {1, 1, 1}, {1, 1, 1}},
  };
  const int64_t lm0 = 1700000000;
  char d0[KR_HTTP_DATE_SIZE], d1[KR_HTTP_DATE_SIZE];
  http_date(d0, lm0);
  http_date(d1, lm0 + 3600);
  for (int scheme = 1; scheme <= 4; scheme++)
    for (int e = 0; e < 3; e++)
      for (int l = 0; l < 3; l++)
        for (int sample = 0; sample <= 1; sample++) {
          visit(x, H_PLAIN, "/t1");
          /* stored: a missing indicator is absent from the stored visit
           * (ETag) or from this response (Last-Modified): both ways */
          stored(x, 4, "old", e == MISSING ? NULL : "\"a\"", lm0, 60 * SEC, 20 * SEC);
          x->hc.vscheme = (kr_vscheme_t)scheme;
          x->hc.conditional = 0;
          if (e != MISSING) header(x, "ETag", e == SAME ? "\"a\"" : "\"b\"");
          if (l != MISSING) header(x, "Last-Modified", l == SAME ? d0 : d1);
          if (e == MISSING && l == MISSING) x->u.last_modified = lm0; /* still comparable */
          x->f.ad.vt_mode = sample ? KR_VTRUST_SAMPLE : KR_VTRUST_USE;
          at_headers(x);
          int dl = want[scheme - 1][e][l];
          assert_true(x->f.ad.val_checked);
          if (x->f.ad.val_change != dl)
            fail_msg("scheme %d etag %d lm %d: predicted change %d, want %d", scheme, e, l,
                     x->f.ad.val_change, dl);
          assert_int_equal(x->f.ad.midfetch_abort, !dl && !sample);
          assert_int_equal(has_annot(x, "midFetchAbort"), !dl && !sample);
          if (x->f.ad.midfetch_abort) {
            /* unchanged without reading on; Content-Length counts as saved */
            x->r.content_length = 5000;
            x->r.payload_bytes = 1460;
            uint64_t saved = x->c->st.aborted_bytes_saved;
            assert_int_equal(after_body(x), KR_PROC_SKIP_TO_WRITE);
            assert_int_equal(x->f.ad.content, KR_CONTENT_UNCHANGED);
            assert_int_equal(x->c->st.aborted_bytes_saved, saved + 3540);
            /* recorded as a server-not-modified revisit: said so first */
            assert_true(first_annot(x, "duplicate:server-not-modified"));
            assert_true(has_annot(x, "midFetchAbort"));
          }
        }
  /* midfetch off: the prediction is made, nothing aborted */
  visit(x, H_PLAIN, "/t1");
  stored(x, 4, "old", "\"a\"", lm0, 60 * SEC, 20 * SEC);
  x->hc.midfetch = 0;
  header(x, "ETag", "\"a\"");
  header(x, "Last-Modified", d0);
  x->f.ad.vt_mode = KR_VTRUST_USE;
  at_headers(x);
  assert_true(x->f.ad.val_checked && !x->f.ad.val_change && !x->f.ad.midfetch_abort);
  /* not a 2xx: nothing compared */
  visit(x, H_PLAIN, "/t1");
  stored(x, 4, "old", "\"a\"", lm0, 60 * SEC, 20 * SEC);
  x->r.status = 404;
  x->f.ad.vt_mode = KR_VTRUST_USE;
  at_headers(x);
  assert_false(x->f.ad.val_checked);
}

/* With conditional requests on, the prediction checked is what the
 * server would have done with them: the same ETag (weak comparison) is a
 * 304 even when scheme 4 sees Last-Modified move. */
static void midfetch_conditional_prediction(void **state) {
  fx_t *x = *state;
  char d0[KR_HTTP_DATE_SIZE], d1[KR_HTTP_DATE_SIZE];
  http_date(d0, 1700000000);
  http_date(d1, 1700003600);
  visit(x, H_PLAIN, "/cp");
  stored(x, 2, "old", "\"a\"", 1700000000, 60 * SEC, 20 * SEC);
  assert_true(x->hc.conditional && x->hc.vscheme == KR_VSCHEME_EITHER);
  header(x, "ETag", "W/\"a\"");
  header(x, "Last-Modified", d1);
  x->f.ad.vt_mode = KR_VTRUST_SAMPLE;
  at_headers(x);
  assert_int_equal(x->f.ad.val_change, 0);
  /* no ETag stored: If-Modified-Since decides (an older date is a 304) */
  visit(x, H_PLAIN, "/cp");
  stored(x, 2, "old", NULL, 1700003600, 60 * SEC, 20 * SEC);
  header(x, "Last-Modified", d0);
  x->f.ad.vt_mode = KR_VTRUST_SAMPLE;
  at_headers(x);
  assert_int_equal(x->f.ad.val_change, 0);
  visit(x, H_PLAIN, "/cp");
  stored(x, 2, "old", NULL, 1700000000, 60 * SEC, 20 * SEC);
  header(x, "Last-Modified", d1);
  x->f.ad.vt_mode = KR_VTRUST_SAMPLE;
  at_headers(x);
  assert_int_equal(x->f.ad.val_change, 1);
}

/* ---- trust ---------------------------------------------------------------------------- */

/* A sampled visit whose validators said "unchanged" while the digest
 * says changed: a miss, the host distrusted; right ones confirm and the
 * sample decays. */
static void trust_recorded(void **state) {
  fx_t *x = *state;
  trusted(x, H_PLAIN);
  char d0[KR_HTTP_DATE_SIZE];
  http_date(d0, 1700000000);
  /* right predictions verified: confirmations */
  for (int i = 0; i < 40; i++) {
    visit(x, H_PLAIN, "/tr");
    stored(x, 3, "same", "\"a\"", 1700000000, 60 * SEC, 20 * SEC);
    header(x, "ETag", "\"a\"");
    header(x, "Last-Modified", d0);
    x->f.ad.vt_mode = KR_VTRUST_SAMPLE;
    at_headers(x);
    body_in(x, "same", 4, "same", 4);
    assert_int_equal(after_body(x), KR_PROC_SKIP_TO_WRITE);
    assert_false(has_annot(x, "validatorMiss"));
  }
  const kr_vtrust_t *vt = kr_frontier_host_vtrust(x->hosts[H_PLAIN]);
  assert_int_equal(vt->verified, 50);
  assert_int_equal(vt->confirm_run, 40);
  assert_true(kr_vtrust_sample_rate(vt, &x->hc.vtrust) == 0.0125);
  /* a miss */
  uint64_t m0 = x->c->st.vtrust_misses;
  visit(x, H_PLAIN, "/tr");
  stored(x, 3, "same", "\"a\"", 1700000000, 60 * SEC, 20 * SEC);
  header(x, "ETag", "\"a\"");
  header(x, "Last-Modified", d0);
  x->f.ad.vt_mode = KR_VTRUST_SAMPLE;
  at_headers(x);
  body_in(x, "new", 3, "new", 3);
  assert_int_equal(after_body(x), KR_PROC_NEXT);
  assert_int_equal(x->f.ad.content, KR_CONTENT_CHANGED);
  assert_true(has_annot(x, "validatorMiss"));
  assert_int_equal(x->c->st.vtrust_misses, m0 + 1);
  vt = kr_frontier_host_vtrust(x->hosts[H_PLAIN]);
  assert_int_equal(vt->misses, 1);
  assert_int_equal(vt->distrusts, 1);
  assert_int_equal(vt->confirm_run, 0);
  assert_true(kr_vtrust_is_distrusted(vt, (int64_t)now_ms(x)));
  visit(x, H_PLAIN, "/tr");
  stored(x, 4, "new", "\"a\"", 1700000000, 60 * SEC, 20 * SEC);
  before_request(x);
  assert_int_equal(x->f.ad.vt_mode, KR_VTRUST_DISTRUSTED);
  /* a change predicted and found is no miss; a false alarm is counted */
  uint64_t fa = vt->false_alarms;
  visit(x, H_PLAIN, "/tr");
  stored(x, 4, "new", "\"a\"", 1700000000, 60 * SEC, 20 * SEC);
  header(x, "ETag", "\"z\"");
  x->f.ad.vt_mode = KR_VTRUST_DISTRUSTED;
  at_headers(x);
  body_in(x, "new", 3, "new", 3);
  after_body(x);
  assert_int_equal(kr_frontier_host_vtrust(x->hosts[H_PLAIN])->false_alarms, fa + 1);
  assert_int_equal(kr_frontier_host_vtrust(x->hosts[H_PLAIN])->misses, 1);
}

/* ---- digest -------------------------------------------------------------------------- */

static void digest_streams(void **state) {
  fx_t *x = *state;
  uint8_t want[KR_SHA1_LEN];
  /* identity: one SHA-1, payload = change digest */
  visit(x, H_PLAIN, "/d");
  at_headers(x);
  /* payload only: one SHA-1 */
  assert_int_equal(x->digest_mask, KR_STREAM_BIT(KR_STREAM_PAYLOAD));
  body_in(x, "hello ", 6, "hello ", 6);
  body_in(x, "world", 5, "world", 5);
  after_body(x);
  kr_sha1("hello world", 11, want);
  assert_true(x->f.has_digest && x->f.ad.has_payload_digest);
  assert_memory_equal(x->f.digest, want, KR_SHA1_LEN);
  assert_memory_equal(x->f.ad.payload_digest, want, KR_SHA1_LEN);
  /* a content coding: payload over the bytes received, change over the
   * decoded content */
  visit(x, H_PLAIN, "/d");
  header(x, "Content-Encoding", "gzip");
  at_headers(x);
  /* and the content */
  assert_int_equal(x->digest_mask,
                   KR_STREAM_BIT(KR_STREAM_PAYLOAD) | KR_STREAM_BIT(KR_STREAM_CONTENT));
  body_in(x, "\x1f\x8bGZ", 4, "hello world", 11);
  after_body(x);
  assert_memory_equal(x->f.digest, want, KR_SHA1_LEN);
  kr_sha1("\x1f\x8bGZ", 4, want);
  assert_memory_equal(x->f.ad.payload_digest, want, KR_SHA1_LEN);
  /* 304 and aborts: nothing */
  visit(x, H_PLAIN, "/d");
  x->r.status = 304;
  at_headers(x);
  after_body(x);
  assert_false(x->f.has_digest || x->f.ad.has_payload_digest);
}

/* digest-strip on the host with patterns: the change digest ignores the
 * volatile section, the payload digest does not; a body above the
 * host's size limit keeps the plain digest. */
static void digest_strip(void **state) {
  fx_t *x = *state;
  const char *b1 = "<p>news</p><i>12:00:01</i>", *b2 = "<p>news</p><i>12:00:02</i>";
  uint8_t c1[KR_SHA1_LEN], p1[KR_SHA1_LEN];
  visit(x, H_STRIP, "/s");
  at_headers(x);
  assert_true(x->digest_mask & KR_STREAM_BIT(KR_STREAM_CONTENT)); /* decoded, kept to strip */
  body_in(x, b1, strlen(b1), b1, strlen(b1));
  after_body(x);
  assert_true(x->f.has_digest);
  memcpy(c1, x->f.digest, KR_SHA1_LEN);
  memcpy(p1, x->f.ad.payload_digest, KR_SHA1_LEN);
  uint8_t plain[KR_SHA1_LEN];
  kr_sha1(b1, strlen(b1), plain);
  assert_memory_equal(p1, plain, KR_SHA1_LEN);
  assert_memory_not_equal(c1, plain, KR_SHA1_LEN);
  /* the next visit: only the clock moved -> unchanged */
  visit(x, H_STRIP, "/s");
  stored(x, 1, NULL, NULL, 0, 60 * SEC, 20 * SEC);
  memcpy(x->digest_v, c1, KR_SHA1_LEN);
  x->u.digest = x->digest_v;
  x->u.digest_len = KR_SHA1_LEN;
  assert_int_equal(fetch_body(x, b2), KR_PROC_SKIP_TO_WRITE);
  assert_memory_equal(x->f.digest, c1, KR_SHA1_LEN);
  assert_memory_not_equal(x->f.ad.payload_digest, p1, KR_SHA1_LEN);
  /* unchanged once stripped, but the payload differs: no duplicate */
  assert_true(has_annot(x, "unchanged"));
  assert_false(has_annot_prefix(x, "duplicate:"));
  /* the plain host: the clock is a change */
  visit(x, H_PLAIN, "/s");
  stored(x, 1, b1, NULL, 0, 60 * SEC, 20 * SEC);
  assert_int_equal(fetch_body(x, b2), KR_PROC_NEXT);
  /* over the 1 KiB limit: plain digest, annotated */
  char big[2048];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  visit(x, H_STRIP, "/s");
  at_headers(x);
  body_in(x, big, 1000, big, 1000);
  body_in(x, big + 1000, 1047, big + 1000, 1047);
  after_body(x);
  kr_sha1(big, 2047, plain);
  assert_memory_equal(x->f.digest, plain, KR_SHA1_LEN);
  assert_true(has_annot(x, "stripSkippedSize"));
}

/* ---- revisit: wait policies ------------------------------------------------------------ */

/* The thesis' multiplicative policy with the text evaluator (Figure 12:
 * initial 20 s, factors 1.5, min 20 s, max 28 d, default 3 d). */
static void wait_multiplicative(void **state) {
  fx_t *x = *state;
  visit(x, H_PLAIN, "/w");
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  assert_int_equal(decide(x), 20 * SEC); /* first visit: initial-wait */
  assert_true(has_annot(x, "wt:20s0ms") && has_annot(x, "1vis") && has_annot(x, "1ver"));
  assert_true(has_annot(x, "ov:0ms") && has_annot(x, "wait:text/multiplicative"));
  assert_int_equal(x->f.outcome.content, 1);
  assert_non_null(x->f.outcome.history);
  /* unchanged: x 1.5 */
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 100 * SEC, 100 * SEC);
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  assert_int_equal(decide(x), 150 * SEC);
  assert_int_equal(x->f.outcome.content, 0);
  assert_true(has_annot(x, "4vis") && has_annot(x, "3ver"));
  /* changed: / 1.5 */
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 150 * SEC, 150 * SEC);
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v2");
  assert_int_equal(decide(x), 100 * SEC);
  assert_true(has_annot(x, "4ver"));
  /* unknown: default-wait */
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 150 * SEC, 150 * SEC);
  header(x, "Content-Type", "text/html");
  before_request(x);
  at_headers(x);
  x->f.http_err = KR_EIDLE_TIMEOUT;
  after_body(x);
  assert_int_equal(decide(x), 3 * DAY);
  assert_int_equal(x->f.outcome.content, 2);
  /* clamped at min-wait and max-wait */
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 25 * SEC, 25 * SEC);
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v3");
  assert_int_equal(decide(x), 20 * SEC);
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 27 * DAY, 27 * DAY);
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  assert_int_equal(decide(x), 28 * DAY);
  /* overdue is annotated; added before the factor with use-overdue-time
   * (off in the text evaluator: the wait ignores it) */
  visit(x, H_PLAIN, "/w");
  stored(x, 3, "v1", NULL, 0, 160 * SEC, 100 * SEC);
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  assert_int_equal(decide(x), 150 * SEC);
  assert_true(has_annot(x, "ov:1m0ms"));
  /* a 304 reads the stored content type: still the text evaluator */
  trusted(x, H_PLAIN);
  for (uint32_t v = 5;; v++) {
    visit(x, H_PLAIN, "/w");
    stored(x, v, "v1", "\"e\"", 0, 100 * SEC, 100 * SEC);
    if (before_request(x)) break;
  }
  x->r.status = 304;
  at_headers(x);
  after_body(x);
  assert_int_equal(decide(x), 150 * SEC);
  assert_true(has_annot(x, "wait:text/multiplicative"));
  /* an image: the image evaluator; a type no evaluator takes: the
   * catch-all */
  visit(x, H_PLAIN, "/i.png");
  header(x, "Content-Type", "image/png");
  fetch_body(x, "PNG");
  decide(x);
  assert_true(has_annot(x, "wait:image/multiplicative"));
  /* not a success, or robots.txt: no wait decided here */
  visit(x, H_PLAIN, "/w");
  x->f.disp = KR_DISP_FINISH;
  x->f.outcome.kind = KR_OUTCOME_RETRY;
  assert_int_equal(x->revisit->run(&x->f.cf, x->revisit), KR_PROC_NEXT);
  assert_int_equal(x->f.outcome.wait_ms, 0);
  assert_int_equal(x->f.nannot, 0);
}

/* A type neither text nor image: the built-in stack's catch-all
 * evaluator decides (crawl.default-wait is only for no match at all). */
static void wait_catch_all(void **state) {
  fx_t *x = *state;
  visit(x, H_PLAIN, "/o");
  header(x, "Content-Type", "application/octet-stream");
  fetch_body(x, "bin");
  uint64_t w = decide(x);
  assert_true(has_annot_prefix(x, "wait:"));
  /* the built-in stack has a catch-all: it decides, with its initial wait */
  const kr_cfg_wait_t *ev = kr_config_wait_match(x->hc.view, x->c->matcher, "application/octet-stream", 24);
  assert_non_null(ev);
  char want[64];
  snprintf(want, sizeof want, "wait:%s/multiplicative", ev->name);
  assert_true(has_annot(x, want));
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, ev);
  assert_int_equal(w, (uint64_t)p.initial_ms);
}

/* poisson: the prior on the first visit, then the estimate from the
 * history within the host's allocator; the history kept grows. */
static void wait_poisson(void **state) {
  fx_t *x = *state;
  visit(x, H_POISSON, "/p");
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  uint64_t w1 = decide(x);
  assert_true(has_annot_prefix(x, "wait:text/poisson/"));
  assert_true(w1 >= 20 * SEC && w1 <= 28 * DAY);
  kr_vhist_t h;
  assert_int_equal(kr_vhist_decode(&h, x->f.outcome.history, x->f.outcome.history_len), 0);
  assert_int_equal(h.n, 1);
  assert_int_equal(x->c->st.waits_poisson > 0, 1);
  /* a page seen unchanged on 10 visits a day apart changes rarely: a
   * long wait; one changed on every visit an hour apart: a short one */
  uint8_t hist[KR_VHIST_BYTES];
  size_t hl = 0;
  for (int i = 0; i < 10; i++) {
    kr_vhist_visit_t v = {.interval_s = i ? 86400 : 0, .state = i ? KR_CONTENT_UNCHANGED : KR_CONTENT_CHANGED, .age_s = -1};
    uint8_t tmp[KR_VHIST_BYTES];
    size_t n = kr_vhist_push(hist, hl, &v, tmp, NULL);
    memcpy(hist, tmp, n);
    hl = n;
  }
  visit(x, H_POISSON, "/slow");
  stored(x, 10, "v1", NULL, 0, DAY, DAY);
  x->u.history = hist;
  x->u.history_len = hl;
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  uint64_t slow = decide(x);
  hl = 0;
  for (int i = 0; i < 10; i++) {
    kr_vhist_visit_t v = {.interval_s = i ? 3600 : 0, .state = KR_CONTENT_CHANGED, .age_s = -1};
    uint8_t tmp[KR_VHIST_BYTES];
    size_t n = kr_vhist_push(hist, hl, &v, tmp, NULL);
    memcpy(hist, tmp, n);
    hl = n;
  }
  visit(x, H_POISSON, "/fast");
  stored(x, 10, "v1", NULL, 0, 3600 * SEC, 3600 * SEC);
  x->u.history = hist;
  x->u.history_len = hl;
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v2");
  uint64_t fast = decide(x);
  assert_true(has_annot_prefix(x, "wait:text/poisson/"));
  assert_false(has_annot(x, "wait:text/poisson/default"));
  assert_true(fast < 3600 * SEC);
  assert_true(slow > 3 * DAY);
  /* the history handed to the frontier has this visit appended */
  assert_int_equal(kr_vhist_decode(&h, x->f.outcome.history, x->f.outcome.history_len), 0);
  assert_int_equal(h.n, 11);
  assert_int_equal(h.v[10].state, KR_CONTENT_CHANGED);
  assert_int_equal(h.v[10].interval_s, 3600);
  /* the host's allocator exists and holds the observed URIs */
  assert_int_equal(x->c->ahosts_n, 1);
  kr_host_capacity_t cap;
  assert_int_equal(kr__adapt_host_capacity(x->c, x->u.host, &cap), 1);
  assert_int_equal(cap.objective, KR_PLAN_VERSIONS); /* adaptive.objective's default */
}

/* poisson: the host's allocator solves for the host's adaptive.objective
 * (read from the config into the host's settings). */
static void wait_objective(void **state) {
  fx_t *x = *state;
  assert_int_equal(kr_crawl_hostcfg(x->c, "poisson.example", 15)->objective, KR_PLAN_VERSIONS);
  visit(x, H_POISSON, "/h");
  x->hc.objective = KR_PLAN_HARMONIC;
  header(x, "Content-Type", "text/html");
  fetch_body(x, "v1");
  decide(x);
  kr_host_capacity_t cap;
  assert_int_equal(kr__adapt_host_capacity(x->c, x->u.host, &cap), 1);
  assert_int_equal(cap.objective, KR_PLAN_HARMONIC);
}

/* Informed priors (adaptive.informed-priors): once a dozen images of a
 * host were seen unchanged on three visits a day apart (prior.h min_obs), a newly discovered
 * image of the same path template waits far longer than the image
 * evaluator's initial-wait (200 s, multiplicative), and so does one of
 * another template (its type's prior); without the key it waits
 * initial-wait. */
static void wait_informed_prior(void **state) {
  fx_t *x = *state;
  for (int i = 0; i < 12; i++) {
    char path[32];
    snprintf(path, sizeof path, "/img/%d.png", i);
    visit(x, H_POISSON, path);
    x->hc.informed_priors = 1;
    stored(x, 3, "img", NULL, 0, DAY, DAY);
    x->u.content_type = "image/png";
    x->u.content_type_len = 9;
    uint8_t tmp[KR_VHIST_BYTES];
    size_t hl = 0;
    for (int k = 0; k < 3; k++) {
      kr_vhist_visit_t v = {.interval_s = k ? 86400 : 0,
                            .state = k ? KR_CONTENT_UNCHANGED : KR_CONTENT_CHANGED,
                            .age_s = -1};
      hl = kr_vhist_push(x->hist, hl, &v, tmp, NULL);
      memcpy(x->hist, tmp, hl);
    }
    x->u.history = x->hist;
    x->u.history_len = hl;
    header(x, "Content-Type", "image/png");
    fetch_body(x, "img");
    assert_int_equal(x->f.ad.content, KR_CONTENT_UNCHANGED);
    decide(x);
  }
  static const struct {
    const char *path;
    int on;
    int longer;
  } cases[] = {{"/img/4242.png", 1, 1}, {"/img/4243.png", 0, 0}, {"/logo.png", 1, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    visit(x, H_POISSON, cases[i].path);
    x->hc.informed_priors = cases[i].on;
    header(x, "Content-Type", "image/png");
    fetch_body(x, "new image");
    uint64_t w = decide(x);
    assert_true(has_annot(x, "wait:image/multiplicative"));
    if (cases[i].longer)
      assert_true(w > 10 * 200 * SEC);
    else
      assert_int_equal(w, 200 * SEC);
  }
}

/* A page's third visit with informed priors on, its stored history the
 * hl bytes in x->hist. */
static void revisit_informed(fx_t *x, const char *path, size_t hl) {
  visit(x, H_POISSON, path);
  x->hc.informed_priors = 1;
  stored(x, 2, "page", NULL, 0, DAY, DAY);
  x->u.history = x->hist;
  x->u.history_len = hl;
  header(x, "Content-Type", "text/html");
  fetch_body(x, "page");
  decide(x);
}

/* Informed priors with poisson: once the host's pages of a template were
 * seen and its Last-Modified ages are in use, a page of that template
 * with few observations of its own is judged by the posterior under its
 * group's log-normal (estimate.h, KR_EST_POSTERIOR), as `kria simulate`
 * does; without the key, with history samples alone, or in a template
 * whose pages send no Last-Modified, by the pseudo-observation prior
 * (ML). */
static void wait_informed_posterior(void **state) {
  fx_t *x = *state;
  size_t hl = 0;
  for (int i = 0; i < 13; i++) {
    int on = i < 12 ? 1 : 0;
    char path[32];
    snprintf(path, sizeof path, "/a/%d.html", i < 12 ? i : 4242);
    visit(x, H_POISSON, path);
    x->hc.informed_priors = on;
    int visits = i < 12 ? 3 : 2; /* three observations with this visit: the pool's
                                    sample (prior.h min_obs); the last two */
    stored(x, (unsigned)visits, "page", NULL, 0, DAY, DAY);
    uint8_t tmp[KR_VHIST_BYTES];
    hl = 0;
    for (int k = 0; k < visits; k++) {
      kr_vhist_visit_t v = {.interval_s = k ? 86400 : 0,
                            .state = k ? KR_CONTENT_UNCHANGED : KR_CONTENT_CHANGED,
                            .age_s = -1};
      hl = kr_vhist_push(x->hist, hl, &v, tmp, NULL);
      memcpy(x->hist, tmp, hl);
    }
    x->u.history = x->hist;
    x->u.history_len = hl;
    header(x, "Content-Type", "text/html");
    fetch_body(x, "page");
    decide(x);
  }
  assert_false(has_annot(x, "wait:text/poisson/posterior")); /* the key off */
  /* a pool of history samples only: no posterior (prior.h: such a fit is
   * censored by the intervals visited), the pseudo-observation prior */
  revisit_informed(x, "/a/4243.html", hl);
  assert_false(has_annot(x, "wait:text/poisson/posterior"));
  /* first visits whose Last-Modified ages spread as changes spread them:
   * the host's ages are in use, and the posterior judges the page */
  for (int i = 0; i < 12; i++) {
    char path[32], date[KR_HTTP_DATE_SIZE], lm[KR_HTTP_DATE_SIZE];
    snprintf(path, sizeof path, "/a/new%d.html", i);
    visit(x, H_POISSON, path);
    x->hc.informed_priors = 1;
    int64_t t = (int64_t)(now_ms(x) / 1000);
    int64_t age = (int64_t)(-log(1.0 - (i + 0.5) / 12) * 5 * 86400) + 60;
    http_date(date, t);
    http_date(lm, t - age);
    header(x, "Content-Type", "text/html");
    header(x, "Date", date);
    header(x, "Last-Modified", lm);
    fetch_body(x, "page");
    decide(x);
  }
  /* an undated page of a dated template: the posterior judges it */
  revisit_informed(x, "/a/new4244.html", hl);
  assert_true(has_annot(x, "wait:text/poisson/posterior"));
  /* one of the undated template: its history samples, not the dated
   * pages' ages (prior.h "Estimate") */
  revisit_informed(x, "/a/4245.html", hl);
  assert_false(has_annot(x, "wait:text/poisson/posterior"));
}

/* ---- revisit: pulled forward ------------------------------------------------------------ */

static void embeds_refreshed(void **state) {
  fx_t *x = *state;
  kr_link_t links[2];
  const char *hops[2] = {"E", "L"};
  for (int pass = 0; pass < 3; pass++) {
    visit(x, H_PLAIN, "/page");
    x->hc.refresh_embeds = pass != 2;
    if (pass) stored(x, 2, "old", NULL, 0, 60 * SEC, 20 * SEC);
    header(x, "Content-Type", "text/html");
    fetch_body(x, "new");
    for (int i = 0; i < 2; i++)
      links[i] = (kr_link_t){.url = "http://a.example/e", .url_len = 18, .hop_path = hops[i],
                             .hop_len = 1};
    x->f.links = malloc(sizeof links);
    memcpy(x->f.links, links, sizeof links);
    x->f.nlinks = x->f.links_cap = 2;
    uint64_t e0 = x->c->st.embeds_refreshed;
    decide(x);
    /* only on a change after the first visit, only with the option, only E */
    int on = pass == 1;
    assert_int_equal(x->c->st.embeds_refreshed, e0 + (uint64_t)on);
    assert_int_equal(x->f.links[0].directive, on ? KR_DIRECTIVE_HIGH : KR_DIRECTIVE_NORMAL);
    assert_int_equal(!!(x->f.links[0].flags & KR_LINK_RESCHEDULE), on);
    assert_int_equal(x->f.links[1].directive, KR_DIRECTIVE_NORMAL);
  }
}

/* ---- extract-feed, feed pulls, hints -------------------------------------------------------- */

static const char rss_fmt[] =
    "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>t</title>"
    "<item><link>http://poisson.example/new</link><pubDate>%s</pubDate></item>"
    "<item><link>http://poisson.example/old</link><pubDate>%s</pubDate></item>"
    "<item><link>http://poisson.example/u1</link></item>"
    "<item><link>http://poisson.example/u2</link></item>"
    "</channel></rss>";

static void feed_items_pulled(void **state) {
  fx_t *x = *state;
  int64_t t = (int64_t)(now_ms(x) / 1000);
  char newer[KR_HTTP_DATE_SIZE], older[KR_HTTP_DATE_SIZE];
  http_date(newer, t - 60);   /* after the previous visit (an hour ago) */
  http_date(older, t - 7200); /* before it */
  char body[1024];
  snprintf(body, sizeof body, rss_fmt, newer, older);
  uint64_t pulled0 = x->c->st.feed_pulled;
  visit(x, H_POISSON, "/feed");
  stored(x, 3, "an older feed", NULL, 0, 3600 * SEC, 3600 * SEC);
  header(x, "Content-Type", "application/rss+xml");
  assert_int_equal(fetch_body(x, body), KR_PROC_NEXT);
  assert_true(x->feed_on);
  assert_true(has_annot(x, "feed:rss"));
  assert_int_equal(x->f.nlinks, 4);
  assert_int_equal(x->f.nfmeta, 4);
  assert_int_equal(x->f.links[x->f.fmeta[0].link].hop_path[0], 'L');
  assert_true(x->f.fmeta[0].updated == t - 60);
  decide(x);
  /* dated after the last visit: now at HIGH; dated before: left alone;
   * undated: now, up to feed-pull-max (1 on this host) */
  kr_link_t *l = x->f.links;
  uint64_t now = now_ms(x);
  assert_true(l[0].directive == KR_DIRECTIVE_HIGH && l[0].next_at == now &&
              (l[0].flags & KR_LINK_RESCHEDULE));
  assert_true(l[1].directive == KR_DIRECTIVE_NORMAL && !(l[1].flags & KR_LINK_RESCHEDULE));
  assert_true(l[2].next_at == now && (l[2].flags & KR_LINK_RESCHEDULE) &&
              l[2].directive == KR_DIRECTIVE_NORMAL);
  assert_false(l[3].flags & KR_LINK_RESCHEDULE);
  assert_int_equal(x->c->st.feed_pulled, pulled0 + 2);
  /* the same feed unchanged: its links are dropped, nothing pulled */
  visit(x, H_POISSON, "/feed");
  stored(x, 3, body, NULL, 0, 3600 * SEC, 3600 * SEC);
  header(x, "Content-Type", "application/rss+xml");
  assert_int_equal(fetch_body(x, body), KR_PROC_SKIP_TO_WRITE);
  assert_int_equal(x->f.nlinks, 0);
  assert_int_equal(x->f.nfmeta, 0);
  decide(x);
  assert_int_equal(x->c->st.feed_pulled, pulled0 + 2);
  /* the first visit of a feed pulls nothing (its items are new anyway) */
  visit(x, H_POISSON, "/feed2");
  header(x, "Content-Type", "application/rss+xml");
  fetch_body(x, body);
  decide(x);
  assert_int_equal(x->c->st.feed_pulled, pulled0 + 2);
}

static void feed_errors_and_non_feeds(void **state) {
  fx_t *x = *state;
  uint64_t e0 = x->c->st.feed_errors, f0 = x->c->st.feeds;
  visit(x, H_PLAIN, "/broken");
  header(x, "Content-Type", "application/atom+xml");
  const char *b = "<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><link href=\"/a\"/></entry><entry><link";
  fetch_body(x, b);
  assert_true(has_annot(x, "feedError"));
  assert_true(has_annot(x, "feed:atom"));
  assert_int_equal(x->f.nlinks, 1); /* the items before the break */
  assert_int_equal(x->c->st.feed_errors, e0 + 1);
  /* XML that is no feed: no annotation, no count */
  visit(x, H_PLAIN, "/data.xml");
  header(x, "Content-Type", "text/xml");
  fetch_body(x, "<?xml version=\"1.0\"?><data><x>1</x></data>");
  assert_false(has_annot_prefix(x, "feed"));
  assert_int_equal(x->c->st.feeds, f0 + 1);
  /* feeds off for the host: not subscribed */
  visit(x, H_PLAIN, "/off");
  x->hc.feeds = 0;
  header(x, "Content-Type", "application/rss+xml");
  at_headers(x);
  assert_false(x->feed_on);
}

/* A sitemap's changefreq goes to the item's URI row (after finish put
 * the links in the store). */
static void sitemap_hints(void **state) {
  fx_t *x = *state;
  const char *sm =
      "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
      "<url><loc>http://a.example/daily</loc><changefreq>daily</changefreq></url>"
      "<url><loc>http://a.example/none</loc></url></urlset>";
  visit(x, H_PLAIN, "/sitemap.xml");
  header(x, "Content-Type", "application/xml");
  fetch_body(x, sm);
  assert_true(has_annot(x, "feed:sitemap"));
  assert_int_equal(x->f.nfmeta, 2);
  assert_true(fabs(x->f.fmeta[0].rate - 1.0 / 86400) < 1e-12);
  assert_true(x->f.fmeta[1].rate == 0);
  /* finish's part: the links in the store */
  uint64_t now = now_ms(x);
  for (size_t i = 0; i < x->f.nlinks; i++)
    assert_true(kr_frontier_add(x->c->frontier, &x->f.links[i], now) >= 0);
  assert_int_equal(x->hints->run(&x->f.cf, x->hints), KR_PROC_NEXT);
  kr_store_t *st = kr_frontier_store(x->c->frontier);
  kr_uri_row_t row;
  assert_int_equal(kr_store_uri_get(st, kr_fp("http://a.example/daily", 22), &row), 1);
  assert_true(fabs(row.hint_rate - 1.0 / 86400) < 1e-12);
  assert_int_equal(kr_store_uri_get(st, kr_fp("http://a.example/none", 21), &row), 1);
  assert_true(row.hint_rate == 0);
  /* hints off: nothing written */
  visit(x, H_PLAIN, "/sitemap.xml");
  x->hc.hint_changefreq = 0;
  header(x, "Content-Type", "application/xml");
  fetch_body(x, sm);
  assert_int_equal(x->hints->run(&x->f.cf, x->hints), KR_PROC_NEXT);
}

#define FX(t) cmocka_unit_test_setup_teardown(t, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(durations),
      FX(change_states),
      FX(change_duplicates),
      FX(midfetch_modes),
      FX(midfetch_304),
      FX(midfetch_schemes),
      FX(midfetch_conditional_prediction),
      FX(trust_recorded),
      FX(digest_streams),
      FX(digest_strip),
      FX(wait_multiplicative),
      FX(wait_catch_all),
      FX(wait_poisson),
      FX(wait_informed_prior),
      FX(wait_informed_posterior),
      FX(wait_objective),
      FX(embeds_refreshed),
      FX(feed_items_pulled),
      FX(feed_errors_and_non_feeds),
      FX(sitemap_hints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
