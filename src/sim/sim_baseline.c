/*
 * The published schedulers as `kria simulate` policies (the math is in
 * include/kria/sched.h): LambdaCrawl, BinaryLambdaCrawl, LambdaCrawl
 * under politeness, Nutch's AdaptiveFetchSchedule and StormCrawler's
 * AdaptiveScheduler with their default parameters. sim_policy.c hands
 * them each visit; the run's frontier, politeness and scoring are the
 * same as every other policy's.
 *
 * LambdaCrawl family. The change rates D_i are poisson's own estimates
 * (kr_est_rate on the URI's history, through kr_wait_poisson), so the
 * comparison is of allocation rules, not of estimators; a URI without an
 * observation yet gets poisson's learning wait (x_min / its prior rate),
 * as a URI joins poisson's sketch only once observed. Observed URIs are
 * kept in a sketch of cells (group, wait class, D bucket, importance
 * bucket) with their counts and the sums of their D and importance, so
 * a solve sees a few hundred items whatever the number of URIs; the one
 * group is re-solved every solve_every x hosts updates (the cadence
 * poisson's per-host sketches have), so a visit costs O(1) amortised. A URI's
 * rate is then its own D and importance at the solved multiplier,
 * clamped to its evaluator's [1/max-wait, 1/min-wait] (the box every
 * simulated policy has), and its wait 1/rate.
 *   lambdacrawl, binarylambdacrawl  one group: the papers' single
 *       bandwidth R, here the sum of every host's politeness budget
 *       (kr_plan_budget, as poisson's). Nothing holds a host to its own
 *       share, so the hosts holding the fast pages are asked for more
 *       than their politeness allows and the frontier serves them late:
 *       that is the comparison at equal politeness.
 *   lambdacrawl-polite  one group per host, each with its own budget.
 *       The global R of the SIGIR paper is here the sum of the hosts'
 *       budgets, so it never binds (kr_sched_solve_polite gives L = 0
 *       whenever R >= sum R_h): each host is solved alone, every
 *       solve_every updates of its own, as poisson's, which keeps a run
 *       split by host into shards equal to the whole.
 * No realised-rate feedback (poisson's gain): the papers have none.
 *
 * Nutch, StormCrawler. Each URI keeps the scheduler's own state (Nutch's
 * fetchInterval and modifiedTime, StormCrawler's fetchInterval); the
 * content state of the visit (change digest, a 304 counting as
 * unchanged) plays the signature comparison. Their own minimum and
 * maximum intervals apply, not kria's evaluator clamps.
 *
 * Importance: the world's weight of each URI (importance_of; 1 unless
 * the trace or --importance gives others) is the papers' m: LambdaCrawl
 * puts it in the objective, Nutch, StormCrawler and kria's own
 * allocator do not see it.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "kria/sched.h"
#include "sim_run.h"

#define MU_BUCKETS 96  /* 8 per decade, 1e-6 .. 1e6 (the trace's range) */
#define MAX_CLASSES 16 /* distinct (min-wait, max-wait) pairs; more share the last */

typedef struct cell {
  uint64_t key;      /* group << 24 | class << 16 | D bucket << 8 | importance bucket; 0 empty */
  uint32_t count;
  double sum_delta;  /* of the URIs it holds */
  double sum_mu;
} cell_t;

struct kr__sim_bl {
  size_t n;                    /* the run's URIs (local indices) */
  uint32_t *world;             /* local -> world index */
  /* LambdaCrawl family */
  kr_sched_penalty_t pen;
  int polite;
  size_t ngroups;              /* 1, or the hosts (polite) */
  uint8_t *cls;                /* per URI: its wait class */
  double *mu;                  /* per URI: the importance it is counted with */
  int64_t cls_min[MAX_CLASSES], cls_max[MAX_CLASSES];
  unsigned ncls;
  cell_t *cells;
  size_t cap, used;
  uint32_t updates, every;
  int solved;
  uint32_t *g_updates;         /* polite: per host, since its last solve */
  uint8_t *g_solved;
  double L;                    /* global multiplier */
  double *group_L;             /* each group's own (polite) */
  double *group_R;             /* each group's budget */
  double R;
  kr_sched_item_t *items;      /* scratch of a solve */
  /* Nutch, StormCrawler */
  kr_sched_nutch_params_t np;
  kr_sched_nutch_t *nutch;
  kr_sched_storm_params_t sp;
  kr_sched_storm_t *storm;
};

