/*
 * What the crawl reports of itself: the counters table's rows (counters.h),
 * the end-of-run summary (its counter lines made from them;
 * src/service/counterviews.c renders the same rows for /status and
 * /metrics), and the functions of crawl.h that read the crawl's
 * statistics and state for reports.
 */
#include "counters.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crawl.h"
#include "diskguard.h"
#include "log.h"

const kr_counter_def_t kr_counter_defs[KR_CTR__N] = {
#define DEF_(n, m, u, h, l, s) \
  [KR_CTR_##n] = {.name = #n, .metric = m, .help = h, .summary = s, .unit = u, .line = l},
    KR_CRAWL_COUNTERS(DEF_)
#undef DEF_
};

void kr_counters_summary(const kr_crawl_stats_t *st, int line, kr_buf_t *out) {
  for (size_t i = 0; i < KR_CTR__N; i++) {
    const kr_counter_def_t *d = &kr_counter_defs[i];
    if (d->line != line) continue;
    const char *p = strstr(d->summary, "%s");
    if (!p) continue; /* every row has one (test_service checks) */
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, st->v[i]);
    kr_buf_append(out, d->summary, (size_t)(p - d->summary));
    kr_buf_append_str(out, num);
    kr_buf_append_str(out, p + 2);
  }
}

/* ---- the end-of-run summary ------------------------------------------------------ */

/* Adaptive revisiting in numbers, and validator trust per host. */
static void summary_adaptive(kr_crawl_t *c) {
  /* The counters, from their table (counters.h): "crawl: ..." and
   * "revisits: ...". */
  kr_buf_t b;
  kr_buf_init(&b, 4096);
  for (int line = KR_COUNTER_LINES - 1; line >= 0; line--) {
    if (line == KR_COUNTER_LINE_CLUSTER && !c->cluster) continue;
    kr_buf_reset(&b);
    kr_counters_summary(&c->st, line, &b);
    if (b.len) KR_LOG(KR_LOG_NOTICE, NULL, "%.*s", (int)b.len, b.data);
  }
  kr_buf_free(&b);
  uint64_t now = kr_crawl_now(c);
  size_t it = 0, shown = 0;
  kr_host_report_t r;
  while (kr_frontier_report_next(c->frontier, &it, now, &r)) {
    if (!r.vt.checks) continue;
    if (++shown > 50) {
      KR_LOG(KR_LOG_NOTICE, NULL, "validators: more hosts in the state database's "
                                  "host_validators view");
      break;
    }
    double rel = kr_vtrust_reliability(&r.vt), use = kr_vtrust_usefulness(&r.vt);
    char rs[16] = "?", us[16] = "?";
    if (rel >= 0) snprintf(rs, sizeof rs, "%.3f", rel);
    if (use >= 0) snprintf(us, sizeof us, "%.3f", use);
    KR_LOG(KR_LOG_NOTICE, r.name,
           "validators: reliability %s, usefulness %s (%" PRIu64 " checks, %" PRIu64
           " said unchanged, %" PRIu64 " downloads saved, %" PRIu64 " verified, %" PRIu64
           " misses)%s",
           rs, us, r.vt.checks, r.vt.predicted_unchanged, r.vt.skipped, r.vt.verified,
           r.vt.misses, kr_vtrust_is_distrusted(&r.vt, (int64_t)now) ? ", distrusted" : "");
  }
}

void kr__crawl_summary(kr_crawl_t *c) {
  kr_frontier_stats_t fs;
  kr_frontier_stats(c->frontier, &fs);
  summary_adaptive(c);
  double secs = (double)(kr_clock_mono_us(&c->clock) - c->run_started_us) / 1e6;
  KR_LOG(KR_LOG_NOTICE, NULL,
         "fetched %" PRIu64 " (%" PRIu64 " errors), %" PRIu64 " bytes in %.1f s (%.0f/s); "
         "frontier: %" PRIu64 " URIs, %" PRIu64 " queued; %" PRIu64
         " documents this %s; all runs %" PRIu64 " succeeded, %" PRIu64 " disregarded, %" PRIu64
         " failed",
         c->st.fetched, c->st.fetch_errors, c->st.bytes, secs,
         secs > 0 ? (double)c->st.fetched / secs : 0.0, fs.c.discovered, fs.c.queued,
         fs.run_documents,
         kr_config_ms(kr_config_global(c->cfg), KR_CFG_LIMITS_PERIOD) ? "period" : "run",
         fs.c.succeeded, fs.c.disregarded, fs.c.failed);
  kr_http_stats_t hs;
  if (kr_crawl_http_stats(c, &hs) && hs.tls.handshakes)
    KR_LOG(KR_LOG_NOTICE, NULL,
           "tls: %" PRIu64 " handshakes (%" PRIu64 " resumed), %" PRIu64
           " bytes copied around the cipher",
           hs.tls.handshakes, hs.tls.resumed, hs.tls.copied);
  if (kr_crawl_http_stats(c, &hs) && hs.setups_waited)
    KR_LOG(KR_LOG_NOTICE, NULL,
           "%" PRIu64 " fetches waited for a connection slot at their server's address "
           "([http] setups-per-address)",
           hs.setups_waited);
  if (c->st.address_refused)
    KR_LOG(KR_LOG_NOTICE, NULL,
           "%" PRIu64 " fetches and URIs refused by the address policy (crawl.log -5005; "
           "[http] allow-private-addresses, allow-addresses)",
           c->st.address_refused);
}

/* ---- the crawl's statistics and state (crawl.h) ---------------------------- */

void kr_crawl_get_stats(const kr_crawl_t *c, kr_crawl_stats_t *out) { *out = c->st; }

void kr_crawl_get_state(const kr_crawl_t *c, kr_crawl_state_t *out) {
  memset(out, 0, sizeof *out);
  out->in_flight = c->in_flight;
  out->fetch_objs = c->nfetch_objs;
  out->paused = c->paused;
  out->stopping = c->stopping || c->closing;
  out->disk_held = c->disk_held;
  out->fatal = c->fatal != 0;
  if (c->disk) {
    kr_diskguard_stats_t ds;
    kr_diskguard_stats(c->disk, &ds);
    out->disk_watched = 1;
    out->disk_free = ds.avail;
    out->disk_reserve = ds.reserve;
    out->disk_lows = ds.lows;
  }
}

const kr_config_t *kr_crawl_config(const kr_crawl_t *c) { return c->cfg; }

kr_url_canon_opts_t *kr_crawl_canon(const kr_crawl_t *c) { return c->canon; }

int kr_crawl_http_stats(const kr_crawl_t *c, kr_http_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (!c->http) return 0;
  kr_http_client_stats(c->http, out);
  return 1;
}

void kr_crawl_linkcache_stats(const kr_crawl_t *c, kr_linkcache_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (c->links_cache) kr_linkcache_stats(c->links_cache, out);
}
