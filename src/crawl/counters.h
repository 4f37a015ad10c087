/*
 * The crawl's counters, defined once. Every figure the processors count
 * in kr_crawl_stats_t (crawl.h) is one row of KR_CRAWL_COUNTERS: the
 * struct's fields, the "crawl" members of the status JSON, the Prometheus
 * lines of /metrics and the end-of-run summary are all generated from it
 * (here and src/service/counterviews.h), so a row added here shows everywhere
 * and every surface shows the same number under the same definition.
 *
 *   X(name, metric, unit, help, line, summary)
 *     name     the field of kr_crawl_stats_t and the key in /status "crawl"
 *     metric   the Prometheus name (a counter: ends in _total)
 *     unit     KR_UNIT_COUNT or KR_UNIT_BYTES (how the summary reads)
 *     help     what exactly is counted (HELP of /metrics)
 *     line     which summary line shows it: 0 "crawl: ...", 1 "revisits: ..."
 *     summary  its words in that line: the value replaces the first %s;
 *              the text carries its own separator from the one before
 *
 * Figures shown under one name everywhere:
 *   changes       changes_found: revisits that found the content changed
 *                 since the URI's previous version (a URI's first visit
 *                 is not a change). /status "changes.total",
 *                 kria_changes_total, the progress line's "changes", the
 *                 console and the summary's "revisits: N changed".
 *   versions      changed: visits that stored a new version, a URI's
 *                 first visit included (kria_versions_total).
 *   bytes saved   aborted_bytes_saved: body bytes validators spared, the
 *                 Content-Length less the bytes received of visits aborted
 *                 at the headers (a lower bound: a 304's body size is
 *                 unknown). kria_validator_bytes_saved_total, the progress
 *                 line's "saved by validators", /status "bytes_saved".
 *
 * Only this process's visits are counted; a restart begins at zero (the
 * census of the state database covers the crawl's whole life).
 */
#ifndef KRIA_COUNTERS_H
#define KRIA_COUNTERS_H

#include <stdint.h>

#include "kria/buf.h"

enum { KR_UNIT_COUNT = 0, KR_UNIT_BYTES = 1 };

