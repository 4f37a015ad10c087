/*
 * Change signals in a simulated run (sim.h "Signals"): which pages a
 * sitemap lists, when their signals reach the crawler (each page replays
 * its own change process on a copy of its change stream, plus false
 * signals from a stream of its own, delivered at its sitemap's polls),
 * and the crawler's side through the real module (include/kria/signal.h):
 * a believed signal makes the page due now, each visit is verified, and
 * poisson's regular wait is stretched where the host's recall is trusted.
 * Sections: options, the pages' signals, visits, the end of a run.
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "internal.h"
#include "kria/config.h"
#include "kria/error.h"
#include "sim_int.h"
#include "sim_run.h"
#include "timer.h"

#define SIG_SALT UINT64_C(0x5167a15e0c0ffee5)

static int is_(kr_slice_t k, const char *s) { return kr_slice_eq(k, kr_slice_cstr(s)); }

/* ---- options ---------------------------------------------------------------------- */

static void signals_default(kr_sim_signals_t *o) {
  if (!(o->share > 0)) o->share = 0.3;
  if (!(o->recall > 0)) o->recall = 0.9;
  if (!(o->precision > 0)) o->precision = 0.8;
  if (o->delay_ms <= 0) o->delay_ms = 3600000;
}

/* Walk KEY=VALUE items separated by commas; fn takes each. */
static int each_item(const char *s, kr_sim_signals_t *o, char *err, size_t errlen,
                     int (*fn)(kr_sim_signals_t *, kr_slice_t, kr_slice_t, char *, size_t)) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j] != ',') j++;
    const char *eq = memchr(s + i, '=', j - i);
    if (!eq)
      return kr__sim_errf(err, errlen, KR_EINVAL, "'%.*s': KEY=VALUE expected", (int)(j - i),
                          s + i);
    int rc = fn(o, kr_slice(s + i, (size_t)(eq - s - i)),
                kr_slice(eq + 1, (size_t)(s + j - eq - 1)), err, errlen);
    if (rc) return rc;
    i = j + 1;
  }
  return 0;
}

static int share_of(kr_slice_t v, double *out) {
  char buf[32], *end;
  if (v.n == 0 || v.n >= sizeof buf) return -1;
  memcpy(buf, v.p, v.n);
  buf[v.n] = 0;
  double d = strtod(buf, &end);
  if (*end || !(d >= 0 && d <= 1)) return -1;
  *out = d;
  return 0;
}

static int signal_item(kr_sim_signals_t *o, kr_slice_t k, kr_slice_t v, char *err,
                       size_t errlen) {
  double d;
  if (is_(k, "delay")) {
    int64_t ms;
    if (kr_config_parse_duration(v.p, v.n, &ms) || ms < 1000)
      return kr__sim_errf(err, errlen, KR_EINVAL, "bad delay '%.*s' (a duration, at least 1s)",
                          (int)KR_MIN(v.n, 64), v.p);
    o->delay_ms = ms;
    return 0;
  }
  double *dst = is_(k, "share")       ? &o->share
                : is_(k, "recall")    ? &o->recall
                : is_(k, "precision") ? &o->precision
                                                   : NULL;
  if (!dst)
    return kr__sim_errf(err, errlen, KR_EINVAL,
                        "unknown key '%.*s' (share, recall, precision, delay)",
                        (int)KR_MIN(k.n, 64), k.p);
  if (share_of(v, &d) || (dst != &o->share && d == 0))
    return kr__sim_errf(err, errlen, KR_EINVAL, "bad %.*s '%.*s' (a number in %s..1)",
                        (int)k.n, k.p, (int)KR_MIN(v.n, 64), v.p, dst == &o->share ? "0" : "0+");
  *dst = d;
  return 0;
}

int kr_sim_signals_parse(const char *s, kr_sim_signals_t *out, char *err, size_t errlen) {
  kr_sim_signals_t o = *out;
  o.share = -1;
  int rc = each_item(s, &o, err, errlen, signal_item);
  if (rc) return rc;
  if (o.share < 0) o.share = 0.3;
  if (o.share > 0) signals_default(&o);
  *out = o;
  return 0;
}

