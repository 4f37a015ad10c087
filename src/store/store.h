/*
 * The crawl state in SQLite: `<state-dir>/kria.db` in WAL mode, one
 * writer connection on the loop thread, grouped transactions, checkpoints
 * on a second connection off the loop thread, and an exclusive lock on the
 * state directory. The frontier is its only client; it keeps no in-flight
 * state here, so whatever is committed is exactly what a restart resumes.
 *
 * Schema (version KR_STORE_SCHEMA, PRAGMA application_id KR_STORE_APP_ID):
 *   meta(key, value)               crawl metadata (created, queue-assign)
 *   hosts(id, name, ...)           one row per host queue: robots expiry
 *                                  and status, Crawl-delay, back-off level
 *                                  and until, failure streak, counters
 *                                  and validator trust (vt_*, kr_vtrust_t);
 *                                  learned: the host's learned-state
 *                                  record (kria/hoststate.h), NULL none
 *   uris(fp, host_id, directive, next_at, state, url, via, hop_path,
 *        first_seen, last_visit, wait_ms, visits, versions, retries,
 *        status, content_type, digest, etag, last_modified, history, hint,
 *        orig_date, orig_fp, orig_rid, orig_digest, gone, last_linked)
 *                                  fp = kr_fp(canonical URL) as the rowid;
 *                                  digest is the change digest, history a
 *                                  kr_vhist (estimate.h), hint a sitemap
 *                                  changefreq in changes/s; orig_* the
 *                                  URI's WARC original (NULL orig_date:
 *                                  none): the payload digest of its
 *                                  current version and the WARC response
 *                                  record holding it (URI orig_fp,
 *                                  WARC-Date orig_date, WARC-Record-ID
 *                                  orig_rid): what revisits refer to;
 *                                  orig_fp 0 is fp itself, a
 *                                  "<urn:uuid:...>" id kria wrote is its
 *                                  16 bytes (BLOB), any other id text;
 *                                  orig_digest NULL when the payload
 *                                  digest is the change digest (digest);
 *                                  gone the 404/410 answers in a row,
 *                                  last_linked when a page last linked
 *                                  to it (NULL: first_seen; written at
 *                                  most once per linked-epoch, frontier.h)
 *   digests(digest, fp, date)      payload digest -> the first URI and
 *                                  date it was stored under (URL-agnostic
 *                                  duplicates)
 *   robots(origin, expires, status, final, body)  the last robots.txt
 *                                  fetch per origin ("http://host:port"):
 *                                  a restart reuses it until it expires
 *   seeds(url, flags, added)       the seeds in force (canonical URL,
 *                                  KR_SEED_* flags): the crawl's scope, so
 *                                  a start without crawl.seeds keeps it
 *   websub(topic, hub, token, secret, expires)  WebSub subscriptions
 *                                  (src/crawl/websub.c): the callback
 *                                  path token, the HMAC secret, the end
 *                                  of the verified lease in epoch ms (0:
 *                                  not verified yet)
 *   outbox(id, member, url, hop_path, via, directive)  links another
 *                                  cluster member owns, until Redis
 *                                  confirmed them (src/crawl/cluster.c)
 *   host_validators                a view: per host the validator trust
 *                                  counters, reliability and usefulness
 *   uris_queue(host_id, directive DESC, next_at) WHERE next_at < NEVER
 *                                  the per-host priority index
 *   uris_orig_digest(substr(coalesce(orig_digest, digest), 1, 8))
 *                                  WHERE orig_date IS NOT NULL  originals
 *                                  by (8 bytes of) payload digest, only
 *                                  while opts.orig_index asks for it
 *                                  (about 26 bytes per visited URI)
 *   uris_disregarded(status, url) WHERE state = 3  disregarded URIs
 *                                  by status and URL: the ones a scope or
 *                                  robots.txt change may bring back
 * Disregarded and failed URIs stay with next_at = KR_NEVER (out of the
 * index, kept for dedupe).
 *
 * Transactions: every write joins the current transaction, opened lazily
 * (BEGIN IMMEDIATE) at the first write. Nothing commits on its own: the
 * loop calls kr_store_maybe_commit() once per turn (from a uv_check), which
 * commits once commit_updates writes or commit_ms have accumulated, so the
 * writes of one completed URI (its row, its links, its host) always share
 * one transaction. kr_store_hold()/kr_store_release() bracket a longer unit.
 *
 * Checkpoints: SQLite's auto-checkpoint is off (it would run inside a
 * commit, on the loop). A WAL hook notes the WAL size after each commit;
 * past wal_checkpoint_bytes, or when the store has been idle for
 * idle_checkpoint_ms, a PASSIVE checkpoint runs on a second connection in
 * a uv_queue_work job while commits go on. Once the passes have left
 * little uncopied, the store drains: no transaction begins until one more
 * pass has copied the rest, so the next one restarts the WAL from its
 * beginning — the only way the WAL stops growing while transactions keep
 * coming, and no commit waits for it. During a drain kr_store_writable()
 * is 0 and the caller holds its writes back (the frontier queues them);
 * the store's other writes (originals, digests, robots.txt, hints, meta)
 * are kept in memory by the store itself, read back by the gets of the
 * same keys, and applied in the first transaction after the drain.
 * When the passes still fall behind (a slow disk, a checkpoint thread
 * starved of CPU, other writers breaking drains) the WAL would grow
 * without bound; past wal_max_bytes kr_store_wal_held() is 1 and the
 * frontier issues no new fetch until a checkpoint has caught up.
 * Without a loop (tests, tools) the passes run inline from
 * kr_store_maybe_commit() and a drain ends before it returns.
 *
 * Refusals at open (KR_EDB, message names the file): another process holds
 * `<state-dir>/kria.lock`; kria.db is not an SQLite file, belongs to
 * another application, has a newer schema than this build knows, or fails
 * PRAGMA quick_check. Nothing is ever reset or rewritten to "repair" it.
 * The quick_check reads every page (about 1.4 s per million URIs here), so
 * by default it runs in the background right after open, on the
 * checkpoint connection: a corrupt database then makes
 * kr_store_maybe_commit() return KR_EDB with kr_store_check_state()'s
 * message naming the file, and the crawl stops.
 */
