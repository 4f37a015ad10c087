/*
 * Change-rate estimation and revisit allocation (see include/kria/estimate.h
 * for the model and the math). The history codec comes first because the
 * store persists its output: it refuses anything it did not write and
 * never reads past its input. Then the estimators (closed forms and one
 * bracketed root find), the prior, and the allocation: h and its inverse,
 * the bisection on the Lagrange multiplier, and the per-host sketch that
 * makes the per-URI answer O(1). Every iteration is bounded in count.
 * Sections: history, observations, estimators, prior, allocation, host.
 */
#include "kria/estimate.h"

#include <math.h>
#include <string.h>

#include "kria/error.h"

#define LAMBDA_MIN 1e-12 /* one change in 30,000 years */
#define LAMBDA_MAX 1e3   /* a thousand a second */

static double clampd(double v, double lo, double hi) {
  if (!(v >= lo)) return lo; /* also NaN */
  if (v > hi) return hi;
  return v;
}

/* ---- history ---------------------------------------------------------------- */

#define VARINT_MAX 7 /* 49 bits: enough for 2^40 << 3 */

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    p[n++] = (uint8_t)(b | (v ? 0x80 : 0));
  } while (v);
  return n;
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >>= 7) n++;
  return n;
}

static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (unsigned i = 0; i < VARINT_MAX; i++) {
    if (p >= end) return KR_EINVAL;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (b == 0 && i > 0) return KR_EINVAL; /* overlong */
      *pp = p;
      *out = v;
      return 0;
    }
  }
  return KR_EINVAL;
}

int kr_vhist_decode(kr_vhist_t *h, const uint8_t *p, size_t len) {
  h->n = 0;
  if (len == 0) return 0;
  if (!p || len > KR_VHIST_BYTES || p[0] != KR_VHIST_VERSION) return KR_EINVAL;
  const uint8_t *q = p + 1, *end = p + len;
  while (q < end) {
    uint64_t v, age = 0;
    if (h->n == KR_VHIST_MAX) goto bad;
    if (get_varint(&q, end, &v) < 0) goto bad;
    unsigned state = v & 3;
    int has_age = (v >> 2) & 1;
    uint64_t interval = v >> 3;
    if (state > KR_CONTENT_UNKNOWN || interval > (uint64_t)KR_VHIST_MAX_SECONDS) goto bad;
    if (has_age) {
      if (get_varint(&q, end, &age) < 0 || age > (uint64_t)KR_VHIST_MAX_SECONDS) goto bad;
    }
    kr_vhist_visit_t *e = &h->v[h->n++];
    e->interval_s = (int64_t)interval;
    e->state = (kr_content_t)state;
    e->age_s = has_age ? (int64_t)age : -1;
  }
  return 0;
bad:
  h->n = 0;
  return KR_EINVAL;
}

/* A visit's fields as they will be written. */
static void sanitize(const kr_vhist_visit_t *in, uint64_t *interval, unsigned *state,
                     int *has_age, uint64_t *age) {
  int64_t iv = in->interval_s;
  *interval = iv <= 0                    ? 0
              : iv > KR_VHIST_MAX_SECONDS ? (uint64_t)KR_VHIST_MAX_SECONDS
                                          : (uint64_t)iv;
  *state = (unsigned)in->state <= KR_CONTENT_UNKNOWN ? (unsigned)in->state : KR_CONTENT_UNKNOWN;
  *has_age = in->age_s >= 0 && in->age_s <= KR_VHIST_MAX_SECONDS;
  *age = *has_age ? (uint64_t)in->age_s : 0;
}

static size_t entry_len(const kr_vhist_visit_t *e) {
  uint64_t interval, age;
  unsigned state;
  int has_age;
  sanitize(e, &interval, &state, &has_age, &age);
  size_t n = varint_len(interval << 3 | (uint64_t)has_age << 2 | state);
  return has_age ? n + varint_len(age) : n;
}

/* Encode h into out, newest backwards until cap; *first_out: the oldest
 * entry written. */
static size_t encode(const kr_vhist_t *h, uint8_t *out, size_t cap, unsigned *first_out) {
  if (cap > KR_VHIST_BYTES) cap = KR_VHIST_BYTES;
  unsigned n = h->n > KR_VHIST_MAX ? KR_VHIST_MAX : h->n;
  *first_out = n;
  if (cap == 0) return 0;
  /* newest backwards: how many fit */
  size_t used = 1;
  unsigned first = n;
  while (first > 0) {
    size_t l = entry_len(&h->v[first - 1]);
    if (used + l > cap) break;
    used += l;
    first--;
  }
  size_t o = 0;
  out[o++] = KR_VHIST_VERSION;
  for (unsigned i = first; i < n; i++) {
    uint64_t interval, age;
    unsigned state;
    int has_age;
    sanitize(&h->v[i], &interval, &state, &has_age, &age);
    o += put_varint(out + o, interval << 3 | (uint64_t)has_age << 2 | state);
    if (has_age) o += put_varint(out + o, age);
  }
  *first_out = first;
  return o;
}

size_t kr_vhist_encode(const kr_vhist_t *h, uint8_t *out, size_t cap) {
  unsigned first;
  return encode(h, out, cap, &first);
}

void kr_vhist_append(kr_vhist_t *h, const kr_vhist_visit_t *v) {
  if (h->n > KR_VHIST_MAX) h->n = KR_VHIST_MAX;
  if (h->n == KR_VHIST_MAX) {
    memmove(&h->v[0], &h->v[1], (KR_VHIST_MAX - 1) * sizeof h->v[0]);
    h->n--;
  }
  h->v[h->n++] = *v;
}

size_t kr_vhist_push(const uint8_t *old, size_t old_len, const kr_vhist_visit_t *v,
                     uint8_t out[KR_VHIST_BYTES], int *damaged) {
  kr_vhist_t h;
  return kr_vhist_push_read(old, old_len, v, out, damaged, &h);
}

size_t kr_vhist_push_read(const uint8_t *old, size_t old_len, const kr_vhist_visit_t *v,
                          uint8_t out[KR_VHIST_BYTES], int *damaged, kr_vhist_t *h) {
  int rc = kr_vhist_decode(h, old, old_len);
  if (damaged) *damaged = rc < 0;
  kr_vhist_append(h, v);
  unsigned first;
  size_t len = encode(h, out, KR_VHIST_BYTES, &first);
  /* *h as decoding out would give it: the entries written, sanitized */
  unsigned n = h->n > KR_VHIST_MAX ? KR_VHIST_MAX : h->n;
  for (unsigned i = first; i < n; i++) {
    uint64_t interval, age;
    unsigned state;
    int has_age;
    sanitize(&h->v[i], &interval, &state, &has_age, &age);
    h->v[i - first] = (kr_vhist_visit_t){.interval_s = (int64_t)interval,
                                         .state = (kr_content_t)state,
                                         .age_s = has_age ? (int64_t)age : -1};
  }
  h->n = n - first;
  return len;
}

/* ---- observations ------------------------------------------------------------ */

