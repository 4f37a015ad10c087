/* Informed priors (kria/prior.h): path templates on realistic URLs, the
 * pooling and shrinkage (a group of slow members gives a new member a
 * slow prior, a template with few members falls back to its parent, an
 * empty pool gives the evaluator's prior), Last-Modified ages (bounded
 * until verified, more tightly before their spread is judged, refused when contradicted or all alike;
 * the posterior's log-normal only from ages), the caps, hostile values, and the pool's format (round
 * trip, damaged input). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kria/error.h"
#include "kria/prior.h"

static const char *tmpl(const char *url) {
  static char out[KR_PRIOR_TEMPLATE_MAX];
  size_t n = kr_prior_template(url, strlen(url), out, sizeof out);
  assert_int_equal(n, strlen(out));
  return out;
}

static void templates(void **state) {
  (void)state;
  assert_string_equal(tmpl("http://a.test/news/2024/05/31/storm-hits-the-city"),
                      "/news/{n}/{n}/{n}/{slug}");
  assert_string_equal(tmpl("https://a.test/p/123"), "/p/{n}");
  assert_string_equal(tmpl("/p/98765"), "/p/{n}");
  assert_string_equal(tmpl("/img/abc123def.PNG"), "/img/{id}.png");
  assert_string_equal(tmpl("/img/logo.png"), "/img/logo.png");
  assert_string_equal(tmpl("/list?id=5&page=2"), "/list?id&page");
  assert_string_equal(tmpl("/list?page=2&id=5&id=6#top"), "/list?id&page");
  assert_string_equal(tmpl("/u/0123abcd4567ef89?tab=posts"), "/u/{id}?tab");
  assert_string_equal(tmpl("/d/550e8400-e29b-41d4-a716-446655440000"), "/d/{id}");
  assert_string_equal(tmpl("/blog/2024-05-31/"), "/blog/{date}/");
  assert_string_equal(tmpl("/archive/page10"), "/archive/page{n}");
  assert_string_equal(tmpl("/about-us"), "/about-us");
  assert_string_equal(tmpl("/wiki/%E6%97%A5%E6%9C%AC"), "/wiki/{slug}");
  assert_string_equal(tmpl("/my%20first%20post"), "/{slug}");
  assert_string_equal(tmpl("http://a.test"), "/");
  assert_string_equal(tmpl("http://a.test/"), "/");
  assert_string_equal(tmpl("http://a.test?x=1"), "/?x");
  assert_string_equal(tmpl("/a/b/c/d/e/f/g/h/i"), "/a/b/c/d/e/f/{more}");
  /* the same template for every article, whatever its date and slug */
  assert_string_equal(tmpl("/news/2023/01/02/a-b-c-d"), tmpl("/news/1999/12/31/x-y-z"));
  /* overlong input: bounded output, NUL-terminated */
  char big[20000], out[64];
  for (size_t i = 0; i < sizeof big - 1; i++) big[i] = i % 7 ? 'a' : (i % 3 ? '/' : '?');
  big[sizeof big - 1] = 0;
  size_t n = kr_prior_template(big, strlen(big), out, sizeof out);
  assert_true(n < sizeof out);
  assert_int_equal(strlen(out), n);
  n = kr_prior_template(big, strlen(big), out, 1);
  assert_int_equal(n, 0);
  /* many query keys: capped */
  assert_string_equal(tmpl("/?a=1&b&c&d&e&f&g&h&i&j"), "/?a&b&c&d&e&f&g&h&{more}");
  /* keys */
  assert_true(kr_prior_key("", 0) != 0);
  assert_int_equal(kr_prior_type_key("", 0), 0);
  assert_true(kr_prior_type_key("Text/HTML; charset=utf-8", 24) ==
              kr_prior_type_key("text/html", 9));
}

#define DAY 86400
#define IW 20.0                 /* initial-wait, s */
#define ROOT (log(2.0) / IW)    /* its lambda0 */

/* A history: a first visit with version age first_age (-1 none), then
 * n revisits every t seconds, changed every `every`-th (0 never), with
 * ages that fit when lm. */
