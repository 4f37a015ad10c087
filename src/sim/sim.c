/*
 * The revisit simulator's runs (see sim.h for the model and the metrics;
 * the worlds are built in sim_world.c). A run opens a real frontier in a
 * temporary state directory on a virtual clock, adds every URI, and lets
 * the timer wheel drive it: the frontier's on_ready pulls URIs, each
 * issued URI becomes a simulated fetch whose completion is one more wheel
 * entry at issue time + a drawn duration, and the completion plays the
 * server (status, ETag, Last-Modified, body) and the crawler's processors
 * (conditional request, mid-fetch check with validator trust, change
 * digest, wait policy) before handing the outcome, with the visit history
 * the policy read, to kr_frontier_finished(). Scoring happens on the side
 * from the ground truth. Sections: helpers, change processes, runs (state,
 * hosts, metrics, fetches, the loop), derived figures and names.
 */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "crawllog.h"
#include "frontier.h"
#include "internal.h"
#include "kria/estimate.h"
#include "kria/fp.h"
#include "kria/url.h"
#include "kria/wait.h"
#include "log.h"
#include "sim_int.h"
#include "timer.h"

#define YEAR_MS KR__SIM_YEAR_MS
#define MAX_CHANGES 1e9             /* expected changes of a world in one run */
#define CHUNK_MS 10000              /* virtual time between kr_frontier_turn calls, */
#define CHUNK_EVENTS 200000         /* shortened while a chunk runs more callbacks: */
                                    /* kr_timers_advance stops at 1,000,000 */
#define ETAG_LEN 18                 /* "%016llx" quoted */
#define ROW_CACHE_MAX (1u << 21)    /* rows kept in memory (~1 GB at most) */

/* ---- helpers ------------------------------------------------------------------ */

/* Exponential with mean 1/rate (changes/s), in whole ms >= 1, bounded. */
static int64_t exp_ms(uint64_t *s, double rate) {
  double ms = -log(kr__sim_unif(s)) / rate * 1000.0;
  if (!(ms < 1e15)) return INT64_C(1000000000000000);
  return ms < 1 ? 1 : (int64_t)ceil(ms);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- change processes --------------------------------------------------------- */

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
} suri_t;

static void advance_to(const kr_sim_world_t *w, const wuri_t *u, suri_t *s, int64_t t0,
                       int64_t t) {
  switch (u->change) {
  case KR_SIM_POISSON_RATE:
    /* One draw per change, whenever it is looked at: the changes do not
     * depend on the visits, so every policy sees the same ones. */
    while (s->next_change <= t) {
      s->version++;
      s->last_change = s->next_change;
      s->next_change += exp_ms(&s->rng, u->rate);
    }
    break;
  case KR_SIM_EVERY:
    if (t >= s->next_change) {
      int64_t k = (t - t0) / u->period_ms;
      s->version = (uint32_t)KR_MIN(k, (int64_t)UINT32_MAX);
      s->last_change = t0 + k * u->period_ms;
      s->next_change = s->last_change + u->period_ms;
    }
    break;
  case KR_SIM_AT:
    while (s->at_idx < u->at_n && t0 + w->at[u->at_off + s->at_idx] <= t) {
      s->version++;
      s->last_change = t0 + w->at[u->at_off + s->at_idx];
      s->at_idx++;
    }
    s->next_change = s->at_idx < u->at_n ? t0 + w->at[u->at_off + s->at_idx] : INT64_MAX;
    break;
  default:
    break;
  }
}

/* Bring the URI's truth to time t, noting the version count at the end
 * of the window on the way. */
static void advance(const kr_sim_world_t *w, const wuri_t *u, suri_t *s, int64_t t0, int64_t wend,
                    int64_t t) {
  if (!s->w_done && t >= wend) {
    advance_to(w, u, s, t0, wend);
    s->version_w = s->version;
    s->w_done = 1;
  }
  advance_to(w, u, s, t0, t);
}

/* The true change rate (changes/s; 0 for never), for the oracle and for
 * scoring estimates. A list of change times counts as its mean rate. */
static double true_rate(const wuri_t *u, int64_t duration_ms) {
  switch (u->change) {
  case KR_SIM_POISSON_RATE: return u->rate;
  case KR_SIM_EVERY: return 1000.0 / (double)u->period_ms;
  case KR_SIM_AT: return (double)u->at_n * 1000.0 / (double)duration_ms;
  default: return 0;
  }
}

static void truth_init(const kr_sim_world_t *w, size_t i, suri_t *s, int64_t t0) {
  const wuri_t *u = &w->u[i];
  s->rng = kr__sim_mix64(w->seed * UINT64_C(0x9e3779b97f4a7c15) ^ kr__sim_mix64(u->fp));
  s->cap_version = -1;
  s->seen_version = -1;
  s->cls = -1;
  switch (u->change) {
  case KR_SIM_POISSON_RATE: {
    int64_t back = exp_ms(&s->rng, u->rate);
    s->last_change = t0 - KR_MIN(back, YEAR_MS);
    s->next_change = t0 + exp_ms(&s->rng, u->rate);
    break;
  }
  case KR_SIM_EVERY:
    s->last_change = t0;
    s->next_change = t0 + u->period_ms;
    break;
  case KR_SIM_AT:
    s->last_change = t0 - YEAR_MS;
    s->next_change = u->at_n ? t0 + w->at[u->at_off] : INT64_MAX;
    break;
  default:
    s->last_change = t0 - YEAR_MS;
    s->next_change = INT64_MAX;
  }
}

/* ---- runs: state --------------------------------------------------------------- */

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
  kr_alloc_host_t alloc;
  kr_capplan_t cap;          /* multiplicative: adaptive.capacity-plan */
  int cap_on;
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
  int err;
  char *errbuf;
  size_t errlen;
} run_t;

/* URI i's state (i of the shard). */
static suri_t *suri(const run_t *r, size_t i) { return &r->s[r->local ? r->local[i] : i]; }

static size_t ptr_slot(const void *p, size_t mask) {
  return (size_t)kr__sim_mix64((uint64_t)(uintptr_t)p) & mask;
}

static shost_t *host_of(run_t *r, const kr_hostq_t *h) {
  if (!r->hmap_cap) return NULL;
  size_t mask = r->hmap_cap - 1;
  for (size_t j = ptr_slot(h, mask); r->hmap[j]; j = (j + 1) & mask)
    if (r->hmap[j]->h == h) return r->hmap[j];
  return NULL;
}

static void hmap_put(run_t *r, shost_t *sh) {
  if ((r->nhosts + 1) * 2 > r->hmap_cap) {
    size_t nc = r->hmap_cap ? r->hmap_cap * 2 : 64;
    shost_t **m = kr_xcalloc(nc, sizeof *m);
    for (size_t i = 0; i < r->hmap_cap; i++) {
      if (!r->hmap[i]) continue;
      size_t j = ptr_slot(r->hmap[i]->h, nc - 1);
      while (m[j]) j = (j + 1) & (nc - 1);
      m[j] = r->hmap[i];
    }
    free(r->hmap);
    r->hmap = m;
    r->hmap_cap = nc;
  }
  size_t j = ptr_slot(sh->h, r->hmap_cap - 1);
  while (r->hmap[j]) j = (j + 1) & (r->hmap_cap - 1);
  r->hmap[j] = sh;
}

/* The politeness fields of a config view, as the crawl maps them. */
static void fopts_politeness(kr_frontier_opts_t *fo, const kr_config_view_t *v,
                             const kr_sim_opts_t *o) {
  /* the crawl's own reading: politeness, failures, back-off, bounds */
  kr_frontier_opts_from_view(fo, v);
  if (o->delay_ms >= 0) fo->min_delay_ms = fo->max_delay_ms = (uint64_t)o->delay_ms;
  if (o->valence > 0) fo->host_valence = (uint32_t)KR_MIN(o->valence, 64);
}

