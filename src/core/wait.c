/*
 * Wait policies (see include/kria/wait.h): the thesis' multiplicative
 * algorithm, exactly as its WaitEvaluator applied it, and the poisson
 * policy, which turns the estimated change rate of estimate.c and the
 * host's changes-per-visit target into a wait. All arithmetic saturates:
 * no parameter or overdue, however hostile, can overflow a wait.
 * Sections: parameters, clamping, multiplicative, poisson.
 */
#include "kria/wait.h"

#include <math.h>

#include "kria/config.h"
#include "kria/error.h"

/* ---- parameters ---------------------------------------------------------- */

void kr_wait_params_default(kr_wait_params_t *p) {
  p->initial_ms = 1000 * INT64_C(1000);
  p->default_ms = 3 * 86400 * INT64_C(1000);
  p->min_ms = 1000 * INT64_C(1000);
  p->max_ms = 28 * 86400 * INT64_C(1000);
  p->changed_factor = 1.5;
  p->unchanged_factor = 1.5;
  p->use_overdue = 0;
  p->policy = KR_WAIT_POISSON; /* the schema's default (config.h) */
}

void kr_wait_params_from_config(kr_wait_params_t *p, const struct kr_cfg_wait *w) {
  p->initial_ms = w->initial_wait_ms;
  p->default_ms = w->default_wait_ms;
  p->min_ms = w->min_wait_ms;
  p->max_ms = w->max_wait_ms;
  p->changed_factor = w->changed_factor;
  p->unchanged_factor = w->unchanged_factor;
  p->use_overdue = w->use_overdue_time != 0;
  p->policy = w->policy == KR_CFG_POLICY_POISSON ? KR_WAIT_POISSON : KR_WAIT_MULTIPLICATIVE;
}

static int factor_ok(double f) { return isfinite(f) && f >= 1.0; }

int kr_wait_params_check(const kr_wait_params_t *p) {
  if (p->initial_ms <= 0 || p->default_ms <= 0 || p->min_ms <= 0 || p->max_ms <= 0)
    return KR_EINVAL;
  if (p->min_ms > p->max_ms) return KR_EINVAL;
  if (!factor_ok(p->changed_factor) || !factor_ok(p->unchanged_factor)) return KR_EINVAL;
  if (p->policy != KR_WAIT_MULTIPLICATIVE && p->policy != KR_WAIT_POISSON) return KR_EINVAL;
  return 0;
}

const char *kr_wait_policy_name(kr_wait_policy_t policy) {
  switch (policy) {
  case KR_WAIT_MULTIPLICATIVE: return "multiplicative";
  case KR_WAIT_POISSON: return "poisson";
  }
  return "?";
}

/* ---- clamping ---------------------------------------------------------------- */

int64_t kr_wait_clamp(const kr_wait_params_t *p, int64_t ms) {
  /* max first: with min > max (invalid) the answer is still bounded */
  if (ms < p->min_ms) ms = p->min_ms;
  if (ms > p->max_ms) ms = p->max_ms;
  return ms;
}

/* A double wait in ms to int64, truncated toward zero like Java's (long)
 * cast, saturated at the int64 range (NaN counts as 0). */
static int64_t ms_from_double(double ms) {
  if (!(ms == ms)) return 0;
  if (ms >= 9.2e18) return INT64_MAX;
  if (ms <= -9.2e18) return INT64_MIN;
  return (int64_t)ms;
}

static int64_t sat_add(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
  return a + b;
}

/* ---- multiplicative ----------------------------------------------------------- */

