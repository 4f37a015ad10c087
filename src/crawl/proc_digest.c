/*
 * The digest processor: two streaming SHA-1s while the body arrives.
 *
 * payload  over the entity body as received, transfer coding removed but
 *          content coding kept (the HTTP client's on_payload stream): the
 *          WARC-Payload-Digest, what crawl.log shows and what the digest
 *          index of URL-agnostic duplicates holds;
 * change   over the decoded content (the chain's body stream): what the
 *          change processor compares with the previous visit's. When
 *          adaptive.digest-strip patterns apply to the URI (its host's
 *          view, adaptive.digest-strip-url), the decoded body is also kept
 *          (up to adaptive.digest-strip-max-size) and the change digest is
 *          computed over it with the volatile sections replaced by a space
 *          (strip.h, the thesis' HTTPContentDigest); a bigger body keeps
 *          the plain digest ("stripSkippedSize"). The archived bytes are
 *          never touched.
 * Without a content coding and without stripping the two are the same
 * bytes: the payload SHA-1 serves as the change digest too (one SHA-1 per
 * body, not two). Then, when the body is not chunked and some processor
 * holds the raw body in memory (the WARC capture; asked through the
 * chain, kr_chain_held, before each chunk), the payload is those raw body
 * bytes (as many as the payload stream brought) and is not streamed at
 * all: it is hashed at the end together with the response record's
 * block, [raw head, body], in one kr_sha1_pair (the two SHA-1 streams
 * interleaved cost little more than one); the block digest is left on
 * the fetch (f->ad) for the WARC writer. Should the holder be about to
 * let go (a spill), the bytes so far are hashed from it and the rest
 * streams as before. Nothing is digested for a 304 or a mid-fetch abort
 * (no body: the previous digest stands). The hash contexts, the strip
 * copy and the stream state are this processor's per-fetch context.
 * Sections: the context, streams, the processor.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"

/* strip_buf's own cap (adaptive.digest-strip-max-size, at most 1 GiB,
 * is the real limit) */
#define STRIP_BUF_CAP ((size_t)1 << 30)
#define STRIP_KEEP (1u << 20) /* strip copies kept by a pooled context */

/* ---- the context ------------------------------------------------------------- */

typedef struct digest_ctx {
  kr_sha1_t sha;                /* change digest, reused across fetches */
  kr_sha1_t psha;               /* payload digest, reused */
  int sha_ready, psha_ready;    /* initialised (once per context) */
  int digesting;                /* sha holds this response's content */
  int pdigesting;               /* psha holds this response's payload */
  int strip_on;                 /* strip rules apply: body kept in strip_buf */
  int strip_over;               /* body outgrew the strip size limit */
  int change_is_payload;        /* no content coding, no strip: one SHA-1 */
  int pdefer;                   /* payload not streamed: the held raw body
                                   is hashed at the end with the block */
  uint64_t pbytes;              /* payload bytes seen */
  kr_buf_t strip_buf;           /* decoded body for digest-strip, reused */
} digest_ctx_t;

static void ctx_init(void *p, void *owner) {
  digest_ctx_t *x = p;
  kr_buf_init(&x->strip_buf, STRIP_BUF_CAP);
  if (kr_sha1_init(&x->sha) == 0) x->sha_ready = 1;
  if (kr_sha1_init(&x->psha) == 0) x->psha_ready = 1;
}

static void ctx_reset(void *p, void *owner) {
  digest_ctx_t *x = p;
  if (x->strip_buf.cap > STRIP_KEEP) {
    kr_buf_free(&x->strip_buf);
    kr_buf_init(&x->strip_buf, STRIP_BUF_CAP);
  }
  kr_buf_reset(&x->strip_buf);
  x->digesting = x->pdigesting = x->strip_on = x->strip_over = 0;
  x->change_is_payload = x->pdefer = 0;
  x->pbytes = 0;
}

static void ctx_free(void *p, void *owner) {
  digest_ctx_t *x = p;
  kr_sha1_free(&x->sha);
  kr_sha1_free(&x->psha);
  kr_buf_free(&x->strip_buf);
}