#ifndef KRIA_STORE_H
#define KRIA_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "kria/validators.h"

#define KR_NEVER ((uint64_t)INT64_MAX)   /* next_at of a URI never due */
#define KR_STORE_APP_ID 0x6b726961       /* "kria" */
#define KR_STORE_SCHEMA 11               /* user_version this build writes */
#define KR_STORE_DB_NAME "kria.db"
#define KR_STORE_LOCK_NAME "kria.lock"

/* uris.state */
typedef enum kr_uri_state {
  KR_URI_QUEUED = 0,      /* discovered, never finished */
  KR_URI_SUCCESS = 1,     /* visited (any HTTP status); queued to revisit */
  KR_URI_RETRY = 2,       /* retryable error; queued at now + retry-delay */
  KR_URI_DISREGARDED = 3, /* robots: next_at = NEVER */
  KR_URI_FAILED = 4,      /* failed; NEVER or the failed-wait */
  KR_URI_RETIRED = 5,     /* gone (404/410) or no longer linked: kept with
                             its history, revisited after retired-wait or
                             never (frontier.h, Retirement) */
} kr_uri_state_t;
#define KR_URI_STATES 6

typedef struct kr_store kr_store_t;

typedef struct kr_store_opts {
  uv_loop_t *loop;               /* checkpoint jobs; NULL: inline */
  kr_clock_t *clock;             /* transaction age; NULL: from maybe_commit */
  uint32_t commit_ms;            /* commit a transaction this old (50) */
  uint32_t commit_updates;       /* or holding this many writes (1000) */
  uint64_t wal_checkpoint_bytes; /* checkpoint past this WAL size (256 MiB) */
  uint64_t wal_max_bytes;        /* hold new work past this WAL size (0: 3 x
                                    wal_checkpoint_bytes; kr_store_wal_held) */
  uint32_t idle_checkpoint_ms;   /* or after this long without commits (1000) */
  uint32_t cache_mib;            /* SQLite page cache (64) */
  int quick_check;               /* PRAGMA quick_check: 0 never, 1 at open
                                    (blocking), 2 in the background right
                                    after open (default; at open without a
                                    loop) */
  uint32_t page_size;            /* for a new database (4096) */
  int plain_vfs;                 /* 1: SQLite's default VFS, WAL writes not
                                    gathered (store_vfs.c; benchmarks) */
  uint32_t row_cache;            /* 0; N: keep up to N uris rows in memory,
                                    written through (rowcache.h; simulate) */
  int orig_index;                /* the index uris_orig_digest, which only
                                    kr_store_original_find reads: 0 as it
                                    is (default), 1 build it when missing
                                    (logged: a while on a million rows), -1
                                    drop it */
} kr_store_opts_t;

