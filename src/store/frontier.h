/*
 * The frontier: every known URI lives in the store (SQLite), ordered per
 * host queue by (directive desc, next_at, fp); in memory there is one
 * small struct per host queue (thesis 6.2.1), the seen filter (dedupe of
 * discovered links without SQLite) and the URIs currently issued.
 *
 * Host queues. A host queue holds the URIs of one key: the host[:port]
 * (default), the registrable domain, or an IP address (queue_assign). Its
 * state is derived, never set: BUSY when all its valence slots are in use,
 * EMPTY when nothing is queued outside them, SNOOZED until its ready time,
 * READY after it. ready time = max(earliest free slot, head next_at,
 * back-off until); each slot's free time is set when its URI finishes, to
 * finish time + politeness delay, so with valence 2 the two slots keep
 * separate clocks exactly as thesis 6.2.1 describes.
 *
 * Dispatch. Each host that is neither busy nor empty has one entry in the
 * timer wheel (src/base/timer.h) at its ready time. When it fires the host joins
 * the back of the ready list, so hosts leave the list in the order they
 * became ready: the one ready longest goes first and none starves. The
 * crawl loop pulls with kr_frontier_next() while it has capacity; it is
 * told through on_ready when the ready list turns non-empty, and pulls
 * again after each kr_frontier_finished() (capacity came back), so it
 * never polls. kr_frontier_next() issues the top URI of the front host and
 * holds it aside in memory only: its row stays queued, so a crash puts it
 * back for free.
 *
 * Order within a host queue: directive desc, next_at asc, then the
 * fingerprint (as SQLite's signed integer): links found in the same
 * millisecond leave in an arbitrary but fixed order, not in discovery
 * order.
 *
 * Start-up (also after kill -9): every host queue is rebuilt from its
 * hosts row and one indexed query for its head; nothing else is replayed.
 * The seen filter is loaded from the fingerprints for at most
 * seen_open_budget_ms, then seen_turn_step more per kr_frontier_turn();
 * until it is complete a link the filter does not know goes to SQLite
 * (INSERT OR IGNORE), so dedupe is exact from the first moment.
 *
 * Transactions. Nothing commits by itself: kr_frontier_turn() (once per
 * loop turn, from a uv_check) commits every <= commit_ms or <=
 * commit_updates writes. A completion and its discovered links, given to
 * one kr_frontier_finished() call, are always in one transaction. While
 * the store drains its WAL (store.h), the writes are copied and held back
 * and applied in arrival order by the first kr_frontier_turn() after it;
 * nothing waits. A completion still takes effect in memory at once (its
 * slot frees after the politeness delay, the URI moves to its new place
 * in the queue, the counters count it), so hosts go on being crawled
 * through a drain; until its row is written, the frontier reads that
 * URI's scheduling from the held-back copy, never from the stale row. A
 * crash loses the held-back writes together (the URIs are fetched again),
 * and host rows are not written while some of their URIs' rows wait, so
 * the counters in the store always match its rows.
 *
 * Bounds (an endless crawl). A host queue takes at most max_uris_per_host
 * distinct URIs (its discovered count): past it a new link to that host
 * is refused and counted (counts.refused, persisted in its hosts row),
 * kept out of the seen filter so that a raised cap takes it the next time
 * it is seen; seeds and prerequisites are never refused. Retirement: a URI
 * answering 404 or 410 retire_after times in a row, or (retire_unlinked_ms)
 * one no page linked for that long, is retired on that visit: state
 * KR_URI_RETIRED, its row and history kept, next visit after
 * retired_wait_ms or never (counts.retired counts retirements). Seeds and
 * prerequisites are never retired for want of links. A retired URI that
 * answers anything but 404/410 again takes its normal wait; one retired
 * for want of links comes back, due at once, when a page links to it
 * again. Otherwise a link (a raise, a reschedule) does not pull a retired
 * URI forward; KR_LINK_REVIVE does. A link seen again writes the URI's last_linked at most once per
 * eighth of retire_unlinked_ms (a per-epoch filter in memory), and only
 * a parsed page shows its links: one answering 304 or cut short as
 * unchanged links nothing that visit.
 *
 * Callbacks: on_ready runs from the timer wheel (never from inside a
 * kr_frontier_* call) and may call kr_frontier_next(). on_host runs when a
 * host queue is created or loaded, and may only call
 * kr_frontier_host_set_opts() / kr_frontier_host_set_robots().
 */