static int adv_item(kr_sim_signals_t *o, kr_slice_t k, kr_slice_t v, char *err,
                    size_t errlen) {
  if (is_(k, "share")) {
    if (share_of(v, &o->adv_share))
      return kr__sim_errf(err, errlen, KR_EINVAL, "bad share '%.*s' (a number in 0..1)",
                          (int)KR_MIN(v.n, 64), v.p);
    return 0;
  }
  if (is_(k, "mode")) {
    if (is_(v, "now"))
      o->adv_mode = KR_SIM_ADV_NOW;
    else if (is_(v, "never"))
      o->adv_mode = KR_SIM_ADV_NEVER;
    else
      return kr__sim_errf(err, errlen, KR_EINVAL, "bad mode '%.*s' (now, never)",
                          (int)KR_MIN(v.n, 64), v.p);
    return 0;
  }
  return kr__sim_errf(err, errlen, KR_EINVAL, "unknown key '%.*s' (share, mode)",
                      (int)KR_MIN(k.n, 64), k.p);
}

int kr_sim_signals_adversarial_parse(const char *s, kr_sim_signals_t *out, char *err,
                                     size_t errlen) {
  kr_sim_signals_t o = *out;
  o.adv_share = 1;
  int rc = each_item(s, &o, err, errlen, adv_item);
  if (rc) return rc;
  signals_default(&o);
  *out = o;
  return 0;
}

/* ---- the pages' signals --------------------------------------------------------------- */

typedef struct ssig {
  kr_wheel_entry_t e;
  run_t *run;
  uint32_t uri;          /* world index */
  uint8_t adv;           /* 0 honest, 1 + kr_sim_adv_mode_t */
  uint64_t rng;          /* the page's signal draws */
  uint64_t crng;         /* a copy of its change stream, replayed */
  int64_t c_next;        /* the replay's next change (epoch ms) */
  uint32_t c_at;         /* AT: the replay's index */
  int64_t f_next;        /* the next false signal */
  double f_rate;         /* false signals per second */
  int64_t phase;         /* its polls: t0 + phase + k delay */
  int64_t due_claim;     /* claim delivered at the armed poll */
  int64_t claim;         /* the latest claim delivered (epoch ms), 0 none */
  int64_t last_visit;    /* issue time of the previous visit, 0 none */
} ssig_t;

static int acts(const run_t *r) { return r->policy != KR_SIM_FIXED; }

/* The replayed change process: the time of the next change, as
 * advance_to (sim_fetch.c) plays it (drawn by sim_world.c). */
static int64_t replay_next(run_t *r, ssig_t *g) {
  const wuri_t *u = &r->w->u[g->uri];
  int64_t t = g->c_next;
  if (t == INT64_MAX) return t;
  switch (u->change) {
  case KR_SIM_POISSON_RATE: /* with its shift and cycles: sim_world.c */
    g->c_next = kr__sim_next_change(r->w, u, &g->crng, r->t0, g->c_next);
    break;
  case KR_SIM_EVERY: g->c_next += u->period_ms; break;
  case KR_SIM_AT:
    g->c_at++;
    g->c_next = g->c_at < u->at_n ? r->t0 + r->w->at[u->at_off + g->c_at] : INT64_MAX;
    break;
  default: g->c_next = INT64_MAX;
  }
  return t;
}

/* The page's first poll at or after t. */
static int64_t poll_after(const run_t *r, const ssig_t *g, int64_t t) {
  int64_t d = r->o->signals.delay_ms, base = r->t0 + g->phase;
  if (t <= base) return base;
  return base + (t - base + d - 1) / d * d;
}

static void on_signal(kr_wheel_entry_t *e);

/* Arm the page's next delivery: the first poll after which a signal
 * (true, drawn with the recall, or false) is due, its claim the latest
 * signalled time before it. Bounded: each turn consumes a change. */
