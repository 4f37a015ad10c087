/* The SQLite store on a real database in a temporary directory: schema,
 * application_id and version; URI insert/ignore/get/update/pick in queue
 * order through the partial index; grouped commits by count and by age,
 * holds and the pre-commit hook; abandon (a crash) loses exactly the
 * uncommitted writes; refusals with a message naming the file (non-SQLite
 * file, foreign application_id, newer schema, corrupt pages, a second
 * instance); checkpoints inline and as uv_queue_work jobs (also closing
 * while one runs); fingerprint scans across the signed range; schema
 * migration from version 1; the payload digest index; wide waits; WAL
 * writes gathered by the store's VFS; the seeds in force and the pages
 * of disregarded URIs (the scope kept in the state) and the migration
 * to them from version 6; the hosts' learned-state records and the
 * migration of a version-8 database to them; hosts moving to another
 * cluster member (export, import in one transaction, drop). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "kria/error.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"
#include "helpers.h"

static char tmpdir[256];
static char sdir[300]; /* the state directory inside tmpdir */

static int setup(void **state) {
  (void)state;
  if (th_tmpdir(tmpdir, sizeof tmpdir, "test-store")) return -1;
  snprintf(sdir, sizeof(sdir), "%s/state", tmpdir);
  kr_log_level = 2; /* the refusals below log errors on purpose */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  th_rmtree(tmpdir);
  return 0;
}

static kr_store_t *open_ok(const kr_store_opts_t *o) {
  kr_store_t *st = NULL;
  char err[512];
  int rc = kr_store_open(sdir, o, &st, err, sizeof(err));
  if (rc) fail_msg("open: %s", err);
  return st;
}

static kr_uri_row_t row(const char *url, int64_t host, int dir, uint64_t next_at) {
  kr_uri_row_t r;
  memset(&r, 0, sizeof(r));
  r.url = url;
  r.url_len = strlen(url);
  r.fp = kr_fp(url, r.url_len);
  r.host_id = host;
  r.directive = dir;
  r.next_at = next_at;
  r.first_seen = 1000;
  r.hop_path = "L";
  r.hop_len = 1;
  return r;
}

/* The database file through a separate connection. */
static sqlite3 *db_open(int flags) {
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, flags, NULL), SQLITE_OK);
  return db;
}

/* sql prepared on db (the caller steps and finalizes it). */
static sqlite3_stmt *query_row(sqlite3 *db, const char *sql) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  return s;
}

/* Query the database file directly with a separate connection. */
static int64_t sql_int(const char *sql) {
  sqlite3 *db = db_open(SQLITE_OPEN_READONLY);
  sqlite3_stmt *s = query_row(db, sql);
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

/* Like sql_int, for one text value (a static buffer). */
static const char *sql_text(const char *sql) {
  static char out[256];
  sqlite3 *db = db_open(SQLITE_OPEN_READONLY);
  sqlite3_stmt *s = query_row(db, sql);
  out[0] = '\0';
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
    snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

/* Change the database file directly (the store closed). */
static void sql_exec(const char *sql) {
  sqlite3 *db = db_open(SQLITE_OPEN_READWRITE);
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
  sqlite3_close(db);
}

static void fresh_schema(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  char v[64];
  assert_int_equal(kr_store_meta_get(st, "created", v, sizeof(v)), 1);
  assert_int_equal(kr_store_meta_get(st, "nope", v, sizeof(v)), 0);
  assert_int_equal(kr_store_meta_set(st, "queue-assign", "host"), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("PRAGMA application_id"), KR_STORE_APP_ID);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(sql_int("SELECT count(*) FROM meta WHERE key='queue-assign'"), 1);
  assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name='uris_queue'"), 1);
  /* WAL mode is persistent in the file. */
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  sqlite3_open(path, &db);
  sqlite3_stmt *s;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL);
  assert_int_equal(sqlite3_step(s), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
  sqlite3_finalize(s);
  /* The pick uses the partial index and needs no sort. */
  sqlite3_prepare_v2(db,
                     "EXPLAIN QUERY PLAN SELECT fp, directive, next_at FROM uris "
                     "WHERE host_id = 1 AND next_at < 9223372036854775807 "
                     "ORDER BY directive DESC, next_at, fp LIMIT 2",
                     -1, &s, NULL);
  int uses_index = 0, sorts = 0;
  while (sqlite3_step(s) == SQLITE_ROW) {
    const char *d = (const char *)sqlite3_column_text(s, 3);
    if (strstr(d, "uris_queue")) uses_index = 1;
    if (strstr(d, "TEMP B-TREE")) sorts = 1;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  assert_true(uses_index);
  assert_false(sorts);
  /* Reopen: same store, no migration needed. */
  st = open_ok(NULL);
  assert_int_equal(kr_store_meta_get(st, "queue-assign", v, sizeof(v)), 1);
  assert_string_equal(v, "host");
  kr_store_close(st);
}

static void uris_roundtrip(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h1, h2;
  assert_int_equal(kr_store_host_insert(st, "a.example", 9, &h1), 0);
  assert_int_equal(kr_store_host_insert(st, "b.example", 9, &h2), 0);
  assert_true(h1 != h2);
  kr_uri_row_t a = row("http://a.example/1", h1, 0, 5000);
  kr_uri_row_t b = row("http://a.example/2", h1, 0, 3000);
  kr_uri_row_t c = row("http://a.example/3", h1, 1, 9000); /* MEDIUM first */
  kr_uri_row_t d = row("http://a.example/4", h1, 0, KR_NEVER); /* not queued */
  kr_uri_row_t e = row("http://b.example/1", h2, 3, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_uri_insert(st, &b), 1);
  assert_int_equal(kr_store_uri_insert(st, &c), 1);
  assert_int_equal(kr_store_uri_insert(st, &d), 1);
  assert_int_equal(kr_store_uri_insert(st, &e), 1);
  /* A second insert of a known fp changes nothing. */
  kr_uri_row_t a2 = a;
  a2.next_at = 1;
  assert_int_equal(kr_store_uri_insert(st, &a2), 0);
  assert_int_equal(kr_store_stats(st)->insert_ignored, 1);

  kr_store_pick_t p[8];
  int n = kr_store_pick(st, h1, p, 8);
  assert_int_equal(n, 3);
  assert_true(p[0].fp == c.fp && p[0].directive == 1);
  assert_true(p[1].fp == b.fp && p[1].next_at == 3000);
  assert_true(p[2].fp == a.fp && p[2].next_at == 5000);
  assert_int_equal(kr_store_pick(st, h1, p, 1), 1);
  assert_int_equal(kr_store_pick(st, 999, p, 8), 0);
  uint64_t q;
  assert_int_equal(kr_store_count_queued(st, h1, &q), 0);
  assert_int_equal(q, 3);
  assert_int_equal(kr_store_count_queued(st, -1, &q), 0);
  assert_int_equal(q, 4);
  assert_int_equal(kr_store_count_uris(st, &q), 0);
  assert_int_equal(q, 5);

  kr_uri_row_t r;
  assert_int_equal(kr_store_uri_get(st, a.fp, &r), 1);
  assert_int_equal(r.url_len, strlen("http://a.example/1"));
  assert_memory_equal(r.url, "http://a.example/1", r.url_len);
  assert_int_equal(r.host_id, h1);
  assert_true(r.next_at == 5000);
  assert_int_equal(r.hop_len, 1);
  assert_null(r.digest);
  assert_int_equal(kr_store_uri_get(st, 12345, &r), 0);

  /* Update every mutable column and read it back. */
  kr_uri_row_t u = a;
  uint8_t dg[20];
  for (int i = 0; i < 20; i++) dg[i] = (uint8_t)i;
  uint8_t hist[KR_VHIST_BYTES];
  kr_vhist_visit_t hv = {.interval_s = 0, .state = KR_CONTENT_CHANGED, .age_s = -1};
  u.history_len = kr_vhist_push(NULL, 0, &hv, hist, NULL);
  u.history = hist;
  u.directive = 0;
  u.next_at = 86400000;
  u.state = KR_URI_SUCCESS;
  u.last_visit = 7777;
  u.wait_ms = UINT64_C(400) * 86400000; /* beyond 32 bits of ms */
  u.visits = 1;
  u.versions = 1;
  u.status = 404;
  u.content_type = "text/html";
  u.content_type_len = 9;
  u.digest = dg;
  u.digest_len = 20;
  u.etag = "\"x\"";
  u.etag_len = 3;
  u.last_modified = 1700000000;
  assert_int_equal(kr_store_uri_update(st, &u), 1);
  assert_int_equal(kr_store_uri_get(st, a.fp, &r), 1);
  assert_int_equal(r.state, KR_URI_SUCCESS);
  assert_int_equal(r.status, 404);
  assert_int_equal(r.visits, 1);
  assert_true(r.wait_ms == UINT64_C(400) * 86400000);
  assert_int_equal(r.digest_len, 20);
  assert_memory_equal(r.digest, dg, 20);
  assert_int_equal(r.content_type_len, 9);
  assert_int_equal(r.last_modified, 1700000000);
  assert_int_equal(r.history_len, u.history_len);
  kr_uri_row_t missing = u;
  missing.fp = 4242;
  assert_int_equal(kr_store_uri_update(st, &missing), 0);

  assert_int_equal(kr_store_uri_set_sched(st, d.fp, 2, 100, KR_URI_QUEUED), 1);
  assert_int_equal(kr_store_uri_sched_get(st, d.fp, &r), 1);
  assert_int_equal(r.directive, 2);
  assert_true(r.next_at == 100);
  assert_int_equal(kr_store_pick(st, h1, p, 8), 4);
  assert_true(p[0].fp == d.fp);

  /* Host rows carry their counters and state. */
  kr_host_row_t hr;
  memset(&hr, 0, sizeof(hr));
  hr.id = h2;
  hr.robots_expires = 123;
  hr.crawl_delay_ms = 10000;
  hr.backoff_level = 3;
  hr.c.discovered = 7;
  hr.c.bytes = 1u << 30;
  hr.vt.checks = 11;
  hr.vt.misses = 2;
  hr.vt.verified = 5;
  hr.vt.predicted_unchanged = 8;
  hr.vt.distrust_until = INT64_C(1700000000000);
  assert_int_equal(kr_store_host_update(st, &hr), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("SELECT bytes FROM hosts WHERE name='b.example'"), 1 << 30);
  assert_int_equal(sql_int("SELECT crawl_delay_ms FROM hosts WHERE name='a.example'"), -1);
  /* the report view: reliability (5-2)/5, usefulness 0.6 x 8/11 */
  assert_int_equal(sql_int("SELECT round(reliability * 1000) FROM host_validators "
                           "WHERE name='b.example'"),
                   600);
  assert_int_equal(sql_int("SELECT round(usefulness * 10000) FROM host_validators "
                           "WHERE name='b.example'"),
                   4364);
  assert_int_equal(sql_int("SELECT reliability IS NULL FROM host_validators "
                           "WHERE name='a.example'"),
                   1);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 5);
}

static int stop_at_second(void *ud, const kr_host_row_t *h) {
  int *n = ud;
  (*n)++;
  return h->id >= 2 ? -7 : 0;
}

static int collect_hosts(void *ud, const kr_host_row_t *h) {
  int *n = ud;
  (*n)++;
  if (h->id == 2) {
    assert_int_equal(h->backoff_level, 3);
    assert_int_equal(h->crawl_delay_ms, 10000);
    assert_int_equal(h->c.discovered, 7);
    assert_int_equal(h->vt.checks, 11);
    assert_int_equal(h->vt.misses, 2);
    assert_true(h->vt.distrust_until == INT64_C(1700000000000));
  }
  return 0;
}

static void hosts_reload(void **state) {
  uris_roundtrip(state);
  kr_store_t *st = open_ok(NULL);
  int n = 0;
  assert_int_equal(kr_store_hosts_each(st, collect_hosts, &n), 0);
  assert_int_equal(n, 2);
  n = 0;
  assert_int_equal(kr_store_hosts_each(st, stop_at_second, &n), -7);
  assert_int_equal(n, 2);
  kr_store_close(st);
}

static int precommit_calls;
static int precommit_rc;
static int on_precommit(void *ud) {
  kr_store_t *st = ud;
  precommit_calls++;
  assert_true(kr_store_in_tx(st));
  return precommit_rc;
}

static void grouped_commits(void **state) {
  (void)state;
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.commit_updates = 3;
  o.commit_ms = 50;
  kr_store_t *st = open_ok(&o);
  kr_store_set_precommit(st, on_precommit, st);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h); /* write 1 */
  assert_true(kr_store_in_tx(st));
  assert_int_equal(kr_store_maybe_commit(st, 1000), 0); /* 1 write, age 0 */
  kr_uri_row_t a = row("http://h/a", h, 0, 1);
  kr_store_uri_insert(st, &a); /* write 2 */
  assert_int_equal(kr_store_maybe_commit(st, 1049), 0);
  assert_int_equal(kr_store_maybe_commit(st, 1050), 1); /* by age */
  assert_int_equal(precommit_calls, 1);
  assert_false(kr_store_in_tx(st));
  assert_int_equal(kr_store_maybe_commit(st, 5000), 0); /* nothing open */
  /* By count: three writes, at the same time. */
  for (int i = 0; i < 3; i++) {
    char u[32];
    snprintf(u, sizeof(u), "http://h/%d", i);
    kr_uri_row_t r = row(u, h, 0, 1);
    kr_store_uri_insert(st, &r);
  }
  /* Held: nothing commits, neither by count nor explicitly. */
  kr_store_hold(st);
  assert_int_equal(kr_store_maybe_commit(st, 6000), 0);
  assert_int_equal(kr_store_commit(st), KR_EINVAL);
  kr_store_release(st);
  assert_int_equal(kr_store_maybe_commit(st, 6000), 1);
  assert_int_equal(kr_store_stats(st)->commits, 2);
  /* A failing pre-commit step rolls the transaction back. */
  kr_uri_row_t z = row("http://h/z", h, 0, 1);
  kr_store_uri_insert(st, &z);
  precommit_rc = -1;
  assert_int_equal(kr_store_commit(st), KR_EDB);
  precommit_rc = 0;
  kr_uri_row_t r;
  assert_int_equal(kr_store_uri_get(st, z.fp, &r), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 4);
}

/* presync runs before every COMMIT (after precommit), once per commit,
 * and never when nothing is committed. */
static int presync_calls, presync_precommits;
static int on_presync(void *ud, int may_wait) {
  (void)may_wait;
  kr_store_t *st = ud;
  presync_calls++;
  presync_precommits = precommit_calls;
  assert_true(kr_store_in_tx(st)); /* still before the COMMIT */
  return 0;
}

static void presync_before_commit(void **state) {
  (void)state;
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.commit_updates = 2;
  kr_store_t *st = open_ok(&o);
  precommit_calls = 0;
  kr_store_set_precommit(st, on_precommit, st);
  kr_store_set_presync(st, on_presync, st);
  int64_t h;
  kr_store_host_insert(st, "p", 1, &h);
  assert_int_equal(kr_store_maybe_commit(st, 1000), 0);
  assert_int_equal(presync_calls, 0);
  kr_uri_row_t a = row("http://p/a", h, 0, 1);
  kr_store_uri_insert(st, &a);
  assert_int_equal(kr_store_maybe_commit(st, 1000), 1);
  assert_int_equal(presync_calls, 1);
  assert_int_equal(presync_precommits, 1); /* after the pre-commit step */
  assert_int_equal(kr_store_commit(st), 0);  /* nothing open: no call */
  assert_int_equal(presync_calls, 1);
  kr_uri_row_t b = row("http://p/b", h, 0, 1);
  kr_store_uri_insert(st, &b);
  kr_store_set_presync(st, NULL, NULL); /* cleared */
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(presync_calls, 1);
}

/* A WARC original written while a commit waits for its presync step is
 * kept (its record was written after that sync began). Past the kept
 * writes' limit (4,096) the waiting commit completes first, its step
 * inline, then the kept originals and the new one are written in a
 * transaction of their own: none joins the waiting commit (a crash right
 * after it loses them all, not the commit's rows), none is lost once
 * committed, and a URI's original reads as its newest throughout. */
static int sync_waits, sync_inline;
static int presync_waits(void *ud, int may_wait) {
  (void)ud;
  if (!may_wait) sync_inline++;
  return may_wait && sync_waits ? KR_STORE_PRESYNC_WAIT : 0;
}

static uint64_t orig_date(kr_store_t *st, uint64_t fp) {
  kr_original_t o;
  if (kr_store_original_get(st, fp, &o) != 1) fail_msg("original %" PRIu64 " lost", fp);
  return o.date;
}

/* Committed rows of URIs fp0, fp0 + step, ... (n): an original lives in
 * its URI's row. */
static void rows_for(kr_store_t *st, int64_t h, uint64_t fp0, uint64_t step, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    kr_uri_row_t r = row("http://rows.example/", h, 0, 1);
    r.fp = fp0 + i * step;
    assert_true(kr_store_uri_insert(st, &r) >= 0);
  }
  assert_int_equal(kr_store_commit(st), 0);
}

