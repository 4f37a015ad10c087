/*
 * A write-through copy of uris rows in memory, owned by the store
 * (store.c) and used only when kr_store_opts_t.row_cache > 0 (kria
 * simulate: its store is throwaway state on a virtual clock, and reading
 * back from SQLite the row it wrote one revisit ago was a fifth of its
 * run time). The store keeps every cached row exactly as SQLite would
 * read it back: each write that touches a cached row updates the copy
 * the same way (NULLs, empty blobs and clamps included), bulk writes and
 * rollbacks clear the cache. At most max rows; when full, rows read from
 * SQLite are not added (no eviction).
 */
#ifndef KRIA_ROWCACHE_H
#define KRIA_ROWCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct kr_rowcache kr_rowcache_t;

kr_rowcache_t *kr_rowcache_new(size_t max_rows);
void kr_rowcache_free(kr_rowcache_t *c);
/* The cached row of fp, or NULL. Its pointers stay valid until the next
 * call on c. */
const kr_uri_row_t *kr_rowcache_get(kr_rowcache_t *c, uint64_t fp);
/* Copy a whole row read from the store (replacing a cached one); nothing
 * when the cache is full. */
void kr_rowcache_put(kr_rowcache_t *c, const kr_uri_row_t *r);
/* The columns kr_store_uri_update() writes, from r, as SQLite stores them. */
void kr_rowcache_update(kr_rowcache_t *c, const kr_uri_row_t *r);
void kr_rowcache_set_sched(kr_rowcache_t *c, uint64_t fp, int directive, uint64_t next_at,
                           int state);
void kr_rowcache_set_hint(kr_rowcache_t *c, uint64_t fp, double rate);
void kr_rowcache_set_linked(kr_rowcache_t *c, uint64_t fp, uint64_t when);
/* Forget every row (bulk updates, rollbacks). */
void kr_rowcache_clear(kr_rowcache_t *c);
size_t kr_rowcache_count(const kr_rowcache_t *c);

#endif