static void hist(kr_vhist_t *h, int64_t first_age, unsigned n, int64_t t, unsigned every, int lm) {
  kr_vhist_init(h);
  kr_vhist_visit_t v = {0, KR_CONTENT_CHANGED, first_age};
  kr_vhist_append(h, &v);
  int64_t age = first_age;
  for (unsigned i = 1; i <= n; i++) {
    int ch = every && i % every == 0;
    age = ch ? t / 2 : age + t;
    v = (kr_vhist_visit_t){t, ch ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED, lm ? age : -1};
    kr_vhist_append(h, &v);
  }
}

/* Observe every prefix of h, as the visits come. */
static void feed(kr_prior_pool_t *p, const kr_prior_params_t *pp, const kr_est_params_t *ep,
                 uint64_t type, uint64_t tm, const kr_vhist_t *h) {
  kr_vhist_t g;
  kr_vhist_init(&g);
  for (unsigned i = 0; i < h->n; i++) {
    kr_vhist_append(&g, &h->v[i]);
    kr_prior_observe(p, pp, ep, type, tm, &g, ROOT);
  }
}

static void slow_group_slow_prior(void **state) {
  (void)state;
  kr_prior_params_t pp;
  kr_prior_params_default(&pp);
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_prior_pool_t p;
  kr_prior_pool_init(&p);
  uint64_t img = kr_prior_type_key("image/png", 9), t = kr_prior_key("/img/{id}.png", 13);
  kr_prior_est_t e;
  /* nothing learned: the evaluator's prior and weight */
  kr_prior_estimate(&p, &pp, &ep, img, t, NULL, ROOT, 1.0, &e);
  assert_true(e.rate == ROOT);
  assert_true(e.weight == 1.0);
  assert_int_equal(e.level, 0);
  /* 50 images, none of which ever changes, no Last-Modified */
  for (int i = 0; i < 50; i++) {
    kr_vhist_t h;
    hist(&h, -1, 8, (int64_t)(2 * DAY), 0, 0);
    feed(&p, &pp, &ep, img, t, &h);
  }
  kr_prior_estimate(&p, &pp, &ep, img, t, NULL, ROOT, 1.0, &e);
  assert_int_equal(e.level, 3);
  assert_true(e.rate < ROOT / 1000); /* a first wait of hours, not 20 s */
  /* its weight light; and no posterior (estimate.h): a log-normal fitted
   * to history samples is censored by the intervals visited, not the
   * spread of the rates (50 identical histories here) */
  assert_true(e.weight <= pp.weight_max);
  assert_true(e.tau2 == 0);
  /* a new template of the same type with few members: its parent's prior */
  uint64_t t2 = kr_prior_key("/img/new/{id}.png", 17);
  kr_prior_est_t e2;
  kr_prior_estimate(&p, &pp, &ep, img, t2, NULL, ROOT, 1.0, &e2);
  assert_int_equal(e2.level, 2);
  assert_true(fabs(log(e2.rate / e.rate)) < 1.0);
  kr_vhist_t h;
  hist(&h, -1, 6, (int64_t)(2 * DAY), 1, 0); /* one member that changes every time */
  feed(&p, &pp, &ep, img, t2, &h);
  kr_prior_estimate(&p, &pp, &ep, img, t2, NULL, ROOT, 1.0, &e2);
  assert_int_equal(e2.level, 3);
  assert_true(e2.rate < ROOT / 100); /* one member does not make a class */
  assert_true(e2.rate > e.rate);
  /* another type on the same host: the host's level, between */
  kr_prior_estimate(&p, &pp, &ep, kr_prior_type_key("text/html", 9), kr_prior_key("/", 1),
                    NULL, ROOT, 1.0, &e2);
  assert_int_equal(e2.level, 1);
  assert_true(e2.rate < ROOT && e2.rate > e.rate);
  kr_prior_pool_free(&p);
}

/* Ages of versions as a Poisson page's would be: exponential, here the
 * quantiles of Exp(1/mean) for URI i of n. */
static int64_t exp_age(int i, int n, double mean) {
  return (int64_t)(-log(1.0 - (i + 0.5) / n) * mean) + 3;
}

