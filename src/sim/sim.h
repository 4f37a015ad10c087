/*
 * The revisit simulator behind `kria simulate`: the real frontier (host
 * queues, politeness, valence, its SQLite store), the real wait policies,
 * estimators and allocator (include/kria/wait.h, estimate.h) and the real
 * validator comparison and trust (validators.h) run on a virtual clock
 * against simulated URIs whose changes are known, so every policy can be
 * scored against the truth. Nothing is fetched: a simulated server answers
 * each issued URI at once from the URI's ground truth, and the fetch
 * "takes" a duration drawn from a log-normal distribution on the virtual
 * clock, so politeness (delay-factor x duration, clamped) and valence
 * apply exactly as in a crawl.
 *
 * ---- A world: the simulated URIs -----------------------------------------
 * Each URI has a content type, a change process, validator behaviour, a
 * volatile flag and a body size:
 *   change process  never | Poisson of rate r (changes/s) | regular, one
 *                   change every P | changes at given times
 *   validators      correct: ETag names the bytes, Last-Modified is the
 *                            time of the last change, If-None-Match /
 *                            If-Modified-Since answered with 304 exactly
 *                            when nothing changed
 *                   missing: neither ETag nor Last-Modified
 *                   lying:   ETag and Last-Modified never move (a server
 *                            that answers 304 to every conditional request)
 *   volatile        the page has a section that differs in every response
 *                   (a clock, an ad): its ETag changes on every response
 *                   (no Last-Modified), and its change digest is the
 *                   stripped one only when strip is on (the crawler has a
 *                   digest-strip rule for it); else every visit is a change
 * The content seen by a visit is the version live when the URI was issued.
 *
 * ---- Trace format (kr_sim_world_trace) ------------------------------------
 * UTF-8 text, one URI per line; blank lines and lines starting with '#'
 * are ignored. Fields are separated by blanks (spaces or tabs):
 *
 *   URI  CONTENT-TYPE  CHANGES  VALIDATORS  VOLATILE  [size=BYTES] [importance=W]
 *
 *   URI           absolute http:// or https:// URL; canonicalised as the
 *                 crawler does (kr_url_canon); a URI given twice is an error
 *   CONTENT-TYPE  type/subtype as in a Content-Type header (no
 *                 parameters), or "-" for none; it picks the [wait]
 *                 evaluator as in a crawl
 *   CHANGES       never
 *                 rate=PERIOD   Poisson changes, one per PERIOD on average
 *                 every=PERIOD  one change every PERIOD exactly, the first
 *                               one PERIOD after the start
 *                 at=T1,T2,...  changes at these offsets from the start,
 *                               strictly increasing (at most 100,000)
 *                 PERIOD and T are durations with units as in the config:
 *                 ms, s, m, h, d, combinable ("1h30m"); T may be 0
 *   VALIDATORS    correct | missing | lying
 *   VOLATILE      yes | no
 *   size=BYTES    body size (config size syntax: 12KiB, 20kB, 900);
 *                 default 10 KiB, at most 1 GiB
 *   importance=W  the page's weight in the weighted metrics (a number
 *                 within 0..1e6, default 1), kept as a multiple of 2^-16
 *                 (rounded) so that the weighted sums stay exact integers
 *
 * Example:
 *   # URI                          type       changes      validators volatile
 *   http://news.example/           text/html  rate=1h      correct    yes
 *   http://news.example/logo.png   image/png  never        correct    no  size=4KiB
 *   http://blog.example/post/1     text/html  at=2d,9d     missing    no
 *
 * Errors name the line: "NAME:LINE: message" (KR_EINVAL). Limits: 10
 * million URIs, 64 KiB per line, 4,096 distinct content types.
 *
 * ---- Synthetic worlds (kr_sim_world_synthetic) ------------------------------
 * urls URIs spread round-robin over hosts hosts named h<N>.sim.test, URI i
 * at http://h<i mod hosts>.sim.test/p/<i div hosts>. Change rates come from
 * a mix (kr_sim_mix_parse): comma-separated components
 * [WEIGHT:]SPEC, SPEC = never | PERIOD (Poisson, one change per PERIOD)
 * | LO..HI (periods log-uniform between LO and HI, Poisson); the default
 * "1h..30d" is log-uniform from hourly to monthly. A share of the URIs is
 * volatile; validator behaviour is per host, the hosts split among
 * correct / missing / lying by largest remainder of the shares; body
 * sizes are log-normal around size (sigma 0.5, within [256 B, 16 x size]).
 * A mix component may also be weibull:SHAPE:SCALE (Brewington & Cybenko):
 * mean periods P drawn from a Weibull distribution, P = SCALE x
 * (-ln U)^(1/SHAPE) (0.1 <= SHAPE <= 10, SCALE a period; the mean period
 * is SCALE x Gamma(1 + 1/SHAPE), the median SCALE x (ln 2)^(1/SHAPE)),
 * clamped to 1s..36500d, Poisson; e.g. "0.2:never,0.8:weibull:0.8:5d".
 *
 * Rates that shift (kr_sim_shift_parse, --shift
 * share=S,at=T,factor=F | share=S,at=T,redraw): a share S of the URIs
 * (by a stream of their own) change at their rate until T, then at rate
 * x F (0 < F <= 1000), or at a rate drawn anew from the mix (redraw; a
 * never-changing URI may start changing, a changing one stop). The
 * process is memoryless: the pending change drawn before T is dropped at
 * T and the next drawn from T at the new rate.
 *
 * Daily and weekly cycles (kr_sim_cycles_parse, --cycles
 * daily:A[@HOUR],weekly:B[@DAY]): every Poisson URI of the world changes
 * at rate r x (1 + A cos(2 pi (t - peak)/1d)) x (1 + B cos(2 pi (t -
 * peak)/7d)), A and B within 0..1, the daily peak at HOUR (UTC, 0..24,
 * default 14) on the virtual clock (which starts at KR_SIM_T0, a
 * Tuesday 22:13 UTC), the weekly one at noon of DAY (mon..sun, default
 * wed). A non-homogeneous Poisson process, simulated by thinning from
 * each URI's own stream (candidates at the peak rate, each kept with
 * probability rate / peak rate), so the changes still do not depend on
 * when the URI is looked at.
 *
 * The true rate (the oracle's, and what estimates are scored against):
 * for a cyclic world the time-average of the rate over the run (r x the
 * mean of the cycle factor over [0, duration)); for a shifting URI the
 * rate in force: the oracle is fed the rate before T until its first
 * visit at or after T, then the rate after (its host's allocator
 * updated), and the estimates at the end are scored against the rate
 * after T.
 *
 * Importance (kr_sim_importance_parse, --importance): 1 (every page
 * weighs 1, the default) | pareto:ALPHA (ALPHA > 1) | lognormal:SIGMA
 * (0 < SIGMA <= 4), drawn from a stream of its own per URI (the rest of
 * the world does not move) and divided by the world's mean, so the mean
 * importance is 1 (to within the 2^-16 rounding).
 *
 * ---- Metrics (per policy; whole run and first window) --------------------
 * versions      versions that appeared within the period: one per change
 *               (the version live at the start is left out: every policy
 *               archives it at its first visit, and counting it would only
 *               dilute the differences)
 * captured      of those, the versions archived: a visit that downloads the
 *               body of a version not archived before (a 304 or a mid-fetch
 *               abort archives nothing, so a lying validator loses versions)
 * freshness     Cho's F: share of the time the archive's newest copy equals
 *               the live page, age: Cho's A, time since the live page first
 *               differed from that copy (0 while fresh); both averaged over
 *               URIs and time from each URI's first download on
 * harmonic      the harmonic staleness penalty of Kolobov et al. (NeurIPS
 *               2019): at each moment a URI costs importance x H(N), N the
 *               changes since the archive's newest copy, H(n) = 1 + 1/2 +
 *               ... + 1/n, H(0) = 0; averaged over URIs and time as
 *               freshness is (lower is better). Kept exact: H(n) x 2^32 as
 *               the integer sum of floor(2^32 / k), k = 1..n (within
 *               n x 2^-32 of H(n)), importance x 2^16, times ms
 * weighted      versions and captured versions summed with each URI's
 *               importance, and freshness weighted by it (importance x
 *               time fresh over importance x time observed)
 * fetches, body bytes (304: 0, abort: min(size, abort_bytes), else size),
 * and for visits where the content had not changed: the body bytes a
 * plain GET would have cost and the bytes actually spent.
 * A fetch belongs to the window when it was issued within it.
 *
 * ---- Policies ---------------------------------------------------------------
 * fixed           every URI waits fixed_interval_ms after each visit
 * multiplicative  kr_wait_multiplicative with the URI's [wait] evaluator
 * poisson         kr_wait_poisson, the history kept per URI (kr_vhist: the
 *                 frontier's own uris.history has no Last-Modified ages),
 *                 one kr_plan_host_t per host queue with a budget of
 *                 valence / (mean fetch time + its politeness delay) x
 *                 utilisation, corrected by the host's realised fetch rate
 *                 (kr_plan_host_fetched on every fetch)
 * oracle          a diagnostic, not a kria policy: the same allocator and
 *                 clamps, but fed every URI's true change rate from the
 *                 start (wait = clamp(x / lambda)): what poisson would reach
 *                 with perfect estimates
 * bayes           a diagnostic too: the same allocator fed, for each URI,
 *                 the posterior mean of its rate given the history poisson
 *                 keeps (its last 64 visits, the change of rate poisson
 *                 finds left out as poisson leaves it out) under the
 *                 world's true distribution of rates
 *                 (kr_sim_world_prior: a synthetic world's mix; a
 *                 shifting or cyclic world's mix too, scaled by the
 *                 cycles' mean), with the Last-Modified ages, the first
 *                 visit's included, taken as exact where the host's
 *                 validators are correct (kr_est_posterior_discrete):
 *                 the best a learner without signals can estimate. The
 *                 gap oracle -> bayes is what no learner closes, bayes ->
 *                 poisson what kria's estimates could still learn
 * lambdacrawl     Kolobov et al. (NeurIPS 2019): harmonic staleness
 *                 m ln(1 + D/r), rates r = (sqrt(D^2 + 4 m D/L) - D)/2
 *                 with one multiplier L for the whole run's bandwidth (the
 *                 sum of the hosts' budgets, no per-host share: the
 *                 frontier's politeness makes the overloaded hosts late);
 *                 D: poisson's estimates, so only the allocation differs
 * binarylambdacrawl  the same for binary staleness m D/(D + r) (Azar et
 *                 al. 2018): r = max(0, sqrt(m D/L) - D)
 * lambdacrawl-polite  lambdacrawl with each host's budget as a constraint
 *                 too (Kolobov et al., SIGIR 2019)
 * nutch           Apache Nutch's AdaptiveFetchSchedule, nutch-default.xml's
 *                 values (30 d first interval, x0.8 changed, x1.4
 *                 unchanged, sync_delta 0.3, 60 s .. 365 d)
 * stormcrawler    StormCrawler's AdaptiveScheduler with its defaults (1 d
 *                 first interval, halved toward 1 h changed, x1.5
 *                 unchanged, at most 14 d)
 * The published schedulers' math and sources: include/kria/sched.h; the
 * LambdaCrawl family and the nutch/stormcrawler state: sim_baseline.c.
 * poisson and oracle share each host's budget for the host's
 * adaptive.objective (versions, freshness or harmonic: estimate.h).
 * The policy key of the evaluators is ignored: the run's policy decides.
 * adaptive.informed-priors (per host) gives multiplicative and poisson
 * the crawl's informed priors (kria/prior.h, as src/crawl/proc_wait.c):
 * one pool per host, each URI's groups from its URL and content type.
 * A URI joins its host's allocator sketch (kr_plan_host_update) only once
 * its estimate rests on an observation: URIs still at the prior would
 * count at the initial-wait's rate (the thesis' 20 s for text/html: one
 * change every 29 s), inflating the host's x so that the first URIs
 * learned got waits of weeks; unobserved URIs are due at once anyway.
 *
 * ---- Events: the troubles of a long crawl (kr_sim_world_event) ---------------
 * Added to a world (trace or synthetic) after it is built, one per line
 * (`--event SPEC`, `--events FILE`; '#' comments and blank lines ignored):
 *
 *   KIND TARGET [KEY=VALUE ...]
 *
 * TARGET is a host (the queue key, host[:port]: h3.sim.test) or a URI of
 * the world. A host target with share=S picks that share of its pages
 * (by a hash of the world's seed and the URI: the same pages every run),
 * never its hub nor its grown pages (unlink: only grown pages). Times are
 * durations from the start (at=10d; die and unlink also at=T1..T2, each
 * page its own time, uniform within); for=DUR or for=forever (default).
 *
 *   outage HOST at=T for=DUR   every connection refused, robots.txt's too:
 *                  the outcome proc_post.c builds for ECONNREFUSED (RETRY,
 *                  host_error, status -ECONNREFUSED); the frontier counts
 *                  the retries, backs the host off, fails after max-retries
 *   busy TARGET [status=503|429] [retry-after=SECONDS | retry-after-date=DUR]
 *                  [at=T] [for=DUR]
 *                  answers 503 (or 429): BACKOFF with the Retry-After the
 *                  crawler's parser reads (kr_frontier_parse_retry_after)
 *                  from delay-seconds or from an HTTP-date DUR ahead
 *   robots-down HOST at=T for=DUR   robots.txt answers 503
 *   robots-relax TARGET at=T   robots.txt disallows the pages until T
 *   grow HOST per-day=N [hub=URI] [change=PERIOD|never] [at=T] [for=DUR]
 *                  N new pages a day, http://HOST/g<E>/<K> (E counts the
 *                  grow events), born at at + (K+1) x 1d/N within the run;
 *                  each is linked by the host's hub (hub=, else the host's
 *                  first URI) and enters the frontier as a link (hop L, via
 *                  the hub) of the hub's first full fetch after its birth;
 *                  it takes the hub's type, validators and size, and
 *                  changes never or as a Poisson process of mean PERIOD
 *   die TARGET at=T|T1..T2 [status=404|410]   answers 404 (or 410) from then
 *   unlink TARGET at=T|T1..T2   the hub stops listing the (grown) page
 *   seeds-reload   refused: the seeds and the scope belong to the crawl
 *                  (src/core/scope.c, src/core/seeds.c), which the simulator does
 *                  not run, so a reload cannot be modelled honestly with
 *                  the frontier alone; the integration tests cover it
 *
 * robots.txt is modelled on the hosts an outage or robots event names, as
 * src/crawl/proc_prefetch.c does it: a URI issued without fresh rules goes back
 * through kr_frontier_prereq_require() and robots.txt is fetched at
 * HIGHEST; its answer sets the rules for robots.expiry (after a failure
 * retry-delay at most), kr_frontier_host_set_robots() and
 * kr_frontier_prereq_done(); while it is unavailable the URIs are RETRY
 * -61, FAILED -61 once it has used its retries; a disallowed page is
 * DISREGARDED -9998 while the rules in force were fetched before its
 * relaxing, and revived (due now) by the first robots.txt fetched after
 * it, as the crawler re-checks them on a changed robots.txt. Elsewhere robots.txt allows everything and is not fetched (as
 * before: the figures of worlds without events do not move). A hub's
 * list is part of its content: its ETag, Last-Modified and digest move
 * when a page is born or unlinked, and a 304 or an aborted fetch passes no
 * links. A dead page answers a small fixed body without validators and
 * archives no version (its changes after its death still count as
 * versions, so the capture ratio of a world with deaths is lower).
 *
 * ---- Invariants (kr_sim_events_t) -------------------------------------------------
 * Tracked and printed whenever the world has events, or with --check
 * (kr_sim_opts_t.invariants), which then exits 1 when one fails.
 * A URI is live from the start (a grown page: from its birth; a disallowed
 * one: from its relaxing) until it dies or loses its link. An answer is a
 * fetch the server answered (any status, 503 and 429 included); refused
 * connections and outcomes decided before a fetch (-61, -9998) are not.
 * The recovery bound B of a host is politeness.max-backoff + max-retries x
 * retry-delay (1 d + 30 x 15 min = 31.5 h by default), the time the
 * frontier may take to notice that a host came back.
 *  1 no live URI unvisited longer than its max-wait + B: at each answer
 *    and at the end, the time since its previous answer (or since it
 *    became live), less the time its host was down (outage, robots.txt
 *    down), against its evaluator's max-wait (crawl.default-wait without
 *    one, the interval for fixed) + B. A grown page the frontier does not
 *    hold at the end counts too, unless its host is at
 *    limits.max-uris-per-host (refused by design). Worst excess reported.
 *  2 every live URI of a host that recovered (the end of an outage or a
 *    robots.txt down, before the end of the run) answered within B of the
 *    later of the recovery and its due time (its last success + the wait
 *    then decided); at the end of the run only a URI already later than B
 *    counts. Worst lateness reported.
 *  3 distinct URIs per host (the frontier's count of URIs added, robots.txt
 *    aside) within limits.max-uris-per-host when the config has that key;
 *    without it the largest count is reported and nothing is checked.
 *  4 no host's lateness growing: two measures per host, the lateness of
 *    the revisits it issued and its head URI's lateness sampled hourly
 *    (kr_frontier_host_report), each as a mean over the run's second
 *    quarter and over its last; a host fails when either last-quarter mean
 *    is more than 1.5 x its second-quarter mean + 10 min. Samples while
 *    the host is down or within B of its recovery are left out (that is
 *    invariant 2's). Meant for the thesis' multiplicative policy.
 * Also reported: what the events did (connects refused, busy and dead
 * answers, robots.txt fetches, -61 and -9998 outcomes, relaxed pages
 * answered again, pages born and visited, links) and the live URIs the
 * frontier holds as disregarded, failed or waiting to retry at the end.
 */
