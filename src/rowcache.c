/*
 * Write-through uris rows (see rowcache.h). Rows sit in one array; an
 * open-addressing table of indices (fingerprints are hashes already)
 * finds them. Each row's texts and blobs live in one buffer of its own,
 * rebuilt on every write that changes them: the new buffer is filled
 * before the old one is freed, so a write may take its values from the
 * cached row itself.
 */
#include "rowcache.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct entry {
  kr_uri_row_t row;
  char *buf;
} entry_t;

struct kr_rowcache {
  size_t max;
  entry_t *e;
  size_t n, ecap;
  uint32_t *slot; /* index + 1; 0 empty */
  size_t scap;    /* power of two, > 2 n */
};

kr_rowcache_t *kr_rowcache_new(size_t max_rows) {
  kr_rowcache_t *c = kr_xcalloc(1, sizeof *c);
  c->max = max_rows < UINT32_MAX - 1 ? max_rows : UINT32_MAX - 1;
  return c;
}

void kr_rowcache_clear(kr_rowcache_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) free(c->e[i].buf);
  c->n = 0;
  if (c->slot) memset(c->slot, 0, c->scap * sizeof *c->slot);
}

void kr_rowcache_free(kr_rowcache_t *c) {
  if (!c) return;
  kr_rowcache_clear(c);
  free(c->e);
  free(c->slot);
  free(c);
}

size_t kr_rowcache_count(const kr_rowcache_t *c) { return c ? c->n : 0; }

static entry_t *find(const kr_rowcache_t *c, uint64_t fp) {
  if (!c->n) return NULL;
  size_t m = c->scap - 1;
  for (size_t j = (size_t)fp & m; c->slot[j]; j = (j + 1) & m) {
    entry_t *e = &c->e[c->slot[j] - 1];
    if (e->row.fp == fp) return e;
  }
  return NULL;
}

const kr_uri_row_t *kr_rowcache_get(kr_rowcache_t *c, uint64_t fp) {
  entry_t *e = c ? find(c, fp) : NULL;
  return e ? &e->row : NULL;
}

static void slot_put(kr_rowcache_t *c, uint64_t fp, uint32_t idx) {
  size_t m = c->scap - 1, j = (size_t)fp & m;
  while (c->slot[j]) j = (j + 1) & m;
  c->slot[j] = idx + 1;
}

static void grow(kr_rowcache_t *c) {
  if (c->n == c->ecap) {
    c->ecap = c->ecap ? c->ecap * 2 : 1024;
    c->e = kr_xrealloc(c->e, c->ecap * sizeof *c->e);
  }
  if ((c->n + 1) * 2 > c->scap) {
    free(c->slot);
    c->scap = c->scap ? c->scap * 2 : 2048;
    c->slot = kr_xcalloc(c->scap, sizeof *c->slot);
    for (size_t i = 0; i < c->n; i++) slot_put(c, c->e[i].row.fp, (uint32_t)i);
  }
}

/* The variable-length columns of a row, as SQLite hands them back. */
enum { F_URL, F_HOP, F_CTYPE, F_DIGEST, F_ETAG, F_HIST, F_N };

static void fields(kr_uri_row_t *r, const void ***pp, size_t **lp) {
  pp[F_URL] = (const void **)&r->url, lp[F_URL] = &r->url_len;
  pp[F_HOP] = (const void **)&r->hop_path, lp[F_HOP] = &r->hop_len;
  pp[F_CTYPE] = (const void **)&r->content_type, lp[F_CTYPE] = &r->content_type_len;
  pp[F_DIGEST] = (const void **)&r->digest, lp[F_DIGEST] = &r->digest_len;
  pp[F_ETAG] = (const void **)&r->etag, lp[F_ETAG] = &r->etag_len;
  pp[F_HIST] = (const void **)&r->history, lp[F_HIST] = &r->history_len;
}

/* Copy every variable-length field of *r (pointing anywhere, the old
 * buffer included) into a buffer of e's own, and point *r there. Texts
 * keep a terminating NUL as SQLite's do. */
static void own(entry_t *e, kr_uri_row_t *r) {
  const void **p[F_N];
  size_t *l[F_N];
  fields(r, p, l);
  size_t need = 0;
  for (int i = 0; i < F_N; i++)
    if (*p[i]) need += *l[i] + 1;
  char *nb = kr_xmalloc(need ? need : 1);
  size_t o = 0;
  for (int i = 0; i < F_N; i++) {
    if (!*p[i]) continue;
    memcpy(nb + o, *p[i], *l[i]);
    nb[o + *l[i]] = 0;
    *p[i] = nb + o;
    o += *l[i] + 1;
  }
  free(e->buf);
  e->buf = nb;
  e->row = *r;
}

void kr_rowcache_put(kr_rowcache_t *c, const kr_uri_row_t *r) {
  if (!c) return;
  entry_t *e = find(c, r->fp);
  if (!e) {
    if (c->n >= c->max) return;
    grow(c);
    e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->row.fp = r->fp;
    slot_put(c, r->fp, (uint32_t)c->n);
    c->n++;
  }
  kr_uri_row_t copy = *r;
  own(e, &copy);
}

void kr_rowcache_update(kr_rowcache_t *c, const kr_uri_row_t *r) {
  entry_t *e = c ? find(c, r->fp) : NULL;
  if (!e) return;
  kr_uri_row_t n = e->row;
  n.directive = r->directive;
  n.next_at = r->next_at;
  n.state = r->state;
  n.last_visit = r->last_visit;
  n.wait_ms = r->wait_ms > INT64_MAX ? INT64_MAX : r->wait_ms;
  n.visits = r->visits;
  n.versions = r->versions;
  n.retries = r->retries;
  n.status = r->status;
  /* text: NULL stays NULL, anything else (even empty) is a value; a blob
   * of no bytes is NULL (store.c bind_text / bind_blob) */
  n.content_type = r->content_type;
  n.content_type_len = r->content_type ? r->content_type_len : 0;
  n.etag = r->etag;
  n.etag_len = r->etag ? r->etag_len : 0;
  n.digest = r->digest && r->digest_len ? r->digest : NULL;
  n.digest_len = n.digest ? r->digest_len : 0;
  n.history = r->history && r->history_len ? r->history : NULL;
  n.history_len = n.history ? r->history_len : 0;
  n.last_modified = r->last_modified;
  own(e, &n);
}

void kr_rowcache_set_sched(kr_rowcache_t *c, uint64_t fp, int directive, uint64_t next_at,
                           int state) {
  entry_t *e = c ? find(c, fp) : NULL;
  if (!e) return;
  e->row.directive = directive;
  e->row.next_at = next_at;
  e->row.state = state;
}

void kr_rowcache_set_hint(kr_rowcache_t *c, uint64_t fp, double rate) {
  entry_t *e = c ? find(c, fp) : NULL;
  if (e) e->row.hint_rate = rate;
}