/* The frontier made a host queue: give it its options. */
static void on_host(void *ud, kr_frontier_t *f, kr_hostq_t *h) {
  run_t *r = ud;
  shost_t *sh = kr_xcalloc(1, sizeof *sh);
  sh->h = h;
  sh->name = kr_xstrdup(kr_frontier_host_name(h));
  size_t n = strlen(sh->name);
  if (sh->name[0] == '[') {
    const char *e = strchr(sh->name, ']');
    n = e ? (size_t)(e - sh->name + 1) : n;
  } else {
    const char *colon = strchr(sh->name, ':');
    if (colon) n = (size_t)(colon - sh->name);
  }
  sh->view = kr_config_view(r->cfg, sh->name, n);
  sh->fo = r->fo;
  fopts_politeness(&sh->fo, sh->view, r->o);
  sh->valence = sh->fo.host_valence ? sh->fo.host_valence : 1;
  const kr_config_view_t *v = sh->view;
  const kr_sim_opts_t *o = r->o;
  sh->conditional = o->conditional && kr_config_bool(v, KR_CFG_HTTP_CONDITIONAL_REQUESTS);
  sh->midfetch = o->midfetch && kr_config_bool(v, KR_CFG_ADAPTIVE_MIDFETCH);
  sh->scheme = o->scheme ? o->scheme
                         : (kr_vscheme_t)(kr_config_enum(v, KR_CFG_ADAPTIVE_MIDFETCH_SCHEME) + 1);
  sh->etag_mode = (kr_etag_mode_t)kr_config_enum(v, KR_CFG_ADAPTIVE_ETAG_COMPARE);
  kr_vtrust_params_default(&sh->trust);
  sh->trust.sample_rate =
      o->sample_rate >= 0 ? o->sample_rate : kr_config_float(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE);
  sh->trust.sample_min = kr_config_float(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE_MIN);
  sh->trust.sample_halving = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_SAMPLE_HALVING);
  sh->trust.misses_to_distrust = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_MISSES);
  sh->trust.distrust_ms = kr_config_ms(v, KR_CFG_ADAPTIVE_DISTRUST_PERIOD);
  sh->trust.probation = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_TRUST_PROBATION);
  sh->utilisation =
      o->utilisation > 0 ? o->utilisation : kr_config_float(v, KR_CFG_ADAPTIVE_BUDGET_UTILISATION);
  sh->hint_lm = kr_config_bool(v, KR_CFG_ADAPTIVE_HINT_LAST_MODIFIED);
  sh->cap_on = kr_config_bool(v, KR_CFG_ADAPTIVE_CAPACITY_PLAN);
  kr_alloc_host_init(&sh->alloc, r->ep.x_min);
  double fm = (double)r->o->fetch_ms;
  double d = sh->fo.delay_factor * fm;
  if (d < (double)sh->fo.min_delay_ms) d = (double)sh->fo.min_delay_ms;
  if (d > (double)sh->fo.max_delay_ms) d = (double)sh->fo.max_delay_ms;
  sh->cycle_ms = fm + d;
  /* its events */
  const kr_sim_world_t *w = r->w;
  for (size_t i = 0; i < w->nhev; i++) {
    if (!kr__sim_key_eq(kr_slice_cstr(w->hev[i].host), kr_slice_cstr(sh->name))) continue;
    if (w->hev[i].kind == KR__SIM_H_ROBOTS) sh->robots = 1;
    if (w->hev[i].kind == KR__SIM_H_HUB) sh->hub = w->hev[i].hub;
    sh->hev = kr_xrealloc(sh->hev, (sh->nhev + 1) * sizeof *sh->hev);
    sh->hev[sh->nhev++] = i;
  }
  sh->robots_expiry_ms = kr_config_ms(v, KR_CFG_ROBOTS_EXPIRY);
  sh->bound_ms = (int64_t)(sh->fo.backoff_max_ms + (uint64_t)sh->fo.max_retries * sh->fo.retry_delay_ms);
  if (r->nhosts == r->hosts_cap) {
    r->hosts_cap = r->hosts_cap ? r->hosts_cap * 2 : 64;
    r->hosts = kr_xrealloc(r->hosts, r->hosts_cap * sizeof *r->hosts);
  }
  hmap_put(r, sh);
  sh->idx = (uint32_t)r->nhosts;
  r->hosts[r->nhosts++] = sh;
  kr_frontier_host_set_opts(f, h, &sh->fo, kr_clock_now_ms(&r->clock));
}

/* ---- runs: metrics --------------------------------------------------------------- */

/* Integrate freshness and age over [a, b] (ms) for a copy fresh until
 * stale_at, into m, and into early for the part before wend. */
static void integrate_piece(kr_sim_metrics_t *m, int64_t a, int64_t b, int64_t stale_at) {
  if (b <= a) return;
  m->observed_ms += (uint64_t)(b - a);
  if (a < stale_at) m->fresh_ms += (uint64_t)(KR_MIN(b, stale_at) - a);
  if (b > stale_at) {
    uint64_t x0 = (uint64_t)(KR_MAX(a, stale_at) - stale_at);
    uint64_t x1 = (uint64_t)(b - stale_at);
    m->age_ms2 += (kr_sim_u128)x1 * x1 - (kr_sim_u128)x0 * x0;
  }
}

static void integrate(run_t *r, suri_t *s, int64_t t) {
  if (!s->acc_from || t <= s->acc_from) return;
  integrate_piece(&r->res->all, s->acc_from, t, s->stale_at);
  if (s->acc_from < r->wend)
    integrate_piece(&r->res->early, s->acc_from, KR_MIN(t, r->wend), s->stale_at);
  s->acc_from = t;
}

/* ---- runs: fetches ----------------------------------------------------------------- */

static void pull(run_t *r);

static int64_t fetch_duration(run_t *r, suri_t *s) {
  double d = (double)r->o->fetch_ms * exp(r->o->fetch_sigma * kr__sim_gauss(&s->drng));
  if (d < 1) d = 1;
  if (d > 60000) d = 60000;
  return (int64_t)d;
}

static void make_etag(char out[ETAG_LEN + 1], uint64_t h) {
  snprintf(out, ETAG_LEN + 1, "\"%016" PRIx64 "\"", h);
}

static void fail(run_t *r, int rc, const char *what) {
  if (!r->err) {
    r->err = rc;
    kr__sim_errf(r->errbuf, r->errlen, rc, "%s: %s", what, kr_strerror(rc));
  }
}

static void on_fetch_done(kr_wheel_entry_t *e);

/* ---- runs: events and invariants -------------------------------------------------
 * The outcomes below are the crawler's processors replayed: proc_post.c's
 * build_outcome (a refused connection, a 503/429, a robots.txt answering
 * 5xx) and proc_prefetch.c's robots_run and kr__robots_store (the
 * prerequisite, -61, -9998, the rules' expiry). A change there must be
 * made here too, or the simulation goes on proving the old behaviour. */

/* Host sh is within an event of kind at t (epoch ms). */
static int host_in(const run_t *r, const shost_t *sh, int kind, int64_t t) {
  int64_t off = t - r->t0;
  for (size_t i = 0; i < sh->nhev; i++) {
    const whev_t *e = &r->w->hev[sh->hev[i]];
    if (e->kind == kind && off >= e->from && off < e->until) return 1;
  }
  return 0;
}

static int is_down_kind(int kind) { return kind == KR__SIM_H_OUTAGE || kind == KR__SIM_H_ROBOTS_DOWN; }

/* Time within [a, b] (epoch ms) when sh could not be visited (an outage,
 * robots.txt down), overlaps counted once. */
static int64_t host_down_ms(const run_t *r, const shost_t *sh, int64_t a, int64_t b) {
  int64_t total = 0, covered = a; /* windows taken in order of their start */
  for (;;) {
    int64_t best_from = INT64_MAX, best_until = 0;
    for (size_t i = 0; i < sh->nhev; i++) {
      const whev_t *e = &r->w->hev[sh->hev[i]];
      if (!is_down_kind(e->kind)) continue;
      int64_t f = r->t0 + e->from, u = e->until >= INT64_MAX - r->t0 ? INT64_MAX : r->t0 + e->until;
      if (u <= covered || f >= b) continue;
      f = KR_MAX(f, covered);
      if (f < best_from || (f == best_from && u > best_until)) best_from = f, best_until = u;
    }
    if (best_from == INT64_MAX) return total;
    int64_t u = KR_MIN(best_until, b);
    total += u - best_from;
    covered = u;
    if (covered >= b) return total;
  }
}

/* The earliest end of a down window of sh within (a, b] (epoch ms), 0 none. */
static int64_t host_recovered(const run_t *r, const shost_t *sh, int64_t a, int64_t b) {
  int64_t best = 0;
  for (size_t i = 0; i < sh->nhev; i++) {
    const whev_t *e = &r->w->hev[sh->hev[i]];
    if (!is_down_kind(e->kind) || e->until >= r->end - r->t0) continue;
    int64_t u = r->t0 + e->until;
    if (u > a && u <= b && (!best || u < best)) best = u;
  }
  return best;
}

/* sh was down at t, or recovered less than its bound before: its
 * lateness then is the recovery's, not the policy's. */
static int host_excused(const run_t *r, const shost_t *sh, int64_t t) {
  for (size_t i = 0; i < sh->nhev; i++) {
    const whev_t *e = &r->w->hev[sh->hev[i]];
    if (!is_down_kind(e->kind)) continue;
    int64_t off = t - r->t0;
    if (off >= e->from && (e->until >= INT64_MAX - sh->bound_ms || off < e->until + sh->bound_ms))
      return 1;
  }
  return 0;
}

/* 0 for the run's second quarter, 1 for its last, -1 otherwise. */
static int quarter(const run_t *r, int64_t t) {
  int64_t len = r->end - r->t0, at = t - r->t0;
  return at >= len / 4 && at < len / 2 ? 0 : at >= len - len / 4 ? 1 : -1;
}

