/*
 * Informed priors: what a URI's neighbours say about its change rate
 * before its own history does. Pure: no loop, no database, no globals.
 *
 * ---- Groups ---------------------------------------------------------------
 * A pool (kr_prior_pool_t) belongs to one host and pools the evidence of
 * its URIs in three levels of groups:
 *   host      every URI of the host
 *   type      the URIs of one content type (media type, no parameters)
 *   template  the URIs of one path template (kr_prior_template): the path
 *             with numbers, dates, ids and slugs replaced by placeholders
 *             and the query reduced to its sorted keys, so /news/2024/05/
 *             31/some-story and /news/2023/12/01/other-story are one group
 * Each group holds samples of its URIs' log change rates, at most two
 * per URI, and what checks their Last-Modified:
 *   ages      a first visit's version age a (Date - Last-Modified): the
 *             live version's age at a random time is exponential with the
 *             page's rate, so -ln a - gamma (Euler's) is an unbiased
 *             sample of ln lambda with variance pi^2/6, from the very
 *             first visit. Not used once more than 10 % of the host's
 *             checked ages contradict the content (a changed page whose
 *             version is older than the interval, an unchanged one whose
 *             version is younger, an age below lm_min_age: "Last-Modified:
 *             now"), as the per-URI last-modified estimator refuses such
 *             ages, nor once 8 first-visit ages of the host spread by
 *             less than 0.5 in ln a (pages changing at random have
 *             exponential ages, spread by pi^2/6 at least: one date for
 *             every page is a template's or a deploy's). Until
 *             lm_verified changed revisits have ages that fit (the
 *             host's first pass: new URIs are served before any revisit,
 *             so waiting for verification would learn nothing from it),
 *             a prior from ages gives a first wait of at most
 *             unverified_wait (2 days): a server whose Last-Modified never
 *             moves looks like a static site until a revisit catches it;
 *             a day at most (unjudged_wait) while the host has fewer than
 *             8 ages, before one date for every page can be told from
 *             ages spread by changes. The longer bound spares the second
 *             pass the slow pages (`kria simulate`, bench/RESULTS.md
 *             "Learning fast, third step").
 *   histories the URI's own estimate (estimate.h kr_est_rate, pulled only
 *             weight_min toward the evaluator's prior) once, when its
 *             history first rests on min_obs observations: ln lambda_i
 *             with a sampling variance of about 2 / min_obs (one
 *             observation at x ~ ln 2 changes per visit carries Fisher
 *             information ~1/2 about ln lambda). min_obs 3: a host
 *             without usable ages learns its spread of rates within a
 *             day or two of its first pass (6 measured worse in `kria
 *             simulate` on every world, bench/RESULTS.md).
 *             Where a group has usable ages they replace its history
 *             samples, which depend on the intervals the policy chose (a
 *             page unchanged over six visits says only that its rate is
 *             below about one over them).
 *   members   URIs seen (their first visit)
 * Sums (count, sum, sum of squares, sampling noise) are kept, not the
 * samples, so a URI never has to be taken out again.
 *
 * ---- Estimate (kr_prior_estimate) -----------------------------------------
 * Normal model of log-rates, empirical Bayes down the hierarchy root ->
 * host -> type -> template. The root is the evaluator's prior (estimate.h
 * kr_est_prior: initial-wait and the hints) with a spread tau0^2 = 2 /
 * prior_weight (the weight it has for the per-URI estimator, below), its
 * centre set so that its mean rate is lambda0. A group with N samples of
 * mean l and variance s^2 (noise removed, at least 0.01) shrinks toward
 * its parent (m_p, tau_p^2), the parent worth group_k samples:
 *   m = (N l + k m_p) / (N + k),  tau^2 = (N s^2 + k tau_p^2) / (N + k)
 * (tau^2 from N >= 2). A URI's prior is its template group's (m, tau^2),
 * updated by its own first-visit age when ages are usable (normal
 * posterior), and given to the per-URI estimator as
 *   rate   exp(m + tau^2 / 2): the mean rate, the changes a URI of the
 *          group is expected to make (the median exp(m) is lower for a
 *          broad group; it measured slightly worse in kria simulate)
 *   tau2   the log-normal itself: the estimator judges a URI's first
 *          observations by the posterior mean under it (estimate.h
 *          "posterior"), so a class of near-equal pages (tau = 0.3)
 *          holds its URIs near the class and rates spread over three
 *          decades (tau^2 ~ 3.6) let each URI's history speak at once.
 *          Only while the host's first-visit ages are in use (0
 *          otherwise: the pseudo-observation prior alone): a log-normal
 *          fitted to history samples is censored by the intervals the
 *          policy chose (a page that changed at each of its first three
 *          visits says only that its rate is above about one over
 *          them), too narrow, and its tail held the fast pages back
 *          (`kria simulate`, all-lying world, first 3 days 0.876 ->
 *          0.882; bench/RESULTS.md "The first three days")
 *   weight 2 / tau^2 pseudo-observations (James-Stein: n_i observations
 *          give ln lambda_i a variance ~2 / n_i, so the group counts as
 *          2 / tau^2 of them), within [weight_min, weight_max], for the
 *          estimator once the posterior's observations are past:
 *          weight_max 0.5, since a log-normal fitted to the group can be
 *          far from a page in the group's tail (16 measured worse on the
 *          Weibull world of `kria simulate`, bench/RESULTS.md).
 * A URI whose visits carry no age (it sends no Last-Modified) in a
 * template whose URIs gave no age either is estimated as on a host
 * without usable ages: its groups speak through their history samples
 * alone (no posterior, no first-wait bound). Such a template's pages
 * are another population than the ones dated (generated pages; they
 * change about twice as often, thesis ch. 5): pooled from a site's
 * archive and images, whose dates are old, ages would give its dynamic
 * pages a day's wait before any of them was seen twice (the real-crawl
 * bench: the sections of `kria demo --pages 300`, a change every 30 s,
 * got the 240 s max-wait at their first visit). An undated URI in a
 * template of dated ones (a page that dropped its header) keeps the ages.
 * A pool that has learned nothing
 * gives the evaluator's prior and weight unchanged.
 *
 * ---- Bounds -----------------------------------------------------------------
 * At most KR_PRIOR_TYPES types and KR_PRIOR_TEMPLATES templates per host
 * (grown as needed, about 100 bytes each): a new one past the cap takes
 * the slot of the least recently observed. Group keys are 64-bit hashes
 * of the normalised strings (kr_prior_key), never 0. A group's sums halve
 * when it passes max_n samples (old evidence fades, the sums stay far
 * from overflow). Non-finite, negative or absurd inputs are ignored.
 *
 * ---- Pool format (kr_prior_pool_encode), version 1 --------------------------
 *   byte 0        0x01 (any other value is refused)
 *   u32 ntypes, u32 ntemplates  (little-endian, at most the caps)
 *   host stat     KR_PRIOR_STAT_FIELDS doubles (IEEE 754, little-endian)
 *   per type, then per template:  u64 key, then its stat
 * Stat fields in kr_prior_stat_t order. A decoded pool is refused
 * (KR_EINVAL, pool left empty) for a wrong version, a length other than
 * the counts imply, counts over the caps, a zero or repeated key, a
 * non-finite field or a negative one (the sums of log-rates aside).
 */