size_t kr_vhist_observations(const kr_vhist_t *h, kr_est_obs_t *out, size_t max) {
  size_t k = 0;
  double acc = 0; /* seconds of unknown visits since the last known one */
  unsigned n = h->n > KR_VHIST_MAX ? KR_VHIST_MAX : h->n;
  for (unsigned i = 0; i < n && k < max; i++) {
    const kr_vhist_visit_t *e = &h->v[i];
    if (e->interval_s <= 0) { /* a first visit: nothing before it */
      acc = 0;
      continue;
    }
    if (e->state != KR_CONTENT_CHANGED && e->state != KR_CONTENT_UNCHANGED) {
      acc += (double)e->interval_s;
      continue;
    }
    out[k].t = acc + (double)e->interval_s;
    out[k].changed = e->state == KR_CONTENT_CHANGED;
    out[k].age = e->age_s >= 0 ? (double)e->age_s : -1.0;
    k++;
    acc = 0;
  }
  return k;
}

/* ---- estimators --------------------------------------------------------------- */

void kr_est_params_default(kr_est_params_t *p) {
  p->prior_weight = 1.0;
  p->smoothing = 0.5;
  p->regular_tolerance = 0.1;
  p->use_last_modified = 1;
  p->lm_min_age_s = 2.0;
  p->lm_slack_s = 60.0;
  p->no_lm_factor = sqrt(2.0);
  p->depth_halving = 0.0;
  p->x_min = log(2.0);
  p->prior_tau2 = 0.0;
  p->posterior_obs = 16;
  p->posterior_widen = 1.0;
  p->shift_llr = 12.0;
}

double kr_est_naive(unsigned n, unsigned x, double interval_s) {
  if (n == 0 || !(interval_s > 0)) return 0.0;
  if (x > n) x = n;
  return (double)x / ((double)n * interval_s);
}

double kr_est_bias_reduced(unsigned n, unsigned x, double interval_s) {
  if (n == 0 || !(interval_s > 0)) return 0.0;
  if (x > n) x = n;
  return -log(((double)n - x + 0.5) / ((double)n + 0.5)) / interval_s;
}

/* Left side of the ML equation minus its right side, and the derivative
 * with respect to ln(lambda). The prior enters as wc pseudo-intervals of
 * length tp that changed (its unchanged part is already in r). */
static double ml_g(const kr_est_obs_t *o, size_t n, double wc, double tp, double r,
                   double lambda, double *dg_du) {
  double s = 0, d = 0;
  for (size_t i = 0; i <= n; i++) {
    double t, m = 1.0;
    if (i < n) {
      if (!o[i].changed) continue;
      t = o[i].t;
    } else {
      if (!(wc > 0)) break;
      t = tp;
      m = wc;
    }
    double em = expm1(lambda * t); /* e^(lambda t) - 1 */
    if (isinf(em)) continue;       /* the term and its slope are 0 */
    double inv = 1.0 / em;         /* one division per term */
    double q = m * t * inv;
    s += q;
    d += q * t * (em + 1.0) * inv;
  }
  *dg_du = -d * lambda;
  return s - r;
}

int kr_est_ml(const kr_est_obs_t *o, size_t n, double smoothing, double prior_rate,
              double prior_weight, double *lambda) {
  if ((n && !o) || !(smoothing >= 0) || !(prior_weight >= 0) || !isfinite(smoothing) ||
      !isfinite(prior_weight))
    return KR_EINVAL;
  if (prior_weight > 0 && !(prior_rate > 0 && isfinite(prior_rate))) return KR_EINVAL;
  double x = 0, c = 0, u = 0, all = 0;
  for (size_t i = 0; i < n; i++) {
    double t = o[i].t;
    if (!(t > 0) || !isfinite(t)) return KR_EINVAL;
    all += t;
    if (o[i].changed) {
      x += 1;
      c += t;
    } else {
      u += t;
    }
  }
  double w = n ? prior_weight : 0.0; /* without data the prior is the answer */
  if (n == 0 && prior_weight > 0) {
    *lambda = prior_rate;
    return 0;
  }
  if (x == 0 && w == 0) {
    *lambda = 0.0;
    return 0;
  }
  double tp = n ? all / (double)n : 0.0;         /* the pseudo-intervals' length */
  double p0 = w > 0 ? -expm1(-prior_rate * tp) : 0.0; /* their change probability */
  double wc = w * p0;
  double r = u + smoothing * tp + w * (1.0 - p0) * tp;
  if (!(r > 0)) return KR_EINVAL; /* every interval changed: the MLE is infinite */
  double k = x + wc;
  double lo = k / (r + (c + wc * tp) / 2), hi = k / r;
  if (!(k > 0)) {
    *lambda = 0.0;
    return 0;
  }
  if (!(lo < hi)) {
    *lambda = hi;
    return 0;
  }
  double ulo = log(lo), uhi = log(hi), u_ = 0.5 * (ulo + uhi);
  for (int it = 0; it < 100; it++) {
    double dg;
    double g = ml_g(o, n, wc, tp, r, exp(u_), &dg);
    if (g == 0) break;
    if (g > 0) ulo = u_; /* g falls with lambda: the root is above */
    else uhi = u_;
    double next = dg < 0 ? u_ - g / dg : 0.5 * (ulo + uhi);
    /* Converged: at the root g is rounding noise, the step rounds to
     * nothing and would land on the bracket's edge (u_ itself), which
     * the safeguard below rejects: it used to bisect on for ~40 more
     * steps (half the calls in a simulated month took 45 iterations).
     * Newton converges quadratically here (g is smooth in ln(lambda)),
     * so after a step under 1e-7 the error is ~1e-14: take it and stop. */
    if (dg < 0 && fabs(next - u_) < 1e-7) {
      u_ = next;
      break;
    }
    if (!(next > ulo && next < uhi)) next = 0.5 * (ulo + uhi);
    if (fabs(next - u_) < 1e-13 || uhi - ulo < 1e-13) {
      u_ = next;
      break;
    }
    u_ = next;
  }
  *lambda = exp(u_);
  return 0;
}

/* The last-modified sums of o: changed visits x, time known free of
 * change total, all the time; KR_EINVAL when the ages are unusable. */
static int lm_sums(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n, double *x_out,
                   double *total_out, double *all_out) {
  double x = 0, total = 0, all = 0;
  for (size_t i = 0; i < n; i++) {
    double t = o[i].t, a = o[i].age;
    if (!(t > 0) || !isfinite(t)) return KR_EINVAL;
    all += t;
    if (o[i].changed) {
      if (!(a >= p->lm_min_age_s) || a > t + p->lm_slack_s) return KR_EINVAL;
      total += a < t ? a : t;
      x += 1;
    } else {
      if (a >= 0 && a < t - p->lm_slack_s) return KR_EINVAL; /* moved without a change */
      total += t;
    }
  }
  if (x == 0) return KR_EINVAL; /* nothing the ages could add */
  *x_out = x, *total_out = total, *all_out = all;
  return 0;
}

int kr_est_lm(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n, double prior_rate,
              double prior_weight, double *lambda) {
  if (!p || (n && !o) || !(prior_weight >= 0) || !isfinite(prior_weight)) return KR_EINVAL;
  if (prior_weight > 0 && !(prior_rate > 0 && isfinite(prior_rate))) return KR_EINVAL;
  double x, total, all;
  if (lm_sums(p, o, n, &x, &total, &all)) return KR_EINVAL;
  double k;
  if (x >= (double)n) k = 1.0;
  else k = 1.0 + x / ((double)n * log1p(-x / (double)n));
  /* the prior: w pseudo-intervals of the mean length; each changes with
   * probability p0 and is free of change for p0/lambda0 on average */
  double w = prior_weight, tp = all / (double)n;
  double p0 = w > 0 ? -expm1(-prior_rate * tp) : 0.0;
  double num = x - k + w * p0, den = total + (w > 0 ? w * p0 / prior_rate : 0.0);
  if (!(den > 0)) return KR_EINVAL;
  *lambda = num > 0 ? num / den : 0.0;
  return 0;
}

