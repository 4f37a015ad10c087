/*
 * Published revisit schedulers (see include/kria/sched.h for the math and
 * the sources): the LambdaCrawl family's rates and their solvers, then
 * Nutch's and StormCrawler's interval updates. Sections: LambdaCrawl,
 * its solvers, Nutch, StormCrawler.
 */
#include "kria/sched.h"

#include <math.h>

#include "kria/error.h"

/* ---- LambdaCrawl ------------------------------------------------------------ */

double kr_sched_penalty(kr_sched_penalty_t pen, double mu, double delta, double r) {
  if (!(delta > 0)) return 0.0;
  if (pen == KR_SCHED_BINARY) return r > 0 ? mu * delta / (delta + r) : mu;
  return r > 0 ? mu * log1p(delta / r) : INFINITY;
}

double kr_sched_rate(kr_sched_penalty_t pen, double mu, double delta, double L) {
  if (!(L > 0)) return INFINITY;
  if (!(delta > 0) || !(mu > 0)) return 0.0;
  if (pen == KR_SCHED_BINARY) {
    double r = sqrt(mu * delta / L) - delta;
    return r > 0 ? r : 0.0;
  }
  double c = mu * delta / L; /* r^2 + D r - c = 0 */
  return 2.0 * c / (delta + sqrt(delta * delta + 4.0 * c));
}

double kr_sched_rate_box(kr_sched_penalty_t pen, const kr_sched_item_t *it, double L) {
  double r = kr_sched_rate(pen, it->mu, it->delta, L);
  if (!(r >= it->fmin)) r = it->fmin; /* NaN too */
  if (r > it->fmax) r = it->fmax;
  return r;
}

/* ---- solvers ------------------------------------------------------------------ */

static int items_ok(const kr_sched_item_t *it, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const kr_sched_item_t *e = &it[i];
    if (!(e->delta > 0) || !isfinite(e->delta) || !(e->mu > 0) || !isfinite(e->mu) ||
        !(e->fmin >= 0) || !(e->fmax >= e->fmin) || !isfinite(e->fmax) || !(e->weight >= 0) ||
        !isfinite(e->weight))
      return 0;
  }
  return 1;
}

static double total(kr_sched_penalty_t pen, const kr_sched_item_t *it, size_t n, double L) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    if (it[i].weight > 0) s += it[i].weight * kr_sched_rate_box(pen, &it[i], L);
  return s;
}

/* L > 0 with total(L) = R, given total(0) = sum fmax > R > sum fmin:
 * bracket by doubling, then bisect in log L (total falls with L). */
static double solve_L(kr_sched_penalty_t pen, const kr_sched_item_t *it, size_t n, double R) {
  double lo = 1.0, hi = 1.0;
  for (int i = 0; i < 2100 && total(pen, it, n, lo) <= R; i++) lo *= 0.5;
  for (int i = 0; i < 2100 && total(pen, it, n, hi) > R; i++) hi *= 2.0;
  if (hi < lo) hi = lo;
  for (int i = 0; i < 200 && hi / lo - 1 > 1e-13; i++) {
    double mid = sqrt(lo * hi);
    if (total(pen, it, n, mid) > R) lo = mid;
    else hi = mid;
  }
  return hi; /* the feasible side: total <= R */
}

int kr_sched_solve(kr_sched_penalty_t pen, const kr_sched_item_t *it, size_t n, double R,
                   double *L, double *rate) {
  if ((n && !it) || !L || !items_ok(it, n) || !(R >= 0) || !isfinite(R)) return KR_EINVAL;
  if (pen != KR_SCHED_HARMONIC && pen != KR_SCHED_BINARY) return KR_EINVAL;
  double fmin_total = 0, fmax_total = 0;
  for (size_t i = 0; i < n; i++) {
    fmin_total += it[i].weight * it[i].fmin;
    fmax_total += it[i].weight * it[i].fmax;
  }
  int rc;
  if (fmax_total <= R) {
    *L = 0;
    rc = KR_SCHED_SLACK;
  } else if (fmin_total >= R) {
    *L = INFINITY;
    rc = KR_SCHED_OVER;
  } else {
    *L = solve_L(pen, it, n, R);
    rc = KR_SCHED_BINDS;
  }
  if (rate)
    for (size_t i = 0; i < n; i++) rate[i] = kr_sched_rate_box(pen, &it[i], *L);
  return rc;
}

/* The hosts' total at global multiplier L, each host at max(L, L_h). */
static double polite_total(kr_sched_penalty_t pen, const kr_sched_item_t *it, const size_t *start,
                           size_t nhosts, const double *hl, double L) {
  double s = 0;
  for (size_t h = 0; h < nhosts; h++)
    s += total(pen, it + start[h], start[h + 1] - start[h], L > hl[h] ? L : hl[h]);
  return s;
}

