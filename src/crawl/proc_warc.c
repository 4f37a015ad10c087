/*
 * The WARC writer of a crawl: what each visit leaves in the WARC files
 * (src/archive/warcfile.h does files, rotation and durability; kria/warc.h the
 * records), always before the store commits the visit, so a crash can
 * repeat a fetch but never lose one.
 *
 * Per visit with a response, in this order:
 *  - the content: a `response` record whose block is the HTTP response as
 *    received (the raw head, then the body bytes with their transfer
 *    coding, from the client's on_raw stream), WARC-Payload-Digest over
 *    the entity (proc_digest.c's payload SHA-1), WARC-Truncated when the
 *    body was cut (length, time, disconnect); or a `revisit` with the
 *    response head only:
 *      identical-payload-digest  the payload digest equals that of the
 *        stored original of this URI, or, with adaptive.dedupe, of
 *        another URI's (store: the originals in the uris rows, which
 *        only ever name records that were written, by URI, date and
 *        record id);
 *      server-not-modified  a 304, or a mid-fetch abort (the validators
 *        said unchanged): the stored original's payload digest is carried
 *        forward; without a stored original the 304 is kept as a plain
 *        response;
 *    a visit the change processor found unchanged (stripped change
 *    digest) whose payload nevertheless differs is stored in full
 *    (warc.write-volatile = full) or not at all (skip);
 *  - a `request` record (the request as sent), WARC-Concurrent-To the
 *    first record;
 *  - a `metadata` record (Heritrix style: hopsFromSeed, fetchTimeMs,
 *    outlinks, and the adaptive-revisit notes: content state, visits,
 *    versions, change digest, crawl.log annotations);
 *  - with warc.write-dns, before them a `response` record dns:HOST
 *    (text/dns) once per host and DNS TTL.
 * Every record of a visit has the fetch's start as WARC-Date, which is
 * also the date the store keeps for an original, so a revisit's
 * WARC-Refers-To-Date names its original exactly; WARC-Refers-To names
 * its record id (kept with the original since schema 5; an original
 * without one is stored again in full rather than referred to vaguely).
 *
 * Memory: body bytes are kept in memory up to 4 MiB per fetch (and 256
 * MiB across fetches), then spilled to an unlinked temporary file in the
 * WARC directory and streamed from there into the record; recording stops
 * (WARC-Truncated: length) past twice http.max-body-bytes, the most chunk
 * framing could add.
 *
 * Large records never hold the loop: a response whose block was spilled
 * (or is 1 MiB or more in memory) is compressed and written in slices of
 * 256 KiB, at most ~8 ms of each loop turn (a uv_idle handle), into a
 * second WARC file of its own, opened at the first such record, named
 * and rotated like the first. Its visit waits (the processor returns
 * ASYNC) until the record and then its request and metadata records are
 * in that file, so the store still commits no visit before its records;
 * the other visits' records go on into the first file meanwhile. One
 * such record at a time: a later large one waits in a FIFO. A shutdown
 * lets the record be finished while running fetches may finish (the
 * crawl's grace); when they are cancelled, the record is cut away and its
 * fetch given back; a crash leaves it to the start-up repair as ever.
 * A reload's file settings close the second file after its record.
 * Records of a dns lookup, revisits and small responses are written at
 * once.
 *
 * Where: the "warc" processor of the write phase; a fetch whose walk
 * jumped to the post phase after an error that still left a response
 * (a body cut by a timeout or a reset) is written by "warc-late", the
 * first post processor. Both run before "finish" hands the visit to the
 * frontier. Durability batch syncs the files from the store's presync
 * hook, right before each COMMIT, in libuv's thread pool while the
 * commit waits (warcsync.h); meanwhile the frontier holds the visits
 * back and the store the originals rows of records written after the
 * sync began.
 *
 * Full disk (or any write error): the partial record is cut away by
 * warcfile, the fetch is given back untouched (it is fetched again
 * later), dispatch is held (kr_crawl_pause) with one clear error line,
 * and every warc.retry-interval the free space of the directory is
 * checked; with 4 MiB (or an eighth of a smaller file system) free the
 * crawl resumes; should the disk still be full, the next write holds it
 * again. What was committed stays.
 *
 * Sections: captures (raw bytes), the decision, records, the processors,
 * full disk, life cycle.
 */
#include "proc_warc.h"
#include "procs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "kria/version.h"
#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "warcfile.h"
#include "warcsync.h"
#include "turnprof.h"

#define CAP_MEM_MAX (4u << 20)   /* raw body kept in memory per fetch */
#define MEM_BUDGET (256u << 20)  /* ... and across fetches */
#define POOL_KEEP (64u << 10)    /* pooled captures keep smaller buffers */
#define POOL_MAX 1024            /* captures kept for reuse */
#define SPILL_CHUNK (64u << 10)  /* read back from the spill file in these */
#define RESUME_FREE (4u << 20)   /* free bytes in the WARC directory to resume, */
#define RESUME_SHARE 8           /* ... or this share of a smaller file system */
#define DNS_SLOTS 4096           /* power of two: hosts with a dns record */
#define BLOCK_MAX (32u << 20)    /* metadata and dns blocks */
#define SLICED_MIN (1u << 20)    /* response blocks this big are written in slices */
#define SLICE_BYTES (256u << 10) /* appended per step */
#define SLICE_NS 8000000ull      /* loop time one turn gives the writer */

/* ---- captures ------------------------------------------------------------------ */

/* The raw body of one fetch, for its response record. */
struct kr_warc_cap {
  struct kr_warc_cap *next;     /* pool */
  kr_buf_t mem;                 /* raw body bytes in memory */
  int fd;                       /* spill file, -1 none */
  kr_sha1_t sha;                /* block digest once spilling */
  int sha_ready;                /* sha initialised (once per object) */
  uint64_t len;                 /* raw body bytes recorded */
  uint64_t max;                 /* nothing recorded past this */
  int over;                     /* bytes past max were dropped */
  int failed;                   /* the spill file failed */
  int done;                     /* the visit's records were dealt with */
};

struct dns_slot {
  uint64_t h;                   /* hash of the host name, 0 empty */
  uint64_t until;               /* recorded until (epoch ms) */
};

/* The response record being written in slices, and the rest of its
 * visit's records once it is done. */
struct job {
  kr_fetch_t *f;                /* NULL: the writer is free */
  kr_warc_rec_t rec;
  uint8_t pd[KR_SHA1_LEN];      /* payload digest */
  int has_pd;
  char pdl[KR_SHA1_LABEL_SIZE]; /* ... as a label, rec.payload_digest */
  uint8_t sha[KR_SHA1_LEN];     /* block digest, rec.block_sha1 */
  uint64_t date;
  uint64_t off;                 /* body bytes appended so far */
  char *buf;                    /* SLICE_BYTES, reading a spill file */
};

struct kr_warc {
  kr_crawl_t *c;
  kr_warcfile_t *wf;
  char *dir;
  int durability;               /* enum kr_warc_durability */
  int req, meta, dns, volatile_skip, dedupe;
  uint64_t retry_ms;
  uint64_t raw_max;
  kr_store_t *st;
  /* full disk */
  int we_paused;                /* dispatch held by us */
  kr_wheel_entry_t retry;
  uint64_t held_since;
  /* captures */
  struct kr_warc_cap *pool;
  size_t npool;
  size_t mem;                   /* raw bytes in memory, all fetches */
  struct dns_slot *dns_slots;
  kr_buf_t block;               /* metadata and dns blocks */
  uint64_t files_before;        /* files of writers replaced by a reload */
  /* sliced records: one at a time, in a file of their own (wf2) so that
   * the other visits' records go on into wf meanwhile; later large
   * records wait in order */
  kr_warcfile_t *wf2;           /* opened at the first large record */
  int tail;                     /* writing the job's other records: to wf2 */
  uv_idle_t idle;               /* runs the slices while there is work */
  struct job job;
  kr_fetch_t **q;               /* visits waiting for the writer (a ring) */
  size_t qhead, qn, qcap;
  int cancel;                   /* shutdown: give up sliced records */
  int reopen;                   /* a reload's file settings wait for the job */
  kr_warcsync_t *sync;          /* durability against the store's commits */
  kr_warc_stats_t st_;
};

