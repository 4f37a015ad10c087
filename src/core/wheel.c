/*
 * Hierarchical timer wheel (see include/kria/wheel.h for the model). The
 * one invariant everything rests on: an entry with effective due time
 * d = max(due, w->now) sits on level k = the highest 6-bit group in which d
 * and w->now differ (0 when equal), in slot (d >> 6k) & 63. It follows that
 * on every level the occupied slots lie strictly after the slot of w->now
 * (level 0: at or after), that every entry on a lower level is due before
 * every entry on a higher one, and that all entries with one due time share
 * one slot. Running advances w->now straight to the next occupied slot's
 * window (found with the per-level maps), fires level 0 or cascades the
 * higher slot down, and repeats — the cost is in entries, never in elapsed
 * milliseconds. Sections: slot lists, placement, public API, validation.
 */
#include "kria/wheel.h"

#include <assert.h>

#include "kria/error.h"

/* ---- slot lists ---------------------------------------------------- */

static void slot_append(kr_wheel_t *w, unsigned k, unsigned s,
                        kr_wheel_entry_t *e) {
  kr_wheel_slot_t *sl = &w->slots[k][s];
  e->next = NULL;
  e->prev = sl->tail;
  if (sl->tail)
    sl->tail->next = e;
  else
    sl->head = e;
  sl->tail = e;
  e->level = (uint8_t)k;
  e->slot = (uint8_t)s;
  w->occupied[k] |= (uint64_t)1 << s;
  w->levels |= 1u << k;
}

static void slot_remove(kr_wheel_t *w, kr_wheel_entry_t *e) {
  kr_wheel_slot_t *sl = &w->slots[e->level][e->slot];
  if (e->prev)
    e->prev->next = e->next;
  else
    sl->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    sl->tail = e->prev;
  if (!sl->head) {
    w->occupied[e->level] &= ~((uint64_t)1 << e->slot);
    if (!w->occupied[e->level]) w->levels &= ~(1u << e->level);
  }
  e->next = e->prev = NULL;
}

/* ---- placement ----------------------------------------------------- */

static unsigned level_of(uint64_t d, uint64_t now) {
  uint64_t x = d ^ now;
  return x ? (unsigned)(63 - __builtin_clzll(x)) / KR_WHEEL_BITS : 0;
}

static unsigned slot_of(uint64_t d, unsigned k) {
  return (unsigned)(d >> (k * KR_WHEEL_BITS)) & (KR_WHEEL_SLOTS - 1);
}

/* First millisecond covered by slot s of level k, given the wheel's time:
 * the bits above level k come from now, level k's bits are s, lower ones 0. */
static uint64_t window_start(uint64_t now, unsigned k, unsigned s) {
  unsigned above = (k + 1) * KR_WHEEL_BITS;
  uint64_t high = above >= 64 ? 0 : now & ~(((uint64_t)1 << above) - 1);
  return high | ((uint64_t)s << (k * KR_WHEEL_BITS));
}

static uint64_t effective_due(const kr_wheel_t *w, const kr_wheel_entry_t *e) {
  return e->due > w->now ? e->due : w->now;
}

static void place(kr_wheel_t *w, kr_wheel_entry_t *e) {
  uint64_t d = effective_due(w, e);
  unsigned k = level_of(d, w->now);
  slot_append(w, k, slot_of(d, k), e);
}

/* w->now has just entered the window of slot s on level k >= 1: move its
 * entries down, in list order so same-time entries keep their order. */
static void cascade(kr_wheel_t *w, unsigned k, unsigned s) {
  kr_wheel_slot_t *sl = &w->slots[k][s];
  kr_wheel_entry_t *e = sl->head;
  sl->head = sl->tail = NULL;
  w->occupied[k] &= ~((uint64_t)1 << s);
  if (!w->occupied[k]) w->levels &= ~(1u << k);
  while (e) {
    kr_wheel_entry_t *next = e->next;
    place(w, e);
    assert(e->level < k);
    e = next;
  }
}

/* ---- public API ------------------------------------------------------ */

void kr_wheel_init(kr_wheel_t *w, uint64_t now) {
  w->now = now;
  w->count = 0;
  w->levels = 0;
  for (unsigned k = 0; k < KR_WHEEL_LEVELS; k++) {
    w->occupied[k] = 0;
    for (unsigned s = 0; s < KR_WHEEL_SLOTS; s++)
      w->slots[k][s].head = w->slots[k][s].tail = NULL;
  }
}