int64_t kr_wait_multiplicative(const kr_wait_params_t *p, int64_t prev_wait_ms,
                               kr_content_t state, int64_t overdue_ms) {
  int64_t w;
  if (state != KR_CONTENT_CHANGED && state != KR_CONTENT_UNCHANGED) {
    w = p->default_ms;
  } else if (prev_wait_ms <= 0) {
    w = p->initial_ms;
  } else {
    w = prev_wait_ms;
    if (p->use_overdue && overdue_ms > 0) w = sat_add(w, overdue_ms);
    if (state == KR_CONTENT_CHANGED) {
      double f = factor_ok(p->changed_factor) ? p->changed_factor : 1.0;
      w = ms_from_double((double)w / f);
    } else {
      double f = factor_ok(p->unchanged_factor) ? p->unchanged_factor : 1.0;
      w = ms_from_double((double)w * f);
    }
  }
  return kr_wait_clamp(p, w);
}

/* ---- poisson ------------------------------------------------------------------- */

/* Every entry point: the prior given, x from host when it is not NULL,
 * else host_x. */
static int64_t poisson(const kr_wait_params_t *p, const kr_est_params_t *ep, const kr_vhist_t *h,
                       kr_content_t state, double prior, const kr_plan_host_t *host,
                       double host_x, kr_wait_info_t *info) {
  kr_wait_info_t local;
  if (!info) info = &local;
  *info = (kr_wait_info_t){0};

  kr_est_result_t r;
  kr_est_rate(ep, h, prior, &r);
  info->lambda = r.lambda;
  info->method = r.method;
  info->observations = r.observations;
  info->changes = r.changes;

  if (state != KR_CONTENT_CHANGED && state != KR_CONTENT_UNCHANGED && r.observations == 0) {
    info->used_default = 1;
    info->wait_ms = kr_wait_clamp(p, p->default_ms);
    info->clamped = p->default_ms < p->min_ms ? -1 : p->default_ms > p->max_ms ? 1 : 0;
    return info->wait_ms;
  }

  double x;
  if (host && host->objective != KR_PLAN_VERSIONS) {
    /* the multiplier's x for this rate: below x_min when the budget binds */
    x = kr_plan_host_x_for(host, r.lambda);
    if (!(x >= 0)) x = host->x_min; /* NaN */
  } else {
    x = host ? kr_plan_host_x(host) : host_x;
    double x_min = ep->x_min > 0 && isfinite(ep->x_min) ? ep->x_min : log(2.0);
    if (!(x >= x_min)) x = x_min; /* also NaN */
    if (host) x *= kr_plan_host_slack_factor(host, r.changes); /* slack: to pages seen changing */
  }
  info->x = x;
  double ms = x / r.lambda * 1000.0; /* lambda > 0 always */
  int64_t w = ms_from_double(ms);
  info->wait_ms = kr_wait_clamp(p, w);
  info->clamped = w < p->min_ms ? -1 : w > p->max_ms ? 1 : 0;
  return info->wait_ms;
}

int64_t kr_wait_poisson(const kr_wait_params_t *p, const kr_est_params_t *ep,
                        const kr_vhist_t *h, kr_content_t state,
                        const kr_est_hints_t *hints, double host_x,
                        kr_wait_info_t *info) {
  return poisson(p, ep, h, state, kr_est_prior(ep, p->initial_ms, hints), NULL, host_x, info);
}

int64_t kr_wait_poisson_prior(const kr_wait_params_t *p, const kr_est_params_t *ep,
                              const kr_vhist_t *h, kr_content_t state, double prior,
                              double host_x, kr_wait_info_t *info) {
  return poisson(p, ep, h, state, prior, NULL, host_x, info);
}

int64_t kr_wait_poisson_host(const kr_wait_params_t *p, const kr_est_params_t *ep,
                             const kr_vhist_t *h, kr_content_t state,
                             const kr_est_hints_t *hints, const kr_plan_host_t *host,
                             kr_wait_info_t *info) {
  return poisson(p, ep, h, state, kr_est_prior(ep, p->initial_ms, hints), host, 0.0, info);
}

int64_t kr_wait_poisson_prior_host(const kr_wait_params_t *p, const kr_est_params_t *ep,
                                   const kr_vhist_t *h, kr_content_t state, double prior,
                                   const kr_plan_host_t *host, kr_wait_info_t *info) {
  return poisson(p, ep, h, state, prior, host, 0.0, info);
}
