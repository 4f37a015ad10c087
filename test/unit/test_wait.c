/* Wait policies. Multiplicative: every branch of the thesis' algorithm
 * (unknown -> default, first visit -> initial, changed divides, unchanged
 * multiplies, overdue before the factor, clamps, truncation), a table of
 * consecutive visits, saturation on hostile numbers, and params read from
 * the config's Figure 12 stack. Poisson: first wait = initial-wait with a
 * slack budget, hints, default-wait without data, adaptation direction,
 * the host's x, and clamps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kria/config.h"
#include "kria/error.h"
#include "kria/wait.h"

#define S 1000LL
#define D (86400LL * S)

static kr_wait_params_t params(void) {
  kr_wait_params_t p = {
      .initial_ms = 100 * S,
      .default_ms = 1000 * S,
      .min_ms = 10 * S,
      .max_ms = 10000 * S,
      .changed_factor = 2.0,
      .unchanged_factor = 3.0,
      .use_overdue = 0,
      .policy = KR_WAIT_MULTIPLICATIVE,
  };
  return p;
}

static void defaults_and_check(void **state) {
  (void)state;
  kr_wait_params_t p;
  kr_wait_params_default(&p);
  assert_int_equal(p.initial_ms, 1000 * S);
  assert_int_equal(p.default_ms, 3 * D);
  assert_int_equal(p.min_ms, 1000 * S);
  assert_int_equal(p.max_ms, 28 * D);
  assert_true(p.changed_factor == 1.5 && p.unchanged_factor == 1.5);
  assert_int_equal(p.use_overdue, 0);
  assert_int_equal(p.policy, KR_WAIT_MULTIPLICATIVE);
  assert_int_equal(kr_wait_params_check(&p), 0);

  kr_wait_params_t bad = p;
  bad.min_ms = bad.max_ms + 1;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.initial_ms = 0;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.default_ms = -1;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.changed_factor = 0.5;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.unchanged_factor = NAN;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.unchanged_factor = INFINITY;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  bad = p, bad.policy = (kr_wait_policy_t)7;
  assert_int_equal(kr_wait_params_check(&bad), KR_EINVAL);
  assert_string_equal(kr_wait_policy_name(KR_WAIT_MULTIPLICATIVE), "multiplicative");
  assert_string_equal(kr_wait_policy_name(KR_WAIT_POISSON), "poisson");
  assert_string_equal(kr_wait_policy_name((kr_wait_policy_t)7), "?");
}

static void branches(void **state) {
  (void)state;
  kr_wait_params_t p = params();
  /* unknown: default-wait, whatever the previous wait and overdue */
  assert_int_equal(kr_wait_multiplicative(&p, 0, KR_CONTENT_UNKNOWN, 0), 1000 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 50 * S, KR_CONTENT_UNKNOWN, 7 * S), 1000 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 50 * S, (kr_content_t)9, 0), 1000 * S);
  /* first visit (no previous wait): initial-wait, changed or not */
  assert_int_equal(kr_wait_multiplicative(&p, 0, KR_CONTENT_CHANGED, 0), 100 * S);
  assert_int_equal(kr_wait_multiplicative(&p, -5, KR_CONTENT_UNCHANGED, 0), 100 * S);
  /* changed divides, unchanged multiplies */
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_CHANGED, 0), 50 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_UNCHANGED, 0), 300 * S);
  /* truncation toward zero in ms, as Heritrix's (long) cast */
  kr_wait_params_t q = p;
  q.min_ms = 1;
  q.changed_factor = 3.0;
  assert_int_equal(kr_wait_multiplicative(&q, 100, KR_CONTENT_CHANGED, 0), 33);
  q.unchanged_factor = 1.5;
  assert_int_equal(kr_wait_multiplicative(&q, 101, KR_CONTENT_UNCHANGED, 0), 151);
}

static void overdue(void **state) {
  (void)state;
  kr_wait_params_t p = params();
  /* off: overdue ignored */
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_UNCHANGED, 60 * S), 300 * S);
  p.use_overdue = 1;
  /* on: added before the factor */
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_UNCHANGED, 60 * S), 480 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_CHANGED, 60 * S), 80 * S);
  /* the thesis' paradox: a very overdue changed URI waits longer */
  assert_true(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_CHANGED, 500 * S) > 100 * S);
  /* early (negative overdue) never shortens */
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_UNCHANGED, -90 * S), 300 * S);
  /* not used for the first visit or unknown state */
  assert_int_equal(kr_wait_multiplicative(&p, 0, KR_CONTENT_CHANGED, 60 * S), 100 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 100 * S, KR_CONTENT_UNKNOWN, 60 * S), 1000 * S);
}

