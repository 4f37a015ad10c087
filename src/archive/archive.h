/*
 * The archive: the WARC writer of a crawl as a service beside the
 * frontier. It knows nothing of fetches or of the chain: its client (the
 * WARC processor, src/crawl/proc_warc.c) describes each visit as a plain
 * kr_archive_exchange_t and feeds the raw response bytes into a capture.
 *
 * What it does (archive.c: life cycle, full disk, reload, statistics;
 * capture.c: raw bytes in memory or spilled; records.c: the decision
 * between a response and a revisit, the records, large records written in
 * slices, dns records):
 *  - per visit a `response` (or a `revisit` referring to the stored
 *    original of the same payload), then `request` and `metadata`
 *    records, all with the visit's date; see records.c;
 *  - the originals index in the store (kr_store_original_*): the record
 *    that holds each URI's payload, and with adaptive.dedupe any URI's
 *    (URL-agnostic revisits);
 *  - files, rotation and durability (warcfile.h) synced right before each
 *    store COMMIT (kr_archive_presync, warcsync.h), so a visit the store
 *    commits always has its records on disk;
 *  - a failed write (full disk): the visit is given back, dispatch held
 *    through the host's pause hook, the free space checked every
 *    warc.retry-interval.
 */
#ifndef KRIA_ARCHIVE_H
#define KRIA_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "kria/buf.h"
#include "kria/config.h"
#include "kria/digest.h"
#include "kria/warc.h"
#include "store.h"
#include "timer.h"

typedef struct kr_archive kr_archive_t;
/* The raw body of one fetch, for its response record (capture.c). The
 * struct tag is the name kr_fetch_t's field uses. */
typedef struct kr_archive_cap kr_archive_cap_t;

/* What the writer did so far (kr_archive_stats). */
typedef struct kr_archive_stats {
  uint64_t records;             /* records written, all types */
  uint64_t bytes;               /* bytes written to WARC files */
  uint64_t responses;           /* response records (content stored) */
  uint64_t revisits_identical;  /* identical-payload-digest revisits */
  uint64_t revisits_not_modified; /* server-not-modified revisits of 304s */
  uint64_t revisits_midfetch;   /* ... of mid-fetch aborts */
  uint64_t requests, metadata, dns;
  uint64_t volatile_full;       /* unchanged by the change digest, payload
                                   differs: stored in full */
  uint64_t volatile_skipped;    /* ... not stored (write-volatile = skip) */
  uint64_t truncated;           /* records with WARC-Truncated */
  uint64_t spilled;             /* bodies kept in a temporary file */
  uint64_t deferred;            /* fetches given back: a write failed */
  uint64_t write_errors;        /* failed writes and syncs */
  uint64_t holds;               /* times dispatch was held (full disk) */
  uint64_t syncs;               /* batch syncs before store commits */
  uint64_t repaired_files;      /* ".open" files repaired at start-up */
  uint64_t files;               /* WARC files begun by this process */
  uint64_t reloads;             /* [warc] changes applied by SIGHUP */
  int held;                     /* dispatch held now */
  const char *current;          /* file being written (".open" name), NULL
                                   when none; valid until the next write */
  uint64_t current_size;        /* its size so far */
} kr_archive_stats_t;

/* What the service runs on, given by its owner (the crawl). */
typedef struct kr_archive_host {
  uv_loop_t *loop;              /* large records are written from an idle handle */
  kr_timers_t *timers;          /* the full-disk retry */
  kr_clock_t *clock;            /* dates, file names */
  kr_store_t *store;            /* originals, synced offsets */
  void *ud;                     /* for the hooks */
  /* Hold dispatch (a write failed): 1 when it was running and is now
   * held, 0 when it was held already (by someone else). */
  int (*pause)(void *ud);
  /* Let dispatch go on again (only after pause returned 1). */
  void (*resume)(void *ud);
  /* 1 while the owner closes: the retry stops. */
  int (*closing)(void *ud);
} kr_archive_host_t;

/* The revisit record kr_archive_submit wrote for a visit, if any: its
 * profile, and the original's payload digest it carries (crawl.log
 * annotates and logs the visit from this, as Heritrix does). */
typedef struct kr_archive_wrote {
  int revisit;                  /* 0: none (a response, or nothing) */
  int far;                      /* its original is the exchange's far one */
  uint8_t digest[KR_SHA1_LEN];  /* with revisit */
} kr_archive_wrote_t;
#define KR_ARCHIVE_IDENTICAL 1    /* identical-payload-digest */
#define KR_ARCHIVE_NOT_MODIFIED 2 /* server-not-modified: a 304 or a mid-fetch abort */

