/*
 * Private to the store (store.c opens it, store_tx.c runs its
 * transactions, kept writes and checkpoints, store_rows.c reads and writes
 * its rows): the store's struct, its prepared statements by name, the
 * writes kept during a drain, and the helpers every write path takes
 * inline. Not for other modules.
 */
#ifndef KRIA_STORE_INT_H
#define KRIA_STORE_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "kria/error.h"
#include "rowcache.h"
#include "store.h"

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
  S_HOST_SET_LEARNED,
  S_WEBSUB_PUT,
  S_WEBSUB_DEL,
  S_OUTBOX_PUT,
  S_OUTBOX_DEL,
  S__COUNT
};

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

/* A commit's presync step running in the background (see
 * kr_store_presync_done). */
enum { PS_NONE, PS_WAITING, PS_DONE };

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

static inline dval_t dv_int(int64_t i) { return (dval_t){.type = SQLITE_INTEGER, .i = i}; }
static inline dval_t dv_null(void) { return (dval_t){.type = SQLITE_NULL}; }
static inline dval_t dv_float(double d) { return (dval_t){.type = SQLITE_FLOAT, .d = d}; }
/* Borrowed until kept (defer copies). */
static inline dval_t dv_text(const char *p, size_t n) {
  return (dval_t){.type = SQLITE_TEXT, .p = (uint8_t *)(uintptr_t)p, .len = n};
}
static inline dval_t dv_blob(const void *p, size_t n) {
  return (dval_t){.type = SQLITE_BLOB, .p = (uint8_t *)(uintptr_t)p, .len = n};
}

/* Log an SQLite failure of the writer while doing what. */
int kr__store_db_err(kr_store_t *st, const char *what);
/* Free what kr_store_open built (store.c). */
void kr__store_free(kr_store_t *st);

/* store_tx.c: the writes kept during a drain, the transaction, the
 * checkpoints. */
int kr__store_dw_apply(kr_store_t *st);
void kr__store_dw_clear(kr_store_t *st);
int kr__store_write_or_keep(kr_store_t *st, int stmt, const dval_t *v, int n, const char *what);
const struct dwrite *kr__store_dw_find(const kr_store_t *st, int stmt, int k, dval_t key,
                                       int oldest);
int kr__store_wal_hook(void *ud, sqlite3 *db, const char *name, int frames);
void kr__store_wal_leftover(kr_store_t *st);
int kr__store_run_quick_check(sqlite3 *db, char *out, size_t outlen);
void kr__store_ckpt_work(uv_work_t *req);
void kr__store_ckpt_after(uv_work_t *req, int status);

/* kr_store_uri_get leaves its statement on the row so the caller can read
 * the column memory; every later call resets it first, which also ends
 * the read transaction it holds (a reader pins the WAL). */
static inline void kr__store_settle(kr_store_t *st) {
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

static inline uint64_t kr__store_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline int kr__store_step_done(kr_store_t *st, sqlite3_stmt *s, const char *what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return kr__store_db_err(st, what);
  return 0;
}

/* Every write calls this first: joins (or opens) the transaction. */
static inline int kr__store_write_begin(kr_store_t *st) {
  if (!st->in_tx) {
    /* A write during a drain is allowed (correctness never depends on
     * it); it only costs this drain its WAL restart. */
    if (st->draining) st->stats.drains_broken++;
    if (kr__store_step_done(st, st->stmt[S_BEGIN], "beginning a transaction")) return KR_EDB;
    st->in_tx = 1;
    st->tx_writes = 0;
    st->tx_opened_at = st->opts.clock ? kr_clock_now_ms(st->opts.clock) : 0;
    st->stats.begins++;
    if (st->ndw && kr__store_dw_apply(st)) return KR_EDB;
  }
  st->tx_writes++;
  st->stats.writes++;
  return 0;
}

#endif