#define POST_GRID 61 /* points over the prior's +-6 standard deviations: trapezoids
                      * on a smooth bell, within 1e-3 of a fine integral */

int kr_est_posterior(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n,
                     double prior_rate, double tau2, double *lambda) {
  if (!p || (n && !o) || !(prior_rate > 0) || !isfinite(prior_rate) || !(tau2 > 0) ||
      !isfinite(tau2))
    return KR_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!(o[i].t > 0) || !isfinite(o[i].t)) return KR_EINVAL;
  /* usable ages: the likelihood of the last-modified estimator, x ln
   * lambda - lambda T; otherwise each changed interval 1 - e^(-lambda t),
   * each unchanged one e^(-lambda t) */
  double x = 0, total = 0, all = 0, unchanged = 0;
  int ages = p->use_last_modified && lm_sums(p, o, n, &x, &total, &all) == 0;
  if (!ages)
    for (size_t i = 0; i < n; i++)
      if (!o[i].changed) unchanged += o[i].t;
  double sd = sqrt(tau2), m = log(prior_rate) - tau2 / 2; /* mean rate exp(m + tau2/2) */
  double step = 12.0 * sd / (POST_GRID - 1);
  double lp[POST_GRID], best = -INFINITY;
  for (int j = 0; j < POST_GRID; j++) {
    double u = m - 6.0 * sd + step * j, l = exp(u), z = (u - m) / sd;
    double v = -0.5 * z * z;
    if (ages) {
      v += x * u - l * total;
    } else {
      v -= l * unchanged;
      for (size_t i = 0; i < n; i++)
        if (o[i].changed) v += log(-expm1(-l * o[i].t));
    }
    lp[j] = v;
    if (v > best) best = v;
  }
  if (!isfinite(best)) return KR_EINVAL;
  double num = 0, den = 0;
  for (int j = 0; j < POST_GRID; j++) {
    double wgt = exp(lp[j] - best);
    num += wgt * exp(m - 6.0 * sd + step * j);
    den += wgt;
  }
  *lambda = num / den;
  return 0;
}

int kr_est_posterior_discrete(const kr_est_obs_t *o, size_t n, int ages, double first_age,
                              const double *rate, const double *logw, size_t g,
                              double *lambda) {
  if ((n && !o) || !rate || !logw || g == 0 || !lambda) return KR_EINVAL;
  /* the likelihood is lambda^k e^(-lambda T) prod_c (1 - e^(-lambda t_c)):
   * k the changes located by an age, T the time known free of change, c
   * the changed intervals without a usable age */
  double k = 0, total = 0, tc[KR_VHIST_MAX];
  size_t nc = 0;
  for (size_t i = 0; i < n; i++) {
    double t = o[i].t;
    if (!(t > 0) || !isfinite(t)) return KR_EINVAL;
    if (!o[i].changed) total += t;
    else if (ages && o[i].age >= 0) k += 1, total += o[i].age < t ? o[i].age : t;
    else if (nc < KR_VHIST_MAX) tc[nc++] = t;
    else return KR_EINVAL; /* more than a history holds */
  }
  if (ages && first_age >= 0 && isfinite(first_age)) k += 1, total += first_age;
  /* one pass, the sums rescaled whenever a larger log-posterior comes */
  double best = -INFINITY, num = 0, den = 0;
  for (size_t j = 0; j < g; j++) {
    double l = rate[j];
    if (!(l >= 0) || !isfinite(l)) return KR_EINVAL;
    double v = logw[j];
    if (!(v > -INFINITY)) continue;
    if (k > 0) v += l > 0 ? k * log(l) : -INFINITY;
    v -= l * total;
    for (size_t i = 0; i < nc && v > -INFINITY; i++) v += log(-expm1(-l * tc[i]));
    if (!(v > -INFINITY) || isnan(v)) continue;
    if (v > best) {
      double f = exp(best - v);
      num *= f, den *= f, best = v;
    }
    double wgt = exp(v - best);
    num += wgt * l;
    den += wgt;
  }
  if (!(den > 0)) return KR_EINVAL;
  *lambda = num / den;
  return 0;
}

/* ---- change of rate ------------------------------------------------------------ */

#define SHIFT_GRID 16      /* rates tried per segment (log-spaced, refined) */
#define SHIFT_MIN_OBS 8    /* observations on each side of a split */
#define SHIFT_MIN_SPAN_S (3 * 86400.0) /* time after it */

/* A changed interval's log-likelihood ln(1 - e^(-x)), x = lam t, at the
 * grid's rates lam[0..g_n) into row[] (row[g] = prev[g] + it), with few
 * libm calls: the grid spans 160 x total / tmin, so most of a point's
 * x are far from 1, where the function is a short series. Up to 1: ln x
 * - x/2 + sum B_2k x^2k / (2k (2k)!) (B the Bernoulli numbers), ln x =
 * ln lam + ln t without a call, to x^6 up to 2^-6, x^10 up to 1/4 and
 * x^20 up to 1 (each next term under 1e-17). From 4: ln(1 - e) with e =
 * e^(-x) <= 0.0183 as -(e + e^2/2 + ... + e^9/9) (the next term under
 * 1e-18), one exp. Between: ln(1 - e^(-x)), e^(-x) >= 0.0183 so the
 * subtraction loses nothing. From 36 on, the plain ln(-expm1(-x)),
 * exactly 0 from 37.43 (40 here): a segment whose every change is far
 * above the grid ties at 0 on its top points, and the parabola through
 * a tie must see the same tie. x rises with g, so each form is one run
 * of g (no branch per point). Within 2e-16 of ln(-expm1(-x)) at every
 * point; test_estimate's shift_same_answers holds the search to the
 * plain one. */