static void arm(run_t *r, ssig_t *g, int64_t from) {
  if (g->adv == 1 + KR_SIM_ADV_NEVER) return;
  if (g->adv == 1 + KR_SIM_ADV_NOW) {
    int64_t p = poll_after(r, g, from + 1);
    if (p >= r->end) return;
    g->due_claim = p;
    kr_timer_start(&r->timers, &g->e, (uint64_t)p, on_signal);
    return;
  }
  const kr_sim_signals_t *o = &r->o->signals;
  for (int guard = 0; guard < 1000000; guard++) {
    int64_t t = KR_MIN(g->c_next, g->f_next);
    if (t >= r->end) return;
    int64_t p = poll_after(r, g, t), claim = 0;
    while (KR_MIN(g->c_next, g->f_next) <= p) {
      if (g->c_next <= g->f_next) {
        int64_t tc = replay_next(r, g);
        if (kr__sim_unif(&g->rng) < o->recall) claim = tc;
      } else {
        claim = KR_MAX(claim, g->f_next);
        g->f_next += kr__sim_exp_ms(&g->rng, g->f_rate);
      }
    }
    if (claim && p < r->end) {
      g->due_claim = claim;
      kr_timer_start(&r->timers, &g->e, (uint64_t)p, on_signal);
      return;
    }
  }
}

/* A signal reaches the crawler at the page's poll. */
static void on_signal(kr_wheel_entry_t *e) {
  ssig_t *g = container_of(e, ssig_t, e);
  run_t *r = g->run;
  int64_t now = (int64_t)kr_clock_now_ms(&r->clock);
  suri_t *s = suri(r, g->uri);
  shost_t *sh = r->hosts[s->host];
  kr_sig_rel_t *rel = &sh->sig.src[KR_SIG_LASTMOD];
  g->claim = KR_MAX(g->claim, g->due_claim);
  r->res->sig.seen++;
  kr_sig_seen(rel);
  if (acts(r) && kr_sig_is_news(g->due_claim, g->last_visit) && kr_sig_pulls(rel, &r->sigp)) {
    const wuri_t *u = &r->w->u[g->uri];
    kr_link_t l = {.url = kr__sim_url(r->w, u), .url_len = u->url_len, .hop_path = "",
                   .hop_len = 0, .next_at = (uint64_t)now, .directive = KR_DIRECTIVE_HIGH,
                   .flags = KR_LINK_RESCHEDULE};
    int rc = kr_frontier_add(r->f, &l, (uint64_t)now);
    if (rc < 0) {
      kr__sim_fail(r, rc, "pulling a signalled page forward");
      return;
    }
    r->res->sig.pulled++;
  }
  arm(r, g, now);
}

/* The page's share draw and a host's adversarial draw: hashes of the
 * world's seed and the URI (the host name), so the same every run. */
static double draw(uint64_t seed, uint64_t key) {
  uint64_t z = kr__sim_mix64(seed * UINT64_C(0x9e3779b97f4a7c15) ^ key ^ SIG_SALT);
  return ((double)(z >> 11) + 0.5) * 0x1p-53;
}

static uint64_t name_hash(const char *s) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (; *s; s++) h = (h ^ (uint8_t)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s)) * UINT64_C(1099511628211);
  return h;
}

