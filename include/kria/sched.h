/*
 * Published revisit schedulers, as `kria simulate` runs them beside
 * kria's own policies (src/sim/sim_baseline.c is the glue): the math
 * only, every function a function of its arguments. Pure: no loop, no
 * database, no globals.
 *
 * ---- LambdaCrawl and BinaryLambdaCrawl -----------------------------------
 * Kolobov, Peres, Lu, Horvitz, "Staying up to date with online content
 * changes using reinforcement learning for scheduling", NeurIPS 2019;
 * Azar, Horvitz, Lubetzky, Peres, Shahaf, "Tractable near-optimal
 * policies for crawling", PNAS 2018. Page w changes as a Poisson process
 * of rate D_w, has importance m_w, and is crawled as a Poisson process of
 * rate r_w; the crawler has one bandwidth R = sum_w r_w (no politeness).
 * The number N of changes the archive's copy is behind is then geometric,
 * P(N >= j) = q^j with q = D/(D + r), so the time-averaged penalties are
 *   harmonic  m E[H(N)] = m sum_j q^j / j = m ln(1 + D/r)
 *             (H(n) = 1 + 1/2 + ... + 1/n: each further missed change
 *             costs less than the previous one)
 *   binary    m P(N >= 1) = m D/(D + r)   (staleness, 1 - freshness)
 * Minimising sum_w penalty_w subject to sum_w r_w = R, with multiplier L:
 *   harmonic  m D / (r (r + D)) = L  ->  r = (sqrt(D^2 + 4 m D / L) - D) / 2
 *   binary    m D / (D + r)^2 = L    ->  r = max(0, sqrt(m D / L) - D)
 * Both rates fall strictly as L grows, so L is found by bisection
 * (LambdaCrawl's own procedure is the same search). The harmonic rate
 * is positive for every page; the binary one drops the pages whose
 * D >= m / L (too fast to keep fresh). The rates are computed in the
 * form 2 m D / L / (D + sqrt(D^2 + 4 m D / L)), which does not cancel
 * when 4 m D / L is small against D^2. These were derived here from the
 * objective the papers state (the text of the NeurIPS paper was read;
 * the derivation is short enough to check above), not copied.
 * kria adds box constraints r in [fmin, fmax] (the evaluator's 1/max-wait
 * and 1/min-wait), which the simulator gives every policy: the problem is
 * separable and convex, so the KKT solution is the unconstrained rate
 * clamped to the box at the same L.
 *
 * ---- LambdaCrawl under politeness -----------------------------------------
 * Kolobov, Peres, Lubetzky, Horvitz, "Optimal freshness crawl under
 * politeness constraints", SIGIR 2019: the same objective with, beside
 * the global R, a bandwidth R_h per host. With a multiplier e_h >= 0 per
 * host, page w of host h gets r_w(L + e_h): the host's own constraint
 * binds exactly when the global L alone would overfill it. So each host
 * is solved alone first (L_h: sum_{w in h} r_w(L_h) = R_h, 0 when the
 * host fits at L = 0), and the global L from
 *   sum_h S_h(max(L, L_h)) = R,   S_h(L) = sum_{w in h} r_w(L)
 * (each host's multiplier is max(L, L_h)). When R = sum_h R_h, as in the
 * simulator, L = 0 and every host is solved apart.
 *
 * ---- Nutch's AdaptiveFetchSchedule ------------------------------------------
 * As org.apache.nutch.crawl.AdaptiveFetchSchedule and the defaults of
 * nutch-default.xml: db.fetch.interval.default 2592000 s (30 d, the
 * interval of a new page), inc_rate 0.4, dec_rate 0.2, min_interval
 * 60 s, max_interval 31536000 s (365 d), sync_delta true,
 * sync_delta_rate 0.3. After a fetch at time t with state s:
 *   modified     interval *= 1 - dec_rate; the modified time becomes t
 *   not modified interval *= 1 + inc_rate
 *   unknown      interval kept (a first fetch: no signature to compare)
 *   sync_delta   delta = t - modified time (s); interval = max(interval,
 *                delta); the next fetch is counted from
 *                t - delta x sync_delta_rate instead of t
 *   clamp        interval to [min_interval, max_interval]
 *   next fetch   reference + interval
 * The modified time of a page that has never been seen modified is the
 * fetch time (delta 0). Not modelled: db.fetch.interval.max (90 d), which
 * only matters once an interval passes it.
 *
 * ---- StormCrawler's AdaptiveScheduler ----------------------------------------
 * As com.digitalpebble.stormcrawler.persistence.AdaptiveScheduler with
 * its defaults (minutes, integers): fetchInterval.default 1440 (1 d,
 * crawler-default.yaml), scheduler.adaptive.fetchInterval.min 60,
 * .max 20160 (14 d), .rate.incr 0.5, .rate.decr 0.5. The first fetch
 * (no previous signature) is scheduled by the default interval, which
 * becomes the page's interval; after that:
 *   changed      interval = (int)((1 - decr) interval + decr min)
 *                (slows down near the minimum, never below it)
 *   unchanged    interval = (int)(interval (1 + incr)), at most max
 *                (a 304 counts as unchanged)
 *   next fetch   now + interval minutes
 */