void kr_store_opts_default(kr_store_opts_t *o);

/* Open (creating if needed: the directory's leaf and the database) the
 * store in dir and take its lock. opts may be NULL (defaults). On error
 * returns KR_EDB (or KR_EINVAL/KR_EIO) and writes a one-line reason naming
 * the file into err (when errlen > 0; logged instead when there is no
 * err). */
int kr_store_open(const char *dir, const kr_store_opts_t *opts,
                  kr_store_t **out, char *err, size_t errlen);

/* A read-only connection to the database at db_path for reports (kria
 * status -s, the census), never taking the crawl's lock; busy_ms is its
 * busy timeout. A WAL database needs its -wal and -shm files, or to
 * create them: in a directory the reader cannot write (another user's
 * crawl, a read-only mount) it is opened immutable instead, but only when
 * no -wal file is there (everything is in the database: the crawl stopped
 * cleanly) and no process holds the state directory's lock. An SQLite
 * result code; *db is set either way (sqlite3_close it). */
struct sqlite3;
int kr_store_open_reader(const char *db_path, int busy_ms, struct sqlite3 **db);

/* Commit what is pending, wait for a running checkpoint job's thread part,
 * close both connections and release the lock. Returns the commit's
 * result (the store is closed either way). NULL is a no-op. */
int kr_store_close(kr_store_t *st);

/* Close WITHOUT committing: the open transaction is rolled back, as if
 * the process had been killed. For recovery tests. */
void kr_store_abandon(kr_store_t *st);

const char *kr_store_path(const kr_store_t *st); /* .../kria.db */

/* ---- transactions ---------------------------------------------------- */

/* Commit when the open transaction holds >= commit_updates writes or is
 * >= commit_ms old (and no hold is active); also starts idle/size
 * checkpoints. Returns 1 if it committed, 0 if not, KR_EDB on a failed
 * commit (rolled back: the caller's memory no longer matches the database
 * and the crawl must stop) or once the background quick_check found the
 * database corrupt. */
int kr_store_maybe_commit(kr_store_t *st, uint64_t now);
/* 0 while the store drains (see Checkpoints above): writes should wait
 * for it (they are correct anyway, but keep the WAL from restarting);
 * also 0 while a commit waits for its presync step (see
 * kr_store_set_presync): then writes that step did not cover must wait.
 * Becomes 1 again in a loop callback or kr_store_maybe_commit; check it
 * at each loop turn. */
int kr_store_writable(const kr_store_t *st);
/* 1 while the WAL is past wal_max_bytes and no checkpoint has yet brought
 * it back: the caller should start no new work (the frontier issues no
 * fetch) while what runs still commits, so the checkpoints catch up.
 * Ends in a loop callback (or inline without a loop) once a checkpoint
 * has copied every frame or the WAL restarted under wal_checkpoint_bytes.
 * A WAL left over from an earlier run counts from open. */
int kr_store_wal_held(const kr_store_t *st);
/* Wait (blocking) for a running checkpoint job's thread part and end a
 * drain: for shutdown. */
void kr_store_wait_checkpoint(kr_store_t *st);
/* The quick_check: 1 passed, 0 not run or still running, KR_EDB corrupt
 * (*msg, when msg is not NULL, gets the reason naming the file). */
int kr_store_check_state(const kr_store_t *st, const char **msg);
/* Commit now (0 when nothing was open). KR_EINVAL while held. */
int kr_store_commit(kr_store_t *st);
/* Brackets: no commit between hold and the matching release. */
void kr_store_hold(kr_store_t *st);
void kr_store_release(kr_store_t *st);
int kr_store_in_tx(const kr_store_t *st);
/* 1 while writes kept during a drain wait to be applied: with
 * !kr_store_in_tx(), 0 means every write made so far is committed. */
