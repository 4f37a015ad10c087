/*
 * Opening the frontier over the store, recovering its host queues from
 * the host rows, filling the seen filter in steps, and closing it; the
 * per-turn work (kr_frontier_turn) that finishes what opening left.
 */
#include "frontier.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "frontier_int.h"
#include "hostq.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/hoststate.h"
#include "kria/seen.h"
#include "kria/url.h"
#include "log.h"
#include "turnprof.h"

static int load_host(void *ud, const kr_host_row_t *r) {
  kr_frontier_t *f = ud;
  if (r->id <= 0 || r->id > INT32_MAX) return 0; /* not ours to index */
  kr_hostq_t *h = kr__frontier_host_new(f, r->id, r->name, r->name_len);
  h->robots_expires = r->robots_expires;
  h->robots_status = r->robots_status;
  h->crawl_delay_ms = r->crawl_delay_ms;
  h->backoff_level = r->backoff_level;
  h->backoff_until = r->backoff_until;
  h->fail_streak = r->fail_streak;
  h->c = r->c;
  h->vt = r->vt;
  if (r->learned_len && r->learned_len <= KR_HOSTSTATE_BYTES) { /* read by on_host */
    h->learned = kr_xmalloc(r->learned_len);
    memcpy(h->learned, r->learned, r->learned_len);
    h->learned_len = (uint32_t)r->learned_len;
  } else if (r->learned_len) {
    KR_LOG(KR_LOG_WARN, h->name, "learned state of %zu bytes is not kria's: starting fresh",
           r->learned_len);
  }
  const uint64_t *src = &r->c.discovered;
  uint64_t *dst = &f->total.discovered;
  for (size_t i = 0; i < sizeof(kr_counts_t) / sizeof(uint64_t); i++) dst[i] += src[i];
  return 0;
}

static void seen_cb(void *ud, uint64_t fp) { kr_seen_add(ud, fp); }

