/*
 * Change signals as evidence: how far to believe what a host's sitemaps,
 * feeds and WebSub hubs say about its pages' changes, and what a believed
 * signal does to a URI's revisits. Pure: no loop, no database, no globals.
 *
 * ---- Signals --------------------------------------------------------------
 * A signal says "URI u changed at time T": a sitemap <lastmod> (source
 * LASTMOD), a feed item's date or a feed entry first seen (source FEED),
 * a WebSub push (source WEBSUB: the pushed topic changed at the push, a
 * pushed item at its date). A push is verified and gated like the others:
 * a hub that pushes what did not change loses its pulls as a lying
 * lastmod does.
 * A URI is covered by a source once one of its documents listed it. At
 * each visit of a covered URI with a known content state (not its first),
 * the signals since the previous visit are compared with what the change
 * digest found:
 *   signalled (a claim T after the previous visit) and changed  -> TP
 *   signalled and unchanged                                     -> FP
 *   not signalled and changed                                   -> FN
 *   neither                                                     -> nothing
 * So a host whose lastmod is always "now" piles up FPs (precision ~0) and
 * one whose lastmod never moves piles up FNs (recall ~0). A signal that
 * arrives later than the visit (a sitemap read after the page was seen)
 * counts as missed for that interval: recall is "signalled in time".
 *
 * ---- Reliability (per host and source, kr_sig_rel_t) ---------------------
 * precision = TP / (TP + FP), recall = TP / (TP + FN), each with a Beta
 * (prior_a, prior_b) prior: the posterior Beta(a + TP, b + FP) (resp. FN).
 * The counts are forgotten geometrically (x decay at every TP, FP or FN),
 * so at most ~1 / (1 - decay) verifications weigh: a host that starts
 * lying is discounted within tens of visits, and one that mends its
 * ways is trusted again within a few hundred (test_signal measures both). Decisions use
 * the lower bound mean - z sd of the posterior (normal approximation),
 * so trust is earned with evidence, not granted by a lucky few:
 *   pull     a signal whose claim is after the URI's previous visit makes
 *            it due now, when precision_lb >= precision_min, or while
 *            fewer than `probation` visits of the host were verified
 *            (benefit of the doubt: a changed feed has always pulled its
 *            dated items forward; the first verifications decide);
 *   stretch  when the host is pulled (precision trusted, probation over)
 *            and recall_lb >= recall_min, the absence of a signal is
 *            evidence of no change: only a share (1 - recall) of the
 *            changes needs the regular revisits to be found, so the
 *            regular wait is multiplied by 1 / (1 - recall_lb), at most
 *            max_stretch. Safety net: the stretch is bounded, and a
 *            sample of the visits (sample_rate, a hash of the URI and
 *            its visit number as kr_vtrust_is_sample: reproducible,
 *            independent of the content) keeps the regular wait, so the
 *            changes the signals miss are still found and counted (FN),
 *            and a host whose recall falls loses its stretch. The
 *            sample is 1 %: a listed page's regular visit finds a change
 *            about one time in ten (a pull comes first for nine changes
 *            in ten, and a pull also finds the ones missed before it),
 *            so each sampled wait that comes due is a fetch the unlisted
 *            pages would use better; and when a host's signals stop, its
 *            pulls stop with them, nothing resets the stretched waits,
 *            and those visits count the FNs (bench/RESULTS.md "Change
 *            signals, third step").
 * Verification needs no extra fetch: pulled visits check precision, the
 * regular and sampled ones recall.
 *
 * ---- Budget (kr_sig_host_fetched, kr_sig_host_budget) -----------------------
 * A pulled visit takes one of the host's slots like any other, but the
 * allocator (estimate.h) plans only the regular visits: given the whole
 * politeness budget, its plan asks for more than the pulls leave, and
 * every regular visit runs late by the queue that builds (the same
 * lateness for a page waiting an hour as for one waiting a month, so the
 * fast pages lose most). The host keeps the share of its fetches that
 * came for a believed signal (a running mean over the first
 * KR_SIG_PULL_WINDOW, then an exponential one over about as many), and
 * the allocator is given budget x (1 - share) with its realised-rate
 * feedback fed the regular fetches only. `kria simulate` (20,000 URIs, 2
 * hosts, signals on 30 % of the pages) measured the regular visits late
 * by ~24 min with the whole budget and ~5 min with the share taken out
 * (bench/RESULTS.md "Change signals, second step"). No signals, no
 * pulls: the budget is the whole one, bit for bit.
 *
 * ---- History ---------------------------------------------------------------
 * A visit that came for a believed signal (signalled, and the host's
 * signals pull) is no observation of the change process: it was made
 * because a change was announced, so its interval would bias the
 * estimators upward (short intervals, nearly all changed). The caller
 * leaves it out of the URI's visit history (estimate.h); the next
 * regular visit's interval starts at it, was scheduled without knowing
 * the future, and so stays a fair observation. The history then sees the
 * changes the signals did not announce, and the estimate follows them.
 *
 * ---- Serialization (kr_sig_host_encode) ------------------------------------
 * Format version 1, 2 + 20 x sources bytes (KR_SIG_HOST_BYTES, 62, as
 * written today):
 *   byte 0    0x01 (format version; any other is refused)
 *   byte 1    number of sources n (written: KR_SIG_SOURCES, 3)
 *   then per source (LASTMOD, FEED, WEBSUB, in enum order), five
 *             little-endian uint32: tp, fp, fn in 1/1024ths (at most
 *             KR_SIG_COUNT_MAX), seen, verified
 * A source is only ever added at the end, so a reader takes any n from
 * KR_SIG_SOURCES_MIN (2: the records written before WEBSUB, 42 bytes;
 * their missing sources start fresh) up, and skips the sources past its
 * own (a newer build's). A damaged blob (length not 2 + 20 n, version,
 * n below the minimum, a count out of range) is refused with KR_EINVAL
 * and leaves a fresh state.
 */
