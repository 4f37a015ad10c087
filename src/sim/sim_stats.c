/*
 * Statistics over seeds for `kria simulate --seeds N` (sim.h "Statistics"):
 * Student t quantiles and the t-interval of a mean, which the paired
 * comparisons apply to per-seed ratios and differences.
 */
#include "sim.h"

#include <math.h>
#include <stddef.h>

/* The 0.975 quantile of Student's t for 1..30 degrees of freedom, then
 * at 40, 60, 120 and infinity: linear in 1/dof between them, which is
 * within 0.001 of the exact quantile. */
static const double t975_small[30] = {
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
static const struct {
  double dof, t;
} t975_large[] = {{30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {INFINITY, 1.960}};

double kr_sim_t975(unsigned dof) {
  if (dof == 0) return NAN;
  if (dof <= 30) return t975_small[dof - 1];
  double x = 1.0 / dof;
  for (size_t i = 1; i < sizeof t975_large / sizeof *t975_large; i++) {
    if (dof <= t975_large[i].dof) {
      double x0 = 1.0 / t975_large[i - 1].dof, x1 = 1.0 / t975_large[i].dof;
      double f = (x - x0) / (x1 - x0);
      return t975_large[i - 1].t + f * (t975_large[i].t - t975_large[i - 1].t);
    }
  }
  return 1.960;
}

void kr_sim_ci95(const double *x, size_t n, kr_sim_ci_t *out) {
  out->n = n;
  out->mean = out->sd = out->half = out->lo = out->hi = NAN;
  if (!n) return;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += x[i];
  out->mean = sum / (double)n;
  if (n < 2) return;
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (x[i] - out->mean) * (x[i] - out->mean);
  out->sd = sqrt(ss / (double)(n - 1));
  out->half = kr_sim_t975((unsigned)(n - 1)) * out->sd / sqrt((double)n);
  out->lo = out->mean - out->half;
  out->hi = out->mean + out->half;
}
