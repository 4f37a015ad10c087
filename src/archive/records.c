/*
 * The archive's records: what each visit leaves in the WARC files,
 * always before the store commits the visit, so a crash can repeat a
 * fetch but never lose one.
 *
 * Per visit with a response, in this order:
 *  - the content: a `response` record whose block is the HTTP response as
 *    received (the raw head, then the body bytes with their transfer
 *    coding, from the capture), WARC-Payload-Digest over the entity (the
 *    body with its transfer coding removed: WARC 1.1 section 5.9,
 *    iipc/warc-specifications#22), WARC-Truncated when the body was cut
 *    (length, time, disconnect); with warc.chunked = dechunk a chunked
 *    response's block is its rewritten head and the de-chunked body
 *    (capture.c), on which every reader finds that digest; or
 *    a `revisit`:
 *      identical-payload-digest  the payload digest equals that of the
 *        stored original of this URI, or, with adaptive.dedupe, of
 *        another URI's (store: the originals in the uris rows, which
 *        only ever name records that were written, by URI, date and
 *        record id), or, failing both, of the original in another
 *        archive the client names (a cluster member's, shared through
 *        Redis: x->far_*); the block is the response head;
 *      server-not-modified  the server said unchanged: a 304, with an
 *        empty block (as Heritrix 3 writes it: a 304 head in the block
 *        is what pywb and ReplayWeb.page would serve), or a mid-fetch
 *        abort (a 200 whose ETag / Last-Modified matched), with the 200's
 *        head as block; both carry the stored original's payload digest
 *        forward and the validators the server sent in WARC-Etag /
 *        WARC-Last-Modified; without a stored original the response is
 *        kept as a plain `response`;
 *    a visit the change digest (volatile sections stripped) found
 *    unchanged whose payload nevertheless differs is stored in full
 *    (warc.write-volatile = full) or not at all (skip);
 *  - a `request` record (the request as sent), WARC-Concurrent-To the
 *    first record;
 *  - a `metadata` record (its block made by the client: Heritrix style
 *    via (the page the URI was found on; a seed has none), hopsFromSeed,
 *    fetchTimeMs, outlinks, and the adaptive-revisit notes);
 *  - over a new TLS connection whose certificate was checked (tls-verify
 *    record or require), a second `metadata` record of the certificate
 *    facts (the client's warc-fields: version, cipher, resumed, the
 *    verification result, the server's certificates), whatever
 *    warc.write-metadata says: once a connection, with its first visit;
 *  - with warc.write-dns, before them a `response` record dns:HOST
 *    (text/dns) once per host and DNS TTL (kr_archive_dns).
 * All of a visit's records are in one file: a full file rotates before
 * a visit's first record, never between its records (kr_warcfile_hold),
 * so WARC-Concurrent-To always names a record of the same file, and a
 * file may pass warc.max-size by a request and a metadata record.
 * Every record of a visit has the visit's date as WARC-Date, which is
 * also the date the store keeps for an original, so a revisit's
 * WARC-Refers-To-Date names its original exactly; WARC-Refers-To names
 * its record id (kept with the original since schema 5; an original
 * without one is stored again in full rather than referred to vaguely).
 *
 * Large records never hold the loop: a response whose block was spilled
 * (or is 1 MiB or more in memory) is compressed and written in slices of
 * 256 KiB, at most ~8 ms of each loop turn (a uv_idle handle), into a
 * second WARC file of its own, opened at the first such record, named
 * and rotated like the first. Its visit waits (kr_archive_submit answers
 * ASYNC) until the record and then its request and metadata records are
 * in that file (the same one: one fetch, one file), so the store still
 * commits no visit before its records; the other visits' records go on
 * into the first file meanwhile. One such record at a time: a later
 * large one waits in a FIFO. A shutdown lets the record be finished
 * while running fetches may finish (the crawl's grace); when they are
 * cancelled (kr_archive_cancel), the record is cut away and its visit
 * given back; a crash leaves it to the start-up repair as ever. Records
 * of a dns lookup, revisits and small responses are written at once.
 *
 * Sections: the decision, records, slices and the queue, dns records.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_impl.h"
#include "internal.h"
#include "log.h"
#include "turnprof.h"

#define SLICE_BYTES (256u << 10) /* appended per step */
#define SLICE_NS 8000000ull      /* loop time one turn gives the writer */

