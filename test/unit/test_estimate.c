/* Change-rate estimation and allocation. History: round trip, byte and
 * count caps, hostile BLOBs (every malformation, then random garbage)
 * decode to an error and never crash, and a successful decode re-encodes
 * to the same bytes. Estimators on simulated Poisson processes (seeded):
 * each lands near the true rate, the bias-reduced estimator beats the
 * naive one at small n, ML equals bias-reduced on regular intervals and
 * survives all-changed / none-changed, the last-modified estimator and
 * its validity checks, priors and hints. Allocation: h and its inverse,
 * the budget holds, versions-optimal is proportional, freshness-optimal
 * starves very fast pages (Cho), both beat uniform on a synthetic mix
 * (ratios in TAP comments), and the per-host sketch tracks the exact
 * solve. The harmonic objective: Ein, P and g against numeric integrals
 * and derivatives (g = x^2 P'), E[H(Poisson)] = Ein, its optimum meets
 * the KKT conditions and beats the versions optimum on its own measure,
 * and the host's multiplier plans about its budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/error.h"
#include "kria/estimate.h"
#include "helpers.h"

static uint64_t rng_state;
static void seed(uint64_t s) { rng_state = s; }
static uint64_t rnd(void) { return th_splitmix64(&rng_state); }
static double unif(void) { return ((double)(rnd() >> 11) + 0.5) * 0x1p-53; } /* (0,1) */
static double expo(double rate) { return -log(unif()) / rate; }

/* A page whose changes are a Poisson process, visited by the tests. */
typedef struct page {
  double lambda;
  double now;         /* time of the last visit */
  double next_change; /* absolute */
  double last_change; /* absolute, of the version last seen */
} page_t;

static void page_init(page_t *p, double lambda) {
  p->lambda = lambda;
  p->now = 0;
  p->last_change = -expo(lambda);
  p->next_change = expo(lambda);
}

/* Visit t seconds after the previous visit: changed?, age of the version. */
static int page_visit(page_t *p, double t, double *age) {
  double at = p->now + t;
  int changed = 0;
  while (p->next_change <= at) {
    changed = 1;
    p->last_change = p->next_change;
    p->next_change += expo(p->lambda);
  }
  p->now = at;
  if (age) *age = at - p->last_change;
  return changed;
}

/* ---- history --------------------------------------------------------------- */

static void history_round_trip(void **state) {
  (void)state;
  seed(1);
  for (int round = 0; round < 2000; round++) {
    kr_vhist_t h, d;
    kr_vhist_init(&h);
    unsigned n = (unsigned)(rnd() % (KR_VHIST_MAX + 1));
    for (unsigned i = 0; i < n; i++) {
      kr_vhist_visit_t v;
      v.interval_s = i == 0 ? 0 : (int64_t)(rnd() % 3000000) + 1;
      v.state = (kr_content_t)(rnd() % 3);
      v.age_s = rnd() % 3 ? -1 : (int64_t)(rnd() % 5000000);
      kr_vhist_append(&h, &v);
    }
    uint8_t buf[KR_VHIST_BYTES];
    size_t len = kr_vhist_encode(&h, buf, sizeof buf);
    assert_true(len >= 1 && len <= KR_VHIST_BYTES);
    assert_int_equal(kr_vhist_decode(&d, buf, len), 0);
    /* what fits is the newest suffix, intact */
    assert_true(d.n <= h.n);
    unsigned off = h.n - d.n;
    for (unsigned i = 0; i < d.n; i++) {
      assert_int_equal(d.v[i].interval_s, h.v[off + i].interval_s);
      assert_int_equal(d.v[i].state, h.v[off + i].state);
      assert_int_equal(d.v[i].age_s, h.v[off + i].age_s);
    }
    /* typical visits (intervals up to ~35 days, no age) always fit 32 */
    if (n == KR_VHIST_MAX && round % 2 == 0) {
      kr_vhist_t t;
      kr_vhist_init(&t);
      for (unsigned i = 0; i < KR_VHIST_MAX; i++) {
        kr_vhist_visit_t v = {3000000, KR_CONTENT_CHANGED, -1};
        kr_vhist_append(&t, &v);
      }
      assert_int_equal(kr_vhist_encode(&t, buf, sizeof buf), 1 + 4 * KR_VHIST_MAX);
    }
  }
  /* empty */
  kr_vhist_t e;
  assert_int_equal(kr_vhist_decode(&e, NULL, 0), 0);
  assert_int_equal(e.n, 0);
  uint8_t one[1];
  kr_vhist_init(&e);
  assert_int_equal(kr_vhist_encode(&e, one, 1), 1);
  assert_int_equal(one[0], KR_VHIST_VERSION);
  assert_int_equal(kr_vhist_encode(&e, one, 0), 0);
}

static void history_caps(void **state) {
  (void)state;
  kr_vhist_t h, d;
  kr_vhist_init(&h);
  /* the largest entries: 13 bytes each */
  enum { N = KR_VHIST_MAX + 8, FIT = (KR_VHIST_BYTES - 1) / 13 };
  for (int i = 0; i < N; i++) {
    kr_vhist_visit_t v = {KR_VHIST_MAX_SECONDS - i, KR_CONTENT_UNCHANGED,
                          KR_VHIST_MAX_SECONDS - i};
    kr_vhist_append(&h, &v);
  }
  assert_int_equal(h.n, KR_VHIST_MAX); /* count cap: oldest dropped */
  assert_int_equal(h.v[0].interval_s, KR_VHIST_MAX_SECONDS - 8);
  uint8_t buf[KR_VHIST_BYTES];
  size_t len = kr_vhist_encode(&h, buf, sizeof buf);
  assert_true(len <= KR_VHIST_BYTES);
  assert_int_equal(len, 1 + 13 * FIT); /* byte cap: the newest that fit */
  assert_int_equal(kr_vhist_decode(&d, buf, len), 0);
  assert_int_equal(d.n, FIT);
  assert_int_equal(d.v[FIT - 1].interval_s, KR_VHIST_MAX_SECONDS - (N - 1));
  /* a smaller cap keeps fewer; out-of-range fields are clamped */
  assert_int_equal(kr_vhist_encode(&h, buf, 27), 1 + 13 * 2);
  kr_vhist_init(&h);
  kr_vhist_visit_t odd = {-5, (kr_content_t)7, KR_VHIST_MAX_SECONDS + 1};
  kr_vhist_append(&h, &odd);
  odd.interval_s = INT64_MAX;
  kr_vhist_append(&h, &odd);
  len = kr_vhist_encode(&h, buf, sizeof buf);
  assert_int_equal(kr_vhist_decode(&d, buf, len), 0);
  assert_int_equal(d.v[0].interval_s, 0);
  assert_int_equal(d.v[0].state, KR_CONTENT_UNKNOWN);
  assert_int_equal(d.v[0].age_s, -1);
  assert_int_equal(d.v[1].interval_s, KR_VHIST_MAX_SECONDS);
  /* push: a damaged old history is dropped, the new visit kept */
  int damaged = -1;
  uint8_t junk[3] = {9, 9, 9};
  kr_vhist_visit_t v = {60, KR_CONTENT_CHANGED, 30};
  len = kr_vhist_push(junk, sizeof junk, &v, buf, &damaged);
  assert_int_equal(damaged, 1);
  assert_int_equal(kr_vhist_decode(&d, buf, len), 0);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.v[0].age_s, 30);
  uint8_t buf2[KR_VHIST_BYTES];
  size_t len2 = kr_vhist_push(buf, len, &v, buf2, &damaged);
  assert_int_equal(damaged, 0);
  assert_int_equal(kr_vhist_decode(&d, buf2, len2), 0);
  assert_int_equal(d.n, 2);
  assert_int_equal(kr_vhist_push(NULL, 0, &v, buf, NULL), len);
}

/* push_read hands back exactly what decoding its output gives, also when
 * fields are clamped, the oldest visits do not fit the bytes, or the old
 * history is damaged. */
static void history_push_read(void **state) {
  (void)state;
  seed(77);
  for (int round = 0; round < 2000; round++) {
    kr_vhist_t h;
    kr_vhist_init(&h);
    unsigned n = (unsigned)(rnd() % (KR_VHIST_MAX + 1));
    for (unsigned i = 0; i < n; i++) {
      kr_vhist_visit_t v = {.interval_s = (int64_t)(rnd() % 4 == 0 ? rnd() >> (rnd() % 64)
                                                                    : rnd() % 100000),
                            .state = (kr_content_t)(rnd() % 3),
                            .age_s = rnd() % 3 == 0 ? -1 : (int64_t)(rnd() >> (rnd() % 64))};
      kr_vhist_append(&h, &v);
    }
    uint8_t old[KR_VHIST_BYTES], out[KR_VHIST_BYTES];
    size_t old_len = kr_vhist_encode(&h, old, sizeof old);
    if (round % 50 == 0) old[0] = 9; /* damaged */
    kr_vhist_visit_t v = {.interval_s = (int64_t)(rnd() >> (rnd() % 64)) - 5,
                          .state = (kr_content_t)(rnd() % 4),
                          .age_s = (int64_t)(rnd() >> (rnd() % 64)) - 3};
    int dmg_a = -1, dmg_b = -1;
    kr_vhist_t got, want;
    size_t len = kr_vhist_push_read(old, old_len, &v, out, &dmg_a, &got);
    uint8_t out2[KR_VHIST_BYTES];
    assert_int_equal(kr_vhist_push(old, old_len, &v, out2, &dmg_b), len);
    assert_memory_equal(out, out2, len);
    assert_int_equal(dmg_a, dmg_b);
    assert_int_equal(kr_vhist_decode(&want, out, len), 0);
    assert_int_equal(got.n, want.n);
    for (unsigned i = 0; i < want.n; i++) {
      assert_int_equal(got.v[i].interval_s, want.v[i].interval_s);
      assert_int_equal(got.v[i].state, want.v[i].state);
      assert_int_equal(got.v[i].age_s, want.v[i].age_s);
    }
  }
}

/* A fast page's history as the store keeps it: hourly visits with ages
 * (about 5 bytes each) keep 64 observations for the estimator, the memory
 * whose length bounds the estimate's noise (estimate.h KR_VHIST_MAX). */
static void history_keeps_64(void **state) {
  (void)state;
  uint8_t buf[KR_VHIST_BYTES], out[KR_VHIST_BYTES];
  size_t len = 0;
  kr_vhist_t h;
  for (int i = 0; i < 80; i++) {
    kr_vhist_visit_t v = {i ? 3600 + i : 0, i % 2 ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED,
                          i % 2 ? 1800 : -1};
    len = kr_vhist_push_read(buf, len, &v, out, NULL, &h);
    memcpy(buf, out, len);
  }
  assert_true(KR_VHIST_MAX >= 64);
  assert_int_equal(h.n, 64);
  kr_est_obs_t o[KR_VHIST_MAX];
  assert_int_equal(kr_vhist_observations(&h, o, KR_VHIST_MAX), 64);
  kr_est_result_t r;
  kr_est_rate(NULL, &h, 1e-3, &r);
  assert_int_equal(r.observations, 64);
}