#define KR_CRAWL_COUNTERS(X)                                                                      \
  X(issued, "kria_uris_issued_total", KR_UNIT_COUNT, "URIs taken from the frontier.", 0,          \
    "crawl: %s URIs issued")                                                                      \
  X(fetched, "kria_fetches_total", KR_UNIT_COUNT, "HTTP responses received (any status).", 0,     \
    ", %s responses")                                                                             \
  X(fetch_errors, "kria_fetch_errors_total", KR_UNIT_COUNT, "Fetches that got no response.", 0,   \
    ", %s fetch errors")                                                                          \
  X(disregarded, "kria_disregarded_total", KR_UNIT_COUNT, "URIs disregarded by robots.txt.", 0,   \
    ", %s disregarded by robots.txt")                                                             \
  X(out_of_scope, "kria_out_of_scope_total", KR_UNIT_COUNT,                                       \
    "URIs refused by the scope re-check.", 0, ", %s out of scope")                                \
  X(address_refused, "kria_address_refused_total", KR_UNIT_COUNT,                                 \
    "Fetches and URIs refused by the address policy (crawl.log -5005).", 0,                       \
    ", %s refused by the address policy")                                                         \
  X(prerequisites, "kria_prerequisites_total", KR_UNIT_COUNT,                                     \
    "URIs sent back to wait for their robots.txt.", 0, ", %s sent back for robots.txt")           \
  X(robots_fetched, "kria_robots_fetched_total", KR_UNIT_COUNT,                                   \
    "robots.txt fetches completed.", 0, ", %s robots.txt fetched")                                \
  X(robots_reused, "kria_robots_reused_total", KR_UNIT_COUNT,                                     \
    "robots.txt rules read back from the state database.", 0, ", %s robots.txt reused")           \
  X(links_found, "kria_links_found_total", KR_UNIT_COUNT, "Links found by the extractors.", 0,    \
    "; links: %s found")                                                                          \
  X(links_scheduled, "kria_links_scheduled_total", KR_UNIT_COUNT,                                 \
    "Links handed to the frontier.", 0, ", %s scheduled")                                         \
  X(links_rejected, "kria_links_rejected_total", KR_UNIT_COUNT,                                   \
    "Links rejected: not a URL, or out of scope.", 0, ", %s rejected")                            \
  X(bytes, "kria_response_bytes_total", KR_UNIT_BYTES, "Raw response bytes received.", 0,         \
    "; %s response bytes")                                                                        \
  X(deferred, "kria_deferred_total", KR_UNIT_COUNT,                                               \
    "URIs given back untouched at shutdown.", 0, ", %s given back at shutdown")                   \
  X(changes_found, "kria_changes_total", KR_UNIT_COUNT,                                           \
    "Revisits that found the content changed since the URI's previous version (a first visit "   \
    "is not a change).", 1, "revisits: %s changed")                                               \
  X(unchanged, "kria_unchanged_total", KR_UNIT_COUNT,                                             \
    "Visits that found unchanged content (304, aborted at the headers, or the same digest).", 1,  \
    ", %s unchanged")                                                                             \
  X(not_modified, "kria_not_modified_total", KR_UNIT_COUNT,                                       \
    "Unchanged visits answered 304 to a conditional request.", 1, " (%s not modified")            \
  X(midfetch_aborts, "kria_midfetch_aborts_total", KR_UNIT_COUNT,                                 \
    "Unchanged visits aborted at the headers on validators.", 1, ", %s aborted mid-fetch")        \
  X(unchanged_full, "kria_unchanged_by_digest_total", KR_UNIT_COUNT,                              \
    "Unchanged visits found by the digest of the whole body.", 1, ", %s by digest)")              \
  X(unknown, "kria_content_unknown_total", KR_UNIT_COUNT,                                         \
    "Visits whose content state could not be told (no digest).", 1, ", %s unknown")               \
  X(changed, "kria_versions_total", KR_UNIT_COUNT,                                                \
    "Visits that stored a new version: a URI's first visit, or a change found.", 1,               \
    "; %s versions stored")                                                                       \
  X(unchanged_body_bytes, "kria_unchanged_body_bytes_total", KR_UNIT_BYTES,                       \
    "Body bytes received on unchanged visits.", 1, "; %s body bytes received on unchanged visits") \
  X(aborted_bytes_saved, "kria_validator_bytes_saved_total", KR_UNIT_BYTES,                       \
    "Body bytes validators spared downloading: Content-Length less the bytes received of "        \
    "visits aborted at the headers (a lower bound: a 304's body size is unknown).", 1,            \
    ", %s saved by validators (not received after aborts)")                                       \
  X(stripped, "kria_digests_stripped_total", KR_UNIT_COUNT,                                       \
    "Change digests with volatile sections stripped.", 1, "; %s stripped digests")                \
  X(duplicates, "kria_duplicate_payloads_total", KR_UNIT_COUNT,                                   \
    "Payloads already stored under another URL.", 1, ", %s duplicate payloads")                   \
  X(embeds_refreshed, "kria_embeds_refreshed_total", KR_UNIT_COUNT,                               \
    "Embeds pulled forward with a changed page.", 1, ", %s embeds refreshed")                     \
  X(feeds, "kria_feeds_total", KR_UNIT_COUNT, "Feeds and sitemaps read.", 1, "; %s feeds")        \
  X(feed_items, "kria_feed_items_total", KR_UNIT_COUNT, "Feed items with a URL in them.", 1,      \
    " (%s items")                                                                                 \
  X(feed_pulled, "kria_feed_pulled_total", KR_UNIT_COUNT,                                         \
    "Feed items scheduled now (new or updated).", 1, ", %s pulled forward")                       \
  X(feed_errors, "kria_feed_errors_total", KR_UNIT_COUNT,                                         \
    "Unreadable feeds (XML errors, DTDs, limits).", 1, ", %s errors)")                            \
  X(sitemaps_from_robots, "kria_sitemaps_from_robots_total", KR_UNIT_COUNT,                       \
    "Sitemaps found in robots.txt.", 1, ", %s sitemaps from robots.txt")                          \
  X(waits_multiplicative, "kria_waits_multiplicative_total", KR_UNIT_COUNT,                       \
    "Revisit waits decided by the multiplicative policy.", 1, "; waits: %s multiplicative")      \
  X(waits_capped, "kria_waits_capped_total", KR_UNIT_COUNT,                                       \
    "Multiplicative waits raised to the host's capacity (adaptive.capacity-plan).", 1,            \
    " (%s raised to the host's capacity)")                                                        \
  X(waits_poisson, "kria_waits_poisson_total", KR_UNIT_COUNT,                                     \
    "Revisit waits decided by the poisson estimator.", 1, ", %s poisson")                         \
  X(vtrust_misses, "kria_visit_validator_misses_total", KR_UNIT_COUNT,                            \
    "Visits of this process where validators said unchanged and the digest disagreed (the "      \
    "per-host totals kept across restarts: kria_validator_misses_total).", 1,                     \
    "; %s validator misses this run")                                                              \
  X(learned_loaded, "kria_learned_loaded_total", KR_UNIT_COUNT,                                   \
    "Hosts whose learned state (allocator, capacity plan, trust run, informed priors, signals) "   \
    "was loaded at the start.", 1,                                                                \
    "; learned state: %s hosts loaded")                                                           \
  X(learned_refused, "kria_learned_refused_total", KR_UNIT_COUNT,                                 \
    "Hosts whose stored learned state was unreadable: they started fresh.", 1, " (%s refused)")  \
  X(learned_saved, "kria_learned_saved_total", KR_UNIT_COUNT,                                     \
    "Learned-state records written (at most one per host per adaptive.learned-state-interval).", \
    1, ", %s saved")                                                                              \
  X(learned_bytes, "kria_learned_bytes_total", KR_UNIT_BYTES,                                     \
    "Bytes of the learned-state records written.", 1, " (%s bytes)")                              \
  X(learned_damaged, "kria_learned_sections_refused_total", KR_UNIT_COUNT,                        \
    "Informed-priors pool or signal-reliability sections of a loaded learned state that were "    \
    "unreadable: that part of the host started fresh.", 1, ", %s damaged sections dropped")      \
  X(signals_seen, "kria_signals_seen_total", KR_UNIT_COUNT,                                       \
    "Change signals read: a dated sitemap or feed item newer than the last one read for its URI.", \
    1, "; %s change signals")                                                                     \
  X(signals_ignored, "kria_signals_ignored_total", KR_UNIT_COUNT,                                 \
    "Change signals not acted on: their host's signals have not verified.", 1, " (%s ignored")   \
  X(signals_tp, "kria_signals_confirmed_total", KR_UNIT_COUNT,                                    \
    "Visits of a listed URI that found the change its signal announced.", 1, ", %s confirmed")   \
  X(signals_fp, "kria_signals_false_total", KR_UNIT_COUNT,                                        \
    "Visits of a listed URI that found unchanged what a signal said changed.", 1, ", %s false")  \
  X(signals_fn, "kria_signals_missed_total", KR_UNIT_COUNT,                                       \
    "Visits of a listed URI that found a change no signal announced.", 1, ", %s missed)")        \
  X(websub_requests, "kria_websub_requests_total", KR_UNIT_COUNT,                                 \
    "WebSub subscription requests (new and renewals) a hub took (2xx).", 1,                       \
    "; websub: %s requests")                                                                      \
  X(websub_request_errors, "kria_websub_request_errors_total", KR_UNIT_COUNT,                     \
    "WebSub subscription requests that failed or a hub refused (asked again, a bounded number of times).", 1, \
    " (%s failed)")                                                                               \
  X(websub_verified, "kria_websub_verified_total", KR_UNIT_COUNT,                                 \
    "WebSub verifications of intent confirmed (a lease granted or renewed).", 1,                  \
    ", %s verified")                                                                              \
  X(websub_denied, "kria_websub_denied_total", KR_UNIT_COUNT,                                     \
    "WebSub subscriptions a hub denied (dropped).", 1, ", %s denied")                            \
  X(websub_given_up, "kria_websub_given_up_total", KR_UNIT_COUNT,                                 \
    "WebSub subscriptions given up: websub.verify-attempts requests and no verification.", 1,     \
    ", %s given up")                                                                              \
  X(websub_pushes, "kria_websub_pushes_total", KR_UNIT_COUNT,                                     \
    "WebSub pushes accepted: their signature verified.", 1, ", %s pushes")                       \
  X(websub_rejected, "kria_websub_rejected_total", KR_UNIT_COUNT,                                 \
    "WebSub pushes ignored: signature missing or wrong.", 1, " (%s rejected)")                   \
  X(websub_pulled, "kria_websub_pulled_total", KR_UNIT_COUNT,                                     \
    "URIs a WebSub push made due now: its topic, and its items dated after their last visit.", 1, \
    ", %s pulled forward")                                                   \
  X(cluster_sent, "kria_cluster_links_sent_total", KR_UNIT_COUNT,                                 \
    "Links for other cluster members that Redis took (XADD confirmed; the outbox row deleted).", 2, \
    "cluster: %s links sent")                                                                     \
  X(cluster_received, "kria_cluster_links_received_total", KR_UNIT_COUNT,                         \
    "Links read from this member's Redis stream (again after a crash: each delivery counts).", 2, \
    ", %s received")                                                                              \
  X(cluster_duplicates, "kria_cluster_links_duplicate_total", KR_UNIT_COUNT,                      \
    "Links received that the frontier knew already (absorbed).", 2, " (%s known)")             \
  X(cluster_acked, "kria_cluster_links_acked_total", KR_UNIT_COUNT,                               \
    "Stream entries acknowledged (XACK) after their link was committed.", 2, ", %s acknowledged") \
  X(cluster_redis_lost, "kria_cluster_redis_lost_total", KR_UNIT_COUNT,                           \
    "Times the connection to Redis was lost.", 2, "; Redis lost %s times")                        \
  X(cluster_outbox_full, "kria_cluster_outbox_full_total", KR_UNIT_COUNT,                         \
    "Times the outbox reached cluster.outbox-max and dispatch was held.", 2, ", outbox full %s times") \
  X(xdedup_lookups, "kria_cluster_dedup_lookups_total", KR_UNIT_COUNT,                            \
    "Payloads the local index did not know, asked of Redis (cluster.shared-dedup: one GET each).", \
    2, "; shared dedup: %s asked")                                                                \
  X(xdedup_hits, "kria_cluster_dedup_hits_total", KR_UNIT_COUNT,                                  \
    "Payloads another member archived (Redis's answer, or one remembered from an earlier answer): " \
    "written as revisits of its record.", 2, ", %s known")                                       \
  X(xdedup_local_only, "kria_cluster_dedup_local_only_total", KR_UNIT_COUNT,                      \
    "Payloads checked against the local index alone: Redis away, or no answer within "            \
    "cluster.shared-dedup-wait.", 2, ", %s local only")                                           \
  X(xdedup_published, "kria_cluster_dedup_published_total", KR_UNIT_COUNT,                        \
    "Originals this member offered to Redis once committed (SET NX answered: the first writer "   \
    "of a payload wins).", 2, ", %s originals published")                                        \
  X(xdedup_unpublished, "kria_cluster_dedup_unpublished_total", KR_UNIT_COUNT,                    \
    "Originals not shared: Redis refused the write (maxmemory), or the bound of those waiting "  \
    "for Redis was reached.", 2, " (%s not)")