/* ---- set-up ------------------------------------------------------------------ */

static int is_lambda_family(kr_sim_policy_t p) {
  return p == KR_SIM_LAMBDACRAWL || p == KR_SIM_BINARYLAMBDACRAWL ||
         p == KR_SIM_LAMBDACRAWL_POLITE;
}

int kr__sim_is_baseline(kr_sim_policy_t p) {
  return is_lambda_family(p) || p == KR_SIM_NUTCH || p == KR_SIM_STORMCRAWLER;
}

/* The importance of world URI i (the world's weight, 1 by default). */
static double importance_of(const run_t *r, size_t i) {
  double m = (double)r->w->u[i].imp_q / KR_SIM_IMP_ONE_Q;
  return m > 0 ? m : 1e-12; /* importance 0 counts for (almost) nothing */
}

int kr__sim_baseline_init(run_t *r) {
  if (!kr__sim_is_baseline(r->policy)) return 0;
  struct kr__sim_bl *b = kr_xcalloc(1, sizeof *b);
  r->bl = b;
  const kr_sim_world_t *w = r->w;
  for (size_t i = 0; i < w->n; i++)
    if (in_shard(r, i)) b->n++;
  b->world = kr_xcalloc(b->n ? b->n : 1, sizeof *b->world);
  for (size_t i = 0; i < w->n; i++)
    if (in_shard(r, i)) b->world[r->local ? r->local[i] : i] = (uint32_t)i;
  if (r->policy == KR_SIM_NUTCH) {
    kr_sched_nutch_default(&b->np);
    b->nutch = kr_xcalloc(b->n ? b->n : 1, sizeof *b->nutch);
    return 0;
  }
  if (r->policy == KR_SIM_STORMCRAWLER) {
    kr_sched_storm_default(&b->sp);
    b->storm = kr_xcalloc(b->n ? b->n : 1, sizeof *b->storm);
    return 0;
  }
  b->pen = r->policy == KR_SIM_BINARYLAMBDACRAWL ? KR_SCHED_BINARY : KR_SCHED_HARMONIC;
  b->polite = r->policy == KR_SIM_LAMBDACRAWL_POLITE;
  b->ngroups = b->polite ? (r->nhosts ? r->nhosts : 1) : 1;
  b->group_L = kr_xcalloc(b->ngroups, sizeof *b->group_L);
  b->group_R = kr_xcalloc(b->ngroups, sizeof *b->group_R);
  b->g_updates = kr_xcalloc(b->ngroups, sizeof *b->g_updates);
  b->g_solved = kr_xcalloc(b->ngroups, sizeof *b->g_solved);
  for (size_t j = 0; j < r->nhosts; j++) {
    const shost_t *sh = r->hosts[j];
    double budget = kr_plan_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
    b->R += budget;
    b->group_R[b->polite ? sh->idx : 0] += budget;
  }
  b->cls = kr_xcalloc(b->n ? b->n : 1, sizeof *b->cls);
  b->mu = kr_xcalloc(b->n ? b->n : 1, sizeof *b->mu);
  for (size_t k = 0; k < b->n; k++) {
    const suri_t *s = &r->s[k];
    b->mu[k] = importance_of(r, b->world[k]);
    if (!s->wait) continue;
    unsigned c = 0;
    while (c < b->ncls && (b->cls_min[c] != s->wait->min_wait_ms ||
                           b->cls_max[c] != s->wait->max_wait_ms))
      c++;
    if (c == b->ncls && b->ncls < MAX_CLASSES) {
      b->cls_min[c] = s->wait->min_wait_ms;
      b->cls_max[c] = s->wait->max_wait_ms;
      b->ncls++;
    }
    b->cls[k] = (uint8_t)(c < b->ncls ? c : b->ncls - 1);
  }
  uint64_t every = (uint64_t)(r->o->solve_every ? r->o->solve_every : 1) * (r->nhosts ? r->nhosts : 1);
  b->every = (uint32_t)KR_MIN(every, (uint64_t)UINT32_MAX);
  return 0;
}

