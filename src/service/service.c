/*
 * The crawl as a service (see service.h). Sections: opening and closing
 * (status server, sd_notify, the timers and SIGHUP), the tick (samples,
 * census, progress line, STATUS=), the watchdog, host summaries, reload.
 *
 * Costs: the tick runs once a second and does O(1) work but when a
 * progress line or a STATUS= update is due (then one O(hosts) pass over
 * in-memory host queues, at most once a second, shared with the status
 * pages through the summary cache). The census is off the loop. So an
 * idle crawl wakes once a second, and a busy one pays a few microseconds
 * per second plus what the status pages are asked for.
 */
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawl.h"
#include "internal.h"
#include "kria/seeds.h"
#include "log.h"
#include "archive.h"
#include "scopestate.h"
#include "turnprof.h"

#define TICK_MS 1000
/* A reload's revival of URIs back in scope: loop time per tick (about
 * 3,000 URIs decided; the first step runs in the reload itself). */
#define SCOPE_REVIVE_STEP_NS (10u * 1000 * 1000)
#define SD_STATUS_MS 10000

static void on_tick(uv_timer_t *t);
static void on_watchdog(uv_timer_t *t);
static void on_lag_probe(uv_timer_t *t);
static void on_sighup(uv_signal_t *h, int signum);

const char *kr__service_state(const kr_service_t *s) {
  kr_crawl_state_t cs;
  kr_crawl_get_state(s->c, &cs);
  if (cs.stopping) return "stopping";
  if (cs.paused) return "paused";
  /* running, but issuing nothing until the state disk has room again */
  return cs.disk_held ? "held" : "running";
}

/* ---- opening and closing ---------------------------------------------------- */

