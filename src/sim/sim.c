/*
 * The revisit simulator's runs (see sim.h for the model and the metrics;
 * the worlds are built in sim_world.c). A run opens a real frontier in a
 * temporary state directory on a virtual clock, adds every URI, and lets
 * the timer wheel drive it: the frontier's kr__sim_on_ready pulls URIs, each
 * issued URI becomes a simulated fetch whose completion is one more wheel
 * entry at issue time + a drawn duration, and the completion plays the
 * server (status, ETag, Last-Modified, body) and the crawler's processors
 * (conditional request, mid-fetch check with validator trust, change
 * digest, wait policy) before handing the outcome, with the visit history
 * the policy read, to kr_frontier_finished(). Scoring happens on the side
 * from the ground truth. Sections here: helpers, runs (state, the loop),
 * derived figures and names; the change processes, metrics, fetches and
 * invariants are in sim_fetch.c, and sim_run.h is what the two share.
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
#include "kria/hoststate.h"
#include "kria/url.h"
#include "kria/wait.h"
#include "log.h"
#include "sim_int.h"
#include "sim_run.h"
#include "timer.h"

/* ---- helpers ------------------------------------------------------------------ */

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

/* ---- runs: state --------------------------------------------------------------- */

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
  sh->priors_on = kr_config_bool(v, KR_CFG_ADAPTIVE_INFORMED_PRIORS);
  kr_plan_host_init(&sh->alloc, r->ep.x_min);
  kr_plan_host_set_objective(&sh->alloc,
                             (kr_plan_objective_t)kr_config_enum(v, KR_CFG_ADAPTIVE_OBJECTIVE));
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
      for (unsigned b = 0; b < KR_PLAN_BUCKETS; b++) {
        sum += sh->alloc.cls[c].count[b] * kr_plan_bucket_lambda(b);
        n += sh->alloc.cls[c].count[b];
      }
    KR_LOG(KR_LOG_INFO, sh->name,
           "%s day %" PRId64 ": fetches %" PRIu64 ", budget %.4f/s, x %.3f (%s), sketch %u URIs, "
           "sum lambda %.4g/s",
           kr_sim_policy_name(r->policy), day, r->res->all.fetches,
           kr_plan_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation),
           sh->alloc.x,
           sh->alloc.state == KR_PLAN_SLACK ? "slack" : sh->alloc.state == KR_PLAN_BINDS ? "binds" : "over",
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

/* Add every URI (of the shard) at the start, then tie each to its host
 * and evaluator. */
/* The crawler restarts (opts restart_ms): every host's learned state
 * goes through the record a clean stop writes and a start reads
 * (kria/hoststate.h: the allocator's fetch window does not survive; the
 * informed priors' pool and the signals' reliability do, as in the
 * crawl), or with restart_forget is dropped as it was before the record
 * existed.
 * The oracle's sketch is the world's truth, not learned: it stays. */