int kr_store_has_kept(const kr_store_t *st);

/* Called right before each COMMIT, inside the transaction (the frontier
 * writes its dirty host rows). A negative return aborts the commit. */
typedef int (*kr_store_precommit_fn)(void *ud);
void kr_store_set_precommit(kr_store_t *st, kr_store_precommit_fn fn, void *ud);
/* Called right before each COMMIT, after the pre-commit step, for output
 * that must be on disk before the store says its work was done (the WARC
 * files under durability batch: a crash may repeat a fetch, never lose
 * one). It cannot stop the commit. NULL clears it.
 * With may_wait (a commit of kr_store_maybe_commit) the step may instead
 * start its work in the background and return KR_STORE_PRESYNC_WAIT: the
 * commit then waits, the transaction stays open, and kr_store_writable()
 * is 0 until the commit is done, so the caller holds back (as during a
 * drain) the writes the step did not cover. Once the work is done the
 * step calls kr_store_presync_done() (in a loop callback) and the next
 * kr_store_maybe_commit() commits without calling the step again. An
 * explicit commit (kr_store_commit, kr_store_close) calls the step with
 * may_wait 0, also while one waits: it must then complete inline.
 * Otherwise it returns 0. */
#define KR_STORE_PRESYNC_WAIT 1
typedef int (*kr_store_presync_fn)(void *ud, int may_wait);
void kr_store_set_presync(kr_store_t *st, kr_store_presync_fn fn, void *ud);
/* The background work of the presync step is done: the waiting commit
 * may go ahead (a no-op when none waits). */
void kr_store_presync_done(kr_store_t *st);
/* 1 from a presync step's KR_STORE_PRESYNC_WAIT until its commit. */
int kr_store_presync_waiting(const kr_store_t *st);

/* ---- URIs ------------------------------------------------------------ */

/* One uris row. Pointers read from the store stay valid until the next
 * call into the store. Absent text/blob columns: NULL and 0. */
typedef struct kr_uri_row {
  uint64_t fp;
  int64_t host_id;
  int directive;
  uint64_t next_at;
  int state;                 /* kr_uri_state_t */
  const char *url;
  size_t url_len;
  uint64_t via;              /* 0: none */
  const char *hop_path;
  size_t hop_len;
  uint64_t first_seen;
  uint64_t last_visit;       /* 0: never */
  uint64_t wait_ms;          /* the last wait decided */
  uint32_t visits, versions, retries;
  int status;                /* HTTP status or negative KR_E*, 0: none */
  const char *content_type;
  size_t content_type_len;
  const uint8_t *digest;
  size_t digest_len;
  const char *etag;
  size_t etag_len;
  int64_t last_modified;     /* epoch s from Last-Modified, 0: none */
  const uint8_t *history;    /* kr_vhist encoding (estimate.h) */
  size_t history_len;
  double hint_rate;          /* sitemap changefreq, changes/s; 0: none */
  uint32_t gone;             /* 404/410 answers in a row */
  uint64_t last_linked;      /* epoch ms of the last link seen to it, 0:
                                none since first_seen (read only: written
                                by kr_store_uri_set_linked) */
} kr_uri_row_t;

/* Insert a new URI (fp, host_id, directive, next_at, state, url, via,
 * hop_path, first_seen). 1 inserted, 0 when fp exists already (nothing
 * changed), KR_EDB. */
int kr_store_uri_insert(kr_store_t *st, const kr_uri_row_t *r);
/* Read a whole row. 1 found, 0 absent, KR_EDB. */
int kr_store_uri_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r);
/* Scheduling columns only (host_id, directive, next_at, state). 1, 0
 * absent, KR_EDB. */
int kr_store_uri_sched_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r);
/* Write every column but fp, url, host_id, via, hop_path, first_seen,
 * last_linked from r. 1, 0 absent, KR_EDB. */
