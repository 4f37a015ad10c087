/*
 * Change-rate estimation and revisit planning (kr_plan_*: how a host's
 * crawl rate is shared among its URIs) for the poisson wait policy, and
 * the per-URI visit history they read. Pure: no loop, no database, no
 * globals.
 *
 * ---- Model -------------------------------------------------------------
 * The changes of a URI form a Poisson process of rate lambda (changes per
 * second; Cho & Garcia-Molina, "Estimating frequency of change", ACM TOIT
 * 3(3), 2003). A visit only tells whether the content changed since the
 * previous visit (the change digest), and, when the server sends a
 * trustworthy Last-Modified, how old the version it sees is. The history
 * folds into observations (t_i, c_i, a_i): the interval since the
 * previous visit with a known content state, whether the content changed
 * in it, and the age of the version at the visit (Date - Last-Modified,
 * both server clock) when known. n observations, X of them changed.
 *
 * ---- Estimators ---------------------------------------------------------
 * naive         X / (n I)  (regular interval I): biased low, since several
 *               changes in one interval count once, and saturates at 1/I.
 * bias-reduced  -ln((n - X + 0.5) / (n + 0.5)) / I  (regular interval I):
 *               the MLE -ln(1 - X/n)/I with half a pseudo-interval without
 *               change, which keeps it finite at X = n and removes most of
 *               the small-n bias.
 * ML            irregular intervals: the log-likelihood
 *                 L = sum_c ln(1 - e^(-lambda t_i)) - lambda sum_u t_i
 *               (c: changed, u: unchanged) is concave with the stationary
 *               point sum_c t_i / (e^(lambda t_i) - 1) = sum_u t_i.
 *               kria adds s pseudo-intervals without change (smoothing,
 *               0.5) and the prior as w pseudo-intervals (prior_weight),
 *               all of the mean observed length T, of which a fraction
 *               p0 = 1 - e^(-lambda0 T) changed:
 *                 sum_c t_i/(e^(lambda t_i) - 1) + w p0 T/(e^(lambda T) - 1)
 *                     = sum_u t_i + s T + w (1 - p0) T
 *               The prior is thus worth w visits whatever the time scale
 *               (a Gamma prior in exposure time would outweigh dozens of
 *               short visits of a fast page). The left side falls
 *               strictly from +inf to 0 and the right side is positive
 *               when s > 0 or w p0 < w, so there is exactly one root, and
 *               X = 0 or X = n gives no infinity. Because x/(e^x - 1) lies
 *               in [1 - x/2, 1], the root lies in [K/(R + C/2), K/R] (K =
 *               X + w p0, R: right side, C: sum of the changed lengths);
 *               a safeguarded Newton iteration on ln(lambda) finds it in a
 *               few steps (bounded at 100). With regular intervals, w = 0
 *               and s = 0.5 the root is exactly the bias-reduced
 *               estimator, which the unit test checks.
 * last-modified with the age a_i of the version at each changed visit the
 *               likelihood is X ln(lambda) - lambda T, T = sum_c a_i +
 *               sum_u t_i (the time known to be free of change): MLE X/T.
 *               Small-sample correction X -> X - k, k = 1 + X/(n ln(1 -
 *               X/n)) (0 < X < n; k = 0 at X = 0, 1 at X = n): with few
 *               changed intervals T is nearly fixed and X/T unbiased; when
 *               every interval changed the a_i are exponential samples
 *               and (X - 1)/T is the unbiased one. This is the shape of
 *               Cho & Garcia-Molina's last-date-of-change estimator as we
 *               read it; test_estimate measures its error. With the
 *               prior as above (w pseudo-intervals, each changing with
 *               probability p0 and free of change for p0/lambda0 on
 *               average): lambda = (X - k + w p0) / (T + w p0/lambda0).
 *               Used only when every changed observation has an age in
 *               [lm_min_age_s, t_i + lm_slack_s] and no unchanged one has
 *               an age below t_i - lm_slack_s: a Last-Modified that is
 *               "now" on every visit (generated pages) or that does not
 *               move with the content is not evidence.
 * posterior    with an informed prior (prior.h: a log-normal of ln lambda,
 *               variance tau2, from the URI's host, type and template),
 *               the posterior mean of lambda, computed on a grid over the
 *               prior's +-6 standard deviations, with the last-modified
 *               likelihood X ln(lambda) - lambda T when the ages are
 *               usable and the intervals' one (above) otherwise. The
 *               pseudo-intervals above are worth w visits of the URI's
 *               own length whatever the spread of its group; the
 *               posterior weighs them by the group's spread: a page
 *               unchanged over U, in a host whose rates span decades, has
 *               most of its posterior far below 1 / U (its waits grow
 *               faster than doubling), a changed one in a group of slow
 *               pages is not taken for a fast page after one interval.
 *               The group's variance is widened by posterior_widen (1):
 *               it is fitted to noisy samples with their noise taken out,
 *               and real spreads of rates have heavier tails than a
 *               log-normal (measured: Weibull world +0.020 of the oracle
 *               over the first 3 days, cycles -0.007).
 *               Only for a URI's first posterior_obs (16) observations:
 *               the group is a log-normal fit, and a page faster than the
 *               group's tail would otherwise stay pinned to it (a page
 *               changing at every visit says only that its rate is above
 *               about one over the interval); `kria simulate` measured the
 *               posterior over all 64 visits at 0.73 of the oracle on the
 *               Weibull world against 0.96 over the first 16
 *               (bench/RESULTS.md "Learning fast, second step").
 * change of rate  (with an informed prior only) a page whose rate moved
 *               (a redesign, a feed that went quiet) mixes both rates in its
 *               64 visits for weeks. kr_est_shift splits the observations
 *               in two at the point where two rates explain them best and
 *               compares the log-likelihood (intervals: changed ln(1 -
 *               e^(-lambda t)), unchanged -lambda t; each side's maximum on
 *               a 16-point log grid refined by a parabola) with one rate's.
 *               Above shift_llr (12 nats) the estimate rests on the
 *               observations after the split only, and with few of them
 *               the posterior under the group's spread judges them: after
 *               a change the group is the right prior again. A split needs
 *               8 observations on each side and 3 days after it: swings of
 *               a day or a week (the cycles world) look like a change over
 *               a few days, and a page whose 64 visits span less than a
 *               few days forgets its old rate within days anyway.
 *               Where the ages are usable (as for last-modified below),
 *               kr_est_shift_lm tests instead on their likelihood, X ln
 *               lambda - lambda T, from prefix sums of X and T in closed
 *               form: a version an hour old at the end of a week's
 *               interval says "fast" where the intervals only say
 *               "changed", so it needs only 2 observations before the
 *               split and 1 after (3 days after it still): a slow page
 *               has few visits before its change and after it. The same
 *               12 nats (the unit tests' stationary and cyclic pages with
 *               ages stay below 9). The stored history is kept whole: the split is found again at
 *               every estimate (a false one goes as evidence comes), and
 *               the crawler and the simulator find the same one. The
 *               search takes ~4 us at 64 observations (bench/estimate:
 *               most grid points by a short series, not libm; ~8 us
 *               with libm at every point), the ML after it ~3 us. `kria
 *               simulate` (bench/RESULTS.md "A change of rate", 10 seeds):
 *               the shifting world 0.943 -> 0.952 of the oracle over 30
 *               days, the stationary ones within +-0.0001; without the
 *               bound in time the cycles world lost 0.012. With the ages'
 *               test ("A change of rate, from the ages"): 0.950 -> 0.956.
 * Choice (kr_est_rate): no observation -> the prior; an informed prior
 * and a change of rate -> the observations after it; an informed prior
 * and at most posterior_obs observations -> posterior; usable
 * Last-Modified -> last-modified; intervals within regular_tolerance of
 * their mean -> "regular" (the ML equation, i.e. bias-reduced with the
 * prior); otherwise ML.
 *
 * ---- Prior (initial wait hints) -----------------------------------------
 * lambda0 = x_min / initial-wait: a URI without history is assumed to
 * change with probability 1/2 during initial-wait (x_min = ln 2), so with
 * a budget to spare its first wait is initial-wait, as in the
 * multiplicative policy. A sitemap changefreq replaces initial-wait by
 * its period. Hints multiply lambda0: no Last-Modified header x
 * no_lm_factor, a Last-Modified header / no_lm_factor (sqrt 2 each way:
 * pages without it change about twice as often, thesis ch. 5 after
 * Brewington & Cybenko); depth d hops from a seed x 2^(-d/depth_halving)
 * when depth_halving > 0.
 *
 * ---- Allocation within a host's politeness budget -----------------------
 * Visiting at frequency f (regular interval 1/f), a visit captures a new
 * version iff at least one change happened since the previous one, so the
 * versions captured per second are
 *     V(lambda, f) = f (1 - e^(-lambda/f)),
 * and V/lambda = (1 - e^(-x))/x (x = lambda/f, the expected changes per
 * visit) is both the capture ratio and Cho's time-averaged freshness F.
 * The host allows B fetches per second (valence / (fetch + politeness
 * delay), times adaptive.budget-utilisation, 1 by default: the share of
 * its capacity the host's fetches should actually take, which the
 * realised-rate feedback below makes them take). kria maximises sum_i V_i
 * subject to
 * sum_i f_i <= B and f_i in [1/max-wait_i, 1/min-wait_i].
 *     dV/df = h(lambda/f),  h(x) = 1 - (1 + x) e^(-x),
 * h rises from 0 to 1, so V is concave in f and the KKT conditions say
 * h(lambda_i/f_i) = mu for every unclamped URI: x_i = h^-1(mu) is the SAME
 * for all of them, f_i = lambda_i / x. The optimum for captured versions
 * is thus proportional to lambda (and clamped). When the budget does not
 * bind, mu stays at its floor h(x_min): a fetch must have a marginal
 * value of at least h(ln 2) = 0.153 versions (without a floor every URI
 * would sit at min-wait); a URI seen changing aims below it while the
 * budget is spare, as far as the spare goes and at most to half of it
 * (kr_plan_host_slack_factor).
 * Objective KR_PLAN_FRESHNESS maximises sum_i F_i instead (Cho &
 * Garcia-Molina, "Synchronizing a database to improve freshness", 2000):
 * dF/df = h(lambda/f)/lambda = mu gives x_i = h^-1(mu lambda_i), which
 * grows with lambda_i and has no solution when mu lambda_i >= 1: very
 * fast-changing URIs get less than proportional frequency, down to their
 * minimum. It has no floor (the budget is always spent).
 * Objective KR_PLAN_HARMONIC minimises the harmonic staleness of
 * Kolobov et al. (NeurIPS 2019): the archive's copy N changes behind
 * costs H(N) = 1 + 1/2 + ... + 1/N. Their closed form, ln(1 + lambda/f),
 * is for a Poisson crawl; kria revisits at REGULAR intervals, so here it
 * is derived for those. t after a visit N is Poisson(lambda t), and
 *     E[H(Poisson(m))] = Ein(m) = int_0^m (1 - e^-u)/u du
 * (d/dm E[g(N)] = E[g(N+1) - g(N)] = E[1/(N+1)] = (1 - e^-m)/m, 0 at 0).
 * Averaged over an interval, x = lambda/f:
 *     P(x) = (1/x) int_0^x Ein(u) du = Ein(x) - 1 + (1 - e^-x)/x
 *          = sum_k>=1 (-1)^(k+1) x^k / (k (k+1)!)   (x/2 for small x)
 * (by parts: int_0^x Ein = x Ein(x) - int_0^x (1 - e^-u) du). The cost of
 * a URI visited at f is P(lambda/f), and dP(lambda/f)/df = -g(x)/lambda
 * with
 *     g(x) = x^2 P'(x) = x Ein(x) - int_0^x Ein = x - 1 + e^-x,
 * which rises from 0 to +inf: the KKT conditions say g(x_i) = mu lambda_i.
 * Like freshness, faster-changing URIs get larger x (less than
 * proportional frequency), but g is unbounded, so no URI is starved down
 * to its minimum: each missed change costs less than the previous one,
 * but never nothing. (Poisson crawling gives r (r + lambda) = lambda/mu,
 * a different curve; the regular form is the one kria's visits obey.)
 * The three are solved by bisection on mu (f_total(mu) is
 * non-increasing), each URI's f by h^-1 or g^-1 (safeguarded Newton).
 * Per host (kr_plan_host_t), versions keeps the one x of today, floor
 * x_min included. Freshness and harmonic keep mu, and each URI's x is
 * h^-1(mu lambda_i) or g^-1(mu lambda_i) (kr_plan_host_x_for). While
 * every URI at x_min fits the budget they are slack like versions (mu
 * 0, every URI at x_min: a fetch must expect at least ln 2 changes);
 * once it binds there is no floor, since every fetch is spent anyway
 * and a floor keeps the slowest URIs below their share: `kria simulate`
 * (20,000 URIs on 10 hosts, 21 days, 10 s politeness, poisson with
 * the harmonic objective) measured a harmonic penalty of 0.288 with the
 * floor and 0.223 without it (LambdaCrawl's 0.228; bench/RESULTS.md).
 * Incremental form: a host keeps a sketch of its URIs' lambdas (counts
 * in 80 log-spaced buckets, 8 per decade from 1e-9 to 10 changes/s, per
 * (min-wait, max-wait) class, at most 4 classes) updated as estimates
 * move, and re-solves mu from it every N completions or when its budget
 * moves (kr_plan_host_maybe_solve, ~100 us). A URI's wait is then O(1):
 * clamp(x / lambda_i).
 * Feed the sketch only estimates that rest on an observation
 * (kr_wait_info_t.observations > 0). A URI at its prior counts at the
 * initial-wait's rate (the thesis' 20 s for text: a change every 29 s),
 * which inflates x while the first crawl is still learning; every URI
 * learned meanwhile then gets x / lambda_i of weeks and stays away.
 * `kria simulate` measured it (2,000 pages, one host at 0.1 fetch/s,
 * rates 1 h..30 d): fed from the first visit, poisson captured 0.39x the
 * versions of multiplicative; fed once observed, 1.04x.
 *
 * ---- Visit history (persisted: uris.history) ----------------------------
 * Format version 1, at most KR_VHIST_BYTES bytes:
 *   byte 0      0x01 (format version; any other value is refused)
 *   then one entry per visit, OLDEST FIRST, at most KR_VHIST_MAX:
 *     varint    v = interval_s << 3 | has_age << 2 | state
 *               interval_s: whole seconds since the previous visit
 *               (0: first visit ever), at most 2^40; state: 0 unchanged,
 *               1 changed, 2 unknown (3 is invalid)
 *     varint    age_s, present iff has_age: Date - Last-Modified in
 *               seconds at this visit, at most 2^40
 * varint = unsigned LEB128 (7 bits per byte, low first, high bit = more),
 * at most 7 bytes here, no overlong encodings (a final 0x00 byte after
 * the first is refused), so an entry takes 1 to 13 bytes (typically 4:
 * intervals of hours to weeks). An empty BLOB is an empty history. An unknown
 * visit's interval adds to the next known one's observation (its change
 * state is judged against the last known digest). When a new visit does
 * not fit (count or bytes) the oldest ones are dropped.
 */