#ifndef KRIA_SIM_H
#define KRIA_SIM_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "kria/config.h"
#include "kria/validators.h"

#define KR_SIM_MAX_URIS 10000000u
#define KR_SIM_MAX_LINE 65536u
#define KR_SIM_MAX_TYPES 4096u
#define KR_SIM_MAX_AT 100000u
#define KR_SIM_MAX_MIX 16u
#define KR_SIM_T0 INT64_C(1700000000000) /* virtual epoch ms at the start */

typedef enum kr_sim_policy {
  KR_SIM_FIXED = 0,
  KR_SIM_MULTIPLICATIVE = 1,
  KR_SIM_POISSON = 2,
  KR_SIM_ORACLE = 3,   /* diagnostic: poisson's allocator fed the true rates */
  /* published schedulers (sim_baseline.c, include/kria/sched.h) */
  KR_SIM_LAMBDACRAWL = 4,        /* Kolobov et al. 2019, harmonic, one bandwidth */
  KR_SIM_BINARYLAMBDACRAWL = 5,  /* binary freshness (Azar et al. 2018) */
  KR_SIM_LAMBDACRAWL_POLITE = 6, /* per-host bandwidths too (Kolobov et al. SIGIR 2019) */
  KR_SIM_NUTCH = 7,              /* Nutch's AdaptiveFetchSchedule, defaults */
  KR_SIM_STORMCRAWLER = 8,       /* StormCrawler's AdaptiveScheduler, defaults */
  KR_SIM_BAYES = 9,    /* diagnostic: poisson's allocator fed the Bayes estimates */
} kr_sim_policy_t;
#define KR_SIM_POLICIES 10