static void history_hostile(void **state) {
  (void)state;
  kr_vhist_t d;
  static const struct {
    const char *what;
    uint8_t b[16];
    size_t n;
  } bad[] = {
      {"version 0", {0}, 1},
      {"version 2", {2, 0x09}, 2},
      {"truncated varint", {1, 0x80}, 2},
      {"truncated age", {1, 0x0d}, 2},                       /* has_age, no age */
      {"truncated long varint", {1, 0xff, 0xff, 0xff}, 4},
      {"overlong", {1, 0x81, 0x00}, 3},
      {"overlong age", {1, 0x0c, 0x80, 0x00}, 4},
      {"8-byte varint", {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 9},
      {"state 3", {1, 0x0b}, 2},
      {"interval 2^40+1", {1, 0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, 8},
      {"age 2^40+1", {1, 0x0c, 0x81, 0x80, 0x80, 0x80, 0x80, 0x20}, 8},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    d.n = 99;
    if (kr_vhist_decode(&d, bad[i].b, bad[i].n) != KR_EINVAL)
      fail_msg("%s: accepted", bad[i].what);
    assert_int_equal(d.n, 0);
  }
  /* 2^40 exactly is fine */
  uint8_t edge[] = {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
  assert_int_equal(kr_vhist_decode(&d, edge, sizeof edge), 0);
  assert_int_equal(d.v[0].interval_s, KR_VHIST_MAX_SECONDS);
  /* 33 entries, and more than KR_VHIST_BYTES bytes */
  uint8_t many[KR_VHIST_BYTES + 8];
  many[0] = 1;
  memset(many + 1, 0x09, KR_VHIST_MAX);
  assert_int_equal(kr_vhist_decode(&d, many, 1 + KR_VHIST_MAX), 0);
  assert_int_equal(d.n, KR_VHIST_MAX);
  memset(many + 1, 0x09, KR_VHIST_MAX + 1);
  assert_int_equal(kr_vhist_decode(&d, many, 2 + KR_VHIST_MAX), KR_EINVAL);
  memset(many, 0, sizeof many);
  many[0] = 1;
  assert_int_equal(kr_vhist_decode(&d, many, KR_VHIST_BYTES + 1), KR_EINVAL);
  assert_int_equal(kr_vhist_decode(&d, NULL, 5), KR_EINVAL);
  /* garbage: an error or a canonical history, never a crash; buffers are
   * exact-size heap copies so ASan sees any read past the end */
  seed(7);
  unsigned accepted = 0;
  for (int i = 0; i < 200000; i++) {
    size_t n = (size_t)(rnd() % 40);
    uint8_t *b = malloc(n ? n : 1);
    for (size_t j = 0; j < n; j++) b[j] = (uint8_t)rnd();
    if (n && i % 2) b[0] = 1; /* past the version byte half the time */
    int rc = kr_vhist_decode(&d, b, n);
    assert_true(rc == 0 || rc == KR_EINVAL);
    if (rc == 0) {
      accepted++;
      uint8_t re[KR_VHIST_BYTES];
      size_t rl = kr_vhist_encode(&d, re, sizeof re);
      if (n == 0) assert_int_equal(d.n, 0);
      else {
        assert_int_equal(rl, n);
        assert_memory_equal(re, b, n);
      }
    }
    free(b);
  }
  printf("# hostile histories: %u of 200000 random BLOBs decoded (all canonical)\n", accepted);
}

static void observations_fold(void **state) {
  (void)state;
  kr_vhist_t h;
  kr_vhist_init(&h);
  kr_vhist_visit_t vs[] = {
      {500, KR_CONTENT_CHANGED, 100},   /* an older visit was dropped: still counts */
      {0, KR_CONTENT_CHANGED, -1},      /* first visit ever: resets */
      {100, KR_CONTENT_UNKNOWN, -1},    /* folds into the next */
      {50, KR_CONTENT_UNCHANGED, 7},
      {30, KR_CONTENT_CHANGED, 12},
      {10, KR_CONTENT_UNKNOWN, -1},     /* trailing unknown: no observation */
  };
  for (size_t i = 0; i < 6; i++) kr_vhist_append(&h, &vs[i]);
  kr_est_obs_t o[8];
  assert_int_equal(kr_vhist_observations(&h, o, 8), 3);
  assert_true(o[0].t == 500 && o[0].changed && o[0].age == 100);
  assert_true(o[1].t == 150 && !o[1].changed && o[1].age == 7);
  assert_true(o[2].t == 30 && o[2].changed && o[2].age == 12);
  assert_int_equal(kr_vhist_observations(&h, o, 2), 2);
}

/* ---- estimators ---------------------------------------------------------- */

static double rel(double a, double b) { return fabs(a - b) / b; }

static void regular_estimators(void **state) {
  (void)state;
  seed(11);
  const double lambda = 1.0 / 3600;
  const double lt[] = {0.2, 1.0, 3.0}; /* lambda * I */
  for (size_t k = 0; k < 3; k++) {
    double I = lt[k] / lambda;
    page_t p;
    page_init(&p, lambda);
    unsigned n = 5000, x = 0;
    for (unsigned i = 0; i < n; i++) x += (unsigned)page_visit(&p, I, NULL);
    double br = kr_est_bias_reduced(n, x, I), nv = kr_est_naive(n, x, I);
    printf("# lambda*I=%.1f n=%u X=%u: bias-reduced %.3f naive %.3f (x lambda)\n", lt[k], n,
           x, br / lambda, nv / lambda);
    assert_true(rel(br, lambda) < 0.08);
    /* naive saturates: (1 - e^-lambda I)/I */
    assert_true(nv < lambda);
    if (lt[k] >= 1.0) assert_true(rel(nv, lambda) > 0.3);
  }
  assert_true(kr_est_naive(0, 0, 10) == 0 && kr_est_bias_reduced(0, 0, 10) == 0);
  assert_true(kr_est_naive(3, 1, 0) == 0 && kr_est_bias_reduced(3, 1, -1) == 0);
  assert_true(isfinite(kr_est_bias_reduced(10, 10, 60)));
  assert_true(kr_est_bias_reduced(10, 99, 60) == kr_est_bias_reduced(10, 10, 60));
}

/* Cho & Garcia-Molina's point: at small n the bias-reduced estimator is
 * far less biased than X/(nI). */
static void small_n_bias(void **state) {
  (void)state;
  seed(12);
  const double lambda = 1.0, I = 1.0; /* one change per interval */
  const unsigned n = 10;
  const int trials = 20000;
  double sum_br = 0, sum_nv = 0, se_br = 0, se_nv = 0;
  for (int t = 0; t < trials; t++) {
    page_t p;
    page_init(&p, lambda);
    unsigned x = 0;
    for (unsigned i = 0; i < n; i++) x += (unsigned)page_visit(&p, I, NULL);
    double br = kr_est_bias_reduced(n, x, I), nv = kr_est_naive(n, x, I);
    sum_br += br;
    sum_nv += nv;
    se_br += (br - lambda) * (br - lambda);
    se_nv += (nv - lambda) * (nv - lambda);
  }
  double bias_br = sum_br / trials - lambda, bias_nv = sum_nv / trials - lambda;
  printf("# n=10, lambda*I=1: bias bias-reduced %+.3f, naive %+.3f; rmse %.3f vs %.3f\n",
         bias_br, bias_nv, sqrt(se_br / trials), sqrt(se_nv / trials));
  assert_true(fabs(bias_br) < 0.1);
  assert_true(fabs(bias_br) * 3 < fabs(bias_nv));
}

static void ml_matches_bias_reduced(void **state) {
  (void)state;
  kr_est_obs_t o[40];
  for (unsigned n = 1; n <= 40; n += 3) {
    for (unsigned x = 0; x <= n; x++) {
      for (unsigned i = 0; i < n; i++) o[i] = (kr_est_obs_t){600.0, i < x, -1};
      double ml;
      assert_int_equal(kr_est_ml(o, n, 0.5, 0, 0, &ml), 0);
      double br = kr_est_bias_reduced(n, x, 600.0);
      if (x == 0) assert_true(ml == 0 && br == 0);
      else if (rel(ml, br) > 1e-9) fail_msg("n=%u X=%u: ml %g br %g", n, x, ml, br);
    }
  }
}

static void ml_irregular(void **state) {
  (void)state;
  seed(13);
  const double lambdas[] = {1.0 / 600, 1.0 / 86400};
  for (size_t k = 0; k < 2; k++) {
    double lambda = lambdas[k];
    page_t p;
    page_init(&p, lambda);
    size_t n = 3000;
    kr_est_obs_t *o = malloc(n * sizeof *o);
    for (size_t i = 0; i < n; i++) {
      /* intervals from 0.05/lambda to 5/lambda, log-uniform */
      double t = exp(log(0.05) + unif() * log(100.0)) / lambda;
      o[i].t = t;
      o[i].changed = page_visit(&p, t, NULL);
      o[i].age = -1;
    }
    double ml;
    assert_int_equal(kr_est_ml(o, n, 0.5, 0, 0, &ml), 0);
    double pure;
    assert_int_equal(kr_est_ml(o, n, 0, 0, 0, &pure), 0);
    printf("# irregular n=%zu: ml %.3f pure mle %.3f (x lambda)\n", n, ml / lambda,
           pure / lambda);
    assert_true(rel(ml, lambda) < 0.08);
    assert_true(rel(pure, lambda) < 0.08);
    free(o);
  }
}

static void ml_edges(void **state) {
  (void)state;
  kr_est_obs_t all[5], none[5];
  for (int i = 0; i < 5; i++) {
    all[i] = (kr_est_obs_t){100.0 * (i + 1), 1, -1};
    none[i] = (kr_est_obs_t){100.0 * (i + 1), 0, -1};
  }
  double l;
  /* all changed: the pure MLE is infinite -> an error, not inf */
  assert_int_equal(kr_est_ml(all, 5, 0, 0, 0, &l), KR_EINVAL);
  /* smoothing or a prior make it finite */
  assert_int_equal(kr_est_ml(all, 5, 0.5, 0, 0, &l), 0);
  assert_true(isfinite(l) && l > 0);
  assert_int_equal(kr_est_ml(all, 5, 0, 1.0 / 3600, 1.0, &l), 0);
  assert_true(isfinite(l) && l > 0);
  /* none changed: 0 without a prior, below the prior with one */
  assert_int_equal(kr_est_ml(none, 5, 0.5, 0, 0, &l), 0);
  assert_true(l == 0);
  assert_int_equal(kr_est_ml(none, 5, 0.5, 1.0 / 60, 1.0, &l), 0);
  assert_true(l > 0 && l < 1.0 / 60);
  /* no data: the prior */
  assert_int_equal(kr_est_ml(NULL, 0, 0.5, 0.25, 1.0, &l), 0);
  assert_true(l == 0.25);
  /* one tiny and one huge interval, both changed */
  kr_est_obs_t mix[2] = {{1e-3, 1, -1}, {1e12, 1, -1}};
  assert_int_equal(kr_est_ml(mix, 2, 0.5, 0, 0, &l), 0);
  assert_true(isfinite(l) && l > 0);
  /* invalid input */
  kr_est_obs_t badt[1] = {{0, 1, -1}};
  assert_int_equal(kr_est_ml(badt, 1, 0.5, 0, 0, &l), KR_EINVAL);
  badt[0].t = NAN;
  assert_int_equal(kr_est_ml(badt, 1, 0.5, 0, 0, &l), KR_EINVAL);
  assert_int_equal(kr_est_ml(all, 5, -1, 0, 0, &l), KR_EINVAL);
  assert_int_equal(kr_est_ml(all, 5, 0.5, 0, 1.0, &l), KR_EINVAL); /* weight, no rate */
  assert_int_equal(kr_est_ml(NULL, 3, 0.5, 0, 0, &l), KR_EINVAL);
}

static void lm_estimator(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  seed(14);
  const double lambda = 1.0 / 3600;
  const double lt[] = {0.3, 1.0, 4.0};
  for (size_t k = 0; k < 3; k++) {
    page_t p;
    page_init(&p, lambda);
    size_t n = 4000;
    kr_est_obs_t *o = malloc(n * sizeof *o);
    for (size_t i = 0; i < n; i++) {
      double t = lt[k] / lambda * (0.5 + unif()); /* irregular */
      double age;
      o[i].changed = page_visit(&p, t, &age);
      o[i].t = t;
      o[i].age = floor(age) + 2 < t ? floor(age) + 2 : t; /* whole seconds, >= min age */
    }
    double lm, ml;
    assert_int_equal(kr_est_lm(&ep, o, n, 0, 0, &lm), 0);
    assert_int_equal(kr_est_ml(o, n, 0.5, 0, 0, &ml), 0);
    printf("# last-modified lambda*I~%.1f: lm %.3f ml %.3f (x lambda)\n", lt[k], lm / lambda,
           ml / lambda);
    assert_true(rel(lm, lambda) < 0.06);
    free(o);
  }
  /* unusable ages -> KR_EINVAL */
  double l;
  kr_est_obs_t now[3] = {{600, 1, 0}, {600, 1, 0}, {600, 0, -1}}; /* "Last-Modified: now" */
  assert_int_equal(kr_est_lm(&ep, now, 3, 0, 0, &l), KR_EINVAL);
  kr_est_obs_t stale[2] = {{600, 1, 5000}, {600, 0, -1}}; /* older than the interval */
  assert_int_equal(kr_est_lm(&ep, stale, 2, 0, 0, &l), KR_EINVAL);
  kr_est_obs_t moved[2] = {{600, 1, 100}, {600, 0, 10}}; /* moved, content did not */
  assert_int_equal(kr_est_lm(&ep, moved, 2, 0, 0, &l), KR_EINVAL);
  kr_est_obs_t missing[2] = {{600, 1, -1}, {600, 1, 100}};
  assert_int_equal(kr_est_lm(&ep, missing, 2, 0, 0, &l), KR_EINVAL);
  kr_est_obs_t nochange[2] = {{600, 0, 900}, {600, 0, -1}};
  assert_int_equal(kr_est_lm(&ep, nochange, 2, 0, 0, &l), KR_EINVAL);
  /* within the slack an age a little past the interval is fine */
  kr_est_obs_t slack[2] = {{600, 1, 630}, {600, 0, 1230}};
  assert_int_equal(kr_est_lm(&ep, slack, 2, 0, 0, &l), 0);
  assert_true(l > 0);
}

/* The small-sample correction of the last-modified estimator: smaller
 * bias than plain X/T when most intervals see a change. */
static void lm_small_n(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  ep.lm_min_age_s = 0;
  seed(15);
  const double lambda = 1.0;
  const double lts[] = {0.5, 3.0};
  for (size_t k = 0; k < 2; k++) {
    const unsigned n = 8;
    const int trials = 20000;
    double sum_c = 0, sum_plain = 0;
    int used = 0;
    for (int tr = 0; tr < trials; tr++) {
      page_t p;
      page_init(&p, lambda);
      kr_est_obs_t o[8];
      double T = 0;
      unsigned x = 0;
      for (unsigned i = 0; i < n; i++) {
        double age;
        o[i].t = lts[k];
        o[i].changed = page_visit(&p, lts[k], &age);
        o[i].age = age;
        x += (unsigned)o[i].changed;
        T += o[i].changed ? age : lts[k];
      }
      double l;
      if (kr_est_lm(&ep, o, n, 0, 0, &l) < 0) continue; /* X = 0 */
      used++;
      sum_c += l;
      sum_plain += x / T;
    }
    double bc = sum_c / used - lambda, bp = sum_plain / used - lambda;
    printf("# last-modified n=8 lambda*I=%.1f: bias corrected %+.3f, X/T %+.3f\n", lts[k], bc,
           bp);
    assert_true(fabs(bc) < fabs(bp));
    assert_true(fabs(bc) < 0.1);
  }
}

/* The posterior of ln lambda under a log-normal prior, integrated
 * finely (trapezoids over +-10 standard deviations): the reference for
 * kr_est_posterior's grid. With age_t > 0 the likelihood is the ages'
 * (x changes over age_t seconds free of change), o is not read. */
static double posterior_reference_ages(const kr_est_obs_t *o, size_t n, double prior, double tau2,
                                       double x, double age_t) {
  double sd = sqrt(tau2), m = log(prior) - tau2 / 2, num = 0, den = 0;
  for (int j = 0; j <= 20000; j++) {
    double u = m - 10 * sd + 20 * sd * j / 20000, l = exp(u), lp = -0.5 * (u - m) * (u - m) / tau2;
    if (age_t > 0) lp += x * u - l * age_t;
    else
      for (size_t i = 0; i < n; i++) lp += o[i].changed ? log(-expm1(-l * o[i].t)) : -l * o[i].t;
    double w = exp(lp) * (j == 0 || j == 20000 ? 0.5 : 1);
    num += w * l;
    den += w;
  }
  return num / den;
}

static double posterior_reference(const kr_est_obs_t *o, size_t n, double prior, double tau2) {
  return posterior_reference_ages(o, n, prior, tau2, 0, 0);
}

/* The posterior mean under an informed (log-normal) prior: the prior's
 * mean rate without data, the exact posterior mean with few data, the
 * data's answer when they are many; for a page unchanged over several
 * visits a rate far below the uninformed prior's (one pseudo-change per
 * mean interval at the evaluator's fast lambda0: waits that only
 * double). */
/* The posterior mean under a discrete prior against its closed form: a
 * prior of three rates (one a page that never changes) and a hand-made
 * history, without ages and with them. */
static void posterior_discrete(void **state) {
  (void)state;
  const double a = 1e-4, b = 1e-3;
  const double rate[3] = {a, b, 0};
  const double logw[3] = {log(0.5), log(0.3), log(0.2)};
  double lam;
  /* no observation: the prior's mean */
  assert_int_equal(kr_est_posterior_discrete(NULL, 0, 0, -1, rate, logw, 3, &lam), 0);
  assert_true(fabs(lam - (0.5 * a + 0.3 * b)) < 1e-15);
  /* unchanged over 1000 s, then changed within 2000 s (no age): the
   * likelihood e^(-1000 l) (1 - e^(-2000 l)), nothing for never */
  kr_est_obs_t o[2] = {{1000, 0, -1}, {2000, 1, -1}};
  double la = exp(-1000 * a) * (1 - exp(-2000 * a)), lb = exp(-1000 * b) * (1 - exp(-2000 * b));
  double want = (0.5 * la * a + 0.3 * lb * b) / (0.5 * la + 0.3 * lb);
  assert_int_equal(kr_est_posterior_discrete(o, 2, 0, -1, rate, logw, 3, &lam), 0);
  assert_true(fabs(lam / want - 1) < 1e-12);
  /* the same history unchanged twice: never is the likeliest */
  kr_est_obs_t u[2] = {{1000, 0, -1}, {2000, 0, -1}};
  want = (0.5 * exp(-3000 * a) * a + 0.3 * exp(-3000 * b) * b) /
         (0.5 * exp(-3000 * a) + 0.3 * exp(-3000 * b) + 0.2);
  assert_int_equal(kr_est_posterior_discrete(u, 2, 0, -1, rate, logw, 3, &lam), 0);
  assert_true(fabs(lam / want - 1) < 1e-12);
  /* with ages: the change 500 s before the visit and the version seen at
   * the first visit 3000 s old: l^2 e^(-l (1000 + 500 + 3000)); without
   * ages believed the age changes nothing */
  o[1].age = 500;
  la = a * a * exp(-4500 * a), lb = b * b * exp(-4500 * b);
  want = (0.5 * la * a + 0.3 * lb * b) / (0.5 * la + 0.3 * lb);
  assert_int_equal(kr_est_posterior_discrete(o, 2, 1, 3000, rate, logw, 3, &lam), 0);
  assert_true(fabs(lam / want - 1) < 1e-12);
  double plain;
  assert_int_equal(kr_est_posterior_discrete(o, 2, 0, 3000, rate, logw, 3, &plain), 0);
  la = exp(-1000 * a) * (1 - exp(-2000 * a)), lb = exp(-1000 * b) * (1 - exp(-2000 * b));
  assert_true(fabs(plain / ((0.5 * la * a + 0.3 * lb * b) / (0.5 * la + 0.3 * lb)) - 1) < 1e-12);
  /* an age longer than its interval counts as the interval */
  o[1].age = 9000;
  la = a * exp(-3000 * a), lb = b * exp(-3000 * b);
  want = (0.5 * la * a + 0.3 * lb * b) / (0.5 * la + 0.3 * lb);
  assert_int_equal(kr_est_posterior_discrete(o, 2, 1, -1, rate, logw, 3, &lam), 0);
  assert_true(fabs(lam / want - 1) < 1e-12);
  /* huge exposures do not underflow the sums: the slower rate wins */
  kr_est_obs_t far[1] = {{1e7, 0, -1}};
  assert_int_equal(kr_est_posterior_discrete(far, 1, 0, -1, rate, logw, 2, &lam), 0);
  assert_true(fabs(lam - a) < 1e-12 * a);
  /* nothing in the prior explains a change; bad arguments */
  const double only0[1] = {0}, w0[1] = {0};
  assert_int_equal(kr_est_posterior_discrete(o, 2, 0, -1, only0, w0, 1, &lam), KR_EINVAL);
  assert_int_equal(kr_est_posterior_discrete(o, 2, 0, -1, rate, logw, 0, &lam), KR_EINVAL);
  kr_est_obs_t bad[1] = {{0, 1, -1}};
  assert_int_equal(kr_est_posterior_discrete(bad, 1, 0, -1, rate, logw, 3, &lam), KR_EINVAL);
  const double neg[1] = {-1};
  assert_int_equal(kr_est_posterior_discrete(NULL, 0, 0, -1, neg, w0, 1, &lam), KR_EINVAL);
}

static void posterior_estimator(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  assert_true(ep.prior_tau2 == 0); /* off unless an informed prior sets it */
  double lam, prior = 1.0 / 86400, tau2 = 3.6; /* daily on average, three decades */
  assert_int_equal(kr_est_posterior(&ep, NULL, 0, prior, tau2, &lam), 0);
  assert_true(rel(lam, prior) < 0.01);

  /* unchanged after 6 h, 12 h, 1 d and 2 d */
  kr_est_obs_t slow[4] = {{21600, 0, -1}, {43200, 0, -1}, {86400, 0, -1}, {172800, 0, -1}};
  double post, ml, uninformed;
  assert_int_equal(kr_est_posterior(&ep, slow, 4, prior, tau2, &post), 0);
  assert_true(rel(post, posterior_reference(slow, 4, prior, tau2)) < 1e-3);
  assert_int_equal(kr_est_ml(slow, 4, ep.smoothing, log(2.0) / 20, 1.0, &uninformed), 0);
  assert_true(post < 0.5 * uninformed); /* ~10 days against ~5 */
  kr_est_obs_t mixed[3] = {{21600, 1, -1}, {3600, 0, -1}, {7200, 1, -1}};
  assert_int_equal(kr_est_posterior(&ep, mixed, 3, prior, tau2, &lam), 0);
  assert_true(rel(lam, posterior_reference(mixed, 3, prior, tau2)) < 1e-3);
  assert_int_equal(kr_est_ml(slow, 4, ep.smoothing, prior, 0.5, &ml), 0);
  /* through kr_est_rate: the posterior for the first posterior_obs
   * observations once an informed prior gives tau2, the ML without */
  kr_vhist_t h;
  kr_vhist_init(&h);
  kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
  kr_vhist_append(&h, &v0);
  for (int i = 0; i < 4; i++) {
    kr_vhist_visit_t v = {(int64_t)slow[i].t, KR_CONTENT_UNCHANGED, -1};
    kr_vhist_append(&h, &v);
  }
  kr_est_result_t r;
  ep.prior_weight = 0.5;
  kr_est_rate(&ep, &h, prior, &r);
  assert_int_equal(r.method, KR_EST_ML);
  assert_true(rel(r.lambda, ml) < 1e-9);
  ep.prior_tau2 = tau2;
  kr_est_rate(&ep, &h, prior, &r);
  assert_int_equal(r.method, KR_EST_POSTERIOR);
  assert_string_equal(kr_est_method_name(r.method), "posterior");
  double widened; /* the group's spread, widened (estimate.h) */
  assert_true(ep.posterior_widen == 1.0);
  assert_int_equal(kr_est_posterior(&ep, slow, 4, prior, tau2 + 1.0, &widened), 0);
  assert_true(rel(r.lambda, widened) < 1e-12);
  ep.posterior_obs = 3; /* more observations than that: the ML again */
  kr_est_rate(&ep, &h, prior, &r);
  assert_int_equal(r.method, KR_EST_ML);
  ep.posterior_obs = 16;

  /* many regular visits: near the data's answer (bias-reduced), the
   * prior 3 standard deviations away pulling it a little */
  kr_est_obs_t many[16];
  for (int i = 0; i < 16; i++) many[i] = (kr_est_obs_t){3600, i % 2, -1};
  assert_int_equal(kr_est_posterior(&ep, many, 16, prior, tau2, &post), 0);
  assert_true(rel(post, posterior_reference(many, 16, prior, tau2)) < 1e-3);
  double br = kr_est_bias_reduced(16, 8, 3600);
  assert_true(post < br && post > 0.7 * br);
  /* usable ages: their likelihood, 4 changes over the 4 x 1800 + 4 x
   * 3600 s known free of change */
  kr_est_obs_t aged[8];
  for (int i = 0; i < 8; i++) aged[i] = (kr_est_obs_t){3600, i % 2, i % 2 ? 1800 : 3700};
  assert_int_equal(kr_est_posterior(&ep, aged, 8, prior, tau2, &post), 0);
  assert_true(rel(post, posterior_reference_ages(NULL, 0, prior, tau2, 4, 4 * 1800 + 4 * 3600)) < 1e-3);
  ep.use_last_modified = 0; /* ages off: the intervals' likelihood */
  assert_int_equal(kr_est_posterior(&ep, aged, 8, prior, tau2, &post), 0);
  assert_true(rel(post, posterior_reference(aged, 8, prior, tau2)) < 1e-3);
  ep.use_last_modified = 1;

  /* invalid */
  assert_int_equal(kr_est_posterior(&ep, slow, 4, 0, tau2, &post), KR_EINVAL);
  assert_int_equal(kr_est_posterior(&ep, slow, 4, prior, 0, &post), KR_EINVAL);
  assert_int_equal(kr_est_posterior(&ep, slow, 4, prior, NAN, &post), KR_EINVAL);
  kr_est_obs_t bad = {-1, 0, -1};
  assert_int_equal(kr_est_posterior(&ep, &bad, 1, prior, tau2, &post), KR_EINVAL);
  assert_int_equal(kr_est_posterior(NULL, slow, 4, prior, tau2, &post), KR_EINVAL);
}

/* ---- change of rate ---------------------------------------------------------- */

/* A history of n visits t apart (jittered by +-50 %) of a page changing
 * at rate lam1 for the first n1 visits and lam2 after. */
static void shift_history(kr_vhist_t *h, double lam1, double lam2, int n1, int n, double t) {
  page_t pg;
  page_init(&pg, lam1);
  kr_vhist_init(h);
  kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
  kr_vhist_append(h, &v0);
  for (int i = 0; i < n; i++) {
    if (i == n1) { /* memoryless: the next change at the new rate from now */
      pg.lambda = lam2;
      pg.next_change = pg.now + expo(lam2);
    }
    double dt = t * (0.5 + unif());
    int c = page_visit(&pg, dt, NULL);
    kr_vhist_visit_t v = {(int64_t)ceil(dt), c ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED, -1};
    kr_vhist_append(h, &v);
  }
}

static size_t shift_split(const kr_vhist_t *h, double *llr) {
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = kr_vhist_observations(h, o, KR_VHIST_MAX), split;
  *llr = kr_est_shift(o, n, &split);
  return split;
}

/* A clear change of rate splits the history where it happened, and with
 * an informed prior the estimate then rests on what came after. */
static void shift_detected(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  assert_true(ep.shift_llr > 0);
  const double day = 86400;
  int slower = 0, faster = 0;
  for (int k = 0; k < 20; k++) {
    seed(100 + (uint64_t)k);
    kr_vhist_t h;
    double llr;
    /* a page changing twice a day, visited daily, becomes a monthly one */
    shift_history(&h, 2 / day, 1 / (30 * day), 44, 64, day);
    size_t split = shift_split(&h, &llr);
    if (llr > ep.shift_llr && split >= 40 && split <= 48) slower++;
    /* a weekly one visited every 3 days becomes a 6-hourly one */
    shift_history(&h, 1 / (7 * day), 4 / day, 44, 64, 3 * day);
    split = shift_split(&h, &llr);
    if (llr > ep.shift_llr && split >= 40 && split <= 48) faster++;
  }
  print_message("# change of rate: %d of 20 slower, %d of 20 faster pages split\n", slower, faster);
  assert_true(slower >= 18);
  assert_true(faster >= 16);

  /* through kr_est_rate: only with an informed prior (tau2 > 0) */
  seed(7);
  kr_vhist_t h;
  shift_history(&h, 2 / day, 1 / (30 * day), 44, 64, day);
  double llr;
  size_t split = shift_split(&h, &llr);
  assert_true(llr > ep.shift_llr);
  kr_est_result_t r;
  kr_est_rate(&ep, &h, 1 / day, &r);
  assert_int_equal(r.dropped, 0);
  assert_true(r.lambda > 0.25 / day); /* mixed: still about half the old rate */
  ep.prior_tau2 = 2.0;
  kr_est_rate(&ep, &h, 1 / day, &r);
  assert_int_equal(r.dropped, split);
  assert_int_equal(r.observations, 64 - split);
  assert_int_equal(r.method, KR_EST_ML); /* 20 observations: past the posterior */
  assert_true(r.lambda < 0.1 / day);
  ep.shift_llr = 0; /* off */
  kr_est_rate(&ep, &h, 1 / day, &r);
  assert_int_equal(r.dropped, 0);
  /* too short to split */
  assert_true(kr_est_shift(NULL, 0, &split) == 0 && split == 0);
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = kr_vhist_observations(&h, o, KR_VHIST_MAX);
  assert_true(kr_est_shift(o + n - 15, 15, &split) == 0 && split == 0); /* 8 a side */
}

/* A page whose rate does not change: the test almost never fires. */
static void shift_stationary(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  const double day = 86400;
  int fired = 0;
  double top = 0;
  for (int k = 0; k < 500; k++) {
    seed(1000 + (uint64_t)k);
    kr_vhist_t h;
    double rate = exp(-3.0 + 6.0 * unif()) / day, llr;
    shift_history(&h, rate, rate, 64, 64, 1 / rate); /* about one change a visit */
    shift_split(&h, &llr);
    fired += llr > ep.shift_llr;
    if (llr > top) top = llr;
  }
  print_message("# change of rate, stationary pages: %d of 500 split (largest ratio %.1f)\n", fired,
                top);
  assert_true(top > 0); /* the test ran */
  assert_true(fired <= 2);
}

/* A page whose rate swings daily (x 1 +- 0.8, peak 14:00) and weekly
 * (x 1 +- 0.5), visited about every 6 hours as the cycles world does
 * (`kria simulate --cycles daily:0.8@14,weekly:0.5@wed`): its history is
 * one stationary rate seen through the swings, not a change. */
static void shift_cyclic(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  const double day = 86400, week = 7 * day;
  int fired = 0;
  double top = 0;
  for (int k = 0; k < 200; k++) {
    seed(5000 + (uint64_t)k);
    double base = 4 / day, max = base * 1.8 * 1.5, now = unif() * week, last = now;
    kr_vhist_t h;
    kr_vhist_init(&h);
    kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
    kr_vhist_append(&h, &v0);
    for (int i = 0; i < 64; i++) {
      double next = now + day / 4 * (0.5 + unif());
      int changed = 0;
      /* the changes in (now, next]: thinning of a Poisson process at max */
      for (double c = now + expo(max); c <= next; c += expo(max)) {
        double d = cos(2 * M_PI * (c / day - 14.0 / 24)), w = cos(2 * M_PI * (c / week - 3.0 / 7));
        if (unif() * max < base * (1 + 0.8 * d) * (1 + 0.5 * w)) changed = 1;
      }
      kr_vhist_visit_t v = {(int64_t)ceil(next - last),
                            changed ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED, -1};
      kr_vhist_append(&h, &v);
      last = now = next;
    }
    double llr;
    shift_split(&h, &llr);
    fired += llr > ep.shift_llr;
    if (llr > top) top = llr;
  }
  print_message("# change of rate, cyclic pages: %d of 200 split (largest ratio %.1f)\n", fired, top);
  assert_true(top > 0);
  assert_true(fired <= 2);
}

/* A history with the ages honest validators give: n1 visits t1 apart
 * (jittered +-50 %) of a page changing at lam1, then n2 visits t2 apart
 * at lam2. */
static void shift_history_aged(kr_vhist_t *h, double lam1, int n1, double t1, double lam2, int n2,
                               double t2) {
  page_t pg;
  page_init(&pg, lam1);
  kr_vhist_init(h);
  kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
  kr_vhist_append(h, &v0);
  for (int i = 0; i < n1 + n2; i++) {
    if (i == n1) {
      pg.lambda = lam2;
      pg.next_change = pg.now + expo(lam2);
    }
    double dt = ceil((i < n1 ? t1 : t2) * (0.5 + unif())), age;
    int c = page_visit(&pg, dt, &age);
    kr_vhist_visit_t v = {(int64_t)dt, c ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED,
                          (int64_t)floor(age)};
    kr_vhist_append(h, &v);
  }
}

static size_t shift_split_lm(const kr_vhist_t *h, double *llr) {
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = kr_vhist_observations(h, o, KR_VHIST_MAX), split;
  *llr = kr_est_shift_lm(&ep, o, n, &split);
  return split;
}

/* With honest Last-Modified ages a change of rate shows after one or two
 * visits: a slow page that became hourly is seen with versions an hour
 * old where its visits are a week apart, one that went quiet keeps the
 * same version for days. The intervals' test needs 8 observations on
 * each side; a slow page has few before the change, and after it its
 * visits come a week apart. */
static void shift_lm_detected(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  const double day = 86400, hour = 3600;
  int faster = 0, quieter = 0;
  for (int k = 0; k < 20; k++) {
    seed(300 + (uint64_t)k);
    kr_vhist_t h;
    double llr;
    /* weekly visits of a page changing every 10 days, then hourly: 4 visits after */
    shift_history_aged(&h, 1 / (10 * day), 4, 7 * day, 1 / hour, 4, 7 * day);
    size_t split = shift_split_lm(&h, &llr);
    if (llr > ep.shift_llr && split == 4) faster++;
    if (k == 0) { /* the intervals alone cannot tell */
      kr_est_obs_t o[KR_VHIST_MAX];
      size_t n = kr_vhist_observations(&h, o, KR_VHIST_MAX), s2;
      assert_true(kr_est_shift(o, n, &s2) == 0 && s2 == 0);
    }
    /* 6-hourly visits of a page changing 4 times a day, then every 2
     * months: 14 daily visits after (the split goes back to its last
     * change before) */
    shift_history_aged(&h, 4 / day, 16, 6 * hour, 1 / (60 * day), 14, day);
    split = shift_split_lm(&h, &llr);
    if (llr > ep.shift_llr && split >= 12 && split <= 16) quieter++;
  }
  print_message("# change of rate with ages: %d of 20 faster, %d of 20 quieter pages split\n", faster,
                quieter);
  assert_true(faster >= 18);
  assert_true(quieter >= 16);

  /* through kr_est_rate, with an informed prior: the estimate rests on
   * the visits after the change */
  seed(301);
  kr_vhist_t h;
  shift_history_aged(&h, 1 / (10 * day), 4, 7 * day, 1 / hour, 4, 7 * day);
  double llr;
  size_t split = shift_split_lm(&h, &llr);
  assert_int_equal(split, 4);
  assert_true(llr > ep.shift_llr);
  kr_est_result_t r;
  kr_est_rate(&ep, &h, 1 / day, &r); /* no informed prior: no test */
  assert_int_equal(r.dropped, 0);
  double mixed = r.lambda;
  ep.prior_tau2 = 2.0;
  kr_est_rate(&ep, &h, 1 / day, &r);
  assert_int_equal(r.dropped, 4);
  assert_int_equal(r.observations, 4);
  assert_true(r.lambda > 1 / (4 * hour) && r.lambda > 20 * mixed);
  /* without usable ages: -1, and kr_est_rate falls back on the intervals */
  ep.use_last_modified = 0;
  kr_est_rate(&ep, &h, 1 / day, &r);
  assert_int_equal(r.dropped, 0);
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = kr_vhist_observations(&h, o, KR_VHIST_MAX);
  for (size_t i = 0; i < n; i++) o[i].age = -1;
  kr_est_params_default(&ep);
  assert_true(kr_est_shift_lm(&ep, o, n, &split) < 0 && split == 0);
  assert_true(kr_est_shift_lm(&ep, NULL, 0, &split) < 0 && split == 0);
  assert_true(kr_est_shift_lm(NULL, o, n, &split) < 0 && split == 0);
}

/* Stationary pages with honest ages, slow and fast, with few visits or 64:
 * the ages' test almost never fires. */
static void shift_lm_stationary(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  const double day = 86400;
  int fired = 0, tested = 0;
  double top = 0;
  for (int k = 0; k < 1000; k++) {
    seed(2000 + (uint64_t)k);
    kr_vhist_t h;
    double rate = exp(-3.0 + 6.0 * unif()) / day, per_visit = exp(-2.0 + 3.0 * unif()), llr;
    int n = 3 + (int)(unif() * 62);
    shift_history_aged(&h, rate, n, per_visit / rate, rate, 0, 1);
    shift_split_lm(&h, &llr);
    tested += llr >= 0;
    fired += llr > ep.shift_llr;
    if (llr > top) top = llr;
  }
  print_message("# change of rate with ages, stationary pages: %d of %d split (largest ratio %.1f)\n",
                fired, tested, top);
  assert_true(tested > 500 && top > 0);
  assert_true(fired <= 2);
}

/* The cycles world's swings (x 1 +- 0.8 daily, x 1 +- 0.5 weekly) seen
 * through honest ages, visits about every 6 hours: no change of rate. */
static void shift_lm_cyclic(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  const double day = 86400, week = 7 * day;
  int fired = 0, tested = 0;
  double top = 0;
  for (int k = 0; k < 200; k++) {
    seed(7000 + (uint64_t)k);
    double base = 4 / day, max = base * 1.8 * 1.5, now = unif() * week, last = now,
           last_change = now - expo(base);
    kr_vhist_t h;
    kr_vhist_init(&h);
    kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
    kr_vhist_append(&h, &v0);
    for (int i = 0; i < 64; i++) {
      double next = now + day / 4 * (0.5 + unif());
      int changed = 0;
      for (double c = now + expo(max); c <= next; c += expo(max)) {
        double d = cos(2 * M_PI * (c / day - 14.0 / 24)), w = cos(2 * M_PI * (c / week - 3.0 / 7));
        if (unif() * max < base * (1 + 0.8 * d) * (1 + 0.5 * w)) changed = 1, last_change = c;
      }
      kr_vhist_visit_t v = {(int64_t)ceil(next - last),
                            changed ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED,
                            (int64_t)floor(next - last_change)};
      kr_vhist_append(&h, &v);
      last = now = next;
    }
    double llr;
    shift_split_lm(&h, &llr);
    tested += llr >= 0;
    fired += llr > ep.shift_llr;
    if (llr > top) top = llr;
  }
  print_message("# change of rate with ages, cyclic pages: %d of %d split (largest ratio %.1f)\n", fired,
                tested, top);
  assert_true(tested > 150 && top > 0);
  assert_true(fired <= 2);
}

/* The split search as it was first written, kept as the reference: every
 * observation's log-likelihood at each of the 16 grid rates by libm
 * (changed ln(-expm1(-lam t)), unchanged -lam t), each side's best by
 * the parabola through the grid's best point. */
static double ref_grid_max(const double *v, int g) {
  int j = 0;
  for (int i = 1; i < g; i++)
    if (v[i] > v[j]) j = i;
  if (j == 0 || j == g - 1) return v[j];
  double a = v[j - 1], b = v[j], c = v[j + 1], d = a - 2 * b + c;
  if (!(d < 0)) return b;
  return b - (a - c) * (a - c) / (8 * d);
}

static double ref_shift(const kr_est_obs_t *o, size_t n, size_t *split) {
  enum { G = 16, MIN_OBS = 8 };
  const double span = 3 * 86400.0;
  *split = 0;
  if (n > KR_VHIST_MAX) n = KR_VHIST_MAX;
  if (!o || n < 2 * MIN_OBS) return 0.0;
  double total = 0, tmin = INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (!(o[i].t > 0) || !isfinite(o[i].t)) return 0.0;
    total += o[i].t;
    if (o[i].t < tmin) tmin = o[i].t;
  }
  double first = 0;
  for (size_t i = 0; i < MIN_OBS; i++) first += o[i].t;
  if (total - first < span) return 0.0;
  double ulo = log(0.05 / total), uhi = log(8.0 / tmin);
  double step = (uhi - ulo) / (G - 1), lam[G];
  for (int g = 0; g < G; g++) lam[g] = exp(ulo + step * g);
  static double cum[KR_VHIST_MAX + 1][G];
  for (int g = 0; g < G; g++) cum[0][g] = 0;
  for (size_t i = 0; i < n; i++)
    for (int g = 0; g < G; g++) {
      double x = lam[g] * o[i].t;
      cum[i + 1][g] = cum[i][g] + (o[i].changed ? log(-expm1(-x)) : -x);
    }
  double whole = ref_grid_max(cum[n], G), best = 0, after_t = 0;
  for (size_t k = n - 1; k >= MIN_OBS; k--) {
    after_t += o[k].t;
    if (n - k < MIN_OBS || after_t < span) continue;
    double after[G];
    for (int g = 0; g < G; g++) after[g] = cum[n][g] - cum[k][g];
    double llr = ref_grid_max(cum[k], G) + ref_grid_max(after, G) - whole;
    if (llr > best) best = llr, *split = k;
  }
  return best;
}

/* kr_est_shift computes the likelihood without a libm call at most of
 * its points (estimate.c changed_row): the same split and ratio as the
 * plain search on thousands of histories of every shape it meets. Seconds
 * whole or not; regular or wildly irregular intervals (a few very short
 * ones put most of the grid far above the long ones' rates, where the
 * changes' terms are 0 exactly); rates held, shifted either way, or
 * changing at every visit for a stretch. */
static void shift_same_answers(void **state) {
  (void)state;
  const double day = 86400;
  int cases = 0, fired = 0, splits = 0, noise = 0;
  double worst = 0;
  for (int k = 0; k < 4000; k++) {
    seed(90000 + (uint64_t)k);
    double lam = exp(log(1 / (60 * day)) + unif() * log(60 * 96.0)); /* 2 months .. 15 min */
    double per_visit = exp(log(0.05) + unif() * log(200.0));          /* 0.05 .. 10 */
    double mean = per_visit / lam, jitter = k % 4 == 0 ? 0.0 : k % 4 == 1 ? 0.5 : 0.95;
    int whole_s = k % 2, shift_at = k % 3 ? (int)(8 + unif() * 48) : -1;
    double lam2 = exp(log(lam) + (unif() - 0.5) * 8); /* up to e^4 either way */
    kr_est_obs_t o[KR_VHIST_MAX];
    double now = 0, next = expo(lam);
    for (int i = 0; i < KR_VHIST_MAX; i++) {
      if (i == shift_at) lam = lam2, next = now + expo(lam);
      double dt = mean * (1 - jitter + 2 * jitter * unif());
      if (k % 7 == 3 && unif() < 0.1) dt *= 1e-3; /* a few very short ones */
      if (whole_s) dt = ceil(dt);
      int changed = 0;
      while (next <= now + dt) changed = 1, next += expo(lam);
      if (k % 11 == 5 && i >= 20 && i < 40) changed = 1; /* a stretch all changed */
      now += dt;
      o[i] = (kr_est_obs_t){dt, changed, -1};
    }
    size_t n = 16 + (size_t)(unif() * (KR_VHIST_MAX - 16 + 1)); /* 16 .. 64 */
    if (n > KR_VHIST_MAX) n = KR_VHIST_MAX;
    size_t s_ref, s_new;
    double l_ref = ref_shift(o, n, &s_ref), l_new = kr_est_shift(o, n, &s_new);
    /* a ratio of rounding noise (a history all unchanged or all changed:
     * every split explains it as well) names no split */
    if (l_ref > 1e-9) assert_int_equal(s_new, s_ref);
    else noise += l_ref > 0;
    double d = fabs(l_new - l_ref);
    if (d > worst) worst = d;
    assert_true(d <= 1e-9);
    cases += l_ref > 0;
    fired += l_ref > 12;
    splits += s_ref > 0;
  }
  print_message("# split search against the plain one: %d of 4000 searched, %d split, %d above 12 "
                "nats, %d only by rounding noise; largest difference %.1e\n",
                cases, splits, fired, noise, worst);
  assert_true(cases > 2000 && fired > 100); /* the histories exercise it */
}

static void rate_and_prior(void **state) {
  (void)state;
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  assert_true(fabs(ep.x_min - log(2.0)) < 1e-15);
  /* prior from initial-wait and hints */
  double base = kr_est_prior(&ep, 3600 * 1000, NULL);
  assert_true(rel(base, log(2.0) / 3600) < 1e-12);
  kr_est_hints_t h = kr_est_hints_none();
  assert_true(kr_est_prior(&ep, 3600 * 1000, &h) == base);
  h.last_modified = 0;
  double no_lm = kr_est_prior(&ep, 3600 * 1000, &h);
  h.last_modified = 1;
  double with_lm = kr_est_prior(&ep, 3600 * 1000, &h);
  assert_true(rel(no_lm / with_lm, 2.0) < 1e-12);
  h = kr_est_hints_none();
  h.depth = 4;
  assert_true(kr_est_prior(&ep, 3600 * 1000, &h) == base); /* off by default */
  ep.depth_halving = 2;
  assert_true(rel(kr_est_prior(&ep, 3600 * 1000, &h), base / 4) < 1e-12);
  ep.depth_halving = 0;
  h = kr_est_hints_none();
  h.changefreq_rate = 1.0 / 86400;
  assert_true(kr_est_prior(&ep, 3600 * 1000, &h) == 1.0 / 86400);
  assert_true(kr_est_prior(&ep, 0, NULL) > 0);          /* no initial-wait: 1000 s */
  assert_true(kr_est_prior(NULL, 3600 * 1000, NULL) == base);
  /* changefreq */
  assert_true(kr_est_changefreq_rate("daily", 5) == 1.0 / 86400);
  assert_true(kr_est_changefreq_rate(" Hourly\n", 8) == 1.0 / 3600);
  assert_true(kr_est_changefreq_rate("NEVER", 5) > 0);
  assert_true(kr_est_changefreq_rate("always", 6) == 1.0 / 60);
  assert_true(kr_est_changefreq_rate("weekly", 6) == 1.0 / 604800);
  assert_true(kr_est_changefreq_rate("monthly", 7) > 0 && kr_est_changefreq_rate("yearly", 6) > 0);
  assert_true(kr_est_changefreq_rate("dail", 4) == 0);
  assert_true(kr_est_changefreq_rate("dailyx", 6) == 0);
  assert_true(kr_est_changefreq_rate("", 0) == 0 && kr_est_changefreq_rate(NULL, 3) == 0);

  /* method choice */
  kr_est_result_t r;
  kr_vhist_t hist;
  kr_vhist_init(&hist);
  kr_est_rate(&ep, &hist, base, &r);
  assert_int_equal(r.method, KR_EST_PRIOR);
  assert_true(r.lambda == base);
  kr_est_rate(&ep, NULL, base, &r);
  assert_int_equal(r.method, KR_EST_PRIOR);
  kr_vhist_visit_t first = {0, KR_CONTENT_CHANGED, -1};
  kr_vhist_append(&hist, &first);
  for (int i = 0; i < 6; i++) {
    kr_vhist_visit_t v = {3600 + (i % 2) * 100, i % 3 ? KR_CONTENT_UNCHANGED : KR_CONTENT_CHANGED, -1};
    kr_vhist_append(&hist, &v);
  }
  kr_est_rate(&ep, &hist, base, &r);
  assert_int_equal(r.method, KR_EST_REGULAR);
  assert_int_equal(r.observations, 6);
  assert_int_equal(r.changes, 2);
  kr_vhist_visit_t far = {20000, KR_CONTENT_UNCHANGED, -1};
  kr_vhist_append(&hist, &far);
  kr_est_rate(&ep, &hist, base, &r);
  assert_int_equal(r.method, KR_EST_ML);
  assert_string_equal(kr_est_method_name(r.method), "ml");
  /* valid ages on every changed visit: last-modified */
  kr_vhist_t lmh;
  kr_vhist_init(&lmh);
  for (int i = 0; i < 5; i++) {
    kr_vhist_visit_t v = {3600, i % 2 ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED,
                          i % 2 ? 1200 : 5000};
    kr_vhist_append(&lmh, &v);
  }
  kr_est_rate(&ep, &lmh, base, &r);
  assert_int_equal(r.method, KR_EST_LM);
  assert_string_equal(kr_est_method_name(r.method), "last-modified");
  ep.use_last_modified = 0;
  kr_est_rate(&ep, &lmh, base, &r);
  assert_int_equal(r.method, KR_EST_REGULAR);
  ep.use_last_modified = 1;
  /* a "Last-Modified: now" server falls back to the digest */
  for (unsigned i = 0; i < lmh.n; i++) lmh.v[i].age_s = 0;
  kr_est_rate(&ep, &lmh, base, &r);
  assert_int_equal(r.method, KR_EST_REGULAR);
  assert_string_equal(kr_est_method_name(KR_EST_PRIOR), "prior");
  assert_string_equal(kr_est_method_name(KR_EST_REGULAR), "regular");
  assert_string_equal(kr_est_method_name((kr_est_method_t)9), "?");

  /* hostile: always-changed 1-second visits, a 0 or NaN prior, no params */
  kr_vhist_t fast;
  kr_vhist_init(&fast);
  for (int i = 0; i < KR_VHIST_MAX; i++) {
    kr_vhist_visit_t v = {1, KR_CONTENT_CHANGED, -1};
    kr_vhist_append(&fast, &v);
  }
  kr_est_rate(&ep, &fast, base, &r);
  assert_true(isfinite(r.lambda) && r.lambda > 0 && r.lambda <= 1e3);
  kr_est_rate(&ep, &fast, 0, &r);
  assert_true(isfinite(r.lambda) && r.lambda > 0);
  kr_est_rate(NULL, &fast, NAN, &r);
  assert_true(isfinite(r.lambda) && r.lambda > 0);
  ep.prior_weight = 0;
  ep.smoothing = 0;
  kr_est_rate(&ep, &fast, base, &r); /* the pure MLE is infinite: the cap */
  assert_true(r.lambda == 1e3);
}

/* The prior fades after a few visits whatever the time scale: a page that
 * changes every minute, visited every 30 s, is recognised as such even
 * with an initial-wait of a day. */
static void prior_fades(void **state) {
  (void)state;
  kr_est_params_t ep, flat;
  kr_est_params_default(&ep);
  flat = ep;
  flat.prior_weight = 0;
  seed(16);
  double prior = kr_est_prior(&ep, 86400 * 1000, NULL);
  double sum = 0, worst = 0;
  const int histories = 500;
  for (int k = 0; k < histories; k++) {
    page_t p;
    page_init(&p, 1.0 / 60);
    kr_vhist_t h;
    kr_vhist_init(&h);
    for (int i = 0; i < KR_VHIST_MAX; i++) {
      int c = page_visit(&p, 30, NULL);
      kr_vhist_visit_t v = {30, c ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED, -1};
      kr_vhist_append(&h, &v);
    }
    kr_est_result_t r, r0;
    kr_est_rate(&ep, &h, prior, &r);
    kr_est_rate(&flat, &h, prior, &r0);
    assert_int_equal(r.method, KR_EST_REGULAR);
    if (r0.changes == 0) continue;
    double d = rel(r.lambda, r0.lambda);
    if (d > worst) worst = d;
    sum += r.lambda * 60;
  }
  printf("# 32 visits at 30 s of a page changing every 60 s, prior 1/day: mean %.3f x lambda,"
         " at most %.1f %% below the estimate without prior\n",
         sum / histories, 100 * worst);
  assert_true(sum / histories > 0.85 && sum / histories < 1.2);
  assert_true(worst < 0.15);
}

/* ---- allocation ---------------------------------------------------------- */

static void h_function(void **state) {
  (void)state;
  assert_true(kr_plan_h(0) == 0 && kr_plan_h(-1) == 0 && kr_plan_h(NAN) == 0);
  assert_true(kr_plan_h_inv(0) == 0 && kr_plan_h_inv(-3) == 0);
  assert_true(isinf(kr_plan_h_inv(1)) && isinf(kr_plan_h_inv(2)));
  assert_true(rel(kr_plan_h(log(2.0)), 1 - (1 + log(2.0)) / 2) < 1e-14);
  /* small x: against a long-double series-free evaluation */
  for (double x = 1e-7; x < 50; x *= 1.37) {
    long double lx = x;
    long double want;
    if (x >= 0.01) {
      want = 1 - (1 + lx) * expl(-lx); /* cancellation costs < 1e-15 here */
    } else {                           /* the series, in long double */
      long double p = lx * lx / 2;
      want = p;
      for (int k = 3; k < 30; k++) {
        p *= lx / k;
        want += (k & 1) ? -(k - 1) * p : (k - 1) * p;
      }
    }
    double got = kr_plan_h(x);
    if (fabsl(got - want) > 1e-14L * want) fail_msg("h(%g) = %.17g want %.17Lg", x, got, want);
    double y = got;
    if (y < 1.0) {
      double back = kr_plan_h_inv(y);
      if (x < 20 && rel(back, x) > 1e-9) fail_msg("h_inv(h(%g)) = %.17g", x, back);
    }
  }
  assert_true(rel(kr_plan_versions(1.0, 1.0), 1 - exp(-1.0)) < 1e-15);
  assert_true(kr_plan_versions(1.0, 0) == 0 && kr_plan_versions(0, 1) == 0);
  assert_true(kr_plan_versions(2.0, INFINITY) == 2.0);
  assert_true(rel(kr_plan_freshness(2.0, 1.0), (1 - exp(-2.0)) / 2) < 1e-15);
  assert_true(kr_plan_freshness(0, 1) == 1.0);
  assert_true(rel(kr_plan_budget(1, 2000, 1.0), 0.5) < 1e-15);
  assert_true(rel(kr_plan_budget(3, 5000, 0.9), 0.54) < 1e-12);
  assert_true(kr_plan_budget(0, 2000, 1) == 0 && kr_plan_budget(1, 0, 1) == 0);
  assert_true(kr_plan_budget(2, 1000, 7) == 2.0); /* utilisation > 1: 1 */
}

/* A synthetic host: n URIs, lambda log-uniform from 1/hour to 1/month. */
static kr_plan_item_t *mix(size_t n, double fmin, double fmax) {
  kr_plan_item_t *it = malloc(n * sizeof *it);
  for (size_t i = 0; i < n; i++) {
    double lo = log(1.0 / (30 * 86400.0)), hi = log(1.0 / 3600);
    it[i] = (kr_plan_item_t){exp(lo + unif() * (hi - lo)), fmin, fmax, 1.0};
  }
  return it;
}

static double sum_f(const double *f, const kr_plan_item_t *it, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += it[i].weight * f[i];
  return s;
}

static void versions_optimum(void **state) {
  (void)state;
  seed(21);
  const size_t n = 10000;
  const double fmin = 1.0 / (28 * 86400.0), fmax = 1.0 / 60;
  kr_plan_item_t *it = mix(n, fmin, fmax);
  double *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g);
  const double B = 0.45; /* 2 s politeness at 90 %: ~3.9 fetches per URI a day */
  double mu, floor_mu = kr_plan_h(log(2.0));
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, n, B, floor_mu, &mu, f), KR_PLAN_BINDS);
  double tot = sum_f(f, it, n);
  assert_true(tot <= B * (1 + 1e-12));
  assert_true(tot >= B * (1 - 1e-6));
  /* proportional to lambda where not clamped */
  double x = kr_plan_h_inv(mu);
  assert_true(x > log(2.0));
  for (size_t i = 0; i < n; i++) {
    if (f[i] > fmin * 1.0000001 && f[i] < fmax * 0.9999999 && rel(it[i].lambda / f[i], x) > 1e-6)
      fail_msg("item %zu: lambda/f %g, x %g", i, it[i].lambda / f[i], x);
  }
  /* against uniform at the same budget */
  double v_opt = 0, v_uni = 0, v_lam = 0, fr_opt = 0, fr_uni = 0;
  for (size_t i = 0; i < n; i++) {
    v_opt += kr_plan_versions(it[i].lambda, f[i]);
    v_uni += kr_plan_versions(it[i].lambda, B / n);
    v_lam += it[i].lambda;
  }
  /* no other allocation within the budget does better: perturb pairs */
  for (int k = 0; k < 2000; k++) {
    size_t a = (size_t)(rnd() % n), b = (size_t)(rnd() % n);
    double d = 0.1 * (f[a] < f[b] ? f[a] : f[b]);
    if (f[a] - d < fmin || f[b] + d > fmax) continue;
    double before = kr_plan_versions(it[a].lambda, f[a]) + kr_plan_versions(it[b].lambda, f[b]);
    double after =
        kr_plan_versions(it[a].lambda, f[a] - d) + kr_plan_versions(it[b].lambda, f[b] + d);
    assert_true(after <= before * (1 + 1e-12));
  }
  /* freshness objective on the same mix */
  assert_int_equal(kr_plan_solve(KR_PLAN_FRESHNESS, it, n, B, 0, &mu, g), KR_PLAN_BINDS);
  assert_true(sum_f(g, it, n) <= B * (1 + 1e-12));
  double v_fresh = 0;
  for (size_t i = 0; i < n; i++) {
    fr_opt += kr_plan_freshness(it[i].lambda, g[i]);
    fr_uni += kr_plan_freshness(it[i].lambda, B / n);
    v_fresh += kr_plan_versions(it[i].lambda, g[i]);
  }
  printf("# 10000 URIs, lambda 1/h..1/month log-uniform, budget %.2f/s (%.1f fetches/URI/day)\n",
         B, B * 86400 / n);
  printf("# versions captured per day: optimal %.0f, uniform %.0f, ratio %.3f "
         "(capture ratio %.3f vs %.3f)\n",
         v_opt * 86400, v_uni * 86400, v_opt / v_uni, v_opt / v_lam, v_uni / v_lam);
  printf("# mean freshness: freshness-optimal %.3f, uniform %.3f, ratio %.3f; "
         "its versions ratio %.3f\n",
         fr_opt / n, fr_uni / n, fr_opt / fr_uni, v_fresh / v_uni);
  assert_true(v_opt / v_uni > 1.3);
  assert_true(fr_opt > fr_uni);
  assert_true(v_fresh <= v_opt * (1 + 1e-9));
  free(it);
  free(f);
  free(g);
}

