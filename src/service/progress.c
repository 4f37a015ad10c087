/*
 * Progress statistics (see progress.h): log-scale histograms, the two
 * sample rings behind rates and hourly counts, the census scan and its
 * background job, and the progress line. The census reads the uris
 * table the store writes (schema in store.h) through its own read-only
 * connection, one rowid-ordered chunk per statement, so each chunk is its
 * own short read transaction; the totals are therefore a sum of chunk
 * snapshots taken within one scan, which is what a progress figure
 * needs. Nothing here blocks the loop: the scan runs in libuv's thread
 * pool and hands its result back in the after-work callback.
 */
#include "progress.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "log.h"
#include "store.h"

#define SEC_SLOTS 128           /* one sample a second: ~2 minutes */
#define MIN_SLOTS 1441          /* one a minute: a day and a sample */
#define CENSUS_CHUNK 10000      /* rows per statement (one read transaction) */
#define CENSUS_MIN_MS 10000     /* default: at most every 10 s */
#define CENSUS_COST_FACTOR 100  /* and at most every 100x its duration */

/* ---- histograms --------------------------------------------------------------- */

unsigned kr_lhist_bucket(uint64_t ms) {
  if (ms < 1000) return 0;
  uint64_t s = ms / 1000;
  unsigned e = 63u - (unsigned)__builtin_clzll(s);
  unsigned f = e >= 2 ? (unsigned)(s >> (e - 2)) & 3u : e == 1 ? (unsigned)(s & 1) << 1 : 0;
  unsigned b = 1 + 4 * e + f;
  return b < KR_LHIST_BUCKETS ? b : KR_LHIST_BUCKETS - 1;
}

uint64_t kr_lhist_lower_ms(unsigned b) {
  if (b == 0) return 0;
  if (b >= KR_LHIST_BUCKETS) b = KR_LHIST_BUCKETS - 1;
  unsigned e = (b - 1) / 4, f = (b - 1) % 4;
  /* Buckets 2-4 and 6, 8 stay empty (1 s and 2-3 s have no quarter
   * steps): their bound is the next value that exists. */
  uint64_t s = e >= 2    ? (uint64_t)(4 + f) << (e - 2)
               : e == 1 ? (f == 0 ? 2 : f < 3 ? 3 : 4)
                        : (f == 0 ? 1 : 2);
  return s * 1000;
}

void kr_lhist_add(kr_lhist_t *h, uint64_t ms) {
  h->n[kr_lhist_bucket(ms)]++;
  h->count++;
  h->sum_ms += ms;
  if (ms > h->max_ms) h->max_ms = ms;
}

void kr_lhist_merge(kr_lhist_t *into, const kr_lhist_t *h) {
  for (unsigned i = 0; i < KR_LHIST_BUCKETS; i++) into->n[i] += h->n[i];
  into->count += h->count;
  into->sum_ms += h->sum_ms;
  if (h->max_ms > into->max_ms) into->max_ms = h->max_ms;
}

uint64_t kr_lhist_quantile(const kr_lhist_t *h, double p) {
  if (!h->count) return 0;
  if (p > 1) p = 1;
  uint64_t target = (uint64_t)(p * (double)h->count + 0.999999);
  if (target < 1) target = 1;
  uint64_t cum = 0;
  for (unsigned i = 0; i < KR_LHIST_BUCKETS; i++) {
    cum += h->n[i];
    if (cum >= target) return kr_lhist_lower_ms(i);
  }
  return kr_lhist_lower_ms(KR_LHIST_BUCKETS - 1);
}

const uint32_t kr_lag_le_ms[KR_LAG_BUCKETS - 1] = {0,  1,  2,  3,   5,   7,   10,  15,
                                                    20, 30, 50, 100, 200, 500, 1000};

