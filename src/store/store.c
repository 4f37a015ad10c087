/*
 * The crawl state in SQLite (see store.h for the schema and the rules).
 * One connection writes on the loop thread through statements prepared
 * once at open; writes join a lazily opened transaction that only
 * kr_store_maybe_commit()/kr_store_commit() end, so the caller decides
 * where commit boundaries fall. A second connection exists only for
 * checkpoints, run as uv_queue_work jobs so a commit never pays for
 * copying the WAL back. Opening refuses anything that is not a kria
 * database of a schema this build knows, and never rewrites such a file.
 * Sections here: statements, errors, lock, open and schema, readers.
 * The transactions, kept writes and checkpoints are in store_tx.c, the
 * rows (URIs, hosts, meta, digests, originals, robots.txt, scope) in
 * store_rows.c; store_int.h is what they share.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"
#include "rowcache.h"
#include "store_int.h"
#include "turnprof.h"

/* ---- statements ---------------------------------------------------------- */

#define URI_COLS                                                           \
  "fp, host_id, directive, next_at, state, url, via, hop_path, first_seen, " \
  "last_visit, wait_ms, visits, versions, retries, status, content_type, "   \
  "digest, etag, last_modified, history, hint, gone, last_linked"

#define HOST_COLS                                                           \
  "id, name, robots_expires, robots_status, crawl_delay_ms, backoff_level, " \
  "backoff_until, fail_streak, discovered, queued, finished, succeeded, "    \
  "retried, failed, disregarded, backoffs, bytes, vt_checks, "               \
  "vt_predicted_unchanged, vt_skipped, vt_verified, vt_misses, "             \
  "vt_false_alarms, vt_distrusts, vt_miss_run, vt_distrust_until, refused, retired, " \
  "learned"

/* A URI's original (see store.h): set when orig_date is, its digest the
 * change digest unless orig_digest says otherwise, orig_fp 0 the URI. */
#define ORIG_SET "u.orig_date IS NOT NULL"
#define ORIG_DIGEST "coalesce(u.orig_digest, u.digest)"
/* uris_orig_digest's key: 8 bytes of the digest tell payloads apart as
 * well as 20 for a lookup that then compares all of it (12 bytes less
 * per visited URI) */
#define ORIG_KEY "substr(" ORIG_DIGEST ", 1, 8)"
#define ORIG_COLS                                                      \
  ORIG_DIGEST ", CASE u.orig_fp WHEN 0 THEN u.fp ELSE u.orig_fp END, " \
  "u.orig_date, o.url, u.orig_rid FROM uris u LEFT JOIN uris o "       \
  "ON o.fp = CASE u.orig_fp WHEN 0 THEN u.fp ELSE u.orig_fp END"
/* Every write of uris.digest keeps the original's digest as it was. */
#define ORIG_KEEP_DIGEST(d)                                                  \
  "orig_digest = CASE WHEN orig_date IS NULL OR coalesce(orig_digest, digest) IS " d \
  " THEN NULL ELSE coalesce(orig_digest, digest) END"