/* A commit waiting with url's row in it, then 4,097 originals: every
 * other one of URI 7, the others of URIs 100,001, 100,003, ... (2,049
 * rows besides url's) */
static kr_store_t *originals_past_limit(const char *host, const char *url) {
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.commit_updates = 1;
  kr_store_t *st = open_ok(&o);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, host, strlen(host), &h), 0);
  rows_for(st, h, 7, 1, 1);
  rows_for(st, h, 100001, 2, 2048);
  sync_waits = 1;
  sync_inline = 0;
  kr_store_set_presync(st, presync_waits, NULL);
  kr_uri_row_t a = row(url, h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_maybe_commit(st, 1000), 0);
  assert_true(kr_store_presync_waiting(st));
  uint64_t kept = kr_store_stats(st)->writes_kept, commits = kr_store_stats(st)->commits;
  uint8_t d[20];
  memset(d, 3, sizeof d);
  const char *rid = "<urn:uuid:00000000-0000-4000-8000-000000000003>";
  for (uint64_t i = 0; i < 4096; i++)
    assert_int_equal(kr_store_original_put(st, i % 2 ? 100000 + i : 7, d, 20, a.fp, i + 1, rid), 0);
  assert_int_equal(kr_store_stats(st)->writes_kept, kept + 4096);
  assert_int_equal(sync_inline, 0);
  assert_true(kr_store_presync_waiting(st));
  assert_true(orig_date(st, 7) == 4095);
  /* no room: the waiting commit first */
  assert_int_equal(kr_store_original_put(st, 7, d, 20, a.fp, 9999, rid), 0);
  assert_int_equal(sync_inline, 1);
  assert_false(kr_store_presync_waiting(st));
  assert_int_equal(kr_store_stats(st)->commits, commits + 1);
  assert_int_equal(kr_store_stats(st)->writes_kept, kept + 4096);
  assert_true(kr_store_in_tx(st)); /* the originals' own */
  assert_true(orig_date(st, 7) == 9999);
  assert_true(orig_date(st, 100001) == 2);
  assert_true(orig_date(st, 104095) == 4096);
  return st;
}

static void originals_kept_past_limit_while_commit_waits(void **state) {
  (void)state;
  kr_store_t *st = originals_past_limit("o.example", "http://o.example/a");
  kr_store_abandon(st); /* a crash before the originals' commit */
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 2049 + 1);
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_date IS NOT NULL"), 0);
  st = originals_past_limit("p.example", "http://p.example/b");
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 2049 + 2);
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_date IS NOT NULL"), 2049);
  assert_int_equal(sql_int("SELECT orig_date FROM uris WHERE fp = 7"), 9999);
  assert_int_equal(sql_int("SELECT sum(orig_date) FROM uris WHERE fp > 100000"),
                   2048 * 2048 + 2048); /* dates 2, 4, ..., 4096 */
}

/* The same inside a held unit (kr_store_hold), which no commit may split:
 * the 4,097th original is kept too, past the limit, and the waiting
 * commit, once its step is done, has none of them. */
static void originals_kept_past_limit_in_held_unit(void **state) {
  (void)state;
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.commit_updates = 1;
  kr_store_t *st = open_ok(&o);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "o.example", 9, &h), 0);
  rows_for(st, h, 100000, 1, 4097);
  sync_waits = 1;
  sync_inline = 0;
  kr_store_set_presync(st, presync_waits, NULL);
  kr_uri_row_t a = row("http://o.example/a", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_maybe_commit(st, 1000), 0);
  assert_true(kr_store_presync_waiting(st));
  uint64_t kept = kr_store_stats(st)->writes_kept;
  uint8_t d[20];
  memset(d, 3, sizeof d);
  const char *rid = "<urn:uuid:00000000-0000-4000-8000-000000000003>";
  kr_store_hold(st);
  for (uint64_t i = 0; i < 4097; i++)
    assert_int_equal(kr_store_original_put(st, 100000 + i, d, 20, a.fp, i + 1, rid), 0);
  kr_store_release(st);
  assert_int_equal(kr_store_stats(st)->writes_kept, kept + 4097);
  assert_int_equal(sync_inline, 0);
  assert_true(orig_date(st, 104096) == 4097);
  /* the step is done: the waiting commit goes in, without them */
  kr_store_presync_done(st);
  uint64_t commits = kr_store_stats(st)->commits;
  assert_int_equal(kr_store_maybe_commit(st, 1001), 1);
  assert_int_equal(kr_store_stats(st)->commits, commits + 1);
  kr_store_abandon(st);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 4097 + 1);
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_date IS NOT NULL"), 0);
}

/* kr_store_abandon = kill -9: the committed survives, the rest is gone. */
static void abandon_loses_only_uncommitted(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  for (int i = 0; i < 100; i++) {
    char u[32];
    snprintf(u, sizeof(u), "http://h/%d", i);
    kr_uri_row_t r = row(u, h, 0, 1);
    kr_store_uri_insert(st, &r);
  }
  assert_int_equal(kr_store_commit(st), 0);
  for (int i = 100; i < 150; i++) {
    char u[32];
    snprintf(u, sizeof(u), "http://h/%d", i);
    kr_uri_row_t r = row(u, h, 0, 1);
    kr_store_uri_insert(st, &r);
  }
  kr_store_abandon(st);
  st = open_ok(NULL);
  uint64_t n;
  kr_store_count_uris(st, &n);
  assert_int_equal(n, 100);
  kr_store_close(st);
}

/* store_vfs.c gathers WAL writes: a transaction far larger than the
 * buffer and the page cache (so pages spill into the WAL and are read
 * back mid-transaction) commits whole; a separate connection on the
 * default VFS sees every committed row right after the commit (the commit
 * frame is in the file before SQLite publishes it); an abandoned spilled
 * transaction leaves nothing behind and the file passes quick_check. */
static void wal_writes_gathered(void **state) {
  (void)state;
  assert_non_null(kr_store_vfs());
  assert_non_null(sqlite3_vfs_find(KR_STORE_VFS_NAME));
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.cache_mib = 1;
  o.quick_check = 1;
  kr_store_t *st = open_ok(&o);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  char pad[201];
  memset(pad, 'x', 200);
  pad[200] = 0;
  kr_store_hold(st);
  for (int i = 0; i < 20000; i++) {
    char u[300];
    snprintf(u, sizeof(u), "http://h/%d/%s", i, pad);
    kr_uri_row_t r = row(u, h, 0, 1);
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
  }
  char u0[300];
  snprintf(u0, sizeof(u0), "http://h/0/%s", pad);
  kr_uri_row_t got;
  assert_int_equal(kr_store_uri_get(st, kr_fp(u0, strlen(u0)), &got), 1);
  assert_int_equal(got.url_len, strlen(u0));
  kr_store_release(st);
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 20000);
  /* a spilled transaction, then a crash */
  kr_store_hold(st);
  for (int i = 20000; i < 40000; i++) {
    char u[300];
    snprintf(u, sizeof(u), "http://h/%d/%s", i, pad);
    kr_uri_row_t r = row(u, h, 0, 1);
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
  }
  kr_store_release(st);
  kr_store_abandon(st);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 20000);
  st = open_ok(&o); /* quick_check at open */
  uint64_t n;
  assert_int_equal(kr_store_count_uris(st, &n), 0);
  assert_int_equal(n, 20000);
  /* the next transaction writes over the abandoned frames */
  kr_uri_row_t r = row("http://h/after", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &r), 1);
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 20001);
  assert_int_equal(kr_store_checkpoint(st), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 20001);
}

static void expect_refusal(const char *want) {
  kr_store_t *st = NULL;
  char err[512];
  assert_int_equal(kr_store_open(sdir, NULL, &st, err, sizeof(err)), KR_EDB);
  assert_null(st);
  if (!strstr(err, want)) fail_msg("message \"%s\" lacks \"%s\"", err, want);
}