typedef enum kr_sim_validators {
  KR_SIM_VAL_CORRECT = 0,
  KR_SIM_VAL_MISSING = 1,
  KR_SIM_VAL_LYING = 2,
} kr_sim_validators_t;

typedef enum kr_sim_change {
  KR_SIM_NEVER = 0,
  KR_SIM_POISSON_RATE = 1, /* rate changes/s */
  KR_SIM_EVERY = 2,        /* period_ms */
  KR_SIM_AT = 3,           /* times[at_off .. at_off + at_n) */
} kr_sim_change_t;

typedef struct kr_sim_world kr_sim_world_t;

/* One component of a change-rate mix. */
typedef struct kr_sim_mix_item {
  double weight;  /* > 0 */
  int never;      /* 1: never changes */
  double lo_s;    /* shortest mean period (s) */
  double hi_s;    /* longest (== lo_s: one rate) */
  double wb_shape; /* > 0: Weibull periods of this shape ... */
  double wb_scale_s; /* ... and scale (s); lo_s, hi_s unused */
} kr_sim_mix_item_t;

typedef struct kr_sim_mix {
  kr_sim_mix_item_t item[KR_SIM_MAX_MIX];
  unsigned n;
} kr_sim_mix_t;

/* Parse a mix (see above). 0, or KR_EINVAL with a message in err. */
int kr_sim_mix_parse(const char *s, kr_sim_mix_t *out, char *err, size_t errlen);

