/*
 * The status server's pages (see status.h for the server and its limits,
 * service.h for what feeds them): GET / (the console), /status (JSON),
 * /metrics (Prometheus text format 0.0.4), /hosts, /frontier, /uri?url=,
 * /cluster and /cluster.json (clusterpage.c);
 * POST /pause, /resume, /stop (the server has checked the token before
 * any POST gets here). Every page is built synchronously from memory —
 * counters, the host summary cached for a second, the last census — but
 * /uri, which reads one row of the store by its fingerprint, and /hosts,
 * one pass over the host queues. Text that came from the web (host
 * names, URLs, ETags) leaves as escaped JSON; the console inserts it with
 * textContent only and is served under a Content-Security-Policy that
 * allows nothing from elsewhere. Sections: a JSON writer, /status,
 * /metrics, /hosts and /frontier, /uri, control, the console, routing.
 */
#include <inttypes.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kria/version.h"
#include "clusterpage.h"
#include "console.h"
#include "counterviews.h"
#include "cluster.h"
#include "crawl.h"
#include "diskguard.h"
#include "internal.h"
#include "kria/digest.h"
#include "kria/estimate.h"
#include "kria/fp.h"
#include "kria/validators.h"
#include "linkcache.h"
#include "log.h"
#include "archive.h"
#include "service.h"
#include "turnprof.h"

/* ---- a JSON writer -------------------------------------------------------------- */

typedef struct jw {
  kr_buf_t *b;
  int n[32];  /* members written at each depth */
  int d;
} jw_t;

static void jw_key(jw_t *w, const char *k) {
  if (w->n[w->d]++) kr_buf_append(w->b, ",", 1);
  if (k) {
    kr_status_json_str(w->b, k, strlen(k));
    kr_buf_append(w->b, ":", 1);
  }
}
static void jw_open(jw_t *w, const char *k, char ch) {
  jw_key(w, k);
  kr_buf_append(w->b, &ch, 1);
  KR_BUG_ON(w->d == 31);
  w->n[++w->d] = 0;
}
static void jw_close(jw_t *w, char ch) {
  kr_buf_append(w->b, &ch, 1);
  if (w->d) w->d--;
}
static void jw_u64(jw_t *w, const char *k, uint64_t v) {
  jw_key(w, k);
  kr_buf_printf(w->b, "%" PRIu64, v);
}
static void jw_i64(jw_t *w, const char *k, int64_t v) {
  jw_key(w, k);
  kr_buf_printf(w->b, "%" PRId64, v);
}
static void jw_null(jw_t *w, const char *k) {
  jw_key(w, k);
  kr_buf_append_str(w->b, "null");
}
/* A time or a duration that may be "never". */
static void jw_time(jw_t *w, const char *k, uint64_t v) {
  if (v >= KR_NEVER) jw_null(w, k);
  else jw_u64(w, k, v);
}
static void jw_dbl(jw_t *w, const char *k, double v) {
  jw_key(w, k);
  if (isfinite(v)) kr_buf_printf(w->b, "%.6g", v);
  else kr_buf_append_str(w->b, "null");
}
static void jw_strn(jw_t *w, const char *k, const char *s, size_t n) {
  jw_key(w, k);
  kr_status_json_str(w->b, s ? s : "", s ? n : 0);
}
static void jw_str(jw_t *w, const char *k, const char *s) { jw_strn(w, k, s, s ? strlen(s) : 0); }
static void jw_bool(jw_t *w, const char *k, int v) {
  jw_key(w, k);
  kr_buf_append_str(w->b, v ? "true" : "false");
}
/* n members a figures table (counterviews.h) wrote into the open object. */
static void jw_figures(jw_t *w, size_t n) { w->n[w->d] += (int)n; }
/* [[lower_ms, count], ...] of the buckets holding something. */
static void jw_hist(jw_t *w, const char *k, const kr_lhist_t *h) {
  jw_open(w, k, '[');
  for (unsigned i = 0; i < KR_LHIST_BUCKETS; i++) {
    if (!h->n[i]) continue;
    jw_key(w, NULL);
    kr_buf_printf(w->b, "[%" PRIu64 ",%" PRIu64 "]", kr_lhist_lower_ms(i), h->n[i]);
  }
  jw_close(w, ']');
}

static const char *const uri_states[] = {"queued",      "success", "retry",
                                         "disregarded", "failed",  "retired"};
static const char *const host_states[] = {"empty", "ready", "busy", "snoozed"};

/* ---- /status ------------------------------------------------------------------------ */

static void counts_json(jw_t *w, const char *k, const kr_counts_t *c) {
  jw_open(w, k, '{');
  jw_u64(w, "discovered", c->discovered);
  jw_u64(w, "queued", c->queued);
  jw_u64(w, "finished", c->finished);
  jw_u64(w, "succeeded", c->succeeded);
  jw_u64(w, "retried", c->retried);
  jw_u64(w, "failed", c->failed);
  jw_u64(w, "disregarded", c->disregarded);
  jw_u64(w, "backoffs", c->backoffs);
  jw_u64(w, "bytes", c->bytes);
  jw_u64(w, "refused", c->refused);
  jw_u64(w, "retired", c->retired);
  jw_close(w, '}');
}

static void census_json(jw_t *w, const char *k, const kr_census_t *cs, uint64_t now) {
  if (!cs->taken_ms) {
    jw_null(w, k);
    return;
  }
  jw_open(w, k, '{');
  jw_u64(w, "taken", cs->taken_ms);
  jw_u64(w, "age_ms", now > cs->taken_ms ? now - cs->taken_ms : 0);
  jw_dbl(w, "scan_ms", (double)cs->scan_us / 1000.0);
  jw_bool(w, "complete", cs->complete);
  jw_u64(w, "uris", cs->uris);
  jw_u64(w, "queued", cs->queued);
  jw_u64(w, "due_now", cs->due_now);
  jw_u64(w, "visited", cs->visited);
  jw_u64(w, "visits", cs->visits);
  jw_u64(w, "versions", cs->versions);
  jw_open(w, "states", '{');
  for (size_t i = 0; i < ARRAY_SIZE(uri_states); i++) jw_u64(w, uri_states[i], cs->by_state[i]);
  jw_close(w, '}');
  jw_u64(w, "overdue_p50_ms", kr_lhist_quantile(&cs->overdue, 0.5));
  jw_u64(w, "overdue_p95_ms", kr_lhist_quantile(&cs->overdue, 0.95));
  jw_u64(w, "wait_p50_ms", kr_lhist_quantile(&cs->wait, 0.5));
  jw_hist(w, "overdue", &cs->overdue);
  jw_hist(w, "wait", &cs->wait);
  jw_hist(w, "due_in", &cs->due_in);
  jw_close(w, '}');
}

/* sample: the share of visits checked in full now (validators.h), < 0
 * not shown. */
static void vtrust_json(jw_t *w, const char *k, const kr_vtrust_t *vt, double sample,
                        uint64_t now) {
  jw_open(w, k, '{');
  jw_u64(w, "checks", vt->checks);
  jw_u64(w, "predicted_unchanged", vt->predicted_unchanged);
  jw_u64(w, "skipped", vt->skipped);
  jw_u64(w, "verified", vt->verified);
  jw_u64(w, "misses", vt->misses);
  jw_u64(w, "false_alarms", vt->false_alarms);
  double rel = kr_vtrust_reliability(vt), use = kr_vtrust_usefulness(vt);
  if (rel < 0) jw_null(w, "reliability");
  else jw_dbl(w, "reliability", rel);
  if (use < 0) jw_null(w, "usefulness");
  else jw_dbl(w, "usefulness", use);
  jw_bool(w, "distrusted", kr_vtrust_is_distrusted(vt, (int64_t)now));
  jw_u64(w, "confirm_run", vt->confirm_run);
  if (sample >= 0) jw_dbl(w, "sample", sample);
  jw_close(w, '}');
}

/* The share of h's visits checked in full now (its settings, its run). */
static double vtrust_sample(kr_crawl_t *c, const kr_hostq_t *h) {
  if (!h) return -1;
  return kr_vtrust_sample_rate(kr_frontier_host_vtrust(h), &kr__crawl_queue_hostcfg(c, h)->vtrust);
}

/* /status "store" and "warc": the modules' statistics through their
 * functions. */
static void store_warc_json(jw_t *w, kr_service_t *s) {
  kr_crawl_t *c = s->c;
  const kr_store_stats_t *ss = kr_store_stats(kr_frontier_store(kr_crawl_frontier(c)));
  jw_open(w, "store", '{');
  jw_figures(w, kr_store_figures_json(ss, w->b));
  kr_crawl_state_t cs;
  kr_crawl_get_state(c, &cs);
  if (cs.disk_watched) { /* the state directory's free space (diskguard.h) */
    jw_bool(w, "disk_held", cs.disk_held);
    jw_u64(w, "disk_free", cs.disk_free);
    jw_u64(w, "disk_reserve", cs.disk_reserve);
    jw_u64(w, "disk_lows", cs.disk_lows);
  }
  jw_close(w, '}');
  kr_crawl_cluster_state_t cl;
  kr_crawl_cluster_state(c, &cl);
  if (cl.on) { /* [cluster]: Redis and the outbox (the counters are in "crawl") */
    jw_open(w, "cluster", '{');
    jw_bool(w, "redis_up", cl.redis_up);
    jw_u64(w, "outbox", cl.outbox);
    jw_u64(w, "xadds_in_flight", cl.in_flight);
    jw_bool(w, "held", cl.held);
    jw_close(w, '}');
  }

  kr_archive_t *warc = kr_crawl_archive(c); /* NULL: WARC writing is off */
  if (warc) {
    kr_archive_stats_t ws;
    kr_archive_stats(warc, &ws);
    jw_open(w, "warc", '{');
    jw_figures(w, kr_archive_figures_json(&ws, w->b));
    jw_str(w, "current_file", ws.current);
    jw_close(w, '}');
  } else {
    jw_null(w, "warc");
  }
}

