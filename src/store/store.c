/*
 * The crawl state in SQLite (see store.h for the schema and the rules).
 * One connection writes on the loop thread through statements prepared
 * once at open; writes join a lazily opened transaction that only
 * kr_store_maybe_commit()/kr_store_commit() end, so the caller decides
 * where commit boundaries fall. A second connection exists only for
 * checkpoints, run as uv_queue_work jobs so a commit never pays for
 * copying the WAL back. Opening refuses anything that is not a kria
 * database of a schema this build knows, and never rewrites such a file.
 * Sections: errors, lock, statements, open and schema, transactions,
 * checkpoints, URIs, hosts, meta, adaptive (digest index, hints), WARC
 * originals, robots.txt, scope (the seeds in force, disregarded URIs).
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
#include "turnprof.h"

/* ---- statements ---------------------------------------------------------- */

#define NEVER_SQL "9223372036854775807"

enum {
  S_BEGIN,
  S_COMMIT,
  S_ROLLBACK,
  S_URI_INSERT,
  S_URI_GET,
  S_URI_SCHED_GET,
  S_URI_UPDATE,
  S_URI_SET_SCHED,
  S_PICK,
  S_COUNT_QUEUED_HOST,
  S_COUNT_QUEUED_ALL,
  S_COUNT_URIS,
  S_FP_SCAN,
  S_HOST_INSERT,
  S_HOST_UPDATE,
  S_HOSTS_EACH,
  S_META_GET,
  S_META_SET,
  S_DIGEST_GET,
  S_DIGEST_PUT,
  S_URL_GET,
  S_URI_SET_HINT,
  S_ORIG_GET,
  S_ORIG_FIND,
  S_ORIG_PUT,
  S_ROBOTS_GET,
  S_ROBOTS_PUT,
  S_URIS_MOVE_HOST,
  S_URI_SET_LINKED,
  S__COUNT
};

#define URI_COLS                                                           \
  "fp, host_id, directive, next_at, state, url, via, hop_path, first_seen, " \
  "last_visit, wait_ms, visits, versions, retries, status, content_type, "   \
  "digest, etag, last_modified, history, hint, gone, last_linked"

#define HOST_COLS                                                           \
  "id, name, robots_expires, robots_status, crawl_delay_ms, backoff_level, " \
  "backoff_until, fail_streak, discovered, queued, finished, succeeded, "    \
  "retried, failed, disregarded, backoffs, bytes, vt_checks, "               \
  "vt_predicted_unchanged, vt_skipped, vt_verified, vt_misses, "             \
  "vt_false_alarms, vt_distrusts, vt_miss_run, vt_distrust_until, refused, retired"

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
};

#define ORIG_INDEX                                                                     \
  "CREATE INDEX uris_orig_digest ON uris(substr(coalesce(orig_digest, digest), 1, 8))" \
  " WHERE orig_date IS NOT NULL"

struct kr_store {
  sqlite3 *db;                 /* writer, loop thread only */
  sqlite3 *ckpt_db;            /* checkpoints only, one job at a time */
  sqlite3_stmt *stmt[S__COUNT];
  char *dir;
  char *path;                  /* dir/kria.db */
  int lock_fd;                 /* flock'ed dir/kria.lock */
  kr_store_opts_t opts;
  int page_size;
  /* transactions */
  int in_tx;
  int hold;
  uint64_t tx_writes;
  uint64_t tx_opened_at;       /* 0: not yet seen by maybe_commit */
  uint64_t last_commit_at;
  uint64_t last_now;           /* latest time given to maybe_commit */
  kr_store_precommit_fn precommit;
  void *precommit_ud;
  kr_store_presync_fn presync;
  void *presync_ud;
  int presync_wait;            /* PS_*: a commit waits for its presync step */
  /* checkpoints */
  struct ckpt_job *job;        /* running job, NULL when none */
  uv_mutex_t mu;               /* guards thread_busy */
  uv_cond_t cv;
  int thread_busy;             /* a job's thread part has not returned */
  uint64_t ckpt_done_frames;   /* frames backfilled by the last checkpoint */
  uint64_t last_frames;        /* WAL frames after the previous commit */
  int wal_warned;
  uint32_t ckpt_failing;       /* checkpoint failures in a row (0: none) */
  uint64_t ckpt_tried_at;      /* clock time of the latest pass's start */
  uint64_t ckpt_retry_at;      /* no pass before this while failing */
  uint64_t ckpt_failing_since;
  int draining;                /* no transaction may begin (see checkpoint_maybe) */
  int drain_passes;            /* passes the current drain has run */
  uint64_t wal_held_since_us;  /* kr_store_wal_held(): since when */
  uint64_t drain_started_us;
  int get_active;              /* S_URI_GET or S_DIGEST_GET is left on a row */
  char rid[48];                /* an original's record id, unpacked */
  struct dwrite *dw;           /* writes kept during a drain (see defer) */
  size_t ndw, dw_cap, dw_bytes;
  kr_rowcache_t *rows;         /* opts.row_cache > 0: rows in memory too */
  int check_state;             /* background quick_check: 0 running/none, 1 ok, KR_EDB */
  int background_check;        /* start one once open */
  int created;                 /* the database was new at open */
  char check_msg[512];
  kr_store_stats_t stats;
};

typedef struct ckpt_job {
  uv_work_t req;
  kr_store_t *st;  /* NULL once the store closed while the job ran */
  sqlite3 *db;
  int rc, log, ckpt;
  int is_check;    /* a PRAGMA quick_check instead of a checkpoint */
  char result[256];
} ckpt_job_t;

static int run_quick_check(sqlite3 *db, char *out, size_t outlen);
static void ckpt_work(uv_work_t *req);
static void ckpt_after(uv_work_t *req, int status);
static void ckpt_start(kr_store_t *st);

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
static int db_err(kr_store_t *st, const char *what) {
  /* SQLite may have rolled back more than the failed statement */
  kr_rowcache_clear(st->rows);
  KR_LOG(KR_LOG_ERROR, st->path, "while %s: %s (%d)", what,
         sqlite3_errmsg(st->db), sqlite3_extended_errcode(st->db));
  return KR_EDB;
}

/* kr_store_uri_get leaves its statement on the row so the caller can read
 * the column memory; every later call resets it first, which also ends
 * the read transaction it holds (a reader pins the WAL). */
static inline void settle(kr_store_t *st) {
  if (st->get_active) {
    sqlite3_reset(st->stmt[S_URI_GET]);
    sqlite3_reset(st->stmt[S_DIGEST_GET]);
    sqlite3_reset(st->stmt[S_ORIG_GET]);
    sqlite3_reset(st->stmt[S_ORIG_FIND]);
    sqlite3_reset(st->stmt[S_ROBOTS_GET]);
    sqlite3_reset(st->stmt[S_URL_GET]);
    st->get_active = 0;
  }
}

static uint64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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
    if (!run_quick_check(st->db, res, sizeof(res)))
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
  uint64_t t0 = mono_us();
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
           (mono_us() - t0) / 1000);
  return 0;
}

static int wal_hook(void *ud, sqlite3 *db, const char *name, int frames);
static void wal_leftover(kr_store_t *st);
static void wal_hold_update(kr_store_t *st);

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

static void dw_clear(kr_store_t *st);