#ifndef KRIA_ESTIMATE_H
#define KRIA_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

/* Content state of a visit, as the change processor decides it. Values
 * as in the history format (and the store's). */
typedef enum kr_content {
  KR_CONTENT_UNCHANGED = 0, /* same change digest as the previous visit */
  KR_CONTENT_CHANGED = 1,   /* a different one; a first visit's version */
  KR_CONTENT_UNKNOWN = 2,   /* no digest to compare (DNS, errors) */
} kr_content_t;

/* ---- Visit history ------------------------------------------------------ */

/* 64 visits: at the budget's ~1 change per visit an estimate from n
 * observations has var(ln lambda) ~ 1.8 / n, and a wait off by a factor
 * e^eps loses ~0.28 eps^2 of a URI's versions, so a memory of 32 visits
 * costs ~1.6 % of the versions for ever; 64 halves that (kria simulate,
 * bench/RESULTS.md "Learning fast"). A history of more than 32 entries is
 * refused by kria before this change (the URI starts afresh there). */
#define KR_VHIST_VERSION 1
#define KR_VHIST_MAX 64     /* visits kept */
#define KR_VHIST_BYTES 512  /* hard cap of the encoding */
#define KR_VHIST_MAX_SECONDS (INT64_C(1) << 40)

typedef struct kr_vhist_visit {
  int64_t interval_s; /* since the previous visit, rounded up to >= 1 s;
                         0 only for the first visit ever */
  kr_content_t state;
  int64_t age_s;      /* Date - Last-Modified at this visit; -1 unknown */
} kr_vhist_visit_t;