/* Note that the record rid holds the original of fp's payload d. (While
 * a commit waits for the sync of the records written before it, the
 * store keeps this row out of that commit: see kr_store_set_presync.) */
static void original_put(struct kr_warc *w, kr_fetch_t *f, uint64_t fp, const uint8_t *d,
                         uint64_t ofp, uint64_t date, const char *rid) {
  int src = kr_store_original_put(w->st, fp, d, KR_SHA1_LEN, ofp, date, rid);
  if (src < 0)
    KR_LOG(KR_LOG_WARN, f->cf.url, "while noting the original: %s", kr_strerror(src));
}

static struct kr_warc_cap *cap_get(struct kr_warc *w) {
  struct kr_warc_cap *k = w->pool;
  if (k) {
    w->pool = k->next;
    w->npool--;
  } else {
    k = kr_xcalloc(1, sizeof *k);
    kr_buf_init(&k->mem, CAP_MEM_MAX);
    k->sha_ready = kr_sha1_init(&k->sha) == 0;
  }
  k->next = NULL;
  k->fd = -1;
  k->len = 0;
  k->max = w->raw_max;
  k->over = k->failed = k->done = 0;
  return k;
}

static void cap_free(struct kr_warc_cap *k) {
  if (k->sha_ready) kr_sha1_free(&k->sha);
  kr_buf_free(&k->mem);
  free(k);
}

static void cap_put(struct kr_warc *w, struct kr_warc_cap *k) {
  w->mem -= k->mem.len;
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  if (w->npool >= POOL_MAX) {
    cap_free(k);
    return;
  }
  if (k->mem.cap > POOL_KEEP) {
    kr_buf_free(&k->mem);
    kr_buf_init(&k->mem, CAP_MEM_MAX);
  }
  kr_buf_reset(&k->mem);
  k->next = w->pool;
  w->pool = k;
  w->npool++;
}

/* An unlinked file in the WARC directory (same file system as the
 * records it will feed). */
static int spill_open(const char *dir) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  char path[4096];
  if (snprintf(path, sizeof path, "%s/.kria-spill-XXXXXX", dir) >= (int)sizeof path) return -1;
  fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0) unlink(path);
  return fd;
}

/* Move the capture to a spill file: the block digest starts with the head
 * and the bytes held so far. */
static int spill_start(struct kr_warc *w, kr_fetch_t *f, struct kr_warc_cap *k) {
  kr_slice_t head = f->resp->raw_head;
  k->fd = spill_open(w->dir);
  if (k->fd < 0 || !k->sha_ready || kr_sha1_reset(&k->sha) ||
      kr_sha1_update(&k->sha, head.p, head.n) ||
      kr_sha1_update(&k->sha, k->mem.data ? k->mem.data : "", k->mem.len) ||
      kr_write_all(k->fd, k->mem.data ? k->mem.data : "", k->mem.len)) {
    KR_LOG(KR_LOG_WARN, f->cf.url, "cannot spill a large body to %s: %s", w->dir,
           strerror(errno));
    return -1;
  }
  w->mem -= k->mem.len;
  kr_buf_free(&k->mem);
  kr_buf_init(&k->mem, CAP_MEM_MAX);
  w->st_.spilled++;
  return 0;
}

/* n more bytes stay in memory (else the capture spills). */
static int mem_keeps(const struct kr_warc *w, const struct kr_warc_cap *k, size_t n) {
  return k->mem.len + n <= CAP_MEM_MAX && w->mem + n <= MEM_BUDGET;
}

/* The chain's question (kr_chain_held): are raw body bytes [from, to) in
 * the capture's memory, or will the ones still to come stay there? */
static int capture_held(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                        uint64_t from, uint64_t to, kr_slice_t *out) {
  const kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  const struct kr_warc_cap *k = f->wcap;
  if (level != KR_STREAM_RAW || !k || k->fd >= 0 || k->failed || from > k->len) return 0;
  if (to > k->len && (k->over || k->len != from || to - from > k->max - k->len ||
                      !mem_keeps(f->crawl->warc, k, (size_t)(to - from))))
    return 0;
  if (out) *out = kr_slice(k->mem.data ? k->mem.data + from : "", (size_t)(k->mem.len - from));
  return 1;
}

static void capture_raw(kr_fetch_t *f, const char *p, size_t n) {
  struct kr_warc_cap *k = f->wcap;
  if (!k || k->failed || k->over || !n) return;
  struct kr_warc *w = f->crawl->warc;
  if (n > k->max - k->len) {
    k->over = 1;
    n = (size_t)(k->max - k->len);
    if (!n) return;
  }
  if (k->fd < 0) {
    if (mem_keeps(w, k, n) && kr_buf_append(&k->mem, p, n) == 0) {
      w->mem += n;
      k->len += n;
      return;
    }
    if (spill_start(w, f, k)) {
      k->failed = 1;
      return;
    }
  }
  if (kr_sha1_update(&k->sha, p, n) || kr_write_all(k->fd, p, n)) {
    KR_LOG(KR_LOG_WARN, f->cf.url, "cannot spill a large body to %s: %s", w->dir,
           strerror(errno));
    k->failed = 1;
    return;
  }
  k->len += n;
}

/* ---- the decision -------------------------------------------------------------- */

enum rec_kind {
  K_NONE = 0,     /* nothing to store */
  K_RESPONSE,     /* the content */
  K_IDENTICAL,    /* revisit, identical-payload-digest */
  K_NOT_MODIFIED, /* revisit, server-not-modified */
};

/* The stored original a revisit points at. */
struct orig {
  int found;
  uint8_t digest[KR_SHA1_LEN];
  uint64_t ofp, date;
  const char *url;              /* in f's arena */
  size_t url_len;
  char rid[KR_WARC_ID_SIZE];    /* its WARC-Record-ID */
};

/* Copy what a revisit needs of r; 0 when r cannot be referred to: its URI
 * is gone or it has no record id (a row from before schema 5). */
static int orig_take(kr_fetch_t *f, const kr_original_t *r, struct orig *o) {
  if (!r->url || !r->rid || !r->rid_len || r->rid_len >= sizeof o->rid) return 0;
  o->url = kr_arena_strndup(&f->arena, r->url, r->url_len);
  if (!o->url) return 0;
  memcpy(o->rid, r->rid, r->rid_len);
  o->rid[r->rid_len] = '\0';
  o->ofp = r->ofp;
  o->date = r->date;
  o->url_len = r->url_len;
  o->found = 1;
  return 1;
}

static int orig_lookup(struct kr_warc *w, kr_fetch_t *f, struct orig *o) {
  memset(o, 0, sizeof *o);
  kr_original_t r;
  int rc = kr_store_original_get(w->st, f->curi->fp, &r);
  if (rc < 0) return rc;
  if (rc == 0 || r.digest_len != KR_SHA1_LEN) return 0;
  memcpy(o->digest, r.digest, KR_SHA1_LEN);
  return orig_take(f, &r, o);
}

/* A response stored for another URI with payload digest d (URL-agnostic).
 * The originals, not the digest index, answer: they only ever name
 * records that were written. */
static int index_lookup(struct kr_warc *w, kr_fetch_t *f, const uint8_t *d, struct orig *o) {
  memset(o, 0, sizeof *o);
  kr_original_t r;
  int rc = kr_store_original_find(w->st, d, KR_SHA1_LEN, &r);
  if (rc <= 0 || r.ofp == f->curi->fp) return rc < 0 ? rc : 0;
  memcpy(o->digest, d, KR_SHA1_LEN);
  return orig_take(f, &r, o);
}

