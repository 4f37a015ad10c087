/*
 * A simulated run's world in motion (see sim.c for the run around it):
 * the change processes (drawn by sim_world.c) played up to each visit,
 * the freshness, age and harmonic penalty integrated from them, the simulated fetches and the crawler's
 * processors replayed on their answers (on_fetch_done), and the
 * invariants checked against the events of a long crawl.
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
#include "sim_run.h"
#include "timer.h"

/* ---- change processes --------------------------------------------------------- */

/* One change at tc: the metrics integrated up to it first (they are
 * piecewise constant between changes), then the harmonic term of the
 * archive's copy moves from H(N) to H(N + 1). */
static void one_change(run_t *r, const wuri_t *u, suri_t *s, int64_t tc) {
  kr__sim_integrate(r, u, s, tc);
  s->version++;
  s->last_change = tc;
  if (s->cap_version >= 0) s->hq += (UINT64_C(1) << 32) / (s->version - (uint32_t)s->cap_version);
}

static void advance_to(run_t *r, const wuri_t *u, suri_t *s, int64_t t) {
  const kr_sim_world_t *w = r->w;
  int64_t t0 = r->t0;
  switch (u->change) {
  case KR_SIM_POISSON_RATE:
    /* One draw per change, whenever it is looked at: the changes do not
     * depend on the visits, so every policy sees the same ones. */
    while (s->next_change <= t) {
      one_change(r, u, s, s->next_change);
      s->next_change = kr__sim_next_change(w, u, &s->rng, t0, s->next_change);
    }
    break;
  case KR_SIM_EVERY:
    if (t >= s->next_change && !s->acc_from) { /* nothing to integrate: jump */
      int64_t k = (t - t0) / u->period_ms;
      s->version = (uint32_t)KR_MIN(k, (int64_t)UINT32_MAX);
      s->last_change = t0 + k * u->period_ms;
      s->next_change = s->last_change + u->period_ms;
    }
    while (s->next_change <= t) {
      one_change(r, u, s, s->next_change);
      s->next_change += u->period_ms;
    }
    break;
  case KR_SIM_AT:
    while (s->at_idx < u->at_n && t0 + w->at[u->at_off + s->at_idx] <= t) {
      one_change(r, u, s, t0 + w->at[u->at_off + s->at_idx]);
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
void kr__sim_advance(run_t *r, const wuri_t *u, suri_t *s, int64_t t) {
  if (!s->w_done && t >= r->wend) {
    advance_to(r, u, s, r->wend);
    s->version_w = s->version;
    s->w_done = 1;
  }
  advance_to(r, u, s, t);
}

void kr__sim_truth_init(const kr_sim_world_t *w, size_t i, suri_t *s, int64_t t0) {
  const wuri_t *u = &w->u[i];
  s->rng = kr__sim_stream(w, u);
  s->cap_version = -1;
  s->seen_version = -1;
  s->cls = -1;
  switch (u->change) {
  case KR_SIM_POISSON_RATE:
    kr__sim_poisson_start(w, u, &s->rng, t0, &s->last_change, &s->next_change);
    break;
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

/* ---- runs: metrics --------------------------------------------------------------- */

/* Integrate freshness, age and the harmonic penalty over [a, b] (ms),
 * within which no change happens, for a copy fresh until stale_at, into
 * m. imp_q: the URI's importance x 2^16; hq: H(N) x 2^32. */
static void integrate_piece(kr_sim_metrics_t *m, int64_t a, int64_t b, int64_t stale_at,
                            uint64_t imp_q, uint64_t hq) {
  if (b <= a) return;
  uint64_t len = (uint64_t)(b - a);
  m->observed_ms += len;
  m->wobserved_ms += (kr_sim_u128)imp_q * len;
  m->harmonic += (kr_sim_u128)imp_q * hq * len;
  if (a < stale_at) {
    uint64_t fresh = (uint64_t)(KR_MIN(b, stale_at) - a);
    m->fresh_ms += fresh;
    m->wfresh_ms += (kr_sim_u128)imp_q * fresh;
  }
  if (b > stale_at) {
    uint64_t x0 = (uint64_t)(KR_MAX(a, stale_at) - stale_at);
    uint64_t x1 = (uint64_t)(b - stale_at);
    m->age_ms2 += (kr_sim_u128)x1 * x1 - (kr_sim_u128)x0 * x0;
  }
}

void kr__sim_integrate(run_t *r, const wuri_t *u, suri_t *s, int64_t t) {
  if (!s->acc_from || t <= s->acc_from) return;
  integrate_piece(&r->res->all, s->acc_from, t, s->stale_at, u->imp_q, s->hq);
  if (s->acc_from < r->wend)
    integrate_piece(&r->res->early, s->acc_from, KR_MIN(t, r->wend), s->stale_at, u->imp_q, s->hq);
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

void kr__sim_fail(run_t *r, int rc, const char *what) {
  if (!r->err) {
    r->err = rc;
    kr__sim_errf(r->errbuf, r->errlen, rc, "%s: %s", what, kr_strerror(rc));
  }
}

static void on_fetch_done(kr_wheel_entry_t *e);

/* ---- runs: events and invariants -------------------------------------------------
 * The outcomes below are the crawler's processors replayed: proc_post.c's
 * build_outcome (a refused connection, a 503/429, a robots.txt answering
 * 5xx) and proc_prefetch.c's robots_run and robots-update (the
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

static int64_t uri_max_wait(const run_t *r, const suri_t *s, const shost_t *sh) {
  if (r->policy == KR_SIM_FIXED) return r->o->fixed_interval_ms;
  int64_t own = kr__sim_baseline_max_wait(r); /* nutch's, stormcrawler's own */
  if (own > 0) return own;
  if (s->wait) {
    kr_wait_params_t p;
    kr_wait_params_from_config(&p, s->wait);
    return p.max_ms;
  }
  return (int64_t)sh->fo.default_wait_ms;
}

/* Invariant 1 over URI i's time since its last answer up to t (epoch
 * ms), while it was live; invariant 2 when its host recovered within
 * that time. final: t is the end of the run, not an answer. */
void kr__sim_inv_check(run_t *r, size_t i, int64_t t, int final) {
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
  kr__sim_inv_check(r, i, t, 0);
  v->last = t;
  if (success) v->due = t + wait;
}

/* Hourly: each host's head lateness (kr_frontier_host_report), by quarter. */
void kr__sim_sample_hosts(run_t *r, int64_t now) {
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
  if (rc < 0) kr__sim_fail(r, rc, "recording a visit");
  pull(r);
}

/* robots.txt answered (or not): the crawl's robots-update
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
      kr__sim_fail(r, rc, "reviving a URI robots.txt allows again");
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
    if (rc == KR_EDB) kr__sim_fail(r, rc, "scheduling robots.txt");
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

/* One answered visit as on_fetch_done plays it, step by step. */
typedef struct visit {
  sfetch_t *fx;
  kr_curi_t *c;
  const wuri_t *u;
  suri_t *s;
  shost_t *sh;
  const wev_t *ev;             /* the URI's events, NULL none */
  int64_t now;
  int64_t ti;                  /* the server answered then */
  int64_t off;                 /* ti from the start */
  kr_sim_metrics_t *ms[2];     /* all, and early while in the window */
  int dead;
  /* the content: a hub's links are part of it */
  size_t nlinks;
  uint64_t ver;
  int64_t last_change;
  /* the server's validators for this response */
  char etag[ETAG_LEN + 1];
  size_t etag_len;
  int64_t lm;                  /* epoch s, 0 none */
  /* the request the crawler makes and its answer */
  int has_hist, has_val;
  kr_vtrust_t trust;
  kr_vtrust_mode_t mode;
  int status;
  uint64_t bytes;
  kr_content_t st;
  uint64_t digest;
  int full;                    /* a whole body came (not a 304 or an abort) */
} visit_t;

/* The long crawl's events: the host refuses connections, or the URI is
 * busy (sim.h "Events"). 1 when the visit ended so. */
static int answer_event(run_t *r, visit_t *v) {
  shost_t *sh = v->sh;
  const wev_t *ev = v->ev;
  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  if (host_in(r, sh, KR__SIM_H_OUTAGE, v->ti)) {
    oc.kind = KR_OUTCOME_RETRY; /* as proc_post.c builds a connect failure */
    oc.status = KR_ECONNREFUSED;
    oc.host_error = 1;
    r->res->ev.refused++;
    slot_done(r, sh, v->c, v->now, 1);
    v->s->in_flight = 0;
    finish_plain(r, v->fx, &oc, NULL, 0);
    return 1;
  }
  if (ev && v->off >= ev->busy_from && v->off < ev->busy_until) {
    oc.kind = KR_OUTCOME_BACKOFF;
    oc.status = ev->busy_status;
    oc.bytes = 512;
    /* Retry-After through the crawler's own parser */
    char ra[64] = "";
    if (ev->ra_kind == 1) snprintf(ra, sizeof ra, "%" PRId64, ev->ra_ms / 1000);
    if (ev->ra_kind == 2) kr_validators_date_format((v->ti + ev->ra_ms) / 1000, ra);
    uint64_t d;
    if (ra[0] && kr_frontier_parse_retry_after(ra, strlen(ra), (uint64_t)v->now, &d) == 0)
      oc.retry_after_ms = d;
    r->res->ev.busy++;
    slot_done(r, sh, v->c, v->now, 1);
    v->s->in_flight = 0;
    inv_answer(r, v->fx->uri, v->ti, 0, 0);
    finish_plain(r, v->fx, &oc, NULL, 0);
    return 1;
  }
  return 0;
}

/* A hub's list is part of its content: its ETag, Last-Modified and
 * digest move when a page is born or unlinked. */
static void hub_content(run_t *r, visit_t *v) {
  const kr_sim_world_t *w = r->w;
  shost_t *sh = v->sh;
  v->nlinks = 0;
  v->ver = v->s->version;
  v->last_change = v->s->last_change;
  if (v->dead || sh->hub != v->fx->uri + 1) return;
  v->nlinks = hub_links(r, sh, v->u, v->ti);
  v->ver += (uint64_t)v->nlinks << 32;
  for (size_t k = 0; k < sh->nlinked; k++) {
    const wev_t *le = &w->ev[sh->linked[k]];
    if (le->born <= v->off) v->last_change = KR_MAX(v->last_change, r->t0 + le->born);
    if (le->unlinked_at <= v->off)
      v->last_change = KR_MAX(v->last_change, r->t0 + le->unlinked_at);
  }
}

/* The server's validators for this response. */
static void server_validators(run_t *r, visit_t *v) {
  const wuri_t *u = v->u;
  v->etag[0] = 0;
  v->lm = 0;
  switch (v->dead ? KR_SIM_VAL_MISSING : u->validators) {
  case KR_SIM_VAL_CORRECT:
    if (u->is_volatile) {
      make_etag(v->etag,
                kr__sim_mix64(u->fp ^ kr__sim_mix64((v->ver << 32) ^ v->s->responses)));
    } else {
      make_etag(v->etag, kr__sim_mix64(u->fp ^ kr__sim_mix64(v->ver + 1)));
      v->lm = v->last_change / 1000;
    }
    break;
  case KR_SIM_VAL_LYING:
    make_etag(v->etag, kr__sim_mix64(u->fp));
    v->lm = (r->t0 - YEAR_MS) / 1000;
    break;
  default:
    break;
  }
  v->etag_len = strlen(v->etag);
}

/* The request: conditional when the host's validators are trusted. */
static void request_status(visit_t *v) {
  const kr_curi_t *c = v->c;
  v->has_hist = c->visits > 0;
  v->has_val = !v->dead && v->has_hist && (c->etag_len > 0 || c->last_modified > 0);
  v->trust = *kr_frontier_host_vtrust(c->host);
  v->mode = v->has_val ? kr_vtrust_mode(&v->trust, &v->sh->trust, c->fp, c->visits, v->ti)
                       : KR_VTRUST_PROBATION;
  int conditional = v->has_val && v->sh->conditional && v->mode == KR_VTRUST_USE;
  v->status = v->dead ? v->ev->dead_status : 200;
  if (conditional) {
    /* RFC 9110 13.2.2: If-None-Match first, If-Modified-Since without it */
    if (c->etag_len)
      v->status = v->etag_len && c->etag_len == v->etag_len &&
                          !memcmp(c->etag, v->etag, v->etag_len)
                      ? 304
                      : 200;
    else
      v->status = v->lm && v->lm <= c->last_modified ? 304 : 200;
  }
}

/* The answer as the crawler's processors take it: a 304, a body the
 * mid-fetch check aborts, or a whole body and its change digest. */
static void receive(run_t *r, visit_t *v) {
  const kr_curi_t *c = v->c;
  const wuri_t *u = v->u;
  shost_t *sh = v->sh;
  const kr_sim_opts_t *o = r->o;
  v->digest = 0;
  v->full = 0;
  if (v->status == 304) {
    v->bytes = 0;
    v->st = KR_CONTENT_UNCHANGED;
    kr_vtrust_record(&v->trust, &sh->trust, 0, KR_CONTENT_UNKNOWN, v->ti);
    for (int k = 0; k < 2; k++)
      if (v->ms[k]) v->ms[k]->not_modified++;
    return;
  }
  int predicted = 1;
  if (v->has_val) {
    char date[KR_HTTP_DATE_SIZE] = "";
    if (v->lm) kr_validators_date_format(v->lm, date);
    kr_val_result_t vr;
    predicted = kr_validators_check(sh->scheme, sh->etag_mode, kr_slice(c->etag, c->etag_len),
                                    kr_slice(v->etag, v->etag_len), c->last_modified,
                                    kr_slice(date, strlen(date)), &vr);
  }
  if (v->has_val && sh->midfetch && v->mode == KR_VTRUST_USE && !predicted) {
    v->bytes = KR_MIN(u->size, o->abort_bytes);
    v->st = KR_CONTENT_UNCHANGED;
    kr_vtrust_record(&v->trust, &sh->trust, 0, KR_CONTENT_UNKNOWN, v->ti);
    for (int k = 0; k < 2; k++)
      if (v->ms[k]) v->ms[k]->aborted++;
    return;
  }
  v->full = 1;
  v->bytes = v->dead ? 512 : u->size;
  uint64_t salt = u->is_volatile && !o->strip ? v->s->responses : 0;
  v->digest = v->dead ? kr__sim_mix64(u->fp ^ UINT64_C(0xdead) ^ v->ev->dead_status)
                      : kr__sim_mix64(u->fp ^ kr__sim_mix64((v->ver << 32) + salt + 7));
  if (!v->has_hist)
    v->st = KR_CONTENT_CHANGED;
  else
    v->st = c->digest_len == 8 && !memcmp(c->digest, &v->digest, 8) ? KR_CONTENT_UNCHANGED
                                                                   : KR_CONTENT_CHANGED;
  if (v->has_val) kr_vtrust_record(&v->trust, &sh->trust, predicted, v->st, v->ti);
}

/* Scoring from the ground truth (a dead page's answer archives no
 * version). */
static void score(run_t *r, visit_t *v) {
  suri_t *s = v->s;
  int captured = 0;
  if (v->full && !v->dead && s->cap_version != (int32_t)s->version) {
    captured = 1;
    if (s->acc_from == 0) {
      r->res->uris_visited++;
      r->res->first_visit_ms += (uint64_t)(v->ti - r->t0);
    }
    s->cap_version = (int32_t)s->version;
    s->hq = 0;
    s->stale_at = s->next_change;
    s->acc_from = v->ti;
  }
  int unchanged_visit = !v->dead && s->seen_version == (int32_t)s->version;
  int lost = !v->dead && !v->full && s->cap_version != (int32_t)s->version;
  s->seen_version = (int32_t)s->version;
  for (int k = 0; k < 2; k++) {
    kr_sim_metrics_t *m = v->ms[k];
    if (!m) continue;
    m->fetches++;
    m->body_bytes += v->bytes;
    /* the version live at the start is every policy's first download */
    m->captured += (uint64_t)(captured && s->version > 0);
    m->wcaptured += captured && s->version > 0 ? v->u->imp_q : 0;
    m->lost_by_validators += (uint64_t)lost;
    if (unchanged_visit) {
      m->unchanged_visits++;
      m->unchanged_full_bytes += v->u->size;
      m->unchanged_body_bytes += v->bytes;
    }
  }
}

/* The wait, the outcome, and the visit handed to the frontier. */
static void finish_visit(run_t *r, visit_t *v) {
  kr_curi_t *c = v->c;
  suri_t *s = v->s;
  shost_t *sh = v->sh;
  int64_t now = v->now;
  int64_t age_s = v->lm && v->ti / 1000 >= v->lm ? v->ti / 1000 - v->lm : -1;
  uint8_t hist[KR_VHIST_BYTES];
  size_t hist_len = 0;
  kr__sim_signal_visit(r, v->fx->uri, s, sh, c, v->st); /* verified; s->stretch */
  /* every fetch takes one of the host's slots: the pulled ones are the
   * signals' share, the others the allocator's realised-rate feedback
   * (signal.h "budget", estimate.h), as proc_wait.c does */
  kr_sig_host_fetched(&sh->sig, s->sig_visit);
  if (!s->sig_visit) kr_plan_host_fetched(&sh->alloc, now);
  if (r->policy == KR_SIM_ORACLE && s->cls >= 0 && v->u->shift_at != KR__SIM_NEVER) {
    /* the oracle knows the rate in force (sim.h): its host's sketch too */
    double l = KR_MAX(kr__sim_true_rate(r->w, v->u, r->end - r->t0, v->off), 1e-12);
    if (l != s->lambda) {
      kr_plan_host_update(&sh->alloc, s->cls, s->lambda, l);
      s->lambda = l;
    }
  }
  int64_t wait = kr__sim_next_wait(r, v->u, s, sh, c, v->st, now, age_s, v->lm != 0, hist, &hist_len);
  s->last_wait = wait;
  s->visits++;

  inv_answer(r, v->fx->uri, v->ti, 1, wait > 0 ? wait : (int64_t)sh->fo.default_wait_ms);
  uint64_t fetch_ms = (uint64_t)(now - v->ti);
  slot_done(r, sh, c, now, 1);
  s->in_flight = 0;

  kr_outcome_t oc;
  memset(&oc, 0, sizeof oc);
  oc.kind = KR_OUTCOME_SUCCESS;
  oc.status = v->status;
  oc.fetch_ms = fetch_ms;
  oc.bytes = v->bytes;
  oc.wait_ms = wait > 0 ? (uint64_t)wait : 0;
  oc.content = v->st == KR_CONTENT_CHANGED ? 1 : 0;
  if (!v->has_hist) {
    oc.content_type = r->w->types[v->u->ctype];
    oc.content_type_len = strlen(oc.content_type);
  }
  if (v->full) {
    oc.digest = (const uint8_t *)&v->digest;
    oc.digest_len = 8;
  }
  if (v->etag_len) {
    oc.etag = v->etag;
    oc.etag_len = v->etag_len;
  }
  oc.last_modified = v->lm;
  oc.history = hist;
  oc.history_len = hist_len;
  fetch_free(r, v->fx);
  size_t nlinks = v->nlinks;
  r->res->ev.links += nlinks;
  int rc = kr_frontier_finished(r->f, c, &oc, nlinks ? r->links : NULL, nlinks, (uint64_t)now);
  if (rc < 0) kr__sim_fail(r, rc, "recording a visit");
}

/* A simulated fetch completes: the server answers as of its issue time,
 * the crawler's processors take the answer, the run scores it, and the
 * frontier gets the outcome. */
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
  visit_t v;
  v.fx = fx;
  v.c = fx->c;
  v.u = &r->w->u[fx->uri];
  v.s = suri(r, fx->uri);
  v.sh = r->hosts[v.s->host];
  v.now = (int64_t)kr_clock_now_ms(&r->clock);
  v.ti = (int64_t)v.c->issued_at;
  v.off = v.ti - r->t0;
  v.ms[0] = &r->res->all;
  v.ms[1] = v.ti < r->wend ? &r->res->early : NULL;

  kr__sim_advance(r, v.u, v.s, v.ti);
  kr__sim_integrate(r, v.u, v.s, v.ti);

  v.ev = uri_ev(r, fx->uri);
  if (answer_event(r, &v)) return;
  v.dead = v.ev && v.off >= v.ev->dead_at;
  v.s->responses++;
  hub_content(r, &v);
  server_validators(r, &v);
  request_status(&v);
  receive(r, &v);
  if (v.dead) r->res->ev.dead++;
  if (!v.full) v.nlinks = 0; /* a 304 or an abort: no body, no links */
  score(r, &v);
  if (v.has_val) kr_frontier_host_set_vtrust(r->f, v.c->host, &v.trust);
  finish_visit(r, &v);
  pull(r);
}

static void pull(run_t *r) {
  if (r->err) return;
  /* bounded: every URI issued is one fetch in flight */
  for (size_t guard = 0; guard < 1000000; guard++) {
    kr_curi_t *c;
    int rc = kr_frontier_next(r->f, kr_clock_now_ms(&r->clock), &c);
    if (rc < 0) {
      kr__sim_fail(r, rc, "picking the next URI");
      return;
    }
    if (rc == 0) return;
    start_fetch(r, c);
  }
}

void kr__sim_on_ready(kr_frontier_t *f, void *ud) {
  (void)f;
  pull(ud);
}

