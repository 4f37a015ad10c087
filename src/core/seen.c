/*
 * The seen filter (see include/kria/seen.h). A fingerprint is split into
 * its top 8 bits, which pick one of 256 shards, and its low 56 bits, the
 * only part a shard stores: slots are 7 bytes, so no bit is kept twice.
 * Each shard is an ordered linear-probing table over those 56-bit keys
 * with a small trailing overflow area and a guard slot that is never
 * filled, so probes need no bounds check and never wrap. The 56-bit value
 * 0 marks an empty slot; a fingerprint whose low 56 bits are 0 is kept as
 * a per-shard flag. Sections: slots, shard geometry, lookup and insert,
 * growth, public API, validation.
 */
#include "kria/seen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

#define SHARD_BITS 8
#define NSHARDS (1u << SHARD_BITS)
#define KEY_BITS (64 - SHARD_BITS)
#define KEY_MASK ((UINT64_C(1) << KEY_BITS) - 1)
#define W 7         /* bytes per slot */
#define PAD 1       /* so an 8-byte load of the last slot stays inside */
#define MIN_CAP 16u /* shard 0's first capacity; the others up to 2x */
#define LOAD_NUM 19u /* grow past LOAD_NUM/LOAD_DEN of the home range */
#define LOAD_DEN 20u

typedef struct shard {
  uint8_t *slot;  /* alloc slots of W bytes (+PAD): cap homes, overflow, guard */
  uint32_t cap;   /* home range: home(key) is in [0, cap) */
  uint32_t alloc; /* slots allocated; the last one stays 0 */
  uint32_t n;     /* keys in slots (the zero key not counted) */
  uint8_t zero;   /* the key with low 56 bits 0 is in the set */
} shard_t;

struct kr_seen {
  shard_t *shard; /* NSHARDS headers */
  size_t count;   /* keys in the set */
};

/* ---- slots ------------------------------------------------------------- */