static void store_free(kr_store_t *st) {
  dw_clear(st);
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
  sqlite3_wal_hook(st->db, wal_hook, st);
  wal_leftover(st);

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
    if (uv_queue_work(st->opts.loop, &job->req, ckpt_work, ckpt_after) != 0) {
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
  store_free(st);
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

/* ---- transactions ---------------------------------------------------------- */

static int step_done(kr_store_t *st, sqlite3_stmt *s, const char *what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return db_err(st, what);
  return 0;
}

static int dw_apply(kr_store_t *st);

/* Every write calls this first: joins (or opens) the transaction. */
static int write_begin(kr_store_t *st) {
  if (!st->in_tx) {
    /* A write during a drain is allowed (correctness never depends on
     * it); it only costs this drain its WAL restart. */
    if (st->draining) st->stats.drains_broken++;
    if (step_done(st, st->stmt[S_BEGIN], "beginning a transaction")) return KR_EDB;
    st->in_tx = 1;
    st->tx_writes = 0;
    st->tx_opened_at = st->opts.clock ? kr_clock_now_ms(st->opts.clock) : 0;
    st->stats.begins++;
    if (st->ndw && dw_apply(st)) return KR_EDB;
  }
  st->tx_writes++;
  st->stats.writes++;
  return 0;
}

/* ---- writes kept during a drain ------------------------------------------- */

/* The frontier keeps its own writes while the store drains; every other
 * write (WARC originals, the digest index, robots.txt rows, hints, meta)
 * is kept here, copied, in order, instead of beginning a transaction: one
 * such write per drain was enough to keep the WAL from ever restarting
 * under load (a 3-minute crawl of 10,000 hosts: 9 GB of WAL, 10 s to open
 * it after a kill). They are applied at the start of the first
 * transaction after the drain (or of any transaction begun during it),
 * and the reads of the same keys see them meanwhile. Past DW_MAX writes
 * or DW_MAX_BYTES, or when a transaction is open anyway, they are written
 * at once. */
#define DW_MAX 4096
#define DW_MAX_BYTES (8u << 20)
#define DW_VALS 5

typedef struct dval {
  int type;          /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB or _NULL */
  int64_t i;
  double d;
  size_t len;
  uint8_t *p;        /* text (NUL-terminated) or blob, owned */
} dval_t;

struct dwrite {
  int stmt;
  int n;
  dval_t v[DW_VALS];
};

static dval_t dv_int(int64_t i) { return (dval_t){.type = SQLITE_INTEGER, .i = i}; }
static dval_t dv_null(void) { return (dval_t){.type = SQLITE_NULL}; }
static dval_t dv_float(double d) { return (dval_t){.type = SQLITE_FLOAT, .d = d}; }
/* Borrowed until kept (defer copies). */
static dval_t dv_text(const char *p, size_t n) {
  return (dval_t){.type = SQLITE_TEXT, .p = (uint8_t *)(uintptr_t)p, .len = n};
}
static dval_t dv_blob(const void *p, size_t n) {
  return (dval_t){.type = SQLITE_BLOB, .p = (uint8_t *)(uintptr_t)p, .len = n};
}

static void dv_bind(sqlite3_stmt *s, int i, const dval_t *v) {
  switch (v->type) {
  case SQLITE_INTEGER: sqlite3_bind_int64(s, i, v->i); break;
  case SQLITE_FLOAT: sqlite3_bind_double(s, i, v->d); break;
  case SQLITE_TEXT: sqlite3_bind_text(s, i, (const char *)v->p, (int)v->len, SQLITE_STATIC); break;
  case SQLITE_BLOB: sqlite3_bind_blob(s, i, v->p, (int)v->len, SQLITE_STATIC); break;
  default: sqlite3_bind_null(s, i); break;
  }
}

static int dv_eq(const dval_t *v, const void *p, size_t n) {
  return v->len == n && (n == 0 || memcmp(v->p, p, n) == 0);
}

static void dw_clear(kr_store_t *st) {
  for (size_t k = 0; k < st->ndw; k++)
    for (int i = 0; i < st->dw[k].n; i++) free(st->dw[k].v[i].p);
  st->ndw = 0;
  st->dw_bytes = 0;
}

/* Run one write statement now (joins or opens the transaction). */
static int run_write(kr_store_t *st, int stmt, const dval_t *v, int n, const char *what) {
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[stmt];
  for (int i = 0; i < n; i++) dv_bind(s, i + 1, &v[i]);
  int rc = step_done(st, s, what);
  sqlite3_clear_bindings(s);
  if (!rc && stmt == S_URI_SET_HINT && sqlite3_changes(st->db) > 0)
    kr_rowcache_set_hint(st->rows, (uint64_t)v[0].i, v[1].type == SQLITE_FLOAT ? v[1].d : 0.0);
  return rc;
}

/* A commit's presync step running in the background (see
 * kr_store_presync_done). */
enum { PS_NONE, PS_WAITING, PS_DONE };

static int commit(kr_store_t *st, int may_wait);

/* Write now, or keep it for after the drain, or for after a commit that
 * waits for its presync step. 1 kept, 0 written, KR_EDB. */
static int write_or_keep(kr_store_t *st, int stmt, const dval_t *v, int n, const char *what) {
  size_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += v[i].len;
  int room = st->ndw < DW_MAX && st->dw_bytes + bytes <= DW_MAX_BYTES;
  /* A WARC original names a record written after the sync of the commit
   * that waits began: it must not join that commit. No room: the commit
   * completes first, its step inline; or, inside a held unit (which a
   * commit must not split), the original is kept past the limit. */
  int sync_wait = stmt == S_ORIG_PUT && st->presync_wait != PS_NONE;
  if (sync_wait && !room && !st->hold) {
    int rc = commit(st, 0);
    if (rc < 0) return rc;
    sync_wait = 0;
  }
  if (sync_wait) room = 1;
  /* An open transaction during a drain has broken it already: join it. */
  if (!room || !(sync_wait || (st->draining && !st->in_tx)))
    return run_write(st, stmt, v, n, what);
  if (st->ndw == st->dw_cap)
    st->dw = kr_xrealloc(st->dw, (st->dw_cap = st->dw_cap ? 2 * st->dw_cap : 64) * sizeof *st->dw);
  struct dwrite *w = &st->dw[st->ndw++];
  w->stmt = stmt;
  w->n = n;
  for (int i = 0; i < n; i++) {
    w->v[i] = v[i];
    if (v[i].type == SQLITE_TEXT || v[i].type == SQLITE_BLOB) {
      w->v[i].p = kr_xmalloc(v[i].len + 1);
      if (v[i].len) memcpy(w->v[i].p, v[i].p, v[i].len);
      w->v[i].p[v[i].len] = 0;
    }
  }
  st->dw_bytes += bytes;
  st->stats.writes_kept++;
  return 1;
}

/* A kept write of stmt whose value k equals key: the newest (what a
 * REPLACE leaves) or, with oldest, the first (what INSERT OR IGNORE
 * keeps). NULL when none. */
static const struct dwrite *dw_find(const kr_store_t *st, int stmt, int k, dval_t key,
                                    int oldest) {
  for (size_t j = 0; j < st->ndw; j++) {
    const struct dwrite *w = &st->dw[oldest ? j : st->ndw - 1 - j];
    const dval_t *v = &w->v[k];
    if (w->stmt == stmt && v->type == key.type &&
        (key.type == SQLITE_INTEGER ? v->i == key.i : dv_eq(v, key.p, key.len)))
      return w;
  }
  return NULL;
}

/* Apply the kept writes, in order, in the transaction write_begin has
 * just opened (run_write joins it). */
static int dw_apply(kr_store_t *st) {
  int rc = 0;
  for (size_t k = 0; k < st->ndw && !rc; k++)
    rc = run_write(st, st->dw[k].stmt, st->dw[k].v, st->dw[k].n, "writing what waited");
  dw_clear(st);
  return rc;
}

/* Outside a drain and a transaction, give the kept writes one. */
static int dw_flush(kr_store_t *st) {
  return st->ndw && !st->draining && !st->in_tx ? write_begin(st) : 0;
}

static void checkpoint_maybe(kr_store_t *st, uint64_t now);
static void drain_end(kr_store_t *st);

/* may_wait: the presync step may run in the background (from
 * kr_store_maybe_commit); an explicit commit always completes. */
static int commit(kr_store_t *st, int may_wait) {
  if (!st->in_tx) return 0;
  if (st->presync_wait == PS_WAITING && may_wait) return 0;
  KR_TP_ENTER(KR_TP_FLUSH_HOSTS);
  int pre = st->precommit ? st->precommit(st->precommit_ud) : 0;
  KR_TP_LEAVE();
  if (pre < 0) {
    step_done(st, st->stmt[S_ROLLBACK], "rolling back");
    st->in_tx = 0;
    kr_rowcache_clear(st->rows);
    st->presync_wait = PS_NONE;
    KR_LOG(KR_LOG_ERROR, st->path, "commit aborted by its pre-commit step");
    return KR_EDB;
  }
  /* The step that ran in the background (PS_DONE) covers this commit:
   * what it could not cover was held back meanwhile (kr_store_writable
   * said wait). */
  if (st->presync && st->presync_wait != PS_DONE) {
    KR_TP_ENTER(KR_TP_PRESYNC);
    int ps = st->presync(st->presync_ud, may_wait);
    KR_TP_LEAVE();
    if (ps == KR_STORE_PRESYNC_WAIT && may_wait) {
      st->presync_wait = PS_WAITING;
      return 0;
    }
  }
  st->presync_wait = PS_NONE;
  KR_TP_ENTER(KR_TP_COMMIT);
  uint64_t t0 = mono_us();
  int rc = sqlite3_step(st->stmt[S_COMMIT]);
  sqlite3_reset(st->stmt[S_COMMIT]);
  uint64_t us = mono_us() - t0;
  KR_TP_LEAVE();
  if (rc != SQLITE_DONE) {
    db_err(st, "committing");
    if (!sqlite3_get_autocommit(st->db))
      step_done(st, st->stmt[S_ROLLBACK], "rolling back");
    st->in_tx = 0;
    st->presync_wait = PS_NONE;
    return KR_EDB;
  }
  if (us > st->stats.commit_us_max) st->stats.commit_us_max = us;
  st->in_tx = 0;
  st->stats.commits++;
  return 1;
}

int kr_store_check_state(const kr_store_t *st, const char **msg) {
  if (msg) *msg = st->check_state < 0 ? st->check_msg : NULL;
  return st->check_state;
}

int kr_store_maybe_commit(kr_store_t *st, uint64_t now) {
  settle(st);
  if (st->check_state < 0) return KR_EDB;
  int rc = 0;
  st->last_now = now;
  if (dw_flush(st)) return KR_EDB;
  if (st->in_tx && !st->hold) {
    if (!st->tx_opened_at) st->tx_opened_at = now;
    if (st->presync_wait == PS_DONE || st->tx_writes >= st->opts.commit_updates ||
        now >= st->tx_opened_at + st->opts.commit_ms) {
      rc = commit(st, 1);
      if (rc > 0) st->last_commit_at = now;
    }
  }
  if (rc >= 0) checkpoint_maybe(st, now);
  return rc;
}

int kr_store_commit(kr_store_t *st) {
  settle(st);
  if (st->hold) return KR_EINVAL;
  if (dw_flush(st)) return KR_EDB;
  int rc = commit(st, 0);
  if (rc > 0) {
    st->last_commit_at = st->opts.clock ? kr_clock_now_ms(st->opts.clock) : st->last_now;
    rc = 0;
  }
  return rc;
}

void kr_store_hold(kr_store_t *st) { st->hold++; }
void kr_store_release(kr_store_t *st) {
  KR_BUG_ON(st->hold == 0);
  st->hold--;
}
int kr_store_in_tx(const kr_store_t *st) { return st->in_tx; }

void kr_store_set_precommit(kr_store_t *st, kr_store_precommit_fn fn, void *ud) {
  st->precommit = fn;
  st->precommit_ud = ud;
}

void kr_store_set_presync(kr_store_t *st, kr_store_presync_fn fn, void *ud) {
  st->presync = fn;
  st->presync_ud = ud;
}

void kr_store_presync_done(kr_store_t *st) {
  if (st->presync_wait == PS_WAITING) st->presync_wait = PS_DONE;
}

int kr_store_presync_waiting(const kr_store_t *st) { return st->presync_wait != PS_NONE; }

/* ---- checkpoints ------------------------------------------------------------ */

static int wal_hook(void *ud, sqlite3 *db, const char *name, int frames) {
  (void)db;
  (void)name;
  kr_store_t *st = ud;
  st->stats.wal_frames = (uint64_t)frames;
  if ((uint64_t)frames > st->stats.wal_frames_max)
    st->stats.wal_frames_max = (uint64_t)frames;
  /* The WAL restarted from its beginning: old progress means nothing. */
  if ((uint64_t)frames < st->ckpt_done_frames || (uint64_t)frames < st->last_frames) {
    st->ckpt_done_frames = 0;
    st->stats.restarts++;
  }
  st->last_frames = (uint64_t)frames;
  wal_hold_update(st);
  return SQLITE_OK;
}

/* Hold new work while the WAL is past wal_max_bytes (kr_store_wal_held).
 * It ends once the WAL restarted below wal_checkpoint_bytes or a
 * checkpoint has copied every frame (the next transaction restarts it;
 * with fetches held there may be none for a while). */
static void wal_hold_update(kr_store_t *st) {
  uint64_t ps = (uint64_t)st->page_size;
  uint64_t frames = st->stats.wal_frames;
  if (!st->stats.wal_held) {
    if (frames * ps < st->opts.wal_max_bytes) return;
    st->stats.wal_held = 1;
    st->stats.wal_holds++;
    st->wal_held_since_us = mono_us();
    KR_LOG(KR_LOG_NOTICE, st->path,
           "WAL at %" PRIu64 " MiB, past its cap of %" PRIu64
           " MiB: checkpoints are behind; no new fetches until one catches up "
           "(running fetches still commit)",
           (frames * ps) >> 20, st->opts.wal_max_bytes >> 20);
    return;
  }
  if (frames * ps >= st->opts.wal_checkpoint_bytes && st->ckpt_done_frames < frames) return;
  st->stats.wal_held = 0;
  uint64_t us = mono_us() - st->wal_held_since_us;
  if (us > st->stats.wal_held_us_max) st->stats.wal_held_us_max = us;
  KR_LOG(KR_LOG_NOTICE, st->path, "WAL checkpointed after %" PRIu64 " ms: fetches resume",
         us / 1000);
}

/* A WAL left by an earlier run (a crash, or a close that could not
 * checkpoint) is sized from its file: the first kr_store_maybe_commit()
 * then starts checkpointing it in the background (and holds new work if
 * it is past the cap) instead of waiting for a commit to report it. Only
 * an estimate (a restarted WAL keeps stale frames up to
 * journal_size_limit); the first commit or checkpoint corrects it. */
static void wal_leftover(kr_store_t *st) {
  char *wal = kr_xasprintf("%s-wal", st->path);
  struct stat sb;
  uint64_t frame = (uint64_t)st->page_size + 24; /* frame header + page */
  if (stat(wal, &sb) == 0 && (uint64_t)sb.st_size > 32 + frame) {
    st->stats.wal_frames = ((uint64_t)sb.st_size - 32) / frame;
    wal_hold_update(st);
  }
  free(wal);
}

/* PRAGMA quick_check(1) on db: 1 ok, 0 with the first problem in out. */
static int run_quick_check(sqlite3 *db, char *out, size_t outlen) {
  sqlite3_stmt *s;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);
  if (rc != SQLITE_OK) {
    snprintf(out, outlen, "%s", sqlite3_errstr(rc));
    return 0;
  }
  rc = sqlite3_step(s);
  const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
  int ok = res && strcmp(res, "ok") == 0;
  snprintf(out, outlen, "%s", res ? res : sqlite3_errmsg(db));
  sqlite3_finalize(s);
  return ok;
}

static void ckpt_work(uv_work_t *req) {
  ckpt_job_t *job = container_of(req, ckpt_job_t, req);
  if (job->is_check)
    job->rc = run_quick_check(job->db, job->result, sizeof(job->result));
  else
    job->rc = sqlite3_wal_checkpoint_v2(job->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                        &job->log, &job->ckpt);
  kr_store_t *st = job->st; /* cannot change before thread_busy drops */
  uv_mutex_lock(&st->mu);
  st->thread_busy = 0;
  uv_cond_signal(&st->cv);
  uv_mutex_unlock(&st->mu);
}

/* Longest wait between checkpoint attempts while they fail. */
#define CKPT_RETRY_MAX_MS 60000u

static void ckpt_note(kr_store_t *st, int rc, int log, int ckpt) {
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    /* A full disk fails every pass until space returns: attempts back off
     * (1 s doubling to 60 s) and one line says so per episode, instead of
     * a pass and a warning every loop turn. */
    st->stats.checkpoint_failures++;
    if (!st->ckpt_failing++) {
      st->ckpt_failing_since = st->ckpt_tried_at;
      KR_LOG(KR_LOG_WARN, st->path,
             "checkpoint failed: %s; retrying every 1-60 s, logged again once one succeeds",
             sqlite3_errstr(rc));
    }
    uint32_t shift = KR_MIN(st->ckpt_failing - 1, 6u);
    st->ckpt_retry_at = st->ckpt_tried_at + KR_MIN(1000u << shift, CKPT_RETRY_MAX_MS);
    return;
  }
  if (st->ckpt_failing) {
    KR_LOG(KR_LOG_NOTICE, st->path, "checkpoints work again after %u failed attempts over %" PRIu64 " s",
           st->ckpt_failing, (st->ckpt_tried_at - st->ckpt_failing_since) / 1000);
    st->ckpt_failing = 0;
    st->ckpt_retry_at = 0;
  }
  if (log < 0) {
    KR_LOG(KR_LOG_WARN, st->path, "checkpoint found no WAL");
    return;
  }
  st->stats.checkpoints++;
  st->ckpt_done_frames = ckpt > 0 ? (uint64_t)ckpt : 0;
  /* The WAL's true size at the pass (corrects wal_leftover's estimate;
   * commits since then only made it larger, which their hook reported). */
  if ((uint64_t)log > st->stats.wal_frames || !st->stats.commits)
    st->stats.wal_frames = (uint64_t)log;
  wal_hold_update(st);
}

