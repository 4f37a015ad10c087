/*
 * The revisit processor (post phase, between the outcome and finish): how
 * long until the next visit, and what a changed page or feed pulls
 * forward. The thesis' WaitEvaluator stack (6.3.2) plus chapter 8.
 *
 * Wait. For a successful visit (any HTTP status) of a URI other than
 * robots.txt: the visit history gets this visit (interval since the last
 * one, content state, the version's age Date - Last-Modified when the
 * response has both) and goes to the frontier with the outcome. The
 * evaluators of the host's config view ([host] overrides applied) are
 * tried most specific first: the first whose content-type pattern matches
 * the response's Content-Type (a 304's: the stored one) decides, with its
 * policy (wait.h):
 *   multiplicative  the thesis' algorithm from the previous wait, the
 *                   content state and the overdue time, raised to the
 *                   host's capacity floor (adaptive.capacity-plan,
 *                   estimate.h: crawl.log "wait:NAME/multiplicative/
 *                   capacity" and "cap:<the thesis' wait>");
 *   poisson         the change rate estimated from the history, the
 *                   prior from initial-wait and the hints (sitemap
 *                   changefreq, no Last-Modified, depth from the seed),
 *                   the changes per visit x of the host's allocator
 *                   (estimate.h) for the host's adaptive.objective
 *                   (versions: one x for every URI; freshness and
 *                   harmonic: x from the multiplier and the URI's rate),
 *                   solved within its politeness budget
 *                   valence / (fetch + delay) x
 *                   adaptive.budget-utilisation, corrected by the
 *                   host's realised fetch rate (every fetch of a host
 *                   with an allocator is counted, estimate.h); the
 *                   visits pulled forward by believed change signals
 *                   are counted apart, and their share of the fetches
 *                   is taken out of the budget (signal.h "budget").
 * With adaptive.informed-priors both policies start from the URI's
 * informed prior (kria/prior.h): its host's pool of evidence by path
 * template and content type gives poisson its prior rate and weight and
 * multiplicative its first wait (x_min / the prior's rate); every visit
 * feeds the pool. The pool lives with the allocator and is part of the
 * host's learned state (adapthost.c).
 * No evaluator matching: crawl.default-wait. The wait becomes the URI's
 * next_at through the frontier's success outcome. crawl.log gets the
 * thesis' annotations wt:<wait>,<visits>vis,<versions>ver,ov:<overdue>
 * and wait:<evaluator>/<policy>[/<estimator>].
 *
 * What a changed page or feed pulls forward, and the change signals'
 * claims verified by a visit and stretching a poisson wait: claims.c.
 * The per-host allocators, plans, signals' reliability and priors' pools
 * with their learned state: adapthost.c.
 * Sections: the wait, the processor.
 */
#include <string.h>

#include "adapthost.h"
#include "claims.h"
#include "internal.h"
#include "procs.h"

#define ALLOC_SOLVE_EVERY 64 /* sketch updates between re-solves of x */


/* The visit history with this visit: the outcome points into it until
 * finish has handed it to the frontier. */
typedef struct wait_ctx {
  uint8_t hist[KR_VHIST_BYTES];
  size_t hist_len;
} wait_ctx_t;

static const kr_chain_ctx_def_t wait_ctx_def = {.name = "wait", .size = sizeof(wait_ctx_t)};

/* ---- the wait -------------------------------------------------------------------------- */

/* Seconds since the previous visit, at least 1 after one (estimate.h). */
static int64_t interval_s(const kr_curi_t *u, uint64_t now) {
  if (!u->last_visit) return 0;
  uint64_t d = now > u->last_visit ? (now - u->last_visit + 999) / 1000 : 1;
  return d ? (int64_t)d : 1;
}

/* Date - Last-Modified of the response, -1 when either is missing. */
static int64_t version_age(const kr_http_resp_t *r) {
  if (!r || !r->last_modified.n) return -1;
  kr_slice_t d = kr_http_resp_header(r, "Date");
  int64_t date, lm;
  if (!d.p || kr_validators_date_parse(d.p, d.n, &date) ||
      kr_validators_date_parse(r->last_modified.p, r->last_modified.n, &lm))
    return -1;
  return date >= lm ? date - lm : -1;
}

