/*
 * Host queue rules (see hostq.h): everything about one host queue that
 * does not touch the store, the wheel or the ready list — derived state
 * and ready time, politeness and back-off arithmetic, head order, and the
 * valence slots with their own free times. Kept pure so the frontier's
 * tests can reason about each rule alone. Sections: state, delays, head,
 * slots.
 */
#include "hostq.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- state ------------------------------------------------------------- */

uint64_t kr__hostq_ready_at(const kr_hostq_t *h) {
  const kr_head_t *head = kr__hostq_head(h);
  if (h->in_flight >= h->valence || !head) return KR_NEVER;
  if (h->gated && head->dir < KR_DIRECTIVE_HIGHEST) return KR_NEVER;
  uint64_t slot = KR_NEVER;
  for (uint32_t i = 0; i < h->nslots; i++)
    if (!h->slots[i].curi && h->slots[i].free_at < slot) slot = h->slots[i].free_at;
  uint64_t t = slot;
  if (head->next_at > t) t = head->next_at;
  if (h->backoff_until > t) t = h->backoff_until;
  return t;
}

kr_hostq_state_t kr__hostq_state(const kr_hostq_t *h, uint64_t now) {
  if (h->in_flight >= h->valence) return KR_HOSTQ_BUSY;
  if (!h->nheads) return KR_HOSTQ_EMPTY;
  return kr__hostq_ready_at(h) <= now ? KR_HOSTQ_READY : KR_HOSTQ_SNOOZED;
}

const char *kr__hostq_state_name(kr_hostq_state_t s) {
  switch (s) {
  case KR_HOSTQ_EMPTY: return "empty";
  case KR_HOSTQ_READY: return "ready";
  case KR_HOSTQ_BUSY: return "busy";
  case KR_HOSTQ_SNOOZED: return "snoozed";
  }
  return "?";
}

/* ---- delays ------------------------------------------------------------ */

uint64_t kr__hostq_politeness(const kr_hostq_t *h, const kr_frontier_opts_t *o,
                              uint64_t fetch_ms) {
  double d = o->delay_factor * (double)fetch_ms;
  uint64_t delay = d >= 1e18 ? UINT64_MAX : d > 0 ? (uint64_t)d : 0;
  if (delay < o->min_delay_ms) delay = o->min_delay_ms;
  if (delay > o->max_delay_ms) delay = o->max_delay_ms;
  if (h->crawl_delay_ms > 0) {
    uint64_t cd = (uint64_t)h->crawl_delay_ms;
    if (cd > o->respect_crawl_delay_up_to_ms) cd = o->respect_crawl_delay_up_to_ms;
    if (cd > delay) delay = cd;
  }
  return delay;
}

uint64_t kr__hostq_backoff(const kr_frontier_opts_t *o, uint32_t level,
                           uint64_t retry_after_ms) {
  /* The server said when: that, within [1 s, max-backoff] (a short
   * Retry-After is honoured, not rounded up to the first step). */
  if (retry_after_ms) return KR_MIN(KR_MAX(retry_after_ms, 1000), o->backoff_max_ms);
  uint64_t d = o->backoff_initial_ms;
  for (uint32_t i = 1; i < level && d < o->backoff_max_ms; i++) d *= 2;
  if (d > o->backoff_max_ms) d = o->backoff_max_ms;
  return d;
}

/* ---- head -------------------------------------------------------------- */

static void heads_remove_at(kr_hostq_t *h, size_t i) {
  memmove(&h->heads[i], &h->heads[i + 1], (h->nheads - i - 1) * sizeof(h->heads[0]));
  h->nheads--;
}

int kr__hostq_take(kr_hostq_t *h, uint64_t fp) {
  for (size_t i = 0; i < h->nheads; i++)
    if (h->heads[i].fp == fp) {
      heads_remove_at(h, i);
      return 1;
    }
  return 0;
}

void kr__hostq_offer(kr_hostq_t *h, uint64_t fp, int dir, uint64_t next_at) {
  kr__hostq_take(h, fp); /* its key changed */
  if (next_at >= KR_NEVER) return;
  size_t at = h->nheads;
  while (at > 0 && kr__hostq_before(dir, next_at, fp, h->heads[at - 1].dir,
                                    h->heads[at - 1].next_at, h->heads[at - 1].fp))
    at--;
  if (at == h->nheads && (h->heads_more || h->nheads == KR_HEADS)) {
    /* After every head: the store holds it (and perhaps others before it). */
    h->heads_more = 1;
    return;
  }
  if (h->nheads == KR_HEADS) { /* the last head goes back to the store only */
    h->nheads--;
    h->heads_more = 1;
  }
  memmove(&h->heads[at + 1], &h->heads[at], (h->nheads - at) * sizeof(h->heads[0]));
  h->heads[at] = (kr_head_t){.fp = fp, .next_at = next_at, .dir = dir};
  h->nheads++;
}

void kr__hostq_heads_reset(kr_hostq_t *h) {
  h->nheads = 0;
  h->heads_more = 1;
}

void kr__hostq_heads_set(kr_hostq_t *h, const kr_head_t *v, size_t n, int more) {
  if (n > KR_HEADS) {
    n = KR_HEADS;
    more = 1;
  }
  memcpy(h->heads, v, n * sizeof(*v));
  h->nheads = (uint8_t)n;
  h->heads_more = more ? 1 : 0;
}

/* ---- slots ------------------------------------------------------------- */

void kr__hostq_set_valence(kr_hostq_t *h, uint32_t valence) {
  if (valence < 1) valence = 1;
  if (valence > KR_VALENCE_MAX) valence = KR_VALENCE_MAX;
  h->valence = valence;
  if (h->nslots < valence) {
    h->slots = kr_xrealloc(h->slots, valence * sizeof(*h->slots));
    memset(h->slots + h->nslots, 0, (valence - h->nslots) * sizeof(*h->slots));
    h->nslots = valence;
  }
  kr__hostq_trim_slots(h);
}

int kr__hostq_free_slot(const kr_hostq_t *h, uint64_t now) {
  int best = -1;
  for (uint32_t i = 0; i < h->nslots; i++) {
    if (h->slots[i].curi || h->slots[i].free_at > now) continue;
    if (best < 0 || h->slots[i].free_at < h->slots[best].free_at) best = (int)i;
  }
  return best;
}

void kr__hostq_trim_slots(kr_hostq_t *h) {
  /* Drop slots from the tail while there are more than the valence. A
   * running URI in the tail slot moves down into a free slot first (its
   * curi learns the new index); the free slot it replaces loses its free
   * time, which the running URI's finish will set again anyway. */
  while (h->nslots > h->valence) {
    uint32_t last = h->nslots - 1;
    if (h->slots[last].curi) {
      int freed = -1;
      for (uint32_t i = 0; i < last; i++)
        if (!h->slots[i].curi) {
          freed = (int)i;
          break;
        }
      if (freed < 0) return; /* every slot is in use: shrink later */
      /* Move the running URI down into the free slot. */
      h->slots[freed] = h->slots[last];
      h->slots[freed].curi->slot = (uint32_t)freed;
    }
    h->nslots--;
  }
}