static const char *const stmt_sql[S__COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_URI_INSERT] =
        "INSERT OR IGNORE INTO uris(fp, host_id, directive, next_at, state, "
        "url, via, hop_path, first_seen, hint) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
    [S_URI_GET] = "SELECT " URI_COLS " FROM uris WHERE fp = ?1",
    [S_URI_SCHED_GET] =
        "SELECT host_id, directive, next_at, state FROM uris WHERE fp = ?1",
    [S_URI_UPDATE] =
        "UPDATE uris SET directive=?2, next_at=?3, state=?4, last_visit=?5, "
        "wait_ms=?6, visits=?7, versions=?8, retries=?9, status=?10, "
        "content_type=?11, digest=?12, etag=?13, last_modified=?14, "
        "history=?15, gone=?16, " ORIG_KEEP_DIGEST("?12") " WHERE fp = ?1",
    [S_URI_SET_SCHED] =
        "UPDATE uris SET directive=?2, next_at=?3, state=?4 WHERE fp = ?1",
    [S_PICK] = "SELECT fp, directive, next_at FROM uris "
               "WHERE host_id = ?1 AND next_at < " NEVER_SQL
               " ORDER BY directive DESC, next_at, fp LIMIT ?2",
    [S_COUNT_QUEUED_HOST] = "SELECT count(*) FROM uris WHERE host_id = ?1 "
                            "AND next_at < " NEVER_SQL,
    [S_COUNT_QUEUED_ALL] =
        "SELECT count(*) FROM uris WHERE next_at < " NEVER_SQL,
    [S_COUNT_URIS] = "SELECT count(*) FROM uris",
    [S_FP_SCAN] = "SELECT fp FROM uris WHERE fp >= ?1 ORDER BY fp LIMIT ?2",
    [S_HOST_INSERT] = "INSERT INTO hosts(name) VALUES (?1)",
    [S_HOST_UPDATE] =
        "UPDATE hosts SET robots_expires=?2, robots_status=?3, "
        "crawl_delay_ms=?4, backoff_level=?5, backoff_until=?6, "
        "fail_streak=?7, discovered=?8, queued=?9, finished=?10, "
        "succeeded=?11, retried=?12, failed=?13, disregarded=?14, "
        "backoffs=?15, bytes=?16, vt_checks=?17, vt_predicted_unchanged=?18, "
        "vt_skipped=?19, vt_verified=?20, vt_misses=?21, vt_false_alarms=?22, "
        "vt_distrusts=?23, vt_miss_run=?24, vt_distrust_until=?25, refused=?26, "
        "retired=?27 WHERE id = ?1",
    [S_HOSTS_EACH] = "SELECT " HOST_COLS " FROM hosts ORDER BY id",
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
    [S_DIGEST_GET] = "SELECT d.fp, d.date, u.url FROM digests d LEFT JOIN uris u "
                     "ON u.fp = d.fp WHERE d.digest = ?1",
    [S_DIGEST_PUT] = "INSERT OR IGNORE INTO digests(digest, fp, date) VALUES (?1,?2,?3)",
    [S_URI_SET_HINT] = "UPDATE uris SET hint = ?2 WHERE fp = ?1",
    [S_URL_GET] = "SELECT url FROM uris WHERE fp = ?1",
    /* ofp 0 is the URI itself (see kr_store_original_put) */
    [S_ORIG_GET] = "SELECT " ORIG_COLS " WHERE u.fp = ?1 AND " ORIG_SET,
    /* the terms of uris_orig_digest, so that SQLite uses it */
    [S_ORIG_FIND] = "SELECT " ORIG_COLS " WHERE " ORIG_KEY " = substr(?1, 1, 8) AND "
                    ORIG_DIGEST " = ?1 AND " ORIG_SET " ORDER BY u.fp LIMIT 1",
    [S_ORIG_PUT] = "UPDATE uris SET orig_digest = CASE WHEN digest IS ?2 THEN NULL ELSE ?2 END, "
                   "orig_fp = ?3, orig_date = ?4, orig_rid = ?5 WHERE fp = ?1",
    [S_ROBOTS_GET] = "SELECT expires, status, final, body FROM robots WHERE origin = ?1",
    [S_ROBOTS_PUT] = "INSERT OR REPLACE INTO robots(origin, expires, status, final, body)"
                     " VALUES (?1,?2,?3,?4,?5)",
    [S_URIS_MOVE_HOST] = "UPDATE uris SET host_id = ?2 WHERE host_id = ?1 AND next_at < " NEVER_SQL,
    [S_URI_SET_LINKED] = "UPDATE uris SET last_linked = ?2 WHERE fp = ?1",
    [S_HOST_SET_LEARNED] = "UPDATE hosts SET learned = ?2 WHERE id = ?1",
    [S_WEBSUB_PUT] = "INSERT OR REPLACE INTO websub(topic, hub, token, secret, expires)"
                     " VALUES (?1,?2,?3,?4,?5)",
    [S_WEBSUB_DEL] = "DELETE FROM websub WHERE topic = ?1",
    [S_OUTBOX_PUT] = "INSERT INTO outbox(member, url, hop_path, via, directive)"
                     " VALUES (?1,?2,?3,?4,?5)",
    [S_OUTBOX_DEL] = "DELETE FROM outbox WHERE id = ?1",
};

/* Schema migrations: step v brings user_version v-1 to v. Each runs with
 * the version bump in one transaction. Never edit a released step; add
 * one. */