static void clamps(void **state) {
  (void)state;
  kr_wait_params_t p = params();
  assert_int_equal(kr_wait_multiplicative(&p, 15 * S, KR_CONTENT_CHANGED, 0), 10 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 5000 * S, KR_CONTENT_UNCHANGED, 0), 10000 * S);
  /* initial and default are clamped too */
  p.initial_ms = 1 * S;
  p.default_ms = 1000000 * S;
  assert_int_equal(kr_wait_multiplicative(&p, 0, KR_CONTENT_CHANGED, 0), 10 * S);
  assert_int_equal(kr_wait_multiplicative(&p, 0, KR_CONTENT_UNKNOWN, 0), 10000 * S);
  /* a stored wait outside the range comes back inside */
  assert_int_equal(kr_wait_multiplicative(&p, 1, KR_CONTENT_UNCHANGED, 0), 10 * S);
  assert_int_equal(kr_wait_clamp(&p, 0), 10 * S);
  assert_int_equal(kr_wait_clamp(&p, 20 * S), 20 * S);
  assert_int_equal(kr_wait_clamp(&p, INT64_MAX), 10000 * S);
}

/* Consecutive visits of one URI, each wait feeding the next. */
static void visit_table(void **state) {
  (void)state;
  kr_wait_params_t p = params();
  p.use_overdue = 1;
  static const struct {
    kr_content_t st;
    int64_t overdue_s, want_s;
  } seq[] = {
      {KR_CONTENT_CHANGED, 0, 100},     /* first visit: initial */
      {KR_CONTENT_UNCHANGED, 0, 300},   /* x3 */
      {KR_CONTENT_UNCHANGED, 0, 900},   /* x3 */
      {KR_CONTENT_CHANGED, 0, 450},     /* /2 */
      {KR_CONTENT_CHANGED, 50, 250},    /* (450+50)/2 */
      {KR_CONTENT_UNCHANGED, 10, 780},  /* (250+10)x3 */
      {KR_CONTENT_UNCHANGED, 0, 2340},  /* x3 */
      {KR_CONTENT_UNCHANGED, 0, 7020},  /* x3 */
      {KR_CONTENT_UNCHANGED, 0, 10000}, /* 21060 clamped to max */
      {KR_CONTENT_UNCHANGED, 0, 10000}, /* stays */
      {KR_CONTENT_UNKNOWN, 0, 1000},    /* default */
      {KR_CONTENT_CHANGED, 0, 500},     /* /2 */
      {KR_CONTENT_CHANGED, 0, 250},     {KR_CONTENT_CHANGED, 0, 125},
      {KR_CONTENT_CHANGED, 0, 62},      /* 62.5 s: 62500 ms */
      {KR_CONTENT_CHANGED, 0, 31},      /* 31250 ms */
      {KR_CONTENT_CHANGED, 0, 15},      /* 15625 ms */
      {KR_CONTENT_CHANGED, 0, 10},      /* 7812 clamped to min */
      {KR_CONTENT_CHANGED, -30, 10},
      {KR_CONTENT_UNCHANGED, 0, 30},
  };
  int64_t w = 0;
  for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
    w = kr_wait_multiplicative(&p, w, seq[i].st, seq[i].overdue_s * S);
    if (w / S != seq[i].want_s)
      fail_msg("visit %zu: wait %lld ms, want %lld s", i, (long long)w, (long long)seq[i].want_s);
  }
}