void kr_lag_add(kr_lag_hist_t *h, uint64_t ms) {
  unsigned b = 0;
  while (b < KR_LAG_BUCKETS - 1 && ms > kr_lag_le_ms[b]) b++;
  h->n[b]++;
  h->count++;
  h->sum_ms += ms;
  if (ms > h->max_ms) h->max_ms = ms;
}

uint64_t kr_lag_quantile(const kr_lag_hist_t *h, double p) {
  if (!h->count) return 0;
  if (p > 1) p = 1;
  uint64_t target = (uint64_t)(p * (double)h->count + 0.999999), cum = 0;
  if (target < 1) target = 1;
  for (unsigned b = 0; b < KR_LAG_BUCKETS - 1; b++) {
    cum += h->n[b];
    if (cum >= target) return kr_lag_le_ms[b] < h->max_ms ? kr_lag_le_ms[b] : h->max_ms;
  }
  return h->max_ms;
}

/* ---- census ------------------------------------------------------------------------ */

int kr_census_scan(const char *db_path, uint64_t now_ms, const int *abort, kr_census_t *out) {
  memset(out, 0, sizeof *out);
  out->taken_ms = now_ms;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  int rc = KR_EDB;
  if (kr_store_open_reader(db_path, 200, &db) != SQLITE_OK) goto done;
  if (sqlite3_prepare_v2(db,
                         "SELECT rowid, next_at, wait_ms, state, visits, versions FROM uris "
                         "WHERE rowid >= ?1 ORDER BY rowid LIMIT ?2",
                         -1, &q, NULL) != SQLITE_OK)
    goto done;
  int64_t from = INT64_MIN;
  for (;;) {
    if (abort && __atomic_load_n(abort, __ATOMIC_RELAXED)) goto done;
    sqlite3_bind_int64(q, 1, from);
    sqlite3_bind_int(q, 2, CENSUS_CHUNK);
    int rows = 0, src;
    int64_t last = from;
    while ((src = sqlite3_step(q)) == SQLITE_ROW) {
      rows++;
      last = sqlite3_column_int64(q, 0);
      int64_t next_at = sqlite3_column_int64(q, 1);
      int64_t wait_ms = sqlite3_column_int64(q, 2);
      int state = sqlite3_column_int(q, 3);
      int64_t visits = sqlite3_column_int64(q, 4);
      int64_t versions = sqlite3_column_int64(q, 5);
      out->uris++;
      if (state >= 0 && state < KR_URI_STATES) out->by_state[state]++;
      if (visits > 0) {
        out->visited++;
        out->visits += (uint64_t)visits;
      }
      if (versions > 0) out->versions += (uint64_t)versions;
      if (next_at < 0 || (uint64_t)next_at >= KR_NEVER) continue;
      out->queued++;
      if ((uint64_t)next_at <= now_ms) {
        out->due_now++;
        kr_lhist_add(&out->overdue, now_ms - (uint64_t)next_at);
      } else {
        kr_lhist_add(&out->due_in, (uint64_t)next_at - now_ms);
      }
      if (visits > 0 && state == KR_URI_SUCCESS && wait_ms > 0)
        kr_lhist_add(&out->wait, (uint64_t)wait_ms);
    }
    sqlite3_reset(q);
    if (src != SQLITE_DONE) goto done;
    if (rows < CENSUS_CHUNK || last == INT64_MAX) break;
    from = last + 1;
  }
  out->complete = 1;
  rc = 0;
done:
  if (rc && db)
    KR_LOG(KR_LOG_INFO, db_path, "census: cannot read the uris table: %s", sqlite3_errmsg(db));
  sqlite3_finalize(q);
  sqlite3_close(db);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out->scan_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
  return rc;
}

/* ---- rates and the background census --------------------------------------------- */

typedef struct slot {
  uint64_t t_ms;                /* 0: empty */
  kr_progress_sample_t s;
} slot_t;

typedef struct ring {
  slot_t *v;
  size_t cap, head, n;          /* head: next write */
} ring_t;

typedef struct census_job census_job_t;

