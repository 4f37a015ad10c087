/*
 * A host's learned state as one record the store keeps with the host
 * (hosts.learned), so that a restart continues where the crawl was
 * instead of learning again: the poisson allocator (estimate.h
 * kr_plan_host_t: the sketch of its URIs' change rates, the solved
 * changes-per-visit x, the realised-rate gain), the multiplicative
 * policy's capacity plan (kr_capplan_t: its sketch and floor) and the
 * validator trust (validators.h kr_vtrust_t, with the run of
 * confirmations that sets the share sampled), the informed priors' pool
 * (prior.h kr_prior_pool_t) and the change signals' reliability
 * (signal.h kr_sig_host_t). Pure: no loop, no database, no globals.
 *
 * ---- Format (version 1) ----------------------------------------------------
 *   byte 0      0x01 (format version; any other value is refused)
 *   sections, each
 *     byte      tag (1..255; 0 is refused)
 *     varint    length of the payload in bytes
 *     payload
 * A reader skips a section whose tag it does not know, so a module adds
 * its own section (a new tag below) without a new version; a known tag
 * seen twice, a section of tags 1-3 whose payload is not exactly what its
 * tag says, or a record longer than KR_HOSTSTATE_BYTES is refused whole.
 * A section of tags 4 or 5 is another module's blob: when its module
 * refuses it, that section alone is dropped (damaged names it) and the
 * rest of the record is read, so that part of the host starts fresh.
 * varint = unsigned LEB128 as in the visit history (estimate.h), at most
 * 10 bytes, no overlong encoding; double = the IEEE 754 binary64 bits, 8
 * bytes little-endian, and never NaN or infinite.
 *
 * Tags (allocate new ones here):
 *   1 ALLOC    the poisson allocator
 *                byte     classes (<= KR_PLAN_CLASSES)
 *                per class: varint min_ms, varint max_ms (<= 2^40,
 *                  min <= max), varint buckets held, then per bucket
 *                  byte index (< KR_PLAN_BUCKETS, ascending), varint
 *                  count (1..2^32-1)
 *                double x (> 0, <= KR_HOSTSTATE_X_MAX), double budget
 *                (>= 0), double gain (in [KR_PLAN_GAIN_MIN,
 *                KR_PLAN_GAIN_MAX]), byte state (KR_PLAN_SLACK/BINDS/
 *                OVER), byte solved (0/1)
 *   2 CAPPLAN  the capacity plan
 *                varint buckets held, then per bucket byte index
 *                (ascending), varint count (1..2^32-1), double rate sum
 *                (>= 0, 1/s); double budget (>= 0), varint floor_ms
 *                (<= 2^40), byte solved (0/1)
 *   3 VTRUST   validator trust: varint checks, predicted_unchanged,
 *                skipped, verified, misses, false_alarms, distrusts,
 *                miss_run, confirm_run (the two runs < 2^32),
 *                distrust_until (epoch ms, <= 2^53); double sample (the
 *                share sampled when written, in [0, 1]: for reports; the
 *                crawl computes it again from confirm_run and its
 *                settings)
 *   4 PRIORS   the informed priors' pool: kr_prior_pool_encode's
 *                bytes (prior.h "Pool format"), at most 3,937 bytes
 *   5 SIGNALS  the change signals' reliability per source:
 *                kr_sig_host_encode's bytes (signal.h): 62 for the three
 *                sources written today, 42 in the records written
 *                before WEBSUB (read, the push source then fresh)
 * Not kept: the allocator's fetch window (win_t0, win_n: a window across
 * a restart would count the downtime as a slow host) and the update
 * counters since the last solve; x_min, which is configuration.
 *
 * Life of a record (src/crawl/adapthost.c writes and reads it): written
 * at most once per adaptive.learned-state-interval per host whose state
 * changed, and at a clean stop; after a kill -9 it may be one interval
 * older than the URIs' histories (committed per visit), so the sketches
 * hold the URIs revisited in that interval at their previous estimates
 * until they are revisited again. The trust counters stay columns of the
 * host's row (written with every change); of this section the crawl
 * takes the run, and only when no miss or distrust came after it. A host
 * out of scope keeps its row and record (nothing rewrites it) and goes on
 * from there if it comes back; a reload keeps the crawl's tables, and the
 * settings in a record (a class's clamps) give way to new ones as URIs
 * are revisited (x is raised to the configured floor at load).
 *
 * Size: sketches are sparse. Tags 1-3 (four full allocator classes, a
 * full capacity plan, the trust) take at most 3,240 bytes: allocator
 * 1 + 4 x (6 + 6 + 1 + 80 x (1 + 5)) + 3 x 8 + 2 = 1,999, plan
 * 1 + 80 x (1 + 5 + 8) + 8 + 6 + 1 = 1,136, trust 7 x 10 + 5 + 5 + 8 +
 * 8 = 96, the version byte and 3 + 3 + 2 of section heads (a count of
 * 5 bytes in every bucket is more than the totals allow: a bound). A
 * full pool adds 1 + 8 + 88 + (8 + 32) x (8 + 88) = 3,937 (+ 3 of head)
 * and the signals 62 (+ 2): at most 7,244 bytes in all, under the cap of
 * 8,192 (a section's length stays a two-byte varint below 2^14). A host whose URIs
 * change at a few dozen distinct rates takes 100-400 bytes without a
 * pool (bench/RESULTS.md); a pool takes 97 bytes and 96 per group.
 */