/* ---- the decision -------------------------------------------------------------- */

enum rec_kind {
  K_NONE = 0,     /* nothing to store */
  K_RESPONSE,     /* the content */
  K_IDENTICAL,    /* revisit, identical-payload-digest */
  K_NOT_MODIFIED, /* revisit, server-not-modified: a 304, no block */
  K_MIDFETCH,     /* revisit, server-not-modified: a 200's head */
};

/* The stored original a revisit points at. */
struct orig {
  int found;
  uint8_t digest[KR_SHA1_LEN];
  uint64_t ofp, date;
  const char *url;              /* in a->ourl */
  size_t url_len;
  char rid[KR_WARC_ID_SIZE];    /* its WARC-Record-ID */
  int far;                      /* in another archive (the exchange's far_*) */
};

/* Note that the record rid holds the original of fp's payload d. (While
 * a commit waits for the sync of the records written before it, the
 * store keeps this row out of that commit: see kr_store_set_presync.) */
static void original_put(kr_archive_t *a, const kr_archive_exchange_t *x, uint64_t fp,
                         const uint8_t *d, uint64_t ofp, uint64_t date, const char *rid) {
  int src = kr_store_original_put(a->st, fp, d, KR_SHA1_LEN, ofp, date, rid);
  if (src < 0)
    KR_LOG(KR_LOG_WARN, x->url.p, "while noting the original: %s", kr_strerror(src));
}

/* Copy what a revisit needs of r; 0 when r cannot be referred to: its URI
 * is gone or it has no record id (a row from before schema 5). */
static int orig_take(kr_archive_t *a, const kr_original_t *r, struct orig *o) {
  if (!r->url || !r->rid || !r->rid_len || r->rid_len >= sizeof o->rid) return 0;
  kr_buf_reset(&a->ourl);
  if (kr_buf_append(&a->ourl, r->url, r->url_len)) return 0;
  o->url = a->ourl.data ? a->ourl.data : "";
  memcpy(o->rid, r->rid, r->rid_len);
  o->rid[r->rid_len] = '\0';
  o->ofp = r->ofp;
  o->date = r->date;
  o->url_len = r->url_len;
  o->found = 1;
  return 1;
}

static int orig_lookup(kr_archive_t *a, const kr_archive_exchange_t *x, struct orig *o) {
  memset(o, 0, sizeof *o);
  kr_original_t r;
  int rc = kr_store_original_get(a->st, x->fp, &r);
  if (rc < 0) return rc;
  if (rc == 0 || r.digest_len != KR_SHA1_LEN) return 0;
  memcpy(o->digest, r.digest, KR_SHA1_LEN);
  return orig_take(a, &r, o);
}

/* A response stored for another URI with payload digest d (URL-agnostic).
 * The originals, not the digest index, answer: they only ever name
 * records that were written. */
static int index_lookup(kr_archive_t *a, const kr_archive_exchange_t *x, const uint8_t *d,
                        struct orig *o) {
  memset(o, 0, sizeof *o);
  kr_original_t r;
  int rc = kr_store_original_find(a->st, d, KR_SHA1_LEN, &r);
  if (rc <= 0 || r.ofp == x->fp) return rc < 0 ? rc : 0;
  memcpy(o->digest, d, KR_SHA1_LEN);
  return orig_take(a, &r, o);
}

/* The exchange's original in another archive, for payload digest d. */
static int far_take(const kr_archive_exchange_t *x, const uint8_t *d, struct orig *o) {
  memset(o, 0, sizeof *o);
  if (!x->far_url.n || !x->far_rid || strlen(x->far_rid) >= sizeof o->rid || !x->far_date_ms)
    return 0;
  memcpy(o->digest, d, KR_SHA1_LEN);
  o->url = x->far_url.p;
  o->url_len = x->far_url.n;
  snprintf(o->rid, sizeof o->rid, "%s", x->far_rid);
  o->date = x->far_date_ms;
  o->found = o->far = 1;
  return 1;
}

/* The block digest of x's response record [head, k->mem], when the
 * client made it together with the payload's (kr_sha1_pair). */
