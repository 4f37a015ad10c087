/*
 * Fetch-phase processors: the HTTP exchange and the content digest.
 *
 * http    one request through the HTTP client (keep-alive pool, DNS,
 *         limits); conditional when an earlier visit left validators and
 *         http.conditional-requests is on. The processor is ASYNC: the
 *         client's on_done resumes the chain. While the response arrives
 *         the headers and every content chunk go to the chain's stream
 *         hooks (digest, extractors) without a copy. Redirects are not
 *         followed (the extractor schedules Location as an R hop), except
 *         for robots.txt, which RFC 9309 wants followed for at least five
 *         hops: those are fetched here, inline, and the body of the last
 *         one is kept (up to robots.max-size) for the post phase.
 * The client's three streams become the chain's one byte stream, each
 * level handed to the processors subscribed to it (chain.h): raw (the
 * WARC capture), payload (the payload digest), content (the change
 * digest, stripping, the extractors). When the midfetch processor found
 * the validators unchanged at the headers (f->ad.midfetch_abort), the
 * client is told to abort.
 * Sections: HTTP callbacks, the http processor.
 */
#include <stdio.h>
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"

#define ROBOTS_MAX_REDIRECTS 5

static const kr_http_cbs_t cbs;

/* ---- HTTP callbacks ------------------------------------------------------------ */

static int follows_redirect(const kr_fetch_t *f, const kr_http_resp_t *r) {
  return f->is_robots && r->status >= 300 && r->status < 400 && r->location.n &&
         f->redirects < ROBOTS_MAX_REDIRECTS && !f->crawl->stopping;
}

static int on_headers(kr_http_fetch_t *hf, const kr_http_resp_t *r) {
  kr_fetch_t *f = kr_http_fetch_data(hf);
  f->resp = r;
  if (follows_redirect(f, r)) return KR_HTTP_ABORT; /* next hop from on_done */
  f->cf.content_type = r->content_type;
  kr_chain_headers(&f->cf);
  return f->ad.midfetch_abort ? KR_HTTP_ABORT : KR_HTTP_CONTINUE;
}

static int on_payload(kr_http_fetch_t *hf, const char *p, size_t n) {
  kr_fetch_t *f = kr_http_fetch_data(hf);
  if (kr_chain_wants(&f->cf, KR_STREAM_PAYLOAD)) kr_chain_body(&f->cf, KR_STREAM_PAYLOAD, p, n);
  return 0;
}

static int on_raw(kr_http_fetch_t *hf, const char *p, size_t n) {
  kr_fetch_t *f = kr_http_fetch_data(hf);
  f->raw_seen += n;
  if (kr_chain_wants(&f->cf, KR_STREAM_RAW)) kr_chain_body(&f->cf, KR_STREAM_RAW, p, n);
  return 0;
}

static int on_content(kr_http_fetch_t *hf, const char *p, size_t n) {
  kr_fetch_t *f = kr_http_fetch_data(hf);
  if (f->is_robots) {
    size_t room = f->body.max - f->body.len;
    if (n > room) {
      /* The rest would be ignored: a 100 MB robots.txt is not downloaded
       * to max-body-bytes (or for timeout-total) to parse 500 KiB of it. */
      kr_buf_append(&f->body, p, room);
      kr_chain_body(&f->cf, KR_STREAM_CONTENT, p, room);
      f->cut = 1;
      return 1;
    }
    kr_buf_append(&f->body, p, n);
  }
  kr_chain_body(&f->cf, KR_STREAM_CONTENT, p, n);
  return 0;
}

/* robots.txt answered with a redirect: fetch the Location. 0 when the next
 * exchange started (or failed and the chain was resumed), -1 to take this
 * response as the final one. */
