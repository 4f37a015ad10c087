/*
 * Progress statistics of an endless crawl: what the progress log line,
 * the status JSON, /metrics and the console show beside the plain
 * counters of the crawl and the frontier.
 *
 *   histograms   log-scale (4 buckets per octave, ~19 % wide) of
 *                durations; percentiles are a bucket's lower bound
 *   loop lag     a millisecond histogram of how late the service's probe
 *                timer fired: how long a ready event waits for the loop
 *   rates        counters sampled once a second into two rings (the last
 *                2 minutes by second, the last day by minute) for
 *                visits/s and changes per hour
 *   census       a scan of the uris table on a read-only SQLite
 *                connection in libuv's thread pool (never on the loop):
 *                URIs by state, due now, the overdue distribution of the
 *                URIs due now, the wait-interval distribution, visit and
 *                version sums. Chunked by rowid so no read transaction
 *                holds back a WAL checkpoint for long; run at most every
 *                census_min_ms and never more often than 100x its own
 *                duration, so it costs <= 1 % of a core however large
 *                the table grows.
 *   the line     kr_progress_line() formats one progress-statistics line.
 *
 * Figures the processors count (changes found, versions stored, bytes
 * saved by validators) are the crawl's counters, defined once in
 * src/crawl/counters.h; the service fills them in (kr__service_figures).
 */
#ifndef KRIA_PROGRESS_H
#define KRIA_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kria/buf.h"
#include "store.h"

/* ---- histograms ------------------------------------------------------------ */

#define KR_LHIST_BUCKETS 128

typedef struct kr_lhist {
  uint64_t n[KR_LHIST_BUCKETS]; /* bucket 0: < 1 s; then 4 per octave of seconds */
  uint64_t count;
  uint64_t sum_ms;
  uint64_t max_ms;
} kr_lhist_t;

unsigned kr_lhist_bucket(uint64_t ms);
/* Lower bound (ms) of bucket b; every value in b is >= it and below the
 * next bucket's. */
uint64_t kr_lhist_lower_ms(unsigned b);
void kr_lhist_add(kr_lhist_t *h, uint64_t ms);
void kr_lhist_merge(kr_lhist_t *into, const kr_lhist_t *h);
/* The lower bound of the bucket holding the p-quantile (0 < p <= 1); 0
 * for an empty histogram. */
uint64_t kr_lhist_quantile(const kr_lhist_t *h, double p);

/* ---- loop lag ----------------------------------------------------------------- */

/* How late a probe timer fired, in ms of loop time (libuv's 1 ms clock):
 * bucket i < KR_LAG_BUCKETS - 1 counts lags <= kr_lag_le_ms[i] (and above
 * the bound before), the last bucket the rest. Fine where the targets lie
 * (a few to tens of ms), coarse beyond. */
#define KR_LAG_BUCKETS 16
extern const uint32_t kr_lag_le_ms[KR_LAG_BUCKETS - 1];

typedef struct kr_lag_hist {
  uint64_t n[KR_LAG_BUCKETS];
  uint64_t count;
  uint64_t sum_ms;
  uint64_t max_ms;
} kr_lag_hist_t;

void kr_lag_add(kr_lag_hist_t *h, uint64_t ms);
/* An upper bound of the p-quantile (0 < p <= 1): the bound of its bucket,
 * or the largest lag seen when that is smaller or the bucket is the last;
 * 0 for an empty histogram. */
uint64_t kr_lag_quantile(const kr_lag_hist_t *h, double p);

/* ---- census ------------------------------------------------------------------ */

typedef struct kr_census {
  uint64_t taken_ms;         /* epoch ms the scan started; 0: none yet */
  uint64_t scan_us;          /* its duration */
  int complete;              /* covered every row (not aborted or failed) */
  uint64_t uris;
  uint64_t by_state[KR_URI_STATES]; /* kr_uri_state_t */
  uint64_t queued;           /* next_at < NEVER */
  uint64_t due_now;          /* queued with next_at <= taken_ms */
  uint64_t visited;          /* visits > 0 */
  uint64_t visits, versions; /* sums */
  kr_lhist_t overdue;        /* taken_ms - next_at of the URIs due now */
  kr_lhist_t wait;           /* wait_ms of visited URIs queued to revisit */
  kr_lhist_t due_in;         /* next_at - taken_ms of the queued URIs not due */
} kr_census_t;

