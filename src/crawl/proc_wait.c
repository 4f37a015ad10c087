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
 *                   with an allocator is counted, estimate.h).
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
 * Pulled forward (links of this fetch given to the frontier by finish):
 *   embeds   adaptive.refresh-embeds: a page that changed (not its first
 *            visit) has its E links due now at HIGH (add never moves a
 *            URI later; it brings this one forward);
 *   feeds    a feed or sitemap that changed: items dated after its
 *            previous visit are due now at HIGH, undated ones (up to
 *            adaptive.feed-pull-max) due now. New items are new URIs,
 *            due now anyway.
 * Change signals (signal.h): a dated item of a sitemap (lastmod) or feed
 * is a claim that its URI changed then, and so is a WebSub push for its
 * topic and items (websub.c through kr__crawl_sig_claim, gated the same
 * way). The latest claim per URI is kept
 * here (c->claims), and each later visit of the URI with a known content
 * state verifies it against the digest, into its host's reliability per
 * source (crawl.log sig:SOURCE:tp|fp|fn; counters signals_*). A changed
 * feed's dated items pull their URIs forward only while their host's
 * signals verify (kr_sig_pulls: adaptive.signal-precision after
 * adaptive.signal-probation verifications), and poisson stretches the
 * wait of a listed URI whose host's signals have a trusted recall
 * (adaptive.signal-recall, -max-stretch; crawl.log "stretch:xK"). The
 * signals' reliability lives with the host's allocator and is part of
 * its learned state (adapthost.c); the claims are in a table of their own (at
 * most KR_SIG_CLAIMS_MAX), in memory only: after a restart a URI's
 * verification waits for its next dated claim.
 * The per-host allocators, plans, signals' reliability and priors' pools
 * with their learned state: adapthost.c.
 * Sections: claims, the wait, pulling forward, the processor.
 */
#include <string.h>

#include "adapthost.h"
#include "internal.h"
#include "kria/fp.h"
#include "procs.h"

#define ALLOC_SOLVE_EVERY 64 /* sketch updates between re-solves of x */


/* The visit history with this visit: the outcome points into it until
 * finish has handed it to the frontier. */
typedef struct wait_ctx {
  uint8_t hist[KR_VHIST_BYTES];
  size_t hist_len;
} wait_ctx_t;

static const kr_chain_ctx_def_t wait_ctx_def = {.name = "wait", .size = sizeof(wait_ctx_t)};

/* ---- claims ------------------------------------------------------------------------------
 * The latest dated claim per listed URI: open addressing on the URI's
 * fingerprint, grown by doubling up to KR_SIG_CLAIMS_MAX slots; past it
 * a URI not listed yet is not recorded (its signals go unverified).
 * Claims are kept in ms and compared with the visit's ms: a dated item's
 * whole second x 1000 is news exactly when its second was (signal.h),
 * and a push, timed to the ms, is news for a visit earlier in its own
 * second but not for the visit it brings. */

#define KR_SIG_CLAIMS_MAX (1u << 20) /* slots: 512 Ki URIs at half load, 24 MiB */

typedef struct claim {
  uint64_t fp;      /* 0: free slot */
  int64_t at_ms;    /* the claimed change time, epoch ms (a date's second x 1000) */
  int source;       /* kr_sig_source_t */
} claim_t;

struct kr_sig_claims {
  claim_t *slot;
  size_t cap, n;
};

static void claims_free(kr_crawl_t *c) {
  if (!c->claims) return;
  free(c->claims->slot);
  free(c->claims);
  c->claims = NULL;
}

static claim_t *claim_find(const kr_crawl_t *c, uint64_t fp) {
  const struct kr_sig_claims *t = c->claims;
  if (!t || !fp) return NULL;
  for (size_t j = kr__ptr_slot((const void *)(uintptr_t)fp, t->cap - 1); t->slot[j].fp;
       j = (j + 1) & (t->cap - 1))
    if (t->slot[j].fp == fp) return &t->slot[j];
  return NULL;
}

/* The slot of fp, made when absent (NULL when the table is full). */
static claim_t *claim_get(kr_crawl_t *c, uint64_t fp) {
  claim_t *e = claim_find(c, fp);
  if (e || !fp) return e;
  struct kr_sig_claims *t = c->claims;
  if (!t) t = c->claims = kr_xcalloc(1, sizeof *t);
  if ((t->n + 1) * 2 > t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 1024;
    if (ncap > KR_SIG_CLAIMS_MAX) return NULL;
    claim_t *n = kr_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slot[i].fp) continue;
      size_t j = kr__ptr_slot((const void *)(uintptr_t)t->slot[i].fp, ncap - 1);
      while (n[j].fp) j = (j + 1) & (ncap - 1);
      n[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = n;
    t->cap = ncap;
  }
  size_t j = kr__ptr_slot((const void *)(uintptr_t)fp, t->cap - 1);
  while (t->slot[j].fp) j = (j + 1) & (t->cap - 1);
  t->slot[j] = (claim_t){.fp = fp};
  t->n++;
  return &t->slot[j];
}

