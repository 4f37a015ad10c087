/*
 * The fetch (fetch.h): annotations and decisions, the links a fetch
 * keeps, and the pool of fetch objects.
 *
 * Links: every link is resolved against a base, canonicalized (crawl's
 * canon options), given its hop path (parent's + L/E/R, Heritrix's "N+"
 * form past 50 hops) and checked against the scope with the [host] limits
 * of its own host; accepted ones are copied into the fetch's arena and
 * handed to the frontier in one batch by the post phase, with the page as
 * via. Caps: extract's max links per document, the fetch arena's cap, and
 * a budget for the links all running fetches hold together (a thousand
 * hostile pages at once cannot hold gigabytes of URLs); a fetch over a
 * cap keeps what it has and is annotated "links-capped".
 *
 * The pool: objects are kept for reuse (up to the crawl's valence, a few
 * thousand). Putting one back zeroes its shared part, trims its pooled
 * buffers and has the chain reset every processor's context; nothing here
 * knows what a processor keeps.
 * Sections: annotations, links, the pool.
 */
#include "fetch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawl.h"
#include "internal.h"

#define FETCH_ARENA_BLOCK (16u << 10)
#define FETCH_ARENA_CAP (16u << 20)  /* links of one page */
#define POOL_KEEP_BODY (64u << 10)   /* pooled objects keep smaller buffers */
#define POOL_KEEP_LINKS 1024

/* ---- annotations ------------------------------------------------------------------ */

void kr_fetch_annotate(kr_fetch_t *f, const char *s) {
  if (f->nannot < KR_FETCH_MAX_ANNOT) f->annot[f->nannot++] = kr_slice_cstr(s);
}

void kr_fetch_annotate_first(kr_fetch_t *f, const char *s) {
  /* full: the last one gives way */
  size_t n = f->nannot < KR_FETCH_MAX_ANNOT ? f->nannot : KR_FETCH_MAX_ANNOT - 1;
  memmove(f->annot + 1, f->annot, n * sizeof *f->annot);
  f->annot[0] = kr_slice_cstr(s);
  f->nannot = n + 1;
}

void kr_fetch_annotatef(kr_fetch_t *f, const char *fmt, ...) {
  if (f->nannot >= KR_FETCH_MAX_ANNOT) return;
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
  char *s = kr_arena_strndup(&f->arena, buf, len);
  if (s) f->annot[f->nannot++] = kr_slice(s, len);
}

void kr_fetch_decide(kr_fetch_t *f, kr_outcome_kind_t kind, int log_status) {
  f->decided = 1;
  f->outcome.kind = kind;
  f->outcome.status = log_status;
  f->outcome.no_contact = 1;
  f->log_status = log_status;
}

/* ---- links ------------------------------------------------------------------------ */

/* raw resolved against base and canonicalised: 0, the canonical string
 * in c->canon_buf and its parse in *out; or -1 (not a followable link). */
static int resolve(kr_crawl_t *c, kr_slice_t raw, const kr_url_t *base, kr_url_t **out) {
  kr_url_t *abs = NULL, *cu = NULL;
  *out = NULL;
  if (kr_url_parse(raw.p, raw.n, base, &abs)) goto fail;
  if (!kr_url_is_http(abs)) goto fail;
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

int kr_fetch_add_link(kr_fetch_t *f, const kr_url_t *base, kr_slice_t raw, char hop,
                      size_t *idx, const kr_linkcache_key_t *key) {
  kr_crawl_t *c = f->crawl;
  c->st.links_found++;
  if (f->nlinks >= c->xopts.max_links) {
    f->links_dropped++;
    return KR_ETOOBIG;
  }
  /* Resolution and canonicalisation come from the link cache when the
   * same link was seen against an equivalent base (nav links: on every
   * page), with the scope's memo and the host's settings of the result. */
  if (!base) base = f->url;
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

int kr_fetch_wants_links(const kr_fetch_t *f) {
  /* content_set: unchanged by a 304 or a mid-fetch abort, no body comes */
  return !f->is_robots && f->resp && f->resp->status >= 200 && f->resp->status < 300 &&
         !f->ad.content_set;
}

/* ---- the pool ---------------------------------------------------------------------- */

kr_fetch_t *kr__fetch_get(kr_crawl_t *c) {
  kr_fetch_t *f = c->free_fetches;
  if (f) {
    c->free_fetches = f->next;
  } else {
    f = kr_xcalloc(1, sizeof *f);
    f->crawl = c;
    f->worker = (unsigned)c->nfetch_objs++;
    kr_arena_init(&f->arena, FETCH_ARENA_BLOCK, FETCH_ARENA_CAP);
    kr_buf_init(&f->body, c->robots_max_size);
    kr_chain_fetch_setup(&c->chain, &f->cf);
  }
  f->prev = NULL;
  f->next = c->inflight;
  if (c->inflight) c->inflight->prev = f;
  c->inflight = f;
  c->in_flight++;
  return f;
}

void kr__fetch_put(kr_crawl_t *c, kr_fetch_t *f) {
  if (f->prev)
    f->prev->next = f->next;
  else
    c->inflight = f->next;
  if (f->next) f->next->prev = f->prev;
  c->in_flight--;
  if (f->http) kr_http_fetch_release(f->http);
  kr_url_free(f->url);
  kr_arena_reset(&f->arena);
  c->links_bytes -= f->links_bytes;
  /* Up to 4,096 pooled objects: a robots.txt or a page with a huge link
   * list must not stay allocated in each of them. */
  if (f->body.cap > POOL_KEEP_BODY) {
    kr_buf_free(&f->body);
    kr_buf_init(&f->body, c->robots_max_size);
  }
  kr_buf_reset(&f->body);
  if (f->links_cap > POOL_KEEP_LINKS) {
    free(f->links);
    f->links = NULL;
    f->links_cap = 0;
  }
  if (f->fmeta_cap > POOL_KEEP_LINKS) {
    free(f->fmeta);
    f->fmeta = NULL;
    f->fmeta_cap = 0;
  }
  kr_chain_fetch_recycle(&f->cf);
  /* The shared part goes; the chain's view keeps its contexts. */
  void *ctx = f->cf.ctx;
  memset(f, 0, offsetof(kr_fetch_t, worker));
  f->cf.ctx = ctx;
  f->cf.chain = &c->chain;
  f->crawl = c;
  f->next = c->free_fetches;
  c->free_fetches = f;
}

size_t kr__fetch_pool_bytes(const kr_crawl_t *c) {
  size_t n = 0;
  for (int list = 0; list < 2; list++)
    for (const kr_fetch_t *f = list ? c->inflight : c->free_fetches; f; f = f->next)
      n += sizeof *f + f->body.cap + f->links_cap * sizeof *f->links +
           f->fmeta_cap * sizeof *f->fmeta + f->arena.block_size + kr_chain_fetch_mem(&f->cf);
  return n;
}

void kr__fetch_destroy(kr_fetch_t *f) {
  kr_chain_fetch_teardown(&f->cf);
  free(f->fmeta);
  free(f->links);
  kr_arena_free(&f->arena);
  kr_buf_free(&f->body);
  free(f);
}
