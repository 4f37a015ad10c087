/*
 * Extract-phase processors: links and embeds out of a response.
 *
 * headers  Location (a 3xx is scheduled as an R hop, never followed
 *          inline) and Content-Location, for any status.
 * html     the streaming HTML extractor, for 2xx text/html and XHTML: fed
 *          each content chunk as it arrives (stream hooks), finished in
 *          the extract phase. <base href> changes the base of the links
 *          after it.
 * css      the streaming CSS extractor for 2xx text/css.
 * extract-end  a post processor before finish: links streamed out of a
 *          response whose fetch then failed are still scheduled, but the
 *          extract phase was skipped; what the extractors dropped is
 *          counted here for finish's "links-capped".
 * Each link goes to the fetch (kr_fetch_add_link, fetch.c), which
 * resolves, canonicalizes, checks the scope and keeps it. The extractors,
 * the <base> and the links waiting for the link cache are this module's
 * per-fetch context.
 * Sections: the context, streamed links, the processors.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "linkcache.h"
#include "log.h"
#include "procs.h"

/* ---- the context ---------------------------------------------------------------- */

#define LINK_DEFER_MAX 256 /* longer links are not deferred */
#define LINK_DEFER_DEPTH 2

typedef struct extract_ctx {
  kr_fetch_t *f;                /* the fetch being fed (set at the headers) */
  kr_html_extractor_t *html;    /* reused; reset per document */
  kr_css_extractor_t *css;
  int html_active, css_active;  /* fed this response */
  kr_url_t *base;               /* <base href>, NULL = the document URL */
  /* Streamed links wait for the next two (their link-cache slots and
   * entries loading meanwhile); never past the end of a fed chunk. */
  struct {
    struct link_waiting {
      char raw[LINK_DEFER_MAX];
      kr_linkcache_key_t key; /* its link-cache key, computed once */
      uint16_t n;
      char hop;
    } q[LINK_DEFER_DEPTH]; /* a ring: the oldest at head (never moved) */
    uint8_t head;
    uint8_t has;  /* links waiting */
    uint8_t full; /* a waiting link found the caps reached: stop the stream */
  } defer;
} extract_ctx_t;

static void ctx_reset(void *p, void *owner) {
  extract_ctx_t *x = p;
  kr_url_free(x->base);
  x->base = NULL;
  x->f = NULL;
  x->html_active = x->css_active = 0;
  memset(&x->defer, 0, sizeof x->defer);
}

static void ctx_free(void *p, void *owner) {
  extract_ctx_t *x = p;
  ctx_reset(p, owner);
  if (x->html) kr_extract_html_free(x->html);
  if (x->css) kr_extract_css_free(x->css);
}

static const kr_chain_ctx_def_t extract_ctx_def = {
    .name = "extract", .size = sizeof(extract_ctx_t), .reset = ctx_reset, .free = ctx_free};

static extract_ctx_t *ctx_of(kr_chain_fetch_t *cf, kr_processor_t *self) {
  return kr_chain_ctx(cf, self);
}

/* 0, or KR_ETOOBIG once the fetch holds as many links as it may. */
static int add_link(kr_fetch_t *f, const kr_url_t *base, kr_slice_t raw, char hop) {
  int rc = kr_fetch_add_link(f, base, raw, hop, NULL, NULL);
  return rc < 0 ? rc : 0;
}

/* ---- streamed links ------------------------------------------------------------- */

/* The streamed links of a page (on_link) are each deferred until two
 * more have arrived: the link cache's slots for a link are prefetched
 * when it arrives, its entry when the next one comes, and it is looked up
 * at the one after, so those two trips to memory (most of a cached
 * link's cost) overlap the tokenizer's work. A chunk's waiting links are
 * added before its feed returns, and a <base> adds them first, so every
 * link is added against the same base, in the same order, before
 * anything else sees the fetch's links; only the moment within the feed
 * moves. */
