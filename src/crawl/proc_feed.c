/*
 * Feeds and sitemaps in the crawl (thesis chapter 8: a changed feed pulls
 * forward the pages it links).
 *
 * extract-feed  for 2xx RSS, Atom, RDF and XML responses (sitemaps come
 *               as application/xml or text/xml): the body streams into
 *               the expat push parser (feed.h) chunk by chunk; each item's
 *               URL becomes an L link of the fetch, remembered with the
 *               item's latest date and sitemap changefreq
 *               (kr_fetch_item_t). An XML body that is no feed is simply
 *               not one (no annotation); a feed that breaks off is
 *               annotated "feedError" and keeps the items before the
 *               break. When the document turns out unchanged the change
 *               processor drops the links with the meta.
 * feed-hints    a post processor after finish: the sitemap changefreq of
 *               each item goes to its URI's row (uris.hint), for the
 *               poisson policy's prior (adaptive.hint-changefreq).
 * robots-sitemaps  a post processor after robots-update: the Sitemap lines
 *               of the rules a robots.txt fetch stored (f->robots) are
 *               queued as L links of that fetch.
 * What a changed feed schedules now is decided by the revisit processor
 * (proc_wait.c), which knows the content state and the previous visit.
 * Sections: the context, items, the extractor, hints, robots sitemaps,
 * the processors.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/websub.h"
#include "log.h"
#include "procs.h"

/* ---- the context --------------------------------------------------------------- */

typedef struct feed_ctx {
  kr_fetch_t *f;                /* the fetch being read (set at the headers) */
  kr_feed_t *feed;              /* the parser, reused */
  int active;                   /* fed this response */
  int kind;                     /* kr_feed_kind_t of the document read */
  int err;                      /* its parse error, 0 none */
} feed_ctx_t;

static void ctx_reset(void *p, void *owner) {
  feed_ctx_t *x = p;
  x->f = NULL;
  x->active = x->kind = x->err = 0;
}

static void ctx_free(void *p, void *owner) { kr_feed_free(((feed_ctx_t *)p)->feed); }

static const kr_chain_ctx_def_t feed_ctx_def = {
    .name = "feed", .size = sizeof(feed_ctx_t), .reset = ctx_reset, .free = ctx_free};

/* ---- items ------------------------------------------------------------------- */

static int on_item(void *ud, const kr_feed_item_t *it) {
  kr_fetch_t *f = ((feed_ctx_t *)ud)->f;
  kr_crawl_t *c = f->crawl;
  if (!it->url.n) return 0;
  c->st.feed_items++;
  size_t idx;
  int rc = kr_fetch_add_link(f, NULL, it->url, 'L', &idx, NULL);
  if (rc < 0) return 1; /* over a cap: stop reading */
  if (rc == 0) return 0;
  if (f->nfmeta == f->fmeta_cap) {
    size_t ncap = f->fmeta_cap ? f->fmeta_cap * 2 : 64;
    f->fmeta = kr_xrealloc(f->fmeta, ncap * sizeof *f->fmeta);
    f->fmeta_cap = ncap;
  }
  f->fmeta[f->nfmeta++] = (kr_fetch_item_t){
      .link = idx,
      .updated = it->updated,
      .rate = it->changefreq.n ? kr_est_changefreq_rate(it->changefreq.p, it->changefreq.n) : 0,
      .source = it->kind == KR_FEED_SITEMAP || it->kind == KR_FEED_SITEMAP_INDEX ? KR_SIG_LASTMOD
                                                                                : KR_SIG_FEED};
  /* A new URI's row carries its hint from the start, even when this
   * fetch's finish (and so the row) is held back by a store drain or a
   * WARC sync: feed-hints below then finds no row to update. */
  if (f->hc->hint_changefreq) f->links[idx].hint_rate = f->fmeta[f->nfmeta - 1].rate;
  return 0;
}

/* ---- the extractor -------------------------------------------------------------- */

static int feed_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  feed_ctx_t *x = kr_chain_ctx(cf, self);
  if (!f->hc->feeds || !kr_fetch_wants_links(f)) return 0;
  x->f = f;
  if (!x->feed)
    x->feed = kr_feed_new(NULL, on_item, x);
  else
    kr_feed_reset(x->feed, on_item, x);
  x->active = 1;
  x->err = 0;
  return KR_STREAM_BIT(KR_STREAM_CONTENT);
}

static int feed_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                     const char *p, size_t n) {
  feed_ctx_t *x = kr_chain_ctx(cf, self);
  int rc = kr_feed_parse(x->feed, p, n);
  if (rc) x->err = rc;
  return rc != 0;
}