static void changed_row(const double *lam, const double *lnlam, int g_n, double t,
                        const double *prev, double *row) {
  double lnt = log(t);
  int g = 0;
  for (; g < g_n && lam[g] * t <= 0x1p-6; g++) {
    double x = lam[g] * t, y = x * x;
    double p = 5.5114638447971785e-06;
    p = p * y - 3.4722222222222224e-04;
    p = p * y + 4.1666666666666664e-02;
    row[g] = prev[g] + ((lnlam[g] + lnt) - 0.5 * x + p * y);
  }
  for (; g < g_n && lam[g] * t <= 0.25; g++) {
    double x = lam[g] * t, y = x * x;
    double p = 2.08767569878681e-09;
    p = p * y - 1.033399470899471e-07;
    p = p * y + 5.5114638447971785e-06;
    p = p * y - 3.4722222222222224e-04;
    p = p * y + 4.1666666666666664e-02;
    row[g] = prev[g] + ((lnlam[g] + lnt) - 0.5 * x + p * y);
  }
  for (; g < g_n && lam[g] * t <= 1.0; g++) {
    double x = lam[g] * t, y = x * x;
    double p = -1.087434349279031e-17;
    p = p * y + 4.770034475709914e-16;
    p = p * y - 2.1185501852016142e-14;
    p = p * y + 9.55895466477477e-13;
    p = p * y - 4.403491782239578e-11;
    p = p * y + 2.08767569878681e-09;
    p = p * y - 1.033399470899471e-07;
    p = p * y + 5.5114638447971785e-06;
    p = p * y - 3.4722222222222224e-04;
    p = p * y + 4.1666666666666664e-02;
    row[g] = prev[g] + ((lnlam[g] + lnt) - 0.5 * x + p * y);
  }
  for (; g < g_n && lam[g] * t < 4.0; g++) row[g] = prev[g] + log(1.0 - exp(-lam[g] * t));
  for (; g < g_n && lam[g] * t < 36.0; g++) {
    double e = exp(-lam[g] * t);
    double p = 1.0 / 9;
    p = p * e + 1.0 / 8;
    p = p * e + 1.0 / 7;
    p = p * e + 1.0 / 6;
    p = p * e + 1.0 / 5;
    p = p * e + 1.0 / 4;
    p = p * e + 1.0 / 3;
    p = p * e + 1.0 / 2;
    p = p * e + 1.0;
    row[g] = prev[g] - e * p;
  }
  for (; g < g_n && lam[g] * t < 40.0; g++) row[g] = prev[g] + log(-expm1(-lam[g] * t));
  for (; g < g_n; g++) row[g] = prev[g];
}

/* The largest value of a log-likelihood sampled on an even grid: the
 * best point, refined by the parabola through it and its neighbours
 * (the log-likelihood is smooth and concave in ln lambda). */
static double grid_max(const double *v, int g) {
  int j = 0;
  for (int i = 1; i < g; i++)
    if (v[i] > v[j]) j = i;
  if (j == 0 || j == g - 1) return v[j];
  double a = v[j - 1], b = v[j], c = v[j + 1], d = a - 2 * b + c;
  if (!(d < 0)) return b;
  return b - (a - c) * (a - c) / (8 * d);
}

double kr_est_shift(const kr_est_obs_t *o, size_t n, size_t *split) {
  *split = 0;
  if (n > KR_VHIST_MAX) n = KR_VHIST_MAX;
  if (!o || n < 2 * SHIFT_MIN_OBS) return 0.0;
  double total = 0, tmin = INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (!(o[i].t > 0) || !isfinite(o[i].t)) return 0.0;
    total += o[i].t;
    if (o[i].t < tmin) tmin = o[i].t;
  }
  double first = 0; /* the time before the earliest split */
  for (size_t i = 0; i < SHIFT_MIN_OBS; i++) first += o[i].t;
  if (total - first < SHIFT_MIN_SPAN_S) return 0.0; /* no split has 3 days after it */
  /* from a rate whose whole history expects 0.05 changes to one whose
   * shortest interval expects 8: a segment all unchanged or all changed
   * reaches its supremum at the grid's edge within 0.05 nats */
  double ulo = log(0.05 / total), uhi = log(8.0 / tmin);
  double step = (uhi - ulo) / (SHIFT_GRID - 1), lam[SHIFT_GRID], lnlam[SHIFT_GRID];
  for (int g = 0; g < SHIFT_GRID; g++) {
    lnlam[g] = ulo + step * g;
    lam[g] = exp(lnlam[g]);
  }
  /* cum[i][g]: log-likelihood of the first i observations at lam[g] */
  double cum[KR_VHIST_MAX + 1][SHIFT_GRID];
  for (int g = 0; g < SHIFT_GRID; g++) cum[0][g] = 0;
  for (size_t i = 0; i < n; i++) {
    double t = o[i].t;
    if (!o[i].changed) {
      for (int g = 0; g < SHIFT_GRID; g++) cum[i + 1][g] = cum[i][g] - lam[g] * t;
      continue;
    }
    changed_row(lam, lnlam, SHIFT_GRID, t, cum[i], cum[i + 1]);
  }
  double whole = grid_max(cum[n], SHIFT_GRID), best = 0, after_t = 0;
  for (size_t k = n - 1; k >= SHIFT_MIN_OBS; k--) {
    after_t += o[k].t; /* the time of observations k..n-1 */
    if (n - k < SHIFT_MIN_OBS || after_t < SHIFT_MIN_SPAN_S) continue;
    double after[SHIFT_GRID];
    for (int g = 0; g < SHIFT_GRID; g++) after[g] = cum[n][g] - cum[k][g];
    double llr = grid_max(cum[k], SHIFT_GRID) + grid_max(after, SHIFT_GRID) - whole;
    if (llr > best) best = llr, *split = k;
  }
  return best;
}

#define SHIFT_LM_BEFORE 2 /* observations before a split, with the ages */
#define SHIFT_LM_AFTER 1  /* and after it (3 days after it still) */

/* sup over lam of x ln lam - lam T: x ln(x / T) - x; 0 without a change */
static double lm_sup(double x, double T) { return x > 0 ? x * log(x / T) - x : 0.0; }

double kr_est_shift_lm(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n, size_t *split) {
  *split = 0;
  if (n > KR_VHIST_MAX) n = KR_VHIST_MAX;
  double x, total, all;
  if (!p || !o || n < SHIFT_LM_BEFORE + SHIFT_LM_AFTER || lm_sums(p, o, n, &x, &total, &all))
    return -1.0;
  /* the sufficient statistics of the first i observations: changes and
   * the time known free of change (the ages, as lm_sums counts it) */
  double X[KR_VHIST_MAX + 1], T[KR_VHIST_MAX + 1];
  X[0] = T[0] = 0;
  for (size_t i = 0; i < n; i++) {
    double t = o[i].t, a = o[i].age;
    X[i + 1] = X[i] + (o[i].changed ? 1.0 : 0.0);
    T[i + 1] = T[i] + (o[i].changed && a < t ? a : t);
  }
  double whole = lm_sup(X[n], T[n]), best = 0, after_t = 0;
  for (size_t k = n - 1; k >= SHIFT_LM_BEFORE; k--) {
    after_t += o[k].t;
    if (n - k < SHIFT_LM_AFTER || after_t < SHIFT_MIN_SPAN_S) continue;
    double llr = lm_sup(X[k], T[k]) + lm_sup(X[n] - X[k], T[n] - T[k]) - whole;
    if (llr > best) best = llr, *split = k;
  }
  return best;
}

static int is_regular(const kr_est_obs_t *o, size_t n, double tol) {
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += o[i].t;
  double mean = sum / (double)n;
  for (size_t i = 0; i < n; i++)
    if (fabs(o[i].t - mean) > tol * mean) return 0;
  return 1;
}

size_t kr_est_split(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n) {
  if (!p || !(p->shift_llr > 0)) return 0;
  size_t split;
  double llr = p->use_last_modified ? kr_est_shift_lm(p, o, n, &split) : -1.0;
  if (llr < 0) llr = kr_est_shift(o, n, &split); /* no usable ages */
  return llr > p->shift_llr ? split : 0;
}