/* /status: the service's own parts (loop, status server, reload, systemd). */
static void service_json(jw_t *w, kr_service_t *s) {
  jw_open(w, "loop", '{');
  jw_u64(w, "lag_ms", s->lag_ms);
  jw_u64(w, "lag_ms_max_1m", s->lag_ms_max);
  const kr_lag_hist_t *lag = kr_progress_lag_total(s->prog);
  jw_u64(w, "probe_lag_p50_ms", kr_lag_quantile(lag, 0.5));
  jw_u64(w, "probe_lag_p99_ms", kr_lag_quantile(lag, 0.99));
  jw_u64(w, "probe_lag_max_ms", lag->max_ms);
  jw_u64(w, "probes", lag->count);
  jw_close(w, '}');

  jw_open(w, "status_server", '{');
  if (s->status) {
    const kr_status_stats_t *sv = kr_status_stats(s->status);
    jw_str(w, "address", kr_status_address(s->status));
    jw_u64(w, "requests", sv->requests);
    jw_u64(w, "connections", sv->connections);
    jw_u64(w, "refused", sv->refused);
    jw_u64(w, "evicted", sv->evicted);
    jw_u64(w, "silent_closed", sv->silent_closed);
    jw_u64(w, "bad_requests", sv->bad_requests);
    jw_u64(w, "timeouts", sv->timeouts);
    jw_u64(w, "unauthorized", sv->unauthorized);
    jw_u64(w, "clients", sv->clients);
    jw_u64(w, "busy_us", sv->busy_us);
  }
  jw_close(w, '}');

  jw_open(w, "reload", '{');
  jw_u64(w, "ok", s->reloads_ok);
  jw_u64(w, "failed", s->reloads_failed);
  if (s->last_reload_ms) jw_u64(w, "last", s->last_reload_ms);
  else jw_null(w, "last");
  jw_str(w, "last_error", s->last_reload_error);
  jw_close(w, '}');

  jw_open(w, "systemd", '{');
  jw_bool(w, "notify", kr_sdnotify_is_enabled(&s->sd));
  jw_u64(w, "watchdog_usec", s->sd.watchdog_usec);
  jw_u64(w, "watchdog_pings", s->watchdog_pings);
  jw_u64(w, "errors", s->sd.errors);
  jw_close(w, '}');
}

static void page_status(kr_service_t *s, kr_buf_t *b) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  jw_t w = {.b = b};
  kr_frontier_stats_t fs;
  kr_frontier_stats(kr_crawl_frontier(c), &fs);
  const kr_hosts_summary_t *hs = kr__service_hosts(s, now);
  const kr_census_t *cs = kr_progress_census(s->prog);
  jw_open(&w, NULL, '{');
  jw_str(&w, "kria", KRIA_VERSION);
  jw_str(&w, "crawl_name", kr_config_str(kr_config_global(kr_crawl_config(c)), KR_CFG_CRAWL_NAME));
  jw_i64(&w, "pid", (int64_t)getpid());
  jw_str(&w, "state", kr__service_state(s));
  kr_crawl_state_t cst;
  kr_crawl_get_state(c, &cst);
  jw_bool(&w, "paused", cst.paused);
  jw_u64(&w, "paused_for_ms", s->paused_at_ms && now > s->paused_at_ms ? now - s->paused_at_ms : 0);
  jw_u64(&w, "now", now);
  jw_u64(&w, "started", s->started_ms);
  jw_u64(&w, "uptime_ms", now > s->started_ms ? now - s->started_ms : 0);
  jw_u64(&w, "in_flight", cst.in_flight);
  jw_u64(&w, "websub_active", kr_crawl_websub_active(c));

  size_t fv = offsetof(kr_progress_sample_t, visits);
  jw_open(&w, "rates", '{');
  jw_dbl(&w, "visits_per_s_10s", kr_progress_rate(s->prog, fv, 10000));
  jw_dbl(&w, "visits_per_s_60s", kr_progress_rate(s->prog, fv, 60000));
  jw_dbl(&w, "visits_per_s_1h", kr_progress_rate(s->prog, fv, 3600000));
  jw_dbl(&w, "errors_per_s_60s",
         kr_progress_rate(s->prog, offsetof(kr_progress_sample_t, errors), 60000));
  jw_dbl(&w, "bytes_per_s_60s",
         kr_progress_rate(s->prog, offsetof(kr_progress_sample_t, bytes), 60000));
  jw_close(&w, '}');

  double series[120];
  size_t ns = kr_progress_recent(s->prog, fv, series, ARRAY_SIZE(series));
  jw_open(&w, "series", '{');
  jw_open(&w, "visits_per_s", '[');
  for (size_t i = 0; i < ns; i++) jw_dbl(&w, NULL, series[i]);
  jw_close(&w, ']');
  jw_close(&w, '}');

  /* The crawl's counters from their table; "adaptive", older, names
   * some of them again. */
  kr_crawl_stats_t st;
  kr_crawl_get_stats(c, &st);
  jw_key(&w, "crawl");
  kr_counters_json(&st, b);
  jw_key(&w, "adaptive");
  kr_counters_json_adaptive(&st, b);

  jw_key(&w, "frontier");
  kr_frontier_figures_json(&fs, b);

  jw_open(&w, "hosts", '{');
  jw_u64(&w, "total", hs->n);
  jw_u64(&w, "ready", hs->ready);
  jw_u64(&w, "busy", hs->busy);
  jw_u64(&w, "snoozed", hs->snoozed);
  jw_u64(&w, "empty", hs->empty);
  jw_u64(&w, "gated", hs->gated);
  jw_u64(&w, "backoff", hs->backoff);
  jw_u64(&w, "due", hs->due);
  jw_u64(&w, "head_overdue_p50_ms", kr_lhist_quantile(&hs->head_overdue, 0.5));
  jw_u64(&w, "head_overdue_p95_ms", kr_lhist_quantile(&hs->head_overdue, 0.95));
  jw_close(&w, '}');

  const kr_lhist_t *oi = kr_progress_overdue_total(s->prog);
  jw_open(&w, "overdue_issued", '{');
  jw_u64(&w, "count", oi->count);
  jw_u64(&w, "p50_ms", kr_lhist_quantile(oi, 0.5));
  jw_u64(&w, "p95_ms", kr_lhist_quantile(oi, 0.95));
  jw_u64(&w, "max_ms", oi->max_ms);
  jw_dbl(&w, "mean_ms", oi->count ? (double)oi->sum_ms / (double)oi->count : 0);
  jw_hist(&w, "hist", oi);
  jw_close(&w, '}');

  census_json(&w, "census", cs, now);

  uint64_t hours[24];
  size_t hh = kr_progress_hourly(s->prog, offsetof(kr_progress_sample_t, changes), now, hours, 24);
  jw_open(&w, "changes", '{');
  jw_bool(&w, "known", 1);
  jw_str(&w, "source", "crawl"); /* counters.h: changes_found */
  jw_u64(&w, "total", st.changes_found);
  jw_open(&w, "per_hour", '[');
  for (size_t i = 0; i < 24; i++) jw_u64(&w, NULL, hours[i]);
  jw_close(&w, ']');
  jw_u64(&w, "hours_with_data", hh);
  jw_close(&w, '}');

  jw_open(&w, "validators", '{');
  jw_u64(&w, "checks", hs->vt_checks);
  jw_u64(&w, "predicted_unchanged", hs->vt_predicted_unchanged);
  jw_u64(&w, "skipped", hs->vt_skipped);
  jw_u64(&w, "misses", hs->vt_misses);
  jw_u64(&w, "distrusted_hosts", hs->vt_distrusted);
  jw_open(&w, "top", '[');
  for (size_t i = 0; i < hs->ntop; i++) {
    const struct kr_svc_vt *e = &hs->top[i];
    jw_open(&w, NULL, '{');
    jw_str(&w, "host", e->host);
    jw_u64(&w, "checks", e->checks);
    jw_u64(&w, "predicted_unchanged", e->predicted_unchanged);
    jw_u64(&w, "skipped", e->skipped);
    jw_u64(&w, "verified", e->verified);
    jw_u64(&w, "misses", e->misses);
    jw_u64(&w, "false_alarms", e->false_alarms);
    if (e->reliability < 0) jw_null(&w, "reliability");
    else jw_dbl(&w, "reliability", e->reliability);
    if (e->usefulness < 0) jw_null(&w, "usefulness");
    else jw_dbl(&w, "usefulness", e->usefulness);
    jw_bool(&w, "distrusted", e->distrusted);
    jw_close(&w, '}');
  }
  jw_close(&w, ']');
  jw_close(&w, '}');

  store_warc_json(&w, s);
  service_json(&w, s);

  jw_u64(&w, "rare_events", kr__rare_events);
  jw_close(&w, '}');
  kr_buf_append(b, "\n", 1);
}