/* Each counter's index: KR_CTR_issued, ... KR_CTR__N. */
enum kr_crawl_counter {
#define KR_CTR_ENUM_(name, metric, unit, help, line, summary) KR_CTR_##name,
  KR_CRAWL_COUNTERS(KR_CTR_ENUM_)
#undef KR_CTR_ENUM_
  KR_CTR__N
};

/* One row of the table, for the renderers. */
typedef struct kr_counter_def {
  const char *name, *metric, *help, *summary;
  int unit, line;
} kr_counter_def_t;

/* The table's rows, in its order (counters.c). */
extern const kr_counter_def_t kr_counter_defs[KR_CTR__N];

/* Summary lines (the `line` column). */
#define KR_COUNTER_LINES 3
#define KR_COUNTER_LINE_CLUSTER 2 /* shown only with [cluster] */

struct kr_crawl_stats;
/* Summary line `line` (< KR_COUNTER_LINES) of st, no newline: every row
 * of that line, its words in table order. */
void kr_counters_summary(const struct kr_crawl_stats *st, int line, kr_buf_t *out);

struct kr_crawl;
/* Log the end-of-run summary of c (counters.c): the counter lines, the
 * validators of each host, fetches and the frontier. */
void kr__crawl_summary(struct kr_crawl *c);

#endif