static const uint8_t *block_digest(const kr_archive_exchange_t *x) {
  const struct kr_archive_cap *k = x->cap;
  int same = x->has_block_digest && k && k->fd < 0 && k->mem.len == x->block_body;
  return same ? x->block_digest : NULL;
}

/* What to write for x; *o is the original of a revisit. A store error
 * is logged and taken as "no original" (the content is then stored). */
static enum rec_kind decide(kr_archive_t *a, const kr_archive_exchange_t *x, struct orig *o) {
  memset(o, 0, sizeof *o);
  int rc;
  if (x->not_modified || x->midfetch) {
    rc = orig_lookup(a, x, o);
    if (rc < 0) KR_LOG(KR_LOG_WARN, x->url.p, "while reading the stored original: %s",
                       kr_strerror(rc));
    if (rc != 1) return K_RESPONSE;
    return x->not_modified ? K_NOT_MODIFIED : K_MIDFETCH;
  }
  const uint8_t *pd = x->payload_digest;
  if (x->has_payload_digest && x->complete) {
    rc = orig_lookup(a, x, o);
    if (rc == 1 && memcmp(o->digest, pd, KR_SHA1_LEN) == 0) return K_IDENTICAL;
    if (a->dedupe && index_lookup(a, x, pd, o) == 1) return K_IDENTICAL;
    if (a->dedupe && far_take(x, pd, o)) return K_IDENTICAL;
  }
  /* The change digest (volatile sections stripped) said unchanged, the
   * payload says otherwise. */
  if (x->visited && x->unchanged) {
    if (a->volatile_skip) {
      a->st_.volatile_skipped++;
      return K_NONE;
    }
    a->st_.volatile_full++;
  }
  return K_RESPONSE;
}

/* ---- records ------------------------------------------------------------------- */

/* Write one record; accounts for it. 0, KR_EINVAL (a bad record: logged,
 * skipped), KR_ENOSPC / KR_EIO (the caller gives the visit back). */
static int put(kr_archive_t *a, kr_slice_t url, kr_warc_rec_t *rec, const kr_slice_t *v,
               size_t n) {
  kr_warcfile_loc_t loc;
  int rc = kr_warcfile_write(a->tail ? a->wf2 : a->wf, rec, v, n, &loc);
  if (rc == 0) {
    a->st_.records++;
    a->st_.bytes += loc.w.bytes;
  } else if (rc == KR_EINVAL) {
    a->st_.write_errors++;
    KR_LOG(KR_LOG_WARN, url.p, "a %s record could not be made (bad field): skipped",
           kr_warc_type_name(rec->type));
  }
  return rc;
}

static int put_metadata(kr_archive_t *a, const kr_archive_exchange_t *x, const char *to) {
  kr_buf_t *b = &a->block;
  kr_buf_reset(b);
  if (!x->metadata || x->metadata(x->ud, b)) return 0;
  kr_warc_rec_t rec = {.type = KR_WARC_METADATA, .date_ms = x->date_ms, .target_uri = x->url,
                       .concurrent_to = to};
  kr_slice_t v = kr_slice(b->data ? b->data : "", b->len);
  int rc = put(a, x->url, &rec, &v, 1);
  if (rc == 0) a->st_.metadata++;
  return rc == KR_EINVAL ? 0 : rc;
}

/* The request and metadata records after the first record (id) of x. */
static int rest_records(kr_archive_t *a, const kr_archive_exchange_t *x, const char *id) {
  int rc;
  if (a->req && x->request.n) {
    kr_slice_t q = x->request;
    kr_warc_rec_t rq = {.type = KR_WARC_REQUEST, .date_ms = x->date_ms, .target_uri = x->url,
                        .concurrent_to = id};
    rc = put(a, x->url, &rq, &q, 1);
    if (rc && rc != KR_EINVAL) return rc;
    if (rc == 0) a->st_.requests++;
  }
  if (a->meta) {
    rc = put_metadata(a, x, id);
    if (rc) return rc;
  }
  if (x->tls_facts.n) {
    kr_warc_rec_t rt = {.type = KR_WARC_METADATA, .date_ms = x->date_ms, .target_uri = x->url,
                        .concurrent_to = id, .content_type = "application/warc-fields"};
    rc = put(a, x->url, &rt, &x->tls_facts, 1);
    if (rc && rc != KR_EINVAL) return rc;
    if (rc == 0) a->st_.metadata++;
  }
  return 0;
}

