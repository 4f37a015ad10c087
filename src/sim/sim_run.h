/*
 * Private to the simulator's runs (sim.c sets a run up, drives its loop
 * and scores it; sim_fetch.c plays the change processes, the simulated
 * fetches and the invariants): a run's state and the small accessors its
 * hot loop takes inline. Not for other modules.
 */
#ifndef KRIA_SIM_RUN_H
#define KRIA_SIM_RUN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "crawllog.h"
#include "frontier.h"
#include "kria/estimate.h"
#include "kria/prior.h"
#include "kria/signal.h"
#include "kria/wait.h"
#include "sim.h"
#include "sim_int.h"
#include "timer.h"

#define YEAR_MS KR__SIM_YEAR_MS
#define MAX_CHANGES 1e9             /* expected changes of a world in one run */
#define CHUNK_MS 10000              /* virtual time between kr_frontier_turn calls, */
#define CHUNK_EVENTS 200000         /* shortened while a chunk runs more callbacks: */
                                    /* kr_timers_advance stops at 1,000,000 */
#define ETAG_LEN 18                 /* "%016llx" quoted */
#define ROW_CACHE_MAX (1u << 21)    /* rows kept in memory (~1 GB at most) */
#define BAYES_CELLS 512             /* the bayes reference's prior: cells at most */


/* Per run and URI: the ground truth as it unfolds, and the scoring. */
typedef struct suri {
  uint64_t rng;          /* the URI's change stream */
  int64_t next_change;   /* epoch ms; INT64_MAX never */
  int64_t last_change;   /* birth of the live version (Last-Modified) */
  uint32_t version;      /* changes so far */
  uint32_t at_idx;
  uint32_t version_w;    /* changes within the window */
  uint32_t responses;    /* answers so far (volatile ETags and digests) */
  int32_t cap_version;   /* newest archived, -1 none */
  int32_t seen_version;  /* live at the previous visit, -1 none */
  int64_t stale_at;      /* the archived copy is fresh until then */
  int64_t acc_from;      /* metrics integrated up to here; 0: no copy yet */
  uint64_t hq;           /* H(N) x 2^32, N = version - cap_version */
  uint32_t host;         /* run host index */
  int8_t cls;            /* allocator class, -1 none */
  uint8_t w_done;        /* version_w final */
  uint8_t in_flight;
  const kr_cfg_wait_t *wait; /* evaluator, NULL: crawl.default-wait */
  double lambda;         /* poisson: what the host's sketch counts it as */
  int64_t last_wait;
  uint32_t visits;
  uint64_t drng;         /* the URI's fetch durations: per URI, so that the
                            draws do not depend on other hosts' events */
  uint32_t sig;          /* its signals: index + 1 into run->sig, 0 none */
  float stretch;         /* this visit's wait factor from the signals (>= 1) */
  uint8_t sig_visit;     /* this visit came for a believed signal: not an
                            observation of the change process (sim_signal.c) */
  uint64_t ptype, ptmpl; /* informed priors: its groups (kria/prior.h) */
} suri_t;

