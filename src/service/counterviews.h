/*
 * The crawl's counters (src/crawl/counters.h) as each surface shows them,
 * generated from the one table: the "crawl" object of /status, the lines
 * of /metrics (the summary lines are the crawl's: kr_counters_summary in
 * counters.h). Nothing here lists a counter by hand. The same for the
 * figures of the frontier, the store, the WARC writer and the HTTP client:
 * one table each. (DNS keeps no figures of its own that a surface shows.)
 */
#ifndef KRIA_COUNTERVIEWS_H
#define KRIA_COUNTERVIEWS_H

#include <stddef.h>

#include "archive.h"
#include "crawl.h"
#include "frontier.h"
#include "http.h"
#include "kria/buf.h"
#include "store.h"

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

/* ---- the store's, the WARC writer's and the HTTP client's figures ---------------------
 * One table per source, each row
 *   X(key, value, kind, metric, type, help)
 * key: the JSON member of its /status object, or NULL (not in /status);
 * value: an expression of s, the source's statistics (a pointer);
 * kind: how the value is shown (below);
 * metric, type, help: its Prometheus lines, or NULL, NULL, help (not in
 * /metrics; the help then only documents the row).
 * Names are the ones published before the tables existed: tests, the
 * console and users read them, so a row never changes its key or metric. */
enum {
  KR_FIG_NUM,  /* a number in both */
  KR_FIG_BOOL, /* JSON true/false, metric 0/1 */
  KR_FIG_USEC, /* microseconds: a number in JSON, seconds in the metric */
};

/* kr_store_stats_t: /status "store" (then the disk_* members, the crawl's)
 * and the kria_store_* metrics. */
#define KR_STORE_FIGURES(X)                                                                     \
  X("commits", s->commits, KR_FIG_NUM, "kria_store_commits_total", "counter",                   \
    "State database commits.")                                                                  \
  X("writes", s->writes, KR_FIG_NUM, NULL, NULL, "Writes in transactions.")                     \
  X("checkpoints", s->checkpoints, KR_FIG_NUM, NULL, NULL, "Completed checkpoint runs.")        \
  X("checkpoint_failures", s->checkpoint_failures, KR_FIG_NUM,                                  \
    "kria_store_checkpoint_failures_total", "counter",                                          \
    "Checkpoint passes that failed (retried 1 s doubling to 60 s apart).")                      \
  X("wal_frames", s->wal_frames, KR_FIG_NUM, "kria_store_wal_frames", "gauge",                   \
    "WAL frames after the last commit.")                                                        \
  X("wal_held", s->wal_held, KR_FIG_BOOL, "kria_store_wal_held", "gauge",                        \
    "1 while the WAL is past its cap and no new fetch starts.")                                 \
  X("wal_holds", s->wal_holds, KR_FIG_NUM, NULL, NULL, "Times the WAL passed its cap.")         \
  X("commit_us_max", s->commit_us_max, KR_FIG_USEC, "kria_store_commit_seconds_max", "gauge",   \
    "Slowest commit so far.")                                                                   \
  X(NULL, s->restarts, KR_FIG_NUM, "kria_store_wal_restarts_total", "counter",                  \
    "Times the WAL started over.")                                                              \
  X(NULL, s->drains, KR_FIG_NUM, "kria_store_drains_total", "counter",                          \
    "Drains (no transaction begins until a checkpoint has copied the WAL).")                    \
  X(NULL, s->drains_broken, KR_FIG_NUM, "kria_store_drains_broken_total", "counter",            \
    "Transactions begun during a drain (each costs that drain its WAL restart).")

/* kr_archive_stats_t: /status "warc" (then current_file) and the
 * kria_warc_* metrics (then the two with labels, kr_archive_figures_metrics). */
