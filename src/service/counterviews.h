/*
 * The crawl's counters (src/crawl/counters.h) as each surface shows them,
 * generated from the one table: the "crawl" object of /status, the lines
 * of /metrics (the summary lines are the crawl's: kr_counters_summary in
 * counters.h). Nothing here lists a counter by hand.
 */
#ifndef KRIA_COUNTERVIEWS_H
#define KRIA_COUNTERVIEWS_H

#include <stddef.h>

#include "crawl.h"
#include "frontier.h"
#include "kria/buf.h"

/* {"issued":N,...}: every counter under its name. */
void kr_counters_json(const kr_crawl_stats_t *st, kr_buf_t *out);
/* Legacy members of /status "adaptive", each another name of one row:
 * {"changed":N,...}. */
void kr_counters_json_adaptive(const kr_crawl_stats_t *st, kr_buf_t *out);
/* # HELP, # TYPE and the sample of every counter (Prometheus text). */
void kr_counters_metrics(const kr_crawl_stats_t *st, kr_buf_t *out);

/* The frontier's figures (kr_frontier_stats_t, over the crawl's life but
 * the gauges), one table for /status "frontier" and /metrics:
 *   X(key, member, metric, type, help)
 * key is the JSON member, member the field of kr_frontier_stats_t. */
#define KR_FRONTIER_FIGURES(X)                                                                   \
  X(discovered, c.discovered, "kria_frontier_uris", "gauge", "URIs known to the frontier.")      \
  X(queued, c.queued, "kria_frontier_queued", "gauge", "URIs queued (to visit or revisit).")     \
  X(finished, c.finished, "kria_frontier_finished_total", "counter", "Completions of any outcome.") \
  X(succeeded, c.succeeded, "kria_frontier_succeeded_total", "counter", "Successful visits.")    \
  X(retried, c.retried, "kria_frontier_retried_total", "counter", "Retryable outcomes.")         \
  X(failed, c.failed, "kria_frontier_failed_total", "counter", "Failed outcomes.")               \
  X(disregarded, c.disregarded, "kria_frontier_disregarded_total", "counter",                    \
    "URIs disregarded (robots.txt, the scope re-check, the address policy).")                   \
  X(backoffs, c.backoffs, "kria_frontier_backoffs_total", "counter", "Host back-offs on 429/503.") \
  X(bytes, c.bytes, "kria_frontier_bytes_total", "counter", "Response bytes of finished URIs.") \
  X(refused, c.refused, "kria_frontier_refused_total", "counter",                                \
    "New links refused at their host's URI cap (limits.max-uris-per-host).")                    \
  X(retired, c.retired, "kria_frontier_retired_total", "counter",                                \
    "URIs retired: gone (404/410) or no longer linked.")                                        \
  X(hosts, hosts, "kria_frontier_hosts", "gauge", "Host queues in memory.")                      \
  X(ready_hosts, ready_hosts, "kria_frontier_ready_hosts", "gauge", "Host queues on the ready list.") \
  X(duplicates, duplicates, "kria_frontier_duplicate_links_total", "counter",                    \
    "Links already known, rejected in memory (this process).")                                  \
  X(rejected, rejected, "kria_frontier_rejected_links_total", "counter",                         \
    "Links the frontier rejected as bad (this process).")                                       \
  X(seen, seen, "kria_frontier_seen", "gauge", "Fingerprints in the seen filter.")

/* /status "frontier": every figure, then limit and limit_until. */
void kr_frontier_figures_json(const kr_frontier_stats_t *fs, kr_buf_t *out);
/* Every figure of the frontier table (Prometheus text). */
void kr_frontier_figures_metrics(const kr_frontier_stats_t *fs, kr_buf_t *out);
#endif