typedef struct shost {
  kr_hostq_t *h;
  uint32_t idx;              /* in run->hosts */
  char *name;
  const kr_config_view_t *view;
  kr_frontier_opts_t fo;     /* this host's frontier options (stable address) */
  int conditional;           /* send If-None-Match / If-Modified-Since */
  int midfetch;              /* abort when validators predict no change */
  kr_vscheme_t scheme;
  kr_etag_mode_t etag_mode;
  kr_vtrust_params_t trust;
  double utilisation;        /* of the politeness budget (poisson) */
  int hint_lm;               /* poisson: Last-Modified hint */
  uint32_t valence;
  kr_plan_host_t alloc;
  kr_capplan_t cap;          /* multiplicative: adaptive.capacity-plan */
  int cap_on;
  kr_prior_pool_t prior;     /* adaptive.informed-priors (kria/prior.h) */
  int priors_on;
  double cycle_ms;           /* mean fetch time + politeness delay */
  int64_t free_at;           /* valence 1: finish + delay of the last fetch */
  int has_free_at;
  uint32_t in_flight;
  /* the long crawl's events (sim.h "Events") */
  size_t *hev;               /* its events, indices into w->hev */
  size_t nhev;
  int robots;                /* robots.txt modelled: a prerequisite as in a crawl */
  char *r_url;               /* its robots.txt */
  size_t r_len;
  int64_t r_expires;         /* the rules in force expire then; 0 none yet */
  int r_unavail, r_final;    /* robots.txt unavailable; and it gave up */
  int64_t r_at;              /* when the rules in force were fetched */
  int64_t relax_min, relax_max; /* its pages' robots relaxings (offsets; 0 none) */
  int64_t robots_expiry_ms;  /* robots.expiry */
  uint32_t hub;              /* the page listing its grown pages: index + 1 */
  uint32_t *linked;          /* the URIs its hub lists when born and linked */
  size_t nlinked;
  int64_t bound_ms;          /* recovery bound: max-backoff + retry budget */
  uint64_t q_n[2][2], q_sum[2][2]; /* [revisits, head samples][2nd, last quarter] */
  kr_sig_host_t sig;         /* its signals' reliability (sim_signal.c) */
  uint8_t sig_adv;           /* 0 honest, 1 + kr_sim_adv_mode_t */
} shost_t;

enum { FX_FETCH = 0, FX_ROBOTS = 1, FX_DECIDED = 2 };

typedef struct sfetch {
  kr_wheel_entry_t e;
  struct run *run;
  kr_curi_t *c;
  size_t uri;
  struct sfetch *next_free;
  int what;                  /* FX_*: a fetch, a robots.txt fetch, or an
                                outcome decided before any fetch */
  kr_outcome_kind_t dkind;   /* FX_DECIDED */
  int dstatus;
} sfetch_t;

/* Per URI, while the invariants are tracked (sim.h "Invariants"). */
typedef struct inv {
  int64_t last;              /* last answer (epoch ms), 0 none */
  int64_t due;               /* last success + its wait, 0 none */
  uint8_t late, rec_late;    /* counted as late already */
} inv_t;

typedef struct run {
  const kr_sim_world_t *w;
  const kr_sim_opts_t *o;
  kr_sim_policy_t policy;
  kr_sim_result_t *res;
  kr_sim_trace_out_t *traces;
  kr_config_t *cfg;          /* o->cfg or our defaults */
  kr_config_t *own_cfg;
  kr_config_matcher_t *matcher;
  kr_clock_t clock;
  kr_timers_t timers;
  kr_frontier_t *f;
  kr_frontier_opts_t fo;     /* global */
  kr_est_params_t ep;
  int64_t t0, wend, end;
  suri_t *s;                 /* the shard's URIs */
  uint32_t *local;           /* URI -> its index in s; NULL: the same */
  shost_t **hosts;
  size_t nhosts, hosts_cap;
  shost_t **hmap;            /* kr_hostq_t* -> host, open addressing */
  size_t hmap_cap;
  sfetch_t *free_fetches;
  sfetch_t **all_fetches;
  size_t nfetch_objs;
  int64_t last_day;
  inv_t *iv;                 /* NULL: invariants not tracked */
  int64_t next_sample;       /* hosts' head lateness sampled hourly */
  kr_link_t *links;          /* a hub's links */
  size_t links_cap;
  struct ssig *sig;          /* the pages with signals (sim_signal.c) */
  size_t nsig;
  kr_sig_params_t sigp;
  struct kr__sim_bl *bl;     /* the published schedulers' state (sim_baseline.c) */
  double bayes_rate[BAYES_CELLS]; /* bayes: the world's prior (kr_sim_world_prior) */
  double bayes_logw[BAYES_CELLS];
  size_t bayes_g;
  int err;
  char *errbuf;
  size_t errlen;
} run_t;