static void ages(void **state) {
  (void)state;
  kr_prior_params_t pp;
  kr_prior_params_default(&pp);
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_prior_pool_t p;
  kr_prior_pool_init(&p);
  uint64_t ty = kr_prior_type_key("text/html", 9), t = kr_prior_key("/a/", 3);
  kr_prior_est_t e;
  /* first visits only, versions about ten days old: used from the first
   * pass, but not yet verified, so the first wait is bounded: a day while
   * fewer than 8 ages cannot tell one date for every page from ages
   * spread as changes spread them, */
  for (int i = 0; i < 20; i++) {
    kr_vhist_t h;
    hist(&h, exp_age((i * 7) % 20, 20, 10 * DAY), 0, 0, 0, 1);
    feed(&p, &pp, &ep, ty, t, &h);
    if (i != 6) continue;
    kr_prior_estimate(&p, &pp, &ep, ty, t, NULL, ROOT, 1.0, &e);
    assert_int_equal(e.level, 3);
    assert_true(fabs(e.rate - log(2.0) / DAY) < 1e-12);
  }
  /* two days once they spread (a slow page is not brought back daily
   * while the host's first pass lasts) */
  kr_prior_estimate(&p, &pp, &ep, ty, t, NULL, ROOT, 1.0, &e);
  assert_int_equal(e.level, 3);
  assert_true(fabs(e.rate - log(2.0) / (2 * DAY)) < 1e-12);
  /* revisits whose ages fit the content verify the host's Last-Modified:
   * then the ages say what they say (about one change in ten days) */
  for (int i = 0; i < 4; i++) {
    kr_vhist_t h;
    hist(&h, exp_age(i, 4, 10 * DAY), 2, 3600, 1, 1);
    feed(&p, &pp, &ep, ty, kr_prior_key("/b/", 3), &h);
  }
  kr_prior_estimate(&p, &pp, &ep, ty, t, NULL, ROOT, 1.0, &e);
  assert_true(e.rate > 1.0 / (40 * DAY) && e.rate < 1.0 / (2 * DAY));
  /* a log-normal fitted to ages: the posterior of a URI's first
   * observations (estimate.h), the ages spread as exponential ones do */
  assert_true(e.tau2 > 0 && e.tau2 < 2.0 / 1.0);
  /* the URI's own first age moves its prior */
  kr_vhist_t h;
  hist(&h, 60, 0, 0, 0, 1);
  kr_prior_est_t own;
  kr_prior_estimate(&p, &pp, &ep, ty, t, &h, ROOT, 1.0, &own);
  assert_true(own.rate > e.rate); /* slightly: the group agrees closely */
  kr_prior_pool_free(&p);

  /* every page the same Last-Modified (a deploy's date, or a server
   * whose Last-Modified never moves): not change evidence */
  kr_prior_pool_init(&p);
  for (int i = 0; i < 20; i++) {
    hist(&h, 365 * DAY + i, 0, 0, 0, 1);
    feed(&p, &pp, &ep, ty, t, &h);
  }
  kr_prior_estimate(&p, &pp, &ep, ty, t, NULL, ROOT, 1.0, &e);
  assert_true(e.rate == ROOT);
  kr_prior_pool_free(&p);

  /* ages contradicted by the content (changed under an old date): ignored
   * (and no history sample either: three revisits, fewer than min_obs) */
  kr_prior_pool_init(&p);
  pp.min_obs = 8;
  for (int i = 0; i < 20; i++) {
    kr_vhist_t g;
    kr_vhist_init(&g);
    kr_vhist_visit_t v = {0, KR_CONTENT_CHANGED, exp_age(i, 20, 3 * DAY)};
    kr_vhist_append(&g, &v);
    for (int k = 1; k < 4; k++) {
      v = (kr_vhist_visit_t){3600, KR_CONTENT_CHANGED, exp_age(i, 20, 3 * DAY) + 3600 * k};
      kr_vhist_append(&g, &v);
    }
    feed(&p, &pp, &ep, ty, t, &g);
  }
  kr_prior_estimate(&p, &pp, &ep, ty, t, NULL, ROOT, 1.0, &e);
  assert_true(e.rate == ROOT);
  kr_prior_pool_free(&p);
  kr_prior_params_default(&pp);
}

/* Pages without Last-Modified in a template of their own: not judged by
 * the ages of the host's dated pages (an archive dated long ago says
 * nothing of generated pages), but by history samples; an undated page in
 * a template of dated ones keeps the ages. */