/* Hops from the seed (links and everything else alike). */
static int depth_of(const kr_curi_t *u) { return (int)(u->hop_len > 1000 ? 1000 : u->hop_len); }

/* Fetches/s f's host allows (estimate.h kr_plan_budget): valence over a
 * slot's cycle — this fetch and the politeness delay after it. */
static double host_budget(const kr_fetch_t *f) {
  const kr_hostcfg_t *hc = f->hc;
  uint64_t cycle = f->fetch_duration_ms + kr_frontier_host_delay(f->crawl->frontier, f->curi->host,
                                                                 f->fetch_duration_ms);
  return kr_plan_budget((int)hc->fopts.host_valence, (int64_t)cycle, hc->utilisation);
}

/* The URI's informed prior (kria/prior.h): its groups in its host's pool. */
typedef struct uri_prior {
  kr_prior_pool_t *pool; /* NULL: adaptive.informed-priors off */
  kr_prior_params_t pp;
  uint64_t type, tmpl;
  double root;           /* the evaluator's lambda0 with the hints */
  kr_prior_est_t est;
} uri_prior_t;

static void uri_prior(kr_fetch_t *f, kr_slice_t ct, const kr_wait_params_t *p,
                      const kr_est_hints_t *hints, const kr_vhist_t *h, uri_prior_t *up) {
  const kr_hostcfg_t *hc = f->hc;
  const kr_curi_t *u = f->curi;
  up->root = kr_est_prior(&hc->est, p->initial_ms, hints);
  up->pool = NULL;
  up->est = (kr_prior_est_t){up->root, hc->est.prior_weight, 0, 0, 0};
  if (!hc->informed_priors) return;
  up->pool = &kr__adapt_host(f->crawl, u->host, hc->est.x_min)->prior;
  kr_prior_params_default(&up->pp);
  char t[KR_PRIOR_TEMPLATE_MAX];
  size_t tn = kr_prior_template(u->url, u->url_len, t, sizeof t);
  up->type = kr_prior_type_key(ct.p, ct.n);
  up->tmpl = kr_prior_key(t, tn);
  kr_prior_estimate(up->pool, &up->pp, &hc->est, up->type, up->tmpl, h, up->root,
                    hc->est.prior_weight, &up->est);
}