static void restart_hosts(run_t *r) {
  kr_hoststate_t *st = kr_xmalloc(sizeof *st);
  uint8_t *buf = kr_xmalloc(KR_HOSTSTATE_BYTES);
  for (size_t i = 0; i < r->nhosts; i++) {
    shost_t *sh = r->hosts[i];
    kr_vtrust_t vt = *kr_frontier_host_vtrust(sh->h);
    kr_hoststate_init(st);
    if (!r->o->restart_forget) {
      st->has = KR_HS_ALLOC | KR_HS_CAPPLAN | KR_HS_VTRUST;
      st->alloc = sh->alloc;
      st->cap = sh->cap;
      st->vt = vt;
      st->has |= KR_HS_PRIORS | KR_HS_SIGNALS;
      st->pool = &sh->prior; /* lent: only read */
      st->sig = sh->sig;
      size_t n = kr_hoststate_encode(st, buf, KR_HOSTSTATE_BYTES);
      if (kr_hoststate_decode(st, buf, n)) kr_hoststate_init(st); /* as the crawl would */
    }
    if (r->policy != KR_SIM_ORACLE) {
      kr_plan_host_t a;
      kr_plan_host_init(&a, r->ep.x_min);
      if (st->has & KR_HS_ALLOC) {
        a = st->alloc;
        a.x_min = r->ep.x_min;
        if (a.x < a.x_min) a.x = a.x_min;
      } else { /* the URIs keep their classes (add_all): the clamps stay */
        a.ncls = sh->alloc.ncls;
        for (unsigned c = 0; c < a.ncls; c++) {
          a.cls[c].min_ms = sh->alloc.cls[c].min_ms;
          a.cls[c].max_ms = sh->alloc.cls[c].max_ms;
        }
      }
      /* the objective is configuration, not learned state: the record
       * does not hold it (the crawl sets it at every wait) */
      kr_plan_objective_t obj = sh->alloc.objective;
      sh->alloc = a;
      kr_plan_host_set_objective(&sh->alloc, obj);
    }
    if (st->has & KR_HS_CAPPLAN) sh->cap = st->cap;
    else memset(&sh->cap, 0, sizeof sh->cap);
    vt.confirm_run = (st->has & KR_HS_VTRUST) ? st->vt.confirm_run : 0;
    kr_frontier_host_set_vtrust(r->f, sh->h, &vt);
    if (st->has & KR_HS_SIGNALS) sh->sig = st->sig;
    else kr_sig_host_init(&sh->sig);
    kr_prior_pool_free(&sh->prior);
    if (st->has & KR_HS_PRIORS) { /* the record's pool becomes the host's */
      sh->prior = *st->pool;
      free(st->pool);
      st->pool = NULL;
    }
  }
  KR_LOG(KR_LOG_INFO, NULL, "restart: %zu hosts' learned state %s", r->nhosts,
         r->o->restart_forget ? "dropped" : "reloaded from its record");
  free(buf);
  free(st);
}