/* Passes one drain may run (each must copy more than the one before). */
#define DRAIN_PASSES_MAX 8

static void ckpt_after(uv_work_t *req, int status) {
  ckpt_job_t *job = container_of(req, ckpt_job_t, req);
  kr_store_t *st = job->st;
  if (st && job->is_check) {
    st->job = NULL;
    st->check_state = status == 0 && job->rc ? 1 : KR_EDB;
    if (st->check_state < 0) {
      snprintf(st->check_msg, sizeof(st->check_msg),
               "%s: database is corrupt (quick_check: %s); stop and restore a backup "
               "or start a new state directory",
               st->path, status == 0 ? job->result : "not run");
      KR_LOG(KR_LOG_ERROR, st->path, "%s", st->check_msg);
    }
  } else if (st) {
    st->job = NULL;
    st->stats.checkpoint_running = 0;
    uint64_t done_before = st->ckpt_done_frames;
    if (status == 0) ckpt_note(st, job->rc, job->log, job->ckpt);
    /* A pass stops at the read mark of a reader it finds busy, and a
     * reader that starts meanwhile (this store's own connection, reading
     * during the drain) is busy on a mark it is just moving: the pass
     * then leaves the last commit uncopied and the drain would end with
     * no WAL restart. While passes still copy more, run another. */
    if (st->draining && status == 0 && job->rc == SQLITE_OK && job->ckpt < job->log &&
        st->ckpt_done_frames > done_before && ++st->drain_passes < DRAIN_PASSES_MAX) {
      ckpt_start(st);
      if (st->job) {
        free(job);
        return;
      }
    }
    drain_end(st);
  }
  free(job);
}

