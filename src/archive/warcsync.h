/*
 * The WARC files' durability against the store's commits (durability
 * batch and record): a visit commits only once its records are on disk,
 * and the store learns, in each commit, how far each open file was
 * synced, for the start-up repair (kr_warcfile_repair_dir's marks).
 *
 * Batch: the store's presync step (kr_warcsync_presync, right before a
 * COMMIT) starts one fdatasync per open file in libuv's thread pool and
 * has the commit wait (KR_STORE_PRESYNC_WAIT): the loop goes on, and
 * meanwhile the store is not writable, so the frontier holds completions
 * back as during a WAL drain, and the WARC writer holds its originals
 * rows (kr_store_presync_waiting). The transaction that commits thus
 * holds only what was written before the sync began. When the syncs are
 * done (a loop callback) the synced offsets join the transaction and the
 * store commits at its next turn. A commit that cannot wait (shutdown,
 * too much held back) syncs inline, as before.
 * Record: every record was synced when written; only the offsets.
 *
 * One per crawl, used from the loop's thread.
 */
#ifndef KRIA_WARCSYNC_H
#define KRIA_WARCSYNC_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store.h"
#include "warcfile.h"

typedef struct kr_warcsync kr_warcsync_t;

/* on_error (may be NULL): a sync failed (err KR_EIO or KR_ENOSPC; the
 * records are in the kernel only); called on the loop. loop NULL: every
 * sync inline. */
kr_warcsync_t *kr_warcsync_new(uv_loop_t *loop, kr_store_t *st,
                               void (*on_error)(void *ud, int err, const char *msg),
                               void *ud);
/* The file in slot 0 (the crawl's) or 1 (large records), NULL for none.
 * Set it before a file is closed or replaced: a sync running for the old
 * one then forgets it (its close synced it). s NULL: a no-op. */
void kr_warcsync_set_file(kr_warcsync_t *s, int slot, kr_warcfile_t *wf);
/* The presync step (see kr_store_set_presync): batch 1 syncs (in the
 * background when may_wait), 0 only records the offsets (durability
 * record). 0 or KR_STORE_PRESYNC_WAIT. */
int kr_warcsync_presync(kr_warcsync_t *s, int batch, int may_wait);
/* 1 while a background sync runs. */
int kr_warcsync_busy(const kr_warcsync_t *s);
/* Successful batch syncs so far (inline or in the background). */
uint64_t kr_warcsync_syncs(const kr_warcsync_t *s);
/* At start-up: the marks the store holds (at most 2) into marks. */
size_t kr_warcsync_marks(kr_store_t *st, kr_warcfile_mark_t marks[2]);
/* Free (NULL is a no-op); a running sync is left to finish on its own
 * and then touches neither the files nor the store: free it before the
 * store closes. */
void kr_warcsync_free(kr_warcsync_t *s);

#endif