#ifndef KRIA_SIGNAL_H
#define KRIA_SIGNAL_H

#include <stddef.h>
#include <stdint.h>

typedef enum kr_sig_source {
  KR_SIG_LASTMOD = 0, /* sitemap <lastmod> */
  KR_SIG_FEED = 1,    /* feed item date, or a new entry */
  KR_SIG_WEBSUB = 2,  /* a WebSub push (add new sources after it) */
} kr_sig_source_t;
#define KR_SIG_SOURCES 3
#define KR_SIG_SOURCES_MIN 2 /* the fewest a stored record has (before WEBSUB) */

typedef struct kr_sig_params {
  double prior_a, prior_b; /* Beta prior of precision and recall (1, 1) */
  double decay;            /* counts x this at each verification (0.99) */
  double z;                /* lower bound: mean - z sd (1.64) */
  double precision_min;    /* pull when precision_lb >= this (0.6) */
  double recall_min;       /* stretch when recall_lb >= this (0.6) */
  double max_stretch;      /* the regular wait x at most this (8) */
  double sample_rate;      /* visits that keep the regular wait (0.01) */
  uint32_t probation;      /* verifications before the bounds decide (10) */
} kr_sig_params_t;

void kr_sig_params_default(kr_sig_params_t *p);

typedef struct kr_sig_rel {
  float tp, fp, fn;   /* decayed counts */
  uint32_t seen;      /* signals received (saturating) */
  uint32_t verified;  /* visits that gave a TP, FP or FN (saturating) */
} kr_sig_rel_t;

/* One host's reliability, per source, and the share of its fetches
 * pulled (in memory only: not encoded, relearned after a restart). */
typedef struct kr_sig_host {
  kr_sig_rel_t src[KR_SIG_SOURCES];
  float pulled;     /* share of the fetches that came for a believed signal */
  uint32_t fetched; /* fetches counted into it (saturating at the window) */
} kr_sig_host_t;

