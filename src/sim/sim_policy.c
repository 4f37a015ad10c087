/*
 * A simulated run's revisit policies: the wait each policy gives a URI
 * after a visit (kr__sim_next_wait, called by sim_fetch.c's finish_visit).
 * fixed, the thesis' multiplicative (with the capacity plan, as
 * src/crawl/proc_wait.c), poisson (the estimators and the host's
 * allocator, for the host's adaptive.objective) and the oracle (the
 * allocator fed the true rates); the published schedulers are
 * sim_baseline.c's.
 */
#include "sim.h"

#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kria/estimate.h"
#include "kria/wait.h"
#include "sim_int.h"
#include "sim_run.h"

/* The host's allocator solved for its politeness budget less what the
 * visits pulled by signals take (signal.h "budget"), as proc_wait.c. */
static void solve_plan(run_t *r, shost_t *sh) {
  double budget = kr_plan_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
  kr_plan_host_maybe_solve(&sh->alloc, kr_sig_host_budget(&sh->sig, budget), r->o->solve_every);
}

/* The bayes reference's rate of u (sim.h): the posterior mean under the
 * world's prior given h, the observations before a change of rate left
 * out as kr_est_rate leaves them out (er: the counts; kr_est_rate's
 * answer when the posterior has none). The ages count where the host's
 * validators are correct; the first visit's only while it is in h and
 * before any split, and below the year the simulator caps a version's
 * age at (sim_world.c: kr__sim_poisson_start). */
static double bayes_rate(const run_t *r, const wuri_t *u, const kr_vhist_t *h,
                         kr_est_result_t *er) {
  kr_est_obs_t o[KR_VHIST_MAX];
  size_t n = kr_vhist_observations(h, o, KR_VHIST_MAX), split = kr_est_split(&r->ep, o, n);
  int ages = u->validators == KR_SIM_VAL_CORRECT;
  double first = -1;
  if (ages && split == 0 && h->n > 0 && h->v[0].interval_s == 0 && h->v[0].age_s >= 0 &&
      h->v[0].age_s < KR__SIM_YEAR_MS / 1000)
    first = (double)h->v[0].age_s;
  er->observations = (unsigned)(n - split);
  er->dropped = (unsigned)split;
  er->method = KR_EST_POSTERIOR;
  double lambda, mean;
  if (kr_est_posterior_discrete(o + split, n - split, ages, first, r->bayes_rate, r->bayes_logw,
                                r->bayes_g, &lambda) == 0)
    return KR_MAX(lambda, 1e-12); /* 0: certainly a page that never changes */
  /* no rate of the world explains them (a trace's page faster than the
   * rest): kria's own estimate from the world's mean rate */
  if (kr_est_posterior_discrete(NULL, 0, 0, -1, r->bayes_rate, r->bayes_logw, r->bayes_g,
                                &mean) || !(mean > 0))
    mean = 1e-5;
  kr_est_rate(&r->ep, h, mean, er);
  return er->lambda;
}

/* The next wait of a visit, by the run's policy. The visit history (the
 * URI's row, kr_vhist) gets this visit appended into hist/hist_len, which
 * the outcome hands back to the frontier to persist. */