typedef struct kr_vhist {
  unsigned n;                         /* visits held */
  kr_vhist_visit_t v[KR_VHIST_MAX];   /* oldest first */
} kr_vhist_t;

static inline void kr_vhist_init(kr_vhist_t *h) { h->n = 0; }
/* Decode len bytes (len 0: empty history). 0, or KR_EINVAL for a wrong
 * version, a truncated or overlong varint, a value out of range, more than
 * KR_VHIST_MAX entries or more than KR_VHIST_BYTES bytes; *h is then
 * empty. Never reads past len. */
int kr_vhist_decode(kr_vhist_t *h, const uint8_t *p, size_t len);
/* Encode into out (cap bytes, at least 1), dropping the oldest visits
 * until the rest fits in min(cap, KR_VHIST_BYTES). Returns the length
 * written. Out-of-range fields are clamped (negative interval: 0; age
 * beyond the limit: unknown). */
size_t kr_vhist_encode(const kr_vhist_t *h, uint8_t *out, size_t cap);
/* Append a visit, dropping the oldest when KR_VHIST_MAX are held. */
void kr_vhist_append(kr_vhist_t *h, const kr_vhist_visit_t *v);
/* Decode old (a damaged one counts as empty and sets *damaged when
 * damaged is not NULL), append v, encode into out. Returns the length. */
