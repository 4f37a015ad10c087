/*
 * The WARC processor: a thin client of the archive service
 * (src/archive/archive.h), which decides what each visit leaves in the
 * WARC files and writes it. This file turns a fetch into the service's
 * plain descriptions: a capture of the raw response bytes (begun at the
 * headers, fed by the http processor's raw stream) and, once the visit is
 * done, one kr_archive_exchange_t with its response head, digests,
 * request, the revisit hints and a callback for the metadata record.
 * The capture is the holder of the chain's raw level (kr_chain_hold): the
 * digest asks it, through the chain, for the body it keeps in memory;
 * with warc.chunked = dechunk, a chunked response's capture is fed the
 * payload level instead (the body with its chunk framing removed) and
 * holds nothing for the chain.
 *
 * Where: the "warc" processor of the write phase; a fetch whose walk
 * jumped to the post phase after an error that still left a response
 * (a body cut by a timeout or a reset) is written by "warc-late", the
 * first post processor. Both run before "finish" hands the visit to the
 * frontier, so the store never commits a visit before its records. A
 * large body is written in slices: its walk waits (ASYNC) until the
 * service calls back. "warc-dns" looks up the host for the dns:HOST
 * record (warc.write-dns). A visit whose records could not be written is
 * given back (KR_DISP_DEFER): it is fetched again later.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "clusterdedup.h"
#include "crawl.h"
#include "internal.h"
#include "log.h"
#include "procs.h"
#include "turnprof.h"

/* ---- the context ---------------------------------------------------------------- */

/* The capture of a fetch's raw response, shared by warc and warc-late. */
typedef struct warc_ctx {
  kr_archive_cap_t *cap;
} warc_ctx_t;

static void ctx_reset(void *p, void *owner) { ((warc_ctx_t *)p)->cap = NULL; }

static const kr_chain_ctx_def_t warc_ctx_def = {
    .name = "warc", .size = sizeof(warc_ctx_t), .reset = ctx_reset};

static kr_archive_cap_t **cap_of(kr_chain_fetch_t *cf, kr_processor_t *self) {
  return &((warc_ctx_t *)kr_chain_ctx(cf, self))->cap;
}

/* ---- the exchange --------------------------------------------------------------- */

/* Is there a visit with a response to record? */
static int has_visit(kr_fetch_t *f) {
  kr_crawl_t *c = f->crawl;
  if (!f->curi || f->decided || f->disp != KR_DISP_FINISH) return 0;
  if (!f->resp || !f->resp->status) return 0;
  if (f->http_err == KR_ECANCELED && c->stopping) return 0; /* given back */
  return 1;
}