static const char *const migrations[] = {
    NULL,
    /* 1 */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "CREATE TABLE hosts("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " robots_expires INTEGER NOT NULL DEFAULT 0,"
    " robots_status INTEGER NOT NULL DEFAULT 0,"
    " crawl_delay_ms INTEGER NOT NULL DEFAULT -1,"
    " backoff_level INTEGER NOT NULL DEFAULT 0,"
    " backoff_until INTEGER NOT NULL DEFAULT 0,"
    " fail_streak INTEGER NOT NULL DEFAULT 0,"
    " discovered INTEGER NOT NULL DEFAULT 0,"
    " queued INTEGER NOT NULL DEFAULT 0,"
    " finished INTEGER NOT NULL DEFAULT 0,"
    " succeeded INTEGER NOT NULL DEFAULT 0,"
    " retried INTEGER NOT NULL DEFAULT 0,"
    " failed INTEGER NOT NULL DEFAULT 0,"
    " disregarded INTEGER NOT NULL DEFAULT 0,"
    " backoffs INTEGER NOT NULL DEFAULT 0,"
    " bytes INTEGER NOT NULL DEFAULT 0);"
    /* Scheduling columns first: the record is read left to right. */
    "CREATE TABLE uris("
    " fp INTEGER PRIMARY KEY,"
    " host_id INTEGER NOT NULL,"
    " directive INTEGER NOT NULL,"
    " next_at INTEGER NOT NULL,"
    " state INTEGER NOT NULL,"
    " url TEXT NOT NULL,"
    " via INTEGER,"
    " hop_path TEXT,"
    " first_seen INTEGER NOT NULL,"
    " last_visit INTEGER,"
    " wait_ms INTEGER,"
    " visits INTEGER NOT NULL DEFAULT 0,"
    " versions INTEGER NOT NULL DEFAULT 0,"
    " retries INTEGER NOT NULL DEFAULT 0,"
    " status INTEGER,"
    " content_type TEXT,"
    " digest BLOB,"
    " etag TEXT,"
    " last_modified INTEGER,"
    " history BLOB);"
    "CREATE INDEX uris_queue ON uris(host_id, directive DESC, next_at)"
    " WHERE next_at < " NEVER_SQL ";",
    /* 2: adaptive revisiting. Validator trust per host (kr_vtrust_t) and
     * the view reporting it; the sitemap changefreq hint per URI; the
     * payload digest index for URL-agnostic duplicates (first URI and
     * date of each payload). History BLOBs of version 1 were kr_history
     * entries without a format byte, which kr_vhist (estimate.h) cannot
     * read: they are dropped (the wait in uris.wait_ms stays). */
    "ALTER TABLE hosts ADD COLUMN vt_checks INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_predicted_unchanged INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_skipped INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_verified INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_misses INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_false_alarms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_distrusts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_miss_run INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN vt_distrust_until INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE uris ADD COLUMN hint REAL;"
    "UPDATE uris SET history = NULL WHERE history IS NOT NULL;"
    "CREATE TABLE digests(digest BLOB PRIMARY KEY, fp INTEGER NOT NULL,"
    " date INTEGER NOT NULL) WITHOUT ROWID;"
    /* validators.h defines the measures; -1 there is NULL here */
    "CREATE VIEW host_validators AS SELECT name, vt_checks AS checks,"
    " vt_predicted_unchanged AS predicted_unchanged, vt_skipped AS skipped,"
    " vt_verified AS verified, vt_misses AS misses, vt_false_alarms AS false_alarms,"
    " vt_distrusts AS distrusts, vt_distrust_until AS distrust_until,"
    " CASE WHEN vt_verified > 0 THEN (vt_verified - vt_misses) * 1.0 / vt_verified END"
    " AS reliability,"
    " CASE WHEN vt_checks > 0 THEN COALESCE(CASE WHEN vt_verified > 0 THEN"
    " (vt_verified - vt_misses) * 1.0 / vt_verified END, 1.0) * vt_predicted_unchanged"
    " / vt_checks END AS usefulness FROM hosts;",
    /* 3: WARC originals. Per URI, the payload digest of its current
     * version and the response record that holds that payload (its URI
     * and WARC-Date), written only once the record is in a WARC file:
     * what a revisit record refers to. */
    "CREATE TABLE originals(fp INTEGER PRIMARY KEY, digest BLOB NOT NULL,"
    " ofp INTEGER NOT NULL, date INTEGER NOT NULL);"
    "CREATE INDEX originals_digest ON originals(digest);",
    /* 4: robots.txt per origin (the last fetch: status, the body of a
     * 2xx, when it expires, whether its prerequisite gave up), so a
     * restart does not fetch every host's robots.txt again at once. */
    "CREATE TABLE robots(origin TEXT PRIMARY KEY, expires INTEGER NOT NULL,"
    " status INTEGER NOT NULL, final INTEGER NOT NULL DEFAULT 0, body BLOB);",
    /* 5: the original's WARC-Record-ID, for a revisit's WARC-Refers-To.
     * Rows of versions 3-4 have none (NULL): the writer stores the content
     * again rather than write a revisit that cannot name its original. */
    "ALTER TABLE originals ADD COLUMN rid TEXT;",
    /* 6: the originals go into the uris row (67 + 38 bytes of table and
     * index per visited URI -> about 26): the payload digest only when
     * it differs from the change digest (a content coding, stripped
     * sections), the index by digest only where dedupe reads it
     * (opts.orig_index). An original of a URI without a row (none is
     * ever written) is dropped. */
    "ALTER TABLE uris ADD COLUMN orig_date INTEGER;"
    "ALTER TABLE uris ADD COLUMN orig_fp INTEGER;"
    "ALTER TABLE uris ADD COLUMN orig_rid BLOB;"
    "ALTER TABLE uris ADD COLUMN orig_digest BLOB;"
    "UPDATE uris SET orig_date = o.date, orig_fp = o.ofp, orig_rid = o.rid,"
    " orig_digest = CASE WHEN o.digest IS uris.digest THEN NULL ELSE o.digest END"
    " FROM originals o WHERE o.fp = uris.fp;"
    "DROP TABLE originals;",
    /* 7: the crawl's scope is part of its state. The seeds in force (so a
     * restart without crawl.seeds, or a reload with a broken seeds file,
     * cannot put the crawl's hosts out of scope): an existing crawl's are
     * its URIs without hops, flagged "written without a path" when their
     * path is "/" (the wider reading in surt mode; KR_SEED_NO_PATH). The
     * disregarded URIs by status and URL, so those the scope or a host's
     * robots.txt no longer rejects are found without a scan. */
    "CREATE TABLE seeds(url TEXT PRIMARY KEY, flags INTEGER NOT NULL DEFAULT 0,"
    " added INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO seeds(url, flags, added) SELECT url,"
    " CASE WHEN instr(substr(url, instr(url, '://') + 3), '/') ="
    " length(substr(url, instr(url, '://') + 3)) THEN 2 ELSE 0 END, first_seen"
    " FROM uris WHERE coalesce(hop_path, '') = '';"
    "CREATE INDEX uris_disregarded ON uris(status, url) WHERE state = 3;",
    /* 8: bounds for an endless crawl. Per URI the run of 404/410 answers
     * in a row (gone) and when a page last linked to it (last_linked,
     * NULL: not since it was found, first_seen); per host the links
     * refused at its URI cap and the URIs it retired (frontier.h). */
    "ALTER TABLE uris ADD COLUMN gone INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE uris ADD COLUMN last_linked INTEGER;"
    "ALTER TABLE hosts ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE hosts ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;",
    /* 9: what a host's crawl has learned (kria/hoststate.h: the poisson
     * allocator, the capacity plan, the validator-trust run), so that a
     * restart continues instead of learning again. NULL: nothing kept
     * yet (every host of an older state directory), the host starts
     * fresh as before. */
    "ALTER TABLE hosts ADD COLUMN learned BLOB;",
    /* 10: WebSub subscriptions (kria/websub.h), so that a restart keeps
     * receiving what the hubs push and renews the leases in time: per
     * topic its hub, the callback token and HMAC secret, and when the
     * verified lease ends (0: not verified yet). */
    "CREATE TABLE websub(topic TEXT PRIMARY KEY, hub TEXT NOT NULL, token TEXT NOT NULL,"
    " secret TEXT NOT NULL, expires INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;",
    /* 11: the cluster's outbox (src/crawl/cluster.c): links whose host
     * another member owns, kept until Redis confirmed their XADD, so a
     * link found while Redis is away is sent when it returns. id only
     * grows (AUTOINCREMENT): the sender reads past the last id it sent,
     * and a row written after every older one was deleted must not come
     * back under a small id. */
    "CREATE TABLE outbox(id INTEGER PRIMARY KEY AUTOINCREMENT, member TEXT NOT NULL,"
    " url TEXT NOT NULL, hop_path TEXT, via INTEGER, directive INTEGER NOT NULL DEFAULT 0);",
};

