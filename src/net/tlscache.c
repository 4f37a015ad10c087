/*
 * The client's TLS session cache (see tlscache.h). Sections: entries (one
 * allocation each: the entry, its key, the DER-encoded session), the hash
 * chains and the recency list, then the public calls. The table is sized
 * once from the count bound, so it never rehashes.
 */
#include "tlscache.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct entry {
  struct entry *hnext;       /* hash chain */
  struct entry *newer, *older; /* recency list */
  uint64_t hash;
  uint64_t expires_ms;       /* not offered from then on */
  int verified;              /* see kr_tls_cache_put */
  size_t der_len;
  unsigned char *der;        /* in this allocation, after key */
  char key[];                /* "host:port" */
} entry_t;

struct kr_tls_cache {
  entry_t **buckets;
  size_t nbuckets;           /* a power of two */
  entry_t *newest, *oldest;
  size_t max_sessions, max_bytes;
  kr_tls_cache_stats_t st;
};

/* ---- entries ------------------------------------------------------------- */

static uint64_t hash_key(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

size_t kr_tls_cache_entry_cost(const char *key, size_t der_len) {
  return sizeof(entry_t) + strlen(key) + 1 + der_len;
}

/* Seconds the session may be offered for: what the server said, within
 * RFC 8446's week; a day when it said nothing (a TLS 1.2 session ID). */
static uint64_t lifetime_s(const SSL_SESSION *sess) {
  unsigned long hint = SSL_SESSION_get_ticket_lifetime_hint(sess);
  if (!hint) return KR_TLS_SESSION_ID_MAX_AGE_S;
  return hint > KR_TLS_SESSION_MAX_AGE_S ? KR_TLS_SESSION_MAX_AGE_S : hint;
}

/* ---- chains and recency ----------------------------------------------------- */

static entry_t **slot_of(kr_tls_cache_t *tc, const char *key, uint64_t h) {
  entry_t **p = &tc->buckets[h & (tc->nbuckets - 1)];
  while (*p && ((*p)->hash != h || strcmp((*p)->key, key))) p = &(*p)->hnext;
  return p;
}

static void unlink_recency(kr_tls_cache_t *tc, entry_t *e) {
  if (e->newer) e->newer->older = e->older; else tc->newest = e->older;
  if (e->older) e->older->newer = e->newer; else tc->oldest = e->newer;
  e->newer = e->older = NULL;
}

static void push_newest(kr_tls_cache_t *tc, entry_t *e) {
  e->older = tc->newest;
  e->newer = NULL;
  if (tc->newest) tc->newest->newer = e; else tc->oldest = e;
  tc->newest = e;
}

/* Unlink e (at *slot in its chain) and free it. */
static void remove_at(kr_tls_cache_t *tc, entry_t **slot) {
  entry_t *e = *slot;
  *slot = e->hnext;
  unlink_recency(tc, e);
  tc->st.sessions--;
  tc->st.bytes -= kr_tls_cache_entry_cost(e->key, e->der_len);
  free(e);
}

static void remove_entry(kr_tls_cache_t *tc, entry_t *e) {
  remove_at(tc, slot_of(tc, e->key, e->hash));
}

/* ---- the cache ---------------------------------------------------------------- */

kr_tls_cache_t *kr_tls_cache_new(size_t max_sessions, size_t max_bytes) {
  assert(max_sessions > 0 && max_bytes > 0);
  kr_tls_cache_t *tc = kr_xcalloc(1, sizeof *tc);
  tc->max_sessions = max_sessions;
  tc->max_bytes = max_bytes;
  /* about one entry a chain when full; no more than 1 Mi chains */
  size_t n = 16;
  while (n < max_sessions && n < ((size_t)1 << 20)) n <<= 1;
  tc->nbuckets = n;
  tc->buckets = kr_xcalloc(n, sizeof *tc->buckets);
  return tc;
}

void kr_tls_cache_free(kr_tls_cache_t *tc) {
  if (!tc) return;
  for (entry_t *e = tc->newest, *next; e; e = next) {
    next = e->older;
    free(e);
  }
  free(tc->buckets);
  free(tc);
}

int kr_tls_cache_put(kr_tls_cache_t *tc, const char *key, SSL_SESSION *sess, int verified,
                     uint64_t now_ms) {
  if (!SSL_SESSION_is_resumable(sess)) return 0;
  int len = i2d_SSL_SESSION(sess, NULL);
  if (len <= 0) return 0;
  size_t cost = kr_tls_cache_entry_cost(key, (size_t)len);
  if (cost > tc->max_bytes) return 0;
  size_t klen = strlen(key);
  entry_t *e = kr_xmalloc(sizeof *e + klen + 1 + (size_t)len);
  memcpy(e->key, key, klen + 1);
  e->der = (unsigned char *)e->key + klen + 1;
  unsigned char *p = e->der;
  if (i2d_SSL_SESSION(sess, &p) != len) {
    free(e);
    return 0;
  }
  e->der_len = (size_t)len;
  e->hash = hash_key(key);
  e->expires_ms = now_ms + lifetime_s(sess) * 1000u;
  e->verified = verified;
  e->newer = e->older = NULL;
  /* the newest session of a host replaces its older one */
  entry_t **slot = slot_of(tc, key, e->hash);
  if (*slot) remove_at(tc, slot);
  while (tc->oldest && (tc->st.sessions + 1 > tc->max_sessions || tc->st.bytes + cost > tc->max_bytes)) {
    remove_entry(tc, tc->oldest);
    tc->st.evicted++;
  }
  slot = slot_of(tc, key, e->hash); /* the chain may have changed */
  e->hnext = *slot;
  *slot = e;
  push_newest(tc, e);
  tc->st.sessions++;
  tc->st.bytes += cost;
  tc->st.stored++;
  return 1;
}

SSL_SESSION *kr_tls_cache_get(kr_tls_cache_t *tc, const char *key, int need_verified,
                              uint64_t now_ms) {
  entry_t **slot = slot_of(tc, key, hash_key(key));
  entry_t *e = *slot;
  if (!e) return NULL;
  if (now_ms >= e->expires_ms) {
    remove_at(tc, slot);
    tc->st.expired++;
    return NULL;
  }
  if (need_verified && !e->verified) return NULL;
  unlink_recency(tc, e);
  push_newest(tc, e);
  const unsigned char *p = e->der;
  SSL_SESSION *s = d2i_SSL_SESSION(NULL, &p, (long)e->der_len);
  if (!s) remove_at(tc, slot); /* out of memory only: it was encoded here */
  return s;
}

void kr_tls_cache_drop(kr_tls_cache_t *tc, const char *key) {
  entry_t **slot = slot_of(tc, key, hash_key(key));
  if (*slot) remove_at(tc, slot);
}

void kr_tls_cache_stats(const kr_tls_cache_t *tc, kr_tls_cache_stats_t *out) { *out = tc->st; }