static void saturation(void **state) {
  (void)state;
  kr_wait_params_t p = params();
  p.use_overdue = 1;
  p.max_ms = INT64_MAX;
  assert_int_equal(kr_wait_multiplicative(&p, INT64_MAX, KR_CONTENT_UNCHANGED, INT64_MAX),
                   INT64_MAX);
  assert_int_equal(kr_wait_multiplicative(&p, INT64_MAX - 5, KR_CONTENT_CHANGED, INT64_MAX),
                   (int64_t)((double)INT64_MAX / 2));
  p.unchanged_factor = 1000;
  assert_int_equal(kr_wait_multiplicative(&p, INT64_MAX / 2, KR_CONTENT_UNCHANGED, 0), INT64_MAX);
  /* invalid factors act as 1 instead of shrinking or exploding */
  kr_wait_params_t q = params();
  q.changed_factor = NAN;
  q.unchanged_factor = 0.25;
  assert_int_equal(kr_wait_multiplicative(&q, 100 * S, KR_CONTENT_CHANGED, 0), 100 * S);
  assert_int_equal(kr_wait_multiplicative(&q, 100 * S, KR_CONTENT_UNCHANGED, 0), 100 * S);
  /* min > max (invalid) still gives a bounded answer */
  q = params();
  q.min_ms = 50 * S;
  q.max_ms = 20 * S;
  assert_int_equal(kr_wait_multiplicative(&q, 100 * S, KR_CONTENT_UNCHANGED, 0), 20 * S);
}

static void from_config(void **state) {
  (void)state;
  static const char text[] = "[wait \"news\"]\ncontent-type = ^text/html\n"
                             "initial-wait = 1h\nmin-wait = 5m\nmax-wait = 7d\n"
                             "default-wait = 1d\nchanged-factor = 2\n"
                             "unchanged-factor = 1.25\nuse-overdue-time = yes\n"
                             "policy = poisson\n"
                             "[wait \"rest\"]\n";
  kr_config_t *cfg = kr_config_new();
  assert_int_equal(kr_config_load_string(cfg, NULL, text, sizeof text - 1), 0);
  assert_int_equal(kr_config_finish(cfg), 0);
  const kr_config_view_t *g = kr_config_global(cfg);
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, kr_config_wait(g, 0));
  assert_int_equal(p.initial_ms, 3600 * S);
  assert_int_equal(p.min_ms, 300 * S);
  assert_int_equal(p.max_ms, 7 * D);
  assert_int_equal(p.default_ms, 1 * D);
  assert_true(p.changed_factor == 2.0 && p.unchanged_factor == 1.25);
  assert_int_equal(p.use_overdue, 1);
  assert_int_equal(p.policy, KR_WAIT_POISSON);
  assert_int_equal(kr_wait_params_check(&p), 0);
  /* a section with no keys has the thesis' catch-all values */
  kr_wait_params_t d, def;
  kr_wait_params_from_config(&d, kr_config_wait(g, 1));
  kr_wait_params_default(&def);
  assert_memory_equal(&d, &def, sizeof d);
  kr_config_free(cfg);
}

/* ---- poisson ------------------------------------------------------------ */

static kr_wait_params_t pparams(void) {
  kr_wait_params_t p;
  kr_wait_params_default(&p);
  p.policy = KR_WAIT_POISSON;
  p.initial_ms = 3600 * S;
  p.min_ms = 60 * S;
  p.max_ms = 30 * D;
  return p;
}

static void add(kr_vhist_t *h, int64_t interval_s, kr_content_t st) {
  kr_vhist_visit_t v = {interval_s, st, -1};
  kr_vhist_append(h, &v);
}

static void poisson_first_visit(void **state) {
  (void)state;
  kr_wait_params_t p = pparams();
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_vhist_t h;
  kr_vhist_init(&h);
  add(&h, 0, KR_CONTENT_CHANGED);
  kr_wait_info_t info;
  /* slack budget, no hints: exactly initial-wait (to the ms) */
  int64_t w = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, NULL, 0, &info);
  assert_true(llabs(w - 3600 * S) <= 1);
  assert_int_equal(info.method, KR_EST_PRIOR);
  assert_int_equal(info.observations, 0);
  assert_true(fabs(info.x - log(2.0)) < 1e-12);
  /* no Last-Modified: twice the rate of a page with one */
  kr_est_hints_t no_lm = kr_est_hints_none(), lm = kr_est_hints_none();
  no_lm.last_modified = 0;
  lm.last_modified = 1;
  int64_t w0 = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, &no_lm, 0, NULL);
  int64_t w1 = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, &lm, 0, NULL);
  assert_true(fabs((double)w1 / (double)w0 - 2.0) < 1e-3);
  /* a sitemap changefreq replaces initial-wait */
  kr_est_hints_t cf = kr_est_hints_none();
  cf.changefreq_rate = kr_est_changefreq_rate("daily", 5);
  int64_t wd = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, &cf, 0, NULL);
  assert_true(fabs((double)wd - log(2.0) * 86400 * S) < 2);
  /* the host's budget binds: x above its floor stretches the wait */
  int64_t wx = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, NULL, 2 * log(2.0), &info);
  assert_true(llabs(wx - 7200 * S) <= 1);
  assert_true(fabs(info.x - 2 * log(2.0)) < 1e-12);
  /* below the floor, or NaN: the floor */
  assert_true(llabs(kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, NULL, 0.01, NULL) - w) <= 1);
  assert_true(llabs(kr_wait_poisson(&p, &ep, &h, KR_CONTENT_CHANGED, NULL, NAN, NULL) - w) <= 1);
}