#ifndef KRIA_FRONTIER_H
#define KRIA_FRONTIER_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "store.h"
#include "timer.h"

typedef struct kr_frontier kr_frontier_t;
typedef struct kr_hostq kr_hostq_t;
typedef struct kr_curi kr_curi_t;

/* Scheduling directive: queue order is directive desc, then next_at. A
 * directive above NORMAL orders a URI before every NORMAL URI of its host,
 * due or not, so it is only given to URIs due now: a link due later is
 * added as NORMAL, a raise also brings the URI's next_at forward to the
 * link's, and a finished URI returns to NORMAL — except a HIGHEST
 * (prerequisite) URI that is retried, which its gated host waits for. */
typedef enum kr_directive {
  KR_DIRECTIVE_NORMAL = 0,
  KR_DIRECTIVE_MEDIUM = 1,  /* embeds within preference-embed-hops */
  KR_DIRECTIVE_HIGH = 2,
  KR_DIRECTIVE_HIGHEST = 3, /* prerequisites */
} kr_directive_t;

typedef enum kr_queue_assign {
  KR_QUEUE_BY_HOST = 0,   /* host[:port] of the URL */
  KR_QUEUE_BY_DOMAIN = 1, /* registrable domain (libpsl); else the host */
  KR_QUEUE_BY_IP = 2,     /* ip_of(host); the host while it is unknown */
} kr_queue_assign_t;

typedef enum kr_hostq_state {
  KR_HOSTQ_EMPTY = 0,
  KR_HOSTQ_READY = 1,
  KR_HOSTQ_BUSY = 2,
  KR_HOSTQ_SNOOZED = 3,
} kr_hostq_state_t;

/* Options. Fields marked (host) are read from a host's own options when
 * kr_frontier_host_set_opts() gave it some, else from the frontier's. */
typedef struct kr_frontier_opts {
  /* politeness (host) */
  double delay_factor;                   /* 5: x last fetch duration */
  uint64_t min_delay_ms;                 /* 2000 */
  uint64_t max_delay_ms;                 /* 5000 */
  uint64_t respect_crawl_delay_up_to_ms; /* 300000: Crawl-delay cap */
  uint32_t host_valence;                 /* 1: slots per host, 1..64 */
  /* outcomes (host) */
  uint64_t retry_delay_ms;               /* 900000 */
  uint32_t max_retries;                  /* 30 */
  int revisit_failed;                    /* 1: failed URIs come back (failed_wait,
                                            or with their host's back-off) */
  uint64_t failed_wait_ms;               /* 1 d: a URI failed on its own */
  uint64_t default_wait_ms;              /* 3 d: success without a wait */
  /* back-off (host) */
  uint64_t backoff_initial_ms;           /* 60000: first 429/503 or host-failure snooze */
  uint64_t backoff_max_ms;               /* 3600000: growth (x2) and Retry-After cap */
  uint32_t host_failures_before_backoff; /* 3 consecutive host errors */
  /* bounds (host; see Bounds above) */
  uint64_t max_uris_per_host;            /* 100000 distinct URIs; 0 none */
  uint32_t retire_after;                 /* 3 answers 404/410 in a row retire a URI; 0 never */
  uint64_t retired_wait_ms;              /* 90 d: a retired URI's revisit; 0 never */
  /* crawl (global only) */
  int revisit;                           /* 1; 0: snapshot, successes never return */
  uint32_t preference_embed_hops;        /* 0 */
  uint32_t max_connections;              /* 4096 URIs in flight at most */
  kr_queue_assign_t queue_assign;        /* KR_QUEUE_BY_HOST */
  int revisit_now;                       /* 0; 1: every known URI due at open */
  /* IP assignment: write host's address into out; 0 or < 0 unknown. */
  int (*ip_of)(void *ud, const char *host, size_t len, char *out, size_t outlen);
  void *ip_ud;
  /* limits, 0 = none; counted from kr_frontier_open (this run) */
  uint64_t max_bytes_download;
  uint64_t max_document_download;        /* responses (any status, robots.txt too);
                                            exact: URIs in flight hold their place */
  uint64_t max_time_ms;
  uint64_t limits_period_ms;             /* 0; P: bytes and documents count per period of
                                            P (from the epoch, UTC) and a limit pauses
                                            issuing until the next one instead of ending */
  uint64_t retire_unlinked_ms;           /* 0 never; T: retire a URI no page linked for T
                                            (see Bounds) */
  /* store */
  uint32_t commit_ms;                    /* 50 */
  uint32_t commit_updates;               /* 1000 */
  uint32_t seen_open_budget_ms;          /* 500: fingerprints loaded at open */
  uint32_t seen_turn_step;               /* 50000: then per kr_frontier_turn */
  int quick_check;                       /* 2: PRAGMA quick_check in the background
                                            (1 at open, 0 never; store.h) */
  uint32_t cache_mib;                    /* 64: SQLite page cache */
  uint32_t wal_checkpoint_mib;           /* 256: background checkpoints past this WAL size */
  uint32_t wal_max_mib;                  /* 0 (3 x wal_checkpoint_mib): no new fetches past this */
  uint32_t page_size;                    /* 4096: SQLite page size of a new database */
  int plain_vfs;                         /* 0; 1: WAL writes not gathered (store.h) */
  uint32_t row_cache;                    /* 0; N: uris rows kept in memory (store.h) */
  uint64_t held_back_limit;              /* 0 (64 MiB): bytes of writes held back (a drain,
                                            a commit waiting for its presync step) past
                                            which they are written at once; past a
                                            quarter of it nothing new is issued */
  int orig_index;                        /* 0; 1/-1: build/drop the index of originals by
                                            digest (store.h) */
  /* a host queue was created or loaded (may be NULL); a loaded one's
   * learned-state record is readable during the call */
  void (*on_host)(void *ud, kr_frontier_t *f, kr_hostq_t *h);
  void *host_ud;
} kr_frontier_opts_t;

