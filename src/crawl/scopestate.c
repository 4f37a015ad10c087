/*
 * The crawl's scope as part of its state (see scopestate.h): the seeds
 * and scope rules kept in the state database, the check that a start or a
 * reload puts no host with URIs out of scope, and the revival of URIs the
 * scope or a robots.txt disregarded once they are in again. Revival reads
 * the disregarded URIs a page at a time through their partial index
 * (store.h, uris_disregarded), so its cost is that of the URIs concerned,
 * not of the crawl. Sections: seeds and rules kept, the exile check,
 * revival.
 */
#include "scopestate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "internal.h"
#include "log.h"

#define META_MODE "scope.mode"
#define META_PREFIXES "scope.surt-prefixes" /* one per line */
#define PREFIXES_MAX (256u << 10)           /* the kept prefixes' text */
#define NAMES_SHOWN 5                       /* hosts a refusal names */
#define REVIVE_PAGE 512                     /* URIs read per page */

/* ---- seeds and rules kept ---------------------------------------------------- */

static int push_seed(void *ud, const char *url, size_t len, unsigned flags) {
  kr_seeds_t *s = ud;
  if (s->n >= KR_SEEDS_MAX_SEEDS) return 0; /* as a seeds file is capped */
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->v = kr_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = (kr_seed_t){.url = kr_xstrndup(url, len), .len = len, .flags = flags & 0xffu};
  return 0;
}

int kr__scopestate_seeds_load(kr_store_t *st, kr_seeds_t *out) {
  return kr_store_seeds_each(st, push_seed, out);
}

int kr__scopestate_save(kr_store_t *st, const kr_seeds_t *seeds, const kr_config_view_t *g,
                   uint64_t now) {
  int rc = 0;
  if (seeds) {
    rc = kr_store_seeds_clear(st);
    for (size_t i = 0; i < seeds->n && !rc; i++)
      rc = kr_store_seed_put(st, seeds->v[i].url, seeds->v[i].len, seeds->v[i].flags & 0xffu, now);
  }
  kr_buf_t b;
  kr_buf_init(&b, PREFIXES_MAX);
  if (!rc) {
    kr_config_format(g, KR_CFG_SCOPE_MODE, &b);
    kr_buf_append(&b, "", 1);
    rc = kr_store_meta_set(st, META_MODE, b.data);
  }
  if (!rc) {
    kr_buf_reset(&b);
    for (size_t i = 0; i < kr_config_list_len(g, KR_CFG_SCOPE_SURT_PREFIXES); i++) {
      if (i) kr_buf_append_str(&b, "\n");
      kr_buf_append_str(&b, kr_config_list_item(g, KR_CFG_SCOPE_SURT_PREFIXES, i));
    }
    kr_buf_append(&b, "", 1);
    rc = kr_store_meta_set(st, META_PREFIXES, b.data);
  }
  kr_buf_free(&b);
  return rc;
}

int kr__scopestate_kept_new(kr_crawl_t *c, const kr_config_view_t *g, const kr_seeds_t *kept,
                       kr_scope_t **out, char *err, size_t errlen) {
  kr_store_t *st = kr_frontier_store(c->frontier);
  kr_scope_opts_t so;
  kr_scope_opts_init(&so);
  char mode[32];
  int rc = kr_store_meta_get(st, META_MODE, mode, sizeof mode);
  if (rc < 0) return rc;
  int m = rc ? kr_scope_mode_parse(mode) : -1;
  if (m < 0) { /* none kept (a crawl from before schema 7): the config's */
    kr_buf_t b;
    kr_buf_init(&b, 64);
    kr_config_format(g, KR_CFG_SCOPE_MODE, &b);
    kr_buf_append(&b, "", 1);
    m = kr_scope_mode_parse(b.data);
    kr_buf_free(&b);
  }
  so.mode = m < 0 ? KR_SCOPE_HOST : (kr_scope_mode_t)m;
  char *text = kr_xmalloc(PREFIXES_MAX);
  rc = kr_store_meta_get(st, META_PREFIXES, text, PREFIXES_MAX);
  if (rc < 0) {
    free(text);
    return rc;
  }
  size_t np = 0;
  const char **pre = NULL;
  if (rc) {
    for (char *p = text, *e; *p; p = e) {
      e = p + strcspn(p, "\n");
      if (*e) *e++ = '\0';
      if (!*p) continue;
      pre = kr_xrealloc(pre, (np + 1) * sizeof *pre);
      pre[np++] = p;
    }
  } else {
    np = kr_config_list_len(g, KR_CFG_SCOPE_SURT_PREFIXES);
    pre = np ? kr_xcalloc(np, sizeof *pre) : NULL;
    for (size_t i = 0; i < np; i++) pre[i] = kr_config_list_item(g, KR_CFG_SCOPE_SURT_PREFIXES, i);
  }
  so.surt_prefixes = pre;
  so.n_surt_prefixes = np;
  rc = kr_scope_new(&so, out, err, errlen);
  free(pre);
  free(text);
  if (!rc && kept) (void)kr_scope_add_seeds(*out, kept); /* kept seeds parsed once already */
  return rc;
}

