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
 * Every link is resolved against the base, canonicalized (crawl's canon
 * options), given its hop path (parent's + L/E/R, Heritrix's "N+" form
 * past 50 hops) and checked against the scope with the [host] limits of
 * its own host; accepted ones are copied into the fetch's arena and
 * handed to the frontier in one batch by the post phase, with the page as
 * via. Caps: extract's max links per document, the fetch arena's cap, and
 * a budget for the links all running fetches hold together (a thousand
 * hostile pages at once cannot hold gigabytes of URLs); a fetch over a cap
 * keeps what it has and is annotated "links-capped".
 * Sections: one link, the processors.
 */
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "linkcache.h"
#include "log.h"

/* ---- one link ------------------------------------------------------------------- */

static int is_http(const kr_url_t *u) {
  kr_slice_t s = kr_url_scheme(u);
  return kr_slice_eq(s, KR_SLICE_LIT("http")) || kr_slice_eq(s, KR_SLICE_LIT("https"));
}

/* raw resolved against base and canonicalised: 0, the canonical string
 * in c->canon_buf and its parse in *out; or -1 (not a followable link). */
static int resolve(kr_crawl_t *c, kr_slice_t raw, const kr_url_t *base, kr_url_t **out) {
  kr_url_t *abs = NULL, *cu = NULL;
  *out = NULL;
  if (kr_url_parse(raw.p, raw.n, base, &abs)) goto fail;
  if (!is_http(abs)) goto fail;
  kr_buf_reset(&c->canon_buf);
  if (kr_url_canon(abs, c->canon, &c->canon_buf)) goto fail;
  /* Most links are canonical already: then the resolved URL is the
   * canonical one (an http(s) URL parses back from its serialization to
   * itself), and the second parse, a tenth of a page's CPU, is saved. */
  if (c->canon_buf.len == kr_url_href_len(abs) &&
      memcmp(c->canon_buf.data, kr_url_href(abs), c->canon_buf.len) == 0) {
    cu = abs;
    abs = NULL;
  } else if (kr_url_parse(c->canon_buf.data, c->canon_buf.len, NULL, &cu)) {
    goto fail;
  }
  kr_url_free(abs);
  *out = cu;
  return 0;
fail:
  kr_url_free(abs);
  kr_url_free(cu);
  return -1;
}

/* kr__extract_add_link with raw's link-cache key against the fetch's
 * base, or NULL: computed here. */
static int add_link_key(kr_fetch_t *f, kr_slice_t raw, char hop, size_t *idx,
                        const kr_linkcache_key_t *key) {
  kr_crawl_t *c = f->crawl;
  c->st.links_found++;
  if (f->nlinks >= c->xopts.max_links) {
    f->links_dropped++;
    return KR_ETOOBIG;
  }
  /* Resolution and canonicalisation come from the link cache when the
   * same link was seen against an equivalent base (nav links: on every
   * page), with the scope's memo and the host's settings of the result. */
  const kr_url_t *base = f->base ? f->base : f->url;
  kr_url_t *own = NULL; /* the canonical URL parsed on a miss */
  const kr_url_t *cu;
  const char *canon;
  size_t canon_len;
  kr_linkcache_key_t k;
  if (!key) {
    kr_linkcache_key(raw.p, raw.n, base, &k);
    key = &k;
  }
  kr_linkcache_entry_t *e = kr_linkcache_get(c->links_cache, key, raw.p, raw.n, base);
  if (!e) {
    if (resolve(c, raw, base, &own)) {
      kr_linkcache_put(c->links_cache, key, raw.p, raw.n, base, NULL, 0, NULL);
      goto reject;
    }
    e = kr_linkcache_put(c->links_cache, key, raw.p, raw.n, base, c->canon_buf.data,
                         c->canon_buf.len, own);
  }
  if (e) {
    if (!e->canon) goto reject;
    cu = e->url;
    canon = e->canon;
    canon_len = e->canon_len;
  } else {
    cu = own;
    canon = c->canon_buf.data;
    canon_len = c->canon_buf.len;
  }
  kr_buf_reset(&c->hop_buf);
  if (kr_scope_hops_extend(kr_slice(f->curi->hop_path, f->curi->hop_len), hop, &c->hop_buf))
    goto reject;
  const kr_hostcfg_t *hc;
  if (e && e->hostcfg && e->hostcfg_gen == c->reloads) {
    hc = e->hostcfg;
  } else {
    kr_slice_t host = kr_url_hostname(cu);
    hc = kr_crawl_hostcfg(c, host.p, host.n);
    if (e) { /* a reload replaced the settings and the scope: forget both */
      e->hostcfg = hc;
      e->hostcfg_gen = c->reloads;
      e->memo = (kr_scope_memo_t){0};
    }
  }
  kr_scope_candidate_t cand = {
      .url = cu, .hops = kr_slice(c->hop_buf.data, c->hop_buf.len), .via = f->url};
  if (!kr_scope_decide_memo(c->scope, &cand, &hc->limits, NULL, e ? &e->memo : NULL))
    goto reject;
  kr_url_free(own);
  own = NULL;
  size_t need = canon_len + c->hop_buf.len + 2;
  if (c->links_bytes + need > c->links_budget) { /* all fetches together */
    f->links_dropped++;
    return KR_ETOOBIG;
  }
  char *u = kr_arena_strndup(&f->arena, canon, canon_len);
  char *h = kr_arena_strndup(&f->arena, c->hop_buf.data, c->hop_buf.len);
  if (!u || !h) {
    f->links_dropped++;
    return KR_ETOOBIG;
  }
  if (f->nlinks == f->links_cap) {
    size_t ncap = f->links_cap ? f->links_cap * 2 : 64;
    if (ncap > c->xopts.max_links) ncap = c->xopts.max_links;
    f->links = kr_xrealloc(f->links, ncap * sizeof *f->links);
    f->links_cap = ncap;
  }
  f->links[f->nlinks++] = (kr_link_t){.url = u,
                                      .url_len = canon_len,
                                      .hop_path = h,
                                      .hop_len = c->hop_buf.len,
                                      .via = f->curi->fp,
                                      .directive = KR_DIRECTIVE_NORMAL};
  f->links_bytes += need;
  c->links_bytes += need;
  c->st.links_scheduled++;
  if (idx) *idx = f->nlinks - 1;
  return 1;
reject:
  kr_url_free(own);
  c->st.links_rejected++;
  return 0;
}

