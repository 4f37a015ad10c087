/*
 * crawl.log: one line per finished URI in Heritrix 3's column format
 * (engine/.../io/UriProcessingFormatter.java), at
 * <state-dir>/logs/crawl.log:
 *
 *   2011-06-23T17:12:09.591Z   200      15829 http://x.org/a.html L http://x.org/ text/html #025 20110623171208546+922 sha1:7AJU... - -
 *
 * Checked against Heritrix 3's source (UriProcessingFormatter, CrawlURI,
 * FetchHTTP, FetchHistoryProcessor, ContentDigestHistoryLoader) and the
 * expectations of third-party parsers (test/unit/test_crawllog.c).
 *
 *   1 log time, ISO 8601 UTC with milliseconds
 *     ("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", ArchiveUtils.getLog17Date)
 *   2 fetch status, right-aligned in 5: HTTP status or a negative
 *     Heritrix code (KR_S_* below)
 *   3 size in bytes, right-aligned in 10, "-" when none. For HTTP Heritrix
 *     writes curi.getContentLength(): the bytes after the response head as
 *     recorded off the wire (transfer and content codings kept; 0 for a
 *     304, and for an aborted body, which it chops at its start); the
 *     crawl fills it so (proc_post.c), "-" without a response
 *   4 URI   5 hop path, letters L E R X P, "N+" and the last 50 beyond 50
 *     hops ("-" for a seed)   6 via URI ("-" for none)
 *   7 MIME type: the Content-Type cut at the first space ';' or ','
 *     ("no-type" when that leaves nothing; "unknown" without a response
 *     or without the header, .p NULL: Heritrix's default)
 *   8 "#NNN" (at least 3 digits): Heritrix's ToeThread number; kria's is
 *     the fetch slot that ran the fetch (the pooled fetch object, numbered
 *     from 0 as the pool grows and reused, so at most the most fetches
 *     ever in flight at once: below http.max-connections)
 *   9 fetch start (17 digits yyyyMMddHHmmssSSS, UTC) "+" duration in ms,
 *     "-" without fetch
 *  10 content digest ("sha1:" and 32 base-32 letters, the payload's) or
 *     "-"; for a 304 or an abort the crawl carries forward the digest of
 *     the URI's stored original, as the revisit record does (Heritrix
 *     writes the SHA-1 of the empty 304 body there)   11 source tag or "-"
 *  12 annotations joined by ',' or "-". The crawl puts Heritrix 3's
 *     revisit annotation first when there is one: "duplicate:digest"
 *     (FetchHistoryProcessor: the same payload as the URI's last capture;
 *     ContentDigestHistoryLoader: as another URI's) or
 *     "duplicate:server-not-modified" (a 304; kria's mid-fetch abort too),
 *     then kria's own ("notModified", "midFetchAbort", "unchanged",
 *     "wt:...", ...)
 * No 13th column: Heritrix's JSON "extra info" is written only with its
 * logExtraInfo option (off by default); parsers take it as optional.
 * Fields are separated by one space (padding only in 2 and 3, as
 * Heritrix pads). Bytes outside printable ASCII (0x21-0x7e) in any text
 * field are written %XX (and ',' inside an annotation), so no URL can
 * split or add a column or a line.
 *
 * The writer buffers lines in a fixed buffer and writes them with one
 * write(2) when the buffer would overflow, when flush_lines lines are
 * waiting, or when the loop calls kr_crawllog_tick() and the oldest
 * waiting line is flush_ms old; never one write per line. Reopening
 * (after the file was rotated away) is a call, or a flag a signal
 * handler may set, applied at the next tick/flush.
 */
#ifndef KRIA_CRAWLLOG_H
#define KRIA_CRAWLLOG_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/scope.h"

/* Heritrix's FetchStatusCodes, same numbers. */
enum kr_fetch_status {
  KR_S_UNATTEMPTED = 0,                  /* never tried */
  KR_S_DNS_SUCCESS = 1,                  /* a dns: lookup succeeded */
  KR_S_DOMAIN_UNRESOLVABLE = -1,         /* DNS lookup failed */
  KR_S_CONNECT_FAILED = -2,              /* connect (or TLS handshake) failed */
  KR_S_CONNECT_LOST = -3,                /* connection broken */
  KR_S_TIMEOUT = -4,                     /* timeout before a response */
  KR_S_RUNTIME_EXCEPTION = -5,           /* other failure */
  KR_S_DOMAIN_PREREQUISITE_FAILURE = -6, /* DNS prerequisite failed */
  KR_S_UNFETCHABLE_URI = -7,             /* unsupported or illegal URI */
  KR_S_TOO_MANY_RETRIES = -8,            /* retries exhausted */
  KR_S_DEFERRED = -50,
  KR_S_UNQUEUEABLE = -60,
  KR_S_ROBOTS_PREREQUISITE_FAILURE = -61, /* robots.txt could not be had */
  KR_S_OTHER_PREREQUISITE_FAILURE = -62,
  KR_S_PREREQUISITE_UNSCHEDULABLE_FAILURE = -63,
  KR_S_SERIOUS_ERROR = -3000,
  KR_S_DEEMED_CHAFF = -4000,             /* trap detection */
  KR_S_TOO_MANY_LINK_HOPS = -4001,
  KR_S_TOO_MANY_EMBED_HOPS = -4002,
  KR_S_OUT_OF_SCOPE = -5000,
  KR_S_BLOCKED_BY_USER = -5001,
  KR_S_BLOCKED_BY_CUSTOM_PROCESSOR = -5002,
  KR_S_BLOCKED_BY_QUOTA = -5003,
  KR_S_BLOCKED_BY_RUNTIME_LIMIT = -5004,
  /* kria's own, next in Heritrix's "blocked" family: every address of
   * the host is refused by the address policy ([http]
   * allow-private-addresses, allow-addresses, deny-addresses); nothing
   * was sent. Annotated "address-refused". */
  KR_S_BLOCKED_BY_ADDRESS_POLICY = -5005,
  KR_S_DELETED_BY_USER = -6000,
  KR_S_PROCESSING_THREAD_KILLED = -7000,
  KR_S_ROBOTS_PRECLUDED = -9998,         /* robots.txt disallows */
};