static void undated_template(void **state) {
  (void)state;
  kr_prior_params_t pp;
  kr_prior_params_default(&pp);
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_prior_pool_t p;
  kr_prior_pool_init(&p);
  uint64_t ty = kr_prior_type_key("text/html", 9), arch = kr_prior_key("/archive/{n}", 12),
           sect = kr_prior_key("/section/{n}", 12);
  /* 40 archive pages, first visits only, versions about ten days old */
  for (int i = 0; i < 40; i++) {
    kr_vhist_t h;
    hist(&h, exp_age((i * 7) % 40, 40, 10 * DAY), 0, 0, 0, 1);
    feed(&p, &pp, &ep, ty, arch, &h);
  }
  kr_prior_est_t dated, e;
  kr_prior_estimate(&p, &pp, &ep, ty, arch, NULL, ROOT, 1.0, &dated);
  assert_true(dated.rate < ROOT / 1000);
  /* a section page's first visit, no Last-Modified: the evaluator's prior */
  kr_vhist_t h;
  hist(&h, -1, 0, 0, 0, 0);
  kr_prior_estimate(&p, &pp, &ep, ty, sect, &h, ROOT, 1.0, &e);
  assert_true(e.rate == ROOT);
  assert_true(e.tau2 == 0);
  /* still so once its template has members without ages */
  for (int i = 0; i < 5; i++) feed(&p, &pp, &ep, ty, sect, &h);
  kr_prior_estimate(&p, &pp, &ep, ty, sect, &h, ROOT, 1.0, &e);
  assert_true(e.rate == ROOT);
  /* their history samples, once there (each changed at every visit a
   * minute apart), are what the template learns from */
  for (int i = 0; i < 10; i++) {
    kr_vhist_t g;
    hist(&g, -1, 4, 60, 1, 0);
    feed(&p, &pp, &ep, ty, sect, &g);
  }
  kr_prior_estimate(&p, &pp, &ep, ty, sect, &h, ROOT, 1.0, &e);
  assert_int_equal(e.level, 3);
  assert_true(e.rate > 1.0 / 600);
  /* an undated page in the archive's template: the archive's ages */
  kr_prior_estimate(&p, &pp, &ep, ty, arch, &h, ROOT, 1.0, &e);
  assert_true(fabs(log(e.rate / dated.rate)) < 1e-9);
  /* no history (NULL): as before, the ages of the chain */
  kr_prior_estimate(&p, &pp, &ep, ty, kr_prior_key("/other/{n}", 10), NULL, ROOT, 1.0, &e);
  assert_true(e.rate < ROOT / 1000);
  kr_prior_pool_free(&p);
}

static void caps_and_hostile(void **state) {
  (void)state;
  kr_prior_params_t pp;
  kr_prior_params_default(&pp);
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_prior_pool_t p;
  kr_prior_pool_init(&p);
  kr_vhist_t h;
  hist(&h, 100, 7, 3600, 2, 0);
  /* an adversarial number of templates and types */
  for (int i = 0; i < 5000; i++) {
    char s[32];
    int n = snprintf(s, sizeof s, "/t%d", i);
    feed(&p, &pp, &ep, kr_prior_key(s, (size_t)n) ^ 1, kr_prior_key(s, (size_t)n), &h);
    assert_true(p.ntmpls <= KR_PRIOR_TEMPLATES && p.cap_tmpls <= KR_PRIOR_TEMPLATES);
    assert_true(p.ntypes <= KR_PRIOR_TYPES && p.cap_types <= KR_PRIOR_TYPES);
  }
  assert_int_equal(p.ntmpls, KR_PRIOR_TEMPLATES);
  assert_true(p.evicted > 0);
  /* the host's sums stay bounded however many URIs */
  assert_true(p.host.h_n <= pp.max_n && p.host.members == 5000);
  /* hostile values: no history, empty, NaN and absurd roots, weights */
  kr_prior_observe(&p, &pp, &ep, 1, 2, NULL, ROOT);
  kr_vhist_t e0;
  kr_vhist_init(&e0);
  kr_prior_observe(&p, &pp, &ep, 1, 2, &e0, NAN);
  feed(&p, &pp, &ep, 1, 2, &h);
  kr_prior_est_t e;
  double roots[] = {NAN, 0, -1, INFINITY, 1e300, 1e-300};
  for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
    kr_prior_estimate(&p, &pp, &ep, 1, 2, &h, roots[i], NAN, &e);
    assert_true(e.rate > 0 && isfinite(e.rate));
    assert_true(isfinite(e.weight) || isnan(e.weight)); /* the caller's own weight back */
  }
  kr_prior_estimate(NULL, &pp, &ep, 1, 2, NULL, ROOT, 1, &e);
  assert_true(e.rate == ROOT);
  /* zero keys: no such group, the host level still learns */
  feed(&p, &pp, &ep, 0, 0, &h);
  kr_prior_pool_free(&p);
}

