/*
 * Unit tests for the progress statistics: the log-scale histogram (every
 * value lies in its bucket's bounds, quantiles on known data), rates and
 * per-second series from the sample rings, hourly counts, the census on a
 * real store (URIs by state, due now, overdue and wait distributions,
 * visit/version sums, chunking past 10,000 rows, an abort, a missing or
 * foreign file), the background census on a loop (result handed back;
 * freeing the progress object while a census runs leaks nothing), the
 * loop-lag histogram (bucket edges, quantiles as upper bounds, the window
 * reset) and the progress line with known and unknown figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "kria/error.h"
#include "progress.h"
#include "store.h"
#include "helpers.h"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  return th_tmpdir(tmpdir, sizeof tmpdir, "progress");
}

static int teardown(void **state) {
  (void)state;
  return th_rmtree(tmpdir);
}

/* ---- histograms ---------------------------------------------------------- */

static void lhist_bounds(void **state) {
  (void)state;
  assert_int_equal(kr_lhist_bucket(0), 0);
  assert_int_equal(kr_lhist_bucket(999), 0);
  assert_int_equal(kr_lhist_lower_ms(0), 0);
  uint64_t prev = 0;
  for (unsigned b = 1; b < KR_LHIST_BUCKETS; b++) {
    assert_true(kr_lhist_lower_ms(b) >= prev); /* monotonic */
    prev = kr_lhist_lower_ms(b);
  }
  /* every value between 1 s and ~30 years lands where its bounds say */
  for (uint64_t v = 1000; v < UINT64_C(1000) << 30; v = v * 17 / 16 + 333) {
    unsigned b = kr_lhist_bucket(v);
    assert_true(kr_lhist_lower_ms(b) <= v);
    if (b + 1 < KR_LHIST_BUCKETS) assert_true(v < kr_lhist_lower_ms(b + 1));
  }
  /* resolution: above 4 s a bucket is at most 25 % wide */
  for (unsigned b = 10; b + 1 < KR_LHIST_BUCKETS; b++)
    assert_true(kr_lhist_lower_ms(b + 1) <= kr_lhist_lower_ms(b) * 5 / 4);
  assert_int_equal(kr_lhist_bucket(UINT64_MAX), KR_LHIST_BUCKETS - 1);
}

static void lhist_quantiles(void **state) {
  (void)state;
  kr_lhist_t h = {0};
  assert_int_equal(kr_lhist_quantile(&h, 0.5), 0);
  for (int i = 0; i < 90; i++) kr_lhist_add(&h, 500);     /* < 1 s */
  for (int i = 0; i < 10; i++) kr_lhist_add(&h, 3600000); /* 1 h */
  assert_int_equal(h.count, 100);
  assert_int_equal(h.max_ms, 3600000);
  assert_int_equal(kr_lhist_quantile(&h, 0.5), 0);
  assert_int_equal(kr_lhist_quantile(&h, 0.90), 0);
  uint64_t p95 = kr_lhist_quantile(&h, 0.95);
  assert_true(p95 <= 3600000 && p95 > 3600000 * 3 / 4);
  kr_lhist_t m = {0};
  kr_lhist_merge(&m, &h);
  kr_lhist_merge(&m, &h);
  assert_int_equal(m.count, 200);
  assert_int_equal(m.sum_ms, 2 * h.sum_ms);
}

/* ---- rates ----------------------------------------------------------------- */

