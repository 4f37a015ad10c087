/* The published schedulers (include/kria/sched.h). LambdaCrawl: the
 * harmonic penalty is E[H(N)] of the geometric lag (summed), the rates
 * meet the KKT conditions at the solved multiplier (equal marginal
 * penalty inside the box, the box's side outside), spend exactly R, and
 * no transfer of rate between two pages lowers the total penalty; the
 * binary form drops the pages too fast to keep fresh; the limits (slack,
 * over, no items, bad items). Under politeness: every host within its
 * budget, the global R met, and with R the hosts' sum each host solved
 * alone. Nutch and StormCrawler: their interval sequences against values
 * worked out by hand from their rules (Nutch's in Java float arithmetic). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "kria/error.h"
#include "kria/sched.h"
#include "helpers.h"

static uint64_t rng_state;
static double unif(void) { return ((double)(th_splitmix64(&rng_state) >> 11) + 0.5) * 0x1p-53; }

#define N 200

/* n pages: change rates log-uniform 1 h .. 30 d, importance 0.1 .. 10,
 * box 1/28 d .. 1/20 s unless narrow. */
static void make_items(kr_sched_item_t *it, size_t n, uint64_t seed) {
  rng_state = seed;
  for (size_t i = 0; i < n; i++) {
    double period = 3600.0 * exp(unif() * log(720.0));
    it[i].delta = 1.0 / period;
    it[i].mu = exp((unif() * 2 - 1) * log(10.0));
    it[i].fmin = 1.0 / (28 * 86400.0);
    it[i].fmax = 1.0 / 20.0;
    it[i].weight = 1.0 + (double)(i % 3);
  }
}

/* d penalty / d r (negative: more rate, less penalty) */
static double marginal(kr_sched_penalty_t pen, const kr_sched_item_t *e, double r) {
  if (pen == KR_SCHED_BINARY) return e->mu * e->delta / ((e->delta + r) * (e->delta + r));
  return e->mu * e->delta / (r * (r + e->delta));
}

static double total_penalty(kr_sched_penalty_t pen, const kr_sched_item_t *it, const double *r,
                            size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += it[i].weight * kr_sched_penalty(pen, it[i].mu, it[i].delta, r[i]);
  return s;
}

static void harmonic_is_expected_lag(void **state) {
  (void)state;
  /* N geometric with P(N >= j) = q^j, q = D/(D + r): E[H(N)] by summing */
  double D = 1.0 / 3600, r = 1.0 / 7200, q = D / (D + r);
  double e = 0, H = 0;
  for (int k = 1; k < 2000; k++) {
    H += 1.0 / k;
    e += H * (1 - q) * pow(q, k);
  }
  assert_true(fabs(e - kr_sched_penalty(KR_SCHED_HARMONIC, 1, D, r)) < 1e-9);
  assert_true(fabs(kr_sched_penalty(KR_SCHED_HARMONIC, 2, D, D) - 2 * log(2.0)) < 1e-12);
  assert_true(fabs(kr_sched_penalty(KR_SCHED_BINARY, 2, D, D) - 1.0) < 1e-12);
  assert_true(isinf(kr_sched_penalty(KR_SCHED_HARMONIC, 1, D, 0)));
  assert_true(kr_sched_penalty(KR_SCHED_BINARY, 3, D, 0) == 3);
  /* the rates solve the stationary equations */
  double mu = 1.7, L = 3e-3;
  double rh = kr_sched_rate(KR_SCHED_HARMONIC, mu, D, L);
  assert_true(fabs(mu * D / (rh * (rh + D)) / L - 1) < 1e-12);
  double rb = kr_sched_rate(KR_SCHED_BINARY, mu, D, L * 1e-3);
  assert_true(rb > 0 && fabs(mu * D / ((D + rb) * (D + rb)) / (L * 1e-3) - 1) < 1e-12);
  /* binary drops a page with D >= mu / L; harmonic never */
  assert_true(kr_sched_rate(KR_SCHED_BINARY, 1, 1.0, 1.0) == 0);
  assert_true(kr_sched_rate(KR_SCHED_HARMONIC, 1, 1.0, 1.0) > 0);
  /* no cancellation: tiny mu D / L against D^2 gives about mu / L */
  double rs = kr_sched_rate(KR_SCHED_HARMONIC, 1e-9, 1.0, 1.0);
  assert_true(fabs(rs / 1e-9 - 1) < 1e-6);
  assert_true(isinf(kr_sched_rate(KR_SCHED_HARMONIC, 1, D, 0)));
}