static const char *truncated_why(kr_fetch_t *f) {
  const kr_http_resp_t *r = f->resp;
  if (r->truncated || f->cut) return "length";
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

/* The metadata record's block (Heritrix style: via, hopsFromSeed, fetchTimeMs,
 * outlinks, and the adaptive-revisit notes: content state, visits,
 * versions, change digest, crawl.log annotations), into b. */
static int metadata(void *ud, kr_buf_t *b) {
  kr_fetch_t *f = ud;
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
  kr_buf_reset(b);
  for (size_t i = 0; i < f->nannot; i++) {
    if (i) kr_buf_append(b, ",", 1);
    kr_buf_append_slice(b, f->annot[i]);
  }
  char *annots = b->len ? kr_arena_strndup(&f->arena, b->data, b->len) : NULL;
  if (annots) an[nan++] = (kr_warc_field_t){"annotations", kr_slice_cstr(annots)};
  kr_warc_meta_t m = {
      .via = kr__via_url(f->crawl, u->via), /* a seed has none */
      .hops_from_seed = kr_slice(u->hop_path ? u->hop_path : "", u->hop_len),
      .fetch_time_ms = (int64_t)f->fetch_duration_ms,
      .outlinks = ol,
      .noutlinks = nol,
      .annotations = an,
      .nannotations = nan,
  };
  kr_buf_reset(b);
  int rc = kr_warc_metadata_block(b, &m);
  if (rc) KR_LOG(KR_LOG_WARN, f->cf.url, "metadata record left out: %s", kr_strerror(rc));
  return rc;
}

/* The certificate facts of f's TLS connection (warc-fields), in f's
 * arena: once a connection, on its first visit (the http client hands
 * the certificates to that one only), when verification was on. */
static kr_slice_t tls_facts(kr_fetch_t *f) {
  const kr_http_resp_t *r = f->resp;
  if (!r->tls.used || !r->tls.verify_checked || !r->tls_chain.n) return kr_slice("", 0);
  kr_warc_field_t v[7] = {
      {"tlsVersion", kr_slice_cstr(r->tls.version)},
      {"tlsCipher", kr_slice_cstr(r->tls.cipher)},
      {"tlsAlpn", kr_slice_cstr(r->tls.alpn)},
      {"tlsResumed", kr_slice_cstr(r->tls.resumed ? "true" : "false")},
      {"tlsVerifyResult", kr_slice_cstr(r->tls.verify_result == 0 ? "ok" : "failed")},
  };
  size_t nv = 5;
  char code[KR_U64_DEC_MAX];
  if (r->tls.verify_result != 0) { /* OpenSSL's X509_V_ERR_* code and text */
    v[nv++] = (kr_warc_field_t){
        "tlsVerifyCode", kr_slice(code, kr_u64_dec(code, (uint64_t)labs(r->tls.verify_result)))};
    v[nv++] = (kr_warc_field_t){"tlsVerifyError", kr_slice_cstr(r->tls.verify_error)};
  }
  size_t room = r->tls_chain.n;
  for (size_t i = 0; i < nv; i++) room += strlen(v[i].name) + 4 + v[i].value.n;
  char *out = kr_arena_alloc(&f->arena, room);
  if (!out) return kr_slice("", 0);
  char *p = out;
  for (size_t i = 0; i < nv; i++) {
    size_t nl = strlen(v[i].name);
    memcpy(p, v[i].name, nl);
    p += nl;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, v[i].value.p, v[i].value.n);
    p += v[i].value.n;
    *p++ = '\r';
    *p++ = '\n';
  }
  memcpy(p, r->tls_chain.p, r->tls_chain.n); /* peerCertificate lines */
  p += r->tls_chain.n;
  return kr_slice(out, (size_t)(p - out));
}

/* What the service answered for f: a visit skipped as volatile is noted,
 * one that could not be written is given back. */
static void written(kr_fetch_t *f, int rc) {
  if (rc == KR_ARCHIVE_SKIPPED)
    kr_fetch_annotate(f, "warcSkippedVolatile");
  else if (rc < 0)
    f->disp = KR_DISP_DEFER;
}

/* A large body's visit is written: its walk goes on. */
static void on_written(void *ud, int rc) {
  kr_fetch_t *f = ud;
  written(f, rc);
  kr_chain_resume(&f->cf, 0);
}

/* f's visit as the service sees it. When the walk jumped over the digest
 * phase (an error after the headers), what arrived was hashed all the
 * same (digest-end, before warc-late). */