#ifndef KRIA_PRIOR_H
#define KRIA_PRIOR_H

#include <stddef.h>
#include <stdint.h>

#include "kria/estimate.h"

#define KR_PRIOR_VERSION 1
#define KR_PRIOR_TYPES 8
#define KR_PRIOR_TEMPLATES 32
#define KR_PRIOR_TEMPLATE_MAX 512 /* kr_prior_template output, NUL included */
#define KR_PRIOR_DEPTH 6          /* path segments kept */
#define KR_PRIOR_QUERY_KEYS 8     /* query keys kept */
#define KR_PRIOR_STAT_FIELDS 11

/* ---- Templates ---------------------------------------------------------- */

/* The template of a URL (absolute, or a path with its query), written NUL
 * terminated into out (cap > 0). Returns its length. Path segments:
 *   digits                     {n}     (/p/123, /2024/05/31)
 *   a date 2024-05-31 (or _)   {date}
 *   a UUID                     {id}
 *   8+ hex digits with a digit {id}
 *   letters and digits mixed, 6+ long, digits not only at the end
 *                              {id}    (abc123def)
 *   3+ words (- _ + %20) or longer than 32 bytes
 *                              {slug}
 *   percent-escaped non-ASCII  {slug}
 *   otherwise kept; digits ending a word become {n} (page10 -> page{n})
 * A short alphanumeric extension is kept lowercased (/img/{id}.png). At
 * most KR_PRIOR_DEPTH segments, then /{more}. The query keeps its keys,
 * sorted and deduplicated, without values (?id&page), at most
 * KR_PRIOR_QUERY_KEYS (then &{more}); the fragment is dropped. */