/* The payload digest of this response, when known. When the walk jumped
 * over the digest phase (an error after the headers), what arrived is
 * hashed all the same (digest-end, before warc-late). */
static int payload_digest(kr_fetch_t *f, uint8_t out[KR_SHA1_LEN]) {
  if (!f->ad.has_payload_digest) return 0;
  memcpy(out, f->ad.payload_digest, KR_SHA1_LEN);
  return 1;
}

/* The block digest of f's response record [raw head, k->mem], when the
 * digest processor made it together with the payload's (kr_sha1_pair). */
static const uint8_t *block_digest(const kr_fetch_t *f, const struct kr_warc_cap *k) {
  int same = f->ad.has_block_digest && k && k->fd < 0 && k->mem.len == f->ad.block_body;
  return same ? f->ad.block_digest : NULL;
}

/* What to write for f; *o is the original of a revisit. A store error
 * is logged and taken as "no original" (the content is then stored). */
static enum rec_kind decide(struct kr_warc *w, kr_fetch_t *f, const uint8_t *pd, int has_pd,
                            struct orig *o) {
  const kr_http_resp_t *r = f->resp;
  memset(o, 0, sizeof *o);
  int rc;
  if (r->status == 304 || f->ad.midfetch_abort) {
    rc = orig_lookup(w, f, o);
    if (rc < 0) KR_LOG(KR_LOG_WARN, f->cf.url, "while reading the stored original: %s",
                       kr_strerror(rc));
    return rc == 1 ? K_NOT_MODIFIED : K_RESPONSE;
  }
  if (has_pd && r->payload_bytes && !r->truncated && !f->http_err) {
    rc = orig_lookup(w, f, o);
    if (rc == 1 && memcmp(o->digest, pd, KR_SHA1_LEN) == 0) return K_IDENTICAL;
    if (w->dedupe && index_lookup(w, f, pd, o) == 1) return K_IDENTICAL;
  }
  /* The change digest (volatile sections stripped) said unchanged, the
   * payload says otherwise. */
  int unchanged = f->ad.visits && f->ad.content == KR_CONTENT_UNCHANGED;
  if (unchanged) {
    if (w->volatile_skip) {
      w->st_.volatile_skipped++;
      return K_NONE;
    }
    w->st_.volatile_full++;
  }
  return K_RESPONSE;
}

/* ---- records ------------------------------------------------------------------- */

/* Write one record; accounts for it. 0, KR_EINVAL (a bad record: logged,
 * skipped), KR_ENOSPC / KR_EIO (the caller gives the fetch back). */
static int put(struct kr_warc *w, kr_fetch_t *f, kr_warc_rec_t *rec, const kr_slice_t *v,
               size_t n) {
  kr_warcfile_loc_t loc;
  int rc = kr_warcfile_write(w->tail ? w->wf2 : w->wf, rec, v, n, &loc);
  if (rc == 0) {
    w->st_.records++;
    w->st_.bytes += loc.w.bytes;
  } else if (rc == KR_EINVAL) {
    w->st_.write_errors++;
    KR_LOG(KR_LOG_WARN, f->cf.url, "a %s record could not be made (bad field): skipped",
           kr_warc_type_name(rec->type));
  }
  return rc;
}

static const char *truncated_why(kr_fetch_t *f, const struct kr_warc_cap *k) {
  const kr_http_resp_t *r = f->resp;
  if (r->truncated || f->cut || (k && k->over)) return "length";
  switch (f->http_err) {
  case 0:
    return r->aborted ? "unspecified" : NULL;
  case KR_EFIRSTBYTE_TIMEOUT:
  case KR_EIDLE_TIMEOUT:
  case KR_ETOTAL_TIMEOUT:
    return "time";
  default:
    return "disconnect";
  }
}

/* The file writer's options from the configuration; x must stay put
 * while x->o is used (its strings point into x and the config). */
struct wopts {
  kr_warcfile_opts_t o;
  char level[16], size[32];
  kr_warc_field_t extra[5];
};

static void wopts_fill(struct kr_warc *w, kr_crawl_t *c, const kr_config_t *cfg,
                       struct wopts *x);

/* A response block of a spilled body, or a large one in memory, is
 * written in slices across loop turns (on_slice) so that compressing it
 * never holds the loop for long. This begins the record: the header and
 * the raw head. 0 and w->job set, or an error (the record is cut away). */
static void on_slice(uv_idle_t *h);

static int job_begin(struct kr_warc *w, kr_fetch_t *f, const kr_warc_rec_t *rec,
                     const uint8_t *pd, int has_pd, uint64_t date) {
  struct kr_warc_cap *k = f->wcap;
  struct job *j = &w->job;
  kr_slice_t head = f->resp->raw_head;
  j->rec = *rec;
  if (rec->payload_digest) {
    snprintf(j->pdl, sizeof j->pdl, "%s", rec->payload_digest);
    j->rec.payload_digest = j->pdl;
  }
  memcpy(j->pd, pd, KR_SHA1_LEN);
  j->has_pd = has_pd;
  j->date = date;
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
  if (!w->wf2) {
    struct wopts x;
    char e[512] = "";
    wopts_fill(w, w->c, w->c->cfg, &x);
    int rc = kr_warcfile_open(&x.o, &w->wf2, e, sizeof e);
    if (rc) {
      KR_LOG(KR_LOG_ERROR, w->dir, "a WARC file for large records: %s", e[0] ? e : kr_strerror(rc));
      return rc == KR_EINVAL ? KR_EIO : rc;
    }
    kr_warcsync_set_file(w->sync, 1, w->wf2);
  }
  int rc = kr_warcfile_begin(w->wf2, &j->rec, head.n + k->len);
  if (!rc) rc = kr_warcfile_append(w->wf2, head.p, head.n);
  if (rc) return rc;
  j->f = f;
  uv_idle_start(&w->idle, on_slice);
  return 0;
}

/* Append the next slice of the body: 0 more to come, 1 all appended, or
 * an error (the record was cut away). */
static int job_step(struct kr_warc *w) {
  struct job *j = &w->job;
  kr_fetch_t *f = j->f;
  struct kr_warc_cap *k = f->wcap;
  size_t want = k->len - j->off < SLICE_BYTES ? (size_t)(k->len - j->off) : SLICE_BYTES;
  const char *p = k->mem.data + j->off;
  if (k->fd >= 0) {
    if (!j->buf) j->buf = kr_xmalloc(SLICE_BYTES);
    ssize_t got = pread(k->fd, j->buf, want, (off_t)j->off);
    if (got < 0 && errno == EINTR) return 0;
    if (got <= 0) {
      KR_LOG(KR_LOG_ERROR, f->cf.url, "reading back the spilled body: %s",
             got < 0 ? strerror(errno) : "short file");
      kr_warcfile_abort(w->wf2);
      return KR_EIO;
    }
    p = j->buf;
    want = (size_t)got;
  }
  int rc = want ? kr_warcfile_append(w->wf2, p, want) : 0;
  if (rc) return rc;
  j->off += want;
  return j->off == k->len;
}

static const char *content_state_name(kr_fetch_t *f) {
  if (!f->ad.visits) return NULL;
  switch (f->ad.content) {
  case KR_CONTENT_UNCHANGED:
    return "unchanged";
  case KR_CONTENT_CHANGED:
    return "changed";
  default:
    return "unknown";
  }
}