static inline uint64_t get(const uint8_t *slot, size_t i) {
  uint64_t v;
  memcpy(&v, slot + i * W, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v & KEY_MASK;
}

static inline void put(uint8_t *slot, size_t i, uint64_t k) {
  uint8_t *p = slot + i * W;
  for (int b = 0; b < W; b++) p[b] = (uint8_t)(k >> (8 * b));
}

/* ---- shard geometry ---------------------------------------------------- */

static inline unsigned shard_of(uint64_t fp) { return (unsigned)(fp >> KEY_BITS); }

/* Home slot: the 56-bit key scaled onto [0, cap). It grows with the key,
 * which is what keeps each shard sorted. */
static inline size_t home_of(uint64_t key, size_t cap) {
  return (size_t)(((unsigned __int128)(key << SHARD_BITS) * cap) >> 64);
}

/* Overflow slots past the home range, where runs ending near the top
 * spill; a run reaching the guard makes the shard grow. */
static inline size_t alloc_for(size_t cap) { return cap + cap / 32 + 16 + 1; }

/* First capacity of shard i: MIN_CAP * 2^(i/NSHARDS), one octave wide. */
static size_t first_cap(unsigned i) {
  return (size_t)(MIN_CAP * exp2((double)i / NSHARDS));
}

/* ---- lookup and insert ------------------------------------------------- */

/* Index of the first slot at or after key's home holding 0 or a key >= it. */
static inline size_t probe(const shard_t *sh, uint64_t key) {
  size_t i = home_of(key, sh->cap);
  uint64_t v;
  while ((v = get(sh->slot, i)) != 0 && v < key) i++; /* the guard stops it */
  return i;
}

/* Rebuild sh with capacity cap, keeping the order. 0, or -1 when the keys
 * do not fit before the guard (nothing changed; try a larger cap). */
static int shard_rebuild(shard_t *sh, size_t cap) {
  size_t alloc = alloc_for(cap);
  uint8_t *slot = kr_xcalloc(alloc * W + PAD, 1);
  size_t pos = 0;
  for (size_t i = 0; sh->slot && i < sh->alloc; i++) {
    uint64_t v = get(sh->slot, i);
    if (!v) continue;
    size_t h = home_of(v, cap);
    if (h > pos) pos = h;
    if (pos >= alloc - 1) {
      free(slot);
      return -1;
    }
    put(slot, pos++, v);
  }
  free(sh->slot);
  sh->slot = slot;
  sh->cap = (uint32_t)cap;
  sh->alloc = (uint32_t)alloc;
  return 0;
}

static void shard_grow(shard_t *sh, unsigned idx) {
  size_t cap = sh->cap ? (size_t)sh->cap * 2 : first_cap(idx);
  while (shard_rebuild(sh, cap) != 0) cap *= 2;
}

static int shard_add(shard_t *sh, unsigned idx, uint64_t key) {
  if (!sh->slot) shard_grow(sh, idx);
  for (;;) {
    size_t i = probe(sh, key);
    if (get(sh->slot, i) == key) return 0;
    if (((size_t)sh->n + 1) * LOAD_DEN > (size_t)sh->cap * LOAD_NUM) {
      shard_grow(sh, idx);
      continue;
    }
    size_t j = i;
    while (get(sh->slot, j) != 0) j++;
    if (j == (size_t)sh->alloc - 1) { /* the run would fill the guard */
      shard_grow(sh, idx);
      continue;
    }
    memmove(sh->slot + (i + 1) * W, sh->slot + i * W, (j - i) * W);
    put(sh->slot, i, key);
    sh->n++;
    return 1;
  }
}

/* Remove the key at i: pull back each following key that is not at its
 * home (one slot earlier it is still at or after its home, still in
 * order); the first key at its home, or a hole, ends the run. */
static void shard_del(shard_t *sh, size_t i) {
  size_t j = i + 1;
  uint64_t v;
  while ((v = get(sh->slot, j)) != 0 && home_of(v, sh->cap) < j) j++;
  memmove(sh->slot + i * W, sh->slot + (i + 1) * W, (j - i - 1) * W);
  put(sh->slot, j - 1, 0);
  sh->n--;
}

/* ---- public API -------------------------------------------------------- */

void kr_seen_reserve(kr_seen_t *s, size_t n) {
  /* per shard, with room for the unevenness of the split (~5 sigma) */
  double per = (double)n / NSHARDS;
  per += 5 * sqrt(per) + 16;
  size_t cap = (size_t)(per * LOAD_DEN / LOAD_NUM) + 1;
  if (cap > UINT32_MAX / 2) cap = UINT32_MAX / 2;
  for (unsigned i = 0; i < NSHARDS; i++) {
    shard_t *sh = &s->shard[i];
    if (sh->cap >= cap) continue;
    size_t c = cap;
    while (shard_rebuild(sh, c) != 0) c *= 2;
  }
}

kr_seen_t *kr_seen_new(void) {
  kr_seen_t *s = kr_xcalloc(1, sizeof(*s));
  s->shard = kr_xcalloc(NSHARDS, sizeof(*s->shard));
  return s;
}

void kr_seen_free(kr_seen_t *s) {
  if (!s) return;
  for (unsigned i = 0; i < NSHARDS; i++) free(s->shard[i].slot);
  free(s->shard);
  free(s);
}

int kr_seen_add(kr_seen_t *s, uint64_t fp) {
  unsigned idx = shard_of(fp);
  shard_t *sh = &s->shard[idx];
  uint64_t key = fp & KEY_MASK;
  int added;
  if (key == 0) {
    added = !sh->zero;
    sh->zero = 1;
  } else {
    added = shard_add(sh, idx, key);
  }
  s->count += (size_t)added;
  return added;
}

void kr_seen_prefetch(const kr_seen_t *s, uint64_t fp) {
  const shard_t *sh = &s->shard[shard_of(fp)];
  if (sh->slot) __builtin_prefetch(sh->slot + home_of(fp & KEY_MASK, sh->cap) * W);
}

int kr_seen_contains(const kr_seen_t *s, uint64_t fp) {
  const shard_t *sh = &s->shard[shard_of(fp)];
  uint64_t key = fp & KEY_MASK;
  if (key == 0) return sh->zero;
  if (!sh->slot) return 0;
  return get(sh->slot, probe(sh, key)) == key;
}

int kr_seen_remove(kr_seen_t *s, uint64_t fp) {
  shard_t *sh = &s->shard[shard_of(fp)];
  uint64_t key = fp & KEY_MASK;
  if (key == 0) {
    if (!sh->zero) return 0;
    sh->zero = 0;
  } else {
    if (!sh->slot) return 0;
    size_t i = probe(sh, key);
    if (get(sh->slot, i) != key) return 0;
    shard_del(sh, i);
  }
  s->count--;
  return 1;
}

size_t kr_seen_count(const kr_seen_t *s) { return s->count; }

size_t kr_seen_memory(const kr_seen_t *s) {
  size_t bytes = sizeof(*s) + NSHARDS * sizeof(shard_t);
  for (unsigned i = 0; i < NSHARDS; i++)
    if (s->shard[i].slot) bytes += (size_t)s->shard[i].alloc * W + PAD;
  return bytes;
}

/* ---- validation -------------------------------------------------------- */

int kr_seen_validate(const kr_seen_t *s) {
  size_t total = 0;
  for (unsigned idx = 0; idx < NSHARDS; idx++) {
    const shard_t *sh = &s->shard[idx];
    total += sh->zero;
    if (!sh->slot) {
      if (sh->n || sh->cap || sh->alloc) return KR_EINVAL;
      continue;
    }
    if (sh->alloc != alloc_for(sh->cap) || get(sh->slot, sh->alloc - 1) != 0)
      return KR_EINVAL;
    size_t n = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < sh->alloc; i++) {
      uint64_t v = get(sh->slot, i);
      if (!v) continue;
      if (v <= prev) return KR_EINVAL;
      size_t h = home_of(v, sh->cap);
      if (h > i) return KR_EINVAL;
      for (size_t k = h; k < i; k++)
        if (!get(sh->slot, k)) return KR_EINVAL;
      prev = v;
      n++;
    }
    if (n != sh->n || n * LOAD_DEN > (size_t)sh->cap * LOAD_NUM) return KR_EINVAL;
    total += n;
  }
  return total == s->count ? 0 : KR_EINVAL;
}