/* One visit's records, filled by the client. Slices and strings must stay
 * valid until the records are written: until kr_archive_submit returns,
 * or with KR_ARCHIVE_ASYNC until done is called (or kr_archive_forget).
 * The exchange itself is copied when kept. */
typedef struct kr_archive_exchange {
  kr_slice_t url;               /* WARC-Target-URI */
  uint64_t fp;                  /* its fingerprint: the originals' key */
  const char *ip;               /* WARC-IP-Address, NULL */
  uint64_t date_ms;             /* WARC-Date of every record of the visit */
  kr_slice_t head;              /* the response head as received */
  kr_archive_cap_t *cap;        /* the body (kr_archive_capture_begin), NULL */
  int not_modified;             /* a 304: revisit server-not-modified when
                                   the URI has an original, else a response */
  int midfetch;                 /* a 200 whose body was not read (its
                                   validators said unchanged): revisit
                                   server-not-modified when the URI has an
                                   original, else a response */
  kr_slice_t etag, last_modified; /* the response's validators, for such a
                                   revisit's WARC-Etag / WARC-Last-Modified;
                                   n 0: none */
  int complete;                 /* the payload arrived whole (bytes, not
                                   truncated, no error): may be an
                                   identical-payload revisit */
  int visited;                  /* the URI was visited before */
  int unchanged;                /* ... and the change digest says unchanged */
  int chunked;                  /* chunked transfer coding */
  const char *truncated;        /* WARC-Truncated, NULL ("length" is added
                                   when the capture was cut) */
  int has_payload_digest;
  uint8_t payload_digest[KR_SHA1_LEN];  /* SHA-1 of the entity */
  int has_block_digest;         /* SHA-1 of [head, the first block_body */
  uint8_t block_digest[KR_SHA1_LEN];    /* body bytes], made with the payload's */
  uint64_t block_body;
  kr_slice_t request;           /* the request as sent; none when empty */
  kr_slice_t tls_facts;         /* the TLS connection's certificate facts
                                   (warc-fields), once a connection: a
                                   metadata record of their own; none
                                   when empty */
  /* The metadata record's block, rendered into out (called at write
   * time, only with warc.write-metadata): 0, or nonzero to leave the
   * record out. */
  int (*metadata)(void *ud, kr_buf_t *out);
  /* A visit kr_archive_submit answered KR_ARCHIVE_ASYNC is dealt with: rc
   * as kr_archive_submit's (0, KR_ARCHIVE_SKIPPED, or an error: the visit
   * must be given back, fetched again). */
  void (*done)(void *ud, int rc);
  void *ud;
  /* An original in another archive (a cluster member's WARC files, named
   * through Redis), referred to when no original here holds the payload
   * (with adaptive.dedupe); far_url.n 0: none. Not kept as this URI's
   * original: the originals name only URIs of this state database. */
  kr_slice_t far_url;
  const char *far_rid;          /* its WARC-Record-ID */
  uint64_t far_date_ms;         /* its WARC-Date */
  /* A new original of payload digest d was written (a whole response
   * record, id rid, WARC-Date date_ms); NULL: not wanted. */
  void (*original)(void *ud, const uint8_t *d, uint64_t date_ms, const char *rid);
  kr_archive_wrote_t *wrote;    /* out (NULL: not wanted), set by
                                   kr_archive_submit once its revisit is
                                   written */
} kr_archive_exchange_t;

#define KR_ARCHIVE_ASYNC 1      /* kr_archive_submit: done follows */
#define KR_ARCHIVE_SKIPPED 2    /* ... nothing written (write-volatile = skip) */

/* Open the service: repair leftover ".open" files in the WARC directory
 * and open the writer. *out stays NULL with warc.enabled = false. 0, or
 * KR_ECONFIG / KR_EIO with a one-line reason in err; *out may then be set
 * all the same, to be detached and freed by the owner. cfg stays the
 * owner's and must live until kr_archive_reload replaces it. */
int kr_archive_open(const kr_config_t *cfg, const kr_archive_host_t *host, kr_archive_t **out,
                    char *err, size_t errlen);
/* At shutdown, every visit done, before the store's last commit: close
 * (sync, rename without ".open") the current files. */
void kr_archive_close(kr_archive_t *a);
/* When the owner is torn down without kr_archive_close (an error at start
 * or a fatal one): close the loop handle, cut away a record still being
 * written. kr_archive_close does this itself. */
void kr_archive_detach(kr_archive_t *a);
/* Shutdown past its grace: a record being written in slices is cut away
 * and its visit given back. */