static int put_metadata(struct kr_warc *w, kr_fetch_t *f, uint64_t date, const char *to) {
  const kr_curi_t *u = f->curi;
  kr_warc_outlink_t *ol = NULL;
  if (f->nlinks) ol = kr_arena_alloc(&f->arena, f->nlinks * sizeof *ol);
  size_t nol = 0;
  for (size_t i = 0; ol && i < f->nlinks; i++) {
    const kr_link_t *l = &f->links[i];
    ol[nol].url = kr_slice(l->url, l->url_len);
    ol[nol].hop = l->hop_len ? l->hop_path[l->hop_len - 1] : 'L';
    ol[nol].context = kr_slice("", 0);
    nol++;
  }
  kr_warc_field_t an[8];
  size_t nan = 0;
  char visits[KR_U64_DEC_MAX], versions[KR_U64_DEC_MAX], wait[KR_U64_DEC_MAX];
  char overdue[KR_U64_DEC_MAX], cd[KR_SHA1_LABEL_SIZE];
  const char *cs = content_state_name(f);
  if (cs) {
    an[nan++] = (kr_warc_field_t){"contentState", kr_slice_cstr(cs)};
    an[nan++] = (kr_warc_field_t){"visits", kr_slice(visits, kr_u64_dec(visits, f->ad.visits))};
    an[nan++] = (kr_warc_field_t){"versions",
                                  kr_slice(versions, kr_u64_dec(versions, f->ad.versions))};
  }
  if (f->has_digest) {
    kr_sha1_label(f->digest, cd);
    an[nan++] = (kr_warc_field_t){"changeDigest", kr_slice_cstr(cd)};
  }
  if (u->visits) {
    an[nan++] = (kr_warc_field_t){"previousWaitMs", kr_slice(wait, kr_u64_dec(wait, u->wait_ms))};
  }
  /* numbers without snprintf: a metadata record per page */
  an[nan++] = (kr_warc_field_t){"overdueMs", kr_slice(overdue, kr_u64_dec(overdue, u->overdue_ms))};
  /* crawl.log's annotations so far, comma separated */
  kr_buf_t *b = &w->block;
  kr_buf_reset(b);
  for (size_t i = 0; i < f->nannot; i++) {
    if (i) kr_buf_append(b, ",", 1);
    kr_buf_append_slice(b, f->annot[i]);
  }
  char *annots = b->len ? kr_arena_strndup(&f->arena, b->data, b->len) : NULL;
  if (annots) an[nan++] = (kr_warc_field_t){"annotations", kr_slice_cstr(annots)};
  kr_warc_meta_t m = {
      .via = kr_slice("", 0),
      .hops_from_seed = kr_slice(u->hop_path ? u->hop_path : "", u->hop_len),
      .fetch_time_ms = (int64_t)f->fetch_duration_ms,
      .outlinks = ol,
      .noutlinks = nol,
      .annotations = an,
      .nannotations = nan,
  };
  kr_buf_reset(b);
  int rc = kr_warc_metadata_block(b, &m);
  if (rc) {
    KR_LOG(KR_LOG_WARN, f->cf.url, "metadata record left out: %s", kr_strerror(rc));
    return 0;
  }
  kr_warc_rec_t rec = {.type = KR_WARC_METADATA, .date_ms = date,
                       .target_uri = kr_slice(f->cf.url, f->cf.url_len), .concurrent_to = to};
  kr_slice_t v = kr_slice(b->data ? b->data : "", b->len);
  rc = put(w, f, &rec, &v, 1);
  if (rc == 0) w->st_.metadata++;
  return rc == KR_EINVAL ? 0 : rc;
}

static int response_done(struct kr_warc *w, kr_fetch_t *f, const kr_warc_rec_t *rec,
                         const uint8_t *pd, int has_pd, uint64_t date);
static int visit_rest(struct kr_warc *w, kr_fetch_t *f, const char *id, uint64_t date);

/* Every record of f. 0; 1 when its response record is being written in
 * slices (w->job: the rest follows once it is done); or KR_ENOSPC /
 * KR_EIO: f must be given back. */
static int write_visit(struct kr_warc *w, kr_fetch_t *f) {
  const kr_http_resp_t *r = f->resp;
  struct kr_warc_cap *k = f->wcap;
  uint8_t pd[KR_SHA1_LEN];
  int has_pd = payload_digest(f, pd);
  struct orig o;
  enum rec_kind kind = decide(w, f, pd, has_pd, &o);
  if (kind == K_NONE) {
    kr_fetch_annotate(f, "warcSkippedVolatile");
    return 0;
  }
  uint64_t date = f->fetch_start_ms ? f->fetch_start_ms : kr_crawl_now(f->crawl);
  kr_slice_t url = kr_slice(f->cf.url, f->cf.url_len);
  char pdl[KR_SHA1_LABEL_SIZE];
  kr_warc_rec_t rec = {.date_ms = date, .target_uri = url,
                       .ip = r->peer_ip[0] ? r->peer_ip : NULL};
  int rc;
  if (kind == K_RESPONSE) {
    rec.type = KR_WARC_RESPONSE;
    rec.truncated = truncated_why(f, k);
    if (has_pd) {
      kr_sha1_label(pd, pdl);
      rec.payload = KR_WARC_PAYLOAD_DIGEST;
      rec.payload_digest = pdl;
    } else if (!r->chunked && (!k || k->fd < 0)) {
      rec.payload = KR_WARC_PAYLOAD_FROM;
      rec.payload_from = r->raw_head.n;
    }
    if (k && k->failed) return KR_EIO; /* the body is gone: fetch it again */
    if (has_pd) rec.block_sha1 = block_digest(f, k);
    if (k && (k->fd >= 0 || (k->mem.len >= SLICED_MIN && rec.payload != KR_WARC_PAYLOAD_FROM))) {
      rc = job_begin(w, f, &rec, pd, has_pd, date);
      return rc == 0 ? 1 : rc == KR_EINVAL ? 0 : rc;
    }
    kr_slice_t v[2] = {r->raw_head, k && k->mem.len ? kr_slice(k->mem.data, k->mem.len)
                                                    : kr_slice("", 0)};
    rc = put(w, f, &rec, v, 2);
    if (rc == KR_EINVAL) return 0;
    if (rc) return rc;
    return response_done(w, f, &rec, pd, has_pd, date);
  } else {
    rec.type = KR_WARC_REVISIT;
    rec.profile = kind == K_IDENTICAL ? KR_WARC_PROFILE_IDENTICAL : KR_WARC_PROFILE_NOT_MODIFIED;
    kr_sha1_label(o.digest, pdl);
    rec.payload = KR_WARC_PAYLOAD_DIGEST;
    rec.payload_digest = pdl;
    rec.refers_to = o.rid;
    rec.refers_to_uri = kr_slice(o.url, o.url_len);
    rec.refers_to_date_ms = o.date;
    kr_slice_t v = r->raw_head;
    rc = put(w, f, &rec, &v, 1);
    if (rc == KR_EINVAL) return 0;
    if (rc) return rc;
    if (kind == K_IDENTICAL) {
      w->st_.revisits_identical++;
      /* a payload found under another URI becomes this URI's original */
      if (o.ofp != f->curi->fp || !f->ad.visits) {
        original_put(w, f, f->curi->fp, o.digest, o.ofp, o.date, o.rid);
      }
    } else {
      w->st_.revisits_not_modified++;
    }
  }
  return visit_rest(w, f, rec.id, date);
}

/* The response record rec of f is written: account for it, then the rest. */
static int response_done(struct kr_warc *w, kr_fetch_t *f, const kr_warc_rec_t *rec,
                         const uint8_t *pd, int has_pd, uint64_t date) {
  w->st_.responses++;
  if (rec->truncated) w->st_.truncated++;
  /* This record is now the original of the URI's payload. */
  if (has_pd && !rec->truncated) {
    original_put(w, f, f->curi->fp, pd, f->curi->fp, date, rec->id);
  }
  return visit_rest(w, f, rec->id, date);
}

