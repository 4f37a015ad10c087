/*
 * `kria simulate`: compare revisit policies on simulated URIs (src/sim/sim.h
 * has the model, the trace format and the metrics). The world comes from
 * a trace (--trace FILE) or is synthetic (--urls, --hosts and the mix
 * options); every selected policy runs over the same world, the same
 * changes and the same politeness, each in its own frontier. `fixed` uses
 * --fixed-interval, or else the interval that spends the fetches of the
 * reference run (poisson when selected, else multiplicative): it runs
 * last, and again with a corrected interval while its fetch count is more
 * than 1 % off (at most --fixed-passes runs). --jobs N runs up to N
 * child processes at once: each policy's world is split by host into N
 * shards (sim_shard.c; at most one a host), every policy x shard is a
 * task, and each policy's shards are merged into the very numbers of the
 * whole run (so N changes the time, never the output). Prints a table per period (whole
 * run, first window) or, with --json, one JSON object. Exit 0, 2 error
 * (trace, state database), 64 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"
#include "internal.h"
#include "log.h"
#include "sim.h"
#include "simulate_seeds.h"

static const char usage_text[] =
    "usage: kria simulate [options]\n"
    "world (a trace, or synthetic):\n"
    "  --trace FILE          URIs with change times and validator behaviour\n"
    "                        (format in src/sim/sim.h and bench/adaptive/README.md)\n"
    "  --urls N              synthetic URIs (1000)\n"
    "  --hosts N             spread over N hosts (10)\n"
    "  --mix SPEC            change rates: [W:]never|PERIOD|LO..HI|weibull:K:SCALE,\n"
    "                        comma-separated (1h..30d: log-uniform from hourly to\n"
    "                        monthly; weibull: mean periods Weibull of shape K)\n"
    "  --shift SPEC          rates that shift mid-run: share=S,at=T,factor=F (the\n"
    "                        rate x F from T on) or share=S,at=T,redraw (a new\n"
    "                        rate from the mix)\n"
    "  --cycles SPEC         daily:A[@HOUR],weekly:B[@DAY]: the Poisson rates x\n"
    "                        (1 + A cos) with the peak at HOUR UTC (14), x (1 + B\n"
    "                        cos) with the peak on DAY (mon..sun, wed); A, B 0..1\n"
    "  --volatile SHARE      URIs with a volatile section (0.1)\n"
    "  --validators SPEC     host shares: correct=0.7,missing=0.2,lying=0.1\n"
    "  --size BYTES          typical body size (10KiB)\n"
    "  --content-type TYPE   of the synthetic URIs (text/html)\n"
    "  --importance DIST     page importance: 1 (all equal), pareto:ALPHA (> 1)\n"
    "                        or lognormal:SIGMA, scaled to mean 1 (trace: the\n"
    "                        importance=W field); weighs the weighted metrics\n"
    "                        and the harmonic penalty\n"
    "  --seed N              changes and durations (1)\n"
    "run:\n"
    "  --days D              simulated days (30)\n"
    "  --window-days D       the early period reported apart (3)\n"
    "  --policy LIST         fixed,multiplicative,poisson (all three); oracle:\n"
    "                        poisson's allocator fed the true rates (diagnostic);\n"
    "                        bayes: fed the posterior means under the world's\n"
    "                        true distribution of rates (diagnostic);\n"
    "                        published schedulers: lambdacrawl, binarylambdacrawl\n"
    "                        (Kolobov et al. 2019, Azar et al. 2018: one bandwidth\n"
    "                        for all hosts), lambdacrawl-polite (a budget per host\n"
    "                        too), nutch, stormcrawler (their adaptive schedules\n"
    "                        with their default parameters)\n"
    "  --fixed-interval DUR  fixed wait (default: the reference run's fetches)\n"
    "  --fixed-passes N      runs of fixed to match the fetch count (2)\n"
    "  -c FILE               config: [wait] evaluators, politeness, [host] sections\n"
    "  -o SECTION.KEY=VALUE  config override (repeatable)\n"
    "  --delay DUR           politeness delay for every host (min = max = DUR)\n"
    "  --valence N           fetches per host at once\n"
    "  --fetch-time DUR      median fetch duration (150ms), log-normal\n"
    "  --fetch-sigma S       its sigma (0.5)\n"
    "                        (poisson's allocator shares a host's budget for\n"
    "                        -o adaptive.objective=versions|freshness|harmonic)\n"
    "  --utilisation U       poisson: share of the politeness capacity the\n"
    "                        fetches should take (adaptive.budget-utilisation, 1)\n"
    "  --no-conditional      never send If-None-Match / If-Modified-Since\n"
    "  --no-midfetch         never abort a download on validators\n"
    "  --scheme N            mid-fetch scheme 1-4 or timestamp|etag|both|either\n"
    "                        (adaptive.midfetch-scheme, either)\n"
    "  --sample-rate R       validator trust: share checked in full\n"
    "                        (adaptive.trust-sample, 0.05)\n"
    "  --sketch-prior        poisson: URIs count in their host's allocator from\n"
    "                        the first visit, at the prior's rate\n"    "  --restart DUR         the crawler restarts this long after the start: each\n"
    "                        host's learned state (allocator, capacity plan, trust\n"
    "                        run, informed priors, signals' reliability) goes\n"
    "                        through its stored record\n"
    "  --restart-forget      ... and is dropped instead (kria before the record)\n"
    "  --no-strip            volatile sections are not stripped from the digest\n"
    "  --abort-bytes BYTES   body bytes a mid-fetch abort still reads (1460)\n"
    "  --state-dir DIR       where temporary state databases go\n"
    "  --jobs N              child processes at once (1: none): each policy's\n"
    "                        world split by host into N shards (at most one a\n"
    "                        host), the policies' and seeds' shards sharing the N\n"
    "                        processes; the numbers do not depend on N\n"
    "events of a long crawl (format in src/sim/sim.h and bench/adaptive/README.md):\n"
    "  --event SPEC          one event, e.g. 'outage h1.sim.test at=10d for=3d',\n"
    "                        'busy http://h2.sim.test/p/5 status=503 retry-after=120',\n"
    "                        'robots-down H at=D for=D', 'robots-relax H share=S at=D',\n"
    "                        'grow H per-day=N', 'die H share=S at=D..D status=410',\n"
    "                        'unlink H share=S at=D..D' (repeatable)\n"
    "  --events FILE         events, one a line\n"
    "  --check               exit 1 when an invariant fails (the invariants are\n"
    "                        checked and printed whenever there are events)\n"
    "change signals (sitemap lastmod; format in src/sim/sim.h):\n"
    "  --signals SPEC        share=0.3,recall=0.9,precision=0.8,delay=1h: the\n"
    "                        share of pages a sitemap lists, the share of their\n"
    "                        changes signalled, the share of signals that are\n"
    "                        true, the sitemap's polling period\n"
    "  --signals-adversarial SPEC  share=S,mode=now|never: that share of the\n"
    "                        hosts claim every page changed at every poll (now)\n"
    "                        or never move their lastmod (never)\n"
    "statistics:\n"
    "  --seeds N             run every policy over N seeds (1..100): seed k is\n"
    "                        --seed + k for the world and the fetches; prints\n"
    "                        each policy's mean over the seeds with its 95 %\n"
    "                        t-interval, and the paired mean ratio and difference\n"
    "                        to --ref with their 95 % t-intervals (capture ratio,\n"
    "                        first-window capture ratio, freshness, harmonic\n"
    "                        penalty, fetches, weighted capture ratio); fixed is\n"
    "                        matched to each seed's reference run\n"
    "  --ref POLICY          the policy the others are compared with (the first\n"
    "                        of --policy)\n"
    "output:\n"
    "  --json                one JSON object instead of tables\n"
    "  -v                    log the modules' notices and each shard's time;\n"
    "                        -v -v: also each host's allocator once a\n"
    "                        simulated day\n"
    "exit status: 0 success, 1 an invariant failed (--check), 2 error, 64 usage\n";

#define MAX_OVERRIDES 256
#define MAX_EVENT_ARGS 256

/* How a world's runs are split: in nshards shards by host
 * (shard_of[URI]); nshards 1: whole. */