/* Cho's result: the freshness optimum gives more frequency to faster pages
 * only up to a point, then less, and none beyond mu lambda >= 1; the
 * versions optimum never turns down. */
static void freshness_shape(void **state) {
  (void)state;
  const size_t n = 60;
  kr_plan_item_t it[60];
  double f[60], g[60];
  for (size_t i = 0; i < n; i++)
    it[i] = (kr_plan_item_t){1e-6 * pow(10, (double)i / 10), 1e-9, 1e3, 1.0}; /* 1e-6..1e0 */
  double B = 0.02, mu;
  assert_int_equal(kr_plan_solve(KR_PLAN_FRESHNESS, it, n, B, 0, &mu, f), KR_PLAN_BINDS);
  assert_true(sum_f(f, it, n) <= B * (1 + 1e-12));
  size_t peak = 0;
  for (size_t i = 1; i < n; i++)
    if (f[i] > f[peak]) peak = i;
  assert_true(peak > 0 && peak < n - 1);
  for (size_t i = 1; i <= peak; i++) assert_true(f[i] >= f[i - 1]);
  for (size_t i = peak + 1; i < n; i++) assert_true(f[i] <= f[i - 1] * (1 + 1e-12));
  assert_true(f[n - 1] == it[n - 1].fmin);       /* starved */
  assert_true(mu * it[n - 1].lambda >= 1);
  for (size_t i = 1; i < n; i++) /* less than proportional as lambda grows */
    assert_true(f[i] / it[i].lambda <= f[i - 1] / it[i - 1].lambda * (1 + 1e-12));
  printf("# freshness optimum: peak frequency at lambda %.2g/s, pages above %.2g/s starved\n",
         it[peak].lambda, 1 / mu);
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, n, B, 0, &mu, g), KR_PLAN_BINDS);
  for (size_t i = 1; i < n; i++) assert_true(g[i] >= g[i - 1]);
}