/* ---- the exile check ------------------------------------------------------------- */

/* 1 when url is in scope's prefix set (or accepted by its own rules) as a
 * seed would be. */
static int in_scope(kr_scope_t *scope, const kr_url_t *url) {
  kr_scope_candidate_t cand = {.url = url, .hops = kr_slice("", 0), .via = NULL};
  return kr_scope_decide(scope, &cand, NULL, NULL);
}

typedef struct names {
  char **v;
  size_t n, cap;
} names_t;

static void names_add(names_t *nm, const char *p, size_t n) {
  if (nm->n == nm->cap) {
    nm->cap = nm->cap ? 2 * nm->cap : 16;
    nm->v = kr_xrealloc(nm->v, nm->cap * sizeof *nm->v);
  }
  nm->v[nm->n++] = kr_xstrndup(p, n);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A probe URL exiled: in old, not in next. */
static int exiled(kr_scope_t *old, kr_scope_t *next, const kr_url_t *u) {
  return in_scope(old, u) && !in_scope(next, u);
}

size_t kr__scopestate_exiled(kr_crawl_t *c, kr_scope_t *old, const kr_seeds_t *old_seeds,
                        kr_scope_t *next, char *msg, size_t msglen) {
  names_t nm = {0};
  for (size_t i = 0; old_seeds && i < old_seeds->n; i++) {
    kr_url_t *u = NULL;
    if (kr_url_parse(old_seeds->v[i].url, old_seeds->v[i].len, NULL, &u)) continue;
    if (exiled(old, next, u)) {
      kr_slice_t h = kr_url_host(u);
      names_add(&nm, h.p, h.n);
    }
    kr_url_free(u);
  }
  /* Hosts reached from the seeds (another subdomain in domain mode, a
   * prefix of surt-prefixes): the root of each host queue's name. */
  uint64_t now = kr_crawl_now(c);
  size_t it = 0;
  kr_host_report_t r;
  kr_buf_t b;
  kr_buf_init(&b, KR_URL_MAX);
  while (kr_frontier_report_next(c->frontier, &it, now, &r)) {
    if (!r.c.discovered) continue;
    kr_buf_reset(&b);
    kr_buf_append_str(&b, "http://");
    kr_buf_append_str(&b, r.name);
    kr_buf_append(&b, "/", 2); /* NUL included, not in the length */
    b.len--;
    kr_url_t *u = NULL;
    if (kr_url_parse(b.data, b.len, NULL, &u)) continue;
    if (exiled(old, next, u)) names_add(&nm, r.name, strlen(r.name));
    kr_url_free(u);
  }
  kr_buf_free(&b);
  size_t distinct = 0;
  if (nm.n) qsort(nm.v, nm.n, sizeof *nm.v, cmp_str);
  size_t off = 0;
  if (msglen) msg[0] = '\0';
  for (size_t i = 0; i < nm.n; i++) {
    if (i && strcmp(nm.v[i], nm.v[i - 1]) == 0) continue;
    if (distinct++ < NAMES_SHOWN && off < msglen) {
      int w = snprintf(msg + off, msglen - off, "%s%s", distinct > 1 ? ", " : "", nm.v[i]);
      if (w > 0) off += (size_t)w;
    }
  }
  if (distinct > NAMES_SHOWN && off < msglen)
    snprintf(msg + off, msglen - off, " and %zu more", distinct - NAMES_SHOWN);
  for (size_t i = 0; i < nm.n; i++) free(nm.v[i]);
  free(nm.v);
  return distinct;
}

/* ---- revival --------------------------------------------------------------------- */

/* The URIs of one page, copied: the store's memory does not outlive the
 * page, and the frontier writes to the store. */
typedef struct page {
  struct {
    char *url, *hops;
    size_t url_len, hop_len;
  } v[REVIVE_PAGE];
  size_t n;
  char *last;           /* the page's last URL: the next page starts after it */
  size_t last_len;
} page_t;

static void page_cb(void *ud, const kr_uri_row_t *r) {
  page_t *p = ud;
  if (p->n == REVIVE_PAGE) return;
  p->v[p->n].url = kr_xstrndup(r->url, r->url_len);
  p->v[p->n].url_len = r->url_len;
  p->v[p->n].hops = kr_xstrndup(r->hop_path ? r->hop_path : "", r->hop_len);
  p->v[p->n].hop_len = r->hop_len;
  p->n++;
}

static void page_clear(page_t *p) {
  free(p->last);
  p->last = NULL;
  p->last_len = 0;
  if (p->n) { /* the next page starts after this one's last URL */
    p->last = p->v[p->n - 1].url;
    p->last_len = p->v[p->n - 1].url_len;
    p->v[p->n - 1].url = NULL;
  }
  for (size_t i = 0; i < p->n; i++) {
    free(p->v[i].url);
    free(p->v[i].hops);
  }
  p->n = 0;
}

/* Decides whether one disregarded URI comes back. */
typedef int (*revive_fn)(kr_crawl_t *c, const kr_url_t *url, kr_slice_t hops, const void *ud);

/* Walk the disregarded URIs of status within (*after, below), at most
 * max_pages pages; queue again those fn accepts (*revived counts them).
 * *after (owned, NULL: from the first) moves past the URIs walked.
 * 1 when more may remain, 0 when done, KR_EDB. */
static int walk_pages(kr_crawl_t *c, int status, char **after, size_t *after_len,
                      const char *below, size_t below_len, revive_fn fn, const void *ud,
                      uint64_t now, size_t max_pages, int64_t *revived) {
  kr_store_t *st = kr_frontier_store(c->frontier);
  page_t *p = kr_xcalloc(1, sizeof *p);
  p->last = *after;
  p->last_len = *after_len;
  int more = 1;
  for (size_t pages = 0; more == 1 && pages < max_pages; pages++) {
    int n = kr_store_disregarded_page(st, status, p->last, p->last_len, below, below_len,
                                      REVIVE_PAGE, page_cb, p);
    if (n < 0) {
      more = n;
      break;
    }
    for (size_t i = 0; i < p->n; i++) {
      kr_url_t *u = NULL;
      if (kr_url_parse(p->v[i].url, p->v[i].url_len, NULL, &u)) continue;
      int back = fn(c, u, kr_slice(p->v[i].hops, p->v[i].hop_len), ud);
      kr_url_free(u);
      if (!back) continue;
      kr_link_t l = {.url = p->v[i].url, .url_len = p->v[i].url_len, .hop_path = p->v[i].hops,
                     .hop_len = p->v[i].hop_len, .directive = KR_DIRECTIVE_NORMAL,
                     .next_at = now, .flags = KR_LINK_REVIVE};
      int rc = kr_frontier_add(c->frontier, &l, now);
      if (rc == KR_EDB) {
        more = rc;
        break;
      }
      if (rc >= 0) (*revived)++;
    }
    if ((size_t)n < REVIVE_PAGE && more == 1) more = 0;
    page_clear(p); /* p->last: this page's last URL */
  }
  *after = p->last;
  *after_len = p->last_len;
  free(p);
  return more;
}

/* The scope accepts the URI now, as the scope processor would decide. */
static int scope_accepts(kr_crawl_t *c, const kr_url_t *url, kr_slice_t hops, const void *ud) {
  (void)ud;
  kr_slice_t host = kr_url_hostname(url);
  const kr_hostcfg_t *hc = kr_crawl_hostcfg(c, host.p, host.n);
  kr_scope_candidate_t cand = {.url = url, .hops = hops, .via = NULL};
  return kr_scope_decide(c->scope, &cand, &hc->limits, NULL);
}

/* every status the scope processor gives (kr_crawllog_status_of_scope) */
static const int scope_statuses[] = {KR_S_OUT_OF_SCOPE, KR_S_DEEMED_CHAFF,
                                     KR_S_TOO_MANY_LINK_HOPS, KR_S_TOO_MANY_EMBED_HOPS};

/* A scope revival in steps: where it stands. */
struct kr_scopestate_walk {
  size_t status_i;   /* in scope_statuses */
  char *after;       /* the last URL walked of that status, NULL: none */
  size_t after_len;
  int64_t revived;
};

static void walk_free(kr_crawl_t *c) {
  if (!c->scope_walk) return;
  free(c->scope_walk->after);
  free(c->scope_walk);
  c->scope_walk = NULL;
}

void kr__scopestate_revive_begin(kr_crawl_t *c) {
  walk_free(c); /* a walk under an older scope starts over */
  c->scope_walk = kr_xcalloc(1, sizeof *c->scope_walk);
}

int kr__scopestate_revive_step(kr_crawl_t *c, uint64_t now, uint64_t budget_ns, int64_t *revived) {
  struct kr_scopestate_walk *w = c->scope_walk;
  if (!w) return 0;
  uint64_t until = uv_hrtime() + budget_ns;
  int more = 1;
  while (w->status_i < ARRAY_SIZE(scope_statuses)) {
    more = walk_pages(c, scope_statuses[w->status_i], &w->after, &w->after_len, NULL, 0,
                      scope_accepts, NULL, now, 1, &w->revived);
    if (more < 0) break;
    if (more == 0) {
      w->status_i++;
      free(w->after);
      w->after = NULL;
      w->after_len = 0;
    }
    if (budget_ns && uv_hrtime() >= until) break;
  }
  if (revived) *revived = w->revived;
  if (more < 0) {
    walk_free(c);
    return more;
  }
  if (w->status_i < ARRAY_SIZE(scope_statuses)) return 1;
  walk_free(c);
  return 0;
}

void kr__scopestate_revive_free(kr_crawl_t *c) { walk_free(c); }

int64_t kr__scopestate_revive(kr_crawl_t *c, uint64_t now) {
  int64_t n = 0;
  kr__scopestate_revive_begin(c);
  int rc = kr__scopestate_revive_step(c, now, 0, &n);
  return rc < 0 ? rc : n;
}

typedef struct robots_change {
  const kr_robots_t *r;
  kr_slice_t origin; /* "http://h:8/": the href up to the path */
} robots_change_t;

static int robots_allow(kr_crawl_t *c, const kr_url_t *url, kr_slice_t hops, const void *ud) {
  (void)c, (void)hops;
  const robots_change_t *rc = ud;
  /* the page's range also holds hosts that extend the name ("h.evil") */
  if (kr_url_href_len(url) < rc->origin.n ||
      memcmp(kr_url_href(url), rc->origin.p, rc->origin.n) != 0)
    return 0;
  return kr_robots_allowed(rc->r, kr_url_request_target(url), NULL);
}

int64_t kr__scopestate_robots_revive(kr_crawl_t *c, const kr_url_t *robots_url, const kr_robots_t *r,
                          uint64_t now) {
  /* The origin's URLs start with the href up to the path ("http://h:8/"):
   * they lie after "http://h:8" and before it with '/' raised to '0'. */
  const char *href = kr_url_href(robots_url);
  kr_slice_t path = kr_url_pathname(robots_url);
  if (!path.p || path.p <= href || path.p[0] != '/') return 0;
  size_t n = (size_t)(path.p - href) + 1;
  char *below = kr_xstrndup(href, n);
  below[n - 1] = '/' + 1;
  robots_change_t ch = {.r = r, .origin = kr_slice(href, n)};
  char *after = kr_xstrndup(href, n - 1);
  size_t after_len = n - 1;
  int64_t revived = 0;
  int rc = walk_pages(c, KR_S_ROBOTS_PRECLUDED, &after, &after_len, below, n, robots_allow, &ch,
                      now, SIZE_MAX, &revived);
  free(after);
  free(below);
  return rc < 0 ? rc : revived;
}