static void format(void **state) {
  (void)state;
  kr_prior_params_t pp;
  kr_prior_params_default(&pp);
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_prior_pool_t p, q;
  kr_prior_pool_init(&p);
  kr_prior_pool_init(&q);
  /* empty pool round trip */
  uint8_t buf[8192];
  size_t n = kr_prior_pool_encode(&p, buf, sizeof buf);
  assert_int_equal(kr_prior_pool_decode(&q, buf, n), 0);
  for (int i = 0; i < 40; i++) {
    kr_vhist_t h;
    hist(&h, 600 + i, 7, 3600, 1 + i % 3, 1);
    char s[16];
    int k = snprintf(s, sizeof s, "/c%d", i % 5);
    feed(&p, &pp, &ep, kr_prior_key(s, 2), kr_prior_key(s, (size_t)k), &h);
  }
  n = kr_prior_pool_encode(&p, NULL, 0);
  assert_true(n > 1 && n <= sizeof buf);
  assert_int_equal(kr_prior_pool_encode(&p, buf, sizeof buf), n);
  assert_int_equal(buf[0], KR_PRIOR_VERSION);
  assert_int_equal(kr_prior_pool_decode(&q, buf, n), 0);
  kr_prior_est_t a, b;
  uint64_t ty = kr_prior_key("/c3", 2), tm = kr_prior_key("/c3", 3);
  kr_prior_estimate(&p, &pp, &ep, ty, tm, NULL, ROOT, 1, &a);
  kr_prior_estimate(&q, &pp, &ep, ty, tm, NULL, ROOT, 1, &b);
  assert_true(a.rate == b.rate && a.weight == b.weight && a.level == b.level);
  uint8_t buf2[8192];
  assert_int_equal(kr_prior_pool_encode(&q, buf2, sizeof buf2), n);
  assert_memory_equal(buf, buf2, n);
  /* damaged: version, length, counts, a NaN, a negative count, a zero or
   * repeated key; the pool is left empty */
  uint8_t d[8192];
  memcpy(d, buf, n);
  d[0] = 2;
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  assert_int_equal(q.ntmpls + q.ntypes, 0);
  for (size_t cut = 0; cut < n; cut += 7) assert_int_equal(kr_prior_pool_decode(&q, buf, cut), KR_EINVAL);
  assert_int_equal(kr_prior_pool_decode(&q, NULL, 0), KR_EINVAL);
  memcpy(d, buf, n);
  d[1] = 200; /* types over the cap */
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  memcpy(d, buf, n);
  double nan = NAN;
  memcpy(d + 9, &nan, 8); /* the host's members */
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  memcpy(d, buf, n);
  double neg = -1;
  memcpy(d + 9, &neg, 8);
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  size_t g0 = 9 + KR_PRIOR_STAT_FIELDS * 8, gb = 8 + KR_PRIOR_STAT_FIELDS * 8;
  memcpy(d, buf, n);
  memset(d + g0, 0, 8); /* a zero key */
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  memcpy(d, buf, n);
  memcpy(d + g0 + 2 * gb, d + g0 + gb, 8); /* a repeated template key (one type) */
  assert_int_equal(kr_prior_pool_decode(&q, d, n), KR_EINVAL);
  assert_int_equal(q.ntmpls + q.ntypes, 0);
  /* every single-byte corruption: refused or a valid pool, never a crash */
  for (size_t i = 0; i < n; i += 3) {
    memcpy(d, buf, n);
    d[i] ^= 0xa5;
    if (kr_prior_pool_decode(&q, d, n) == 0) {
      kr_prior_estimate(&q, &pp, &ep, ty, tm, NULL, ROOT, 1, &b);
      assert_true(b.rate > 0 && isfinite(b.rate));
    }
  }
  kr_prior_pool_free(&q);
  kr_prior_pool_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(templates),
      cmocka_unit_test(slow_group_slow_prior),
      cmocka_unit_test(ages),
      cmocka_unit_test(undated_template),
      cmocka_unit_test(caps_and_hostile),
      cmocka_unit_test(format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