/* The same as text, for `kria status`. */
static void page_status_text(kr_service_t *s, kr_buf_t *b) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  kr_frontier_stats_t fs;
  kr_frontier_stats(kr_crawl_frontier(c), &fs);
  const kr_hosts_summary_t *hs = kr__service_hosts(s, now);
  const kr_census_t *cs = kr_progress_census(s->prog);
  const kr_lhist_t *oi = kr_progress_overdue_total(s->prog);
  size_t fv = offsetof(kr_progress_sample_t, visits);
  kr_crawl_stats_t st;
  kr_crawl_get_stats(c, &st);
  kr_crawl_state_t cst;
  kr_crawl_get_state(c, &cst);
  char t1[32], t2[32], t3[32];
  kr_progress_fmt_ms(now > s->started_ms ? now - s->started_ms : 0, t1, sizeof t1);
  kr_buf_printf(b, "kria %s, crawl %s, pid %d: %s, up %s\n", KRIA_VERSION,
                kr_config_str(kr_config_global(kr_crawl_config(c)), KR_CFG_CRAWL_NAME), (int)getpid(),
                kr__service_state(s), t1);
  kr_buf_printf(b,
                "visits      %.1f/s over 10 s, %.1f/s over 1 min; %" PRIu64 " responses, %" PRIu64
                " errors, %" PRIu64 " in flight\n",
                kr_progress_rate(s->prog, fv, 10000), kr_progress_rate(s->prog, fv, 60000),
                st.fetched, st.fetch_errors, cst.in_flight);
  kr_buf_printf(b, "frontier    %" PRIu64 " URIs, %" PRIu64 " queued, %" PRIu64 " succeeded, %" PRIu64
                   " failed, %" PRIu64 " disregarded\n",
                fs.c.discovered, fs.c.queued, fs.c.succeeded, fs.c.failed, fs.c.disregarded);
  if (cs->taken_ms) {
    kr_progress_fmt_ms(kr_lhist_quantile(&cs->overdue, 0.5), t1, sizeof t1);
    kr_progress_fmt_ms(kr_lhist_quantile(&cs->overdue, 0.95), t2, sizeof t2);
    kr_progress_fmt_ms(kr_lhist_quantile(&cs->wait, 0.5), t3, sizeof t3);
    kr_buf_printf(b, "due now     %" PRIu64 " URIs, overdue p50 %s p95 %s; median wait %s\n",
                  cs->due_now, t1, t2, t3);
  } else {
    kr_buf_append_str(b, "due now     n/a (first census pending)\n");
  }
  if (oi->count) {
    kr_progress_fmt_ms(kr_lhist_quantile(oi, 0.5), t1, sizeof t1);
    kr_progress_fmt_ms(kr_lhist_quantile(oi, 0.95), t2, sizeof t2);
    kr_buf_printf(b, "issued      %" PRIu64 " revisits, overdue p50 %s p95 %s\n", oi->count, t1, t2);
  }
  kr_buf_printf(b, "hosts       %" PRIu64 ": %" PRIu64 " ready, %" PRIu64 " busy, %" PRIu64
                   " snoozed, %" PRIu64 " empty; %" PRIu64 " in back-off\n",
                hs->n, hs->ready, hs->busy, hs->snoozed, hs->empty, hs->backoff);
  /* The counters as the end-of-run summary words them (counters.h). */
  kr_crawl_cluster_state_t cls;
  kr_crawl_cluster_state(c, &cls);
  for (int line = KR_COUNTER_LINES - 1; line >= 0; line--) {
    if (line == KR_COUNTER_LINE_CLUSTER && !cls.on) continue;
    kr_buf_append_str(b, "counters    ");
    kr_counters_summary(&st, line, b);
    kr_buf_append_str(b, "\n");
  }
  kr_buf_printf(b, "validators  %" PRIu64 " checks, %" PRIu64 " said unchanged, %" PRIu64
                   " misses, %" PRIu64 " hosts distrusted\n",
                hs->vt_checks, hs->vt_predicted_unchanged, hs->vt_misses, hs->vt_distrusted);
  if (kr_crawl_archive(c)) {
    kr_archive_stats_t ws;
    kr_archive_stats(kr_crawl_archive(c), &ws);
    kr_buf_printf(b, "warc        %" PRIu64 " records, %" PRIu64 " bytes, %" PRIu64 " revisits, %" PRIu64
                     " files; %s%s%s\n",
                  ws.records, ws.bytes, ws.revisits_identical + ws.revisits_not_modified + ws.revisits_midfetch, ws.files,
                  ws.held ? "HELD (write errors), " : "", ws.current ? "writing " : "no file open",
                  ws.current ? ws.current : "");
  }
  if (cst.disk_held) kr_buf_append_str(b, "state disk  HELD: too little free space, no new fetches\n");
  if (kr_store_wal_held(kr_frontier_store(kr_crawl_frontier(c))))
    kr_buf_append_str(b, "state WAL   HELD: past its cap, no new fetches until a checkpoint\n");
  if (s->status) kr_buf_printf(b, "console     http://%s/\n", kr_status_address(s->status));
  if (s->reloads_ok || s->reloads_failed)
    kr_buf_printf(b, "reloads     %" PRIu64 " applied, %" PRIu64 " refused%s%s\n", s->reloads_ok,
                  s->reloads_failed, s->last_reload_error[0] ? ": " : "", s->last_reload_error);
}

/* ---- /metrics -------------------------------------------------------------------------- */

static void metric(kr_buf_t *b, const char *name, const char *type, const char *help, double v) {
  kr_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void metric_u(kr_buf_t *b, const char *name, const char *type, const char *help,
                     uint64_t v) {
  kr_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name, v);
}

/* What holds the process's memory, as far as kria knows it. */
static void metric_memory(kr_buf_t *b, kr_crawl_t *c) {
  uint64_t cache = 0, heap = 0;
  kr_store_memory(kr_frontier_store(kr_crawl_frontier(c)), &cache, &heap);
  kr_frontier_stats_t fs;
  kr_frontier_stats(kr_crawl_frontier(c), &fs);
  kr_linkcache_stats_t ls;
  kr_crawl_linkcache_stats(c, &ls);
  const char *name = "kria_memory_bytes";
  kr_buf_printf(b, "# HELP %s Memory by holder (malloc: glibc's view of the heap).\n# TYPE %s gauge\n",
                name, name);
  kr_buf_printf(b, "%s{part=\"sqlite_page_cache\"} %" PRIu64 "\n", name, cache);
  kr_buf_printf(b, "%s{part=\"sqlite_heap\"} %" PRIu64 "\n", name, heap);
  kr_buf_printf(b, "%s{part=\"seen_filter\"} %" PRIu64 "\n", name, fs.seen_bytes);
  kr_buf_printf(b, "%s{part=\"link_cache\"} %" PRIu64 "\n", name, (uint64_t)ls.bytes);
  kr_buf_printf(b, "%s{part=\"held_back\"} %" PRIu64 "\n", name, fs.held_back_bytes);
  /* fetch objects, pooled or running, with the buffers they keep */
  uint64_t pool = kr__fetch_pool_bytes(c);
  kr_buf_printf(b, "%s{part=\"fetch_objects\"} %" PRIu64 "\n", name, pool);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  kr_buf_printf(b, "%s{part=\"malloc_in_use\"} %zu\n", name, mi.uordblks + mi.hblkhd);
  kr_buf_printf(b, "%s{part=\"malloc_free\"} %zu\n", name, mi.fordblks);
  kr_buf_printf(b, "%s{part=\"malloc_mmap\"} %zu\n", name, mi.hblkhd);
#endif
}