static void solve_edges(void **state) {
  (void)state;
  kr_plan_item_t it[3] = {{1e-3, 1e-4, 1e-1, 1}, {1e-4, 1e-4, 1e-1, 1}, {1e-5, 1e-4, 1e-1, 1}};
  double f[3], mu, fl = kr_plan_h(log(2.0));
  /* slack: mu at the floor, x = ln 2 */
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, 3, 100, fl, &mu, f), KR_PLAN_SLACK);
  assert_true(rel(mu, fl) < 1e-12);
  assert_true(rel(f[0], 1e-3 / log(2.0)) < 1e-9);
  assert_true(f[2] == 1e-4); /* clamped at fmin */
  /* over: even all at fmin exceeds the budget */
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, 3, 1e-4, fl, &mu, f), KR_PLAN_OVER);
  for (int i = 0; i < 3; i++) assert_true(f[i] == 1e-4);
  assert_int_equal(kr_plan_solve(KR_PLAN_FRESHNESS, it, 3, 1e-4, 0, &mu, f), KR_PLAN_OVER);
  assert_int_equal(kr_plan_solve(KR_PLAN_FRESHNESS, it, 3, 100, 0, &mu, f), KR_PLAN_SLACK);
  for (int i = 0; i < 3; i++) assert_true(rel(f[i], 1e-1) < 1e-9);
  /* no floor: slack means everything at fmax */
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, 3, 100, 0, &mu, f), KR_PLAN_SLACK);
  for (int i = 0; i < 3; i++) assert_true(rel(f[i], 1e-1) < 1e-9);
  /* empty, zero weights, bad input */
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, NULL, 0, 1, fl, &mu, NULL), KR_PLAN_SLACK);
  kr_plan_item_t z[1] = {{1e-3, 1e-4, 1e-1, 0}};
  assert_int_equal(kr_plan_solve(KR_PLAN_FRESHNESS, z, 1, 1, 0, &mu, f), KR_PLAN_SLACK);
  kr_plan_item_t bad[1] = {{-1, 1e-4, 1e-1, 1}};
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, bad, 1, 1, fl, &mu, f), KR_EINVAL);
  bad[0] = (kr_plan_item_t){1, 1e-1, 1e-4, 1}; /* fmin > fmax */
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, bad, 1, 1, fl, &mu, f), KR_EINVAL);
  bad[0] = (kr_plan_item_t){1, 1e-4, 1e-1, NAN};
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, bad, 1, 1, fl, &mu, f), KR_EINVAL);
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, 3, NAN, fl, &mu, f), KR_EINVAL);
  assert_int_equal(kr_plan_solve(KR_PLAN_VERSIONS, it, 3, -1, fl, &mu, f), KR_EINVAL);
  assert_int_equal(kr_plan_solve((kr_plan_objective_t)5, it, 3, 1, fl, &mu, f), KR_EINVAL);
  /* per-URI frequency */
  assert_true(kr_plan_freq(KR_PLAN_VERSIONS, 0.999999999, 1e-3, 1e-4, 1e-1) >= 1e-4);
  assert_true(kr_plan_freq(KR_PLAN_VERSIONS, 1.5, 1e-3, 1e-4, 1e-1) == 1e-4);
  assert_true(kr_plan_freq(KR_PLAN_VERSIONS, 0, 1e-3, 1e-4, 1e-1) == 1e-1);
  assert_true(kr_plan_freq(KR_PLAN_FRESHNESS, 2000, 1e-3, 1e-4, 1e-1) == 1e-4);
}