int kr_store_uri_update(kr_store_t *st, const kr_uri_row_t *r);
/* Write directive, next_at and state of fp. 1, 0 absent, KR_EDB. */
int kr_store_uri_set_sched(kr_store_t *st, uint64_t fp, int directive,
                           uint64_t next_at, int state);

/* A page linked to fp at when (uris.last_linked). 1, 0 absent, KR_EDB. */
int kr_store_uri_set_linked(kr_store_t *st, uint64_t fp, uint64_t when);

/* Make every URI due at now (kria crawl --revisit-now): next_at moves to
 * now wherever it is later (KR_NEVER included), disregarded and failed
 * URIs are queued again (retired ones too), and each host's queued count
 * is recounted. Runs
 * in the open transaction (before the frontier loads the host rows).
 * Returns the number of URIs moved, or KR_EDB. */
int64_t kr_store_due_all(kr_store_t *st, uint64_t now);

/* The top of host_id's queue: up to max (fp, directive, next_at) in
 * queue order (directive desc, next_at, fp), only next_at < KR_NEVER.
 * Returns the number written to out, or KR_EDB. */
typedef struct kr_store_pick {
  uint64_t fp;
  int directive;
  uint64_t next_at;
} kr_store_pick_t;
int kr_store_pick(kr_store_t *st, int64_t host_id, kr_store_pick_t *out,
                  int max);

/* Queued (next_at < NEVER) URIs of host_id; -1 for all hosts. For
 * validation and reports: O(queue). 0 or KR_EDB. */
int kr_store_count_queued(kr_store_t *st, int64_t host_id, uint64_t *n);
/* Move host from's queued URIs (next_at < NEVER) to host to (queue
 * assignment by IP: a host's address became known). The number moved,
 * or KR_EDB. */
int64_t kr_store_uris_move_host(kr_store_t *st, int64_t from, int64_t to);
/* All rows; 0 or KR_EDB. */
int kr_store_count_uris(kr_store_t *st, uint64_t *n);

/* Walk fingerprints in ascending signed order (the rowid's) from *from
 * (inclusive; start with INT64_MIN), at most max of them, calling fn for
 * each; *from moves past the last one. Sets *done at the end. 0 or KR_EDB. */
int kr_store_fp_scan(kr_store_t *st, int64_t *from, size_t max,
                     void (*fn)(void *ud, uint64_t fp), void *ud, int *done);

/* ---- hosts ------------------------------------------------------------ */

typedef struct kr_counts {
  uint64_t discovered;  /* URIs added */
  uint64_t queued;      /* URIs with next_at < NEVER */
  uint64_t finished;    /* completions of any outcome */
  uint64_t succeeded;
  uint64_t retried;     /* retryable outcomes */
  uint64_t failed;
  uint64_t disregarded;
  uint64_t backoffs;    /* 429/503 back-offs */
  uint64_t bytes;       /* downloaded */
  uint64_t refused;     /* new links refused at the host's URI cap */
  uint64_t retired;     /* retirements (gone or no longer linked) */
} kr_counts_t;

typedef struct kr_host_row {
  int64_t id;
  const char *name;
  size_t name_len;
  uint64_t robots_expires;  /* epoch ms; 0 unknown */
  int robots_status;        /* status of the last robots fetch; 0 none */
  int64_t crawl_delay_ms;   /* robots Crawl-delay; -1 none */
  uint32_t backoff_level;
  uint64_t backoff_until;
  uint32_t fail_streak;
  kr_counts_t c;
  kr_vtrust_t vt;           /* validator trust (validators.h) */
  const uint8_t *learned;   /* kr_store_hosts_each: the learned-state
                               record (kria/hoststate.h) as stored, valid
                               during the callback; NULL none */
  size_t learned_len;
} kr_host_row_t;

/* Insert a host queue by name; *id gets its id. 0 or KR_EDB. */
int kr_store_host_insert(kr_store_t *st, const char *name, size_t len,
                         int64_t *id);
/* Write every column of h->id but the name. 0 or KR_EDB. */
int kr_store_host_update(kr_store_t *st, const kr_host_row_t *h);
/* Replace host id's learned-state record (len 0: none). Not checked
 * here: the reader refuses what it cannot read. 0 or KR_EDB. */