static void ckpt_start(kr_store_t *st) {
  if (!st->opts.loop) {
    kr_store_checkpoint(st);
    return;
  }
  ckpt_job_t *job = kr_xcalloc(1, sizeof(*job));
  job->st = st;
  job->db = st->ckpt_db;
  st->thread_busy = 1;
  if (uv_queue_work(st->opts.loop, &job->req, ckpt_work, ckpt_after) != 0) {
    st->thread_busy = 0;
    free(job);
    return;
  }
  st->job = job;
  st->stats.checkpoint_running = 1;
}

/* Uncopied WAL at which the background passes count as caught up. */
#define DRAIN_REMAINDER (16u << 20)

static void drain_end(kr_store_t *st) {
  if (!st->draining) return;
  st->draining = 0;
  uint64_t us = mono_us() - st->drain_started_us;
  if (us > st->stats.drain_us_max) st->stats.drain_us_max = us;
}

/* After each commit (and at idle). While the WAL is below
 * wal_checkpoint_bytes, nothing (but an idle pass). Past it, PASSIVE passes
 * in the background copy the bulk while commits go on, each pass only
 * what the previous ones left. A PASSIVE pass alone never lets the WAL
 * restart while transactions keep coming: the WAL restarts only when a
 * transaction begins with every frame copied, and by the time a pass
 * finishes, newer commits wait in the WAL. So once a pass has left at most
 * DRAIN_REMAINDER uncopied (or the WAL reached twice the threshold), the
 * store drains: no transaction begins until one more pass has copied the
 * rest. The caller keeps its writes for that time (kr_store_writable() is
 * 0; the frontier queues completions and links) and nothing on the loop
 * waits; the first transaction after the drain writes the WAL from its
 * beginning. */
static void checkpoint_maybe(kr_store_t *st, uint64_t now) {
  if (st->job || st->in_tx || st->draining) return;
  if (st->ckpt_failing && now < st->ckpt_retry_at) return;
  st->ckpt_tried_at = now;
  uint64_t frames = st->stats.wal_frames;
  if (!frames) return;
  uint64_t pending = frames > st->ckpt_done_frames ? frames - st->ckpt_done_frames : 0;
  uint64_t ps = (uint64_t)st->page_size;
  uint64_t limit = st->opts.wal_checkpoint_bytes;
  if (frames * ps >= limit) {
    if (pending * ps <= DRAIN_REMAINDER || frames * ps >= 2 * limit) {
      if (pending * ps > DRAIN_REMAINDER && !st->wal_warned) {
        st->wal_warned = 1;
        KR_LOG(KR_LOG_NOTICE, st->path,
               "WAL at %" PRIu64 " MiB: background checkpoints are not keeping up; "
               "draining with %" PRIu64 " MiB uncopied",
               (frames * ps) >> 20, (pending * ps) >> 20);
      }
      st->draining = 1;
      st->drain_passes = 0;
      st->drain_started_us = mono_us();
      st->stats.drains++;
      ckpt_start(st); /* inline without a loop: the drain ends at once */
      if (!st->job) drain_end(st);
    } else {
      ckpt_start(st);
    }
    return;
  }
  if (pending && now >= st->last_commit_at + st->opts.idle_checkpoint_ms) ckpt_start(st);
}

int kr_store_writable(const kr_store_t *st) {
  return !st->draining && st->presync_wait == PS_NONE;
}

int kr_store_wal_held(const kr_store_t *st) { return st->stats.wal_held; }