/* Page importance of a synthetic world (see "Synthetic worlds"). */
typedef enum kr_sim_imp_kind {
  KR_SIM_IMP_ONE = 0,
  KR_SIM_IMP_PARETO = 1,    /* param: ALPHA */
  KR_SIM_IMP_LOGNORMAL = 2, /* param: SIGMA */
} kr_sim_imp_kind_t;

typedef struct kr_sim_importance {
  kr_sim_imp_kind_t kind;
  double param;
} kr_sim_importance_t;

/* Parse an importance (1, pareto:ALPHA, lognormal:SIGMA). 0, or KR_EINVAL
 * with a message naming --importance in err. */
int kr_sim_importance_parse(const char *s, kr_sim_importance_t *out, char *err, size_t errlen);

/* Rates that shift mid-run (see above); share 0: none. */
typedef struct kr_sim_shift {
  double share;   /* 0..1 */
  int64_t at_ms;  /* offset from the start */
  double factor;  /* > 0, unless redraw */
  int redraw;     /* 1: a new rate from the mix */
} kr_sim_shift_t;
/* "share=S,at=T,factor=F" or "share=S,at=T,redraw". 0, or KR_EINVAL with
 * a message naming --shift. */
int kr_sim_shift_parse(const char *s, kr_sim_shift_t *out, char *err, size_t errlen);

/* Daily and weekly cycles (see above); amplitudes 0: none. */
typedef struct kr_sim_cycles {
  double daily;        /* amplitude 0..1 */
  double daily_peak_h; /* UTC hour of the peak, 0..24 */
  double weekly;       /* amplitude 0..1 */
  int weekly_peak_day; /* 0 Monday .. 6 Sunday */
} kr_sim_cycles_t;
/* "daily:A[@HOUR]", "weekly:B[@DAY]" or both, comma-separated. 0, or
 * KR_EINVAL with a message naming --cycles. */
int kr_sim_cycles_parse(const char *s, kr_sim_cycles_t *out, char *err, size_t errlen);

