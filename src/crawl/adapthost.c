/*
 * Per host queue, what the revisits learn (adapthost.h): the poisson
 * allocator and the capacity plan of the wait (proc_wait.c), the change
 * signals' reliability (claims.c) and the informed priors' pool, in one
 * table, and the host's learned state made of them.
 * What they learned outlives the process: a host whose
 * allocator, plan, validator-trust run, informed priors' pool or signals'
 * reliability changed is queued (a flag tested per change: once queued,
 * a change costs nothing more), and at most
 * adaptive.learned-state-interval later (once per interval per host,
 * whatever it did meanwhile; every one at a clean stop) its record
 * (kria/hoststate.h) goes to the frontier, which writes it into the
 * host's row with the next grouped commit. The frontier hands a loaded
 * host's record over when it opens (kr__adapt_host_load, from on_host),
 * before any wait is decided; an unreadable one is logged and the host
 * starts fresh, and a damaged pool or signals section alone (their own
 * modules' encodings) is logged and only that part starts fresh.
 * Sections: the table, learned state, reports.
 */
#include <string.h>

#include "adapthost.h"
#include "internal.h"
#include "kria/hoststate.h"
#include "log.h"

/* ---- the table ---------------------------------------------------------------------------- */

struct kr_adapt_host *kr__adapt_host_find(const kr_crawl_t *c, const kr_hostq_t *h) {
  if (!c->ahosts_cap) return NULL;
  size_t mask = c->ahosts_cap - 1;
  for (size_t j = kr__ptr_slot(h, mask); c->ahosts[j]; j = (j + 1) & mask)
    if (c->ahosts[j]->h == h) return c->ahosts[j];
  return NULL;
}

struct kr_adapt_host *kr__adapt_host(kr_crawl_t *c, kr_hostq_t *h, double x_min) {
  struct kr_adapt_host *found = kr__adapt_host_find(c, h);
  if (found) return found;
  if ((c->ahosts_n + 1) * 2 > c->ahosts_cap) {
    size_t ncap = c->ahosts_cap ? c->ahosts_cap * 2 : 64;
    struct kr_adapt_host **n = kr_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < c->ahosts_cap; i++) {
      if (!c->ahosts[i]) continue;
      size_t j = kr__ptr_slot(c->ahosts[i]->h, ncap - 1);
      while (n[j]) j = (j + 1) & (ncap - 1);
      n[j] = c->ahosts[i];
    }
    free(c->ahosts);
    c->ahosts = n;
    c->ahosts_cap = ncap;
  }
  struct kr_adapt_host *a = kr_xcalloc(1, sizeof *a);
  a->h = h;
  kr_plan_host_init(&a->alloc, x_min);
  size_t j = kr__ptr_slot(h, c->ahosts_cap - 1);
  while (c->ahosts[j]) j = (j + 1) & (c->ahosts_cap - 1);
  c->ahosts[j] = a;
  c->ahosts_n++;
  return a;
}

void kr__adapt_hosts_free(kr_crawl_t *c) {
  for (size_t i = 0; i < c->ahosts_cap; i++) {
    if (c->ahosts[i]) kr_prior_pool_free(&c->ahosts[i]->prior);
    free(c->ahosts[i]);
  }
  free(c->ahosts);
  c->ahosts = NULL;
  c->ahosts_cap = c->ahosts_n = 0;
  c->ahosts_save_head = c->ahosts_save_tail = NULL;
}

/* ---- learned state ---------------------------------------------------------------------- */

#define SAVES_PER_TURN 32 /* records handed to the frontier per loop turn at most */

/* a changed: queue it to be saved (once, however often it changes). */
void kr__adapt_host_changed(kr_crawl_t *c, struct kr_adapt_host *a) {
  if (a->dirty_at) return;
  a->dirty_at = kr_crawl_now(c);
  if (!a->dirty_at) a->dirty_at = 1;
  a->save_next = NULL;
  if (c->ahosts_save_tail) c->ahosts_save_tail->save_next = a;
  else c->ahosts_save_head = a;
  c->ahosts_save_tail = a;
}