/* The request and metadata records after the first record (id) of f. */
static int visit_rest(struct kr_warc *w, kr_fetch_t *f, const char *id, uint64_t date) {
  int rc;
  kr_slice_t url = kr_slice(f->cf.url, f->cf.url_len);
  if (w->req && f->http) {
    kr_slice_t q = kr_http_fetch_request(f->http);
    kr_warc_rec_t rq = {.type = KR_WARC_REQUEST, .date_ms = date, .target_uri = url,
                        .concurrent_to = id};
    if (q.n) {
      rc = put(w, f, &rq, &q, 1);
      if (rc && rc != KR_EINVAL) return rc;
      if (rc == 0) w->st_.requests++;
    }
  }
  if (w->meta) {
    rc = put_metadata(w, f, date, id);
    if (rc) return rc;
  }
  return 0;
}

/* ---- full disk ------------------------------------------------------------------- */

static void on_retry(kr_wheel_entry_t *e);

static void hold(struct kr_warc *w, kr_fetch_t *f, int err) {
  kr_crawl_t *c = w->c;
  w->st_.write_errors++;
  /* Held already: someone may have resumed the crawl meanwhile. */
  if (!c->paused) {
    kr_crawl_pause(c, 1);
    w->we_paused = 1;
  }
  if (w->st_.held) return;
  w->st_.held = 1;
  w->st_.holds++;
  w->held_since = kr_crawl_now(c);
  KR_LOG(KR_LOG_ERROR, w->dir,
         "cannot write WARC records (%s%s%s): no new fetches until it works again, "
         "fetches running now are given back and repeated later; checking every %" PRIu64
         " ms",
         kr_err_name(err), kr_warcfile_errmsg(w->wf)[0] ? ": " : "", kr_warcfile_errmsg(w->wf),
         w->retry_ms);
  (void)f;
  kr_timer_start(&c->timers, &w->retry, w->held_since + w->retry_ms, on_retry);
}

/* Both files' buffered records to the kernel: 0 or the first error. */
static int flush_files(struct kr_warc *w) {
  int rc = w->wf ? kr_warcfile_flush(w->wf) : 0;
  int rc2 = w->wf2 ? kr_warcfile_flush(w->wf2) : 0;
  return rc ? rc : rc2;
}

static void on_retry(kr_wheel_entry_t *e) {
  struct kr_warc *w = container_of(e, struct kr_warc, retry);
  kr_crawl_t *c = w->c;
  if (!w->st_.held || c->closing) return;
  struct statvfs sv;
  uint64_t now = kr_crawl_now(c);
  uint64_t avail = 0;
  uint64_t want = RESUME_FREE;
  int known = statvfs(w->dir, &sv) == 0;
  if (known) {
    avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    uint64_t share = (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize / RESUME_SHARE;
    if (share < want) want = share;
  }
  if (known && avail < want) {
    KR_LOG(KR_LOG_INFO, w->dir, "still %" PRIu64 " bytes free: WARC writing stays held", avail);
    kr_timer_start(&c->timers, &w->retry, now + w->retry_ms, on_retry);
    return;
  }
  /* records written before the failure, still buffered, go first */
  int rc = flush_files(w);
  if (rc) {
    KR_LOG(KR_LOG_INFO, w->dir, "buffered WARC records still cannot be written (%s): WARC "
           "writing stays held", kr_err_name(rc));
    kr_timer_start(&c->timers, &w->retry, now + w->retry_ms, on_retry);
    return;
  }
  w->st_.held = 0;
  KR_LOG(KR_LOG_NOTICE, w->dir, "%" PRIu64 " bytes free after %" PRIu64
         " s: writing WARC records again, fetches resume", avail, (now - w->held_since) / 1000);
  if (w->we_paused) {
    w->we_paused = 0;
    kr_crawl_pause(c, 0);
  }
}

static void failed(struct kr_warc *w, kr_fetch_t *f, int err) {
  f->disp = KR_DISP_DEFER;
  w->st_.deferred++;
  hold(w, f, err);
}

/* ---- the processors --------------------------------------------------------------- */

/* Is there a visit with a response to record? */
static int has_visit(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  if (!f->curi || f->decided || f->disp != KR_DISP_FINISH) return 0;
  if (!f->resp || !f->resp->status) return 0;
  if (f->http_err == KR_ECANCELED && c->stopping) return 0; /* given back */
  return 1;
}

static int warc_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  struct kr_warc *w = self->data;
  const kr_http_resp_t *r = f->resp;
  if (!r || f->wcap) return 0;
  f->wcap = cap_get(w);
  /* No body is coming for these. */
  if (r->status == 304 || f->ad.midfetch_abort) f->wcap->max = 0;
  kr_chain_hold(cf, self, KR_STREAM_RAW);
  return KR_STREAM_BIT(KR_STREAM_RAW); /* the response record's block */
}

static int warc_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                     const char *p, size_t n) {
  capture_raw(container_of(cf, kr_fetch_t, cf), p, n);
  return 0;
}

/* ---- the writer's queue: one sliced record at a time, visits in order ---------------- */

static void queue_push(struct kr_warc *w, kr_fetch_t *f) {
  if (w->qn == w->qcap) {
    size_t ncap = w->qcap ? 2 * w->qcap : 16;
    kr_fetch_t **nq = kr_xcalloc(ncap, sizeof *nq);
    for (size_t i = 0; i < w->qn; i++) nq[i] = w->q[(w->qhead + i) % w->qcap];
    free(w->q);
    w->q = nq;
    w->qcap = ncap;
    w->qhead = 0;
  }
  w->q[(w->qhead + w->qn++) % w->qcap] = f;
  uv_idle_start(&w->idle, on_slice);
}

static kr_fetch_t *queue_pop(struct kr_warc *w) {
  kr_fetch_t *f = w->q[w->qhead];
  w->qhead = (w->qhead + 1) % w->qcap;
  w->qn--;
  return f;
}

/* The job's fetch goes on down its chain. */
static void job_finish(struct kr_warc *w, int rc) {
  kr_fetch_t *f = w->job.f;
  w->job.f = NULL;
  if (rc && rc != KR_EINVAL) failed(w, f, rc);
  kr_chain_resume(&f->cf, 0);
}

void kr__warc_cancel(kr_crawl_t *c) {
  if (c->warc) c->warc->cancel = 1;
}

/* Past the shutdown's patience: the record is cut away and the fetch
 * given back (it is fetched again by the next run). */
static void job_abandon(struct kr_warc *w) {
  kr_fetch_t *f = w->job.f;
  KR_LOG(KR_LOG_NOTICE, f->cf.url, "shutting down: a %" PRIu64 "-byte WARC record left "
         "unwritten (%" PRIu64 " written), the fetch is given back", f->wcap->len, w->job.off);
  kr_warcfile_abort(w->wf2);
  w->job.f = NULL;
  f->disp = KR_DISP_DEFER;
  w->st_.deferred++;
  kr_chain_resume(&f->cf, 0);
}

static void apply_reopen(struct kr_warc *w);

/* Write what waits, for at most SLICE_NS of this loop turn: the next
 * slices of the job, then the visits queued behind it, in order. */
static void on_slice(uv_idle_t *h) {
  struct kr_warc *w = container_of(h, struct kr_warc, idle);
  uint64_t t0 = uv_hrtime();
  KR_TP_ENTER(KR_TP_WARC);
  while (uv_hrtime() - t0 < SLICE_NS) {
    if (w->job.f) {
      if (w->cancel) {
        job_abandon(w);
        continue;
      }
      int rc = job_step(w);
      if (rc == 0) continue;
      if (rc == 1) {
        kr_warcfile_loc_t loc;
        rc = kr_warcfile_end(w->wf2, &loc);
        if (!rc) {
          w->st_.records++;
          w->st_.bytes += loc.w.bytes;
          struct job *j = &w->job;
          w->tail = 1; /* the visit's request and metadata follow it */
          rc = response_done(w, j->f, &j->rec, j->pd, j->has_pd, j->date);
          w->tail = 0;
        }
      }
      job_finish(w, rc);
      if (w->reopen) apply_reopen(w);
      continue;
    }
    if (!w->qn || !w->wf) break;
    kr_fetch_t *f = queue_pop(w);
    if (!f) continue;
    int rc = write_visit(w, f);
    if (rc == 1) continue; /* it became the job */
    if (rc) failed(w, f, rc);
    KR_TP_ENTER(KR_TP_RESUME);
    kr_chain_resume(&f->cf, 0);
    KR_TP_LEAVE();
  }
  KR_TP_LEAVE();
  if (!w->job.f && (!w->qn || !w->wf)) uv_idle_stop(h);
}