#define ORIG_INDEX                                                                     \
  "CREATE INDEX uris_orig_digest ON uris(substr(coalesce(orig_digest, digest), 1, 8))" \
  " WHERE orig_date IS NOT NULL"

/* ---- errors -------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *path, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, const char *path, const char *fmt,
                ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  /* A caller that takes the message reports it: logging it too printed
   * every refused start twice. */
  if (err && errlen) snprintf(err, errlen, "%s: %s", path, msg);
  else KR_LOG(KR_LOG_ERROR, path, "%s", msg);
  return KR_EDB;
}

/* Log an SQLite failure of the writer while doing what. */
int kr__store_db_err(kr_store_t *st, const char *what) {
  /* SQLite may have rolled back more than the failed statement */
  kr_rowcache_clear(st->rows);
  KR_LOG(KR_LOG_ERROR, st->path, "while %s: %s (%d)", what,
         sqlite3_errmsg(st->db), sqlite3_extended_errcode(st->db));
  return KR_EDB;
}

/* ---- lock ---------------------------------------------------------------- */

static int take_lock(kr_store_t *st, char *err, size_t errlen) {
  char *lp = kr_xasprintf("%s/%s", st->dir, KR_STORE_LOCK_NAME);
  /* State files get exact modes, whatever the umask (0600 here). */
  int fd = open(lp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) fchmod(fd, 0600);
  else if (errno == EEXIST) fd = open(lp, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int rc = fail(err, errlen, lp, "cannot open lock file: %s", strerror(errno));
    free(lp);
    return rc;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = "";
    ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    if (n > 0) pid[n] = 0;
    pid[strcspn(pid, "\n")] = 0;
    int rc = e == EWOULDBLOCK
                 ? fail(err, errlen, st->dir,
                        "state directory is in use by another kria process "
                        "(pid %s): refusing a second instance",
                        pid[0] ? pid : "?")
                 : fail(err, errlen, lp, "cannot lock: %s", strerror(e));
    close(fd);
    free(lp);
    return rc;
  }
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
    KR_LOG(KR_LOG_WARN, lp, "cannot write pid into lock file");
  free(lp);
  st->lock_fd = fd;
  return 0;
}