void kr_wheel_entry_init(kr_wheel_entry_t *e, kr_wheel_cb cb) {
  e->next = e->prev = NULL;
  e->wheel = NULL;
  e->due = 0;
  e->cb = cb;
  e->level = e->slot = 0;
}

void kr_wheel_add(kr_wheel_t *w, kr_wheel_entry_t *e, uint64_t due) {
  kr_wheel_cancel(e);
  e->due = due;
  e->wheel = w;
  place(w, e);
  w->count++;
}

void kr_wheel_cancel(kr_wheel_entry_t *e) {
  kr_wheel_t *w = e->wheel;
  if (!w) return;
  slot_remove(w, e);
  e->wheel = NULL;
  w->count--;
}

uint64_t kr_wheel_next_due(const kr_wheel_t *w) {
  if (!w->levels) return UINT64_MAX;
  unsigned k = (unsigned)__builtin_ctz(w->levels);
  unsigned s = (unsigned)__builtin_ctzll(w->occupied[k]);
  return window_start(w->now, k, s);
}

size_t kr_wheel_run(kr_wheel_t *w, uint64_t now, size_t budget) {
  size_t fired = 0;
  if (now < w->now) now = w->now;
  for (;;) {
    kr_wheel_slot_t *cur = &w->slots[0][w->now & (KR_WHEEL_SLOTS - 1)];
    while (cur->head) {
      if (fired >= budget) return fired;
      kr_wheel_entry_t *e = cur->head;
      kr_wheel_cancel(e);
      fired++;
      e->cb(e); /* may add/cancel anything; cur is re-read each turn */
    }
    if (w->now >= now) return fired;
    if (!w->levels) break;
    /* Next work: the first occupied slot of the lowest occupied level. */
    unsigned k = (unsigned)__builtin_ctz(w->levels);
    unsigned s = (unsigned)__builtin_ctzll(w->occupied[k]);
    uint64_t t = window_start(w->now, k, s);
    assert(t > w->now);
    if (t > now) break;
    w->now = t;
    if (k > 0) cascade(w, k, s);
  }
  /* Nothing occupied before now: jumping there changes no entry's level or
   * slot (each still differs from now in the same group, see above). */
  w->now = now;
  return fired;
}

void kr_wheel_clear(kr_wheel_t *w) {
  for (unsigned k = 0; k < KR_WHEEL_LEVELS; k++) {
    for (unsigned s = 0; s < KR_WHEEL_SLOTS; s++) {
      kr_wheel_entry_t *e = w->slots[k][s].head;
      while (e) {
        kr_wheel_entry_t *next = e->next;
        e->next = e->prev = NULL;
        e->wheel = NULL;
        e = next;
      }
      w->slots[k][s].head = w->slots[k][s].tail = NULL;
    }
    w->occupied[k] = 0;
  }
  w->levels = 0;
  w->count = 0;
}

/* ---- validation ------------------------------------------------------ */

int kr_wheel_validate(const kr_wheel_t *w) {
  size_t seen = 0;
  uint32_t levels = 0;
  for (unsigned k = 0; k < KR_WHEEL_LEVELS; k++) {
    uint64_t occ = 0;
    unsigned cur = slot_of(w->now, k);
    for (unsigned s = 0; s < KR_WHEEL_SLOTS; s++) {
      const kr_wheel_slot_t *sl = &w->slots[k][s];
      if ((sl->head == NULL) != (sl->tail == NULL)) return KR_EINVAL;
      if (!sl->head) continue;
      occ |= (uint64_t)1 << s;
      /* Occupied slots lie after now's slot (level 0: at or after). */
      if (k == 0 ? s < cur : s <= cur) return KR_EINVAL;
      const kr_wheel_entry_t *prev = NULL;
      for (const kr_wheel_entry_t *e = sl->head; e; e = e->next) {
        if (++seen > w->count) return KR_EINVAL; /* also stops cycles */
        if (e->prev != prev || e->wheel != w) return KR_EINVAL;
        if (e->level != k || e->slot != s) return KR_EINVAL;
        uint64_t d = effective_due(w, e);
        if (level_of(d, w->now) != k || slot_of(d, k) != s) return KR_EINVAL;
        /* Same-slot entries beyond level 0 may differ in due time; on
         * level 0 they are all due at the same millisecond. */
        prev = e;
      }
      if (prev != sl->tail) return KR_EINVAL;
    }
    if (occ != w->occupied[k]) return KR_EINVAL;
    if (occ) levels |= 1u << k;
  }
  if (levels != w->levels || seen != w->count) return KR_EINVAL;
  return 0;
}