#define KR_ARCHIVE_FIGURES(X)                                                                   \
  X("records", s->records, KR_FIG_NUM, "kria_warc_records_total", "counter",                    \
    "WARC records written (all types).")                                                        \
  X("bytes", s->bytes, KR_FIG_NUM, "kria_warc_bytes_total", "counter",                          \
    "Bytes written to WARC files.")                                                             \
  X("files", s->files, KR_FIG_NUM, "kria_warc_files_total", "counter",                          \
    "WARC files begun by this process.")                                                        \
  X("current_file_bytes", s->current_size, KR_FIG_NUM, "kria_warc_current_file_bytes", "gauge",  \
    "Size of the WARC file being written.")                                                     \
  X("responses", s->responses, KR_FIG_NUM, "kria_warc_responses_total", "counter",              \
    "WARC response records (content stored).")                                                  \
  X("revisits", s->revisits_identical + s->revisits_not_modified + s->revisits_midfetch,       \
    KR_FIG_NUM, NULL, NULL, "Revisit records of both profiles.")                                \
  X("revisits_identical", s->revisits_identical, KR_FIG_NUM, NULL, NULL,                        \
    "Revisit records, profile identical-payload-digest.")                                       \
  X("revisits_not_modified", s->revisits_not_modified, KR_FIG_NUM, NULL, NULL,                  \
    "Revisit records, profile server-not-modified, of 304 answers.")                            \
  X("revisits_midfetch", s->revisits_midfetch, KR_FIG_NUM, NULL, NULL,                          \
    "Revisit records, profile server-not-modified, of mid-fetch aborts.")                       \
  X("requests", s->requests, KR_FIG_NUM, NULL, NULL, "Request records.")                        \
  X("metadata", s->metadata, KR_FIG_NUM, NULL, NULL, "Metadata records.")                       \
  X("dns", s->dns, KR_FIG_NUM, NULL, NULL, "DNS response records.")                             \
  X("truncated", s->truncated, KR_FIG_NUM, NULL, NULL, "Records with WARC-Truncated.")          \
  X("volatile_full", s->volatile_full, KR_FIG_NUM, NULL, NULL,                                  \
    "Unchanged by the change digest, payload differs: stored in full.")                         \
  X("volatile_skipped", s->volatile_skipped, KR_FIG_NUM, NULL, NULL,                            \
    "Unchanged by the change digest, payload differs: not stored (write-volatile = skip).")     \
  X("write_errors", s->write_errors, KR_FIG_NUM, "kria_warc_write_errors_total", "counter",     \
    "Failed WARC writes and syncs (full disk, I/O errors).")                                    \
  X("deferred", s->deferred, KR_FIG_NUM, NULL, NULL, "Fetches given back: a write failed.")     \
  X("held", s->held, KR_FIG_BOOL, "kria_warc_held", "gauge",                                     \
    "1 while WARC writing holds dispatch (full disk).")                                         \
  X("holds", s->holds, KR_FIG_NUM, NULL, NULL, "Times dispatch was held (full disk).")          \
  X("syncs", s->syncs, KR_FIG_NUM, NULL, NULL, "Batch syncs before store commits.")             \
  X("repaired_files", s->repaired_files, KR_FIG_NUM, NULL, NULL,                                \
    "\".open\" files repaired at start-up.")                                                    \
  X("reloads", s->reloads, KR_FIG_NUM, NULL, NULL, "[warc] changes applied by SIGHUP.")

/* kr_http_stats_t: the kria_http_* metrics (none in /status). */
#define KR_HTTP_FIGURES(X)                                                                      \
  X(NULL, s->conns_opened, KR_FIG_NUM, "kria_http_connections_opened_total", "counter",         \
    "TCP connections established.")                                                             \
  X(NULL, s->conns_reused, KR_FIG_NUM, "kria_http_connections_reused_total", "counter",         \
    "Fetches served by a pooled connection.")                                                   \
  X(NULL, s->pooled_idle, KR_FIG_NUM, "kria_http_connections_idle", "gauge",                    \
    "Idle keep-alive connections in the pool (http.idle-connections).")                         \
  X(NULL, s->reads_deferred, KR_FIG_NUM, "kria_http_reads_deferred_total", "counter",           \
    "Socket reads refused by a loop turn's read budget.")                                       \
  X(NULL, s->setups_running, KR_FIG_NUM, "kria_http_setups_running", "gauge",                   \
    "Connections being set up (TCP connect, TLS handshake) at a bounded address.")              \
  X(NULL, s->setups_waiting, KR_FIG_NUM, "kria_http_setups_waiting", "gauge",                   \
    "Fetches waiting for a setup slot at their server's address (http.setups-per-address).")   \
  X(NULL, s->setups_waited, KR_FIG_NUM, "kria_http_setups_waited_total", "counter",             \
    "Fetches that waited for a setup slot at their server's address.")                         \
  X(NULL, s->tls.handshakes - s->tls.resumed, KR_FIG_NUM, "kria_tls_handshakes_full_total", "counter", \
    "TLS handshakes completed in full (certificate and key exchange).")                         \
  X(NULL, s->tls.resumed, KR_FIG_NUM, "kria_tls_handshakes_resumed_total", "counter",           \
    "TLS handshakes that resumed a kept session (ticket or session ID).")                       \
  X(NULL, s->tls.offered, KR_FIG_NUM, "kria_tls_sessions_offered_total", "counter",             \
    "TLS handshakes begun offering a kept session (the server may decline it).")                \
  X(NULL, s->tls.sessions, KR_FIG_NUM, "kria_tls_sessions", "gauge",                            \
    "TLS sessions kept for resumption, one a host:port (http.tls-sessions).")                   \
  X(NULL, s->tls.session_bytes, KR_FIG_NUM, "kria_tls_session_bytes", "gauge",                  \
    "Bytes of the kept TLS sessions (encoded session and leaf certificate, entry).")            \
  X(NULL, s->tls.sessions_evicted, KR_FIG_NUM, "kria_tls_sessions_evicted_total", "counter",    \
    "Kept TLS sessions pushed out, least recently used first, by the bounds.")                  \
  X(NULL, s->tls.sessions_expired, KR_FIG_NUM, "kria_tls_sessions_expired_total", "counter",    \
    "Kept TLS sessions dropped at the lifetime their server gave.")

/* The JSON members of a table's keyed rows, comma-separated, no braces
 * (the caller's object goes on); returns how many were written. */
size_t kr_store_figures_json(const kr_store_stats_t *s, kr_buf_t *out);
size_t kr_archive_figures_json(const kr_archive_stats_t *s, kr_buf_t *out);
/* Every row with a metric (Prometheus text); the archive's then adds
 * kria_warc_revisits_total{profile} and kria_warc_current_file{file}. */
void kr_store_figures_metrics(const kr_store_stats_t *s, kr_buf_t *out);
void kr_archive_figures_metrics(const kr_archive_stats_t *s, kr_buf_t *out);
void kr_http_figures_metrics(const kr_http_stats_t *s, kr_buf_t *out);
#endif
