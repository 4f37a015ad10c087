/*
 * Hierarchical timer wheel with millisecond resolution, driven by the
 * caller: no clock, no loop, no allocation. The caller embeds a
 * kr_wheel_entry_t in its own struct (host queue, connection), adds it
 * with an absolute due time and gets its callback from kr_wheel_run() once
 * the wheel's time has reached that due time.
 *
 * Layout: KR_WHEEL_LEVELS levels of 64 slots. Level k holds the entries
 * whose due time first differs from the wheel's time in bits 6k..6k+5, in
 * the slot given by those bits; level 0 therefore holds exact
 * milliseconds. As the wheel's time reaches the window of a higher slot,
 * that slot's entries move down ("cascade"), at most once per level. Eleven
 * levels cover all 64 bits, so every due time up to UINT64_MAX ("never")
 * has an exact place: nothing is clamped, nothing overflows, and an entry
 * 49 days or 49 years away fires on its millisecond. One 64-bit map per
 * level marks the occupied slots, so finding the next work is a couple of
 * count-trailing-zeros, not a scan.
 *
 * Order: entries fire in due-time order; entries with the same due
 * millisecond fire in the order they were added (cascading preserves list
 * order, and all entries with one due time always share one slot). An
 * entry added with a due time already past is due "now" and fires after
 * the entries already due at the wheel's time.
 *
 * Cost: add, cancel and next_due are O(1); run is O(fired + moved), where
 * each entry moves at most KR_WHEEL_LEVELS - 1 times in its life (entries
 * seconds to days away move 1-5 times).
 *
 * Callbacks run with the entry already unlinked; they may add or cancel any
 * entry, themselves included, while kr_wheel_run() is running.
 */
#ifndef KRIA_WHEEL_H
#define KRIA_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#define KR_WHEEL_BITS 6
#define KR_WHEEL_SLOTS (1 << KR_WHEEL_BITS)
#define KR_WHEEL_LEVELS 11 /* 11 x 6 bits >= 64: every uint64 due time fits */

typedef struct kr_wheel kr_wheel_t;
typedef struct kr_wheel_entry kr_wheel_entry_t;

/* Called from kr_wheel_run() with e unlinked. Use container_of() to reach
 * the struct that embeds e. */
typedef void (*kr_wheel_cb)(kr_wheel_entry_t *e);

struct kr_wheel_entry {
  kr_wheel_entry_t *next; /* slot list; NULL at the tail or while unlinked */
  kr_wheel_entry_t *prev; /* NULL at the head or while unlinked */
  kr_wheel_t *wheel;      /* the wheel holding e; NULL while unlinked */
  uint64_t due;           /* absolute due time in ms, as given to add */
  kr_wheel_cb cb;         /* set by kr_wheel_entry_init() */
  uint8_t level, slot;    /* where e is linked */
};

typedef struct kr_wheel_slot {
  kr_wheel_entry_t *head; /* fires first */
  kr_wheel_entry_t *tail; /* added last */
} kr_wheel_slot_t;

struct kr_wheel {
  uint64_t now;                        /* time up to which it has run */
  size_t count;                        /* linked entries */
  uint32_t levels;                     /* bit k: occupied[k] != 0 */
  uint64_t occupied[KR_WHEEL_LEVELS];  /* bit s: slots[k][s] not empty */
  kr_wheel_slot_t slots[KR_WHEEL_LEVELS][KR_WHEEL_SLOTS];
};

/* Start an empty wheel at time now (ms). A wheel is about 11 KB; embed it
 * or allocate it once. No teardown needed (kr_wheel_clear() unlinks). */
void kr_wheel_init(kr_wheel_t *w, uint64_t now);

/* Prepare an entry (unlinked) that will call cb. */
void kr_wheel_entry_init(kr_wheel_entry_t *e, kr_wheel_cb cb);

/* Link e to fire at due (absolute ms). If e is linked already (to this or
 * another wheel) it is moved, and goes to the back of its new due time's
 * queue. A due time at or before the wheel's time means "due now". */
void kr_wheel_add(kr_wheel_t *w, kr_wheel_entry_t *e, uint64_t due);

/* Unlink e so it will not fire. A no-op when e is not linked. */
void kr_wheel_cancel(kr_wheel_entry_t *e);

static inline int kr_wheel_is_linked(const kr_wheel_entry_t *e) {
  return e->wheel != NULL;
}

static inline size_t kr_wheel_count(const kr_wheel_t *w) { return w->count; }

/* The earliest time at which kr_wheel_run() has work: UINT64_MAX when the
 * wheel is empty; <= w->now when entries are due already; otherwise the
 * exact due time of the next entry when it lies within the wheel's current
 * 64 ms window, else the start of the window its slot covers (a lower bound:
 * running then moves entries down a level and the next call is exact or
 * closer). Never later than the earliest due time. O(1). */
uint64_t kr_wheel_next_due(const kr_wheel_t *w);

/* Advance the wheel to now and fire, in order, the entries due at or
 * before now, at most budget of them (entries left over stay due: call
 * again). Returns the number fired. The wheel's time never moves
 * backwards: a now earlier than w->now is taken as w->now. */
size_t kr_wheel_run(kr_wheel_t *w, uint64_t now, size_t budget);

/* Unlink every entry without firing it. O(entries + slots). */
void kr_wheel_clear(kr_wheel_t *w);

/* Check every invariant (slot maps, links, counts, each entry on the level
 * and slot its due time implies). 0 when sound, KR_EINVAL otherwise. For
 * tests: O(entries + slots). */
int kr_wheel_validate(const kr_wheel_t *w);

#endif