static int svc_open(kr_crawl_t *c, void **state, char *err, size_t errlen) {
  kr_service_t *s = kr_xcalloc(1, sizeof *s);
  *state = s; /* a failed start still closes and frees us */
  s->c = c;
  s->started_ms = kr_crawl_now(c);
  const kr_config_view_t *g = kr_config_global(c->cfg);
  if (c->opts.config_path) {
    s->config_path = kr_xstrdup(c->opts.config_path);
    s->n_overrides = c->opts.n_overrides;
    s->overrides = s->n_overrides ? kr_xcalloc(s->n_overrides, sizeof *s->overrides) : NULL;
    for (size_t i = 0; i < s->n_overrides; i++) s->overrides[i] = kr_xstrdup(c->opts.overrides[i]);
  }
  s->prog = kr_progress_new(&c->loop, kr_store_path(kr_frontier_store(c->frontier)));
  s->progress_ms = (uint64_t)kr_config_ms(g, KR_CFG_CRAWL_PROGRESS_INTERVAL);

  int rc = kr_sdnotify_open(&s->sd);
  if (rc) KR_LOG(KR_LOG_WARN, "NOTIFY_SOCKET", "not usable (%s): no systemd notifications",
                 kr_strerror(rc));

  const char *listen = kr_config_str(g, KR_CFG_STATUS_LISTEN);
  if (listen[0]) {
    kr_status_opts_t so;
    kr_status_opts_default(&so);
    so.listen = listen;
    so.token = kr_config_str(g, KR_CFG_STATUS_TOKEN);
    so.max_clients = (uint32_t)kr_config_int(g, KR_CFG_STATUS_MAX_CLIENTS);
    /* WebSub hubs verify and push at /websub/TOKEN without the bearer
     * token: the unguessable TOKEN guards the route (src/crawl/websub.c) */
    if (*kr_config_str(g, KR_CFG_WEBSUB_CALLBACK)) so.public_prefix = "/websub/";
    so.handler = kr__status_pages_handle;
    so.ud = s;
    rc = kr_status_start(&c->loop, &so, &s->status, err, errlen);
    if (rc) return rc; /* the crawl's teardown closes and frees us */
    /* The bound address (listen = 127.0.0.1:0 picks a port): scripts and
     * `kria status` read this line and the file. */
    KR_LOG(KR_LOG_NOTICE, NULL, "status: listening on http://%s/", kr_status_address(s->status));
    s->addr_path = kr_xasprintf("%s/status.addr", kr_config_str(g, KR_CFG_CRAWL_STATE_DIR));
    int afd = open(s->addr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (afd >= 0) fchmod(afd, 0644); /* exactly, whatever the umask */
    FILE *f = afd >= 0 ? fdopen(afd, "w") : NULL;
    if (!f && afd >= 0) close(afd);
    if (f) {
      fprintf(f, "%s\n", kr_status_address(s->status));
      fclose(f);
    } else {
      KR_LOG(KR_LOG_WARN, s->addr_path, "cannot write the status address: %s", strerror(errno));
    }
  }

  uv_timer_init(&c->loop, &s->tick);
  s->tick_init = 1;
  s->tick.data = s;
  uv_timer_init(&c->loop, &s->watchdog);
  s->watchdog_init = 1;
  s->watchdog.data = s;
  uv_timer_init(&c->loop, &s->lag_probe);
  s->lag_probe_init = 1;
  s->lag_probe.data = s;
  if (!c->opts.no_signals) {
    uv_signal_init(&c->loop, &s->sighup);
    s->sighup_init = 1;
    s->sighup.data = s;
    uv_signal_start(&s->sighup, on_sighup, SIGHUP);
  }
  return 0;
}

static void svc_ready(void *state) {
  kr_service_t *s = state;
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  s->next_progress_ms = now + s->progress_ms;
  s->next_sd_status_ms = now + SD_STATUS_MS;
  s->tick_due_mono = uv_now(&c->loop) + TICK_MS;
  s->lag_window_start = uv_now(&c->loop);
  uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
  s->lag_probe_due = uv_now(&c->loop) + KR_SVC_LAG_PROBE_MS;
  uv_timer_start(&s->lag_probe, on_lag_probe, KR_SVC_LAG_PROBE_MS, KR_SVC_LAG_PROBE_MS);
  if (s->sd.watchdog_usec) {
    uint64_t every = s->sd.watchdog_usec / 2000;
    uv_timer_start(&s->watchdog, on_watchdog, every ? every : 1, every ? every : 1);
  }
  kr_frontier_stats_t fs;
  kr_frontier_stats(c->frontier, &fs);
  kr_sdnotify_send(&s->sd, "READY=1");
  kr_sdnotify_status(&s->sd, "crawling: %" PRIu64 " URIs known, %" PRIu64 " queued%s%s",
                     fs.c.discovered, fs.c.queued, s->status ? ", status on http://" : "",
                     s->status ? kr_status_address(s->status) : "");
}

static void svc_issued(void *state, const kr_curi_t *curi) {
  kr_service_t *s = state;
  if (curi->visits > 0) kr_progress_issued(s->prog, curi->overdue_ms);
}

static void svc_stopping(void *state) {
  kr_service_t *s = state;
  kr_sdnotify_send(&s->sd, "STOPPING=1");
}

static void close_if(uv_handle_t *h, int init) {
  if (init && !uv_is_closing(h)) uv_close(h, NULL);
}

static void svc_close(void *state) {
  kr_service_t *s = state;
  if (s->closed) return;
  s->closed = 1;
  kr_status_close(s->status);
  s->status = NULL;
  if (s->addr_path) unlink(s->addr_path); /* nobody answers there any more */
  close_if((uv_handle_t *)&s->tick, s->tick_init);
  close_if((uv_handle_t *)&s->watchdog, s->watchdog_init);
  close_if((uv_handle_t *)&s->lag_probe, s->lag_probe_init);
  close_if((uv_handle_t *)&s->sighup, s->sighup_init);
  /* A census still running is told to stop; its job frees itself. */
  kr_progress_free(s->prog);
  s->prog = NULL;
}

static void svc_free(void *state) {
  kr_service_t *s = state;
  kr_progress_free(s->prog);
  kr_sdnotify_close(&s->sd);
  for (size_t i = 0; i < s->nretired; i++) kr__crawl_hostcfg_free(s->retired[i]);
  free(s->retired);
  for (size_t i = 0; i < s->nold_scopes; i++) kr_scope_free(s->old_scopes[i]);
  free(s->old_scopes);
  /* The crawl's current config may be one of ours: cmd_crawl frees only
   * the one it made. Nothing reads c->cfg after this. */
  for (size_t i = 0; i < s->nconfigs; i++) kr_config_free(s->configs[i]);
  free(s->configs);
  for (size_t i = 0; i < s->n_overrides; i++) free(s->overrides[i]);
  free(s->overrides);
  free(s->config_path);
  free(s->addr_path);
  free(s);
}

const kr_crawl_hooks_t kr_service_hooks = {.open = svc_open, .ready = svc_ready,
                                           .issued = svc_issued, .stopping = svc_stopping,
                                           .close = svc_close, .free = svc_free};

/* ---- the tick ---------------------------------------------------------------------- */

/* Changes found so far: the crawl's counter (counters.h), the one figure
 * every surface shows. */
uint64_t kr__service_changes(const kr_service_t *s) {
  kr_crawl_stats_t st;
  kr_crawl_get_stats(s->c, &st);
  return st.changes_found;
}

void kr__service_figures(kr_service_t *s, kr_progress_figures_t *f) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  memset(f, 0, sizeof *f);
  kr_frontier_stats_t fs;
  kr_frontier_stats(c->frontier, &fs);
  f->uris = fs.c.discovered;
  f->queued = fs.c.queued;
  kr_crawl_state_t cst;
  kr_crawl_get_state(c, &cst);
  f->in_flight = cst.in_flight;
  const kr_hosts_summary_t *hs = kr__service_hosts(s, now);
  f->hosts = hs->n;
  f->ready = hs->ready;
  f->busy = hs->busy;
  f->snoozed = hs->snoozed;
  f->paused = cst.paused;
  kr_crawl_stats_t st;
  kr_crawl_get_stats(c, &st);
  f->visits = st.fetched;
  uint64_t window = s->progress_ms ? s->progress_ms : 60000;
  f->visits_per_s = kr_progress_rate(s->prog, offsetof(kr_progress_sample_t, visits), window);
  const kr_census_t *cs = kr_progress_census(s->prog);
  if (cs->taken_ms && cs->complete) {
    f->due_known = 1;
    f->due_now = cs->due_now;
  }
  const kr_lag_hist_t *lw = kr_progress_lag_window(s->prog);
  if (lw->count) {
    f->lag_known = 1;
    f->lag_p99_ms = kr_lag_quantile(lw, 0.99);
    f->lag_max_ms = lw->max_ms;
  }
  const kr_lhist_t *ow = kr_progress_overdue_window(s->prog);
  if (ow->count) {
    f->overdue_known = 1;
    f->overdue_p50_ms = kr_lhist_quantile(ow, 0.5);
    f->overdue_p95_ms = kr_lhist_quantile(ow, 0.95);
  }
  f->changes_known = 1;
  f->changes = st.changes_found;
  f->versions_known = 1; /* this process's, as everywhere (counters.h) */
  f->versions = st.changed;
  f->saved_known = 1;
  f->bytes_saved = st.aborted_bytes_saved;
}