int64_t kr__sim_next_wait(run_t *r, const wuri_t *u, suri_t *s, shost_t *sh, const kr_curi_t *c,
                          kr_content_t st,
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
  if (s->sig_visit) { /* the history keeps what the regular visits saw (signal.h) */
    *hist_len = KR_MIN(c->history_len, (size_t)KR_VHIST_BYTES);
    memcpy(hist, c->history, *hist_len);
    if (kr_vhist_decode(&h, hist, *hist_len)) *hist_len = 0;
  } else {
    *hist_len = kr_vhist_push_read(c->history, c->history_len, &v, hist, NULL, &h);
  }
  if (r->policy == KR_SIM_FIXED) return r->o->fixed_interval_ms;
  if (r->bl) return kr__sim_baseline_wait(r, s, sh, c, st, now, &h, has_lm);
  if (!s->wait) return 0; /* no evaluator: the frontier's default wait */
  kr_wait_params_t p;
  kr_wait_params_from_config(&p, s->wait);
  kr_est_hints_t hints = kr_est_hints_none();
  if (sh->hint_lm) hints.last_modified = has_lm;
  /* informed priors, as src/crawl/proc_wait.c: the URI's groups in its
   * host's pool give its prior, then learn from this visit */
  double prior = kr_est_prior(&r->ep, p.initial_ms, &hints);
  kr_est_params_t ep = r->ep;
  int informed = sh->priors_on && r->policy != KR_SIM_ORACLE;
  if (informed) {
    kr_prior_params_t pp;
    kr_prior_params_default(&pp);
    kr_prior_est_t pe;
    kr_prior_estimate(&sh->prior, &pp, &r->ep, s->ptype, s->ptmpl, &h, prior, ep.prior_weight,
                      &pe);
    if (!s->sig_visit) /* a visit for a signal added nothing to h */
      kr_prior_observe(&sh->prior, &pp, &r->ep, s->ptype, s->ptmpl, &h, prior);
    prior = pe.rate;
    ep.prior_weight = pe.weight;
    ep.prior_tau2 = pe.tau2; /* the first observations: the posterior */
  }
  if (r->policy == KR_SIM_MULTIPLICATIVE) {
    int64_t prev = c->visits ? (int64_t)c->wait_ms : 0;
    /* informed: the first wait is the prior's (x_min changes on average) */
    if (informed) p.initial_ms = kr_wait_clamp(&p, (int64_t)KR_MIN(ep.x_min / prior * 1000.0, 9e18));
    int64_t w = kr_wait_multiplicative(&p, prev, st, (int64_t)c->overdue_ms);
    if (!sh->cap_on) return w;
    /* as proc_wait.c: raised to the host's capacity floor */
    double budget = kr_plan_budget((int)sh->valence, (int64_t)sh->cycle_ms, sh->utilisation);
    kr_capplan_maybe_solve(&sh->cap, budget, r->o->solve_every);
    int64_t planned = kr_capplan_apply(&sh->cap, w);
    if (planned > w) r->res->waits_capped++;
    kr_capplan_update(&sh->cap, prev, planned);
    return planned;
  }
  if (r->policy == KR_SIM_ORACLE) {
    solve_plan(r, sh);
    double lambda = s->lambda > 0 ? s->lambda : 1e-12;
    if (s->sig) { /* with signals: the true rate of the changes they miss */
      double k = s->stretch > 1 ? s->stretch : 1;
      double want = KR_MAX(kr__sim_signal_true_rate(r, s), 1e-12) / k;
      if (s->cls >= 0 && want != s->lambda) kr_plan_host_update(&sh->alloc, s->cls, s->lambda, want);
      lambda = s->lambda = want;
    }
    double x = kr_plan_host_x_for(&sh->alloc, lambda);
    return kr_wait_clamp(&p, (int64_t)KR_MIN(x / lambda * 1000.0, 9e18));
  }
  if (r->policy == KR_SIM_BAYES) {
    solve_plan(r, sh);
    kr_est_result_t er;
    /* trusted signals: as poisson's, the regular visits only look for
     * what they miss (sim_signal.c) */
    double lambda = bayes_rate(r, u, &h, &er) / (s->stretch > 1 ? s->stretch : 1);
    if (s->cls >= 0 && (er.observations > 0 || r->o->sketch_prior)) {
      kr_plan_host_update(&sh->alloc, s->cls, s->lambda, lambda);
      s->lambda = lambda;
    }
    double x = kr_plan_host_x_for(&sh->alloc, lambda);
    return kr_wait_clamp(&p, (int64_t)KR_MIN(x / lambda * 1000.0, 9e18));
  }
  solve_plan(r, sh);
  kr_wait_info_t info;
  int64_t wait = kr_wait_poisson_prior_host(&p, &ep, &h, st, prior, &sh->alloc, &info);
  /* trusted signals: the regular visits only look for what they miss
   * (sim_signal.c), and the sketch counts the page at that rate */
  double k = s->stretch > 1 ? s->stretch : 1;
  if (k > 1) wait = kr_wait_clamp(&p, (int64_t)KR_MIN((double)wait * k, 9e18));
  if (s->cls >= 0 && (info.observations > 0 || r->o->sketch_prior)) {
    kr_plan_host_update(&sh->alloc, s->cls, s->lambda, info.lambda / k);
    s->lambda = info.lambda / k;
  }
  return wait;
}