typedef struct split {
  uint32_t nshards;
  const uint32_t *shard_of;
} split_t;

/* One policy's run over one world (one seed). */
typedef struct job {
  kr_sim_policy_t policy;
  int64_t fixed_ms;
  const kr_sim_world_t *w;
  const kr_sim_opts_t *o;   /* the seed's options */
  const split_t *sp;
  kr_sim_result_t res;
  int rc;
  char err[512];
} job_t;

/* ---- option values ---------------------------------------------------- */

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (!*s || *s == '-' || *s == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno || !isfinite(v) || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_validators(const char *s, double share[3]) {
  share[0] = share[1] = share[2] = 0;
  const char *p = s;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (!eq) return -1;
    size_t kn = (size_t)(eq - p);
    int k = kn == 7 && !memcmp(p, "correct", 7)   ? 0
            : kn == 7 && !memcmp(p, "missing", 7) ? 1
            : kn == 5 && !memcmp(p, "lying", 5)   ? 2
                                                  : -1;
    if (k < 0) return -1;
    char num[64];
    size_t vn = n - kn - 1;
    if (vn == 0 || vn >= sizeof num) return -1;
    memcpy(num, eq + 1, vn);
    num[vn] = 0;
    if (parse_double(num, 0, 1e9, &share[k])) return -1;
    p += n;
    if (*p == ',') p++;
  }
  return share[0] + share[1] + share[2] > 0 ? 0 : -1;
}

static int parse_days(const char *s, int64_t *ms) {
  double d;
  if (parse_double(s, 0, 3650, &d) || !(d > 0)) return -1;
  *ms = (int64_t)llround(d * 86400000.0);
  return *ms > 0 ? 0 : -1;
}

/* ---- running ------------------------------------------------------------ */

static void run_job(job_t *j) {
  kr_sim_opts_t o = *j->o;
  if (j->policy == KR_SIM_FIXED) o.fixed_interval_ms = j->fixed_ms;
  j->err[0] = 0;
  j->rc = kr_sim_run(j->w, &o, j->policy, &j->res, j->err, sizeof j->err);
}

/* A shard's run, as a child process hands it back. */
typedef struct part {
  kr_sim_result_t res;
  int rc;
  char err[512];
} part_t;

/* The pool's tasks: task k is shard todo[k].shard of job todo[k].job, its
 * result in parts[first[job] + shard]. */
typedef struct task {
  size_t job;
  uint32_t shard;
} task_t;

typedef struct pool_ctx {
  job_t **jobs;
  double **lambda;
  part_t *parts;
  const size_t *first;
  const task_t *todo;
} pool_ctx_t;

static void run_part(void *ud, size_t k, void *res) {
  const pool_ctx_t *c = ud;
  const task_t *t = &c->todo[k];
  const job_t *j = c->jobs[t->job];
  part_t *pt = res;
  kr_sim_opts_t so = *j->o;
  if (j->policy == KR_SIM_FIXED) so.fixed_interval_ms = j->fixed_ms;
  if (j->sp->nshards > 1) {
    so.shard_of = j->sp->shard_of;
    so.shard = t->shard;
  }
  double *lambda = c->lambda[t->job];
  kr_sim_trace_out_t tr = {NULL, NULL, lambda};
  pt->err[0] = 0;
  pt->rc = kr_sim_run_ex(j->w, &so, j->policy, &pt->res, lambda ? &tr : NULL, pt->err,
                         sizeof pt->err);
}

static void part_done(void *ud, size_t k, const void *res, const char *why) {
  const pool_ctx_t *c = ud;
  const task_t *t = &c->todo[k];
  const job_t *j = c->jobs[t->job];
  uint32_t n = j->sp->nshards;
  const char *name = kr_sim_policy_name(j->policy);
  part_t *pt = &c->parts[c->first[t->job] + t->shard];
  if (!res) {
    pt->rc = KR_EIO;
    snprintf(pt->err, sizeof pt->err, "the %s run's process (shard %u of %u) %s", name,
             t->shard + 1, n, why);
    return;
  }
  memcpy(pt, res, sizeof *pt);
  pt->err[sizeof pt->err - 1] = 0;
  KR_LOG(KR_LOG_NOTICE, "simulate", "%s shard %u of %u: %" PRIu64 " hosts, %" PRIu64
         " fetches, %.1f s, %.1f CPU-s", name, t->shard + 1, n, pt->res.hosts,
         pt->res.all.fetches, pt->res.wall_s, pt->res.cpu_s);
}

/* Run the jobs (of one seed or of many): here one after the other (par
 * <= 1), or as jobs x shards tasks in a pool of up to par child processes
 * (sim_pool.c), each job's shards merged. */
