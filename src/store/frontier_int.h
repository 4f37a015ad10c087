/*
 * Private to the frontier (frontier.c keeps the host table, dispatch,
 * adding, issuing, completing and the writes held back during a drain;
 * frontier_open.c opens, recovers and closes it; frontier_hosts.c holds
 * prerequisites, the hosts API, reports and validation): the frontier's
 * struct, a held-back write, and the small host-table helpers every piece
 * takes inline. Not for other modules.
 */
#ifndef KRIA_FRONTIER_INT_H
#define KRIA_FRONTIER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frontier.h"
#include "hostq.h"
#include "kria/seen.h"

struct kr_frontier {
  kr_frontier_opts_t opts;
  kr_store_t *st;
  kr_timers_t *timers;
  kr_clock_t *clock;
  kr_seen_t *seen;
  int seen_complete;         /* every row's fp is in seen */
  int64_t seen_from;         /* next fp to load */
  /* host table */
  kr_hostq_t **hosts;        /* in creation order (reports) */
  size_t nhosts, hosts_cap;
  kr_hostq_t **by_id;        /* index = hosts.id */
  size_t by_id_cap;
  kr_hostq_t **map;          /* open addressing on hash, power of two */
  size_t map_cap;
  /* dispatch */
  kr_hostq_t *ready_head, *ready_tail;
  size_t nready;
  kr_frontier_ready_fn on_ready;
  void *on_ready_ud;
  kr_hostq_t *dirty;         /* hosts whose row must be written */
  /* statistics and limits */
  kr_counts_t total;
  uint64_t in_flight;
  uint64_t waiting;          /* of in_flight: no connection yet */
  uint64_t duplicates, rejected;
  uint64_t run_bytes, run_documents;
  uint64_t started_at;
  const char *limit;
  /* limits per period (opts.limits_period_ms) */
  uint64_t period;           /* index of the period run_* count in */
  uint64_t limit_until;      /* a limit pauses issuing until then */
  kr_wheel_entry_t period_timer; /* calls on_ready then */
  /* unlinked retirement: URIs whose last_linked this run wrote in the
   * current epoch (an eighth of retire_unlinked_ms) */
  kr_seen_t *linked;
  uint64_t linked_epoch;
  kr_store_pick_t *pick;     /* scratch for kr_store_pick */
  size_t pick_cap;
  /* writes held back while the store drains (kr_store_writable) */
  struct pending *pending_head, *pending_tail;
  uint64_t npending, pending_max, pending_total;
  size_t pending_bytes;
  uint64_t drains_cut;
  struct pending **pmap;     /* fp -> newest pending row (open addressing) */
  size_t pmap_cap, pmap_n;
  int wal_held;              /* kr_frontier_next() saw kr_store_wal_held() */
  int rekey_held;            /* a host's rekey_url waits for writes (host_rekey) */
  uint64_t stats_flushed_at; /* last commit that wrote every dirty host */
  int flush_all;             /* the next commit writes every dirty host */
};

/* Held-back writes: past a quarter of the limit kr_frontier_next() issues
 * nothing (the fetches that would add more wait for the drain); past the
 * limit the drain is cut short and everything is written at once. */
#define HELD_BACK_LIMIT (UINT64_C(64) << 20)
static inline uint64_t held_back_max(const kr_frontier_t *f) {
  return f->opts.held_back_limit ? f->opts.held_back_limit : HELD_BACK_LIMIT;
}

/* The writes of a completion, or a batch of links, that arrived while the
 * store drained, with copies of everything they point to; applied in
 * arrival order. A completion's effects in memory (its slot, its new key
 * among the heads, the counters) happen at once; only its row write (and
 * its links) wait here, so a drain does not keep hosts busy. Until then
 * the row's key in the store is stale: pending_row() finds the newer one
 * (issue, fill_heads, raise_known, validation use it). */
typedef struct pending {
  struct pending *next;
  struct pending *host_next; /* the host's pending rows, oldest first */
  kr_hostq_t *h;             /* with a row: its host */
  int has_row;
  kr_uri_row_t row;          /* the completion's uris row (update columns) */
  kr_link_t *links;
  size_t nlinks;
  uint64_t now;
  size_t bytes;    /* of this allocation */
} pending_t;

static inline const kr_frontier_opts_t *hopts(const kr_frontier_t *f, const kr_hostq_t *h) {
  return kr__hostq_opts(h, &f->opts);
}

/* A host row must be written with the next commit (its scheduling state,
 * robots, back-off, or the discovered/queued counts changed). */
static inline void mark_dirty(kr_frontier_t *f, kr_hostq_t *h) {
  if (!h->dirty) {
    h->dirty_next = f->dirty;
    f->dirty = h;
  }
  h->dirty = 2;
}

static inline kr_hostq_t *map_get(const kr_frontier_t *f, const char *name, size_t len,
                           uint64_t hash) {
  if (!f->map_cap) return NULL;
  for (size_t j = hash & (f->map_cap - 1); f->map[j]; j = (j + 1) & (f->map_cap - 1)) {
    kr_hostq_t *x = f->map[j];
    if (x->hash == hash && x->name_len == len && memcmp(x->name, name, len) == 0)
      return x;
  }
  return NULL;
}

static inline kr_hostq_t *host_by_id(const kr_frontier_t *f, int64_t id) {
  return id > 0 && (size_t)id < f->by_id_cap ? f->by_id[id] : NULL;
}

static inline int in_flight_on(const kr_hostq_t *h, uint64_t fp) {
  for (const kr_curi_t *c = h->inflight; c; c = c->next_inflight)
    if (c->fp == fp) return 1;
  return 0;
}

/* frontier.c */
kr_hostq_t *kr__frontier_host_new(kr_frontier_t *f, int64_t id, const char *name, size_t len);
void kr__frontier_host_free(kr_hostq_t *h);
int kr__frontier_flush_hosts(void *ud);
void kr__frontier_rearm(kr_frontier_t *f, kr_hostq_t *h, uint64_t now);
void kr__frontier_rekey_rearm(kr_frontier_t *f, uint64_t now);
int kr__frontier_fill_heads(kr_frontier_t *f, kr_hostq_t *h);
int kr__frontier_queue_key(const kr_frontier_t *f, const char *url, size_t len, char *out,
                           size_t outlen);
int kr__frontier_host_for(kr_frontier_t *f, const char *url, size_t len, kr_hostq_t **out);
int kr__frontier_must_queue(kr_frontier_t *f);
int kr__frontier_check_limits(kr_frontier_t *f, uint64_t now);
pending_t *kr__frontier_pending_row(const kr_frontier_t *f, uint64_t fp);
void kr__frontier_pending_row_done(kr_frontier_t *f, pending_t *p);
int kr__frontier_replay(kr_frontier_t *f);

#endif