/* Where the loop's turns spend their time (turnprof.h), by phase. */
static void metric_turnprof(kr_buf_t *b, const kr_turnprof_t *p) {
  if (!p->on) return;
  static const struct {
    const char *name, *help;
    int per_phase; /* 0: blame (late probes), 1: phases, 2: long-turn blame */
  } fam[] = {
      {"kria_loop_phase_seconds_total", "Loop thread busy time by phase.", 1},
      {"kria_loop_long_turn_phase_seconds_total", "Time by phase in turns busy over 20 ms.", 3},
      {"kria_loop_long_turns_total", "Turns busy over 20 ms by their largest phase.", 2},
      {"kria_loop_late_probes_total", "Lag probes over 20 ms late by what ran before them.", 0},
  };
  for (size_t k = 0; k < ARRAY_SIZE(fam); k++) {
    kr_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", fam[k].name, fam[k].help, fam[k].name);
    unsigned n = fam[k].per_phase == 1 || fam[k].per_phase == 3 ? KR_TP__N : KR_TP__BLAME;
    for (unsigned i = 0; i < n; i++) {
      if (fam[k].per_phase == 1)
        kr_buf_printf(b, "%s{phase=\"%s\"} %.6f\n", fam[k].name, kr_tp_names[i], (double)p->total[i] / 1e9);
      else if (fam[k].per_phase == 3)
        kr_buf_printf(b, "%s{phase=\"%s\"} %.6f\n", fam[k].name, kr_tp_names[i], (double)p->long_ns[i] / 1e9);
      else
        kr_buf_printf(b, "%s{phase=\"%s\"} %" PRIu64 "\n", fam[k].name, kr_tp_names[i],
                      fam[k].per_phase == 2 ? p->long_turns[i] : p->late[i]);
    }
  }
  metric_u(b, "kria_loop_turns_total", "counter", "Loop turns.", p->turns);
  metric(b, "kria_loop_busy_seconds_total", "counter", "Loop turns' time less the poll wait.",
         (double)p->busy_ns / 1e9);
  metric(b, "kria_loop_offcpu_seconds_total", "counter",
         "Busy time the loop thread spent off its CPU.", (double)p->offcpu_ns / 1e9);
  metric(b, "kria_loop_long_turn_busy_seconds_total", "counter", "Busy time of turns over 20 ms.",
         (double)p->long_busy_ns / 1e9);
  metric(b, "kria_loop_long_turn_offcpu_seconds_total", "counter",
         "Time off the CPU in turns over 20 ms.", (double)p->long_offcpu_ns / 1e9);
  metric(b, "kria_loop_long_turn_max_seconds", "gauge", "Longest turn (busy time).",
         (double)p->long_max_ns / 1e9);
}

/* A Prometheus histogram in seconds from a log-scale one: each le bound
 * counts the buckets lying wholly below it. */
static void metric_hist(kr_buf_t *b, const char *name, const char *help, const kr_lhist_t *h) {
  static const double les[] = {1, 10, 60, 300, 900, 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400,
                               28 * 86400};
  kr_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  for (size_t i = 0; i < ARRAY_SIZE(les); i++) {
    uint64_t cum = 0;
    for (unsigned j = 0; j + 1 < KR_LHIST_BUCKETS; j++)
      if ((double)kr_lhist_lower_ms(j + 1) <= les[i] * 1000) cum += h->n[j];
    kr_buf_printf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, les[i], cum);
  }
  kr_buf_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.3f\n%s_count %" PRIu64 "\n", name,
                h->count, name, (double)h->sum_ms / 1000.0, name, h->count);
}

/* The loop-lag probe's histogram, le bounds in seconds. */
static void metric_lag(kr_buf_t *b, const kr_lag_hist_t *h) {
  static const char name[] = "kria_loop_delay_seconds";
  kr_buf_printf(b, "# HELP %s How late the %d ms loop-lag probe fired, since start.\n"
                   "# TYPE %s histogram\n", name, KR_SVC_LAG_PROBE_MS, name);
  uint64_t cum = 0;
  for (unsigned i = 0; i < KR_LAG_BUCKETS - 1; i++) {
    cum += h->n[i];
    kr_buf_printf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, kr_lag_le_ms[i] / 1000.0, cum);
  }
  kr_buf_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.3f\n%s_count %" PRIu64 "\n", name,
                h->count, name, (double)h->sum_ms / 1000.0, name, h->count);
}

static void page_metrics(kr_service_t *s, kr_buf_t *b) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  kr_frontier_stats_t fs;
  kr_frontier_stats(kr_crawl_frontier(c), &fs);
  const kr_hosts_summary_t *hs = kr__service_hosts(s, now);
  const kr_census_t *cs = kr_progress_census(s->prog);
  kr_buf_append_str(b, "# HELP kria_info The crawler's version and crawl name.\n# TYPE kria_info gauge\n");
  kr_buf_append_str(b, "kria_info{version=\"" KRIA_VERSION "\",crawl=\"");
  /* crawl.name is letters, digits, . _ - (the config checks): no escaping needed */
  kr_buf_append_str(b, kr_config_str(kr_config_global(kr_crawl_config(c)), KR_CFG_CRAWL_NAME));
  kr_buf_append_str(b, "\"} 1\n");
  metric(b, "kria_start_time_seconds", "gauge", "When the crawl process started (epoch).",
         (double)s->started_ms / 1000.0);
  kr_crawl_state_t cst;
  kr_crawl_get_state(c, &cst);
  metric_u(b, "kria_paused", "gauge", "1 while dispatch is paused.", (uint64_t)cst.paused);
  metric_u(b, "kria_stopping", "gauge", "1 once the crawl is stopping.", (uint64_t)cst.stopping);
  metric_u(b, "kria_in_flight", "gauge", "Fetches running now.", cst.in_flight);
  metric_u(b, "kria_websub_subscriptions_active", "gauge",
           "WebSub subscriptions whose lease (as the hub granted it) runs now.",
           kr_crawl_websub_active(c));
  kr_crawl_cluster_state_t cl;
  kr_crawl_cluster_state(c, &cl);
  if (cl.on) {
    metric_u(b, "kria_cluster_redis_up", "gauge", "1 while both connections to Redis are up.",
             (uint64_t)cl.redis_up);
    metric_u(b, "kria_cluster_outbox_links", "gauge",
             "Links for other members waiting in the outbox (sent or not yet confirmed).",
             cl.outbox);
    metric_u(b, "kria_cluster_held", "gauge", "1 while dispatch waits for the outbox to drain.",
             (uint64_t)cl.held);
  }
  kr_crawl_stats_t st; /* the crawl's counters, from their table */
  kr_crawl_get_stats(c, &st);
  kr_counters_metrics(&st, b);
  kr_frontier_figures_metrics(&fs, b);
  kr_buf_append_str(b, "# HELP kria_hosts Host queues by state.\n# TYPE kria_hosts gauge\n");
  kr_buf_printf(b, "kria_hosts{state=\"ready\"} %" PRIu64 "\nkria_hosts{state=\"busy\"} %" PRIu64
                   "\nkria_hosts{state=\"snoozed\"} %" PRIu64 "\nkria_hosts{state=\"empty\"} %" PRIu64 "\n",
                hs->ready, hs->busy, hs->snoozed, hs->empty);
  metric_u(b, "kria_hosts_backoff", "gauge", "Host queues in a back-off.", hs->backoff);
  metric_hist(b, "kria_issue_overdue_seconds", "How late revisits were issued after their next_at.",
              kr_progress_overdue_total(s->prog));
  if (cs->taken_ms) {
    metric_u(b, "kria_census_due_now", "gauge", "URIs due now at the last census.", cs->due_now);
    metric_u(b, "kria_census_versions", "gauge", "Versions stored over all URIs (last census).",
             cs->versions);
    metric(b, "kria_census_age_seconds", "gauge", "Age of the last census.",
           (double)(now > cs->taken_ms ? now - cs->taken_ms : 0) / 1000.0);
    metric(b, "kria_census_scan_seconds", "gauge", "Duration of the last census scan.",
           (double)cs->scan_us / 1e6);
    metric_hist(b, "kria_census_wait_seconds", "Wait intervals of the URIs queued to revisit.",
                &cs->wait);
  }
  metric_u(b, "kria_validator_checks_total", "counter", "Validator predictions made (all hosts).",
           hs->vt_checks);
  metric_u(b, "kria_validator_misses_total", "counter",
           "Validators said unchanged and the digest disagreed: the hosts' totals, kept "
           "across restarts (this process's visits: kria_visit_validator_misses_total).",
           hs->vt_misses);
  metric_u(b, "kria_validator_distrusted_hosts", "gauge", "Hosts whose validators are distrusted.",
           hs->vt_distrusted);
  kr_store_figures_metrics(kr_store_stats(kr_frontier_store(kr_crawl_frontier(c))), b);
  metric(b, "kria_loop_lag_seconds", "gauge", "Lateness of the last one-second tick.",
         (double)s->lag_ms / 1000.0);
  metric(b, "kria_loop_lag_seconds_max", "gauge", "Largest tick lateness this minute.",
         (double)s->lag_ms_max / 1000.0);
  metric_lag(b, kr_progress_lag_total(s->prog));
  metric_turnprof(b, &kr_turnprof);
  metric_memory(b, c);
  metric_u(b, "kria_fetch_objects", "gauge", "Fetch objects allocated (pooled or running).",
           cst.fetch_objs);
  kr_http_stats_t hs2;
  if (kr_crawl_http_stats(c, &hs2)) kr_http_figures_metrics(&hs2, b);
  metric_u(b, "kria_reloads_total", "counter", "Configurations applied by SIGHUP.", s->reloads_ok);
  metric_u(b, "kria_reload_failures_total", "counter", "Reloads refused.", s->reloads_failed);
  metric_u(b, "kria_rare_events_total", "counter", "Rare internal events (KR_COUNT_IF).",
           kr__rare_events);
  kr_archive_t *warc = kr_crawl_archive(c); /* NULL: WARC writing is off */
  if (warc) {
    kr_archive_stats_t ws;
    kr_archive_stats(warc, &ws);
    kr_archive_figures_metrics(&ws, b);
  }
  if (s->status) {
    const kr_status_stats_t *sv = kr_status_stats(s->status);
    metric_u(b, "kria_status_requests_total", "counter", "Status requests served.", sv->requests);
    metric_u(b, "kria_status_refused_total", "counter", "Status connections over the cap.",
             sv->refused);
    metric_u(b, "kria_status_idle_closed_total", "counter",
             "Status connections closed having sent nothing (silent too long, or "
             "making room for a newcomer).",
             sv->evicted + sv->silent_closed);
    metric(b, "kria_status_busy_seconds_total", "counter",
           "Loop time spent building status pages (the server's cost to the crawl).",
           (double)sv->busy_us / 1e6);
    metric_u(b, "kria_status_rejected_total", "counter",
             "Status requests rejected (malformed, too big, too slow, unauthorized).",
             sv->bad_requests + sv->timeouts + sv->unauthorized);
  }
}