/* The record of a's host: its allocator and plan once they hold
 * something, its trust when validators were ever compared, its pool and
 * signals once they learned anything. */
static size_t adapt_host_encode(const struct kr_adapt_host *a, uint8_t *out, size_t cap,
                                const kr_vtrust_params_t *tp) {
  kr_hoststate_t *s = kr_xmalloc(sizeof *s); /* 2.5 KB: not on a fetch's stack */
  kr_hoststate_init(s);
  if (a->alloc.solved || a->alloc.ncls) {
    s->has |= KR_HS_ALLOC;
    s->alloc = a->alloc;
  }
  if (a->cap.solved || a->cap.total) {
    s->has |= KR_HS_CAPPLAN;
    s->cap = a->cap;
  }
  const kr_vtrust_t *vt = kr_frontier_host_vtrust(a->h);
  if (vt->checks || vt->confirm_run) {
    s->has |= KR_HS_VTRUST;
    s->vt = *vt;
    s->vt_sample = kr_vtrust_sample_rate(vt, tp);
    if (!(s->vt_sample >= 0 && s->vt_sample <= 1)) s->vt_sample = 0;
  }
  if (a->prior.host.members > 0 || a->prior.ntypes || a->prior.ntmpls) {
    s->has |= KR_HS_PRIORS;
    s->pool = (kr_prior_pool_t *)&a->prior; /* lent: only read */
  }
  for (int k = 0; k < KR_SIG_SOURCES; k++)
    if (a->sig.src[k].seen || a->sig.src[k].verified) s->has |= KR_HS_SIGNALS;
  s->sig = a->sig;
  size_t n = kr_hoststate_encode(s, out, cap);
  free(s);
  return n;
}

static void adapt_host_save(kr_crawl_t *c, struct kr_adapt_host *a) {
  a->dirty_at = 0;
  const kr_hostcfg_t *hc = kr__crawl_queue_hostcfg(c, a->h);
  uint8_t buf[KR_HOSTSTATE_BYTES];
  size_t n = adapt_host_encode(a, buf, sizeof buf, &hc->vtrust);
  if (!n) { /* a value the reader would refuse (NaN): keep the last record */
    KR_LOG(KR_LOG_WARN, kr_frontier_host_name(a->h),
           "learned state not writable: the last record stays");
    return;
  }
  kr_frontier_host_set_learned(c->frontier, a->h, buf, n);
  c->st.learned_saved++;
  c->st.learned_bytes += n;
}

void kr__adapt_hosts_turn(kr_crawl_t *c, uint64_t now, int all) {
  if (!c->ahosts_save_head || !c->frontier) return;
  uint64_t every = (uint64_t)kr_config_ms(kr_config_global(c->cfg),
                                          KR_CFG_ADAPTIVE_LEARNED_STATE_INTERVAL);
  for (unsigned k = 0; c->ahosts_save_head && (all || k < SAVES_PER_TURN); k++) {
    struct kr_adapt_host *a = c->ahosts_save_head;
    if (!all && a->dirty_at + every > now) break; /* the rest changed later */
    c->ahosts_save_head = a->save_next;
    if (!c->ahosts_save_head) c->ahosts_save_tail = NULL;
    a->save_next = NULL;
    adapt_host_save(c, a);
  }
}

void kr__adapt_host_touch(kr_crawl_t *c, kr_hostq_t *h, double x_min) {
  kr__adapt_host_changed(c, kr__adapt_host(c, h, x_min));
}