struct kr_progress {
  uv_loop_t *loop;
  char *db_path;
  ring_t sec, min;
  kr_lhist_t overdue_total, overdue_window;
  kr_lag_hist_t lag_total, lag_window;
  kr_census_t census;
  census_job_t *job;            /* running, or NULL */
  uint64_t census_started_ms;   /* of the last job (0: none yet) */
  uint64_t census_min_ms;
  uint64_t census_runs;
};

struct census_job {
  uv_work_t req;
  kr_progress_t *p;             /* NULL once the progress object is gone */
  char *path;
  uint64_t now_ms;
  int abort;
  int rc;
  kr_census_t res;
};

static void ring_init(ring_t *r, size_t cap) {
  r->v = kr_xcalloc(cap, sizeof *r->v);
  r->cap = cap;
  r->head = r->n = 0;
}

static void ring_push(ring_t *r, uint64_t t, const kr_progress_sample_t *s) {
  r->v[r->head] = (slot_t){t, *s};
  r->head = (r->head + 1) % r->cap;
  if (r->n < r->cap) r->n++;
}

/* i-th newest (0 = newest) */
static const slot_t *ring_at(const ring_t *r, size_t i) {
  if (i >= r->n) return NULL;
  return &r->v[(r->head + r->cap - 1 - i) % r->cap];
}

kr_progress_t *kr_progress_new(uv_loop_t *loop, const char *db_path) {
  kr_progress_t *p = kr_xcalloc(1, sizeof *p);
  p->loop = loop;
  p->db_path = kr_xstrdup(db_path ? db_path : "");
  ring_init(&p->sec, SEC_SLOTS);
  ring_init(&p->min, MIN_SLOTS);
  p->census_min_ms = CENSUS_MIN_MS;
  return p;
}

void kr_progress_free(kr_progress_t *p) {
  if (!p) return;
  if (p->job) {
    __atomic_store_n(&p->job->abort, 1, __ATOMIC_RELAXED);
    p->job->p = NULL;
  }
  free(p->sec.v);
  free(p->min.v);
  free(p->db_path);
  free(p);
}

void kr_progress_sample(kr_progress_t *p, uint64_t now_ms, const kr_progress_sample_t *s) {
  ring_push(&p->sec, now_ms, s);
  const slot_t *m = ring_at(&p->min, 0);
  if (!m || now_ms / 60000 != m->t_ms / 60000) ring_push(&p->min, now_ms, s);
}

static uint64_t field_of(const slot_t *sl, size_t field) {
  uint64_t v;
  memcpy(&v, (const char *)&sl->s + field, sizeof v);
  return v;
}

double kr_progress_rate(const kr_progress_t *p, size_t field, uint64_t window_ms) {
  const ring_t *r = window_ms <= (SEC_SLOTS - 8) * 1000u ? &p->sec : &p->min;
  const slot_t *newest = ring_at(r, 0);
  if (!newest) return 0;
  const slot_t *old = NULL;
  for (size_t i = 1; i < r->n; i++) {
    const slot_t *s = ring_at(r, i);
    old = s;
    if (newest->t_ms - s->t_ms >= window_ms) break;
  }
  if (!old || newest->t_ms <= old->t_ms) return 0;
  uint64_t a = field_of(old, field), b = field_of(newest, field);
  if (b < a) return 0; /* a counter went back (reset): no rate */
  return (double)(b - a) * 1000.0 / (double)(newest->t_ms - old->t_ms);
}

size_t kr_progress_recent(const kr_progress_t *p, size_t field, double *out, size_t n) {
  const ring_t *r = &p->sec;
  size_t have = r->n > 1 ? r->n - 1 : 0;
  if (have > n) have = n;
  for (size_t i = 0; i < have; i++) {
    const slot_t *newer = ring_at(r, have - 1 - i), *older = ring_at(r, have - i);
    uint64_t a = field_of(older, field), b = field_of(newer, field);
    uint64_t dt = newer->t_ms > older->t_ms ? newer->t_ms - older->t_ms : 0;
    out[i] = dt && b >= a ? (double)(b - a) * 1000.0 / (double)dt : 0;
  }
  return have;
}

