/*
 * The crawl's cache of followed links (see linkcache.h): a two-way set-associative
 * table of entries, each one allocation holding the key (the base's href
 * prefix that matters, then the raw link), the canonical string and the
 * canonical URL (a copy of its kr_url_t), so a hit reads one place, the
 * key first, right after the header (the first cache lines, the ones
 * the lookup's compare waits for). The
 * slots form sets of two ways (least recently used replaced), each slot
 * keeping its entry's hash beside the pointer: a miss usually costs no
 * visit to an entry. A lookup compares the whole key, so a
 * collision only costs a miss. Replacing or refusing an entry frees it at
 * once, which keeps the memory within the byte budget whatever the pages
 * hold.
 */
#include "linkcache.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "kria/mem.h"

typedef struct entry {
  kr_linkcache_entry_t pub;
  size_t plen, rlen; /* base prefix and raw link lengths */
  size_t bytes;      /* what the entry counts against the budget */
  /* prefix, raw, then the canonical string and a NUL (unless it is the
   * URL's href), then the kr_url_t copy at the next max_align_t */
  alignas(max_align_t) char key[];
} entry_t;

/* Where an entry's URL copy starts, after its key and canonical string. */
static size_t url_offset(size_t chars) {
  return (chars + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
}

typedef struct slot {
  uint64_t hash;
  entry_t *e;
} slot_t;

struct kr_linkcache {
  slot_t *slot;
  size_t mask;
  size_t max_bytes;
  kr_linkcache_stats_t st;
};

kr_linkcache_t *kr_linkcache_new(size_t slots, size_t max_bytes) {
  size_t n = 1;
  while (n < slots && n < ((size_t)1 << 30)) n <<= 1;
  if (n < 2) n = 2; /* sets of two ways */
  kr_linkcache_t *lc = kr_xcalloc(1, sizeof *lc);
  lc->slot = kr_xcalloc(n, sizeof *lc->slot);
  lc->mask = n - 1;
  lc->max_bytes = max_bytes;
  return lc;
}

void kr_linkcache_free(kr_linkcache_t *lc) {
  if (!lc) return;
  for (size_t i = 0; i <= lc->mask; i++) free(lc->slot[i].e);
  free(lc->slot);
  free(lc);
}

/* Eight bytes at a time (the keys are tens of bytes: a byte-wise hash
 * was a quarter of a lookup), mixed by multiply and rotate, finished with
 * a murmur-style avalanche. Not keyed: a page that collides on purpose
 * only makes its own links miss. */
static uint64_t mix_bytes(uint64_t h, const char *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 32;
    p += 8, n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  h = (h ^ w ^ ((uint64_t)n << 56)) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

static uint64_t key_hash(const char *p, size_t pn, const char *r, size_t rn) {
  uint64_t h = mix_bytes(0x243F6A8885A308D3ull ^ pn, p, pn);
  h = mix_bytes(h ^ rn, r, rn);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

void kr_linkcache_key(const char *raw, size_t n, const kr_url_t *base, kr_linkcache_key_t *k) {
  size_t pn = base ? kr_url_base_use(raw, n, base) : 0;
  if (n > KR_LINKCACHE_MAX_KEY || pn > KR_LINKCACHE_MAX_KEY - n) {
    *k = (kr_linkcache_key_t){.len = KR_LINKCACHE_MAX_KEY + 1};
    return;
  }
  *k = (kr_linkcache_key_t){.hash = key_hash(base ? kr_url_href(base) : "", pn, raw, n),
                            .plen = (uint32_t)pn,
                            .len = (uint32_t)(pn + n)};
}

/* Whether k can be raw's against base (lengths that fit them; the hash
 * is checked with the bytes), with the base's prefix in *p. A key that
 * cannot is never used to read past the base's href. */
static int key_fits(const kr_linkcache_key_t *k, size_t n, const kr_url_t *base, const char **p) {
  *p = base ? kr_url_href(base) : "";
  return k->plen <= k->len && k->len - k->plen == n &&
         k->plen <= (base ? kr_url_href_len(base) : 0);
}

static slot_t *set_of(const kr_linkcache_t *lc, uint64_t h) {
  return &lc->slot[(h & lc->mask) & ~(size_t)1]; /* a set of two ways */
}

static int same_key(const slot_t *s, uint64_t h, const char *p, size_t pn, const char *raw,
                    size_t n) {
  const entry_t *e = s->e;
  return e && s->hash == h && e->plen == pn && e->rlen == n && memcmp(e->key, p, pn) == 0 &&
         memcmp(e->key + pn, raw, n) == 0;
}

kr_linkcache_entry_t *kr_linkcache_get(kr_linkcache_t *lc, const kr_linkcache_key_t *k,
                                       const char *raw, size_t n, const kr_url_t *base) {
  const char *p;
  if (k->len > KR_LINKCACHE_MAX_KEY) {
    lc->st.uncacheable++;
    return NULL;
  }
  if (!key_fits(k, n, base, &p)) {
    lc->st.misses++;
    return NULL;
  }
  slot_t *b = set_of(lc, k->hash);
  for (int w = 0; w < 2; w++) {
    if (!same_key(&b[w], k->hash, p, k->plen, raw, n)) continue;
    if (w == 1) { /* most recently used first */
      slot_t t = b[0];
      b[0] = b[1];
      b[1] = t;
    }
    lc->st.hits++;
    return &b[0].e->pub;
  }
  lc->st.misses++;
  return NULL;
}

void kr_linkcache_prefetch(const kr_linkcache_t *lc, const kr_linkcache_key_t *k) {
  if (k->len <= KR_LINKCACHE_MAX_KEY) __builtin_prefetch(set_of(lc, k->hash));
}

void kr_linkcache_prefetch_entry(const kr_linkcache_t *lc, const kr_linkcache_key_t *k) {
  if (k->len > KR_LINKCACHE_MAX_KEY) return;
  const slot_t *b = set_of(lc, k->hash);
  int found = 0;
  for (int w = 0; w < 2; w++) {
    const char *e = (const char *)b[w].e;
    if (!e || b[w].hash != k->hash) continue;
    /* its first 256 bytes, whatever their alignment: the header and the
     * key, then (for most links) the canonical string and URL */
    for (int l = 0; l < 4; l++) __builtin_prefetch(e + 64 * l);
    __builtin_prefetch(e + 255);
    found = 1;
  }
  /* A miss then: its put will replace the second way, reading that
   * entry's size and freeing it. */
  const entry_t *old = b[1].e;
  if (!found && old) {
    __builtin_prefetch((const char *)old - sizeof(size_t)); /* malloc's chunk header */
    __builtin_prefetch(&old->bytes);
  }
}

kr_linkcache_entry_t *kr_linkcache_put(kr_linkcache_t *lc, const kr_linkcache_key_t *k,
                                       const char *raw, size_t n, const kr_url_t *base,
                                       const char *canon, size_t len, const kr_url_t *url) {
  const char *p;
  if (k->len > KR_LINKCACHE_MAX_KEY || !key_fits(k, n, base, &p) ||
      len > KR_LINKCACHE_MAX_URL || !canon != !url)
    return NULL;
  size_t pn = k->plen;
  uint64_t h = k->hash;
  size_t usz = url ? kr_url_size(url) : 0;
  /* The canonical string is most often the URL's own href: then it is
   * not stored twice. */
  int same = url && len == kr_url_href_len(url) && memcmp(canon, kr_url_href(url), len) == 0;
  size_t uoff = url_offset(pn + n + (same ? 0 : len + 1));
  size_t sz = sizeof(entry_t) + uoff + usz;
  /* The new entry goes first in its set; the least recently used way is
   * the one replaced (the second, unless that key is already here). */
  slot_t *b = set_of(lc, h);
  slot_t *s = same_key(&b[0], h, p, pn, raw, n) ? &b[0] : &b[1];
  size_t old = s->e ? s->e->bytes : 0;
  if (lc->st.bytes - old + sz > lc->max_bytes) return NULL;
  entry_t *e = kr_xmalloc(sz);
  memset(e, 0, sizeof *e);
  e->plen = pn;
  e->rlen = n;
  e->bytes = sz;
  memcpy(e->key, p, pn);
  memcpy(e->key + pn, raw, n);
  if (url) {
    memcpy(e->key + uoff, url, usz);
    e->pub.url = (const kr_url_t *)(void *)(e->key + uoff);
  }
  if (same) {
    e->pub.canon = kr_url_href(e->pub.url);
  } else if (canon) {
    char *c = e->key + pn + n;
    if (len) memcpy(c, canon, len);
    c[len] = '\0';
    e->pub.canon = c;
  }
  e->pub.canon_len = canon ? len : 0;
  if (s->e) {
    lc->st.bytes -= old;
    lc->st.entries--;
    free(s->e);
  }
  if (s == &b[1]) b[1] = b[0];
  b[0] = (slot_t){.hash = h, .e = e};
  lc->st.bytes += sz;
  lc->st.entries++;
  lc->st.inserts++;
  return &e->pub;
}

void kr_linkcache_stats(const kr_linkcache_t *lc, kr_linkcache_stats_t *out) { *out = lc->st; }
