/*
 * Feeds and sitemaps in the crawl (thesis chapter 8: a changed feed pulls
 * forward the pages it links).
 *
 * extract-feed  for 2xx RSS, Atom, RDF and XML responses (sitemaps come
 *               as application/xml or text/xml): the body streams into
 *               the expat push parser (feed.h) chunk by chunk; each item's
 *               URL becomes an L link of the fetch, remembered with the
 *               item's latest date and sitemap changefreq
 *               (kr_feed_meta_t). An XML body that is no feed is simply
 *               not one (no annotation); a feed that breaks off is
 *               annotated "feedError" and keeps the items before the
 *               break. When the document turns out unchanged the change
 *               processor drops the links with the meta.
 * feed-hints    a post processor after finish: the sitemap changefreq of
 *               each item goes to its URI's row (uris.hint), for the
 *               poisson policy's prior (adaptive.hint-changefreq).
 * robots.txt Sitemap lines are queued as L links of the robots.txt fetch
 * (kr__feed_robots_sitemaps, from the robots-update processor).
 * What a changed feed schedules now is decided by the revisit processor
 * (proc_wait.c), which knows the content state and the previous visit.
 * Sections: items, the extractor, hints, robots sitemaps.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "kria/fp.h"
#include "log.h"

/* ---- items ------------------------------------------------------------------- */

static int on_item(void *ud, const kr_feed_item_t *it) {
  kr_fetch_t *f = ud;
  kr_crawl_t *c = f->crawl;
  if (!it->url.n) return 0;
  c->st.feed_items++;
  size_t idx;
  int rc = kr__extract_add_link(f, it->url, 'L', &idx);
  if (rc < 0) return 1; /* over a cap: stop reading */
  if (rc == 0) return 0;
  if (f->nfmeta == f->fmeta_cap) {
    size_t ncap = f->fmeta_cap ? f->fmeta_cap * 2 : 64;
    f->fmeta = kr_xrealloc(f->fmeta, ncap * sizeof *f->fmeta);
    f->fmeta_cap = ncap;
  }
  f->fmeta[f->nfmeta++] = (kr_feed_meta_t){
      .link = idx,
      .updated = it->updated,
      .rate = it->changefreq.n ? kr_est_changefreq_rate(it->changefreq.p, it->changefreq.n) : 0};
  /* A new URI's row carries its hint from the start, even when this
   * fetch's finish (and so the row) is held back by a store drain or a
   * WARC sync: feed-hints below then finds no row to update. */
  if (f->hc->hint_changefreq) f->links[idx].hint_rate = f->fmeta[f->nfmeta - 1].rate;
  return 0;
}

/* ---- the extractor -------------------------------------------------------------- */

static int feed_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  if (!f->hc->feeds || !kr__extract_wants_links(f)) return 0;
  if (!f->feed)
    f->feed = kr_feed_new(NULL, on_item, f);
  else
    kr_feed_reset(f->feed, on_item, f);
  f->ad.feed_active = 1;
  f->ad.feed_err = 0;
  return 1;
}

static int feed_body(kr_chain_fetch_t *cf, kr_processor_t *self, const char *p, size_t n) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  (void)self;
  int rc = kr_feed_parse(f->feed, p, n);
  if (rc) f->ad.feed_err = rc;
  return rc != 0;
}

static int feed_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!f->ad.feed_active) return KR_PROC_NEXT;
  f->ad.feed_active = 0;
  int rc = f->ad.feed_err ? f->ad.feed_err : kr_feed_finish(f->feed);
  kr_feed_kind_t kind = kr_feed_kind(f->feed);
  f->ad.feed_kind = (int)kind;
  if (kind == KR_FEED_UNKNOWN) return KR_PROC_NEXT; /* XML, but not a feed */
  c->st.feeds++;
  if (rc == KR_ECANCELED || kr_feed_stats(f->feed)->capped) f->links_dropped++;
  if (rc && rc != KR_ECANCELED) {
    c->st.feed_errors++;
    kr_fetch_annotate(f, "feedError");
    KR_LOG(KR_LOG_INFO, f->cf.url, "while reading the %s: %s", kr_feed_kind_name(kind),
           kr_feed_error(f->feed));
  }
  kr_fetch_annotatef(f, "feed:%s", kr_feed_kind_name(kind));
  return KR_PROC_NEXT;
}

static void feed_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  (void)self;
  container_of(cf, kr_fetch_t, cf)->ad.feed_active = 0;
}

void kr__proc_feed_register(kr_crawl_t *c) {
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "extract-feed",
                                          .phase = KR_PHASE_EXTRACT,
                                          .ctype_re = c->re_feed,
                                          .run = feed_run,
                                          .on_headers = feed_headers,
                                          .on_body = feed_body,
                                          .cleanup = feed_cleanup});
}

/* ---- hints --------------------------------------------------------------------------- */

static int hints_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!f->nfmeta || !f->hc->hint_changefreq || !c->frontier) return KR_PROC_NEXT;
  if (f->ad.feed_kind != KR_FEED_SITEMAP) return KR_PROC_NEXT;
  /* Rows the links already had (finish ran: same transaction); new
   * ones were inserted with the hint (kr_link_t.hint_rate). */
  kr_store_t *st = kr_frontier_store(c->frontier);
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_feed_meta_t *m = &f->fmeta[i];
    if (m->rate <= 0 || m->link >= f->nlinks) continue;
    const kr_link_t *l = &f->links[m->link];
    if (kr_store_uri_set_hint(st, kr_fp(l->url, l->url_len), m->rate) < 0) break;
  }
  return KR_PROC_NEXT;
}

void kr__proc_feed_post_register(kr_crawl_t *c) {
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "feed-hints", .phase = KR_PHASE_POST,
                                          .run = hints_run});
}

/* ---- robots sitemaps -------------------------------------------------------------------- */

void kr__feed_robots_sitemaps(kr_fetch_t *f, const kr_robots_t *r) {
  if (!r || !f->hc->feeds || !f->hc->robots_sitemaps) return;
  size_t n = kr_robots_sitemap_count(r);
  for (size_t i = 0; i < n; i++) {
    int rc = kr__extract_add_link(f, kr_robots_sitemap(r, i), 'L', NULL);
    if (rc < 0) break;
    if (rc == 1) f->crawl->st.sitemaps_from_robots++;
  }
}