/* Scan the uris table of the SQLite file at db_path into out (read-only;
 * the caller's thread). abort (may be NULL) is polled between chunks. 0,
 * or KR_EDB (out->complete = 0). abort is read atomically. */
int kr_census_scan(const char *db_path, uint64_t now_ms, const int *abort,
                   kr_census_t *out);

/* ---- rates and the background census --------------------------------------- */

typedef struct kr_progress_sample {
  uint64_t visits;          /* fetches with a response */
  uint64_t errors;          /* fetches without one */
  uint64_t bytes;
  uint64_t changes;         /* changes found (see changes_known) */
} kr_progress_sample_t;

typedef struct kr_progress kr_progress_t;

/* loop: the census runs in its thread pool; db_path: kria.db (copied). */
kr_progress_t *kr_progress_new(uv_loop_t *loop, const char *db_path);
/* Abort a running census (its job finishes on its own and frees itself);
 * the progress object may be freed right after. NULL is a no-op. */
void kr_progress_free(kr_progress_t *p);

/* Once a second: record the counters. */
void kr_progress_sample(kr_progress_t *p, uint64_t now_ms, const kr_progress_sample_t *s);
/* Events per second of counter field (offsetof into the sample) over the
 * last window_ms (clamped to the history kept); 0 without two samples. */
double kr_progress_rate(const kr_progress_t *p, size_t field, uint64_t window_ms);
/* Per-second rates of field between consecutive samples, oldest first,
 * for the last n samples at most; returns how many were written. */
size_t kr_progress_recent(const kr_progress_t *p, size_t field, double *out, size_t n);
/* Per-hour counts of field over the last `hours` hours (newest last)
 * into out; returns how many hours have data. */
size_t kr_progress_hourly(const kr_progress_t *p, size_t field, uint64_t now_ms, uint64_t *out,
                          size_t hours);

/* A URI was issued overdue_ms after its next_at. */
void kr_progress_issued(kr_progress_t *p, uint64_t overdue_ms);
/* Issue overdue since start, and since the last kr_progress_window_reset. */
const kr_lhist_t *kr_progress_overdue_total(const kr_progress_t *p);
const kr_lhist_t *kr_progress_overdue_window(const kr_progress_t *p);
void kr_progress_window_reset(kr_progress_t *p);

/* The loop-lag probe fired ms late (src/service/service.c runs the probe). Since
 * start, and since the last kr_progress_window_reset. */
void kr_progress_lag(kr_progress_t *p, uint64_t ms);
const kr_lag_hist_t *kr_progress_lag_total(const kr_progress_t *p);
const kr_lag_hist_t *kr_progress_lag_window(const kr_progress_t *p);

/* Start a census when one is due (see the top). */
void kr_progress_census_maybe(kr_progress_t *p, uint64_t now_ms);
/* The last finished census (taken_ms 0: none yet). */
const kr_census_t *kr_progress_census(const kr_progress_t *p);
uint64_t kr_progress_census_runs(const kr_progress_t *p);
void kr_progress_set_census_min_ms(kr_progress_t *p, uint64_t ms);

/* ---- the progress line --------------------------------------------------------- */

typedef struct kr_progress_figures {
  uint64_t uris, queued, in_flight;
  uint64_t hosts, ready, busy, snoozed;
  int paused;
  double visits_per_s;
  uint64_t visits;
  int due_known;              /* a census exists */
  uint64_t due_now;
  int overdue_known;          /* URIs were issued in the window */
  uint64_t overdue_p50_ms, overdue_p95_ms;
  int changes_known;
  uint64_t changes;
  int versions_known;
  uint64_t versions;
  int saved_known;
  uint64_t bytes_saved;
  int lag_known;              /* the lag probe fired in the window */
  uint64_t lag_p99_ms, lag_max_ms;
} kr_progress_figures_t;

/* "progress: ..." (no newline). 0 or KR_ETOOBIG. */
int kr_progress_line(const kr_progress_figures_t *f, kr_buf_t *out);
/* "1h02m", "45s", "850ms", "3d04h" */
void kr_progress_fmt_ms(uint64_t ms, char *out, size_t n);
/* "12.3 MiB" */
void kr_progress_fmt_bytes(uint64_t b, char *out, size_t n);

#endif