static void host_sketch(void **state) {
  (void)state;
  seed(31);
  /* buckets */
  assert_int_equal(kr_plan_bucket(0), 0);
  assert_int_equal(kr_plan_bucket(NAN), 0);
  assert_int_equal(kr_plan_bucket(1e-20), 0);
  assert_int_equal(kr_plan_bucket(1e9), KR_PLAN_BUCKETS - 1);
  for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++)
    assert_int_equal(kr_plan_bucket(kr_plan_bucket_lambda(b)), b);

  const size_t n = 10000;
  const int64_t min_ms = 60000, max_ms = 28LL * 86400000;
  kr_plan_item_t *it = mix(n, 1000.0 / max_ms, 1000.0 / min_ms);
  kr_plan_host_t h;
  kr_plan_host_init(&h, log(2.0));
  assert_true(kr_plan_host_x(&h) == log(2.0));
  int cls = kr_plan_host_class(&h, min_ms, max_ms);
  assert_int_equal(cls, 0);
  assert_int_equal(kr_plan_host_class(&h, min_ms, max_ms), 0);
  for (size_t i = 0; i < n; i++) kr_plan_host_update(&h, cls, 0, it[i].lambda);
  assert_int_equal(h.cls[0].total, n);
  const double B = 0.45;
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 1); /* never solved */
  assert_int_equal(h.state, KR_PLAN_BINDS);
  double xs = kr_plan_host_x(&h);
  double mu, x;
  kr_plan_solve(KR_PLAN_VERSIONS, it, n, B, kr_plan_h(log(2.0)), &mu, NULL);
  x = kr_plan_h_inv(mu);
  /* the sketch's x is close, and the URIs' own x/lambda with it use the
   * budget and capture nearly the exact optimum */
  double used = 0, v_sk = 0, v_ex = 0;
  for (size_t i = 0; i < n; i++) {
    double fs = it[i].lambda / xs, fe = it[i].lambda / x;
    fs = fs < it[i].fmin ? it[i].fmin : fs > it[i].fmax ? it[i].fmax : fs;
    fe = fe < it[i].fmin ? it[i].fmin : fe > it[i].fmax ? it[i].fmax : fe;
    used += fs;
    v_sk += kr_plan_versions(it[i].lambda, fs);
    v_ex += kr_plan_versions(it[i].lambda, fe);
  }
  printf("# sketch x %.4f vs exact %.4f; budget used %.3f of %.2f; versions %.4f of optimum\n",
         xs, x, used, B, v_sk / v_ex);
  assert_true(rel(xs, x) < 0.05);
  assert_true(used < B * 1.05);
  assert_true(v_sk / v_ex > 0.99);

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 100; i++) kr_plan_host_solve(&h, B * (1 + i % 2 * 0.01));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("# host re-solve from the sketch: %.1f us\n",
         ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 100 / 1e3);
  kr_plan_host_solve(&h, B);

  /* not re-solved before `every` updates, unless the budget moves > 10 % */
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 0);
  assert_int_equal(kr_plan_host_maybe_solve(&h, B * 1.05, 1000), 0);
  for (int i = 0; i < 999; i++) kr_plan_host_update(&h, cls, it[i].lambda, it[i].lambda * 2);
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 0);
  kr_plan_host_update(&h, cls, it[999].lambda, it[999].lambda * 2);
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 1);
  assert_true(kr_plan_host_x(&h) > xs); /* faster pages, same budget */
  assert_int_equal(kr_plan_host_maybe_solve(&h, B * 1.2, 1000), 1);
  assert_int_equal(kr_plan_host_maybe_solve(&h, 0, 1000), 1);
  assert_true(kr_plan_host_x(&h) == log(2.0)); /* no budget known: the floor */
  assert_int_equal(kr_plan_host_maybe_solve(&h, 0, 1000), 0);
  /* a huge budget: slack, the floor */
  kr_plan_host_solve(&h, 1e9);
  assert_int_equal(h.state, KR_PLAN_SLACK);
  assert_true(kr_plan_host_x(&h) == log(2.0));
  /* the spare budget goes to the pages seen changing, never to one that
   * has not (a static site keeps the floor), and only while slack; this
   * much of it idle: as much as the bound allows */
  assert_true(kr_plan_host_slack_factor(&h, 1) == KR_PLAN_SLACK_MIN);
  assert_true(KR_PLAN_SLACK_SPEND < 1 && KR_PLAN_SLACK_SPEND > KR_PLAN_SLACK_MIN);
  assert_true(KR_PLAN_SLACK_MIN >= 0.5);
  assert_true(kr_plan_host_slack_factor(&h, 0) == 1.0);
  kr_plan_host_set_objective(&h, KR_PLAN_FRESHNESS); /* its own x (x_for) */
  assert_true(kr_plan_host_slack_factor(&h, 1) == 1.0);
  kr_plan_host_set_objective(&h, KR_PLAN_VERSIONS);
  kr_plan_host_solve(&h, B);
  assert_int_equal(h.state, KR_PLAN_BINDS);
  assert_true(kr_plan_host_slack_factor(&h, 5) == 1.0); /* binding: every fetch planned */
  kr_plan_host_solve(&h, 1e9);
  /* a tiny one: over, every URI at max-wait */
  kr_plan_host_solve(&h, 1e-9);
  assert_int_equal(h.state, KR_PLAN_OVER);
  assert_true(kr_plan_host_x(&h) >= kr_plan_bucket_lambda(KR_PLAN_BUCKETS - 1) * max_ms / 1000 * 0.99 ||
              kr_plan_host_x(&h) * 1000.0 / kr_plan_bucket_lambda(0) >= (double)max_ms);

  /* counts never go negative; removals from an empty class are ignored */
  kr_plan_host_t e;
  kr_plan_host_init(&e, 0); /* invalid floor: ln 2 */
  assert_true(e.x_min == log(2.0));
  int c2 = kr_plan_host_class(&e, 1000, 2000);
  kr_plan_host_update(&e, c2, 1e-3, 0);
  assert_int_equal(e.cls[c2].total, 0);
  kr_plan_host_update(&e, 7, 0, 1e-3);  /* no such class */
  kr_plan_host_update(&e, -1, 0, 1e-3);
  assert_int_equal(e.cls[c2].total, 0);
  /* class overflow shares the last class */
  assert_int_equal(kr_plan_host_class(&e, 1, 2), 1);
  assert_int_equal(kr_plan_host_class(&e, 3, 4), 2);
  assert_int_equal(kr_plan_host_class(&e, 5, 6), 3);
  assert_int_equal(kr_plan_host_class(&e, 7, 8), 3);
  assert_int_equal(e.ncls, KR_PLAN_CLASSES);
  /* an empty host solves to the floor */
  assert_int_equal(kr_plan_host_solve(&e, 1.0), KR_PLAN_SLACK);
  assert_true(kr_plan_host_x(&e) == log(2.0));
  free(it);
}