#ifndef KRIA_SCHED_H
#define KRIA_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* ---- LambdaCrawl family -------------------------------------------------- */

typedef enum kr_sched_penalty {
  KR_SCHED_HARMONIC = 0, /* m ln(1 + D/r): LambdaCrawl */
  KR_SCHED_BINARY = 1,   /* m D/(D + r): BinaryLambdaCrawl */
} kr_sched_penalty_t;

typedef struct kr_sched_item {
  double delta;  /* change rate D (1/s), > 0 */
  double mu;     /* importance m, > 0 */
  double fmin;   /* least crawl rate (1/s), >= 0 */
  double fmax;   /* greatest, >= fmin, finite */
  double weight; /* pages it stands for (1; a sketch cell: its count) */
} kr_sched_item_t;

/* The time-averaged penalty of one page crawled at rate r (a Poisson
 * crawl). r <= 0: m (binary) or +inf (harmonic). */
double kr_sched_penalty(kr_sched_penalty_t pen, double mu, double delta, double r);
/* The optimal rate at multiplier L > 0, unclamped (L <= 0: +inf). */
double kr_sched_rate(kr_sched_penalty_t pen, double mu, double delta, double L);
/* The same clamped to [fmin, fmax] (L <= 0: fmax). */
double kr_sched_rate_box(kr_sched_penalty_t pen, const kr_sched_item_t *it, double L);

enum {
  KR_SCHED_SLACK = 0, /* every page at fmax fits: L = 0 */
  KR_SCHED_BINDS = 1, /* sum weight r = R */
  KR_SCHED_OVER = 2,  /* every page at fmin exceeds R: all at fmin */
};

/* Solve L for sum_i weight_i r_i(L) = R (R >= 0). rate (may be NULL)
 * receives each item's rate. Returns KR_SCHED_SLACK/BINDS/OVER, or
 * KR_EINVAL for a bad argument (n = 0 is SLACK). */
int kr_sched_solve(kr_sched_penalty_t pen, const kr_sched_item_t *it, size_t n, double R,
                   double *L, double *rate);

/* The politeness-constrained form: the items of host h are
 * it[start[h] .. start[h+1]) (start has nhosts + 1 entries), host h may
 * take host_R[h], all together R (R <= 0: no global constraint). L gets
 * the global multiplier, host_L (may be NULL) each host's own (L_h
 * above; 0: its constraint does not bind alone), rate (may be NULL)
 * each item's rate. Returns as kr_sched_solve for the global constraint
 * (SLACK when it does not bind), or KR_EINVAL. */
int kr_sched_solve_polite(kr_sched_penalty_t pen, const kr_sched_item_t *it,
                          const size_t *start, size_t nhosts, const double *host_R, double R,
                          double *L, double *host_L, double *rate);

/* ---- Nutch ------------------------------------------------------------------ */

typedef struct kr_sched_nutch_params {
  double default_interval_s; /* db.fetch.interval.default (2592000) */
  double inc_rate;           /* db.fetch.schedule.adaptive.inc_rate (0.4) */
  double dec_rate;           /* .dec_rate (0.2) */
  double min_interval_s;     /* .min_interval (60) */
  double max_interval_s;     /* .max_interval (31536000) */
  int sync_delta;            /* .sync_delta (1) */
  double sync_delta_rate;    /* .sync_delta_rate (0.3) */
} kr_sched_nutch_params_t;

void kr_sched_nutch_default(kr_sched_nutch_params_t *p);

enum { KR_SCHED_UNKNOWN = 0, KR_SCHED_MODIFIED = 1, KR_SCHED_NOTMODIFIED = 2 };

/* A page's schedule as Nutch's CrawlDatum keeps it. Zero it for a new
 * page (interval 0 takes the default, as NUTCH-1430). */
typedef struct kr_sched_nutch {
  double interval_s;   /* fetchInterval (float seconds in Nutch) */
  int64_t modified_ms; /* modifiedTime, 0 none */
} kr_sched_nutch_t;

/* The fetch at fetch_ms had state KR_SCHED_*: update d and return the
 * next fetch time (ms). */
int64_t kr_sched_nutch_next(const kr_sched_nutch_params_t *p, kr_sched_nutch_t *d,
                            int64_t fetch_ms, int state);

/* ---- StormCrawler -------------------------------------------------------------- */

typedef struct kr_sched_storm_params {
  int default_min; /* fetchInterval.default (1440) */
  int min_min;     /* scheduler.adaptive.fetchInterval.min (60) */
  int max_min;     /* .max (20160) */
  float incr;      /* .rate.incr (0.5) */
  float decr;      /* .rate.decr (0.5) */
} kr_sched_storm_params_t;

void kr_sched_storm_default(kr_sched_storm_params_t *p);

/* A page's fetchInterval metadata: 0 for a page never scheduled. */
typedef struct kr_sched_storm {
  int interval_min;
} kr_sched_storm_t;

/* A fetch: first (no previous signature), else changed 0/1 (a 304 is 0).
 * Updates d; returns the wait until the next fetch in minutes. */
int kr_sched_storm_next(const kr_sched_storm_params_t *p, kr_sched_storm_t *d, int first,
                        int changed);

#endif