void kr_archive_cancel(kr_archive_t *a);
/* Free everything; closes first if still open. NULL is a no-op. */
void kr_archive_free(kr_archive_t *a);
/* Right before each store COMMIT (kr_store_set_presync): durability batch
 * syncs the files, so every record of a committed visit is on disk; with
 * may_wait in the background (KR_STORE_PRESYNC_WAIT), else inline. 0 or
 * KR_STORE_PRESYNC_WAIT. */
int kr_archive_presync(kr_archive_t *a, int may_wait);

/* SIGHUP. 1 when [warc] key k is applied by kr_archive_reload; other
 * [warc] keys take a restart. */
int kr_archive_key_is_live(kr_cfg_key_t k);
/* Before a reload: 0, or KR_ECONFIG with why in err. */
int kr_archive_reload_check(const kr_config_t *n, char *err, size_t errlen);
/* The configuration became cfg (old is the previous one): apply the
 * changed [warc] keys, log what changed. File settings (prefix, compress,
 * level, max-size, durability, operator) close the current file and apply
 * from the next one; the others from the next record. */
void kr_archive_reload(kr_archive_t *a, const kr_config_t *cfg, const kr_config_t *old);
/* Counters; zero when a is NULL. */
void kr_archive_stats(const kr_archive_t *a, kr_archive_stats_t *out);

/* ---- for the client ---- */

/* 1 while records are written (open, not closed). */
int kr_archive_writing(const kr_archive_t *a);
/* A capture for a response whose head is head (valid until the capture
 * ends); url names it in log lines. body = 0: no body is expected, none
 * is recorded. */
kr_archive_cap_t *kr_archive_capture_begin(kr_archive_t *a, kr_slice_t head, const char *url,
                                           int body);
/* k is a chunked response's (Transfer-Encoding: chunked and nothing
 * else): with warc.chunked = dechunk its record is to hold the body
 * without the chunk framing. Then 1: k's head is rewritten (the
 * Transfer-Encoding and Content-Length fields renamed X-Orig-..., so that
 * the head and the body make a valid, close-delimited HTTP message; see
 * kr_archive_capture_head) and k must be fed the body with the transfer
 * coding removed instead of the raw body. 0: feed it the raw body. Call
 * before the first byte is fed. */
int kr_archive_capture_dechunk(kr_archive_t *a, kr_archive_cap_t *k);
/* The head k's record holds (the exchange's head): the head as received,
 * or as rewritten by kr_archive_capture_dechunk; valid while k is. */
kr_slice_t kr_archive_capture_head(const kr_archive_cap_t *k);
/* Raw body bytes as received (with their transfer coding), or, after
 * kr_archive_capture_dechunk answered 1, the de-chunked body's. */
void kr_archive_capture_feed(kr_archive_t *a, kr_archive_cap_t *k, const char *p, size_t n);
/* Are body bytes [from, to) in k's memory, or will the ones still to
 * come (from the end of what it holds) stay there? 1 and, with out, the
 * bytes held from from on; 0 when k spilled, failed or would spill. */
int kr_archive_capture_held(const kr_archive_t *a, const kr_archive_cap_t *k, uint64_t from,
                            uint64_t to, kr_slice_t *out);
/* The first call for k answers 1 (its visit is to be written now), every
 * later one 0; kr_archive_capture_claimed tells without claiming. */
int kr_archive_capture_claim(kr_archive_cap_t *k);
int kr_archive_capture_claimed(const kr_archive_cap_t *k);
/* The capture is done with (its visit written or given up). */
void kr_archive_capture_end(kr_archive_t *a, kr_archive_cap_t *k);

/* Write the records of one visit. 0 (written, or a bad record skipped),
 * KR_ARCHIVE_SKIPPED, KR_ARCHIVE_ASYNC (a large body: x->done follows),
 * or an error (KR_ENOSPC, KR_EIO): the visit must be given back; dispatch
 * is held until writing works again. */
int kr_archive_submit(kr_archive_t *a, const kr_archive_exchange_t *x);
/* The visit with this ud goes away: a record of it being written is cut
 * away, a queued one dropped; done is not called. */
void kr_archive_forget(kr_archive_t *a, void *ud);

/* 1 when warc.write-dns is on and records are written. */
int kr_archive_dns_wanted(const kr_archive_t *a);
/* 1 when host has no dns record still within its TTL at now. */
int kr_archive_dns_due(const kr_archive_t *a, kr_slice_t host, uint64_t now);
/* A dns:HOST response record (text/dns) of addrs, valid for ttl_s. 0 (also
 * when no record could be made), or an error: the visit must be given
 * back (as for kr_archive_submit). */
int kr_archive_dns(kr_archive_t *a, kr_slice_t host, const char *name, uint64_t now,
                   const char *const *addrs, size_t n, uint32_t ttl_s);

#endif