/* Feed `n` fetches to h, one every `gap_ms` from *t. */
/* A URI taken out at a rate whose bucket is empty (estimated again with a
 * prior that has moved): the nearest held bucket loses it, so the sketch
 * holds as many URIs as were put in, not one more per miss. */
static void sketch_misses(void **state) {
  (void)state;
  kr_plan_host_t h;
  kr_plan_host_init(&h, log(2.0));
  int cls = kr_plan_host_class(&h, 1000, 1000000);
  unsigned b = kr_plan_bucket(1e-3);
  for (int i = 0; i < 10; i++) kr_plan_host_update(&h, cls, 0, 1e-3);
  for (int i = 0; i < 5; i++) kr_plan_host_update(&h, cls, 0, 1e-1);
  /* 10 URIs move from 1e-3 to 1e-2, but their old rate is found 20 %
   * off (another bucket, empty): still 15 URIs, none left at 1e-3 */
  for (int i = 0; i < 10; i++) kr_plan_host_update(&h, cls, 1.2e-3 * 1.5, 1e-2);
  assert_true(kr_plan_bucket(1.2e-3 * 1.5) != b);
  assert_int_equal(h.cls[cls].total, 15);
  assert_int_equal(h.cls[cls].count[b], 0);
  assert_int_equal(h.cls[cls].count[kr_plan_bucket(1e-2)], 10);
  assert_int_equal(h.cls[cls].count[kr_plan_bucket(1e-1)], 5);
  /* at one distance from two held buckets: the faster one */
  kr_plan_host_t g;
  kr_plan_host_init(&g, log(2.0));
  cls = kr_plan_host_class(&g, 1000, 1000000);
  kr_plan_host_update(&g, cls, 0, kr_plan_bucket_lambda(b - 1));
  kr_plan_host_update(&g, cls, 0, kr_plan_bucket_lambda(b + 1));
  kr_plan_host_update(&g, cls, kr_plan_bucket_lambda(b), 0);
  assert_int_equal(g.cls[cls].count[b + 1], 0);
  assert_int_equal(g.cls[cls].count[b - 1], 1);
  /* an exact old rate takes its own bucket */
  kr_plan_host_update(&g, cls, kr_plan_bucket_lambda(b - 1), 0);
  assert_int_equal(g.cls[cls].total, 0);
}

