/*
 * The seen filter: an exact, compact set of 64-bit URL fingerprints, so a
 * discovered link that is already known is rejected in memory and never
 * reaches SQLite. Pure: no loop, no database, no globals.
 *
 * Layout: 256 shards chosen by the top 8 bits of the fingerprint; a shard
 * stores only the other 56 bits, in 7-byte slots. Each shard is an
 * *ordered* open-addressing table with linear probing (Amble & Knuth,
 * "Ordered hash tables", 1974): the home slot grows monotonically with the
 * key and every run of occupied slots is kept sorted, so a lookup stops at
 * the first slot holding a larger key (a miss costs no more than a hit)
 * and an insert shifts the rest of its run right by one slot. No metadata
 * per slot: 0 is "empty", the one key per shard whose stored bits are 0 is
 * remembered by a flag.
 *
 * Growth: a shard doubles when 95% of its home range is used (or a run
 * would spill past its small overflow area), rebuilding in one linear pass
 * that keeps the order, so growing costs one shard's copy at a time, never
 * the whole set's. The shards' first capacities are spread log-uniformly
 * over one octave, so they do not all double at the same count: the load
 * of the whole set stays near its mean (0.95 x ln 2 = 0.66) at any size,
 * about 11 bytes per fingerprint (measured: 11.1 at 1M), rather than
 * swinging between 7.4 and 15 bytes as one doubling table would.
 *
 * Cost: a lookup reads a couple of cache lines even at 95% load; an insert
 * moves on average a few hundred bytes with memmove.
 */
#ifndef KRIA_SEEN_H
#define KRIA_SEEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct kr_seen kr_seen_t;

/* An empty set. Never NULL (out of memory aborts). */
kr_seen_t *kr_seen_new(void);
void kr_seen_free(kr_seen_t *s);

/* Size the set for about n fingerprints in all (it still grows past
 * that). Loading keys in sorted order (a scan of the store by fp) into a
 * set sized for fewer piles them into one long run per shard, whose probes
 * then cost O(run): 10M sorted keys took 23 s that way, 1.6 s reserved. */
void kr_seen_reserve(kr_seen_t *s, size_t n);

/* Add fp: 1 when it was new, 0 when it was present already. */
int kr_seen_add(kr_seen_t *s, uint64_t fp);
/* A hint, nothing else: start loading the slot where a lookup of fp
 * begins. The set is larger than the caches, so a lookup's first read is
 * a trip to memory; a caller holding several fingerprints prefetches them
 * all first, and their trips overlap. */
void kr_seen_prefetch(const kr_seen_t *s, uint64_t fp);
/* 1 when fp is in the set, else 0. */
int kr_seen_contains(const kr_seen_t *s, uint64_t fp);
/* Remove fp: 1 when it was there, else 0 (the set never shrinks). */
int kr_seen_remove(kr_seen_t *s, uint64_t fp);

/* Number of fingerprints in the set. */
size_t kr_seen_count(const kr_seen_t *s);
/* Heap bytes held by the set (slots and shard headers). */
size_t kr_seen_memory(const kr_seen_t *s);

/* Check every invariant (sorted runs, keys in their shard, each key at or
 * after its home slot with no hole between, counts). 0 when sound, else
 * KR_EINVAL. For tests: O(n * run length). */
int kr_seen_validate(const kr_seen_t *s);

#endif