/* URI i's state (i of the shard). */
static inline suri_t *suri(const run_t *r, size_t i) { return &r->s[r->local ? r->local[i] : i]; }

static inline size_t ptr_slot(const void *p, size_t mask) {
  return (size_t)kr__sim_mix64((uint64_t)(uintptr_t)p) & mask;
}

static inline shost_t *host_of(run_t *r, const kr_hostq_t *h) {
  if (!r->hmap_cap) return NULL;
  size_t mask = r->hmap_cap - 1;
  for (size_t j = ptr_slot(h, mask); r->hmap[j]; j = (j + 1) & mask)
    if (r->hmap[j]->h == h) return r->hmap[j];
  return NULL;
}

/* 0 for the run's second quarter, 1 for its last, -1 otherwise. */
static inline int quarter(const run_t *r, int64_t t) {
  int64_t len = r->end - r->t0, at = t - r->t0;
  return at >= len / 4 && at < len / 2 ? 0 : at >= len - len / 4 ? 1 : -1;
}

static inline const wev_t *uri_ev(const run_t *r, size_t i) { return r->w->ev ? &r->w->ev[i] : NULL; }

static inline inv_t *uri_inv(const run_t *r, size_t i) {
  return r->iv ? &r->iv[r->local ? r->local[i] : i] : NULL;
}

/* URI i is in the shard this run plays. */
static inline int in_shard(const run_t *r, size_t i) {
  return !r->o->shard_of || r->o->shard_of[i] == r->o->shard;
}

/* sim_fetch.c */
void kr__sim_advance(run_t *r, const wuri_t *u, suri_t *s, int64_t t);
void kr__sim_truth_init(const kr_sim_world_t *w, size_t i, suri_t *s, int64_t t0);
void kr__sim_integrate(run_t *r, const wuri_t *u, suri_t *s, int64_t t);
void kr__sim_fail(run_t *r, int rc, const char *what);
void kr__sim_inv_check(run_t *r, size_t i, int64_t t, int final);
void kr__sim_sample_hosts(run_t *r, int64_t now);
void kr__sim_on_ready(kr_frontier_t *f, void *ud);

/* sim_signal.c: the pages' signals armed after add_all; a visit verified
 * against them (sets s->stretch; before the wait); the end of a run. */
int kr__sim_signals_start(run_t *r);
void kr__sim_signal_visit(run_t *r, size_t i, suri_t *s, shost_t *sh, const kr_curi_t *c,
                          kr_content_t st);
void kr__sim_signals_end(run_t *r);
/* The true change rate of a page with signals (the oracle's). */
double kr__sim_signal_true_rate(const run_t *r, const suri_t *s);

/* sim_policy.c: the next wait of a visit of u by the run's policy; the
 * visit history gets this visit appended into hist/hist_len. */
int64_t kr__sim_next_wait(run_t *r, const wuri_t *u, suri_t *s, shost_t *sh, const kr_curi_t *c,
                          kr_content_t st,
                          int64_t now, int64_t age_s, int has_lm, uint8_t *hist,
                          size_t *hist_len);

/* sim_baseline.c: the published schedulers (include/kria/sched.h). init
 * after the hosts and URIs are set up (0; nothing for other policies),
 * free at the end; the wait of a visit as sim_policy.c asks it, h the
 * history with this visit. */
int kr__sim_is_baseline(kr_sim_policy_t p);
int kr__sim_baseline_init(run_t *r);
void kr__sim_baseline_free(run_t *r);
int64_t kr__sim_baseline_wait(run_t *r, suri_t *s, shost_t *sh, const kr_curi_t *c,
                              kr_content_t st, int64_t now, const kr_vhist_t *h, int has_lm);
/* The longest wait of a scheduler with limits of its own (nutch,
 * stormcrawler: for the invariants); 0 for the others. */
int64_t kr__sim_baseline_max_wait(const run_t *r);

#endif