size_t kr_vhist_push(const uint8_t *old, size_t old_len, const kr_vhist_visit_t *v,
                     uint8_t out[KR_VHIST_BYTES], int *damaged);
/* kr_vhist_push, and *h the history as kr_vhist_decode(out) would give
 * it, without decoding out again (the wait policies read it). */
size_t kr_vhist_push_read(const uint8_t *old, size_t old_len, const kr_vhist_visit_t *v,
                          uint8_t out[KR_VHIST_BYTES], int *damaged, kr_vhist_t *h);

/* One observation: an interval ending at a visit with a known state. */
typedef struct kr_est_obs {
  double t;     /* seconds since the previous visit with a known state */
  int changed;  /* 0/1 */
  double age;   /* age of the version seen (changed visits), < 0 unknown */
} kr_est_obs_t;

/* Fold h into observations (at most max). Returns the number written. */
size_t kr_vhist_observations(const kr_vhist_t *h, kr_est_obs_t *out, size_t max);

/* ---- Estimators --------------------------------------------------------- */

typedef enum kr_est_method {
  KR_EST_PRIOR = 0, /* no observation: the prior */
  KR_EST_REGULAR,   /* regular intervals: bias-reduced (with the prior) */
  KR_EST_ML,        /* irregular intervals: maximum likelihood (MAP) */
  KR_EST_LM,        /* Last-Modified ages */
  KR_EST_POSTERIOR, /* the posterior mean under a log-normal prior */
} kr_est_method_t;

