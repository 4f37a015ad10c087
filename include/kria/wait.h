/*
 * Wait policies: how long to wait before the next visit of a URI, the
 * heart of adaptive revisiting. Pure: no loop, no database, no globals;
 * every function is a function of its arguments.
 *
 * One kr_wait_params_t is one wait evaluator, [wait "NAME"] in the config
 * (kr_cfg_wait_t), key for key:
 *   content-type      (matched by the config, not here)
 *   initial-wait      initial_ms
 *   default-wait      default_ms   (content state unknown)
 *   min-wait          min_ms
 *   max-wait          max_ms
 *   changed-factor    changed_factor
 *   unchanged-factor  unchanged_factor
 *   use-overdue-time  use_overdue
 *   policy            policy       (KR_WAIT_MULTIPLICATIVE | KR_WAIT_POISSON)
 *
 * multiplicative — the thesis' algorithm as its WaitEvaluator implemented
 * it (section 6.3.2), in this order:
 *   1. content state unknown          wait = default-wait
 *   2. no previous wait (first visit) wait = initial-wait
 *   3. otherwise                      w = previous wait
 *                                     (+ overdue when use-overdue-time)
 *      changed                        wait = w / changed-factor
 *      unchanged                      wait = w * unchanged-factor
 *   4. always                         clamp to [min-wait, max-wait]
 * Milliseconds are truncated toward zero after the factor, as Heritrix
 * did. A negative overdue (a URI issued before it was due: an embed
 * refreshed with its page, a feed pulling a page forward) counts as 0, so
 * being early never shortens a wait. Sums saturate instead of overflowing.
 *
 * poisson — see estimate.h for the math: the URI's change rate lambda is
 * estimated from its visit history (Cho & Garcia-Molina's estimators,
 * shrunk toward a prior built from initial-wait and the hints), and the
 * wait is x / lambda where x, the expected number of changes between two
 * visits, is the same for every URI of a host: the host's allocator
 * (kr_plan_host_t) raises it above its floor (ln 2 by default: a change
 * between visits with probability 1/2, the equilibrium of the
 * multiplicative policy with equal factors) only as far as needed to keep
 * the host's revisits within its politeness budget. Clamped to
 * [min-wait, max-wait]. A URI whose state is unknown now and that has
 * never had a known state gets default-wait, as in the multiplicative
 * policy; one with earlier observations keeps using them.
 */
#ifndef KRIA_WAIT_H
#define KRIA_WAIT_H

#include <stdint.h>

#include "kria/estimate.h"

/* Same values as the config's KR_CFG_POLICY_* choices. */
typedef enum kr_wait_policy {
  KR_WAIT_MULTIPLICATIVE = 0,
  KR_WAIT_POISSON = 1,
} kr_wait_policy_t;

typedef struct kr_wait_params {
  int64_t initial_ms;      /* initial-wait: after the first visit */
  int64_t default_ms;      /* default-wait: content state unknown */
  int64_t min_ms;          /* min-wait */
  int64_t max_ms;          /* max-wait */
  double changed_factor;   /* changed-factor: divide on change, >= 1 */
  double unchanged_factor; /* unchanged-factor: multiply otherwise, >= 1 */
  int use_overdue;         /* use-overdue-time: 0/1 */
  kr_wait_policy_t policy; /* policy */
} kr_wait_params_t;

struct kr_cfg_wait; /* include/kria/config.h */

/* The thesis' catch-all evaluator (Figure 12): initial 1000 s, default
 * 3 d, min 1000 s, max 28 d, factors 1.5, no overdue, with the default
 * policy, poisson (the thesis' was multiplicative). */
void kr_wait_params_default(kr_wait_params_t *p);
/* Copy one [wait "NAME"] evaluator as a config view sees it. */
void kr_wait_params_from_config(kr_wait_params_t *p, const struct kr_cfg_wait *w);
/* 0, or KR_EINVAL when a wait is not positive, min > max, a factor is
 * below 1 or not finite, or the policy is unknown. The wait functions
 * accept invalid params without crashing (factors below 1 or NaN act as
 * 1, min > max yields max) but their answers are then meaningless. */
int kr_wait_params_check(const kr_wait_params_t *p);

/* ms clamped to [min_ms, max_ms]. */
int64_t kr_wait_clamp(const kr_wait_params_t *p, int64_t ms);

/* The multiplicative policy (above). prev_wait_ms <= 0 means no previous
 * wait (first visit); overdue_ms is now - next_at when the URI was issued.
 * Returns the new wait in ms, within [min_ms, max_ms]. */
int64_t kr_wait_multiplicative(const kr_wait_params_t *p, int64_t prev_wait_ms,
                               kr_content_t state, int64_t overdue_ms);

/* What the poisson policy decided, for crawl.log and reports. */
typedef struct kr_wait_info {
  int64_t wait_ms;          /* the answer */
  double lambda;            /* estimated changes per second */
  double x;                 /* changes per visit aimed at */
  kr_est_method_t method;   /* estimator used (KR_EST_PRIOR: no data) */
  unsigned observations;    /* intervals with a known content state */
  unsigned changes;         /* of which changed */
  int clamped;              /* -1 at min-wait, 1 at max-wait, 0 inside */
  int used_default;         /* 1: unknown state, no data: default-wait */
  int64_t capped_from_ms;   /* multiplicative: the wait the capacity plan
                               raised (estimate.h); 0: not raised */
} kr_wait_info_t;

/* The poisson policy. h is the URI's history with this visit already
 * appended (kr_vhist_append); state is this visit's content state; hints
 * may be NULL; host_x is the host's changes-per-visit target from
 * kr_plan_host_x() (values below ep->x_min, including 0 when the host
 * has no allocator, mean ep->x_min). info may be NULL. Returns the wait
 * in ms within [min_ms, max_ms]. */
int64_t kr_wait_poisson(const kr_wait_params_t *p, const kr_est_params_t *ep,
                        const kr_vhist_t *h, kr_content_t state,
                        const kr_est_hints_t *hints, double host_x,
                        kr_wait_info_t *info);

/* kr_wait_poisson with the prior lambda0 given (changes/s, > 0: an
 * informed prior, include/kria/prior.h) instead of built from
 * initial-wait and the hints; its weight is ep->prior_weight. */
int64_t kr_wait_poisson_prior(const kr_wait_params_t *p, const kr_est_params_t *ep,
                              const kr_vhist_t *h, kr_content_t state, double prior,
                              double host_x, kr_wait_info_t *info);
/* kr_wait_poisson with the changes per visit from the host's allocator
 * for this URI's estimated rate (kr_plan_host_x_for: the host's
 * objective decides; versions gives exactly kr_wait_poisson(...,
 * kr_plan_host_x(host), ...)). host NULL: ep->x_min. */
int64_t kr_wait_poisson_host(const kr_wait_params_t *p, const kr_est_params_t *ep,
                             const kr_vhist_t *h, kr_content_t state,
                             const kr_est_hints_t *hints, const kr_plan_host_t *host,
                             kr_wait_info_t *info);
/* Both: the prior given (as kr_wait_poisson_prior) and x from the
 * host's allocator (as kr_wait_poisson_host). */
int64_t kr_wait_poisson_prior_host(const kr_wait_params_t *p, const kr_est_params_t *ep,
                                   const kr_vhist_t *h, kr_content_t state, double prior,
                                   const kr_plan_host_t *host, kr_wait_info_t *info);

/* Name of a policy ("multiplicative", "poisson"), "?" when unknown. */
const char *kr_wait_policy_name(kr_wait_policy_t policy);

#endif