static int add_deferred(extract_ctx_t *x, unsigned keep) {
  while (x->defer.has > keep) {
    const struct link_waiting *w = &x->defer.q[x->defer.head];
    x->defer.head = (uint8_t)((x->defer.head + 1) % LINK_DEFER_DEPTH);
    x->defer.has--;
    int rc = kr_fetch_add_link(x->f, x->base, kr_slice(w->raw, w->n), w->hop, NULL, &w->key);
    if (rc < 0) {
      x->defer.has = 0;
      x->defer.full = 1;
      return rc;
    }
  }
  return 0;
}

/* After a fed chunk: the waiting links are added. 0, or -1 when one found
 * the caps reached: the extractor is then stopped at its next link. */
static int end_of_chunk(extract_ctx_t *x) { return add_deferred(x, 0) < 0 ? -1 : 0; }

static void defer_reset(extract_ctx_t *x) {
  x->defer.head = 0;
  x->defer.has = 0;
  x->defer.full = 0;
}

static int on_link(void *ud, const kr_extract_link_t *l) {
  extract_ctx_t *x = ud;
  kr_fetch_t *f = x->f;
  /* a waiting link, or a chunk's last one, met the caps: stop here, as
   * the extractor would have at that link */
  if (x->defer.full) return KR_ETOOBIG;
  if (l->kind == KR_EXTRACT_BASE) {
    int rc = add_deferred(x, 0);
    if (rc < 0) return rc;
    kr_url_t *b = NULL;
    if (kr_url_parse(l->url.p, l->url.n, f->url, &b) == 0 && kr_url_is_http(b)) {
      kr_url_free(x->base);
      x->base = b;
    } else {
      kr_url_free(b);
    }
    return 0;
  }
  if (l->url.n > LINK_DEFER_MAX) {
    int rc = add_deferred(x, 0);
    return rc < 0 ? rc : add_link(f, x->base, l->url, (char)l->kind);
  }
  int rc = add_deferred(x, LINK_DEFER_DEPTH - 1);
  if (rc < 0) return rc;
  kr_linkcache_t *lc = f->crawl->links_cache;
  /* the link before this one: its slots are in by now, its entry next */
  unsigned i = (x->defer.head + x->defer.has) % LINK_DEFER_DEPTH;
  if (x->defer.has)
    kr_linkcache_prefetch_entry(lc, &x->defer.q[(i + LINK_DEFER_DEPTH - 1) % LINK_DEFER_DEPTH].key);
  x->defer.has++;
  struct link_waiting *w = &x->defer.q[i];
  kr_linkcache_key(l->url.p, l->url.n, x->base ? x->base : f->url, &w->key);
  kr_linkcache_prefetch(lc, &w->key);
  memcpy(w->raw, l->url.p, l->url.n);
  w->n = (uint16_t)l->url.n;
  w->hop = (char)l->kind;
  return 0;
}

/* ---- the processors -------------------------------------------------------------------- */

/* Redirects followed in a row, as browsers do (Firefox and Chrome stop at
 * 20). Each hop is its own URI, so a loop ends at the first URI seen
 * again, but a chain of distinct URLs would otherwise end only where the
 * hop accounting does (hops past 50 are shown as "N+" and counted as
 * links): it ends here, on a 3xx annotated "redirects-capped". */
#define MAX_REDIRECTS_IN_A_ROW 20

static unsigned redirects_in_a_row(const kr_curi_t *u) {
  unsigned n = 0;
  while (n < u->hop_len && u->hop_path[u->hop_len - 1 - n] == 'R') n++;
  return n;
}

static int headers_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  if (!f->resp || f->is_robots) return KR_PROC_NEXT;
  if (f->resp->location.n) {
    if (redirects_in_a_row(f->curi) >= MAX_REDIRECTS_IN_A_ROW)
      kr_fetch_annotate(f, "redirects-capped");
    else
      add_link(f, NULL, f->resp->location, 'R');
  }
  kr_slice_t cl = kr_http_resp_header(f->resp, "Content-Location");
  if (cl.p && cl.n) add_link(f, NULL, kr_slice_trim(cl), 'R');
  return KR_PROC_NEXT;
}