int kr_store_checkpoint(kr_store_t *st) {
  settle(st);
  if (st->job) return 0; /* one is running */
  int log = 0, ckpt = 0;
  int rc = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                     &log, &ckpt);
  ckpt_note(st, rc, log, ckpt);
  return rc == SQLITE_OK || rc == SQLITE_BUSY ? 0 : KR_EDB;
}

const kr_store_stats_t *kr_store_stats(const kr_store_t *st) { return &st->stats; }

void kr_store_memory(const kr_store_t *st, uint64_t *cache, uint64_t *sqlite_heap) {
  int cur = 0, hi = 0;
  sqlite3_db_status(st->db, SQLITE_DBSTATUS_CACHE_USED, &cur, &hi, 0);
  *cache = cur > 0 ? (uint64_t)cur : 0;
  *sqlite_heap = (uint64_t)sqlite3_memory_used();
}

/* Wait for a running job's thread part; its after-callback will find the
 * store gone and only free itself. */
static void ckpt_detach(kr_store_t *st) {
  if (!st->job) return;
  uv_mutex_lock(&st->mu);
  while (st->thread_busy) uv_cond_wait(&st->cv, &st->mu);
  uv_mutex_unlock(&st->mu);
  st->job->st = NULL;
  st->job = NULL;
  st->stats.checkpoint_running = 0;
  drain_end(st);
}

void kr_store_wait_checkpoint(kr_store_t *st) {
  if (!st->job) return;
  ckpt_detach(st);
}

int kr_store_close(kr_store_t *st) {
  if (!st) return 0;
  settle(st);
  st->hold = 0;
  /* a commit waiting for its presync step first (the step inline), then
   * what was kept */
  int rc = st->presync_wait != PS_NONE ? commit(st, 0) : 0;
  if (st->ndw && !st->in_tx) write_begin(st); /* errors: commit reports */
  int rc2 = commit(st, 0);
  if (rc >= 0) rc = rc2;
  ckpt_detach(st);
  store_free(st);
  return rc < 0 ? rc : 0;
}

void kr_store_abandon(kr_store_t *st) {
  if (!st) return;
  settle(st);
  ckpt_detach(st);
  /* Closing with an open transaction rolls it back, as a crash would. */
  for (int i = 0; i < S__COUNT; i++) {
    sqlite3_finalize(st->stmt[i]);
    st->stmt[i] = NULL;
  }
  store_free(st);
}

/* ---- URIs -------------------------------------------------------------------- */

static void bind_text(sqlite3_stmt *s, int i, const char *p, size_t n) {
  if (p)
    sqlite3_bind_text(s, i, p, (int)n, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, i);
}

static void bind_blob(sqlite3_stmt *s, int i, const void *p, size_t n) {
  if (p && n)
    sqlite3_bind_blob(s, i, p, (int)n, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, i);
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v) {
  if (v)
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
  else
    sqlite3_bind_null(s, i);
}

int kr_store_uri_insert(kr_store_t *st, const kr_uri_row_t *r) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_INSERT];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)r->fp);
  sqlite3_bind_int64(s, 2, r->host_id);
  sqlite3_bind_int(s, 3, r->directive);
  sqlite3_bind_int64(s, 4, (sqlite3_int64)r->next_at);
  sqlite3_bind_int(s, 5, r->state);
  bind_text(s, 6, r->url, r->url_len);
  bind_u64_or_null(s, 7, r->via);
  bind_text(s, 8, r->hop_path, r->hop_len);
  sqlite3_bind_int64(s, 9, (sqlite3_int64)r->first_seen);
  if (r->hint_rate > 0 && r->hint_rate < 1e300) sqlite3_bind_double(s, 10, r->hint_rate);
  st->stats.inserts++;
  int rc = step_done(st, s, "inserting a URI");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) {
    st->stats.insert_ignored++;
    return 0;
  }
  return 1;
}

static const char *col_text(sqlite3_stmt *s, int i, size_t *len) {
  const char *p = (const char *)sqlite3_column_text(s, i);
  *len = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
  return p;
}

static const uint8_t *col_blob(sqlite3_stmt *s, int i, size_t *len) {
  const uint8_t *p = sqlite3_column_blob(s, i);
  *len = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
  return p;
}

int kr_store_uri_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r) {
  settle(st);
  st->stats.gets++;
  const kr_uri_row_t *cached = kr_rowcache_get(st->rows, fp);
  if (cached) {
    *r = *cached;
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_URI_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return db_err(st, "reading a URI");
  }
  /* The row stays readable until the next call resets the statement. */
  st->get_active = 1;
  memset(r, 0, sizeof(*r));
  r->fp = (uint64_t)sqlite3_column_int64(s, 0);
  r->host_id = sqlite3_column_int64(s, 1);
  r->directive = sqlite3_column_int(s, 2);
  r->next_at = (uint64_t)sqlite3_column_int64(s, 3);
  r->state = sqlite3_column_int(s, 4);
  r->url = col_text(s, 5, &r->url_len);
  r->via = (uint64_t)sqlite3_column_int64(s, 6);
  r->hop_path = col_text(s, 7, &r->hop_len);
  r->first_seen = (uint64_t)sqlite3_column_int64(s, 8);
  r->last_visit = (uint64_t)sqlite3_column_int64(s, 9);
  r->wait_ms = (uint64_t)sqlite3_column_int64(s, 10);
  r->visits = (uint32_t)sqlite3_column_int64(s, 11);
  r->versions = (uint32_t)sqlite3_column_int64(s, 12);
  r->retries = (uint32_t)sqlite3_column_int64(s, 13);
  r->status = sqlite3_column_int(s, 14);
  r->content_type = col_text(s, 15, &r->content_type_len);
  r->digest = col_blob(s, 16, &r->digest_len);
  r->etag = col_text(s, 17, &r->etag_len);
  r->last_modified = sqlite3_column_int64(s, 18);
  r->history = col_blob(s, 19, &r->history_len);
  r->hint_rate = sqlite3_column_double(s, 20);
  r->gone = (uint32_t)sqlite3_column_int64(s, 21);
  r->last_linked = (uint64_t)sqlite3_column_int64(s, 22);
  kr_rowcache_put(st->rows, r);
  return 1;
}

int kr_store_uri_sched_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r) {
  settle(st);
  sqlite3_stmt *s = st->stmt[S_URI_SCHED_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  st->stats.gets++;
  int rc = sqlite3_step(s);
  int found = rc == SQLITE_ROW;
  if (found) {
    memset(r, 0, sizeof(*r));
    r->fp = fp;
    r->host_id = sqlite3_column_int64(s, 0);
    r->directive = sqlite3_column_int(s, 1);
    r->next_at = (uint64_t)sqlite3_column_int64(s, 2);
    r->state = sqlite3_column_int(s, 3);
  }
  sqlite3_reset(s);
  if (!found && rc != SQLITE_DONE) return db_err(st, "reading a URI's schedule");
  return found;
}

int kr_store_uri_update(kr_store_t *st, const kr_uri_row_t *r) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_UPDATE];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)r->fp);
  sqlite3_bind_int(s, 2, r->directive);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)r->next_at);
  sqlite3_bind_int(s, 4, r->state);
  bind_u64_or_null(s, 5, r->last_visit);
  sqlite3_bind_int64(s, 6, r->wait_ms > INT64_MAX ? INT64_MAX : (sqlite3_int64)r->wait_ms);
  sqlite3_bind_int64(s, 7, r->visits);
  sqlite3_bind_int64(s, 8, r->versions);
  sqlite3_bind_int64(s, 9, r->retries);
  if (r->status)
    sqlite3_bind_int(s, 10, r->status);
  else
    sqlite3_bind_null(s, 10);
  bind_text(s, 11, r->content_type, r->content_type_len);
  bind_blob(s, 12, r->digest, r->digest_len);
  bind_text(s, 13, r->etag, r->etag_len);
  bind_u64_or_null(s, 14, (uint64_t)r->last_modified);
  bind_blob(s, 15, r->history, r->history_len);
  sqlite3_bind_int64(s, 16, r->gone);
  st->stats.updates++;
  int rc = step_done(st, s, "updating a URI");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_update(st->rows, r);
  return 1;
}