/* ... in the file that holds the first: a full file rotates before a
 * visit, never inside one, so WARC-Concurrent-To stays within a file. */
static int visit_rest(kr_archive_t *a, const kr_archive_exchange_t *x, const char *id) {
  kr_warcfile_t *wf = a->tail ? a->wf2 : a->wf;
  kr_warcfile_hold(wf, 1);
  int rc = rest_records(a, x, id);
  kr_warcfile_hold(wf, 0);
  return rc;
}

/* The response record rec of x is written: account for it, then the rest. */
static int response_done(kr_archive_t *a, const kr_archive_exchange_t *x,
                         const kr_warc_rec_t *rec) {
  a->st_.responses++;
  if (rec->truncated) a->st_.truncated++;
  /* This record is now the original of the URI's payload. */
  if (x->has_payload_digest && !rec->truncated) {
    original_put(a, x, x->fp, x->payload_digest, x->fp, x->date_ms, rec->id);
    if (x->original) x->original(x->ud, x->payload_digest, x->date_ms, rec->id);
  }
  return visit_rest(a, x, rec->id);
}

static int job_begin(kr_archive_t *a, const kr_archive_exchange_t *x, const kr_warc_rec_t *rec);

/* The response record of x (pdl: room for its payload digest's label). */
static int write_response(kr_archive_t *a, const kr_archive_exchange_t *x, kr_warc_rec_t *rec,
                          char pdl[KR_SHA1_LABEL_SIZE]) {
  struct kr_archive_cap *k = x->cap;
  rec->type = KR_WARC_RESPONSE;
  rec->truncated = k && k->over ? "length" : x->truncated;
  if (x->has_payload_digest) {
    kr_sha1_label(x->payload_digest, pdl);
    rec->payload = KR_WARC_PAYLOAD_DIGEST;
    rec->payload_digest = pdl;
  } else if (!x->chunked && (!k || k->fd < 0)) {
    rec->payload = KR_WARC_PAYLOAD_FROM;
    rec->payload_from = x->head.n;
  }
  if (k && k->failed) return KR_EIO; /* the body is gone: fetch it again */
  if (x->has_payload_digest) rec->block_sha1 = block_digest(x);
  if (k && (k->fd >= 0 || (k->mem.len >= SLICED_MIN && rec->payload != KR_WARC_PAYLOAD_FROM))) {
    int rc = job_begin(a, x, rec);
    return rc == 0 ? KR_ARCHIVE_ASYNC : rc == KR_EINVAL ? 0 : rc;
  }
  kr_slice_t v[2] = {x->head, k && k->mem.len ? kr_slice(k->mem.data, k->mem.len)
                                              : kr_slice("", 0)};
  int rc = put(a, x->url, rec, v, 2);
  if (rc == KR_EINVAL) return 0;
  if (rc) return rc;
  return response_done(a, x, rec);
}

/* A WARC header value: no control bytes, and short (a hostile server's
 * validator must not cost the record). */
static int field_ok(kr_slice_t v) {
  if (!v.n || v.n > 512) return 0;
  for (size_t i = 0; i < v.n; i++)
    if ((unsigned char)v.p[i] < 0x20 || v.p[i] == 0x7f) return 0;
  return 1;
}

/* The validators the server answered with, in Heritrix 3's fields for a
 * server-not-modified revisit (WARC-Etag, WARC-Last-Modified); the count. */
static size_t validators(const kr_archive_exchange_t *x, kr_warc_field_t v[2]) {
  size_t n = 0;
  if (field_ok(x->etag)) v[n++] = (kr_warc_field_t){"WARC-Etag", x->etag};
  if (field_ok(x->last_modified)) v[n++] = (kr_warc_field_t){"WARC-Last-Modified", x->last_modified};
  return n;
}

/* Every record of x. 0, KR_ARCHIVE_SKIPPED, KR_ARCHIVE_ASYNC when its
 * response record is being written in slices (a->job: the rest follows
 * once it is done); or KR_ENOSPC / KR_EIO: the visit must be given back. */