static void exchange_fill(kr_fetch_t *f, kr_archive_cap_t *cap, kr_archive_exchange_t *x) {
  const kr_http_resp_t *r = f->resp;
  x->has_payload_digest = f->ad.has_payload_digest;
  if (x->has_payload_digest) memcpy(x->payload_digest, f->ad.payload_digest, KR_SHA1_LEN);
  x->has_block_digest = f->ad.has_block_digest;
  if (x->has_block_digest) memcpy(x->block_digest, f->ad.block_digest, KR_SHA1_LEN);
  x->block_body = f->ad.block_body;
  x->url = kr_slice(f->cf.url, f->cf.url_len);
  x->fp = f->curi->fp;
  x->ip = r->peer_ip[0] ? r->peer_ip : NULL;
  x->date_ms = f->fetch_start_ms ? f->fetch_start_ms : kr_crawl_now(f->crawl);
  /* the head as stored: rewritten when the body is stored de-chunked */
  x->head = cap ? kr_archive_capture_head(cap) : r->raw_head;
  x->cap = cap;
  x->not_modified = r->status == 304;
  x->midfetch = f->ad.midfetch_abort && !x->not_modified;
  x->etag = r->etag;
  x->last_modified = r->last_modified;
  x->complete = r->payload_bytes && !r->truncated && !f->http_err;
  x->visited = f->ad.visits != 0;
  x->unchanged = f->ad.content == KR_CONTENT_UNCHANGED;
  x->chunked = r->chunked && x->head.p == r->raw_head.p; /* stored chunked */
  x->truncated = truncated_why(f);
  x->request = f->http ? kr_http_fetch_request(f->http) : kr_slice("", 0);
  x->metadata = metadata;
  x->tls_facts = tls_facts(f);
  x->done = on_written;
  x->ud = f;
  if (f->ad.far_url) { /* another member's original (clusterdedup.c) */
    x->far_url = kr_slice_cstr(f->ad.far_url);
    x->far_rid = f->ad.far_rid;
    x->far_date_ms = f->ad.far_date;
  }
  if (f->crawl->xdedup) x->original = kr__crawl_xdedup_original;
}

/* ---- the processors --------------------------------------------------------------- */

static int warc_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_archive_cap_t **cap = cap_of(cf, self);
  const kr_http_resp_t *r = f->resp;
  if (!r || *cap) return 0;
  /* No body is coming for a 304 or a mid-fetch abort. */
  int body = !(r->status == 304 || f->ad.midfetch_abort);
  *cap = kr_archive_capture_begin(self->data, r->raw_head, f->cf.url, body);
  /* warc.chunked = dechunk: the body without its chunk framing */
  if (r->chunked && kr_archive_capture_dechunk(self->data, *cap))
    return KR_STREAM_BIT(KR_STREAM_PAYLOAD);
  kr_chain_hold(cf, self, KR_STREAM_RAW);
  return KR_STREAM_BIT(KR_STREAM_RAW); /* the response record's block */
}

static int warc_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                     const char *p, size_t n) {
  kr_archive_cap_t *cap = *cap_of(cf, self);
  if (cap) kr_archive_capture_feed(self->data, cap, p, n);
  return 0;
}

/* The chain's question (kr_chain_held): are raw body bytes [from, to) in
 * the capture's memory, or will the ones still to come stay there? */
static int warc_held(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                     uint64_t from, uint64_t to, kr_slice_t *out) {
  return level == KR_STREAM_RAW &&
         kr_archive_capture_held(self->data, *cap_of(cf, self), from, to, out);
}

static void warc_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_archive_t *a = self->data;
  kr_archive_cap_t **cap = cap_of(cf, self);
  kr_archive_forget(a, f);
  if (*cap) kr_archive_capture_end(a, *cap);
  *cap = NULL;
}

/* crawl.log says what was written, as Heritrix 3 does, first on the
 * line: "duplicate:server-not-modified" (its FetchHistoryProcessor, for a
 * 304; here a mid-fetch abort too), the original's payload digest carried
 * into the digest column; or "duplicate:digest" (FetchHistoryProcessor
 * for the same URI, ContentDigestHistoryLoader for another), unless the
 * crawl found that duplicate itself and said so (proc_change.c). */
static void annotate_revisit(kr_fetch_t *f, const kr_archive_wrote_t *w) {
  if (w->revisit == KR_ARCHIVE_NOT_MODIFIED) {
    f->ad.has_prior_digest = 1;
    memcpy(f->ad.prior_digest, w->digest, KR_SHA1_LEN);
    kr_fetch_annotate_first(f, "duplicate:server-not-modified");
  } else if (w->revisit == KR_ARCHIVE_IDENTICAL && !f->ad.dup_url) {
    kr_fetch_annotate_first(f, "duplicate:digest");
  }
}

