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
 * body, not two). Then, when the body is not chunked and the WARC writer
 * captures it, the payload is the captured body (as many bytes as the
 * payload stream brought) and is not streamed at all: while the capture keeps it in memory
 * (kr__warc_holds, checked before each chunk) it is hashed at the end
 * together with the response record's block, [raw head, body], in one
 * kr_sha1_pair (the two SHA-1 streams interleaved cost little more than
 * one); the block digest goes to the writer in f->ad. Should the capture
 * be about to spill, the bytes so far are hashed from it and the rest
 * streams as before. Nothing is digested for a 304 or a mid-fetch abort
 * (no body: the previous digest stands). Sections: streams, the processor.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "proc_warc.h"

/* ---- streams ----------------------------------------------------------------- */

static int digest_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_http_resp_t *r = f->resp;
  if (!r || r->status == 304 || f->ad.midfetch_abort) return 0;
  if (f->psha_ready && kr_sha1_reset(&f->psha) == 0) f->ad.pdigesting = 1;
  f->ad.pbytes = 0;
  const kr_hostcfg_t *hc = f->hc;
  if (hc->strip && !f->is_robots) {
    kr_slice_t url = kr_slice(f->cf.url, f->cf.url_len);
    int url_ok = !hc->strip_url ||
                 kr_config_regex_match(c->matcher, hc->strip_url, url.p, url.n) == 1;
    if (url_ok && kr_strip_applies(hc->strip, f->cf.host, url) == 1) {
      f->ad.strip_on = 1;
      kr_buf_reset(&f->strip_buf);
    }
  }
  if (f->ad.pdigesting && !r->content_encoding.n && !f->ad.strip_on) {
    f->ad.change_is_payload = 1; /* the same bytes: hash them once */
    f->ad.pdefer = !r->chunked;  /* ... with the block, if captured */
    return 0;
  }
  if (!f->sha_ready || kr_sha1_reset(&f->sha)) return 0;
  f->digesting = 1;
  return 1;
}

static int digest_body(kr_chain_fetch_t *cf, kr_processor_t *self, const char *p, size_t n) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  if (f->ad.strip_on && !f->ad.strip_over) {
    size_t max = f->hc->strip_max;
    if (n > max - f->strip_buf.len || kr_buf_append(&f->strip_buf, p, n)) {
      f->ad.strip_over = 1; /* the plain digest it is: free the copy now */
      kr_buf_free(&f->strip_buf);
      kr_buf_init(&f->strip_buf, KR_STRIP_BUF_CAP);
    }
  }
  if (kr_sha1_update(&f->sha, p, n)) {
    f->digesting = 0;
    return 1;
  }
  return 0;
}

/* Stream the payload from here on, beginning with the so_far bytes the
 * capture holds. 0 when they are not there (the digest is then lost). */
static int undefer(kr_fetch_t *f, uint64_t so_far) {
  kr_slice_t m;
  f->ad.pdefer = 0;
  if (so_far && (!kr__warc_mem_body(f, &m) || m.n < so_far ||
                 kr_sha1_update(&f->psha, m.p, (size_t)so_far))) {
    f->ad.pdigesting = 0;
    return 0;
  }
  return 1;
}

void kr__digest_payload(kr_fetch_t *f, const char *p, size_t n) {
  if (!f->ad.pdigesting) return;
  uint64_t so_far = f->ad.pbytes;
  f->ad.pbytes += n;
  if (f->ad.pdefer && (kr__warc_holds(f, so_far, n) || !undefer(f, so_far))) return;
  if (kr_sha1_update(&f->psha, p, n)) f->ad.pdigesting = 0;
}

/* The deferred payload digest: the first pbytes of the capture, and the
 * block digest in the same pass. Without a capture no payload came (the
 * first byte would have ended the deferral). */
static void payload_end_deferred(kr_fetch_t *f) {
  const kr_http_resp_t *r = f->resp;
  uint64_t n = f->ad.pbytes;
  kr_slice_t m;
  f->ad.pdefer = 0;
  if (!kr__warc_mem_body(f, &m)) {
    if (!n && kr_sha1_final(&f->psha, f->ad.payload_digest) == 0) f->ad.has_payload_digest = 1;
    return;
  }
  if (m.n < n) return; /* bytes the payload saw are not in the capture */
  kr_slice_t pay = kr_slice(m.p, (size_t)n), block[2] = {r->raw_head, m};
  if (kr_sha1_pair(&f->psha, &pay, 1, block, 2, f->ad.payload_digest, f->ad.block_digest))
    return;
  f->ad.has_payload_digest = 1;
  f->ad.has_block_digest = 1;
  f->ad.block_body = m.n;
}

int kr__digest_payload_end(kr_fetch_t *f) {
  if (f->ad.pdigesting) {
    f->ad.pdigesting = 0;
    if (f->ad.pdefer)
      payload_end_deferred(f);
    else if (kr_sha1_final(&f->psha, f->ad.payload_digest) == 0)
      f->ad.has_payload_digest = 1;
  }
  return f->ad.has_payload_digest;
}

static void digest_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  f->digesting = 0;
  f->ad.pdigesting = 0;
  f->ad.pdefer = 0;
  f->ad.strip_on = 0;
}

/* ---- the processor ------------------------------------------------------------- */

static int digest_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_http_resp_t *r = f->resp;
  int body = r && r->status && r->status != 304 && !f->ad.midfetch_abort;
  if (body) kr__digest_payload_end(f);
  f->ad.pdigesting = 0;
  if (f->ad.change_is_payload && f->ad.has_payload_digest) {
    memcpy(f->digest, f->ad.payload_digest, KR_SHA1_LEN);
    f->has_digest = 1;
  }
  if (f->digesting && body) {
    if (f->ad.strip_on && !f->ad.strip_over) {
      kr_strip_result_t sr;
      if (kr_strip_digest(f->hc->strip, &f->sha, f->cf.host, kr_slice(f->cf.url, f->cf.url_len),
                          f->strip_buf.data ? f->strip_buf.data : "", f->strip_buf.len,
                          &sr) == 0) {
        memcpy(f->digest, sr.sha1, KR_SHA1_LEN);
        f->has_digest = 1;
        const char *a = kr_strip_annotation(&sr);
        if (a) kr_fetch_annotate(f, a);
        if (sr.status == KR_STRIP_DONE) c->st.stripped++;
      }
    } else if (kr_sha1_final(&f->sha, f->digest) == 0) {
      f->has_digest = 1;
      if (f->ad.strip_over) kr_fetch_annotate(f, "stripSkippedSize");
    }
  }
  f->digesting = 0;
  f->ad.strip_on = 0;
  return KR_PROC_NEXT;
}

void kr__proc_digest_register(kr_crawl_t *c) {
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "digest",
                                          .phase = KR_PHASE_DIGEST,
                                          .run = digest_run,
                                          .on_headers = digest_headers,
                                          .on_body = digest_body,
                                          .cleanup = digest_cleanup});
}