int kr__sim_signals_start(run_t *r) {
  const kr_sim_signals_t *o = &r->o->signals;
  const kr_sim_world_t *w = r->w;
  kr_sig_params_default(&r->sigp);
  const kr_config_view_t *v = kr_config_global(r->cfg); /* as the crawl's adaptive.signal-* */
  r->sigp.precision_min = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_PRECISION);
  r->sigp.recall_min = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_RECALL);
  r->sigp.max_stretch = kr_config_float(v, KR_CFG_ADAPTIVE_SIGNAL_MAX_STRETCH);
  r->sigp.probation = (uint32_t)kr_config_int(v, KR_CFG_ADAPTIVE_SIGNAL_PROBATION);
  if (!(o->share > 0)) return 0;
  for (size_t j = 0; j < r->nhosts; j++) {
    shost_t *sh = r->hosts[j];
    kr_sig_host_init(&sh->sig);
    if (o->adv_share > 0 && draw(w->seed, name_hash(sh->name)) < o->adv_share)
      sh->sig_adv = (uint8_t)(1 + o->adv_mode);
  }
  size_t n = 0;
  for (size_t i = 0; i < w->n; i++)
    if (in_shard(r, i) && !(w->ev && w->ev[i].born) && draw(w->seed, w->u[i].fp) < o->share) n++;
  if (!n) return 0;
  r->sig = kr_xcalloc(n, sizeof *r->sig);
  for (size_t i = 0; i < w->n; i++) {
    if (!in_shard(r, i) || (w->ev && w->ev[i].born) || !(draw(w->seed, w->u[i].fp) < o->share))
      continue;
    const wuri_t *u = &w->u[i];
    suri_t *s = suri(r, i);
    ssig_t *g = &r->sig[r->nsig++];
    s->sig = (uint32_t)r->nsig;
    g->run = r;
    g->uri = (uint32_t)i;
    g->adv = r->hosts[s->host]->sig_adv;
    g->rng = kr__sim_mix64(w->seed ^ u->fp ^ SIG_SALT);
    g->phase = (int64_t)(kr__sim_mix64(u->fp ^ SIG_SALT) % (uint64_t)o->delay_ms);
    /* the change stream as kr__sim_truth_init left it: nothing looked yet */
    g->crng = s->rng;
    g->c_next = s->next_change;
    g->c_at = s->at_idx;
    double lambda = kr__sim_true_rate(w, u, r->end - r->t0, 0);
    g->f_rate = o->precision < 1 ? o->recall * lambda * (1 - o->precision) / o->precision : 0;
    g->f_next = g->f_rate > 0 ? r->t0 + kr__sim_exp_ms(&g->rng, g->f_rate) : INT64_MAX;
    arm(r, g, r->t0);
  }
  r->res->sig.pages = r->nsig;
  return 0;
}

/* ---- visits --------------------------------------------------------------------------- */

void kr__sim_signal_visit(run_t *r, size_t i, suri_t *s, shost_t *sh, const kr_curi_t *c,
                          kr_content_t st) {
  (void)i;
  s->stretch = 1;
  s->sig_visit = 0;
  if (!s->sig || !acts(r)) return;
  ssig_t *g = &r->sig[s->sig - 1];
  kr_sig_rel_t *rel = &sh->sig.src[KR_SIG_LASTMOD];
  kr_sim_sigstats_t *S = &r->res->sig;
  int64_t ti = (int64_t)c->issued_at;
  if (c->visits && g->last_visit && st != KR_CONTENT_UNKNOWN) {
    int signalled = kr_sig_is_news(g->claim, g->last_visit);
    s->sig_visit = signalled && kr_sig_pulls(rel, &r->sigp);
    switch (kr_sig_record(rel, &r->sigp, signalled, st == KR_CONTENT_CHANGED)) {
    case KR_SIG_TP: S->tp++; break;
    case KR_SIG_FP: S->fp++; break;
    case KR_SIG_FN: S->fn++; break;
    default: break;
    }
  }
  g->last_visit = ti;
  if (r->policy != KR_SIM_POISSON && r->policy != KR_SIM_ORACLE && r->policy != KR_SIM_BAYES)
    return;
  s->stretch = (float)kr_sig_stretch(rel, &r->sigp, c->fp, c->visits);
  if (s->stretch > 1) S->stretched++;
}

double kr__sim_signal_true_rate(const run_t *r, const suri_t *s) {
  if (!s->sig) return 0;
  const ssig_t *g = &r->sig[s->sig - 1];
  /* in force at its last visit (a shifting world: sim.h) */
  return kr__sim_true_rate(r->w, &r->w->u[g->uri], r->end - r->t0,
                           g->last_visit ? g->last_visit - r->t0 : 0);
}

/* ---- the end of a run ------------------------------------------------------------------ */

void kr__sim_signals_end(run_t *r) {
  for (size_t k = 0; k < r->nsig; k++) kr_timer_stop(&r->sig[k].e);
  if (r->sig && acts(r) && !r->err) {
    for (size_t j = 0; j < r->nhosts; j++) {
      const kr_sig_rel_t *rel = &r->hosts[j]->sig.src[KR_SIG_LASTMOD];
      if (rel->verified < r->sigp.probation) continue;
      if (!kr_sig_pulls(rel, &r->sigp)) continue;
      r->res->sig.hosts_pulling++;
      if (kr_sig_recall_lb(rel, &r->sigp) >= r->sigp.recall_min) r->res->sig.hosts_stretching++;
    }
  }
  free(r->sig);
  r->sig = NULL;
  r->nsig = 0;
}