static void warc_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  struct kr_warc *w = self->data;
  /* Never while it waits (its walk is suspended), but be sure. */
  if (w->job.f == f) {
    kr_warcfile_abort(w->wf2);
    w->job.f = NULL;
  }
  for (size_t i = 0; i < w->qn; i++)
    if (w->q[(w->qhead + i) % w->qcap] == f) w->q[(w->qhead + i) % w->qcap] = NULL;
  if (f->wcap) cap_put(w, f->wcap);
  f->wcap = NULL;
}

static int run_visit(struct kr_warc *w, kr_fetch_t *f) {
  struct kr_warc_cap *k = f->wcap;
  if (k) {
    if (k->done) return KR_PROC_NEXT;
    k->done = 1;
  }
  if (!has_visit(f) || !w->wf) return KR_PROC_NEXT;
  /* A large body waits for the one being written; the rest go on. */
  if (k && (k->fd >= 0 || k->mem.len >= SLICED_MIN) && (w->job.f || w->qn)) {
    queue_push(w, f);
    return KR_PROC_ASYNC;
  }
  KR_TP_ENTER(KR_TP_WARC);
  int rc = write_visit(w, f);
  KR_TP_LEAVE();
  if (rc == 1) return KR_PROC_ASYNC;
  if (rc) failed(w, f, rc);
  return KR_PROC_NEXT;
}

static int warc_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  return run_visit(self->data, container_of(cf, kr_fetch_t, cf));
}

/* First in the post phase: a fetch whose walk skipped the write phase
 * (after an error) but has a response, e.g. a body cut by a timeout, is
 * recorded here, still before "finish" hands the visit on. */
static int warc_late_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  if (f->wcap && !f->wcap->done) return run_visit(self->data, f);
  return KR_PROC_NEXT;
}

/* dns records ----------------------------------------------------------------------- */

static uint64_t host_hash(kr_slice_t h) {
  uint64_t x = 1469598103934665603ull;
  for (size_t i = 0; i < h.n; i++) {
    unsigned char ch = (unsigned char)h.p[i];
    if (ch >= 'A' && ch <= 'Z') ch += 32;
    x = (x ^ ch) * 1099511628211ull;
  }
  return x ? x : 1;
}

static void on_dns(void *data, int status, const kr_dns_result_t *res) {
  kr_fetch_t *f = data;
  struct kr_warc *w = f->crawl->warc;
  if (status == 0 && res && res->naddrs > 0 && w->wf) {
    char txt[KR_DNS_MAX_ADDRS][INET6_ADDRSTRLEN];
    const char *addrs[KR_DNS_MAX_ADDRS];
    size_t n = 0;
    for (int i = 0; i < res->naddrs && i < KR_DNS_MAX_ADDRS; i++) {
      const struct sockaddr_storage *ss = &res->addrs[i];
      const void *a = ss->ss_family == AF_INET
                          ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                          : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
      if (inet_ntop(ss->ss_family, a, txt[n], sizeof txt[n])) {
        addrs[n] = txt[n];
        n++;
      }
    }
    kr_slice_t host = f->cf.host;
    char *name = kr_arena_strndup(&f->arena, host.p, host.n);
    uint64_t now = kr_crawl_now(f->crawl);
    kr_buf_reset(&w->block);
    char uri[300];
    if (name && n && host.n < 256 &&
        kr_warc_dns_block(&w->block, now, name, addrs, n, res->ttl_s) == 0) {
      snprintf(uri, sizeof uri, "dns:%s", name);
      kr_warc_rec_t rec = {.type = KR_WARC_RESPONSE, .date_ms = now,
                           .target_uri = kr_slice_cstr(uri), .content_type = "text/dns",
                           .payload = KR_WARC_PAYLOAD_FROM, .payload_from = 0};
      kr_slice_t v = kr_slice(w->block.data, w->block.len);
      int rc = put(w, f, &rec, &v, 1);
      if (rc == 0) {
        w->st_.dns++;
        struct dns_slot *s = &w->dns_slots[host_hash(host) & (DNS_SLOTS - 1)];
        s->h = host_hash(host);
        s->until = now + (uint64_t)(res->ttl_s ? res->ttl_s : 60) * 1000;
      } else if (rc != KR_EINVAL) {
        failed(w, f, rc);
      }
    }
  }
  kr_chain_resume(&f->cf, 0);
}

static int dns_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  struct kr_warc *w = self->data;
  kr_crawl_t *c = f->crawl;
  if (!w->dns || !has_visit(f) || !w->wf || !c->dns || !f->url) return KR_PROC_NEXT;
  kr_slice_t host = f->cf.host;
  if (!host.n || host.n > 253 || memchr(host.p, ':', host.n)) return KR_PROC_NEXT;
  /* IP literals were not resolved */
  struct in_addr a4;
  char name[256];
  memcpy(name, host.p, host.n);
  name[host.n] = '\0';
  if (inet_pton(AF_INET, name, &a4) == 1) return KR_PROC_NEXT;
  uint64_t hh = host_hash(host);
  struct dns_slot *s = &w->dns_slots[hh & (DNS_SLOTS - 1)];
  if (s->h == hh && s->until > kr_crawl_now(c)) return KR_PROC_NEXT;
  if (kr_dns_resolve(c->dns, name, on_dns, f, NULL)) return KR_PROC_NEXT;
  return KR_PROC_ASYNC;
}

/* ---- life cycle --------------------------------------------------------------------- */

int kr__warc_presync(kr_crawl_t *c, int may_wait) {
  struct kr_warc *w = c->warc;
  if (!w || !w->wf) return 0;
  /* durability none: nothing is known to be on disk (a machine crash may
   * lose any page of the file), so the repair reads the whole file; but
   * the records of the visits about to commit reach the kernel, so a
   * crash of kria loses none of them (batch and record flush in their
   * syncs) */
  if (!w->sync || w->durability == KR_WARC_SYNC_NONE) {
    int rc = flush_files(w);
    if (rc) hold(w, NULL, rc);
    return 0;
  }
  return kr_warcsync_presync(w->sync, w->durability == KR_WARC_SYNC_BATCH, may_wait);
}

/* A sync failed: the records are in the kernel (a crash of kria keeps
 * them); only a crash of the machine could lose them now. Stop adding to
 * that. */
static void on_sync_error(void *ud, int err, const char *msg) {
  struct kr_warc *w = ud;
  KR_LOG(KR_LOG_ERROR, w->dir, "syncing the WARC file failed: %s", msg);
  hold(w, NULL, err);
}

static int dir_of(const kr_config_view_t *g, char *out, size_t outlen) {
  const char *d = kr_config_str(g, KR_CFG_CRAWL_WARC_DIR);
  int n = d[0] ? snprintf(out, outlen, "%s", d)
               : snprintf(out, outlen, "%s/warcs", kr_config_str(g, KR_CFG_CRAWL_STATE_DIR));
  return n > 0 && (size_t)n < outlen ? 0 : -1;
}

/* What each record consults: applied at once (also by a reload). */
static void settings(struct kr_warc *w, const kr_config_view_t *g) {
  w->req = kr_config_bool(g, KR_CFG_WARC_WRITE_REQUEST);
  w->meta = kr_config_bool(g, KR_CFG_WARC_WRITE_METADATA);
  w->dns = kr_config_bool(g, KR_CFG_WARC_WRITE_DNS);
  w->volatile_skip = kr_config_enum(g, KR_CFG_WARC_WRITE_VOLATILE) == KR_CFG_VOLATILE_SKIP;
  w->dedupe = kr_config_bool(g, KR_CFG_ADAPTIVE_DEDUPE);
  w->retry_ms = (uint64_t)kr_config_ms(g, KR_CFG_WARC_RETRY_INTERVAL);
}

