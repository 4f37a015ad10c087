/* The WARC files' durability as the store sees it: what a presync step
 * writes (how far the open WARC files were synced) commits with the rows
 * of that commit, in the same transaction, and is gone with them after a
 * kill; and the sync off the loop (warcsync.c): a commit waits for the
 * background fdatasync of the records written before it (a stand-in sync
 * that blocks until the test lets it go), the store is not writable
 * meanwhile, the synced offset it records is where the sync began (not
 * the records written during it); an explicit commit syncs inline; a
 * failed sync is reported and the commit goes on; a file closed while
 * its sync runs is forgotten by it; a WARC original put meanwhile is kept
 * out of the waiting commit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kria/error.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"
#include "warcfile.h"
#include "warcsync.h"
#include "helpers.h"

static char tmpdir[256];
static char sdir[300];

static int setup(void **state) {
  (void)state;
  if (th_tmpdir(tmpdir, sizeof tmpdir, "test-warcsync")) return -1;
  snprintf(sdir, sizeof sdir, "%s/state", tmpdir);
  kr_log_level = KR_LOG_ERROR;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  th_rmtree(tmpdir);
  return 0;
}

static kr_store_t *open_ok(void) {
  kr_store_t *st = NULL;
  char err[512];
  if (kr_store_open(sdir, NULL, &st, err, sizeof err)) fail_msg("open: %s", err);
  return st;
}

static kr_uri_row_t row(const char *url, int64_t host) {
  kr_uri_row_t r;
  memset(&r, 0, sizeof r);
  r.url = url;
  r.url_len = strlen(url);
  r.fp = kr_fp(url, r.url_len);
  r.host_id = host;
  r.next_at = 1;
  r.first_seen = 1000;
  r.hop_path = "L";
  r.hop_len = 1;
  return r;
}

static kr_store_t *meta_st;
static char meta_value[32];
static int presync_calls;
static int on_presync_meta(void *ud, int may_wait) {
  (void)ud;
  (void)may_wait;
  presync_calls++;
  assert_int_equal(kr_store_meta_set(meta_st, "warc.synced", meta_value), 0);
  return 0;
}

static void presync_meta_commits_with_the_rows(void **state) {
  (void)state;
  kr_store_t *st = open_ok();
  meta_st = st;
  presync_calls = 0;
  kr_store_set_presync(st, on_presync_meta, NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "m", 1, &h), 0);
  snprintf(meta_value, sizeof meta_value, "100 a.warc.gz.open");
  uint64_t commits = kr_store_stats(st)->commits;
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(presync_calls, 1);
  assert_true(kr_store_stats(st)->commits == commits + 1); /* one, not two */
  assert_false(kr_store_in_tx(st));
  kr_uri_row_t a = row("http://m/a", h);
  assert_true(kr_store_uri_insert(st, &a) >= 0);
  snprintf(meta_value, sizeof meta_value, "200 a.warc.gz.open");
  assert_int_equal(kr_store_commit(st), 0);
  kr_uri_row_t b = row("http://m/b", h);
  assert_true(kr_store_uri_insert(st, &b) >= 0);
  kr_store_abandon(st); /* kill -9 before the next commit */
  st = open_ok();
  char v[64];
  assert_int_equal(kr_store_meta_get(st, "warc.synced", v, sizeof v), 1);
  assert_string_equal(v, "200 a.warc.gz.open");
  uint64_t n;
  assert_int_equal(kr_store_count_uris(st, &n), 0);
  assert_int_equal(n, 1);
  kr_store_close(st);
}