void kr__sim_baseline_free(run_t *r) {
  struct kr__sim_bl *b = r->bl;
  if (!b) return;
  free(b->world);
  free(b->cls);
  free(b->mu);
  free(b->cells);
  free(b->group_L);
  free(b->group_R);
  free(b->g_updates);
  free(b->g_solved);
  free(b->items);
  free(b->nutch);
  free(b->storm);
  free(b);
  r->bl = NULL;
}

/* ---- the sketch ------------------------------------------------------------------- */

static unsigned mu_bucket(double mu) {
  double v = floor((log10(mu) + 6.0) * 8.0);
  if (!(v >= 0)) return 0;
  return v >= MU_BUCKETS ? MU_BUCKETS - 1 : (unsigned)v;
}

static uint64_t cell_key(size_t group, unsigned cls, double delta, double mu) {
  return (uint64_t)(group + 1) << 24 | (uint64_t)cls << 16 | (uint64_t)kr_plan_bucket(delta) << 8 |
         mu_bucket(mu);
}

static cell_t *cell_get(struct kr__sim_bl *b, uint64_t key) {
  if ((b->used + 1) * 2 > b->cap) {
    size_t ncap = b->cap ? b->cap * 2 : 1024;
    cell_t *n = kr_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < b->cap; i++) {
      if (!b->cells[i].key) continue;
      size_t j = (size_t)kr__sim_mix64(b->cells[i].key) & (ncap - 1);
      while (n[j].key) j = (j + 1) & (ncap - 1);
      n[j] = b->cells[i];
    }
    free(b->cells);
    b->cells = n;
    b->cap = ncap;
  }
  size_t j = (size_t)kr__sim_mix64(key) & (b->cap - 1);
  while (b->cells[j].key && b->cells[j].key != key) j = (j + 1) & (b->cap - 1);
  if (!b->cells[j].key) {
    b->cells[j].key = key;
    b->used++;
  }
  return &b->cells[j];
}

/* URI k (local) moves from old_delta to new_delta (<= 0: absent). */
static void sketch_update(struct kr__sim_bl *b, size_t k, size_t group, double old_delta,
                          double new_delta) {
  double mu = b->mu[k];
  if (old_delta > 0) {
    cell_t *c = cell_get(b, cell_key(group, b->cls[k], old_delta, mu));
    if (c->count) {
      c->count--;
      c->sum_delta -= old_delta;
      c->sum_mu -= mu;
      if (!c->count) c->sum_delta = c->sum_mu = 0; /* no drift left behind */
    }
  }
  if (new_delta > 0) {
    cell_t *c = cell_get(b, cell_key(group, b->cls[k], new_delta, mu));
    c->count++;
    c->sum_delta += new_delta;
    c->sum_mu += mu;
  }
  b->updates++;
  b->g_updates[group]++;
}

static double cls_fmin(const struct kr__sim_bl *b, unsigned c) {
  return b->cls_max[c] > 0 ? 1000.0 / (double)b->cls_max[c] : 0.0;
}
static double cls_fmax(const struct kr__sim_bl *b, unsigned c) {
  double f = b->cls_min[c] > 0 ? 1000.0 / (double)b->cls_min[c] : 1e3;
  double lo = cls_fmin(b, c);
  return f < lo ? lo : f;
}

/* The items of group g (every group: g = SIZE_MAX) from the cells. */
static size_t gather(struct kr__sim_bl *b, size_t g) {
  free(b->items);
  b->items = kr_xcalloc(b->used ? b->used : 1, sizeof *b->items);
  size_t n = 0;
  for (size_t i = 0; i < b->cap; i++) {
    const cell_t *c = &b->cells[i];
    if (!c->key || !c->count) continue;
    if (g != SIZE_MAX && (size_t)(c->key >> 24) - 1 != g) continue;
    unsigned cls = (unsigned)(c->key >> 16) & 0xff;
    double cnt = (double)c->count;
    double d = c->sum_delta / cnt, mu = c->sum_mu / cnt;
    b->items[n++] = (kr_sched_item_t){d > 0 ? d : 1e-12, mu > 0 ? mu : 1e-12, cls_fmin(b, cls),
                                      cls_fmax(b, cls), cnt};
  }
  return n;
}