static size_t ctx_mem(const void *p) { return ((const digest_ctx_t *)p)->strip_buf.cap; }

static const kr_chain_ctx_def_t digest_ctx_def = {.name = "digest",
                                                  .size = sizeof(digest_ctx_t),
                                                  .init = ctx_init,
                                                  .reset = ctx_reset,
                                                  .free = ctx_free,
                                                  .mem = ctx_mem};

/* ---- streams ----------------------------------------------------------------- */

static int digest_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  digest_ctx_t *x = kr_chain_ctx(cf, self);
  const kr_http_resp_t *r = f->resp;
  if (!r || r->status == 304 || f->ad.midfetch_abort) return 0;
  if (x->psha_ready && kr_sha1_reset(&x->psha) == 0) x->pdigesting = 1;
  x->pbytes = 0;
  const kr_hostcfg_t *hc = f->hc;
  if (hc->strip && !f->is_robots) {
    kr_slice_t url = kr_slice(f->cf.url, f->cf.url_len);
    int url_ok = !hc->strip_url ||
                 kr_config_regex_match(c->matcher, hc->strip_url, url.p, url.n) == 1;
    if (url_ok && kr_strip_applies(hc->strip, f->cf.host, url) == 1) {
      x->strip_on = 1;
      kr_buf_reset(&x->strip_buf);
    }
  }
  unsigned want = x->pdigesting ? KR_STREAM_BIT(KR_STREAM_PAYLOAD) : 0;
  if (x->pdigesting && !r->content_encoding.n && !x->strip_on) {
    x->change_is_payload = 1; /* the same bytes: hash them once */
    x->pdefer = !r->chunked;  /* ... with the block, if held */
    return (int)want;
  }
  if (!x->sha_ready || kr_sha1_reset(&x->sha)) return (int)want;
  x->digesting = 1;
  return (int)(want | KR_STREAM_BIT(KR_STREAM_CONTENT));
}

/* The content level: the change digest, and the copy kept for stripping. */
static int content_body(digest_ctx_t *x, const kr_hostcfg_t *hc, const char *p, size_t n) {
  if (x->strip_on && !x->strip_over) {
    size_t max = hc->strip_max;
    if (n > max - x->strip_buf.len || kr_buf_append(&x->strip_buf, p, n)) {
      x->strip_over = 1; /* the plain digest it is: free the copy now */
      kr_buf_free(&x->strip_buf);
      kr_buf_init(&x->strip_buf, STRIP_BUF_CAP);
    }
  }
  if (kr_sha1_update(&x->sha, p, n)) {
    x->digesting = 0;
    return 1;
  }
  return 0;
}

/* Stream the payload from here on, beginning with the so_far bytes the
 * holder of the raw body has. 0 when they are not there (the digest is
 * then lost). */
static int undefer(kr_chain_fetch_t *cf, digest_ctx_t *x, uint64_t so_far) {
  kr_slice_t m;
  x->pdefer = 0;
  if (so_far && (!kr_chain_held(cf, KR_STREAM_RAW, 0, so_far, &m) || m.n < so_far ||
                 kr_sha1_update(&x->psha, m.p, (size_t)so_far))) {
    x->pdigesting = 0;
    return 0;
  }
  return 1;
}

/* The payload level: hashed as it comes, or left to the end while the
 * raw body is held. */
static int payload_body(kr_chain_fetch_t *cf, digest_ctx_t *x, const char *p, size_t n) {
  if (!x->pdigesting) return 1;
  uint64_t so_far = x->pbytes;
  x->pbytes += n;
  if (x->pdefer &&
      (kr_chain_held(cf, KR_STREAM_RAW, so_far, so_far + n, NULL) || !undefer(cf, x, so_far)))
    return 0;
  if (kr_sha1_update(&x->psha, p, n)) x->pdigesting = 0;
  return !x->pdigesting;
}

static int digest_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                       const char *p, size_t n) {
  digest_ctx_t *x = kr_chain_ctx(cf, self);
  if (level == KR_STREAM_PAYLOAD) return payload_body(cf, x, p, n);
  return content_body(x, container_of(cf, kr_fetch_t, cf)->hc, p, n);
}