/* The host queue of a link, NULL when the frontier has none yet. */
static kr_hostq_t *link_host(kr_crawl_t *c, const kr_link_t *l) {
  char key[512];
  if (!c->frontier || kr_frontier_queue_key(c->frontier, l->url, l->url_len, key, sizeof key))
    return NULL;
  return kr_frontier_host_lookup(c->frontier, key, strlen(key));
}

/* A visit of a listed URI verifies what its claims said since its
 * previous visit (signal.h), into its host's reliability. 1 when the
 * visit came for a believed claim (signal.h "history"). */
static int verify_claim(kr_fetch_t *f, kr_content_t state) {
  kr_crawl_t *c = f->crawl;
  const kr_curi_t *u = f->curi;
  claim_t *e = u->visits && state != KR_CONTENT_UNKNOWN ? claim_find(c, u->fp) : NULL;
  if (!e) return 0;
  struct kr_adapt_host *ah = kr__adapt_host(c, u->host, f->hc->est.x_min);
  int signalled = kr_sig_is_news(e->at_ms, (int64_t)u->last_visit);
  kr_sig_verdict_t v = kr_sig_record(&ah->sig.src[e->source], &f->hc->sig, signalled,
                                     state == KR_CONTENT_CHANGED);
  static const char *const names[] = {"", "tp", "fp", "fn"};
  if (v == KR_SIG_TN) return 0;
  kr__adapt_host_changed(c, ah);
  c->st.signals_tp += v == KR_SIG_TP;
  c->st.signals_fp += v == KR_SIG_FP;
  c->st.signals_fn += v == KR_SIG_FN;
  kr_fetch_annotatef(f, "sig:%s:%s", kr_sig_source_name((kr_sig_source_t)e->source), names[v]);
  return signalled && kr_sig_pulls(&ah->sig.src[e->source], &f->hc->sig);
}

/* The wait's factor from the URI's host's signals (1: none). */
static double claim_stretch(kr_fetch_t *f) {
  const kr_curi_t *u = f->curi;
  const claim_t *e = claim_find(f->crawl, u->fp);
  const struct kr_adapt_host *ah = e ? kr__adapt_host_find(f->crawl, u->host) : NULL;
  if (!ah) return 1;
  return kr_sig_stretch(&ah->sig.src[e->source], &f->hc->sig, u->fp, u->visits);
}

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
  up->est = (kr_prior_est_t){up->root, hc->est.prior_weight, 0, 0};
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
  /* The host's changes-per-visit target within its politeness budget. */
  struct kr_adapt_host *ah = kr__adapt_host(c, u->host, hc->est.x_min);
  kr_plan_host_set_objective(&ah->alloc, (kr_plan_objective_t)hc->objective);
  int cls = kr_plan_host_class(&ah->alloc, p.min_ms, p.max_ms);
  if (kr_plan_host_maybe_solve(&ah->alloc, host_budget(f), ALLOC_SOLVE_EVERY))
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
  double k = claim_stretch(f); /* trusted signals find most changes: wait longer */
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

/* ---- pulling forward --------------------------------------------------------------------- */

static void refresh_embeds(kr_fetch_t *f, uint64_t now) {
  for (size_t i = 0; i < f->nlinks; i++) {
    kr_link_t *l = &f->links[i];
    if (!l->hop_len || l->hop_path[l->hop_len - 1] != 'E') continue;
    l->directive = KR_DIRECTIVE_HIGH;
    l->next_at = now;
    l->flags |= KR_LINK_RESCHEDULE;
    f->crawl->st.embeds_refreshed++;
  }
}

/* The dated items of a feed or sitemap read (first visit too): each
 * newer claim is a signal for its URI, counted on its host. */