static void poisson_unknown(void **state) {
  (void)state;
  kr_wait_params_t p = pparams();
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  kr_vhist_t h;
  kr_vhist_init(&h);
  add(&h, 0, KR_CONTENT_UNKNOWN);
  kr_wait_info_t info;
  assert_int_equal(kr_wait_poisson(&p, &ep, &h, KR_CONTENT_UNKNOWN, NULL, 0, &info), 3 * D);
  assert_int_equal(info.used_default, 1);
  /* with earlier observations an unknown visit keeps the estimate */
  add(&h, 3600, KR_CONTENT_CHANGED);
  add(&h, 3600, KR_CONTENT_CHANGED);
  add(&h, 3600, KR_CONTENT_UNKNOWN);
  int64_t w = kr_wait_poisson(&p, &ep, &h, KR_CONTENT_UNKNOWN, NULL, 0, &info);
  assert_int_equal(info.used_default, 0);
  assert_int_equal(info.observations, 2);
  assert_true(w < 3600 * S);
  /* NULL history acts as empty */
  assert_int_equal(kr_wait_poisson(&p, &ep, NULL, KR_CONTENT_UNKNOWN, NULL, 0, NULL), 3 * D);
}

static void poisson_adapts(void **state) {
  (void)state;
  kr_wait_params_t p = pparams();
  kr_est_params_t ep;
  kr_est_params_default(&ep);
  /* always changed -> shrinks; never changed -> grows; each visit at the
   * wait the policy chose */
  kr_vhist_t hc, hu;
  kr_vhist_init(&hc);
  kr_vhist_init(&hu);
  add(&hc, 0, KR_CONTENT_CHANGED);
  add(&hu, 0, KR_CONTENT_CHANGED);
  int64_t wc = kr_wait_poisson(&p, &ep, &hc, KR_CONTENT_CHANGED, NULL, 0, NULL);
  int64_t wu = wc, prev_c = wc, prev_u = wu;
  kr_wait_info_t info;
  for (int i = 0; i < 40; i++) {
    add(&hc, wc / S, KR_CONTENT_CHANGED);
    wc = kr_wait_poisson(&p, &ep, &hc, KR_CONTENT_CHANGED, NULL, 0, &info);
    assert_true(wc <= prev_c);
    prev_c = wc;
    add(&hu, wu / S, KR_CONTENT_UNCHANGED);
    wu = kr_wait_poisson(&p, &ep, &hu, KR_CONTENT_UNCHANGED, NULL, 0, &info);
    assert_true(wu >= prev_u);
    prev_u = wu;
  }
  assert_int_equal(wc, p.min_ms);
  assert_int_equal(wu, p.max_ms);
  assert_int_equal(info.clamped, 1);
  assert_int_equal(info.method, KR_EST_ML);
  kr_wait_poisson(&p, &ep, &hc, KR_CONTENT_CHANGED, NULL, 0, &info);
  assert_int_equal(info.clamped, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults_and_check), cmocka_unit_test(branches),
      cmocka_unit_test(overdue),            cmocka_unit_test(clamps),
      cmocka_unit_test(visit_table),        cmocka_unit_test(saturation),
      cmocka_unit_test(from_config),        cmocka_unit_test(poisson_first_visit),
      cmocka_unit_test(poisson_unknown),    cmocka_unit_test(poisson_adapts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
