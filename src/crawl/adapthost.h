/*
 * What the crawl learns per host queue for its revisits (adapthost.c):
 * the poisson allocator, the capacity plan, the change signals'
 * reliability and the informed priors' pool, in one table keyed by the
 * host queue, and their learned state (kria/hoststate.h). The wait
 * (proc_wait.c) and the claims (claims.c) read and move them; whoever
 * moves one calls kr__adapt_host_changed so that its record is saved.
 * What the rest of the crawl needs of the table is in crawl.h.
 */
#ifndef KRIA_ADAPTHOST_H
#define KRIA_ADAPTHOST_H

#include <stdint.h>

#include "crawl.h"
#include "kria/prior.h"

struct kr_adapt_host {
  kr_hostq_t *h;
  kr_plan_host_t alloc; /* poisson */
  kr_capplan_t cap;      /* multiplicative */
  uint64_t dirty_at;     /* first change since the last save, ms; 0: saved */
  struct kr_adapt_host *save_next; /* queued to be saved, oldest change first */
  kr_sig_host_t sig;     /* its change signals' reliability */
  kr_prior_pool_t prior; /* adaptive.informed-priors (kria/prior.h) */
};

/* The slot of p in a table of mask + 1 slots (a power of two); the
 * claims' table hashes a fingerprint with it too. */
static inline size_t kr__ptr_slot(const void *p, size_t mask) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & mask;
}

/* h's entry, NULL when it has none yet. */
struct kr_adapt_host *kr__adapt_host_find(const kr_crawl_t *c, const kr_hostq_t *h);
/* h's entry, made (its allocator at x_min) when absent. */
struct kr_adapt_host *kr__adapt_host(kr_crawl_t *c, kr_hostq_t *h, double x_min);
/* a changed: queue it to be saved (once, however often it changes). */
void kr__adapt_host_changed(kr_crawl_t *c, struct kr_adapt_host *a);
/* The table released (the revisit processor's close). */
void kr__adapt_hosts_free(kr_crawl_t *c);

#endif