static void run_jobs(job_t **jobs, size_t n, int par) {
  size_t ntasks = 0;
  size_t *first = kr_xcalloc(n + 1, sizeof *first);
  for (size_t i = 0; i < n; i++) {
    first[i] = ntasks;
    ntasks += jobs[i]->sp->nshards;
  }
  first[n] = ntasks;
  if (par <= 1 || ntasks <= 1) {
    free(first);
    for (size_t i = 0; i < n; i++) run_job(jobs[i]);
    return;
  }
  part_t *parts = kr_xcalloc(ntasks, sizeof *parts);
  task_t *todo = kr_xcalloc(ntasks, sizeof *todo);
  /* poisson's estimates are scored over every URI: the shards write
   * theirs into memory shared with us */
  double **lambda = kr_xcalloc(n, sizeof *lambda);
  size_t *lsize = kr_xcalloc(n, sizeof *lsize);
  size_t ntodo = 0;
  for (size_t i = 0; i < n; i++) {
    const job_t *j = jobs[i];
    uint32_t ns = j->sp->nshards;
    int shared = j->policy == KR_SIM_POISSON && ns > 1, merr = 0;
    if (shared) {
      lsize[i] = kr_sim_world_count(j->w) * sizeof(double) + 1;
      void *m = mmap(NULL, lsize[i], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      lambda[i] = m == MAP_FAILED ? NULL : m;
      merr = errno;
    }
    for (uint32_t s = 0; s < ns; s++) {
      part_t *pt = &parts[first[i] + s];
      if (shared && !lambda[i]) {
        pt->rc = KR_EIO;
        snprintf(pt->err, sizeof pt->err, "mmap: %s", strerror(merr));
        continue;
      }
      /* a task the pool never reports is an error, never zeroed numbers */
      pt->rc = KR_EIO;
      snprintf(pt->err, sizeof pt->err, "the %s run (shard %u of %u) did not run",
               kr_sim_policy_name(j->policy), s + 1, ns);
      todo[ntodo++] = (task_t){i, s};
    }
  }
  pool_ctx_t ctx = {jobs, lambda, parts, first, todo};
  kr_sim_pool_t pool = {.par = par, .size = sizeof(part_t), .run = run_part,
                        .done = part_done, .ud = &ctx};
  kr_sim_pool_run(&pool, ntodo);
  free(todo);
  for (size_t i = 0; i < n; i++) {
    job_t *j = jobs[i];
    uint32_t ns = j->sp->nshards;
    part_t *jp = &parts[first[i]];
    j->rc = 0;
    j->err[0] = 0;
    for (uint32_t s = 0; s < ns && !j->rc; s++)
      if (jp[s].rc) {
        j->rc = jp[s].rc;
        snprintf(j->err, sizeof j->err, "%s", jp[s].err);
      }
    if (j->rc) continue;
    if (ns == 1) {
      j->res = jp[0].res;
      continue;
    }
    kr_sim_result_t *rs = kr_xcalloc(ns, sizeof *rs);
    for (uint32_t s = 0; s < ns; s++) rs[s] = jp[s].res;
    kr_sim_result_merge(&j->res, rs, ns);
    free(rs);
    if (j->policy == KR_SIM_POISSON)
      kr_sim_score_estimates(j->w, j->o->duration_ms, lambda[i], &j->res);
  }
  for (size_t i = 0; i < n; i++)
    if (lambda[i]) munmap(lambda[i], lsize[i]);
  free(lambda);
  free(lsize);
  free(parts);
  free(first);
}

/* ---- output --------------------------------------------------------------- */

static void fmt_dur(double s, char *out, size_t len) {
  if (s < 120)
    snprintf(out, len, "%.0fs", s);
  else if (s < 7200)
    snprintf(out, len, "%.1fm", s / 60);
  else if (s < 2 * 86400)
    snprintf(out, len, "%.1fh", s / 3600);
  else
    snprintf(out, len, "%.1fd", s / 86400);
}

/* Mean lateness of the revisits issued in the run's second (q 0) or last
 * (q 1) quarter, s; 0 when none. */
static double overdue_mean_s(const kr_sim_result_t *r, int q) {
  return r->overdue_n[q] ? (double)r->overdue_sum_ms[q] / 1000.0 / (double)r->overdue_n[q] : 0.0;
}

static void print_invariants(job_t **jobs, size_t n);
static void print_signals(const kr_sim_opts_t *o, job_t **jobs, size_t n);

static void print_table(const char *title, job_t **jobs, size_t n, int early) {
  printf("\n%s\n", title);
  printf("%-22s %10s %10s %6s %6s %8s %10s %10s %9s\n", "policy", "versions", "captured",
         "ratio", "fresh", "age", "fetches", "body MiB", "fetch/ver");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    const kr_sim_metrics_t *m = early ? &r->early : &r->all;
    char name[64], age[32];
    if (r->policy == KR_SIM_FIXED) {
      char d[32];
      fmt_dur((double)r->fixed_interval_ms / 1000.0, d, sizeof d);
      snprintf(name, sizeof name, "fixed (%s)", d);
    } else {
      snprintf(name, sizeof name, "%s", kr_sim_policy_name(r->policy));
    }
    fmt_dur(kr_sim_age_s(m), age, sizeof age);
    printf("%-22s %10" PRIu64 " %10" PRIu64 " %6.3f %6.3f %8s %10" PRIu64 " %10.1f %9.2f\n", name,
           m->versions, m->captured, kr_sim_capture_ratio(m), kr_sim_freshness(m), age,
           m->fetches, (double)m->body_bytes / 1048576.0, kr_sim_fetches_per_version(m));
  }
}

static void print_text(const kr_sim_world_t *w, const kr_sim_opts_t *o, const char *source,
                       job_t **jobs, size_t n) {
  char wd[32], dur[32];
  fmt_dur((double)o->window_ms / 1000.0, wd, sizeof wd);
  fmt_dur((double)o->duration_ms / 1000.0, dur, sizeof dur);
  printf("kria simulate: %zu URIs on %" PRIu64 " hosts (%s), %s simulated, seed %" PRIu64 "\n",
         kr_sim_world_count(w), n ? jobs[0]->res.hosts : 0, source, dur, o->seed);
  char title[128];
  snprintf(title, sizeof title, "whole run (%s)", dur);
  print_table(title, jobs, n, 0);
  snprintf(title, sizeof title, "first %s", wd);
  print_table(title, jobs, n, 1);
  printf("\n%-22s %9s %9s %9s %9s %9s %9s\n", "importance-weighted", "w.ratio", "w.fresh",
         "harmonic", "w.ratio", "w.fresh", "harmonic");
  printf("%-22s %29s %29s\n", "", "(whole run)", "(first window)");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    printf("%-22s %9.3f %9.3f %9.4f %9.3f %9.3f %9.4f\n", kr_sim_policy_name(r->policy),
           kr_sim_wcapture_ratio(&r->all), kr_sim_wfreshness(&r->all), kr_sim_harmonic(&r->all),
           kr_sim_wcapture_ratio(&r->early), kr_sim_wfreshness(&r->early),
           kr_sim_harmonic(&r->early));
  }
  printf("\n%-22s %9s %9s %9s %9s %9s %8s %8s %7s\n", "validators", "unch.vis", "saved",
         "304s", "aborts", "lost", "distrust", "polite", "wall s");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    const kr_sim_metrics_t *m = &r->all;
    char pol[32];
    if (r->politeness_min_gap_ms < 0)
      snprintf(pol, sizeof pol, "-");
    else
      snprintf(pol, sizeof pol, "%s", r->politeness_violations ? "VIOLATED" : "ok");
    printf("%-22s %9" PRIu64 " %8.1f%% %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %8" PRIu64
           " %8s %7.1f\n",
           kr_sim_policy_name(r->policy), m->unchanged_visits, 100 * kr_sim_unchanged_saving(m),
           m->not_modified, m->aborted, m->lost_by_validators, r->hosts_distrusted, pol, r->wall_s);
  }
  printf("\n%-22s %12s %12s %12s %12s\n", "revisits late", "2nd quarter", "last quarter",
         "most", "raised");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    char a[32], b[32], m[32];
    fmt_dur(overdue_mean_s(r, 0), a, sizeof a);
    fmt_dur(overdue_mean_s(r, 1), b, sizeof b);
    fmt_dur((double)r->overdue_max_ms / 1000.0, m, sizeof m);
    printf("%-22s %12s %12s %12s %12" PRIu64 "\n", kr_sim_policy_name(r->policy), a, b, m,
           r->waits_capped);
  }
  print_invariants(jobs, n);
  print_signals(o, jobs, n);
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    if (r->policy == KR_SIM_POISSON && r->est_n)
      printf("\npoisson estimates at the end: %" PRIu64 " URIs, %.1f%% within 2x of the true rate, "
             "median estimate/true %.2f\n",
             r->est_n, 100 * r->est_within2, r->est_median_ratio);
  }
}

/* ---- signals ------------------------------------------------------------------ */

/* What the change signals did, per policy acting on them (sim.h "Signals"). */
static void print_signals(const kr_sim_opts_t *o, job_t **jobs, size_t n) {
  const kr_sim_signals_t *g = &o->signals;
  if (!(g->share > 0)) return;
  printf("\nchange signals: %.0f%% of the pages, recall %.2f, precision %.2f, polled every %.0f s",
         100 * g->share, g->recall, g->precision, (double)g->delay_ms / 1000.0);
  if (g->adv_share > 0)
    printf("; %.0f%% of the hosts adversarial (%s)", 100 * g->adv_share,
           g->adv_mode == KR_SIM_ADV_NOW ? "lastmod always now" : "lastmod never moves");
  printf("\n%-22s %8s %10s %10s %9s %9s %9s %10s %8s\n", "policy", "pages", "signals",
         "pulled", "TP", "FP", "FN", "stretched", "trusted");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    const kr_sim_sigstats_t *s = &r->sig;
    if (r->policy != KR_SIM_POISSON && r->policy != KR_SIM_MULTIPLICATIVE) continue;
    printf("%-22s %8" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
           " %10" PRIu64 " %4" PRIu64 "/%-3" PRIu64 "\n",
           kr_sim_policy_name(r->policy), s->pages, s->seen, s->pulled, s->tp, s->fp, s->fn,
           s->stretched, s->hosts_pulling, s->hosts_stretching);
  }
}