int kr_store_host_set_learned(kr_store_t *st, int64_t id, const uint8_t *p, size_t len);
/* Every host row, in id order; fn returning < 0 stops with that value. */
int kr_store_hosts_each(kr_store_t *st,
                        int (*fn)(void *ud, const kr_host_row_t *h), void *ud);

/* ---- meta ------------------------------------------------------------- */

/* Get meta key as text into out (NUL-terminated, cut at outlen). 1 found,
 * 0 absent, KR_EDB. */
int kr_store_meta_get(kr_store_t *st, const char *key, char *out, size_t outlen);
int kr_store_meta_set(kr_store_t *st, const char *key, const char *value);

/* ---- checkpoints and stats --------------------------------------------- */

/* Run a PASSIVE checkpoint inline on the loop thread (tests, tools, idle
 * shutdown). 0 or KR_EDB. */
int kr_store_checkpoint(kr_store_t *st);

typedef struct kr_store_stats {
  uint64_t begins, commits, writes; /* transactions, writes in them */
  uint64_t inserts, insert_ignored; /* kr_store_uri_insert: run, no-op */
  uint64_t updates, picks, gets;
  uint64_t checkpoints;             /* completed checkpoint runs */
  uint64_t checkpoint_failures;     /* runs that failed (a full disk, say) */
  uint64_t restarts;                /* times the WAL started over */
  uint64_t drains;                  /* drains (see kr_store_writable) */
  uint64_t drains_broken;           /* writes that began during one */
  uint64_t writes_kept;             /* writes kept in memory during one */
  uint64_t drain_us_max;            /* the longest drain */
  uint64_t wal_frames;              /* WAL size after the last commit */
  uint64_t wal_frames_max;
  uint64_t wal_holds;               /* times the WAL passed wal_max_bytes */
  uint64_t wal_held_us_max;         /* the longest of those holds */
  int wal_held;                     /* kr_store_wal_held() */
  uint64_t commit_us_max;           /* slowest COMMIT */
  int checkpoint_running;
} kr_store_stats_t;
const kr_store_stats_t *kr_store_stats(const kr_store_t *st);
/* Page cache bytes of the writer connection (it fills up to cache_mib),
 * and all of SQLite's heap in this process (every connection). */
void kr_store_memory(const kr_store_t *st, uint64_t *cache, uint64_t *sqlite_heap);

/* ---- VFS (store_vfs.c) ----------------------------------------------------- */

#define KR_STORE_VFS_NAME "kria-wal"
/* Register (once per process) the store's VFS: the default one with each
 * transaction's WAL frames written in large writes instead of two per
 * page. Returns its name, or NULL when it could not be registered. */
const char *kr_store_vfs(void);

/* ---- adaptive ------------------------------------------------------------ */

/* Where a payload digest was first stored. */
typedef struct kr_store_digest {
  uint64_t fp;          /* the URI */
  uint64_t date;        /* epoch ms of that fetch */
  const char *url;      /* its URL, NULL when the row is gone */
  size_t url_len;
} kr_store_digest_t;

/* Look payload digest d (n bytes) up. 1 and *out (pointers valid until
 * the next call into the store), 0 when unknown, KR_EDB. */
int kr_store_digest_get(kr_store_t *st, const uint8_t *d, size_t n, kr_store_digest_t *out);
/* Remember d as stored under fp at date unless it is known already. 1
 * inserted, 0 known, KR_EDB. */
int kr_store_digest_put(kr_store_t *st, const uint8_t *d, size_t n, uint64_t fp,
                        uint64_t date);
/* A URI's WARC original: the payload digest of its current version and
 * the response record holding that payload (written by the WARC writer,
 * src/crawl/proc_warc.c, only once the record is in a file). */
typedef struct kr_original {
  const uint8_t *digest;  /* payload digest */
  size_t digest_len;
  uint64_t ofp;           /* the record's URI (may be another URI's) */
  uint64_t date;          /* its WARC-Date, epoch ms */
  const char *url;        /* ofp's URL, NULL when the row is gone */
  size_t url_len;
  const char *rid;        /* its WARC-Record-ID ("<urn:uuid:...>"), NULL
                             for rows written before schema version 5 */
  size_t rid_len;
} kr_original_t;
/* fp's original. 1 and *out (pointers valid until the next call into the
 * store), 0 when none, KR_EDB. */
