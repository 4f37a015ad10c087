/*
 * Validators as change predictors (thesis 6.4 and chapter 8): what a visit
 * does with the ETag and Last-Modified an earlier visit left.
 *
 * Before the request (kr__adapt_before_request, from the http processor)
 * the host's validator trust decides the visit's mode (validators.h):
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

/* ---- before the request ------------------------------------------------------ */

int kr__adapt_before_request(kr_fetch_t *f) {
  const kr_curi_t *u = f->curi;
  f->ad.vt_mode = -1;
  if (!u || f->is_robots || u->visits == 0 || !u->host) return 0;
  if (!(u->etag && u->etag_len) && u->last_modified <= 0) return 0; /* nothing to compare */
  kr_vtrust_mode_t m = kr_vtrust_mode(kr_frontier_host_vtrust(u->host), &f->hc->vtrust, u->fp,
                                      u->visits, (int64_t)kr_crawl_now(f->crawl));
  f->ad.vt_mode = (int)m;
  return m == KR_VTRUST_USE;
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

void kr__proc_midfetch_register(kr_crawl_t *c) {
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "midfetch", .phase = KR_PHASE_FETCH,
                                          .on_headers = midfetch_headers});
}