static const wev_t *uri_ev(const run_t *r, size_t i) { return r->w->ev ? &r->w->ev[i] : NULL; }

static int64_t uri_max_wait(const run_t *r, const suri_t *s, const shost_t *sh) {
  if (r->policy == KR_SIM_FIXED) return r->o->fixed_interval_ms;
  if (s->wait) {
    kr_wait_params_t p;
    kr_wait_params_from_config(&p, s->wait);
    return p.max_ms;
  }
  return (int64_t)sh->fo.default_wait_ms;
}

static inv_t *uri_inv(const run_t *r, size_t i) {
  return r->iv ? &r->iv[r->local ? r->local[i] : i] : NULL;
}

/* Invariant 1 over URI i's time since its last answer up to t (epoch
 * ms), while it was live; invariant 2 when its host recovered within
 * that time. final: t is the end of the run, not an answer. */
static void inv_check(run_t *r, size_t i, int64_t t, int final) {
  inv_t *v = uri_inv(r, i);
  if (!v) return;
  suri_t *s = suri(r, i);
  shost_t *sh = r->hosts[s->host];
  const wev_t *ev = uri_ev(r, i);
  kr_sim_events_t *E = &r->res->ev;
  int64_t from = r->t0 + (ev ? ev->born : 0);
  if (ev && ev->disallow_until) from = KR_MAX(from, r->t0 + ev->disallow_until);
  int64_t ref = KR_MAX(v->last, from);
  int64_t to_off = t - r->t0;
  if (ev) to_off = KR_MIN(to_off, KR_MIN(ev->dead_at, ev->unlinked_at));
  int64_t to = r->t0 + to_off;
  if (to <= ref) return;
  int64_t gap = to - ref - host_down_ms(r, sh, ref, to);
  int64_t excess = gap - (uri_max_wait(r, s, sh) + sh->bound_ms);
  if (!E->live_checked || excess > E->live_worst_ms) {
    E->live_worst_ms = excess;
    snprintf(E->live_worst_url, sizeof E->live_worst_url, "%s", kr__sim_url(r->w, &r->w->u[i]));
  }
  if (excess > 0 && !v->late) {
    v->late = 1;
    E->live_late++;
  }
  E->live_checked++;
  int64_t rec = host_recovered(r, sh, ref, to);
  if (rec) {
    int64_t late = to - KR_MAX(rec, v->due);
    if (final && late <= sh->bound_ms) return; /* not due yet: no verdict */
    if (!E->rec_checked || late > E->rec_worst_ms) E->rec_worst_ms = late;
    E->rec_checked++;
    if (late > sh->bound_ms && !v->rec_late) {
      v->rec_late = 1;
      E->rec_late++;
    }
  }
}

/* URI i was answered at t (any status); success: with this wait. */
static void inv_answer(run_t *r, size_t i, int64_t t, int success, int64_t wait) {
  inv_t *v = uri_inv(r, i);
  if (!v) return;
  inv_check(r, i, t, 0);
  v->last = t;
  if (success) v->due = t + wait;
}

/* Hourly: each host's head lateness (kr_frontier_host_report), by quarter. */
static void sample_hosts(run_t *r, int64_t now) {
  if (!r->iv || now < r->next_sample) return;
  r->next_sample = now + 3600000;
  int q = quarter(r, now);
  if (q < 0) return;
  for (size_t j = 0; j < r->nhosts; j++) {
    shost_t *sh = r->hosts[j];
    if (host_excused(r, sh, now)) continue;
    kr_host_report_t rep;
    kr_frontier_host_report(r->f, sh->h, (uint64_t)now, &rep);
    sh->q_n[1][q]++;
    sh->q_sum[1][q] += rep.overdue_ms;
  }
}

/* The links a hub lists at t (epoch ms) into r->links; their number. */
static size_t hub_links(run_t *r, const shost_t *sh, const wuri_t *hub, int64_t t) {
  size_t n = 0;
  int64_t off = t - r->t0;
  for (size_t k = 0; k < sh->nlinked; k++) {
    uint32_t i = sh->linked[k];
    const wev_t *ev = &r->w->ev[i];
    if (ev->born > off) break; /* by birth */
    if (ev->unlinked_at <= off) continue;
    if (n == r->links_cap) {
      r->links_cap = r->links_cap ? r->links_cap * 2 : 256;
      r->links = kr_xrealloc(r->links, r->links_cap * sizeof *r->links);
    }
    const wuri_t *u = &r->w->u[i];
    r->links[n++] = (kr_link_t){.url = kr__sim_url(r->w, u), .url_len = u->url_len,
                                .hop_path = "L", .hop_len = 1, .via = hub->fp,
                                .directive = KR_DIRECTIVE_NORMAL};
  }
  return n;
}

static sfetch_t *fetch_obj(run_t *r) {
  sfetch_t *fx = r->free_fetches;
  if (fx) {
    r->free_fetches = fx->next_free;
  } else {
    fx = kr_xcalloc(1, sizeof *fx);
    if ((r->nfetch_objs & (r->nfetch_objs + 1)) == 0)
      r->all_fetches = kr_xrealloc(r->all_fetches, (r->nfetch_objs * 2 + 2) * sizeof *r->all_fetches);
    r->all_fetches[r->nfetch_objs++] = fx;
    kr_wheel_entry_init(&fx->e, on_fetch_done);
  }
  fx->run = r;
  fx->what = FX_FETCH;
  return fx;
}

static void fetch_free(run_t *r, sfetch_t *fx) {
  fx->c = NULL;
  fx->next_free = r->free_fetches;
  r->free_fetches = fx;
}

/* The slot of a finished fetch: politeness bookkeeping before the
 * frontier frees c (contact: the host was reached, its delay applies). */
static void slot_done(run_t *r, shost_t *sh, const kr_curi_t *c, int64_t now, int contact) {
  uint64_t fetch_ms = (uint64_t)(now - (int64_t)c->issued_at);
  if (contact) {
    uint64_t delay = kr_frontier_host_delay(r->f, c->host, fetch_ms);
    sh->free_at = now + (int64_t)delay;
    sh->has_free_at = 1;
    sh->cycle_ms = 0.98 * sh->cycle_ms + 0.02 * (double)(fetch_ms + delay);
  }
  sh->in_flight--;
}

/* Hand an outcome without a visit history to the frontier (a refused
 * connection, a busy answer, a robots.txt fetch, a decided outcome). */
static void finish_plain(run_t *r, sfetch_t *fx, kr_outcome_t *oc, const kr_link_t *links,
                         size_t nlinks) {
  kr_curi_t *c = fx->c;
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  oc->fetch_ms = (uint64_t)(now - (int64_t)c->issued_at);
  fetch_free(r, fx);
  int rc = kr_frontier_finished(r->f, c, oc, links, nlinks, (uint64_t)now);
  if (rc < 0) fail(r, rc, "recording a visit");
  pull(r);
}

/* robots.txt answered (or not): the crawl's kr__robots_store
 * (proc_prefetch.c) on the simulated host. */
static int in_shard(const run_t *r, size_t i);

/* A robots.txt fetched at ti whose rules differ from the last one's
 * (fetched at prev_at): as proc_prefetch.c does on a changed robots.txt,
 * the host's URIs disallowed before (-9998) and allowed now go back in
 * the queue (the frontier's revive), due now. One pass over the shard's
 * URIs, only when one of the host's relaxings fell between the fetches. */
static void robots_relaxed(run_t *r, shost_t *sh, int64_t prev_at, int64_t ti, uint64_t now) {
  const kr_sim_world_t *w = r->w;
  for (size_t i = 0; i < w->n; i++) {
    const wev_t *ev = &w->ev[i];
    if (!ev->disallow_until || !in_shard(r, i) || r->hosts[suri(r, i)->host] != sh) continue;
    int64_t at = r->t0 + ev->disallow_until;
    if (!(prev_at < at && at <= ti)) continue;
    const wuri_t *u = &w->u[i];
    kr_link_t l = {.url = kr__sim_url(w, u), .url_len = u->url_len, .hop_path = "",
                   .hop_len = 0, .next_at = now, .flags = KR_LINK_REVIVE};
    int rc = kr_frontier_add(r->f, &l, now);
    if (rc < 0) {
      fail(r, rc, "reviving a URI robots.txt allows again");
      return;
    }
  }
}