/* ---- open and schema ------------------------------------------------------ */

/* Run one statement returning one integer. 0 or the SQLite error code. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int64(s, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(s);
  return rc;
}

/* The file must be empty/absent or start with SQLite's header string. */
static int check_header(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return fail(err, errlen, path, "cannot open: %s", strerror(errno));
  }
  struct stat sb;
  char head[16];
  ssize_t n = 0;
  int rc = 0;
  if (fstat(fd, &sb) != 0) {
    rc = fail(err, errlen, path, "cannot stat: %s", strerror(errno));
  } else if (!S_ISREG(sb.st_mode)) {
    rc = fail(err, errlen, path, "not a regular file");
  } else if (sb.st_size > 0) {
    n = read(fd, head, sizeof(head));
    if (sb.st_size < 100 || n != (ssize_t)sizeof(head) ||
        memcmp(head, "SQLite format 3", 16) != 0)
      rc = fail(err, errlen, path,
                "not an SQLite database (refusing to touch it; move it "
                "away or choose another state directory)");
  }
  close(fd);
  return rc;
}

static int exec_sql(sqlite3 *db, const char *sql, char **msg) {
  return sqlite3_exec(db, sql, NULL, NULL, msg);
}

/* Decide whether the opened database is ours, fresh, or to be refused;
 * then bring it to KR_STORE_SCHEMA. */