/* Load up to max fingerprints into the seen filter. */
static int seen_step(kr_frontier_t *f, size_t max) {
  if (f->seen_complete) return 0;
  int done = 0;
  int rc = kr_store_fp_scan(f->st, &f->seen_from, max, seen_cb, f->seen, &done);
  if (rc < 0) return rc;
  if (done) f->seen_complete = 1;
  return 0;
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void free_all(kr_frontier_t *f) {
  for (size_t i = 0; i < f->nhosts; i++) kr__frontier_host_free(f->hosts[i]);
  free(f->hosts);
  free(f->by_id);
  free(f->map);
  free(f->pick);
  kr_seen_free(f->seen);
  kr_seen_free(f->linked);
  kr_timer_stop(&f->period_timer);
  free(f);
}

int kr_frontier_open(const char *state_dir, const kr_frontier_opts_t *opts,
                     kr_timers_t *timers, kr_frontier_t **out, char *err,
                     size_t errlen) {
  *out = NULL;
  if (!timers || !timers->clock) return KR_EINVAL;
  kr_frontier_t *f = kr_xcalloc(1, sizeof(*f));
  if (opts)
    f->opts = *opts;
  else
    kr_frontier_opts_default(&f->opts);
  if (f->opts.max_connections == 0) f->opts.max_connections = 1;
  f->timers = timers;
  f->clock = timers->clock;
  f->seen = kr_seen_new();
  f->seen_from = INT64_MIN;
  f->started_at = kr_clock_now_ms(f->clock);
  kr_wheel_entry_init(&f->period_timer, NULL);
  if (f->opts.limits_period_ms) f->period = f->started_at / f->opts.limits_period_ms;

  kr_store_opts_t so;
  kr_store_opts_default(&so);
  so.loop = timers->loop;
  so.clock = timers->clock;
  if (f->opts.commit_ms) so.commit_ms = f->opts.commit_ms;
  if (f->opts.commit_updates) so.commit_updates = f->opts.commit_updates;
  if (f->opts.cache_mib) so.cache_mib = f->opts.cache_mib;
  if (f->opts.wal_checkpoint_mib) so.wal_checkpoint_bytes = (uint64_t)f->opts.wal_checkpoint_mib << 20;
  if (f->opts.page_size) so.page_size = f->opts.page_size;
  if (f->opts.wal_max_mib) so.wal_max_bytes = (uint64_t)f->opts.wal_max_mib << 20;
  so.plain_vfs = f->opts.plain_vfs;
  so.row_cache = f->opts.row_cache;
  so.orig_index = f->opts.orig_index;
  so.quick_check = f->opts.quick_check;
  int rc = kr_store_open(state_dir, &so, &f->st, err, errlen);
  if (rc) {
    free_all(f);
    return rc;
  }
  kr_store_set_precommit(f->st, kr__frontier_flush_hosts, f);

  /* The assignment is a property of the crawl: a change keeps the rows in
   * their old queues, so say so. */
  static const char *const assign_name[] = {"host", "domain", "ip"};
  const char *want = assign_name[f->opts.queue_assign <= 2 ? f->opts.queue_assign : 0];
  char had[32];
  int got = kr_store_meta_get(f->st, "queue-assign", had, sizeof(had));
  if (got == 0)
    rc = kr_store_meta_set(f->st, "queue-assign", want);
  else if (got > 0 && strcmp(had, want) != 0)
    KR_LOG(KR_LOG_WARN, kr_store_path(f->st),
           "queue assignment changed from %s to %s: known URIs stay in their "
           "%s queues",
           had, want, had);
  if (got < 0) rc = got;

  if (!rc && f->opts.revisit_now) {
    int64_t moved = kr_store_due_all(f->st, kr_clock_now_ms(f->clock));
    if (moved < 0) rc = (int)moved;
    else
      KR_LOG(KR_LOG_INFO, kr_store_path(f->st), "revisit now: %" PRId64 " URIs made due", moved);
  }
  if (!rc) rc = kr_store_hosts_each(f->st, load_host, f);
  if (!rc) { /* the filter loads in fp order: size it first (seen.h) */
    struct stat sb;
    uint64_t n = f->total.discovered;
    uint64_t most = stat(kr_store_path(f->st), &sb) == 0 ? (uint64_t)sb.st_size / 32 : 0;
    kr_seen_reserve(f->seen, (size_t)KR_MIN(n, most)); /* counters may lie */
  }
  for (size_t i = 0; !rc && i < f->nhosts; i++) rc = kr__frontier_fill_heads(f, f->hosts[i]);
  if (!rc) {
    uint64_t t0 = mono_ms();
    while (!rc && !f->seen_complete && mono_ms() - t0 < f->opts.seen_open_budget_ms)
      rc = seen_step(f, 20000);
  }
  if (rc) {
    if (err && errlen && !err[0])
      snprintf(err, errlen, "%s: cannot load the crawl state", kr_store_path(f->st));
    kr_store_close(f->st);
    free_all(f);
    return rc < 0 ? rc : KR_EDB;
  }
  uint64_t now = kr_clock_now_ms(f->clock);
  for (size_t i = 0; i < f->nhosts; i++) {
    kr_hostq_t *h = f->hosts[i];
    if (f->opts.on_host) f->opts.on_host(f->opts.host_ud, f, h);
    if (!h->learned_dirty) { /* whoever wanted it has read it */
      free(h->learned);
      h->learned = NULL;
      h->learned_len = 0;
    }
    kr__frontier_rearm(f, h, now);
  }
  KR_LOG(KR_LOG_INFO, kr_store_path(f->st),
         "frontier open: %zu host queues, %" PRIu64 " URIs (%" PRIu64 " queued), "
         "seen filter %s",
         f->nhosts, f->total.discovered, f->total.queued,
         f->seen_complete ? "loaded" : "loading while crawling");
  *out = f;
  return 0;
}

static void pending_free_all(kr_frontier_t *f) {
  for (pending_t *p = f->pending_head, *n; p; p = n) {
    n = p->next;
    if (p->has_row) kr__frontier_pending_row_done(f, p);
    free(p);
  }
  free(f->pmap);
  f->pmap = NULL;
  f->pmap_cap = f->pmap_n = 0;
  f->pending_head = f->pending_tail = NULL;
  f->npending = 0;
  f->pending_bytes = 0;
}

int kr_frontier_close(kr_frontier_t *f) {
  if (!f) return 0;
  int rc = 0;
  /* a commit waiting for its presync step completes (the step inline) */
  if (kr_store_presync_waiting(f->st)) rc = kr_store_commit(f->st);
  f->flush_all = 1; /* every counter goes into the last commit */
  if (f->dirty && kr_store_writable(f->st) && !f->pending_head) rc = kr__frontier_flush_hosts(f);
  if (f->pending_head) { /* finish the drain now and apply what waited */
    kr_store_wait_checkpoint(f->st);
    rc = kr__frontier_replay(f);
  }
  int crc = kr_store_close(f->st);
  pending_free_all(f);
  free_all(f);
  return rc < 0 ? rc : crc;
}

void kr_frontier_abandon(kr_frontier_t *f) {
  if (!f) return;
  kr_store_abandon(f->st);
  pending_free_all(f);
  free_all(f);
}

void kr_frontier_set_on_ready(kr_frontier_t *f, kr_frontier_ready_fn fn, void *ud) {
  f->on_ready = fn;
  f->on_ready_ud = ud;
}

int kr_frontier_turn(kr_frontier_t *f, uint64_t now) {
  int rc = kr__frontier_replay(f);
  if (rc < 0) return rc;
  rc = kr_store_maybe_commit(f->st, now);
  if (rc < 0) return rc;
  /* A commit that waited for its presync step is done: what was held
   * back meanwhile goes in now, not a loop turn later. */
  if (rc > 0 && f->pending_head && (rc = kr__frontier_replay(f)) < 0) return rc;
  /* The WAL hold ended (in a checkpoint's loop callback): the hosts that
   * waited on the ready list get their fetches now. */
  if (f->wal_held && !kr_store_wal_held(f->st)) {
    f->wal_held = 0;
    if (f->ready_head && f->on_ready) f->on_ready(f, f->on_ready_ud);
  }
  /* Hosts whose move to their address' queue waited (kr_frontier_next()
   * left them off the ready list): rearmed once writes go through. */
  if (f->rekey_held && !kr__frontier_must_queue(f)) {
    f->rekey_held = 0;
    kr__frontier_rekey_rearm(f, now);
  }
  if (!f->seen_complete) {
    rc = seen_step(f, f->opts.seen_turn_step ? f->opts.seen_turn_step : 50000);
    if (rc < 0) return rc;
  }
  return 0;
}

int kr_frontier_commit(kr_frontier_t *f) {
  /* An explicit commit writes every dirty host, statistics included. */
  f->flush_all = 1;
  int rc = f->dirty ? kr__frontier_flush_hosts(f) : 0;
  if (rc == 0) rc = kr_store_commit(f->st);
  f->flush_all = 0;
  return rc;
}

int kr_frontier_load_seen(kr_frontier_t *f) {
  int rc = 0;
  while (!rc && !f->seen_complete) rc = seen_step(f, 100000);
  return rc;
}

kr_store_t *kr_frontier_store(kr_frontier_t *f) { return f->st; }