static void write_file(const char *name, const void *data, size_t n) {
  char path[400];
  mkdir(sdir, 0755);
  snprintf(path, sizeof(path), "%s/%s", sdir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void refuses_non_sqlite(void **state) {
  (void)state;
  char junk[4096];
  memset(junk, 'x', sizeof(junk));
  write_file("kria.db", junk, sizeof(junk));
  expect_refusal("kria.db: not an SQLite database");
  write_file("kria.db", "SQLite", 6); /* too short to be one */
  expect_refusal("not an SQLite database");
  /* The file was not touched. */
  struct stat sb;
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_size, 6);
}

static void make_db(const char *sql) {
  char path[400];
  mkdir(sdir, 0755);
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s", msg);
  sqlite3_close(db);
}

static void refuses_foreign(void **state) {
  (void)state;
  make_db("CREATE TABLE photos(id INTEGER PRIMARY KEY, data BLOB);");
  expect_refusal("not a kria state database (application_id 0x0");
  /* Still theirs: journal mode untouched, table intact. */
  assert_int_equal(sql_int("SELECT count(*) FROM photos"), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name='uris'"), 0);
  make_db("PRAGMA application_id = 1234;");
  expect_refusal("application_id 0x4d2");
}

static void refuses_newer_schema(void **state) {
  (void)state;
  kr_store_close(open_ok(NULL));
  make_db("PRAGMA user_version = 99;");
  char want[96];
  snprintf(want, sizeof want, "schema version 99 is newer than this kria knows (%d)",
           KR_STORE_SCHEMA);
  expect_refusal(want);
}

static void refuses_corrupt(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  for (int i = 0; i < 3000; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://h/some/longer/path/%d", i);
    kr_uri_row_t r = row(u, h, 0, (uint64_t)i);
    kr_store_uri_insert(st, &r);
  }
  kr_store_commit(st);
  kr_store_checkpoint(st);
  kr_store_close(st);
  /* Make sure the pages are in the main file, then scribble on some. */
  make_db("PRAGMA wal_checkpoint(TRUNCATE);");
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  char junk[4096];
  memset(junk, 0x5a, sizeof(junk));
  for (off_t pg = 3; pg < 40; pg += 4)
    assert_int_equal(pwrite(fd, junk, sizeof(junk), pg * 4096 + 100), (ssize_t)sizeof(junk));
  close(fd);
  expect_refusal("corrupt");
  /* In the background (the default with a loop): the open succeeds, the
   * check reports the damage and every later commit fails with it. */
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.loop = &loop;
  assert_int_equal(o.quick_check, 2);
  st = open_ok(&o);
  const char *msg = NULL;
  assert_int_equal(kr_store_check_state(st, &msg), 0); /* running */
  for (int k = 0; k < 1000 && kr_store_check_state(st, NULL) == 0; k++)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(kr_store_check_state(st, &msg), KR_EDB);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "kria.db: database is corrupt (quick_check"));
  assert_int_equal(kr_store_maybe_commit(st, 99999), KR_EDB);
  kr_store_close(st);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A sound database passes the background check; checkpoints wait for it. */
static void background_check_passes(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  kr_store_close(st);
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.loop = &loop;
  st = open_ok(&o);
  for (int k = 0; k < 1000 && kr_store_check_state(st, NULL) == 0; k++)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(kr_store_check_state(st, NULL), 1);
  kr_uri_row_t r = row("http://h/x", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &r), 1);
  assert_int_equal(kr_store_commit(st), 0);
  kr_store_close(st);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void second_instance_refused(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  expect_refusal("in use by another kria process (pid ");
  kr_store_close(st);
  kr_store_t *again = open_ok(NULL); /* the lock went with the close */
  kr_store_close(again);
}

static int nfp;
static uint64_t fps_seen[16];
static void on_fp(void *ud, uint64_t fp) {
  (void)ud;
  if (nfp < 16) fps_seen[nfp] = fp;
  nfp++;
}

static void fp_scan_signed_range(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  uint64_t fps[] = {(uint64_t)INT64_MIN, (uint64_t)INT64_MIN + 1, UINT64_MAX, 1, 2,
                    (uint64_t)INT64_MAX};
  for (size_t i = 0; i < 6; i++) {
    kr_uri_row_t r = row("http://x/", 1, 0, 1);
    r.fp = fps[i];
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
  }
  int64_t from = INT64_MIN;
  int done = 0, steps = 0;
  nfp = 0;
  while (!done && steps < 10) {
    assert_int_equal(kr_store_fp_scan(st, &from, 4, on_fp, NULL, &done), 0);
    steps++;
  }
  assert_int_equal(nfp, 6);
  assert_int_equal(steps, 2);
  assert_true(fps_seen[0] == (uint64_t)INT64_MIN);
  assert_true(fps_seen[2] == UINT64_MAX); /* -1 */
  assert_true(fps_seen[5] == (uint64_t)INT64_MAX);
  kr_store_close(st);
}

static void checkpoint_inline_and_async(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.loop = &loop;
  o.wal_checkpoint_bytes = 64 * 4096; /* 64 pages */
  o.commit_updates = 100;
  kr_store_t *st = open_ok(&o);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  uint64_t now = 1000;
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 200; i++) {
      char u[64];
      snprintf(u, sizeof(u), "http://h/%d/%d", round, i);
      kr_uri_row_t r = row(u, h, 0, 1);
      kr_store_uri_insert(st, &r);
    }
    now += 100;
    assert_int_equal(kr_store_maybe_commit(st, now), 1);
    /* Run the loop until the job (if any) has come back. */
    for (int k = 0; k < 1000 && kr_store_stats(st)->checkpoint_running; k++)
      uv_run(&loop, UV_RUN_ONCE);
  }
  const kr_store_stats_t *s = kr_store_stats(st);
  assert_true(s->checkpoints >= 1);
  assert_true(s->wal_frames_max >= 64);
  /* Checkpoints completed, so the WAL restarted instead of growing: 20
   * rounds wrote far more frames than the WAL ever held. */
  printf("# wal max %llu frames, %llu checkpoints\n",
         (unsigned long long)s->wal_frames_max, (unsigned long long)s->checkpoints);
  assert_true(s->wal_frames_max < 64 * 4);
  /* Idle: frames written since the last checkpoint get one after 1 s. */
  kr_uri_row_t r = row("http://h/idle", h, 0, 1);
  kr_store_uri_insert(st, &r);
  assert_int_equal(kr_store_commit(st), 0);
  kr_store_maybe_commit(st, now + 100); /* sets the idle reference */
  uint64_t before = s->checkpoints;
  assert_int_equal(kr_store_maybe_commit(st, now + 500), 0);
  assert_false(s->checkpoint_running);
  kr_store_maybe_commit(st, now + 1200);
  assert_true(s->checkpoint_running);
  for (int k = 0; k < 1000 && s->checkpoint_running; k++) uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(s->checkpoints, before + 1);
  /* Close while a job is queued: the store waits for its thread part and
   * the job's after-callback, run later, frees only itself. */
  kr_uri_row_t r2 = row("http://h/last", h, 0, 1);
  kr_store_uri_insert(st, &r2);
  kr_store_maybe_commit(st, now + 5000);
  kr_store_maybe_commit(st, now + 9000);
  kr_store_close(st);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 4002);
}

/* A checkpoint that fails (the database file cannot grow: a full disk,
 * here a file size limit) is retried 1 s, 2 s, 4 s ... apart, at most
 * 60 s, not at every chance; the first success ends the episode. */
static void checkpoint_failures_back_off(void **state) {
  (void)state;
  kr_store_opts_t o;
  kr_store_opts_default(&o); /* no loop: passes run inline */
  kr_store_t *st = open_ok(&o);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  for (int i = 0; i < 500; i++) {
    char u[64];
    snprintf(u, sizeof(u), "http://h/%d", i);
    kr_uri_row_t r = row(u, h, 0, 1);
    kr_store_uri_insert(st, &r);
  }
  assert_int_equal(kr_store_commit(st), 0);
  char path[400];
  struct stat sb;
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  assert_int_equal(stat(path, &sb), 0);
  /* The WAL holds the rows; the database file may not grow past its size. */
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = (rlim_t)sb.st_size;
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  const kr_store_stats_t *s = kr_store_stats(st);
  uint64_t ok0 = s->checkpoints;
  /* 100 s of idle turns, one every 10 ms: 1+2+4+8+16+32+60 = 63 s, so
   * attempts at 0, 1, 3, 7, 15, 31 and 63 s, and none after until 123 s. */
  uint64_t t0 = 10000;
  for (uint64_t t = t0; t < t0 + 100000; t += 10) kr_store_maybe_commit(st, t);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, was);
  printf("# %llu failed checkpoint passes in 100 s of turns\n",
         (unsigned long long)s->checkpoint_failures);
  assert_int_equal(s->checkpoint_failures, 7);
  assert_int_equal(s->checkpoints, ok0);
  /* Room again: the next attempt is due at 123 s, and it succeeds. */
  kr_store_maybe_commit(st, t0 + 122000);
  assert_int_equal(s->checkpoints, ok0);
  kr_store_maybe_commit(st, t0 + 123000);
  assert_int_equal(s->checkpoints, ok0 + 1);
  assert_int_equal(s->checkpoint_failures, 7);
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 500);
}

/* A reader that keeps a snapshot: no checkpoint can copy a frame past it,
 * as when the checkpoint thread is starved or the disk is slow. */
static sqlite3 *snapshot_reader(void) {
  char path[400];
  snprintf(path, sizeof(path), "%s/kria.db", sdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, kr_store_vfs()), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM uris", NULL, NULL, NULL),
                   SQLITE_OK);
  return db;
}

/* Commit a round of 100 new rows; the store's frames after it. */
static uint64_t write_round(kr_store_t *st, int64_t h, int round, uint64_t *now) {
  for (int i = 0; i < 100; i++) {
    char u[96];
    snprintf(u, sizeof(u), "http://h/a/somewhat/longer/path/%d/%d", round, i);
    kr_uri_row_t r = row(u, h, 0, 1);
    assert_true(kr_store_uri_insert(st, &r) >= 0);
  }
  *now += 100;
  assert_true(kr_store_maybe_commit(st, *now) >= 0);
  return kr_store_stats(st)->wal_frames;
}

/* Checkpoints that cannot keep up (a reader pins them here) let the WAL
 * pass wal_max_bytes: kr_store_wal_held() says so at once, writes still
 * commit, and the hold ends when a checkpoint has copied every frame; the
 * WAL then restarts. A leftover WAL past the cap holds from open. */
static void wal_cap_holds(void **state) {
  (void)state;
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.wal_checkpoint_bytes = 32 * 4096; /* 32 pages; cap 96 */
  o.commit_updates = 100;
  kr_store_t *st = open_ok(&o);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  uint64_t now = 1000;
  write_round(st, h, -1, &now);
  sqlite3 *rd = snapshot_reader();
  const kr_store_stats_t *s = kr_store_stats(st);
  uint64_t before = 0, frames = 0;
  int round = 0;
  while (!kr_store_wal_held(st) && round < 500) {
    before = frames;
    frames = write_round(st, h, round++, &now);
  }
  assert_true(kr_store_wal_held(st));
  assert_true(s->wal_held);
  assert_int_equal(s->wal_holds, 1);
  assert_true(frames >= 96);
  assert_true(before < 96); /* held by the commit that passed the cap */
  /* Held: what runs still commits, the hold stays. */
  write_round(st, h, round++, &now);
  assert_true(kr_store_wal_held(st));
  assert_int_equal(s->wal_holds, 1);
  /* The reader goes: the next pass copies everything, the hold ends. */
  sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL);
  now += 100;
  assert_int_equal(kr_store_maybe_commit(st, now), 0);
  assert_false(kr_store_wal_held(st));
  uint64_t restarts = s->restarts;
  frames = write_round(st, h, round++, &now);
  assert_true(s->restarts > restarts);
  assert_true(frames < 32);

  /* A WAL left over by a crash, past the cap, holds from open. */
  sqlite3_exec(rd, "BEGIN; SELECT count(*) FROM uris", NULL, NULL, NULL);
  for (int k = 0; k < 500 && !kr_store_wal_held(st); k++) write_round(st, h, round++, &now);
  assert_true(kr_store_wal_held(st));
  kr_store_abandon(st); /* the reader keeps the WAL from being checkpointed away */
  st = open_ok(&o);
  s = kr_store_stats(st);
  assert_true(kr_store_wal_held(st));
  assert_true(s->wal_frames >= 96);
  sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL);
  assert_int_equal(kr_store_maybe_commit(st, now + 100), 0);
  assert_false(kr_store_wal_held(st));
  sqlite3_close(rd);
  int64_t n = sql_int("SELECT count(*) FROM uris");
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), n);
  assert_int_equal(n, 100 * (round + 1));
}

/* A drain's pass that stops short of the WAL's end is followed by
 * another while passes still copy more. A pass stops at the mark of a
 * reader it finds busy, and under load that was the store's own
 * connection moving its mark as it began a read during the drain: the
 * drain ended after that one pass, the last commit stayed uncopied and
 * the WAL did not restart (test_frontier's held_back_during_drain failed
 * now and then). Here a reader pins a snapshot instead: the first pass
 * copies up to it, the second copies nothing more and ends the drain (no
 * pass loops on a reader that stays). Once it goes, one drain's pass
 * copies everything and the next transaction restarts the WAL. */