static int check_and_migrate(kr_store_t *st, char *err, size_t errlen) {
  int64_t app = 0, ver = 0, objects = 0;
  int rc = query_int(st->db, "PRAGMA application_id", &app);
  if (!rc) rc = query_int(st->db, "PRAGMA user_version", &ver);
  if (!rc) rc = query_int(st->db, "SELECT count(*) FROM sqlite_master", &objects);
  if (rc)
    return fail(err, errlen, st->path,
                "unreadable database (%s): not a kria state database or "
                "corrupt; refusing to touch it",
                sqlite3_errstr(rc));
  int fresh = app == 0 && ver == 0 && objects == 0;
  st->created = fresh;
  if (!fresh && app != KR_STORE_APP_ID)
    return fail(err, errlen, st->path,
                "not a kria state database (application_id 0x%" PRIx64
                ", %" PRId64 " schema objects); refusing to touch it",
                (uint64_t)app, objects);
  if (!fresh && ver > KR_STORE_SCHEMA)
    return fail(err, errlen, st->path,
                "schema version %" PRId64 " is newer than this kria knows "
                "(%d): upgrade kria",
                ver, KR_STORE_SCHEMA);
  if (!fresh && ver < 1)
    return fail(err, errlen, st->path,
                "kria database without a schema version: corrupt");
  if (!fresh && (st->opts.quick_check == 1 || (st->opts.quick_check && !st->opts.loop))) {
    char res[256];
    if (!kr__store_run_quick_check(st->db, res, sizeof(res)))
      return fail(err, errlen, st->path,
                  "database is corrupt (quick_check: %s); refusing to use it — "
                  "restore a backup or start a new state directory",
                  res);
    st->check_state = 1;
  }
  st->background_check = !fresh && st->opts.quick_check == 2 && st->opts.loop;

  char *msg = NULL;
  /* Only now that the file is known to be ours may it be changed. */
  char psz[64];
  snprintf(psz, sizeof psz, "PRAGMA page_size = %u", st->opts.page_size);
  if (fresh && exec_sql(st->db, psz, &msg) != SQLITE_OK)
    goto sqlfail;
  {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL) != SQLITE_OK)
      goto sqlfail_db;
    int ok = sqlite3_step(s) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(s, 0), "wal") == 0;
    sqlite3_finalize(s);
    if (!ok)
      return fail(err, errlen, st->path, "cannot switch to WAL mode: %s",
                  sqlite3_errmsg(st->db));
  }
  if ((int)ver == KR_STORE_SCHEMA) return 0;
  if (exec_sql(st->db, "BEGIN IMMEDIATE", &msg) != SQLITE_OK) goto sqlfail;
  for (int v = (int)ver + 1; v <= KR_STORE_SCHEMA; v++)
    if (exec_sql(st->db, migrations[v], &msg) != SQLITE_OK) goto rollback;
  {
    char *bump = kr_xasprintf("PRAGMA application_id = %d; PRAGMA user_version = %d;",
                              KR_STORE_APP_ID, KR_STORE_SCHEMA);
    rc = exec_sql(st->db, bump, &msg);
    free(bump);
    if (rc != SQLITE_OK) goto rollback;
  }
  if (fresh) {
    char *meta = kr_xasprintf(
        "INSERT INTO meta(key, value) VALUES ('created', %lld);",
        (long long)time(NULL));
    rc = exec_sql(st->db, meta, &msg);
    free(meta);
    if (rc != SQLITE_OK) goto rollback;
  }
  if (exec_sql(st->db, "COMMIT", &msg) != SQLITE_OK) goto rollback;
  if (!fresh)
    KR_LOG(KR_LOG_NOTICE, st->path, "schema migrated from version %d to %d",
           (int)ver, KR_STORE_SCHEMA);
  return 0;

rollback:
  exec_sql(st->db, "ROLLBACK", NULL);
sqlfail:
  rc = fail(err, errlen, st->path, "cannot set up the schema: %s",
            msg ? msg : sqlite3_errmsg(st->db));
  sqlite3_free(msg);
  return rc;
sqlfail_db:
  return fail(err, errlen, st->path, "%s", sqlite3_errmsg(st->db));
}

/* Build or drop uris_orig_digest as opts.orig_index says; once, not at
 * every open: it takes seconds on a million visited URIs. One of another
 * definition (an earlier build's) is built again: the lookup would not
 * use it. */
static int orig_index_apply(kr_store_t *st, char *err, size_t errlen) {
  int have = 0, same = 0;
  if (!st->opts.orig_index) return 0;
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(st->db, "SELECT sql FROM sqlite_master WHERE type = 'index'"
                         " AND name = 'uris_orig_digest'", -1, &s, NULL) != SQLITE_OK)
    return fail(err, errlen, st->path, "cannot read the schema: %s", sqlite3_errmsg(st->db));
  if (sqlite3_step(s) == SQLITE_ROW) {
    const char *sql = (const char *)sqlite3_column_text(s, 0);
    have = 1;
    same = sql && strcmp(sql, ORIG_INDEX) == 0;
  }
  sqlite3_finalize(s);
  int want = st->opts.orig_index > 0;
  if (want == have && (!want || same)) return 0;
  uint64_t t0 = kr__store_mono_us();
  char *msg = NULL;
  if ((have && exec_sql(st->db, "DROP INDEX uris_orig_digest", &msg) != SQLITE_OK) ||
      (want && exec_sql(st->db, ORIG_INDEX, &msg) != SQLITE_OK)) {
    int rc = fail(err, errlen, st->path, "cannot %s the index of WARC originals by digest: %s",
                  want ? "build" : "drop", msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_free(msg);
    return rc;
  }
  if (!st->created)
    KR_LOG(KR_LOG_NOTICE, st->path,
           "%s the index of WARC originals by payload digest (%s) in %" PRIu64 " ms",
           want ? "built" : "dropped",
           want ? "dedupe with WARC files" : "no dedupe with WARC files",
           (kr__store_mono_us() - t0) / 1000);
  return 0;
}