static void progress_line(kr_service_t *s) {
  kr_progress_figures_t f;
  kr__service_figures(s, &f);
  kr_buf_t b;
  kr_buf_init(&b, 2048);
  kr_progress_line(&f, &b);
  KR_LOG(KR_LOG_NOTICE, NULL, "%s", b.data ? b.data : "progress");
  kr_buf_free(&b);
  kr_progress_window_reset(s->prog);
}

/* One step of the revival a reload began (scopestate.h): a few ms of the
 * loop, so a scope that brings a million URIs back does not stall it. */
static void scope_revive_step(kr_service_t *s, uint64_t now) {
  kr_crawl_t *c = s->c;
  if (!c->scope_walk) return;
  int64_t revived = 0;
  int rc = kr__scopestate_revive_step(c, now, SCOPE_REVIVE_STEP_NS, &revived);
  if (rc < 0)
    KR_LOG(KR_LOG_ERROR, kr_store_path(kr_frontier_store(c->frontier)),
           "reload: cannot queue again the URIs back in scope");
  else if (rc == 0 && revived)
    KR_LOG(KR_LOG_NOTICE, s->config_path, "reload: %" PRId64 " URIs disregarded by the old scope "
           "are in scope again: queued", revived);
}

static void on_tick(uv_timer_t *t) {
  kr_service_t *s = t->data;
  kr_crawl_t *c = s->c;
  if (s->closed || !c->frontier) return;
  /* Loop lag: how late this tick fired. */
  uint64_t mono = uv_now(&c->loop);
  s->lag_ms = mono > s->tick_due_mono ? mono - s->tick_due_mono : 0;
  if (mono - s->lag_window_start >= 60000) {
    s->lag_ms_max = 0;
    s->lag_window_start = mono;
  }
  if (s->lag_ms > s->lag_ms_max) s->lag_ms_max = s->lag_ms;
  s->tick_due_mono = mono + TICK_MS;

  uint64_t now = kr_crawl_now(c);
  kr_crawl_stats_t st;
  kr_crawl_get_stats(c, &st);
  kr_progress_sample_t smp = {.visits = st.fetched, .errors = st.fetch_errors,
                              .bytes = st.bytes, .changes = st.changes_found};
  kr_progress_sample(s->prog, now, &smp);
  kr_progress_census_maybe(s->prog, now);
  scope_revive_step(s, now);
  kr_crawl_state_t cst;
  kr_crawl_get_state(c, &cst);
  if (cst.paused && !s->paused_at_ms) s->paused_at_ms = now;
  if (!cst.paused) s->paused_at_ms = 0;
  if (s->progress_ms && now >= s->next_progress_ms) {
    s->next_progress_ms = now + s->progress_ms;
    progress_line(s);
  }
  if (kr_sdnotify_is_enabled(&s->sd) && now >= s->next_sd_status_ms) {
    s->next_sd_status_ms = now + SD_STATUS_MS;
    kr_frontier_stats_t fs;
    kr_frontier_stats(c->frontier, &fs);
    double vps = kr_progress_rate(s->prog, offsetof(kr_progress_sample_t, visits), 60000);
    kr_sdnotify_status(&s->sd, "%s: %.1f visits/s, %" PRIu64 " URIs, %" PRIu64 " queued, %" PRIu64
                               " in flight",
                       kr__service_state(s), vps, fs.c.discovered, fs.c.queued, cst.in_flight);
  }
}