static int add_all(run_t *r) {
  const kr_sim_world_t *w = r->w;
  uint64_t now = kr_clock_now_ms(&r->clock);
  uint64_t dseed = kr__sim_mix64(r->o->seed ^ UINT64_C(0x6b726961));
  if (r->policy == KR_SIM_BAYES)
    r->bayes_g = kr_sim_world_prior(w, r->end - r->t0, r->bayes_rate, r->bayes_logw, BAYES_CELLS);
  for (size_t i = 0; i < w->n; i++) {
    if (!in_shard(r, i)) continue;
    suri_t *s = suri(r, i);
    kr__sim_truth_init(w, i, s, r->t0);
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
  if (rc < 0 && !r->err) kr__sim_fail(r, rc, "adding the URIs");
  if (rc) return rc;
  rc = kr_frontier_commit(r->f);
  if (rc < 0) {
    kr__sim_fail(r, rc, "committing the URIs");
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
    if (sh->priors_on) { /* its groups, as src/crawl/proc_wait.c forms them */
      char t[KR_PRIOR_TEMPLATE_MAX];
      size_t tn = kr_prior_template(kr__sim_url(w, u), u->url_len, t, sizeof t);
      s->ptype = kr_prior_type_key(ct, strlen(ct));
      s->ptmpl = kr_prior_key(t, tn);
    }
    if (s->wait && (r->policy == KR_SIM_POISSON || r->policy == KR_SIM_ORACLE ||
                    r->policy == KR_SIM_BAYES)) {
      kr_wait_params_t p;
      kr_wait_params_from_config(&p, s->wait);
      s->cls = (int8_t)kr_plan_host_class(&sh->alloc, p.min_ms, p.max_ms);
      if (r->policy == KR_SIM_ORACLE) {
        s->lambda = KR_MAX(kr__sim_true_rate(w, u, r->end - r->t0, 0), 1e-12);
        kr_plan_host_update(&sh->alloc, s->cls, 0, s->lambda);
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
    kr__sim_inv_check(r, i, r->end, 1);
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
    double truth = kr__sim_true_rate(w, u, duration_ms, duration_ms);
    if (!(truth > 0)) continue; /* stopped changing (a shift) */
    double q = lambda[i] / truth;
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
  if ((unsigned)policy >= KR_SIM_POLICIES)
    return kr__sim_errf(err, errlen, KR_EINVAL, "unknown policy %d", (int)policy);
  if (o->shard_of && kr_sim_policy_is_global(policy))
    return kr__sim_errf(err, errlen, KR_EINVAL,
                        "%s shares one bandwidth among all hosts: it cannot run split by host",
                        kr_sim_policy_name(policy));
  double expect = 0;
  for (size_t i = 0; i < w->n; i++)
    if (w->u[i].change == KR_SIM_POISSON_RATE)
      expect += KR_MAX(kr__sim_true_rate(w, &w->u[i], o->duration_ms, 0),
                       kr__sim_true_rate(w, &w->u[i], o->duration_ms, o->duration_ms)) *
                (double)o->duration_ms / 1000.0;
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
  kr_frontier_set_on_ready(r->f, kr__sim_on_ready, r);
  rc = add_all(r);
  if (!rc) rc = kr__sim_signals_start(r);
  if (!rc) rc = kr__sim_baseline_init(r);
  out->hosts = r->nhosts;
  if (!rc) {
    uint64_t chunk = CHUNK_MS;
    uint64_t restart = o->restart_ms > 0 ? (uint64_t)(r->t0 + o->restart_ms) : UINT64_MAX;
    for (uint64_t now = kr_clock_now_ms(&r->clock); now < (uint64_t)r->end && !r->err;
         now = kr_clock_now_ms(&r->clock)) {
      if (now >= restart) {
        restart_hosts(r);
        restart = UINT64_MAX;
      }
      uint64_t step = KR_MIN(chunk, (uint64_t)r->end - now);
      if (restart > now) step = KR_MIN(step, restart - now);
      size_t fired = kr_timers_advance(&r->timers, step);
      if (fired > CHUNK_EVENTS && chunk > 1)
        chunk /= 2;
      else if (fired < CHUNK_EVENTS / 4 && chunk < CHUNK_MS)
        chunk *= 2;
      if (r->err) break;
      if (kr_log_level >= KR_LOG_INFO) report_day(r);
      kr__sim_sample_hosts(r, (int64_t)kr_clock_now_ms(&r->clock));
      int t = kr_frontier_turn(r->f, kr_clock_now_ms(&r->clock));
      if (t < 0) kr__sim_fail(r, t, "committing");
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
      kr__sim_advance(r, &w->u[i], s, r->end);
      kr__sim_integrate(r, &w->u[i], s, r->end);
      out->all.versions += s->version;
      out->early.versions += s->version_w;
      out->all.wversions += (uint64_t)s->version * w->u[i].imp_q;
      out->early.wversions += (uint64_t)s->version_w * w->u[i].imp_q;
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
  kr__sim_signals_end(r);
  if (r->f) {
    int c = kr_frontier_close(r->f);
    if (c < 0 && !rc) rc = kr__sim_errf(err, errlen, c, "closing the frontier: %s", kr_strerror(c));
  }
  kr_timers_close(&r->timers, NULL);
  kr__sim_baseline_free(r);
  if (!o->keep_state && dir[0]) remove_state(dir);
  free(dir);
  for (size_t i = 0; i < r->nfetch_objs; i++) free(r->all_fetches[i]);
  free(r->all_fetches);
  for (size_t i = 0; i < r->nhosts; i++) {
    free(r->hosts[i]->name);
    free(r->hosts[i]->hev);
    free(r->hosts[i]->r_url);
    free(r->hosts[i]->linked);
    kr_prior_pool_free(&r->hosts[i]->prior);
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

double kr_sim_wcapture_ratio(const kr_sim_metrics_t *m) {
  return m->wversions ? (double)m->wcaptured / (double)m->wversions : 0;
}
double kr_sim_wfreshness(const kr_sim_metrics_t *m) {
  return m->wobserved_ms ? (double)m->wfresh_ms / (double)m->wobserved_ms : 0;
}
double kr_sim_harmonic(const kr_sim_metrics_t *m) {
  /* importance x 2^16, H x 2^32 */
  return m->observed_ms ? (double)m->harmonic / 0x1p48 / (double)m->observed_ms : 0;
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

static const char *const policy_names[KR_SIM_POLICIES] = {
    "fixed", "multiplicative", "poisson", "oracle", "lambdacrawl", "binarylambdacrawl",
    "lambdacrawl-polite", "nutch", "stormcrawler", "bayes"};

const char *kr_sim_policy_name(kr_sim_policy_t p) {
  return (unsigned)p < KR_SIM_POLICIES ? policy_names[p] : "?";
}

int kr_sim_policy_is_global(kr_sim_policy_t p) {
  return p == KR_SIM_LAMBDACRAWL || p == KR_SIM_BINARYLAMBDACRAWL;
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