/* ---- /hosts and /frontier -------------------------------------------------------------- */

enum { SORT_OVERDUE, SORT_QUEUED, SORT_FINISHED, SORT_NAME };

typedef struct pick {
  uint64_t key;
  kr_host_report_t r;
} pick_t;

/* Min-heap on key: the root is the weakest of the best kept so far. */
static void heap_down(pick_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && h[l].key < h[m].key) m = l;
    if (l + 1 < n && h[l + 1].key < h[m].key) m = l + 1;
    if (m == i) return;
    pick_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}
static void heap_up(pick_t *h, size_t i) {
  while (i && h[(i - 1) / 2].key > h[i].key) {
    pick_t t = h[i];
    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}
static int by_key_desc(const void *a, const void *b) {
  const pick_t *x = a, *y = b;
  if (x->key != y->key) return x->key > y->key ? -1 : 1;
  return strcmp(x->r.name, y->r.name);
}

/* Up to max host reports, best first by sort, optionally one state. */
static size_t pick_hosts(kr_frontier_t *f, uint64_t now, int sort, int state, pick_t *out,
                         size_t max, uint64_t *total) {
  size_t n = 0, it = 0;
  kr_host_report_t r;
  *total = 0;
  while (kr_frontier_report_next(f, &it, now, &r)) {
    if (state >= 0 && (int)r.state != state) continue;
    (*total)++;
    uint64_t key = sort == SORT_OVERDUE    ? r.overdue_ms
                   : sort == SORT_QUEUED   ? r.queued
                   : sort == SORT_FINISHED ? r.c.finished
                                           : UINT64_MAX - *total; /* iteration order */
    if (n < max) {
      out[n] = (pick_t){key, r};
      heap_up(out, n++);
    } else if (max && key > out[0].key) {
      out[0] = (pick_t){key, r};
      heap_down(out, n, 0);
    }
  }
  qsort(out, n, sizeof *out, by_key_desc);
  return n;
}

/* Planned revisits against the host's politeness capacity (adapthost.c). */
static void capacity_json(jw_t *w, const kr_crawl_t *c, const kr_hostq_t *h) {
  kr_host_capacity_t k;
  if (!h || !kr__adapt_host_capacity(c, h, &k)) {
    jw_null(w, "capacity");
    return;
  }
  static const char *const alloc_states[] = {"slack", "binds", "over"};
  jw_open(w, "capacity", '{');
  jw_dbl(w, "budget_per_s", k.budget);
  if (k.uris) {
    jw_u64(w, "planned_uris", k.uris);
    jw_dbl(w, "wanted_per_s", k.wanted);
    jw_dbl(w, "planned_per_s", k.planned);
    jw_i64(w, "floor_ms", k.floor_ms);
    if (k.budget > 0) jw_dbl(w, "use", k.planned / k.budget);
  }
  if (k.alloc_state >= 0 && (size_t)k.alloc_state < ARRAY_SIZE(alloc_states)) {
    jw_str(w, "allocator", alloc_states[k.alloc_state]);
    jw_dbl(w, "changes_per_visit", k.x);
    jw_dbl(w, "gain", k.gain);
  }
  jw_close(w, '}');
}

/* "plan" column of the text host list: planned / capacity (wanted), "-"
 * without a plan. */
static void capacity_text(char *out, size_t cap, const kr_crawl_t *c, const kr_hostq_t *h) {
  kr_host_capacity_t k;
  if (!h || !kr__adapt_host_capacity(c, h, &k) || !k.uris || !(k.budget > 0))
    snprintf(out, cap, "-");
  else if (k.floor_ms)
    snprintf(out, cap, "%.0f%% (%.0f%%)", 100 * k.planned / k.budget, 100 * k.wanted / k.budget);
  else
    snprintf(out, cap, "%.0f%%", 100 * k.planned / k.budget);
}

/* The host's change signals per source (signal.h; adapthost.c): what was
 * read and verified, and the posterior precision and recall. */
static void signals_json(jw_t *w, const kr_crawl_t *c, const kr_hostq_t *h) {
  kr_sig_host_t g;
  if (!h || !kr__adapt_host_signals(c, h, &g)) {
    jw_null(w, "signals");
    return;
  }
  kr_sig_params_t p;
  kr_sig_params_default(&p);
  jw_open(w, "signals", '{');
  for (int s = 0; s < KR_SIG_SOURCES; s++) {
    const kr_sig_rel_t *r = &g.src[s];
    jw_open(w, kr_sig_source_name((kr_sig_source_t)s), '{');
    jw_u64(w, "seen", r->seen);
    jw_u64(w, "verified", r->verified);
    jw_dbl(w, "precision", kr_sig_precision(r, &p));
    jw_dbl(w, "recall", kr_sig_recall(r, &p));
    jw_close(w, '}');
  }
  jw_close(w, '}');
}

static void host_json(jw_t *w, kr_crawl_t *c, const kr_host_report_t *r, uint64_t now) {
  kr_frontier_t *f = kr_crawl_frontier(c);
  jw_open(w, NULL, '{');
  jw_str(w, "host", r->name);
  jw_str(w, "state", r->state < ARRAY_SIZE(host_states) ? host_states[r->state] : "?");
  jw_u64(w, "queued", r->queued);
  jw_u64(w, "in_flight", r->in_flight);
  jw_u64(w, "valence", r->valence);
  if (r->ready_at >= KR_NEVER) jw_null(w, "ready_in_ms");
  else jw_u64(w, "ready_in_ms", r->ready_at > now ? r->ready_at - now : 0);
  jw_u64(w, "overdue_ms", r->overdue_ms);
  if (r->has_head) {
    jw_time(w, "head_next_at", r->head_next_at);
    jw_i64(w, "head_directive", r->head_directive);
  }
  jw_bool(w, "gated", r->gated);
  jw_u64(w, "backoff_level", r->backoff_level);
  jw_u64(w, "backoff_until", r->backoff_until);
  jw_u64(w, "fail_streak", r->fail_streak);
  jw_i64(w, "robots_status", r->robots_status);
  jw_u64(w, "robots_expires", r->robots_expires);
  jw_i64(w, "crawl_delay_ms", r->crawl_delay_ms);
  kr_hostq_t *h = kr_frontier_host_lookup(f, r->name, strlen(r->name));
  if (h) jw_u64(w, "min_delay_ms", kr_frontier_host_delay(f, h, 0));
  capacity_json(w, c, h);
  signals_json(w, c, h);
  counts_json(w, "counts", &r->c);
  vtrust_json(w, "validators", &r->vt, vtrust_sample(c, h), now);
  jw_close(w, '}');
}

static int parse_uint(kr_slice_t q, const char *name, uint64_t *v) {
  kr_buf_t b;
  kr_buf_init(&b, 32);
  int rc = kr_status_query_param(q, name, &b);
  if (rc == 1) {
    char *end;
    unsigned long long x = b.len ? strtoull(b.data, &end, 10) : 0;
    if (!b.len || *end || b.data[0] == '-') rc = KR_EINVAL;
    else *v = x;
  }
  kr_buf_free(&b);
  return rc;
}

static int want_text(const kr_status_req_t *req) {
  kr_buf_t v;
  kr_buf_init(&v, 16);
  int text = kr_status_query_param(req->query, "format", &v) == 1 && !strcmp(v.data, "text");
  kr_buf_free(&v);
  return text;
}

static int page_hosts(kr_service_t *s, const kr_status_req_t *req, kr_status_resp_t *resp) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  uint64_t limit = 200;
  if (parse_uint(req->query, "limit", &limit) < 0 || limit > 10000) return 400;
  int sort = SORT_OVERDUE, state = -1;
  kr_buf_t v;
  kr_buf_init(&v, 32);
  if (kr_status_query_param(req->query, "sort", &v) == 1) {
    if (!strcmp(v.data, "overdue")) sort = SORT_OVERDUE;
    else if (!strcmp(v.data, "queued")) sort = SORT_QUEUED;
    else if (!strcmp(v.data, "finished")) sort = SORT_FINISHED;
    else if (!strcmp(v.data, "name")) sort = SORT_NAME;
    else sort = -1;
  }
  if (sort >= 0 && kr_status_query_param(req->query, "state", &v) == 1) {
    state = -2;
    for (size_t i = 0; i < ARRAY_SIZE(host_states); i++)
      if (!strcmp(v.data, host_states[i])) state = (int)i;
  }
  kr_buf_free(&v);
  if (sort < 0 || state == -2) return 400;
  pick_t *picks = limit ? kr_xcalloc(limit, sizeof *picks) : NULL;
  uint64_t total;
  size_t n = pick_hosts(kr_crawl_frontier(c), now, sort, state, picks, limit, &total);
  if (want_text(req)) {
    resp->content_type = "text/plain; charset=utf-8";
    kr_buf_printf(resp->body, "%-40s %-8s %8s %10s %10s %9s %9s %8s %8s %6s %5s %7s %s\n",
                  "host", "state", "queued", "overdue", "ready in", "finished", "failed",
                  "retired", "refused", "x", "gain", "sample", "plan (wanted)");
    for (size_t i = 0; i < n; i++) {
      const kr_host_report_t *r = &picks[i].r;
      char o[32], ri[32], pl[48], x[16] = "-", g[16] = "-", sm[16] = "-";
      kr_hostq_t *h = kr_frontier_host_lookup(kr_crawl_frontier(c), r->name, strlen(r->name));
      capacity_text(pl, sizeof pl, c, h);
      kr_host_capacity_t k;
      if (h && kr__adapt_host_capacity(c, h, &k) && k.alloc_state >= 0) {
        snprintf(x, sizeof x, "%.3g", k.x);
        snprintf(g, sizeof g, "%.2f", k.gain);
      }
      if (h && r->vt.checks) snprintf(sm, sizeof sm, "%.2f%%", 100 * vtrust_sample(c, h));
      kr_progress_fmt_ms(r->overdue_ms, o, sizeof o);
      kr_progress_fmt_ms(r->ready_at >= KR_NEVER ? KR_NEVER : r->ready_at > now ? r->ready_at - now : 0,
                         ri, sizeof ri);
      kr_buf_printf(resp->body,
                    "%-40.*s %-8s %8" PRIu64 " %10s %10s %9" PRIu64 " %9" PRIu64 " %8" PRIu64
                    " %8" PRIu64 " %6s %5s %7s %s\n",
                    (int)KR_MIN(strlen(r->name), 200), r->name,
                    r->state < ARRAY_SIZE(host_states) ? host_states[r->state] : "?", r->queued, o,
                    ri, r->c.finished, r->c.failed, r->c.retired, r->c.refused, x, g, sm, pl);
    }
    kr_buf_printf(resp->body, "%zu of %" PRIu64 " hosts\n", n, total);
    free(picks);
    return 200;
  }
  jw_t w = {.b = resp->body};
  jw_open(&w, NULL, '{');
  jw_u64(&w, "now", now);
  jw_u64(&w, "total", total);
  jw_u64(&w, "returned", n);
  jw_open(&w, "hosts", '[');
  for (size_t i = 0; i < n; i++) host_json(&w, c, &picks[i].r, now);
  jw_close(&w, ']');
  jw_close(&w, '}');
  kr_buf_append(resp->body, "\n", 1);
  free(picks);
  return 200;
}