void kr_est_rate(const kr_est_params_t *p, const kr_vhist_t *h, double prior_rate,
                 kr_est_result_t *out) {
  kr_est_params_t def;
  if (!p) {
    kr_est_params_default(&def);
    p = &def;
  }
  double prior = clampd(isfinite(prior_rate) ? prior_rate : 0, LAMBDA_MIN, LAMBDA_MAX);
  double w = isfinite(p->prior_weight) && p->prior_weight > 0 ? p->prior_weight : 0.0;
  double s = isfinite(p->smoothing) && p->smoothing > 0 ? p->smoothing : 0.0;
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = h ? kr_vhist_observations(h, o, KR_VHIST_MAX) : 0;
  const kr_est_obs_t *ob = o;
  out->dropped = 0;
  /* a change of rate: judge the URI by what came after it (estimate.h) */
  if (p->prior_tau2 > 0) {
    size_t split = kr_est_split(p, o, n);
    ob = o + split;
    n -= split;
    out->dropped = (unsigned)split;
  }
  unsigned x = 0;
  for (size_t i = 0; i < n; i++) x += (unsigned)ob[i].changed;
  out->observations = (unsigned)n;
  out->changes = x;
  double lambda;
  if (n == 0) {
    out->method = KR_EST_PRIOR;
    lambda = prior;
  } else if (p->prior_tau2 > 0 && (double)n <= p->posterior_obs &&
             kr_est_posterior(p, ob, n, prior,
                              p->prior_tau2 + (p->posterior_widen > 0 ? p->posterior_widen : 0.0),
                              &lambda) == 0) {
    out->method = KR_EST_POSTERIOR;
  } else if (p->use_last_modified && kr_est_lm(p, ob, n, prior, w, &lambda) == 0) {
    out->method = KR_EST_LM;
  } else {
    out->method = is_regular(ob, n, p->regular_tolerance) ? KR_EST_REGULAR : KR_EST_ML;
    if (kr_est_ml(ob, n, s, prior, w, &lambda) < 0) lambda = LAMBDA_MAX;
  }
  out->lambda = clampd(lambda, LAMBDA_MIN, LAMBDA_MAX);
}

const char *kr_est_method_name(kr_est_method_t m) {
  switch (m) {
  case KR_EST_PRIOR: return "prior";
  case KR_EST_REGULAR: return "regular";
  case KR_EST_ML: return "ml";
  case KR_EST_LM: return "last-modified";
  case KR_EST_POSTERIOR: return "posterior";
  }
  return "?";
}

/* ---- prior ---------------------------------------------------------------------- */

double kr_est_prior(const kr_est_params_t *p, int64_t initial_wait_ms,
                    const kr_est_hints_t *hints) {
  kr_est_params_t def;
  if (!p) {
    kr_est_params_default(&def);
    p = &def;
  }
  double x_min = p->x_min > 0 && isfinite(p->x_min) ? p->x_min : log(2.0);
  double wait_s = initial_wait_ms > 0 ? (double)initial_wait_ms / 1000.0 : 1000.0;
  double rate = x_min / wait_s;
  if (hints) {
    if (hints->changefreq_rate > 0 && isfinite(hints->changefreq_rate))
      rate = hints->changefreq_rate;
    double f = p->no_lm_factor;
    if (isfinite(f) && f >= 1.0) {
      if (hints->last_modified == 0) rate *= f;
      else if (hints->last_modified == 1) rate /= f;
    }
    if (hints->depth > 0 && p->depth_halving > 0 && isfinite(p->depth_halving))
      rate *= exp2(-(double)hints->depth / p->depth_halving);
  }
  return clampd(rate, LAMBDA_MIN, LAMBDA_MAX);
}

double kr_est_changefreq_rate(const char *s, size_t n) {
  static const struct {
    const char *name;
    double period_s;
  } tab[] = {
      {"always", 60.0},          {"hourly", 3600.0},          {"daily", 86400.0},
      {"weekly", 604800.0},      {"monthly", 2629800.0},      {"yearly", 31557600.0},
      {"never", 315576000.0},
  };
  if (!s) return 0.0;
  while (n && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    n--;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    size_t l = strlen(tab[i].name);
    if (l != n) continue;
    size_t j = 0;
    while (j < n && (s[j] | 0x20) == tab[i].name[j]) j++;
    if (j == n) return 1.0 / tab[i].period_s;
  }
  return 0.0;
}

/* ---- allocation ------------------------------------------------------------------- */

double kr_plan_h(double x) {
  if (!(x > 0)) return 0.0;
  if (x >= 1.0) return -expm1(-x) - x * exp(-x);
  /* below 1 the two terms cancel: sum the series
   * h = sum_{k>=2} (-1)^k (k-1) x^k / k!, alternating and falling */
  double p = x * x / 2, sum = p; /* p = x^k / k!, k = 2 */
  for (int k = 3; k < 40; k++) {
    p *= x / k;
    double term = (k - 1) * p;
    sum += (k & 1) ? -term : term;
    if (term < 1e-18 * sum) break;
  }
  return sum;
}

/* x in (lo, hi) with f(x) = y for a rising f with slope df, by Newton
 * steps kept inside the bracket (bisection when a step leaves it), from
 * the guess x; at most 100 steps. The inverses of h and g share it. */
static double newton_root(double (*f)(double), double (*df)(double), double y, double lo,
                          double hi, double x) {
  for (int it = 0; it < 100; it++) {
    double r = f(x) - y;
    if (r == 0) break;
    if (r < 0) lo = x;
    else hi = x;
    double d = df(x);
    double next = d > 0 ? x - r / d : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (fabs(next - x) <= 1e-15 * x || hi - lo <= 1e-15 * hi) {
      x = next;
      break;
    }
    x = next;
  }
  return x;
}

static double h_slope(double x) { return x * exp(-x); } /* h'(x) */

double kr_plan_h_inv(double y) {
  if (!(y > 0)) return 0.0;
  if (y >= 1.0) return INFINITY;
  double lo = 0, hi = 1;
  while (kr_plan_h(hi) < y) {
    lo = hi;
    hi *= 2;
    if (hi > 2048) return INFINITY; /* h(x) rounds to 1 well before */
  }
  double x = y < 0.5 ? sqrt(2 * y) : 0.5 * (lo + hi);
  if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
  return newton_root(kr_plan_h, h_slope, y, lo, hi, x);
}

double kr_plan_versions(double lambda, double f) {
  if (!(f > 0) || !(lambda > 0)) return 0.0;
  if (isinf(f)) return lambda;
  return -f * expm1(-lambda / f);
}

double kr_plan_freshness(double lambda, double f) {
  if (!(lambda > 0)) return 1.0;
  return kr_plan_versions(lambda, f) / lambda;
}

const char *kr_plan_objective_name(kr_plan_objective_t obj) {
  switch (obj) {
  case KR_PLAN_VERSIONS: return "versions";
  case KR_PLAN_FRESHNESS: return "freshness";
  case KR_PLAN_HARMONIC: return "harmonic";
  }
  return "?";
}

#define EULER_GAMMA 0.57721566490153286061

/* E1(x) for x > 1 by its continued fraction (modified Lentz):
 * E1(x) = e^-x / (x + 1 - 1/(x + 3 - 4/(x + 5 - ...))). */
static double e1_cf(double x) {
  double b = x + 1.0, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
  for (int i = 1; i < 200; i++) {
    double a = -(double)i * i;
    b += 2.0;
    d = 1.0 / (a * d + b);
    c = b + a / c;
    double del = c * d;
    h *= del;
    if (fabs(del - 1.0) < 1e-16) break;
  }
  return h * exp(-x);
}