/* Committed rows, seen by another connection. */
static int64_t committed(const char *table) {
  char path[400], sql[100];
  snprintf(path, sizeof path, "%s/kria.db", sdir);
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *s;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

/* The stand-in fdatasync: on the loop's thread it returns at once; on a
 * worker it blocks until the test releases it, then succeeds or fails. */
static pthread_t main_thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released, worker_syncs, inline_syncs, worker_fails;

static int gated_sync(int fd) {
  (void)fd;
  if (pthread_equal(pthread_self(), main_thread)) {
    inline_syncs++;
    return 0;
  }
  pthread_mutex_lock(&mu);
  while (!released) pthread_cond_wait(&cv, &mu);
  released = 0;
  worker_syncs++;
  int fail = worker_fails;
  pthread_mutex_unlock(&mu);
  if (fail) {
    errno = EIO;
    return -1;
  }
  return 0;
}

static void release_one(void) {
  pthread_mutex_lock(&mu);
  released = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}

typedef struct sfx {
  uv_loop_t loop;
  kr_store_t *st;
  kr_warcfile_t *wf;
  kr_warcsync_t *ws;
  int64_t host;
  int errors, last_err;
  char wdir[400];
} sfx_t;

static int sfx_presync(void *ud, int may_wait) {
  sfx_t *x = ud;
  return kr_warcsync_presync(x->ws, 1, may_wait);
}

static void sfx_error(void *ud, int err, const char *msg) {
  sfx_t *x = ud;
  (void)msg;
  x->errors++;
  x->last_err = err;
}

static void sfx_open(sfx_t *x) {
  memset(x, 0, sizeof *x);
  main_thread = pthread_self();
  released = worker_syncs = inline_syncs = worker_fails = 0;
  assert_int_equal(uv_loop_init(&x->loop), 0);
  kr_store_opts_t so;
  kr_store_opts_default(&so);
  so.loop = &x->loop;
  so.quick_check = 0;
  so.commit_updates = 1; /* every write makes a commit due */
  char err[512];
  if (kr_store_open(sdir, &so, &x->st, err, sizeof err)) fail_msg("open: %s", err);
  snprintf(x->wdir, sizeof x->wdir, "%s/warcs", tmpdir);
  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = x->wdir;
  o.durability = KR_WARC_SYNC_BATCH;
  o.sync_fn = gated_sync;
  assert_int_equal(kr_warcfile_open(&o, &x->wf, NULL, 0), 0);
  x->ws = kr_warcsync_new(&x->loop, x->st, sfx_error, x);
  kr_warcsync_set_file(x->ws, 0, x->wf);
  kr_store_set_presync(x->st, sfx_presync, x);
  assert_int_equal(kr_store_host_insert(x->st, "w", 1, &x->host), 0);
  assert_int_equal(kr_store_commit(x->st), 0); /* nothing written: no sync */
  assert_int_equal(inline_syncs, 0);
}

static void sfx_close(sfx_t *x) {
  /* as the crawl does: the sync object goes before the store (a sync
   * still running then ends on the loop touching neither) */
  kr_warcsync_free(x->ws);
  if (x->wf) assert_int_equal(kr_warcfile_close(x->wf), 0);
  assert_int_equal(kr_store_close(x->st), 0);
  release_one(); /* a sync still blocked */
  uv_run(&x->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&x->loop), 0);
}

/* A visit: its record into the WARC file, then its row into the store. */
static void visit(sfx_t *x, const char *url) {
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = kr_slice_cstr(url)};
  assert_int_equal(kr_warcfile_write(x->wf, &r, NULL, 0, NULL), 0);
  kr_uri_row_t u = row(url, x->host);
  assert_true(kr_store_uri_insert(x->st, &u) >= 0);
}

/* Run the loop until the background sync's callback ran (bounded). */
static void until_synced(sfx_t *x) {
  for (int i = 0; i < 1000 && kr_warcsync_busy(x->ws); i++) uv_run(&x->loop, UV_RUN_ONCE);
  assert_false(kr_warcsync_busy(x->ws));
}

static void commit_waits_for_the_sync(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  visit(&x, "http://w/a");
  uint64_t a_end = kr_warcfile_size(x.wf);
  const char *name = kr_warcfile_current(x.wf);
  char open_name[300];
  snprintf(open_name, sizeof open_name, "%s", name);
  /* due: the sync starts in the background, the commit waits */
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_warcsync_busy(x.ws));
  assert_true(kr_store_presync_waiting(x.st));
  assert_int_equal(kr_store_writable(x.st), 0);
  assert_int_equal(committed("uris"), 0);
  /* the loop goes on: a record written meanwhile is not covered */
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("http://w/b")};
  assert_int_equal(kr_warcfile_write(x.wf, &r, NULL, 0, NULL), 0);
  uv_run(&x.loop, UV_RUN_NOWAIT);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_int_equal(committed("uris"), 0); /* not before the sync returned */
  assert_int_equal(inline_syncs, 0);     /* nothing synced on the loop */
  release_one();
  until_synced(&x);
  assert_int_equal(worker_syncs, 1);
  assert_int_equal(kr_store_writable(x.st), 0); /* until the commit */
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  assert_int_equal(committed("uris"), 1);
  assert_int_equal(kr_store_writable(x.st), 1);
  assert_false(kr_store_presync_waiting(x.st));
  /* the store holds where the sync began: after a, before b */
  char v[320], want[320];
  assert_int_equal(kr_store_meta_get(x.st, "warc.synced", v, sizeof v), 1);
  kr_warcfile_mark_format(want, sizeof want, open_name, a_end);
  assert_string_equal(v, want);
  /* b's record is still unsynced: the next commit syncs it */
  kr_uri_row_t b = row("http://w/b", x.host);
  assert_true(kr_store_uri_insert(x.st, &b) >= 0);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_warcsync_busy(x.ws));
  release_one();
  until_synced(&x);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  assert_int_equal(committed("uris"), 2);
  assert_int_equal(worker_syncs, 2);
  assert_true(kr_warcsync_syncs(x.ws) >= 2);
  assert_int_equal(x.errors, 0);
  sfx_close(&x);
}