static int html_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  extract_ctx_t *x = ctx_of(cf, self);
  if (!kr_fetch_wants_links(f)) return 0;
  x->f = f;
  if (!x->html)
    x->html = kr_extract_html_new(&c->xopts, on_link, x);
  else
    kr_extract_html_reset(x->html, on_link, x);
  x->html_active = 1;
  defer_reset(x);
  return KR_STREAM_BIT(KR_STREAM_CONTENT);
}

static int html_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                     const char *p, size_t n) {
  extract_ctx_t *x = ctx_of(cf, self);
  int rc = kr_extract_html_feed(x->html, p, n);
  int full = end_of_chunk(x);
  return rc < 0 || full < 0;
}

static int html_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  extract_ctx_t *x = ctx_of(cf, self);
  if (x->html_active) {
    kr_extract_html_finish(x->html);
    end_of_chunk(x); /* a link the finish gave */
    if (kr_extract_html_stats(x->html)->capped) f->links_dropped++;
    x->html_active = 0;
  }
  return KR_PROC_NEXT;
}

static void html_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  ctx_of(cf, self)->html_active = 0;
}

static int css_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  extract_ctx_t *x = ctx_of(cf, self);
  if (!kr_fetch_wants_links(f)) return 0;
  x->f = f;
  if (!x->css)
    x->css = kr_extract_css_new(&c->xopts, on_link, x);
  else
    kr_extract_css_reset(x->css, on_link, x);
  x->css_active = 1;
  defer_reset(x);
  return KR_STREAM_BIT(KR_STREAM_CONTENT);
}

static int css_body(kr_chain_fetch_t *cf, kr_processor_t *self, kr_stream_level_t level,
                    const char *p, size_t n) {
  extract_ctx_t *x = ctx_of(cf, self);
  int rc = kr_extract_css_feed(x->css, p, n);
  int full = end_of_chunk(x);
  return rc < 0 || full < 0;
}

static int css_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  extract_ctx_t *x = ctx_of(cf, self);
  if (x->css_active) {
    kr_extract_css_finish(x->css);
    end_of_chunk(x); /* a link the finish gave */
    if (kr_extract_css_stats(x->css)->capped) f->links_dropped++;
    x->css_active = 0;
  }
  return KR_PROC_NEXT;
}

static void css_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  ctx_of(cf, self)->css_active = 0;
}

/* Links streamed out of a response whose fetch then failed (a timeout, a
 * reset mid-body) are still scheduled, but html_run/css_run were skipped:
 * count what the extractors dropped, for finish's note. */
static int end_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  extract_ctx_t *x = ctx_of(cf, self);
  if (!f->curi) return KR_PROC_NEXT;
  if (x->html_active && kr_extract_html_stats(x->html)->capped) f->links_dropped++;
  if (x->css_active && kr_extract_css_stats(x->css)->capped) f->links_dropped++;
  return KR_PROC_NEXT;
}

const kr_processor_t kr_proc_extract_headers = {.name = "extract-headers", .run = headers_run};
const kr_processor_t kr_proc_extract_html = {.name = "extract-html",
                                             .run = html_run,
                                             .on_headers = html_headers,
                                             .on_body = html_body,
                                             .cleanup = html_cleanup,
                                             .ctx = &extract_ctx_def};
const kr_processor_t kr_proc_extract_css = {.name = "extract-css",
                                            .run = css_run,
                                            .on_headers = css_headers,
                                            .on_body = css_body,
                                            .cleanup = css_cleanup,
                                            .ctx = &extract_ctx_def};
const kr_processor_t kr_proc_extract_end = {.name = "extract-end", .run = end_run,
                                            .ctx = &extract_ctx_def};