void kr_frontier_opts_default(kr_frontier_opts_t *o);

/* An issued URI: a copy of its row, owned by the frontier from
 * kr_frontier_next() until kr_frontier_finished() / kr_frontier_defer() /
 * kr_frontier_prereq_require(). Read-only for the caller but for `user`. */
struct kr_curi {
  uint64_t fp;
  const char *url;
  size_t url_len;
  kr_hostq_t *host;
  int directive;
  uint64_t next_at;          /* when it was due */
  uint64_t issued_at;
  uint64_t overdue_ms;       /* issued_at - next_at */
  int state;                 /* kr_uri_state_t before this visit */
  uint64_t wait_ms;          /* the wait decided at the previous visit */
  uint32_t visits, versions, retries;
  int status;                /* of the previous visit */
  const char *content_type;
  size_t content_type_len;
  const uint8_t *digest;
  size_t digest_len;
  const char *etag;
  size_t etag_len;
  int64_t last_modified;
  const char *hop_path;
  size_t hop_len;
  uint64_t via, first_seen, last_visit;
  uint32_t gone;             /* 404/410 answers in a row before this visit */
  uint64_t last_linked;      /* a page linked to it then (0: first_seen) */
  const uint8_t *history;    /* kr_vhist encoding (estimate.h) */
  size_t history_len;
  double hint_rate;          /* sitemap changefreq (changes/s), 0 none */
  void *user;                /* the crawl loop's */
  /* private */
  kr_curi_t *next_inflight;
  uint32_t slot;
};

/* A URL to add (a seed, a discovered link, a prerequisite). */
#define KR_LINK_RESCHEDULE 0x1u /* known URI: take the earlier next_at */
#define KR_LINK_REVIVE 0x2u     /* also requeue a disregarded/failed URI */
#define KR_URL_MAX 8192         /* longer URLs are refused (KR_ETOOBIG) */
#define KR_HOP_PATH_MAX 64      /* longer hop paths keep their last 64 hops */

typedef struct kr_link {
  const char *url;           /* canonical absolute URL */
  size_t url_len;
  const char *hop_path;      /* its whole hop path ("" or NULL: seed) */
  size_t hop_len;
  uint64_t via;              /* fp of the referrer, 0 none */
  int directive;             /* at least this */
  uint64_t next_at;          /* 0: now */
  unsigned flags;            /* KR_LINK_* */
  double hint_rate;          /* sitemap changefreq (changes/s) of a new row, 0 none */
} kr_link_t;

/* How a fetch ended, for kr_frontier_finished(). Zero is a valid start:
 * SUCCESS, default wait, NORMAL directive, no change known. */
typedef enum kr_outcome_kind {
  KR_OUTCOME_SUCCESS = 0,     /* any HTTP status: visited, revisited later */
  KR_OUTCOME_RETRY = 1,       /* transient: again after retry-delay */
  KR_OUTCOME_DISREGARDED = 2, /* robots: never again */
  KR_OUTCOME_FAILED = 3,      /* failed-wait or never (revisit-failed) */
  KR_OUTCOME_BACKOFF = 4,     /* 429/503: host back-off, not a visit */
} kr_outcome_kind_t;