typedef struct kr_est_params {
  double prior_weight;      /* w: pseudo-changes the prior is worth (1) */
  double smoothing;         /* s: pseudo-intervals without change (0.5) */
  double regular_tolerance; /* intervals within this fraction of their
                               mean are regular (0.1) */
  int use_last_modified;    /* try the last-modified estimator (1) */
  double lm_min_age_s;      /* a younger version is "Last-Modified: now" (2) */
  double lm_slack_s;        /* clock slack allowed against t_i (60) */
  double no_lm_factor;      /* prior x this without Last-Modified, / with (sqrt 2) */
  double depth_halving;     /* prior halves every this many hops (0: off) */
  double x_min;             /* changes per visit when the budget is slack (ln 2) */
  double prior_tau2;        /* > 0: the prior is log-normal, ln lambda with this
                               variance (an informed prior, prior.h), and a
                               URI's first posterior_obs observations are
                               judged by the posterior mean; 0: off (0) */
  double posterior_obs;     /* (16) */
  double posterior_widen;   /* added to tau2 for the posterior (1) */
  double shift_llr;         /* with an informed prior: a change of rate whose
                               log-likelihood ratio exceeds this leaves the
                               observations before it out (12); 0 off */
} kr_est_params_t;

void kr_est_params_default(kr_est_params_t *p);

typedef struct kr_est_hints {
  int last_modified;      /* 1 the response had Last-Modified, 0 not, -1 unknown */
  double changefreq_rate; /* from a sitemap changefreq (changes/s), 0 none */
  int depth;              /* hops from the seed, < 0 unknown */
} kr_est_hints_t;

/* Hints that say nothing. */
static inline kr_est_hints_t kr_est_hints_none(void) {
  kr_est_hints_t h = {-1, 0.0, -1};
  return h;
}

/* X / (n I). 0 when n = 0 or I <= 0. */
double kr_est_naive(unsigned n, unsigned x, double interval_s);
/* -ln((n - X + 0.5)/(n + 0.5)) / I. 0 when n = 0 or I <= 0; X > n acts
 * as X = n. */
double kr_est_bias_reduced(unsigned n, unsigned x, double interval_s);
/* The ML root above over n observations (ages ignored). prior_rate
 * lambda0 > 0 when prior_weight > 0. 0 with *lambda, or KR_EINVAL when
 * the equation has no finite positive root (every interval changed with
 * s = w = 0: the pure MLE is infinite) or an argument is invalid. X = 0
 * with w = 0 gives 0; n = 0 with w > 0 gives lambda0. */
int kr_est_ml(const kr_est_obs_t *o, size_t n, double smoothing, double prior_rate,
              double prior_weight, double *lambda);
/* The last-modified estimator above (validity checks included, params
 * from p). 0 with *lambda, KR_EINVAL when the ages are unusable. */
int kr_est_lm(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n,
              double prior_rate, double prior_weight, double *lambda);
/* The posterior mean of lambda over n observations under a log-normal
 * prior: ln lambda normal with variance tau2 and mean rate prior_rate
 * (> 0); the likelihood of the last-modified estimator when the ages are
 * usable, of changed and unchanged intervals otherwise. Numerically, on
 * a grid over the prior's +-6 standard deviations. 0 with *lambda, or
 * KR_EINVAL for invalid arguments. */
int kr_est_posterior(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n,
                     double prior_rate, double tau2, double *lambda);
/* The posterior mean of lambda under a discrete prior: g rates rate[j]
 * >= 0 (changes/s; 0 is a page that never changes) with log-weights
 * logw[j] (unnormalised; -inf: none), given n observations and, when
 * ages is 1, their Last-Modified ages taken as exact: a changed interval
 * with an age a in [0, t] has the likelihood lambda e^(-lambda a) (its
 * last change a before the visit), without an age 1 - e^(-lambda t); an
 * unchanged one e^(-lambda t). first_age >= 0 is the age of the version
 * at the URI's first visit (with ages): the time back to its birth,
 * lambda e^(-lambda a) too; < 0 unknown. The exact Bayes estimate when
 * the prior is the population's rates (the simulator's `bayes`
 * reference). O(g n). 0 with *lambda, or KR_EINVAL for invalid
 * arguments, more than KR_VHIST_MAX changed intervals without an age,
 * or when no rate of the prior explains the observations. */
int kr_est_posterior_discrete(const kr_est_obs_t *o, size_t n, int ages, double first_age,
                              const double *rate, const double *logw, size_t g,
                              double *lambda);
/* The change-of-rate test above: the log-likelihood ratio of the best
 * split of o into two rates against one rate (at least 8 observations on
 * each side, 3 days after); *split the observations before it (0 and 0
 * when no split qualifies). */