/* The value of field at time t: the newest sample at or before t. */
static const slot_t *at_or_before(const ring_t *r, uint64_t t) {
  for (size_t i = 0; i < r->n; i++) {
    const slot_t *s = ring_at(r, i);
    if (s->t_ms <= t) return s;
  }
  return NULL;
}

size_t kr_progress_hourly(const kr_progress_t *p, size_t field, uint64_t now_ms, uint64_t *out,
                          size_t hours) {
  size_t have = 0;
  const slot_t *oldest = ring_at(&p->min, p->min.n ? p->min.n - 1 : 0);
  for (size_t i = 0; i < hours; i++) {
    uint64_t end = now_ms - (uint64_t)(hours - 1 - i) * 3600000u;
    uint64_t start = end - 3600000u;
    const slot_t *e = at_or_before(&p->min, end);
    const slot_t *s = at_or_before(&p->min, start);
    if (i == hours - 1) e = ring_at(&p->min, 0); /* the hour still running */
    if (!s && e && oldest && oldest->t_ms < end) s = oldest; /* a partial first hour */
    out[i] = 0;
    if (!e || !s || e->t_ms < s->t_ms) continue;
    uint64_t a = field_of(s, field), b = field_of(e, field);
    out[i] = b >= a ? b - a : 0;
    have++;
  }
  return have;
}

void kr_progress_issued(kr_progress_t *p, uint64_t overdue_ms) {
  kr_lhist_add(&p->overdue_total, overdue_ms);
  kr_lhist_add(&p->overdue_window, overdue_ms);
}

const kr_lhist_t *kr_progress_overdue_total(const kr_progress_t *p) { return &p->overdue_total; }
const kr_lhist_t *kr_progress_overdue_window(const kr_progress_t *p) { return &p->overdue_window; }
void kr_progress_window_reset(kr_progress_t *p) {
  memset(&p->overdue_window, 0, sizeof p->overdue_window);
  memset(&p->lag_window, 0, sizeof p->lag_window);
}

void kr_progress_lag(kr_progress_t *p, uint64_t ms) {
  kr_lag_add(&p->lag_total, ms);
  kr_lag_add(&p->lag_window, ms);
}

const kr_lag_hist_t *kr_progress_lag_total(const kr_progress_t *p) { return &p->lag_total; }
const kr_lag_hist_t *kr_progress_lag_window(const kr_progress_t *p) { return &p->lag_window; }

static void census_work(uv_work_t *req) {
  census_job_t *j = container_of(req, census_job_t, req);
  j->rc = kr_census_scan(j->path, j->now_ms, &j->abort, &j->res);
}

static void census_after(uv_work_t *req, int status) {
  census_job_t *j = container_of(req, census_job_t, req);
  kr_progress_t *p = j->p;
  if (p) {
    p->job = NULL;
    p->census_runs++;
    if (status == 0 && j->rc == 0) p->census = j->res;
  }
  free(j->path);
  free(j);
}

void kr_progress_census_maybe(kr_progress_t *p, uint64_t now_ms) {
  if (p->job || !p->db_path[0]) return;
  uint64_t every = p->census_min_ms;
  uint64_t cost_ms = p->census.scan_us / 1000 * CENSUS_COST_FACTOR;
  if (cost_ms > every) every = cost_ms;
  if (p->census_started_ms && now_ms < p->census_started_ms + every) return;
  census_job_t *j = kr_xcalloc(1, sizeof *j);
  j->p = p;
  j->path = kr_xstrdup(p->db_path);
  j->now_ms = now_ms;
  if (uv_queue_work(p->loop, &j->req, census_work, census_after) != 0) {
    free(j->path);
    free(j);
    return;
  }
  p->job = j;
  p->census_started_ms = now_ms;
}