typedef struct kr_outcome {
  kr_outcome_kind_t kind;
  int status;               /* HTTP status, or a negative KR_E* */
  uint64_t fetch_ms;        /* duration: politeness = factor x this */
  uint64_t bytes;           /* downloaded (statistics, limits) */
  int no_contact;           /* nothing reached the host: no politeness delay */
  int host_error;           /* the host failed (connect, DNS, TLS): counts
                               toward its back-off */
  int with_host;            /* failed because its host did (robots.txt
                               unavailable): FAILED comes back with the
                               host's back-off, as host_error does, without
                               counting towards it */
  uint64_t wait_ms;         /* SUCCESS: until the next visit; 0 default */
  int content;              /* SUCCESS: 0 unchanged, 1 changed, 2 unknown */
  uint64_t retry_after_ms;  /* BACKOFF: Retry-After, 0 when absent; RETRY:
                               when given, the retry comes after this long
                               instead of retry-delay (at most backoff-max) */
  /* SUCCESS: new validators; NULL keeps the previous value */
  const char *content_type;
  size_t content_type_len;
  const uint8_t *digest;
  size_t digest_len;
  const char *etag;
  size_t etag_len;
  int64_t last_modified;    /* 0 keeps the previous value */
  /* SUCCESS: the visit history with this visit appended (kr_vhist, the
   * wait policy built it); NULL: the frontier appends the visit itself
   * (interval since last_visit, `content`, age unknown) */
  const uint8_t *history;
  size_t history_len;
} kr_outcome_t;

/* ---- life cycle -------------------------------------------------------- */

/* Open the store in state_dir (see kr_store_open for refusals), rebuild
 * every host queue from it (one indexed query per host) and arm them on
 * timers (whose clock is the frontier's time). opts may be NULL. Returns
 * 0, or KR_EDB/KR_EINVAL with a reason in err. */
int kr_frontier_open(const char *state_dir, const kr_frontier_opts_t *opts,
                     kr_timers_t *timers, kr_frontier_t **out, char *err,
                     size_t errlen);
/* Commit, free everything; URIs still issued are simply not recorded as
 * done (they are queued in the store). Returns the commit's result. */
int kr_frontier_close(kr_frontier_t *f);
/* Free everything WITHOUT committing: a crash, for recovery tests. */
void kr_frontier_abandon(kr_frontier_t *f);

typedef void (*kr_frontier_ready_fn)(kr_frontier_t *f, void *ud);
void kr_frontier_set_on_ready(kr_frontier_t *f, kr_frontier_ready_fn fn, void *ud);

/* Once per loop turn (uv_check): commit when due, load more of the seen
 * filter. 0, or KR_EDB when a commit failed (stop the crawl). */
int kr_frontier_turn(kr_frontier_t *f, uint64_t now);
/* Commit now. 0 or KR_EDB. */
int kr_frontier_commit(kr_frontier_t *f);
/* Load the rest of the seen filter now (tests, tools). 0 or KR_EDB. */
int kr_frontier_load_seen(kr_frontier_t *f);

/* ---- adding ------------------------------------------------------------ */

/* Add one URL. A URL already known changes only when the link asks for
 * more: a higher directive (raised, next_at moved earlier if it is), or
 * KR_LINK_RESCHEDULE / KR_LINK_REVIVE; next_at never moves later. Returns
 * 1 new, 0 known, KR_FRONTIER_HELD (the store holds writes back: applied
 * later, new or known then), KR_EURL (no scheme://host), KR_ETOOBIG (over
 * KR_URL_MAX), KR_EDB. */
#define KR_FRONTIER_HELD 2
int kr_frontier_add(kr_frontier_t *f, const kr_link_t *link, uint64_t now);
/* Add n links; known ones are rejected by the seen filter in memory.
 * Bad links are skipped (counted in stats.rejected); *added (may be NULL)
 * gets the number of new URIs. 0 or KR_EDB. While the store drains, links
 * are held back (*added 0, kr_frontier_add returns KR_FRONTIER_HELD) and
 * applied later. */
int kr_frontier_add_batch(kr_frontier_t *f, const kr_link_t *links, size_t n,
                          uint64_t now, size_t *added);

/* ---- issuing and completing -------------------------------------------- */