int kr__extract_add_link(kr_fetch_t *f, kr_slice_t raw, char hop, size_t *idx) {
  return add_link_key(f, raw, hop, idx, NULL);
}

/* 0, or KR_ETOOBIG once the fetch holds as many links as it may. */
static int add_link(kr_fetch_t *f, kr_slice_t raw, char hop) {
  int rc = kr__extract_add_link(f, raw, hop, NULL);
  return rc < 0 ? rc : 0;
}

/* The streamed links of a page (on_link) are each deferred until two
 * more have arrived: the link cache's slots for a link are prefetched
 * when it arrives, its entry when the next one comes, and it is looked up
 * at the one after, so those two trips to memory (most of a cached
 * link's cost) overlap the tokenizer's work. A chunk's waiting links are
 * added before its feed returns, and a <base> adds them first, so every
 * link is added against the same base, in the same order, before
 * anything else sees the fetch's links; only the moment within the feed
 * moves. */
static int add_deferred(kr_fetch_t *f, unsigned keep) {
  while (f->defer.has > keep) {
    const struct kr_link_waiting *w = &f->defer.q[f->defer.head];
    f->defer.head = (uint8_t)((f->defer.head + 1) % KR_LINK_DEFER_DEPTH);
    f->defer.has--;
    int rc = add_link_key(f, kr_slice(w->raw, w->n), w->hop, NULL, &w->key);
    if (rc < 0) {
      f->defer.has = 0;
      f->defer.full = 1;
      return rc;
    }
  }
  return 0;
}

/* After a fed chunk: the waiting links are added. 0, or -1 when one found
 * the caps reached: the extractor is then stopped at its next link. */
static int end_of_chunk(kr_fetch_t *f) { return add_deferred(f, 0) < 0 ? -1 : 0; }

static void defer_reset(kr_fetch_t *f) {
  f->defer.head = 0;
  f->defer.has = 0;
  f->defer.full = 0;
}

