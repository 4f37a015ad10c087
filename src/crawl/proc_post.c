/*
 * Post-phase processors: what a fetch amounts to.
 *
 * outcome        build the outcome (unless prefetch decided it already):
 *                a response of any status is a visit (429/503 back the
 *                host off instead; a robots.txt answering 429 or 5xx is
 *                retryable, counted); no response is retryable, except for
 *                errors that will not change (bad URL, malformed
 *                response), which fail; a fetch cancelled by a shutdown
 *                goes back untouched.
 * revisit        (proc_wait.c) the wait, the history and what a changed
 *                page or feed pulls forward.
 * finish         one crawl.log line, then the frontier gets the outcome
 *                and the extracted links in one call (one transaction).
 * Their order among the other post processors (robots-update and
 * robots-sitemaps before, extract-end before finish, feed-hints after) is
 * the chain table's (procs.c).
 * The via column needs the referrer's URL while the frontier keeps only
 * its fingerprint: a direct-mapped cache of recent pages answers most,
 * the store the rest. Sections: via URLs, the outcome, crawl.log, the
 * processors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"

#define VIA_SLOTS 4096 /* power of two */

/* ---- via URLs -------------------------------------------------------------------- */

struct kr_via_slot {
  uint64_t fp;
  size_t len;
  char *url;
};

void kr__via_remember(kr_crawl_t *c, uint64_t fp, const char *url, size_t len) {
  if (!c->via) {
    c->via = kr_xcalloc(VIA_SLOTS, sizeof *c->via);
    c->via_cap = VIA_SLOTS;
  }
  struct kr_via_slot *s = &c->via[fp & (c->via_cap - 1)];
  if (s->url && s->fp == fp) return;
  free(s->url);
  s->url = kr_xstrndup(url, len);
  s->len = len;
  s->fp = fp;
}

void kr__via_free(kr_crawl_t *c) {
  for (size_t i = 0; i < c->via_cap; i++) free(c->via[i].url);
  free(c->via);
  c->via = NULL;
  c->via_cap = 0;
}

kr_slice_t kr__via_url(kr_crawl_t *c, uint64_t fp) {
  if (!fp) return kr_slice("", 0);
  if (c->via) {
    struct kr_via_slot *s = &c->via[fp & (c->via_cap - 1)];
    if (s->url && s->fp == fp) return kr_slice(s->url, s->len);
  }
  kr_uri_row_t row;
  if (kr_store_uri_get(kr_frontier_store(c->frontier), fp, &row) == 1 && row.url) {
    kr__via_remember(c, fp, row.url, row.url_len);
    struct kr_via_slot *s = &c->via[fp & (c->via_cap - 1)];
    return kr_slice(s->url, s->len);
  }
  return kr_slice("", 0);
}

/* ---- the outcome ------------------------------------------------------------------- */

/* Errors a later try will meet again. */
static int is_permanent(int err) {
  switch (err) {
  case KR_EURL:
  case KR_ESCHEME:
  case KR_EINVAL:
  case KR_EPROTO:
  case KR_EHEADER_TOO_BIG:
  case KR_EBODY_TOO_BIG:
  case KR_ERATIO:
  case KR_EDECODE:
  case KR_EADDR_REFUSED: /* the policy holds until the operator changes it */
    return 1;
  default:
    return 0;
  }
}

static int is_dns(int err) {
  return err == KR_EDNS_NXDOMAIN || err == KR_EDNS_NODATA || err == KR_EDNS_TIMEOUT ||
         err == KR_EDNS_FAIL;
}

static int is_host_error(int err) {
  return is_dns(err) || err == KR_ECONNREFUSED || err == KR_EUNREACH ||
         err == KR_ECONNECT_TIMEOUT || err == KR_ETLS || err == KR_ETLS_VERIFY;
}

/* Last-Modified (IMF-fixdate) in epoch seconds, 0 when unreadable. */
static int64_t http_date(kr_slice_t s) {
  char buf[64];
  if (!s.p || s.n == 0 || s.n >= sizeof buf) return 0;
  memcpy(buf, s.p, s.n);
  buf[s.n] = '\0';
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end) return 0;
  time_t t = timegm(&tm);
  return t > 0 ? (int64_t)t : 0;
}

