/*
 * Validators as change predictors (thesis 6.4 and chapter 8): what a visit
 * does with the ETag and Last-Modified an earlier visit left.
 *
 * validators (a fetch-phase processor before the request) lets the host's
 * validator trust decide the visit's mode (validators.h) and leaves it on
 * the fetch (f->ad.vt_mode; f->ad.conditional when the http processor may
 * send the stored validators):
 * USE sends If-None-Match / If-Modified-Since and lets the mid-fetch check
 * abort; SAMPLE, PROBATION and DISTRUSTED download in full so the digest
 * can check the prediction.
 *
 * The prediction checked is what USE mode would have acted on: "no
 * change" when the configured scheme predicts none (a mid-fetch abort) or
 * when, with conditional requests on, the server would have answered 304
 * (If-None-Match by weak comparison when an ETag was stored, else
 * If-Modified-Since). So a server with ETags only, which scheme 4 never
 * trusts mid-fetch, still earns conditional requests, and one whose 304s
 * would hide changes is caught.
 *
 * midfetch (a stream-only processor of the fetch phase) at headers
 * complete: a 304 is an unchanged visit ("notModified"); a 2xx has its
 * validators compared with the stored ones under the configured Table 1
 * scheme and ETag comparison, and in USE mode a "no change" prediction
 * stops the download ("midFetchAbort": the http processor returns
 * KR_HTTP_ABORT to the client). Either way the prediction is kept for the
 * change processor, which records it in the host's trust once the
 * content state is known. Sections: before the request, at the headers.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"

/* ---- before the request ------------------------------------------------------ */

static int validators_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  const kr_curi_t *u = f->curi;
  f->ad.vt_mode = -1;
  f->ad.conditional = 0;
  if (!u || f->is_robots || u->visits == 0 || !u->host) return KR_PROC_NEXT;
  if (!(u->etag && u->etag_len) && u->last_modified <= 0)
    return KR_PROC_NEXT; /* nothing to compare */
  kr_vtrust_mode_t m = kr_vtrust_mode(kr_frontier_host_vtrust(u->host), &f->hc->vtrust, u->fp,
                                      u->visits, (int64_t)kr_crawl_now(f->crawl));
  f->ad.vt_mode = (int)m;
  f->ad.conditional = m == KR_VTRUST_USE;
  return KR_PROC_NEXT;
}

/* ---- at the headers ------------------------------------------------------------ */

/* Would a conditional request have got a 304 (RFC 9110 13.2.2)? */
static int would_304(const kr_curi_t *u, const kr_http_resp_t *r) {
  if (u->etag && u->etag_len)
    return kr_validators_etag_cmp(kr_slice(u->etag, u->etag_len), r->etag, KR_ETAG_WEAK) ==
           KR_VAL_SAME;
  if (u->last_modified <= 0 || !r->last_modified.n) return 0;
  int64_t lm;
  if (kr_validators_date_parse(r->last_modified.p, r->last_modified.n, &lm)) return 0;
  return lm <= u->last_modified;
}

static int midfetch_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  const kr_http_resp_t *r = f->resp;
  const kr_curi_t *u = f->curi;
  (void)self;
  if (!r || !u || f->ad.vt_mode < 0) return 0;
  if (r->status == 304) {
    /* Only a conditional request gets one: the server compared for us. */
    f->ad.val_checked = 1;
    f->ad.val_change = 0;
    f->ad.content_set = 1;
    f->ad.content = KR_CONTENT_UNCHANGED;
    kr_fetch_annotate(f, "notModified");
    return 0;
  }
  if (r->status < 200 || r->status >= 300) return 0;
  const kr_hostcfg_t *hc = f->hc;
  kr_val_result_t vr;
  kr_validators_check(hc->vscheme, hc->etag_mode, kr_slice(u->etag ? u->etag : "", u->etag_len),
                      r->etag, u->last_modified, r->last_modified, &vr);
  f->ad.val_checked = 1;
  f->ad.val_change = vr.change && !(hc->conditional && would_304(u, r));
  if (!vr.change && hc->midfetch && f->ad.vt_mode == KR_VTRUST_USE) {
    f->ad.midfetch_abort = 1;
    f->ad.content_set = 1;
    f->ad.content = KR_CONTENT_UNCHANGED;
    kr_fetch_annotate(f, "midFetchAbort");
  }
  return 0;
}

const kr_processor_t kr_proc_validators = {.name = "validators", .run = validators_run};
const kr_processor_t kr_proc_midfetch = {.name = "midfetch", .on_headers = midfetch_headers};