static void robots_done(run_t *r, sfetch_t *fx) {
  kr_curi_t *c = fx->c;
  shost_t *sh = host_of(r, c->host);
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock), ti = (int64_t)c->issued_at;
  kr_sim_events_t *E = &r->res->ev;
  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  int status;
  if (host_in(r, sh, KR__SIM_H_OUTAGE, ti)) {
    oc.kind = KR_OUTCOME_RETRY; /* connection refused, as proc_post.c builds it */
    oc.status = KR_ECONNREFUSED;
    oc.host_error = 1;
    status = KR_ECONNREFUSED;
    E->refused++;
  } else if (host_in(r, sh, KR__SIM_H_ROBOTS_DOWN, ti)) {
    oc.kind = KR_OUTCOME_RETRY; /* a robots.txt answering 5xx is retried */
    oc.status = status = 503;
    oc.bytes = 512;
    E->robots_5xx++;
  } else {
    oc.kind = KR_OUTCOME_SUCCESS;
    oc.status = status = 200;
    oc.bytes = 512;
    oc.wait_ms = (uint64_t)sh->robots_expiry_ms;
  }
  E->robots_fetches++;
  int unavail = status != 200;
  int64_t ttl = sh->robots_expiry_ms;
  if (unavail && (int64_t)sh->fo.retry_delay_ms < ttl) ttl = (int64_t)sh->fo.retry_delay_ms;
  sh->r_expires = now + ttl;
  sh->r_unavail = unavail;
  sh->r_final = unavail && c->retries >= sh->fo.max_retries;
  int64_t prev_at = sh->r_at;
  if (!unavail) sh->r_at = ti;
  slot_done(r, sh, c, now, status != KR_ECONNREFUSED);
  /* a relaxing between the two fetches: the rules changed */
  if (!unavail && sh->relax_max && prev_at < r->t0 + sh->relax_max && r->t0 + sh->relax_min <= ti)
    robots_relaxed(r, sh, prev_at, ti, (uint64_t)now);
  kr_frontier_host_set_robots(r->f, c->host, (uint64_t)sh->r_expires, status, -1, (uint64_t)now);
  kr_frontier_prereq_done(r->f, c->host, (uint64_t)now);
  finish_plain(r, fx, &oc, NULL, 0);
}

/* An outcome the prefetch processors decide without a fetch. */
static void decided_done(run_t *r, sfetch_t *fx) {
  suri_t *s = suri(r, fx->uri);
  shost_t *sh = r->hosts[s->host];
  slot_done(r, sh, fx->c, (int64_t)kr_clock_now_ms(&r->clock), 0);
  s->in_flight = 0;
  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  oc.kind = fx->dkind;
  oc.status = fx->dstatus;
  oc.no_contact = 1;
  /* as proc_prefetch.c: robots.txt unavailable is its host's failure */
  oc.with_host = fx->dstatus == KR_S_ROBOTS_PREREQUISITE_FAILURE;
  finish_plain(r, fx, &oc, NULL, 0);
}

/* The robots processor (proc_prefetch.c) on a URI of a host whose
 * robots.txt is modelled: 1 when it decided (c is handed on), 0 to fetch. */
static int robots_gate(run_t *r, shost_t *sh, kr_curi_t *c, size_t idx) {
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  kr_sim_events_t *E = &r->res->ev;
  if (sh->r_expires <= now) {
    int rc = kr_frontier_prereq_require(r->f, c, sh->r_url, sh->r_len, (uint64_t)now);
    if (rc == KR_EDB) fail(r, rc, "scheduling robots.txt");
    return 1;
  }
  const wev_t *ev = uri_ev(r, idx);
  kr_outcome_kind_t kind;
  int status;
  if (sh->r_unavail) {
    kind = sh->r_final ? KR_OUTCOME_FAILED : KR_OUTCOME_RETRY;
    status = KR_S_ROBOTS_PREREQUISITE_FAILURE;
    if (sh->r_final)
      E->robots_failed++;
    else
      E->robots_retry++;
  } else if (ev && ev->disallow_until && sh->r_at - r->t0 < ev->disallow_until) {
    kind = KR_OUTCOME_DISREGARDED;
    status = KR_S_ROBOTS_PRECLUDED;
    E->disallowed++;
  } else {
    return 0;
  }
  suri_t *s = suri(r, idx);
  KR_BUG_ON(s->in_flight);
  s->in_flight = 1;
  sh->in_flight++;
  sfetch_t *fx = fetch_obj(r);
  fx->c = c;
  fx->uri = idx;
  fx->what = FX_DECIDED;
  fx->dkind = kind;
  fx->dstatus = status;
  kr_timer_start(&r->timers, &fx->e, (uint64_t)now, on_fetch_done);
  return 1;
}

static void start_fetch(run_t *r, kr_curi_t *c) {
  int64_t idx = kr__sim_world_find(r->w, c->fp);
  uint64_t now = kr_clock_now_ms(&r->clock);
  if (idx < 0) { /* a robots.txt: the only URI not of the world */
    shost_t *rh = host_of(r, c->host);
    KR_BUG_ON(!rh || !rh->robots);
    rh->in_flight++;
    sfetch_t *fx = fetch_obj(r);
    fx->c = c;
    fx->what = FX_ROBOTS;
    kr_timer_start(&r->timers, &fx->e, now + (uint64_t)KR_MAX(1, r->o->fetch_ms / 3), on_fetch_done);
    return;
  }
  suri_t *s = suri(r, (size_t)idx);
  shost_t *sh = r->hosts[s->host];
  if (sh->robots && robots_gate(r, sh, c, (size_t)idx)) return;
  if (sh->valence == 1 && sh->has_free_at) {
    int64_t gap = (int64_t)now - sh->free_at;
    if (r->res->politeness_min_gap_ms < 0 || gap < r->res->politeness_min_gap_ms)
      r->res->politeness_min_gap_ms = gap;
    if (gap < 0) r->res->politeness_violations++;
    r->res->politeness_checked++;
  }
  if (c->visits) { /* a revisit's lateness */
    kr_sim_result_t *res = r->res;
    if (c->overdue_ms > res->overdue_max_ms) res->overdue_max_ms = c->overdue_ms;
    int64_t len = r->end - r->t0, at = (int64_t)now - r->t0;
    int q = at >= len / 4 && at < len / 2 ? 0 : at >= len - len / 4 ? 1 : -1;
    if (q >= 0) {
      res->overdue_n[q]++;
      res->overdue_sum_ms[q] += c->overdue_ms;
      if (r->iv && !host_excused(r, sh, (int64_t)now)) {
        sh->q_n[0][q]++;
        sh->q_sum[0][q] += c->overdue_ms;
      }
    }
  }
  sh->in_flight++;
  if (sh->in_flight > r->res->max_in_flight_host) r->res->max_in_flight_host = sh->in_flight;
  KR_BUG_ON(s->in_flight);
  s->in_flight = 1;
  sfetch_t *fx = fetch_obj(r);
  fx->c = c;
  fx->uri = (size_t)idx;
  kr_timer_start(&r->timers, &fx->e, now + (uint64_t)fetch_duration(r, s), on_fetch_done);
}

/* The next wait of a visit, by the run's policy. The visit history (the
 * URI's row, kr_vhist) gets this visit appended into hist/hist_len, which
 * the outcome hands back to the frontier to persist. */
static int64_t next_wait(run_t *r, suri_t *s, shost_t *sh, const kr_curi_t *c, kr_content_t st,
                         int64_t now, int64_t age_s, int has_lm, uint8_t *hist,
                         size_t *hist_len) {
  kr_vhist_visit_t v;
  v.interval_s = 0;
  if (c->visits && c->last_visit && (uint64_t)now > c->last_visit)
    v.interval_s = (int64_t)(((uint64_t)now - c->last_visit + 999) / 1000);
  if (c->visits && v.interval_s < 1) v.interval_s = 1;
  v.state = st;
  v.age_s = age_s;
  kr_vhist_t h;
  *hist_len = kr_vhist_push_read(c->history, c->history_len, &v, hist, NULL, &h);
  if (r->policy == KR_SIM_FIXED) return r->o->fixed_interval_ms;
  if (!s->wait) return 0; /* no evaluator: the frontier's default wait */
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, s->wait);
  if (r->policy == KR_SIM_MULTIPLICATIVE) {
    int64_t prev = c->visits ? (int64_t)c->wait_ms : 0;
    int64_t w = kr_wait_multiplicative(&p, prev, st, (int64_t)c->overdue_ms);
    if (!sh->cap_on) return w;
    /* as proc_wait.c: raised to the host's capacity floor */
    double budget = kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
    kr_capplan_maybe_solve(&sh->cap, budget, r->o->solve_every);
    int64_t planned = kr_capplan_apply(&sh->cap, w);
    if (planned > w) r->res->waits_capped++;
    kr_capplan_update(&sh->cap, prev, planned);
    return planned;
  }
  if (r->policy == KR_SIM_ORACLE) {
    double budget = kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
    kr_alloc_host_maybe_solve(&sh->alloc, budget, r->o->solve_every);
    double lambda = s->lambda > 0 ? s->lambda : 1e-12;
    return kr_wait_clamp(&p, (int64_t)KR_MIN(kr_alloc_host_x(&sh->alloc) / lambda * 1000.0, 9e18));
  }
  kr_est_hints_t hints = kr_est_hints_none();
  if (sh->hint_lm) hints.last_modified = has_lm;
  double budget = kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
  kr_alloc_host_maybe_solve(&sh->alloc, budget, r->o->solve_every);
  kr_wait_info_t info;
  int64_t wait = kr_wait_poisson(&p, &r->ep, &h, st, &hints, kr_alloc_host_x(&sh->alloc), &info);
  if (s->cls >= 0 && (info.observations > 0 || r->o->sketch_prior)) {
    kr_alloc_host_update(&sh->alloc, s->cls, s->lambda, info.lambda);
    s->lambda = info.lambda;
  }
  return wait;
}