/* Importance is kept as a multiple of this (see the trace's importance=). */
#define KR_SIM_IMP_ONE_Q 65536u
#define KR_SIM_IMP_MAX 1e6

typedef struct kr_sim_synth {
  uint64_t urls;            /* >= 1 */
  uint64_t hosts;           /* 1 .. urls */
  uint64_t seed;
  kr_sim_mix_t mix;         /* n = 0: "1h..30d" */
  double volatile_share;    /* 0..1 */
  double share[3];          /* hosts with correct, missing, lying validators */
  uint64_t size;            /* typical body size (bytes, > 0) */
  const char *content_type; /* NULL: text/html */
  kr_sim_importance_t importance; /* zeroed: every page 1 */
  kr_sim_shift_t shift;           /* zeroed: none */
  kr_sim_cycles_t cycles;         /* zeroed: none */
} kr_sim_synth_t;

void kr_sim_synth_default(kr_sim_synth_t *s);

/* Build a world. 0, or KR_EINVAL / KR_ETOOBIG with a message in err. */
int kr_sim_world_synthetic(const kr_sim_synth_t *s, kr_sim_world_t **out, char *err,
                           size_t errlen);
/* Parse a trace (len bytes; need not be NUL-terminated). name stands for
 * the file in messages. seed drives the Poisson processes. 0, or
 * KR_EINVAL with "NAME:LINE: message" in err. */
int kr_sim_world_trace(const char *text, size_t len, const char *name, uint64_t seed,
                       kr_sim_world_t **out, char *err, size_t errlen);
/* Read and parse a trace file (at most 1 GiB). KR_EIO when unreadable. */
int kr_sim_world_trace_file(const char *path, uint64_t seed, kr_sim_world_t **out,
                            char *err, size_t errlen);
void kr_sim_world_free(kr_sim_world_t *w);

/* Add the events of a long crawl (see "Events" above) to w: one event
 * (line of len bytes), or an events file's text (NAME:LINE messages).
 * horizon_ms bounds the pages a grow event adds (the run's length). 0,
 * or KR_EINVAL with a message. */
int kr_sim_world_event(kr_sim_world_t *w, const char *line, size_t len, int64_t horizon_ms,
                       char *msg, size_t msglen);
int kr_sim_world_events(kr_sim_world_t *w, const char *text, size_t len, const char *name,
                        int64_t horizon_ms, char *err, size_t errlen);
/* Read and add an events file. KR_EIO when unreadable. */
int kr_sim_world_events_file(kr_sim_world_t *w, const char *path, int64_t horizon_ms, char *err,
                             size_t errlen);
int kr_sim_world_has_events(const kr_sim_world_t *w);

size_t kr_sim_world_count(const kr_sim_world_t *w);
/* URI i (0-based, input order) as the world holds it. */
typedef struct kr_sim_uri_info {
  const char *url;
  const char *content_type; /* "" for none */
  kr_sim_change_t change;
  double rate;              /* POISSON_RATE: changes/s */
  int64_t period_ms;        /* EVERY */
  size_t at_n;              /* AT */
  kr_sim_validators_t validators;
  int is_volatile;
  uint64_t size;
  double importance;        /* weight in the weighted metrics (mean 1) */
  int64_t shift_at_ms;      /* its rate shifts then (offset); -1 never */
  double rate_after;        /* POISSON_RATE: the rate from shift_at_ms on */
} kr_sim_uri_info_t;
void kr_sim_world_uri(const kr_sim_world_t *w, size_t i, kr_sim_uri_info_t *out);

/* ---- signals (sim_signal.c) ---------------------------------------------------
 * Change signals as a crawl sees them in sitemaps and feeds
 * (include/kria/signal.h), modelled per page (`--signals SPEC`,
 * `--signals-adversarial SPEC`):
 *   share=S       the share of pages a sitemap lists (a hash of the
 *                 world's seed and the URI: the same pages every run)
 *   recall=R      each true change of a listed page is signalled with
 *                 probability R (0.9)
 *   precision=P   false signals ("changed" while it did not) arrive as a
 *                 Poisson process of rate R lambda (1 - P) / P, so that
 *                 a share P of the signals are true (0.8)
 *   delay=DUR     the sitemap's polling period: a signal reaches the
 *                 crawler at the page's next poll after the change (each
 *                 page its own phase), its claim (lastmod) the time of the
 *                 latest change signalled (1h)
 * Adversarial hosts (share=S of the hosts, by a hash of the host name)
 * list their pages too, but mode=now claims "changed now" at every poll
 * and mode=never never moves its lastmod (no signal ever).
 * Each listed page has its own random stream and replays its own change
 * process, so the signals do not depend on when anything looks at them,
 * and shards merge exactly. The crawler's side is the real module: a
 * signal whose claim is after the page's previous visit makes it due now
 * (kr_frontier_add, RESCHEDULE at HIGH, as src/crawl/claims.c pulls
 * dated feed items) when kr_sig_pulls says the host earned it; every
 * later visit is verified (kr_sig_record), and poisson stretches the
 * regular wait of a page whose host's signals have a trusted recall
 * (kr_sig_stretch; the allocator's sketch counts the page at lambda /
 * stretch). A visit made for a believed signal stays out of the page's
 * visit history (signal.h "History"), and the share of a host's fetches
 * made for believed signals leaves its allocator's budget (signal.h
 * "Budget", kr_sig_host_budget, for poisson and the oracle). Policies: multiplicative is pulled
 * forward, poisson pulled and stretched, the oracle too with the true
 * rates (the ceiling with signals; without --signals it is the no-signal
 * ceiling); fixed ignores them. */
typedef enum kr_sim_adv_mode {
  KR_SIM_ADV_NOW = 0,   /* lastmod always "now" */
  KR_SIM_ADV_NEVER = 1, /* lastmod never moves */
} kr_sim_adv_mode_t;

