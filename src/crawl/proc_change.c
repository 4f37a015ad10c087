/*
 * The change processor (thesis 6.3.1, the ChangeEvaluator): the content
 * state of a visit, its counters, what validators and the digest index
 * make of it.
 *
 * Content state: decided already before the body (a 304, a mid-fetch
 * abort): unchanged. Otherwise, with a change digest of a complete body:
 * the first digest of the URI is a new version (changed), then changed or
 * unchanged against the stored one. Anything else (no response, a body
 * cut by an error) is unknown. visits and versions are counted as the
 * frontier will store them (a first visit is version 1).
 *
 * An unchanged URI skips extraction (KR_PROC_SKIP_TO_WRITE: the write
 * phase still records the visit, as a revisit) and the links its body
 * already gave the streaming extractors are dropped: they are the ones
 * its last version had. crawl.log says "unchanged" when the digest (not a
 * 304 or an abort, which say so themselves) decided it, after Heritrix's
 * "duplicate:server-not-modified" or "duplicate:digest" (see
 * annotate_revisit).
 *
 * Validator trust: when stored and current validators were compared
 * (midfetch), the prediction and what the digest says go into the host's
 * kr_vtrust_t (validators.h); a miss ("unchanged" predicted, the content
 * changed) is annotated "validatorMiss" and may make the host distrusted.
 *
 * URL-agnostic duplicates: a changed 2xx payload whose payload digest the
 * store's index already holds under another URI is an identical-payload
 * revisit of that URI ("duplicate:digest", as Heritrix's
 * ContentDigestHistoryLoader says it, first of the line's; refers-to URI
 * and date are kept on the fetch for the WARC writer); an unknown one is
 * added to the index, or, with WARC files, noted as unknown here
 * (dup_miss: a cluster's shared index may know it, clusterdedup.c).
 * Sections: trust, duplicates, revisits in crawl.log, the processor.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"

/* ---- trust ------------------------------------------------------------------- */

static void record_trust(kr_fetch_t *f, kr_content_t digest_state) {
  kr_crawl_t *c = f->crawl;
  kr_hostq_t *h = f->curi->host;
  kr_vtrust_t vt = *kr_frontier_host_vtrust(h);
  uint64_t misses = vt.misses, distrusts = vt.distrusts;
  int64_t now = (int64_t)kr_crawl_now(c);
  kr_vtrust_record(&vt, &f->hc->vtrust, f->ad.val_change, digest_state, now);
  if (vt.misses > misses) {
    c->st.vtrust_misses++;
    kr_fetch_annotate(f, "validatorMiss");
  }
  if (vt.distrusts > distrusts)
    KR_LOG(KR_LOG_NOTICE, kr_frontier_host_name(h),
           "validators said unchanged while the content changed: not trusted for %lld s",
           (long long)(f->hc->vtrust.distrust_ms / 1000));
  uint32_t run = kr_frontier_host_vtrust(h)->confirm_run;
  kr_frontier_host_set_vtrust(c->frontier, h, &vt);
  /* the run sets the share sampled: part of the learned state */
  if (vt.confirm_run != run) kr__adapt_host_touch(c, h, f->hc->est.x_min);
}

/* ---- duplicates ----------------------------------------------------------------- */

/* f's payload was stored under ref's URI before. */
static void note_duplicate(kr_fetch_t *f, const kr_store_digest_t *ref) {
  const char *d = ref->url ? kr_arena_strndup(&f->arena, ref->url, ref->url_len) : NULL;
  f->ad.dup_url = d ? d : "";
  f->ad.dup_date = ref->date;
  f->crawl->st.duplicates++;
  kr_fetch_annotate_first(f, "duplicate:digest");
}

/* With WARC files, their originals name every archived payload by digest
 * (the WARC writer adds this one's after this processor): the digest
 * index would only repeat them, 46 bytes per URI. Without, the index. */
static void check_duplicate(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  const kr_http_resp_t *r = f->resp;
  if (!kr_config_bool(kr_config_global(c->cfg), KR_CFG_ADAPTIVE_DEDUPE)) return;
  if (!f->ad.has_payload_digest || r->status < 200 || r->status >= 300 || !r->payload_bytes)
    return;
  kr_store_t *st = kr_frontier_store(c->frontier);
  kr_store_digest_t ref;
  int rc;
  if (c->warc) {
    kr_original_t o = {0};
    rc = kr_store_original_find(st, f->ad.payload_digest, KR_SHA1_LEN, &o);
    ref = (kr_store_digest_t){.fp = o.ofp, .date = o.date, .url = o.url, .url_len = o.url_len};
  } else {
    rc = kr_store_digest_get(st, f->ad.payload_digest, KR_SHA1_LEN, &ref);
  }
  if (rc == 1 && ref.fp != f->curi->fp)
    note_duplicate(f, &ref);
  else if (rc == 0 && !c->warc)
    rc = kr_store_digest_put(st, f->ad.payload_digest, KR_SHA1_LEN, f->curi->fp,
                             f->fetch_start_ms);
  else if (rc == 0)
    f->ad.dup_miss = 1; /* the cluster's shared index may know it (clusterdedup.c) */
  if (rc < 0)
    KR_LOG(KR_LOG_WARN, f->cf.url, "while looking up earlier payloads: %s", kr_strerror(rc));
}