int kr_store_uri_set_sched(kr_store_t *st, uint64_t fp, int directive,
                           uint64_t next_at, int state) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_SET_SCHED];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  sqlite3_bind_int(s, 2, directive);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)next_at);
  sqlite3_bind_int(s, 4, state);
  st->stats.updates++;
  int rc = step_done(st, s, "rescheduling a URI");
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_set_sched(st->rows, fp, directive, next_at, state);
  return 1;
}

int kr_store_uri_set_linked(kr_store_t *st, uint64_t fp, uint64_t when) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_SET_LINKED];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)when);
  st->stats.updates++;
  int rc = step_done(st, s, "noting a link to a URI");
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_set_linked(st->rows, fp, when);
  return 1;
}

int64_t kr_store_due_all(kr_store_t *st, uint64_t now) {
  static const char *const sql[] = {
      "UPDATE uris SET next_at = ?1, state = CASE WHEN state IN (3, 4, 5) THEN 0 ELSE state END"
      " WHERE next_at > ?1",
      "UPDATE hosts SET queued = (SELECT count(*) FROM uris"
      " WHERE host_id = hosts.id AND next_at < " NEVER_SQL ")",
  };
  settle(st);
  kr_rowcache_clear(st->rows); /* bulk: every queued row may change */
  if (write_begin(st)) return KR_EDB;
  int64_t moved = 0;
  for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, sql[i], -1, &s, NULL) != SQLITE_OK)
      return db_err(st, "making every URI due");
    if (i == 0) sqlite3_bind_int64(s, 1, (sqlite3_int64)(now < KR_NEVER ? now : KR_NEVER - 1));
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) return db_err(st, "making every URI due");
    if (i == 0) moved = sqlite3_changes(st->db);
    st->stats.updates++;
  }
  return moved;
}

int64_t kr_store_uris_move_host(kr_store_t *st, int64_t from, int64_t to) {
  settle(st);
  kr_rowcache_clear(st->rows); /* bulk: host_id of many rows */
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URIS_MOVE_HOST];
  sqlite3_bind_int64(s, 1, from);
  sqlite3_bind_int64(s, 2, to);
  int rc = step_done(st, s, "moving URIs to another host queue");
  if (rc) return rc;
  int64_t n = sqlite3_changes(st->db);
  st->stats.updates += (uint64_t)n;
  return n;
}

int kr_store_pick(kr_store_t *st, int64_t host_id, kr_store_pick_t *out, int max) {
  settle(st);
  sqlite3_stmt *s = st->stmt[S_PICK];
  sqlite3_bind_int64(s, 1, host_id);
  sqlite3_bind_int(s, 2, max);
  st->stats.picks++;
  int n = 0, rc;
  while (n < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    out[n].fp = (uint64_t)sqlite3_column_int64(s, 0);
    out[n].directive = sqlite3_column_int(s, 1);
    out[n].next_at = (uint64_t)sqlite3_column_int64(s, 2);
    n++;
  }
  if (n < max && rc != SQLITE_DONE) {
    sqlite3_reset(s);
    return db_err(st, "picking from a host queue");
  }
  sqlite3_reset(s);
  return n;
}

static int count_stmt(kr_store_t *st, sqlite3_stmt *s, uint64_t *n, const char *what) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) *n = (uint64_t)sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  return rc == SQLITE_ROW ? 0 : db_err(st, what);
}

int kr_store_count_queued(kr_store_t *st, int64_t host_id, uint64_t *n) {
  settle(st);
  if (host_id < 0) return count_stmt(st, st->stmt[S_COUNT_QUEUED_ALL], n, "counting");
  sqlite3_bind_int64(st->stmt[S_COUNT_QUEUED_HOST], 1, host_id);
  return count_stmt(st, st->stmt[S_COUNT_QUEUED_HOST], n, "counting");
}

int kr_store_count_uris(kr_store_t *st, uint64_t *n) {
  settle(st);
  return count_stmt(st, st->stmt[S_COUNT_URIS], n, "counting");
}

int kr_store_fp_scan(kr_store_t *st, int64_t *from, size_t max,
                     void (*fn)(void *ud, uint64_t fp), void *ud, int *done) {
  settle(st);
  sqlite3_stmt *s = st->stmt[S_FP_SCAN];
  sqlite3_bind_int64(s, 1, *from);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
  size_t n = 0;
  int rc, last = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t fp = sqlite3_column_int64(s, 0);
    fn(ud, (uint64_t)fp);
    n++;
    if (fp == INT64_MAX)
      last = 1;
    else
      *from = fp + 1;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return db_err(st, "loading fingerprints");
  *done = last || n < max;
  return 0;
}

/* ---- hosts ---------------------------------------------------------------- */

int kr_store_host_insert(kr_store_t *st, const char *name, size_t len, int64_t *id) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_HOST_INSERT];
  sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
  int rc = step_done(st, s, "inserting a host");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  *id = sqlite3_last_insert_rowid(st->db);
  return 0;
}

int kr_store_host_update(kr_store_t *st, const kr_host_row_t *h) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_HOST_UPDATE];
  sqlite3_bind_int64(s, 1, h->id);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)h->robots_expires);
  sqlite3_bind_int(s, 3, h->robots_status);
  sqlite3_bind_int64(s, 4, h->crawl_delay_ms);
  sqlite3_bind_int64(s, 5, h->backoff_level);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)h->backoff_until);
  sqlite3_bind_int64(s, 7, h->fail_streak);
  const uint64_t *c = &h->c.discovered;
  for (int i = 0; i < 9; i++) sqlite3_bind_int64(s, 8 + i, (sqlite3_int64)c[i]);
  const kr_vtrust_t *vt = &h->vt;
  const uint64_t vtc[] = {vt->checks,   vt->predicted_unchanged, vt->skipped,
                          vt->verified, vt->misses,              vt->false_alarms,
                          vt->distrusts};
  for (int i = 0; i < 7; i++) sqlite3_bind_int64(s, 17 + i, (sqlite3_int64)vtc[i]);
  sqlite3_bind_int64(s, 24, vt->miss_run);
  sqlite3_bind_int64(s, 25, vt->distrust_until);
  sqlite3_bind_int64(s, 26, (sqlite3_int64)h->c.refused);
  sqlite3_bind_int64(s, 27, (sqlite3_int64)h->c.retired);
  return step_done(st, s, "updating a host");
}