typedef struct kr_sim_signals {
  double share;         /* pages with signals; 0: no signals */
  double recall;        /* 0.9 */
  double precision;     /* 0.8 */
  int64_t delay_ms;     /* polling period (1 h) */
  double adv_share;     /* hosts whose signals are adversarial (0) */
  kr_sim_adv_mode_t adv_mode;
} kr_sim_signals_t;

/* "share=0.3,recall=0.9,precision=0.8,delay=1h" (any subset; a share
 * left out is 0.3): 0, or KR_EINVAL with a message. */
int kr_sim_signals_parse(const char *s, kr_sim_signals_t *out, char *err, size_t errlen);
/* "share=S,mode=now|never" into out's adv_* (and a page share of 0.3
 * when none was given): 0, or KR_EINVAL. */
int kr_sim_signals_adversarial_parse(const char *s, kr_sim_signals_t *out, char *err,
                                     size_t errlen);

/* What the signals did in a run (sums: shards merge exactly). */
typedef struct kr_sim_sigstats {
  uint64_t pages;        /* pages with signals */
  uint64_t seen;         /* signals that reached the crawler */
  uint64_t pulled;       /* of them, made their page due now */
  uint64_t tp, fp, fn;   /* visits verified */
  uint64_t stretched;    /* regular waits stretched */
  uint64_t hosts_pulling; /* at the end, hosts whose signals pull */
  uint64_t hosts_stretching; /* ... and stretch */
} kr_sim_sigstats_t;

/* The distribution of the true rates (kr_sim_world_true_rate at the start)
 * of the world's URIs, as a discrete prior for the bayes reference
 * ("Policies"): at most max rates (changes/s, 0 for never) and their
 * log-weights, on a grid over ln rate 0.1 wide (wider when max cells
 * do not cover the range). A synthetic world's from its mix (each cell
 * the mix's mass within it; a Weibull's clamped periods in the end
 * cells), scaled by the cycles' mean over duration_ms; a trace's from
 * its URIs' rates. max >= 2. Returns the number written (>= 1). */
size_t kr_sim_world_prior(const kr_sim_world_t *w, int64_t duration_ms, double *rate,
                          double *logw, size_t max);

/* The true rate of URI i (changes/s; see "Synthetic worlds"): in force
 * at offset at_ms, times the mean cycle factor over [0, duration_ms). */
double kr_sim_world_true_rate(const kr_sim_world_t *w, size_t i, int64_t duration_ms,
                              int64_t at_ms);
/* The change times of URI i within [0, duration_ms) (offsets, ms) as
 * every run sees them, at most max into out (may be NULL); returns how
 * many there are. For tests and tools. */
size_t kr_sim_world_changes(const kr_sim_world_t *w, size_t i, int64_t duration_ms,
                            int64_t *out, size_t max);

/* ---- runs ---------------------------------------------------------------- */

typedef struct kr_sim_opts {
  int64_t duration_ms;       /* simulated time (30 d) */
  int64_t window_ms;         /* the early window reported apart (3 d) */
  uint64_t seed;             /* fetch durations (one stream per URI) */
  kr_config_t *cfg;          /* finished config (NULL: defaults), read per
                                host view: [wait] stacks, politeness.*,
                                crawl.default-wait, http.conditional-requests,
                                adaptive.midfetch, midfetch-scheme,
                                etag-compare, trust-*, distrust-period,
                                budget-utilisation, hint-last-modified */
  /* overrides of the config for every host */
  int64_t delay_ms;          /* >= 0: politeness min = max = this; < 0: config */
  int valence;               /* > 0: host-valence; 0: config */
  double utilisation;        /* > 0: budget-utilisation; 0: config */
  int conditional;           /* 0: never send conditional requests; 1: config */
  int midfetch;              /* 0: never abort mid-fetch; 1: config */
  kr_vscheme_t scheme;       /* 1-4: mid-fetch scheme; 0: config */
  double sample_rate;        /* >= 0: trust-sample; < 0: config */
  /* the simulation itself */
  int64_t fetch_ms;          /* median fetch duration (150) */
  double fetch_sigma;        /* log-normal sigma of the duration (0.5) */
  int strip;                 /* 1: volatile sections stripped from the digest */
  uint64_t abort_bytes;      /* body bytes a mid-fetch abort still reads (1460) */
  int64_t fixed_interval_ms; /* fixed policy's wait (> 0) */
  uint32_t solve_every;      /* poisson: re-solve a host after this many updates (200) */
  int sketch_prior;          /* poisson: 1 = URIs join the sketch at their first
                                visit with the prior's rate (as src/crawl/proc_wait.c
                                does); 0 = once observed (see above) */
  const char *state_parent;  /* where the run's temporary state directory
                                goes; NULL: $TMPDIR, else /dev/shm, else /tmp */
  int keep_state;            /* 1: leave the state directory (tests) */
  /* a shard of the world (kr_sim_shard_plan): run only the URIs i with
   * shard_of[i] == shard; NULL: every URI */
  const uint32_t *shard_of;
  uint32_t shard;
  int invariants;            /* 1: track and check the invariants (see
                                "Invariants"); on when the world has events */
  int64_t restart_ms;        /* > 0: the crawler restarts at this offset: each
                                host's learned state goes through its record
                                (kria/hoststate.h) as a clean stop and start
                                do; the URIs' histories stay (the store's) */
  int restart_forget;        /* 1: ... and is dropped instead (kria before the
                                record: the allocator's and the capacity
                                plan's sketches empty, the trust run 0,
                                the informed priors' pool and the signals'
                                reliability fresh) */
  kr_sim_signals_t signals;  /* change signals (see "Signals"); share 0: none */
} kr_sim_opts_t;