double kr_plan_ein(double x) {
  if (!(x > 0)) return 0.0;
  if (x <= 4.0) { /* sum_k (-1)^(k+1) x^k / (k k!): terms stay below 3 */
    double p = 1.0, sum = 0;
    for (int k = 1; k < 80; k++) {
      p *= x / k; /* x^k / k! */
      double term = p / k;
      sum += (k & 1) ? term : -term;
      if (term < 1e-17 * sum) break;
    }
    return sum;
  }
  if (isinf(x)) return INFINITY;
  return EULER_GAMMA + log(x) + e1_cf(x);
}

double kr_plan_harmonic_x(double x) {
  if (!(x > 0)) return 0.0;
  if (isinf(x)) return INFINITY;
  if (x <= 4.0) { /* sum_k (-1)^(k+1) x^k / (k (k+1)!): no cancellation at 0 */
    double p = 1.0, sum = 0; /* p = x^k / (k+1)! */
    for (int k = 1; k < 80; k++) {
      p *= x / (k + 1);
      double term = p / k;
      sum += (k & 1) ? term : -term;
      if (term < 1e-17 * sum) break;
    }
    return sum;
  }
  return kr_plan_ein(x) - 1.0 - expm1(-x) / x;
}

double kr_plan_harmonic(double lambda, double f) {
  if (!(lambda > 0)) return 0.0;
  if (!(f > 0)) return INFINITY;
  return kr_plan_harmonic_x(lambda / f);
}

double kr_plan_g(double x) {
  if (!(x > 0)) return 0.0;
  if (x >= 0.5) return x + expm1(-x);
  double p = x, sum = 0; /* sum_k>=2 (-1)^k x^k / k! */
  for (int k = 2; k < 40; k++) {
    p *= x / k;
    sum += (k & 1) ? -p : p;
    if (p < 1e-18 * sum) break;
  }
  return sum;
}

static double g_slope(double x) { return -expm1(-x); } /* g'(x) */

double kr_plan_g_inv(double y) {
  if (!(y > 0)) return 0.0;
  if (isinf(y)) return INFINITY;
  /* g(x) <= x^2/2 and g(x) >= x - 1: the root lies in [sqrt(2y), y + 1] */
  double lo = sqrt(2 * y), hi = y + 1.0;
  if (lo > hi) lo = hi * 0.5;
  if (kr_plan_g(lo) > y) lo = 0; /* rounding */
  double x = y < 1 ? sqrt(2 * y) : y + 1.0 - exp(-(y + 1.0));
  if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
  return newton_root(kr_plan_g, g_slope, y, lo, hi, x);
}

/* The objective's inverse marginal: x with k(x) = y (h for versions and
 * freshness, g for harmonic). */
static double k_inv(kr_plan_objective_t obj, double y) {
  return obj == KR_PLAN_HARMONIC ? kr_plan_g_inv(y) : kr_plan_h_inv(y);
}
static double k_of(kr_plan_objective_t obj, double x) {
  return obj == KR_PLAN_HARMONIC ? kr_plan_g(x) : kr_plan_h(x);
}

static double clamp_f(double f, double fmin, double fmax) {
  if (!(f >= fmin)) f = fmin; /* also NaN */
  if (f > fmax) f = fmax;
  return f;
}

double kr_plan_freq(kr_plan_objective_t obj, double mu, double lambda, double fmin,
                     double fmax) {
  double y = obj == KR_PLAN_VERSIONS ? mu : mu * lambda;
  double x = k_inv(obj, y);
  double f = isinf(x) ? fmin : x > 0 ? lambda / x : fmax;
  return clamp_f(f, fmin, fmax);
}

static int items_ok(const kr_plan_item_t *it, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const kr_plan_item_t *e = &it[i];
    if (!(e->lambda > 0) || !isfinite(e->lambda) || !(e->fmin > 0) || !(e->fmax >= e->fmin) ||
        !isfinite(e->fmax) || !(e->weight >= 0) || !isfinite(e->weight))
      return 0;
  }
  return 1;
}

/* Versions objective: total frequency when every URI aims at x. */
static double total_at_x(const kr_plan_item_t *it, size_t n, double x) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += it[i].weight * clamp_f(it[i].lambda / x, it[i].fmin, it[i].fmax);
  return s;
}

static double total_at_mu(kr_plan_objective_t obj, const kr_plan_item_t *it, size_t n,
                          double mu) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += it[i].weight * kr_plan_freq(obj, mu, it[i].lambda, it[i].fmin, it[i].fmax);
  return s;
}

/* Versions objective solved in x (no h^-1 per URI). *x_out >= x_floor. */
static int solve_versions(const kr_plan_item_t *it, size_t n, double budget, double x_floor,
                          double *x_out) {
  double fmin_total = 0, x_all_min = 0, x_all_max = INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (it[i].weight == 0) continue;
    fmin_total += it[i].weight * it[i].fmin;
    double a = it[i].lambda / it[i].fmin; /* at or above: at fmin */
    double b = it[i].lambda / it[i].fmax; /* at or below: at fmax */
    if (a > x_all_min) x_all_min = a;
    if (b < x_all_max) x_all_max = b;
  }
  if (fmin_total == 0) { /* nothing to schedule */
    *x_out = x_floor;
    return KR_PLAN_SLACK;
  }
  double xlo = x_floor > 0 ? x_floor : x_all_max;
  if (total_at_x(it, n, xlo) <= budget) {
    *x_out = xlo;
    return KR_PLAN_SLACK;
  }
  if (fmin_total > budget) {
    *x_out = x_all_min > xlo ? x_all_min : xlo;
    return KR_PLAN_OVER;
  }
  double xhi = x_all_min > xlo ? x_all_min : xlo; /* total(xhi) = fmin_total <= budget */
  for (int i = 0; i < 200 && xhi / xlo - 1 > 1e-12; i++) {
    double mid = sqrt(xlo * xhi);
    if (total_at_x(it, n, mid) > budget) xlo = mid;
    else xhi = mid;
  }
  *x_out = xhi; /* the feasible side */
  return KR_PLAN_BINDS;
}