static int page_frontier(kr_service_t *s, const kr_status_req_t *req, kr_status_resp_t *resp) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  if (want_text(req)) {
    resp->content_type = "text/plain; charset=utf-8";
    kr_frontier_report_text(kr_crawl_frontier(c), now, 50, resp->body);
    return 200;
  }
  kr_frontier_stats_t fs;
  kr_frontier_stats(kr_crawl_frontier(c), &fs);
  const kr_hosts_summary_t *hs = kr__service_hosts(s, now);
  jw_t w = {.b = resp->body};
  jw_open(&w, NULL, '{');
  jw_u64(&w, "now", now);
  counts_json(&w, "totals", &fs.c);
  jw_u64(&w, "in_flight", fs.in_flight);
  jw_u64(&w, "hosts", fs.hosts);
  jw_u64(&w, "ready_hosts", hs->ready);
  jw_u64(&w, "busy_hosts", hs->busy);
  jw_u64(&w, "snoozed_hosts", hs->snoozed);
  jw_u64(&w, "empty_hosts", hs->empty);
  jw_u64(&w, "due_hosts", hs->due);
  jw_u64(&w, "seen", fs.seen);
  jw_bool(&w, "seen_complete", fs.seen_complete);
  jw_u64(&w, "duplicates", fs.duplicates);
  census_json(&w, "census", kr_progress_census(s->prog), now);
  pick_t picks[20];
  uint64_t total;
  size_t n = pick_hosts(kr_crawl_frontier(c), now, SORT_OVERDUE, -1, picks, ARRAY_SIZE(picks), &total);
  jw_open(&w, "most_overdue", '[');
  for (size_t i = 0; i < n; i++) {
    const kr_host_report_t *r = &picks[i].r;
    jw_open(&w, NULL, '{');
    jw_str(&w, "host", r->name);
    jw_str(&w, "state", r->state < ARRAY_SIZE(host_states) ? host_states[r->state] : "?");
    jw_u64(&w, "overdue_ms", r->overdue_ms);
    jw_u64(&w, "queued", r->queued);
    if (r->has_head) jw_i64(&w, "head_directive", r->head_directive);
    jw_close(&w, '}');
  }
  jw_close(&w, ']');
  jw_close(&w, '}');
  kr_buf_append(resp->body, "\n", 1);
  return 200;
}

/* ---- /uri ----------------------------------------------------------------------------- */

static void error_json(kr_status_resp_t *resp, int status, const char *msg) {
  resp->status = status;
  kr_buf_reset(resp->body);
  kr_buf_printf(resp->body, "{\"error\":%d,\"message\":", status);
  kr_status_json_str(resp->body, msg, strlen(msg));
  kr_buf_append_str(resp->body, "}\n");
}

void kr__status_uri_format(const kr_uri_row_t *rp, uint64_t now, int text, kr_buf_t *out) {
  const kr_uri_row_t r = *rp;
  kr_vhist_t h;
  int hrc = kr_vhist_decode(&h, r.history, r.history_len);
  /* The visit history, oldest first, with the time of each visit worked
   * back from the newest (last_visit). */
  int64_t times[KR_VHIST_MAX];
  if (hrc == 0) {
    int64_t t = (int64_t)(r.last_visit / 1000);
    for (unsigned i = h.n; i-- > 0;) {
      times[i] = t;
      t -= h.v[i].interval_s;
    }
  }
  static const char *const cs[] = {"unchanged", "changed", "unknown"};
  const char *state =
      r.state >= 0 && r.state < (int)ARRAY_SIZE(uri_states) ? uri_states[r.state] : "?";
  char d[KR_SHA1_B32_LEN + 1] = "";
  if (r.digest_len == KR_SHA1_LEN) kr_sha1_base32(r.digest, d);
  if (text) {
    char a[32], b[32];
    kr_buf_printf(out, "url           %.*s\nfp            %016" PRIx64 "\nstate         %s\n",
                  (int)r.url_len, r.url, r.fp, state);
    if (r.next_at >= KR_NEVER) {
      kr_buf_append_str(out, "next visit    never\n");
    } else {
      kr_progress_fmt_ms(r.next_at > now ? r.next_at - now : now - r.next_at, a, sizeof a);
      kr_buf_printf(out, "next visit    %s %s\n", r.next_at > now ? "in" : "overdue by", a);
    }
    kr_progress_fmt_ms(r.wait_ms, a, sizeof a);
    kr_buf_printf(out, "visits        %u, %u versions, %u retries; wait %s\n", r.visits,
                  r.versions, r.retries, a);
    if (r.last_visit) {
      kr_progress_fmt_ms(now > r.last_visit ? now - r.last_visit : 0, b, sizeof b);
      kr_buf_printf(out, "last visit    %s ago, status %d%s%s\n", b, r.status,
                    r.status < 0 ? " " : "", r.status < 0 ? kr_err_name(r.status) : "");
    }
    kr_buf_printf(out, "content type  %.*s\ndigest        %s\n", (int)r.content_type_len,
                  r.content_type ? r.content_type : "", d[0] ? d : "-");
    if (r.etag) kr_buf_printf(out, "etag          %.*s\n", (int)KR_MIN(r.etag_len, 512), r.etag);
    kr_buf_printf(out, "hop path      %.*s\n", (int)r.hop_len, r.hop_path ? r.hop_path : "");
    if (hrc == 0) {
      kr_buf_printf(out, "history       %u visits, oldest first\n", h.n);
      for (unsigned i = 0; i < h.n; i++) {
        kr_progress_fmt_ms((uint64_t)h.v[i].interval_s * 1000, a, sizeof a);
        kr_progress_fmt_ms(now / 1000 > (uint64_t)times[i] ? (now / 1000 - (uint64_t)times[i]) * 1000 : 0,
                           b, sizeof b);
        kr_buf_printf(out, "  %-10s after %-8s (%s ago)\n",
                      h.v[i].state <= KR_CONTENT_UNKNOWN ? cs[h.v[i].state] : "?", i ? a : "-",
                      b);
      }
    } else {
      kr_buf_append_str(out, "history       unreadable\n");
    }
    return;
  }
  char fph[24];
  snprintf(fph, sizeof fph, "%016" PRIx64, r.fp);
  jw_t w = {.b = out};
  jw_open(&w, NULL, '{');
  jw_strn(&w, "url", r.url, r.url_len);
  jw_str(&w, "fp", fph);
  jw_str(&w, "state", state);
  jw_i64(&w, "directive", r.directive);
  jw_time(&w, "next_at", r.next_at);
  if (r.next_at < KR_NEVER) {
    if (r.next_at > now) jw_u64(&w, "due_in_ms", r.next_at - now);
    else jw_u64(&w, "overdue_ms", now - r.next_at);
  }
  jw_u64(&w, "first_seen", r.first_seen);
  if (r.last_visit) jw_u64(&w, "last_visit", r.last_visit);
  else jw_null(&w, "last_visit");
  jw_u64(&w, "wait_ms", r.wait_ms);
  jw_u64(&w, "visits", r.visits);
  jw_u64(&w, "versions", r.versions);
  jw_u64(&w, "retries", r.retries);
  jw_i64(&w, "status", r.status);
  if (r.status < 0) jw_str(&w, "error", kr_err_name(r.status));
  jw_strn(&w, "content_type", r.content_type, r.content_type_len);
  if (d[0]) jw_str(&w, "digest", d);
  else jw_null(&w, "digest");
  if (r.etag) jw_strn(&w, "etag", r.etag, r.etag_len);
  else jw_null(&w, "etag");
  if (r.last_modified) jw_i64(&w, "last_modified", r.last_modified);
  else jw_null(&w, "last_modified");
  jw_strn(&w, "hop_path", r.hop_path, r.hop_len);
  if (r.via) {
    snprintf(fph, sizeof fph, "%016" PRIx64, r.via);
    jw_str(&w, "via_fp", fph);
  }
  if (r.hint_rate > 0) jw_dbl(&w, "hint_changes_per_day", r.hint_rate * 86400);
  jw_open(&w, "history", '[');
  for (unsigned i = 0; hrc == 0 && i < h.n; i++) {
    jw_open(&w, NULL, '{');
    if (r.last_visit) jw_i64(&w, "at", times[i] * 1000);
    jw_i64(&w, "interval_s", h.v[i].interval_s);
    jw_str(&w, "content", h.v[i].state <= KR_CONTENT_UNKNOWN ? cs[h.v[i].state] : "?");
    if (h.v[i].age_s >= 0) jw_i64(&w, "age_s", h.v[i].age_s);
    jw_close(&w, '}');
  }
  jw_close(&w, ']');
  if (hrc) jw_str(&w, "history_error", "unreadable history");
  jw_close(&w, '}');
  kr_buf_append(out, "\n", 1);
}

