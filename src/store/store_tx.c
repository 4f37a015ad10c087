/*
 * The store's transactions (store.h, Transactions): a write joins the
 * lazily opened transaction that kr_store_maybe_commit()/kr_store_commit()
 * end, the writes kept while a checkpoint drains the WAL, and the
 * checkpoints themselves, run on a second connection as uv_queue_work
 * jobs (the helpers every write takes inline, write_begin and step_done,
 * are in store_int.h). Sections: writes kept during a drain and the
 * commit, checkpoints.
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

static void wal_hold_update(kr_store_t *st);
static void ckpt_start(kr_store_t *st);

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

void kr__store_dw_clear(kr_store_t *st) {
  for (size_t k = 0; k < st->ndw; k++)
    for (int i = 0; i < st->dw[k].n; i++) free(st->dw[k].v[i].p);
  st->ndw = 0;
  st->dw_bytes = 0;
}

/* Run one write statement now (joins or opens the transaction). */
static int run_write(kr_store_t *st, int stmt, const dval_t *v, int n, const char *what) {
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[stmt];
  for (int i = 0; i < n; i++) dv_bind(s, i + 1, &v[i]);
  int rc = kr__store_step_done(st, s, what);
  sqlite3_clear_bindings(s);
  if (!rc && stmt == S_URI_SET_HINT && sqlite3_changes(st->db) > 0)
    kr_rowcache_set_hint(st->rows, (uint64_t)v[0].i, v[1].type == SQLITE_FLOAT ? v[1].d : 0.0);
  return rc;
}

static int commit(kr_store_t *st, int may_wait);

/* Write now, or keep it for after the drain, or for after a commit that
 * waits for its presync step. 1 kept, 0 written, KR_EDB. */
int kr__store_write_or_keep(kr_store_t *st, int stmt, const dval_t *v, int n, const char *what) {
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
const struct dwrite *kr__store_dw_find(const kr_store_t *st, int stmt, int k, dval_t key,
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
int kr__store_dw_apply(kr_store_t *st) {
  int rc = 0;
  for (size_t k = 0; k < st->ndw && !rc; k++)
    rc = run_write(st, st->dw[k].stmt, st->dw[k].v, st->dw[k].n, "writing what waited");
  kr__store_dw_clear(st);
  return rc;
}

/* Outside a drain and a transaction, give the kept writes one. */
static int dw_flush(kr_store_t *st) {
  return st->ndw && !st->draining && !st->in_tx ? kr__store_write_begin(st) : 0;
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
    kr__store_step_done(st, st->stmt[S_ROLLBACK], "rolling back");
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
  uint64_t t0 = kr__store_mono_us();
  int rc = sqlite3_step(st->stmt[S_COMMIT]);
  sqlite3_reset(st->stmt[S_COMMIT]);
  uint64_t us = kr__store_mono_us() - t0;
  KR_TP_LEAVE();
  if (rc != SQLITE_DONE) {
    kr__store_db_err(st, "committing");
    if (!sqlite3_get_autocommit(st->db))
      kr__store_step_done(st, st->stmt[S_ROLLBACK], "rolling back");
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
  kr__store_settle(st);
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
  kr__store_settle(st);
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

int kr_store_has_kept(const kr_store_t *st) { return st->ndw > 0; }

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

int kr__store_wal_hook(void *ud, sqlite3 *db, const char *name, int frames) {
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
    st->wal_held_since_us = kr__store_mono_us();
    KR_LOG(KR_LOG_NOTICE, st->path,
           "WAL at %" PRIu64 " MiB, past its cap of %" PRIu64
           " MiB: checkpoints are behind; no new fetches until one catches up "
           "(running fetches still commit)",
           (frames * ps) >> 20, st->opts.wal_max_bytes >> 20);
    return;
  }
  if (frames * ps >= st->opts.wal_checkpoint_bytes && st->ckpt_done_frames < frames) return;
  st->stats.wal_held = 0;
  uint64_t us = kr__store_mono_us() - st->wal_held_since_us;
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
void kr__store_wal_leftover(kr_store_t *st) {
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
int kr__store_run_quick_check(sqlite3 *db, char *out, size_t outlen) {
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

void kr__store_ckpt_work(uv_work_t *req) {
  ckpt_job_t *job = container_of(req, ckpt_job_t, req);
  if (job->is_check)
    job->rc = kr__store_run_quick_check(job->db, job->result, sizeof(job->result));
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

void kr__store_ckpt_after(uv_work_t *req, int status) {
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
  if (uv_queue_work(st->opts.loop, &job->req, kr__store_ckpt_work, kr__store_ckpt_after) != 0) {
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
  uint64_t us = kr__store_mono_us() - st->drain_started_us;
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
      st->drain_started_us = kr__store_mono_us();
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
  kr__store_settle(st);
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
  kr__store_settle(st);
  st->hold = 0;
  /* a commit waiting for its presync step first (the step inline), then
   * what was kept */
  int rc = st->presync_wait != PS_NONE ? commit(st, 0) : 0;
  if (st->ndw && !st->in_tx) kr__store_write_begin(st); /* errors: commit reports */
  int rc2 = commit(st, 0);
  if (rc >= 0) rc = rc2;
  ckpt_detach(st);
  kr__store_free(st);
  return rc < 0 ? rc : 0;
}

void kr_store_abandon(kr_store_t *st) {
  if (!st) return;
  kr__store_settle(st);
  ckpt_detach(st);
  /* Closing with an open transaction rolls it back, as a crash would. */
  for (int i = 0; i < S__COUNT; i++) {
    sqlite3_finalize(st->stmt[i]);
    st->stmt[i] = NULL;
  }
  kr__store_free(st);
}