void kr_store_opts_default(kr_store_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->commit_ms = 50;
  o->commit_updates = 1000;
  o->wal_checkpoint_bytes = 256u << 20;
  o->page_size = 4096;
  o->idle_checkpoint_ms = 1000;
  o->cache_mib = 64;
  o->quick_check = 2;
}

void kr__store_free(kr_store_t *st) {
  kr__store_dw_clear(st);
  free(st->dw);
  kr_rowcache_free(st->rows);
  for (int i = 0; i < S__COUNT; i++) sqlite3_finalize(st->stmt[i]);
  if (st->ckpt_db) sqlite3_close(st->ckpt_db);
  if (st->db) sqlite3_close(st->db);
  if (st->lock_fd >= 0) close(st->lock_fd); /* releases the flock */
  uv_cond_destroy(&st->cv);
  uv_mutex_destroy(&st->mu);
  free(st->path);
  free(st->dir);
  free(st);
}

int kr_store_open(const char *dir, const kr_store_opts_t *opts,
                  kr_store_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  if (!dir || !*dir) return KR_EINVAL;
  kr_store_t *st = kr_xcalloc(1, sizeof(*st));
  st->lock_fd = -1;
  uv_mutex_init(&st->mu);
  uv_cond_init(&st->cv);
  if (opts)
    st->opts = *opts;
  else
    kr_store_opts_default(&st->opts);
  if (!st->opts.commit_updates) st->opts.commit_updates = 1;
  /* A power of two in SQLite's range, else the default. */
  if (st->opts.page_size < 512 || st->opts.page_size > 65536 ||
      (st->opts.page_size & (st->opts.page_size - 1)))
    st->opts.page_size = 4096;
  if (!st->opts.wal_checkpoint_bytes) st->opts.wal_checkpoint_bytes = 256u << 20;
  if (!st->opts.wal_max_bytes) st->opts.wal_max_bytes = 3 * st->opts.wal_checkpoint_bytes;
  if (st->opts.wal_max_bytes < st->opts.wal_checkpoint_bytes)
    st->opts.wal_max_bytes = st->opts.wal_checkpoint_bytes;
  st->dir = kr_xstrdup(dir);
  st->path = kr_xasprintf("%s/%s", dir, KR_STORE_DB_NAME);
  int rc;

  if (mkdir(dir, 0700) == 0) {
    chmod(dir, 0700); /* exactly, whatever the umask */
  } else if (errno != EEXIST) {
    rc = fail(err, errlen, dir, "cannot create state directory: %s", strerror(errno));
    goto out;
  }
  if ((rc = take_lock(st, err, errlen)) != 0) goto out;
  if ((rc = check_header(st->path, err, errlen)) != 0) goto out;

  /* A new database is created here as 0600 (SQLite would use 0644 less
   * the umask); SQLite gives its -wal and -shm files the database's mode. */
  int dfd = open(st->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (dfd >= 0) {
    fchmod(dfd, 0600);
    close(dfd);
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const char *vfs = st->opts.plain_vfs ? NULL : kr_store_vfs();
  if (sqlite3_open_v2(st->path, &st->db, flags, vfs) != SQLITE_OK) {
    rc = fail(err, errlen, st->path, "cannot open: %s",
              st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto out;
  }
  sqlite3_extended_result_codes(st->db, 1);
  sqlite3_busy_timeout(st->db, 5000);
  if ((rc = check_and_migrate(st, err, errlen)) != 0) goto out;
  if (st->opts.row_cache) st->rows = kr_rowcache_new(st->opts.row_cache);

  char *pragmas = kr_xasprintf(
      "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;"
      "PRAGMA journal_size_limit = %" PRIu64 "; PRAGMA cache_size = -%u;"
      "PRAGMA temp_store = MEMORY;",
      st->opts.wal_checkpoint_bytes, st->opts.cache_mib * 1024u);
  char *msg = NULL;
  int src = exec_sql(st->db, pragmas, &msg);
  free(pragmas);
  if (src != SQLITE_OK) {
    rc = fail(err, errlen, st->path, "cannot configure: %s", msg);
    sqlite3_free(msg);
    goto out;
  }
  if ((rc = orig_index_apply(st, err, errlen)) != 0) goto out;
  int64_t ps = 4096;
  query_int(st->db, "PRAGMA page_size", &ps);
  st->page_size = (int)ps;
  for (int i = 0; i < S__COUNT; i++) {
    if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &st->stmt[i], NULL) != SQLITE_OK) {
      rc = fail(err, errlen, st->path, "cannot prepare \"%s\": %s", stmt_sql[i],
                sqlite3_errmsg(st->db));
      goto out;
    }
  }
  sqlite3_wal_hook(st->db, kr__store_wal_hook, st);
  kr__store_wal_leftover(st);

  if (sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      vfs) != SQLITE_OK) {
    rc = fail(err, errlen, st->path, "cannot open the checkpoint connection: %s",
              st->ckpt_db ? sqlite3_errmsg(st->ckpt_db) : "out of memory");
    goto out;
  }
  sqlite3_busy_timeout(st->ckpt_db, 1000);
  /* A connection learns the file is in WAL mode only once it has read it;
   * until then a checkpoint request is a silent no-op. */
  if (exec_sql(st->ckpt_db,
               "PRAGMA wal_autocheckpoint = 0; SELECT count(*) FROM sqlite_master",
               NULL) != SQLITE_OK) {
    rc = fail(err, errlen, st->path, "cannot read with the checkpoint connection: %s",
              sqlite3_errmsg(st->ckpt_db));
    goto out;
  }
  if (st->background_check) {
    ckpt_job_t *job = kr_xcalloc(1, sizeof(*job));
    job->st = st;
    job->db = st->ckpt_db;
    job->is_check = 1;
    st->thread_busy = 1;
    if (uv_queue_work(st->opts.loop, &job->req, kr__store_ckpt_work, kr__store_ckpt_after) != 0) {
      st->thread_busy = 0;
      free(job);
      rc = fail(err, errlen, st->path, "cannot start the background quick_check");
      goto out;
    }
    st->job = job;
  }
  *out = st;
  return 0;

out:
  kr__store_free(st);
  return rc;
}