/* ---- invariants ------------------------------------------------------------- */

/* The verdicts of a run's invariants (sim.h "Invariants"): 1 pass, 0
 * fail, -1 not checked (nothing to check, or no cap configured). */
static void verdicts(const kr_sim_events_t *e, int v[4]) {
  v[0] = e->live_checked ? !e->live_late : -1;
  v[1] = e->rec_checked ? !e->rec_late : -1;
  v[2] = e->host_uris_cap ? !e->hosts_over_cap : -1;
  v[3] = e->hosts_checked ? !e->hosts_growing : -1;
}

static int invariants_fail(job_t **jobs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int v[4];
    verdicts(&jobs[i]->res.ev, v);
    for (int k = 0; k < 4; k++)
      if (v[k] == 0) return 1;
  }
  return 0;
}

static const char *verdict_name(int v) { return v > 0 ? "PASS" : v == 0 ? "FAIL" : "-"; }

static void print_invariants(job_t **jobs, size_t n) {
  if (!n || !jobs[0]->res.ev.tracked) return;
  char b[32];
  fmt_dur((double)jobs[0]->res.ev.bound_ms / 1000.0, b, sizeof b);
  printf("\ninvariants (recovery bound %s: politeness.max-backoff + max-retries x retry-delay)\n", b);
  for (size_t i = 0; i < n; i++) {
    const kr_sim_events_t *e = &jobs[i]->res.ev;
    int v[4];
    verdicts(e, v);
    char w1[32], w2[32], fig[256];
    const char *pol = kr_sim_policy_name(jobs[i]->res.policy);
    fmt_dur(fabs((double)e->live_worst_ms) / 1000.0, w1, sizeof w1);
    snprintf(fig, sizeof fig, "%" PRIu64 " of %" PRIu64 " checks late, worst %s%s (%s)", e->live_late,
             e->live_checked, e->live_worst_ms < 0 ? "-" : "+", w1,
             e->live_worst_url[0] ? e->live_worst_url : "-");
    printf("%-15s 1 live URIs visited within max-wait + bound   %-4s %s\n", pol, verdict_name(v[0]), fig);
    fmt_dur((double)KR_MAX(e->rec_worst_ms, 0) / 1000.0, w2, sizeof w2);
    snprintf(fig, sizeof fig, "%" PRIu64 " of %" PRIu64 " late, worst %s after recovery", e->rec_late,
             e->rec_checked, w2);
    printf("%-15s 2 recovered hosts' URIs within the bound     %-4s %s\n", "", verdict_name(v[1]), fig);
    if (e->host_uris_cap)
      snprintf(fig, sizeof fig, "max %" PRIu64 " (cap %" PRIu64 ", %" PRIu64 " hosts over)",
               e->host_uris_max, e->host_uris_cap, e->hosts_over_cap);
    else
      snprintf(fig, sizeof fig, "max %" PRIu64 " (no limits.max-uris-per-host)", e->host_uris_max);
    printf("%-15s 3 distinct URIs per host within the cap      %-4s %s\n", "", verdict_name(v[2]), fig);
    fmt_dur(fabs(e->worst_growth_s), w1, sizeof w1);
    snprintf(fig, sizeof fig, "%" PRIu64 " of %" PRIu64 " hosts growing, worst %s%s (%s)",
             e->hosts_growing, e->hosts_checked, e->worst_growth_s < 0 ? "-" : "+", w1,
             e->worst_host[0] ? e->worst_host : "-");
    printf("%-15s 4 lateness not growing (2nd vs last quarter) %-4s %s\n", "", verdict_name(v[3]), fig);
    printf("%-15s   events: %" PRIu64 " connects refused, %" PRIu64 " busy answers, %" PRIu64
           " dead answers, robots.txt %" PRIu64 " fetches (%" PRIu64 " 5xx), -61 %" PRIu64
           " retried %" PRIu64 " failed, -9998 %" PRIu64 "\n",
           "", e->refused, e->busy, e->dead, e->robots_fetches, e->robots_5xx, e->robots_retry,
           e->robots_failed, e->disallowed);
    printf("%-15s   relaxed robots: %" PRIu64 " URIs, %" PRIu64 " visited again; born %" PRIu64
           ", %" PRIu64 " visited, %" PRIu64 " not in the frontier; %" PRIu64 " links\n",
           "", e->relax_uris, e->relax_visited, e->born, e->born_visited, e->born_unknown, e->links);
    printf("%-15s   live URIs at the end: %" PRIu64 " disregarded, %" PRIu64 " failed, %" PRIu64
           " waiting to retry\n",
           "", e->end_disregarded, e->end_failed, e->end_retry);
  }
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void json_metrics(FILE *f, const kr_sim_metrics_t *m) {
  fprintf(f,
          "{\"versions_existed\": %" PRIu64 ", \"versions_captured\": %" PRIu64
          ", \"capture_ratio\": %.6f, \"mean_freshness\": %.6f, \"mean_age_s\": %.1f"
          ", \"fetches\": %" PRIu64 ", \"body_bytes\": %" PRIu64
          ", \"fetches_per_captured_version\": %.6f, \"not_modified\": %" PRIu64
          ", \"mid_fetch_aborts\": %" PRIu64 ", \"unchanged_visits\": %" PRIu64
          ", \"unchanged_full_body_bytes\": %" PRIu64 ", \"unchanged_body_bytes\": %" PRIu64
          ", \"unchanged_bytes_saved\": %.6f, \"lost_by_validators\": %" PRIu64
          ", \"weighted_versions_existed\": %.6f, \"weighted_versions_captured\": %.6f"
          ", \"weighted_capture_ratio\": %.6f, \"weighted_freshness\": %.6f"
          ", \"harmonic_penalty\": %.6f}",
          m->versions, m->captured, kr_sim_capture_ratio(m), kr_sim_freshness(m),
          kr_sim_age_s(m), m->fetches, m->body_bytes, kr_sim_fetches_per_version(m),
          m->not_modified, m->aborted, m->unchanged_visits, m->unchanged_full_bytes,
          m->unchanged_body_bytes, kr_sim_unchanged_saving(m), m->lost_by_validators,
          (double)m->wversions / KR_SIM_IMP_ONE_Q, (double)m->wcaptured / KR_SIM_IMP_ONE_Q,
          kr_sim_wcapture_ratio(m), kr_sim_wfreshness(m), kr_sim_harmonic(m));
}

static void json_verdict(FILE *f, int v) {
  fputs(v > 0 ? "true" : v == 0 ? "false" : "null", f);
}

static void json_invariants(FILE *f, const kr_sim_events_t *e) {
  int v[4];
  verdicts(e, v);
  fprintf(f, ",\n   \"invariants\": {\"bound_s\": %.3f, \"pass\": %s", (double)e->bound_ms / 1000.0,
          v[0] && v[1] && v[2] && v[3] ? "true" : "false");
  fprintf(f, ",\n    \"live\": {\"checks\": %" PRIu64 ", \"late\": %" PRIu64
          ", \"worst_excess_s\": %.3f, \"worst_url\": ", e->live_checked, e->live_late,
          (double)e->live_worst_ms / 1000.0);
  json_str(f, e->live_worst_url);
  fprintf(f, ", \"pass\": ");
  json_verdict(f, v[0]);
  fprintf(f, "},\n    \"recovery\": {\"checks\": %" PRIu64 ", \"late\": %" PRIu64
          ", \"worst_s\": %.3f, \"pass\": ", e->rec_checked, e->rec_late,
          (double)e->rec_worst_ms / 1000.0);
  json_verdict(f, v[1]);
  fprintf(f, "},\n    \"host_uris\": {\"max\": %" PRIu64 ", \"cap\": %" PRIu64
          ", \"hosts_over_cap\": %" PRIu64 ", \"pass\": ", e->host_uris_max, e->host_uris_cap,
          e->hosts_over_cap);
  json_verdict(f, v[2]);
  fprintf(f, "},\n    \"lateness\": {\"hosts\": %" PRIu64 ", \"growing\": %" PRIu64
          ", \"worst_growth_s\": %.3f, \"worst_host\": ", e->hosts_checked, e->hosts_growing,
          e->worst_growth_s);
  json_str(f, e->worst_host);
  fprintf(f, ", \"pass\": ");
  json_verdict(f, v[3]);
  fprintf(f, "},\n    \"events\": {\"refused\": %" PRIu64 ", \"busy\": %" PRIu64 ", \"dead\": %" PRIu64
          ", \"robots_fetches\": %" PRIu64 ", \"robots_5xx\": %" PRIu64 ", \"robots_retry\": %" PRIu64
          ", \"robots_failed\": %" PRIu64 ", \"disallowed\": %" PRIu64 ", \"relax_uris\": %" PRIu64
          ", \"relax_visited\": %" PRIu64 ", \"born\": %" PRIu64 ", \"born_visited\": %" PRIu64
          ", \"born_unknown\": %" PRIu64 ", \"links\": %" PRIu64 ", \"end_disregarded\": %" PRIu64
          ", \"end_failed\": %" PRIu64 ", \"end_retry\": %" PRIu64 "}}",
          e->refused, e->busy, e->dead, e->robots_fetches, e->robots_5xx, e->robots_retry,
          e->robots_failed, e->disallowed, e->relax_uris, e->relax_visited, e->born,
          e->born_visited, e->born_unknown, e->links, e->end_disregarded, e->end_failed,
          e->end_retry);
}

static const kr_sim_result_t *find(job_t **jobs, size_t n, kr_sim_policy_t p) {
  for (size_t i = 0; i < n; i++)
    if (jobs[i]->res.policy == p) return &jobs[i]->res;
  return NULL;
}

static void json_ratio(FILE *f, const char *name, const kr_sim_result_t *a,
                       const kr_sim_result_t *b, int early, int *first) {
  if (!a || !b) return;
  const kr_sim_metrics_t *ma = early ? &a->early : &a->all, *mb = early ? &b->early : &b->all;
  if (!mb->captured) return;
  fprintf(f, "%s\"%s\": %.4f", *first ? "" : ", ", name,
          (double)ma->captured / (double)mb->captured);
  *first = 0;
}

static void print_json(const kr_sim_world_t *w, const kr_sim_opts_t *o, const char *source,
                       const char *trace, uint64_t synth_hosts, job_t **jobs, size_t n) {
  FILE *f = stdout;
  fprintf(f, "{\"uris\": %zu, \"hosts\": %" PRIu64 ", \"source\": ", kr_sim_world_count(w),
          n ? jobs[0]->res.hosts : synth_hosts);
  json_str(f, source);
  if (trace) {
    fprintf(f, ", \"trace\": ");
    json_str(f, trace);
  }
  fprintf(f,
          ", \"seed\": %" PRIu64 ", \"days\": %.4f, \"window_days\": %.4f, \"fetch_ms\": %" PRId64
          ", \"conditional\": %s, \"midfetch\": %s, \"strip\": %s, \"sketch_prior\": %s",
          o->seed, (double)o->duration_ms / 86400000.0, (double)o->window_ms / 86400000.0,
          o->fetch_ms, o->conditional ? "true" : "false", o->midfetch ? "true" : "false",
          o->strip ? "true" : "false", o->sketch_prior ? "true" : "false");
  /* overrides; null: each host's config */
  if (o->delay_ms >= 0) fprintf(f, ", \"delay_ms\": %" PRId64, o->delay_ms);
  else fprintf(f, ", \"delay_ms\": null");
  if (o->utilisation > 0) fprintf(f, ", \"utilisation\": %.4f", o->utilisation);
  else fprintf(f, ", \"utilisation\": null");
  if (o->scheme) fprintf(f, ", \"scheme\": %d", (int)o->scheme);
  else fprintf(f, ", \"scheme\": null");
  if (o->sample_rate >= 0) fprintf(f, ", \"sample_rate\": %.4f", o->sample_rate);
  else fprintf(f, ", \"sample_rate\": null");
  fprintf(f, ",\n \"policies\": [");
  for (size_t i = 0; i < n; i++) {
    const kr_sim_result_t *r = &jobs[i]->res;
    fprintf(f, "%s\n  {\"policy\": \"%s\", \"fixed_interval_s\": ", i ? "," : "",
            kr_sim_policy_name(r->policy));
    if (r->policy == KR_SIM_FIXED)
      fprintf(f, "%.3f", (double)r->fixed_interval_ms / 1000.0);
    else
      fprintf(f, "null");
    fprintf(f, ",\n   \"all\": ");
    json_metrics(f, &r->all);
    fprintf(f, ",\n   \"first\": ");
    json_metrics(f, &r->early);
    fprintf(f,
            ",\n   \"uris_visited\": %" PRIu64 ", \"hosts_distrusted\": %" PRIu64
            ", \"politeness_checked\": %" PRIu64 ", \"politeness_violations\": %" PRIu64
            ", \"politeness_min_gap_ms\": %" PRId64 ", \"max_in_flight_per_host\": %u"
            ", \"at_min_wait\": %" PRIu64 ", \"at_max_wait\": %" PRIu64
            ", \"waits_capped\": %" PRIu64 ", \"overdue_max_s\": %.3f"
            ", \"overdue_mean_s\": [%.3f, %.3f]",
            r->uris_visited, r->hosts_distrusted, r->politeness_checked,
            r->politeness_violations, r->politeness_min_gap_ms, r->max_in_flight_host,
            r->at_min_wait, r->at_max_wait, r->waits_capped, (double)r->overdue_max_ms / 1000.0,
            overdue_mean_s(r, 0), overdue_mean_s(r, 1));
    if (r->policy == KR_SIM_POISSON)
      fprintf(f,
              ", \"estimates\": {\"uris\": %" PRIu64
              ", \"within_2x\": %.4f, \"median_ratio\": %.4f}",
              r->est_n, r->est_within2, r->est_median_ratio);
    if (r->ev.tracked) json_invariants(f, &r->ev);
    if (o->signals.share > 0) {
      const kr_sim_sigstats_t *g = &r->sig;
      fprintf(f,
              ", \"signals\": {\"pages\": %" PRIu64 ", \"seen\": %" PRIu64 ", \"pulled\": %" PRIu64
              ", \"tp\": %" PRIu64 ", \"fp\": %" PRIu64 ", \"fn\": %" PRIu64
              ", \"stretched\": %" PRIu64 ", \"hosts_pulling\": %" PRIu64
              ", \"hosts_stretching\": %" PRIu64 "}",
              g->pages, g->seen, g->pulled, g->tp, g->fp, g->fn, g->stretched, g->hosts_pulling,
              g->hosts_stretching);
    }
    fprintf(f, ", \"wall_s\": %.3f, \"cpu_s\": %.3f}", r->wall_s, r->cpu_s);
  }
  fprintf(f, "],\n \"ratios\": {");
  int first = 1;
  const kr_sim_result_t *fx = find(jobs, n, KR_SIM_FIXED), *mu = find(jobs, n, KR_SIM_MULTIPLICATIVE),
                        *po = find(jobs, n, KR_SIM_POISSON);
  json_ratio(f, "poisson_vs_fixed", po, fx, 0, &first);
  json_ratio(f, "poisson_vs_multiplicative", po, mu, 0, &first);
  json_ratio(f, "multiplicative_vs_fixed", mu, fx, 0, &first);
  json_ratio(f, "poisson_vs_fixed_first", po, fx, 1, &first);
  json_ratio(f, "poisson_vs_multiplicative_first", po, mu, 1, &first);
  json_ratio(f, "oracle_vs_multiplicative", find(jobs, n, KR_SIM_ORACLE), mu, 0, &first);
  json_ratio(f, "poisson_vs_oracle", po, find(jobs, n, KR_SIM_ORACLE), 0, &first);
  fprintf(f, "}}\n");
}

/* ---- the command ----------------------------------------------------------- */

/* What the command line asks for. */
typedef struct args {
  kr_sim_synth_t syn;
  kr_sim_opts_t o;
  const char *trace, *cfg_file, *policies;
  const char *overrides[MAX_OVERRIDES];
  size_t noverrides;
  int json, verbose, jobs_par, synth_given, check;
  const char *event_args[MAX_EVENT_ARGS], *events_file;
  size_t nevent_args;
  uint64_t fixed_passes;
  int64_t fixed_ms;
  int want[KR_SIM_POLICIES]; /* the policies selected */
  uint64_t seeds;            /* --seeds: runs over this many seeds */
  const char *ref_name;      /* --ref, NULL: the first policy listed */
  kr_sim_policy_t ref;
} args_t;

/* The synthetic world's options whose value has a parser of its own in
 * sim.h (which names the option in its messages, --mix aside). */
static int world_spec(const char *a) {
  return !strcmp(a, "--mix") || !strcmp(a, "--shift") || !strcmp(a, "--cycles") ||
         !strcmp(a, "--importance");
}

/* Parse one of them into syn: 0, or -1 after reporting. */
static int world_spec_parse(kr_sim_synth_t *syn, const char *a, const char *v) {
  char e[256];
  int rc;
  if (!strcmp(a, "--mix"))
    rc = kr_sim_mix_parse(v, &syn->mix, e, sizeof e);
  else if (!strcmp(a, "--shift"))
    rc = kr_sim_shift_parse(v, &syn->shift, e, sizeof e);
  else if (!strcmp(a, "--cycles"))
    rc = kr_sim_cycles_parse(v, &syn->cycles, e, sizeof e);
  else
    rc = kr_sim_importance_parse(v, &syn->importance, e, sizeof e);
  if (!rc) return 0;
  if (!strcmp(a, "--mix"))
    kr_cli_error(0, "--mix: %s", e);
  else
    kr_cli_error(0, "%s", e);
  return -1;
}

/* Read the options into args. -1 to go on, else the exit status (0 after
 * --help, 64 for a usage error). */
static int parse_args(args_t *args, int argc, char **argv) {
  kr_sim_synth_t *syn = &args->syn;
  kr_sim_opts_t *o = &args->o;
  kr_sim_synth_default(syn);
  kr_sim_opts_default(o);
  args->policies = "fixed,multiplicative,poisson";
  args->jobs_par = 1;
  args->fixed_passes = 2;
  args->seeds = 1;

#define NEED_ARG()                                                       \
  do {                                                                   \
    if (i + 1 >= argc) {                                                 \
      kr_cli_error(0, "%s needs a value (see 'kria simulate --help')", a); \
      return 64;                                                         \
    }                                                                    \
    v = argv[++i];                                                       \
  } while (0)
#define BAD(what)                                                        \
  do {                                                                   \
    kr_cli_error(0, "%s: bad value '%s' (%s)", a, v, what);              \
    return 64;                                                           \
  } while (0)

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    uint64_t u;
    double d;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (!strcmp(a, "--json")) {
      args->json = 1;
    } else if (!strcmp(a, "-v")) {
      args->verbose++;
    } else if (!strcmp(a, "--no-conditional")) {
      o->conditional = 0;
    } else if (!strcmp(a, "--no-strip")) {
      o->strip = 0;
    } else if (!strcmp(a, "--no-midfetch")) {
      o->midfetch = 0;
    } else if (!strcmp(a, "--check")) {
      args->check = 1;
    } else if (!strcmp(a, "--event")) {
      NEED_ARG();
      if (args->nevent_args == MAX_EVENT_ARGS) BAD("too many --event (use --events FILE)");
      args->event_args[args->nevent_args++] = v;
    } else if (!strcmp(a, "--events")) {
      NEED_ARG();
      args->events_file = v;
    } else if (!strcmp(a, "--restart")) {
      NEED_ARG();
      if (kr_config_parse_duration(v, strlen(v), &o->restart_ms) || o->restart_ms < 1)
        BAD("a duration of at least 1ms");
    } else if (!strcmp(a, "--restart-forget")) {
      o->restart_forget = 1;
    } else if (!strcmp(a, "--sketch-prior")) {
      o->sketch_prior = 1;
    } else if (!strcmp(a, "--trace")) {
      NEED_ARG();
      args->trace = v;
    } else if (!strcmp(a, "--urls")) {
      NEED_ARG();
      if (parse_u64(v, 1, KR_SIM_MAX_URIS, &syn->urls)) BAD("1..10000000");
      args->synth_given = 1;
    } else if (!strcmp(a, "--hosts")) {
      NEED_ARG();
      if (parse_u64(v, 1, KR_SIM_MAX_URIS, &syn->hosts)) BAD("1..10000000");
      args->synth_given = 1;
    } else if (world_spec(a)) {
      NEED_ARG();
      if (world_spec_parse(syn, a, v)) return 64;
      args->synth_given = 1;
    } else if (!strcmp(a, "--volatile")) {
      NEED_ARG();
      if (parse_double(v, 0, 1, &syn->volatile_share)) BAD("a share within 0..1");
      args->synth_given = 1;
    } else if (!strcmp(a, "--validators")) {
      NEED_ARG();
      if (parse_validators(v, syn->share)) BAD("correct=A,missing=B,lying=C, shares >= 0");
      args->synth_given = 1;
    } else if (!strcmp(a, "--signals") || !strcmp(a, "--signals-adversarial")) {
      NEED_ARG();
      char e[256];
      int bad = a[9] ? kr_sim_signals_adversarial_parse(v, &o->signals, e, sizeof e)
                     : kr_sim_signals_parse(v, &o->signals, e, sizeof e);
      if (bad) {
        kr_cli_error(0, "%s: %s", a, e);
        return 64;
      }
    } else if (!strcmp(a, "--size")) {
      NEED_ARG();
      if (kr_config_parse_size(v, strlen(v), &u) || u == 0 || u > (UINT64_C(1) << 30))
        BAD("a size within 1..1GiB");
      syn->size = u;
      args->synth_given = 1;
    } else if (!strcmp(a, "--content-type")) {
      NEED_ARG();
      if (!*v || strlen(v) > 200 || !strchr(v, '/')) BAD("type/subtype");
      syn->content_type = v;
      args->synth_given = 1;
    } else if (!strcmp(a, "--seed")) {
      NEED_ARG();
      if (parse_u64(v, 0, UINT64_MAX, &u)) BAD("an unsigned integer");
      syn->seed = o->seed = u;
    } else if (!strcmp(a, "--days")) {
      NEED_ARG();
      if (parse_days(v, &o->duration_ms)) BAD("days within (0, 3650]");
    } else if (!strcmp(a, "--window-days")) {
      NEED_ARG();
      if (parse_days(v, &o->window_ms)) BAD("days within (0, 3650]");
    } else if (!strcmp(a, "--policy")) {
      NEED_ARG();
      args->policies = v;
    } else if (!strcmp(a, "--fixed-interval")) {
      NEED_ARG();
      if (kr_config_parse_duration(v, strlen(v), &args->fixed_ms) || args->fixed_ms < 1000)
        BAD("a duration of at least 1s");
    } else if (!strcmp(a, "--fixed-passes")) {
      NEED_ARG();
      if (parse_u64(v, 1, 10, &args->fixed_passes)) BAD("1..10");
    } else if (!strcmp(a, "-c")) {
      NEED_ARG();
      args->cfg_file = v;
    } else if (!strcmp(a, "-o")) {
      NEED_ARG();
      if (args->noverrides == MAX_OVERRIDES) BAD("too many -o");
      args->overrides[args->noverrides++] = v;
    } else if (!strcmp(a, "--delay")) {
      NEED_ARG();
      if (kr_config_parse_duration(v, strlen(v), &o->delay_ms) || o->delay_ms > 86400000)
        BAD("a duration within 0..1d");
    } else if (!strcmp(a, "--valence")) {
      NEED_ARG();
      if (parse_u64(v, 1, 64, &u)) BAD("1..64");
      o->valence = (int)u;
    } else if (!strcmp(a, "--fetch-time")) {
      NEED_ARG();
      if (kr_config_parse_duration(v, strlen(v), &o->fetch_ms) || o->fetch_ms < 1 ||
          o->fetch_ms > 60000)
        BAD("a duration within 1ms..60s");
    } else if (!strcmp(a, "--fetch-sigma")) {
      NEED_ARG();
      if (parse_double(v, 0, 3, &o->fetch_sigma)) BAD("0..3");
    } else if (!strcmp(a, "--utilisation")) {
      NEED_ARG();
      if (parse_double(v, 0, 1, &d) || !(d > 0)) BAD("within (0, 1]");
      o->utilisation = d;
    } else if (!strcmp(a, "--scheme")) {
      NEED_ARG();
      if (kr_validators_scheme_parse(v, strlen(v), &o->scheme)) BAD("1-4, timestamp, etag, both, either");
    } else if (!strcmp(a, "--sample-rate")) {
      NEED_ARG();
      if (parse_double(v, 0, 1, &o->sample_rate)) BAD("a share within 0..1");
    } else if (!strcmp(a, "--abort-bytes")) {
      NEED_ARG();
      if (kr_config_parse_size(v, strlen(v), &o->abort_bytes) || o->abort_bytes > (UINT64_C(1) << 30))
        BAD("a size within 0..1GiB");
    } else if (!strcmp(a, "--state-dir")) {
      NEED_ARG();
      o->state_parent = v;
    } else if (!strcmp(a, "--seeds")) {
      NEED_ARG();
      if (parse_u64(v, 1, 100, &args->seeds)) BAD("1..100");
    } else if (!strcmp(a, "--ref")) {
      NEED_ARG();
      args->ref_name = v;
    } else if (!strcmp(a, "--jobs")) {
      NEED_ARG();
      if (parse_u64(v, 1, 16, &u)) BAD("1..16");
      args->jobs_par = (int)u;
    } else {
      kr_cli_error(0, "unknown option '%s' (see 'kria simulate --help')", a);
      return 64;
    }
  }
#undef NEED_ARG
#undef BAD
  if (args->trace && args->synth_given) {
    kr_cli_error(0, "--trace excludes the synthetic world's options (--urls, --hosts, --mix, ...)");
    return 64;
  }
  return -1;
}