static void drain_pass_cut_short_runs_again(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.loop = &loop;
  o.quick_check = 0;
  o.commit_updates = 100;
  o.wal_checkpoint_bytes = 64 * 4096;
  o.idle_checkpoint_ms = UINT32_MAX; /* no idle pass: only drains copy */
  kr_store_t *st = open_ok(&o);
  const kr_store_stats_t *s = kr_store_stats(st);
  int64_t h;
  kr_store_host_insert(st, "h", 1, &h);
  uint64_t now = 1000;
  int round = 0;
  write_round(st, h, round++, &now);
  sqlite3 *rd = snapshot_reader();
  for (int k = 0; k < 500 && kr_store_writable(st); k++) write_round(st, h, round++, &now);
  assert_false(kr_store_writable(st)); /* draining */
  assert_int_equal(s->drains, 1);
  assert_int_equal(s->checkpoints, 0);
  for (int k = 0; k < 100000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_int_equal(s->checkpoints, 2); /* up to the reader, then no further */
  assert_int_equal(s->restarts, 0);
  /* The reader goes: the next drain copies everything in one pass. */
  sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(rd);
  now += 100;
  assert_int_equal(kr_store_maybe_commit(st, now), 0);
  assert_false(kr_store_writable(st));
  assert_int_equal(s->drains, 2);
  for (int k = 0; k < 100000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_int_equal(s->checkpoints, 3);
  uint64_t frames = write_round(st, h, round++, &now);
  assert_int_equal(s->restarts, 1);
  assert_true(frames < 64);
  assert_int_equal(kr_store_close(st), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A version 1 database (as kria wrote it before adaptive revisiting) is
 * migrated: validator columns, hint, digest index and view added; old
 * history BLOBs (no format byte) dropped; rows and hosts kept. */
static void migrates_v1(void **state) {
  (void)state;
  make_db("PRAGMA application_id = 1802660193;"
          "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
          "CREATE TABLE hosts(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
          " robots_expires INTEGER NOT NULL DEFAULT 0, robots_status INTEGER NOT NULL DEFAULT 0,"
          " crawl_delay_ms INTEGER NOT NULL DEFAULT -1, backoff_level INTEGER NOT NULL DEFAULT 0,"
          " backoff_until INTEGER NOT NULL DEFAULT 0, fail_streak INTEGER NOT NULL DEFAULT 0,"
          " discovered INTEGER NOT NULL DEFAULT 0, queued INTEGER NOT NULL DEFAULT 0,"
          " finished INTEGER NOT NULL DEFAULT 0, succeeded INTEGER NOT NULL DEFAULT 0,"
          " retried INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,"
          " disregarded INTEGER NOT NULL DEFAULT 0, backoffs INTEGER NOT NULL DEFAULT 0,"
          " bytes INTEGER NOT NULL DEFAULT 0);"
          "CREATE TABLE uris(fp INTEGER PRIMARY KEY, host_id INTEGER NOT NULL,"
          " directive INTEGER NOT NULL, next_at INTEGER NOT NULL, state INTEGER NOT NULL,"
          " url TEXT NOT NULL, via INTEGER, hop_path TEXT, first_seen INTEGER NOT NULL,"
          " last_visit INTEGER, wait_ms INTEGER, visits INTEGER NOT NULL DEFAULT 0,"
          " versions INTEGER NOT NULL DEFAULT 0, retries INTEGER NOT NULL DEFAULT 0,"
          " status INTEGER, content_type TEXT, digest BLOB, etag TEXT, last_modified INTEGER,"
          " history BLOB);"
          "CREATE INDEX uris_queue ON uris(host_id, directive DESC, next_at)"
          " WHERE next_at < 9223372036854775807;"
          "INSERT INTO meta VALUES('created', '1');"
          "INSERT INTO hosts(id, name, bytes) VALUES(1, 'old.example', 99);"
          "INSERT INTO uris(fp, host_id, directive, next_at, state, url, first_seen,"
          " wait_ms, visits, history) VALUES(77, 1, 0, 5, 1, 'http://old.example/', 1,"
          " 3600000, 2, x'0405');"
          "PRAGMA user_version = 1;");
  kr_store_t *st = open_ok(NULL);
  kr_uri_row_t r;
  assert_int_equal(kr_store_uri_get(st, 77, &r), 1);
  assert_int_equal(r.history_len, 0);
  assert_true(r.wait_ms == 3600000);
  assert_int_equal(r.visits, 2);
  assert_true(r.hint_rate == 0.0);
  assert_int_equal(kr_store_uri_set_hint(st, 77, 1.0 / 86400), 1);
  assert_int_equal(kr_store_uri_set_hint(st, 78, 1.0), 0);
  assert_int_equal(kr_store_uri_get(st, 77, &r), 1);
  assert_true(r.hint_rate > 1.15e-5 && r.hint_rate < 1.16e-5);
  kr_store_close(st);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(sql_int("SELECT bytes FROM hosts WHERE id = 1"), 99);
  assert_int_equal(sql_int("SELECT vt_checks FROM hosts WHERE id = 1"), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM digests"), 0);
  assert_int_equal(sql_int("SELECT checks FROM host_validators"), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM robots"), 0);    /* step 4 */
  /* steps 3 and 5 made originals, 6 folded them into uris */
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_date IS NOT NULL"), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'originals'"), 0);
}

/* A version-7 database gains the columns of the bounds (8): a URI's
 * 404/410 streak and last link, a host's refused and retired counts,
 * all starting at nothing; the new columns read and write. */
static void migrates_v7_bounds(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "b.example", 9, &h), 0);
  kr_uri_row_t a = row("http://b.example/a", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_close(st), 0);
  sql_exec("ALTER TABLE hosts DROP COLUMN learned;"
           "ALTER TABLE uris DROP COLUMN gone; ALTER TABLE uris DROP COLUMN last_linked;"
           "ALTER TABLE hosts DROP COLUMN refused; ALTER TABLE hosts DROP COLUMN retired;"
           "DROP TABLE websub; DROP TABLE outbox; PRAGMA user_version = 7;");
  st = open_ok(NULL);
  kr_uri_row_t r;
  assert_int_equal(kr_store_uri_get(st, a.fp, &r), 1);
  assert_int_equal(r.gone, 0);
  assert_true(r.last_linked == 0);
  r.gone = 2;
  r.state = KR_URI_RETIRED;
  assert_int_equal(kr_store_uri_update(st, &r), 1);
  assert_int_equal(kr_store_uri_set_linked(st, a.fp, 12345), 1);
  assert_int_equal(kr_store_uri_set_linked(st, 999, 12345), 0);
  assert_int_equal(kr_store_uri_get(st, a.fp, &r), 1);
  assert_int_equal(r.gone, 2);
  assert_int_equal(r.state, KR_URI_RETIRED);
  assert_true(r.last_linked == 12345);
  kr_host_row_t hr = {.id = h, .crawl_delay_ms = -1};
  hr.c.refused = 7;
  hr.c.retired = 3;
  assert_int_equal(kr_store_host_update(st, &hr), 0);
  kr_store_close(st);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(sql_int("SELECT refused FROM hosts"), 7);
  assert_int_equal(sql_int("SELECT retired FROM hosts"), 3);
}

static int read_learned(void *ud, const kr_host_row_t *h) {
  kr_buf_t *b = ud;
  kr_buf_printf(b, "%s:%zu:", h->name, h->learned_len);
  for (size_t i = 0; i < h->learned_len; i++) kr_buf_printf(b, "%02x", h->learned[i]);
  kr_buf_append(b, ";", 1);
  return 0;
}

/* A version-8 database (the previous schema: no learned column) opens
 * and gains hosts.learned (9); its hosts have no record (NULL, read as
 * none), their other columns are kept, and a record written reads back
 * byte for byte and can be cleared again. */
static void migrates_v8_learned(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "l.example", 9, &h), 0);
  kr_host_row_t hr = {.id = h, .crawl_delay_ms = 1500};
  hr.vt.checks = 42;
  hr.vt.miss_run = 1;
  assert_int_equal(kr_store_host_update(st, &hr), 0);
  assert_int_equal(kr_store_close(st), 0);
  sql_exec("ALTER TABLE hosts DROP COLUMN learned; DROP TABLE websub; DROP TABLE outbox;"
           " PRAGMA user_version = 8;");
  assert_int_equal(sql_int("SELECT count(*) FROM pragma_table_info('hosts') WHERE name = 'learned'"), 0);
  st = open_ok(NULL);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(KR_STORE_SCHEMA, 11);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  assert_int_equal(kr_store_hosts_each(st, read_learned, &b), 0);
  assert_string_equal(b.data, "l.example:0:;");
  const uint8_t rec[] = {1, 3, 0, 0xff};
  assert_int_equal(kr_store_host_set_learned(st, h, rec, sizeof rec), 0);
  assert_int_equal(kr_store_commit(st), 0);
  kr_buf_reset(&b);
  assert_int_equal(kr_store_hosts_each(st, read_learned, &b), 0);
  assert_string_equal(b.data, "l.example:4:010300ff;");
  assert_int_equal(kr_store_host_set_learned(st, h, NULL, 0), 0);
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM hosts WHERE learned IS NULL"), 1);
  assert_int_equal(sql_int("SELECT vt_checks FROM hosts"), 42);
  assert_int_equal(sql_int("SELECT crawl_delay_ms FROM hosts"), 1500);
  kr_buf_free(&b);
}

static int read_websub(void *ud, const kr_store_websub_t *w) {
  kr_buf_printf(ud, "%s %s %s %s %" PRIu64 ";", w->topic, w->hub, w->token, w->secret, w->expires);
  return 0;
}

/* A version-9 database (no websub table) opens and gains it (10), empty;
 * subscriptions written, replaced and removed read back in topic order,
 * also after a reopen. */
static void migrates_v9_websub(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  assert_int_equal(kr_store_close(st), 0);
  sql_exec("DROP TABLE websub; DROP TABLE outbox; PRAGMA user_version = 9;");
  st = open_ok(NULL);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  assert_int_equal(kr_store_websub_each(st, read_websub, &b), 0);
  assert_int_equal(b.len, 0);
  kr_store_websub_t w = {"http://b.example/feed", "http://hub.example/", "t1", "s1", 0};
  assert_int_equal(kr_store_websub_put(st, &w), 0);
  w = (kr_store_websub_t){"http://a.example/feed", "http://hub.example/", "t2", "s2", 5000};
  assert_int_equal(kr_store_websub_put(st, &w), 0);
  w = (kr_store_websub_t){"http://c.example/feed", "http://hub.example/", "t3", "s3", 1};
  assert_int_equal(kr_store_websub_put(st, &w), 0);
  w.hub = NULL;
  assert_int_equal(kr_store_websub_put(st, &w), KR_EINVAL);
  /* verified: the lease's end replaces the pending row */
  w = (kr_store_websub_t){"http://b.example/feed", "http://hub.example/", "t1", "s1", 9000};
  assert_int_equal(kr_store_websub_put(st, &w), 0);
  assert_int_equal(kr_store_websub_del(st, "http://c.example/feed"), 0);
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(kr_store_close(st), 0);
  st = open_ok(NULL);
  assert_int_equal(kr_store_websub_each(st, read_websub, &b), 0);
  assert_string_equal(b.data, "http://a.example/feed http://hub.example/ t2 s2 5000;"
                              "http://b.example/feed http://hub.example/ t1 s1 9000;");
  kr_store_close(st);
  kr_buf_free(&b);
}

static int read_outbox(void *ud, const kr_store_outbox_t *o) {
  kr_buf_printf(ud, "%" PRId64 " %s %s [%s] %" PRIu64 " %d;", o->id, o->member, o->url,
                o->hop_path, o->via, o->directive);
  return 0;
}

/* A version-10 database (no outbox) opens and gains it (11), empty; rows
 * read back oldest first past a given id, deleted ones are gone after a
 * reopen, and an id is never given twice, not even once every row was
 * deleted (the sender reads past the last id it sent). */