double kr_est_shift(const kr_est_obs_t *o, size_t n, size_t *split);
/* The same test on the last-modified likelihood x ln lambda - lambda T
 * (sufficient statistics, closed form) when o's ages are usable as
 * kr_est_lm uses them (params from p): at least 2 observations before
 * the split, 1 after it and 3 days after it. The ratio with *split, or
 * -1 (and *split 0) when the ages are not usable. */
double kr_est_shift_lm(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n, size_t *split);
/* The observations a change of rate leaves out of o, as kr_est_rate
 * judges it: the ages' test where p uses them and they are usable, else
 * the intervals' test; 0 when neither ratio passes p->shift_llr (or it is
 * 0). The simulator's bayes reference leaves out the same. */
size_t kr_est_split(const kr_est_params_t *p, const kr_est_obs_t *o, size_t n);
/* The prior lambda0 (changes/s) of a URI whose evaluator has
 * initial_wait_ms, with hints (NULL: none). Always > 0. */
double kr_est_prior(const kr_est_params_t *p, int64_t initial_wait_ms,
                    const kr_est_hints_t *hints);
/* A sitemap changefreq value (always, hourly, daily, weekly, monthly,
 * yearly, never; ASCII case-insensitive, surrounding blanks ignored) as a
 * rate in changes/s; 0 for anything else. "always" is one change a
 * minute, "never" one in ten years: the wait clamps do the rest. */
double kr_est_changefreq_rate(const char *s, size_t n);

typedef struct kr_est_result {
  double lambda;          /* changes per second, > 0 */
  kr_est_method_t method;
  unsigned observations;  /* n */
  unsigned changes;       /* X */
  unsigned dropped;       /* older observations left out: a change of rate */
} kr_est_result_t;

/* Estimate a URI's change rate from its history, shrunk toward
 * prior_rate (> 0). Always succeeds; out->lambda > 0. */
void kr_est_rate(const kr_est_params_t *p, const kr_vhist_t *h, double prior_rate,
                 kr_est_result_t *out);
const char *kr_est_method_name(kr_est_method_t m);

/* ---- Allocation ---------------------------------------------------------- */

typedef enum kr_plan_objective {
  KR_PLAN_VERSIONS = 0,  /* expected versions captured per second */
  KR_PLAN_FRESHNESS = 1, /* Cho's average freshness */
  KR_PLAN_HARMONIC = 2,  /* harmonic staleness at regular visits (above) */
} kr_plan_objective_t;
#define KR_PLAN_OBJECTIVES 3

/* "versions", "freshness", "harmonic"; "?" when unknown. Same order as
 * the config's adaptive.objective choices. */
const char *kr_plan_objective_name(kr_plan_objective_t obj);

/* h(x) = 1 - (1 + x) e^-x, accurate for small x too; h(x <= 0) = 0. */
double kr_plan_h(double x);
/* x >= 0 with h(x) = y; 0 for y <= 0, +inf for y >= 1 (or so close to 1
 * that no double x reaches it). */
double kr_plan_h_inv(double y);
/* V(lambda, f) = f (1 - e^-(lambda/f)); 0 when f <= 0. */
double kr_plan_versions(double lambda, double f);
/* F(lambda, f) = V / lambda; 1 for lambda <= 0. */
double kr_plan_freshness(double lambda, double f);
/* Ein(x) = int_0^x (1 - e^-u)/u du = gamma + ln x + E1(x); 0 for x <= 0. */
double kr_plan_ein(double x);
/* P(x) above: the time-averaged E[H(N)] between regular visits with x
 * expected changes per interval; 0 for x <= 0, +inf for x = +inf. */
double kr_plan_harmonic_x(double x);
/* P(lambda/f): a URI's harmonic staleness visited at f (f <= 0: +inf). */
double kr_plan_harmonic(double lambda, double f);
/* g(x) = x - 1 + e^-x (0 for x <= 0), and its inverse (0 for y <= 0). */
double kr_plan_g(double x);
double kr_plan_g_inv(double y);
/* A URI's optimal frequency for multiplier mu, clamped to [fmin, fmax]. */
double kr_plan_freq(kr_plan_objective_t obj, double mu, double lambda, double fmin,
                     double fmax);

typedef struct kr_plan_item {
  double lambda;  /* changes/s, > 0 */
  double fmin;    /* 1 / max-wait (fetches/s) */
  double fmax;    /* 1 / min-wait */
  double weight;  /* how many URIs it stands for (1; sketch buckets: counts) */
} kr_plan_item_t;

enum {
  KR_PLAN_SLACK = 0, /* the budget does not bind: mu at its floor */
  KR_PLAN_BINDS = 1, /* sum f = budget */
  KR_PLAN_OVER = 2,  /* even every URI at max-wait exceeds the budget */
};