static int run_visit(kr_archive_t *a, kr_fetch_t *f, kr_archive_cap_t *cap) {
  if (cap && !kr_archive_capture_claim(cap)) return KR_PROC_NEXT;
  if (!has_visit(f) || !kr_archive_writing(a)) return KR_PROC_NEXT;
  KR_TP_ENTER(KR_TP_WARC);
  kr_archive_exchange_t x = {0}; /* the far original, the original hook: unset unless filled */
  kr_archive_wrote_t w = {0};
  exchange_fill(f, cap, &x);
  x.wrote = &w;
  int rc = kr_archive_submit(a, &x);
  KR_TP_LEAVE();
  if (rc == KR_ARCHIVE_ASYNC) return KR_PROC_ASYNC; /* a response: no revisit */
  annotate_revisit(f, &w);
  written(f, rc);
  return KR_PROC_NEXT;
}

static int warc_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  return run_visit(self->data, container_of(cf, kr_fetch_t, cf), *cap_of(cf, self));
}

/* First in the post phase: a fetch whose walk skipped the write phase
 * (after an error) but has a response, e.g. a body cut by a timeout, is
 * recorded here, still before "finish" hands the visit on. */
static int warc_late_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_archive_cap_t *cap = *cap_of(cf, self);
  if (cap && !kr_archive_capture_claimed(cap)) return run_visit(self->data, f, cap);
  return KR_PROC_NEXT;
}

/* dns records ----------------------------------------------------------------------- */

static void on_dns(void *data, int status, const kr_dns_result_t *res) {
  kr_fetch_t *f = data;
  kr_archive_t *a = f->crawl->warc;
  if (status == 0 && res && res->naddrs > 0 && kr_archive_writing(a)) {
    char txt[KR_DNS_MAX_ADDRS][INET6_ADDRSTRLEN];
    const char *addrs[KR_DNS_MAX_ADDRS];
    size_t n = 0;
    for (int i = 0; i < res->naddrs && i < KR_DNS_MAX_ADDRS; i++) {
      const struct sockaddr_storage *ss = &res->addrs[i];
      const void *ad = ss->ss_family == AF_INET
                           ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                           : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
      if (inet_ntop(ss->ss_family, ad, txt[n], sizeof txt[n])) {
        addrs[n] = txt[n];
        n++;
      }
    }
    kr_slice_t host = f->cf.host;
    char *name = kr_arena_strndup(&f->arena, host.p, host.n);
    if (kr_archive_dns(a, host, name, kr_crawl_now(f->crawl), addrs, n, res->ttl_s) < 0)
      f->disp = KR_DISP_DEFER;
  }
  kr_chain_resume(&f->cf, 0);
}

static int dns_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_archive_t *a = self->data;
  kr_crawl_t *c = f->crawl;
  if (!kr_archive_dns_wanted(a) || !has_visit(f) || !c->dns || !f->url) return KR_PROC_NEXT;
  kr_slice_t host = f->cf.host;
  if (!host.n || host.n > 253 || memchr(host.p, ':', host.n)) return KR_PROC_NEXT;
  /* IP literals were not resolved */
  struct in_addr a4;
  char name[256];
  memcpy(name, host.p, host.n);
  name[host.n] = '\0';
  if (inet_pton(AF_INET, name, &a4) == 1) return KR_PROC_NEXT;
  if (!kr_archive_dns_due(a, host, kr_crawl_now(c))) return KR_PROC_NEXT;
  if (kr_dns_resolve(c->dns, name, on_dns, f, NULL)) return KR_PROC_NEXT;
  return KR_PROC_ASYNC;
}

/* The processors: the chain table (procs.c) sets data to the archive and
 * leaves them out when WARC writing is off. warc-dns is always there when
 * it is on: a reload may turn warc.write-dns on. */
const kr_processor_t kr_proc_warc_dns = {.name = "warc-dns", .run = dns_run};
const kr_processor_t kr_proc_warc = {.name = "warc",
                                     .run = warc_run,
                                     .on_headers = warc_headers,
                                     .on_body = warc_body,
                                     .held = warc_held,
                                     .cleanup = warc_cleanup,
                                     .ctx = &warc_ctx_def};
const kr_processor_t kr_proc_warc_late = {.name = "warc-late", .run = warc_late_run,
                                          .ctx = &warc_ctx_def};