void kr__adapt_host_load(kr_crawl_t *c, kr_frontier_t *f, kr_hostq_t *h, const kr_hostcfg_t *hc) {
  size_t n;
  const uint8_t *p = kr_frontier_host_learned(h, &n);
  if (!n) return;
  kr_hoststate_t *s = kr_xmalloc(sizeof *s);
  if (kr_hoststate_decode(s, p, n)) {
    KR_LOG(KR_LOG_WARN, kr_frontier_host_name(h),
           "learned state unreadable (%zu bytes): the host starts fresh", n);
    c->st.learned_refused++;
    free(s);
    return;
  }
  const char *const part[] = {"informed priors' pool", "change signals' reliability"};
  const unsigned bits[] = {KR_HS_PRIORS, KR_HS_SIGNALS};
  for (int k = 0; k < 2; k++)
    if (s->damaged & bits[k]) {
      KR_LOG(KR_LOG_WARN, kr_frontier_host_name(h),
             "learned state: the %s is unreadable: it starts fresh", part[k]);
      c->st.learned_damaged++;
    }
  if (s->has & (KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_PRIORS | KR_HS_SIGNALS)) {
    struct kr_adapt_host *a = kr__adapt_host(c, h, hc->est.x_min);
    if (s->has & KR_HS_ALLOC) {
      double x_min = a->alloc.x_min; /* configuration, not state */
      a->alloc = s->alloc;
      a->alloc.x_min = x_min;
      if (a->alloc.x < x_min) a->alloc.x = x_min;
    }
    if (s->has & KR_HS_CAPPLAN) a->cap = s->cap;
    if (s->has & KR_HS_PRIORS) { /* taken: the record's pool becomes the host's */
      kr_prior_pool_free(&a->prior);
      a->prior = *s->pool;
      free(s->pool);
      s->pool = NULL;
    }
    if (s->has & KR_HS_SIGNALS) a->sig = s->sig;
  }
  /* The trust counters are the row's (written with every change); the
   * run is the record's, unless a miss or a distrust came after it was
   * written: then the run ended there, and 0 is where it stands. */
  const kr_vtrust_t *row = kr_frontier_host_vtrust(h);
  if ((s->has & KR_HS_VTRUST) && s->vt.confirm_run && s->vt.misses == row->misses &&
      s->vt.distrusts == row->distrusts && s->vt.confirm_run <= row->verified) {
    kr_vtrust_t vt = *row;
    vt.confirm_run = s->vt.confirm_run;
    kr_frontier_host_set_vtrust(f, h, &vt);
  }
  c->st.learned_loaded++;
  kr_hoststate_free(s);
  free(s);
}

/* ---- reports ---------------------------------------------------------------------------- */

int kr__adapt_host_capacity(const kr_crawl_t *c, const kr_hostq_t *h, kr_host_capacity_t *out) {
  memset(out, 0, sizeof *out);
  out->alloc_state = -1;
  const struct kr_adapt_host *a = kr__adapt_host_find(c, h);
  if (!a || (!a->cap.solved && !a->alloc.solved)) return 0;
  if (a->cap.solved) {
    out->budget = a->cap.budget;
    out->uris = a->cap.total;
    out->wanted = kr_capplan_demand(&a->cap, 0);
    out->planned = kr_capplan_demand(&a->cap, a->cap.floor_ms);
    out->floor_ms = a->cap.floor_ms;
  }
  if (a->alloc.solved) {
    if (!out->budget) out->budget = a->alloc.budget;
    out->alloc_state = a->alloc.state;
    out->x = a->alloc.x;
    out->gain = a->alloc.gain;
    out->objective = a->alloc.objective;
    out->mu = a->alloc.mu;
  }
  return 1;
}

int kr__adapt_host_signals(const kr_crawl_t *c, const kr_hostq_t *h, kr_sig_host_t *out) {
  const struct kr_adapt_host *a = kr__adapt_host_find(c, h);
  if (!a) return 0;
  *out = a->sig;
  for (int s = 0; s < KR_SIG_SOURCES; s++)
    if (a->sig.src[s].seen || a->sig.src[s].verified) return 1;
  return 0;
}