void kr_sim_opts_default(kr_sim_opts_t *o);

/* Exact sums: integer ms, and ms^2 for the age integral, so that a run
 * split by host into shards (kr_sim_result_merge) adds up to the very
 * same numbers whatever the split and the order of the events. */
__extension__ typedef unsigned __int128 kr_sim_u128;

typedef struct kr_sim_metrics {
  uint64_t versions;           /* that appeared (changes) */
  uint64_t captured;           /* of them, archived */
  uint64_t fetches;
  uint64_t body_bytes;
  uint64_t not_modified;       /* 304 answers */
  uint64_t aborted;            /* mid-fetch aborts */
  uint64_t unchanged_visits;   /* visits where nothing had changed */
  uint64_t unchanged_full_bytes;  /* what plain GETs would have cost on them */
  uint64_t unchanged_body_bytes;  /* what they cost */
  uint64_t lost_by_validators; /* changed content skipped by a 304 or abort */
  uint64_t fresh_ms;           /* time the archived copy was fresh */
  uint64_t observed_ms;        /* time observed (from each first download) */
  kr_sim_u128 age_ms2;         /* twice the integral of the age (ms^2) */
  /* weighted by importance (x 2^16, see "Metrics") */
  uint64_t wversions, wcaptured;
  kr_sim_u128 wfresh_ms, wobserved_ms;
  kr_sim_u128 harmonic;        /* integral of importance x H(N), x 2^48 ms */
} kr_sim_metrics_t;

/* Derived figures (0 when undefined). */
double kr_sim_capture_ratio(const kr_sim_metrics_t *m);
double kr_sim_freshness(const kr_sim_metrics_t *m);
double kr_sim_age_s(const kr_sim_metrics_t *m);
double kr_sim_fetches_per_version(const kr_sim_metrics_t *m);
double kr_sim_unchanged_saving(const kr_sim_metrics_t *m);
double kr_sim_wcapture_ratio(const kr_sim_metrics_t *m);
double kr_sim_wfreshness(const kr_sim_metrics_t *m);
/* Time-average harmonic penalty per URI (importance x H(N)). */
double kr_sim_harmonic(const kr_sim_metrics_t *m);

/* What the events did, and the invariants' figures (see "Invariants").
 * Sums and maxima, so shards merge exactly. */
typedef struct kr_sim_events {
  int tracked;                 /* the invariants were tracked */
  uint64_t refused;            /* fetches refused by an outage (connect) */
  uint64_t busy;               /* 503/429 answers */
  uint64_t dead;               /* 404/410 answers */
  uint64_t robots_fetches, robots_5xx;
  uint64_t robots_retry;       /* URIs retried -61 (robots.txt unavailable) */
  uint64_t robots_failed;      /* URIs failed -61 (robots.txt gave up) */
  uint64_t disallowed;         /* URIs disregarded -9998 */
  uint64_t relax_uris;         /* disallowed at first, allowed later */
  uint64_t relax_visited;      /* of them, answered after the relaxing */
  uint64_t born;               /* pages born within the run */
  uint64_t born_visited;       /* of them, answered at least once */
  uint64_t born_unknown;       /* of them, not in the frontier at the end
                                  (linked but refused, or never linked) */
  uint64_t links;              /* links handed over by hubs */
  uint64_t end_disregarded;    /* live URIs disregarded at the end */
  uint64_t end_failed;         /* live URIs failed at the end */
  uint64_t end_retry;
  int64_t bound_ms;            /* recovery bound (max-backoff + retry budget),
                                  the largest of the hosts' */
  /* 1: no live URI unvisited longer than its max-wait + the bound */
  uint64_t live_checked, live_late;
  int64_t live_worst_ms;       /* largest excess over its limit (may be < 0) */
  char live_worst_url[160];
  /* 2: URIs of a recovered host visited within the bound after recovery */
  uint64_t rec_checked, rec_late;
  int64_t rec_worst_ms;        /* worst lateness after recovery */
  /* 3: distinct URIs per host */
  uint64_t host_uris_max;
  uint64_t host_uris_cap;      /* limits.max-uris-per-host when the key
                                  exists (0: none) */
  uint64_t hosts_over_cap;
  /* 4: revisit lateness per host, second vs last quarter */
  uint64_t hosts_checked, hosts_growing;
  double worst_growth_s;       /* largest last - second quarter mean (s) */
  char worst_host[96];
} kr_sim_events_t;

typedef struct kr_sim_result {
  kr_sim_policy_t policy;
  int64_t fixed_interval_ms;   /* fixed: the interval used */
  kr_sim_metrics_t all, early; /* whole run; first window */
  uint64_t uris_visited;       /* URIs visited at least once */
  uint64_t first_visit_ms;     /* sum of each URI's first visit - start */
  double mean_first_visit_s;   /* mean time of each URI's first visit */
  uint64_t hosts;
  uint64_t hosts_distrusted;   /* hosts whose validators were distrusted */
  uint64_t politeness_checked; /* issues checked against the delay */
  int64_t politeness_min_gap_ms; /* smallest issue - (finish + delay) seen on
                                    a valence-1 host; -1 none checked */
  uint64_t politeness_violations;
  uint32_t max_in_flight_host; /* most fetches of one host at once */
  uint64_t at_min_wait, at_max_wait; /* URIs whose last wait was clamped there */
  /* revisits issued late (overdue: issue - next_at): the largest, and the
   * mean over the run's second and last quarters — a host left overdue
   * for ever shows a last quarter no better, or worse, than its second */
  uint64_t overdue_max_ms;
  uint64_t overdue_n[2];       /* second quarter, last quarter */
  uint64_t overdue_sum_ms[2];
  uint64_t waits_capped;       /* multiplicative waits raised by the capacity plan */
  /* poisson: the last estimate of each URI against its true rate (URIs
   * with a Poisson or regular change process and an estimate) */
  uint64_t est_n;
  double est_within2;          /* share within a factor 2 */
  double est_median_ratio;     /* median of estimate / truth */
  kr_sim_events_t ev;          /* the long crawl's events and invariants */
  kr_sim_sigstats_t sig;       /* change signals (zero without) */
  double wall_s;               /* real time of the run */
  double cpu_s;
} kr_sim_result_t;