static void check_kkt(kr_sched_penalty_t pen, uint64_t seed) {
  kr_sched_item_t it[N];
  make_items(it, N, seed);
  double fmax_total = 0;
  for (size_t i = 0; i < N; i++) fmax_total += it[i].weight * it[i].fmax;
  double R = 0.002 * fmax_total; /* binds */
  double L, r[N];
  assert_int_equal(kr_sched_solve(pen, it, N, R, &L, r), KR_SCHED_BINDS);
  assert_true(L > 0 && isfinite(L));
  double sum = 0;
  size_t inside = 0;
  for (size_t i = 0; i < N; i++) {
    sum += it[i].weight * r[i];
    assert_true(r[i] >= it[i].fmin && r[i] <= it[i].fmax);
    double m = marginal(pen, &it[i], r[i]);
    if (r[i] > it[i].fmin * (1 + 1e-9) && r[i] < it[i].fmax * (1 - 1e-9)) {
      assert_true(fabs(m / L - 1) < 1e-6); /* inside the box: equal marginals */
      inside++;
    } else if (r[i] <= it[i].fmin * (1 + 1e-9)) {
      assert_true(m <= L * (1 + 1e-6)); /* held up by fmin: wants less */
    } else {
      assert_true(m >= L * (1 - 1e-6)); /* held down by fmax: wants more */
    }
  }
  assert_true(inside > N / 2);
  assert_true(fabs(sum / R - 1) < 1e-9);
  /* no transfer between two pages lowers the total */
  double base = total_penalty(pen, it, r, N);
  for (size_t k = 0; k < 500; k++) {
    size_t a = (size_t)(unif() * N), b = (size_t)(unif() * N);
    if (a == b) continue;
    double t[N];
    memcpy(t, r, sizeof t);
    double eps = 0.01 * r[a];
    t[a] -= eps / it[a].weight;
    t[b] += eps / it[b].weight;
    if (t[a] < it[a].fmin || t[b] > it[b].fmax) continue;
    assert_true(total_penalty(pen, it, t, N) >= base * (1 - 1e-12));
  }
  /* and beats rates proportional to the change rate at the same R */
  double dsum = 0, p[N];
  for (size_t i = 0; i < N; i++) dsum += it[i].weight * it[i].delta;
  for (size_t i = 0; i < N; i++) p[i] = it[i].delta * R / dsum;
  assert_true(base < total_penalty(pen, it, p, N));
}

static void lambdacrawl_kkt(void **state) {
  (void)state;
  check_kkt(KR_SCHED_HARMONIC, 11);
  check_kkt(KR_SCHED_HARMONIC, 12);
}

static void binary_kkt(void **state) {
  (void)state;
  check_kkt(KR_SCHED_BINARY, 21);
  /* without a floor, the fastest pages get nothing */
  kr_sched_item_t it[3] = {{1.0, 1, 0, 100, 1}, {1e-3, 1, 0, 100, 1}, {1e-4, 1, 0, 100, 1}};
  double L, r[3];
  assert_int_equal(kr_sched_solve(KR_SCHED_BINARY, it, 3, 0.01, &L, r), KR_SCHED_BINDS);
  assert_true(r[0] == 0 && r[1] > 0 && r[2] > 0);
  assert_true(fabs(r[0] + r[1] + r[2] - 0.01) < 1e-12);
}

static void solve_limits(void **state) {
  (void)state;
  kr_sched_item_t it[N];
  make_items(it, N, 31);
  double L, r[N], fmin_total = 0;
  for (size_t i = 0; i < N; i++) fmin_total += it[i].weight * it[i].fmin;
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, it, N, 1e9, &L, r), KR_SCHED_SLACK);
  assert_true(L == 0 && r[0] == it[0].fmax);
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, it, N, fmin_total * 0.5, &L, r), KR_SCHED_OVER);
  assert_true(r[0] == it[0].fmin && r[N - 1] == it[N - 1].fmin);
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, NULL, 0, 1, &L, NULL), KR_SCHED_SLACK);
  /* a budget just above the floor: every page near fmin, sum still R */
  assert_int_equal(kr_sched_solve(KR_SCHED_BINARY, it, N, fmin_total * 1.001, &L, r), KR_SCHED_BINDS);
  double sum = 0;
  for (size_t i = 0; i < N; i++) sum += it[i].weight * r[i];
  assert_true(fabs(sum / (fmin_total * 1.001) - 1) < 1e-9);
  kr_sched_item_t bad = {0, 1, 0, 1, 1};
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, &bad, 1, 1, &L, r), KR_EINVAL);
  bad = (kr_sched_item_t){1, 1, 2, 1, 1}; /* fmax < fmin */
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, &bad, 1, 1, &L, r), KR_EINVAL);
  bad = (kr_sched_item_t){1, 1, 0, INFINITY, 1};
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, &bad, 1, 1, &L, r), KR_EINVAL);
  assert_int_equal(kr_sched_solve(KR_SCHED_HARMONIC, it, N, NAN, &L, r), KR_EINVAL);
  assert_int_equal(kr_sched_solve((kr_sched_penalty_t)7, it, N, 1, &L, r), KR_EINVAL);
}