#ifndef KRIA_HOSTSTATE_H
#define KRIA_HOSTSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "kria/estimate.h"
#include "kria/prior.h"
#include "kria/signal.h"
#include "kria/validators.h"

#define KR_HOSTSTATE_VERSION 1
#define KR_HOSTSTATE_BYTES 8192 /* hard cap of a record (at most 7,244: above) */
_Static_assert(KR_HOSTSTATE_BYTES < (1 << 14), "a section length is two varint bytes at most");
#define KR_HOSTSTATE_X_MAX 1e6  /* changes per visit; the solver stays far below */

enum {
  KR_HS_TAG_ALLOC = 1,
  KR_HS_TAG_CAPPLAN = 2,
  KR_HS_TAG_VTRUST = 3,
  KR_HS_TAG_PRIORS = 4,
  KR_HS_TAG_SIGNALS = 5,
};

/* Which sections a kr_hoststate_t holds (has). */
#define KR_HS_ALLOC (1u << 0)
#define KR_HS_CAPPLAN (1u << 1)
#define KR_HS_VTRUST (1u << 2)
#define KR_HS_PRIORS (1u << 3)
#define KR_HS_SIGNALS (1u << 4)

typedef struct kr_hoststate {
  unsigned has;          /* KR_HS_* */
  kr_plan_host_t alloc;  /* KR_HS_ALLOC; decoded with the default x_min:
                            the caller sets its own and raises x to it */
  kr_capplan_t cap;      /* KR_HS_CAPPLAN */
  kr_vtrust_t vt;        /* KR_HS_VTRUST */
  double vt_sample;      /* KR_HS_VTRUST: share sampled when written */
  kr_prior_pool_t *pool; /* KR_HS_PRIORS: encode reads it (the caller's,
                            lent); decode allocates one, which
                            kr_hoststate_free frees unless taken */
  kr_sig_host_t sig;     /* KR_HS_SIGNALS */
  unsigned skipped;      /* decode: sections of unknown tags skipped */
  unsigned damaged;      /* decode: KR_HS_PRIORS / KR_HS_SIGNALS sections
                            their module refused, dropped alone */
} kr_hoststate_t;

/* Nothing held (s->pool NULL; a pool s held is not freed). */
void kr_hoststate_init(kr_hoststate_t *s);
/* Free the pool a decode made (s->pool, then NULL); a caller that lent
 * its own pool for an encode sets s->pool to NULL first. */
void kr_hoststate_free(kr_hoststate_t *s);
/* Encode the sections s->has names into out (cap bytes). Returns the
 * length, or 0 when cap is too small (KR_HOSTSTATE_BYTES always is
 * enough) or a field cannot be written (a NaN x, say): nothing is better
 * than a record the reader would refuse. */
size_t kr_hoststate_encode(const kr_hoststate_t *s, uint8_t *out, size_t cap);
/* Decode len bytes into s (its previous contents ignored, not freed; len
 * 0: an empty record, nothing held). 0, or KR_EINVAL for a wrong
 * version, a truncated or overlong field, a value out of its range (NaN,
 * a count past 2^32, an unsorted bucket), a known section twice or more
 * than KR_HOSTSTATE_BYTES; *s is then empty. A pool or signals section
 * its module refuses is left out and named in s->damaged (0 returned).
 * Never reads past len. The allocator's sketch totals are recomputed
 * from the buckets. */
int kr_hoststate_decode(kr_hoststate_t *s, const uint8_t *p, size_t len);

#endif