int kr_plan_solve(kr_plan_objective_t obj, const kr_plan_item_t *items, size_t n,
                   double budget, double mu_floor, double *mu, double *f) {
  if ((n && !items) || !mu || !items_ok(items, n) || !(budget >= 0) || isnan(budget))
    return KR_EINVAL;
  if (obj != KR_PLAN_VERSIONS && obj != KR_PLAN_FRESHNESS && obj != KR_PLAN_HARMONIC)
    return KR_EINVAL;
  int rc;
  if (obj == KR_PLAN_VERSIONS) {
    double fl = clampd(mu_floor, 0.0, 1.0);
    double x;
    rc = solve_versions(items, n, budget, fl > 0 ? kr_plan_h_inv(fl) : 0.0, &x);
    if (isinf(x)) x = 1e300;
    *mu = kr_plan_h(x);
    if (f)
      for (size_t i = 0; i < n; i++)
        f[i] = clamp_f(items[i].lambda / x, items[i].fmin, items[i].fmax);
    return rc;
  }
  /* freshness, harmonic: mu from "all at fmax" up to "all at fmin" */
  double mu_lo = INFINITY, mu_hi = 0, fmin_total = 0;
  for (size_t i = 0; i < n; i++) {
    if (items[i].weight == 0) continue;
    fmin_total += items[i].weight * items[i].fmin;
    double lo = k_of(obj, items[i].lambda / items[i].fmax) / items[i].lambda;
    double hi = obj == KR_PLAN_FRESHNESS
                    ? 1.0 / items[i].lambda
                    : 2 * kr_plan_g(items[i].lambda / items[i].fmin) / items[i].lambda;
    if (lo < mu_lo) mu_lo = lo;
    if (hi > mu_hi) mu_hi = hi;
  }
  if (fmin_total == 0) {
    *mu = 0;
    rc = KR_PLAN_SLACK;
  } else {
    if (!(mu_lo > 1e-300)) mu_lo = 1e-300;
    if (total_at_mu(obj, items, n, mu_lo) <= budget) {
      *mu = mu_lo;
      rc = KR_PLAN_SLACK;
    } else if (fmin_total > budget) {
      *mu = mu_hi;
      rc = KR_PLAN_OVER;
    } else {
      for (int i = 0; i < 200 && mu_hi / mu_lo - 1 > 1e-12; i++) {
        double mid = sqrt(mu_lo * mu_hi);
        if (total_at_mu(obj, items, n, mid) > budget) mu_lo = mid;
        else mu_hi = mid;
      }
      *mu = mu_hi;
      rc = KR_PLAN_BINDS;
    }
  }
  if (f)
    for (size_t i = 0; i < n; i++)
      f[i] = kr_plan_freq(obj, *mu, items[i].lambda, items[i].fmin, items[i].fmax);
  return rc;
}

double kr_plan_budget(int valence, int64_t politeness_delay_ms, double utilisation) {
  if (valence <= 0 || politeness_delay_ms <= 0) return 0.0;
  double u = utilisation > 0 && utilisation <= 1 ? utilisation : 1.0;
  return (double)valence * 1000.0 / (double)politeness_delay_ms * u;
}

/* ---- host ---------------------------------------------------------------------------- */

#define BUCKETS_PER_DECADE 8
#define LOG10_LAMBDA_LO (-9)

unsigned kr_plan_bucket(double lambda) {
  if (!(lambda > 0)) return 0;
  double b = floor((log10(lambda) - LOG10_LAMBDA_LO) * BUCKETS_PER_DECADE);
  if (!(b >= 0)) return 0;
  if (b >= KR_PLAN_BUCKETS) return KR_PLAN_BUCKETS - 1;
  return (unsigned)b;
}

double kr_plan_bucket_lambda(unsigned b) {
  if (b >= KR_PLAN_BUCKETS) b = KR_PLAN_BUCKETS - 1;
  return pow(10.0, ((double)b + 0.5) / BUCKETS_PER_DECADE + LOG10_LAMBDA_LO);
}

void kr_plan_host_init(kr_plan_host_t *h, double x_min) {
  memset(h, 0, sizeof *h);
  h->x_min = x_min > 0 && isfinite(x_min) ? x_min : log(2.0);
  h->x = h->x_min;
  h->state = KR_PLAN_SLACK;
  h->gain = 1.0;
}

int kr_plan_host_class(kr_plan_host_t *h, int64_t min_ms, int64_t max_ms) {
  for (unsigned i = 0; i < h->ncls; i++)
    if (h->cls[i].min_ms == min_ms && h->cls[i].max_ms == max_ms) return (int)i;
  if (h->ncls < KR_PLAN_CLASSES) {
    unsigned i = h->ncls++;
    h->cls[i].min_ms = min_ms;
    h->cls[i].max_ms = max_ms;
    return (int)i;
  }
  return KR_PLAN_CLASSES - 1;
}

/* The bucket of the class's counts nearest b that holds a URI (b when
 * it does; the faster of two at one distance); KR_PLAN_BUCKETS when none. */
static unsigned nearest_held(const uint32_t *count, unsigned b) {
  for (unsigned d = 0; d < KR_PLAN_BUCKETS; d++) {
    if (b + d < KR_PLAN_BUCKETS && count[b + d]) return b + d;
    if (d && d <= b && count[b - d]) return b - d;
  }
  return KR_PLAN_BUCKETS;
}

void kr_plan_host_update(kr_plan_host_t *h, int cls, double old_lambda, double new_lambda) {
  if (cls < 0 || (unsigned)cls >= h->ncls) return;
  int changed = 0;
  if (old_lambda > 0) {
    unsigned b = nearest_held(h->cls[cls].count, kr_plan_bucket(old_lambda));
    if (b < KR_PLAN_BUCKETS) {
      h->cls[cls].count[b]--;
      h->cls[cls].total--;
      changed = 1;
    }
  }
  if (new_lambda > 0) {
    uint32_t *c = &h->cls[cls].count[kr_plan_bucket(new_lambda)];
    if (*c < UINT32_MAX && h->cls[cls].total < UINT32_MAX) {
      (*c)++;
      h->cls[cls].total++;
      changed = 1;
    }
  }
  if (changed && h->updates < UINT32_MAX) h->updates++;
}

/* Freshness or harmonic. While every URI at x_min fits the budget the
 * host is slack and every URI aims at x_min, as with versions (mu = 0).
 * Otherwise mu by bisection between "all at fmax" and "all at fmin",
 * each URI at x_i = k^-1(mu lambda_i) with no floor: when the budget
 * binds every fetch is spent anyway, and a floor would keep the slowest
 * URIs below their share of it. */
static int solve_mu(kr_plan_host_t *h, const kr_plan_item_t *it, size_t n, double budget) {
  kr_plan_objective_t obj = h->objective;
  double fmin_total = 0, mu_lo = INFINITY, mu_hi = 0;
  for (size_t i = 0; i < n; i++) {
    fmin_total += it[i].weight * it[i].fmin;
    double lo = k_of(obj, it[i].lambda / it[i].fmax) / it[i].lambda; /* below: at fmax */
    double xa = it[i].lambda / it[i].fmin; /* at or above: at fmin */
    double hi = (obj == KR_PLAN_FRESHNESS ? 1.0 : 2 * k_of(obj, xa)) / it[i].lambda;
    if (lo < mu_lo) mu_lo = lo;
    if (hi > mu_hi) mu_hi = hi;
  }
  h->mu = 0;
  if (!n || total_at_x(it, n, h->x_min) <= budget) return KR_PLAN_SLACK;
  if (fmin_total > budget) {
    h->mu = INFINITY;
    return KR_PLAN_OVER;
  }
  if (!(mu_lo > 1e-300)) mu_lo = 1e-300;
  if (!(mu_hi > mu_lo)) mu_hi = mu_lo * 2;
  /* relative precision 1e-9 is plenty for a wait; ~40 steps */
  for (int i = 0; i < 200 && mu_hi / mu_lo - 1 > 1e-9; i++) {
    double mid = sqrt(mu_lo * mu_hi);
    if (total_at_mu(obj, it, n, mid) > budget) mu_lo = mid;
    else mu_hi = mid;
  }
  h->mu = mu_hi;
  return KR_PLAN_BINDS;
}