/* --policy into args->want. 0, or 64 for a usage error. */
static int parse_policies(args_t *args) {
  int *want = args->want;
  for (const char *p = args->policies; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    kr_sim_policy_t pol;
    if (kr_sim_policy_parse(p, n, &pol)) {
      char names[256] = "";
      for (int i = 0; i < KR_SIM_POLICIES; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 kr_sim_policy_name((kr_sim_policy_t)i));
      kr_cli_error(0, "--policy: unknown policy '%.*s' (%s)", (int)n, p, names);
      return 64;
    }
    if (p == args->policies) args->ref = pol; /* the first listed */
    want[pol] = 1;
    p += n;
    if (*p == ',') p++;
  }
  int any = 0, adaptive = 0;
  for (int i = 0; i < KR_SIM_POLICIES; i++) {
    any |= want[i];
    if (i != KR_SIM_FIXED) adaptive |= want[i];
  }
  if (!any) {
    kr_cli_error(0, "--policy: no policy given");
    return 64;
  }
  if (want[KR_SIM_FIXED] && !args->fixed_ms && !adaptive) {
    kr_cli_error(0, "fixed alone needs --fixed-interval (or an adaptive policy to match)");
    return 64;
  }
  if (args->ref_name) {
    kr_sim_policy_t pol;
    if (kr_sim_policy_parse(args->ref_name, strlen(args->ref_name), &pol) || !want[pol]) {
      kr_cli_error(0, "--ref: '%s' is not one of the policies run (--policy)", args->ref_name);
      return 64;
    }
    args->ref = pol;
  }

  return 0;
}