const kr_census_t *kr_progress_census(const kr_progress_t *p) { return &p->census; }
uint64_t kr_progress_census_runs(const kr_progress_t *p) { return p->census_runs; }
void kr_progress_set_census_min_ms(kr_progress_t *p, uint64_t ms) { p->census_min_ms = ms; }

/* ---- the progress line ------------------------------------------------------------- */

void kr_progress_fmt_ms(uint64_t ms, char *out, size_t n) {
  if (ms >= KR_NEVER) snprintf(out, n, "never");
  else if (ms < 1000) snprintf(out, n, "%" PRIu64 "ms", ms);
  else if (ms < 60000) snprintf(out, n, "%" PRIu64 "s", ms / 1000);
  else if (ms < 3600000) snprintf(out, n, "%" PRIu64 "m%02" PRIu64 "s", ms / 60000, ms / 1000 % 60);
  else if (ms < 86400000) snprintf(out, n, "%" PRIu64 "h%02" PRIu64 "m", ms / 3600000, ms / 60000 % 60);
  else snprintf(out, n, "%" PRIu64 "d%02" PRIu64 "h", ms / 86400000, ms / 3600000 % 24);
}

void kr_progress_fmt_bytes(uint64_t b, char *out, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)b;
  unsigned u = 0;
  while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) v /= 1024, u++;
  if (u == 0) snprintf(out, n, "%" PRIu64 " B", b);
  else snprintf(out, n, "%.1f %s", v, units[u]);
}

int kr_progress_line(const kr_progress_figures_t *f, kr_buf_t *out) {
  char a[32], b[32];
  int rc = kr_buf_printf(out, "progress: %" PRIu64 " URIs, %" PRIu64 " queued, ", f->uris, f->queued);
  if (f->due_known) rc |= kr_buf_printf(out, "%" PRIu64 " due now; ", f->due_now);
  else rc |= kr_buf_append_str(out, "due now n/a; ");
  rc |= kr_buf_printf(out, "%.1f visits/s (%" PRIu64 " visits), ", f->visits_per_s, f->visits);
  if (f->overdue_known) {
    kr_progress_fmt_ms(f->overdue_p50_ms, a, sizeof a);
    kr_progress_fmt_ms(f->overdue_p95_ms, b, sizeof b);
    rc |= kr_buf_printf(out, "overdue p50 %s p95 %s; ", a, b);
  } else {
    rc |= kr_buf_append_str(out, "overdue n/a; ");
  }
  if (f->changes_known) rc |= kr_buf_printf(out, "changes %" PRIu64 ", ", f->changes);
  else rc |= kr_buf_append_str(out, "changes n/a, ");
  if (f->versions_known) rc |= kr_buf_printf(out, "versions %" PRIu64 ", ", f->versions);
  else rc |= kr_buf_append_str(out, "versions n/a, ");
  if (f->saved_known) {
    kr_progress_fmt_bytes(f->bytes_saved, a, sizeof a);
    rc |= kr_buf_printf(out, "saved by validators %s; ", a);
  } else {
    rc |= kr_buf_append_str(out, "saved by validators n/a; ");
  }
  if (f->lag_known) {
    kr_progress_fmt_ms(f->lag_p99_ms, a, sizeof a);
    kr_progress_fmt_ms(f->lag_max_ms, b, sizeof b);
    rc |= kr_buf_printf(out, "loop lag p99 %s max %s; ", a, b);
  } else {
    rc |= kr_buf_append_str(out, "loop lag n/a; ");
  }
  rc |= kr_buf_printf(out,
                      "hosts %" PRIu64 " (%" PRIu64 " ready, %" PRIu64 " busy, %" PRIu64
                      " snoozed), %" PRIu64 " in flight%s",
                      f->hosts, f->ready, f->busy, f->snoozed, f->in_flight,
                      f->paused ? ", paused" : "");
  return rc ? KR_ETOOBIG : 0;
}