static void migrates_v10_outbox(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  assert_int_equal(kr_store_close(st), 0);
  sql_exec("DROP TABLE outbox; PRAGMA user_version = 10;");
  st = open_ok(NULL);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(kr_store_outbox_count(st), 0);
  kr_store_outbox_t o = {.member = "n2", .url = "http://b.test/x", .url_len = 15,
                         .hop_path = "L", .hop_len = 1, .via = 77, .directive = 1};
  assert_int_equal(kr_store_outbox_put(st, &o), 0);
  o = (kr_store_outbox_t){.member = "n3", .url = "http://c.test/", .url_len = 14};
  assert_int_equal(kr_store_outbox_put(st, &o), 0);
  o.member = "";
  assert_int_equal(kr_store_outbox_put(st, &o), KR_EINVAL);
  assert_int_equal(kr_store_outbox_count(st), 2);
  kr_buf_t b;
  kr_buf_init(&b, 1 << 16);
  assert_int_equal(kr_store_outbox_each(st, 0, 10, read_outbox, &b), 2);
  assert_string_equal(b.data, "1 n2 http://b.test/x [L] 77 1;2 n3 http://c.test/ [] 0 0;");
  kr_buf_reset(&b);
  assert_int_equal(kr_store_outbox_each(st, 1, 10, read_outbox, &b), 1);
  assert_string_equal(b.data, "2 n3 http://c.test/ [] 0 0;");
  assert_int_equal(kr_store_outbox_del(st, 1), 0);
  assert_int_equal(kr_store_outbox_del(st, 2), 0);
  assert_int_equal(kr_store_commit(st), 0);
  assert_int_equal(kr_store_close(st), 0);
  st = open_ok(NULL);
  assert_int_equal(kr_store_outbox_count(st), 0);
  o = (kr_store_outbox_t){.member = "n2", .url = "http://b.test/y", .url_len = 15};
  assert_int_equal(kr_store_outbox_put(st, &o), 0);
  kr_buf_reset(&b);
  assert_int_equal(kr_store_outbox_each(st, 2, 10, read_outbox, &b), 1);
  assert_string_equal(b.data, "3 n2 http://b.test/y [] 0 0;");
  kr_store_close(st);
  kr_buf_free(&b);
}

static void put_digest(kr_store_t *st, kr_uri_row_t *r, const uint8_t *d) {
  r->digest = d;
  r->digest_len = d ? 20 : 0;
  r->visits++;
  assert_int_equal(kr_store_uri_update(st, r), 1);
}

/* A version-5 database (originals in their own table, indexed by digest)
 * migrates to originals in the uris rows, read back the same. */
static void migrates_v5_originals(void **state) {
  (void)state;
  uint8_t d1[20], d2[20];
  memset(d1, 1, sizeof d1);
  memset(d2, 2, sizeof d2);
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "m.example", 9, &h), 0);
  kr_uri_row_t a = row("http://m.example/a", h, 0, 1);
  kr_uri_row_t b = row("http://m.example/b", h, 0, 1);
  kr_uri_row_t c = row("http://m.example/c", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_uri_insert(st, &b), 1);
  assert_int_equal(kr_store_uri_insert(st, &c), 1);
  put_digest(st, &a, d1);
  put_digest(st, &b, d2); /* its change digest is not its payload's */
  assert_int_equal(kr_store_close(st), 0);
  /* back to schema 5 as that release left it */
  char q[2048];
  snprintf(q, sizeof q,
           "ALTER TABLE hosts DROP COLUMN learned;"
           "ALTER TABLE uris DROP COLUMN gone; ALTER TABLE uris DROP COLUMN last_linked;"
           "ALTER TABLE hosts DROP COLUMN refused; ALTER TABLE hosts DROP COLUMN retired;"
           "DROP INDEX IF EXISTS uris_orig_digest; DROP INDEX uris_disregarded; DROP TABLE seeds;"
           "ALTER TABLE uris DROP COLUMN orig_digest; ALTER TABLE uris DROP COLUMN orig_rid;"
           "ALTER TABLE uris DROP COLUMN orig_fp; ALTER TABLE uris DROP COLUMN orig_date;"
           "CREATE TABLE originals(fp INTEGER PRIMARY KEY, digest BLOB NOT NULL,"
           " ofp INTEGER NOT NULL, date INTEGER NOT NULL, rid TEXT);"
           "CREATE INDEX originals_digest ON originals(digest);"
           "INSERT INTO originals VALUES(%lld, x'%s', 0, 5000,"
           " x'0123abcd4567489abcdef0123456789a');"
           "INSERT INTO originals VALUES(%lld, x'%s', %lld, 5000,"
           " x'0123abcd4567489abcdef0123456789a');"
           "INSERT INTO originals VALUES(%lld, x'%s', 0, 7000, NULL);"
           "INSERT INTO originals VALUES(4242, x'00', 0, 1, 'orphan');"
           "DROP TABLE websub; DROP TABLE outbox; PRAGMA user_version = 5;",
           (long long)a.fp, "0101010101010101010101010101010101010101", (long long)b.fp,
           "0101010101010101010101010101010101010101", (long long)a.fp, (long long)c.fp,
           "0202020202020202020202020202020202020202");
  sql_exec(q);
  st = open_ok(NULL);
  const char *ra = "<urn:uuid:0123abcd-4567-489a-bcde-f0123456789a>";
  kr_original_t o;
  assert_int_equal(kr_store_original_get(st, a.fp, &o), 1);
  assert_memory_equal(o.digest, d1, 20);
  assert_true(o.ofp == a.fp && o.date == 5000);
  assert_string_equal(o.rid, ra);
  assert_string_equal(o.url, a.url);
  assert_int_equal(kr_store_original_get(st, b.fp, &o), 1);
  assert_int_equal(o.digest_len, 20);
  assert_memory_equal(o.digest, d1, 20);
  assert_true(o.ofp == a.fp && o.date == 5000);
  assert_string_equal(o.url, a.url);
  assert_int_equal(kr_store_original_get(st, c.fp, &o), 1);
  assert_memory_equal(o.digest, d2, 20);
  assert_null(o.rid); /* written before schema 5 */
  assert_int_equal(kr_store_original_get(st, 4242, &o), 0);
  assert_int_equal(kr_store_original_find(st, d2, 20, &o), 1);
  assert_true(o.ofp == c.fp && o.date == 7000);
  assert_int_equal(kr_store_original_find(st, d1, 20, &o), 1);
  assert_true(o.ofp == a.fp);
  kr_store_close(st);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name LIKE 'originals%'"), 0);
  /* the payload digest is stored only where it is not the change digest */
  snprintf(q, sizeof q,
           "SELECT group_concat(CASE WHEN orig_digest IS NULL THEN '-' ELSE hex(orig_digest) END, ' ')"
           " FROM"
           " (SELECT orig_digest FROM uris WHERE fp IN (%lld, %lld, %lld) ORDER BY url)",
           (long long)a.fp, (long long)b.fp, (long long)c.fp);
  assert_string_equal(sql_text(q), "- 0101010101010101010101010101010101010101 "
                                   "0202020202020202020202020202020202020202");
}

/* The original lives in the uris row: no other write of the row loses it
 * or changes its digest, whichever digest the visits leave in the row. */
static void original_survives_row_writes(void **state) {
  (void)state;
  uint8_t d1[20], d2[20];
  memset(d1, 1, sizeof d1);
  memset(d2, 2, sizeof d2);
  const char *r1 = "<urn:uuid:00000000-0000-4000-8000-000000000001>";
  kr_store_t *st = open_ok(NULL);
  int64_t h, h2;
  assert_int_equal(kr_store_host_insert(st, "s.example", 9, &h), 0);
  assert_int_equal(kr_store_host_insert(st, "t.example", 9, &h2), 0);
  kr_uri_row_t a = row("http://s.example/a", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  /* the WARC writer notes the original before the visit's row is written */
  assert_int_equal(kr_store_original_put(st, a.fp, d1, 20, a.fp, 5000, r1), 0);
  put_digest(st, &a, d1);
  kr_original_t o;
  for (int step = 0; step < 7; step++) {
    switch (step) {
    case 1: put_digest(st, &a, d2); break; /* a change the WARC has not seen */
    case 2: put_digest(st, &a, NULL); break;
    case 3: assert_int_equal(kr_store_uri_set_sched(st, a.fp, 1, 77, 1), 1); break;
    case 4: assert_int_equal(kr_store_uri_set_hint(st, a.fp, 0.25), 1); break;
    case 5: assert_int_equal(kr_store_uri_insert(st, &a), 0); break;
    case 6:
      assert_true(kr_store_due_all(st, 10) >= 0);
      assert_int_equal(kr_store_uris_move_host(st, h, h2), 1);
      break;
    default: break;
    }
    assert_int_equal(kr_store_original_get(st, a.fp, &o), 1);
    assert_memory_equal(o.digest, d1, 20);
    assert_true(o.ofp == a.fp && o.date == 5000);
    assert_string_equal(o.rid, r1);
    assert_int_equal(kr_store_original_find(st, d1, 20, &o), 1);
    assert_int_equal(kr_store_original_find(st, d2, 20, &o), 0);
  }
  put_digest(st, &a, d1);
  assert_int_equal(kr_store_commit(st), 0);
  kr_store_close(st);
  /* the payload digest is the change digest again: not stored twice */
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_digest IS NOT NULL"), 0);
  /* without a uris row nothing is kept (the frontier issues none such) */
  st = open_ok(NULL);
  assert_int_equal(kr_store_original_put(st, 4242, d2, 20, 4242, 1, r1), 0);
  assert_int_equal(kr_store_original_get(st, 4242, &o), 0);
  kr_store_close(st);
}

static int uses_orig_index(void) {
  sqlite3 *db = db_open(SQLITE_OPEN_READONLY);
  sqlite3_stmt *s = query_row(db, "EXPLAIN QUERY PLAN SELECT fp FROM uris u WHERE"
                                  " substr(coalesce(u.orig_digest, u.digest), 1, 8) ="
                                  " substr(?1, 1, 8) AND coalesce(u.orig_digest, u.digest) = ?1"
                                  " AND u.orig_date IS NOT NULL ORDER BY u.fp LIMIT 1");
  int uses = 0, sorts = 0;
  while (sqlite3_step(s) == SQLITE_ROW) {
    const char *d = (const char *)sqlite3_column_text(s, 3);
    if (strstr(d, "uris_orig_digest")) uses = 1;
    if (strstr(d, "TEMP B-TREE")) sorts = 1;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  assert_false(sorts);
  return uses;
}

/* The index of originals by digest exists while opts.orig_index asks for
 * it, and the lookup by digest uses it; without it the lookup scans. */
static void orig_index_by_option(void **state) {
  (void)state;
  const char *has = "SELECT count(*) FROM sqlite_master WHERE name = 'uris_orig_digest'";
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  kr_store_t *st = open_ok(&o);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "i.example", 9, &h), 0);
  kr_uri_row_t a = row("http://i.example/a", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  uint8_t d[20];
  memset(d, 9, sizeof d);
  assert_int_equal(kr_store_original_put(st, a.fp, d, 20, a.fp, 5000, "<x>"), 0);
  kr_store_close(st);
  assert_int_equal(sql_int(has), 0); /* default: none on a new database */
  o.orig_index = 1;
  st = open_ok(&o);
  kr_original_t r;
  assert_int_equal(kr_store_original_find(st, d, 20, &r), 1);
  kr_store_close(st);
  assert_int_equal(sql_int(has), 1);
  assert_true(uses_orig_index());
  o.orig_index = 0; /* as it is */
  kr_store_close(open_ok(&o));
  assert_int_equal(sql_int(has), 1);
  /* one of another definition (an earlier build's) is built again */
  sql_exec("DROP INDEX uris_orig_digest; CREATE INDEX uris_orig_digest ON"
           " uris(coalesce(orig_digest, digest)) WHERE orig_date IS NOT NULL");
  const char *def = "SELECT instr(sql, 'substr(') > 0 FROM sqlite_master"
                    " WHERE name = 'uris_orig_digest'";
  assert_int_equal(sql_int(def), 0);
  o.orig_index = 1;
  kr_store_close(open_ok(&o));
  assert_int_equal(sql_int(def), 1);
  assert_true(uses_orig_index());
  o.orig_index = -1;
  st = open_ok(&o);
  assert_int_equal(kr_store_original_find(st, d, 20, &r), 1);
  assert_true(r.ofp == a.fp);
  kr_store_close(st);
  assert_int_equal(sql_int(has), 0);
  assert_false(uses_orig_index());
}

/* robots.txt rows: written in the current transaction, read back after a
 * reopen, replaced by the next fetch of the origin. */
static void robots_rows(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  kr_store_robots_t r;
  assert_int_equal(kr_store_robots_get(st, "http://a.example", 16, &r), 0);
  static const char body[] = "User-agent: *\nDisallow: /x\n";
  kr_store_robots_t w = {.expires = 123456789, .status = 200, .body = body,
                       .body_len = sizeof body - 1};
  assert_int_equal(kr_store_robots_put(st, "http://a.example", 16, &w), 0);
  kr_store_robots_t down = {.expires = 5000, .status = 503, .final = 1};
  assert_int_equal(kr_store_robots_put(st, "http://b.example:81", 19, &down), 0);
  kr_store_close(st);
  st = open_ok(NULL);
  assert_int_equal(kr_store_robots_get(st, "http://a.example", 16, &r), 1);
  assert_true(r.expires == 123456789);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.final, 0);
  assert_int_equal(r.body_len, sizeof body - 1);
  assert_memory_equal(r.body, body, sizeof body - 1);
  assert_int_equal(kr_store_robots_get(st, "http://b.example:81", 19, &r), 1);
  assert_int_equal(r.status, 503);
  assert_int_equal(r.final, 1);
  assert_int_equal(r.body_len, 0);
  w.status = 404;
  w.body = NULL;
  w.body_len = 0;
  assert_int_equal(kr_store_robots_put(st, "http://a.example", 16, &w), 0);
  assert_int_equal(kr_store_robots_get(st, "http://a.example", 16, &r), 1);
  assert_int_equal(r.status, 404);
  assert_int_equal(r.body_len, 0);
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM robots"), 2);
}