/* The configuration of -c and -o. 0, or 2 after reporting what it refused. */
static int load_config(const args_t *args, kr_config_t **out) {
  kr_config_t *cfg = kr_config_new();
  int rc = 0;
  if (args->cfg_file) rc = kr_config_load_file(cfg, args->cfg_file);
  for (size_t i = 0; !rc && i < args->noverrides; i++) rc = kr_config_set(cfg, args->overrides[i]);
  if (!rc) rc = kr_config_finish(cfg);
  if (rc) {
    size_t ne = kr_config_error_count(cfg);
    for (size_t i = 0; i < ne; i++) kr_cli_error(KR_ECONFIG, "%s", kr_config_error(cfg, i));
    if (!ne) kr_cli_error(KR_ECONFIG, "the configuration was refused");
    kr_config_free(cfg);
    return 2;
  }
  *out = cfg;
  return 0;
}

/* The world of seed `seed`, from the trace or synthetic, and its events.
 * 0, or the exit status after reporting. */
static int load_world(const args_t *args, uint64_t seed, kr_sim_world_t **out) {
  kr_sim_world_t *w = NULL;
  char err[1024] = "";
  int rc;
  kr_sim_synth_t syn = args->syn;
  syn.seed = seed;
  if (args->trace)
    rc = kr_sim_world_trace_file(args->trace, seed, &w, err, sizeof err);
  else
    rc = kr_sim_world_synthetic(&syn, &w, err, sizeof err);
  if (rc) {
    kr_cli_error(rc, "%s", err);
    return args->trace ? 2 : 64;
  }
  /* events: a bad one is a usage error, an unreadable file an error */
  int ev_rc = 0;
  if (args->events_file) {
    int e = kr_sim_world_events_file(w, args->events_file, args->o.duration_ms, err, sizeof err);
    ev_rc = e == KR_EIO ? 2 : e ? 64 : 0;
  }
  for (size_t i = 0; !ev_rc && i < args->nevent_args; i++) {
    char msg[512];
    const char *ea = args->event_args[i];
    if (kr_sim_world_event(w, ea, strlen(ea), args->o.duration_ms, msg, sizeof msg)) {
      snprintf(err, sizeof err, "--event '%.200s': %s", ea, msg);
      ev_rc = 64;
    }
  }
  if (ev_rc) {
    kr_cli_error(ev_rc == 2 ? KR_EIO : KR_EINVAL, "%s", err);
    kr_sim_world_free(w);
    return ev_rc;
  }
  *out = w;
  return 0;
}