/* While slack, the pages seen changing spend what the floor leaves idle:
 * x_fill / x_min, between KR_PLAN_SLACK_MIN and KR_PLAN_SLACK_SPEND. */
static void slack_spend(void **state) {
  (void)state;
  kr_plan_host_t h;
  kr_plan_host_init(&h, log(2.0));
  int cls = kr_plan_host_class(&h, 1000, 1000000);
  for (int i = 0; i < 100; i++) kr_plan_host_update(&h, cls, 0, 1e-3);
  double l = kr_plan_bucket_lambda(kr_plan_bucket(1e-3));
  double demand = 100 * l / log(2.0); /* every URI at the floor */
  /* never solved: the fixed share */
  assert_true(kr_plan_host_slack_factor(&h, 1) == KR_PLAN_SLACK_SPEND);
  /* a little spare: the fixed share (1 / 0.85 more fetches would bind) */
  kr_plan_host_solve(&h, demand * 1.05);
  assert_int_equal(h.state, KR_PLAN_SLACK);
  assert_true(kr_plan_host_slack_factor(&h, 1) == KR_PLAN_SLACK_SPEND);
  /* 30 % of it idle at 0.85: down to what spends it */
  kr_plan_host_solve(&h, demand / 0.6);
  assert_int_equal(h.state, KR_PLAN_SLACK);
  assert_true(fabs(kr_plan_host_slack_factor(&h, 1) - 0.6) < 1e-6);
  assert_true(kr_plan_host_slack_factor(&h, 0) == 1.0); /* never seen changing */
  /* most of it idle: the bound */
  kr_plan_host_solve(&h, demand * 10);
  assert_true(kr_plan_host_slack_factor(&h, 1) == KR_PLAN_SLACK_MIN);
  /* binding: none */
  kr_plan_host_solve(&h, demand * 0.9);
  assert_int_equal(h.state, KR_PLAN_BINDS);
  assert_true(kr_plan_host_slack_factor(&h, 1) == 1.0);
  /* every URI at its min-wait fits: the bound */
  kr_plan_host_solve(&h, 1e9);
  assert_true(kr_plan_host_slack_factor(&h, 1) == KR_PLAN_SLACK_MIN);
}

static void fetches(kr_plan_host_t *h, int64_t *t, int n, int64_t gap_ms) {
  for (int i = 0; i < n; i++) {
    kr_plan_host_fetched(h, *t);
    *t += gap_ms;
  }
}

/* Realised-rate feedback: a host planned at B but served slower gets a
 * larger plan (x down), one served faster (other fetches in its queue) a
 * smaller one, within the gain's bounds; a slack budget brings the gain
 * back to 1. */
static void host_feedback(void **state) {
  (void)state;
  seed(37);
  const size_t n = 10000;
  kr_plan_item_t *it = mix(n, 1000.0 / (28LL * 86400000), 1000.0 / 60000);
  kr_plan_host_t h;
  kr_plan_host_init(&h, log(2.0));
  int cls = kr_plan_host_class(&h, 60000, 28LL * 86400000);
  for (size_t i = 0; i < n; i++) kr_plan_host_update(&h, cls, 0, it[i].lambda);
  const double B = 0.45; /* fetches/s */
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 1);
  assert_int_equal(h.state, KR_PLAN_BINDS);
  assert_true(h.gain == 1.0);
  double x1 = kr_plan_host_x(&h);
  int64_t t = 1000000;
  /* a window is KR_PLAN_WINDOW fetches after the one that opens it;
   * served at 0.9 B: the gain grows by sqrt(1/0.9) */
  int64_t slow = (int64_t)(1000.0 / (0.9 * B));
  fetches(&h, &t, KR_PLAN_WINDOW, slow);
  assert_true(h.gain == 1.0 && !h.resolve);
  fetches(&h, &t, 1, slow);
  assert_true(rel(h.gain, sqrt(1 / 0.9)) < 0.01);
  assert_true(h.resolve);
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 1); /* the gain moved */
  assert_false(h.resolve);
  assert_true(h.budget == B); /* the target stays B, the plan is B x gain */
  double x2 = kr_plan_host_x(&h);
  assert_true(x2 < x1); /* more fetches planned: fewer changes per visit */
  assert_int_equal(kr_plan_host_maybe_solve(&h, B, 1000), 0);
  /* never served faster than planned: the gain stops at its maximum */
  for (int w = 0; w < 40; w++) fetches(&h, &t, KR_PLAN_WINDOW, slow);
  assert_true(h.gain == KR_PLAN_GAIN_MAX);
  /* served at 2 B (other fetches of the host): the gain falls to its
   * minimum and the plan with it */
  int64_t fast = (int64_t)(1000.0 / (2 * B));
  for (int w = 0; w < 40; w++) fetches(&h, &t, KR_PLAN_WINDOW, fast);
  kr_plan_host_maybe_solve(&h, B, 1000);
  assert_true(h.gain == KR_PLAN_GAIN_MIN);
  assert_true(kr_plan_host_x(&h) > x1);
  /* served at B: nothing moves */
  kr_plan_host_t g = h;
  g.gain = 1.1;
  int64_t exact = (int64_t)(1000.0 / B);
  for (int w = 0; w < 3; w++) fetches(&g, &t, KR_PLAN_WINDOW, exact);
  assert_true(rel(g.gain, 1.1) < 0.01);
  /* a slack budget says nothing about the plan: back towards 1 */
  kr_plan_host_solve(&h, 1e9);
  assert_int_equal(h.state, KR_PLAN_SLACK);
  h.gain = 1.2;
  for (int w = 0; w < 12; w++) fetches(&h, &t, KR_PLAN_WINDOW + 1, slow);
  assert_true(fabs(h.gain - 1.0) < 0.001);
  /* time going back reopens the window; no budget: no change */
  kr_plan_host_t b;
  kr_plan_host_init(&b, log(2.0));
  fetches(&b, &t, 10, 1000);
  t -= 100000;
  kr_plan_host_fetched(&b, t);
  assert_int_equal(b.win_n, 1);
  fetches(&b, &t, 3 * KR_PLAN_WINDOW, 1);
  assert_true(b.gain == 1.0); /* never solved */
  kr_plan_host_solve(&b, 0);
  fetches(&b, &t, 3 * KR_PLAN_WINDOW, 1);
  assert_true(b.gain == 1.0);
  /* all in the same ms: no rate, no change */
  kr_plan_host_solve(&b, B);
  fetches(&b, &t, 3 * KR_PLAN_WINDOW, 0);
  assert_true(b.gain == 1.0);
  free(it);
}

/* The capacity plan: a plan that fits keeps every wait; one over budget
 * gets the water-filling floor (long waits kept, short ones raised), and
 * the raised plan asks for the budget, within a bucket's width. */
static void capacity_plan(void **state) {
  (void)state;
  kr_capplan_t p;
  memset(&p, 0, sizeof p);
  kr_capplan_solve(&p, 1.0);
  assert_int_equal(p.floor_ms, 0); /* empty: nothing to plan */
  /* 100 URIs at 1000 s and 10 at 1 d: 0.1 + ~0.0001 fetches/s */
  for (int i = 0; i < 100; i++) kr_capplan_update(&p, 0, 1000 * 1000);
  for (int i = 0; i < 10; i++) kr_capplan_update(&p, 0, 86400 * 1000);
  assert_int_equal(p.total, 110);
  kr_capplan_solve(&p, 0.5);
  assert_int_equal(p.floor_ms, 0); /* fits */
  assert_int_equal(kr_capplan_apply(&p, 20000), 20000);
  /* budget 0.01/s: the 1 d URIs (1.2e-4/s) keep theirs, the 100 share
   * ~0.0099/s: a floor near 100 / 0.0099 s = ~10,100 s */
  kr_capplan_solve(&p, 0.01);
  assert_true(p.floor_ms > 9000 * 1000 && p.floor_ms < 11500 * 1000);
  assert_int_equal(kr_capplan_apply(&p, 20000), p.floor_ms);
  assert_int_equal(kr_capplan_apply(&p, 86400 * 1000), 86400 * 1000);
  double d = kr_capplan_demand(&p, p.floor_ms);
  assert_true(d <= 0.01 * 1.0001 && d > 0.0095);
  assert_true(kr_capplan_demand(&p, 0) > 0.09);
  /* moves: the 100 go to 1 d, the plan fits again */
  for (int i = 0; i < 100; i++) kr_capplan_update(&p, 1000 * 1000, 86400 * 1000);
  assert_int_equal(p.total, 110);
  assert_int_equal(kr_capplan_maybe_solve(&p, 0.01, 64), 1); /* 100 updates */
  assert_int_equal(p.floor_ms, 0);
  assert_int_equal(kr_capplan_maybe_solve(&p, 0.0105, 64), 0); /* < 10 % */
  assert_int_equal(kr_capplan_maybe_solve(&p, 0.02, 64), 1);
  /* counts never go below 0; no budget known: no floor */
  kr_capplan_t q;
  memset(&q, 0, sizeof q);
  kr_capplan_update(&q, 5000, 0);
  assert_int_equal(q.total, 0);
  kr_capplan_update(&q, 0, 1);
  kr_capplan_update(&q, 0, 1);
  kr_capplan_solve(&q, 0);
  assert_int_equal(q.floor_ms, 0);
  kr_capplan_solve(&q, NAN);
  assert_int_equal(q.floor_ms, 0);
  kr_capplan_solve(&q, 1e-9); /* 2 URIs over 1e-9/s: a floor of ~63 years */
  assert_true(q.floor_ms > (int64_t)1.9e12 && q.floor_ms < (int64_t)2.1e12);
}