static void rates_and_series(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_progress_t *p = kr_progress_new(&loop, "");
  size_t fv = offsetof(kr_progress_sample_t, visits);
  assert_true(kr_progress_rate(p, fv, 10000) == 0);
  uint64_t t0 = 1700000000000;
  for (int i = 0; i <= 200; i++) {
    kr_progress_sample_t s = {.visits = (uint64_t)i * 5, .bytes = (uint64_t)i * 1000};
    kr_progress_sample(p, t0 + (uint64_t)i * 1000, &s);
  }
  assert_float_equal(kr_progress_rate(p, fv, 10000), 5.0, 1e-9);
  assert_float_equal(kr_progress_rate(p, offsetof(kr_progress_sample_t, bytes), 60000), 1000.0, 1e-9);
  /* past the second ring the minute ring answers */
  assert_float_equal(kr_progress_rate(p, fv, 3600000), 5.0, 1e-9);
  double series[300];
  size_t n = kr_progress_recent(p, fv, series, 300);
  assert_true(n >= 100 && n < 128);
  for (size_t i = 0; i < n; i++) assert_float_equal(series[i], 5.0, 1e-9);
  /* a counter that went back gives no rate, not a huge one */
  kr_progress_sample_t back = {.visits = 3};
  kr_progress_sample(p, t0 + 201000, &back);
  assert_true(kr_progress_rate(p, fv, 10000) == 0);
  kr_progress_free(p);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void hourly_counts(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_progress_t *p = kr_progress_new(&loop, "");
  size_t fc = offsetof(kr_progress_sample_t, changes);
  uint64_t t0 = 1700000000000 / 3600000 * 3600000; /* on an hour */
  /* three hours, one sample a minute: 10 changes an hour, then 60 */
  uint64_t changes = 0;
  for (int m = 0; m <= 180; m++) {
    kr_progress_sample_t s = {.changes = changes};
    kr_progress_sample(p, t0 + (uint64_t)m * 60000, &s);
    changes += m < 120 ? (m % 6 == 0) : 1;
  }
  uint64_t now = t0 + 180 * 60000;
  uint64_t h[4];
  size_t have = kr_progress_hourly(p, fc, now, h, 4);
  assert_int_equal(have, 3);
  assert_int_equal(h[0], 0); /* before the first sample */
  assert_int_equal(h[1], 10);
  assert_int_equal(h[2], 10);
  assert_int_equal(h[3], 60);
  kr_progress_free(p);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- census ------------------------------------------------------------------ */

#define NOW 1700000000000ull

/* A store with n URIs: every 4th disregarded (never due), every 4th + 1
 * queued for the first visit and due 60 s ago, the rest visited (2
 * visits, 1 or 2 versions) with a wait of 1 h, half of them due 1 h ago
 * and half due in 1 day. */
static void make_store(const char *dir, int n) {
  kr_store_t *st;
  char err[256];
  assert_int_equal(kr_store_open(dir, NULL, &st, err, sizeof err), 0);
  int64_t host;
  assert_int_equal(kr_store_host_insert(st, "h.example", 9, &host), 0);
  char url[64];
  for (int i = 0; i < n; i++) {
    int len = snprintf(url, sizeof url, "http://h.example/%d", i);
    kr_uri_row_t r = {.fp = (uint64_t)i * 2654435761u + 1, .host_id = host, .url = url,
                      .url_len = (size_t)len, .hop_path = "", .first_seen = NOW - 7200000};
    switch (i % 4) {
      case 0: r.state = KR_URI_DISREGARDED, r.next_at = KR_NEVER; break;
      case 1: r.state = KR_URI_QUEUED, r.next_at = NOW - 60000; break;
      default: r.state = KR_URI_SUCCESS, r.next_at = (i % 8 < 4) ? NOW - 3600000 : NOW + 86400000;
    }
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
    if (r.state == KR_URI_SUCCESS) {
      r.visits = 2;
      r.versions = (uint32_t)(1 + i % 2);
      r.wait_ms = 3600000;
      r.last_visit = NOW - 7200000;
      assert_int_equal(kr_store_uri_update(st, &r), 1);
    }
  }
  assert_int_equal(kr_store_close(st), 0);
}

static void census_counts(void **state) {
  (void)state;
  char dir[300], db[400];
  snprintf(dir, sizeof dir, "%s/census", tmpdir);
  snprintf(db, sizeof db, "%s/kria.db", dir);
  int n = 25000; /* three chunks */
  make_store(dir, n);
  kr_census_t c;
  assert_int_equal(kr_census_scan(db, NOW, NULL, &c), 0);
  assert_true(c.complete);
  assert_int_equal(c.uris, (uint64_t)n);
  assert_int_equal(c.by_state[KR_URI_DISREGARDED], (uint64_t)n / 4);
  assert_int_equal(c.by_state[KR_URI_QUEUED], (uint64_t)n / 4);
  assert_int_equal(c.by_state[KR_URI_SUCCESS], (uint64_t)n / 2);
  assert_int_equal(c.queued, (uint64_t)n * 3 / 4);
  uint64_t success_due = 0, versions = 0;
  for (int i = 0; i < n; i++) {
    if (i % 4 >= 2 && i % 8 < 4) success_due++;
    if (i % 4 >= 2) versions += (uint64_t)(1 + i % 2);
  }
  assert_int_equal(c.due_now, (uint64_t)n / 4 + success_due);
  assert_int_equal(c.overdue.count, c.due_now);
  assert_int_equal(c.due_in.count, c.queued - c.due_now);
  assert_int_equal(c.visited, (uint64_t)n / 2);
  assert_int_equal(c.visits, (uint64_t)n);
  assert_int_equal(c.versions, versions);
  assert_int_equal(c.wait.count, (uint64_t)n / 2);
  uint64_t w50 = kr_lhist_quantile(&c.wait, 0.5);
  assert_true(w50 <= 3600000 && w50 > 3000000);
  /* overdue: n/4 at 60 s, success_due at 1 h */
  uint64_t o50 = kr_lhist_quantile(&c.overdue, 0.5);
  assert_true(o50 <= 3600000);
  assert_int_equal(c.overdue.max_ms, 3600000);
  assert_true(c.taken_ms == NOW);

  int abort = 1;
  assert_int_equal(kr_census_scan(db, NOW, &abort, &c), KR_EDB);
  assert_false(c.complete);

  char bad[400];
  snprintf(bad, sizeof bad, "%s/missing/kria.db", tmpdir);
  assert_int_equal(kr_census_scan(bad, NOW, NULL, &c), KR_EDB);
  snprintf(bad, sizeof bad, "%s/not-sqlite", tmpdir);
  FILE *f = fopen(bad, "w");
  fputs("this is not a database, it is text of some length to be sure\n", f);
  fclose(f);
  assert_int_equal(kr_census_scan(bad, NOW, NULL, &c), KR_EDB);
}

static void census_in_background(void **state) {
  (void)state;
  char dir[300], db[400];
  snprintf(dir, sizeof dir, "%s/bg", tmpdir);
  snprintf(db, sizeof db, "%s/kria.db", dir);
  make_store(dir, 1000);
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_progress_t *p = kr_progress_new(&loop, db);
  assert_int_equal(kr_progress_census(p)->taken_ms, 0);
  kr_progress_census_maybe(p, NOW);
  kr_progress_census_maybe(p, NOW); /* one at a time */
  uv_run(&loop, UV_RUN_DEFAULT);    /* until the job is back */
  assert_int_equal(kr_progress_census_runs(p), 1);
  assert_int_equal(kr_progress_census(p)->uris, 1000);
  /* not again before census_min_ms */
  kr_progress_census_maybe(p, NOW + 1000);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(kr_progress_census_runs(p), 1);
  kr_progress_census_maybe(p, NOW + 60000);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(kr_progress_census_runs(p), 2);
  /* freed while a census runs: the job cleans up after itself */
  kr_progress_census_maybe(p, NOW + 120000);
  kr_progress_free(p);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- loop lag ----------------------------------------------------------------- */

static void lag_hist(void **state) {
  (void)state;
  kr_lag_hist_t h = {0};
  assert_int_equal(kr_lag_quantile(&h, 0.99), 0);
  for (unsigned i = 1; i < KR_LAG_BUCKETS - 1; i++) assert_true(kr_lag_le_ms[i] > kr_lag_le_ms[i - 1]);
  /* 0 ms lands in the first bucket, a bound in its own, one above in the next */
  kr_lag_add(&h, 0);
  assert_int_equal(h.n[0], 1);
  kr_lag_add(&h, 20);
  kr_lag_add(&h, 21);
  kr_lag_add(&h, 5000);
  assert_int_equal(h.n[8], 1); /* le 20 */
  assert_int_equal(h.n[9], 1); /* le 30 */
  assert_int_equal(h.n[KR_LAG_BUCKETS - 1], 1);
  assert_int_equal(h.count, 4);
  assert_int_equal(h.sum_ms, 5041);
  assert_int_equal(h.max_ms, 5000);
  assert_int_equal(kr_lag_quantile(&h, 0.25), 0);
  assert_int_equal(kr_lag_quantile(&h, 0.5), 20);
  assert_int_equal(kr_lag_quantile(&h, 0.75), 30);
  assert_int_equal(kr_lag_quantile(&h, 0.99), 5000); /* beyond the last bound: the max */

  /* 990 samples at 2 ms and 10 at 40 ms: p99 is 2 ms, one more slow one makes it 50 */
  kr_lag_hist_t g = {0};
  for (int i = 0; i < 990; i++) kr_lag_add(&g, 2);
  for (int i = 0; i < 10; i++) kr_lag_add(&g, 40);
  assert_int_equal(kr_lag_quantile(&g, 0.99), 2);
  kr_lag_add(&g, 40);
  assert_int_equal(kr_lag_quantile(&g, 0.99), 40); /* bucket le 50, but nothing above 40 */
  assert_int_equal(kr_lag_quantile(&g, 1.0), 40);

  /* the progress object keeps a total and a window */
  kr_progress_t *p = kr_progress_new(NULL, NULL);
  kr_progress_lag(p, 3);
  kr_progress_lag(p, 700);
  assert_int_equal(kr_progress_lag_window(p)->count, 2);
  kr_progress_window_reset(p);
  assert_int_equal(kr_progress_lag_window(p)->count, 0);
  assert_int_equal(kr_progress_lag_total(p)->count, 2);
  assert_int_equal(kr_progress_lag_total(p)->max_ms, 700);
  kr_progress_free(p);
}

/* ---- the line --------------------------------------------------------------- */

static void progress_line(void **state) {
  (void)state;
  kr_buf_t b;
  kr_buf_init(&b, 4096);
  kr_progress_figures_t f = {.uris = 1234, .queued = 980, .in_flight = 4, .hosts = 12, .ready = 3,
                             .busy = 2, .snoozed = 7, .visits_per_s = 12.53, .visits = 10234,
                             .due_known = 1, .due_now = 45, .overdue_known = 1,
                             .overdue_p50_ms = 3000, .overdue_p95_ms = 72000,
                             .changes_known = 1, .changes = 120, .versions_known = 1,
                             .versions = 456, .saved_known = 1, .bytes_saved = 3 << 20,
                             .lag_known = 1, .lag_p99_ms = 15, .lag_max_ms = 1200};
  assert_int_equal(kr_progress_line(&f, &b), 0);
  assert_string_equal(b.data,
                      "progress: 1234 URIs, 980 queued, 45 due now; 12.5 visits/s (10234 visits), "
                      "overdue p50 3s p95 1m12s; changes 120, versions 456, saved by validators "
                      "3.0 MiB; loop lag p99 15ms max 1s; hosts 12 (3 ready, 2 busy, 7 snoozed), 4 in flight");
  kr_buf_reset(&b);
  kr_progress_figures_t g = {.paused = 1};
  assert_int_equal(kr_progress_line(&g, &b), 0);
  assert_string_equal(b.data,
                      "progress: 0 URIs, 0 queued, due now n/a; 0.0 visits/s (0 visits), overdue "
                      "n/a; changes n/a, versions n/a, saved by validators n/a; loop lag n/a; hosts 0 "
                      "(0 ready, 0 busy, 0 snoozed), 0 in flight, paused");
  kr_buf_free(&b);
  kr_buf_init(&b, 20);
  assert_int_equal(kr_progress_line(&f, &b), KR_ETOOBIG);
  kr_buf_free(&b);
  char s[32];
  kr_progress_fmt_ms(850, s, sizeof s);
  assert_string_equal(s, "850ms");
  kr_progress_fmt_ms(3 * 86400000 + 4 * 3600000, s, sizeof s);
  assert_string_equal(s, "3d04h");
  kr_progress_fmt_ms(KR_NEVER, s, sizeof s);
  assert_string_equal(s, "never");
  kr_progress_fmt_bytes(512, s, sizeof s);
  assert_string_equal(s, "512 B");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lhist_bounds),    cmocka_unit_test(lhist_quantiles),
      cmocka_unit_test(rates_and_series), cmocka_unit_test(hourly_counts),
      cmocka_unit_test(census_counts),   cmocka_unit_test(census_in_background),
      cmocka_unit_test(lag_hist),        cmocka_unit_test(progress_line),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
