/*
 * Host queues, private to the frontier (see frontier.h for the model):
 * the in-memory struct of one host queue and the pure rules over it —
 * state and ready time derived from slots, head and back-off; politeness
 * delay; back-off growth; head order; valence slots.
 */
#ifndef KRIA_HOSTQ_H
#define KRIA_HOSTQ_H

#include <stdint.h>

#include "frontier.h"

#define KR_VALENCE_MAX 64

typedef struct kr_slot {
  uint64_t free_at; /* when this slot may issue again (epoch ms) */
  kr_curi_t *curi;  /* the URI it is fetching, NULL when free */
} kr_slot_t;

/* Queued URIs a host queue keeps in memory in front of its index. */
#define KR_HEADS 8
typedef struct kr_head {
  uint64_t fp;
  uint64_t next_at;
  int dir;
} kr_head_t;

struct kr_hostq {
  kr_frontier_t *f;
  int64_t id;                     /* hosts.id */
  char *name;                     /* queue key, NUL-terminated */
  size_t name_len;
  uint64_t hash;                  /* kr_fp(name) */
  const kr_frontier_opts_t *opts; /* host options, NULL: the frontier's */
  kr_slot_t *slots;               /* nslots >= valence while URIs run */
  uint32_t nslots;
  uint32_t valence;
  uint32_t in_flight;             /* slots with a curi */
  kr_curi_t *inflight;            /* issued URIs, linked by next_inflight */
  /* heads: the first queued URIs outside the slots, in queue order — an
   * exact prefix of the host's index in the store without the URIs in
   * flight. heads_more: the store may hold more after them (when it does
   * not, the heads are the whole queue). Never empty while heads_more is
   * set: the frontier refills them from the store first (one query per
   * KR_HEADS issues, not one per issue). */
  kr_head_t heads[KR_HEADS];
  uint8_t nheads;
  uint8_t heads_more;
  /* rows whose write waits for a store drain (frontier.c, pending_t) */
  struct pending *pend_head, *pend_tail;
  uint32_t pending_rows;
  int gated;                      /* a prerequisite is pending */
  uint64_t last_backoff_fp;       /* the URI that last answered 429/503: a
                                     streak counts distinct URIs only */
  /* queue-assignment = ip: a URL of this host whose move to its address'
   * queue waited for held-back writes; tried again before the next issue */
  char *rekey_url;
  /* persisted (hosts row) */
  uint32_t backoff_level;
  uint32_t fail_streak;
  uint64_t backoff_until;
  uint64_t robots_expires;
  int robots_status;
  int64_t crawl_delay_ms;
  kr_counts_t c;
  kr_vtrust_t vt;                 /* validator trust (validators.h) */
  uint8_t *learned;               /* learned-state record (hoststate.h): as
                                     loaded until on_host ran, or as set
                                     until the next commit wrote it */
  uint32_t learned_len;
  uint8_t learned_dirty;          /* set and not yet written */
  /* dispatch */
  kr_wheel_entry_t timer;         /* armed at the ready time */
  kr_hostq_t *ready_prev, *ready_next;
  int on_ready_list;
  kr_hostq_t *dirty_next;         /* hosts to write before the commit */
  int dirty;
};

/* Options in force for h: its own, or the frontier's fo. */
static inline const kr_frontier_opts_t *kr__hostq_opts(const kr_hostq_t *h,
                                                       const kr_frontier_opts_t *fo) {
  return h->opts ? h->opts : fo;
}

/* When h may issue next: KR_NEVER when busy, empty, or gated with a head
 * below HIGHEST; else max(earliest free slot, head next_at, back-off). */
uint64_t kr__hostq_ready_at(const kr_hostq_t *h);
kr_hostq_state_t kr__hostq_state(const kr_hostq_t *h, uint64_t now);
const char *kr__hostq_state_name(kr_hostq_state_t s);

/* clamp(factor x fetch_ms, min, max), raised to the host's Crawl-delay
 * capped at respect-crawl-delay-up-to. */
uint64_t kr__hostq_politeness(const kr_hostq_t *h, const kr_frontier_opts_t *o,
                              uint64_t fetch_ms);
/* Back-off for level (>= 1): initial x 2^(level-1) at most backoff_max;
 * a Retry-After (retry_after > 0) instead, within [1 s, backoff_max]. */
uint64_t kr__hostq_backoff(const kr_frontier_opts_t *o, uint32_t level,
                           uint64_t retry_after_ms);

/* 1 when (d1, n1, fp1) comes before (d2, n2, fp2) in queue order
 * (directive desc, next_at asc, fp as SQLite's signed integer asc). */
static inline int kr__hostq_before(int d1, uint64_t n1, uint64_t fp1, int d2,
                                   uint64_t n2, uint64_t fp2) {
  if (d1 != d2) return d1 > d2;
  if (n1 != n2) return n1 < n2;
  return (int64_t)fp1 < (int64_t)fp2;
}

/* The first queued URI outside the slots, or NULL (heads empty: the queue
 * is, when heads_more is 0). */
static inline const kr_head_t *kr__hostq_head(const kr_hostq_t *h) {
  return h->nheads ? &h->heads[0] : NULL;
}
/* A queued URI (re)entered h's queue with this key, or left it
 * (next_at >= KR_NEVER): the heads follow. A key after the last head
 * while the store holds more is left to the store. The caller refills
 * when this leaves the heads empty with heads_more set. */
void kr__hostq_offer(kr_hostq_t *h, uint64_t fp, int dir, uint64_t next_at);
/* Drop fp from the heads (issued). 1 when it was there. */
int kr__hostq_take(kr_hostq_t *h, uint64_t fp);
/* Forget the heads: the store must be asked again (heads_more = 1). */
void kr__hostq_heads_reset(kr_hostq_t *h);
/* Heads from the store's queue order (in flight skipped by the caller):
 * n entries, more when the store may hold further ones. */
void kr__hostq_heads_set(kr_hostq_t *h, const kr_head_t *v, size_t n, int more);

/* Set the valence (1..KR_VALENCE_MAX), growing or compacting the slots;
 * slots in use are kept (nslots may stay above valence until they free). */
void kr__hostq_set_valence(kr_hostq_t *h, uint32_t valence);
/* A free slot whose free time has come (the earliest), or -1. */
int kr__hostq_free_slot(const kr_hostq_t *h, uint64_t now);
/* After a slot was freed: drop free slots beyond the valence. */
void kr__hostq_trim_slots(kr_hostq_t *h);

#endif