int kr_store_hosts_each(kr_store_t *st, int (*fn)(void *ud, const kr_host_row_t *h),
                        void *ud) {
  settle(st);
  sqlite3_stmt *s = st->stmt[S_HOSTS_EACH];
  int rc, ret = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    kr_host_row_t h;
    memset(&h, 0, sizeof(h));
    h.id = sqlite3_column_int64(s, 0);
    h.name = col_text(s, 1, &h.name_len);
    h.robots_expires = (uint64_t)sqlite3_column_int64(s, 2);
    h.robots_status = sqlite3_column_int(s, 3);
    h.crawl_delay_ms = sqlite3_column_int64(s, 4);
    h.backoff_level = (uint32_t)sqlite3_column_int64(s, 5);
    h.backoff_until = (uint64_t)sqlite3_column_int64(s, 6);
    h.fail_streak = (uint32_t)sqlite3_column_int64(s, 7);
    uint64_t *c = &h.c.discovered;
    for (int i = 0; i < 9; i++) c[i] = (uint64_t)sqlite3_column_int64(s, 8 + i);
    uint64_t *vtc[] = {&h.vt.checks,   &h.vt.predicted_unchanged, &h.vt.skipped,
                       &h.vt.verified, &h.vt.misses,              &h.vt.false_alarms,
                       &h.vt.distrusts};
    for (int i = 0; i < 7; i++) *vtc[i] = (uint64_t)sqlite3_column_int64(s, 17 + i);
    h.vt.miss_run = (uint32_t)sqlite3_column_int64(s, 24);
    h.vt.distrust_until = sqlite3_column_int64(s, 25);
    h.c.refused = (uint64_t)sqlite3_column_int64(s, 26);
    h.c.retired = (uint64_t)sqlite3_column_int64(s, 27);
    if (!h.name) continue;
    if ((ret = fn(ud, &h)) < 0) break;
  }
  sqlite3_reset(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE) return db_err(st, "loading hosts");
  return 0;
}

/* ---- meta ------------------------------------------------------------------- */

int kr_store_meta_get(kr_store_t *st, const char *key, char *out, size_t outlen) {
  settle(st);
  const struct dwrite *w = dw_find(st, S_META_SET, 0, dv_text(key, strlen(key)), 0);
  if (w) {
    if (outlen) snprintf(out, outlen, "%s", (const char *)w->v[1].p);
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_META_GET];
  sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  int found = rc == SQLITE_ROW;
  if (found && outlen) {
    const char *v = (const char *)sqlite3_column_text(s, 0);
    snprintf(out, outlen, "%s", v ? v : "");
  }
  sqlite3_reset(s);
  if (!found && rc != SQLITE_DONE) return db_err(st, "reading meta");
  return found;
}

int kr_store_meta_set(kr_store_t *st, const char *key, const char *value) {
  settle(st);
  dval_t v[2] = {dv_text(key, strlen(key)), dv_text(value, strlen(value))};
  int rc = write_or_keep(st, S_META_SET, v, 2, "writing meta");
  return rc < 0 ? rc : 0;
}

/* ---- adaptive: digests, hints ------------------------------------------------ */

/* The URL of fp (readable until the next call), NULL when none. */
static const char *url_of(kr_store_t *st, uint64_t fp, size_t *len) {
  sqlite3_stmt *s = st->stmt[S_URL_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  *len = 0;
  if (sqlite3_step(s) != SQLITE_ROW) {
    sqlite3_reset(s);
    return NULL;
  }
  st->get_active = 1;
  return col_text(s, 0, len);
}

int kr_store_digest_get(kr_store_t *st, const uint8_t *d, size_t n, kr_digest_ref_t *out) {
  settle(st);
  if (!d || !n) return 0;
  sqlite3_stmt *s = st->stmt[S_DIGEST_GET];
  sqlite3_bind_blob(s, 1, d, (int)n, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    const struct dwrite *w = dw_find(st, S_DIGEST_PUT, 0, dv_blob(d, n), 1);
    if (!w) return 0;
    memset(out, 0, sizeof(*out));
    out->fp = (uint64_t)w->v[1].i;
    out->date = (uint64_t)w->v[2].i;
    out->url = url_of(st, out->fp, &out->url_len);
    return 1;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return db_err(st, "reading the digest index");
  }
  /* Like a row of kr_store_uri_get: readable until the next call. */
  st->get_active = 1;
  memset(out, 0, sizeof(*out));
  out->fp = (uint64_t)sqlite3_column_int64(s, 0);
  out->date = (uint64_t)sqlite3_column_int64(s, 1);
  out->url = col_text(s, 2, &out->url_len);
  return 1;
}

int kr_store_digest_put(kr_store_t *st, const uint8_t *d, size_t n, uint64_t fp,
                        uint64_t date) {
  settle(st);
  if (!d || !n) return 0;
  dval_t v[3] = {dv_blob(d, n), dv_int((int64_t)fp), dv_int((int64_t)date)};
  int rc = write_or_keep(st, S_DIGEST_PUT, v, 3, "writing the digest index");
  if (rc) return rc; /* kept: 1, as if inserted */
  return sqlite3_changes(st->db) > 0;
}

/* ---- WARC originals ---------------------------------------------------------- */

/* The record ids kria writes, "<urn:uuid:" + 36 lowercase hex and dashes
 * + ">", are kept as their 16 bytes (47 -> 16 bytes per visited URI);
 * any other id as text. 1 when packed. */
static const char RID_PRE[] = "<urn:uuid:";
#define RID_LEN 47

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int rid_pack(const char *rid, uint8_t out[16]) {
  if (strlen(rid) != RID_LEN || memcmp(rid, RID_PRE, sizeof RID_PRE - 1) || rid[RID_LEN - 1] != '>')
    return 0;
  const char *p = rid + sizeof RID_PRE - 1;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      if (*p++ != '-') return 0;
    }
    int hi = hexval(p[0]), lo = hexval(p[1]);
    if (hi < 0 || lo < 0) return 0;
    out[i] = (uint8_t)(hi << 4 | lo);
    p += 2;
  }
  return 1;
}

static void rid_format(const uint8_t *b, char *out);

static const char *rid_unpack(kr_store_t *st, sqlite3_stmt *s, int col, size_t *len) {
  if (sqlite3_column_type(s, col) != SQLITE_BLOB || sqlite3_column_bytes(s, col) != 16)
    return col_text(s, col, len);
  rid_format(sqlite3_column_blob(s, col), st->rid);
  *len = RID_LEN;
  return st->rid;
}

static void rid_format(const uint8_t *b, char *out) {
  static const char hx[] = "0123456789abcdef";
  char *o = out;
  memcpy(o, RID_PRE, sizeof RID_PRE - 1);
  o += sizeof RID_PRE - 1;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
    *o++ = hx[b[i] >> 4];
    *o++ = hx[b[i] & 15];
  }
  *o++ = '>';
  *o = '\0';
}

static int orig_row(kr_store_t *st, sqlite3_stmt *s, kr_original_t *out) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return db_err(st, "reading WARC originals");
  }
  st->get_active = 1; /* readable until the next call */
  memset(out, 0, sizeof(*out));
  out->digest = sqlite3_column_blob(s, 0);
  out->digest_len = (size_t)sqlite3_column_bytes(s, 0);
  out->ofp = (uint64_t)sqlite3_column_int64(s, 1);
  out->date = (uint64_t)sqlite3_column_int64(s, 2);
  out->url = col_text(s, 3, &out->url_len);
  out->rid = rid_unpack(st, s, 4, &out->rid_len);
  return 1;
}

/* A kept S_ORIG_PUT as a row. */
static int orig_kept(kr_store_t *st, const struct dwrite *w, kr_original_t *out) {
  memset(out, 0, sizeof(*out));
  uint64_t fp = (uint64_t)w->v[0].i;
  out->digest = w->v[1].p;
  out->digest_len = w->v[1].len;
  out->ofp = w->v[2].i ? (uint64_t)w->v[2].i : fp;
  out->date = (uint64_t)w->v[3].i;
  if (w->v[4].type == SQLITE_BLOB) {
    rid_format(w->v[4].p, st->rid);
    out->rid = st->rid;
    out->rid_len = RID_LEN;
  } else {
    out->rid = (const char *)w->v[4].p;
    out->rid_len = w->v[4].len;
  }
  out->url = url_of(st, out->ofp, &out->url_len);
  return 1;
}