static int write_visit(kr_archive_t *a, const kr_archive_exchange_t *x) {
  struct orig o;
  enum rec_kind kind = decide(a, x, &o);
  if (kind == K_NONE) return KR_ARCHIVE_SKIPPED;
  kr_warc_rec_t rec = {.date_ms = x->date_ms, .target_uri = x->url, .ip = x->ip};
  char pdl[KR_SHA1_LABEL_SIZE];
  if (kind == K_RESPONSE) return write_response(a, x, &rec, pdl);
  rec.type = KR_WARC_REVISIT;
  rec.profile = kind == K_IDENTICAL ? KR_WARC_PROFILE_IDENTICAL : KR_WARC_PROFILE_NOT_MODIFIED;
  kr_sha1_label(o.digest, pdl);
  rec.payload = KR_WARC_PAYLOAD_DIGEST;
  rec.payload_digest = pdl;
  rec.refers_to = o.rid;
  rec.refers_to_uri = kr_slice(o.url, o.url_len);
  rec.refers_to_date_ms = o.date;
  kr_warc_field_t val[2];
  if (kind != K_IDENTICAL) {
    rec.extra = val;
    rec.nextra = validators(x, val);
  }
  /* A 304's head is not the block: replay would serve it (README). */
  kr_slice_t v = kind == K_NOT_MODIFIED ? kr_slice("", 0) : x->head;
  int rc = put(a, x->url, &rec, &v, 1);
  if (rc == KR_EINVAL) return 0;
  if (rc) return rc;
  if (x->wrote) {
    x->wrote->revisit = kind == K_IDENTICAL ? KR_ARCHIVE_IDENTICAL : KR_ARCHIVE_NOT_MODIFIED;
    x->wrote->far = o.far;
    memcpy(x->wrote->digest, o.digest, KR_SHA1_LEN);
  }
  if (kind == K_IDENTICAL) {
    a->st_.revisits_identical++;
    /* a payload found under another URI becomes this URI's original
     * (not one in another archive: the originals name this state's URIs) */
    if (!o.far && (o.ofp != x->fp || !x->visited))
      original_put(a, x, x->fp, o.digest, o.ofp, o.date, o.rid);
  } else if (kind == K_NOT_MODIFIED) {
    a->st_.revisits_not_modified++;
  } else {
    a->st_.revisits_midfetch++;
  }
  return visit_rest(a, x, rec.id);
}

/* ---- slices and the queue -------------------------------------------------------- */

/* A response block of a spilled body, or a large one in memory, is
 * written in slices across loop turns (kr__archive_on_slice) so that
 * compressing it never holds the loop for long. This begins the record:
 * the header and the raw head. 0 and a->job set, or an error (the record
 * is cut away). */
static int job_begin(kr_archive_t *a, const kr_archive_exchange_t *x, const kr_warc_rec_t *rec) {
  struct kr_archive_cap *k = x->cap;
  struct job *j = &a->job;
  kr_slice_t head = x->head;
  j->x = *x;
  j->rec = *rec;
  if (rec->payload_digest) {
    snprintf(j->pdl, sizeof j->pdl, "%s", rec->payload_digest);
    j->rec.payload_digest = j->pdl;
  }
  j->off = 0;
  if (rec->block_sha1) {
    memcpy(j->sha, rec->block_sha1, KR_SHA1_LEN);
  } else if (k->fd >= 0) {
    if (kr_sha1_final(&k->sha, j->sha)) return KR_EIO;
  } else if (!k->sha_ready || kr_sha1_reset(&k->sha) || kr_sha1_update(&k->sha, head.p, head.n) ||
             kr_sha1_update(&k->sha, k->mem.data, k->mem.len) || kr_sha1_final(&k->sha, j->sha)) {
    return KR_EIO;
  }
  j->rec.block_sha1 = j->sha;
  if (!a->wf2) {
    struct kr__archive_wopts w;
    char e[512] = "";
    kr__archive_wopts(a, &w);
    int rc = kr_warcfile_open(&w.o, &a->wf2, e, sizeof e);
    if (rc) {
      KR_LOG(KR_LOG_ERROR, a->dir, "a WARC file for large records: %s", e[0] ? e : kr_strerror(rc));
      return rc == KR_EINVAL ? KR_EIO : rc;
    }
    kr_warcsync_set_file(a->sync, 1, a->wf2);
  }
  int rc = kr_warcfile_begin(a->wf2, &j->rec, head.n + k->len);
  if (!rc) rc = kr_warcfile_append(a->wf2, head.p, head.n);
  if (rc) return rc;
  j->busy = 1;
  uv_idle_start(&a->idle, kr__archive_on_slice);
  return 0;
}

