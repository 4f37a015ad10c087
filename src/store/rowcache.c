/*
 * Write-through uris rows (see rowcache.h). Each row is one block: the
 * fixed fields, then its texts and blobs, so a lookup touches the slot
 * and one run of memory (the cache is read once per fetch, and at a
 * hundred thousand rows every separate piece was a cache miss). The slot
 * table holds the fingerprint next to the block pointer (fingerprints are
 * hashes already). A write builds the new block before freeing the old
 * one, so it may take its values from the cached row itself.
 */
#include "rowcache.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct block {
  kr_uri_row_t row;
  char data[]; /* the row's texts and blobs */
} block_t;

typedef struct slot {
  uint64_t fp;
  block_t *b; /* NULL: empty */
} slot_t;

struct kr_rowcache {
  size_t max, n;
  slot_t *slot;
  size_t scap; /* power of two, >= 2 n */
};

kr_rowcache_t *kr_rowcache_new(size_t max_rows) {
  kr_rowcache_t *c = kr_xcalloc(1, sizeof *c);
  c->max = max_rows < SIZE_MAX / 4 ? max_rows : SIZE_MAX / 4;
  return c;
}

void kr_rowcache_clear(kr_rowcache_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->scap; i++) {
    free(c->slot[i].b);
    c->slot[i].b = NULL;
  }
  c->n = 0;
}

void kr_rowcache_free(kr_rowcache_t *c) {
  if (!c) return;
  kr_rowcache_clear(c);
  free(c->slot);
  free(c);
}

size_t kr_rowcache_count(const kr_rowcache_t *c) { return c ? c->n : 0; }

static slot_t *find(const kr_rowcache_t *c, uint64_t fp) {
  if (!c || !c->n) return NULL;
  size_t m = c->scap - 1;
  for (size_t j = (size_t)fp & m; c->slot[j].b; j = (j + 1) & m)
    if (c->slot[j].fp == fp) return &c->slot[j];
  return NULL;
}

const kr_uri_row_t *kr_rowcache_get(kr_rowcache_t *c, uint64_t fp) {
  slot_t *s = find(c, fp);
  return s ? &s->b->row : NULL;
}

static slot_t *slot_new(kr_rowcache_t *c, uint64_t fp) {
  size_t m = c->scap - 1, j = (size_t)fp & m;
  while (c->slot[j].b) j = (j + 1) & m;
  c->slot[j].fp = fp;
  return &c->slot[j];
}

static void grow(kr_rowcache_t *c) {
  if ((c->n + 1) * 2 <= c->scap) return;
  slot_t *old = c->slot;
  size_t ocap = c->scap;
  c->scap = c->scap ? c->scap * 2 : 2048;
  c->slot = kr_xcalloc(c->scap, sizeof *c->slot);
  for (size_t i = 0; i < ocap; i++)
    if (old[i].b) slot_new(c, old[i].fp)->b = old[i].b;
  free(old);
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

/* A block holding *r with every variable-length field (pointing
 * anywhere, an old block included) copied in. Texts keep a terminating
 * NUL as SQLite's do. */
static block_t *make(const kr_uri_row_t *r) {
  kr_uri_row_t row = *r;
  const void **p[F_N];
  size_t *l[F_N];
  fields(&row, p, l);
  size_t need = 0;
  for (int i = 0; i < F_N; i++)
    if (*p[i]) need += *l[i] + 1;
  block_t *b = kr_xmalloc(sizeof *b + need);
  size_t o = 0;
  for (int i = 0; i < F_N; i++) {
    if (!*p[i]) continue;
    memcpy(b->data + o, *p[i], *l[i]);
    b->data[o + *l[i]] = 0;
    *p[i] = b->data + o;
    o += *l[i] + 1;
  }
  b->row = row;
  return b;
}

static void replace(slot_t *s, const kr_uri_row_t *r) {
  block_t *b = make(r);
  free(s->b);
  s->b = b;
}

void kr_rowcache_put(kr_rowcache_t *c, const kr_uri_row_t *r) {
  if (!c) return;
  slot_t *s = find(c, r->fp);
  if (!s) {
    if (c->n >= c->max) return;
    grow(c);
    s = slot_new(c, r->fp);
    c->n++;
  }
  replace(s, r);
}

void kr_rowcache_update(kr_rowcache_t *c, const kr_uri_row_t *r) {
  slot_t *s = find(c, r->fp);
  if (!s) return;
  kr_uri_row_t n = s->b->row;
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
  n.gone = r->gone;
  replace(s, &n);
}

void kr_rowcache_set_sched(kr_rowcache_t *c, uint64_t fp, int directive, uint64_t next_at,
                           int state) {
  slot_t *s = find(c, fp);
  if (!s) return;
  s->b->row.directive = directive;
  s->b->row.next_at = next_at;
  s->b->row.state = state;
}

void kr_rowcache_set_hint(kr_rowcache_t *c, uint64_t fp, double rate) {
  slot_t *s = find(c, fp);
  if (s) s->b->row.hint_rate = rate;
}

void kr_rowcache_set_linked(kr_rowcache_t *c, uint64_t fp, uint64_t when) {
  slot_t *s = find(c, fp);
  if (s) s->b->row.last_linked = when;
}