/* The payload digest index keeps the first URI and date of a digest. */
static void digest_index(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "d.example", 9, &h), 0);
  kr_uri_row_t a = row("http://d.example/a", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  uint8_t d1[20], d2[20];
  memset(d1, 1, sizeof d1);
  memset(d2, 2, sizeof d2);
  kr_store_digest_t ref;
  assert_int_equal(kr_store_digest_get(st, d1, 20, &ref), 0);
  assert_int_equal(kr_store_digest_put(st, d1, 20, a.fp, 5000), 1);
  assert_int_equal(kr_store_digest_put(st, d1, 20, 999, 6000), 0); /* first wins */
  assert_int_equal(kr_store_digest_put(st, d2, 20, 12345, 7000), 1);
  assert_int_equal(kr_store_digest_get(st, d1, 20, &ref), 1);
  assert_true(ref.fp == a.fp && ref.date == 5000);
  assert_non_null(ref.url);
  assert_string_equal(ref.url, "http://d.example/a");
  /* a later call (any) ends the row: the read transaction is released */
  assert_int_equal(kr_store_digest_get(st, d2, 20, &ref), 1);
  assert_true(ref.fp == 12345 && ref.date == 7000);
  assert_null(ref.url); /* no such URI row */
  assert_int_equal(kr_store_digest_get(st, NULL, 0, &ref), 0);
  assert_int_equal(kr_store_commit(st), 0);
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM digests"), 2);
}

/* Originals: by URI, by payload digest, replaced, and the URL of the
 * record's URI joined in. */
static void warc_originals(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "o.example", 9, &h), 0);
  kr_uri_row_t a = row("http://o.example/a", h, 0, 1);
  kr_uri_row_t b = row("http://o.example/b", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_uri_insert(st, &b), 1);
  uint8_t d1[20], d2[20];
  memset(d1, 1, sizeof d1);
  memset(d2, 2, sizeof d2);
  kr_original_t o;
  assert_int_equal(kr_store_original_get(st, a.fp, &o), 0);
  assert_int_equal(kr_store_original_find(st, d1, 20, &o), 0);
  const char *r1 = "<urn:uuid:00000000-0000-4000-8000-000000000001>";
  const char *r2 = "<urn:uuid:00000000-0000-4000-8000-000000000002>";
  assert_int_equal(kr_store_original_put(st, a.fp, NULL, 0, a.fp, 1, r1), KR_EINVAL);
  assert_int_equal(kr_store_original_put(st, a.fp, d1, 20, a.fp, 1, NULL), KR_EINVAL);
  assert_int_equal(kr_store_original_put(st, a.fp, d1, 20, a.fp, 1, ""), KR_EINVAL);
  assert_int_equal(kr_store_original_put(st, a.fp, d1, 20, a.fp, 5000, r1), 0);
  /* b's payload was found under a: b's original is a's record */
  assert_int_equal(kr_store_original_put(st, b.fp, d1, 20, a.fp, 5000, r1), 0);
  assert_int_equal(kr_store_original_get(st, b.fp, &o), 1);
  assert_non_null(o.rid);
  assert_string_equal(o.rid, r1);
  assert_int_equal(o.rid_len, strlen(r1));
  assert_int_equal(o.digest_len, 20);
  assert_memory_equal(o.digest, d1, 20);
  assert_true(o.ofp == a.fp && o.date == 5000);
  assert_non_null(o.url);
  assert_string_equal(o.url, "http://o.example/a");
  /* a changed: its original moves on */
  assert_int_equal(kr_store_original_put(st, a.fp, d2, 20, a.fp, 9000, r2), 0);
  assert_int_equal(kr_store_original_get(st, a.fp, &o), 1);
  assert_memory_equal(o.digest, d2, 20);
  assert_string_equal(o.rid, r2);
  assert_true(o.date == 9000);
  assert_int_equal(kr_store_original_find(st, d1, 20, &o), 1);
  assert_true(o.ofp == a.fp && o.date == 5000); /* b's row still names it */
  assert_string_equal(o.rid, r1);
  assert_int_equal(kr_store_original_find(st, NULL, 0, &o), 0);
  assert_int_equal(kr_store_commit(st), 0);
  kr_store_close(st);
  assert_int_equal(sql_int("SELECT count(*) FROM uris WHERE orig_date IS NOT NULL"), 2);
}

/* Originals are kept small: kria's record ids as 16 bytes, a URI that is
 * its own original without its fp again; other ids, and rows written
 * before (text ids, ofp spelled out), read back the same. */
static void warc_originals_compact(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "c.example", 9, &h), 0);
  kr_uri_row_t a = row("http://c.example/a", h, 0, 1);
  kr_uri_row_t b = row("http://c.example/b", h, 0, 1);
  kr_uri_row_t c = row("http://c.example/c", h, 0, 1);
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_uri_insert(st, &b), 1);
  assert_int_equal(kr_store_uri_insert(st, &c), 1);
  uint8_t d[20];
  memset(d, 7, sizeof d);
  const char *ra = "<urn:uuid:0123abcd-4567-489a-bcde-f0123456789a>";
  const char *rb = "<urn:uuid:0123ABCD-4567-489A-BCDE-F0123456789A>"; /* upper case: text */
  const char *rc = "<urn:example:not-a-uuid>";
  assert_int_equal(kr_store_original_put(st, a.fp, d, 20, a.fp, 1000, ra), 0);
  assert_int_equal(kr_store_original_put(st, b.fp, d, 20, b.fp, 2000, rb), 0);
  assert_int_equal(kr_store_original_put(st, c.fp, d, 20, a.fp, 1000, rc), 0);
  assert_int_equal(kr_store_commit(st), 0);
  kr_original_t o;
  assert_int_equal(kr_store_original_get(st, a.fp, &o), 1);
  assert_string_equal(o.rid, ra);
  assert_int_equal(o.rid_len, strlen(ra));
  assert_true(o.ofp == a.fp);
  assert_string_equal(o.url, "http://c.example/a");
  assert_int_equal(kr_store_original_get(st, b.fp, &o), 1);
  assert_string_equal(o.rid, rb);
  assert_true(o.ofp == b.fp);
  assert_int_equal(kr_store_original_get(st, c.fp, &o), 1);
  assert_string_equal(o.rid, rc);
  assert_true(o.ofp == a.fp);
  assert_string_equal(o.url, "http://c.example/a");
  kr_store_close(st);
  char q[160];
  snprintf(q, sizeof q,
           "SELECT typeof(orig_rid) || length(orig_rid) || '/' || orig_fp FROM uris WHERE fp = %lld",
           (long long)a.fp);
  assert_string_equal(sql_text(q), "blob16/0");
  snprintf(q, sizeof q, "SELECT typeof(orig_rid) || length(orig_rid) FROM uris WHERE fp = %lld",
           (long long)b.fp);
  assert_string_equal(sql_text(q), "text47");
  /* a row as an older kria wrote it: text id, ofp spelled out */
  snprintf(q, sizeof q, "UPDATE uris SET orig_rid = '%s', orig_fp = %lld WHERE fp = %lld", ra,
           (long long)a.fp, (long long)a.fp);
  sql_exec(q);
  st = open_ok(NULL);
  assert_int_equal(kr_store_original_get(st, a.fp, &o), 1);
  assert_string_equal(o.rid, ra);
  assert_true(o.ofp == a.fp);
  assert_int_equal(kr_store_original_find(st, d, 20, &o), 1);
  kr_store_close(st);
}

/* ---- row cache (rowcache.h) ---- */

static uint64_t rc_rng = 12345;
static uint64_t rc_rnd(void) { return th_splitmix64(&rc_rng); }

static kr_store_t *open_in(const char *dir, uint32_t row_cache) {
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.quick_check = 0;
  o.commit_updates = 1000000;
  o.row_cache = row_cache;
  kr_store_t *st = NULL;
  char err[512];
  if (kr_store_open(dir, &o, &st, err, sizeof err)) fail_msg("open %s: %s", dir, err);
  return st;
}

static void same_field(const void *a, size_t al, const void *b, size_t bl, const char *what) {
  if ((a == NULL) != (b == NULL) || al != bl || (a && memcmp(a, b, al)))
    fail_msg("%s differs: %.*s / %.*s", what, (int)al, a ? (const char *)a : "(null)", (int)bl,
             b ? (const char *)b : "(null)");
}

static void same_row(const kr_uri_row_t *a, const kr_uri_row_t *b) {
  assert_int_equal(a->fp, b->fp);
  assert_int_equal(a->host_id, b->host_id);
  assert_int_equal(a->directive, b->directive);
  assert_int_equal(a->next_at, b->next_at);
  assert_int_equal(a->state, b->state);
  same_field(a->url, a->url_len, b->url, b->url_len, "url");
  assert_int_equal(a->via, b->via);
  same_field(a->hop_path, a->hop_len, b->hop_path, b->hop_len, "hop_path");
  assert_int_equal(a->first_seen, b->first_seen);
  assert_int_equal(a->last_visit, b->last_visit);
  assert_int_equal(a->wait_ms, b->wait_ms);
  assert_int_equal(a->visits, b->visits);
  assert_int_equal(a->versions, b->versions);
  assert_int_equal(a->retries, b->retries);
  assert_int_equal(a->status, b->status);
  same_field(a->content_type, a->content_type_len, b->content_type, b->content_type_len,
             "content_type");
  same_field(a->digest, a->digest_len, b->digest, b->digest_len, "digest");
  same_field(a->etag, a->etag_len, b->etag, b->etag_len, "etag");
  assert_int_equal(a->last_modified, b->last_modified);
  same_field(a->history, a->history_len, b->history, b->history_len, "history");
  assert_true(a->hint_rate == b->hint_rate);
}

static int refuse_commit(void *ud) {
  (void)ud;
  return -1;
}

/* A random update: NULL, empty and odd values where the store maps them. */
static void random_update(kr_uri_row_t *u, uint64_t fp, char *text, uint8_t *blob) {
  memset(u, 0, sizeof *u);
  u->fp = fp;
  u->directive = (int)(rc_rnd() % 3);
  u->next_at = rc_rnd() % 4 ? rc_rnd() % 100000 : KR_NEVER;
  u->state = (int)(rc_rnd() % 5);
  u->last_visit = rc_rnd() % 3 ? rc_rnd() % 100000 : 0;
  u->wait_ms = rc_rnd() % 5 ? rc_rnd() % 100000 : UINT64_MAX;
  u->visits = (uint32_t)rc_rnd();
  u->versions = (uint32_t)rc_rnd();
  u->retries = (uint32_t)(rc_rnd() % 4);
  u->status = rc_rnd() % 3 ? 200 : rc_rnd() % 2 ? 0 : -5;
  size_t tl = rc_rnd() % 12, bl = rc_rnd() % 12;
  for (size_t i = 0; i < 12; i++) {
    text[i] = (char)('a' + rc_rnd() % 26);
    blob[i] = (uint8_t)rc_rnd();
  }
  text[12] = 0;
  switch (rc_rnd() % 3) {
  case 0: break; /* NULL */
  case 1: u->content_type = text, u->content_type_len = 0; break;
  default: u->content_type = text, u->content_type_len = tl;
  }
  if (rc_rnd() % 3) u->etag = text + 1, u->etag_len = tl ? tl - 1 : 0;
  if (rc_rnd() % 3) u->digest = blob, u->digest_len = rc_rnd() % 4 ? bl : 0;
  if (rc_rnd() % 3) u->history = blob + 1, u->history_len = bl ? bl - 1 : 0;
  u->last_modified = rc_rnd() % 3 ? (int64_t)(rc_rnd() % 100000) - 100 : 0;
}