/* One seed: its world, options, split and runs. */
typedef struct seedrun {
  kr_sim_world_t *w;
  kr_sim_opts_t o;
  split_t sp;
  split_t whole; /* for the policies that cannot be split (one bandwidth) */
  uint32_t *shard_of;
  job_t *jobs[KR_SIM_POLICIES * 2]; /* in print order once run */
  size_t nj;
} seedrun_t;

static job_t *job_new(seedrun_t *sr, kr_sim_policy_t p, int64_t fixed_ms) {
  job_t *j = kr_xcalloc(1, sizeof *j);
  j->policy = p;
  j->fixed_ms = fixed_ms;
  j->w = sr->w;
  j->o = &sr->o;
  /* one bandwidth for every host couples them: the run stays whole, one
   * task of the pool beside the other policies' shards */
  j->sp = kr_sim_policy_is_global(p) ? &sr->whole : &sr->sp;
  sr->jobs[sr->nj++] = j;
  return j;
}

/* The first failed job's error reported; its code, 0 none. */
static int jobs_error(job_t **jobs, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (jobs[i]->rc) {
      kr_cli_error(jobs[i]->rc, "%s run: %s", what ? what : kr_sim_policy_name(jobs[i]->policy),
                   jobs[i]->err);
      return jobs[i]->rc;
    }
  return 0;
}