/* The loop-lag probe: how late a short timer fires is how long any event
 * that became ready waited for the callbacks ahead of it. A fixed period
 * independent of the work samples that wait fairly over time (the
 * one-second tick's lag is the same figure, sampled too rarely for a
 * p99). libuv re-arms a repeating timer from the loop time it ran at, so
 * the next due time is now + period. Costs 50 wake-ups a second when
 * idle, a few microseconds each. */
static void on_lag_probe(uv_timer_t *t) {
  kr_service_t *s = t->data;
  if (s->closed || !s->prog) return;
  uint64_t now = uv_now(t->loop);
  uint64_t lag = now > s->lag_probe_due ? now - s->lag_probe_due : 0;
  kr_progress_lag(s->prog, lag);
  if (lag > KR_TP_LONG_NS / 1000000) kr_tp_late(&kr_turnprof, uv_hrtime(), lag * 1000000);
  s->lag_probe_due = now + KR_SVC_LAG_PROBE_MS;
}

/* ---- the watchdog ------------------------------------------------------------------- */

/* Pinged from this timer only: if the loop hangs, the pings stop and
 * systemd restarts kria. A crawl whose store failed (fatal) is not
 * healthy either, although its loop still turns: it stops pinging so a
 * crawl stuck on its way out is killed rather than waited for. */
static void on_watchdog(uv_timer_t *t) {
  kr_service_t *s = t->data;
  kr_crawl_state_t cst;
  kr_crawl_get_state(s->c, &cst);
  if (s->closed || cst.fatal) return;
  if (kr_sdnotify_send(&s->sd, "WATCHDOG=1") == 0) s->watchdog_pings++;
}