static int on_link(void *ud, const kr_extract_link_t *l) {
  kr_fetch_t *f = ud;
  /* a waiting link, or a chunk's last one, met the caps: stop here, as
   * the extractor would have at that link */
  if (f->defer.full) return KR_ETOOBIG;
  if (l->kind == KR_EXTRACT_BASE) {
    int rc = add_deferred(f, 0);
    if (rc < 0) return rc;
    kr_url_t *b = NULL;
    if (kr_url_parse(l->url.p, l->url.n, f->url, &b) == 0 && is_http(b)) {
      kr_url_free(f->base);
      f->base = b;
    } else {
      kr_url_free(b);
    }
    return 0;
  }
  if (l->url.n > KR_LINK_DEFER_MAX) {
    int rc = add_deferred(f, 0);
    return rc < 0 ? rc : add_link(f, l->url, (char)l->kind);
  }
  int rc = add_deferred(f, KR_LINK_DEFER_DEPTH - 1);
  if (rc < 0) return rc;
  kr_linkcache_t *lc = f->crawl->links_cache;
  /* the link before this one: its slots are in by now, its entry next */
  unsigned i = (f->defer.head + f->defer.has) % KR_LINK_DEFER_DEPTH;
  if (f->defer.has)
    kr_linkcache_prefetch_entry(
        lc, &f->defer.q[(i + KR_LINK_DEFER_DEPTH - 1) % KR_LINK_DEFER_DEPTH].key);
  f->defer.has++;
  struct kr_link_waiting *w = &f->defer.q[i];
  kr_linkcache_key(l->url.p, l->url.n, f->base ? f->base : f->url, &w->key);
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
      add_link(f, f->resp->location, 'R');
  }
  kr_slice_t cl = kr_http_resp_header(f->resp, "Content-Location");
  if (cl.p && cl.n) add_link(f, kr_slice_trim(cl), 'R');
  return KR_PROC_NEXT;
}

int kr__extract_wants_links(const kr_fetch_t *f) {
  /* content_set: unchanged by a 304 or a mid-fetch abort, no body comes */
  return !f->is_robots && f->resp && f->resp->status >= 200 && f->resp->status < 300 &&
         !f->ad.content_set;
}
#define wants_links kr__extract_wants_links

static int html_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!wants_links(f)) return 0;
  if (!f->html)
    f->html = kr_extract_html_new(&c->xopts, on_link, f);
  else
    kr_extract_html_reset(f->html, on_link, f);
  f->html_active = 1;
  defer_reset(f);
  return 1;
}

static int html_body(kr_chain_fetch_t *cf, kr_processor_t *self, const char *p, size_t n) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  int rc = kr_extract_html_feed(f->html, p, n);
  int full = end_of_chunk(f);
  return rc < 0 || full < 0;
}

static int html_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  if (f->html_active) {
    kr_extract_html_finish(f->html);
    end_of_chunk(f); /* a link the finish gave */
    if (kr_extract_html_stats(f->html)->capped) f->links_dropped++;
    f->html_active = 0;
  }
  return KR_PROC_NEXT;
}

/* Links streamed out of a response whose fetch then failed (a timeout, a
 * reset mid-body) are still scheduled, but html_run/css_run were skipped:
 * count what the extractors dropped here, for the post phase's note. */
void kr__extract_note_capped(kr_fetch_t *f) {
  if (f->html_active && kr_extract_html_stats(f->html)->capped) f->links_dropped++;
  if (f->css_active && kr_extract_css_stats(f->css)->capped) f->links_dropped++;
}

static void html_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  container_of(cf, kr_fetch_t, cf)->html_active = 0;
}

static int css_headers(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  if (!wants_links(f)) return 0;
  if (!f->css)
    f->css = kr_extract_css_new(&c->xopts, on_link, f);
  else
    kr_extract_css_reset(f->css, on_link, f);
  f->css_active = 1;
  defer_reset(f);
  return 1;
}

static int css_body(kr_chain_fetch_t *cf, kr_processor_t *self, const char *p, size_t n) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  int rc = kr_extract_css_feed(f->css, p, n);
  int full = end_of_chunk(f);
  return rc < 0 || full < 0;
}

static int css_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  if (f->css_active) {
    kr_extract_css_finish(f->css);
    end_of_chunk(f); /* a link the finish gave */
    if (kr_extract_css_stats(f->css)->capped) f->links_dropped++;
    f->css_active = 0;
  }
  return KR_PROC_NEXT;
}

static void css_cleanup(kr_chain_fetch_t *cf, kr_processor_t *self) {
  container_of(cf, kr_fetch_t, cf)->css_active = 0;
}

void kr__proc_extract_register(kr_crawl_t *c) {
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "extract-headers",
                                          .phase = KR_PHASE_EXTRACT,
                                          .run = headers_run});
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "extract-html",
                                          .phase = KR_PHASE_EXTRACT,
                                          .ctype_re = c->re_html,
                                          .run = html_run,
                                          .on_headers = html_headers,
                                          .on_body = html_body,
                                          .cleanup = html_cleanup});
  kr__crawl_add_proc(c, &(kr_processor_t){.name = "extract-css",
                                          .phase = KR_PHASE_EXTRACT,
                                          .ctype_re = c->re_css,
                                          .run = css_run,
                                          .on_headers = css_headers,
                                          .on_body = css_body,
                                          .cleanup = css_cleanup});
}