size_t kr_prior_template(const char *url, size_t n, char *out, size_t cap);
/* A group key: 64-bit hash of s, never 0. */
uint64_t kr_prior_key(const char *s, size_t n);
/* The key of a Content-Type value: its media type, lowercased, without
 * parameters or blanks; 0 for an empty one (no type group). */
uint64_t kr_prior_type_key(const char *ct, size_t n);

/* ---- Pools ------------------------------------------------------------- */

typedef struct kr_prior_params {
  double group_k;     /* samples a parent is worth (4) */
  double max_n;       /* samples before a group's sums halve (4096) */
  double weight_min;  /* a URI's prior weight, at least (0.25) */
  double weight_max;  /* and at most (0.5) */
  double min_obs;     /* observations of a URI's history sample (3) */
  double lm_verified; /* changed revisits whose ages fit, to verify (3) */
  double unverified_wait; /* s: the longest first wait unverified ages
                             may give once their spread is judged (2 d) */
  double unjudged_wait;   /* s: and before it is (86400) */
} kr_prior_params_t;

void kr_prior_params_default(kr_prior_params_t *pp);

typedef struct kr_prior_stat {
  double members;                   /* URIs seen */
  double h_n, h_sum, h_sq, h_noise; /* history samples of ln lambda */
  double a_n, a_sum, a_sq;          /* first-visit age samples */
  double lm_n, lm_bad, lm_chg;      /* revisit ages checked, contradicting,
                                       changed ones that fit */
} kr_prior_stat_t;

typedef struct kr_prior_group {
  uint64_t key;
  uint64_t used; /* the pool's tick when last observed */
  kr_prior_stat_t s;
} kr_prior_group_t;

typedef struct kr_prior_pool {
  kr_prior_stat_t host;
  kr_prior_group_t *types, *tmpls; /* grown up to the caps */
  unsigned ntypes, ntmpls, cap_types, cap_tmpls;
  uint64_t tick;
  uint64_t evicted; /* groups replaced at the caps */
} kr_prior_pool_t;

void kr_prior_pool_init(kr_prior_pool_t *p);
void kr_prior_pool_free(kr_prior_pool_t *p);

/* One visit of a URI of type/template (keys, 0: no such group) with h
 * its history, this visit appended (estimate.h). The first visit makes
 * the URI a member and gives its version age; a later one with a known
 * content state checks its Last-Modified age, and when h first rests on
 * min_obs observations the URI's own estimate is a sample. root_rate: the URI's lambda0 as for
 * kr_prior_estimate. ep gives the estimator and the Last-Modified checks
 * (lm_min_age_s, lm_slack_s). */
void kr_prior_observe(kr_prior_pool_t *p, const kr_prior_params_t *pp, const kr_est_params_t *ep,
                      uint64_t type, uint64_t tmpl, const kr_vhist_t *h, double root_rate);

typedef struct kr_prior_est {
  double rate;     /* the URI's prior, changes/s, > 0 */
  double weight;   /* its prior_weight */
  double evidence; /* samples the chain rests on (all levels) */
  int level;       /* deepest group with samples: 0 root, 1 host, 2 type, 3 template */
  double tau2;     /* the variance of ln lambda around it (log-normal); 0
                      when nothing was learned or no ages are in use */
} kr_prior_est_t;

/* The informed prior of a URI of type/template with history h (NULL:
 * none; its first visit's age is used when usable), from root_rate (the
 * evaluator's lambda0 with the hints) and default_weight (the configured
 * prior_weight). With nothing learned: root_rate and default_weight.
 * Always out->rate > 0. */
void kr_prior_estimate(const kr_prior_pool_t *p, const kr_prior_params_t *pp,
                       const kr_est_params_t *ep, uint64_t type, uint64_t tmpl,
                       const kr_vhist_t *h, double root_rate, double default_weight,
                       kr_prior_est_t *out);

/* Encode into out (cap bytes). Returns the length the pool needs: when
 * it is more than cap nothing useful was written (call with cap 0 to
 * size a buffer). */
size_t kr_prior_pool_encode(const kr_prior_pool_t *p, uint8_t *out, size_t cap);
/* Replace p's contents (p initialised) with the decoded pool. 0, or
 * KR_EINVAL (p then empty). Never reads past len. */
int kr_prior_pool_decode(kr_prior_pool_t *p, const uint8_t *in, size_t len);

#endif