/* Run one policy over w. 0, or KR_EDB / KR_EINVAL / KR_EIO with a message
 * in err. The world is not modified: runs over one world see the same
 * changes. */
int kr_sim_run(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
               kr_sim_result_t *out, char *err, size_t errlen);

/* The last wait a run gave URI i (ms), for tests: kept by kr_sim_run
 * only when traces is not NULL. */
typedef struct kr_sim_trace_out {
  int64_t *last_wait_ms;  /* array of kr_sim_world_count() entries, or NULL */
  uint32_t *visits;       /* the same, or NULL */
  double *lambda;         /* the same, or NULL: poisson's last estimate
                             (changes/s, 0 none), for kr_sim_score_estimates */
} kr_sim_trace_out_t;
int kr_sim_run_ex(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
                  kr_sim_result_t *out, kr_sim_trace_out_t *traces, char *err,
                  size_t errlen);

/* ---- shards (sim_shard.c) ----------------------------------------------------
 * Hosts are independent in the model (politeness, valence, validator
 * trust and the poisson budget are per host; every random stream is per
 * URI), so one policy's run can be split by host into shards, each run
 * apart (kr_sim_opts_t.shard_of), and merged into exactly the numbers of
 * the whole run. Not lambdacrawl and binarylambdacrawl, whose one
 * bandwidth couples every host (kr_sim_policy_is_global): a run of them
 * with shard_of is refused. */

/* Give each URI of w a shard in [0, nshards): whole hosts (the frontier's
 * queue key, host[:port]), the largest first onto the shard with the
 * fewest URIs. Returns the shards used, min(nshards, hosts) (>= 1). */
uint32_t kr_sim_shard_plan(const kr_sim_world_t *w, uint32_t nshards, uint32_t *shard_of);

/* Merge the n shard results of one policy into out: sums, minimum gap,
 * maximum in flight, mean first visit from the sums; wall_s the longest
 * shard, cpu_s the sum. The estimates are not merged (they need every
 * URI's estimate: kr_sim_score_estimates). */
void kr_sim_result_merge(kr_sim_result_t *out, const kr_sim_result_t *parts, size_t n);

/* Score poisson's last estimates (lambda[i], 0 none) against the true
 * rates into out's est_* fields. */
void kr_sim_score_estimates(const kr_sim_world_t *w, int64_t duration_ms, const double *lambda,
                            kr_sim_result_t *out);

/* ---- child processes (sim_pool.c) ---------------------------------------------
 * `simulate --jobs N` runs its policy x shard tasks in a pool of child
 * processes. Task k runs in a child (run: fills res, size bytes, zeroed
 * first) which hands res back through a pipe and exits; done is called in
 * the parent exactly once for every task, with res, or with NULL and why
 * (a process that could not start, or that ended without writing its
 * whole result: killed, crashed, exited early; its exit status named).
 * A failed poll (ENOMEM) waits for the first running task in a blocking
 * read. Returns when every task is done. */
typedef struct kr_sim_pool {
  int par;       /* child processes at once, 1..16 */
  size_t size;   /* of a task's result */
  void (*run)(void *ud, size_t k, void *res);
  void (*done)(void *ud, size_t k, const void *res, const char *why);
  void *ud;
  /* NULL: poll(2); else a stand-in with its signature (tests fail it) */
  int (*poll)(struct pollfd *fds, nfds_t n, int timeout);
} kr_sim_pool_t;
void kr_sim_pool_run(const kr_sim_pool_t *p, size_t ntasks);

/* ---- statistics over seeds (sim_stats.c) -----------------------------------------
 * `simulate --seeds N` runs every policy over N worlds and fetch streams
 * (seed k: the base seed + k for both) and reports each policy's mean
 * over the seeds with its 95 % t-interval, and against a reference policy
 * the mean of the per-seed ratios and differences with their paired 95 %
 * t-intervals (the seeds pair the runs: same world, same changes). */
typedef struct kr_sim_ci {
  size_t n;
  double mean;
  double sd;             /* sample standard deviation (n - 1); NaN if n < 2 */
  double half;           /* t(0.975, n - 1) x sd / sqrt(n); NaN if n < 2 */
  double lo, hi;         /* mean -/+ half */
} kr_sim_ci_t;
/* The 0.975 quantile of Student's t with dof degrees of freedom (a table
 * to 30, then linear in 1/dof; NaN for 0). */
double kr_sim_t975(unsigned dof);
/* The mean of x[0..n) and its 95 % t-interval. */
void kr_sim_ci95(const double *x, size_t n, kr_sim_ci_t *out);

const char *kr_sim_policy_name(kr_sim_policy_t p);
/* 1 for a policy with one bandwidth shared by every host (lambdacrawl,
 * binarylambdacrawl): its run cannot be split into shards by host. */
int kr_sim_policy_is_global(kr_sim_policy_t p);
/* A policy's name (kr_sim_policy_name) -> policy; 0 or KR_EINVAL. */
int kr_sim_policy_parse(const char *s, size_t n, kr_sim_policy_t *out);
const char *kr_sim_validators_name(kr_sim_validators_t v);

/* The fixed interval spending about `fetches` fetches over the run, given
 * the reference run's URIs and mean first visit: N (D - first) / (F - N),
 * at least 1 s. */
int64_t kr_sim_fixed_interval(const kr_sim_result_t *ref, uint64_t uris, int64_t duration_ms);

#endif