/* One bandwidth: L for the whole run. */
static void solve_all(struct kr__sim_bl *b) {
  b->solved = 1;
  b->updates = 0;
  size_t n = gather(b, SIZE_MAX);
  kr_sched_solve(b->pen, b->items, n, b->R, &b->L, NULL);
}

/* Under politeness: host g alone within its budget (the global R, the
 * hosts' sum, does not bind: L stays 0). */
static void solve_group(struct kr__sim_bl *b, size_t g) {
  b->g_solved[g] = 1;
  b->g_updates[g] = 0;
  size_t n = gather(b, g);
  kr_sched_solve(b->pen, b->items, n, b->group_R[g], &b->group_L[g], NULL);
}

/* ---- the waits --------------------------------------------------------------------- */

static int64_t lambda_wait(run_t *r, suri_t *s, shost_t *sh, kr_content_t st, const kr_vhist_t *h,
                           int has_lm) {
  struct kr__sim_bl *b = r->bl;
  if (!s->wait) return 0; /* no evaluator: the frontier's default wait */
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, s->wait);
  kr_est_hints_t hints = kr_est_hints_none();
  if (sh->hint_lm) hints.last_modified = has_lm;
  kr_wait_info_t info;
  int64_t learning = kr_wait_poisson(&p, &r->ep, h, st, &hints, 0.0, &info);
  if (info.observations == 0) return learning;
  size_t k = (size_t)(s - r->s);
  size_t g = b->polite ? sh->idx : 0;
  sketch_update(b, k, g, s->lambda, info.lambda);
  s->lambda = info.lambda;
  if (b->polite) {
    if (!b->g_solved[g] || b->g_updates[g] >= r->o->solve_every) solve_group(b, g);
  } else if (!b->solved || b->updates >= b->every) {
    solve_all(b);
  }
  double m = b->L > b->group_L[g] ? b->L : b->group_L[g];
  unsigned c = b->cls[k];
  kr_sched_item_t it = {info.lambda, b->mu[k], cls_fmin(b, c), cls_fmax(b, c), 1.0};
  double rate = kr_sched_rate_box(b->pen, &it, m);
  double ms = rate > 0 ? 1000.0 / rate : 9e18;
  return kr_wait_clamp(&p, ms < 9e18 ? (int64_t)ms : INT64_MAX);
}

static int64_t nutch_wait(run_t *r, suri_t *s, const kr_curi_t *c, kr_content_t st, int64_t now) {
  kr_sched_nutch_t *d = &r->bl->nutch[s - r->s];
  int state = !c->visits                        ? KR_SCHED_UNKNOWN /* no signature yet */
              : st == KR_CONTENT_CHANGED   ? KR_SCHED_MODIFIED
              : st == KR_CONTENT_UNCHANGED ? KR_SCHED_NOTMODIFIED
                                           : KR_SCHED_UNKNOWN;
  int64_t next = kr_sched_nutch_next(&r->bl->np, d, now, state);
  return next > now ? next - now : 1;
}

static int64_t storm_wait(run_t *r, suri_t *s, const kr_curi_t *c, kr_content_t st) {
  kr_sched_storm_t *d = &r->bl->storm[s - r->s];
  /* no comparison possible (an unknown state) falls back to the default
   * interval, as the scheduler does without both signatures */
  int first = !c->visits || st == KR_CONTENT_UNKNOWN;
  int minutes = kr_sched_storm_next(&r->bl->sp, d, first, st == KR_CONTENT_CHANGED);
  return (int64_t)minutes * 60000;
}

int64_t kr__sim_baseline_wait(run_t *r, suri_t *s, shost_t *sh, const kr_curi_t *c,
                              kr_content_t st, int64_t now, const kr_vhist_t *h, int has_lm) {
  switch (r->policy) {
  case KR_SIM_NUTCH: return nutch_wait(r, s, c, st, now);
  case KR_SIM_STORMCRAWLER: return storm_wait(r, s, c, st);
  default: return lambda_wait(r, s, sh, st, h, has_lm);
  }
}

int64_t kr__sim_baseline_max_wait(const run_t *r) {
  if (!r->bl) return 0;
  if (r->policy == KR_SIM_NUTCH) return (int64_t)(r->bl->np.max_interval_s * 1000.0);
  if (r->policy == KR_SIM_STORMCRAWLER) return (int64_t)r->bl->sp.max_min * 60000;
  return 0;
}