static int page_uri(kr_service_t *s, const kr_status_req_t *req, kr_status_resp_t *resp) {
  kr_crawl_t *c = s->c;
  uint64_t now = kr_crawl_now(c);
  kr_buf_t in, canon;
  kr_buf_init(&in, KR_URL_MAX);
  kr_buf_init(&canon, 4 * KR_URL_MAX);
  int rc = kr_status_query_param(req->query, "url", &in);
  if (rc != 1 || !in.len) {
    error_json(resp, 400, rc == 0 || !in.len ? "give the URL as /uri?url=URL" : "bad url= value");
    goto out;
  }
  if (kr_url_canon_str(in.data, in.len, NULL, kr_crawl_canon(c), &canon) || !canon.len) {
    error_json(resp, 400, "not a URL kria can canonicalize");
    goto out;
  }
  uint64_t fp = kr_fp(canon.data, canon.len);
  kr_uri_row_t r;
  rc = kr_store_uri_get(kr_frontier_store(kr_crawl_frontier(c)), fp, &r);
  if (rc < 0) {
    error_json(resp, 500, "the state database failed to answer");
    goto out;
  }
  if (rc == 0) {
    resp->status = 404;
    jw_t w = {.b = resp->body};
    jw_open(&w, NULL, '{');
    jw_i64(&w, "error", 404);
    jw_str(&w, "message", "URI unknown to this crawl");
    jw_strn(&w, "canonical", canon.data, canon.len);
    jw_close(&w, '}');
    kr_buf_append(resp->body, "\n", 1);
    goto out;
  }
  if (want_text(req)) resp->content_type = "text/plain; charset=utf-8";
  kr__status_uri_format(&r, now, want_text(req), resp->body);
out:
  kr_buf_free(&in);
  kr_buf_free(&canon);
  return resp->status;
}

/* ---- control ----------------------------------------------------------------------------- */

static void stop_after(void *ud) {
  kr_service_t *s = ud;
  KR_LOG(KR_LOG_NOTICE, NULL, "stop requested through the status server");
  kr_crawl_stop(s->c);
}

static void control_reply(kr_service_t *s, kr_status_resp_t *resp, const char *did) {
  jw_t w = {.b = resp->body};
  jw_open(&w, NULL, '{');
  jw_str(&w, "done", did);
  jw_str(&w, "state", kr__service_state(s));
  kr_crawl_state_t cs;
  kr_crawl_get_state(s->c, &cs);
  jw_bool(&w, "paused", cs.paused);
  jw_u64(&w, "in_flight", cs.in_flight);
  jw_close(&w, '}');
  kr_buf_append(resp->body, "\n", 1);
}

/* ---- the console --------------------------------------------------------------------------- */

