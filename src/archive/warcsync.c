/*
 * The WARC files' durability against the store's commits (see
 * warcsync.h): the presync step, the background sync job and its loop
 * callback, the synced offsets kept in the store.
 */
#include "warcsync.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"

/* Store meta keys: how far the files of slots 0 and 1 were synced as of
 * the last commit ("OFFSET NAME", see kr_warcfile_mark_format). */
static const char *const mark_keys[2] = {"warc.synced", "warc.synced2"};

struct job {
  uv_work_t req;
  kr_warcsync_t *s;              /* NULL once the owner was freed */
  kr_warcfile_t *wf[2];          /* NULL: nothing to do for the slot, or
                                    its file was closed meanwhile */
  kr_warcfile_syncjob_t j[2];
};

struct kr_warcsync {
  uv_loop_t *loop;
  kr_store_t *st;
  void (*on_error)(void *ud, int err, const char *msg);
  void *ud;
  kr_warcfile_t *wf[2];
  struct job *job;               /* running, or NULL */
  char mark[2][320];             /* the marks last given to the store */
  uint64_t syncs;
};

kr_warcsync_t *kr_warcsync_new(uv_loop_t *loop, kr_store_t *st,
                               void (*on_error)(void *ud, int err, const char *msg),
                               void *ud) {
  kr_warcsync_t *s = kr_xcalloc(1, sizeof *s);
  s->loop = loop;
  s->st = st;
  s->on_error = on_error;
  s->ud = ud;
  return s;
}

void kr_warcsync_set_file(kr_warcsync_t *s, int slot, kr_warcfile_t *wf) {
  if (!s) return;
  if (s->job && s->job->wf[slot] == s->wf[slot] && wf != s->wf[slot]) s->job->wf[slot] = NULL;
  s->wf[slot] = wf;
}

int kr_warcsync_busy(const kr_warcsync_t *s) { return s->job != NULL; }
uint64_t kr_warcsync_syncs(const kr_warcsync_t *s) { return s->syncs; }

/* Tell the store, in the transaction about to commit, how far the file
 * of slot i is on disk. Only when that changed: one small row at most. */
static void mark_synced(kr_warcsync_t *s, int i, kr_warcfile_t *wf) {
  const char *name;
  uint64_t off;
  if (!wf || !kr_warcfile_synced(wf, &name, &off)) return;
  char v[sizeof s->mark[i]];
  kr_warcfile_mark_format(v, sizeof v, name, off);
  if (!strcmp(v, s->mark[i])) return;
  /* A failed write leaves the older mark: still true, merely shorter. */
  if (kr_store_meta_set(s->st, mark_keys[i], v) == 0) memcpy(s->mark[i], v, sizeof v);
}

static void failed(kr_warcsync_t *s, int err, kr_warcfile_t *wf) {
  if (s->on_error) s->on_error(s->ud, err, wf ? kr_warcfile_errmsg(wf) : kr_strerror(err));
}

static void job_work(uv_work_t *req) {
  struct job *jb = req->data;
  for (int i = 0; i < 2; i++) kr_warcfile_sync_run(&jb->j[i]);
}

static void job_after(uv_work_t *req, int status) {
  (void)status;
  struct job *jb = req->data;
  kr_warcsync_t *s = jb->s;
  int err = 0;
  kr_warcfile_t *bad = NULL;
  for (int i = 0; i < 2; i++) {
    int rc = kr_warcfile_sync_end(s ? jb->wf[i] : NULL, &jb->j[i]);
    if (rc && !err) err = rc, bad = jb->wf[i];
  }
  if (!s) {
    free(jb);
    return;
  }
  s->job = NULL;
  for (int i = 0; i < 2; i++)
    if (!err && jb->wf[i]) mark_synced(s, i, jb->wf[i]);
  free(jb);
  if (err)
    failed(s, err, bad);
  else
    s->syncs++;
  /* the waiting commit goes ahead at the store's next turn */
  kr_store_presync_done(s->st);
}

/* Start the syncs in the thread pool: 1 started, 0 nothing to sync, or
 * -1 (do it inline). */
static int start_job(kr_warcsync_t *s) {
  struct job *jb = kr_xcalloc(1, sizeof *jb);
  int any = 0, bad = 0;
  for (int i = 0; i < 2; i++) {
    jb->j[i].fd = -1;
    if (!s->wf[i]) continue;
    int rc = kr_warcfile_sync_begin(s->wf[i], &jb->j[i]);
    if (rc < 0) bad = 1;
    if (rc == 1) any = 1, jb->wf[i] = s->wf[i];
  }
  if (any && !bad) {
    jb->s = s;
    jb->req.data = jb;
    if (uv_queue_work(s->loop, &jb->req, job_work, job_after) == 0) {
      s->job = jb;
      return 1;
    }
  }
  for (int i = 0; i < 2; i++) kr_warcfile_sync_end(NULL, &jb->j[i]); /* closes */
  free(jb);
  return any || bad ? -1 : 0;
}

int kr_warcsync_presync(kr_warcsync_t *s, int batch, int may_wait) {
  if (batch) {
    /* One sync at a time; a commit waiting on it does not come here. */
    if (may_wait && s->loop && !s->job) {
      int rc = start_job(s);
      if (rc == 1) return KR_STORE_PRESYNC_WAIT;
      if (rc == 0) {
        for (int i = 0; i < 2; i++) mark_synced(s, i, s->wf[i]);
        return 0;
      }
    }
    int ok = 1;
    for (int i = 0; i < 2; i++) {
      if (!s->wf[i]) continue;
      int rc = kr_warcfile_sync(s->wf[i]);
      if (rc) {
        ok = 0;
        failed(s, rc, s->wf[i]);
      } else {
        mark_synced(s, i, s->wf[i]);
      }
    }
    if (ok) s->syncs++;
    return 0;
  }
  for (int i = 0; i < 2; i++) mark_synced(s, i, s->wf[i]);
  return 0;
}

size_t kr_warcsync_marks(kr_store_t *st, kr_warcfile_mark_t marks[2]) {
  size_t n = 0;
  for (int i = 0; i < 2; i++) {
    char v[320];
    if (kr_store_meta_get(st, mark_keys[i], v, sizeof v) == 1 &&
        kr_warcfile_mark_parse(v, &marks[n]) == 0)
      n++;
  }
  return n;
}

void kr_warcsync_free(kr_warcsync_t *s) {
  if (!s) return;
  if (s->job) s->job->s = NULL; /* its callback frees it */
  free(s);
}