/* Append the next slice of the body: 0 more to come, 1 all appended, or
 * an error (the record was cut away). */
static int job_step(kr_archive_t *a) {
  struct job *j = &a->job;
  struct kr_archive_cap *k = j->x.cap;
  size_t want = k->len - j->off < SLICE_BYTES ? (size_t)(k->len - j->off) : SLICE_BYTES;
  const char *p = k->mem.data + j->off;
  if (k->fd >= 0) {
    if (!j->buf) j->buf = kr_xmalloc(SLICE_BYTES);
    ssize_t got = pread(k->fd, j->buf, want, (off_t)j->off);
    if (got < 0 && errno == EINTR) return 0;
    if (got <= 0) {
      KR_LOG(KR_LOG_ERROR, j->x.url.p, "reading back the spilled body: %s",
             got < 0 ? strerror(errno) : "short file");
      kr_warcfile_abort(a->wf2);
      return KR_EIO;
    }
    p = j->buf;
    want = (size_t)got;
  }
  int rc = want ? kr_warcfile_append(a->wf2, p, want) : 0;
  if (rc) return rc;
  j->off += want;
  return j->off == k->len;
}

static void queue_push(kr_archive_t *a, const kr_archive_exchange_t *x) {
  if (a->qn == a->qcap) {
    size_t ncap = a->qcap ? 2 * a->qcap : 16;
    kr_archive_exchange_t *nq = kr_xcalloc(ncap, sizeof *nq);
    for (size_t i = 0; i < a->qn; i++) nq[i] = a->q[(a->qhead + i) % a->qcap];
    free(a->q);
    a->q = nq;
    a->qcap = ncap;
    a->qhead = 0;
  }
  a->q[(a->qhead + a->qn++) % a->qcap] = *x;
  uv_idle_start(&a->idle, kr__archive_on_slice);
}

/* A failed visit is given back (counted, dispatch held). */
static void failed(kr_archive_t *a, int err) {
  a->st_.deferred++;
  kr__archive_hold(a, err);
}

/* The job's visit goes on. */
static void job_finish(kr_archive_t *a, int rc) {
  kr_archive_exchange_t x = a->job.x;
  a->job.busy = 0;
  if (rc == KR_EINVAL) rc = 0;
  if (rc) failed(a, rc);
  x.done(x.ud, rc);
}

/* Past the shutdown's patience: the record is cut away and the visit
 * given back (it is fetched again by the next run). */
static void job_abandon(kr_archive_t *a) {
  kr_archive_exchange_t x = a->job.x;
  KR_LOG(KR_LOG_NOTICE, x.url.p, "shutting down: a %" PRIu64 "-byte WARC record left "
         "unwritten (%" PRIu64 " written), the fetch is given back", x.cap->len, a->job.off);
  kr_warcfile_abort(a->wf2);
  a->job.busy = 0;
  a->st_.deferred++;
  x.done(x.ud, KR_ECANCELED);
}

/* The next slice of the job; once all are in, the rest of its visit. */
static void job_run(kr_archive_t *a) {
  if (a->cancel) {
    job_abandon(a);
    return;
  }
  int rc = job_step(a);
  if (rc == 0) return;
  if (rc == 1) {
    kr_warcfile_loc_t loc;
    rc = kr_warcfile_end(a->wf2, &loc);
    if (!rc) {
      a->st_.records++;
      a->st_.bytes += loc.w.bytes;
      a->tail = 1; /* the visit's request and metadata follow it */
      rc = response_done(a, &a->job.x, &a->job.rec);
      a->tail = 0;
    }
  }
  job_finish(a, rc);
  if (a->reopen) kr__archive_reopen(a);
}

/* Write what waits, for at most SLICE_NS of this loop turn: the next
 * slices of the job, then the visits queued behind it, in order. */