/* ---- host summaries ------------------------------------------------------------------- */

const kr_hosts_summary_t *kr__service_hosts(kr_service_t *s, uint64_t now) {
  kr_hosts_summary_t *hs = &s->hs;
  if (hs->at_ms && now < hs->at_ms + 1000 && now >= hs->at_ms) return hs;
  memset(hs, 0, sizeof *hs);
  hs->at_ms = now;
  kr_frontier_t *f = s->c->frontier;
  if (!f) return hs;
  kr_host_report_t r;
  size_t it = 0;
  while (kr_frontier_report_next(f, &it, now, &r)) {
    hs->n++;
    switch (r.state) {
      case KR_HOSTQ_READY: hs->ready++; break;
      case KR_HOSTQ_BUSY: hs->busy++; break;
      case KR_HOSTQ_SNOOZED: hs->snoozed++; break;
      default: hs->empty++; break;
    }
    if (r.gated) hs->gated++;
    if (r.backoff_until > now) hs->backoff++;
    if (r.has_head && r.head_next_at <= now) {
      hs->due++;
      kr_lhist_add(&hs->head_overdue, r.overdue_ms);
    }
    const kr_vtrust_t *vt = &r.vt;
    hs->vt_checks += vt->checks;
    hs->vt_predicted_unchanged += vt->predicted_unchanged;
    hs->vt_skipped += vt->skipped;
    hs->vt_misses += vt->misses;
    int distrusted = kr_vtrust_is_distrusted(vt, (int64_t)now);
    if (distrusted) hs->vt_distrusted++;
    if (!vt->checks) continue;
    /* Keep the KR_SVC_TOP_VT hosts with the most checks (small: a
     * linear scan for the smallest). */
    size_t slot = hs->ntop;
    if (hs->ntop == KR_SVC_TOP_VT) {
      slot = 0;
      for (size_t i = 1; i < hs->ntop; i++)
        if (hs->top[i].checks < hs->top[slot].checks) slot = i;
      if (hs->top[slot].checks >= vt->checks) continue;
    } else {
      hs->ntop++;
    }
    struct kr_svc_vt *e = &hs->top[slot];
    snprintf(e->host, sizeof e->host, "%s", r.name);
    e->checks = vt->checks;
    e->predicted_unchanged = vt->predicted_unchanged;
    e->skipped = vt->skipped;
    e->verified = vt->verified;
    e->misses = vt->misses;
    e->false_alarms = vt->false_alarms;
    e->distrusted = distrusted;
    e->reliability = kr_vtrust_reliability(vt);
    e->usefulness = kr_vtrust_usefulness(vt);
  }
  return hs;
}

/* ---- reload ---------------------------------------------------------------------------- */

/* Keys applied on reload (see service.h); every other key must be
 * unchanged for a reload to be accepted. */
int kr__service_key_is_live(kr_cfg_key_t k) {
  switch (k) {
    case KR_CFG_CRAWL_SEEDS:
    case KR_CFG_CRAWL_LOG_LEVEL:
    case KR_CFG_CRAWL_PROGRESS_INTERVAL:
    case KR_CFG_SCOPE_MODE:
    case KR_CFG_SCOPE_SURT_PREFIXES:
    case KR_CFG_SCOPE_MAX_LINK_HOPS:
    case KR_CFG_SCOPE_MAX_TRANS_HOPS:
    case KR_CFG_SCOPE_ALLOW_CHANGE:
    case KR_CFG_HTTP_CONDITIONAL_REQUESTS:
    case KR_CFG_STATUS_TOKEN:
      return 1;
    case KR_CFG_POLITENESS_QUEUE_ASSIGNMENT:
      return 0;
    default:
      break;
  }
  if (kr_archive_key_is_live(k)) return 1;
  if (!(kr_config_key_flags(k) & KR_CFG_HOST)) return 0;
  return strcmp(kr_config_key_section(k), "http") != 0;
}