/* Solve for mu: sum weight_i f_i(mu) <= budget with the objective's
 * optimum. mu_floor: the versions floor h(x_min) (ignored for
 * freshness). f (may be NULL) receives each item's frequency. Returns
 * KR_PLAN_SLACK/BINDS/OVER, or KR_EINVAL for bad arguments (n = 0 is
 * SLACK). O(n) per bisection step, 200 steps at most. */
int kr_plan_solve(kr_plan_objective_t obj, const kr_plan_item_t *items, size_t n,
                   double budget, double mu_floor, double *mu, double *f);

/* Fetches per second a host allows: valence / cycle (a fetch and the
 * politeness delay after it), times utilisation. 0 for a non-positive
 * cycle or valence. */
double kr_plan_budget(int valence, int64_t politeness_delay_ms, double utilisation);

#define KR_PLAN_BUCKETS 80
#define KR_PLAN_CLASSES 4

/* One host's allocator: a sketch of its URIs' lambdas and the solved
 * changes-per-visit target x (versions objective) or multiplier mu
 * (freshness, harmonic). About 1.3 KiB. */
typedef struct kr_plan_host {
  struct {
    int64_t min_ms, max_ms;           /* the class's wait clamps */
    uint32_t count[KR_PLAN_BUCKETS]; /* URIs per lambda bucket */
    uint32_t total;
  } cls[KR_PLAN_CLASSES];
  unsigned ncls;
  double x_min;       /* floor of x */
  double x;           /* changes per visit aimed at, >= x_min (versions) */
  kr_plan_objective_t objective; /* KR_PLAN_VERSIONS unless set */
  double mu;          /* freshness, harmonic: the multiplier (0: slack) */
  double budget;      /* fetches/s of the last solve */
  int solved;         /* 0 until the first solve */
  uint32_t updates;   /* sketch changes since the last solve */
  int state;          /* KR_PLAN_SLACK/BINDS/OVER of the last solve */
  /* feedback from the realised fetch rate (kr_plan_host_fetched) */
  double gain;        /* the plan is budget x gain (1) */
  int64_t win_t0;     /* first fetch of the window, ms */
  uint32_t win_n;     /* fetches in the window so far */
  int resolve;        /* gain moved: solve again */
  double x_fill;      /* slack (versions): the x at which every URI of the
                         sketch would spend the budget; 0 unknown (not
                         persisted: found again at the next solve) */
} kr_plan_host_t;

/* Realised-rate feedback. A plan of B fetches/s is not B fetches/s
 * served: a URI comes back at its wait plus however late its turn comes
 * (two URIs due at once are served a politeness delay apart), so a host
 * planned at its whole capacity is served ~96-98 % of it (kria simulate,
 * 2 s politeness, 150 ms fetches) and one planned at 90 % leaves ~13 %
 * idle. So the host counts every fetch that takes one of its slots, and
 * every KR_PLAN_WINDOW fetches compares the realised rate with the
 * budget: while the budget binds, gain *= sqrt(budget / realised)
 * (damped), within [KR_PLAN_GAIN_MIN, KR_PLAN_GAIN_MAX]; while it does
 * not, gain halves its distance to 1. Other fetches of the host (new
 * URIs, robots.txt, retries) count as realised, so they push the plan
 * down instead of a fixed margin guessing them. */
#define KR_PLAN_WINDOW 256
#define KR_PLAN_GAIN_MIN 0.5
#define KR_PLAN_GAIN_MAX 1.25

void kr_plan_host_init(kr_plan_host_t *h, double x_min);
/* The class of URIs with these clamps: an index for update. A fifth
 * distinct pair shares the last class (only the host's x is affected,
 * never a URI's own clamps). */
int kr_plan_host_class(kr_plan_host_t *h, int64_t min_ms, int64_t max_ms);
/* A URI of class cls moved from old_lambda to new_lambda (old <= 0: new
 * URI; new <= 0: URI gone). Counts never go below 0. An old_lambda whose
 * bucket holds no URI takes one out of the nearest bucket that does: the
 * crawler does not keep the rate it put in, it estimates it again from
 * the URI's stored history, and with informed priors the prior has moved
 * since, so the estimate can land in another bucket. Left there, every
 * such miss was a URI counted twice; the real-crawl bench's host held
 * 235 where about 180 had been observed, most of the extra ones fast
 * (early estimates near initial-wait), its demand at x_min 10.4 fetches/s
 * against 5.7 realised, so the budget looked spent and 40 % of it sat
 * idle (bench/RESULTS.md "The real crawl with informed priors"). */
void kr_plan_host_update(kr_plan_host_t *h, int cls, double old_lambda, double new_lambda);
/* Bucket of a lambda, and the lambda a bucket stands for. */
unsigned kr_plan_bucket(double lambda);
double kr_plan_bucket_lambda(unsigned b);
/* Solve x from the sketch for budget x gain (budget: fetches/s the
 * host's fetches should realise; <= 0: no budget known, x = x_min).
 * Returns KR_PLAN_SLACK/BINDS/OVER. */