/* Issue the top URI of the host ready longest. 1 and *out, 0 when nothing
 * may be issued now (nothing ready, max_connections reached, a limit
 * reached or, for max_document_download, filled by the URIs in flight,
 * 16 MiB of writes held back by a store drain), KR_EDB. */
int kr_frontier_next(kr_frontier_t *f, uint64_t now, kr_curi_t **out);
/* Of the URIs in flight, n hold no connection yet: they wait for a
 * connection setup slot at their server's address (the HTTP client's
 * setups-per-address). Up to max_connections of them do not count
 * against max_connections, so a queue at one address does not keep
 * other hosts waiting. The crawl keeps it current. */
void kr_frontier_set_waiting(kr_frontier_t *f, uint64_t n);

/* Complete an issued URI: update its row by outcome, add its discovered
 * links (same transaction), free its slot until now + politeness delay,
 * re-arm its host; curi is freed. 0 or KR_EDB (curi is freed anyway). */
int kr_frontier_finished(kr_frontier_t *f, kr_curi_t *curi, const kr_outcome_t *o,
                         const kr_link_t *links, size_t nlinks, uint64_t now);

/* Give an issued URI back untouched (no visit, no politeness delay). */
void kr_frontier_defer(kr_frontier_t *f, kr_curi_t *curi, uint64_t now);

/* Prerequisites. The crawl loop decides what a URI needs (robots.txt
 * missing or expired, ...). prereq_require gives curi back untouched,
 * adds url at HIGHEST (hop 'P', revived and due now) and gates the host:
 * until kr_frontier_prereq_done() it issues only HIGHEST URIs. 0 or an
 * error of kr_frontier_add (the host is gated either way). */
int kr_frontier_prereq_require(kr_frontier_t *f, kr_curi_t *curi, const char *url,
                               size_t len, uint64_t now);
void kr_frontier_prereq_done(kr_frontier_t *f, kr_hostq_t *h, uint64_t now);

/* The per-host fields of o (politeness, outcomes, back-off, bounds) from
 * a config view; the crawl and kria simulate read them alike (crawl.c). */
struct kr_config_view;
void kr_frontier_opts_from_view(kr_frontier_opts_t *o, const struct kr_config_view *v);

/* ---- hosts ---------------------------------------------------------------- */

kr_hostq_t *kr_frontier_host_lookup(kr_frontier_t *f, const char *key, size_t len);
/* Queue assignment by IP: url (any URL of h's host) may map to another
 * queue now that ip_of knows its address; move h's queued URIs there, so
 * virtual hosts on one address share one queue and one politeness clock.
 * Nothing moves while h has URIs in flight or waits for a prerequisite
 * (call again when they finish). While the store holds writes back the
 * move waits too, and h issues nothing until kr_frontier_next() has made
 * it. The number moved, 0, or KR_EDB / an error of kr_frontier_add. */
int kr_frontier_host_rekey(kr_frontier_t *f, kr_hostq_t *h, const char *url, size_t len,
                           uint64_t now);
const char *kr_frontier_host_name(const kr_hostq_t *h);
/* Options for this host (fields marked (host)); NULL: the frontier's. The
 * pointer must stay valid while set. */
void kr_frontier_host_set_opts(kr_frontier_t *f, kr_hostq_t *h,
                               const kr_frontier_opts_t *o, uint64_t now);
/* Persisted robots state: expiry (epoch ms), status of the last fetch,
 * Crawl-delay (ms, -1 none) which raises the politeness delay. */
void kr_frontier_host_set_robots(kr_frontier_t *f, kr_hostq_t *h, uint64_t expires,
                                 int status, int64_t crawl_delay_ms, uint64_t now);

/* Validator trust of host h (persisted in its hosts row). */
const kr_vtrust_t *kr_frontier_host_vtrust(const kr_hostq_t *h);
/* Replace it; the row is written with the next commit. */
void kr_frontier_host_set_vtrust(kr_frontier_t *f, kr_hostq_t *h, const kr_vtrust_t *vt);
/* The learned-state record of host h (kria/hoststate.h; its bytes are
 * the crawl's business, opaque here) as its row held it: readable while
 * on_host runs for h at open, dropped from memory then (the crawl keeps
 * what it decoded). NULL and *len 0 when there is none. */
const uint8_t *kr_frontier_host_learned(const kr_hostq_t *h, size_t *len);
/* Keep len bytes of p (copied; at most KR_HOSTSTATE_BYTES) as h's
 * learned-state record: written into its row with the next commit, then
 * dropped from memory. The caller decides how often (a write per host
 * every few seconds at most, hoststate.h). */