static void on_fetch_done(kr_wheel_entry_t *e) {
  sfetch_t *fx = container_of(e, sfetch_t, e);
  run_t *r = fx->run;
  if (fx->what == FX_ROBOTS) {
    robots_done(r, fx);
    return;
  }
  if (fx->what == FX_DECIDED) {
    decided_done(r, fx);
    return;
  }
  kr_curi_t *c = fx->c;
  const kr_sim_world_t *w = r->w;
  const wuri_t *u = &w->u[fx->uri];
  suri_t *s = suri(r, fx->uri);
  shost_t *sh = r->hosts[s->host];
  const kr_sim_opts_t *o = r->o;
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  int64_t ti = (int64_t)c->issued_at; /* the server answered then */
  int early = ti < r->wend;
  kr_sim_metrics_t *ms[2] = {&r->res->all, early ? &r->res->early : NULL};

  advance(w, u, s, r->t0, r->wend, ti);
  integrate(r, s, ti);

  /* the long crawl's events: the host refuses connections, the URI is
   * busy, or dead (sim.h "Events") */
  const wev_t *ev = uri_ev(r, fx->uri);
  int64_t off = ti - r->t0;
  if (host_in(r, sh, KR__SIM_H_OUTAGE, ti)) {
    kr_outcome_t oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = KR_OUTCOME_RETRY; /* as proc_post.c builds a connect failure */
    oc.status = KR_ECONNREFUSED;
    oc.host_error = 1;
    r->res->ev.refused++;
    slot_done(r, sh, c, now, 1);
    s->in_flight = 0;
    finish_plain(r, fx, &oc, NULL, 0);
    return;
  }
  if (ev && off >= ev->busy_from && off < ev->busy_until) {
    kr_outcome_t oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = KR_OUTCOME_BACKOFF;
    oc.status = ev->busy_status;
    oc.bytes = 512;
    /* Retry-After through the crawler's own parser */
    char ra[64] = "";
    if (ev->ra_kind == 1) snprintf(ra, sizeof ra, "%" PRId64, ev->ra_ms / 1000);
    if (ev->ra_kind == 2) kr_validators_date_format((ti + ev->ra_ms) / 1000, ra);
    uint64_t d;
    if (ra[0] && kr_frontier_parse_retry_after(ra, strlen(ra), (uint64_t)now, &d) == 0)
      oc.retry_after_ms = d;
    r->res->ev.busy++;
    slot_done(r, sh, c, now, 1);
    s->in_flight = 0;
    inv_answer(r, fx->uri, ti, 0, 0);
    finish_plain(r, fx, &oc, NULL, 0);
    return;
  }
  int dead = ev && off >= ev->dead_at;
  s->responses++;
  /* a hub's list is part of its content: its ETag, Last-Modified and
   * digest move when a page is born or unlinked */
  size_t nlinks = 0;
  uint64_t ver = s->version;
  int64_t last_change = s->last_change;
  if (!dead && sh->hub == fx->uri + 1) {
    nlinks = hub_links(r, sh, u, ti);
    ver += (uint64_t)nlinks << 32;
    for (size_t k = 0; k < sh->nlinked; k++) {
      const wev_t *le = &w->ev[sh->linked[k]];
      if (le->born <= off) last_change = KR_MAX(last_change, r->t0 + le->born);
      if (le->unlinked_at <= off) last_change = KR_MAX(last_change, r->t0 + le->unlinked_at);
    }
  }

  /* the server's validators for this response */
  char etag[ETAG_LEN + 1] = "";
  int64_t lm = 0; /* epoch s, 0 none */
  switch (dead ? KR_SIM_VAL_MISSING : u->validators) {
  case KR_SIM_VAL_CORRECT:
    if (u->is_volatile) {
      make_etag(etag, kr__sim_mix64(u->fp ^ kr__sim_mix64((ver << 32) ^ s->responses)));
    } else {
      make_etag(etag, kr__sim_mix64(u->fp ^ kr__sim_mix64(ver + 1)));
      lm = last_change / 1000;
    }
    break;
  case KR_SIM_VAL_LYING:
    make_etag(etag, kr__sim_mix64(u->fp));
    lm = (r->t0 - YEAR_MS) / 1000;
    break;
  default:
    break;
  }
  size_t etag_len = strlen(etag);
  int has_hist = c->visits > 0;
  int has_val = !dead && has_hist && (c->etag_len > 0 || c->last_modified > 0);
  kr_vtrust_t trust = *kr_frontier_host_vtrust(c->host);
  kr_vtrust_mode_t mode = has_val ? kr_vtrust_mode(&trust, &sh->trust, c->fp, c->visits, ti)
                                  : KR_VTRUST_PROBATION;
  int conditional = has_val && sh->conditional && mode == KR_VTRUST_USE;
  int status = dead ? ev->dead_status : 200;
  if (conditional) {
    /* RFC 9110 13.2.2: If-None-Match first, If-Modified-Since without it */
    if (c->etag_len)
      status = etag_len && c->etag_len == etag_len && !memcmp(c->etag, etag, etag_len) ? 304 : 200;
    else
      status = lm && lm <= c->last_modified ? 304 : 200;
  }

  uint64_t bytes;
  kr_content_t st;
  uint64_t digest = 0;
  int full = 0;
  if (status == 304) {
    bytes = 0;
    st = KR_CONTENT_UNCHANGED;
    kr_vtrust_record(&trust, &sh->trust, 0, KR_CONTENT_UNKNOWN, ti);
    for (int k = 0; k < 2; k++)
      if (ms[k]) ms[k]->not_modified++;
  } else {
    int predicted = 1;
    if (has_val) {
      char date[KR_HTTP_DATE_SIZE] = "";
      if (lm) kr_validators_date_format(lm, date);
      kr_val_result_t vr;
      predicted = kr_validators_check(sh->scheme, sh->etag_mode, kr_slice(c->etag, c->etag_len),
                                      kr_slice(etag, etag_len), c->last_modified,
                                      kr_slice(date, strlen(date)), &vr);
    }
    if (has_val && sh->midfetch && mode == KR_VTRUST_USE && !predicted) {
      bytes = KR_MIN(u->size, o->abort_bytes);
      st = KR_CONTENT_UNCHANGED;
      kr_vtrust_record(&trust, &sh->trust, 0, KR_CONTENT_UNKNOWN, ti);
      for (int k = 0; k < 2; k++)
        if (ms[k]) ms[k]->aborted++;
    } else {
      full = 1;
      bytes = dead ? 512 : u->size;
      uint64_t salt = u->is_volatile && !o->strip ? s->responses : 0;
      digest = dead ? kr__sim_mix64(u->fp ^ UINT64_C(0xdead) ^ ev->dead_status)
                    : kr__sim_mix64(u->fp ^ kr__sim_mix64((ver << 32) + salt + 7));
      if (!has_hist)
        st = KR_CONTENT_CHANGED;
      else
        st = c->digest_len == 8 && !memcmp(c->digest, &digest, 8) ? KR_CONTENT_UNCHANGED
                                                                   : KR_CONTENT_CHANGED;
      if (has_val) kr_vtrust_record(&trust, &sh->trust, predicted, st, ti);
    }
  }

  if (dead) r->res->ev.dead++;
  if (!full) nlinks = 0; /* a 304 or an abort: no body, no links */

  /* scoring (a dead page's answer archives no version) */
  int captured = 0;
  if (full && !dead && s->cap_version != (int32_t)s->version) {
    captured = 1;
    if (s->acc_from == 0) {
      r->res->uris_visited++;
      r->res->first_visit_ms += (uint64_t)(ti - r->t0);
    }
    s->cap_version = (int32_t)s->version;
    s->stale_at = s->next_change;
    s->acc_from = ti;
  }
  int unchanged_visit = !dead && s->seen_version == (int32_t)s->version;
  int lost = !dead && !full && s->cap_version != (int32_t)s->version;
  s->seen_version = (int32_t)s->version;
  for (int k = 0; k < 2; k++) {
    kr_sim_metrics_t *m = ms[k];
    if (!m) continue;
    m->fetches++;
    m->body_bytes += bytes;
    /* the version live at the start is every policy's first download */
    m->captured += (uint64_t)(captured && s->version > 0);
    m->lost_by_validators += (uint64_t)lost;
    if (unchanged_visit) {
      m->unchanged_visits++;
      m->unchanged_full_bytes += u->size;
      m->unchanged_body_bytes += bytes;
    }
  }

  if (has_val) kr_frontier_host_set_vtrust(r->f, c->host, &trust);

  /* the wait */
  int64_t age_s = lm && ti / 1000 >= lm ? ti / 1000 - lm : -1;
  uint8_t hist[KR_VHIST_BYTES];
  size_t hist_len = 0;
  /* every fetch takes one of the host's slots: the allocator's
   * realised-rate feedback (estimate.h), as proc_wait.c does */
  kr_alloc_host_fetched(&sh->alloc, now);
  int64_t wait = next_wait(r, s, sh, c, st, now, age_s, lm != 0, hist, &hist_len);
  s->last_wait = wait;
  s->visits++;

  inv_answer(r, fx->uri, ti, 1, wait > 0 ? wait : (int64_t)sh->fo.default_wait_ms);
  uint64_t fetch_ms = (uint64_t)(now - ti);
  slot_done(r, sh, c, now, 1);
  s->in_flight = 0;

  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  oc.kind = KR_OUTCOME_SUCCESS;
  oc.status = status;
  oc.fetch_ms = fetch_ms;
  oc.bytes = bytes;
  oc.wait_ms = wait > 0 ? (uint64_t)wait : 0;
  oc.content = st == KR_CONTENT_CHANGED ? 1 : 0;
  if (!has_hist) {
    oc.content_type = w->types[u->ctype];
    oc.content_type_len = strlen(oc.content_type);
  }
  if (full) {
    oc.digest = (const uint8_t *)&digest;
    oc.digest_len = 8;
  }
  if (etag_len) {
    oc.etag = etag;
    oc.etag_len = etag_len;
  }
  oc.last_modified = lm;
  oc.history = hist;
  oc.history_len = hist_len;
  fetch_free(r, fx);
  r->res->ev.links += nlinks;
  int rc = kr_frontier_finished(r->f, c, &oc, nlinks ? r->links : NULL, nlinks, (uint64_t)now);
  if (rc < 0) fail(r, rc, "recording a visit");
  pull(r);
}