static void reload_fail(kr_service_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reload_fail(kr_service_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->last_reload_error, sizeof s->last_reload_error, fmt, ap);
  va_end(ap);
  s->reloads_failed++;
  KR_LOG(KR_LOG_ERROR, s->config_path, "reload refused, the running configuration is kept: %s",
         s->last_reload_error);
}

/* A scope from the new config (the same mapping crawl.c makes at start). */
/* Host part of a queue key ("host", "host:port", "[v6]:port"). */
static size_t key_host_len(const char *name) {
  size_t n = strlen(name);
  if (name[0] == '[') {
    const char *e = strchr(name, ']');
    return e ? (size_t)(e - name + 1) : n;
  }
  const char *colon = strchr(name, ':');
  return colon ? (size_t)(colon - name) : n;
}

static void retire(kr_service_t *s, kr_hostcfg_t *hc) {
  if (!hc) return;
  if (s->nretired == s->retired_cap) {
    s->retired_cap = s->retired_cap ? s->retired_cap * 2 : 16;
    s->retired = kr_xrealloc(s->retired, s->retired_cap * sizeof *s->retired);
  }
  s->retired[s->nretired++] = hc;
}

static void reload(kr_service_t *s) {
  kr_crawl_t *c = s->c;
  if (c->stopping || c->closing || !c->frontier) return;
  if (!s->config_path) {
    reload_fail(s, "this crawl was not started from a configuration file");
    return;
  }
  kr_sdnotify_send(&s->sd, "RELOADING=1");
  KR_LOG(KR_LOG_NOTICE, s->config_path, "SIGHUP: reloading the configuration and seeds");
  kr_config_t *n = kr_config_new();
  int rc = kr_config_load_file(n, s->config_path);
  for (size_t i = 0; i < s->n_overrides; i++)
    if (kr_config_set(n, s->overrides[i]) && !rc) rc = KR_ECONFIG;
  if (rc == 0) rc = kr_config_finish(n);
  if (rc) {
    /* The first error goes in the refusal line, the others after it:
     * each is logged once. */
    size_t ne = kr_config_error_count(n);
    reload_fail(s, "%s", ne ? kr_config_error(n, 0) : kr_strerror(rc));
    for (size_t i = 1; i < ne; i++) KR_LOG(KR_LOG_ERROR, NULL, "%s", kr_config_error(n, i));
    kr_config_free(n);
    goto out;
  }
  /* Keys that only take effect at start-up must not have changed. */
  const kr_config_view_t *og = kr_config_global(c->cfg), *ng = kr_config_global(n);
  kr_buf_t a, b;
  kr_buf_init(&a, 1 << 20);
  kr_buf_init(&b, 1 << 20);
  size_t fixed = 0;
  char first[256] = "";
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    if (kr__service_key_is_live((kr_cfg_key_t)k)) continue;
    kr_buf_reset(&a);
    kr_buf_reset(&b);
    kr_config_format(og, (kr_cfg_key_t)k, &a);
    kr_config_format(ng, (kr_cfg_key_t)k, &b);
    if (a.len == b.len && (!a.len || memcmp(a.data, b.data, a.len) == 0)) continue;
    KR_LOG(KR_LOG_ERROR, s->config_path, "%s.%s changed (%s -> %s): it takes a restart",
           kr_config_key_section((kr_cfg_key_t)k), kr_config_key_name((kr_cfg_key_t)k),
           a.len ? a.data : "\"\"", b.len ? b.data : "\"\"");
    if (!fixed++)
      snprintf(first, sizeof first, "%s.%s changed: it takes a restart",
               kr_config_key_section((kr_cfg_key_t)k), kr_config_key_name((kr_cfg_key_t)k));
  }
  kr_buf_free(&a);
  kr_buf_free(&b);
  if (fixed) {
    reload_fail(s, "%s%s", first, fixed > 1 ? " (and more, see above)" : "");
    kr_config_free(n);
    goto out;
  }
  /* The new scope and seeds, before anything changes. */
  char err[512] = "";
  if (kr_archive_reload_check(n, err, sizeof err)) {
    reload_fail(s, "%s", err);
    kr_config_free(n);
    goto out;
  }
  kr_scope_t *scope = NULL;
  if (kr_crawl_scope_new(n, &scope, err, sizeof err)) {
    reload_fail(s, "scope: %s", err);
    kr_config_free(n);
    goto out;
  }
  kr_seeds_t seeds;
  kr_seeds_init(&seeds);
  const char *seeds_path = kr_config_str(ng, KR_CFG_CRAWL_SEEDS);
  if (seeds_path[0]) {
    kr_seeds_opts_t so;
    kr_seeds_opts_init(&so);
    so.canon = c->canon;
    rc = kr_seeds_load(&seeds, seeds_path, &so);
    if (rc == KR_EIO) { /* unreadable: its message is why the reload is refused */
      reload_fail(s, "%s", seeds.n_messages ? seeds.messages[seeds.n_messages - 1] : seeds_path);
      kr_seeds_free(&seeds);
      kr_scope_free(scope);
      kr_config_free(n);
      goto out;
    }
    for (size_t i = 0; i < seeds.n_messages; i++)
      KR_LOG(KR_LOG_WARN, NULL, "%s", seeds.messages[i]);
    /* A seeds file caught half-written, emptied or replaced by junk
     * would put the crawl's hosts out of scope: refused, the running
     * seeds and scope are kept. */
    if (!seeds.n || seeds.bad > seeds.n) {
      if (!seeds.n)
        reload_fail(s, "%s: no seed in it (%zu lines, %zu bad): the running seeds and scope "
                       "are kept", seeds_path, seeds.lines, seeds.bad);
      else
        reload_fail(s, "%s: more bad lines than seeds (%zu bad, %zu seeds): not a seeds file? "
                       "The running seeds and scope are kept (the first bad line: %s)",
                    seeds_path, seeds.bad, seeds.n,
                    seeds.n_messages ? seeds.messages[0] : "-");
      kr_seeds_free(&seeds);
      kr_scope_free(scope);
      kr_config_free(n);
      goto out;
    }
    if (kr_scope_add_seeds(scope, &seeds))
      KR_LOG(KR_LOG_WARN, seeds_path, "a seed could not be put in scope");
  } else if (kr_scope_add_seeds(scope, &c->scope_seeds)) {
    /* crawl.seeds emptied: the seeds in force stay (scopestate.h) */
    KR_LOG(KR_LOG_WARN, NULL, "a seed kept in the state database could not be put in scope");
  }
  /* Hosts with URIs the new seeds or rules would put out of scope. */
  char names[512];
  size_t nexiled = kr__scopestate_exiled(c, c->scope, &c->scope_seeds, scope, names, sizeof names);
  if (nexiled && !kr_config_bool(ng, KR_CFG_SCOPE_ALLOW_CHANGE)) {
    reload_fail(s, "scope: %zu host%s with URIs would go out of scope: %s (put %s seeds back, or "
                   "set scope.allow-change = true to let %s go)",
                nexiled, nexiled > 1 ? "s" : "", names, nexiled > 1 ? "their" : "its",
                nexiled > 1 ? "them" : "it");
    kr_seeds_free(&seeds);
    kr_scope_free(scope);
    kr_config_free(n);
    goto out;
  }
  if (nexiled)
    KR_LOG(KR_LOG_WARN, s->config_path, "reload: scope change allowed: %zu host%s with URIs go%s "
           "out of scope: %s", nexiled, nexiled > 1 ? "s" : "", nexiled > 1 ? "" : "es", names);

  /* Apply: from here on nothing fails. */
  kr_hostcfg_t *global = kr__crawl_hostcfg_new(c, ng);
  for (size_t i = 0; i < c->hcs_cap; i++) retire(s, c->hcs[i]);
  free(c->hcs);
  c->hcs = NULL;
  c->hcs_cap = c->hcs_n = 0;
  retire(s, (kr_hostcfg_t *)c->global_hc);
  c->global_hc = global;
  const kr_config_t *old_cfg = c->cfg; /* kept in s->configs */
  c->cfg = n;
  s->configs = kr_xrealloc(s->configs, (s->nconfigs + 1) * sizeof *s->configs);
  s->configs[s->nconfigs++] = n;
  s->old_scopes = kr_xrealloc(s->old_scopes, (s->nold_scopes + 1) * sizeof *s->old_scopes);
  s->old_scopes[s->nold_scopes++] = c->scope;
  c->scope = scope;
  c->reloads++;

  uint64_t now = kr_crawl_now(c);
  size_t nhosts = 0, it = 0;
  kr_host_report_t r;
  while (kr_frontier_report_next(c->frontier, &it, now, &r)) {
    kr_hostq_t *h = kr_frontier_host_lookup(c->frontier, r.name, strlen(r.name));
    if (!h) continue;
    const kr_hostcfg_t *hc = kr_crawl_hostcfg(c, r.name, key_host_len(r.name));
    kr_frontier_host_set_opts(c->frontier, h, &hc->fopts, now);
    nhosts++;
  }
  size_t added = 0, held = 0, sent = 0;
  for (size_t i = 0; i < seeds.n; i++) {
    kr_link_t l = {.url = seeds.v[i].url, .url_len = seeds.v[i].len, .hop_path = "",
                   .directive = KR_DIRECTIVE_NORMAL};
    int arc = kr_crawl_add_seed(c, &l, now); /* another member's: to its owner */
    if (arc == KR_CRAWL_SEED_SENT) sent++;
    else if (arc == KR_FRONTIER_HELD) held++;
    else if (arc > 0) added++;
    else if (arc == KR_EDB) /* the next commit fails as well and stops the crawl */
      KR_LOG(KR_LOG_ERROR, seeds.v[i].url, "reload: cannot add the seed: %s", kr_strerror(arc));
  }
  size_t nseeds = seeds_path[0] ? seeds.n : c->scope_seeds.n;
  /* The seeds and rules in force, kept; then the URIs the old scope
   * disregarded and the new one takes in are queued again. */
  kr_store_t *st = kr_frontier_store(c->frontier);
  if (kr__scopestate_save(st, seeds_path[0] ? &seeds : NULL, ng, now))
    KR_LOG(KR_LOG_ERROR, kr_store_path(st), "reload: cannot keep the seeds in force");
  if (seeds_path[0]) {
    kr_seeds_free(&c->scope_seeds);
    c->scope_seeds = seeds;
  }
  /* In steps: the first now, the rest from the tick (scope_revive_step). */
  kr__scopestate_revive_begin(c);
  scope_revive_step(s, now);

  int lvl = kr_log_level_parse(kr_config_str(ng, KR_CFG_CRAWL_LOG_LEVEL));
  if (lvl > 0) kr_log_level = lvl;
  s->progress_ms = (uint64_t)kr_config_ms(ng, KR_CFG_CRAWL_PROGRESS_INTERVAL);
  s->next_progress_ms = now + s->progress_ms;
  if (s->status) kr_status_set_token(s->status, kr_config_str(ng, KR_CFG_STATUS_TOKEN));
  kr_archive_reload(kr_crawl_archive(c), c->cfg, old_cfg);
  s->hs.at_ms = 0;
  s->reloads_ok++;
  s->last_reload_ms = now;
  s->last_reload_error[0] = '\0';
  /* Seeds held back (a drain, a commit waiting for the WARC sync) are
   * added once applied, new or known then:
   * not counted as new here. */
  char heldmsg[96] = "";
  if (held) snprintf(heldmsg, sizeof heldmsg, ", %zu held back", held);
  if (sent) /* [cluster]: their hosts are other members' */
    snprintf(heldmsg + strlen(heldmsg), sizeof heldmsg - strlen(heldmsg),
             ", %zu sent to their owners", sent);
  KR_LOG(KR_LOG_NOTICE, s->config_path,
         "reloaded: %zu seeds (%zu new%s), settings applied to %zu host queues", nseeds, added,
         heldmsg, nhosts);
out:
  kr_sdnotify_send(&s->sd, "READY=1");
}

static void on_sighup(uv_signal_t *h, int signum) {
  (void)signum;
  reload(h->data);
}