static void build_outcome(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  kr_outcome_t *o = &f->outcome;
  const kr_http_resp_t *r = f->resp;
  const kr_curi_t *u = f->curi;
  int err = f->http_err ? f->http_err : f->cf.err;
  o->fetch_ms = f->fetch_duration_ms;
  o->bytes = f->raw_bytes;
  if (err == KR_ECANCELED && c->stopping) {
    f->disp = KR_DISP_DEFER;
    return;
  }
  if (!r || !r->status) {
    if (!err) err = KR_EIO;
    o->kind = is_permanent(err) ? KR_OUTCOME_FAILED : KR_OUTCOME_RETRY;
    o->status = err;
    o->no_contact = is_dns(err) || err == KR_EADDR_REFUSED;
    o->host_error = is_host_error(err);
    f->log_status = kr_crawllog_status_of_error(err);
    kr_fetch_annotate(f, kr_err_name(err));
    return;
  }
  o->status = r->status;
  f->log_status = r->status;
  if (r->truncated || f->cut) kr_fetch_annotate(f, "lenTrunc");
  if (err && err != KR_ECANCELED) kr_fetch_annotate(f, kr_err_name(err));
  if (r->status == 429 || r->status >= 500) {
    kr_slice_t ra = kr_http_resp_header(r, "Retry-After");
    uint64_t d;
    if (ra.p && kr_frontier_parse_retry_after(ra.p, ra.n, kr_crawl_now(c), &d) == 0)
      o->retry_after_ms = d;
  }
  if (f->is_robots && (r->status == 429 || r->status >= 500)) {
    /* robots.txt unavailable: a retry (when the server says, after its
     * Retry-After), so a robots.txt that never comes back runs out of
     * retries and fails with its URIs (proc_prefetch.c) instead of
     * backing the host off forever; the URIs failed with it come back
     * with the host's back-off (proc_prefetch.c, frontier.c). */
    o->kind = KR_OUTCOME_RETRY;
    return;
  }
  if (r->status == 429 || r->status == 503) {
    o->kind = KR_OUTCOME_BACKOFF;
    return;
  }
  o->retry_after_ms = 0;
  o->kind = KR_OUTCOME_SUCCESS;
  /* robots.txt is fetched again when its rules expire */
  if (f->is_robots) o->wait_ms = f->hc->robots_expiry_ms;
  if (r->content_type.n) {
    o->content_type = r->content_type.p;
    o->content_type_len = r->content_type.n;
  }
  /* the change digest is what the next visit compares with */
  if (f->has_digest) {
    o->digest = f->digest;
    o->digest_len = KR_SHA1_LEN;
  }
  (void)u;
  o->content = f->ad.content == KR_CONTENT_UNCHANGED ? 0
               : f->ad.content == KR_CONTENT_CHANGED ? 1
                                                     : 2;
  if (r->etag.n) {
    o->etag = r->etag.p;
    o->etag_len = r->etag.n;
  }
  o->last_modified = http_date(r->last_modified);
}

/* ---- crawl.log ---------------------------------------------------------------------- */

/* Column 3 as Heritrix's curi.getContentLength() for HTTP: the response
 * body as it came over the wire after the head (transfer and content
 * codings kept: with warc.chunked = keep the bytes after the head in the
 * WARC response record); 0
 * for a 304 and for a mid-fetch abort (Heritrix chops an aborted body at
 * its start); "-" without a response. */
static int64_t log_size(const kr_fetch_t *f) {
  const kr_http_resp_t *r = f->resp;
  if (!r || !r->status) return -1;
  if (f->ad.midfetch_abort || f->raw_seen < r->raw_head.n) return 0;
  return (int64_t)(f->raw_seen - r->raw_head.n);
}

/* Column 10: the payload digest (WARC-Payload-Digest); for a 304 or a
 * mid-fetch abort, which have no body, the one carried forward from the
 * stored original (as the revisit record does; Heritrix writes the SHA-1
 * of the empty body there); else "-". */
static kr_slice_t log_digest(const kr_fetch_t *f, char label[KR_SHA1_LABEL_SIZE]) {
  const uint8_t *d = f->ad.content_set && f->ad.has_prior_digest ? f->ad.prior_digest
                     : f->ad.has_payload_digest                  ? f->ad.payload_digest
                     : f->has_digest                             ? f->digest
                                                                 : NULL;
  if (!d) return kr_slice("", 0);
  kr_sha1_label(d, label);
  return kr_slice_cstr(label);
}

static void write_log(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  const kr_http_resp_t *r = f->resp;
  const kr_curi_t *u = f->curi;
  char digest[KR_SHA1_LABEL_SIZE];
  kr_crawllog_entry_t e;
  memset(&e, 0, sizeof e);
  e.log_ms = kr_crawl_now(c);
  e.status = f->log_status;
  e.size = log_size(f);
  e.uri = kr_slice(u->url, u->url_len);
  e.hops = kr_slice(u->hop_path, u->hop_len);
  e.via = kr__via_url(c, u->via);
  /* no response or no Content-Type header: "unknown" (Heritrix's default
   * and its setContentType(null)); an empty one: "no-type" */
  e.mime = r && r->status && kr_http_resp_header(r, "Content-Type").p ? r->content_type
                                                                      : kr_slice(NULL, 0);
  e.worker = f->worker;
  e.fetch_ms = f->fetch_start_ms;
  e.duration_ms = f->fetch_duration_ms;
  e.digest = log_digest(f, digest);
  e.annotations = f->annot;
  e.n_annotations = f->nannot;
  int rc = kr_crawllog_write(c->log, &e);
  if (rc == KR_EIO) KR_LOG(KR_LOG_WARN, kr_crawllog_path(c->log), "write failed");
}

/* ---- the processors ------------------------------------------------------------------- */

static int outcome_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  if (f->curi && !f->decided) build_outcome(f);
  return KR_PROC_NEXT;
}

static int finish_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!f->curi) return KR_PROC_NEXT; /* handed back already */
  if (f->links_dropped) kr_fetch_annotate(f, "links-capped");
  if (f->disp == KR_DISP_FINISH) {
    write_log(f);
    if (f->nlinks) kr__via_remember(c, f->curi->fp, f->curi->url, f->curi->url_len);
  }
  kr__fetch_complete(f);
  return KR_PROC_NEXT;
}

const kr_processor_t kr_proc_outcome = {.name = "outcome", .run = outcome_run};
const kr_processor_t kr_proc_finish = {.name = "finish", .run = finish_run};