/* The deferred payload digest: the first pbytes of the held raw body, and
 * the block digest in the same pass. Without a holder no payload came
 * (the first byte would have ended the deferral). */
static void payload_end_deferred(kr_fetch_t *f, digest_ctx_t *x) {
  const kr_http_resp_t *r = f->resp;
  uint64_t n = x->pbytes;
  kr_slice_t m;
  x->pdefer = 0;
  if (!kr_chain_held(&f->cf, KR_STREAM_RAW, 0, n, &m)) {
    if (!n && kr_sha1_final(&x->psha, f->ad.payload_digest) == 0) f->ad.has_payload_digest = 1;
    return;
  }
  if (m.n < n) return; /* bytes the payload saw are not held */
  kr_slice_t pay = kr_slice(m.p, (size_t)n), block[2] = {r->raw_head, m};
  if (kr_sha1_pair(&x->psha, &pay, 1, block, 2, f->ad.payload_digest, f->ad.block_digest))
    return;
  f->ad.has_payload_digest = 1;
  f->ad.has_block_digest = 1;
  f->ad.block_body = m.n;
}

static void payload_end(kr_fetch_t *f, digest_ctx_t *x) {
  if (x->pdigesting) {
    x->pdigesting = 0;
    if (x->pdefer)
      payload_end_deferred(f, x);
    else if (kr_sha1_final(&x->psha, f->ad.payload_digest) == 0)
      f->ad.has_payload_digest = 1;
  }
}

static void digest_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  digest_ctx_t *x = kr_chain_ctx(cf, self);
  x->digesting = 0;
  x->pdigesting = 0;
  x->pdefer = 0;
  x->strip_on = 0;
}

/* ---- the processor ------------------------------------------------------------- */

static int digest_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  digest_ctx_t *x = kr_chain_ctx(cf, self);
  const kr_http_resp_t *r = f->resp;
  int body = r && r->status && r->status != 304 && !f->ad.midfetch_abort;
  if (body) payload_end(f, x);
  x->pdigesting = 0;
  if (x->change_is_payload && f->ad.has_payload_digest) {
    memcpy(f->digest, f->ad.payload_digest, KR_SHA1_LEN);
    f->has_digest = 1;
  }
  if (x->digesting && body) {
    if (x->strip_on && !x->strip_over) {
      kr_strip_result_t sr;
      if (kr_strip_digest(f->hc->strip, &x->sha, f->cf.host, kr_slice(f->cf.url, f->cf.url_len),
                          x->strip_buf.data ? x->strip_buf.data : "", x->strip_buf.len,
                          &sr) == 0) {
        memcpy(f->digest, sr.sha1, KR_SHA1_LEN);
        f->has_digest = 1;
        const char *a = kr_strip_annotation(&sr);
        if (a) kr_fetch_annotate(f, a);
        if (sr.status == KR_STRIP_DONE) c->st.stripped++;
      }
    } else if (kr_sha1_final(&x->sha, f->digest) == 0) {
      f->has_digest = 1;
      if (x->strip_over) kr_fetch_annotate(f, "stripSkippedSize");
    }
  }
  x->digesting = 0;
  x->strip_on = 0;
  return KR_PROC_NEXT;
}

/* A post processor: the payload digest the walk left open when it jumped
 * over the digest phase (an error after the headers), finished over what
 * arrived, for the WARC record written in post. */
static int digest_end_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  payload_end(container_of(cf, kr_fetch_t, cf), kr_chain_ctx(cf, self));
  return KR_PROC_NEXT;
}

const kr_processor_t kr_proc_digest_end = {.name = "digest-end", .run = digest_end_run,
                                           .ctx = &digest_ctx_def};
const kr_processor_t kr_proc_digest = {.name = "digest",
                                       .run = digest_run,
                                       .on_headers = digest_headers,
                                       .on_body = digest_body,
                                       .cleanup = digest_cleanup,
                                       .ctx = &digest_ctx_def};