int kr_store_original_get(kr_store_t *st, uint64_t fp, kr_original_t *out);
/* Some URI's original with payload digest d (n bytes), like _get: the
 * one of the lowest fp. Without the index (opts.orig_index) a scan of
 * every row. */
int kr_store_original_find(kr_store_t *st, const uint8_t *d, size_t n, kr_original_t *out);
/* Set fp's original: payload digest d (n bytes) in the record rid of
 * URI ofp at date. The original lives in fp's uris row: without one it
 * is not kept (the frontier issues only URIs with a row). 0, KR_EINVAL
 * (no digest or id), KR_EDB. */
int kr_store_original_put(kr_store_t *st, uint64_t fp, const uint8_t *d, size_t n, uint64_t ofp,
                          uint64_t date, const char *rid);
/* The last robots.txt fetch of an origin. */
typedef struct kr_store_robots {
  uint64_t expires;       /* epoch ms: fetch it again from then on */
  int status;             /* HTTP status after redirects, <= 0 no response */
  int final;              /* unavailable and its retries are used up */
  const char *body;       /* the body for a 2xx (robots.max-size at most) */
  size_t body_len;
} kr_store_robots_t;
/* origin's row. 1 and *out (body valid until the next call into the
 * store), 0 when none, KR_EDB. */
int kr_store_robots_get(kr_store_t *st, const char *origin, size_t n, kr_store_robots_t *out);
/* Replace origin's row. 0 or KR_EDB. */
int kr_store_robots_put(kr_store_t *st, const char *origin, size_t n, const kr_store_robots_t *r);
/* Set (rate > 0) or clear (rate <= 0) fp's changefreq hint. 1, 0 when fp
 * is absent, KR_EDB. */
int kr_store_uri_set_hint(kr_store_t *st, uint64_t fp, double rate);

/* ---- WebSub subscriptions ----------------------------------------------------- */

typedef struct kr_store_websub {
  const char *topic, *hub, *token, *secret; /* NUL-terminated */
  uint64_t expires;                         /* epoch ms; 0: not verified (below
                                               1000: not verified, websub.c's count
                                               of requests) */
} kr_store_websub_t;
/* Replace (put) or remove (del) topic's subscription; both join the open
 * transaction (kept in memory during a drain, as robots.txt rows are). 0,
 * KR_EINVAL (a field missing), KR_EDB. */
int kr_store_websub_put(kr_store_t *st, const kr_store_websub_t *w);
int kr_store_websub_del(kr_store_t *st, const char *topic);
/* Every subscription, in topic order: fn(ud, w) (strings valid during the
 * call; fn must not call into the store; < 0 stops with that value). For
 * an open: writes still kept from a drain are not seen. 0 or KR_EDB. */
int kr_store_websub_each(kr_store_t *st, int (*fn)(void *ud, const kr_store_websub_t *w),
                         void *ud);

/* ---- the cluster's outbox ------------------------------------------------------- */

typedef struct kr_store_outbox {
  int64_t id;                 /* grows with every row written */
  const char *member;         /* the owner it goes to (NUL-terminated) */
  const char *url, *hop_path; /* NUL-terminated; hop_path "" for a seed */
  size_t url_len, hop_len;
  uint64_t via;               /* fp of the referrer, 0 none */
  int directive;
} kr_store_outbox_t;
/* Add a link for member (put) or remove row id once sent (del); both
 * join the open transaction (kept in memory during a drain). 0,
 * KR_EINVAL, KR_EDB. */
int kr_store_outbox_put(kr_store_t *st, const kr_store_outbox_t *o);
int kr_store_outbox_del(kr_store_t *st, int64_t id);
/* Rows with an id above after, oldest first, at most max: fn(ud, o)
 * (strings valid during the call; fn must not call into the store; < 0
 * stops with that value). Sees the open transaction's rows, not those
 * kept during a drain. The number of rows passed, or KR_EDB. */
int64_t kr_store_outbox_each(kr_store_t *st, int64_t after, size_t max,
                             int (*fn)(void *ud, const kr_store_outbox_t *o), void *ud);