void kr_frontier_host_set_learned(kr_frontier_t *f, kr_hostq_t *h, const uint8_t *p,
                                  size_t len);
/* The politeness delay after a fetch of fetch_ms from h (its options,
 * robots Crawl-delay): what one valence slot waits between fetches. */
uint64_t kr_frontier_host_delay(kr_frontier_t *f, const kr_hostq_t *h, uint64_t fetch_ms);

typedef struct kr_host_report {
  const char *name;
  kr_hostq_state_t state;
  uint64_t ready_at;        /* KR_NEVER when busy, empty or gated */
  uint64_t queued;          /* next_at < NEVER, in flight included */
  uint32_t in_flight, valence;
  int has_head;
  int head_directive;
  uint64_t head_next_at;
  uint64_t overdue_ms;      /* now - head next_at when due, else 0 */
  int gated;                /* waiting for a prerequisite */
  uint32_t backoff_level, fail_streak;
  uint64_t backoff_until;
  uint64_t robots_expires;
  int robots_status;
  int64_t crawl_delay_ms;
  kr_counts_t c;
  kr_vtrust_t vt;           /* validator trust */
} kr_host_report_t;

void kr_frontier_host_report(kr_frontier_t *f, const kr_hostq_t *h, uint64_t now,
                             kr_host_report_t *out);
/* Iterate host queues: *iter starts at 0. 1 while one was written. */
int kr_frontier_report_next(kr_frontier_t *f, size_t *iter, uint64_t now,
                            kr_host_report_t *out);
/* A text report: totals, then up to max_hosts host lines (most overdue
 * first). 0 or KR_ETOOBIG when out's maximum cut it. */
int kr_frontier_report_text(kr_frontier_t *f, uint64_t now, size_t max_hosts,
                            kr_buf_t *out);

/* ---- state, statistics ---------------------------------------------------- */

typedef enum kr_frontier_status {
  KR_FRONTIER_RUNNING = 0,
  KR_FRONTIER_DONE = 1,  /* snapshot: nothing queued, nothing in flight */
  KR_FRONTIER_LIMIT = 2, /* a limit was reached: nothing more is issued */
} kr_frontier_status_t;

kr_frontier_status_t kr_frontier_status(kr_frontier_t *f, uint64_t now);

typedef struct kr_frontier_stats {
  kr_counts_t c;            /* totals over all hosts (persisted) */
  uint64_t in_flight;
  uint64_t hosts;
  uint64_t ready_hosts;     /* on the ready list */
  uint64_t duplicates;      /* links rejected in memory */
  uint64_t rejected;        /* bad links */
  uint64_t run_bytes;       /* since open (or the period's start), for the limits */
  uint64_t run_documents;   /* responses since then (max_document_download) */
  uint64_t seen;            /* fingerprints in the seen filter */
  uint64_t seen_bytes;      /* its heap bytes */
  int seen_complete;        /* the filter holds every row's fp */
  const char *limit;        /* which limit was reached, or NULL */
  uint64_t limit_until;     /* limits_period_ms: issuing resumes then (0: none) */
  uint64_t held_back;       /* writes waiting for a store drain to end */
  uint64_t held_back_max;
  uint64_t held_back_total;
  uint64_t held_back_bytes;
  uint64_t drains_cut;      /* drains ended early: too much held back */
} kr_frontier_stats_t;

void kr_frontier_stats(kr_frontier_t *f, kr_frontier_stats_t *out);
kr_store_t *kr_frontier_store(kr_frontier_t *f);

/* Check every invariant against the store: per host the head equals the
 * top of its index outside the URIs in flight, queued counts, slots,
 * state, wheel and ready list membership; totals. 0 or KR_EINVAL (the
 * first difference is logged). O(hosts) queries: for tests. */
int kr_frontier_validate(kr_frontier_t *f, uint64_t now);

/* ---- helpers ---------------------------------------------------------------- */

/* Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date (IMF-fixdate,
 * RFC 850, asctime). *delay_ms = ms from now (0 for a past date). 0, or
 * KR_EINVAL for anything else. */
int kr_frontier_parse_retry_after(const char *s, size_t len, uint64_t now_ms,
                                  uint64_t *delay_ms);

/* The queue key of url under the frontier's assignment, into out.
 * 0, KR_EURL, KR_ETOOBIG. */
int kr_frontier_queue_key(kr_frontier_t *f, const char *url, size_t len,
                          char *out, size_t outlen);

#endif