int kr_sched_solve_polite(kr_sched_penalty_t pen, const kr_sched_item_t *it,
                          const size_t *start, size_t nhosts, const double *host_R, double R,
                          double *L, double *host_L, double *rate) {
  if (!start || !L || (nhosts && !host_R) || start[0] != 0) return KR_EINVAL;
  size_t n = start[nhosts];
  if ((n && !it) || !items_ok(it, n)) return KR_EINVAL;
  for (size_t h = 0; h < nhosts; h++)
    if (start[h + 1] < start[h] || !(host_R[h] >= 0) || !isfinite(host_R[h])) return KR_EINVAL;
  double local[64], *hl = host_L ? host_L : nhosts <= 64 ? local : NULL;
  if (!hl) return KR_EINVAL; /* more than 64 hosts: give host_L */
  /* each host alone */
  for (size_t h = 0; h < nhosts; h++) {
    double lh;
    int rc = kr_sched_solve(pen, it + start[h], start[h + 1] - start[h], host_R[h], &lh, NULL);
    if (rc < 0) return rc;
    hl[h] = lh;
  }
  /* then the global multiplier */
  int rc = KR_SCHED_SLACK;
  *L = 0;
  if (R > 0 && isfinite(R) && polite_total(pen, it, start, nhosts, hl, 0) > R) {
    double fmin_total = 0;
    for (size_t i = 0; i < n; i++) fmin_total += it[i].weight * it[i].fmin;
    if (fmin_total >= R) {
      *L = INFINITY;
      rc = KR_SCHED_OVER;
    } else {
      double lo = 1.0, hi = 1.0;
      for (int i = 0; i < 2100 && polite_total(pen, it, start, nhosts, hl, lo) <= R; i++) lo *= 0.5;
      for (int i = 0; i < 2100 && polite_total(pen, it, start, nhosts, hl, hi) > R; i++) hi *= 2.0;
      if (hi < lo) hi = lo;
      for (int i = 0; i < 200 && hi / lo - 1 > 1e-13; i++) {
        double mid = sqrt(lo * hi);
        if (polite_total(pen, it, start, nhosts, hl, mid) > R) lo = mid;
        else hi = mid;
      }
      *L = hi;
      rc = KR_SCHED_BINDS;
    }
  }
  if (rate)
    for (size_t h = 0; h < nhosts; h++) {
      double m = *L > hl[h] ? *L : hl[h];
      for (size_t i = start[h]; i < start[h + 1]; i++) rate[i] = kr_sched_rate_box(pen, &it[i], m);
    }
  return rc;
}

/* ---- Nutch -------------------------------------------------------------------------- */

void kr_sched_nutch_default(kr_sched_nutch_params_t *p) {
  p->default_interval_s = 2592000.0;
  p->inc_rate = 0.4;
  p->dec_rate = 0.2;
  p->min_interval_s = 60.0;
  p->max_interval_s = 31536000.0;
  p->sync_delta = 1;
  p->sync_delta_rate = 0.3;
}

int64_t kr_sched_nutch_next(const kr_sched_nutch_params_t *p, kr_sched_nutch_t *d,
                            int64_t fetch_ms, int state) {
  /* Nutch's interval and rates are Java floats (conf.getFloat): the
   * arithmetic is single precision, as there, so the sequences match */
  float interval = d->interval_s > 0 ? (float)d->interval_s : (float)p->default_interval_s;
  int64_t ref = fetch_ms;
  int64_t modified = d->modified_ms > 0 ? d->modified_ms : fetch_ms;
  if (state == KR_SCHED_MODIFIED) {
    interval *= 1.0f - (float)p->dec_rate;
    modified = fetch_ms;
  } else if (state == KR_SCHED_NOTMODIFIED) {
    interval *= 1.0f + (float)p->inc_rate;
  }
  if (p->sync_delta) {
    /* whole seconds since the last change, as Nutch's long division */
    int64_t delta = (fetch_ms - modified) / 1000;
    if ((float)delta > interval) interval = (float)delta;
    ref = fetch_ms - llround((double)delta * (double)(float)p->sync_delta_rate * 1000.0);
  }
  if (interval < (float)p->min_interval_s) interval = (float)p->min_interval_s;
  else if (interval > (float)p->max_interval_s) interval = (float)p->max_interval_s;
  d->interval_s = interval;
  d->modified_ms = modified;
  return ref + llround((double)interval * 1000.0);
}

/* ---- StormCrawler ---------------------------------------------------------------------- */

void kr_sched_storm_default(kr_sched_storm_params_t *p) {
  p->default_min = 1440;
  p->min_min = 60;
  p->max_min = 20160;
  p->incr = 0.5f;
  p->decr = 0.5f;
}

int kr_sched_storm_next(const kr_sched_storm_params_t *p, kr_sched_storm_t *d, int first,
                        int changed) {
  if (first || d->interval_min <= 0) {
    /* the default scheduler's interval, recorded as the page's */
    d->interval_min = p->default_min;
    return d->interval_min;
  }
  int interval = d->interval_min;
  if (changed) {
    interval = (int)((1.0f - p->decr) * (float)interval + p->decr * (float)p->min_min);
  } else {
    interval = (int)((float)interval * (1.0f + p->incr));
    if (interval > p->max_min) interval = p->max_min;
  }
  d->interval_min = interval;
  return interval;
}
