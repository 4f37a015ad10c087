/*
 * A host's learned state as one record the store keeps with the host
 * (hosts.learned), so that a restart continues where the crawl was
 * instead of learning again: the poisson allocator (estimate.h
 * kr_plan_host_t: the sketch of its URIs' change rates, the solved
 * changes-per-visit x, the realised-rate gain), the multiplicative
 * policy's capacity plan (kr_capplan_t: its sketch and floor) and the
 * validator trust (validators.h kr_vtrust_t, with the run of
 * confirmations that sets the share sampled). Pure: no loop, no database,
 * no globals.
 *
 * ---- Format (version 1) ----------------------------------------------------
 *   byte 0      0x01 (format version; any other value is refused)
 *   sections, each
 *     byte      tag (1..255; 0 is refused)
 *     varint    length of the payload in bytes
 *     payload
 * A reader skips a section whose tag it does not know, so a module adds
 * its own section (a new tag below) without a new version; a known tag
 * seen twice, a known section whose payload is not exactly what its tag
 * says, or a record longer than KR_HOSTSTATE_BYTES is refused whole.
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
 *   4          reserved: informed priors (pooled change rates)
 *   5          reserved: change-signal reliability
 * Not kept: the allocator's fetch window (win_t0, win_n: a window across
 * a restart would count the downtime as a slow host) and the update
 * counters since the last solve; x_min, which is configuration.
 *
 * Life of a record (src/crawl/proc_wait.c writes and reads it): written
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
 * Size: sketches are sparse. The worst case (four full allocator classes
 * and a full capacity plan) is under 3.3 KB; a host whose URIs change at
 * a few dozen distinct rates takes 100-400 bytes (bench/RESULTS.md).
 */
#ifndef KRIA_HOSTSTATE_H
#define KRIA_HOSTSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "kria/estimate.h"
#include "kria/validators.h"

#define KR_HOSTSTATE_VERSION 1
#define KR_HOSTSTATE_BYTES 4096 /* hard cap of a record */
#define KR_HOSTSTATE_X_MAX 1e6  /* changes per visit; the solver stays far below */

enum {
  KR_HS_TAG_ALLOC = 1,
  KR_HS_TAG_CAPPLAN = 2,
  KR_HS_TAG_VTRUST = 3,
  KR_HS_TAG_PRIORS = 4,  /* reserved */
  KR_HS_TAG_SIGNALS = 5, /* reserved */
};

/* Which sections a kr_hoststate_t holds (has). */
#define KR_HS_ALLOC (1u << 0)
#define KR_HS_CAPPLAN (1u << 1)
#define KR_HS_VTRUST (1u << 2)

typedef struct kr_hoststate {
  unsigned has;          /* KR_HS_* */
  kr_plan_host_t alloc;  /* KR_HS_ALLOC; decoded with the default x_min:
                            the caller sets its own and raises x to it */
  kr_capplan_t cap;      /* KR_HS_CAPPLAN */
  kr_vtrust_t vt;        /* KR_HS_VTRUST */
  double vt_sample;      /* KR_HS_VTRUST: share sampled when written */
  unsigned skipped;      /* decode: sections of unknown tags skipped */
} kr_hoststate_t;

/* Nothing held. */
void kr_hoststate_init(kr_hoststate_t *s);
/* Encode the sections s->has names into out (cap bytes). Returns the
 * length, or 0 when cap is too small (KR_HOSTSTATE_BYTES always is
 * enough) or a field cannot be written (a NaN x, say): nothing is better
 * than a record the reader would refuse. */
size_t kr_hoststate_encode(const kr_hoststate_t *s, uint8_t *out, size_t cap);
/* Decode len bytes (len 0: an empty record, nothing held). 0, or
 * KR_EINVAL for a wrong version, a truncated or overlong field, a value
 * out of its range (NaN, a count past 2^32, an unsorted bucket), a known
 * section twice or more than KR_HOSTSTATE_BYTES; *s is then empty. Never
 * reads past len. The allocator's sketch totals are recomputed from the
 * buckets. */
int kr_hoststate_decode(kr_hoststate_t *s, const uint8_t *p, size_t len);

#endif