static void record_claims(kr_fetch_t *f, uint64_t now) {
  kr_crawl_t *c = f->crawl;
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_fetch_item_t *m = &f->fmeta[i];
    if (m->updated <= 0 || m->link >= f->nlinks) continue;
    const kr_link_t *l = &f->links[m->link];
    claim_t *e = claim_get(c, kr_fp(l->url, l->url_len));
    if (!e || kr_sig_claim_ms(m->updated) <= e->at_ms) continue;
    e->at_ms = kr_sig_claim_ms(m->updated);
    e->source = m->source;
    c->st.signals_seen++;
    kr_hostq_t *h = link_host(c, l);
    if (!h) continue;
    struct kr_adapt_host *ah = kr__adapt_host(c, h, f->hc->est.x_min);
    kr_sig_seen(&ah->sig.src[m->source]);
    kr__adapt_host_changed(c, ah);
  }
  (void)now;
}

int kr__crawl_sig_claim(kr_crawl_t *c, const char *url, size_t n, int64_t at_ms,
                        kr_sig_source_t src) {
  kr_link_t l = {.url = url, .url_len = n};
  kr_hostq_t *h = link_host(c, &l);
  const kr_hostcfg_t *hc = h ? kr__crawl_queue_hostcfg(c, h) : NULL;
  struct kr_adapt_host *ah = h ? kr__adapt_host(c, h, hc->est.x_min) : NULL;
  claim_t *e = claim_get(c, kr_fp(url, n));
  if (e && at_ms > e->at_ms) {
    e->at_ms = at_ms;
    e->source = src;
    c->st.signals_seen++;
    if (ah) {
      kr_sig_seen(&ah->sig.src[src]);
      kr__adapt_host_changed(c, ah);
    }
  }
  if (!ah || kr_sig_pulls(&ah->sig.src[src], &hc->sig)) return 1;
  c->st.signals_ignored++;
  return 0;
}

/* 1 when the signals of a dated item's URI's host have verified (or are
 * still on probation): its claim may pull it forward. */
static int item_trusted(kr_fetch_t *f, const kr_fetch_item_t *m, const kr_link_t *l) {
  const kr_hostq_t *h = link_host(f->crawl, l);
  const struct kr_adapt_host *ah = h ? kr__adapt_host_find(f->crawl, h) : NULL;
  if (!ah || kr_sig_pulls(&ah->sig.src[m->source], &f->hc->sig)) return 1;
  f->crawl->st.signals_ignored++;
  return 0;
}

static void pull_feed_items(kr_fetch_t *f, uint64_t now) {
  const kr_curi_t *u = f->curi;
  int64_t since = (int64_t)(u->last_visit / 1000); /* the feed's previous visit */
  uint32_t undated = 0;
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_fetch_item_t *m = &f->fmeta[i];
    if (m->link >= f->nlinks) continue;
    kr_link_t *l = &f->links[m->link];
    if (m->updated > 0) {
      if (m->updated < since || !item_trusted(f, m, l)) continue;
      l->directive = KR_DIRECTIVE_HIGH;
    } else if (undated++ >= f->hc->feed_pull_max) {
      continue;
    }
    l->next_at = now;
    l->flags |= KR_LINK_RESCHEDULE;
    f->crawl->st.feed_pulled++;
  }
}

/* ---- the processor -------------------------------------------------------------------------- */

static int revisit_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_curi_t *u = f->curi;
  uint64_t now = kr_crawl_now(c);
  /* Any fetch that took one of the host's slots (robots.txt, errors,
   * first visits too) feeds its allocator's realised rate. */
  if (u && u->host && f->disp == KR_DISP_FINISH && !f->decided && f->fetch_start_ms) {
    struct kr_adapt_host *ah = kr__adapt_host_find(c, u->host);
    if (ah) {
      double gain = ah->alloc.gain;
      kr_plan_host_fetched(&ah->alloc, (int64_t)now);
      if (ah->alloc.gain != gain) kr__adapt_host_changed(c, ah);
    }
  }
  if (!u || f->disp != KR_DISP_FINISH || f->outcome.kind != KR_OUTCOME_SUCCESS || f->is_robots)
    return KR_PROC_NEXT;
  kr_content_t state = (kr_content_t)f->ad.content;
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
  int observed = !verify_claim(f, state);
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
  if (f->nfmeta) record_claims(f, now);

  if (state == KR_CONTENT_CHANGED && u->visits > 0) {
    if (f->hc->refresh_embeds) refresh_embeds(f, now);
    if (f->nfmeta) pull_feed_items(f, now);
  }
  return KR_PROC_NEXT;
}

void kr__revisit_free(kr_crawl_t *c) {
  claims_free(c);
  kr__adapt_hosts_free(c);
}

const kr_processor_t kr_proc_revisit = {.name = "revisit", .run = revisit_run,
                                        .ctx = &wait_ctx_def};