/* ---- revisits in crawl.log ---------------------------------------------------------- */

/* Without WARC files, Heritrix's revisit annotation, put first on the
 * line (with WARC files the writer says what it wrote: proc_warc.c):
 *  - "duplicate:server-not-modified" (FetchHistoryProcessor: a 304 after
 *    a capture) for a 304 or a mid-fetch abort, the previous visit being
 *    the capture; no digest to carry forward;
 *  - "duplicate:digest" (FetchHistoryProcessor) for a whole payload that
 *    is the previous visit's: its change digest when that is the payload
 *    digest itself (no content coding, nothing stripped); checked when
 *    unchanged, and for robots.txt, which has no content state. A page
 *    the stripped digest alone found unchanged is no duplicate of itself.
 * state: the content state, or KR_CONTENT_UNKNOWN for robots.txt. kria's
 * own "notModified", "midFetchAbort", "unchanged" follow it. */
static void annotate_revisit(kr_fetch_t *f, kr_content_t state) {
  const kr_http_resp_t *r = f->resp;
  const kr_curi_t *u = f->curi;
  if (f->crawl->warc) return;
  if (f->ad.content_set) {
    kr_fetch_annotate_first(f, "duplicate:server-not-modified");
    return;
  }
  int whole = f->ad.has_payload_digest && r->payload_bytes && !r->truncated && !f->http_err;
  if (f->ad.dup_url || !whole || !(state == KR_CONTENT_UNCHANGED || f->is_robots)) return;
  if (f->has_digest && u->digest_len == KR_SHA1_LEN && !memcmp(u->digest, f->digest, KR_SHA1_LEN) &&
      !memcmp(f->digest, f->ad.payload_digest, KR_SHA1_LEN))
    kr_fetch_annotate_first(f, "duplicate:digest");
}

/* ---- the processor ---------------------------------------------------------------- */

static int change_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  const kr_curi_t *u = f->curi;
  const kr_http_resp_t *r = f->resp;
  if (!u || f->decided || !r || !r->status) return KR_PROC_NEXT;
  if (f->is_robots) { /* not a page: only the revisit annotation */
    annotate_revisit(f, KR_CONTENT_UNKNOWN);
    return KR_PROC_NEXT;
  }
  kr_content_t state;
  int full = 0; /* the body was downloaded and digested whole */
  if (f->ad.content_set) {
    state = KR_CONTENT_UNCHANGED;
  } else if (f->has_digest && !f->http_err) {
    full = 1;
    if (u->visits == 0 || u->digest_len != KR_SHA1_LEN)
      state = KR_CONTENT_CHANGED;
    else
      state = memcmp(u->digest, f->digest, KR_SHA1_LEN) ? KR_CONTENT_CHANGED
                                                         : KR_CONTENT_UNCHANGED;
  } else {
    state = KR_CONTENT_UNKNOWN;
  }
  f->ad.content = (int)state;
  f->ad.visits = u->visits + 1;
  f->ad.versions = u->visits == 0 ? 1 : u->versions + (state == KR_CONTENT_CHANGED);

  if (f->ad.val_checked && (full || f->ad.content_set))
    record_trust(f, full ? state : KR_CONTENT_UNKNOWN);

  switch (state) {
  case KR_CONTENT_CHANGED:
    c->st.changed++;
    c->st.changes_found += u->visits > 0; /* a first visit is no change (counters.h) */
    check_duplicate(f);
    annotate_revisit(f, state);
    return KR_PROC_NEXT;
  case KR_CONTENT_UNKNOWN:
    c->st.unknown++;
    return KR_PROC_NEXT;
  case KR_CONTENT_UNCHANGED:
  default:
    break;
  }
  c->st.unchanged++;
  c->st.unchanged_body_bytes += r->payload_bytes;
  annotate_revisit(f, state);
  if (f->ad.midfetch_abort) {
    c->st.midfetch_aborts++;
    if (r->content_length > 0 && (uint64_t)r->content_length > r->payload_bytes)
      c->st.aborted_bytes_saved += (uint64_t)r->content_length - r->payload_bytes;
  } else if (r->status == 304) {
    c->st.not_modified++;
  } else {
    c->st.unchanged_full++;
    kr_fetch_annotate(f, "unchanged");
  }
  /* Its links are those of the version already seen. */
  c->links_bytes -= f->links_bytes;
  f->links_bytes = 0;
  f->nlinks = 0;
  f->nfmeta = 0;
  return KR_PROC_SKIP_TO_WRITE;
}

const kr_processor_t kr_proc_change = {.name = "change", .run = change_run};