static void wopts_fill(struct kr_warc *w, kr_crawl_t *c, const kr_config_t *cfg,
                       struct wopts *x) {
  const kr_config_view_t *g = kr_config_global(cfg);
  kr_warcfile_opts_t *o = &x->o;
  kr_warcfile_opts_default(o);
  o->dir = w->dir;
  o->prefix = kr_config_str(g, KR_CFG_WARC_PREFIX);
  o->writer.gzip = kr_config_enum(g, KR_CFG_WARC_COMPRESS) == KR_CFG_WARC_GZIP;
  o->writer.level = (int)kr_config_int(g, KR_CFG_WARC_LEVEL);
  o->max_size = kr_config_size(g, KR_CFG_WARC_MAX_SIZE);
  static const int dur[] = {[KR_CFG_DURABILITY_NONE] = KR_WARC_SYNC_NONE,
                            [KR_CFG_DURABILITY_BATCH] = KR_WARC_SYNC_BATCH,
                            [KR_CFG_DURABILITY_RECORD] = KR_WARC_SYNC_RECORD};
  o->durability = dur[kr_config_enum(g, KR_CFG_WARC_DURABILITY)];
  o->clock = &c->clock;
  const char *op = kr_config_str(g, KR_CFG_WARC_OPERATOR);
  if (!op[0]) op = kr_config_str(g, KR_CFG_CRAWL_CONTACT_URL);
  snprintf(x->level, sizeof x->level, "%d", o->writer.gzip ? o->writer.level : 0);
  snprintf(x->size, sizeof x->size, "%" PRIu64, o->max_size);
  int skip = kr_config_enum(g, KR_CFG_WARC_WRITE_VOLATILE) == KR_CFG_VOLATILE_SKIP;
  x->extra[0] = (kr_warc_field_t){"kria-scope-mode", kr_config_enum_choice(
                                      KR_CFG_SCOPE_MODE, kr_config_enum(g, KR_CFG_SCOPE_MODE))};
  x->extra[1] = (kr_warc_field_t){
      "kria-revisit", kr_slice_cstr(kr_config_bool(g, KR_CFG_CRAWL_REVISIT) ? "true" : "false")};
  x->extra[2] = (kr_warc_field_t){"kria-warc-level", kr_slice_cstr(x->level)};
  x->extra[3] = (kr_warc_field_t){"kria-warc-max-size", kr_slice_cstr(x->size)};
  x->extra[4] = (kr_warc_field_t){"kria-write-volatile", kr_slice_cstr(skip ? "skip" : "full")};
  o->info.software = "kria/" KRIA_VERSION " (+https://github.com/kria-crawler/kria)";
  o->info.operator_name = op[0] ? op : NULL;
  o->info.is_part_of = kr_config_str(g, KR_CFG_CRAWL_NAME);
  o->info.description = "adaptive-revisit crawl";
  o->info.robots = kr_config_bool(g, KR_CFG_ROBOTS_OBEY) ? "obey" : "ignore";
  o->info.user_agent = kr_config_user_agent(cfg);
  o->info.from = kr_config_str(g, KR_CFG_CRAWL_CONTACT_URL)[0]
                     ? kr_config_str(g, KR_CFG_CRAWL_CONTACT_URL) : NULL;
  o->info.extra = x->extra;
  o->info.nextra = ARRAY_SIZE(x->extra);
}

int kr__warc_open(kr_crawl_t *c, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  if (!kr_config_bool(g, KR_CFG_WARC_ENABLED)) return 0;
  char dir[4096];
  if (dir_of(g, dir, sizeof dir)) {
    snprintf(err, errlen, "crawl.warc-dir: path too long");
    return KR_ECONFIG;
  }
  struct kr_warc *w = kr_xcalloc(1, sizeof *w);
  c->warc = w;
  w->c = c;
  uv_idle_init(&c->loop, &w->idle);
  w->dir = kr_xstrdup(dir);
  w->st = kr_frontier_store(c->frontier);
  settings(w, g);
  uint64_t body = kr_config_size(g, KR_CFG_HTTP_MAX_BODY_BYTES);
  w->raw_max = body > (UINT64_MAX >> 2) ? UINT64_MAX >> 1 : 2 * body + (1u << 20);
  kr_buf_init(&w->block, BLOCK_MAX);
  kr_wheel_entry_init(&w->retry, on_retry);
  w->dns_slots = kr_xcalloc(DNS_SLOTS, sizeof *w->dns_slots);

  /* Leftovers of a crash first: each cut to its last whole record, read
   * from where the store says it was synced. */
  kr_warcfile_mark_t marks[2];
  size_t nmarks = kr_warcsync_marks(w->st, marks);
  kr_warcfile_repair_stats_t rs = {0};
  char e[512] = "";
  int rc = kr_warcfile_repair_dir(dir, marks, nmarks, &rs, e, sizeof e);
  if (rc) {
    snprintf(err, errlen, "%s: repairing WARC files left open: %s", dir, e);
    return KR_EIO;
  }
  w->st_.repaired_files = rs.files;
  if (rs.files)
    KR_LOG(KR_LOG_NOTICE, dir, "repaired %u WARC file(s) left open (%u from the synced offset, "
           "%u empty removed, %" PRIu64 " records checked, %" PRIu64 " bytes cut)", rs.files,
           rs.resumed, rs.removed, rs.records, rs.bytes_cut);

  struct wopts x;
  wopts_fill(w, c, c->cfg, &x);
  w->durability = x.o.durability;
  rc = kr_warcfile_open(&x.o, &w->wf, e, sizeof e);
  if (rc) {
    snprintf(err, errlen, "%s: cannot write WARC files there: %s", dir, e[0] ? e : kr_strerror(rc));
    return rc == KR_EINVAL ? KR_ECONFIG : KR_EIO;
  }
  w->sync = kr_warcsync_new(&c->loop, w->st, on_sync_error, w);
  kr_warcsync_set_file(w->sync, 0, w->wf);
  return 0;
}

/* The processors: the chain table (procs.c) sets data to the writer and
 * leaves them out when WARC writing is off. warc-dns is always there when
 * it is on: a reload may turn warc.write-dns on. */
const kr_processor_t kr_proc_warc_dns = {.name = "warc-dns", .run = dns_run};
const kr_processor_t kr_proc_warc = {.name = "warc",
                                     .run = warc_run,
                                     .on_headers = warc_headers,
                                     .on_body = warc_body,
                                     .held = capture_held,
                                     .cleanup = warc_cleanup};
const kr_processor_t kr_proc_warc_late = {.name = "warc-late", .run = warc_late_run};

/* ---- reload -------------------------------------------------------------------------- */

/* [warc] keys a reload applies: to the next file (the current one is
 * closed) or to the next record. warc.enabled and crawl.warc-dir take a
 * restart. */
static const kr_cfg_key_t file_keys[] = {KR_CFG_WARC_PREFIX,   KR_CFG_WARC_COMPRESS,
                                         KR_CFG_WARC_LEVEL,    KR_CFG_WARC_MAX_SIZE,
                                         KR_CFG_WARC_DURABILITY, KR_CFG_WARC_OPERATOR};
static const kr_cfg_key_t record_keys[] = {KR_CFG_WARC_WRITE_REQUEST, KR_CFG_WARC_WRITE_METADATA,
                                           KR_CFG_WARC_WRITE_DNS, KR_CFG_WARC_WRITE_VOLATILE,
                                           KR_CFG_WARC_RETRY_INTERVAL};

int kr__warc_key_is_live(kr_cfg_key_t k) {
  for (size_t i = 0; i < ARRAY_SIZE(file_keys); i++)
    if (file_keys[i] == k) return 1;
  for (size_t i = 0; i < ARRAY_SIZE(record_keys); i++)
    if (record_keys[i] == k) return 1;
  return 0;
}