static void polite(void **state) {
  (void)state;
  kr_sched_item_t it[N];
  make_items(it, N, 41);
  /* three hosts of 50, 100, 50 pages; host 1 is starved */
  size_t start[4] = {0, 50, 150, 200};
  double want[3] = {0}, host_R[3], hl[3], L, r[N];
  for (size_t h = 0; h < 3; h++)
    for (size_t i = start[h]; i < start[h + 1]; i++) want[h] += it[i].weight * it[i].fmax;
  host_R[0] = 0.01 * want[0];
  host_R[1] = 0.0005 * want[1];
  host_R[2] = 0.01 * want[2];
  double sumR = host_R[0] + host_R[1] + host_R[2];
  /* R = the hosts' sum: the global constraint is implied, each host alone */
  assert_int_equal(kr_sched_solve_polite(KR_SCHED_HARMONIC, it, start, 3, host_R, sumR, &L, hl, r),
                   KR_SCHED_SLACK);
  assert_true(L == 0);
  for (size_t h = 0; h < 3; h++) {
    double alone[N], lh, s = 0;
    kr_sched_solve(KR_SCHED_HARMONIC, it + start[h], start[h + 1] - start[h], host_R[h], &lh, alone);
    assert_true(fabs(hl[h] / lh - 1) < 1e-12);
    for (size_t i = start[h]; i < start[h + 1]; i++) {
      assert_true(fabs(r[i] / alone[i - start[h]] - 1) < 1e-12);
      s += it[i].weight * r[i];
    }
    assert_true(fabs(s / host_R[h] - 1) < 1e-9);
  }
  /* a tighter global R: it binds, the starved host keeps its own (higher)
   * multiplier, the others share the global one, nobody over its budget */
  double R = 0.6 * sumR;
  assert_int_equal(kr_sched_solve_polite(KR_SCHED_HARMONIC, it, start, 3, host_R, R, &L, hl, r),
                   KR_SCHED_BINDS);
  assert_true(L > 0 && hl[1] > L);
  double total = 0;
  for (size_t h = 0; h < 3; h++) {
    double s = 0;
    for (size_t i = start[h]; i < start[h + 1]; i++) s += it[i].weight * r[i];
    assert_true(s <= host_R[h] * (1 + 1e-9));
    total += s;
  }
  assert_true(fabs(total / R - 1) < 1e-9);
  /* without politeness (one host of all) it is kr_sched_solve */
  size_t one[2] = {0, N};
  double all[N], L1;
  kr_sched_solve_polite(KR_SCHED_BINARY, it, one, 1, &R, 0, &L, hl, r);
  kr_sched_solve(KR_SCHED_BINARY, it, N, R, &L1, all);
  assert_true(fabs(hl[0] / L1 - 1) < 1e-12 && fabs(r[7] / all[7] - 1) < 1e-12);
  size_t bad[2] = {1, N};
  assert_int_equal(kr_sched_solve_polite(KR_SCHED_BINARY, it, bad, 1, &R, 0, &L, hl, r), KR_EINVAL);
}

/* Nutch's defaults, worked by hand (Java floats: 1 + 0.4f = 1.39999998f,
 * 1 - 0.2f = 0.8f, 0.3f = 0.30000001 as a double):
 *   t0  first fetch (unknown)   interval 2592000 s, next t0 + 30 d
 *   t1  not modified            interval 3628800 (float), delta = 2592000 s
 *                               < interval; next = t1 - round(2592000 x
 *                               0.30000001 x 1000) + 3628800000
 *                               = t1 + 2851199969 ms
 *   t2  modified                interval 2903040, modified = t2, delta 0
 *                               next = t2 + 2903040000
 *   t3  not modified            interval 4064256, delta 2903040 s
 *                               next = t3 - 870912035 + 4064256000
 *                               = t3 + 3193343965 */