static void pull(run_t *r) {
  if (r->err) return;
  /* bounded: every URI issued is one fetch in flight */
  for (size_t guard = 0; guard < 1000000; guard++) {
    kr_curi_t *c;
    int rc = kr_frontier_next(r->f, kr_clock_now_ms(&r->clock), &c);
    if (rc < 0) {
      fail(r, rc, "picking the next URI");
      return;
    }
    if (rc == 0) return;
    start_fetch(r, c);
  }
}

static void on_ready(kr_frontier_t *f, void *ud) {
  (void)f;
  pull(ud);
}

/* ---- runs: the loop ------------------------------------------------------------------- */

/* -v -v: once a simulated day, what each host's allocator believes. */
static void report_day(run_t *r) {
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  int64_t day = (now - r->t0) / 86400000;
  if (day <= r->last_day) return;
  r->last_day = day;
  for (size_t j = 0; j < r->nhosts && j < 20; j++) {
    shost_t *sh = r->hosts[j];
    double sum = 0;
    uint32_t n = 0;
    for (unsigned c = 0; c < sh->alloc.ncls; c++)
      for (unsigned b = 0; b < KR_ALLOC_BUCKETS; b++) {
        sum += sh->alloc.cls[c].count[b] * kr_alloc_bucket_lambda(b);
        n += sh->alloc.cls[c].count[b];
      }
    KR_LOG(KR_LOG_INFO, sh->name,
           "%s day %" PRId64 ": fetches %" PRIu64 ", budget %.4f/s, x %.3f (%s), sketch %u URIs, "
           "sum lambda %.4g/s",
           kr_sim_policy_name(r->policy), day, r->res->all.fetches,
           kr_alloc_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation),
           sh->alloc.x,
           sh->alloc.state == KR_ALLOC_SLACK ? "slack" : sh->alloc.state == KR_ALLOC_BINDS ? "binds" : "over",
           n, sum);
  }
}

void kr_sim_opts_default(kr_sim_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->duration_ms = 30 * INT64_C(86400000);
  o->window_ms = 3 * INT64_C(86400000);
  o->seed = 1;
  o->delay_ms = -1;
  o->conditional = 1;
  o->midfetch = 1;
  o->sample_rate = -1;
  o->fetch_ms = 150;
  o->fetch_sigma = 0.5;
  o->strip = 1;
  o->abort_bytes = 1460;
  o->fixed_interval_ms = 86400000;
  o->solve_every = 200;
}

static const char *state_parent(const kr_sim_opts_t *o) {
  if (o->state_parent) return o->state_parent;
  const char *t = getenv("TMPDIR");
  if (t && *t) return t;
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

static void remove_state(const char *dir) {
  static const char *const names[] = {KR_STORE_DB_NAME, KR_STORE_DB_NAME "-wal",
                                      KR_STORE_DB_NAME "-shm", KR_STORE_LOCK_NAME};
  for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
    char *p = kr_xasprintf("%s/%s", dir, names[i]);
    unlink(p);
    free(p);
  }
  rmdir(dir);
}

static int in_shard(const run_t *r, size_t i) {
  return !r->o->shard_of || r->o->shard_of[i] == r->o->shard;
}

/* Add every URI (of the shard) at the start, then tie each to its host
 * and evaluator. */
static int add_all(run_t *r) {
  const kr_sim_world_t *w = r->w;
  uint64_t now = kr_clock_now_ms(&r->clock);
  uint64_t dseed = kr__sim_mix64(r->o->seed ^ UINT64_C(0x6b726961));
  for (size_t i = 0; i < w->n; i++) {
    if (!in_shard(r, i)) continue;
    suri_t *s = suri(r, i);
    truth_init(w, i, s, r->t0);
    s->drng = kr__sim_mix64(dseed ^ w->u[i].fp);
  }
  enum { BATCH = 4096 };
  kr_link_t *links = kr_xcalloc(BATCH, sizeof *links);
  int rc = 0;
  size_t n = 0;
  for (size_t i = 0; i <= w->n && !rc; i++) {
    if (i < w->n && in_shard(r, i) && !(w->ev && w->ev[i].born)) { /* the born come as links */
      const wuri_t *u = &w->u[i];
      links[n++] = (kr_link_t){.url = kr__sim_url(w, u), .url_len = u->url_len, .hop_path = "",
                               .hop_len = 0, .next_at = now, .directive = KR_DIRECTIVE_NORMAL};
    }
    if (n < BATCH && (i < w->n || n == 0)) continue;
    size_t added = 0;
    rc = kr_frontier_add_batch(r->f, links, n, now, &added);
    if (!rc && added != n) {
      rc = kr__sim_errf(r->errbuf, r->errlen, KR_EINVAL,
                "the frontier refused %zu of the URIs (bad or duplicate)", n - added);
      break;
    }
    n = 0;
    if (!rc) rc = kr_frontier_turn(r->f, now);
  }
  free(links);
  if (rc < 0 && !r->err) fail(r, rc, "adding the URIs");
  if (rc) return rc;
  rc = kr_frontier_commit(r->f);
  if (rc < 0) {
    fail(r, rc, "committing the URIs");
    return rc;
  }

  char key[1024];
  for (size_t i = 0; i < w->n; i++) {
    if (!in_shard(r, i)) continue;
    const wuri_t *u = &w->u[i];
    suri_t *s = suri(r, i);
    int k = kr_frontier_queue_key(r->f, kr__sim_url(w, u), u->url_len, key, sizeof key);
    kr_hostq_t *h = k == 0 ? kr_frontier_host_lookup(r->f, key, strlen(key)) : NULL;
    shost_t *sh = h ? host_of(r, h) : NULL;
    if (!sh) {
      return kr__sim_errf(r->errbuf, r->errlen, KR_EINVAL, "no host queue for %s", kr__sim_url(w, u));
    }
    s->host = sh->idx;
    int64_t d = w->ev ? w->ev[i].disallow_until : 0;
    if (d && (!sh->relax_min || d < sh->relax_min)) sh->relax_min = d;
    if (d > sh->relax_max) sh->relax_max = d;
    if (sh->robots && !sh->r_url) { /* the origin of its first URI */
      const char *url = kr__sim_url(w, u), *p = strstr(url, "://");
      size_t on = p ? strcspn(p + 3, "/?#") + (size_t)(p + 3 - url) : 0;
      sh->r_url = kr_xasprintf("%.*s/robots.txt", (int)on, url);
      sh->r_len = strlen(sh->r_url);
    }
    if (w->ev && w->ev[i].hub) { /* the hub lists it: by birth (world order) */
      sh->linked = kr_xrealloc(sh->linked, (sh->nlinked + 1) * sizeof *sh->linked);
      size_t at = sh->nlinked++;
      for (; at > 0 && w->ev[sh->linked[at - 1]].born > w->ev[i].born; at--)
        sh->linked[at] = sh->linked[at - 1];
      sh->linked[at] = (uint32_t)i;
    }
    const char *ct = w->types[u->ctype];
    s->wait = kr_config_wait_match(sh->view, r->matcher, ct, strlen(ct));
    if (s->wait && (r->policy == KR_SIM_POISSON || r->policy == KR_SIM_ORACLE)) {
      kr_wait_params_t p;
      kr_wait_params_from_config(&p, s->wait);
      s->cls = (int8_t)kr_alloc_host_class(&sh->alloc, p.min_ms, p.max_ms);
      if (r->policy == KR_SIM_ORACLE) {
        s->lambda = KR_MAX(true_rate(u, r->end - r->t0), 1e-12);
        kr_alloc_host_update(&sh->alloc, s->cls, 0, s->lambda);
      }
    }
  }
  return 0;
}