/* WebSub discovery (websub.c): the hub and self of the Link headers,
 * else of the document (WebSub 4: the headers take precedence). */
static void websub_discover(kr_fetch_t *f, feed_ctx_t *x) {
  kr_slice_t hub = {0}, self = {0};
  for (size_t i = 0; f->resp && i < f->resp->nheaders; i++) {
    const kr_http_header_t *h = &f->resp->headers[i];
    if (!kr_slice_case_eq(h->name, KR_SLICE_LIT("link"))) continue;
    if (!hub.n) kr_link_header_rel(h->value.p, h->value.n, "hub", &hub);
    if (!self.n) kr_link_header_rel(h->value.p, h->value.n, "self", &self);
  }
  if (!hub.n || !self.n) {
    hub = kr_feed_hub(x->feed);
    self = kr_feed_self(x->feed);
  }
  kr__crawl_websub_discovered(f->crawl, f->url, hub, self);
}

static int feed_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  feed_ctx_t *x = kr_chain_ctx(cf, self);
  if (!x->active) return KR_PROC_NEXT;
  x->active = 0;
  int rc = x->err ? x->err : kr_feed_finish(x->feed);
  kr_feed_kind_t kind = kr_feed_kind(x->feed);
  x->kind = (int)kind;
  if (kind == KR_FEED_UNKNOWN) return KR_PROC_NEXT; /* XML, but not a feed */
  c->st.feeds++;
  if (rc == KR_ECANCELED || kr_feed_stats(x->feed)->capped) f->links_dropped++;
  if (rc && rc != KR_ECANCELED) {
    c->st.feed_errors++;
    kr_fetch_annotate(f, "feedError");
    KR_LOG(KR_LOG_INFO, f->cf.url, "while reading the %s: %s", kr_feed_kind_name(kind),
           kr_feed_error(x->feed));
  }
  kr_fetch_annotatef(f, "feed:%s", kr_feed_kind_name(kind));
  if (c->websub && kind != KR_FEED_SITEMAP && kind != KR_FEED_SITEMAP_INDEX) websub_discover(f, x);
  return KR_PROC_NEXT;
}

static void feed_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  ((feed_ctx_t *)kr_chain_ctx(cf, self))->active = 0;
}

/* ---- hints --------------------------------------------------------------------------- */

static int hints_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  feed_ctx_t *x = kr_chain_ctx(cf, self);
  if (!f->nfmeta || !f->hc->hint_changefreq || !c->frontier) return KR_PROC_NEXT;
  if (x->kind != KR_FEED_SITEMAP) return KR_PROC_NEXT;
  /* Rows the links already had (finish ran: same transaction); new
   * ones were inserted with the hint (kr_link_t.hint_rate). */
  kr_store_t *st = kr_frontier_store(c->frontier);
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_fetch_item_t *m = &f->fmeta[i];
    if (m->rate <= 0 || m->link >= f->nlinks) continue;
    const kr_link_t *l = &f->links[m->link];
    if (kr_store_uri_set_hint(st, kr_fp(l->url, l->url_len), m->rate) < 0) break;
  }
  return KR_PROC_NEXT;
}

/* ---- robots sitemaps -------------------------------------------------------------------- */

static int robots_sitemaps_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  const kr_robots_t *r = f->robots;
  if (!r || !f->curi || !f->hc->feeds || !f->hc->robots_sitemaps) return KR_PROC_NEXT;
  size_t n = kr_robots_sitemap_count(r);
  for (size_t i = 0; i < n; i++) {
    int rc = kr_fetch_add_link(f, NULL, kr_robots_sitemap(r, i), 'L', NULL, NULL);
    if (rc < 0) break;
    if (rc == 1) f->crawl->st.sitemaps_from_robots++;
  }
  return KR_PROC_NEXT;
}

/* ---- the processors ---------------------------------------------------------------------- */

const kr_processor_t kr_proc_extract_feed = {.name = "extract-feed",
                                             .run = feed_run,
                                             .on_headers = feed_headers,
                                             .on_body = feed_body,
                                             .cleanup = feed_cleanup,
                                             .ctx = &feed_ctx_def};
const kr_processor_t kr_proc_robots_sitemaps = {.name = "robots-sitemaps",
                                                .run = robots_sitemaps_run};
const kr_processor_t kr_proc_feed_hints = {.name = "feed-hints", .run = hints_run,
                                           .ctx = &feed_ctx_def};