/* The Heritrix status for a fetch that failed with a KR_E* error before
 * any response: DNS -> -1; refused, unreachable, connect timeout, TLS ->
 * -2; reset, truncated, empty reply, other network error -> -3;
 * first-byte/idle/total timeout -> -4; bad URL or scheme -> -7; robots
 * -> -61; refused by the address policy -> -5005; anything else -> -5 (put kr_err_name() in an annotation). A
 * failure after the response headers keeps the HTTP status (Heritrix
 * annotates it, e.g. "timeTrunc", "lenTrunc"). 0 -> 0. */
int kr_crawllog_status_of_error(int err);
/* For a URI the scope rejected (re-checked before its fetch): hops ->
 * -4001, trans-hops -> -4002, trap and calendar -> -4000 (chaff), the rest
 * -5000. An accepted one gives 0. */
int kr_crawllog_status_of_scope(kr_scope_rule_t rule, int accepted);

typedef struct kr_crawllog_entry {
  uint64_t log_ms;        /* time of logging, epoch ms */
  int status;             /* HTTP status or KR_S_* */
  int64_t size;           /* body bytes as received; < 0 = "-" */
  kr_slice_t uri;
  kr_slice_t hops;        /* "" = "-" (a seed) */
  kr_slice_t via;         /* "" = "-" */
  kr_slice_t mime;        /* Content-Type as received; .p NULL = no
                             response or no header ("unknown") */
  unsigned worker;        /* "#%03u": the fetch slot that ran it */
  uint64_t fetch_ms;      /* fetch start, epoch ms; 0 = not fetched ("-") */
  uint64_t duration_ms;   /* fetch duration */
  kr_slice_t digest;      /* "sha1:..." or "" = "-" */
  kr_slice_t source;      /* source tag or "" = "-" */
  const kr_slice_t *annotations; /* empty ones are skipped */
  size_t n_annotations;
} kr_crawllog_entry_t;

/* Append e's line (with its '\n') to out. 0 or KR_ETOOBIG (out's max;
 * out keeps its old length). */
int kr_crawllog_format(const kr_crawllog_entry_t *e, kr_buf_t *out);

typedef struct kr_crawllog_opts {
  size_t buffer_size;   /* bytes buffered at most (default 64 KiB) */
  unsigned flush_lines; /* write after this many lines (default 1000) */
  uint64_t flush_ms;    /* tick writes lines this old (default 1000) */
} kr_crawllog_opts_t;

typedef struct kr_crawllog_stats {
  uint64_t lines;       /* lines accepted */
  uint64_t bytes;       /* bytes written to the file */
  uint64_t writes;      /* write(2) calls */
  uint64_t dropped;     /* lines lost to write errors or over-long lines */
  uint64_t reopens;
  int last_errno;       /* of the last failed open/write, else 0 */
} kr_crawllog_stats_t;

typedef struct kr_crawllog kr_crawllog_t;

void kr_crawllog_opts_init(kr_crawllog_opts_t *o);
/* Create <state_dir>/logs (mode 0755) if missing and open
 * <state_dir>/logs/crawl.log for appending (0644). 0 and *out, or
 * KR_EIO (errno kept). opts NULL = defaults. */
int kr_crawllog_open(const char *state_dir, const kr_crawllog_opts_t *opts,
                     kr_crawllog_t **out);
/* Buffer one line (writing the buffer first when it would overflow, and
 * after it when flush_lines are waiting). 0, KR_EIO (a write failed: the
 * lines it held are dropped and counted; later lines are kept trying),
 * KR_ETOOBIG (a line over 1 MiB, dropped). */
int kr_crawllog_write(kr_crawllog_t *log, const kr_crawllog_entry_t *e);
/* Called from the loop (e.g. every 100 ms-1 s): applies a requested
 * reopen, and writes the buffer when its oldest line is flush_ms old
 * (by log_ms). 0 or KR_EIO. */
int kr_crawllog_tick(kr_crawllog_t *log, uint64_t now_ms);
/* Write everything buffered now. 0 or KR_EIO. */
int kr_crawllog_flush(kr_crawllog_t *log);
/* Flush, then open the path again (after logrotate moved the file). On
 * failure the old file stays in use: KR_EIO. */
int kr_crawllog_reopen(kr_crawllog_t *log);
/* Async-signal-safe: ask for a reopen at the next tick or flush. */
void kr_crawllog_request_reopen(kr_crawllog_t *log);
void kr_crawllog_get_stats(const kr_crawllog_t *log, kr_crawllog_stats_t *st);
/* Path of the file ("<state_dir>/logs/crawl.log"). */
const char *kr_crawllog_path(const kr_crawllog_t *log);
/* Flush and close; returns the flush result. NULL is a no-op. */
int kr_crawllog_close(kr_crawllog_t *log);

/* ms in Heritrix's crawl.log duration form ("45s0ms", "1d2h0ms"; as in the
 * thesis' "wt:45s0ms,...,ov:3ms") into out (NUL-terminated, cut at cap);
 * the length written. */
size_t kr_crawllog_duration(char *out, size_t cap, int64_t ms);

#endif