const char *kr_store_path(const kr_store_t *st) { return st->path; }

/* ---- readers ----------------------------------------------------------------- */

/* Whether a reader that cannot set up the WAL index may read db_path as
 * immutable: nothing could have changed it behind SQLite's back. */
static int reader_may_be_immutable(const char *db_path) {
  struct stat sb;
  char *wal = kr_xasprintf("%s-wal", db_path);
  int has_wal = lstat(wal, &sb) == 0 || errno != ENOENT;
  free(wal);
  if (has_wal) return 0; /* committed pages may be in it */
  char *dir = kr_xstrdup(db_path);
  char *slash = strrchr(dir, '/');
  if (!slash) {
    free(dir);
    dir = kr_xstrdup(".");
  } else {
    slash[slash == dir] = '\0'; /* "/kria.db": "/" */
  }
  /* A crawl needs the directory writable (root ignores the modes, so
   * the lock is checked too). */
  int ok = access(dir, W_OK) != 0;
  char *lp = kr_xasprintf("%s/%s", dir, KR_STORE_LOCK_NAME);
  int fd = ok ? open(lp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
  if (fd >= 0) {
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) ok = 0; /* a crawl holds it */
    close(fd);
  }
  free(lp);
  free(dir);
  return ok;
}

int kr_store_open_reader(const char *db_path, int busy_ms, sqlite3 **db) {
  int rc = sqlite3_open_v2(db_path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_busy_timeout(*db, busy_ms);
  /* Opening reads nothing: the first read sets up the WAL index. */
  rc = sqlite3_exec(*db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
  if (rc == SQLITE_OK || rc == SQLITE_BUSY || !reader_may_be_immutable(db_path)) return rc;
  /* The path as a file: URI (RFC 3986: what is not unreserved or '/' is
   * percent-encoded). */
  size_t n = strlen(db_path);
  char *uri = kr_xmalloc(3 * n + 32);
  char *o = uri + sprintf(uri, "file:");
  for (const unsigned char *p = (const unsigned char *)db_path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~", *p))
      *o++ = (char)*p;
    else
      o += sprintf(o, "%%%02X", *p);
  }
  strcpy(o, "?immutable=1");
  sqlite3 *idb = NULL;
  int irc = sqlite3_open_v2(uri, &idb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                            NULL);
  free(uri);
  if (irc != SQLITE_OK) { /* keep the first error, it says more */
    sqlite3_close(idb);
    return rc;
  }
  sqlite3_close(*db);
  *db = idb;
  return SQLITE_OK;
}