/* The end of a tracked run: every URI's last stretch judged, the state
 * the frontier left it in, the hosts' distinct URIs against the cap and
 * their lateness, second quarter against last (sim.h "Invariants"). */
static int inv_final(run_t *r) {
  const kr_sim_world_t *w = r->w;
  kr_sim_events_t *E = &r->res->ev;
  int rc = kr_frontier_commit(r->f);
  if (rc < 0) return kr__sim_errf(r->errbuf, r->errlen, rc, "committing: %s", kr_strerror(rc));
  kr_store_t *st = kr_frontier_store(r->f);
  int cap_key = kr_config_key_find("limits.max-uris-per-host");
  uint64_t now = kr_clock_now_ms(&r->clock);
  uint8_t *full = kr_xcalloc(r->nhosts ? r->nhosts : 1, 1);
  for (size_t j = 0; j < r->nhosts; j++) {
    shost_t *sh = r->hosts[j];
    kr_host_report_t rep;
    kr_frontier_host_report(r->f, sh->h, now, &rep);
    uint64_t n = rep.c.discovered - (sh->r_url ? 1 : 0); /* robots.txt aside */
    if (n > E->host_uris_max) E->host_uris_max = n;
    uint64_t cap = cap_key >= 0 ? (uint64_t)kr_config_int(sh->view, (kr_cfg_key_t)cap_key) : 0;
    if (cap && (!E->host_uris_cap || cap > E->host_uris_cap)) E->host_uris_cap = cap;
    if (cap && n > cap) E->hosts_over_cap++;
    full[j] = cap && n >= cap;
    if (sh->bound_ms > E->bound_ms) E->bound_ms = sh->bound_ms;
    /* lateness growing: either measure, last quarter against second */
    if (sh->q_n[0][0] + sh->q_n[0][1] + sh->q_n[1][0] + sh->q_n[1][1]) E->hosts_checked++;
    for (int m = 0; m < 2; m++) {
      if (!sh->q_n[m][0] && !sh->q_n[m][1]) continue;
      double a = sh->q_n[m][0] ? (double)sh->q_sum[m][0] / (double)sh->q_n[m][0] / 1000.0 : 0;
      double b = sh->q_n[m][1] ? (double)sh->q_sum[m][1] / (double)sh->q_n[m][1] / 1000.0 : 0;
      if (b - a > E->worst_growth_s || !E->worst_host[0]) {
        E->worst_growth_s = b - a;
        snprintf(E->worst_host, sizeof E->worst_host, "%s", sh->name);
      }
      if (b > 1.5 * a + 600) { /* half as late again, and ten minutes more */
        E->hosts_growing++;
        break;
      }
    }
  }
  int64_t end_off = r->end - r->t0;
  for (size_t i = 0; i < w->n; i++) {
    if (!in_shard(r, i)) continue;
    const wev_t *ev = uri_ev(r, i);
    inv_t *v = uri_inv(r, i);
    suri_t *s = suri(r, i);
    kr_uri_row_t row;
    int known = kr_store_uri_get(st, w->u[i].fp, &row);
    if (known < 0) {
      free(full);
      return kr__sim_errf(r->errbuf, r->errlen, known, "reading a URI: %s", kr_strerror(known));
    }
    if (ev && ev->born) {
      if (ev->born >= end_off) continue; /* not born within the run */
      E->born++;
      if (v->last) E->born_visited++;
      if (!known) E->born_unknown++;
      if (!known && full[s->host]) continue; /* refused at the cap: by design */
    }
    if (ev && ev->disallow_until && ev->disallow_until < end_off) {
      E->relax_uris++;
      if (v->last > r->t0 + ev->disallow_until) E->relax_visited++;
    }
    int live = !ev || (ev->dead_at > end_off && ev->unlinked_at > end_off);
    if (live && known) {
      if (row.state == KR_URI_DISREGARDED) E->end_disregarded++;
      if (row.state == KR_URI_FAILED) E->end_failed++;
      if (row.state == KR_URI_RETRY) E->end_retry++;
    }
    inv_check(r, i, r->end, 1);
  }
  free(full);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void kr_sim_score_estimates(const kr_sim_world_t *w, int64_t duration_ms, const double *lambda,
                            kr_sim_result_t *out) {
  double *ratio = kr_xmalloc((w->n ? w->n : 1) * sizeof *ratio);
  size_t n = 0, within = 0;
  out->est_n = 0;
  out->est_median_ratio = out->est_within2 = 0;
  for (size_t i = 0; i < w->n; i++) {
    const wuri_t *u = &w->u[i];
    if (u->change != KR_SIM_POISSON_RATE && u->change != KR_SIM_EVERY) continue;
    if (!(lambda[i] > 0)) continue;
    double q = lambda[i] / true_rate(u, duration_ms);
    ratio[n++] = q;
    if (q >= 0.5 && q <= 2) within++;
  }
  out->est_n = n;
  if (n) {
    qsort(ratio, n, sizeof *ratio, cmp_double);
    out->est_median_ratio = n % 2 ? ratio[n / 2] : sqrt(ratio[n / 2 - 1] * ratio[n / 2]);
    out->est_within2 = (double)within / (double)n;
  }
  free(ratio);
}

int kr_sim_run_ex(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
                  kr_sim_result_t *out, kr_sim_trace_out_t *traces, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = 0;
  if (o->duration_ms <= 0 || o->window_ms < 0 || o->fetch_ms <= 0 || !(o->fetch_sigma >= 0) ||
      !(o->utilisation >= 0 && o->utilisation <= 1) || o->sample_rate > 1 ||
      (unsigned)o->scheme > KR_VSCHEME_EITHER)
    return kr__sim_errf(err, errlen, KR_EINVAL, "invalid simulation options");
  if (policy == KR_SIM_FIXED && o->fixed_interval_ms <= 0)
    return kr__sim_errf(err, errlen, KR_EINVAL, "the fixed policy needs an interval");
  double expect = 0;
  for (size_t i = 0; i < w->n; i++)
    if (w->u[i].change == KR_SIM_POISSON_RATE)
      expect += w->u[i].rate * (double)o->duration_ms / 1000.0;
  if (expect > MAX_CHANGES)
    return kr__sim_errf(err, errlen, KR_ETOOBIG,
                "the URIs would change about %.3g times in the run, more than the %.0g a run "
                "may simulate: shorten it or slow the changes",
                expect, MAX_CHANGES);
  double wall0 = mono_s(), cpu0 = cpu_s();
  run_t rr, *r = &rr;
  memset(r, 0, sizeof *r);
  r->w = w;
  r->o = o;
  r->policy = policy;
  r->res = out;
  r->traces = traces;
  r->errbuf = err;
  r->errlen = errlen;
  out->policy = policy;
  out->fixed_interval_ms = policy == KR_SIM_FIXED ? o->fixed_interval_ms : 0;
  out->politeness_min_gap_ms = -1;
  kr_est_params_default(&r->ep);
  r->cfg = o->cfg;
  if (!r->cfg) {
    r->own_cfg = r->cfg = kr_config_new();
    if (kr_config_finish(r->cfg)) {
      kr_config_free(r->own_cfg);
      return kr__sim_errf(err, errlen, KR_ECONFIG, "the default configuration does not finish");
    }
  }
  r->matcher = kr_config_matcher_new();
  r->t0 = KR_SIM_T0;
  r->wend = r->t0 + KR_MIN(o->window_ms, o->duration_ms);
  r->end = r->t0 + o->duration_ms;
  kr_clock_init_virtual(&r->clock, (uint64_t)r->t0);
  kr_timers_init(&r->timers, NULL, &r->clock);
  /* a shard keeps state for its own URIs only (a world of 10 million
   * URIs is ~1.2 GB of it) */
  size_t nuris = w->n;
  if (o->shard_of) {
    r->local = kr_xmalloc((w->n ? w->n : 1) * sizeof *r->local);
    nuris = 0;
    for (size_t i = 0; i < w->n; i++)
      if (in_shard(r, i)) r->local[i] = (uint32_t)nuris++;
  }
  r->s = kr_xcalloc(nuris ? nuris : 1, sizeof *r->s);
  if (o->invariants || kr_sim_world_has_events(w)) {
    r->iv = kr_xcalloc(nuris ? nuris : 1, sizeof *r->iv);
    out->ev.tracked = 1;
  }
  r->next_sample = r->t0;

  kr_frontier_opts_default(&r->fo);
  fopts_politeness(&r->fo, kr_config_global(r->cfg), o);
  r->fo.commit_ms = UINT32_MAX;
  r->fo.commit_updates = 200000; /* each commit rewrites most pages into the WAL */
  r->fo.quick_check = 0;
  /* the rows in memory too (written through; rowcache.h): reading back
   * the row written one revisit ago was a fifth of a run. ~0.5 KB a row:
   * past ROW_CACHE_MAX URIs the rest are read from SQLite as before. */
  r->fo.row_cache = (uint32_t)KR_MIN(nuris + 1024, (size_t)ROW_CACHE_MAX);
  r->fo.max_connections = 1000000;
  r->fo.on_host = on_host;
  r->fo.host_ud = r;

  char *dir = kr_xasprintf("%s/kria-sim.XXXXXX", state_parent(o));
  int rc = 0;
  if (!mkdtemp(dir)) {
    rc = kr__sim_errf(err, errlen, KR_EIO, "cannot create a state directory under %s: %s",
              state_parent(o), strerror(errno));
    goto out;
  }
  char ferr[512] = "";
  rc = kr_frontier_open(dir, &r->fo, &r->timers, &r->f, ferr, sizeof ferr);
  if (rc) {
    kr__sim_errf(err, errlen, rc, "%s", ferr[0] ? ferr : "cannot open the frontier");
    r->f = NULL;
    goto out;
  }
  kr_frontier_set_on_ready(r->f, on_ready, r);
  rc = add_all(r);
  out->hosts = r->nhosts;
  if (!rc) {
    uint64_t chunk = CHUNK_MS;
    for (uint64_t now = kr_clock_now_ms(&r->clock); now < (uint64_t)r->end && !r->err;
         now = kr_clock_now_ms(&r->clock)) {
      uint64_t step = KR_MIN(chunk, (uint64_t)r->end - now);
      size_t fired = kr_timers_advance(&r->timers, step);
      if (fired > CHUNK_EVENTS && chunk > 1)
        chunk /= 2;
      else if (fired < CHUNK_EVENTS / 4 && chunk < CHUNK_MS)
        chunk *= 2;
      if (r->err) break;
      if (kr_log_level >= KR_LOG_INFO) report_day(r);
      sample_hosts(r, (int64_t)kr_clock_now_ms(&r->clock));
      int t = kr_frontier_turn(r->f, kr_clock_now_ms(&r->clock));
      if (t < 0) fail(r, t, "committing");
    }
    rc = r->err;
  }
  if (!rc) {
    /* close every URI's books at the end */
    double *lambda = traces && traces->lambda ? traces->lambda : NULL;
    if (!lambda && policy == KR_SIM_POISSON) lambda = kr_xcalloc(w->n ? w->n : 1, sizeof *lambda);
    for (size_t i = 0; i < w->n; i++) {
      if (!in_shard(r, i)) continue;
      suri_t *s = suri(r, i);
      if (lambda) lambda[i] = s->lambda;
      advance(w, &w->u[i], s, r->t0, r->wend, r->end);
      integrate(r, s, r->end);
      out->all.versions += s->version;
      out->early.versions += s->version_w;
      if (s->visits && s->wait) {
        kr_wait_params_t p;
        kr_wait_params_from_config(&p, s->wait);
        if (policy != KR_SIM_FIXED && s->last_wait <= p.min_ms) out->at_min_wait++;
        if (policy != KR_SIM_FIXED && s->last_wait >= p.max_ms) out->at_max_wait++;
      }
      if (traces && traces->last_wait_ms) traces->last_wait_ms[i] = s->last_wait;
      if (traces && traces->visits) traces->visits[i] = s->visits;
    }
    if (out->uris_visited)
      out->mean_first_visit_s = (double)out->first_visit_ms / 1000.0 / (double)out->uris_visited;
    if (policy == KR_SIM_POISSON) {
      /* a shard's own; kr_sim_result_merge's caller scores the whole */
      double *all = lambda;
      if (o->shard_of && lambda) {
        all = kr_xcalloc(w->n ? w->n : 1, sizeof *all);
        for (size_t i = 0; i < w->n; i++) all[i] = in_shard(r, i) ? lambda[i] : 0;
      }
      kr_sim_score_estimates(w, r->end - r->t0, all, out);
      if (all != lambda) free(all);
    }
    if (lambda && lambda != (traces ? traces->lambda : NULL)) free(lambda);
    for (size_t j = 0; j < r->nhosts; j++)
      if (kr_frontier_host_vtrust(r->hosts[j]->h)->distrusts) out->hosts_distrusted++;
    if (r->iv) rc = inv_final(r);
  }

out:
  if (r->f) {
    int c = kr_frontier_close(r->f);
    if (c < 0 && !rc) rc = kr__sim_errf(err, errlen, c, "closing the frontier: %s", kr_strerror(c));
  }
  kr_timers_close(&r->timers, NULL);
  if (!o->keep_state && dir[0]) remove_state(dir);
  free(dir);
  for (size_t i = 0; i < r->nfetch_objs; i++) free(r->all_fetches[i]);
  free(r->all_fetches);
  for (size_t i = 0; i < r->nhosts; i++) {
    free(r->hosts[i]->name);
    free(r->hosts[i]->hev);
    free(r->hosts[i]->r_url);
    free(r->hosts[i]->linked);
    free(r->hosts[i]);
  }
  free(r->iv);
  free(r->links);
  free(r->hosts);
  free(r->hmap);
  free(r->s);
  free(r->local);
  kr_config_matcher_free(r->matcher);
  if (r->own_cfg) kr_config_free(r->own_cfg);
  out->wall_s = mono_s() - wall0;
  out->cpu_s = cpu_s() - cpu0;
  return rc;
}

int kr_sim_run(const kr_sim_world_t *w, const kr_sim_opts_t *o, kr_sim_policy_t policy,
               kr_sim_result_t *out, char *err, size_t errlen) {
  return kr_sim_run_ex(w, o, policy, out, NULL, err, errlen);
}

/* ---- derived figures and names ----------------------------------------------------------- */

double kr_sim_capture_ratio(const kr_sim_metrics_t *m) {
  return m->versions ? (double)m->captured / (double)m->versions : 0;
}
double kr_sim_freshness(const kr_sim_metrics_t *m) {
  return m->observed_ms ? (double)m->fresh_ms / (double)m->observed_ms : 0;
}
double kr_sim_age_s(const kr_sim_metrics_t *m) {
  /* (age_ms2 / 2) ms^2 over observed_ms ms, in s */
  return m->observed_ms ? (double)m->age_ms2 / (2000.0 * (double)m->observed_ms) : 0;
}
double kr_sim_fetches_per_version(const kr_sim_metrics_t *m) {
  return m->captured ? (double)m->fetches / (double)m->captured : 0;
}
double kr_sim_unchanged_saving(const kr_sim_metrics_t *m) {
  return m->unchanged_full_bytes
             ? 1.0 - (double)m->unchanged_body_bytes / (double)m->unchanged_full_bytes
             : 0;
}

int64_t kr_sim_fixed_interval(const kr_sim_result_t *ref, uint64_t uris, int64_t duration_ms) {
  double n = (double)uris, f = (double)ref->all.fetches;
  double span = (double)duration_ms / 1000.0 - ref->mean_first_visit_s;
  if (!(f > n) || !(span > 0)) return duration_ms;
  double ms = n * span / (f - n) * 1000.0;
  if (ms < 1000) ms = 1000;
  if (ms > (double)duration_ms) ms = (double)duration_ms;
  return (int64_t)ms;
}

static const char *const policy_names[KR_SIM_POLICIES] = {"fixed", "multiplicative", "poisson",
                                                           "oracle"};

const char *kr_sim_policy_name(kr_sim_policy_t p) {
  return (unsigned)p < KR_SIM_POLICIES ? policy_names[p] : "?";
}

int kr_sim_policy_parse(const char *s, size_t n, kr_sim_policy_t *out) {
  for (int i = 0; i < KR_SIM_POLICIES; i++)
    if (strlen(policy_names[i]) == n && memcmp(policy_names[i], s, n) == 0) {
      *out = (kr_sim_policy_t)i;
      return 0;
    }
  return KR_EINVAL;
}

const char *kr_sim_validators_name(kr_sim_validators_t v) {
  static const char *const names[] = {"correct", "missing", "lying"};
  return (unsigned)v < 3 ? names[v] : "?";
}