static void explicit_commit_syncs_inline(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  visit(&x, "http://w/a");
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_warcsync_busy(x.ws));
  visit(&x, "http://w/b"); /* a write that did not wait (as at shutdown) */
  /* shutdown: the commit cannot wait; the records are synced inline */
  assert_int_equal(kr_store_commit(x.st), 0);
  assert_int_equal(inline_syncs, 1);
  assert_int_equal(committed("uris"), 2);
  assert_false(kr_store_presync_waiting(x.st));
  assert_int_equal(kr_store_writable(x.st), 1);
  release_one();
  until_synced(&x); /* its callback finds no commit waiting */
  assert_false(kr_store_in_tx(x.st) && kr_store_presync_waiting(x.st));
  sfx_close(&x);
}

static void failed_sync_reported(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  visit(&x, "http://w/a");
  worker_fails = 1;
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  release_one();
  until_synced(&x);
  assert_int_equal(x.errors, 1);
  assert_int_equal(x.last_err, KR_EIO);
  /* as before: the commit goes on (the records are in the kernel; the
   * error holds the crawl) and no synced offset is recorded */
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  char v[320];
  assert_int_equal(kr_store_meta_get(x.st, "warc.synced", v, sizeof v), 0);
  const char *nm;
  uint64_t off;
  assert_int_equal(kr_warcfile_synced(x.wf, &nm, &off), 0);
  worker_fails = 0;
  sfx_close(&x);
}

static void file_closed_while_syncing(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  visit(&x, "http://w/a");
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  /* a reload replaces the file: closed (synced inline) under the sync */
  kr_warcsync_set_file(x.ws, 0, NULL);
  assert_int_equal(kr_warcfile_close(x.wf), 0);
  x.wf = NULL;
  assert_int_equal(inline_syncs, 1);
  release_one();
  until_synced(&x);
  assert_int_equal(x.errors, 0);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  assert_int_equal(committed("uris"), 1);
  sfx_close(&x);
}

/* An original put while a commit waits names a record written after its
 * sync began: the store keeps it out of that commit (lookups see it) and
 * writes it with the next one. */
static void original_kept_out_of_the_waiting_commit(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  kr_uri_row_t b = row("http://w/b", x.host); /* the original goes in b's row */
  assert_int_equal(kr_store_uri_insert(x.st, &b), 1);
  visit(&x, "http://w/a");
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_store_presync_waiting(x.st));
  kr_warc_rec_t r = {.type = KR_WARC_RESOURCE, .target_uri = KR_SLICE_LIT("http://w/b")};
  assert_int_equal(kr_warcfile_write(x.wf, &r, NULL, 0, NULL), 0);
  uint8_t d[KR_SHA1_LEN];
  memset(d, 7, sizeof d);
  uint64_t fp = kr_fp("http://w/b", 10);
  assert_int_equal(kr_store_original_put(x.st, fp, d, sizeof d, fp, 1000, r.id), 0);
  kr_original_t o;
  assert_int_equal(kr_store_original_find(x.st, d, sizeof d, &o), 1);
  release_one();
  until_synced(&x);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  assert_int_equal(committed("uris"), 2);
  assert_int_equal(committed("uris WHERE orig_date IS NOT NULL"), 0); /* not with that commit */
  assert_int_equal(kr_store_original_find(x.st, d, sizeof d, &o), 1);
  /* the next commit syncs b's record first, then writes it */
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_warcsync_busy(x.ws));
  assert_int_equal(committed("uris WHERE orig_date IS NOT NULL"), 0);
  release_one();
  until_synced(&x);
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 1);
  assert_int_equal(committed("uris WHERE orig_date IS NOT NULL"), 1);
  sfx_close(&x);
}

/* Shutdown while a sync runs: the sync object is freed first, the store
 * completes the waiting commit inline and closes; the running sync ends
 * later on the loop without touching either. */
static void closed_while_syncing(void **state) {
  (void)state;
  sfx_t x;
  sfx_open(&x);
  visit(&x, "http://w/a");
  assert_int_equal(kr_store_maybe_commit(x.st, UINT64_MAX / 2), 0);
  assert_true(kr_warcsync_busy(x.ws));
  kr_warcsync_free(x.ws);
  x.ws = NULL;
  kr_store_set_presync(x.st, NULL, NULL);
  assert_int_equal(kr_warcfile_close(x.wf), 0); /* synced inline */
  x.wf = NULL;
  assert_int_equal(kr_store_close(x.st), 0);
  release_one();
  uv_run(&x.loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&x.loop), 0);
  kr_store_t *st = open_ok();
  uint64_t n;
  assert_int_equal(kr_store_count_uris(st, &n), 0);
  assert_int_equal(n, 1);
  kr_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(presync_meta_commits_with_the_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(commit_waits_for_the_sync, setup, teardown),
      cmocka_unit_test_setup_teardown(explicit_commit_syncs_inline, setup, teardown),
      cmocka_unit_test_setup_teardown(failed_sync_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(file_closed_while_syncing, setup, teardown),
      cmocka_unit_test_setup_teardown(original_kept_out_of_the_waiting_commit, setup, teardown),
      cmocka_unit_test_setup_teardown(closed_while_syncing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