int kr_plan_host_solve(kr_plan_host_t *h, double budget) {
  kr_plan_item_t items[KR_PLAN_CLASSES * KR_PLAN_BUCKETS];
  size_t n = 0;
  h->solved = 1;
  h->updates = 0;
  h->resolve = 0;
  h->budget = budget;
  double g = h->gain >= KR_PLAN_GAIN_MIN && h->gain <= KR_PLAN_GAIN_MAX ? h->gain : 1.0;
  budget *= g;
  if (!(budget > 0) || !isfinite(budget)) {
    h->x = h->x_min;
    h->mu = 0;
    return h->state = KR_PLAN_SLACK;
  }
  for (unsigned c = 0; c < h->ncls; c++) {
    double fmin = h->cls[c].max_ms > 0 ? 1000.0 / (double)h->cls[c].max_ms : 1e-12;
    double fmax = h->cls[c].min_ms > 0 ? 1000.0 / (double)h->cls[c].min_ms : 1e3;
    if (fmax < fmin) fmax = fmin;
    for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) {
      if (!h->cls[c].count[b]) continue;
      items[n++] = (kr_plan_item_t){kr_plan_bucket_lambda(b), fmin, fmax,
                                     (double)h->cls[c].count[b]};
    }
  }
  if (h->objective == KR_PLAN_FRESHNESS || h->objective == KR_PLAN_HARMONIC)
    return h->state = solve_mu(h, items, n, budget);
  double x;
  h->state = solve_versions(items, n, budget, h->x_min, &x);
  h->x = x >= h->x_min && isfinite(x) ? x : h->x_min;
  h->x_fill = 0;
  if (h->state == KR_PLAN_SLACK && n) { /* what would spend the budget, no floor */
    double xf;
    solve_versions(items, n, budget, 0.0, &xf);
    if (xf > 0 && isfinite(xf)) h->x_fill = xf;
  }
  return h->state;
}

void kr_plan_host_set_objective(kr_plan_host_t *h, kr_plan_objective_t obj) {
  kr_plan_objective_t o =
      obj == KR_PLAN_FRESHNESS || obj == KR_PLAN_HARMONIC ? obj : KR_PLAN_VERSIONS;
  if (o != h->objective) h->resolve = 1; /* a reload changed it: solve again */
  h->objective = o;
}

double kr_plan_host_x_for(const kr_plan_host_t *h, double lambda) {
  if (h->objective == KR_PLAN_VERSIONS) return h->x;
  if (!(h->mu > 0) || !(lambda > 0)) return h->x_min; /* slack */
  return k_inv(h->objective, h->mu * lambda); /* may be below x_min, or +inf */
}

double kr_plan_host_slack_factor(const kr_plan_host_t *h, unsigned changes) {
  if (h->objective != KR_PLAN_VERSIONS || h->state != KR_PLAN_SLACK || !changes) return 1.0;
  double f = h->x_fill > 0 && h->x_min > 0 ? h->x_fill / h->x_min : KR_PLAN_SLACK_SPEND;
  if (!(f < KR_PLAN_SLACK_SPEND)) return KR_PLAN_SLACK_SPEND; /* NaN too */
  return f > KR_PLAN_SLACK_MIN ? f : KR_PLAN_SLACK_MIN;
}

int kr_plan_host_maybe_solve(kr_plan_host_t *h, double budget, uint32_t every) {
  int moved = !h->solved || (budget > 0) != (h->budget > 0) ||
              (budget > 0 && fabs(budget - h->budget) > 0.1 * h->budget);
  if (!moved && !h->resolve && h->updates < (every ? every : 1)) return 0;
  kr_plan_host_solve(h, budget);
  return 1;
}

void kr_plan_host_fetched(kr_plan_host_t *h, int64_t now_ms) {
  if (!h->win_n || now_ms < h->win_t0) { /* the window opens (or time went back) */
    h->win_t0 = now_ms;
    h->win_n = 1;
    return;
  }
  if (++h->win_n <= KR_PLAN_WINDOW) return;
  int64_t dt = now_ms - h->win_t0;
  double served = (double)(h->win_n - 1); /* in dt: the first opened it */
  h->win_t0 = now_ms;
  h->win_n = 1;
  if (dt <= 0 || !h->solved || !(h->budget > 0) || !isfinite(h->budget)) return;
  double realised = served * 1000.0 / (double)dt;
  double g = h->gain;
  if (h->state == KR_PLAN_SLACK)
    g = 1.0 + (g - 1.0) * 0.5; /* the budget does not bind: it says nothing */
  else
    g *= sqrt(h->budget / realised);
  if (!(g >= KR_PLAN_GAIN_MIN)) g = KR_PLAN_GAIN_MIN; /* NaN too */
  if (g > KR_PLAN_GAIN_MAX) g = KR_PLAN_GAIN_MAX;
  if (fabs(g - h->gain) > 0.005 * h->gain) h->resolve = 1;
  h->gain = g;
}

/* ---- capacity plan --------------------------------------------------------------------- */

void kr_capplan_update(kr_capplan_t *p, int64_t old_ms, int64_t new_ms) {
  int changed = 0;
  if (old_ms > 0) {
    double r = 1000.0 / (double)old_ms;
    unsigned b = kr_plan_bucket(r);
    if (p->count[b] > 0) {
      p->total--;
      /* an emptied bucket drops what rounding left in its sum */
      p->rate[b] = --p->count[b] ? fmax(p->rate[b] - r, 0.0) : 0.0;
      changed = 1;
    }
  }
  if (new_ms > 0) {
    double r = 1000.0 / (double)new_ms;
    unsigned b = kr_plan_bucket(r);
    if (p->count[b] < UINT32_MAX && p->total < UINT32_MAX) {
      p->count[b]++;
      p->rate[b] += r;
      p->total++;
      changed = 1;
    }
  }
  if (changed && p->updates < UINT32_MAX) p->updates++;
}

double kr_capplan_demand(const kr_capplan_t *p, int64_t floor_ms) {
  double cap = floor_ms > 0 ? 1000.0 / (double)floor_ms : INFINITY, d = 0;
  for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++)
    if (p->count[b]) d += fmin(p->rate[b], (double)p->count[b] * cap);
  return d;
}

void kr_capplan_solve(kr_capplan_t *p, double budget) {
  p->solved = 1;
  p->updates = 0;
  p->budget = budget;
  p->floor_ms = 0;
  if (!(budget > 0) || !isfinite(budget) || !p->total) return;
  if (kr_capplan_demand(p, 0) <= budget) return;
  /* demand(F) falls as F grows and is at most total / F: the floor lies in
   * (0, total / budget]. Bisection on log F, to well under a bucket. */
  double lo = log(1e-3), hi = log((double)p->total / budget) + 1e-9;
  if (!(hi > lo)) hi = lo;
  for (int i = 0; i < 60; i++) {
    double mid = 0.5 * (lo + hi);
    if (kr_capplan_demand(p, (int64_t)ceil(exp(mid) * 1000.0)) > budget)
      lo = mid;
    else
      hi = mid;
  }
  double f = ceil(exp(hi) * 1000.0);
  p->floor_ms = f < 9e18 ? (int64_t)f : INT64_MAX;
}

int kr_capplan_maybe_solve(kr_capplan_t *p, double budget, uint32_t every) {
  int moved = !p->solved || (budget > 0) != (p->budget > 0) ||
              (budget > 0 && fabs(budget - p->budget) > 0.1 * p->budget);
  if (!moved && p->updates < (every ? every : 1)) return 0;
  kr_capplan_solve(p, budget);
  return 1;
}