static const char console_html[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
    "<title>kria console</title>\n<style>\n"
    KR_CONSOLE_STYLE
    "</style></head><body>\n"
    "<header><h1>kria</h1><span id=\"name\" class=\"mute\"></span>"
    "<span id=\"state\" class=\"pill\">&hellip;</span><span id=\"uptime\" class=\"mute\"></span>"
    "<span id=\"err\" class=\"bad\"></span></header>\n<main>\n"
    "<div class=\"tiles\" id=\"tiles\"></div>\n"
    "<section><h2>Visits per second &middot; last 2 minutes</h2><div class=\"cols\" id=\"spark\"></div>"
    "<p class=\"mute\" id=\"spark-note\"></p></section>\n"
    "<section><h2>Host queues</h2><div id=\"hosts\"></div><p class=\"mute\" id=\"hosts-note\"></p></section>\n"
    "<section><h2>Overdue &middot; URIs due now</h2><div id=\"overdue\"></div>"
    "<p class=\"mute\" id=\"overdue-note\"></p></section>\n"
    "<section><h2>Wait intervals &middot; URIs queued to revisit</h2><div id=\"waits\"></div>"
    "<p class=\"mute\" id=\"waits-note\"></p></section>\n"
    "<section><h2>Changes found per hour &middot; 24 h</h2><div class=\"cols\" id=\"changes\"></div>"
    "<p class=\"mute\" id=\"changes-note\"></p></section>\n"
    "<section><h2>Validator trust per host</h2><table><thead><tr><th>host</th><th>checks</th>"
    "<th>said same</th><th>misses</th><th>reliability</th><th>useful</th></tr></thead>"
    "<tbody id=\"vt\"></tbody></table><p class=\"mute\" id=\"vt-note\"></p></section>\n"
    "</main>\n<footer>Refreshes every 5 s from <a class=\"mute\" href=\"status\">/status</a> &middot; "
    "<a class=\"mute\" href=\"metrics\">/metrics</a> &middot; <a class=\"mute\" href=\"hosts\">/hosts</a> "
    "&middot; <a class=\"mute\" href=\"frontier\">/frontier</a> &middot; <a class=\"mute\" href=\"cluster\">"
    "cluster</a> &middot; <span id=\"ver\"></span></footer>\n"
    "<script>\n'use strict';\n"
    KR_CONSOLE_JS
    "const BINS=[[0,'< 1 min'],[6e4,'1-10 min'],[6e5,'10-60 min'],[36e5,'1-6 h'],[216e5,'6-24 h'],"
    "[864e5,'1-3 d'],[2592e5,'3-7 d'],[6048e5,'7-28 d'],[24192e5,'28 d +']];\n"
    "function binned(h){const o=BINS.map(b=>[b[1],0]);for(const[lo,n]of h||[]){let i=BINS.length-1;"
    "while(i>0&&lo<BINS[i][0])i--;o[i][1]+=n}return o}\n"
    "function bars(id,rows){const box=$(id);box.replaceChildren();"
    "const max=Math.max(1,...rows.map(r=>r[1]));for(const[l,v,color]of rows){const r=el('div','row');"
    "r.append(el('span',null,l));const w=el('div');const b=el('div','bar');"
    "b.style.width=(100*v/max)+'%';if(color)b.style.background=color;w.append(b);r.append(w);"
    "r.append(el('span','n',num(v)));box.append(r)}}\n"
    "function cols(id,vals,tip){const box=$(id);box.replaceChildren();const max=Math.max(1e-9,...vals);"
    "vals.forEach((v,i)=>{const d=el('div');d.style.height=(100*v/max)+'%';d.title=tip(v,i);"
    "box.append(d)})}\n"
    "function render(s){\n"
    "$('name').textContent=s.crawl_name+' \\u00b7 pid '+s.pid;const st=$('state');st.textContent=s.state;"
    "st.className='pill '+s.state;$('uptime').textContent='up '+dur(s.uptime_ms);"
    "$('ver').textContent='kria '+s.kria;\n"
    "const c=s.census;const h=s.hosts;const r=s.rates;\n"
    "const lastHour=s.changes.known?s.changes.per_hour[23]:null;\n"
    "$('tiles').replaceChildren(tile('visits/s (10 s)',num(r.visits_per_s_10s)),"
    "tile('visits/s (1 min)',num(r.visits_per_s_60s)),tile('URIs known',num(s.frontier.discovered)),"
    "tile('queued',num(s.frontier.queued)),tile('due now',c?num(c.due_now):'n/a'),"
    "tile('in flight',num(s.in_flight)),tile('changes (1 h)',num(lastHour)),"
    "tile('overdue p50',c&&c.due_now?dur(c.overdue_p50_ms):'none'),"
    "tile('overdue p95',c&&c.due_now?dur(c.overdue_p95_ms):'none'));\n"
    "const sp=s.series.visits_per_s;cols('spark',Array(Math.max(0,120-sp.length)).fill(0).concat(sp),"
    "(v,i)=>num(v)+' visits/s');"
    "$('spark-note').textContent=num(s.crawl.fetched)+' visits, '+num(s.crawl.fetch_errors)+' errors since start';\n"
    "bars('hosts',[['ready',h.ready,'#7bc96f'],['busy',h.busy,'#4fb3d9'],['snoozed',h.snoozed,'#8b98a5'],"
    "['empty',h.empty,'#26313b']]);$('hosts-note').textContent=h.total+' host queues, '+h.backoff+"
    "' in back-off, '+h.gated+' waiting for robots.txt';\n"
    "if(c){bars('overdue',binned(c.overdue));$('overdue-note').textContent=c.due_now+' due now of '+"
    "c.queued+' queued \\u00b7 census '+dur(c.age_ms)+' ago ('+c.scan_ms.toFixed(1)+' ms)';"
    "bars('waits',binned(c.wait));$('waits-note').textContent='median wait '+dur(c.wait_p50_ms)+"
    "' \\u00b7 '+c.versions+' versions over '+c.visited+' visited URIs'}\n"
    "else{$('overdue-note').textContent='first census pending';$('waits-note').textContent='first census pending'}\n"
    "cols('changes',s.changes.per_hour,(v,i)=>(23-i)+' h ago: '+v);$('changes-note').textContent="
    "s.changes.known?num(s.changes.total)+' changes found ('+s.changes.source+')':'not measured yet';\n"
    "const tb=$('vt');tb.replaceChildren();for(const v of s.validators.top){const tr=el('tr');"
    "tr.append(el('td',null,v.host));tr.append(el('td',null,num(v.checks)));"
    "tr.append(el('td',null,num(v.predicted_unchanged)));tr.append(el('td',v.misses?'bad':null,num(v.misses)));"
    "tr.append(el('td',v.distrusted?'bad':'ok',v.reliability==null?'n/a':(100*v.reliability).toFixed(1)+'%'));"
    "tr.append(el('td',null,v.usefulness==null?'n/a':(100*v.usefulness).toFixed(1)+'%'));tb.append(tr)}\n"
    "$('vt-note').textContent=s.validators.top.length?s.validators.distrusted_hosts+' hosts distrusted':"
    "'no validator checks yet'}\n"
    "async function refresh(){try{const r=await fetch('status',{cache:'no-store'});"
    "if(!r.ok)throw new Error('HTTP '+r.status);render(await r.json());$('err').textContent=''}"
    "catch(e){$('err').textContent='status unavailable: '+e.message}}\n"
    "refresh();setInterval(refresh,5000);\n"
    "</script></body></html>\n";

const char kr__console_headers[] =
    "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src "
    "'unsafe-inline'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'\r\nReferrer-Policy: no-referrer\r\n";

/* ---- routing ---------------------------------------------------------------------------------- */

static int path_is(kr_slice_t p, const char *s) { return kr_slice_eq(p, kr_slice_cstr(s)); }

static void handle(void *ud, const kr_status_req_t *req, kr_status_resp_t *resp);

void kr__status_pages_handle(void *ud, const kr_status_req_t *req, kr_status_resp_t *resp) {
  KR_TP_ENTER(KR_TP_STATUS);
  handle(ud, req, resp);
  KR_TP_LEAVE();
}

/* WebSub callbacks, /websub/TOKEN (src/crawl/websub.c): a hub's GET
 * verifies intent (200 with hub.challenge as the body, or 404), its POST
 * pushes the topic's content (202, or 404 for an unknown token). */
static void page_websub(kr_crawl_t *c, const kr_status_req_t *req, kr_status_resp_t *resp) {
  kr_slice_t token = kr_slice(req->path.p + 8, req->path.n - 8);
  resp->content_type = "text/plain; charset=utf-8";
  if (req->method == KR_STATUS_POST) {
    resp->status = kr_crawl_websub_notify(c, token, req->signature, req->body);
    return;
  }
  kr_buf_t mode, topic, lease;
  kr_buf_init(&mode, 64);
  kr_buf_init(&topic, 8192);
  kr_buf_init(&lease, 32);
  int64_t lease_s = 0;
  if (kr_status_query_param(req->query, "hub.lease_seconds", &lease) == 1) {
    char *end;
    long long v = strtoll(lease.data, &end, 10);
    if (*end == '\0' && v > 0) lease_s = v;
  }
  resp->status = 404;
  if (kr_status_query_param(req->query, "hub.mode", &mode) == 1 &&
      kr_status_query_param(req->query, "hub.topic", &topic) == 1) {
    kr_slice_t m = kr_slice(mode.data, mode.len);
    /* a subscription is confirmed by echoing hub.challenge (into the
     * body, read first): none, no confirmation */
    int sub = kr_slice_eq(m, KR_SLICE_LIT("subscribe"));
    if (!sub || kr_status_query_param(req->query, "hub.challenge", resp->body) == 1)
      resp->status = kr_crawl_websub_verify(c, token, m, kr_slice(topic.data, topic.len), lease_s);
    if (resp->status != 200) kr_buf_reset(resp->body);
  }
  kr_buf_free(&mode);
  kr_buf_free(&topic);
  kr_buf_free(&lease);
}

static void handle(void *ud, const kr_status_req_t *req, kr_status_resp_t *resp) {
  kr_service_t *s = ud;
  kr_crawl_t *c = s->c;
  int get = req->method != KR_STATUS_POST;
  if (!kr_crawl_frontier(c)) {
    error_json(resp, 503, "the crawl is closing");
    return;
  }
  if (req->path.n > 8 && memcmp(req->path.p, "/websub/", 8) == 0) {
    page_websub(c, req, resp);
    return;
  }
  if (path_is(req->path, "/pause") || path_is(req->path, "/resume") || path_is(req->path, "/stop")) {
    if (get) {
      error_json(resp, 405, "control requests are POSTs");
      resp->headers = "Allow: POST\r\n";
      return;
    }
    if (path_is(req->path, "/stop")) {
      resp->after = stop_after; /* once the reply is out */
      resp->after_ud = s;
      resp->status = 202;
      control_reply(s, resp, "stop");
      return;
    }
    int pause = path_is(req->path, "/pause");
    kr_crawl_state_t cs;
    kr_crawl_get_state(c, &cs);
    if (!cs.stopping) {
      kr_crawl_pause(c, pause);
      if (pause && !s->paused_at_ms) s->paused_at_ms = kr_crawl_now(c);
      if (!pause) s->paused_at_ms = 0;
    }
    control_reply(s, resp, pause ? "pause" : "resume");
    if (cs.stopping) resp->status = 409;
    return;
  }
  if (!get) {
    error_json(resp, 405, "only /pause, /resume and /stop take POST");
    resp->headers = "Allow: GET, HEAD\r\n";
    return;
  }
  int st = 200;
  if (path_is(req->path, "/") || path_is(req->path, "/index.html")) {
    resp->content_type = "text/html; charset=utf-8";
    resp->headers = kr__console_headers;
    kr_buf_append(resp->body, console_html, sizeof console_html - 1);
  } else if (path_is(req->path, "/status")) {
    if (want_text(req)) {
      resp->content_type = "text/plain; charset=utf-8";
      page_status_text(s, resp->body);
    } else {
      page_status(s, resp->body);
    }
  } else if (path_is(req->path, "/metrics")) {
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    page_metrics(s, resp->body);
  } else if (path_is(req->path, "/hosts")) {
    st = page_hosts(s, req, resp);
    if (st == 400) error_json(resp, 400, "hosts: limit=0..10000, sort=overdue|queued|finished|name, "
                                         "state=empty|ready|busy|snoozed");
  } else if (path_is(req->path, "/frontier")) {
    page_frontier(s, req, resp);
  } else if (path_is(req->path, "/uri")) {
    page_uri(s, req, resp);
  } else if (path_is(req->path, "/cluster")) {
    resp->content_type = "text/html; charset=utf-8";
    resp->headers = kr__console_headers;
    kr_buf_append(resp->body, kr__clusterpage_html, kr__clusterpage_len);
  } else if (path_is(req->path, "/cluster.json")) { /* asking starts the next reading */
    kr_clusterpage_json(kr_crawl_cluster_view(c), kr_crawl_now(c), resp->body);
    kr_buf_append(resp->body, "\n", 1);
  } else {
    error_json(resp, 404, "no such page: try /, /status, /metrics, /hosts, /frontier, /uri?url=, "
                          "/cluster");
  }
}