/* Whatever the writes, a store keeping rows in memory reads back exactly
 * what one without does (both full and tiny caches), and it does serve
 * them from memory (a change behind its back is not seen). */
static void row_cache_reads_as_sqlite(void **state) {
  (void)state;
  char d0[320], d1[320], d2[320];
  snprintf(d0, sizeof d0, "%s/plain", tmpdir);
  snprintf(d1, sizeof d1, "%s/cached", tmpdir);
  snprintf(d2, sizeof d2, "%s/tiny", tmpdir);
  kr_store_t *st[3] = {open_in(d0, 0), open_in(d1, 1000), open_in(d2, 7)};
  enum { N = 40 };
  char urls[N][40];
  uint64_t fps[N];
  for (int i = 0; i < N; i++) {
    snprintf(urls[i], sizeof urls[i], "http://h%d.example/p%d", i % 3, i);
    kr_uri_row_t r = row(urls[i], 1 + i % 3, 0, (uint64_t)i);
    if (i % 4 == 0) r.hop_path = NULL, r.hop_len = 0;
    fps[i] = r.fp;
    for (int k = 0; k < 3; k++) assert_int_equal(kr_store_uri_insert(st[k], &r), 1);
  }
  for (int k = 0; k < 3; k++) assert_true(kr_store_commit(st[k]) >= 0);
  char text[13];
  uint8_t blob[12];
  for (int step = 0; step < 4000; step++) {
    uint64_t fp = rc_rnd() % 10 ? fps[rc_rnd() % N] : 42; /* 42: absent */
    unsigned op = (unsigned)(rc_rnd() % 100);
    kr_uri_row_t u;
    random_update(&u, fp, text, blob);
    double hint = rc_rnd() % 3 ? (double)(rc_rnd() % 1000) / 7.0 : rc_rnd() % 2 ? -1.0 : 1e301;
    int dir = (int)(rc_rnd() % 3), sstate = (int)(rc_rnd() % 5);
    uint64_t next = rc_rnd() % 100000;
    for (int k = 0; k < 3; k++) {
      kr_store_t *s = st[k];
      if (op < 40) {
        assert_int_equal(kr_store_uri_update(s, &u), fp != 42);
      } else if (op < 50) {
        /* an update of the row just read (its columns copied first: the
         * row's memory is the store's until the next call) */
        kr_uri_row_t g;
        char ct[64], et[64];
        uint8_t dg[64], hs[300];
        if (kr_store_uri_get(s, fp, &g) == 1) {
          if (g.content_type) g.content_type = memcpy(ct, g.content_type, g.content_type_len);
          if (g.etag) g.etag = memcpy(et, g.etag, g.etag_len);
          if (g.digest) g.digest = memcpy(dg, g.digest, g.digest_len);
          if (g.history) g.history = memcpy(hs, g.history, g.history_len);
          g.visits++;
          g.next_at = next;
          assert_int_equal(kr_store_uri_update(s, &g), 1);
        }
      } else if (op < 60) {
        assert_int_equal(kr_store_uri_set_sched(s, fp, dir, next, sstate), fp != 42);
      } else if (op < 66) {
        assert_int_equal(kr_store_uri_set_hint(s, fp, hint), fp != 42);
      } else if (op < 68) {
        assert_true(kr_store_uris_move_host(s, 1 + (int64_t)(step % 3), 1 + (int64_t)(op % 3)) >= 0);
      } else if (op < 69) {
        assert_true(kr_store_due_all(s, next) >= 0);
      } else if (op < 72) {
        assert_true(kr_store_commit(s) >= 0);
      } else if (op < 74) {
        /* the pre-commit step refuses: everything since the last commit
         * is rolled back */
        kr_store_set_precommit(s, refuse_commit, NULL);
        kr_store_commit(s);
        kr_store_set_precommit(s, NULL, NULL);
      }
    }
    for (int j = 0; j < 3; j++) {
      uint64_t q = fps[rc_rnd() % N];
      kr_uri_row_t a, b, c;
      assert_int_equal(kr_store_uri_get(st[0], q, &a), 1);
      assert_int_equal(kr_store_uri_get(st[1], q, &b), 1);
      same_row(&a, &b);
      assert_int_equal(kr_store_uri_get(st[0], q, &a), 1);
      assert_int_equal(kr_store_uri_get(st[2], q, &c), 1);
      same_row(&a, &c);
    }
  }
  /* served from memory: a change made behind the store's back is not
   * read by the cached store (it would be by the plain one) */
  kr_uri_row_t g;
  assert_int_equal(kr_store_uri_get(st[1], fps[0], &g), 1);
  assert_true(kr_store_commit(st[1]) >= 0);
  char path[400];
  snprintf(path, sizeof path, "%s/kria.db", d1);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *sql = sqlite3_mprintf("UPDATE uris SET visits = 777777 WHERE fp = %lld",
                              (long long)fps[0]);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_free(sql);
  sqlite3_close(db);
  assert_int_equal(kr_store_uri_get(st[1], fps[0], &g), 1);
  assert_int_not_equal(g.visits, 777777);
  for (int k = 0; k < 3; k++) assert_int_equal(kr_store_close(st[k]), 0);
}

/* A hint kept during a drain (store.c, writes kept) is not read before
 * the drain ends, as with SQLite, and is read from the row cache once it
 * has been applied. */