static void nutch_sequence(void **state) {
  (void)state;
  kr_sched_nutch_params_t p;
  kr_sched_nutch_default(&p);
  assert_true(p.default_interval_s == 2592000 && p.inc_rate == 0.4 && p.dec_rate == 0.2 &&
              p.min_interval_s == 60 && p.max_interval_s == 31536000 && p.sync_delta &&
              p.sync_delta_rate == 0.3);
  kr_sched_nutch_t d;
  memset(&d, 0, sizeof d);
  int64_t t0 = INT64_C(1700000000000);
  int64_t t1 = kr_sched_nutch_next(&p, &d, t0, KR_SCHED_UNKNOWN);
  assert_int_equal(t1 - t0, INT64_C(2592000000));
  int64_t t2 = kr_sched_nutch_next(&p, &d, t1, KR_SCHED_NOTMODIFIED);
  assert_true(d.interval_s == 3628800.0);
  assert_int_equal(t2 - t1, INT64_C(2851199969));
  int64_t t3 = kr_sched_nutch_next(&p, &d, t2, KR_SCHED_MODIFIED);
  assert_true(d.interval_s == 2903040.0 && d.modified_ms == t2);
  assert_int_equal(t3 - t2, INT64_C(2903040000));
  int64_t t4 = kr_sched_nutch_next(&p, &d, t3, KR_SCHED_NOTMODIFIED);
  assert_true(d.interval_s == 4064256.0);
  assert_int_equal(t4 - t3, INT64_C(3193343965));
  /* sync_delta: a page unchanged for longer than its interval takes the
   * delta as its interval (100 s default here, seen 1000 s later) */
  p.default_interval_s = 100;
  memset(&d, 0, sizeof d);
  int64_t u1 = kr_sched_nutch_next(&p, &d, t0, KR_SCHED_UNKNOWN);
  assert_int_equal(u1 - t0, 100000);
  int64_t u2 = kr_sched_nutch_next(&p, &d, t0 + 1000000, KR_SCHED_NOTMODIFIED);
  assert_true(d.interval_s == 1000.0);
  assert_int_equal(u2 - (t0 + 1000000), 1000000 - 300000);
  /* clamps: 70 s modified x 0.8 = 56 s -> 60 s; up to 365 d at most */
  d.interval_s = 70;
  int64_t v = kr_sched_nutch_next(&p, &d, t0, KR_SCHED_MODIFIED);
  assert_true(d.interval_s == 60.0);
  assert_int_equal(v - t0, 60000);
  d.interval_s = 30000000;
  d.modified_ms = t0;
  kr_sched_nutch_next(&p, &d, t0, KR_SCHED_NOTMODIFIED);
  assert_true(d.interval_s == 31536000.0);
}

/* StormCrawler's defaults, by hand: 1440 first; changed (int)(0.5 i +
 * 30): 750, 405, 232 (232.5); unchanged (int)(1.5 i): 348, 522, 783,
 * 1174, 1761, 2641, 3961, 5941, 8911, 13366, 20049, then 20160 (max). */
static void storm_sequence(void **state) {
  (void)state;
  kr_sched_storm_params_t p;
  kr_sched_storm_default(&p);
  assert_int_equal(p.default_min, 1440);
  assert_int_equal(p.min_min, 60);
  assert_int_equal(p.max_min, 20160);
  kr_sched_storm_t d = {0};
  assert_int_equal(kr_sched_storm_next(&p, &d, 1, 1), 1440);
  static const int changed[] = {750, 405, 232};
  for (size_t i = 0; i < 3; i++) assert_int_equal(kr_sched_storm_next(&p, &d, 0, 1), changed[i]);
  static const int same[] = {348,  522,  783,  1174,  1761,  2641, 3961,
                             5941, 8911, 13366, 20049, 20160, 20160};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++)
    assert_int_equal(kr_sched_storm_next(&p, &d, 0, 0), same[i]);
  /* near the minimum the decrease slows and never passes it */
  d.interval_min = 61;
  assert_int_equal(kr_sched_storm_next(&p, &d, 0, 1), 60);
  assert_int_equal(kr_sched_storm_next(&p, &d, 0, 1), 60);
  /* a page without a comparison goes back to the default */
  assert_int_equal(kr_sched_storm_next(&p, &d, 1, 0), 1440);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(harmonic_is_expected_lag), cmocka_unit_test(lambdacrawl_kkt),
      cmocka_unit_test(binary_kkt),               cmocka_unit_test(solve_limits),
      cmocka_unit_test(polite),                   cmocka_unit_test(nutch_sequence),
      cmocka_unit_test(storm_sequence),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