int kr_store_original_get(kr_store_t *st, uint64_t fp, kr_original_t *out) {
  settle(st);
  const struct dwrite *w = dw_find(st, S_ORIG_PUT, 0, dv_int((int64_t)fp), 0);
  if (w) return orig_kept(st, w, out);
  sqlite3_stmt *s = st->stmt[S_ORIG_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  return orig_row(st, s, out);
}

int kr_store_original_find(kr_store_t *st, const uint8_t *d, size_t n, kr_original_t *out) {
  settle(st);
  if (!d || !n) return 0;
  sqlite3_stmt *s = st->stmt[S_ORIG_FIND];
  sqlite3_bind_blob(s, 1, d, (int)n, SQLITE_STATIC);
  int rc = orig_row(st, s, out);
  if (rc) return rc;
  const struct dwrite *w = dw_find(st, S_ORIG_PUT, 1, dv_blob(d, n), 0);
  return w ? orig_kept(st, w, out) : 0;
}

int kr_store_original_put(kr_store_t *st, uint64_t fp, const uint8_t *d, size_t n, uint64_t ofp,
                          uint64_t date, const char *rid) {
  settle(st);
  if (!d || !n || !rid || !*rid) return KR_EINVAL;
  uint8_t packed[16];
  /* fps are never 0: 0 names the URI itself, stored in no bytes at all */
  dval_t v[5] = {dv_int((int64_t)fp), dv_blob(d, n), dv_int(ofp == fp ? 0 : (int64_t)ofp),
                 dv_int((int64_t)date),
                 rid_pack(rid, packed) ? dv_blob(packed, sizeof packed) : dv_text(rid, strlen(rid))};
  int rc = write_or_keep(st, S_ORIG_PUT, v, 5, "writing a WARC original");
  return rc < 0 ? rc : 0;
}

/* ---- robots.txt ---------------------------------------------------------------- */

int kr_store_robots_get(kr_store_t *st, const char *origin, size_t n, kr_robots_row_t *out) {
  settle(st);
  const struct dwrite *w = dw_find(st, S_ROBOTS_PUT, 0, dv_text(origin, n), 0);
  if (w) {
    memset(out, 0, sizeof(*out));
    out->expires = w->v[1].i > 0 ? (uint64_t)w->v[1].i : 0;
    out->status = (int)w->v[2].i;
    out->final = w->v[3].i != 0;
    out->body = w->v[4].type == SQLITE_BLOB ? (const char *)w->v[4].p : NULL;
    out->body_len = w->v[4].type == SQLITE_BLOB ? w->v[4].len : 0;
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_ROBOTS_GET];
  sqlite3_bind_text(s, 1, origin, (int)n, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return db_err(st, "reading robots.txt rules");
  }
  st->get_active = 1; /* readable until the next call */
  memset(out, 0, sizeof(*out));
  int64_t exp = sqlite3_column_int64(s, 0);
  out->expires = exp > 0 ? (uint64_t)exp : 0;
  out->status = sqlite3_column_int(s, 1);
  out->final = sqlite3_column_int(s, 2) != 0;
  out->body = sqlite3_column_blob(s, 3);
  out->body_len = (size_t)sqlite3_column_bytes(s, 3);
  return 1;
}

int kr_store_robots_put(kr_store_t *st, const char *origin, size_t n, const kr_robots_row_t *r) {
  settle(st);
  dval_t v[5] = {dv_text(origin, n),
                 dv_int(r->expires > INT64_MAX ? INT64_MAX : (int64_t)r->expires),
                 dv_int(r->status), dv_int(r->final != 0),
                 r->body && r->body_len ? dv_blob(r->body, r->body_len) : dv_null()};
  int rc = write_or_keep(st, S_ROBOTS_PUT, v, 5, "writing robots.txt rules");
  return rc < 0 ? rc : 0;
}

int kr_store_uri_set_hint(kr_store_t *st, uint64_t fp, double rate) {
  settle(st);
  dval_t v[2] = {dv_int((int64_t)fp), rate > 0 && rate < 1e300 ? dv_float(rate) : dv_null()};
  st->stats.updates++;
  int rc = write_or_keep(st, S_URI_SET_HINT, v, 2, "writing a URI's hint");
  if (rc) return rc; /* kept: 1, as if the row were there (a row read
                        during the drain does not show it yet) */
  return sqlite3_changes(st->db) > 0;
}

/* ---- scope: the seeds in force, disregarded URIs ---------------------------- */

/* Statements of this section run at a start or a reload only: prepared
 * each time, like kr_store_due_all's. */
static sqlite3_stmt *prepare_once(kr_store_t *st, const char *sql, const char *what) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
    db_err(st, what);
    return NULL;
  }
  return s;
}

int kr_store_seeds_each(kr_store_t *st, int (*fn)(void *ud, const char *url, size_t len,
                                                  unsigned flags),
                        void *ud) {
  settle(st);
  sqlite3_stmt *s = prepare_once(st, "SELECT url, flags FROM seeds ORDER BY url", "reading the seeds");
  if (!s) return KR_EDB;
  int rc, ret = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    size_t len;
    const char *url = col_text(s, 0, &len);
    if (!url || !len) continue;
    if ((ret = fn(ud, url, len, (unsigned)sqlite3_column_int(s, 1))) < 0) break;
  }
  sqlite3_finalize(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE) return db_err(st, "reading the seeds");
  return 0;
}

int kr_store_seeds_clear(kr_store_t *st) {
  settle(st);
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = prepare_once(st, "DELETE FROM seeds", "replacing the seeds");
  if (!s) return KR_EDB;
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return db_err(st, "replacing the seeds");
  st->stats.updates++;
  return 0;
}

int kr_store_seed_put(kr_store_t *st, const char *url, size_t len, unsigned flags, uint64_t now) {
  settle(st);
  if (!url || !len) return KR_EINVAL;
  if (write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = prepare_once(
      st, "INSERT OR REPLACE INTO seeds(url, flags, added) VALUES (?1, ?2, ?3)", "storing a seed");
  if (!s) return KR_EDB;
  sqlite3_bind_text(s, 1, url, (int)len, SQLITE_STATIC);
  sqlite3_bind_int(s, 2, (int)flags);
  sqlite3_bind_int64(s, 3, now > INT64_MAX ? INT64_MAX : (sqlite3_int64)now);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return db_err(st, "storing a seed");
  st->stats.updates++;
  return 0;
}

int kr_store_disregarded_page(kr_store_t *st, int status, const char *after, size_t after_len,
                              const char *below, size_t below_len, size_t max,
                              void (*fn)(void *ud, const kr_uri_row_t *r), void *ud) {
  settle(st);
  /* the terms of uris_disregarded, so that SQLite walks it */
  sqlite3_stmt *s = prepare_once(st,
                                 "SELECT fp, url, hop_path FROM uris WHERE state = 3 AND "
                                 "status = ?1 AND url > ?2 AND url < ?3 ORDER BY url LIMIT ?4",
                                 "reading disregarded URIs");
  if (!s) return KR_EDB;
  sqlite3_bind_int(s, 1, status);
  sqlite3_bind_text(s, 2, after ? after : "", after ? (int)after_len : 0, SQLITE_STATIC);
  /* no upper bound: above every URL (they are ASCII) */
  sqlite3_bind_text(s, 3, below ? below : "\x7f", below ? (int)below_len : 1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, max > INT32_MAX ? INT32_MAX : (sqlite3_int64)max);
  int rc, n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    kr_uri_row_t r;
    memset(&r, 0, sizeof r);
    r.fp = (uint64_t)sqlite3_column_int64(s, 0);
    r.url = col_text(s, 1, &r.url_len);
    r.hop_path = col_text(s, 2, &r.hop_len);
    r.state = KR_URI_DISREGARDED;
    r.status = status;
    r.next_at = KR_NEVER;
    if (r.url) fn(ud, &r);
    n++;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return db_err(st, "reading disregarded URIs");
  return n;
}