static void row_cache_hint_kept_in_drain(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.loop = &loop;
  o.quick_check = 0;
  o.commit_updates = 1;
  o.wal_checkpoint_bytes = 16 * 4096;
  o.row_cache = 1000;
  kr_store_t *st = open_ok(&o);
  char urls[300][48], hop[200];
  memset(hop, 'L', sizeof hop - 1);
  hop[sizeof hop - 1] = 0;
  uint64_t fps[300];
  for (int i = 0; i < 300; i++) {
    snprintf(urls[i], sizeof urls[i], "http://d.example/%d", i);
    kr_uri_row_t r = row(urls[i], 1, 0, (uint64_t)i);
    r.hop_path = hop;
    r.hop_len = strlen(hop);
    fps[i] = r.fp;
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
  }
  kr_uri_row_t g;
  assert_int_equal(kr_store_uri_get(st, fps[0], &g), 1); /* cached now */
  assert_true(g.hint_rate == 0);
  uint64_t now = 1000;
  for (int k = 0; k < 2000 && kr_store_writable(st); k++) {
    assert_int_equal(kr_store_uri_set_sched(st, fps[1 + k % 299], 0, (uint64_t)k, 0), 1);
    assert_true(kr_store_maybe_commit(st, now++) >= 0);
  }
  assert_false(kr_store_writable(st)); /* draining */
  uint64_t kept = kr_store_stats(st)->writes_kept;
  assert_int_equal(kr_store_uri_set_hint(st, fps[0], 0.5), 1);
  assert_int_equal(kr_store_stats(st)->writes_kept, kept + 1);
  assert_int_equal(kr_store_uri_get(st, fps[0], &g), 1);
  assert_true(g.hint_rate == 0); /* not applied yet */
  for (int k = 0; k < 100000 && !kr_store_writable(st); k++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(kr_store_writable(st));
  assert_true(kr_store_maybe_commit(st, now++) >= 0); /* applies the kept hint */
  assert_int_equal(kr_store_uri_get(st, fps[0], &g), 1);
  assert_true(g.hint_rate == 0.5);
  assert_int_equal(kr_store_close(st), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- scope: the seeds in force, disregarded URIs ---- */

typedef struct seed_seen {
  char urls[8][64];
  unsigned flags[8];
  int n;
} seed_seen_t;

static int seed_cb(void *ud, const char *url, size_t len, unsigned flags) {
  seed_seen_t *ss = ud;
  if (ss->n == 8) return -1;
  snprintf(ss->urls[ss->n], sizeof ss->urls[0], "%.*s", (int)len, url);
  ss->flags[ss->n++] = flags;
  return 0;
}

/* The seeds in force: put (a put again replaces), read back in URL
 * order, kept across a reopen, replaced as a whole. */
static void seeds_in_force(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  seed_seen_t ss = {0};
  assert_int_equal(kr_store_seeds_each(st, seed_cb, &ss), 0);
  assert_int_equal(ss.n, 0);
  assert_int_equal(kr_store_seed_put(st, "http://b.example/", 17, 2, 10), 0);
  assert_int_equal(kr_store_seed_put(st, "http://a.example/x", 18, 0, 10), 0);
  assert_int_equal(kr_store_seed_put(st, "http://b.example/", 17, 0, 11), 0);
  assert_int_equal(kr_store_seed_put(st, "", 0, 0, 11), KR_EINVAL);
  assert_int_equal(kr_store_close(st), 0);
  st = open_ok(NULL);
  assert_int_equal(kr_store_seeds_each(st, seed_cb, &ss), 0);
  assert_int_equal(ss.n, 2);
  assert_string_equal(ss.urls[0], "http://a.example/x");
  assert_string_equal(ss.urls[1], "http://b.example/");
  assert_int_equal(ss.flags[1], 0);
  assert_int_equal(kr_store_seeds_clear(st), 0);
  assert_int_equal(kr_store_seed_put(st, "http://c.example/", 17, 2, 12), 0);
  memset(&ss, 0, sizeof ss);
  assert_int_equal(kr_store_seeds_each(st, seed_cb, &ss), 0);
  assert_int_equal(ss.n, 1);
  assert_string_equal(ss.urls[0], "http://c.example/");
  assert_int_equal(ss.flags[0], 2);
  kr_store_close(st);
}

typedef struct page_seen {
  char urls[16][64];
  char hops[16][8];
  int n;
} page_seen_t;

static void page_cb(void *ud, const kr_uri_row_t *r) {
  page_seen_t *ps = ud;
  if (ps->n == 16) return;
  snprintf(ps->urls[ps->n], sizeof ps->urls[0], "%.*s", (int)r->url_len, r->url);
  snprintf(ps->hops[ps->n], sizeof ps->hops[0], "%.*s", (int)r->hop_len, r->hop_path ? r->hop_path : "");
  assert_true(r->fp == kr_fp(r->url, r->url_len));
  ps->n++;
}

static void set_state(kr_store_t *st, const char *url, int state, int status) {
  kr_uri_row_t r;
  assert_int_equal(kr_store_uri_get(st, kr_fp(url, strlen(url)), &r), 1);
  r.state = state;
  r.status = status;
  r.next_at = state == KR_URI_DISREGARDED ? KR_NEVER : r.next_at;
  assert_int_equal(kr_store_uri_update(st, &r), 1);
}

/* Pages of disregarded URIs: only state 3 with the status asked for, in
 * URL order, within (after, below), max at a time, through the partial
 * index; a URI revived (state queued) leaves it. */
static void disregarded_pages(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "d.example", 9, &h), 0);
  static const char *const urls[] = {"http://d.example/a", "http://d.example/b",
                                     "http://d.example/c", "http://e.example/a",
                                     "http://d.example/r", "http://d.example/q"};
  for (size_t i = 0; i < 6; i++) {
    kr_uri_row_t r = row(urls[i], h, 0, 1);
    assert_int_equal(kr_store_uri_insert(st, &r), 1);
  }
  set_state(st, urls[0], KR_URI_DISREGARDED, -5000);
  set_state(st, urls[1], KR_URI_DISREGARDED, -5000);
  set_state(st, urls[2], KR_URI_DISREGARDED, -5000);
  set_state(st, urls[3], KR_URI_DISREGARDED, -5000);
  set_state(st, urls[4], KR_URI_DISREGARDED, -9998);
  set_state(st, urls[5], KR_URI_FAILED, -5000); /* failed, not disregarded */
  page_seen_t ps = {0};
  assert_int_equal(kr_store_disregarded_page(st, -5000, NULL, 0, NULL, 0, 2, page_cb, &ps), 2);
  assert_string_equal(ps.urls[0], "http://d.example/a");
  assert_string_equal(ps.urls[1], "http://d.example/b");
  assert_string_equal(ps.hops[0], "L");
  assert_int_equal(kr_store_disregarded_page(st, -5000, ps.urls[1], strlen(ps.urls[1]), NULL, 0,
                                             10, page_cb, &ps), 2);
  assert_string_equal(ps.urls[2], "http://d.example/c");
  assert_string_equal(ps.urls[3], "http://e.example/a");
  /* one origin: below is the prefix with its last byte raised */
  memset(&ps, 0, sizeof ps);
  assert_int_equal(kr_store_disregarded_page(st, -5000, "http://d.example/", 17,
                                             "http://d.example0", 17, 10, page_cb, &ps), 3);
  memset(&ps, 0, sizeof ps);
  assert_int_equal(kr_store_disregarded_page(st, -9998, NULL, 0, NULL, 0, 10, page_cb, &ps), 1);
  assert_string_equal(ps.urls[0], "http://d.example/r");
  kr_store_uri_set_sched(st, kr_fp(urls[4], strlen(urls[4])), 0, 5, KR_URI_QUEUED);
  assert_int_equal(kr_store_disregarded_page(st, -9998, NULL, 0, NULL, 0, 10, page_cb, &ps), 0);
  assert_int_equal(kr_store_close(st), 0);
  /* the partial index answers the query, no table scan */
  sqlite3 *db = db_open(SQLITE_OPEN_READONLY);
  sqlite3_stmt *s = query_row(db, "EXPLAIN QUERY PLAN SELECT fp, url, hop_path FROM uris WHERE "
                                  "state = 3 AND status = -5000 AND url > '' AND url < 'z' "
                                  "ORDER BY url LIMIT 5");
  int indexed = 0;
  while (sqlite3_step(s) == SQLITE_ROW)
    if (strstr((const char *)sqlite3_column_text(s, 3), "uris_disregarded")) indexed = 1;
  sqlite3_finalize(s);
  sqlite3_close(db);
  assert_true(indexed);
}

/* A version-6 database (no seeds table) migrates: its URIs without hops
 * become the seeds in force, "/" ones flagged written without a path, and
 * the disregarded URIs get their index. */
static void migrates_v6_seeds(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t h;
  assert_int_equal(kr_store_host_insert(st, "s.example", 9, &h), 0);
  kr_uri_row_t a = row("http://s.example/", h, 0, 1);
  kr_uri_row_t b = row("https://t.example:8443/dir/", h, 0, 1);
  kr_uri_row_t c = row("http://s.example/linked", h, 0, 1);
  kr_uri_row_t p = row("http://s.example/robots.txt", h, 0, 1);
  a.hop_path = b.hop_path = "";
  a.hop_len = b.hop_len = 0;
  p.hop_path = "P";
  assert_int_equal(kr_store_uri_insert(st, &a), 1);
  assert_int_equal(kr_store_uri_insert(st, &b), 1);
  assert_int_equal(kr_store_uri_insert(st, &c), 1);
  assert_int_equal(kr_store_uri_insert(st, &p), 1);
  assert_int_equal(kr_store_close(st), 0);
  sql_exec("ALTER TABLE hosts DROP COLUMN learned;"
           "ALTER TABLE uris DROP COLUMN gone; ALTER TABLE uris DROP COLUMN last_linked;"
           "ALTER TABLE hosts DROP COLUMN refused; ALTER TABLE hosts DROP COLUMN retired;"
           "DROP INDEX uris_disregarded; DROP TABLE seeds; DROP TABLE websub; DROP TABLE outbox;"
           " PRAGMA user_version = 6;");
  st = open_ok(NULL);
  seed_seen_t ss = {0};
  assert_int_equal(kr_store_seeds_each(st, seed_cb, &ss), 0);
  assert_int_equal(ss.n, 2);
  assert_string_equal(ss.urls[0], "http://s.example/");
  assert_int_equal(ss.flags[0], 2);
  assert_string_equal(ss.urls[1], "https://t.example:8443/dir/");
  assert_int_equal(ss.flags[1], 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("PRAGMA user_version"), KR_STORE_SCHEMA);
  assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'uris_disregarded'"), 1);
}

/* ---- hosts moving to another member (store_move.c) ------------------------------- */

/* The rows export gave, deep-copied: [table, host, values...]. */
typedef struct moved_row {
  char table[8], host[32];
  kr_store_val_t v[KR_STORE_MOVE_COLS];
  size_t n;
} moved_row_t;
static moved_row_t moved[16];
static size_t nmoved;

static int keep_a(void *ud, const char *name, size_t len) {
  (void)ud;
  return len == 9 && !memcmp(name, "a.example", 9);
}

static int collect_row(void *ud, const char *table, const char *host, const kr_store_val_t *v,
                       size_t n) {
  (void)ud;
  assert_true(nmoved < sizeof moved / sizeof moved[0]);
  moved_row_t *m = &moved[nmoved++];
  snprintf(m->table, sizeof m->table, "%s", table);
  snprintf(m->host, sizeof m->host, "%s", host);
  m->n = n;
  for (size_t i = 0; i < n; i++) {
    m->v[i] = v[i];
    m->v[i].col = strdup(v[i].col);
    if (v[i].type == SQLITE_TEXT || v[i].type == SQLITE_BLOB) {
      void *p = malloc(v[i].n + 1);
      memcpy(p, v[i].p, v[i].n);
      m->v[i].p = p;
    }
  }
  return 0;
}

static void moved_free(void) {
  for (size_t r = 0; r < nmoved; r++)
    for (size_t i = 0; i < moved[r].n; i++) {
      free((void *)moved[r].v[i].col);
      if (moved[r].v[i].type == SQLITE_TEXT || moved[r].v[i].type == SQLITE_BLOB)
        free((void *)moved[r].v[i].p);
    }
  nmoved = 0;
}

/* A host leaves one state database with its URIs (every column, the
 * history BLOB included) and its host row (the learned record, the
 * counts), URIs first; it enters another in one transaction, replacing
 * a URI that one knew already and counting its rows there, its robots.txt
 * along (the new owner need not fetch it again); a column the schema has
 * not is refused; the host is dropped from the first with its robots.txt,
 * the other host kept. */
static void moves_hosts(void **state) {
  (void)state;
  kr_store_t *st = open_ok(NULL);
  int64_t ha, hb;
  assert_int_equal(kr_store_host_insert(st, "a.example", 9, &ha), 0);
  assert_int_equal(kr_store_host_insert(st, "b.example", 9, &hb), 0);
  static const uint8_t hist[] = {1, 2, 3, 0, 250};
  kr_uri_row_t a1 = row("http://a.example/1", ha, 0, 5000), a2 = row("http://a.example/2", ha, 0, KR_NEVER);
  kr_uri_row_t b1 = row("http://b.example/1", hb, 0, 7000);
  assert_int_equal(kr_store_uri_insert(st, &a1), 1);
  assert_int_equal(kr_store_uri_insert(st, &a2), 1);
  assert_int_equal(kr_store_uri_insert(st, &b1), 1);
  a1.visits = 7, a1.history = hist, a1.history_len = sizeof hist;
  assert_true(kr_store_uri_update(st, &a1) >= 0);
  static const uint8_t rec[] = {9, 8, 7};
  assert_int_equal(kr_store_host_set_learned(st, ha, rec, sizeof rec), 0);
  kr_store_robots_t rb = {.expires = 77, .status = 200, .body = "User-agent: *", .body_len = 13};
  assert_int_equal(kr_store_robots_put(st, "http://a.example", 16, &rb), 0);
  assert_int_equal(kr_store_robots_put(st, "http://b.example", 16, &rb), 0);
  assert_int_equal(kr_store_commit(st), 0);
  nmoved = 0;
  assert_int_equal(kr_store_move_export(st, keep_a, collect_row, NULL), 0);
  assert_int_equal(nmoved, 4);
  assert_string_equal(moved[0].table, "uris");
  assert_string_equal(moved[2].table, "robots");
  assert_string_equal(moved[3].table, "hosts");
  assert_string_equal(moved[3].host, "a.example");
  assert_int_equal(kr_store_close(st), 0);

  /* the new owner knew a.example/1 already (a link it was sent) */
  char first[300];
  snprintf(first, sizeof first, "%s", sdir);
  snprintf(sdir, sizeof sdir, "%s/other", tmpdir);
  st = open_ok(NULL);
  int64_t ho;
  assert_int_equal(kr_store_host_insert(st, "a.example", 9, &ho), 0);
  kr_uri_row_t known = row("http://a.example/1", ho, 0, 1);
  known.first_seen = 99999;
  assert_int_equal(kr_store_uri_insert(st, &known), 1);
  kr_store_move_t *mv;
  assert_int_equal(kr_store_move_begin(st, &mv), 0);
  for (size_t r = 0; r < nmoved; r++)
    assert_int_equal(kr_store_move_put(mv, moved[r].table, moved[r].host, moved[r].v, moved[r].n), 0);
  kr_store_val_t bad = {.col = "no_such_column", .type = SQLITE_INTEGER, .i = 1};
  assert_int_equal(kr_store_move_put(mv, "uris", "a.example", &bad, 1), KR_EINVAL);
  bad.col = "url); DROP TABLE uris; --";
  assert_int_equal(kr_store_move_put(mv, "uris", "a.example", &bad, 1), KR_EINVAL);
  assert_int_equal(kr_store_move_put(mv, "meta", "a.example", &bad, 1), KR_EINVAL);
  assert_int_equal(kr_store_move_meta(mv, "cluster.epoch", "1"), 0);
  assert_int_equal(kr_store_move_commit(mv), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 2);
  assert_int_equal(sql_int("SELECT visits FROM uris WHERE url = 'http://a.example/1'"), 7);
  assert_int_equal(sql_int("SELECT next_at FROM uris WHERE url = 'http://a.example/1'"), 5000);
  assert_int_equal(sql_int("SELECT first_seen FROM uris WHERE url = 'http://a.example/1'"), 1000);
  assert_string_equal(sql_text("SELECT hex(history) FROM uris WHERE url = 'http://a.example/1'"),
                      "01020300FA");
  assert_string_equal(sql_text("SELECT hex(learned) FROM hosts"), "090807");
  assert_int_equal(sql_int("SELECT discovered FROM hosts"), 2);
  assert_int_equal(sql_int("SELECT queued FROM hosts"), 1);
  assert_string_equal(sql_text("SELECT value FROM meta WHERE key = 'cluster.epoch'"), "1");
  assert_string_equal(sql_text("SELECT origin || ' ' || expires || ' ' || body FROM robots"),
                      "http://a.example 77 User-agent: *");
  moved_free();

  /* the old owner drops it, keeps the other */
  snprintf(sdir, sizeof sdir, "%s", first);
  st = open_ok(NULL);
  assert_int_equal(kr_store_move_begin(st, &mv), 0);
  assert_int_equal(kr_store_move_drop(mv, keep_a, NULL), 1);
  assert_int_equal(kr_store_move_commit(mv), 0);
  assert_int_equal(kr_store_close(st), 0);
  assert_string_equal(sql_text("SELECT group_concat(name) FROM hosts"), "b.example");
  assert_string_equal(sql_text("SELECT group_concat(origin) FROM robots"), "http://b.example");
  assert_int_equal(sql_int("SELECT count(*) FROM uris"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(fresh_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(wal_cap_holds, setup, teardown),
      cmocka_unit_test_setup_teardown(drain_pass_cut_short_runs_again, setup, teardown),
      cmocka_unit_test_setup_teardown(uris_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(hosts_reload, setup, teardown),
      cmocka_unit_test_setup_teardown(grouped_commits, setup, teardown),
      cmocka_unit_test_setup_teardown(presync_before_commit, setup, teardown),
      cmocka_unit_test_setup_teardown(originals_kept_past_limit_while_commit_waits, setup, teardown),
      cmocka_unit_test_setup_teardown(originals_kept_past_limit_in_held_unit, setup, teardown),
      cmocka_unit_test_setup_teardown(abandon_loses_only_uncommitted, setup, teardown),
      cmocka_unit_test_setup_teardown(wal_writes_gathered, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_non_sqlite, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_foreign, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_newer_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_corrupt, setup, teardown),
      cmocka_unit_test_setup_teardown(background_check_passes, setup, teardown),
      cmocka_unit_test_setup_teardown(second_instance_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(fp_scan_signed_range, setup, teardown),
      cmocka_unit_test_setup_teardown(checkpoint_failures_back_off, setup, teardown),
      cmocka_unit_test_setup_teardown(checkpoint_inline_and_async, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v1, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v5_originals, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v7_bounds, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v8_learned, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v9_websub, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v10_outbox, setup, teardown),
      cmocka_unit_test_setup_teardown(original_survives_row_writes, setup, teardown),
      cmocka_unit_test_setup_teardown(orig_index_by_option, setup, teardown),
      cmocka_unit_test_setup_teardown(robots_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(digest_index, setup, teardown),
      cmocka_unit_test_setup_teardown(warc_originals, setup, teardown),
      cmocka_unit_test_setup_teardown(warc_originals_compact, setup, teardown),
      cmocka_unit_test_setup_teardown(row_cache_reads_as_sqlite, setup, teardown),
      cmocka_unit_test_setup_teardown(row_cache_hint_kept_in_drain, setup, teardown),
      cmocka_unit_test_setup_teardown(seeds_in_force, setup, teardown),
      cmocka_unit_test_setup_teardown(disregarded_pages, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_v6_seeds, setup, teardown),
      cmocka_unit_test_setup_teardown(moves_hosts, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
