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
 * body, not two). Nothing is digested for a 304 or a mid-fetch abort (no
 * body: the previous digest stands). Sections: streams, the processor.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"

/* ---- streams ----------------------------------------------------------------- */

static int digest_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_http_resp_t *r = f->resp;
  if (!r || r->status == 304 || f->ad.midfetch_abort) return 0;
  if (f->psha_ready && kr_sha1_reset(&f->psha) == 0) f->ad.pdigesting = 1;
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

void kr__digest_payload(kr_fetch_t *f, const char *p, size_t n) {
  if (f->ad.pdigesting && kr_sha1_update(&f->psha, p, n)) f->ad.pdigesting = 0;
}

static void digest_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  f->digesting = 0;
  f->ad.pdigesting = 0;
  f->ad.strip_on = 0;
}

/* ---- the processor ------------------------------------------------------------- */

static int digest_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_http_resp_t *r = f->resp;
  int body = r && r->status && r->status != 304 && !f->ad.midfetch_abort;
  if (f->ad.pdigesting && body && kr_sha1_final(&f->psha, f->ad.payload_digest) == 0)
    f->ad.has_payload_digest = 1;
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