static int robots_next_hop(kr_fetch_t *f, kr_http_fetch_t *hf, const kr_http_resp_t *r) {
  kr_crawl_t *c = f->crawl;
  const char *cur = kr_http_fetch_url(hf);
  kr_url_t *base = NULL, *next = NULL;
  if (kr_url_parse(cur, strlen(cur), NULL, &base)) return -1;
  int rc = kr_url_parse(r->location.p, r->location.n, base, &next);
  kr_url_free(base);
  if (rc) return -1;
  if (!kr_url_is_http(next)) {
    kr_url_free(next);
    return -1;
  }
  KR_LOG(KR_LOG_DEBUG, f->cf.url, "robots.txt redirected to %s", kr_url_href(next));
  f->redirects++;
  kr_http_fetch_release(hf);
  f->http = NULL;
  f->resp = NULL;
  f->raw_seen = 0;
  kr_buf_reset(&f->body);
  kr_http_req_t req = {.opts = &f->hc->http};
  rc = kr_http_fetch_start(c->http, next, &req, &cbs, f, &f->http);
  kr_url_free(next);
  if (rc) {
    f->http = NULL;
    f->http_err = rc;
    f->fetch_duration_ms = kr_crawl_now(c) - f->fetch_start_ms;
    kr_chain_resume(&f->cf, rc);
  }
  return 0;
}

static void on_done(kr_http_fetch_t *hf, int err) {
  kr_fetch_t *f = kr_http_fetch_data(hf);
  kr_crawl_t *c = f->crawl;
  const kr_http_resp_t *r = kr_http_fetch_resp(hf);
  /* The request went out once a setup slot at the server's address was
   * free (http.setups-per-address): the politeness delay, drawn from the
   * duration, and the WARC-Date leave the wait out. */
  if (!f->redirects) f->fetch_start_ms += r->timing.queued_us / 1000;
  f->raw_bytes += r->raw_bytes;
  c->st.bytes += r->raw_bytes;
  if (err == 0 && follows_redirect(f, r) && robots_next_hop(f, hf, r) == 0) return;
  f->http_err = err;
  if (r->status && err != KR_ECANCELED) {
    /* Whole or cut short (a timeout, a reset in the body): a response,
     * logged with its status and counted as a document by the limits. */
    f->resp = r;
    c->st.fetched++;
  } else if (err != KR_ECANCELED) {
    c->st.fetch_errors++;
    if (err == KR_EADDR_REFUSED) c->st.address_refused++;
  }
  f->fetch_duration_ms = kr_crawl_now(c) - f->fetch_start_ms;
  kr__fetch_resume(f, err < 0 ? err : 0);
}

static const kr_http_cbs_t cbs = {
    .on_headers = on_headers,
    .on_raw = on_raw,
    .on_payload = on_payload,
    .on_content = on_content,
    .on_done = on_done,
};

/* ---- the http processor --------------------------------------------------------- */

/* If-Modified-Since as sent: it must outlive the request's start. */
typedef struct fetch_ctx {
  char ims[40];
} fetch_ctx_t;

static const kr_chain_ctx_def_t fetch_ctx_def = {.name = "http", .size = sizeof(fetch_ctx_t)};

static int http_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  fetch_ctx_t *x = kr_chain_ctx(cf, self);
  kr_http_req_t req;
  memset(&req, 0, sizeof req);
  req.opts = &f->hc->http; /* the host's [http] settings */
  const kr_curi_t *u = f->curi;
  /* validator trust decided (the validators processor, proc_midfetch.c) */
  if (f->ad.conditional && f->hc->conditional) {
    if (u->etag && u->etag_len) req.if_none_match = u->etag;
    if (u->last_modified > 0) {
      kr_validators_date_format(u->last_modified, x->ims);
      req.if_modified_since = x->ims;
    }
    f->ad.conditional_sent = req.if_none_match || req.if_modified_since;
  }
  f->fetch_start_ms = kr_crawl_now(c);
  int rc = kr_http_fetch_start(c->http, f->url, &req, &cbs, f, &f->http);
  if (rc == KR_EINVAL && (req.if_none_match || req.if_modified_since)) {
    /* A validator a server sent that cannot go back in a header. */
    kr_fetch_annotate(f, "bad-validator");
    f->ad.conditional_sent = 0;
    f->ad.vt_mode = -1; /* nothing to compare against at the headers */
    kr_http_req_t plain = {.opts = &f->hc->http};
    rc = kr_http_fetch_start(c->http, f->url, &plain, &cbs, f, &f->http);
  }
  if (rc) {
    f->http = NULL;
    f->http_err = rc;
    c->st.fetch_errors++;
    return rc;
  }
  return KR_PROC_ASYNC;
}

const kr_processor_t kr_proc_http = {.name = "http", .run = http_run, .ctx = &fetch_ctx_def};
