/*
 * bench/estimate/estimate_bench.c — CPU time of one change-rate estimate
 * at a full history (64 observations), the cost a revisit pays in
 * src/core/wait.c (the simulator's poisson and the crawler's
 * src/crawl/proc_wait.c alike):
 *
 *   shift        kr_est_shift alone: the change-of-rate split search
 *   rate         kr_est_rate without an informed prior (no split search)
 *   rate+shift   kr_est_rate with an informed prior (prior_tau2 > 0): the
 *                split search first, then the estimator
 *   rate+ages    the same with the ages honest validators give (the
 *                Last-Modified test of kr_est_shift_lm instead of the
 *                intervals' search, then the posterior or last-modified
 *                estimator)
 *
 * over a fixed set of histories (fixed seed): pages whose rates are
 * log-uniform over a month to an hour, visited at 0.2 to 3 expected
 * changes a visit (+-50 % jitter, whole seconds as the store keeps
 * them), a third of them changing rate at their 40th visit. ns per call
 * = process CPU time / calls; each figure is the median of R rounds (the
 * rows interleaved round by round, ~0.2 s each), so other work on the
 * machine shows mostly as spread, not as a bias. The checksum line sums
 * the answers: two builds that print the same one made the same
 * decisions.
 *
 * Build and run: make bench-estimate && build/bench/estimate_bench [--rounds R]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kria/estimate.h"

#define NHIST 512
#define ROUND_NS 200000000.0 /* CPU time per measurement */
#define MAX_ROUNDS 15

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static uint64_t rng = 1;
static double unif(void) { /* splitmix64, (0,1) */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) * 0x1p-53;
}
static double expo(double rate) { return -log(unif()) / rate; }

/* A page changing at rate lam (lam2 from visit 40 on), 65 visits; *a
 * the same with the versions' ages. */
static void make_history(kr_vhist_t *h, kr_vhist_t *a, double lam, double lam2, double per_visit) {
  kr_vhist_init(h);
  kr_vhist_init(a);
  kr_vhist_visit_t v0 = {0, KR_CONTENT_CHANGED, -1};
  kr_vhist_append(h, &v0);
  kr_vhist_append(a, &v0);
  double now = 0, next = expo(lam), mean = per_visit / lam, last = -expo(lam);
  for (int i = 0; i < KR_VHIST_MAX; i++) {
    if (i == 40 && lam2 != lam) {
      lam = lam2;
      next = now + expo(lam);
    }
    double dt = ceil(mean * (0.5 + unif()));
    int changed = 0;
    while (next <= now + dt) changed = 1, last = next, next += expo(lam);
    now += dt;
    kr_vhist_visit_t v = {(int64_t)dt, changed ? KR_CONTENT_CHANGED : KR_CONTENT_UNCHANGED, -1};
    kr_vhist_append(h, &v);
    v.age_s = (int64_t)floor(now - last);
    kr_vhist_append(a, &v);
  }
}

enum { SHIFT, RATE, RATE_SHIFT, RATE_AGES, NKIND };
static const char *kind_name[NKIND] = {"shift", "rate", "rate+shift", "rate+ages"};

static kr_vhist_t hist[NHIST], aged[NHIST];
static kr_est_obs_t obs[NHIST][KR_VHIST_MAX];
static size_t nobs[NHIST];
static volatile double sink;

/* One pass of kind k over every history; adds the answers to *sum. */
static void pass(int k, const kr_est_params_t *plain, const kr_est_params_t *informed,
                 double *sum) {
  double s = 0;
  for (int i = 0; i < NHIST; i++) {
    kr_est_result_t r;
    size_t split;
    switch (k) {
    case SHIFT: s += kr_est_shift(obs[i], nobs[i], &split) + (double)split; break;
    case RATE:
      kr_est_rate(plain, &hist[i], 1e-5, &r);
      s += r.lambda;
      break;
    case RATE_SHIFT:
      kr_est_rate(informed, &hist[i], 1e-5, &r);
      s += r.lambda + r.dropped;
      break;
    default:
      kr_est_rate(informed, &aged[i], 1e-5, &r);
      s += r.lambda + r.dropped;
    }
  }
  *sum = s;
  sink = s;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
  int rounds = 5;
  if (argc == 3 && strcmp(argv[1], "--rounds") == 0) rounds = atoi(argv[2]);
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: estimate_bench [--rounds 1..%d]\n", MAX_ROUNDS);
    return 2;
  }
  const double day = 86400;
  int searched = 0;
  for (int i = 0; i < NHIST; i++) {
    double lam = exp(log(1 / (30 * day)) + unif() * log(30 * 24.0)); /* a month .. an hour */
    double per_visit = exp(log(0.2) + unif() * log(15.0));             /* 0.2 .. 3 */
    double lam2 = i % 3 == 0 ? exp(log(1 / (30 * day)) + unif() * log(30 * 24.0)) : lam;
    make_history(&hist[i], &aged[i], lam, lam2, per_visit);
    nobs[i] = kr_vhist_observations(&hist[i], obs[i], KR_VHIST_MAX);
    double total = 0, first = 0;
    for (size_t j = 0; j < nobs[i]; j++) total += obs[i][j].t, first += j < 8 ? obs[i][j].t : 0;
    searched += total - first >= 3 * day;
  }
  kr_est_params_t plain, informed;
  kr_est_params_default(&plain);
  informed = plain;
  informed.prior_tau2 = 2.0;

  double ns[NKIND][MAX_ROUNDS], sum[NKIND];
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < NKIND; k++) {
      long calls = 0;
      double t0 = cpu_ns(), t;
      do {
        pass(k, &plain, &informed, &sum[k]);
        calls += NHIST;
      } while ((t = cpu_ns()) - t0 < ROUND_NS);
      ns[k][r] = (t - t0) / (double)calls;
    }
  printf("%d histories of %d observations (%d long enough for a split search); "
         "%d rounds, median ns per call (min-max)\n\n",
         NHIST, KR_VHIST_MAX, searched, rounds);
  printf("%-12s %10s %10s %10s\n", "kind", "median", "min", "max");
  for (int k = 0; k < NKIND; k++) {
    qsort(ns[k], (size_t)rounds, sizeof ns[k][0], cmp_double);
    printf("%-12s %10.0f %10.0f %10.0f\n", kind_name[k], ns[k][rounds / 2], ns[k][0],
           ns[k][rounds - 1]);
  }
  printf("\nchecksum: shift %.9g, rate %.9g, rate+shift %.9g, rate+ages %.9g\n", sum[SHIFT],
         sum[RATE], sum[RATE_SHIFT], sum[RATE_AGES]);
  return 0;
}