int kr_plan_host_solve(kr_plan_host_t *h, double budget);
/* Solve when never solved, after `every` updates, when the budget moved
 * by more than 10 % or when the gain moved. 1 when it solved, 0 when not. */
int kr_plan_host_maybe_solve(kr_plan_host_t *h, double budget, uint32_t every);
/* One fetch of the host (any that takes a politeness slot) at now_ms:
 * the realised-rate feedback above. */
void kr_plan_host_fetched(kr_plan_host_t *h, int64_t now_ms);
/* The x to give kr_wait_poisson (versions objective). */
static inline double kr_plan_host_x(const kr_plan_host_t *h) { return h->x; }
/* While the budget does not bind (every URI at x_min fits it), the spare
 * fetches go to the URIs seen changing: the factor on x for a URI whose
 * history holds `changes` changes when the host is slack and changes > 0,
 * else 1 (versions objective). The factor is KR_PLAN_SLACK_SPEND, or
 * lower where that leaves the budget idle: x_fill / x_min (the x at
 * which the host's sketch spends its budget), down to KR_PLAN_SLACK_MIN.
 * A page never seen changing keeps the floor, so a static site is not
 * revisited any faster; a changing one gets at most 1 / KR_PLAN_SLACK_MIN
 * the fetches, and only fetches its host leaves idle beyond the first
 * 1 / KR_PLAN_SLACK_SPEND (`kria simulate`, cycles world, whose weekly
 * low phase leaves the host slack: bench/RESULTS.md "The first three
 * days"; the real-crawl bench, where a third of the budget sat idle:
 * "The real crawl with informed priors"). */
#define KR_PLAN_SLACK_SPEND 0.85
#define KR_PLAN_SLACK_MIN 0.5
double kr_plan_host_slack_factor(const kr_plan_host_t *h, unsigned changes);
/* The objective the host solves for (an unknown one acts as versions);
 * a different one than before is solved for at the next maybe_solve. */
void kr_plan_host_set_objective(kr_plan_host_t *h, kr_plan_objective_t obj);
/* The changes per visit aimed at for a URI of rate lambda: versions the
 * host's x whatever lambda; freshness and harmonic x_min while slack,
 * else the inverse at mu lambda (any x >= 0; +inf: as rarely as its
 * max-wait allows). */
double kr_plan_host_x_for(const kr_plan_host_t *h, double lambda);

/* ---- Capacity plan (the multiplicative policy within politeness) ----------
 * The thesis' multiplicative waits know nothing of a host's capacity: a
 * host whose URIs want more fetches than its politeness allows (the
 * thesis' 20 s text min-wait on a site of thousands of pages) is overdue
 * for ever, every URI served in queue order whatever its wait says. The
 * plan keeps the planned rate (1 / wait) of each of a host's visited URIs
 * in the allocator's buckets and solves the floor F with
 *   sum_i min(1 / w_i, 1 / F) = budget
 * (water filling): waits shorter than F are raised to F, the others kept,
 * so the URIs that want the most give up the most and the plan fits the
 * host's fetches per second. F = 0 while the plan fits as it is. F may
 * pass a URI's max-wait: a host that cannot serve every URI at max-wait
 * is served as often as it can be, not overdue for ever. The sketch, like
 * the allocator's, fills as URIs are revisited; both are kept across
 * restarts in the host's learned-state record (hoststate.h). */
typedef struct kr_capplan {
  uint32_t count[KR_PLAN_BUCKETS]; /* visited URIs per planned-rate bucket */
  double rate[KR_PLAN_BUCKETS];    /* their planned rates' sum, 1/s: exact,
                                       where the floor is (all its URIs in
                                       one bucket), not off by half a bucket */
  uint32_t total;
  double budget;                    /* fetches/s of the last solve */
  int64_t floor_ms;                 /* 0: the plan fits */
  uint32_t updates;                 /* sketch changes since the last solve */
  int solved;
} kr_capplan_t;

/* A URI's planned wait moved from old_ms to new_ms (old <= 0: not in the
 * plan yet; new <= 0: gone). Counts never go below 0. */
void kr_capplan_update(kr_capplan_t *p, int64_t old_ms, int64_t new_ms);
/* Solve the floor for budget fetches/s (<= 0: unknown, floor 0). */
void kr_capplan_solve(kr_capplan_t *p, double budget);
/* Solve when never solved, after `every` updates or when the budget moved
 * by more than 10 %. 1 when it solved. */
int kr_capplan_maybe_solve(kr_capplan_t *p, double budget, uint32_t every);
/* The planned fetches/s of the sketch with the floor applied (what the
 * host is asked for), and without it (what the waits alone want). */
double kr_capplan_demand(const kr_capplan_t *p, int64_t floor_ms);
/* wait raised to the floor. */
static inline int64_t kr_capplan_apply(const kr_capplan_t *p, int64_t wait_ms) {
  return wait_ms < p->floor_ms ? p->floor_ms : wait_ms;
}

#endif