/* observed: h has this visit (not one that came for a believed claim). */
static int64_t decide_wait(kr_fetch_t *f, kr_content_t state, const kr_vhist_t *h, int observed,
                           const kr_cfg_wait_t **ev_out, kr_wait_info_t *info, double *stretch) {
  kr_crawl_t *c = f->crawl;
  const kr_hostcfg_t *hc = f->hc;
  const kr_curi_t *u = f->curi;
  const kr_http_resp_t *r = f->resp;
  kr_slice_t ct = r && r->content_type.n ? r->content_type
                                         : kr_slice(u->content_type ? u->content_type : "",
                                                    u->content_type_len);
  const kr_cfg_wait_t *ev = kr_config_wait_match(hc->view, c->matcher, ct.p, ct.n);
  *ev_out = ev;
  memset(info, 0, sizeof *info);
  if (!ev) return (int64_t)hc->fopts.default_wait_ms;
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, ev);
  kr_est_hints_t hints = kr_est_hints_none();
  if (hc->hint_lm) {
    int has_lm = r && r->status != 304 ? r->last_modified.n > 0 : u->last_modified > 0;
    hints.last_modified = has_lm;
  }
  if (hc->hint_changefreq) hints.changefreq_rate = u->hint_rate;
  if (hc->est.depth_halving > 0) hints.depth = depth_of(u);
  uri_prior_t up;
  uri_prior(f, ct, &p, &hints, h, &up);
  if (up.pool && observed) {
    kr_prior_observe(up.pool, &up.pp, &hc->est, up.type, up.tmpl, h, up.root);
    kr__adapt_host_changed(c, container_of(up.pool, struct kr_adapt_host, prior));
  }
  if (p.policy != KR_WAIT_POISSON) {
    c->st.waits_multiplicative++;
    int64_t prev = u->visits ? (int64_t)(u->wait_ms > INT64_MAX ? INT64_MAX : u->wait_ms) : 0;
    int64_t ov = u->overdue_ms > INT64_MAX ? INT64_MAX : (int64_t)u->overdue_ms;
    /* informed: the first wait is the prior's (x_min changes on average) */
    if (up.pool) p.initial_ms = kr_wait_clamp(&p, (int64_t)KR_MIN(hc->est.x_min / up.est.rate * 1000.0, 9e18));
    int64_t w = kr_wait_multiplicative(&p, prev, state, ov);
    if (!hc->capacity_plan) return w;
    kr_capplan_t *cap = &kr__adapt_host(c, u->host, hc->est.x_min)->cap;
    kr_capplan_maybe_solve(cap, host_budget(f), ALLOC_SOLVE_EVERY);
    int64_t planned = kr_capplan_apply(cap, w);
    if (planned > w) {
      info->capped_from_ms = w;
      c->st.waits_capped++;
    }
    /* the sketch holds what was planned: prev is this URI's last plan */
    kr_capplan_update(cap, prev, planned);
    kr__adapt_host_changed(c, container_of(cap, struct kr_adapt_host, cap));
    return planned;
  }
  c->st.waits_poisson++;
  kr_est_params_t ep = hc->est;
  ep.prior_weight = up.est.weight;
  ep.prior_tau2 = up.est.tau2; /* informed: the first observations judged by
                                  the posterior (estimate.h) */
  /* The host's changes-per-visit target within its politeness budget,
   * less what the pulled visits take (signal.h "budget"). */
  struct kr_adapt_host *ah = kr__adapt_host(c, u->host, hc->est.x_min);
  kr_plan_host_set_objective(&ah->alloc, (kr_plan_objective_t)hc->objective);
  int cls = kr_plan_host_class(&ah->alloc, p.min_ms, p.max_ms);
  if (kr_plan_host_maybe_solve(&ah->alloc, kr_sig_host_budget(&ah->sig, host_budget(f)),
                               ALLOC_SOLVE_EVERY))
    kr__adapt_host_changed(c, ah);
  /* The sketch holds only estimates resting on an observation
   * (estimate.h): a URI at its prior would inflate x while the first
   * crawl is still learning and send everything learned meanwhile away. */
  double old_lambda = 0;
  if (u->visits) { /* where the sketch has this URI now (an informed
                      prior may have moved since: close enough) */
    kr_vhist_t h0;
    kr_est_result_t r0;
    if (kr_vhist_decode(&h0, u->history, u->history_len) == 0 && h0.n) {
      kr_est_rate(&ep, &h0, up.est.rate, &r0);
      if (r0.observations > 0) old_lambda = r0.lambda;
    }
  }
  int64_t w = kr_wait_poisson_prior_host(&p, &ep, h, state, up.est.rate, &ah->alloc, info);
  double k = kr__claim_stretch(f); /* trusted signals find most changes: wait longer */
  if (k > 1) {
    w = kr_wait_clamp(&p, (int64_t)KR_MIN((double)w * k, 9e18));
    *stretch = k;
  }
  double new_lambda = info->observations > 0 ? info->lambda : 0;
  if (old_lambda > 0 || new_lambda > 0) {
    kr_plan_host_update(&ah->alloc, cls, old_lambda, new_lambda);
    kr__adapt_host_changed(c, ah);
  }
  return w;
}

static void annotate_wait(kr_fetch_t *f, int64_t wait, const kr_cfg_wait_t *ev,
                          const kr_wait_info_t *info) {
  const kr_curi_t *u = f->curi;
  char a[48], b[48];
  kr_crawllog_duration(a, sizeof a, wait);
  kr_crawllog_duration(b, sizeof b, u->overdue_ms > INT64_MAX ? INT64_MAX : (int64_t)u->overdue_ms);
  kr_fetch_annotatef(f, "wt:%s", a);
  kr_fetch_annotatef(f, "%uvis", f->ad.visits ? f->ad.visits : u->visits + 1);
  kr_fetch_annotatef(f, "%uver", f->ad.versions ? f->ad.versions : (u->versions ? u->versions : 1));
  kr_fetch_annotatef(f, "ov:%s", b);
  if (!ev) {
    kr_fetch_annotate(f, "wait:crawl.default-wait");
  } else if (ev->policy == KR_CFG_POLICY_POISSON) {
    kr_fetch_annotatef(f, "wait:%s/poisson/%s", ev->name,
                       info->used_default ? "default" : kr_est_method_name(info->method));
  } else if (info->capped_from_ms) {
    /* the plan raised the thesis' wait: its own value, for the record */
    kr_crawllog_duration(a, sizeof a, info->capped_from_ms);
    kr_fetch_annotatef(f, "wait:%s/multiplicative/capacity", ev->name);
    kr_fetch_annotatef(f, "cap:%s", a);
  } else {
    kr_fetch_annotatef(f, "wait:%s/multiplicative", ev->name);
  }
}