int kr__warc_reload_check(const kr_config_t *n, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(n);
  const char *p = kr_config_str(g, KR_CFG_WARC_PREFIX);
  if (kr_config_bool(g, KR_CFG_WARC_ENABLED) && !kr_warcfile_prefix_ok(p)) {
    snprintf(err, errlen, "warc.prefix '%s': 1-64 of A-Z a-z 0-9 . _ -, not starting with '.', "
             "no '..'", p);
    return KR_ECONFIG;
  }
  return 0;
}

/* Append "key old -> new" to b when k differs; 1 when it did. */
static int note_change(kr_buf_t *b, const kr_config_view_t *og, const kr_config_view_t *ng,
                       kr_cfg_key_t k) {
  kr_buf_t x, y;
  kr_buf_init(&x, 1 << 16);
  kr_buf_init(&y, 1 << 16);
  kr_config_format(og, k, &x);
  kr_config_format(ng, k, &y);
  int changed = x.len != y.len || (x.len && memcmp(x.data, y.data, x.len));
  if (changed)
    kr_buf_printf(b, "%s%s %.*s -> %.*s", b->len ? ", " : "", kr_config_key_name(k),
                  (int)x.len, x.data ? x.data : "", (int)y.len, y.data ? y.data : "");
  kr_buf_free(&x);
  kr_buf_free(&y);
  return changed;
}

/* A new file writer with the current configuration's file settings: the
 * old file is closed (synced, renamed) before any record goes to the new
 * one; its records were all written. 0, or -1 (logged; the old stays). */
static int switch_files(struct kr_warc *w) {
  struct wopts x;
  wopts_fill(w, w->c, w->c->cfg, &x);
  kr_warcfile_t *nw = NULL;
  char e[512] = "";
  int rc = kr_warcfile_open(&x.o, &nw, e, sizeof e);
  if (rc) {
    KR_LOG(KR_LOG_ERROR, w->dir, "reload: cannot apply the new WARC file settings (%s): "
           "the current ones stay", e[0] ? e : kr_strerror(rc));
    return -1;
  }
  kr_warcfile_t *ow = w->wf;
  kr_warcsync_set_file(w->sync, 0, nw);
  w->files_before += kr_warcfile_files(ow);
  rc = kr_warcfile_close(ow);
  if (rc) KR_LOG(KR_LOG_ERROR, w->dir, "reload: closing the WARC file: %s", kr_strerror(rc));
  w->wf = nw;
  w->durability = x.o.durability;
  return 0;
}

static void retire_wf2(struct kr_warc *w) {
  if (!w->wf2) return;
  kr_warcsync_set_file(w->sync, 1, NULL);
  w->files_before += kr_warcfile_files(w->wf2);
  int rc = kr_warcfile_close(w->wf2);
  if (rc) KR_LOG(KR_LOG_ERROR, w->dir, "closing the WARC file of large records: %s",
                 kr_strerror(rc));
  w->wf2 = NULL;
}

static void apply_reopen(struct kr_warc *w) {
  w->reopen = 0;
  retire_wf2(w);
}

void kr__warc_reload(kr_crawl_t *c, const kr_config_t *old) {
  struct kr_warc *w = c->warc;
  if (!w || !w->wf) return;
  const kr_config_view_t *og = kr_config_global(old), *ng = kr_config_global(c->cfg);
  kr_buf_t what;
  kr_buf_init(&what, 1 << 16);
  int files = 0, records = 0;
  for (size_t i = 0; i < ARRAY_SIZE(file_keys); i++) files |= note_change(&what, og, ng, file_keys[i]);
  for (size_t i = 0; i < ARRAY_SIZE(record_keys); i++)
    records |= note_change(&what, og, ng, record_keys[i]);
  if (!files && !records) {
    kr_buf_free(&what);
    return;
  }
  settings(w, ng);
  const char *how = "from the next record";
  if (files) {
    how = switch_files(w) ? "from the next record; file settings kept (see above)"
                          : "the current file is closed, the next record begins a new one";
    /* The file of large records: closed now, or after the record being
     * written into it; the next large record opens one with the new
     * settings. */
    if (w->job.f)
      w->reopen = 1;
    else
      retire_wf2(w);
  }
  w->st_.reloads++;
  KR_LOG(KR_LOG_NOTICE, w->dir, "reload: [warc] %.*s; %s%s", (int)what.len, what.data, how,
         w->reopen ? "; the file of large records once its record is written" : "");
  kr_buf_free(&what);
}

static void log_summary(const struct kr_warc *w) {
  const kr_warc_stats_t *s = &w->st_;
  KR_LOG(KR_LOG_NOTICE, w->dir,
         "WARC: %" PRIu64 " records, %" PRIu64 " bytes: %" PRIu64 " responses, %" PRIu64
         " identical-payload and %" PRIu64 " not-modified revisits, %" PRIu64 " volatile stored, %"
         PRIu64 " skipped; %" PRIu64 " fetches given back after write errors",
         s->records, s->bytes, s->responses, s->revisits_identical, s->revisits_not_modified,
         s->volatile_full, s->volatile_skipped, s->deferred);
}

/* The writer's handle, and a record still being written (only when the
 * crawl ends without waiting for its fetches): cut away. */
void kr__warc_detach(kr_crawl_t *c) {
  struct kr_warc *w = c->warc;
  if (!w) return;
  if (w->job.f && w->wf2) kr_warcfile_abort(w->wf2);
  w->job.f = NULL;
  w->qn = 0;
  /* The store closes after this: a sync still running must not reach it
   * (the files' close syncs them inline). */
  if (w->sync) w->st_.syncs = kr_warcsync_syncs(w->sync);
  kr_warcsync_free(w->sync);
  w->sync = NULL;
  if (w->idle.loop && !uv_is_closing((uv_handle_t *)&w->idle))
    uv_close((uv_handle_t *)&w->idle, NULL);
}

void kr__warc_close(kr_crawl_t *c) {
  struct kr_warc *w = c->warc;
  if (!w) return;
  kr__warc_detach(c);
  retire_wf2(w);
  if (!w->wf) return;
  kr_timer_stop(&w->retry);
  /* One last sync before the last commit, then close and rename. */
  int rc = kr_warcfile_close(w->wf);
  w->wf = NULL;
  if (rc) KR_LOG(KR_LOG_ERROR, w->dir, "closing the WARC file: %s", kr_strerror(rc));
  log_summary(w);
}

void kr__warc_free(kr_crawl_t *c) {
  struct kr_warc *w = c->warc;
  if (!w) return;
  kr_warcsync_free(w->sync); /* a sync still running forgets the files */
  w->sync = NULL;
  if (w->wf) {
    kr_timer_stop(&w->retry);
    kr_warcfile_close(w->wf);
  }
  if (w->wf2) {
    if (w->job.f) kr_warcfile_abort(w->wf2);
    kr_warcfile_close(w->wf2);
  }
  free(w->job.buf);
  free(w->q);
  while (w->pool) {
    struct kr_warc_cap *k = w->pool;
    w->pool = k->next;
    cap_free(k);
  }
  kr_buf_free(&w->block);
  free(w->dns_slots);
  free(w->dir);
  free(w);
  c->warc = NULL;
}

void kr__warc_stats(const kr_crawl_t *c, kr_warc_stats_t *out) {
  const struct kr_warc *w = c->warc;
  if (!w) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = w->st_;
  if (w->sync) out->syncs = kr_warcsync_syncs(w->sync);
  out->files = w->files_before + (w->wf ? kr_warcfile_files(w->wf) : 0) +
               (w->wf2 ? kr_warcfile_files(w->wf2) : 0);
  out->current = w->wf ? kr_warcfile_current(w->wf) : NULL;
  out->current_size = w->wf ? kr_warcfile_size(w->wf) : 0;
}