/* Simpson's rule on [a, b] with n (even) panels. */
static double simpson(double (*fn)(double), double a, double b, int n) {
  double h = (b - a) / n, s = fn(a) + fn(b);
  for (int i = 1; i < n; i++) s += fn(a + i * h) * (i & 1 ? 4 : 2);
  return s * h / 3;
}
static double ein_integrand(double t) { return t == 0 ? 1.0 : -expm1(-t) / t; }

static void harmonic_functions(void **state) {
  (void)state;
  /* Ein against its integral, both sides of the series / E1 switch */
  const double xs[] = {1e-6, 0.01, 0.5, 1, 3.99, 4.01, 10, 50};
  for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
    double want = simpson(ein_integrand, 0, xs[i], 20000);
    assert_true(rel(kr_plan_ein(xs[i]), want) < 1e-9);
  }
  assert_true(kr_plan_ein(0) == 0 && kr_plan_ein(-1) == 0);
  /* E[H(N)] for N ~ Poisson(m) is Ein(m): the derivation's first step */
  for (double m = 0.25; m < 20; m *= 2) {
    double pk = exp(-m), H = 0, e = 0;
    for (int k = 1; k < 400; k++) {
      pk *= m / k;
      H += 1.0 / k;
      e += pk * H;
    }
    assert_true(rel(kr_plan_ein(m), e) < 1e-10);
  }
  /* P(x) = (1/x) int_0^x Ein, on both sides of its switch */
  const double ps[] = {1e-4, 0.3, 2, 3.999, 4.001, 20};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    double want = simpson(kr_plan_ein, 0, ps[i], 4000) / ps[i];
    assert_true(rel(kr_plan_harmonic_x(ps[i]), want) < 1e-8);
  }
  assert_true(rel(kr_plan_harmonic_x(1e-9), 0.5e-9) < 1e-6); /* x/2: no cancellation */
  assert_true(rel(kr_plan_harmonic(1.0 / 3600, 1.0 / 7200), kr_plan_harmonic_x(2)) < 1e-15);
  assert_true(isinf(kr_plan_harmonic(1, 0)) && kr_plan_harmonic(0, 1) == 0);
  /* the KKT function: g(x) = x^2 P'(x), numerically */
  const double gs[] = {1e-3, 0.1, 0.69, 2, 3.9, 4.1, 15, 200};
  for (size_t i = 0; i < sizeof gs / sizeof *gs; i++) {
    double x = gs[i], h = x * 1e-5;
    double d = (kr_plan_harmonic_x(x + h) - kr_plan_harmonic_x(x - h)) / (2 * h);
    assert_true(rel(kr_plan_g(x), x * x * d) < 1e-6);
  }
  /* and its inverse */
  for (double x = 1e-6; x < 1e4; x *= 3.7) assert_true(rel(kr_plan_g_inv(kr_plan_g(x)), x) < 1e-9);
  assert_true(kr_plan_g_inv(0) == 0 && kr_plan_g_inv(-1) == 0 && isinf(kr_plan_g_inv(INFINITY)));
  assert_string_equal(kr_plan_objective_name(KR_PLAN_HARMONIC), "harmonic");
  assert_string_equal(kr_plan_objective_name((kr_plan_objective_t)9), "?");
}

static double harmonic_total(const kr_plan_item_t *it, const double *f, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += it[i].weight * kr_plan_harmonic(it[i].lambda, f[i]);
  return s;
}

static void harmonic_optimum(void **state) {
  (void)state;
  seed(61);
  const size_t n = 2000;
  kr_plan_item_t *it = mix(n, 1.0 / (28 * 86400.0), 1.0 / 20);
  double *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g), mu;
  const double B = n * 2.0 / 86400; /* 2 visits a day each */
  assert_int_equal(kr_plan_solve(KR_PLAN_HARMONIC, it, n, B, 0, &mu, f), KR_PLAN_BINDS);
  assert_true(rel(sum_f(f, it, n), B) < 1e-9);
  size_t inside = 0;
  for (size_t i = 0; i < n; i++) {
    double m = kr_plan_g(it[i].lambda / f[i]) / it[i].lambda; /* -dP/df */
    if (f[i] > it[i].fmin * (1 + 1e-9) && f[i] < it[i].fmax * (1 - 1e-9)) {
      assert_true(rel(m, mu) < 1e-6);
      inside++;
    }
    /* never starved: a faster page is visited at least as often */
    for (size_t j = i + 1; j < i + 5 && j < n; j++)
      if (it[j].lambda > it[i].lambda) assert_true(f[j] >= f[i] * (1 - 1e-12));
      else assert_true(f[j] <= f[i] * (1 + 1e-12));
  }
  assert_true(inside > n / 2);
  double best = harmonic_total(it, f, n);
  /* against the versions optimum and a uniform schedule, same budget */
  kr_plan_solve(KR_PLAN_VERSIONS, it, n, B, 0, &mu, g);
  double ver = harmonic_total(it, g, n);
  for (size_t i = 0; i < n; i++) g[i] = B / n;
  double uni = harmonic_total(it, g, n);
  printf("# harmonic staleness per URI: harmonic-optimal %.4f, versions-optimal %.4f, uniform %.4f\n",
         best / n, ver / n, uni / n);
  assert_true(best < ver && best < uni);
  /* no transfer between two URIs lowers it */
  for (int k = 0; k < 300; k++) {
    size_t a = (size_t)(unif() * n), b = (size_t)(unif() * n);
    if (a == b) continue;
    memcpy(g, f, n * sizeof *g);
    double eps = 0.01 * f[a];
    g[a] -= eps;
    g[b] += eps;
    if (g[a] < it[a].fmin || g[b] > it[b].fmax) continue;
    assert_true(harmonic_total(it, g, n) >= best * (1 - 1e-12));
  }
  assert_int_equal(kr_plan_solve(KR_PLAN_HARMONIC, it, n, 1e9, 0, &mu, f), KR_PLAN_SLACK);
  assert_true(f[0] == it[0].fmax);
  assert_int_equal(kr_plan_solve(KR_PLAN_HARMONIC, it, n, 1e-9, 0, &mu, f), KR_PLAN_OVER);
  assert_true(f[0] == it[0].fmin);
  free(f);
  free(g);
  free(it);
}

static void host_objective(void **state) {
  (void)state;
  seed(71);
  const size_t n = 10000;
  const int64_t min_ms = 20000, max_ms = 28LL * 86400000;
  kr_plan_item_t *it = mix(n, 1000.0 / max_ms, 1000.0 / min_ms);
  const double B = n * 2.0 / 86400;
  double x_min = log(2.0);
  kr_plan_host_t v, hm;
  kr_plan_host_init(&v, x_min);
  kr_plan_host_init(&hm, x_min);
  assert_int_equal(hm.objective, KR_PLAN_VERSIONS);
  kr_plan_host_set_objective(&hm, KR_PLAN_HARMONIC);
  kr_plan_host_set_objective(&v, (kr_plan_objective_t)42); /* unknown: versions */
  assert_int_equal(v.objective, KR_PLAN_VERSIONS);
  int cv = kr_plan_host_class(&v, min_ms, max_ms), ch = kr_plan_host_class(&hm, min_ms, max_ms);
  for (size_t i = 0; i < n; i++) {
    kr_plan_host_update(&v, cv, 0, it[i].lambda);
    kr_plan_host_update(&hm, ch, 0, it[i].lambda);
  }
  assert_int_equal(kr_plan_host_solve(&v, B), KR_PLAN_BINDS);
  assert_int_equal(kr_plan_host_solve(&hm, B), KR_PLAN_BINDS);
  assert_true(hm.mu > 0);
  /* versions: one x whatever the rate, exactly as before */
  assert_true(kr_plan_host_x_for(&v, 1e-3) == v.x && kr_plan_host_x_for(&v, 1e-7) == v.x);
  double *fv = malloc(n * sizeof *fv), *fh = malloc(n * sizeof *fh);
  double used = 0;
  size_t below = 0;
  for (size_t i = 0; i < n; i++) {
    double xh = kr_plan_host_x_for(&hm, it[i].lambda);
    below += xh < x_min; /* no floor once the budget binds */
    fh[i] = it[i].lambda / xh;
    fh[i] = fh[i] < it[i].fmin ? it[i].fmin : fh[i] > it[i].fmax ? it[i].fmax : fh[i];
    fv[i] = it[i].lambda / v.x;
    fv[i] = fv[i] < it[i].fmin ? it[i].fmin : fv[i] > it[i].fmax ? it[i].fmax : fv[i];
    used += fh[i];
  }
  /* the sketch plans about the budget, for less harmonic staleness than
   * versions and nearly the exact optimum's */
  double ph = harmonic_total(it, fh, n), pv = harmonic_total(it, fv, n), mu;
  kr_plan_solve(KR_PLAN_HARMONIC, it, n, B, 0, &mu, fv);
  double po = harmonic_total(it, fv, n);
  printf("# host sketch, harmonic: budget used %.4f of %.4f; staleness %.4f (exact optimum "
         "%.4f) vs versions' %.4f; %zu URIs below x_min\n",
         used, B, ph / n, po / n, pv / n, below);
  assert_true(rel(used, B) < 0.05);
  assert_true(ph < pv);
  assert_true(ph < po * 1.01);
  assert_true(below > 0);
  /* a slack budget: mu 0, every URI at the floor x_min, as versions */
  assert_int_equal(kr_plan_host_solve(&hm, 1e9), KR_PLAN_SLACK);
  assert_true(hm.mu == 0 && kr_plan_host_x_for(&hm, 1e-4) == x_min);
  /* too small: every URI as rarely as max-wait allows */
  assert_int_equal(kr_plan_host_solve(&hm, 1e-9), KR_PLAN_OVER);
  assert_true(isinf(kr_plan_host_x_for(&hm, 1e-4)));
  /* freshness too, and a change of objective is solved at once */
  kr_plan_host_solve(&hm, B);
  assert_int_equal(kr_plan_host_maybe_solve(&hm, B, 1000000), 0);
  kr_plan_host_set_objective(&hm, KR_PLAN_FRESHNESS);
  assert_int_equal(kr_plan_host_maybe_solve(&hm, B, 1000000), 1);
  assert_int_equal(hm.state, KR_PLAN_BINDS);
  used = 0;
  for (size_t i = 0; i < n; i++) {
    double f = it[i].lambda / kr_plan_host_x_for(&hm, it[i].lambda);
    used += f < it[i].fmin ? it[i].fmin : f > it[i].fmax ? it[i].fmax : f;
  }
  assert_true(rel(used, B) < 0.05);
  free(fv);
  free(fh);
  free(it);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(history_round_trip), cmocka_unit_test(history_caps),
      cmocka_unit_test(history_hostile),    cmocka_unit_test(history_push_read),
      cmocka_unit_test(history_keeps_64),
    cmocka_unit_test(observations_fold),
      cmocka_unit_test(regular_estimators), cmocka_unit_test(small_n_bias),
      cmocka_unit_test(ml_matches_bias_reduced), cmocka_unit_test(ml_irregular),
      cmocka_unit_test(ml_edges),           cmocka_unit_test(lm_estimator),
      cmocka_unit_test(lm_small_n),         cmocka_unit_test(rate_and_prior),
      cmocka_unit_test(posterior_estimator), cmocka_unit_test(posterior_discrete),
      cmocka_unit_test(shift_detected),     cmocka_unit_test(shift_stationary),
      cmocka_unit_test(shift_cyclic),       cmocka_unit_test(shift_same_answers),
      cmocka_unit_test(shift_lm_detected),  cmocka_unit_test(shift_lm_stationary),
      cmocka_unit_test(shift_lm_cyclic),
      cmocka_unit_test(prior_fades),        cmocka_unit_test(h_function),
      cmocka_unit_test(versions_optimum),   cmocka_unit_test(freshness_shape),
      cmocka_unit_test(solve_edges),        cmocka_unit_test(host_sketch),
      cmocka_unit_test(slack_spend),       cmocka_unit_test(sketch_misses),
      cmocka_unit_test(host_feedback),      cmocka_unit_test(capacity_plan),
      cmocka_unit_test(harmonic_functions), cmocka_unit_test(harmonic_optimum),
      cmocka_unit_test(host_objective),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
