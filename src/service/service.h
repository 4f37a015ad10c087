/*
 * The crawl as a service: what runs beside the crawl on its loop when
 * kria is a long-lived process — the status server (src/service/status.c with
 * the pages of src/service/status_pages.c), systemd notification and watchdog
 * (src/service/sdnotify.c), the progress statistics and their log line
 * (src/service/progress.c), and SIGHUP reload of the configuration and seeds.
 *
 * The front end that builds the crawl installs kr_service_hooks in its
 * kr_crawl_opts_t; the crawl calls them at fixed points (crawl.h,
 * kr_crawl_hooks_t) and none calls back into the crawl while the crawl is
 * mid-change:
 *   open      end of kr_crawl_new (KR_E* + err: the crawl fails to
 *             start, e.g. the status port is taken)
 *   ready     kr_crawl_run, before the loop runs (READY=1)
 *   issued    a URI was issued (overdue statistics)
 *   stopping  the crawl starts stopping (STOPPING=1)
 *   close     the crawl closes its handles (ours too)
 *   free      kr_crawl_free, after the loop ran dry
 *
 * Reload (SIGHUP): the file and -o assignments are read again into a new
 * configuration. It is refused, with every error logged and the running
 * configuration kept, when it does not load or when a key that only takes
 * effect at start-up changed (state and WARC directories, DNS, HTTP
 * client, store, canonicalization, limits, the status address, ...). Live
 * keys: the seeds file, scope.*, politeness.* but queue-assignment,
 * crawl.default-wait, crawl.log-level, crawl.progress-interval, robots
 * obey/expiry/exempt, http.conditional-requests, status.token, every
 * other per-host key outside [http], and all [host] and [wait] sections.
 * Applying it: per-host settings are rebuilt from the new views and set
 * on every host queue, the scope is rebuilt from the new seeds (queued
 * URIs now out of scope are refused when issued: the scope re-check
 * processor), new seeds are added to the frontier, the seeds and rules
 * in force are kept in the state database and URIs an earlier scope
 * disregarded that the new one takes in are queued again (scopestate.h).
 * An empty crawl.seeds keeps the seeds in force; a seeds file with no
 * seed or more bad lines than seeds is refused, and so are new seeds or
 * rules that would put hosts with URIs out of scope, naming them, unless
 * the new configuration sets scope.allow-change. Settings still used
 * by fetches in flight stay allocated until the crawl is freed (a reload
 * costs the memory of one configuration until exit).
 */
#ifndef KRIA_SERVICE_H
#define KRIA_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "crawl.h"
#include "progress.h"
#include "sdnotify.h"
#include "status.h"

typedef struct kr_service kr_service_t;

/* The service as the crawl's observer (kr_crawl_opts_t.hooks). */
extern const kr_crawl_hooks_t kr_service_hooks;

/* ---- for src/service/status_pages.c ------------------------------------------------ */

#define KR_SVC_LAG_PROBE_MS 20 /* loop-lag probe period: 50 samples a second */
#define KR_SVC_TOP_VT 20 /* hosts listed with their validator trust */

/* Host queues by state and validator trust, summed over every host;
 * recomputed at most once a second (O(hosts), in memory). */
typedef struct kr_hosts_summary {
  uint64_t at_ms;           /* when computed */
  uint64_t n, ready, busy, snoozed, empty;
  uint64_t gated, backoff;  /* waiting for robots.txt; in a 429/503 back-off */
  uint64_t due;             /* hosts whose head is due */
  kr_lhist_t head_overdue;  /* now - head next_at of those */
  uint64_t vt_checks, vt_predicted_unchanged, vt_skipped, vt_misses, vt_distrusted;
  size_t ntop;              /* hosts in top (most validator checks) */
  struct kr_svc_vt {
    char host[128];
    uint64_t checks, predicted_unchanged, skipped, verified, misses, false_alarms;
    int distrusted;
    double reliability, usefulness;  /* -1: undefined */
  } top[KR_SVC_TOP_VT];
} kr_hosts_summary_t;

struct kr_service {
  kr_crawl_t *c;
  kr_status_server_t *status;  /* NULL: status.listen empty */
  char *addr_path;             /* <state-dir>/status.addr while we serve */
  kr_sdnotify_t sd;
  kr_progress_t *prog;
  uv_timer_t tick;             /* every second: samples, census, progress line */
  uv_timer_t watchdog;         /* WATCHDOG=1 while healthy */
  uv_timer_t lag_probe;        /* every KR_SVC_LAG_PROBE_MS: loop lag into the progress stats */
  uv_signal_t sighup;
  int tick_init, watchdog_init, lag_probe_init, sighup_init, closed;
  uint64_t started_ms;
  uint64_t tick_due_mono;      /* when the tick should fire (monotonic ms) */
  uint64_t lag_ms, lag_ms_max; /* the last tick's lateness; the largest of the minute */
  uint64_t lag_window_start;
  uint64_t lag_probe_due;      /* loop time the probe should fire */
  uint64_t progress_ms;        /* crawl.progress-interval, 0 off */
  uint64_t next_progress_ms;
  uint64_t next_sd_status_ms;
  uint64_t paused_at_ms;       /* 0: not paused */
  uint64_t watchdog_pings;
  /* reload */
  char *config_path;
  char **overrides;
  size_t n_overrides;
  kr_config_t **configs;       /* loaded by reloads, freed at the end */
  size_t nconfigs;
  kr_hostcfg_t **retired;      /* settings replaced by reloads */
  size_t nretired, retired_cap;
  kr_scope_t **old_scopes;
  size_t nold_scopes;
  uint64_t reloads_ok, reloads_failed, last_reload_ms;
  char last_reload_error[512];
  /* cached summaries */
  kr_hosts_summary_t hs;
};

/* The status server's handler (status_pages.c); ud is the service. */
void kr__status_pages_handle(void *ud, const kr_status_req_t *req, kr_status_resp_t *resp);
/* Host summary, recomputed when older than a second. */
const kr_hosts_summary_t *kr__service_hosts(kr_service_t *s, uint64_t now_ms);
/* Changes found so far (the crawl's changes_found, counters.h). */
uint64_t kr__service_changes(const kr_service_t *s);
/* Fill the progress figures from the crawl as it is now. */
void kr__service_figures(kr_service_t *s, kr_progress_figures_t *f);
/* One URI's row as JSON or text (status_pages.c; `kria report uri`
 * offline uses it too). */
struct kr_uri_row;
void kr__status_uri_format(const struct kr_uri_row *r, uint64_t now_ms, int text, kr_buf_t *out);
/* 1 when a reload may change key k, 0 when a change of it refuses the
 * reload (it takes a restart). */
int kr__service_key_is_live(kr_cfg_key_t k);
/* "running", "paused", "held" (the state disk is low: no new fetches), "stopping" */
const char *kr__service_state(const kr_service_t *s);

#endif