void kr__archive_on_slice(uv_idle_t *h) {
  kr_archive_t *a = container_of(h, kr_archive_t, idle);
  uint64_t t0 = uv_hrtime();
  KR_TP_ENTER(KR_TP_WARC);
  while (uv_hrtime() - t0 < SLICE_NS) {
    if (a->job.busy) {
      job_run(a);
      continue;
    }
    if (!a->qn || !a->wf) break;
    kr_archive_exchange_t x = a->q[a->qhead];
    a->qhead = (a->qhead + 1) % a->qcap;
    a->qn--;
    if (!x.ud) continue; /* forgotten */
    int rc = write_visit(a, &x);
    if (rc == KR_ARCHIVE_ASYNC) continue; /* it became the job */
    if (rc < 0) failed(a, rc);
    KR_TP_ENTER(KR_TP_RESUME);
    x.done(x.ud, rc);
    KR_TP_LEAVE();
  }
  KR_TP_LEAVE();
  if (!a->job.busy && (!a->qn || !a->wf)) uv_idle_stop(h);
}

int kr_archive_submit(kr_archive_t *a, const kr_archive_exchange_t *x) {
  if (!a->wf) return 0;
  struct kr_archive_cap *k = x->cap;
  /* A large body waits for the one being written; the rest go on. */
  if (k && (k->fd >= 0 || k->mem.len >= SLICED_MIN) && (a->job.busy || a->qn)) {
    queue_push(a, x);
    return KR_ARCHIVE_ASYNC;
  }
  KR_TP_ENTER(KR_TP_WARC);
  int rc = write_visit(a, x);
  KR_TP_LEAVE();
  if (rc < 0) failed(a, rc);
  return rc;
}

void kr_archive_forget(kr_archive_t *a, void *ud) {
  /* Never while it waits (its walk is suspended), but be sure. */
  if (a->job.busy && a->job.x.ud == ud) {
    kr_warcfile_abort(a->wf2);
    a->job.busy = 0;
  }
  for (size_t i = 0; i < a->qn; i++)
    if (a->q[(a->qhead + i) % a->qcap].ud == ud) a->q[(a->qhead + i) % a->qcap].ud = NULL;
}

/* ---- dns records ------------------------------------------------------------------- */

static uint64_t host_hash(kr_slice_t h) {
  uint64_t x = 1469598103934665603ull;
  for (size_t i = 0; i < h.n; i++) {
    unsigned char ch = (unsigned char)h.p[i];
    if (ch >= 'A' && ch <= 'Z') ch += 32;
    x = (x ^ ch) * 1099511628211ull;
  }
  return x ? x : 1;
}

int kr_archive_dns_wanted(const kr_archive_t *a) { return a && a->dns && a->wf; }

int kr_archive_dns_due(const kr_archive_t *a, kr_slice_t host, uint64_t now) {
  uint64_t hh = host_hash(host);
  const struct dns_slot *s = &a->dns_slots[hh & (DNS_SLOTS - 1)];
  return !(s->h == hh && s->until > now);
}

int kr_archive_dns(kr_archive_t *a, kr_slice_t host, const char *name, uint64_t now,
                   const char *const *addrs, size_t n, uint32_t ttl_s) {
  if (!a->wf) return 0;
  kr_buf_reset(&a->block);
  char uri[300];
  if (!name || !n || host.n >= 256 || kr_warc_dns_block(&a->block, now, name, addrs, n, ttl_s))
    return 0;
  snprintf(uri, sizeof uri, "dns:%s", name);
  kr_warc_rec_t rec = {.type = KR_WARC_RESPONSE, .date_ms = now,
                       .target_uri = kr_slice_cstr(uri), .content_type = "text/dns",
                       .payload = KR_WARC_PAYLOAD_FROM, .payload_from = 0};
  kr_slice_t v = kr_slice(a->block.data, a->block.len);
  int rc = put(a, kr_slice_cstr(uri), &rec, &v, 1);
  if (rc == 0) {
    a->st_.dns++;
    struct dns_slot *s = &a->dns_slots[host_hash(host) & (DNS_SLOTS - 1)];
    s->h = host_hash(host);
    s->until = now + (uint64_t)(ttl_s ? ttl_s : 60) * 1000;
    return 0;
  }
  if (rc == KR_EINVAL) return 0;
  failed(a, rc);
  return rc;
}