#define KR_SIG_PULL_WINDOW 1000 /* fetches: the share's memory */

static inline void kr_sig_host_init(kr_sig_host_t *h) { *h = (kr_sig_host_t){0}; }

typedef enum kr_sig_verdict {
  KR_SIG_TN = 0, /* no signal, no change: nothing counted */
  KR_SIG_TP = 1,
  KR_SIG_FP = 2,
  KR_SIG_FN = 3,
} kr_sig_verdict_t;

/* A signal of source src reached the crawler. */
void kr_sig_seen(kr_sig_rel_t *r);
/* A covered URI's visit verified: signalled (a claim after the previous
 * visit arrived), changed (the digest said so). Returns the verdict. */
kr_sig_verdict_t kr_sig_record(kr_sig_rel_t *r, const kr_sig_params_t *p, int signalled,
                               int changed);
/* Posterior means, and their lower bounds (mean - z sd, at least 0). */
double kr_sig_precision(const kr_sig_rel_t *r, const kr_sig_params_t *p);
double kr_sig_recall(const kr_sig_rel_t *r, const kr_sig_params_t *p);
double kr_sig_precision_lb(const kr_sig_rel_t *r, const kr_sig_params_t *p);
double kr_sig_recall_lb(const kr_sig_rel_t *r, const kr_sig_params_t *p);
/* 1 when a signal with a claim after the previous visit pulls the URI
 * forward (see "pull"). */
int kr_sig_pulls(const kr_sig_rel_t *r, const kr_sig_params_t *p);
/* The factor (>= 1) for the regular wait of visit `visit` of URI fp (see
 * "stretch"); 1 when the host is not trusted or the visit is sampled. */
double kr_sig_stretch(const kr_sig_rel_t *r, const kr_sig_params_t *p, uint64_t fp,
                      uint32_t visit);
/* 1 when the claim (epoch s) is news for a URI last visited at
 * prev_visit_s (0: never: every claim is). Any one unit for both: the
 * crawl compares ms, a date's second x 1000, which is news exactly when
 * the second is news for the visit's second. */
static inline int kr_sig_is_news(int64_t claim_s, int64_t prev_visit_s) {
  return claim_s > 0 && claim_s > prev_visit_s;
}
/* A claim's date (epoch s, from a document: any value) in ms, as the
 * crawl compares claims with visits: saturating, 0 for none (<= 0). */
static inline int64_t kr_sig_claim_ms(int64_t s) {
  return s <= 0 ? 0 : s > INT64_MAX / 1000 ? INT64_MAX : s * 1000;
}
/* A fetch of the host took one of its slots; pulled: it came for a
 * believed signal (the visit kept out of the history). */
void kr_sig_host_fetched(kr_sig_host_t *h, int pulled);
/* What the allocator may plan of the host's budget (fetches/s): budget x
 * (1 - the pulled share), at least a tenth of it. Exactly budget while
 * nothing was pulled. */
double kr_sig_host_budget(const kr_sig_host_t *h, double budget);
/* "lastmod", "feed", "websub". */
const char *kr_sig_source_name(kr_sig_source_t s);

#define KR_SIG_VERSION 1
#define KR_SIG_HOST_BYTES (2 + 20 * KR_SIG_SOURCES) /* what encode writes: 62 */
#define KR_SIG_COUNT_MAX 1000000.0
/* Encode into out (exactly KR_SIG_HOST_BYTES). Counts beyond the range
 * are clamped. */
void kr_sig_host_encode(const kr_sig_host_t *h, uint8_t out[KR_SIG_HOST_BYTES]);
/* 0, or KR_EINVAL for a damaged blob (*h then fresh). Reads the layouts
 * of 2 sources and more (see "Serialization"). Never reads past len. */
int kr_sig_host_decode(kr_sig_host_t *h, const uint8_t *p, size_t len);

#endif