/* Fixed, per seed, with the interval that spends the seed's reference
 * run's fetches (poisson when selected, else the first adaptive one),
 * run again with a corrected interval while its count is more than 1 %
 * off (at most --fixed-passes runs); the seeds' runs of a pass share the
 * pool. 0 or the error of a run. */
static int run_fixed_matched(seedrun_t *sr, size_t ns, const args_t *args) {
  job_t **pending = kr_xcalloc(ns, sizeof *pending);
  double *target = kr_xcalloc(ns, sizeof *target);
  size_t np = 0;
  for (size_t k = 0; k < ns; k++) {
    const kr_sim_result_t *ref = &sr[k].jobs[0]->res;
    for (size_t i = 0; i < sr[k].nj; i++)
      if (sr[k].jobs[i]->policy == KR_SIM_POISSON) ref = &sr[k].jobs[i]->res;
    int64_t ms = kr_sim_fixed_interval(ref, kr_sim_world_count(sr[k].w), sr[k].o.duration_ms);
    target[k] = (double)ref->all.fetches;
    pending[np++] = job_new(&sr[k], KR_SIM_FIXED, ms);
  }
  int rc = 0;
  for (uint64_t pass = 0; pass < args->fixed_passes && np && !rc; pass++) {
    run_jobs(pending, np, args->jobs_par);
    rc = jobs_error(pending, np, "fixed");
    size_t again = 0;
    for (size_t i = 0; i < np && !rc; i++) {
      job_t *fx = pending[i];
      size_t k = 0;
      while (&sr[k].o != fx->o) k++;
      double got = (double)fx->res.all.fetches, n = (double)kr_sim_world_count(fx->w);
      if (fabs(got - target[k]) <= 0.01 * target[k] || !(got > n) || !(target[k] > n)) continue;
      if (pass + 1 < args->fixed_passes) {
        /* visits beyond the first go as 1 / interval */
        double ms = (double)fx->fixed_ms * (got - n) / (target[k] - n);
        fx->fixed_ms = ms < 1000 ? 1000 : (int64_t)ms;
        pending[again++] = fx;
      }
    }
    np = again;
  }
  free(pending);
  free(target);
  return rc;
}

/* Every selected policy over every seed's world: the adaptive ones (and
 * fixed with its own interval) first, all seeds in one pool, then fixed
 * against each seed's reference. Each seed's jobs end in print order
 * (fixed, multiplicative, poisson, oracle, ...). 0 or the error of a run. */
static int run_policies(seedrun_t *sr, size_t ns, const args_t *args) {
  const int *want = args->want;
  job_t **all = kr_xcalloc(ns * (KR_SIM_POLICIES + 1), sizeof *all);
  size_t na = 0;
  for (size_t k = 0; k < ns; k++) {
    for (int p = KR_SIM_MULTIPLICATIVE; p < KR_SIM_POLICIES; p++)
      if (want[p]) all[na++] = job_new(&sr[k], (kr_sim_policy_t)p, 0);
    if (want[KR_SIM_FIXED] && args->fixed_ms) /* independent: run with the others */
      all[na++] = job_new(&sr[k], KR_SIM_FIXED, args->fixed_ms);
  }
  run_jobs(all, na, args->jobs_par);
  int rc = jobs_error(all, na, NULL);
  free(all);
  if (!rc && want[KR_SIM_FIXED] && !args->fixed_ms) rc = run_fixed_matched(sr, ns, args);
  for (size_t k = 0; k < ns; k++) {
    job_t **jobs = sr[k].jobs;
    for (size_t i = 1; i < sr[k].nj; i++)
      for (size_t m = i; m > 0 && jobs[m]->policy < jobs[m - 1]->policy; m--) {
        job_t *t = jobs[m];
        jobs[m] = jobs[m - 1];
        jobs[m - 1] = t;
      }
  }
  return rc;
}

int kr_cmd_simulate(int argc, char **argv) {
  args_t args;
  memset(&args, 0, sizeof args);
  int rc = parse_args(&args, argc, argv);
  if (rc >= 0) return rc;
  if (parse_policies(&args)) return 64;

  kr_log_level = args.verbose >= 2 ? KR_LOG_INFO : args.verbose ? KR_LOG_NOTICE : KR_LOG_WARN;

  kr_config_t *cfg;
  if (load_config(&args, &cfg)) return 2;
  rc = 0;

  /* seed k: the base seed + k, for the world and for the fetches */
  size_t ns = (size_t)args.seeds;
  seedrun_t *sr = kr_xcalloc(ns, sizeof *sr);
  for (size_t k = 0; k < ns && !rc; k++) {
    sr[k].o = args.o;
    sr[k].o.cfg = cfg;
    sr[k].o.seed = args.o.seed + k;
    sr[k].o.invariants = args.check;
    rc = load_world(&args, sr[k].o.seed, &sr[k].w);
    sr[k].sp = (split_t){.nshards = 1, .shard_of = NULL};
    sr[k].whole = sr[k].sp;
    if (!rc && args.jobs_par > 1) {
      size_t n = kr_sim_world_count(sr[k].w);
      sr[k].shard_of = kr_xcalloc(n ? n : 1, sizeof *sr[k].shard_of);
      sr[k].sp.nshards = kr_sim_shard_plan(sr[k].w, (uint32_t)args.jobs_par, sr[k].shard_of);
      sr[k].sp.shard_of = sr[k].shard_of;
    }
  }
  int world_rc = rc;
  if (!rc) rc = run_policies(sr, ns, &args);
  if (!rc) {
    const char *source = args.trace ? "trace" : "synthetic";
    if (ns > 1) {
      size_t npol = sr[0].nj, ref = 0;
      kr_sim_result_t *res = kr_xcalloc(ns * npol, sizeof *res);
      for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < npol; i++) res[k * npol + i] = sr[k].jobs[i]->res;
      for (size_t i = 0; i < npol; i++)
        if (sr[0].jobs[i]->policy == args.ref) ref = i;
      kr_simulate_seeds_t v = {.source = source, .trace = args.trace,
                               .uris = kr_sim_world_count(sr[0].w), .o = &sr[0].o,
                               .seed0 = args.o.seed, .nseeds = ns, .npol = npol, .res = res,
                               .ref = ref, .json = args.json};
      kr_simulate_print_seeds(stdout, &v);
      free(res);
    } else if (args.json) {
      print_json(sr[0].w, &sr[0].o, source, args.trace, args.syn.hosts, sr[0].jobs, sr[0].nj);
    } else {
      print_text(sr[0].w, &sr[0].o, source, sr[0].jobs, sr[0].nj);
    }
    if (fflush(stdout) != 0) rc = KR_EIO;
  }
  int failed = 0;
  for (size_t k = 0; k < ns; k++) {
    if (!rc && args.check && invariants_fail(sr[k].jobs, sr[k].nj)) failed = 1;
    for (size_t i = 0; i < sr[k].nj; i++) free(sr[k].jobs[i]);
    free(sr[k].shard_of);
    kr_sim_world_free(sr[k].w);
  }
  free(sr);
  kr_config_free(cfg);
  if (world_rc) return world_rc;
  return rc ? 2 : failed ? 1 : 0;
}
