/*
 * The crawl's cache of followed links: what resolving a raw link against
 * a base and canonicalising it gave (the canonical string and its parsed
 * URL, or "rejected before the scope"), plus the scope's memo of that URL
 * and the [host] settings of its host. Keyed by the raw link bytes and the
 * part of the base's href the parse depends on (kr_url_base_use): an
 * absolute http(s) link hits from any page, a path-absolute "/x" from any
 * page of the same origin, anything else from the same base only. So the
 * navigation links a site repeats on every page are parsed and
 * canonicalised once.
 *
 * Two-way set-associative (a new key replaces its set's least recently
 * used entry), bounded by a slot
 * count and a byte budget; keys and results past KR_LINKCACHE_MAX_KEY /
 * KR_LINKCACHE_MAX_URL bytes are not cached. The canonicalisation options
 * must not change while entries exist (they take a restart); anything
 * else an entry remembers carries its own generation.
 */
#ifndef KRIA_LINKCACHE_H
#define KRIA_LINKCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kria/scope.h"
#include "kria/url.h"

#define KR_LINKCACHE_MAX_KEY 1024 /* base prefix + raw link */
#define KR_LINKCACHE_MAX_URL 1024 /* canonical string */

typedef struct kr_linkcache kr_linkcache_t;

typedef struct kr_linkcache_entry {
  const char *canon;       /* canonical string, NUL-terminated; NULL: rejected */
  size_t canon_len;
  const kr_url_t *url;     /* canonical URL parsed, in the entry (NULL when rejected) */
  kr_scope_memo_t memo;    /* the scope's memo of url: the caller's to use */
  const void *hostcfg;     /* the caller's per-host settings of url ... */
  uint32_t hostcfg_gen;    /* ... valid for this generation of them */
} kr_linkcache_entry_t;

typedef struct kr_linkcache_stats {
  uint64_t hits, misses, inserts, uncacheable;
  size_t entries, bytes;
} kr_linkcache_stats_t;

/* A cache of `slots` entries (rounded up to a power of two, at least 1)
 * holding at most max_bytes of keys, strings and URLs. */
kr_linkcache_t *kr_linkcache_new(size_t slots, size_t max_bytes);
void kr_linkcache_free(kr_linkcache_t *lc);

/* The key of raw against base (NULL base: raw must be absolute): the
 * hash of the base's first plen bytes (kr_url_base_use) and raw, computed
 * once by kr_linkcache_key and handed to the calls below, which take the
 * same raw and base with it. A key too long to be cached has len past
 * KR_LINKCACHE_MAX_KEY. A key that is not raw's against base (another
 * hash or length) makes a get miss and a put not found by any right key;
 * it never returns another link's entry. */
typedef struct kr_linkcache_key {
  uint64_t hash;
  uint32_t plen; /* base prefix bytes in the key */
  uint32_t len;  /* plen + the raw link's length */
} kr_linkcache_key_t;

void kr_linkcache_key(const char *raw, size_t n, const kr_url_t *base, kr_linkcache_key_t *k);

/* The entry for raw resolved against base, or NULL. Valid until the next
 * kr_linkcache_put. */
kr_linkcache_entry_t *kr_linkcache_get(kr_linkcache_t *lc, const kr_linkcache_key_t *k,
                                       const char *raw, size_t n, const kr_url_t *base);

/* A hint: start loading the slots where kr_linkcache_get of that key
 * will look (a trip to memory when the table is out of the caches), for
 * a caller with other work to do before the get. */
void kr_linkcache_prefetch(const kr_linkcache_t *lc, const kr_linkcache_key_t *k);
/* The second step, once those slots are in: start loading the entry
 * with that key's hash, or, when none has (a miss, then a put), the
 * entry that put would replace. */
void kr_linkcache_prefetch_entry(const kr_linkcache_t *lc, const kr_linkcache_key_t *k);

/* Remember the result of raw against base (k: their key): canon (len
 * bytes) and url, the parse of canon (copied into the entry; the caller
 * keeps its own), or canon NULL and url NULL for a link rejected before
 * the scope. Returns the entry, or NULL when it was not kept (too long,
 * over the budget, a key that is not theirs). */
kr_linkcache_entry_t *kr_linkcache_put(kr_linkcache_t *lc, const kr_linkcache_key_t *k,
                                       const char *raw, size_t n, const kr_url_t *base,
                                       const char *canon, size_t len, const kr_url_t *url);

void kr_linkcache_stats(const kr_linkcache_t *lc, kr_linkcache_stats_t *out);

#endif