/* Rows in the outbox (a count: for the open, then keep your own). 0+ or
 * KR_EDB. */
int64_t kr_store_outbox_count(kr_store_t *st);

/* ---- scope ---------------------------------------------------------------- */

/* The seeds in force, in URL order: fn(ud, url, len, flags) for each (url
 * valid during the call); fn returning < 0 stops with that value. 0 or
 * KR_EDB. */
int kr_store_seeds_each(kr_store_t *st,
                        int (*fn)(void *ud, const char *url, size_t len, unsigned flags),
                        void *ud);
/* Replace the seeds in force: clear, then put each (canonical URL,
 * KR_SEED_* flags, now). Both join the open transaction. 0, KR_EINVAL
 * (no URL), KR_EDB. */
int kr_store_seeds_clear(kr_store_t *st);
int kr_store_seed_put(kr_store_t *st, const char *url, size_t len, unsigned flags, uint64_t now);
/* One page of the disregarded URIs (state KR_URI_DISREGARDED) whose
 * status is status, in URL order, with after < url < below (after NULL:
 * from the first; below NULL: to the last), at most max: fn gets each
 * with fp, url, hop_path, state, status and next_at filled (valid during
 * the call; fn must not call into the store). Page on with the last URL
 * as after. The number of rows, or KR_EDB. Walks uris_disregarded only. */
int kr_store_disregarded_page(kr_store_t *st, int status, const char *after, size_t after_len,
                              const char *below, size_t below_len, size_t max,
                              void (*fn)(void *ud, const kr_uri_row_t *r), void *ud);

/* ---- hosts moving to another cluster member (store_move.c) ------------------------ */

/* One column's value, typed as SQLite holds it. */
typedef struct kr_store_val {
  const char *col;          /* column name */
  int type;                 /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB or _NULL */
  int64_t i;
  double d;
  const void *p;            /* text (not NUL-terminated) or blob */
  size_t n;
} kr_store_val_t;
#define KR_STORE_MOVE_COLS 64

/* 1 when the host queue name is to move (or be dropped). */
typedef int (*kr_store_move_keep_fn)(void *ud, const char *name, size_t len);
/* One row of table ("uris", "robots", then "hosts") of host; values valid during
 * the call. < 0 stops with that value. */
typedef int (*kr_store_move_row_fn)(void *ud, const char *table, const char *host,
                                    const kr_store_val_t *v, size_t n);
/* For a store no crawl runs on (`kria cluster rebalance`). Of every host
 * keep answers 1 for: each uris row (every column but host_id; one pass
 * over the table, hosts interleaved), then per host its robots rows (by
 * origin, http and https) and its hosts row (every column but id), so a
 * host's row comes after all its URIs. 0, KR_EDB or fn's value. */
int kr_store_move_export(kr_store_t *st, kr_store_move_keep_fn keep, kr_store_move_row_fn fn,
                         void *ud);
/* The import's one transaction (the store's own transactions committed
 * first): begin, put rows as export gave them (a URI replaces the row of
 * the same fp; a host row, coming after its URIs, sets its columns and
 * counts its rows here), meta, drop, then commit or roll back (either
 * frees mv). 0, KR_EINVAL (a row that does not fit this schema), KR_EDB. */
typedef struct kr_store_move kr_store_move_t;
int kr_store_move_begin(kr_store_t *st, kr_store_move_t **mv);
int kr_store_move_put(kr_store_move_t *mv, const char *table, const char *host,
                      const kr_store_val_t *v, size_t n);
int kr_store_move_meta(kr_store_move_t *mv, const char *key, const char *value);
int kr_store_move_commit(kr_store_move_t *mv);
void kr_store_move_rollback(kr_store_move_t *mv);
/* Delete every host keep answers 1 for, with its URIs and robots rows.
 * Their number, or KR_EDB. */
int64_t kr_store_move_drop(kr_store_move_t *mv, kr_store_move_keep_fn keep, void *ud);
/* Delete the outbox rows up to id upto (sent). 0 or KR_EDB. */
int kr_store_move_outbox_clear(kr_store_move_t *mv, int64_t upto);

#endif