/* ---- the processor -------------------------------------------------------------------------- */

static int revisit_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_curi_t *u = f->curi;
  uint64_t now = kr_crawl_now(c);
  int visit = u && f->disp == KR_DISP_FINISH && f->outcome.kind == KR_OUTCOME_SUCCESS &&
              !f->is_robots;
  kr_content_t state = visit ? (kr_content_t)f->ad.content : KR_CONTENT_UNKNOWN;
  /* verified first: a visit that came for a believed claim is no
   * observation of the change process (signal.h "history") */
  int observed = !visit || !kr__verify_claim(f, state);
  /* Any fetch that took one of the host's slots (robots.txt, errors,
   * first visits too): the pulled ones are the signals' share, the
   * others feed the allocator's realised rate (signal.h "budget"). */
  if (u && u->host && f->disp == KR_DISP_FINISH && !f->decided && f->fetch_start_ms) {
    struct kr_adapt_host *ah = kr__adapt_host_find(c, u->host);
    if (ah) {
      double gain = ah->alloc.gain;
      kr_sig_host_fetched(&ah->sig, !observed);
      if (observed) kr_plan_host_fetched(&ah->alloc, (int64_t)now);
      if (ah->alloc.gain != gain) kr__adapt_host_changed(c, ah);
    }
  }
  if (!visit) return KR_PROC_NEXT;
  if (!f->ad.visits) { /* change did not run (no response body path) */
    f->ad.visits = u->visits + 1;
    f->ad.versions = u->visits == 0 ? 1 : u->versions;
  }
  /* The history with this visit: what the estimators and the frontier keep. */
  kr_vhist_visit_t v = {.interval_s = interval_s(u, now),
                        .state = u->visits == 0 && state != KR_CONTENT_UNKNOWN
                                     ? KR_CONTENT_CHANGED
                                     : state,
                        .age_s = state == KR_CONTENT_UNKNOWN ? -1 : version_age(f->resp)};
  kr_vhist_t h;
  wait_ctx_t *x = kr_chain_ctx(cf, self);
  if (!observed) {
    /* it came for a believed claim: no observation of the change process
     * (signal.h "history"), the history stays as the regular visits left it */
    x->hist_len = KR_MIN(u->history_len, (size_t)KR_VHIST_BYTES);
    memcpy(x->hist, u->history, x->hist_len);
    if (kr_vhist_decode(&h, x->hist, x->hist_len)) x->hist_len = 0;
  } else {
    x->hist_len = kr_vhist_push_read(u->history, u->history_len, &v, x->hist, NULL, &h);
  }
  const kr_cfg_wait_t *ev;
  kr_wait_info_t info;
  double stretch = 1;
  int64_t wait = decide_wait(f, state, &h, observed, &ev, &info, &stretch);
  if (wait < 1) wait = 1;
  f->outcome.wait_ms = (uint64_t)wait;
  f->outcome.content = state == KR_CONTENT_UNCHANGED ? 0 : state == KR_CONTENT_CHANGED ? 1 : 2;
  f->outcome.history = x->hist; /* read by finish, before the context is reset */
  f->outcome.history_len = x->hist_len;
  annotate_wait(f, wait, ev, &info);
  if (stretch > 1) kr_fetch_annotatef(f, "stretch:x%.1f", stretch);
  if (f->nfmeta) kr__record_claims(f, now);

  if (state == KR_CONTENT_CHANGED && u->visits > 0) {
    if (f->hc->refresh_embeds) kr__refresh_embeds(f, now);
    if (f->nfmeta) kr__pull_feed_items(f, now);
  }
  return KR_PROC_NEXT;
}

void kr__revisit_free(kr_crawl_t *c) {
  kr__claims_free(c);
  kr__adapt_hosts_free(c);
}

const kr_processor_t kr_proc_revisit = {.name = "revisit", .run = revisit_run,
                                        .ctx = &wait_ctx_def};
